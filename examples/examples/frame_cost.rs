//! The workload's per-frame cost, for instruction counts and node timelines: `--n N --threads T
//! --frames K` runs K frames of the basic workload (after 20 of warm-up) inside one function,
//! `frame_cost::measured`, so that
//!
//! ```text
//! valgrind --tool=callgrind --toggle-collect='frame_cost::measured' \
//!     target/release/examples/frame_cost --n 100 --threads 1 --frames 50
//! ```
//!
//! counts exactly K frames (divide the total by K). `--timeline` times the frames instead and
//! prints the frame's median, 10th percentile and minimum, and each node's median start and
//! duration. Unlike `workload`, nothing else runs (no checksum frames, no four-character run).

use clap::Parser;
use sinew_examples::workload::{WorkloadConfig, load_fox, run_frame, setup_with};
use sinew_jobs::animator::Animator;
use sinew_jobs::frame::PaletteEntry;
use sinew_runtime::store::Store;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(
    name = "frame_cost",
    about = "K frames of the Fox workload, for callgrind or a timeline"
)]
struct Args {
    /// Characters.
    #[arg(long, default_value_t = 100)]
    n: usize,
    /// Worker threads (0: one per core).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Frames measured.
    #[arg(long, default_value_t = 100)]
    frames: u64,
    /// Time the frames and print the node timeline.
    #[arg(long)]
    timeline: bool,
}

/// The measured frames (a function of its own for callgrind's `--toggle-collect`).
#[inline(never)]
fn measured(
    store: &mut Store,
    animator: &mut Animator,
    frames: std::ops::Range<u64>,
    palette: &mut [PaletteEntry],
) -> Result<(), String> {
    frames
        .into_iter()
        .try_for_each(|f| run_frame(store, animator, f, palette))
}

fn main() -> ExitCode {
    let args: Args = match sinew_examples::cli::parse_args("frame_cost") {
        Ok(a) => a,
        Err(code) => return code,
    };
    match run(&args) {
        Ok(report) => {
            print!("{report}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("frame_cost: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<String, String> {
    if args.n == 0 || args.frames == 0 {
        return Err("--n and --frames must be at least 1".into());
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads)
        .build()
        .map_err(|e| e.to_string())?;
    pool.install(|| {
        let fox_path = sinew_fixtures::asset_path("gltf/Fox.glb").map_err(|e| e.to_string())?;
        let fox = load_fox(&fox_path)?;
        let (mut store, mut animator) = setup_with(&fox, args.n, WorkloadConfig::default())?;
        let mut palette = vec![[0.0f32; 12]; args.n * fox.mesh.bone_count()];
        const WARM_UP: u64 = 20;
        for f in 0..WARM_UP {
            run_frame(&mut store, &mut animator, f, &mut palette)?;
        }
        let frames = WARM_UP..WARM_UP + args.frames;
        if !args.timeline {
            measured(&mut store, &mut animator, frames, &mut palette)?;
            return Ok(format!("{} frames of {} characters\n", args.frames, args.n));
        }
        let nodes = animator.timings().len();
        let (mut starts, mut durations) = (vec![Vec::new(); nodes], vec![Vec::new(); nodes]);
        let mut totals = Vec::new();
        for f in frames {
            let t = Instant::now();
            run_frame(&mut store, &mut animator, f, &mut palette)?;
            totals.push(t.elapsed().as_secs_f64() * 1e6);
            for (i, t) in animator.timings().iter().enumerate() {
                starts[i].push(t.started_at_offset.as_secs_f64() * 1e6);
                durations[i].push(t.duration.as_secs_f64() * 1e6);
            }
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let m = median(&mut totals);
        let mut out = format!(
            "frame median {m:.1} us  p10 {:.1}  min {:.1}\n",
            totals[totals.len() / 10],
            totals[0]
        );
        for (i, t) in animator.timings().iter().enumerate() {
            out += &format!(
                "  {:<24} start {:>6.1} us  duration {:>6.1} us\n",
                t.name,
                median(&mut starts[i]),
                median(&mut durations[i])
            );
        }
        Ok(out)
    })
}
