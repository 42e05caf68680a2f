//! Job 1's node: bone, span and palette counts per entity.

use crate::BoneOffsetsJob;
use crate::component::{Animations, FrameSlot, LayerWeights, RigRef, SkinRef};
use crate::error::JobError;
use crate::frame::{FrameCounts, resize_frame_buffer, split_lengths};
use rayon::prelude::*;
use sinew_runtime::graph::{Access, Node, NodeContext, NodeError};

#[derive(Debug)]
pub(super) struct BoneOffsetsNode;

/// Set by [`Animator`](crate::animator::Animator) before a frame whose clock node checks every
/// entity's bindings with nothing writing them between it and job 1, so that job 1 does not
/// check them a second time. Job 1 clears it as it reads it: a later run of job 1 (the layout,
/// a graph built without the clock) checks for itself.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ClockCheckedBindings(pub(crate) bool);

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
            .write::<ClockCheckedBindings>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let checked = match ctx.resource_mut::<ClockCheckedBindings>() {
            Ok(mut c) => std::mem::take(&mut c.0),
            Err(_) => false,
        };
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
                if checked {
                    job.validate_lengths()?;
                } else {
                    job.validate()?;
                }
                job.run();
                Ok::<(), JobError>(())
            })?;
        Ok(())
    }
}
