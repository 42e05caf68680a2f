//! sinew on an engine's device (`GpuContext::from_device`), on a real adapter (lavapipe in CI).
//!
//! The device is created with only sinew's `required_limits` (and the adapter's sizes), so
//! each pass below shows that the limits sinew states are enough: a pipeline needing more
//! would fail wgpu's validation. Each pass's result is checked against the CPU (skinning,
//! RBF) or against the other renderer (baked crowd: compute rasteriser against the graphics
//! pipeline). A device below those limits is refused with the limit named, and palettes over
//! the storage binding limit are refused before any frame runs.
#![allow(clippy::unwrap_used, clippy::panic)] // tests: a failed step is a failed test

mod common;

use glam::{Affine3A, Quat, Vec3};
use sinew_gpu::baked::draw::BakedRenderer;
use sinew_gpu::baked::{BakedAnimationGpu, BakedInstance, BakedTexelFormat};
use sinew_gpu::context::{GpuContext, GpuError, LimitShortfall};
use sinew_gpu::palette_ring::{ENTRY_BYTES, PaletteRing, PaletteUpload};
use sinew_gpu::raster::ComputeBakedRenderer;
use sinew_gpu::rbf::GpuRbfDeformer;
use sinew_gpu::render::{Camera, CrowdRenderer, Instance};
use sinew_gpu::skin_pass::SkinPass;
use sinew_jobs::deform::{BakeOptions, RbfBinding, RbfDeformer, bake};
use sinew_jobs::frame::PaletteEntry;
use sinew_runtime::store::Store;
use std::sync::Arc;

fn foreground(pixels: &[u8]) -> Vec<bool> {
    let bg = [pixels[0], pixels[1], pixels[2], pixels[3]];
    pixels
        .chunks_exact(4)
        .map(|p| p.iter().zip(bg).any(|(a, b)| a.abs_diff(b) > 2))
        .collect()
}

#[test]
fn every_pass_runs_on_an_engine_device_with_only_sinews_limits() {
    let Some(ctx) = common::wrapped_context(|_| {}, wgpu::Features::empty()) else {
        return;
    };
    assert!(ctx.instance.is_none());
    assert_eq!(ctx.limits.max_storage_buffers_per_shader_stage, 10);
    let m = common::builtin_model();

    // Palette ring (staging: the device has no mappable storage) and compute skinning.
    let mut store = Store::new();
    for (i, clip) in m.clips.iter().enumerate() {
        let (a, b, c, d, e) = sinew_jobs::component::animated(
            m.rig.clone(),
            vec![sinew_jobs::component::AnimationToProcess::new(clip.clone()).at(0.3 * i as f32)],
        );
        store
            .spawn((
                a,
                b,
                c,
                d,
                e,
                sinew_jobs::component::SkinRef::new(m.mesh.clone()),
            ))
            .unwrap();
    }
    let (_ring, palette) = common::first_frame(&ctx, &mut store);
    let bones = m.mesh.bone_count();
    let one = &palette[bones..2 * bones];
    let (cpu_p, _) = m.mesh.skin_cpu(one);
    let (gpu_p, _) = SkinPass::skin_positions(&ctx, &m.mesh, one).unwrap();
    let worst = gpu_p
        .iter()
        .zip(&cpu_p)
        .map(|(g, c)| (*g - *c).length())
        .fold(0.0f32, f32::max);
    assert!(
        worst < 1e-5 * common::model_size(&m.mesh),
        "skinning: {worst}"
    );

    // RBF compute.
    let low: Vec<Vec3> = (0..20)
        .map(|i| {
            let t = i as f32 * 0.7;
            Vec3::new(t.sin(), (1.3 * t).cos(), (0.5 * t).sin())
        })
        .collect();
    let high: Vec<Vec3> = (0..300)
        .map(|i| {
            let t = i as f32 * 0.11;
            0.8 * Vec3::new(t.cos(), (0.7 * t).sin(), (1.9 * t).cos())
        })
        .collect();
    let binding: Arc<RbfBinding> =
        Arc::new(bake(&low, &high, &BakeOptions::normalized(2.0)).unwrap());
    let posed: Vec<Vec3> = low.iter().map(|p| *p * 1.1 + Vec3::X * 0.2).collect();
    let mut cpu = RbfDeformer::new(binding.clone());
    let mut want = vec![Vec3::ZERO; cpu.n_high()];
    cpu.deform(&posed, &mut want).unwrap();
    let mut gpu = GpuRbfDeformer::new(&ctx, &binding).unwrap();
    let sub = gpu.deform(&ctx, &posed).unwrap();
    gpu.wait(&ctx, sub).unwrap();
    let got = gpu.read_back(&ctx).unwrap();
    let worst = got
        .iter()
        .zip(&want)
        .map(|(g, c)| (*g - *c).length())
        .fold(0.0f32, f32::max);
    assert!(worst < 1e-5, "rbf: {worst}");
    assert!(
        want.iter()
            .zip(&high)
            .any(|(w, r)| (*w - *r).length() > 0.05)
    );

    // Baked crowd: graphics pipeline and compute rasteriser agree.
    let (w, h) = (160u32, 100u32);
    let baked = common::bake(&ctx, &m, 30.0);
    let anim =
        BakedAnimationGpu::new(&ctx, &baked, &m.mesh, BakedTexelFormat::Rgba32Float).unwrap();
    let size = common::model_size(&m.mesh);
    let instances: Vec<BakedInstance> = (0..3)
        .map(|i| {
            let world = Affine3A::from_rotation_translation(
                Quat::from_rotation_y(0.4 * i as f32),
                Vec3::new((i as f32 - 1.0) * 0.7 * size, 0.0, 0.0),
            );
            BakedInstance::new(world, i, 0.2 * i as f32, 1.0)
        })
        .collect();
    let centre = Vec3::new(0.0, 0.35 * size, 0.0);
    let camera = Camera::look_at(centre + Vec3::new(0.0, 0.3, 1.0) * 2.2 * size, centre);
    let vp = camera.view_proj(w as f32 / h as f32);
    let mut hw = BakedRenderer::new(&ctx, &anim, w, h).unwrap();
    hw.set_instances(&ctx, &anim, &instances).unwrap();
    hw.render(&ctx, &anim, vp, 0.5).unwrap();
    let mut cs = ComputeBakedRenderer::new(&ctx, &anim, &m.mesh, w, h).unwrap();
    cs.set_instances(&ctx, &anim, &instances).unwrap();
    cs.render(&ctx, &anim, vp, 0.5).unwrap();
    let a = foreground(&hw.read_pixels(&ctx).unwrap());
    let b = foreground(&cs.read_pixels(&ctx).unwrap());
    let inter = a.iter().zip(&b).filter(|(x, y)| **x && **y).count();
    let union = a.iter().zip(&b).filter(|(x, y)| **x || **y).count();
    let n = a.iter().filter(|x| **x).count();
    assert!(n > 300, "baked crowd barely visible: {n} px");
    let iou = inter as f32 / union as f32;
    assert!(iou > 0.95, "baked compute vs hardware IoU {iou}");
}

#[test]
fn a_device_below_sinews_limits_is_refused_with_the_limit_named() {
    let Some((adapter, device, queue)) = common::engine_device(
        |l| l.max_storage_buffers_per_shader_stage = 8,
        wgpu::Features::empty(),
    ) else {
        return;
    };
    match GpuContext::from_device(adapter, device, queue) {
        Err(GpuError::MissingLimits { missing, .. }) => {
            assert_eq!(
                missing,
                vec![LimitShortfall {
                    limit: "max_storage_buffers_per_shader_stage",
                    device: 8,
                    needed: 10,
                }]
            );
            let text = GpuError::MissingLimits {
                adapter: "a".into(),
                missing,
            }
            .to_string();
            assert!(
                text.contains("max_storage_buffers_per_shader_stage is 8 (sinew needs 10)"),
                "{text}"
            );
        }
        r => panic!("a device with 8 storage buffers per stage was accepted: {r:?}"),
    }
}

#[test]
fn palettes_over_the_storage_binding_limit_are_refused_before_a_frame() {
    // The real adapter's limit, without allocating anything.
    let Some(own) = common::context() else { return };
    let max = own.max_palette_entries();
    assert_eq!(
        max,
        own.limits
            .max_storage_buffer_binding_size
            .min(own.limits.max_buffer_size)
            / ENTRY_BYTES
    );
    assert!(own.check_palette_len(max as usize).is_ok());
    assert!(matches!(
        own.check_palette_len(max as usize + 1),
        Err(GpuError::TooLarge { .. })
    ));

    // An engine device that binds at most 1 000 entries.
    let limit = 1000 * ENTRY_BYTES;
    let Some(ctx) = common::wrapped_context(
        |l| l.max_storage_buffer_binding_size = limit,
        own.features & wgpu::Features::MAPPABLE_PRIMARY_BUFFERS,
    ) else {
        return;
    };
    assert_eq!(ctx.max_palette_entries(), 1000);
    assert!(ctx.check_palette_len(1000).is_ok());
    match ctx.check_palette_len(1001) {
        Err(GpuError::TooLarge {
            size,
            limit: l,
            what,
        }) => {
            assert_eq!((size, l), (1001 * ENTRY_BYTES, limit));
            assert!(what.contains("1001 entries"), "{what}");
        }
        r => panic!("{r:?}"),
    }
    for mode in [
        PaletteUpload::best(&ctx),
        PaletteUpload::Staging,
        PaletteUpload::WriteBuffer,
    ] {
        assert!(
            matches!(
                PaletteRing::new(&ctx, mode, 3, 1001),
                Err(GpuError::TooLarge { .. })
            ),
            "{mode:?}"
        );
        // A ring that fits, asked to grow past the limit: refused before the frame runs.
        let mut ring = PaletteRing::new(&ctx, mode, 3, 900).unwrap();
        let mut ran = false;
        let r = ring.write(&ctx, 1001, |_| ran = true);
        assert!(matches!(r, Err(GpuError::TooLarge { .. })), "{r:?}");
        assert!(!ran, "{mode:?}: the frame ran");
        // Growing up to the limit is fine.
        ring.write(&ctx, 1000, |p| assert_eq!(p.len(), 1000))
            .unwrap();
    }
    // A renderer given an engine buffer over the binding limit.
    let m = common::builtin_model();
    let mut renderer = CrowdRenderer::new(&ctx, &m.mesh, 32, 32).unwrap();
    let big = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("engine palettes over the limit"),
        size: 1001 * ENTRY_BYTES,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let camera = Camera::look_at(Vec3::new(0.0, 1.0, 4.0), Vec3::new(0.0, 1.0, 0.0));
    let r = renderer.render(&ctx, &big, &[Instance::new(0, Affine3A::IDENTITY)], &camera);
    assert!(matches!(r, Err(GpuError::TooLarge { .. })), "{r:?}");
}

#[test]
fn mapped_palette_views_an_engine_buffer_and_refuses_a_ragged_range() {
    let Some(ctx) = common::wrapped_context(|_| {}, wgpu::Features::empty()) else {
        return;
    };
    // An engine's staging buffer: two entries, plus 16 bytes that are no whole entry.
    let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("engine staging"),
        size: 2 * ENTRY_BYTES + 16,
        usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: true,
    });
    let written: Vec<PaletteEntry> = (0..2)
        .map(|e| std::array::from_fn(|i| (e * 12 + i) as f32 + 0.25))
        .collect();
    {
        let mut ragged = buffer.get_mapped_range_mut(..).unwrap();
        match sinew_gpu::palette_ring::mapped_palette(&mut ragged) {
            Err(GpuError::Map(what)) => assert!(what.contains("112 bytes"), "{what}"),
            r => panic!("a 112-byte range viewed as palette entries: {r:?}"),
        }
    }
    {
        let mut view = buffer.get_mapped_range_mut(0..2 * ENTRY_BYTES).unwrap();
        let entries = sinew_gpu::palette_ring::mapped_palette(&mut view).unwrap();
        assert_eq!(entries.len(), 2);
        // Zero-filled by wgpu before first use.
        assert!(entries.iter().flatten().all(|f| f.to_bits() == 0));
        entries.copy_from_slice(&written);
    }
    buffer.unmap();
    let got = sinew_gpu::skin_pass::read_buffer_bytes(
        &ctx,
        ctx.device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor::default()),
        &buffer,
        2 * ENTRY_BYTES,
    )
    .unwrap();
    assert_eq!(got, bytemuck::cast_slice::<PaletteEntry, u8>(&written));
}
