from pathlib import Path

import pytest

from vlab.devices.spec import Device, DeviceError, DeviceSpec, load_spec_args, parse_one, parse_specs


def test_parse_null_blk_spec() -> None:
    spec = parse_one("null_blk:irqmode=2, completion_nsec=100000,hw_queue_depth=4")
    assert spec == DeviceSpec("null_blk", {"irqmode": "2", "completion_nsec": "100000", "hw_queue_depth": "4"})
    assert spec.effective_options()["queue_mode"] == "2"
    assert str(spec) == "null_blk:irqmode=2,completion_nsec=100000,hw_queue_depth=4"


def test_several_devices_and_comments() -> None:
    specs = parse_specs("null_blk # first\nscsi_debug:dev_size_mb=64;null_blk:submit_queues=2\n\n# done")
    assert [s.driver for s in specs] == ["null_blk", "scsi_debug", "null_blk"]
    assert specs[0].options == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nvme:size=1", "unknown device driver"),
        ("null_blk:size", "expected key=value"),
        ("null_blk:size=", "expected key=value"),
        ("null_blk:size=1,size=2", "given twice"),
        ("null_blk:bad-name=1", "bad option name"),
        ("null_blk:size=1;rm", "unknown device driver"),
        ("scsi_debug:opts=$(reboot)", "bad value"),
    ],
)
def test_bad_specs_are_clear_errors(text: str, message: str) -> None:
    with pytest.raises(DeviceError, match=message):
        parse_specs(text)


def test_spec_file(tmp_path: Path) -> None:
    f = tmp_path / "two.dev"
    f.write_text("# two devices\nnull_blk:size=64\nscsi_debug:delay=0\n")
    assert [s.driver for s in load_spec_args([str(f)])] == ["null_blk", "scsi_debug"]
    f.write_text("null_blk:size=64\nbogus\n")
    with pytest.raises(DeviceError, match=str(f)):
        load_spec_args([str(f)])


def test_scsi_debug_devices_must_share_options() -> None:
    assert len(load_spec_args(["scsi_debug:delay=1", "scsi_debug:delay=1"])) == 2
    with pytest.raises(DeviceError, match="identical options"):
        load_spec_args(["scsi_debug:delay=1", "scsi_debug:delay=2"])


def test_demo_device_file_parses() -> None:
    demo = Path(__file__).resolve().parents[1] / "devices" / "demo.dev"
    (spec,) = load_spec_args([str(demo)])
    assert spec.options["hw_queue_depth"] == "4"


def test_a_served_card_gets_its_hosts_nr_requests_only_where_the_transport_gives_fewer() -> None:
    """Linux's mmc driver gives an SD card 64 tags (2 x 64 = 128 under an elevator) where a
    ublk device at the card's depth of 1 would give 2; NBD's 128 tags and a model without
    host tags (the SSD's NCQ 32 is its host's) are left as the kernel sets them."""
    card = {"host_tags": 64, "elevator_nr_requests": 128, "limits": {"depth": 1, "queues": 1}, "transport": "ublk"}
    assert Device("ublkb0", "vsim:cheapflash", card).host_nr_requests() == 128
    nbd = {"host_tags": 64, "elevator_nr_requests": 128, "transport": "nbd"}
    assert Device("nbd0", "vsim:cheapflash", nbd).host_nr_requests() is None
    ssd = {"host_tags": None, "elevator_nr_requests": 64, "limits": {"depth": 32, "queues": 1}, "transport": "ublk"}
    assert Device("ublkb0", "vsim:ssd", ssd).host_nr_requests() is None
    assert Device("nullb0", "null_blk").host_nr_requests() is None
