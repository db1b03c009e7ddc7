//! Trace replay: a [`Source`] that streams a block trace (blkparse text, fio
//! iolog v2/v3, MSR Cambridge CSV, SPC; see [`formats`]) one line at a time,
//! or the `block_ops` table of a `vlab trace` SQLite database one row at a
//! time (`sqlite`; see [`db`]).
//!
//! Both inputs produce tagged [`Record`]s through one seam, `Input::next`
//! (a text line through its format's parser, or a database row); everything
//! above it (timing, closed loop, options, counters) is the same replay.
//!
//! Memory is bounded by the bios in flight, never by the trace length: the
//! reader keeps one line buffer and at most one parsed record ahead (plus a
//! bounded look-ahead of [`lines::MAX_LOOKAHEAD`] lines at start-up, for
//! format and blkparse-action detection); a database is read by one query
//! whose rows come over a bounded channel ([`db`]).
//!
//! Replay models:
//! - **open loop** (default for timed formats): record *i* arrives at
//!   `start + (t_i - t_0) * time_scale`, where `t_0` is the time of the first
//!   replayed record and `start` the time of the source's first poll
//!   (`time_scale` 2 = twice as slow, 0.5 = twice as fast). Records whose time
//!   goes backwards are due at once (no reordering). The source asks to be
//!   woken at the next record's time and submits every record due; a batch
//!   (one plug) ends when the PID changes or after [`BATCH`] bios; a blkparse
//!   trace with `Q` arrivals plugs as the traced kernel did instead (below). For iolog v2
//!   the time of a record is that of the last `wait` before it (ms since start,
//!   as fio), so a v2 log without waits arrives all at once.
//! - **plugging** (blkparse, arrivals `Q`): a process's bios between its `P`
//!   (the first request put in an empty plug: the `Q` just before it opens the
//!   plug) and its `U`/`UT` (the flush) are submitted together at the flush,
//!   as one plug, so they merge where the kernel's merged; a `Q` that no `P`
//!   follows within [`HOLD_LINES`] lines or [`HOLD_NS`] is submitted alone at
//!   its own time. Plugs and single bios are replayed in the order of those
//!   times. A plug reaching [`BATCH`] bios, or open at the end of the trace,
//!   is flushed there. The trace's `D` events of data are counted
//!   (`kernel_requests`), to set the requests the replay made beside the
//!   kernel's. Memory: the bios read but not yet due, and per process with a
//!   plug open or a `Q` waiting for its `P` one entry, removed at the flush.
//! - **closed loop** (`mode=closed`, or `depth=N` given; default for iolog
//!   v2): keeps `depth` of its bios outstanding and ignores timestamps, as fio
//!   replays a log with `iodepth=N` and `replay_no_stall=1`.
//!
//! Options ([`OPTIONS`]): `path`, `format` (auto | blkparse | iolog | msr |
//! spc | sqlite; auto takes a file that starts with SQLite's 16-byte header
//! as sqlite), `mode` (open | closed), `depth` (closed loop, default 1),
//! `time_scale` (> 0, default 1), `skip_bad` (bool), `max_records` (0 = all),
//! `offset_sectors` (added to every record's sector), `wrap` (bool: map a
//! record that ends beyond the device to `sector mod capacity`, and, if it
//! would still cross the end, to the last `n` sectors; without `wrap` such a
//! record is a bad line), `sync_writes` (all writes REQ_SYNC), `action`
//! (blkparse: auto | Q | D; auto takes Q, or D when the first 4096 lines
//! hold no Q but some D), `time` (sqlite: queue | issue, default queue: a
//! request arrives when its first bio was queued, `queue_ns`, or where that
//! is NULL when it was issued, `issue_ns`; `issue` takes `issue_ns`, as
//! blkparse's D), `pid` (constant pid for formats without one, and for rows
//! without one; default 1000 + job index), `asu_pid` (SPC: pid = `pid` +
//! ASU), `name`, `weight`, `reservation`, `limit` (the trace's flow for the
//! fair-queueing schedulers: `crate::sched::FlowQos`); `type` is ignored (the
//! caller's selector).
//!
//! PIDs: blkparse and sqlite keep the trace's PID in `BioSpec::pid`; iolog,
//! MSR and SPC use the constant `pid` (SPC with `asu_pid=1`: `pid + ASU`).
//! Sync: the blkparse (or `block_ops.rwbs`) `S` (and `F`) flag makes a write
//! sync; otherwise writes are async unless `sync_writes=1`. `BioSpec::tag` is
//! the record's 1-based line number, so issue logs refer back to trace lines;
//! for sqlite it is the row's `block_ops.id`. sqlite rows of op discard, flush
//! or other are non-data records (`skipped_non_data`), as a blkparse flush.
//!
//! Errors name `file:line` and the field (`trace.csv:17: field 6 (Size)
//! 'abc' is not an integer`), or for a database the row (`t.db: block_ops id
//! 17: sector -8 is negative`); with `skip_bad=1` bad lines are skipped and
//! counted instead. [`Source::input_stats`] reports the counters; for sqlite
//! also `time`, the database's `lost_events` (`meta`; null when absent),
//! `files` (per file, the most sectors first: `ino`, `gen`, `name`, `path`,
//! `requests`, `sectors`, simulated `mean_lat_us` and `max_lat_us`, at most
//! [`db::MAX_FILES_LISTED`]) and `other_files` (the rest summed, with their
//! count as `files`; null when none).

use super::{Next, Source};
use crate::params::Params;
use crate::types::{BioSpec, Ns, Op};
use anyhow::{bail, Context, Result};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{BufRead, BufReader};
use std::path::Path;

pub mod db;
pub mod formats;
pub mod lines;

use db::{DbRows, FileStats, TimeCol};
use formats::{Format, Line, Parser, Record};
use lines::Lines;

/// Every option a trace source understands; anything else is an error.
pub const OPTIONS: &[&str] = &[
    "type",
    "name",
    "path",
    "format",
    "mode",
    "depth",
    "time_scale",
    "skip_bad",
    "max_records",
    "offset_sectors",
    "wrap",
    "sync_writes",
    "action",
    "time",
    "pid",
    "asu_pid",
    "weight",
    "reservation",
    "limit",
];

/// Most bios submitted by one poll (one plug); the rest follow at the same time.
pub const BATCH: usize = 256;

/// Plugging: lines after a `Q` within which its process's `P` must come for
/// the `Q` to open the plug (the kernel traces `Q`, `G`, `P` back to back).
pub const HOLD_LINES: u64 = 64;

/// Plugging: trace time after a `Q` within which its process's `P` must come.
pub const HOLD_NS: u64 = 1_000_000;

/// Lines examined for format detection.
const DETECT_LINES: usize = 64;

/// Input counters, reported by [`Source::input_stats`].
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct InputStats {
    pub file: String,
    pub format: String,
    pub mode: String,
    /// Lines read (rows, for a trace database).
    pub lines: u64,
    /// Data records replayed.
    pub records: u64,
    pub skipped_bad: u64,
    /// Records of the arrival kind without data (flush, discard, trim, sync).
    pub skipped_non_data: u64,
    /// Lines that are not arrivals (other blkparse actions, iolog file
    /// actions, headers, blank lines, the blkparse summary).
    pub ignored_lines: u64,
    /// Records moved by `wrap`.
    pub wrapped: u64,
    /// Open loop: records timed before an earlier record (replayed at once,
    /// not reordered), and the first of them as `file:line` with its time.
    pub backward: u64,
    pub first_backward: Option<String>,
    /// The first bad line, as `file:line: message`.
    pub first_bad: Option<String>,
    /// Most bios of this source in flight at once.
    pub max_inflight: u32,
    /// blkparse with `Q` arrivals: the trace's `D` events of data (the
    /// requests the traced kernel issued); null otherwise.
    pub kernel_requests: Option<u64>,
    /// blkparse with `Q` arrivals: plugs replayed (`P` ... `U`).
    pub plugs: u64,
}

/// Bios submitted together (a plug) or one bio alone, due at trace time
/// `due` (a plug: its flush; a bio alone: its `Q`); `seq` orders equal times
/// by reading order.
struct Unit {
    due: u64,
    seq: u64,
    recs: Vec<(Record, u64)>,
}

impl PartialEq for Unit {
    fn eq(&self, o: &Self) -> bool {
        (self.due, self.seq) == (o.due, o.seq)
    }
}
impl Eq for Unit {}
impl PartialOrd for Unit {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Unit {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.due, self.seq).cmp(&(o.due, o.seq))
    }
}

/// A process's plugging state while it has one.
enum PidState {
    /// A `Q` (record, line, seq) not yet known to open a plug, read at line
    /// count `at`.
    Held(Record, u64, u64, u64),
    /// An open plug: its bios so far, and its seq.
    Open(Vec<(Record, u64)>, u64),
}

/// The replay's plugging (blkparse with `Q` arrivals; module docs).
#[derive(Default)]
struct Plugging {
    by_pid: rustc_hash::FxHashMap<u32, PidState>,
    /// Held `Q`s in reading order: (pid, seq); stale entries are skipped.
    held: VecDeque<(u32, u64)>,
    ready: BinaryHeap<Reverse<Unit>>,
    /// The unit taken from `ready` and not yet due.
    next: Option<Unit>,
    seq: u64,
    /// Data records read (for `max_records`).
    read: u64,
}

/// Replay options after validation.
#[derive(Clone, Debug)]
struct Opts {
    closed: bool,
    depth: u32,
    time_scale: f64,
    skip_bad: bool,
    max_records: u64,
    offset_sectors: u64,
    wrap: bool,
    sync_writes: bool,
    pid: u32,
    asu_pid: bool,
}

/// Where a trace's records come from: text lines through a format's parser,
/// or the rows of a trace database. Each item is tagged (line number, or
/// `block_ops.id`); the replay above it is the same for both.
enum Input {
    Text { lines: Lines, parser: Parser },
    Db(DbRows),
}

impl Input {
    /// The next line or row with its tag; `None` at the end.
    fn next(&mut self) -> Result<Option<(u64, Result<Line, String>)>> {
        match self {
            Input::Text { lines, parser } => {
                if !lines.next_line()? {
                    return Ok(None);
                }
                let parsed = if lines.cur_invalid {
                    Err("line is not UTF-8 text".to_string())
                } else {
                    parser.parse(&lines.cur)
                };
                Ok(Some((lines.lineno, parsed)))
            }
            Input::Db(rows) => rows.next_item(),
        }
    }

    /// Where item `tag` is, for messages: `file:line`, or `file: block_ops id N`.
    fn locate(&self, label: &str, tag: u64) -> String {
        match self {
            Input::Text { .. } => format!("{label}:{tag}"),
            Input::Db(rows) => rows.locate(tag),
        }
    }

    fn footprint(&self) -> usize {
        match self {
            Input::Text { lines, .. } => lines.footprint(),
            Input::Db(rows) => rows.footprint(),
        }
    }
}

/// A trace being replayed.
pub struct TraceSource {
    name: String,
    job_idx: u32,
    label: String,
    input: Input,
    format: Format,
    /// blkparse: the action used as arrivals (`b'Q'` or `b'D'`).
    arrival: u8,
    /// Per-file figures (trace databases, whose records name their file).
    files: Option<FileStats>,
    opts: Opts,
    device_sectors: u64,
    /// The next record to submit, parsed but not yet due, with its line number.
    pending: Option<(Record, u64)>,
    eof: bool,
    /// iolog v2: time of the last `wait`.
    v2_clock: u64,
    t0: Option<u64>,
    /// Latest record time replayed so far (open loop).
    latest: Option<u64>,
    /// The text file's size, for the progress display.
    total_bytes: Option<u64>,
    start: Option<Ns>,
    inflight: u32,
    stats: InputStats,
    /// Plugging: the latest trace time read.
    last_time: u64,
    /// Plugging as the trace's P/U events say (blkparse, `Q` arrivals).
    plug: Option<Box<Plugging>>,
}

/// Open the trace at option `path` (see the module docs for the options).
/// `name` is the source's name unless `name=` is given; `job_idx` sets the
/// default pid (1000 + job_idx) and `BioSpec::job`; `device_sectors` is the
/// device capacity in 512-B sectors; `seed` is unused (replay is
/// deterministic).
pub fn open(
    p: &Params,
    name: &str,
    job_idx: u32,
    device_sectors: u64,
    seed: u64,
) -> Result<Box<dyn Source>> {
    Ok(Box::new(open_trace(
        p,
        name,
        job_idx,
        device_sectors,
        seed,
    )?))
}

/// [`open`], as the concrete source (to read its records with
/// [`TraceSource::next_record`], as the Python API's trace reader does).
pub fn open_trace(
    p: &Params,
    name: &str,
    job_idx: u32,
    device_sectors: u64,
    seed: u64,
) -> Result<TraceSource> {
    let path = p
        .raw("path")
        .with_context(|| format!("trace '{name}': option 'path' is required"))?
        .to_string();
    let f = crate::params::open_regular(Path::new(&path))
        .with_context(|| format!("trace '{name}': cannot open '{path}'"))?;
    let mut r = BufReader::with_capacity(1 << 16, f);
    let head = r
        .fill_buf()
        .with_context(|| format!("trace '{name}': reading '{path}'"))?;
    match (head.starts_with(db::MAGIC), p.str_or("format", "auto").as_str()) {
        (true, "auto" | "sqlite") => {
            drop(r);
            return TraceSource::from_db(p, name, job_idx, &path, device_sectors);
        }
        (true, f @ ("blkparse" | "iolog" | "msr" | "spc")) => {
            bail!("{path}: an SQLite database, not a {f} trace; use format=sqlite or auto")
        }
        (false, "sqlite") => bail!(
            "{path}: not an SQLite database (no 'SQLite format 3' header); format=sqlite reads the database that vlab trace writes"
        ),
        _ => {}
    }
    if head.starts_with(&[0x1f, 0x8b]) {
        bail!("{path}: gzip-compressed; decompress it first (zcat {path} > trace)");
    }
    if head.starts_with(&[0x00, 0x74, 0x61, 0x65]) || head.starts_with(&[0x07, 0x74, 0x61, 0x65]) {
        bail!("{path}: binary blktrace; convert it with blkparse -i first");
    }
    let mut src =
        TraceSource::from_reader(p, name, job_idx, &path, Box::new(r), device_sectors, seed)?;
    src.total_bytes = std::fs::metadata(&path).ok().map(|m| m.len());
    Ok(src)
}

impl TraceSource {
    /// Replay from any reader; `label` names the input in messages (a file
    /// name). Same options as [`open`] (`path` is not read).
    pub fn from_reader(
        p: &Params,
        name: &str,
        job_idx: u32,
        label: &str,
        r: Box<dyn BufRead + Send>,
        device_sectors: u64,
        _seed: u64,
    ) -> Result<Self> {
        check_options(p, name, device_sectors)?;
        let mut lines = Lines::new(r, label);
        let format = match p.str_or("format", "auto").as_str() {
            "auto" => detect(&mut lines, label)?,
            "blkparse" => Format::Blkparse,
            "msr" => Format::Msr,
            "spc" => Format::Spc,
            "iolog" => iolog_version(&mut lines, label)?,
            "sqlite" => bail!(
                "trace '{name}': format=sqlite reads a database file given as path, not a stream"
            ),
            other => {
                bail!("trace '{name}': format={other} (auto, blkparse, iolog, msr, spc, sqlite)")
            }
        };
        let parser = Parser::new(format, b'Q');
        Self::new(
            p,
            name,
            job_idx,
            label,
            Input::Text { lines, parser },
            format,
            device_sectors,
        )
    }

    /// Replay the `block_ops` table of the trace database at `path` ([`db`]);
    /// same options as [`open`], and `time` (queue | issue).
    pub fn from_db(
        p: &Params,
        name: &str,
        job_idx: u32,
        path: &str,
        device_sectors: u64,
    ) -> Result<Self> {
        check_options(p, name, device_sectors)?;
        let time = match p.raw("time") {
            None => TimeCol::Queue,
            Some(t) => TimeCol::parse(t)
                .with_context(|| format!("trace '{name}': time={t} (queue or issue)"))?,
        };
        let rows = DbRows::open(path, path, time)?;
        let mut s = Self::new(
            p,
            name,
            job_idx,
            path,
            Input::Db(rows),
            Format::Sqlite,
            device_sectors,
        )?;
        s.files = Some(FileStats::default());
        Ok(s)
    }

    /// The replay over `input`, whose format is known.
    fn new(
        p: &Params,
        name: &str,
        job_idx: u32,
        label: &str,
        mut input: Input,
        format: Format,
        device_sectors: u64,
    ) -> Result<Self> {
        let name = p.str_or("name", name);
        let arrival = match (p.raw("action"), &mut input) {
            (None | Some("auto"), Input::Text { lines, .. }) if format == Format::Blkparse => {
                blkparse_arrival(lines)?
            }
            (None | Some("auto"), _) => b'Q',
            (Some(a @ ("Q" | "D")), _) if format == Format::Blkparse => a.as_bytes()[0],
            (Some(a @ ("Q" | "D")), _) => bail!(
                "trace '{name}': action={a} applies to blkparse traces, not {}",
                format.name()
            ),
            (Some(a), _) => bail!("trace '{name}': action={a} (auto, Q or D)"),
        };
        if let Input::Text { parser, .. } = &mut input {
            parser.arrival = arrival;
        }
        if format != Format::Sqlite && p.contains("time") {
            bail!(
                "trace '{name}': time applies to sqlite trace databases, not {}",
                format.name()
            );
        }
        let depth_given = p.contains("depth");
        let closed = match p.raw("mode") {
            None => depth_given || !format.timed(),
            Some("open") => false,
            Some("closed") => true,
            Some(m) => bail!("trace '{name}': mode={m} (open or closed)"),
        };
        let depth = p.u64_in("depth", 1, 1, 65536)? as u32;
        if depth_given && !closed {
            bail!("trace '{name}': depth applies to mode=closed");
        }
        let time_scale = p.f64_in("time_scale", 1.0, 1e-9, 1e9)?;
        let asu_pid = p.bool_or("asu_pid", false)?;
        if asu_pid && format != Format::Spc {
            bail!(
                "trace '{name}': asu_pid applies to SPC traces, not {}",
                format.name()
            );
        }
        let opts = Opts {
            closed,
            depth,
            time_scale,
            skip_bad: p.bool_or("skip_bad", false)?,
            max_records: p.u64_in("max_records", 0, 0, u64::MAX)?,
            offset_sectors: p.u64_in("offset_sectors", 0, 0, u64::MAX / 2)?,
            wrap: p.bool_or("wrap", false)?,
            sync_writes: p.bool_or("sync_writes", false)?,
            pid: p.u64_in("pid", 1000 + job_idx as u64, 0, u32::MAX as u64 / 2)? as u32,
            asu_pid,
        };
        let plugging = format == Format::Blkparse && arrival == b'Q';
        let stats = InputStats {
            kernel_requests: plugging.then_some(0),
            file: label.to_string(),
            format: format.name().to_string(),
            mode: if closed {
                format!("closed(depth={depth})")
            } else {
                "open".to_string()
            },
            ..Default::default()
        };
        Ok(TraceSource {
            name,
            job_idx,
            label: label.to_string(),
            input,
            format,
            arrival,
            files: None,
            opts,
            device_sectors,
            pending: None,
            eof: false,
            v2_clock: 0,
            t0: None,
            latest: None,
            total_bytes: None,
            start: None,
            inflight: 0,
            stats,
            last_time: 0,
            plug: plugging.then(Box::default),
        })
    }

    /// The detected or given format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The blkparse action used as arrivals (`'Q'` or `'D'`).
    pub fn arrival_action(&self) -> char {
        self.arrival as char
    }

    /// Counters so far.
    pub fn stats(&self) -> &InputStats {
        &self.stats
    }

    /// Bios of this source in flight.
    pub fn inflight(&self) -> u32 {
        self.inflight
    }

    /// Bytes held in the source's buffers: constant in the trace length.
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.input.footprint()
            + self.files.as_ref().map_or(0, FileStats::footprint)
            + self.name.capacity()
            + self.label.capacity()
            + self.stats.first_bad.as_ref().map_or(0, String::capacity)
            + self.plug.as_ref().map_or(0, |p| {
                let rec = std::mem::size_of::<(Record, u64)>();
                let open: usize = p
                    .by_pid
                    .values()
                    .map(|st| match st {
                        PidState::Open(v, _) => v.capacity() * rec,
                        PidState::Held(..) => 0,
                    })
                    .sum();
                let units: usize = p
                    .ready
                    .iter()
                    .map(|Reverse(u)| u.recs.capacity() * rec)
                    .sum();
                std::mem::size_of::<Plugging>()
                    + p.by_pid.capacity() * (std::mem::size_of::<PidState>() + 8)
                    + p.held.capacity() * 16
                    + p.ready.capacity() * std::mem::size_of::<Unit>()
                    + open
                    + units
            })
    }

    /// The next data record with its tag (line number, or `block_ops.id`),
    /// the options applied (offset, wrap, pid, sync), without replaying it;
    /// `None` at the end. Bad lines are errors naming `file:line`, or with
    /// `skip_bad` counted in [`Self::stats`].
    pub fn next_record(&mut self) -> Result<Option<(u64, Record)>> {
        if !self.fill()? {
            return Ok(None);
        }
        let Some((r, tag)) = self.pending.take() else {
            return Ok(None);
        };
        self.stats.records += 1;
        Ok(Some((tag, r)))
    }

    /// Make `pending` hold the next data record; false at the end (EOF or
    /// `max_records`).
    fn fill(&mut self) -> Result<bool> {
        if self.pending.is_some() {
            return Ok(true);
        }
        if self.eof || (self.opts.max_records > 0 && self.stats.records >= self.opts.max_records) {
            return Ok(false);
        }
        loop {
            let Some((lineno, parsed)) = self.input.next()? else {
                self.eof = true;
                return Ok(false);
            };
            self.stats.lines += 1;
            let rec = match parsed {
                Ok(Line::Data(r)) => r,
                Ok(Line::NonData) => {
                    self.stats.skipped_non_data += 1;
                    continue;
                }
                Ok(Line::Ignored) => {
                    self.stats.ignored_lines += 1;
                    continue;
                }
                Ok(Line::Wait(t)) => {
                    self.v2_clock = self.v2_clock.max(t);
                    self.stats.ignored_lines += 1;
                    continue;
                }
                Ok(Line::Plug { .. } | Line::Unplug { .. }) => {
                    self.stats.ignored_lines += 1;
                    continue;
                }
                Ok(Line::Issued) => {
                    self.count_issued();
                    continue;
                }
                Err(msg) => {
                    self.bad_line(lineno, &msg)?;
                    continue;
                }
            };
            match self.map(rec) {
                Ok(r) => {
                    self.pending = Some((r, lineno));
                    return Ok(true);
                }
                Err(msg) => self.bad_line(lineno, &msg)?,
            }
        }
    }

    fn count_issued(&mut self) {
        self.stats.ignored_lines += 1;
        if let Some(k) = self.stats.kernel_requests.as_mut() {
            *k += 1;
        }
    }

    /// Plugging: the next unit in due order (module docs), reading lines as
    /// far as needed to know it; `None` at the end.
    fn next_unit(&mut self) -> Result<Option<Unit>> {
        loop {
            let Some(pl) = self.plug.as_mut() else {
                return Ok(None);
            };
            if let Some(u) = pl.next.take() {
                return Ok(Some(u));
            }
            // Held Qs that waited too long for their P go alone.
            let (lines, last) = (self.stats.lines, self.last_time);
            while let Some(&(pid, seq)) = pl.held.front() {
                match pl.by_pid.get(&pid) {
                    Some(&PidState::Held(r, _, s, at)) if s == seq => {
                        if at + HOLD_LINES > lines && r.time_ns.saturating_add(HOLD_NS) > last {
                            break;
                        }
                        pl.release_held(pid);
                    }
                    _ => {}
                }
                pl.held.pop_front();
            }
            let bound = pl
                .held
                .front()
                .and_then(|&(pid, seq)| match pl.by_pid.get(&pid) {
                    Some(&PidState::Held(r, _, s, _)) if s == seq => Some(r.time_ns),
                    _ => None,
                });
            if let Some(Reverse(top)) = pl.ready.peek() {
                if bound.is_none_or(|b| top.due <= b) || self.eof {
                    return Ok(pl.ready.pop().map(|Reverse(u)| u));
                }
            }
            if self.eof {
                // Flush what is open, in reading order.
                let mut pids: Vec<(u64, u32)> = pl
                    .by_pid
                    .iter()
                    .map(|(&pid, st)| match st {
                        PidState::Held(_, _, s, _) | PidState::Open(_, s) => (*s, pid),
                    })
                    .collect();
                if pids.is_empty() {
                    return Ok(pl.ready.pop().map(|Reverse(u)| u));
                }
                pids.sort_unstable();
                for (_, pid) in pids {
                    pl.flush(pid, last);
                }
                pl.held.clear();
                continue;
            }
            self.read_plugging()?;
        }
    }

    /// Plugging: read one line (or reach the end) and apply it.
    fn read_plugging(&mut self) -> Result<()> {
        let done = self.opts.max_records > 0
            && self
                .plug
                .as_ref()
                .is_some_and(|p| p.read >= self.opts.max_records);
        let item = if done { None } else { self.input.next()? };
        let Some((lineno, parsed)) = item else {
            self.eof = true;
            return Ok(());
        };
        self.stats.lines += 1;
        match parsed {
            Ok(Line::Data(rec)) => match self.map(rec) {
                Ok(r) => {
                    if !self.opts.closed {
                        self.check_backward(&r, lineno);
                    }
                    // Times count from the first bio queued, not the first plug flushed.
                    self.t0.get_or_insert(r.time_ns);
                    self.last_time = self.last_time.max(r.time_ns);
                    let at = self.stats.lines;
                    if let Some(pl) = self.plug.as_mut() {
                        pl.read += 1;
                        pl.add(r, lineno, at);
                    }
                }
                Err(msg) => self.bad_line(lineno, &msg)?,
            },
            Ok(Line::Plug { pid, time_ns }) => {
                self.stats.ignored_lines += 1;
                self.last_time = self.last_time.max(time_ns);
                if let Some(pl) = self.plug.as_mut() {
                    if pl.open(pid) {
                        self.stats.plugs += 1;
                    }
                }
            }
            Ok(Line::Unplug { pid, time_ns }) => {
                self.stats.ignored_lines += 1;
                self.last_time = self.last_time.max(time_ns);
                if let Some(pl) = self.plug.as_mut() {
                    pl.flush(pid, time_ns);
                }
            }
            Ok(Line::Issued) => self.count_issued(),
            Ok(Line::NonData) => self.stats.skipped_non_data += 1,
            Ok(Line::Ignored | Line::Wait(_)) => self.stats.ignored_lines += 1,
            Err(msg) => self.bad_line(lineno, &msg)?,
        }
        Ok(())
    }

    /// A bad line (or row): an error, or with `skip_bad` a counted skip.
    fn bad_line(&mut self, lineno: u64, msg: &str) -> Result<()> {
        let full = format!("{}: {msg}", self.input.locate(&self.label, lineno));
        if !self.opts.skip_bad {
            bail!(full);
        }
        self.stats.skipped_bad += 1;
        if self.stats.first_bad.is_none() {
            self.stats.first_bad = Some(full);
        }
        Ok(())
    }

    /// Apply the offset, wrap, device bounds, pid and sync options.
    fn map(&mut self, mut r: Record) -> Result<Record, String> {
        let cap = self.device_sectors;
        if r.sectors > cap || r.sectors > u32::MAX as u64 {
            return Err(format!(
                "request of {} sectors is larger than the device ({cap} sectors)",
                r.sectors
            ));
        }
        let s = r
            .sector
            .checked_add(self.opts.offset_sectors)
            .ok_or("sector + offset_sectors overflows")?;
        let end = s.checked_add(r.sectors).ok_or_else(|| {
            format!(
                "sector {s} + {} overflows 64 bits (beyond any device)",
                r.sectors
            )
        })?;
        if end > cap {
            if !self.opts.wrap {
                return Err(format!(
                    "sector {s} + {} is beyond the device ({cap} sectors); use wrap=1 or offset_sectors",
                    r.sectors
                ));
            }
            let w = s % cap;
            r.sector = if w + r.sectors > cap {
                cap - r.sectors
            } else {
                w
            };
            self.stats.wrapped += 1;
        } else {
            r.sector = s;
        }
        if self.format == Format::IologV2 {
            r.time_ns = self.v2_clock;
        }
        r.pid = Some(match (self.format, r.pid) {
            (Format::Blkparse | Format::Sqlite, Some(pid)) => pid,
            (Format::Spc, Some(asu)) if self.opts.asu_pid => self.opts.pid.saturating_add(asu),
            _ => self.opts.pid,
        });
        r.sync = r.op == Op::Write && (r.sync || self.opts.sync_writes);
        Ok(r)
    }

    /// Arrival time in simulated time of what the trace has at `time_ns`.
    fn due(&mut self, time_ns: u64, now: Ns) -> Ns {
        let start = *self.start.get_or_insert(now);
        // iolog v2 times are already relative to the start (fio's genesis).
        let t0 = if self.format == Format::IologV2 {
            0
        } else {
            *self.t0.get_or_insert(time_ns)
        };
        let d = time_ns.saturating_sub(t0);
        let d = if self.opts.time_scale == 1.0 {
            d
        } else {
            (d as f64 * self.opts.time_scale).round() as u64
        };
        start.saturating_add(d)
    }

    fn submit(&mut self, now: Ns, out: &mut Vec<BioSpec>) {
        if let Some((r, lineno)) = self.pending.take() {
            self.submit_rec(r, lineno, now, out);
        }
    }

    /// A record's time before the latest one's: counted (open loop; the
    /// replay submits it at once).
    fn check_backward(&mut self, r: &Record, lineno: u64) {
        match self.latest {
            Some(t) if r.time_ns < t => {
                self.stats.backward += 1;
                if self.stats.first_backward.is_none() {
                    self.stats.first_backward = Some(format!(
                        "{}, at {:.6} s after a record at {:.6} s",
                        self.input.locate(&self.label, lineno),
                        r.time_ns as f64 / 1e9,
                        t as f64 / 1e9
                    ));
                }
            }
            _ => self.latest = Some(r.time_ns),
        }
    }

    fn submit_rec(&mut self, r: Record, lineno: u64, now: Ns, out: &mut Vec<BioSpec>) {
        // With plugging the order is checked as the lines are read.
        if !self.opts.closed && self.format != Format::IologV2 && self.plug.is_none() {
            self.check_backward(&r, lineno);
        }
        if let Some(f) = self.files.as_mut() {
            f.submitted(lineno, r.file, now);
        }
        out.push(BioSpec {
            op: r.op,
            sync: r.sync,
            sector: r.sector,
            sectors: r.sectors as u32,
            pid: r.pid.unwrap_or(self.opts.pid),
            job: self.job_idx,
            tag: lineno,
            attrs: r.attrs,
        });
        self.stats.records += 1;
        self.inflight += 1;
        self.stats.max_inflight = self.stats.max_inflight.max(self.inflight);
    }
}

impl Plugging {
    /// A data record of process `pid`: into its open plug, else held until
    /// its P (a Q held before it goes alone).
    fn add(&mut self, r: Record, lineno: u64, at: u64) {
        let pid = r.pid.unwrap_or(0);
        match self.by_pid.get_mut(&pid) {
            Some(PidState::Open(v, seq)) => {
                v.push((r, lineno));
                if v.len() >= BATCH {
                    let recs = std::mem::take(v);
                    let seq = std::mem::replace(seq, self.seq + 1);
                    self.seq += 1;
                    self.ready.push(Reverse(Unit {
                        due: r.time_ns,
                        seq,
                        recs,
                    }));
                }
                return;
            }
            Some(PidState::Held(..)) => self.release_held(pid),
            None => {}
        }
        self.seq += 1;
        self.by_pid
            .insert(pid, PidState::Held(r, lineno, self.seq, at));
        self.held.push_back((pid, self.seq));
    }

    /// `P` of `pid`: its held Q opens the plug (or an empty one opens);
    /// false when a plug was open already.
    fn open(&mut self, pid: u32) -> bool {
        let st = match self.by_pid.remove(&pid) {
            Some(PidState::Held(r, lineno, seq, _)) => PidState::Open(vec![(r, lineno)], seq),
            Some(open @ PidState::Open(..)) => {
                self.by_pid.insert(pid, open);
                return false;
            }
            None => {
                self.seq += 1;
                PidState::Open(Vec::new(), self.seq)
            }
        };
        self.by_pid.insert(pid, st);
        true
    }

    /// A held Q goes alone, due at its own time.
    fn release_held(&mut self, pid: u32) {
        if let Some(PidState::Held(r, lineno, seq, _)) = self.by_pid.remove(&pid) {
            self.ready.push(Reverse(Unit {
                due: r.time_ns,
                seq,
                recs: vec![(r, lineno)],
            }));
        }
    }

    /// `U` of `pid` at `time_ns` (or the end of the trace): its plug goes,
    /// due then; a held Q goes alone.
    fn flush(&mut self, pid: u32, time_ns: u64) {
        match self.by_pid.remove(&pid) {
            Some(PidState::Open(recs, seq)) if !recs.is_empty() => {
                let due = recs
                    .iter()
                    .map(|(r, _)| r.time_ns)
                    .max()
                    .unwrap_or(0)
                    .max(time_ns);
                self.ready.push(Reverse(Unit { due, seq, recs }));
            }
            Some(held @ PidState::Held(..)) => {
                self.by_pid.insert(pid, held);
                self.release_held(pid);
            }
            _ => {}
        }
    }
}

impl TraceSource {
    /// [`Source::poll`] with plugging: one unit (a plug, or a bio alone) per
    /// poll, so each is one plug of the engine.
    fn poll_plugging(&mut self, now: Ns, out: &mut Vec<BioSpec>) -> Result<Next> {
        if self.opts.closed && self.inflight >= self.opts.depth {
            return Ok(Next::Wait);
        }
        let Some(u) = self.next_unit()? else {
            return Ok(Next::Done);
        };
        if !self.opts.closed {
            let due = self.due(u.due, now);
            if due > now {
                if let Some(pl) = self.plug.as_mut() {
                    pl.next = Some(u);
                }
                return Ok(Next::At(due));
            }
        }
        for (r, lineno) in u.recs {
            self.submit_rec(r, lineno, now, out);
        }
        Ok(Next::At(now))
    }
}

/// Reject unknown options and a device without capacity.
fn check_options(p: &Params, name: &str, device_sectors: u64) -> Result<()> {
    for (k, _) in p.iter() {
        if !OPTIONS.contains(&k.as_str()) {
            bail!(
                "trace '{name}': unsupported option '{k}' (supported: {})",
                OPTIONS.join(", ")
            );
        }
    }
    if device_sectors == 0 {
        bail!("trace '{name}': device has no capacity");
    }
    let _ = (p.raw("type"), p.raw("path"));
    Ok(())
}

/// Detect the format from the first lines; when none fits, the error names
/// the first line that is not blank (binary input: a line that is not UTF-8).
fn detect(lines: &mut Lines, label: &str) -> Result<Format> {
    const KNOWN: &str = "blkparse, fio iolog v2/v3, MSR CSV, SPC";
    let mut first: Option<(u64, String)> = None;
    for i in 0..DETECT_LINES {
        let Some((no, text)) = lines.peek(i)? else {
            break;
        };
        let Some(text) = text else {
            first.get_or_insert((no, "the line is not UTF-8 text".into()));
            continue;
        };
        if text.trim().is_empty() {
            continue;
        }
        if let Some(f) = formats::detect(text) {
            return Ok(f);
        }
        first.get_or_insert_with(|| {
            let t: String = text.chars().take(80).collect();
            (
                no,
                format!("cannot detect the format from '{t}'; set format= if it is one"),
            )
        });
    }
    match first {
        Some((no, why)) => {
            bail!("{label}:{no}: not a trace of any known format ({KNOWN}): {why}")
        }
        None => bail!("{label}: empty trace (no lines with text)"),
    }
}

/// An iolog's version from its header (first non-blank line).
fn iolog_version(lines: &mut Lines, label: &str) -> Result<Format> {
    for i in 0..DETECT_LINES {
        let Some((no, text)) = lines.peek(i)? else {
            break;
        };
        let Some(text) = text else {
            bail!("{label}:{no}: not UTF-8 text")
        };
        if text.trim().is_empty() {
            continue;
        }
        return match formats::iolog_version(text) {
            Some(2) => Ok(Format::IologV2),
            Some(3) => Ok(Format::IologV3),
            _ => bail!(
                "{label}:{no}: expected the header 'fio version 2 iolog' or 'fio version 3 iolog'"
            ),
        };
    }
    bail!("{label}: empty iolog")
}

/// Q if the look-ahead has a Q action, else D if it has a D, else Q.
fn blkparse_arrival(lines: &mut Lines) -> Result<u8> {
    let mut saw_d = false;
    for i in 0..lines::MAX_LOOKAHEAD {
        let Some((_, text)) = lines.peek(i)? else {
            break;
        };
        let Some(text) = text else { continue };
        let action = text.split_ascii_whitespace().nth(5).unwrap_or("");
        match action {
            "Q" => return Ok(b'Q'),
            "D" => saw_d = true,
            _ => {}
        }
    }
    Ok(if saw_d { b'D' } else { b'Q' })
}

impl Source for TraceSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn poll(&mut self, now: Ns, out: &mut Vec<BioSpec>) -> Result<Next> {
        if self.plug.is_some() {
            return self.poll_plugging(now, out);
        }
        let mut n = 0usize;
        let mut batch_pid: Option<u32> = None;
        loop {
            if self.opts.closed && self.inflight >= self.opts.depth {
                return Ok(Next::Wait);
            }
            if !self.fill()? {
                return Ok(Next::Done);
            }
            let Some((rec, _)) = self.pending else {
                return Ok(Next::Done);
            };
            if !self.opts.closed {
                let due = self.due(rec.time_ns, now);
                if due > now {
                    return Ok(Next::At(due));
                }
            }
            if n >= BATCH || batch_pid.is_some_and(|p| Some(p) != rec.pid) {
                return Ok(Next::At(now));
            }
            batch_pid = rec.pid;
            self.submit(now, out);
            n += 1;
        }
    }

    fn complete(&mut self, spec: &BioSpec, now: Ns) {
        self.inflight = self.inflight.saturating_sub(1);
        if let Some(f) = self.files.as_mut() {
            f.completed(spec, now);
        }
    }

    fn progress(&self) -> Option<(u64, u64)> {
        if self.opts.max_records > 0 {
            return Some((self.stats.records, self.opts.max_records));
        }
        match (&self.input, self.total_bytes) {
            (Input::Text { lines, .. }, Some(total)) => Some((lines.consumed.min(total), total)),
            _ => None,
        }
    }

    fn warnings(&self) -> Vec<String> {
        let s = &self.stats;
        match &s.first_backward {
            Some(first) => vec![format!(
                "WARNING: trace '{}': {} record(s) go back in time (the first: {}); they were replayed at once, not reordered",
                self.name, s.backward, first
            )],
            None => Vec::new(),
        }
    }

    fn input_stats(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(&self.stats).unwrap_or(serde_json::Value::Null);
        if let Some(m) = v.as_object_mut() {
            if self.format == Format::Blkparse {
                m.insert(
                    "arrival_action".into(),
                    serde_json::Value::String(self.arrival_action().to_string()),
                );
            }
            if let (Input::Db(rows), Some(f)) = (&self.input, &self.files) {
                m.insert("time".into(), rows.time().name().into());
                m.insert("lost_events".into(), rows.lost_events.into());
                let (files, others) = f.report(&rows.names);
                m.insert("files".into(), files);
                m.insert("other_files".into(), others);
            }
        }
        v
    }
}

/// Read a whole (small) reader into memory as a `BufRead`: for tests and
/// in-memory traces.
pub fn reader_from_bytes(b: Vec<u8>) -> Box<dyn BufRead + Send> {
    Box::new(std::io::Cursor::new(b))
}
