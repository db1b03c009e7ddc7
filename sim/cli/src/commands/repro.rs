//! `vsim repro` and `vsim gen`: the seeds' simulated experiments and their workload generators.

use crate::*;

#[derive(Args)]
pub(crate) struct ReproArgs {
    /// Which (vsim list): bid.
    pub(crate) name: String,
    /// Smaller traces, one seed (a check that it all runs).
    #[arg(long)]
    pub(crate) quick: bool,
    /// Generated traces per workload (default 10, the rule's minimum for its
    /// t intervals; --quick: 1).
    #[arg(long)]
    pub(crate) seeds: Option<u32>,
    /// Only these workloads, comma-separated.
    #[arg(long)]
    pub(crate) workloads: Option<String>,
    /// Multiply the generated traces' sizes (default 1; --quick: 0.25).
    #[arg(long)]
    pub(crate) scale: Option<f64>,
    /// Multiply the generated traces' arrival rates (offered load; default 1): `--set load=X`.
    #[arg(long)]
    pub(crate) load: Option<f64>,
    /// Run with an estimated parameter at another value (KEY=VALUE; repeatable;
    /// the reproduction's estimates are in its report and docs/notebooks/reproductions.md).
    #[arg(long, value_name = "KEY=VALUE")]
    pub(crate) set: Vec<String>,
    /// Run every plausible value of each estimated parameter too, report which
    /// verdicts each changes, and grade every verdict over them (one an
    /// estimate changes is not judged). A full run without --set does this
    /// always; the flag asks for it with --quick too.
    #[arg(long)]
    pub(crate) sensitivity: bool,
    /// Write summary.json and report.md here, then DIR/report.html (default build/repro/NAME).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// With the data files, no HTML report.
    #[arg(long)]
    pub(crate) no_report: bool,
}

pub(crate) fn cmd_repro(a: ReproArgs) -> Result<()> {
    let ReproArgs {
        name,
        quick,
        seeds,
        workloads,
        scale,
        load,
        set,
        sensitivity,
        out,
        no_report,
    } = a;
    let name = name.as_str();
    for (k, v) in [("--scale", scale), ("--load", load)] {
        if let Some(s) = v {
            if !(s.is_finite() && s > 0.0 && s <= 1000.0) {
                bail!("{k} {s}: give a number in (0, 1000]");
            }
        }
    }
    if seeds == Some(0) {
        bail!("--seeds 0: give at least 1");
    }
    let mut set = set
        .iter()
        .map(|kv| {
            let (k, v) = kv
                .split_once('=')
                .with_context(|| format!("--set {kv}: give KEY=VALUE"))?;
            let v: f64 = v
                .trim()
                .parse()
                .with_context(|| format!("--set {kv}: {v} is not a number"))?;
            Ok((k.trim().to_string(), v))
        })
        .collect::<Result<Vec<_>>>()?;
    if let Some(l) = load {
        set.push(("load".to_string(), l));
    }
    let opts = vsim_studies::repro::Options {
        quick,
        seeds: seeds.unwrap_or(0),
        workloads: workloads
            .map(|w| {
                w.split(',')
                    .map(|x| x.trim().to_string())
                    .filter(|x| !x.is_empty())
                    .collect()
            })
            .unwrap_or_default(),
        scale: scale.unwrap_or(0.0),
        set,
    };
    let dir = out.unwrap_or_else(|| PathBuf::from("build/repro").join(name));
    check_output_dir(&dir).context("--out")?;
    // Verdicts are graded over the estimates unless the run is a quick check
    // or explores one setting (--set, --load): those say they are not.
    let r = if sensitivity || (!quick && opts.set.is_empty()) {
        vsim_studies::repro::sensitivity(name, &opts)?
    } else {
        vsim_studies::repro::run(name, &opts)?
    };
    print!("{}", r.markdown);
    write(&dir.join("report.md"), &r.markdown)?;
    let serde_json::Value::Object(m) = r.summary else {
        bail!("reproduction '{name}' returned no summary object");
    };
    write_summary(&dir, m)?;
    if !no_report {
        render(&dir)?;
    }
    Ok(())
}

pub(crate) fn cmd_gen(spec: &str, out: Option<PathBuf>) -> Result<()> {
    use vsim::workload::{mapreduce, tpcc};
    let c = Component::parse(spec)?;
    if let Some(p) = &out {
        check_output(p).context("--out")?;
    }
    let text = match c.name.as_str() {
        "mapreduce" => {
            let s = mapreduce::Spec::from_params(&c.params, u64::MAX, 1)?;
            let recs = mapreduce::generate(&s)?;
            eprintln!("{}: {}", s.workload, mapreduce::summary(&recs));
            mapreduce::blkparse_text(&recs)
        }
        "tpcc" => {
            let s = tpcc::Spec::from_params(&c.params, 1)?;
            let recs = tpcc::generate(&s);
            eprintln!("tpcc: {}", tpcc::summary(&recs));
            tpcc::spc_text(&recs, None)
        }
        other => bail!("unknown generator '{other}' (known: mapreduce, tpcc)"),
    };
    match out {
        Some(p) => write(&p, &text),
        None => {
            use std::io::Write;
            std::io::stdout()
                .write_all(text.as_bytes())
                .context("writing the trace to stdout")
        }
    }
}
