//! sinew-gpu: the GPU half of sinew (a headless wgpu device of its own or an engine's, mapped
//! palette ring, WGSL skinning, offscreen crowd rendering, a compute rasteriser for crowds, RBF
//! compute).
//!
//! An engine that owns its device wraps it with [`context::GpuContext::from_device`], and can
//! write palettes into its own mapped buffer with [`palette_ring::mapped_palette`].
//!
//! A frame of a small crowd, its palettes written by the pipeline straight into a ring buffer
//! the GPU reads (any Vulkan adapter, lavapipe included; without one the example stops early):
//!
//! ```
//! use sinew_gpu::context::GpuContext;
//! use sinew_gpu::palette_ring::{PaletteRing, PaletteUpload};
//! use sinew_jobs::animator::Animator;
//! use sinew_jobs::asset::AssetRegistry;
//! use sinew_jobs::component::{AnimationToProcess, skinned};
//! use sinew_runtime::store::Store;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let Ok(ctx) = GpuContext::new() else { return Ok(()) }; // no adapter here
//! let character = sinew_fixtures::builtin::bake_character(&AssetRegistry::new())?;
//! let mut store = Store::new();
//! for i in 0..16 {
//!     let walk = AnimationToProcess::new(character.walk.clone()).at(i as f32 * 0.1);
//!     store.spawn(skinned(character.rig.clone(), character.mesh.clone(), vec![walk]))?;
//! }
//! let mut animator = Animator::new(&mut store)?;
//! let entries = animator.layout(&mut store)?.palette_len();
//! let mut ring = PaletteRing::new(&ctx, PaletteUpload::best(&ctx), 3, entries)?;
//! ring.write(&ctx, entries, |palettes| animator.run_frame_into_mapped(&mut store, 1.0 / 60.0, palettes))??;
//! // Bind `ring.buffer()` in a skinning pass or renderer, submit, then:
//! ring.submitted(None);
//! # Ok(())
//! # }
//! ```
//!
//! `unsafe` is denied crate-wide; the one exception is [`palette_ring::mapped_bytes`], which
//! views wgpu 30's write-only mapped range as `&mut [u8]` so the skinning job can write
//! palettes in place (see the `palette_ring` module documentation).
#![deny(unsafe_code)]

pub mod baked;
pub mod context;
pub mod crowd_frames;
pub mod palette_ring;
pub mod raster;
#[cfg(feature = "rbf")]
pub mod rbf;
pub mod render;
pub mod skin_pass;
