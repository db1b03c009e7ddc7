//! Reproductions of the seed papers' simulated experiments (`vsim repro
//! NAME`): each runs its matrix, prints the paper's figures beside ours with
//! a verdict per claim, and writes summary.json in the reproduction format
//! the HTML report reads (kind `vsim-repro`: title, paper, mapping,
//! verdicts, tables, rankings, cases, plan, meta).
//!
//! Adding one: a new file with `run(&Options) -> Result<Repro>` and one line
//! in [`REGISTRY`].

use anyhow::{bail, Result};
use serde_json::{json, Value};
pub use vsim::verdict::{combine, combine_criterion, grade, Claim, Grade, Ours, Quantifier};

pub mod bid;
pub mod hints;
pub mod qos;

/// What the command line passes to a reproduction.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Smaller traces, one seed: a check that everything runs (make test).
    pub quick: bool,
    /// Generated traces per workload (seeds 1..=N); 0 = the reproduction's default.
    pub seeds: u32,
    /// Only these workloads (empty: all).
    pub workloads: Vec<String>,
    /// Multiplies the generated traces' sizes (0 = default).
    pub scale: f64,
    /// Multiplies the generated traces' arrival rates (offered load; 0 = default 1).
    pub load: f64,
}

/// A reproduction's result: the summary (JSON) and its text (Markdown).
pub struct Repro {
    pub summary: Value,
    pub markdown: String,
}

pub type Runner = fn(&Options) -> Result<Repro>;

/// Name, what it reproduces, runner.
pub const REGISTRY: &[(&str, &str, Runner)] = &[
    (
        "bid",
        "bid-bulk-io-dispatch.txt: BID-HDD and BID-Hybrid against noop, deadline and CFQ on MapReduce-like traces (Figs. 12, 15-19)",
        bid::run,
    ),
    (
        "hints",
        "kernel-mechanisms-hints-and-tracing.txt §2: a mapping-cache SSD (demand-loaded map) with and without host-supplied hints: flash time per request by constituent, chunk sizes, slower flash, faster bus, hint-cache size (Figs. 2.2-2.5)",
        hints::run,
    ),
    (
        "qos",
        "qos-flash-hybrid-store.txt: RBFQ's fairness on a disk and a flash, the hybrid store offline and online, synthetic and TPC-C-like streams (Tables 1-3, 5-9)",
        qos::run,
    ),
];

pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|r| r.0).collect()
}

pub fn run(name: &str, o: &Options) -> Result<Repro> {
    match REGISTRY.iter().find(|r| r.0 == name) {
        Some(r) => (r.2)(o),
        None => bail!(
            "unknown reproduction '{name}' (known: {})",
            names().join(", ")
        ),
    }
}

/// Check a reproduction's summary has the shape the report reads: kind
/// `vsim-repro`, every verdict one of the rule's grades ([`Grade`]) with its
/// claim, criterion and evidence, and the list fields present. Returns the
/// number of verdicts.
pub fn check_summary(s: &Value) -> Result<usize> {
    if s["kind"] != "vsim-repro" {
        bail!("kind is {}, not vsim-repro", s["kind"]);
    }
    for k in ["verdicts", "tables", "rankings", "cases"] {
        if !s[k].is_array() {
            bail!("'{k}' is not a list");
        }
    }
    let verdicts = s["verdicts"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    for v in verdicts {
        let t = v["verdict"].as_str().unwrap_or("");
        if Grade::parse(t).is_none()
            || v["claim"].as_str().is_none()
            || v["criterion"].as_str().is_none()
            || v["evidence"].as_str().is_none()
        {
            bail!("malformed verdict {v}");
        }
    }
    Ok(verdicts.len())
}

/// A verdict on one claim, as the report shows it: its grade under the rule
/// (`vsim::verdict`) and the criterion that decided it.
pub fn verdict(
    claim: &str,
    where_: &str,
    grade: Grade,
    criterion: &str,
    evidence: String,
) -> Value {
    json!({"claim": claim, "where": where_, "verdict": grade.as_str(), "criterion": criterion,
           "evidence": evidence})
}

/// What "ours" is in the simulator's verdicts: the median over the generated
/// traces with their range as the noise, or a deterministic run's value.
pub fn noise_words(seeds: u32) -> String {
    if seeds > 1 {
        format!("ours: the median over {seeds} generated traces, its interval their range")
    } else {
        "ours: one run, no noise estimate (the interval is the value)".into()
    }
}

/// A numeric claim graded on ours, with the criterion and the noise in words.
pub fn judged(
    claim_text: &str,
    where_: &str,
    claim: &Claim,
    ours: Option<Ours>,
    noise: &str,
    evidence: String,
) -> Value {
    let g = vsim::verdict::grade(claim, ours.as_ref());
    verdict(
        claim_text,
        where_,
        g,
        &format!("{}; {noise}", claim.criterion()),
        evidence,
    )
}

/// A part that is a yes-or-no fact of a deterministic run.
pub fn yes(b: bool) -> Grade {
    if b {
        Grade::Holds
    } else {
        Grade::DoesNotHold
    }
}

/// `k` of `n` cases true, as parts.
pub fn cases(k: usize, n: usize) -> Vec<Grade> {
    (0..n).map(|i| yes(i < k)).collect()
}

/// A choice graded: ours (a label) against the paper's.
pub fn grade_choice_of(expected: &str, ours: &str) -> Grade {
    vsim::verdict::grade_choice(
        &Claim::Choice {
            expected: expected.into(),
        },
        Some(ours),
    )
}

/// A claim made of parts (each already graded), with the rule for combining them.
pub fn combined(
    claim_text: &str,
    where_: &str,
    parts: &[Grade],
    q: Quantifier,
    per_part: &str,
    evidence: String,
) -> Value {
    let g = vsim::verdict::combine(parts, q);
    let crit = format!(
        "per part: {per_part}; over the parts: {}",
        combine_criterion(q)
    );
    verdict(claim_text, where_, g, &crit, evidence)
}

/// The summary's `meta`: the command line, vsim's version, the wall time.
pub fn meta(wall_s: f64) -> Value {
    json!({
        "command": std::env::args().collect::<Vec<_>>(),
        "versions": {"vsim": env!("CARGO_PKG_VERSION")},
        "wall_s": wall_s,
    })
}

/// The verdicts as a Markdown list (each with its criterion), and how many hold.
pub fn verdicts_md(verdicts: &[Value]) -> (String, usize) {
    let mut md = String::from("\n## Verdicts\n\n");
    for v in verdicts {
        md += &format!(
            "- **{}** ({}): {} — {} *(criterion: {})*\n",
            v["verdict"].as_str().unwrap_or(""),
            v["where"].as_str().unwrap_or(""),
            v["claim"].as_str().unwrap_or(""),
            v["evidence"].as_str().unwrap_or(""),
            v["criterion"].as_str().unwrap_or("")
        );
    }
    (
        md,
        verdicts.iter().filter(|v| v["verdict"] == "holds").count(),
    )
}

/// A table cell: its text, and its number where it has one (the report
/// checks the numbers it shows against the summary).
pub type Cell = (String, Option<f64>);

/// A text-only cell.
pub fn text(s: &str) -> Cell {
    (s.to_string(), None)
}

/// A number, shown as `shown`.
pub fn num(shown: String, value: f64) -> Cell {
    (shown, Some(value))
}

/// A table of the summary and its Markdown twin, built row by row.
pub struct Tab {
    header: Vec<String>,
    rows: Vec<Value>,
    md: Vec<Vec<String>>,
}

impl Tab {
    pub fn new(header: Vec<String>) -> Self {
        Tab {
            header,
            rows: Vec::new(),
            md: Vec::new(),
        }
    }

    pub fn push(&mut self, cells: Vec<Cell>) {
        self.md.push(cells.iter().map(|c| c.0.clone()).collect());
        self.rows.push(
            cells
                .into_iter()
                .map(|(t, v)| match v {
                    Some(v) => json!({"text": t, "value": v}),
                    None => json!(t),
                })
                .collect(),
        );
    }

    /// Add it to the summary's `tables` and, under `heading`, to `md`.
    pub fn finish(
        self,
        title: &str,
        note: &str,
        heading: &str,
        md: &mut String,
        tables: &mut Vec<Value>,
    ) {
        *md += &format!("\n## {heading}\n\n");
        *md += &md_table(&self.header, &self.md);
        tables
            .push(json!({"title": title, "header": self.header, "rows": self.rows, "note": note}));
    }
}

/// A Markdown table.
pub fn md_table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut s = format!("| {} |\n", header.join(" | "));
    s += &format!("|{}\n", "---|".repeat(header.len()));
    for r in rows {
        s += &format!("| {} |\n", r.join(" | "));
    }
    s
}

/// The median of `v` (the mean of the middle two for an even count; 0 for none).
pub fn median(v: &[f64]) -> f64 {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}
