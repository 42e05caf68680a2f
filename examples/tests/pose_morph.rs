//! The `pose` example's output with morph targets, against values computed here from the
//! files' contents by the glTF formulas: skinned primitives `Σ wᵢ · Mᵢ · (p_bind + Σₖ mₖ Δₖ)`,
//! unskinned morphed nodes `nodeWorld · (p_bind + Σₖ mₖ Δₖ)`, weights the clip's, else
//! `node.weights`, else `mesh.weights`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests unwrap: a failure is the test failing

mod common;

use glam::{Mat4, Vec3};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn pose_binary() -> PathBuf {
    common::example_binary("pose")
}

fn pose(file: &str, clip: &str, time: f32) -> Value {
    let path = sinew_fixtures::asset_path(format!("gltf/{file}")).unwrap();
    let out = Command::new(pose_binary())
        .arg(&path)
        .args(["--clip", clip, "--time", &time.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn positions(primitive: &Value) -> Vec<Vec3> {
    let flat: Vec<f32> = primitive["positions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    flat.chunks(3).map(Vec3::from_slice).collect()
}

fn assert_close(got: &[Vec3], want: &[Vec3], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (v, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (*g - *w).length() <= 1e-5 * (1.0 + w.length()),
            "{what} vertex {v}: {g} vs {w}"
        );
    }
}

#[test]
fn an_unskinned_morphed_node_is_listed_with_its_animated_weights() {
    // SimpleMorph: base (0,0,0), (1,0,0), (0.5,0.5,0); target 0 moves vertex 2 by (-1,1,0),
    // target 1 by (1,1,0); weight keys at t = 0..4: (0,0), (0,1), (1,1), (1,0), (0,0).
    for (t, m) in [
        (0.0, [0.0, 0.0]),
        (1.5, [0.5, 1.0]),
        (2.25, [1.0, 0.75]),
        (3.5, [0.5, 0.0]),
    ] {
        let json = pose("SimpleMorph.gltf", "0", t);
        let prims = json["primitives"].as_array().unwrap();
        assert_eq!(prims.len(), 1, "the morphed node is listed");
        assert_eq!(
            (prims[0]["node"].as_u64(), prims[0]["mesh"].as_u64()),
            (Some(0), Some(0))
        );
        let v2 = Vec3::new(0.5, 0.5, 0.0)
            + Vec3::new(-1.0, 1.0, 0.0) * m[0]
            + Vec3::new(1.0, 1.0, 0.0) * m[1];
        assert_close(
            &positions(&prims[0]),
            &[Vec3::ZERO, Vec3::X, v2],
            &format!("t = {t}"),
        );
    }
}

#[test]
fn skinned_primitives_are_morphed_before_skinning() {
    // SkinnedMorph.glb (the file of jobs/tests/morph.rs): joint "arm" at (0, 2, 0) turning
    // about z (0°, 90°, 180° at t = 0, 1, 2), inverse bind T(0, −2, 0); node "body" (node 2)
    // with weights animated through (0, 1), (1, 0), (0.5, 0.5); node "ghost" (node 3) without
    // weights, so the mesh's (0.25, 0.75).
    let base = [
        Vec3::ZERO,
        Vec3::X,
        Vec3::new(0.0, 2.0, 0.0),
        Vec3::new(1.0, 2.0, 0.0),
    ];
    let d0 = [
        Vec3::new(0., 0., 0.5),
        Vec3::new(0., 0., 0.5),
        Vec3::ZERO,
        Vec3::new(0.25, 0., 0.),
    ];
    let d1 = [
        Vec3::new(0.1, 0., 0.),
        Vec3::new(0., 0.2, 0.),
        Vec3::new(0., 0., 0.3),
        Vec3::ZERO,
    ];
    // (joint, weight) per vertex.
    let influences: [&[(usize, f32)]; 4] =
        [&[(0, 1.0)], &[(0, 0.5), (1, 0.5)], &[(1, 1.0)], &[(1, 1.0)]];
    for t in [0.5f32, 1.5] {
        let json = pose("SkinnedMorph.glb", "bend and morph", t);
        let prims = json["primitives"].as_array().unwrap();
        assert_eq!(prims.len(), 2);
        let s = if t < 1.0 { t } else { t - 1.0 };
        let body = if t < 1.0 {
            [s, 1.0 - s]
        } else {
            [1.0 - 0.5 * s, 0.5 * s]
        };
        let angle = 90f32.to_radians() * t;
        let arm = Mat4::from_translation(Vec3::new(0., 2., 0.))
            * Mat4::from_rotation_z(angle)
            * Mat4::from_translation(Vec3::new(0., -2., 0.));
        let joints = [Mat4::IDENTITY, arm];
        for (prim, m, node) in [(&prims[0], body, 2), (&prims[1], [0.25, 0.75], 3)] {
            assert_eq!(prim["node"].as_u64(), Some(node));
            let want: Vec<Vec3> = (0..4)
                .map(|v| {
                    let p = base[v] + d0[v] * m[0] + d1[v] * m[1];
                    influences[v]
                        .iter()
                        .map(|(j, w)| joints[*j].transform_point3(p) * *w)
                        .sum()
                })
                .collect();
            assert_close(&positions(prim), &want, &format!("node {node} t = {t}"));
        }
    }
}
