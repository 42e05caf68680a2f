//! Crowd-level properties of the pipeline on the built-in character: palettes are
//! bit-identical with 1, 2 and 8 threads, and structural changes between frames (despawn and
//! spawn 10 %, clip changes, a mesh swap) keep every entity's result equal to the same entity
//! animated alone.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests unwrap: a failure is the test failing

use sinew_fixtures::builtin::{self, BakedCharacter};
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::AssetRegistry;
use sinew_jobs::component::{
    AnimationToProcess, Animations, FrameSlot, LayerWeights, RigRef, RootMotion, SamplingCursors,
    SkinRef,
};
use sinew_jobs::frame::PaletteEntry;
use sinew_jobs::pipeline::{PipelineConfig, PoseChain};
use sinew_runtime::store::{Entity, Store};
use std::sync::Arc;

fn run_crowd(c: &BakedCharacter, n: usize, threads: usize, frames: usize) -> Vec<PaletteEntry> {
    run_crowd_with(c, n, threads, frames, PipelineConfig::default())
}

fn run_crowd_with(
    c: &BakedCharacter,
    n: usize,
    threads: usize,
    frames: usize,
    config: PipelineConfig,
) -> Vec<PaletteEntry> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let mut store = Store::new();
        store
            .spawn_batch((0..n).map(|i| c.crowd_member(i)))
            .unwrap();
        let mut animator = Animator::with(&mut store, config, |_, _| {}).unwrap();
        let mut palette = vec![[0.0; 12]; n * c.mesh.bone_count()];
        for _ in 0..frames {
            animator
                .run_frame_into(&mut store, 1.0 / 60.0, &mut palette)
                .unwrap();
        }
        palette
    })
}

#[test]
fn palettes_are_bit_identical_with_1_2_and_8_threads() {
    let c = builtin::bake_character(&AssetRegistry::new()).unwrap();
    let one = run_crowd(&c, 300, 1, 4);
    let two = run_crowd(&c, 300, 2, 4);
    let eight = run_crowd(&c, 300, 8, 4);
    let bits = |p: &[PaletteEntry]| {
        p.iter()
            .flatten()
            .map(|x| x.to_bits())
            .collect::<Vec<u32>>()
    };
    assert_eq!(bits(&one), bits(&two));
    assert_eq!(bits(&one), bits(&eight));
    assert!(one.iter().flatten().all(|x| x.is_finite()));
    // Jobs 4, 6, 7 and 9 as four nodes with frame buffers between them, and fused keeping
    // model poses: the same bits (every layer kind, masks and root motion are in the
    // built-in crowd).
    for pose_chain in [PoseChain::Staged, PoseChain::FUSED_KEEPING_MODEL_POSES] {
        let config = PipelineConfig {
            pose_chain,
            ..Default::default()
        };
        assert_eq!(bits(&run_crowd_with(&c, 300, 2, 4, config)), bits(&one));
    }
}

/// The palette of one entity animated alone from the same animation state.
fn alone(c: &BakedCharacter, anims: &Animations, skin: &SkinRef) -> Vec<PaletteEntry> {
    let mut store = Store::new();
    let e = store
        .spawn((
            RigRef(c.rig.clone()),
            anims.clone(),
            LayerWeights::default(),
            FrameSlot::default(),
            SamplingCursors::default(),
        ))
        .unwrap();
    store.insert(e, skin.clone()).unwrap();
    store.insert(e, RootMotion::default()).unwrap();
    let mut animator = Animator::with(
        &mut store,
        PipelineConfig {
            advance_clocks: false,
            ..Default::default()
        },
        |_, _| {},
    )
    .unwrap();
    animator.run_frame(&mut store, 1.0 / 60.0).unwrap();
    animator.palettes(&store).to_vec()
}

fn check_against_alone(
    c: &BakedCharacter,
    store: &Store,
    animator: &Animator,
    entities: &[Entity],
) {
    let palettes = animator.palettes(store);
    for (k, &e) in entities.iter().enumerate().step_by(7) {
        let slot = store.get::<FrameSlot>(e).unwrap();
        let got = &palettes
            [slot.palette_offset as usize..(slot.palette_offset + slot.palette_count) as usize];
        let want = alone(
            c,
            store.get::<Animations>(e).unwrap(),
            store.get::<SkinRef>(e).unwrap(),
        );
        assert_eq!(got, &want[..], "entity #{k} {e:?}");
    }
}

#[test]
fn structural_changes_keep_every_result_correct() {
    let registry = AssetRegistry::new();
    let c = builtin::bake_character(&registry).unwrap();
    // A second mesh: the same skin under another name (different content hash), bones reversed.
    let mut raw = builtin::character().mesh;
    raw.name = "variant".into();
    let n_bones = raw.bones.len();
    raw.bones.reverse();
    for inf in &mut raw.influences {
        for (j, _) in &mut inf.0 {
            *j = (n_bones - 1 - usize::from(*j)) as u16;
        }
    }
    let variant = registry.mesh(raw.bake().unwrap());
    assert!(!Arc::ptr_eq(&variant, &c.mesh));

    let mut store = Store::new();
    let mut entities = store
        .spawn_batch((0..200).map(|i| c.crowd_member(i)))
        .unwrap();
    let mut animator = Animator::new(&mut store).unwrap();
    for _ in 0..3 {
        animator.run_frame(&mut store, 1.0 / 60.0).unwrap();
    }
    check_against_alone(&c, &store, &animator, &entities);

    // Despawn 10 % and spawn as many new ones, change some clips, swap some meshes.
    for k in (0..entities.len()).step_by(10) {
        store.despawn(entities[k]).unwrap();
        entities[k] = store.spawn(c.crowd_member(1000 + k)).unwrap();
    }
    for k in (3..entities.len()).step_by(9) {
        store.get_mut::<Animations>(entities[k]).unwrap().set(vec![
            AnimationToProcess::new(c.idle.clone()).at(k as f32 * 0.1),
        ]);
    }
    for k in (5..entities.len()).step_by(11) {
        store
            .insert(entities[k], SkinRef::new(variant.clone()))
            .unwrap();
    }
    for _ in 0..2 {
        animator.run_frame(&mut store, 1.0 / 60.0).unwrap();
    }
    check_against_alone(&c, &store, &animator, &entities);
    // The despawned entities are gone; stale handles are errors.
    assert_eq!(store.query::<&RigRef>().unwrap().count(), 200);
}
