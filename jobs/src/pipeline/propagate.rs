//! Job 7's node (staged pipeline): model matrices, then exposed bone entities.

use super::exposed_bones::update_exposed_bones;
use super::frame_ranges::*;
use crate::PropagateJob;
use crate::component::{
    Animations, BoneWorld, EntityTransform, ExposedBone, FrameSlot, LayerWeights, RigRef,
};
use crate::frame::{LocalPoses, ModelPoses, resize_frame_buffer};
use sinew_runtime::graph::{Access, Node, NodeContext, NodeError};

#[derive(Debug)]
pub(super) struct PropagateNode;

impl Node for PropagateNode {
    fn name(&self) -> &str {
        "7 propagate"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<RigRef>()
            .read::<Animations>()
            .read::<LayerWeights>()
            .read::<FrameSlot>()
            .read::<LocalPoses>()
            .read::<EntityTransform>()
            .read::<ExposedBone>()
            .write::<ModelPoses>()
            .write::<BoneWorld>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let local = ctx.resource::<LocalPoses>()?;
        let mut model = ctx.resource_mut::<ModelPoses>()?;
        resize_frame_buffer(&mut model.0, local.0.len());
        {
            let mut q = ctx
                .query::<(&RigRef, &FrameSlot)>()?
                .with::<Animations>()
                .with::<LayerWeights>();
            let chunks = q.chunks();
            let local = &local.0;
            per_chunk_piece(
                chunks,
                &mut model.0,
                bone_range,
                "propagate",
                |chunk, model, (a, b)| {
                    let (entities, (rigs, slots)) = chunk.into_parts();
                    let local = local.get(a..b).unwrap_or(&[]);
                    let mut job = PropagateJob {
                        entities,
                        rigs,
                        slots,
                        local,
                        model,
                        base: a as u32,
                    };
                    job.validate()?;
                    job.run();
                    Ok(())
                },
            )?;
        }
        update_exposed_bones(ctx, &model.0)
    }
}
