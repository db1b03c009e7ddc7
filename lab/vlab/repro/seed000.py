"""Seed 000 (veloces-ssd-io-scheduler.txt): veloces against noop, deadline and CFQ on ext4
on an SSD, with filebench's mail, file and web server (Table 10.3, IOPS) and dbench with
8, 16 and 32 clients (Table 10.4, MB/s). Its claim: veloces is best in every case."""

from __future__ import annotations

from typing import Any

from vlab.repro import core
from vlab.repro.core import HOLDS, NOT_JUDGED, PAPER_TO_MQ, Analysis, Plan, TableOut, Verdict, number, text
from vlab.repro.run import Seed

PAPER_ORDER = ("deadline", "noop", "cfq", "veloces")  # the tables' column order
TABLE_10_3: dict[str, dict[str, float]] = {  # IOPS
    "varmail": {"deadline": 8622, "noop": 8614, "cfq": 8359, "veloces": 8763},
    "fileserver": {"deadline": 5343, "noop": 5189, "cfq": 4545, "veloces": 5672},
    "webserver": {"deadline": 8292, "noop": 8374, "cfq": 8064, "veloces": 8536},
}
TABLE_10_4 = {  # MB/s
    "dbench-8": {"deadline": 315.9, "noop": 325.26, "cfq": 322.24, "veloces": 327.58},
    "dbench-16": {"deadline": 340.1, "noop": 334.60, "cfq": 333.68, "veloces": 341.05},
    "dbench-32": {"deadline": 335.11, "noop": 334.3, "cfq": 325.21, "veloces": 336.33},
}
PAPER: dict[str, dict[str, float]] = {**TABLE_10_3, **TABLE_10_4}


def plan(quick: bool) -> Plan:
    if quick:
        return Plan.quick_variant("seed000", "nullblk", [core.FILEBENCH["varmail"], core.DBENCH["dbench-8"]])
    return Plan.full_matrix("seed000", ["ext4"], [*core.FILEBENCH.values(), *core.DBENCH.values()])


def analyse(p: Plan, cells: list[dict[str, Any]]) -> Analysis:
    tables: list[TableOut] = []
    verdicts: list[Verdict] = []
    cases: list[dict[str, Any]] = []
    index = {c["id"]: i for i, c in enumerate(cells)}
    ours_cols = [PAPER_TO_MQ[s] for s in PAPER_ORDER]
    extra = [s for s in p.schedulers if s not in ours_cols]
    for device in p.devices:
        rows = []
        for w in p.workloads:
            cid = f"{device}/ext4-{w.name}"
            cell = cells[index[cid]] if cid in index else {}
            figs: dict[str, Any] = cell.get("figures") or {}
            paper = PAPER[w.name]
            base_p = paper["deadline"]
            base_o = (figs.get("mq-deadline") or {}).get("perf", {}).get("median")
            row = [text(f"{w.name} ({w.unit})")]
            for s in PAPER_ORDER:
                mq = PAPER_TO_MQ[s]
                f = (figs.get(mq) or {}).get("perf", {})
                key = None if cid not in index or mq not in figs else f"/cells/{index[cid]}/figures/{mq}/perf/median"
                row.append(number(paper[s], 2 if paper[s] < 1000 else 0))
                row.append(number(f.get("median"), 1, key))
                ratio_o = f["median"] / base_o if f.get("median") is not None and base_o else None
                row.append(text(f"{paper[s] / base_p:.3f} / " + ("-" if ratio_o is None else f"{ratio_o:.3f}")))
                if s != "deadline" and ratio_o is not None:
                    # The direction of each difference is the paper's finding, not its size.
                    same = (paper[s] > base_p) == (ratio_o > 1.0)
                    cases.append(
                        {
                            "group": device,
                            "name": f"{w.name}: {mq} / mq-deadline (paper {s} / deadline)",
                            "expected": f"{paper[s] / base_p:.3f}",
                            "got": f"{ratio_o:.3f}",
                            "tolerance": "same side of 1",
                            "pass": same,
                            "expected_value": paper[s] / base_p,
                            "got_value": ratio_o,
                        }
                    )
            for s in extra:
                f = (figs.get(s) or {}).get("perf", {})
                key = None if cid not in index or s not in figs else f"/cells/{index[cid]}/figures/{s}/perf/median"
                row.append(number(f.get("median"), 1, key))
            busy = (figs.get("mq-deadline") or {}).get("busy", {}).get("median")
            if busy is None:
                row.append(text("-"))
            else:  # a share, shown in per cent
                key = f"/cells/{index[cid]}/figures/mq-deadline/busy/median"
                row.append({"text": f"{100 * busy:.0f} %", "value": busy, "key": key, "scale": 0.01})
            rows.append(row)
            verdicts.append(_verdict(device, w.name, figs, p))
        header = ["workload"]
        for s in PAPER_ORDER:
            header += [f"paper {s}", f"ours {PAPER_TO_MQ[s]}", "ratio to deadline: paper / ours"]
        header += [f"ours {s}" for s in extra]
        header.append("device busy (mq-deadline)")
        tables.append(
            TableOut(
                f"Tables 10.3 and 10.4 on {device} ({core.DEVICES[device]})",
                header,
                rows,
                "Paper: ext4 on a 60 GB SSD, single-queue Linux. Ours: ext4 on the device above under "
                f"Linux {p.kernel} (blk-mq), medians of {p.repeat} rotated repetitions of {p.runtime_s} s, in "
                "model time on a served device. Absolute figures differ by design (other hardware, "
                "emulated guest): compare the ratios. Device busy: the share of the run's model time with a "
                "request outstanding at the device (low: the emulated guest, not the device, set the pace, "
                "and a scheduler can change little).",
            )
        )
    return Analysis(tables, verdicts, cases)


def _verdict(device: str, workload: str, figs: dict[str, Any], p: Plan) -> Verdict:
    rivals = [PAPER_TO_MQ[s] for s in PAPER_ORDER if s != "veloces" and PAPER_TO_MQ[s] in p.schedulers]
    claim = f"veloces beats {', '.join(rivals) or 'its rivals'} ({workload})"
    perf = {s: (figs.get(s) or {}).get("perf", {}) for s in ["veloces", *rivals]}
    missing = [s for s, f in perf.items() if f.get("median") is None]
    if missing:
        return Verdict(claim, device, NOT_JUDGED, f"no figures for {', '.join(missing)}")
    if len(perf) < 2:
        return Verdict(claim, device, NOT_JUDGED, "veloces ran without the paper's rivals")
    best = core.best_of(perf)
    assert best is not None
    v = perf["veloces"]["median"]
    ratios = ", ".join(f"{s} {perf[s]['median'] / v:.3f}" for s in rivals)
    untested = [PAPER_TO_MQ[s] for s in PAPER_ORDER if s != "veloces" and PAPER_TO_MQ[s] not in p.schedulers]
    note = f" (not run: {', '.join(untested)})" if untested else ""
    if best == "veloces":
        spread = " within the repetitions' spread" if core.within_spread(perf, "veloces") else ""
        return Verdict(claim, device, HOLDS, f"veloces highest{spread}; rivals / veloces: {ratios}{note}")
    return Verdict(claim, device, core.FAILS, f"{best} highest; rivals / veloces: {ratios}{note}")


SEED = Seed(
    "seed000",
    "Seed 000: veloces against noop, deadline and CFQ (Tables 10.3 and 10.4)",
    "veloces-ssd-io-scheduler.txt",
    "The paper's noop, deadline and CFQ (single-queue) are run as their blk-mq heirs none, "
    "mq-deadline and bfq; kyber is added. Filebench's varmail, fileserver and webserver with "
    "filebench's default parameters (fileserver's file set 1/10), dbench with 8, 16 and 32 "
    "clients, on a fresh ext4 for every run.",
    plan,
    analyse,
)
