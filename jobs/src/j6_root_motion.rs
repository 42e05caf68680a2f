//! Job 6, root motion: the root bone's motion between the previous and the current time of
//! every root-motion animation (correct across loop wraps) is blended by the animations'
//! weights, applied to the entity's transform, and removed from the root bone's local pose,
//! which stays where the clip starts ("in place").

use crate::asset::{Clip, Transform};
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
pub(crate) fn root_delta(
    clip: &Clip,
    root: usize,
    from: f32,
    to: f32,
    start_end: Option<(&Transform, &Transform)>,
) -> (Vec3, Quat) {
    if to < from {
        let (t, r) = root_delta(clip, root, to, from, start_end);
        let back = Rigid { t, r }.inverse();
        return (back.t, back.r);
    }
    let bone = crate::asset::BoneIndex(root as u32);
    let sample = |t: f32| Rigid::of(&clip.sample_bone(bone, t));
    let d = clip.duration();
    let (start, end) = match start_end {
        Some((a, b)) => (Rigid::of(a), Rigid::of(b)),
        None => (sample(0.0), sample(d)),
    };
    let local = if !clip.looping() || d <= 0.0 {
        sample(from.clamp(0.0, d))
            .inverse()
            .then(sample(to.clamp(0.0, d)))
    } else {
        let (d64, from64, to64) = (f64::from(d), f64::from(from), f64::from(to));
        let (k0, k1) = ((from64 / d64).floor(), (to64 / d64).floor());
        let within = |t: f64, k: f64| ((t - k * d64) as f32).clamp(0.0, d);
        let (p0, p1) = (sample(within(from64, k0)), sample(within(to64, k1)));
        let loop_ends = (k1 - k0).clamp(0.0, u64::MAX as f64) as u64;
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
    let delta = start.then(local).then(start.inverse());
    (delta.t, delta.r)
}

/// Blended (delta translation, delta rotation, translation since clip start, rotation since
/// clip start) of the entity's root-motion animations; `None` when none plays.
fn extract(
    anims: &[AnimationToProcess],
    lw: &LayerWeights,
    root: usize,
) -> Option<(Vec3, Quat, Vec3, Quat)> {
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
        let ends = a.clip.root_ends(root);
        let (delta_t, delta_r) = root_delta(&a.clip, root, a.previous_time, a.time, ends);
        let start = match ends {
            Some((start, _)) => *start,
            None => a
                .clip
                .sample_bone(crate::asset::BoneIndex(root as u32), 0.0),
        };
        let now = a.clip.sample_bone(
            crate::asset::BoneIndex(root as u32),
            a.clip.wrap_time(a.time),
        );
        let since_r = (now.rotation * start.rotation.conjugate()).normalize();
        dt += delta_t * w;
        st += (now.translation - start.translation) * w;
        dr += crate::math::quat_align(Vec4::W, delta_r) * w;
        sr += crate::math::quat_align(Vec4::W, since_r) * w;
        wsum += w;
    }
    if wsum <= 0.0 {
        return None;
    }
    let norm = |v: Vec4| Quat::from_vec4(v.normalize_or(Vec4::W));
    Some((dt / wsum, norm(dr), st / wsum, norm(sr)))
}
