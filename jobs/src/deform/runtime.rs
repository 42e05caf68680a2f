//! Per-frame deformation: `deformed = rest + W · (low_now − low_rest)`.

use std::ops::Range;
use std::sync::Arc;

use glam::Vec3;
use rayon::prelude::*;
use wide::f32x4;

use super::{DeformError, RbfBinding, RbfWeights, VertexTriangles, recompute_normals};

/// High vertices per rayon work item.
const DEFORM_CHUNK: usize = 2048;

/// How the weighted sum of a row is accumulated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SimdMode {
    /// Three scalar accumulators.
    Scalar,
    /// One `wide::f32x4` accumulator over (x, y, z, pad): one splat-multiply-add per weight.
    #[default]
    F32x4,
}

/// Which copy of the weight table [`RbfDeformer::deform`] reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum WeightLayout {
    /// The fixed-width blocked table ([`RbfBinding::fixed_weights`]) when the binding has one,
    /// else the CSR table.
    #[default]
    Auto,
    /// Always the CSR table ([`RbfWeights`]): the reference path, and the one [`SimdMode`]
    /// selects a kernel for.
    Csr,
}

/// Applies a baked [`RbfBinding`] every frame. Owns its scratch (displacements, coefficients,
/// normals), so [`deform`](Self::deform) does not allocate. Cheap to create per instance: the
/// binding is shared.
#[derive(Debug)]
pub struct RbfDeformer {
    binding: Arc<RbfBinding>,
    delta: Vec<[f32; 4]>,
    delta64: Vec<[f64; 3]>,
    coef: Vec<[f64; 3]>,
    normals: Option<(VertexTriangles, Vec<Vec3>)>,
    cursor: usize,
    simd: SimdMode,
    layout: WeightLayout,
}

impl RbfDeformer {
    /// A deformer for `binding`, with its scratch allocated now. The first deformer of a
    /// binding also builds the binding's shared fixed-width table
    /// ([`RbfBinding::fixed_weights`]), so no frame pays for it.
    pub fn new(binding: Arc<RbfBinding>) -> Self {
        let _ = binding.fixed_weights();
        let n_ctrl = binding.low_rest().len();
        let (delta64, coef) = match binding.coefficients() {
            Some(m) => (vec![[0.0; 3]; n_ctrl], vec![[0.0; 3]; m.n_coefficients()]),
            None => (Vec::new(), Vec::new()),
        };
        Self {
            binding,
            delta: vec![[0.0; 4]; n_ctrl],
            delta64,
            coef,
            normals: None,
            cursor: 0,
            simd: SimdMode::default(),
            layout: WeightLayout::default(),
        }
    }

    /// Also recompute area-weighted normals after each deformation, from the high mesh's
    /// triangle list (see [`normals`](Self::normals)).
    ///
    /// # Errors
    /// As [`VertexTriangles::new`].
    pub fn with_normals(mut self, indices: &[u32]) -> Result<Self, DeformError> {
        let n = self.n_high();
        self.normals = Some((VertexTriangles::new(indices, n)?, vec![Vec3::ZERO; n]));
        Ok(self)
    }

    /// Chooses the accumulation kernel (for measurements; both give the same sums up to rounding).
    pub fn set_simd(&mut self, mode: SimdMode) {
        self.simd = mode;
    }

    /// Chooses the weight table layout (for measurements and as the reference: both give the
    /// same sums in the same order).
    pub fn set_layout(&mut self, layout: WeightLayout) {
        self.layout = layout;
    }

    /// Whether [`deform`](Self::deform) reads the fixed-width table (the layout is
    /// [`WeightLayout::Auto`] and the binding has one).
    pub fn uses_fixed_layout(&self) -> bool {
        self.layout == WeightLayout::Auto && self.binding.fixed_weights().is_some()
    }

    /// The binding.
    pub fn binding(&self) -> &RbfBinding {
        &self.binding
    }

    /// Number of controls (length of `low_now`).
    pub fn n_ctrl(&self) -> usize {
        self.binding.low_rest().len()
    }

    /// Number of high vertices (length of `out`).
    pub fn n_high(&self) -> usize {
        self.binding.high_rest().len()
    }

    /// Normals of the last deformation, when enabled with [`with_normals`](Self::with_normals).
    pub fn normals(&self) -> Option<&[Vec3]> {
        self.normals.as_ref().map(|(_, n)| n.as_slice())
    }

    /// Control displacements of the last call, `(x, y, z, 0)` per control.
    pub fn displacements(&self) -> &[[f32; 4]] {
        &self.delta
    }

    /// Deforms every high vertex: `out[i] = rest[i] + Σ_j W_ij (low_now[j] − low_rest[j])`
    /// (or the interpolant from coefficients), parallel on the current rayon pool.
    ///
    /// # Errors
    /// [`DeformError::LengthMismatch`] when `low_now` does not have `n_ctrl` or `out` `n_high`
    /// entries, [`DeformError::NotFinite`] for a NaN/infinite control position,
    /// [`DeformError::Overflow`] when a deformed position would not fit an `f32`: from a weight
    /// table, checked before anything is written (from the table's
    /// [`max_gain`](super::BakeReport::max_gain) and the largest control displacement); from
    /// coefficients, found as the positions are written (`out` then holds this call's partial
    /// result).
    pub fn deform(&mut self, low_now: &[Vec3], out: &mut [Vec3]) -> Result<(), DeformError> {
        self.deform_range(low_now, out, 0..self.n_high())
    }

    /// Amortised deformation: refreshes only slice `cursor` of `slices` equal slices of the
    /// high vertices (round-robin, the cursor advances each call) and leaves the other entries of
    /// `out` as they were, so a full refresh takes `slices` calls. Returns the refreshed range.
    /// Normals, when enabled, are recomputed for every vertex from `out`.
    ///
    /// # Errors
    /// As [`deform`](Self::deform), plus [`DeformError::InvalidOption`] for `slices == 0`.
    pub fn deform_amortized(
        &mut self,
        low_now: &[Vec3],
        out: &mut [Vec3],
        slices: usize,
    ) -> Result<Range<usize>, DeformError> {
        if slices == 0 {
            return Err(DeformError::InvalidOption {
                reason: "amortised deformation needs at least 1 slice".into(),
            });
        }
        let n = self.n_high();
        let slice = self.cursor % slices;
        let per = n.div_ceil(slices);
        let range = (slice * per).min(n)..((slice + 1) * per).min(n);
        self.deform_range(low_now, out, range.clone())?;
        self.cursor = (slice + 1) % slices;
        Ok(range)
    }

    fn deform_range(
        &mut self,
        low_now: &[Vec3],
        out: &mut [Vec3],
        range: Range<usize>,
    ) -> Result<(), DeformError> {
        let (n_ctrl, n_high) = (self.n_ctrl(), self.n_high());
        if low_now.len() != n_ctrl {
            return Err(DeformError::LengthMismatch {
                what: "current low-poly positions",
                expected: n_ctrl,
                actual: low_now.len(),
            });
        }
        if out.len() != n_high {
            return Err(DeformError::LengthMismatch {
                what: "deformed output",
                expected: n_high,
                actual: out.len(),
            });
        }
        if let Some(index) = low_now.iter().position(|p| !p.is_finite()) {
            return Err(DeformError::NotFinite {
                what: "current low-poly positions",
                index,
            });
        }
        let binding = &*self.binding;
        let mut max_delta = 0.0f32;
        for ((d, now), rest) in self.delta.iter_mut().zip(low_now).zip(binding.low_rest()) {
            let v = *now - *rest;
            max_delta = max_delta.max(v.abs().max_element());
            *d = [v.x, v.y, v.z, 0.0];
        }
        // |out_i| <= |rest_i| + Σ_j |w_ij| |Δ_j|: the f32 sum of a row of at most n_ctrl
        // products stays within n_ctrl·ε of that, and a sum within f32::MAX does not round to
        // infinity. So a table's deformation that would overflow is refused before it writes.
        let gain = binding.report().max_gain;
        let slack = 1.0 + n_ctrl as f64 * f64::from(f32::EPSILON);
        let bound = f64::from(binding.high_rest_extent()) + gain * f64::from(max_delta) * slack;
        if binding.weights().is_some() && (bound.is_nan() || bound > f64::from(f32::MAX)) {
            return Err(DeformError::Overflow {
                reason: format!(
                    "controls moved by up to {max_delta:e} with weights summing to up to \
                     {gain:e} per vertex can move a vertex {bound:e} from the origin"
                ),
            });
        }
        let fixed = match self.layout {
            WeightLayout::Auto => binding.fixed_weights(),
            WeightLayout::Csr => None,
        };
        if let Some(f) = fixed {
            f.apply(&self.delta, binding.high_rest(), out, range);
            if let Some((adj, normals)) = &mut self.normals {
                recompute_normals(adj, out, normals)?;
            }
            return Ok(());
        }
        let rest = &binding.high_rest()[range.clone()];
        let target = &mut out[range.clone()];
        let base = range.start;
        if let Some(w) = binding.weights() {
            apply_weights(w, &self.delta, rest, target, base, self.simd);
        } else if let Some(model) = binding.coefficients() {
            for ((d, now), r) in self.delta64.iter_mut().zip(low_now).zip(binding.low_rest()) {
                *d = [
                    f64::from(now.x) - f64::from(r.x),
                    f64::from(now.y) - f64::from(r.y),
                    f64::from(now.z) - f64::from(r.z),
                ];
            }
            let delta64 = &self.delta64;
            self.coef.par_iter_mut().enumerate().for_each(|(k, c)| {
                let mut acc = [0.0f64; 3];
                for (x, d) in model.inv_row(k).iter().zip(delta64) {
                    acc[0] += x * d[0];
                    acc[1] += x * d[1];
                    acc[2] += x * d[2];
                }
                *c = acc;
            });
            let coef = &self.coef;
            // The interpolant has no precomputed bound: each result is checked as it is made.
            let overflow = target
                .par_chunks_mut(DEFORM_CHUNK)
                .zip(rest.par_chunks(DEFORM_CHUNK))
                .enumerate()
                .filter_map(|(c, (o, r))| {
                    let mut first = None;
                    for (k, (o, r)) in o.iter_mut().zip(r).enumerate() {
                        let vertex = base + c * DEFORM_CHUNK + k;
                        let x = [f64::from(r.x), f64::from(r.y), f64::from(r.z)];
                        let d = model.eval(vertex, x, coef);
                        *o = Vec3::new(
                            (x[0] + d[0]) as f32,
                            (x[1] + d[1]) as f32,
                            (x[2] + d[2]) as f32,
                        );
                        if first.is_none() && !o.is_finite() {
                            first = Some((vertex, [x[0] + d[0], x[1] + d[1], x[2] + d[2]]));
                        }
                    }
                    first
                })
                .min_by_key(|(vertex, _)| *vertex);
            if let Some((vertex, p)) = overflow {
                return Err(DeformError::Overflow {
                    reason: format!("high vertex {vertex} deforms to {p:?}"),
                });
            }
        }
        if let Some((adj, normals)) = &mut self.normals {
            recompute_normals(adj, out, normals)?;
        }
        Ok(())
    }
}

/// `target[k] = rest[k] + Σ_e vals[e] · delta[cols[e]]` over row `base + k` of `w`.
fn apply_weights(
    w: &RbfWeights,
    delta: &[[f32; 4]],
    rest: &[Vec3],
    target: &mut [Vec3],
    base: usize,
    simd: SimdMode,
) {
    let (row_ptr, cols, vals) = (w.row_ptr(), w.cols(), w.vals());
    target
        .par_chunks_mut(DEFORM_CHUNK)
        .zip(rest.par_chunks(DEFORM_CHUNK))
        .enumerate()
        .for_each(|(c, (o, r))| {
            let first = base + c * DEFORM_CHUNK;
            let ptr = &row_ptr[first..=first + o.len()];
            match simd {
                SimdMode::F32x4 => {
                    for (k, (o, r)) in o.iter_mut().zip(r).enumerate() {
                        let (a, b) = (ptr[k] as usize, ptr[k + 1] as usize);
                        let mut acc = f32x4::ZERO;
                        for (&j, &wt) in cols[a..b].iter().zip(&vals[a..b]) {
                            acc = f32x4::splat(wt).mul_add(f32x4::from(delta[j as usize]), acc);
                        }
                        let s = acc.to_array();
                        *o = Vec3::new(r.x + s[0], r.y + s[1], r.z + s[2]);
                    }
                }
                SimdMode::Scalar => {
                    for (k, (o, r)) in o.iter_mut().zip(r).enumerate() {
                        let (a, b) = (ptr[k] as usize, ptr[k + 1] as usize);
                        let (mut x, mut y, mut z) = (0.0f32, 0.0f32, 0.0f32);
                        for (&j, &wt) in cols[a..b].iter().zip(&vals[a..b]) {
                            let d = delta[j as usize];
                            x += wt * d[0];
                            y += wt * d[1];
                            z += wt * d[2];
                        }
                        *o = Vec3::new(r.x + x, r.y + y, r.z + z);
                    }
                }
            }
        });
}

/// A chain of deformers, low → mid → … → high: each stage's deformed output drives the next
/// stage's controls. Owns the intermediate buffers.
#[derive(Debug)]
pub struct RbfChain {
    stages: Vec<RbfDeformer>,
    buffers: Vec<Vec<Vec3>>,
}

impl RbfChain {
    /// Chains `stages` in order. Stage `i + 1`'s control rest positions must be stage `i`'s high
    /// rest positions (same count, equal within 1e-6).
    ///
    /// # Errors
    /// [`DeformError::Empty`] for no stages, [`DeformError::LengthMismatch`] or
    /// [`DeformError::InvalidOption`] for stages that do not fit together.
    pub fn new(stages: Vec<RbfDeformer>) -> Result<Self, DeformError> {
        if stages.is_empty() {
            return Err(DeformError::Empty {
                what: "RBF chain stage list",
            });
        }
        for (i, pair) in stages.windows(2).enumerate() {
            let (a, b) = (pair[0].binding.high_rest(), pair[1].binding.low_rest());
            if a.len() != b.len() {
                return Err(DeformError::LengthMismatch {
                    what: "chain: next stage's controls vs this stage's high vertices",
                    expected: a.len(),
                    actual: b.len(),
                });
            }
            if let Some(v) = a
                .iter()
                .zip(b)
                .position(|(p, q)| (*p - *q).abs().max_element() > 1e-6)
            {
                return Err(DeformError::InvalidOption {
                    reason: format!(
                        "chain: stage {} control {v} rest position differs from stage {i}'s high rest vertex",
                        i + 1
                    ),
                });
            }
        }
        let buffers = stages[..stages.len() - 1]
            .iter()
            .map(|s| vec![Vec3::ZERO; s.n_high()])
            .collect();
        Ok(Self { stages, buffers })
    }

    /// The stages.
    pub fn stages(&self) -> &[RbfDeformer] {
        &self.stages
    }

    /// Deforms through every stage; `out` receives the last stage's vertices.
    ///
    /// # Errors
    /// As [`RbfDeformer::deform`] for the first stage's inputs and the last stage's output.
    pub fn deform(&mut self, low_now: &[Vec3], out: &mut [Vec3]) -> Result<(), DeformError> {
        let last = self.stages.len().saturating_sub(1);
        for i in 0..=last {
            let (done, todo) = self.buffers.split_at_mut(i);
            let input: &[Vec3] = if i == 0 { low_now } else { &done[i - 1] };
            let Some(stage) = self.stages.get_mut(i) else {
                break;
            };
            match todo.first_mut() {
                Some(buf) if i < last => stage.deform(input, buf)?,
                _ => stage.deform(input, out)?,
            }
        }
        Ok(())
    }
}
