"""vlab fidelity: the judgement of a cell (rank where the lab separates schedulers, ratios to
none within the tolerance), its report, and (boot) `vlab fidelity --quick` end to end."""

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from vlab import report
from vlab.experiments import fidelity


def _lab(figs: dict[str, tuple[float, float, float, float]]) -> dict[str, Any]:
    """A lab summary: scheduler -> (read p99 median, min, max, IOPS)."""
    return {
        "schedulers": {
            s: {
                "read_p99_us": {"median": m, "min": lo, "max": hi},
                "iops": {"median": iops, "min": iops, "max": iops},
            }
            for s, (m, lo, hi, iops) in figs.items()
        }
    }


def _model(figs: dict[str, tuple[float, float]]) -> dict[str, Any]:
    """A vsim compare summary: model -> (read p99 us, IOPS)."""
    return {
        "schedulers": [
            {"scheduler": s, "iops": iops, "read": {"iops": 1.0, "p99_ns": p99 * 1000, "p50_ns": 1.0}, "write": {}}
            for s, (p99, iops) in figs.items()
        ]
    }


DEV = fidelity.DEVICES["t4-1ms"]
NAMES = {"none": "noop", "kyber": "kyber", "bfq": "bfq"}


def test_rank_counts_only_schedulers_the_lab_separates_and_ratios_have_a_tolerance() -> None:
    lab = _lab(
        {"none": (6500, 6000, 7000, 3500), "kyber": (32000, 30000, 34000, 3500), "bfq": (3700, 3500, 6100, 3500)}
    )
    # The model: kyber worse than none (as the lab), bfq better (the lab's bfq overlaps none: not judged).
    model = _model({"noop": (2000, 4000), "kyber": (3000, 4000), "bfq": (2500, 4000)})
    cells = {c["scheduler"]: c for c in fidelity.judge("t4-1ms", "a-r1", lab, model, DEV, list(NAMES), NAMES)}
    k = cells["kyber"]["figures"]["read_p99_us"]
    assert k["apart_from"] == 2 and k["rank_agrees"] is True
    assert k["lab_ratio"] == pytest.approx(32000 / 6500) and k["model_ratio"] == pytest.approx(1.5)
    assert k["ratio_agrees"] is False  # 1.5 against 4.92
    assert cells["kyber"]["agrees"] is False
    assert cells["bfq"]["figures"]["read_p99_us"]["apart_from"] == 1  # kyber only
    assert cells["bfq"]["rank_agrees"] is True
    # A model that reverses a separated pair disagrees.
    reversed_model = _model({"noop": (9000, 4000), "kyber": (2000, 4000), "bfq": (2500, 4000)})
    cells = {c["scheduler"]: c for c in fidelity.judge("t4-1ms", "a-r1", lab, reversed_model, DEV, list(NAMES), NAMES)}
    assert cells["kyber"]["rank_agrees"] is False and cells["none"]["rank_agrees"] is False
    # A model that ties a pair the lab separates disagrees on both sides of the pair (a strict
    # `<` used to count the tie as agreeing for the one the lab puts second).
    tied = _model({"noop": (2000, 4000), "kyber": (2000, 4000), "bfq": (2500, 4000)})
    cells = {c["scheduler"]: c for c in fidelity.judge("t4-1ms", "a-r1", lab, tied, DEV, list(NAMES), NAMES)}
    assert cells["kyber"]["rank_agrees"] is False and cells["none"]["rank_agrees"] is False
    # IOPS all tied in the lab: nothing to rank against, ratios 1 = 1.
    assert cells["kyber"]["figures"]["iops"]["apart_from"] == 0
    assert cells["kyber"]["figures"]["iops"]["ratio_agrees"] is True
    # 4,000 IOPS would be the device's nominal capacity; 3,500 is 87.5 %.
    assert cells["none"]["device_load"] == pytest.approx(0.875) and cells["none"]["device_bound"] is True
    slow = DEV.calibrated(1270.0)
    assert slow.model == "fixed:service_us=1270,servers=4,queue_depth=4,size=1g"
    # null_blk's completions are timers: a late one's interrupt ends every request due by then.
    assert (
        DEV.calibrated(1270.0, 117.0).model
        == "fixed:service_us=1270,jitter_us=117,coalesce=1,servers=4,queue_depth=4,size=1g"
    )
    (none, *_) = fidelity.judge("t4-1ms", "a-r1", lab, model, slow, list(NAMES), NAMES)
    assert none["device_load"] == pytest.approx(3500 * 1270e-6 / 4)
    # Rule 1 asks every scheduler to keep the device busy: one whose guest ran the device at half
    # none's pace (its CPU per I/O set it) makes the whole cell guest-bound.
    half = _lab({"none": (6500, 6000, 7000, 3500), "kyber": (32000, 30000, 34000, 1750),
                 "bfq": (3700, 3500, 6100, 3500)})  # fmt: skip
    cells = {c["scheduler"]: c for c in fidelity.judge("t4-1ms", "a-r1", half, model, DEV, list(NAMES), NAMES)}
    assert cells["none"]["device_load"] == pytest.approx(0.4375) and cells["none"]["device_bound"] is False


def test_the_default_shapes_complete_at_most_a_thousand_requests_a_second() -> None:
    # Four and 32 tags at 1 ms outran the guest's CPU; the default matrix stretches their
    # completion time to the rate one tag at 1 ms allows, in the lab and in the model alike.
    for name in fidelity.DEFAULT_DEVICES:
        dev = fidelity.DEVICES[name]
        assert dev.tags and dev.service_us and dev.tags / dev.service_us * 1e6 <= 1000, name
    t32 = fidelity.DEVICES["t32-32ms"]
    assert "completion_nsec=32000000,hw_queue_depth=32," in t32.lab
    assert t32.model.startswith("fixed:service_us=32000,") and "servers=32," in t32.model
    assert "t4-100us" in fidelity.DEVICES and "t4-1ms" in fidelity.DEVICES  # the old shapes stay


def test_calibration_reads_the_service_time_and_its_jitter(tmp_path: Path) -> None:
    """1 / IOPS of the one busy tag, and the jitter from the completion latencies' p10-p90:
    at depth 4 three service times, 4.22 jitters apart (fio's raw output), the median of the
    repetitions'; an older calibration without the raw output has none."""
    for lat, raw in ((1000, True), (100, False)):
        run = tmp_path / "calibration" / str(lat)
        (run / "raw").mkdir(parents=True)
        (run / "summary.json").write_text(json.dumps({"schedulers": {"none": {"iops": {"median": 818.18}}}}))
        # p90 - p10 of 491.52 us (the median), 2 ms (a disturbed run), 400 us.
        for rep, p90 in ((1, 3_915_776), (2, 5_424_256), (3, 3_824_256)):
            if raw:
                pct = {"10.000000": 3_424_256, "90.000000": p90, "99.000000": 6_258_688}
                job = {"read": {"clat_ns": {"percentile": pct}}}
                (run / "raw" / f"rep{rep}-none.json").write_text(json.dumps({"jobs": [job]}))
    cal = fidelity.calibration(tmp_path)
    assert cal[1000] == fidelity.Calibration(1222.2, 116.5)
    assert cal[100] == fidelity.Calibration(1222.2, 0.0)


def test_calibration_under_every_scheduler_gives_each_its_turnaround(tmp_path: Path) -> None:
    """The busy tag under every scheduler: the quickest's time is the device's, each other's
    excess its host turnaround (kyber 693.84 IOPS: 1,441.3 us; bfq 643.23: 1,554.7)."""
    run = tmp_path / "calibration" / "1000"
    run.mkdir(parents=True)
    iops = {"none": 664.14, "mq-deadline": 685.05, "kyber": 693.84, "bfq": 643.23, "veloces": 672.33}
    (run / "summary.json").write_text(json.dumps({"schedulers": {s: {"iops": {"median": v}} for s, v in iops.items()}}))
    cal = fidelity.calibration(tmp_path)[1000]
    assert cal.service_us == 1441.3
    assert cal.turnaround_us == {"none": 64.5, "mq-deadline": 18.5, "kyber": 0.0, "bfq": 113.4, "veloces": 46.1}


def test_the_guests_cpu_per_io_is_one_over_the_iops_of_each_scheduler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CPU calibration (a CPU-bound null_blk) gives each scheduler's cost per I/O; the
    models carry it as `cpu_us`, over the dilation for a served device (model time); the
    service-time calibrations beside it still read as before."""
    run = tmp_path / "calibration" / fidelity.CPU_DIR
    run.mkdir(parents=True)
    iops = {"none": {"iops": {"median": 23_000}}, "bfq": {"iops": {"median": 17_750}}, "kyber": {}}
    (run / "summary.json").write_text(json.dumps({"schedulers": iops}))
    assert fidelity.cpu_costs(tmp_path) == {"none": 43.5, "bfq": 56.3}
    assert fidelity.calibration(tmp_path) == {}
    cpu = fidelity.cpu_costs(tmp_path)
    names = {"none": "noop", "bfq": "bfq"}
    assert fidelity.with_cpu(names, cpu, 1.0) == {"none": "noop:cpu_us=43.5", "bfq": "bfq:cpu_us=56.3"}
    assert fidelity.with_cpu(names, cpu, 29.0)["none"] == "noop:cpu_us=1.5"
    # A null_blk cell's models also carry the host's turnaround where it is above 0.
    turned = fidelity.with_cpu(names, cpu, 1.0, {"none": 0.0, "bfq": 114.2})
    assert turned == {"none": "noop:cpu_us=43.5", "bfq": "bfq:cpu_us=56.3,turnaround_us=114.2"}
    # On 6.1 the task an interrupt's first completion woke runs before kblockd's worker; not on 6.12.
    on61 = fidelity.with_cpu(names, cpu, 1.0, None, "6.1.0-28-amd64")
    assert on61 == {"none": "noop:cpu_us=43.5,reaper_first=1", "bfq": "bfq:cpu_us=56.3,reaper_first=1"}
    assert fidelity.with_cpu(names, cpu, 1.0, None, "6.12.48+deb13-amd64") == fidelity.with_cpu(names, cpu, 1.0)
    # A series' guest times (the lag's third task) are the guest's: a served device's model
    # (dilation 20) sees them 20 times shorter, as the CPU per I/O; other options as given.
    monkeypatch.setitem(fidelity.HOST_BY_SERIES, "6.12", {"lag_every_us": 8300.0, "lag_run_us": 400.0})
    on612 = fidelity.with_cpu(names, cpu, 1.0, None, "6.12.48+deb13-amd64")
    assert on612["none"] == "noop:cpu_us=43.5,lag_every_us=8300,lag_run_us=400"
    served = fidelity.with_cpu(names, cpu, 20.0, None, "6.12.48+deb13-amd64")
    assert served["bfq"] == "bfq:cpu_us=2.815,lag_every_us=415,lag_run_us=20"
    assert fidelity.cpu_costs(tmp_path / "none") == {}


def test_a_cell_whose_lab_run_failed_is_not_judged() -> None:
    # A failed step still writes the cell's summary, with every scheduler and no figures.
    lab = {"schedulers": {s: {"repetitions": 0} for s in NAMES}}
    model = _model({"noop": (2000, 4000), "kyber": (3000, 4000), "bfq": (2500, 4000)})
    cells = fidelity.judge("t4-1ms", "a-r1", lab, model, DEV, list(NAMES), NAMES)
    assert all(c["missing"] == "no lab result" and not c["figures"] for c in cells)
    assert fidelity.shares(cells)["judged"] == 0 and fidelity.shares(cells)["agrees"] == 0


def test_a_cell_with_too_few_reads_in_a_run_is_not_judged() -> None:
    # Rule 2 of the one verdict rule: a read p99 needs MIN_READS reads in every run.
    lab = _lab({"none": (6500, 6000, 7000, 3500), "kyber": (3000, 2900, 3100, 3500), "bfq": (3700, 3500, 6100, 3500)})
    for s, e in lab["schedulers"].items():
        e["read_ios"] = {"points": [400.0, 410.0, 99.0 if s == "kyber" else 420.0]}
    model = _model({"noop": (6000, 3500), "kyber": (3000, 3500), "bfq": (3600, 3500)})
    cells = fidelity.judge("t4-1ms", "a-r1", lab, model, DEV, list(NAMES), NAMES)
    assert all(not c["figures"] and "fewer than 100 reads in a run (kyber 99)" in c["missing"] for c in cells)
    s = fidelity.shares(cells)
    assert s["judged"] == 0 and len(s["not_judged"]) == 3 and "not judged: t4-1ms/a-r1" in fidelity.breakdown(s)
    lab["schedulers"]["kyber"]["read_ios"]["points"][2] = 100.0
    assert all(c["figures"] for c in fidelity.judge("t4-1ms", "a-r1", lab, model, DEV, list(NAMES), NAMES))


def test_a_model_that_lost_io_is_not_judged() -> None:
    lab = _lab({"none": (6500, 6000, 7000, 3500), "kyber": (32000, 30000, 34000, 3500)})
    model = _model({"noop": (2000, 4000), "kyber": (9000, 4000)})
    model["schedulers"][1]["lost_io"] = True
    names = {"none": "noop", "kyber": "kyber"}
    kyber = fidelity.judge("t4-1ms", "a-r1", lab, model, DEV, list(names), names)[1]
    assert kyber["agrees"] is False and kyber["figures"] == {} and "lost I/O" in kyber["missing"]


def test_a_served_cells_lab_figures_are_taken_in_model_time_as_compare_gives_them() -> None:
    """vlab compare converts a served device's figures by its dilation: judging them again
    multiplied the IOPS by the dilation twice (6.12 served-sd_a1: 187,178 IOPS on a one-tag card)."""
    lab = {**_lab({"none": (6500, 6000, 7000, 3500), "kyber": (32000, 30000, 34000, 3500)}), "dilation": 29.0}
    names = {"none": "noop", "kyber": "kyber"}
    model = _model({"noop": (2000, 4000), "kyber": (9000, 4000)})
    none = fidelity.judge("served-sd_a1", "a-r1", lab, model, DEV, list(names), names)[0]
    assert none["lab"]["iops"] == 3500


def test_the_kernel_series_picks_the_model() -> None:
    assert fidelity.model_name("mq-deadline", "6.1.0-56-amd64") == "mq-deadline-6.1"
    assert fidelity.model_name("mq-deadline", "6.12.57+deb13-amd64") == "mq-deadline"
    assert fidelity.model_name("none", "6.1.0-56-amd64") == "noop"
    # bfq's and kyber's tag depths: per sbitmap word on 6.1, of the whole map on 6.12.
    assert [fidelity.model_name(s, "6.1.0-56-amd64") for s in ("bfq", "kyber")] == ["bfq-6.1", "kyber-6.1"]
    assert [fidelity.model_name(s, "6.12.117+deb12-amd64") for s in ("bfq", "kyber")] == ["bfq", "kyber"]


def test_the_report_shows_every_cell(tmp_path: Path) -> None:
    lab = _lab({"none": (6500, 6000, 7000, 3500), "kyber": (32000, 30000, 34000, 3500)})
    names = {"none": "noop", "kyber": "kyber"}
    cells = fidelity.judge("t4-1ms", "a-r1", lab, _model({"noop": (2000, 4000), "kyber": (9000, 4000)}), DEV,
                           list(names), names)  # fmt: skip
    doc = {"kind": "vlab-fidelity", "kernel": "6.1.0-56-amd64", "cells": cells, "shares": fidelity.shares(cells),
           "model_names": names, "criteria": {}, "problems": [],
           "calibration": {"1000": {"service_us": 1233.2, "jitter_us": 132.0, "used": True},
                           "cpu_us": {"none": 24.4, "kyber": 49.8}}}  # fmt: skip
    (tmp_path / "summary.json").write_text(json.dumps(doc))
    rep = report.load(tmp_path)
    assert rep.kind == "vlab fidelity" and not rep.problems
    (table,) = rep.tables
    assert [r[2].text for r in table.rows] == ["none / noop", "kyber / kyber"]
    assert table.rows[1][3].text == "32.00" and table.rows[1][4].text == "9.00"
    assert dict(rep.facts)["agreement"].startswith("2 of 2 cells")  # 9.0/2.0 = 4.5 against 4.92
    assert dict(rep.facts)["guest CPU per I/O"] == "none 24.4 us, kyber 49.8 us"
    assert dict(rep.facts)["null_blk as measured"] == "1000 us: 1233.2 us, jitter 132.0 us"
    assert "| t4-1ms | a-r1 | kyber | 32.00 | 9.00 |" in fidelity.table(cells)


def test_bad_arguments_are_refused_before_anything_boots(tmp_path: Path) -> None:
    for args, msg in ((["--devices", "t9"], "unknown device t9"), (["--workloads", "zz"], "unknown workload zz"),
                      (["--table", str(tmp_path)], "no lab cells")):  # fmt: skip
        p = subprocess.run([str(REPO / "vlab"), "fidelity", *args], capture_output=True, text=True, check=False)
        assert p.returncode != 0 and msg in p.stderr + p.stdout, p.stderr


@pytest.mark.boot
def test_fidelity_quick_runs_one_cell_in_the_lab_and_in_vsim(tmp_path: Path) -> None:
    out = tmp_path / "fid"
    p = subprocess.run([str(REPO / "vlab"), "fidelity", "--quick", "--out", str(out)], capture_output=True,
                       text=True, timeout=900, cwd=REPO, check=False)  # fmt: skip
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    doc = json.loads((out / "summary.json").read_text())
    assert doc["kernel"].startswith("6.1.") and doc["model_names"]["mq-deadline"] == "mq-deadline-6.1"
    assert [c["scheduler"] for c in doc["cells"]] == fidelity.SCHEDULERS
    for c in doc["cells"]:
        assert c["lab"]["iops"] > 0 and c["lab"]["read_p99_us"] > 0, c
        assert c["model"]["iops"] > 0 and c["model"]["read_p99_us"] > 0, c
        assert set(c["figures"]) == {"read_p99_us", "iops"}
    assert (out / "lab" / "t4-1ms" / "a-r1" / "raw" / "rep1-veloces.json").exists()
    assert (out / "report.html").exists() and "fidelity:" in p.stdout


def test_shares_count_only_device_bound_cells_and_break_them_down() -> None:
    def cell(dev: str, wl: str, sched: str, agrees: bool, bound: bool | None) -> dict[str, object]:
        return {"device": dev, "workload": wl, "scheduler": sched, "figures": {"iops": {}}, "agrees": agrees,
                "rank_agrees": agrees, "ratio_agrees": agrees, "device_bound": bound}  # fmt: skip

    cells = [cell("t4-1ms", "d", "none", True, True), cell("t4-1ms", "d", "bfq", False, True),
             cell("t1-1ms", "a-r1", "none", True, False), cell("t1-1ms", "c-r1", "none", True, None)]  # fmt: skip
    s = fidelity.shares(cells)
    assert (s["device_bound"], s["device_bound_agrees"], s["agrees"]) == (2, 1, 3)
    assert s["by_scheduler"] == {"none": [1, 1], "bfq": [0, 1]} and s["by_workload"] == {"d": [1, 2]}
    assert s["excluded"] == ["t1-1ms/a-r1", "t1-1ms/c-r1"]
    assert "device-bound: 1 of 2 agree (50 %)" in fidelity.breakdown(s)


def test_an_excluded_cell_names_the_schedulers_below_the_bound_and_the_guests_cpu() -> None:
    # bfq idles the device for its reader: 75 % busy with the guest's CPU mostly idle. The rule
    # excludes the cell all the same, and says under which scheduler and how busy the guest was.
    lab = _lab({"none": (6500, 6000, 7000, 3500), "kyber": (3000, 2900, 3100, 3500), "bfq": (3700, 3500, 6100, 2625)})
    model = _model({"noop": (6000, 3500), "kyber": (3000, 3500), "bfq": (3600, 3500)})
    dev = fidelity.DEVICES["t4-1ms"].calibrated(1000.0 / 0.875)  # 3,500 IOPS: 100 % busy
    cpu = {"none": 40.0, "kyber": 50.0, "bfq": 60.0}
    cells = fidelity.judge("t4-1ms", "a-r1", lab, model, dev, list(NAMES), NAMES, cpu=cpu)
    assert all(c["device_bound"] is False and c["busy_below"] == {"bfq": {"busy": 0.75, "guest_cpu": 0.158}}
               for c in cells)  # fmt: skip
    s = fidelity.shares(cells)
    assert s["excluded_why"] == {"t4-1ms/a-r1": "bfq 75 % (its I/O's CPU ~16 %)"}
    assert "not device-bound (excluded): t4-1ms/a-r1 (bfq 75 % (its I/O's CPU ~16 %))" in fidelity.breakdown(s)


def test_against_judges_a_second_lab_run_as_if_it_were_the_model(tmp_path: Path) -> None:
    def run(name: str, kyber_p99: float, bfq_iops: float) -> Path:
        d = tmp_path / name
        cell = d / "lab" / "t4-1ms" / "a-r1"
        cell.mkdir(parents=True)
        figs = {"none": (6500.0, 3500.0), "kyber": (kyber_p99, 3500.0), "bfq": (3700.0, bfq_iops)}
        cell.joinpath("summary.json").write_text(json.dumps({"schedulers": {s: {
            "read_p99_us": {"median": p99, "points": [p99 * 0.98, p99, p99 * 1.02]},
            "iops": {"median": iops, "points": [iops] * 3}, "read_iops": {"median": iops},
        } for s, (p99, iops) in figs.items()}}))  # fmt: skip
        return d

    first = run("first", 32000.0, 3500.0)
    same = fidelity.against(first, run("same", 33000.0, 3500.0), ["none", "kyber", "bfq"])
    assert same["shares"]["device_bound"] == 3 and same["shares"]["device_bound_agrees"] == 3
    # kyber better than none in the second run: its rank and ratio disagree, and none's rank with it.
    flipped = fidelity.against(first, run("flipped", 3000.0, 3500.0), ["none", "kyber", "bfq"])
    by = {c["scheduler"]: c for c in flipped["cells"]}
    assert by["kyber"]["agrees"] is False and by["none"]["rank_agrees"] is False
    # The second run's guest could not keep the device busy under bfq: no cell counts as device-bound.
    slow = fidelity.against(first, run("slow", 32000.0, 1000.0), ["none", "kyber", "bfq"])
    assert slow["shares"]["device_bound"] == 0
    assert fidelity.main(["--table", str(first), "--against", str(tmp_path / "nowhere"), "--scratch"]) == 2
