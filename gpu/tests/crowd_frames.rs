//! `CrowdFrames` on a real adapter (lavapipe in CI): frames through the ring and a renderer.
//!
//! Reference: a second store with the same crowd runs the same frames into a CPU `Vec`; its
//! last palettes, uploaded to a plain storage buffer and drawn by the renderer's own blocking
//! `render`, must give the same image byte for byte (same palettes, same instances, same
//! camera), for both rasterisers. The ring must also hand the renderer exactly the crowd's
//! palette length every frame, and the GPU timer must give one time per frame where the
//! device has timestamp queries.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use common::{builtin_model, context};
use glam::{Quat, Vec3};
use sinew_gpu::crowd_frames::{CrowdFrames, FrameImage, Rasteriser};
use sinew_gpu::raster::ComputeCrowdRenderer;
use sinew_gpu::render::{Camera, CrowdRenderer, Instance};
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{ActiveMorph, RawMorphTarget, Transform};
use sinew_jobs::component::{
    AnimationToProcess, EntityTransform, FrameSlot, MorphWeights, SkinRef, skinned,
};
use sinew_runtime::store::Store;
use wgpu::util::DeviceExt;

fn crowd(m: &common::Model) -> Store {
    let mut store = Store::new();
    for i in 0..12 {
        let clip = m.clips[i % m.clips.len()].clone();
        let (x, z) = ((i % 4) as f32 * 1.5, (i / 4) as f32 * 1.5);
        let e = store
            .spawn(skinned(
                m.rig.clone(),
                m.mesh.clone(),
                vec![AnimationToProcess::new(clip).at(i as f32 * 0.13)],
            ))
            .unwrap();
        store
            .insert(
                e,
                EntityTransform(Transform::new(
                    Vec3::new(x, 0.0, z),
                    Quat::IDENTITY,
                    Vec3::ONE,
                )),
            )
            .unwrap();
    }
    store
}

#[test]
fn frames_through_the_ring_draw_what_the_cpu_palettes_draw() {
    let Some(ctx) = context() else { return };
    let m = builtin_model();
    let (w, h) = (320, 180);
    let camera = Camera::look_at(Vec3::new(2.25, 3.0, -6.0), Vec3::new(2.25, 0.9, 1.5));
    for raster in [Rasteriser::Graphics, Rasteriser::Compute] {
        let mut gpu_store = crowd(&m);
        let mut cpu_store = crowd(&m);
        let mut gpu_animator = Animator::new(&mut gpu_store).unwrap();
        let mut cpu_animator = Animator::new(&mut cpu_store).unwrap();
        let entries = gpu_animator.layout(&mut gpu_store).unwrap().palette_len();
        assert_eq!(entries, 12 * m.mesh.bone_count());
        let mut frames =
            CrowdFrames::new(&ctx, &m.rig, m.mesh.clone(), raster, (w, h), entries).unwrap();
        let mut cpu_palette = vec![[0.0f32; 12]; entries];
        let frame_count = 5;
        let mut image = None;
        for f in 0..frame_count {
            let (run, split) = frames
                .write(&ctx, &mut gpu_store, |store, p| {
                    assert_eq!(p.len(), entries);
                    gpu_animator.run_frame_into(store, 1.0 / 60.0, p)
                })
                .unwrap();
            run.unwrap();
            assert!(split.pipeline > std::time::Duration::ZERO);
            cpu_animator
                .run_frame_into(&mut cpu_store, 1.0 / 60.0, &mut cpu_palette)
                .unwrap();
            assert_eq!(frames.instances().len(), 12);
            let last = f + 1 == frame_count;
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            frames.encode(&ctx, &mut encoder, &camera, last).unwrap();
            let sub = ctx.queue.submit([encoder.finish()]);
            frames.submitted(sub.clone());
            if last {
                image = Some(frames.read_image(&ctx, sub).unwrap());
            }
        }
        let times = frames.finish(&ctx).unwrap();
        let timed = ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY);
        assert_eq!(frames.has_gpu_timer(), timed);
        assert_eq!(
            times.len(),
            if timed { frame_count } else { 0 },
            "{times:?}"
        );
        match (raster, frames.image()) {
            (Rasteriser::Graphics, FrameImage::Texture(_))
            | (Rasteriser::Compute, FrameImage::Buffer(_)) => {}
            (r, _) => panic!("{r:?} shows the other renderer's image"),
        }
        // The reference: the CPU store's palettes and instances, drawn by the renderer alone.
        let buffer = ctx
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("reference palette"),
                contents: bytemuck::cast_slice(&cpu_palette),
                usage: wgpu::BufferUsages::STORAGE,
            });
        let mut instances = Vec::new();
        let mut q = cpu_store
            .query::<(&FrameSlot, &EntityTransform)>()
            .unwrap()
            .with::<SkinRef>();
        q.for_each(|_, (s, t)| instances.push(Instance::new(s.palette_offset, t.0.to_affine())));
        drop(q);
        assert_eq!(instances, frames.instances());
        let reference = match raster {
            Rasteriser::Graphics => CrowdRenderer::new(&ctx, &m.mesh, w, h)
                .unwrap()
                .render(&ctx, &buffer, &instances, &camera)
                .unwrap(),
            Rasteriser::Compute => ComputeCrowdRenderer::new(&ctx, &m.mesh, w, h)
                .unwrap()
                .render(&ctx, &buffer, &instances, &camera)
                .unwrap(),
        };
        let image = image.unwrap();
        let background = reference.pixel(0, 0).unwrap();
        let covered = reference
            .pixels
            .chunks_exact(4)
            .filter(|p| *p != background)
            .count();
        assert!(covered > 2000, "{raster:?}: {covered} pixels drawn");
        assert!(
            image == reference,
            "{raster:?}: the ring's frame differs from the CPU palettes'"
        );
    }
}

/// The built-in character's mesh with two morph targets: 0 swells it along its normals, 1
/// lifts every vertex above the hips.
fn morphed_mesh() -> std::sync::Arc<sinew_jobs::asset::SkinnedMesh> {
    let mut raw = sinew_fixtures::builtin::character().mesh;
    let swell = raw.normals.iter().map(|n| *n * 0.08).collect();
    let lift = raw
        .positions
        .iter()
        .map(|p| {
            if p.y > 1.0 {
                Vec3::new(0.0, 0.25, 0.0)
            } else {
                Vec3::ZERO
            }
        })
        .collect();
    raw.morph_targets = vec![
        RawMorphTarget {
            name: "swell".into(),
            positions: swell,
            normals: Vec::new(),
        },
        RawMorphTarget {
            name: "lift".into(),
            positions: lift,
            normals: Vec::new(),
        },
    ];
    raw.morph_weights = vec![0.0, 0.0];
    std::sync::Arc::new(raw.bake().unwrap())
}

/// Entity `i`'s morph weights (some entities have none, some only zeros).
fn weights_of(i: usize) -> Option<[f32; 2]> {
    match i % 4 {
        0 => None,
        1 => Some([0.0, 0.0]),
        2 => Some([1.0, 0.0]),
        _ => Some([0.5, 0.75]),
    }
}

#[test]
fn frames_draw_each_entitys_active_morph_targets() {
    let Some(ctx) = context() else { return };
    let m = common::Model {
        mesh: morphed_mesh(),
        ..builtin_model()
    };
    let (w, h) = (320, 180);
    let camera = Camera::look_at(Vec3::new(2.25, 3.0, -6.0), Vec3::new(2.25, 0.9, 1.5));
    for raster in [Rasteriser::Graphics, Rasteriser::Compute] {
        let mut store = crowd(&m);
        let entities: Vec<_> = {
            let mut v = Vec::new();
            store
                .query::<&FrameSlot>()
                .unwrap()
                .for_each(|e, _| v.push(e));
            v
        };
        for (i, &e) in entities.iter().enumerate() {
            if let Some(wts) = weights_of(i) {
                store.insert(e, MorphWeights::new(wts.to_vec())).unwrap();
            }
        }
        let mut animator = Animator::new(&mut store).unwrap();
        let entries = animator.layout(&mut store).unwrap().palette_len();
        let mut frames =
            CrowdFrames::new(&ctx, &m.rig, m.mesh.clone(), raster, (w, h), entries).unwrap();
        frames
            .write(&ctx, &mut store, |store, p| {
                animator.run_frame_into(store, 1.0 / 60.0, p)
            })
            .unwrap()
            .0
            .unwrap();
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        frames.encode(&ctx, &mut encoder, &camera, true).unwrap();
        let sub = ctx.queue.submit([encoder.finish()]);
        frames.submitted(sub.clone());
        let image = frames.read_image(&ctx, sub).unwrap();
        frames.finish(&ctx).unwrap();

        // The reference: the same palettes (a second store, same frame) and instances, drawn
        // by the renderer alone with lists made here from the weights set above: targets at
        // weight 0 and entities without weights left out.
        let mut cpu_store = crowd(&m);
        let mut cpu_entities = Vec::new();
        cpu_store
            .query::<&FrameSlot>()
            .unwrap()
            .for_each(|e, _| cpu_entities.push(e));
        for (i, &e) in cpu_entities.iter().enumerate() {
            if let Some(wts) = weights_of(i) {
                cpu_store
                    .insert(e, MorphWeights::new(wts.to_vec()))
                    .unwrap();
            }
        }
        let mut cpu_palette = vec![[0.0f32; 12]; entries];
        Animator::new(&mut cpu_store)
            .unwrap()
            .run_frame_into(&mut cpu_store, 1.0 / 60.0, &mut cpu_palette)
            .unwrap();
        let buffer = ctx
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("reference palette"),
                contents: bytemuck::cast_slice(&cpu_palette),
                usage: wgpu::BufferUsages::STORAGE,
            });
        let mut instances = Vec::new();
        let mut lists: Vec<Vec<ActiveMorph>> = Vec::new();
        let mut q = cpu_store
            .query::<(&FrameSlot, &EntityTransform)>()
            .unwrap()
            .with::<SkinRef>();
        q.for_each(|e, (s, t)| {
            instances.push(Instance::new(s.palette_offset, t.0.to_affine()));
            let i = cpu_entities.iter().position(|&x| x == e).unwrap();
            let wts = weights_of(i).unwrap_or([0.0; 2]);
            lists.push(
                (0..2)
                    .filter(|&k| wts[k] != 0.0)
                    .map(|k| ActiveMorph {
                        target: k as u32,
                        weight: wts[k],
                    })
                    .collect(),
            );
        });
        drop(q);
        assert_eq!(instances, frames.instances());
        let refs: Vec<&[ActiveMorph]> = lists.iter().map(|l| l.as_slice()).collect();
        let draw = |morphs: bool| match raster {
            Rasteriser::Graphics => {
                let mut r = CrowdRenderer::new(&ctx, &m.mesh, w, h).unwrap();
                if morphs {
                    r.set_morphs(&ctx, &refs).unwrap();
                }
                r.render(&ctx, &buffer, &instances, &camera).unwrap()
            }
            Rasteriser::Compute => {
                let mut r = ComputeCrowdRenderer::new(&ctx, &m.mesh, w, h).unwrap();
                r.options_mut().cull_sphere = None;
                if morphs {
                    r.set_morphs(&ctx, &refs).unwrap();
                }
                r.render(&ctx, &buffer, &instances, &camera).unwrap()
            }
        };
        let (reference, bind_shape) = (draw(true), draw(false));
        assert!(
            image == reference,
            "{raster:?}: CrowdFrames' morphs differ from the lists made from the weights"
        );
        let differ = image
            .pixels
            .chunks_exact(4)
            .zip(bind_shape.pixels.chunks_exact(4))
            .filter(|(a, b)| a != b)
            .count();
        assert!(
            differ > 500,
            "{raster:?}: morphs change only {differ} pixels"
        );
    }
}
