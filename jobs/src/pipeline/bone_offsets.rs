//! Job 1's node: bone, span and palette counts per entity.

use crate::BoneOffsetsJob;
use crate::component::{Animations, FrameSlot, LayerWeights, RigRef, SkinRef};
use crate::error::JobError;
use crate::frame::{FrameCounts, resize_frame_buffer, split_lengths};
use rayon::prelude::*;
use sinew_runtime::graph::{Access, Node, NodeContext, NodeError};

#[derive(Debug)]
pub(super) struct BoneOffsetsNode;

impl Node for BoneOffsetsNode {
    fn name(&self) -> &str {
        "1 bone offsets"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<RigRef>()
            .read::<SkinRef>()
            .read::<Animations>()
            .read::<LayerWeights>()
            .read::<FrameSlot>()
            .write::<FrameCounts>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let mut q = ctx
            .query::<(&RigRef, &Animations, Option<&SkinRef>)>()?
            .with::<LayerWeights>()
            .with::<FrameSlot>();
        let chunks = q.chunks();
        let mut counts = ctx.resource_mut::<FrameCounts>()?;
        let n: usize = chunks.iter().map(|c| c.len()).sum();
        resize_frame_buffer(&mut counts.0, n);
        let pieces = split_lengths(&mut counts.0, chunks.iter().map(|c| c.len()))
            .ok_or_else(|| NodeError::new("bone offsets: chunk sizes exceed the entity count"))?;
        chunks
            .into_par_iter()
            .zip(pieces)
            .try_for_each(|(chunk, out)| {
                let (entities, (rigs, animations, skins)) = chunk.into_parts();
                let mut job = BoneOffsetsJob {
                    entities,
                    rigs,
                    skins,
                    animations,
                    counts: out,
                };
                job.validate()?;
                job.run();
                Ok::<(), JobError>(())
            })?;
        Ok(())
    }
}
