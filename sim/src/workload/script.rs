//! A scripted source: bios at given times, open loop. Used by conformance
//! scenarios, tests and worked examples, where every arrival is spelled out.

use super::{Next, Source};
use crate::types::{BioSpec, Ns};
use anyhow::Result;

pub struct Script {
    name: String,
    items: Vec<(Ns, BioSpec)>,
    pos: usize,
}

impl Script {
    /// `items` are (arrival time, bio); they are sorted by time (stable).
    pub fn new(name: &str, mut items: Vec<(Ns, BioSpec)>) -> Self {
        items.sort_by_key(|(t, _)| *t);
        Script {
            name: name.to_string(),
            items,
            pos: 0,
        }
    }
}

impl Source for Script {
    fn name(&self) -> &str {
        &self.name
    }
    fn poll(&mut self, now: Ns, out: &mut Vec<BioSpec>) -> Result<Next> {
        while let Some((t, b)) = self.items.get(self.pos) {
            if *t > now {
                return Ok(Next::At(*t));
            }
            out.push(*b);
            self.pos += 1;
        }
        Ok(Next::Done)
    }
    fn complete(&mut self, _spec: &BioSpec, _now: Ns) {}
}
