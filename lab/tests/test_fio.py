import json
import subprocess
from pathlib import Path

import pytest
from conftest import DATA

from vlab.workloads.fio import FioError, parse_file, parse_output, prepare_job, validate_job

REAL = DATA / "fio-3.33-randrw.json"  # fio 3.33 in a 6.1 guest, kyber, 70/30 randrw


def test_parse_real_fio_json() -> None:
    r = parse_file(REAL)
    assert r.read.iops == pytest.approx(4799.200799)
    assert r.read.bw_kib == 19252
    assert r.read.ios == 9608
    assert r.read.lat_p99_us == pytest.approx(13828.096)
    assert r.write.iops == pytest.approx(2123.876124)
    assert r.iops == pytest.approx(4799.200799 + 2123.876124)
    assert r.errors == 0


def _two_jobs() -> dict:
    doc = json.loads(REAL.read_text())
    job = doc["jobs"][0]
    other = json.loads(json.dumps(job))
    other["read"]["iops"] = 1.0
    other["read"]["clat_ns"]["percentile"]["99.000000"] = 99_000_000
    other["error"] = 5
    doc["jobs"] = [job, other]
    return doc


def test_several_jobs_sum_rates_and_keep_worst_percentile() -> None:
    r = parse_output(json.dumps(_two_jobs()))
    assert r.read.iops == pytest.approx(4800.200799)
    assert r.read.lat_p99_us == pytest.approx(99_000.0)
    assert r.errors == 5


def test_warnings_before_json_are_skipped() -> None:
    r = parse_output("fio: note: both iodepth >= 1 and synchronous I/O engine\n" + REAL.read_text())
    assert r.read.ios == 9608


def test_total_latency_preferred_over_clat() -> None:
    doc = json.loads(REAL.read_text())
    doc["jobs"][0]["read"]["lat_ns"]["percentile"] = {"50.000000": 2000, "99.000000": 9_000_000}
    r = parse_output(json.dumps(doc))
    assert r.read.lat_p99_us == pytest.approx(9000.0)
    assert r.read.lat_p999_us is None  # not reported: never mixed with clat
    assert r.write.lat_p99_us == pytest.approx(13172.736)  # write has no lat_ns percentiles: clat


def test_direction_without_io_has_no_percentiles() -> None:
    doc = json.loads(REAL.read_text())
    doc["jobs"][0]["write"]["total_ios"] = 0
    r = parse_output(json.dumps(doc))
    assert r.write.lat_p99_us is None
    assert r.read.lat_p99_us is not None


@pytest.mark.parametrize("text", ["", "not json", '{"jobs": []}', '{"nojobs": 1}', '{"jobs": [{"read": {}}]}'])
def test_bad_output_is_a_clear_error(text: str) -> None:
    with pytest.raises(FioError, match="where"):
        parse_output(text, "where")


def test_prepare_job_sets_device_and_runtime() -> None:
    job = "[global]\nfilename=/dev/sdz\nruntime=60\ntime_based\n; runtime=1 in a comment\n[a]\nrw=read\n"
    out = prepare_job(job, "/dev/nullb0", 2)
    lines = out.splitlines()
    assert lines[1:7] == ["[global]", "filename=/dev/nullb0", "allow_file_create=0", "lat_percentiles=1", "runtime=2s",
                          "time_based=1"]  # fmt: skip
    assert "/dev/sdz" not in out and "runtime=60" not in out
    assert "; runtime=1 in a comment" in out
    assert lines[-2:] == ["[a]", "rw=read"]


def test_prepare_job_keeps_runtime_unless_forced() -> None:
    out = prepare_job("[a]\nruntime=7\n", "/dev/x")
    assert "runtime=7" in out and "time_based=1" not in out


def test_prepared_job_is_valid_fio(tmp_path: Path) -> None:
    job = tmp_path / "j.fio"
    job.write_text(prepare_job((DATA.parent.parent / "jobs" / "mixed-randrw.fio").read_text(), "/dev/null", 1))
    validate_job(job)


def test_a_prepared_job_on_a_missing_device_fails_and_creates_nothing(tmp_path: Path) -> None:
    """A device gone before fio opens it: fio fails, and does not make a file of its name."""
    job, gone = tmp_path / "j.fio", tmp_path / "ublkb0"
    job.write_text(prepare_job("[a]\nrw=read\nsize=1m\nallow_file_create=1\n", str(gone), 1))
    p = subprocess.run(["fio", "--output-format=json", str(job)], capture_output=True, text=True, check=False)
    assert p.returncode != 0 and not gone.exists(), (p.returncode, p.stdout[-500:], p.stderr[-500:])


def test_invalid_job_gives_fios_own_message(tmp_path: Path) -> None:
    bad = tmp_path / "bad.fio"
    bad.write_text("[x]\nrw=sideways\n")
    with pytest.raises(FioError, match="rw=sideways"):
        validate_job(bad)
    unknown = tmp_path / "unknown.fio"
    unknown.write_text("[x]\nfrobnicate=1\n")
    with pytest.raises(FioError, match="frobnicate"):
        validate_job(unknown)
