//! The baked weight table `W` in compressed sparse row form.

use super::DeformError;

/// `W`, `n_rows` (high vertices) × `n_cols` (controls), compressed sparse rows.
///
/// Row `i` holds the controls that move high vertex `i`: `cols[row_ptr[i]..row_ptr[i+1]]` with
/// weights `vals[..]`. Offsets and columns are `u32` so that the same arrays go to the GPU as is.
#[derive(Clone, Debug, PartialEq)]
pub struct RbfWeights {
    n_cols: usize,
    row_ptr: Vec<u32>,
    cols: Vec<u32>,
    vals: Vec<f32>,
    dropped_mass: f64,
    max_row_dropped_fraction: f64,
}

impl RbfWeights {
    /// Builds and validates a table from raw CSR arrays (`row_ptr` has `n_rows + 1` entries,
    /// starts at 0, never decreases, ends at `cols.len()`; every column `< n_cols`; weights finite).
    /// `dropped_mass` and `max_row_dropped_fraction` describe what a pruning step removed (0 if none).
    ///
    /// # Errors
    /// [`DeformError::LengthMismatch`], [`DeformError::IndexOutOfRange`],
    /// [`DeformError::NotFinite`] or [`DeformError::InvalidOption`] for a malformed table.
    pub fn from_csr(
        n_cols: usize,
        row_ptr: Vec<u32>,
        cols: Vec<u32>,
        vals: Vec<f32>,
        dropped_mass: f64,
        max_row_dropped_fraction: f64,
    ) -> Result<Self, DeformError> {
        if row_ptr.first().copied() != Some(0) {
            return Err(DeformError::InvalidOption {
                reason: "CSR row_ptr must start with 0".into(),
            });
        }
        if cols.len() != vals.len() {
            return Err(DeformError::LengthMismatch {
                what: "CSR weight values",
                expected: cols.len(),
                actual: vals.len(),
            });
        }
        if row_ptr.last().map(|&l| l as usize) != Some(cols.len()) {
            return Err(DeformError::LengthMismatch {
                what: "CSR column indices (row_ptr's last entry)",
                expected: row_ptr.last().map_or(0, |&l| l as usize),
                actual: cols.len(),
            });
        }
        if let Some(i) = row_ptr.windows(2).position(|w| w[1] < w[0]) {
            return Err(DeformError::InvalidOption {
                reason: format!("CSR row_ptr decreases at row {i}"),
            });
        }
        if let Some(e) = cols.iter().position(|&c| c as usize >= n_cols) {
            return Err(DeformError::IndexOutOfRange {
                what: "CSR column",
                index: cols[e] as usize,
                len: n_cols,
            });
        }
        if let Some(e) = vals.iter().position(|v| !v.is_finite()) {
            return Err(DeformError::NotFinite {
                what: "CSR weights",
                index: e,
            });
        }
        Ok(Self {
            n_cols,
            row_ptr,
            cols,
            vals,
            dropped_mass,
            max_row_dropped_fraction,
        })
    }

    /// Number of rows (high vertices).
    pub fn n_rows(&self) -> usize {
        self.row_ptr.len().saturating_sub(1)
    }

    /// Number of columns (controls).
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }

    /// Number of stored weights.
    pub fn nnz(&self) -> usize {
        self.cols.len()
    }

    /// Row offsets, `n_rows + 1` entries.
    pub fn row_ptr(&self) -> &[u32] {
        &self.row_ptr
    }

    /// Column (control) index of each stored weight.
    pub fn cols(&self) -> &[u32] {
        &self.cols
    }

    /// The stored weights.
    pub fn vals(&self) -> &[f32] {
        &self.vals
    }

    /// Row `i` as `(control, weight)` pairs (empty if `i` is out of range).
    pub fn row(&self, i: usize) -> impl Iterator<Item = (usize, f32)> + '_ {
        let (a, b) = match (self.row_ptr.get(i), self.row_ptr.get(i + 1)) {
            (Some(&a), Some(&b)) => (a as usize, b as usize),
            _ => (0, 0),
        };
        self.cols[a..b]
            .iter()
            .zip(&self.vals[a..b])
            .map(|(&c, &w)| (c as usize, w))
    }

    /// Σ |w| over every weight the pruning step removed, summed over all rows.
    pub fn dropped_mass(&self) -> f64 {
        self.dropped_mass
    }

    /// The largest per-row fraction `Σ|dropped| / Σ|all|` removed by pruning.
    pub fn max_row_dropped_fraction(&self) -> f64 {
        self.max_row_dropped_fraction
    }

    /// Bytes held by the three arrays.
    pub fn size_bytes(&self) -> usize {
        4 * (self.row_ptr.len() + self.cols.len() + self.vals.len())
    }
}
