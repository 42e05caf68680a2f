//! The built-in clips, generated from closed-form periodic pose functions and sampled into keys.
//!
//! Each clip is a function `t → local pose`, sampled at a fixed key rate. The last key is a copy
//! of the first (only the root translation of a root-motion clip moves on by one stride), so
//! every clip closes exactly. Tracks are emitted only for bones and channels that leave the
//! rest pose.
//!
//! The gait clips (walk, run) are driven by foot targets: while a foot is planted its toe joint
//! stays fixed in the world (moving back at the walking speed in root space) and the heel rises
//! late in the stance; in the swing the ankle travels on an eased arc to the next touch-down.
//! The hips bob, sway and twist, are lowered wherever a leg could not reach, and a two-bone IK
//! gives the thigh and shin rotations. The contact curves and footstep events come from the
//! same stance windows, at exact times (not rounded to keys).

use super::rig::{BoneIds, Side};
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
        let (done, rest) = poses.split_at_mut(k);
        if let (Some(prev), Some(key)) = (done.last(), rest.first_mut()) {
            for (p, q) in prev.iter().zip(key.iter_mut()) {
                if q.rotation.dot(p.rotation) < 0.0 {
                    q.rotation = -q.rotation;
                }
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

/// Length of the idle cycle in seconds.
const IDLE_DURATION: f32 = 3.0;

/// The idle pose at `t` (periodic with [`IDLE_DURATION`]).
fn idle_pose(rig: &RawRig, ids: &BoneIds, t: f32) -> Vec<Transform> {
    let w = TAU / IDLE_DURATION;
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
        let down = 1.3 + 0.02 * (w * t + phase).sin();
        arms_down(
            &mut p,
            ids,
            side,
            down,
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
}

/// Idle: 3 s of weight shift, head motion and slow arm sway; Hermite keys at 10 per second.
pub(crate) fn idle(rig: &RawRig, ids: &BoneIds) -> RawClip {
    let s = Sampling {
        name: "idle",
        duration: IDLE_DURATION,
        intervals: 30,
        hermite: true,
        root_advance: Vec3::ZERO,
    };
    let pose = |t: f32| idle_pose(rig, ids, t);
    let (tracks, _, _) = sample(rig, ids, &s, &pose);
    clip(&s, tracks)
}

/// Parameters of a gait cycle (lengths in metres, angles in radians).
struct Gait {
    name: &'static str,
    period: f32,
    /// Keys per second.
    key_rate: f32,
    speed: f32,
    /// Fraction of the cycle each foot is planted (> 0.5: double support, < 0.5: flight).
    stance: f32,
    /// How far ahead of the hip joint the ankle touches down.
    touchdown_ahead: f32,
    /// Extra ankle height at mid-swing.
    lift: f32,
    /// Foot pitch (heel up, pivoting on the toe joint) at toe-off.
    heel_off: f32,
    /// Hips height at mid-stance before the reach limit, and its change at the change of
    /// support (positive: higher at mid-stance, as in walking; negative: lower, as in running).
    hips_height: f32,
    hips_wave: f32,
    arm_down: f32,
    arm_swing: f32,
    elbow: f32,
    elbow_swing: f32,
    lean: f32,
    twist: f32,
    sway: f32,
}

/// The toe joint relative to the ankle in the rest pose.
const ANKLE_TO_TOE: Vec3 = Vec3::new(0.0, -0.05, 0.13);
/// Ankle height in the rest pose.
const ANKLE_HEIGHT: f32 = 0.07;
/// Thigh and shin lengths.
const THIGH: f32 = 0.43;
const SHIN: f32 = 0.40;
/// Hip joint relative to the hips bone (left side).
const HIP_JOINT: Vec3 = Vec3::new(0.09, -0.05, 0.0);
/// The legs never straighten beyond this fraction of their length (keeps the knee IK stable).
const MAX_REACH: f32 = 0.99 * (THIGH + SHIN);

/// The ankle target (root space, left-side x) and the foot pitch at cycle phase `u` (0 at
/// touch-down). While planted the toe joint stays fixed in the world (it moves back at the
/// walking speed in root space) and the heel rises late in the stance; the swing carries the
/// ankle to the next touch-down on an eased arc.
fn foot_target(g: &Gait, u: f32) -> (Vec3, f32) {
    let x = HIP_JOINT.x;
    let stance_time = g.period * g.stance;
    let swing_time = g.period - stance_time;
    let stance_pose = |u: f32| {
        let toe = Vec3::new(
            x,
            ANKLE_HEIGHT + ANKLE_TO_TOE.y,
            g.touchdown_ahead + ANKLE_TO_TOE.z - g.speed * g.period * u,
        );
        let pitch = g.heel_off * smoothstep(0.4, 1.0, u / g.stance);
        (toe + rx(pitch) * -ANKLE_TO_TOE, pitch)
    };
    if u < g.stance {
        return stance_pose(u);
    }
    let s = (u - g.stance) / (1.0 - g.stance);
    let (start, pitch0) = stance_pose(g.stance);
    let end = Vec3::new(x, ANKLE_HEIGHT, g.touchdown_ahead);
    let ease = 0.5 - 0.5 * (PI * s).cos();
    // World displacement over the swing = its root-space displacement + the root's advance.
    let z = start.z + (g.speed * swing_time + end.z - start.z) * ease - g.speed * swing_time * s;
    let y = start.y + (end.y - start.y) * ease + g.lift * (PI * s).sin().powi(2);
    (Vec3::new(x, y, z), pitch0 * (1.0 - smoothstep(0.0, 0.5, s)))
}

/// Two-bone IK in model space: the thigh and shin directions that put the ankle at `target`
/// from the hip joint `hip`, knee bending toward +Z.
fn leg_ik(hip: Vec3, target: Vec3) -> (Vec3, Vec3) {
    let d = target - hip;
    let dn = d.normalize_or(Vec3::NEG_Y);
    let dist = d.length().clamp((THIGH - SHIN).abs() + 1e-3, MAX_REACH);
    let cos_a =
        ((THIGH * THIGH + dist * dist - SHIN * SHIN) / (2.0 * THIGH * dist)).clamp(-1.0, 1.0);
    let alpha = cos_a.acos();
    let perp = (Vec3::Z - dn * dn.z).normalize_or(Vec3::Z);
    let thigh = dn * alpha.cos() + perp * alpha.sin();
    let knee = hip + thigh * THIGH;
    let shin = (hip + dn * dist - knee).normalize_or(Vec3::NEG_Y);
    (thigh, shin)
}

/// The gait pose at `t`.
fn gait_pose(rig: &RawRig, ids: &BoneIds, g: &Gait, t: f32) -> Vec<Transform> {
    let mut p = Pose::rest(rig);
    let cycle = t / g.period;
    p.translate(ids.root, Vec3::new(0.0, 0.0, g.speed * t));
    // Phases: the left foot touches down at 0, the right half a cycle later.
    let phases = [cycle.rem_euclid(1.0), (cycle + 0.5).rem_euclid(1.0)];
    let targets = Side::BOTH.map(|side| {
        let (ankle, pitch) = foot_target(g, phases[side.index()]);
        (side.vec(ankle), pitch)
    });
    let mid_stance = TAU * (phases[0] - 0.5 * g.stance);
    let hips_rot = ry(-g.twist * (TAU * phases[0]).cos());
    let sway = g.sway * mid_stance.cos();
    // Hips height: the authored bob, lowered where a leg could not reach its target.
    let mut height = g.hips_height + g.hips_wave * (2.0 * mid_stance).cos();
    for side in Side::BOTH {
        let hip = Vec3::new(sway, 0.0, 0.0) + hips_rot * side.vec(HIP_JOINT);
        let (ankle, _) = targets[side.index()];
        let horizontal = Vec3::new(ankle.x - hip.x, 0.0, ankle.z - hip.z).length_squared();
        let reach = (MAX_REACH * MAX_REACH - horizontal).max(0.0).sqrt();
        height = height.min(ankle.y - hip.y + reach);
    }
    let hips_pos = Vec3::new(sway, height, 0.0);
    if let (Some(hips), Some(rest)) = (p.local.get_mut(ids.hips), rig.bones.get(ids.hips)) {
        hips.translation = hips_pos;
        hips.rotation = rest.rest.rotation * hips_rot;
    }
    for side in Side::BOTH {
        let l = ids.side(side);
        let (ankle, pitch) = targets[side.index()];
        let hip = hips_pos + hips_rot * side.vec(HIP_JOINT);
        let (thigh_dir, shin_dir) = leg_ik(hip, ankle);
        // Model-space rotations (every rest rotation is the identity), then local ones.
        let thigh = Quat::from_rotation_arc(Vec3::NEG_Y, thigh_dir);
        let shin_local = Quat::from_rotation_arc(Vec3::NEG_Y, thigh.inverse() * shin_dir);
        let shin = thigh * shin_local;
        let foot = rx(pitch);
        p.rotate(l.thigh, hips_rot.inverse() * thigh);
        p.rotate(l.shin, shin_local);
        p.rotate(l.foot, shin.inverse() * foot);
        p.rotate(l.toe, rx(-pitch));
        // The arm swings against the leg of its side.
        let arm = -g.arm_swing * (TAU * phases[side.index()]).cos();
        p.rotate_side(side, l.upperarm, rx(-arm) * rz(-g.arm_down));
        let bend = g.elbow + g.elbow_swing * arm.max(0.0) / g.arm_swing.max(1e-6);
        p.rotate_side(side, l.lowerarm, ry(-bend));
        p.curl_fingers(ids, side, 0.35);
    }
    let counter = 0.6 * g.twist * (TAU * phases[0]).cos();
    p.rotate(ids.spine[0], rx(g.lean));
    p.rotate(ids.spine[1], ry(counter));
    p.rotate(ids.spine[2], ry(counter));
    p.rotate(ids.head, rx(-g.lean * 0.8) * ry(-0.2 * counter));
    p.local
}

/// Whether the foot of `side` is planted at clip time `t`.
fn planted(g: &Gait, side: Side, t: f32) -> bool {
    let offset = if side == Side::Left { 0.0 } else { 0.5 };
    (t / g.period + offset).rem_euclid(1.0) < g.stance
}

/// A gait clip: root motion, foot IK, contact curves and footstep events.
fn gait(rig: &RawRig, ids: &BoneIds, g: &Gait) -> RawClip {
    let s = Sampling {
        name: g.name,
        duration: g.period,
        intervals: (g.period * g.key_rate).round() as usize,
        hermite: false,
        root_advance: Vec3::new(0.0, 0.0, g.speed * g.period),
    };
    let pose = |t: f32| gait_pose(rig, ids, g, t);
    let (tracks, _, _) = sample(rig, ids, &s, &pose);
    let mut c = clip(&s, tracks);
    c.root_motion = true;
    for side in Side::BOTH {
        // Touch-down and lift-off times in [0, period), exact (not rounded to keys).
        let offset: f32 = if side == Side::Left { 0.0 } else { 0.5 };
        // (`abs` turns the -0.0 of `rem_euclid(-0.0)` into 0.0.)
        let down = ((-offset).rem_euclid(1.0) * g.period).abs();
        let up = ((g.stance - offset).rem_euclid(1.0) * g.period).abs();
        let mut times = vec![0.0, down, up];
        times.sort_by(f32::total_cmp);
        times.dedup();
        times.push(g.period);
        // Each key holds the value of the interval it starts, sampled at the interval's middle
        // (the boundaries themselves are subject to rounding).
        let mut values: Vec<f32> = times
            .windows(2)
            .map(|w| {
                if planted(g, side, 0.5 * (w[0] + w[1])) {
                    1.0
                } else {
                    0.0
                }
            })
            .collect();
        values.push(values[0]);
        let name = if side == Side::Left {
            FOOT_CONTACT_LEFT
        } else {
            FOOT_CONTACT_RIGHT
        };
        c.curves.push(RawCurve {
            name: name.into(),
            track: RawTrack::step(times, values),
        });
        let payload = if side == Side::Left {
            FOOTSTEP_LEFT
        } else {
            FOOTSTEP_RIGHT
        };
        c.events.push(RawEvent {
            name: FOOTSTEP.into(),
            time: down,
            payload,
        });
    }
    c.events.sort_by(|a, b| a.time.total_cmp(&b.time));
    c
}

/// Walk: a 1 s cycle at [`WALK_SPEED`], 31 linear keys, 55 % stance (double support).
pub(crate) fn walk(rig: &RawRig, ids: &BoneIds) -> RawClip {
    let g = Gait {
        name: "walk",
        period: 1.0,
        key_rate: 30.0,
        speed: WALK_SPEED,
        stance: 0.55,
        touchdown_ahead: 0.28,
        lift: 0.08,
        heel_off: 0.9,
        hips_height: 0.935,
        hips_wave: 0.015,
        arm_down: 1.3,
        arm_swing: 0.35,
        elbow: 0.2,
        elbow_swing: 0.15,
        lean: 0.04,
        twist: 0.08,
        sway: 0.025,
    };
    gait(rig, ids, &g)
}

/// Run: a 0.7 s cycle at [`RUN_SPEED`], 43 linear keys, 32 % stance (a flight phase).
pub(crate) fn run(rig: &RawRig, ids: &BoneIds) -> RawClip {
    let g = Gait {
        name: "run",
        period: 0.7,
        // 60 keys per second: the feet move at 3.5 m/s relative to the hips, and linear
        // interpolation of the leg rotations between 30 Hz keys would let a planted toe dip
        // and slide by more than 5 mm.
        key_rate: 60.0,
        speed: RUN_SPEED,
        stance: 0.32,
        touchdown_ahead: 0.30,
        lift: 0.22,
        heel_off: 0.7,
        hips_height: 0.86,
        hips_wave: -0.04,
        arm_down: 1.35,
        arm_swing: 0.6,
        elbow: 1.3,
        elbow_swing: 0.2,
        lean: 0.15,
        twist: 0.12,
        sway: 0.01,
    };
    gait(rig, ids, &g)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asset::{BoneIndex, Clip, Interpolation, Rig};
    use crate::builtin::character;
    use glam::Affine3A;

    struct Baked {
        rig: Rig,
        idle: Clip,
        walk: Clip,
        run: Clip,
        wave: Clip,
        breathe: Clip,
    }

    fn baked() -> Baked {
        let c = character();
        let rig = c.rig.bake().unwrap();
        Baked {
            idle: c.idle.bake(&rig).unwrap(),
            walk: c.walk.bake(&rig).unwrap(),
            run: c.run.bake(&rig).unwrap(),
            wave: c.wave.bake(&rig).unwrap(),
            breathe: c.breathe.bake(&rig).unwrap(),
            rig,
        }
    }

    /// Model-space matrices at clip time `t`, from `sample_bone` and the baked parents.
    fn model_at(rig: &Rig, clip: &Clip, t: f32) -> Vec<Affine3A> {
        let mut out: Vec<Affine3A> = Vec::new();
        for (i, &p) in rig.parent_indices().iter().enumerate() {
            let l = clip.sample_bone(BoneIndex(i as u32), t).to_affine();
            out.push(if i == 0 { l } else { out[p as usize] * l });
        }
        out
    }

    fn bone(rig: &Rig, name: &str) -> usize {
        rig.find_by_name(name).unwrap().get()
    }

    fn curve(clip: &Clip, name: &str, t: f32) -> f32 {
        let i = clip.curves().iter().position(|c| c.name == name).unwrap();
        clip.sample_curve(i, t).unwrap()
    }

    fn key_count(clip: &Clip) -> usize {
        clip.timelines()
            .iter()
            .map(|t| t.times().len())
            .max()
            .unwrap()
    }

    #[test]
    fn durations_and_key_counts() {
        let b = baked();
        let expect = [
            (&b.idle, 3.0, 31),
            (&b.walk, 1.0, 31),
            (&b.run, 0.7, 43),
            (&b.wave, 2.0, 61),
            (&b.breathe, 4.0, 61),
        ];
        for (clip, duration, keys) in expect {
            assert_eq!(clip.duration(), duration, "{}", clip.name());
            assert_eq!(key_count(clip), keys, "{}", clip.name());
            // Bone tracks share one timeline (curves have their own).
            let bone_timelines: std::collections::BTreeSet<u32> = clip
                .bone_channels()
                .iter()
                .flat_map(|[t, r, _]| [*r, *t])
                .flatten()
                .map(|c| c.timeline)
                .collect();
            assert_eq!(bone_timelines.len(), 1, "{}", clip.name());
        }
        // Idle is Hermite, the others linear; no bone track is Step.
        for (clip, want) in [
            (&b.idle, Interpolation::Hermite),
            (&b.walk, Interpolation::Linear),
            (&b.wave, Interpolation::Linear),
        ] {
            for c in clip
                .bone_channels()
                .iter()
                .flat_map(|[t, r, _]| [*r, *t])
                .flatten()
            {
                assert_eq!(c.interpolation, want, "{}", clip.name());
            }
        }
    }

    #[test]
    fn every_clip_closes_its_cycle() {
        let b = baked();
        let root = b.rig.root();
        for clip in [&b.idle, &b.walk, &b.run, &b.wave, &b.breathe] {
            let d = clip.duration();
            for i in 0..b.rig.bone_count() {
                let (a, z) = (
                    clip.sample_bone(BoneIndex(i as u32), 0.0),
                    clip.sample_bone(BoneIndex(i as u32), d),
                );
                assert!(
                    a.rotation.dot(z.rotation).abs() > 1.0 - 1e-6,
                    "{} bone {i} rotation",
                    clip.name()
                );
                assert!((a.scale - z.scale).length() < 1e-4);
                if BoneIndex(i as u32) == root && clip.root_motion() {
                    continue; // checked below: it advances by one stride
                }
                assert!(
                    (a.translation - z.translation).length() < 1e-4,
                    "{} bone {i} translation",
                    clip.name()
                );
            }
            // The wrap point is seamless too: just before the end is close to just after 0.
            let (m0, m1) = (
                model_at(&b.rig, clip, 1e-3),
                model_at(&b.rig, clip, d - 1e-3),
            );
            let stride = (m0[0].translation - m1[0].translation).length();
            for i in 1..b.rig.bone_count() {
                let gap = (m0[i].translation - m0[0].translation)
                    .distance(m1[i].translation - m1[0].translation);
                assert!(
                    gap < 0.01,
                    "{} bone {i}: {gap} (stride {stride})",
                    clip.name()
                );
            }
        }
    }

    #[test]
    fn root_motion_moves_forward_at_the_stated_speed() {
        let b = baked();
        for (clip, speed) in [(&b.walk, WALK_SPEED), (&b.run, RUN_SPEED)] {
            let d = clip.duration();
            let p = |t: f32| clip.sample_bone(b.rig.root(), t).translation;
            assert!(
                (p(d) - p(0.0) - Vec3::new(0.0, 0.0, speed * d)).length() < 1e-4,
                "{}",
                clip.name()
            );
            // Uniform: half way through, half a stride.
            assert!((p(d * 0.5).z - p(0.0).z - speed * d * 0.5).abs() < 1e-3);
            // The rest of the body is relative to the root: the hips stay above it.
            for k in 0..20 {
                let t = d * k as f32 / 20.0;
                let m = model_at(&b.rig, clip, t);
                let hips = Vec3::from(m[bone(&b.rig, HIPS_NAME)].translation)
                    - Vec3::from(m[0].translation);
                assert!(
                    hips.x.abs() < 0.05 && hips.z.abs() < 0.05 && (0.8..1.1).contains(&hips.y),
                    "{} hips {hips}",
                    clip.name()
                );
            }
        }
        for clip in [&b.idle, &b.wave, &b.breathe] {
            assert!(
                !clip.root_motion() && clip.bone_channels()[0][0].is_none(),
                "{}",
                clip.name()
            );
        }
    }

    const HIPS_NAME: &str = "hips";
    /// Height of the toe joint in the rest pose (the foot on the ground).
    const TOE_REST: f32 = 0.02;

    /// World position (root motion included: the root bone's translation) of each foot's
    /// lowest joint, the ankle or the toe, `[left, right]`, computed from sampled local poses.
    fn feet(b: &Baked, clip: &Clip, t: f32) -> [(Vec3, Vec3); 2] {
        let m = model_at(&b.rig, clip, t);
        let at = |name: &str| Vec3::from(m[bone(&b.rig, name)].translation);
        [(at("foot_l"), at("toe_l")), (at("foot_r"), at("toe_r"))]
    }

    fn lowest(f: (Vec3, Vec3)) -> f32 {
        f.0.y.min(f.1.y)
    }

    /// Checks the contact curves against foot heights at `n` times over the cycle; returns
    /// whether a time with both feet in the air was seen.
    fn check_contacts(b: &Baked, clip: &Clip, n: usize, flight_phase: bool) -> bool {
        // Tolerances: a planted foot's toe joint is on the ground, within 5 mm (linear
        // interpolation of joint rotations between 30 Hz keys moves it by a few mm). Feet
        // within 2 cm of each other's height are left alone (both can be planted, or one just
        // lifting), and a foot is called airborne only 2 cm above its rest height, so a foot
        // lifting off or about to touch down does not count.
        let mut flight = false;
        let mut clearly = 0;
        for k in 0..n {
            let t = clip.duration() * k as f32 / n as f32;
            let f = feet(b, clip, t);
            let c = [
                curve(clip, FOOT_CONTACT_LEFT, t),
                curve(clip, FOOT_CONTACT_RIGHT, t),
            ];
            flight |= c == [0.0, 0.0];
            for (i, j) in [(0, 1), (1, 0)] {
                assert!(c[i] == 0.0 || c[i] == 1.0);
                let (me, other) = (lowest(f[i]), lowest(f[j]));
                // Within 20 ms of a switch the foot is still (or already) about on the ground
                // either way: it leaves and meets the ground with zero vertical speed.
                let switching = [t - 0.02, t + 0.02].iter().any(|&u| {
                    curve(
                        clip,
                        [FOOT_CONTACT_LEFT, FOOT_CONTACT_RIGHT][i],
                        clip.wrap_time(u),
                    ) != c[i]
                });
                // In a run's flight the lower foot is in the air: only a lower foot that is on
                // the ground must be the planted one there.
                let grounded = !flight_phase || me < TOE_REST + 0.005;
                if me < other - 0.02 && other > TOE_REST + 0.02 && !switching && grounded {
                    assert_eq!(
                        c[i],
                        1.0,
                        "{} t = {t}: foot {i} at {me} is the lower one (other {other})",
                        clip.name()
                    );
                    clearly += 1;
                }
                if c[i] == 1.0 {
                    assert!(
                        (f[i].1.y - TOE_REST).abs() < 0.005,
                        "{} t = {t}: planted foot {i} has its toe at {}",
                        clip.name(),
                        f[i].1.y
                    );
                }
                if me > TOE_REST + 0.02 {
                    assert_eq!(c[i], 0.0, "{} t = {t}: foot {i} is {me} high", clip.name());
                }
            }
        }
        assert!(
            clearly > n / 3,
            "{}: only {clearly} samples had a clearly lower foot",
            clip.name()
        );
        flight
    }

    #[test]
    fn walk_contact_curves_follow_the_lower_foot() {
        let b = baked();
        assert!(
            !check_contacts(&b, &b.walk, 240, false),
            "walking always has a foot down"
        );
    }

    #[test]
    fn run_contact_curves_follow_the_lower_foot_with_a_flight_phase() {
        let b = baked();
        assert!(
            check_contacts(&b, &b.run, 210, true),
            "a run has a flight phase"
        );
    }

    #[test]
    fn footsteps_are_sorted_in_the_clip_one_per_foot_at_touch_down() {
        let b = baked();
        for clip in [&b.walk, &b.run] {
            let ev = clip.events();
            assert_eq!(ev.len(), 2, "{}", clip.name());
            assert!(ev.windows(2).all(|w| w[0].time <= w[1].time));
            let payloads: Vec<f32> = ev.iter().map(|e| e.payload).collect();
            assert!(payloads.contains(&FOOTSTEP_LEFT) && payloads.contains(&FOOTSTEP_RIGHT));
            for e in ev {
                assert_eq!(e.name, FOOTSTEP);
                assert!((0.0..clip.duration()).contains(&e.time));
                let (name, i) = if e.payload == FOOTSTEP_LEFT {
                    (FOOT_CONTACT_LEFT, 0)
                } else {
                    (FOOT_CONTACT_RIGHT, 1)
                };
                // The contact curve rises at the event: 1 there, 0 just before (cyclically).
                let before = (e.time - 0.01).rem_euclid(clip.duration());
                assert_eq!(
                    curve(clip, name, e.time),
                    1.0,
                    "{} {name} at {}",
                    clip.name(),
                    e.time
                );
                assert_eq!(
                    curve(clip, name, before),
                    0.0,
                    "{} {name} before {}",
                    clip.name(),
                    e.time
                );
                // And the foot is on the ground then, having come down.
                let (now, earlier) = (feet(&b, clip, e.time)[i], feet(&b, clip, before)[i]);
                assert!(
                    (now.0.y - 0.07).abs() < 0.005 && earlier.0.y > now.0.y,
                    "{} ankle {} then {}",
                    clip.name(),
                    earlier.0.y,
                    now.0.y
                );
            }
            // Left and right alternate half a cycle apart.
            let gap = (ev[1].time - ev[0].time) / clip.duration();
            assert!((gap - 0.5).abs() < 1e-4, "{} gap {gap}", clip.name());
        }
        for clip in [&b.idle, &b.wave, &b.breathe] {
            assert!(clip.events().is_empty() && clip.curves().is_empty());
        }
    }

    #[test]
    fn planted_feet_do_not_slide() {
        // The world position of a planted toe joint (root motion included) stays put at the
        // keys; between keys, linear interpolation of the joint rotations lets it drift a few
        // mm: 5 mm for the walk, 1 cm for the run (the leg turns about 2.5 times faster, and
        // its 60 Hz keys only halve that).
        let b = baked();
        for (clip, limit) in [(&b.walk, 0.005), (&b.run, 0.01)] {
            for (i, name) in [(0, FOOT_CONTACT_LEFT), (1, FOOT_CONTACT_RIGHT)] {
                let mut planted: Vec<Vec3> = Vec::new();
                let n = 200;
                for k in 0..=2 * n {
                    // Two cycles, so a stance across the wrap is seen whole.
                    let t = 2.0 * clip.duration() * k as f32 / (2 * n) as f32;
                    let stride = clip.sample_bone(b.rig.root(), clip.duration()).translation;
                    let cycles = (t / clip.duration()).floor().min(1.0);
                    let local_t = t - cycles * clip.duration();
                    if curve(clip, name, clip.wrap_time(local_t)) == 1.0 {
                        planted.push(feet(&b, clip, local_t)[i].1 + stride * cycles);
                        let d = planted[0].distance(planted[planted.len() - 1]);
                        assert!(d < limit, "{} foot {i} slid {d} by t = {t}", clip.name());
                    } else {
                        planted.clear();
                    }
                }
            }
        }
    }

    #[test]
    fn hermite_idle_keys_reproduce_the_pose_function_between_keys() {
        // The tangents are derivatives of the pose function; sampled half way between keys the
        // Hermite curve must match the function far better than a straight line would.
        let c = character();
        let (raw, ids) = crate::builtin::rig::build();
        let rig = c.rig.bake().unwrap();
        let clip = c.idle.bake(&rig).unwrap();
        let mut worst: f32 = 0.0;
        for k in 0..30 {
            let t = (k as f32 + 0.5) * 0.1;
            let truth = idle_pose(&raw, &ids, t);
            for (i, want) in truth.iter().enumerate() {
                let got = clip.sample_bone(rig.baked_index_of_raw(i).unwrap(), t);
                // Chord distance of unit quaternions (about half the angle; `angle_between`
                // goes through acos and is noisy near zero in f32).
                let w = if got.rotation.dot(want.rotation) < 0.0 {
                    -want.rotation
                } else {
                    want.rotation
                };
                worst = worst.max((got.rotation - w).length());
                worst = worst.max(got.translation.distance(want.translation));
            }
        }
        assert!(
            worst < 1e-4,
            "idle deviates from its pose function by {worst}"
        );
    }

    #[test]
    fn wave_touches_only_masked_bones_and_breathe_only_the_chest_and_shoulders() {
        let c = character();
        let rig = c.rig.bake().unwrap();
        let mask = c.upper_body_mask.bake(&rig).unwrap();
        let wave = c.wave.bake(&rig).unwrap();
        let animated = |clip: &Clip| -> Vec<usize> {
            (0..rig.bone_count())
                .filter(|&i| clip.bone_channels()[i].iter().any(Option::is_some))
                .collect()
        };
        let waved = animated(&wave);
        assert!(
            waved.contains(&bone(&rig, "lowerarm_r")) && waved.contains(&bone(&rig, "upperarm_r"))
        );
        for &i in &waved {
            assert_eq!(
                mask.weight(i),
                1.0,
                "wave animates {} outside the mask",
                rig.bone_names()[i]
            );
        }
        // The right forearm really waves: its model-space tip goes above the head.
        let m = model_at(&rig, &wave, 1.0);
        assert!(m[bone(&rig, "hand_r")].translation.y > m[bone(&rig, "head")].translation.y);
        let m = model_at(&rig, &wave, 0.0);
        assert!(
            m[bone(&rig, "hand_r")].translation.y < 1.0,
            "the arm starts down"
        );

        let breathe = c.breathe.bake(&rig).unwrap();
        let reference = breathe.additive_reference().unwrap();
        assert_eq!(reference, rig.rest_pose());
        let names: Vec<&str> = animated(&breathe)
            .iter()
            .map(|&i| rig.bone_names()[i].as_str())
            .collect();
        assert_eq!(names.len(), 6, "{names:?}");
        for n in names {
            assert!(
                [
                    "spine_02",
                    "spine_03",
                    "chest",
                    "neck",
                    "clavicle_l",
                    "clavicle_r"
                ]
                .contains(&n),
                "{n}"
            );
        }
        for k in 0..=40 {
            let t = 0.1 * k as f32;
            for (i, r) in reference.iter().enumerate() {
                let d = breathe
                    .sample_bone(BoneIndex(i as u32), t)
                    .rotation
                    .angle_between(r.rotation);
                assert!(d < 0.06, "breathing is subtle: {d} rad at {t}");
            }
        }
    }
}
