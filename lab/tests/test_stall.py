"""The stall probe beside the module suite's timed checks and the conformance scenarios
(vlab.checks.stall), on the host: what it counts as time lost, and a real stop of the probe
seen as one (no boot)."""

import os
import signal
import time

import pytest

from vlab.checks import stall

# (wake-up time, lateness): a stall of 30 ms ending at 1.030 s, one of 5 ms ending at 1.100 s,
# and wake-ups late by less than STALL_S, which are the guest's own costs.
SAMPLES = [(1.0, 0.0004), (1.030, 0.030), (1.032, 0.0002), (1.100, 0.005), (1.2, 0.0009)]


def test_only_wake_ups_later_than_a_stall_count_and_only_inside_the_window() -> None:
    assert stall.lost_s(SAMPLES, 0.0, 2.0) == pytest.approx(0.035)
    assert stall.lost_s(SAMPLES, 1.010, 1.096) == pytest.approx(0.020 + 0.001)
    assert stall.lost_s(SAMPLES, 1.2, 2.0) == 0.0
    assert stall.most_lost_s(SAMPLES, 0.010) == pytest.approx(0.010)
    assert stall.most_lost_s(SAMPLES, 0.1) == pytest.approx(0.035)
    assert stall.most_lost_s([], 1.0) == 0.0
    fig = stall.summary(SAMPLES, 1.0, 1.2)
    assert fig["lost_ms"] == 35.0 and fig["stalls"] == 2 and fig["worst_ms"] == 30.0 and fig["samples"] == 5


def test_the_probe_sees_a_stop_of_its_own_as_a_stall() -> None:
    with stall.StallProbe() as probe:
        time.sleep(0.05)
        t0 = time.monotonic()
        os.kill(probe.pid, signal.SIGSTOP)  # as the host stopping the guest's one thread
        time.sleep(0.2)
        os.kill(probe.pid, signal.SIGCONT)
        stopped_s = time.monotonic() - t0
        time.sleep(0.05)
        t1 = time.monotonic()
        samples = probe.samples(t0, t1)
    assert probe.pid == 0
    assert len(samples) > 10
    # the stop, less the sleep it fell in at most, plus the child's own wake-up at most
    assert stopped_s - 2 * stall.PERIOD_S <= stall.lost_s(samples, t0, t1) <= stopped_s + 0.05
