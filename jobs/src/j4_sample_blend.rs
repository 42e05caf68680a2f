//! Job 4, sampling and blending: every bone of every entity, data-parallel in batches of
//! [`SAMPLING_BATCH`] bones.
//!
//! Two phases. [`resolve_spans`] runs once per entity: for each playing animation it wraps
//! the time into the clip and locates the keys around it on each of the clip's timelines,
//! starting from the entity's [`SamplingCursors`] (forward playback moves a key or two instead
//! of searching). [`SampleBlendJob`] then evaluates each bone's channels at those spans and
//! blends the layers (see [`crate::math::PoseAccumulator`] for the rules): override layers
//! average their animations and blend over what is below by the layer weight, additive layers
//! add their clip's difference from its reference pose, masks scale an animation per bone, and
//! where the total weight stays below 1 the rest pose fills the remainder. Rotations come out
//! as unit quaternions.

use crate::asset::{KeySpan, Rig, Transform};
#[cfg(doc)]
use crate::component::SAMPLING_BATCH;
use crate::component::{AnimationToProcess, BlendMode, MAX_LAYERS, SamplingCursors};
use crate::error::{JobError, check_len};
use crate::frame::BoneSlot;
use crate::math::{LayerSum, PoseAccumulator, additive_apply};
use rayon::prelude::*;

/// What the per-bone phase needs of one entity.
#[derive(Clone, Copy, Debug)]
pub struct EntitySampling<'a> {
    /// The entity's rig.
    pub rig: &'a Rig,
    /// Its animations, sorted by layer.
    pub animations: &'a [AnimationToProcess],
    /// Its layer weights.
    pub layer_weights: [f32; MAX_LAYERS],
    /// First span of the entity in the frame's span buffer.
    pub span_offset: u32,
}

impl EntitySampling<'_> {
    /// Whether every animation is an unmasked override on one layer (the fast path).
    #[inline]
    pub fn single_override_layer(&self) -> bool {
        let Some(first) = self.animations.first() else {
            return false;
        };
        self.animations
            .iter()
            .all(|a| a.layer == first.layer && a.blend == BlendMode::Override && a.mask.is_none())
    }
}

/// Phase one, per entity: wraps each animation's time and locates its keys on every timeline
/// of its clip, writing `Σ timelines` spans (animation order, then timeline order) and
/// updating the cursors.
pub fn resolve_spans(
    animations: &[AnimationToProcess],
    cursors: &mut SamplingCursors,
    spans: &mut [KeySpan],
) {
    let needed: usize = animations.iter().map(|a| a.clip.timelines().len()).sum();
    if cursors.0.len() != needed {
        cursors.0.clear();
        cursors.0.resize(needed, 0);
    }
    let mut k = 0;
    for a in animations {
        let t = a.clip_time();
        for tl in a.clip.timelines() {
            if let (Some(c), Some(s)) = (cursors.0.get_mut(k), spans.get_mut(k)) {
                let span = tl.locate(t, *c);
                *c = span.k0;
                *s = span;
            }
            k += 1;
        }
    }
}

/// Phase two: samples and blends every flat bone.
///
/// Inputs: the per-entity table, the bone table (job 3), the spans of phase one. Output: one
/// local [`Transform`] per flat bone.
#[derive(Debug)]
pub struct SampleBlendJob<'a> {
    /// Per entity, in iteration order (`None` for an entity phase one skipped: its bones
    /// are left as they were).
    pub entities: &'a [Option<EntitySampling<'a>>],
    /// Flat bone → (entity, bone).
    pub table: &'a [BoneSlot],
    /// Key spans of every entity (phase one).
    pub spans: &'a [KeySpan],
    /// Output local poses, one per flat bone.
    pub out: &'a mut [Transform],
    /// Bones per parallel batch (default [`SAMPLING_BATCH`]).
    pub batch: usize,
}

impl SampleBlendJob<'_> {
    /// Checks lengths, entity and bone indices, and that every entity's spans fit.
    ///
    /// # Errors
    /// [`JobError::LengthMismatch`] when the output and table lengths differ or an entity's
    /// spans run past the span buffer; [`JobError::BoneOutOfRange`] for a table entry naming
    /// a missing entity or bone.
    pub fn validate(&self) -> Result<(), JobError> {
        check_len("sampling", "out", self.table.len(), self.out.len())?;
        for e in self.entities.iter().flatten() {
            let need: usize = e.animations.iter().map(|a| a.clip.timelines().len()).sum();
            if e.span_offset as usize + need > self.spans.len() {
                return Err(JobError::LengthMismatch {
                    job: "sampling",
                    buffer: "spans",
                    expected: e.span_offset as usize + need,
                    actual: self.spans.len(),
                });
            }
        }
        for s in self.table {
            let Some(e) = self
                .entities
                .get(s.entity as usize)
                .and_then(Option::as_ref)
            else {
                return Err(JobError::LengthMismatch {
                    job: "sampling",
                    buffer: "entities",
                    expected: s.entity as usize + 1,
                    actual: self.entities.len(),
                });
            };
            if s.bone as usize >= e.rig.bone_count() {
                return Err(JobError::BoneOutOfRange {
                    job: "sampling",
                    entity: None,
                    bone: s.bone as usize,
                    bone_count: e.rig.bone_count(),
                });
            }
        }
        Ok(())
    }

    /// Samples and blends, in parallel over batches of `batch` bones.
    pub fn run(&mut self) {
        let batch = self.batch.max(1);
        let (entities, table, spans) = (self.entities, self.table, self.spans);
        self.out
            .par_chunks_mut(batch)
            .zip(table.par_chunks(batch))
            .for_each(|(out, slots)| {
                // The fast-path test is per entity: redo it only when the entity changes.
                let mut current = (u32::MAX, false);
                for (o, s) in out.iter_mut().zip(slots) {
                    if let Some(Some(e)) = entities.get(s.entity as usize) {
                        if current.0 != s.entity {
                            current = (s.entity, e.single_override_layer());
                        }
                        *o = sample_blend_bone_with(e, spans, s.bone as usize, current.1);
                    }
                }
            });
    }
}

/// The common case, in straight-line code: every animation is an unmasked override on one
/// layer. Returns `None` otherwise. Computes exactly what the general path computes
/// (the same sums in the same order).
#[inline(always)]
fn single_override_layer(
    e: &EntitySampling<'_>,
    spans: &[KeySpan],
    bone: usize,
    rest: &Transform,
) -> Option<Transform> {
    let layer = e.animations.first()?.layer;
    let mut sum = LayerSum::EMPTY;
    let mut span_base = 0usize;
    for a in e.animations {
        if a.weight > 0.0 {
            let pose = a
                .clip
                .sample_bone_at(bone, spans.get(span_base..).unwrap_or(&[]), rest);
            sum.add(&pose, a.weight);
        }
        span_base += a.clip.timelines().len();
    }
    let layer_weight = e
        .layer_weights
        .get(usize::from(layer))
        .copied()
        .unwrap_or(0.0);
    let mut acc = PoseAccumulator::EMPTY;
    acc.blend_layer(&sum, (layer_weight * sum.weight.min(1.0)).clamp(0.0, 1.0));
    Some(acc.finish(rest))
}

/// Samples and blends one bone of one entity: the reference for the batched job.
#[inline]
pub fn sample_blend_bone(e: &EntitySampling<'_>, spans: &[KeySpan], bone: usize) -> Transform {
    sample_blend_bone_with(e, spans, bone, e.single_override_layer())
}

/// [`sample_blend_bone`] with the entity's fast-path test done by the caller (once per batch).
#[inline(always)]
pub fn sample_blend_bone_with(
    e: &EntitySampling<'_>,
    spans: &[KeySpan],
    bone: usize,
    simple: bool,
) -> Transform {
    let rest = e
        .rig
        .rest_pose()
        .get(bone)
        .copied()
        .unwrap_or(Transform::IDENTITY);
    let anims = e.animations;
    if anims.is_empty() {
        return rest;
    }
    let base = e.span_offset as usize;
    let spans = spans.get(base..).unwrap_or(&[]);
    if simple && let Some(pose) = single_override_layer(e, spans, bone, &rest) {
        return pose;
    }
    let mut acc = PoseAccumulator::EMPTY;
    let mut span_base = 0usize;
    let mut i = 0;
    while i < anims.len() {
        let layer = anims[i].layer;
        let blend = anims[i].blend;
        let layer_weight = e
            .layer_weights
            .get(usize::from(layer))
            .copied()
            .unwrap_or(0.0);
        let mut j = i;
        match blend {
            BlendMode::Override => {
                let mut sum = LayerSum::EMPTY;
                while j < anims.len() && anims[j].layer == layer {
                    let a = &anims[j];
                    let n_tl = a.clip.timelines().len();
                    let w = a.weight * a.mask.as_ref().map_or(1.0, |m| m.weight(bone));
                    if w > 0.0 {
                        let pose = a.clip.sample_bone_at(
                            bone,
                            spans.get(span_base..).unwrap_or(&[]),
                            &rest,
                        );
                        sum.add(&pose, w);
                    }
                    span_base += n_tl;
                    j += 1;
                }
                acc.blend_layer(&sum, (layer_weight * sum.weight.min(1.0)).clamp(0.0, 1.0));
            }
            BlendMode::Additive => {
                // The pose below is completed only when something is added (a layer of zero
                // weight leaves the accumulation untouched, bit for bit).
                let mut pose: Option<Transform> = None;
                while j < anims.len() && anims[j].layer == layer {
                    let a = &anims[j];
                    let n_tl = a.clip.timelines().len();
                    let w =
                        layer_weight * a.weight * a.mask.as_ref().map_or(1.0, |m| m.weight(bone));
                    if w > 0.0 {
                        let sample = a.clip.sample_bone_at(
                            bone,
                            spans.get(span_base..).unwrap_or(&[]),
                            &rest,
                        );
                        let reference = a
                            .clip
                            .additive_reference()
                            .and_then(|r| r.get(bone))
                            .copied()
                            .unwrap_or(rest);
                        let base = pose.unwrap_or_else(|| acc.finish(&rest));
                        pose = Some(additive_apply(&base, &sample, &reference, w));
                    }
                    span_base += n_tl;
                    j += 1;
                }
                if let Some(p) = pose {
                    acc.reset_to(&p);
                }
            }
        }
        i = j;
    }
    acc.finish(&rest)
}
