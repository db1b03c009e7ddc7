//! Validation group 'queueing' (not written yet).

use super::Case;

pub fn cases(_quick: bool) -> Vec<Case> {
    vec![Case::check("queueing", "not written yet", "-".into(), "-".into(), "-", false)]
}
