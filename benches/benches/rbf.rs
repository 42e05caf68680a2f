//! RBF deformation benchmarks: bake time; per-frame deform time of the sparse (CSR) path for
//! 10k / 100k / 1M high vertices × 100 / 1k / 5k controls with 16 weights per vertex, on rayon
//! pools of 1 and 2 threads, against a dense `W · Δ` mat-vec baseline in the same run; and the
//! GPU compute path (queue submit + blocking poll, displacement upload included).
//!
//! Meshes: Fibonacci spheres (consecutive vertices are spatial neighbours, like a real mesh's
//! vertex order). The 16 weights per vertex come from a normalized Wendland bake whose support
//! holds about 32 controls, pruned to the top 16 (`BakeOptions::with_top_k(16)`).
//!
//! The dense baseline stores `n_high × n_ctrl` f32 and is skipped above [`DENSE_BENCH_BUDGET`]
//! (1M × 1k = 4 GB and 1M × 5k = 20 GB), which would not fit next to the other engineers' jobs
//! on this 23 GB machine.

use std::f32::consts::PI;
use std::fmt::Display;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group, criterion_main};
use glam::Vec3;
use rayon::prelude::*;
use sinew_jobs::deform::{BakeOptions, Kernel, RbfBinding, RbfDeformer, SimdMode, bake};

/// Largest dense table the baseline allocates (bytes).
const DENSE_BENCH_BUDGET: usize = 2 << 30;
const WEIGHTS_PER_VERTEX: usize = 16;
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
    THREADS
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
            1_000,
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

fn bench_gpu(c: &mut Criterion) {
    let Some(ctx) = ok(sinew_gpu::context::GpuContext::new(), "GPU benches") else {
        return;
    };
    eprintln!(
        "rbf bench: GPU adapter {} ({:?})",
        ctx.adapter_info.name, ctx.adapter_info.device_type
    );
    let mut group = c.benchmark_group("rbf_gpu");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    group.sampling_mode(SamplingMode::Flat);
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
        group.bench_function(
            BenchmarkId::new("sparse16_submit_wait", format!("{n_high}x1000")),
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
