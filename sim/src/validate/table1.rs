//! Validation group 'table1' (not written yet).

use super::Case;

pub fn cases(_quick: bool) -> Vec<Case> {
    vec![Case::check(
        "table1",
        "not written yet",
        "-".into(),
        "-".into(),
        "-",
        false,
    )]
}
