//! Trace readers (not written yet).
