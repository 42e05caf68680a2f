//! Job 1, bone offsets: counts each animated entity's bones, palette entries and key spans,
//! and validates its bindings (clips and masks baked for its rig, weights, layers).

use crate::component::{Animations, BlendMode, MAX_LAYERS, RigRef, SkinRef};
use crate::error::{JobError, check_len};
use crate::frame::EntityCounts;
use sinew_runtime::store::Entity;

/// Counts per entity, over one run of entities (a store chunk).
///
/// Inputs: `entities`, `rigs`, `animations` and optional `skins`, all of one length `n`.
/// Output: `counts[i]` = bones of `rigs[i]`, mesh bones of `skins[i]` (0 without), and the
/// sum of timeline counts of the clips in `animations[i]`.
#[derive(Debug)]
pub struct BoneOffsetsJob<'a> {
    /// Entity handles (for error messages).
    pub entities: &'a [Entity],
    /// Rig per entity.
    pub rigs: &'a [RigRef],
    /// Skinned mesh per entity, when the run has them.
    pub skins: Option<&'a [SkinRef]>,
    /// Animations per entity.
    pub animations: &'a [Animations],
    /// Output, one per entity.
    pub counts: &'a mut [EntityCounts],
}

impl BoneOffsetsJob<'_> {
    const NAME: &'static str = "bone offsets";

    /// Checks lengths and every entity's animation bindings.
    ///
    /// # Errors
    /// [`JobError::LengthMismatch`] for buffers of different lengths;
    /// [`JobError::BoneOutOfRange`] for a skin's root bone outside the rig;
    /// [`JobError::ClipRigMismatch`] / [`JobError::MaskRigMismatch`] for assets baked for
    /// another rig; [`JobError::BadAnimation`] for non-finite time, speed or weight or a
    /// negative weight; [`JobError::BadLayer`] for a layer out of range, a layer that mixes
    /// override and additive, or an additive clip without a reference pose.
    pub fn validate(&self) -> Result<(), JobError> {
        self.validate_lengths()?;
        for i in 0..self.entities.len() {
            validate_animations(self.entities[i], &self.rigs[i], &self.animations[i])?;
            validate_skin(
                self.entities[i],
                &self.rigs[i],
                self.skins.and_then(|s| s.get(i)),
            )?;
        }
        Ok(())
    }

    /// The length checks of [`Self::validate`] alone, for a frame whose clock node has
    /// checked the bindings already.
    pub(crate) fn validate_lengths(&self) -> Result<(), JobError> {
        let n = self.entities.len();
        check_len(Self::NAME, "rigs", n, self.rigs.len())?;
        check_len(Self::NAME, "animations", n, self.animations.len())?;
        check_len(Self::NAME, "counts", n, self.counts.len())?;
        if let Some(s) = self.skins {
            check_len(Self::NAME, "skins", n, s.len())?;
        }
        Ok(())
    }

    /// Writes the counts. Call [`Self::validate`] first.
    pub fn run(&mut self) {
        for i in 0..self.counts.len() {
            let bones = self.rigs.get(i).map_or(0, |r| r.0.bone_count() as u32);
            let palette = self
                .skins
                .and_then(|s| s.get(i))
                .map_or(0, |s| s.mesh.bone_count() as u32);
            let spans = self.animations.get(i).map_or(0, |a| {
                a.as_slice()
                    .iter()
                    .map(|x| x.clip.timelines().len() as u32)
                    .sum()
            });
            self.counts[i] = EntityCounts {
                bones,
                palette,
                spans,
            };
        }
    }
}

/// Validates one entity's skin root bone against its rig (here rather than only in job 9, so
/// that a frame fails on it before the clocks or root motion move anything).
pub(crate) fn validate_skin(
    entity: Entity,
    rig: &RigRef,
    skin: Option<&SkinRef>,
) -> Result<(), JobError> {
    let bone_count = rig.0.bone_count();
    match skin.and_then(|s| s.root_bone) {
        Some(rb) if rb.get() >= bone_count => Err(JobError::BoneOutOfRange {
            job: BoneOffsetsJob::NAME,
            entity: Some(entity),
            bone: rb.get(),
            bone_count,
        }),
        _ => Ok(()),
    }
}

/// Validates one entity's animations against its rig.
pub(crate) fn validate_animations(
    entity: Entity,
    rig: &RigRef,
    animations: &Animations,
) -> Result<(), JobError> {
    let rig_hash = rig.0.content_hash();
    let mut layer_mode: [Option<BlendMode>; MAX_LAYERS] = [None; MAX_LAYERS];
    for (k, a) in animations.as_slice().iter().enumerate() {
        if a.clip.rig_hash() != rig_hash {
            return Err(JobError::ClipRigMismatch {
                entity,
                clip: a.clip.name().to_string(),
                clip_rig: a.clip.rig_name().to_string(),
                entity_rig: rig.0.name().to_string(),
            });
        }
        if let Some(m) = &a.mask
            && m.rig_hash() != rig_hash
        {
            return Err(JobError::MaskRigMismatch {
                entity,
                mask: m.name().to_string(),
            });
        }
        if !a.weight.is_finite() || a.weight < 0.0 {
            return Err(JobError::BadAnimation {
                entity,
                animation: k,
                reason: format!("weight {} must be finite and >= 0", a.weight),
            });
        }
        if !a.time.is_finite() || !a.previous_time.is_finite() || !a.speed.is_finite() {
            return Err(JobError::BadAnimation {
                entity,
                animation: k,
                reason: "time, previous time and speed must be finite".into(),
            });
        }
        let layer = usize::from(a.layer);
        let Some(slot) = layer_mode.get_mut(layer) else {
            return Err(JobError::BadLayer {
                entity,
                layer,
                reason: format!("at most {MAX_LAYERS} layers"),
            });
        };
        match slot {
            Some(mode) if *mode != a.blend => {
                return Err(JobError::BadLayer {
                    entity,
                    layer,
                    reason: "mixes override and additive animations".into(),
                });
            }
            _ => *slot = Some(a.blend),
        }
        if a.blend == BlendMode::Additive && a.clip.additive_reference().is_none() {
            return Err(JobError::BadLayer {
                entity,
                layer,
                reason: format!(
                    "clip '{}' plays additive but was baked without an additive reference",
                    a.clip.name()
                ),
            });
        }
    }
    Ok(())
}
