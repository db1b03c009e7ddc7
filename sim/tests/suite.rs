//! The simulator's integration tests: each file of tests/ is a module of this one test
//! binary (Cargo.toml: autotests = false), so `cargo test` links one binary, not one per
//! file. A new file of tests is one more line here. `cargo test --test suite engine::` runs
//! one file's tests.

mod conformance;
mod conserve;
mod engine;
mod events;
mod examples;
mod hostile;
mod inputs;
mod layers;
mod props;
mod tables;
mod trace;
mod trace_db;
mod veloces;
