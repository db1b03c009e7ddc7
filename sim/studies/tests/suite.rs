//! The studies' integration tests: each file of tests/ is a module of this one test binary
//! (Cargo.toml: autotests = false). A new file of tests is one more line here.

mod hints;
