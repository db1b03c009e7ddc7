"""The guest's own stalls, measured beside a timed check (docs/testing.md, "Timed checks on a
loaded host").

A guest runs under single-threaded TCG: when the host gives its one QEMU thread less than a
core (other work on the machine), the whole guest stops for a while, and every time it
measures (a request's issue, a latency, an interval) is that much later. The check cannot
tell such a stop from the module being slow; this probe can. A child process sleeps
PERIOD_S at a time, again and again, on the guest's last CPU at the lowest real-time
priority, and records how late each wake-up was. A wake-up more than STALL_S late is a
stall: the guest (or that CPU) did not run for that long, which no policy under test causes
(the probe preempts every normal task). A check compares what it missed by with the time
its window lost to stalls: a miss the stalls can explain is not judged (a skip that gives
both figures), one they cannot is a failure.

A stall the probe sleeps through (one that ends before its wake-up is due) is not seen, so
the time lost is a lower bound: it excuses less than the host took, never more.
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import signal
import struct
import time
from collections.abc import Iterable, Iterator
from typing import Any

PERIOD_S = 0.002  # each sleep of the probe
STALL_S = 0.001  # a wake-up later than this is a stall (the guest's own wake-up costs stay below)
_HEAD = struct.Struct("Q")  # samples written so far
_SAMPLE = struct.Struct("dd")  # (wake-up time, lateness), seconds of CLOCK_MONOTONIC
PR_SET_PDEATHSIG = 1

Sample = tuple[float, float]


class StallProbe:
    """The sleeping child, started and stopped with the context manager; `samples(t0, t1)`
    reads the wake-ups whose lateness overlaps [t0, t1] (time.monotonic() seconds). The last
    `capacity` samples are kept (65,536: 2 minutes at PERIOD_S)."""

    def __init__(self, period_s: float = PERIOD_S, capacity: int = 1 << 16) -> None:
        self.period_s = period_s
        self.capacity = capacity
        self.buf = mmap.mmap(-1, _HEAD.size + capacity * _SAMPLE.size)  # shared with the child
        self.pid = 0

    def __enter__(self) -> StallProbe:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 0
            try:
                self._run()
            except BaseException:
                code = 1
            os._exit(code)
        self.pid = pid

    def _run(self) -> None:
        signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        with contextlib.suppress(OSError):  # the last CPU, whatever the parent is pinned to
            os.sched_setaffinity(0, {(os.cpu_count() or 1) - 1})
        with contextlib.suppress(OSError):  # wakes ahead of every normal task, behind interrupts' threads
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        n = 0
        period, cap, buf = self.period_s, self.capacity, self.buf
        while True:
            due = time.monotonic() + period
            time.sleep(period)
            now = time.monotonic()
            _SAMPLE.pack_into(buf, _HEAD.size + (n % cap) * _SAMPLE.size, now, max(0.0, now - due))
            n += 1
            _HEAD.pack_into(buf, 0, n)

    def stop(self) -> None:
        if self.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self.pid = 0

    def samples(self, t0: float, t1: float) -> list[Sample]:
        (n,) = _HEAD.unpack_from(self.buf, 0)
        out = []
        for i in range(n - 1, max(0, n - self.capacity) - 1, -1):  # newest first, back to t0
            t, late = _SAMPLE.unpack_from(self.buf, _HEAD.size + (i % self.capacity) * _SAMPLE.size)
            if t < t0:
                break
            if t - late - self.period_s <= t1:
                out.append((t, late))
        return out[::-1]


def stalls(samples: Iterable[Sample], stall_s: float = STALL_S) -> Iterator[tuple[float, float]]:
    """Each stall as the interval it lost: (start, end) = (wake-up - lateness, wake-up)."""
    for t, late in samples:
        if late > stall_s:
            yield t - late, t


def lost_s(samples: Iterable[Sample], t0: float, t1: float, stall_s: float = STALL_S) -> float:
    """Seconds of [t0, t1] the guest lost to stalls."""
    return sum(max(0.0, min(b, t1) - max(a, t0)) for a, b in stalls(samples, stall_s))


def most_lost_s(samples: Iterable[Sample], length_s: float, stall_s: float = STALL_S) -> float:
    """The most seconds lost to stalls in any window of `length_s`: what stalls can have added
    to one latency of that length when only the worst latency of a run is known."""
    starts = sorted(a for a, _ in stalls(samples, stall_s))
    return max((lost_s(samples, a, a + length_s, stall_s) for a in starts), default=0.0)


def summary(samples: list[Sample], t0: float, t1: float, stall_s: float = STALL_S) -> dict[str, Any]:
    """A window's figures, in real milliseconds: what a check records beside its own."""
    lates = sorted(late for _, late in samples)
    return {
        "window_ms": round((t1 - t0) * 1e3, 1),
        "lost_ms": round(lost_s(samples, t0, t1, stall_s) * 1e3, 1),
        "stalls": sum(1 for _ in stalls(samples, stall_s)),
        "worst_ms": round(lates[-1] * 1e3, 1) if lates else 0.0,
        "late_p50_ms": round(lates[len(lates) // 2] * 1e3, 2) if lates else 0.0,
        "samples": len(lates),
    }
