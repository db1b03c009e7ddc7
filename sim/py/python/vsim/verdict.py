"""The one verdict rule of every reproduction (the simulator's `vsim repro` and the lab's
`vlab repro`), from Python: the rule itself is the simulator's (`vsim::verdict`, sim/src/verdict.rs;
docs/notebooks/reproductions.md, "How a verdict is decided"); this module builds claims and asks it.

    from vsim import verdict
    claim = verdict.range_(28, 52, null=0)      # "28-52 % less"
    verdict.grade(claim, (1.4, 1.4, 1.4))       # 'does not hold': the right sign, wholly short of the range
    verdict.criterion(claim)                    # the rule in words, printed beside the verdict

Our figure is `(value, low, high)`: in the lab a 95 % Student t interval, in the simulator
the same t interval over generated traces' seeds, a point where there is no noise; None where it is missing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from vsim import _vsim

Claim = dict[str, Any]
Ours = tuple[float, float, float]

GRADES: tuple[str, ...] = tuple(_vsim.verdict_grades())
HOLDS, PARTLY, FAILS, INCONCLUSIVE, NOT_REPRODUCIBLE, NOT_JUDGED = GRADES


def above(bound: float) -> Claim:
    return {"kind": "direction", "bound": float(bound), "above": True}


def below(bound: float) -> Claim:
    return {"kind": "direction", "bound": float(bound), "above": False}


def range_(low: float, high: float, null: float, tolerance: float | None = None) -> Claim:
    """Ours in [low, high], on the far side of `null` (the no-effect value); `tolerance`
    widens it on each side (None: the rule's share of the midpoint's distance from null)."""
    return {"kind": "range", "low": float(low), "high": float(high), "null": float(null), "tolerance": tolerance}


def choice(expected: str) -> Claim:
    return {"kind": "choice", "expected": expected}


def not_reproducible(why: str) -> Claim:
    return {"kind": "not_reproducible", "why": why}


def grade(claim: Claim, ours: Ours | None) -> str:
    return _vsim.verdict_grade(json.dumps(claim), ours)


def grade_choice(claim: Claim, ours: str | None) -> str:
    return _vsim.verdict_grade_choice(json.dumps(claim), ours)


def criterion(claim: Claim) -> str:
    return _vsim.verdict_criterion(json.dumps(claim))


def combine(grades: Sequence[str], most: bool = False) -> str:
    """A claim of parts: every part must hold (or, `most`, more than half)."""
    return _vsim.verdict_combine(list(grades), most)


def combine_criterion(most: bool = False) -> str:
    return _vsim.verdict_combine_criterion(most)
