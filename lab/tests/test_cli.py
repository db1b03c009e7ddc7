"""Errors vlab reports before booting anything."""

from dataclasses import replace
from pathlib import Path

import pytest
from conftest import REPO

from vlab import schedulers
from vlab.cli import main
from vlab.machine import kernels

JOB = str(REPO / "lab" / "jobs" / "mixed-randrw.fio")
DEV = "null_blk:size=64"


def test_unknown_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--kernel", "5.10", "--", "true"]) == 2
    assert "unknown kernel '5.10'" in capsys.readouterr().err


def test_kernel_not_installed_names_package(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ghost = replace(kernels.KERNELS["6.1"], release="0.0.0-ghost-amd64", image_pkg="linux-image-0.0.0-ghost-amd64")
    monkeypatch.setitem(kernels.KERNELS, "6.1", ghost)
    assert main(["run", "--kernel", "6.1", "--", "true"]) == 2
    err = capsys.readouterr().err
    assert "not installed" in err and "linux-image-0.0.0-ghost-amd64" in err


def test_invalid_fio_job_gives_fios_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.fio"
    bad.write_text("[x]\nrw=sideways\n")
    assert main(["compare", "--device", DEV, "--job", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "fio rejected" in err and "rw=sideways" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--schedulers", "none,none"], "distinct"),
        (["--schedulers", "kyber,bfq", "--baseline", "none"], "baseline 'none'"),
        (["--repeat", "0"], "--repeat"),
        (["--runtime", "-1"], "--runtime"),
        (["--device", "floppy"], "unknown device driver"),
    ],
)
def test_compare_argument_errors(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--device", DEV, "--job", JOB, *args]) == 2
    assert message in capsys.readouterr().err


def test_run_needs_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--"]) == 2
    assert "no command" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("veloces:read_expire", "want TUNABLE=VALUE"),
        ("veloces:read_expire=5:read_expire=6", "given twice"),
        ("none:x=1", "none has no tunables"),
        ("veloces:../x=1", "bad tunable"),
        (":read_expire=5", "bad scheduler"),
    ],
)
def test_bad_scheduler_variant(spec: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--device", DEV, "--job", JOB, "--schedulers", f"none,{spec}"]) == 2
    assert message in capsys.readouterr().err


def test_variant_parses_to_scheduler_and_tunables() -> None:
    assert schedulers.parse("kyber") == ("kyber", {})
    assert schedulers.parse("veloces:bundle_expire_us=500:read_expire=50") == (
        "veloces",
        {"bundle_expire_us": "500", "read_expire": "50"},
    )


def test_variant_takes_the_simulators_grammar_and_lists_split_as_vsim_splits_them() -> None:
    comma = schedulers.parse("veloces:bundle_expire_us=500,read_expire=50")
    assert comma == schedulers.parse("veloces:bundle_expire_us=500:read_expire=50")
    assert schedulers.parse_list("none,veloces:bundle_kb=256,read_expire=10,kyber") == [
        "none", "veloces:bundle_kb=256,read_expire=10", "kyber"
    ]  # fmt: skip
    for bad, message in [("read_expire=10,none", "before any name"), ("none,kyber,none", "distinct"),
                         ("none,,kyber", "empty item"), ("none,veloces:", "want TUNABLE=VALUE")]:  # fmt: skip
        with pytest.raises(schedulers.SchedulerError, match=message):
            schedulers.parse_list(bad)


def test_compare_accepts_a_variant_with_comma_separated_tunables(capsys: pytest.CaptureFixture[str]) -> None:
    # The tunables after the variant's first comma are its own (before, every comma split the
    # list): one given twice is named in that variant, before anything boots.
    spec = "veloces:bundle_kb=256,read_expire=5,read_expire=6"
    rc = main(["compare", "--device", DEV, "--job", JOB, "--schedulers", f"none,{spec}"])
    err = capsys.readouterr().err
    assert rc == 2 and f"tunable 'read_expire' given twice in scheduler '{spec}'" in err, err


def test_dry_run_prints_the_boot_and_the_request_and_boots_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    spec = "veloces:bundle_kb=256,read_expire=10"
    rc = main(["compare", "--dry-run", "--device", DEV, "--job", JOB, "--schedulers", f"none,{spec}",
               "--out", str(out)])  # fmt: skip
    printed = capsys.readouterr().out
    assert rc == 0 and not out.exists()
    assert '"action": "compare"' in printed and f'"{spec}"' in printed
    assert "--run /boot/vmlinuz-" in printed and "-m vlab.machine.guest" in printed
    # A bad request still fails: the dry run checks what a real run would.
    assert main(["compare", "--dry-run", "--device", DEV, "--job", JOB, "--schedulers", "none,none"]) == 2


def test_run_possible_cpus_reaches_qemus_smp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The module suite's shared boot asks for 8 possible CPUs (deep_device): QEMU's maxcpus.
    out = tmp_path / "out"
    assert main(["run", "--dry-run", "--cpus", "2", "--possible-cpus", "8", "--out", str(out), "--", "true"]) == 0
    assert "--cpus 2,maxcpus=8" in capsys.readouterr().out
    assert main(["run", "--dry-run", "--cpus", "2", "--out", str(out), "--", "true"]) == 0
    printed = capsys.readouterr().out
    assert "--cpus 2 " in printed and "maxcpus" not in printed
    # Commands without the option boot through the same path (vlab trace did not, once).
    assert main(["trace", "--dry-run", "--out", str(out), "--", "true"]) == 0
    assert "maxcpus" not in capsys.readouterr().out
