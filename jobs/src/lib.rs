//! sinew-jobs: the animation half of sinew — baked assets, the nine-job pipeline and the
//! [`Animator`](animator::Animator) that runs it each frame.
//!
//! - [`asset`]: editable `Raw*` inputs, `bake()` into immutable runtime assets shared behind
//!   `Arc` ([`asset::Rig`], [`asset::Clip`], [`asset::SkinnedMesh`], [`asset::AvatarMask`]),
//!   and a content-hash registry that deduplicates them.
//! - [`component`]: what an animated entity carries ([`component::skinned`] spawns one).
//! - The nine jobs, one module each (`j1_bone_offsets` … `j9_skinning`, plus [`pose_chain`],
//!   jobs 4, 6, 7 and 9 fused per entity): structs with `validate()` and `run()` over borrowed
//!   slices, usable on their own; [`pipeline`] registers them as graph nodes.
//! - [`controller`]: parameters, state machines and blend trees that write each entity's
//!   animation list every frame (docs/controller.md).
//! - Units an embedder opts into with Cargo features: `gltf` (default; [`import`]), `rbf`
//!   (`deform`), `baked` (`bake_texture`, `lod`), `mesh-lod` (`asset::simplify_mesh`) and
//!   `json` (controllers described in JSON).
//!
//! A two-bone arm, a clip that bends its elbow by 90°, a mesh with one vertex at the tip, and
//! the palette that skins it:
//!
//! ```
//! use glam::{Affine3A, Mat4, Quat, Vec3};
//! use sinew_jobs::animator::Animator;
//! use sinew_jobs::asset::{
//!     RawBone, RawBoneTracks, RawClip, RawRig, RawSkinnedMesh, RawTrack, RawVertexInfluences,
//!     Transform,
//! };
//! use sinew_jobs::component::{AnimationToProcess, try_skinned};
//! use sinew_runtime::store::Store;
//! use std::f32::consts::FRAC_PI_2;
//! use std::sync::Arc;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let bone = |name: &str, parent, y| RawBone {
//!     name: name.into(),
//!     parent,
//!     rest: Transform::from_translation(Vec3::Y * y),
//! };
//! let rig = Arc::new(
//!     RawRig { name: "arm".into(), bones: vec![bone("root", None, 0.0), bone("elbow", Some(0), 1.0)] }
//!         .bake()?,
//! );
//! let bend = RawClip {
//!     name: "bend".into(),
//!     looping: false,
//!     bones: vec![RawBoneTracks {
//!         bone: "elbow".into(),
//!         translation: None,
//!         rotation: Some(RawTrack::linear(
//!             vec![0.0, 1.0],
//!             vec![Quat::IDENTITY, Quat::from_rotation_z(FRAC_PI_2)],
//!         )),
//!         scale: None,
//!     }],
//!     ..Default::default()
//! };
//! let clip = Arc::new(bend.bake(&rig)?);
//! let mesh = Arc::new(
//!     RawSkinnedMesh {
//!         name: "tip".into(),
//!         bones: vec![("elbow".into(), Mat4::from_translation(-Vec3::Y))], // inverse bind
//!         positions: vec![Vec3::new(0.0, 2.0, 0.0)],
//!         normals: vec![],
//!         influences: vec![RawVertexInfluences(vec![(0, 1.0)])],
//!         indices: vec![],
//!         ..Default::default()
//!     }
//!     .bake()?,
//! );
//!
//! let mut store = Store::new();
//! // `try_skinned` refuses a clip baked for another rig, naming both rigs.
//! let arm = store.spawn(try_skinned(rig, mesh, vec![AnimationToProcess::new(clip).at(1.0)])?)?;
//! let mut animator = Animator::new(&mut store)?;
//! let layout = animator.layout(&mut store)?; // sizes are known before the frame
//! let mut palettes = vec![[0.0f32; 12]; layout.palette_len()]; // e.g. mapped GPU memory
//! let range = layout.palette_range(arm).ok_or("the arm has a palette")?;
//! animator.run_frame_into(&mut store, 0.0, &mut palettes)?;
//!
//! // Bent by 90° about Z at the elbow (0, 1, 0): the tip (0, 2, 0) moves to (-1, 1, 0).
//! let tip = Affine3A::from_cols_array(&palettes[range.start]).transform_point3(Vec3::new(0.0, 2.0, 0.0));
//! assert!((tip - Vec3::new(-1.0, 1.0, 0.0)).length() < 1e-5);
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

pub mod animator;
pub mod asset;
#[cfg(feature = "baked")]
pub mod bake_texture;
pub mod component;
pub mod controller;
#[cfg(feature = "rbf")]
pub mod deform;
pub mod error;
pub mod frame;
pub mod ik;
#[cfg(feature = "gltf")]
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
#[cfg(feature = "baked")]
pub mod lod;
pub mod math;
pub mod morph_weights;
pub mod pipeline;
pub mod pose_chain;
pub mod pose_stage;

pub use j1_bone_offsets::BoneOffsetsJob;
pub use j2_prefix_sum::PrefixSumJob;
pub use j3_per_bone_info::PerBoneInfoJob;
pub use j4_sample_blend::SampleBlendJob;
pub use j5_user_curves::UserCurvesJob;
pub use j6_root_motion::RootMotionJob;
pub use j7_propagate::PropagateJob;
pub use j8_remap_cache::{RemapCache, RemapCacheJob};
pub use j9_skinning::SkinningJob;
pub use morph_weights::MorphWeightsJob;

/// The README's code blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
