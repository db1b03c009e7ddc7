"""Fidelity of served devices: one closed-loop fio job run directly in vsim and through the
served model in the lab, side by side (docs/lab.md, "Served devices: fidelity").

    build/venv/bin/python -m vlab.experiments.fidelity [--kernel 6.1] [--job lab/jobs/fidelity-randwrite.fio]
        [--device vsim:cheapflash:size=768m ...] [--out DIR]

For each device: vsim runs the job (scheduler noop) and reports IOPS and the device's WA;
one boot then runs the same job file with fio on each served device (scheduler none), and
the server's counters give WA; fio's IOPS times the dilation is the lab's IOPS in model
time. Prints the table and writes fidelity.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from vlab.devices import vsimdev
from vlab.devices.spec import DeviceError, load_spec_args
from vlab.machine import vm
from vlab.machine.kernels import lookup
from vlab.paths import repo_root
from vlab.workloads.fio import parse_file

DEVICES = ["vsim:cheapflash:size=768m", "vsim:ssd:blocks_per_plane=64,precondition=full"]
JOB = "lab/jobs/fidelity-randwrite.fio"

GUEST = """set -e
i=0
for d in $VLAB_DEVICES; do
  echo none > /sys/block/$(basename $d)/queue/scheduler
  fio --output-format=json --output=$VLAB_OUT/fio-$i.json --filename=$d {job}
  i=$((i+1))
done
"""


def vsim_side(job: Path, model: str, out: Path, name: str) -> dict[str, Any]:
    path = out / f"vsim-{name}.json"
    p = subprocess.run(
        [str(repo_root() / "vsim"), "run", str(job), "--device", model, "--scheduler", "noop", "-q", "--json",
         str(path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if p.returncode != 0:
        raise SystemExit(f"fidelity: vsim failed on {model}: {p.stderr.strip()}")
    device: dict[str, Any] = {}
    for line in p.stdout.splitlines():
        if line.startswith("device: "):
            device = json.loads(line.removeprefix("device: "))
    r = parse_file(path)
    return {"iops": r.iops, "write_p50_us": r.write.lat_p50_us, "wa": device.get(vsimdev.WA_COUNTER)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vlab.experiments.fidelity", description=__doc__)
    ap.add_argument("--kernel", default="6.1")
    ap.add_argument("--job", type=Path, default=repo_root() / JOB)
    ap.add_argument("--device", action="append", help=f"served device spec (default {' and '.join(DEVICES)})")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    specs_text = args.device or DEVICES
    try:
        specs = load_spec_args(specs_text)
    except DeviceError as e:
        print(f"fidelity: {e}", file=sys.stderr)
        return 2
    if any(s.driver != "vsim" for s in specs):
        print("fidelity: every --device must be a vsim: device", file=sys.stderr)
        return 2
    out: Path = (args.out or vm.default_out("fidelity")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for i, s in enumerate(specs):
        rows.append({"device": str(s), "vsim": vsim_side(args.job, vsimdev.served(s.options).model_spec, out, str(i))})
    guest = out / "guest.sh"
    guest.write_text(GUEST.format(job=args.job.resolve()))
    p = subprocess.run(
        [str(repo_root() / "vlab"), "run", "--kernel", args.kernel, "--memory", "3G", "--timeout", "3000",
         "--out", str(out), *[a for s in specs for a in ("--device", str(s))], "--", f"bash {guest}"],
        check=False,
    )  # fmt: skip
    for i, (row, s) in enumerate(zip(rows, specs, strict=True)):
        dilation = vsimdev.run_dilation(s.options, out / "devices.json", i)
        fio, counters = out / f"fio-{i}.json", out / f"vsim{i}" / "counters.json"
        if not fio.exists() or not counters.exists():
            row["lab"] = None
            continue
        r = parse_file(fio)
        c = json.loads(counters.read_text())
        row["lab"] = {
            "dilation": dilation,
            "iops_wall": r.iops,
            "iops": r.iops * dilation,
            "write_p50_us": (r.write.lat_p50_us or 0) / dilation,
            "wa": c["device"].get(vsimdev.WA_COUNTER),
            "server_writes": c["requests"]["write"]["count"],
        }
        row["iops_ratio"] = row["lab"]["iops"] / row["vsim"]["iops"]
        row["wa_ratio"] = (row["lab"]["wa"] or 0) / (row["vsim"]["wa"] or 1)
    (out / "fidelity.json").write_text(json.dumps({"job": str(args.job), "kernel": lookup(args.kernel).release,
                                                   "rows": rows}, indent=2) + "\n")  # fmt: skip
    print(f"\n{'device':<52} {'vsim IOPS':>10} {'lab IOPS':>10} {'ratio':>6} {'vsim WA':>8} {'lab WA':>8} {'ratio':>6}")
    for row in rows:
        lab = row.get("lab")
        if lab is None:
            print(f"{row['device']:<52} {row['vsim']['iops']:>10,.0f}  (no lab result: see {out})")
            continue
        print(
            f"{row['device']:<52} {row['vsim']['iops']:>10,.0f} {lab['iops']:>10,.0f} {row['iops_ratio']:>6.3f}"
            f" {row['vsim']['wa']:>8.3f} {lab['wa']:>8.3f} {row['wa_ratio']:>6.3f}"
        )
    print(f"fidelity: {out / 'fidelity.json'}")
    return p.returncode if p.returncode else (0 if all(r.get("lab") for r in rows) else 1)


if __name__ == "__main__":
    sys.exit(main())
