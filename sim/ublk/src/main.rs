//! `vsim-ublk`: a vsim device model served to the kernel it runs on as a ublk
//! block device (`/dev/ublkbN`, Linux ≥ 6.0 with `ublk_drv`).
//!
//! Unlike NBD (128 tags, one queue, no limits), a ublk device has the queue
//! depth, hardware queues and queue limits its server gives it: here the
//! model's ([`vsim::serve::Served::limits`]): a card without command queueing
//! has one tag, so requests wait in the scheduler, not below it; `io_opt` and
//! the discard granularity carry the erase block; the disk is rotational; a
//! model with a volatile write cache takes flushes and FUA.
//!
//! Every request meets the model in [`vsim::serve::Served`] (the core NBD
//! shares). Each hardware queue is one thread with one io_uring and libublk's
//! plain loop: the model admits a request and says when it is due, the wait
//! is an io_uring timeout on the same ring, the data moves with
//! `UBLK_F_USER_COPY` (pread/pwrite on `/dev/ublkcN`: no per-tag buffers, so
//! a 1,023-tag SSD costs no memory), and the commit goes out with the next
//! `io_uring_enter` (see [`queue`]).
//!
//! ```text
//! vsim-ublk serve --device cheapflash:preset=sd_a1 --dilation 10 --info info.json --counters c.json
//! vsim-ublk delete 0
//! ```
//! `serve` writes `--info` (size, limits, `disk`: `ublkbN`) once the device
//! is started; SIGTERM or SIGINT stops and deletes the device and writes the
//! last counters. A server killed outright leaves a dead device whose I/O
//! fails; `delete ID` removes it.

use anyhow::{anyhow, bail, Context, Result};
use clap::{Parser, Subcommand};
use io_uring::{opcode, types};
use libublk::ctrl::{UblkCtrl, UblkCtrlBuilder};
use libublk::io::{UblkDev, UblkIOCtx, UblkQueue};
use libublk::{sys, BufDesc, BufDescList, UblkFlags, UblkIORes};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use vsim::serve::{CounterWriter, Kind, Limits, Options, Served, Started, SLEEP_SLICE};
use vsim::types::Ns;

#[derive(Parser)]
#[command(
    name = "vsim-ublk",
    about = "serve a vsim device model as a ublk block device"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve a model until SIGTERM/SIGINT.
    Serve {
        /// The model and its options, as vsim takes them (`ssd:preset=tlc_nvme`).
        #[arg(long)]
        device: String,
        /// Wall time per unit of model time.
        #[arg(long, default_value_t = 1.0)]
        dilation: f64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Keep the data in this (sparse) file instead of memory.
        #[arg(long)]
        backing: Option<PathBuf>,
        /// Where to write size, limits and the device's name once it is started.
        #[arg(long)]
        info: PathBuf,
        /// Where to write the live counters (JSON).
        #[arg(long)]
        counters: Option<PathBuf>,
        #[arg(long, default_value_t = 500)]
        counters_ms: u64,
        /// A file holding the dilation to serve at from now on, followed while
        /// the device serves (a number; the counters show the one in effect).
        #[arg(long, requires = "counters")]
        control: Option<PathBuf>,
        /// CPUs a multi-queue model gets a queue for (default: those online).
        #[arg(long)]
        cpus: Option<u32>,
    },
    /// Delete ublk device ID (one whose server died).
    Delete { id: i32 },
}

fn main() {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Serve {
            device,
            dilation,
            seed,
            backing,
            info,
            counters,
            counters_ms,
            control,
            cpus,
        } => serve(
            Options {
                device,
                dilation,
                seed,
                backing,
            },
            &info,
            counters,
            Duration::from_millis(counters_ms.max(1)),
            control,
            cpus,
        ),
        Cmd::Delete { id } => UblkCtrl::new_simple(id)
            .and_then(|c| c.del_dev())
            .map(|_| ())
            .map_err(|e| anyhow!("cannot delete ublk device {id}: {e:?}")),
    };
    if let Err(e) = r {
        eprintln!("vsim-ublk: error: {e:#}");
        std::process::exit(1);
    }
}

const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

fn stop_signals() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in STOP_SIGNALS {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

fn serve(
    o: Options,
    info: &Path,
    counters: Option<PathBuf>,
    period: Duration,
    control: Option<PathBuf>,
    cpus: Option<u32>,
) -> Result<()> {
    let served = Arc::new(Served::new(&o)?);
    let cpus =
        cpus.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32));
    let lim = served.limits(cpus);
    // Every thread (queues, workers, counters) inherits the blocked stop
    // signals: the device thread takes them with sigtimedwait.
    let set = stop_signals();
    // SAFETY: a valid signal set; only this thread's mask changes.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    let _writer = counters.map(|p| CounterWriter::start(served.clone(), p, period, control));
    let ctrl = UblkCtrlBuilder::default()
        .name("vsim")
        .id(-1)
        .nr_queues(lim.queues as u16)
        .depth(lim.depth as u16)
        .io_buf_bytes(lim.max_io_bytes)
        .ctrl_flags(sys::UBLK_F_USER_COPY as u64)
        .dev_flags(UblkFlags::UBLK_DEV_F_ADD_DEV)
        .build()
        .map_err(|e| {
            anyhow!("cannot add a ublk device ({e:?}): is ublk_drv loaded (modprobe ublk_drv)?")
        })?;
    let size = served.size_bytes();
    let params = lim.clone();
    let tgt_init = move |dev: &mut UblkDev| {
        set_params(dev, size, &params);
        Ok(())
    };
    let live = Arc::new(AtomicUsize::new(lim.queues as usize));
    let (s, l) = (served.clone(), live.clone());
    let q_fn = move |qid: u16, dev: &UblkDev| {
        queue(qid, dev, s.clone());
        l.fetch_sub(1, Ordering::SeqCst);
    };
    let (s, info, l) = (served.clone(), info.to_path_buf(), live.clone());
    // A failure to write the info (the lab's ready signal) ends the device.
    let info_error = Arc::new(std::sync::Mutex::new(None::<anyhow::Error>));
    let error_slot = info_error.clone();
    let dev_fn = move |ctrl: &UblkCtrl| {
        let id = ctrl.dev_info().dev_id;
        let mut j = s.info_json();
        j["transport"] = "ublk".into();
        j["dev_id"] = id.into();
        j["disk"] = format!("ublkb{id}").into();
        j["limits"] = serde_json::to_value(&lim).unwrap_or_default();
        if let Err(e) = write_json(&info, &j) {
            *error_slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
        } else {
            wait_for_stop(&l);
        }
        // Stops the queues (their tasks see QueueIsDown); the device is
        // deleted when `ctrl` is dropped.
        let _ = ctrl.kill_dev();
    };
    ctrl.run_target(tgt_init, q_fn, dev_fn)
        .map_err(|e| anyhow!("the ublk device failed: {e:?}"))?;
    drop(ctrl);
    let failed = info_error.lock().unwrap_or_else(|e| e.into_inner()).take();
    failed.map_or(Ok(()), Err)
}

/// Until a stop signal, or until every queue has ended (the device was
/// stopped or deleted from outside).
fn wait_for_stop(live: &AtomicUsize) {
    let set = stop_signals();
    let ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 200_000_000,
    };
    while live.load(Ordering::SeqCst) > 0 {
        // SAFETY: a valid signal set and timeout; no siginfo wanted.
        let sig = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &ts) };
        if STOP_SIGNALS.contains(&sig) {
            return;
        }
    }
}

fn write_json(path: &Path, j: &serde_json::Value) -> Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(j)? + "\n")
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot rename to {}", path.display()))
}

fn set_params(dev: &mut UblkDev, size: u64, l: &Limits) {
    let shift = |v: u32| v.trailing_zeros() as u8;
    let mut attrs = 0;
    if l.rotational {
        attrs |= sys::UBLK_ATTR_ROTATIONAL;
    }
    if l.volatile_cache {
        attrs |= sys::UBLK_ATTR_VOLATILE_CACHE;
    }
    if l.fua {
        attrs |= sys::UBLK_ATTR_FUA;
    }
    dev.tgt.dev_size = size;
    dev.tgt.params = sys::ublk_params {
        types: sys::UBLK_PARAM_TYPE_BASIC
            | if l.discard_granularity.is_some() {
                sys::UBLK_PARAM_TYPE_DISCARD
            } else {
                0
            },
        basic: sys::ublk_param_basic {
            attrs,
            logical_bs_shift: shift(l.logical_block),
            physical_bs_shift: shift(l.physical_block),
            io_opt_shift: shift(l.io_opt),
            io_min_shift: shift(l.io_min),
            max_sectors: l.max_io_bytes >> 9,
            dev_sectors: size >> 9,
            ..Default::default()
        },
        discard: sys::ublk_param_discard {
            discard_granularity: l.discard_granularity.unwrap_or(0),
            max_discard_sectors: if l.discard_granularity.is_some() {
                MAX_DISCARD_SECTORS
            } else {
                0
            },
            max_discard_segments: 1,
            ..Default::default()
        },
        ..Default::default()
    };
}

const MAX_DISCARD_SECTORS: u32 = 1 << 21; // 1 GiB

/// One hardware queue: one thread, one io_uring, one plain loop (libublk's
/// `wait_and_handle_io`). A request's command arrives as a completion on the
/// ring; the model admits it ([`Served::try_start`]) and says when it is due;
/// the wait until then is an io_uring timeout on the same ring (at most
/// [`SLEEP_SLICE`], so a change of dilation meanwhile moves it), and the commit
/// goes out with the next `io_uring_enter`, which also waits for the next
/// event. No executor, reactor or worker thread: under emulation each would
/// add system calls and context switches per request (epoll, timerfd,
/// eventfd, futex), and those are what a request costs the guest. Every
/// wake-up is a completion on the ring itself, so none can be lost between
/// mechanisms.
fn queue(qid: u16, dev: &UblkDev, served: Arc<Served>) {
    let q = match UblkQueue::new(qid, dev)
        .and_then(|q| q.submit_fetch_commands_unified(BufDescList::Slices(None)))
    {
        Ok(q) => q,
        Err(e) => {
            eprintln!("vsim-ublk: queue {qid}: {e:?}");
            return;
        }
    };
    let depth = dev.dev_info.queue_depth as usize;
    let mut tags = Tags {
        served: &served,
        cdev: dev.tgt.fds[0],
        qid,
        slots: (0..depth).map(|_| Slot::Idle).collect(),
        timeouts: vec![types::Timespec::new(); depth],
    };
    q.wait_and_handle_io(|q, tag, io| {
        if !io.is_tgt_io() {
            tags.arrive(q, tag);
        }
        tags.step(q, tag);
    });
}

/// How often a request that found none of the model's tags free tries again
/// (a device of 64 tags or more shares them among its queues: a queue may
/// find them all taken by the others).
const RETRY: Duration = Duration::from_millis(1);
/// The `op` of a timeout's user data (any value: target I/O is told apart by
/// its flag).
const TIMEOUT_OP: u32 = 1;

/// A request as the model sees it, and its data.
struct Io {
    /// ublk's operation and flags (for messages).
    flags: u32,
    kind: Kind,
    off: u64,
    len: usize,
    fua: bool,
    /// A write's data (landed on arrival), a read's (filled at completion).
    buf: Vec<u8>,
}

enum Slot {
    Idle,
    /// Not admitted yet; `since`: the model time it first found no free tag.
    Waiting {
        io: Io,
        since: Option<Ns>,
    },
    Running {
        io: Io,
        started: Started,
    },
}

struct Tags<'a> {
    served: &'a Served,
    cdev: i32,
    qid: u16,
    slots: Vec<Slot>,
    /// One per tag, read by the kernel when the tag's timeout is submitted.
    timeouts: Vec<types::Timespec>,
}

impl Tags<'_> {
    /// A new request on `tag`: what it asks; a write's data lands now. A
    /// request the model cannot take is committed at once with its error.
    fn arrive(&mut self, q: &UblkQueue, tag: u16) {
        let iod = q.get_iod(tag);
        let (flags, off, len) = (
            iod.op_flags,
            iod.start_sector << 9,
            (iod.nr_sectors as usize) << 9,
        );
        let kind = match flags & 0xff {
            sys::UBLK_IO_OP_READ => Kind::Read,
            sys::UBLK_IO_OP_WRITE => Kind::Write,
            sys::UBLK_IO_OP_FLUSH => Kind::Flush,
            sys::UBLK_IO_OP_DISCARD if self.served.supports_discard() => Kind::Discard,
            op => {
                self.served.count_error();
                eprintln!("vsim-ublk: operation {op} is not supported");
                return self.commit(q, tag, -libc::EOPNOTSUPP);
            }
        };
        // A flush carries no range (its sector is not meaningful).
        let (off, len) = if kind == Kind::Flush {
            (0, 0)
        } else {
            (off, len)
        };
        let mut io = Io {
            flags,
            kind,
            off,
            len,
            fua: flags & sys::UBLK_IO_F_FUA != 0,
            buf: Vec::new(),
        };
        if kind == Kind::Write {
            io.buf = vec![0u8; len];
            let pos = UblkIOCtx::ublk_user_copy_pos(self.qid, tag, 0);
            if let Err(e) = copy(self.cdev, &mut io.buf, pos, true)
                .and_then(|_| self.served.write_data(&io.buf, off))
            {
                return self.fail(q, tag, flags, off, len, e);
            }
        }
        self.slots[tag as usize] = Slot::Waiting { io, since: None };
    }

    /// Move `tag`'s request on as far as the model allows now: admit it,
    /// complete it, or arm a timeout for when it may.
    fn step(&mut self, q: &UblkQueue, tag: u16) {
        loop {
            let slot = std::mem::replace(&mut self.slots[tag as usize], Slot::Idle);
            let wait = match slot {
                Slot::Idle => return,
                Slot::Waiting { io, since } => {
                    match self
                        .served
                        .try_start(io.kind, io.off, io.len as u64, io.fua, since)
                    {
                        Ok(Some(started)) => {
                            self.slots[tag as usize] = Slot::Running { io, started };
                            continue;
                        }
                        Ok(None) => {
                            let since = since.or_else(|| Some(self.served.model_now()));
                            self.slots[tag as usize] = Slot::Waiting { io, since };
                            RETRY
                        }
                        Err(e) => return self.fail(q, tag, io.flags, io.off, io.len, e),
                    }
                }
                Slot::Running {
                    mut io,
                    mut started,
                } => {
                    if self.served.try_finish(&mut started).is_some() {
                        return match self.finish(tag, &mut io) {
                            Ok(res) => self.commit(q, tag, res),
                            Err(e) => self.fail(q, tag, io.flags, io.off, io.len, e),
                        };
                    }
                    let wait = self.served.wall_until(started.due);
                    self.slots[tag as usize] = Slot::Running { io, started };
                    if wait.is_zero() {
                        continue;
                    }
                    wait.min(SLEEP_SLICE)
                }
            };
            return self.arm(q, tag, wait);
        }
    }

    /// The data of a completed request: a read's is copied into it, a
    /// discard's range dropped. Returns the bytes done.
    fn finish(&self, tag: u16, io: &mut Io) -> Result<i32> {
        match io.kind {
            Kind::Read => {
                io.buf = vec![0u8; io.len];
                self.served.store().read(&mut io.buf, io.off)?;
                let pos = UblkIOCtx::ublk_user_copy_pos(self.qid, tag, 0);
                copy(self.cdev, &mut io.buf, pos, false)?;
                Ok(io.len as i32)
            }
            Kind::Write => Ok(io.len as i32),
            Kind::Discard => self
                .served
                .store()
                .discard(io.off, io.len as u64)
                .map(|_| 0),
            Kind::Flush => Ok(0),
        }
    }

    fn arm(&mut self, q: &UblkQueue, tag: u16, wait: Duration) {
        // A stopping queue commits nothing more (the driver has aborted its
        // commands): a timeout would only keep its loop going until the
        // request's due time.
        if q.is_stopping() {
            return;
        }
        let ts = &mut self.timeouts[tag as usize];
        *ts = types::Timespec::new()
            .sec(wait.as_secs())
            .nsec(wait.subsec_nanos());
        let sqe = opcode::Timeout::new(ts as *const types::Timespec)
            .build()
            .user_data(UblkIOCtx::build_user_data(tag, TIMEOUT_OP, 0, true));
        if let Err(e) = q.ublk_submit_sqe_sync(sqe) {
            eprintln!(
                "vsim-ublk: queue {} tag {tag}: cannot arm a timeout: {e:?}",
                self.qid
            );
        }
    }

    fn commit(&mut self, q: &UblkQueue, tag: u16, res: i32) {
        self.slots[tag as usize] = Slot::Idle;
        if let Err(e) =
            q.complete_io_cmd_unified(tag, BufDesc::Slice(&[]), Ok(UblkIORes::Result(res)))
        {
            eprintln!(
                "vsim-ublk: queue {} tag {tag}: cannot commit: {e:?}",
                self.qid
            );
        }
    }

    fn fail(
        &mut self,
        q: &UblkQueue,
        tag: u16,
        flags: u32,
        off: u64,
        len: usize,
        e: anyhow::Error,
    ) {
        self.served.count_error();
        eprintln!(
            "vsim-ublk: queue {} tag {tag}: operation {flags:#x} at {off} of {len} bytes: {e:#}",
            self.qid
        );
        self.commit(q, tag, -libc::EIO);
    }
}

/// User copy: a write's data is read from the request (`from_request`), a
/// read's written into it.
fn copy(cdev: i32, buf: &mut [u8], pos: u64, from_request: bool) -> Result<()> {
    let mut done = 0usize;
    while done < buf.len() {
        let at = (pos + done as u64) as libc::off_t;
        let rest = &mut buf[done..];
        // SAFETY: `rest` is valid for its length; cdev stays open while the
        // queue (and so this request) lives.
        let n = unsafe {
            if from_request {
                libc::pread(cdev, rest.as_mut_ptr().cast(), rest.len(), at)
            } else {
                libc::pwrite(cdev, rest.as_ptr().cast(), rest.len(), at)
            }
        };
        if n <= 0 {
            let e = std::io::Error::last_os_error();
            bail!(
                "user copy at {at}: {}",
                if n == 0 {
                    "end of request".into()
                } else {
                    e.to_string()
                }
            );
        }
        done += n as usize;
    }
    Ok(())
}
