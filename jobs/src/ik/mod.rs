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

/// Turns `bone` and its descendants rigidly by `q` (model space) about `pivot`.
#[inline]
pub(crate) fn rotate_subtree(
    parents: &[u32],
    model: &mut [Affine3A],
    bone: usize,
    pivot: Vec3A,
    q: Quat,
) {
    let end = subtree_end(parents, bone).min(model.len());
    let r = Mat3A::from_quat(q);
    for m in model.get_mut(bone..end).into_iter().flatten() {
        m.matrix3 = r * m.matrix3;
        m.translation = pivot + r * (m.translation - pivot);
    }
}

/// Moves `bone` and its descendants by `delta` (model space).
#[inline]
pub(crate) fn translate_subtree(
    parents: &[u32],
    model: &mut [Affine3A],
    bone: usize,
    delta: Vec3A,
) {
    let end = subtree_end(parents, bone).min(model.len());
    for m in model.get_mut(bone..end).into_iter().flatten() {
        m.translation += delta;
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

/// The shortest rotation taking direction `from` to `to` (both non-zero).
#[inline]
pub(crate) fn arc(from: Vec3A, to: Vec3A) -> Quat {
    Quat::from_rotation_arc(from.normalize().into(), to.normalize().into())
}

/// The rotation by `w` of the way from the identity to `q` (`w` in `[0, 1]`).
#[inline]
pub(crate) fn weighted(q: Quat, w: f32) -> Quat {
    if w >= 1.0 {
        q
    } else {
        Quat::IDENTITY.slerp(q, w).normalize()
    }
}

/// The signed angle about `axis` (unit) that turns `from` onto `to`, both projected onto the
/// plane normal to `axis`; `None` where a projection vanishes.
#[inline]
pub(crate) fn angle_about(axis: Vec3A, from: Vec3A, to: Vec3A) -> Option<f32> {
    let a = from - axis * from.dot(axis);
    let b = to - axis * to.dot(axis);
    let tiny = 1e-12 * (from.length_squared() + to.length_squared()).max(f32::MIN_POSITIVE);
    if a.length_squared() <= tiny || b.length_squared() <= tiny {
        return None;
    }
    Some(a.cross(b).dot(axis).atan2(a.dot(b)))
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
    let mut offset = Vec3::ZERO;
    let mut b = bone;
    while b != ancestor {
        let (Some(r), Some(&p)) = (rest.get(b), parents.get(b)) else {
            return Err(StageError::NotAChain { bone, ancestor });
        };
        offset = r.translation + r.rotation * (r.scale * offset);
        if p as usize >= b {
            return Err(StageError::NotAChain { bone, ancestor });
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
        }
        check_hierarchy(
            parents,
            &vec![Affine3A::IDENTITY; parents.len()],
            &[0, 1, 2],
        )
        .unwrap();
    }
}
