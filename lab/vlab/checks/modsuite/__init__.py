"""The veloces module's behaviour suite, run as root inside a lab guest.

    ./vlab run --kernel 6.1 --memory 3G -- python -m vlab.checks.modsuite [CHECK...]

Each check records {"ok", "detail", "figures"} in $VLAB_OUT/modsuite.json; the host's
lab/tests/test_veloces.py turns each record into one test. A check that raises is
recorded as failed with the exception, and the suite moves on.

One file per check (`vlab/checks/modsuite/NAME.py`: its `requires()` — why a kernel cannot
run it, e.g. a null_blk built without fault injection, recorded as skipped with that reason —
its `check(result)`, and the helpers only it uses), what several share in `common.py`, and
here the registry (`CHECKS`, one line per check), the checks whose verdicts are times
(`TIMED`) and the runner.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Protocol

from vlab.checks.modsuite import (
    bundling,
    deep_device,
    errors,
    expiry_timer,
    hotplug,
    liveness,
    load,
    no_spin,
    own_writes,
    read_preference,
    requeue,
    retune_expiry,
    retune_spanning,
    stress,
    switching,
    sync_not_delayed,
    tag_reserve,
    tunables,
    verify,
    waiters,
    zoned,
)
from vlab.checks.modsuite.common import NotJudged, Result, dmesg_problems, uptime


class Check(Protocol):
    """A check's file: `requires()` says why this kernel cannot run it (None: it can), and
    `check(result)` runs it, raising on failure and filling in the result's detail and figures."""

    def requires(self) -> str | None: ...

    def check(self, r: Result) -> None: ...


CHECKS: dict[str, Check] = {
    "load": load,
    "tunables": tunables,
    "verify": verify,
    "switching": switching,
    "read_preference": read_preference,
    "bundling": bundling,
    "sync_not_delayed": sync_not_delayed,
    "liveness": liveness,
    "errors": errors,
    "hotplug": hotplug,
    "waiters": waiters,
    "no_spin": no_spin,
    "own_writes": own_writes,
    "retune_spanning": retune_spanning,
    "zoned": zoned,
    "requeue": requeue,
    "expiry_timer": expiry_timer,
    "retune_expiry": retune_expiry,
    "deep_device": deep_device,
    "tag_reserve": tag_reserve,
    "stress": stress,
}


# The checks whose verdicts are times (a latency, an interval, a count per interval): `make
# test` boots them on their own, never beside another guest; the rest share the machine.
TIMED = ("read_preference", "bundling", "sync_not_delayed", "liveness", "no_spin", "expiry_timer", "own_writes")


# The shared boot's possible CPUs (nr_cpu_ids; two of them present): deep_device's null_blk
# needs seven submission queues, and null_blk allows one per possible CPU.
POSSIBLE_CPUS = 8


def main(names: list[str]) -> int:
    out = Path(os.environ.get("VLAB_OUT", "/tmp"))
    results: dict[str, Result] = {}
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        print(f"modsuite: unknown check(s) {', '.join(unknown)}; known: {', '.join(CHECKS)}")
        return 2
    t_start = uptime()
    for name in names or list(CHECKS):
        r: Result = {"ok": False, "detail": "", "figures": {}}
        t0 = time.monotonic()
        try:
            missing = CHECKS[name].requires()
            if missing:  # the host reports it as skipped, with this reason (test_veloces.py)
                r["detail"] = f"skipped: {missing}"
                r["figures"]["skipped"] = True
            else:
                CHECKS[name].check(r)
            r["ok"] = True
        except NotJudged as e:  # too loaded a host to judge: a skip, with the measured reason
            r["detail"] = f"not judged: host loaded: {e}"
            r["figures"]["skipped"] = True
            r["ok"] = True
        except Exception as e:  # a failed check is recorded, and the suite goes on
            r["detail"] = f"{type(e).__name__}: {e}"
        r["seconds"] = round(time.monotonic() - t0, 1)
        results[name] = r
        print(f"modsuite: {'ok  ' if r['ok'] else 'FAIL'} {name} ({r['seconds']} s): {r['detail']}", flush=True)
        (out / "modsuite.json").write_text(json.dumps(results, indent=2) + "\n")
    problems = dmesg_problems(t_start)
    results["kernel_log"] = {"ok": not problems, "detail": " | ".join(problems[:5]), "figures": {}}
    (out / "modsuite.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"modsuite: kernel log {'clean' if not problems else 'has problems: ' + results['kernel_log']['detail']}")
    return 0 if all(v["ok"] for v in results.values()) else 1
