"""dilation=auto's closed loop (vlab.machine.guest): the busy share over fio's measured window,
and the search for the lowest dilation that keeps the device busy (no boot)."""

import math

import pytest

from vlab import verdict
from vlab.machine import guest


def test_a_groups_window_is_its_forced_runtime_not_the_sum_of_its_jobs() -> None:
    doc = {"global options": {"runtime": "1.5s"}, "jobs": [{"job_runtime": 11993}]}
    assert guest.measured_s(doc) == 1.5  # five jobs of 2.4 s each under group reporting: 12 s
    assert guest.measured_s({"jobs": [{"job_runtime": 2500}]}) == 2.5


def test_the_busy_share_counts_only_the_counters_rewritten_inside_the_window() -> None:
    rows = [
        {"time_s": -0.4, "model_s": 1.00, "busy_s": 0.70},  # fio starting: the device idle
        {"time_s": 0.1, "model_s": 1.10, "busy_s": 0.70},
        {"time_s": 0.6, "model_s": 1.20, "busy_s": 0.79},
        {"time_s": 1.1, "model_s": 1.30, "busy_s": 0.88},
        {"time_s": 1.2, "in_flight": 1.0},  # no counters rewritten: left out
    ]
    w = guest.window_busy(rows)
    assert w is not None and math.isclose(w["window_busy_s"] / w["window_model_s"], 0.9)
    assert guest.window_busy(rows[:2]) is None  # one rewrite inside: too short to say


def _search(start: float, busy: object) -> list[float]:
    tried: dict[float, float] = {}
    seq, d = [], start
    for _ in range(12):
        tried[d] = busy(d)  # type: ignore[operator]
        seq.append(d)
        nxt = guest.next_dilation(d, tried)
        if nxt is None:
            return seq
        d = nxt
    raise AssertionError(f"no end: {seq}")


@pytest.mark.parametrize("ratio", [0.01, 0.05, 0.5, 0.8, 5.0])
def test_the_search_ends_at_a_busy_dilation_near_the_lowest(ratio: float) -> None:
    """The device busy D*s / (D*s + g), the guest's gap g a constant wall time: the search ends,
    and the lowest dilation it found busy enough is within 2x of the lowest that is."""

    def busy(d: float) -> float:
        return min(d * ratio / (d * ratio + 1), 0.9999)

    seq = _search(25.0, busy)
    ok = [d for d in seq if busy(d) >= guest.LOOP_ACCEPT >= verdict.BUSY_MIN]
    lowest = max(1.0, guest.LOOP_ACCEPT / (1 - guest.LOOP_ACCEPT) / ratio)
    assert ok, seq
    assert lowest <= min(ok) <= 2 * lowest + 1, (seq, lowest)
    assert len(seq) <= 6


def test_a_device_busy_at_every_dilation_goes_down_to_one() -> None:
    assert _search(25.0, lambda d: 0.99)[-1] == 1.0
