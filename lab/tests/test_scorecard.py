"""Each seed's scorecard from its stored data (vlab.repro.scorecard): counted by the rule's
grades, its data's commit and cleanliness named, a run not graded over the estimates and a
sensitivity variant said, and the repository's own stored data carded without running anything."""

import json
from pathlib import Path

from conftest import REPO

from vlab.repro import scorecard


def _stored(root: Path, folder: str, verdicts: list[str], dirty: bool, **extra: object) -> None:
    d = root / folder
    d.mkdir(parents=True)
    summary = {"kind": "vsim-repro", "verdicts": [{"claim": f"c{i}", "where": "w", "verdict": g}
                                                  for i, g in enumerate(verdicts)], **extra}  # fmt: skip
    (d / "summary.json").write_text(json.dumps(summary))
    (d / "manifest.json").write_text(json.dumps({"commit": "abc1234def", "dirty": dirty}))


def test_a_simulated_seed_is_counted_by_grade_with_its_commit_and_caveats(tmp_path: Path) -> None:
    src = scorecard.Source("seed 9", "a test seed (vsim)", ("results/repro/seed9-sim",))
    _stored(tmp_path, "results/repro/seed9-sim", ["holds", "holds", "partly", "not judged", "does not hold"],
            dirty=False, graded_over_estimates=True, variants=[{"verdict": "holds"}])  # fmt: skip
    c = scorecard.card(src, tmp_path)
    assert c.counts() == {"holds": 2, "partly": 1, "does not hold": 1, "inconclusive": 0,
                          "not reproducible from the description": 0, "not judged": 1}  # fmt: skip
    assert c.clean and c.commit == "abc1234def"
    assert c.notes == ["1 grades of a sensitivity variant shown apart, not counted"]
    row = scorecard.table([c], tmp_path).splitlines()[2]
    assert row.startswith(
        "| seed 9: a test seed (vsim) | results/repro/seed9-sim (abc1234) | 2 | 1 | 1 | 0 | 0 | 1 | 5 |"
    )


def test_a_run_from_a_dirty_tree_or_not_graded_over_the_estimates_says_so(tmp_path: Path) -> None:
    src = scorecard.Source("seed 9", "a test seed (vsim)", ("results/repro/seed9-sim",))
    _stored(tmp_path, "results/repro/seed9-sim", ["holds"], dirty=True)
    c = scorecard.card(src, tmp_path)
    assert not c.clean
    assert any("estimates' defaults only" in n for n in c.notes), c.notes
    assert any(n.startswith("unverified") for n in c.notes), c.notes
    missing = scorecard.card(scorecard.Source("seed 8", "none stored", ("results/nope",)), tmp_path)
    assert missing.folder is None and missing.verdicts == [] and "no stored data" in missing.notes[0]


def test_every_seed_of_the_repository_has_a_card_from_its_stored_data() -> None:
    def stored() -> dict[Path, bytes]:
        return {p: p.read_bytes() for s in scorecard.SOURCES for f in s.paths for p in (REPO / f).glob("*.json")}

    before = stored()
    cards = [scorecard.card(s, REPO) for s in scorecard.SOURCES]
    assert [c.source.seed for c in cards] == ["seed 000", "seed 001", "seed 002 §2", "seed 003", "seed 004"]
    for c in cards:
        assert c.folder is not None, c.source
        assert c.verdicts, c.source
        assert sum(c.counts().values()) == len(c.verdicts), c.source  # every verdict one of the rule's grades
    # The lab seeds' stored cells are judged on a copy: the stored files are not written.
    assert stored() == before
