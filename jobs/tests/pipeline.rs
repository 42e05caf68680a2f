//! The nine-job graph end to end on small hand-built rigs, checked against hand-computed values.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests unwrap: a failure is the test failing

use glam::{Affine3A, Mat4, Quat, Vec3};
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{
    AdditiveReference, AssetRegistry, BoneIndex, Clip, RawAvatarMask, RawBone, RawBoneTracks,
    RawClip, RawEvent, RawRig, RawSkinnedMesh, RawTrack, RawVertexInfluences, Rig, SkinnedMesh,
    Transform, bone_hash,
};
use sinew_jobs::component::{
    AnimationToProcess, BlendMode, BoneWorld, EntityTransform, ExposedBone, FiredEvents, FrameSlot,
    RootMotion, SkinRef, animated,
};
use sinew_jobs::frame::{BoneTable, LocalPoses, ModelPoses};
use sinew_jobs::pipeline::{PipelineConfig, PoseChain};
use sinew_jobs::pose_stage::{
    LocalPoseStage, LocalStagePoint, LocalStagePose, PoseStages, StageError,
};
use sinew_runtime::graph::{Access, FnNode, GraphBuildError, NodeError};
use sinew_runtime::store::{Entity, Store};
use std::f32::consts::FRAC_PI_2;
use std::sync::Arc;

//  The test rig ("arm"), Y up:
//
//        tip      (0, 2, 0) at rest
//         |
//        elbow    (0, 1, 0) at rest, rotates about Z
//         |
//        root     (0, 0, 0)
//
//  Clip "bend": elbow rotation LINEAR (slerp) from 0 at t = 0 to 90° about Z at t = 1 s.
//  Clip "lift": root translation LINEAR from (0,0,0) at t = 0 to (0,2,0) at t = 1 s.
fn arm_rig() -> Rig {
    RawRig {
        name: "arm".into(),
        bones: vec![
            RawBone {
                name: "root".into(),
                parent: None,
                rest: Transform::IDENTITY,
            },
            RawBone {
                name: "elbow".into(),
                parent: Some(0),
                rest: Transform::from_translation(Vec3::Y),
            },
            RawBone {
                name: "tip".into(),
                parent: Some(1),
                rest: Transform::from_translation(Vec3::Y),
            },
        ],
    }
    .bake()
    .unwrap()
}

fn bend(rig: &Rig) -> Clip {
    RawClip {
        name: "bend".into(),
        looping: false,
        bones: vec![RawBoneTracks {
            bone: "elbow".into(),
            translation: None,
            rotation: Some(RawTrack::linear(
                vec![0.0, 1.0],
                vec![Quat::IDENTITY, Quat::from_rotation_z(FRAC_PI_2)],
            )),
            scale: None,
        }],
        additive_reference: Some(AdditiveReference::RestPose),
        ..Default::default()
    }
    .bake(rig)
    .unwrap()
}

fn lift(rig: &Rig) -> Clip {
    RawClip {
        name: "lift".into(),
        looping: false,
        bones: vec![RawBoneTracks {
            bone: "root".into(),
            translation: Some(RawTrack::linear(
                vec![0.0, 1.0],
                vec![Vec3::ZERO, Vec3::Y * 2.0],
            )),
            rotation: None,
            scale: None,
        }],
        ..Default::default()
    }
    .bake(rig)
    .unwrap()
}

/// Mesh bones listed in reverse rig order (exercises the remap), plus one bone the rig lacks.
fn arm_mesh() -> SkinnedMesh {
    RawSkinnedMesh {
        name: "arm mesh".into(),
        bones: vec![
            ("tip".into(), Mat4::from_translation(-2.0 * Vec3::Y)),
            ("ghost".into(), Mat4::IDENTITY),
            ("elbow".into(), Mat4::from_translation(-Vec3::Y)),
            ("root".into(), Mat4::IDENTITY),
        ],
        positions: vec![Vec3::new(0.0, 2.0, 0.0), Vec3::new(0.5, 1.0, 0.0)],
        normals: vec![],
        influences: vec![
            RawVertexInfluences(vec![(0, 1.0)]),
            RawVertexInfluences(vec![(2, 1.0)]),
        ],
        indices: vec![],
        ..Default::default()
    }
    .bake()
    .unwrap()
}

fn close(a: Vec3, b: Vec3) -> bool {
    (a - b).length() < 1e-5
}

fn palette_point(p: &[f32; 12], v: Vec3) -> Vec3 {
    Affine3A::from_cols_array(p).transform_point3(v)
}

#[test]
fn one_clip_at_half_time_matches_hand_computed_pose_model_and_palette() {
    let (mut store, e, mesh) = bending_arm(0.5);
    let mut animator = Animator::with(&mut store, staged_without_clocks(), |_, _| {}).unwrap();
    animator.run_frame(&mut store, 0.0).unwrap();
    let staged_palette = animator.palettes(&store).to_vec();

    // Elbow at 45 degrees: slerp half way.
    let local = &store.resource::<LocalPoses>().unwrap().0;
    assert_eq!(local.len(), 3);
    assert!(
        local[1]
            .rotation
            .dot(Quat::from_rotation_z(FRAC_PI_2 / 2.0))
            .abs()
            > 1.0 - 1e-6
    );
    // Tip in model space: elbow at (0,1,0) rotated 45 deg about Z, tip one unit along the rotated Y:
    // (-sin 45, 1 + cos 45, 0).
    let s = std::f32::consts::FRAC_1_SQRT_2;
    let model = store.resource::<ModelPoses>().unwrap().0.clone();
    assert!(close(
        model[2].translation.into(),
        Vec3::new(-s, 1.0 + s, 0.0)
    ));

    let slot = *store.get::<FrameSlot>(e).unwrap();
    assert_eq!((slot.bone_count, slot.palette_count), (3, 4));
    let palette = animator.palettes(&store);
    assert_eq!(palette.len(), 4);
    // Mesh bone 0 is "tip": the bind-pose tip position (0,2,0) goes to the animated tip.
    assert!(close(
        palette_point(&palette[0], Vec3::new(0.0, 2.0, 0.0)),
        Vec3::new(-s, 1.0 + s, 0.0)
    ));
    // "ghost" has no rig bone: identity (stays in bind pose).
    assert_eq!(palette[1], [1., 0., 0., 0., 1., 0., 0., 0., 1., 0., 0., 0.]);
    // "elbow": a point at (0.5, 1, 0) (bind) rotates 45 degrees about the elbow.
    assert!(close(
        palette_point(&palette[2], Vec3::new(0.5, 1.0, 0.0)),
        Vec3::new(0.5 * s, 1.0 + 0.5 * s, 0.0)
    ));
    // Skinning with the CPU reference gives the same.
    let (p, _) = mesh.skin_cpu(palette);
    assert!(close(p[0], Vec3::new(-s, 1.0 + s, 0.0)));
    let staged_model = model.clone();

    // The fused chain (keeping model poses) gives the same model matrices and palette, bit
    // for bit.
    let keeping = PipelineConfig {
        pose_chain: PoseChain::FUSED_KEEPING_MODEL_POSES,
        ..without_clocks()
    };
    let mut fused = Animator::with(&mut store, keeping, |_, _| {}).unwrap();
    fused.run_frame(&mut store, 0.0).unwrap();
    assert_eq!(fused.palettes(&store), &staged_palette[..]);
    assert_eq!(store.resource::<ModelPoses>().unwrap().0, staged_model);
    assert!(store.resource::<LocalPoses>().unwrap().0.is_empty());
}

/// A store with one arm playing `bend` at `time`, skinned by the arm mesh.
fn bending_arm(time: f32) -> (Store, Entity, Arc<SkinnedMesh>) {
    let rig = Arc::new(arm_rig());
    let clip = Arc::new(bend(&rig));
    let mesh = Arc::new(arm_mesh());
    let mut store = Store::new();
    let e = store
        .spawn(animated(rig, vec![AnimationToProcess::new(clip).at(time)]))
        .unwrap();
    store.insert(e, SkinRef::new(mesh.clone())).unwrap();
    (store, e, mesh)
}

/// The default pipeline without the clock node (tests set times).
fn without_clocks() -> PipelineConfig {
    PipelineConfig {
        advance_clocks: false,
        ..Default::default()
    }
}

/// [`without_clocks`] with jobs 4, 6, 7 and 9 as separate nodes, so that local poses are kept.
fn staged_without_clocks() -> PipelineConfig {
    PipelineConfig {
        pose_chain: PoseChain::Staged,
        ..without_clocks()
    }
}

#[test]
fn layers_masks_additive_and_rest_fill() {
    let rig = Arc::new(arm_rig());
    let bend = Arc::new(bend(&rig));
    let lift = Arc::new(lift(&rig));
    let only_elbow = Arc::new(
        RawAvatarMask {
            name: "elbow only".into(),
            bones: vec![("elbow".into(), 1.0)],
            include_descendants: false,
        }
        .bake(&rig)
        .unwrap(),
    );
    let mut store = Store::new();
    // a: override bend at weight 0.5 → elbow 22.5° (rest fills the other half: slerp-like nlerp of 0 and 45°)
    let a = store
        .spawn(animated(
            rig.clone(),
            vec![AnimationToProcess::new(bend.clone()).at(0.5).weight(0.5)],
        ))
        .unwrap();
    // b: lift on layer 0, bend on layer 1 masked to the elbow only, at 1 s.
    let b = store
        .spawn(animated(
            rig.clone(),
            vec![
                AnimationToProcess::new(lift.clone()).at(1.0),
                AnimationToProcess::new(bend.clone())
                    .at(1.0)
                    .layer(1, BlendMode::Override)
                    .mask(only_elbow.clone()),
            ],
        ))
        .unwrap();
    // c: lift at 0.5 plus bend additive at weight 1 at t = 1 (adds 90°).
    let c = store
        .spawn(animated(
            rig.clone(),
            vec![
                AnimationToProcess::new(lift.clone()).at(0.5),
                AnimationToProcess::new(bend.clone())
                    .at(1.0)
                    .layer(1, BlendMode::Additive),
            ],
        ))
        .unwrap();
    let mut animator = Animator::with(&mut store, staged_without_clocks(), |_, _| {}).unwrap();
    animator.run_frame(&mut store, 0.0).unwrap();
    let local = store.resource::<LocalPoses>().unwrap().0.clone();
    let staged_model = store.resource::<ModelPoses>().unwrap().0.clone();
    let keeping = PipelineConfig {
        pose_chain: PoseChain::FUSED_KEEPING_MODEL_POSES,
        ..without_clocks()
    };
    let mut fused = Animator::with(&mut store, keeping, |_, _| {}).unwrap();
    fused.run_frame(&mut store, 0.0).unwrap();
    assert_eq!(store.resource::<ModelPoses>().unwrap().0, staged_model);
    let off = |e| store.get::<FrameSlot>(e).unwrap().bone_offset as usize;

    // a: normalised sum of 0.5 * q(45°) and 0.5 * identity = q(22.5°).
    let qa = local[off(a) + 1].rotation;
    assert!(
        qa.dot(Quat::from_rotation_z(FRAC_PI_2 / 4.0)).abs() > 1.0 - 1e-6,
        "{qa}"
    );
    // b: root lifted by 2 (layer 0), elbow at 90° (layer 1, masked), tip untouched.
    assert!(close(local[off(b)].translation, Vec3::Y * 2.0));
    assert!(
        local[off(b) + 1]
            .rotation
            .dot(Quat::from_rotation_z(FRAC_PI_2))
            .abs()
            > 1.0 - 1e-6
    );
    // The mask keeps layer 1 off the root: layer 1's bend would leave root at rest (0), but layer 0 said 2.
    // c: root at 1 (lift at 0.5) and elbow rest + 90° additive.
    assert!(close(local[off(c)].translation, Vec3::Y));
    assert!(
        local[off(c) + 1]
            .rotation
            .dot(Quat::from_rotation_z(FRAC_PI_2))
            .abs()
            > 1.0 - 1e-6
    );
    for t in &local {
        assert!((t.rotation.length() - 1.0).abs() < 1e-5);
    }
}

#[test]
fn empty_crowd_runs_and_produces_nothing() {
    // Clock, controller, jobs 1 to 9 (4, 6, 7 and 9 as one node, then exposed bones) or all
    // nine, and the controller-event node.
    for (config, nodes) in [(PipelineConfig::default(), 10), (staged(), 12)] {
        let mut store = Store::new();
        let mut animator = Animator::with(&mut store, config, |_, _| {}).unwrap();
        for _ in 0..3 {
            animator.run_frame(&mut store, 1.0 / 60.0).unwrap();
        }
        assert!(animator.palettes(&store).is_empty());
        assert!(store.resource::<LocalPoses>().unwrap().0.is_empty());
        assert!(store.resource::<ModelPoses>().unwrap().0.is_empty());
        assert_eq!(animator.timings().len(), nodes);
    }
}

#[test]
fn a_clip_baked_for_another_rig_stops_the_frame_naming_the_node() {
    let rig = Arc::new(arm_rig());
    let other = RawRig {
        name: "other".into(),
        bones: vec![RawBone {
            name: "elbow".into(),
            parent: None,
            rest: Transform::IDENTITY,
        }],
    }
    .bake()
    .unwrap();
    let foreign = Arc::new(
        RawClip {
            name: "foreign".into(),
            bones: vec![RawBoneTracks {
                bone: "elbow".into(),
                translation: None,
                rotation: Some(RawTrack::step(vec![0.0], vec![Quat::IDENTITY])),
                scale: None,
            }],
            ..Default::default()
        }
        .bake(&other)
        .unwrap(),
    );
    let mut store = Store::new();
    store
        .spawn(animated(rig, vec![AnimationToProcess::new(foreign)]))
        .unwrap();
    let mut animator = Animator::new(&mut store).unwrap();
    let err = animator.run_frame(&mut store, 0.1).unwrap_err();
    // Job 1's checks run in the clock node, before any clock moves.
    assert_eq!(err.node(), Some("advance clocks"));
    let text = err.to_string();
    assert!(
        text.contains("clip 'foreign' was baked for rig 'other', but the entity's rig is 'arm'"),
        "{err}"
    );
}

#[test]
fn a_palette_slice_that_is_too_short_is_an_error_not_a_panic() {
    let rig = Arc::new(arm_rig());
    let mut store = Store::new();
    let e = store.spawn(animated(rig, vec![])).unwrap();
    store.insert(e, SkinRef::new(Arc::new(arm_mesh()))).unwrap();
    let mut short = vec![[0.0f32; 12]; 2];
    for (config, node) in [
        (staged(), "9 skinning"),
        (PipelineConfig::default(), "4·6·7·9 pose chain"),
    ] {
        let mut animator = Animator::with(&mut store, config, |_, _| {}).unwrap();
        let err = animator
            .run_frame_into(&mut store, 0.0, &mut short)
            .unwrap_err();
        assert_eq!(err.node(), Some(node));
        assert!(err.to_string().contains("palette slice"), "{err}");
    }
    let mut animator = Animator::new(&mut store).unwrap();
    let mut enough = vec![[0.0f32; 12]; 4];
    animator
        .run_frame_into(&mut store, 0.0, &mut enough)
        .unwrap();
    // No animation: rest pose = bind pose, so every palette entry is the identity.
    for p in &enough {
        for (a, b) in p
            .iter()
            .zip([1., 0., 0., 0., 1., 0., 0., 0., 1., 0., 0., 0.])
        {
            assert!((a - b).abs() < 1e-6);
        }
    }
}

#[test]
fn a_user_node_between_propagation_and_skinning_changes_the_palette() {
    let rig = Arc::new(arm_rig());
    let mesh = Arc::new(arm_mesh());
    let mut store = Store::new();
    let e = store.spawn(animated(rig, vec![])).unwrap();
    store.insert(e, SkinRef::new(mesh)).unwrap();
    // An "IK" step that moves the tip bone (flat bone 2) by +1 in X in model space.
    let mut animator = Animator::with(&mut store, staged(), |b, nodes| {
        let ik = b.add_node(FnNode::new(
            "ik",
            Access::new().write::<ModelPoses>(),
            |ctx| {
                let mut model = ctx
                    .resource_mut::<ModelPoses>()
                    .map_err(NodeError::from_error)?;
                if let Some(m) = model.0.get_mut(2) {
                    m.translation.x += 1.0;
                }
                Ok(())
            },
        ));
        b.add_edge(nodes.propagate, ik).add_edge(ik, nodes.skinning);
    })
    .unwrap();
    animator.run_frame(&mut store, 0.0).unwrap();
    let palette = animator.palettes(&store);
    assert!(close(
        palette_point(&palette[0], Vec3::new(0.0, 2.0, 0.0)),
        Vec3::new(1.0, 2.0, 0.0)
    ));
    let order: Vec<&str> = animator.timings().iter().map(|t| t.name.as_str()).collect();
    assert!(order.contains(&"ik"));
}

#[test]
fn root_motion_accumulates_across_loop_wraps_and_keeps_the_root_in_place() {
    let rig = Arc::new(arm_rig());
    // Root walks 2 m along +Z per 1 s loop.
    let walk = Arc::new(
        RawClip {
            name: "walk".into(),
            looping: true,
            root_motion: true,
            bones: vec![RawBoneTracks {
                bone: "root".into(),
                translation: Some(RawTrack::linear(
                    vec![0.0, 1.0],
                    vec![Vec3::ZERO, Vec3::Z * 2.0],
                )),
                rotation: None,
                scale: None,
            }],
            ..Default::default()
        }
        .bake(&rig)
        .unwrap(),
    );
    let mut store = Store::new();
    let e = store
        .spawn(animated(rig, vec![AnimationToProcess::new(walk)]))
        .unwrap();
    store.insert(e, EntityTransform::default()).unwrap();
    store.insert(e, RootMotion::default()).unwrap();
    let keeping = PipelineConfig {
        pose_chain: PoseChain::FUSED_KEEPING_MODEL_POSES,
        ..Default::default()
    };
    let mut animator = Animator::with(&mut store, keeping, |_, _| {}).unwrap();
    let dt = 0.1;
    for _ in 0..25 {
        animator.run_frame(&mut store, dt).unwrap();
        // Root stays where the clip starts (the root's model matrix is its local pose).
        let off = store.get::<FrameSlot>(e).unwrap().bone_offset as usize;
        assert!(close(
            store.resource::<ModelPoses>().unwrap().0[off]
                .translation
                .into(),
            Vec3::ZERO
        ));
    }
    // 25 frames of 0.1 s = 2.5 s = 5 m, across two loop wraps.
    let t = store.get::<EntityTransform>(e).unwrap().0.translation;
    assert!((t - Vec3::Z * 5.0).length() < 1e-4, "{t}");
    let m = store.get::<RootMotion>(e).unwrap();
    assert!(
        (m.velocity - Vec3::Z * 2.0).length() < 1e-3,
        "{}",
        m.velocity
    );
}

#[test]
fn events_fire_once_per_pass_forward_across_wraps_and_backward() {
    let rig = Arc::new(arm_rig());
    let clip = Arc::new(
        RawClip {
            name: "steps".into(),
            duration: Some(1.0),
            looping: true,
            events: vec![
                RawEvent {
                    name: "step".into(),
                    time: 0.25,
                    payload: 1.0,
                },
                RawEvent {
                    name: "step".into(),
                    time: 0.75,
                    payload: 2.0,
                },
            ],
            ..Default::default()
        }
        .bake(&rig)
        .unwrap(),
    );
    let mut store = Store::new();
    let e = store
        .spawn(animated(rig, vec![AnimationToProcess::new(clip.clone())]))
        .unwrap();
    store.insert(e, FiredEvents::default()).unwrap();
    let mut animator = Animator::new(&mut store).unwrap();
    let mut fired = Vec::new();
    // 0.3 s steps: (0,.3] (.3,.6] (.6,.9] (.9,1.2] (1.2,1.5] → 0.25, -, 0.75, -, 1.25 (0.25 wrapped)
    for _ in 0..5 {
        animator.run_frame(&mut store, 0.3).unwrap();
        fired.push(
            store
                .get::<FiredEvents>(e)
                .unwrap()
                .0
                .iter()
                .map(|f| f.payload)
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(fired, vec![vec![1.0], vec![], vec![2.0], vec![], vec![1.0]]);
    assert!(
        store
            .get::<FiredEvents>(e)
            .unwrap()
            .0
            .iter()
            .all(|f| f.name == bone_hash("step"))
    );
    // Backwards from 1.5 to 0.5 passes 1.25 (0.25 wrapped) and 0.75.
    store
        .get_mut::<sinew_jobs::component::Animations>(e)
        .unwrap()
        .iter_mut()
        .for_each(|a| a.speed = -1.0);
    animator.run_frame(&mut store, 1.0).unwrap();
    let mut back: Vec<f32> = store
        .get::<FiredEvents>(e)
        .unwrap()
        .0
        .iter()
        .map(|f| f.payload)
        .collect();
    back.sort_by(f32::total_cmp);
    assert_eq!(back, vec![1.0, 2.0]);
}

/// Events follow the animation's loop flag, as sampling does: the looping clip played once
/// fires each event once and nothing past its end; a clip baked not to loop, played looping,
/// fires every pass.
#[test]
fn events_follow_the_animations_loop_flag() {
    let rig = Arc::new(arm_rig());
    let steps = |looping: bool| {
        let event = |time: f32, payload: f32| RawEvent {
            name: "step".into(),
            time,
            payload,
        };
        let raw = RawClip {
            name: "steps".into(),
            duration: Some(1.0),
            looping,
            events: vec![event(0.25, 1.0), event(0.75, 2.0)],
            ..Default::default()
        };
        Arc::new(raw.bake(&rig).unwrap())
    };
    for (clip, flag, want) in [
        (steps(true), false, vec![1.0, 2.0]),
        (steps(false), true, vec![1.0, 2.0, 1.0, 2.0, 1.0]),
    ] {
        let mut store = Store::new();
        let animation = AnimationToProcess::new(clip).looping(flag);
        let e = store.spawn(animated(rig.clone(), vec![animation])).unwrap();
        store.insert(e, FiredEvents::default()).unwrap();
        let mut animator = Animator::new(&mut store).unwrap();
        // 0.3 s steps to 2.4 s.
        let mut fired = Vec::new();
        for _ in 0..8 {
            animator.run_frame(&mut store, 0.3).unwrap();
            let events = &store.get::<FiredEvents>(e).unwrap().0;
            fired.extend(events.iter().map(|f| f.payload));
        }
        assert_eq!(fired, want, "played looping: {flag}");
    }
}

#[test]
fn exposed_bone_entities_follow_their_bone_in_world_space() {
    let rig = Arc::new(arm_rig());
    let clip = Arc::new(bend(&rig));
    let mut store = Store::new();
    let owner = store
        .spawn(animated(rig, vec![AnimationToProcess::new(clip).at(1.0)]))
        .unwrap();
    store
        .insert(
            owner,
            EntityTransform(Transform::from_translation(Vec3::X * 10.0)),
        )
        .unwrap();
    let hat = store
        .spawn((
            ExposedBone {
                owner,
                bone: BoneIndex(2),
            },
            BoneWorld::default(),
        ))
        .unwrap();
    let mut animator = Animator::with(
        &mut store,
        PipelineConfig {
            advance_clocks: false,
            pose_chain: PoseChain::FUSED_KEEPING_MODEL_POSES,
            ..Default::default()
        },
        |_, _| {},
    )
    .unwrap();
    animator.run_frame(&mut store, 0.0).unwrap();
    // Elbow at 90° about Z: tip at (-1, 1, 0) in model space, + (10, 0, 0) in the world.
    let w = store.get::<BoneWorld>(hat).unwrap().0;
    assert!(
        close(w.translation.into(), Vec3::new(9.0, 1.0, 0.0)),
        "{}",
        w.translation
    );
}

#[test]
fn registry_dedups_equal_assets() {
    let reg = AssetRegistry::new();
    let a = reg.rig(arm_rig());
    let b = reg.rig(arm_rig());
    assert!(Arc::ptr_eq(&a, &b));
    let c1 = reg.clip(bend(&a));
    let c2 = reg.clip(bend(&b));
    assert!(Arc::ptr_eq(&c1, &c2));
    assert_eq!(reg.counts(), (1, 1, 0, 0));
}

#[test]
fn user_curves_blend_by_effective_weight() {
    let rig = Arc::new(arm_rig());
    // Curve "contact": constant 1 in clip A, constant 0 in clip B; "only_a" exists in A only.
    let curve_clip = |name: &str, v: f32, extra: bool| {
        let mut curves = vec![sinew_jobs::asset::RawCurve {
            name: "contact".into(),
            track: RawTrack::step(vec![0.0], vec![v]),
        }];
        if extra {
            curves.push(sinew_jobs::asset::RawCurve {
                name: "only_a".into(),
                track: RawTrack::linear(vec![0.0, 1.0], vec![0.0, 2.0]),
            });
        }
        Arc::new(
            RawClip {
                name: name.into(),
                duration: Some(1.0),
                curves,
                ..Default::default()
            }
            .bake(&rig)
            .unwrap(),
        )
    };
    let (a, b) = (curve_clip("a", 1.0, true), curve_clip("b", 0.0, false));
    let mut store = Store::new();
    let e = store
        .spawn(animated(
            rig.clone(),
            vec![
                AnimationToProcess::new(a).at(0.5).weight(0.25),
                AnimationToProcess::new(b).at(0.5).weight(0.75),
            ],
        ))
        .unwrap();
    store
        .insert(e, sinew_jobs::component::CurveValues::default())
        .unwrap();
    let mut animator = Animator::with(
        &mut store,
        PipelineConfig {
            advance_clocks: false,
            ..Default::default()
        },
        |_, _| {},
    )
    .unwrap();
    for _ in 0..2 {
        animator.run_frame(&mut store, 0.0).unwrap();
        let c = store.get::<sinew_jobs::component::CurveValues>(e).unwrap();
        // 0.25 · 1 + 0.75 · 0 over total weight 1.
        assert!((c.get("contact").unwrap() - 0.25).abs() < 1e-6);
        // Only A has it: its own value (1.0 at t = 0.5), not diluted by B.
        assert!((c.get("only_a").unwrap() - 1.0).abs() < 1e-6);
        assert_eq!(c.values().len(), 2);
    }
}

/// The default pipeline with jobs 4, 6, 7 and 9 as separate nodes.
fn staged() -> PipelineConfig {
    PipelineConfig {
        pose_chain: PoseChain::Staged,
        ..Default::default()
    }
}

#[test]
fn a_fused_chain_refuses_a_node_between_propagation_and_skinning() {
    // With jobs 4, 6, 7 and 9 fused, "after 7 and before 9" is a cycle: the build says what
    // the node asked for and what to do, instead of running it at the wrong time.
    let mut store = Store::new();
    let err = Animator::with(&mut store, PipelineConfig::default(), |b, nodes| {
        let ik = b.add_node(FnNode::new("ik", Access::new(), |_| Ok(())));
        b.add_edge(nodes.propagate, ik).add_edge(ik, nodes.skinning);
    })
    .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, GraphBuildError::Misplaced { ref node, .. } if node == "ik"),
        "{text}"
    );
    assert!(
        text.contains("ordered both after and before `4·6·7·9 pose chain`")
            && text.contains("PoseChain::Staged")
            && text.contains("Animator::with_stages"),
        "{text}"
    );
}

/// A node that edits poses must reach this frame's palettes: in the staged pipeline it is
/// ordered before skinning or refused with the fix; in the fused one it is refused (the poses
/// live in per-worker scratch there).
#[test]
fn a_pose_editing_node_is_ordered_before_skinning_or_refused_with_the_fix() {
    let edits_model = || FnNode::new("ik", Access::new().write::<ModelPoses>(), |_| Ok(()));
    let mut store = Store::new();
    // Staged, no edge: it would run after skinning (insertion order) and change nothing.
    let err = Animator::with(&mut store, staged(), |b, _| {
        b.add_node(edits_model());
    })
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("node `ik`: it writes `ModelPoses`, which `9 skinning` reads")
            && text.contains("add an edge from it to `PipelineNodes::skinning`"),
        "{text}"
    );
    // Staged, ordered after propagation and before skinning: accepted.
    Animator::with(&mut store, staged(), |b, nodes| {
        let ik = b.add_node(edits_model());
        b.add_edge(nodes.propagate, ik).add_edge(ik, nodes.skinning);
    })
    .unwrap();
    // Fused: refused whatever its edges, with the staged pipeline as the fix.
    for keep in [false, true] {
        let config = PipelineConfig {
            pose_chain: PoseChain::Fused {
                keep_model_poses: keep,
            },
            ..Default::default()
        };
        let err = Animator::with(&mut store, config, |b, nodes| {
            let ik = b.add_node(edits_model());
            b.add_edge(ik, nodes.skinning);
        })
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("per-worker scratch")
                && text.contains("`PoseChain::Staged`")
                && text.contains("`Animator::with_stages`"),
            "{text}"
        );
    }
}

#[test]
fn fused_chain_without_kept_model_poses_gives_the_same_palettes_and_refuses_exposed_bones() {
    let (mut store, e, _) = bending_arm(0.25);
    let keeping = PipelineConfig {
        pose_chain: PoseChain::FUSED_KEEPING_MODEL_POSES,
        ..without_clocks()
    };
    let mut kept = Animator::with(&mut store, keeping, |_, _| {}).unwrap();
    kept.run_frame(&mut store, 0.0).unwrap();
    let want = kept.palettes(&store).to_vec();
    let dropped_config = without_clocks();
    let mut dropped = Animator::with(&mut store, dropped_config, |_, _| {}).unwrap();
    dropped.run_frame(&mut store, 0.0).unwrap();
    assert_eq!(dropped.palettes(&store), &want[..]);
    assert!(store.resource::<ModelPoses>().unwrap().0.is_empty());
    // An exposed bone needs the model poses: a clear error, not a silent identity.
    store
        .spawn((
            ExposedBone {
                owner: e,
                bone: BoneIndex(1),
            },
            BoneWorld::default(),
        ))
        .unwrap();
    let err = dropped.run_frame(&mut store, 0.0).unwrap_err();
    assert_eq!(err.node(), Some("7 exposed bones"));
    assert!(err.to_string().contains("keep_model_poses"), "{err}");
}

/// The layout is known before the first frame, equals the frame's, and the instance table maps
/// each entity to its palette range however churn has moved it; each survivor's palette there
/// equals the same entity animated alone.
#[test]
fn layout_before_the_first_frame_and_the_instance_table_after_churn() {
    use sinew_jobs::component::skinned;
    let rig = Arc::new(arm_rig());
    let clip = Arc::new(bend(&rig));
    let mesh = Arc::new(arm_mesh());
    let mut store = Store::new();
    let spawn = |store: &mut Store, t: f32| {
        let anims = vec![AnimationToProcess::new(clip.clone()).at(t)];
        store
            .spawn(skinned(rig.clone(), mesh.clone(), anims))
            .unwrap()
    };
    let times = [0.1f32, 0.2, 0.3, 0.4, 0.5];
    let entities: Vec<Entity> = times.iter().map(|&t| spawn(&mut store, t)).collect();
    let mut animator = Animator::with(&mut store, without_clocks(), |_, _| {}).unwrap();

    let layout = animator.layout(&mut store).unwrap();
    assert_eq!(layout.palette_len(), 5 * mesh.bone_count());
    let n = mesh.bone_count();
    for (k, &e) in entities.iter().enumerate() {
        assert_eq!(layout.palette_range(e), Some(k * n..(k + 1) * n));
        assert_eq!(layout.palette_offsets().get(e), Some((k * n) as u32));
    }

    // Churn: despawn two, spawn one (it may reuse an index).
    store.despawn(entities[1]).unwrap();
    store.despawn(entities[3]).unwrap();
    let newcomer = spawn(&mut store, 0.9);
    let alive: Vec<(Entity, f32)> = [0, 2, 4]
        .iter()
        .map(|&k| (entities[k], times[k]))
        .chain([(newcomer, 0.9)])
        .collect();
    let len = animator.layout(&mut store).unwrap().palette_len();
    assert_eq!(len, 4 * n);
    let mut palette = vec![[0.0f32; 12]; len];
    animator
        .run_frame_into(&mut store, 0.0, &mut palette)
        .unwrap();
    let table = animator.palette_offsets(&store).clone();
    assert_eq!(table.get(entities[1]), None);
    assert_eq!(table.get(entities[3]), None);
    let mut starts: Vec<u32> = alive.iter().map(|&(e, _)| table.get(e).unwrap()).collect();
    starts.sort_unstable();
    assert_eq!(starts, [0, n as u32, 2 * n as u32, 3 * n as u32]);
    for &(e, t) in &alive {
        let at = table.get(e).unwrap() as usize;
        let mut alone = Store::new();
        spawn(&mut alone, t);
        let mut single = Animator::with(&mut alone, without_clocks(), |_, _| {}).unwrap();
        single.run_frame(&mut alone, 0.0).unwrap();
        assert_eq!(
            &palette[at..at + n],
            single.palettes(&alone),
            "entity {e:?}"
        );
    }
}

/// The staged graph prints the seed's edges (1 → 2 → 3 → 4 → {5, 6}; 6 → 7 → 9; 8 → 9), with
/// the controller between the clock and job 1 and its events after job 5; the fused one shows
/// jobs 4, 6, 7 and 9 as one node, with job 5 beside it.
#[test]
fn the_printed_graph_has_the_seed_edges() {
    let mut store = Store::new();
    let staged_graph = Animator::with(&mut store, staged(), |_, _| {}).unwrap();
    let mut edges = staged_graph.graph().edges();
    edges.sort_unstable();
    assert_eq!(
        edges,
        [
            ("1 bone offsets", "2 prefix sum"),
            ("2 prefix sum", "3 per-bone info"),
            ("3 per-bone info", "4 sample + blend"),
            ("4 sample + blend", "5 user curves"),
            ("4 sample + blend", "6 root motion"),
            ("5 user curves", "controller events"),
            ("6 root motion", "7 propagate"),
            ("7 propagate", "9 skinning"),
            ("8 remap cache", "9 skinning"),
            ("advance clocks", "controller"),
            ("controller", "1 bone offsets"),
        ]
    );
    let fused = Animator::new(&mut store).unwrap();
    let text = fused.graph().to_string();
    for line in [
        "3 per-bone info -> 4·6·7·9 pose chain",
        "3 per-bone info -> 5 user curves",
        "8 remap cache -> 4·6·7·9 pose chain",
        "4·6·7·9 pose chain -> 7 exposed bones",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing from\n{text}"
        );
    }
    assert!(
        fused
            .graph()
            .to_dot()
            .contains("\"8 remap cache\" -> \"4·6·7·9 pose chain\";")
    );
}

#[test]
fn job_3_fills_the_bone_table_only_for_a_node_that_reads_it() {
    let rig = Arc::new(arm_rig());
    let spawn = |store: &mut Store| {
        for _ in 0..3 {
            store.spawn(animated(rig.clone(), vec![])).unwrap();
        }
    };
    // No node reads the table: job 3 leaves it empty.
    let mut store = Store::new();
    spawn(&mut store);
    let mut animator = Animator::new(&mut store).unwrap();
    animator.run_frame(&mut store, 0.0).unwrap();
    assert!(store.resource::<BoneTable>().unwrap().0.is_empty());
    // A node that reads it gets (entity, bone) for each flat bone: entity i's bones 0, 1, 2
    // at flat bones 3i..3i+3 (three-bone rigs, packed in order).
    let mut store = Store::new();
    spawn(&mut store);
    let mut animator = Animator::with(&mut store, PipelineConfig::default(), |b, nodes| {
        let reader = b.add_node(FnNode::new(
            "bone table reader",
            Access::new().read::<BoneTable>(),
            |_| Ok(()),
        ));
        b.add_edge(nodes.per_bone_info, reader);
    })
    .unwrap();
    animator.run_frame(&mut store, 0.0).unwrap();
    let table: Vec<(u32, u32)> = store
        .resource::<BoneTable>()
        .unwrap()
        .0
        .iter()
        .map(|s| (s.entity, s.bone))
        .collect();
    let expected: Vec<(u32, u32)> = (0..3).flat_map(|e| (0..3).map(move |b| (e, b))).collect();
    assert_eq!(table, expected);
}

/// An elbow angle (radians about Z) for [`SetElbow`], and a root offset for [`ShiftRoot`].
#[derive(Clone, Copy, Debug)]
struct Elbow(f32);

/// A local stage after sampling: sets the elbow's local rotation.
#[derive(Debug)]
struct SetElbow;

impl LocalPoseStage for SetElbow {
    type Input = Elbow;
    fn name(&self) -> &str {
        "set elbow"
    }
    fn point(&self) -> LocalStagePoint {
        LocalStagePoint::AfterSampling
    }
    fn check(&self, rig: &Rig, input: &Elbow) -> Result<(), StageError> {
        if !input.0.is_finite() {
            return Err(StageError::NotFinite {
                what: "elbow angle",
            });
        }
        match rig.bone_count() {
            3.. => Ok(()),
            n => Err(StageError::BoneOutOfRange {
                bone: 1,
                bone_count: n,
            }),
        }
    }
    fn apply(&self, input: &Elbow, pose: &mut LocalStagePose<'_>) {
        if let Some(mut t) = pose.local.get(1) {
            t.rotation = Quat::from_rotation_z(input.0);
            assert!(pose.local.set(1, &t));
        }
    }
}

/// A local stage after root motion: moves the root by the entity's transform's x (so it also
/// shows that the stage sees the transform root motion left).
#[derive(Debug)]
struct ShiftRoot;

impl LocalPoseStage for ShiftRoot {
    type Input = Elbow;
    fn name(&self) -> &str {
        "shift root"
    }
    fn point(&self) -> LocalStagePoint {
        LocalStagePoint::AfterRootMotion
    }
    fn check(&self, _: &Rig, _: &Elbow) -> Result<(), StageError> {
        Ok(())
    }
    fn apply(&self, _: &Elbow, pose: &mut LocalStagePose<'_>) {
        let x = pose.transform.map_or(0.0, |t| t.translation.x);
        if let Some(mut t) = pose.local.get(0) {
            t.translation.x += 1.0 + x;
            pose.local.set(0, &t);
        }
    }
}

#[test]
fn local_stages_edit_the_pose_after_sampling_and_after_root_motion_in_both_pipelines() {
    let rig = Arc::new(arm_rig());
    let mesh = Arc::new(arm_mesh());
    let run = |config: PipelineConfig, threads: usize| {
        let mut store = Store::new();
        let bent = store.spawn(animated(rig.clone(), vec![])).unwrap();
        store.insert(bent, SkinRef::new(mesh.clone())).unwrap();
        store.insert(bent, Elbow(FRAC_PI_2)).unwrap();
        store
            .insert(
                bent,
                EntityTransform(Transform::from_translation(2.0 * Vec3::X)),
            )
            .unwrap();
        let plain = store.spawn(animated(rig.clone(), vec![])).unwrap();
        store.insert(plain, SkinRef::new(mesh.clone())).unwrap();
        // Added after, but runs at its point: after sampling, so before the root shift.
        let stages = PoseStages::new().with_local(ShiftRoot).with_local(SetElbow);
        let mut animator = Animator::with_stages(&mut store, config, &stages, |_, _| {}).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| animator.run_frame(&mut store, 0.0))
            .unwrap();
        let palettes = animator.palettes(&store).to_vec();
        let order = |e: Entity| store.get::<FrameSlot>(e).unwrap().palette_offset as usize;
        (palettes, order(bent), order(plain))
    };
    let (fused, bent, plain) = run(without_clocks(), 1);
    // Root shifted by 1 + 2 (the transform's x) along X, elbow turned 90° about Z: the tip
    // (at (0, 2, 0) at rest) goes to (3, 0, 0) + (0, 1, 0) + (−1, 0, 0) = (2, 1, 0), the
    // vertex on the elbow (0.5 along X from it) to the elbow (3, 1, 0) plus (0, 0.5, 0). The
    // entity without the input is at rest.
    let p = |base: usize, k: usize, v: Vec3| palette_point(&fused[base + k], v);
    assert!(close(
        p(bent, 0, Vec3::new(0.0, 2.0, 0.0)),
        Vec3::new(2.0, 1.0, 0.0)
    ));
    assert!(close(
        p(bent, 2, Vec3::new(0.5, 1.0, 0.0)),
        Vec3::new(3.0, 1.5, 0.0)
    ));
    assert!(close(
        p(plain, 0, Vec3::new(0.0, 2.0, 0.0)),
        Vec3::new(0.0, 2.0, 0.0)
    ));
    // The staged pipeline runs them in nodes between jobs 4 and 6 and 6 and 7: the same
    // palettes, bit for bit, on any number of threads.
    let staged = run(staged_without_clocks(), 4);
    let bits = |v: &[[f32; 12]]| -> Vec<u32> { v.iter().flatten().map(|x| x.to_bits()).collect() };
    assert_eq!(bits(&fused), bits(&staged.0));
    assert_eq!(bits(&fused), bits(&run(without_clocks(), 4).0));
}

#[test]
fn a_local_stage_checks_every_entity_before_the_frame_moves() {
    let rig = Arc::new(arm_rig());
    let mut store = Store::new();
    let e = store.spawn(animated(rig, vec![])).unwrap();
    store.insert(e, Elbow(f32::NAN)).unwrap();
    let stages = PoseStages::new().with_local(SetElbow);
    let mut animator =
        Animator::with_stages(&mut store, without_clocks(), &stages, |_, _| {}).unwrap();
    let err = animator.run_frame(&mut store, 0.0).unwrap_err().to_string();
    assert!(
        err.contains("set elbow") && err.contains("elbow angle is not finite"),
        "{err}"
    );
}

#[test]
fn palettes_do_not_depend_on_how_a_crowd_of_mixed_rigs_and_meshes_falls_into_lane_groups() {
    // The fused chain runs jobs 7 and 9 for up to eight entities in a row with one rig and one
    // mesh at once (one entity per SIMD lane); any other entity runs alone. Two rigs of equal
    // content but distinct assets, two meshes (the second lists the bones in rig order with
    // other binds), and skins with a root bone (never grouped) are interleaved in one store
    // chunk. Grain 1 (every entity alone) and the staged pipeline (jobs 7 and 9 entity by
    // entity) are the references, bit for bit.
    let rigs = [Arc::new(arm_rig()), Arc::new(arm_rig())];
    let (bend, lift) = (Arc::new(bend(&rigs[0])), Arc::new(lift(&rigs[0])));
    let in_rig_order = RawSkinnedMesh {
        name: "arm mesh in rig order".into(),
        bones: ["root", "elbow", "tip"]
            .iter()
            .enumerate()
            .map(|(i, &b)| (b.into(), Mat4::from_translation(-0.9 * i as f32 * Vec3::Y)))
            .collect(),
        positions: vec![Vec3::new(0.0, 2.0, 0.0)],
        normals: vec![],
        influences: vec![RawVertexInfluences(vec![(2, 1.0)])],
        indices: vec![],
        ..Default::default()
    }
    .bake()
    .unwrap();
    let meshes = [Arc::new(arm_mesh()), Arc::new(in_rig_order)];
    let run = |config: PipelineConfig, threads: usize| {
        let mut store = Store::new();
        let entities: Vec<Entity> = (0..60)
            .map(|i| {
                let t = 0.037 * i as f32;
                let animations = vec![
                    AnimationToProcess::new(bend.clone()).at(t % 1.0),
                    AnimationToProcess::new(lift.clone())
                        .at(1.0 - t % 1.0)
                        .weight(0.5),
                ];
                let rig = rigs[usize::from(i % 9 == 4)].clone();
                let e = store.spawn(animated(rig, animations)).unwrap();
                let mut skin = SkinRef::new(meshes[usize::from(i % 7 == 3)].clone());
                if i % 11 == 5 {
                    skin.root_bone = Some(BoneIndex(1));
                }
                store.insert(e, skin).unwrap();
                e
            })
            .collect();
        let mut animator = Animator::with(&mut store, config, |_, _| {}).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| animator.run_frame(&mut store, 0.0))
            .unwrap();
        let palettes = animator.palettes(&store);
        let bits: Vec<Vec<u32>> = entities
            .iter()
            .map(|&e| {
                let slot = store.get::<FrameSlot>(e).unwrap();
                let start = slot.palette_offset as usize;
                let entries = &palettes[start..start + slot.palette_count as usize];
                entries.iter().flatten().map(|x| x.to_bits()).collect()
            })
            .collect();
        bits
    };
    let alone = run(
        PipelineConfig {
            grain: 1,
            ..without_clocks()
        },
        1,
    );
    // The entities are posed differently (the references are not trivially equal).
    assert_ne!(alone[0], alone[1]);
    for threads in [1, 3] {
        for grain in [2, 5, 16, 64] {
            let config = PipelineConfig {
                grain,
                ..without_clocks()
            };
            assert_eq!(
                run(config, threads),
                alone,
                "grain {grain}, {threads} threads"
            );
        }
        assert_eq!(run(staged_without_clocks(), threads), alone, "staged");
    }
}

#[test]
fn a_palette_lent_as_mapped_memory_gets_the_same_entries() {
    // Lane groups write a write-combined slice through the workers' scratch, each entity's
    // palette in one run; the entries are the ones written straight into cached memory.
    let rig = Arc::new(arm_rig());
    let (bend, mesh) = (Arc::new(bend(&rig)), Arc::new(arm_mesh()));
    let run = |mapped: bool| {
        let mut store = Store::new();
        for i in 0..37 {
            let animation = AnimationToProcess::new(bend.clone()).at(0.027 * i as f32);
            let e = store.spawn(animated(rig.clone(), vec![animation])).unwrap();
            store.insert(e, SkinRef::new(mesh.clone())).unwrap();
        }
        let mut animator = Animator::with(&mut store, without_clocks(), |_, _| {}).unwrap();
        let len = animator.layout(&mut store).unwrap().palette_len();
        let mut palette = vec![[f32::NAN; 12]; len];
        if mapped {
            animator.run_frame_into_mapped(&mut store, 0.0, &mut palette)
        } else {
            animator.run_frame_into(&mut store, 0.0, &mut palette)
        }
        .unwrap();
        palette
    };
    let bits = |v: &[[f32; 12]]| -> Vec<u32> { v.iter().flatten().map(|x| x.to_bits()).collect() };
    let cached = run(false);
    assert!(cached.iter().flatten().all(|x| x.is_finite()));
    assert_ne!(cached[0], cached[4]);
    assert_eq!(bits(&run(true)), bits(&cached));
}
