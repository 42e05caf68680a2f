//! Job 6, root motion: the root bone's motion between the previous and the current time of
//! every root-motion animation (correct across loop wraps) is blended by the animations'
//! weights, applied to the entity's transform, and removed from the root bone's local pose,
//! which stays where the clip starts ("in place").

use crate::asset::{BoneIndex, Clip, Transform};
use crate::component::FrameSlot;
use crate::component::{
    AnimationToProcess, Animations, BlendMode, EntityTransform, LayerWeights, RigRef, RootMotion,
};
use crate::error::{JobError, check_len};
use glam::{Quat, Vec3, Vec4};
use sinew_runtime::store::Entity;

/// Root motion over one run of entities.
///
/// `poses` is the run's piece of the flat local poses: it starts at flat bone `pose_base`
/// (the first entity's bone offset).
#[derive(Debug)]
pub struct RootMotionJob<'a> {
    /// Entity handles (for errors).
    pub entities: &'a [Entity],
    /// Rigs.
    pub rigs: &'a [RigRef],
    /// Animations.
    pub animations: &'a [Animations],
    /// Layer weights.
    pub layer_weights: &'a [LayerWeights],
    /// Frame slots (job 3).
    pub slots: &'a [FrameSlot],
    /// Output motion per entity.
    pub motion: &'a mut [RootMotion],
    /// Entity transforms to move, when the run has them.
    pub transforms: Option<&'a mut [EntityTransform]>,
    /// This run's local poses.
    pub poses: &'a mut [Transform],
    /// Flat index of `poses[0]`.
    pub pose_base: u32,
    /// Frame time in seconds (for velocity; 0 leaves velocity at zero).
    pub dt: f32,
}

impl RootMotionJob<'_> {
    /// Checks lengths and that every root bone lies inside `poses`.
    ///
    /// # Errors
    /// [`JobError::LengthMismatch`] for buffers of different lengths or a root outside the
    /// run's pose piece.
    pub fn validate(&self) -> Result<(), JobError> {
        let n = self.entities.len();
        check_len("root motion", "rigs", n, self.rigs.len())?;
        check_len("root motion", "animations", n, self.animations.len())?;
        check_len("root motion", "layer weights", n, self.layer_weights.len())?;
        check_len("root motion", "slots", n, self.slots.len())?;
        check_len("root motion", "motion", n, self.motion.len())?;
        if let Some(t) = &self.transforms {
            check_len("root motion", "transforms", n, t.len())?;
        }
        for (i, s) in self.slots.iter().enumerate() {
            let root = (s.bone_offset as usize + self.rigs[i].0.root().get())
                .checked_sub(self.pose_base as usize);
            if s.bone_count > 0 && root.is_none_or(|r| r >= self.poses.len()) {
                return Err(JobError::LengthMismatch {
                    job: "root motion",
                    buffer: "poses",
                    expected: s.bone_offset as usize + 1,
                    actual: self.poses.len(),
                });
            }
        }
        Ok(())
    }

    /// Extracts and applies root motion.
    pub fn run(&mut self) {
        for i in 0..self.entities.len() {
            let root = self.rigs[i].0.root().get();
            let Some(r) =
                (self.slots[i].bone_offset as usize + root).checked_sub(self.pose_base as usize)
            else {
                continue;
            };
            root_motion_one(
                self.animations[i].as_slice(),
                &self.layer_weights[i],
                root,
                &mut self.motion[i],
                self.transforms.as_deref_mut().and_then(|t| t.get_mut(i)),
                self.poses.get_mut(r),
                self.dt,
            );
        }
    }
}

/// One entity: blends the root motion of its animations (root bone `root`), writes it to
/// `motion`, moves `transform` when `motion.apply`, and makes `root_pose` (the root bone's
/// sampled local pose) in place.
#[inline]
pub fn root_motion_one(
    animations: &[AnimationToProcess],
    layer_weights: &LayerWeights,
    root: usize,
    motion: &mut RootMotion,
    transform: Option<&mut EntityTransform>,
    root_pose: Option<&mut Transform>,
    dt: f32,
) {
    let Some((delta_t, delta_r, from_start_t, from_start_r)) =
        extract(animations, layer_weights, root)
    else {
        motion.delta_translation = Vec3::ZERO;
        motion.delta_rotation = Quat::IDENTITY;
        motion.velocity = Vec3::ZERO;
        return;
    };
    if let Some(pose) = root_pose {
        pose.translation -= from_start_t;
        pose.rotation = (from_start_r.conjugate() * pose.rotation).normalize();
    }
    motion.delta_translation = delta_t;
    motion.delta_rotation = delta_r;
    if let Some(t) = transform {
        let world_delta = t.0.rotation * (delta_t * t.0.scale);
        motion.velocity = if dt > 0.0 {
            world_delta / dt
        } else {
            Vec3::ZERO
        };
        if motion.apply {
            t.0.translation += world_delta;
            t.0.rotation = (t.0.rotation * delta_r).normalize();
        }
    }
}

/// Whether any of `animations` can move the root (an override with a root-motion clip): when
/// none can, [`root_motion_one`] only zeroes the motion and leaves the pose alone.
#[inline]
pub fn has_root_motion(animations: &[AnimationToProcess]) -> bool {
    animations
        .iter()
        .any(|a| a.clip.root_motion() && a.blend == BlendMode::Override)
}

/// A rigid transform `x ↦ r·x + t` (a root pose without scale).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Rigid {
    t: Vec3,
    r: Quat,
}

impl Rigid {
    const IDENTITY: Self = Self {
        t: Vec3::ZERO,
        r: Quat::IDENTITY,
    };

    fn of(pose: &Transform) -> Self {
        Self {
            t: pose.translation,
            r: pose.rotation,
        }
    }

    /// `self · other`: `other` first, then `self`.
    fn then(self, other: Self) -> Self {
        Self {
            t: self.t + self.r * other.t,
            r: (self.r * other.r).normalize(),
        }
    }

    fn inverse(self) -> Self {
        let r = self.r.conjugate();
        Self {
            t: -(r * self.t),
            r,
        }
    }

    /// `self` composed `k` times, by squaring: exact to rounding for any loop count.
    fn pow(self, mut k: u64) -> Self {
        let (mut base, mut acc) = (self, Self::IDENTITY);
        while k > 0 {
            if k & 1 == 1 {
                acc = acc.then(base);
            }
            base = base.then(base);
            k >>= 1;
        }
        acc
    }
}

/// The root's motion from unwrapped clip time `from` to `to` (either order), as the delta
/// `(translation, rotation)` that job 6 applies to the entity (`translation += rotation ·
/// (delta_t · scale)`, `rotation = rotation · delta_r`).
///
/// With `T(t)` the root's clip-space pose and `T₀ = T(0)`, a looping clip continues each loop
/// from where the last ended: the unwrapped pose is `U(w + k·D) = (T(D)·T₀⁻¹)ᵏ · T(w)`. The root
/// bone is kept at `T₀` (in place) and the entity carries the rest, `E = E₀ · U(t) · T₀⁻¹`, so
/// the delta is `T₀ · U(from)⁻¹ · U(to) · T₀⁻¹`. It is computed from the poses inside the loops
/// (`T(w₀)⁻¹ · T(D) · (T₀⁻¹ · T(D))ᵐ⁻¹ · T₀⁻¹ · T(w₁)` when `m ≥ 1` loop ends lie between), never
/// from far-away unwrapped poses, so it keeps its precision after any number of loops, and a
/// turning root turns its path once, not twice. `start_end` gives `T(0)` and `T(D)` when the
/// caller keeps them.
#[cfg(feature = "baked")]
pub(crate) fn root_delta(
    clip: &Clip,
    root: usize,
    from: f32,
    to: f32,
    start_end: Option<(&Transform, &Transform)>,
) -> (Vec3, Quat) {
    let bone = BoneIndex(root as u32);
    let (start, end) = clip_ends(clip, bone, start_end);
    let at = |t| RootSample::at(clip, bone, t, clip.looping());
    let delta = at(from).delta_to(&at(to), start, end);
    (delta.t, delta.r)
}

/// `T(0)` and `T(D)` of the root: `start_end` when the clip keeps them, else sampled.
fn clip_ends(
    clip: &Clip,
    bone: BoneIndex,
    start_end: Option<(&Transform, &Transform)>,
) -> (Rigid, Rigid) {
    match start_end {
        Some((a, b)) => (Rigid::of(a), Rigid::of(b)),
        None => (
            Rigid::of(&clip.sample_bone(bone, 0.0)),
            Rigid::of(&clip.sample_bone(bone, clip.duration())),
        ),
    }
}

/// The root at an unwrapped playback time `t = loops · D + w`: `pose` is `T(w)`, sampled at
/// the clip time job 4 samples ([`Clip::wrap_time_as`] with the animation's loop flag), so the
/// same sample gives both the frame's delta and the root's offset from its start.
#[derive(Clone, Copy, Debug)]
struct RootSample {
    t: f32,
    loops: f64,
    pose: Rigid,
}

impl RootSample {
    // Inlined (as `delta_to`): out of line, the sample goes through memory and the delta's
    // first multiplies wait on it (most likely store forwarding of its scalar-written
    // `Vec3`s), which costs more than a third sample would.
    #[inline(always)]
    fn at(clip: &Clip, bone: BoneIndex, t: f32, looping: bool) -> Self {
        let w = clip.wrap_time_as(t, looping);
        let d = clip.duration();
        // The loop count that goes with `w` (rounded: `t − w` is a whole number of loops up to
        // rounding), so that `loops` and `w` agree where the wrap itself rounds.
        let loops = if looping && d > 0.0 {
            ((f64::from(t) - f64::from(w)) / f64::from(d)).round()
        } else {
            0.0
        };
        Self {
            t,
            loops,
            pose: Rigid::of(&clip.sample_bone(bone, w)),
        }
    }

    /// The delta `T₀ · U(self)⁻¹ · U(to) · T₀⁻¹` of [`root_delta`].
    #[inline(always)]
    fn delta_to(&self, to: &Self, start: Rigid, end: Rigid) -> Rigid {
        if to.t < self.t {
            return to.delta_to(self, start, end).inverse();
        }
        let loop_ends = (to.loops - self.loops).clamp(0.0, u64::MAX as f64) as u64;
        let local = if loop_ends == 0 {
            self.pose.inverse().then(to.pose)
        } else {
            let one_loop = start.inverse().then(end);
            self.pose
                .inverse()
                .then(end)
                .then(one_loop.pow(loop_ends - 1))
                .then(start.inverse())
                .then(to.pose)
        };
        start.then(local).then(start.inverse())
    }
}

/// Blended (delta translation, delta rotation, translation since clip start, rotation since
/// clip start) of the entity's root-motion animations; `None` when none plays. Two root
/// samples per animation: its previous and its current time.
fn extract(
    anims: &[AnimationToProcess],
    lw: &LayerWeights,
    root: usize,
) -> Option<(Vec3, Quat, Vec3, Quat)> {
    let bone = BoneIndex(root as u32);
    let mut wsum = 0.0f32;
    let mut dt = Vec3::ZERO;
    let mut st = Vec3::ZERO;
    let mut dr = Vec4::ZERO;
    let mut sr = Vec4::ZERO;
    for a in anims {
        if !a.clip.root_motion() || a.blend != BlendMode::Override {
            continue;
        }
        let w = a.weight
            * lw.0.get(usize::from(a.layer)).copied().unwrap_or(0.0)
            * a.mask.as_ref().map_or(1.0, |m| m.weight(root));
        if w <= 0.0 {
            continue;
        }
        let (start, end) = clip_ends(&a.clip, bone, a.clip.root_ends(root));
        // Wrapped as job 4 samples it (`AnimationToProcess::clip_time`).
        let looping = a.plays_looping();
        let now = RootSample::at(&a.clip, bone, a.time, looping);
        let previous = RootSample::at(&a.clip, bone, a.previous_time, looping);
        let delta = previous.delta_to(&now, start, end);
        let since_r = (now.pose.r * start.r.conjugate()).normalize();
        dt += delta.t * w;
        st += (now.pose.t - start.t) * w;
        dr += crate::math::quat_align(Vec4::W, delta.r) * w;
        sr += crate::math::quat_align(Vec4::W, since_r) * w;
        wsum += w;
    }
    if wsum <= 0.0 {
        return None;
    }
    let norm = |v: Vec4| Quat::from_vec4(v.normalize_or(Vec4::W));
    Some((dt / wsum, norm(dr), st / wsum, norm(sr)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asset::{RawBone, RawBoneTracks, RawClip, RawRig, RawTrack, Rig};
    use std::sync::Arc;

    fn rig() -> Rig {
        RawRig {
            name: "r".into(),
            bones: vec![RawBone {
                name: "root".into(),
                parent: None,
                rest: Transform::IDENTITY,
            }],
        }
        .bake()
        .unwrap()
    }

    /// A root that walks forward and turns, on uneven keys over 1.3 s.
    fn clip(rig: &Rig, looping: bool) -> Arc<Clip> {
        let times = vec![0.0, 0.2, 0.25, 0.7, 1.1, 1.3];
        let translations = times
            .iter()
            .map(|&t: &f32| Vec3::new(0.3 * (4.0 * t).sin(), 0.05 * t, 1.7 * t))
            .collect();
        let rotations = times
            .iter()
            .map(|&t: &f32| Quat::from_rotation_y(0.9 * t) * Quat::from_rotation_x(0.1 * t))
            .collect();
        Arc::new(
            RawClip {
                name: "walk".into(),
                looping,
                root_motion: true,
                bones: vec![RawBoneTracks {
                    bone: "root".into(),
                    translation: Some(RawTrack::linear(times.clone(), translations)),
                    rotation: Some(RawTrack::linear(times, rotations)),
                    scale: None,
                }],
                ..Default::default()
            }
            .bake(rig)
            .unwrap(),
        )
    }

    /// The formula with three root samples per animation: the delta from its own samples at
    /// the previous and current time (loops by `floor` in f64), and the offset since the start
    /// from a third sample at the current time.
    fn three_sample_delta(clip: &Clip, from: f32, to: f32) -> Rigid {
        if to < from {
            return three_sample_delta(clip, to, from).inverse();
        }
        let sample = |t: f32| Rigid::of(&clip.sample_bone(BoneIndex(0), t));
        let d = clip.duration();
        let (start, end) = (sample(0.0), sample(d));
        let local = if !clip.looping() {
            sample(from.clamp(0.0, d))
                .inverse()
                .then(sample(to.clamp(0.0, d)))
        } else {
            let (d64, from64, to64) = (f64::from(d), f64::from(from), f64::from(to));
            let (k0, k1) = ((from64 / d64).floor(), (to64 / d64).floor());
            let within = |t: f64, k: f64| ((t - k * d64) as f32).clamp(0.0, d);
            let (p0, p1) = (sample(within(from64, k0)), sample(within(to64, k1)));
            let loop_ends = (k1 - k0) as u64;
            if loop_ends == 0 {
                p0.inverse().then(p1)
            } else {
                let one_loop = start.inverse().then(end);
                p0.inverse()
                    .then(end)
                    .then(one_loop.pow(loop_ends - 1))
                    .then(start.inverse())
                    .then(p1)
            }
        };
        start.then(local).then(start.inverse())
    }

    fn three_sample_extract(anims: &[AnimationToProcess]) -> (Vec3, Quat, Vec3, Quat) {
        let (mut wsum, mut dt, mut st, mut dr, mut sr) =
            (0.0, Vec3::ZERO, Vec3::ZERO, Vec4::ZERO, Vec4::ZERO);
        for a in anims {
            let delta = three_sample_delta(&a.clip, a.previous_time, a.time);
            let start = a.clip.sample_bone(BoneIndex(0), 0.0);
            let now = a.clip.sample_bone(BoneIndex(0), a.clip.wrap_time(a.time));
            let since_r = (now.rotation * start.rotation.conjugate()).normalize();
            dt += delta.t * a.weight;
            st += (now.translation - start.translation) * a.weight;
            dr += crate::math::quat_align(Vec4::W, delta.r) * a.weight;
            sr += crate::math::quat_align(Vec4::W, since_r) * a.weight;
            wsum += a.weight;
        }
        let norm = |v: Vec4| Quat::from_vec4(v.normalize_or(Vec4::W));
        (dt / wsum, norm(dr), st / wsum, norm(sr))
    }

    /// Shares the current-time sample between the delta and the offset since the start, and
    /// takes the loop count from the wrapped time: at non-negative times that is the
    /// three-sample formula bit for bit; below zero the wrap rounds (`rem_euclid`), so the two
    /// may pick the two sides of a loop end for the same instant, which compose to the same
    /// motion within 1e-5 m and 1e-5 rad.
    #[test]
    fn two_samples_per_animation_give_the_three_sample_formula() {
        let rig = rig();
        let (looping, once) = (clip(&rig, true), clip(&rig, false));
        let mut x = 0x5eed_u64;
        let mut uniform = |lo: f32, hi: f32| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            lo + (hi - lo) * ((x >> 40) as f32 / (1u64 << 24) as f32)
        };
        let (mut exact, mut loop_ends, mut reversed) = (0, 0, 0);
        for case in 0..4000 {
            let negative = case % 4 == 3;
            let time = if negative {
                uniform(-40.0, 0.0)
            } else {
                uniform(0.0, 400.0)
            };
            // Frames within a loop, across one or several loop ends, and backwards; now and
            // then exactly on a loop end.
            let step = match case % 5 {
                0 => uniform(-0.05, 0.05),
                1 => uniform(-4.0, 4.0),
                2 => 1.3 * (case % 7) as f32,
                _ => uniform(0.0, 0.1),
            };
            let time = if case % 11 == 0 {
                1.3 * (case % 13) as f32
            } else {
                time
            };
            let at = |clip: &Arc<Clip>, weight: f32| {
                let mut a = AnimationToProcess::new(clip.clone()).weight(weight);
                a.time = time;
                a.previous_time = time - step;
                a
            };
            let anims = [at(&looping, 0.7), at(&once, 0.3)];
            let got = extract(&anims, &LayerWeights::default(), 0).unwrap();
            let want = three_sample_extract(&anims);
            loop_ends += usize::from((time / 1.3).floor() != ((time - step) / 1.3).floor());
            reversed += usize::from(step < 0.0);
            if !negative {
                assert_eq!(got, want, "time {time}, step {step}");
                exact += 1;
            } else {
                let close = |a: Vec3, b: Vec3| (a - b).length() <= 1e-5;
                // The angle between, accurate near zero (`acos` of the dot product is not).
                let turn = |a: Quat, b: Quat| {
                    2.0 * (a.conjugate() * b).xyz().length().min(1.0).asin() <= 1e-5
                };
                assert!(
                    close(got.0, want.0)
                        && turn(got.1, want.1)
                        && close(got.2, want.2)
                        && turn(got.3, want.3),
                    "time {time}, step {step}: {got:?} vs {want:?}"
                );
            }
        }
        // The cases cover what they claim.
        assert!(
            exact > 2500 && loop_ends > 1000 && reversed > 800,
            "{exact} {loop_ends} {reversed}"
        );
    }

    /// An animation's loop flag overrides its clip's, as in job 4: a looping clip played once
    /// moves the root as the same clip baked not to loop (it stops at the end and holds), and
    /// a clip baked not to loop, played looping, as the looping one.
    #[test]
    fn an_animations_loop_flag_overrides_its_clips() {
        let rig = rig();
        let (looping, once) = (clip(&rig, true), clip(&rig, false));
        for (time, step) in [
            (0.9, 0.1),
            (1.25, 0.1),
            (1.4, 0.1),
            (2.0, 0.016),
            (6.1, 2.7),
        ] {
            let at = |clip: &Arc<Clip>, flag: Option<bool>| {
                let mut a = AnimationToProcess::new(clip.clone());
                (a.time, a.previous_time, a.looping) = (time, time - step, flag);
                [a]
            };
            let lw = LayerWeights::default();
            let played_once = extract(&at(&looping, Some(false)), &lw, 0);
            assert_eq!(
                played_once,
                extract(&at(&once, None), &lw, 0),
                "once at {time}"
            );
            let played_looping = extract(&at(&once, Some(true)), &lw, 0);
            assert_eq!(
                played_looping,
                extract(&at(&looping, None), &lw, 0),
                "loop at {time}"
            );
        }
        // Past the end, played once: no motion.
        let mut a = AnimationToProcess::new(looping.clone()).looping(false);
        (a.time, a.previous_time) = (2.0, 1.9);
        let (dt, dr, ..) = extract(&[a], &LayerWeights::default(), 0).unwrap();
        assert_eq!((dt, dr), (Vec3::ZERO, Quat::IDENTITY));
    }
}
