//! The one rule every reproduction's verdicts follow, in the simulator
//! (`vsim repro`) and in the lab (`vlab repro`, through the Python module's
//! `grade`): a claim of a paper, our figure with its noise, and a grade.
//!
//! Our figure is an interval `[low, high]` around a value, of one kind
//! everywhere: the 95 % Student t confidence interval of a mean over
//! independent repetitions (in the lab rotated repetitions, of the mean log
//! ratio; in the simulator the generated traces' seeds, [`Ours::over`]); the
//! value alone for a deterministic run (no noise: the interval is the point);
//! unbounded where there are too few repetitions for an interval (one).
//! Each reproduction says which in its criterion text.
//!
//! A claim is one of:
//! - **a direction**: ours above (or below) a bound. It *holds* when the whole
//!   interval is on the claimed side, *does not hold* when the whole interval
//!   is on the other side or at the bound, and is *inconclusive* when the
//!   interval straddles the bound;
//! - **a range** `[a, b]` on the far side of a no-effect value (0 % saved, a
//!   ratio of 1), with a tolerance widening it on both sides ([`RANGE_TOLERANCE`]
//!   of the range's midpoint distance from the no-effect value unless the
//!   claim states its own). It *holds* when the whole interval lies inside the
//!   widened range; it is **partly** met when the effect's direction holds
//!   (the whole interval beyond the no-effect value) and the interval overlaps
//!   the widened range without lying wholly inside it; it *does not hold* when
//!   the direction does not hold or the whole interval lies outside the widened
//!   range (0.8 % saved against a claimed 28-52 %, or 628 % against "about
//!   10 %", or −0.2 % with an interval that straddles 0: whichever its sign,
//!   not the claim's size); it is *inconclusive* when the interval straddles
//!   the no-effect value and overlaps the widened range;
//! - **a match**: ours equal to a value within a stated tolerance (offline
//!   and online "match"): it holds when the whole interval is within it, does
//!   not hold when the whole interval is outside, else is inconclusive;
//! - **a choice**: a named outcome (the workload where a gain is largest); it
//!   holds when ours is the paper's and does not hold otherwise;
//! - **not reproducible from the description**: the paper does not give enough
//!   of its set-up to rebuild the experiment; the reason is the evidence.
//!
//! A claim made of parts (one per workload for "on every workload"; a claim
//! "in most cases") is graded from its parts' grades by [`combine`]: *holds*
//! when every part holds (for "most": more than half); **partly** when at
//! least one part holds outright and at least one does not hold or is itself
//! only partly met; *does not hold* when no part holds outright and at least
//! one does not hold or is partly met; *inconclusive* otherwise. A part graded
//! *partly* never counts as holding: a claim whose parts are each only partly
//! met does not hold. [`combine_criterion`] prints this beside every combined
//! verdict.

use serde::{Deserialize, Serialize};

/// The confidence level of every interval the rule reads.
pub const LEVEL: f64 = 0.95;

/// The two-sided `level` quantile of Student's t with `df` degrees of
/// freedom (t(0.975, 9) = 2.262 for a 95 % interval over 10 values).
pub fn t_quantile(level: f64, df: usize) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    match StudentsT::new(0.0, 1.0, df as f64) {
        Ok(t) => t.inverse_cdf(1.0 - (1.0 - level) / 2.0),
        Err(_) => f64::INFINITY,
    }
}

/// A claimed range is widened on each side by this share of its midpoint's
/// distance from the no-effect value (28-52 % saved: mid 40, ±10 points).
pub const RANGE_TOLERANCE: f64 = 0.25;

/// The grades, in the words every report prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Grade {
    #[serde(rename = "holds")]
    Holds,
    #[serde(rename = "partly")]
    Partly,
    #[serde(rename = "does not hold")]
    DoesNotHold,
    #[serde(rename = "inconclusive")]
    Inconclusive,
    #[serde(rename = "not reproducible from the description")]
    NotReproducible,
    /// The figures the claim needs are missing (a failed run).
    #[serde(rename = "not judged")]
    NotJudged,
}

impl Grade {
    pub const ALL: [Grade; 6] = [
        Grade::Holds,
        Grade::Partly,
        Grade::DoesNotHold,
        Grade::Inconclusive,
        Grade::NotReproducible,
        Grade::NotJudged,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Grade::Holds => "holds",
            Grade::Partly => "partly",
            Grade::DoesNotHold => "does not hold",
            Grade::Inconclusive => "inconclusive",
            Grade::NotReproducible => "not reproducible from the description",
            Grade::NotJudged => "not judged",
        }
    }

    pub fn parse(s: &str) -> Option<Grade> {
        Grade::ALL.into_iter().find(|g| g.as_str() == s)
    }
}

impl std::fmt::Display for Grade {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Our figure: a value and the interval its noise gives (a point where it
/// has none).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ours {
    pub value: f64,
    pub low: f64,
    pub high: f64,
    /// The same mean's 95 % BCa and percentile bootstrap intervals, where it
    /// has them ([`Ours::over`]): a grade either would change is inconclusive,
    /// so no verdict rests on the interval method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others: Option<[(f64, f64); 2]>,
}

/// Resamples of the bootstrap intervals beside the t interval (a fixed seed:
/// the same values give the same intervals).
pub const BOOTSTRAP_RESAMPLES: usize = 9_999;
const BOOTSTRAP_SEED: u64 = 0x5EED_0080;

/// The 95 % BCa and the percentile bootstrap intervals of the mean of `v`
/// (at least two values, not all equal): Efron's bias-corrected and
/// accelerated interval (the bias from the resampled means below the
/// mean, the acceleration from the jackknife), the percentile interval where
/// the bias is unbounded.
fn bootstrap(v: &[f64], mean: f64) -> Option<[(f64, f64); 2]> {
    use rand::{Rng, SeedableRng};
    use statrs::distribution::{ContinuousCDF, Normal};
    let n = v.len();
    if n < 2 {
        return None;
    }
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(BOOTSTRAP_SEED);
    let mut means: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| (0..n).map(|_| v[rng.gen_range(0..n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let last = (BOOTSTRAP_RESAMPLES - 1) as f64;
    let q = |p: f64| means[(last * p.clamp(0.0, 1.0)).round() as usize];
    let alpha = (1.0 - LEVEL) / 2.0;
    let percentile = (q(alpha), q(1.0 - alpha));
    let normal = Normal::new(0.0, 1.0).ok()?;
    let below = means.iter().filter(|m| **m < mean).count() as f64 / BOOTSTRAP_RESAMPLES as f64;
    if !(below > 0.0 && below < 1.0) {
        return Some([percentile, percentile]);
    }
    let z0 = normal.inverse_cdf(below);
    let sum: f64 = v.iter().sum();
    let jack: Vec<f64> = v.iter().map(|x| (sum - x) / (n - 1) as f64).collect();
    let jm = jack.iter().sum::<f64>() / n as f64;
    let num: f64 = jack.iter().map(|j| (jm - j).powi(3)).sum();
    let den = 6.0 * jack.iter().map(|j| (jm - j).powi(2)).sum::<f64>().powf(1.5);
    let a = if den > 0.0 { num / den } else { 0.0 };
    let adjusted = |p: f64| {
        let z = normal.inverse_cdf(p);
        normal.cdf(z0 + (z0 + z) / (1.0 - a * (z0 + z)))
    };
    let bca = (q(adjusted(alpha)), q(adjusted(1.0 - alpha)));
    Some([bca, percentile])
}

impl Ours {
    /// A figure without noise (a deterministic run).
    pub fn point(value: f64) -> Ours {
        Ours {
            value,
            low: value,
            high: value,
            others: None,
        }
    }

    /// A figure with its interval (swapped if given the wrong way round).
    pub fn interval(value: f64, low: f64, high: f64) -> Ours {
        Ours {
            value,
            low: low.min(high),
            high: high.max(low),
            others: None,
        }
    }

    /// The mean of several independent values (generated traces' seeds) with
    /// its 95 % Student t interval, the rule's one kind of interval: `mean ±
    /// t(0.975, n − 1) × sd / √n`. One value has no interval (unbounded:
    /// inconclusive); values all equal (a deterministic figure) give the point.
    /// Beside it, the BCa and percentile bootstrap intervals (`others`): a
    /// grade on which the three disagree is inconclusive ([`grade`]).
    /// Non-finite values are left out; None for none.
    pub fn over(values: &[f64]) -> Option<Ours> {
        let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        let n = v.len();
        if n == 0 {
            return None;
        }
        let mean = v.iter().sum::<f64>() / n as f64;
        if n == 1 {
            return Some(Ours::interval(mean, f64::NEG_INFINITY, f64::INFINITY));
        }
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        if var == 0.0 {
            return Some(Ours::point(mean));
        }
        let half = t_quantile(LEVEL, n - 1) * (var / n as f64).sqrt();
        Some(Ours {
            others: bootstrap(&v, mean),
            ..Ours::interval(mean, mean - half, mean + half)
        })
    }

    /// A usable figure: a finite value; its bounds may be infinite (no
    /// bound: too few repetitions for an interval), never NaN.
    fn usable(&self) -> bool {
        self.value.is_finite() && !self.low.is_nan() && !self.high.is_nan()
    }
}

/// What a paper claims about one figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Claim {
    /// Ours above `bound` (`above`), or below it.
    Direction { bound: f64, above: bool },
    /// Ours in `[low, high]`, on the far side of `null` (the no-effect
    /// value); `tolerance` widens the range on each side (None: the rule's).
    Range {
        low: f64,
        high: f64,
        null: f64,
        tolerance: Option<f64>,
    },
    /// Ours within `tolerance` of `value`.
    Near { value: f64, tolerance: f64 },
    /// A named outcome.
    Choice { expected: String },
    /// The paper does not give enough to rebuild it: `why`.
    NotReproducible { why: String },
}

impl Claim {
    pub fn above(bound: f64) -> Claim {
        Claim::Direction { bound, above: true }
    }

    pub fn below(bound: f64) -> Claim {
        Claim::Direction {
            bound,
            above: false,
        }
    }

    /// A range on the far side of `null`, with the rule's tolerance.
    pub fn range(low: f64, high: f64, null: f64) -> Claim {
        Claim::Range {
            low: low.min(high),
            high: high.max(low),
            null,
            tolerance: None,
        }
    }

    /// The range widened by the tolerance: the magnitude part's bounds.
    pub fn widened(&self) -> Option<(f64, f64)> {
        match *self {
            Claim::Range {
                low,
                high,
                null,
                tolerance,
            } => {
                let t = tolerance.unwrap_or(RANGE_TOLERANCE * ((low + high) / 2.0 - null).abs());
                Some((low - t, high + t))
            }
            _ => None,
        }
    }

    /// The rule for this claim, in words (printed beside each verdict).
    pub fn criterion(&self) -> String {
        match self {
            Claim::Direction { bound, above } => {
                let (side, other) = if *above {
                    ("above", "below")
                } else {
                    ("below", "above")
                };
                format!(
                    "holds if ours (its interval) lies wholly {side} {bound}; does not hold if wholly \
                     {other} it or at it; inconclusive if it straddles {bound}"
                )
            }
            Claim::Range {
                low, high, null, ..
            } => {
                let (wl, wh) = self.widened().unwrap_or((*low, *high));
                let side = if (low + high) / 2.0 >= *null {
                    "above"
                } else {
                    "below"
                };
                format!(
                    "range {low}..{high} (widened to {wl:.3}..{wh:.3}): holds if ours lies wholly in \
                     it; partly if ours lies wholly {side} {null} (the claimed direction) and \
                     overlaps it without lying wholly in it; does not hold if ours lies wholly \
                     outside it, or wholly on the other side of {null}; else (straddling {null}, \
                     overlapping it) inconclusive"
                )
            }
            Claim::Near { value, tolerance } => format!(
                "holds if ours lies wholly within {value} ± {tolerance}; does not hold if wholly \
                 outside it; else inconclusive"
            ),
            Claim::Choice { expected } => {
                format!("holds if ours is {expected}; else does not hold")
            }
            Claim::NotReproducible { .. } => {
                "not reproducible from the description: the paper does not give its set-up".into()
            }
        }
    }
}

fn direction(ours: &Ours, bound: f64, above: bool) -> Grade {
    let (on_side, off_side) = if above {
        (ours.low > bound, ours.high <= bound)
    } else {
        (ours.high < bound, ours.low >= bound)
    };
    if on_side {
        Grade::Holds
    } else if off_side {
        Grade::DoesNotHold
    } else {
        Grade::Inconclusive
    }
}

/// Grade a numeric claim on our figure (None: missing, not judged): on its
/// t interval, and where it carries bootstrap intervals (`others`) on those
/// too; where they disagree the grade rests on the interval method and is
/// inconclusive.
pub fn grade(claim: &Claim, ours: Option<&Ours>) -> Grade {
    let g = grade_interval(claim, ours);
    match ours.and_then(|o| o.others.map(|others| (o, others))) {
        Some((o, others)) => {
            let agree = others.iter().all(|&(low, high)| {
                grade_interval(claim, Some(&Ours::interval(o.value, low, high))) == g
            });
            if agree {
                g
            } else {
                Grade::Inconclusive
            }
        }
        None => g,
    }
}

/// Whether our figure's intervals (t, BCa, percentile) give one grade.
pub fn method_agrees(claim: &Claim, ours: Option<&Ours>) -> bool {
    ours.and_then(|o| o.others).is_none() || {
        let plain = ours.map(|o| Ours::interval(o.value, o.low, o.high));
        grade(claim, ours) == grade_interval(claim, plain.as_ref())
    }
}

fn grade_interval(claim: &Claim, ours: Option<&Ours>) -> Grade {
    if let Claim::NotReproducible { .. } = claim {
        return Grade::NotReproducible;
    }
    let Some(o) = ours.filter(|o| o.usable()) else {
        return Grade::NotJudged;
    };
    match claim {
        Claim::Direction { bound, above } => direction(o, *bound, *above),
        Claim::Range {
            low, high, null, ..
        } => {
            let above = (low + high) / 2.0 >= *null;
            let (wl, wh) = claim.widened().unwrap_or((*low, *high));
            let outside = o.high < wl || o.low > wh;
            match direction(o, *null, above) {
                _ if outside => Grade::DoesNotHold,
                Grade::Holds if o.low >= wl && o.high <= wh => Grade::Holds,
                Grade::Holds => Grade::Partly,
                other => other,
            }
        }
        Claim::Near { value, tolerance } => {
            let (wl, wh) = (value - tolerance, value + tolerance);
            if o.low >= wl && o.high <= wh {
                Grade::Holds
            } else if o.high < wl || o.low > wh {
                Grade::DoesNotHold
            } else {
                Grade::Inconclusive
            }
        }
        Claim::Choice { .. } => Grade::NotJudged,
        Claim::NotReproducible { .. } => Grade::NotReproducible,
    }
}

/// Grade a choice: ours against the paper's (None: missing).
pub fn grade_choice(claim: &Claim, ours: Option<&str>) -> Grade {
    match (claim, ours) {
        (Claim::NotReproducible { .. }, _) => Grade::NotReproducible,
        (Claim::Choice { expected }, Some(o)) => {
            if o == expected {
                Grade::Holds
            } else {
                Grade::DoesNotHold
            }
        }
        _ => Grade::NotJudged,
    }
}

/// How a claim made of parts needs them: every one, or more than half.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantifier {
    All,
    Most,
}

/// A claim made of parts, graded from theirs (see the module comment).
pub fn combine(parts: &[Grade], q: Quantifier) -> Grade {
    if parts.is_empty() || parts.contains(&Grade::NotJudged) {
        return Grade::NotJudged;
    }
    if parts.contains(&Grade::NotReproducible) {
        return Grade::NotReproducible;
    }
    let holds = parts.iter().filter(|g| **g == Grade::Holds).count();
    // A part only partly met does not hold outright: it counts with the failures.
    let short = parts
        .iter()
        .filter(|g| matches!(g, Grade::DoesNotHold | Grade::Partly))
        .count();
    let enough = match q {
        Quantifier::All => holds == parts.len(),
        Quantifier::Most => 2 * holds > parts.len(),
    };
    if enough {
        Grade::Holds
    } else if holds > 0 && short > 0 {
        Grade::Partly
    } else if short > 0 {
        Grade::DoesNotHold
    } else {
        Grade::Inconclusive
    }
}

/// The rule for combining parts, in words.
pub fn combine_criterion(q: Quantifier) -> &'static str {
    match q {
        Quantifier::All => {
            "holds if every part holds; partly if at least one part holds and at least one does \
             not hold or is only partly met; does not hold if no part holds and at least one does \
             not hold or is only partly met (a part partly met never counts as holding); else \
             inconclusive"
        }
        Quantifier::Most => {
            "holds if more than half the parts hold; partly if at least one part holds and at \
             least one does not hold or is only partly met; does not hold if no part holds and at \
             least one does not hold or is only partly met (a part partly met never counts as \
             holding); else inconclusive"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_direction_holds_fails_or_straddles() {
        let c = Claim::above(1.0);
        assert_eq!(
            grade(&c, Some(&Ours::interval(1.1, 1.02, 1.2))),
            Grade::Holds
        );
        assert_eq!(
            grade(&c, Some(&Ours::interval(0.9, 0.8, 0.99))),
            Grade::DoesNotHold
        );
        assert_eq!(
            grade(&c, Some(&Ours::interval(1.0, 0.95, 1.05))),
            Grade::Inconclusive
        );
        // A point at the bound is not above it.
        assert_eq!(grade(&c, Some(&Ours::point(1.0))), Grade::DoesNotHold);
        assert_eq!(
            grade(&Claim::below(0.0), Some(&Ours::point(-3.0))),
            Grade::Holds
        );
        assert_eq!(grade(&c, None), Grade::NotJudged);
        assert_eq!(grade(&c, Some(&Ours::point(f64::NAN))), Grade::NotJudged);
        // No interval (too few repetitions): unbounded, so inconclusive.
        let open = Ours::interval(1.5, f64::NEG_INFINITY, f64::INFINITY);
        assert_eq!(grade(&c, Some(&open)), Grade::Inconclusive);
        assert_eq!(
            grade(&Claim::range(28.0, 52.0, 0.0), Some(&open)),
            Grade::Inconclusive
        );
    }

    #[test]
    fn a_range_is_partly_met_only_where_its_interval_overlaps_it() {
        // Seed 004: 28-52 % less (mid 40: widened by 10 to 18..62).
        let c = Claim::range(28.0, 52.0, 0.0);
        assert_eq!(c.widened(), Some((18.0, 62.0)));
        assert_eq!(grade(&c, Some(&Ours::point(40.0))), Grade::Holds);
        assert_eq!(grade(&c, Some(&Ours::point(20.0))), Grade::Holds);
        // The right sign but wholly short of the range, or wholly beyond it.
        assert_eq!(grade(&c, Some(&Ours::point(0.8))), Grade::DoesNotHold);
        assert_eq!(grade(&c, Some(&Ours::point(70.0))), Grade::DoesNotHold);
        assert_eq!(grade(&c, Some(&Ours::point(-5.0))), Grade::DoesNotHold);
        assert_eq!(grade(&c, Some(&Ours::point(0.0))), Grade::DoesNotHold);
        // Overlapping the widened range's edge, the sign right: partly.
        assert_eq!(
            grade(&c, Some(&Ours::interval(17.0, 12.0, 22.0))),
            Grade::Partly
        );
        assert_eq!(
            grade(&c, Some(&Ours::interval(60.0, 55.0, 70.0))),
            Grade::Partly
        );
        // Straddling the no-effect value: wholly outside the widened range
        // whatever its sign, so not the claim; inconclusive only where it
        // also overlaps the range (a range widened past the no-effect value).
        assert_eq!(
            grade(&c, Some(&Ours::interval(2.0, -1.0, 4.0))),
            Grade::DoesNotHold
        );
        let wide = Claim::range(1.0, 100.0, 0.0);
        assert!(wide.widened().unwrap().0 < 0.0);
        assert_eq!(
            grade(&wide, Some(&Ours::interval(0.5, -1.0, 2.0))),
            Grade::Inconclusive
        );
        // WordCount's 38 % against 6-23 %, 628 % against "about 10 %", HPB's +81 % against 58-67 %.
        assert_eq!(
            grade(&Claim::range(6.0, 23.0, 0.0), Some(&Ours::point(38.0))),
            Grade::DoesNotHold
        );
        assert_eq!(
            grade(&Claim::range(8.0, 12.0, 0.0), Some(&Ours::point(628.0))),
            Grade::DoesNotHold
        );
        assert_eq!(
            grade(&Claim::range(58.0, 67.0, 0.0), Some(&Ours::point(81.0))),
            Grade::Holds
        );
        // A range below the no-effect value (a slowdown, a ratio under 1).
        let slower = Claim::range(0.5, 0.7, 1.0);
        assert_eq!(grade(&slower, Some(&Ours::point(0.6))), Grade::Holds);
        assert_eq!(
            grade(&slower, Some(&Ours::interval(0.8, 0.7, 0.9))),
            Grade::Partly
        );
        assert_eq!(grade(&slower, Some(&Ours::point(0.95))), Grade::DoesNotHold);
        assert_eq!(grade(&slower, Some(&Ours::point(1.2))), Grade::DoesNotHold);
        // A stated tolerance.
        let tight = Claim::Range {
            low: 28.0,
            high: 52.0,
            null: 0.0,
            tolerance: Some(0.0),
        };
        assert_eq!(grade(&tight, Some(&Ours::point(27.0))), Grade::DoesNotHold);
        assert_eq!(
            grade(&tight, Some(&Ours::interval(27.0, 26.0, 29.0))),
            Grade::Partly
        );
        assert!(c
            .criterion()
            .contains("overlaps it without lying wholly in it"));
    }

    #[test]
    fn parts_combine_with_one_meaning_of_partly() {
        use Grade::*;
        let all = |p: &[Grade]| combine(p, Quantifier::All);
        assert_eq!(all(&[Holds, Holds]), Holds);
        assert_eq!(all(&[Holds, DoesNotHold]), Partly);
        assert_eq!(all(&[DoesNotHold, DoesNotHold]), DoesNotHold);
        assert_eq!(all(&[DoesNotHold, Inconclusive]), DoesNotHold);
        assert_eq!(all(&[Holds, Inconclusive]), Inconclusive);
        assert_eq!(all(&[Holds, Partly]), Partly);
        // No part holds outright: parts only partly met do not make a claim partly.
        assert_eq!(all(&[Partly, Partly]), DoesNotHold);
        assert_eq!(all(&[Partly, Inconclusive]), DoesNotHold);
        assert_eq!(all(&[Holds, NotJudged]), NotJudged);
        assert_eq!(all(&[Holds, NotReproducible]), NotReproducible);
        assert_eq!(all(&[]), NotJudged);
        let most = |p: &[Grade]| combine(p, Quantifier::Most);
        assert_eq!(most(&[Holds, Holds, DoesNotHold]), Holds);
        assert_eq!(most(&[Holds, Holds, Partly]), Holds);
        assert_eq!(most(&[Holds, DoesNotHold, DoesNotHold]), Partly);
        assert_eq!(most(&[Holds, Holds, DoesNotHold, DoesNotHold]), Partly);
        assert_eq!(most(&[Partly, Partly, Partly]), DoesNotHold);
        assert_eq!(most(&[Inconclusive, Inconclusive, Holds]), Inconclusive);
        for q in [Quantifier::All, Quantifier::Most] {
            assert!(combine_criterion(q).contains("a part partly met never counts as holding"));
        }
    }

    #[test]
    fn a_grade_the_bootstrap_intervals_would_change_is_inconclusive() {
        // Ten values 1..=10: t ±2.166 about 5.5; the bootstrap intervals are
        // narrower (about ±1.8) and lie inside the t interval.
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        let o = Ours::over(&v).unwrap();
        let [bca, pct] = o.others.unwrap();
        for (l, h) in [bca, pct] {
            assert!(l > o.low && h < o.high && l < 5.5 && h > 5.5, "{o:?}");
        }
        // The same seed, the same intervals.
        assert_eq!(Ours::over(&v).unwrap(), o);
        // Wholly above 3 and wholly below 8 by all three: holds.
        assert_eq!(grade(&Claim::above(3.0), Some(&o)), Grade::Holds);
        assert!(method_agrees(&Claim::above(3.0), Some(&o)));
        // A bound between the t interval's low end and the bootstrap's: the t
        // interval straddles it, the bootstrap ones do not. Inconclusive
        // either way, and said to rest on the method only where it does.
        let between = (o.low + bca.0.min(pct.0)) / 2.0;
        assert_eq!(grade(&Claim::above(between), Some(&o)), Grade::Inconclusive);
        let t_only = Ours::interval(o.value, o.low, o.high);
        assert_eq!(
            grade(&Claim::above(between), Some(&t_only)),
            Grade::Inconclusive
        );
        // The other way round: the t interval decides, a bootstrap one would
        // not. Make the t interval narrow and keep wide bootstrap intervals.
        let odd = Ours {
            others: Some([(0.5, 2.0), (0.9, 1.8)]),
            ..Ours::interval(1.5, 1.2, 1.8)
        };
        assert_eq!(
            grade(&Claim::above(1.0), Some(&Ours::interval(1.5, 1.2, 1.8))),
            Grade::Holds
        );
        assert_eq!(grade(&Claim::above(1.0), Some(&odd)), Grade::Inconclusive);
        assert!(!method_agrees(&Claim::above(1.0), Some(&odd)));
        // The bootstrap intervals do not travel unless present.
        let json = serde_json::to_string(&Ours::point(1.0)).unwrap();
        assert!(!json.contains("others"), "{json}");
    }

    #[test]
    fn ours_over_seeds_is_the_mean_with_its_t_interval() {
        // Ten values 1..=10: mean 5.5, sd 3.028, t(0.975, 9) = 2.262: ±2.166.
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        let o = Ours::over(&v).unwrap();
        assert!((o.value - 5.5).abs() < 1e-12);
        assert!((o.high - o.value - 2.166).abs() < 1e-3, "{o:?}");
        assert!((o.value - o.low - 2.166).abs() < 1e-3, "{o:?}");
        assert!((t_quantile(0.95, 9) - 2.262).abs() < 1e-3);
        // A deterministic figure: the point; one value: no interval.
        assert_eq!(Ours::over(&[2.0, 2.0, 2.0]), Some(Ours::point(2.0)));
        let one = Ours::over(&[3.0, f64::NAN]).unwrap();
        assert_eq!(one.value, 3.0);
        assert!(one.low.is_infinite() && one.high.is_infinite());
        assert_eq!(grade(&Claim::above(1.0), Some(&one)), Grade::Inconclusive);
        assert!(Ours::over(&[]).is_none());
    }

    #[test]
    fn a_match_within_its_tolerance() {
        let c = Claim::Near {
            value: 1.0,
            tolerance: 0.1,
        };
        assert_eq!(grade(&c, Some(&Ours::point(1.05))), Grade::Holds);
        assert_eq!(grade(&c, Some(&Ours::point(2.01))), Grade::DoesNotHold);
        assert_eq!(
            grade(&c, Some(&Ours::interval(1.1, 1.0, 1.2))),
            Grade::Inconclusive
        );
        assert!(c.criterion().contains("within 1 ± 0.1"));
    }

    #[test]
    fn choices_and_unreproducible_claims() {
        let c = Claim::Choice {
            expected: "TeraSort".into(),
        };
        assert_eq!(grade_choice(&c, Some("TeraSort")), Grade::Holds);
        assert_eq!(grade_choice(&c, Some("Sort")), Grade::DoesNotHold);
        assert_eq!(grade_choice(&c, None), Grade::NotJudged);
        let n = Claim::NotReproducible {
            why: "no trace".into(),
        };
        assert_eq!(grade(&n, None), Grade::NotReproducible);
        assert!(n.criterion().starts_with("not reproducible"));
    }

    #[test]
    fn claims_and_grades_travel_as_json() {
        let c: Claim = serde_json::from_str(
            r#"{"kind": "range", "low": 6, "high": 23, "null": 0, "tolerance": null}"#,
        )
        .unwrap();
        assert_eq!(c, Claim::range(6.0, 23.0, 0.0));
        assert_eq!(
            serde_json::to_string(&Grade::DoesNotHold).unwrap(),
            "\"does not hold\""
        );
        for g in Grade::ALL {
            assert_eq!(Grade::parse(g.as_str()), Some(g));
        }
        assert!(Claim::above(1.0).criterion().contains("wholly above 1"));
    }
}
