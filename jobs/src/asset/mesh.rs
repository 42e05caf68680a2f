use super::BakeError;
use super::hash::{BoneHash, ContentHash, ContentHasher, bone_hash};
use super::morph::{ActiveMorph, MorphTargets, RawMorphTarget};
use crate::math::dual_quat::{DualQuatBlend, decompose};
use glam::{Affine3A, Mat4, Vec3};

/// Influences per vertex that the baked mesh can carry (two sets of four).
pub const MAX_INFLUENCES: usize = 8;

/// A mesh bone: which rig bone drives it (by name hash) and its inverse bind matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct SkinnedMeshBone {
    /// The bone's name.
    pub name: String,
    /// Its name hash (the key for rig matching).
    pub hash: BoneHash,
    /// Model space to bone space at bind time.
    pub inverse_bind: Mat4,
}

/// How a mesh blends its vertices' bone matrices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SkinningMethod {
    /// Linear blend skinning: `p' = (Σ wᵢ Mᵢ) · p`. Cheap and exact for one influence; a
    /// joint twisted far from its neighbour loses volume (a 180° twist collapses the
    /// cross-section halfway).
    #[default]
    Linear,
    /// Dual-quaternion skinning with scale ([`crate::math::dual_quat`]): scale and shear
    /// blended linearly and applied first, the rigid parts blended as dual quaternions. Keeps
    /// volume under twist. Lost relative to [`SkinningMethod::Linear`]: it costs a
    /// decomposition per influence, and the blend is no longer linear in the matrices, so
    /// non-rigid parts (scale, shear) of two bones that also rotate differently are blended
    /// in bone space and can bulge near the joint; a
    /// palette entry that is not rotation × scale/shear (a projective or degenerate matrix)
    /// has no rigid part to take, and its zero-length axes are filled in arbitrarily.
    DualQuaternion,
}

/// One vertex's influences: `(mesh bone index, weight)` pairs, at most [`MAX_INFLUENCES`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawVertexInfluences(pub Vec<(u16, f32)>);

/// An editable skinned mesh.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawSkinnedMesh {
    /// Name for messages.
    pub name: String,
    /// Mesh bones: name and inverse bind matrix. Vertex joint indices index this list.
    pub bones: Vec<(String, Mat4)>,
    /// Bind-pose positions.
    pub positions: Vec<Vec3>,
    /// Bind-pose normals (empty, or one per position).
    pub normals: Vec<Vec3>,
    /// Per-vertex influences (one entry per position).
    pub influences: Vec<RawVertexInfluences>,
    /// Triangle list indices.
    pub indices: Vec<u32>,
    /// Morph targets (empty for none).
    pub morph_targets: Vec<RawMorphTarget>,
    /// Default morph weights, one per target (empty: all 0).
    pub morph_weights: Vec<f32>,
    /// How vertices blend their bones.
    pub skinning: SkinningMethod,
}

/// A baked skinned mesh. Influences are stored GPU-ready: four `u32` joints and four weights per
/// vertex in the first set, and a second set when any vertex has more than four.
#[derive(Debug)]
pub struct SkinnedMesh {
    name: String,
    bones: Vec<SkinnedMeshBone>,
    inverse_binds: Vec<Affine3A>,
    positions: Vec<Vec3>,
    normals: Vec<Vec3>,
    joints: Vec<[u32; 4]>,
    weights: Vec<[f32; 4]>,
    joints_extra: Vec<[u32; 4]>,
    weights_extra: Vec<[f32; 4]>,
    indices: Vec<u32>,
    morph: MorphTargets,
    skinning: SkinningMethod,
    renormalized_vertices: usize,
    content_hash: ContentHash,
}

impl RawSkinnedMesh {
    /// Validates and packs the mesh. Weights are sorted by size, their sum renormalised to 1
    /// (the number of vertices whose sum was off by more than 1e-3 is kept in
    /// [`SkinnedMesh::renormalized_vertices`]).
    ///
    /// # Errors
    /// [`BakeError`] for no bones, arrays of different lengths, joint or triangle indices out of
    /// range, more than [`MAX_INFLUENCES`] influences, NaN, infinite or negative weights, a
    /// vertex whose weights sum to zero, or non-finite positions, normals or matrices;
    /// [`BakeError::MorphTarget`] for an unusable morph target (see [`MorphTargets`]).
    pub fn bake(&self) -> Result<SkinnedMesh, BakeError> {
        let asset = format!("mesh '{}'", self.name);
        if self.bones.is_empty() {
            return Err(BakeError::Empty {
                asset,
                what: "the bone list",
            });
        }
        let nv = self.positions.len();
        if self.influences.len() != nv {
            return Err(BakeError::LengthMismatch {
                asset,
                location: "influences".into(),
                expected: nv,
                actual: self.influences.len(),
            });
        }
        if !self.normals.is_empty() && self.normals.len() != nv {
            return Err(BakeError::LengthMismatch {
                asset,
                location: "normals".into(),
                expected: nv,
                actual: self.normals.len(),
            });
        }
        let mut hasher = ContentHasher::new();
        hasher
            .str("mesh")
            .str(&self.name)
            .u64(self.bones.len() as u64);
        let mut bones = Vec::with_capacity(self.bones.len());
        let mut seen = hashbrown::HashSet::new();
        for (name, m) in &self.bones {
            if !m.is_finite() {
                return Err(BakeError::NotFinite {
                    asset,
                    location: format!("inverse bind matrix of bone '{name}'"),
                });
            }
            if !seen.insert(name.as_str()) {
                return Err(BakeError::DuplicateBoneName {
                    asset,
                    name: name.clone(),
                });
            }
            hasher.str(name).mat4(m);
            bones.push(SkinnedMeshBone {
                name: name.clone(),
                hash: bone_hash(name),
                inverse_bind: *m,
            });
        }
        if let Some(i) = self.positions.iter().position(|p| !p.is_finite()) {
            return Err(BakeError::NotFinite {
                asset,
                location: format!("position of vertex {i}"),
            });
        }
        if let Some(i) = self.normals.iter().position(|p| !p.is_finite()) {
            return Err(BakeError::NotFinite {
                asset,
                location: format!("normal of vertex {i}"),
            });
        }
        let extra = self.influences.iter().any(|inf| inf.0.len() > 4);
        let mut joints = Vec::with_capacity(nv);
        let mut weights = Vec::with_capacity(nv);
        let mut joints_extra = Vec::new();
        let mut weights_extra = Vec::new();
        let mut renormalized = 0;
        for (v, inf) in self.influences.iter().enumerate() {
            if inf.0.len() > MAX_INFLUENCES {
                return Err(BakeError::Invalid {
                    asset,
                    reason: format!(
                        "vertex {v} has {} influences (at most {MAX_INFLUENCES})",
                        inf.0.len()
                    ),
                });
            }
            let mut list: Vec<(u16, f32)> = Vec::with_capacity(MAX_INFLUENCES);
            for &(j, w) in &inf.0 {
                if usize::from(j) >= self.bones.len() {
                    return Err(BakeError::IndexOutOfRange {
                        asset,
                        location: format!("joint of vertex {v}"),
                        index: usize::from(j),
                        len: self.bones.len(),
                    });
                }
                if !w.is_finite() || w < 0.0 {
                    return Err(BakeError::NotFinite {
                        asset,
                        location: format!("weight of vertex {v} (must be finite and >= 0)"),
                    });
                }
                if w > 0.0 {
                    list.push((j, w));
                }
            }
            let sum: f32 = list.iter().map(|x| x.1).sum();
            if sum.is_nan() || sum <= 0.0 {
                return Err(BakeError::Invalid {
                    asset,
                    reason: format!("vertex {v} has no positive weight"),
                });
            }
            if (sum - 1.0).abs() > 1e-3 {
                renormalized += 1;
            }
            list.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            let mut j4 = [0u32; 8];
            let mut w4 = [0f32; 8];
            for (k, (j, w)) in list.iter().enumerate() {
                j4[k] = u32::from(*j);
                w4[k] = *w / sum;
            }
            for k in 0..8 {
                hasher.u64(u64::from(j4[k])).f32(w4[k]);
            }
            joints.push([j4[0], j4[1], j4[2], j4[3]]);
            weights.push([w4[0], w4[1], w4[2], w4[3]]);
            if extra {
                joints_extra.push([j4[4], j4[5], j4[6], j4[7]]);
                weights_extra.push([w4[4], w4[5], w4[6], w4[7]]);
            }
        }
        if !self.indices.len().is_multiple_of(3) {
            return Err(BakeError::Invalid {
                asset,
                reason: format!(
                    "{} indices is not a whole number of triangles",
                    self.indices.len()
                ),
            });
        }
        if let Some(&i) = self.indices.iter().find(|&&i| i as usize >= nv) {
            return Err(BakeError::IndexOutOfRange {
                asset,
                location: "triangle indices".into(),
                index: i as usize,
                len: nv,
            });
        }
        for p in &self.positions {
            hasher.vec3(*p);
        }
        for p in &self.normals {
            hasher.vec3(*p);
        }
        for &i in &self.indices {
            hasher.u64(u64::from(i));
        }
        hasher.str(match self.skinning {
            SkinningMethod::Linear => "linear",
            SkinningMethod::DualQuaternion => "dual quaternion",
        });
        let morph = MorphTargets::bake(
            &asset,
            nv,
            !self.normals.is_empty(),
            &self.morph_targets,
            &self.morph_weights,
            &mut hasher,
        )?;
        Ok(SkinnedMesh {
            name: self.name.clone(),
            inverse_binds: bones
                .iter()
                .map(|b| Affine3A::from_mat4(b.inverse_bind))
                .collect(),
            bones,
            positions: self.positions.clone(),
            normals: self.normals.clone(),
            joints,
            weights,
            joints_extra,
            weights_extra,
            indices: self.indices.clone(),
            morph,
            skinning: self.skinning,
            renormalized_vertices: renormalized,
            content_hash: hasher.finish(),
        })
    }
}

impl SkinnedMesh {
    /// Name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Mesh bones (the palette has one entry per mesh bone, in this order).
    pub fn bones(&self) -> &[SkinnedMeshBone] {
        &self.bones
    }
    /// Inverse bind matrices as affine transforms (the last row of a glTF inverse bind
    /// matrix is `0 0 0 1`), one per mesh bone.
    pub fn inverse_binds(&self) -> &[Affine3A] {
        &self.inverse_binds
    }
    /// Number of mesh bones (palette entries).
    pub fn bone_count(&self) -> usize {
        self.bones.len()
    }
    /// Bind-pose positions.
    pub fn positions(&self) -> &[Vec3] {
        &self.positions
    }
    /// Bind-pose normals (empty when the source had none).
    pub fn normals(&self) -> &[Vec3] {
        &self.normals
    }
    /// First four joints per vertex (mesh bone indices).
    pub fn joints(&self) -> &[[u32; 4]] {
        &self.joints
    }
    /// First four weights per vertex; with the second set they sum to 1.
    pub fn weights(&self) -> &[[f32; 4]] {
        &self.weights
    }
    /// Joints 5 to 8 per vertex; empty when every vertex has at most four influences.
    pub fn joints_extra(&self) -> &[[u32; 4]] {
        &self.joints_extra
    }
    /// Weights 5 to 8 per vertex; empty when every vertex has at most four influences.
    pub fn weights_extra(&self) -> &[[f32; 4]] {
        &self.weights_extra
    }
    /// Triangle list.
    pub fn indices(&self) -> &[u32] {
        &self.indices
    }
    /// Vertices whose weights did not sum to 1 (within 1e-3) and were renormalised.
    pub fn renormalized_vertices(&self) -> usize {
        self.renormalized_vertices
    }
    /// Content hash.
    pub fn content_hash(&self) -> ContentHash {
        self.content_hash
    }

    /// Morph targets (empty when the mesh has none).
    pub fn morph_targets(&self) -> &MorphTargets {
        &self.morph
    }
    /// How vertices blend their bones.
    pub fn skinning(&self) -> SkinningMethod {
        self.skinning
    }

    /// Reference skinning on the CPU in the bind shape (no morph target applied): see
    /// [`SkinnedMesh::skin_cpu_morphed`].
    pub fn skin_cpu(&self, palette: &[[f32; 12]]) -> (Vec<Vec3>, Vec<Vec3>) {
        self.skin_cpu_morphed(palette, &[])
    }

    /// Reference skinning on the CPU, the GPU paths' reference. Each vertex is first morphed,
    /// `p = p_bind + Σₖ mₖ · Δpₖ` over `active` (likewise its normal), then skinned by the
    /// mesh's [`SkinningMethod`]: linear, `p' = (Σ wᵢ · paletteᵢ) · p`, or dual quaternion.
    /// The palette holds float3x4 column-major entries, one per mesh bone. Returns positions
    /// and normals (normals transformed by the blended linear part and renormalised). A
    /// palette shorter than the mesh's bone count skins with identity for the missing
    /// entries; active entries naming a target out of range add nothing.
    pub fn skin_cpu_morphed(
        &self,
        palette: &[[f32; 12]],
        active: &[ActiveMorph],
    ) -> (Vec<Vec3>, Vec<Vec3>) {
        const IDENTITY: [f32; 12] = [1., 0., 0., 0., 1., 0., 0., 0., 1., 0., 0., 0.];
        let entries: Vec<[f32; 12]> = (0..self.bones.len())
            .map(|i| palette.get(i).copied().unwrap_or(IDENTITY))
            .collect();
        let dual_quats: Vec<_> = match self.skinning {
            SkinningMethod::Linear => Vec::new(),
            SkinningMethod::DualQuaternion => entries.iter().map(decompose).collect(),
        };
        let mut out_p = Vec::with_capacity(self.positions.len());
        let mut out_n = Vec::with_capacity(self.normals.len());
        for v in 0..self.positions.len() {
            let bind_n = self.normals.get(v).copied().unwrap_or(Vec3::ZERO);
            let (p, n) = self.morph.apply(v, active, self.positions[v], bind_n);
            let sets = [
                (self.joints.get(v), self.weights.get(v)),
                (self.joints_extra.get(v), self.weights_extra.get(v)),
            ];
            let influences = sets
                .into_iter()
                .filter_map(|(j, w)| Some((j?, w?)))
                .flat_map(|(j, w)| j.iter().zip(w.iter()))
                .filter(|(_, w)| **w != 0.0);
            let (sp, sn) = match self.skinning {
                SkinningMethod::Linear => {
                    let mut m = [0.0f32; 12];
                    for (j, w) in influences {
                        let a = entries.get(*j as usize).unwrap_or(&IDENTITY);
                        for e in 0..12 {
                            m[e] += a[e] * w;
                        }
                    }
                    let blended = Affine3A::from_cols_array(&m);
                    (blended.transform_point3(p), blended.transform_vector3(n))
                }
                SkinningMethod::DualQuaternion => {
                    let mut blend = DualQuatBlend::default();
                    for (j, w) in influences {
                        if let Some(b) = dual_quats.get(*j as usize) {
                            blend.add(b, *w);
                        }
                    }
                    (blend.transform_point(p), blend.transform_vector(n))
                }
            };
            out_p.push(sp);
            if v < self.normals.len() {
                out_n.push(sn.normalize_or_zero());
            }
        }
        (out_p, out_n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw() -> RawSkinnedMesh {
        RawSkinnedMesh {
            name: "m".into(),
            bones: vec![
                ("a".into(), Mat4::IDENTITY),
                ("b".into(), Mat4::from_translation(Vec3::NEG_Y)),
            ],
            positions: vec![Vec3::ZERO, Vec3::Y],
            normals: vec![],
            influences: vec![
                RawVertexInfluences(vec![(0, 1.0)]),
                RawVertexInfluences(vec![(0, 0.2), (1, 0.6)]),
            ],
            indices: vec![],
            ..Default::default()
        }
    }

    #[test]
    fn bake_sorts_and_renormalises_weights() {
        let m = raw().bake().unwrap();
        assert_eq!(m.renormalized_vertices(), 1);
        assert_eq!(m.joints()[1], [1, 0, 0, 0]);
        assert!((m.weights()[1][0] - 0.75).abs() < 1e-6 && (m.weights()[1][1] - 0.25).abs() < 1e-6);
    }

    #[test]
    fn skin_cpu_blends_matrices() {
        let m = raw().bake().unwrap();
        // Bone 1 translated by +2 in x; bone 0 identity. Vertex 1: 0.75 * (1 -> +2x) + 0.25 * identity.
        let id = [1., 0., 0., 0., 1., 0., 0., 0., 1., 0., 0., 0.];
        let moved = [1., 0., 0., 0., 1., 0., 0., 0., 1., 2., 0., 0.];
        let (p, _) = m.skin_cpu(&[id, moved]);
        assert_eq!(p[0], Vec3::ZERO);
        assert!((p[1] - Vec3::new(1.5, 1.0, 0.0)).length() < 1e-6);
    }

    #[test]
    fn bake_rejects_bad_meshes() {
        let mut r = raw();
        r.influences[0].0[0].0 = 9;
        assert!(matches!(r.bake(), Err(BakeError::IndexOutOfRange { .. })));
        let mut r = raw();
        r.influences[0].0[0].1 = f32::NAN;
        assert!(matches!(r.bake(), Err(BakeError::NotFinite { .. })));
        let mut r = raw();
        r.indices = vec![0, 1, 5];
        assert!(matches!(r.bake(), Err(BakeError::IndexOutOfRange { .. })));
        let mut r = raw();
        r.influences.pop();
        assert!(matches!(r.bake(), Err(BakeError::LengthMismatch { .. })));
        let mut r = raw();
        r.influences[0].0[0].1 = 0.0;
        assert!(matches!(r.bake(), Err(BakeError::Invalid { .. })));
    }
}
