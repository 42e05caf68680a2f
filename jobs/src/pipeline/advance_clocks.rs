//! The clock node: advances every animation by the frame time before job 1.

use super::FrameTime;
use crate::component::Animations;
use sinew_runtime::graph::{Access, Node, NodeContext, NodeError};

#[derive(Debug)]
pub(super) struct AdvanceClocksNode;

impl Node for AdvanceClocksNode {
    fn name(&self) -> &str {
        "advance clocks"
    }
    fn access(&self) -> Access {
        Access::new().read::<FrameTime>().write::<Animations>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let dt = ctx.resource::<FrameTime>()?.dt;
        let mut q = ctx.query::<&mut Animations>()?;
        q.par_for_each_chunk(|chunk| {
            for a in chunk.into_columns() {
                a.advance(dt);
            }
        });
        Ok(())
    }
}
