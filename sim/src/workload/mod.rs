//! Workloads: sources of bios. A [`Source`] is one submitting process (a fio
//! job clone, or one PID of a trace); the engine polls it when it asked to be
//! woken and after each of its bios completes.

use crate::types::{BioSpec, Ns};
use anyhow::Result;

pub mod fiofile;
pub mod job;
pub mod mapreduce;
pub mod script;
pub mod tpcc;
pub mod trace;

/// What a source wants after a poll.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Poll again at this time (or at the next completion, whichever is first).
    At(Ns),
    /// Poll again only when one of its bios completes.
    Wait,
    /// No more bios will be submitted.
    Done,
}

pub trait Source: Send {
    fn name(&self) -> &str;
    /// Submit the bios due at `now` into `out`; say when to poll next.
    fn poll(&mut self, now: Ns, out: &mut Vec<BioSpec>) -> Result<Next>;
    /// A bio of this source completed.
    fn complete(&mut self, spec: &BioSpec, now: Ns);
    /// Whether one task submits all its bios (a fio job): while one of them
    /// waits for a request the task is asleep in `blk_mq_get_tag` and
    /// submits nothing else. False for a source of many processes (a trace).
    fn one_task(&self) -> bool {
        false
    }
    /// The completions its task reaps at once, (at least, at most), once it
    /// reaps (fio's `iodepth_batch_complete_min` and `_max`): every one ready
    /// unless the source says otherwise.
    fn reap_batch(&self) -> (u32, u32) {
        (1, u32::MAX)
    }
    /// How far the source is, as (done, total), where it knows its total
    /// (a job's `number_ios` or `io_size`, a trace file's bytes): the
    /// progress display's percentage.
    fn progress(&self) -> Option<(u64, u64)> {
        None
    }
    /// Warnings about the input for the reader, one line each (a trace
    /// whose times go backwards), said after the run.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
    /// Counters about the input (e.g. bad trace lines skipped), as JSON.
    fn input_stats(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}
