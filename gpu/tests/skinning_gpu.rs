//! The WGSL skinning (compute path) against `SkinnedMesh::skin_cpu`, and the palette ring's
//! frames against the CPU pipeline, on a real adapter (lavapipe in CI).
//!
//! Position metric: `max_v |gpu_v − cpu_v| / d`, with `d` the diagonal of the bounding box of
//! the CPU-skinned mesh (so near-zero coordinates do not inflate the error); bound 1e-5.
//! Normal metric: `max_v |gpu_n − cpu_n|` over unit normals; bound 1e-5.
#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside #[test] functions

mod common;

use std::sync::Arc;

use glam::{Quat, Vec3};
use sinew_fixtures::builtin;
use sinew_gpu::context::{GpuContext, GpuError};
use sinew_gpu::palette_ring::{ENTRY_BYTES, PaletteRing, PaletteUpload, crowd_palette_len};
use sinew_gpu::skin_pass::SkinPass;
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{AssetRegistry, Clip, RawVertexInfluences, Rig, SkinnedMesh, Transform};
use sinew_jobs::component::{AnimationToProcess, EntityTransform, FrameSlot, SkinRef, animated};
use sinew_jobs::import::import_gltf;
use sinew_runtime::store::{Entity, Store};

/// A context (its adapter printed), or `None` (with the reason printed) only when no adapter
/// exists at all.
fn context() -> Option<GpuContext> {
    common::context().inspect(|c| {
        eprintln!(
            "adapter: {} ({:?}, {:?}), features {:?}",
            c.adapter_info.name, c.adapter_info.backend, c.adapter_info.device_type, c.features
        );
    })
}

fn spawn(
    store: &mut Store,
    rig: &Arc<Rig>,
    mesh: &Arc<SkinnedMesh>,
    clip: &Arc<Clip>,
    t: f32,
    x: f32,
) -> Entity {
    let (a, b, c, d, e) = animated(
        rig.clone(),
        vec![AnimationToProcess::new(clip.clone()).at(t)],
    );
    store
        .spawn((
            a,
            b,
            c,
            d,
            e,
            SkinRef::new(mesh.clone()),
            EntityTransform(Transform::new(
                Vec3::new(x, 0.0, -0.5 * x),
                Quat::from_rotation_y(0.3 * x),
                Vec3::ONE,
            )),
        ))
        .unwrap()
}

/// Runs the real pipeline on a few entities and returns each entity's palette.
fn pipeline_palettes(
    rig: &Arc<Rig>,
    mesh: &Arc<SkinnedMesh>,
    anims: &[(Arc<Clip>, f32)],
) -> Vec<Vec<[f32; 12]>> {
    let mut store = Store::new();
    let ents: Vec<Entity> = anims
        .iter()
        .enumerate()
        .map(|(i, (c, t))| spawn(&mut store, rig, mesh, c, *t, i as f32))
        .collect();
    let mut animator = Animator::new(&mut store).unwrap();
    animator.run_frame(&mut store, 1.0 / 60.0).unwrap();
    let palette = animator.palettes(&store).to_vec();
    assert_eq!(palette.len(), anims.len() * mesh.bone_count());
    ents.iter()
        .map(|e| {
            let s = *store.get::<FrameSlot>(*e).unwrap();
            assert_eq!(s.palette_count as usize, mesh.bone_count());
            palette[s.palette_offset as usize..(s.palette_offset + s.palette_count) as usize]
                .to_vec()
        })
        .collect()
}

fn bbox_diag(p: &[Vec3]) -> f32 {
    let (lo, hi) = p.iter().fold(
        (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)),
        |(lo, hi), v| (lo.min(*v), hi.max(*v)),
    );
    (hi - lo).length()
}

/// Compares the compute shader with the CPU reference; returns (position error relative to
/// the bbox diagonal, normal error).
fn compare(ctx: &GpuContext, mesh: &SkinnedMesh, palette: &[[f32; 12]]) -> (f32, f32) {
    let (cpu_p, cpu_n) = mesh.skin_cpu(palette);
    let (gpu_p, gpu_n) = SkinPass::skin_positions(ctx, mesh, palette).unwrap();
    assert_eq!(gpu_p.len(), cpu_p.len());
    assert_eq!(gpu_n.len(), cpu_n.len());
    let d = bbox_diag(&cpu_p);
    assert!(d > 0.0);
    let ep = gpu_p
        .iter()
        .zip(&cpu_p)
        .map(|(g, c)| (*g - *c).length())
        .fold(0.0f32, f32::max)
        / d;
    let en = gpu_n
        .iter()
        .zip(&cpu_n)
        .map(|(g, c)| (*g - *c).length())
        .fold(0.0f32, f32::max);
    // The pose is not the bind pose: some vertex moved by more than 1 % of the size.
    let moved = cpu_p
        .iter()
        .zip(mesh.positions())
        .map(|(a, b)| (*a - *b).length())
        .fold(0.0f32, f32::max);
    assert!(
        moved > 0.01 * d,
        "pose too close to bind pose ({moved} vs {d})"
    );
    (ep, en)
}

#[test]
fn compute_skinning_matches_cpu_for_builtin_character() {
    let Some(ctx) = context() else { return };
    let registry = AssetRegistry::new();
    let c = builtin::bake_character(&registry).unwrap();
    let anims = [
        (c.walk.clone(), 0.37),
        (c.run.clone(), 0.21),
        (c.wave.clone(), 1.3),
        (c.idle.clone(), 2.2),
    ];
    let (mut wp, mut wn) = (0.0f32, 0.0f32);
    for palette in pipeline_palettes(&c.rig, &c.mesh, &anims) {
        let (p, n) = compare(&ctx, &c.mesh, &palette);
        wp = wp.max(p);
        wn = wn.max(n);
    }
    eprintln!(
        "builtin character ({} vertices): max position error {wp:.3e} of bbox diagonal, max normal error {wn:.3e}",
        c.mesh.positions().len()
    );
    assert!(wp <= 1e-5, "position error {wp}");
    assert!(wn <= 1e-5, "normal error {wn}");
}

#[test]
fn compute_skinning_matches_cpu_for_fox() {
    let Some(ctx) = context() else { return };
    let registry = AssetRegistry::new();
    let scene = import_gltf(&common::fox_path(), &registry).unwrap();
    let mesh = scene.meshes[0].skinned_mesh.clone();
    assert!(scene.clips.len() >= 3);
    let anims: Vec<(Arc<Clip>, f32)> = scene
        .clips
        .iter()
        .enumerate()
        .map(|(i, c)| (c.clone(), 0.29 + 0.41 * i as f32))
        .collect();
    let (mut wp, mut wn) = (0.0f32, 0.0f32);
    for palette in pipeline_palettes(&scene.rig, &mesh, &anims) {
        let (p, n) = compare(&ctx, &mesh, &palette);
        wp = wp.max(p);
        wn = wn.max(n);
    }
    eprintln!(
        "Fox ({} vertices, {} bones): max position error {wp:.3e} of bbox diagonal, max normal error {wn:.3e}",
        mesh.positions().len(),
        mesh.bone_count()
    );
    assert!(wp <= 1e-5, "position error {wp}");
    assert!(wn <= 1e-5, "normal error {wn}");
}

#[test]
fn compute_skinning_uses_eight_influences() {
    let Some(ctx) = context() else { return };
    let registry = AssetRegistry::new();
    let c = builtin::bake_character(&registry).unwrap();
    // The built-in mesh with 5 to 8 influences per vertex (pseudo-random bones and weights).
    let mut raw = builtin::character().mesh;
    let nb = raw.bones.len() as u64;
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    for inf in &mut raw.influences {
        let k = 5 + (next() % 4) as usize;
        inf.0 = (0..k)
            .map(|_| ((next() % nb) as u16, 0.05 + (next() % 1000) as f32 / 1000.0))
            .collect();
        inf.0.sort_by_key(|x| x.0);
        inf.0.dedup_by_key(|x| x.0);
        if inf.0.len() <= 4 {
            inf.0.push((((inf.0[0].0 as u64 + 1) % nb) as u16, 0.3));
            inf.0.sort_by_key(|x| x.0);
            inf.0.dedup_by_key(|x| x.0);
        }
    }
    assert!(
        raw.influences
            .iter()
            .filter(|i: &&RawVertexInfluences| i.0.len() > 4)
            .count()
            > raw.influences.len() / 2
    );
    let mesh8 = raw.bake().unwrap();
    assert!(!mesh8.joints_extra().is_empty());
    assert!(mesh8.weights_extra().iter().any(|w| w[0] > 0.0));
    let palettes = pipeline_palettes(&c.rig, &c.mesh, &[(c.run.clone(), 0.45)]);
    let (ep, en) = compare(&ctx, &mesh8, &palettes[0]);
    eprintln!(
        "8 influences: max position error {ep:.3e} of bbox diagonal, max normal error {en:.3e}"
    );
    assert!(ep <= 1e-5 && en <= 1e-5);
}

#[test]
fn skin_positions_rejects_short_and_non_finite_palettes() {
    let Some(ctx) = context() else { return };
    let registry = AssetRegistry::new();
    let c = builtin::bake_character(&registry).unwrap();
    let short = vec![[0.0f32; 12]; c.mesh.bone_count() - 1];
    assert!(matches!(
        SkinPass::skin_positions(&ctx, &c.mesh, &short),
        Err(GpuError::InvalidInput { .. })
    ));
    let mut bad = vec![[1., 0., 0., 0., 1., 0., 0., 0., 1., 0., 0., 0.]; c.mesh.bone_count()];
    bad[3][9] = f32::NAN;
    assert!(matches!(
        SkinPass::skin_positions(&ctx, &c.mesh, &bad),
        Err(GpuError::InvalidInput { .. })
    ));
}

/// Several frames through the ring, pipelined (each frame's read-back copy is submitted and
/// collected only at the end, so ring buffers are reused while earlier frames are in flight),
/// with the crowd growing at frame 4. Every frame's GPU buffer must equal, bit for bit, the
/// palettes a second, identical CPU-only pipeline computed for that frame.
fn ring_frames(ctx: &GpuContext, mode: PaletteUpload) {
    let registry = AssetRegistry::new();
    let c = builtin::bake_character(&registry).unwrap();
    let clips = [
        c.walk.clone(),
        c.run.clone(),
        c.idle.clone(),
        c.wave.clone(),
    ];
    let mut gpu_store = Store::new();
    let mut cpu_store = Store::new();
    let populate = |store: &mut Store, from: usize, to: usize| {
        for i in from..to {
            spawn(
                store,
                &c.rig,
                &c.mesh,
                &clips[i % 4],
                0.13 * i as f32,
                i as f32,
            );
        }
    };
    populate(&mut gpu_store, 0, 3);
    populate(&mut cpu_store, 0, 3);
    let mut gpu_anim = Animator::new(&mut gpu_store).unwrap();
    let mut cpu_anim = Animator::new(&mut cpu_store).unwrap();
    let initial = crowd_palette_len(&mut gpu_store).unwrap();
    assert_eq!(initial, 3 * c.mesh.bone_count());
    let mut ring = PaletteRing::new(ctx, mode, 3, initial).unwrap();
    let dt = 1.0 / 30.0;
    let mut pending = Vec::new();
    for frame in 0..8 {
        if frame == 4 {
            populate(&mut gpu_store, 3, 11);
            populate(&mut cpu_store, 3, 11);
        }
        let entries = crowd_palette_len(&mut gpu_store).unwrap();
        let generation = ring.generation();
        ring.write(ctx, entries, |p| {
            gpu_anim.run_frame_into(&mut gpu_store, dt, p)
        })
        .unwrap()
        .unwrap();
        let stats = ring.stats();
        assert_eq!(
            stats.grew,
            frame == 4,
            "frame {frame}: grew = {}",
            stats.grew
        );
        assert_eq!(ring.generation() != generation, frame == 4);
        assert!(ring.capacity() >= entries);
        assert_eq!(stats.bytes, entries as u64 * ENTRY_BYTES);
        assert_eq!(gpu_anim.palette_len(&gpu_store), entries);
        cpu_anim.run_frame(&mut cpu_store, dt).unwrap();
        let expected: Vec<u8> = bytemuck::cast_slice(cpu_anim.palettes(&cpu_store)).to_vec();
        assert_eq!(expected.len(), entries * 48);
        // Submit a copy of this frame's buffer now; read it at the end.
        let size = entries as u64 * ENTRY_BYTES;
        let dst = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("ring test read-back"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        enc.copy_buffer_to_buffer(ring.buffer().unwrap(), 0, &dst, 0, size);
        let sub = ctx.queue.submit([enc.finish()]);
        ring.submitted(Some(sub));
        pending.push((frame, dst, expected));
    }
    assert_eq!(ring.len(), 11 * c.mesh.bone_count());
    for (frame, dst, expected) in pending {
        let (tx, rx) = std::sync::mpsc::channel();
        dst.map_async(wgpu::MapMode::Read, .., move |r| tx.send(r).unwrap());
        ctx.device
            .poll(wgpu::PollType::wait_indefinitely())
            .unwrap();
        rx.recv().unwrap().unwrap();
        let got = dst.get_mapped_range(..).unwrap().to_vec();
        dst.unmap();
        assert!(
            got == expected,
            "{mode:?}: frame {frame}: GPU palette differs from the CPU pipeline's"
        );
        // Frames differ from each other (time advances), so equality is not trivial.
        assert!(expected.iter().any(|b| *b != 0));
    }
}

#[test]
fn ring_frames_are_bit_identical_to_cpu_palettes_in_every_mode() {
    let Some(ctx) = context() else { return };
    let mapped = ctx
        .features
        .contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS);
    eprintln!("MAPPABLE_PRIMARY_BUFFERS: {mapped}");
    if mapped {
        assert_eq!(PaletteUpload::best(&ctx), PaletteUpload::Mapped);
        ring_frames(&ctx, PaletteUpload::Mapped);
    } else {
        assert!(matches!(
            PaletteRing::new(&ctx, PaletteUpload::Mapped, 3, 10),
            Err(GpuError::MissingFeatures { .. })
        ));
    }
    ring_frames(&ctx, PaletteUpload::Staging);
    ring_frames(&ctx, PaletteUpload::WriteBuffer);
}

#[test]
fn ring_rejects_a_crowd_over_the_device_limit() {
    let Some(ctx) = context() else { return };
    let mut ring = PaletteRing::with_best_mode(&ctx, 16).unwrap();
    let too_many = (ctx
        .limits
        .max_storage_buffer_binding_size
        .min(ctx.limits.max_buffer_size)
        / ENTRY_BYTES
        + 1) as usize;
    let r = ring.write(&ctx, too_many, |_| ());
    assert!(matches!(r, Err(GpuError::TooLarge { .. })), "{r:?}");
}

#[test]
fn ring_falls_back_to_staging_on_a_device_without_mappable_storage() {
    // An engine's device created without MAPPABLE_PRIMARY_BUFFERS, on an adapter (lavapipe)
    // that has it: the fallback runs where the mapped path would otherwise be chosen.
    let Some(ctx) = common::wrapped_context(|_| {}, wgpu::Features::empty()) else {
        return;
    };
    assert!(
        !ctx.features
            .contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS)
    );
    assert_eq!(PaletteUpload::best(&ctx), PaletteUpload::Staging);
    match PaletteRing::new(&ctx, PaletteUpload::Mapped, 3, 10) {
        Err(GpuError::MissingFeatures { missing, .. }) => {
            assert!(missing.contains("MAPPABLE_PRIMARY_BUFFERS"), "{missing}")
        }
        r => panic!("mapped ring on a device without the feature: {r:?}"),
    }
    ring_frames(&ctx, PaletteUpload::best(&ctx));
}
