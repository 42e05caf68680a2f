//! The animation controller against hand-computed values: blend-tree weights, transition
//! timing, interruption, triggers, events, bad input, and the pipeline end to end.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the test failing

use glam::{Quat, Vec2, Vec3};
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{
    Clip, RawAvatarMask, RawBone, RawBoneTracks, RawClip, RawCurve, RawRig, RawTrack, Rig,
    Transform, bone_hash,
};
use sinew_jobs::component::{
    AnimationToProcess, Animations, BlendMode, CurveValues, EventSource, FiredEvents, LayerWeights,
    animated,
};
use sinew_jobs::controller::blend_tree::{
    self, BlendLayoutError, DIRECTIONAL_ANGLE_SCALE, weights_1d, weights_cartesian,
    weights_directional, weights_simple_directional,
};
use sinew_jobs::controller::{
    BlendTreeKind, Controller, ControllerAssets, ControllerError, ControllerEventKind,
    ControllerState, InterruptionSource, ParamKind, RawBlendTree, RawCondition, RawController,
    RawLayer, RawMotion, RawState, RawTransition,
};
use sinew_runtime::store::Store;
use std::sync::Arc;

const DT: f32 = 1.0 / 16.0; // exact in binary, so hand values are exact

fn rig() -> Rig {
    RawRig {
        name: "two".into(),
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
    .unwrap()
}

/// A looping clip of `duration` seconds turning the arm about Z.
fn clip(rig: &Rig, name: &str, duration: f32) -> Arc<Clip> {
    Arc::new(
        RawClip {
            name: name.into(),
            bones: vec![RawBoneTracks {
                bone: "arm".into(),
                translation: None,
                rotation: Some(RawTrack::linear(
                    vec![0.0, duration],
                    vec![Quat::IDENTITY, Quat::from_rotation_z(1.0)],
                )),
                scale: None,
            }],
            ..Default::default()
        }
        .bake(rig)
        .unwrap(),
    )
}

struct Fixture {
    rig: Arc<Rig>,
    assets: ControllerAssets,
}

/// Clips a (1 s), b (2 s), c (0.5 s), d (4 s), all looping.
fn fixture() -> Fixture {
    let rig = Arc::new(rig());
    let assets = ControllerAssets::new()
        .clip(clip(&rig, "a", 1.0))
        .clip(clip(&rig, "b", 2.0))
        .clip(clip(&rig, "c", 0.5))
        .clip(clip(&rig, "d", 4.0));
    Fixture { rig, assets }
}

impl Fixture {
    fn bake(&self, raw: &RawController) -> Arc<Controller> {
        Arc::new(raw.bake(&self.rig, &self.assets).unwrap())
    }
    fn state(&self, raw: &RawController) -> ControllerState {
        ControllerState::new(self.bake(raw), &self.rig).unwrap()
    }
}

/// One frame; returns the list as (clip, weight, time, previous time, layer).
fn step(
    s: &mut ControllerState,
    a: &mut Animations,
    lw: &mut LayerWeights,
) -> Vec<(String, f32, f32, f32, u8)> {
    s.step(DT, None, a, lw);
    a.as_slice()
        .iter()
        .map(|x| {
            (
                x.clip.name().to_string(),
                x.weight,
                x.time,
                x.previous_time,
                x.layer,
            )
        })
        .collect()
}

fn weight_of(list: &[(String, f32, f32, f32, u8)], clip: &str) -> f32 {
    list.iter().filter(|e| e.0 == clip).map(|e| e.1).sum()
}

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() <= 1e-6
}

// ---- blend trees ---------------------------------------------------------------------------

#[test]
fn one_d_weights_at_and_between_thresholds() {
    let t = [0.0, 1.5, 4.0];
    let mut w = [0.0; 3];
    for (x, expect) in [
        (0.0, [1.0, 0.0, 0.0]),
        (1.5, [0.0, 1.0, 0.0]),
        (4.0, [0.0, 0.0, 1.0]),
        (0.75, [0.5, 0.5, 0.0]),
        (2.0, [0.0, 0.8, 0.2]), // (2 − 1.5) / 2.5 = 0.2
        (-3.0, [1.0, 0.0, 0.0]),
        (5.0, [0.0, 0.0, 1.0]),
    ] {
        weights_1d(&t, x, &mut w);
        for k in 0..3 {
            assert!(close(w[k], expect[k]), "x {x}: {w:?} vs {expect:?}");
        }
    }
    // Thresholds in any order.
    weights_1d(&[4.0, 0.0, 1.5], 2.0, &mut w);
    assert!(
        close(w[0], 0.2) && close(w[1], 0.0) && close(w[2], 0.8),
        "{w:?}"
    );
}

#[test]
fn cartesian_gradient_bands_by_hand() {
    let mut w = [0.0; 2];
    weights_cartesian(
        &[Vec2::new(0.0, 1.0), Vec2::new(1.0, 0.0)],
        Vec2::new(0.5, 0.5),
        &mut w,
    );
    assert!(close(w[0], 0.5) && close(w[1], 0.5), "{w:?}");
    // (0,0), (1,0), (0,1) at (0.25, 0.25): h = 0.75, 0.25, 0.25 → 0.6, 0.2, 0.2.
    let pts = [Vec2::ZERO, Vec2::X, Vec2::Y];
    let mut w = [0.0; 3];
    weights_cartesian(&pts, Vec2::new(0.25, 0.25), &mut w);
    assert!(
        close(w[0], 0.6) && close(w[1], 0.2) && close(w[2], 0.2),
        "{w:?}"
    );
    // At a sample: all its weight.
    weights_cartesian(&pts, Vec2::X, &mut w);
    assert_eq!(w, [0.0, 1.0, 0.0]);
    // On the segment from (1,0) to (0,1), a third of the way: h = 1/3, 2/3, 1/3 (the bands
    // are not the segment's barycentric weights: the origin keeps a share).
    weights_cartesian(&pts, Vec2::new(2.0 / 3.0, 1.0 / 3.0), &mut w);
    assert!(
        close(w[0], 0.25) && close(w[1], 0.5) && close(w[2], 0.25),
        "{w:?}"
    );
}

/// Johansen's polar gradient bands, written again in f64 straight from the formula.
fn polar_reference(points: &[[f64; 2]], p: [f64; 2]) -> Vec<f64> {
    let len = |v: [f64; 2]| (v[0] * v[0] + v[1] * v[1]).sqrt();
    let angle = |a: [f64; 2], b: [f64; 2]| {
        if len(a) == 0.0 || len(b) == 0.0 {
            return 0.0;
        }
        let cross = a[0] * b[1] - a[1] * b[0];
        let dot = a[0] * b[0] + a[1] * b[1];
        let t = cross.atan2(dot);
        if t <= -std::f64::consts::PI {
            std::f64::consts::PI
        } else {
            t
        }
    };
    let alpha = f64::from(DIRECTIONAL_ANGLE_SCALE);
    let mut h: Vec<f64> = points
        .iter()
        .enumerate()
        .map(|(i, &pi)| {
            let mut m = f64::INFINITY;
            for (j, &pj) in points.iter().enumerate() {
                if i == j {
                    continue;
                }
                let mean = 0.5 * (len(pi) + len(pj));
                let vij = [(len(pj) - len(pi)) / mean, alpha * angle(pi, pj)];
                let vip = [(len(p) - len(pi)) / mean, alpha * angle(pi, p)];
                let v =
                    1.0 - (vip[0] * vij[0] + vip[1] * vij[1]) / (vij[0] * vij[0] + vij[1] * vij[1]);
                m = m.min(v);
            }
            m.max(0.0)
        })
        .collect();
    let s: f64 = h.iter().sum();
    for x in &mut h {
        *x /= s;
    }
    h
}

fn check_directional(points: &[[f64; 2]], queries: &[[f64; 2]]) {
    let pts: Vec<Vec2> = points
        .iter()
        .map(|p| Vec2::new(p[0] as f32, p[1] as f32))
        .collect();
    let mut w = vec![0.0; pts.len()];
    for q in queries {
        weights_directional(&pts, Vec2::new(q[0] as f32, q[1] as f32), &mut w);
        let r = polar_reference(points, *q);
        let sum: f32 = w.iter().sum();
        assert!((sum - 1.0).abs() < 1e-5, "sum {sum}");
        for (a, b) in w.iter().zip(&r) {
            assert!(
                (f64::from(*a) - b).abs() < 1e-5,
                "query {q:?}: {w:?} vs {r:?}"
            );
        }
    }
}

#[test]
fn directional_gradient_bands_four_directions() {
    // Hand case: unit directions at 45° between +x and +y share it equally.
    let four = [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]];
    let pts: Vec<Vec2> = four
        .iter()
        .map(|p| Vec2::new(p[0] as f32, p[1] as f32))
        .collect();
    let mut w = [0.0; 4];
    let d = std::f32::consts::FRAC_1_SQRT_2;
    weights_directional(&pts, Vec2::new(d, d), &mut w);
    assert!(
        close(w[0], 0.5) && close(w[1], 0.5) && w[2] == 0.0 && w[3] == 0.0,
        "{w:?}"
    );
    weights_directional(&pts, Vec2::X, &mut w);
    assert!(close(w[0], 1.0), "{w:?}");
    // With a centre sample, and against the formula at assorted points.
    let mut five = four.to_vec();
    five.push([0.0, 0.0]);
    let queries = [
        [0.5, 0.0],
        [0.3, 0.4],
        [-0.7, 0.2],
        [1.5, -1.0],
        [0.0, 0.0],
        [0.05, -0.9],
    ];
    check_directional(&four, &queries[..4]);
    check_directional(&five, &queries);
}

#[test]
fn directional_gradient_bands_eight_directions_two_speeds() {
    let mut pts = vec![[0.0, 0.0]];
    for k in 0..8 {
        let a = f64::from(k) * std::f64::consts::FRAC_PI_4;
        pts.push([a.cos() * 1.5, a.sin() * 1.5]); // walk ring
    }
    for k in 0..8 {
        let a = f64::from(k) * std::f64::consts::FRAC_PI_4 + 0.1;
        pts.push([a.cos() * 4.0, a.sin() * 4.0]); // run ring, slightly turned
    }
    let queries = [
        [1.0, 0.2],
        [2.5, 2.5],
        [-3.0, 0.5],
        [0.0, -4.0],
        [0.2, 0.1],
        [5.0, 0.0],
    ];
    check_directional(&pts, &queries);
    // At the run sample straight ahead it takes all the weight.
    let v: Vec<Vec2> = pts
        .iter()
        .map(|p| Vec2::new(p[0] as f32, p[1] as f32))
        .collect();
    let mut w = vec![0.0; v.len()];
    weights_directional(&v, v[9], &mut w);
    assert!(close(w[9], 1.0), "{w:?}");
}

#[test]
fn simple_directional_triangles_by_hand() {
    let pts = [Vec2::ZERO, Vec2::X, Vec2::Y, -Vec2::X, -Vec2::Y];
    let mut w = [0.0; 5];
    // (0.25, 0.25) = 0.25·x + 0.25·y, centre 0.5.
    weights_simple_directional(&pts, Vec2::new(0.25, 0.25), &mut w);
    assert!(
        close(w[0], 0.5) && close(w[1], 0.25) && close(w[2], 0.25),
        "{w:?}"
    );
    // Beyond the edge: the two directions share it in proportion.
    weights_simple_directional(&pts, Vec2::new(1.5, 0.5), &mut w);
    assert!(
        close(w[0], 0.0) && close(w[1], 0.75) && close(w[2], 0.25),
        "{w:?}"
    );
    weights_simple_directional(&pts, Vec2::new(-0.5, -0.5), &mut w);
    assert!(
        close(w[0], 0.0) && close(w[3], 0.5) && close(w[4], 0.5),
        "{w:?}"
    );
    // Layout checks: a gap of 180° and duplicate directions are refused.
    assert!(matches!(
        blend_tree::check_layout(
            BlendTreeKind::SimpleDirectional,
            &[],
            &[Vec2::X, Vec2::Y, -Vec2::X]
        ),
        Err(BlendLayoutError::DirectionGap { .. })
    ));
    assert_eq!(
        blend_tree::check_layout(
            BlendTreeKind::SimpleDirectional,
            &[],
            &[Vec2::X, Vec2::X * 2.0, Vec2::Y, -Vec2::Y, -Vec2::X]
        ),
        Err(BlendLayoutError::DuplicateDirection {
            first: 0,
            second: 1
        })
    );
}

#[test]
fn nested_and_direct_trees_multiply_and_sync_by_normalised_time() {
    let f = fixture();
    // 1D on "speed": a (threshold 0), then a nested direct tree of b and c (threshold 1).
    let inner = RawBlendTree::direct(true)
        .child_weighted_by(RawMotion::clip("b"), "wb")
        .child_weighted_by(RawMotion::clip("c"), "wc");
    let tree = RawBlendTree::one_d("speed")
        .child(RawMotion::clip("a"), 0.0)
        .child(RawMotion::Tree(inner), 1.0);
    let raw = RawController::new("nested")
        .float("speed", 0.5)
        .float("wb", 3.0)
        .float("wc", 1.0)
        .layer(RawLayer::new("base").state(RawState::tree("move", tree)));
    let mut s = f.state(&raw);
    let (mut a, mut lw) = (Animations::default(), LayerWeights::default());
    let list = step(&mut s, &mut a, &mut lw);
    // a 0.5; b 0.5·0.75; c 0.5·0.25.
    assert!(close(weight_of(&list, "a"), 0.5), "{list:?}");
    assert!(close(weight_of(&list, "b"), 0.375), "{list:?}");
    assert!(close(weight_of(&list, "c"), 0.125), "{list:?}");
    // Duration = 0.5·1 + 0.375·2 + 0.125·0.5 = 1.3125 s; one frame advances dt / 1.3125 of a
    // cycle, and every clip is at that same normalised time.
    let n = DT / 1.3125;
    for (name, d) in [("a", 1.0), ("b", 2.0), ("c", 0.5)] {
        let e = list.iter().find(|e| e.0 == name).unwrap();
        assert!((e.2 - n * d).abs() < 1e-6, "{name}: {} vs {}", e.2, n * d);
        assert_eq!(e.3, 0.0);
    }
}

// ---- transitions ---------------------------------------------------------------------------

/// A (clip a, 1 s) → B (clip b, 2 s) with exit time 0.75 and a 0.25 s cross-fade.
fn a_to_b(t: RawTransition) -> RawController {
    RawController::new("ab")
        .bool("go", true)
        .trigger("jump")
        .layer(
            RawLayer::new("base")
                .state(RawState::clip("A", "a").transition(t))
                .state(RawState::clip("B", "b")),
        )
}

#[test]
fn exit_time_and_fixed_duration_cross_fade() {
    let f = fixture();
    let mut s = f.state(&a_to_b(
        RawTransition::to("B").exit_time(0.75).duration(0.25),
    ));
    let (mut a, mut lw) = (Animations::default(), LayerWeights::default());
    for frame in 1..=11 {
        let l = step(&mut s, &mut a, &mut lw);
        assert_eq!(l.len(), 1, "frame {frame}: {l:?}");
        assert!(close(l[0].2, frame as f32 * DT));
        assert!(s.transition(0).is_none());
    }
    // Frame 12: A reaches 0.75 and the transition starts (B at weight 0, not listed).
    let l = step(&mut s, &mut a, &mut lw);
    assert_eq!(s.transition(0).map(|t| t.1), Some(0.0));
    assert!(close(weight_of(&l, "a"), 1.0));
    // Frames 13..16: B fades in by dt / 0.25 a frame while A keeps playing.
    for k in 1..=3 {
        let l = step(&mut s, &mut a, &mut lw);
        let p = k as f32 * DT / 0.25;
        assert!(close(weight_of(&l, "b"), p), "{l:?}");
        assert!(close(weight_of(&l, "a"), 1.0 - p), "{l:?}");
        let ea = l.iter().find(|e| e.0 == "a").unwrap();
        assert!(close(ea.2, (12 + k) as f32 * DT), "A's time {l:?}");
        let eb = l.iter().find(|e| e.0 == "b").unwrap();
        // B started at 0 on frame 12 and advances dt per frame at 1 s per second (2 s clip).
        assert!(
            close(eb.2, k as f32 * DT) && close(eb.3, (k - 1) as f32 * DT),
            "B's times {eb:?}"
        );
    }
    let l = step(&mut s, &mut a, &mut lw);
    assert_eq!(l.len(), 1);
    assert!(close(weight_of(&l, "b"), 1.0));
    assert!(s.transition(0).is_none());
    assert_eq!(s.current_state(0), Some(1));
    assert!(close(s.normalized_time(0).unwrap(), 4.0 * DT / 2.0));
}

#[test]
fn exit_time_at_the_start_is_reached_on_the_first_frame() {
    let f = fixture();
    // A → B at exit time 0 (reached on the layer's first frame), switching at once; B → C at
    // exit time 0.25, B entered at offset 0.25: reached on B's first advanced frame (within
    // the frame of a zero-duration switch only transitions without exit time are followed).
    let raw = RawController::new("zero").layer(
        RawLayer::new("base")
            .state(
                RawState::clip("A", "a")
                    .transition(RawTransition::to("B").exit_time(0.0).offset(0.25)),
            )
            .state(
                RawState::clip("B", "b")
                    .transition(RawTransition::to("C").exit_time(0.25).duration(0.125)),
            )
            .state(RawState::clip("C", "c")),
    );
    let mut s = f.state(&raw);
    let (mut a, mut lw) = (Animations::default(), LayerWeights::default());
    step(&mut s, &mut a, &mut lw);
    assert_eq!(s.transitions_started(), 1, "A leaves on frame 1");
    step(&mut s, &mut a, &mut lw);
    // B's first interval is [0.25, 0.25 + dt / 2]: its exit time 0.25 is in it.
    assert_eq!(
        s.transitions_started(),
        2,
        "B leaves on its first advanced frame"
    );
    assert_eq!(s.playing(0).last().map(|p| p.state), Some(2));
}

#[test]
fn exit_time_below_one_waits_for_the_next_loop() {
    let f = fixture();
    // Exit time 0.5 with a bool that is false when A first passes 0.5.
    let raw = a_to_b(
        RawTransition::to("B")
            .exit_time(0.5)
            .when(RawCondition::is_true("go")),
    );
    let mut s = f.state(&raw);
    s.set_bool("go", false).unwrap();
    let (mut a, mut lw) = (Animations::default(), LayerWeights::default());
    let mut started = None;
    for frame in 1..=40 {
        if frame == 10 {
            s.set_bool("go", true).unwrap(); // after 0.5 (frame 8), before 1.5 (frame 24)
        }
        step(&mut s, &mut a, &mut lw);
        if started.is_none() && s.transitions_started() > 0 {
            started = Some(frame);
        }
    }
    assert_eq!(started, Some(24), "A passes 1.5 loops at frame 24");
}

#[test]
fn exit_time_from_one_up_fires_once_and_offset_and_normalized_duration() {
    let f = fixture();
    // Exit time 2.25 loops of A, duration half of A's cycle (0.5 s), B starts at 0.25.
    let raw = a_to_b(
        RawTransition::to("B")
            .exit_time(2.25)
            .normalized_duration(0.5)
            .offset(0.25),
    );
    let mut s = f.state(&raw);
    let (mut a, mut lw) = (Animations::default(), LayerWeights::default());
    for _ in 0..35 {
        step(&mut s, &mut a, &mut lw);
        assert!(s.transition(0).is_none());
    }
    step(&mut s, &mut a, &mut lw); // frame 36: 36/16 = 2.25
    assert!(s.transition(0).is_some());
    let l = step(&mut s, &mut a, &mut lw);
    // One frame into a 0.5 s fade: 0.125; B at 0.25·2 s + dt.
    assert!(close(weight_of(&l, "b"), 0.125), "{l:?}");
    let eb = l.iter().find(|e| e.0 == "b").unwrap();
    assert!(close(eb.2, 0.5 + DT), "{eb:?}");
    for _ in 0..7 {
        step(&mut s, &mut a, &mut lw);
    }
    assert_eq!(s.current_state(0), Some(1));
    assert!(s.transition(0).is_none());
}

#[test]
fn a_zero_duration_transition_switches_in_one_frame() {
    let f = fixture();
    let raw = a_to_b(RawTransition::to("B").when(RawCondition::trigger("jump")));
    let mut s = f.state(&raw);
    let (mut a, mut lw) = (Animations::default(), LayerWeights::default());
    step(&mut s, &mut a, &mut lw);
    s.set_trigger("jump").unwrap();
    let l = step(&mut s, &mut a, &mut lw);
    assert_eq!(l.len(), 1);
    assert!(close(weight_of(&l, "b"), 1.0), "{l:?}");
    assert!(!s.bool("jump").unwrap(), "the trigger is consumed");
    let kinds: Vec<ControllerEventKind> = s.events().iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [
            ControllerEventKind::TransitionStart { transition: 0 },
            ControllerEventKind::StateEnter { state: 1 },
            ControllerEventKind::StateExit { state: 0 },
            ControllerEventKind::TransitionEnd { transition: 0 },
        ]
    );
}

#[test]
fn triggers_are_consumed_once_and_wait_until_used() {
    let f = fixture();
    // A → B on "jump" after exit time 0.5; B → A on "jump" too (no exit time, 0.125 s).
    let raw = RawController::new("tri").trigger("jump").layer(
        RawLayer::new("base")
            .state(
                RawState::clip("A", "a").transition(
                    RawTransition::to("B")
                        .exit_time(0.5)
                        .duration(0.125)
                        .when(RawCondition::trigger("jump")),
                ),
            )
            .state(
                RawState::clip("B", "b").transition(
                    RawTransition::to("A")
                        .duration(0.125)
                        .when(RawCondition::trigger("jump")),
                ),
            ),
    );
    let mut s = f.state(&raw);
    let (mut a, mut lw) = (Animations::default(), LayerWeights::default());
    s.set_trigger("jump").unwrap();
    for _ in 0..7 {
        step(&mut s, &mut a, &mut lw);
        assert!(s.bool("jump").unwrap(), "kept until a transition uses it");
    }
    step(&mut s, &mut a, &mut lw); // frame 8: A at 0.5
    assert!(!s.bool("jump").unwrap());
    assert_eq!(s.transitions_started(), 1);
    for _ in 0..10 {
        step(&mut s, &mut a, &mut lw);
    }
    // B → A did not fire: the trigger was consumed by A → B.
    assert_eq!(s.transitions_started(), 1);
    assert_eq!(s.current_state(0), Some(1));
}

/// A → B (1 s fade) with the given interruption; A has A → C (index 0, trigger c) before it
/// and A → D (index 2, trigger d) after it; B has B → C (trigger n). Returns the state that
/// the interrupting transition leads to, given the triggers set half way.
fn interrupt(
    source: InterruptionSource,
    ordered: bool,
    triggers: &[&str],
) -> (Option<u16>, ControllerState) {
    let f = fixture();
    let t = |to: &str, trig: &str| {
        RawTransition::to(to)
            .duration(0.5)
            .when(RawCondition::trigger(trig))
    };
    let raw = RawController::new("int")
        .trigger("go")
        .trigger("c")
        .trigger("d")
        .trigger("n")
        .layer(
            RawLayer::new("base")
                .state(
                    RawState::clip("A", "a")
                        .transition(t("C", "c"))
                        .transition(t("B", "go").duration(1.0).interruption(source, ordered))
                        .transition(t("D", "d")),
                )
                .state(RawState::clip("B", "b").transition(t("C", "n")))
                .state(RawState::clip("C", "c"))
                .state(RawState::clip("D", "d")),
        );
    let mut s = f.state(&raw);
    let (mut a, mut lw) = (Animations::default(), LayerWeights::default());
    step(&mut s, &mut a, &mut lw);
    s.set_trigger("go").unwrap();
    for _ in 0..9 {
        step(&mut s, &mut a, &mut lw); // 8 frames into the fade: p = 0.5
    }
    assert_eq!(s.transition(0).map(|t| t.1), Some(0.5));
    for tr in triggers {
        s.set_trigger(tr).unwrap();
    }
    step(&mut s, &mut a, &mut lw);
    let dest = s
        .playing(0)
        .last()
        .filter(|_| s.transition(0).is_some())
        .map(|p| p.state);
    (dest, s)
}

#[test]
fn interruption_sources_and_order() {
    const B: u16 = 1;
    const C: u16 = 2;
    const D: u16 = 3;
    // None: nothing interrupts; the fade goes on to B.
    assert_eq!(
        interrupt(InterruptionSource::None, true, &["c", "d", "n"]).0,
        Some(B)
    );
    // Current, ordered: A → C (listed before) may, A → D (after) may not.
    assert_eq!(
        interrupt(InterruptionSource::Current, true, &["c"]).0,
        Some(C)
    );
    assert_eq!(
        interrupt(InterruptionSource::Current, true, &["d"]).0,
        Some(B)
    );
    // Current, unordered: A → D may too; B's transitions may not.
    assert_eq!(
        interrupt(InterruptionSource::Current, false, &["d"]).0,
        Some(D)
    );
    assert_eq!(
        interrupt(InterruptionSource::Current, false, &["n"]).0,
        Some(B)
    );
    // Next: B → C may, A's may not.
    assert_eq!(interrupt(InterruptionSource::Next, true, &["n"]).0, Some(C));
    assert_eq!(interrupt(InterruptionSource::Next, true, &["c"]).0, Some(B));
    // Both sources ready: the order decides (A → D vs B → C).
    assert_eq!(
        interrupt(InterruptionSource::CurrentThenNext, false, &["d", "n"]).0,
        Some(D)
    );
    assert_eq!(
        interrupt(InterruptionSource::NextThenCurrent, false, &["d", "n"]).0,
        Some(C)
    );
}

#[test]
fn an_interrupted_blend_keeps_its_weights_and_fades_out() {
    let (_, mut s) = interrupt(InterruptionSource::Next, true, &["n"]);
    // The interrupting frame first advanced the fade to 9/16, then froze it: A 7/16, B 9/16;
    // C then fades in over 0.5 s (8 frames). One frame in (the interrupting frame itself is
    // progress 0): 1/8.
    let (mut a, mut lw) = (Animations::default(), LayerWeights::default());
    let l = step(&mut s, &mut a, &mut lw);
    let p = 1.0 / 8.0;
    assert!(close(weight_of(&l, "a"), 7.0 / 16.0 * (1.0 - p)), "{l:?}");
    assert!(close(weight_of(&l, "b"), 9.0 / 16.0 * (1.0 - p)), "{l:?}");
    assert!(close(weight_of(&l, "c"), p), "{l:?}");
    let total: f32 = l.iter().map(|e| e.1).sum();
    assert!(close(total, 1.0));
    for _ in 0..7 {
        step(&mut s, &mut a, &mut lw);
    }
    assert_eq!(s.current_state(0), Some(2));
    assert_eq!(s.playing(0).len(), 1);
}

#[test]
fn any_state_and_exit_transitions() {
    let f = fixture();
    // Any state → C on trigger "hit" (not to itself); C exits after one loop back through the
    // entry, which picks D when "tired" is set, else the default A.
    let raw = RawController::new("any")
        .trigger("hit")
        .bool("tired", false)
        .layer(
            RawLayer::new("base")
                .state(RawState::clip("A", "a"))
                .state(RawState::clip("C", "c").transition(RawTransition::to_exit().exit_time(1.0)))
                .state(RawState::clip("D", "d"))
                .any_state(RawTransition::to("C").when(RawCondition::trigger("hit")))
                .entry(RawTransition::to("D").when(RawCondition::is_true("tired"))),
        );
    let mut s = f.state(&raw);
    let (mut a, mut lw) = (Animations::default(), LayerWeights::default());
    step(&mut s, &mut a, &mut lw);
    assert_eq!(s.current_state(0), Some(0));
    s.set_trigger("hit").unwrap();
    step(&mut s, &mut a, &mut lw);
    assert_eq!(s.current_state(0), Some(1));
    s.set_bool("tired", true).unwrap();
    // C (0.5 s) reaches its exit time 1.0 after 8 frames.
    for _ in 0..7 {
        step(&mut s, &mut a, &mut lw);
        assert_eq!(s.current_state(0), Some(1));
    }
    step(&mut s, &mut a, &mut lw);
    assert_eq!(s.current_state(0), Some(2), "exit → entry → D");
    // Not to itself: "hit" while in C does not restart C.
    s.set_trigger("hit").unwrap();
    step(&mut s, &mut a, &mut lw);
    assert_eq!(s.current_state(0), Some(1));
    let n = s.normalized_time(0).unwrap();
    s.set_trigger("hit").unwrap();
    step(&mut s, &mut a, &mut lw);
    assert!(s.normalized_time(0).unwrap() > n, "C kept playing");
    assert!(s.bool("hit").unwrap(), "unused trigger stays set");
}

#[test]
fn state_events_loop_and_reverse() {
    let f = fixture();
    let raw = RawController::new("ev").float("dir", 1.0).layer(
        RawLayer::new("base").state(
            RawState::clip("A", "a")
                .speed_parameter("dir")
                .event("half", 0.5, 7.0),
        ),
    );
    let mut s = f.state(&raw);
    let (mut a, mut lw) = (Animations::default(), LayerWeights::default());
    let mut halves = 0;
    let mut frames_at = Vec::new();
    for frame in 1..=40 {
        step(&mut s, &mut a, &mut lw);
        for e in s.events() {
            if e.kind == (ControllerEventKind::State { state: 0 }) {
                assert_eq!((e.name, e.payload), (bone_hash("half"), 7.0));
                halves += 1;
                frames_at.push(frame);
            }
        }
    }
    // 0.5, 1.5 at frames 8 and 24 (40 frames = 2.5 loops: 0.5, 1.5, 2.5 → frames 8, 24, 40).
    assert_eq!((halves, frames_at.clone()), (3, vec![8, 24, 40]));
    // Backwards: from 2.5 down to 0.5 passes 2.5 (at the start, excluded: [b, a)), 1.5 and 0.5.
    s.set_float("dir", -1.0).unwrap();
    let mut back = 0;
    for _ in 0..32 {
        step(&mut s, &mut a, &mut lw);
        back += s
            .events()
            .iter()
            .filter(|e| matches!(e.kind, ControllerEventKind::State { .. }))
            .count();
    }
    assert_eq!(back, 2, "1.5 and 0.5 passed backwards");
}

// ---- layers --------------------------------------------------------------------------------

#[test]
fn layers_masks_additive_sync_and_weights() {
    let f = fixture();
    let mask = Arc::new(
        RawAvatarMask {
            name: "arm only".into(),
            bones: vec![("arm".into(), 1.0)],
            include_descendants: false,
        }
        .bake(&f.rig)
        .unwrap(),
    );
    let assets = f.assets.clone().mask(mask.clone());
    let raw = RawController::new("layers")
        .layer(
            RawLayer::new("base")
                .state(RawState::clip("A", "b"))
                .state(RawState::clip("B", "a")),
        )
        .layer(
            RawLayer::new("upper")
                .mask("arm only")
                .weight(0.5)
                .state(RawState::clip("W", "c")),
        )
        .layer(
            RawLayer::new("add")
                .additive()
                .state(RawState::clip("Br", "d")),
        )
        .layer(
            RawLayer::new("synced")
                .sync("base")
                .state(RawState::clip("A", "c")),
        );
    let ctl = Arc::new(raw.bake(&f.rig, &assets).unwrap());
    let mut s = ControllerState::new(ctl, &f.rig).unwrap();
    let (mut a, mut lw) = (Animations::default(), LayerWeights::default());
    s.step(DT, None, &mut a, &mut lw);
    let l = a.as_slice();
    assert_eq!(l.len(), 4);
    assert_eq!(
        (l[0].clip.name(), l[0].layer, l[0].blend),
        ("b", 0, BlendMode::Override)
    );
    assert_eq!((l[1].clip.name(), l[1].layer), ("c", 1));
    assert!(Arc::ptr_eq(l[1].mask.as_ref().unwrap(), &mask));
    assert_eq!(
        (l[2].clip.name(), l[2].layer, l[2].blend),
        ("d", 2, BlendMode::Additive)
    );
    // The sync layer plays its own clip (c, 0.5 s) at base's normalised time (dt / 2 s).
    assert_eq!((l[3].clip.name(), l[3].layer), ("c", 3));
    assert!(close(l[3].time, DT / 2.0 * 0.5), "{}", l[3].time);
    assert_eq!(lw.0[..4], [1.0, 0.5, 1.0, 1.0]);
    s.set_layer_weight(1, 0.25).unwrap();
    s.step(DT, None, &mut a, &mut lw);
    assert_eq!(lw.0[1], 0.25);
    assert!(matches!(
        s.set_layer_weight(1, f32::NAN),
        Err(ControllerError::BadValue { .. })
    ));
    assert!(matches!(
        s.set_layer_weight(9, 0.5),
        Err(ControllerError::NoSuchLayer { layer: 9, .. })
    ));
}

#[test]
fn a_curve_drives_a_parameter() {
    let f = fixture();
    let raw = RawController::new("curves")
        .float("lean", 0.0)
        .bind_curve("lean_curve", "lean")
        .layer(RawLayer::new("base").state(RawState::clip("A", "a")));
    let mut s = f.state(&raw);
    // CurveValues as job 5 leaves them (built here by running job 5's node through a frame).
    let rig = f.rig.clone();
    let curved = Arc::new(
        RawClip {
            name: "curved".into(),
            curves: vec![RawCurve {
                name: "lean_curve".into(),
                track: RawTrack::linear(vec![0.0, 1.0], vec![0.25, 0.25]),
            }],
            ..Default::default()
        }
        .bake(&rig)
        .unwrap(),
    );
    let mut store = Store::new();
    let e = store
        .spawn(animated(rig, vec![AnimationToProcess::new(curved)]))
        .unwrap();
    store.insert(e, CurveValues::default()).unwrap();
    let mut animator = Animator::new(&mut store).unwrap();
    animator.run_frame(&mut store, DT).unwrap();
    let curves = store.get::<CurveValues>(e).unwrap().clone();
    assert_eq!(curves.get("lean_curve"), Some(0.25));
    let (mut a, mut lw) = (Animations::default(), LayerWeights::default());
    s.step(DT, Some(&curves), &mut a, &mut lw);
    assert_eq!(s.float("lean").unwrap(), 0.25);
}

// ---- bad input -----------------------------------------------------------------------------

fn bake_err(raw: &RawController) -> ControllerError {
    let f = fixture();
    raw.bake(&f.rig, &f.assets).unwrap_err()
}

#[test]
fn bad_descriptions_name_the_item() {
    let base = |s: RawState| {
        RawController::new("bad").float("speed", 0.0).layer(
            RawLayer::new("base")
                .state(s)
                .state(RawState::clip("B", "b")),
        )
    };
    let e = bake_err(&base(RawState::clip("A", "a").transition(
        RawTransition::to("B").when(RawCondition::greater("sped", 1.0)),
    )));
    assert!(
        matches!(&e, ControllerError::UnknownParameter { parameter, used_by, .. } if parameter == "sped" && used_by.contains("A -> B")),
        "{e}"
    );
    let e = bake_err(&base(
        RawState::clip("A", "a").transition(RawTransition::to("Nowhere").exit_time(0.5)),
    ));
    assert!(
        matches!(&e, ControllerError::UnknownState { state, layer, .. } if state == "Nowhere" && layer == "base"),
        "{e}"
    );
    let e = bake_err(&base(RawState::tree("T", RawBlendTree::one_d("speed"))));
    assert!(
        matches!(&e, ControllerError::BlendTree { state, reason: BlendLayoutError::NoChildren, .. } if state == "base/T"),
        "{e}"
    );
    let dup = RawBlendTree::one_d("speed")
        .child(RawMotion::clip("a"), 1.0)
        .child(RawMotion::clip("b"), 1.0);
    let e = bake_err(&base(RawState::tree("T", dup)));
    assert!(
        matches!(
            &e,
            ControllerError::BlendTree {
                reason: BlendLayoutError::DuplicateThreshold {
                    first: 0,
                    second: 1,
                    ..
                },
                ..
            }
        ),
        "{e}"
    );
    let e = bake_err(&base(RawState::clip("A", "missing")));
    assert!(
        matches!(&e, ControllerError::UnknownClip { clip, .. } if clip == "missing"),
        "{e}"
    );
    let e = bake_err(&base(
        RawState::clip("A", "a")
            .transition(RawTransition::to("B").when(RawCondition::is_true("speed"))),
    ));
    assert!(
        matches!(&e, ControllerError::ParameterKind { parameter, .. } if parameter == "speed"),
        "{e}"
    );
    let e = bake_err(&base(
        RawState::clip("A", "a").transition(RawTransition::to("B")),
    ));
    assert!(
        matches!(&e, ControllerError::BadValue { item, .. } if item.contains("A -> B")),
        "{e}"
    );
    // A cycle of zero-duration transitions without exit time (through an any-state one).
    let cyc = RawController::new("cyc").bool("x", true).layer(
        RawLayer::new("base")
            .state(
                RawState::clip("A", "a")
                    .transition(RawTransition::to("B").when(RawCondition::is_true("x"))),
            )
            .state(RawState::clip("B", "b"))
            .any_state(RawTransition::to("A").when(RawCondition::is_true("x"))),
    );
    let e = bake_err(&cyc);
    assert!(
        matches!(&e, ControllerError::ZeroDurationCycle { states, .. } if states.contains(&"A".to_string()) && states.contains(&"B".to_string())),
        "{e}"
    );
    assert!(
        e.to_string().contains("'cyc'") && e.to_string().contains("A -> B"),
        "{e}"
    );
    // With a duration it is fine.
    let ok = RawController::new("cyc").bool("x", true).layer(
        RawLayer::new("base")
            .state(
                RawState::clip("A", "a").transition(
                    RawTransition::to("B")
                        .duration(0.1)
                        .when(RawCondition::is_true("x")),
                ),
            )
            .state(RawState::clip("B", "b"))
            .any_state(RawTransition::to("A").when(RawCondition::is_true("x"))),
    );
    let f = fixture();
    assert!(ok.bake(&f.rig, &f.assets).is_ok());
}

#[test]
fn setters_refuse_bad_values_and_wrong_rigs() {
    let f = fixture();
    let raw = RawController::new("set")
        .float("speed", 0.0)
        .int("mode", 0)
        .layer(RawLayer::new("base").state(RawState::clip("A", "a")));
    let mut s = f.state(&raw);
    assert!(matches!(
        s.set_float("speed", f32::NAN),
        Err(ControllerError::NotFinite { .. })
    ));
    assert!(matches!(
        s.set_float("speed", f32::INFINITY),
        Err(ControllerError::NotFinite { .. })
    ));
    assert!(matches!(
        s.set_float("sped", 1.0),
        Err(ControllerError::UnknownParameter { .. })
    ));
    assert!(matches!(
        s.set_int("speed", 1),
        Err(ControllerError::ParameterKind { .. })
    ));
    assert!(matches!(
        s.set_trigger("mode"),
        Err(ControllerError::ParameterKind { .. })
    ));
    assert_eq!(s.float("speed").unwrap(), 0.0);
    s.set_int("mode", -3).unwrap();
    assert_eq!(s.int("mode").unwrap(), -3);
    let other = Arc::new(
        RawRig {
            name: "other".into(),
            bones: vec![RawBone {
                name: "x".into(),
                parent: None,
                rest: Transform::IDENTITY,
            }],
        }
        .bake()
        .unwrap(),
    );
    let e = ControllerState::new(f.bake(&raw), &other).unwrap_err();
    assert!(
        matches!(&e, ControllerError::ControllerForAnotherRig { rig, .. } if rig == "other"),
        "{e}"
    );
}

// ---- the pipeline --------------------------------------------------------------------------

#[test]
fn the_pipeline_runs_the_controller_and_queues_its_events() {
    let f = fixture();
    let raw = a_to_b(
        RawTransition::to("B")
            .when(RawCondition::trigger("jump"))
            .duration(0.25),
    );
    let ctl = f.bake(&raw);
    let mut store = Store::new();
    let e = store.spawn(animated(f.rig.clone(), vec![])).unwrap();
    store
        .insert(e, ControllerState::new(ctl, &f.rig).unwrap())
        .unwrap();
    store.insert(e, FiredEvents::default()).unwrap();
    let mut animator = Animator::new(&mut store).unwrap();
    animator.run_frame(&mut store, DT).unwrap();
    let a = store.get::<Animations>(e).unwrap();
    assert_eq!(a.len(), 1);
    assert!(
        close(a.as_slice()[0].time, DT),
        "the clock's advance is not added twice"
    );
    let ev = &store.get::<FiredEvents>(e).unwrap().0;
    assert!(
        ev.iter().any(|x| x.source
            == EventSource::Controller {
                layer: 0,
                kind: ControllerEventKind::StateEnter { state: 0 }
            }),
        "{ev:?}"
    );
    store
        .get_mut::<ControllerState>(e)
        .unwrap()
        .set_trigger("jump")
        .unwrap();
    animator.run_frame(&mut store, DT).unwrap();
    let ev = &store.get::<FiredEvents>(e).unwrap().0;
    assert!(
        ev.iter().any(|x| matches!(
            x.source,
            EventSource::Controller {
                kind: ControllerEventKind::TransitionStart { .. },
                ..
            }
        )),
        "{ev:?}"
    );
    animator.run_frame(&mut store, DT).unwrap();
    let a = store.get::<Animations>(e).unwrap();
    assert_eq!(a.len(), 2);
    assert!(close(
        weight_of(
            &a.as_slice()
                .iter()
                .map(|x| (
                    x.clip.name().to_string(),
                    x.weight,
                    x.time,
                    x.previous_time,
                    x.layer
                ))
                .collect::<Vec<_>>(),
            "b"
        ),
        0.25
    ));
}

#[test]
fn per_entity_state_is_small() {
    let f = fixture();
    let raw = a_to_b(RawTransition::to("B").when(RawCondition::trigger("jump")));
    let mut s = f.state(&raw);
    // 2 parameters, 1 layer, an event buffer with room for an event (reserved at creation).
    let inline = std::mem::size_of::<ControllerState>();
    let events = std::mem::size_of::<sinew_jobs::controller::ControllerEvent>();
    assert_eq!(
        s.bytes(),
        inline + 2 * 4 + ControllerState::LAYER_BYTES + events
    );
    eprintln!(
        "ControllerState: {inline} B inline, {} B per layer",
        ControllerState::LAYER_BYTES
    );
    assert!(inline <= 80 && ControllerState::LAYER_BYTES <= 112);
    let (mut a, mut lw) = (Animations::default(), LayerWeights::default());
    let before = s.bytes();
    step(&mut s, &mut a, &mut lw);
    assert!(
        !s.events().is_empty(),
        "the first frame enters the default state"
    );
    assert_eq!(
        s.bytes(),
        before,
        "the frame's events fit the reserved buffer"
    );
}

#[test]
fn a_user_node_writing_animation_lists_is_ordered_before_the_controller_or_told_how() {
    use sinew_jobs::pipeline::PipelineConfig;
    use sinew_runtime::graph::{Access, FnNode, GraphBuildError};
    let config = PipelineConfig {
        advance_clocks: false,
        ..PipelineConfig::default()
    };
    let clock = || FnNode::new("my clock", Access::new().write::<Animations>(), |_| Ok(()));
    let mut store = Store::new();
    let err = Animator::with(&mut store, config, |b, nodes| {
        let c = b.add_node(clock());
        b.add_edge(c, nodes.bone_offsets);
    })
    .unwrap_err();
    match &err {
        GraphBuildError::Misplaced { node, fix, .. } => {
            assert_eq!(node, "my clock");
            assert!(fix.contains("PipelineNodes::controller"), "{fix}");
        }
        other => panic!("{other}"),
    }
    assert!(
        Animator::with(&mut store, config, |b, nodes| {
            let c = b.add_node(clock());
            b.add_edge(c, nodes.controller);
        })
        .is_ok()
    );
}

/// `Controller::parameters` lists the declared parameters in order, each with the id that
/// `Controller::parameter` gives its name.
#[test]
fn parameters_are_listed_in_declaration_order() {
    let f = fixture();
    let s = f.state(&a_to_b(RawTransition::to("B").exit_time(0.5)).float("speed", 1.5));
    let c = s.controller();
    let listed: Vec<(&str, ParamKind)> = c.parameters().collect();
    assert_eq!(
        listed,
        [
            ("go", ParamKind::Bool),
            ("jump", ParamKind::Trigger),
            ("speed", ParamKind::Float)
        ]
    );
    for (i, (name, kind)) in listed.iter().enumerate() {
        let id = c.parameter(name).unwrap();
        assert_eq!(id.index(), i);
        assert_eq!(c.parameter_info(id), Some((*name, *kind)));
    }
}
