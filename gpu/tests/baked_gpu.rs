//! The baked-texture shaders on a real adapter (lavapipe in CI): the compute variant (same WGSL
//! functions as the instanced draw) against the real CPU pipeline at frame times, against the
//! CPU mirror of the shader between frames and in cross-fades, RGBA16F, and the draw itself.
#![allow(clippy::unwrap_used, clippy::panic)] // tests: a failed step is a failed test

mod common;

use common::{Model, bake, builtin_model, context, fox_model, model_size};
use glam::{Affine3A, Mat4, Quat, Vec3};
use sinew_gpu::baked::compute::BakedComputeSkinner;
use sinew_gpu::baked::draw::BakedRenderer;
use sinew_gpu::baked::{BakedAnimationGpu, BakedInstance, BakedTexelFormat, NO_CLIP};
use sinew_gpu::context::{GpuContext, GpuError};
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::SkinnedMesh;
use sinew_jobs::bake_texture::BakedAnimationTexture;
use sinew_jobs::component::{
    AnimationToProcess, EntityTransform, FrameSlot, RootMotion, SkinRef, animated,
};
use sinew_jobs::pipeline::PipelineConfig;
use sinew_runtime::store::Store;

/// The real pipeline (clock node off, root motion in place): one palette per (clip, time).
fn cpu_palettes(m: &Model, requests: &[(usize, f32)]) -> Vec<Vec<[f32; 12]>> {
    let mut store = Store::new();
    let config = PipelineConfig {
        advance_clocks: false,
        ..PipelineConfig::default()
    };
    let mut animator = Animator::with(&mut store, config, |_, _| {}).unwrap();
    let mut entities = Vec::new();
    for &(c, t) in requests {
        let e = store
            .spawn(animated(
                m.rig.clone(),
                vec![AnimationToProcess::new(m.clips[c].clone()).at(t)],
            ))
            .unwrap();
        store.insert(e, SkinRef::new(m.mesh.clone())).unwrap();
        store.insert(e, RootMotion::default()).unwrap();
        store.insert(e, EntityTransform::default()).unwrap();
        entities.push(e);
    }
    animator.run_frame(&mut store, 0.0).unwrap();
    let palettes = animator.palettes(&store);
    entities
        .iter()
        .map(|e| {
            let s = *store.get::<FrameSlot>(*e).unwrap();
            palettes[s.palette_offset as usize..(s.palette_offset + s.palette_count) as usize]
                .to_vec()
        })
        .collect()
}

fn world(i: usize) -> Affine3A {
    if i.is_multiple_of(3) {
        Affine3A::IDENTITY
    } else {
        Affine3A::from_rotation_translation(
            Quat::from_rotation_y(0.3 * i as f32),
            Vec3::new(i as f32 * 0.5, 0.0, -(i as f32)),
        )
    }
}

/// Max distance between GPU world positions (instance-major) and `mesh.skin_cpu(palette)`
/// moved by each instance's world transform.
fn max_error(
    mesh: &SkinnedMesh,
    gpu: &[Vec3],
    palettes: &[Vec<[f32; 12]>],
    worlds: &[Affine3A],
) -> f32 {
    let nv = mesh.positions().len();
    assert_eq!(gpu.len(), nv * palettes.len());
    let mut worst = 0.0f32;
    for (i, (p, w)) in palettes.iter().zip(worlds).enumerate() {
        let (cpu, _) = mesh.skin_cpu(p);
        for (g, c) in gpu[i * nv..(i + 1) * nv].iter().zip(&cpu) {
            worst = worst.max((*g - w.transform_point3(*c)).length());
        }
    }
    worst
}

/// At frame times the shader's positions equal the CPU pipeline's within 1e-5 of the model
/// size, at global time 0 (playback time = phase) and at global time 3.25 s with speeds of 1
/// and 0.5 (phase chosen so the playback time is the frame time).
fn check_frame_times(ctx: &GpuContext, m: &Model) {
    let baked = bake(ctx, m, 30.0);
    let anim = BakedAnimationGpu::new(ctx, &baked, &m.mesh, BakedTexelFormat::Rgba32Float).unwrap();
    let skinner = BakedComputeSkinner::new(ctx);
    let size = model_size(&m.mesh);
    let mut requests = Vec::new();
    for (c, info) in baked.clips.iter().enumerate() {
        for k in (0..info.intervals().max(1)).step_by(4) {
            requests.push((c, info.frame_time(k)));
        }
        if info.looping != 0 {
            requests.push((c, info.frame_time(5) + info.duration)); // one loop later
        }
    }
    let cpu = cpu_palettes(m, &requests);
    let worlds: Vec<Affine3A> = (0..requests.len()).map(world).collect();
    for (global, speed) in [(0.0f32, 1.0f32), (3.25, 1.0), (3.25, 0.5)] {
        let instances: Vec<BakedInstance> = requests
            .iter()
            .zip(&worlds)
            .map(|(&(c, t), w)| BakedInstance::new(*w, c as u32, t - speed * global, speed))
            .collect();
        let gpu = skinner.skin(ctx, &anim, &instances, global).unwrap();
        let e = max_error(&m.mesh, &gpu, &cpu, &worlds) / size;
        eprintln!(
            "{}: {} instances at frame times, global {global}, speed {speed}: relative error {e:e}",
            m.name,
            instances.len()
        );
        assert!(
            e <= 1e-5,
            "{}: relative error {e} at global time {global}",
            m.name
        );
    }
    // Not vacuous: different frames give different positions.
    let a = skinner
        .skin(
            ctx,
            &anim,
            &[BakedInstance::new(Affine3A::IDENTITY, 1, 0.0, 1.0)],
            0.0,
        )
        .unwrap();
    let b = skinner
        .skin(
            ctx,
            &anim,
            &[BakedInstance::new(Affine3A::IDENTITY, 1, 0.0, 1.0)],
            0.3,
        )
        .unwrap();
    let moved = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (*x - *y).length())
        .fold(0.0, f32::max);
    assert!(moved / size > 1e-3);
}

#[test]
fn shader_matches_the_cpu_pipeline_at_frame_times_builtin() {
    let Some(ctx) = context() else { return };
    eprintln!(
        "adapter: {} ({:?}, {:?})",
        ctx.adapter_info.name, ctx.adapter_info.backend, ctx.adapter_info.device_type
    );
    check_frame_times(&ctx, &builtin_model());
}

#[test]
fn shader_matches_the_cpu_pipeline_at_frame_times_fox() {
    let Some(ctx) = context() else { return };
    check_frame_times(&ctx, &fox_model("Fox"));
}

/// Between frames and during cross-fades the shader computes what the CPU mirror
/// (`BakedAnimationTexture::sample_palette`, per-element matrix lerp) does; in RGBA16F it reads
/// the half-rounded texels.
#[test]
fn shader_interpolation_and_cross_fade_match_the_cpu_mirror() {
    let Some(ctx) = context() else { return };
    let m = builtin_model();
    let baked = bake(&ctx, &m, 30.0);
    let skinner = BakedComputeSkinner::new(&ctx);
    let size = model_size(&m.mesh);
    let nb = m.mesh.bone_count();
    let global = 1.7f32;
    // (clip, phase, speed) now, and an optional (previous clip, phase, speed, fade start, fade duration).
    type Fade = Option<(u32, f32, f32, f32, f32)>;
    let cases: Vec<(u32, f32, f32, Fade)> = vec![
        (0, 0.013, 1.0, None),
        (1, 0.41, 0.8, None),
        (2, -5.02, 1.3, None), // negative playback time wraps
        (3, 0.123, 1.0, None),
        (2, 0.2, 1.0, Some((1, 0.05, 1.0, 1.2, 1.0))), // halfway through the fade (w = 0.5)
        (2, 0.2, 1.0, Some((0, 0.3, 1.0, 1.0, 0.35))), // fade finished (w = 1)
        (1, 0.2, 1.0, Some((3, 0.7, 1.0, 2.0, 0.5))),  // fade not started (w = 0)
    ];
    let instances: Vec<BakedInstance> = cases
        .iter()
        .enumerate()
        .map(|(i, &(c, p, s, fade))| {
            let inst = BakedInstance::new(world(i), c, p, s);
            match fade {
                Some((pc, pp, ps, fs, fd)) => inst.fading_from(pc, pp, ps, fs, fd),
                None => inst,
            }
        })
        .collect();
    let mirror = |tex: &BakedAnimationTexture| -> Vec<Vec<[f32; 12]>> {
        instances
            .iter()
            .map(|inst| {
                let mut cur = vec![[0.0f32; 12]; nb];
                tex.sample_palette(inst.clip as usize, inst.playback_time(global), &mut cur)
                    .unwrap();
                if inst.prev_clip == NO_CLIP || inst.fade_duration <= 0.0 {
                    return cur;
                }
                let w = ((global - inst.fade_start) / inst.fade_duration).clamp(0.0, 1.0);
                let mut prev = vec![[0.0f32; 12]; nb];
                tex.sample_palette(
                    inst.prev_clip as usize,
                    inst.prev_phase + inst.prev_speed * global,
                    &mut prev,
                )
                .unwrap();
                cur.iter()
                    .zip(&prev)
                    .map(|(c, p)| std::array::from_fn(|e| p[e] + (c[e] - p[e]) * w))
                    .collect()
            })
            .collect()
    };
    let worlds: Vec<Affine3A> = (0..instances.len()).map(world).collect();
    for format in [BakedTexelFormat::Rgba32Float, BakedTexelFormat::Rgba16Float] {
        let anim = BakedAnimationGpu::new(&ctx, &baked, &m.mesh, format).unwrap();
        let reference = match format {
            BakedTexelFormat::Rgba32Float => baked.clone(),
            BakedTexelFormat::Rgba16Float => baked.quantized_f16(),
        };
        let gpu = skinner.skin(&ctx, &anim, &instances, global).unwrap();
        let e = max_error(&m.mesh, &gpu, &mirror(&reference), &worlds) / size;
        eprintln!(
            "{format:?}: GPU vs CPU mirror between frames and in fades: relative error {e:e}"
        );
        assert!(e <= 1e-5, "{format:?}: relative error {e}");
        if format == BakedTexelFormat::Rgba16Float {
            // Half precision is visible against the full-precision mirror.
            let full = max_error(&m.mesh, &gpu, &mirror(&baked), &worlds);
            assert!(full > 0.0 && full / size < 2e-3, "half vs full: {full}");
        }
    }
    // The fade matters: halfway through it differs from the current clip alone.
    let anim =
        BakedAnimationGpu::new(&ctx, &baked, &m.mesh, BakedTexelFormat::Rgba32Float).unwrap();
    let mut plain = instances[4];
    plain.prev_clip = NO_CLIP;
    let a = skinner.skin(&ctx, &anim, &[instances[4]], global).unwrap();
    let b = skinner.skin(&ctx, &anim, &[plain], global).unwrap();
    assert!(
        a.iter()
            .zip(&b)
            .map(|(x, y)| (*x - *y).length())
            .fold(0.0, f32::max)
            / size
            > 1e-3
    );
}

#[test]
fn bad_instances_and_meshes_are_rejected() {
    let Some(ctx) = context() else { return };
    let m = builtin_model();
    let baked = bake(&ctx, &m, 15.0);
    let anim =
        BakedAnimationGpu::new(&ctx, &baked, &m.mesh, BakedTexelFormat::Rgba32Float).unwrap();
    let skinner = BakedComputeSkinner::new(&ctx);
    let bad_clip = BakedInstance::new(Affine3A::IDENTITY, 4, 0.0, 1.0);
    assert!(matches!(
        skinner.skin(&ctx, &anim, &[bad_clip], 0.0),
        Err(GpuError::InvalidInput { .. })
    ));
    let bad_prev =
        BakedInstance::new(Affine3A::IDENTITY, 0, 0.0, 1.0).fading_from(9, 0.0, 1.0, 0.0, 1.0);
    assert!(matches!(
        anim.validate_instances(&[bad_prev]),
        Err(GpuError::InvalidInput { .. })
    ));
    let nan = BakedInstance::new(Affine3A::IDENTITY, 0, f32::NAN, 1.0);
    assert!(matches!(
        anim.validate_instances(&[nan]),
        Err(GpuError::InvalidInput { .. })
    ));
    let fox = fox_model("Fox");
    assert!(matches!(
        BakedAnimationGpu::new(&ctx, &baked, &fox.mesh, BakedTexelFormat::Rgba32Float),
        Err(GpuError::InvalidInput { .. })
    ));
    let mut too_wide = baked.clone();
    too_wide.width = ctx.limits.max_texture_dimension_2d + 1;
    assert!(matches!(
        BakedAnimationGpu::new(&ctx, &too_wide, &m.mesh, BakedTexelFormat::Rgba32Float),
        Err(GpuError::TooLarge { .. })
    ));
    // Memory accounting: walk at 15 Hz is 16 frames × 45 bones × 3 texels × 16 bytes.
    assert_eq!(anim.clip_bytes(1), Some(16 * 45 * 3 * 16));
}

/// The instanced draw puts characters on screen, and they move with the global time alone.
#[test]
fn instanced_draw_renders_and_animates() {
    let Some(ctx) = context() else { return };
    let m = builtin_model();
    let baked = bake(&ctx, &m, 30.0);
    let anim =
        BakedAnimationGpu::new(&ctx, &baked, &m.mesh, BakedTexelFormat::Rgba32Float).unwrap();
    let (w, h) = (96u32, 64u32);
    let mut renderer = BakedRenderer::new(&ctx, &anim, w, h).unwrap();
    let instances: Vec<BakedInstance> = (0..3)
        .map(|i| {
            BakedInstance::new(
                Affine3A::from_translation(Vec3::new(i as f32 - 1.0, 0.0, 0.0)),
                3,
                0.0,
                1.0,
            )
        })
        .collect();
    renderer.set_instances(&ctx, &anim, &instances).unwrap();
    // Camera at z = +4 looking at the characters' chests (they face +Z).
    let proj = Mat4::from_cols_array(&perspective(0.9, w as f32 / h as f32, 0.1, 50.0));
    let view = look_at(Vec3::new(0.0, 1.0, 4.0), Vec3::new(0.0, 1.0, 0.0));
    let vp = proj * view;
    let background = |px: &[u8]| px[0] == 140 && px[1] == 166 && px[2] == 191;
    let t0 = renderer.render(&ctx, &anim, vp, 0.0).unwrap();
    let a = renderer.read_pixels(&ctx).unwrap();
    assert_eq!(a.len(), (w * h * 4) as usize);
    let covered = a.chunks_exact(4).filter(|p| !background(p)).count();
    assert!(
        covered > (w * h / 20) as usize && covered < (w * h) as usize,
        "covered {covered}"
    );
    renderer.render(&ctx, &anim, vp, 0.5).unwrap();
    let b = renderer.read_pixels(&ctx).unwrap();
    let changed = a
        .chunks_exact(4)
        .zip(b.chunks_exact(4))
        .filter(|(x, y)| x != y)
        .count();
    assert!(
        changed > 20,
        "the wave did not move: {changed} pixels changed"
    );
    assert!(t0.wall.is_some());
}

/// Right-handed perspective (depth 0..1), column-major.
fn perspective(fov_y: f32, aspect: f32, near: f32, far: f32) -> [f32; 16] {
    let f = 1.0 / (0.5 * fov_y).tan();
    let r = far / (near - far);
    [
        f / aspect,
        0.0,
        0.0,
        0.0,
        0.0,
        f,
        0.0,
        0.0,
        0.0,
        0.0,
        r,
        -1.0,
        0.0,
        0.0,
        r * near,
        0.0,
    ]
}

/// Right-handed look-at with +Y up.
fn look_at(eye: Vec3, target: Vec3) -> Mat4 {
    let f = (target - eye).normalize();
    let s = f.cross(Vec3::Y).normalize();
    let u = s.cross(f);
    Mat4::from_cols(
        glam::Vec4::new(s.x, u.x, -f.x, 0.0),
        glam::Vec4::new(s.y, u.y, -f.y, 0.0),
        glam::Vec4::new(s.z, u.z, -f.z, 0.0),
        glam::Vec4::new(-s.dot(eye), -u.dot(eye), f.dot(eye), 1.0),
    )
}
