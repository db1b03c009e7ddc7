"""What the host asks the guest to do: the typed request `vm.boot` writes to
OUT/.vlab/request.json and `vlab.machine.guest` reads back. One definition for both sides, so a
field cannot be written under one name and read under another.

- `RunRequest`: create the devices, run a command (`vlab run`, `vlab conformance`, the
  suites' boots).
- `CompareRequest`: create the devices, then run each job under each scheduler, rotated and
  repeated (`vlab compare`, through `vlab.app.compare`); one boot for all the jobs.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class RunRequest:
    command: list[str]
    devices: list[str] = field(default_factory=list)
    action: Literal["run"] = "run"


@dataclass(frozen=True)
class Job:
    """One job of a comparison: its text, its kind, and the folder (relative to OUT) its
    results go to: "" (OUT itself) when a comparison has one job."""

    text: str
    kind: Literal["fio", "script"]
    folder: str = ""


@dataclass(frozen=True)
class CompareRequest:
    devices: list[str]
    schedulers: list[str]
    jobs: list[Job]
    repeat: int
    runtime: float | None = None
    sysctl: dict[str, str] = field(default_factory=dict)
    # dilation=auto: stretch each fio job's runtime for this many reads a run (vlab.verdict)
    min_reads: int = 0
    max_runtime: float | None = None  # the longest a run is stretched to for them
    action: Literal["compare"] = "compare"


GuestRequest = RunRequest | CompareRequest
KINDS: dict[str, type[RunRequest] | type[CompareRequest]] = {"run": RunRequest, "compare": CompareRequest}


def to_json(request: GuestRequest) -> str:
    return json.dumps(asdict(request), indent=2) + "\n"


def from_json(text: str) -> GuestRequest:
    """The request in `text`; ValueError naming what is wrong (an unknown action, a missing
    or unknown field)."""
    data: Any = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("a request is a JSON object")
    kind = KINDS.get(data.get("action", ""))
    if kind is None:
        raise ValueError(f"unknown action {data.get('action')!r} (known: {', '.join(KINDS)})")
    try:
        if kind is CompareRequest:
            jobs = data.get("jobs")
            if not isinstance(jobs, list) or not jobs or not all(isinstance(j, dict) for j in jobs):
                raise TypeError("'jobs' must be a non-empty list of objects")
            data = {**data, "jobs": [Job(**j) for j in jobs]}
            folders = [j.folder for j in data["jobs"]]
            if len(set(folders)) != len(folders) or any("/" in f or f in (".", "..") for f in folders):
                raise TypeError(f"job folders must be distinct plain names: {folders}")
        return kind(**data)
    except TypeError as e:
        raise ValueError(f"bad {data['action']} request: {e}") from None
