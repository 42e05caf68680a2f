//! Pose stages in the pipeline, on the built-in crowd: running them through the hook gives the
//! palettes of the standalone jobs run on the frame's model matrices and then skinned (bit for
//! bit for two-bone IK, to rounding for the lane-parallel foot placement and look-at); the staged pipeline gives the same; 1 and 4 threads give the same; entities without a
//! stage's component keep the palettes of a pipeline without stages; a bad target fails the
//! frame naming the stage and the entity, and changes nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests unwrap: a failure is the test failing

use glam::{Affine3A, Vec3};
use sinew_fixtures::builtin::{self, BakedCharacter};
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{AssetRegistry, Rig, Transform};
use sinew_jobs::component::{EntityTransform, FrameSlot, RigRef, SkinRef};
use sinew_jobs::frame::ModelPoses;
use sinew_jobs::ik::{
    AimIkJob, FootPlacement, FootPlacementJob, FootPlacementStage, GroundQuery, GroundSample, Leg,
    LookAt, LookAtStage, TargetSpace, TwoBoneIk, TwoBoneIkJob, TwoBoneIkStage,
};
use sinew_jobs::j8_remap_cache::RemapCache;
use sinew_jobs::j9_skinning::{TableLookup, skin_entity};
use sinew_jobs::pipeline::{PipelineConfig, PoseChain};
use sinew_jobs::pose_stage::{PoseStage, PoseStages, StageError, StagePose};
use sinew_runtime::store::{Entity, Store};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const N: usize = 48;
const DT: f32 = 1.0 / 60.0;

#[derive(Clone, Copy)]
struct Waves;

impl GroundQuery for Waves {
    fn ground(&self, x: f32, z: f32) -> GroundSample {
        let h = 0.08 * (0.7 * x).sin() + 0.05 * (0.9 * z + 0.3).sin();
        let dx = 0.08 * 0.7 * (0.7 * x).cos();
        let dz = 0.05 * 0.9 * (0.9 * z + 0.3).cos();
        GroundSample {
            height: h,
            normal: Vec3::new(-dx, 1.0, -dz).normalize(),
        }
    }
}

fn bone(rig: &Rig, name: &str) -> usize {
    rig.find_by_name(name).unwrap().get()
}

fn feet(rig: &Rig) -> FootPlacement {
    let leg = |s: &str| Leg {
        hip: bone(rig, &format!("thigh{s}")),
        knee: bone(rig, &format!("shin{s}")),
        ankle: bone(rig, &format!("foot{s}")),
        ankle_height: 0.07,
        knee_axis: Some(Vec3::X),
    };
    FootPlacement {
        pelvis: bone(rig, "hips"),
        legs: [leg("_l"), leg("_r")],
        weight: 1.0,
        max_tilt: 0.5,
    }
}

fn look(rig: &Rig, i: usize) -> LookAt {
    LookAt {
        chain: Arc::from([bone(rig, "head")]),
        share: 0.0,
        target: Vec3::new(4.0 - 0.3 * i as f32, 1.7, 6.0),
        space: TargetSpace::World,
        forward: Vec3::Z,
        up: Vec3::Y,
        offset: Vec3::new(0.0, 0.09, 0.1),
        pole_vector: Some(Vec3::Y),
        weight: 0.8,
        cone: None,
    }
}

fn reach(rig: &Rig, i: usize) -> TwoBoneIk {
    TwoBoneIk {
        pole_vector: Some(Vec3::new(0.0, -0.3, -1.0)),
        weight: 0.9,
        soften: 0.95,
        ..TwoBoneIk::new(
            bone(rig, "upperarm_l"),
            bone(rig, "lowerarm_l"),
            bone(rig, "hand_l"),
            Vec3::new(0.35, 1.2 + 0.01 * i as f32, 0.3),
        )
    }
}

fn stages() -> PoseStages {
    PoseStages::new()
        .with(FootPlacementStage::new(Waves))
        .with(LookAtStage)
        .with(TwoBoneIkStage)
}

/// The built-in crowd spread over the waves; member `i` has foot placement when `i % 4` is 1
/// or 3, a look-at when 2 or 3, an arm reach when 3.
fn spawn(c: &BakedCharacter, store: &mut Store, with_components: bool) -> Vec<Entity> {
    let entities = store
        .spawn_batch((0..N).map(|i| c.crowd_member(i)))
        .unwrap();
    for (i, &e) in entities.iter().enumerate() {
        let place = Vec3::new((i % 7) as f32 * 1.3, 0.0, (i / 7) as f32 * 1.7);
        store
            .insert(
                e,
                EntityTransform(Transform::new(
                    place,
                    glam::Quat::from_rotation_y(0.2 * i as f32),
                    Vec3::ONE,
                )),
            )
            .unwrap();
        if !with_components {
            continue;
        }
        if i % 4 == 1 || i % 4 == 3 {
            store.insert(e, feet(&c.rig)).unwrap();
        }
        if i % 4 >= 2 {
            store.insert(e, look(&c.rig, i)).unwrap();
        }
        if i % 4 == 3 {
            store.insert(e, reach(&c.rig, i)).unwrap();
        }
    }
    entities
}

fn config(pose_chain: PoseChain) -> PipelineConfig {
    PipelineConfig {
        pose_chain,
        ..Default::default()
    }
}

/// Palettes per entity after `frames` frames.
fn run(
    c: &BakedCharacter,
    pose_chain: PoseChain,
    stages: &PoseStages,
    with_components: bool,
    frames: usize,
) -> (Store, Vec<Entity>, Vec<Vec<u32>>) {
    let mut store = Store::new();
    let entities = spawn(c, &mut store, with_components);
    let mut animator =
        Animator::with_stages(&mut store, config(pose_chain), stages, |_, _| {}).unwrap();
    for _ in 0..frames {
        animator.run_frame(&mut store, DT).unwrap();
    }
    let palettes = per_entity_palettes(&store, &animator, &entities);
    (store, entities, palettes)
}

fn per_entity_palettes(store: &Store, animator: &Animator, entities: &[Entity]) -> Vec<Vec<u32>> {
    let all = animator.palettes(store);
    entities
        .iter()
        .map(|&e| {
            let s = store.get::<FrameSlot>(e).unwrap();
            let r = s.palette_offset as usize..(s.palette_offset + s.palette_count) as usize;
            all[r].iter().flatten().map(|x| x.to_bits()).collect()
        })
        .collect()
}

/// How far (any palette component, model units for translations) the batched foot placement
/// and look-at may put a palette from the standalone jobs': rounding of the lane forms (`wide`'s
/// polynomial `atan2` and `sin_cos` for libm's) on a character about 1.8 units tall.
const PALETTE_TOLERANCE: f32 = 2e-5;

#[test]
fn the_hook_gives_the_standalone_jobs_palettes() {
    let c = builtin::bake_character(&AssetRegistry::new()).unwrap();
    let (_, _, hooked) = run(&c, PoseChain::default(), &stages(), true, 3);

    // The reference: the same crowd without stages, model matrices kept, then the standalone
    // jobs on each entity's matrices in the stages' order, then skinning.
    let mut store = Store::new();
    let entities = spawn(&c, &mut store, true);
    let mut animator = Animator::with(
        &mut store,
        config(PoseChain::FUSED_KEEPING_MODEL_POSES),
        |_, _| {},
    )
    .unwrap();
    for _ in 0..3 {
        animator.run_frame(&mut store, DT).unwrap();
    }
    let plain = per_entity_palettes(&store, &animator, &entities);
    let model = store.resource::<ModelPoses>().unwrap().0.clone();
    let remap = store.resource::<RemapCache>().unwrap();
    let mut tables = TableLookup::new(remap);
    let (mut changed, mut worst) = (0, 0.0f32);
    for (i, &e) in entities.iter().enumerate() {
        let slot = *store.get::<FrameSlot>(e).unwrap();
        let rig = store.get::<RigRef>(e).unwrap().0.clone();
        let skin = store.get::<SkinRef>(e).unwrap();
        let transform = store.get::<EntityTransform>(e).unwrap().0;
        let r = slot.bone_offset as usize..(slot.bone_offset + slot.bone_count) as usize;
        let mut m: Vec<Affine3A> = model[r].to_vec();
        let parents = rig.parent_indices();
        if let Ok(p) = store.get::<FootPlacement>(e) {
            let mut job = FootPlacementJob {
                parents,
                model: &mut m,
                transform,
                placement: p,
                ground: &Waves,
            };
            job.validate().unwrap();
            job.run();
        }
        if let Ok(l) = store.get::<LookAt>(e) {
            let target = transform.to_affine().inverse().transform_point3(l.target);
            let mut job = AimIkJob {
                parents,
                model: &mut m,
                joint: l.chain[0],
                target,
                forward: l.forward,
                up: l.up,
                offset: l.offset,
                pole_vector: l.pole_vector,
                weight: l.weight,
            };
            job.validate().unwrap();
            job.run();
        }
        if let Ok(k) = store.get::<TwoBoneIk>(e) {
            let mut job = TwoBoneIkJob {
                parents,
                model: &mut m,
                start: k.start,
                mid: k.mid,
                end: k.end,
                target: k.target,
                pole_vector: k.pole_vector,
                mid_axis: k.mid_axis,
                weight: k.weight,
                soften: k.soften,
                twist_angle: k.twist_angle,
            };
            job.validate().unwrap();
            job.run();
        }
        let table = tables.get(&rig, &skin.mesh).unwrap();
        let mut out = vec![[0.0f32; 12]; slot.palette_count as usize];
        skin_entity(&m, skin, table, &mut out);
        let want: Vec<u32> = out.iter().flatten().map(|x| x.to_bits()).collect();
        assert!(want.iter().all(|&b| f32::from_bits(b).is_finite()));
        if store.get::<FootPlacement>(e).is_ok() || store.get::<LookAt>(e).is_ok() {
            // Solved lane-parallel: the standalone jobs' palettes to rounding.
            let gap = (hooked[i].iter().zip(&want))
                .map(|(&a, &b)| (f32::from_bits(a) - f32::from_bits(b)).abs())
                .fold(0.0f32, f32::max);
            worst = worst.max(gap);
            assert!(gap <= PALETTE_TOLERANCE, "entity {i}: {gap}");
        } else {
            assert_eq!(hooked[i], want, "entity {i}");
        }
        if i % 4 == 0 {
            assert_eq!(hooked[i], plain[i], "entity {i} has no stage component");
        } else if hooked[i] != plain[i] {
            changed += 1;
        }
    }
    // The stages did move the characters that have their components.
    assert_eq!(changed, N - N / 4);
    eprintln!("largest palette gap to the standalone jobs: {worst:e}");
}

#[test]
fn staged_fused_and_thread_counts_agree_bit_for_bit() {
    let c = builtin::bake_character(&AssetRegistry::new()).unwrap();
    let (_, _, fused) = run(&c, PoseChain::default(), &stages(), true, 2);
    let (_, _, staged) = run(&c, PoseChain::Staged, &stages(), true, 2);
    assert_eq!(fused, staged);
    let pool = |n| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
    };
    let one = pool(1).install(|| run(&c, PoseChain::default(), &stages(), true, 2).2);
    let four = pool(4).install(|| run(&c, PoseChain::default(), &stages(), true, 2).2);
    assert_eq!(one, fused);
    assert_eq!(four, fused);
    // Stages installed but no entity with their components: the pipeline without stages.
    let (_, _, none) = run(&c, PoseChain::default(), &stages(), false, 2);
    let (_, _, plain) = run(&c, PoseChain::default(), &PoseStages::new(), false, 2);
    assert_eq!(none, plain);
}

/// An entity that shares its rig and bones with the one checked before it has only its values
/// checked again (`PoseStage::check_like`), and those are still refused with typed errors; one
/// whose bones differ gets the full check.
#[test]
fn entities_after_a_checked_one_are_still_checked() {
    let c = builtin::bake_character(&AssetRegistry::new()).unwrap();
    for pose_chain in [PoseChain::default(), PoseChain::Staged] {
        let mut store = Store::new();
        let entities = spawn(&c, &mut store, true);
        let mut animator =
            Animator::with_stages(&mut store, config(pose_chain), &stages(), |_, _| {}).unwrap();
        animator.run_frame(&mut store, DT).unwrap();
        // The third entity of its chunk (members 3, 7, 11, … share a component set).
        let bad = entities[11];
        let fails = |store: &mut Store, animator: &mut Animator, want: &str| {
            let text = animator.run_frame(store, DT).unwrap_err().to_string();
            assert!(
                text.contains(&format!("{bad:?}")) && text.contains(want),
                "{text}"
            );
        };
        store.get_mut::<FootPlacement>(bad).unwrap().legs[1].ankle_height = -1.0;
        fails(&mut store, &mut animator, "ankle height is -1");
        store.get_mut::<FootPlacement>(bad).unwrap().legs[1].ankle_height = 0.07;
        store.get_mut::<FootPlacement>(bad).unwrap().max_tilt = f32::NAN;
        fails(&mut store, &mut animator, "max tilt is NaN");
        *store.get_mut::<FootPlacement>(bad).unwrap() = feet(&c.rig);
        store.get_mut::<FootPlacement>(bad).unwrap().legs[0].knee = 999;
        fails(&mut store, &mut animator, "bone 999 out of range");
        *store.get_mut::<FootPlacement>(bad).unwrap() = feet(&c.rig);
        store.get_mut::<LookAt>(bad).unwrap().weight = 2.0;
        fails(&mut store, &mut animator, "look-at");
        store.get_mut::<LookAt>(bad).unwrap().weight = 1.0;
        store.get_mut::<LookAt>(bad).unwrap().offset.x = f32::INFINITY;
        fails(&mut store, &mut animator, "offset is not finite");
        store.get_mut::<LookAt>(bad).unwrap().offset.x = 0.0;
        animator.run_frame(&mut store, DT).unwrap();
    }
}

/// The chain runs the model stages over groups of eight from each task's first entity, and a
/// task's run is cut at `grain` entities, so the grain moves where groups start and how full
/// they are (the crowd's chunks hold 12 entities of each component set): the palettes are the
/// same bit for bit, with 1, 2 or 16 threads.
#[test]
fn groups_cut_anywhere_give_the_same_palettes() {
    let c = builtin::bake_character(&AssetRegistry::new()).unwrap();
    let palettes = |grain: usize, threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut store = Store::new();
            let entities = spawn(&c, &mut store, true);
            let config = PipelineConfig {
                grain,
                ..config(PoseChain::default())
            };
            let mut animator =
                Animator::with_stages(&mut store, config, &stages(), |_, _| {}).unwrap();
            for _ in 0..2 {
                animator.run_frame(&mut store, DT).unwrap();
            }
            per_entity_palettes(&store, &animator, &entities)
        })
    };
    let want = palettes(64, 1);
    for (grain, threads) in [(1, 2), (3, 16), (5, 2), (7, 1), (11, 16), (64, 16)] {
        assert!(
            palettes(grain, threads) == want,
            "grain {grain}, {threads} threads"
        );
    }
}

#[test]
fn the_graph_knows_what_the_stages_read() {
    let mut store = Store::new();
    let animator =
        Animator::with_stages(&mut store, PipelineConfig::default(), &stages(), |_, _| {}).unwrap();
    let chain = animator.nodes().pose_stages.unwrap();
    assert_eq!(chain, animator.nodes().skinning);
    let access = animator.graph().access(chain).unwrap();
    assert!(access.reads::<FootPlacement>() && access.reads::<LookAt>());
    assert!(access.reads::<TwoBoneIk>() && !access.writes::<TwoBoneIk>());
    let staged =
        Animator::with_stages(&mut store, config(PoseChain::Staged), &stages(), |_, _| {}).unwrap();
    let node = staged.nodes().pose_stages.unwrap();
    assert!(staged.graph().runs_before(staged.nodes().propagate, node));
    assert!(staged.graph().runs_before(node, staged.nodes().skinning));
    assert!(staged.graph().access(node).unwrap().reads::<LookAt>());
    // Without stages there is no stage node and the chain reads none of their components.
    let plain = Animator::new(&mut store).unwrap();
    assert!(plain.nodes().pose_stages.is_none());
    let access = plain.graph().access(plain.nodes().skinning).unwrap();
    assert!(!access.reads::<TwoBoneIk>());
}

#[test]
fn a_bad_target_fails_the_frame_naming_the_stage_and_entity() {
    let c = builtin::bake_character(&AssetRegistry::new()).unwrap();
    for pose_chain in [PoseChain::default(), PoseChain::Staged] {
        let mut store = Store::new();
        let entities = spawn(&c, &mut store, true);
        let mut animator =
            Animator::with_stages(&mut store, config(pose_chain), &stages(), |_, _| {}).unwrap();
        animator.run_frame(&mut store, DT).unwrap();
        let before = per_entity_palettes(&store, &animator, &entities);
        let bad = entities[7];
        store.get_mut::<TwoBoneIk>(bad).unwrap().target.y = f32::NAN;
        let err = animator.run_frame(&mut store, DT).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("two-bone IK")
                && text.contains(&format!("{bad:?}"))
                && text.contains("target is not finite"),
            "{text}"
        );
        // A bone out of range is refused the same way.
        store.get_mut::<TwoBoneIk>(bad).unwrap().target.y = 1.0;
        store.get_mut::<TwoBoneIk>(bad).unwrap().end = 999;
        let text = animator.run_frame(&mut store, DT).unwrap_err().to_string();
        assert!(text.contains("bone 999 out of range"), "{text}");
        if pose_chain == PoseChain::default() {
            // The fused chain checks every entity before any moves: nothing changed.
            assert_eq!(per_entity_palettes(&store, &animator, &entities), before);
        }
        // Fixed, the frame runs; no palette holds a NaN.
        store.get_mut::<TwoBoneIk>(bad).unwrap().end = bone(&c.rig, "hand_l");
        animator.run_frame(&mut store, DT).unwrap();
        assert!(
            animator
                .palettes(&store)
                .iter()
                .flatten()
                .all(|x| x.is_finite())
        );
    }
}

/// A value that must be finite, for [`Counted`].
#[derive(Clone, Copy, Debug)]
struct Watched(f32);

/// A stage that moves nothing and counts the entities it checks.
#[derive(Debug)]
struct Counted(Arc<AtomicUsize>);

impl PoseStage for Counted {
    type Input = Watched;
    fn name(&self) -> &str {
        "counted"
    }
    fn check(&self, _: &Rig, input: &Watched) -> Result<(), StageError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        if input.0.is_finite() {
            Ok(())
        } else {
            Err(StageError::NotFinite { what: "the value" })
        }
    }
    fn apply(&self, _: &Watched, _: &mut StagePose<'_>) {}
}

/// A chunk whose stage inputs and rigs have not been written since its last check is not
/// checked again, and everything that writes them is: a write to one entity (its chunk is
/// checked), a write query over the column (every chunk), a new entity (its chunk), a rig
/// swapped; and a bad value written after frames without checks fails the next frame. A write
/// carries the number of the frame it is in (between frames, the next one), and a check at
/// frame `f` holds only for columns last written before `f`, so a write between frames is
/// checked in the next two frames.
#[test]
fn a_check_that_still_holds_is_not_run_again() {
    let c = builtin::bake_character(&AssetRegistry::new()).unwrap();
    for pose_chain in [PoseChain::default(), PoseChain::Staged] {
        let mut store = Store::new();
        let entities = spawn(&c, &mut store, true);
        for &e in &entities {
            store.insert(e, Watched(1.0)).unwrap();
        }
        let count = Arc::new(AtomicUsize::new(0));
        let stages = stages().with(Counted(count.clone()));
        let mut animator =
            Animator::with_stages(&mut store, config(pose_chain), &stages, |_, _| {}).unwrap();
        // The entities of `e`'s chunk (a read query stamps nothing).
        let chunk_of = |store: &mut Store, e: Entity| {
            let mut rows = 0;
            store.query::<&Watched>().unwrap().for_each_chunk(|chunk| {
                if chunk.entities().contains(&e) {
                    rows = chunk.entities().len();
                }
            });
            assert!(rows > 0 && rows < N, "{rows}");
            rows
        };
        // The entities checked in each of the next frames.
        let checks = |store: &mut Store, animator: &mut Animator, frames: usize| {
            (0..frames)
                .map(|_| {
                    let before = count.load(Ordering::Relaxed);
                    animator.run_frame(store, DT).unwrap();
                    count.load(Ordering::Relaxed) - before
                })
                .collect::<Vec<_>>()
        };
        let what = format!("{pose_chain:?}");
        // Spawned in the first frame's number: checked in the first two frames.
        assert_eq!(
            checks(&mut store, &mut animator, 5),
            [N, N, 0, 0, 0],
            "{what}"
        );
        store.get_mut::<Watched>(entities[5]).unwrap().0 = 2.0;
        let rows = chunk_of(&mut store, entities[5]);
        assert_eq!(
            checks(&mut store, &mut animator, 3),
            [rows, rows, 0],
            "{what}"
        );
        store.query::<&mut Watched>().unwrap().for_each(|_, _| {});
        assert_eq!(checks(&mut store, &mut animator, 3), [N, N, 0], "{what}");
        *store.get_mut::<RigRef>(entities[2]).unwrap() = RigRef(c.rig.clone());
        let rows = chunk_of(&mut store, entities[2]);
        assert_eq!(
            checks(&mut store, &mut animator, 3),
            [rows, rows, 0],
            "{what}"
        );
        let born = store.spawn(c.crowd_member(N)).unwrap();
        store.insert(born, Watched(1.0)).unwrap();
        let rows = chunk_of(&mut store, born);
        assert_eq!(
            checks(&mut store, &mut animator, 3),
            [rows, rows, 0],
            "{what}"
        );

        // Bad values after frames without checks: each fails the next frame, naming the entity.
        let bad = entities[9];
        store.get_mut::<Watched>(bad).unwrap().0 = f32::NAN;
        let text = animator.run_frame(&mut store, DT).unwrap_err().to_string();
        assert!(
            text.contains(&format!("{bad:?}")) && text.contains("counted"),
            "{text}"
        );
        store.get_mut::<Watched>(bad).unwrap().0 = 1.0;
        let rows = chunk_of(&mut store, bad);
        assert_eq!(
            checks(&mut store, &mut animator, 3),
            [rows, rows, 0],
            "{what}"
        );
        let looks = entities[6];
        store.get_mut::<LookAt>(looks).unwrap().target.x = f32::NAN;
        let text = animator.run_frame(&mut store, DT).unwrap_err().to_string();
        assert!(
            text.contains(&format!("{looks:?}")) && text.contains("target is not finite"),
            "{text}"
        );
    }
}
