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
pub(crate) fn png_dir() -> PathBuf {
    let built = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    if built.is_dir() {
        built
    } else {
        std::env::temp_dir()
    }
}

/// A context, or `None` (with the reason printed) only when no adapter exists at all.
pub(crate) fn context() -> Option<GpuContext> {
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
pub(crate) struct Model {
    pub(crate) name: &'static str,
    pub(crate) rig: Arc<Rig>,
    pub(crate) mesh: Arc<SkinnedMesh>,
    pub(crate) clips: Vec<Arc<Clip>>,
}

/// The built-in character, clips in the order idle, walk, run, wave.
pub(crate) fn builtin_model() -> Model {
    let c = builtin::bake_character(&AssetRegistry::new()).unwrap();
    Model {
        name: "builtin",
        rig: c.rig,
        mesh: c.mesh,
        clips: vec![c.idle, c.walk, c.run, c.wave],
    }
}

/// `gltf/Fox.glb` of the fixture assets.
pub(crate) fn fox_path() -> PathBuf {
    sinew_fixtures::asset_path("gltf/Fox.glb").unwrap()
}

/// Fox (first mesh, all clips) named `name`.
pub(crate) fn fox_model(name: &'static str) -> Model {
    let scene = import_gltf(&fox_path(), &AssetRegistry::new()).unwrap();
    Model {
        name,
        rig: scene.rig,
        mesh: scene.meshes[0].skinned_mesh.clone(),
        clips: scene.clips,
    }
}

/// The diagonal of the bind pose's bounding box.
pub(crate) fn model_size(mesh: &SkinnedMesh) -> f32 {
    let (lo, hi) = mesh.positions().iter().fold(
        (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)),
        |(lo, hi), p| (lo.min(*p), hi.max(*p)),
    );
    (hi - lo).length()
}

/// `m`'s clips baked at `rate` frames per second.
pub(crate) fn bake(ctx: &GpuContext, m: &Model, rate: f32) -> BakedAnimationTexture {
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
pub(crate) fn first_frame(ctx: &GpuContext, store: &mut Store) -> (PaletteRing, Vec<PaletteEntry>) {
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

/// An engine's device on the adapter [`context`] chooses: sinew's
/// [`GpuContext::required_limits`] with the adapter's buffer and texture sizes, then `edit`,
/// and `features`. `None` (with the reason printed) only when no adapter exists.
pub(crate) fn engine_device(
    edit: impl FnOnce(&mut wgpu::Limits),
    features: wgpu::Features,
) -> Option<(wgpu::Adapter, wgpu::Device, wgpu::Queue)> {
    let own = context()?;
    let adapter = own.adapter.clone();
    let full = adapter.limits();
    let mut limits = wgpu::Limits {
        max_texture_dimension_1d: full.max_texture_dimension_1d,
        max_texture_dimension_2d: full.max_texture_dimension_2d,
        max_texture_dimension_3d: full.max_texture_dimension_3d,
        max_storage_buffer_binding_size: full.max_storage_buffer_binding_size,
        max_buffer_size: full.max_buffer_size,
        ..GpuContext::required_limits()
    };
    edit(&mut limits);
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("engine device (test)"),
        required_features: features,
        required_limits: limits,
        ..Default::default()
    }))
    .unwrap();
    Some((adapter, device, queue))
}

/// [`engine_device`] wrapped by [`GpuContext::from_device`].
pub(crate) fn wrapped_context(
    edit: impl FnOnce(&mut wgpu::Limits),
    features: wgpu::Features,
) -> Option<GpuContext> {
    let (adapter, device, queue) = engine_device(edit, features)?;
    Some(GpuContext::from_device(adapter, device, queue).unwrap())
}
