//! The main job: a crowd of animated characters, measured.
//!
//! `cargo run --release --example crowd` animates 10 000 built-in characters (walk/run blend by
//! speed, additive breathing, a masked upper-body wave on every fourth, root motion, footstep
//! events; feet placed on a height field, heads looking at the camera) through the nine-job
//! graph and prints per-job medians, frame time, throughput and memory. Where a GPU adapter is
//! there (not a CPU rasteriser), every frame's palettes are written into the mapped palette
//! ring and drawn, and the summary splits the frame into CPU pipeline, ring wait, encode and
//! submit, and GPU time. See `--help` for options.

use clap::Parser;
use sinew_examples::crowd::{CrowdOptions, format_summary, run_crowd};
use sinew_examples::crowd_gpu::GpuUse;
use sinew_gpu::crowd_frames::Rasteriser;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "crowd",
    about = "Animate a crowd with sinew's nine-job graph and measure it"
)]
struct Args {
    /// Number of characters.
    #[arg(long, default_value_t = 10_000)]
    count: usize,
    /// Frames to measure (after one warm-up frame).
    #[arg(long, default_value_t = 300)]
    frames: usize,
    /// Worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Share of the crowd despawned and respawned every simulated second (0 to 1).
    #[arg(long, default_value_t = 0.0)]
    churn: f32,
    /// Crowd this glTF model instead of the built-in character.
    #[arg(long)]
    gltf: Option<PathBuf>,
    /// With --gltf: the clip to play (index or name); default every clip.
    #[arg(long, requires = "gltf")]
    clip: Option<String>,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Render the last frame on the GPU and save it as a PNG.
    #[arg(long)]
    png: Option<PathBuf>,
    /// Level of detail: characters nearer the camera than DISTANCE metres run the CPU
    /// pipeline, farther ones play baked animation textures (one clip per character).
    #[arg(long, value_name = "DISTANCE")]
    lod: Option<f32>,
    /// With --lod: width of the hysteresis band around DISTANCE (default DISTANCE / 10).
    #[arg(long, requires = "lod", value_name = "METRES")]
    lod_hysteresis: Option<f32>,
    /// With --lod: bake rate in frames per second (default: the frame rate, 60).
    #[arg(long, requires = "lod", value_name = "HZ")]
    lod_rate: Option<f32>,
    /// With --lod: skin every switching character from both paths on its switch frame and
    /// print the largest difference (outside the timings).
    #[arg(long, requires = "lod")]
    lod_check: bool,
    /// Keep palettes in CPU memory and draw nothing (by default every frame is written into
    /// the mapped palette ring and drawn when a GPU adapter is there).
    #[arg(long, conflicts_with = "gpu")]
    cpu_only: bool,
    /// Draw on any adapter, a CPU rasteriser (lavapipe) included; no adapter is an error.
    #[arg(long)]
    gpu: bool,
    /// The renderer: graphics (instanced draw), compute (compute rasteriser), or auto (compute
    /// on discrete GPUs, graphics elsewhere).
    #[arg(long, default_value = "auto", value_parser = ["auto", "graphics", "compute"])]
    raster: String,
    /// Turn off foot placement on the height field and the heads' look-at (to read their cost;
    /// they are off with --lod, whose baked tier plays the clips alone).
    #[arg(long)]
    no_ik: bool,
}

fn main() -> ExitCode {
    let args: Args = match sinew_examples::cli::parse_args("crowd") {
        Ok(a) => a,
        Err(code) => return code,
    };
    let opts = CrowdOptions {
        count: args.count,
        frames: args.frames,
        threads: args.threads,
        churn: args.churn,
        gltf: args.gltf,
        clip: args.clip,
        progress: !args.json,
        png: args.png,
        lod: args.lod,
        lod_hysteresis: args.lod_hysteresis,
        lod_rate: args.lod_rate,
        lod_check: args.lod_check,
        gpu: if args.cpu_only {
            GpuUse::Off
        } else if args.gpu {
            GpuUse::Required
        } else {
            GpuUse::Auto
        },
        raster: match args.raster.as_str() {
            "graphics" => Some(Rasteriser::Graphics),
            "compute" => Some(Rasteriser::Compute),
            _ => None,
        },
        ik: !args.no_ik,
        ..CrowdOptions::default()
    };
    match run_crowd(&opts) {
        Ok(summary) => {
            if args.json {
                println!("{}", summary.to_json());
            } else {
                print!("{}", format_summary(&summary));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("crowd: {e}");
            ExitCode::FAILURE
        }
    }
}
