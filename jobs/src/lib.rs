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

pub mod asset;
pub mod math;
pub mod builtin;
pub mod deform;
pub mod import;
