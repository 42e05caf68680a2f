//! Bake: from rest positions to the linear map `W` (or to solved coefficients).

use std::sync::OnceLock;

use faer::linalg::solvers::Solve;
use faer::sparse::{SparseColMat, Triplet};
use faer::{Mat, Side};
use glam::Vec3;
use hashbrown::HashMap;
use rayon::prelude::*;

use super::fixed::{LANES, MAX_FIXED_K};
use super::grid::{Grid, dist2};
use super::{DeformError, FixedWeights, Kernel, RbfWeights};

/// Default budget for a dense `W` (`n_high × n_ctrl × 4` bytes): 512 MiB. Above it, and when no
/// pruning is asked for, interpolate mode keeps solved coefficients instead of `W`.
pub const DEFAULT_DENSE_BUDGET_BYTES: usize = 512 << 20;

/// Default for [`BakeOptions::max_size_ratio`]: 25, so that inches, centimetres and
/// millimetres against metres (factors 39, 100, 1000) are caught.
pub const DEFAULT_MAX_SIZE_RATIO: f32 = 25.0;

/// High vertices per parallel work item of the bake.
const BAKE_BLOCK: usize = 256;

/// Number of degree-1 monomials in 3D: 1, x, y, z.
const N_POLY: usize = 4;

/// How weights are derived from the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RbfMode {
    /// The seed's scheme: `w_ij = φ(ε r_ij) / Σ_k φ(ε r_ik)`. Needs a positive kernel
    /// ([`Kernel::is_positive`]). Rows sum to 1; a translated cage translates the mesh exactly,
    /// but the controls themselves are not interpolated.
    Normalized,
    /// Exact interpolation with a degree-1 polynomial term, as scipy's `RBFInterpolator` with
    /// `degree=1, smoothing=0`: vertices at control positions follow their control exactly and
    /// any affine motion of the cage is reproduced exactly.
    Interpolate,
}

/// Bake parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct BakeOptions {
    /// Normalized or interpolate.
    pub mode: RbfMode,
    /// The kernel `φ`.
    pub kernel: Kernel,
    /// Shape parameter: `φ` is evaluated at `ε · distance` (support radius `1/ε` for Wendland).
    pub epsilon: f64,
    /// Drop weights with `|w| < threshold` (0: keep every non-zero weight).
    pub threshold: f32,
    /// Keep only the `k` largest `|w|` per vertex.
    pub top_k: Option<usize>,
    /// After pruning, rescale the kept weights of a row so that their sum equals the full row's sum
    /// (1 in both modes), which keeps translations exact.
    pub renormalize: bool,
    /// Budget for a dense `W` in bytes (`n_high × n_ctrl × 4`). Interpolate mode without pruning
    /// keeps coefficients ([`Representation::Coefficients`]) above it; normalized mode with a
    /// global kernel and no pruning is refused above it ([`DeformError::TooLarge`]).
    pub dense_budget_bytes: usize,
    /// Largest ratio between the sizes (largest bounding-box extents) of the cage and the
    /// high-poly mesh, either way round; above it the bake is refused
    /// ([`DeformError::ScaleMismatch`]) as the two are most likely in different units. A cage
    /// drives the mesh it surrounds, so their sizes are close; raise it (`f32::INFINITY`
    /// turns the check off) for a mesh that really is that much smaller than its cage.
    pub max_size_ratio: f32,
}

impl BakeOptions {
    /// Normalized Gaussian weights (the seed's scheme), no pruning.
    pub fn normalized(epsilon: f64) -> Self {
        Self {
            mode: RbfMode::Normalized,
            kernel: Kernel::Gaussian,
            epsilon,
            threshold: 0.0,
            top_k: None,
            renormalize: true,
            dense_budget_bytes: DEFAULT_DENSE_BUDGET_BYTES,
            max_size_ratio: DEFAULT_MAX_SIZE_RATIO,
        }
    }

    /// Exact interpolation with `kernel` and a degree-1 polynomial, no pruning.
    pub fn interpolate(kernel: Kernel, epsilon: f64) -> Self {
        Self {
            mode: RbfMode::Interpolate,
            kernel,
            ..Self::normalized(epsilon)
        }
    }

    /// The same options with another kernel.
    pub fn with_kernel(mut self, kernel: Kernel) -> Self {
        self.kernel = kernel;
        self
    }

    /// The same options keeping the `k` largest weights per vertex.
    pub fn with_top_k(mut self, k: usize) -> Self {
        self.top_k = Some(k);
        self
    }

    /// The same options dropping weights below `threshold` in magnitude.
    pub fn with_threshold(mut self, threshold: f32) -> Self {
        self.threshold = threshold;
        self
    }

    fn prunes(&self) -> bool {
        self.top_k.is_some() || self.threshold > 0.0
    }
}

/// Which form the bake produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Representation {
    /// A CSR table `W`; the deformer does one sparse mat-vec per frame.
    Weights,
    /// The solved system `A⁻¹` (control columns); the deformer solves for coefficients and
    /// evaluates the interpolant every frame (used when a dense `W` exceeds the budget).
    Coefficients,
}

/// Numbers about a bake, for logs and tests.
#[derive(Clone, Debug, PartialEq)]
pub struct BakeReport {
    /// Weights or coefficients.
    pub representation: Representation,
    /// Controls.
    pub n_ctrl: usize,
    /// High vertices.
    pub n_high: usize,
    /// Stored weights (0 for coefficients).
    pub nnz: usize,
    /// Σ |w| removed by pruning, all rows.
    pub dropped_mass: f64,
    /// Largest per-row fraction of |w| removed by pruning.
    pub max_row_dropped_fraction: f64,
    /// Order of the interpolation system (`n_ctrl + 4`; 0 in normalized mode).
    pub system_size: usize,
    /// Non-zeros of the interpolation system (`system_size²` for the dense solve).
    pub system_nnz: usize,
    /// `min |u_ii| / max |u_ii|` of the dense LU (NaN for the sparse solve and normalized mode).
    pub pivot_ratio: f64,
    /// `"dense partial-pivot LU"`, `"sparse LU"` or `"none"`.
    pub solver: &'static str,
    /// The largest `Σ_j |w_ij|` over the rows of the stored table (its ∞-norm): how far a
    /// vertex moves, at most, per unit of control displacement. 1 for unpruned normalized
    /// weights; NaN for coefficients.
    pub max_gain: f64,
}

/// Solved interpolation system, for per-frame evaluation from coefficients.
///
/// Per frame: `c = X · Δ` (`X = A⁻¹` restricted to the control columns, `(n_ctrl + 4) × n_ctrl`,
/// f64), then for each high vertex `d = Σ_j φ(ε|x − y_j|) c_j + p(x) · c_poly`.
#[derive(Clone, Debug)]
pub struct CoefficientModel {
    kernel: Kernel,
    epsilon: f64,
    ctrl: Vec<[f64; 3]>,
    shift: [f64; 3],
    scale: [f64; 3],
    inv: Vec<f64>,
    /// For compact kernels: `φ(ε|x_h − y_j|)` of each high vertex, CSR (row_ptr, cols, values).
    sparse_phi: Option<(Vec<usize>, Vec<u32>, Vec<f64>)>,
}

impl CoefficientModel {
    /// Number of controls.
    pub fn n_ctrl(&self) -> usize {
        self.ctrl.len()
    }

    /// Number of coefficients (`n_ctrl + 4`).
    pub fn n_coefficients(&self) -> usize {
        self.ctrl.len() + N_POLY
    }

    /// Bytes held (the f64 inverse dominates).
    pub fn size_bytes(&self) -> usize {
        8 * self.inv.len()
            + 24 * self.ctrl.len()
            + self
                .sparse_phi
                .as_ref()
                .map_or(0, |(r, c, v)| 8 * r.len() + 4 * c.len() + 8 * v.len())
    }

    /// Row `k` of `X`: how coefficient `k` depends on each control's displacement.
    pub(crate) fn inv_row(&self, k: usize) -> &[f64] {
        let n = self.ctrl.len();
        self.inv.get(k * n..(k + 1) * n).unwrap_or(&[])
    }

    /// The interpolant's displacement at high vertex `vertex` (rest position `x`) given the
    /// coefficients `coef` (`n_ctrl + 4` entries).
    pub(crate) fn eval(&self, vertex: usize, x: [f64; 3], coef: &[[f64; 3]]) -> [f64; 3] {
        let n = self.ctrl.len();
        let mut acc = [0.0f64; 3];
        match &self.sparse_phi {
            Some((row_ptr, cols, vals)) => {
                let (a, b) = (
                    row_ptr.get(vertex).copied().unwrap_or(0),
                    row_ptr.get(vertex + 1).copied().unwrap_or(0),
                );
                for (&j, &phi) in cols[a..b].iter().zip(&vals[a..b]) {
                    let c = coef[j as usize];
                    acc[0] += phi * c[0];
                    acc[1] += phi * c[1];
                    acc[2] += phi * c[2];
                }
            }
            None => {
                for (y, c) in self.ctrl.iter().zip(coef) {
                    let phi = self.kernel.eval(self.epsilon * dist2(&x, y).sqrt());
                    acc[0] += phi * c[0];
                    acc[1] += phi * c[1];
                    acc[2] += phi * c[2];
                }
            }
        }
        let p = monomials(&x, &self.shift, &self.scale);
        for (m, pm) in p.iter().enumerate() {
            let c = coef[n + m];
            acc[0] += pm * c[0];
            acc[1] += pm * c[1];
            acc[2] += pm * c[2];
        }
        acc
    }
}

#[derive(Clone, Debug)]
enum Repr {
    Weights(RbfWeights),
    Coefficients(CoefficientModel),
}

/// The result of a bake: rest positions of both meshes plus `W` (or the solved system).
/// Immutable; share it behind an `Arc` between every deformer of the same model.
#[derive(Clone, Debug)]
pub struct RbfBinding {
    low_rest: Vec<Vec3>,
    high_rest: Vec<Vec3>,
    repr: Repr,
    report: BakeReport,
    options: BakeOptions,
    /// The largest coordinate magnitude of `high_rest`, for the deformer's overflow bound.
    high_rest_extent: f32,
    /// The fixed-width copy of the weight table, built on first use (see
    /// [`fixed_weights`](RbfBinding::fixed_weights)); `None` inside when the table does not fit.
    fixed: OnceLock<Option<FixedWeights>>,
}

impl RbfBinding {
    /// Builds a binding from an existing weight table (e.g. loaded from disk).
    ///
    /// # Errors
    /// [`DeformError::LengthMismatch`] when the table's shape does not match the rest positions,
    /// [`DeformError::Empty`] / [`DeformError::NotFinite`] for bad positions.
    pub fn from_weights(
        low_rest: Vec<Vec3>,
        high_rest: Vec<Vec3>,
        weights: RbfWeights,
        options: BakeOptions,
    ) -> Result<Self, DeformError> {
        check_points("low-poly rest positions (controls)", &low_rest)?;
        check_points("high-poly rest positions", &high_rest)?;
        if weights.n_cols() != low_rest.len() {
            return Err(DeformError::LengthMismatch {
                what: "weight table columns",
                expected: low_rest.len(),
                actual: weights.n_cols(),
            });
        }
        if weights.n_rows() != high_rest.len() {
            return Err(DeformError::LengthMismatch {
                what: "weight table rows",
                expected: high_rest.len(),
                actual: weights.n_rows(),
            });
        }
        let report = BakeReport {
            representation: Representation::Weights,
            n_ctrl: low_rest.len(),
            n_high: high_rest.len(),
            nnz: weights.nnz(),
            dropped_mass: weights.dropped_mass(),
            max_row_dropped_fraction: weights.max_row_dropped_fraction(),
            system_size: 0,
            system_nnz: 0,
            pivot_ratio: f64::NAN,
            solver: "none",
            max_gain: max_gain(&weights),
        };
        Ok(Self {
            high_rest_extent: max_abs(&high_rest),
            low_rest,
            high_rest,
            repr: Repr::Weights(weights),
            report,
            options,
            fixed: OnceLock::new(),
        })
    }

    /// Control rest positions.
    pub fn low_rest(&self) -> &[Vec3] {
        &self.low_rest
    }

    /// High-poly rest positions.
    pub fn high_rest(&self) -> &[Vec3] {
        &self.high_rest
    }

    /// The CSR table, when the bake produced one.
    pub fn weights(&self) -> Option<&RbfWeights> {
        match &self.repr {
            Repr::Weights(w) => Some(w),
            Repr::Coefficients(_) => None,
        }
    }

    /// The solved system, when the bake kept coefficients.
    pub fn coefficients(&self) -> Option<&CoefficientModel> {
        match &self.repr {
            Repr::Weights(_) => None,
            Repr::Coefficients(c) => Some(c),
        }
    }

    /// Numbers about the bake.
    pub fn report(&self) -> &BakeReport {
        &self.report
    }

    /// The options it was baked with.
    pub fn options(&self) -> &BakeOptions {
        &self.options
    }

    /// The largest coordinate magnitude of the high-poly rest positions.
    pub(crate) fn high_rest_extent(&self) -> f32 {
        self.high_rest_extent
    }

    /// The weight table in the fixed-width blocked layout ([`FixedWeights`]), which
    /// [`RbfDeformer`](super::RbfDeformer) uses by default: built once, on the first call (by
    /// the first deformer created), and shared by every deformer of this binding. `None` when
    /// the binding keeps coefficients, has more than 65536 controls, a row longer than
    /// [`MAX_FIXED_K`], or rows so uneven that padding would more than double the stored slots.
    pub fn fixed_weights(&self) -> Option<&FixedWeights> {
        self.fixed
            .get_or_init(|| {
                let w = self.weights()?;
                let f = FixedWeights::from_csr(w, MAX_FIXED_K).ok()?;
                (f.n_blocks() * f.k() * LANES <= 2 * w.nnz() + f.k() * LANES).then_some(f)
            })
            .as_ref()
    }
}

/// The ∞-norm of `w`: the largest `Σ_j |w_ij|` over its rows, in f64.
fn max_gain(w: &RbfWeights) -> f64 {
    (0..w.n_rows())
        .map(|i| w.row(i).map(|(_, x)| f64::from(x.abs())).sum::<f64>())
        .fold(0.0, f64::max)
}

/// The largest coordinate magnitude of `p` (0 for no points).
fn max_abs(p: &[Vec3]) -> f32 {
    p.iter().fold(0.0f32, |m, v| m.max(v.abs().max_element()))
}

/// Refuses a cage and a mesh whose sizes (largest bounding-box extents) differ by more than
/// `limit`, either way round; a point cloud of size 0 (one control, one vertex) has no size to
/// compare.
fn check_scale(low: &[Vec3], high: &[Vec3], limit: f32) -> Result<(), DeformError> {
    let (cage_lo, cage_hi) = bounds(&to_f64(low));
    let (mesh_lo, mesh_hi) = bounds(&to_f64(high));
    let size = |lo: &[f64; 3], hi: &[f64; 3]| (0..3).map(|d| hi[d] - lo[d]).fold(0.0, f64::max);
    let (cage, mesh) = (size(&cage_lo, &cage_hi), size(&mesh_lo, &mesh_hi));
    if cage == 0.0 || mesh == 0.0 {
        return Ok(());
    }
    let ratio = (cage / mesh).max(mesh / cage);
    if ratio > f64::from(limit) {
        // The corners are input coordinates, exact in f32.
        let f = |p: [f64; 3]| p.map(|x| x as f32);
        return Err(DeformError::ScaleMismatch {
            cage_min: f(cage_lo),
            cage_max: f(cage_hi),
            mesh_min: f(mesh_lo),
            mesh_max: f(mesh_hi),
            ratio: ratio as f32,
            limit,
        });
    }
    Ok(())
}

fn check_points(what: &'static str, p: &[Vec3]) -> Result<(), DeformError> {
    if p.is_empty() {
        return Err(DeformError::Empty { what });
    }
    if let Some(index) = p.iter().position(|v| !v.is_finite()) {
        return Err(DeformError::NotFinite { what, index });
    }
    Ok(())
}

fn to_f64(p: &[Vec3]) -> Vec<[f64; 3]> {
    p.iter()
        .map(|v| [f64::from(v.x), f64::from(v.y), f64::from(v.z)])
        .collect()
}

/// The per-axis minimum and maximum of `p` (infinities for no points).
fn bounds(p: &[[f64; 3]]) -> ([f64; 3], [f64; 3]) {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for p in p {
        for d in 0..3 {
            lo[d] = lo[d].min(p[d]);
            hi[d] = hi[d].max(p[d]);
        }
    }
    (lo, hi)
}

/// scipy's `_shift`/`_scale`: centre and half-extent of the controls per axis (extent 0 → 1).
fn shift_scale(ctrl: &[[f64; 3]]) -> ([f64; 3], [f64; 3]) {
    let (lo, hi) = bounds(ctrl);
    let mut shift = [0.0; 3];
    let mut scale = [1.0; 3];
    for d in 0..3 {
        shift[d] = (hi[d] + lo[d]) / 2.0;
        let s = (hi[d] - lo[d]) / 2.0;
        scale[d] = if s == 0.0 { 1.0 } else { s };
    }
    (shift, scale)
}

/// Degree-1 monomials of the shifted and scaled point: `[1, x', y', z']` (scipy's order).
#[inline]
fn monomials(x: &[f64; 3], shift: &[f64; 3], scale: &[f64; 3]) -> [f64; N_POLY] {
    [
        1.0,
        (x[0] - shift[0]) / scale[0],
        (x[1] - shift[1]) / scale[1],
        (x[2] - shift[2]) / scale[2],
    ]
}

fn validate(low: &[Vec3], high: &[Vec3], o: &BakeOptions) -> Result<(), DeformError> {
    check_points("low-poly rest positions (controls)", low)?;
    check_points("high-poly rest positions", high)?;
    if !(o.epsilon.is_finite() && o.epsilon > 0.0) {
        return Err(DeformError::InvalidEpsilon { epsilon: o.epsilon });
    }
    if !(o.threshold.is_finite() && o.threshold >= 0.0) {
        return Err(DeformError::InvalidOption {
            reason: format!("threshold must be finite and >= 0, got {}", o.threshold),
        });
    }
    if o.max_size_ratio.is_nan() || o.max_size_ratio < 1.0 {
        return Err(DeformError::InvalidOption {
            reason: format!(
                "max_size_ratio must be at least 1 (infinity turns the check off), got {}",
                o.max_size_ratio
            ),
        });
    }
    if o.top_k == Some(0) {
        return Err(DeformError::InvalidOption {
            reason: "top_k must be at least 1".into(),
        });
    }
    if u32::try_from(low.len()).is_err() || u32::try_from(high.len()).is_err() {
        return Err(DeformError::TooLarge {
            what: "vertex count",
            size: low.len().max(high.len()),
            limit: u32::MAX as usize,
        });
    }
    if o.mode == RbfMode::Normalized && !o.kernel.is_positive() {
        return Err(DeformError::InvalidOption {
            reason: format!(
                "normalized mode needs a positive kernel (gaussian, inverse_multiquadric, wendland), got {}",
                o.kernel
            ),
        });
    }
    check_scale(low, high, o.max_size_ratio)
}

/// Finds two controls at exactly the same position (−0 and +0 compare equal).
fn find_duplicate(ctrl: &[Vec3]) -> Option<(usize, usize)> {
    let key = |v: &Vec3| [v.x + 0.0, v.y + 0.0, v.z + 0.0].map(f32::to_bits);
    let mut seen: HashMap<[u32; 3], usize> = HashMap::with_capacity(ctrl.len());
    for (i, v) in ctrl.iter().enumerate() {
        if let Some(&first) = seen.get(&key(v)) {
            return Some((first, i));
        }
        seen.insert(key(v), i);
    }
    None
}

/// Bakes `W` from the control rest positions `low_rest` and the high-poly rest positions
/// `high_rest`.
///
/// Cost: normalized mode `O(n_high · n_ctrl)` (neighbour grid for Wendland); interpolate mode
/// `O(n_ctrl³)` for the solve plus `O(n_high · n_ctrl²)` to form `W` (`O(n_high · s · n_ctrl)`
/// for Wendland with `s` controls per support), all parallel on the current rayon pool.
///
/// # Errors
/// - [`DeformError::Empty`], [`DeformError::NotFinite`]: empty or non-finite positions;
/// - [`DeformError::InvalidEpsilon`]: `epsilon` not finite and > 0;
/// - [`DeformError::InvalidOption`]: bad threshold/top-k, a non-positive kernel in normalized mode;
/// - [`DeformError::DuplicateControls`], [`DeformError::Singular`]: interpolate mode with
///   coincident controls, fewer than 4 controls, coplanar controls or a numerically singular system;
/// - [`DeformError::Unreached`]: normalized Wendland with a vertex outside every support;
/// - [`DeformError::TooLarge`]: more than `u32::MAX` weights, or a normalized global-kernel table
///   over the dense budget without pruning.
pub fn bake(
    low_rest: &[Vec3],
    high_rest: &[Vec3],
    options: &BakeOptions,
) -> Result<RbfBinding, DeformError> {
    validate(low_rest, high_rest, options)?;
    let ctrl = to_f64(low_rest);
    let high = to_f64(high_rest);
    let dense_bytes = high.len().saturating_mul(ctrl.len()).saturating_mul(4);
    let over_budget = dense_bytes > options.dense_budget_bytes && !options.prunes();
    let (repr, system_size, system_nnz, pivot_ratio, solver) = match options.mode {
        RbfMode::Normalized => {
            if over_budget && !options.kernel.is_compact() {
                return Err(DeformError::TooLarge {
                    what: "dense normalized weight table (bytes; set top_k or threshold)",
                    size: dense_bytes,
                    limit: options.dense_budget_bytes,
                });
            }
            (
                Repr::Weights(bake_normalized(&ctrl, &high, options)?),
                0,
                0,
                f64::NAN,
                "none",
            )
        }
        RbfMode::Interpolate => {
            if let Some((first, second)) = find_duplicate(low_rest) {
                return Err(DeformError::DuplicateControls { first, second });
            }
            let solved = solve_interpolation(&ctrl, options)?;
            let (size, nnz, ratio, solver) =
                (solved.size, solved.nnz, solved.pivot_ratio, solved.solver);
            let model = solved.model;
            let model = attach_sparse_phi(model, &high);
            if over_budget {
                (Repr::Coefficients(model), size, nnz, ratio, solver)
            } else {
                (
                    Repr::Weights(weights_from_model(&model, &high, options)?),
                    size,
                    nnz,
                    ratio,
                    solver,
                )
            }
        }
    };
    let (nnz, dropped, frac, representation, gain) = match &repr {
        Repr::Weights(w) => (
            w.nnz(),
            w.dropped_mass(),
            w.max_row_dropped_fraction(),
            Representation::Weights,
            max_gain(w),
        ),
        Repr::Coefficients(_) => (0, 0.0, 0.0, Representation::Coefficients, f64::NAN),
    };
    let report = BakeReport {
        representation,
        n_ctrl: ctrl.len(),
        n_high: high.len(),
        nnz,
        dropped_mass: dropped,
        max_row_dropped_fraction: frac,
        system_size,
        system_nnz,
        pivot_ratio,
        solver,
        max_gain: gain,
    };
    Ok(RbfBinding {
        high_rest_extent: max_abs(high_rest),
        low_rest: low_rest.to_vec(),
        high_rest: high_rest.to_vec(),
        repr,
        report,
        options: options.clone(),
        fixed: OnceLock::new(),
    })
}

/// One block of CSR rows built in parallel.
#[derive(Default)]
struct Block {
    lens: Vec<u32>,
    cols: Vec<u32>,
    vals: Vec<f32>,
    dropped: f64,
    max_frac: f64,
}

/// Prunes one row (drops exact zeros, then threshold, then top-k), optionally renormalises, and
/// appends it to `block`.
fn push_row(row: &mut Vec<(u32, f64)>, o: &BakeOptions, block: &mut Block) {
    let total_abs: f64 = row.iter().map(|e| e.1.abs()).sum();
    let total_sum: f64 = row.iter().map(|e| e.1).sum();
    let thr = f64::from(o.threshold);
    row.retain(|e| e.1 != 0.0 && e.1.abs() >= thr);
    if let Some(k) = o.top_k
        && row.len() > k
    {
        row.select_nth_unstable_by(k - 1, |a, b| b.1.abs().total_cmp(&a.1.abs()));
        row.truncate(k);
    }
    row.sort_unstable_by_key(|e| e.0);
    let kept_abs: f64 = row.iter().map(|e| e.1.abs()).sum();
    let dropped = (total_abs - kept_abs).max(0.0);
    if o.renormalize && dropped > 0.0 {
        let kept_sum: f64 = row.iter().map(|e| e.1).sum();
        if kept_sum.abs() > 1e-12 {
            let s = total_sum / kept_sum;
            for e in row.iter_mut() {
                e.1 *= s;
            }
        }
    }
    block.dropped += dropped;
    if total_abs > 0.0 {
        block.max_frac = block.max_frac.max(dropped / total_abs);
    }
    block.lens.push(row.len() as u32);
    for &(c, w) in row.iter() {
        block.cols.push(c);
        block.vals.push(w as f32);
    }
}

fn assemble(n_cols: usize, blocks: Vec<Block>) -> Result<RbfWeights, DeformError> {
    let nnz: usize = blocks.iter().map(|b| b.cols.len()).sum();
    if u32::try_from(nnz).is_err() {
        return Err(DeformError::TooLarge {
            what: "number of stored weights (u32 offsets)",
            size: nnz,
            limit: u32::MAX as usize,
        });
    }
    let rows: usize = blocks.iter().map(|b| b.lens.len()).sum();
    let mut row_ptr = Vec::with_capacity(rows + 1);
    let mut cols = Vec::with_capacity(nnz);
    let mut vals = Vec::with_capacity(nnz);
    let (mut dropped, mut max_frac) = (0.0, 0.0f64);
    let mut acc = 0u32;
    row_ptr.push(0);
    for b in blocks {
        for l in &b.lens {
            acc += l;
            row_ptr.push(acc);
        }
        cols.extend_from_slice(&b.cols);
        vals.extend_from_slice(&b.vals);
        dropped += b.dropped;
        max_frac = max_frac.max(b.max_frac);
    }
    RbfWeights::from_csr(n_cols, row_ptr, cols, vals, dropped, max_frac)
}

fn bake_normalized(
    ctrl: &[[f64; 3]],
    high: &[[f64; 3]],
    o: &BakeOptions,
) -> Result<RbfWeights, DeformError> {
    let eps = o.epsilon;
    let grid = o.kernel.is_compact().then(|| Grid::new(ctrl, 1.0 / eps));
    let blocks: Result<Vec<Block>, DeformError> = high
        .par_chunks(BAKE_BLOCK)
        .enumerate()
        .map(|(b, chunk)| {
            let mut block = Block::default();
            let mut row: Vec<(u32, f64)> = Vec::new();
            for (r, x) in chunk.iter().enumerate() {
                row.clear();
                match &grid {
                    Some(g) => g.for_each_within(x, ctrl, 1.0 / eps, |j, d2| {
                        row.push((j, o.kernel.eval(eps * d2.sqrt())))
                    }),
                    None if o.kernel == Kernel::Gaussian => {
                        // exp(−ε²(d² − d²_min)): the same ratios, no underflow far from the cage.
                        let d2: Vec<f64> = ctrl.iter().map(|y| dist2(x, y)).collect();
                        let m = d2.iter().copied().fold(f64::INFINITY, f64::min);
                        row.extend(
                            d2.iter()
                                .enumerate()
                                .map(|(j, &d)| (j as u32, (-(eps * eps) * (d - m)).exp())),
                        );
                    }
                    None => row.extend(
                        ctrl.iter()
                            .enumerate()
                            .map(|(j, y)| (j as u32, o.kernel.eval(eps * dist2(x, y).sqrt()))),
                    ),
                }
                let sum: f64 = row.iter().map(|e| e.1).sum();
                if !(sum > 0.0 && sum.is_finite()) {
                    return Err(DeformError::Unreached {
                        vertex: b * BAKE_BLOCK + r,
                    });
                }
                for e in row.iter_mut() {
                    e.1 /= sum;
                }
                push_row(&mut row, o, &mut block);
            }
            Ok(block)
        })
        .collect();
    assemble(ctrl.len(), blocks?)
}

/// Smallest thickness of the controls, as a fraction of their largest half-extent, for the
/// degree-1 polynomial block to count as full rank (Gram eigenvalue ratio 1e-12).
const MIN_RELATIVE_THICKNESS: f64 = 1e-6;

/// The polynomial block must have full column rank (scipy: "data is not compatible with the
/// requested degree"): the controls must not be coplanar or collinear. The test runs on
/// coordinates scaled by the controls' largest half-extent, the same for every axis: the
/// per-axis scaling of the solve (scipy's) would stretch an axis along which the controls
/// span 1e-45 to the width of the others, pass the test, and let the polynomial multiply a
/// high vertex's offset along that axis by the inverse of that span (to infinity in f32).
fn check_polynomial_rank(ctrl: &[[f64; 3]], shift: &[f64; 3]) -> Result<(), DeformError> {
    let (lo_c, hi_c) = bounds(ctrl);
    let size = (0..3)
        .map(|d| (hi_c[d] - lo_c[d]) / 2.0)
        .fold(0.0f64, f64::max);
    // All controls at one point are refused as duplicates before this; 1 keeps the test defined.
    let iso = [if size > 0.0 { size } else { 1.0 }; 3];
    let gram = Mat::<f64>::from_fn(N_POLY, N_POLY, |a, b| {
        ctrl.iter()
            .map(|y| {
                let p = monomials(y, shift, &iso);
                p[a] * p[b]
            })
            .sum()
    });
    let eig = gram
        .self_adjoint_eigenvalues(Side::Lower)
        .map_err(|e| DeformError::Singular {
            reason: format!("eigenvalues of the polynomial Gram matrix failed: {e:?}"),
        })?;
    let (lo, hi) = eig.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &l| {
        (lo.min(l), hi.max(l.abs()))
    });
    let min_ratio = MIN_RELATIVE_THICKNESS * MIN_RELATIVE_THICKNESS;
    if lo.is_nan() || lo <= min_ratio * hi {
        // The controls came from f32 coordinates: print them as such.
        let (lo_c, hi_c) = (lo_c.map(|x| x as f32), hi_c.map(|x| x as f32));
        return Err(DeformError::Singular {
            reason: format!(
                "the controls are coplanar or collinear: their thinnest direction spans about \
                 {:e} of their widest (at least {MIN_RELATIVE_THICKNESS:e} needed; bounding box \
                 {lo_c:?} to {hi_c:?}), so the degree-1 polynomial term is undetermined across \
                 them and would scale a vertex's offset from their plane without bound (Gram \
                 eigenvalues min {lo:e}, max {hi:e}); add controls off the plane or use \
                 normalized mode",
                (lo.max(0.0) / hi).sqrt()
            ),
        });
    }
    Ok(())
}

struct Solved {
    model: CoefficientModel,
    size: usize,
    nnz: usize,
    pivot_ratio: f64,
    solver: &'static str,
}

fn solve_interpolation(ctrl: &[[f64; 3]], o: &BakeOptions) -> Result<Solved, DeformError> {
    let n = ctrl.len();
    if n < N_POLY {
        return Err(DeformError::Singular {
            reason: format!("degree-1 interpolation in 3D needs at least 4 controls, got {n}"),
        });
    }
    let (shift, scale) = shift_scale(ctrl);
    check_polynomial_rank(ctrl, &shift)?;
    let poly: Vec<[f64; N_POLY]> = ctrl.iter().map(|y| monomials(y, &shift, &scale)).collect();
    let eps = o.epsilon;
    let size = n + N_POLY;
    let mut x = Mat::<f64>::zeros(size, n);
    for j in 0..n {
        x[(j, j)] = 1.0;
    }
    let (nnz, pivot_ratio, solver) = if o.kernel.is_compact() {
        let grid = Grid::new(ctrl, 1.0 / eps);
        let mut trip: Vec<Triplet<usize, usize, f64>> = Vec::new();
        for (i, y) in ctrl.iter().enumerate() {
            grid.for_each_within(y, ctrl, 1.0 / eps, |j, d2| {
                trip.push(Triplet {
                    row: i,
                    col: j as usize,
                    val: o.kernel.eval(eps * d2.sqrt()),
                });
            });
            for (m, &p) in poly[i].iter().enumerate() {
                trip.push(Triplet {
                    row: i,
                    col: n + m,
                    val: p,
                });
                trip.push(Triplet {
                    row: n + m,
                    col: i,
                    val: p,
                });
            }
        }
        let nnz = trip.len();
        let a =
            SparseColMat::<usize, f64>::try_new_from_triplets(size, size, &trip).map_err(|e| {
                DeformError::Singular {
                    reason: format!("sparse assembly failed: {e:?}"),
                }
            })?;
        let lu = a.sp_lu().map_err(|e| DeformError::Singular {
            reason: format!("sparse LU failed: {e:?}"),
        })?;
        lu.solve_in_place(x.as_mut());
        (nnz, f64::NAN, "sparse LU")
    } else {
        let a = Mat::<f64>::from_fn(size, size, |i, j| match (i < n, j < n) {
            (true, true) => o.kernel.eval(eps * dist2(&ctrl[i], &ctrl[j]).sqrt()),
            (true, false) => poly[i][j - n],
            (false, true) => poly[j][i - n],
            (false, false) => 0.0,
        });
        let lu = a.partial_piv_lu();
        let u = lu.U();
        let (mut umin, mut umax) = (f64::INFINITY, 0.0f64);
        for i in 0..size {
            let d = u[(i, i)].abs();
            umin = umin.min(d);
            umax = umax.max(d);
        }
        let ratio = umin / umax;
        if ratio.is_nan() || ratio <= size as f64 * f64::EPSILON {
            return Err(DeformError::Singular {
                reason: format!(
                    "LU pivot ratio min|u_ii|/max|u_ii| = {ratio:e} for {size} unknowns (controls too close for this kernel/epsilon?)"
                ),
            });
        }
        lu.solve_in_place(x.as_mut());
        (size * size, ratio, "dense partial-pivot LU")
    };
    let mut inv = vec![0.0f64; size * n];
    for k in 0..size {
        for j in 0..n {
            let v = x[(k, j)];
            if !v.is_finite() {
                return Err(DeformError::Singular {
                    reason: format!("{solver} produced a non-finite inverse entry ({k}, {j})"),
                });
            }
            inv[k * n + j] = v;
        }
    }
    let model = CoefficientModel {
        kernel: o.kernel,
        epsilon: eps,
        ctrl: ctrl.to_vec(),
        shift,
        scale,
        inv,
        sparse_phi: None,
    };
    Ok(Solved {
        model,
        size,
        nnz,
        pivot_ratio,
        solver,
    })
}

/// For compact kernels, precomputes `φ(ε|x_h − y_j|)` of every high vertex (sparse rows).
fn attach_sparse_phi(mut model: CoefficientModel, high: &[[f64; 3]]) -> CoefficientModel {
    if !model.kernel.is_compact() {
        return model;
    }
    let eps = model.epsilon;
    let grid = Grid::new(&model.ctrl, 1.0 / eps);
    let rows: Vec<Vec<(u32, f64)>> = high
        .par_iter()
        .map(|x| {
            let mut r = Vec::new();
            grid.for_each_within(x, &model.ctrl, 1.0 / eps, |j, d2| {
                r.push((j, model.kernel.eval(eps * d2.sqrt())))
            });
            r.sort_unstable_by_key(|e| e.0);
            r
        })
        .collect();
    let mut row_ptr = Vec::with_capacity(high.len() + 1);
    let mut cols = Vec::new();
    let mut vals = Vec::new();
    row_ptr.push(0);
    for r in rows {
        for (j, v) in r {
            cols.push(j);
            vals.push(v);
        }
        row_ptr.push(cols.len());
    }
    model.sparse_phi = Some((row_ptr, cols, vals));
    model
}

/// `W = [Φ_hc P_h] · X`, row by row, pruned into CSR.
fn weights_from_model(
    model: &CoefficientModel,
    high: &[[f64; 3]],
    o: &BakeOptions,
) -> Result<RbfWeights, DeformError> {
    let n = model.n_ctrl();
    let blocks: Result<Vec<Block>, DeformError> = high
        .par_chunks(BAKE_BLOCK)
        .enumerate()
        .map(|(b, chunk)| {
            let mut block = Block::default();
            let mut w = vec![0.0f64; n];
            let mut row: Vec<(u32, f64)> = Vec::with_capacity(n);
            let axpy = |w: &mut [f64], s: f64, k: usize| {
                for (wj, xj) in w.iter_mut().zip(model.inv_row(k)) {
                    *wj += s * xj;
                }
            };
            for (r, x) in chunk.iter().enumerate() {
                let v = b * BAKE_BLOCK + r;
                w.fill(0.0);
                match &model.sparse_phi {
                    Some((row_ptr, cols, vals)) => {
                        let (a, e) = (
                            row_ptr.get(v).copied().unwrap_or(0),
                            row_ptr.get(v + 1).copied().unwrap_or(0),
                        );
                        for (&j, &phi) in cols[a..e].iter().zip(&vals[a..e]) {
                            axpy(&mut w, phi, j as usize);
                        }
                    }
                    None => {
                        for (j, y) in model.ctrl.iter().enumerate() {
                            let phi = model.kernel.eval(model.epsilon * dist2(x, y).sqrt());
                            axpy(&mut w, phi, j);
                        }
                    }
                }
                for (m, p) in monomials(x, &model.shift, &model.scale).iter().enumerate() {
                    axpy(&mut w, *p, n + m);
                }
                if let Some(j) = w
                    .iter()
                    .position(|x| !x.is_finite() || x.abs() > f64::from(f32::MAX))
                {
                    return Err(DeformError::IllConditioned {
                        vertex: v,
                        control: j,
                        weight: w[j],
                    });
                }
                row.clear();
                row.extend(w.iter().enumerate().map(|(j, &v)| (j as u32, v)));
                push_row(&mut row, o, &mut block);
            }
            Ok(block)
        })
        .collect();
    assemble(n, blocks?)
}
