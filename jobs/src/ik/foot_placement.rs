//! Foot placement on uneven ground: two-bone IK per leg over a ground the engine supplies.
//!
//! The animation is taken as authored on flat ground at the entity's height (world y of its
//! transform). For each leg, the ground under the animated ankle (a [`GroundQuery`]: height
//! and normal at x, z) gives the ankle's target: the point of the ground below it, plus the
//! normal times the ankle's animated height above the flat ground, so a planted foot's sole
//! lies on the ground and a swinging foot keeps its clearance. The pelvis moves vertically by
//! the lower leg's need (down to a dip, up onto a rise), and further down where a leg still
//! cannot reach its target; each leg then solves two-bone IK onto its target, and each foot
//! turns about its ankle to keep its animated orientation relative to the ground, tilted by
//! the slope (at most `max_tilt`). The weight blends all of it in and out.

use super::lanes::{self, F, GroupModels, LaneMotion, LaneTransform, M3, Q, V3, gather};
use super::two_bone::{
    self, ChainMotion, ChainRanges, TwoBoneParams, check_params as check_two_bone,
};
use super::{
    Motion, Subtrees, arc, check_bone, check_direction, check_hierarchy, check_rest_length,
    check_unit_range, translate_subtree, weighted,
};
use crate::asset::{Rig, Transform};
use crate::math::soa::LANES;
use crate::pose_stage::{PoseStage, STAGE_GROUP, StageError, StagePose};
use glam::{Affine3A, Mat3A, Quat, Vec3, Vec3A};
use std::fmt;
use std::ops::Range;

/// The ground's height and normal under a point (world space, y up).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroundSample {
    /// World y of the ground.
    pub height: f32,
    /// The ground's normal (unit, y > 0).
    pub normal: Vec3,
}

/// The engine's ground: what is under world (x, z). Called from worker threads, once per leg
/// and entity each frame; it must be deterministic for the palettes to be.
pub trait GroundQuery: Send + Sync {
    /// The ground under world (x, z).
    fn ground(&self, x: f32, z: f32) -> GroundSample;

    /// The ground under [`STAGE_GROUP`] points at once (the ankles of a group of entities, which
    /// [`FootPlacementStage`] asks for together). The default asks [`GroundQuery::ground`] per
    /// point; a ground that answers lane-parallel overrides it. Each point's answer must not
    /// depend on the others (nor differ from `ground`'s by more than rounding).
    fn ground_batch(
        &self,
        x: &[f32; STAGE_GROUP],
        z: &[f32; STAGE_GROUP],
    ) -> [GroundSample; STAGE_GROUP] {
        std::array::from_fn(|k| self.ground(x[k], z[k]))
    }
}

/// One leg: three joints and the ankle's height above the sole.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Leg {
    /// The hip joint (thigh bone).
    pub hip: usize,
    /// The knee (shin bone), a descendant of the hip.
    pub knee: usize,
    /// The ankle (foot bone), a descendant of the knee.
    pub ankle: usize,
    /// The ankle's height above the sole, model units (the ankle's height when standing).
    pub ankle_height: f32,
    /// The knee's hinge axis in its local space (`None`: the current bend plane's normal).
    pub knee_axis: Option<Vec3>,
}

/// An entity's foot placement (the component [`FootPlacementStage`] reads).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FootPlacement {
    /// The pelvis, whose subtree holds both legs and the upper body.
    pub pelvis: usize,
    /// The legs.
    pub legs: [Leg; 2],
    /// 0 leaves the pose, 1 places the feet.
    pub weight: f32,
    /// The largest foot tilt, radians in `[0, π/2]`.
    pub max_tilt: f32,
}

/// What a foot placement did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FootPlacementResult {
    /// The pelvis's vertical move, world units (weighted).
    pub pelvis_offset: f32,
    /// Whether each leg's full-weight solve reaches its target.
    pub reached: [bool; 2],
}

/// Foot placement over model matrices.
pub struct FootPlacementJob<'a> {
    /// Parent of each bone (parent-first, depth-first).
    pub parents: &'a [u32],
    /// Model matrices: the pelvis's subtree is updated.
    pub model: &'a mut [Affine3A],
    /// The entity's world transform (`world = transform · model`).
    pub transform: Transform,
    /// The legs, pelvis and weight.
    pub placement: &'a FootPlacement,
    /// The ground.
    pub ground: &'a dyn GroundQuery,
}

impl fmt::Debug for FootPlacementJob<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FootPlacementJob")
            .field("bones", &self.parents.len())
            .field("transform", &self.transform)
            .field("placement", self.placement)
            .finish_non_exhaustive()
    }
}

impl FootPlacementJob<'_> {
    /// Checks the hierarchy, each leg's chain under the pelvis, the parameters and a finite,
    /// invertible entity transform.
    ///
    /// # Errors
    /// [`StageError`] naming the bone or the input.
    pub fn validate(&self) -> Result<(), StageError> {
        let p = self.placement;
        check_hierarchy(
            self.parents,
            self.model,
            &[
                p.pelvis,
                p.legs[0].hip,
                p.legs[0].knee,
                p.legs[1].hip,
                p.legs[1].knee,
            ],
        )?;
        check_placement(self.parents, p)?;
        check_transform(&self.transform)?;
        for leg in &p.legs {
            for (a, b) in [(leg.hip, leg.knee), (leg.knee, leg.ankle)] {
                let (ma, mb) = (self.model[a], self.model[b]);
                if !(ma.is_finite() && mb.is_finite()) {
                    return Err(StageError::NotFinite {
                        what: "a leg joint's model matrix",
                    });
                }
                if (mb.translation - ma.translation).length_squared() <= 1e-12 {
                    return Err(StageError::ZeroLengthBone { bone: a });
                }
            }
        }
        Ok(())
    }

    /// Places the feet (nothing at weight 0).
    pub fn run(&mut self) -> FootPlacementResult {
        solve(
            Subtrees::Parents(self.parents),
            self.model,
            &self.transform,
            self.placement,
            self.ground,
        )
    }
}

fn check_transform(t: &Transform) -> Result<(), StageError> {
    if !t.is_valid() {
        return Err(StageError::NotFinite {
            what: "the entity transform",
        });
    }
    if t.scale.abs().min_element() <= 1e-6 {
        return Err(StageError::ZeroDirection {
            what: "the entity transform's scale",
        });
    }
    Ok(())
}

fn leg_params(leg: &Leg, target: Vec3, weight: f32) -> TwoBoneParams {
    TwoBoneParams {
        start: leg.hip,
        mid: leg.knee,
        end: leg.ankle,
        target,
        pole_vector: None,
        mid_axis: leg.knee_axis,
        weight,
        soften: 1.0,
        twist_angle: 0.0,
    }
}

/// The bones (each leg a chain under the pelvis), then the values ([`check_values`]). A knee
/// axis is checked before the leg's chain, so that a bad one is named as the knee axis.
fn check_placement(parents: &[u32], p: &FootPlacement) -> Result<(), StageError> {
    check_bone(p.pelvis, parents.len())?;
    for leg in &p.legs {
        super::check_descends(parents, leg.hip, p.pelvis)?;
        if let Some(axis) = leg.knee_axis {
            check_direction("knee axis", axis)?;
        }
        check_two_bone(parents, &leg_params(leg, Vec3::ZERO, p.weight))?;
    }
    check_values(p)
}

/// The solve; inputs checked.
pub(crate) fn solve(
    tree: Subtrees<'_>,
    model: &mut [Affine3A],
    transform: &Transform,
    p: &FootPlacement,
    ground: &dyn GroundQuery,
) -> FootPlacementResult {
    let mut result = FootPlacementResult {
        pelvis_offset: 0.0,
        reached: [false; 2],
    };
    if p.weight <= 0.0 {
        return result;
    }
    let world = transform.to_affine();
    let to_model = world.inverse();
    let base = transform.translation.y;
    // Each leg's joints in world space, before anything moves.
    let mut joints = [[Vec3A::ZERO; 3]; 2];
    for (k, leg) in p.legs.iter().enumerate() {
        for (j, &b) in [leg.hip, leg.knee, leg.ankle].iter().enumerate() {
            match model.get(b) {
                Some(m) => joints[k][j] = world.transform_point3a(m.translation),
                None => return result,
            }
        }
    }
    // Each ankle's target and the ground's normal there (world space).
    let mut targets = [(Vec3A::ZERO, Vec3A::Y); 2];
    let mut reach = [0.0f32; 2];
    for (k, [hip, knee, ankle]) in joints.iter().enumerate() {
        let g = ground.ground(ankle.x, ankle.z);
        let normal = match Vec3A::from(g.normal).try_normalize() {
            Some(n) if n.y > 0.0 && g.height.is_finite() => n,
            // A ground that says nothing usable here: the leg keeps its pose.
            _ => return result,
        };
        let clearance = ankle.y - base;
        targets[k] = (
            Vec3A::new(ankle.x, g.height, ankle.z) + normal * clearance,
            normal,
        );
        reach[k] = ((*knee - *hip).length() + (*ankle - *knee).length()) * 0.9999;
    }
    // The pelvis: the lower leg's need, then lower where a leg still cannot reach.
    let need = |k: usize| targets[k].0.y - joints[k][2].y;
    let mut offset = need(0).min(need(1));
    for (k, [hip, ..]) in joints.iter().enumerate() {
        let q = targets[k].0 - (*hip + Vec3A::Y * offset);
        let q2 = q.length_squared();
        if q2 > reach[k] * reach[k] {
            let disc = q.y * q.y - (q2 - reach[k] * reach[k]);
            let lower = if disc >= 0.0 {
                -q.y - disc.sqrt()
            } else {
                -q.y
            };
            if lower > 0.0 {
                offset -= lower;
            }
        }
    }
    let offset = offset * p.weight;
    result.pelvis_offset = offset;
    let lift = to_model.transform_vector3a(Vec3A::Y * offset);
    translate_subtree(tree, model, p.pelvis, lift);
    // Each leg onto its target, then its foot onto the ground's slope.
    let up = to_model.transform_vector3a(Vec3A::Y).normalize();
    let cos_max_tilt = p.max_tilt.cos();
    for (k, leg) in p.legs.iter().enumerate() {
        let (target, normal) = targets[k];
        let params = leg_params(leg, to_model.transform_point3a(target).into(), p.weight);
        let turns = two_bone::turns(model, &params);
        result.reached[k] = turns.reached;
        let Some(ankle) = model.get(leg.ankle).map(|m| m.translation) else {
            continue;
        };
        let normal = to_model.transform_vector3a(normal).normalize();
        let mut tilt = arc(up, normal);
        if up.dot(normal) < cos_max_tilt {
            let (axis, _) = tilt.to_axis_angle();
            tilt = Quat::from_axis_angle(axis, p.max_tilt);
        }
        // The foot keeps its animated orientation, tilted by the slope, where the leg puts the
        // ankle.
        let tilt = weighted(tilt, p.weight);
        match ChainMotion::new(model, &params, &turns) {
            Some(leg_motion) => {
                let foot = Motion::turn_and_move(tilt, ankle, leg_motion.mid_point(ankle));
                leg_motion.move_bones(tree, model, &params, Some(&foot));
            }
            None => Motion::turn(tilt, ankle).move_subtree(tree, model, leg.ankle),
        }
    }
    result
}

/// Runs [`FootPlacementJob`] on every entity with a [`FootPlacement`], over the engine's
/// ground.
pub struct FootPlacementStage<G> {
    ground: G,
}

impl<G: GroundQuery> FootPlacementStage<G> {
    /// The stage over `ground`.
    pub fn new(ground: G) -> Self {
        Self { ground }
    }
}

impl<G> fmt::Debug for FootPlacementStage<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FootPlacementStage").finish_non_exhaustive()
    }
}

impl<G: GroundQuery + 'static> PoseStage for FootPlacementStage<G> {
    type Input = FootPlacement;

    fn name(&self) -> &str {
        "foot placement"
    }

    fn check(&self, rig: &Rig, input: &FootPlacement) -> Result<(), StageError> {
        check_placement(rig.parent_indices(), input)?;
        for leg in &input.legs {
            check_rest_length(rig, leg.hip, leg.knee)?;
            check_rest_length(rig, leg.knee, leg.ankle)?;
        }
        Ok(())
    }

    fn check_like(
        &self,
        input: &FootPlacement,
        checked: &FootPlacement,
    ) -> Option<Result<(), StageError>> {
        let bones = |p: &FootPlacement| {
            let [a, b] = p.legs;
            [p.pelvis, a.hip, a.knee, a.ankle, b.hip, b.knee, b.ankle]
        };
        (bones(input) == bones(checked)).then(|| check_values(input))
    }

    fn apply(&self, input: &FootPlacement, pose: &mut StagePose<'_>) {
        place_lanes(
            std::slice::from_ref(input),
            std::slice::from_mut(pose),
            &self.ground,
        );
    }

    fn apply_batch(&self, inputs: &[FootPlacement], poses: &mut [StagePose<'_>]) {
        for (inputs, poses) in inputs.chunks(LANES).zip(poses.chunks_mut(LANES)) {
            place_lanes(inputs, poses, &self.ground);
        }
    }
}

/// What [`check_placement`] checks beyond the rig and the bones: knee axes, weight, ankle
/// heights and the tilt bound (alone for an entity whose bones and rig passed it).
fn check_values(p: &FootPlacement) -> Result<(), StageError> {
    for leg in &p.legs {
        if let Some(axis) = leg.knee_axis {
            check_direction("knee axis", axis)?;
        }
        check_unit_range("weight", p.weight)?;
        if !(leg.ankle_height.is_finite() && leg.ankle_height >= 0.0) {
            return Err(StageError::OutOfRange {
                what: "ankle height",
                value: leg.ankle_height,
                range: "[0, ∞)",
            });
        }
    }
    check_unit_range("weight", p.weight)?;
    if !(0.0..=std::f32::consts::FRAC_PI_2).contains(&p.max_tilt) {
        return Err(StageError::OutOfRange {
            what: "max tilt",
            value: p.max_tilt,
            range: "[0, π/2]",
        });
    }
    Ok(())
}

/// Whether one leg lies inside the other's subtree (then moving one moves the other, and the
/// legs are solved one after the other, by [`solve`]).
fn legs_nest(tree: Subtrees<'_>, p: &FootPlacement) -> bool {
    let [a, b] = [p.legs[0].hip, p.legs[1].hip];
    (a..tree.end(a)).contains(&b) || (b..tree.end(b)).contains(&a)
}

/// One leg of each lane's entity, world space: the ankle's target and the ground's normal
/// there, the leg's reach, its hip and ankle before anything moves, and where the ground's
/// answer is usable.
#[derive(Clone, Copy)]
struct LegLanes {
    target: V3,
    normal: V3,
    reach: F,
    hip: V3,
    ankle: V3,
    usable: F,
}

/// The bones an entity's legs move, by the motion that moves them: each leg's chain
/// ([`ChainRanges`]) and the foot's subtree (which turns alone where the leg's solve moves
/// nothing).
#[derive(Clone, Debug)]
struct LegBones([(ChainRanges, Range<usize>); 2]);

impl LegBones {
    /// The bones that legs `[hip, knee, ankle]` (left, then right) move.
    fn new(tree: Subtrees<'_>, bones: [usize; 6]) -> Self {
        Self([0, 3].map(|at| {
            let [hip, knee, ankle] = [bones[at], bones[at + 1], bones[at + 2]];
            (
                ChainRanges::new(tree, hip, knee, ankle),
                ankle..tree.end(ankle),
            )
        }))
    }
}

/// [`solve`] for up to [`LANES`] entities, one per lane (inputs checked): the same steps, each
/// lane deciding its branches; the bones then move across the lanes ([`GroupModels`]) where
/// the entities share the rig and the leg bones, else per entity with its lane's motions (the
/// same bits). An entity whose legs nest is solved alone by [`solve`]. Returns what each
/// entity's solve did.
fn place_lanes<G: GroundQuery + 'static>(
    inputs: &[FootPlacement],
    poses: &mut [StagePose<'_>],
    ground: &G,
) -> [FootPlacementResult; LANES] {
    let mut results = [FootPlacementResult {
        pelvis_offset: 0.0,
        reached: [false; 2],
    }; LANES];
    let n = inputs.len().min(poses.len()).min(LANES);
    // Per entity: whether the lanes solve it, its transforms, the legs' joints (model space:
    // hip, knee, ankle of each leg) and knee frames.
    let mut active = [false; LANES];
    let mut transforms = [Transform::IDENTITY; LANES];
    let mut joints = [[Vec3A::ZERO; 6]; LANES];
    let mut knees = [[Mat3A::IDENTITY; 2]; LANES];
    // Per entity: weight, tilt limit, each knee's axis (zero without one).
    let (mut weights, mut max_tilts) = ([0.0f32; LANES], [0.0f32; LANES]);
    let mut knee_axes = [[Vec3A::ZERO; LANES]; 2];
    // The bones each leg moves, when every entity the lanes solve moves the same ones (then
    // the bones move across the lanes, else per entity).
    let mut shared: Option<(&Rig, [usize; 6])> = None;
    let mut uniform = true;
    for k in 0..n {
        let (p, pose) = (&inputs[k], &mut poses[k]);
        let transform = pose.transform.copied().unwrap_or_default();
        if p.weight <= 0.0 || check_transform(&transform).is_err() {
            continue;
        }
        let tree = Subtrees::Baked(pose.rig.subtree_ends());
        if legs_nest(tree, p) {
            results[k] = solve(tree, pose.model, &transform, p, ground);
            continue;
        }
        let [a, b] = p.legs;
        let bones = [a.hip, a.knee, a.ankle, b.hip, b.knee, b.ankle];
        let model = &*pose.model;
        if bones.iter().any(|&bone| bone >= model.len()) {
            continue;
        }
        joints[k] = bones.map(|bone| model[bone].translation);
        knees[k] = [model[a.knee].matrix3, model[b.knee].matrix3];
        transforms[k] = transform;
        (weights[k], max_tilts[k]) = (p.weight, p.max_tilt);
        for (axes, leg) in knee_axes.iter_mut().zip(&p.legs) {
            axes[k] = leg.knee_axis.map_or(Vec3A::ZERO, Vec3A::from);
        }
        // The same rig and legs move the same bones.
        match shared {
            Some((rig, first)) => uniform &= std::ptr::eq(rig, pose.rig) && first == bones,
            None => shared = Some((pose.rig, bones)),
        }
        active[k] = true;
    }
    let shared = (shared.filter(|_| uniform))
        .map(|(rig, bones)| LegBones::new(Subtrees::Baked(rig.subtree_ends()), bones));
    if !active.iter().any(|&a| a) {
        return results;
    }
    let weight = F::from(weights);
    let world = LaneTransform::gather(|k| transforms[k]);
    let base = world.translation().y;
    let model_joint = |j: usize| V3::gather(|k| joints[k][j]);
    let world_joint = |j: usize| world.world_point(model_joint(j));

    // Each ankle's target and the ground's normal there (world space).
    let active = gather(|k| if active[k] { 1.0 } else { 0.0 }).simd_gt(F::ZERO);
    let legs = [0, 1].map(|leg| {
        let (hip, knee, ankle) = (
            world_joint(3 * leg),
            world_joint(3 * leg + 1),
            world_joint(3 * leg + 2),
        );
        let g = ground.ground_batch(&ankle.x.to_array(), &ankle.z.to_array());
        let height = gather(|k| g[k].height);
        let normal = V3::gather(|k| Vec3A::from(g[k].normal));
        let rcp = F::ONE / normal.length();
        let normal = normal * rcp;
        // A ground that says nothing usable here: the entity keeps its pose.
        let usable =
            rcp.is_finite() & rcp.simd_gt(F::ZERO) & normal.y.simd_gt(F::ZERO) & height.is_finite();
        let clearance = ankle.y - base;
        let target = V3 {
            x: ankle.x,
            y: height,
            z: ankle.z,
        } + normal * clearance;
        let reach = ((knee - hip).length() + (ankle - knee).length()) * F::splat(0.9999);
        LegLanes {
            target,
            normal,
            reach,
            hip,
            ankle,
            usable,
        }
    });
    let ok = active & legs[0].usable & legs[1].usable;
    // The pelvis: the lower leg's need, then lower where a leg still cannot reach.
    let need = |leg: &LegLanes| leg.target.y - leg.ankle.y;
    let mut offset = need(&legs[0]).min(need(&legs[1]));
    for &LegLanes {
        target, reach, hip, ..
    } in &legs
    {
        let q = target
            - V3 {
                y: hip.y + offset,
                ..hip
            };
        let (q2, r2) = (q.length_squared(), reach * reach);
        let disc = q.y * q.y - (q2 - r2);
        let lower = disc.simd_ge(F::ZERO).select(-q.y - disc.sqrt(), -q.y);
        let lowers = q2.simd_gt(r2) & lower.simd_gt(F::ZERO);
        offset = lowers.select(offset - lower, offset);
    }
    let offset = offset * weight;
    let lift = world.model_vector(V3 {
        y: offset,
        ..V3::ZERO
    });
    let (lifts, offsets) = (lift.lanes(), offset.to_array());
    let ok_lanes = ok.to_bitmask();
    for (k, pose) in poses.iter_mut().enumerate().take(n) {
        if ok_lanes & (1 << k) != 0 {
            results[k].pelvis_offset = offsets[k];
            let tree = Subtrees::Baked(pose.rig.subtree_ends());
            translate_subtree(tree, pose.model, inputs[k].pelvis, lifts[k]);
        }
    }

    // Each leg onto its target, then its foot onto the ground's slope.
    let up = world.model_vector(V3::new(0.0, 1.0, 0.0));
    let up = up * (F::ONE / up.length());
    let max_tilt = F::from(max_tilts);
    let cos_max_tilt = max_tilt.cos();
    let (half_sin, half_cos) = (max_tilt * F::HALF).sin_cos();
    for (leg, &LegLanes { target, normal, .. }) in legs.iter().enumerate() {
        let chains = two_bone::LaneChains {
            s: model_joint(3 * leg) + lift,
            m: model_joint(3 * leg + 1) + lift,
            e: model_joint(3 * leg + 2) + lift,
            target: world.model_point(target),
            weight,
            mid_frame: M3::gather(|k| knees[k][leg]),
            mid_axis: V3::gather(|k| knee_axes[leg][k]),
            // A knee axis is a direction (checked), never zero.
            has_axis: V3::gather(|k| knee_axes[leg][k])
                .length_squared()
                .simd_gt(F::ZERO),
        };
        let turns = two_bone::lane_turns(&chains);
        let normal = world.model_vector(normal);
        let normal = normal * (F::ONE / normal.length());
        let mut tilt = lanes::arc(up, normal);
        let clamp = up.dot(normal).simd_lt(cos_max_tilt);
        if clamp.any() {
            let len = tilt.v.length();
            let axis = V3::select(
                len.simd_ge(F::splat(1e-8)),
                tilt.v * (F::ONE / len),
                V3::new(1.0, 0.0, 0.0),
            );
            let edge = Q {
                v: axis * half_sin,
                w: half_cos,
            };
            tilt = Q::select(clamp, edge, tilt);
        }
        // The foot keeps its animated orientation, tilted by the slope, where the leg puts the
        // ankle.
        let tilt = lanes::weighted(tilt, weight);
        let at_start = LaneMotion::turn(turns.start, chains.s);
        let at_mid = LaneMotion::turn(turns.mid, chains.m).then(&at_start);
        let foot = LaneMotion::turn_and_move(tilt, chains.e, at_mid.point(chains.e));
        // As the scalar solve: a solve that turns nothing (and reaches nothing) moves the foot
        // alone.
        let still = |q: Q| {
            q.v.x.simd_eq(F::ZERO)
                & q.v.y.simd_eq(F::ZERO)
                & q.v.z.simd_eq(F::ZERO)
                & q.w.simd_eq(F::ONE)
        };
        let moves = (!(still(turns.start) & still(turns.mid)) | turns.reached).to_bitmask();
        let reached = turns.reached.to_bitmask();
        for (k, result) in results.iter_mut().enumerate().take(n) {
            if ok_lanes & (1 << k) != 0 {
                result.reached[leg] = reached & (1 << k) != 0;
            }
        }
        if let Some(bones) = &shared {
            let mut group = GroupModels::new(&mut poses[..n]);
            let (moving, turning) = (ok_lanes & moves, ok_lanes & !moves);
            let (chain, foot_bones) = &bones.0[leg];
            for range in chain.start.clone() {
                group.move_bones(&at_start, moving, range);
            }
            for range in chain.mid.clone() {
                group.move_bones(&at_mid, moving, range);
            }
            group.move_bones(&foot, moving, chain.end.clone());
            let turn = LaneMotion::turn(tilt, chains.e);
            group.move_bones(&turn, turning, foot_bones.clone());
            continue;
        }
        let (starts, mids, feet) = (at_start.lanes(), at_mid.lanes(), foot.lanes());
        let feet_alone = (ok_lanes & !moves != 0).then(|| LaneMotion::turn(tilt, chains.e).lanes());
        for (k, pose) in poses.iter_mut().enumerate().take(n) {
            if ok_lanes & (1 << k) == 0 {
                continue;
            }
            let tree = Subtrees::Baked(pose.rig.subtree_ends());
            let p = &inputs[k].legs[leg];
            if moves & (1 << k) != 0 {
                let params = leg_params(p, Vec3::ZERO, inputs[k].weight);
                ChainMotion::from_parts(starts[k], mids[k]).move_bones(
                    tree,
                    pose.model,
                    &params,
                    Some(&feet[k]),
                );
            } else if let Some(feet_alone) = &feet_alone {
                feet_alone[k].move_subtree(tree, pose.model, p.ankle);
            }
        }
    }
    results
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests unwrap: a failure is the test failing
    use super::*;
    use crate::ik::test_rig::{Rng, biped, bits, bone, largest_gap, random_pose};
    use crate::pose_stage::LocalPose;
    use sinew_runtime::store::Entity;

    /// Rolling ground that says nothing (a NaN height) beyond x = 40.
    struct Hills;

    impl GroundQuery for Hills {
        fn ground(&self, x: f32, z: f32) -> GroundSample {
            let h = 0.1 * (0.8 * x).sin() + 0.07 * (0.6 * z).cos();
            let (dx, dz) = (0.08 * (0.8 * x).cos(), -0.042 * (0.6 * z).sin());
            GroundSample {
                height: if x > 40.0 { f32::NAN } else { h },
                normal: Vec3::new(-dx, 1.0, -dz).normalize(),
            }
        }
    }

    /// Positions and matrix columns the lanes may put off the scalar job's: 1e-5 of the leg's
    /// length (0.83).
    const TOLERANCE: f32 = 1e-5 * 0.83;

    /// The same for the thigh and shin: a leg stretched to its reach (the pelvis lowers until
    /// it is, at 0.9999 of the leg) bends so little that the knee moves by about the rounding
    /// of the target's distance over the sine of the bend (about 1/70 there). The feet, where
    /// the legs end, keep [`TOLERANCE`].
    const HINGE_TOLERANCE: f32 = 1e-4 * 0.83;

    /// One entity of a test group: its case decides what is unusual about it.
    struct Case {
        transform: Transform,
        placement: FootPlacement,
        local: Vec<Transform>,
        model: Vec<Affine3A>,
    }

    fn case(rig: &Rig, rng: &mut Rng, kind: usize) -> Case {
        let (local, mut model) = random_pose(rig, rng, 0.5);
        let leg = |s: &str, knee_axis| Leg {
            hip: bone(rig, &format!("thigh{s}")),
            knee: bone(rig, &format!("shin{s}")),
            ankle: bone(rig, &format!("foot{s}")),
            ankle_height: 0.07,
            knee_axis,
        };
        let axis = (kind != 4).then_some(Vec3::X);
        let mut placement = FootPlacement {
            pelvis: bone(rig, "pelvis"),
            legs: [leg("_l", axis), leg("_r", axis)],
            weight: 1.0,
            max_tilt: 0.5,
        };
        let mut at = Vec3::new(
            rng.range(-6.0, 6.0),
            rng.range(-0.2, 0.2),
            rng.range(-6.0, 6.0),
        );
        match kind {
            // Weight 0: nothing moves.
            1 => placement.weight = 0.0,
            // The ground says nothing here: nothing moves.
            2 => at.x = 45.0,
            // The left shin squashed onto the hip this frame: that leg's foot only turns.
            3 => {
                let hip = model[placement.legs[0].hip].translation;
                model[placement.legs[0].knee].translation = hip;
            }
            // (4: no knee axis, the bend plane's normal.) A steep clamp of the foot's tilt.
            5 => placement.max_tilt = 0.02,
            // Partly weighted.
            6 => placement.weight = 0.6,
            // Standing far above the ground: the pelvis lowers, the legs may not reach.
            7 => at.y += 1.2,
            _ => {}
        }
        let transform = Transform::new(at, Quat::from_rotation_y(rng.range(-3.0, 3.0)), Vec3::ONE);
        Case {
            transform,
            placement,
            local,
            model,
        }
    }

    /// The batched stage gives each entity what the scalar job gives it (to rounding), the
    /// same reached flags and pelvis offset, and feet where the spec puts them; full groups
    /// and partial ones, every unusual case next to ordinary ones, groups whose entities all
    /// move the same bones and groups mixing others in; and each entity the same bits alone as
    /// in its group.
    #[test]
    fn the_lanes_agree_with_the_job() {
        let rig = biped();
        let mut rng = Rng::new(11);
        let (mut worst, mut worst_miss, mut reached_legs) = (0.0f32, 0.0f32, 0);
        for round in 0..60 {
            let n = [8, 5, 1, 7][round % 4];
            let mut cases: Vec<Case> = (0..n)
                .map(|k| case(&rig, &mut rng, (k + round) % 8))
                .collect();
            // Every other group has an entity whose legs are listed the other way round: its
            // bones are not the others', so the group's bones move per entity, and each entity
            // alone (across the lanes) must get the same bits.
            if round % 2 == 1 {
                cases[0].placement.legs.reverse();
            }
            let inputs: Vec<FootPlacement> = cases.iter().map(|c| c.placement).collect();
            let mut models: Vec<Vec<Affine3A>> = cases.iter().map(|c| c.model.clone()).collect();
            let mut poses: Vec<StagePose<'_>> = (cases.iter().zip(&mut models))
                .map(|(c, model)| StagePose {
                    entity: Entity::DANGLING,
                    rig: &rig,
                    local: LocalPose::aos(&c.local),
                    model,
                    transform: Some(&c.transform),
                })
                .collect();
            let got = place_lanes(&inputs, &mut poses, &Hills);
            drop(poses);
            for (k, c) in cases.iter().enumerate() {
                let mut want_model = c.model.clone();
                let mut job = FootPlacementJob {
                    parents: rig.parent_indices(),
                    model: &mut want_model,
                    transform: c.transform,
                    placement: &c.placement,
                    ground: &Hills,
                };
                if (k + round) % 8 != 3 {
                    job.validate().unwrap();
                }
                let want = job.run();
                let what = format!("round {round}, entity {k}, case {}", (k + round) % 8);
                assert_eq!(got[k].reached, want.reached, "{what}");
                let offset_gap = (got[k].pelvis_offset - want.pelvis_offset).abs();
                assert!(offset_gap <= TOLERANCE, "{what}: {offset_gap}");
                let hinged = |b: usize| c.placement.legs.iter().any(|l| b == l.hip || b == l.knee);
                for b in 0..rig.bone_count() {
                    let gap = largest_gap(&models[k][b..b + 1], &want_model[b..b + 1]);
                    let allowed = if hinged(b) {
                        HINGE_TOLERANCE
                    } else {
                        TOLERANCE
                    };
                    assert!(gap <= allowed, "{what}, bone {b}: {gap}");
                    worst = worst.max(gap);
                }

                // A reached leg's ankle is at the spec's target: the ground under the animated
                // ankle plus its clearance along the normal.
                let world = c.transform.to_affine();
                for (leg, &reached) in want.reached.iter().enumerate() {
                    if !reached || c.placement.weight < 1.0 {
                        continue;
                    }
                    reached_legs += 1;
                    let ankle = c.placement.legs[leg].ankle;
                    let before = world.transform_point3a(c.model[ankle].translation);
                    let g = Hills.ground(before.x, before.z);
                    let target = Vec3A::new(before.x, g.height, before.z)
                        + Vec3A::from(g.normal) * (before.y - c.transform.translation.y);
                    let after = world.transform_point3a(models[k][ankle].translation);
                    let miss = (after - target).length();
                    worst_miss = worst_miss.max(miss);
                    // Reached means within 1e-4 of the leg's length (0.83).
                    assert!(miss <= 1e-4 * 0.83, "{what}: {after} vs {target}");
                }

                // Alone, the entity gets the same bits as in its group.
                let mut alone = c.model.clone();
                let mut pose = [StagePose {
                    entity: Entity::DANGLING,
                    rig: &rig,
                    local: LocalPose::aos(&c.local),
                    model: &mut alone,
                    transform: Some(&c.transform),
                }];
                place_lanes(std::slice::from_ref(&c.placement), &mut pose, &Hills);
                assert_eq!(bits(&alone), bits(&models[k]), "{what}");
            }
        }
        assert!(reached_legs > 100, "{reached_legs}");
        eprintln!(
            "largest gap to the job: {worst:e}, largest miss of a reached target: {worst_miss:e}"
        );
    }
}
