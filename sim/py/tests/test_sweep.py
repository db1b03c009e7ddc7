"""vsim.sweep and vsim.tune on an embedded Ray (one start for the module), and --serial."""

from __future__ import annotations

import csv
import json
import socket
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import vsim
from vsim import sweep, tune

REPO = Path(__file__).resolve().parents[3]
JOB = REPO / "lab" / "jobs" / "tune-read-under-writes.fio"

SPEC = """
name = "t"
objective = "read.p99_ns"
[base]
runtime = "30ms"
[base.device]
model = "ssd"
preset = "mlc_16g"
[[base.job]]
rw = "randrw"
bs = "4k"
iodepth = 16
numjobs = 2
size = "1g"
[set]
scheduler = "veloces"
[grid]
"scheduler.read_expire" = [5, 500]
"scheduler.fifo_batch" = [1, 16, 0]
seed = [1, 2]
"""


@pytest.fixture(scope="module")
def ray_local() -> Iterator[None]:
    ray = pytest.importorskip("ray")
    # "local": a new Ray of its own even while another suite's cluster runs on this machine
    # (lab's two-node cluster in test_repro.py runs beside this suite in `make test`)
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield
    ray.shutdown()


def _spec(tmp_path: Path, text: str = SPEC) -> Path:
    p = tmp_path / "spec.toml"
    p.write_text(text)
    return p


def test_points_are_keyed_by_configuration(tmp_path: Path) -> None:
    spec = sweep.load_spec(_spec(tmp_path))
    pts = sweep.points(spec)
    assert len(pts) == 2 * 3 * 2
    assert len({p.key for p in pts}) == len(pts)
    assert pts[0].config["scheduler"] == {"name": "veloces", "read_expire": 5, "fifo_batch": 1}
    assert pts[0].config["seed"] == 1 and pts[1].config["seed"] == 2
    # The same configuration is the same key, whatever the spec file is called.
    other = tmp_path / "other-name.toml"
    other.write_text(SPEC.replace('name = "t"', 'name = "u"'))
    assert [p.key for p in sweep.points(sweep.load_spec(other))] == [p.key for p in pts]


def test_search_samples_are_stable_when_more_are_added(tmp_path: Path) -> None:
    text = SPEC.split("[grid]")[0] + (
        "[search]\nsamples = 5\nseed = 3\n[search.space]\n"
        '"scheduler.read_expire" = {min = 1, max = 1000, log = true, int = true}\n'
    )
    five = sweep.points(sweep.load_spec(_spec(tmp_path, text)))
    eight = sweep.points(sweep.load_spec(_spec(tmp_path, text.replace("samples = 5", "samples = 8"))))
    assert [p.key for p in eight[:5]] == [p.key for p in five]
    assert all(1 <= p.values["scheduler.read_expire"] <= 1000 for p in eight)
    assert all(isinstance(p.values["scheduler.read_expire"], int) for p in eight)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name = 'x'\n", "config"),
        ("config = 'a.toml'\n[base]\nseed = 1\n", "one"),
        ("[base]\nseed = 1\n[grid]\nseed = []\n", "non-empty"),
        ("objective = 'nope'\n[base]\nseed = 1\n", "objective"),
        ("bogus = 1\n[base]\nseed = 1\n", "unknown key"),
        ("[base]\nseed = 1\n[search]\nsamples = 2\n[search.space]\nseed = {min = 5, max = 1}\n", "min <= max"),
    ],
)
def test_bad_specs_are_named(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(sweep.SpecError, match=message):
        sweep.load_spec(_spec(tmp_path, text))


@pytest.mark.usefixtures("ray_local")
def test_ray_sweep_records_failures_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    spec = sweep.load_spec(_spec(tmp_path))
    res = sweep.sweep(spec, out, quiet=True, report=False)
    # fifo_batch = 0 is outside veloces's range: those 4 points fail, the other 8 go on.
    assert (res.points, res.ran, res.ok, res.failed, res.skipped) == (12, 12, 8, 4, 0)
    db = sqlite3.connect(out / sweep.DB)
    rows = db.execute("SELECT point, status, error FROM points").fetchall()
    assert len(rows) == 12
    for point, status, error in rows:
        bad = json.loads(point)["scheduler.fifo_batch"] == 0
        assert (status == "failed") == bad
        assert (error is not None and "fifo_batch" in error) == bad
    with open(out / sweep.TABLE) as f:
        table = list(csv.DictReader(f))
    assert len(table) == 12 and sum(r["status"] == "ok" for r in table) == 8
    assert all(float(r["read.p99_ns"]) > 0 for r in table if r["status"] == "ok")
    summary = json.loads((out / sweep.SUMMARY).read_text())
    assert summary["kind"] == "vsim-sweep" and len(summary["rows"]) == 12
    # A rerun skips the points done and tries the failed ones again.
    again = sweep.sweep(spec, out, quiet=True, report=False)
    assert (again.ran, again.skipped, again.failed) == (4, 8, 4)
    # A limit leaves points out: they are not "already done"; the exit status says points failed.
    fresh = sweep.sweep(spec, tmp_path / "fresh", quiet=True, report=False, limit=5)
    assert (fresh.ran, fresh.skipped) == (5, 0)
    assert sweep.main([str(spec.path), "--out", str(out), "--quiet", "--no-report"]) == sweep.EXIT_POINTS_FAILED == 3


@pytest.mark.usefixtures("ray_local")
def test_ray_and_serial_give_the_same_figures(tmp_path: Path) -> None:
    spec = sweep.load_spec(_spec(tmp_path, SPEC.replace("[1, 16, 0]", "[1, 16]")))
    sweep.sweep(spec, tmp_path / "ray", quiet=True, report=False)
    sweep.sweep(spec, tmp_path / "serial", serial=True, cpus=2, quiet=True, report=False)

    def figs(d: Path) -> dict[str, dict[str, float]]:
        doc = json.loads((d / sweep.SUMMARY).read_text())
        return {r["key"]: {k: v for k, v in r["figures"].items() if k != "wall_s"} for r in doc["rows"]}

    a, b = figs(tmp_path / "ray"), figs(tmp_path / "serial")
    assert len(a) == 8 and a == b
    # The summary names the cluster and where each point ran (the node's id and IP on Ray).
    run = json.loads((tmp_path / "ray" / sweep.SUMMARY).read_text())["run"]
    nodes = {n["node"] for n in run["cluster"]["nodes"]}
    assert run["cluster"]["address"] == "local" and len(nodes) == 1
    assert run["points_by_node"] == {next(iter(nodes)): 8}
    rows = json.loads((tmp_path / "ray" / sweep.SUMMARY).read_text())["rows"]
    assert all(f" node {next(iter(nodes))} " in r["worker"] for r in rows)
    serial_run = json.loads((tmp_path / "serial" / sweep.SUMMARY).read_text())["run"]
    assert serial_run["cluster"] is None and sum(serial_run["points_by_node"].values()) == 8
    # And the same as one call of the API with that configuration.
    p = sweep.points(spec)[0]
    direct = vsim.figures(p.config, base=spec.base_dir)
    assert a[p.key]["read.p99_ns"] == direct["read"]["p99_ns"]


@pytest.mark.usefixtures("ray_local")
def test_tune_beats_or_keeps_the_defaults_and_writes_settings(tmp_path: Path) -> None:
    spec_file = tmp_path / "tune.toml"
    spec_file.write_text(f"""
name = "t"
workload = "{JOB}"
device = "cheapflash:preset=sd_a1,size=512m"
runtime = "2s"
seeds = [1]
samples = 4
objective = "read.p99_ns"
constraint = "write.bw_kib"
min_ratio = 0.5
[space]
writes_starved = {{min = 1, max = 64, log = true}}
read_expire = [10, 100]
""")
    spec = tune.load_spec(spec_file)
    doc = tune.tune(spec, tmp_path / "out")
    assert len(doc["trials"]) == 4
    best, default = doc["best"], doc["default"]
    assert best["read.p99_ns"] <= default["read.p99_ns"]
    assert best["write.bw_kib"] >= doc["floor"] or not best["feasible"]
    tun = best["tunables"]
    rule = (tmp_path / "out" / "61-veloces-tuned.rules").read_text()
    sh = (tmp_path / "out" / "veloces-tuned.sh").read_text()
    assert 'ATTR{queue/scheduler}="veloces"' in rule
    # The project's rule's guards on every rule; the tunables only where veloces is in effect,
    # so mq-deadline's same-named files are never written if veloces failed to load; with the
    # defaults (no tunables) no second rule, which would assign nothing.
    rules = [ln for ln in rule.splitlines() if ln.startswith("ACTION")]
    assert len(rules) == (2 if tun else 1)
    for ln in rules:
        for guard in ('ENV{VELOCES_SKIP}!="1"', 'ATTR{queue/rotational}=="0"', 'ATTR{queue/zoned}=="none"'):
            assert guard in ln, ln
    assert "queue/iosched" not in rules[0]
    assert not tun or 'ATTR{queue/scheduler}=="*veloces]*"' in rules[1]
    for k, v in tun.items():
        assert f'ATTR{{queue/iosched/{k}}}="{v}"' in rules[1]
        assert f"echo {v} > /sys/block/$dev/queue/iosched/{k}" in sh
    # The figures reported for the best setting are what the simulator gives for it.
    again = vsim.figures(str(JOB), device=spec.device, scheduler=doc["variant"], seed=1, runtime="2s")
    assert again["read"]["p99_ns"] == best["read.p99_ns"]


CARD = "cheapflash:preset=sd_a1,size=512m"
TUNE_SPEC = f"""
name = "t"
workload = "{JOB}"
device = "{CARD}"
runtime = "1s"
seeds = [1, 2]
samples = 3
objective = "read.p99_ns"
constraint = "write.bw_kib"
min_ratio = 0.5
block = "nr_requests=128"
[space]
read_expire = {{min = 1, max = 2000, log = true}}
writes_starved = {{min = 1, max = 64, log = true}}
"""


@pytest.mark.usefixtures("ray_local")
def test_tpe_search_and_the_search_comparison_run_through_ray_tune(tmp_path: Path) -> None:
    """Optuna's TPE through Ray Tune tunes as random search does; compare_searches runs each
    algorithm per search seed and counts the trials each needed to reach the best any found."""
    p = tmp_path / "tune.toml"
    p.write_text(TUNE_SPEC.replace("[space]", 'search = "tpe"\n[space]'))
    spec = tune.load_spec(p)
    assert spec.search == "tpe"
    doc = tune.tune(spec, tmp_path / "out")
    assert doc["search"] == "tpe" and [t["trial"] for t in doc["trials"]] == [1, 2, 3]
    assert all(len(t["objective_seeds"]) == 2 for t in doc["trials"])
    for t in doc["trials"]:
        assert t["ci_low"] <= t["objective"] <= t["ci_high"], t
    assert tune.mean_interval([1.0, 3.0]) == {"ci_low": 2.0 - 12.706, "ci_high": 2.0 + 12.706}
    assert tune.mean_interval([1.0]) == {"ci_low": None, "ci_high": None}
    assert doc["vs_default"]["n"] == 2 and doc["pareto"]
    # The cluster and the node of every trial, by the ids the cluster's node list uses.
    nodes = {n["node"] for n in doc["cluster"]["nodes"]}
    assert all(t["node"] in nodes for t in doc["trials"]) and sum(doc["trials_by_node"].values()) == 3
    cmp = tune.compare_searches(spec, tmp_path / "cmp", ["random", "tpe"], [1, 2])
    assert [(r["search"], r["seed"]) for r in cmp["runs"]] == [("random", 1), ("random", 2), ("tpe", 1), ("tpe", 2)]
    for r in cmp["runs"]:
        assert len(r["curve"]) == 3 and r["curve"] == sorted(r["curve"], reverse=True)
    # The best score some run found is reached by that run, within its 3 trials.
    assert any(r["trials_to_reach"] is not None and 1 <= r["trials_to_reach"] <= 3 for r in cmp["runs"])
    assert cmp["best_score"] == min(r["curve"][-1] for r in cmp["runs"])
    assert json.loads((tmp_path / "cmp" / tune.COMPARISON_JSON).read_text())["table"] == cmp["table"]


def test_tune_says_whether_seeds_tell_settings_apart_and_gives_the_pareto_front(tmp_path: Path) -> None:
    p = tmp_path / "tune.toml"
    p.write_text(TUNE_SPEC)
    spec = tune.load_spec(p)
    # Paired over the seeds: a constant difference is told apart, one within the noise is not.
    assert (tune.paired(spec, [10.0, 20.0, 30.0], [11.0, 21.0, 31.5]) or {})["distinct"] is True
    assert (tune.paired(spec, [10.0, 20.0, 30.0], [12.0, 18.0, 30.0]) or {})["distinct"] is False
    assert tune.paired(spec, [10.0], [20.0]) == {"n": 1, "mean": -10.0, "ci_low": None, "ci_high": None,
                                                "distinct": False}  # fmt: skip
    assert tune.paired(spec, [10.0, None], [1.0, 2.0]) is None

    def trial(n: int, re: int, ws: int, seeds: list[float], bw: float, feasible: bool = True) -> dict[str, Any]:
        return {"trial": n, "config": {"read_expire": re, "writes_starved": ws}, "score": sum(seeds) / len(seeds),
                "feasible": feasible, "objective": sum(seeds) / len(seeds), "objective_seeds": seeds,
                "constraint": bw}  # fmt: skip

    best = trial(1, 5, 2, [100.0, 200.0], 50.0)
    trials = [
        best,
        trial(2, 900, 40, [101.0, 199.0], 45.0),  # the seeds cannot tell it from the best; differs in both
        trial(3, 700, 30, [99.0, 199.0], 40.0, feasible=False),  # below the floor: a lower p99, on the front
        trial(4, 5, 3, [300.0, 400.0], 70.0),  # clearly worse, more bandwidth: on the front
        trial(5, 6, 2, [300.0, 400.0], 70.0),  # the same figures as 4: one point of the front
        trial(6, 6, 9, [500.0, 600.0], 10.0),  # dominated
        trial(7, 300, 20, [102.0, 199.0], 48.0),  # another tie, differing in both
    ]
    f = tune.flatness(spec, trials, best)
    assert f["ties"] == [2, 7] and f["flat"] is True
    assert f["spans"]["read_expire"] == {"min": 5, "max": 900, "distinct_values": 3}
    assert tune.flatness(spec, [best, trials[3]], best) == {
        "ties": [], "flat": False,
        "spans": {"read_expire": {"min": 5, "max": 5, "distinct_values": 1},
                  "writes_starved": {"min": 2, "max": 2, "distinct_values": 1}},
    }  # fmt: skip
    front = tune.pareto(spec, trials)
    assert [(t["trial"], t["same"]) for t in front] == [(3, 0), (1, 0), (4, 1)]
    assert tune.incumbent([{"score": 5.0}, {"error": "x"}, {"score": 7.0}, {"score": 2.0}]) == [5.0, 5.0, 5.0, 2.0]


def test_tune_spec_rejects_unknown_search(tmp_path: Path) -> None:
    p = tmp_path / "t.toml"
    p.write_text(TUNE_SPEC.replace("[space]", 'search = "grid"\n[space]'))
    with pytest.raises(sweep.SpecError, match="search 'grid': one of random, tpe"):
        tune.load_spec(p)


def test_tune_spec_rejects_unknown_tunables(tmp_path: Path) -> None:
    p = tmp_path / "t.toml"
    p.write_text(f'workload = "{JOB}"\ndevice = "ssd"\n[space]\nnot_a_tunable = [1, 2]\n')
    with pytest.raises(sweep.SpecError, match="not a tunable"):
        tune.load_spec(p)
    p.write_text(f'workload = "{JOB}"\ndevice = "ssd"\n[space]\nread_expire = {{min = 0, max = 5}}\n')
    with pytest.raises(sweep.SpecError, match="range"):
        tune.load_spec(p)
    # The model's own `hz` is no sysfs file of the module: a tuned setting could not apply.
    p.write_text(f'workload = "{JOB}"\ndevice = "ssd"\n[space]\nhz = [100, 250]\n')
    with pytest.raises(sweep.SpecError, match="hz: the simulator's own setting, not a sysfs file") as e:
        tune.load_spec(p)
    assert "hz" not in str(e.value).split("its tunables: ")[1]
    assert {t["name"] for t in vsim.tunables("veloces") if not t["sysfs"]} == {"hz"}


@pytest.mark.usefixtures("ray_local")
def test_errors_pickle_by_their_public_names_and_cross_a_ray_task() -> None:
    """Each exception round-trips through pickle as itself (module `vsim`), and one raised in
    a Ray task is caught on the driver by `except vsim.ConfigError` (issue 43)."""
    import pickle

    ray = pytest.importorskip("ray")
    for cls in (vsim.VsimError, vsim.ConfigError, vsim.TraceError, vsim.RunError, vsim.LostIOError):
        e = pickle.loads(pickle.dumps(cls("a message")))
        assert type(e) is cls and e.args == ("a message",) and cls.__module__ == "vsim"
    lost = vsim.LostIOError("lost", "{}")
    lost.result = {"jobs": []}
    back = pickle.loads(pickle.dumps(lost))
    assert back.result == {"jobs": []}

    def bad() -> None:
        vsim.run({"device": {"model": "no-such-model"}})

    task = ray.remote(max_retries=0)(bad)
    with pytest.raises(vsim.ConfigError, match="no-such-model"):
        ray.get(task.remote())


def test_a_seed_axis_ranks_settings_by_their_mean_with_an_interval(tmp_path: Path) -> None:
    """With a `seed` axis the summary ranks settings (the other axes) by their mean over the
    seeds, with a 95 % t interval, and marks those the seeds cannot tell from the best."""
    text = SPEC.replace('"scheduler.fifo_batch" = [1, 16, 0]\nseed = [1, 2]', "seed = [1, 2, 3]")
    spec = sweep.load_spec(_spec(tmp_path, text))
    sweep.sweep(spec, tmp_path / "out", serial=True, cpus=2, quiet=True, report=False)
    doc = json.loads((tmp_path / "out" / sweep.SUMMARY).read_text())
    agg = doc["settings"]
    assert agg["by"] == ["scheduler.read_expire"] and len(agg["rows"]) == 2
    for s in agg["rows"]:
        xs = [r["figures"]["read.p99_ns"] for r in doc["rows"]
              if r["values"]["scheduler.read_expire"] == s["values"]["scheduler.read_expire"]]  # fmt: skip
        assert s["n"] == 3 and s["mean"] == pytest.approx(sum(xs) / 3)
        assert s["ci_low"] <= s["mean"] <= s["ci_high"] and s["min"] == min(xs) and s["max"] == max(xs)
    best, other = agg["rows"]
    assert best["mean"] <= other["mean"] and best["indistinguishable"] is True
    overlap = other["ci_low"] <= best["ci_high"] and best["ci_low"] <= other["ci_high"]
    assert other["indistinguishable"] is overlap and agg["indistinguishable_from_best"] == 1 + overlap
    # Without a seed axis there is nothing to aggregate.
    spec2 = sweep.load_spec(_spec(tmp_path, SPEC.replace("seed = [1, 2]", "")))
    sweep.sweep(spec2, tmp_path / "out2", serial=True, cpus=2, quiet=True, report=False, limit=2)
    assert json.loads((tmp_path / "out2" / sweep.SUMMARY).read_text())["settings"] is None


def test_a_two_node_cluster_spreads_points_and_survives_a_node_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep on a two-node Ray cluster on this machine (two raylets of one CPU each): points
    run on both nodes and the summary names them; the worker node killed mid-sweep fails only
    the points it held ("worker lost"), the rest finish on the head, and a rerun completes."""
    pytest.importorskip("ray")
    import ray
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()  # this module's local Ray, if an earlier test started it
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    worker = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    text = SPEC.replace('"scheduler.fifo_batch" = [1, 16, 0]\nseed = [1, 2]', "seed = [1, 2, 3, 4, 5, 6, 7, 8]")
    text = text.replace('"scheduler.read_expire" = [5, 500]', '"scheduler.read_expire" = [5, 50, 500]')
    spec = sweep.load_spec(_spec(tmp_path, text))
    seen = {"n": 0, "killed": False}
    record = sweep.Store.record

    on_worker = f" node {worker.node_id[:12]} "

    def record_then_kill(self: sweep.Store, name: str, pts: Any, results: Any) -> None:
        # Killed once it has finished a point (its raylet starts its worker later than the head's).
        results = list(results)
        record(self, name, pts, results)
        seen["n"] += sum(on_worker in str(r.get("worker")) for r in results)
        if seen["n"] >= 1 and not seen["killed"]:
            seen["killed"] = True
            cluster.remove_node(worker)

    try:
        monkeypatch.setattr(sweep.Store, "record", record_then_kill)
        res = sweep.sweep(spec, tmp_path / "out", address=str(cluster.address), batch=1, quiet=True, report=False)
        assert seen["killed"], "the worker node ran no point"
        assert res.points == 24 and res.ok + res.failed == 24
        doc = json.loads((tmp_path / "out" / sweep.SUMMARY).read_text())
        run = doc["run"]
        assert len(run["cluster"]["nodes"]) == 2 and run["cluster"]["address"] == str(cluster.address)
        assert len(run["points_by_node"]) == 2, run["points_by_node"]  # both nodes ran points
        lost = [r for r in doc["rows"] if r["status"] == "failed"]
        assert all("worker lost" in r["error"] for r in lost)
        print(f"points by node {run['points_by_node']}; lost with the killed node: {len(lost)}")
        monkeypatch.setattr(sweep.Store, "record", record)
        again = sweep.sweep(spec, tmp_path / "out", address=str(cluster.address), batch=1, quiet=True, report=False)
        assert (again.ran, again.failed, again.skipped) == (len(lost), 0, 24 - len(lost))
    finally:
        ray.shutdown()
        cluster.shutdown()  # type: ignore[no-untyped-call]


def test_a_sweep_submitted_with_ray_job_submit_runs_on_that_cluster(tmp_path: Path) -> None:
    """`ray job submit` runs the entrypoint on the cluster's head with RAY_ADDRESS set to it:
    the sweep joins that cluster (its summary names the cluster's address and node) instead
    of starting a Ray of its own."""
    pytest.importorskip("ray.dashboard")  # the job server: ray[default]
    import ray
    from ray.cluster_utils import Cluster
    from ray.job_submission import JobStatus, JobSubmissionClient

    if ray.is_initialized():
        ray.shutdown()
    # The job agent's HTTP port is Ray's fixed default (52365) unless given: another Ray on
    # this machine (lab's cluster test beside this suite, a running matrix) may hold it, and
    # then no job can be submitted. A free one.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        agent_port = sock.getsockname()[1]
    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 1, "include_dashboard": True, "dashboard_port": 0,
                                      "dashboard_agent_listen_port": agent_port})  # fmt: skip
    try:
        head = cluster.head_node
        assert head is not None and head.webui_url, "the head started no dashboard (ray[default] missing?)"
        client = JobSubmissionClient(f"http://{head.webui_url}")
        spec = _spec(tmp_path)
        out = tmp_path / "out"
        deadline = time.time() + 180
        while True:  # the head's job agent comes up some seconds after the head
            try:
                job = client.submit_job(entrypoint=f"{sys.executable} -m vsim.sweep {spec} --out {out} --limit 4")
                break
            except RuntimeError as e:
                assert "No available agent" in str(e) and time.time() < deadline, e
                time.sleep(1)
        while (status := client.get_job_status(job)) not in {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED}:
            assert time.time() < deadline, client.get_job_logs(job)
            time.sleep(0.5)
        logs = client.get_job_logs(job)
        assert status == JobStatus.SUCCEEDED, logs
        run = json.loads((out / sweep.SUMMARY).read_text())["run"]
        assert run["mode"] == "ray" and run["ok"] == 4, logs
        assert run["cluster"]["address"] == str(cluster.address), (run["cluster"], cluster.address)
        assert list(run["points_by_node"]) == [n["node"] for n in run["cluster"]["nodes"]]
    finally:
        cluster.shutdown()  # type: ignore[no-untyped-call]


@pytest.mark.parametrize("name", ["veloces-grid.toml", "tune-cheapflash.toml"])
def test_the_docs_show_the_example_specs_as_they_are(name: str) -> None:
    """docs/python.md shows each example spec as its file (comment lines left out), and the
    file loads: what a reader copies is what runs."""
    path = REPO / "sim" / "examples" / "sweeps" / name
    body = "\n".join(ln for ln in path.read_text().splitlines() if not ln.startswith("#")).strip("\n")
    docs = (REPO / "docs" / "python.md").read_text()
    assert f"```toml\n{body}\n```" in docs, f"docs/python.md does not show {name} as it is"
    (tune.load_spec if name.startswith("tune") else sweep.load_spec)(path)


def test_the_docs_name_the_results_columns_as_the_table_has_them(tmp_path: Path) -> None:
    store = sweep.Store(tmp_path / sweep.DB)
    cols = [r[1] for r in store.db.execute("PRAGMA table_info(points)")]
    docs = (REPO / "docs" / "python.md").read_text()
    section = docs[docs.index("**Results**: each point's result") :][:700]
    assert all(f"`{c}`" in section for c in cols), (cols, section)


def test_a_misspelled_axis_is_a_spec_error_before_any_point_runs(tmp_path: Path) -> None:
    bad = SPEC.replace('"scheduler.read_expire"', '"scheduler.read_expir"')
    spec = sweep.load_spec(_spec(tmp_path, bad))
    with pytest.raises(sweep.SpecError, match=r"unknown option.*read_expir.*misspelled"):
        sweep.sweep(spec, tmp_path / "out", serial=True, quiet=True, report=False)
    assert not (tmp_path / "out" / sweep.DB).exists()
    # A value out of range is the point's own failure, not the spec's (fifo_batch = 0 first).
    text = SPEC.replace("[1, 16, 0]", "[0, 16]").replace("seed = [1, 2]", "seed = [1]")
    res = sweep.sweep(sweep.load_spec(_spec(tmp_path, text)), tmp_path / "out2", serial=True, quiet=True,
                      report=False)  # fmt: skip
    assert (res.ok, res.failed) == (2, 2)
