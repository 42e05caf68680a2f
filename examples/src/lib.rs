//! Shared code of the sinew examples: the crowd simulation behind `cargo run --example crowd`
//! (and its ground and procedural stages),
//! the benchmark workload, the engine that owns its GPU device (`engine_device`), and the soak
//! run of the default crowd (`soak`).

pub mod crowd;
pub mod engine_device;
pub mod ground;
pub mod lod;
pub mod obj;
pub mod soak;
pub mod workload;
