"""The module's fixes for races that no boot reproduces on demand, held as properties of its
source (kernel/veloces-iosched.c): the third review's N1 (a timer not re-armed while its
callback ran), N3 (anticipation's missed wake-up) and N8 (the writeback probe registered
with the queue frozen). Each window is a few instructions wide; under TCG a guest would
have to hit it by chance, so these checks read the code for the ordering that closes it
and fail on the code before each fix. What they cannot see (a new path with the same
race) is the review's and the debug kernel's (make test-debug: lockdep) to find.
"""

import re

from conftest import REPO

SOURCE = (REPO / "kernel" / "veloces-iosched.c").read_text()


def function(name: str) -> str:
    """The body of C function `name` (from its definition to the closing brace at column 0)."""
    m = re.search(rf"^[^\n;]*\b{re.escape(name)}\(([^;{{]*)\)\n{{\n(.*?)^}}\n", SOURCE, re.M | re.S)
    assert m, f"{name}() not found in veloces-iosched.c"
    return m.group(2)


def test_n1_timer_rearmed_unless_pending() -> None:
    """vel_arm_timer skips a re-arm only while the timer is queued: hrtimer_active() is also
    true while vel_timer_fn runs, when a dispatch that saw the bundle not yet due must arm it
    again, or the callback's queue run finds nothing and the bundle stays held."""
    body = function("vel_arm_timer")
    skip = [line for line in body.splitlines() if "timer_when" in line and "if (" in line]
    assert skip, "vel_arm_timer no longer compares timer_when"
    assert all("hrtimer_is_queued(" in line for line in skip), skip
    assert "hrtimer_active(" not in body


def test_n1_dispatch_reads_the_clock_under_the_lock() -> None:
    """vel_dispatch_request takes `now` after vd->lock: a timer callback or an insert that
    came while it waited for the lock is not in its future."""
    body = function("vel_dispatch_request")
    lock = body.index("spin_lock(&vd->lock)")
    clock = body.index("ktime_get_ns()")
    assert clock > lock, "the dispatch clock is read before vd->lock is taken"


def test_n3_anticipation_flag_up_before_reads_counted() -> None:
    """vel_anticipate raises antic_waits, then a full barrier, before it reads the reads on
    the device: a read completing in between sees the flag and runs the queue (pairs with
    vel_finish_request's atomic_dec_return before it reads the flag)."""
    body = function("vel_anticipate")
    up = body.index("WRITE_ONCE(vd->antic_waits, true)")
    barrier = body.index("smp_mb()")
    first_count = body.index("atomic_read(&vd->inflight[")
    assert up < barrier < first_count
    finish = function("vel_finish_request")
    assert finish.index("atomic_dec_return(") < finish.index("READ_ONCE(vd->antic_waits)")


def test_n8_probe_not_registered_with_the_queue_frozen() -> None:
    """The writeback probe's registration (static_key_enable under cpus_read_lock) and its
    unregistration happen at module load and unload, never in init_sched/exit_sched, which
    run with the queue frozen."""
    for frozen in ("vel_init_sched", "vel_exit_sched"):
        body = function(frozen)
        for call in ("vel_waiters_", "tracepoint_probe_", "tracepoint_synchronize_unregister"):
            assert call not in body, f"{frozen} calls {call}*"
    assert "vel_waiters_register()" in function("veloces_init")
    assert "vel_waiters_unregister()" in function("veloces_exit")
