//! fio job files (not written yet).
