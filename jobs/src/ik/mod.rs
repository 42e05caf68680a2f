//! Inverse kinematics and constraints on model matrices, between job 7 and job 9.
//!
//! Each solver is a job (a struct of borrowed data with `validate()` and `run()`, as ozz's
//! `IKTwoBoneJob` and `IKAimJob`), usable on its own over any model matrices, and a
//! [`PoseStage`](crate::pose_stage::PoseStage) that runs it per entity in the pipeline with
//! targets and weights from a component:
//!
//! | job | stage (component) | what |
//! |---|---|---|
//! | [`TwoBoneIkJob`] | [`TwoBoneIkStage`] ([`TwoBoneIk`]) | a hinge chain (leg, arm) reaches a target |
//! | [`AimIkJob`] | [`LookAtStage`] ([`LookAt`]) | a bone's forward axis points at a target, optionally spread over a chain |
//! | [`FabrikJob`] | [`FabrikStage`] ([`FabrikChain`]) | a chain of any length reaches a target |
//! | [`ConstraintJob`] | [`ConstraintStage`] ([`Constraint`]) | a bone takes a transform, or another bone's |
//! | [`FootPlacementJob`] | [`FootPlacementStage`] ([`FootPlacement`]) | feet on the engine's ground ([`GroundQuery`]) |
//!
//! A job rotates (or moves) the bones it solves rigidly about their joints in model space and
//! carries their descendants along, and touches no other matrix. Descendants are found as the
//! run of bones after a bone whose parents lie inside it, so the parents must be depth-first
//! (each bone's descendants right after it), as [`Rig::bake`](crate::asset::RawRig::bake)
//! orders them; the standalone jobs check it in `validate()`.
//!
//! Model matrices are expected with uniform scale (as ozz's IK jobs); the corrections a job
//! reports are local-space quaternions, right-multiplied (`local' = local · correction`).

mod aim;
mod constraint;
mod fabrik;
mod foot_placement;
mod lanes;
#[cfg(test)]
pub(crate) mod test_rig;
mod two_bone;

pub use aim::{AimIkJob, AimResult, LookAt, LookAtStage, LookCone};
pub use constraint::{Channels, Constraint, ConstraintJob, ConstraintSource, ConstraintStage};
pub use fabrik::{
    FabrikChain, FabrikJob, FabrikResult, FabrikStage, JointLimit, MAX_FABRIK_JOINTS,
};
pub use foot_placement::{
    FootPlacement, FootPlacementJob, FootPlacementResult, FootPlacementStage, GroundQuery,
    GroundSample, Leg,
};
pub use two_bone::{TwoBoneIk, TwoBoneIkJob, TwoBoneIkStage, TwoBoneResult};

use crate::asset::{Rig, Transform};
use crate::pose_stage::StageError;
use glam::{Affine3A, Mat3A, Quat, Vec3, Vec3A};
use std::ops::Range;

/// Where a component's target is given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TargetSpace {
    /// The entity's model space (what the model matrices are in).
    #[default]
    Model,
    /// World space: through the inverse of the entity's
    /// [`EntityTransform`](crate::component::EntityTransform) (model space when it has none).
    World,
}

/// A world-space point in the entity's model space.
pub(crate) fn to_model(space: TargetSpace, point: Vec3, transform: Option<&Transform>) -> Vec3 {
    match (space, transform) {
        (TargetSpace::World, Some(t)) => t.to_affine().inverse().transform_point3(point),
        _ => point,
    }
}

/// One past the last descendant of `bone`, for depth-first parents: the bones after `bone`
/// whose parent lies in `bone..i` are its subtree.
#[inline]
pub(crate) fn subtree_end(parents: &[u32], bone: usize) -> usize {
    let mut i = bone + 1;
    while let Some(&p) = parents.get(i) {
        let p = p as usize;
        if p < bone || p >= i {
            break;
        }
        i += 1;
    }
    i
}

/// Where each bone's subtree ends, as the solvers find it: from the rig's baked table (the
/// stages) or by walking the parents (the standalone jobs, whose `validate()` checks that they
/// are depth-first). Both give the same runs.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Subtrees<'a> {
    /// [`Rig::subtree_ends`].
    Baked(&'a [u32]),
    /// Depth-first parents, walked by [`subtree_end`].
    Parents(&'a [u32]),
}

impl Subtrees<'_> {
    /// One past the last descendant of `bone`.
    #[inline]
    pub(crate) fn end(self, bone: usize) -> usize {
        match self {
            Self::Baked(ends) => ends.get(bone).map_or(bone, |&e| e as usize),
            Self::Parents(parents) => subtree_end(parents, bone),
        }
    }
}

/// A rigid motion of model space, `x ↦ to + R·(x − pivot)`: a turn about `pivot`, then a
/// move that takes `pivot` to `to`. Kept in this form (not as an affine map) so that a joint at
/// the pivot lands on `to` exactly.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Motion {
    r: Mat3A,
    pivot: Vec3A,
    to: Vec3A,
}

impl Motion {
    /// The turn by `q` about `pivot`.
    #[inline]
    pub(crate) fn turn(q: Quat, pivot: Vec3A) -> Self {
        Self {
            r: Mat3A::from_quat(q),
            pivot,
            to: pivot,
        }
    }

    /// The move by `delta`.
    #[inline]
    pub(crate) fn shift(delta: Vec3A) -> Self {
        Self {
            r: Mat3A::IDENTITY,
            pivot: Vec3A::ZERO,
            to: delta,
        }
    }

    /// The turn by `q` about `pivot`, then the move of `pivot` to `to`.
    #[inline]
    pub(crate) fn turn_and_move(q: Quat, pivot: Vec3A, to: Vec3A) -> Self {
        Self {
            r: Mat3A::from_quat(q),
            pivot,
            to,
        }
    }

    /// This motion, then `outer`.
    #[inline]
    pub(crate) fn then(&self, outer: &Motion) -> Self {
        Self {
            r: outer.r * self.r,
            pivot: self.pivot,
            to: outer.point(self.to),
        }
    }

    /// Where the motion takes `x`.
    #[inline]
    pub(crate) fn point(&self, x: Vec3A) -> Vec3A {
        self.to + self.r * (x - self.pivot)
    }

    /// Moves the bones `range` (`model' = motion · model`).
    #[inline]
    pub(crate) fn move_bones(&self, model: &mut [Affine3A], range: Range<usize>) {
        if let Some(bones) = model.get_mut(range) {
            for m in bones {
                m.matrix3 = self.r * m.matrix3;
                m.translation = self.point(m.translation);
            }
        }
    }

    /// Moves `bone` and its descendants.
    #[inline]
    pub(crate) fn move_subtree(&self, tree: Subtrees<'_>, model: &mut [Affine3A], bone: usize) {
        self.move_bones(model, bone..tree.end(bone));
    }
}

/// Moves a chain of joints, each inside the previous one's subtree, by motions found joint by
/// joint and composed down the chain, so that each bone moves once: the bones of a joint's
/// subtree outside the next joint's take the motions of that joint and those before it. The
/// solver finds each joint where the motions so far put it ([`ChainMover::point`]) before the
/// bones move.
#[derive(Debug)]
pub(crate) struct ChainMover<'a> {
    tree: Subtrees<'a>,
    /// The composed motion, and the last joint it was pushed for.
    moved: Option<(Motion, usize)>,
}

impl<'a> ChainMover<'a> {
    pub(crate) fn new(tree: Subtrees<'a>) -> Self {
        Self { tree, moved: None }
    }

    /// Where the motions so far take `x`.
    #[inline]
    pub(crate) fn point(&self, x: Vec3A) -> Vec3A {
        self.moved.as_ref().map_or(x, |(m, _)| m.point(x))
    }

    /// Where the motions so far take a bone's model matrix.
    #[inline]
    pub(crate) fn matrix(&self, m: &Affine3A) -> Affine3A {
        match &self.moved {
            Some((motion, _)) => Affine3A {
                matrix3: motion.r * m.matrix3,
                translation: motion.point(m.translation),
            },
            None => *m,
        }
    }

    /// Adds `joint`'s motion (about where the motions so far put it); `joint` lies in the
    /// subtree of the joint pushed before it. The previous joint's bones outside `joint`'s
    /// subtree take their final place now.
    pub(crate) fn push(&mut self, model: &mut [Affine3A], joint: usize, motion: &Motion) {
        let composed = match self.moved.take() {
            Some((so_far, prev)) => {
                let ends = (self.tree.end(prev), self.tree.end(joint));
                for range in passed_bones(prev, joint, ends) {
                    so_far.move_bones(model, range);
                }
                so_far.then(motion)
            }
            None => *motion,
        };
        self.moved = Some((composed, joint));
    }

    /// Moves the last joint's subtree; the chain is done.
    pub(crate) fn finish(self, model: &mut [Affine3A]) {
        if let Some((motion, joint)) = self.moved {
            motion.move_subtree(self.tree, model, joint);
        }
    }
}

/// The bones of chain joint `prev`'s subtree outside the next joint `joint`'s (`ends`: where
/// the two subtrees end), where the motions composed down to `prev` are final
/// ([`ChainMover::push`]).
#[inline]
pub(crate) fn passed_bones(
    prev: usize,
    joint: usize,
    (prev_end, end): (usize, usize),
) -> [Range<usize>; 2] {
    let joint_at = joint.clamp(prev, prev_end);
    [prev..joint_at, end.clamp(joint_at, prev_end)..prev_end]
}

/// Turns `bone` and its descendants rigidly by `q` (model space) about `pivot`.
#[inline]
pub(crate) fn rotate_subtree(
    tree: Subtrees<'_>,
    model: &mut [Affine3A],
    bone: usize,
    pivot: Vec3A,
    q: Quat,
) {
    Motion::turn(q, pivot).move_subtree(tree, model, bone);
}

/// Moves `bone` and its descendants by `delta` (model space).
#[inline]
pub(crate) fn translate_subtree(
    tree: Subtrees<'_>,
    model: &mut [Affine3A],
    bone: usize,
    delta: Vec3A,
) {
    let end = tree.end(bone).min(model.len());
    if let Some(bones) = model.get_mut(bone..end) {
        for m in bones {
            m.translation += delta;
        }
    }
}

/// The rotation of a model matrix (its columns normalised; uniform scale expected).
#[inline]
pub(crate) fn rotation_of(m: &Affine3A) -> Quat {
    let c = |v: Vec3A| v.normalize_or_zero();
    let basis = Mat3A::from_cols(
        c(m.matrix3.x_axis),
        c(m.matrix3.y_axis),
        c(m.matrix3.z_axis),
    );
    Quat::from_mat3a(&basis).normalize()
}

/// `q` in the local frame of a bone whose model rotation is `frame`: the right-multiplied
/// correction that turns the bone as `q` turns it in model space.
#[inline]
pub(crate) fn local_correction(frame: Quat, q: Quat) -> Quat {
    (frame.inverse() * q * frame).normalize()
}

/// The shortest rotation taking direction `from` to `to` (both non-zero), without normalising
/// either: `(from × to, |from|·|to| + from · to)`, normalised. Nearly parallel directions keep
/// their small turn (the cross product resolves angles far below what the cosine can: a
/// shortcut to the identity where `cos θ` rounds to 1 would drop turns up to 7e-4 rad).
#[inline]
pub(crate) fn arc(from: Vec3A, to: Vec3A) -> Quat {
    let n = (from.length_squared() * to.length_squared()).sqrt();
    let dot = from.dot(to);
    const ONE_MINUS_EPS: f32 = 1.0 - 2.0 * f32::EPSILON;
    if dot < -ONE_MINUS_EPS * n {
        // Half a turn, about any normal of `from`.
        let axis = Vec3::from(from).normalize().any_orthonormal_vector();
        Quat::from_xyzw(axis.x, axis.y, axis.z, 0.0)
    } else {
        let c = from.cross(to);
        Quat::from_xyzw(c.x, c.y, c.z, n + dot).normalize()
    }
}

/// The rotation by angle `φ` about `axis` (unit), given `(cos φ, sin φ)` times any positive
/// factor. Without trigonometry: the half angle's cosine comes from `cos φ` where `φ` is small
/// and from `sin φ / (2 sin(φ/2))` where it is near a half turn, so that both ends keep full
/// precision.
#[inline]
pub(crate) fn rotation_from_cos_sin(axis: Vec3A, cos: f32, sin: f32) -> Quat {
    let n = (cos * cos + sin * sin).sqrt();
    if n <= f32::MIN_POSITIVE {
        return Quat::IDENTITY;
    }
    let (c, s) = (cos / n, sin / n);
    let (half_cos, half_sin) = if c >= 0.0 {
        let h = (0.5 * (1.0 + c)).sqrt();
        (h, s / (2.0 * h))
    } else {
        let h = (0.5 * (1.0 - c)).sqrt().copysign(s);
        (s / (2.0 * h), h)
    };
    let v = axis * half_sin;
    Quat::from_xyzw(v.x, v.y, v.z, half_cos).normalize()
}

/// The rotation about `axis` (unit) that turns `from` onto `to`, both projected onto the plane
/// normal to `axis`; `None` where a projection vanishes. The same turn as
/// `from_axis_angle(axis, angle_about(axis, from, to))`, without trigonometry.
#[inline]
pub(crate) fn turn_about(axis: Vec3A, from: Vec3A, to: Vec3A) -> Option<Quat> {
    let a = from - axis * from.dot(axis);
    let b = to - axis * to.dot(axis);
    let tiny = 1e-12 * (from.length_squared() + to.length_squared()).max(f32::MIN_POSITIVE);
    if a.length_squared() <= tiny || b.length_squared() <= tiny {
        return None;
    }
    Some(rotation_from_cos_sin(axis, a.dot(b), a.cross(b).dot(axis)))
}

/// The rotation by `w` of the way from the identity to `q` (`w` in `[0, 1]`): the slerp from
/// the identity, the short way, with one `atan2` and one `sin_cos`.
#[inline]
pub(crate) fn weighted(q: Quat, w: f32) -> Quat {
    if w >= 1.0 {
        return q;
    }
    let q = if q.w < 0.0 { -q } else { q };
    let v = Vec3A::new(q.x, q.y, q.z);
    let s = v.length();
    if s <= 1e-6 {
        // Within a few microradians of the identity: the chord is the arc.
        return Quat::IDENTITY.lerp(q, w).normalize();
    }
    let (sin, cos) = (w * s.atan2(q.w)).sin_cos();
    let v = v * (sin / s);
    Quat::from_xyzw(v.x, v.y, v.z, cos)
}

pub(crate) fn check_finite(what: &'static str, v: Vec3) -> Result<(), StageError> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(StageError::NotFinite { what })
    }
}

pub(crate) fn check_direction(what: &'static str, v: Vec3) -> Result<(), StageError> {
    check_finite(what, v)?;
    if v.length_squared() > 1e-12 {
        Ok(())
    } else {
        Err(StageError::ZeroDirection { what })
    }
}

pub(crate) fn check_unit_range(what: &'static str, value: f32) -> Result<(), StageError> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(StageError::OutOfRange {
            what,
            value,
            range: "[0, 1]",
        })
    }
}

pub(crate) fn check_bone(bone: usize, bone_count: usize) -> Result<(), StageError> {
    if bone < bone_count {
        Ok(())
    } else {
        Err(StageError::BoneOutOfRange { bone, bone_count })
    }
}

/// `bone` descends from `ancestor` (strictly), walking up the parents.
pub(crate) fn check_descends(
    parents: &[u32],
    bone: usize,
    ancestor: usize,
) -> Result<(), StageError> {
    check_bone(bone, parents.len())?;
    check_bone(ancestor, parents.len())?;
    let mut b = bone;
    // Parents are earlier bones, so the walk ends within `bone` steps.
    for _ in 0..=bone {
        match parents.get(b) {
            Some(&p) if (p as usize) < b => {
                b = p as usize;
                if b == ancestor {
                    return Ok(());
                }
                if b < ancestor {
                    break;
                }
            }
            _ => break,
        }
    }
    Err(StageError::NotAChain { bone, ancestor })
}

/// What the standalone jobs check of the hierarchy they are given: `model` covers `parents`,
/// parents are parent-first, and every subtree of `bones` is one run (depth-first), so that
/// [`subtree_end`] finds all descendants.
pub(crate) fn check_hierarchy(
    parents: &[u32],
    model: &[Affine3A],
    bones: &[usize],
) -> Result<(), StageError> {
    if model.len() < parents.len() {
        return Err(StageError::BadHierarchy {
            reason: format!("{} model matrices for {} bones", model.len(), parents.len()),
        });
    }
    for (i, &p) in parents.iter().enumerate() {
        if p != u32::MAX && p as usize >= i {
            return Err(StageError::BadHierarchy {
                reason: format!("bone {i}'s parent {p} does not come before it"),
            });
        }
    }
    for &b in bones {
        check_bone(b, parents.len())?;
        let end = subtree_end(parents, b);
        if let Some(late) = (end..parents.len()).find(|&i| {
            let p = parents[i] as usize;
            p >= b && p < end
        }) {
            return Err(StageError::BadHierarchy {
                reason: format!(
                    "bone {late} descends from bone {b} but does not follow its subtree \
                     (parents must be depth-first)"
                ),
            });
        }
    }
    Ok(())
}

/// The rest pose must place `bone` away from its ancestor `ancestor` (checked before a frame;
/// a pose that squashes the bone this frame is left unsolved instead).
pub(crate) fn check_rest_length(rig: &Rig, ancestor: usize, bone: usize) -> Result<(), StageError> {
    let (rest, parents) = (rig.rest_pose(), rig.parent_indices());
    let not_a_chain = StageError::NotAChain { bone, ancestor };
    // The bone's own offset, then its ancestors' transforms up to `ancestor` (none for a child).
    let (Some(r), Some(&p)) = (rest.get(bone), parents.get(bone)) else {
        return Err(not_a_chain);
    };
    let mut offset = r.translation;
    let mut b = p as usize;
    if b >= bone {
        return Err(not_a_chain);
    }
    while b != ancestor {
        let (Some(r), Some(&p)) = (rest.get(b), parents.get(b)) else {
            return Err(not_a_chain);
        };
        offset = r.translation + r.rotation * (r.scale * offset);
        if p as usize >= b {
            return Err(not_a_chain);
        }
        b = p as usize;
    }
    if offset.length_squared() > 1e-12 {
        Ok(())
    } else {
        Err(StageError::ZeroLengthBone { bone: ancestor })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests unwrap: a failure is the test failing
    use super::*;
    use crate::asset::{RawBone, RawRig};

    /// Baked rigs are depth-first: every bone's descendants (found by walking each bone's
    /// parents) are exactly the run that `subtree_end` gives, for a rig listed breadth-first.
    #[test]
    fn a_baked_rig_keeps_each_subtree_in_one_run() {
        let parents_in = [
            None,
            Some(0),
            Some(0),
            Some(1),
            Some(2),
            Some(1),
            Some(3),
            Some(4),
        ];
        let rig = RawRig {
            name: "breadth-first".into(),
            bones: parents_in
                .iter()
                .enumerate()
                .map(|(i, &parent)| RawBone {
                    name: format!("b{i}"),
                    parent,
                    rest: Transform::IDENTITY,
                })
                .collect(),
        }
        .bake()
        .unwrap();
        let parents = rig.parent_indices();
        for b in 0..parents.len() {
            let descends = |mut i: usize| loop {
                if i == b {
                    return true;
                }
                match parents[i] {
                    p if p == u32::MAX => return false,
                    p => i = p as usize,
                }
            };
            let want: Vec<usize> = (0..parents.len()).filter(|&i| descends(i)).collect();
            let got: Vec<usize> = (b..subtree_end(parents, b)).collect();
            assert_eq!(got, want, "bone {b}");
            assert_eq!(
                rig.subtree_ends()[b] as usize,
                subtree_end(parents, b),
                "bone {b}"
            );
        }
        check_hierarchy(
            parents,
            &vec![Affine3A::IDENTITY; parents.len()],
            &[0, 1, 2],
        )
        .unwrap();
    }

    /// The trigonometry-free rotations equal glam's trigonometric constructions over a full
    /// turn (half turns included) and for vectors of any length.
    #[test]
    fn rotations_without_trigonometry_match_the_angle_forms() {
        let same = |a: Quat, b: Quat| a.dot(b).abs() > 1.0 - 1e-6;
        let axis = Vec3A::new(0.3, -0.5, 0.8).normalize();
        let a = Vec3A::new(1.0, 0.2, -0.3);
        for i in -40..=40 {
            let phi = i as f32 * (std::f32::consts::PI / 40.0);
            let want = Quat::from_axis_angle(axis.into(), phi);
            let got = rotation_from_cos_sin(axis, 2.5 * phi.cos(), 2.5 * phi.sin());
            assert!(same(got, want), "cos/sin {phi}: {got} vs {want}");
            let b = (want * a) * 3.0 + axis * 0.7;
            let got = turn_about(axis, a, b).unwrap();
            assert!(same(got, want), "turn about {phi}: {got} vs {want}");
            for w in [0.0, 0.25, 0.5, 0.9] {
                let got = weighted(want, w);
                let slerp = Quat::IDENTITY.slerp(want, w);
                assert!(same(got, slerp), "weighted {phi} by {w}: {got} vs {slerp}");
            }
        }
        assert!(turn_about(axis, axis * 2.0, a).is_none());
        for to in [
            Vec3A::new(-0.5, 0.3, 2.0),
            Vec3A::new(-1.0, -0.2, 0.3),
            a * 4.0,
        ] {
            let want = Quat::from_rotation_arc(a.normalize().into(), to.normalize().into());
            assert!(same(arc(a, to), want), "arc to {to}");
        }
        // Turns far below what the cosine resolves are kept, not rounded to the identity.
        for angle in [1e-7f32, 1e-5, 3e-4, 1e-3] {
            let to = Quat::from_axis_angle(axis.into(), angle) * Vec3::from(a) * 3.0;
            let q = arc(a, to.into());
            let moved = q * Vec3::from(a) * 3.0;
            assert!(
                (moved - to).length() <= 1e-6 * to.length(),
                "arc by {angle}: {moved} vs {to}"
            );
        }
        // A half turn: any axis normal to `from`.
        let half = arc(a, -a * 2.0);
        assert!((half * a + a).length() < 1e-5, "{half}");
    }
}
