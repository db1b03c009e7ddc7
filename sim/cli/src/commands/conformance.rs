//! `vsim conformance`: the shared scenarios on the model (and a kernel's issue log).

use crate::*;

#[derive(Args)]
pub(crate) struct ConformanceArgs {
    /// Directory of scenarios.
    pub(crate) dir: PathBuf,
    /// Model the kernel's jiffies at this HZ (Debian: 250); 0 = exact nanoseconds.
    #[arg(long, default_value_t = 0)]
    pub(crate) hz: u64,
    /// Only scenarios whose file name contains this.
    #[arg(long)]
    pub(crate) only: Option<String>,
    /// Write every issue log as JSON here.
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
    /// Also check the kernel module's issue logs ({file: [{t_us, ids}]}, from `vlab conformance`).
    #[arg(long)]
    pub(crate) kernel_log: Option<PathBuf>,
    /// Name of the kernel for the report.
    #[arg(long, default_value = "kernel")]
    pub(crate) kernel_name: String,
    /// Timing tolerance (unscaled us) for the kernel's issued_by / not_before checks.
    #[arg(long, default_value_t = 500.0)]
    pub(crate) slack_us: f64,
}

pub(crate) fn cmd_conformance(a: ConformanceArgs) -> Result<()> {
    let ConformanceArgs {
        dir,
        hz,
        only,
        json,
        kernel_log,
        kernel_name,
        slack_us,
    } = a;
    let (dir, kernel_name) = (dir.as_path(), kernel_name.as_str());
    use vsim::conformance as c;
    let scenarios = c::load_dir(dir)?;
    if let Some(p) = &json {
        check_output(p).context("--json")?;
    }
    let kernel: Option<std::collections::BTreeMap<String, Vec<c::Issued>>> = match &kernel_log {
        Some(p) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            Some(
                serde_json::from_str(&text)
                    .with_context(|| format!("{}: not a kernel issue log", p.display()))?,
            )
        }
        None => None,
    };
    let (mut failed_model, mut failed_kernel, mut n) = (0, 0, 0);
    let mut logs = serde_json::Map::new();
    for s in &scenarios {
        let file = s
            .path
            .file_name()
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_default();
        if only.as_ref().is_some_and(|o| !file.contains(o.as_str())) {
            continue;
        }
        n += 1;
        let log = c::run_model(s, hz)
            .with_context(|| format!("{}: running the model", s.path.display()))?;
        let errs = c::check(s, &log, 0.0);
        let kerr = kernel.as_ref().map(|k| match k.get(&file) {
            Some(klog) => (c::check(s, klog, slack_us), klog.clone()),
            None => (vec![format!("no kernel log for {file}")], Vec::new()),
        });
        let verdict = |e: &Vec<String>| if e.is_empty() { "PASS" } else { "FAIL" };
        match &kerr {
            Some((ke, _)) => println!(
                "model {} {} {}  {:<44} {}",
                verdict(&errs),
                kernel_name,
                verdict(ke),
                file,
                s.rule
            ),
            None => println!("{:<4} {:<44} {}", verdict(&errs), file, s.rule),
        }
        if !errs.is_empty() {
            failed_model += 1;
            for e in &errs {
                println!("    model: {e}");
            }
        }
        if let Some((ke, _)) = &kerr {
            if !ke.is_empty() {
                failed_kernel += 1;
                for e in ke {
                    println!("    {kernel_name}: {e}");
                }
            }
        }
        let kfail = kerr.as_ref().is_some_and(|(ke, _)| !ke.is_empty());
        if !errs.is_empty() || kfail {
            let klog = kerr.as_ref().map(|(_, l)| l.as_slice());
            print!("{}", c::side_by_side(s, &log, klog, kernel_name));
        }
        logs.insert(file, serde_json::to_value(&log)?);
    }
    print!(
        "{n} scenarios: model (hz={hz}) {} passed, {failed_model} failed",
        n - failed_model
    );
    if kernel.is_some() {
        print!(
            "; {kernel_name} {} passed, {failed_kernel} failed (slack {slack_us} us)",
            n - failed_kernel
        );
    }
    println!();
    if let Some(p) = json {
        write(&p, &serde_json::to_string_pretty(&logs)?)?;
    }
    if failed_model + failed_kernel > 0 {
        bail!("{} scenario failure(s)", failed_model + failed_kernel);
    }
    Ok(())
}
