//! The pose stages' nodes (staged pipeline): the local stages after job 4 and after job 6 over
//! [`LocalPoses`], the model stages between job 7 and job 9 over [`ModelPoses`].

use super::frame_ranges::*;
use crate::asset::{Rig, Transform};
use crate::component::{Animations, EntityTransform, FrameSlot, LayerWeights, RigRef};
use crate::frame::{LocalPoses, ModelPoses, split_ranges};
use crate::pose_stage::{
    CheckedChunks, ChunkStage, LocalPose, LocalPoseMut, LocalStagePose, PoseStages, StagePoint,
    StagePose, bind_chunk,
};
use rayon::prelude::*;
use sinew_runtime::graph::{Access, Node, NodeContext, NodeError};
use sinew_runtime::store::Entity;
use std::ops::Range;

#[derive(Debug)]
pub(super) struct PoseStagesNode {
    pub(super) stages: PoseStages,
    /// Which of the stages this node runs.
    pub(super) point: StagePoint,
    /// When each stage last checked each chunk (a check that still holds is not run again).
    pub(super) checked: CheckedChunks,
}

impl PoseStagesNode {
    pub(super) const NAME: &'static str = "pose stages";
    const AFTER_SAMPLING: &'static str = "pose stages after sampling";
    const AFTER_ROOT_MOTION: &'static str = "pose stages after root motion";
}

impl Node for PoseStagesNode {
    fn name(&self) -> &str {
        match self.point {
            StagePoint::Sampled => Self::AFTER_SAMPLING,
            StagePoint::RootMoved => Self::AFTER_ROOT_MOTION,
            StagePoint::Propagated => Self::NAME,
        }
    }
    fn access(&self) -> Access {
        let access = self
            .stages
            .declare(Access::new())
            .read::<RigRef>()
            .read::<Animations>()
            .read::<LayerWeights>()
            .read::<FrameSlot>()
            .read::<EntityTransform>();
        match self.point {
            StagePoint::Propagated => access.read::<LocalPoses>().write::<ModelPoses>(),
            StagePoint::Sampled | StagePoint::RootMoved => access.write::<LocalPoses>(),
        }
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let views = self.stages.views(ctx)?;
        let mut q = ctx
            .query::<(&RigRef, &FrameSlot, Option<&EntityTransform>)>()?
            .with::<Animations>()
            .with::<LayerWeights>();
        let chunks = q.chunks();
        let point = self.point;
        let bound: Vec<_> = chunks
            .iter()
            .map(|c| {
                let (a, k) = (c.archetype_id(), c.chunk_id());
                bind_chunk(&views, ctx.scratch(), a, k, |p| p == point)
            })
            .collect();
        let ranges: Vec<(usize, usize)> = chunks
            .iter()
            .map(|c| slot_range(c.read_column::<FrameSlot>().unwrap_or(&[]), bone_range))
            .collect();
        // Per chunk: its ids, and per bound stage whether its last check still holds.
        let checks = self.checked.of_store(ctx.store_id());
        let held: Vec<_> = (chunks.iter().zip(&bound))
            .map(|(c, stages)| {
                let (a, k, rigs) = (c.archetype_id(), c.chunk_id(), c.changed_frame::<RigRef>());
                let holds: Vec<bool> = stages
                    .iter()
                    .map(|s| checks.holds(*s, a, k, rigs))
                    .collect();
                (a, k, holds)
            })
            .collect();
        let rows: Vec<_> = chunks.into_iter().map(|c| c.into_parts()).collect();
        // Every entity is checked before any moves.
        rows.par_iter().zip(&bound).zip(&held).try_for_each(
            |(((entities, (rigs, _, _)), stages), (_, _, holds))| {
                for (stage, &holds) in stages.iter().zip(holds) {
                    if !holds {
                        stage.check_rows(0, entities, rigs)?;
                    }
                }
                Ok::<_, NodeError>(())
            },
        )?;
        let frame = ctx.frame();
        for (&(a, k, _), stages) in held.iter().zip(&bound) {
            for &stage in *stages {
                checks.record(stage, a, k, frame);
            }
        }
        if point != StagePoint::Propagated {
            let mut local = ctx.resource_mut::<LocalPoses>()?;
            let pieces = split_ranges(&mut local.0, &ranges)
                .ok_or_else(|| NodeError::new("pose stages: bone ranges do not fit local poses"))?;
            each_entity(rows, pieces, &ranges, &bound, |visit, local| {
                let mut pose = LocalStagePose {
                    entity: visit.entity,
                    rig: visit.rig,
                    local: LocalPoseMut::aos(local),
                    transform: visit.transform,
                };
                for stage in visit.stages {
                    stage.apply_local(visit.row, &mut pose);
                }
            });
            return Ok(());
        }
        let local = ctx.resource::<LocalPoses>()?;
        let mut model = ctx.resource_mut::<ModelPoses>()?;
        let pieces = split_ranges(&mut model.0, &ranges)
            .ok_or_else(|| NodeError::new("pose stages: bone ranges do not fit model poses"))?;
        let local = &local.0;
        each_entity(rows, pieces, &ranges, &bound, |visit, model| {
            let Some(local) = local.get(visit.bones.clone()) else {
                return;
            };
            let mut pose = StagePose {
                entity: visit.entity,
                rig: visit.rig,
                local: LocalPose::aos(local),
                model,
                transform: visit.transform,
            };
            for stage in visit.stages {
                stage.apply(visit.row, std::slice::from_mut(&mut pose));
            }
        });
        Ok(())
    }
}

/// One entity of a chunk that binds stages, for [`each_entity`]'s closure.
struct EntityVisit<'a> {
    stages: &'a [&'a dyn ChunkStage],
    row: usize,
    entity: Entity,
    rig: &'a Rig,
    transform: Option<&'a Transform>,
    /// Its flat bones.
    bones: Range<usize>,
}

/// Calls `visit` for every entity of every chunk that binds a stage, in parallel over chunks,
/// with the entity's piece of the flat buffer split into `pieces` (chunk `k`'s piece covers
/// flat bones `ranges[k]`).
fn each_entity<'a, T: Send>(
    rows: Vec<ChunkRows<'a>>,
    pieces: Vec<&mut [T]>,
    ranges: &[(usize, usize)],
    bound: &'a [&'a [&'a dyn ChunkStage]],
    visit: impl Fn(&EntityVisit<'_>, &mut [T]) + Sync,
) {
    rows.into_par_iter()
        .zip(pieces)
        .zip(ranges)
        .zip(bound)
        .for_each(
            |((((entities, (rigs, slots, transforms)), piece), range), stages)| {
                if stages.is_empty() {
                    return;
                }
                for (row, ((&entity, rig), slot)) in
                    entities.iter().zip(rigs).zip(slots).enumerate()
                {
                    let start = slot.bone_offset as usize;
                    let bones = start..start + slot.bone_count as usize;
                    let local = bones.start.wrapping_sub(range.0)..bones.end.wrapping_sub(range.0);
                    let Some(own) = piece.get_mut(local) else {
                        continue;
                    };
                    let entity = EntityVisit {
                        stages,
                        row,
                        entity,
                        rig: &rig.0,
                        transform: transforms.and_then(|t| t.get(row)).map(|t| &t.0),
                        bones,
                    };
                    visit(&entity, own);
                }
            },
        );
}

/// A chunk's entities and the columns the stage nodes read.
type ChunkRows<'a> = (
    &'a [Entity],
    (&'a [RigRef], &'a [FrameSlot], Option<&'a [EntityTransform]>),
);
