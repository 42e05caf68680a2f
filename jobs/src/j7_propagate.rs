//! Job 7, TRS propagation: local poses to model-space (entity-space) matrices in one forward
//! pass over each rig's parent-first bones, and the world transforms of exposed bone entities
//! so that attachments follow.

use crate::asset::Transform;
use crate::component::{FrameSlot, RigRef};
use crate::error::{JobError, check_len};
use crate::math::soa::{
    LANES, LaneAffine, SoaTransform, mul_lanes_by, soa_local_matrices, soa_local_rows,
    trs_to_affine4,
};
use crate::math::{mul_affine, mul_affine_by};
use glam::Affine3A;
use sinew_runtime::store::Entity;
use wide::f32x8;

/// Model matrices over one run of entities. `local` and `model` are the run's pieces of the
/// flat buffers, starting at flat bone `base`.
#[derive(Debug)]
pub struct PropagateJob<'a> {
    /// Entity handles (for errors).
    pub entities: &'a [Entity],
    /// Rigs.
    pub rigs: &'a [RigRef],
    /// Frame slots (job 3).
    pub slots: &'a [FrameSlot],
    /// Local poses of the run.
    pub local: &'a [Transform],
    /// Output model matrices of the run.
    pub model: &'a mut [Affine3A],
    /// Flat index of `local[0]` and `model[0]`.
    pub base: u32,
}

impl PropagateJob<'_> {
    /// Checks lengths and that every entity's bones lie inside the run's pieces.
    ///
    /// # Errors
    /// [`JobError::LengthMismatch`].
    pub fn validate(&self) -> Result<(), JobError> {
        let n = self.entities.len();
        check_len("propagation", "rigs", n, self.rigs.len())?;
        check_len("propagation", "slots", n, self.slots.len())?;
        check_len("propagation", "model", self.local.len(), self.model.len())?;
        for (s, r) in self.slots.iter().zip(self.rigs) {
            check_len(
                "propagation",
                "slot bone count",
                r.0.bone_count(),
                s.bone_count as usize,
            )?;
            let end = (s.bone_offset + s.bone_count) as usize;
            if (s.bone_offset as usize) < self.base as usize
                || end - self.base as usize > self.local.len()
            {
                return Err(JobError::LengthMismatch {
                    job: "propagation",
                    buffer: "local",
                    expected: end,
                    actual: self.base as usize + self.local.len(),
                });
            }
        }
        Ok(())
    }

    /// `model[i] = model[parent(i)] · local[i]`, roots relative to the entity.
    pub fn run(&mut self) {
        for (s, r) in self.slots.iter().zip(self.rigs) {
            let start = (s.bone_offset - self.base) as usize;
            let end = start + s.bone_count as usize;
            let (Some(local), Some(model)) =
                (self.local.get(start..end), self.model.get_mut(start..end))
            else {
                continue;
            };
            propagate_one(r.0.parent_indices(), local, model);
        }
    }
}

/// One rig: `model[i] = model[parents[i]] · TRS(local[i])`; `parents[i] < i` or a root.
/// Local matrices are built four bones at a time (`trs_to_affine4`, identical to
/// [`Transform::to_affine`]).
#[inline]
pub fn propagate_one(parents: &[u32], local: &[Transform], model: &mut [Affine3A]) {
    let n = local.len().min(model.len()).min(parents.len());
    let (local, parents) = (&local[..n], &parents[..n]);
    for (c, (chunk, parents)) in local.chunks(4).zip(parents.chunks(4)).enumerate() {
        let locals = trs_to_affine4(chunk);
        for (j, (m, &p)) in locals.iter().zip(parents).enumerate() {
            let i = 4 * c + j;
            let p = p as usize;
            let out = if p < i {
                model.get(p).map_or(*m, |parent| mul_affine(parent, m))
            } else {
                *m
            };
            if let Some(o) = model.get_mut(i) {
                *o = out;
            }
        }
    }
}

/// [`propagate_one`] from structure-of-arrays local poses (block `b` holds bones `8b ..
/// 8b + 8`, as [`sample_blend_entity_soa`] writes them): each block's local matrices are
/// computed eight at a time and left as rows ([`soa_local_rows`]), and each bone's product
/// with its parent broadcasts its twelve elements straight from those rows
/// ([`mul_affine_by`]), so no matrix is transposed. The results are identical to
/// [`propagate_one`]'s.
///
/// [`sample_blend_entity_soa`]: crate::j4_sample_blend::sample_blend_entity_soa
#[inline]
pub(crate) fn propagate_soa(parents: &[u32], local: &[SoaTransform], model: &mut [Affine3A]) {
    let n = model.len().min(parents.len()).min(local.len() * LANES);
    let (model, parents) = (&mut model[..n], &parents[..n]);
    for (b, (block, parents)) in local.iter().zip(parents.chunks(LANES)).enumerate() {
        let rows = soa_local_rows(block);
        for (j, &p) in parents.iter().enumerate() {
            let i = LANES * b + j;
            let element = |k: usize| rows[k][j];
            let parent = (p as usize) < i;
            let out = match model.get(p as usize) {
                Some(parent_model) if parent => mul_affine_by(parent_model, element),
                _ => Affine3A::from_cols_array(&std::array::from_fn(element)),
            };
            if let Some(o) = model.get_mut(i) {
                *o = out;
            }
        }
    }
}

/// [`propagate_soa`] for up to [`LANES`] entities of one rig at once, entity `e` in lane `e`
/// (`locals[e]` its structure-of-arrays local pose; lanes past `locals.len()` compute zeros):
/// each block's ten pose components are turned from one lane per bone into one lane per
/// entity (an 8 × 8 transpose each), and each bone's local matrix and product with its parent
/// are then computed once for the whole group ([`soa_local_matrices`], [`mul_lanes_by`])
/// instead of once per entity. Each lane's matrices are bit for bit [`propagate_soa`]'s for
/// that entity: the same operations on the same values.
#[inline]
pub(crate) fn propagate_lanes(
    parents: &[u32],
    locals: &[&[SoaTransform]],
    model: &mut [LaneAffine],
) {
    let blocks = locals.iter().map(|l| l.len()).min().unwrap_or(0);
    let n = model.len().min(parents.len()).min(blocks * LANES);
    let (model, parents) = (&mut model[..n], &parents[..n]);
    for (b, parents) in parents.chunks(LANES).enumerate() {
        // The entities' blocks, then each of their ten components turned from one lane per
        // bone into one lane per entity: `by_bone[c][j]` is component c of bone j.
        let block: [&SoaTransform; LANES] =
            std::array::from_fn(|e| locals.get(e).and_then(|l| l.get(b)).unwrap_or(&PADDING));
        let lanes = |c: fn(&SoaTransform) -> f32x8| f32x8::transpose(block.map(c));
        let by_bone = [
            lanes(|t| t.translation[0]),
            lanes(|t| t.translation[1]),
            lanes(|t| t.translation[2]),
            lanes(|t| t.rotation[0]),
            lanes(|t| t.rotation[1]),
            lanes(|t| t.rotation[2]),
            lanes(|t| t.rotation[3]),
            lanes(|t| t.scale[0]),
            lanes(|t| t.scale[1]),
            lanes(|t| t.scale[2]),
        ];
        for (j, &p) in parents.iter().enumerate() {
            let i = LANES * b + j;
            let c = |c: usize| by_bone[c][j];
            let pose = SoaTransform {
                translation: [c(0), c(1), c(2)],
                rotation: [c(3), c(4), c(5), c(6)],
                scale: [c(7), c(8), c(9)],
            };
            let local = soa_local_matrices(&pose);
            let out = match model.get(p as usize) {
                Some(parent) if (p as usize) < i => mul_lanes_by(parent, |k| local[k]),
                _ => local,
            };
            if let Some(o) = model.get_mut(i) {
                *o = out;
            }
        }
    }
}

/// The zero block that stands for the lanes of a group past its last entity.
static PADDING: SoaTransform = SoaTransform {
    translation: [f32x8::ZERO; 3],
    rotation: [f32x8::ZERO; 4],
    scale: [f32x8::ZERO; 3],
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ik::test_rig::Rng;
    use glam::Vec3;

    /// `count` entities' structure-of-arrays poses of `bones` bones: rotations of any angle,
    /// uneven scales, translations up to 2.
    fn poses(rng: &mut Rng, count: usize, bones: usize) -> Vec<Vec<SoaTransform>> {
        (0..count)
            .map(|_| {
                let pose: Vec<Transform> = (0..bones)
                    .map(|_| {
                        let v = |rng: &mut Rng, lo, hi| {
                            Vec3::new(rng.range(lo, hi), rng.range(lo, hi), rng.range(lo, hi))
                        };
                        Transform::new(v(rng, -2.0, 2.0), rng.rotation(3.1), v(rng, 0.5, 1.5))
                    })
                    .collect();
                pose.chunks(LANES)
                    .map(SoaTransform::from_transforms)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn lane_groups_give_each_entity_its_own_matrices_bit_for_bit() {
        let mut rng = Rng::new(7);
        // 45 bones (a last block of 5): two roots, parents anywhere before, and two bones
        // whose parent index is not before them (taken as roots, as propagate_soa does).
        let mut parents: Vec<u32> = (0..45u32)
            .map(|i| {
                if i == 0 {
                    u32::MAX
                } else {
                    (rng.range(0.0, 1.0) * i as f32) as u32
                }
            })
            .collect();
        (parents[20], parents[30], parents[31]) = (u32::MAX, 33, 31);
        let bits = |m: &[Affine3A]| -> Vec<u32> {
            m.iter()
                .flat_map(|a| a.to_cols_array())
                .map(f32::to_bits)
                .collect()
        };
        for count in 1..=LANES {
            let locals = poses(&mut rng, count, parents.len());
            let refs: Vec<&[SoaTransform]> = locals.iter().map(Vec::as_slice).collect();
            let mut lanes = vec![[f32x8::ZERO; 12]; parents.len()];
            propagate_lanes(&parents, &refs, &mut lanes);
            for (e, local) in locals.iter().enumerate() {
                let mut want = vec![Affine3A::IDENTITY; parents.len()];
                propagate_soa(&parents, local, &mut want);
                let got: Vec<Affine3A> = (lanes.iter())
                    .map(|m| Affine3A::from_cols_array(&m.map(|v| v.to_array()[e])))
                    .collect();
                assert_eq!(bits(&got), bits(&want), "entity {e} of {count}");
            }
        }
    }
}
