//! Area-weighted vertex normals from a triangle list, recomputed in parallel without allocation.

use glam::Vec3;
use rayon::prelude::*;

use super::DeformError;

/// Vertex → incident triangles adjacency (CSR), built once from a triangle index list so that
/// normals can be gathered per vertex in parallel (no scatter, no atomics).
#[derive(Clone, Debug, PartialEq)]
pub struct VertexTriangles {
    indices: Vec<u32>,
    offsets: Vec<u32>,
    triangles: Vec<u32>,
}

impl VertexTriangles {
    /// Builds the adjacency of a triangle list over `n_vertices` vertices.
    ///
    /// # Errors
    /// [`DeformError::InvalidOption`] when `indices.len()` is not a multiple of 3,
    /// [`DeformError::IndexOutOfRange`] for an index `>= n_vertices`,
    /// [`DeformError::TooLarge`] beyond `u32` counts.
    pub fn new(indices: &[u32], n_vertices: usize) -> Result<Self, DeformError> {
        if !indices.len().is_multiple_of(3) {
            return Err(DeformError::InvalidOption {
                reason: format!(
                    "triangle index count {} is not a multiple of 3",
                    indices.len()
                ),
            });
        }
        if u32::try_from(indices.len()).is_err() {
            return Err(DeformError::TooLarge {
                what: "triangle index count",
                size: indices.len(),
                limit: u32::MAX as usize,
            });
        }
        if let Some(&bad) = indices.iter().find(|&&i| i as usize >= n_vertices) {
            return Err(DeformError::IndexOutOfRange {
                what: "triangle indices",
                index: bad as usize,
                len: n_vertices,
            });
        }
        let mut counts = vec![0u32; n_vertices + 1];
        for &i in indices {
            counts[i as usize + 1] += 1;
        }
        for v in 0..n_vertices {
            counts[v + 1] += counts[v];
        }
        let offsets = counts.clone();
        let mut fill = counts;
        let mut triangles = vec![0u32; indices.len()];
        for (t, tri) in indices.chunks_exact(3).enumerate() {
            for &i in tri {
                let slot = &mut fill[i as usize];
                triangles[*slot as usize] = t as u32;
                *slot += 1;
            }
        }
        Ok(Self {
            indices: indices.to_vec(),
            offsets,
            triangles,
        })
    }

    /// Number of vertices it was built for.
    pub fn n_vertices(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// The triangle list it was built from.
    pub fn indices(&self) -> &[u32] {
        &self.indices
    }
}

/// Area-weighted normals: `n_v = normalize(Σ_{t ∋ v} (b − a) × (c − a))` over the triangles of `v`
/// (the cross product's length is twice the area). Vertices without triangles, or whose
/// triangles are degenerate, get a zero normal.
///
/// # Errors
/// [`DeformError::LengthMismatch`] when `positions` or `normals` do not have
/// `adjacency.n_vertices()` entries.
pub fn recompute_normals(
    adjacency: &VertexTriangles,
    positions: &[Vec3],
    normals: &mut [Vec3],
) -> Result<(), DeformError> {
    let n = adjacency.n_vertices();
    if positions.len() != n {
        return Err(DeformError::LengthMismatch {
            what: "positions for normal recomputation",
            expected: n,
            actual: positions.len(),
        });
    }
    if normals.len() != n {
        return Err(DeformError::LengthMismatch {
            what: "normal output",
            expected: n,
            actual: normals.len(),
        });
    }
    normals
        .par_chunks_mut(4096)
        .enumerate()
        .for_each(|(c, chunk)| {
            for (k, out) in chunk.iter_mut().enumerate() {
                let v = c * 4096 + k;
                let (a, b) = (
                    adjacency.offsets[v] as usize,
                    adjacency.offsets[v + 1] as usize,
                );
                let mut acc = Vec3::ZERO;
                for &t in &adjacency.triangles[a..b] {
                    let t = t as usize * 3;
                    let (p0, p1, p2) = (
                        positions[adjacency.indices[t] as usize],
                        positions[adjacency.indices[t + 1] as usize],
                        positions[adjacency.indices[t + 2] as usize],
                    );
                    acc += (p1 - p0).cross(p2 - p0);
                }
                *out = acc.normalize_or_zero();
            }
        });
    Ok(())
}
