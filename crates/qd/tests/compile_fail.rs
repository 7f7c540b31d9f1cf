//! The macros' compile-time errors, pinned: each file under `compile_fail/` must fail to compile
//! with the message in its `.stderr` beside it (regenerate with `TRYBUILD=overwrite` and review).

#[test]
fn macro_errors() {
    trybuild::TestCases::new().compile_fail("tests/compile_fail/*.rs");
}
