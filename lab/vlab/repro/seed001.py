"""Seed 001 (fs-and-scheduler-combination-for-ssd.txt): filesystem x scheduler pairs on
SSDs ranked by the aggregative indicator AI = performance / energy under filebench's
varmail, fileserver and webserver (its Table 1). The seed's text keeps its claims, not its
figures (the plots did not survive the conversion), so the verdicts judge the claims."""

from __future__ import annotations

from typing import Any

from vlab.repro import core
from vlab.repro.core import FAILS, HOLDS, NOT_JUDGED, Analysis, Plan, Ranking, TableOut, Verdict, number, text
from vlab.repro.run import Seed


def plan(quick: bool) -> Plan:
    if quick:
        return Plan.quick_variant("seed001", "ssd-fresh", [core.FILEBENCH["varmail"]])
    return Plan.full_matrix("seed001", list(core.FILESYSTEMS), list(core.FILEBENCH.values()))


# "Highly depend": the best pair's AI at least this many times the worst's, and the
# repetitions apart.
MATTERS = 1.10


def _pairs(cells: list[dict[str, Any]], device: str, workload: str, what: str) -> dict[tuple[str, str], dict[str, Any]]:
    """(fs, scheduler) -> that figure's spread, over the device's cells of one workload."""
    out = {}
    for c in cells:
        if c.get("device") == device and c.get("workload") == workload:
            for s, f in (c.get("figures") or {}).items():
                if f.get(what, {}).get("median") is not None:
                    out[(c["fs"], s)] = f[what]
    return out


def _top_fs_verdict(
    claim: str, want: str, device: str, pairs: dict[tuple[str, str], dict[str, Any]], p: Plan
) -> Verdict:
    if len(p.filesystems) < 2:
        return Verdict(claim, device, NOT_JUDGED, f"one filesystem ran ({', '.join(p.filesystems)}): nothing to rank")
    if not pairs:
        return Verdict(claim, device, NOT_JUDGED, "no AI figures (no energy model on this device, or no runs)")
    ranked = sorted(pairs, key=lambda k: pairs[k]["median"], reverse=True)
    top_fs = ranked[0][0]
    per_sched = {}
    for s in p.schedulers:
        mine = {fs: pairs[(fs, s)]["median"] for fs in p.filesystems if (fs, s) in pairs}
        if mine:
            per_sched[s] = max(mine, key=lambda fs: mine[fs])
    tops = sum(1 for fs in per_sched.values() if fs == want)
    top3 = "; ".join(f"{fs}+{s} {pairs[(fs, s)]['median']:.4g}" for fs, s in ranked[:3])
    ev = f"top 3 by AI: {top3}; {want} tops {tops} of {len(per_sched)} schedulers"
    return Verdict(claim, device, HOLDS if top_fs == want else FAILS, ev)


def _most_verdict(
    claim: str, want: str, device: str, cells: list[dict[str, Any]], p: Plan, what: str, low: bool
) -> Verdict:
    if len(p.filesystems) < 2:
        return Verdict(claim, device, NOT_JUDGED, "one filesystem ran: nothing to compare")
    wins = total = 0
    for w in p.workloads:
        pairs = _pairs(cells, device, w.name, what)
        for s in p.schedulers:
            mine = {fs: pairs[(fs, s)]["median"] for fs in p.filesystems if (fs, s) in pairs}
            if len(mine) < 2:
                continue
            total += 1
            pick = (min if low else max)(mine, key=lambda fs: mine[fs])
            wins += pick == want
    if not total:
        return Verdict(claim, device, NOT_JUDGED, f"no {what} figures to compare")
    ev = f"{want} {'lowest' if low else 'highest'} in {wins} of {total} (workload, scheduler) cases"
    return Verdict(claim, device, HOLDS if wins * 2 > total else FAILS, ev)


def _matters_verdict(device: str, cells: list[dict[str, Any]], p: Plan) -> Verdict:
    claim = "performance and energy depend on the filesystem x scheduler pair"
    if len(p.filesystems) * len(p.schedulers) < 2:
        return Verdict(claim, device, NOT_JUDGED, "one pair ran")
    parts, clear = [], 0
    for w in p.workloads:
        pairs = _pairs(cells, device, w.name, "ai")
        if len(pairs) < 2:
            continue
        hi = max(pairs, key=lambda k: pairs[k]["median"])
        lo = min(pairs, key=lambda k: pairs[k]["median"])
        ratio = pairs[hi]["median"] / pairs[lo]["median"]
        separated = pairs[hi]["min"] > pairs[lo]["max"]
        clear += separated and ratio >= MATTERS
        parts.append(f"{w.name} {ratio:.2f}x{'' if separated else ' (the repetitions overlap)'}")
    if not parts:
        return Verdict(claim, device, NOT_JUDGED, "no AI figures")
    verdict = HOLDS if clear == len(parts) else FAILS
    return Verdict(claim, device, verdict, f"best / worst AI (>= {MATTERS:.2f}x, apart): " + ", ".join(parts))


def _ranking(device: str, w: core.Workload, items: dict[str, list[dict[str, Any]]]) -> Ranking | None:
    """The pairs of one (device, workload) by AI, or by IOPS where the device has no energy
    model (null_blk)."""
    if items["ai"]:
        return Ranking(f"{w.name} on {device}: AI per filesystem + scheduler", "AI (IOPS per watt)", items["ai"])
    if items["perf"]:
        title = f"{w.name} on {device}: IOPS (no energy model) per filesystem + scheduler"
        return Ranking(title, w.unit, items["perf"])
    return None


def analyse(p: Plan, cells: list[dict[str, Any]]) -> Analysis:
    tables: list[TableOut] = []
    verdicts: list[Verdict] = []
    rankings: list[Ranking] = []
    index = {c["id"]: i for i, c in enumerate(cells)}
    for device in p.devices:
        for w in p.workloads:
            rows = []
            items: dict[str, list[dict[str, Any]]] = {"ai": [], "perf": []}
            for fs in p.filesystems:
                cid = f"{device}/{fs}-{w.name}"
                i = index.get(cid)
                figs = cells[i].get("figures") or {} if i is not None else {}
                row = [text(fs)]
                for s in p.schedulers:
                    f = figs.get(s) or {}
                    key = f"/cells/{i}/figures/{s}" if i is not None and s in figs else None
                    row.append(number(f.get("ai", {}).get("median"), 1, key and key + "/ai/median"))
                    row.append(number(f.get("perf", {}).get("median"), 0, key and key + "/perf/median"))
                    row.append(number(f.get("power_w", {}).get("median"), 3, key and key + "/power_w/median"))
                    for what in ("ai", "perf"):
                        m = f.get(what) or {}
                        if key and m.get("median") is not None:
                            items[what].append({"label": f"{fs} + {s}", "group": s, "key": f"{key}/{what}", **m})
                rows.append(row)
            r = _ranking(device, w, items)
            if r:
                rankings.append(r)
            header = ["filesystem"]
            for s in p.schedulers:
                header += [f"{s} AI (IOPS/W)", f"{s} IOPS", f"{s} W"]
            tables.append(
                TableOut(
                    f"{w.name} on {device}: AI, IOPS and mean device power per filesystem and scheduler",
                    header,
                    rows,
                    "AI = filebench's IOPS over the device's mean power during the measured run (operations per "
                    "joule; seed 001's performance / energy over runs of equal length). Energy from the device "
                    "model's per-operation account (docs/reproductions.md); none on null_blk. Medians of the "
                    "repetitions, in model time.",
                )
            )
        wl = {w.name for w in p.workloads}
        if "varmail" in wl:
            verdicts.append(
                _top_fs_verdict(
                    "ext* + any scheduler: the best AI under varmail",
                    "ext4",
                    device,
                    _pairs(cells, device, "varmail", "ai"),
                    p,
                )
            )
        if "fileserver" in wl:
            verdicts.append(
                _top_fs_verdict(
                    "NILFS2 + any scheduler: high AI under fileserver (the top of the ranking)",
                    "nilfs2",
                    device,
                    _pairs(cells, device, "fileserver", "ai"),
                    p,
                )
            )
        verdicts.append(
            _most_verdict("ext* delivers high performance in most cases", "ext4", device, cells, p, "perf", low=False)
        )
        verdicts.append(
            _most_verdict("NILFS2 uses less energy (lowest mean power)", "nilfs2", device, cells, p, "power_w", True)
        )
        verdicts.append(_matters_verdict(device, cells, p))
    return Analysis(tables, verdicts, rankings=rankings)


SEED = Seed(
    "seed001",
    "Seed 001: filesystem x scheduler pairs ranked by performance per energy (AI)",
    "fs-and-scheduler-combination-for-ssd.txt",
    "The paper's three SSDs measured with a power meter are vsim's SSD and cheap-flash models "
    "served over NBD (fresh and in GC steady state), with energy from the models' per-operation "
    "account; null_blk is the control without an FTL (performance only). Filesystems ext4 (the "
    "paper's extended filesystems), xfs, btrfs, f2fs, nilfs2; the paper's noop, deadline and CFQ are "
    "none, mq-deadline and bfq, with kyber and veloces added. Table 1's workloads (fileserver's "
    "file set 1/10), 10 s runs instead of 600 s.",
    plan,
    analyse,
)
