"""The verdict rule from Python: the same grades as the simulator's reproductions give."""

import math

import pytest
import vsim
from vsim import verdict


def test_grades_and_criteria_come_from_the_rule() -> None:
    assert verdict.GRADES == ("holds", "partly", "does not hold", "inconclusive",
                              "not reproducible from the description", "not judged")  # fmt: skip
    saving = verdict.range_(28, 52, null=0)
    assert verdict.grade(saving, (40.0, 35.0, 45.0)) == verdict.HOLDS
    assert verdict.grade(saving, (1.4, 1.4, 1.4)) == verdict.FAILS  # the right sign, wholly short of the range
    assert verdict.grade(saving, (16.0, 12.0, 20.0)) == verdict.PARTLY  # the sign right, overlapping the range
    assert verdict.grade(saving, (-3.0, -4.0, -2.0)) == verdict.FAILS
    assert verdict.grade(saving, None) == verdict.NOT_JUDGED
    assert "widened to 18.000..62.000" in verdict.criterion(saving)
    # No interval (too few repetitions): unbounded, inconclusive.
    assert verdict.grade(verdict.above(1.0), (1.3, -math.inf, math.inf)) == verdict.INCONCLUSIVE
    assert verdict.grade(verdict.below(1.0), (0.8, 0.7, 0.9)) == verdict.HOLDS
    assert verdict.grade_choice(verdict.choice("TeraSort"), "Sort") == verdict.FAILS
    assert verdict.grade(verdict.not_reproducible("no trace given"), None) == verdict.NOT_REPRODUCIBLE


def test_parts_combine_and_bad_input_is_a_clear_error() -> None:
    assert verdict.combine([verdict.HOLDS, verdict.FAILS]) == verdict.PARTLY
    assert verdict.combine([verdict.PARTLY, verdict.PARTLY]) == verdict.FAILS  # no part holds outright
    assert "never counts as holding" in verdict.combine_criterion()
    assert verdict.combine([verdict.HOLDS, verdict.HOLDS, verdict.FAILS], most=True) == verdict.HOLDS
    assert "more than half" in verdict.combine_criterion(most=True)
    with pytest.raises(vsim.ConfigError, match="unknown grade 'great'"):
        verdict.combine(["great"])
    with pytest.raises(vsim.ConfigError, match="bad claim"):
        verdict.grade({"kind": "vibes"}, (1.0, 1.0, 1.0))
