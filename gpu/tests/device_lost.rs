//! A lost device on a real adapter (lavapipe in CI): the palette ring and the renderers
//! return typed errors instead of panicking or writing into a dead buffer, and the CPU
//! pipeline goes on, giving the same palettes as a crowd that never touched the GPU.
#![allow(clippy::unwrap_used, clippy::panic)] // tests: a failed step is a failed test

mod common;

use glam::{Affine3A, Vec3};
use sinew_gpu::context::{GpuContext, GpuError};
use sinew_gpu::palette_ring::{PaletteRing, PaletteUpload, crowd_palette_len};
use sinew_gpu::render::{Camera, CrowdRenderer, Instance};
use sinew_gpu::skin_pass::SkinPass;
use sinew_jobs::animator::Animator;
use sinew_jobs::component::{AnimationToProcess, SkinRef, animated};
use sinew_jobs::frame::PaletteEntry;
use sinew_runtime::store::Store;

const DT: f32 = 1.0 / 60.0;

fn crowd(m: &common::Model) -> (Store, Animator) {
    let mut store = Store::new();
    for (i, clip) in m.clips.iter().enumerate() {
        let (a, b, c, d, e) = animated(
            m.rig.clone(),
            vec![AnimationToProcess::new(clip.clone()).at(0.25 * i as f32)],
        );
        store
            .spawn((a, b, c, d, e, SkinRef::new(m.mesh.clone())))
            .unwrap();
    }
    let animator = Animator::new(&mut store).unwrap();
    (store, animator)
}

fn bits(p: &[PaletteEntry]) -> Vec<u32> {
    p.iter().flatten().map(|f| f.to_bits()).collect()
}

fn modes(ctx: &GpuContext) -> Vec<PaletteUpload> {
    let mut modes = vec![PaletteUpload::Staging, PaletteUpload::WriteBuffer];
    if PaletteUpload::best(ctx) == PaletteUpload::Mapped {
        modes.push(PaletteUpload::Mapped);
    }
    modes
}

#[test]
fn a_lost_device_is_a_typed_error_and_the_cpu_pipeline_goes_on() {
    let Some(probe) = common::context() else {
        return;
    };
    let m = common::builtin_model();
    for mode in modes(&probe) {
        let ctx = GpuContext::new().unwrap();
        let (mut store, mut animator) = crowd(&m);
        let (mut ref_store, mut reference) = crowd(&m);
        let entries = crowd_palette_len(&mut store).unwrap();
        let mut ring = PaletteRing::new(&ctx, mode, 3, entries).unwrap();
        let mut renderer = CrowdRenderer::new(&ctx, &m.mesh, 64, 64).unwrap();
        for _ in 0..2 {
            ring.write(&ctx, entries, |p| {
                animator.run_frame_into(&mut store, DT, p).unwrap()
            })
            .unwrap();
            ring.submitted(None);
            reference.run_frame(&mut ref_store, DT).unwrap();
        }
        assert_eq!(ctx.device_lost(), None);
        // wgpu calls the device-lost callback from a poll, and only once the destroyed
        // device's queue has drained; the staging copy just submitted may still be in flight,
        // so the test waits for it (the ring's own non-blocking poll could see it pending).
        ctx.device.destroy();
        ctx.device
            .poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: None,
            })
            .unwrap();
        let mut ran = false;
        match ring.write(&ctx, entries, |_| ran = true) {
            Err(GpuError::DeviceLost { reason, .. }) => {
                assert!(reason.contains("Destroyed"), "{mode:?}: {reason}")
            }
            r => panic!("{mode:?}: write on a lost device gave {r:?}"),
        }
        assert!(ctx.device_lost().is_some_and(|r| r.contains("Destroyed")));
        assert!(!ran, "{mode:?}: the frame ran on a lost device");
        assert!(matches!(
            PaletteRing::new(&ctx, mode, 3, entries),
            Err(GpuError::DeviceLost { .. })
        ));
        let storage = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("palettes of a lost device"),
            size: 4096,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let camera = Camera::look_at(Vec3::new(0.0, 1.0, 4.0), Vec3::new(0.0, 1.0, 0.0));
        let r = renderer.render(
            &ctx,
            &storage,
            &[Instance::new(0, Affine3A::IDENTITY)],
            &camera,
        );
        assert!(matches!(r, Err(GpuError::DeviceLost { .. })), "{r:?}");
        let one = &reference.palettes(&ref_store)[..m.mesh.bone_count()];
        assert!(matches!(
            SkinPass::skin_positions(&ctx, &m.mesh, one),
            Err(GpuError::DeviceLost { .. })
        ));
        // The CPU pipeline goes on where the GPU stopped, frame for frame with the reference.
        for frame in 0..3 {
            animator.run_frame(&mut store, DT).unwrap();
            reference.run_frame(&mut ref_store, DT).unwrap();
            assert_eq!(
                bits(animator.palettes(&store)),
                bits(reference.palettes(&ref_store)),
                "{mode:?}: frame {frame} after the loss"
            );
        }
    }
}

#[test]
fn an_engine_device_that_dies_gives_map_errors_then_the_engines_reason() {
    let Some(probe) = common::context() else {
        return;
    };
    let m = common::builtin_model();
    // Only the modes that map: `WriteBuffer` hands the dead device to `queue.write_buffer`,
    // whose failure goes to the engine's uncaptured-error handler.
    for mode in modes(&probe)
        .into_iter()
        .filter(|m| *m != PaletteUpload::WriteBuffer)
    {
        let ctx = common::wrapped_context(
            |_| {},
            probe.features & wgpu::Features::MAPPABLE_PRIMARY_BUFFERS,
        )
        .unwrap();
        let (mut store, mut animator) = crowd(&m);
        let entries = crowd_palette_len(&mut store).unwrap();
        let mut ring = PaletteRing::new(&ctx, mode, 3, entries).unwrap();
        ring.write(&ctx, entries, |p| {
            animator.run_frame_into(&mut store, DT, p).unwrap()
        })
        .unwrap();
        ring.submitted(None);
        // The engine's device dies; sinew installed no callback on it, so it learns from the
        // buffers: within a ring's turn, a buffer cannot be mapped.
        ctx.device.destroy();
        assert_eq!(ctx.device_lost(), None);
        let mut failed = None;
        for _ in 0..ring.slot_count() {
            match ring.write(&ctx, entries, |_| ()) {
                Ok(()) => ring.submitted(None),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        match failed {
            Some(GpuError::Map(what)) => assert!(what.contains("palette ring slot"), "{what}"),
            other => panic!("{mode:?}: {other:?}"),
        }
        // The engine forwards its device-lost callback: from then on, its reason.
        ctx.report_device_lost("engine: device lost (test)");
        let mut ran = false;
        match ring.write(&ctx, entries, |_| ran = true) {
            Err(e @ GpuError::DeviceLost { .. }) => {
                assert!(e.to_string().contains("engine: device lost (test)"), "{e}")
            }
            r => panic!("{mode:?}: {r:?}"),
        }
        assert!(!ran);
        // The CPU pipeline goes on.
        animator.run_frame(&mut store, DT).unwrap();
        assert_eq!(animator.palettes(&store).len(), entries);
    }
}
