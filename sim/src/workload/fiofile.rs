//! fio job files (being written).

use crate::params::Params;
use anyhow::Result;
use std::path::Path;

pub struct FioFile {
    pub jobs: Vec<(String, Params)>,
    pub runtime_ns: Option<u64>,
    pub time_based: bool,
    pub ignored: Vec<String>,
}

pub fn parse_file(path: &Path) -> Result<FioFile> {
    anyhow::bail!("{}: fio job files are not supported yet", path.display())
}
