//! Math used by the jobs: the TRS [`Transform`], key evaluation (step, linear, Hermite) and
//! quaternion blending helpers. Everything here is scalar reference code on glam types; the
//! sampling job's batched path is checked against it.

mod blend;
pub mod dual_quat;
mod keys;
pub(crate) mod soa;
mod transform;

pub use blend::{LayerSum, PoseAccumulator, additive_apply, quat_align};
pub use keys::{
    NEGLIGIBLE_COMPONENT, flush_negligible, flush_negligible_quat, flush_negligible_vec3,
    hermite_basis, hermite_quat, hermite_vec3, lerp_vec3, nlerp_shortest, slerp_shortest,
};
pub use transform::{Transform, mul_affine, mul_affine_by, palette_3x4};
