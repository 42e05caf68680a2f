//! Fuzz target for the RBF bake (`sinew_jobs::deform::bake`): control points, high-poly
//! vertices and options built from the fuzz bytes, with duplicates, NaN and infinities,
//! huge and tiny values, and degenerate (coplanar, collinear, coincident) configurations.
//!
//! Contract checked:
//! - `bake` returns `Ok` or an `Err` whose message is not empty; it never panics;
//! - an `Ok` binding has finite weights, report counts equal to the input counts, and deforms
//!   finite input to finite output: the rest cage, and (when every coordinate is at most 1e4 in
//!   magnitude) the cage moved by displacements of at most 8 per axis.
//!
//! The input layout and the check are in `common/rbf_case.rs`, which the workspace's
//! regression test (`jobs/tests/rbf_fuzz_regressions.rs`) shares.
//!
//! - libFuzzer: `cargo +nightly fuzz run rbf_bake corpus/rbf_bake -- -max_total_time=300`
//! - stable, with the shared mutation harness:
//!   `cargo run --release --no-default-features --bin rbf_bake -- --seconds 300`
#![cfg_attr(feature = "libfuzzer", no_main)]

#[path = "common/rbf_case.rs"]
mod rbf_case;
use rbf_case::check;

#[cfg(feature = "libfuzzer")]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = check(data) {
        panic!("{e}");
    }
});

#[cfg(not(feature = "libfuzzer"))]
#[path = "common/harness.rs"]
mod harness;

#[cfg(not(feature = "libfuzzer"))]
fn main() {
    harness::main("rbf_bake", Vec::new(), &[], check);
}
