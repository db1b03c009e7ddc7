"""Seed 001 (fs-and-scheduler-combination-for-ssd.txt): filesystem x scheduler pairs on
SSDs ranked by the aggregative indicator AI = performance / energy under filebench's
varmail, fileserver and webserver (its Table 1). The seed's text keeps its claims, not its
figures (the plots did not survive the conversion), so the verdicts judge the claims."""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from typing import Any

from vsim.verdict import choice, grade_choice

from vlab.repro import core, stats
from vlab.repro.core import (
    HOLDS,
    NOT_JUDGED,
    Analysis,
    Plan,
    Ranking,
    TableOut,
    Verdict,
    number,
    text,
)
from vlab.repro.run import Seed
from vlab.stats import Metric

# Seconds of each full-matrix run's measured phase (wall). On the SATA model in GC steady
# state at the dilation that keeps it busy, a 10-s phase held few operations (ext4 varmail:
# 8 at dilation 150, ext2: 47-59 at 210; 2026-11-28) and cost 54-101 s of wall time, most of
# it the device working off what the 16 threads had in flight when the phase ended: three
# times the phase buys three times the operations for ~1.3 times the run's cost.
FULL_RUNTIME_S = 30


def plan(quick: bool) -> Plan:
    if quick:
        return Plan.quick_variant("seed001", "ssd-fresh", [core.FILEBENCH["varmail"]])
    return Plan.full_matrix("seed001", ["sata-steady"], list(core.FILESYSTEMS), list(core.FILEBENCH.values()),
                            runtime_s=FULL_RUNTIME_S)  # fmt: skip


# The paper's SSD-I (Table 2): 2.6 W working, 0.15 W idle; SSD-S 4.1 / 1.5 W; SSD-K 5.9 / 3.3 W.
# A run's mean power under such a split is idle + (work - idle) x the device's busy share.
POWER_SPLITS: dict[str, tuple[float, float]] = {
    "SSD-I (paper)": (2.6, 0.15),
    "SSD-I, idle 0.05 W": (2.6, 0.05),
    "SSD-I, idle 1.0 W": (2.6, 1.0),
    "SSD-S (paper)": (4.1, 1.5),
    "SSD-K (paper)": (5.9, 3.3),
}
PAPER_SPLIT = "SSD-I (paper)"

# The claims, quoted from the seed (its "Current issue" and "Conclusions").
CLAIM_DEPEND = (
    "SSD performance and energy consumption largely depend on the combination of a file system and an I/O scheduler"
)
CLAIM_VARMAIL = (
    "SSDs coupled with the extended file systems + any I/O scheduler provide better AI than the SSD counterparts "
    "under varmail"
)
CLAIM_FILESERVER = "SSDs based on NILFS2 and any I/O scheduler offer high AI under fileserver"
CLAIM_EXT_PERF = (
    "SSD-I based on the extended file systems delivers high performance at low energy efficiency in most cases"
)
CLAIM_NILFS = "NILFS2-based SSD-I performs with lower energy consumption and smoother changes in energy consumption"

EXT = ("ext2", "ext3", "ext4")  # the paper's "extended file systems"
# "Largely depend": the best pair at least this many times the worst (ours: the paper gives
# no figure), its interval wholly above it.
MATTERS = 1.10


def split_runs(fig: dict[str, Any], split: tuple[float, float]) -> tuple[dict[int, float], dict[int, float]]:
    """One pair's mean power and AI per repetition under a (work, idle) power split, from
    each run's busy share."""
    work, idle = split
    busy = {int(k): v for k, v in ((fig.get("by_rep") or {}).get("busy") or {}).items()}
    perf = {int(k): v for k, v in ((fig.get("by_rep") or {}).get("perf") or {}).items()}
    power = {k: idle + (work - idle) * b for k, b in busy.items()}
    ai = {k: perf[k] / w for k, w in power.items() if k in perf and w > 0}
    return power, ai


class Pairs:
    """A device's pairs (fs, scheduler) -> per-repetition figures, for one workload, under one
    power split (or the device model's own energy account: split None), with the dilation each
    filesystem's cell ran at.

    What rests on the dilation (issue 80). Each filesystem is its own cell, calibrated to its own
    dilation (`cells[].dilation`). A ratio between two pairs of one cell (two schedulers) does not
    rest on it; one between two filesystems does, in all three figures: IOPS in model time (at a
    lower dilation the emulated guest's own time per operation is a larger share of the device's),
    mean power (a linear function of the busy share, `split_runs`, which the dilation the
    calibration chose sets) and AI (their quotient). So a ratio between filesystems is graded only
    where their cells ran at one dilation (`apart`), and is otherwise a part not judged, with why."""

    def __init__(self, cells: list[dict[str, Any]], device: str, workload: str, split: tuple[float, float] | None):
        self.values: dict[tuple[str, str], dict[str, list[float]]] = {}
        self.dilation: dict[str, float | None] = {}  # by filesystem: its cell's
        self.stalled: set[str] = set()  # filesystems whose cell's runs did not get through the flow
        self.guest_bound: set[str] = set()  # filesystems whose cell's device the guest kept below 85 % busy
        self.short: set[str] = set()  # filesystems whose cell's runs were too short (core.short_runs)
        for c in cells:
            if c.get("device") != device or c.get("workload") != workload:
                continue
            d = c.get("dilation")
            self.dilation[c["fs"]] = float(d) if isinstance(d, int | float) else None
            for s, f in (c.get("figures") or {}).items():
                if f.get("stalled"):
                    self.stalled.add(c["fs"])
                if f.get("guest_bound"):
                    self.guest_bound.add(c["fs"])
                if f.get("short"):
                    self.short.add(c["fs"])
                if f.get("guest_bound") or f.get("short"):
                    continue  # vlab.verdict, rule 1, and core.MIN_DEVICE_S: its figures are not judged
                br = f.get("by_rep") or {}
                perf = list((br.get("perf") or {}).values())
                if split is None:
                    power, ai = list((br.get("power_w") or {}).values()), list((br.get("ai") or {}).values())
                else:
                    pw, a = split_runs(f, split)
                    power, ai = list(pw.values()), list(a.values())
                if perf:
                    self.values[(c["fs"], s)] = {"perf": perf, "power_w": power, "ai": ai}

    def measured(self) -> set[str]:
        """The filesystems with figures for this workload."""
        return {fs for fs, _ in self.values}

    def median(self, key: tuple[str, str], what: str) -> float | None:
        v = self.values.get(key, {}).get(what) or []
        return statistics.median(v) if v else None

    def best(self, keys: list[tuple[str, str]], what: str, low: bool = False) -> tuple[str, str] | None:
        have = [k for k in keys if self.median(k, what) is not None]
        if not have:
            return None
        return (min if low else max)(have, key=lambda k: self.median(k, what) or 0.0)

    def ratio(self, a: tuple[str, str], b: tuple[str, str], what: str) -> stats.Ratio | None:
        return stats.independent_ratio(self.values[a][what], self.values[b][what])

    def apart(self, filesystems: list[str]) -> str | None:
        """Why figures of these filesystems' cells are not compared, or None: their cells ran at
        different dilations (or one's is not recorded)."""
        fss = list(dict.fromkeys(filesystems))
        if len(fss) < 2:
            return None
        unknown = [fs for fs in fss if self.dilation.get(fs) is None]
        if unknown:
            return f"the dilation of {', '.join(unknown)} is not recorded"
        if len({self.dilation[fs] for fs in fss}) == 1:
            return None
        return ", ".join(f"{fs} at {self.dilation[fs]:g}" for fs in fss) + ": different dilations"

    def part(self, name: str, a: tuple[str, str], b: tuple[str, str], what: str, claim: stats.Claim) -> Part:
        """The ratio a / b of `what` as a claim's part: not judged where a and b's cells ran at
        different dilations (power: with the reason the power model gives)."""
        why = self.apart([a[0], b[0]])
        if why and what == "power_w":
            why = f"{POWER_RESTS}; {why}"
        return Part(name, None if why else self.ratio(a, b, what), claim, why or "", a=a, b=b)

    def follows_iops(self, a: tuple[str, str], b: tuple[str, str], above: bool) -> str:
        """Where an AI ratio a / b claimed above 1 (`above`) or below it says no more than the
        IOPS ratio, in words for the evidence; "" where power adds to it. AI = IOPS / power, so
        power is evidence of its own only where a's mean power is beyond the interval on the
        claim's side of b's — below it for a higher AI, above it for a lower one; otherwise
        AI's order is IOPS's (or holds despite power)."""
        if self.apart([a[0], b[0]]):
            return ""
        r = self.ratio(a, b, "power_w")
        side = "below" if above else "above"
        if r is not None and stats.grade(r, stats.Claim(1.0, not above)) == HOLDS:
            return ""
        return f"AI follows IOPS here (power {a[0]}/{b[0]} {r.text() if r else '-'}, not wholly {side} 1)"


# Why a power part between two cells is not graded where their dilations differ.
POWER_RESTS = "power is a linear function of the busy share, which the dilation sets"


@dataclass(frozen=True)
class Part:
    """One part of a claim: a ratio and the claim on it, or why it is not judged (`why`), and a
    note for the evidence (`note`)."""

    name: str
    ratio: stats.Ratio | None
    claim: stats.Claim
    why: str = ""
    note: str = ""
    a: tuple[str, str] | None = None  # the pairs compared, a / b
    b: tuple[str, str] | None = None


def _part_json(p: Part) -> dict[str, Any]:
    """A part's interval JSON (core.interval_json), or its grade and why where not judged."""
    return {"grade": NOT_JUDGED, "why": p.why} if p.why else core.interval_json(p.ratio, p.claim)


def _graded(parts: list[Part]) -> tuple[list[str], list[str], dict[str, Any]]:
    """The judged parts' grades, every part's words (a not-judged one with why) and the
    judged parts' intervals (each with its interval methods' grades)."""
    grades, words, intervals = [], [], {}
    for p in parts:
        intervals[p.name] = _part_json(p)
        if p.why:
            words.append(f"{p.name} not judged: {p.why}")
            continue
        g = stats.grade(p.ratio, p.claim)
        grades.append(g)
        extra = "; ".join(x for x in (stats.split(p.ratio, p.claim), p.note) if x)
        words.append(f"{p.name} {p.ratio.text() if p.ratio else '-'} ({g}{'; ' + extra if extra else ''})")
    return grades, words, intervals


def most(grades: list[str]) -> str:
    """ "In most cases": the verdict rule's "most" (more than half the cases hold)."""
    return core.combine(grades, most=True)


def _fs_against(pairs: Pairs, p: Plan, mine: tuple[str, ...], what: str, low: bool = False) -> list[Part]:
    """Per scheduler: the best of `mine` against the best of the other filesystems, by `what`
    (not judged where their cells ran at different dilations; AI noted where it follows IOPS)."""
    out = []
    for s in p.schedulers:
        ours = pairs.best([(fs, s) for fs in p.filesystems if fs in mine], what, low)
        theirs = pairs.best([(fs, s) for fs in p.filesystems if fs not in mine], what, low)
        if ours and theirs:
            part = pairs.part(f"{ours[0]}/{theirs[0]} under {s}", ours, theirs, what, stats.Claim(1.0, not low))
            if what == "ai" and not part.why:
                part = dataclasses.replace(part, note=pairs.follows_iops(ours, theirs, above=not low))
            out.append(part)
    return out


def verdicts(device: str, cells: list[dict[str, Any]], p: Plan, split: tuple[float, float] | None,
             where: str) -> list[Verdict]:  # fmt: skip
    """The five claims on one device under one power split."""
    out: list[Verdict] = []
    wl = [w.name for w in p.workloads]
    by_w = {w: Pairs(cells, device, w, split) for w in wl}
    ext = tuple(fs for fs in p.filesystems if fs in EXT)
    others = [fs for fs in p.filesystems if fs not in EXT]
    half = "; over the ratios: " + core.combine_criterion()
    apart = (
        "; a ratio between two filesystems is graded only where their cells ran at one dilation "
        "(not judged otherwise), and the claim over the parts judged"
    )

    def pending(workloads: list[str]) -> str:
        """The planned (filesystem, workload) cells without figures yet: a verdict over a
        partial matrix says so (a later cell can change which filesystem is best)."""
        gaps = [
            f"{fs} ({w}{', its runs did not get through the flow' if fs in by_w[w].stalled else ''}"
            f"{', guest-bound: not judged' if fs in by_w[w].guest_bound else ''}"
            f"{', runs too short: not judged' if fs in by_w[w].short else ''})"
            for w in workloads
            for fs in p.filesystems
            if fs not in by_w[w].measured()
        ]
        return f"; provisional, no figures yet for {', '.join(gaps)}" if gaps else ""

    def verdict(claim: str, crit: str, grades: list[str], words: list[str], iv: dict[str, Any], combine: Any,
                workloads: list[str] = wl, parts: int | None = None) -> None:  # fmt: skip
        """The claim over its judged parts' `grades`, of `parts` in all (None: as many)."""
        total = len(grades) if parts is None else parts
        if not grades and total:  # every part not judged: the claim, with their reasons
            out.append(Verdict(claim, where, NOT_JUDGED, "; ".join(words) + pending(workloads), crit + apart, iv))
        elif not grades:
            out.append(Verdict(claim, where, NOT_JUDGED, "not enough filesystems or figures ran" + pending(workloads),
                               crit))  # fmt: skip
        else:
            on = f" (graded on the {len(grades)} of {total} parts judged)" if len(grades) < total else ""
            ev = "; ".join(words) + on + pending(workloads)
            g = combine(grades)
            # Holding needs the parts not judged too (every part; "most": more than half of all
            # of them): a claim that holds on its judged parts alone is not judged. A part that
            # does not hold refutes it whatever the others would give (partly or does not hold).
            held = sum(1 for x in grades if x == HOLDS)
            certain = 2 * held > total if combine is most else len(grades) == total
            if g == HOLDS and not certain:
                g = NOT_JUDGED
                ev += f"; not judged: it holds on the parts judged, and holding needs the {total - len(grades)} not"
            out.append(Verdict(claim, where, g, ev, crit + apart, iv))

    # 1. The pair matters: best / worst AI and IOPS per workload, against MATTERS.
    parts: list[Part] = []
    for w, pairs in by_w.items():
        if len(pairs.measured()) < 2:  # one filesystem so far: the schedulers alone (pending, below)
            continue
        for what in ("ai", "perf"):
            keys = list(pairs.values)
            hi, lo = pairs.best(keys, what), pairs.best(keys, what, low=True)
            if hi and lo and hi != lo:
                parts.append(pairs.part(f"{w} {what} {'+'.join(hi)}/{'+'.join(lo)}", hi, lo, what,
                                        stats.Claim(MATTERS, True)))  # fmt: skip
    g, words, iv = _graded(parts)
    crit = stats.Claim(MATTERS).criterion() + ", for the best / the worst pair's AI and IOPS per workload" + half
    verdict(CLAIM_DEPEND, crit, g, words, iv, core.combine, parts=len(parts))

    # 2. ext* above the others by AI under varmail, for every scheduler.
    def absent(claim: str, why: str) -> None:
        out.append(Verdict(claim, where, NOT_JUDGED, why))

    if not ("varmail" in by_w and ext and others):
        absent(CLAIM_VARMAIL, "needs varmail, an ext* filesystem and another filesystem")
    else:
        fs_parts = _fs_against(by_w["varmail"], p, ext, "ai")
        g, words, iv = _graded(fs_parts)
        crit = stats.Claim().criterion() + ", for the best ext* / the best other filesystem's AI, per scheduler" + half
        verdict(CLAIM_VARMAIL, crit, g, words, iv, core.combine, ["varmail"], len(fs_parts))
    # 3. NILFS2 on top by AI under fileserver, for every scheduler.
    if not ("fileserver" in by_w and "nilfs2" in p.filesystems and len(p.filesystems) > 1):
        absent(CLAIM_FILESERVER, "needs fileserver, nilfs2 and another filesystem")
    else:
        fs_parts = _fs_against(by_w["fileserver"], p, ("nilfs2",), "ai")
        g, words, iv = _graded(fs_parts)
        crit = stats.Claim().criterion() + ", for nilfs2 / the best other filesystem's AI, per scheduler" + half
        verdict(CLAIM_FILESERVER, crit, g, words, iv, core.combine, ["fileserver"], len(fs_parts))
    # 4. ext*: high performance (IOPS above the others') at low efficiency (AI below), in most
    # (workload, scheduler) cases.
    if not (ext and others):
        absent(CLAIM_EXT_PERF, "needs an ext* filesystem and another filesystem")
    else:
        cases: list[str] = []
        words, iv = [], {}
        n_cases = 0
        for w, pairs in by_w.items():
            perf = {pt.name.split(" under ")[1]: pt for pt in _fs_against(pairs, p, ext, "perf")}
            eff = {pt.name.split(" under ")[1]: pt for pt in _fs_against(pairs, p, ext, "ai")}
            for s, pp in perf.items():
                if s not in eff:
                    continue
                n_cases += 1
                # low efficiency: ext*'s best AI below the others' best
                pe = eff[s]
                low_ai = pairs.follows_iops(pe.a, pe.b, above=False) if pe.a and pe.b and not pe.why else ""
                pe = dataclasses.replace(pe, claim=stats.Claim(1.0, False), note=low_ai)
                iv[f"{w}/{s} IOPS"], iv[f"{w}/{s} AI"] = _part_json(pp), _part_json(pe)
                if pp.why or pe.why:
                    why = "; ".join(dict.fromkeys(x for x in (pp.why, pe.why) if x))
                    words.append(f"{w}/{s}: not judged: {why}")
                    continue
                g_perf, g_ai = stats.grade(pp.ratio, pp.claim), stats.grade(pe.ratio, pe.claim)
                g2 = core.combine([g_perf, g_ai])
                cases.append(g2)
                notes = [x for x in (stats.split(pp.ratio, pp.claim), stats.split(pe.ratio, pe.claim)) if x]
                if g_ai == HOLDS and pe.note:  # lower AI: from lower IOPS, not from more power
                    notes.append(f"{pe.note}: the lower-AI part is not independent evidence")
                more = f"; {'; '.join(notes)}" if notes else ""
                words.append(f"{w}/{s}: IOPS {pp.ratio.text() if pp.ratio else '-'}, "
                             f"AI {pe.ratio.text() if pe.ratio else '-'} ({g2}{more})")  # fmt: skip
        crit = ("per (workload, scheduler): the best ext* / the best other filesystem's IOPS wholly above 1 and its AI "
                "wholly below 1 (95% intervals); over the cases: " + core.combine_criterion(most=True))  # fmt: skip
        verdict(CLAIM_EXT_PERF, crit, cases, words, iv, most, parts=n_cases)
    # 5. NILFS2: lower mean power than every other filesystem, and its power changes least
    # across the schedulers (the smallest max/min over them), in most workloads.
    if not ("nilfs2" in p.filesystems and len(p.filesystems) > 1):
        absent(CLAIM_NILFS, "needs nilfs2 and another filesystem")
    else:
        cases, words, iv = [], [], {}
        n_cases = 0
        for w, pairs in by_w.items():
            low = _fs_against(pairs, p, ("nilfs2",), "power_w", low=True)
            if not low:  # nilfs2 or every other filesystem without figures here yet: pending (below)
                continue
            n_cases += 1
            g_low, wl_words, wl_iv = _graded(low)
            iv.update({f"{w} {k}": v for k, v in wl_iv.items()})
            swing = {}
            for fs in p.filesystems:
                meds = [m for s in p.schedulers if (m := pairs.median((fs, s), "power_w"))]
                if len(meds) > 1:
                    swing[fs] = max(meds) / min(meds)
            sw = ", ".join(f"{fs} {v:.3f}" for fs, v in sorted(swing.items(), key=lambda kv: kv[1]))
            # The smoothest filesystem is a choice among every filesystem's swing: each is its own
            # cell's, and a swing of power follows the busy shares the dilation sets.
            smooth_apart = pairs.apart(["nilfs2", *swing])
            parts_w = [core.combine(g_low)] if g_low else []
            if not smooth_apart:
                steadiest = min(swing, key=lambda fs: swing[fs]) if swing else None
                parts_w.append(grade_choice(choice("nilfs2"), steadiest))
                smooth = f"max/min power over the schedulers {sw}"
            else:
                smooth = f"max/min power over the schedulers {sw} (not judged: {POWER_RESTS}; {smooth_apart})"
            if not parts_w:
                words.append(f"{w}: not judged: power {'; '.join(wl_words)}; {smooth}")
                continue
            grade = core.combine(parts_w)
            cases.append(grade)
            words.append(f"{w}: power {'; '.join(wl_words)}; {smooth} ({grade})")
        crit = ("per workload: nilfs2's mean power / the lowest other filesystem's wholly below 1 under every "
                "scheduler (95% intervals), and nilfs2's power the least changed across the schedulers (max/min of the "
                "medians); over the workloads: " + core.combine_criterion(most=True))  # fmt: skip
        verdict(CLAIM_NILFS, crit, cases, words, iv, most, parts=n_cases)
    return out


def cemp(device: str, cells: list[dict[str, Any]], p: Plan, split: tuple[float, float]) -> TableOut:
    """Cemp: for each workload, the pairs with the largest AI, the lowest power and the highest
    performance, and the change of energy (mean power) and performance between them."""
    rows = []
    for w in p.workloads:
        pairs = Pairs(cells, device, w.name, split)
        keys = list(pairs.values)
        picks = {"largest AI": pairs.best(keys, "ai"), "lowest power": pairs.best(keys, "power_w", low=True),
                 "highest performance": pairs.best(keys, "perf")}  # fmt: skip
        ref = picks["largest AI"]
        for name, k in picks.items():
            if k is None or ref is None:
                continue
            pw, pf = pairs.median(k, "power_w"), pairs.median(k, "perf")
            rpw, rpf = pairs.median(ref, "power_w"), pairs.median(ref, "perf")
            rows.append([text(w.name), text(name), text(f"{k[0]} + {k[1]}"), number(pf, 0), number(pw, 3),
                         text(f"{pf / rpf:.3f}" if pf and rpf else "-"),
                         text(f"{pw / rpw:.3f}" if pw and rpw else "-")])  # fmt: skip
    return TableOut(
        f"Cemp on {device}: the pairs with the largest AI, the lowest power, the highest performance",
        ["workload", "the pair with", "pair", "IOPS", "W", "IOPS / largest-AI pair's", "W / largest-AI pair's"],
        rows,
        f"Mean power with the paper's SSD-I split ({split[0]} W working, {split[1]} W idle) and each run's busy share.",
    )


def sensitivity(device: str, cells: list[dict[str, Any]], p: Plan) -> TableOut:
    """The verdicts under each power split (the paper's three SSDs' figures and SSD-I's idle
    varied), and under the device model's own energy account."""
    splits: dict[str, tuple[float, float] | None] = {**POWER_SPLITS, "device model's account": None}
    table: dict[str, dict[str, str]] = {}
    for name, split in splits.items():
        for v in verdicts(device, cells, p, split, device):
            table.setdefault(v.claim, {})[name] = v.verdict
    rows = [[text(claim), *(text(g.get(n, "-")) for n in splits)] for claim, g in table.items()]
    return TableOut(
        f"Sensitivity on {device}: each claim's verdict under each power split (work W / idle W)",
        ["claim", *(f"{n} {s[0]}/{s[1]}" if s else n for n, s in splits.items())],
        rows,
        "A verdict that changes along a row depends on the power figures, not on the measurement.",
    )


def analyse(p: Plan, cells: list[dict[str, Any]]) -> Analysis:
    tables: list[TableOut] = []
    out: list[Verdict] = []
    rankings: list[Ranking] = []
    index = {c["id"]: i for i, c in enumerate(cells)}
    split = POWER_SPLITS[PAPER_SPLIT]
    for device in p.devices:
        for w in p.workloads:
            pairs = Pairs(cells, device, w.name, split)
            rows = []
            items: list[dict[str, Any]] = []
            for fs in p.filesystems:
                i = index.get(f"{device}/{fs}-{w.name}")
                figs = cells[i].get("figures") or {} if i is not None else {}
                row = [text(fs)]
                for s in p.schedulers:
                    f = figs.get(s) or {}
                    key = f"/cells/{i}/figures/{s}" if i is not None and s in figs else None
                    ai = pairs.values.get((fs, s), {}).get("ai") or []
                    row.append(number(pairs.median((fs, s), "ai"), 1))
                    row.append(number(f.get("perf", {}).get("median"), 0, key and key + "/perf/median"))
                    busy = f.get("busy", {}).get("median")
                    row.append(number(None if busy is None else 100 * busy, 0, suffix=" %"))
                    if ai:
                        m = Metric.of(ai).as_json()
                        items.append({"label": f"{fs} + {s}", "group": s, **m})
                row.append(number(pairs.dilation.get(fs), 0))
                rows.append(row)
            if items:
                rankings.append(Ranking(f"{w.name} on {device}: AI per filesystem + scheduler (SSD-I's power)",
                                        "AI (IOPS per watt)", items))  # fmt: skip
            header = ["filesystem"]
            for s in p.schedulers:
                header += [f"{s} AI (IOPS/W)", f"{s} IOPS", f"{s} busy"]
            header.append("dilation")
            tables.append(
                TableOut(
                    f"{w.name} on {device}: AI, IOPS and the device's busy share per filesystem and scheduler",
                    header,
                    rows,
                    "AI = filebench's IOPS over the device's mean power during the measured run, with the paper's "
                    f"SSD-I figures (Table 2: {split[0]} W working, {split[1]} W idle): mean power = idle + "
                    "(working - idle) x the share of the run the device had a request. Medians of the repetitions, "
                    "in model time. The device model's own per-operation energy account is the sensitivity "
                    "table's last column. Dilation: the cell's (each filesystem calibrated its own); the verdicts "
                    "compare two filesystems only where their cells ran at one, since IOPS in model time and the "
                    "busy share (so power and AI) follow it.",
                )
            )
        out += verdicts(device, cells, p, split, device)
        if len(p.filesystems) > 1:
            tables.append(cemp(device, cells, p, split))
            tables.append(sensitivity(device, cells, p))
    return Analysis(tables, out, rankings=rankings)


SEED = Seed(
    "seed001",
    "Seed 001: filesystem x scheduler pairs ranked by performance per energy (AI)",
    "fs-and-scheduler-combination-for-ssd.txt",
    "The paper's SSD-I is vsim's mlc_sata SSD (Table 2's figures) served over ublk at its depth, in GC "
    "steady state, at a dilation that keeps it busy; its power is Table 2's (2.6 W working, 0.15 W idle) "
    "over each run's busy share, with a sensitivity table over other splits and the model's own energy "
    "account. Filesystems ext2, ext3, ext4 (the paper's extended file systems), xfs, btrfs, f2fs, nilfs2; "
    "the paper's noop, deadline and CFQ are none, mq-deadline and bfq, with kyber and veloces added. Table "
    "1's workloads (fileserver's file set 1/10), runs far shorter than its 600 s (their length below), "
    "rotated repetitions; "
    "verdicts by 95 % t intervals (holds, does not hold, inconclusive).",
    plan,
    analyse,
)
