"""`make test`'s phases, timed: each phase's wall time, CPU time, exit status and test counts.

    python3 lab/phases.py start                           # a new record (build/test-times/)
    python3 lab/phases.py run NAME [-C DIR] -- CMD [ARG…]  # CMD (in DIR) as phase NAME
    python3 lab/phases.py summary                         # a line per phase, the total, the tests

`run` records only when VELOCES_PHASES is set (`make test` sets it); otherwise it just runs
CMD, so the Makefile's targets run the same commands alone. Recording, each phase appends
one JSON line to build/test-times/phases.jsonl (name, start, seconds, CPU seconds, exit
status, the counts read from its output) and keeps its whole output in NAME.log, so a failed
run still says which phases ran and how long each took. Phases may overlap (make -j): the
total is the wall time from the first start to the last end, not their sum.

A phase's CPU time is its process tree's (user and system, of every descendant reaped:
the guests' QEMU included); the summary adds the whole machine's busy time over the run
(/proc/stat, from `start` to `summary`). CPU time, not wall time, is what a machine with
fewer or slower cores pays: the figure to watch for CI (docs/testing.md, "Quick and full").

Standard library only: it times `make deps`, which runs before the virtual environment
exists.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DIR = ROOT / "build" / "test-times"
RECORD = DIR / "phases.jsonl"
STAT0 = "proc-stat.start"  # in DIR: the machine's busy seconds at `start`

# Closing lines of the runners `make test` uses, and what each count is called.
CARGO = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")
PYTEST = re.compile(r"^=*\s*(?P<body>(?:\d+ (?:passed|failed|skipped|errors?|xfailed|xpassed|deselected)[, ]*)+)")
VALIDATE = re.compile(r"^(\d+) cases, (\d+) passed, (\d+) failed$")


def counts(text: str) -> dict[str, int]:
    """Tests counted in a phase's output: cargo's per-binary lines summed, pytest's summary
    line (the last one), `vsim validate`'s cases."""
    out: dict[str, int] = {}

    def add(key: str, n: int) -> None:
        out[key] = out.get(key, 0) + n

    pytest_line: dict[str, int] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if m := CARGO.match(line):
            add("passed", int(m[1]))
            add("failed", int(m[2]))
            add("ignored", int(m[3]))
        elif (m := PYTEST.match(line)) and " in " in line:
            pytest_line = {}
            for n, what in re.findall(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)", m["body"]):
                key = "errors" if what.startswith("error") else what
                pytest_line[key] = pytest_line.get(key, 0) + int(n)
        elif m := VALIDATE.match(line):
            add("cases passed", int(m[2]))
            add("cases failed", int(m[3]))
    for k, v in pytest_line.items():
        if k != "deselected":  # another phase's tests, not an outcome
            add(k, v)
    return out


def busy_s() -> float | None:
    """Seconds the machine's CPUs have been busy since boot (/proc/stat's first line: all but
    idle and iowait; guest time is already in user), or None where there is no /proc."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    ticks = [int(x) for x in fields[1:9]]  # user nice system idle iowait irq softirq steal
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def cmd_start() -> int:
    DIR.mkdir(parents=True, exist_ok=True)
    for old in [RECORD, DIR / STAT0, *DIR.glob("*.log")]:
        old.unlink(missing_ok=True)
    RECORD.write_text("")
    if (b := busy_s()) is not None:
        (DIR / STAT0).write_text(f"{b}\n")
    return 0


def cmd_run(name: str, argv: list[str], cwd: str | None) -> int:
    if not argv:
        print("phases: run needs a command after --", file=sys.stderr)
        return 2
    if not os.environ.get("VELOCES_PHASES"):
        if cwd:
            os.chdir(cwd)
        try:
            os.execvp(argv[0], argv)
        except OSError as e:
            print(f"phases: {name}: cannot run {argv[0]}: {e}", file=sys.stderr)
            return 127
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        print(f"phases: bad phase name {name!r} (letters, digits, . _ -)", file=sys.stderr)
        return 2
    DIR.mkdir(parents=True, exist_ok=True)
    log = DIR / f"{name}.log"
    t0, wall0 = time.monotonic(), time.time()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    with log.open("wb") as f:
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=cwd)
        except OSError as e:
            print(f"phases: {name}: cannot run {argv[0]}: {e}", file=sys.stderr)
            return 127
        assert proc.stdout is not None
        # Phases that run side by side (make -j) interleave their lines: each is then marked.
        mark = f"{name}| ".encode() if os.environ.get("VELOCES_PHASES_PREFIX") else b""
        for chunk in iter(lambda: proc.stdout.readline(), b""):  # type: ignore[union-attr]
            sys.stdout.buffer.write(mark + chunk)
            sys.stdout.buffer.flush()
            f.write(chunk)
        rc = proc.wait()
    seconds = time.monotonic() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    entry = {
        "phase": name,
        "start": round(wall0, 3),
        "seconds": round(seconds, 1),
        "cpu_s": round(ru.ru_utime + ru.ru_stime - ru0.ru_utime - ru0.ru_stime, 1),
        "rc": rc,
        "counts": counts(log.read_text(errors="replace")),
    }
    with RECORD.open("a") as f:
        f.write(json.dumps(entry) + "\n")
    state = "ok" if rc == 0 else f"FAILED (exit {rc})"
    print(f"phases: {name}: {state} in {seconds:.1f} s (output in {log.relative_to(ROOT)})", flush=True)
    return rc


def load() -> list[dict[str, Any]]:
    if not RECORD.exists():
        return []
    return [json.loads(line) for line in RECORD.read_text().splitlines() if line.strip()]


def fmt_s(s: float) -> str:
    m, sec = divmod(round(s), 60)
    return f"{m} min {sec:02d} s" if m else f"{sec} s"


def cmd_summary() -> int:
    phases = load()
    if not phases:
        print(f"phases: nothing recorded in {RECORD.relative_to(ROOT)}")
        return 1
    start = min(p["start"] for p in phases)
    end = max(p["start"] + p["seconds"] for p in phases)
    total = end - start
    # A phase run more than once (make's sub-makes run `deps` again; it then takes well under
    # a second) is one line: its runs summed, their count after its name.
    merged: dict[str, dict[str, Any]] = {}
    for p in phases:
        m = merged.setdefault(
            p["phase"], {"seconds": 0.0, "cpu_s": 0.0, "start": p["start"], "rc": 0, "runs": 0, "counts": {}}
        )
        m["seconds"] += p["seconds"]
        m["cpu_s"] += p.get("cpu_s", 0.0)
        m["rc"] = m["rc"] or p["rc"]
        m["runs"] += 1
        for k, v in p["counts"].items():
            m["counts"][k] = m["counts"].get(k, 0) + v
    lines = [f"{'phase':<22} {'wall':>12} {'cpu':>12} {'from':>7}  {'result':<8} tests"]
    tally: dict[str, int] = {}
    for name, m in merged.items():
        c = m["counts"]
        for k, v in c.items():
            tally[k] = tally.get(k, 0) + v
        tests = ", ".join(f"{v} {k}" for k, v in c.items() if v) or "-"
        result = "ok" if m["rc"] == 0 else f"exit {m['rc']}"
        label = name if m["runs"] == 1 else f"{name} (x{m['runs']})"
        wall, cpu, at = fmt_s(m["seconds"]), fmt_s(m["cpu_s"]), m["start"] - start
        lines.append(f"{label:<22} {wall:>12} {cpu:>12} {at:>6.0f}s  {result:<8} {tests}")
    cpu_total = sum(m["cpu_s"] for m in merged.values())
    lines.append(f"{'total (wall)':<22} {fmt_s(total):>12} {fmt_s(cpu_total):>12}")
    b0, b1 = ((DIR / STAT0).read_text().strip() if (DIR / STAT0).exists() else None), busy_s()
    if b0 and b1 is not None:
        lines.append(f"machine busy {fmt_s(b1 - float(b0))} of CPU time over the run ({os.cpu_count()} CPUs)")
    lines.append("tests: " + (", ".join(f"{v} {k}" for k, v in sorted(tally.items()) if v) or "none counted"))
    text = "\n".join(lines)
    print("== make test, per phase (build/test-times/)\n" + text)
    (DIR / "summary.txt").write_text(text + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run"]:
        # run NAME [-C DIR] -- CMD...: everything after -- is the command, untouched.
        head, cmd = (argv[1 : argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv[1:], [])
        r = argparse.ArgumentParser(prog="phases.py run")
        r.add_argument("name")
        r.add_argument("-C", dest="cwd", metavar="DIR", help="run the command in DIR")
        ra = r.parse_args(head)
        return cmd_run(ra.name, cmd, ra.cwd)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("start", help="begin a new record")
    sub.add_parser("run", help="NAME [-C DIR] -- CMD [ARG...]: run one phase")
    sub.add_parser("summary", help="print the phases, the total and the tests counted (the budget is .ci/run's)")
    args = ap.parse_args(argv)
    if args.cmd == "start":
        return cmd_start()
    return cmd_summary()


if __name__ == "__main__":
    sys.exit(main())
