//! The WGSL RBF path against the CPU deformer, on a real adapter (lavapipe in CI).
#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside #[test] functions

mod common;

use common::context;
use std::sync::Arc;

use glam::Vec3;
use sinew_gpu::context::{GpuContext, GpuError};
use sinew_gpu::rbf::GpuRbfDeformer;
use sinew_jobs::deform::{BakeOptions, Kernel, RbfBinding, RbfDeformer, bake};

fn cloud(n: usize, seed: u64) -> Vec<Vec3> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        ((s >> 11) as f64 / (1u64 << 53) as f64) as f32 * 2.0 - 1.0
    };
    (0..n).map(|_| Vec3::new(next(), next(), next())).collect()
}

fn max_rel(gpu: &[Vec3], cpu: &[Vec3]) -> f32 {
    assert_eq!(gpu.len(), cpu.len());
    gpu.iter()
        .zip(cpu)
        .map(|(g, c)| (*g - *c).length() / c.length().max(1.0))
        .fold(0.0, f32::max)
}

fn check(ctx: &GpuContext, binding: RbfBinding, frames: &[Vec<Vec3>]) -> f32 {
    let binding = Arc::new(binding);
    let mut cpu = RbfDeformer::new(binding.clone());
    let mut gpu = GpuRbfDeformer::new(ctx, &binding).unwrap();
    let mut out = vec![Vec3::ZERO; cpu.n_high()];
    let mut worst = 0.0f32;
    for low_now in frames {
        cpu.deform(low_now, &mut out).unwrap();
        let sub = gpu.deform(ctx, low_now).unwrap();
        gpu.wait(ctx, sub).unwrap();
        let got = gpu.read_back(ctx).unwrap();
        worst = worst.max(max_rel(&got, &out));
        // the GPU really moved the vertices (rest positions are not the answer)
        let moved = out
            .iter()
            .zip(binding.high_rest())
            .any(|(o, r)| (*o - *r).length() > 1e-3);
        assert!(moved);
    }
    worst
}

#[test]
fn gpu_matches_cpu_for_normalized_and_interpolate_bindings() {
    let Some(ctx) = context() else { return };
    eprintln!(
        "adapter: {} ({:?}, {:?})",
        ctx.adapter_info.name, ctx.adapter_info.backend, ctx.adapter_info.device_type
    );
    let low = cloud(120, 1);
    let high = cloud(20_000, 2);
    let frames: Vec<Vec<Vec3>> = (0..3)
        .map(|f| {
            low.iter()
                .zip(cloud(120, 10 + f))
                .map(|(p, n)| *p + 0.2 * n)
                .collect()
        })
        .collect();
    let cases = [
        (
            "normalized gaussian top-16",
            BakeOptions::normalized(3.0).with_top_k(16),
        ),
        (
            "interpolate thin_plate_spline dense",
            BakeOptions::interpolate(Kernel::ThinPlateSpline, 1.0),
        ),
        (
            "interpolate wendland",
            BakeOptions::interpolate(Kernel::Wendland, 1.0),
        ),
    ];
    for (name, opts) in cases {
        let b = bake(&low, &high, &opts).unwrap();
        let err = check(&ctx, b, &frames);
        eprintln!("{name}: max relative GPU-CPU error {err:e}");
        assert!(err < 1e-5, "{name}: {err}");
    }
}

#[test]
fn gpu_handles_a_ragged_last_workgroup_and_rejects_bad_input() {
    let Some(ctx) = context() else { return };
    // 453 vertices: seven full workgroups of 64 and a ragged last one.
    let low = cloud(16, 3);
    let high = cloud(64 * 7 + 5, 4);
    let b = bake(&low, &high, &BakeOptions::normalized(2.0)).unwrap();
    let posed: Vec<Vec3> = low
        .iter()
        .map(|p| *p + Vec3::new(0.5, 0.0, -0.25))
        .collect();
    let err = check(&ctx, b.clone(), &[posed]);
    assert!(err < 1e-5, "{err}");
    let mut g = GpuRbfDeformer::new(&ctx, &b).unwrap();
    assert!(matches!(
        g.upload_low(&ctx, &low[..15]),
        Err(GpuError::InvalidInput { .. })
    ));
    let mut nan = low.clone();
    nan[2].x = f32::NAN;
    assert!(matches!(
        g.upload_low(&ctx, &nan),
        Err(GpuError::InvalidInput { .. })
    ));
    // a binding that kept coefficients cannot go to the GPU
    let coef = bake(
        &low,
        &high,
        &BakeOptions {
            dense_budget_bytes: 0,
            ..BakeOptions::interpolate(Kernel::Cubic, 1.0)
        },
    )
    .unwrap();
    assert!(matches!(
        GpuRbfDeformer::new(&ctx, &coef),
        Err(GpuError::InvalidInput { .. })
    ));
}

#[test]
fn adapter_filter_that_matches_nothing_is_a_clear_error() {
    let opts = sinew_gpu::context::GpuOptions {
        adapter_name: Some("no-such-adapter-xyz".into()),
        ..sinew_gpu::context::GpuOptions::from_env()
    };
    match GpuContext::with_options(&opts) {
        Err(GpuError::NoAdapter { hint, .. }) => {
            assert!(hint.contains("no-such-adapter-xyz"), "{hint}")
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(c) => panic!("matched adapter {}", c.adapter_info.name),
    }
}
