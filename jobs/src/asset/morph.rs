//! Morph targets (blend shapes) of a skinned mesh: per-vertex position and normal deltas that
//! are added to the bind pose, weighted, before skinning.

use super::BakeError;
use super::hash::ContentHasher;
use glam::Vec3;

/// The most bytes of morph deltas one mesh may hold: 128 MiB, wgpu's downlevel default
/// `max_storage_buffer_binding_size` (what every compute-capable backend offers). The GPU path
/// binds a mesh's deltas as one storage buffer of [`MORPH_DELTA_BYTES_PER_VERTEX`] bytes per
/// (target, vertex), so a mesh past this has more targets than the GPU path supports; a
/// device with a smaller limit refuses the upload with an error naming the mesh.
pub const MAX_MORPH_DELTA_BYTES: u64 = 128 << 20;

/// Bytes per (target, vertex) in the GPU delta buffer: a position and a normal delta, each a
/// `vec4<f32>`.
pub const MORPH_DELTA_BYTES_PER_VERTEX: u64 = 32;

/// How many targets a mesh of `vertices` vertices may carry within [`MAX_MORPH_DELTA_BYTES`].
pub fn max_morph_targets(vertices: usize) -> usize {
    let per_target = (vertices as u64).max(1) * MORPH_DELTA_BYTES_PER_VERTEX;
    usize::try_from(MAX_MORPH_DELTA_BYTES / per_target).unwrap_or(usize::MAX)
}

/// One editable morph target: deltas from the bind pose, one per vertex.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawMorphTarget {
    /// Name for messages and lookup (empty when the source has none).
    pub name: String,
    /// Position deltas, one per vertex of the mesh.
    pub positions: Vec<Vec3>,
    /// Normal deltas: empty, or one per vertex.
    pub normals: Vec<Vec3>,
}

/// A target whose weight is not zero this frame: the compacted list the skinning paths walk,
/// so targets at weight 0 cost nothing. `repr(C)` and `Pod`: the GPU path uploads it as it is
/// (a `vec2<u32>`, the weight's bits in `y`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ActiveMorph {
    /// The target's index in the mesh.
    pub target: u32,
    /// Its weight (finite, non-zero).
    pub weight: f32,
}

/// A mesh's baked morph targets, immutable: deltas target-major (target `k`'s delta for vertex
/// `v` at `k · vertices + v`), the mesh's default weights and the target names.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MorphTargets {
    vertices: usize,
    names: Vec<String>,
    default_weights: Vec<f32>,
    position_deltas: Vec<Vec3>,
    normal_deltas: Vec<Vec3>,
}

impl MorphTargets {
    /// Checks and packs `targets` for a mesh of `vertices` vertices (`has_normals`: whether
    /// the mesh has bind normals), with `default_weights` (empty: all 0).
    ///
    /// # Errors
    /// [`BakeError::MorphTarget`] naming the target for deltas whose count is not the mesh's
    /// vertex count, NaN or infinite deltas or default weights, normal deltas on a mesh
    /// without normals, a default weight count that is not the target count, or more targets
    /// than [`max_morph_targets`].
    pub(crate) fn bake(
        asset: &str,
        vertices: usize,
        has_normals: bool,
        targets: &[RawMorphTarget],
        default_weights: &[f32],
        hasher: &mut ContentHasher,
    ) -> Result<Self, BakeError> {
        let err = |target: usize, reason: String| BakeError::MorphTarget {
            asset: asset.to_string(),
            target,
            reason,
        };
        let limit = max_morph_targets(vertices);
        if targets.len() > limit {
            return Err(err(
                limit,
                format!(
                    "{} targets of {vertices} vertices: the GPU path holds at most {limit} ({} MiB of deltas)",
                    targets.len(),
                    MAX_MORPH_DELTA_BYTES >> 20
                ),
            ));
        }
        if !default_weights.is_empty() && default_weights.len() != targets.len() {
            return Err(err(
                default_weights.len().min(targets.len()),
                format!(
                    "{} default weights for {} targets",
                    default_weights.len(),
                    targets.len()
                ),
            ));
        }
        if let Some(k) = default_weights.iter().position(|w| !w.is_finite()) {
            return Err(err(k, "default weight is NaN or infinite".into()));
        }
        let any_normals = targets.iter().any(|t| !t.normals.is_empty());
        let mut position_deltas = Vec::with_capacity(vertices * targets.len());
        let mut normal_deltas = Vec::new();
        for (k, t) in targets.iter().enumerate() {
            if t.positions.len() != vertices {
                return Err(err(
                    k,
                    format!(
                        "{} position deltas, the mesh has {vertices} vertices",
                        t.positions.len()
                    ),
                ));
            }
            if !t.normals.is_empty() && t.normals.len() != vertices {
                return Err(err(
                    k,
                    format!(
                        "{} normal deltas, the mesh has {vertices} vertices",
                        t.normals.len()
                    ),
                ));
            }
            if !t.normals.is_empty() && !has_normals {
                return Err(err(k, "normal deltas on a mesh without normals".into()));
            }
            if let Some(v) = t.positions.iter().position(|d| !d.is_finite()) {
                return Err(err(
                    k,
                    format!("position delta of vertex {v} is NaN or infinite"),
                ));
            }
            if let Some(v) = t.normals.iter().position(|d| !d.is_finite()) {
                return Err(err(
                    k,
                    format!("normal delta of vertex {v} is NaN or infinite"),
                ));
            }
            hasher.str(&t.name);
            for d in &t.positions {
                hasher.vec3(*d);
            }
            position_deltas.extend_from_slice(&t.positions);
            if any_normals {
                if t.normals.is_empty() {
                    normal_deltas.extend(std::iter::repeat_n(Vec3::ZERO, vertices));
                } else {
                    for d in &t.normals {
                        hasher.vec3(*d);
                    }
                    normal_deltas.extend_from_slice(&t.normals);
                }
            }
        }
        let default_weights = if default_weights.is_empty() {
            vec![0.0; targets.len()]
        } else {
            default_weights.to_vec()
        };
        for w in &default_weights {
            hasher.f32(*w);
        }
        Ok(Self {
            vertices,
            names: targets.iter().map(|t| t.name.clone()).collect(),
            default_weights,
            position_deltas,
            normal_deltas,
        })
    }

    /// Number of targets.
    pub fn len(&self) -> usize {
        self.names.len()
    }
    /// Whether the mesh has no target.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
    /// Target names (empty strings where the source had none).
    pub fn names(&self) -> &[String] {
        &self.names
    }
    /// The mesh's default weights, one per target (glTF `mesh.weights`, else 0).
    pub fn default_weights(&self) -> &[f32] {
        &self.default_weights
    }
    /// Position deltas, target-major: target `k`, vertex `v` at `k · vertices + v`.
    pub fn position_deltas(&self) -> &[Vec3] {
        &self.position_deltas
    }
    /// Normal deltas in the same layout; empty when no target moves normals.
    pub fn normal_deltas(&self) -> &[Vec3] {
        &self.normal_deltas
    }
    /// Target `k`'s position deltas (empty for a target out of range).
    pub fn target_positions(&self, k: usize) -> &[Vec3] {
        self.position_deltas
            .get(k * self.vertices..(k + 1) * self.vertices)
            .unwrap_or(&[])
    }

    /// Target `k`'s normal deltas (empty when no target moves normals or `k` is out of range).
    pub fn target_normals(&self, k: usize) -> &[Vec3] {
        self.normal_deltas
            .get(k * self.vertices..(k + 1) * self.vertices)
            .unwrap_or(&[])
    }

    /// Vertex `v`'s bind position and normal moved by the active targets:
    /// `p_bind + Σ mₖ · Δpₖ` (and likewise for the normal, not renormalised). Entries naming
    /// a target out of range add nothing.
    pub fn apply(&self, v: usize, active: &[ActiveMorph], p: Vec3, n: Vec3) -> (Vec3, Vec3) {
        let (mut p, mut n) = (p, n);
        for a in active {
            let i = a.target as usize * self.vertices + v;
            if let Some(d) = self.position_deltas.get(i) {
                p += *d * a.weight;
            }
            if let Some(d) = self.normal_deltas.get(i) {
                n += *d * a.weight;
            }
        }
        (p, n)
    }
}
