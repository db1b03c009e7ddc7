//! Named parameters (scheduler tunables, device and workload options) with
//! validation that names the offending key, and detection of unknown keys.

use anyhow::{bail, Context, Result};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// A bag of `key = value` settings from TOML, a fio file or the command line.
#[derive(Clone, Debug, Default)]
pub struct Params {
    values: BTreeMap<String, String>,
    used: RefCell<BTreeSet<String>>,
    /// When describing: every option read, as its reader declares it.
    described: RefCell<Option<Vec<OptionDoc>>>,
}

/// An option as the code that parses it declares it (`vsim list`): name,
/// default and valid range or values ("-" where the reader gives none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionDoc {
    pub name: String,
    pub default: String,
    pub range: String,
}

impl Params {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parse `k=v,k=v` (the command-line form).
    pub fn parse_kv(s: &str) -> Result<Self> {
        let mut p = Params::new();
        for part in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .with_context(|| format!("expected key=value, got '{part}'"))?;
            p.set(k.trim(), v.trim());
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
            .with_context(|| format!("option '{k}': '{v}' is not a non-negative integer"))?;
        if n < min || n > max {
            bail!("option '{k}': {n} is out of range {min}..={max}");
        }
        Ok(n)
    }

    pub fn f64_in(&self, k: &str, default: f64, min: f64, max: f64) -> Result<f64> {
        self.note(k, default.to_string(), format!("{min}..={max}"));
        let Some(v) = self.raw(k) else {
            return Ok(default);
        };
        let n: f64 = v
            .parse()
            .with_context(|| format!("option '{k}': '{v}' is not a number"))?;
        if n.is_nan() || n < min || n > max {
            bail!("option '{k}': {n} is out of range {min}..={max}");
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
            _ => bail!("option '{k}': '{v}' is not a boolean (0/1)"),
        }
    }

    /// Size with an optional k/m/g/t suffix (powers of 1024, as fio), in bytes.
    pub fn size_or(&self, k: &str, default: u64) -> Result<u64> {
        self.note(k, size_text(default), "size (k/m/g/t)".into());
        let Some(v) = self.raw(k) else {
            return Ok(default);
        };
        parse_size(v).with_context(|| format!("option '{k}': '{v}' is not a size"))
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
pub fn parse_size(v: &str) -> Result<u64> {
    let v = v.trim().to_ascii_lowercase();
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
        return n.checked_mul(mult).context("size overflows");
    }
    let f: f64 = num.parse().context("not a number")?;
    if f.is_nan() || f < 0.0 {
        bail!("negative size");
    }
    Ok((f * mult as f64) as u64)
}

/// Time with an optional unit: ns, us, ms, s (default unit given), into ns.
pub fn parse_time(v: &str, default_unit_ns: u64) -> Result<u64> {
    let v = v.trim().to_ascii_lowercase();
    let units: [(&str, u64); 6] = [
        ("ns", 1),
        ("us", 1_000),
        ("usec", 1_000),
        ("ms", 1_000_000),
        ("msec", 1_000_000),
        ("s", 1_000_000_000),
    ];
    for (suf, mult) in units {
        if let Some(n) = v.strip_suffix(suf) {
            if let Ok(f) = n.trim().parse::<f64>() {
                if f >= 0.0 {
                    return Ok((f * mult as f64).round() as u64);
                }
            }
        }
    }
    if let Some(n) = v.strip_suffix('m') {
        if let Ok(f) = n.parse::<f64>() {
            return Ok((f * 60e9) as u64);
        }
    }
    let f: f64 = v.parse().with_context(|| format!("'{v}' is not a time"))?;
    if f < 0.0 {
        bail!("negative time '{v}'");
    }
    Ok((f * default_unit_ns as f64).round() as u64)
}
