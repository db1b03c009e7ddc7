"""The veloces module's behaviour suite, run as root inside a lab guest.

    ./vlab run --kernel 6.1 --memory 3G -- python -m vlab.modsuite [CHECK...]

Each check records {"ok", "detail", "figures"} in $VLAB_OUT/modsuite.json; the host's
lab/tests/test_veloces.py turns each record into one test. A check that raises is
recorded as failed with the exception, and the suite moves on.

One file per check (`vlab/modsuite/NAME.py`, its `check_NAME` and the helpers only it uses),
what several share in `common.py`, and here the registry (`CHECKS`, one line per check), the
checks whose verdicts are times (`TIMED`) and the runner.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from vlab.modsuite.bundling import check_bundling
from vlab.modsuite.common import Result, dmesg_problems, uptime
from vlab.modsuite.errors import check_errors
from vlab.modsuite.hotplug import check_hotplug
from vlab.modsuite.liveness import check_liveness
from vlab.modsuite.load import check_load
from vlab.modsuite.no_spin import check_no_spin
from vlab.modsuite.read_preference import check_read_preference
from vlab.modsuite.requeue import check_requeue
from vlab.modsuite.retune_spanning import check_retune_spanning
from vlab.modsuite.stress import check_stress
from vlab.modsuite.switching import check_switching
from vlab.modsuite.sync_not_delayed import check_sync_not_delayed
from vlab.modsuite.tunables import check_tunables
from vlab.modsuite.verify import check_verify
from vlab.modsuite.waiters import check_waiters
from vlab.modsuite.zoned import check_zoned

CHECKS: dict[str, Callable[[Result], None]] = {
    "load": check_load,
    "tunables": check_tunables,
    "verify": check_verify,
    "switching": check_switching,
    "read_preference": check_read_preference,
    "bundling": check_bundling,
    "sync_not_delayed": check_sync_not_delayed,
    "liveness": check_liveness,
    "errors": check_errors,
    "hotplug": check_hotplug,
    "waiters": check_waiters,
    "no_spin": check_no_spin,
    "retune_spanning": check_retune_spanning,
    "zoned": check_zoned,
    "requeue": check_requeue,
    "stress": check_stress,
}


# The checks whose verdicts are times (a latency, an interval, a count per interval): `make
# test` boots them on their own, never beside another guest; the rest share the machine.
TIMED = ("read_preference", "bundling", "sync_not_delayed", "liveness", "no_spin")


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
            CHECKS[name](r)
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
