//! Jobs 4, 6, 7 and 9 fused per entity: the default pose chain's node.

use super::FrameTime;
use super::frame_ranges::*;
use crate::component::{
    Animations, EntityTransform, FrameSlot, LayerWeights, RigRef, RootMotion, SamplingCursors,
    SkinRef,
};
use crate::frame::{
    FrameOffsets, FrameSpans, LocalPoses, ModelPoses, PaletteBuffer, PaletteDestination,
    PaletteEntry, resize_frame_buffer, split_ranges,
};
use crate::j8_remap_cache::RemapCache;
use crate::pose_chain::{ChunkStages, PoseChainJob};
use crate::pose_stage::{CheckedChunks, PoseStages, bind_chunk};
use glam::Affine3A;
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
        let sequential_palette_writes = target.is_lent();
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
        let ids: Vec<_> = chunks
            .iter()
            .map(|c| (c.archetype_id(), c.chunk_id()))
            .collect();
        let bound: Vec<_> = (ids.iter())
            .map(|&(a, c)| bind_chunk(&views, ctx.scratch(), a, c, |_| true))
            .collect();
        // Stages whose last check of a chunk still holds (its input and rig columns unwritten
        // since) are not checked again.
        let checks = self.checked.of_store(ctx.store_id());
        let checked: Vec<&[bool]> = (chunks.iter().zip(&bound))
            .map(|(c, stages)| {
                let rigs = c.changed_frame::<RigRef>();
                let (a, id) = (c.archetype_id(), c.chunk_id());
                let holds = stages.iter().map(|s| checks.holds(*s, a, id, rigs));
                bumpalo::collections::Vec::from_iter_in(holds, ctx.scratch()).into_bump_slice()
            })
            .collect();
        let bone_ranges: Vec<(usize, usize)> = chunks
            .iter()
            .map(|c| slot_range(c.read_column::<FrameSlot>().unwrap_or(&[]), bone_range))
            .collect();
        let model_pieces: Vec<Option<&mut [Affine3A]>> = if self.keep_model_poses {
            resize_frame_buffer(&mut model.0, totals.bones as usize);
            split_ranges(&mut model.0, &bone_ranges)
                .ok_or_else(|| NodeError::new("pose chain: bone ranges do not fit model poses"))?
                .into_iter()
                .map(Some)
                .collect()
        } else {
            model.0.clear();
            chunks.iter().map(|_| None).collect()
        };
        let palette_ranges: Vec<(usize, usize)> = chunks
            .iter()
            .map(|c| slot_range(c.read_column::<FrameSlot>().unwrap_or(&[]), palette_range))
            .collect();
        let palette_pieces = split_ranges(palette, &palette_ranges)
            .ok_or_else(|| NodeError::new("pose chain: palette ranges do not fit the palette"))?;
        let (remap, batch) = (&*remap, self.batch);
        let jobs: Vec<PoseChainJob<'_>> = chunks
            .into_iter()
            .zip(model_pieces)
            .zip(palette_pieces)
            .zip(bone_ranges)
            .zip(palette_ranges)
            .zip(bound.iter().zip(&checked))
            .map(
                |(((((chunk, model), palette), bones), pal), (stages, checked))| {
                    let (entities, parts) = chunk.into_parts();
                    let (
                        rigs,
                        animations,
                        layer_weights,
                        slots,
                        cursors,
                        skins,
                        motion,
                        transforms,
                    ) = parts;
                    PoseChainJob {
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
                    }
                },
            )
            .collect();
        // Every chunk is checked before any runs: a failing frame moves no entity, cursor or
        // root-motion accumulator.
        jobs.par_iter().try_for_each(PoseChainJob::validate)?;
        let frame = ctx.frame();
        for (&(a, c), stages) in ids.iter().zip(&bound) {
            for &stage in *stages {
                checks.record(stage, a, c, frame);
            }
        }
        jobs.into_par_iter().for_each(|job| job.run_parallel(batch));
        Ok(())
    }
}
