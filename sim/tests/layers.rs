//! The library's layers, read from its source: device models and schedulers are peers
//! that meet only in `types` (a request, a device's `DeviceInfo`) and the engine above
//! them; neither imports the other, and `types` imports neither. Test code is exempt.

use std::path::{Path, PathBuf};

fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(sources(&p));
        } else if p.extension().is_some_and(|x| x == "rs")
            && p.file_name().is_some_and(|n| n != "tests.rs")
        {
            out.push(p);
        }
    }
    out
}

/// The lines of `path` before its `#[cfg(test)]` module that name `crate::<module>`.
fn uses(path: &Path, module: &str) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let needle = format!("crate::{module}");
    code.lines()
        .filter(|l| l.contains(&needle) && !l.trim_start().starts_with("//"))
        .map(|l| format!("{}: {}", path.display(), l.trim()))
        .collect()
}

fn src(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(sub)
}

#[test]
fn devices_and_schedulers_do_not_import_each_other() {
    let up: Vec<String> = sources(&src("device"))
        .iter()
        .flat_map(|p| uses(p, "sched"))
        .chain(
            sources(&src("sched"))
                .iter()
                .flat_map(|p| uses(p, "device")),
        )
        .collect();
    assert!(up.is_empty(), "{up:#?}");
}

#[test]
fn types_import_no_layer_above() {
    let p = src("types.rs");
    for m in ["sched", "device", "engine", "stage", "workload"] {
        assert!(uses(&p, m).is_empty(), "{:?}", uses(&p, m));
    }
}

/// The crates' arrows point to the core only: nothing in the core (tests included) names
/// the studies (`vsim_studies`) or the command line's modules, and its manifest depends on
/// neither.
#[test]
fn the_core_uses_neither_the_studies_nor_the_cli() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut named = Vec::new();
    for dir in ["src", "tests"] {
        // This file names them as the needles it looks for.
        for p in sources(&root.join(dir))
            .into_iter()
            .filter(|p| !p.ends_with("layers.rs"))
        {
            let text = std::fs::read_to_string(&p).unwrap();
            for l in text.lines() {
                let code = l.trim_start();
                if !code.starts_with("//")
                    && (code.contains("vsim_studies") || code.contains("vsim_cli"))
                {
                    named.push(format!("{}: {}", p.display(), code));
                }
            }
        }
    }
    assert!(named.is_empty(), "{named:#?}");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let deps = manifest
        .split("\n[dependencies]\n")
        .nth(1)
        .and_then(|d| d.split("\n[").next())
        .unwrap_or("");
    assert!(
        deps.contains("anyhow"),
        "no [dependencies] table read: {deps}"
    );
    for other in ["vsim-studies", "vsim-cli"] {
        assert!(!deps.contains(other), "the core depends on {other}");
    }
    for gone in ["repro", "validate", "bench"] {
        assert!(
            !root.join("src").join(gone).exists() && !root.join(format!("src/{gone}.rs")).exists(),
            "{gone} is a study: it lives in sim/studies"
        );
    }
}
