"""Emulated block devices: the spec language (host side) and their creation (guest side).

A spec names a driver and its options, e.g.

    null_blk:irqmode=2,completion_nsec=200000,hw_queue_depth=4
    scsi_debug:dev_size_mb=256,delay=1
    vsim:cheapflash:preset=sd_a1,size=1g,dilation=50

`vsim:MODEL:...` serves one of the simulator's device models over NBD (vlab.devices.vsimdev).
Several devices are separated by `;` or newlines; a spec argument that names an
existing file is read from that file (`#` starts a comment). See docs/lab.md.
"""

from __future__ import annotations

import contextlib
import glob
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlab.devices import vsimdev

DRIVERS = ("null_blk", "scsi_debug", "vsim")

# Options the lab sets unless the spec says otherwise. poll_queues=0: null_blk adds a
# poll queue by default, and then submit_queues=1 would mean two hardware queues.
NULL_BLK_DEFAULTS: dict[str, str] = {"queue_mode": "2", "size": "1024", "poll_queues": "0"}
SCSI_DEBUG_DEFAULTS: dict[str, str] = {"dev_size_mb": "256"}

CONFIGFS = Path("/sys/kernel/config")
NULLB_CONFIGFS = CONFIGFS / "nullb"


class DeviceError(Exception):
    """A device spec that is malformed or that the guest kernel refuses."""


@dataclass(frozen=True)
class DeviceSpec:
    driver: str
    options: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        if self.driver == "vsim":
            rest = ",".join(f"{k}={v}" for k, v in self.options.items() if k != "model")
            return f"vsim:{self.options['model']}" + (f":{rest}" if rest else "")
        opts = ",".join(f"{k}={v}" for k, v in self.options.items())
        return f"{self.driver}:{opts}" if opts else self.driver

    def effective_options(self) -> dict[str, str]:
        defaults = NULL_BLK_DEFAULTS if self.driver == "null_blk" else SCSI_DEBUG_DEFAULTS
        return {**defaults, **self.options}


def parse_one(text: str) -> DeviceSpec:
    """Parse `driver[:key=value,...]`."""
    text = text.strip()
    driver, _, rest = text.partition(":")
    driver = driver.strip()
    if driver not in DRIVERS:
        raise DeviceError(f"unknown device driver {driver!r} in {text!r}: use one of {', '.join(DRIVERS)}")
    options: dict[str, str] = {}
    if driver == "vsim":
        model, _, rest = rest.partition(":")
        if not model.strip().isidentifier():
            raise DeviceError(f"{text!r}: a vsim device names a model: vsim:MODEL[:k=v,...] (see `./vsim list`)")
        options["model"] = model.strip()
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key or not value:
            raise DeviceError(f"bad option {item!r} in {text!r}: expected key=value")
        if not all(c.isalnum() or c == "_" for c in key):
            raise DeviceError(f"bad option name {key!r} in {text!r}")
        if not all(c.isalnum() or c in "-_.:" for c in value):
            raise DeviceError(f"bad value {value!r} for {key} in {text!r}")
        if driver == "vsim" and key == "model":
            raise DeviceError(f"{text!r}: the model is named after vsim:, not as an option")
        if key in options:
            raise DeviceError(f"option {key} given twice in {text!r}")
        options[key] = value
    return DeviceSpec(driver, options)


def parse_specs(text: str) -> list[DeviceSpec]:
    """Parse one or more specs separated by `;` or newlines; `#` starts a comment."""
    specs: list[DeviceSpec] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        specs.extend(parse_one(part) for part in line.split(";") if part.strip())
    return specs


def load_spec_args(args: list[str]) -> list[DeviceSpec]:
    """Each argument is a spec string or the path of a spec file."""
    specs: list[DeviceSpec] = []
    for arg in args:
        path = Path(arg)
        if "=" not in arg and ":" not in arg and path.is_file():
            try:
                specs.extend(parse_specs(path.read_text()))
            except DeviceError as e:
                raise DeviceError(f"{path}: {e}") from e
        else:
            specs.extend(parse_specs(arg))
    for s in specs:
        if s.driver == "vsim":
            try:
                vsimdev.check(s.options)
            except vsimdev.VsimDeviceError as e:
                raise DeviceError(f"{s}: {e}") from e
    scsi = [s for s in specs if s.driver == "scsi_debug"]
    if any(s.options != scsi[0].options for s in scsi[1:]):
        raise DeviceError("all scsi_debug devices share one set of module parameters: give them identical options")
    return specs


# ---------------------------------------------------------------- guest side


@dataclass(frozen=True)
class Device:
    """A block device created in the guest."""

    name: str  # e.g. nullb0, sda
    spec: str
    # A served vsim model: its info (size, queue depth, erase block, dilation) and where
    # its counters, log and info files are.
    served: dict[str, Any] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return f"/dev/{self.name}"

    def host_nr_requests(self) -> int | None:
        """The nr_requests an elevator gets on a served model's real host where that host's
        driver gives the block layer more tags than the device takes at once and the
        transport gives fewer: an SD card on Linux's mmc driver has 64 tags and takes one
        command at a time, so 2 x min(64, 128) = 128 requests wait in the scheduler; served
        over ublk at the card's own depth, the kernel would give it 2. The figure is the
        model's own (`elevator_nr_requests`, what vsim's engine sets; docs/lab.md,
        "Transports"). None elsewhere."""
        tags = int(self.served.get("host_tags") or 0)
        hw = int((self.served.get("limits") or {}).get("depth") or 0)
        n = self.served.get("elevator_nr_requests")
        return int(n) if n and hw and tags > hw else None

    @property
    def queue(self) -> Path:
        return Path("/sys/block") / self.name / "queue"

    def describe(self) -> dict[str, object]:
        attrs = {}
        for attr in ("scheduler", "nr_requests", "rotational", "logical_block_size", "max_sectors_kb"):
            with contextlib.suppress(OSError):
                attrs[attr] = (self.queue / attr).read_text().strip()
        hctx = Path("/sys/block") / self.name / "mq"
        nr_hw = sum(p.name.isdigit() for p in hctx.iterdir()) if hctx.is_dir() else 0
        extra = {"served": self.served} if self.served else {}
        return {"name": self.name, "path": self.path, "spec": self.spec, "nr_hw_queues": nr_hw, **attrs, **extra}


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def _modprobe(module: str, params: list[str] | None = None) -> None:
    proc = _run(["modprobe", module, *(params or [])])
    if proc.returncode != 0:
        raise DeviceError(f"modprobe {module} {' '.join(params or [])} failed: {proc.stderr.strip()}")


def _ensure_configfs() -> None:
    if not os.path.ismount(CONFIGFS):
        _run(["modprobe", "configfs"])
        proc = _run(["mount", "-t", "configfs", "configfs", str(CONFIGFS)])
        if proc.returncode != 0:
            raise DeviceError(f"cannot mount configfs on {CONFIGFS}: {proc.stderr.strip()}")


def _create_null_blk(spec: DeviceSpec) -> Device:
    _ensure_configfs()
    if not NULLB_CONFIGFS.is_dir():
        # nr_devices=0: only the devices we configure exist.
        _modprobe("null_blk", ["nr_devices=0"])
    if not NULLB_CONFIGFS.is_dir():
        raise DeviceError(f"null_blk loaded but {NULLB_CONFIGFS} is missing")
    index = 0
    while (NULLB_CONFIGFS / f"nullb{index}").exists():
        index += 1
    item = NULLB_CONFIGFS / f"nullb{index}"
    item.mkdir()
    valid = sorted(p.name for p in item.iterdir())
    for key, value in spec.effective_options().items():
        if key in ("power", "index"):
            raise DeviceError(f"null_blk option {key} is managed by the lab")
        if key not in valid and key in NULL_BLK_DEFAULTS and key not in spec.options:
            continue  # a default this kernel does not know
        if key not in valid:
            raise DeviceError(f"null_blk has no option {key!r}; this kernel offers: {', '.join(valid)}")
        try:
            (item / key).write_text(value)
        except OSError as e:
            raise DeviceError(f"null_blk rejected {key}={value}: {e.strerror}") from e
    try:
        (item / "power").write_text("1")
    except OSError as e:
        raise DeviceError(f"null_blk device {spec} did not power on: {e.strerror}") from e
    # Older kernels name the disk nullb<index>, newer ones after the configfs item.
    names = [item.name, f"nullb{(item / 'index').read_text().strip()}"]
    found = _wait_for(lambda: [n for n in names if Path(f"/sys/block/{n}").exists()][:1], " or ".join(names))
    return Device(found[0], str(spec))


def _scsi_debug_disks() -> set[str]:
    disks = set()
    for model in glob.glob("/sys/block/sd*/device/model"):
        if Path(model).read_text().strip() == "scsi_debug":
            disks.add(Path(model).parts[3])
    return disks


def _create_scsi_debug(spec: DeviceSpec) -> list[Device]:
    # The disk driver first: a new host's disk otherwise waits for the kernel to load sd_mod on
    # its own (an asynchronous request_module), which took over 30 s in a TCG guest beside
    # another (6.12, 2026-12-07: the host attached at 344 s, no disk by 374 s).
    _modprobe("sd_mod")
    before = _scsi_debug_disks()
    if Path("/sys/module/scsi_debug").is_dir():
        Path("/sys/bus/pseudo/drivers/scsi_debug/add_host").write_text("1")
    else:
        info = _run(["modinfo", "-F", "parm", "scsi_debug"])
        valid = sorted(line.split(":", 1)[0] for line in info.stdout.splitlines() if line)
        opts = spec.effective_options()
        unknown = [k for k in opts if valid and k not in valid]
        if unknown:
            raise DeviceError(f"scsi_debug has no parameter {unknown[0]!r}; it offers: {', '.join(valid)}")
        _modprobe("scsi_debug", [f"{k}={v}" for k, v in opts.items()])
    new = _wait_for(lambda: sorted(_scsi_debug_disks() - before), "a new scsi_debug disk")
    return [Device(name, str(spec)) for name in new]


# How long a new device may take to appear: a wait, not a judgement of speed, so as long as a
# slow guest (single-threaded TCG beside another guest) can need.
DEVICE_WAIT_S = 120.0


def _wait_for(probe: Callable[[], list[str]], what: str, timeout: float = DEVICE_WAIT_S) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found and all(Path(f"/dev/{n}").exists() for n in found):
            return list(found)
        time.sleep(0.1)
    raise DeviceError(f"timed out after {timeout:.0f} s waiting for {what}")


def _create_vsim(spec: DeviceSpec, workdir: Path) -> Device:
    try:
        disk, server, info = vsimdev.start(spec.options, workdir)
    except vsimdev.VsimDeviceError as e:
        raise DeviceError(f"{spec}: {e}") from e
    served = {
        **info,  # with "transport": ublk or nbd
        "timeout_s": server.timeout_s,
        "dir": str(workdir),
        "counters": str(server.counters),
    }
    return Device(disk, str(spec), served)


def create_all(specs: list[DeviceSpec], out: Path | None = None) -> list[Device]:
    """Create every device in order (guest side, as root). Served vsim models keep their
    files in OUT/vsimN/ (a temporary directory without OUT)."""
    devices: list[Device] = []
    served = 0
    for spec in specs:
        if spec.driver == "null_blk":
            devices.append(_create_null_blk(spec))
        elif spec.driver == "vsim":
            base = out if out is not None else Path("/tmp")
            devices.append(_create_vsim(spec, base / f"vsim{served}"))
            served += 1
        else:
            devices.extend(_create_scsi_debug(spec))
    return devices


def stop_all() -> list[str]:
    """Stop every served device (guest side); returns problems met, if any."""
    return vsimdev.stop_all()
