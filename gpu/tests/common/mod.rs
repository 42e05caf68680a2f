//! Fixtures shared by the GPU integration tests: the adapter, the built-in character and Fox.
#![allow(dead_code)] // each test binary uses its own part of this module

use std::path::PathBuf;
use std::sync::Arc;

use glam::Vec3;
use sinew_fixtures::builtin;
use sinew_gpu::context::{GpuContext, GpuError};
use sinew_gpu::palette_ring::{PaletteRing, crowd_palette_len};
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{AssetRegistry, Clip, Rig, SkinnedMesh};
use sinew_jobs::bake_texture::{BakeTextureOptions, BakedAnimationTexture, bake_animation_texture};
use sinew_jobs::frame::PaletteEntry;
use sinew_jobs::import::import_gltf;
use sinew_runtime::store::Store;

/// A folder for the PNGs the tests write: cargo's per-target temporary folder where it
/// exists (the machine that built the test), else the system's (a test binary copied to
/// another machine, e.g. the GPU device).
pub fn png_dir() -> PathBuf {
    let built = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    if built.is_dir() {
        built
    } else {
        std::env::temp_dir()
    }
}

/// A context, or `None` (with the reason printed) only when no adapter exists at all.
pub fn context() -> Option<GpuContext> {
    match GpuContext::new() {
        Ok(c) => Some(c),
        Err(GpuError::NoAdapter { backends, hint }) => {
            eprintln!("SKIPPED: no GPU adapter on {backends}: {hint}");
            None
        }
        Err(e) => panic!("adapter exists but the device failed: {e}"),
    }
}

/// A model: rig, mesh and its clips.
pub struct Model {
    pub name: &'static str,
    pub rig: Arc<Rig>,
    pub mesh: Arc<SkinnedMesh>,
    pub clips: Vec<Arc<Clip>>,
}

/// The built-in character, clips in the order idle, walk, run, wave.
pub fn builtin_model() -> Model {
    let c = builtin::bake_character(&AssetRegistry::new()).unwrap();
    Model {
        name: "builtin",
        rig: c.rig,
        mesh: c.mesh,
        clips: vec![c.idle, c.walk, c.run, c.wave],
    }
}

/// `gltf/Fox.glb` of the fixture assets.
pub fn fox_path() -> PathBuf {
    sinew_fixtures::asset_path("gltf/Fox.glb").unwrap()
}

/// Fox (first mesh, all clips) named `name`.
pub fn fox_model(name: &'static str) -> Model {
    let scene = import_gltf(&fox_path(), &AssetRegistry::new()).unwrap();
    Model {
        name,
        rig: scene.rig,
        mesh: scene.meshes[0].skinned_mesh.clone(),
        clips: scene.clips,
    }
}

/// The diagonal of the bind pose's bounding box.
pub fn model_size(mesh: &SkinnedMesh) -> f32 {
    let (lo, hi) = mesh.positions().iter().fold(
        (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)),
        |(lo, hi), p| (lo.min(*p), hi.max(*p)),
    );
    (hi - lo).length()
}

/// `m`'s clips baked at `rate` frames per second.
pub fn bake(ctx: &GpuContext, m: &Model, rate: f32) -> BakedAnimationTexture {
    bake_animation_texture(
        &m.rig,
        &m.mesh,
        &m.clips,
        &BakeTextureOptions::new(rate, ctx.limits.max_texture_dimension_2d),
    )
    .unwrap()
}

/// One frame (1/60 s) of the CPU pipeline over the crowd in `store`, its palettes written into
/// a new ring: the ring and a copy of the palettes.
pub fn first_frame(ctx: &GpuContext, store: &mut Store) -> (PaletteRing, Vec<PaletteEntry>) {
    let mut animator = Animator::new(store).unwrap();
    let entries = crowd_palette_len(store).unwrap();
    let mut ring = PaletteRing::with_best_mode(ctx, entries).unwrap();
    let palette = ring
        .write(ctx, entries, |p| {
            animator.run_frame_into(store, 1.0 / 60.0, p).unwrap();
            p.to_vec()
        })
        .unwrap();
    (ring, palette)
}
