//! Job 7, TRS propagation: local poses to model-space (entity-space) matrices in one forward
//! pass over each rig's parent-first bones, and the world transforms of exposed bone entities
//! so that attachments follow.

use crate::asset::Transform;
use crate::component::{FrameSlot, RigRef};
use crate::error::{JobError, check_len};
use crate::math::soa::{LANES, SoaTransform, soa_local_rows, trs_to_affine4};
use crate::math::{mul_affine, mul_affine_by};
use glam::Affine3A;
use sinew_runtime::store::Entity;

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
