"""vsim's device models served to the guest kernel as block devices: over ublk where the
guest kernel has it (`ublk_drv`: Debian's 6.12), else over NBD (nbdkit; Debian's 6.1).

A spec `vsim:MODEL[:k=v,...]` names a simulator device model and its options, as
`vsim list` shows them (`vsim:cheapflash:preset=sd_a1,size=1g`,
`vsim:ssd:cell=mlc,precondition=full`). Three options are the lab's, not the model's:

- `dilation=F`  wall time per unit of model time (default per model, DEFAULT_DILATION):
  the guest runs under emulation, so the model is slowed down until it, not the
  emulated CPU, sets the pace. Figures from such a device are reported in model time.
  `dilation=auto` measures, at the start, the guest's own cost per 4 KiB read through the
  transport (a zero-latency model served the same way) and takes the smallest factor
  that keeps it under a tenth of the model's 4 KiB read at idle (`vsim device --probe`);
  then, before each fio job of a comparison, a closed loop runs the job briefly under every
  scheduler and raises the dilation until the device is busy at least vlab.verdict.BUSY_MIN
  (85 %) of model time under each (vlab.machine.guest.closed_loop; OUT/JOB/dilation.json).
- `auto_budget_s=S`  the wall seconds that loop may take per job (default 120); where they
  cannot reach 85 %, the cells left guest-bound are excluded from verdicts.
- `setup_dilation=F`  the dilation a script job's setup and teardown run at (default: the
  same as `dilation`): the measured phase alone runs at `dilation`. The server follows a
  control file (`vsim-ublk serve --control`, the plugin's `control=`), and model time goes
  on from one dilation to the next (docs/lab.md, "Script jobs"). Set-up (mkfs, a file
  set) waits on the emulated guest whatever the dilation, so it is run where the device
  is fast in wall time.
- `timeout=S`   the request timeout (default 120 s): NBD fails a request its server has
  not answered by then; ublk (queue/io_timeout) fails it if its server has died by then
  (a live server's slow request is waited for).
- `seed=N`      the model's seed (default 1).
- `transport=ublk|nbd`  how the model reaches the kernel (default: ublk where the guest
  kernel has `ublk_drv`, else nbd). Over ublk (sim/ublk) the device has the model's queue
  depth, hardware queues and limits (io_opt and the discard granularity carry the erase
  block, rotational, write cache and FUA); NBD has 128 tags on one queue and none of the
  limits, so the lab sets what it can (rotational, and veloces's bundle_kb).
- `fault_after_s=S`  kill the server S seconds after the device is connected (fault
  injection: what a crashed server does to the guest and to a run; default never).
- `fault_after_ios=N`  kill the server once it has completed N requests (its counters,
  read every 100 ms: a few more may complete first). Unlike a time, a count puts the
  fault at the same point of a run on a fast machine and on a loaded one.

Host side, `check` builds the model once (`vsim device`) so a bad spec is an error before
boot. Guest side, `start` either runs `vsim-ublk serve` (sim/ublk), which adds and starts
/dev/ublkbN, or runs nbdkit with the vsim plugin (sim/nbdkit) on a Unix socket, connects
/dev/nbdN with nbd-client and applies what NBD cannot carry (the rotational flag); `stop`
stops the server (ublk: which deletes its device; NBD: after disconnecting). The server's log, its info
(size, queue depth, erase block) and its live counters (JSON, rewritten every 500 ms)
live in the guest's own memory (LIVE_ROOT, a tmpfs) while it runs and are copied to
OUT/vsimN/ when it stops: OUT is the host's share (9p), and one 9p request that never
returned once stuck a run (docs/lab.md), so nothing the run rewrites or polls crosses it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlab.paths import sim_target_dir
from vlab.stats import two_digits_up

# Chosen from the measured guest overhead through NBD under TCG (docs/lab.md, "Served
# devices: dilation"): ~0.2 ms per I/O at depth 1 and at most ~8,000-11,000 IOPS. Each
# model's default keeps that overhead near a tenth of its typical service time times the
# dilation, and its throughput in wall time well below that ceiling.
DEFAULT_DILATION = {"ssd": "50", "cheapflash": "10", "hdd": "4", "fixed": "20"}
LAB_OPTIONS: dict[str, str] = {
    "dilation": "", "setup_dilation": "", "timeout": "120", "seed": "1", "fault_after_s": "0", "fault_after_ios": "0",
    "transport": "", "auto_budget_s": "120",
}  # fmt: skip
# How long a change of dilation may take to show in the counters (the server reads its
# control file every 20 ms and rewrites the counters at once).
SWITCH_TIMEOUT_S = 10.0
TRANSPORTS = ("ublk", "nbd")
WA_COUNTER = "write_amplification"  # the one name every flash model reports it under
COUNTERS_MS = 500
# Where a server's live files are while it runs (the guest's /run is a tmpfs); a directory
# that cannot be made there (the host, unprivileged) falls back to the server's workdir.
LIVE_ROOT = Path("/run/vlab-served")
LIVE_FILES = ("counters.json", "info.json", "vsim-ublk.log", "nbdkit.log")
START_TIMEOUT_S = 600
CONNECT_TIMEOUT_S = 60
NBD_BLOCK_SIZE = 4096


class VsimDeviceError(Exception):
    pass


def vsim_bin() -> Path:
    return sim_target_dir() / "vsim"


def plugin_path() -> Path:
    return sim_target_dir() / "libvsim_nbdkit.so"


def ublk_bin() -> Path:
    return sim_target_dir() / "vsim-ublk"


@dataclass(frozen=True)
class Served:
    """A served vsim device, typed: the model's spec (vsim's own grammar, which vsim alone
    parses and checks: `vsim device` on the host, the nbdkit plugin in the guest) and the
    lab's options, read and checked here once."""

    model: str
    model_options: dict[str, str]
    dilation: float | None  # None: auto, chosen in the guest (choose_dilation)
    timeout_s: float
    seed: int
    fault_after_s: float  # 0: never
    fault_after_ios: int = 0  # 0: never
    transport: str = ""  # "": ublk where the kernel has it, else nbd (transport_for)
    setup_dilation: float | None = None  # None: script jobs set up at `dilation`
    auto_budget_s: float = 120.0  # dilation=auto: the wall time its closed loop may take per job

    @property
    def model_spec(self) -> str:
        """The model's spec as vsim takes it (`cheapflash:preset=sd_a1,size=1g`)."""
        opts = ",".join(f"{k}={v}" for k, v in self.model_options.items())
        return self.model + (f":{opts}" if opts else "")


def served(options: dict[str, str]) -> Served:
    """The served device a vsim spec's options describe (the model name travels as the
    option `model`: DeviceSpec keeps one option map); the lab's options take their defaults."""
    model = options.get("model", "")
    if not model:
        raise VsimDeviceError("a vsim device names a model: vsim:MODEL[:k=v,...] (see `./vsim list`)")
    rest = {k: v for k, v in options.items() if k != "model"}
    lab = {k: rest.pop(k, v) for k, v in LAB_OPTIONS.items()}
    seed = lab["seed"]
    if not seed.isdigit():
        raise VsimDeviceError(f"seed={seed}: not a number")
    fault = lab["fault_after_s"]
    fault_ios = lab["fault_after_ios"]
    if not fault_ios.isdigit():
        raise VsimDeviceError(f"fault_after_ios={fault_ios}: not a number of requests")
    if lab["transport"] not in ("", *TRANSPORTS):
        raise VsimDeviceError(f"transport={lab['transport']}: not one of {', '.join(TRANSPORTS)}")
    return Served(
        model=model,
        model_options=rest,
        dilation=None
        if lab["dilation"] == "auto"
        else _positive("dilation", lab["dilation"] or DEFAULT_DILATION.get(model, "20")),
        timeout_s=_positive("timeout", lab["timeout"]),
        seed=int(seed),
        fault_after_s=0.0 if fault == "0" else _positive("fault_after_s", fault),
        fault_after_ios=int(fault_ios),
        transport=lab["transport"],
        setup_dilation=_positive("setup_dilation", lab["setup_dilation"]) if lab["setup_dilation"] else None,
        auto_budget_s=_positive("auto_budget_s", lab["auto_budget_s"]),
    )


def run_dilation(options: dict[str, str], devices_json: Path, index: int = 0) -> float:
    """The dilation served device `index` of a run ran at: its spec's, or with dilation=auto
    what the guest chose, as the run's devices.json describes it (1 if it never started)."""
    s = served(options)
    if s.dilation is not None:
        return s.dilation
    try:
        described = json.loads(devices_json.read_text())[index]
    except (OSError, ValueError, IndexError):
        return 1.0
    chosen = ((described or {}).get("served") or {}).get("dilation")
    return float(chosen) if chosen else 1.0


def _positive(key: str, text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise VsimDeviceError(f"{key}={text}: not a number") from None
    if not v > 0:
        raise VsimDeviceError(f"{key}={text}: must be positive")
    return v


def check(options: dict[str, str]) -> dict[str, Any]:
    """Host side, before boot: the lab's options are valid, the model builds with its
    options (`vsim device`: the one reader of the model's spec), the tools exist."""
    s = served(options)
    for exe in (vsim_bin(), plugin_path(), ublk_bin()):
        if not exe.exists():
            raise VsimDeviceError(f"{exe} is missing: run `make deps` (it builds the simulator)")
    for tool in ("nbdkit", "nbd-client"):
        if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists():
            raise VsimDeviceError(f"{tool} is not installed: run `make deps`")
    proc = subprocess.run(
        [str(vsim_bin()), "device", s.model_spec, "--seed", str(s.seed)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise VsimDeviceError(proc.stderr.strip().removeprefix("vsim: error: "))
    info: dict[str, Any] = json.loads(proc.stdout)
    return info


# ---------------------------------------------------------------- guest side


UBLK_LOG, NBDKIT_LOG = "vsim-ublk.log", "nbdkit.log"


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    workdir: Path  # where its files are kept (OUT/vsimN), copied from `live` as it stops
    live: Path  # where they are while it runs
    socket: Path | None  # NBD's
    disk: str  # nbdN or ublkbN
    timeout_s: float
    transport: str = "nbd"
    dev_id: int = -1  # ublk's device id

    @property
    def counters(self) -> Path:
        return self.live / "counters.json"

    @property
    def control(self) -> Path:
        """The file the server reads the dilation from while it serves."""
        return self.live / "dilation"

    @property
    def log(self) -> Path:
        """The server's own log: vsim-ublk's or nbdkit's."""
        return self.live / (UBLK_LOG if self.transport == "ublk" else NBDKIT_LOG)

    def log_tail(self, n: int = 5) -> str:
        return _tail(self.log, n)


SERVERS: list[Server] = []


def _free_nbd(skip: list[str]) -> str:
    for p in sorted(Path("/sys/block").glob("nbd*"), key=lambda p: int(p.name[3:])):
        if p.name not in skip and not (p / "pid").exists() and int((p / "size").read_text()) == 0:
            return p.name
    raise VsimDeviceError("no free /dev/nbd* device (all connected)")


def _tail(path: Path, n: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


# dilation=auto: the guest's cost per I/O is measured on this model (1 ns of service time),
# served as the device will be, with QD1 4 KiB direct reads for PROBE_S seconds; the
# dilation keeps that cost under a tenth of the model's 4 KiB read.
PROBE_MODEL = Served(
    "fixed", {"service_us": "0.001", "read_us": "0.001", "write_us": "0.001", "size": "64m"}, 1.0, 30.0, 1, 0.0
)
PROBE_S = 2.0
AUTO_SHARE = 0.1


def dilation_for(guest_ns: float, service_ns: float) -> float:
    """The smallest dilation, rounded up to two significant digits and at least 1, at which
    `guest_ns` (wall) is at most AUTO_SHARE of `service_ns` (model time) stretched by it."""
    if not (guest_ns > 0 and service_ns > 0):
        raise VsimDeviceError(f"cannot choose a dilation from guest {guest_ns} ns and service {service_ns} ns")
    d = guest_ns / (AUTO_SHARE * service_ns)
    return 1.0 if d <= 1 else two_digits_up(d)


def model_service_ns(s: Served) -> dict[str, int]:
    """The model's 4 KiB write and read-back service times at idle, in model ns (`vsim
    device --probe`, on a fresh copy of the model)."""
    proc = subprocess.run(
        [str(vsim_bin()), "device", s.model_spec, "--seed", str(s.seed), "--probe"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise VsimDeviceError(f"vsim device --probe {s.model_spec}: {proc.stderr.strip()}")
    info = json.loads(proc.stdout)
    return {"write_4k_ns": int(info["write_4k_ns"]), "read_4k_ns": int(info["read_4k_ns"]),
            "queue_depth": int(info["queue_depth"])}  # fmt: skip


def guest_cost_ns(disk: str, seconds: float = PROBE_S) -> float:
    """Mean total latency (fio's lat_ns: submission to completion) of QD1 4 KiB O_DIRECT
    random reads of `disk` over `seconds`: with a device of ~no service time, the guest's
    and the transport's cost per I/O."""
    proc = subprocess.run(
        ["fio", "--output-format=json", "--name=probe", f"--filename=/dev/{disk}", "--rw=randread", "--bs=4k",
         "--direct=1", "--ioengine=psync", "--time_based", f"--runtime={seconds}", "--ramp_time=0.2"],
        capture_output=True, text=True, check=False, cwd="/tmp",
    )  # fmt: skip
    try:
        mean = float(json.loads(proc.stdout[proc.stdout.find("{") :])["jobs"][0]["read"]["lat_ns"]["mean"])
    except (ValueError, KeyError, IndexError) as e:
        raise VsimDeviceError(f"dilation=auto: fio on the probe device failed ({proc.returncode}): "
                              f"{proc.stderr.strip()[-400:]}") from e  # fmt: skip
    if not mean > 0:
        raise VsimDeviceError(f"dilation=auto: fio measured a mean latency of {mean} ns")
    return mean


def choose_dilation(s: Served, workdir: Path) -> dict[str, Any]:
    """dilation=auto: the guest's cost per I/O through the transport, the model's service
    time, and the dilation chosen from them."""
    service = model_service_ns(s)
    # The probe takes the model's transport and depth: a ublk queue of one tag serves on its
    # own thread, a deeper one hands each request to a worker (sim/ublk).
    depth = str(service.pop("queue_depth"))
    probe = dataclasses.replace(
        PROBE_MODEL, transport=s.transport, model_options={**PROBE_MODEL.model_options, "queue_depth": depth}
    )
    disk, server, _ = _serve(probe, workdir)
    try:
        cost = guest_cost_ns(disk)
    finally:
        problems = stop(server)
        SERVERS.remove(server)
    if problems:
        raise VsimDeviceError(f"dilation=auto: the probe device did not stop cleanly: {'; '.join(problems)}")
    # The read: a write may complete at cache speed (the ssd's 0.5 us, the hdd's 7 us),
    # which says nothing of the pace the device keeps under load.
    read = service["read_4k_ns"]
    d = dilation_for(cost, read)
    # guest_share: the guest's cost over the model's read, stretched.
    return {"guest_io_ns": round(cost), **service, "dilation": d, "guest_share": round(cost / (read * d), 3)}


def start(options: dict[str, str], workdir: Path) -> tuple[str, Server, dict[str, Any]]:
    """Guest side: serve the model and connect an NBD device to it. Returns (disk, server,
    info): the model's info (size, queue depth, erase block) and the dilation it runs at
    (with dilation=auto, also how it was chosen: `dilation_auto`)."""
    s = served(options)
    auto = None
    if s.dilation is None:
        auto = choose_dilation(s, workdir / "auto")
        s = dataclasses.replace(s, dilation=auto["dilation"])
    disk, server, info = _serve(s, workdir)
    if auto is not None:
        info["dilation_auto"] = {**auto, "budget_s": s.auto_budget_s}
    return disk, server, info


def transport_for(s: Served) -> str:
    """The transport a served device uses in this guest: the spec's, else ublk where the
    kernel has ublk_drv (a feature probe: loaded, or loadable), else nbd."""
    if s.transport:
        if s.transport == "ublk" and not _have_ublk():
            raise VsimDeviceError("transport=ublk: this kernel has no ublk_drv (modprobe ublk_drv failed)")
        return s.transport
    return "ublk" if _have_ublk() else "nbd"


def _have_ublk() -> bool:
    if not Path("/dev/ublk-control").exists():
        subprocess.run(["modprobe", "ublk_drv"], capture_output=True, check=False)
    return Path("/dev/ublk-control").exists()


def _serve(s: Served, workdir: Path) -> tuple[str, Server, dict[str, Any]]:
    if s.dilation is None:
        raise VsimDeviceError("dilation=auto is chosen before serving (start)")
    workdir.mkdir(parents=True, exist_ok=True)
    transport = transport_for(s)
    server, info = (_serve_ublk if transport == "ublk" else _serve_nbd)(s, workdir, _live_dir(workdir))
    info["dilation"] = s.dilation  # the lab's, beside what the model reports
    info["setup_dilation"] = s.setup_dilation
    info["control"] = str(server.control)
    info["transport"] = transport
    if s.fault_after_s > 0:
        timer = threading.Timer(s.fault_after_s, _inject_fault, args=(server,))
        timer.daemon = True
        timer.start()
    if s.fault_after_ios > 0:
        threading.Thread(target=_fault_after_ios, args=(server, s.fault_after_ios), daemon=True).start()
    return server.disk, server, info


def _live_dir(workdir: Path) -> Path:
    """A fresh directory for a server's live files: under LIVE_ROOT (the guest's memory),
    else `workdir` itself."""
    try:
        LIVE_ROOT.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f"{workdir.name}-", dir=LIVE_ROOT))
    except OSError:
        return workdir


def _keep(server: Server) -> None:
    """Copy the server's live files to its workdir (OUT/vsimN), where the run keeps them."""
    if server.live == server.workdir:
        return
    for name in LIVE_FILES:
        src = server.live / name
        if src.exists():
            shutil.copyfile(src, server.workdir / name)


def _kept(log: Path, workdir: Path) -> Path:
    """A server's log copied to its workdir (a server that never served is never stopped)."""
    if log.parent == workdir or not log.exists():
        return log
    try:
        shutil.copyfile(log, workdir / log.name)
    except OSError:
        return log
    return workdir / log.name


def _launch(argv: list[str], workdir: Path, log: Path, ready: Path) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """Start a server (its command kept in `workdir`, its output in `log`), wait until
    `ready` exists, and read the info it wrote (beside `log`)."""
    (workdir / "command").write_text(" ".join(argv) + "\n")
    with open(log, "wb") as f:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT)
    what = Path(argv[0]).name
    # Building a preconditioned model takes a while under emulation.
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready.exists():
        if proc.poll() is not None:
            raise VsimDeviceError(
                f"{what} exited with {proc.returncode} before serving ({_kept(log, workdir)}):\n{_tail(log)}"
            )
        if time.monotonic() > deadline:
            proc.kill()
            raise VsimDeviceError(f"{what} did not start within {START_TIMEOUT_S} s ({_kept(log, workdir)})")
        time.sleep(0.05)
    info: dict[str, Any] = json.loads((log.parent / "info.json").read_text())
    return proc, info


def _serve_ublk(s: Served, workdir: Path, live: Path) -> tuple[Server, dict[str, Any]]:
    """`vsim-ublk serve`: the device is added with the model's depth, queues and limits and
    started before the server writes its info (with the device's name)."""
    info_file = live / "info.json"
    info_file.unlink(missing_ok=True)
    log = live / UBLK_LOG
    argv = [
        str(ublk_bin()), "serve", "--device", s.model_spec, "--dilation", str(s.dilation), "--seed", str(s.seed),
        "--counters", str(live / "counters.json"), "--counters-ms", str(COUNTERS_MS), "--info", str(info_file),
        "--control", str(live / "dilation"),
    ]  # fmt: skip
    proc, info = _launch(argv, workdir, log, info_file)
    server = Server(proc, workdir, live, None, str(info["disk"]), s.timeout_s, "ublk", int(info["dev_id"]))
    SERVERS.append(server)
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while not Path("/dev", server.disk).exists():
        if time.monotonic() > deadline:
            raise VsimDeviceError(f"/dev/{server.disk} did not appear within {CONNECT_TIMEOUT_S} s of starting")
        time.sleep(0.05)
    # ublk's driver fails the requests a dead server held when they time out (blk-mq's 30 s
    # by default; a live server's are given more time): the spec's timeout, as NBD's.
    (Path("/sys/block", server.disk, "queue", "io_timeout")).write_text(str(int(s.timeout_s * 1000)))
    return server, info


def _serve_nbd(s: Served, workdir: Path, live: Path) -> tuple[Server, dict[str, Any]]:
    sock = (live if live != workdir else Path("/tmp")) / f"vlab-{workdir.name}-{os.getpid()}.sock"
    sock.unlink(missing_ok=True)
    info_file = live / "info.json"
    log = live / NBDKIT_LOG
    # nbdkit's threads: enough for the kernel's 128 NBD tags or the model's depth.
    threads = 128
    argv = [
        "nbdkit", "--foreground", "--unix", str(sock), "--threads", str(threads),
        str(plugin_path()),
        f"device={s.model_spec}", f"dilation={s.dilation}", f"seed={s.seed}",
        f"counters={live / 'counters.json'}", f"counters_ms={COUNTERS_MS}", f"info={info_file}",
        f"control={live / 'dilation'}",
    ]  # fmt: skip
    proc, info = _launch(argv, workdir, log, sock)
    server = Server(proc, workdir, live, sock, "", s.timeout_s)
    SERVERS.append(server)
    if not Path("/sys/module/nbd").exists():
        subprocess.run(["modprobe", "nbd", "nbds_max=16"], capture_output=True, check=False)
    # A device that udev (or a probe) holds at that moment refuses the connection ("nbdN
    # already in use", seen on 6.12): try the next free one.
    errors: list[tuple[str, str]] = []
    for _ in range(3):
        nbd = _free_nbd(skip=[e[0] for e in errors])
        try:
            connect = subprocess.run(
                ["nbd-client", "-unix", str(sock), f"/dev/{nbd}", "-b", str(NBD_BLOCK_SIZE),
                 "-t", str(int(server.timeout_s))],
                capture_output=True, text=True, check=False, timeout=CONNECT_TIMEOUT_S,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise VsimDeviceError(f"nbd-client did not connect /dev/{nbd} within {CONNECT_TIMEOUT_S} s") from None
        with open(workdir / "nbd-client.log", "a") as f:
            f.write(f"$ nbd-client ... /dev/{nbd}: exit {connect.returncode}\n{connect.stdout}{connect.stderr}")
        if connect.returncode == 0:
            break
        errors.append((nbd, (connect.stderr or connect.stdout).strip().replace("\n", " ")))
        time.sleep(0.5)
    else:
        raise VsimDeviceError("nbd-client could not connect: " + "; ".join(f"/dev/{n}: {m}" for n, m in errors))
    server.disk = nbd
    size = Path("/sys/block") / nbd / "size"
    deadline = time.monotonic() + 30
    while int(size.read_text()) == 0:
        if time.monotonic() > deadline:
            raise VsimDeviceError(f"/dev/{nbd} has no size 30 s after connecting")
        time.sleep(0.05)
    queue = Path("/sys/block") / nbd / "queue"
    (queue / "rotational").write_text("1" if info.get("rotational") else "0")
    return server, info


def completed_requests(counters: dict[str, Any]) -> int:
    """Requests of every kind the server has completed, from its counters."""
    return sum(int(r.get("count") or 0) for r in (counters.get("requests") or {}).values())


def served_requests(server: Server) -> int:
    """Requests the server has completed so far (0 before its first counters)."""
    return completed_requests(read_counters(server) or {})


def _fault_after_ios(server: Server, n: int) -> None:
    while server.proc.poll() is None:
        if served_requests(server) >= n:
            _inject_fault(server)
            return
        time.sleep(0.1)


def _inject_fault(server: Server) -> None:
    if server.proc.poll() is None:
        print(f"vlab: fault injection: killing the vsim server of /dev/{server.disk}", flush=True)
        server.proc.kill()


def stop(server: Server) -> list[str]:
    """Stop the server (its last counters are written as it exits): ublk's deletes its
    device; NBD's is disconnected first. A server that died (killed) leaves its ublk
    device behind, dead: it is deleted here. Returns what went wrong, if anything (the
    log is kept either way)."""
    problems = []
    name = "vsim-ublk" if server.transport == "ublk" else "nbdkit"
    if server.transport == "nbd" and server.disk and (Path("/sys/block") / server.disk / "pid").exists():
        d = subprocess.run(["nbd-client", "-d", f"/dev/{server.disk}"], capture_output=True, text=True, check=False)
        if d.returncode != 0:
            problems.append(f"nbd-client -d /dev/{server.disk}: {(d.stderr or d.stdout).strip()}")
    if server.proc.poll() is None:
        server.proc.send_signal(signal.SIGTERM)
        try:
            server.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait()
            problems.append(f"{name} did not stop within 30 s of SIGTERM: killed")
    elif server.proc.returncode not in (0, -signal.SIGTERM, -signal.SIGKILL):
        problems.append(f"{name} had exited with {server.proc.returncode} ({server.workdir / server.log.name})")
    if server.transport == "ublk" and Path(f"/sys/class/ublk-char/ublkc{server.dev_id}").exists():
        d = subprocess.run([str(ublk_bin()), "delete", str(server.dev_id)], capture_output=True, text=True, check=False)
        if d.returncode != 0:
            problems.append(f"vsim-ublk delete {server.dev_id}: {(d.stderr or d.stdout).strip()}")
    if server.socket is not None:
        server.socket.unlink(missing_ok=True)
    try:
        _keep(server)
    except OSError as e:
        problems.append(f"cannot keep {name}'s files in {server.workdir}: {e}")
    return problems


def stop_all() -> list[str]:
    problems = []
    while SERVERS:
        problems += stop(SERVERS.pop())
    return problems


def switch_dilation(counters: Path, control: Path, dilation: float) -> None:
    """Serve at `dilation` from now on: written to the server's control file (whole: a
    temporary file renamed), done when its counters show it; VsimDeviceError if they do not
    within SWITCH_TIMEOUT_S (the server's log says why: a refused value, or it died)."""
    tmp = control.with_name(control.name + ".tmp")
    tmp.write_text(f"{dilation!r}\n")
    tmp.replace(control)
    deadline = time.monotonic() + SWITCH_TIMEOUT_S
    while True:
        try:
            if float(json.loads(counters.read_text()).get("dilation") or 0) == dilation:
                return
        except (OSError, ValueError, TypeError, AttributeError):
            pass
        if time.monotonic() > deadline:
            raise VsimDeviceError(f"the served device did not change to dilation {dilation:g} within "
                                  f"{SWITCH_TIMEOUT_S:g} s ({control} -> {counters})")  # fmt: skip
        time.sleep(0.01)


def read_counters(server: Server) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(server.counters.read_text())
        return data
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------- figures


def copies_of(device: dict[str, Any]) -> int:
    """Pages the device copied on its own (GC copies, or cheap flash's merge copies)."""
    return int(device.get("gc_page_copies", device.get("merge_page_copies", 0)) or 0)


def delta(before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
    """The device's figures over one run, from counters read before and after it."""
    if not after:
        return {}
    b = before or {}
    bd, ad = b.get("device", {}) or {}, after.get("device", {}) or {}
    host = int(ad.get("host_page_writes", 0)) - int(bd.get("host_page_writes", 0))
    copies = copies_of(ad) - copies_of(bd)
    energy = float((after.get("energy") or {}).get("total_j", 0)) - float((b.get("energy") or {}).get("total_j", 0))
    out: dict[str, Any] = {
        "host_page_writes": host,
        "copied_pages": copies,
        "erases": int(ad.get("erases", 0)) - int(bd.get("erases", 0)),
        "wa": (host + copies) / host if host > 0 else None,
        "model_s": float(after.get("model_time_s", 0)) - float(b.get("model_time_s", 0)),
        "busy_s": float(after.get("busy_s", 0)) - float(b.get("busy_s", 0)),
        "energy_j": energy,
        "trimmed_pages": int(ad.get("trimmed_pages", 0)) - int(bd.get("trimmed_pages", 0)),
    }
    for k in ("full_merges", "partial_merges", "switch_merges"):
        if k in ad:
            out[k] = int(ad[k]) - int(bd.get(k, 0))
    return out
