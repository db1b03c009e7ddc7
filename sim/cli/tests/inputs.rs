//! Inputs the command line must refuse or handle, as a user met them (issue 38):
//! a size beyond memory, a FIFO as a file, an output path that cannot be
//! written, values silently accepted, messages.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vsim-inputs-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(d: &Path, name: &str, text: &str) -> PathBuf {
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn vsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vsim"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A failure that is an error message (exit status 1), not an abort.
fn error_of(o: &Output) -> String {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(1), "not an error exit: {e}");
    assert!(
        e.contains("vsim: error:") && !e.contains("backtrace"),
        "{e}"
    );
    e
}

/// `cheapflash:size=8t` under a 4 GB address-space limit: an error naming
/// the option and the memory, not an abort when the allocation fails.
#[test]
fn cheapflash_beyond_memory_is_an_error_naming_size() {
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 4000000 && exec {} device cheapflash:size=8t",
            env!("CARGO_BIN_EXE_vsim")
        ))
        .output()
        .unwrap();
    let e = error_of(&o);
    assert!(
        e.contains("option 'size': 8t (") && e.contains("needs 15.6 GiB of model state"),
        "{e}"
    );
    assert!(e.contains("GiB available"), "{e}");
}

/// A petabyte `fixed` device: the random map is sparse, so a short random
/// run takes little memory instead of a 32 GiB bitmap.
#[test]
fn petabyte_fixed_device_runs_a_random_job() {
    let d = dir("pb");
    let cfg = write(
        &d,
        "r.toml",
        "runtime = \"20ms\"\n[[job]]\nname = \"r\"\nrw = \"randread\"\nbs = \"4k\"\n",
    );
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 4000000 && exec {} run {} --device fixed:size=1p --quiet",
            env!("CARGO_BIN_EXE_vsim"),
            cfg.display()
        ))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

/// `vsim ARGS`, killed (and the test failed) if it has not ended within `secs`.
fn vsim_within(secs: u64, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vsim"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed().as_secs() >= secs {
            let _ = child.kill();
            let _ = child.wait();
            panic!("vsim {args:?}: no result within {secs} s (blocked)");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn mkfifo(p: &Path) {
    let st = Command::new("mkfifo").arg(p).status().unwrap();
    assert!(st.success());
}

/// A FIFO as the configuration or as a trace is refused at once, naming
/// the path, instead of blocking until something writes to it.
#[test]
fn fifo_as_config_or_trace_is_an_error_not_a_hang() {
    let d = dir("fifo");
    let fifo = d.join("pipe");
    mkfifo(&fifo);
    let f = fifo.to_str().unwrap();
    let e = error_of(&vsim_within(10, &["run", f, "--device", "fixed"]));
    assert!(e.contains(f) && e.contains("not a regular file"), "{e}");
    let cfg = write(
        &d,
        "t.toml",
        &format!("runtime = \"10ms\"\n[device]\nmodel = \"fixed\"\n[[trace]]\npath = \"{f}\"\n"),
    );
    let e = error_of(&vsim_within(10, &["run", cfg.to_str().unwrap()]));
    assert!(e.contains(f) && e.contains("not a regular file"), "{e}");
}

/// An output path that cannot be written fails before the simulation (no
/// table printed, no time spent), for each output option.
#[test]
fn unwritable_outputs_fail_before_the_simulation() {
    let d = dir("outputs");
    let cfg = write(
        &d,
        "r.toml",
        "runtime = \"50ms\"\n[device]\nmodel = \"fixed\"\n[[job]]\nname = \"r\"\nrw = \"randread\"\n",
    );
    // A directory where a file is expected, and a file where a directory is.
    let blocker = write(&d, "file", "");
    let bad_file = d.to_str().unwrap().to_string();
    let bad_dir = blocker.join("sub");
    let c = cfg.to_str().unwrap();
    for args in [
        vec!["run", c, "--json", &bad_file],
        vec!["run", c, "--csv", &bad_file],
        vec!["run", c, "--report", bad_dir.to_str().unwrap()],
    ] {
        let o = vsim(&args);
        let e = error_of(&o);
        assert!(
            o.stdout.is_empty(),
            "{args:?}: the simulation ran before the error: {}",
            String::from_utf8_lossy(&o.stdout)
        );
        assert!(e.contains(&bad_file), "{args:?}: {e}");
    }
}

/// `--runtime 0` and `bench --requests 0` are errors, not a run without a
/// limit or a bench of nothing.
#[test]
fn zero_runtime_and_zero_bench_requests_are_errors() {
    let d = dir("zero");
    let cfg = write(
        &d,
        "r.toml",
        "[device]\nmodel = \"fixed\"\n[[job]]\nname = \"r\"\nrw = \"randread\"\nnumber_ios = 10\n",
    );
    let c = cfg.to_str().unwrap();
    let e = error_of(&vsim(&["run", c, "--runtime", "0"]));
    assert!(e.contains("--runtime 0: give a positive time"), "{e}");
    let e = error_of(&vsim(&[
        "compare",
        "--workload",
        c,
        "--runtime",
        "0",
        "--schedulers",
        "noop",
    ]));
    assert!(e.contains("--runtime 0: give a positive time"), "{e}");
    let o = vsim(&["bench", "--requests", "0"]);
    assert!(!o.status.success(), "bench --requests 0 ran");
    assert!(stderr(&o).contains("--requests"), "{}", stderr(&o));
}

/// The top-level help and sim/README.md name every scheduler of the
/// registry (the help is generated from it; the README is checked here).
#[test]
fn help_and_readme_list_every_scheduler() {
    let help = String::from_utf8(vsim(&["--help"]).stdout).unwrap();
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .unwrap();
    let intro: String = readme.lines().take(6).collect::<Vec<_>>().join(" ");
    for (name, ..) in vsim::sched::REGISTRY {
        assert!(
            help.contains(&format!(" {name},"))
                || help.contains(&format!(" {name})"))
                || help.contains(&format!("({name},")),
            "--help lacks {name}: {help}"
        );
        assert!(
            intro.contains(name),
            "sim/README.md's introduction lacks {name}"
        );
    }
    for (name, ..) in vsim::device::REGISTRY {
        assert!(help.contains(name), "--help lacks device {name}");
    }
}
