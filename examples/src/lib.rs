//! Shared code of the sinew examples: the crowd simulation behind `cargo run --example crowd`,
//! the benchmark workload, and the engine that owns its GPU device (`engine_device`).

pub mod crowd;
pub mod engine_device;
pub mod lod;
pub mod obj;
pub mod workload;
