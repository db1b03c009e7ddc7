"""End-to-end traces (vlab trace, lab/vlab/etrace): the parser and the SQLite tables on a
capture from a 6.1 guest, the errors, and a traced run in the lab on each kernel."""

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, kernels

from vlab import etrace
from vlab.etrace import guest, query
from vlab.machine.kernels import DEFAULT_KERNELS
from vlab.machine.vm import default_out

DATA = Path(__file__).parent / "data"
KIB = 1024
# lab/jobs/trace-three-files.sh: (name, bytes written, bytes read back).
FILES = [("small", 16 * KIB, 0), ("medium", 1024 * KIB, 1024 * KIB), ("large", 8192 * KIB, 0)]


def check_three_files(db: Path) -> None:
    con = sqlite3.connect(db)
    meta = dict(con.execute("SELECT key, value FROM meta"))
    assert meta["lost_events"] == "0" and meta["unmatched_bios"] == "0", meta
    for name, written, read in FILES:
        row = con.execute(
            "SELECT ino, bytes_written, bytes_read, writes, max_offset FROM vfs_files WHERE name = ?", (name,)
        ).fetchone()
        assert row is not None, f"{name} not in vfs_files"
        ino, w, r, writes, top = row
        assert (w, r, top) == (written, read, written), (name, row)
        assert writes >= 1
        # The device saw the file's bytes: written once (fsync), read back once (caches dropped).
        dev = con.execute("SELECT SUM(sectors) * 512 FROM block_ops_by_file WHERE ino = ?", (ino,)).fetchone()[0]
        assert dev == written + read, (name, dev)
        ops = dict(
            con.execute(
                "SELECT b.op, COUNT(*) FROM block_ops b JOIN block_ops_by_file f ON f.block_op = b.id"
                " WHERE f.ino = ? GROUP BY b.op",
                (ino,),
            )
        )
        assert ops.get("write", 0) >= 1 and (ops.get("read", 0) >= 1) == (read > 0), (name, ops)
    # Every request issued completed, with a latency.
    assert con.execute("SELECT COUNT(*) FROM block_ops WHERE complete_ns IS NULL").fetchone()[0] == 0
    assert con.execute("SELECT MIN(latency_ns) FROM block_ops").fetchone()[0] > 0
    check_answers(db)


def check_answers(db: Path) -> None:
    """The query commands' answers on the known workload."""
    a = query.answers(db)
    hot = a["hot_files"]
    # Files are named by their path from the file system's root.
    assert [h["file"] for h in hot if h["file"] in ("/small", "/medium", "/large")] == ["/large", "/medium", "/small"]
    by_name = {h["file"]: h for h in hot}
    assert (by_name["/medium"]["read_bytes"], by_name["/medium"]["write_bytes"]) == (1024 * KIB, 1024 * KIB)
    frag = {f["file"]: f for f in a["fragmentation"]}
    for name, written, _ in FILES:
        # Written once in full, so the bios cover the whole file: its extents hold its bytes.
        assert frag["/" + name]["bytes"] == written and frag["/" + name]["extents"] >= 1, frag["/" + name]
    assert sum(s["read"] + s["write"] + s["other"] for s in a["sizes"]) == a["rows"]["block_ops"]
    writers = {p["comm"]: p for p in a["processes"]}
    assert writers["dd"]["vfs_write_bytes"] > 0 and writers["cat"]["vfs_read_bytes"] == 1024 * KIB
    # The seed's Table 3.1: every VFS write and read of the three files reached the device
    # (fsynced, read after the cache was dropped); the journal's requests have no VFS match.
    m = {r["what"]: r for r in a["matches"]}
    assert m["vfs requests"]["without_match"] == 0 and m["vfs files"]["without_match"] == 0, m
    assert 1 <= m["block requests"]["without_match"] < m["block requests"]["total"], m
    tl = a["timeline"]
    assert tl["file"] == "/large" and tl["vfs_pattern"] == "sequential", {k: tl[k] for k in list(tl)[:8]}


def blkparse_dispatches(path: Path) -> list[tuple[int, int, str]]:
    """(sector, sectors, R|W) of each blkparse D (issue) line, in order."""
    out = []
    for line in path.read_text().splitlines():
        f = line.split()
        if len(f) >= 10 and f[5] == "D" and f[8] == "+" and f[7].isdigit():
            rw = "W" if "W" in f[6] else "R" if "R" in f[6] else f[6]
            out.append((int(f[7]), int(f[9]), rw))
    return out


def test_queries_answer_the_seeds_questions(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    etrace.load(etrace.parse(DATA / "etrace-6.1-three-files.txt"), db)
    check_answers(db)
    con = query.open_db(db)
    assert query.timeline(con, "medium")["device_pattern"] == "sequential"
    ino, gen = query.find_file(con, "large")
    assert query.find_file(con, "/large") == query.find_file(con, str(ino)) == query.find_file(con, f"{ino}:{gen}")
    with pytest.raises(etrace.TraceError, match="no file '999999:1'"):
        query.timeline(con, "999999:1")
    with pytest.raises(etrace.TraceError, match="no file 'nope'"):
        query.find_file(con, "nope")
    with pytest.raises(etrace.TraceError, match="bytes, ops or latency"):
        query.hot_files(con, "colour")
    # The command line prints the same.
    p = subprocess.run([str(REPO / "vlab"), "query", str(db), "frag", "large"], capture_output=True, text=True,
                       check=False, cwd=REPO)  # fmt: skip
    assert p.returncode == 0 and "large" in p.stdout, p.stderr


def test_bad_databases_get_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(etrace.TraceError, match="no such database file"):
        query.open_db(tmp_path / "missing.db")
    junk = tmp_path / "junk.db"
    junk.write_text("not a database at all, but long enough to have a header" * 10)
    with pytest.raises(etrace.TraceError, match="not an SQLite database"):
        query.open_db(junk)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(etrace.TraceError, match="no table meta"):
        query.open_db(other)

    def altered(name: str, sql: str) -> Path:
        db = tmp_path / name
        etrace.load(etrace.parse(DATA / "etrace-6.1-three-files.txt"), db)
        con = sqlite3.connect(db)
        con.execute(sql)
        con.commit()
        con.close()
        return db

    with pytest.raises(etrace.TraceError, match=r"block_ops lacks column\(s\) latency_ns"):
        query.open_db(altered("a.db", "ALTER TABLE block_ops DROP COLUMN latency_ns"))
    with pytest.raises(etrace.TraceError, match="database format '9'"):
        query.open_db(altered("b.db", "UPDATE meta SET value = '9' WHERE key = 'format'"))
    p = subprocess.run([str(REPO / "vlab"), "query", str(junk), "hot"], capture_output=True, text=True, check=False,
                       cwd=REPO)  # fmt: skip
    assert p.returncode == 1 and "not an SQLite database" in p.stderr


def test_a_capture_loads_into_the_seeds_four_tables(tmp_path: Path) -> None:
    t = etrace.parse(DATA / "etrace-6.1-three-files.txt")
    assert (t.lost_events, t.unmatched_bios, t.unmatched_completions) == (0, 0, 0)
    db = tmp_path / "t.db"
    etrace.load(t, db)
    tables = {r[0] for r in sqlite3.connect(db).execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"vfs_ops", "block_ops", "vfs_files", "block_ops_by_file"} <= tables
    check_three_files(db)
    with pytest.raises(etrace.TraceError, match="exists"):
        etrace.load(t, db)


def test_bad_traces_name_file_and_line(tmp_path: Path) -> None:
    def bad(text: str) -> str:
        p = tmp_path / "x.txt"
        p.write_text(text)
        with pytest.raises(etrace.TraceError) as e:
            etrace.parse(p)
        return str(e.value)

    h = "H vlab-trace 2 100\n"
    assert bad(h + "W 1 2 3\n").startswith(f"{tmp_path / 'x.txt'}:2: expected 11 fields")
    assert ":1: event before the header" in bad("I 1 2 3 W\n")
    assert ":1: not a vlab trace of format 2" in bad("H vlab-trace 9 100\n")
    assert ":2: not a trace line" in bad(h + "hello\n")
    assert ":2: 'x' is not an integer" in bad(h + "I x 2 3 W\n")
    with pytest.raises(etrace.TraceError, match="No such file"):
        etrace.parse(tmp_path / "missing.txt")
    # Drops are counted, never silent.
    p = tmp_path / "lost.txt"
    p.write_text(h + "Lost 12 events\nLost 3 events\n")
    assert etrace.parse(p).lost_events == 15
    # ... and so are lines the probe counted in the kernel but the reader never got.
    p.write_text(h + "I 5 0 8 W\nC 6 0 8 0 W\nE 7\n@n[I]: 3\n@n[C]: 1\n")
    t = etrace.parse(p)
    assert (t.missing_lines, t.lost_events) == ({"I": 2}, 2)


@pytest.mark.boot
@pytest.mark.parametrize("kernel", kernels(quick="6.12"))
def test_vlab_trace_of_three_known_files(kernel: str) -> None:
    out = default_out(f"trace-{kernel}")
    p = subprocess.run(
        [str(REPO / "vlab"), "trace", "--kernel", kernel, "--blktrace", "--out", str(out), "--", "bash",
         str(REPO / "lab/jobs/trace-three-files.sh")],
        capture_output=True, text=True, cwd=REPO, check=False, timeout=900, env={**os.environ},
    )  # fmt: skip
    print(p.stdout[-3000:], p.stderr[-3000:], file=sys.stderr)
    assert p.returncode == 0, f"vlab trace failed on {kernel} (logs in {out}): {p.stderr[-2000:]}"
    assert "0 events lost" in p.stderr
    check_three_files(out / "trace.db")
    # blktrace, recording the same device alongside, saw the same requests issued.
    con = sqlite3.connect(out / "trace.db")
    ours = [(s, n, "W" if op == "write" else "R" if op == "read" else op)
            for s, n, op in con.execute("SELECT sector, sectors, op FROM block_ops ORDER BY issue_ns")]  # fmt: skip
    theirs = blkparse_dispatches(out / "blkparse.txt")
    # blktrace starts after the probe (it takes 2 s to set up): what it cannot have seen is
    # what the probe saw before blktrace's first issue, e.g. ext4's first journal writes
    # after mount (two, once on 6.12); from there on both saw the same requests.
    # The two may order requests issued together differently (blkparse merges per-CPU
    # buffers; a 6.1 run listed two writes before the reads the probe saw first): any start
    # of at most 4 from which the two saw the same requests will do.
    assert any(sorted(ours[k:]) == sorted(theirs) for k in range(min(5, len(ours)) or 1)), (len(ours), len(theirs))


def test_the_silent_probe_fires_and_counts_but_prints_only_its_header_and_end() -> None:
    """Seed 002's third condition (probes on, not printing): every event printf gone, every
    per-kind count kept, the header the guest waits for and the end line kept."""
    full = etrace.PROBE.read_text()
    silent = etrace.silent_probe()
    assert silent.count("printf(") == 2 and 'printf("H vlab-trace' in silent and 'printf("E ' in silent
    kinds = sorted(set(re.findall(r'@n\["(\w)"\] = count\(\)', full)))
    assert len(kinds) >= 10 and sorted(set(re.findall(r'@n\["(\w)"\] = count\(\)', silent))) == kinds
    assert silent.count("{") == silent.count("}") and silent.count("(") == silent.count(")")
    with pytest.raises(etrace.TraceError, match="no event printf"):
        etrace.silent_probe('BEGIN { printf("H vlab-trace 2 %llu\\n", nsecs); }\n')


def test_the_idle_probe_is_the_header_the_end_and_one_unrelated_function() -> None:
    """The fourth condition: bpftrace running, attached to one function the command does
    not call; the guest waits for the same header line and reads the same end line."""
    idle = etrace.idle_probe()
    full = etrace.PROBE.read_text()
    header = next(ln for ln in full.splitlines() if ln.startswith("BEGIN"))
    assert idle.startswith(header + "\n") and 'printf("E %llu\\n", nsecs);' in idle
    assert re.findall(r"^(kfunc|kprobe|tracepoint)\S*", idle, re.M) == ["kfunc"]
    assert f"kfunc:{etrace.IDLE_FUNCTION} " in idle and etrace.IDLE_FUNCTION not in full
    assert idle.count("printf(") == 2 and idle.count("{") == idle.count("}")
    with pytest.raises(etrace.TraceError, match="no BEGIN line"):
        etrace.idle_probe("kfunc:vfs_read { }\n")


# A stand-in for bpftrace 0.17's loop: epoll_wait 100 ms at a time; its SIGINT handler sets a
# flag the loop reads only on EINTR, so a signal landing between two waits is lost. The first
# LOSE signals are lost here on purpose; then it prints END and exits 0. With SLEEP it first
# sleeps that long outside epoll_wait (bpftrace detaching its probes).
_FAKE_BPFTRACE = """
import select, signal, sys, time
lose, sleep, got = int(sys.argv[1]), float(sys.argv[2]), []
signal.signal(signal.SIGINT, lambda *_: got.append(1))
print("H vlab-trace 2 1", flush=True)
ep = select.epoll()
while len(got) <= lose:
    ep.poll(0.1)
if sleep:
    time.sleep(sleep)
print("E 2", flush=True)
"""


def _fake_bpftrace(tmp_path: Path, lose: int, sleep: float = 0.0) -> tuple[subprocess.Popen[bytes], Path]:
    trace = tmp_path / "trace.txt"
    f = trace.open("w")
    p = subprocess.Popen([sys.executable, "-c", _FAKE_BPFTRACE, str(lose), str(sleep)], stdout=f)
    while "H vlab-trace" not in trace.read_text():
        time.sleep(0.05)
    return p, trace


def test_a_lost_sigint_is_sent_again_while_bpftrace_still_polls(tmp_path: Path) -> None:
    """The silent probe's CI hang: the SIGINT is lost, bpftrace polls on with nothing to
    print; it is signalled again once it has stayed in epoll_wait past the wait."""
    p, trace = _fake_bpftrace(tmp_path, lose=1)
    status, signals, state = guest.stop_bpftrace(p, trace, timeout_s=60, resignal_s=2)
    assert (status, signals, state) == (0, 2, "")
    assert trace.read_text().splitlines()[-1] == "E 2"


def test_a_bpftrace_outside_its_loop_is_not_signalled_again(tmp_path: Path) -> None:
    """After its loop (detaching, END, printing maps) a second SIGINT would cut it short: a
    bpftrace slow there, not in epoll_wait, gets one signal; one that never ends is killed
    and what it was doing is recorded."""
    p, trace = _fake_bpftrace(tmp_path, lose=0, sleep=6)
    assert guest.stop_bpftrace(p, trace, timeout_s=60, resignal_s=1) == (0, 1, "")
    p, trace = _fake_bpftrace(tmp_path, lose=0, sleep=600)
    status, signals, state = guest.stop_bpftrace(p, trace, timeout_s=3, resignal_s=1)
    assert status is None and signals == 1 and "stat: " in state and "syscall: " in state, state


@pytest.mark.boot
@pytest.mark.full
def test_the_overhead_runs_the_four_conditions() -> None:
    """`vlab trace --overhead 1 --silent --idle`: dd without the probe, with it, with it
    attached but silent, and with bpftrace on an unrelated function; each run's figure, the
    silent run's trace holds no event line but the kernel's count of every kind that fired,
    and the idle run's only its header and end. A measurement of four boots' runs (~10 min):
    make test-full; the stopping of a silent bpftrace is tested on the host above."""
    kernel = DEFAULT_KERNELS[-1]
    out = default_out(f"trace-overhead-{kernel}")
    p = subprocess.run(
        [str(REPO / "vlab"), "trace", "--kernel", kernel, "--overhead", "1", "--silent", "--idle", "--out",
         str(out), "--", "bash", str(REPO / "lab/jobs/trace-dd.sh"), "4096", "256"],
        capture_output=True, text=True, cwd=REPO, check=False, timeout=900, env={**os.environ},
    )  # fmt: skip
    print(p.stdout[-3000:], p.stderr[-3000:], file=sys.stderr)
    assert p.returncode == 0, f"vlab trace --overhead failed (logs in {out}): {p.stderr[-2000:]}"
    run = json.loads((out / "trace-run.json").read_text())
    assert [r["condition"] for r in run["overhead_runs"]] == ["off", "on", "silent", "idle"]
    assert all(r["meminfo_kib"]["MemAvailable"] > 0 for r in run["overhead_runs"])
    assert all(r["figure"] and r["figure"] > 0 for r in run["overhead_runs"])
    assert run["figure_silent_ratio"] > 0 and "with the probe attached, not printing" in p.stderr
    assert run["figure_idle_ratio"] > 0 and "with bpftrace on an unrelated function only" in p.stderr
    trace = (out / "overhead-3-trace.txt").read_text()
    silent = run["overhead_runs"][2]
    assert silent.get("probe_status") == 0, f"bpftrace killed or failed after SIGINT: {silent}\n{trace[-2000:]}"
    # bpftrace's own "Attaching N probes..." line shares the file.
    kinds = {ln.split()[0] for ln in trace.splitlines() if ln.strip() and not ln.startswith("Attaching")}
    assert kinds <= {"H", "E", "@n[R]:", "@n[W]:", "@n[O]:", "@n[S]:", "@n[U]:", "@n[N]:", "@n[B]:", "@n[M]:",
                     "@n[Q]:", "@n[I]:", "@n[Y]:", "@n[C]:"}, kinds  # fmt: skip
    assert "E" in kinds, f"the silent probe's END did not print (run: {silent}):\n{trace[-2000:]}"
    assert "@n[W]:" in kinds and "@n[C]:" in kinds, trace[-2000:]
    idle, idle_trace = run["overhead_runs"][3], (out / "overhead-4-trace.txt").read_text()
    assert idle.get("probe_status") == 0, f"idle bpftrace killed or failed: {idle}\n{idle_trace[-2000:]}"
    lines = [ln.split()[0] for ln in idle_trace.splitlines() if ln.strip() and not ln.startswith("Attaching")]
    assert lines[0] == "H" and "E" in lines and set(lines) <= {"H", "E", "@n[X]:"}, idle_trace[-2000:]
