//! RBF deformation: a low-poly cage (the *controls*) drives a high-poly mesh.
//!
//! Two steps, as in the seed article `004_*`:
//!
//! 1. **Bake** ([`bake`]) once, from the rest positions of both meshes: a linear map `W`
//!    (`n_high × n_ctrl`) from control displacements to vertex displacements, stored as CSR
//!    ([`RbfWeights`]).
//!    - [`RbfMode::Normalized`]: `w_ij = φ(ε·r_ij) / Σ_k φ(ε·r_ik)` (the seed's scheme; Gaussian by
//!      default), weights of a row sum to 1.
//!    - [`RbfMode::Interpolate`]: exact RBF interpolation with a degree-1 polynomial term, in the
//!      conventions of scipy's `RBFInterpolator` (`φ` evaluated at `ε·r`, smoothing 0), solved once
//!      with a dense LU with partial pivoting (faer), or for the compactly supported
//!      [`Kernel::Wendland`] with a sparse assembly and faer's sparse LU. `W = [Φ_hc P_h] · A⁻¹`
//!      restricted to the control columns, so the polynomial part folds into `W`.
//!    - When the dense `W` would exceed [`BakeOptions::dense_budget_bytes`] (default
//!      [`DEFAULT_DENSE_BUDGET_BYTES`], 512 MiB) and no pruning was asked for, the bake keeps the
//!      solved system instead ([`Representation::Coefficients`]) and the deformer evaluates the
//!      interpolant every frame from coefficients.
//!    - The bake refuses a cage and mesh of different sizes (units:
//!      [`BakeOptions::max_size_ratio`]), controls too thin to fit a degree-1 polynomial
//!      across, and weights beyond `f32` ([`DeformError`] names what and where).
//! 2. **Deform** ([`RbfDeformer`]) every frame: `deformed = rest + W · (low_now − low_rest)`,
//!    parallel over high vertices on rayon with `wide::f32x4` accumulation, from the fixed-width
//!    blocked copy of `W` ([`FixedWeights`]: 8 vertices per block, `u16` indices, zero-padded
//!    slots) when every row fits, else from the CSR table ([`WeightLayout`]), persistent scratch
//!    (no allocation per frame), optional area-weighted normals, an amortised mode refreshing
//!    `1/k` of the vertices per call, and chains ([`RbfChain`], low → mid → high).
//!
//! ```
//! use glam::Vec3;
//! use sinew_jobs::deform::{BakeOptions, Kernel, RbfDeformer, RbfMode, bake};
//!
//! // A tetrahedron of controls and two high vertices.
//! let low = [Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::Z];
//! let high = [Vec3::splat(0.25), Vec3::new(0.5, 0.5, 0.0)];
//! let opts = BakeOptions::interpolate(Kernel::ThinPlateSpline, 1.0);
//! let binding = bake(&low, &high, &opts)?;
//! let mut deformer = RbfDeformer::new(binding.into());
//! // Translate the cage: degree-1 interpolation reproduces the translation exactly.
//! let moved: Vec<Vec3> = low.iter().map(|p| *p + Vec3::new(0.0, 0.0, 2.0)).collect();
//! let mut out = vec![Vec3::ZERO; 2];
//! deformer.deform(&moved, &mut out)?;
//! assert!((out[0] - (high[0] + Vec3::new(0.0, 0.0, 2.0))).length() < 1e-5);
//! # Ok::<(), sinew_jobs::deform::DeformError>(())
//! ```

mod bake;
mod error;
mod fixed;
mod grid;
mod kernel;
mod normals;
mod runtime;
mod weights;

pub use bake::{
    BakeOptions, BakeReport, CoefficientModel, DEFAULT_DENSE_BUDGET_BYTES, DEFAULT_MAX_SIZE_RATIO,
    RbfBinding, RbfMode, Representation, bake,
};
pub use error::DeformError;
pub use fixed::{FixedWeights, LANES, MAX_FIXED_K};
pub use kernel::Kernel;
pub use normals::{VertexTriangles, recompute_normals};
pub use runtime::{RbfChain, RbfDeformer, SimdMode, WeightLayout};
pub use weights::RbfWeights;
