//! WORKLOAD.md through sinew's full graph: `--n N --threads T [--variant layered]
//! [--grain G]` prints one line with `ns/joint=<median>` and the checksums at frames 0 and 100.

use clap::Parser;
use sinew_examples::workload::{
    FoxAssets, Variant, WorkloadConfig, checksums, load_fox, run_frame, setup_with,
};
use sinew_jobs::pipeline::DEFAULT_GRAIN;
use sinew_jobs::pipeline::PoseChain;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(name = "workload", about = "The ozz comparison workload on Fox.glb")]
struct Args {
    /// Characters.
    #[arg(long, default_value_t = 1000)]
    n: usize,
    /// Worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Fox.glb (default: `fixtures/assets/gltf/Fox.glb` of the repository).
    #[arg(long)]
    fox: Option<PathBuf>,
    /// Timed runs (each at least 100 ms).
    #[arg(long, default_value_t = 10)]
    runs: usize,
    /// How jobs 4, 6, 7 and 9 run: `fused` (the default pipeline: model matrices not kept,
    /// so their checksum comes from four characters run with them kept, on the same frames),
    /// `fused-keep-model` or `staged` (four nodes with frame buffers between them).
    #[arg(long, default_value = "fused")]
    pose_chain: String,
    /// `basic` (Walk·0.7 + Run·0.3) or `layered` (plus Survey on a masked second layer).
    #[arg(long, default_value = "basic")]
    variant: String,
    /// Entities per rayon task in the pose chain (`PipelineConfig::grain`).
    #[arg(long, default_value_t = DEFAULT_GRAIN)]
    grain: usize,
    /// Also print each node's median time per frame over the timed runs.
    #[arg(long)]
    jobs: bool,
}

fn main() -> ExitCode {
    let args: Args = match sinew_examples::cli::parse_args("workload") {
        Ok(a) => a,
        Err(code) => return code,
    };
    match run(&args) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("workload: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<String, String> {
    if args.n == 0 || args.runs == 0 || args.grain == 0 {
        return Err("--n, --runs and --grain must be at least 1".into());
    }
    let variant = match args.variant.as_str() {
        "basic" => Variant::Basic,
        "layered" => Variant::Layered,
        other => return Err(format!("--variant must be basic or layered, not '{other}'")),
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads)
        .build()
        .map_err(|e| e.to_string())?;
    let pose_chain = match args.pose_chain.as_str() {
        "fused" => PoseChain::default(),
        "fused-keep-model" => PoseChain::FUSED_KEEPING_MODEL_POSES,
        "staged" => PoseChain::Staged,
        other => {
            return Err(format!(
                "--pose-chain must be fused, fused-keep-model or staged, not '{other}'"
            ));
        }
    };
    let config = WorkloadConfig {
        variant,
        pose_chain,
        grain: args.grain,
    };
    pool.install(|| {
        let fox_path = match &args.fox {
            Some(p) => p.clone(),
            None => sinew_fixtures::asset_path("gltf/Fox.glb").map_err(|e| e.to_string())?,
        };
        let fox = load_fox(&fox_path)?;
        let (mut store, mut animator) = setup_with(&fox, args.n, config)?;
        let joints = fox.mesh.bone_count();
        let mut palette = vec![[0.0f32; 12]; args.n * joints];
        let mut f = 0u64;
        // Frames 0..=100 (checksums), then warm-up to at least 300 ms.
        run_frame(&mut store, &mut animator, f, &mut palette)?;
        let c0 = checksums(&store, &fox, &palette);
        let warm = Instant::now();
        while f < 100 {
            f += 1;
            run_frame(&mut store, &mut animator, f, &mut palette)?;
        }
        let c100 = checksums(&store, &fox, &palette);
        // Without kept model matrices, their sums come from four characters run with them kept.
        let (c0, c100) = match (c0, c100) {
            ((p0, Some(m0)), (p100, Some(m100))) => ((p0, m0), (p100, m100)),
            ((p0, _), (p100, _)) => {
                let (m0, m100) = model_sums_kept(&fox, config)?;
                ((p0, m0), (p100, m100))
            }
        };
        while warm.elapsed() < Duration::from_millis(300) {
            f += 1;
            run_frame(&mut store, &mut animator, f, &mut palette)?;
        }
        // Timed runs: each at least 100 ms of whole frames; per-run mean frame time.
        let mut per_frame = Vec::with_capacity(args.runs);
        let mut node_times: Vec<Vec<f64>> = vec![Vec::new(); animator.timings().len()];
        for _ in 0..args.runs {
            let t = Instant::now();
            let mut frames = 0u32;
            while t.elapsed() < Duration::from_millis(100) {
                f += 1;
                run_frame(&mut store, &mut animator, f, &mut palette)?;
                frames += 1;
                if args.jobs {
                    for (v, t) in node_times.iter_mut().zip(animator.timings()) {
                        v.push(t.duration.as_secs_f64());
                    }
                }
            }
            per_frame.push(t.elapsed().as_secs_f64() / f64::from(frames));
        }
        per_frame.sort_by(f64::total_cmp);
        let per_joint = |s: f64| s * 1e9 / (args.n * joints) as f64;
        let med = per_frame[per_frame.len() / 2];
        let (lo, hi) = (per_joint(per_frame[0]), per_joint(per_frame[per_frame.len() - 1]));
        let mut line = format!(
            "ns/joint={:.2} spread=[{lo:.2}, {hi:.2}] variant={} n={} threads={} grain={} joints={joints} chars_per_60hz_frame={:.0} checksum_f0=({:.3}, {:.2}) checksum_f100=({:.3}, {:.2})",
            per_joint(med),
            args.variant,
            args.n,
            rayon::current_num_threads(),
            args.grain,
            args.n as f64 * (1.0 / 60.0) / med,
            c0.0, c0.1, c100.0, c100.1
        );
        if args.jobs {
            for (timing, mut v) in animator.timings().iter().zip(node_times) {
                v.sort_by(f64::total_cmp);
                let m = v.get(v.len() / 2).copied().unwrap_or(0.0);
                line += &format!("\n  {:<24} {:>9.1} us  {:>6.2} ns/joint", timing.name, m * 1e6, per_joint(m));
            }
        }
        Ok(line)
    })
}

/// The model-matrix checksums at frames 0 and 100 from four characters of the same variant
/// run with model matrices kept.
fn model_sums_kept(fox: &FoxAssets, config: WorkloadConfig) -> Result<(f64, f64), String> {
    let config = WorkloadConfig {
        pose_chain: PoseChain::FUSED_KEEPING_MODEL_POSES,
        ..config
    };
    let (mut store, mut animator) = setup_with(fox, 4, config)?;
    let mut palette = vec![[0.0f32; 12]; 4 * fox.mesh.bone_count()];
    let mut sums = [0.0; 2];
    for f in 0..=100 {
        run_frame(&mut store, &mut animator, f, &mut palette)?;
        if f % 100 == 0 {
            sums[(f / 100) as usize] = checksums(&store, fox, &palette).1.unwrap_or(f64::NAN);
        }
    }
    Ok((sums[0], sums[1]))
}
