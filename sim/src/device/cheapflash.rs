//! cheapflash (not written yet).

use super::Device;
use crate::params::Params;
use anyhow::Result;

pub fn new(_p: &Params, _seed: u64) -> Result<Box<dyn Device>> {
    anyhow::bail!("device model cheapflash is not implemented yet")
}
