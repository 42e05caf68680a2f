//! Job 5's node: user curves and fired events.

use crate::UserCurvesJob;
use crate::component::{Animations, CurveValues, FiredEvents, FrameSlot, LayerWeights, RigRef};
use crate::error::JobError;
use rayon::prelude::*;
use sinew_runtime::graph::{Access, Node, NodeContext, NodeError};

#[derive(Debug)]
pub(super) struct UserCurvesNode;

impl Node for UserCurvesNode {
    fn name(&self) -> &str {
        "5 user curves"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<RigRef>()
            .read::<Animations>()
            .read::<LayerWeights>()
            .read::<FrameSlot>()
            .write::<CurveValues>()
            .write::<FiredEvents>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let mut q = ctx
            .query::<(
                &Animations,
                &LayerWeights,
                Option<&mut CurveValues>,
                Option<&mut FiredEvents>,
            )>()?
            .with::<RigRef>()
            .with::<FrameSlot>();
        q.chunks().into_par_iter().try_for_each(|chunk| {
            let (entities, (animations, layer_weights, curves, events)) = chunk.into_parts();
            let mut job = UserCurvesJob {
                entities,
                animations,
                layer_weights,
                curves,
                events,
            };
            job.validate()?;
            job.run();
            Ok::<(), JobError>(())
        })?;
        Ok(())
    }
}
