"""veloces's tunables are declared once (kernel/veloces-tunables.h): the module and the
simulator are built from it, and the lab reads it through the simulator. These tests hold
the copies that remain for people — docs/kernel.md's table — and the lab's reader to it."""

import re
from pathlib import Path

import pytest
from conftest import REPO

from vlab import schedulers
from vlab.checks.conformance import MODULE
from vlab.schedulers import declared_tunables


def header_rows() -> dict[str, tuple[int, int, int]]:
    """(default, min, max) per VEL_TUNABLE line of the header, read directly (no build)."""
    text = (REPO / "kernel" / "veloces-tunables.h").read_text()
    rows = re.findall(r"^VEL_TUNABLE\((\w+), (\d+), (\d+), (\d+), [01], ", text, re.M)
    return {n: (int(d), int(lo), int(hi)) for n, d, lo, hi in rows}


def test_the_simulator_declares_the_modules_table_in_its_order() -> None:
    declared = declared_tunables(MODULE)
    assert list(declared) == list(header_rows())
    assert {k: (t.default, t.min, t.max) for k, t in declared.items()} == header_rows()
    # The model's own hz is no sysfs file: the simulator says so (`sysfs`), the lab skips it.
    import vsim

    assert {t["name"] for t in vsim.tunables(MODULE) if not t["sysfs"]} == {"hz"} and "hz" not in declared


def test_the_docs_table_has_every_tunable_with_its_range_and_default() -> None:
    text = (REPO / "docs" / "kernel.md").read_text()
    section = text[text.index("## Tunables (`/sys/block/<dev>/queue/iosched/`)") :]
    section = section[: section.index("\n\n", section.index("|---"))]
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \| ([^|]+) \|", section, re.M)
    assert [r[0] for r in rows] == list(header_rows())
    for name, default, accepted in rows:
        d, lo, hi = header_rows()[name]
        if lo == 0 and hi == 1:
            assert accepted.strip() == "0, 1", name
        else:
            assert re.match(rf"{lo}\u2013{hi}\b", accepted.strip()), (name, accepted)
        if default.strip().isdigit() or re.match(r"\d+ \(", default.strip()):
            assert int(default.split()[0]) == d, (name, default)


class FakeQueue:
    """A disk's queue/ as sysfs shows it after a scheduler is selected: `scheduler` lists it
    in brackets, `iosched/` holds its tunables at their defaults (the writes stay)."""

    def __init__(self, root: Path, defaults: dict[str, dict[str, str]]) -> None:
        self.root, self.defaults = root, defaults

    def scheduler_file(self, disk: str) -> Path:
        return self.root / disk / "queue" / "scheduler"

    def select(self, name: str) -> None:
        iosched = self.root / "sdx" / "queue" / "iosched"
        for f in iosched.glob("*"):
            f.unlink()
        iosched.mkdir(parents=True, exist_ok=True)
        for k, v in self.defaults.get(name, {}).items():
            (iosched / k).write_text(v + "\n")


def test_a_served_devices_dilation_scales_every_time_tunable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    defaults = {
        "bfq": {"slice_idle": "8", "slice_idle_us": "8000", "timeout_sync": "125", "fifo_expire_sync": "125",
                "fifo_expire_async": "250", "back_seek_max": "16384", "low_latency": "1"},
        "veloces": {k: str(t.default) for k, t in declared_tunables(MODULE).items()},
    }  # fmt: skip
    fake = FakeQueue(tmp_path, defaults)
    queue = fake.scheduler_file("sdx")
    queue.parent.mkdir(parents=True)

    def write_name(disk: str) -> Path:
        return queue

    monkeypatch.setattr(schedulers, "_queue_file", write_name)
    monkeypatch.setattr(schedulers, "current", lambda disk: queue.read_text().strip() if queue.exists() else "none")
    real_write = Path.write_text

    def on_write(self: Path, data: str, *a: object, **k: object) -> int:
        if self == queue:
            fake.select(data)
        return real_write(self, data)

    monkeypatch.setattr(Path, "write_text", on_write)
    iosched = queue.parent / "iosched"

    schedulers.select("sdx", "bfq", time_scale=15)
    got = {f.name: f.read_text().strip() for f in iosched.iterdir()}
    assert got["slice_idle_us"] == "120000" and got["timeout_sync"] == "1875"
    assert got["fifo_expire_sync"] == "1875" and got["fifo_expire_async"] == "3750"
    assert got["back_seek_max"] == "16384" and got["low_latency"] == "1", "not times: unchanged"

    # A variant's own values are model time too; counts and sizes are not scaled.
    schedulers.select("sdx", "veloces:write_expire=500,fifo_batch=4", time_scale=15)
    got = {f.name: f.read_text().strip() for f in iosched.iterdir()}
    assert got["write_expire"] == "7500" and got["read_expire"] == "1500"
    assert got["anticipate_us"] == "30000" and got["bundle_expire_us"] == "30000"
    assert got["fifo_batch"] == "4" and got["bundle_kb"] == defaults["veloces"]["bundle_kb"]

    # Dilation 1 (null_blk, or an undilated model) leaves the defaults alone.
    schedulers.select("sdx", "veloces", time_scale=1.0)
    assert (iosched / "write_expire").read_text().strip() == "1000"
    assert schedulers.time_tunables("none") == ()
    assert set(schedulers.time_tunables(MODULE)) == {k for k, t in declared_tunables(MODULE).items() if t.is_time}


def test_writeback_throttling_is_off_for_every_scheduler_on_a_dilated_device(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeQueue(tmp_path, {"mq-deadline": {"read_expire": "500", "write_expire": "5000"}})
    queue = fake.scheduler_file("sdx")
    queue.parent.mkdir(parents=True)
    wbt = queue.parent / "wbt_lat_usec"
    monkeypatch.setattr(schedulers, "_queue_file", lambda disk: queue)
    monkeypatch.setattr(schedulers, "current", lambda disk: queue.read_text().strip() if queue.exists() else "none")
    real_write = Path.write_text
    written: list[str] = []
    kernel_has_wbt = [True]

    def on_write(self: Path, data: str, *a: object, **k: object) -> int:
        if self == queue:
            fake.select(data)
            # The kernel's default state: on (2 ms on flash) but for bfq and veloces.
            if kernel_has_wbt[0]:
                real_write(wbt, "0\n" if data in ("bfq", MODULE) else "2000\n")
        if self == wbt:
            written.append(data)
        return real_write(self, data)

    monkeypatch.setattr(Path, "write_text", on_write)

    for name in ("mq-deadline", "none", "kyber", "bfq", MODULE):
        written.clear()
        schedulers.select("sdx", name, time_scale=90)
        assert written == ["0"] and wbt.read_text().strip() == "0", name
        assert schedulers.tunables("sdx")["queue/wbt_lat_usec"] == "0"

    # Dilation 1 (null_blk, an undilated model) leaves the kernel's own state alone.
    written.clear()
    schedulers.select("sdx", "mq-deadline", time_scale=1.0)
    assert written == [] and schedulers.tunables("sdx")["queue/wbt_lat_usec"] == "2000"
    # A kernel without wbt: nothing to write, and the record says nothing of it.
    kernel_has_wbt[0] = False
    wbt.unlink()
    assert schedulers.wbt_off("sdx") is False
    schedulers.select("sdx", "kyber", time_scale=90)
    assert "queue/wbt_lat_usec" not in schedulers.tunables("sdx")
