//! A line reader over any `BufRead` that reuses one buffer (no allocation per
//! line once warm) and can look a bounded number of lines ahead, for format
//! detection. Memory: the line buffer plus at most [`MAX_LOOKAHEAD`] pre-read
//! lines, whatever the length of the input.

use std::collections::VecDeque;
use std::io::{self, BufRead};

/// Most lines ever held ahead of the reading position.
pub const MAX_LOOKAHEAD: usize = 4096;

/// Lines longer than this are reported as bad instead of being held.
pub const MAX_LINE: usize = 1 << 16;

/// One line read ahead: its text, or `None` when it was not UTF-8 or too long.
type Ahead = (u64, Option<String>);

pub struct Lines {
    r: Box<dyn BufRead + Send>,
    bytes: Vec<u8>,
    /// The current line, without its line terminator.
    pub cur: String,
    /// The current line was not valid UTF-8 or was too long.
    pub cur_invalid: bool,
    /// 1-based number of the current line.
    pub lineno: u64,
    ahead: VecDeque<Ahead>,
    read_lines: u64,
    eof: bool,
}

impl Lines {
    pub fn new(r: Box<dyn BufRead + Send>) -> Self {
        Lines {
            r,
            bytes: Vec::with_capacity(256),
            cur: String::with_capacity(256),
            cur_invalid: false,
            lineno: 0,
            ahead: VecDeque::new(),
            read_lines: 0,
            eof: false,
        }
    }

    /// Read one raw line from the input into `self.bytes`; false at EOF.
    fn read_raw(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        self.bytes.clear();
        let n = self.r.read_until(b'\n', &mut self.bytes)?;
        if n == 0 {
            self.eof = true;
            // Give back a buffer grown by one huge line.
            if self.bytes.capacity() > MAX_LINE {
                self.bytes = Vec::with_capacity(256);
            }
            return Ok(false);
        }
        self.read_lines += 1;
        while matches!(self.bytes.last(), Some(b'\n' | b'\r')) {
            self.bytes.pop();
        }
        Ok(true)
    }

    fn decode(&self) -> Option<&str> {
        if self.bytes.len() > MAX_LINE {
            return None;
        }
        std::str::from_utf8(&self.bytes).ok()
    }

    /// Advance to the next line; false at EOF.
    pub fn next_line(&mut self) -> io::Result<bool> {
        if let Some((no, text)) = self.ahead.pop_front() {
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
            Ok(s) if s.len() <= MAX_LINE => {
                self.cur.push_str(s);
                true
            }
            _ => false,
        };
        self.cur_invalid = !ok;
        if self.bytes.capacity() > 4 * MAX_LINE {
            self.bytes = Vec::with_capacity(256);
        }
        Ok(true)
    }

    /// Look ahead at the `i`-th upcoming line (0 = the next one) without
    /// consuming it: (line number, text or `None` if invalid); `None` past the
    /// end or past [`MAX_LOOKAHEAD`].
    pub fn peek(&mut self, i: usize) -> io::Result<Option<(u64, Option<&str>)>> {
        if i >= MAX_LOOKAHEAD {
            return Ok(None);
        }
        while self.ahead.len() <= i && self.read_raw()? {
            let text = self.decode().map(str::to_string);
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
