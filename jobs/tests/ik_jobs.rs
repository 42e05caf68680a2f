//! The IK jobs on hand-built chains, against geometry computed here a second way: distances
//! and angles from the positions, bone lengths from the input, the reported local corrections
//! re-applied to the local pose and propagated by hand, the soften curve's formula.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests unwrap: a failure is the test failing

use glam::{Affine3A, EulerRot, Quat, Vec3};
use sinew_jobs::asset::Transform;
use sinew_jobs::ik::{
    AimIkJob, Channels, ConstraintJob, ConstraintSource, FabrikJob, FootPlacement,
    FootPlacementJob, GroundQuery, GroundSample, JointLimit, Leg, TargetSpace, TwoBoneIkJob,
};
use sinew_jobs::pose_stage::StageError;

const ROOT: u32 = u32::MAX;

/// Model matrices of a local pose, by hand (`model[i] = model[parent] · local[i]`).
fn propagate(parents: &[u32], local: &[Transform]) -> Vec<Affine3A> {
    let mut out: Vec<Affine3A> = Vec::new();
    for (i, l) in local.iter().enumerate() {
        let m = l.to_affine();
        out.push(if parents[i] == ROOT {
            m
        } else {
            out[parents[i] as usize] * m
        });
    }
    out
}

fn pos(m: &Affine3A) -> Vec3 {
    m.translation.into()
}

/// root → start → mid → end → toe, plus a sibling of start: a leg with a slightly bent knee.
/// Lengths 1.0 (start→mid) and 0.8 (mid→end).
fn leg() -> (Vec<u32>, Vec<Transform>) {
    let parents = vec![ROOT, 0, 1, 2, 3, 0];
    let local = vec![
        Transform::new(Vec3::new(0.0, 2.0, 0.0), Quat::IDENTITY, Vec3::ONE),
        Transform::new(
            Vec3::new(0.1, 0.0, 0.0),
            Quat::from_rotation_x(-0.2),
            Vec3::ONE,
        ),
        Transform::new(
            Vec3::new(0.0, -1.0, 0.0),
            Quat::from_rotation_x(0.5),
            Vec3::ONE,
        ),
        Transform::from_translation(Vec3::new(0.0, -0.8, 0.0)),
        Transform::from_translation(Vec3::new(0.0, -0.05, 0.15)),
        Transform::from_translation(Vec3::new(-0.1, 0.0, 0.0)),
    ];
    (parents, local)
}

fn two_bone<'a>(parents: &'a [u32], model: &'a mut [Affine3A], target: Vec3) -> TwoBoneIkJob<'a> {
    TwoBoneIkJob {
        parents,
        model,
        start: 1,
        mid: 2,
        end: 3,
        target,
        pole_vector: None,
        mid_axis: None,
        weight: 1.0,
        soften: 1.0,
        twist_angle: 0.0,
    }
}

fn assert_lengths_kept(before: &[Affine3A], after: &[Affine3A], pairs: &[(usize, usize)]) {
    for &(a, b) in pairs {
        let l0 = (pos(&before[b]) - pos(&before[a])).length();
        let l1 = (pos(&after[b]) - pos(&after[a])).length();
        assert!(
            ((l1 - l0) / l0).abs() <= 1e-5,
            "bone {a}→{b}: {l0} became {l1}"
        );
    }
}

/// A child's transform relative to its parent is unchanged (the subtree moved rigidly).
fn assert_rigid(before: &[Affine3A], after: &[Affine3A], parent: usize, child: usize) {
    let r0 = before[parent].inverse() * before[child];
    let r1 = after[parent].inverse() * after[child];
    assert!(
        r0.abs_diff_eq(r1, 1e-5),
        "bone {child} moved relative to {parent}"
    );
}

#[test]
fn a_reachable_target_is_reached_and_lengths_are_kept() {
    let (parents, local) = leg();
    let input = propagate(&parents, &local);
    let start = pos(&input[1]);
    let chain = 1.8;
    for (k, dir) in [
        Vec3::new(0.3, -1.0, 0.2),
        Vec3::new(-0.5, -0.2, 0.9),
        Vec3::new(0.0, 1.0, 0.1),
        Vec3::new(1.0, 0.0, 0.0),
    ]
    .into_iter()
    .enumerate()
    {
        for frac in [0.2f32, 0.5, 0.9, 0.999] {
            let d = (0.2 + frac * 1.6).min(chain);
            let target = start + dir.normalize() * d;
            let mut model = input.clone();
            let mut job = two_bone(&parents, &mut model, target);
            job.validate().unwrap();
            let r = job.run();
            let miss = (pos(&model[3]) - target).length();
            assert!(miss <= 1e-4 * chain, "case {k}, {frac}: missed by {miss}");
            assert!(r.reached);
            assert_lengths_kept(&input, &model, &[(1, 2), (2, 3), (3, 4)]);
            assert_rigid(&input, &model, 3, 4);
            // Bones outside the chain's subtree are untouched, bit for bit.
            assert_eq!(model[0], input[0]);
            assert_eq!(model[5], input[5]);
            // The start joint does not move.
            assert_eq!(pos(&model[1]), start);
        }
    }
}

#[test]
fn the_reported_corrections_reproduce_the_solved_pose() {
    let (parents, local) = leg();
    let input = propagate(&parents, &local);
    let target = pos(&input[1]) + Vec3::new(0.4, -1.2, 0.5);
    let mut model = input.clone();
    let mut job = two_bone(&parents, &mut model, target);
    job.pole_vector = Some(Vec3::new(0.2, 0.0, 1.0));
    job.twist_angle = 0.3;
    job.weight = 0.7;
    let r = job.run();
    // local' = local · correction, propagated by hand.
    let mut edited = local.clone();
    edited[1].rotation = (local[1].rotation * r.start_correction).normalize();
    edited[2].rotation = (local[2].rotation * r.mid_correction).normalize();
    let by_hand = propagate(&parents, &edited);
    for b in 0..parents.len() {
        assert!(
            (pos(&by_hand[b]) - pos(&model[b])).length() < 2e-5,
            "bone {b}: {} vs {}",
            pos(&by_hand[b]),
            pos(&model[b])
        );
    }
}

#[test]
fn an_unreachable_target_straightens_the_chain_towards_it() {
    let (parents, local) = leg();
    let input = propagate(&parents, &local);
    let start = pos(&input[1]);
    let dir = Vec3::new(0.6, -0.7, 0.4).normalize();
    let mut model = input.clone();
    let r = two_bone(&parents, &mut model, start + dir * 3.0).run();
    assert!(!r.reached);
    // Straight, along the start–target line, at full length.
    assert!((pos(&model[2]) - (start + dir * 1.0)).length() < 1e-4);
    assert!((pos(&model[3]) - (start + dir * 1.8)).length() < 1e-4);
    // Too close: folded as far as it goes, |l1 − l2| = 0.2 from the start.
    let mut model = input.clone();
    let r = two_bone(&parents, &mut model, start + dir * 0.05).run();
    assert!(!r.reached);
    assert!(((pos(&model[3]) - start).length() - 0.2).abs() < 1e-4);
    assert!((pos(&model[3]) - start).normalize().dot(dir) > 0.9999);
}

#[test]
fn the_pole_decides_the_bend_plane_and_the_twist_turns_it() {
    let (parents, local) = leg();
    let input = propagate(&parents, &local);
    let start = pos(&input[1]);
    let target = start + Vec3::new(0.0, -1.3, 0.3);
    let axis = (target - start).normalize();
    let knee_side = |model: &[Affine3A]| {
        let k = pos(&model[2]) - start;
        (k - axis * k.dot(axis)).normalize()
    };
    for pole in [Vec3::Z, -Vec3::Z, Vec3::X, Vec3::new(-1.0, 0.0, 1.0)] {
        let mut model = input.clone();
        let mut job = two_bone(&parents, &mut model, target);
        job.pole_vector = Some(pole);
        assert!(job.run().reached);
        let want = (pole - axis * pole.dot(axis)).normalize();
        assert!(
            knee_side(&model).dot(want) > 1.0 - 1e-4,
            "pole {pole}: knee towards {}",
            knee_side(&model)
        );
        // The twist turns the knee about the start–target line by the angle.
        let mut twisted = input.clone();
        let mut job = two_bone(&parents, &mut twisted, target);
        job.pole_vector = Some(pole);
        job.twist_angle = 0.6;
        assert!(job.run().reached);
        let turned = Quat::from_axis_angle(axis, 0.6) * want;
        assert!(knee_side(&twisted).dot(turned) > 1.0 - 1e-4);
    }
}

#[test]
fn weight_zero_keeps_the_pose_and_reach_grows_with_weight() {
    let (parents, local) = leg();
    let input = propagate(&parents, &local);
    let target = pos(&input[1]) + Vec3::new(0.5, -0.9, -0.6);
    let mut model = input.clone();
    let mut job = two_bone(&parents, &mut model, target);
    job.weight = 0.0;
    job.run();
    assert_eq!(model, input);
    let mut last = f32::INFINITY;
    for w in [0.0f32, 0.25, 0.5, 0.75, 1.0] {
        let mut model = input.clone();
        let mut job = two_bone(&parents, &mut model, target);
        job.weight = w;
        job.run();
        let miss = (pos(&model[3]) - target).length();
        assert!(miss <= last + 1e-6, "weight {w}: {miss} after {last}");
        last = miss;
    }
    assert!(last < 1e-4);
}

#[test]
fn soften_follows_its_curve_near_full_reach() {
    let (parents, local) = leg();
    let input = propagate(&parents, &local);
    let start = pos(&input[1]);
    let dir = Vec3::new(0.2, -1.0, 0.1).normalize();
    let (chain, soften) = (1.8f32, 0.8f32);
    for d in [1.5f32, 1.7, 1.8, 2.5] {
        let mut model = input.clone();
        let mut job = two_bone(&parents, &mut model, start + dir * d);
        job.soften = soften;
        let r = job.run();
        let (da, ds) = (chain * soften, chain * (1.0 - soften));
        let want = if d > da {
            da + ds * (1.0 - (-(d - da) / ds).exp())
        } else {
            d
        };
        let got = pos(&model[3]) - start;
        assert!(
            (got.length() - want).abs() < 1e-4,
            "d {d}: {} vs {want}",
            got.length()
        );
        assert!(got.normalize().dot(dir) > 1.0 - 1e-6);
        assert_eq!(r.reached, d <= da);
    }
}

#[test]
fn a_mid_axis_bends_the_hinge_about_it() {
    let (parents, local) = leg();
    let input = propagate(&parents, &local);
    let target = pos(&input[1]) + Vec3::new(0.0, -1.2, 0.4);
    let mut model = input.clone();
    let mut job = two_bone(&parents, &mut model, target);
    job.mid_axis = Some(Vec3::X);
    assert!(job.run().reached);
    assert!((pos(&model[3]) - target).length() < 1e-4);
    // The knee turned about its local x only: its x axis is where it was.
    let before = input[2].matrix3.x_axis.normalize();
    let after = model[2].matrix3.x_axis.normalize();
    assert!(before.dot(after) > 1.0 - 1e-5);
}

#[test]
fn bad_two_bone_input_is_a_typed_error() {
    let (parents, local) = leg();
    let mut model = propagate(&parents, &local);
    let e = |f: &dyn Fn(&mut TwoBoneIkJob<'_>)| {
        let mut m = model.clone();
        let mut job = two_bone(&parents, &mut m, Vec3::new(0.0, 0.5, 0.0));
        f(&mut job);
        job.validate().unwrap_err()
    };
    assert_eq!(
        e(&|j| j.target = Vec3::new(f32::NAN, 0.0, 0.0)),
        StageError::NotFinite { what: "target" }
    );
    assert_eq!(
        e(&|j| j.end = 9),
        StageError::BoneOutOfRange {
            bone: 9,
            bone_count: 6
        }
    );
    assert_eq!(
        e(&|j| j.mid = 5),
        StageError::NotAChain {
            bone: 5,
            ancestor: 1
        }
    );
    assert_eq!(
        e(&|j| j.pole_vector = Some(Vec3::ZERO)),
        StageError::ZeroDirection {
            what: "pole vector"
        }
    );
    assert!(matches!(
        e(&|j| j.weight = 1.5),
        StageError::OutOfRange { what: "weight", .. }
    ));
    assert!(matches!(
        e(&|j| j.soften = f32::NAN),
        StageError::OutOfRange { what: "soften", .. }
    ));
    // A zero-length shin.
    model[3] = model[2];
    let job = two_bone(&parents, &mut model, Vec3::ZERO);
    assert_eq!(
        job.validate().unwrap_err(),
        StageError::ZeroLengthBone { bone: 2 }
    );
    // Parents that are not depth-first.
    let bad_parents = [ROOT, 0, 1, 0, 2];
    let mut m = vec![Affine3A::IDENTITY; 5];
    let job = TwoBoneIkJob {
        parents: &bad_parents,
        model: &mut m,
        ..two_bone(&parents, &mut [], Vec3::ZERO)
    };
    assert!(matches!(
        job.validate().unwrap_err(),
        StageError::BadHierarchy { .. }
    ));
}

/// root → spine → neck → head, head with an eye offset.
fn neck() -> (Vec<u32>, Vec<Affine3A>) {
    let parents = vec![ROOT, 0, 1, 2];
    let local = vec![
        Transform::new(
            Vec3::new(1.0, 0.0, -2.0),
            Quat::from_rotation_y(0.4),
            Vec3::ONE,
        ),
        Transform::from_translation(Vec3::new(0.0, 1.2, 0.0)),
        Transform::new(
            Vec3::new(0.0, 0.3, 0.0),
            Quat::from_rotation_x(0.2),
            Vec3::ONE,
        ),
        Transform::new(
            Vec3::new(0.0, 0.15, 0.0),
            Quat::from_euler(EulerRot::XYZ, -0.1, 0.3, 0.05),
            Vec3::ONE,
        ),
    ];
    let model = propagate(&parents, &local);
    (parents, model)
}

#[test]
fn aim_points_the_forward_axis_from_the_offset_at_the_target() {
    let (parents, input) = neck();
    let offset = Vec3::new(0.0, 0.08, 0.1);
    for target in [
        Vec3::new(3.0, 2.0, 4.0),
        Vec3::new(-2.0, 1.0, -1.0),
        Vec3::new(1.0, 5.0, -2.0),
    ] {
        let mut model = input.clone();
        let mut job = AimIkJob {
            parents: &parents,
            model: &mut model,
            joint: 3,
            target,
            forward: Vec3::Z,
            up: Vec3::Y,
            offset,
            pole_vector: Some(Vec3::Y),
            weight: 1.0,
        };
        job.validate().unwrap();
        let r = job.run();
        assert!(r.reached);
        let head = model[3];
        let eye = head.transform_point3(offset);
        let forward = head.transform_vector3(Vec3::Z).normalize();
        let to_target = (target - eye).normalize();
        assert!(forward.dot(to_target) > 1.0 - 1e-6, "target {target}");
        // The up axis lies in the plane of the aim line and the pole, on the pole's side.
        let up = head.transform_vector3(Vec3::Y).normalize();
        let aim = (target - pos(&head)).normalize();
        assert!(up.dot(aim.cross(Vec3::Y).normalize()).abs() < 1e-4);
        assert!(up.dot(Vec3::Y) > 0.0);
        // The joint stays, the ancestors are untouched.
        assert!((pos(&head) - pos(&input[3])).length() < 1e-6);
        assert_eq!(&model[..3], &input[..3]);
        // The correction, right-multiplied on the joint's rotation, gives its new rotation.
        let r0 = Quat::from_mat3a(&input[3].matrix3);
        let r1 = Quat::from_mat3a(&model[3].matrix3);
        assert!(
            (r0 * r.correction).abs_diff_eq(r1, 1e-5) || (r0 * r.correction).abs_diff_eq(-r1, 1e-5)
        );
    }
}

#[test]
fn aim_at_weight_zero_and_inside_the_offset_leaves_the_pose() {
    let (parents, input) = neck();
    let run = |target: Vec3, weight: f32| {
        let mut model = input.clone();
        let r = AimIkJob {
            parents: &parents,
            model: &mut model,
            joint: 3,
            target,
            forward: Vec3::Z,
            up: Vec3::Y,
            offset: Vec3::new(0.0, 0.5, 0.0),
            pole_vector: None,
            weight,
        }
        .run();
        (model, r.reached)
    };
    assert_eq!(run(Vec3::new(3.0, 2.0, 4.0), 0.0).0, input);
    // The target lies closer to the joint than the offset: no line from it reaches.
    let inside = pos(&input[3]) + Vec3::new(0.1, 0.0, 0.0);
    let (model, reached) = run(inside, 1.0);
    assert!(!reached);
    assert_eq!(model, input);
}

/// A zig-zag chain of `n` joints with varied segment lengths.
fn zigzag(n: usize) -> (Vec<u32>, Vec<Affine3A>) {
    let parents: Vec<u32> = (0..n as u32)
        .map(|i| if i == 0 { ROOT } else { i - 1 })
        .collect();
    let local: Vec<Transform> = (0..n)
        .map(|i| {
            let a = if i % 2 == 0 { 0.3 } else { -0.25 };
            Transform::new(
                if i == 0 {
                    Vec3::ZERO
                } else {
                    Vec3::new(0.0, 0.5 + 0.1 * (i % 3) as f32, 0.0)
                },
                Quat::from_euler(EulerRot::XYZ, a, 0.1 * a, 0.05),
                Vec3::ONE,
            )
        })
        .collect();
    let model = propagate(&parents, &local);
    (parents, model)
}

#[test]
fn fabrik_converges_on_chains_of_2_to_32_joints() {
    for n in [2usize, 3, 4, 8, 16, 32] {
        let (parents, input) = zigzag(n);
        let chain: Vec<usize> = (0..n).collect();
        let total: f32 = (1..n)
            .map(|i| (pos(&input[i]) - pos(&input[i - 1])).length())
            .sum();
        let target = if n == 2 {
            // A two-joint chain reaches only its sphere.
            let l = (pos(&input[1]) - pos(&input[0])).length();
            Vec3::new(0.6, 0.3, -0.2).normalize() * l
        } else {
            Vec3::new(0.3, 0.5, 0.2).normalize() * total * 0.6
        };
        let tolerance = 1e-3 * total;
        let mut model = input.clone();
        let mut job = FabrikJob {
            parents: &parents,
            model: &mut model,
            chain: &chain,
            target,
            tolerance,
            max_iterations: 64,
            fixed_root: true,
            limits: None,
            weight: 1.0,
        };
        job.validate().unwrap();
        let r = job.run();
        assert!(
            r.reached,
            "{n} joints: error {} after {}",
            r.error, r.iterations
        );
        assert!(r.iterations <= 64);
        let miss = (pos(&model[n - 1]) - target).length();
        assert!(miss <= tolerance + 1e-4 * total, "{n} joints: {miss}");
        let pairs: Vec<(usize, usize)> = (1..n).map(|i| (i - 1, i)).collect();
        assert_lengths_kept(&input, &model, &pairs);
        assert_eq!(pos(&model[0]), pos(&input[0]));
    }
}

#[test]
fn fabrik_straightens_towards_an_unreachable_target_and_keeps_limits() {
    let (parents, input) = zigzag(6);
    let chain: Vec<usize> = (0..6).collect();
    let lens: Vec<f32> = (1..6)
        .map(|i| (pos(&input[i]) - pos(&input[i - 1])).length())
        .collect();
    let total: f32 = lens.iter().sum();
    let dir = Vec3::new(1.0, 0.2, 0.0).normalize();
    let mut model = input.clone();
    let r = FabrikJob {
        parents: &parents,
        model: &mut model,
        chain: &chain,
        target: dir * total * 2.0,
        tolerance: 1e-3,
        max_iterations: 16,
        fixed_root: true,
        limits: None,
        weight: 1.0,
    }
    .run();
    assert!(!r.reached);
    let mut along = 0.0;
    for i in 1..6 {
        along += lens[i - 1];
        assert!((pos(&model[i]) - dir * along).length() < 1e-4, "joint {i}");
    }
    // Bend limits: a target that would fold the chain.
    let limit = 0.3f32;
    let limits = vec![JointLimit { max_bend: limit }; 4];
    let mut model = input.clone();
    let mut job = FabrikJob {
        parents: &parents,
        model: &mut model,
        chain: &chain,
        target: Vec3::new(0.4, 0.3, 0.0),
        tolerance: 1e-3,
        max_iterations: 32,
        fixed_root: true,
        limits: Some(&limits),
        weight: 1.0,
    };
    job.validate().unwrap();
    job.run();
    for i in 1..5 {
        let a = pos(&model[i]) - pos(&model[i - 1]);
        let b = pos(&model[i + 1]) - pos(&model[i]);
        assert!(
            a.angle_between(b) <= limit + 1e-3,
            "joint {i}: {}",
            a.angle_between(b)
        );
    }
    // A free root moves the chain onto the target in one pass.
    let mut model = input.clone();
    let target = Vec3::new(5.0, -1.0, 2.0);
    let r = FabrikJob {
        parents: &parents,
        model: &mut model,
        chain: &chain,
        target,
        tolerance: 1e-4,
        max_iterations: 8,
        fixed_root: false,
        limits: None,
        weight: 1.0,
    }
    .run();
    assert!(r.reached);
    assert!((pos(&model[5]) - target).length() < 1e-4);
    assert_lengths_kept(&input, &model, &[(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]);
}

#[test]
fn bad_fabrik_input_is_a_typed_error() {
    let (parents, mut model) = zigzag(4);
    let mut job = |chain: &[usize], tolerance: f32, limits: Option<&[JointLimit]>| {
        FabrikJob {
            parents: &parents,
            model: &mut model,
            chain,
            target: Vec3::ONE,
            tolerance,
            max_iterations: 4,
            fixed_root: true,
            limits,
            weight: 1.0,
        }
        .validate()
        .unwrap_err()
    };
    assert!(matches!(
        job(&[0], 1e-3, None),
        StageError::BadHierarchy { .. }
    ));
    assert_eq!(
        job(&[0, 2, 1], 1e-3, None),
        StageError::NotAChain {
            bone: 1,
            ancestor: 2
        }
    );
    assert!(matches!(
        job(&[0, 1, 2], 0.0, None),
        StageError::OutOfRange {
            what: "tolerance",
            ..
        }
    ));
    assert!(matches!(
        job(&[0, 1, 2], 1e-3, Some(&[])),
        StageError::BadHierarchy { .. }
    ));
}

#[test]
fn constraints_override_and_copy_with_weight() {
    let (parents, local) = leg();
    let input = propagate(&parents, &local);
    let goal = Transform::new(
        Vec3::new(1.0, 1.0, 1.0),
        Quat::from_rotation_z(0.7),
        Vec3::ONE,
    );
    // Override both: bone 2 takes the transform, its subtree follows rigidly.
    let mut model = input.clone();
    let mut job = ConstraintJob {
        parents: &parents,
        model: &mut model,
        bone: 2,
        source: ConstraintSource::Transform {
            transform: goal,
            space: TargetSpace::Model,
        },
        channels: Channels::Both,
        weight: 1.0,
    };
    job.validate().unwrap();
    job.run();
    assert!((pos(&model[2]) - goal.translation).length() < 1e-6);
    let r = Quat::from_mat3a(&model[2].matrix3);
    assert!(r.angle_between(goal.rotation) < 1e-4);
    assert_rigid(&input, &model, 2, 3);
    assert_rigid(&input, &model, 3, 4);
    assert_eq!(&model[..2], &input[..2]);
    // Half the position only: the midpoint, rotation kept.
    let mut model = input.clone();
    ConstraintJob {
        parents: &parents,
        model: &mut model,
        bone: 2,
        source: ConstraintSource::Transform {
            transform: goal,
            space: TargetSpace::Model,
        },
        channels: Channels::Position,
        weight: 0.5,
    }
    .run();
    let mid = (pos(&input[2]) + goal.translation) * 0.5;
    assert!((pos(&model[2]) - mid).length() < 1e-6);
    assert!(model[2].matrix3.abs_diff_eq(input[2].matrix3, 1e-6));
    // Copy the sibling's rotation onto the toe.
    let mut model = input.clone();
    ConstraintJob {
        parents: &parents,
        model: &mut model,
        bone: 4,
        source: ConstraintSource::Bone(5),
        channels: Channels::Rotation,
        weight: 1.0,
    }
    .run();
    assert!(model[4].matrix3.abs_diff_eq(input[5].matrix3, 1e-5));
    assert_eq!(pos(&model[4]), pos(&input[4]));
    // A NaN rotation is refused.
    let mut m = input.clone();
    let job = ConstraintJob {
        parents: &parents,
        model: &mut m,
        bone: 2,
        source: ConstraintSource::Transform {
            transform: Transform::from_rotation(Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0)),
            space: TargetSpace::Model,
        },
        channels: Channels::Both,
        weight: 1.0,
    };
    assert_eq!(
        job.validate().unwrap_err(),
        StageError::NotFinite {
            what: "constraint rotation"
        }
    );
}

/// A plane `y = h0 + sx·x + sz·z`.
struct Slope {
    h0: f32,
    sx: f32,
    sz: f32,
}

impl GroundQuery for Slope {
    fn ground(&self, x: f32, z: f32) -> GroundSample {
        GroundSample {
            height: self.h0 + self.sx * x + self.sz * z,
            normal: Vec3::new(-self.sx, 1.0, -self.sz).normalize(),
        }
    }
}

/// root → pelvis → (thigh → shin → foot → toe) × 2, standing: ankles 0.07 above the ground.
fn biped() -> (Vec<u32>, Vec<Transform>, FootPlacement) {
    let parents = vec![ROOT, 0, 1, 2, 3, 4, 1, 6, 7, 8];
    let t = Transform::from_translation;
    let bend = |x: f32, v: Vec3| Transform::new(v, Quat::from_rotation_x(x), Vec3::ONE);
    let mut local = vec![t(Vec3::ZERO), t(Vec3::new(0.0, 0.95, 0.0))];
    for side in [1.0f32, -1.0] {
        local.push(bend(-0.1, Vec3::new(0.09 * side, -0.05, 0.0)));
        local.push(bend(0.2, Vec3::new(0.0, -0.43, 0.0)));
        local.push(bend(-0.1, Vec3::new(0.0, -0.40, 0.0)));
        local.push(t(Vec3::new(0.0, -0.05, 0.13)));
    }
    let leg = |hip| Leg {
        hip,
        knee: hip + 1,
        ankle: hip + 2,
        ankle_height: 0.07,
        knee_axis: Some(Vec3::X),
    };
    let placement = FootPlacement {
        pelvis: 1,
        legs: [leg(2), leg(6)],
        weight: 1.0,
        max_tilt: 0.6,
    };
    (parents, local, placement)
}

#[test]
fn feet_are_planted_on_a_slope_and_aligned_to_it() {
    let (parents, local, placement) = biped();
    let input = propagate(&parents, &local);
    for (slope, place) in [
        (
            Slope {
                h0: 0.1,
                sx: 0.2,
                sz: 0.0,
            },
            Vec3::new(0.0, 0.0, 0.0),
        ),
        (
            Slope {
                h0: -0.05,
                sx: -0.1,
                sz: 0.25,
            },
            Vec3::new(3.0, 0.0, -2.0),
        ),
        (
            Slope {
                h0: 0.3,
                sx: 0.0,
                sz: -0.3,
            },
            Vec3::new(-1.0, 0.0, 1.0),
        ),
    ] {
        let transform = Transform::new(place, Quat::from_rotation_y(0.5), Vec3::ONE);
        let world = transform.to_affine();
        // The animated ankles' heights above the flat ground: the clearance to keep.
        let clearance: Vec<f32> = placement
            .legs
            .iter()
            .map(|l| world.transform_point3(pos(&input[l.ankle])).y - place.y)
            .collect();
        let mut model = input.clone();
        let mut job = FootPlacementJob {
            parents: &parents,
            model: &mut model,
            transform,
            placement: &placement,
            ground: &slope,
        };
        job.validate().unwrap();
        let r = job.run();
        assert_eq!(r.reached, [true, true]);
        let n = slope.ground(0.0, 0.0).normal;
        for (k, leg) in placement.legs.iter().enumerate() {
            let ankle = world.transform_point3(pos(&model[leg.ankle]));
            // The sole (the ankle less its clearance along the normal) is on the ground.
            let sole = ankle - n * clearance[k];
            let g = slope.ground(sole.x, sole.z).height;
            assert!(
                (sole.y - g).abs() < 1e-4,
                "leg {k}: sole {} ground {g}",
                sole.y
            );
            // The foot's up axis is the normal (the input foot is level: its up is world up).
            let up0 = world
                .transform_vector3(input[leg.ankle].matrix3.y_axis.into())
                .normalize();
            assert!(up0.dot(Vec3::Y) > 0.999);
            let up = world
                .transform_vector3(model[leg.ankle].matrix3.y_axis.into())
                .normalize();
            assert!(up.dot(n) > 1.0 - 1e-4, "leg {k}: up {up} normal {n}");
        }
        assert_lengths_kept(
            &input,
            &model,
            &[(2, 3), (3, 4), (4, 5), (6, 7), (7, 8), (8, 9)],
        );
        // The pelvis only moved: the hips stay where they were relative to it.
        for hip in [2, 6] {
            let d0 = pos(&input[hip]) - pos(&input[1]);
            let d1 = pos(&model[hip]) - pos(&model[1]);
            assert!((d0 - d1).length() < 1e-6);
        }
        assert!(model[1].matrix3.abs_diff_eq(input[1].matrix3, 1e-7));
        assert_eq!(model[0], input[0]);
    }
}

#[test]
fn the_pelvis_lowers_when_a_foot_cannot_reach_and_weight_blends() {
    let (parents, local, placement) = biped();
    let input = propagate(&parents, &local);
    // A step down under the left foot (x > 0): the leg alone cannot reach it.
    struct Step;
    impl GroundQuery for Step {
        fn ground(&self, x: f32, _z: f32) -> GroundSample {
            GroundSample {
                height: if x > 0.0 { -0.25 } else { 0.0 },
                normal: Vec3::Y,
            }
        }
    }
    let mut model = input.clone();
    let r = FootPlacementJob {
        parents: &parents,
        model: &mut model,
        transform: Transform::IDENTITY,
        placement: &placement,
        ground: &Step,
    }
    .run();
    assert!(
        r.pelvis_offset <= -0.25 + 1e-5,
        "pelvis {}",
        r.pelvis_offset
    );
    assert_eq!(r.reached, [true, true]);
    assert!((pos(&model[1]).y - (pos(&input[1]).y + r.pelvis_offset)).abs() < 1e-6);
    for (k, leg) in placement.legs.iter().enumerate() {
        let want = if k == 0 { -0.25 } else { 0.0 } + pos(&input[leg.ankle]).y;
        assert!((pos(&model[leg.ankle]).y - want).abs() < 1e-4, "leg {k}");
    }
    // Weight 0: the pose as it was.
    let mut model = input.clone();
    let half = FootPlacement {
        weight: 0.0,
        ..placement
    };
    FootPlacementJob {
        parents: &parents,
        model: &mut model,
        transform: Transform::IDENTITY,
        placement: &half,
        ground: &Step,
    }
    .run();
    assert_eq!(model, input);
}

/// The stages check an entity's input against its rig's rest pose: a zero-length bone, a chain
/// that is not a chain and a bone out of range are typed errors naming the bone.
#[test]
fn stages_check_inputs_against_the_rig() {
    use sinew_jobs::asset::{RawBone, RawRig};
    use sinew_jobs::ik::{TwoBoneIk, TwoBoneIkStage};
    use sinew_jobs::pose_stage::PoseStage;
    let bone = |name: &str, parent: Option<usize>, y: f32| RawBone {
        name: name.into(),
        parent,
        rest: Transform::from_translation(Vec3::new(0.0, y, 0.0)),
    };
    let rig = RawRig {
        name: "squashed".into(),
        bones: vec![
            bone("root", None, 0.0),
            bone("thigh", Some(0), 1.0),
            bone("shin", Some(1), -0.5),
            bone("foot", Some(2), 0.0),
            bone("other", Some(0), 0.3),
        ],
    }
    .bake()
    .unwrap();
    let stage = TwoBoneIkStage;
    let ik = |a, b, c| TwoBoneIk::new(a, b, c, Vec3::ZERO);
    assert_eq!(
        stage.check(&rig, &ik(1, 2, 3)).unwrap_err(),
        StageError::ZeroLengthBone { bone: 2 }
    );
    assert_eq!(
        stage.check(&rig, &ik(1, 4, 3)).unwrap_err(),
        StageError::NotAChain {
            bone: 4,
            ancestor: 1
        }
    );
    assert_eq!(
        stage.check(&rig, &ik(0, 1, 7)).unwrap_err(),
        StageError::BoneOutOfRange {
            bone: 7,
            bone_count: 5
        }
    );
    assert!(stage.check(&rig, &ik(0, 1, 2)).is_ok());
}
