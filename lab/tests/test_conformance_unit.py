"""Pure parts of the kernel conformance runner (no boot)."""

import pytest

from vlab.checks.conformance import IOPRIO, ISSUE_RE, MODULE, map_ids, scaled_tunables
from vlab.schedulers import declared_tunables

REQS = [
    {"t": 0, "op": "W", "sector": 1280, "sectors": 8, "id": "W1"},
    {"t": 1, "op": "WS", "sector": 1288, "sectors": 8, "id": "WS2"},
    {"t": 2, "op": "R", "sector": 1280, "sectors": 8, "id": "R1"},
]


def test_map_ids_by_direction_and_range() -> None:
    assert map_ids(REQS, "W", 1280, 16) == ["W1", "WS2"]
    assert map_ids(REQS, "WS", 1288, 8) == ["WS2"]
    assert map_ids(REQS, "FWS", 1288, 8) == ["WS2"]
    assert map_ids(REQS, "R", 1280, 8) == ["R1"]
    assert map_ids(REQS, "R", 4096, 8) == ["?R:4096+8"]


def test_scaled_tunables_scale_only_times_and_set_every_tunable() -> None:
    t = scaled_tunables({"read_expire": 2, "bundle_expire_us": 3000, "fifo_batch": 4}, 20)
    declared = declared_tunables(MODULE)
    assert list(t) == list(declared) and "hz" not in t
    assert t["read_expire"] == 40 and t["bundle_expire_us"] == 60000 and t["fifo_batch"] == 4
    assert t["write_expire"] == 1000 * 20 and t["prio_aging_expire"] == 10000 * 20
    assert t["write_depth"] == 65536 and t["async_depth"] == 0
    with pytest.raises(ValueError, match="unknown tunable"):
        scaled_tunables({"bogus": 1}, 20)


def test_issue_line_parses_on_both_kernels_formats() -> None:
    line61 = "  python3-812  [001] ..... 21.186789: block_rq_issue: 251,9 W 4096 () 1280 + 8 [python3]"
    # 6.10 and later add the I/O priority after the sectors
    line612 = "  kworker/0:1H-53 [000] d..1. 30.000001: block_rq_issue: 251,9 WS 4096 () 1288 + 8 none,0,0 [kw]"
    for line, rwbs in ((line61, "W"), (line612, "WS")):
        m = ISSUE_RE.search(line)
        assert m is not None
        assert m.group(2) == "251,9" and m.group(3) == rwbs


def test_scaled_defaults_stay_within_the_modules_ranges_at_the_debug_kernels_scale() -> None:
    # The module's maxima (kernel/veloces-tunables.h); the debug kernel runs the scenarios
    # at scale 100.
    declared = declared_tunables(MODULE)
    assert {k for k, d in declared.items() if d.is_time} == {
        "read_expire", "write_expire", "bundle_expire_us", "write_backlog_us", "anticipate_us", "prio_aging_expire"
    }  # fmt: skip
    for scale in (20, 60, 100):
        t = scaled_tunables({}, scale)
        for k, d in declared.items():
            assert d.min <= t[k] <= d.max, (scale, k, t[k])


def test_prio_values_are_ioprio_prio_value_of_class_and_level_4() -> None:
    assert IOPRIO == {"RT": (1 << 13) | 4, "BE": (2 << 13) | 4, "IDLE": (3 << 13) | 4}
