//! deadline (not written yet).

use super::{DeviceInfo, Scheduler};
use crate::params::Params;
use anyhow::Result;

pub fn new(_p: &Params, _dev: &DeviceInfo) -> Result<Box<dyn Scheduler>> {
    anyhow::bail!("scheduler deadline is not implemented yet")
}
