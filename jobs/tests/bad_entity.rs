//! One entity with a clip for another rig among 101: the clip is refused when assigned,
//! naming both rigs; a frame that meets it anyway fails without changing any clock, event
//! queue, root-motion accumulator, sampling cursor, entity transform or palette, with every
//! pose chain and thread count; once the entity is fixed the crowd animates as if it had
//! never been bad.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests unwrap: a failure is the test failing

use sinew_fixtures::builtin::{self, BakedCharacter};
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{AssetRegistry, BoneIndex, Clip, Transform};
use sinew_jobs::component::{
    AnimationToProcess, Animations, EntityTransform, FiredEvents, RootMotion, SamplingCursors,
    SkinRef, try_skinned,
};
use sinew_jobs::error::JobError;
use sinew_jobs::pipeline::{PipelineConfig, PipelineNodes, PoseChain};
use sinew_runtime::graph::{Access, FnNode, GraphBuilder, NodeError, NodeId};
use sinew_runtime::store::{Entity, Store};
use std::sync::Arc;

const N: usize = 101;
const BAD: usize = 50;

/// The built-in walk baked for a rig named "other rig" (the same bones, its root moved: a
/// different content hash).
fn foreign_walk() -> Arc<Clip> {
    let raw = builtin::character();
    let mut rig = raw.rig.clone();
    rig.name = "other rig".into();
    rig.bones[0].rest = Transform::from_translation(glam::Vec3::new(0.0, 0.1, 0.0));
    let rig = rig.bake().unwrap();
    Arc::new(raw.walk.bake(&rig).unwrap())
}

fn bad_animations(foreign: &Arc<Clip>) -> Animations {
    Animations::new(vec![AnimationToProcess::new(foreign.clone())])
}

fn spawn_crowd(c: &BakedCharacter, store: &mut Store) -> Vec<Entity> {
    let entities = store
        .spawn_batch((0..N).map(|i| c.crowd_member(i)))
        .unwrap();
    for &e in &entities {
        store.insert(e, FiredEvents::default()).unwrap();
    }
    entities
}

/// Every piece of per-entity state a frame may change, plus the palette buffer.
fn snapshot(store: &Store, animator: &Animator, entities: &[Entity]) -> String {
    let mut s = String::new();
    for &e in entities {
        let times: Vec<(u32, u32)> = store
            .get::<Animations>(e)
            .unwrap()
            .as_slice()
            .iter()
            .map(|a| (a.time.to_bits(), a.previous_time.to_bits()))
            .collect();
        s += &format!(
            "{times:?} {:?} {:?} {:?} {:?}\n",
            store.get::<FiredEvents>(e).unwrap(),
            store.get::<RootMotion>(e).unwrap(),
            store.get::<EntityTransform>(e).unwrap(),
            store.get::<SamplingCursors>(e).unwrap(),
        );
    }
    let bits: Vec<u32> = animator
        .palettes(store)
        .iter()
        .flatten()
        .map(|x| x.to_bits())
        .collect();
    s + &format!("{bits:?}")
}

fn configs() -> Vec<(&'static str, PipelineConfig)> {
    let with = |pose_chain| PipelineConfig {
        pose_chain,
        ..Default::default()
    };
    vec![
        ("fused", PipelineConfig::default()),
        (
            "fused keeping model poses",
            with(PoseChain::FUSED_KEEPING_MODEL_POSES),
        ),
        ("staged", with(PoseChain::Staged)),
    ]
}

#[test]
fn a_clip_for_another_rig_is_refused_when_assigned_naming_both_rigs() {
    let c = builtin::bake_character(&AssetRegistry::new()).unwrap();
    let foreign = foreign_walk();
    let list = vec![
        AnimationToProcess::new(c.idle.clone()),
        AnimationToProcess::new(foreign.clone()),
    ];
    let e = Animations::for_rig(&c.rig, list.clone()).unwrap_err();
    assert!(
        matches!(e, JobError::ClipForAnotherRig { animation: 1, .. }),
        "{e}"
    );
    let text = e.to_string();
    let rig = c.rig.name();
    assert!(
        text.contains("animation 1")
            && text.contains(&format!("'{}'", foreign.name()))
            && text.contains("'other rig'")
            && text.contains(&format!("'{rig}'")),
        "{text}"
    );
    let e = try_skinned(c.rig.clone(), c.mesh.clone(), list).unwrap_err();
    assert_eq!(e.to_string(), text);
    // The good list passes.
    let good = vec![AnimationToProcess::new(c.idle.clone())];
    assert_eq!(Animations::for_rig(&c.rig, good.clone()).unwrap().len(), 1);
    assert!(try_skinned(c.rig.clone(), c.mesh.clone(), good).is_ok());
}

/// The case: 101 entities, one playing a clip for another rig, `dt = 0.5`.
#[test]
fn a_frame_with_one_bad_entity_fails_and_changes_nothing() {
    let c = builtin::bake_character(&AssetRegistry::new()).unwrap();
    let foreign = foreign_walk();
    let mut reference: Option<(Vec<String>, Vec<u32>)> = None;
    for threads in [1, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        for (label, config) in configs() {
            let run = pool.install(|| one_case(&c, &foreign, config));
            let what = format!("{label}, {threads} threads");
            // The same errors and the same palettes, whatever the pipeline or thread count.
            match &reference {
                None => reference = Some(run),
                Some(r) => assert_eq!(&run, r, "{what}"),
            }
        }
    }
}

/// Returns the frame errors met and the palette bits after the entity is fixed.
fn one_case(
    c: &BakedCharacter,
    foreign: &Arc<Clip>,
    config: PipelineConfig,
) -> (Vec<String>, Vec<u32>) {
    let mut errors = Vec::new();
    let mut store = Store::new();
    let entities = spawn_crowd(c, &mut store);
    let bad = entities[BAD];
    let good_animations = store.get::<Animations>(bad).unwrap().clone();
    *store.get_mut::<Animations>(bad).unwrap() = bad_animations(foreign);
    let mut animator = Animator::with(&mut store, config, |_, _| {}).unwrap();
    // The first frame: entity 0's walk starts at 0; nothing moves.
    assert_eq!(
        store.get::<Animations>(entities[0]).unwrap().as_slice()[0].time,
        0.0
    );
    let before = snapshot(&store, &animator, &entities);
    let err = animator.run_frame(&mut store, 0.5).unwrap_err().to_string();
    check_names_both_rigs(&err, bad, c, foreign);
    assert_eq!(
        store.get::<Animations>(entities[0]).unwrap().as_slice()[0].time,
        0.0
    );
    assert_eq!(snapshot(&store, &animator, &entities), before, "{err}");
    assert!(animator.palettes(&store).is_empty());
    errors.push(err);

    // Later frames, with events, root motion and palettes to lose: the same.
    *store.get_mut::<Animations>(bad).unwrap() = good_animations;
    for _ in 0..3 {
        animator.run_frame(&mut store, 0.5).unwrap();
    }
    assert!(
        entities
            .iter()
            .any(|&e| !store.get::<FiredEvents>(e).unwrap().0.is_empty())
    );
    let good_animations = std::mem::replace(
        store.get_mut::<Animations>(bad).unwrap(),
        bad_animations(foreign),
    );
    let before = snapshot(&store, &animator, &entities);
    let err = animator.run_frame(&mut store, 0.5).unwrap_err().to_string();
    check_names_both_rigs(&err, bad, c, foreign);
    assert_eq!(snapshot(&store, &animator, &entities), before, "{err}");
    errors.push(err);
    // Job 1 (no clock node: the caller sets times) says the same.
    let mut manual = Animator::with(
        &mut store,
        PipelineConfig {
            advance_clocks: false,
            ..config
        },
        |_, _| {},
    )
    .unwrap();
    let err = manual.run_frame(&mut store, 0.5).unwrap_err().to_string();
    check_names_both_rigs(&err, bad, c, foreign);
    assert_eq!(snapshot(&store, &animator, &entities), before, "{err}");
    errors.push(err);

    // Fixed, the frame goes on as if the bad frames had not happened: entity 0 at 2.0 s after
    // four good frames, palettes equal to a crowd that was never bad.
    *store.get_mut::<Animations>(bad).unwrap() = good_animations;
    animator.run_frame(&mut store, 0.5).unwrap();
    assert_eq!(
        store.get::<Animations>(entities[0]).unwrap().as_slice()[0].time,
        2.0
    );
    let mut clean = Store::new();
    let clean_entities = spawn_crowd(c, &mut clean);
    let mut clean_animator = Animator::with(&mut clean, config, |_, _| {}).unwrap();
    for _ in 0..4 {
        clean_animator.run_frame(&mut clean, 0.5).unwrap();
    }
    let bits = |store: &Store, a: &Animator| -> Vec<u32> {
        a.palettes(store)
            .iter()
            .flatten()
            .map(|x| x.to_bits())
            .collect()
    };
    assert_eq!(bits(&store, &animator), bits(&clean, &clean_animator));
    // Clocks, event queues, root motion, transforms and cursors too, entity by entity.
    assert_eq!(
        snapshot(&store, &animator, &entities),
        snapshot(&clean, &clean_animator, &clean_entities)
    );
    // Entity generations are salted per store: compare the errors without them.
    let errors = errors
        .iter()
        .map(|e| e.replace(&format!("{bad:?}"), "<bad>"))
        .collect();
    (errors, bits(&store, &animator))
}

fn check_names_both_rigs(err: &str, bad: Entity, c: &BakedCharacter, foreign: &Arc<Clip>) {
    assert!(
        err.contains(&format!("entity {bad:?}"))
            && err.contains(&format!("clip '{}'", foreign.name()))
            && err.contains("rig 'other rig'")
            && err.contains(&format!("'{}'", c.rig.name())),
        "{err}"
    );
}

/// A skin whose root bone is outside the rig: with the staged chain, job 9 would find it after
/// job 6 moved every entity; it is found before anything moves, in every pipeline.
#[test]
fn a_skin_root_bone_out_of_range_fails_the_frame_before_anything_moves() {
    let c = builtin::bake_character(&AssetRegistry::new()).unwrap();
    for (label, config) in configs() {
        let mut store = Store::new();
        let entities = spawn_crowd(&c, &mut store);
        let mut animator = Animator::with(&mut store, config, |_, _| {}).unwrap();
        for _ in 0..2 {
            animator.run_frame(&mut store, 0.5).unwrap();
        }
        let bad = entities[BAD];
        let bones = c.rig.bone_count();
        store.get_mut::<SkinRef>(bad).unwrap().root_bone = Some(BoneIndex(bones as u32));
        let before = snapshot(&store, &animator, &entities);
        let err = animator.run_frame(&mut store, 0.5).unwrap_err().to_string();
        assert!(
            err.contains(&format!("entity {bad:?}"))
                && err.contains(&format!("bone {bones} out of range ({bones} bones)")),
            "{label}: {err}"
        );
        assert_eq!(
            snapshot(&store, &animator, &entities),
            before,
            "{label}: {err}"
        );
    }
}

/// A user node that gives the bad entity the foreign clip, ordered by `place`. Returns the
/// failing node, the error and entity 0's walk time after the failed frame (0 before it).
fn frame_with_relisting_node(
    c: &BakedCharacter,
    foreign: &Arc<Clip>,
    place: fn(&mut GraphBuilder, &PipelineNodes, NodeId),
) -> (String, String, f32) {
    let mut store = Store::new();
    let entities = spawn_crowd(c, &mut store);
    let bad = entities[BAD];
    let foreign = foreign.clone();
    let mut animator = Animator::with(&mut store, PipelineConfig::default(), |b, nodes| {
        let relist = b.add_node(FnNode::new(
            "relist",
            Access::new().write::<Animations>(),
            move |ctx| {
                let mut q = ctx
                    .query::<&mut Animations>()
                    .map_err(NodeError::from_error)?;
                q.for_each(|e, a| {
                    if e == bad {
                        *a = bad_animations(&foreign);
                    }
                });
                Ok(())
            },
        ));
        place(b, nodes, relist);
    })
    .unwrap();
    let err = animator.run_frame(&mut store, 0.5).unwrap_err();
    let time = store.get::<Animations>(entities[0]).unwrap().as_slice()[0].time;
    (
        err.node().unwrap_or_default().to_string(),
        err.to_string(),
        time,
    )
}

/// Job 1 leaves the binding checks to the clock node only when nothing can change the
/// bindings between the two: a node that relists an entity after the clock and before job 1
/// is caught by job 1 (after the clocks moved: the node sits after them); one before the
/// clock is caught by the clock, before any clock moves.
#[test]
fn a_binding_changed_between_the_clock_and_job_1_is_caught_by_job_1() {
    let c = builtin::bake_character(&AssetRegistry::new()).unwrap();
    let foreign = foreign_walk();
    let (node, err, time) = frame_with_relisting_node(&c, &foreign, |b, nodes, relist| {
        let clock = nodes.advance_clocks.unwrap();
        // Before the controller, as it asks of list writers (it runs before job 1).
        b.add_edge(clock, relist).add_edge(relist, nodes.controller);
    });
    assert_eq!(node, "1 bone offsets", "{err}");
    assert!(
        err.contains(&format!("clip '{}'", foreign.name())) && err.contains("rig 'other rig'"),
        "{err}"
    );
    assert_eq!(time, 0.5);
    let (node, err, time) = frame_with_relisting_node(&c, &foreign, |b, nodes, relist| {
        b.add_edge(relist, nodes.advance_clocks.unwrap());
    });
    assert_eq!(node, "advance clocks", "{err}");
    assert!(err.contains("rig 'other rig'"), "{err}");
    assert_eq!(time, 0.0);
}
