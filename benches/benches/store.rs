//! Store benchmarks, side by side with `hecs`:
//! - spawning 100k entities with two components;
//! - iterating 1M entities with two components (`Position += Velocity`), sequentially and in
//!   parallel (sinew: one rayon task per 16 KiB chunk; hecs: `into_iter_batched` batches of the
//!   same row count on rayon).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use glam::Vec3;
use rayon::prelude::*;
use sinew_runtime::store::Store;

#[derive(Clone, Copy, Debug)]
struct Position(Vec3);
#[derive(Clone, Copy, Debug)]
struct Velocity(Vec3);

const SPAWN_N: usize = 100_000;
const ITER_N: usize = 1_000_000;

fn bundle(i: usize) -> (Position, Velocity) {
    let f = i as f32;
    (
        Position(Vec3::new(f, 0.0, -f)),
        Velocity(Vec3::new(0.5, 1.0, 0.25)),
    )
}

fn spawn(c: &mut Criterion) {
    let mut g = c.benchmark_group("spawn_100k");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(4))
        .warm_up_time(Duration::from_secs(1));
    g.bench_function("sinew/spawn_batch", |b| {
        b.iter_with_large_drop(|| {
            let mut s = Store::new();
            s.spawn_batch((0..SPAWN_N).map(bundle)).expect("spawn");
            s
        })
    });
    g.bench_function("hecs/spawn_batch", |b| {
        b.iter_with_large_drop(|| {
            let mut w = hecs::World::new();
            w.spawn_batch((0..SPAWN_N).map(bundle)).for_each(drop);
            w
        })
    });
    g.bench_function("sinew/spawn_one_by_one", |b| {
        b.iter_with_large_drop(|| {
            let mut s = Store::new();
            for i in 0..SPAWN_N {
                black_box(s.spawn(bundle(i)).expect("spawn"));
            }
            s
        })
    });
    g.bench_function("hecs/spawn_one_by_one", |b| {
        b.iter_with_large_drop(|| {
            let mut w = hecs::World::new();
            for i in 0..SPAWN_N {
                black_box(w.spawn(bundle(i)));
            }
            w
        })
    });
    g.finish();
}

fn iterate(c: &mut Criterion) {
    let mut store = Store::new();
    store.spawn_batch((0..ITER_N).map(bundle)).expect("spawn");
    let mut world = hecs::World::new();
    world.spawn_batch((0..ITER_N).map(bundle)).for_each(drop);
    // rows per sinew chunk: 16 KiB / (8 + 12 + 12) bytes
    let rows_per_chunk = 512u32;

    let mut g = c.benchmark_group("iter_1m");
    g.sample_size(30)
        .measurement_time(Duration::from_secs(4))
        .warm_up_time(Duration::from_secs(1));
    g.bench_function("sinew/seq_for_each", |b| {
        b.iter(|| {
            store
                .query::<(&mut Position, &Velocity)>()
                .expect("query")
                .for_each(|_, (p, v)| {
                    p.0 += v.0;
                });
        })
    });
    g.bench_function("sinew/seq_chunks", |b| {
        b.iter(|| {
            store
                .query::<(&mut Position, &Velocity)>()
                .expect("query")
                .for_each_chunk(|c| {
                    let (p, v) = c.into_columns();
                    for (p, v) in p.iter_mut().zip(v) {
                        p.0 += v.0;
                    }
                });
        })
    });
    g.bench_function("hecs/seq", |b| {
        b.iter(|| {
            for (p, v) in world.query_mut::<(&mut Position, &Velocity)>() {
                p.0 += v.0;
            }
        })
    });
    g.bench_function("sinew/par_chunks", |b| {
        b.iter(|| {
            store
                .query::<(&mut Position, &Velocity)>()
                .expect("query")
                .par_for_each_chunk(|c| {
                    let (p, v) = c.into_columns();
                    for (p, v) in p.iter_mut().zip(v) {
                        p.0 += v.0;
                    }
                });
        })
    });
    g.bench_function("sinew/par_for_each", |b| {
        b.iter(|| {
            store
                .query::<(&mut Position, &Velocity)>()
                .expect("query")
                .par_for_each(|_, (p, v)| {
                    p.0 += v.0;
                });
        })
    });
    g.bench_function("hecs/par_batched", |b| {
        b.iter(|| {
            let batches: Vec<_> = world
                .query_mut::<(&mut Position, &Velocity)>()
                .into_iter_batched(rows_per_chunk)
                .collect();
            batches.into_par_iter().for_each(|batch| {
                for (p, v) in batch {
                    p.0 += v.0;
                }
            });
        })
    });
    g.finish();
}

criterion_group!(benches, spawn, iterate);
criterion_main!(benches);
