//! sinew-gpu: the GPU half of sinew (a headless wgpu device of its own or an engine's, mapped
//! palette ring, WGSL skinning, offscreen crowd rendering, a compute rasteriser for crowds, RBF
//! compute).
//!
//! An engine that owns its device wraps it with [`context::GpuContext::from_device`], and can
//! write palettes into its own mapped buffer with [`palette_ring::mapped_palette`].
//!
//! `unsafe` is denied crate-wide; the one exception is [`palette_ring::mapped_bytes`], which
//! views wgpu 30's write-only mapped range as `&mut [u8]` so the skinning job can write
//! palettes in place (see the `palette_ring` module documentation).
#![deny(unsafe_code)]

pub mod baked;
pub mod context;
pub mod palette_ring;
pub mod raster;
#[cfg(feature = "rbf")]
pub mod rbf;
pub mod render;
pub mod skin_pass;
