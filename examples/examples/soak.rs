//! The soak run of issue #18 (point 5): the default crowd of `crowd` (controller-driven
//! characters, feet placed on the height field, heads looking at the camera) for a long time on
//! 2 threads, with 10 % churn per simulated second, clip changes (a new speed or the wave
//! trigger, switches between the controller and plain animation lists), mesh swaps and a user
//! stage after the crowd's IK stages; every 100 frames sampled entities must equal the same
//! entities animated alone (their controller state, IK inputs and stages included), bit for
//! bit, and resident memory must not grow by more than 1 % after the first minute, nor the live
//! heap (counted by this binary's global allocator). Exits with status 1 and the reason on the
//! first failure.
//!
//! `cargo run --release --example soak -- --minutes 10` (figures in BENCHMARKS.md, "Soak").

use clap::Parser;
use sinew_examples::soak::{SoakOptions, format_report, run_soak};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use std::alloc::System;
use std::process::ExitCode;
use std::time::Duration;

/// The system allocator, counting bytes, so that the report gives the live heap beside the
/// resident set.
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn live_bytes() -> u64 {
    let s = GLOBAL.stats();
    s.bytes_allocated.saturating_sub(s.bytes_deallocated) as u64
}

#[derive(Parser, Debug)]
#[command(
    name = "soak",
    about = "Soak the default crowd and check it against lone runs"
)]
struct Args {
    /// Wall-clock minutes to run.
    #[arg(long, default_value_t = 10.0)]
    minutes: f64,
    /// Stop after this many frames instead (if sooner).
    #[arg(long)]
    frames: Option<usize>,
    /// Number of characters.
    #[arg(long, default_value_t = 10_000)]
    count: usize,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Share of the crowd despawned and respawned every simulated second.
    #[arg(long, default_value_t = 0.1)]
    churn: f32,
    /// Share of the crowd whose animation changes every simulated second (a new speed or the
    /// wave trigger; a new list for characters playing plain lists).
    #[arg(long, default_value_t = 0.05)]
    clip_changes: f32,
    /// Share of the clip changes that switch a character between the controller and a plain
    /// animation list.
    #[arg(long, default_value_t = 0.2)]
    switch_share: f32,
    /// Share of the crowd whose mesh is swapped every simulated second.
    #[arg(long, default_value_t = 0.05)]
    mesh_swaps: f32,
    /// Frames between checks against lone runs.
    #[arg(long, default_value_t = 100)]
    check_every: usize,
    /// Entities compared per check.
    #[arg(long, default_value_t = 16)]
    samples: usize,
    /// Seconds after which resident memory is the baseline of the memory check.
    #[arg(long, default_value_t = 60.0)]
    warmup_seconds: f64,
    /// Allowed growth of resident memory after the warm-up, percent.
    #[arg(long, default_value_t = 1.0)]
    max_growth_percent: f64,
    /// Seconds between progress lines on stderr (0: none).
    #[arg(long, default_value_t = 10.0)]
    progress_seconds: f64,
}

fn main() -> ExitCode {
    let a = Args::parse();
    if !(a.minutes > 0.0 && a.warmup_seconds >= 0.0 && a.progress_seconds >= 0.0) {
        eprintln!(
            "soak: --minutes must be positive, --warmup-seconds and --progress-seconds not negative"
        );
        return ExitCode::FAILURE;
    }
    let opts = SoakOptions {
        count: a.count,
        threads: a.threads,
        frames: a.frames,
        duration: Some(Duration::from_secs_f64(a.minutes * 60.0)),
        churn: a.churn,
        clip_changes: a.clip_changes,
        switch_share: a.switch_share,
        mesh_swaps: a.mesh_swaps,
        check_every: a.check_every,
        samples: a.samples,
        memory_warmup: Some(Duration::from_secs_f64(a.warmup_seconds)),
        max_memory_growth: a.max_growth_percent / 100.0,
        progress: (a.progress_seconds > 0.0).then(|| Duration::from_secs_f64(a.progress_seconds)),
        heap_probe: Some(live_bytes),
        ..Default::default()
    };
    match run_soak(&opts) {
        Ok(report) => {
            print!("{}", format_report(&report, &opts));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("soak FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}
