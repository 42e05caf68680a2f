//! sinew-gpu: the GPU half of sinew (headless wgpu device, RBF compute).
#![forbid(unsafe_code)]

pub mod baked;
pub mod context;
pub mod rbf;
