"""Reproductions of the seeds' experiments in the lab (`vlab repro NAME`): one module per
seed, registered here (adding one is one file plus one line). docs/notebooks/reproductions.md."""

from __future__ import annotations

from vlab.repro import seed000, seed001
from vlab.repro.run import Seed

SEEDS: dict[str, Seed] = {s.name: s for s in (seed000.SEED, seed001.SEED)}
