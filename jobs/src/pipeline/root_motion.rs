//! Job 6's node (staged pipeline): root motion on the crowd's local poses.

use super::FrameTime;
use super::frame_ranges::*;
use crate::RootMotionJob;
use crate::component::{Animations, EntityTransform, FrameSlot, LayerWeights, RigRef, RootMotion};
use crate::frame::LocalPoses;
use sinew_runtime::graph::{Access, Node, NodeContext, NodeError};

/// Job 6's node.
#[derive(Debug)]
pub(super) struct RootMotionNode;

impl Node for RootMotionNode {
    fn name(&self) -> &str {
        "6 root motion"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<RigRef>()
            .read::<Animations>()
            .read::<LayerWeights>()
            .read::<FrameSlot>()
            .read::<FrameTime>()
            .write::<RootMotion>()
            .write::<EntityTransform>()
            .write::<LocalPoses>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let dt = ctx.resource::<FrameTime>()?.dt;
        let mut q = ctx.query::<(
            &RigRef,
            &Animations,
            &LayerWeights,
            &FrameSlot,
            &mut RootMotion,
            Option<&mut EntityTransform>,
        )>()?;
        let chunks = q.chunks();
        let mut poses = ctx.resource_mut::<LocalPoses>()?;
        per_chunk_piece(
            chunks,
            &mut poses.0,
            bone_range,
            "root motion",
            |chunk, poses, (base, _)| {
                let (entities, (rigs, animations, layer_weights, slots, motion, transforms)) =
                    chunk.into_parts();
                let mut job = RootMotionJob {
                    entities,
                    rigs,
                    animations,
                    layer_weights,
                    slots,
                    motion,
                    transforms,
                    poses,
                    pose_base: base as u32,
                    dt,
                };
                job.validate()?;
                job.run();
                Ok(())
            },
        )
    }
}
