//! Baked animation textures: bake time (CPU, every clip of the built-in character and Fox, at
//! 30 and 60 Hz) and, on an adapter, the time to draw a
//! baked crowd offscreen (submitted and waited for; instances uploaded once), by the graphics
//! pipeline (`BakedRenderer`) and by the compute rasteriser (`ComputeBakedRenderer`).
//!
//! `cargo bench -p sinew-benches --bench baked`. Without an adapter the draw benchmarks are
//! skipped with a message.

use criterion::{Criterion, criterion_group, criterion_main};
use glam::{Affine3A, Mat4, Vec3, Vec4};
use sinew_fixtures::builtin;
use sinew_gpu::baked::draw::BakedRenderer;
use sinew_gpu::baked::{BakedAnimationGpu, BakedInstance, BakedTexelFormat};
use sinew_gpu::context::GpuContext;
use sinew_gpu::raster::ComputeBakedRenderer;
use sinew_jobs::asset::{AssetRegistry, Clip, Rig, SkinnedMesh};
use sinew_jobs::bake_texture::{BakeTextureOptions, bake_animation_texture};
use sinew_jobs::import::import_gltf;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

type Model = (&'static str, Arc<Rig>, Arc<SkinnedMesh>, Vec<Arc<Clip>>);

fn models() -> Vec<Model> {
    let registry = AssetRegistry::new();
    let mut out = Vec::new();
    match builtin::bake_character(&registry) {
        Ok(c) => out.push((
            "builtin",
            c.rig,
            c.mesh,
            vec![c.idle, c.walk, c.run, c.wave],
        )),
        Err(e) => eprintln!("built-in character failed to bake: {e}"),
    }
    let fox = match sinew_fixtures::asset_path("gltf/Fox.glb") {
        Ok(p) => p,
        Err(e) => {
            eprintln!("skipping Fox: {e}");
            return out;
        }
    };
    match import_gltf(&fox, &registry) {
        Ok(s) => match s.meshes.first() {
            Some(m) => out.push((
                "Fox",
                s.rig.clone(),
                m.skinned_mesh.clone(),
                s.clips.clone(),
            )),
            None => eprintln!("Fox has no skinned mesh"),
        },
        Err(e) => eprintln!("skipping Fox ({}): {e}", fox.display()),
    }
    out
}

fn bake(c: &mut Criterion) {
    let mut g = c.benchmark_group("bake");
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    for (name, rig, mesh, clips) in models() {
        for rate in [30.0f32, 60.0] {
            let opts = BakeTextureOptions::new(rate, 8192);
            g.bench_function(format!("{name} all clips {rate} Hz"), |b| {
                b.iter(|| {
                    black_box(
                        bake_animation_texture(&rig, &mesh, &clips, &opts).map(|t| t.texels.len()),
                    )
                })
            });
        }
    }
    g.finish();
}

fn draw(c: &mut Criterion) {
    let ctx = match GpuContext::new() {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("SKIPPED draw benchmarks: {e}");
            return;
        }
    };
    let mut g = c.benchmark_group("baked draw");
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    // lavapipe renders on the CPU: keep the crowd small there.
    let n: usize = if format!("{:?}", ctx.adapter_info.device_type) == "Cpu" {
        200
    } else {
        100_000
    };
    for (name, rig, mesh, clips) in models() {
        let opts = BakeTextureOptions::new(30.0, ctx.limits.max_texture_dimension_2d);
        let Ok(baked) = bake_animation_texture(&rig, &mesh, &clips, &opts) else {
            continue;
        };
        let Ok(anim) = BakedAnimationGpu::new(&ctx, &baked, &mesh, BakedTexelFormat::Rgba32Float)
        else {
            continue;
        };
        let Ok(mut renderer) = BakedRenderer::new(&ctx, &anim, 640, 360) else {
            continue;
        };
        let Ok(mut compute) = ComputeBakedRenderer::new(&ctx, &anim, &mesh, 640, 360) else {
            continue;
        };
        let side = (n as f32).sqrt().ceil() as usize;
        let instances: Vec<BakedInstance> = (0..n)
            .map(|i| {
                let p = Vec3::new((i % side) as f32, 0.0, (i / side) as f32) * 2.0;
                BakedInstance::new(
                    Affine3A::from_translation(p),
                    (i % clips.len()) as u32,
                    i as f32 * 0.37,
                    1.0,
                )
            })
            .collect();
        if renderer.set_instances(&ctx, &anim, &instances).is_err()
            || compute.set_instances(&ctx, &anim, &instances).is_err()
        {
            continue;
        }
        // Top-down orthographic view of the grid: x → clip x, z → clip y, height → depth.
        let extent = 2.0 * side as f32 + 2.0;
        let (a, o) = (2.0 / extent, -1.0 + 1.0 / extent);
        let vp = Mat4::from_cols(
            Vec4::new(a, 0.0, 0.0, 0.0),
            Vec4::new(0.0, 0.0, -0.001, 0.0),
            Vec4::new(0.0, a, 0.0, 0.0),
            Vec4::new(o, o, 0.5, 1.0),
        );
        let mut t = 0.0f32;
        g.bench_function(format!("{name} {n} instances 640x360"), |b| {
            b.iter(|| {
                t += 1.0 / 60.0;
                black_box(renderer.render(&ctx, &anim, vp, t).map(|f| f.wall))
            })
        });
        g.bench_function(
            format!("{name} {n} instances 640x360 compute raster"),
            |b| {
                b.iter(|| {
                    t += 1.0 / 60.0;
                    black_box(compute.render(&ctx, &anim, vp, t).map(|f| f.wall))
                })
            },
        );
    }
    g.finish();
}

criterion_group!(benches, bake, draw);
criterion_main!(benches);
