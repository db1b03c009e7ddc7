"""vlab.experiments.floods: the flood jobs fio accepts, the goal verdict and the table (host only)."""

import json
from pathlib import Path

import pytest

from vlab.experiments import floods
from vlab.workloads.fio import prepare_job, validate_job


def test_every_flood_is_a_job_fio_accepts(tmp_path: Path) -> None:
    jobs = floods.floods()
    assert set(floods.QUICK_FLOODS) <= set(jobs)
    # a, b, c, cf with readers at depth 1 and 4; d; a, b, c on a shared range; e and e16; a and b with an RT reader
    assert len(jobs) == 16
    assert jobs["e16-r1"] == jobs["e-r1"].replace("bs=128k", "bs=16k").replace("e-r1:", "e16-r1:")
    for name, text in jobs.items():
        path = tmp_path / f"{name}.fio"
        path.write_text(prepare_job(text, "/dev/null", 1))
        validate_job(path)
        if name != "d":
            depth = name.split("-")[1][1:]
            assert "[reader]" in text and f"iodepth={depth}" in text
            writer = text.split("[reader]")[1].split("\n[")[1]
            assert ("offset=0\nsize=1g" in writer) == name.endswith("-shared"), name
        reader = text.split("[reader]")[-1].split("\n\n")[0]
        assert ("prioclass=1" in reader) == name.endswith("-rt"), name


def test_the_device_matrix_is_twelve_null_blk_devices_and_a_served_one() -> None:
    nb = [d for d in floods.DEVICES if d.startswith("t")]
    assert len(nb) == 12 and "served-ssd" in floods.DEVICES
    assert "hw_queue_depth=4," in floods.DEVICES["t4-100us-q1"]
    assert "completion_nsec=1000000," in floods.DEVICES["t128-1ms-q4"]
    assert "submit_queues=4," in floods.DEVICES["t128-1ms-q4"]


def _entry(p99: float, r: float, w: float) -> dict[str, dict[str, float]]:
    return {"read_p99_us": {"median": p99}, "read_iops": {"median": r}, "write_iops": {"median": w}}


@pytest.mark.parametrize(
    ("veloces", "met"),
    [
        (_entry(900, 1000, 9500), True),  # 0.3x kyber, 0.9x none, writes 0.95x
        (_entry(1600, 1000, 9500), False),  # p99 over 0.5x kyber
        (_entry(900, 1000, 8000), False),  # writes 0.8x none
        (_entry(1100, 1000, 9500), False),  # p99 over none's
    ],
)
def test_verdict_checks_every_goal(veloces: dict[str, dict[str, float]], met: bool) -> None:
    e = {"none": _entry(1000, 1000, 10_000), "kyber": _entry(3000, 500, 11_000), "veloces": veloces}
    assert floods.verdict("a-r1", e)["met"] is met


def test_mixed_flood_has_no_pass_fail_and_missing_schedulers_give_none() -> None:
    e = {"none": _entry(1000, 7000, 3000), "veloces": _entry(1000, 6900, 2950)}
    v = floods.verdict("d", e)
    assert v["met"] is None and v["iops_vs_none"] == pytest.approx(9850 / 10000)
    assert floods.verdict("a-r1", e)["p99_vs_kyber"] is None


def test_table_reads_every_finished_comparison(tmp_path: Path) -> None:
    e = {"none": _entry(1000, 1000, 10_000), "kyber": _entry(3000, 500, 11_000), "veloces": _entry(900, 1000, 9500)}
    run = tmp_path / "t4-100us-q1" / "a-r1"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps({"schedulers": e}))
    (tmp_path / "t4-100us-q1" / "b-r1").mkdir()  # a comparison that failed: no summary
    text, doc = floods.table(tmp_path)
    assert "| t4-100us-q1 | a-r1 |" in text and "| yes |" in text and "b-r1" not in text
    assert doc["t4-100us-q1"]["a-r1"]["verdict"]["met"] is True


def test_unknown_names_are_refused() -> None:
    with pytest.raises(SystemExit, match="unknown flood zz"):
        floods.main(["--floods", "zz", "--out", "/nonexistent"])


def test_variants_table_gives_ratios_and_flags_differences_beyond_the_spread(tmp_path: Path) -> None:
    def ranged(p99: tuple[float, float, float], w: tuple[float, float, float]) -> dict[str, dict[str, float]]:
        return {
            "read_p99_us": dict(zip(("median", "min", "max"), p99, strict=True)),
            "write_iops": dict(zip(("median", "min", "max"), w, strict=True)),
        }

    e = {
        "kyber": ranged((9000, 8000, 9900), (5000, 4900, 5100)),
        "veloces": ranged((1000, 900, 1100), (4000, 3900, 4100)),
        "veloces:read_expire=10": ranged((1050, 950, 1200), (4400, 4200, 4500)),
        "veloces:write_expire=250": ranged((2000, 1500, 2500), (4050, 4000, 4100)),
    }
    run = tmp_path / "t4-100us-q1" / "a-r1"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps({"schedulers": e}))
    rows = {r.split(" | ")[2]: r for r in floods.variants_table(tmp_path).splitlines()[2:]}
    assert set(rows) == {"defaults", "read_expire=10", "write_expire=250"}
    assert "1.05 | 4,400 (4,200-4,500) | 1.10 | writes |" in rows["read_expire=10"]
    assert "2.00 (1.50-2.50) | 2.00 |" in rows["write_expire=250"] and rows["write_expire=250"].endswith("| p99 |")
    assert floods.variants_table(tmp_path, base="bfq") == ""
