"""`make demo`'s verdicts (vlab.experiments.demo), from made-up figures: a goal is judged on
medians, and a difference counts only where the min-max ranges are apart."""

import json
from pathlib import Path

from vlab.experiments import demo


def figs(p99: dict[str, tuple[float, float, float]], iops: float = 100.0) -> dict[str, dict[str, demo.Range | None]]:
    return {s: {"iops": (iops, iops - 1, iops + 1), "read_p99_us": r, "write_iops": (50.0, 49.0, 51.0)}
            for s, r in p99.items()}  # fmt: skip


def test_a_flood_win_needs_the_medians_and_ranges_apart() -> None:
    won = figs({"none": (4000, 3900, 4100), "bfq": (1000, 900, 1100), "veloces": (400, 300, 500)})
    assert demo.verdict("flood", won).endswith(": met")
    assert "read p99 0.40x bfq's, 0.10x none's" in demo.verdict("flood", won)
    overlap = figs({"none": (4000, 3900, 4100), "bfq": (1000, 450, 1100), "veloces": (400, 300, 500)})
    assert demo.verdict("flood", overlap).endswith("medians meet it, ranges overlap: not shown")
    tie = figs({"none": (4000, 3900, 4100), "bfq": (1000, 900, 1100), "veloces": (990, 980, 1000)})
    assert demo.verdict("flood", tie).endswith("NOT met")
    starved = figs({"none": (4000, 3900, 4100), "veloces": (400, 300, 500)})
    starved["veloces"]["write_iops"] = (40.0, 39.0, 41.0)  # 0.8x none's writes
    assert demo.verdict("flood", starved).endswith("NOT met")


def test_the_mix_is_lost_only_where_the_ranges_are_apart() -> None:
    mix = figs({"none": (1000, 990, 1010), "kyber": (1000, 990, 1010), "veloces": (1000, 990, 1010)})
    assert demo.verdict("mix", mix).endswith(": met")
    mix["veloces"]["iops"] = (90.0, 85.0, 98.0)  # 0.9x kyber's median, kyber's range 99-101
    assert demo.verdict("mix", mix).endswith("NOT met")
    mix["veloces"]["iops"] = (90.0, 85.0, 100.0)
    assert demo.verdict("mix", mix).endswith("met within the spread (a median misses it, ranges overlap)")
    assert demo.verdict("mix", {"veloces": mix["veloces"]}).endswith("not judged (a scheduler's figures are missing)")


def test_table_judges_a_finished_demo_again(tmp_path: Path) -> None:
    def entry(p99: float, iops: float) -> dict[str, object]:
        return {"iops": {"median": iops, "min": iops, "max": iops},
                "read_p99_us": {"median": p99, "min": p99, "max": p99},
                "write_iops": {"median": 10.0, "min": 10.0, "max": 10.0}}  # fmt: skip

    for job in demo.JOBS:
        (tmp_path / job).mkdir()
        doc = {"schedulers": {"none": entry(5000, 100), "veloces": entry(1000, 100)}}
        (tmp_path / job / "summary.json").write_text(json.dumps(doc))
    assert demo.main(["--table", str(tmp_path)]) == 0
    text = (tmp_path / "verdicts.md").read_text()
    assert "- lab, flood: veloces IOPS 1.00x none's, read p99 0.20x none's" in text and "wins" in text
    assert "- lab, mix:" in text and "never loses" in text and "vsim" not in text
