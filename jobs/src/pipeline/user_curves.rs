//! Job 5's node: user curves and fired events, then the morph-weights job on the same chunk
//! (animated morph weights are job 5's curves, so they are read while still in cache).

use crate::component::{
    Animations, CurveValues, FiredEvents, FrameSlot, LayerWeights, MorphWeights, RigRef, SkinRef,
};
use crate::error::JobError;
use crate::{MorphWeightsJob, UserCurvesJob};
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
            .read::<SkinRef>()
            .write::<CurveValues>()
            .write::<FiredEvents>()
            .write::<MorphWeights>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let mut q = ctx
            .query::<(
                &Animations,
                &LayerWeights,
                Option<&mut CurveValues>,
                Option<&mut FiredEvents>,
                Option<&SkinRef>,
                Option<&mut MorphWeights>,
            )>()?
            .with::<RigRef>()
            .with::<FrameSlot>();
        q.chunks().into_par_iter().try_for_each(|chunk| {
            let (entities, (animations, layer_weights, curves, events, skins, morphs)) =
                chunk.into_parts();
            let mut job = UserCurvesJob {
                entities,
                animations,
                layer_weights,
                curves,
                events,
            };
            job.validate()?;
            job.run();
            let Some(weights) = morphs else {
                return Ok(());
            };
            let Some(skins) = skins else {
                // Every entity of the chunk lacks SkinRef: the check names the first.
                return match entities.first().zip(weights.first()) {
                    Some((e, w)) => crate::morph_weights::check_morph_weights(*e, None, w),
                    None => Ok(()),
                };
            };
            let mut morph = MorphWeightsJob {
                entities,
                skins,
                curves: job.curves.as_deref(),
                weights,
            };
            morph.validate()?;
            morph.run();
            Ok::<(), JobError>(())
        })?;
        Ok(())
    }
}
