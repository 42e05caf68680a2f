//! The engine-device example's path on a real adapter (lavapipe in CI): sinew wraps a device
//! the engine created, with only the limits sinew says it needs, and writes palettes into the
//! engine's own mapped buffer.
//!
//! References: the palettes read back from the engine's storage buffer must equal, bit for
//! bit, those of the same crowd animated separately by `Animator::run_frame` (the CPU
//! pipeline's own buffer), frame by frame. The image must have coverage where the camera puts
//! each character: its CPU-skinned vertices (reference palettes, instance transform) are
//! projected with the same camera, and the image's foreground must fill part of each
//! character's projected box and lie almost nowhere else. The compute rasteriser's image must
//! cover the same pixels as the hardware one.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests unwrap: a failure is the test failing

use glam::Vec2;
use sinew_examples::engine_device::{
    DeviceRequest, EngineOptions, EngineRun, create_engine_device, run_engine, spawn_crowd,
};
use sinew_fixtures::builtin;
use sinew_gpu::render::RgbaImage;
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::AssetRegistry;
use sinew_jobs::frame::PaletteEntry;
use sinew_runtime::store::Store;

/// The engine's run, or `None` (with the reason printed) when the machine has no adapter.
fn engine_run(request: DeviceRequest, options: &EngineOptions) -> Option<EngineRun> {
    let Some(engine) = create_engine_device(request).unwrap() else {
        eprintln!("SKIPPED: no GPU adapter (install mesa-vulkan-drivers for lavapipe)");
        return None;
    };
    Some(run_engine(&engine, options).unwrap())
}

/// Each frame's palettes of the same crowd through the CPU pipeline alone.
fn cpu_palettes(options: &EngineOptions) -> Vec<Vec<PaletteEntry>> {
    let character = builtin::bake_character(&AssetRegistry::new()).unwrap();
    let mut store = Store::new();
    spawn_crowd(&mut store, &character, options.count).unwrap();
    let mut animator = Animator::new(&mut store).unwrap();
    (0..options.frames)
        .map(|_| {
            animator.run_frame(&mut store, options.dt).unwrap();
            animator.palettes(&store).to_vec()
        })
        .collect()
}

fn bits(p: &[PaletteEntry]) -> Vec<u32> {
    p.iter().flatten().map(|f| f.to_bits()).collect()
}

/// Pixels that differ from the corner's (the clear colour) by more than 2 in some channel.
fn foreground(image: &RgbaImage) -> Vec<bool> {
    let bg = image.pixel(0, 0).unwrap();
    image
        .pixels
        .chunks_exact(4)
        .map(|p| p.iter().zip(bg).any(|(a, b)| a.abs_diff(b) > 2))
        .collect()
}

fn check_palettes(run: &EngineRun, options: &EngineOptions) {
    let cpu = cpu_palettes(options);
    assert_eq!(run.palettes.len(), options.frames);
    let per_character = run.mesh.bone_count();
    for (frame, (gpu, cpu)) in run.palettes.iter().zip(&cpu).enumerate() {
        assert_eq!(gpu.len(), options.count * per_character, "frame {frame}");
        assert_eq!(bits(gpu), bits(cpu), "frame {frame}: palettes differ");
    }
    // The crowd moves: the palettes of the first and last frames are not the same.
    assert_ne!(bits(&cpu[0]), bits(&cpu[options.frames - 1]));
}

fn check_coverage(run: &EngineRun, options: &EngineOptions) {
    let cpu = cpu_palettes(options);
    let last = cpu.last().unwrap();
    let (w, h) = (run.image.width, run.image.height);
    let gpu = foreground(&run.image);
    let total = gpu.iter().filter(|m| **m).count();
    assert!(!gpu[0], "corner must be background");
    // Each character's projected box, from its CPU-skinned vertices.
    let bones = run.mesh.bone_count();
    let boxes: Vec<(Vec2, Vec2)> = run
        .instances
        .iter()
        .map(|inst| {
            let base = inst.palette_base as usize;
            let (positions, _) = run.mesh.skin_cpu(&last[base..base + bones]);
            let world = inst.world();
            positions.iter().fold(
                (Vec2::splat(f32::MAX), Vec2::splat(f32::MIN)),
                |(lo, hi), p| {
                    let px = run
                        .camera
                        .project(world.transform_point3(*p), w, h)
                        .unwrap();
                    (lo.min(px), hi.max(px))
                },
            )
        })
        .collect();
    let inside = |x: u32, y: u32, (lo, hi): (Vec2, Vec2), margin: f32| {
        let p = Vec2::new(x as f32 + 0.5, y as f32 + 0.5);
        p.cmpge(lo - margin).all() && p.cmple(hi + margin).all()
    };
    let mut outside = 0usize;
    let mut per_box = vec![0usize; boxes.len()];
    for (i, _) in gpu.iter().enumerate().filter(|(_, m)| **m) {
        let (x, y) = (i as u32 % w, i as u32 / w);
        match boxes.iter().position(|b| inside(x, y, *b, 1.0)) {
            Some(b) => per_box[b] += 1,
            None => outside += 1,
        }
    }
    eprintln!(
        "{} px foreground, {outside} outside the projected boxes; per character {per_box:?}",
        total
    );
    assert!(
        outside * 200 <= total,
        "{outside} of {total} px outside every character"
    );
    for (i, (n, (lo, hi))) in per_box.iter().zip(&boxes).enumerate() {
        let area = (hi.x - lo.x) * (hi.y - lo.y);
        assert!(
            (lo.cmpge(Vec2::ZERO).all() && hi.x <= w as f32 && hi.y <= h as f32),
            "character {i} is off screen: {lo}..{hi}"
        );
        // A standing figure fills a good part of its box, and never all of it.
        let fill = *n as f32 / area;
        assert!(
            (0.1..0.9).contains(&fill) && *n > 100,
            "character {i}: {n} px in a box of {area} px"
        );
    }
    // The compute rasteriser covers the same pixels as the hardware pipeline.
    let cs = foreground(&run.compute_image);
    let inter = gpu.iter().zip(&cs).filter(|(a, b)| **a && **b).count();
    let union = gpu.iter().zip(&cs).filter(|(a, b)| **a || **b).count();
    let iou = inter as f32 / union.max(1) as f32;
    assert!(iou >= 0.95, "compute vs hardware IoU {iou}");
}

#[test]
fn palettes_in_the_engines_mapped_buffer_equal_the_cpu_pipelines() {
    let options = EngineOptions::default();
    let request = DeviceRequest {
        mappable: true,
        minimal_limits: true,
    };
    let Some(run) = engine_run(request, &options) else {
        return;
    };
    eprintln!("adapter '{}', mapped storage: {}", run.adapter, run.mapped);
    check_palettes(&run, &options);
    check_coverage(&run, &options);
}

#[test]
fn staging_path_without_mappable_storage_gives_the_same_palettes() {
    let options = EngineOptions {
        frames: 4,
        ..EngineOptions::default()
    };
    let request = DeviceRequest {
        mappable: false,
        minimal_limits: true,
    };
    let Some(run) = engine_run(request, &options) else {
        return;
    };
    assert!(
        !run.mapped,
        "the device was created without MAPPABLE_PRIMARY_BUFFERS"
    );
    check_palettes(&run, &options);
    check_coverage(&run, &options);
}
