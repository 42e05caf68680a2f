//! The nine-job graph on crowds of the built-in character (45 bones, walk/run blend, additive
//! breathing, masked wave on every third): the whole frame with jobs 4, 6, 7 and 9 fused (the
//! default) and staged (the baseline), and each node measured in place in both modes
//! (criterion's time for one node = the sum of that node's own durations over the frames it
//! ran; staged, every one of the nine jobs is its own node), at 1, 100, 1 000, 10 000 and
//! 100 000 characters.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sinew_fixtures::builtin::{self, BakedCharacter};
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::AssetRegistry;
use sinew_jobs::pipeline::{PipelineConfig, PoseChain};
use sinew_runtime::store::Store;
use std::time::{Duration, Instant};

const SIZES: [usize; 5] = [1, 100, 1_000, 10_000, 100_000];
const DT: f32 = 1.0 / 60.0;

fn crowd(c: &BakedCharacter, n: usize, pose_chain: PoseChain) -> (Store, Animator, Vec<[f32; 12]>) {
    let mut store = Store::new();
    store
        .spawn_batch((0..n).map(|i| c.crowd_member(i)))
        .expect("spawn");
    let config = PipelineConfig {
        pose_chain,
        ..PipelineConfig::default()
    };
    let mut animator = Animator::with(&mut store, config, |_, _| {}).expect("graph");
    let mut palette = vec![[0.0f32; 12]; n * c.mesh.bone_count()];
    animator
        .run_frame_into(&mut store, DT, &mut palette)
        .expect("frame");
    (store, animator, palette)
}

fn bench(cr: &mut Criterion) {
    let c = builtin::bake_character(&AssetRegistry::new()).expect("bake");
    let bones = c.rig.bone_count() as u64;
    const MODES: [(&str, PoseChain); 2] = [
        (
            "fused",
            PoseChain::Fused {
                keep_model_poses: false,
            },
        ),
        ("staged", PoseChain::Staged),
    ];
    let mut group = cr.benchmark_group("graph");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for (n, (mode, pose_chain)) in SIZES.into_iter().flat_map(|n| MODES.map(|m| (n, m))) {
        let (mut store, mut animator, mut palette) = crowd(&c, n, pose_chain);
        group.throughput(Throughput::Elements(n as u64 * bones));
        group.bench_with_input(BenchmarkId::new(format!("frame/{mode}"), n), &n, |b, _| {
            b.iter(|| {
                animator
                    .run_frame_into(&mut store, DT, &mut palette)
                    .expect("frame")
            })
        });
    }
    group.finish();

    let mut group = cr.benchmark_group("job");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(1));
    for (n, (mode, pose_chain)) in SIZES[..4].iter().flat_map(|&n| MODES.map(|m| (n, m))) {
        let (mut store, mut animator, mut palette) = crowd(&c, n, pose_chain);
        let node_names: Vec<String> = animator.timings().iter().map(|t| t.name.clone()).collect();
        group.throughput(Throughput::Elements(n as u64 * bones));
        for (k, name) in node_names.iter().enumerate() {
            let id = BenchmarkId::new(format!("{mode}/{name}"), n);
            group.bench_with_input(id, &n, |b, _| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        animator
                            .run_frame_into(&mut store, DT, &mut palette)
                            .expect("frame");
                        total += animator
                            .timings()
                            .get(k)
                            .map_or(Duration::ZERO, |t| t.duration);
                    }
                    total
                })
            });
        }
    }
    group.finish();

    // The whole frame at 10 000 characters on 1 and 2 threads (thread scaling).
    let mut group = cr.benchmark_group("threads");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for threads in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        let (mut store, mut animator, mut palette) =
            pool.install(|| crowd(&c, 10_000, PoseChain::default()));
        group.bench_with_input(BenchmarkId::new("frame_10k", threads), &threads, |b, _| {
            b.iter_custom(|iters| {
                pool.install(|| {
                    let t = Instant::now();
                    for _ in 0..iters {
                        animator
                            .run_frame_into(&mut store, DT, &mut palette)
                            .expect("frame");
                    }
                    t.elapsed()
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
