//! The nine-job graph on crowds of the built-in character (45 bones, walk/run blend, additive
//! breathing, masked wave on every third): the whole frame, and each job measured in place
//! (criterion's time for one job = the sum of that node's own durations over the frames it ran),
//! at 1, 100, 1 000, 10 000 and 100 000 characters.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::AssetRegistry;
use sinew_jobs::builtin::{self, BakedCharacter};
use sinew_runtime::store::Store;
use std::time::{Duration, Instant};

const SIZES: [usize; 5] = [1, 100, 1_000, 10_000, 100_000];
const DT: f32 = 1.0 / 60.0;

fn crowd(c: &BakedCharacter, n: usize) -> (Store, Animator, Vec<[f32; 12]>) {
    let mut store = Store::new();
    store
        .spawn_batch((0..n).map(|i| c.crowd_member(i)))
        .expect("spawn");
    let mut animator = Animator::new(&mut store).expect("graph");
    let mut palette = vec![[0.0f32; 12]; n * c.mesh.bone_count()];
    animator
        .run_frame_into(&mut store, DT, &mut palette)
        .expect("frame");
    (store, animator, palette)
}

fn bench(cr: &mut Criterion) {
    let c = builtin::bake_character(&AssetRegistry::new()).expect("bake");
    let bones = c.rig.bone_count() as u64;
    let node_names: Vec<String> = {
        let (_, a, _) = crowd(&c, 1);
        a.timings().iter().map(|t| t.name.clone()).collect()
    };
    let mut group = cr.benchmark_group("graph");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for &n in &SIZES {
        let (mut store, mut animator, mut palette) = crowd(&c, n);
        group.throughput(Throughput::Elements(n as u64 * bones));
        group.bench_with_input(BenchmarkId::new("frame", n), &n, |b, _| {
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
    for &n in &SIZES[..4] {
        let (mut store, mut animator, mut palette) = crowd(&c, n);
        group.throughput(Throughput::Elements(n as u64 * bones));
        for (k, name) in node_names.iter().enumerate() {
            group.bench_with_input(BenchmarkId::new(name.as_str(), n), &n, |b, _| {
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
        let (mut store, mut animator, mut palette) = pool.install(|| crowd(&c, 10_000));
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
