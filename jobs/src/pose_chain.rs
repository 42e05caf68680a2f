//! Jobs 4, 6, 7 and 9 run entity by entity: the pipeline's default ([`PoseChain::Fused`]).
//!
//! Each entity's keys are located (job 4, phase one), its bones sampled and blended into
//! structure-of-arrays local poses (job 4), its root made in place and its root motion applied
//! (job 6), its model matrices built (job 7) and its palette written (job 9) before the next
//! entity starts. The local poses and, unless kept, the model matrices live in a
//! [`ChainScratch`] of a few KiB per worker (a stage group's, below, about 32 KiB for the
//! built-in character; kept matrices are copied out) that stays in the core's L1 cache, instead of
//! crowd-sized frame buffers that every job writes and the next reads back from memory. Each
//! stage is the staged job's own per-entity function (`sample_blend_entity_soa`,
//! [`root_motion_one`], `propagate_soa`, [`skin_entity`]), so the two modes compute the same
//! palettes bit for bit.
//!
//! The pose stages installed in the pipeline run at their points while the entity's data is
//! in cache: [`LocalPoseStage`](crate::pose_stage::LocalPoseStage)s edit its local pose after
//! job 4 or after job 6, [`PoseStage`](crate::pose_stage::PoseStage)s its model matrices
//! between job 7 and job 9 (IK, constraints, foot placement). With model stages the run goes
//! in groups of up to [`STAGE_GROUP`] entities: jobs 4, 6 and 7 for each of the group, the
//! model stages over the group at once, then job 9 for each.
//!
//! [`PoseChain::Fused`]: crate::pipeline::PoseChain::Fused

use crate::asset::{KeySpan, Rig};
use crate::component::{
    Animations, EntityTransform, FrameSlot, LayerWeights, RigRef, RootMotion, SamplingCursors,
    SkinRef,
};
use crate::error::{JobError, check_len};
use crate::frame::{PaletteEntry, Pieces};
use crate::j4_sample_blend::{EntitySampling, resolve_spans, sample_blend_entity_soa};
use crate::j6_root_motion::{has_root_motion, root_motion_one};
use crate::j7_propagate::{propagate_lanes, propagate_soa};
use crate::j8_remap_cache::RemapCache;
use crate::j9_skinning::{TableLookup, check_range, check_skin, skin_entity, skin_lanes};
use crate::math::soa::{LANES, LaneAffine, SoaTransform};
use crate::pose_stage::{
    ChunkStage, LocalPose, LocalPoseMut, LocalStagePose, STAGE_GROUP, StagePoint, StagePose,
};
use bumpalo::Bump;
use glam::Affine3A;
use sinew_runtime::store::Entity;
use std::ops::Range;
use std::sync::Arc;
use wide::f32x8;

/// Per-worker buffers of the fused chain, reused from entity to entity and frame to frame
/// (sized by the largest entity, or stage group, seen).
#[derive(Debug, Default)]
pub struct ChainScratch {
    spans: Vec<KeySpan>,
    local: Vec<SoaTransform>,
    model: Vec<Affine3A>,
    /// A lane group's model matrices and, for a lent palette, its entries (see
    /// [`PoseChainJob::run_lanes`]).
    lanes: Vec<LaneAffine>,
    palettes: Vec<PaletteEntry>,
    /// A group's [`StagePose`]s (reset per group).
    poses: Bump,
}

/// The pose stages of one run's chunk: those whose input component the chunk has, and the
/// chunk row of the run's first entity (where the stages find its input). The default is none.
#[derive(Clone, Copy, Default)]
pub struct ChunkStages<'a> {
    stages: &'a [&'a dyn ChunkStage],
    /// Per stage, whether its check of the chunk still holds (not checked again); none when
    /// empty.
    checked: &'a [bool],
    /// Whether a local stage runs after sampling, and after root motion.
    local: (bool, bool),
    row_base: usize,
}

impl<'a> ChunkStages<'a> {
    /// `stages`, each checked in `validate()` but where `checked` says its last check of the
    /// chunk still holds.
    pub(crate) fn new(stages: &'a [&'a dyn ChunkStage], checked: &'a [bool]) -> Self {
        let at = |p: StagePoint| stages.iter().any(|s| s.point() == p);
        Self {
            stages,
            checked,
            local: (at(StagePoint::Sampled), at(StagePoint::RootMoved)),
            row_base: 0,
        }
    }

    /// Whether no stage runs on the run's entities.
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }

    /// Runs the local stages at `point` on the run's entity `i`.
    fn apply_local(
        &self,
        point: StagePoint,
        i: usize,
        entity: Entity,
        rig: &crate::asset::Rig,
        local: &mut [SoaTransform],
        transform: Option<&crate::asset::Transform>,
    ) {
        let there = match point {
            StagePoint::Sampled => self.local.0,
            StagePoint::RootMoved => self.local.1,
            StagePoint::Propagated => false,
        };
        if !there {
            return;
        }
        let mut pose = LocalStagePose {
            entity,
            rig,
            local: LocalPoseMut::soa(local, rig.bone_count()),
            transform,
        };
        for stage in self.stages.iter().filter(|s| s.point() == point) {
            stage.apply_local(self.row_base + i, &mut pose);
        }
    }

    /// The stages of the entities from `mid` on.
    fn skip(self, mid: usize) -> Self {
        Self {
            row_base: self.row_base + mid,
            ..self
        }
    }
}

impl std::fmt::Debug for ChunkStages<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkStages")
            .field("stages", &self.stages.len())
            .field("row_base", &self.row_base)
            .finish()
    }
}

/// Jobs 4, 6, 7 and 9 over one run of entities (consecutive rows of one chunk).
///
/// `model` (when the caller keeps model matrices) and `palette` are the run's pieces of the
/// flat buffers, starting at flat bone `model_base` and palette entry `palette_base`.
#[derive(Debug)]
pub struct PoseChainJob<'a> {
    /// Entity handles (for errors).
    pub entities: &'a [Entity],
    /// Rigs.
    pub rigs: &'a [RigRef],
    /// Animations, sorted by layer.
    pub animations: &'a [Animations],
    /// Layer weights.
    pub layer_weights: &'a [LayerWeights],
    /// Frame slots (job 3).
    pub slots: &'a [FrameSlot],
    /// Sampling cursors, when the run's entities have them.
    pub cursors: Option<&'a mut [SamplingCursors]>,
    /// Skinned meshes, when the run's entities have them (no palette otherwise).
    pub skins: Option<&'a [SkinRef]>,
    /// Root motion, when the run's entities have it (job 6 skips them otherwise).
    pub motion: Option<&'a mut [RootMotion]>,
    /// Entity transforms that root motion moves.
    pub transforms: Option<&'a mut [EntityTransform]>,
    /// The remap cache (job 8).
    pub remap: &'a RemapCache,
    /// Model matrices of the run, when kept.
    pub model: Option<&'a mut [Affine3A]>,
    /// Flat bone index of `model[0]`.
    pub model_base: u32,
    /// The run's palette piece.
    pub palette: &'a mut [PaletteEntry],
    /// Palette index of `palette[0]`.
    pub palette_base: u32,
    /// Whether each entity's palette must be written in one ascending run: set for a palette
    /// in write-combined memory (a mapped GPU buffer, lent by
    /// [`Animator::run_frame_into_mapped`](crate::animator::Animator::run_frame_into_mapped)),
    /// which partial cache lines written out of order flush piecemeal. Lane groups then gather
    /// their entries in the worker's scratch first.
    pub sequential_palette_writes: bool,
    /// Frame time in seconds (root-motion velocity).
    pub dt: f32,
    /// The pose stages (none by default).
    pub stages: ChunkStages<'a>,
}

impl PoseChainJob<'_> {
    /// Checks what jobs 4, 6, 7 and 9 check: per-entity buffers of one length, every slot's
    /// bones and palette entries inside the run's pieces, slot counts equal to the rig's and
    /// the mesh's, a remap table for every (rig, mesh) pair, skin root bones inside the rig.
    /// O(entities).
    ///
    /// # Errors
    /// [`JobError::LengthMismatch`], [`JobError::MissingRemap`] or
    /// [`JobError::BoneOutOfRange`], naming the buffer or the entity.
    pub fn validate(&self) -> Result<(), JobError> {
        const JOB: &str = "pose chain";
        let n = self.entities.len();
        check_len(JOB, "rigs", n, self.rigs.len())?;
        check_len(JOB, "animations", n, self.animations.len())?;
        check_len(JOB, "layer weights", n, self.layer_weights.len())?;
        check_len(JOB, "slots", n, self.slots.len())?;
        if let Some(c) = &self.cursors {
            check_len(JOB, "cursors", n, c.len())?;
        }
        if let Some(s) = self.skins {
            check_len(JOB, "skins", n, s.len())?;
        }
        if let Some(m) = &self.motion {
            check_len(JOB, "root motion", n, m.len())?;
        }
        if let Some(t) = &self.transforms {
            check_len(JOB, "transforms", n, t.len())?;
        }
        let mut tables = TableLookup::new(self.remap);
        for (i, (s, rig)) in self.slots.iter().zip(self.rigs).enumerate() {
            check_len(
                JOB,
                "slot bone count",
                rig.0.bone_count(),
                s.bone_count as usize,
            )?;
            if let Some(model) = &self.model {
                let base = self.model_base;
                check_range(JOB, "model", s.bone_offset, s.bone_count, base, model.len())?;
            }
            let (base, len) = (self.palette_base, self.palette.len());
            check_range(JOB, "palette", s.palette_offset, s.palette_count, base, len)?;
            match self.skins.and_then(|k| k.get(i)) {
                Some(skin) => check_skin(JOB, self.entities[i], rig, skin, s, &mut tables)?,
                None => check_len(JOB, "slot palette count", 0, s.palette_count as usize)?,
            }
        }
        let ChunkStages {
            stages, checked, ..
        } = self.stages;
        for (i, stage) in stages.iter().enumerate() {
            if !checked.get(i).is_some_and(|&holds| holds) {
                stage.check_rows(self.stages.row_base, self.entities, self.rigs)?;
            }
        }
        Ok(())
    }

    /// Runs the chain for every entity of the run, in order, with `scratch` as the worker's
    /// buffers.
    pub fn run(&mut self, scratch: &mut ChainScratch) {
        // A run without stages takes a loop compiled without them.
        if self.stages.is_empty() {
            self.run_entities::<false>(scratch);
        } else {
            self.run_entities::<true>(scratch);
        }
    }

    fn run_entities<const STAGES: bool>(&mut self, scratch: &mut ChainScratch) {
        let n = self
            .entities
            .len()
            .min(self.rigs.len())
            .min(self.slots.len());
        let n = n.min(self.animations.len()).min(self.layer_weights.len());
        let mut tables = TableLookup::new(self.remap);
        let mut fallback_cursors = SamplingCursors::default();
        let model_stages =
            STAGES && (self.stages.stages.iter()).any(|s| s.point() == StagePoint::Propagated);
        if model_stages {
            for first in (0..n).step_by(STAGE_GROUP) {
                let group = first..(first + STAGE_GROUP).min(n);
                self.run_group(group, scratch, &mut tables, &mut fallback_cursors);
            }
            return;
        }
        let mut i = 0;
        while i < n {
            let group = self.lane_group(i, n);
            if group.len() > 1 {
                i = group.end;
                self.run_lanes::<STAGES>(group, scratch, &mut tables, &mut fallback_cursors);
                continue;
            }
            let (rig, slot) = (&*self.rigs[i].0, self.slots[i]);
            let bones = rig.bone_count();
            let blocks = bones.div_ceil(LANES);
            if scratch.local.len() < blocks {
                scratch.local.resize(blocks, SoaTransform::default());
            }
            let local = &mut scratch.local[..blocks];
            self.local_pose::<STAGES>(i, &mut scratch.spans, &mut fallback_cursors, local);

            // Job 7: model matrices, into the kept buffer or the scratch.
            let kept = self.model.as_deref_mut().and_then(|m| {
                let start = slot.bone_offset.wrapping_sub(self.model_base) as usize;
                m.get_mut(start..start.saturating_add(bones))
            });
            let model = match kept {
                Some(m) => m,
                None => {
                    if scratch.model.len() < bones {
                        scratch.model.resize(bones, Affine3A::IDENTITY);
                    }
                    &mut scratch.model[..bones]
                }
            };
            propagate_soa(rig.parent_indices(), local, model);
            let (skins, palette) = (self.skins, &mut *self.palette);
            let rig = &self.rigs[i].0;
            skin(
                skins,
                palette,
                self.palette_base,
                i,
                rig,
                &slot,
                &mut tables,
                model,
            );
            i += 1;
        }
    }

    /// The entities from `first` (before `n`) that jobs 7 and 9 can run as one lane group
    /// ([`Self::run_lanes`]): up to [`LANES`] in a row with the same rig and the same mesh,
    /// skinned in entity space, when model matrices are not kept. A group of one runs alone.
    fn lane_group(&self, first: usize, n: usize) -> Range<usize> {
        let alone = first..first + 1;
        let Some(skins) = self.skins else {
            return alone;
        };
        if self.model.is_some() {
            return alone;
        }
        let (Some(rig), Some(skin)) = (self.rigs.get(first), skins.get(first)) else {
            return alone;
        };
        let joins = |i: usize| match (self.rigs.get(i), skins.get(i)) {
            (Some(r), Some(s)) => {
                Arc::ptr_eq(&r.0, &rig.0)
                    && Arc::ptr_eq(&s.mesh, &skin.mesh)
                    && s.root_bone.is_none()
            }
            _ => false,
        };
        if !joins(first) {
            return alone;
        }
        let end = (first + 1..n.min(first + LANES))
            .find(|&i| !joins(i))
            .unwrap_or(n.min(first + LANES));
        first..end
    }

    /// Jobs 4 and 6 for each entity of `group` (a [`Self::lane_group`]), then jobs 7 and 9 for
    /// the group at once, one entity per lane ([`propagate_lanes`], [`skin_lanes`]): the same
    /// palettes, bit for bit, as the entities run one by one.
    fn run_lanes<const STAGES: bool>(
        &mut self,
        group: Range<usize>,
        scratch: &mut ChainScratch,
        tables: &mut TableLookup<'_>,
        fallback_cursors: &mut SamplingCursors,
    ) {
        // The rig through the run's own borrow, not `self`'s: jobs 4 and 6 below take `self`.
        let rigs = self.rigs;
        let rig = &rigs[group.start].0;
        let bones = rig.bone_count();
        let blocks = bones.div_ceil(LANES);
        let size = group.len() * blocks;
        if scratch.local.len() < size {
            scratch.local.resize(size, SoaTransform::default());
        }
        if scratch.lanes.len() < bones {
            scratch.lanes.resize(bones, [f32x8::ZERO; 12]);
        }
        for (local, i) in scratch.local.chunks_mut(blocks).zip(group.clone()) {
            self.local_pose::<STAGES>(i, &mut scratch.spans, fallback_cursors, local);
        }
        let mut locals: [&[SoaTransform]; LANES] = [&[]; LANES];
        for (l, local) in locals.iter_mut().zip(scratch.local.chunks(blocks)) {
            *l = local;
        }
        let model = &mut scratch.lanes[..bones];
        propagate_lanes(rig.parent_indices(), &locals[..group.len()], model);

        let Some(skin) = self.skins.and_then(|s| s.get(group.start)) else {
            return;
        };
        let Some(table) = tables.get(rig, &skin.mesh) else {
            return;
        };
        // Each entity's palette piece, cut in order out of the run's (validate() checked that
        // they lie inside it; their offsets increase with the rows).
        let mut outs: [&mut [PaletteEntry]; LANES] = Default::default();
        let mut pieces = Pieces::new(&mut *self.palette);
        for (out, slot) in outs.iter_mut().zip(&self.slots[group.clone()]) {
            let start = slot.palette_offset.wrapping_sub(self.palette_base) as usize;
            match pieces.take((start, start.saturating_add(slot.palette_count as usize))) {
                Some(piece) => *out = piece,
                None => break,
            }
        }
        let (binds, outs) = (skin.mesh.inverse_binds(), &mut outs[..group.len()]);
        if !self.sequential_palette_writes {
            skin_lanes(model, binds, table, outs);
            return;
        }
        // Into the scratch (which stays in cache), then each entity's palette in one ascending
        // run: the eight palettes written bone by bone would be eight streams of partial cache
        // lines, which write-combined (GPU-mapped) memory flushes piecemeal.
        let sizes: [usize; LANES] = std::array::from_fn(|e| outs.get(e).map_or(0, |o| o.len()));
        let staged: usize = sizes.iter().sum();
        if scratch.palettes.len() < staged {
            scratch.palettes.resize(staged, [0.0; 12]);
        }
        let mut staging: [&mut [PaletteEntry]; LANES] = Default::default();
        let (mut pieces, mut at) = (Pieces::new(&mut scratch.palettes[..staged]), 0);
        for (s, &size) in staging.iter_mut().zip(&sizes) {
            *s = pieces.take((at, at + size)).unwrap_or_default();
            at += size;
        }
        skin_lanes(model, binds, table, &mut staging[..outs.len()]);
        for (out, staged) in outs.iter_mut().zip(&staging) {
            out.copy_from_slice(staged);
        }
    }

    /// Jobs 4, 6, 7 for the run's entities `group` (at most [`STAGE_GROUP`]), into the
    /// scratch; the model stages over the group at once; then each entity's kept matrices and
    /// palette (job 9). Each entity's results do not depend on the group it is in.
    fn run_group(
        &mut self,
        group: Range<usize>,
        scratch: &mut ChainScratch,
        tables: &mut TableLookup<'_>,
        fallback_cursors: &mut SamplingCursors,
    ) {
        let bones = |i: usize| self.rigs[i].0.bone_count();
        let blocks: usize = group.clone().map(|i| bones(i).div_ceil(LANES)).sum();
        let matrices: usize = group.clone().map(bones).sum();
        if scratch.local.len() < blocks {
            scratch.local.resize(blocks, SoaTransform::default());
        }
        if scratch.model.len() < matrices {
            scratch.model.resize(matrices, Affine3A::IDENTITY);
        }
        let (mut local, mut model) = (&mut scratch.local[..blocks], &mut scratch.model[..matrices]);
        let rigs = self.rigs;
        for i in group.clone() {
            let rig = &*rigs[i].0;
            let (l, rest) = local.split_at_mut(rig.bone_count().div_ceil(LANES));
            let (m, rest_m) = model.split_at_mut(rig.bone_count());
            (local, model) = (rest, rest_m);
            self.local_pose::<true>(i, &mut scratch.spans, fallback_cursors, l);
            propagate_soa(rig.parent_indices(), l, m);
        }

        // The model stages, on the matrices skinning reads, over the group.
        scratch.poses.reset();
        let mut poses = bumpalo::collections::Vec::with_capacity_in(group.len(), &scratch.poses);
        let (mut local, mut model) = (&scratch.local[..blocks], &mut scratch.model[..matrices]);
        for i in group.clone() {
            let rig = &*self.rigs[i].0;
            let (l, rest) = local.split_at(rig.bone_count().div_ceil(LANES));
            let (m, rest_m) = model.split_at_mut(rig.bone_count());
            (local, model) = (rest, rest_m);
            let transform = self.transforms.as_deref().and_then(|t| t.get(i));
            poses.push(StagePose {
                entity: self.entities[i],
                rig,
                local: LocalPose::soa(l, rig.bone_count()),
                model: m,
                transform: transform.map(|t| &t.0),
            });
        }
        let model_stages = self.stages.stages.iter();
        for stage in model_stages.filter(|s| s.point() == StagePoint::Propagated) {
            stage.apply(self.stages.row_base + group.start, &mut poses);
        }
        drop(poses);

        let mut model = &mut scratch.model[..matrices];
        for i in group {
            let bones = self.rigs[i].0.bone_count();
            let (m, rest) = model.split_at_mut(bones);
            model = rest;
            let start = self.slots[i].bone_offset.wrapping_sub(self.model_base) as usize;
            let kept = (self.model.as_deref_mut())
                .and_then(|k| k.get_mut(start..start.saturating_add(bones)));
            if let Some(kept) = kept {
                kept.copy_from_slice(m);
            }
            let (rig, slot) = (&self.rigs[i].0, &self.slots[i]);
            skin(
                self.skins,
                self.palette,
                self.palette_base,
                i,
                rig,
                slot,
                tables,
                m,
            );
        }
    }

    /// Jobs 4 and 6 (and the local stages at their points, when `STAGES`) for the run's entity
    /// `i`, into `local`.
    fn local_pose<const STAGES: bool>(
        &mut self,
        i: usize,
        spans: &mut Vec<KeySpan>,
        fallback_cursors: &mut SamplingCursors,
        local: &mut [SoaTransform],
    ) {
        let (rig, slot) = (&*self.rigs[i].0, self.slots[i]);
        let (animations, lw) = (self.animations[i].as_slice(), &self.layer_weights[i]);
        let bones = rig.bone_count();

        // Job 4: spans, then SoA local poses.
        let needed: usize = animations.iter().map(|a| a.clip.timelines().len()).sum();
        spans.resize(needed, KeySpan::default());
        let cursors = match self.cursors.as_deref_mut().and_then(|c| c.get_mut(i)) {
            Some(c) => c,
            None => fallback_cursors,
        };
        resolve_spans(animations, cursors, spans);
        let sampling = EntitySampling {
            rig,
            animations,
            layer_weights: lw.0,
            span_offset: 0,
            bone_offset: slot.bone_offset,
        };
        sample_blend_entity_soa(&sampling, spans, bones, local);
        let entity = self.entities[i];
        if STAGES {
            let transform = self.transforms.as_deref().and_then(|t| t.get(i));
            let t = transform.map(|t| &t.0);
            (self.stages).apply_local(StagePoint::Sampled, i, entity, rig, local, t);
        }

        // Job 6: root motion, and the root made in place.
        if let Some(motion) = self.motion.as_deref_mut().and_then(|m| m.get_mut(i)) {
            let root = rig.root().get();
            let transform = self.transforms.as_deref_mut().and_then(|t| t.get_mut(i));
            match local.get_mut(root / LANES) {
                Some(block) if has_root_motion(animations) => {
                    let mut pose = block.lane(root % LANES);
                    root_motion_one(
                        animations,
                        lw,
                        root,
                        motion,
                        transform,
                        Some(&mut pose),
                        self.dt,
                    );
                    block.set_lane(root % LANES, &pose);
                }
                _ => root_motion_one(animations, lw, root, motion, transform, None, self.dt),
            }
        }

        if STAGES {
            let transform = self.transforms.as_deref().and_then(|t| t.get(i));
            let t = transform.map(|t| &t.0);
            (self.stages).apply_local(StagePoint::RootMoved, i, entity, rig, local, t);
        }
    }

    /// The run cut before entity `mid` (clamped to the run), its pieces cut at that entity's
    /// first bone and first palette entry.
    pub fn split_at(self, mid: usize) -> (Self, Self) {
        let mid = mid.min(self.entities.len());
        // Cut the pieces at the right half's first bone and palette entry (clamped below).
        let (bone_cut, palette_cut) = self.slots.get(mid).map_or((usize::MAX, usize::MAX), |s| {
            (
                s.bone_offset.saturating_sub(self.model_base) as usize,
                s.palette_offset.saturating_sub(self.palette_base) as usize,
            )
        });
        let bone_cut = bone_cut.min(self.model.as_ref().map_or(0, |m| m.len()));
        let palette_cut = palette_cut.min(self.palette.len());
        let (entities, entities_r) = self.entities.split_at(mid);
        let (rigs, rigs_r) = split(self.rigs, mid);
        let (animations, animations_r) = split(self.animations, mid);
        let (layer_weights, layer_weights_r) = split(self.layer_weights, mid);
        let (slots, slots_r) = split(self.slots, mid);
        let (skins, skins_r) = match self.skins {
            Some(s) => {
                let (a, b) = split(s, mid);
                (Some(a), Some(b))
            }
            None => (None, None),
        };
        let (cursors, cursors_r) = split_mut(self.cursors, mid);
        let (motion, motion_r) = split_mut(self.motion, mid);
        let (transforms, transforms_r) = split_mut(self.transforms, mid);
        let (model, model_r) = split_mut(self.model, bone_cut);
        let (palette, palette_r) = self.palette.split_at_mut(palette_cut);
        let right = Self {
            entities: entities_r,
            rigs: rigs_r,
            animations: animations_r,
            layer_weights: layer_weights_r,
            slots: slots_r,
            cursors: cursors_r,
            skins: skins_r,
            motion: motion_r,
            transforms: transforms_r,
            remap: self.remap,
            model: model_r,
            model_base: self.model_base + bone_cut as u32,
            palette: palette_r,
            palette_base: self.palette_base + palette_cut as u32,
            sequential_palette_writes: self.sequential_palette_writes,
            dt: self.dt,
            stages: self.stages.skip(mid),
        };
        let left = Self {
            entities,
            rigs,
            animations,
            layer_weights,
            slots,
            cursors,
            skins,
            motion,
            transforms,
            remap: self.remap,
            model,
            model_base: self.model_base,
            palette,
            palette_base: self.palette_base,
            sequential_palette_writes: self.sequential_palette_writes,
            dt: self.dt,
            stages: self.stages,
        };
        (left, right)
    }

    /// Runs in parallel: halves of the run (rayon `join`, cut at the multiple of 8
    /// nearest the middle) down to at most `grain` entities per task (0 is read as 1), each
    /// task with its worker thread's [`ChainScratch`]. Every entity is
    /// computed by one task from the same inputs, so the results do not depend on the
    /// number of threads.
    pub fn run_parallel(self, grain: usize) {
        let len = self.entities.len();
        if len > grain.max(1) {
            // Halves cut at a multiple of LANES where the run is long enough, so that lane
            // groups (jobs 7 and 9 for eight entities at once) stay full.
            let half = len / 2;
            let rounded = (half + LANES / 2) / LANES * LANES;
            let mid = if rounded > 0 && rounded < len {
                rounded
            } else {
                half
            };
            let (left, right) = self.split_at(mid);
            rayon::join(|| left.run_parallel(grain), || right.run_parallel(grain));
            return;
        }
        let mut job = self;
        THREAD_SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut scratch) => job.run(&mut scratch),
            // Only if a caller runs a chain from inside another on this thread.
            Err(_) => job.run(&mut ChainScratch::default()),
        });
    }
}

/// Job 9: the run's entity `i`'s palette from its model matrices, into the run's palette
/// piece (which starts at palette entry `palette_base`).
#[allow(clippy::too_many_arguments)] // the run's pieces that job 9 reads, borrowed apart
fn skin(
    skins: Option<&[SkinRef]>,
    palette: &mut [PaletteEntry],
    palette_base: u32,
    i: usize,
    rig: &Arc<Rig>,
    slot: &FrameSlot,
    tables: &mut TableLookup<'_>,
    model: &[Affine3A],
) {
    let Some(skin) = skins.and_then(|s| s.get(i)) else {
        return;
    };
    let Some(table) = tables.get(rig, &skin.mesh) else {
        return;
    };
    let p0 = slot.palette_offset.wrapping_sub(palette_base) as usize;
    let Some(out) = palette.get_mut(p0..p0.saturating_add(slot.palette_count as usize)) else {
        return;
    };
    skin_entity(model, skin, table, out);
}

thread_local! {
    /// Each worker thread's chain buffers.
    static THREAD_SCRATCH: std::cell::RefCell<ChainScratch> =
        std::cell::RefCell::new(ChainScratch::default());
}

/// `s` cut at `mid` (clamped).
fn split<T>(s: &[T], mid: usize) -> (&[T], &[T]) {
    s.split_at(mid.min(s.len()))
}

/// An optional mutable slice cut at `mid` (clamped); `None` gives two `None`s.
fn split_mut<T>(s: Option<&mut [T]>, mid: usize) -> (Option<&mut [T]>, Option<&mut [T]>) {
    match s {
        Some(s) => {
            let (a, b) = s.split_at_mut(mid.min(s.len()));
            (Some(a), Some(b))
        }
        None => (None, None),
    }
}
