//! The `vsim` command line, one module per subcommand (the binary's; the libraries are
//! the core, `vsim::*`, and the studies, `vsim_studies::*`). main.rs declares the commands
//! and dispatches to these.

mod compare;
mod conformance;
mod list;
mod output;
mod repro;
mod run;
mod validate;

pub(crate) use compare::*;
pub(crate) use conformance::*;
pub(crate) use list::*;
pub(crate) use output::*;
pub(crate) use repro::*;
pub(crate) use run::*;
pub(crate) use validate::*;
