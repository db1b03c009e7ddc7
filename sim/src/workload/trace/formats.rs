//! Line parsers for the trace formats of reference notes §2
//! (/work/shared/reference/simulators.md), and format detection.
//!
//! Every parser turns one line into a [`Line`] without allocating; an error is
//! a short text saying which field is wrong (the caller adds `file:line`).
//!
//! - blkparse default text (§2.1): `dev cpu seq secs.nsecs pid action rwbs
//!   sector + nblocks [command]`. Only the arrival action (Q, or D) makes
//!   records; other actions are ignored events. RWBS: `R` read, `W` write,
//!   `S` sync; `D`/`E` (discard, secure erase), `N` (no data) and a flush with
//!   no data (`F`, `FN`, or no `sector + n` payload, or n = 0) are non-data.
//!   The trailing per-CPU summary (from a `CPU<n>` or `Total` line on) is
//!   ignored.
//! - fio iolog v2/v3 (§2.3, fio `iolog.c` read_iolog()): v2 `file action
//!   [offset length]`, v3 `usecs file action [offset length]`; offsets and
//!   lengths in bytes. add/open/close are ignored events; trim, sync,
//!   datasync, sync_file_range are non-data; v2 `wait` has its offset field as
//!   the absolute time in ms since the start (fio sleeps until
//!   `mtime_since_genesis() >= delay`); v3 does not allow `wait`.
//! - MSR Cambridge CSV (§2.4): `Timestamp,Hostname,DiskNumber,Type,Offset,
//!   Size,ResponseTime`, Timestamp in Windows FILETIME ticks (100 ns),
//!   Offset/Size in bytes. A header line starting `Timestamp,` is ignored.
//! - SPC (§2.5): `ASU,LBA,Size,Opcode,Timestamp[,...]`, LBA in 512-B sectors,
//!   Size in bytes, Opcode r/w in any case, Timestamp in float seconds.
//!
//! Byte offsets that are not sector-aligned are widened to whole sectors
//! (start rounded down, end rounded up).

use crate::types::{BioAttrs, Op, SECTOR};

/// A trace format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Blkparse,
    IologV2,
    IologV3,
    Msr,
    Spc,
    /// The `block_ops` table of a `vlab trace` database (see `super::db`):
    /// records come from rows, not from text lines.
    Sqlite,
}

impl Format {
    /// Name used in stats and messages.
    pub fn name(self) -> &'static str {
        match self {
            Format::Blkparse => "blkparse",
            Format::IologV2 => "iolog2",
            Format::IologV3 => "iolog3",
            Format::Msr => "msr",
            Format::Spc => "spc",
            Format::Sqlite => "sqlite",
        }
    }

    /// Whether records carry their own arrival times.
    pub fn timed(self) -> bool {
        !matches!(self, Format::IologV2)
    }
}

/// One I/O record of a trace, in the trace's own time base (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub time_ns: u64,
    pub op: Op,
    pub sync: bool,
    pub sector: u64,
    pub sectors: u64,
    /// The trace's process id (blkparse), or the SPC ASU; `None` otherwise.
    pub pid: Option<u32>,
    /// Flags and submitting CPU (blkparse: RWBS's F before/after the op
    /// letter, the CPU column); default otherwise.
    pub attrs: BioAttrs,
    /// The file whose data the record carries; 0:0 when unknown (every text
    /// format).
    pub file: FileId,
}

/// A file: its inode and generation (inode numbers are reused after an
/// unlink; the generation tells the files apart). 0:0 is no file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId {
    pub ino: u64,
    pub gen: u64,
}

/// What one line of a trace is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    /// A data I/O to replay.
    Data(Record),
    /// A record of the arrival kind that moves no data (flush, discard, trim, sync).
    NonData,
    /// Anything else that is fine to skip: blank lines, headers, other blkparse
    /// actions, iolog file actions, the blkparse summary.
    Ignored,
    /// iolog v2 `wait`: the replay clock moves to this absolute time (ns).
    Wait(u64),
    /// blkparse `P` (the arrivals being `Q`): process `pid` put its first
    /// request in an empty plug (`blk_add_rq_to_plug`).
    Plug { pid: u32, time_ns: u64 },
    /// blkparse `U` or `UT`: process `pid` flushed its plug (explicitly, or
    /// as it slept).
    Unplug { pid: u32, time_ns: u64 },
    /// blkparse `D` of a data request (the arrivals being `Q`): a request
    /// the kernel issued, counted to set beside the replay's own.
    Issued,
}

/// Line parser state for one trace.
pub struct Parser {
    pub format: Format,
    /// blkparse action used as the arrival (`b'Q'` or `b'D'`).
    pub arrival: u8,
    in_summary: bool,
    header_seen: bool,
}

/// RWBS as the kernel writes it (`blk_fill_rwbs`, kernel/trace/blktrace.c;
/// blkparse's `fill_rwbs` is the same): an optional `F` (REQ_PREFLUSH), the
/// operation (`W` write, `R` read, `D` discard, `DE` secure erase, `F` flush,
/// `N` none), then in order `F` (REQ_FUA), `A` (readahead), `S` (REQ_SYNC),
/// `M` (REQ_META).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rwbs {
    /// The operation letter (`b'E'` for a secure erase).
    pub op: u8,
    pub preflush: bool,
    pub fua: bool,
    pub readahead: bool,
    pub sync: bool,
    pub meta: bool,
}

/// Parse RWBS ([`Rwbs`]); the error says which letter is out of place.
pub fn parse_rwbs(s: &str) -> Result<Rwbs, String> {
    let b = s.as_bytes();
    let mut r = Rwbs::default();
    let mut i = 0;
    // A leading F is PREFLUSH when an operation letter follows it.
    if b.len() > 1 && b[0] == b'F' && matches!(b[1], b'W' | b'R' | b'D' | b'F' | b'N') {
        r.preflush = true;
        i = 1;
    }
    let Some(&op) = b.get(i) else {
        return Err("empty".into());
    };
    if !matches!(op, b'W' | b'R' | b'D' | b'F' | b'N') {
        return Err(format!(
            "'{}' is not an operation (W, R, D, F, N)",
            op as char
        ));
    }
    r.op = op;
    i += 1;
    if op == b'D' && b.get(i) == Some(&b'E') {
        r.op = b'E';
        i += 1;
    }
    // The flags, each at most once, in the kernel's order.
    let mut last = 0;
    for &c in &b[i..] {
        let rank = match c {
            b'F' => 1,
            b'A' => 2,
            b'S' => 3,
            b'M' => 4,
            _ => return Err(format!("'{}' is not an RWBS flag (F, A, S, M)", c as char)),
        };
        if rank <= last {
            return Err(format!("flag '{}' out of order or repeated", c as char));
        }
        last = rank;
        match c {
            b'F' => r.fua = true,
            b'A' => r.readahead = true,
            b'S' => r.sync = true,
            _ => r.meta = true,
        }
    }
    Ok(r)
}

/// Field error text: `field N (Name) 'v' is not ...`.
/// A blkparse `D` line's rest (RWBS, `sector + n`): [`Line::Issued`] for a
/// read or write of data, else [`Line::Ignored`] (nothing of it is replayed,
/// so a field out of shape is not an error).
fn data_issue<'a>(mut it: impl Iterator<Item = &'a str>) -> Line {
    let data = it
        .next()
        .and_then(|r| parse_rwbs(r).ok())
        .is_some_and(|f| matches!(f.op, b'R' | b'W'));
    let n = (it.next(), it.next(), it.next());
    match n {
        (Some(_), Some("+"), Some(n)) if data && n.parse::<u64>().is_ok_and(|n| n > 0) => {
            Line::Issued
        }
        _ => Line::Ignored,
    }
}

fn bad(n: usize, name: &str, v: &str, what: &str) -> String {
    format!("field {n} ({name}) '{v}' is {what}")
}

fn missing(n: usize, name: &str) -> String {
    format!("missing field {n} ({name})")
}

fn int(n: usize, name: &str, v: &str) -> Result<u64, String> {
    v.parse::<u64>()
        .map_err(|_| bad(n, name, v, "not an integer"))
}

/// Exact decimal seconds (`12.000123456`) to ns; falls back to a float for
/// exponent forms. `None` if not a non-negative number.
pub fn parse_secs_ns(s: &str) -> Option<u64> {
    let (ip, fp) = s.split_once('.').unwrap_or((s, ""));
    let digits = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
    if !ip.is_empty() && digits(ip) && digits(fp) {
        let secs: u64 = ip.parse().ok()?;
        let mut frac: u64 = 0;
        for (i, b) in fp.bytes().enumerate() {
            if i == 9 {
                break;
            }
            frac = frac * 10 + (b - b'0') as u64;
        }
        for _ in fp.len().min(9)..9 {
            frac *= 10;
        }
        return secs.checked_mul(1_000_000_000)?.checked_add(frac);
    }
    if ip.is_empty() && !fp.is_empty() && digits(fp) {
        return parse_secs_ns(&format!("0.{fp}"));
    }
    let f: f64 = s.parse().ok()?;
    if (0.0..1.8e10).contains(&f) {
        Some((f * 1e9).round() as u64)
    } else {
        None
    }
}

/// Byte range to (sector, sectors), widened to whole sectors.
fn byte_range(off: u64, len: u64) -> Result<(u64, u64), String> {
    let end = off
        .checked_add(len)
        .ok_or_else(|| format!("offset {off} + size {len} overflows"))?;
    let s = off / SECTOR;
    Ok((s, end.div_ceil(SECTOR) - s))
}

fn is_dev(tok: &str) -> bool {
    match tok.split_once(',') {
        Some((a, b)) => {
            !a.is_empty()
                && !b.is_empty()
                && a.bytes().all(|c| c.is_ascii_digit())
                && b.bytes().all(|c| c.is_ascii_digit())
        }
        None => false,
    }
}

/// The iolog header's version (2 or 3), if this is an iolog header line.
pub fn iolog_version(line: &str) -> Option<u8> {
    let l = line.trim();
    if l.starts_with("fio version 2 iolog") {
        Some(2)
    } else if l.starts_with("fio version 3 iolog") {
        Some(3)
    } else {
        None
    }
}

/// Guess the format of a line; `None` if it fits none (or is blank).
pub fn detect(line: &str) -> Option<Format> {
    let l = line.trim();
    if l.is_empty() {
        return None;
    }
    match iolog_version(l) {
        Some(2) => return Some(Format::IologV2),
        Some(3) => return Some(Format::IologV3),
        _ => {}
    }
    if l.contains(',') {
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        if f.len() == 7
            && f[0].eq_ignore_ascii_case("timestamp")
            && f[3].eq_ignore_ascii_case("type")
        {
            return Some(Format::Msr);
        }
        if f.len() == 7
            && (f[3].eq_ignore_ascii_case("read") || f[3].eq_ignore_ascii_case("write"))
            && f[0].parse::<u64>().is_ok()
            && f[4].parse::<u64>().is_ok()
        {
            return Some(Format::Msr);
        }
        if f.len() >= 5
            && (f[3].eq_ignore_ascii_case("r") || f[3].eq_ignore_ascii_case("w"))
            && f[1].parse::<u64>().is_ok()
            && parse_secs_ns(f[4]).is_some()
        {
            return Some(Format::Spc);
        }
    }
    let t: Vec<&str> = l.split_ascii_whitespace().collect();
    if t.len() >= 7 && is_dev(t[0]) && parse_secs_ns(t[3]).is_some() && t[4].parse::<u32>().is_ok()
    {
        return Some(Format::Blkparse);
    }
    None
}

impl Parser {
    pub fn new(format: Format, arrival: u8) -> Self {
        Parser {
            format,
            arrival,
            in_summary: false,
            header_seen: false,
        }
    }

    /// Parse one line.
    pub fn parse(&mut self, line: &str) -> Result<Line, String> {
        let l = line.trim();
        if l.is_empty() {
            return Ok(Line::Ignored);
        }
        match self.format {
            Format::Blkparse => self.blkparse(l),
            Format::IologV2 | Format::IologV3 => self.iolog(l),
            Format::Msr => self.msr(l),
            Format::Spc => self.spc(l),
            Format::Sqlite => Err("a trace database has no text lines".into()),
        }
    }

    fn blkparse(&mut self, l: &str) -> Result<Line, String> {
        if self.in_summary {
            return Ok(Line::Ignored);
        }
        let mut it = l.split_ascii_whitespace();
        let dev = it.next().unwrap_or("");
        if !is_dev(dev) {
            let summary_start = l.starts_with("Total")
                || (l.starts_with("CPU") && l[3..].starts_with(|c: char| c.is_ascii_digit()));
            if summary_start {
                self.in_summary = true;
                return Ok(Line::Ignored);
            }
            return Err(bad(1, "device", dev, "not maj,min"));
        }
        let cpu = it.next().ok_or_else(|| missing(2, "cpu"))?;
        let cpu = cpu
            .parse::<u16>()
            .map_err(|_| bad(2, "cpu", cpu, "not an integer below 65536"))?;
        let seq = it.next().ok_or_else(|| missing(3, "sequence"))?;
        int(3, "sequence", seq)?;
        let ts = it.next().ok_or_else(|| missing(4, "time"))?;
        let time_ns =
            parse_secs_ns(ts).ok_or_else(|| bad(4, "time", ts, "not seconds.nanoseconds"))?;
        let pid = it.next().ok_or_else(|| missing(5, "pid"))?;
        let pid: u32 = pid
            .parse()
            .map_err(|_| bad(5, "pid", pid, "not an integer"))?;
        let action = it.next().ok_or_else(|| missing(6, "action"))?;
        if self.arrival == b'Q' {
            match action {
                "P" => return Ok(Line::Plug { pid, time_ns }),
                "U" | "UT" => return Ok(Line::Unplug { pid, time_ns }),
                "D" => return Ok(data_issue(it)),
                _ => {}
            }
        }
        if action.len() != 1 || action.as_bytes()[0] != self.arrival {
            return Ok(Line::Ignored);
        }
        let rwbs = it.next().ok_or_else(|| missing(7, "RWBS"))?;
        let flags = parse_rwbs(rwbs).map_err(|e| format!("field 7 (RWBS) '{rwbs}': {e}"))?;
        let Some(sector) = it
            .next()
            .filter(|s| !s.starts_with('[') && !s.starts_with('('))
        else {
            // No `sector + n` payload: a flush or a message without data.
            return Ok(Line::NonData);
        };
        let sector = int(8, "sector", sector)?;
        let plus = it.next().ok_or_else(|| missing(9, "'+'"))?;
        if plus != "+" {
            return Err(bad(9, "'+'", plus, "not '+'"));
        }
        let n = it.next().ok_or_else(|| missing(10, "nblocks"))?;
        let n = int(10, "nblocks", n)?;
        let op = match flags.op {
            b'R' => Op::Read,
            b'W' => Op::Write,
            // Discard, secure erase, flush, no data: non-data records.
            _ => return Ok(Line::NonData),
        };
        if n == 0 {
            return Ok(Line::NonData);
        }
        Ok(Line::Data(Record {
            time_ns,
            op,
            sync: flags.sync || flags.fua || flags.preflush,
            sector,
            sectors: n,
            pid: Some(pid),
            attrs: BioAttrs {
                fua: flags.fua,
                preflush: flags.preflush,
                cpu,
                ..BioAttrs::default()
            },
            file: FileId::default(),
        }))
    }

    fn iolog(&mut self, l: &str) -> Result<Line, String> {
        if !self.header_seen {
            match iolog_version(l) {
                Some(v) if (v == 2) == (self.format == Format::IologV2) => {
                    self.header_seen = true;
                    return Ok(Line::Ignored);
                }
                Some(v) => {
                    return Err(format!(
                        "iolog version {v} header in a {} trace",
                        self.format.name()
                    ))
                }
                None => {
                    return Err(
                        "expected the header 'fio version 2 iolog' or 'fio version 3 iolog'".into(),
                    )
                }
            }
        }
        let v3 = self.format == Format::IologV3;
        let mut t = [""; 6];
        let mut n = 0;
        for tok in l.split_ascii_whitespace() {
            if n == t.len() {
                return Err(format!(
                    "too many fields (expected {})",
                    if v3 { 5 } else { 4 }
                ));
            }
            t[n] = tok;
            n += 1;
        }
        let (time_ns, f) = if v3 {
            let us = int(1, "timestamp", t[0])?;
            let ns = us
                .checked_mul(1_000)
                .ok_or_else(|| bad(1, "timestamp", t[0], "too large"))?;
            (ns, &t[1..n])
        } else {
            (0, &t[..n])
        };
        let base = if v3 { 2 } else { 1 };
        if f.len() < 2 {
            return Err(missing(base + 1, "action"));
        }
        let action = f[1];
        match action {
            "add" | "open" | "close" | "unlink" => {
                if f.len() != 2 {
                    return Err(format!("file action '{action}' takes no offset or length"));
                }
                return Ok(Line::Ignored);
            }
            "wait" if v3 => return Err("'wait' is not allowed in a version 3 iolog".into()),
            "wait" => {
                let ms = int(
                    base + 2,
                    "delay",
                    f.get(2).ok_or_else(|| missing(base + 2, "delay"))?,
                )?;
                let ns = ms
                    .checked_mul(1_000_000)
                    .ok_or_else(|| bad(base + 2, "delay", f[2], "too large"))?;
                return Ok(Line::Wait(ns));
            }
            "read" | "write" | "trim" | "sync" | "datasync" | "sync_file_range" => {}
            other => return Err(bad(base + 1, "action", other, "not an iolog action")),
        }
        if f.len() != 4 {
            return Err(format!(
                "action '{action}' needs an offset and a length ({} fields, expected {})",
                n,
                base + 3
            ));
        }
        let off = int(base + 2, "offset", f[2])?;
        let len = int(base + 3, "length", f[3])?;
        let op = match action {
            "read" => Op::Read,
            "write" => Op::Write,
            _ => return Ok(Line::NonData),
        };
        if len == 0 {
            return Ok(Line::NonData);
        }
        let (sector, sectors) = byte_range(off, len)?;
        Ok(Line::Data(Record {
            time_ns,
            op,
            sync: false,
            sector,
            sectors,
            pid: None,
            attrs: BioAttrs::default(),
            file: FileId::default(),
        }))
    }

    fn csv_fields<'a>(
        l: &'a str,
        min: usize,
        names: &[&str],
        out: &mut [&'a str],
    ) -> Result<usize, String> {
        let mut n = 0;
        for f in l.split(',') {
            if n < out.len() {
                out[n] = f.trim();
            }
            n += 1;
        }
        if n < min {
            return Err(missing(n + 1, names[n]));
        }
        Ok(n)
    }

    fn msr(&mut self, l: &str) -> Result<Line, String> {
        const NAMES: [&str; 7] = [
            "Timestamp",
            "Hostname",
            "DiskNumber",
            "Type",
            "Offset",
            "Size",
            "ResponseTime",
        ];
        let mut f = [""; 7];
        let n = Self::csv_fields(l, 7, &NAMES, &mut f)?;
        if n > 7 {
            return Err(format!("{n} fields (expected 7)"));
        }
        if f[0].eq_ignore_ascii_case("timestamp") {
            return Ok(Line::Ignored);
        }
        let ticks = int(1, NAMES[0], f[0])?;
        let time_ns = ticks
            .checked_mul(100)
            .ok_or_else(|| bad(1, NAMES[0], f[0], "too large"))?;
        int(3, NAMES[2], f[2])?;
        let op = if f[3].eq_ignore_ascii_case("read") {
            Op::Read
        } else if f[3].eq_ignore_ascii_case("write") {
            Op::Write
        } else {
            return Err(bad(4, NAMES[3], f[3], "not Read or Write"));
        };
        let off = int(5, NAMES[4], f[4])?;
        let len = int(6, NAMES[5], f[5])?;
        int(7, NAMES[6], f[6])?;
        if len == 0 {
            return Ok(Line::NonData);
        }
        let (sector, sectors) = byte_range(off, len)?;
        Ok(Line::Data(Record {
            time_ns,
            op,
            sync: false,
            sector,
            sectors,
            pid: None,
            attrs: BioAttrs::default(),
            file: FileId::default(),
        }))
    }

    fn spc(&mut self, l: &str) -> Result<Line, String> {
        const NAMES: [&str; 5] = ["ASU", "LBA", "Size", "Opcode", "Timestamp"];
        let mut f = [""; 5];
        Self::csv_fields(l, 5, &NAMES, &mut f)?;
        if f[0].eq_ignore_ascii_case("asu") {
            return Ok(Line::Ignored);
        }
        let asu = f[0]
            .parse::<u32>()
            .map_err(|_| bad(1, NAMES[0], f[0], "not an integer"))?;
        let sector = int(2, NAMES[1], f[1])?;
        let len = int(3, NAMES[2], f[2])?;
        let op = if f[3].eq_ignore_ascii_case("r") {
            Op::Read
        } else if f[3].eq_ignore_ascii_case("w") {
            Op::Write
        } else {
            return Err(bad(4, NAMES[3], f[3], "not r or w"));
        };
        let time_ns =
            parse_secs_ns(f[4]).ok_or_else(|| bad(5, NAMES[4], f[4], "not a time in seconds"))?;
        if len == 0 {
            return Ok(Line::NonData);
        }
        Ok(Line::Data(Record {
            time_ns,
            op,
            sync: false,
            sector,
            sectors: len.div_ceil(SECTOR),
            pid: Some(asu),
            attrs: BioAttrs::default(),
            file: FileId::default(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secs() {
        assert_eq!(parse_secs_ns("1.427376394"), Some(1_427_376_394));
        assert_eq!(parse_secs_ns("0.5"), Some(500_000_000));
        assert_eq!(parse_secs_ns("3"), Some(3_000_000_000));
        assert_eq!(parse_secs_ns("1.0000000019"), Some(1_000_000_001));
        assert_eq!(parse_secs_ns("1e-3"), Some(1_000_000));
        assert_eq!(parse_secs_ns("-1"), None);
        assert_eq!(parse_secs_ns("abc"), None);
    }

    #[test]
    fn blkparse_lines() {
        let mut p = Parser::new(Format::Blkparse, b'Q');
        let r = p
            .parse("8,16   1        1     1.427376394  5529  Q  WS 274432 + 8 [fio]")
            .unwrap();
        assert_eq!(
            r,
            Line::Data(Record {
                time_ns: 1_427_376_394,
                op: Op::Write,
                sync: true,
                sector: 274432,
                sectors: 8,
                pid: Some(5529),
                attrs: BioAttrs {
                    cpu: 1,
                    ..BioAttrs::default()
                },
                file: FileId::default(),
            })
        );
        // Preflush + FUA + sync write on CPU 3; a FUA read-ahead read.
        let Ok(Line::Data(r)) = p.parse("8,0 3 9 0.5 697 Q FWFS 100 + 8 [jbd2]") else {
            panic!("FWFS");
        };
        assert!(r.attrs.preflush && r.attrs.fua && r.sync && r.op == Op::Write);
        assert_eq!(r.attrs.cpu, 3);
        let Ok(Line::Data(r)) = p.parse("8,0 0 9 0.5 697 Q RA 100 + 8 [x]") else {
            panic!("RA");
        };
        assert!(!r.attrs.fua && !r.attrs.preflush && !r.sync && r.op == Op::Read);
        let Ok(Line::Data(r)) = p.parse("8,0 0 9 0.5 697 Q WFM 100 + 8 [x]") else {
            panic!("WFM");
        };
        assert!(r.attrs.fua && !r.attrs.preflush && r.sync);
        // Flushes (op F, with or without PREFLUSH) and DE are non-data.
        for rwbs in ["F", "FF", "FN", "DE", "FDS"] {
            let l = format!("8,0 0 9 0.5 697 Q {rwbs} 100 + 8 [x]");
            assert_eq!(p.parse(&l), Ok(Line::NonData), "{rwbs}");
        }
        // Letters out of place are errors that name them.
        for (rwbs, what) in [
            ("X", "'X' is not an operation"),
            ("WX", "'X' is not an RWBS flag"),
            ("WSF", "flag 'F' out of order"),
            ("WSS", "flag 'S' out of order or repeated"),
            ("w", "'w' is not an operation"),
        ] {
            let e = p
                .parse(&format!("8,0 0 9 0.5 697 Q {rwbs} 100 + 8 [x]"))
                .unwrap_err();
            assert!(
                e.contains("field 7 (RWBS)") && e.contains(what),
                "{rwbs}: {e}"
            );
        }
        assert_eq!(
            p.parse("8,0 3 1 0.0 697 G W 223490 + 8 [kjournald]"),
            Ok(Line::Ignored)
        );
        // Plugging and the kernel's own requests, with Q as the arrivals.
        assert_eq!(
            p.parse("254,0 0 8 0.029252550 254 P N [jbd2/nullb0-8]"),
            Ok(Line::Plug {
                pid: 254,
                time_ns: 29_252_550
            })
        );
        for u in ["U", "UT"] {
            assert_eq!(
                p.parse(&format!("254,0 1 9 0.000000002 273 {u} N [dd] 1")),
                Ok(Line::Unplug {
                    pid: 273,
                    time_ns: 2
                })
            );
        }
        assert_eq!(
            p.parse("254,0 1 4 0.005 44 D RM 1096 + 8 [kworker/1:1H]"),
            Ok(Line::Issued)
        );
        for d in ["D FN [x]", "D D 100 + 8 [x]", "D W 100 + 0 [x]", "D W junk"] {
            let l = format!("254,0 1 4 0.005 44 {d}");
            assert_eq!(p.parse(&l), Ok(Line::Ignored), "{d}");
        }
        // With D as the arrivals, P, U and D are what they always were.
        let mut pd = Parser::new(Format::Blkparse, b'D');
        assert_eq!(pd.parse("254,0 0 8 0.1 254 P N [j]"), Ok(Line::Ignored));
        assert!(matches!(
            pd.parse("254,0 1 4 0.005 44 D RM 1096 + 8 [k]"),
            Ok(Line::Data(_))
        ));
        assert_eq!(
            p.parse("8,0 3 2 0.0 697 Q FWS [kworker/0:1]"),
            Ok(Line::NonData)
        );
        assert_eq!(
            p.parse("8,0 3 2 0.0 697 Q D 100 + 2048 [fstrim]"),
            Ok(Line::NonData)
        );
        assert_eq!(p.parse("8,0 3 2 0.0 697 Q N 0 + 0 [x]"), Ok(Line::NonData));
        let e = p.parse("8,0 3 2 0.0 697 Q R 12x + 8 [x]").unwrap_err();
        assert_eq!(e, "field 8 (sector) '12x' is not an integer");
        assert_eq!(p.parse("CPU0 (8,0):"), Ok(Line::Ignored));
        assert_eq!(p.parse(" Reads Queued:   1,   4KiB"), Ok(Line::Ignored));
    }

    #[test]
    fn detection() {
        assert_eq!(detect("fio version 3 iolog"), Some(Format::IologV3));
        assert_eq!(
            detect("128166372003061629,hm,0,Write,3154152448,4096,30281"),
            Some(Format::Msr)
        );
        assert_eq!(detect("0,303567,3584,w,0.000000"), Some(Format::Spc));
        assert_eq!(
            detect("8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]"),
            Some(Format::Blkparse)
        );
        assert_eq!(detect("hello world"), None);
    }
}
