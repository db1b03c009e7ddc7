//! `vsim validate`: the models against closed forms and published figures.

use crate::*;

pub(crate) fn cmd_validate(
    quick: bool,
    group: Option<String>,
    json: bool,
    report_dir: Option<PathBuf>,
) -> Result<()> {
    if let Some(g) = &group {
        if !validate::GROUPS.iter().any(|x| x.0 == g) {
            let names: Vec<&str> = validate::GROUPS.iter().map(|x| x.0).collect();
            bail!(
                "unknown validation group '{g}' (known: {})",
                names.join(", ")
            );
        }
    }
    if let Some(d) = &report_dir {
        check_output_dir(d).context("--report")?;
    }
    let cases = validate::run_all(quick, group.as_deref());
    if json {
        println!("{}", serde_json::to_string_pretty(&cases)?);
    } else {
        println!(
            "{:<9} {:<64} {:>22} {:>22} {:>10}  verdict",
            "group", "case", "expected", "got", "tolerance"
        );
        for c in &cases {
            println!(
                "{:<9} {:<64} {:>22} {:>22} {:>10}  {}",
                c.group,
                c.name,
                c.expected,
                c.got,
                c.tolerance,
                if c.pass { "PASS" } else { "FAIL" }
            );
        }
    }
    let failed = cases.iter().filter(|c| !c.pass).count();
    println!(
        "{} cases, {} passed, {} failed",
        cases.len(),
        cases.len() - failed,
        failed
    );
    // The report is written whatever the verdict (failures are what it is
    // read for); the exit status says both.
    let rendered = match report_dir {
        Some(dir) => {
            write(
                &dir.join("validate.json"),
                &serde_json::to_string_pretty(&cases)?,
            )?;
            let mut summary = report::summary_header("vsim-validate");
            for (k, v) in [
                ("quick", json!(quick)),
                ("group", json!(group)),
                ("cases", json!(cases.len())),
                ("failed", json!(failed)),
                ("files", json!({"json": "validate.json"})),
            ] {
                summary.insert(k.into(), v);
            }
            write_summary(&dir, summary)?;
            render(&dir)
        }
        None => Ok(()),
    };
    if failed > 0 {
        if let Err(e) = rendered {
            eprintln!("vsim: error: {e:#}");
        }
        bail!("{failed} validation case(s) failed");
    }
    rendered
}
