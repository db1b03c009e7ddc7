"""Served vsim devices without booting: spec parsing and checks before boot, the figures
vlab derives from the server's counters, and the nbdkit plugin on the host (nbdcopy)."""

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from vlab import stats
from vlab.devices import vsimdev
from vlab.devices.spec import DeviceError, load_spec_args, parse_one
from vlab.workloads.fio import OpStats, RunResult


def test_spec_round_trip_and_lab_options() -> None:
    s = parse_one("vsim:cheapflash:preset=sd_a1,size=1g,dilation=5,timeout=30")
    assert s.driver == "vsim"
    assert str(s) == "vsim:cheapflash:preset=sd_a1,size=1g,dilation=5,timeout=30"
    served = vsimdev.served(s.options)
    assert served == vsimdev.Served("cheapflash", {"preset": "sd_a1", "size": "1g"}, 5.0, 30.0, 1, 0.0)
    assert served.model_spec == "cheapflash:preset=sd_a1,size=1g"
    # Each model has its own default dilation.
    assert vsimdev.served(parse_one("vsim:ssd").options).dilation == float(vsimdev.DEFAULT_DILATION["ssd"])
    assert vsimdev.served(parse_one("vsim:ssd:fault_after_s=2.5,seed=7").options).fault_after_s == 2.5
    assert vsimdev.served(parse_one("vsim:ssd:fault_after_ios=3000").options).fault_after_ios == 3000
    # The transport: chosen in the guest unless the spec names one.
    assert served.transport == ""
    assert vsimdev.served(parse_one("vsim:ssd:transport=nbd").options).transport == "nbd"
    # A script job's set-up at its own dilation: none unless the spec names one.
    assert served.setup_dilation is None
    assert vsimdev.served(parse_one("vsim:ssd:dilation=50,setup_dilation=1").options).setup_dilation == 1.0


def test_dilation_auto_is_chosen_in_the_guest_from_measured_costs(tmp_path: Path) -> None:
    auto = vsimdev.served(parse_one("vsim:ssd:dilation=auto").options)
    assert auto.dilation is None  # chosen in the guest
    # A tenth of the service time, stretched: 200 us of guest cost over a 64 us read.
    assert vsimdev.dilation_for(200_000, 64_000) == 32.0
    assert vsimdev.dilation_for(135_000, 64_000) == 22.0  # 21.09..., two digits, up
    assert vsimdev.dilation_for(1_000, 5_000_000) == 1.0  # never below wall-clock pace
    assert vsimdev.dilation_for(20_000, 100_000) == 2.0  # exact: not rounded past
    for cost, service in [(135_000, 64_000), (3_300, 70), (170_000, 1_700_000)]:
        d = vsimdev.dilation_for(cost, service)
        assert cost <= vsimdev.AUTO_SHARE * service * d * (1 + 1e-9) or d == 1.0
    with pytest.raises(vsimdev.VsimDeviceError):
        vsimdev.dilation_for(0, 64_000)
    # The host reads the guest's choice back from the run's devices.json.
    devices = tmp_path / "devices.json"
    devices.write_text(json.dumps([{"name": "nbd0", "served": {"dilation": 22.0}}]))
    auto_options = parse_one("vsim:ssd:dilation=auto").options
    assert vsimdev.run_dilation(auto_options, devices) == 22.0
    assert vsimdev.run_dilation(auto_options, tmp_path / "none.json") == 1.0  # never started
    assert vsimdev.run_dilation(auto_options, devices, 1) == 1.0
    assert vsimdev.run_dilation(parse_one("vsim:ssd:dilation=5").options, devices) == 5.0


def test_vsim_device_probe_times_a_4k_write_and_read_in_model_time() -> None:
    if not vsimdev.vsim_bin().exists():
        pytest.fail("the simulator is not built: run make deps")
    s = vsimdev.served(parse_one("vsim:fixed:read_us=70,write_us=300,dilation=auto").options)
    assert vsimdev.model_service_ns(s) == {"write_4k_ns": 300_000, "read_4k_ns": 70_000, "queue_depth": 1}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("vsim:", "names a model"),
        ("vsim:ssd:model=hdd", "named after vsim:"),
        ("vsim:flashy", "unknown device model 'flashy'"),
        ("vsim:ssd:bogus=1", "unknown option(s): bogus"),
        ("vsim:cheapflash:preset=sd9", "unknown cheapflash preset"),
        ("vsim:ssd:dilation=0", "dilation=0: must be positive"),
        ("vsim:ssd:setup_dilation=fast", "setup_dilation=fast: not a number"),
        ("vsim:ssd:timeout=x", "timeout=x: not a number"),
        ("vsim:ssd:fault_after_s=-1", "fault_after_s=-1: must be positive"),
        ("vsim:ssd:fault_after_ios=1.5", "fault_after_ios=1.5: not a number of requests"),
        ("vsim:ssd:transport=iscsi", "transport=iscsi: not one of ublk, nbd"),
    ],
)
def test_bad_specs_are_refused_before_boot(spec: str, message: str) -> None:
    if not vsimdev.vsim_bin().exists():
        pytest.fail("the simulator is not built: run make deps")
    with pytest.raises(DeviceError, match=None) as e:
        load_spec_args([spec])
    assert message in str(e.value), str(e.value)


def test_device_figures_over_a_run() -> None:
    before = {"model_time_s": 1.0, "device": {"host_page_writes": 100, "gc_page_copies": 50, "erases": 2},
              "energy": {"total_j": 1.0}}  # fmt: skip
    after = {"model_time_s": 3.0, "device": {"host_page_writes": 300, "gc_page_copies": 150, "erases": 5,
             "trimmed_pages": 7}, "energy": {"total_j": 1.5}}  # fmt: skip
    d = vsimdev.delta(before, after)
    assert d["wa"] == pytest.approx(1.5)  # (200 + 100) / 200
    assert (d["erases"], d["trimmed_pages"], d["model_s"]) == (3, 7, 2.0)
    assert d["energy_j"] == pytest.approx(0.5)
    cheap = vsimdev.delta(None, {"device": {"host_page_writes": 10, "merge_page_copies": 30, "full_merges": 1}})
    assert cheap["wa"] == pytest.approx(4.0) and cheap["full_merges"] == 1
    assert vsimdev.delta(before, None) == {}


def _result(iops: float, p99_us: float) -> RunResult:
    return RunResult(
        read=OpStats(iops, iops * 4, 1, p99_us / 2, p99_us, p99_us),
        write=OpStats(0, 0, 0, None, None, None),
        errors=0,
    )


def test_an_idle_served_device_is_reported_and_warned_about() -> None:
    assert stats.busy_share({"busy_s": 1.5, "model_s": 2.0}) == 0.75
    assert stats.busy_share({"busy_s": 1.5}) is None and stats.busy_share({"busy_s": 1, "model_s": 0}) is None
    device = {"none": [{"busy_s": 9.0, "model_s": 10.0}], "veloces": [{"busy_s": 3.0, "model_s": 10.0}]}
    results = {s: [_result(100, 50)] for s in device}
    out = stats.summarize(results, "none", ["none", "veloces"], device, 1.0)
    assert out["schedulers"]["none"]["device_busy_share"]["median"] == pytest.approx(0.9)
    (warning,) = out["warnings"]
    assert warning.startswith("veloces: the served device was busy 30 % of model time")
    assert "at dilation 1 try dilation=21 " in warning  # 1 x (0.7/0.3) / (0.1/0.9) = 21
    # The measured case: sd_a1 over ublk, 32 % busy at dilation 15: 290 for 90 %, 130 for 80 %
    # (docs/notebooks/benchmarks.md section 7: 200 gave 72-85 %).
    assert stats.dilation_for_busy(15, 0.32) == 290.0
    assert stats.dilation_for_busy(15, 0.32, 0.8) == 130.0
    assert stats.dilation_for_busy(20, 0.9) == 20.0 and stats.dilation_for_busy(5, 1.0) == 5.0
    assert stats.summarize(results, "none", ["none"], None, 1.0)["warnings"] == []


def test_summary_in_model_time_with_device_figures() -> None:
    results = {"none": [_result(100, 5000)], "veloces": [_result(120, 2500)]}
    device = {"none": [{"wa": 2.0, "erases": 10}], "veloces": [{"wa": 1.5, "erases": 6}]}
    s = stats.summarize(results, "none", ["none", "veloces"], device, dilation=50)
    assert s["schedulers"]["none"]["iops"]["median"] == pytest.approx(5000)
    assert s["schedulers"]["none"]["read_p99_us"]["median"] == pytest.approx(100)
    assert s["schedulers"]["veloces"]["ratio_to_baseline"]["device_wa"] == pytest.approx(0.75)
    table = stats.format_table(s)
    assert "device WA" in table and "0.75" in table
    assert "model time" in stats.format_report({**s, "meta": {}})


def test_nbdkit_plugin_serves_data_and_counters(tmp_path: Path) -> None:
    for tool in ("nbdkit", "nbdcopy", "nbdinfo"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} missing: run make deps")
    sock = tmp_path / "s.sock"
    counters, info, control = tmp_path / "counters.json", tmp_path / "info.json", tmp_path / "dilation"
    log = tmp_path / "nbdkit.log"
    proc = subprocess.Popen(
        ["nbdkit", "--foreground", "--unix", str(sock), str(vsimdev.plugin_path()),
         "device=cheapflash:size=256m", "dilation=1", f"counters={counters}", "counters_ms=50", f"info={info}",
         f"control={control}"],
        stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not sock.exists():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "nbdkit did not start"
            time.sleep(0.05)
        uri = f"nbd+unix:///?socket={sock}"
        meta = json.loads(subprocess.run(["nbdinfo", "--json", uri], capture_output=True, text=True,
                                         check=True).stdout)["exports"][0]  # fmt: skip
        served = json.loads(info.read_text())
        assert meta["export-size"] == served["capacity_bytes"] > 200 * 2**20
        assert meta["can_trim"] and meta["can_fua"] and meta["can_flush"]
        src = tmp_path / "in.bin"
        src.write_bytes(os.urandom(4 * 2**20))
        subprocess.run(["nbdcopy", str(src), uri], check=True)
        back = tmp_path / "out.bin"
        subprocess.run(["nbdcopy", uri, str(back)], check=True)
        assert back.read_bytes()[: 4 * 2**20] == src.read_bytes()
        # The dilation follows the control file, model time goes on; a bad value changes
        # nothing and is logged.
        before = json.loads(counters.read_text())["model_time_s"]
        vsimdev.switch_dilation(counters, control, 2.5)
        after = json.loads(counters.read_text())
        assert (after["dilation"], after["dilation_switches"]) == (2.5, 1)
        assert after["model_time_s"] >= before
        control.write_text("fast\n")
        time.sleep(0.2)
        assert json.loads(counters.read_text())["dilation"] == 2.5
        saved, vsimdev.SWITCH_TIMEOUT_S = vsimdev.SWITCH_TIMEOUT_S, 0.3
        try:
            with pytest.raises(vsimdev.VsimDeviceError, match="did not change to dilation -4 within"):
                vsimdev.switch_dilation(counters, control, -4.0)
        finally:
            vsimdev.SWITCH_TIMEOUT_S = saved
        vsimdev.switch_dilation(counters, control, 1.0)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    c = json.loads(counters.read_text())
    assert c["requests"]["write"]["bytes"] >= 4 * 2**20
    assert c["device"]["host_page_writes"] >= 1024
    assert c["in_flight"] == 0 and c["errors"] == 0
    assert (c["dilation"], c["dilation_switches"]) == (1.0, 2)
    assert "'fast' ignored" in log.read_text()


def test_script_job_figures_reach_the_table() -> None:
    results = {"none": [_result(100, 10)], "veloces": [_result(100, 10)]}
    device = {"none": [{"workload_copy_s": 10.0}], "veloces": [{"workload_copy_s": 8.0}]}
    s = stats.summarize(results, "none", ["none", "veloces"], device)
    assert s["schedulers"]["veloces"]["ratio_to_baseline"]["workload_copy_s"] == pytest.approx(0.8)
    table = stats.format_table(s)
    assert "copy_s" in table and "8.00" in table
    assert "device WA" not in table  # no served device: no device columns


def test_a_script_job_with_a_syntax_error_is_refused_before_boot(tmp_path: Path) -> None:
    from vlab.cli import main

    job = tmp_path / "bad.sh"
    job.write_text("case $1 in\nrun) echo hi ;;\n")  # no esac
    assert main(["compare", "--device", "null_blk", "--job", str(job)]) == 2


def test_script_figures_in_model_time_by_unit() -> None:
    results = {"none": [_result(100, 10)]}
    device = {"none": [{"workload_copy_s": 30.0, "workload_dbench_mb_s": 2.0, "workload_files": 1546}]}
    e = stats.summarize(results, "none", ["none"], device, dilation=10)["schedulers"]["none"]
    assert e["workload_copy_s"]["median"] == pytest.approx(3.0)
    assert e["workload_dbench_mb_s"]["median"] == pytest.approx(20.0)
    assert e["workload_files"]["median"] == 1546


def test_a_stuck_served_check_names_what_the_server_and_guest_were_doing(tmp_path: Path) -> None:
    """The served suite's watchdog writes the full diagnosis to a file a CI log cannot show,
    and returns its gist for the failure's message: each server alive or not, its requests
    in flight and served, its log's last lines."""
    from vlab.devices import servedsuite

    (tmp_path / "counters.json").write_text(
        json.dumps({"in_flight": 3, "requests": {"read": {"count": 5}, "write": {"count": 7}}})
    )
    (tmp_path / vsimdev.UBLK_LOG).write_text("started\nvsim-ublk: queue 0 tag 3: cannot commit: QueueIsDown\n")
    proc = subprocess.Popen(["sleep", "30"])
    try:
        suite = servedsuite.Suite(tmp_path)
        server = vsimdev.Server(proc, tmp_path, tmp_path, None, "ublkb0", 5.0, "ublk", 0)
        suite.servers["ssd"] = (None, server)  # type: ignore[assignment]
        gist = servedsuite.diagnose(tmp_path / "stuck.txt", suite)
    finally:
        proc.kill()
        proc.wait()
    assert "server ssd (running): in flight 3, served 12" in gist, gist
    assert "queue 0 tag 3: cannot commit" in gist, gist
    assert '"in_flight": 3' in (tmp_path / "stuck.txt").read_text()


def test_the_served_suite_runs_the_named_checks_and_refuses_unknown_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m vlab.devices.servedsuite limits stop` runs those two, in CHECKS's order
    (make test's 6.1 boot names its checks); a name that is no check ends it before any."""
    from vlab.devices import servedsuite

    ran: list[str] = []
    for name in servedsuite.CHECKS:
        monkeypatch.setattr(servedsuite.Suite, name, lambda self, n=name: ran.append(n) or {})
    monkeypatch.setattr(servedsuite.vsimdev, "stop_all", lambda: None)
    assert servedsuite.main(tmp_path, ["stop", "limits"]) == 0
    assert ran == ["limits", "stop"]
    assert list(json.loads((tmp_path / "servedsuite.json").read_text())) == ["limits", "stop"]
    ran.clear()
    assert servedsuite.main(tmp_path / "other", ["limits", "verfiy_ssd"]) == 2
    assert ran == [] and "no such check: verfiy_ssd" in capsys.readouterr().err
    assert not (tmp_path / "other").exists()
