//! sinew inside an engine that owns the GPU: the engine creates the wgpu instance, adapter,
//! device, queue and its own palette buffer; sinew wraps the device, the skinning job writes
//! palettes straight into the engine's mapped buffer, and sinew's renderers draw from it.
//!
//! `cargo run --example engine_device -- --png crowd.png` renders the last frame offscreen
//! and saves it. Without an adapter it says so and exits successfully.

use clap::Parser;
use sinew_examples::engine_device::{
    DeviceRequest, EngineOptions, create_engine_device, run_engine,
};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "engine_device",
    about = "Animate a small crowd into an engine's own wgpu device and palette buffer"
)]
struct Args {
    /// Number of characters.
    #[arg(long, default_value_t = 5)]
    count: usize,
    /// Frames to run.
    #[arg(long, default_value_t = 8)]
    frames: usize,
    /// Write palettes through a staging buffer even when the adapter can map storage buffers.
    #[arg(long)]
    staging: bool,
    /// Save the last frame (hardware renderer) as a PNG.
    #[arg(long)]
    png: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let request = DeviceRequest {
        mappable: !args.staging,
        ..DeviceRequest::default()
    };
    let engine = match create_engine_device(request) {
        Ok(Some(engine)) => engine,
        Ok(None) => {
            println!(
                "engine_device: no GPU adapter on this machine (for a CPU one, install lavapipe: \
                 apt-get install mesa-vulkan-drivers); nothing to do"
            );
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let options = EngineOptions {
        count: args.count,
        frames: args.frames,
        ..EngineOptions::default()
    };
    let run = match run_engine(&engine, &options) {
        Ok(run) => run,
        Err(e) => {
            eprintln!("engine_device: {e}");
            return ExitCode::FAILURE;
        }
    };
    let entries = run.palettes.last().map_or(0, Vec::len);
    let foreground = |pixels: &[u8]| {
        let bg = pixels.get(..4).unwrap_or(&[0; 4]).to_vec();
        pixels
            .chunks_exact(4)
            .filter(|p| *p != bg.as_slice())
            .count()
    };
    println!(
        "engine_device: {} characters, {} frames on '{}'; palettes ({entries} entries) written {} \
         the engine's buffer; last frame covers {} px (hardware) and {} px (compute rasteriser) \
         of {}×{}",
        options.count,
        options.frames,
        run.adapter,
        if run.mapped {
            "straight into"
        } else {
            "into a staging buffer copied to"
        },
        foreground(&run.image.pixels),
        foreground(&run.compute_image.pixels),
        run.image.width,
        run.image.height,
    );
    if let Some(path) = args.png {
        if let Err(e) = run.image.save_png(&path) {
            eprintln!("engine_device: {e}");
            return ExitCode::FAILURE;
        }
        println!("wrote {}", path.display());
    }
    ExitCode::SUCCESS
}
