"""The write-flood family: a reader beside each shape of write flood, on each device
(docs/notebooks/benchmarks.md, "Reads under write floods"; issue 13).

    build/venv/bin/python -m vlab.experiments.floods [--kernel 6.1] [--devices t4-100us-q1,...|all]
        [--floods a-r1,a-r4,...|all] [--repeat 3] [--runtime 5] [--out DIR]
    build/venv/bin/python -m vlab.experiments.floods --table DIR     # re-tabulate finished runs

Floods (each with a random 4 KiB O_DIRECT reader at depth 1 or 4, `-r1`/`-r4`):
  a  one O_DIRECT random writer at depth 32 (libaio)
  b  16 O_DIRECT random writers at depth 1 (psync)
  c  one buffered sequential writer dirtying the device (writeback flood)
  cf the same with an fsync every 32 MiB
  d  the 70/30 random mix of `make demo` from one submitter at depth 32 (no separate reader)
  e  four interleaved sequential O_DIRECT writers (128 KiB, psync), each in its own range
Suffix `-shared` (a, b, c with a reader at depth 1): reader and writers share the whole device.

Devices are null_blk with 4, 32 or 128 tags, 100 us or 1 ms completions (timer), 1 or 4
hardware queues (`t4-100us-q1` ...), or a served vsim model (`served-ssd`).

Each (device, flood) is one `vlab compare` (one boot, every scheduler, rotated order,
medians); a failed one is reported and the rest go on. The table gives read p99 and IOPS,
write IOPS, and veloces's ratios to kyber and none against the goals (read p99 <= 0.5x
kyber's and <= none's, writes >= 0.9x none's; for d, within noise of none).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any

from vlab import app, provenance, schedulers
from vlab.devices.spec import load_spec_args
from vlab.machine.kernels import KernelError, lookup
from vlab.paths import repo_root

SCHEDULERS = "none,mq-deadline,kyber,bfq,veloces"


def _null_blk(tags: int, lat_us: int, queues: int) -> str:
    return f"null_blk:irqmode=2,completion_nsec={lat_us * 1000},hw_queue_depth={tags},submit_queues={queues},size=1024"


DEVICES: dict[str, str] = {
    f"t{t}-{'100us' if lat == 100 else '1ms'}-q{q}": _null_blk(t, lat, q)
    for t in (4, 32, 128)
    for lat in (100, 1000)
    for q in (1, 4)
}
DEVICES["served-ssd"] = "vsim:ssd:blocks_per_plane=64"
# Served cards over each transport (issue 37): NBD's 128 tags against the card's own depth
# (ublk: 1 for the SD card, 32 for eMMC's command queue), the dilation chosen from measurement.
for _card in ("sd_a1", "emmc51"):
    for _t in ("nbd", "ublk"):
        DEVICES[f"served-{_card}-{_t}"] = f"vsim:cheapflash:preset={_card},size=1g,dilation=auto,transport={_t}"
# `make bench-floods` without DEVICES: the device and a deeper, slower one.
QUICK_DEVICES = ["t4-100us-q1", "t32-1ms-q1"]

# The reader and the writers use separate halves of the device: a direct read of a
# range with dirty page-cache pages would first wait for their writeback (c, cf).
_READER = """[reader]
offset=0
size=512m
rw=randread
direct=1
bs=4k
ioengine=libaio
iodepth={depth}
"""

# Writers on the second half: (section, rw, direct, bs, ioengine, the flood's own option).
_WRITERS = {
    "a": ("writer", "randwrite", 1, "4k", "libaio", "iodepth=32"),
    "b": ("writers", "randwrite", 1, "4k", "psync", "numjobs=16"),
    "c": ("writer", "write", 0, "1m", "psync", ""),
    "cf": ("writer", "write", 0, "1m", "psync", "fsync=32"),
}


def _writer(section: str, rw: str, direct: int, bs: str, engine: str, extra: str) -> str:
    lines = [f"[{section}]", "offset=512m", "size=512m", f"rw={rw}", f"direct={direct}", f"bs={bs}"]
    return "\n".join([*lines, f"ioengine={engine}", *([extra] if extra else [])]) + "\n"


_GLOBAL = """; vlab.experiments.floods {name}: generated; the lab sets filename and runtime.
[global]
randrepeat=0
norandommap=1
ramp_time=1

"""

_MIX = """[mixed]
size=1g
rw=randrw
rwmixread=70
direct=1
bs=4k
ioengine=libaio
iodepth=32
"""


_STREAMS = """[streams]
offset=512m
size=64m
offset_increment=128m
numjobs=4
rw=write
direct=1
bs=128k
ioengine=psync
"""


def floods() -> dict[str, str]:
    """Flood name -> fio job text."""
    jobs = {f"{w}-r{d}": _GLOBAL.format(name=f"{w}-r{d}") + _READER.format(depth=d) + "\n" + _writer(*spec)
            for w, spec in _WRITERS.items() for d in (1, 4)}  # fmt: skip
    jobs["d"] = _GLOBAL.format(name="d") + _MIX
    # Reader and writers on one shared range (the whole device) instead of separate halves.
    for w in ("a", "b", "c"):
        shared = _READER.format(depth=1).replace("size=512m", "size=1g")
        writer = _writer(*_WRITERS[w]).replace("offset=512m\nsize=512m", "offset=0\nsize=1g")
        jobs[f"{w}-r1-shared"] = _GLOBAL.format(name=f"{w}-r1-shared") + shared + "\n" + writer
    # Four interleaved sequential O_DIRECT writers (128 KiB, one each in its own eighth of the
    # second half) beside the reader.
    jobs["e-r1"] = _GLOBAL.format(name="e-r1") + _READER.format(depth=1) + "\n" + _STREAMS
    # The same with 16 KiB writes (`make demo`'s flood): on a one-tag SD card each write holds
    # the device an eighth as long, so a reader gets through enough reads for a p99
    # (vlab.verdict.MIN_READS) in seconds of a dilated device's wall time.
    jobs["e16-r1"] = (
        _GLOBAL.format(name="e16-r1") + _READER.format(depth=1) + "\n" + _STREAMS.replace("bs=128k", "bs=16k")
    )
    # The reader in the RT I/O priority class (ioprio_set(2) on its thread), the writers
    # unset (BE): schedulers with classes (veloces, mq-deadline, bfq) serve it first.
    for w in ("a", "b"):
        reader = _READER.format(depth=1) + "prioclass=1\nprio=0\n"
        jobs[f"{w}-r1-rt"] = _GLOBAL.format(name=f"{w}-r1-rt") + reader + "\n" + _writer(*_WRITERS[w])
    return jobs


QUICK_FLOODS = ["a-r1", "a-r4", "b-r1", "b-r4", "c-r4", "cf-r4", "d"]


def pick(arg: str | None, known: Collection[str], default: list[str], what: str, prog: str = "floods") -> list[str]:
    """The names a comma list `arg` asks for among `known` (`all`: every one; empty: `default`);
    an unknown name exits naming it and the known ones."""
    if not arg:
        return default
    if arg == "all":
        return list(known)
    names = [n.strip() for n in arg.split(",") if n.strip()]
    bad = [n for n in names if n not in known]
    if bad:
        raise SystemExit(f"{prog}: unknown {what} {', '.join(bad)}; known: {', '.join(known)}")
    return names


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def verdict(flood: str, e: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """veloces against the goals, from one comparison's summary entries (medians)."""

    def med(sched: str, key: str) -> float | None:
        v = e.get(sched, {}).get(key, {})
        return v.get("median") if isinstance(v, dict) else None

    p99 = {s: med(s, "read_p99_us") for s in e}
    w = {s: med(s, "write_iops") for s in e}
    r = {s: med(s, "read_iops") for s in e}
    out: dict[str, Any] = {
        "p99_vs_kyber": _ratio(p99.get("veloces"), p99.get("kyber")),
        "p99_vs_none": _ratio(p99.get("veloces"), p99.get("none")),
        "writes_vs_none": _ratio(w.get("veloces"), w.get("none")),
        "reads_vs_none": _ratio(r.get("veloces"), r.get("none")),
    }
    if flood == "d":
        tot = {s: (r.get(s) or 0) + (w.get(s) or 0) for s in e}
        out["iops_vs_none"] = _ratio(tot.get("veloces"), tot.get("none"))
        out["met"] = None  # "within the noise": judged beside the spread in the report
    else:
        k, n, wr = out["p99_vs_kyber"], out["p99_vs_none"], out["writes_vs_none"]
        out["met"] = None if None in (k, n, wr) else bool(k <= 0.5 and n <= 1.0 and wr >= 0.9)
    return out


def _f(v: float | None, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def table(out: Path) -> tuple[str, dict[str, Any]]:
    """Markdown tables and a JSON document from every finished comparison under `out`."""
    rows: list[str] = []
    doc: dict[str, Any] = {}
    for summary_path in sorted(out.glob("*/*/summary.json")):
        dev, flood = summary_path.parent.parent.name, summary_path.parent.name
        s = json.loads(summary_path.read_text())
        e = s["schedulers"]
        v = verdict(flood, e)
        doc.setdefault(dev, {})[flood] = {"verdict": v, "schedulers": {
            sched: {k: e[sched][k]["median"] for k in ("read_p99_us", "read_iops", "write_iops")
                    if isinstance(e[sched].get(k), dict)} for sched in e}}  # fmt: skip
        cells = []
        for sched in e:
            p = e[sched].get("read_p99_us", {}).get("median")
            ri = e[sched].get("read_iops", {}).get("median")
            wi = e[sched].get("write_iops", {}).get("median")
            busy = (e[sched].get("device_busy_share") or {}).get("median")
            cells.append(f"{sched} {_f(p / 1000 if p else None)} / {_f(ri, 0)} / {_f(wi, 0)}"
                         + (f" / busy {busy:.0%}" if busy is not None else ""))  # fmt: skip
        met = {True: "yes", False: "no", None: "-"}[v["met"]]
        rows.append(
            f"| {dev} | {flood} | {' <br> '.join(cells)} | {_f(v['p99_vs_kyber'])} | {_f(v['p99_vs_none'])} "
            f"| {_f(v['writes_vs_none'])} | {met} |"
        )
    head = [
        "| device | flood | scheduler: read p99 ms / read IOPS / write IOPS (medians; served: / device busy) "
        "| veloces p99 / kyber | veloces p99 / none | veloces writes / none | goal met |",
        "|---|---|---|---|---|---|---|",
    ]
    return "\n".join(head + rows) + "\n", doc


def variants_table(out: Path, base: str = "veloces") -> str:
    """For comparisons with scheduler variants (`veloces:read_expire=10`, `make
    bench-defaults`): each variant's read p99 and writes beside `base`'s, as medians with
    min-max and ratios. "apart" says the two min-max ranges of read p99 (or of writes) do
    not overlap: a difference beyond the run-to-run spread."""

    def rng(e: dict[str, Any], key: str) -> tuple[float, float, float] | None:
        v = e.get(key)
        return (v["median"], v["min"], v["max"]) if isinstance(v, dict) and v.get("median") is not None else None

    def apart(a: tuple[float, float, float] | None, b: tuple[float, float, float] | None) -> bool:
        return a is not None and b is not None and (a[2] < b[1] or b[2] < a[1])

    rows: list[str] = []
    for summary_path in sorted(out.glob("*/*/summary.json")):
        e = json.loads(summary_path.read_text())["schedulers"]
        if base not in e or not any(s.startswith(base + ":") for s in e):
            continue
        dev, flood = summary_path.parent.parent.name, summary_path.parent.name
        b_p99, b_w = rng(e[base], "read_p99_us"), rng(e[base], "write_iops")
        for sched in [base, *(s for s in e if s.startswith(base + ":"))]:
            p99, w = rng(e[sched], "read_p99_us"), rng(e[sched], "write_iops")
            cells = [
                "-" if p99 is None else f"{p99[0] / 1000:.2f} ({p99[1] / 1000:.2f}-{p99[2] / 1000:.2f})",
                _f(_ratio(p99[0] if p99 else None, b_p99[0] if b_p99 else None)),
                "-" if w is None else f"{w[0]:,.0f} ({w[1]:,.0f}-{w[2]:,.0f})",
                _f(_ratio(w[0] if w else None, b_w[0] if b_w else None)),
                ", ".join(k for k, a, b in (("p99", p99, b_p99), ("writes", w, b_w)) if sched != base and apart(a, b)),
            ]
            setting = "defaults" if sched == base else sched.removeprefix(base + ":")
            rows.append(f"| {dev} | {flood} | {setting} | {' | '.join(cells)} |")
    if not rows:
        return ""
    head = [
        f"| device | flood | {base} setting | read p99 ms (min-max) | / defaults | write IOPS (min-max) "
        "| / defaults | apart from defaults |",
        "|---|---|---|---|---|---|---|---|",
    ]
    return "\n".join(head + rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vlab.experiments.floods", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--kernel", default="6.1")
    ap.add_argument("--devices", help=f"comma list or all (default {','.join(QUICK_DEVICES)})")
    ap.add_argument("--floods", help=f"comma list or all (default {','.join(QUICK_FLOODS)})")
    ap.add_argument("--schedulers", default=SCHEDULERS)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--runtime", type=float, default=5.0)
    ap.add_argument("--out", type=Path, default=repo_root() / "build" / "bench" / "floods")
    ap.add_argument("--table", type=Path, metavar="DIR", help="only re-tabulate the comparisons in DIR")
    provenance.add_arguments(ap)
    args = ap.parse_args(argv)

    if args.table:
        text, doc = table(args.table)
        variants = variants_table(args.table)
        print(text + ("\n" + variants if variants else ""), end="")
        return 0
    if not provenance.may_write("floods", args.out, args.scratch):
        return 2
    try:
        kernel = lookup(args.kernel)
        names = schedulers.parse_list(args.schedulers)
    except (KernelError, schedulers.SchedulerError) as e:
        print(f"floods: {e}", file=sys.stderr)
        return 2
    devices = pick(args.devices, DEVICES, QUICK_DEVICES, "device")
    jobs = floods()
    wanted = pick(args.floods, jobs, QUICK_FLOODS, "flood")
    args.out.mkdir(parents=True, exist_ok=True)
    failed: list[str] = []
    for dev in devices:
        for flood in wanted:
            run = args.out / dev / flood
            run.mkdir(parents=True, exist_ok=True)
            job = run.parent / f"{flood}.fio"
            job.write_text(jobs[flood])
            print(f"== {dev} {flood}", flush=True)
            comparison = app.Comparison(
                kernel=kernel, devices=[str(d) for d in load_spec_args([DEVICES[dev]])], schedulers=names,
                jobs=[job], out=run, repeat=args.repeat, runtime=args.runtime,
            )  # fmt: skip
            try:
                if app.compare(comparison).status != 0:
                    failed.append(f"{dev}/{flood}")
            except app.RequestError as e:
                print(f"floods: {dev}/{flood}: {e}", flush=True)
                failed.append(f"{dev}/{flood}")
    text, doc = table(args.out)
    variants = variants_table(args.out)
    if variants:
        text += "\n" + variants
    (args.out / "floods.md").write_text(text)
    (args.out / "floods.json").write_text(json.dumps(doc, indent=2) + "\n")
    command = ["python", "-m", "vlab.experiments.floods", *(sys.argv[1:] if argv is None else argv)]
    provenance.write_manifest(args.out, kernels=[kernel.release], scratch=args.scratch, command=command)
    print(text, end="")
    if failed:
        print(f"floods: {len(failed)} comparison(s) failed (their logs are in their folders): {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
