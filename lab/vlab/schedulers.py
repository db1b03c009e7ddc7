"""I/O schedulers in the guest: which a queue offers, loading their modules, selecting one."""

from __future__ import annotations

import dataclasses
import functools
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from vlab.paths import repo_root

# Scheduler name -> module that provides it (mq-deadline is built into Debian's kernels).
MODULES = {"mq-deadline": "mq-deadline", "kyber": "kyber-iosched", "bfq": "bfq"}
IN_TREE = ("none", "mq-deadline", "kyber", "bfq")


class SchedulerError(Exception):
    pass


@dataclass(frozen=True)
class Tunable:
    """A scheduler's tunable as declared: its sysfs name, default, range, unit, help."""

    name: str
    default: int
    min: int
    max: int
    unit: str
    help: str

    @property
    def is_time(self) -> bool:
        return self.unit in ("ms", "us", "ns")


# The kernel's time tunables of the in-tree schedulers whose models declare none (vsim's bfq
# and kyber have no tunables), as their sysfs files name them (block/bfq-iosched.c,
# block/kyber-iosched.c: bfq's slice_idle is slice_idle_us in ms, so only the latter).
KERNEL_TIME_TUNABLES = {
    "bfq": ("slice_idle_us", "timeout_sync", "fifo_expire_sync", "fifo_expire_async"),
    "kyber": ("read_lat_nsec", "write_lat_nsec"),
}


@functools.cache
def declared_tunables(scheduler: str) -> dict[str, Tunable]:
    """`scheduler`'s sysfs tunables as the simulator declares them (its Python API,
    `vsim.tunables`, as `vsim list --json`), in sysfs order. veloces's are the module's own
    table, kernel/veloces-tunables.h, which the module and the simulator are both built from:
    the lab reads it here, never a copy."""
    import vsim  # the wheel `make deps` builds and installs into build/venv

    try:
        declared = vsim.tunables(scheduler)
    except vsim.ConfigError as e:
        raise SchedulerError(str(e)) from None
    # The simulator says which are sysfs files (`sysfs`: veloces's model-only `hz` is not).
    fields = {f.name for f in dataclasses.fields(Tunable)}
    return {t["name"]: Tunable(**{k: v for k, v in t.items() if k in fields}) for t in declared if t.get("sysfs", True)}


def time_tunables(scheduler: str) -> tuple[str, ...]:
    """`scheduler`'s tunables that are times (ms, us, ns): declared by the simulator, or for
    bfq and kyber the kernel's (KERNEL_TIME_TUNABLES); none for an unknown scheduler."""
    if scheduler in KERNEL_TIME_TUNABLES:
        return KERNEL_TIME_TUNABLES[scheduler]
    try:
        return tuple(k for k, t in declared_tunables(scheduler).items() if t.is_time)
    except SchedulerError:
        return ()


def max_time_scale(names: list[str]) -> float:
    """The largest dilation at which every declared time tunable of these schedulers, at its
    default, still holds in model time: its default x the dilation within its sysfs range
    (veloces: prio_aging_expire 10,000 of 3,600,000 ms, so 360). Beyond it the scaled write
    is refused (-EINVAL), as a cheap-card cell calibrated to 770 was (2026-11-28)."""
    caps = [
        t.max / t.default for n in names for t in _declared_or_none(parse(n)[0]).values() if t.is_time and t.default > 0
    ]
    return min(caps) if caps else float("inf")


def _declared_or_none(scheduler: str) -> dict[str, Tunable]:
    try:
        return declared_tunables(scheduler)
    except SchedulerError:
        return {}


def parse_list(arg: str) -> list[str]:
    """A comma-separated list of scheduler specs (`--schedulers`), split as the simulator
    splits one (`vsim.split_specs`: `none,veloces:bundle_kb=256,read_expire=10` is two),
    each checked by parse(); distinct. Raises SchedulerError."""
    import vsim

    try:
        specs = vsim.split_specs(arg)
    except vsim.ConfigError as e:
        raise SchedulerError(f"--schedulers {arg!r}: {e}") from None
    if len(set(specs)) != len(specs):
        raise SchedulerError(f"--schedulers must list distinct schedulers, got {arg!r}")
    for spec in specs:
        parse(spec)
    return specs


def parse(spec: str) -> tuple[str, dict[str, str]]:
    """A scheduler, or a variant of one with its tunables set after selection, in the
    simulator's grammar: `veloces:bundle_expire_us=500,read_expire=50` -> ("veloces", {...})
    (the older `NAME:K=V:K=V` still reads the same). A variant is compared as a scheduler of
    its own, so a sweep of settings rotates like any comparison. Raises SchedulerError for a
    malformed spec; the guest rejects unknown names and values."""
    name, colon, rest = spec.partition(":")
    items = [i for part in rest.split(",") for i in part.split(":")] if colon else []
    if not name or not all(c.isalnum() or c in "_-" for c in name):
        raise SchedulerError(f"bad scheduler {spec!r}: want NAME or NAME:TUNABLE=VALUE[,TUNABLE=VALUE...]")
    settings: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key or not value or not all(c.isalnum() or c == "_" for c in key) or not value.isascii():
            raise SchedulerError(f"bad tunable {item!r} in scheduler {spec!r}: want TUNABLE=VALUE")
        if key in settings:
            raise SchedulerError(f"tunable {key!r} given twice in scheduler {spec!r}")
        settings[key] = value
    if settings and name == "none":
        raise SchedulerError(f"bad scheduler {spec!r}: none has no tunables")
    return name, settings


def _queue_file(disk: str) -> Path:
    return Path("/sys/block") / disk / "queue" / "scheduler"


def offered(disk: str) -> list[str]:
    """Schedulers the queue offers, as listed in queue/scheduler."""
    return [s.strip("[]") for s in _queue_file(disk).read_text().split()]


def current(disk: str) -> str:
    for s in _queue_file(disk).read_text().split():
        if s.startswith("["):
            return s.strip("[]")
    return "none"


def module_path(name: str, release: str) -> Path:
    """Where an out-of-tree scheduler module built by `make -C kernel` lives: veloces, or a
    benchmark-only elevator such as vfifo (`make -C kernel bench-modules`, never installed)."""
    build = repo_root() / "kernel" / "build" / release
    bench = build / "bench" / f"{name}.ko"
    return bench if bench.exists() else build / f"{name}.ko"


def load(name: str) -> None:
    """Make `name` available: modprobe the in-tree module, or insmod our own build."""
    if name in MODULES:
        subprocess.run(["modprobe", MODULES[name]], capture_output=True, check=False)
        return
    ko = module_path(name, os.uname().release)
    if ko.exists() and not Path("/sys/module", name).exists():
        proc = subprocess.run(["insmod", str(ko)], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SchedulerError(f"insmod {ko} failed: {proc.stderr.strip()}")


def require(disk: str, specs: list[str]) -> None:
    """Load every scheduler in `specs` (names or variants); raise with the offered list if
    one is missing."""
    names = list(dict.fromkeys(parse(s)[0] for s in specs))
    for name in names:
        load(name)
    missing = [n for n in names if n not in offered(disk)]
    if missing:
        for name in MODULES:  # so the message lists every scheduler the kernel has
            load(name)
        have = offered(disk)
        raise SchedulerError(
            f"unknown scheduler {', '.join(repr(m) for m in missing)} for {disk}: it offers {', '.join(have)}"
        )
    # A variant's tunables must exist before any run starts, not fail half-way through:
    # one selection per scheduler checks all of its variants.
    variants: dict[str, list[tuple[str, dict[str, str]]]] = {}
    for spec in specs:
        name, wanted = parse(spec)
        if wanted:
            variants.setdefault(name, []).append((spec, wanted))
    for name, those in variants.items():
        select(disk, name)
        known = tunables(disk)
        for spec, wanted in those:
            bad = [k for k in wanted if k not in known]
            if bad:
                raise SchedulerError(
                    f"{spec}: {name} has no tunable {', '.join(repr(b) for b in bad)}; it has {', '.join(known)}"
                )


def tunables(disk: str) -> dict[str, str]:
    """The selected scheduler's tunables and their values (none has none), and the queue's
    writeback-throttling target as `queue/wbt_lat_usec` where the kernel has wbt."""
    queue = _queue_file(disk).parent
    d = queue / "iosched"
    got = {p.name: p.read_text().strip() for p in sorted(d.iterdir())} if d.is_dir() else {}
    if (wbt := queue / "wbt_lat_usec").exists():
        got["queue/wbt_lat_usec"] = wbt.read_text().strip()
    return got


# A tunable an elevator derives from q->nr_requests in its depth_updated(), which
# blk_mq_update_nr_requests() calls before it sets q->nr_requests (6.1.192, 6.12.117):
# after a write of nr_requests it holds the old value, where the elevator's init (which
# sets q->nr_requests first) gives it the new one. mq-deadline: async_depth = nr_requests.
_FROM_NR_REQUESTS = {"mq-deadline": "async_depth"}


def _write_checked(path: Path, value: str) -> None:
    """Write a queue attribute and check that it holds; either failure raises, naming it."""
    try:
        path.write_text(value)
    except OSError as e:
        raise SchedulerError(f"writing {value} to {path} failed: {e.strerror}") from e
    if (now := path.read_text().strip()) != value:
        raise SchedulerError(f"wrote {value} to {path} but it reads {now}")


def set_nr_requests(disk: str, n: int) -> None:
    """Write queue/nr_requests (an elevator's tags; the kernel sets them anew at each
    switch), check that it holds, and give a tunable derived from it the value the
    elevator's init would have given (`_FROM_NR_REQUESTS`)."""
    queue = _queue_file(disk).parent
    _write_checked(queue / "nr_requests", str(n))
    derived = queue / "iosched" / _FROM_NR_REQUESTS.get(current(disk), "-")
    if derived.exists():
        try:
            derived.write_text(str(n))
        except OSError as e:
            raise SchedulerError(f"writing {n} to {derived} failed: {e.strerror}") from e


def select(disk: str, spec: str, time_scale: float = 1.0, nr_requests: int | None = None) -> None:
    """Select a scheduler, then set a variant's tunables (selecting starts from the
    scheduler's defaults). A value the scheduler refuses raises, naming it.

    `time_scale` (a served device's dilation): each of the scheduler's time tunables
    (`time_tunables`), its default or the variant's value, is written times it, so that it
    holds in the device's (model) time as it would on the real device: at dilation 15 a
    1 MiB write to the A1 card takes 1.5 s of wall time, longer than veloces's 1-s
    write_expire or 0.1 of bfq's fifo_expire_async would allow for.

    `nr_requests` (a served device's `Device.host_nr_requests`): written after an elevator
    is selected and before the variant's tunables (which may set what `set_nr_requests`
    derives from it)."""
    name, settings = parse(spec)
    if name != "none" and current(disk) == name:
        # Writing the current name is a no-op in elevator_change(): the elevator, and the
        # tunables of the variant before, would stay. Every run starts from a fresh one.
        select(disk, "none")
    try:
        _queue_file(disk).write_text(name)
    except OSError as e:
        raise SchedulerError(f"writing {name!r} to {_queue_file(disk)} failed: {e.strerror}") from e
    now = current(disk)
    if now != name:
        raise SchedulerError(f"selected {name!r} but {_queue_file(disk)} shows {now!r}")
    if nr_requests is not None and name != "none":
        set_nr_requests(disk, nr_requests)
    settings = dict(settings)
    if time_scale != 1.0:
        iosched = _queue_file(disk).parent / "iosched"
        for key in time_tunables(name):
            path = iosched / key
            if key in settings or path.exists():
                base = settings.get(key) or path.read_text().strip()
                settings[key] = str(round(int(base) * time_scale))
    for key, value in settings.items():
        path = _queue_file(disk).parent / "iosched" / key
        try:
            path.write_text(value)
        except OSError as e:
            raise SchedulerError(f"{spec}: writing {value!r} to {path} failed: {e.strerror}") from e
        now = path.read_text().strip()
        if now != value:  # e.g. mq-deadline keeps expiries in jiffies
            print(f"vlab: {spec}: {key} reads {now!r} after writing {value!r}", flush=True)
    if time_scale != 1.0:
        wbt_off(disk)


def wbt_off(disk: str) -> bool:
    """Turn writeback throttling off on a dilated device (queue/wbt_lat_usec = 0), for
    every scheduler; whether the kernel has wbt (the file) at all.

    Its clock cannot follow the dilation. wbt steps buffered writeback down when a read
    outlasts its latency target (2 ms on flash) or one sync read stays in flight past its
    100-ms window; both are wall time, and the window is compiled in. On the SATA model at
    dilation 90 (a window of 1.1 ms of the device's time) seed 001's ext4 fileserver and
    varmail runs under mq-deadline had wbt step down to one write in flight in 7 of 8 runs,
    with the target as it is and with it times the dilation alike (9-22 steps a run, up to
    1,400 windows judged over latency; 2026-11-29, docs/lab.md "Writeback throttling is off
    on a dilated device"), where bfq and veloces, which turn wbt off, ran unthrottled.
    So on a dilated device no scheduler runs with it (the seeds' kernels, before Linux
    4.10, had none). A write makes the state the queue's (the kernel marks it
    manual: the elevators' own wbt_disable/enable_default() no longer act): it is written
    at every selection."""
    path = _queue_file(disk).parent / "wbt_lat_usec"
    if not path.exists():
        return False
    _write_checked(path, "0")
    return True
