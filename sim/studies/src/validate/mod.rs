//! Reference cases: the simulator's models against closed forms, published
//! parameters and the papers' worked examples. `vsim validate` prints them;
//! `cargo test` asserts them.
//!
//! Adding a case: a function returning `Vec<Case>` in a file here, and one
//! line in [`GROUPS`].

pub mod block;
pub mod cheapflash;
pub mod dftl;
pub mod fio;
pub mod hdd;
pub mod kyber;
pub mod queueing;
pub mod ssd;
pub mod table1;
pub mod wa;

/// One comparison: expected vs got within a tolerance.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Case {
    pub group: &'static str,
    pub name: String,
    /// Expected value, as text (a number, or an order for exact cases).
    pub expected: String,
    pub got: String,
    /// Tolerance, as text ("1%", "exact", "< expected").
    pub tolerance: String,
    pub pass: bool,
}

impl Case {
    /// Numeric case passing when |got - expected| <= rel * |expected|.
    pub fn rel(
        group: &'static str,
        name: impl Into<String>,
        expected: f64,
        got: f64,
        rel: f64,
    ) -> Case {
        Case {
            group,
            name: name.into(),
            expected: format!("{expected:.4}"),
            got: format!("{got:.4}"),
            tolerance: if rel * 100.0 >= 0.01 {
                format!("{}%", (rel * 1e4).round() / 100.0)
            } else {
                format!("{:.0e}", rel)
            },
            pass: (got - expected).abs() <= rel * expected.abs(),
        }
    }

    /// Exact textual case (e.g. a dispatch order).
    pub fn exact(
        group: &'static str,
        name: impl Into<String>,
        expected: String,
        got: String,
    ) -> Case {
        let pass = expected == got;
        Case {
            group,
            name: name.into(),
            expected,
            got,
            tolerance: "exact".into(),
            pass,
        }
    }

    /// A free-form check with its own verdict.
    pub fn check(
        group: &'static str,
        name: impl Into<String>,
        expected: String,
        got: String,
        tolerance: &str,
        pass: bool,
    ) -> Case {
        Case {
            group,
            name: name.into(),
            expected,
            got,
            tolerance: tolerance.into(),
            pass,
        }
    }
}

/// Group name, what it checks, the function producing its cases (`quick`
/// trades precision for time where the case allows it).
pub type Group = (&'static str, &'static str, fn(bool) -> Vec<Case>);

pub const GROUPS: &[Group] = &[
    (
        "wa",
        "write amplification vs over-provisioning (FIFO: Lambert-W closed form; greedy below it)",
        wa::cases,
    ),
    (
        "ssd",
        "SSD write buffer and host link: burst at link speed, sustained writes at program bandwidth, reads capped by the link",
        ssd::cases,
    ),
    (
        "dftl",
        "demand-loaded map (DFTL): hit ratio C/L and 1 - C/L translation reads on uniform random; dirty write-backs vs FlashSim's DFTL",
        dftl::cases,
    ),
    (
        "queueing",
        "single-server mean response time vs M/M/1 and M/D/1",
        queueing::cases,
    ),
    (
        "hdd",
        "HDD preset seek curve vs its published parameters; mean random seek",
        hdd::cases,
    ),
    (
        "cheapflash",
        "cheap-flash presets: 4 KiB random IOPS vs the SD A1/A2 class minimums; the 2008 card's merge cost",
        cheapflash::cases,
    ),
    (
        "fio",
        "fio semantics on a fixed-latency device: sync engines at depth 1, ramp_time left out",
        fio::cases,
    ),
    (
        "table1",
        "bid-bulk-io-dispatch.txt Table 1: Noop, Deadline and CFQ dispatch orders",
        table1::cases,
    ),
    (
        "block",
        "block layer: bio split counts at max_sectors_kb; every submitted bio completes",
        block::cases,
    ),
    (
        "kyber",
        "kyber on a fixed device: noop's IOPS under its targets; write throttling to the read target; async tags",
        kyber::cases,
    ),
];

pub fn run_all(quick: bool, only: Option<&str>) -> Vec<Case> {
    GROUPS
        .iter()
        .filter(|g| only.is_none_or(|o| o == g.0))
        .flat_map(|g| (g.2)(quick))
        .collect()
}
