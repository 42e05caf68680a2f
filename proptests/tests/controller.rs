//! Property tests of the animation controller: blend-tree weights are non-negative and sum to
//! 1; a state machine's layer weights sum to 1, move continuously through a cross-fade, switch
//! in one frame over a zero-duration transition, and do not depend on the thread count.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests unwrap: a failure is the test failing

use glam::{Quat, Vec2, Vec3};
use proptest::prelude::*;
use sinew_jobs::asset::{RawBone, RawBoneTracks, RawClip, RawRig, RawTrack, Rig, Transform};
use sinew_jobs::component::{Animations, LayerWeights, RigRef};
use sinew_jobs::controller::blend_tree::{check_layout, weights_1d, weights_2d};
use sinew_jobs::controller::{
    BlendTreeKind, ControllerAssets, ControllerJob, ControllerState, InterruptionSource,
    RawBlendTree, RawCondition, RawController, RawLayer, RawMotion, RawState, RawTransition,
};
use sinew_runtime::store::Entity;
use std::sync::Arc;

fn check_weights(w: &[f32]) -> Result<(), TestCaseError> {
    let sum: f32 = w.iter().sum();
    prop_assert!(w.iter().all(|x| x.is_finite() && *x >= 0.0), "{w:?}");
    prop_assert!((sum - 1.0).abs() < 1e-4, "sum {sum}: {w:?}");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn one_d_weights_are_a_partition_of_unity(
        t in prop::collection::vec(-10.0f32..10.0, 1..8),
        x in -20.0f32..20.0,
    ) {
        prop_assume!(check_layout(BlendTreeKind::OneD, &t, &[]).is_ok());
        let mut w = vec![0.0; t.len()];
        weights_1d(&t, x, &mut w);
        check_weights(&w)?;
        // At most two children share the weight, and they are neighbours in threshold order.
        prop_assert!(w.iter().filter(|x| **x > 0.0).count() <= 2);
    }

    #[test]
    fn two_d_weights_are_a_partition_of_unity(
        pts in prop::collection::vec((-4.0f32..4.0, -4.0f32..4.0), 1..10),
        q in (-8.0f32..8.0, -8.0f32..8.0),
        kind in prop::sample::select(vec![
            BlendTreeKind::FreeformCartesian,
            BlendTreeKind::FreeformDirectional,
            BlendTreeKind::SimpleDirectional,
        ]),
    ) {
        let p: Vec<Vec2> = pts.iter().map(|&(x, y)| Vec2::new(x, y)).collect();
        prop_assume!(check_layout(kind, &[], &p).is_ok());
        let mut w = vec![0.0; p.len()];
        weights_2d(kind, &p, Vec2::new(q.0, q.1), &mut w);
        check_weights(&w)?;
        // At a sample, that sample takes all of it (simple directional: for its directions).
        for (i, s) in p.iter().enumerate() {
            weights_2d(kind, &p, *s, &mut w);
            prop_assert!((w[i] - 1.0).abs() < 1e-4, "{kind:?} at sample {i}: {w:?}");
        }
    }
}

fn rig() -> Arc<Rig> {
    Arc::new(
        RawRig {
            name: "r".into(),
            bones: vec![
                RawBone {
                    name: "root".into(),
                    parent: None,
                    rest: Transform::IDENTITY,
                },
                RawBone {
                    name: "arm".into(),
                    parent: Some(0),
                    rest: Transform::from_translation(Vec3::Y),
                },
            ],
        }
        .bake()
        .unwrap(),
    )
}

fn assets(rig: &Rig) -> ControllerAssets {
    let clip = |name: &str, d: f32| {
        Arc::new(
            RawClip {
                name: name.into(),
                bones: vec![RawBoneTracks {
                    bone: "arm".into(),
                    translation: None,
                    rotation: Some(RawTrack::linear(
                        vec![0.0, d],
                        vec![Quat::IDENTITY, Quat::from_rotation_z(1.0)],
                    )),
                    scale: None,
                }],
                ..Default::default()
            }
            .bake(rig)
            .unwrap(),
        )
    };
    ControllerAssets::new()
        .clip(clip("a", 1.0))
        .clip(clip("b", 0.7))
        .clip(clip("c", 2.3))
}

/// Three states (a clip, a 1D tree, a clip) with transitions among them on triggers and
/// exit times, durations from the case, every interruption source. The ways back to A need
/// an exit time, so zero durations make no cycle (which bake refuses).
fn controller(durations: [f32; 4], exit: f32, source: InterruptionSource) -> RawController {
    let t = |to: &str, trig: &str, d: f32| {
        RawTransition::to(to)
            .duration(d)
            .when(RawCondition::trigger(trig))
            .interruption(source, false)
    };
    RawController::new("p")
        .float("speed", 0.0)
        .trigger("t1")
        .trigger("t2")
        .trigger("t3")
        .layer(
            RawLayer::new("base")
                .state(
                    RawState::clip("A", "a")
                        .transition(t("B", "t1", durations[0]))
                        .transition(t("C", "t2", durations[1])),
                )
                .state(
                    RawState::tree(
                        "B",
                        RawBlendTree::one_d("speed")
                            .child(RawMotion::clip("a"), 0.0)
                            .child(RawMotion::clip("c"), 1.0),
                    )
                    .speed_parameter("speed")
                    .transition(t("C", "t3", durations[2]))
                    .transition(
                        RawTransition::to("A")
                            .exit_time(exit)
                            .duration(durations[3]),
                    ),
                )
                .state(
                    RawState::clip("C", "b").transition(t("A", "t1", durations[3]).exit_time(0.9)),
                ),
        )
}

/// A frame's commands: which triggers to set, and the speed.
fn commands() -> impl Strategy<Value = Vec<(u8, f32)>> {
    prop::collection::vec((0u8..8, 0.0f32..1.5), 1..80)
}

fn sources() -> impl Strategy<Value = InterruptionSource> {
    prop::sample::select(vec![
        InterruptionSource::None,
        InterruptionSource::Current,
        InterruptionSource::Next,
        InterruptionSource::CurrentThenNext,
        InterruptionSource::NextThenCurrent,
    ])
}

fn apply(s: &mut ControllerState, (bits, speed): (u8, f32)) {
    for (k, name) in ["t1", "t2", "t3"].iter().enumerate() {
        if bits & (1 << k) != 0 {
            s.set_trigger(name).unwrap();
        }
    }
    s.set_float("speed", speed).unwrap();
}

const DT: f32 = 1.0 / 60.0;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn layer_weights_sum_to_one_and_move_continuously(
        durations in prop::array::uniform4(prop::sample::select(vec![0.0f32, 0.1, 0.25, 0.6])),
        exit in 0.0f32..2.0,
        source in sources(),
        cmds in commands(),
    ) {
        let rig = rig();
        let ctl = Arc::new(controller(durations, exit, source).bake(&rig, &assets(&rig)).unwrap());
        let mut s = ControllerState::new(ctl, &rig).unwrap();
        let (mut a, mut lw) = (Animations::default(), LayerWeights::default());
        let mut last: Vec<(u16, f32)> = Vec::new();
        for &c in &cmds {
            apply(&mut s, c);
            let before = s.transitions_started();
            s.step(DT, None, &mut a, &mut lw);
            let total: f32 = a.as_slice().iter().map(|x| x.weight).sum();
            prop_assert!((total - 1.0).abs() < 1e-4, "layer weight {total}");
            prop_assert!(a.as_slice().iter().all(|x| x.weight > 0.0 && x.time.is_finite()));
            let now: Vec<(u16, f32)> = s.playing(0).iter().map(|p| (p.state, p.weight)).collect();
            let psum: f32 = now.iter().map(|p| p.1).sum();
            prop_assert!((psum - 1.0).abs() < 1e-4, "{now:?}");
            // Without a new transition, each state's weight moves by at most dt / shortest
            // non-zero duration (0.1 s) per frame.
            if s.transitions_started() == before && !last.is_empty() {
                let w = |v: &[(u16, f32)], st: u16| v.iter().filter(|p| p.0 == st).map(|p| p.1).sum::<f32>();
                for st in 0..3u16 {
                    let d = (w(&now, st) - w(&last, st)).abs();
                    prop_assert!(d <= DT / 0.1 + 1e-4, "state {st} jumped by {d}: {last:?} -> {now:?}");
                }
            }
            last = now;
        }
    }

    #[test]
    fn a_zero_duration_transition_switches_within_the_frame(
        cmds in commands(),
    ) {
        let rig = rig();
        let ctl = Arc::new(controller([0.0; 4], 0.5, InterruptionSource::None).bake(&rig, &assets(&rig)).unwrap());
        let mut s = ControllerState::new(ctl, &rig).unwrap();
        let (mut a, mut lw) = (Animations::default(), LayerWeights::default());
        for &c in &cmds {
            apply(&mut s, c);
            s.step(DT, None, &mut a, &mut lw);
            prop_assert!(s.transition(0).is_none(), "zero-duration transitions never stay active");
            prop_assert_eq!(s.playing(0).len(), 1);
        }
    }

    #[test]
    fn results_do_not_depend_on_the_thread_count(
        durations in prop::array::uniform4(prop::sample::select(vec![0.0f32, 0.25, 0.6])),
        source in sources(),
        cmds in commands(),
    ) {
        let rig = rig();
        let ctl = Arc::new(controller(durations, 0.8, source).bake(&rig, &assets(&rig)).unwrap());
        let n = 64;
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let mut states: Vec<ControllerState> = (0..n).map(|_| ControllerState::new(ctl.clone(), &rig).unwrap()).collect();
            let mut anims = vec![Animations::default(); n];
            let mut lws = vec![LayerWeights::default(); n];
            let rigs = vec![RigRef(rig.clone()); n];
            let entities = vec![Entity::DANGLING; n];
            for (f, &c) in cmds.iter().enumerate() {
                for (i, s) in states.iter_mut().enumerate() {
                    if (i + f) % 3 == 0 {
                        apply(s, c);
                    }
                }
                pool.install(|| {
                    use rayon::prelude::*;
                    states.par_chunks_mut(5).zip(anims.par_chunks_mut(5)).zip(lws.par_chunks_mut(5)).zip(rigs.par_chunks(5)).zip(entities.par_chunks(5))
                        .for_each(|((((s, a), l), r), e)| {
                            let mut job = ControllerJob { entities: e, rigs: r, states: s, animations: a, layer_weights: l, curves: None, dt: DT };
                            job.validate().unwrap();
                            job.run();
                        });
                });
            }
            anims.iter().map(|a| a.as_slice().iter().map(|x| (x.weight.to_bits(), x.time.to_bits(), x.previous_time.to_bits(), x.clip.name().to_string())).collect::<Vec<_>>()).collect::<Vec<_>>()
        };
        prop_assert_eq!(run(1), run(4));
    }
}
