"""The random flood family (vlab.experiments.family): a seed picks one shape, within the
documented ranges, and vsim parses the job every shape gives. Only tuning seeds are drawn
here: the held-out ones are for the held-out report alone."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from vlab.experiments import family
from vlab.paths import repo_root

SEEDS = range(200)  # tuning seeds


def test_the_held_out_ranges_are_apart_from_the_tuning_range() -> None:
    for held in (family.HELDOUT_SEEDS, family.LAB_HELDOUT_SEEDS):
        assert not set(held) & set(family.TUNING_SEEDS)
    assert len(family.HELDOUT_SEEDS) >= 400 and len(family.LAB_HELDOUT_SEEDS) >= 40


def test_a_seed_picks_one_shape() -> None:
    for seed in (0, 17, 99):
        assert family.shape(seed) == family.shape(seed)
        assert family.job(family.shape(seed)) == family.job(family.shape(seed))
    assert len({family.shape(s).text() for s in SEEDS}) == len(SEEDS)
    # The lab's draw is its own: the same seed gives an unrelated lab shape.
    assert family.lab_shape(3) != family.shape(3)


def test_shapes_stay_within_the_documented_ranges() -> None:
    r = family.RANGES
    kinds = {"mix": 0, "flood": 0}
    served = 0
    for seed in SEEDS:
        sh = family.shape(seed)
        kinds[sh.kind] += 1
        if sh.device.served:
            served += 1
            assert sh.device.served in family.SERVED
        else:
            assert sh.device.tags in r["tags"]
            assert r["completion_us"][0] <= sh.device.completion_us <= r["completion_us"][1]
        for s in sh.streams:
            if s.role == "reader":
                assert r["readers"][0] <= s.numjobs <= r["readers"][1] and 1 <= s.depth <= r["reader_depth"][1]
            elif s.role == "writer":
                assert r["writers"][0] <= s.numjobs <= r["writers"][1] and 1 <= s.depth <= r["writer_depth"][1]
                assert s.bs_kib in r["writer_bs_kib"]
                assert (s.mode == "fsync") == (s.fsync_every > 0)
            else:
                assert r["mix_read_pct"][0] <= s.read_pct <= r["mix_read_pct"][1] and s.mode == "direct"
    # Both kinds, and served models, in the draw, near their shares.
    assert 0.1 < kinds["mix"] / len(SEEDS) < 0.3 and 0.15 < served / len(SEEDS) < 0.35
    for seed in SEEDS:
        lab = family.lab_shape(seed)
        assert not lab.device.served and lab.device.tags * family.LAB_US_PER_TAG <= max(
            family.LAB_US_PER_TAG, lab.device.completion_us
        )
        assert family.lab_device(lab).startswith("null_blk:irqmode=2,")


def test_a_served_model_is_not_a_lab_device() -> None:
    sh = next(family.shape(s) for s in SEEDS if family.shape(s).device.served)
    with pytest.raises(ValueError, match="not in the lab's family"):
        family.lab_device(sh)


def test_the_model_job_differs_only_by_fsync() -> None:
    sh = next(family.shape(s) for s in SEEDS if any(x.mode == "fsync" for x in family.shape(s).streams))
    lab, model = family.job(sh).splitlines(), family.job(sh, model=True).splitlines()
    assert [x for x in lab if not x.startswith("fsync=")] == model
    assert "fsync writers without fsync" in sh.modelled


def test_vsim_parses_every_shape(tmp_path: Path) -> None:
    """`vsim compare` accepts the job and device of 40 tuning shapes (a short run each)."""
    for seed in range(40):
        sh = family.shape(seed)
        job = tmp_path / f"{seed}.fio"
        job.write_text(family.job(sh, model=True))
        p = subprocess.run(
            [str(repo_root() / "vsim"), "run", "--device", family.model_device(sh), "--scheduler", "noop",
             "--runtime", "50ms", "--quiet", str(job)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert p.returncode == 0, f"seed {seed} ({sh.text()}): {p.stderr.strip()}"
