//! Two-bone IK: a start joint (hip, shoulder), a hinge joint (knee, elbow) and an end joint
//! (ankle, wrist) turned so that the end reaches a target.
//!
//! The hinge turns about its axis until the start–end distance is the target's (found exactly
//! for any axis that is not along a bone, by the law of cosines on the parts of the bones
//! normal to the axis), the start joint then swings the end onto the target, turns the chain
//! about the start–target line until the hinge points towards the pole vector, and adds the
//! twist angle about that line. A target out of reach straightens the chain towards it (or
//! folds it, inside `|l1 − l2|`).
//!
//! Conventions, where they differ from ozz's `IKTwoBoneJob`:
//! - **soften** is the fraction of the chain's length where softening starts (1 disables it,
//!   as in ozz), but the curve is `d' = da + ds·(1 − e^(−(d − da)/ds))` (`da = soften · chain`,
//!   `ds = chain − da`), whose slope is 1 where it starts; ozz uses a polynomial.
//! - **mid_axis** may point either way: the hinge keeps bending to the side it bends to now
//!   (a straight chain bends to the positive side about the axis, then the pole decides).
//!   Without it the axis is the normal of the current bend plane.
//! - **twist_angle** turns about the start–target line, after the pole alignment.
//! - Without a pole vector the chain keeps its bend plane, swung onto the target.
//! - **weight** moves the end's goal along the line from where the end is to the full-weight
//!   solution (and scales the pole turn and the twist), so the end nears the target steadily
//!   as the weight grows; ozz slerps the two corrections towards identity instead, which can
//!   swing the end away from the target at mid weights.
//! - **reached** says whether the full-weight solution puts the end within 1e-4 chain lengths
//!   of the target; it does not depend on `weight`.

use super::lanes::{F, M3, Q, V3, arc as lane_arc, rotation_from_cos_sin as lane_rotation};
use super::{
    Motion, Subtrees, TargetSpace, arc, check_bone, check_descends, check_direction, check_finite,
    check_hierarchy, check_unit_range, local_correction, rotation_from_cos_sin, rotation_of,
    to_model, turn_about, weighted,
};
use crate::asset::Rig;
use crate::pose_stage::{PoseStage, StageError, StagePose};
use glam::{Affine3A, Quat, Vec3, Vec3A};
use std::ops::Range;

/// Two-bone IK over model matrices.
#[derive(Debug)]
pub struct TwoBoneIkJob<'a> {
    /// Parent of each bone (parent-first, depth-first; `u32::MAX` for a root).
    pub parents: &'a [u32],
    /// Model matrices, one per bone: the three joints and their descendants are updated.
    pub model: &'a mut [Affine3A],
    /// The start joint.
    pub start: usize,
    /// The hinge joint, a descendant of `start`.
    pub mid: usize,
    /// The end joint, a descendant of `mid`.
    pub end: usize,
    /// The target of the end joint, in model space.
    pub target: Vec3,
    /// The direction (model space) the hinge should point towards; `None` keeps the bend plane.
    pub pole_vector: Option<Vec3>,
    /// The hinge axis in the mid joint's local space; `None`: the current bend plane's normal.
    pub mid_axis: Option<Vec3>,
    /// 0 leaves the pose as it is, 1 reaches.
    pub weight: f32,
    /// Fraction of the chain's length where softening starts, in `[0, 1]` (1: none).
    pub soften: f32,
    /// Turn about the start–target line, radians.
    pub twist_angle: f32,
}

/// What a two-bone solve did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TwoBoneResult {
    /// The start joint's local correction (`local' = local · correction`).
    pub start_correction: Quat,
    /// The mid joint's local correction.
    pub mid_correction: Quat,
    /// Whether the full-weight solution reaches the target.
    pub reached: bool,
}

impl TwoBoneResult {
    const NONE: Self = Self {
        start_correction: Quat::IDENTITY,
        mid_correction: Quat::IDENTITY,
        reached: false,
    };
}

/// A solve's inputs beyond the matrices (shared by the job, the stage and foot placement).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TwoBoneParams {
    pub start: usize,
    pub mid: usize,
    pub end: usize,
    pub target: Vec3,
    pub pole_vector: Option<Vec3>,
    pub mid_axis: Option<Vec3>,
    pub weight: f32,
    pub soften: f32,
    pub twist_angle: f32,
}

impl TwoBoneIkJob<'_> {
    fn params(&self) -> TwoBoneParams {
        TwoBoneParams {
            start: self.start,
            mid: self.mid,
            end: self.end,
            target: self.target,
            pole_vector: self.pole_vector,
            mid_axis: self.mid_axis,
            weight: self.weight,
            soften: self.soften,
            twist_angle: self.twist_angle,
        }
    }

    /// Checks the chain (each joint descends from the previous, bones of non-zero length in
    /// the given matrices), the hierarchy (depth-first parents, a matrix per bone), and the
    /// inputs (finite, non-zero directions, weight and soften in `[0, 1]`).
    ///
    /// # Errors
    /// [`StageError`] naming the bone or the input.
    pub fn validate(&self) -> Result<(), StageError> {
        check_hierarchy(self.parents, self.model, &[self.start, self.mid])?;
        check_params(self.parents, &self.params())?;
        for &b in &[self.start, self.mid, self.end] {
            if !self.model[b].is_finite() {
                return Err(StageError::NotFinite {
                    what: "a chain joint's model matrix",
                });
            }
        }
        let p = |b: usize| self.model[b].translation;
        check_length(self.start, p(self.start), p(self.mid))?;
        check_length(self.mid, p(self.mid), p(self.end))?;
        Ok(())
    }

    /// Solves and updates the three joints and their descendants (nothing at weight 0).
    /// Call [`TwoBoneIkJob::validate`] first: on unchecked input the result is unspecified
    /// (but never a panic).
    pub fn run(&mut self) -> TwoBoneResult {
        let params = self.params();
        let frames = (
            self.model.get(self.start).map(rotation_of),
            self.model.get(self.mid).map(rotation_of),
        );
        let turns = solve(Subtrees::Parents(self.parents), self.model, &params);
        match frames {
            (Some(start), Some(mid)) => TwoBoneResult {
                start_correction: local_correction(start, turns.start_correction),
                mid_correction: local_correction(mid, turns.mid_correction),
                reached: turns.reached,
            },
            _ => turns,
        }
    }
}

fn check_length(bone: usize, a: Vec3A, b: Vec3A) -> Result<(), StageError> {
    if (b - a).length_squared() > 1e-12 {
        Ok(())
    } else {
        Err(StageError::ZeroLengthBone { bone })
    }
}

pub(crate) fn check_params(parents: &[u32], p: &TwoBoneParams) -> Result<(), StageError> {
    check_bone(p.start, parents.len())?;
    check_descends(parents, p.mid, p.start)?;
    check_descends(parents, p.end, p.mid)?;
    check_finite("target", p.target)?;
    if let Some(pole) = p.pole_vector {
        check_direction("pole vector", pole)?;
    }
    if let Some(axis) = p.mid_axis {
        check_direction("mid axis", axis)?;
    }
    check_unit_range("weight", p.weight)?;
    check_unit_range("soften", p.soften)?;
    if !p.twist_angle.is_finite() {
        return Err(StageError::NotFinite {
            what: "twist angle",
        });
    }
    Ok(())
}

/// The solve; `p` checked by [`check_params`]. The corrections it returns are the model-space
/// turns about the start and mid joints (the job turns them into local ones; the stages need
/// neither). Degenerate geometry this frame (the target on the start joint, a bone squashed to
/// nothing) leaves the pose as it is and reports `reached: false`.
pub(crate) fn solve(
    tree: Subtrees<'_>,
    model: &mut [Affine3A],
    p: &TwoBoneParams,
) -> TwoBoneResult {
    let result = turns(model, p);
    if let Some(chain) = ChainMotion::new(model, p, &result) {
        chain.move_bones(tree, model, p, None);
    }
    result
}

/// The solve's turns (model space), without moving anything.
pub(crate) fn turns(model: &[Affine3A], p: &TwoBoneParams) -> TwoBoneResult {
    let (Some(ms), Some(mm), Some(me)) = (model.get(p.start), model.get(p.mid), model.get(p.end))
    else {
        return TwoBoneResult::NONE;
    };
    if p.weight <= 0.0 {
        return TwoBoneResult::NONE;
    }
    let (s, m, e) = (ms.translation, mm.translation, me.translation);
    let target = Vec3A::from(p.target);
    let (u, v) = (s - m, e - m);
    let (l1, l2) = (u.length(), v.length());
    let st = target - s;
    let dist = st.length();
    let chain = l1 + l2;
    let tiny = 1e-6 * chain;
    if !(l1 > tiny && l2 > tiny && dist > tiny) {
        return TwoBoneResult::NONE;
    }
    // The distance the end will be at: softened near full reach, then within reach.
    let mut d = dist;
    let da = chain * p.soften;
    let ds = chain - da;
    if p.soften < 1.0 && d > da && ds > 0.0 {
        d = da + ds * (1.0 - (-(d - da) / ds).exp());
    }
    let d = d.clamp((l1 - l2).abs(), chain);

    // The hinge axis (the mid matrix's rotation of the local axis: uniform scale expected).
    let axis = match p.mid_axis {
        Some(local) => (mm.matrix3 * Vec3A::from(local)).normalize_or_zero(),
        None => u.cross(v).normalize_or_zero(),
    };
    let axis = if axis == Vec3A::ZERO {
        // A straight chain and no axis: any normal of the chain (the pole aligns it below).
        Vec3A::from(Vec3::from(u / l1).any_orthonormal_vector())
    } else {
        axis
    };
    let chain_pose = Chain {
        s,
        m,
        u,
        v,
        l1,
        l2,
        axis,
    };
    // The end's goal relative to the start: at full weight the reachable point towards the
    // target; below it, that far along the line from the end's current place, so that the
    // end nears the target steadily as the weight grows.
    let full = st * (d / dist);
    let (full_mid, full_start, exact) =
        chain_pose.turns(full, d, p.pole_vector, 1.0, p.twist_angle);
    let reached = exact && (full - st).length_squared() <= (1e-4 * chain) * (1e-4 * chain);
    let (q_mid, q_start) = if p.weight >= 1.0 {
        (full_mid, full_start)
    } else {
        let goal = (e - s).lerp(full, p.weight);
        let goal_len = goal.length().clamp((l1 - l2).abs(), chain);
        let goal = goal.try_normalize().unwrap_or(full / d) * goal_len;
        let (q_mid, q_start, _) = chain_pose.turns(
            goal,
            goal_len,
            p.pole_vector,
            p.weight,
            p.twist_angle * p.weight,
        );
        (q_mid, q_start)
    };
    TwoBoneResult {
        start_correction: q_start,
        mid_correction: q_mid,
        reached,
    }
}

/// How a solve moves the chain: everything under the start joint turns about it, and the mid
/// joint's subtree turns about the mid joint first (the two composed, so each bone moves once).
pub(crate) struct ChainMotion {
    at_start: Motion,
    at_mid: Motion,
}

impl ChainMotion {
    /// The motion of a solve's turns; `None` for a solve that moves nothing.
    pub(crate) fn new(
        model: &[Affine3A],
        p: &TwoBoneParams,
        turns: &TwoBoneResult,
    ) -> Option<Self> {
        let (ms, mm) = (model.get(p.start)?, model.get(p.mid)?);
        if *turns == TwoBoneResult::NONE {
            return None;
        }
        let at_start = Motion::turn(turns.start_correction, ms.translation);
        let at_mid = Motion::turn(turns.mid_correction, mm.translation).then(&at_start);
        Some(Self { at_start, at_mid })
    }

    /// Where a point of the mid joint's subtree (the end joint, say) goes.
    pub(crate) fn mid_point(&self, x: Vec3A) -> Vec3A {
        self.at_mid.point(x)
    }

    /// Moves the bones under the start joint; the end joint's subtree by `end` instead, when
    /// given (foot placement sets the foot itself).
    pub(crate) fn move_bones(
        &self,
        tree: Subtrees<'_>,
        model: &mut [Affine3A],
        p: &TwoBoneParams,
        end: Option<&Motion>,
    ) {
        let bones = ChainRanges::new(tree, p.start, p.mid, p.end);
        for range in bones.start {
            self.at_start.move_bones(model, range);
        }
        for range in bones.mid {
            self.at_mid.move_bones(model, range);
        }
        end.unwrap_or(&self.at_mid).move_bones(model, bones.end);
    }
}

/// The bones a two-bone solve moves, by the motion that moves them: the start joint's subtree
/// outside the mid joint's (`start`), the mid joint's outside the end joint's (`mid`), and the
/// end joint's (`end`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ChainRanges {
    pub start: [Range<usize>; 2],
    pub mid: [Range<usize>; 2],
    pub end: Range<usize>,
}

impl ChainRanges {
    pub(crate) fn new(tree: Subtrees<'_>, start: usize, mid: usize, end: usize) -> Self {
        // Each subtree is one run inside its ancestor's (depth-first parents): start's holds
        // mid's, which holds end's.
        let start_end = tree.end(start).max(start);
        let mid_at = mid.clamp(start, start_end);
        let mid_end = tree.end(mid).clamp(mid_at, start_end);
        let end_at = end.clamp(mid_at, mid_end);
        let end_end = tree.end(end).clamp(end_at, mid_end);
        Self {
            start: [start..mid_at, mid_end..start_end],
            mid: [mid_at..end_at, end_end..mid_end],
            end: end_at..end_end,
        }
    }
}

impl ChainMotion {
    /// The motion of turns already composed: `at_start` about the start joint, `at_mid` for
    /// the mid joint's subtree (its own turn, then `at_start`).
    pub(crate) fn from_parts(at_start: Motion, at_mid: Motion) -> Self {
        Self { at_start, at_mid }
    }
}

/// [`LANES`](crate::math::soa::LANES) two-bone chains without pole, twist or softening (the
/// legs of foot placement), one per lane: joints (`s`, `m`, `e`), target, weight, and the
/// hinge axis, `mid_axis` in the mid matrix `mid_frame` where `has_axis` is set, the bend
/// plane's normal elsewhere.
pub(crate) struct LaneChains {
    pub s: V3,
    pub m: V3,
    pub e: V3,
    pub target: V3,
    pub weight: F,
    pub mid_frame: M3,
    pub mid_axis: V3,
    pub has_axis: F,
}

/// [`turns`] per lane, for [`LaneChains`]: the model-space turns about the start and mid
/// joints, the lanes that reach, and the lanes that move (elsewhere both turns are the
/// identity and nothing reaches, as for [`TwoBoneResult::NONE`]).
pub(crate) struct LaneTurns {
    pub start: Q,
    pub mid: Q,
    pub reached: F,
}

/// [`turns`] for eight chains at once, each lane taking the scalar branches its own values
/// decide.
pub(crate) fn lane_turns(c: &LaneChains) -> LaneTurns {
    let (s, m, e) = (c.s, c.m, c.e);
    let (u, v) = (s - m, e - m);
    let (l1, l2) = (u.length(), v.length());
    let st = c.target - s;
    let dist = st.length();
    let chain = l1 + l2;
    let tiny = F::splat(1e-6) * chain;
    let solved =
        l1.simd_gt(tiny) & l2.simd_gt(tiny) & dist.simd_gt(tiny) & c.weight.simd_gt(F::ZERO);
    let reach_lo = (l1 - l2).abs();
    let d = dist.max(reach_lo).min(chain);
    let given = c.mid_frame.mul_vec(c.mid_axis).normalize_or_zero();
    let bend = u.cross(v).normalize_or_zero();
    let axis = V3::select(c.has_axis, given, bend);
    let zero = axis.length_squared().simd_eq(F::ZERO);
    let axis = if zero.any() {
        // A straight chain and no axis: any normal of the chain.
        V3::select(zero, (u * (F::ONE / l1)).any_orthonormal(), axis)
    } else {
        axis
    };
    let pose = LaneChain {
        s,
        m,
        u,
        v,
        l1,
        l2,
        axis,
    };
    let full = st * (d / dist);
    let (full_mid, full_start, exact) = pose.turns(full, d);
    let miss = full - st;
    let close = F::splat(1e-4) * chain;
    let reached = exact & miss.length_squared().simd_le(close * close);
    let (mut q_mid, mut q_start) = (full_mid, full_start);
    let partial = c.weight.simd_lt(F::ONE);
    if (partial & solved).any() {
        let w = c.weight;
        let goal = (e - s) * (F::ONE - w) + full * w;
        let goal_len = goal.length().max(reach_lo).min(chain);
        let n = goal.length();
        let rcp = F::ONE / n;
        let ok = rcp.is_finite() & rcp.simd_gt(F::ZERO);
        let goal = V3::select(ok, goal * rcp, full * (F::ONE / d)) * goal_len;
        let (mid_w, start_w, _) = pose.turns(goal, goal_len);
        q_mid = Q::select(partial, mid_w, q_mid);
        q_start = Q::select(partial, start_w, q_start);
    }
    LaneTurns {
        start: Q::select(solved, q_start, Q::IDENTITY),
        mid: Q::select(solved, q_mid, Q::IDENTITY),
        reached: reached & solved,
    }
}

/// [`Chain`] per lane.
struct LaneChain {
    s: V3,
    m: V3,
    u: V3,
    v: V3,
    l1: F,
    l2: F,
    axis: V3,
}

impl LaneChain {
    /// [`Chain::turns`] without pole or twist.
    fn turns(&self, goal: V3, d: F) -> (Q, Q, F) {
        let (u, v, axis) = (self.u, self.v, self.axis);
        let (ua, va) = (u.dot(axis), v.dot(axis));
        let (a, b) = (u - axis * ua, v - axis * va);
        let (an2, bn2) = (a.length_squared(), b.length_squared());
        let scale = (u.length_squared() + v.length_squared()).max(F::splat(f32::MIN_POSITIVE));
        let tiny = F::splat(1e-12) * scale;
        let hinge = an2.simd_gt(tiny) & bn2.simd_gt(tiny);
        let nn = (an2 * bn2).sqrt();
        let d2 = d * d;
        let c = (F::HALF * (self.l1 * self.l1 + self.l2 * self.l2 - d2) - ua * va) / nn;
        let k = (ua - va) * (ua - va);
        let two_nn = F::splat(2.0) * nn;
        let (lo, hi) = (an2 + bn2 - two_nn + k, an2 + bn2 + two_nn + k);
        let slack = F::splat(8.0 * f32::EPSILON) * hi;
        let straight = d2.simd_ge(hi - slack);
        let folded = d2.simd_le(lo + slack);
        let cc = c.max(-F::ONE).min(F::ONE);
        let cos = straight.select(-F::ONE, folded.select(F::ONE, cc));
        let sin = (straight | folded).select(F::ZERO, ((F::ONE - cc) * (F::ONE + cc)).sqrt());
        let (cos0, sin0) = (a.dot(b) / nn, a.cross(b).dot(axis) / nn);
        let sin = sin0.simd_ge(F::ZERO).select(sin, -sin);
        let q_mid = lane_rotation(axis, cos * cos0 + sin * sin0, sin * cos0 - cos * sin0);
        let exact = hinge & c.abs().simd_le(F::splat(1.0 + 1e-4));
        let q_mid = Q::select(hinge, q_mid, Q::IDENTITY);
        // Start: swing the new end onto the goal.
        let e1 = self.m + q_mid.rotate(v) - self.s;
        let has_dir = goal.length_squared().simd_gt(F::ZERO) & goal.length().is_finite();
        let swing = Q::select(
            e1.length_squared().simd_gt(F::ZERO),
            lane_arc(e1, goal),
            Q::IDENTITY,
        );
        let q_start = Q::select(has_dir, swing.normalize(), Q::IDENTITY);
        (q_mid, q_start, exact & has_dir)
    }
}

/// A chain's joints (start `s`, mid `m`), its bones from the mid joint (`u` to the start, `v`
/// to the end) with their lengths, and the hinge axis (unit), in model space.
struct Chain {
    s: Vec3A,
    m: Vec3A,
    u: Vec3A,
    v: Vec3A,
    l1: f32,
    l2: f32,
    axis: Vec3A,
}

impl Chain {
    /// The mid and start turns (model space, about their joints) that put the end at
    /// `s + goal` (`d = |goal|`, within reach), with the hinge turned `pole_share` of the way
    /// towards the pole about the start–goal line, then by `twist` about it; and whether the
    /// hinge could make the distance exactly.
    fn turns(
        &self,
        goal: Vec3A,
        d: f32,
        pole: Option<Vec3>,
        pole_share: f32,
        twist: f32,
    ) -> (Quat, Quat, bool) {
        let (u, v, axis) = (self.u, self.v, self.axis);
        // Hinge: turn `v` about the axis so that |u − v'| = d, exactly, for any axis that is
        // not along a bone (law of cosines on the bones' parts `a`, `b` normal to the axis).
        // With θ0 the angle from `a` to `b` and θ the one wanted (on θ0's side), the turn is
        // θ − θ0, found from their cosines and sines. The hinge's reach is [√lo, √hi]; within
        // rounding of its ends the chain is straight or folded exactly (there sin θ grows like
        // the square root of the distance's error).
        let (ua, va) = (u.dot(axis), v.dot(axis));
        let (a, b) = (u - axis * ua, v - axis * va);
        let (an2, bn2) = (a.length_squared(), b.length_squared());
        let tiny = 1e-12 * (u.length_squared() + v.length_squared()).max(f32::MIN_POSITIVE);
        let (q_mid, exact) = if an2 > tiny && bn2 > tiny {
            let nn = (an2 * bn2).sqrt();
            let d2 = d * d;
            let c = (0.5 * (self.l1 * self.l1 + self.l2 * self.l2 - d2) - ua * va) / nn;
            let k = (ua - va) * (ua - va);
            let (lo, hi) = (an2 + bn2 - 2.0 * nn + k, an2 + bn2 + 2.0 * nn + k);
            let slack = 8.0 * f32::EPSILON * hi;
            let (cos, sin) = if d2 >= hi - slack {
                (-1.0, 0.0)
            } else if d2 <= lo + slack {
                (1.0, 0.0)
            } else {
                let c = c.clamp(-1.0, 1.0);
                (c, ((1.0 - c) * (1.0 + c)).sqrt())
            };
            let (cos0, sin0) = (a.dot(b) / nn, a.cross(b).dot(axis) / nn);
            let sin = if sin0 >= 0.0 { sin } else { -sin };
            (
                rotation_from_cos_sin(axis, cos * cos0 + sin * sin0, sin * cos0 - cos * sin0),
                c.abs() <= 1.0 + 1e-4,
            )
        } else {
            (Quat::IDENTITY, false)
        };
        // Start: swing the new end onto the goal, then the pole, then the twist.
        let e1 = self.m + q_mid * v - self.s;
        let Some(dir) = goal.try_normalize() else {
            return (q_mid, Quat::IDENTITY, false);
        };
        let q_swing = if e1.length_squared() > 0.0 {
            arc(e1, goal)
        } else {
            Quat::IDENTITY
        };
        let q_pole = match pole {
            Some(pole) => turn_about(dir, q_swing * (self.m - self.s), pole.into())
                .map_or(Quat::IDENTITY, |q| weighted(q, pole_share)),
            None => Quat::IDENTITY,
        };
        let q_start = if twist == 0.0 {
            q_pole * q_swing
        } else {
            Quat::from_axis_angle(dir.into(), twist) * q_pole * q_swing
        };
        (q_mid, q_start.normalize(), exact)
    }
}

/// An entity's two-bone IK target (the component [`TwoBoneIkStage`] reads).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TwoBoneIk {
    /// The start joint (rig bone index).
    pub start: usize,
    /// The hinge joint.
    pub mid: usize,
    /// The end joint.
    pub end: usize,
    /// The target of the end joint.
    pub target: Vec3,
    /// The space `target` is in.
    pub space: TargetSpace,
    /// The direction the hinge points towards, in model space.
    pub pole_vector: Option<Vec3>,
    /// The hinge axis, in the mid joint's local space.
    pub mid_axis: Option<Vec3>,
    /// 0 leaves the pose as it is, 1 reaches.
    pub weight: f32,
    /// Where softening starts, as a fraction of the chain's length (1: none).
    pub soften: f32,
    /// Turn about the start–target line, radians.
    pub twist_angle: f32,
}

impl TwoBoneIk {
    /// A chain reaching for a model-space target at full weight, without softening, pole or
    /// twist.
    pub fn new(start: usize, mid: usize, end: usize, target: Vec3) -> Self {
        Self {
            start,
            mid,
            end,
            target,
            space: TargetSpace::Model,
            pole_vector: None,
            mid_axis: None,
            weight: 1.0,
            soften: 1.0,
            twist_angle: 0.0,
        }
    }

    fn params(&self, target: Vec3) -> TwoBoneParams {
        TwoBoneParams {
            start: self.start,
            mid: self.mid,
            end: self.end,
            target,
            pole_vector: self.pole_vector,
            mid_axis: self.mid_axis,
            weight: self.weight,
            soften: self.soften,
            twist_angle: self.twist_angle,
        }
    }
}

/// Runs [`TwoBoneIkJob`] on every entity with a [`TwoBoneIk`].
#[derive(Clone, Copy, Debug, Default)]
pub struct TwoBoneIkStage;

impl PoseStage for TwoBoneIkStage {
    type Input = TwoBoneIk;

    fn name(&self) -> &str {
        "two-bone IK"
    }

    fn check(&self, rig: &Rig, input: &TwoBoneIk) -> Result<(), StageError> {
        check_params(rig.parent_indices(), &input.params(input.target))?;
        super::check_rest_length(rig, input.start, input.mid)?;
        super::check_rest_length(rig, input.mid, input.end)
    }

    fn apply(&self, input: &TwoBoneIk, pose: &mut StagePose<'_>) {
        let target = to_model(input.space, input.target, pose.transform);
        solve(
            Subtrees::Baked(pose.rig.subtree_ends()),
            pose.model,
            &input.params(target),
        );
    }
}
