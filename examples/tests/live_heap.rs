//! The library's live heap under the soak's churn, counted by a counting global allocator
//! (`stats_alloc`: bytes allocated minus bytes freed, reallocations included): after a warm-up,
//! it must stop growing. Resident memory (the soak's own check) also moves with the system
//! allocator's free lists and page reuse; this counts what the program holds.
//!
//! 200 characters of the default crowd (controller-driven, foot placement and look-at) with the
//! soak's user stage, 900 frames at 60 Hz with every kind of change at ten times the soak's
//! default rate (the whole crowd churned, its animation changed and re-meshed every simulated
//! second), and checks against lone runs every 60 frames: each check falls on
//! the same phase of the one-second cycle of changes, so the live bytes it reads are
//! comparable.
#![allow(clippy::unwrap_used, clippy::panic)]

use sinew_examples::soak::{SoakOptions, run_soak};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use std::alloc::System;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes held now: `stats_alloc` adds a reallocation's growth to the allocated bytes and its
/// shrinkage to the freed ones.
fn live_bytes() -> u64 {
    let s = GLOBAL.stats();
    s.bytes_allocated.saturating_sub(s.bytes_deallocated) as u64
}

/// Allowed growth of the later checks' largest figure over the earlier ones': the checks of one
/// run differ by a few KiB (which entities are sampled, which animation lists they hold).
const SLACK_BYTES: u64 = 16 << 10;

#[test]
fn live_heap_stops_growing_under_churn() {
    let opts = SoakOptions {
        count: 200,
        frames: Some(900),
        duration: None,
        churn: 1.0,
        clip_changes: 1.0,
        mesh_swaps: 1.0,
        check_every: 60,
        memory_warmup: None,
        heap_probe: Some(live_bytes),
        ..Default::default()
    };
    let report = run_soak(&opts).unwrap_or_else(|e| panic!("soak failed: {e}"));
    assert_eq!(report.live_heap.len(), 15);
    assert!(report.churned >= 2_800, "{}", report.churned);
    // Frames 0 to 120 are the warm-up (frame buffers, caches); then two halves of six checks.
    let samples: Vec<u64> = report.live_heap[3..].iter().map(|s| s.1).collect();
    let (early, late) = samples.split_at(samples.len() / 2);
    let (early_max, late_max) = (
        early.iter().copied().max().unwrap(),
        late.iter().copied().max().unwrap(),
    );
    println!(
        "live heap at each check (frame, bytes): {:?}",
        report.live_heap
    );
    assert!(
        late_max <= early_max + SLACK_BYTES,
        "live heap grew from {early_max} to {late_max} bytes over {} frames of churn: {:?}",
        opts.frames.unwrap_or(0) / 2,
        report.live_heap
    );
    // The probe counts for real: the crowd (assets, store chunks, 200 characters' state) holds
    // more than 1 MiB before its first frame, and the first frame's buffers and caches add to it.
    assert!(
        report.live_heap[0].1 > 1 << 20 && report.live_heap[1].1 > report.live_heap[0].1,
        "{:?}",
        report.live_heap
    );
}
