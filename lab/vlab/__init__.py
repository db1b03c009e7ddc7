"""vlab: the Veloces lab. Boots Debian kernels under QEMU and runs block I/O experiments.

Its floors, lowest first. A module imports from its own floor and those below, never from
one above, at module level or inside a function (lab/tests/test_layers.py reads this list):

1. paths, stats, verdict, provenance, claims: no part of a run; they import nothing of vlab but
   each other (paths, stats and verdict are pure; provenance asks git and reads a run's files;
   claims reads stored files).
2. schedulers, workloads, devices, machine, etrace, checks: the parts of a run, host and guest side.
3. report: reads a results folder and renders it.
4. app: one comparison (boot, run, summarise, report).
5. experiments, repro: the studies, built on app.
6. cli, __main__: the command line.
"""
