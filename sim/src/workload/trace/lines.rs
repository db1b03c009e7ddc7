//! A line reader over any `BufRead` that reuses one buffer (no allocation per
//! line once warm) and can look a bounded number of lines ahead, for format
//! detection. Memory: the line buffer plus at most [`MAX_LOOKAHEAD`] pre-read
//! lines of at most [`MAX_LOOKAHEAD_BYTES`] in all, whatever the input.
//!
//! A line is never held beyond [`MAX_LINE`] bytes: reading stops there and
//! the line is an error naming `file:line`, even with `skip_bad` (skipping
//! it would mean reading on to a newline that an input such as /dev/zero
//! never has).

use std::collections::VecDeque;
use std::io::{self, BufRead};

/// Most lines ever held ahead of the reading position.
pub const MAX_LOOKAHEAD: usize = 4096;

/// Lines longer than this are an error; they are never read whole.
pub const MAX_LINE: usize = 1 << 16;

/// Most bytes of text held in the look-ahead.
pub const MAX_LOOKAHEAD_BYTES: usize = 4 << 20;

/// One line read ahead: its text, or `None` when it was not UTF-8 or too long.
type Ahead = (u64, Option<String>);

pub struct Lines {
    r: Box<dyn BufRead + Send>,
    /// The input's name in messages.
    label: String,
    bytes: Vec<u8>,
    /// The current line, without its line terminator.
    pub cur: String,
    /// The current line was not valid UTF-8 or was too long.
    pub cur_invalid: bool,
    /// 1-based number of the current line.
    pub lineno: u64,
    ahead: VecDeque<Ahead>,
    ahead_bytes: usize,
    read_lines: u64,
    eof: bool,
    /// Bytes read from the input so far (look-ahead included).
    pub consumed: u64,
}

impl Lines {
    /// Lines of `r`; `label` names it in errors (`label:line: ...`).
    pub fn new(r: Box<dyn BufRead + Send>, label: &str) -> Self {
        Lines {
            r,
            label: label.to_string(),
            bytes: Vec::with_capacity(256),
            cur: String::with_capacity(256),
            cur_invalid: false,
            lineno: 0,
            ahead: VecDeque::new(),
            ahead_bytes: 0,
            read_lines: 0,
            eof: false,
            consumed: 0,
        }
    }

    /// Read one raw line from the input into `self.bytes`; false at EOF. A
    /// line longer than [`MAX_LINE`] is an error, found without reading
    /// more than `MAX_LINE + 1` bytes of it.
    fn read_raw(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        self.bytes.clear();
        let no = self.read_lines + 1;
        let mut any = false;
        loop {
            let buf = match self.r.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("{}:{no}: read error: {e}", self.label),
                    ))
                }
            };
            if buf.is_empty() {
                break;
            }
            any = true;
            let room = MAX_LINE + 1 - self.bytes.len();
            let (take, done) = match buf.iter().take(room).position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len().min(room), false),
            };
            self.bytes.extend_from_slice(&buf[..take]);
            self.r.consume(take);
            self.consumed += take as u64;
            if done {
                break;
            }
            if self.bytes.len() > MAX_LINE {
                self.eof = true;
                self.bytes = Vec::with_capacity(256);
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{}:{no}: line longer than {MAX_LINE} bytes: not a text trace of any known format (blkparse, fio iolog v2/v3, MSR CSV, SPC)",
                        self.label
                    ),
                ));
            }
        }
        if !any {
            self.eof = true;
            return Ok(false);
        }
        self.read_lines += 1;
        while matches!(self.bytes.last(), Some(b'\n' | b'\r')) {
            self.bytes.pop();
        }
        Ok(true)
    }

    fn decode(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }

    /// Advance to the next line; false at EOF.
    pub fn next_line(&mut self) -> io::Result<bool> {
        if let Some((no, text)) = self.ahead.pop_front() {
            self.ahead_bytes -= text.as_ref().map_or(0, String::len);
            if self.ahead.is_empty() {
                self.ahead = VecDeque::new();
            }
            self.lineno = no;
            match text {
                Some(s) => {
                    self.cur.clear();
                    self.cur.push_str(&s);
                    self.cur_invalid = false;
                }
                None => {
                    self.cur.clear();
                    self.cur_invalid = true;
                }
            }
            return Ok(true);
        }
        if !self.read_raw()? {
            return Ok(false);
        }
        self.lineno = self.read_lines;
        self.cur.clear();
        let ok = match std::str::from_utf8(&self.bytes) {
            Ok(s) => {
                self.cur.push_str(s);
                true
            }
            _ => false,
        };
        self.cur_invalid = !ok;
        Ok(true)
    }

    /// Look ahead at the `i`-th upcoming line (0 = the next one) without
    /// consuming it: (line number, text or `None` if not UTF-8); `None` past
    /// the end or past [`MAX_LOOKAHEAD`] lines or [`MAX_LOOKAHEAD_BYTES`].
    pub fn peek(&mut self, i: usize) -> io::Result<Option<(u64, Option<&str>)>> {
        if i >= MAX_LOOKAHEAD {
            return Ok(None);
        }
        while self.ahead.len() <= i && self.ahead_bytes < MAX_LOOKAHEAD_BYTES && self.read_raw()? {
            let text = self.decode().map(str::to_string);
            self.ahead_bytes += text.as_ref().map_or(0, String::len);
            self.ahead.push_back((self.read_lines, text));
        }
        Ok(self.ahead.get(i).map(|(no, t)| (*no, t.as_deref())))
    }

    /// Bytes held by the reader's own buffers (for the bounded-memory tests).
    pub fn footprint(&self) -> usize {
        self.bytes.capacity()
            + self.cur.capacity()
            + self.ahead.capacity() * std::mem::size_of::<Ahead>()
            + self
                .ahead
                .iter()
                .map(|(_, t)| t.as_ref().map_or(0, String::capacity))
                .sum::<usize>()
    }
}
