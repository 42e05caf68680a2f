//! The soak's short variant, for CI: 1 000 built-in characters for 600 frames on 2 threads,
//! with churn, clip changes, mesh swaps and the head-tilt stage, checked against lone runs
//! every 100 frames. A few seconds are too short for the memory check (allocator warm-up is
//! still settling), so resident memory is only reported here; the long run checks it
//! (`cargo run --release --example soak -- --minutes 10`).

use sinew_examples::soak::{SoakOptions, format_report, run_soak};

#[test]
fn the_default_crowd_soaked_briefly_equals_its_entities_animated_alone() {
    let opts = SoakOptions {
        count: 1_000,
        frames: Some(600),
        duration: None,
        memory_warmup: None,
        ..Default::default()
    };
    let report = run_soak(&opts).unwrap_or_else(|e| panic!("soak failed: {e}"));
    println!("{}", format_report(&report, &opts));
    assert_eq!(report.frames, 600);
    assert_eq!(report.checks, 6);
    assert_eq!(report.entities_checked, 6 * opts.samples);
    // Ten simulated seconds at 10 % of 1 000 per second; 5 % clip changes and mesh swaps.
    assert!(report.churned >= 900, "{report:?}");
    assert!(
        report.clip_changes >= 450 && report.mesh_swaps >= 450,
        "{report:?}"
    );
}
