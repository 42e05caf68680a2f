//! Job 4, sampling and blending: every bone of every entity, data-parallel over runs of
//! whole entities ([`SampleBlendJob::batch`] entities per task).
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
//!
//! Every entity is sampled and blended in structure of arrays, `LANES` bones per step, on one
//! of two paths chosen from its animations alone. Unmasked overrides on one layer over clips
//! with a shared time grid ([`crate::asset::KeyGrid`]) take one weighted sum of key rows per
//! block (`crate::math::soa::blend_block`). Anything else (several layers, masks, additive
//! layers, Hermite grids, STEP, per-track key times) samples each animation's block, from its
//! grid rows or bone by bone for a clip without a grid, and blends the blocks by the accumulator's
//! rules lane by lane (`crate::math::soa::layers`; a mask is a weight per lane). Both compute
//! what the per-bone reference [`sample_blend_bone`] computes, to about 1e-7 (see
//! `crate::math::soa` for where and why the last bits differ; tested to 1e-6).

use crate::asset::{KeyGrid, KeySpan, Rig, Transform};
use crate::component::{AnimationToProcess, BlendMode, MAX_LAYERS, SamplingCursors};
use crate::error::JobError;
use crate::math::soa::{
    self, BlockKeys, LANES, SingleLayer, SoaLayerSum, SoaPoseAccumulator, SoaTransform,
    blend_block, lane_weights,
};
use crate::math::{LayerSum, PoseAccumulator, additive_apply};
use wide::f32x8;

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
    /// Flat index of the entity's bone 0 in the output.
    pub bone_offset: u32,
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

/// Phase two: samples and blends every bone of every entity.
///
/// Inputs: the per-entity table (with each entity's first flat bone) and the spans of phase
/// one. Output: one local [`Transform`] per flat bone. Parallel over entities (at most
/// [`SampleBlendJob::batch`] whole entities per task), each entity `LANES` bones at a time in
/// SoA ([`sample_blend_entity`]).
#[derive(Debug)]
pub struct SampleBlendJob<'a> {
    /// Per entity, in iteration order (`None` for an entity phase one skipped: its bones
    /// are left as they were). Their bone ranges must be in increasing order.
    pub entities: &'a [Option<EntitySampling<'a>>],
    /// Key spans of every entity (phase one).
    pub spans: &'a [KeySpan],
    /// Output local poses, one per flat bone.
    pub out: &'a mut [Transform],
    /// Entities per parallel task (at most; an entity is never split, so its clips' key rows
    /// are read once per 8-bone block). The pipeline passes
    /// [`PipelineConfig::grain`](crate::pipeline::PipelineConfig::grain); 0 is read as 1.
    pub batch: usize,
}

impl SampleBlendJob<'_> {
    /// Checks, per entity, that its bone range lies in `out` after the previous entity's and
    /// that its spans fit (O(entities): bones are not walked).
    ///
    /// # Errors
    /// [`JobError::LengthMismatch`] when an entity's bones run past `out` (buffer `"out"`),
    /// start before the previous entity's end (buffer `"bone offsets"`), or its spans run past
    /// the span buffer (buffer `"spans"`).
    pub fn validate(&self) -> Result<(), JobError> {
        let mut end = 0usize;
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
            let start = e.bone_offset as usize;
            if start < end {
                return Err(JobError::LengthMismatch {
                    job: "sampling",
                    buffer: "bone offsets",
                    expected: end,
                    actual: start,
                });
            }
            end = start + e.rig.bone_count();
            if end > self.out.len() {
                return Err(JobError::LengthMismatch {
                    job: "sampling",
                    buffer: "out",
                    expected: end,
                    actual: self.out.len(),
                });
            }
        }
        Ok(())
    }

    /// Samples and blends, in parallel over runs of whole entities.
    pub fn run(&mut self) {
        run_range(self.entities, self.spans, self.out, 0, self.batch.max(1));
    }
}

/// Splits the entities in halves (cutting `out`, which starts at flat bone `out_base`, at the
/// first bone of the right half) until a run has at most `grain` entities.
fn run_range(
    entities: &[Option<EntitySampling<'_>>],
    spans: &[KeySpan],
    out: &mut [Transform],
    out_base: usize,
    grain: usize,
) {
    if entities.len() > grain {
        let mid = entities.len() / 2;
        let (left, right) = entities.split_at(mid);
        let split = right.iter().flatten().next().map_or(out.len(), |e| {
            (e.bone_offset as usize)
                .saturating_sub(out_base)
                .min(out.len())
        });
        let (lo, hi) = out.split_at_mut(split);
        rayon::join(
            || run_range(left, spans, lo, out_base, grain),
            || run_range(right, spans, hi, out_base + split, grain),
        );
        return;
    }
    for e in entities.iter().flatten() {
        let start = (e.bone_offset as usize).wrapping_sub(out_base);
        if let Some(piece) = out.get_mut(start..start.saturating_add(e.rig.bone_count())) {
            sample_blend_entity(e, spans, piece);
        }
    }
}

/// Samples and blends every bone of one entity into `out` (its bones, in rig order), through
/// structure-of-arrays blocks of `LANES` bones (see the module documentation for the two paths).
#[inline]
pub fn sample_blend_entity(e: &EntitySampling<'_>, spans: &[KeySpan], out: &mut [Transform]) {
    let bone_count = out.len();
    let plan = if e.single_override_layer() {
        GridPlan::new(e, spans, bone_count.div_ceil(LANES))
    } else {
        None
    };
    let mut block = SoaTransform::default();
    for (b, chunk) in out.chunks_mut(LANES).enumerate() {
        match &plan {
            Some(plan) => plan.block(b, &mut block),
            None => layered_block(e, spans, b, bone_count, &mut block),
        }
        block.write_transforms(chunk);
    }
}

/// [`sample_blend_entity`] into structure of arrays: block `b` of `out` holds bones
/// `8b .. 8b + 8` of the entity's `bone_count` (lanes past the last bone hold padding). An
/// entity whose animations are unmasked overrides on one layer over clips with a shared time
/// grid takes [`GridPlan`] (one weighted sum of key rows); any other takes [`layered_block`].
#[inline]
pub(crate) fn sample_blend_entity_soa(
    e: &EntitySampling<'_>,
    spans: &[KeySpan],
    bone_count: usize,
    out: &mut [SoaTransform],
) {
    let blocks = bone_count.div_ceil(LANES);
    if e.single_override_layer()
        && let Some(plan) = GridPlan::new(e, spans, blocks)
    {
        for (b, o) in out.iter_mut().take(blocks).enumerate() {
            plan.block(b, o);
        }
        return;
    }
    let blocks = blocks.min(out.len());
    layered_entity(e, spans, bone_count, &mut out[..blocks]);
}

/// [`layered_block`] for every block of `out`, out of line: the layered path is several times
/// the grid path's code, and inlined into the pose chain it would crowd the common case.
#[inline(never)]
fn layered_entity(
    e: &EntitySampling<'_>,
    spans: &[KeySpan],
    bone_count: usize,
    out: &mut [SoaTransform],
) {
    for (b, o) in out.iter_mut().enumerate() {
        layered_block(e, spans, b, bone_count, o);
    }
}

/// One animation's pose for block `b` (bones `8b ..`): its key grid's rows when the clip has a
/// grid of the rig's block count, else each bone sampled on its own channels (STEP, mixed
/// interpolations, per-track key times). `spans` starts at the animation's first span.
#[inline(always)]
fn sample_animation_block(
    a: &AnimationToProcess,
    rig: &Rig,
    spans: &[KeySpan],
    b: usize,
    bone_count: usize,
) -> SoaTransform {
    let blocks = bone_count.div_ceil(LANES);
    if let Some(g) = a.clip.grid()
        && g.blocks() == blocks
        && let Some(span) = spans.get(g.timeline() as usize)
        && let Some(block) = g.sample_block(b, span)
    {
        return block;
    }
    let first = b * LANES;
    let rest = rig.rest_pose();
    let mut lanes = [Transform::IDENTITY; LANES];
    for (l, t) in lanes
        .iter_mut()
        .enumerate()
        .take(bone_count.saturating_sub(first))
    {
        let r = rest.get(first + l).copied().unwrap_or(Transform::IDENTITY);
        *t = a.clip.sample_bone_at(first + l, spans, &r);
    }
    SoaTransform::from_transforms(&lanes)
}

/// Samples and blends block `b` of an entity with any layers: override layers (weighted
/// averages blended over what is below), additive layers and avatar masks (a weight per
/// lane), by [`PoseAccumulator`]'s rules ([`SoaPoseAccumulator`] applies them lane by lane).
/// Computes what [`sample_blend_bone`] computes for each of the block's bones, to about 1e-7.
#[inline(always)]
fn layered_block(
    e: &EntitySampling<'_>,
    spans: &[KeySpan],
    b: usize,
    bone_count: usize,
    out: &mut SoaTransform,
) {
    let Some(rest) = e.rig.rest_block(b) else {
        return;
    };
    let anims = e.animations;
    let spans = spans.get(e.span_offset as usize..).unwrap_or(&[]);
    let first = b * LANES;
    let weights = |a: &AnimationToProcess, scale: f32| {
        let w = f32x8::splat(scale * a.weight);
        match &a.mask {
            Some(m) => w * lane_weights(m.weights(), first),
            None => w,
        }
    };
    let mut acc = SoaPoseAccumulator::EMPTY;
    // Whether the accumulation is a finished pose: an additive layer that touched every lane
    // leaves one (completed below and renormalised by the additive rule), which a last
    // `finish` would only normalise again.
    let mut finished = false;
    let (mut i, mut span_base) = (0usize, 0usize);
    while let Some(head) = anims.get(i) {
        let (layer, blend) = (head.layer, head.blend);
        let layer_weight = e
            .layer_weights
            .get(usize::from(layer))
            .copied()
            .unwrap_or(0.0);
        let in_layer = anims[i..].iter().take_while(|a| a.layer == layer);
        match blend {
            BlendMode::Override => {
                let mut sum = SoaLayerSum::EMPTY;
                for a in in_layer {
                    let w = weights(a, 1.0);
                    if w.simd_gt(f32x8::ZERO).any() {
                        let own = spans.get(span_base..).unwrap_or(&[]);
                        let pose = sample_animation_block(a, e.rig, own, b, bone_count);
                        sum.add(&pose, w);
                    }
                    span_base += a.clip.timelines().len();
                    i += 1;
                }
                acc.blend_layer(&sum, layer_weight);
                finished = false;
            }
            BlendMode::Additive => {
                // The pose below is completed only when something is added, and only the
                // lanes something is added to restart from it.
                let mut pose: Option<SoaTransform> = None;
                let mut touched = f32x8::ZERO;
                for a in in_layer {
                    let w = weights(a, layer_weight);
                    let active = w.simd_gt(f32x8::ZERO);
                    if active.any() {
                        let base = pose.unwrap_or_else(|| acc.finish(rest));
                        // Where the clip has no track and its reference is the rest pose, its
                        // delta is the identity: the pose below is completed, nothing added.
                        pose = Some(if a.clip.additive_changes(b) {
                            let own = spans.get(span_base..).unwrap_or(&[]);
                            let sample = sample_animation_block(a, e.rig, own, b, bone_count);
                            let reference = a.clip.additive_block(b).unwrap_or(rest);
                            soa::additive_apply(&base, &sample, reference, w)
                        } else {
                            base
                        });
                        touched |= active;
                    }
                    span_base += a.clip.timelines().len();
                    i += 1;
                }
                if let Some(p) = pose {
                    acc.reset_where(touched, &p);
                    finished |= touched.all();
                }
            }
        }
    }
    *out = if finished {
        acc.pose()
    } else {
        acc.finish(rest)
    };
}

/// Most animations the SoA path blends per entity (more take the per-bone path).
const MAX_GRID_ANIMATIONS: usize = 4;

/// The SoA path's per-entity set-up: one override layer, no masks, every weighted clip on a
/// shared time grid with `blocks` blocks; the key rows of each weighted animation and the
/// layer's blend factors. Blocks then come from [`GridPlan::block`], which computes what
/// [`sample_blend_bone`] computes, [`LANES`] bones at a time.
struct GridPlan<'a> {
    /// The first `n` are the weighted animations' rows.
    keys: [BlockKeys<'a>; MAX_GRID_ANIMATIONS],
    n: usize,
    single: SingleLayer,
    grid: &'a KeyGrid,
}

impl<'a> GridPlan<'a> {
    /// `None` when the entity does not qualify (the caller takes the per-bone path).
    #[inline(always)]
    fn new(e: &EntitySampling<'a>, spans: &[KeySpan], blocks: usize) -> Option<Self> {
        let anims = e.animations;
        let layer = anims.first()?.layer;
        let spans = spans.get(e.span_offset as usize..).unwrap_or(&[]);
        // The weighted animations' key rows, and their weight sum in animation order.
        let mut keys = [BlockKeys::EMPTY; MAX_GRID_ANIMATIONS];
        let (mut n, mut weight_sum, mut span_base) = (0usize, 0.0f32, 0usize);
        let mut first_grid = None;
        for a in anims {
            if a.weight > 0.0 {
                let g = a.clip.grid()?;
                let slot = keys.get_mut(n)?;
                // The single-layer sum lerps its rows; Hermite keys take the layered path.
                if g.blocks() != blocks || g.is_hermite() {
                    return None;
                }
                let span = spans
                    .get(span_base + g.timeline() as usize)
                    .copied()
                    .unwrap_or_default();
                *slot = g.keys_at(&span, a.weight)?;
                first_grid.get_or_insert(g);
                n += 1;
                weight_sum += a.weight;
            }
            span_base += a.clip.timelines().len();
        }
        let grid = first_grid?;
        let layer_weight = e
            .layer_weights
            .get(usize::from(layer))
            .copied()
            .unwrap_or(0.0);
        // Every block must have its rest row (checked once here, not per block).
        grid.rest_block(blocks.checked_sub(1)?)?;
        Some(Self {
            keys,
            n,
            single: SingleLayer::new(weight_sum, layer_weight),
            grid,
        })
    }

    /// Block `b`, sampled and blended into `out`.
    #[inline(always)]
    fn block(&self, b: usize, out: &mut SoaTransform) {
        let Some(rest) = self.grid.rest_block(b) else {
            return;
        };
        blend_block(
            self.keys.get(..self.n).unwrap_or(&[]),
            b,
            &self.single,
            rest,
            out,
        );
    }
}

/// Samples and blends one bone of one entity with the scalar helpers: the reference the SoA
/// paths are tested against.
pub fn sample_blend_bone(e: &EntitySampling<'_>, spans: &[KeySpan], bone: usize) -> Transform {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::asset::{AssetRegistry, Clip, LinearRotation};
    use crate::math::soa::{soa_local_rows, subnormal_watch};
    use std::sync::Arc;

    /// Samples and blends `clips` (weights `weights`) through the SoA path, as the fused chain
    /// does, at 480 frames of 1/120 s from staggered start times, under layer weights 1 (the
    /// workload) and 0.6 (the rest pose fills in), and builds the local matrices from the
    /// result. Returns the subnormal lanes found and the lanes checked.
    fn watch_soa_path(rig: &Rig, clips: &[Arc<Clip>], weights: &[f32]) -> (u64, u64) {
        let bones = rig.bone_count();
        let mut blocks = vec![SoaTransform::default(); bones.div_ceil(LANES)];
        subnormal_watch::take();
        let (mut found, mut seen) = (0, 0);
        for layer_weight in [1.0, 0.6] {
            let mut cursors = SamplingCursors::default();
            for frame in 0..480 {
                let animations: Vec<AnimationToProcess> = clips
                    .iter()
                    .zip(weights)
                    .enumerate()
                    .map(|(i, (c, &w))| {
                        AnimationToProcess::new(c.clone())
                            .at(0.37 * i as f32 + frame as f32 / 120.0)
                            .weight(w)
                    })
                    .collect();
                let need = animations.iter().map(|a| a.clip.timelines().len()).sum();
                let mut spans = vec![KeySpan::default(); need];
                resolve_spans(&animations, &mut cursors, &mut spans);
                let mut layer_weights = [0.0; MAX_LAYERS];
                layer_weights[0] = layer_weight;
                let e = EntitySampling {
                    rig,
                    animations: &animations,
                    layer_weights,
                    span_offset: 0,
                    bone_offset: 0,
                };
                sample_blend_entity_soa(&e, &spans, bones, &mut blocks);
                let (f, s) = subnormal_watch::take();
                // Only the SoA path reports to the watch: zero lanes means it was not taken.
                assert!(s > 0, "frame {frame}: the SoA path was not taken");
                for b in &blocks {
                    soa_local_rows(b);
                }
                let (f2, s2) = subnormal_watch::take();
                (found, seen) = (found + f + f2, seen + s + s2);
            }
        }
        (found, seen)
    }

    #[cfg(feature = "gltf")]
    fn gltf(name: &str) -> (Arc<Rig>, Vec<Arc<Clip>>) {
        let path =
            sinew_fixtures::asset_path(format!("gltf/{name}")).unwrap_or_else(|e| panic!("{e}"));
        let scene = crate::import::import_gltf(&path, &AssetRegistry::new())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        (scene.rig.clone(), scene.clips.clone())
    }

    /// Every clip of the sample files that takes the SoA path, alone, and with the file's other
    /// such clips blended in pairs (Fox's Walk·0.7 + Run·0.3 is the workload) and all three,
    /// under both LINEAR rotation rules. Fox's tail keys carry components down to 3.6e-25,
    /// whose products underflow unless the bake stores them as zero.
    #[test]
    #[cfg(feature = "gltf")]
    fn soa_sampling_of_the_sample_files_forms_no_subnormal_values() {
        let mut checked = Vec::new();
        for name in [
            "Fox.glb",
            "CesiumMan.glb",
            "InterpolationTest.glb",
            "RiggedSimple.glb",
            "SimpleSkin.glb",
        ] {
            let (rig, clips) = gltf(name);
            for mode in [LinearRotation::Slerp, LinearRotation::Nlerp] {
                let gridded: Vec<Arc<Clip>> = clips
                    .iter()
                    .filter(|c| {
                        c.grid()
                            .is_some_and(|g| g.blocks() == rig.bone_count().div_ceil(LANES))
                    })
                    .map(|c| Arc::new(c.with_linear_rotation(mode)))
                    .collect();
                let mut sets: Vec<(Vec<Arc<Clip>>, Vec<f32>)> = gridded
                    .iter()
                    .map(|c| (vec![c.clone()], vec![1.0]))
                    .collect();
                for (i, a) in gridded.iter().enumerate() {
                    for b in &gridded[i + 1..] {
                        sets.push((vec![a.clone(), b.clone()], vec![0.7, 0.3]));
                    }
                }
                if gridded.len() >= 3 {
                    sets.push((gridded[..3].to_vec(), vec![0.5, 0.3, 0.2]));
                }
                for (set, weights) in &sets {
                    let names: Vec<&str> = set.iter().map(|c| c.name()).collect();
                    let (found, seen) = watch_soa_path(&rig, set, weights);
                    assert_eq!(
                        found, 0,
                        "{name} {names:?} {mode:?}: {found} of {seen} lanes subnormal"
                    );
                    checked.push(format!("{name} {names:?}"));
                }
            }
        }
        for expected in [
            "Fox.glb [\"Walk\", \"Run\"]",
            "Fox.glb [\"Survey\", \"Walk\", \"Run\"]",
        ] {
            assert!(
                checked.iter().any(|c| c == expected),
                "{expected}: {checked:?}"
            );
        }
        assert!(
            checked.iter().any(|c| c.starts_with("CesiumMan")),
            "{checked:?}"
        );
    }
}
