//! The built-in clips, generated from closed-form periodic pose functions and sampled into keys.
//!
//! Each clip is a function `t → local pose`, sampled at a fixed key rate. The last key is a copy
//! of the first (only the root translation of a root-motion clip moves on by one stride), so
//! every clip closes exactly. Tracks are emitted only for bones and channels that leave the
//! rest pose.
//!
//! The gait clips (walk, run) swing the legs sinusoidally with the knee bending during the
//! swing phase and the ankle keeping the foot level; the hips height is then solved per key so
//! the lowest sole point rests on the ground (plus a flight bounce for the run). Foot contact
//! curves and footstep events are derived from the same feet heights at the key times.

use super::rig::{BoneIds, Side, model_space};
use crate::asset::{
    AdditiveReference, RawBoneTracks, RawClip, RawCurve, RawEvent, RawRig, RawTrack, Transform,
};
use glam::{Quat, Vec3};
use std::f32::consts::{PI, TAU};

/// User curve on walk and run: 1 while the left foot is planted, 0 while it is in the air.
pub const FOOT_CONTACT_LEFT: &str = "foot_contact_l";
/// User curve on walk and run: 1 while the right foot is planted, 0 while it is in the air.
pub const FOOT_CONTACT_RIGHT: &str = "foot_contact_r";
/// Event on walk and run, at the key where a foot touches down. Its payload is
/// [`FOOTSTEP_LEFT`] or [`FOOTSTEP_RIGHT`].
pub const FOOTSTEP: &str = "footstep";
/// Payload of a [`FOOTSTEP`] event of the left foot.
pub const FOOTSTEP_LEFT: f32 = 0.0;
/// Payload of a [`FOOTSTEP`] event of the right foot.
pub const FOOTSTEP_RIGHT: f32 = 1.0;
/// Forward (+Z) speed of the walk's root motion, metres per second.
pub const WALK_SPEED: f32 = 1.4;
/// Forward (+Z) speed of the run's root motion, metres per second.
pub const RUN_SPEED: f32 = 3.5;

/// Height of the sole points (heel, ball) above the ground in the rest pose; the gait solver
/// puts the lowest of them back at this height.
const SOLE_HEIGHT: f32 = 0.01;
/// A foot whose lowest sole point is within this distance of [`SOLE_HEIGHT`] is planted.
const CONTACT_TOLERANCE: f32 = 0.005;
/// The heel, in the foot bone's frame.
const HEEL: Vec3 = Vec3::new(0.0, -0.06, -0.04);
/// The ball of the foot, in the toe bone's frame.
const BALL: Vec3 = Vec3::new(0.0, -0.01, 0.05);
/// Length of the leg from hip to ankle in the rest pose (thigh 0.43 + shin 0.40).
const LEG_LENGTH: f32 = 0.83;

/// Mirrors a rotation authored for the left side to the right side (reflection x → -x).
fn mirror(q: Quat) -> Quat {
    Quat::from_xyzw(q.x, -q.y, -q.z, q.w)
}

fn rx(a: f32) -> Quat {
    Quat::from_rotation_x(a)
}
fn ry(a: f32) -> Quat {
    Quat::from_rotation_y(a)
}
fn rz(a: f32) -> Quat {
    Quat::from_rotation_z(a)
}

fn smoothstep(e0: f32, e1: f32, x: f32) -> f32 {
    let t = ((x - e0) / (e1 - e0)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// A local pose being authored: rest values plus offsets.
struct Pose {
    local: Vec<Transform>,
}

impl Pose {
    fn rest(rig: &RawRig) -> Self {
        Pose {
            local: rig.bones.iter().map(|b| b.rest).collect(),
        }
    }

    /// Sets the bone's rotation to `rest * q` (`q` in the bone's rest frame).
    fn rotate(&mut self, bone: usize, q: Quat) {
        if let Some(t) = self.local.get_mut(bone) {
            t.rotation = (t.rotation * q).normalize();
        }
    }

    /// Like [`Pose::rotate`] with `q` authored for the left side, mirrored for the right.
    fn rotate_side(&mut self, side: Side, bone: usize, q: Quat) {
        self.rotate(bone, if side == Side::Left { q } else { mirror(q) });
    }

    /// Adds `d` to the bone's translation.
    fn translate(&mut self, bone: usize, d: Vec3) {
        if let Some(t) = self.local.get_mut(bone) {
            t.translation += d;
        }
    }

    /// Curls the three finger chains of one hand: `curl` radians per joint, the thumb half.
    fn curl_fingers(&mut self, ids: &BoneIds, side: Side, curl: f32) {
        for (f, chain) in ids.side(side).fingers.iter().enumerate() {
            let c = if f == 0 { curl * 0.5 } else { curl };
            for &bone in chain {
                // Fingers point along +X (left hand) with the palm facing -Y: bend toward -Y.
                self.rotate_side(side, bone, rz(-c));
            }
        }
    }
}

/// Interpolation and key layout of a generated clip.
struct Sampling {
    name: &'static str,
    duration: f32,
    /// Key intervals; the clip has `intervals + 1` keys.
    intervals: usize,
    hermite: bool,
    /// How far the root translation moves over one cycle (root-motion clips).
    root_advance: Vec3,
}

/// Samples `pose` into one track per animated channel. Returns the tracks and the key poses
/// (the last one equal to the first but for the root advance).
fn sample(
    rig: &RawRig,
    ids: &BoneIds,
    s: &Sampling,
    pose: &dyn Fn(f32) -> Vec<Transform>,
) -> (Vec<RawBoneTracks>, Vec<f32>, Vec<Vec<Transform>>) {
    let n = s.intervals.max(1);
    let times: Vec<f32> = (0..=n)
        .map(|k| {
            if k == n {
                s.duration
            } else {
                s.duration * k as f32 / n as f32
            }
        })
        .collect();
    let mut poses: Vec<Vec<Transform>> = times[..n].iter().map(|&t| pose(t)).collect();
    let mut closing = poses[0].clone();
    if let Some(root) = closing.get_mut(ids.root) {
        root.translation += s.root_advance;
    }
    poses.push(closing);
    // Keep consecutive rotation keys in one hemisphere (component-wise Hermite needs it).
    for k in 1..poses.len() {
        for i in 0..rig.bones.len() {
            if poses[k][i].rotation.dot(poses[k - 1][i].rotation) < 0.0 {
                poses[k][i].rotation = -poses[k][i].rotation;
            }
        }
    }
    // Tangents (Hermite only): central differences of the pose function, periodic so the
    // closing key takes key 0's tangents.
    let h = 1e-3;
    let tangents: Vec<Vec<(Vec3, Quat)>> = if s.hermite {
        let mut tan: Vec<Vec<(Vec3, Quat)>> = times[..n]
            .iter()
            .zip(&poses)
            .map(|(&t, key)| {
                let (a, b) = (pose(t - h), pose(t + h));
                key.iter()
                    .zip(a.iter().zip(&b))
                    .map(|(k, (a, b))| {
                        let align = |q: Quat| if q.dot(k.rotation) < 0.0 { -q } else { q };
                        let dq = (align(b.rotation) - align(a.rotation)) * (0.5 / h);
                        ((b.translation - a.translation) / (2.0 * h), dq)
                    })
                    .collect()
            })
            .collect();
        let first = tan[0].clone();
        tan.push(first);
        tan
    } else {
        Vec::new()
    };
    let mut tracks = Vec::new();
    for (i, bone) in rig.bones.iter().enumerate() {
        let moved_t = poses.iter().any(|p| {
            (p[i].translation - bone.rest.translation)
                .abs()
                .max_element()
                > 1e-7
        });
        let moved_r = poses
            .iter()
            .any(|p| (1.0 - p[i].rotation.dot(bone.rest.rotation).abs()) > 1e-9);
        if !moved_t && !moved_r {
            continue;
        }
        let values_t: Vec<Vec3> = poses.iter().map(|p| p[i].translation).collect();
        let values_r: Vec<Quat> = poses.iter().map(|p| p[i].rotation).collect();
        let (translation, rotation) = if s.hermite {
            let tan_t: Vec<Vec3> = tangents.iter().map(|k| k[i].0).collect();
            let tan_r: Vec<Quat> = tangents.iter().map(|k| k[i].1).collect();
            (
                moved_t.then(|| RawTrack::hermite(times.clone(), values_t, tan_t.clone(), tan_t)),
                moved_r.then(|| RawTrack::hermite(times.clone(), values_r, tan_r.clone(), tan_r)),
            )
        } else {
            (
                moved_t.then(|| RawTrack::linear(times.clone(), values_t)),
                moved_r.then(|| RawTrack::linear(times.clone(), values_r)),
            )
        };
        tracks.push(RawBoneTracks {
            bone: bone.name.clone(),
            translation,
            rotation,
            scale: None,
        });
    }
    (tracks, times, poses)
}

fn clip(s: &Sampling, tracks: Vec<RawBoneTracks>) -> RawClip {
    RawClip {
        name: s.name.into(),
        duration: Some(s.duration),
        looping: true,
        bones: tracks,
        curves: Vec::new(),
        events: Vec::new(),
        root_motion: false,
        additive_reference: None,
    }
}

/// Arms hanging at the sides (left-side angles; the right is mirrored).
fn arms_down(p: &mut Pose, ids: &BoneIds, side: Side, down: f32, elbow: f32) {
    let s = ids.side(side);
    p.rotate_side(side, s.upperarm, rz(-down));
    p.rotate_side(side, s.lowerarm, ry(-elbow));
}

/// Idle: 3 s of weight shift, head motion and slow arm sway; Hermite keys at 10 per second.
pub(crate) fn idle(rig: &RawRig, ids: &BoneIds) -> RawClip {
    let s = Sampling {
        name: "idle",
        duration: 3.0,
        intervals: 30,
        hermite: true,
        root_advance: Vec3::ZERO,
    };
    let w = TAU / s.duration;
    let pose = |t: f32| {
        let mut p = Pose::rest(rig);
        let sway = 0.012 * (w * t).sin();
        p.translate(ids.hips, Vec3::new(sway, 0.0, 0.0));
        // Legs lean against the sway so the feet stay put, feet level.
        let lean = (-sway / LEG_LENGTH).asin();
        for side in Side::BOTH {
            let l = ids.side(side);
            p.rotate(l.thigh, rz(lean));
            p.rotate(l.foot, rz(-lean));
            let phase = if side == Side::Left { 0.0 } else { 0.7 };
            arms_down(
                &mut p,
                ids,
                side,
                1.3 + 0.02 * (w * t + phase).sin(),
                0.15 + 0.04 * (2.0 * w * t + phase).sin(),
            );
            p.rotate_side(side, l.hand, rz(-0.1));
            p.curl_fingers(ids, side, 0.25 + 0.03 * (w * t).sin());
        }
        p.rotate(ids.spine[0], rz(-0.6 * lean));
        p.rotate(ids.spine[2], rx(0.01 * (2.0 * w * t).sin()));
        p.rotate(ids.neck, ry(0.05 * (w * t + 1.0).sin()));
        p.rotate(
            ids.head,
            ry(0.08 * (w * t).sin()) * rx(0.02 * (2.0 * w * t).sin()),
        );
        p.local
    };
    let (tracks, _, _) = sample(rig, ids, &s, &pose);
    clip(&s, tracks)
}

/// Parameters of a gait cycle (angles in radians).
struct Gait {
    speed: f32,
    thigh: f32,
    knee_stance: f32,
    knee_swing: f32,
    arm_down: f32,
    arm_swing: f32,
    elbow: f32,
    elbow_swing: f32,
    lean: f32,
    twist: f32,
    sway: f32,
    /// Height of the flight bounce at the change of support (0 for walking).
    bounce: f32,
}

/// The gait pose at `t`, hips at the rest height (the ground solve comes later).
fn gait_pose(rig: &RawRig, ids: &BoneIds, g: &Gait, period: f32, t: f32) -> Pose {
    let mut p = Pose::rest(rig);
    let phase = TAU * t / period;
    p.translate(ids.root, Vec3::new(0.0, 0.0, g.speed * t));
    let sway = -g.sway * phase.cos();
    p.translate(ids.hips, Vec3::new(sway, 0.0, 0.0));
    p.rotate(ids.hips, ry(-g.twist * phase.sin()));
    let roll = (-sway / LEG_LENGTH).asin();
    for side in Side::BOTH {
        let l = ids.side(side);
        let ph = if side == Side::Left {
            phase
        } else {
            phase + PI
        };
        // Hip flexion (forward positive) and knee flexion, larger while the leg swings forward.
        let flex = g.thigh * ph.sin();
        let swing = ph.cos().max(0.0);
        let knee = g.knee_stance + g.knee_swing * swing * swing;
        p.rotate(l.thigh, rz(roll) * rx(-flex));
        p.rotate(l.shin, rx(knee));
        p.rotate(l.foot, rx(flex - knee) * rz(-roll));
        // The arm swings against the leg of its side.
        let arm = -g.arm_swing * ph.sin();
        p.rotate_side(side, l.upperarm, rx(-arm) * rz(-g.arm_down));
        p.rotate_side(
            side,
            l.lowerarm,
            ry(-(g.elbow + g.elbow_swing * arm.max(0.0) / g.arm_swing.max(1e-6))),
        );
        p.curl_fingers(ids, side, 0.35);
    }
    p.rotate(ids.spine[0], rx(g.lean));
    p.rotate(ids.spine[1], ry(0.6 * g.twist * phase.sin()));
    p.rotate(ids.spine[2], ry(0.6 * g.twist * phase.sin()));
    p.rotate(
        ids.head,
        rx(-g.lean * 0.8) * ry(-0.2 * g.twist * phase.sin()),
    );
    p
}

/// Model-space height of the lowest sole point of each foot, `[left, right]`.
pub(crate) fn sole_heights(rig: &RawRig, ids: &BoneIds, local: &[Transform]) -> [f32; 2] {
    let m = model_space(rig, local);
    Side::BOTH.map(|side| {
        let l = ids.side(side);
        let heel = m.get(l.foot).map_or(0.0, |f| f.transform_point3(HEEL).y);
        let ball = m.get(l.toe).map_or(0.0, |f| f.transform_point3(BALL).y);
        heel.min(ball)
    })
}

/// A gait clip: root motion, ground-solved hips, contact curves and footstep events.
fn gait(rig: &RawRig, ids: &BoneIds, name: &'static str, period: f32, g: &Gait) -> RawClip {
    let s = Sampling {
        name,
        duration: period,
        intervals: (period * 30.0).round() as usize,
        hermite: false,
        root_advance: Vec3::new(0.0, 0.0, g.speed * period),
    };
    let pose = |t: f32| {
        let mut p = gait_pose(rig, ids, g, period, t);
        let [l, r] = sole_heights(rig, ids, &p.local);
        let phase = TAU * t / period;
        let flight = (-(2.0 * phase).cos()).max(0.0);
        p.translate(
            ids.hips,
            Vec3::new(
                0.0,
                SOLE_HEIGHT - l.min(r) + g.bounce * flight * flight,
                0.0,
            ),
        );
        p.local
    };
    let (tracks, times, poses) = sample(rig, ids, &s, &pose);
    let mut c = clip(&s, tracks);
    c.root_motion = true;
    // Contacts at the key times (the closing key repeats key 0).
    let keys = times.len() - 1;
    let contact: Vec<[bool; 2]> = poses[..keys]
        .iter()
        .map(|p| sole_heights(rig, ids, p).map(|h| h < SOLE_HEIGHT + CONTACT_TOLERANCE))
        .collect();
    for side in Side::BOTH {
        let i = side.index();
        let (mut key_times, mut values) = (vec![0.0], vec![if contact[0][i] { 1.0 } else { 0.0 }]);
        for k in 0..keys {
            let prev = contact[(k + keys - 1) % keys][i];
            if k > 0 && contact[k][i] != prev {
                key_times.push(times[k]);
                values.push(if contact[k][i] { 1.0 } else { 0.0 });
            }
            if contact[k][i] && !prev {
                let payload = if side == Side::Left {
                    FOOTSTEP_LEFT
                } else {
                    FOOTSTEP_RIGHT
                };
                c.events.push(RawEvent {
                    name: FOOTSTEP.into(),
                    time: times[k],
                    payload,
                });
            }
        }
        key_times.push(s.duration);
        values.push(values[0]);
        let name = if side == Side::Left {
            FOOT_CONTACT_LEFT
        } else {
            FOOT_CONTACT_RIGHT
        };
        c.curves.push(RawCurve {
            name: name.into(),
            track: RawTrack::step(key_times, values),
        });
    }
    c.events.sort_by(|a, b| a.time.total_cmp(&b.time));
    c
}

/// Walk: a 1 s cycle at [`WALK_SPEED`], 31 linear keys.
pub(crate) fn walk(rig: &RawRig, ids: &BoneIds) -> RawClip {
    let g = Gait {
        speed: WALK_SPEED,
        thigh: 0.44,
        knee_stance: 0.08,
        knee_swing: 0.6,
        arm_down: 1.3,
        arm_swing: 0.35,
        elbow: 0.2,
        elbow_swing: 0.15,
        lean: 0.04,
        twist: 0.08,
        sway: 0.02,
        bounce: 0.0,
    };
    gait(rig, ids, "walk", 1.0, &g)
}

/// Run: a 0.7 s cycle at [`RUN_SPEED`], 22 linear keys, with a flight phase.
pub(crate) fn run(rig: &RawRig, ids: &BoneIds) -> RawClip {
    let g = Gait {
        speed: RUN_SPEED,
        thigh: 0.55,
        knee_stance: 0.25,
        knee_swing: 1.5,
        arm_down: 1.35,
        arm_swing: 0.6,
        elbow: 1.3,
        elbow_swing: 0.2,
        lean: 0.15,
        twist: 0.12,
        sway: 0.01,
        bounce: 0.07,
    };
    gait(rig, ids, "run", 0.7, &g)
}

/// Wave: 2 s; the right arm rises (0–0.4 s), the forearm and hand wave, the arm comes down
/// (1.6–2 s). Animates upper-body bones only (to be played on a masked layer); 61 linear keys.
pub(crate) fn wave(rig: &RawRig, ids: &BoneIds) -> RawClip {
    let s = Sampling {
        name: "wave",
        duration: 2.0,
        intervals: 60,
        hermite: false,
        root_advance: Vec3::ZERO,
    };
    let pose = |t: f32| {
        let mut p = Pose::rest(rig);
        let w = smoothstep(0.0, 0.4, t) * (1.0 - smoothstep(1.6, 2.0, t));
        let osc = (TAU * 2.5 * (t - 0.4)).sin();
        arms_down(&mut p, ids, Side::Left, 1.3, 0.15);
        p.curl_fingers(ids, Side::Left, 0.25);
        let r = ids.side(Side::Right);
        let up = rz(-1.3).slerp(rx(-0.25) * rz(1.05), w);
        p.rotate_side(Side::Right, r.upperarm, up);
        let fore = ry(-0.15).slerp(rz(0.75), w) * rz(0.35 * w * osc);
        p.rotate_side(Side::Right, r.lowerarm, fore);
        p.rotate_side(
            Side::Right,
            r.hand,
            rz(0.15 * w * (TAU * 2.5 * (t - 0.4) - 0.6).sin()),
        );
        p.curl_fingers(ids, Side::Right, 0.25 * (1.0 - w));
        p.rotate_side(Side::Right, r.clavicle, rz(0.12 * w));
        p.rotate(ids.spine[2], rz(-0.03 * w));
        p.rotate(ids.head, rz(0.05 * w) * ry(-0.1 * w));
        p.local
    };
    let (tracks, _, _) = sample(rig, ids, &s, &pose);
    clip(&s, tracks)
}

/// Breathe: an additive 4 s cycle (reference: the rest pose): the spine and chest extend a
/// little and the shoulders lift; 61 linear keys.
pub(crate) fn breathe(rig: &RawRig, ids: &BoneIds) -> RawClip {
    let s = Sampling {
        name: "breathe",
        duration: 4.0,
        intervals: 60,
        hermite: false,
        root_advance: Vec3::ZERO,
    };
    let pose = |t: f32| {
        let mut p = Pose::rest(rig);
        let b = 0.5 - 0.5 * (TAU * t / s.duration).cos();
        p.rotate(ids.spine[1], rx(-0.012 * b));
        p.rotate(ids.spine[2], rx(-0.015 * b));
        p.rotate(ids.chest, rx(-0.02 * b));
        p.rotate(ids.neck, rx(0.03 * b));
        for side in Side::BOTH {
            p.rotate_side(side, ids.side(side).clavicle, rz(0.05 * b));
        }
        p.local
    };
    let (tracks, _, _) = sample(rig, ids, &s, &pose);
    let mut c = clip(&s, tracks);
    c.additive_reference = Some(AdditiveReference::RestPose);
    c
}
