//! The `ik` example's cases: the corrections it prints, applied to the input matrices as
//! `model' = model · correction` down the chain, put the end on a reachable target and point
//! the aim; bad cases are refused with the reason, the others still solved.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests unwrap: a failure is the test failing

use glam::{Affine3A, Mat4, Quat, Vec3};
use serde_json::{Value, json};
use sinew_examples::ik_cases::solve_cases;

fn cols(m: Mat4) -> Vec<f32> {
    m.to_cols_array().to_vec()
}

fn quat(v: &Value) -> Quat {
    let a: Vec<f32> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    Quat::from_xyzw(a[0], a[1], a[2], a[3])
}

#[test]
fn corrections_put_the_end_on_the_target_and_bad_cases_say_why() {
    let start =
        Mat4::from_rotation_translation(Quat::from_rotation_z(0.3), Vec3::new(0.0, 2.0, 0.0));
    let mid = start
        * Mat4::from_rotation_translation(Quat::from_rotation_x(0.4), Vec3::new(0.0, -1.0, 0.0));
    let end = mid * Mat4::from_translation(Vec3::new(0.0, -1.0, 0.0));
    let joint =
        Mat4::from_rotation_translation(Quat::from_rotation_y(0.7), Vec3::new(1.0, 1.5, 0.0));
    let target = Vec3::new(0.5, 0.8, 0.6);
    let look = Vec3::new(-2.0, 3.0, 4.0);
    let cases = json!([
        {"id": "leg", "kind": "two_bone", "start": cols(start), "mid": cols(mid), "end": cols(end),
         "target": target.to_array(), "pole_vector": [0.0, 0.0, 1.0], "mid_axis": [1.0, 0.0, 0.0],
         "weight": 1.0, "soften": 1.0, "twist_angle": 0.0},
        {"id": "nan", "kind": "two_bone", "start": cols(start), "mid": cols(mid), "end": cols(end),
         "target": [0.0, 0.0, 0.0], "weight": 2.0},
        {"id": "head", "kind": "aim", "joint": cols(joint), "target": look.to_array(),
         "forward": [0.0, 0.0, 1.0], "up": [0.0, 1.0, 0.0], "offset": [0.0, 0.1, 0.05],
         "pole_vector": [0.0, 1.0, 0.0], "weight": 1.0},
        {"id": 4, "kind": "aim", "joint": [1.0, 2.0], "target": [0.0, 0.0, 1.0]}
    ]);
    let out = solve_cases(&cases).unwrap();
    let results = out["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);

    let leg = &results[0];
    assert_eq!(leg["id"], "leg");
    assert_eq!(leg["kind"], "two_bone");
    assert_eq!(leg["ok"], true);
    assert_eq!(leg["reached"], true);
    let (s, m, e) = (
        Affine3A::from_mat4(start),
        Affine3A::from_mat4(mid),
        Affine3A::from_mat4(end),
    );
    let s1 = s * Affine3A::from_quat(quat(&leg["start_correction"]));
    let m1 = s1 * (s.inverse() * m) * Affine3A::from_quat(quat(&leg["mid_correction"]));
    let e1 = m1 * (m.inverse() * e);
    assert!(
        (Vec3::from(e1.translation) - target).length() < 1e-4,
        "{}",
        e1.translation
    );

    assert_eq!(results[1]["ok"], false);
    assert!(
        results[1]["error"]
            .as_str()
            .unwrap()
            .contains("weight is 2"),
        "{}",
        results[1]
    );

    let head = &results[2];
    assert_eq!(head["ok"], true);
    assert_eq!(head["reached"], true);
    let j1 = Affine3A::from_mat4(joint) * Affine3A::from_quat(quat(&head["correction"]));
    let eye = j1.transform_point3(Vec3::new(0.0, 0.1, 0.05));
    let forward = j1.transform_vector3(Vec3::Z).normalize();
    assert!(forward.dot((look - eye).normalize()) > 1.0 - 1e-5);

    assert_eq!(results[3]["id"], 4);
    assert_eq!(results[3]["ok"], false);
    assert!(
        results[3]["error"]
            .as_str()
            .unwrap()
            .contains("`joint` has 2 numbers")
    );
}
