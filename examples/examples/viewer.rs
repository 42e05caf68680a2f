//! The crowd in a window: `cargo run --release --example viewer [-- --count N --gltf FILE]`.
//!
//! The built-in crowd is `crowd`'s: driven by its controller, feet placed on the drawn height
//! field, heads looking at the camera. Every frame the nine-job pipeline writes the palettes
//! into the mapped palette ring and the crowd is drawn from it (as `crowd` does), with frame
//! and job times and the controller and IK state on screen. Keys: space pause, `.` step,
//! `+`/`-` playback speed, `V` walking speed, `G` wave, `I` IK on/off, `N` next clip set, click
//! or Tab pick a character (its skeleton is drawn, its state shown), Esc drop the pick, `L`
//! level of detail (far characters play baked textures), `C` orbit/fly camera, drag to turn,
//! wheel to zoom, W/A/S/D/Q/E to move. `--script FILE --frames N --screenshot out.png` runs a scripted camera
//! for N frames and saves the last one (what CI checks).

use clap::Parser;
use sinew_examples::viewer::{ViewerOptions, run};
use sinew_gpu::crowd_frames::Rasteriser;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "viewer", about = "Watch a sinew crowd in a window")]
struct Args {
    /// Number of characters.
    #[arg(long, default_value_t = 1000)]
    count: usize,
    /// Show this glTF model instead of the built-in character.
    #[arg(long)]
    gltf: Option<PathBuf>,
    /// The renderer: graphics, compute, or auto (compute on discrete GPUs).
    #[arg(long, default_value = "auto", value_parser = ["auto", "graphics", "compute"])]
    raster: String,
    /// A camera script (see the `viewer::script` module): fixed 1/60 s steps.
    #[arg(long)]
    script: Option<PathBuf>,
    /// Close after this many frames.
    #[arg(long)]
    frames: Option<usize>,
    /// With --frames: save the last frame as a PNG.
    #[arg(long, requires = "frames")]
    screenshot: Option<PathBuf>,
    /// With --screenshot: write the camera and the characters' positions as JSON.
    #[arg(long, requires = "screenshot")]
    report: Option<PathBuf>,
    /// Window width.
    #[arg(long, default_value_t = 1280)]
    width: u32,
    /// Window height.
    #[arg(long, default_value_t = 720)]
    height: u32,
    /// `L` (level of detail): characters farther than this play baked textures (model units,
    /// metres for the built-in character; default ten grid spacings, 20 m built-in).
    #[arg(long)]
    lod_distance: Option<f32>,
}

fn main() -> ExitCode {
    let args: Args = match sinew_examples::cli::parse_args("viewer") {
        Ok(a) => a,
        Err(code) => return code,
    };
    let opts = ViewerOptions {
        count: args.count,
        gltf: args.gltf,
        raster: match args.raster.as_str() {
            "graphics" => Some(Rasteriser::Graphics),
            "compute" => Some(Rasteriser::Compute),
            _ => None,
        },
        script: args.script,
        frames: args.frames,
        screenshot: args.screenshot,
        report: args.report,
        size: (args.width, args.height),
        lod_distance: args.lod_distance,
    };
    match run(opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("viewer: {e}");
            ExitCode::FAILURE
        }
    }
}
