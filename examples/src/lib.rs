//! Shared code of the sinew examples: the crowd simulation behind `cargo run --example crowd`
//! (and its ground and procedural stages), the benchmark workload, the engine that owns its GPU
//! device (`engine_device`), the soak run of the default crowd (`soak`), the crowd in a window
//! (`viewer`), the IK cases of `cargo run --example ik` (`ik_cases`), and the binaries'
//! command-line parsing (`cli`).

pub mod cli;
pub mod crowd;
pub mod crowd_gpu;
pub mod engine_device;
pub mod ground;
pub mod ik_cases;
pub mod lod;
pub mod obj;
pub mod soak;
pub mod viewer;
pub mod workload;
