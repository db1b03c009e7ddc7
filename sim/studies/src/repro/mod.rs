//! Reproductions of the seed papers' simulated experiments (`vsim repro
//! NAME`): each runs its matrix, prints the paper's figures beside ours with
//! a verdict per claim, and writes summary.json in the reproduction format
//! the HTML report reads (kind `vsim-repro`: title, paper, mapping,
//! verdicts, tables, rankings, cases, plan, meta).
//!
//! Adding one: a new file with `run(&Options) -> Result<Repro>` and its
//! estimated parameters ([`Estimate`]), and one line in [`REGISTRY`].
//!
//! **Sensitivity.** What a seed does not give and we estimated is declared
//! once per reproduction (`ESTIMATES`: its default and a plausible range);
//! `--set KEY=VALUE` runs with another value, and `--sensitivity` ([`sensitivity`])
//! runs every plausible value of each and reports which verdicts change.

use anyhow::{bail, Context, Result};
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
    /// Estimated parameters set to another value (`--set KEY=VALUE`).
    pub set: Vec<(String, f64)>,
}

/// A parameter the seed does not give, estimated: its key (`--set KEY=...`),
/// our value, the range we find plausible, and why.
#[derive(Clone, Copy, Debug)]
pub struct Estimate {
    pub key: &'static str,
    pub default: f64,
    pub plausible: &'static [f64],
    pub what: &'static str,
}

impl Options {
    /// The value of estimate `e` for this run: `--set`, else its default.
    pub fn estimate(&self, e: &Estimate) -> f64 {
        self.set
            .iter()
            .rev()
            .find(|(k, _)| k == e.key)
            .map_or(e.default, |(_, v)| *v)
    }
}

/// `--set` names only estimates of this reproduction, with finite values.
fn check_set(name: &str, o: &Options, estimates: &[Estimate]) -> Result<()> {
    for (k, v) in &o.set {
        if !estimates.iter().any(|e| e.key == k) {
            let known: Vec<&str> = estimates.iter().map(|e| e.key).collect();
            bail!(
                "--set {k}: '{name}' estimates no '{k}' (its estimates: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            );
        }
        if !(v.is_finite() && *v > 0.0) {
            bail!("--set {k}={v}: give a positive number");
        }
    }
    Ok(())
}

/// A reproduction's result: the summary (JSON) and its text (Markdown).
pub struct Repro {
    pub summary: Value,
    pub markdown: String,
}

pub type Runner = fn(&Options) -> Result<Repro>;

/// Name, what it reproduces, runner, estimated parameters.
pub const REGISTRY: &[(&str, &str, Runner, &[Estimate])] = &[
    (
        "bid",
        "bid-bulk-io-dispatch.txt: BID-HDD and BID-Hybrid against noop, deadline and CFQ on MapReduce-like traces (Figs. 12, 15-19)",
        bid::run,
        bid::ESTIMATES,
    ),
    (
        "hints",
        "kernel-mechanisms-hints-and-tracing.txt §2: a mapping-cache SSD (demand-loaded map) with and without host-supplied hints: flash time per request by constituent, chunk sizes, slower flash, faster bus, hint-cache size (Figs. 2.2-2.5)",
        hints::run,
        hints::ESTIMATES,
    ),
    (
        "qos",
        "qos-flash-hybrid-store.txt: RBFQ's fairness on a disk and a flash, the hybrid store offline and online, synthetic and TPC-C-like streams (Tables 1-3, 5-9; Figures 10-11)",
        qos::run,
        qos::ESTIMATES,
    ),
];

pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|r| r.0).collect()
}

fn entry(name: &str) -> Result<&'static (&'static str, &'static str, Runner, &'static [Estimate])> {
    match REGISTRY.iter().find(|r| r.0 == name) {
        Some(r) => Ok(r),
        None => bail!(
            "unknown reproduction '{name}' (known: {})",
            names().join(", ")
        ),
    }
}

/// One run at the estimates' defaults (or `--set`), its verdicts graded there
/// only, which the report says: [`sensitivity`] grades them over the estimates.
pub fn run(name: &str, o: &Options) -> Result<Repro> {
    let mut out = run_at(name, o)?;
    out.summary["graded_over_estimates"] = json!(false);
    out.markdown = format!(
        "Graded at these settings only (a quick check, or --set): a grade an estimated \
         parameter would change is not marked here; a full run grades over them.\n\n{}",
        out.markdown
    );
    Ok(out)
}

fn run_at(name: &str, o: &Options) -> Result<Repro> {
    let r = entry(name)?;
    check_set(name, o, r.3)?;
    let mut out = (r.2)(o)?;
    if !o.set.is_empty() {
        let set: Vec<String> = o.set.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out.summary["estimates_set"] = json!(set);
        out.markdown = format!("Estimates set: {}.\n\n{}", set.join(", "), out.markdown);
    }
    Ok(out)
}

/// The verdicts of a summary by (claim, where).
fn grades(s: &Value) -> Vec<((String, String), String)> {
    s["verdicts"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .map(|v| {
            let f = |k: &str| v[k].as_str().unwrap_or("").to_string();
            ((f("claim"), f("where")), f("verdict"))
        })
        .collect()
}

/// The reproduction at its defaults, then at each plausible value of each
/// estimate (one at a time, the rest at their defaults): the default run's
/// summary and report with a table of the verdicts each value changes
/// (`sensitivity` in the summary), and every verdict **graded over the
/// estimates**: a verdict keeps its grade only where every plausible value of
/// every estimate gives the same; one that an estimate changes rests on a
/// setting the seed does not give, and is *not judged*, its evidence naming
/// the estimate and the grades it gives (`graded_at_defaults` keeps the
/// default run's grade).
pub fn sensitivity(name: &str, o: &Options) -> Result<Repro> {
    let r = entry(name)?;
    if !o.set.is_empty() {
        bail!("--sensitivity varies the estimates itself: leave out --set");
    }
    let base = run_at(name, o)?;
    let before = grades(&base.summary);
    let mut tab = Tab::new(
        [
            "estimate",
            "value",
            "verdicts changed",
            "which (default -> this value)",
        ]
        .map(String::from)
        .to_vec(),
    );
    let mut rows = Vec::new();
    // Per default verdict: the (grade, estimate=value) that differ from it.
    let mut moved: Vec<Vec<(String, String)>> = vec![Vec::new(); before.len()];
    for e in r.3 {
        for &v in e.plausible.iter().filter(|&&v| v != e.default) {
            let mut o2 = o.clone();
            o2.set = vec![(e.key.to_string(), v)];
            let other = run_at(name, &o2).with_context(|| format!("--set {}={v}", e.key))?;
            let after = grades(&other.summary);
            let changed: Vec<String> = before
                .iter()
                .zip(&after)
                .filter(|(a, b)| a.0 == b.0 && a.1 != b.1)
                .map(|(a, b)| format!("{} ({}): {} -> {}", a.0 .0, a.0 .1, a.1, b.1))
                .collect();
            let shape =
                before.len() != after.len() || before.iter().zip(&after).any(|(a, b)| a.0 != b.0);
            if shape {
                bail!(
                    "--set {}={v}: the verdicts differ in number or order from the default run's, \
                     so they cannot be graded over the estimates",
                    e.key
                );
            }
            for (i, (a, b)) in before.iter().zip(&after).enumerate() {
                if a.1 != b.1 {
                    moved[i].push((b.1.clone(), format!("{}={v}", e.key)));
                }
            }
            tab.push(vec![
                text(&format!("{} (default {})", e.key, e.default)),
                num(format!("{v}"), v),
                num(changed.len().to_string(), changed.len() as f64),
                text(&if changed.is_empty() {
                    "-".to_string()
                } else {
                    changed.join("; ")
                }),
            ]);
            rows.push(json!({"key": e.key, "default": e.default, "value": v, "changed": changed}));
        }
    }
    let mut out = base;
    let mut md = String::new();
    let mut tables = Vec::new();
    let what: Vec<String> =
        r.3.iter()
            .map(|e| {
                format!(
                    "- `{}` = {} (plausible {:?}): {}",
                    e.key, e.default, e.plausible, e.what
                )
            })
            .collect();
    tab.finish(
        "Sensitivity: the verdicts each plausible value of an estimated parameter changes",
        "One estimate at a time, the others at their defaults; the verdicts against the default run's.",
        "Sensitivity to the estimated parameters",
        &mut md,
        &mut tables,
    );
    md = format!("{md}\nThe estimates:\n\n{}\n", what.join("\n"));
    out.markdown += &md;
    if let Some(t) = out.summary["tables"].as_array_mut() {
        t.extend(tables);
    }
    out.summary["sensitivity"] = json!(rows);
    let old_list = verdicts_md(
        out.summary["verdicts"]
            .as_array()
            .map_or(&[], Vec::as_slice),
    )
    .0;
    grade_over_estimates(&mut out.summary, &moved);
    let verdicts = out.summary["verdicts"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let new_list = verdicts_md(verdicts).0;
    let card = scorecard(verdicts);
    out.markdown = out.markdown.replacen(&old_list, &new_list, 1);
    out.markdown = format!(
        "Graded over the estimates: {GRADED_OVER_ESTIMATES}.\n\nScorecard: {card}.\n\n{}",
        out.markdown
    );
    out.summary["graded_over_estimates"] = json!(true);
    Ok(out)
}

/// Grade a summary's verdicts over the estimates: `moved[i]` lists the
/// (grade, setting) pairs ("does not hold", "burst=4") at which verdict `i`
/// got another grade than the default run's. Where the grades differ only by
/// some being inconclusive (the noise, not the setting, leaves the interval
/// astride), the verdict is inconclusive; where two settings give different
/// grades otherwise, it rests on the setting and is not judged. Its evidence
/// and criterion say which and why; `graded_at_defaults` keeps its grade.
fn grade_over_estimates(summary: &mut Value, moved: &[Vec<(String, String)>]) {
    let Some(vs) = summary["verdicts"].as_array_mut() else {
        return;
    };
    for (v, m) in vs.iter_mut().zip(moved) {
        if m.is_empty() {
            continue;
        }
        let at_defaults = v["verdict"].as_str().unwrap_or("").to_string();
        let mut decided: Vec<&str> = std::iter::once(at_defaults.as_str())
            .chain(m.iter().map(|(g, _)| g.as_str()))
            .filter(|g| *g != Grade::Inconclusive.as_str())
            .collect();
        decided.sort_unstable();
        decided.dedup();
        let (grade, why) = if decided.len() <= 1 {
            (
                Grade::Inconclusive,
                "inconclusive over the estimates: at some plausible value the interval is astride",
            )
        } else {
            (
                Grade::NotJudged,
                "not judged: the grade rests on estimated parameters the seed does not give",
            )
        };
        let settings: Vec<String> = m.iter().map(|(g, k)| format!("{g} at {k}")).collect();
        v["graded_at_defaults"] = json!(at_defaults);
        v["verdict"] = json!(grade.as_str());
        v["evidence"] = json!(format!(
            "{}; {why} ({at_defaults} at the defaults, {})",
            v["evidence"].as_str().unwrap_or(""),
            settings.join(", ")
        ));
        v["criterion"] = json!(format!(
            "{}; {GRADED_OVER_ESTIMATES}",
            v["criterion"].as_str().unwrap_or("")
        ));
    }
}

/// How `sensitivity` grades a verdict over the estimates, in words.
pub const GRADED_OVER_ESTIMATES: &str = "a grade stands only where every plausible value of \
    every estimated parameter gives the same; where they differ only by being inconclusive at \
    some, inconclusive; where they give other grades, not judged (it rests on the estimate)";

/// A reproduction's verdicts counted by grade, in the rule's words.
pub fn scorecard(verdicts: &[Value]) -> String {
    let parts: Vec<String> = Grade::ALL
        .iter()
        .map(|g| {
            let n = verdicts
                .iter()
                .filter(|v| v["verdict"] == g.as_str())
                .count();
            format!("{n} {g}")
        })
        .collect();
    format!("{} verdicts: {}", verdicts.len(), parts.join(", "))
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

/// What "ours" is in the simulator's verdicts: the mean over the generated
/// traces with its 95 % Student t interval (the rule's one kind), or a
/// deterministic run's value.
pub fn noise_words(seeds: u32) -> String {
    if seeds > 1 {
        format!(
            "ours: the mean over {seeds} generated traces with its 95 % t interval (a grade its \
             BCa or percentile bootstrap interval would change is inconclusive)"
        )
    } else {
        "ours: one generated trace, no interval (inconclusive unless deterministic)".into()
    }
}

/// Generated traces per workload in a full run: the rule's intervals need at
/// least this many independent seeds (issue 80: ≥ 10).
pub const FULL_SEEDS: u32 = 10;

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
    let evidence = if vsim::verdict::method_agrees(claim, ours.as_ref()) {
        evidence
    } else {
        format!("{evidence}; inconclusive: the t and the bootstrap intervals grade it differently")
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_an_estimate_changes_is_not_judged_and_says_why() {
        let v = |g: Grade| verdict("c", "w", g, "crit", "ev".into());
        let mut s = json!({"verdicts": [v(Grade::DoesNotHold), v(Grade::Holds), v(Grade::Partly)]});
        // Verdict 1: other grades at two settings; verdict 2: inconclusive at one.
        let at = |g: &str, k: &str| (g.to_string(), k.to_string());
        let moved = vec![
            Vec::new(),
            vec![at("partly", "burst=4"), at("does not hold", "load=2")],
            vec![at("inconclusive", "maps=72")],
        ];
        grade_over_estimates(&mut s, &moved);
        let vs = s["verdicts"].as_array().unwrap();
        assert_eq!(vs[0]["verdict"], "does not hold");
        assert!(vs[0].get("graded_at_defaults").is_none());
        assert_eq!(vs[1]["verdict"], "not judged");
        assert_eq!(vs[1]["graded_at_defaults"], "holds");
        let ev = vs[1]["evidence"].as_str().unwrap();
        assert!(ev.contains("rests on estimated parameters"), "{ev}");
        assert!(
            ev.contains("holds at the defaults, partly at burst=4, does not hold at load=2"),
            "{ev}"
        );
        assert!(vs[1]["criterion"]
            .as_str()
            .unwrap()
            .ends_with(GRADED_OVER_ESTIMATES));
        // Another grade only where the interval is astride: inconclusive, not
        // a grade that rests on the setting.
        assert_eq!(vs[2]["verdict"], "inconclusive");
        assert_eq!(vs[2]["graded_at_defaults"], "partly");
        let ev = vs[2]["evidence"].as_str().unwrap();
        assert!(ev.contains("inconclusive over the estimates"), "{ev}");
        assert!(
            ev.contains("partly at the defaults, inconclusive at maps=72"),
            "{ev}"
        );
        assert_eq!(
            scorecard(vs),
            "3 verdicts: 0 holds, 0 partly, 1 does not hold, 1 inconclusive, \
             0 not reproducible from the description, 1 not judged"
        );
    }
}
