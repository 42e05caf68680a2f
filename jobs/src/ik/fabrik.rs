//! FABRIK (Aristidou and Lasenby's forward and backward reaching IK) for chains of any length.
//!
//! The joints' positions are moved, backward from the tip set on the target and forward from
//! the root set back in place, keeping each segment's length, until the tip is within the
//! tolerance or the iteration cap is met; then each joint, base to tip, turns its subtree so its
//! segment points where the solve put it. A target out of reach straightens the chain towards
//! it in one pass. A free root (`fixed_root: false`) moves the whole chain instead, in one
//! backward pass. Optional bend limits keep the angle between consecutive segments.

use super::{
    ChainMover, Motion, Subtrees, TargetSpace, arc, check_bone, check_descends, check_finite,
    check_hierarchy, check_unit_range, to_model, weighted,
};
use crate::asset::Rig;
use crate::pose_stage::{PoseStage, StageError, StagePose};
use glam::{Affine3A, Quat, Vec3, Vec3A};
use std::sync::Arc;

/// The most joints a chain may have (the solver's positions live on the stack).
pub const MAX_FABRIK_JOINTS: usize = 64;

/// A bend limit at an interior joint: the largest angle between the segment into it and the
/// segment out of it, radians in `[0, π]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JointLimit {
    /// The largest bend, radians.
    pub max_bend: f32,
}

/// FABRIK over model matrices.
#[derive(Debug)]
pub struct FabrikJob<'a> {
    /// Parent of each bone (parent-first, depth-first).
    pub parents: &'a [u32],
    /// Model matrices: the chain's joints and their descendants are updated.
    pub model: &'a mut [Affine3A],
    /// The joints, base to tip, each descending from the previous (2 to [`MAX_FABRIK_JOINTS`]).
    pub chain: &'a [usize],
    /// The tip's target, in model space.
    pub target: Vec3,
    /// Stop when the tip is this close to the target (model units, > 0).
    pub tolerance: f32,
    /// Stop after this many backward-forward passes.
    pub max_iterations: u32,
    /// Whether the base joint stays where it is (else the chain moves to reach).
    pub fixed_root: bool,
    /// One limit per interior joint (`chain.len() − 2` of them), or none.
    pub limits: Option<&'a [JointLimit]>,
    /// 0 leaves the pose, 1 applies the solve.
    pub weight: f32,
}

/// What a FABRIK solve did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FabrikResult {
    /// Backward-forward passes run.
    pub iterations: u32,
    /// Distance from the solved tip to the target (full weight).
    pub error: f32,
    /// Whether `error <= tolerance`.
    pub reached: bool,
}

/// A FABRIK solve's inputs beyond the matrices.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FabrikParams<'a> {
    pub chain: &'a [usize],
    pub target: Vec3,
    pub tolerance: f32,
    pub max_iterations: u32,
    pub fixed_root: bool,
    pub limits: Option<&'a [JointLimit]>,
    pub weight: f32,
}

impl FabrikJob<'_> {
    fn params(&self) -> FabrikParams<'_> {
        FabrikParams {
            chain: self.chain,
            target: self.target,
            tolerance: self.tolerance,
            max_iterations: self.max_iterations,
            fixed_root: self.fixed_root,
            limits: self.limits,
            weight: self.weight,
        }
    }

    /// Checks the hierarchy, the chain (length, each joint descending from the previous,
    /// segments of non-zero length in the given matrices), the limits and the parameters.
    ///
    /// # Errors
    /// [`StageError`] naming the bone or the input.
    pub fn validate(&self) -> Result<(), StageError> {
        check_hierarchy(self.parents, self.model, self.chain)?;
        check_params(self.parents, &self.params())?;
        for pair in self.chain.windows(2) {
            let (a, b) = (self.model[pair[0]], self.model[pair[1]]);
            if !(a.is_finite() && b.is_finite()) {
                return Err(StageError::NotFinite {
                    what: "a chain joint's model matrix",
                });
            }
            if (b.translation - a.translation).length_squared() <= 1e-12 {
                return Err(StageError::ZeroLengthBone { bone: pair[0] });
            }
        }
        Ok(())
    }

    /// Solves and updates the chain and its descendants (nothing at weight 0).
    pub fn run(&mut self) -> FabrikResult {
        let params = FabrikParams {
            chain: self.chain,
            target: self.target,
            tolerance: self.tolerance,
            max_iterations: self.max_iterations,
            fixed_root: self.fixed_root,
            limits: self.limits,
            weight: self.weight,
        };
        solve(Subtrees::Parents(self.parents), self.model, &params)
    }
}

pub(crate) fn check_params(parents: &[u32], p: &FabrikParams<'_>) -> Result<(), StageError> {
    let n = p.chain.len();
    if !(2..=MAX_FABRIK_JOINTS).contains(&n) {
        return Err(StageError::BadHierarchy {
            reason: format!("a FABRIK chain has {n} joints, not 2 to {MAX_FABRIK_JOINTS}"),
        });
    }
    check_bone(p.chain[0], parents.len())?;
    for pair in p.chain.windows(2) {
        check_descends(parents, pair[1], pair[0])?;
    }
    check_finite("target", p.target)?;
    if !(p.tolerance.is_finite() && p.tolerance > 0.0) {
        return Err(StageError::OutOfRange {
            what: "tolerance",
            value: p.tolerance,
            range: "(0, ∞)",
        });
    }
    check_unit_range("weight", p.weight)?;
    if let Some(limits) = p.limits {
        if limits.len() != n - 2 {
            return Err(StageError::BadHierarchy {
                reason: format!(
                    "{} joint limits for a chain of {n} joints (one per interior joint: {})",
                    limits.len(),
                    n - 2
                ),
            });
        }
        for l in limits {
            if !(0.0..=std::f32::consts::PI).contains(&l.max_bend) {
                return Err(StageError::OutOfRange {
                    what: "joint limit",
                    value: l.max_bend,
                    range: "[0, π]",
                });
            }
        }
    }
    Ok(())
}

/// `dir` (unit) turned towards `prev` (unit) until their angle is at most `max`.
fn limit_bend(prev: Vec3A, dir: Vec3A, max: f32) -> Vec3A {
    let angle = prev.dot(dir).clamp(-1.0, 1.0).acos();
    if angle <= max {
        return dir;
    }
    let normal = prev.cross(dir);
    let normal = if normal.length_squared() > 1e-12 {
        normal.normalize()
    } else {
        Vec3A::from(Vec3::from(prev).any_orthonormal_vector())
    };
    Quat::from_axis_angle(normal.into(), max) * prev
}

/// The solve; `p` checked.
pub(crate) fn solve(
    tree: Subtrees<'_>,
    model: &mut [Affine3A],
    p: &FabrikParams<'_>,
) -> FabrikResult {
    let n = p.chain.len().min(MAX_FABRIK_JOINTS);
    let chain = &p.chain[..n];
    let target = Vec3A::from(p.target);
    let mut pos = [Vec3A::ZERO; MAX_FABRIK_JOINTS];
    let mut len = [0.0f32; MAX_FABRIK_JOINTS];
    for (i, &b) in chain.iter().enumerate() {
        match model.get(b) {
            Some(m) => pos[i] = m.translation,
            None => {
                return FabrikResult {
                    iterations: 0,
                    error: f32::INFINITY,
                    reached: false,
                };
            }
        }
    }
    // The original segment directions, for segments a pass collapses.
    let mut orig = [Vec3A::ZERO; MAX_FABRIK_JOINTS];
    for i in 0..n - 1 {
        let d = pos[i + 1] - pos[i];
        len[i] = d.length();
        orig[i] = d.normalize_or_zero();
    }
    let root = pos[0];
    let total: f32 = len[..n - 1].iter().sum();
    let toward = |from: Vec3A, to: Vec3A, i: usize| (to - from).try_normalize().unwrap_or(orig[i]);
    // Forward pass from the root: each segment points at the next joint's current position,
    // bent no more than its limit allows.
    let forward = |pos: &mut [Vec3A; MAX_FABRIK_JOINTS], aim_at_target: bool| {
        for i in 0..n - 1 {
            let goal = if aim_at_target { target } else { pos[i + 1] };
            let mut dir = toward(pos[i], goal, i);
            if let (Some(limits), true) = (p.limits, i > 0) {
                let prev = toward(pos[i - 1], pos[i], i - 1);
                dir = limit_bend(prev, dir, limits[i - 1].max_bend);
            }
            pos[i + 1] = pos[i] + dir * len[i];
        }
    };
    let mut iterations = 0;
    if p.fixed_root && (target - root).length() >= total {
        forward(&mut pos, true);
        iterations = 1;
    } else {
        while iterations < p.max_iterations && (pos[n - 1] - target).length() > p.tolerance {
            pos[n - 1] = target;
            for i in (0..n - 1).rev() {
                let dir = (pos[i] - pos[i + 1]).try_normalize().unwrap_or(-orig[i]);
                pos[i] = pos[i + 1] + dir * len[i];
            }
            iterations += 1;
            if !p.fixed_root {
                break;
            }
            pos[0] = root;
            forward(&mut pos, false);
        }
    }
    let error = (pos[n - 1] - target).length();
    let result = FabrikResult {
        iterations,
        error,
        reached: error <= p.tolerance,
    };
    if p.weight <= 0.0 {
        return result;
    }
    // Apply: move the root (free roots), then turn each joint's segment onto the solve's, each
    // joint found where the motions before it put it; each bone moves once.
    let mut mover = ChainMover::new(tree);
    let shift = (pos[0] - root) * p.weight;
    if shift != Vec3A::ZERO {
        mover.push(model, chain[0], &Motion::shift(shift));
    }
    for i in 0..n - 1 {
        let (Some(a), Some(b)) = (model.get(chain[i]), model.get(chain[i + 1])) else {
            continue;
        };
        let (a, b) = (mover.point(a.translation), mover.point(b.translation));
        let want = pos[i + 1] - pos[i];
        if (b - a).length_squared() <= 1e-12 || want.length_squared() <= 1e-12 {
            continue;
        }
        let q = weighted(arc(b - a, want), p.weight);
        mover.push(model, chain[i], &Motion::turn(q, a));
    }
    mover.finish(model);
    result
}

/// An entity's FABRIK chain and target (the component [`FabrikStage`] reads).
#[derive(Clone, Debug, PartialEq)]
pub struct FabrikChain {
    /// The joints, base to tip.
    pub chain: Arc<[usize]>,
    /// The tip's target.
    pub target: Vec3,
    /// The space `target` is in.
    pub space: TargetSpace,
    /// Stop when the tip is this close (model units).
    pub tolerance: f32,
    /// Stop after this many passes.
    pub max_iterations: u32,
    /// Whether the base joint stays in place.
    pub fixed_root: bool,
    /// One bend limit per interior joint, or none.
    pub limits: Option<Arc<[JointLimit]>>,
    /// 0 leaves the pose, 1 applies the solve.
    pub weight: f32,
}

impl FabrikChain {
    fn params(&self, target: Vec3) -> FabrikParams<'_> {
        FabrikParams {
            chain: &self.chain,
            target,
            tolerance: self.tolerance,
            max_iterations: self.max_iterations,
            fixed_root: self.fixed_root,
            limits: self.limits.as_deref(),
            weight: self.weight,
        }
    }
}

/// Runs FABRIK on every entity with a [`FabrikChain`].
#[derive(Clone, Copy, Debug, Default)]
pub struct FabrikStage;

impl PoseStage for FabrikStage {
    type Input = FabrikChain;

    fn name(&self) -> &str {
        "FABRIK"
    }

    fn check(&self, rig: &Rig, input: &FabrikChain) -> Result<(), StageError> {
        check_params(rig.parent_indices(), &input.params(input.target))?;
        for pair in input.chain.windows(2) {
            super::check_rest_length(rig, pair[0], pair[1])?;
        }
        Ok(())
    }

    fn apply(&self, input: &FabrikChain, pose: &mut StagePose<'_>) {
        let target = to_model(input.space, input.target, pose.transform);
        solve(
            Subtrees::Baked(pose.rig.subtree_ends()),
            pose.model,
            &input.params(target),
        );
    }
}
