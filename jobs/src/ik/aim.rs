//! Aim (look-at): a bone turned so that its forward axis, from an offset point, points at a
//! target, with its up axis towards a pole vector; optionally spread over a chain (spine to
//! head), each joint taking a share of the turn and the last one the rest.
//!
//! Relative to the joint, the forward line `offset + s·forward` meets the sphere through the
//! target (centred on the joint) at one point `p` (`s ≥ 0`); the correction is the shortest
//! rotation from `p` to the target, then a turn about the joint–target line that brings the up
//! axis into the plane of that line and the pole vector. The solve runs in model space (the
//! joint's frame differs from it by a rotation and a uniform scale, which change neither the
//! line's geometry nor the turn); the job reports the correction in the joint's local frame. A target inside the offset's reach
//! (no such `s`, or on the joint) leaves the bone as it is and is not `reached`. As in ozz's
//! `IKAimJob`, `forward`, `up` and `offset` are in the joint's local space and the pole vector
//! in model space.

use super::lanes::{self, F, GroupModels, LaneMotion, LaneTransform, M3, Q, V3, gather};
use super::{
    ChainMover, Motion, Subtrees, TargetSpace, arc, check_bone, check_descends, check_direction,
    check_finite, check_hierarchy, check_unit_range, local_correction, passed_bones, rotation_of,
    to_model, turn_about, weighted,
};
use crate::asset::{Rig, Transform};
use crate::math::soa::LANES;
use crate::pose_stage::{PoseStage, StageError, StagePose};
use glam::{Affine3A, Quat, Vec3, Vec3A};
use std::sync::Arc;

/// Aim IK of one joint over model matrices.
#[derive(Debug)]
pub struct AimIkJob<'a> {
    /// Parent of each bone (parent-first, depth-first).
    pub parents: &'a [u32],
    /// Model matrices: the joint and its descendants are updated.
    pub model: &'a mut [Affine3A],
    /// The joint to turn.
    pub joint: usize,
    /// The point to aim at, in model space.
    pub target: Vec3,
    /// The aiming axis, in the joint's local space.
    pub forward: Vec3,
    /// The axis to keep towards the pole vector, in the joint's local space.
    pub up: Vec3,
    /// Where the aiming line starts, in the joint's local space (the eyes of a head joint).
    pub offset: Vec3,
    /// The direction (model space) the up axis turns towards; `None`: no turn about the line.
    pub pole_vector: Option<Vec3>,
    /// 0 leaves the pose, 1 aims.
    pub weight: f32,
}

/// What an aim solve did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AimResult {
    /// The joint's local correction (`local' = local · correction`).
    pub correction: Quat,
    /// Whether the full-weight correction makes the forward line pass through the target.
    pub reached: bool,
}

/// One joint's aim in its local frame.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AimParams {
    pub target: Vec3,
    pub forward: Vec3,
    pub up: Vec3,
    pub offset: Vec3,
    pub pole_vector: Option<Vec3>,
    pub weight: f32,
}

impl AimIkJob<'_> {
    fn params(&self) -> AimParams {
        AimParams {
            target: self.target,
            forward: self.forward,
            up: self.up,
            offset: self.offset,
            pole_vector: self.pole_vector,
            weight: self.weight,
        }
    }

    /// Checks the hierarchy, the joint, finite inputs, non-zero axes and pole, the weight.
    ///
    /// # Errors
    /// [`StageError`] naming the bone or the input.
    pub fn validate(&self) -> Result<(), StageError> {
        check_hierarchy(self.parents, self.model, &[self.joint])?;
        check_bone(self.joint, self.parents.len())?;
        check_params(&self.params())?;
        if !self.model[self.joint].is_finite() {
            return Err(StageError::NotFinite {
                what: "the joint's model matrix",
            });
        }
        Ok(())
    }

    /// Turns the joint and its descendants (nothing at weight 0).
    pub fn run(&mut self) -> AimResult {
        let params = self.params();
        let Some(frame) = self.model.get(self.joint).map(rotation_of) else {
            return AimResult::NONE;
        };
        match solve(
            Subtrees::Parents(self.parents),
            self.model,
            &[self.joint],
            1.0,
            &params,
        ) {
            Some(turn) => AimResult {
                correction: local_correction(frame, turn),
                reached: true,
            },
            None => AimResult::NONE,
        }
    }
}

impl AimResult {
    const NONE: Self = Self {
        correction: Quat::IDENTITY,
        reached: false,
    };
}

pub(crate) fn check_params(p: &AimParams) -> Result<(), StageError> {
    check_finite("target", p.target)?;
    check_direction("forward axis", p.forward)?;
    check_direction("up axis", p.up)?;
    check_finite("offset", p.offset)?;
    if let Some(pole) = p.pole_vector {
        check_direction("pole vector", pole)?;
    }
    check_unit_range("weight", p.weight)
}

/// Turns `joint` (and its descendants, through `mover`) so that the aiming line of `tip` (its
/// offset, forward and up axes, from `p`), where the mover's motions so far put it, points at
/// the target, by `share` of the full turn times `p.weight`; `p` checked. Returns the
/// model-space turn about the joint, or `None` where the target cannot be aimed at (inside the
/// offset's reach, on the joint) or the weight is 0.
///
/// The solve is in model space: the joint's local frame differs from it by a rotation and a
/// uniform scale, which change neither the aiming line's geometry nor the turn.
fn solve_joint(
    mover: &mut ChainMover<'_>,
    model: &mut [Affine3A],
    joint: usize,
    tip: usize,
    p: &AimParams,
    share: f32,
) -> Option<Quat> {
    let weight = p.weight * share;
    let (Some(mj), Some(mt)) = (model.get(joint), model.get(tip)) else {
        return None;
    };
    if weight <= 0.0 {
        return None;
    }
    let pivot = mover.point(mj.translation);
    let mt = mover.matrix(mt);
    let line = AimLine {
        from: mt.transform_point3a(p.offset.into()) - pivot,
        forward: (mt.matrix3 * Vec3A::from(p.forward)).try_normalize()?,
        up: mt.matrix3 * Vec3A::from(p.up),
    };
    let c = weighted(
        correction(&line, Vec3A::from(p.target) - pivot, p.pole_vector)?,
        weight,
    );
    mover.push(model, joint, &Motion::turn(c, pivot));
    Some(c)
}

/// An aiming line in model space, relative to the joint that turns: where it starts, its
/// direction (unit), and the up axis that turns with it.
struct AimLine {
    from: Vec3A,
    forward: Vec3A,
    up: Vec3A,
}

/// The full-weight turn (model space, about the joint) that makes `line` pass through the
/// target `t` (relative to the joint) with its up axis towards the pole, or `None` where the
/// target cannot be aimed at (inside the offset's reach, or on the joint).
fn correction(line: &AimLine, t: Vec3A, pole: Option<Vec3>) -> Option<Quat> {
    let (o, f) = (line.from, line.forward);
    let of = o.dot(f);
    let (o2, t2) = (o.length_squared(), t.length_squared());
    let disc = of * of - o2 + t2;
    // Also false for NaN: no aim line reaches the target.
    if disc.is_nan() || disc < 0.0 {
        return None;
    }
    let aim = o + f * (disc.sqrt() - of);
    let scale2 = t2.max(o2);
    if aim.length_squared() <= 1e-12 * scale2 || t2 <= 1e-12 * scale2 {
        return None;
    }
    let c = arc(aim, t);
    let twist = match pole {
        Some(pole) => turn_about(t / t2.sqrt(), c * line.up, pole.into()).unwrap_or(Quat::IDENTITY),
        None => Quat::IDENTITY,
    };
    Some((twist * c).normalize())
}

/// Aims the last joint of `chain` (base to tip): each earlier joint takes `share` of the turn
/// that would aim the tip from it, the tip the rest. The tip's axes and offset are given in its
/// own frame; each joint solves with the tip's aiming line as the earlier joints left it.
/// Returns the tip's model-space turn (`None` as for [`solve_joint`]).
pub(crate) fn solve(
    tree: Subtrees<'_>,
    model: &mut [Affine3A],
    chain: &[usize],
    share: f32,
    p: &AimParams,
) -> Option<Quat> {
    let (&tip, spine) = chain.split_last()?;
    let mut mover = ChainMover::new(tree);
    for &joint in spine {
        solve_joint(&mut mover, model, joint, tip, p, share);
    }
    let turn = solve_joint(&mut mover, model, tip, tip, p, 1.0);
    mover.finish(model);
    turn
}

/// A cone around `axis` (model space) that the look direction is kept in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LookCone {
    /// The cone's axis (the character's forward, say), in model space.
    pub axis: Vec3,
    /// Half the cone's opening angle, radians, in `[0, π]`.
    pub half_angle: f32,
}

/// An entity's look-at (the component [`LookAtStage`] reads).
#[derive(Clone, Debug, PartialEq)]
pub struct LookAt {
    /// The joints that turn, base to tip (each descending from the previous); the tip aims.
    pub chain: Arc<[usize]>,
    /// The share of the turn each joint before the tip takes, in `[0, 1]`.
    pub share: f32,
    /// The point to look at.
    pub target: Vec3,
    /// The space `target` is in.
    pub space: TargetSpace,
    /// The tip's forward axis, in its local space.
    pub forward: Vec3,
    /// The tip's up axis, in its local space.
    pub up: Vec3,
    /// Where the tip looks from, in its local space (the eyes).
    pub offset: Vec3,
    /// The direction the up axis turns towards, in model space.
    pub pole_vector: Option<Vec3>,
    /// 0 leaves the pose, 1 looks.
    pub weight: f32,
    /// When set, a target outside the cone (seen from the tip joint) is looked at on the cone's
    /// edge, nearest to it.
    pub cone: Option<LookCone>,
}

/// Runs the aim on every entity with a [`LookAt`].
#[derive(Clone, Copy, Debug, Default)]
pub struct LookAtStage;

impl LookAt {
    fn params(&self, target: Vec3) -> AimParams {
        AimParams {
            target,
            forward: self.forward,
            up: self.up,
            offset: self.offset,
            pole_vector: self.pole_vector,
            weight: self.weight,
        }
    }
}

/// `target` moved onto the cone's edge (about `apex`) when it lies outside: the axis turned by
/// the half angle towards the target, at the target's distance.
fn clamp_to_cone(target: Vec3, apex: Vec3, cone: &LookCone) -> Vec3 {
    let dir = target - apex;
    let (axis, len) = (cone.axis.normalize_or_zero(), dir.length());
    if len <= 0.0 || axis == Vec3::ZERO {
        return target;
    }
    let (sin, cos) = cone.half_angle.sin_cos();
    let along = dir.dot(axis);
    if along >= cos * len {
        return target;
    }
    let side = (dir - axis * along)
        .try_normalize()
        .unwrap_or_else(|| axis.any_orthonormal_vector().cross(axis));
    apex + (axis * cos + side * sin) * len
}

impl PoseStage for LookAtStage {
    type Input = LookAt;

    fn name(&self) -> &str {
        "look-at"
    }

    fn check(&self, rig: &Rig, input: &LookAt) -> Result<(), StageError> {
        let parents = rig.parent_indices();
        let Some(&first) = input.chain.first() else {
            return Err(StageError::BadHierarchy {
                reason: "the look-at chain is empty".into(),
            });
        };
        check_bone(first, parents.len())?;
        for pair in input.chain.windows(2) {
            check_descends(parents, pair[1], pair[0])?;
        }
        check_values(input)
    }

    fn check_like(&self, input: &LookAt, checked: &LookAt) -> Option<Result<(), StageError>> {
        (input.chain == checked.chain).then(|| check_values(input))
    }

    fn apply(&self, input: &LookAt, pose: &mut StagePose<'_>) {
        look_lanes(std::slice::from_ref(input), std::slice::from_mut(pose));
    }

    fn apply_batch(&self, inputs: &[LookAt], poses: &mut [StagePose<'_>]) {
        for (inputs, poses) in inputs.chunks(LANES).zip(poses.chunks_mut(LANES)) {
            look_lanes(inputs, poses);
        }
    }
}

/// What [`LookAtStage::check`] checks beyond the chain (for an entity whose chain and rig
/// passed it), in the same order.
fn check_values(input: &LookAt) -> Result<(), StageError> {
    check_params(&input.params(input.target))?;
    check_unit_range("share", input.share)?;
    if let Some(cone) = &input.cone {
        check_direction("cone axis", cone.axis)?;
        if !(0.0..=std::f32::consts::PI).contains(&cone.half_angle) {
            return Err(StageError::OutOfRange {
                what: "cone half angle",
                value: cone.half_angle,
                range: "[0, π]",
            });
        }
    }
    Ok(())
}

/// The longest chain [`look_lanes`] solves lane-parallel; an entity with a longer one is
/// solved alone by [`solve`].
const LANE_CHAIN: usize = 8;

/// The look-at for up to [`LANES`] entities, one per lane (inputs checked): the cone and the
/// chain's turns as [`clamp_to_cone`] and [`solve`] find them, each lane deciding its
/// branches; the bones then move across the lanes where the entities share the chain's bones
/// and turns ([`move_chain_lanes`]), else per entity through its [`ChainMover`], with its
/// lane's turns (the same bits).
/// Returns which entities' tips aim at their targets (the solve's `Some`).
fn look_lanes(inputs: &[LookAt], poses: &mut [StagePose<'_>]) -> [bool; LANES] {
    let mut aimed = [false; LANES];
    let n = inputs.len().min(poses.len()).min(LANES);
    let mut active = [false; LANES];
    let mut targets = [Vec3A::ZERO; LANES];
    // World-space targets, and the transforms that take them to model space.
    let mut in_world = [false; LANES];
    let mut transforms = [Transform::IDENTITY; LANES];
    // Per entity: the tip's matrix, each step's joint and weight, the tip's forward axis, up
    // axis and eye offset (`axes`), the pole, the cone (a zero axis without one).
    let mut tips = [Affine3A::IDENTITY; LANES];
    let mut joints = [[Vec3A::ZERO; LANE_CHAIN]; LANES];
    let mut weights = [[0.0f32; LANES]; LANE_CHAIN];
    let mut axes = [[Vec3A::Z; LANES]; 3];
    let (mut poles, mut has_pole) = ([Vec3A::Y; LANES], [0.0f32; LANES]);
    let (mut cone_axes, mut cone_angles) = ([Vec3A::ZERO; LANES], [0.0f32; LANES]);
    let mut steps = 0;
    // The chain and its joints' subtrees, when every entity the lanes solve has the same (then
    // the bones move across the lanes, else per entity).
    let mut shared: Option<(&Rig, &[usize])> = None;
    let mut uniform = true;
    for k in 0..n {
        let (input, pose) = (&inputs[k], &mut poses[k]);
        let chain = &input.chain[..];
        let Some(&tip) = chain.last() else {
            continue;
        };
        if chain.len() > LANE_CHAIN {
            let target = to_model(input.space, input.target, pose.transform);
            let target = match (&input.cone, pose.model.get(tip)) {
                (Some(cone), Some(m)) => clamp_to_cone(target, m.translation.into(), cone),
                _ => target,
            };
            let tree = Subtrees::Baked(pose.rig.subtree_ends());
            aimed[k] = solve(tree, pose.model, chain, input.share, &input.params(target)).is_some();
            continue;
        }
        let model = &*pose.model;
        if chain.iter().any(|&b| b >= model.len()) {
            continue;
        }
        targets[k] = input.target.into();
        if let (TargetSpace::World, Some(t)) = (input.space, pose.transform) {
            transforms[k] = *t;
            in_world[k] = true;
        }
        tips[k] = model[tip];
        for (j, &b) in chain.iter().enumerate() {
            joints[k][j] = model[b].translation;
            // Each joint before the tip takes its share of the turn, the tip the rest.
            let share = if j + 1 < chain.len() {
                input.share
            } else {
                1.0
            };
            weights[j][k] = input.weight * share;
        }
        (axes[0][k], axes[1][k], axes[2][k]) =
            (input.forward.into(), input.up.into(), input.offset.into());
        if let Some(pole) = input.pole_vector {
            (poles[k], has_pole[k]) = (pole.into(), 1.0);
        }
        if let Some(cone) = input.cone {
            (cone_axes[k], cone_angles[k]) = (cone.axis.into(), cone.half_angle);
        }
        steps = steps.max(chain.len());
        // The same rig and chain move the same bones.
        match shared {
            Some((rig, first)) => uniform &= std::ptr::eq(rig, pose.rig) && first == chain,
            None => shared = Some((pose.rig, chain)),
        }
        active[k] = true;
    }
    if steps == 0 {
        return aimed;
    }
    let mut target = V3::gather(|k| targets[k]);
    if in_world.iter().any(|&w| w) {
        let in_world = gather(|k| if in_world[k] { 1.0 } else { 0.0 }).simd_gt(F::ZERO);
        let model = LaneTransform::gather(|k| transforms[k]).model_point(target);
        target = V3::select(in_world, model, target);
    }
    let tip = V3::gather(|k| tips[k].translation);

    // The cone, about the tip joint.
    let axis = V3::gather(|k| cone_axes[k]);
    let coned = axis.length_squared().simd_gt(F::ZERO);
    if coned.any() {
        let axis = axis.normalize_or_zero();
        let (sin, cos) = gather(|k| cone_angles[k]).sin_cos();
        let dir = target - tip;
        let len = dir.length();
        let along = dir.dot(axis);
        let side = dir - axis * along;
        let side_len = side.length();
        let side_ok = (F::ONE / side_len).is_finite();
        let normal = axis.any_orthonormal().cross(axis);
        let side = V3::select(side_ok, side * (F::ONE / side_len), normal);
        let edge = tip + (axis * cos + side * sin) * len;
        let outside = coned
            & len.simd_gt(F::ZERO)
            & axis.length_squared().simd_gt(F::ZERO)
            & along.simd_lt(cos * len);
        target = V3::select(outside, edge, target);
    }

    // Each joint in turn, with the tip's aiming line as the turns so far put it.
    let [forward, up, offset] = axes.map(|a| V3::gather(|k| a[k]));
    let has_pole = F::from(has_pole).simd_gt(F::ZERO);
    let pole = V3::gather(|k| poles[k]);
    let tip_frame = M3::gather(|k| tips[k].matrix3);
    let mut moved = LaneMotion::IDENTITY;
    // Each step's turn, and the lanes it turns.
    let mut turns = [(LaneMotion::IDENTITY, 0u32); LANE_CHAIN];
    for (j, turns) in turns.iter_mut().enumerate().take(steps) {
        // Lane k's weight at this step (0 past its chain's end).
        let weight = F::from(weights[j]);
        let pivot = moved.point(V3::gather(|k| joints[k][j]));
        let frame = moved.r.mul_mat(&tip_frame);
        let tip_at = moved.point(tip);
        let from = frame.mul_vec(offset) + tip_at - pivot;
        let fwd = frame.mul_vec(forward);
        let rcp = F::ONE / fwd.length();
        let fwd = fwd * rcp;
        let line_up = frame.mul_vec(up);
        let (c, found) = correction_lanes(from, fwd, line_up, target - pivot, pole, has_pole);
        let pushed = weight.simd_gt(F::ZERO) & rcp.is_finite() & rcp.simd_gt(F::ZERO) & found;
        let c = lanes::weighted(c, weight);
        let turn = LaneMotion::turn(c, pivot);
        moved = LaneMotion::select(pushed, moved.then(&turn), moved);
        *turns = (turn, pushed.to_bitmask());
    }
    let active = (0..n).filter(|&k| active[k]).fold(0u32, |m, k| m | 1 << k);
    for (k, (aimed, input)) in aimed.iter_mut().zip(inputs).enumerate().take(n) {
        if active & (1 << k) != 0 {
            *aimed = turns[input.chain.len() - 1].1 & (1 << k) != 0;
        }
    }
    // Each step turns all the entities or none: they compose the same motions.
    let same_steps = (turns.iter()).all(|&(_, l)| l & active == 0 || l & active == active);
    match shared {
        Some((rig, chain)) if uniform && same_steps => {
            let tree = Subtrees::Baked(rig.subtree_ends());
            let mut ends = [0; LANE_CHAIN];
            for (end, &joint) in ends.iter_mut().zip(chain) {
                *end = tree.end(joint);
            }
            move_chain_lanes(
                &mut GroupModels::new(&mut poses[..n]),
                chain,
                &ends,
                &turns,
                active,
            );
        }
        _ => {
            // Each step's turn per entity.
            let still = LaneMotion::IDENTITY.lanes();
            let scalar: [[Motion; LANES]; LANE_CHAIN] =
                std::array::from_fn(|j| if j < steps { turns[j].0.lanes() } else { still });
            for (k, (pose, input)) in poses.iter_mut().zip(inputs).enumerate().take(n) {
                if active & (1 << k) == 0 {
                    continue;
                }
                let mut mover = ChainMover::new(Subtrees::Baked(pose.rig.subtree_ends()));
                for (j, &joint) in input.chain.iter().enumerate() {
                    if turns[j].1 & (1 << k) != 0 {
                        mover.push(pose.model, joint, &scalar[j][k]);
                    }
                }
                mover.finish(pose.model);
            }
        }
    }
    aimed
}

/// [`ChainMover`] across the lanes, for a group whose entities (`active`) share `chain`, its
/// joints' subtree ends `ends`, and which steps turn them: each step's motion composed down
/// the chain, each bone moved once, as the mover moves each entity's bones.
fn move_chain_lanes(
    group: &mut GroupModels<'_>,
    chain: &[usize],
    ends: &[usize; LANE_CHAIN],
    turns: &[(LaneMotion, u32); LANE_CHAIN],
    active: u32,
) {
    // The motion composed so far, and the step it was last pushed at.
    let mut moved: Option<(LaneMotion, usize)> = None;
    for (j, (&joint, (turn, lanes))) in chain.iter().zip(turns).enumerate() {
        if lanes & active == 0 {
            continue;
        }
        moved = Some(match moved {
            Some((so_far, p)) => {
                for range in passed_bones(chain[p], joint, (ends[p], ends[j])) {
                    group.move_bones(&so_far, active, range);
                }
                (so_far.then(turn), j)
            }
            None => (*turn, j),
        });
    }
    if let Some((motion, j)) = moved {
        group.move_bones(&motion, active, chain[j]..ends[j]);
    }
}

/// [`correction`] per lane, and the lanes where the target can be aimed at.
fn correction_lanes(o: V3, f: V3, up: V3, t: V3, pole: V3, has_pole: F) -> (Q, F) {
    let of = o.dot(f);
    let (o2, t2) = (o.length_squared(), t.length_squared());
    let disc = of * of - o2 + t2;
    let aim = o + f * (disc.sqrt() - of);
    let scale2 = F::splat(1e-12) * t2.max(o2);
    let found = disc.simd_ge(F::ZERO) & aim.length_squared().simd_gt(scale2) & t2.simd_gt(scale2);
    let c = lanes::arc(aim, t);
    let (twist, _) = lanes::turn_about(t * (F::ONE / t2.sqrt()), c.rotate(up), pole);
    let twist = Q::select(has_pole, twist, Q::IDENTITY);
    (twist.mul(c).normalize(), found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_outside_the_cone_moves_onto_its_edge() {
        let cone = LookCone {
            axis: Vec3::Z,
            half_angle: 0.5,
        };
        let apex = Vec3::new(0.0, 1.0, 0.0);
        let inside = apex + Vec3::new(0.1, 0.0, 1.0);
        assert_eq!(clamp_to_cone(inside, apex, &cone), inside);
        let outside = apex + Vec3::new(2.0, 0.0, 0.0);
        let got = clamp_to_cone(outside, apex, &cone) - apex;
        // On the edge, in the plane of the axis and the target, at the same distance.
        assert!((got.length() - 2.0).abs() < 1e-5);
        assert!((got.angle_between(Vec3::Z) - 0.5).abs() < 1e-5);
        assert!((got - Vec3::new(2.0 * 0.5f32.sin(), 0.0, 2.0 * 0.5f32.cos())).length() < 1e-5);
    }
}

#[cfg(test)]
mod lane_tests {
    #![allow(clippy::unwrap_used)] // tests unwrap: a failure is the test failing
    use super::*;
    use crate::ik::test_rig::{Rng, biped, bits, bone, largest_gap, random_pose};
    use crate::pose_stage::LocalPose;
    use sinew_runtime::store::Entity;

    /// Positions and matrix columns the lanes may put off the scalar solve's (`wide`'s
    /// polynomial `atan2` and `sin_cos` for libm's): 1e-5 of the character's 1.8-unit height.
    const TOLERANCE: f32 = 1e-5 * 1.8;

    /// The scalar stage: the target in model space, on the cone, then the chain's solve.
    fn scalar(input: &LookAt, rig: &Rig, model: &mut [Affine3A], t: &Transform) -> bool {
        let mut target = to_model(input.space, input.target, Some(t));
        if let Some(cone) = &input.cone {
            let tip = model[*input.chain.last().unwrap()].translation;
            target = clamp_to_cone(target, tip.into(), cone);
        }
        let tree = Subtrees::Baked(rig.subtree_ends());
        solve(
            tree,
            model,
            &input.chain,
            input.share,
            &input.params(target),
        )
        .is_some()
    }

    /// The batched look-at gives each entity what the scalar stage gives it (to rounding) and
    /// the same aimed flag, in full and partial groups that mix chains of one, two and three
    /// joints, cones, poles, world and model targets, and targets that cannot be aimed at, and
    /// in groups whose entities all turn the same chain; each entity gets the same bits alone
    /// as in its group.
    #[test]
    fn the_lanes_agree_with_the_scalar_stage() {
        let rig = biped();
        let (spine, neck, head) = (bone(&rig, "spine"), bone(&rig, "neck"), bone(&rig, "head"));
        let mut rng = Rng::new(5);
        let (mut worst, mut aimed_count) = (0.0f32, 0);
        for round in 0..60 {
            let n = [8, 3, 1, 6][round % 4];
            // Every third round, one chain for the whole group and no target that stops a
            // step: its bones move across the lanes (elsewhere per entity).
            let one_chain = round % 3 == 2;
            let mut cases = Vec::new();
            for k in 0..n {
                let kind = match (k + round) % 8 {
                    3 | 4 | 7 if one_chain => 0,
                    kind => kind,
                };
                let (local, model) = random_pose(&rig, &mut rng, 0.4);
                let transform = Transform::new(
                    Vec3::new(rng.range(-5.0, 5.0), 0.0, rng.range(-5.0, 5.0)),
                    Quat::from_rotation_y(rng.range(-3.0, 3.0)),
                    Vec3::ONE,
                );
                let chain: Arc<[usize]> = match kind % 3 {
                    0 => Arc::from([head]),
                    1 => Arc::from([neck, head]),
                    _ => Arc::from([spine, neck, head]),
                };
                let mut look = LookAt {
                    chain,
                    share: [0.5, 0.0, 0.3][kind % 3],
                    target: Vec3::new(
                        rng.range(-8.0, 8.0),
                        rng.range(0.0, 3.0),
                        rng.range(-8.0, 8.0),
                    ),
                    space: TargetSpace::World,
                    forward: Vec3::Z,
                    up: Vec3::Y,
                    offset: Vec3::new(0.0, 0.09, 0.1),
                    pole_vector: (kind != 5).then_some(Vec3::Y),
                    weight: if kind == 6 { 0.7 } else { 1.0 },
                    cone: (kind % 2 == 0).then_some(LookCone {
                        axis: Vec3::Z,
                        half_angle: 1.2,
                    }),
                };
                if one_chain {
                    (look.chain, look.share) = (Arc::from([spine, neck, head]), 0.4);
                }
                let head_at = transform.to_affine() * model[head];
                match kind {
                    // On the head joint: nothing to aim at.
                    3 => look.target = head_at.translation.into(),
                    // Inside the eyes' reach: no aiming line meets it.
                    4 => look.target = head_at.transform_point3(Vec3::new(0.0, 0.02, 0.02)),
                    // Weight 0.
                    7 => look.weight = 0.0,
                    _ => {}
                }
                if kind == 1 {
                    // Model space.
                    look.space = TargetSpace::Model;
                    look.target = transform
                        .to_affine()
                        .inverse()
                        .transform_point3(look.target);
                }
                cases.push((look, transform, local, model));
            }
            let inputs: Vec<LookAt> = cases.iter().map(|c| c.0.clone()).collect();
            let mut models: Vec<Vec<Affine3A>> = cases.iter().map(|c| c.3.clone()).collect();
            let mut poses: Vec<StagePose<'_>> = (cases.iter().zip(&mut models))
                .map(|(c, model)| StagePose {
                    entity: Entity::DANGLING,
                    rig: &rig,
                    local: LocalPose::aos(&c.2),
                    model,
                    transform: Some(&c.1),
                })
                .collect();
            let aimed = look_lanes(&inputs, &mut poses);
            drop(poses);
            for (k, (look, transform, local, model)) in cases.iter().enumerate() {
                let what = format!("round {round}, entity {k}, case {}", (k + round) % 8);
                let what = format!("{what}{}", if one_chain { ", one chain" } else { "" });
                let mut want = model.clone();
                let want_aimed = scalar(look, &rig, &mut want, transform);
                assert_eq!(aimed[k], want_aimed, "{what}");
                aimed_count += usize::from(want_aimed);
                let gap = largest_gap(&models[k], &want);
                assert!(gap <= TOLERANCE, "{what}: {gap}");
                worst = worst.max(gap);

                let mut alone = model.clone();
                let mut pose = [StagePose {
                    entity: Entity::DANGLING,
                    rig: &rig,
                    local: LocalPose::aos(local),
                    model: &mut alone,
                    transform: Some(transform),
                }];
                look_lanes(std::slice::from_ref(look), &mut pose);
                assert_eq!(bits(&alone), bits(&models[k]), "{what}");
            }
        }
        assert!(aimed_count > 100, "{aimed_count}");
        eprintln!("largest gap to the scalar stage: {worst:e}");
    }
}
