//! Validation group 'wa' (not written yet).

use super::Case;

pub fn cases(_quick: bool) -> Vec<Case> {
    vec![Case::check(
        "wa",
        "not written yet",
        "-".into(),
        "-".into(),
        "-",
        false,
    )]
}
