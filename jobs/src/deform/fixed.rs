//! Fixed-width weight layout for the common case "every row has at most `K` weights".
//!
//! The high vertices are grouped in blocks of [`LANES`] consecutive vertices. A block stores, for
//! each slot `k in 0..K`, the `LANES` control indices (`u16`) and the `LANES` weights (`f32`) of
//! slot `k` of its vertices, structure-of-arrays; rows shorter than `K` are padded with weight
//! 0 on control 0. The blocks follow the vertex order, so the deformation streams both arrays
//! front to back (one sequential read each, which the hardware prefetcher follows), 6 bytes per
//! slot against 8 for the CSR table, and needs no row offsets. Within a block the eight rows are
//! independent accumulation chains, so the sum is throughput-bound, not latency-bound as one CSR
//! row at a time is.

use std::ops::Range;

use glam::Vec3;
use rayon::prelude::*;
use wide::f32x4;

use super::{DeformError, RbfWeights};

/// Vertices per block.
pub const LANES: usize = 8;

/// Largest number of slots per row [`FixedWeights::from_csr`] accepts.
pub const MAX_FIXED_K: usize = 64;

/// High vertices per rayon work item of the fixed-layout deformation (a multiple of [`LANES`]).
const FIXED_CHUNK: usize = 4096;

/// `W` in the fixed-width, blocked layout (see the module documentation). Built from a CSR
/// table with [`from_csr`](Self::from_csr); the weights and their order within a row are the
/// CSR table's, so the deformation sums the same products in the same order.
#[derive(Clone, Debug, PartialEq)]
pub struct FixedWeights {
    n_rows: usize,
    n_cols: usize,
    k: usize,
    idx: Vec<[u16; LANES]>,
    w: Vec<[f32; LANES]>,
}

impl FixedWeights {
    /// Converts a CSR table: `K` = its longest row (at least 1).
    ///
    /// # Errors
    /// [`DeformError::InvalidOption`] when the table has more than 65536 columns (indices are
    /// `u16`) or a row longer than `max_k` (or [`MAX_FIXED_K`]).
    pub fn from_csr(w: &RbfWeights, max_k: usize) -> Result<Self, DeformError> {
        let n_cols = w.n_cols();
        if n_cols > 1 << 16 {
            return Err(DeformError::InvalidOption {
                reason: format!("fixed layout: {n_cols} controls do not fit u16 indices"),
            });
        }
        let n_rows = w.n_rows();
        let k = w
            .row_ptr()
            .windows(2)
            .map(|p| (p[1] - p[0]) as usize)
            .max()
            .unwrap_or(0)
            .max(1);
        let limit = max_k.min(MAX_FIXED_K);
        if k > limit {
            return Err(DeformError::InvalidOption {
                reason: format!("fixed layout: a row has {k} weights, more than {limit}"),
            });
        }
        let n_blocks = n_rows.div_ceil(LANES);
        let mut idx = vec![[0u16; LANES]; n_blocks * k];
        let mut wts = vec![[0.0f32; LANES]; n_blocks * k];
        idx.par_chunks_mut(k)
            .zip(wts.par_chunks_mut(k))
            .enumerate()
            .for_each(|(b, (bi, bw))| {
                for lane in 0..LANES {
                    for (slot, (c, x)) in w.row(b * LANES + lane).enumerate() {
                        // c < n_cols <= 65536 and slot < k were checked above
                        bi[slot][lane] = c as u16;
                        bw[slot][lane] = x;
                    }
                }
            });
        Ok(Self {
            n_rows,
            n_cols,
            k,
            idx,
            w: wts,
        })
    }

    /// Number of rows (high vertices).
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }

    /// Number of columns (controls).
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }

    /// Slots per row (`K`): the longest row of the source table.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Number of blocks of [`LANES`] rows.
    pub fn n_blocks(&self) -> usize {
        self.n_rows.div_ceil(LANES)
    }

    /// Control indices of block `b`, `K` slots of [`LANES`] (empty if `b` is out of range).
    pub fn block_indices(&self, b: usize) -> &[[u16; LANES]] {
        self.idx.get(b * self.k..(b + 1) * self.k).unwrap_or(&[])
    }

    /// Weights of block `b`, `K` slots of [`LANES`] (empty if `b` is out of range).
    pub fn block_weights(&self, b: usize) -> &[[f32; LANES]] {
        self.w.get(b * self.k..(b + 1) * self.k).unwrap_or(&[])
    }

    /// Bytes held by the two arrays (6 per slot).
    pub fn size_bytes(&self) -> usize {
        self.idx.len() * 2 * LANES + self.w.len() * 4 * LANES
    }

    /// `out[i] = rest[i] + Σ_k w[i][k] · delta[idx[i][k]]` for the rows `i` in `range`, parallel
    /// on the current rayon pool; other entries of `out` are left as they were. `delta` holds
    /// `(x, y, z, 0)` per control and must have `n_cols` entries, `rest` and `out` `n_rows`
    /// (the caller, [`RbfDeformer`](super::RbfDeformer), checks this; on a mismatch nothing is
    /// written).
    pub(crate) fn apply(
        &self,
        delta: &[[f32; 4]],
        rest: &[Vec3],
        out: &mut [Vec3],
        range: Range<usize>,
    ) {
        if delta.len() != self.n_cols || rest.len() != self.n_rows || out.len() != self.n_rows {
            return;
        }
        let k = self.k;
        let blocks_per_chunk = FIXED_CHUNK / LANES;
        out.par_chunks_mut(FIXED_CHUNK)
            .zip(rest.par_chunks(FIXED_CHUNK))
            .zip(self.idx.par_chunks(blocks_per_chunk * k))
            .zip(self.w.par_chunks(blocks_per_chunk * k))
            .enumerate()
            .for_each(|(c, (((o, r), ci), cw))| {
                let first = c * FIXED_CHUNK;
                if first >= range.end || first + o.len() <= range.start {
                    return;
                }
                for (b, (((o, r), bi), bw)) in o
                    .chunks_mut(LANES)
                    .zip(r.chunks(LANES))
                    .zip(ci.chunks_exact(k))
                    .zip(cw.chunks_exact(k))
                    .enumerate()
                {
                    let v0 = first + b * LANES;
                    if v0 >= range.end || v0 + o.len() <= range.start {
                        continue;
                    }
                    let acc = block_sum(delta, bi, bw);
                    for (lane, (o, r)) in o.iter_mut().zip(r).enumerate() {
                        if range.contains(&(v0 + lane)) {
                            let s = acc[lane].to_array();
                            *o = Vec3::new(r.x + s[0], r.y + s[1], r.z + s[2]);
                        }
                    }
                }
            });
    }
}

/// The [`LANES`] weighted sums of one block: one `f32x4` (x, y, z, 0) accumulator per vertex,
/// slot by slot, so eight independent multiply-add chains are in flight.
#[inline(always)]
fn block_sum(delta: &[[f32; 4]], bi: &[[u16; LANES]], bw: &[[f32; LANES]]) -> [f32x4; LANES] {
    let mut acc = [f32x4::ZERO; LANES];
    for (ik, wk) in bi.iter().zip(bw) {
        for lane in 0..LANES {
            let d = delta
                .get(usize::from(ik[lane]))
                .copied()
                .unwrap_or_default();
            acc[lane] = f32x4::splat(wk[lane]).mul_add(f32x4::from(d), acc[lane]);
        }
    }
    acc
}
