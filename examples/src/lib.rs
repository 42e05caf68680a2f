//! Shared code of the sinew examples: the crowd simulation behind `cargo run --example crowd`
//! and the benchmark workload.

pub mod crowd;
pub mod lod;
pub mod workload;
