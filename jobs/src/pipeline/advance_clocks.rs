//! The clock node: advances every animation by the frame time before job 1.

use super::FrameTime;
use crate::component::{Animations, FrameSlot, LayerWeights, MorphWeights, RigRef, SkinRef};
use crate::error::JobError;
use crate::j1_bone_offsets::{validate_animations, validate_skin};
use crate::morph_weights::check_morph_weights;
use rayon::prelude::*;
use sinew_runtime::graph::{Access, Node, NodeContext, NodeError};

#[derive(Debug)]
pub(super) struct AdvanceClocksNode;

impl Node for AdvanceClocksNode {
    fn name(&self) -> &str {
        "advance clocks"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<FrameTime>()
            .read::<RigRef>()
            .read::<SkinRef>()
            .read::<LayerWeights>()
            .read::<FrameSlot>()
            .read::<MorphWeights>()
            .write::<Animations>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let dt = ctx.resource::<FrameTime>()?.dt;
        // Job 1's binding checks need no times, so they run here first: a frame that fails on
        // a bad binding fails before any clock moves (the frame is transactional).
        let mut check = ctx
            .query::<(
                &RigRef,
                &Animations,
                Option<&SkinRef>,
                Option<&MorphWeights>,
            )>()?
            .with::<LayerWeights>()
            .with::<FrameSlot>();
        check.chunks().into_par_iter().try_for_each(|chunk| {
            let (entities, (rigs, animations, skins, morphs)) = chunk.into_parts();
            for (i, ((&entity, rig), a)) in entities.iter().zip(rigs).zip(animations).enumerate() {
                validate_animations(entity, rig, a)?;
                let skin = skins.and_then(|s| s.get(i));
                validate_skin(entity, rig, skin)?;
                if let Some(w) = morphs.and_then(|m| m.get(i)) {
                    check_morph_weights(entity, skin, w)?;
                }
                check_advance(entity, a, dt)?;
            }
            Ok::<(), JobError>(())
        })?;
        drop(check);
        let mut q = ctx.query::<&mut Animations>()?;
        q.par_for_each_chunk(|chunk| {
            for a in chunk.into_columns() {
                a.advance(dt);
            }
        });
        Ok(())
    }
}

/// The advanced times stay finite (job 1 would reject them after the clocks moved).
fn check_advance(
    entity: sinew_runtime::store::Entity,
    animations: &Animations,
    dt: f32,
) -> Result<(), JobError> {
    if !dt.is_finite() && !animations.is_empty() {
        return Err(JobError::BadAnimation {
            entity,
            animation: 0,
            reason: format!("frame time {dt} must be finite"),
        });
    }
    for (k, a) in animations.as_slice().iter().enumerate() {
        let next = a.time + a.speed * dt;
        if !next.is_finite() {
            return Err(JobError::BadAnimation {
                entity,
                animation: k,
                reason: format!(
                    "time {} + speed {} · dt {dt} is not finite",
                    a.time, a.speed
                ),
            });
        }
    }
    Ok(())
}
