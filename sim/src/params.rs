//! Named parameters (scheduler tunables, device and workload options) with
//! validation that names the offending key, and detection of unknown keys.

use anyhow::{bail, Context, Result};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// A bag of `key = value` settings from TOML, a fio file or the command line.
#[derive(Clone, Debug, Default)]
pub struct Params {
    values: BTreeMap<String, String>,
    /// Where a key was set (`job.fio:12`), for keys read from a file with lines.
    origin: BTreeMap<String, String>,
    used: RefCell<BTreeSet<String>>,
    /// When describing: every option read, as its reader declares it.
    described: RefCell<Option<Vec<OptionDoc>>>,
}

/// An option as the code that parses it declares it (`vsim list`): name,
/// default and valid range or values ("-" where the reader gives none), and
/// a help line where the declaration has one (scheduler tunables; empty for
/// options recorded from their reads).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionDoc {
    pub name: String,
    pub default: String,
    pub range: String,
    pub help: String,
}

impl Params {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parse `k=v,k=v`; a key given again overrides (for code composing
    /// defaults with options: `format!("{defaults},{extra}")`). A user's
    /// spec is read by [`Params::parse_spec`].
    pub fn parse_kv(s: &str) -> Result<Self> {
        Self::parse_pairs(s, false)
    }

    /// Parse a user's `k=v,k=v` (the command-line form of a device,
    /// scheduler or block spec): a key given twice is an error, not the
    /// last one silently winning.
    pub fn parse_spec(s: &str) -> Result<Self> {
        Self::parse_pairs(s, true)
    }

    fn parse_pairs(s: &str, once: bool) -> Result<Self> {
        let mut p = Params::new();
        for part in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .with_context(|| format!("expected key=value, got '{part}'"))?;
            let (k, v) = (k.trim(), v.trim());
            if let Some(old) = p.values.get(k).filter(|_| once) {
                bail!("option '{k}' is given twice ({old} and {v}): give it once");
            }
            p.set(k, v);
        }
        Ok(p)
    }

    /// From a TOML table; nested tables are not allowed here.
    pub fn from_toml(t: &toml::Table) -> Result<Self> {
        let mut p = Params::new();
        for (k, v) in t {
            let s = match v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => (if *b { "1" } else { "0" }).to_string(),
                other => bail!("option '{k}': expected a string, number or boolean, got {other}"),
            };
            p.set(k, &s);
        }
        Ok(p)
    }

    /// An empty bag that records each option read from it, with the default
    /// and range its reader passes: run a constructor on it, then
    /// [`Params::described`] lists the constructor's options.
    pub fn describing() -> Self {
        let p = Params::new();
        *p.described.borrow_mut() = Some(Vec::new());
        p
    }

    /// The options read so far from a [`Params::describing`] bag, in order.
    pub fn described(&self) -> Vec<OptionDoc> {
        self.described.borrow().clone().unwrap_or_default()
    }

    /// Record how option `k` is read (a later, more precise reader of the
    /// same key replaces a bare [`Params::raw`]).
    fn note(&self, k: &str, default: String, range: String) {
        if let Some(list) = self.described.borrow_mut().as_mut() {
            let doc = OptionDoc {
                name: k.to_string(),
                default,
                range,
                help: String::new(),
            };
            match list.iter_mut().find(|d| d.name == k) {
                Some(d) if d.default == "-" && d.range == "-" => *d = doc,
                Some(_) => {}
                None => list.push(doc),
            }
        }
    }

    pub fn set(&mut self, k: &str, v: &str) {
        self.values.insert(k.to_string(), v.to_string());
        self.origin.remove(k);
    }

    /// Set a key read from `origin` (`file:line`): errors about it name the place.
    pub fn set_at(&mut self, k: &str, v: &str, origin: &str) {
        self.values.insert(k.to_string(), v.to_string());
        self.origin.insert(k.to_string(), origin.to_string());
    }

    /// Where `k` was set (`file:line`), if known.
    pub fn origin(&self, k: &str) -> Option<&str> {
        self.origin.get(k).map(String::as_str)
    }

    /// `option 'k'`, preceded by `file:line: ` when known: the subject of
    /// every error about one option.
    pub fn what(&self, k: &str) -> String {
        match self.origin(k) {
            Some(o) => format!("{o}: option '{k}'"),
            None => format!("option '{k}'"),
        }
    }

    pub fn contains(&self, k: &str) -> bool {
        self.values.contains_key(k)
    }

    pub fn raw(&self, k: &str) -> Option<&str> {
        self.note(k, "-".into(), "-".into());
        self.used.borrow_mut().insert(k.to_string());
        self.values.get(k).map(String::as_str)
    }

    pub fn str_or(&self, k: &str, default: &str) -> String {
        self.note(k, default.to_string(), "text".into());
        self.raw(k).unwrap_or(default).to_string()
    }

    /// A string option whose values are `choices` (the caller matches on it).
    pub fn str_of(&self, k: &str, default: &str, choices: &[&str]) -> String {
        self.note(k, default.to_string(), choices.join("|"));
        self.raw(k).unwrap_or(default).to_string()
    }

    /// Unsigned integer with an inclusive valid range.
    pub fn u64_in(&self, k: &str, default: u64, min: u64, max: u64) -> Result<u64> {
        self.note(k, default.to_string(), format!("{min}..={max}"));
        let Some(v) = self.raw(k) else {
            return Ok(default);
        };
        let n = parse_u64(v)
            .with_context(|| format!("{}: '{v}' is not a non-negative integer", self.what(k)))?;
        if n < min || n > max {
            bail!("{}: {n} is out of range {min}..={max}", self.what(k));
        }
        Ok(n)
    }

    pub fn f64_in(&self, k: &str, default: f64, min: f64, max: f64) -> Result<f64> {
        let range = f64_range_text(min, max);
        self.note(k, default.to_string(), range.clone());
        let Some(v) = self.raw(k) else {
            return Ok(default);
        };
        let n: f64 = v
            .trim()
            .parse()
            .with_context(|| format!("{}: '{v}' is not a number", self.what(k)))?;
        if !n.is_finite() {
            bail!(
                "{}: '{v}' is not a finite number (range {range})",
                self.what(k)
            );
        }
        if n < min || n > max {
            bail!("{}: {} is out of range {range}", self.what(k), f64_text(n));
        }
        Ok(n)
    }

    pub fn bool_or(&self, k: &str, default: bool) -> Result<bool> {
        self.note(k, (default as u8).to_string(), "0|1".into());
        let Some(v) = self.raw(k) else {
            return Ok(default);
        };
        match v {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => bail!("{}: '{v}' is not a boolean (0/1)", self.what(k)),
        }
    }

    /// Size with an optional k/m/g/t suffix (powers of 1024, as fio), in bytes.
    pub fn size_or(&self, k: &str, default: u64) -> Result<u64> {
        self.note(k, size_text(default), "size (k/m/g/t)".into());
        let Some(v) = self.raw(k) else {
            return Ok(default);
        };
        parse_size(v).with_context(|| format!("{}: '{v}' is not a size", self.what(k)))
    }

    /// A time (see [`parse_time`]; a bare number is in units of `unit_ns`) in
    /// ns, within `min..=max` ns.
    pub fn time_in(&self, k: &str, default: u64, unit_ns: u64, min: u64, max: u64) -> Result<u64> {
        let shown = if default.is_multiple_of(unit_ns.max(1)) {
            (default / unit_ns.max(1)).to_string()
        } else {
            fmt_ns(default)
        };
        self.note(k, shown, format!("{}..={}", fmt_ns(min), fmt_ns(max)));
        let Some(v) = self.raw(k) else {
            return Ok(default);
        };
        let n = parse_time(v, unit_ns).with_context(|| self.what(k))?;
        if n < min || n > max {
            bail!(
                "{}: '{v}' is out of range {}..={}",
                self.what(k),
                fmt_ns(min),
                fmt_ns(max)
            );
        }
        Ok(n)
    }

    /// Fail if a key was given that nobody read: catches typos in configs.
    pub fn check_all_used(&self, what: &str) -> Result<()> {
        let used = self.used.borrow();
        let unknown: Vec<&String> = self.values.keys().filter(|k| !used.contains(*k)).collect();
        if !unknown.is_empty() {
            let list: Vec<&str> = unknown.iter().map(|s| s.as_str()).collect();
            bail!("{what}: unknown option(s): {}", list.join(", "));
        }
        Ok(())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &String)> {
        self.values.iter()
    }
}

/// A number for a message: as written below 1e15, else in exponent form
/// (`1.8e308`, not 309 digits).
pub fn f64_text(f: f64) -> String {
    if f.abs() < 1e15 {
        format!("{f}")
    } else {
        format!("{f:.1e}")
    }
}

/// The range of an option read with [`Params::f64_in`]: `min..=max`, or
/// `min..` when the maximum is only the type's.
fn f64_range_text(min: f64, max: f64) -> String {
    if max >= f64::MAX {
        format!("{}..", f64_text(min))
    } else {
        format!("{}..={}", f64_text(min), f64_text(max))
    }
}

/// A byte count as the shortest exact fio size (`4g`, `512k`, `4096`... ).
pub fn size_text(b: u64) -> String {
    for (suf, sh) in [("t", 40), ("g", 30), ("m", 20), ("k", 10)] {
        if b > 0 && b.is_multiple_of(1u64 << sh) {
            return format!("{}{suf}", b >> sh);
        }
    }
    b.to_string()
}

pub fn parse_u64(v: &str) -> Result<u64> {
    let v = v.trim();
    if let Some(h) = v.strip_prefix("0x") {
        return Ok(u64::from_str_radix(h, 16)?);
    }
    Ok(v.parse::<u64>()?)
}

/// fio-style size: `4k`, `1m`, `2g`, `512`, `1.5m` (binary multiples).
/// Errors for anything else: a list (`4k,8k`: vsim takes one size), a sign,
/// a value that does not fit in 64 bits.
pub fn parse_size(v: &str) -> Result<u64> {
    let v = v.trim().to_ascii_lowercase();
    if v.contains([',', ':', '-']) {
        bail!("one size is expected, such as 4k or 1m (not a list, range or negative value)");
    }
    let v = v
        .strip_suffix("ib")
        .or_else(|| v.strip_suffix('b'))
        .unwrap_or(&v)
        .to_string();
    let (num, mult) = match v.chars().last() {
        Some('k') => (&v[..v.len() - 1], 1u64 << 10),
        Some('m') => (&v[..v.len() - 1], 1 << 20),
        Some('g') => (&v[..v.len() - 1], 1 << 30),
        Some('t') => (&v[..v.len() - 1], 1 << 40),
        Some('p') => (&v[..v.len() - 1], 1 << 50),
        _ => (&v[..], 1),
    };
    if num.is_empty() {
        bail!("empty size");
    }
    if let Ok(n) = num.parse::<u64>() {
        return n.checked_mul(mult).context("size does not fit in 64 bits");
    }
    let f: f64 = num
        .parse()
        .ok()
        .context("not a number with an optional k/m/g/t/p suffix")?;
    let bytes = f * mult as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes >= u64::MAX as f64 {
        bail!("size out of range (0 to 16 EiB)");
    }
    Ok(bytes as u64)
}

/// Seconds, rounded to ns, of a finite non-negative `f` in units of `unit`
/// ns; an error when it is not a number or does not fit in 64 bits of ns
/// (584 years).
fn scaled_ns(f: f64, unit: u64, v: &str) -> Result<u64> {
    if f.is_nan() {
        bail!("'{v}' is not a time");
    }
    if f < 0.0 {
        bail!("negative time '{v}'");
    }
    let ns = (f * unit as f64).round();
    if !ns.is_finite() || ns >= u64::MAX as f64 {
        bail!("time '{v}' is too large (at most {})", fmt_ns(u64::MAX));
    }
    Ok(ns as u64)
}

/// A duration in ns for messages: `1.5s`, `250ms`, `584y`.
pub fn fmt_ns(ns: u64) -> String {
    const Y: u64 = 365 * 86_400 * 1_000_000_000;
    for (unit, name) in [
        (Y, "y"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
    ] {
        if ns >= unit {
            let x = format!("{:.3}", ns as f64 / unit as f64);
            return format!("{}{name}", x.trim_end_matches('0').trim_end_matches('.'));
        }
    }
    format!("{ns}ns")
}

/// Time with an optional unit: ns, us, ms, s, m (minutes), h, d, into ns; a
/// bare number is in units of `default_unit_ns`. NaN, infinities, negative
/// values and times beyond 64 bits of ns are errors.
pub fn parse_time(v: &str, default_unit_ns: u64) -> Result<u64> {
    let t = v.trim().to_ascii_lowercase();
    const S: u64 = 1_000_000_000;
    let units: [(&str, u64); 9] = [
        ("ns", 1),
        ("usec", 1_000),
        ("us", 1_000),
        ("msec", 1_000_000),
        ("ms", 1_000_000),
        ("s", S),
        ("m", 60 * S),
        ("h", 3600 * S),
        ("d", 86_400 * S),
    ];
    for (suf, mult) in units {
        if let Some(n) = t.strip_suffix(suf) {
            if let Ok(f) = n.trim().parse::<f64>() {
                return scaled_ns(f, mult, v);
            }
        }
    }
    let f: f64 = t
        .parse()
        .ok()
        .with_context(|| format!("'{v}' is not a time"))?;
    scaled_ns(f, default_unit_ns, v)
}

/// The command line's `--runtime` (seconds by default): a positive time;
/// 0 is an error, not a silent "no limit" (leaving it out runs until the
/// jobs finish).
pub fn parse_runtime_arg(v: &str) -> Result<u64> {
    let t = parse_time(v, 1_000_000_000).context("--runtime")?;
    if t == 0 {
        bail!("--runtime {v}: give a positive time such as 5s (leave --runtime out to run until the jobs finish)");
    }
    Ok(t)
}

/// Open an input file (a configuration, job file or trace): a regular file,
/// or an error naming the path where it is a FIFO, socket or device (opening
/// a FIFO would block until something writes to it).
pub fn open_regular(path: &std::path::Path) -> Result<std::fs::File> {
    let m = std::fs::metadata(path).with_context(|| format!("cannot open {}", path.display()))?;
    if !m.is_file() && !m.is_dir() {
        bail!(
            "{}: not a regular file (a FIFO, socket or device); vsim reads its inputs from files",
            path.display()
        );
    }
    std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))
}

/// Read a text file of at most `max` bytes: a configuration or job file
/// (a larger one, or a device such as /dev/zero, is an error, not an
/// unbounded read).
pub fn read_text(path: &std::path::Path, max: u64) -> Result<String> {
    use std::io::Read;
    let f = open_regular(path).with_context(|| format!("reading {}", path.display()))?;
    let mut buf = Vec::new();
    f.take(max + 1)
        .read_to_end(&mut buf)
        .with_context(|| format!("reading {}", path.display()))?;
    if buf.len() as u64 > max {
        bail!(
            "{}: larger than {} bytes: not a configuration or job file",
            path.display(),
            max
        );
    }
    String::from_utf8(buf).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        anyhow::anyhow!("{}:{line}: not UTF-8 text", path.display())
    })
}

/// Largest configuration or job file read (1 MiB).
pub const MAX_TEXT_FILE: u64 = 1 << 20;
