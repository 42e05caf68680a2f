//! Shared code of the sinew examples: the crowd simulation behind `cargo run --example crowd`,
//! the benchmark workload, the engine that owns its GPU device (`engine_device`), and the soak
//! run of the default crowd (`soak`), and the crowd in a window (`viewer`).

pub mod crowd;
pub mod crowd_gpu;
pub mod engine_device;
pub mod lod;
pub mod obj;
pub mod soak;
pub mod viewer;
pub mod workload;
