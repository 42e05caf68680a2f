//! Morph targets at crowd scale: 10 000 characters with a 40-target face (a 48 × 48 vertex
//! grid, 4 bones), each character with its own weights.
//!
//! - `morph_face/weights_job`: the CPU side, the morph-weights job compacting every
//!   character's 40 weights into its active list (CPU-timed anywhere).
//! - `morph_face/gpu_compute/<k> active`: the GPU path's compute skinning, `k` of the 40
//!   targets active per character (8: a typical expression; 40: every target): writing the
//!   active lists into their buffers ([`MorphInstances::write`]), the `cs_skin` dispatches
//!   over the crowd, submit and wait.
//! - `morph_face/gpu_draw/<k> active`: the instanced vertex-shader draw (morph + skin in
//!   `vs_main`) of the crowd into a 1280 × 720 target, with read-back.
//!
//! Environment: `SINEW_MORPH_BENCH_COUNT` (default 10000), `SINEW_MORPH_BENCH_PARTS`
//! (`weights,compute,draw`, default all). The GPU parts need an adapter (they are skipped
//! with a message without one); on lavapipe they run but their times say nothing about a GPU.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use glam::{Affine3A, Mat4, Quat, Vec3};
use sinew_gpu::context::GpuContext;
use sinew_gpu::render::{Camera, CrowdRenderer, Instance};
use sinew_gpu::skin_pass::{GpuSkinMesh, MorphInstances, SkinBatch, SkinBuffers, SkinPass};
use sinew_jobs::MorphWeightsJob;
use sinew_jobs::asset::{
    ActiveMorph, RawMorphTarget, RawSkinnedMesh, RawVertexInfluences, SkinnedMesh,
};
use sinew_jobs::component::{MorphWeights, SkinRef};
use sinew_runtime::store::Store;
use std::sync::Arc;
use std::time::Duration;

const GRID: usize = 48;
const TARGETS: usize = 40;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| default.to_string())
}

/// The face: a `GRID × GRID` grid in the xy plane, bones head, jaw, left and right eye (each
/// vertex weighted to the head and the nearest feature), 40 targets each a smooth bump around
/// its own centre (deltas stored densely, as the GPU path stores them).
fn face() -> SkinnedMesh {
    let mut positions = Vec::new();
    let mut normals = Vec::new();
    let mut influences = Vec::new();
    let centres = [
        Vec3::new(0.0, -0.5, 0.0),
        Vec3::new(-0.3, 0.3, 0.0),
        Vec3::new(0.3, 0.3, 0.0),
    ];
    for r in 0..GRID {
        for c in 0..GRID {
            let p = Vec3::new(
                c as f32 / GRID as f32 - 0.5,
                r as f32 / GRID as f32 - 0.5,
                0.0,
            ) * 2.0;
            positions.push(p);
            normals.push(Vec3::Z);
            let (k, d) = centres
                .iter()
                .enumerate()
                .map(|(k, q)| (k, (p - *q).length()))
                .fold((0, f32::MAX), |a, b| if b.1 < a.1 { b } else { a });
            let w = (1.0 - d).clamp(0.0, 0.8);
            let mut list = vec![(0u16, 1.0 - w)];
            if w > 0.0 {
                list.push((k as u16 + 1, w));
            }
            influences.push(RawVertexInfluences(list));
        }
    }
    let targets = (0..TARGETS)
        .map(|t| {
            let a = t as f32 * 2.399_963; // golden angle: centres spread over the face
            let centre =
                Vec3::new(a.cos(), a.sin(), 0.0) * (0.15 + 0.8 * t as f32 / TARGETS as f32);
            RawMorphTarget {
                name: format!("shape {t}"),
                positions: positions
                    .iter()
                    .map(|p| Vec3::Z * 0.2 * (-(*p - centre).length_squared() * 8.0).exp())
                    .collect(),
                normals: positions
                    .iter()
                    .map(|p| (*p - centre) * 0.1 * (-(*p - centre).length_squared() * 8.0).exp())
                    .collect(),
            }
        })
        .collect();
    let mut indices = Vec::new();
    for r in 0..GRID - 1 {
        for c in 0..GRID - 1 {
            let i = (r * GRID + c) as u32;
            indices.extend([
                i,
                i + 1,
                i + 1 + GRID as u32,
                i,
                i + 1 + GRID as u32,
                i + GRID as u32,
            ]);
        }
    }
    RawSkinnedMesh {
        name: "face".into(),
        bones: ["head", "jaw", "eye.L", "eye.R"]
            .iter()
            .map(|n| ((*n).to_string(), Mat4::IDENTITY))
            .collect(),
        positions,
        normals,
        influences,
        indices,
        morph_targets: targets,
        ..Default::default()
    }
    .bake()
    .expect("face")
}

/// Character `i`'s weights: `active` of the 40 targets non-zero, chosen and weighted by `i`.
fn weights(i: usize, active: usize) -> Vec<f32> {
    let mut w = vec![0.0; TARGETS];
    for j in 0..active {
        let t = (i * 7 + j * 13) % TARGETS;
        w[t] = 0.1 + 0.9 * ((i * 31 + j * 17) % 97) as f32 / 97.0;
    }
    w
}

fn active_list(i: usize, active: usize) -> Vec<ActiveMorph> {
    weights(i, active)
        .iter()
        .enumerate()
        .filter(|(_, w)| **w != 0.0)
        .map(|(t, w)| ActiveMorph {
            target: t as u32,
            weight: *w,
        })
        .collect()
}

/// Four palette entries per character: the head turned a little, the jaw opened, the eyes
/// turned, all placed on a grid.
fn palettes(n: usize) -> Vec<[f32; 12]> {
    let side = (n as f32).sqrt().ceil() as usize;
    (0..n)
        .flat_map(|i| {
            let place = Affine3A::from_translation(Vec3::new(
                (i % side) as f32 * 2.5,
                0.0,
                -((i / side) as f32) * 2.5,
            )) * Affine3A::from_rotation_y(0.1 * (i % 9) as f32);
            let jaw = Affine3A::from_rotation_x(0.02 * (i % 13) as f32);
            let eye = Affine3A::from_quat(Quat::from_rotation_y(0.05 * (i % 5) as f32));
            [place, place * jaw, place * eye, place * eye].map(|m| m.to_cols_array())
        })
        .collect()
}

fn bench(cr: &mut Criterion) {
    let n: usize = env_or("SINEW_MORPH_BENCH_COUNT", "10000")
        .parse()
        .expect("count");
    let parts = env_or("SINEW_MORPH_BENCH_PARTS", "weights,compute,draw");
    let mesh = Arc::new(face());
    let nv = mesh.positions().len();
    let mut group = cr.benchmark_group("morph_face");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));

    if parts.contains("weights") {
        // The job over borrowed slices, as job 5's node runs it on each store chunk.
        let mut store = Store::new();
        let entities: Vec<_> = (0..n)
            .map(|_| store.spawn((0u8,)).expect("spawn"))
            .collect();
        let skins = vec![SkinRef::new(mesh.clone()); n];
        for active in [8usize, 40] {
            let mut w: Vec<MorphWeights> = (0..n)
                .map(|i| MorphWeights::new(weights(i, active)))
                .collect();
            group.throughput(Throughput::Elements((n * TARGETS) as u64));
            group.bench_function(
                BenchmarkId::new("weights_job", format!("{active} active")),
                |b| {
                    b.iter(|| {
                        let mut job = MorphWeightsJob {
                            entities: &entities,
                            skins: &skins,
                            curves: None,
                            weights: &mut w,
                        };
                        job.validate().expect("valid");
                        job.run();
                    });
                },
            );
        }
    }

    let ctx = match GpuContext::new() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("morph_face GPU parts skipped: {e}");
            group.finish();
            return;
        }
    };
    eprintln!(
        "adapter: {} ({:?}); {n} characters × {nv} vertices, {TARGETS} targets",
        ctx.adapter_info.name, ctx.adapter_info.backend
    );
    let pal = palettes(n);
    let palette_buf = wgpu::util::DeviceExt::create_buffer_init(
        &ctx.device,
        &wgpu::util::BufferInitDescriptor {
            label: Some("palettes"),
            contents: bytemuck::cast_slice(&pal),
            usage: wgpu::BufferUsages::STORAGE,
        },
    );
    let wait = |ctx: &GpuContext, sub: wgpu::SubmissionIndex| {
        ctx.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(sub),
                timeout: None,
            })
            .expect("poll");
    };

    if parts.contains("compute") {
        let gpu_mesh = GpuSkinMesh::new(&ctx, &mesh).expect("upload");
        let pass = SkinPass::new(&ctx);
        let per_instance = SkinPass::output_size(&gpu_mesh, 1);
        let batch = (ctx.limits.max_storage_buffer_binding_size / per_instance)
            .min(u64::from(ctx.limits.max_compute_workgroups_per_dimension))
            .min(n as u64)
            .max(1) as usize;
        let out = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("skinned faces"),
            size: SkinPass::output_size(&gpu_mesh, batch as u32),
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        for active in [8usize, 40] {
            let lists: Vec<Vec<ActiveMorph>> = (0..n).map(|i| active_list(i, active)).collect();
            // One list buffer per batch, written each frame as an engine would.
            let mut uploads: Vec<(usize, usize, MorphInstances)> = lists
                .chunks(batch)
                .enumerate()
                .map(|(k, chunk)| {
                    let refs: Vec<&[ActiveMorph]> = chunk.iter().map(Vec::as_slice).collect();
                    let m = MorphInstances::new(&ctx, TARGETS as u32, &refs).expect("lists");
                    (k, chunk.len(), m)
                })
                .collect();
            group.throughput(Throughput::Elements((n * nv) as u64));
            group.bench_function(
                BenchmarkId::new("gpu_compute", format!("{active} active")),
                |b| {
                    b.iter(|| {
                        let mut enc = ctx.device.create_command_encoder(&Default::default());
                        for ((_, _, morphs), chunk) in uploads.iter_mut().zip(lists.chunks(batch)) {
                            let refs: Vec<&[ActiveMorph]> =
                                chunk.iter().map(Vec::as_slice).collect();
                            morphs.write(&ctx, TARGETS as u32, &refs).expect("lists");
                        }
                        for (k, len, morphs) in &uploads {
                            pass.encode(
                                &ctx,
                                &mut enc,
                                &gpu_mesh,
                                SkinBuffers {
                                    palette: &palette_buf,
                                    out: &out,
                                    morphs: Some(morphs),
                                },
                                SkinBatch {
                                    palette_base: (k * batch * 4) as u32,
                                    instance_count: *len as u32,
                                },
                                None,
                            )
                            .expect("encode");
                        }
                        wait(&ctx, ctx.queue.submit([enc.finish()]));
                    });
                },
            );
        }
    }

    if parts.contains("draw") {
        let mut renderer = CrowdRenderer::new(&ctx, &mesh, 1280, 720).expect("renderer");
        let side = (n as f32).sqrt().ceil();
        let camera = Camera::look_at(
            Vec3::new(side * 1.25, side * 2.0, side * 1.5),
            Vec3::new(side * 1.25, 0.0, -side * 1.25),
        );
        let instances: Vec<Instance> = (0..n)
            .map(|i| Instance::new((i * 4) as u32, Affine3A::IDENTITY))
            .collect();
        for active in [8usize, 40] {
            let lists: Vec<Vec<ActiveMorph>> = (0..n).map(|i| active_list(i, active)).collect();
            let refs: Vec<&[ActiveMorph]> = lists.iter().map(Vec::as_slice).collect();
            group.throughput(Throughput::Elements((n * nv) as u64));
            group.bench_function(
                BenchmarkId::new("gpu_draw", format!("{active} active")),
                |b| {
                    b.iter(|| {
                        renderer.set_morphs(&ctx, &refs).expect("lists");
                        renderer
                            .render(&ctx, &palette_buf, &instances, &camera)
                            .expect("render")
                    });
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
