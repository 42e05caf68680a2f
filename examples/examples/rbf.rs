//! RBF deformation of a high-poly OBJ by a posed low-poly OBJ.
//!
//! ```text
//! cargo run --release --example rbf -- --low-rest L.obj --low-posed P.obj --high H.obj \
//!     --kernel thin_plate_spline --epsilon 3.58 --mode interpolate --out OUT.obj [--gpu]
//! ```
//!
//! Progress (bake report, timings) goes to stdout; an error is one line on stderr and a
//! non-zero exit status. Writes the deformed high mesh in the input vertex order: the `v` lines (deformed), then every
//! other line of the high OBJ unchanged (faces keep their indices). Files are read by
//! `sinew_examples::obj::parse_obj`: positions from the `v` lines in file order, the file
//! validated by `tobj`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::{Parser, ValueEnum};
use glam::Vec3;
use sinew_examples::obj::{Obj, parse_obj};
use sinew_jobs::deform::{BakeOptions, Kernel, RbfDeformer, bake};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Mode {
    Interpolate,
    Normalized,
}

#[derive(Parser, Debug)]
#[command(about = "Deform a high-poly OBJ with a low-poly driver by RBF")]
struct Args {
    /// Low-poly driver at rest (OBJ).
    #[arg(long)]
    low_rest: PathBuf,
    /// Low-poly driver posed (same vertex count and order).
    #[arg(long)]
    low_posed: PathBuf,
    /// High-poly mesh at rest (OBJ).
    #[arg(long)]
    high: PathBuf,
    /// Kernel: thin_plate_spline, gaussian, multiquadric, inverse_multiquadric, cubic, wendland.
    #[arg(long, default_value = "thin_plate_spline")]
    kernel: String,
    /// Shape parameter (phi is evaluated at epsilon * r).
    #[arg(long, default_value_t = 1.0)]
    epsilon: f64,
    /// interpolate (scipy RBFInterpolator, degree 1) or normalized (phi / sum phi).
    #[arg(long, value_enum, default_value = "interpolate")]
    mode: Mode,
    /// Keep only the k largest weights per vertex.
    #[arg(long)]
    top_k: Option<usize>,
    /// Drop weights below this magnitude.
    #[arg(long, default_value_t = 0.0)]
    threshold: f32,
    /// Output OBJ.
    #[arg(long)]
    out: PathBuf,
    /// Also deform on the GPU and report the largest difference to the CPU result.
    #[arg(long)]
    gpu: bool,
}

fn load_obj(path: &Path) -> Result<Obj, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_obj(text, &path.display().to_string())
}

fn write_obj(path: &Path, template: &str, positions: &[Vec3]) -> Result<(), String> {
    let mut s = String::with_capacity(template.len() + positions.len() * 40);
    s.push_str("# deformed by sinew rbf example\n");
    for p in positions {
        s.push_str(&format!("v {} {} {}\n", p.x, p.y, p.z));
    }
    for line in template.lines() {
        if line.split_whitespace().next() == Some("v") {
            continue;
        }
        s.push_str(line);
        s.push('\n');
    }
    std::fs::write(path, s).map_err(|e| format!("{}: {e}", path.display()))
}

fn run(args: &Args) -> Result<(), String> {
    let low_rest = load_obj(&args.low_rest)?;
    let low_posed = load_obj(&args.low_posed)?;
    let high = load_obj(&args.high)?;
    let kernel: Kernel = args.kernel.parse().map_err(|e| format!("{e}"))?;
    let mut opts = match args.mode {
        Mode::Interpolate => BakeOptions::interpolate(kernel, args.epsilon),
        Mode::Normalized => BakeOptions::normalized(args.epsilon).with_kernel(kernel),
    };
    opts.top_k = args.top_k;
    opts.threshold = args.threshold;
    let t = Instant::now();
    let binding =
        Arc::new(bake(&low_rest.positions, &high.positions, &opts).map_err(|e| e.to_string())?);
    let bake_ms = t.elapsed().as_secs_f64() * 1e3;
    let r = binding.report();
    println!(
        "bake: {:?} {} eps={} | {} controls, {} vertices | {:?}, nnz {}, dropped mass {:.3e} (max row {:.3e}) | system {} ({} nnz, {}, pivot ratio {:.3e}) | {bake_ms:.1} ms",
        opts.mode,
        kernel,
        opts.epsilon,
        r.n_ctrl,
        r.n_high,
        r.representation,
        r.nnz,
        r.dropped_mass,
        r.max_row_dropped_fraction,
        r.system_size,
        r.system_nnz,
        r.solver,
        r.pivot_ratio
    );
    let mut deformer = RbfDeformer::new(binding.clone());
    let mut out = vec![Vec3::ZERO; high.positions.len()];
    let t = Instant::now();
    deformer
        .deform(&low_posed.positions, &mut out)
        .map_err(|e| e.to_string())?;
    println!("deform (cpu): {:.3} ms", t.elapsed().as_secs_f64() * 1e3);
    if args.gpu {
        let ctx = sinew_gpu::context::GpuContext::new().map_err(|e| e.to_string())?;
        let mut g =
            sinew_gpu::rbf::GpuRbfDeformer::new(&ctx, &binding).map_err(|e| e.to_string())?;
        let sub = g
            .deform(&ctx, &low_posed.positions)
            .map_err(|e| e.to_string())?;
        g.wait(&ctx, sub).map_err(|e| e.to_string())?;
        let gpu = g.read_back(&ctx).map_err(|e| e.to_string())?;
        let max = gpu
            .iter()
            .zip(&out)
            .map(|(a, b)| (*a - *b).length() / b.length().max(1e-6))
            .fold(0.0f32, f32::max);
        println!(
            "gpu ({}): max relative difference to cpu {max:.3e}",
            ctx.adapter_info.name
        );
    }
    write_obj(&args.out, &high.text, &out)?;
    println!("wrote {}", args.out.display());
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
