//! Validation group 'hdd' (not written yet).

use super::Case;

pub fn cases(_quick: bool) -> Vec<Case> {
    vec![Case::check(
        "hdd",
        "not written yet",
        "-".into(),
        "-".into(),
        "-",
        false,
    )]
}
