//! Trace readers (being written).

use super::Source;
use crate::params::Params;
use anyhow::Result;

pub fn open(_p: &Params, _device_sectors: u64, _seed: u64) -> Result<Box<dyn Source>> {
    anyhow::bail!("trace replay is not implemented yet")
}
