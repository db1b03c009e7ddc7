"""One colour per scheduler, the same in every report, lab or simulator.

Every colour is saturated: the browser test tells a drawn plot from an empty frame by
its coloured pixels (axes, grid and text are grey). The simulator's schedulers share the
colour of their kernel counterpart (noop = none,
deadline = mq-deadline, cfq = bfq: both proportional-share), so a lab report and a
simulator report of the same question read the same way. A variant (NAME:TUNABLE=VALUE)
is a darker or lighter shade of its scheduler's colour, drawn dashed.
"""

from __future__ import annotations

from matplotlib.colors import to_hex, to_rgb

BASE = {
    "none": "#e6a100",
    "noop": "#e6a100",
    "mq-deadline": "#1f77b4",
    "deadline": "#1f77b4",
    "kyber": "#2ca02c",
    "bfq": "#9467bd",
    "cfq": "#9467bd",
    "veloces": "#d62728",
    "vfifo": "#8c564b",
}
# For schedulers without a colour of their own, in the order they first appear.
EXTRA = ("#17becf", "#e377c2", "#393b79", "#637939", "#843c39", "#7b4173", "#ff7f0e", "#bcbd22")
# How far a variant's shade moves toward black (negative: toward white), by its index
# among the variants of the same scheduler.
SHADES = (0.4, -0.4, 0.25, -0.25, 0.55, -0.55, 0.15)


def _mix(colour: str, amount: float) -> str:
    r, g, b = to_rgb(colour)
    if amount >= 0:
        return to_hex((r * (1 - amount), g * (1 - amount), b * (1 - amount)))
    a = -amount
    return to_hex((r + (1 - r) * a, g + (1 - g) * a, b + (1 - b) * a))


def base_name(label: str) -> str:
    return label.split(":", 1)[0]


def colours(labels: list[str]) -> dict[str, str]:
    """Label -> colour for the labels of one report."""
    out: dict[str, str] = {}
    extra = iter(EXTRA * (1 + len(labels) // len(EXTRA)))
    base_of: dict[str, str] = {}
    for label in labels:
        b = base_name(label)
        if b not in base_of:
            base_of[b] = BASE.get(b) or next(extra)
    variants: dict[str, int] = {}
    for label in labels:
        b = base_name(label)
        if label == b:
            out[label] = base_of[b]
            continue
        k = variants.get(b, 0)
        variants[b] = k + 1
        out[label] = _mix(base_of[b], SHADES[k % len(SHADES)]) if k < len(SHADES) else next(extra)
    return out


def dashed(label: str) -> bool:
    return ":" in label
