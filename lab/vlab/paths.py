"""Where the lab's inputs and outputs are: the repository, the build directory, the built
simulator. Standard library only (`lab/deps.py` imports it before the venv exists) and
imports nothing of the lab's: every module may import it.
"""

from __future__ import annotations

import os
from pathlib import Path


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def build_dir() -> Path:
    return Path(os.environ.get("VELOCES_BUILD", repo_root() / "build"))


# The simulator's Cargo profile (sim/Cargo.toml) for its binary, nbdkit plugin and wheel:
# `release` for what users run; `make test` builds and tests everything once in `fast`
# (the same optimisation without fat LTO: docs/testing.md). ./vsim reads the same variable.
SIM_PROFILES = ("release", "fast")


def sim_profile() -> str:
    profile = os.environ.get("VSIM_PROFILE") or "release"
    if profile not in SIM_PROFILES:
        raise ValueError(f"VSIM_PROFILE={profile}: must be one of {', '.join(SIM_PROFILES)}")
    return profile


def sim_target_dir() -> Path:
    """Where the simulator's binaries of the chosen profile are (sim/target/PROFILE)."""
    return repo_root() / "sim" / "target" / sim_profile()
