//! Jobs 4, 6, 7 and 9 fused per entity: the default pose chain's node.

use super::FrameTime;
use super::frame_ranges::*;
use crate::component::{
    Animations, EntityTransform, FrameSlot, LayerWeights, RigRef, RootMotion, SamplingCursors,
    SkinRef,
};
use crate::frame::{
    FrameOffsets, FrameSpans, LocalPoses, ModelPoses, PaletteBuffer, PaletteDestination,
    PaletteEntry, Pieces, resize_frame_buffer,
};
use crate::j8_remap_cache::RemapCache;
use crate::pose_chain::{ChunkStages, PoseChainJob};
use crate::pose_stage::{CheckedChunks, PoseStages, bind_chunk};
use rayon::prelude::*;
use sinew_runtime::graph::{Access, Node, NodeContext, NodeError};
use sinew_runtime::store::ScopedSlice;

/// parallel through [`PoseChainJob`].
#[derive(Debug)]
pub(super) struct PoseChainNode {
    pub(super) batch: usize,
    pub(super) keep_model_poses: bool,
    /// Stages between job 7 and job 9; the node reads their inputs.
    pub(super) stages: PoseStages,
    /// When each stage last checked each chunk (a check that still holds is not run again).
    pub(super) checked: CheckedChunks,
}

impl Node for PoseChainNode {
    fn name(&self) -> &str {
        super::PipelineNodes::FUSED_CHAIN_NAME
    }
    fn access(&self) -> Access {
        self.stages
            .declare(Access::new())
            .read::<RigRef>()
            .read::<SkinRef>()
            .read::<Animations>()
            .read::<LayerWeights>()
            .read::<FrameSlot>()
            .read::<FrameOffsets>()
            .read::<FrameTime>()
            .read::<RemapCache>()
            .write::<SamplingCursors>()
            .write::<RootMotion>()
            .write::<EntityTransform>()
            .write::<ModelPoses>()
            .write::<LocalPoses>()
            .write::<FrameSpans>()
            .write::<ScopedSlice<PaletteEntry>>()
            .write::<PaletteBuffer>()
            .read::<PaletteDestination>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        // Local poses and spans live in the workers' scratch: nothing stale stays readable.
        ctx.resource_mut::<LocalPoses>()?.0.clear();
        ctx.resource_mut::<FrameSpans>()?.0.clear();
        let dt = ctx.resource::<FrameTime>()?.dt;
        let remap = ctx.resource::<RemapCache>()?;
        let totals = ctx.resource::<FrameOffsets>()?.total;
        let mut model = ctx.resource_mut::<ModelPoses>()?;
        let mut target = PaletteTarget::borrow(ctx, "pose chain")?;
        let sequential_palette_writes = target.is_write_combined();
        let palette = target.slice("pose chain", totals.palette as usize)?;
        let mut q = ctx.query::<(
            &RigRef,
            &Animations,
            &LayerWeights,
            &FrameSlot,
            Option<&mut SamplingCursors>,
            Option<&SkinRef>,
            Option<&mut RootMotion>,
            Option<&mut EntityTransform>,
        )>()?;
        let chunks = q.chunks();
        let views = self.stages.views(ctx)?;
        // Stages whose last check of a chunk still holds (its input and rig columns unwritten
        // since) are not checked again.
        let checks = self.checked.of_store(ctx.store_id());
        let mut model_pieces = if self.keep_model_poses {
            resize_frame_buffer(&mut model.0, totals.bones as usize);
            Some(Pieces::new(&mut model.0[..]))
        } else {
            model.0.clear();
            None
        };
        let mut palette_pieces = Pieces::new(palette);
        let (remap, batch) = (&*remap, self.batch);
        // One job per chunk, with the chunk's pieces of the model and palette buffers.
        let mut jobs = Vec::with_capacity(chunks.len());
        let mut bound = bumpalo::collections::Vec::with_capacity_in(chunks.len(), ctx.scratch());
        for chunk in chunks {
            let slots = chunk.read_column::<FrameSlot>().unwrap_or(&[]);
            let (bones, pal) = (
                slot_range(slots, bone_range),
                slot_range(slots, palette_range),
            );
            let model = match &mut model_pieces {
                Some(pieces) => Some(pieces.take(bones).ok_or_else(|| {
                    NodeError::new("pose chain: bone ranges do not fit model poses")
                })?),
                None => None,
            };
            let palette = palette_pieces.take(pal).ok_or_else(|| {
                NodeError::new("pose chain: palette ranges do not fit the palette")
            })?;
            let (archetype, chunk_id) = (chunk.archetype_id(), chunk.chunk_id());
            let stages = bind_chunk(&views, ctx.scratch(), archetype, chunk_id, |_| true);
            let rigs = chunk.changed_frame::<RigRef>();
            let holds = stages
                .iter()
                .map(|s| checks.holds(*s, archetype, chunk_id, rigs));
            let checked =
                bumpalo::collections::Vec::from_iter_in(holds, ctx.scratch()).into_bump_slice();
            bound.push((archetype, chunk_id, stages));
            let (entities, parts) = chunk.into_parts();
            let (rigs, animations, layer_weights, slots, cursors, skins, motion, transforms) =
                parts;
            jobs.push(PoseChainJob {
                entities,
                rigs,
                animations,
                layer_weights,
                slots,
                cursors,
                skins,
                motion,
                transforms,
                remap,
                model,
                model_base: bones.0 as u32,
                palette,
                palette_base: pal.0 as u32,
                sequential_palette_writes,
                dt,
                stages: ChunkStages::new(stages, checked),
            });
        }
        // Every chunk is checked before any runs: a failing frame moves no entity, cursor or
        // root-motion accumulator.
        jobs.par_iter().try_for_each(PoseChainJob::validate)?;
        let frame = ctx.frame();
        for &(a, c, stages) in &bound {
            for &stage in stages {
                checks.record(stage, a, c, frame);
            }
        }
        jobs.into_par_iter().for_each(|job| job.run_parallel(batch));
        Ok(())
    }
}
