//! Trace databases: the `block_ops` table of an end-to-end trace that `vlab
//! trace` wrote (lab/vlab/etrace: SQLite, `meta` key `format` = `1`, its
//! `DB_FORMAT`), as a producer of [`Record`]s for the replay in [`super`].
//!
//! One row of `block_ops` is one block request. Rows are read by one query,
//! ordered by the arrival time (`queue_ns`, the submission of the request's
//! first bio, or `issue_ns` where that is NULL; `time=issue`: `issue_ns`) and
//! then by `id`, on a reader thread that hands them over in batches through a
//! bounded channel: memory is bounded by [`QUEUED_BATCHES`] batches of
//! [`BATCH_ROWS`] rows and SQLite's own cache (its sorter spills to temporary
//! files), never by the table. Each row becomes a [`Line`] tagged with its
//! `id`, so messages name `path: block_ops id N`.
//!
//! A row's `op` (read, write; discard, flush and other are non-data) gives
//! the operation, its `rwbs` the flags (an `S`, FUA or PREFLUSH makes a write
//! sync, as in blkparse; an `rwbs` that is not the kernel's letters, such as
//! the loader's `WZ`, gives sync from an `S` in it and no other flag), `tid`
//! the submitting thread — blkparse's PID, and the task whose io_context the
//! kernel's schedulers key on — (`pid` in a database without `tid`; NULL: the
//! source's `pid` option). The record's file is the
//! file (inode and generation) with the most sectors in `block_ops_by_file`
//! for that request (ties: the lowest inode, then generation; 0:0 when it has
//! no rows there or the table is absent; generation 0 in a database without
//! `gen` columns); [`FileStats`] accumulates the simulated latency per file.

use super::formats::{parse_rwbs, FileId, Line, Record};
use crate::types::{BioAttrs, BioSpec, Ns, Op};
use anyhow::{bail, Context, Result};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, InterruptHandle, OpenFlags, Row};
use rustc_hash::FxHashMap;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// The first 16 bytes of every SQLite 3 database file.
pub const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// The `meta` format this reader understands (lab/vlab/etrace `DB_FORMAT`).
pub const FORMAT_VERSION: &str = "1";

/// Rows handed over from the reader thread at a time.
pub const BATCH_ROWS: usize = 256;

/// Batches the reader thread may run ahead of the replay.
pub const QUEUED_BATCHES: usize = 4;

/// Files listed one by one in [`FileStats::report`]; the rest are summed.
pub const MAX_FILES_LISTED: usize = 50;

/// Which time of a request is its arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeCol {
    /// `queue_ns` (its first bio's submission), `issue_ns` where NULL.
    Queue,
    /// `issue_ns` (the dispatch to the driver: blkparse's D).
    Issue,
}

impl TimeCol {
    pub fn parse(s: &str) -> Option<TimeCol> {
        match s {
            "queue" => Some(TimeCol::Queue),
            "issue" => Some(TimeCol::Issue),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TimeCol::Queue => "queue",
            TimeCol::Issue => "issue",
        }
    }

    /// The SQL expression of the arrival time, the column named in messages
    /// about its value, and what a NULL one means.
    fn sql(self) -> (&'static str, &'static str, &'static str) {
        match self {
            TimeCol::Queue => (
                "COALESCE(b.queue_ns, b.issue_ns)",
                "queue_ns",
                "queue_ns and issue_ns are NULL",
            ),
            TimeCol::Issue => ("b.issue_ns", "issue_ns", "issue_ns is NULL"),
        }
    }
}

/// One row read: its tag (the `id`) and what it is.
pub type Item = (u64, Result<Line, String>);

enum Batch {
    Rows(Vec<Item>),
    /// The query failed; the message says why.
    Failed(String),
    /// Every row was read.
    End,
}

/// The rows of `block_ops` in arrival order, from a reader thread.
pub struct DbRows {
    label: String,
    time: TimeCol,
    rx: Option<Receiver<Batch>>,
    batch: std::vec::IntoIter<Item>,
    done: bool,
    interrupt: InterruptHandle,
    thread: Option<JoinHandle<()>>,
    /// `meta` `lost_events`: events the tracer dropped (None: not recorded).
    pub lost_events: Option<u64>,
    /// Names of the files that `block_ops_by_file` refers to, from `vfs_files`.
    pub names: FxHashMap<FileId, FileName>,
}

/// A file's name and path (`vfs_files.path`, where the database has it).
#[derive(Clone, Debug, Default)]
pub struct FileName {
    pub name: Option<String>,
    pub path: Option<String>,
}

/// Columns each table must have; `block_ops` is required, `meta` too (for
/// the format), the other two are read when present.
const BLOCK_OPS_COLUMNS: &[&str] = &["id", "sector", "sectors", "op", "rwbs", "issue_ns", "pid"];
const BY_FILE_COLUMNS: &[&str] = &["block_op", "ino", "sectors"];
const VFS_FILES_COLUMNS: &[&str] = &["ino", "name"];
const META_COLUMNS: &[&str] = &["key", "value"];

/// Whether table `t` exists.
fn has_table(c: &Connection, t: &str) -> rusqlite::Result<bool> {
    c.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [t],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

/// Fail naming the first of `cols` that table `t` lacks; else its columns.
fn check_columns(c: &Connection, label: &str, t: &str, cols: &[&str]) -> Result<Vec<String>> {
    let mut st = c
        .prepare("SELECT name FROM pragma_table_info(?1)")
        .with_context(|| format!("{label}: reading the columns of table {t}"))?;
    let have: Vec<String> = st
        .query_map([t], |r| r.get::<_, String>(0))
        .and_then(|rows| rows.collect())
        .with_context(|| format!("{label}: reading the columns of table {t}"))?;
    for col in cols {
        if !have.iter().any(|h| h.eq_ignore_ascii_case(col)) {
            bail!(
                "{label}: table {t} has no column {col} (has: {}); not a vlab trace database of format {FORMAT_VERSION}",
                have.join(", ")
            );
        }
    }
    Ok(have)
}

impl DbRows {
    /// Open the database at `path` read-only, check its tables, columns and
    /// format, and start reading `block_ops`. `label` names it in messages.
    pub fn open(path: &str, label: &str, time: TimeCol) -> Result<DbRows> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)
            .with_context(|| format!("{label}: cannot open as an SQLite database"))?;
        let not_db = || format!("{label}: not a readable SQLite database");
        let need = |t: &str| -> Result<bool> { has_table(&conn, t).with_context(not_db) };
        for t in ["meta", "block_ops"] {
            if !need(t)? {
                bail!("{label}: no table {t}: not a vlab trace database (vlab trace writes one)");
            }
        }
        check_columns(&conn, label, "meta", META_COLUMNS)?;
        let meta = |k: &str| -> Result<Option<String>> {
            let mut st = conn
                .prepare("SELECT value FROM meta WHERE key = ?1")
                .with_context(|| format!("{label}: reading table meta"))?;
            let mut rows = st
                .query([k])
                .with_context(|| format!("{label}: reading table meta"))?;
            match rows
                .next()
                .with_context(|| format!("{label}: reading table meta"))?
            {
                None => Ok(None),
                Some(r) => Ok(Some(match r.get_ref(0)? {
                    ValueRef::Null => String::new(),
                    ValueRef::Integer(i) => i.to_string(),
                    v => String::from_utf8_lossy(v.as_bytes().unwrap_or_default()).into_owned(),
                })),
            }
        };
        match meta("format")? {
            Some(f) if f == FORMAT_VERSION => {}
            Some(f) => bail!(
                "{label}: meta format is '{f}'; this vsim reads trace databases of format '{FORMAT_VERSION}'"
            ),
            None => bail!("{label}: table meta has no 'format' key: not a vlab trace database"),
        }
        let lost_events = match meta("lost_events")? {
            None => None,
            Some(v) => Some(v.trim().parse::<u64>().map_err(|_| {
                anyhow::anyhow!("{label}: meta lost_events '{v}' is not a whole number")
            })?),
        };
        let mut cols = BLOCK_OPS_COLUMNS.to_vec();
        if time == TimeCol::Queue {
            cols.push("queue_ns");
        }
        let have_ops = check_columns(&conn, label, "block_ops", &cols)?;
        // Columns that came later (format 1 still: additions) read as `absent`
        // where a table lacks them.
        let or = |have: &[String], col: &'static str, absent: &'static str| {
            if have.iter().any(|c| c.eq_ignore_ascii_case(col)) {
                col
            } else {
                absent
            }
        };
        // The submitting thread, as blkparse's PID and the kernel's io_context
        // (per task) see it; the process where a database has no tid column.
        let pid_col = match or(&have_ops, "tid", "") {
            "" => "b.pid",
            _ => "COALESCE(b.tid, b.pid)",
        };
        let by_file = need("block_ops_by_file")?;
        let mut by_file_gen = "0";
        if by_file {
            let have = check_columns(&conn, label, "block_ops_by_file", BY_FILE_COLUMNS)?;
            by_file_gen = or(&have, "gen", "0");
        }
        let mut names = FxHashMap::default();
        if by_file && need("vfs_files")? {
            let have = check_columns(&conn, label, "vfs_files", VFS_FILES_COLUMNS)?;
            let (path, vgen) = (or(&have, "path", "NULL"), or(&have, "gen", "0"));
            let mut st = conn
                .prepare(&format!(
                    "SELECT ino, {vgen}, name, {path} FROM vfs_files \
                     WHERE (ino, {vgen}) IN (SELECT ino, {by_file_gen} FROM block_ops_by_file)"
                ))
                .with_context(|| format!("{label}: reading table vfs_files"))?;
            let mut rows = st
                .query([])
                .with_context(|| format!("{label}: reading table vfs_files"))?;
            while let Some(r) = rows
                .next()
                .with_context(|| format!("{label}: reading table vfs_files"))?
            {
                let text = |i: usize| -> Result<Option<String>> {
                    Ok(match r.get_ref(i)? {
                        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
                        _ => None,
                    })
                };
                if let (ValueRef::Integer(ino @ 0..), ValueRef::Integer(gen @ 0..)) =
                    (r.get_ref(0)?, r.get_ref(1)?)
                {
                    let name = FileName {
                        name: text(2)?,
                        path: text(3)?,
                    };
                    let id = FileId {
                        ino: ino as u64,
                        gen: gen as u64,
                    };
                    names.insert(id, name);
                }
            }
        }
        let (t, _, _) = time.sql();
        // The request's file: two lookups of the same row of block_ops_by_file
        // (by its primary key's index), for its inode and its generation.
        let has_gen = by_file_gen == "gen";
        let order = if has_gen { "f.ino, f.gen" } else { "f.ino" };
        let file = |col: &str| {
            format!(
                "(SELECT {col} FROM block_ops_by_file AS f WHERE f.block_op = b.id \
                 ORDER BY f.sectors DESC, {order} LIMIT 1)"
            )
        };
        let (ino, gen) = match (by_file, has_gen) {
            (false, _) => ("NULL".to_string(), "NULL".to_string()),
            (true, false) => (file("f.ino"), "NULL".to_string()),
            (true, true) => (file("f.ino"), file("f.gen")),
        };
        let sql = format!(
            "SELECT b.id, {t}, b.sector, b.sectors, b.op, b.rwbs, {pid_col}, {ino}, {gen} \
             FROM block_ops AS b ORDER BY 2, 1"
        );
        // Prepared here once so that a query SQLite refuses is an error now.
        conn.prepare(&sql)
            .with_context(|| format!("{label}: querying table block_ops"))?;
        let interrupt = conn.get_interrupt_handle();
        let (tx, rx) = sync_channel(QUEUED_BATCHES);
        let thread = std::thread::Builder::new()
            .name("vsim-trace-db".into())
            .spawn(move || read_rows(conn, &sql, time, tx))
            .with_context(|| format!("{label}: starting the reader thread"))?;
        Ok(DbRows {
            label: label.to_string(),
            time,
            rx: Some(rx),
            batch: Vec::new().into_iter(),
            done: false,
            interrupt,
            thread: Some(thread),
            lost_events,
            names,
        })
    }

    pub fn time(&self) -> TimeCol {
        self.time
    }

    /// The next row, or `None` after the last.
    pub fn next_item(&mut self) -> Result<Option<Item>> {
        loop {
            if let Some(it) = self.batch.next() {
                return Ok(Some(it));
            }
            if self.done {
                return Ok(None);
            }
            let Some(rx) = self.rx.as_ref() else {
                return Ok(None);
            };
            match rx.recv() {
                Ok(Batch::Rows(v)) => self.batch = v.into_iter(),
                Ok(Batch::End) => self.done = true,
                Ok(Batch::Failed(e)) => {
                    self.done = true;
                    bail!("{}: reading table block_ops: {e}", self.label)
                }
                Err(_) => {
                    self.done = true;
                    bail!(
                        "{}: reading table block_ops: the reader thread stopped",
                        self.label
                    )
                }
            }
        }
    }

    /// Where row `tag` is, for messages: `label: block_ops id N`.
    pub fn locate(&self, tag: u64) -> String {
        format!("{}: block_ops id {tag}", self.label)
    }

    /// Bytes held, at most: the batch being handed out, [`QUEUED_BATCHES`]
    /// more in the channel and one being filled; and the file names.
    pub fn footprint(&self) -> usize {
        (QUEUED_BATCHES + 2) * BATCH_ROWS * std::mem::size_of::<Item>()
            + self
                .names
                .values()
                .map(|n| {
                    n.name.as_ref().map_or(0, String::capacity)
                        + n.path.as_ref().map_or(0, String::capacity)
                        + 64
                })
                .sum::<usize>()
    }
}

impl Drop for DbRows {
    fn drop(&mut self) {
        // Stop a query in progress (a long sort), close the channel (a
        // blocked send fails) and wait for the thread.
        self.interrupt.interrupt();
        self.rx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The reader thread: run the query, send the rows in batches; stop when the
/// receiver is gone.
fn read_rows(conn: Connection, sql: &str, time: TimeCol, tx: SyncSender<Batch>) {
    let run = || -> rusqlite::Result<bool> {
        let mut st = conn.prepare(sql)?;
        let mut rows = st.query([])?;
        let mut batch = Vec::with_capacity(BATCH_ROWS);
        while let Some(row) = rows.next()? {
            batch.push(item(row, time));
            if batch.len() == BATCH_ROWS {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH_ROWS));
                if tx.send(Batch::Rows(full)).is_err() {
                    return Ok(false);
                }
            }
        }
        Ok(batch.is_empty() || tx.send(Batch::Rows(batch)).is_ok())
    };
    let last = match run() {
        Ok(true) => Batch::End,
        Ok(false) => return,
        Err(e) => Batch::Failed(e.to_string()),
    };
    let _ = tx.send(last);
}

/// A column as an integer; NULL is `None`; any other type is an error naming
/// the column.
fn int(row: &Row, i: usize, name: &str) -> Result<Option<i64>, String> {
    match row.get_ref(i).map_err(|e| format!("column {name}: {e}"))? {
        ValueRef::Null => Ok(None),
        ValueRef::Integer(v) => Ok(Some(v)),
        ValueRef::Real(v) => Err(format!("{name} {v} is not an integer")),
        ValueRef::Text(t) => Err(format!(
            "{name} '{}' is not an integer",
            String::from_utf8_lossy(t)
        )),
        ValueRef::Blob(_) => Err(format!("{name} is a blob, not an integer")),
    }
}

/// A column as a non-negative integer, required.
fn unsigned(row: &Row, i: usize, name: &str, null: &str) -> Result<u64, String> {
    match int(row, i, name)? {
        None => Err(null.to_string()),
        Some(v) if v < 0 => Err(format!("{name} {v} is negative")),
        Some(v) => Ok(v as u64),
    }
}

/// A column as text; NULL is `None`.
fn text<'r>(row: &'r Row, i: usize, name: &str) -> Result<Option<&'r str>, String> {
    match row.get_ref(i).map_err(|e| format!("column {name}: {e}"))? {
        ValueRef::Null => Ok(None),
        ValueRef::Text(t) => std::str::from_utf8(t)
            .map(Some)
            .map_err(|_| format!("{name} is not UTF-8 text")),
        _ => Err(format!("{name} is not text")),
    }
}

/// One row: (id, what it is). Columns as in [`DbRows::open`]'s query.
fn item(row: &Row, time: TimeCol) -> Item {
    let id = match int(row, 0, "id") {
        Ok(Some(v)) if v >= 0 => v as u64,
        Ok(Some(v)) => return (0, Err(format!("id {v} is negative"))),
        Ok(None) => return (0, Err("id is NULL".into())),
        Err(e) => return (0, Err(e)),
    };
    (id, record(row, time))
}

fn record(row: &Row, time: TimeCol) -> Result<Line, String> {
    let op = match text(row, 4, "op")? {
        Some("read") => Op::Read,
        Some("write") => Op::Write,
        Some("discard" | "flush" | "other") => return Ok(Line::NonData),
        Some(o) => {
            return Err(format!(
                "op '{o}' is not read, write, discard, flush or other"
            ))
        }
        None => return Err("op is NULL".into()),
    };
    let (_, column, no_time) = time.sql();
    let time_ns = unsigned(row, 1, column, no_time)?;
    let sector = unsigned(row, 2, "sector", "sector is NULL")?;
    let sectors = unsigned(row, 3, "sectors", "sectors is NULL")?;
    if sectors == 0 {
        return Ok(Line::NonData);
    }
    let rwbs = text(row, 5, "rwbs")?.unwrap_or("");
    let (sync, attrs) = match parse_rwbs(rwbs) {
        Ok(f) => (
            f.sync || f.fua || f.preflush,
            BioAttrs {
                fua: f.fua,
                preflush: f.preflush,
                ..BioAttrs::default()
            },
        ),
        Err(_) => (rwbs.contains('S'), BioAttrs::default()),
    };
    let pid = match int(row, 6, "pid")? {
        None => None,
        Some(p) => Some(
            u32::try_from(p)
                .ok()
                .filter(|&p| p <= u32::MAX / 2)
                .ok_or_else(|| format!("pid {p} is out of range"))?,
        ),
    };
    let mut file = FileId::default();
    for (i, col, v) in [(7, "ino", &mut file.ino), (8, "gen", &mut file.gen)] {
        *v = match int(row, i, col)? {
            None => 0,
            Some(n) if n < 0 => return Err(format!("block_ops_by_file {col} {n} is negative")),
            Some(n) => n as u64,
        };
    }
    Ok(Line::Data(Record {
        time_ns,
        op,
        sync,
        sector,
        sectors,
        pid,
        attrs,
        file,
    }))
}

/// Per-file figures of a replay: what each file's requests saw in the
/// simulation. Memory: one entry per bio in flight and one per file.
#[derive(Default)]
pub struct FileStats {
    /// In flight: tag -> (file, submission time).
    inflight: FxHashMap<u64, (FileId, Ns)>,
    files: FxHashMap<FileId, FileAcc>,
}

#[derive(Clone, Copy, Default)]
struct FileAcc {
    requests: u64,
    sectors: u64,
    lat_sum: u128,
    lat_max: Ns,
}

impl FileAcc {
    fn add(&mut self, o: &FileAcc) {
        self.requests += o.requests;
        self.sectors += o.sectors;
        self.lat_sum += o.lat_sum;
        self.lat_max = self.lat_max.max(o.lat_max);
    }

    fn json(&self) -> serde_json::Map<String, serde_json::Value> {
        let mean = if self.requests == 0 {
            0.0
        } else {
            self.lat_sum as f64 / self.requests as f64 / 1e3
        };
        let mut m = serde_json::Map::new();
        m.insert("requests".into(), self.requests.into());
        m.insert("sectors".into(), self.sectors.into());
        m.insert("mean_lat_us".into(), mean.into());
        m.insert("max_lat_us".into(), (self.lat_max as f64 / 1e3).into());
        m
    }
}

impl FileStats {
    /// A bio with tag `tag` of file `file` was submitted at `now`.
    pub fn submitted(&mut self, tag: u64, file: FileId, now: Ns) {
        self.inflight.insert(tag, (file, now));
    }

    /// A bio completed at `now`.
    pub fn completed(&mut self, spec: &BioSpec, now: Ns) {
        if let Some((file, at)) = self.inflight.remove(&spec.tag) {
            let a = self.files.entry(file).or_default();
            let lat = now.saturating_sub(at);
            a.requests += 1;
            a.sectors += spec.sectors as u64;
            a.lat_sum += lat as u128;
            a.lat_max = a.lat_max.max(lat);
        }
    }

    /// Bytes held (for the bounded-memory checks).
    pub fn footprint(&self) -> usize {
        self.inflight.capacity() * 32 + self.files.capacity() * 56
    }

    /// `(files, others)`: the [`MAX_FILES_LISTED`] files with the most
    /// sectors completed (ties: lowest inode, then generation, first), each
    /// with `ino`, `gen`, `name` and `path` (from `vfs_files`; null when
    /// unknown, and for 0:0, the requests of no file), `requests`, `sectors`,
    /// `mean_lat_us`, `max_lat_us`; and the rest summed, with their count as
    /// `files` (null when none).
    pub fn report(
        &self,
        names: &FxHashMap<FileId, FileName>,
    ) -> (serde_json::Value, serde_json::Value) {
        let mut v: Vec<(FileId, FileAcc)> = self.files.iter().map(|(k, a)| (*k, *a)).collect();
        v.sort_by(|a, b| b.1.sectors.cmp(&a.1.sectors).then(a.0.cmp(&b.0)));
        let listed = v
            .iter()
            .take(MAX_FILES_LISTED)
            .map(|(id, a)| {
                let mut m = serde_json::Map::new();
                m.insert("ino".into(), id.ino.into());
                m.insert("gen".into(), id.gen.into());
                let n = names.get(id).cloned().unwrap_or_default();
                m.insert("name".into(), n.name.into());
                m.insert("path".into(), n.path.into());
                m.extend(a.json());
                serde_json::Value::Object(m)
            })
            .collect();
        let rest = &v[v.len().min(MAX_FILES_LISTED)..];
        let others = if rest.is_empty() {
            serde_json::Value::Null
        } else {
            let mut sum = FileAcc::default();
            for (_, a) in rest {
                sum.add(a);
            }
            let mut m = serde_json::Map::new();
            m.insert("files".into(), rest.len().into());
            m.extend(sum.json());
            serde_json::Value::Object(m)
        };
        (serde_json::Value::Array(listed), others)
    }
}
