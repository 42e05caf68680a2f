//! Job 2's node: the counts' exclusive prefix sums, each entity's offsets.

use crate::PrefixSumJob;
use crate::frame::{FrameCounts, FrameOffsets, resize_frame_buffer};
use sinew_runtime::graph::{Access, Node, NodeContext, NodeError};

/// Job 2's node.
#[derive(Debug)]
pub(super) struct PrefixSumNode;

impl Node for PrefixSumNode {
    fn name(&self) -> &str {
        "2 prefix sum"
    }
    fn access(&self) -> Access {
        Access::new().read::<FrameCounts>().write::<FrameOffsets>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let counts = ctx.resource::<FrameCounts>()?;
        let mut offsets = ctx.resource_mut::<FrameOffsets>()?;
        let FrameOffsets { offsets, total } = &mut *offsets;
        resize_frame_buffer(offsets, counts.0.len());
        let mut job = PrefixSumJob {
            counts: &counts.0,
            offsets,
            total,
            sequential: false,
        };
        job.validate()?;
        job.run();
        Ok(())
    }
}
