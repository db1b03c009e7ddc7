//! Energy per operation, the one account every device keeps.
//!
//! A device's energy over a run is its baseline power over the whole run
//! (controller and DRAM on, platters spinning: `idle_w`) plus the dynamic
//! energy of each operation it performed (a page read, a program, an erase,
//! a page over the channel, a seek, a spin-up, ...), counted as it happens:
//! `E = idle_w × elapsed + Σ count_k × joules_k`, optionally with time spent in
//! a lower-power state (standby) at its own power instead of `idle_w`.
//! Two schedulers that make the device do different work (fewer seeks, fewer
//! GC copies) therefore get different energy, and IOPS per watt follows.
//!
//! A device declares its operations once ([`Meter::part`]) and counts them
//! ([`Meter::add`], O(1)); [`Meter::report`] gives the total and the split.

use crate::types::Ns;

/// Index of one kind of operation in a [`Meter`].
pub type PartId = usize;

#[derive(Clone, Debug)]
struct Part {
    name: &'static str,
    joules_each: f64,
    count: u64,
}

/// Per-operation energy counters of one device.
#[derive(Clone, Debug)]
pub struct Meter {
    idle_w: f64,
    /// Power in the low-power state, and time spent there (not idle).
    standby_w: f64,
    standby_ns: Ns,
    parts: Vec<Part>,
}

/// One operation kind's share of the energy.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PartEnergy {
    pub name: &'static str,
    pub count: u64,
    pub joules: f64,
}

/// A run's device energy: the total and where it went.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Energy {
    pub total_j: f64,
    /// Baseline (idle) power over the run, less the standby time.
    pub idle_j: f64,
    pub standby_j: f64,
    pub parts: Vec<PartEnergy>,
}

impl Meter {
    /// A meter with baseline power `idle_w` and no operations yet.
    pub fn new(idle_w: f64) -> Meter {
        Meter {
            idle_w,
            standby_w: idle_w,
            standby_ns: 0,
            parts: Vec::new(),
        }
    }

    /// Declare an operation costing `joules_each` on top of the baseline.
    pub fn part(&mut self, name: &'static str, joules_each: f64) -> PartId {
        self.parts.push(Part {
            name,
            joules_each,
            count: 0,
        });
        self.parts.len() - 1
    }

    /// `n` more operations of kind `id`.
    #[inline]
    pub fn add(&mut self, id: PartId, n: u64) {
        self.parts[id].count += n;
    }

    /// The power of the low-power state (standby, spun down).
    pub fn set_standby_w(&mut self, w: f64) {
        self.standby_w = w;
    }

    /// `ns` more spent in the low-power state instead of idle.
    pub fn add_standby(&mut self, ns: Ns) {
        self.standby_ns += ns;
    }

    /// Operations of kind `id` so far.
    pub fn count(&self, id: PartId) -> u64 {
        self.parts[id].count
    }

    /// Forget the counts (after preconditioning or warm-up).
    pub fn reset(&mut self) {
        for p in &mut self.parts {
            p.count = 0;
        }
        self.standby_ns = 0;
    }

    /// The energy of a run lasting `elapsed`.
    pub fn report(&self, elapsed: Ns) -> Energy {
        let standby = self.standby_ns.min(elapsed);
        let idle_j = self.idle_w * (elapsed - standby) as f64 / 1e9;
        let standby_j = self.standby_w * standby as f64 / 1e9;
        let parts: Vec<PartEnergy> = self
            .parts
            .iter()
            .map(|p| PartEnergy {
                name: p.name,
                count: p.count,
                joules: p.count as f64 * p.joules_each,
            })
            .collect();
        let total_j = idle_j + standby_j + parts.iter().map(|p| p.joules).sum::<f64>();
        Energy {
            total_j,
            idle_j,
            standby_j,
            parts,
        }
    }
}

/// Energy from a device power pair where no per-operation figures exist
/// (the `fixed` queueing device): `idle_w` all along, `active_w` while busy.
pub fn from_power(active_w: f64, idle_w: f64, elapsed: Ns, busy: Ns) -> Energy {
    let busy = busy.min(elapsed);
    let idle_j = idle_w * elapsed as f64 / 1e9;
    let active = PartEnergy {
        name: "busy_time",
        count: busy,
        joules: (active_w - idle_w).max(0.0) * busy as f64 / 1e9,
    };
    Energy {
        total_j: idle_j + active.joules,
        idle_j,
        standby_j: 0.0,
        parts: vec![active],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baseline_plus_operations() {
        let mut m = Meter::new(2.0);
        let rd = m.part("page_read", 1e-6);
        let pr = m.part("page_program", 1e-5);
        m.add(rd, 1000);
        m.add(pr, 10);
        let e = m.report(1_000_000_000);
        assert_eq!(e.idle_j, 2.0);
        assert!((e.total_j - (2.0 + 1e-3 + 1e-4)).abs() < 1e-12);
        assert_eq!(e.parts[0].count, 1000);
        m.reset();
        assert_eq!(m.report(0).total_j, 0.0);
    }

    #[test]
    fn standby_time_is_billed_at_standby_power() {
        let mut m = Meter::new(5.0);
        m.set_standby_w(1.0);
        m.add_standby(500_000_000);
        let e = m.report(1_000_000_000);
        assert_eq!((e.idle_j, e.standby_j), (2.5, 0.5));
        assert_eq!(e.total_j, 3.0);
    }

    #[test]
    fn from_power_matches_the_old_formula() {
        let e = from_power(3.0, 0.5, 2_000_000_000, 500_000_000);
        // active 0.5 s at 3 W + idle 1.5 s at 0.5 W
        assert!((e.total_j - (1.5 + 0.75)).abs() < 1e-12);
    }
}
