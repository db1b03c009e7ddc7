"""vsim tune's settings (issue 76): the udev rule (run as root) and the sysfs script a spec
writes. Every string of the spec that reaches them is held to a grammar when the spec loads
and again before writing; every rule carries the project's guards; no rule is empty."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import vsim
from vsim import sweep, tune

REPO = Path(__file__).resolve().parents[3]
JOB = REPO / "lab" / "jobs" / "tune-read-under-writes.fio"
SPEC = f"""
workload = "{JOB}"
device = "cheapflash:preset=sd_a1,size=512m"
runtime = "1s"
samples = 2
"""
SPACE = "\n[space]\nread_expire = [10, 100]\n"


def _toml(v: str) -> str:
    """A TOML basic string of v (JSON's escapes are TOML's: \\", \\\\, \\n, \\uXXXX)."""
    return json.dumps(v)


def _spec(tmp_path: Path, extra: str = "", space: str = SPACE) -> Path:
    p = tmp_path / "spec.toml"
    p.write_text(SPEC + extra + space)
    return p


def _guards() -> list[str]:
    """The conditions of the project's rule (kernel/udev/60-veloces.rules) but its KERNEL match:
    the disks it leaves alone (rotational, zoned, opted out) are the tuned rules' too."""
    text = (REPO / "kernel" / "udev" / "60-veloces.rules").read_text().replace("\\\n", " ")
    (rule,) = [ln for ln in text.splitlines() if ln.startswith("ACTION")]
    conds = [c.strip() for c in rule.split(",")]
    return [c for c in conds if ("==" in c or "!=" in c) and not c.startswith("KERNEL")]


RULE_KEY = re.compile(r'(ACTION|SUBSYSTEM|KERNEL|ENV\{[A-Z_]+\}|ATTR\{queue/[a-z_/]+\})(==|!=|=)"([^"\\]*)"')


def _rules(text: str) -> list[list[tuple[str, str, str]]]:
    """The rules of a rules file as (key, operator, value), each key of the few the tuned rules
    use: anything else (RUN, PROGRAM, IMPORT, a stray quote) fails here."""
    rules = []
    for ln in text.splitlines():
        if not ln or ln.startswith("#"):
            continue
        keys = [RULE_KEY.fullmatch(k) for k in ln.split(", ")]
        assert all(keys), ln
        rules.append([(m[1], m[2], m[3]) for m in keys if m])
    return rules


# Strings that would end the KERNEL match, start a line, run a command or substitute; and
# ones that are not a glob at all. Each is refused.
UDEV_BAD = [
    'sd*", RUN+="/bin/touch /tmp/pwned',  # a quote ends the match: RUN+= runs as root
    "sd*,RUN+=/bin/sh",  # a comma and a RUN+=
    'sd*\nACTION=="add", RUN+="/bin/sh"',  # a newline starts a rule of its own
    "sd*\n",  # a trailing newline (a regex's `$` lets it through)
    "sd*\r",
    "$(touch /tmp/pwned)",
    "`touch /tmp/pwned`",
    "sd*;reboot",
    "sd* && reboot",
    "sd*\\",  # a backslash escapes the closing quote
    "sd*\x00",
    "sd*\x1b[2J",
    "sd\u2028x",  # a Unicode line separator
    "%k",  # udev's substitutions
    "$kernel",
    "sd*=",
    "sd* ",
    "sdé",
    "!sd*",
    "sd*||mmcblk*",  # an empty alternative matches the empty name
    "",
    "s" * 300,
]


@pytest.mark.parametrize("bad", UDEV_BAD)
def test_an_injected_udev_match_is_refused_naming_the_key(
    tmp_path: Path, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _spec(tmp_path, f"udev_match = {_toml(bad)}\n")
    with pytest.raises(sweep.SpecError, match=r"spec\.toml: udev_match: ") as e:
        tune.load_spec(p)
    # One line, the value shown escaped: the message is no injection either.
    assert "\n" not in str(e.value) and "\r" not in str(e.value)
    # `vsim tune` refuses it as every spec error: exit 2, the key named.
    assert tune.main([str(p), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vsim tune: error: ") and ": udev_match: " in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("key", "bad"),
    [
        ("scheduler", 'veloces", RUN+="/bin/sh'),
        ("scheduler", "veloces\n"),
        ("scheduler", "veloces;reboot"),
        ("scheduler", "../../etc/x"),
        ("scheduler", "Veloces"),
        ("scheduler", "not-a-scheduler"),
        ("name", 't\nACTION=="add", RUN+="/bin/sh"'),
        ("name", "t\rx"),
        ("name", "t\x00"),
        ("name", "t\u2028x"),
        ("name", "t\\"),
        ("name", ""),
        ("name", "t" * 300),
        ("objective", "read.p99_ns\nreboot"),
        ("device", "ssd\n$(reboot)"),
        ("device", "ssd\x1b"),
    ],
)
def test_injected_strings_in_other_keys_are_refused_naming_the_key(
    tmp_path: Path, key: str, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    p = tmp_path / "spec.toml"
    body = SPEC if key != "device" else SPEC.replace('device = "cheapflash:preset=sd_a1,size=512m"\n', "")
    p.write_text(body + f"{key} = {_toml(bad)}\n" + SPACE)
    with pytest.raises(sweep.SpecError, match=rf"spec\.toml: {key}: ") as e:
        tune.load_spec(p)
    assert "\n" not in str(e.value)
    assert tune.main([str(p), "--out", str(tmp_path / "out")]) == 2
    assert f": {key}: " in capsys.readouterr().err


def test_a_name_from_the_file_name_is_held_to_the_grammar_too(tmp_path: Path) -> None:
    p = tmp_path / "x\nRUN.toml"
    p.write_text(SPEC + SPACE)
    with pytest.raises(sweep.SpecError, match=": name: "):
        tune.load_spec(p)


@pytest.mark.parametrize(
    ("extra", "space", "key"),
    [
        ("", '\n[space]\n"read_expire\\", RUN+=\\"x" = [1, 2]\n', r"\[space\]"),
        ("", "\n[space]\nread_expire = [true, false]\n", r"\[space\] read_expire"),
        ("dilation = inf\n", SPACE, "dilation"),
        ("dilation = nan\n", SPACE, "dilation"),
        ('dilation = "5"\n', SPACE, "dilation"),
        ("dilation = 0.5\n", SPACE, "dilation"),
    ],
)
def test_tunables_and_dilation_are_checked(tmp_path: Path, extra: str, space: str, key: str) -> None:
    with pytest.raises(sweep.SpecError, match=rf"spec\.toml: {key}: "):
        tune.load_spec(_spec(tmp_path, extra, space))


@pytest.mark.parametrize("sched", ["veloces", "mq-deadline"])
def test_every_rule_carries_the_project_guards(tmp_path: Path, sched: str) -> None:
    """Whatever the scheduler, a rotational, zoned or opted-out disk is left alone; the
    tunables are written only where the tuned scheduler is in effect."""
    k = "read_expire"
    assert any(t["name"] == k and t["sysfs"] for t in vsim.tunables(sched))
    spec = tune.load_spec(_spec(tmp_path, f'scheduler = "{sched}"\n', f"\n[space]\n{k} = [10, 100]\n"))
    out = tmp_path / "out"
    out.mkdir()
    tune.write_settings(spec, {k: 42}, out)
    text = (out / f"61-{sched}-tuned.rules").read_text()
    lines = [ln for ln in text.splitlines() if ln.startswith("ACTION")]
    rules = _rules(text)
    assert len(rules) == len(lines) == 2
    guards = _guards()
    assert len(guards) == 6, guards  # ACTION, SUBSYSTEM, DEVTYPE, VELOCES_SKIP, rotational, zoned
    for ln, r in zip(lines, rules, strict=True):
        for g in guards:
            assert g in ln, (g, ln)
        assert ("KERNEL", "==", spec.udev_match) in r
    assert rules[0][-1] == ("ATTR{queue/scheduler}", "=", sched)
    assert rules[1][-2:] == [("ATTR{queue/scheduler}", "==", f"*{sched}]*"), (f"ATTR{{queue/iosched/{k}}}", "=", "42")]
    assert f"/etc/udev/rules.d/61-{sched}-tuned.rules" in text
    sh = (out / f"{sched}-tuned.sh").read_text()
    assert f"echo {sched} > /sys/block/$dev/queue/scheduler\necho 42 > /sys/block/$dev/queue/iosched/{k}\n" in sh


def test_the_defaults_write_no_empty_rule(tmp_path: Path) -> None:
    spec = tune.load_spec(_spec(tmp_path))
    out = tmp_path / "out"
    out.mkdir()
    tune.write_settings(spec, {}, out)
    text = (out / "61-veloces-tuned.rules").read_text()
    rules = _rules(text)
    assert len(rules) == 1
    # Each rule assigns something: the one left sets the scheduler.
    for r in rules:
        assert any(op == "=" for _, op, _ in r), r
    assert rules[0][-1] == ("ATTR{queue/scheduler}", "=", "veloces")
    assert "queue/iosched" not in text
    assert "queue/iosched" not in (out / "veloces-tuned.sh").read_text()


@pytest.mark.parametrize(
    ("field", "bad", "tun"),
    [
        ("udev_match", 'sd*", RUN+="/bin/sh', {}),
        ("scheduler", "veloces\nreboot", {}),
        ("name", "t\nreboot", {}),
        ("objective", "x\ny", {}),
        ("device", "d\ny", {}),
        ("dilation", float("inf"), {}),
        (None, None, {'read_expire"': 1}),
        (None, None, {"read_expire": '1", RUN+="/bin/sh'}),
        (None, None, {"read_expire": True}),
    ],
)
def test_write_settings_refuses_what_load_spec_would(
    tmp_path: Path, field: str | None, bad: object, tun: dict[str, Any]
) -> None:
    """A spec built or changed in code, past load_spec, is checked again: refused, nothing written."""
    spec = tune.load_spec(_spec(tmp_path))
    if field:
        setattr(spec, field, bad)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(sweep.SpecError, match=rf": {re.escape(field or '[space]')}"):
        tune.write_settings(spec, tun, out)
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("name", ["tune-cheapflash.toml", "tune-served-cheapflash.toml"])
def test_the_example_specs_keep_to_the_grammar(tmp_path: Path, name: str) -> None:
    spec = tune.load_spec(REPO / "sim" / "examples" / "sweeps" / name)
    tune.write_settings(spec, tune.kernel_values(spec, {"read_expire": 32}), tmp_path)
    rules = _rules((tmp_path / "61-veloces-tuned.rules").read_text())
    assert len(rules) == 2 and all(("ATTR{queue/rotational}", "==", "0") in r for r in rules)
