"""End-to-end I/O traces (seed 002 §3): the lines `probe.bt` prints, parsed and loaded into
SQLite with the seed's four tables.

- `vfs_ops`: one row per VFS operation on the traced device's file system (read, write,
  open, fsync, unlink): times, process, inode, offset, size asked and done, latency.
- `vfs_files`: one row per file seen (inode and generation: inode numbers are reused after
  an unlink, the generation tells the files apart): its name and path, first and last
  time, operations and bytes, the largest offset touched, whether it was unlinked.
- `block_ops`: one row per block request: its sector range, op and flags, the times it
  was queued (its first bio), inserted in the scheduler, issued and completed, the
  latency, the process (pid) and thread (tid) that submitted its first bio.
- `block_ops_by_file`: which inode's pages each request carried (from the bios it was
  made of; a request of several files has a row per file), with the sectors per file.
- `bios` (beyond the seed): every bio submitted, with its process, sectors, inode, the
  file offset of its first page and the request that carried it (NULL: none was seen, or
  an empty flush): the file's extents on the device and its device-level access pattern.

The link between a request and a file is made at bio submission (`kfunc:submit_bio`: the
inode of the bio's first page); the bios are attached to the request issued next whose
sector range holds them.
"""

from __future__ import annotations

import re
import sqlite3
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

PROBE = Path(__file__).with_name("probe.bt")
# An event line's printf, up to the `);` that ends it (its arguments hold parentheses, never
# `);`): removed from the probe for the "attached, not printing" condition of seed 002's
# Fig. 3.2, where every probe still fires and counts but prints nothing.
_EVENT_PRINTF = re.compile(r'printf\("(?![HE] )[^"]*"(?:[^;]|;(?<!\);))*?\);', re.S)
FORMAT_VERSION = "2"  # the probe's lines
# The database's tables (meta key "format"): readers (vsim) check it. Additions (a table, a
# column) keep it; a change to what a column means or a removal bumps it.
DB_FORMAT = "1"
PAGE = 4096  # bytes per page-cache page (x86-64)
BDEV_NAME = "(block device: metadata, journal)"


class TraceError(Exception):
    """A trace that cannot be read, named by file:line."""


File = tuple[int, int]  # (inode, generation): inode numbers are reused, generations tell them apart


def _file(v: str, where: str) -> File:
    ino, sep, gen = v.partition(":")
    if not sep:
        raise TraceError(f"{where}: '{v}' is not INODE:GENERATION")
    return _int(ino, where), _int(gen, where)


@dataclass
class VfsOp:
    start_ns: int
    end_ns: int
    op: str
    pid: int
    tid: int
    comm: str
    file: File
    offset: int | None
    size: int | None
    ret: int | None
    name: str


@dataclass
class Bio:
    ns: int
    pid: int
    tid: int
    comm: str
    sector: int
    sectors: int
    opf: int
    file: File  # (0, 0): not a file's page
    index: int  # the file's page index of the bio's first page (-1: not a file's page)
    covered: int = 0  # sectors of it found in issued requests (a split bio makes several)


@dataclass
class Request:
    sector: int
    sectors: int
    rwbs: str
    insert_ns: int | None = None
    issue_ns: int | None = None
    complete_ns: int | None = None
    error: int = 0
    issues: int = 0  # more than one: requeued and issued again
    bios: list[tuple[Bio, int]] = field(default_factory=list)  # (bio, sectors of it in this request)


@dataclass
class Trace:
    vfs: list[VfsOp] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    bios: int = 0
    merges: int = 0
    requeues: int = 0
    # Empty bios (a flush with no data): on a device without a volatile write cache the
    # block layer completes them without a request.
    empty_bios: int = 0
    unmatched_bios: int = 0
    pending: list[Bio] = field(default_factory=list)  # the unmatched bios
    all_bios: list[Bio] = field(default_factory=list)
    unmatched_completions: int = 0
    lost_events: int = 0
    lost_reported: int = 0  # by bpftrace's "Lost N events" lines
    # Events the probe counted in the kernel but whose lines never came (per kind);
    # included in lost_events.
    missing_lines: dict[str, int] = field(default_factory=dict)
    start_ns: int = 0
    end_ns: int = 0
    dentries: dict[File, tuple[int, str]] = field(default_factory=dict)  # file -> (parent inode, name)
    bdev_files: set[File] = field(default_factory=set)  # the block device's inode (metadata, journal)

    def path(self, file: File) -> str | None:
        """The file's path from the file system's root, from the names the probe saw (the
        last path it was opened by; '.../' where an ancestor was never seen). Directories
        are looked up by inode alone (their latest name)."""
        dirs = {ino: v for (ino, _), v in self.dentries.items()}
        if file not in self.dentries:
            return None
        parent, name = self.dentries[file]
        if parent == file[0]:
            return "/"
        parts, ino, seen = [name], parent, {file[0]}
        while ino in dirs and ino not in seen:
            seen.add(ino)
            parent, name = dirs[ino]
            if parent == ino:  # the root
                return "/" + "/".join(reversed(parts))
            parts.append(name)
            ino = parent
        return ".../" + "/".join(reversed(parts))


_LOST = re.compile(r"Lost (\d+) events")
_COUNT = re.compile(r"^@n\[([A-Z])\]: (\d+)$")
_KINDS = {"H", "R", "W", "S", "O", "N", "U", "B", "M", "Q", "I", "Y", "C", "E"}


# REQ_OP_* (include/linux/blk_types.h, the same on 6.1 and 6.12): the low 8 bits of cmd_flags.
_OPS = {0: "R", 1: "W", 2: "F", 3: "D", 5: "E", 9: "WZ"}


def _rwbs(field: str, known: str) -> str:
    """The I and C lines carry cmd_flags (from fentry programs); the Q line, when there was
    one, carries the kernel's rwbs text, which is kept."""
    if not field.isdigit():
        return field
    return known or _OPS.get(int(field) & 0xFF, "?")


def _fields(line: str, n: int, where: str) -> list[str]:
    """The first n-1 space-separated fields and the rest (a name may hold spaces)."""
    parts = line.split(" ", n - 1)
    if len(parts) < n:
        raise TraceError(f"{where}: expected {n} fields, got {len(parts)}: {line!r}")
    return parts


def _int(v: str, where: str) -> int:
    try:
        return int(v)
    except ValueError:
        raise TraceError(f"{where}: '{v}' is not an integer") from None


def parse(path: Path) -> Trace:
    """Read a trace; every line is accounted for (an event, a drop count, bpftrace's own
    banner or a blank), anything else is an error naming file:line."""
    t = Trace()
    pending: list[Bio] = []
    inserted: list[Request] = []
    inflight: deque[Request] = deque()
    seen_header = False
    lines: dict[str, int] = {}
    counted: dict[str, int] = {}
    events: list[tuple[int, int, str, str, str]] = []
    try:
        text = path.read_text(errors="replace")
    except OSError as e:
        raise TraceError(f"{path}: {e.strerror}") from None
    for no, raw in enumerate(text.splitlines(), 1):
        where = f"{path}:{no}"
        line = raw.rstrip("\n")
        if not line.strip() or line.startswith("Attaching "):
            continue
        if m := _LOST.search(line):
            t.lost_events += int(m.group(1))
            continue
        if m := _COUNT.match(line):
            counted[m.group(1)] = int(m.group(2))
            continue
        kind = line[:1]
        if kind not in _KINDS or line[1:2] != " ":
            raise TraceError(f"{where}: not a trace line: {line!r}")
        if kind == "H":
            f = _fields(line, 4, where)
            if f[1] != "vlab-trace" or f[2] != FORMAT_VERSION:
                raise TraceError(f"{where}: not a vlab trace of format {FORMAT_VERSION}: {line!r}")
            t.start_ns = _int(f[3], where)
            seen_header = True
            continue
        if not seen_header:
            raise TraceError(f"{where}: event before the header line")
        lines[kind] = lines.get(kind, 0) + 1
        if kind == "N":  # a name for paths, not an event
            f = _fields(line, 4, where)
            t.dentries[_file(f[1], where)] = (_int(f[2], where), f[3])
            continue
        # bpftrace reads one buffer per CPU: lines of different CPUs come out of time
        # order, so events are ordered by their time (the second field) first.
        events.append((_int(_fields(line, 2, where)[1].split(" ", 1)[0], where), no, kind, line, where))
    for _, _, kind, line, where in sorted(events):
        if kind in "RW":
            f = _fields(line, 11, where)
            t.vfs.append(
                VfsOp(
                    _int(f[1], where), _int(f[2], where), "read" if kind == "R" else "write",
                    _int(f[3], where), _int(f[4], where), f[5], _file(f[6], where),
                    _int(f[7], where), _int(f[8], where), _int(f[9], where), f[10],
                )
            )  # fmt: skip
        elif kind == "O":
            f = _fields(line, 8, where)
            ns = _int(f[1], where)
            t.vfs.append(VfsOp(ns, ns, "open", _int(f[2], where), _int(f[3], where), f[4],
                               _file(f[5], where), None, _int(f[6], where), 0, f[7]))  # fmt: skip
        elif kind in "SU":
            f = _fields(line, 7, where)
            ns = _int(f[1], where)
            t.vfs.append(VfsOp(ns, ns, "fsync" if kind == "S" else "unlink", _int(f[2], where),
                               _int(f[3], where), f[4], _file(f[5], where), None, None, 0, f[6]))  # fmt: skip
        elif kind == "B":
            f = _fields(line, 11, where)
            b = Bio(_int(f[1], where), _int(f[2], where), _int(f[3], where), f[4], _int(f[5], where), _int(f[6], where),
                    _int(f[7], where), _file(f[8], where), _int(f[9], where))  # fmt: skip
            if f[10] == "1" and b.file[0]:
                t.bdev_files.add(b.file)
            t.all_bios.append(b)
            t.bios += 1
            if b.sectors == 0:
                t.empty_bios += 1
            else:
                pending.append(b)
        elif kind == "M":
            t.merges += 1
        elif kind in "QI":
            f = _fields(line, 5, where)
            ns, sector, sectors, rwbs = _int(f[1], where), _int(f[2], where), _int(f[3], where), f[4]
            if kind == "Q":
                inserted.append(Request(sector, sectors, rwbs, insert_ns=ns))
                continue
            rq = next((r for r in inserted if r.sector == sector and r.sectors == sectors), None)
            if rq is None:
                rq = Request(sector, sectors, rwbs)  # issued without an insert (no scheduler)
            else:
                inserted.remove(rq)
            rq.issues += 1
            rq.issue_ns, rq.rwbs = ns, _rwbs(rwbs, rq.rwbs if rq.insert_ns is not None else "")
            if rq.issues > 1:  # a requeued request, issued again: same row, latest issue
                inflight.append(rq)
                continue
            end = sector + sectors
            for b in pending:
                overlap = min(end, b.sector + b.sectors) - max(sector, b.sector)
                if overlap > 0 and b.ns <= ns:
                    rq.bios.append((b, overlap))
                    b.covered += overlap
            pending = [b for b in pending if b.covered < b.sectors]
            inflight.append(rq)
            t.requests.append(rq)
        elif kind == "Y":
            f = _fields(line, 5, where)
            sector, sectors = _int(f[2], where), _int(f[3], where)
            rq = next((r for r in inflight if r.sector == sector and r.sectors == sectors), None)
            if rq is not None:  # back to the queue: its next issue is not a new request
                inflight.remove(rq)
                inserted.append(rq)
            t.requeues += 1
        elif kind == "C":
            f = _fields(line, 6, where)
            ns, sector, sectors = _int(f[1], where), _int(f[2], where), _int(f[3], where)
            rq = next((r for r in inflight if r.sector == sector and r.sectors == sectors), None)
            if rq is None:
                t.unmatched_completions += 1
                continue
            inflight.remove(rq)
            rq.complete_ns, rq.error = ns, _int(f[4], where)
        elif kind == "E":
            t.end_ns = _int(_fields(line, 2, where)[1], where)
    t.unmatched_bios = len(pending)
    t.pending = pending
    for kind, n in counted.items():
        if n > lines.get(kind, 0):
            t.missing_lines[kind] = n - lines.get(kind, 0)
    # bpftrace's "Lost N events" lines and the lines the kernel counted but the reader never
    # got are two counts of the same losses: the larger is the number lost.
    t.lost_reported = t.lost_events
    t.lost_events = max(t.lost_events, sum(t.missing_lines.values()))
    return t


SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE vfs_ops (
  id INTEGER PRIMARY KEY, start_ns INTEGER, end_ns INTEGER, latency_ns INTEGER, op TEXT,
  pid INTEGER, tid INTEGER, comm TEXT, ino INTEGER, gen INTEGER, offset INTEGER, size INTEGER,
  ret INTEGER);
CREATE TABLE vfs_files (
  ino INTEGER, gen INTEGER, name TEXT, path TEXT, first_ns INTEGER, last_ns INTEGER, reads INTEGER,
  writes INTEGER, bytes_read INTEGER, bytes_written INTEGER, max_offset INTEGER,
  unlinked INTEGER, PRIMARY KEY (ino, gen));
CREATE TABLE block_ops (
  id INTEGER PRIMARY KEY, sector INTEGER, sectors INTEGER, op TEXT, rwbs TEXT,
  queue_ns INTEGER, insert_ns INTEGER, issue_ns INTEGER, complete_ns INTEGER,
  latency_ns INTEGER, error INTEGER, pid INTEGER, tid INTEGER, comm TEXT, bios INTEGER);
CREATE TABLE block_ops_by_file (
  block_op INTEGER REFERENCES block_ops(id), ino INTEGER, gen INTEGER, sectors INTEGER,
  PRIMARY KEY (block_op, ino, gen));
CREATE TABLE bios (
  id INTEGER PRIMARY KEY, block_op INTEGER REFERENCES block_ops(id), ns INTEGER, pid INTEGER,
  tid INTEGER, comm TEXT, sector INTEGER, sectors INTEGER, opf INTEGER, ino INTEGER, gen INTEGER,
  file_offset INTEGER);
CREATE INDEX vfs_ops_ino ON vfs_ops (ino, gen, start_ns);
CREATE INDEX vfs_ops_pid ON vfs_ops (pid);
CREATE INDEX block_ops_issue ON block_ops (issue_ns);
CREATE INDEX block_ops_sector ON block_ops (sector);
CREATE INDEX by_file_ino ON block_ops_by_file (ino, gen);
CREATE INDEX bios_ino ON bios (ino, gen, sector);
"""


def _op(rwbs: str) -> str:
    for c in rwbs:
        if c in "RWDF":
            return {"R": "read", "W": "write", "D": "discard", "F": "flush"}[c]
    return "other"


def load(t: Trace, db: Path) -> None:
    """Write `t` into a new SQLite database `db` (refused if it exists)."""
    if db.exists():
        raise TraceError(f"{db}: exists; give a new path")
    con = sqlite3.connect(db)
    try:
        con.executescript(SCHEMA)
        con.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [("format", DB_FORMAT), ("trace_format", FORMAT_VERSION), ("lost_events", str(t.lost_events)),
             ("lost_reported", str(t.lost_reported)),
             ("bios", str(t.bios)),
             ("merges", str(t.merges)), ("requeues", str(t.requeues)), ("empty_bios", str(t.empty_bios)),
             ("unmatched_bios", str(t.unmatched_bios)),
             ("unmatched_completions", str(t.unmatched_completions)), ("start_ns", str(t.start_ns)),
             ("missing_lines", " ".join(f"{k}={v}" for k, v in sorted(t.missing_lines.items()))),
             ("end_ns", str(t.end_ns))],
        )  # fmt: skip
        con.executemany(
            "INSERT INTO vfs_ops (start_ns, end_ns, latency_ns, op, pid, tid, comm, ino, gen, offset, size, ret)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(v.start_ns, v.end_ns, v.end_ns - v.start_ns, v.op, v.pid, v.tid, v.comm, *v.file, v.offset,
              v.size, v.ret) for v in t.vfs],
        )  # fmt: skip
        files: dict[File, list[object]] = {}
        for v in t.vfs:
            f = files.setdefault(v.file, [*v.file, v.name, t.path(v.file), v.start_ns, v.end_ns, 0, 0, 0, 0, 0, 0])
            f[2], f[5] = v.name, max(int(str(f[5])), v.end_ns)
            done = max(v.ret or 0, 0)
            if v.op == "read":
                f[6], f[8] = int(str(f[6])) + 1, int(str(f[8])) + done
            elif v.op == "write":
                f[7], f[9] = int(str(f[7])) + 1, int(str(f[9])) + done
            elif v.op == "unlink":
                f[11] = 1
            if v.offset is not None and v.op in ("read", "write"):
                f[10] = max(int(str(f[10])), v.offset + done)
        for bf in t.bdev_files - files.keys():
            # No VFS operation reaches it; named so the questions can say what it is.
            files[bf] = [*bf, BDEV_NAME, BDEV_NAME, None, None, 0, 0, 0, 0, 0, 0]
        con.executemany("INSERT INTO vfs_files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", files.values())
        request_of: dict[int, int] = {}  # id(bio) -> the request holding its first sector
        for r in t.requests:
            first = min((b for b, _ in r.bios), key=lambda b: b.ns) if r.bios else None
            lat = r.complete_ns - r.issue_ns if r.complete_ns is not None and r.issue_ns is not None else None
            cur = con.execute(
                "INSERT INTO block_ops (sector, sectors, op, rwbs, queue_ns, insert_ns, issue_ns, complete_ns,"
                " latency_ns, error, pid, tid, comm, bios) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (r.sector, r.sectors, _op(r.rwbs), r.rwbs, first.ns if first else None, r.insert_ns, r.issue_ns,
                 r.complete_ns, lat, r.error, first.pid if first else None, first.tid if first else None,
                 first.comm if first else None, len(r.bios)),
            )  # fmt: skip
            per: dict[File, int] = {}
            for b, n in r.bios:
                per[b.file] = per.get(b.file, 0) + n
                if r.sector <= b.sector < r.sector + r.sectors and cur.lastrowid is not None:
                    request_of[id(b)] = cur.lastrowid
            con.executemany(
                "INSERT INTO block_ops_by_file VALUES (?, ?, ?, ?)",
                [(cur.lastrowid, *bf, n) for bf, n in per.items()],
            )
        con.executemany(
            "INSERT INTO bios (block_op, ns, pid, tid, comm, sector, sectors, opf, ino, gen, file_offset)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(request_of.get(id(b)), b.ns, b.pid, b.tid, b.comm, b.sector, b.sectors, b.opf, *b.file,
              b.index * PAGE if b.index >= 0 else None) for b in t.all_bios],
        )  # fmt: skip
        con.commit()
    finally:
        con.close()


# The idle condition's one probe: a function the traced commands (dd, sync, dropping the
# caches) never call, of the same kind (kfunc) as the probe's own.
IDLE_FUNCTION = "vfs_rmdir"


def idle_probe(text: str | None = None) -> str:
    """bpftrace running with the probe's header and end line and one probe, on a function
    the traced command does not call (IDLE_FUNCTION): the cost of bpftrace being there — its
    process, its ring buffers polled — apart from the probes firing (the fourth condition,
    beside seed 002's three; `@n["X"]` counts the idle probe's firings, expected 0)."""
    text = PROBE.read_text() if text is None else text
    begin = re.search(r"^BEGIN \{.*\}$", text, re.M)
    end_line = re.search(r'printf\("E [^;]*\);', text)
    if begin is None or end_line is None:
        raise TraceError(f"{PROBE}: no BEGIN line or END printf to build the idle probe from")
    return (
        f'{begin.group(0)}\n\nkfunc:{IDLE_FUNCTION} {{ @n["X"] = count(); }}\n\n'
        f"END {{\n  {end_line.group(0)}\n  print(@n);\n  clear(@n);\n}}\n"
    )


def silent_probe(text: str | None = None) -> str:
    """The probe with every event line's printf removed: the probes attach and fire, the
    kernel counts each kind (`@n`, printed at the end), and nothing else is printed — the
    third condition of the seed's Fig. 3.2 ("probes on, not printing"). The header and end
    lines stay (the guest waits for the header)."""
    text = PROBE.read_text() if text is None else text
    out, n = _EVENT_PRINTF.subn("", text)
    if n == 0 or 'printf("H vlab-trace' not in out:
        raise TraceError(f"{PROBE}: no event printf to remove, or its header went with them")
    return out
