//! The soak's short variant, for CI: 300 characters of the default crowd (controller-driven,
//! foot placement and look-at, the head-tilt user stage) for 600 frames on 2 threads, with
//! churn, clip changes (parameter changes, the wave trigger, switches to and from plain lists)
//! and mesh swaps, checked against lone runs every 100 frames. A few seconds are too short for
//! the memory check (allocator warm-up is still settling), so resident memory is only reported
//! here; the long run checks it (`cargo run --release --example soak -- --minutes 10`).

use sinew_examples::soak::{SoakOptions, format_report, run_soak};

#[test]
fn the_default_crowd_soaked_briefly_equals_its_entities_animated_alone() {
    let opts = SoakOptions {
        count: 300,
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
    assert!(report.controlled_checked > 0, "{report:?}");
    // Ten simulated seconds at 10 % of 300 per second; 5 % clip changes and mesh swaps.
    assert!(report.churned >= 270, "{report:?}");
    assert!(
        report.clip_changes() >= 135 && report.mesh_swaps >= 135,
        "{report:?}"
    );
    // Every kind of clip change happened: a fifth of them switch between controller and plain
    // list, and plain characters then get new lists.
    assert!(
        report.parameter_changes > 0 && report.switches > 0 && report.lists_replaced > 0,
        "{report:?}"
    );
    assert!(report.controlled_last < report.count, "{report:?}");
}
