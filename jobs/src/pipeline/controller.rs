//! The controller nodes: state machines advanced before job 1 (they write the animation list
//! every later job reads), and their events appended after job 5's clip events.

use super::FrameTime;
use crate::component::{
    Animations, CurveValues, EventSource, FiredEvent, FiredEvents, FrameSlot, LayerWeights, RigRef,
};
use crate::controller::{ControllerError, ControllerJob, ControllerState, state_machine_checks};
use rayon::prelude::*;
use sinew_runtime::graph::{Access, Node, NodeContext, NodeError};

/// Advances every entity's [`ControllerState`] and rewrites its `Animations` and
/// `LayerWeights`; one task per store chunk (a few hundred operations per entity).
#[derive(Debug)]
pub(super) struct ControllerNode;

impl Node for ControllerNode {
    fn name(&self) -> &str {
        "controller"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<FrameTime>()
            .read::<RigRef>()
            .read::<FrameSlot>()
            .read::<CurveValues>()
            .write::<ControllerState>()
            .write::<Animations>()
            .write::<LayerWeights>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let dt = ctx.resource::<FrameTime>()?.dt;
        // Every entity is checked before any state machine moves.
        let mut check = ctx
            .query::<(&RigRef, &ControllerState)>()?
            .with::<Animations>()
            .with::<LayerWeights>()
            .with::<FrameSlot>();
        let checked = check.chunks();
        if checked.is_empty() {
            // No entity has a controller (the advance below queries the same entities).
            return Ok(());
        }
        checked.into_par_iter().try_for_each(|chunk| {
            let (entities, (rigs, states)) = chunk.into_parts();
            state_machine_checks(entities, rigs, states, dt)
        })?;
        drop(check);
        let mut q = ctx
            .query::<(
                &RigRef,
                &mut ControllerState,
                &mut Animations,
                &mut LayerWeights,
                Option<&CurveValues>,
            )>()?
            .with::<FrameSlot>();
        q.chunks().into_par_iter().try_for_each(|chunk| {
            let (entities, (rigs, states, animations, layer_weights, curves)) = chunk.into_parts();
            let mut job = ControllerJob {
                entities,
                rigs,
                states,
                animations,
                layer_weights,
                curves,
                dt,
            };
            job.validate()?;
            job.run();
            Ok::<(), ControllerError>(())
        })?;
        Ok(())
    }
}

/// Appends each controller's events of the frame to the entity's `FiredEvents`, after job 5
/// has cleared it and fired the clip events.
#[derive(Debug)]
pub(super) struct ControllerEventsNode;

impl Node for ControllerEventsNode {
    fn name(&self) -> &str {
        "controller events"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<ControllerState>()
            .write::<FiredEvents>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let mut q = ctx
            .query::<(&ControllerState, &mut FiredEvents)>()?
            .with::<Animations>();
        q.par_for_each_chunk(|chunk| {
            let (states, fired) = chunk.into_columns();
            for (s, f) in states.iter().zip(fired.iter_mut()) {
                f.0.extend(s.events().iter().map(|e| FiredEvent {
                    name: e.name,
                    time: e.time,
                    payload: e.payload,
                    animation: u16::MAX,
                    weight: e.weight,
                    source: EventSource::Controller {
                        layer: e.layer,
                        kind: e.kind,
                    },
                }));
            }
        });
        Ok(())
    }
}
