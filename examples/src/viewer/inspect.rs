//! What the picked character's foot placement did. The pose stages keep no per-entity output;
//! the standalone [`FootPlacementJob`] returns it. So the viewer installs one more stage before
//! the crowd's ([`crate::ground::stages_after`]), whose input, [`Inspected`], only the picked
//! character has: on that one entity it copies the frame's model matrices (job 7's, before
//! any stage edits them) and runs the job on the copy, over the same ground, with the same
//! placement. The stage edits nothing, so the palettes are those of the crowd without it, and
//! the job is the stage's own solve, so its result is what the foot placement stage did.

use crate::ground::Waves;
use sinew_jobs::asset::{Rig, Transform};
use sinew_jobs::ik::{FootPlacement, FootPlacementJob, FootPlacementResult};
use sinew_jobs::pose_stage::{PoseStage, StageError, StagePose};
use sinew_runtime::store::Entity;
use std::sync::{Arc, Mutex};

/// The input of [`InspectStage`]: the picked character's foot placement (its
/// [`FootPlacement`] component's value).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Inspected(pub(crate) FootPlacement);

/// The foot placement of one entity in one frame, as [`FootPlacementJob`] returns it (or its
/// `validate()` error).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FeetReport {
    pub(crate) entity: Entity,
    pub(crate) result: Result<FootPlacementResult, StageError>,
}

/// Where [`InspectStage`] leaves its report for the viewer to read after the frame.
pub(crate) type ReportSlot = Arc<Mutex<Option<FeetReport>>>;

/// Runs [`FootPlacementJob`] on a copy of the inspected entity's pre-stage matrices.
#[derive(Debug, Default)]
pub(crate) struct InspectStage {
    report: ReportSlot,
}

impl InspectStage {
    /// The stage, and the slot it reports into.
    pub(crate) fn new() -> (Self, ReportSlot) {
        let report = ReportSlot::default();
        (
            Self {
                report: Arc::clone(&report),
            },
            report,
        )
    }
}

impl PoseStage for InspectStage {
    type Input = Inspected;

    fn name(&self) -> &str {
        "inspect (viewer)"
    }

    /// Nothing to refuse: the foot placement stage checks the same placement on the same
    /// entity, and the job's `validate()` runs in `apply`.
    fn check(&self, _rig: &Rig, _input: &Inspected) -> Result<(), StageError> {
        Ok(())
    }

    fn apply(&self, input: &Inspected, pose: &mut StagePose<'_>) {
        let mut model = pose.model.to_vec();
        let mut job = FootPlacementJob {
            parents: pose.rig.parent_indices(),
            model: &mut model,
            transform: pose.transform.copied().unwrap_or(Transform::IDENTITY),
            placement: &input.0,
            ground: &Waves,
        };
        let result = job.validate().map(|()| job.run());
        // A poisoned slot only loses this frame's report: the viewer shows none.
        if let Ok(mut slot) = self.report.lock() {
            *slot = Some(FeetReport {
                entity: pose.entity,
                result,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests unwrap: a failure is the test failing
    use super::*;
    use crate::ground::{Procedural, spawn_test_crowd, stages, stages_after};
    use glam::Vec3;
    use sinew_fixtures::builtin;
    use sinew_jobs::animator::Animator;
    use sinew_jobs::asset::AssetRegistry;
    use sinew_jobs::component::{EntityTransform, FrameSlot};
    use sinew_jobs::frame::ModelPoses;
    use sinew_jobs::pipeline::{PipelineConfig, PoseChain};
    use sinew_jobs::pose_stage::PoseStages;
    use sinew_runtime::store::Store;

    /// The inspected character's report matches the frame: its pelvis stands
    /// `pelvis_offset` higher (world units) than the same character's pelvis in the same
    /// crowd without stages, and a planted foot is reached. Palettes with the inspect stage are
    /// bit for bit those without it.
    #[test]
    fn the_report_is_what_the_foot_placement_stage_did() {
        let c = builtin::bake_character(&AssetRegistry::new()).unwrap();
        let procedural = Procedural::for_rig(&c.rig, Vec3::new(0.0, 1.7, -10.0)).unwrap();
        let config = PipelineConfig {
            pose_chain: PoseChain::FUSED_KEEPING_MODEL_POSES,
            ..PipelineConfig::default()
        };
        let inspected = 5;
        // (with the stages, with the inspect stage) → store, entities, animator, report slot
        let crowd = |with_stages: bool, inspect: bool| {
            let mut store = Store::new();
            let entities = spawn_test_crowd(&c, &mut store, 12, 4, (2.0, 2.0));
            let (stage, slot) = InspectStage::new();
            let stages = match (with_stages, inspect) {
                (false, _) => PoseStages::new(),
                (true, false) => stages(),
                (true, true) => {
                    let feet = *procedural.feet();
                    store.insert(entities[inspected], Inspected(feet)).unwrap();
                    stages_after(PoseStages::new().with(stage))
                }
            };
            if with_stages {
                procedural.equip_all(&mut store, &entities).unwrap();
            }
            let animator = Animator::with_stages(&mut store, config, &stages, |_, _| {}).unwrap();
            (store, entities, animator, slot)
        };
        let (mut probed, entities, mut with_probe, slot) = crowd(true, true);
        let (mut placed, placed_entities, mut without_probe, _) = crowd(true, false);
        let (mut flat, flat_entities, mut flat_animator, _) = crowd(false, false);
        let pelvis_y = |store: &Store, e: Entity| {
            let slot = store.get::<FrameSlot>(e).unwrap();
            let world = store.get::<EntityTransform>(e).unwrap().0.to_affine();
            let model = &store.resource::<ModelPoses>().unwrap().0;
            let m = model[slot.bone_offset as usize + procedural.feet().pelvis];
            world.transform_point3(m.translation.into()).y
        };
        let (mut reached_frames, mut largest) = (0, 0.0f32);
        for frame in 0..30 {
            with_probe.run_frame(&mut probed, 1.0 / 30.0).unwrap();
            without_probe.run_frame(&mut placed, 1.0 / 30.0).unwrap();
            flat_animator.run_frame(&mut flat, 1.0 / 30.0).unwrap();
            // Per entity: the inspected one sits in another archetype, so the packing differs.
            let palette = |store: &Store, animator: &Animator, e: Entity| {
                let slot = store.get::<FrameSlot>(e).unwrap();
                let start = slot.palette_offset as usize;
                animator.palettes(store)[start..start + c.mesh.bone_count()].to_vec()
            };
            for (&e, &pe) in entities.iter().zip(&placed_entities) {
                assert_eq!(
                    palette(&probed, &with_probe, e),
                    palette(&placed, &without_probe, pe),
                    "frame {frame}"
                );
            }
            let report = slot.lock().unwrap().take().unwrap();
            assert_eq!(report.entity, entities[inspected]);
            let result = report.result.unwrap();
            let e = entities[inspected];
            let moved = pelvis_y(&probed, e) - pelvis_y(&flat, flat_entities[inspected]);
            assert!(
                (moved - result.pelvis_offset).abs() < 1e-4,
                "frame {frame}: pelvis moved {moved}, reported {}",
                result.pelvis_offset
            );
            reached_frames += usize::from(result.reached.contains(&true));
            largest = largest.max(result.pelvis_offset.abs());
        }
        assert_eq!(reached_frames, 30);
        // The waves move the pelvis by centimetres, so the agreement above is not 0 = 0.
        assert!(largest > 0.005, "{largest}");
    }
}
