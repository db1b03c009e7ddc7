"""The kinds of results a report is made from: one module each (`detect(folder)`,
`load(folder) -> Report`), tried in this order. Adding a kind (a reproduction, say) is one
new module plus one line here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from vlab.report import (
    lab_compare,
    lab_fidelity,
    lab_repro,
    lab_trace,
    vsim_compare,
    vsim_matrix,
    vsim_run,
    vsim_sweep,
    vsim_validate,
)
from vlab.report.model import Report

Kind = tuple[str, Callable[[Path], bool], Callable[[Path], Report]]

KINDS: list[Kind] = [
    (lab_fidelity.KIND, lab_fidelity.detect, lab_fidelity.load),
    (vsim_matrix.KIND, vsim_matrix.detect, vsim_matrix.load),
    (lab_repro.KIND, lab_repro.detect, lab_repro.load),
    (vsim_validate.KIND, vsim_validate.detect, vsim_validate.load),
    (vsim_run.KIND, vsim_run.detect, vsim_run.load),
    (vsim_compare.KIND, vsim_compare.detect, vsim_compare.load),
    (lab_compare.KIND, lab_compare.detect, lab_compare.load),
    (lab_trace.KIND, lab_trace.detect, lab_trace.load),
    (vsim_sweep.KIND, vsim_sweep.detect, vsim_sweep.load),
]
