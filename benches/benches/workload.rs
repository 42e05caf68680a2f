//! The peers' benchmark workload (`docs/WORKLOAD.md`) through the full graph on Fox.glb: criterion time per frame for
//! N = 1, 100, 1 000, 10 000 on 1 and 2 threads, with jobs 4, 6, 7 and 9 fused (the default)
//! and staged (the baseline, four nodes with frame buffers between them), then a table of
//! ns/joint and the checksums; then the group `grain`: the fused frame at N = 100 and 10 000
//! on 2 threads for grains of 1, 4, 16, 64 and 256 entities per task
//! (`PipelineConfig::grain`), basic and layered.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use sinew_examples::workload::{
    Variant, WorkloadConfig, checksums, load_fox, run_frame, setup, setup_with,
};
use sinew_jobs::pipeline::PoseChain;
use std::time::{Duration, Instant};

fn bench(c: &mut Criterion) {
    let fox_path = sinew_fixtures::asset_path("gltf/Fox.glb").expect("Fox.glb");
    let fox = load_fox(&fox_path).expect("Fox.glb");
    let joints = fox.mesh.bone_count();
    let mut lines = Vec::new();
    let mut group = c.benchmark_group("workload");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for threads in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        for (n, (mode, pose_chain)) in [1usize, 100, 1_000, 10_000].into_iter().flat_map(|n| {
            [
                ("staged", PoseChain::Staged),
                ("fused", PoseChain::default()),
            ]
            .map(|m| (n, m))
        }) {
            let (mut store, mut animator) =
                pool.install(|| setup(&fox, n, pose_chain)).expect("setup");
            let mut palette = vec![[0.0f32; 12]; n * joints];
            let mut f = 0u64;
            pool.install(|| run_frame(&mut store, &mut animator, f, &mut palette))
                .expect("frame");
            let c0 = checksums(&store, &fox, &palette);
            while f < 100 {
                f += 1;
                pool.install(|| run_frame(&mut store, &mut animator, f, &mut palette))
                    .expect("frame");
            }
            let c100 = checksums(&store, &fox, &palette);
            let mut per_frame = Duration::ZERO;
            let id = BenchmarkId::new(format!("{mode}/{threads}t"), n);
            group.bench_with_input(id, &n, |b, _| {
                b.iter_custom(|iters| {
                    let t = Instant::now();
                    pool.install(|| {
                        for _ in 0..iters {
                            f += 1;
                            run_frame(&mut store, &mut animator, f, &mut palette).expect("frame");
                        }
                    });
                    let e = t.elapsed();
                    per_frame = e / iters.max(1) as u32;
                    e
                })
            });
            lines.push(format!(
                "{mode} threads={threads} n={n}: last-sample ns/joint={:.2}  checksum_f0=({:.3}, {:.2}) checksum_f100=({:.3}, {:.2})",
                per_frame.as_secs_f64() * 1e9 / (n * joints) as f64,
                c0.0, c0.1.unwrap_or(f64::NAN), c100.0, c100.1.unwrap_or(f64::NAN)
            ));
        }
    }
    group.finish();
    for l in lines {
        println!("{l}");
    }

    let mut group = c.benchmark_group("grain");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("pool");
    for (variant, name) in [(Variant::Basic, "basic"), (Variant::Layered, "layered")] {
        for n in [100usize, 10_000] {
            for grain in [1usize, 4, 16, 64, 256] {
                let config = WorkloadConfig {
                    variant,
                    grain,
                    ..WorkloadConfig::default()
                };
                let (mut store, mut animator) =
                    pool.install(|| setup_with(&fox, n, config)).expect("setup");
                let mut palette = vec![[0.0f32; 12]; n * joints];
                let mut f = 0u64;
                let id = BenchmarkId::new(format!("{name}/2t/n={n}"), grain);
                group.bench_with_input(id, &grain, |b, _| {
                    b.iter(|| {
                        f += 1;
                        pool.install(|| run_frame(&mut store, &mut animator, f, &mut palette))
                            .expect("frame")
                    })
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
