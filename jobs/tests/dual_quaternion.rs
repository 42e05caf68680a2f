//! Dual-quaternion skinning against linear blend skinning: equal for one influence, and the
//! 180° twist of a two-bone cylinder, whose cross-sections LBS collapses and DQS keeps (areas
//! measured with the shoelace formula on each skinned ring).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use glam::{Affine3A, EulerRot, Mat3, Mat4, Quat, Vec3};
use sinew_jobs::asset::{RawSkinnedMesh, RawVertexInfluences, SkinnedMesh, SkinningMethod};

const RINGS: usize = 21;
const SIDES: usize = 32;

/// A cylinder of radius 1 along x from 0 to 2, `RINGS` rings of `SIDES` vertices; bone "a" at
/// the origin, bone "b" at x = 1, weights ramping linearly from a to b between x = 0.5 and 1.5.
fn cylinder(skinning: SkinningMethod) -> SkinnedMesh {
    let mut positions = Vec::new();
    let mut influences = Vec::new();
    for r in 0..RINGS {
        let x = 2.0 * r as f32 / (RINGS - 1) as f32;
        let wb = (x - 0.5).clamp(0.0, 1.0);
        for s in 0..SIDES {
            let a = std::f32::consts::TAU * s as f32 / SIDES as f32;
            positions.push(Vec3::new(x, a.cos(), a.sin()));
            let mut list = Vec::new();
            if wb < 1.0 {
                list.push((0, 1.0 - wb));
            }
            if wb > 0.0 {
                list.push((1, wb));
            }
            influences.push(RawVertexInfluences(list));
        }
    }
    RawSkinnedMesh {
        name: "cylinder".into(),
        bones: vec![
            ("a".into(), Mat4::IDENTITY),
            (
                "b".into(),
                Mat4::from_translation(Vec3::new(-1.0, 0.0, 0.0)),
            ),
        ],
        positions,
        influences,
        skinning,
        ..Default::default()
    }
    .bake()
    .unwrap()
}

/// Bone b twisted by 180° about the cylinder's axis.
fn twist_palette() -> Vec<[f32; 12]> {
    let b = Affine3A::from_translation(Vec3::X)
        * Affine3A::from_rotation_x(std::f32::consts::PI)
        * Affine3A::from_translation(-Vec3::X);
    vec![Affine3A::IDENTITY.to_cols_array(), b.to_cols_array()]
}

/// Area of each skinned ring, projected on the plane across the axis (shoelace formula).
fn ring_areas(positions: &[Vec3]) -> Vec<f32> {
    positions
        .chunks(SIDES)
        .map(|ring| {
            let mut twice = 0.0;
            for s in 0..SIDES {
                let (p, q) = (ring[s], ring[(s + 1) % SIDES]);
                twice += p.y * q.z - q.y * p.z;
            }
            (0.5 * twice).abs()
        })
        .collect()
}

#[test]
fn a_180_degree_twist_keeps_the_cross_section_with_dqs_and_collapses_it_with_lbs() {
    let rest = ring_areas(cylinder(SkinningMethod::Linear).positions());
    // A regular 32-gon of radius 1.
    let polygon = 0.5 * SIDES as f32 * (std::f32::consts::TAU / SIDES as f32).sin();
    assert!(rest.iter().all(|a| (a - polygon).abs() < 1e-4));
    let (lbs, _) = cylinder(SkinningMethod::Linear).skin_cpu(&twist_palette());
    let (dqs, _) = cylinder(SkinningMethod::DualQuaternion).skin_cpu(&twist_palette());
    let (lbs, dqs) = (ring_areas(&lbs), ring_areas(&dqs));
    for r in 0..RINGS {
        let ratio = dqs[r] / rest[r];
        assert!(
            (ratio - 1.0).abs() < 0.05,
            "DQS ring {r}: area ratio {ratio}"
        );
        // LBS: yz' = (w_a − w_b) · yz, so the area scales by (w_a − w_b)².
        let x = 2.0 * r as f32 / (RINGS - 1) as f32;
        let wb = (x - 0.5).clamp(0.0, 1.0);
        let want = (1.0 - 2.0 * wb).powi(2);
        assert!(
            (lbs[r] / rest[r] - want).abs() < 1e-4,
            "LBS ring {r}: {} vs {want}",
            lbs[r] / rest[r]
        );
    }
    // The middle ring (x = 1, half and half): LBS collapses it to a point, DQS turns it 90°.
    let mid = RINGS / 2;
    assert!(
        lbs[mid] / rest[mid] < 1e-6,
        "LBS middle ring keeps {}",
        lbs[mid] / rest[mid]
    );
    assert!((dqs[mid] / rest[mid] - 1.0).abs() < 1e-4);
    let min_lbs = lbs.iter().copied().fold(f32::MAX, f32::min) / rest[mid];
    let min_dqs = dqs.iter().copied().fold(f32::MAX, f32::min) / rest[mid];
    eprintln!("smallest cross-section / rest: LBS {min_lbs:.6}, DQS {min_dqs:.6}");
}

/// A palette entry with rotation, non-uniform scale, shear and translation.
fn general_entry(k: usize) -> [f32; 12] {
    let f = k as f32;
    let mut l = Mat3::from_quat(Quat::from_euler(EulerRot::XYZ, 0.3 + f, -1.1 * f, 2.0 - f))
        * Mat3::from_diagonal(Vec3::new(1.5 + 0.1 * f, 0.7, 1.2 - 0.05 * f));
    l.y_axis += l.x_axis * 0.2;
    Affine3A::from_mat3_translation(l, Vec3::new(f, -2.0 * f, 0.5)).to_cols_array()
}

#[test]
fn dqs_equals_lbs_for_vertices_with_one_influence() {
    let bones = 5;
    let mut positions = Vec::new();
    let mut influences = Vec::new();
    let mut normals = Vec::new();
    for v in 0..40u16 {
        let f = f32::from(v);
        positions.push(Vec3::new(
            0.1 * f - 2.0,
            (0.37 * f).sin() * 3.0,
            (0.11 * f).cos(),
        ));
        normals.push(Vec3::new((0.3 * f).cos(), 1.0, (0.7 * f).sin()).normalize());
        influences.push(RawVertexInfluences(vec![(v % bones, 1.0)]));
    }
    let raw = |skinning| RawSkinnedMesh {
        name: "single influences".into(),
        bones: (0..bones)
            .map(|b| (format!("b{b}"), Mat4::IDENTITY))
            .collect(),
        positions: positions.clone(),
        normals: normals.clone(),
        influences: influences.clone(),
        skinning,
        ..Default::default()
    };
    let palette: Vec<[f32; 12]> = (0..usize::from(bones)).map(general_entry).collect();
    let (lp, ln) = raw(SkinningMethod::Linear)
        .bake()
        .unwrap()
        .skin_cpu(&palette);
    let (dp, dn) = raw(SkinningMethod::DualQuaternion)
        .bake()
        .unwrap()
        .skin_cpu(&palette);
    for v in 0..positions.len() {
        // And against the matrix itself, computed here.
        let m = Affine3A::from_cols_array(&palette[v % usize::from(bones)]);
        let want = m.transform_point3(positions[v]);
        assert!((lp[v] - want).length() <= 1e-5 * (1.0 + want.length()));
        assert!(
            (dp[v] - lp[v]).length() <= 1e-5 * (1.0 + lp[v].length()),
            "vertex {v}: {} vs {}",
            dp[v],
            lp[v]
        );
        assert!(
            (dn[v] - ln[v]).length() <= 1e-5,
            "normal {v}: {} vs {}",
            dn[v],
            ln[v]
        );
    }
}
