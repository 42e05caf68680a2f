//! GPU skinning path: a crowd of Fox characters animated on the CPU (the nine-job pipeline),
//! palettes written through a [`PaletteRing`] (mapped ring vs `queue.write_buffer`, optionally
//! the staging ring), skinned and drawn on the GPU (instanced vertex-shader skinning into a
//! 1280×720 offscreen target) by the graphics pipeline (`hardware`) or by the compute
//! rasteriser (`compute`, `sinew_gpu::raster`), plus the compute skinning pass over the whole
//! crowd.
//!
//! Not a criterion bench (the split of one frame is what matters): `harness = false`, prints
//! a table. Environment:
//! - `SINEW_BENCH_COUNTS`: crowd sizes, comma-separated (default `10000,100000,1000000`).
//! - `SINEW_BENCH_FRAMES`: measured frames per (size, mode) (default 30; 3 warm-up frames).
//! - `SINEW_BENCH_MODES`: `mapped,write_buffer,staging` subset (default `mapped,write_buffer`).
//! - `SINEW_BENCH_RASTER`: `hardware,compute,skin_only` subset (default `hardware,compute`);
//!   `skin_only` runs the compute rasteriser's raster pass without rasterising (its time is
//!   the skinning + projection share of that pass).
//! - `compute_lod` in `SINEW_BENCH_RASTER`: the compute rasteriser with a LOD chain built by
//!   `sinew_jobs::asset::lod_chain` from the ratios in `SINEW_BENCH_LOD_MESH` (default
//!   `0.25,0.06`); each instance draws the coarsest level within 1 pixel of error.
//! - `SINEW_BENCH_PNG`: folder to write one frame per crowd size and raster kind as PNG
//!   (optional).
//!
//! Frame (steady state, pipelined: the CPU never waits for the GPU except inside the ring):
//! `crowd_palette_len` → `ring.write(|p| animator.run_frame_into_mapped(store, dt, p))` → encode the
//! draw (+ timestamp queries) → submit → `ring.submitted`. Wall ms/frame is the total time of
//! the measured frames divided by their number, after one final wait for the GPU.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use glam::{Quat, Vec3};
use sinew_gpu::context::GpuContext;
use sinew_gpu::palette_ring::{ENTRY_BYTES, PaletteRing, PaletteUpload, crowd_palette_len};
use sinew_gpu::raster::{
    ComputeCrowdRenderer, LodLevel, RasterGpuTimes, RasterTimestamps, RasterWork,
    TIMESTAMPS_PER_FRAME,
};
use sinew_gpu::render::{Camera, CrowdRenderer, Instance};
use sinew_gpu::skin_pass::{GpuSkinMesh, SkinBatch, SkinBuffers, SkinPass};
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{AssetRegistry, Transform, lod_chain};
use sinew_jobs::component::{AnimationToProcess, EntityTransform, FrameSlot, SkinRef, animated};
use sinew_jobs::import::import_gltf;
use sinew_runtime::store::{Entity, Store};

type BoxError = Box<dyn std::error::Error>;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| default.to_string())
}

#[derive(Default, Clone, Copy)]
struct Split {
    wall: Duration,
    count_len: Duration,
    other_nodes: Duration,
    palette_node: Duration,
    fill: Duration,
    wait: Duration,
    finish: Duration,
    encode_submit: Duration,
    gpu_draw_ms: f64,
    gpu_passes: RasterGpuTimes,
}

/// Which renderer draws the frame.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Raster {
    Hardware,
    Compute,
    ComputeSkinOnly,
    ComputeLod,
}

impl Raster {
    fn name(self) -> &'static str {
        match self {
            Self::Hardware => "hardware",
            Self::Compute => "compute",
            Self::ComputeSkinOnly => "compute, skin only",
            Self::ComputeLod => "compute, LOD chain",
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn wait_idle(ctx: &GpuContext) -> Result<(), BoxError> {
    ctx.device.poll(wgpu::PollType::Wait {
        submission_index: None,
        timeout: None,
    })?;
    Ok(())
}

/// Reads `n` u64 timestamps resolved into `resolve`.
fn read_timestamps(ctx: &GpuContext, resolve: &wgpu::Buffer, n: u32) -> Result<Vec<u64>, BoxError> {
    let bytes = u64::from(n) * 8;
    let enc = ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
    let raw = sinew_gpu::skin_pass::read_buffer_bytes(ctx, enc, resolve, bytes)?;
    Ok(raw
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect())
}

fn main() -> Result<(), BoxError> {
    // `cargo bench` passes `--bench`; ignore arguments.
    let fox = sinew_fixtures::asset_path("gltf/Fox.glb")?;
    let counts: Vec<usize> = env_or("SINEW_BENCH_COUNTS", "10000,100000,1000000")
        .split(',')
        .filter_map(|s| s.trim().replace('_', "").parse().ok())
        .collect();
    let frames: u32 = env_or("SINEW_BENCH_FRAMES", "30").parse()?;
    let modes: Vec<PaletteUpload> = env_or("SINEW_BENCH_MODES", "mapped,write_buffer")
        .split(',')
        .filter_map(|m| match m.trim() {
            "mapped" => Some(PaletteUpload::Mapped),
            "write_buffer" => Some(PaletteUpload::WriteBuffer),
            "staging" => Some(PaletteUpload::Staging),
            _ => None,
        })
        .collect();
    let rasters: Vec<Raster> = env_or("SINEW_BENCH_RASTER", "hardware,compute")
        .split(',')
        .filter_map(|m| match m.trim() {
            "hardware" => Some(Raster::Hardware),
            "compute" => Some(Raster::Compute),
            "skin_only" => Some(Raster::ComputeSkinOnly),
            "compute_lod" => Some(Raster::ComputeLod),
            _ => None,
        })
        .collect();
    let lod_ratios: Vec<f32> = env_or("SINEW_BENCH_LOD_MESH", "0.25,0.06")
        .split(',')
        .map(|r| r.trim().parse::<f32>())
        .collect::<Result<_, _>>()?;
    let png_dir = std::env::var("SINEW_BENCH_PNG").ok().map(PathBuf::from);
    let ctx = GpuContext::new()?;
    let timestamps = ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY);
    println!(
        "adapter: {} ({:?}, {:?}, driver {} {}); MAPPABLE_PRIMARY_BUFFERS {}; TIMESTAMP_QUERY {}; rayon threads {}",
        ctx.adapter_info.name,
        ctx.adapter_info.backend,
        ctx.adapter_info.device_type,
        ctx.adapter_info.driver,
        ctx.adapter_info.driver_info,
        ctx.features
            .contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS),
        timestamps,
        rayon::current_num_threads()
    );
    let registry = AssetRegistry::new();
    let scene = import_gltf(&fox, &registry)?;
    let mesh = scene
        .meshes
        .first()
        .ok_or("Fox.glb has no skinned mesh")?
        .skinned_mesh
        .clone();
    println!(
        "Fox: {} vertices, {} triangles, {} bones, {} clips",
        mesh.positions().len(),
        mesh.indices().len() / 3,
        mesh.bone_count(),
        scene.clips.len()
    );
    let (width, height) = (1280u32, 720u32);
    let period_ns = f64::from(ctx.queue.get_timestamp_period());
    let skin_pass = SkinPass::new(&ctx);
    let gpu_mesh = GpuSkinMesh::new(&ctx, &mesh)?;
    println!(
        "\n| characters | raster | palette upload | palette MB/frame | wall ms/frame | CPU: count | other nodes | palette-writing node (4·6·7·9 chain) | ring wait | unmap/copy/write_buffer | encode+submit | GPU ms (skin+draw) | raster pass | big triangles | resolve |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut compute_rows = Vec::new();
    for &n in &counts {
        let mut store = Store::new();
        let side = (n as f32).sqrt().ceil() as usize;
        let spacing = 150.0f32;
        let t_spawn = Instant::now();
        let bundles = (0..n).map(|i| {
            let clip = scene.clips[i % scene.clips.len()].clone();
            let phase = (i as f32 * 0.618_034).fract() * clip.duration();
            let (a, b, c, d, e) = animated(
                scene.rig.clone(),
                vec![AnimationToProcess::new(clip).at(phase)],
            );
            let (gx, gz) = ((i % side) as f32, (i / side) as f32);
            let t = Transform::new(
                Vec3::new((gx - side as f32 * 0.5) * spacing, 0.0, -gz * spacing),
                Quat::from_rotation_y(i as f32 * 0.7),
                Vec3::ONE,
            );
            (
                a,
                b,
                c,
                d,
                e,
                SkinRef::new(mesh.clone()),
                EntityTransform(t),
            )
        });
        let ents: Vec<Entity> = store.spawn_batch(bundles)?;
        let mut animator = Animator::new(&mut store)?;
        let entries = crowd_palette_len(&mut store)?;
        // One frame on the CPU to place every entity's palette; instances are static
        // (EntityTransform is not moved: no RootMotion component).
        animator.run_frame(&mut store, 0.0)?;
        let mut instances = Vec::with_capacity(n);
        for e in &ents {
            let slot = *store.get::<FrameSlot>(*e)?;
            let world = store.get::<EntityTransform>(*e)?.0.to_affine();
            instances.push(Instance::new(slot.palette_offset, world));
        }
        eprintln!(
            "n = {n}: spawned and laid out in {:.2} s",
            t_spawn.elapsed().as_secs_f64()
        );
        let extent = side as f32 * spacing;
        let camera = {
            let mut c = Camera::look_at(
                Vec3::new(0.0, extent * 0.45, extent * 0.35),
                Vec3::new(0.0, 0.0, -extent * 0.45),
            );
            c.near = 10.0;
            c.far = extent * 3.0;
            c
        };
        let mut renderer = CrowdRenderer::new(&ctx, &mesh, width, height)?;
        renderer.set_instances(&ctx, &instances)?;
        let mut compute = ComputeCrowdRenderer::new(&ctx, &mesh, width, height)?;
        compute.set_instances(&ctx, &instances)?;
        let mut compute_lod = if rasters.contains(&Raster::ComputeLod) {
            let lods = lod_chain(&mesh, &lod_ratios)?;
            let mut levels = vec![LodLevel {
                mesh: &mesh,
                error: 0.0,
            }];
            levels.extend(lods.iter().map(|l| LodLevel {
                mesh: &l.mesh,
                error: l.error,
            }));
            let mut r = ComputeCrowdRenderer::with_lods(&ctx, &levels, width, height)?;
            r.set_instances(&ctx, &instances)?;
            Some(r)
        } else {
            None
        };
        let query_count = TIMESTAMPS_PER_FRAME * frames;
        let queries = timestamps.then(|| {
            ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("bench timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: query_count.max(4),
            })
        });
        let resolve = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("bench timestamps resolve"),
            size: u64::from(query_count.max(4)) * 8,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let mut last_ring = None;
        for (&raster, &mode) in rasters
            .iter()
            .flat_map(|r| modes.iter().map(move |m| (r, m)))
        {
            compute.options_mut().work = if raster == Raster::ComputeSkinOnly {
                RasterWork::SkinOnly
            } else {
                RasterWork::Full
            };
            if mode == PaletteUpload::Mapped
                && !ctx
                    .features
                    .contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS)
            {
                println!(
                    "| {n} | {} | {} | – | not available on this adapter |",
                    raster.name(),
                    mode.name()
                );
                continue;
            }
            let mut ring = PaletteRing::new(&ctx, mode, 3, entries)?;
            let mut total = Split::default();
            let dt = 1.0 / 60.0;
            let mut t_measure = Instant::now();
            for f in 0..(3 + frames) {
                if f == 3 {
                    wait_idle(&ctx)?;
                    total = Split::default();
                    t_measure = Instant::now();
                }
                let t0 = Instant::now();
                let len = crowd_palette_len(&mut store)?;
                let t1 = Instant::now();
                ring.write(&ctx, len, |p| {
                    animator.run_frame_into_mapped(&mut store, dt, p)
                })??;
                let stats = ring.stats();
                let t2 = Instant::now();
                let mut enc = ctx
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("frame"),
                    });
                let measured = f >= 3;
                let q = f.saturating_sub(3) * TIMESTAMPS_PER_FRAME;
                let palette = ring.buffer().ok_or("ring without buffer")?;
                if raster == Raster::Hardware {
                    let tw = match (&queries, measured) {
                        (Some(qs), true) => Some(wgpu::RenderPassTimestampWrites {
                            query_set: qs,
                            beginning_of_pass_write_index: Some(q),
                            end_of_pass_write_index: Some(q + 1),
                        }),
                        _ => None,
                    };
                    renderer.encode(&ctx, &mut enc, palette, &camera, tw);
                } else {
                    let tw = match (&queries, measured) {
                        (Some(qs), true) => Some(RasterTimestamps {
                            query_set: qs,
                            first: q,
                        }),
                        _ => None,
                    };
                    match (raster, &compute_lod) {
                        (Raster::ComputeLod, Some(r)) => {
                            r.encode(&ctx, &mut enc, palette, &camera, tw);
                        }
                        _ => compute.encode(&ctx, &mut enc, palette, &camera, tw),
                    }
                }
                let sub = ctx.queue.submit([enc.finish()]);
                ring.submitted(Some(sub));
                let t3 = Instant::now();
                let job9 = animator
                    .timings()
                    .iter()
                    // The node that writes palettes: job 9, or the fused 4·6·7·9 chain.
                    .filter(|t| t.name.starts_with("9 ") || t.name.contains("pose chain"))
                    .map(|t| t.duration)
                    .sum::<Duration>();
                total.count_len += t1 - t0;
                total.fill += stats.fill;
                total.palette_node += job9;
                total.other_nodes += stats.fill.saturating_sub(job9);
                total.wait += stats.wait;
                total.finish += stats.finish;
                total.encode_submit += t3 - t2;
            }
            wait_idle(&ctx)?;
            total.wall = t_measure.elapsed();
            if let Some(qs) = &queries {
                let mut enc = ctx
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
                enc.resolve_query_set(qs, 0..query_count, &resolve, 0);
                ctx.queue.submit([enc.finish()]);
                let ts = read_timestamps(&ctx, &resolve, query_count)?;
                let per_frame = ts.chunks_exact(TIMESTAMPS_PER_FRAME as usize);
                if raster == Raster::Hardware {
                    let sum: u64 = per_frame.map(|p| p[1].saturating_sub(p[0])).sum();
                    total.gpu_draw_ms = sum as f64 * period_ns / 1e6 / f64::from(frames);
                } else {
                    let mut passes = RasterGpuTimes::default();
                    for p in per_frame {
                        let t = RasterGpuTimes::from_ticks(p, period_ns as f32).unwrap_or_default();
                        passes.raster += t.raster / frames;
                        passes.big += t.big / frames;
                        passes.resolve += t.resolve / frames;
                    }
                    total.gpu_draw_ms = ms(passes.total());
                    total.gpu_passes = passes;
                }
            }
            let fr = f64::from(frames);
            let gpu = if timestamps {
                format!("{:.2}", total.gpu_draw_ms)
            } else {
                "n/a (no TIMESTAMP_QUERY)".into()
            };
            let passes = if raster == Raster::Hardware || !timestamps {
                "– | – | –".to_string()
            } else {
                let p = total.gpu_passes;
                format!(
                    "{:.2} | {:.2} | {:.2}",
                    ms(p.raster),
                    ms(p.big),
                    ms(p.resolve)
                )
            };
            println!(
                "| {n} | {} | {} | {:.1} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {gpu} | {passes} |",
                raster.name(),
                mode.name(),
                (entries as u64 * ENTRY_BYTES) as f64 / 1e6,
                ms(total.wall) / fr,
                ms(total.count_len) / fr,
                ms(total.other_nodes) / fr,
                ms(total.palette_node) / fr,
                ms(total.wait) / fr,
                ms(total.finish) / fr,
                ms(total.encode_submit) / fr,
            );
            // One more frame, left unsubmitted for the PNG and the compute pass below.
            let len = crowd_palette_len(&mut store)?;
            ring.write(&ctx, len, |p| {
                animator.run_frame_into_mapped(&mut store, dt, p)
            })??;
            if let Some(dir) = &png_dir
                && mode == modes[0]
                && raster != Raster::ComputeSkinOnly
            {
                std::fs::create_dir_all(dir)?;
                let image = match (raster, compute_lod.as_mut()) {
                    (Raster::Hardware, _) => {
                        renderer.render_ring(&ctx, &mut ring, &instances, &camera)?
                    }
                    (Raster::ComputeLod, Some(r)) => {
                        r.render_ring(&ctx, &mut ring, &instances, &camera)?
                    }
                    _ => compute.render_ring(&ctx, &mut ring, &instances, &camera)?,
                };
                image.save_png(dir.join(format!("fox_crowd_{}_{n}.png", raster.name())))?;
                ring.write(&ctx, len, |p| {
                    animator.run_frame_into_mapped(&mut store, dt, p)
                })??;
            }
            if let Some(mut previous) = last_ring.replace(ring) {
                previous.submitted(None);
            }
        }
        // Compute skinning of the whole crowd (the optional pre-skinned path), batched.
        if let (Some(ring), Some(qs)) = (&mut last_ring, &queries) {
            let per_instance = SkinPass::output_size(&gpu_mesh, 1).max(1);
            let by_limit = (ctx.limits.max_storage_buffer_binding_size / per_instance).max(1);
            let batch = 8192u32
                .min(ctx.limits.max_compute_workgroups_per_dimension)
                .min(u32::try_from(by_limit).unwrap_or(u32::MAX));
            let out_size = SkinPass::output_size(&gpu_mesh, batch);
            let out = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("bench skinned vertices"),
                size: out_size,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            });
            let palette = ring.buffer().ok_or("ring without buffer")?;
            let reps = 3u32;
            let mut enc = ctx
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
            let n32 = u32::try_from(n)?;
            let batches = n32.div_ceil(batch);
            for r in 0..reps {
                for b in 0..batches {
                    let count = batch.min(n32 - b * batch);
                    let tw = wgpu::ComputePassTimestampWrites {
                        query_set: qs,
                        beginning_of_pass_write_index: (b == 0).then_some(2 * r),
                        end_of_pass_write_index: (b + 1 == batches).then_some(2 * r + 1),
                    };
                    let tw = (b == 0 || b + 1 == batches).then_some(tw);
                    skin_pass.encode(
                        &ctx,
                        &mut enc,
                        &gpu_mesh,
                        SkinBuffers {
                            palette,
                            out: &out,
                            morphs: None,
                        },
                        SkinBatch {
                            palette_base: b * batch * gpu_mesh.bone_count(),
                            instance_count: count,
                        },
                        tw,
                    )?;
                }
            }
            enc.resolve_query_set(qs, 0..2 * reps, &resolve, 0);
            ctx.queue.submit([enc.finish()]);
            wait_idle(&ctx)?;
            let ts = read_timestamps(&ctx, &resolve, 2 * reps)?;
            ring.submitted(None);
            let sum: u64 = ts.chunks_exact(2).map(|p| p[1].saturating_sub(p[0])).sum();
            let gms = sum as f64 * period_ns / 1e6 / f64::from(reps);
            let verts = n as f64 * mesh.positions().len() as f64;
            compute_rows.push(format!(
                "| {n} | {:.1} M | {batches} × ≤{batch} | {gms:.2} | {:.2} |",
                verts / 1e6,
                verts / (gms * 1e-3) / 1e9
            ));
        }
    }
    if !compute_rows.is_empty() {
        println!(
            "\nCompute skinning pass (cs_skin, 4 influences, positions + normals written, whole crowd):\n"
        );
        println!("| characters | vertices | dispatches | GPU ms | Gvertices/s |");
        println!("|---|---|---|---|---|");
        for r in compute_rows {
            println!("{r}");
        }
    }
    Ok(())
}
