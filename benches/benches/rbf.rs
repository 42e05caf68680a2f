//! RBF deformation benchmarks: bake time; per-frame deform time for 10k / 100k / 1M high
//! vertices × 100 / 1k / 5k controls with 16 weights per vertex, on rayon pools of 1 and 2
//! threads (`SINEW_RBF_THREADS=1,2,4,8,16` for others): the fixed-width blocked layout
//! (`fixed16`, [`WeightLayout::Auto`]) against the CSR reference (`sparse16_f32x4`, and
//! `sparse16_scalar` at 1k controls) and a dense `W · Δ` mat-vec baseline, all in the same group
//! of the same run; and the GPU compute path for 10k / 100k / 1M × 16 weights (1k controls):
//! `kernel_timestamp` (GPU time of the compute pass from timestamp queries, when the device has
//! them), `dispatch_submit_wait` (encode + submit + blocking poll, no upload) and
//! `upload_submit_wait` (displacement upload + the same).
//!
//! Meshes: Fibonacci spheres (consecutive vertices are spatial neighbours, like a real mesh's
//! vertex order). The 16 weights per vertex come from a normalized Wendland bake whose support
//! holds about 32 controls, pruned to the top 16 (`BakeOptions::with_top_k(16)`).
//!
//! The dense baseline stores `n_high × n_ctrl` f32 and is skipped above [`DENSE_BENCH_BUDGET`]
//! (1M × 1k = 4 GB and 1M × 5k = 20 GB), which would not fit next to the other engineers' jobs
//! on this 23 GB machine.
//!
//! The thin-plate interpolation bake runs at 10k × 100 and 10k × 300 (a 10k × 1k dense solve
//! takes 5–8 s per iteration, which made the whole bench run far over 5 minutes).

use std::f32::consts::PI;
use std::fmt::Display;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group, criterion_main};
use glam::Vec3;
use rayon::prelude::*;
use sinew_jobs::deform::{
    BakeOptions, Kernel, RbfBinding, RbfDeformer, SimdMode, WeightLayout, bake,
};

/// Largest dense table the baseline allocates (bytes).
const DENSE_BENCH_BUDGET: usize = 2 << 30;
const WEIGHTS_PER_VERTEX: usize = 16;
/// Thread counts of the rayon pools, unless `SINEW_RBF_THREADS` lists others.
const THREADS: [usize; 2] = [1, 2];

fn fibonacci_sphere(n: usize, radius: f32, twist: f32) -> Vec<Vec3> {
    let golden = PI * (3.0 - 5.0f32.sqrt());
    (0..n)
        .map(|i| {
            let y = 1.0 - 2.0 * (i as f32 + 0.5) / n as f32;
            let r = (1.0 - y * y).max(0.0).sqrt();
            let t = golden * i as f32 + twist;
            Vec3::new(r * t.cos(), y, r * t.sin()) * radius
        })
        .collect()
}

fn ok<T, E: Display>(r: Result<T, E>, what: &str) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            eprintln!("rbf bench: skipping {what}: {e}");
            None
        }
    }
}

/// Normalized Wendland weights, support holding ~32 controls on the unit sphere, top 16 kept.
fn sparse_binding(n_high: usize, n_ctrl: usize) -> Option<RbfBinding> {
    let low = fibonacci_sphere(n_ctrl, 1.0, 0.1);
    let high = fibonacci_sphere(n_high, 1.0, 0.0);
    // π R² ≈ 32 · 4π / n_ctrl on the unit sphere
    let radius = (128.0 / n_ctrl as f64).sqrt();
    let opts = BakeOptions::normalized(1.0 / radius)
        .with_kernel(Kernel::Wendland)
        .with_top_k(WEIGHTS_PER_VERTEX);
    ok(bake(&low, &high, &opts), "sparse bake")
}

fn posed(binding: &RbfBinding) -> Vec<Vec3> {
    binding
        .low_rest()
        .iter()
        .map(|p| *p + Vec3::new(0.1 * p.y, 0.05 * p.x * p.z, -0.1 * p.x))
        .collect()
}

/// Dense baseline: `W` row-major `n_high × n_ctrl`, displacements as SoA so the inner loop
/// vectorises.
struct Dense {
    n_ctrl: usize,
    w: Vec<f32>,
    dx: Vec<f32>,
    dy: Vec<f32>,
    dz: Vec<f32>,
}

impl Dense {
    fn from_binding(b: &RbfBinding) -> Option<Self> {
        let w = b.weights()?;
        let n_ctrl = w.n_cols();
        let bytes = w.n_rows() * n_ctrl * 4;
        if bytes > DENSE_BENCH_BUDGET {
            eprintln!(
                "rbf bench: dense baseline {}x{n_ctrl} skipped ({bytes} bytes > {DENSE_BENCH_BUDGET})",
                w.n_rows()
            );
            return None;
        }
        let mut dense = vec![0.0f32; w.n_rows() * n_ctrl];
        dense
            .par_chunks_mut(n_ctrl)
            .enumerate()
            .for_each(|(i, row)| {
                for (j, x) in w.row(i) {
                    row[j] = x;
                }
            });
        Some(Self {
            n_ctrl,
            w: dense,
            dx: vec![0.0; n_ctrl],
            dy: vec![0.0; n_ctrl],
            dz: vec![0.0; n_ctrl],
        })
    }

    fn deform(&mut self, low_rest: &[Vec3], low_now: &[Vec3], rest: &[Vec3], out: &mut [Vec3]) {
        for (j, (n, r)) in low_now.iter().zip(low_rest).enumerate() {
            let d = *n - *r;
            (self.dx[j], self.dy[j], self.dz[j]) = (d.x, d.y, d.z);
        }
        let (w, dx, dy, dz, n) = (&self.w, &self.dx, &self.dy, &self.dz, self.n_ctrl);
        out.par_iter_mut()
            .zip(rest)
            .enumerate()
            .with_min_len(256)
            .for_each(|(i, (o, r))| {
                let row = &w[i * n..(i + 1) * n];
                let (mut x, mut y, mut z) = (0.0f32, 0.0f32, 0.0f32);
                for j in 0..n {
                    x += row[j] * dx[j];
                    y += row[j] * dy[j];
                    z += row[j] * dz[j];
                }
                *o = *r + Vec3::new(x, y, z);
            });
    }
}

fn pools() -> Vec<(usize, rayon::ThreadPool)> {
    let threads: Vec<usize> = std::env::var("SINEW_RBF_THREADS")
        .ok()
        .map(|v| v.split(',').filter_map(|t| t.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| THREADS.to_vec());
    threads
        .iter()
        .filter_map(|&t| {
            ok(
                rayon::ThreadPoolBuilder::new().num_threads(t).build(),
                "thread pool",
            )
            .map(|p| (t, p))
        })
        .collect()
}

fn bench_deform(c: &mut Criterion) {
    let pools = pools();
    let mut group = c.benchmark_group("rbf_deform");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    group.sampling_mode(SamplingMode::Flat);
    for n_high in [10_000usize, 100_000, 1_000_000] {
        for n_ctrl in [100usize, 1_000, 5_000] {
            let Some(binding) = sparse_binding(n_high, n_ctrl) else {
                continue;
            };
            let binding = Arc::new(binding);
            let low_now = posed(&binding);
            let size = format!("{n_high}x{n_ctrl}");
            let mut out = vec![Vec3::ZERO; n_high];
            let mut dense = Dense::from_binding(&binding);
            for (t, pool) in &pools {
                let mut fixed = RbfDeformer::new(binding.clone());
                if fixed.uses_fixed_layout() {
                    group.bench_function(BenchmarkId::new(format!("fixed16/t{t}"), &size), |b| {
                        pool.install(|| b.iter(|| fixed.deform(&low_now, &mut out)))
                    });
                } else {
                    eprintln!("rbf bench: {size} has no fixed-width table");
                }
                let modes: &[(SimdMode, &str)] = if n_ctrl == 1_000 {
                    &[
                        (SimdMode::F32x4, "sparse16_f32x4"),
                        (SimdMode::Scalar, "sparse16_scalar"),
                    ]
                } else {
                    &[(SimdMode::F32x4, "sparse16_f32x4")]
                };
                for &(mode, name) in modes {
                    let mut d = RbfDeformer::new(binding.clone());
                    d.set_layout(WeightLayout::Csr);
                    d.set_simd(mode);
                    group.bench_function(BenchmarkId::new(format!("{name}/t{t}"), &size), |b| {
                        pool.install(|| b.iter(|| d.deform(&low_now, &mut out)))
                    });
                }
                if let Some(dense) = dense.as_mut() {
                    let (lr, hr) = (binding.low_rest(), binding.high_rest());
                    group.bench_function(BenchmarkId::new(format!("dense/t{t}"), &size), |b| {
                        pool.install(|| b.iter(|| dense.deform(lr, &low_now, hr, &mut out)))
                    });
                }
            }
        }
    }
    group.finish();
}

fn bench_bake(c: &mut Criterion) {
    let pools = pools();
    let mut group = c.benchmark_group("rbf_bake");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(2));
    group.sampling_mode(SamplingMode::Flat);
    let cases: [(&str, usize, usize, BakeOptions); 4] = [
        (
            "interpolate_tps",
            10_000,
            100,
            BakeOptions::interpolate(Kernel::ThinPlateSpline, 1.0),
        ),
        (
            "interpolate_tps",
            10_000,
            300,
            BakeOptions::interpolate(Kernel::ThinPlateSpline, 1.0),
        ),
        (
            "interpolate_wendland",
            10_000,
            1_000,
            BakeOptions::interpolate(Kernel::Wendland, 1.0 / (256.0f64 / 1000.0).sqrt()),
        ),
        (
            "normalized_gaussian_top16",
            100_000,
            1_000,
            BakeOptions::normalized(10.0).with_top_k(16),
        ),
    ];
    for (name, n_high, n_ctrl, opts) in cases {
        let low = fibonacci_sphere(n_ctrl, 1.0, 0.1);
        let high = fibonacci_sphere(n_high, 1.0, 0.0);
        for (t, pool) in &pools {
            group.bench_function(
                BenchmarkId::new(format!("{name}/t{t}"), format!("{n_high}x{n_ctrl}")),
                |b| pool.install(|| b.iter(|| bake(&low, &high, &opts).map(|b| b.report().nnz))),
            );
        }
    }
    group.finish();
}

/// GPU time of `iters` deformation passes, from timestamp queries around each pass (batches of
/// [`TIMED_BATCH`] passes per submit), or `None` when a read-back fails.
fn gpu_kernel_time(
    ctx: &sinew_gpu::context::GpuContext,
    g: &sinew_gpu::rbf::GpuRbfDeformer,
    queries: &wgpu::QuerySet,
    resolve: &wgpu::Buffer,
    iters: u64,
) -> Option<Duration> {
    let period_ns = f64::from(ctx.queue.get_timestamp_period());
    let mut total_ns = 0.0f64;
    let mut left = iters;
    while left > 0 {
        let n = left.min(u64::from(TIMED_BATCH)) as u32;
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        for p in 0..n {
            g.encode_timed(
                &mut enc,
                Some(wgpu::ComputePassTimestampWrites {
                    query_set: queries,
                    beginning_of_pass_write_index: Some(2 * p),
                    end_of_pass_write_index: Some(2 * p + 1),
                }),
            );
        }
        enc.resolve_query_set(queries, 0..2 * n, resolve, 0);
        let raw = ok(
            sinew_gpu::skin_pass::read_buffer_bytes(ctx, enc, resolve, u64::from(2 * n) * 8),
            "timestamp read-back",
        )?;
        let ts: Vec<u64> = raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect();
        for pair in ts.chunks_exact(2) {
            total_ns += pair[1].saturating_sub(pair[0]) as f64 * period_ns;
        }
        left -= u64::from(n);
    }
    Some(Duration::from_nanos(total_ns as u64))
}

/// Passes per submit in [`gpu_kernel_time`].
const TIMED_BATCH: u32 = 64;

fn bench_gpu(c: &mut Criterion) {
    let Some(ctx) = ok(sinew_gpu::context::GpuContext::new(), "GPU benches") else {
        return;
    };
    let timestamps = ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY);
    eprintln!(
        "rbf bench: GPU adapter {} ({:?}, {:?}), timestamp queries: {timestamps}",
        ctx.adapter_info.name, ctx.adapter_info.backend, ctx.adapter_info.device_type
    );
    let mut group = c.benchmark_group("rbf_gpu");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    group.sampling_mode(SamplingMode::Flat);
    let queries = timestamps.then(|| {
        let qs = ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("rbf bench timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: 2 * TIMED_BATCH,
        });
        let resolve = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("rbf bench timestamps resolve"),
            size: u64::from(2 * TIMED_BATCH) * 8,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        (qs, resolve)
    });
    for n_high in [10_000usize, 100_000, 1_000_000] {
        let Some(binding) = sparse_binding(n_high, 1_000) else {
            continue;
        };
        let low_now = posed(&binding);
        let Some(mut g) = ok(
            sinew_gpu::rbf::GpuRbfDeformer::new(&ctx, &binding),
            "GPU deformer",
        ) else {
            continue;
        };
        let size = format!("{n_high}x1000");
        // One full frame first, so that the displacements on the GPU are this pose's.
        let ready = match g.deform(&ctx, &low_now) {
            Ok(sub) => g.wait(&ctx, sub).is_ok(),
            Err(_) => false,
        };
        if !ready {
            eprintln!("rbf bench: GPU deform failed at {size}");
            continue;
        }
        if let Some((qs, resolve)) = &queries {
            let g = &g;
            group.bench_function(BenchmarkId::new("sparse16_kernel_timestamp", &size), |b| {
                b.iter_custom(|iters| {
                    gpu_kernel_time(&ctx, g, qs, resolve, iters).unwrap_or(Duration::MAX)
                })
            });
        }
        group.bench_function(
            BenchmarkId::new("sparse16_dispatch_submit_wait", &size),
            |b| {
                b.iter(|| {
                    let mut enc = ctx
                        .device
                        .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
                    g.encode(&mut enc);
                    let sub = ctx.queue.submit([enc.finish()]);
                    g.wait(&ctx, sub).is_ok()
                })
            },
        );
        group.bench_function(
            BenchmarkId::new("sparse16_upload_submit_wait", &size),
            |b| {
                b.iter(|| match g.deform(&ctx, &low_now) {
                    Ok(sub) => g.wait(&ctx, sub).is_ok(),
                    Err(_) => false,
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench_bake, bench_deform, bench_gpu);
criterion_main!(benches);
