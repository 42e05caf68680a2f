//! sinew-jobs: the animation half of sinew.
//!
//! - [`asset`]: editable `Raw*` inputs, `bake()` into immutable runtime assets behind `Arc`
//!   ([`asset::Rig`], [`asset::Clip`], [`asset::SkinnedMesh`], [`asset::AvatarMask`]) and a
//!   content-hash dedup registry.
//! - [`math`]: the transform type, Hermite/linear/step key evaluation and quaternion blending.
//!
//! ```
//! use sinew_jobs::asset::{RawBone, RawRig, Transform};
//! use glam::Vec3;
//!
//! let raw = RawRig {
//!     name: "two bones".into(),
//!     bones: vec![
//!         RawBone { name: "root".into(), parent: None, rest: Transform::IDENTITY },
//!         RawBone {
//!             name: "tip".into(),
//!             parent: Some(0),
//!             rest: Transform::from_translation(Vec3::Y),
//!         },
//!     ],
//! };
//! let rig = raw.bake()?;
//! assert_eq!(rig.bone_count(), 2);
//! # Ok::<(), sinew_jobs::asset::BakeError>(())
//! ```
#![forbid(unsafe_code)]

pub mod animator;
pub mod asset;
pub mod bake_texture;
pub mod component;
pub mod deform;
pub mod error;
pub mod frame;
pub mod import;
pub mod j1_bone_offsets;
pub mod j2_prefix_sum;
pub mod j3_per_bone_info;
pub mod j4_sample_blend;
pub mod j5_user_curves;
pub mod j6_root_motion;
pub mod j7_propagate;
pub mod j8_remap_cache;
pub mod j9_skinning;
pub mod math;
pub mod pipeline;
pub mod pose_chain;

pub use j1_bone_offsets::BoneOffsetsJob;
pub use j2_prefix_sum::PrefixSumJob;
pub use j3_per_bone_info::PerBoneInfoJob;
pub use j4_sample_blend::SampleBlendJob;
pub use j5_user_curves::UserCurvesJob;
pub use j6_root_motion::RootMotionJob;
pub use j7_propagate::PropagateJob;
pub use j8_remap_cache::{RemapCache, RemapCacheJob};
pub use j9_skinning::SkinningJob;

/// The README's code blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
