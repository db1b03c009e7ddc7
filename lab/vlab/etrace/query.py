"""The questions seed 002 §3 asks of an end-to-end trace, as queries on its SQLite
database (`vlab query DB ...`): which files are hot, how one file is accessed over time,
how fragmented a file is on the device, what each process reads and writes, the
request size histogram, and how many requests of each level match the other (the seed's
Table 3.1). `answers` runs them all; `vlab trace` writes that to
queries.json beside trace.db, and the report (`vlab report DIR`) draws it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from vlab.etrace import BDEV_NAME, DB_FORMAT, TraceError

ANSWERS = "queries.json"
SECTOR = 512
# Tables and the columns the queries read; a database without them is not one of ours.
NEEDED = {
    "meta": ("key", "value"),
    "vfs_ops": ("start_ns", "end_ns", "op", "pid", "comm", "ino", "gen", "offset", "size", "ret"),
    "vfs_files": ("ino", "gen", "name", "path", "bytes_read", "bytes_written", "unlinked"),
    "block_ops": ("id", "sector", "sectors", "op", "issue_ns", "complete_ns", "latency_ns", "pid", "comm"),
    "block_ops_by_file": ("block_op", "ino", "gen", "sectors"),
    "bios": ("ns", "pid", "comm", "sector", "sectors", "opf", "ino", "gen", "file_offset"),
}
SEQUENTIAL, RANDOM = 0.8, 0.2  # the share of operations that continue the previous one


def open_db(path: Path) -> sqlite3.Connection:
    """Open a trace database read-only, or say what is wrong with it."""
    if not path.is_file():
        raise TraceError(f"{path}: no such database file")
    try:
        con = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as e:
        raise TraceError(f"{path}: not an SQLite database ({e})") from None
    for table, columns in NEEDED.items():
        if table not in tables:
            con.close()
            raise TraceError(f"{path}: not a vlab trace database: no table {table} (made by `vlab trace`?)")
        have = {r[1] for r in con.execute(f"PRAGMA table_info({table})")}
        missing = [c for c in columns if c not in have]
        if missing:
            con.close()
            raise TraceError(f"{path}: table {table} lacks column(s) {', '.join(missing)}: a different schema")
    fmt = dict(con.execute("SELECT key, value FROM meta")).get("format")
    if fmt != DB_FORMAT:
        con.close()
        raise TraceError(f"{path}: database format {fmt!r}, this vlab reads format {DB_FORMAT!r}")
    return con


File = tuple[int, int]  # (inode, generation)


def _names(con: sqlite3.Connection) -> dict[File, str]:
    """Each file's path where the probe saw it, else its name."""
    return {
        (int(ino), int(gen)): str(path or name)
        for ino, gen, name, path in con.execute("SELECT ino, gen, name, path FROM vfs_files")
    }


def _key(row: dict[str, Any]) -> File:
    return int(row["ino"]), int(row["gen"])


def _regular(row: dict[str, Any], names: dict[File, str]) -> bool:
    """A file the VFS saw (not the block device's own pages, not an unnamed inode)."""
    return _key(row) in names and names[_key(row)] != BDEV_NAME


def _label(file: File, names: dict[File, str]) -> str:
    if file in names:
        return names[file]
    return "(not a file's pages)" if file[0] == 0 else f"inode {file[0]} (no VFS operation seen)"


def hot_files(con: sqlite3.Connection, by: str = "bytes", limit: int = 10) -> list[dict[str, Any]]:
    """Files by the device I/O their pages caused: bytes, requests, or the device time of
    the requests that carried them (a request of several files counts for each)."""
    order = {"bytes": "bytes", "ops": "requests", "latency": "device_ns"}.get(by)
    if order is None:
        raise TraceError(f"hot files by {by!r}: bytes, ops or latency")
    names = _names(con)
    rows = con.execute(
        "SELECT f.ino, f.gen, SUM(f.sectors) * 512 AS bytes,"
        " SUM(CASE WHEN b.op = 'read' THEN f.sectors ELSE 0 END) * 512,"
        " SUM(CASE WHEN b.op = 'write' THEN f.sectors ELSE 0 END) * 512,"
        " COUNT(*) AS requests, COALESCE(SUM(b.latency_ns), 0) AS device_ns, AVG(b.latency_ns)"
        " FROM block_ops_by_file f JOIN block_ops b ON b.id = f.block_op"
        f" GROUP BY f.ino, f.gen ORDER BY {order} DESC, f.ino, f.gen LIMIT ?",
        (limit,),
    ).fetchall()
    return [
        {
            "ino": ino,
            "gen": gen,
            "file": _label((ino, gen), names),
            "device_bytes": total,
            "read_bytes": rb,
            "write_bytes": wb,
            "requests": n,
            "device_ms": round(dev_ns / 1e6, 3),
            "mean_latency_us": round(mean / 1e3, 1) if mean is not None else None,
        }
        for ino, gen, total, rb, wb, n, dev_ns, mean in rows
    ]


def find_file(con: sqlite3.Connection, file: str) -> File:
    """A file named by INODE:GENERATION, INODE, its path or its name (the most active file of
    that inode or name: inode numbers and names are reused)."""
    ino, sep, gen = file.partition(":")
    if sep and ino.isdigit() and gen.isdigit():
        key = (int(ino), int(gen))
        seen = "SELECT 1 FROM {} WHERE ino = ? AND gen = ? LIMIT 1"
        if not any(con.execute(seen.format(t), key).fetchone() for t in ("vfs_files", "block_ops_by_file")):
            raise TraceError(f"no file {file!r} in the trace (vlab query DB hot lists them)")
        return key
    where, args = ("ino = ?", (int(file),)) if file.isdigit() else ("path = ? OR name = ?", (file, file))
    row = con.execute(
        f"SELECT ino, gen FROM vfs_files WHERE {where} ORDER BY bytes_read + bytes_written DESC LIMIT 1", args
    ).fetchone()
    if row is None:
        raise TraceError(f"no file {file!r} in the trace (vlab query DB hot lists them)")
    return int(row[0]), int(row[1])


def _continuing(points: list[tuple[int, int, str]]) -> float | None:
    """The share of operations that start where the previous one of the same kind ended."""
    last: dict[str, int] = {}
    hits = n = 0
    for start, length, kind in points:
        if kind in last:
            n += 1
            hits += start == last[kind]
        last[kind] = start + length
    return round(hits / n, 3) if n else None


def _pattern(share: float | None) -> str:
    if share is None:
        return "one operation"
    return "sequential" if share >= SEQUENTIAL else "random" if share <= RANDOM else "mixed"


def timeline(con: sqlite3.Connection, file: str, limit: int = 2000) -> dict[str, Any]:
    """One file's I/O over time: its VFS operations (offset, size) and its device bios
    (sector, file offset), and the access pattern at each level."""
    key = find_file(con, file)
    t0 = con.execute("SELECT value FROM meta WHERE key = 'start_ns'").fetchone()
    base = int(t0[0]) if t0 else 0
    vfs = con.execute(
        "SELECT start_ns, op, offset, ret, pid, comm FROM vfs_ops"
        " WHERE ino = ? AND gen = ? AND op IN ('read', 'write') AND ret > 0 ORDER BY start_ns",
        key,
    ).fetchall()
    bios = con.execute(
        "SELECT ns, opf & 255, sector, sectors, file_offset, pid, comm FROM bios"
        " WHERE ino = ? AND gen = ? AND sectors > 0"
        " ORDER BY ns",
        key,
    ).fetchall()
    vfs_share = _continuing([(o, n, op) for _, op, o, n, _, _ in vfs])
    dev_share = _continuing([(s, n, str(op)) for _, op, s, n, _, _, _ in bios])
    return {
        "ino": key[0],
        "gen": key[1],
        "file": _label(key, _names(con)),
        "vfs_ops": len(vfs),
        "vfs_sequential_share": vfs_share,
        "vfs_pattern": _pattern(vfs_share),
        "bios": len(bios),
        "device_sequential_share": dev_share,
        "device_pattern": _pattern(dev_share),
        "vfs": [
            {"t_s": round((ns - base) / 1e9, 6), "op": op, "offset": o, "bytes": n, "pid": pid, "comm": c}
            for ns, op, o, n, pid, c in vfs[:limit]
        ],
        "device": [
            {
                "t_s": round((ns - base) / 1e9, 6),
                "op": "write" if op == 1 else "read" if op == 0 else str(op),
                "sector": s,
                "sectors": n,
                "file_offset": fo,
                "pid": pid,
                "comm": c,
            }
            for ns, op, s, n, fo, pid, c in bios[:limit]
        ],
        "truncated": max(len(vfs), len(bios)) > limit,
    }


def fragmentation(con: sqlite3.Connection, file: str | None = None, limit: int = 10) -> list[dict[str, Any]]:
    """A file's extents on the device: the sector ranges its bios wrote or read, merged
    where they touch (a file written once in full shows its whole layout; a file only partly
    touched in the trace shows that part). The files with most device bytes when none is named."""
    names = _names(con)
    if file is not None:
        keys = [find_file(con, file)]
    else:
        keys = [_key(r) for r in hot_files(con, "bytes", limit + 1) if _regular(r, names)][:limit]
    out = []
    for key in keys:
        ranges = sorted(
            (int(s), int(s) + int(n))
            for s, n in con.execute("SELECT sector, sectors FROM bios WHERE ino = ? AND gen = ? AND sectors > 0", key)
        )
        extents: list[list[int]] = []
        for s, e in ranges:
            if extents and s <= extents[-1][1]:
                extents[-1][1] = max(extents[-1][1], e)
            else:
                extents.append([s, e])
        sizes = [e - s for s, e in extents]
        out.append(
            {
                "ino": key[0],
                "gen": key[1],
                "file": _label(key, names),
                "extents": len(extents),
                "bytes": sum(sizes) * SECTOR,
                "largest_extent_bytes": max(sizes, default=0) * SECTOR,
                "first_sectors": [s for s, _ in extents[:8]],
            }
        )
    return out


def processes(con: sqlite3.Connection, limit: int = 20) -> list[dict[str, Any]]:
    """Reads and writes by process, at both levels: what it asked of the VFS and the device
    bios it submitted (write-back is submitted by kernel threads, not by the writer)."""
    rows: dict[tuple[int, str], dict[str, Any]] = {}

    def row(pid: int, comm: str) -> dict[str, Any]:
        return rows.setdefault(
            (pid, comm),
            {"pid": pid, "comm": comm, "vfs_reads": 0, "vfs_read_bytes": 0, "vfs_writes": 0, "vfs_write_bytes": 0,
             "device_read_bytes": 0, "device_write_bytes": 0, "bios": 0},
        )  # fmt: skip

    for pid, comm, op, n, done in con.execute(
        "SELECT pid, comm, op, COUNT(*), COALESCE(SUM(MAX(ret, 0)), 0) FROM vfs_ops"
        " WHERE op IN ('read', 'write') GROUP BY pid, comm, op"
    ):
        r = row(pid, comm)
        r[f"vfs_{op}s"] += n
        r[f"vfs_{op}_bytes"] += done
    for pid, comm, op, n, sectors in con.execute(
        "SELECT pid, comm, opf & 255, COUNT(*), SUM(sectors) FROM bios WHERE sectors > 0 GROUP BY pid, comm, opf & 255"
    ):
        r = row(pid, comm)
        r["bios"] += n
        if op in (0, 1):
            r["device_read_bytes" if op == 0 else "device_write_bytes"] += sectors * SECTOR
    ranked = sorted(
        rows.values(),
        key=lambda r: (-(r["vfs_read_bytes"] + r["vfs_write_bytes"] + r["device_read_bytes"] + r["device_write_bytes"]),
                       r["pid"]),
    )  # fmt: skip
    return ranked[:limit]


def matches(con: sqlite3.Connection) -> list[dict[str, Any]]:
    """The seed's Table 3.1: block requests whose files saw no VFS read or write, VFS reads
    and writes whose file caused no block request, and the same by file. A block request
    matches when one of its files (inode:generation) has a VFS read or write; a VFS
    operation when its file is in a block request."""
    vfs_files = "SELECT DISTINCT ino, gen FROM vfs_ops WHERE op IN ('read', 'write')"
    block_files = "SELECT DISTINCT ino, gen FROM block_ops_by_file"
    rows = [
        ("block requests", "SELECT COUNT(*) FROM block_ops",
         "SELECT COUNT(*) FROM block_ops b WHERE NOT EXISTS (SELECT 1 FROM block_ops_by_file f"
         f" WHERE f.block_op = b.id AND (f.ino, f.gen) IN ({vfs_files}))"),
        ("vfs requests", "SELECT COUNT(*) FROM vfs_ops WHERE op IN ('read', 'write')",
         "SELECT COUNT(*) FROM vfs_ops WHERE op IN ('read', 'write')"
         f" AND (ino, gen) NOT IN ({block_files})"),
        ("block files", f"SELECT COUNT(*) FROM ({block_files})",
         f"SELECT COUNT(*) FROM ({block_files}) WHERE (ino, gen) NOT IN ({vfs_files})"),
        ("vfs files", f"SELECT COUNT(*) FROM ({vfs_files})",
         f"SELECT COUNT(*) FROM ({vfs_files}) WHERE (ino, gen) NOT IN ({block_files})"),
    ]  # fmt: skip
    out = []
    for what, total_sql, unmatched_sql in rows:
        total = int(con.execute(total_sql).fetchone()[0])
        unmatched = int(con.execute(unmatched_sql).fetchone()[0])
        out.append({"what": what, "without_match": unmatched, "total": total,
                    "ratio": round(unmatched / total, 3) if total else None})  # fmt: skip
    return out


BUCKETS = [4 << 10 << i for i in range(9)]  # 4 KiB ... 1 MiB


def _bucket(nbytes: int) -> str:
    for b in BUCKETS:
        if nbytes <= b:
            return f"≤{b >> 10} KiB" if b < 1 << 20 else "≤1 MiB"
    return ">1 MiB"


def sizes(con: sqlite3.Connection) -> list[dict[str, Any]]:
    """Device requests by size (power-of-two buckets), reads and writes apart."""
    labels = [_bucket(b) for b in BUCKETS] + [">1 MiB"]
    counts = {lab: {"size": lab, "read": 0, "write": 0, "other": 0} for lab in labels}
    for sectors, op, n in con.execute("SELECT sectors, op, COUNT(*) FROM block_ops GROUP BY sectors, op"):
        c = counts[_bucket(int(sectors) * SECTOR)]
        c[op if op in ("read", "write") else "other"] += n
    return list(counts.values())


def answers(db: Path) -> dict[str, Any]:
    """Every query's answer (the hottest file's timeline), as queries.json holds them."""
    con = open_db(db)
    try:
        meta = dict(con.execute("SELECT key, value FROM meta"))
        hot = hot_files(con, "bytes")
        names = _names(con)
        named = [h for h in hot if _regular(h, names)]
        counts = {
            t: con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
            for t in ("vfs_ops", "vfs_files", "block_ops", "block_ops_by_file", "bios")
        }
        return {
            "kind": "vlab-trace",
            "db": db.name,
            "meta": meta,
            "rows": counts,
            "hot_files": hot,
            "hot_files_by_ops": hot_files(con, "ops"),
            "hot_files_by_latency": hot_files(con, "latency"),
            "timeline": timeline(con, "{ino}:{gen}".format(**named[0]), limit=5000) if named else None,
            "fragmentation": fragmentation(con),
            "processes": processes(con),
            "sizes": sizes(con),
            "matches": matches(con),
        }
    finally:
        con.close()


def write_answers(db: Path, out: Path) -> None:
    out.write_text(json.dumps(answers(db), indent=1) + "\n")
