//! The command line's integration tests, which run the `vsim` binary: each file of tests/ is
//! a module of this one test binary (Cargo.toml: autotests = false). A new file of tests is
//! one more line here. `cargo test -p vsim-cli --test suite list::` runs one file's tests.

mod fio_json;
mod host_cpu;
mod hybrid;
mod inputs;
mod list;
mod progress;
mod qos;
mod report;
mod semantics;
