//! Job 4's node (staged pipeline): sampling and blending into the crowd's local poses.

use super::frame_ranges::*;
use crate::SampleBlendJob;
use crate::component::{Animations, FrameSlot, LayerWeights, RigRef, SamplingCursors};
use crate::frame::{
    FrameOffsets, FrameSpans, LocalPoses, resize_frame_buffer, split_lengths, split_ranges,
};
use crate::j4_sample_blend::{EntitySampling, resolve_spans};
use rayon::prelude::*;
use sinew_runtime::graph::{Access, Node, NodeContext, NodeError};

/// Job 4's node: spans per entity, then every entity's bones (runs of entities in parallel).
#[derive(Debug)]
pub(super) struct SampleBlendNode {
    pub(super) batch: usize,
}

impl Node for SampleBlendNode {
    fn name(&self) -> &str {
        "4 sample + blend"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<RigRef>()
            .read::<Animations>()
            .read::<LayerWeights>()
            .read::<FrameSlot>()
            .read::<FrameOffsets>()
            .write::<SamplingCursors>()
            .write::<FrameSpans>()
            .write::<LocalPoses>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let mut q = ctx.query::<(
            &RigRef,
            &Animations,
            &LayerWeights,
            &FrameSlot,
            Option<&mut SamplingCursors>,
        )>()?;
        let chunks = q.chunks();
        let offsets = ctx.resource::<FrameOffsets>()?;
        let mut spans = ctx.resource_mut::<FrameSpans>()?;
        let mut poses = ctx.resource_mut::<LocalPoses>()?;
        resize_frame_buffer(&mut spans.0, offsets.total.spans as usize);
        resize_frame_buffer(&mut poses.0, offsets.total.bones as usize);
        let n = offsets.offsets.len();
        let entities: &mut [Option<EntitySampling<'_>>] =
            ctx.scratch().alloc_slice_fill_copy(n, None);

        // Phase one, per chunk: spans and the per-entity table.
        let span_ranges: Vec<(usize, usize)> = chunks
            .iter()
            .map(|c| chunk_range(&offsets, c.first_index(), c.len(), |o| o.spans))
            .collect();
        let span_pieces = split_ranges(&mut spans.0, &span_ranges)
            .ok_or_else(|| NodeError::new("sampling: span ranges do not fit"))?;
        let entity_pieces = split_lengths(entities, chunks.iter().map(|c| c.len()))
            .ok_or_else(|| NodeError::new("sampling: chunk sizes exceed the entity count"))?;
        let offs = &offsets.offsets;
        chunks
            .into_par_iter()
            .zip(span_pieces)
            .zip(entity_pieces)
            .for_each(|((chunk, spans_piece), table_out)| {
                let first = chunk.first_index();
                let span_base = offs.get(first).map_or(0, |o| o.spans as usize);
                let (_, (rigs, animations, layer_weights, _slots, mut cursors)) =
                    chunk.into_parts();
                let mut fallback = SamplingCursors::default();
                for (i, out) in table_out.iter_mut().enumerate() {
                    let (Some(o), Some(rig), Some(anims), Some(lw)) = (
                        offs.get(first + i),
                        rigs.get(i),
                        animations.get(i),
                        layer_weights.get(i),
                    ) else {
                        continue;
                    };
                    let need: usize = anims
                        .as_slice()
                        .iter()
                        .map(|a| a.clip.timelines().len())
                        .sum();
                    let start = o.spans as usize - span_base;
                    let Some(piece) = spans_piece.get_mut(start..start + need) else {
                        continue;
                    };
                    let cursor = match cursors.as_deref_mut().and_then(|c| c.get_mut(i)) {
                        Some(c) => c,
                        None => &mut fallback,
                    };
                    resolve_spans(anims.as_slice(), cursor, piece);
                    *out = Some(EntitySampling {
                        rig: &rig.0,
                        animations: anims.as_slice(),
                        layer_weights: lw.0,
                        span_offset: o.spans,
                        bone_offset: o.bones,
                    });
                }
            });

        // Phase two: every entity's bones, runs of whole entities in parallel.
        let mut job = SampleBlendJob {
            entities,
            spans: &spans.0,
            out: &mut poses.0,
            batch: self.batch,
        };
        job.validate()?;
        job.run();
        Ok(())
    }
}
