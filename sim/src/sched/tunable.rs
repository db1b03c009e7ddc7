//! Scheduler tunables, declared once per scheduler (`const TUNABLES:
//! &[Tunable]`): the one declaration both parses the options (defaults,
//! ranges, errors naming the tunable) and lists the values in effect (sysfs
//! `queue/iosched/`, the JSON's `vsim.tunables`), and `vsim list` can show it
//! through [`super::tunables`].
//!
//! Every tunable is a non-negative integer in the kernel's sysfs units (the
//! unit is in its help line); one with the range 0..=1 is a switch and also
//! takes true/false, yes/no, on/off.

use crate::params::Params;
use anyhow::Result;

/// One tunable: sysfs name, default, inclusive valid range, one-line help.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tunable {
    pub name: &'static str,
    pub default: u64,
    pub min: u64,
    pub max: u64,
    pub help: &'static str,
}

/// The units a help line may start with (`"ms: a read's FIFO deadline"`).
pub const UNITS: &[&str] = &["ms", "us", "ns", "KiB", "sectors"];

impl Tunable {
    /// A 0/1 switch.
    pub fn is_switch(&self) -> bool {
        self.min == 0 && self.max == 1
    }
    /// Its unit, from the start of its help line (one of [`UNITS`]), or "".
    pub fn unit(&self) -> &'static str {
        match self.help.split_once(": ") {
            Some((u, _)) if UNITS.contains(&u) => u,
            _ => "",
        }
    }
}

/// The values in effect for one scheduler instance, in declaration order.
#[derive(Clone, Debug)]
pub struct TunableValues {
    decl: &'static [Tunable],
    vals: Vec<u64>,
}

/// Parse every tunable of `decl` from `p` (absent ones take their default,
/// or the value in `defaults` where the default depends on the device). A
/// value that is not a number, or is out of range, is an error naming the
/// tunable. Names `p` holds that `decl` does not declare are left unread, so
/// [`Params::check_all_used`] (in [`super::make`]) rejects them.
pub fn parse(
    decl: &'static [Tunable],
    p: &Params,
    defaults: &[(&str, u64)],
) -> Result<TunableValues> {
    let mut vals = Vec::with_capacity(decl.len());
    for t in decl {
        let default = defaults
            .iter()
            .find(|(n, _)| *n == t.name)
            .map_or(t.default, |&(_, v)| v)
            // A default that follows the device stays in the range a write
            // accepts, as the module clamps it (vel_init_sched: write_depth
            // on a device of more tags than its maximum).
            .clamp(t.min, t.max);
        let v = if t.is_switch() {
            p.bool_or(t.name, default == 1)? as u64
        } else {
            p.u64_in(t.name, default, t.min, t.max)?
        };
        vals.push(v);
    }
    Ok(TunableValues { decl, vals })
}

impl TunableValues {
    /// The value of tunable `name`. Asking for a name the scheduler did not
    /// declare is a bug in that scheduler (every constructor runs in the tests).
    pub fn get(&self, name: &str) -> u64 {
        match self.decl.iter().position(|t| t.name == name) {
            Some(i) => self.vals[i],
            None => panic!("tunable '{name}' is not declared"),
        }
    }
    /// A switch's value.
    pub fn flag(&self, name: &str) -> bool {
        self.get(name) != 0
    }
    /// (name, value) in declaration order, as sysfs shows them.
    pub fn report(&self) -> Vec<(&'static str, String)> {
        self.decl
            .iter()
            .zip(&self.vals)
            .map(|(t, v)| (t.name, v.to_string()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{make, tunables, REGISTRY};
    use super::*;
    use crate::types::DeviceInfo;

    fn dev() -> DeviceInfo {
        DeviceInfo::flash(1 << 30, 32)
    }

    fn report(name: &str, kv: &str) -> Result<Vec<(&'static str, String)>> {
        let p = Params::parse_kv(kv)?;
        Ok(make(name, &p, &dev())?.tunables())
    }

    #[test]
    fn every_declared_tunable_round_trips_through_parse_and_report() {
        for &(name, ..) in REGISTRY {
            let decl = tunables(name).unwrap();
            assert!(!decl.is_empty(), "{name} declares no tunables");
            // veloces's write_depth follows the device's depth (32 here): its
            // declared default, 65536, is what "no limit" means without one.
            let follows_device = |t: &Tunable| name == "veloces" && t.name == "write_depth";
            let defaults: Vec<(&str, String)> = decl
                .iter()
                .map(|t| {
                    let v = if follows_device(t) { 32 } else { t.default };
                    (t.name, v.to_string())
                })
                .collect();
            assert_eq!(report(name, "").unwrap(), defaults, "{name} defaults");
            for t in decl {
                assert!(
                    t.min <= t.default && t.default <= t.max,
                    "{name}.{}",
                    t.name
                );
                assert!(!t.help.is_empty(), "{name}.{} has no help", t.name);
                let mid = t.min + (t.max - t.min) / 3;
                for v in [t.min, t.max, mid, t.default] {
                    let got = report(name, &format!("{}={v}", t.name)).unwrap();
                    let mut want = defaults.clone();
                    want.iter_mut().find(|(n, _)| *n == t.name).unwrap().1 = v.to_string();
                    assert_eq!(got, want, "{name}: {}={v}", t.name);
                }
                let mut bad = vec![format!("{}=x", t.name)];
                if t.max < u64::MAX {
                    bad.push(format!("{}={}", t.name, t.max + 1));
                }
                if t.min > 0 {
                    bad.push(format!("{}={}", t.name, t.min - 1));
                }
                for kv in bad {
                    let err = report(name, &kv).unwrap_err();
                    assert!(format!("{err:#}").contains(t.name), "{name} {kv}: {err:#}");
                }
            }
            let err = report(name, "no_such_tunable=1").unwrap_err();
            assert!(
                format!("{err:#}").contains("no_such_tunable"),
                "{name}: {err:#}"
            );
        }
        assert!(tunables("no-such-scheduler").is_none());
    }

    #[test]
    fn defaults_that_follow_the_device_stay_in_range() {
        // 71,680 tags (7 queues of blk-mq's largest depth, as the module
        // suite's deep_device check builds): more than write_depth accepts,
        // so its default is the maximum, a value a write accepts back.
        let deep = DeviceInfo::flash(1 << 30, 7 * 10_240);
        for &(name, ..) in REGISTRY {
            let decl = tunables(name).unwrap();
            let got = make(name, &Params::default(), &deep).unwrap().tunables();
            for (t, (n, v)) in decl.iter().zip(&got) {
                let v: u64 = v.parse().unwrap();
                assert!(t.min <= v && v <= t.max, "{name}.{n} = {v} on 71680 tags");
                let back = Params::parse_kv(&format!("{n}={v}")).unwrap();
                assert!(make(name, &back, &deep).is_ok(), "{name}: {n}={v} refused");
            }
        }
        let veloces = make("veloces", &Params::default(), &deep)
            .unwrap()
            .tunables();
        assert!(veloces.contains(&("write_depth", "65536".to_string())));
    }

    #[test]
    fn switches_take_words_and_device_dependent_defaults_apply() {
        assert_eq!(
            report("deadline", "front_merges=off").unwrap()[4],
            ("front_merges", "0".to_string())
        );
        assert_eq!(
            report("veloces", "bundling=false").unwrap()[7],
            ("bundling", "0".to_string())
        );
        // veloces's bundle size defaults to an erase block of >= 64 KiB.
        let d = DeviceInfo {
            erase_block_sectors: Some(4096),
            ..dev()
        };
        let tun = make("veloces", &Params::new(), &d).unwrap().tunables();
        assert_eq!(tun[5], ("bundle_kb", "2048".to_string()));
    }
}
