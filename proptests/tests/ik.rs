//! Property tests of the IK jobs over random chains and targets: bone lengths kept, no NaN,
//! reach monotonic in weight, and results identical across thread counts.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests unwrap: a failure is the test failing

use glam::{Affine3A, EulerRot, Quat, Vec3};
use proptest::prelude::*;
use rayon::prelude::*;
use sinew_jobs::asset::Transform;
use sinew_jobs::ik::{AimIkJob, FabrikJob, TwoBoneIkJob};

const ROOT: u32 = u32::MAX;

/// A chain of `lengths.len()` bones with the given local rotations, plus a child off the last.
fn chain(lengths: &[f32], angles: &[(f32, f32, f32)]) -> (Vec<u32>, Vec<Affine3A>) {
    let n = lengths.len() + 1;
    let parents: Vec<u32> = (0..n as u32)
        .map(|i| if i == 0 { ROOT } else { i - 1 })
        .collect();
    let mut model: Vec<Affine3A> = Vec::with_capacity(n);
    for i in 0..n {
        let (x, y, z) = angles[i % angles.len()];
        let t = if i == 0 {
            Vec3::ZERO
        } else {
            Vec3::new(0.0, lengths[i - 1], 0.0)
        };
        let local =
            Transform::new(t, Quat::from_euler(EulerRot::XYZ, x, y, z), Vec3::ONE).to_affine();
        model.push(if i == 0 { local } else { model[i - 1] * local });
    }
    (parents, model)
}

fn lengths_kept(before: &[Affine3A], after: &[Affine3A]) -> bool {
    before.windows(2).zip(after.windows(2)).all(|(b, a)| {
        let l0 = (b[1].translation - b[0].translation).length();
        let l1 = (a[1].translation - a[0].translation).length();
        ((l1 - l0) / l0).abs() <= 1e-5
    })
}

fn two_bone(
    parents: &[u32],
    model: &mut [Affine3A],
    target: Vec3,
    weight: f32,
    pole: Option<Vec3>,
) {
    TwoBoneIkJob {
        parents,
        model,
        start: 0,
        mid: 1,
        end: 2,
        target,
        pole_vector: pole,
        mid_axis: None,
        weight,
        soften: 1.0,
        twist_angle: 0.0,
    }
    .run();
}

fn angle() -> impl Strategy<Value = (f32, f32, f32)> {
    (-1.5f32..1.5, -1.5f32..1.5, -1.5f32..1.5)
}

fn point() -> impl Strategy<Value = Vec3> {
    (-3.0f32..3.0, -3.0f32..3.0, -3.0f32..3.0).prop_map(|(x, y, z)| Vec3::new(x, y, z))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn two_bone_keeps_lengths_stays_finite_and_reaches_more_with_weight(
        l1 in 0.2f32..1.5, l2 in 0.2f32..1.5,
        angles in proptest::collection::vec(angle(), 3),
        target in point(),
        pole in proptest::option::of(point().prop_filter("non-zero", |p| p.length() > 0.1)),
    ) {
        let (parents, input) = chain(&[l1, l2], &angles);
        let mut last = f32::INFINITY;
        for w in [0.0f32, 0.3, 0.6, 1.0] {
            let mut model = input.clone();
            two_bone(&parents, &mut model, target, w, pole);
            prop_assert!(model.iter().all(|m| m.is_finite()));
            prop_assert!(lengths_kept(&input, &model));
            let miss = (Vec3::from(model[2].translation) - target).length();
            prop_assert!(miss <= last + 1e-4 * (l1 + l2), "weight {}: {} after {}", w, miss, last);
            last = miss;
        }
        // At full weight the end is as close as the chain allows.
        let d = (target - Vec3::from(input[0].translation)).length();
        let best = if d > l1 + l2 { d - l1 - l2 } else if d < (l1 - l2).abs() { (l1 - l2).abs() - d } else { 0.0 };
        prop_assert!((last - best).abs() <= 2e-4 * (l1 + l2), "{} vs {}", last, best);
    }

    #[test]
    fn fabrik_keeps_lengths_and_stays_finite(
        lengths in proptest::collection::vec(0.1f32..1.0, 1..12),
        angles in proptest::collection::vec(angle(), 1..6),
        target in point(),
    ) {
        let (parents, input) = chain(&lengths, &angles);
        let joints: Vec<usize> = (0..=lengths.len()).collect();
        let mut model = input.clone();
        let r = FabrikJob {
            parents: &parents,
            model: &mut model,
            chain: &joints,
            target,
            tolerance: 1e-3,
            max_iterations: 32,
            fixed_root: true,
            limits: None,
            weight: 1.0,
        }
        .run();
        prop_assert!(model.iter().all(|m| m.is_finite()));
        prop_assert!(lengths_kept(&input, &model));
        prop_assert!(r.error.is_finite() && r.iterations <= 32);
        let tip = Vec3::from(model[lengths.len()].translation);
        prop_assert!(((tip - target).length() - r.error).abs() < 1e-3);
    }

    #[test]
    fn aim_stays_finite_and_points_where_it_can(
        angles in proptest::collection::vec(angle(), 2),
        target in point(),
        offset in point().prop_map(|p| p * 0.05),
    ) {
        let (parents, input) = chain(&[1.0], &angles);
        let mut model = input.clone();
        let r = AimIkJob {
            parents: &parents,
            model: &mut model,
            joint: 1,
            target,
            forward: Vec3::Z,
            up: Vec3::Y,
            offset,
            pole_vector: Some(Vec3::Y),
            weight: 1.0,
        }
        .run();
        prop_assert!(model.iter().all(|m| m.is_finite()));
        if r.reached {
            let eye = model[1].transform_point3(offset);
            let f = model[1].transform_vector3(Vec3::Z).normalize();
            prop_assert!(f.dot((target - eye).normalize()) > 1.0 - 1e-4);
        } else {
            prop_assert_eq!(&model, &input);
        }
    }
}

/// Many chains solved on 1 and 4 threads: the same bits.
#[test]
fn results_do_not_depend_on_the_thread_count() {
    let cases: Vec<(Vec<u32>, Vec<Affine3A>, Vec3)> = (0..200)
        .map(|i| {
            let f = i as f32;
            let (parents, model) = chain(
                &[0.5 + 0.01 * f, 0.7],
                &[(0.1 * f, -0.2, 0.3), (0.4, 0.05 * f, -0.1)],
            );
            (
                parents,
                model,
                Vec3::new((0.1 * f).sin(), -0.8, (0.07 * f).cos()),
            )
        })
        .collect();
    let solve = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            cases
                .par_iter()
                .map(|(parents, model, target)| {
                    let mut m = model.clone();
                    two_bone(parents, &mut m, *target, 0.8, Some(Vec3::Z));
                    m.iter()
                        .flat_map(|a| a.to_cols_array())
                        .map(f32::to_bits)
                        .collect::<Vec<u32>>()
                })
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(solve(1), solve(4));
}
