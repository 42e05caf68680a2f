//! The end of job 7: exposed bone entities follow their owner's bone.

use crate::component::{BoneWorld, EntityTransform, ExposedBone, FrameSlot};
use crate::error::JobError;
use crate::frame::ModelPoses;
use glam::Affine3A;
use rayon::prelude::*;
use sinew_runtime::graph::{Access, Node, NodeContext, NodeError};

/// Moves every exposed bone entity to its owner's bone in world space
/// (`owner transform · model[bone]`): the end of job 7.
pub(super) fn update_exposed_bones(
    ctx: &NodeContext<'_>,
    model: &[Affine3A],
) -> Result<(), NodeError> {
    let slots = ctx.view::<FrameSlot>()?;
    let transforms = ctx.view::<EntityTransform>()?;
    let mut q = ctx.query::<(&ExposedBone, &mut BoneWorld)>()?;
    q.chunks().into_par_iter().try_for_each(|chunk| {
        let (entities, (bones, worlds)) = chunk.into_parts();
        for ((e, b), w) in entities.iter().zip(bones).zip(worlds) {
            let slot = slots.get(b.owner).map_err(|_| JobError::BoneOutOfRange {
                job: "propagate (exposed bones)",
                entity: Some(*e),
                bone: b.bone.get(),
                bone_count: 0,
            })?;
            if b.bone.get() >= slot.bone_count as usize {
                return Err(JobError::BoneOutOfRange {
                    job: "propagate (exposed bones)",
                    entity: Some(*e),
                    bone: b.bone.get(),
                    bone_count: slot.bone_count as usize,
                });
            }
            let m = model
                .get(slot.bone_offset as usize + b.bone.get())
                .copied()
                .ok_or(JobError::LengthMismatch {
                    job: "propagate (exposed bones)",
                    buffer: "model poses (fused pipelines need keep_model_poses)",
                    expected: slot.bone_offset as usize + b.bone.get() + 1,
                    actual: model.len(),
                })?;
            let owner = transforms
                .get(b.owner)
                .map_or(Affine3A::IDENTITY, |t| t.0.to_affine());
            w.0 = owner * m;
        }
        Ok::<(), JobError>(())
    })?;
    Ok(())
}

/// Job 7's exposed-bone step as its own node, after the fused chain.
#[derive(Debug)]
pub(super) struct ExposedBonesNode;

impl Node for ExposedBonesNode {
    fn name(&self) -> &str {
        "7 exposed bones"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<FrameSlot>()
            .read::<ModelPoses>()
            .read::<EntityTransform>()
            .read::<ExposedBone>()
            .write::<BoneWorld>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let model = ctx.resource::<ModelPoses>()?;
        update_exposed_bones(ctx, &model.0)
    }
}
