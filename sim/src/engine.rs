//! The discrete-event engine: workload -> block layer (plug, merge,
//! nr_requests) -> [stage] -> scheduler -> device, in integer nanoseconds.
//!
//! Determinism: events are ordered by (time, sequence number); every random
//! choice comes from generators seeded from the run's seed.

use crate::device::Device;
use crate::metrics::{DeviceSeries, DiskStats, JobStats, Lat, ProcStats};
use crate::sched::{bio_fits, Ctx, Scheduler};
use crate::stage::{Admit, Piece, Stage};
use crate::types::{BioSpec, Finished, Ns, Op, ReqId, ReqTable, MS, NONE, SECTOR};
use crate::workload::{Next, Source};
use anyhow::{Context, Result};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// The kernel's default max_sectors_kb, in sectors: 1280 KiB
/// (`BLK_DEF_MAX_SECTORS_CAP`, since Linux 4.4), or the device's
/// max_hw_sectors_kb where that is smaller.
pub const DEFAULT_MAX_SECTORS: u32 = 2560;

/// Block-layer settings (the queue/ attributes).
#[derive(Clone, Debug)]
pub struct BlockConfig {
    /// Requests the scheduler and device may hold together (queue/nr_requests).
    /// 0 = the kernel's default: the device's queue depth under `none`
    /// (noop), 2 × min(depth, 128) under an elevator (`blk_mq_init_sched`).
    pub nr_requests: u32,
    /// Largest request, in sectors (queue/max_sectors_kb * 2): larger bios are
    /// split, merges stop there. 0 = the kernel's default for the device
    /// (`DEFAULT_MAX_SECTORS`, capped by its max_hw_sectors).
    pub max_sectors: u32,
    /// Merge the bios a process submits together before they reach the scheduler.
    pub plug: bool,
    /// Device queue depth override (0 = the device's own).
    pub queue_depth: u32,
    /// The single-queue block layer's request lists (before Linux 5.0): sync
    /// (reads, sync writes, FUA, PREFLUSH) and async requests are counted
    /// apart, each class up to nr_requests (the old default 128: 128 reads
    /// and 128 writes), instead of nr_requests together (blk-mq's tags).
    pub request_lists: bool,
}

impl Default for BlockConfig {
    fn default() -> Self {
        BlockConfig {
            nr_requests: 0,
            max_sectors: 0,
            plug: true,
            queue_depth: 0,
            request_lists: false,
        }
    }
}

#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Stop at this simulated time (0 = when every source is done).
    pub runtime: Ns,
    /// Time-series interval (0 = none).
    pub interval: Ns,
    /// Keep the issue (dispatch) order, for conformance and trace output.
    pub log_issues: bool,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            runtime: 0,
            interval: 100 * MS,
            log_issues: false,
        }
    }
}

/// One dispatch to the device, as the `block_rq_issue` tracepoint sees it.
#[derive(Clone, Debug, Serialize)]
pub struct Issue {
    pub time_ns: Ns,
    pub op: Op,
    pub sync: bool,
    pub sector: u64,
    pub sectors: u32,
    pub nr_bios: u32,
    pub pid: u32,
    /// Tags of the bios in the request, in sector order.
    pub tags: Vec<u64>,
    pub complete_ns: Ns,
    /// The device (lane) it went to, on a run with more than one.
    #[serde(skip_serializing_if = "is_zero")]
    pub dev: u8,
}

fn is_zero(v: &u8) -> bool {
    *v == 0
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Complete(ReqId),
    Timer,
    Wake(u32, u32),
    /// The queue's restart held for a task that runs first ([`Sim::restart_held`]).
    Restart,
}

struct SrcState {
    gen: u32,
    done: bool,
    wake_at: Option<Ns>,
    /// It once waited for its own completions (closed loop): it cannot outpace the device.
    waited: bool,
    /// Its bios submitted and completed, and its first and last submission
    /// (an open-loop source's overload is measured on its own bios: a
    /// closed-loop job beside it must not dilute it).
    bios: u64,
    completed: u64,
    first_submit: Option<Ns>,
    last_submit: Ns,
    /// Its bios waiting for a request; while any wait, a one-task source
    /// ([`Source::one_task`]) is asleep and is not polled.
    asleep: u32,
    /// Polls it missed while asleep: it is polled once it wakes.
    missed: bool,
    /// Its task is filling its queue (it submitted and goes on at once): its
    /// completions wait to be reaped until the queue is full.
    filling: bool,
    /// Its bios that completed while its task was submitting, not reaped yet.
    unreaped: Vec<Unreaped>,
    /// The host's CPU its completions took ([`Sim::set_host_cpu`]): of two tasks
    /// that can run at once, the guest's scheduler runs the one that used less
    /// first (`Sim::runs_first`).
    cpu_used: Ns,
    /// When its task last went to sleep: after its last submission, or after
    /// it woke for a freed request and lost the race for it
    /// ([`Sim::set_lag_task`]).
    slept: Ns,
}

/// A bio done at the device whose task has not reaped it yet.
struct Unreaped {
    done: Finished,
    op: Op,
    dispatched: Ns,
    /// When the device completed it.
    at: Ns,
    /// When its task can reap it: `at`, or later where the host's CPU
    /// ([`Sim::set_host_cpu`]) had other completions to process first.
    ready: Ns,
    measured: bool,
}

/// The guest scheduler's bound on a sleeping task's credit (CFS place_entity
/// with GENTLE_FAIR_SLEEPERS: half of sched_latency, 6 ms on one CPU).
const SLEEPER_CREDIT_NS: Ns = 3_000_000;

/// Bios waiting for a request (nr_requests exhausted) at which an open-loop
/// run stops: the source outpaces the device, and the queue would otherwise
/// grow without bound (about 60 MB of bios at this size).
pub const MAX_WAITING_BIOS: usize = 1 << 20;

/// A source outpaced the device: it submitted faster than the device completed,
/// so the block layer ran out of requests and the backlog grew. The latencies
/// of such a run measure the length of that backlog, not the scheduler.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Overload {
    /// Bios per second the open-loop sources submitted (all sources where
    /// none is open-loop), over their submission span.
    pub offered_iops: f64,
    /// Bios per second of those that completed, over the run.
    pub completed_iops: f64,
    /// Most bios waiting for a request at once (beyond nr_requests).
    pub peak_waiting_bios: u64,
    /// The run stopped early because `MAX_WAITING_BIOS` were waiting.
    pub stopped_early: bool,
}

/// The end-of-run account of bios: every submitted bio completed, or the run
/// says how many did not and why.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct IoBalance {
    pub submitted: u64,
    pub completed: u64,
    /// Submitted and not completed when the run ended (still queued or at the
    /// device when the runtime ran out, or lost).
    pub unfinished: u64,
    /// Some bios can never complete ([`Self::lost_bios`] > 0): a model that
    /// lost I/O. `vsim run` and `vsim compare` fail on it after writing their
    /// results, and every table and report marks the run.
    pub lost: bool,
    /// Bios that can never complete: every unfinished bio when nothing was
    /// left that could complete them (no event pending), or, when the runtime
    /// cut the run, the bios waiting for a request on a device with no
    /// request live (nothing will ever free a tag for them).
    pub lost_bios: u64,
    /// Set when a source outpaced the device.
    pub overload: Option<Overload>,
}

/// The error of a command whose run (or one of whose runs) lost I/O: it
/// comes after the results are written, and `vsim` exits with
/// [`LostIo::EXIT`] on it.
#[derive(Debug)]
pub struct LostIo(pub String);

impl LostIo {
    /// `vsim`'s exit status when a run lost I/O.
    pub const EXIT: i32 = 3;
}

impl std::fmt::Display for LostIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LostIo {}

impl IoBalance {
    /// Warnings for a human reader, one line each (none for a clean run).
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.lost {
            w.push(format!(
                "ERROR: LOST I/O: {} of {} bios can never complete (nothing is left that could complete them): the model lost them, and this run's figures are not valid",
                self.lost_bios, self.submitted
            ));
        }
        if self.unfinished > self.lost_bios {
            w.push(format!(
                "note: {} of {} bios had not completed when the run ended (not counted in the figures)",
                self.unfinished - self.lost_bios,
                self.submitted
            ));
        }
        if let Some(o) = &self.overload {
            w.push(format!(
                "WARNING: overload: the workload offered {:.0} IOPS, the device completed {:.0} IOPS ({:.1}x); up to {} bios waited for a request{}: latencies measure that backlog",
                o.offered_iops,
                o.completed_iops,
                o.offered_iops / o.completed_iops.max(f64::MIN_POSITIVE),
                o.peak_waiting_bios,
                if o.stopped_early {
                    format!(", and the run stopped early at {MAX_WAITING_BIOS} waiting")
                } else {
                    String::new()
                }
            ));
        }
        w
    }
}

/// Where a run stands, for a progress display.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Simulated time reached.
    pub now: Ns,
    /// The run's runtime (0 = until every source is done).
    pub runtime: Ns,
    /// Bios submitted so far.
    pub bios: u64,
    /// The share of the run done (0 to 1) where it is known: the simulated
    /// time over the runtime, else the sources' own progress (a job's
    /// `number_ios`, a trace's bytes read) when every one knows its total.
    pub fraction: Option<f64>,
}

/// The sources' mean progress, a finished one counting as done; `None` if
/// a running source does not know its total.
fn sources_fraction(sources: &[Box<dyn Source>], state: &[SrcState]) -> Option<f64> {
    let mut sum = 0.0;
    for (s, st) in sources.iter().zip(state) {
        sum += if st.done {
            1.0
        } else {
            let (done, total) = s.progress()?;
            (done as f64 / total.max(1) as f64).min(1.0)
        };
    }
    (!sources.is_empty()).then(|| sum / sources.len() as f64)
}

/// Called every few thousand events during a run.
pub type ProgressFn = Box<dyn FnMut(&Progress) + Send>;

/// Set to stop every run in this process (the Python bindings set it on
/// Ctrl-C): each looks at it every [`INTERRUPT_EVERY`] events and ends with
/// [`Interrupted`], whatever it had reached. Cleared by whoever set it.
pub static INTERRUPT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Events between two looks at [`INTERRUPT`] (and two progress calls): about
/// a millisecond of wall time.
const INTERRUPT_EVERY: u64 = 0x4000;

/// The error of a run stopped through [`INTERRUPT`].
#[derive(Debug)]
pub struct Interrupted {
    /// Simulated time and bios reached when it stopped.
    pub now: Ns,
    pub bios: u64,
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "interrupted at {:.3} s of simulated time, {} bios submitted",
            self.now as f64 / 1e9,
            self.bios
        )
    }
}

impl std::error::Error for Interrupted {}

impl Outcome {
    /// Warnings for a human reader, one line each: the sources' about their
    /// input, then the account of bios ([`IoBalance::warnings`]).
    pub fn warnings(&self) -> Vec<String> {
        let mut w = self.source_warnings.clone();
        w.extend(self.balance.warnings());
        w
    }
}

/// Result of a run.
pub struct Outcome {
    /// The measured time: from `start` to the runtime or the last completion.
    pub elapsed: Ns,
    /// Start of the measured window (fio's `ramp_time`; 0 without).
    pub start: Ns,
    pub jobs: Vec<JobStats>,
    pub busy_ns: Ns,
    pub issues: Vec<Issue>,
    pub events: u64,
    pub requests: u64,
    pub bios: u64,
    pub merged_bios: u64,
    /// Bios added by splitting bios larger than max_sectors (an 8 MiB bio at
    /// 1280 KiB is 7 parts: 6 added).
    pub split_bios: u64,
    pub peak_requests: usize,
    /// Races for a freed request between a task woken to reap and one asleep
    /// for a request ([`Sim::runs_first`]): won by the one woken to reap, and
    /// by the one asleep.
    pub tag_races: (u64, u64),
    /// Requests dispatched, and how many of them the scheduler picked among
    /// two or more it held (without such choices every scheduler is the same).
    pub dispatches: u64,
    pub dispatch_choices: u64,
    /// The device queue depth the engine dispatched against.
    pub queue_depth: u32,
    pub source_stats: Vec<serde_json::Value>,
    /// The sources' warnings about their input ([`crate::workload::Source::warnings`]).
    pub source_warnings: Vec<String>,
    /// Per-PID figures, sorted by PID.
    pub processes: Vec<(u32, ProcStats)>,
    /// The I/O of the PIDs beyond the first `metrics::MAX_PROCESSES`, summed.
    pub other_processes: Option<ProcStats>,
    /// The device's /proc/diskstats view.
    pub disk: DiskStats,
    /// Submitted vs completed bios, and overload.
    pub balance: IoBalance,
    /// The device's time series (requests held, counters), from time 0 (the
    /// ramp included: the counters are the device's whole history).
    pub device_series: DeviceSeries,
    /// Every device's own figures, lane 0 first (the fields above repeat
    /// lane 0's): one entry on a single-device run.
    pub lanes: Vec<LaneOutcome>,
    /// The host's CPU time spent on the measured completions
    /// ([`Sim::set_host_cpu`]; 0 without a host CPU).
    pub host_cpu_busy_ns: Ns,
}

/// One device's figures in a run.
pub struct LaneOutcome {
    pub name: String,
    pub busy_ns: Ns,
    pub dispatches: u64,
    pub dispatch_choices: u64,
    pub queue_depth: u32,
    pub peak_requests: usize,
    pub disk: DiskStats,
    pub device_series: DeviceSeries,
    /// Requests a scheduler of this lane gave up to another device
    /// (offloads), and those the placement stage refused.
    pub offloaded: u64,
    pub offload_refused: u64,
}

/// One device of a run and the queue in front of it: its block-layer
/// settings (nr_requests, max_sectors, depth), its scheduler, the bios
/// waiting for one of its requests, and its figures. A single-device run has
/// lane 0 only; a hybrid store adds lanes (`Sim::add_lane`) and a placement
/// stage that routes bios to them.
pub struct Lane {
    pub name: String,
    pub block: BlockConfig,
    pub sched: Box<dyn Scheduler>,
    pub dev: Box<dyn Device>,
    depth: u32,
    dev_inflight: u32,
    /// Bios waiting for a request, in arrival order: [any tag, under the
    /// scheduler's shallow depth], each with its arrival number.
    blocked: [VecDeque<(u64, u32)>; 2],
    /// The device takes no request before this (the host's turnaround after
    /// its last completion, [`Sim::set_host_turnaround`]).
    feed_at: Ns,
    /// The request the queue's last run dequeued past a full device: it goes
    /// first at the next run ([`Sim::set_host_cpu`]).
    parked: Option<ReqId>,
    busy_since: Ns,
    busy_ns: Ns,
    peak_requests: usize,
    n_dispatches: u64,
    n_choices: u64,
    n_offloaded: u64,
    n_refused: u64,
    /// Its scheduler may give requests up (`Scheduler::offloads`).
    offloads: bool,
    /// The lane whose scheduler queues this device's requests: itself, or
    /// another's shared over several devices ([`Sim::share_scheduler`]).
    owner: u8,
    /// Another lane's requests share this lane's scheduler.
    shared: bool,
    disk: DiskStats,
    device_series: DeviceSeries,
}

impl Lane {
    pub fn new(
        name: &str,
        mut block: BlockConfig,
        sched: Box<dyn Scheduler>,
        dev: Box<dyn Device>,
    ) -> Self {
        if block.max_sectors == 0 {
            block.max_sectors = dev
                .info()
                .max_hw_sectors
                .map_or(DEFAULT_MAX_SECTORS, |h| h.clamp(8, DEFAULT_MAX_SECTORS));
        }
        let depth = if block.queue_depth > 0 {
            block.queue_depth
        } else {
            dev.info().queue_depth.max(1)
        };
        if block.nr_requests == 0 {
            // The host's tags may exceed what the device takes at once; without a
            // scheduler the device's depth bounds the requests (the others wait for
            // it in blk-mq's dispatch list, in order, as bios waiting for a tag do
            // here). An explicit queue_depth is the whole tag set.
            let mut info = dev.info();
            if block.queue_depth > 0 {
                info.host_tags = None;
            }
            block.nr_requests = info.default_nr_requests(depth, sched.elevator());
        }
        Lane {
            name: name.to_string(),
            offloads: sched.offloads(),
            block,
            sched,
            dev,
            depth,
            dev_inflight: 0,
            blocked: [VecDeque::new(), VecDeque::new()],
            feed_at: 0,
            parked: None,
            busy_since: 0,
            busy_ns: 0,
            peak_requests: 0,
            n_dispatches: 0,
            n_choices: 0,
            n_offloaded: 0,
            n_refused: 0,
            owner: 0,
            shared: false,
            disk: DiskStats::default(),
            device_series: DeviceSeries::default(),
        }
    }

    /// The device queue depth the engine dispatches against.
    pub fn depth(&self) -> u32 {
        self.depth
    }
}

/// The source standing for a placement stage's own I/O (migration,
/// write-back) in the per-job accounting: it submits nothing itself.
struct StageIo;

impl Source for StageIo {
    fn name(&self) -> &str {
        "placement"
    }
    fn poll(&mut self, _now: Ns, _out: &mut Vec<BioSpec>) -> Result<Next> {
        Ok(Next::Done)
    }
    fn complete(&mut self, _spec: &BioSpec, _now: Ns) {}
}

/// A bio a task submits after the one it sleeps on ([`Sim::cont`]): to be
/// placed (a bio of its plug), or a split part entering its lane.
#[derive(Clone, Copy, Debug)]
enum Later {
    Place(u32),
    Enter(u32, u8),
}

pub struct Sim {
    pub run: RunConfig,
    /// The devices, lane 0 the primary one.
    pub lanes: Vec<Lane>,
    pub stage: Option<Box<dyn Stage>>,
    /// Progress callback (a display; never part of the results).
    pub progress: Option<ProgressFn>,
    /// This run's own stop flag, looked at with [`INTERRUPT`].
    pub interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    sources: Vec<Box<dyn Source>>,
    src: Vec<SrcState>,
    jobs: Vec<JobStats>,
    table: ReqTable,
    heap: BinaryHeap<Reverse<(Ns, u64, Ev)>>,
    seq: u64,
    now: Ns,
    n_blocked: u64,
    /// Races for a freed request, measured or not: won by the task woken to
    /// reap (it took the freed tag before the waiter woken for it), and by the
    /// task asleep for it (`Sim::wake_waiters`).
    tag_races_reaper: u64,
    tag_races_waiter: u64,
    /// A third task on the guest's CPU: runnable `lag_run` from every
    /// multiple of `lag_every` ([`Sim::set_lag_task`]; 0: none).
    lag_every: Ns,
    lag_run: Ns,
    timer_at: Option<Ns>,
    issues: Vec<Issue>,
    bio_buf: Vec<BioSpec>,
    plug_reqs: Vec<ReqId>,
    last_completion: Ns,
    n_events: u64,
    n_requests: u64,
    n_bios: u64,
    n_merged: u64,
    delayed: BinaryHeap<Reverse<(Ns, u64, u32)>>,
    procs: rustc_hash::FxHashMap<u32, ProcStats>,
    /// The I/O of PIDs beyond `MAX_PROCESSES`, summed.
    other_procs: Option<ProcStats>,
    wake_buf: Vec<u32>,
    /// fio `ramp_time`: completions before it are left out of the figures.
    ramp: Ns,
    ramp_over: bool,
    /// Bios completed, ramp included (the end-of-run account's).
    n_completed: u64,
    n_split: u64,
    split_buf: Vec<u32>,
    piece_buf: Vec<Piece>,
    /// The submitting task is asleep for a request for this bio (set while
    /// its plug is submitted): its later bios wait for it ([`Self::cont`]).
    task_blocked: Option<u32>,
    /// What a task asleep for a request for bio `b` submits once it has one,
    /// in order: its plug's later bios (and split parts), which then merge
    /// into that request as in the kernel (blk_mq_get_tag sleeps, the task
    /// wakes with its tag, its next bio plug-merges).
    cont: rustc_hash::FxHashMap<u32, Vec<Later>>,
    /// Bios in `cont`.
    n_cont: usize,
    offload_buf: Vec<ReqId>,
    stage_buf: Vec<(u8, BioSpec)>,
    /// The job a placement stage's own I/O is accounted to, once it issued any.
    stage_job: Option<u32>,
    first_submit: Option<Ns>,
    last_submit: Ns,
    peak_blocked: usize,
    /// The host's CPU time per completed I/O (0: an infinitely fast host) and
    /// when that one CPU is next free ([`Sim::set_host_cpu`]).
    cpu_ns: Ns,
    cpu_free: Ns,
    /// Its busy time over the measured window.
    cpu_busy_ns: Ns,
    /// The host's time from a completion to the device's next request
    /// ([`Sim::set_host_turnaround`]).
    turnaround_ns: Ns,
    /// The task an interrupt's first completion wakes to reap runs before
    /// the queue's restart ([`Sim::set_reaper_first`]).
    reaper_first: bool,
    /// The queue's restart after an interrupt waits until then, for the task
    /// that runs first ([`Sim::set_reaper_first`]), on these lanes.
    restart_at: Option<Ns>,
    restart_lanes: Vec<u8>,
    /// The interrupt a held restart follows: what it dispatches starts at
    /// the device from then ([`Sim::set_reaper_first`]).
    restart_irq: Ns,
    /// Set while a held restart dispatches: the device's start for it.
    dispatch_from: Option<Ns>,
    irq_buf: Vec<ReqId>,
}

impl Sim {
    pub fn new(
        block: BlockConfig,
        run: RunConfig,
        sched: Box<dyn Scheduler>,
        dev: Box<dyn Device>,
    ) -> Self {
        let name = dev.name().to_string();
        Sim {
            run,
            lanes: vec![Lane::new(&name, block, sched, dev)],
            stage: None,
            progress: None,
            interrupt: None,
            sources: Vec::new(),
            src: Vec::new(),
            jobs: Vec::new(),
            table: ReqTable::new(),
            heap: BinaryHeap::new(),
            seq: 0,
            now: 0,
            n_blocked: 0,
            tag_races_reaper: 0,
            tag_races_waiter: 0,
            lag_every: 0,
            lag_run: 0,
            timer_at: None,
            issues: Vec::new(),
            bio_buf: Vec::new(),
            plug_reqs: Vec::new(),
            last_completion: 0,
            n_events: 0,
            n_requests: 0,
            n_bios: 0,
            n_merged: 0,
            delayed: BinaryHeap::new(),
            procs: Default::default(),
            other_procs: None,
            wake_buf: Vec::new(),
            ramp: 0,
            ramp_over: false,
            n_completed: 0,
            n_split: 0,
            split_buf: Vec::new(),
            piece_buf: Vec::new(),
            task_blocked: None,
            cont: Default::default(),
            n_cont: 0,
            offload_buf: Vec::new(),
            stage_buf: Vec::new(),
            stage_job: None,
            first_submit: None,
            last_submit: 0,
            peak_blocked: 0,
            cpu_ns: 0,
            cpu_free: 0,
            cpu_busy_ns: 0,
            turnaround_ns: 0,
            reaper_first: false,
            restart_at: None,
            restart_lanes: Vec::new(),
            restart_irq: 0,
            dispatch_from: None,
            irq_buf: Vec::new(),
        }
    }

    /// The host's CPU, one for every job: each completed I/O costs it `ns`
    /// (the interrupt, waking the task, the task's reap and its next
    /// submission through the scheduler), in the order the device completed
    /// them, and its task sees the completion (fio times it) only once that
    /// work is done. 0 (the default) is a host too fast to matter. Under
    /// emulation this is what sets the pace on a fast device (a guest under
    /// TCG spends tens of µs per I/O, more under some schedulers):
    /// `vlab fidelity` measures it per scheduler.
    ///
    /// With the host's CPU modelled, the completion path is the kernel's in
    /// full, as traced in the lab (docs/notebooks/fidelity.md, "6.1's four-tag
    /// reader"): completions at one instant are one interrupt (each frees its
    /// request, then the queue restarts once, then tasks waiting for a request
    /// get one), and the queue's run parks the request it dequeued past a full
    /// device (`__blk_mq_do_dispatch_sched` dequeues before it finds no driver
    /// tag), which goes first at the next run. With an ideal host (0) each
    /// completion restarts the queue at once and nothing is parked, the
    /// conformance scenarios' reference.
    pub fn set_host_cpu(&mut self, ns: Ns) {
        self.cpu_ns = ns;
    }

    /// Whether the task an interrupt's first completion wakes to reap (a
    /// one-task source, not asleep for a request) runs, reaps and submits
    /// before the queue's restart (kblockd's worker) dispatches into the
    /// freed slots: traced on 6.1 (CFS), where the reader went first in 689
    /// of 711 clumps its read led, and the worker first in 690 of 690 led by
    /// a write; 6.12 (EEVDF) runs the worker first. Only with the host's CPU
    /// modelled ([`Sim::set_host_cpu`]), which times that task's run: one
    /// share, ahead of the work queued on that CPU (CFS runs the task woken
    /// first, which has used little CPU, before tasks already queued). The
    /// task's run falls within the host's turnaround from the completion to
    /// the device's next request, which a calibrated device time holds (`vlab
    /// fidelity` measures the service time per request on a busy tag): what
    /// the restart then dispatches starts at the device as from the interrupt.
    /// Unless a task woken for a request runs before it (`Sim::runs_first`):
    /// then the restart goes on at once, as without this.
    pub fn set_reaper_first(&mut self, on: bool) {
        self.reaper_first = on;
    }

    /// The guest's scheduler keeps a sleeper's lag (6.12's EEVDF), and a third
    /// task beside the I/O's gives it one: fio's main process, runnable for
    /// `run` from every multiple of `every` (traced: one run about every
    /// 8.3 ms, most of 256-512 us). A task that goes to sleep while that task
    /// is runnable keeps a positive lag (it leaves a task with more service
    /// waiting: EEVDF's PLACE_LAG, not clipped by DELAY_ZERO) and is placed
    /// ahead of one that slept alone, so at the next race for a freed
    /// request it runs first. Where both or neither keep one, the order is as
    /// without it ([`Sim::runs_first`]): the trace found both groups' lags
    /// zero and the one woken first running first in 1,709 of 1,743 races the
    /// reader won, and the model's `none` with that order matched the lab's
    /// 6.12 reader beside a writer (reads waiting ~2 writes). The third task's own
    /// CPU is not charged here: the host's CPU per I/O ([`Sim::set_host_cpu`])
    /// is measured with it running. 0 (the default): CFS, no lag kept (6.1).
    /// docs/notebooks/fidelity.md, "6.12's race, traced".
    pub fn set_lag_task(&mut self, every: Ns, run: Ns) {
        (self.lag_every, self.lag_run) = if every > 0 && run > 0 {
            (every, run.min(every))
        } else {
            (0, 0)
        };
    }

    /// Whether task `job` went to sleep while the third task was runnable
    /// ([`Sim::set_lag_task`]): it keeps a positive lag.
    fn keeps_lag(&self, job: u32) -> bool {
        self.lag_every > 0 && self.src[job as usize].slept % self.lag_every < self.lag_run
    }

    /// The host's turnaround: after a completion, the device takes its next
    /// request `ns` later (what the host's CPU does between the two: the
    /// interrupt, freeing the tag, the restart's or the woken task's
    /// dispatch). The scheduler still chooses at once; the request starts
    /// then. 0 (the default) is a device fed at the completion's instant.
    pub fn set_host_turnaround(&mut self, ns: Ns) {
        self.turnaround_ns = ns;
    }

    /// Add a device with its own queue (a hybrid store's second tier); a
    /// placement stage ([`Sim::stage`]) routes bios to it. Returns its lane.
    pub fn add_lane(&mut self, mut lane: Lane) -> Result<u8> {
        anyhow::ensure!(self.lanes.len() < 255, "at most 255 devices in one run");
        lane.owner = self.lanes.len() as u8;
        self.lanes.push(lane);
        Ok((self.lanes.len() - 1) as u8)
    }

    /// Device `lane`'s requests go to lane `owner`'s scheduler, which then
    /// decides among the requests of both devices (an interposed scheduler
    /// in front of a hybrid store, as the QoS seed's RBFQ); each request is
    /// issued to its own device. A scheduler shared by several devices
    /// merges nothing (requests of two devices may share sector numbers),
    /// and dispatches only while every device it serves has room.
    pub fn share_scheduler(&mut self, lane: u8, owner: u8) -> Result<()> {
        let n = self.lanes.len();
        anyhow::ensure!(
            (lane as usize) < n && (owner as usize) < n && lane != owner,
            "share_scheduler: lanes {lane} and {owner} of {n}"
        );
        anyhow::ensure!(
            self.lanes[owner as usize].owner == owner,
            "lane {owner} itself shares another lane's scheduler"
        );
        self.lanes[lane as usize].owner = owner;
        self.lanes[owner as usize].shared = true;
        Ok(())
    }

    /// The primary device's block-layer settings, as resolved for it.
    pub fn block(&self) -> &BlockConfig {
        &self.lanes[0].block
    }

    /// fio's `ramp_time`: I/Os completing up to `ramp` are left out of the
    /// statistics (jobs, processes, device busy time), and the elapsed time
    /// reported starts at `ramp`. The caller extends the runtime by `ramp`.
    pub fn set_ramp(&mut self, ramp: Ns) {
        self.ramp = ramp;
    }

    /// Whether what happens now is in the measured window, (ramp, end] (as
    /// (0, end] without a ramp): completions, submissions and device
    /// requests outside it are left out of every figure.
    fn measured(&self) -> bool {
        self.ramp == 0 || self.now > self.ramp
    }

    /// The ramp is over (the first event at or after it): device busy time
    /// counts from `ramp` on.
    fn end_ramp(&mut self) {
        self.ramp_over = true;
        for l in &mut self.lanes {
            l.busy_ns = 0;
            l.busy_since = l.busy_since.max(self.ramp);
        }
    }

    /// Add a source; its bios are accounted to job `job` (returned when new).
    pub fn add_source(&mut self, s: Box<dyn Source>, start: Ns) -> u32 {
        let idx = self.sources.len() as u32;
        self.jobs.push(JobStats::new(s.name()));
        self.sources.push(s);
        self.src.push(SrcState {
            gen: 0,
            done: false,
            wake_at: None,
            waited: false,
            bios: 0,
            completed: 0,
            first_submit: None,
            last_submit: 0,
            asleep: 0,
            missed: false,
            unreaped: Vec::new(),
            cpu_used: 0,
            slept: 0,
            filling: false,
        });
        self.schedule_wake(idx, start);
        idx
    }

    /// Flow `flow`'s share for every device's scheduler (a flow is a job
    /// or trace: [`crate::sched::FlowQos`]). False when no scheduler of the
    /// run has flows.
    pub fn set_flow(&mut self, flow: u32, qos: crate::sched::FlowQos) -> bool {
        let mut taken = false;
        for l in &mut self.lanes {
            taken |= l.sched.set_flow(flow, qos);
        }
        taken
    }

    /// The options job `idx` was built from, for the report (fio's `job options`).
    pub fn set_job_options(&mut self, idx: u32, options: Vec<(String, String)>) {
        self.jobs[idx as usize].options = options;
    }

    /// Keep fio's logs for source `idx` ([`crate::metrics::iolog`]).
    pub fn set_job_log(&mut self, idx: u32, log: crate::metrics::iolog::IoLog) {
        self.jobs[idx as usize].log = Some(log);
    }

    /// fio's `jobname` of source `idx` (a clone's is its job's name).
    pub fn set_jobname(&mut self, idx: u32, name: &str) {
        self.jobs[idx as usize].jobname = name.to_string();
    }

    fn push(&mut self, t: Ns, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, ev)));
    }

    fn schedule_wake(&mut self, s: u32, t: Ns) {
        let st = &mut self.src[s as usize];
        if st.wake_at.is_some_and(|w| w <= t) {
            return;
        }
        st.gen += 1;
        st.wake_at = Some(t);
        let g = st.gen;
        self.push(t, Ev::Wake(s, g));
    }

    /// Requests at device `l`, and in its scheduler (allocated, not yet
    /// dispatched), for the device series.
    fn held(&self, l: usize) -> [u32; 2] {
        let live = self.table.live_on(l as u8) as u32;
        let inflight = self.lanes[l].dev_inflight;
        [inflight, live.saturating_sub(inflight)]
    }

    /// Run to completion (or to the runtime).
    pub fn run(&mut self) -> Result<Outcome> {
        let mut drained = true;
        let mut stopped_early = false;
        if self.run.interval > 0 {
            for l in &mut self.lanes {
                l.device_series = DeviceSeries::new(self.run.interval, &l.dev.counters());
            }
        }
        if self.stage.is_some() {
            // A placement stage with I/O of its own is polled from the start.
            self.poll_stage();
        }
        while let Some(Reverse((t, seq, ev))) = self.heap.pop() {
            if self.run.runtime > 0 && t > self.run.runtime {
                self.now = self.run.runtime;
                drained = false;
                // Left for the balance below: what was still to happen when the run stopped.
                self.heap.push(Reverse((t, seq, ev)));
                break;
            }
            if self.waiting() >= MAX_WAITING_BIOS {
                drained = false;
                stopped_early = true;
                break;
            }
            // What was held since the previous event, up to this one.
            for l in 0..self.lanes.len() {
                let held = self.held(l);
                let lane = &mut self.lanes[l];
                let dev = &lane.dev;
                lane.device_series.advance(t, held, || dev.counters());
            }
            if !self.ramp_over && t >= self.ramp {
                self.end_ramp();
            }
            self.now = t;
            self.n_events += 1;
            if self.n_events.is_multiple_of(INTERRUPT_EVERY) {
                let stop = |f: &std::sync::atomic::AtomicBool| {
                    f.load(std::sync::atomic::Ordering::Relaxed)
                };
                if stop(&INTERRUPT) || self.interrupt.as_deref().is_some_and(stop) {
                    return Err(Interrupted {
                        now: t,
                        bios: self.n_bios,
                    }
                    .into());
                }
                if let Some(f) = self.progress.as_mut() {
                    let fraction = if self.run.runtime > 0 {
                        Some((t as f64 / self.run.runtime as f64).min(1.0))
                    } else {
                        sources_fraction(&self.sources, &self.src)
                    };
                    f(&Progress {
                        now: t,
                        runtime: self.run.runtime,
                        bios: self.n_bios,
                        fraction,
                    });
                }
            }
            match ev {
                Ev::Wake(s, g) => {
                    let st = &mut self.src[s as usize];
                    if st.gen != g || (st.done && st.unreaped.is_empty()) {
                        continue;
                    }
                    st.wake_at = None;
                    if st.done {
                        // Done submitting: it reaps what the host's CPU processed.
                        let _ = self.reap(s);
                    } else {
                        self.poll_source(s)?;
                    }
                    self.restart_held();
                    self.after_task();
                    self.run_queues();
                }
                Ev::Timer => {
                    if self.timer_at == Some(t) {
                        self.timer_at = None;
                    }
                    self.release_delayed();
                    self.poll_stage();
                    self.run_queues();
                }
                Ev::Restart => {
                    self.restart_held();
                    self.run_queues();
                }
                Ev::Complete(rq) if self.cpu_ns > 0 => {
                    // Every completion of this instant: one interrupt.
                    let mut irq = std::mem::take(&mut self.irq_buf);
                    irq.clear();
                    irq.push(rq);
                    while let Some(Reverse((t2, _, Ev::Complete(next)))) = self.heap.peek() {
                        if *t2 != t {
                            break;
                        }
                        irq.push(*next);
                        self.heap.pop();
                        self.n_events += 1;
                    }
                    let r = self.complete_irq(&irq);
                    self.irq_buf = irq;
                    r?;
                }
                Ev::Complete(rq) => self.complete_irq(&[rq])?,
            }
        }
        // The tasks reap what completed when the run stops (fio does at exit).
        for s in 0..self.src.len() {
            for u in std::mem::take(&mut self.src[s].unreaped) {
                self.account(&u.done, u.op, u.dispatched, u.at, u.measured);
            }
        }
        let end = if stopped_early {
            self.now
        } else if self.run.runtime > 0 {
            self.run.runtime
        } else {
            self.last_completion
        };
        for l in 0..self.lanes.len() {
            let held = self.held(l);
            let lane = &mut self.lanes[l];
            if !self.ramp_over {
                lane.busy_ns = 0;
            } else if lane.dev_inflight > 0 {
                lane.busy_ns += end.saturating_sub(lane.busy_since);
            }
            let dev = &lane.dev;
            lane.device_series.finish(end, held, || dev.counters());
        }
        for j in &mut self.jobs {
            if let Some(log) = j.log.as_mut() {
                log.finish(end);
            }
        }
        let elapsed = end.saturating_sub(self.ramp);
        let source_stats = self.sources.iter().map(|s| s.input_stats()).collect();
        let source_warnings = self.sources.iter().flat_map(|s| s.warnings()).collect();
        let mut processes: Vec<(u32, ProcStats)> =
            std::mem::take(&mut self.procs).into_iter().collect();
        processes.sort_by_key(|p| p.0);
        let other_processes = self.other_procs.take();
        let lanes: Vec<LaneOutcome> = self
            .lanes
            .iter_mut()
            .map(|l| LaneOutcome {
                name: l.name.clone(),
                busy_ns: l.busy_ns,
                dispatches: l.n_dispatches,
                dispatch_choices: l.n_choices,
                queue_depth: l.depth,
                peak_requests: l.peak_requests,
                disk: l.disk,
                device_series: std::mem::take(&mut l.device_series),
                offloaded: l.n_offloaded,
                offload_refused: l.n_refused,
            })
            .collect();
        let l0 = &lanes[0];
        Ok(Outcome {
            elapsed,
            start: self.ramp,
            jobs: std::mem::take(&mut self.jobs),
            busy_ns: l0.busy_ns,
            issues: std::mem::take(&mut self.issues),
            events: self.n_events,
            requests: self.n_requests,
            bios: self.n_bios,
            merged_bios: self.n_merged,
            split_bios: self.n_split,
            peak_requests: l0.peak_requests,
            tag_races: (self.tag_races_reaper, self.tag_races_waiter),
            dispatches: l0.dispatches,
            dispatch_choices: l0.dispatch_choices,
            queue_depth: l0.queue_depth,
            source_stats,
            source_warnings,
            processes,
            other_processes,
            disk: l0.disk,
            balance: self.balance(end, drained, stopped_early),
            device_series: l0.device_series.clone(),
            lanes,
            host_cpu_busy_ns: self.cpu_busy_ns,
        })
    }

    /// The end-of-run account: what completed, what did not, and whether an
    /// open-loop source outpaced the device (it never waited for its own
    /// completions, the block layer ran out of requests, and it offered more
    /// than 1.1x the completion rate). `end` is the run's end: the account
    /// covers the whole run, ramp_time included (a bio completed during the
    /// ramp is completed, though left out of the figures).
    fn balance(&self, end: Ns, drained: bool, stopped_early: bool) -> IoBalance {
        let unfinished = self.n_bios - self.n_completed;
        // The open-loop sources' own bios where there are any (a closed-loop
        // source keeps pace with the device and would dilute the figures),
        // else all of them.
        let open: Vec<&SrcState> = self
            .src
            .iter()
            .enumerate()
            .filter(|(i, s)| !s.waited && Some(*i as u32) != self.stage_job)
            .map(|(_, s)| s)
            .collect();
        let open_loop = !open.is_empty();
        let (bios, completed, first, last) = if open_loop {
            open.iter().fold((0, 0, None, 0), |(b, c, f, l), s| {
                let f = match (f, s.first_submit) {
                    (Some(a), Some(b)) => Some(Ns::min(a, b)),
                    (a, b) => a.or(b),
                };
                (b + s.bios, c + s.completed, f, l.max(s.last_submit))
            })
        } else {
            (
                self.n_bios,
                self.n_completed,
                self.first_submit,
                self.last_submit,
            )
        };
        let span = first.map_or(0, |f| last.saturating_sub(f));
        let offered_iops = if span > 0 {
            bios as f64 * 1e9 / span as f64
        } else {
            0.0
        };
        let completed_iops = if end > 0 {
            completed as f64 * 1e9 / end as f64
        } else {
            0.0
        };
        let overload = (stopped_early
            || (open_loop && self.peak_blocked > 0 && offered_iops > 1.1 * completed_iops))
            .then_some(Overload {
                offered_iops,
                completed_iops,
                peak_waiting_bios: self.peak_blocked as u64,
                stopped_early,
            });
        let lost_bios = if drained {
            unfinished
        } else {
            // A waiter is woken when a request of its lane ends (or when a restart
            // held for a task runs): none live, none held, none ever will.
            let held =
                |l: usize| self.restart_at.is_some() && self.restart_lanes.contains(&(l as u8));
            // Nor are they lost while a task that won a race for a freed tag is still to run
            // (wake_waiters): once it has, what it left free goes to them (after_task).
            let task_to_run = self.tag_races_reaper > 0
                && self.heap.iter().any(|Reverse((_, _, e))| {
                    matches!(*e, Ev::Wake(s, g) if self.src[s as usize].gen == g)
                });
            (0..self.lanes.len())
                .filter(|&l| self.table.live_on(l as u8) == 0 && !held(l) && !task_to_run)
                .flat_map(|l| self.lanes[l].blocked.iter().flatten())
                .map(|&(_, b)| 1 + self.cont.get(&b).map_or(0, Vec::len) as u64)
                .sum()
        };
        IoBalance {
            submitted: self.n_bios,
            completed: self.n_completed,
            unfinished,
            lost: lost_bios > 0,
            lost_bios,
            overload,
        }
    }

    fn poll_source(&mut self, s: u32) -> Result<()> {
        loop {
            if self.src[s as usize].asleep > 0 {
                self.src[s as usize].missed = true;
                return Ok(());
            }
            let mut buf = std::mem::take(&mut self.bio_buf);
            buf.clear();
            let next = self.sources[s as usize]
                .poll(self.now, &mut buf)
                .with_context(|| format!("source '{}'", self.sources[s as usize].name()))?;
            for b in buf.iter_mut() {
                b.job = s;
            }
            let measured = self.measured();
            self.jobs[s as usize].submitted(buf.len(), measured);
            if !buf.is_empty() {
                let st = &mut self.src[s as usize];
                st.bios += buf.len() as u64;
                st.first_submit.get_or_insert(self.now);
                st.last_submit = self.now;
                st.slept = self.now;
            }
            let submitted = !buf.is_empty();
            self.submit_batch(&buf);
            self.bio_buf = buf;
            let st = &mut self.src[s as usize];
            // A one-task source that submitted and goes on at once is filling its queue.
            st.filling = submitted
                && matches!(next, Next::At(t) if t <= self.now)
                && self.sources[s as usize].one_task();
            match next {
                Next::At(t) => self.schedule_wake(s, t.max(self.now)),
                Next::Wait => self.src[s as usize].waited = true,
                Next::Done => self.src[s as usize].done = true,
            }
            // Its task reaped and goes on: it submits again in the same instant, before
            // another task runs (fio's loop: reap, then queue the next I/O).
            if !self.reap(s) {
                return Ok(());
            }
        }
    }

    /// Source `s`'s task, not submitting (its queue full, or done, or pausing),
    /// reaps what completed (what the host's CPU has processed) and may submit
    /// again. Returns whether it reaped and goes on submitting at once.
    fn reap(&mut self, s: u32) -> bool {
        let st = &self.src[s as usize];
        if !st.filling && st.asleep == 0 && !st.unreaped.is_empty() {
            let now = self.now;
            let unreaped = std::mem::take(&mut self.src[s as usize].unreaped);
            // Without a host CPU (or once it caught up) every one is ready: no split.
            let (ready, later): (Vec<Unreaped>, Vec<Unreaped>) =
                if unreaped.iter().all(|u| u.ready <= now) {
                    (unreaped, Vec::new())
                } else {
                    unreaped.into_iter().partition(|u| u.ready <= now)
                };
            let next = later.iter().map(|u| u.ready).min();
            // At most the job's batch of them, the oldest first (fio's io_getevents
            // with its min and max); and none until its min is ready, the min no more
            // than it has outstanding (io_u_queued_complete).
            let (lo, hi) = self.sources[s as usize].reap_batch();
            let st = &self.src[s as usize];
            let outstanding = st.bios.saturating_sub(st.completed);
            let take = if (ready.len() as u64) < u64::from(lo).min(outstanding) {
                0
            } else {
                ready.len().min(hi as usize)
            };
            let mut ready = ready;
            let rest = ready.split_off(take);
            self.src[s as usize].unreaped = if rest.is_empty() {
                later
            } else {
                rest.into_iter().chain(later).collect()
            };
            if !ready.is_empty() {
                for u in &ready {
                    self.account(&u.done, u.op, u.dispatched, u.at, u.measured);
                }
                self.jobs[s as usize].reaped();
            }
            if let Some(t) = next {
                self.schedule_wake(s, t);
            }
            return !ready.is_empty() && !self.src[s as usize].done;
        }
        false
    }

    /// The placement stage's own I/O due now (migration, write-back): into
    /// the lanes it names, accounted to a job of its own; its next poll time
    /// arms the timer.
    fn poll_stage(&mut self) {
        let Some(stage) = self.stage.as_mut() else {
            return;
        };
        let mut out = std::mem::take(&mut self.stage_buf);
        out.clear();
        let next = stage.poll_io(self.now, &mut out);
        if !out.is_empty() {
            let job = match self.stage_job {
                Some(j) => j,
                None => {
                    let j = self.sources.len() as u32;
                    self.jobs
                        .push(JobStats::new(&format!("placement:{}", stage.name())));
                    self.sources.push(Box::new(StageIo));
                    self.src.push(SrcState {
                        gen: 0,
                        done: true,
                        wake_at: None,
                        waited: true,
                        bios: 0,
                        completed: 0,
                        first_submit: None,
                        last_submit: 0,
                        asleep: 0,
                        missed: false,
                        unreaped: Vec::new(),
                        cpu_used: 0,
                        slept: 0,
                        filling: false,
                    });
                    self.stage_job = Some(j);
                    // Its share where schedulers share by flow (background I/O).
                    let q = stage.own_qos();
                    for l in &mut self.lanes {
                        l.sched.set_flow(j, q);
                    }
                    j
                }
            };
            let measured = self.measured();
            self.jobs[job as usize].submitted(out.len(), measured);
            self.plug_reqs.clear();
            self.first_submit.get_or_insert(self.now);
            for &(lane, mut spec) in &out {
                spec.job = job;
                self.n_bios += 1;
                let id = self.table.alloc_bio(spec, self.now);
                let lane = (lane as usize).min(self.lanes.len() - 1) as u8;
                self.enter_block_layer(id, lane, false);
            }
            self.flush_plug();
        }
        let issued = !out.is_empty();
        self.stage_buf = out;
        // A stage that wants polling keeps the run going only while there is
        // anything left to do: once every source is done and nothing is
        // queued, a poll that issued nothing ends it (a periodic stage would
        // otherwise never let the run end).
        let active = issued || self.table.live() > 0 || self.src.iter().any(|s| !s.done);
        if let (Some(t), true) = (next, active) {
            self.arm_timer(t);
        }
    }

    /// The bios one process submitted together: the plug. Merge within the
    /// plug, then try the scheduler's merge, else allocate a request.
    fn submit_batch(&mut self, bios: &[BioSpec]) {
        self.plug_reqs.clear();
        if !bios.is_empty() {
            self.first_submit.get_or_insert(self.now);
            self.last_submit = self.now;
        }
        for spec in bios {
            let mut spec = *spec;
            if let Some(stage) = self.stage.as_mut() {
                match stage.admit(&mut spec, self.now) {
                    Admit::Now => {}
                    Admit::At(t) => {
                        self.n_bios += 1;
                        let id = self.table.alloc_bio(spec, self.now);
                        self.seq += 1;
                        self.delayed.push(Reverse((t, self.seq, id)));
                        self.arm_timer(t);
                        continue;
                    }
                }
            }
            self.n_bios += 1;
            let id = self.table.alloc_bio(spec, self.now);
            if !self.defer(Later::Place(id)) {
                self.place(id, true);
            }
        }
        self.task_blocked = None;
        self.flush_plug();
    }

    /// Route bio `id` to the device(s) its sectors live on (the placement
    /// stage's answer; lane 0 without one), splitting it where they differ.
    fn place(&mut self, id: u32, plugged: bool) {
        let Some(stage) = self.stage.as_mut() else {
            return self.enter_block_layer(id, 0, plugged);
        };
        let mut pieces = std::mem::take(&mut self.piece_buf);
        pieces.clear();
        let spec = self.table.bio(id).spec;
        stage.place(&spec, self.now, &mut pieces);
        let last = self.lanes.len() - 1;
        match pieces.len() {
            0 => self.enter_block_layer(id, 0, plugged),
            1 => {
                let p = pieces[0];
                self.table.bio_mut(id).spec.sector = p.sector;
                self.enter_block_layer(id, (p.lane as usize).min(last) as u8, plugged);
            }
            _ => {
                let lens: Vec<u32> = pieces.iter().map(|p| p.sectors).collect();
                let mut parts = Vec::with_capacity(lens.len());
                self.table.split_into(id, &lens, &mut parts);
                self.n_split += parts.len() as u64 - 1;
                for (&part, p) in parts.iter().zip(&pieces) {
                    self.table.bio_mut(part).spec.sector = p.sector;
                    self.enter_block_layer(part, (p.lane as usize).min(last) as u8, plugged);
                }
            }
        }
        self.piece_buf = pieces;
    }

    fn release_delayed(&mut self) {
        self.plug_reqs.clear();
        while let Some(&Reverse((t, _, id))) = self.delayed.peek() {
            if t > self.now {
                self.arm_timer(t);
                break;
            }
            self.delayed.pop();
            self.place(id, false);
        }
        self.flush_plug();
    }

    /// A bio enters lane `lane`'s block layer: split at max_sectors first
    /// (`bio_split_to_limits`), then each part is merged or becomes a request.
    fn enter_block_layer(&mut self, id: u32, lane: u8, plugged: bool) {
        if plugged && self.defer(Later::Enter(id, lane)) {
            return;
        }
        let max = self.lanes[lane as usize].block.max_sectors;
        if self.table.bio(id).spec.sectors <= max {
            return self.enter_one(id, lane, plugged);
        }
        let mut parts = std::mem::take(&mut self.split_buf);
        parts.clear();
        self.table.split_bio(id, max, &mut parts);
        self.n_split += parts.len() as u64 - 1;
        for &p in &parts {
            if !(plugged && self.defer(Later::Enter(p, lane))) {
                self.enter_one(p, lane, plugged);
            }
        }
        self.split_buf = parts;
    }

    fn enter_one(&mut self, id: u32, lane: u8, plugged: bool) {
        let spec = self.table.bio(id).spec;
        let l = &mut self.lanes[lane as usize];
        if plugged && l.block.plug {
            // Back merge into the previous request of this plug (blk_attempt_plug_merge).
            if let Some(&last) = self.plug_reqs.last() {
                let r = self.table.get(last);
                if r.lane == lane
                    && r.end() == spec.sector
                    && bio_fits(r, &spec, l.block.max_sectors)
                {
                    self.table.back_merge_bio(last, id);
                    self.n_merged += 1;
                    return;
                }
            }
        }
        let owner = l.owner;
        if owner == lane && !l.shared {
            let mut ctx = Ctx {
                now: self.now,
                table: &mut self.table,
                max_sectors: l.block.max_sectors,
            };
            if l.sched.bio_merge(&mut ctx, id) {
                self.n_merged += 1;
                return;
            }
        }
        let limit = self.limit_of(id, lane);
        let sync = spec.is_sync();
        if !self.tag_free(lane, limit, sync) {
            let job = spec.job as usize;
            if self.sources.get(job).is_some_and(|s| s.one_task()) {
                self.src[job].asleep += 1;
            }
            if plugged {
                // The submitting task sleeps for a request (blk_mq_get_tag): its slat runs
                // on, and its later bios wait for it.
                self.table.bio_mut(id).queued = Ns::MAX;
                self.task_blocked = Some(id);
            }
            self.n_blocked += 1;
            let list = self.wait_list(lane, limit, sync);
            self.lanes[lane as usize].blocked[list].push_back((self.n_blocked, id));
            self.peak_blocked = self.peak_blocked.max(self.waiting());
            return;
        }
        let rq = self.alloc(id, lane, limit.is_some());
        self.plug_reqs.push(rq);
    }

    /// Bios waiting for a request, on every device.
    fn waiting(&self) -> usize {
        self.n_cont
            + self
                .lanes
                .iter()
                .map(|l| l.blocked[0].len() + l.blocked[1].len())
                .sum::<usize>()
    }

    /// Bio `id` (or split part) comes after one its task sleeps on: it waits.
    fn defer(&mut self, later: Later) -> bool {
        let Some(b) = self.task_blocked else {
            return false;
        };
        self.cont.entry(b).or_default().push(later);
        self.n_cont += 1;
        true
    }

    /// The task asleep on bio `bio` has its request: what it submitted
    /// after, in order (a bio that sleeps again takes the rest with it).
    fn resume_task(&mut self, bio: u32) {
        let Some(rest) = self.cont.remove(&bio) else {
            return;
        };
        self.n_cont -= rest.len();
        self.task_blocked = None;
        for later in rest {
            if self.defer(later) {
                continue;
            }
            match later {
                Later::Place(id) => self.place(id, true),
                Later::Enter(id, lane) => self.enter_block_layer(id, lane, true),
            }
        }
        self.task_blocked = None;
    }

    /// The shallow depth bio `id`'s request would take its tag under. A
    /// shallow depth of 0 is no limit, as `__blk_mq_get_tag` reads
    /// `data->shallow_depth` (kyber's async depth is 0 at nr_requests 4-7,
    /// where each sbitmap word holds one tag and 75 % of it rounds down).
    fn limit_of(&self, id: u32, lane: u8) -> Option<u32> {
        let s = &self.table.bio(id).spec;
        let l = &self.lanes[lane as usize];
        self.lanes[l.owner as usize]
            .sched
            .limit_depth(s, self.now, l.block.nr_requests)
            .filter(|&d| d > 0)
    }

    /// Whether a request (under shallow depth `limit`; of class `sync`) can
    /// be had now on `lane`: nr_requests together, or per class under the
    /// single-queue request lists.
    fn tag_free(&self, lane: u8, limit: Option<u32>, sync: bool) -> bool {
        let block = &self.lanes[lane as usize].block;
        let live = if block.request_lists {
            self.table.live_class_on(lane, sync)
        } else {
            self.table.live_on(lane)
        };
        (live as u32) < block.nr_requests
            && limit.is_none_or(|l| (self.table.live_limited_on(lane) as u32) < l)
    }

    /// The waiting list a bio that finds no request joins: its class under
    /// the request lists (0 sync, 1 async), else whether a shallow depth
    /// limits it (0 no, 1 yes).
    fn wait_list(&self, lane: u8, limit: Option<u32>, sync: bool) -> usize {
        if self.lanes[lane as usize].block.request_lists {
            (!sync) as usize
        } else {
            limit.is_some() as usize
        }
    }

    /// Tasks waiting for a request of `lane` get one, oldest first among
    /// those whose kind of tag is free (a write over its shallow depth does
    /// not hold up a read behind it). A freed tag is not handed over
    /// (sbitmap wakes a waiter, which takes a tag when it runs): where the
    /// completion also woke task `reaper` to reap, and the guest's scheduler
    /// runs that one first, it takes the tag if it submits; the waiter is
    /// woken again when a tag is free after that (`Sim::after_task`).
    fn wake_waiters(&mut self, lane: u8, reaper: Option<u32>) {
        let li = lane as usize;
        loop {
            // Each list's oldest bio, its shallow depth and class: can it have a request?
            let free = |k: usize| {
                self.lanes[li].blocked[k].front().is_some_and(|&(_, b)| {
                    let limit = self.limit_of(b, lane);
                    self.tag_free(lane, limit, self.table.bio(b).spec.is_sync())
                })
            };
            let (any, lim) = (free(0), free(1));
            let b = &self.lanes[li].blocked;
            let k = match (any, lim) {
                (true, true) => (b[1][0].0 < b[0][0].0) as usize,
                (true, false) => 0,
                (false, true) => 1,
                (false, false) => break,
            };
            let Some(&(_, bio)) = self.lanes[li].blocked[k].front() else {
                break;
            };
            let job = self.table.bio(bio).spec.job;
            if let Some(r) = reaper.filter(|&r| r != job) {
                if self.runs_first(r, job) {
                    self.tag_races_reaper += 1;
                    // It woke, found the request taken, and sleeps again.
                    self.src[job as usize].slept = self.now;
                    break;
                }
                self.tag_races_waiter += 1;
            }
            self.lanes[li].blocked[k].pop_front();
            let limited = self.limit_of(bio, lane).is_some();
            let r = self.alloc(bio, lane, limited);
            self.plug_reqs.push(r);
            self.resume_task(bio);
            if let Some(st) = self.src.get_mut(job as usize).filter(|st| st.asleep > 0) {
                st.asleep -= 1;
                if st.asleep == 0 && (std::mem::take(&mut st.missed) || !st.unreaped.is_empty()) {
                    // Its task runs again: it goes on submitting, and reaps once its
                    // queue is full (poll_source).
                    self.schedule_wake(job, self.now);
                }
            }
        }
    }

    /// Whether, of tasks `a` (woken to reap) and `b` (woken for a tag) ready
    /// at once on the host's one CPU, the guest's scheduler (CFS) runs `a`
    /// first: the one that used less CPU, a sleeper's credit bounded by half the
    /// scheduling latency (place_entity), `a` on a tie (its wake came first:
    /// the bio's end precedes the tag's release in blk_mq_end_request). With a
    /// lag kept ([`Sim::set_lag_task`], EEVDF) the one with a lag runs first
    /// where only one has it.
    fn runs_first(&self, a: u32, b: u32) -> bool {
        let (la, lb) = (self.keeps_lag(a), self.keeps_lag(b));
        if la != lb {
            // EEVDF (Sim::set_lag_task): the one placed ahead by its lag.
            return la;
        }
        let (ua, ub) = (self.src[a as usize].cpu_used, self.src[b as usize].cpu_used);
        let floor = ua.max(ub).saturating_sub(SLEEPER_CREDIT_NS);
        ua.max(floor) <= ub.max(floor)
    }

    /// A task ran: tags it left free go to the tasks waiting for them.
    fn after_task(&mut self) {
        if self.tag_races_reaper == 0 {
            return;
        }
        self.plug_reqs.clear();
        for l in 0..self.lanes.len() {
            if self.lanes[l].blocked.iter().any(|b| !b.is_empty()) {
                self.wake_waiters(l as u8, None);
            }
        }
        self.flush_plug();
    }

    fn alloc(&mut self, bio: u32, lane: u8, limited: bool) -> ReqId {
        self.n_requests += 1;
        let rq = self.table.alloc_req_on(bio, self.now, lane);
        if limited {
            self.table.set_limited(rq);
        }
        let live = self.table.live_on(lane);
        let l = &mut self.lanes[lane as usize];
        l.peak_requests = l.peak_requests.max(live);
        rq
    }

    /// Call a hook of lane `lane`'s scheduler with its context (the request
    /// table, the lane's max_sectors).
    fn with_sched<R>(&mut self, lane: u8, f: impl FnOnce(&mut dyn Scheduler, &mut Ctx) -> R) -> R {
        let max_sectors = self.lanes[lane as usize].block.max_sectors;
        let owner = self.lanes[lane as usize].owner as usize;
        let l = &mut self.lanes[owner];
        let mut ctx = Ctx {
            now: self.now,
            table: &mut self.table,
            max_sectors,
        };
        f(l.sched.as_mut(), &mut ctx)
    }

    /// Every device the scheduler of lane `owner` serves has room.
    fn group_has_room(&self, owner: u8) -> bool {
        self.lanes
            .iter()
            .filter(|l| l.owner == owner)
            .all(|l| l.dev_inflight < l.depth)
    }

    fn flush_plug(&mut self) {
        let reqs = std::mem::take(&mut self.plug_reqs);
        for &rq in &reqs {
            self.table.get_mut(rq).inserted = self.now;
            let lane = self.table.get(rq).lane;
            self.lanes[lane as usize].dev.prefetch(self.table.get(rq));
            self.with_sched(lane, |s, ctx| s.insert(ctx, rq));
        }
        self.plug_reqs = reqs;
        self.plug_reqs.clear();
    }

    fn arm_timer(&mut self, t: Ns) {
        let t = t.max(self.now + 1);
        if self.timer_at.is_some_and(|x| x <= t && x > self.now) {
            return;
        }
        self.timer_at = Some(t);
        self.push(t, Ev::Timer);
    }

    /// Dispatch on every device.
    fn run_queues(&mut self) {
        for l in 0..self.lanes.len() {
            self.run_queue(l as u8);
        }
    }

    /// Dispatch while device `lane` has room (blk_mq_run_hw_queue).
    fn run_queue(&mut self, lane: u8) {
        let lane = self.lanes[lane as usize].owner;
        let li = lane as usize;
        if self.restart_at.is_some_and(|t| self.now < t) && self.restart_lanes.contains(&lane) {
            // Its restart waits for the task that runs first (Sim::restart_held).
            return;
        }
        let shared = self.lanes[li].shared;
        // blk-mq parks the request it dequeued past a full device (the host modelled).
        let parks = self.cpu_ns > 0 && !shared;
        loop {
            let room = if shared {
                self.group_has_room(lane)
            } else {
                self.lanes[li].dev_inflight < self.lanes[li].depth
            };
            let l = &mut self.lanes[li];
            if !l.sched.has_work() && l.parked.is_none() {
                break;
            }
            if !room {
                if parks && l.parked.is_none() {
                    let mut ctx = Ctx {
                        now: self.now,
                        table: &mut self.table,
                        max_sectors: l.block.max_sectors,
                    };
                    l.parked = l.sched.dispatch(&mut ctx);
                }
                break;
            }
            // Requests the scheduler holds (allocated, not at the device).
            let held = self.table.live_on(lane) - l.dev_inflight as usize;
            let rq = if let Some(rq) = l.parked.take() {
                rq
            } else {
                let mut ctx = Ctx {
                    now: self.now,
                    table: &mut self.table,
                    max_sectors: l.block.max_sectors,
                };
                let Some(rq) = l.sched.dispatch(&mut ctx) else {
                    break;
                };
                rq
            };
            l.n_dispatches += 1;
            if held >= 2 {
                l.n_choices += 1;
            }
            let now = self.now;
            let r = self.table.get_mut(rq);
            r.dispatched = now;
            // A shared scheduler's request goes to its own device.
            let dev_lane = r.lane;
            let l = &mut self.lanes[dev_lane as usize];
            let start = self.dispatch_from.unwrap_or(now).max(l.feed_at);
            let done = l.dev.submit_tagged(rq, self.table.get(rq), start).max(now);
            if l.dev_inflight == 0 {
                l.busy_since = start;
            }
            l.dev_inflight += 1;
            if self.run.log_issues {
                let r = self.table.get(rq);
                let tags = self
                    .table
                    .bios_of(rq)
                    .map(|b| self.table.bio(b).spec.tag)
                    .collect();
                self.issues.push(Issue {
                    time_ns: now,
                    op: r.op,
                    sync: r.sync,
                    sector: r.sector,
                    sectors: r.sectors,
                    nr_bios: r.nr_bios,
                    pid: r.pid,
                    tags,
                    complete_ns: done,
                    dev: dev_lane,
                });
            }
            self.push(done, Ev::Complete(rq));
        }
        if self.lanes[li].offloads {
            self.take_offloads(lane);
        }
        let room = if shared {
            self.group_has_room(lane)
        } else {
            self.lanes[li].dev_inflight < self.lanes[li].depth
        };
        let l = &self.lanes[li];
        if l.sched.has_work() && room {
            if let Some(t) = l.sched.next_timer(self.now) {
                self.arm_timer(t);
            }
        }
    }

    /// Requests lane `lane`'s scheduler gave up to another device
    /// (BID-Hybrid's tier placement): the placement stage says where each
    /// goes; its bios move there (sectors re-addressed) as new requests, or
    /// the scheduler takes the request back when the stage refuses it.
    fn take_offloads(&mut self, lane: u8) {
        let li = lane as usize;
        let mut buf = std::mem::take(&mut self.offload_buf);
        buf.clear();
        self.lanes[li].sched.take_offloaded(&mut buf);
        if buf.is_empty() {
            self.offload_buf = buf;
            return;
        }
        let mut moved = [false; 256];
        let mut refused = false;
        self.plug_reqs.clear();
        for &rq in &buf {
            let r = self.table.get(rq).clone();
            let spec = BioSpec {
                op: r.op,
                sync: r.sync,
                sector: r.sector,
                sectors: r.sectors,
                pid: r.pid,
                job: 0,
                tag: 0,
                attrs: r.attrs,
            };
            let to = self
                .stage
                .as_mut()
                .and_then(|s| s.offload(lane, &spec, self.now))
                .filter(|&(t, _)| (t as usize) < self.lanes.len() && t != lane);
            let Some((to, sector)) = to else {
                refused = true;
                self.lanes[li].n_refused += 1;
                self.with_sched(lane, |s, ctx| s.offload_refused(ctx, rq));
                continue;
            };
            self.lanes[li].n_offloaded += 1;
            let bios: Vec<u32> = self.table.bios_of(rq).collect();
            self.table.free_req(rq);
            for b in bios {
                let bio = self.table.bio_mut(b);
                bio.spec.sector = sector + (bio.spec.sector - r.sector);
                bio.next = NONE;
                self.enter_one(b, to, false);
            }
            moved[to as usize] = true;
        }
        self.offload_buf = buf;
        // Tags freed here go to tasks waiting on this lane.
        self.wake_waiters(lane, None);
        self.flush_plug();
        for (t, _) in moved.iter().enumerate().filter(|m| *m.1) {
            self.run_queue(t as u8);
        }
        if refused {
            // The scheduler took them back, ready to go: dispatch again.
            self.run_queue(lane);
        }
    }

    /// A source's bio done: its latencies (fio's: until its task reaps it,
    /// `self.now`; the device's: until `device_done`), its job's and process's
    /// statistics, and the source told.
    fn account(
        &mut self,
        done: &Finished,
        op: Op,
        dispatched: Ns,
        device_done: Ns,
        measured: bool,
    ) {
        let lat = self.now - done.submitted;
        let l = Lat {
            total: lat,
            slat: done.queued.saturating_sub(done.submitted).min(lat),
            queue: dispatched.saturating_sub(done.submitted),
            device: device_done - dispatched,
        };
        let job = done.spec.job;
        if measured {
            let js = &mut self.jobs[job as usize];
            let bytes = done.spec.sectors as u64 * SECTOR;
            js.record(op, bytes, l, self.now, self.run.interval);
            if let Some(log) = js.log.as_mut() {
                log.record(op, bytes, done.spec.sector * SECTOR, l, self.now);
            }
            let full = self.procs.len() >= crate::metrics::MAX_PROCESSES;
            let p = match self.procs.entry(done.spec.pid) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(_) if full => {
                    self.other_procs.get_or_insert_with(Default::default)
                }
                std::collections::hash_map::Entry::Vacant(e) => e.insert(Default::default()),
            };
            p.record(op, bytes, lat);
        } else {
            self.jobs[job as usize].completed_unmeasured();
        }
        self.sources[job as usize].complete(&done.spec, self.now);
        self.n_completed += 1;
        self.src[job as usize].completed += 1;
    }

    /// One interrupt: the requests `irq` done at the device now, in the order
    /// the device completed them (one, with an ideal host). Each frees its
    /// request; then the queue restarts, tasks waiting for a request get one,
    /// and the tasks woken to reap run. Where the first completion woke a
    /// task that runs first ([`Sim::set_reaper_first`]), the restart waits
    /// for that task's run.
    fn complete_irq(&mut self, irq: &[ReqId]) -> Result<()> {
        let mut wake = std::mem::take(&mut self.wake_buf);
        wake.clear();
        // A task these completions wake to reap (after the host's CPU processed them).
        let mut reaper: Option<u32> = None;
        // The task the first completion woke to reap, and when it runs.
        let mut lead: Option<Option<(u32, Ns)>> = None;
        // The lanes whose requests ended, in order.
        let mut done: Vec<u8> = Vec::new();
        for &rq in irq {
            let Some((lane, woke)) = self.end_request(rq, &mut wake, &mut reaper, lead.is_none())
            else {
                continue;
            };
            lead.get_or_insert(woke);
            if !done.contains(&lane) {
                done.push(lane);
            }
        }
        for &j in &wake {
            self.jobs[j as usize].reaped();
        }
        match lead.flatten() {
            Some((_, at)) => {
                // The woken task runs first: the restart waits for its run.
                self.restart_at = Some(self.restart_at.map_or(at, |t| t.max(at)));
                self.restart_irq = self.now;
                for l in done {
                    if !self.restart_lanes.contains(&l) {
                        self.restart_lanes.push(l);
                    }
                }
                self.push(at, Ev::Restart);
            }
            None => {
                for l in done {
                    self.restart(l, reaper);
                }
            }
        }
        for &s in &wake {
            if !self.src[s as usize].done {
                self.poll_source(s)?;
            }
        }
        self.wake_buf = wake;
        self.run_queues();
        Ok(())
    }

    /// The freed driver tag restarts the queue first (blk_mq_sched_restart,
    /// in the completion's context): what the scheduler holds is dispatched
    /// before a task woken for a request runs and inserts its own. Then tasks
    /// waiting for a request get one, in order. (Requests merged into others
    /// were freed by the scheduler: live() counts what is held.)
    fn restart(&mut self, lane: u8, reaper: Option<u32>) {
        self.run_queue(lane);
        self.plug_reqs.clear();
        self.wake_waiters(lane, reaper);
        self.flush_plug();
        if self.stage.is_some() {
            self.poll_stage();
        }
        self.run_queue(lane);
    }

    /// The restart held for a task that ran first ([`Sim::set_reaper_first`]),
    /// once its time has come: the task has run (it reaps and submits at its
    /// wake, just before this) or, if it had nothing to submit, the restart
    /// goes on without it.
    fn restart_held(&mut self) {
        if self.restart_at.is_none_or(|t| self.now < t) {
            return;
        }
        self.restart_at = None;
        self.dispatch_from = Some(self.restart_irq);
        for l in std::mem::take(&mut self.restart_lanes) {
            self.restart(l, None);
        }
        self.dispatch_from = None;
    }

    /// Whether task `job`, woken to reap, runs before every task asleep for a
    /// request of `lane` (the guest's scheduler, [`Sim::runs_first`]).
    fn runs_before_waiters(&self, job: u32, lane: u8) -> bool {
        self.lanes[lane as usize].blocked.iter().all(|b| {
            b.front().is_none_or(|&(_, bio)| {
                let w = self.table.bio(bio).spec.job;
                w == job || self.runs_first(job, w)
            })
        })
    }

    /// Task `job` runs now on the host's CPU, ahead of the completions queued
    /// there (each of which its task now sees that much later): returns when
    /// it has run.
    fn jump_cpu(&mut self, job: u32, measured: bool) -> Ns {
        let (now, c) = (self.now, self.cpu_ns);
        for st in &mut self.src {
            for u in st.unreaped.iter_mut().filter(|u| u.ready > now) {
                u.ready += c;
            }
        }
        self.cpu_free = self.cpu_free.max(now) + c;
        if measured {
            self.cpu_busy_ns += c;
        }
        self.src[job as usize].cpu_used += c;
        now + c
    }

    /// Request `rq` done at the device: its bios end (their tasks see them
    /// once the host's CPU processed them), the scheduler is told, the request
    /// is freed. Returns its lane, and, for the interrupt's first completion
    /// (`lead`), the task its first bio woke that runs first
    /// ([`Sim::set_reaper_first`]) with when it has run, or `None`
    /// where the device has not decided yet (`Device::recheck`).
    fn end_request(
        &mut self,
        rq: ReqId,
        wake: &mut Vec<u32>,
        reaper: &mut Option<u32>,
        lead: bool,
    ) -> Option<(u8, Option<(u32, Ns)>)> {
        let lane = self.table.get(rq).lane;
        let li = lane as usize;
        // A queueing device may not have decided yet (Device::recheck).
        if let Some(t) = self.lanes[li].dev.recheck(rq, self.now) {
            self.push(t.max(self.now + 1), Ev::Complete(rq));
            return None;
        }
        let l = &mut self.lanes[li];
        l.dev_inflight -= 1;
        if l.dev_inflight == 0 {
            l.busy_ns += self.now - l.busy_since;
        }
        l.feed_at = self.now + self.turnaround_ns;
        self.last_completion = self.now;
        let measured = self.measured();
        let (op, dispatched) = {
            let r = self.table.get(rq);
            if measured {
                self.lanes[li].disk.record(
                    r.op,
                    r.sectors,
                    r.nr_bios,
                    self.now - r.inserted.min(self.now),
                );
            }
            (r.op, r.dispatched)
        };
        let mut b = self.table.get(rq).first_bio;
        let mut first = true;
        let mut woke: Option<(u32, Ns)> = None;
        while b != NONE {
            let bio = *self.table.bio(b);
            self.table.free_bio(b);
            b = bio.next;
            if let Some(stage) = self.stage.as_mut() {
                stage.completed(lane, &bio.spec, self.now);
            }
            // A part of a split bio completes the source's bio with its last
            // part: one completion, one latency sample, in every statistic.
            let Some(done) = self.table.finish_bio(&bio) else {
                continue;
            };
            let job = done.spec.job;
            let st = &self.src[job as usize];
            let running = st.asleep == 0 && !st.filling;
            // The task the interrupt's first completion woke runs first
            // (Sim::set_reaper_first): its share of the host's CPU goes ahead of
            // the work queued there.
            let jumps = lead
                && first
                && self.reaper_first
                && self.cpu_ns > 0
                && running
                && self.sources[job as usize].one_task()
                && self.runs_before_waiters(job, lane);
            // Else the host's CPU processes the completions in order: its task sees
            // this one when its share is done.
            let ready = if jumps {
                self.jump_cpu(job, measured)
            } else if self.cpu_ns > 0 {
                self.cpu_free = self.cpu_free.max(self.now) + self.cpu_ns;
                if measured {
                    self.cpu_busy_ns += self.cpu_ns;
                }
                self.src[job as usize].cpu_used += self.cpu_ns;
                self.cpu_free
            } else {
                self.now
            };
            let st = &mut self.src[job as usize];
            if st.asleep > 0 || st.filling || ready > self.now {
                // Its task is submitting (asleep in blk_mq_get_tag, or between the
                // io_submit calls of one fill): fio reaps only once its queue is full
                // (`queue_full` in do_io), and times the completion then. Or the
                // host's CPU has not got to it yet: its task reaps it then.
                if running && self.sources[job as usize].one_task() {
                    reaper.get_or_insert(job);
                }
                if jumps {
                    woke = Some((job, ready));
                }
                st.unreaped.push(Unreaped {
                    done,
                    op,
                    dispatched,
                    at: self.now,
                    ready,
                    measured,
                });
                if running {
                    self.schedule_wake(job, ready);
                }
                first = false;
                continue;
            }
            first = false;
            self.account(&done, op, dispatched, self.now, measured);
            if !wake.contains(&job) {
                wake.push(job);
            }
        }
        self.with_sched(lane, |s, ctx| s.completed(ctx, rq));
        self.table.free_req(rq);
        Some((lane, woke))
    }
}
