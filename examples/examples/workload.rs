//! WORKLOAD.md through sinew's full graph: `--n N --threads T` prints one line with
//! `ns/joint=<median>` and the checksums at frames 0 and 100.

use clap::Parser;
use sinew_examples::workload::{checksums, load_fox, run_frame, setup};
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
    /// Fox.glb.
    #[arg(long, default_value = "../shared/assets/gltf/Fox.glb")]
    fox: PathBuf,
    /// Timed runs (each at least 100 ms).
    #[arg(long, default_value_t = 10)]
    runs: usize,
}

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) if e.use_stderr() => {
            eprintln!(
                "workload: {}",
                e.to_string()
                    .lines()
                    .next()
                    .unwrap_or("bad arguments")
                    .trim_start_matches("error: ")
            );
            return ExitCode::from(2);
        }
        Err(e) => {
            print!("{e}");
            return ExitCode::SUCCESS;
        }
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
    if args.n == 0 || args.runs == 0 {
        return Err("--n and --runs must be at least 1".into());
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads)
        .build()
        .map_err(|e| e.to_string())?;
    pool.install(|| {
        let fox = load_fox(&args.fox)?;
        let (mut store, mut animator) = setup(&fox, args.n)?;
        let joints = fox.mesh.bone_count();
        let mut palette = vec![[0.0f32; 12]; args.n * joints];
        let mut f = 0u64;
        // Frames 0..=100 (checksums), then warm-up to at least 300 ms.
        run_frame(&mut store, &mut animator, f, &mut palette)?;
        let c0 = checksums(&store, &fox, &palette);
        let warm = Instant::now();
        while f < 100 || warm.elapsed() < Duration::from_millis(300) {
            f += 1;
            run_frame(&mut store, &mut animator, f, &mut palette)?;
            if f == 100 {
                break;
            }
        }
        let c100 = checksums(&store, &fox, &palette);
        while warm.elapsed() < Duration::from_millis(300) {
            f += 1;
            run_frame(&mut store, &mut animator, f, &mut palette)?;
        }
        // Timed runs: each at least 100 ms of whole frames; per-run mean frame time.
        let mut per_frame = Vec::with_capacity(args.runs);
        for _ in 0..args.runs {
            let t = Instant::now();
            let mut frames = 0u32;
            while t.elapsed() < Duration::from_millis(100) {
                f += 1;
                run_frame(&mut store, &mut animator, f, &mut palette)?;
                frames += 1;
            }
            per_frame.push(t.elapsed().as_secs_f64() / f64::from(frames));
        }
        per_frame.sort_by(f64::total_cmp);
        let med = per_frame[per_frame.len() / 2];
        let ns_joint = med * 1e9 / (args.n * joints) as f64;
        let (lo, hi) = (per_frame[0] * 1e9 / (args.n * joints) as f64, per_frame[per_frame.len() - 1] * 1e9 / (args.n * joints) as f64);
        Ok(format!(
            "ns/joint={ns_joint:.2} spread=[{lo:.2}, {hi:.2}] n={} threads={} joints={joints} chars_per_60hz_frame={:.0} checksum_f0=({:.3}, {:.2}) checksum_f100=({:.3}, {:.2})",
            args.n,
            rayon::current_num_threads(),
            args.n as f64 * (1.0 / 60.0) / med,
            c0.0, c0.1, c100.0, c100.1
        ))
    })
}
