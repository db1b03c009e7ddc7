"""End-to-end traces (vlab trace, lab/vlab/etrace): the parser and the SQLite tables on a
capture from a 6.1 guest, the errors, and a traced run in the lab on each kernel."""

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from vlab import etrace
from vlab.kernels import DEFAULT_KERNELS
from vlab.vm import default_out

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

    h = "H vlab-trace 1 100\n"
    assert bad(h + "W 1 2 3\n").startswith(f"{tmp_path / 'x.txt'}:2: expected 11 fields")
    assert ":1: event before the header" in bad("I 1 2 3 W\n")
    assert ":1: not a vlab trace of format 1" in bad("H vlab-trace 9 100\n")
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
@pytest.mark.parametrize("kernel", list(DEFAULT_KERNELS))
def test_vlab_trace_of_three_known_files(kernel: str) -> None:
    out = default_out(f"trace-{kernel}")
    p = subprocess.run(
        [str(REPO / "vlab"), "trace", "--kernel", kernel, "--out", str(out), "--", "bash",
         str(REPO / "lab/jobs/trace-three-files.sh")],
        capture_output=True, text=True, cwd=REPO, check=False, timeout=900, env={**os.environ},
    )  # fmt: skip
    print(p.stdout[-3000:], p.stderr[-3000:], file=sys.stderr)
    assert p.returncode == 0, f"vlab trace failed on {kernel} (logs in {out}): {p.stderr[-2000:]}"
    assert "0 events lost" in p.stderr
    check_three_files(out / "trace.db")
