//! Root motion of a turning root, against the analytic circle: a clip whose root walks an arc
//! of a circle of radius `r` each loop, played forward and backward with varying frame times,
//! for up to 1 000 loops; and a blend of two such clips.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests unwrap: a failure is the test failing

use glam::{Quat, Vec3};
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{Clip, RawBone, RawBoneTracks, RawClip, RawRig, RawTrack, Rig, Transform};
use sinew_jobs::component::{
    AnimationToProcess, Animations, EntityTransform, RootMotion, animated,
};
use sinew_runtime::store::{Entity, Store};
use std::f64::consts::TAU;
use std::sync::Arc;

const KEYS_PER_LOOP: usize = 512;
const LOOP_SECONDS: f32 = 1.0;

fn one_bone_rig() -> Arc<Rig> {
    let bone = RawBone {
        name: "root".into(),
        parent: None,
        rest: Transform::IDENTITY,
    };
    Arc::new(
        RawRig {
            name: "walker".into(),
            bones: vec![bone],
        }
        .bake()
        .unwrap(),
    )
}

/// The circle's pose after turning by `theta`: heading `rot_y(theta)`, walking along the local
/// +Z, so the position is `r·(1 − cos θ, 0, sin θ)` (centre `(r, 0, 0)`).
fn on_circle(radius: f64, theta: f64) -> (Vec3, Quat) {
    let p = Vec3::new(
        (radius * (1.0 - theta.cos())) as f32,
        0.0,
        (radius * theta.sin()) as f32,
    );
    (p, Quat::from_rotation_y(theta as f32))
}

/// A looping clip turning by `turn_per_loop` radians each loop along a circle of `radius`.
fn arc_clip(rig: &Rig, radius: f64, turn_per_loop: f64) -> Arc<Clip> {
    let times: Vec<f32> = (0..=KEYS_PER_LOOP)
        .map(|k| LOOP_SECONDS * k as f32 / KEYS_PER_LOOP as f32)
        .collect();
    let poses: Vec<(Vec3, Quat)> = (0..=KEYS_PER_LOOP)
        .map(|k| on_circle(radius, turn_per_loop * k as f64 / KEYS_PER_LOOP as f64))
        .collect();
    Arc::new(
        RawClip {
            name: format!("arc r={radius} turn={turn_per_loop}"),
            looping: true,
            root_motion: true,
            bones: vec![RawBoneTracks {
                bone: "root".into(),
                translation: Some(RawTrack::linear(
                    times.clone(),
                    poses.iter().map(|p| p.0).collect(),
                )),
                rotation: Some(RawTrack::linear(times, poses.iter().map(|p| p.1).collect())),
                scale: None,
            }],
            ..Default::default()
        }
        .bake(rig)
        .unwrap(),
    )
}

/// Frame times from 1/240 s to 1/20 s, with a frame of 2.37 loops now and then (several loop
/// ends inside one frame).
fn frame_times(seed: u64) -> impl Iterator<Item = f32> {
    let mut x = seed;
    std::iter::from_fn(move || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let u = (x >> 40) as f32 / (1u64 << 24) as f32;
        Some(if x.is_multiple_of(97) {
            2.37 * LOOP_SECONDS
        } else {
            1.0 / 240.0 + u * (1.0 / 20.0 - 1.0 / 240.0)
        })
    })
}

/// The angle between two rotations, accurate near zero (unlike `acos` of the dot product).
fn angle_between(a: Quat, b: Quat) -> f64 {
    let relative = a.conjugate() * b;
    2.0 * f64::from(relative.xyz().length()).min(1.0).asin()
}

fn walker(store: &mut Store, rig: &Arc<Rig>, animations: Vec<AnimationToProcess>) -> Entity {
    let e = store.spawn(animated(rig.clone(), animations)).unwrap();
    store.insert(e, EntityTransform::default()).unwrap();
    store.insert(e, RootMotion::default()).unwrap();
    e
}

/// Runs frames until the animation's time passes each of `checkpoints` (loops, signed), and
/// compares the entity with the circle there.
fn check_path(
    radius: f64,
    turn_per_loop: f64,
    speed: f32,
    checkpoints: &[f64],
    tolerance: f64,
    seed: u64,
) {
    let rig = one_bone_rig();
    let clip = arc_clip(&rig, radius, turn_per_loop);
    let mut store = Store::new();
    let e = walker(
        &mut store,
        &rig,
        vec![AnimationToProcess::new(clip).speed(speed)],
    );
    let mut animator = Animator::new(&mut store).unwrap();
    let mut dts = frame_times(seed);
    for &loops in checkpoints {
        while f64::from(store.get::<Animations>(e).unwrap().as_slice()[0].time).abs()
            < loops.abs() * f64::from(LOOP_SECONDS)
        {
            animator.run_frame(&mut store, dts.next().unwrap()).unwrap();
        }
        // The clock's own (f32) time is where the root should be.
        let time = f64::from(store.get::<Animations>(e).unwrap().as_slice()[0].time);
        let theta = turn_per_loop * time / f64::from(LOOP_SECONDS);
        let (p, q) = on_circle(radius, theta);
        let got = store.get::<EntityTransform>(e).unwrap().0;
        let position_error = f64::from((got.translation - p).length());
        let angle_error = angle_between(got.rotation, q);
        assert!(
            position_error <= tolerance * radius && angle_error <= tolerance,
            "r {radius}, turn {turn_per_loop} per loop, speed {speed}, after {loops} loops \
             (t = {time}): at {} heading {:?}, expected {p} heading {q:?} \
             (position error {position_error:.3e}, angle error {angle_error:.3e})",
            got.translation,
            got.rotation,
        );
    }
}

#[test]
fn a_root_walking_a_circle_once_per_loop_stays_on_it() {
    check_path(3.0, TAU, 1.0, &[1.0, 64.0, 65.0, 1000.0], 1e-3, 1);
}

#[test]
fn a_root_turning_a_quarter_per_loop_stays_on_the_circle_across_loops() {
    check_path(2.0, TAU / 4.0, 1.0, &[1.0, 64.0, 65.0, 1000.0], 1e-3, 2);
}

#[test]
fn a_turning_root_played_backwards_walks_the_circle_backwards() {
    check_path(2.0, TAU / 4.0, -1.0, &[1.0, 64.0, 65.0, 1000.0], 1e-3, 3);
    check_path(3.0, TAU, -1.0, &[1.0, 65.0], 1e-3, 4);
}

#[test]
fn the_first_loop_is_exact_to_the_keys() {
    // Before rounding accumulates, the path is the circle to the chord error of the keys
    // (r·(Δθ)²/8 for Δθ = 2π/512: 1.9e-5 of the radius) plus rounding.
    check_path(3.0, TAU, 1.0, &[0.25, 0.5, 1.0], 5e-5, 5);
}

/// Two clips on circles of radii 2 and 4 that turn at the same rate, blended half and half:
/// each frame's deltas average, so the entity walks the circle of radius 3.
#[test]
fn a_blend_of_two_turning_clips_walks_the_mean_circle() {
    let rig = one_bone_rig();
    let (inner, outer) = (arc_clip(&rig, 2.0, TAU), arc_clip(&rig, 4.0, TAU));
    let mut store = Store::new();
    let e = walker(
        &mut store,
        &rig,
        vec![
            AnimationToProcess::new(inner).weight(0.5),
            AnimationToProcess::new(outer).weight(0.5),
        ],
    );
    let mut animator = Animator::new(&mut store).unwrap();
    let mut dts = frame_times(6);
    for loops in [0.5f64, 1.0, 65.0] {
        while f64::from(store.get::<Animations>(e).unwrap().as_slice()[0].time) < loops {
            animator.run_frame(&mut store, dts.next().unwrap()).unwrap();
        }
        let time = f64::from(store.get::<Animations>(e).unwrap().as_slice()[0].time);
        let (p, q) = on_circle(3.0, TAU * time);
        let got = store.get::<EntityTransform>(e).unwrap().0;
        assert!(
            (got.translation - p).length() < 3e-3 && angle_between(got.rotation, q) < 1e-3,
            "after {loops} loops: {} {:?}, expected {p} {q:?}",
            got.translation,
            got.rotation
        );
    }
}
