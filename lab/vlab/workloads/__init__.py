"""Workload generators the lab drives: fio (job files, JSON) and filebench."""
