//! Level of detail for crowds: characters near the eye run the nine-job CPU pipeline, far ones
//! play from a baked animation texture ([`crate::bake_texture`]) drawn by a vertex shader.
//!
//! - [`LodCrowd`]: the per-frame orchestration for entities in a store (decide tiers, move
//!   characters in and out of the pipeline, advance the baked tier's root motion, hand out
//!   [`LodInstance`]s).
//! - [`LodSwitch`] and [`LodClock`]: the tier decision by distance with hysteresis and the two
//!   clocks kept in step on a switch, for characters that live outside a store.
//! - [`BakedRootTrack`], [`baked_root_motion`]: a baked character's root motion, as job 6
//!   computes it.

mod crowd;
mod error;
mod root_track;
mod switch;

pub use crowd::{LodCrowd, LodInstance, TierSwitch};
pub use error::LodCrowdError;
pub use root_track::{BakedRootTrack, baked_root_motion};
pub use switch::{LodClock, LodError, LodPath, LodSwitch, LodTransition};
