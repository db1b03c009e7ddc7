//! fio job files: the INI format of fio's HOWTO ("Job file format"), a
//! documented subset.
//!
//! - Sections `[global]` and `[jobname]`; `key=value` (spaces around `=`
//!   allowed) and bare flags (`time_based`, `direct`, ...) meaning `1`.
//! - Comments: lines starting with `;` or `#`, and a `;`/`#` after
//!   whitespace at the end of a line.
//! - As in fio, a `[global]` section applies to the jobs that follow it; a
//!   later `[global]` adds to (and overrides) the earlier one for the jobs
//!   after it. Each job gets the global options merged under its own.
//! - Job options: those of [`super::job::OPTIONS`], passed through for
//!   `JobSpec::from_params` to validate; fio synonyms mapped here
//!   ([`SYNONYMS`]: `io_limit` -> `io_size`, `buffered=b` -> `direct=!b`,
//!   `sync=sync|dsync|none` -> `sync=1|1|0`).
//! - Run-level options, returned apart: `runtime` and `ramp_time` (fio time:
//!   default unit s, suffixes us/ms/s/m/h/d), `time_based`. Every job must
//!   agree on them (vsim has one run time). As in fio, a time-based run lasts
//!   `ramp_time + runtime` and I/Os completing during `ramp_time` are left
//!   out of the statistics.
//! - `ioengine`: fio's default is `psync`. A synchronous engine
//!   ([`super::job::SYNC_ENGINES`]) has one I/O in flight per job whatever
//!   `iodepth` says, as in fio; jobs without `ioengine` get `psync` here, so a
//!   job file means what it means to fio ([`FioFile::warnings`] says when an
//!   `iodepth` above 1 is ignored).
//! - Every option keeps its `file:line`, so an invalid value found later
//!   (`bs=4k,8k`) is reported there.
//! - Accepted and ignored (they do not change the model): [`IGNORED`]; the
//!   ones seen are listed in [`FioFile::ignored`].
//! - Anything else, `include`, `$VAR` substitution, options before the first
//!   section, is an error naming `file:line`.

use crate::params::{parse_time, read_text, Params, MAX_TEXT_FILE};
use crate::types::SEC;
use anyhow::{bail, Context, Result};
use std::path::Path;

/// Options accepted and ignored: engine, file and reporting settings that do
/// not change the simulated model.
pub const IGNORED: &[&str] = &[
    "filename",
    "directory",
    "description",
    "group_reporting",
    "lat_percentiles",
    "clat_percentiles",
    "slat_percentiles",
    "percentile_list",
    "randrepeat",
    "randseed",
    "thread",
    "invalidate",
    "new_group",
    "unified_rw_reporting",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "gtod_reduce",
    "per_job_logs",
    "allow_file_create",
];

/// Run-level options, returned in [`FioFile`] rather than per job.
pub const RUN_LEVEL: &[&str] = &["runtime", "time_based", "ramp_time"];

/// fio spellings mapped onto vsim job options.
pub const SYNONYMS: &[(&str, &str)] = &[("io_limit", "io_size"), ("buffered", "direct (inverted)")];

/// Job options that may be given as bare flags.
const FLAGS: &[&str] = &[
    "direct",
    "sync",
    "open_loop",
    "buffered",
    "time_based",
    "norandommap",
    "write_bw_log",
    "write_iops_log",
    "write_lat_log",
    "log_offset",
];

/// The flag's value when given bare: `1`, but for a log an empty prefix
/// (fio names the file after the job).
fn bare_value(key: &str) -> &'static str {
    if crate::metrics::iolog::LOG_OPTIONS.contains(&key) && key.starts_with("write_") {
        ""
    } else {
        "1"
    }
}

/// A parsed job file.
#[derive(Debug, Default)]
pub struct FioFile {
    /// Jobs in file order: section name, options (global merged under the job's).
    pub jobs: Vec<(String, Params)>,
    /// `runtime`, in ns.
    pub runtime_ns: Option<u64>,
    /// `ramp_time`, in ns (the caller may exclude it from the statistics).
    pub ramp_ns: Option<u64>,
    pub time_based: bool,
    /// Ignored options that appeared, each once, in order of appearance.
    pub ignored: Vec<String>,
    /// Things the file asks for that do not happen (as in fio), said once.
    pub warnings: Vec<String>,
    /// The `[global]` sections' options as written (a later one overriding
    /// an earlier), with their line: fio's `global options`. The jobs'
    /// options that came from here have this line as their origin.
    pub global: Vec<(String, String, usize)>,
}

/// Parse a job file from disk.
pub fn parse_file(path: &Path) -> Result<FioFile> {
    let text = read_text(path, MAX_TEXT_FILE).context("cannot read the job file")?;
    parse_str(&text, &path.display().to_string())
}

/// fio time (default unit seconds) in ns.
fn fio_time(v: &str) -> Result<u64> {
    parse_time(v, SEC)
}

/// Options being built for one section, with where each run-level option came from.
#[derive(Clone, Default)]
struct Section {
    /// (key, value, line).
    opts: Vec<(String, String, usize)>,
    runtime: Option<(u64, usize)>,
    ramp: Option<(u64, usize)>,
    time_based: Option<(bool, usize)>,
}

impl Section {
    fn set(&mut self, k: &str, v: &str, line: usize) {
        if let Some(e) = self.opts.iter_mut().find(|(kk, _, _)| kk == k) {
            e.1 = v.to_string();
            e.2 = line;
        } else {
            self.opts.push((k.to_string(), v.to_string(), line));
        }
    }
}

/// Parse job-file text; `label` names it in messages.
pub fn parse_str(text: &str, label: &str) -> Result<FioFile> {
    let mut out = FioFile::default();
    let mut global = Section::default();
    // The section being read: None before the first; Some(None) = [global].
    let mut cur: Option<Option<(String, Section)>> = None;
    let mut jobs: Vec<(String, Section)> = Vec::new();

    let finish = |cur: &mut Option<Option<(String, Section)>>,
                  jobs: &mut Vec<(String, Section)>| {
        if let Some(Some(j)) = cur.take() {
            jobs.push(j);
        }
    };

    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let mut line = raw.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        // Trailing comment after whitespace.
        if let Some(pos) = line.char_indices().find_map(|(p, c)| {
            ((c == ';' || c == '#') && line[..p].ends_with(char::is_whitespace)).then_some(p)
        }) {
            line = line[..pos].trim();
        }
        if let Some(rest) = line.strip_prefix('[') {
            let Some(name) = rest.strip_suffix(']') else {
                bail!("{label}:{lineno}: section header '{line}' has no closing ']'");
            };
            let name = name.trim();
            if name.is_empty() {
                bail!("{label}:{lineno}: empty section name");
            }
            finish(&mut cur, &mut jobs);
            cur = Some(if name == "global" {
                None
            } else {
                Some((name.to_string(), global.clone()))
            });
            continue;
        }
        let (key, val) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (line, None),
        };
        let where_ = match &cur {
            None => bail!(
                "{label}:{lineno}: option '{key}' before the first section ([global] or [job])"
            ),
            Some(None) => "[global]".to_string(),
            Some(Some((n, _))) => format!("[{n}]"),
        };
        if key == "include" || key.starts_with("include ") {
            bail!("{label}:{lineno}: 'include' is not supported; put the options in this file");
        }
        if line.contains('$') {
            bail!("{label}:{lineno}: variable substitution ('$') is not supported");
        }
        if key.is_empty() || key.contains(char::is_whitespace) {
            bail!("{label}:{lineno}: expected key=value or a flag, got '{line}'");
        }
        if matches!(cur, Some(None)) {
            let v = val.unwrap_or(bare_value(key)).to_string();
            match out.global.iter_mut().find(|g| g.0 == key) {
                Some(g) => (g.1, g.2) = (v, lineno),
                None => out.global.push((key.to_string(), v, lineno)),
            }
        }
        let sec: &mut Section = match &mut cur {
            Some(Some((_, s))) => s,
            _ => &mut global,
        };
        if let Some(v) = val {
            if v.is_empty() {
                bail!("{label}:{lineno}: option '{key}' in {where_} has an empty value");
            }
        }
        if IGNORED.contains(&key) {
            if !out.ignored.iter().any(|k| k == key) {
                out.ignored.push(key.to_string());
            }
            continue;
        }
        if val.is_none() && !FLAGS.contains(&key) {
            let known = RUN_LEVEL.contains(&key) || super::job::OPTIONS.contains(&key);
            if known {
                bail!("{label}:{lineno}: option '{key}' in {where_} needs a value");
            }
            bail!("{label}:{lineno}: unsupported option '{key}' in {where_}");
        }
        let v = val.unwrap_or(bare_value(key));
        let ctx = || format!("{label}:{lineno}: option '{key}' in {where_}");
        match key {
            "runtime" => sec.runtime = Some((fio_time(v).with_context(ctx)?, lineno)),
            "ramp_time" => sec.ramp = Some((fio_time(v).with_context(ctx)?, lineno)),
            "time_based" => {
                let b = match v {
                    "1" | "true" | "yes" | "on" => true,
                    "0" | "false" | "no" | "off" => false,
                    _ => bail!("{}: '{v}' is not a boolean", ctx()),
                };
                sec.time_based = Some((b, lineno));
            }
            "io_limit" => sec.set("io_size", v, lineno),
            "buffered" => {
                let b = match v {
                    "1" | "true" => "0",
                    "0" | "false" => "1",
                    _ => bail!("{}: '{v}' is not a boolean", ctx()),
                };
                sec.set("direct", b, lineno);
            }
            "sync" => {
                let s = match v {
                    "sync" | "dsync" => "1",
                    "none" => "0",
                    other => other,
                };
                sec.set("sync", s, lineno);
            }
            k if super::job::OPTIONS.contains(&k) => sec.set(k, v, lineno),
            _ => bail!("{label}:{lineno}: unsupported option '{key}' in {where_}"),
        }
    }
    finish(&mut cur, &mut jobs);
    if jobs.is_empty() {
        bail!("{label}: no job sections (only [global])");
    }

    // Run-level options: one value for the whole file.
    type Pick<T> = fn(&Section) -> Option<(T, usize)>;
    fn agree<T: PartialEq + Copy + std::fmt::Debug>(
        jobs: &[(String, Section)],
        what: &str,
        label: &str,
        pick: Pick<T>,
    ) -> Result<Option<T>> {
        let mut val: Option<(T, usize, &str)> = None;
        for (name, s) in jobs {
            if let Some((v, line)) = pick(s) {
                match val {
                    Some((w, wl, wn)) if w != v => bail!(
                        "{label}:{line}: {what} {v:?} in [{name}] differs from {w:?} ({label}:{wl}, [{wn}]); vsim has one run time"
                    ),
                    None => val = Some((v, line, name)),
                    _ => {}
                }
            }
        }
        Ok(val.map(|(v, _, _)| v))
    }
    out.runtime_ns = agree(&jobs, "runtime", label, |s| s.runtime)?;
    out.ramp_ns = agree(&jobs, "ramp_time", label, |s| s.ramp)?;
    out.time_based = agree(&jobs, "time_based", label, |s| s.time_based)?.unwrap_or(false);
    out.global.sort_by_key(|g| g.2);
    // (job, line of its iodepth, warning)
    let mut depth_ignored: Vec<(String, usize, String)> = Vec::new();
    for (name, s) in jobs {
        let mut p = Params::new();
        for (k, v, line) in &s.opts {
            p.set_at(k, v, &format!("{label}:{line}"));
        }
        let defaulted = !p.contains("ioengine");
        if defaulted {
            p.set("ioengine", super::job::FIO_DEFAULT_ENGINE);
        }
        if let Some(mut w) = super::job::ignored_depth(&p) {
            if defaulted {
                w.push_str(" (no ioengine given: fio's default is psync)");
            }
            let line = s.opts.iter().find(|o| o.0 == "iodepth").map_or(0, |o| o.2);
            depth_ignored.push((name.clone(), line, w));
        }
        out.jobs.push((name, p));
    }
    if let Some((_, line, w)) = depth_ignored.first() {
        let names: Vec<&str> = depth_ignored.iter().map(|d| d.0.as_str()).collect();
        out.warnings.push(format!(
            "{label}:{line}: {w} (job{} {})",
            if names.len() > 1 { "s" } else { "" },
            names.join(", ")
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(fio_time("5").unwrap(), 5 * SEC);
        assert_eq!(fio_time("250ms").unwrap(), SEC / 4);
        assert_eq!(fio_time("2m").unwrap(), 120 * SEC);
        assert_eq!(fio_time("1h").unwrap(), 3600 * SEC);
        assert!(fio_time("soon").is_err());
    }

    #[test]
    fn later_global_applies_to_later_jobs() {
        let f = parse_str("[global]\nbs=4k\n[a]\n[global]\nbs=8k\n[b]\n", "t.fio").unwrap();
        assert_eq!(f.jobs[0].1.raw("bs"), Some("4k"));
        assert_eq!(f.jobs[1].1.raw("bs"), Some("8k"));
    }
}
