//! Animation assets: editable `Raw*` inputs, `bake()`, and the immutable runtime assets.
//!
//! Bake validates every input (finite numbers, increasing key times, parents in range, no
//! cycles, matching array lengths) and establishes the invariants that the jobs rely on:
//! bones are ordered parent-first (`parent < child`), key arrays are structure-of-arrays, and
//! every runtime asset is immutable and shared through `Arc`.

mod clip;
mod error;
mod hash;
mod mask;
mod mesh;
#[cfg(feature = "mesh-lod")]
mod mesh_lod;
mod morph;
mod registry;
mod rig;

pub use crate::math::Transform;
pub use clip::{
    AdditiveReference, Channel, Clip, ClipEvent, CurveChannel, Interpolation, KeyGrid, KeySpan,
    LinearRotation, RawBoneTracks, RawClip, RawCurve, RawEvent, RawTrack, Timeline,
};
pub use error::BakeError;
pub use hash::{BoneHash, ContentHash, ContentHasher, bone_hash};
pub use mask::{AvatarMask, RawAvatarMask};
pub use mesh::{
    MAX_INFLUENCES, RawSkinnedMesh, RawVertexInfluences, SkinnedMesh, SkinnedMeshBone,
    SkinningMethod,
};
#[cfg(feature = "mesh-lod")]
pub use mesh_lod::{MeshLod, lod_chain, point_triangle_distance, simplify_mesh};
pub use morph::{
    ActiveMorph, MAX_MORPH_DELTA_BYTES, MORPH_DELTA_BYTES_PER_VERTEX, MorphTargets, RawMorphTarget,
    max_morph_targets,
};
pub use registry::AssetRegistry;
pub use rig::{BoneIndex, NO_PARENT, RawBone, RawRig, Rig};

#[cfg(all(test, feature = "gltf"))]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod grid_sampling_tests;
