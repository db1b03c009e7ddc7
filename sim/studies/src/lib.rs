//! The simulator's studies, on the core library (`vsim`): the seeds' reproductions
//! ([`repro`]: bid, qos, hints), the models' validation against closed forms and published
//! figures ([`validate`]), and the benchmarks ([`bench`]). They may use the core; the core
//! never uses them (sim/tests/layers.rs).

pub mod bench;
pub mod repro;
pub mod validate;
