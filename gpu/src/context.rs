//! Headless wgpu device and adapter choice.
