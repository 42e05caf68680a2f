//! The built-in skinned mesh: one closed capsule-like shell per body part, skinned with smooth
//! four-bone weights.
//!
//! Every part is a surface of revolution around a segment `a → b`: a half-ellipsoid cap, a
//! body whose radius goes linearly from `r0` to `r1`, and a second cap, with an elliptical
//! cross-section (`sx`, `sz` scale the two perpendicular axes). Normals come from the gradient
//! of the implicit surface, so they are exact, not averaged. A sphere is a part with `a == b`.
//!
//! Weights: each vertex is weighted to a few candidate bones of its part (itself and its
//! neighbours) by `1 / (d + 2 cm)^4`, `d` being the distance to each bone's rest segment
//! (joint to main child). The weights fall off smoothly and blend across joints; the four
//! largest are kept and renormalised.
//!
//! The mesh's bone list is the rig's bones **sorted by name**, deliberately not the rig order,
//! so the rig → mesh remap path always runs.

use super::rig::{BoneIds, Side, rest_model_space, segment_tips};
use crate::asset::{RawRig, RawSkinnedMesh, RawVertexInfluences};
use glam::{Mat4, Vec3};
use std::f32::consts::{FRAC_PI_2, TAU};

/// Added to the bone distance in the weight falloff, so that a vertex on a segment does not
/// get an infinite weight; also sets how soft the blend is near a joint.
const WEIGHT_SOFTNESS: f32 = 0.02;
/// The power of the inverse-distance falloff.
const WEIGHT_POWER: i32 = 4;

/// One body part.
struct Part {
    /// Bones the part's vertices may be weighted to.
    bones: Vec<usize>,
    /// Axis start and end (model space, rest pose).
    a: Vec3,
    b: Vec3,
    /// Direction of the first cross-section axis (made perpendicular to the segment).
    side_hint: Vec3,
    /// Radius at `a` and at `b`.
    r0: f32,
    r1: f32,
    /// Cross-section scales along the first and second perpendicular axes.
    sx: f32,
    sz: f32,
    /// Lengths of the caps beyond `a` and beyond `b`.
    c0: f32,
    c1: f32,
    /// Vertices around.
    segments: usize,
    /// Body subdivisions between `a` and `b` (ignored for spheres).
    body: usize,
    /// Rings per cap, the last being the cap's equator.
    cap: usize,
}

impl Part {
    fn tube(bones: Vec<usize>, a: Vec3, b: Vec3, r0: f32, r1: f32) -> Self {
        Part {
            bones,
            a,
            b,
            side_hint: Vec3::Y,
            r0,
            r1,
            sx: 1.0,
            sz: 1.0,
            c0: r0,
            c1: r1,
            segments: 16,
            body: 8,
            cap: 3,
        }
    }

    fn hint(mut self, h: Vec3) -> Self {
        self.side_hint = h;
        self
    }

    fn section(mut self, sx: f32, sz: f32) -> Self {
        self.sx = sx;
        self.sz = sz;
        self
    }

    fn caps(mut self, c0: f32, c1: f32) -> Self {
        self.c0 = c0;
        self.c1 = c1;
        self
    }

    fn rings(mut self, segments: usize, body: usize, cap: usize) -> Self {
        self.segments = segments;
        self.body = body.max(1);
        self.cap = cap.max(1);
        self
    }

    /// Appends the part's vertices, normals and triangles.
    fn emit(&self, positions: &mut Vec<Vec3>, normals: &mut Vec<Vec3>, indices: &mut Vec<u32>) {
        let d = self.b - self.a;
        let len = d.length();
        let axis = if len > 1e-6 { d / len } else { Vec3::Y };
        let e1 = (self.side_hint - axis * self.side_hint.dot(axis))
            .normalize_or(axis.any_orthonormal_vector());
        let e2 = axis.cross(e1);
        // Rings as (s along the axis, radius factor, normal's axial component before scaling).
        // Implicit surface (x/sx)^2 + (y/sz)^2 = r(s)^2; its gradient is
        // (cos v / sx, sin v / sz, -r'(s)) up to a positive factor.
        let mut rings: Vec<(f32, f32, f32)> = Vec::new();
        let nc = self.cap;
        for k in 1..=nc {
            let phi = FRAC_PI_2 * k as f32 / nc as f32;
            // s = -c0 cos(phi), r = r0 sin(phi); the gradient scaled by sin(phi).
            rings.push((
                -self.c0 * phi.cos(),
                self.r0 * phi.sin(),
                -(self.r0 / self.c0) * phi.cos() / phi.sin().max(1e-6),
            ));
        }
        if len > 1e-6 {
            let slope = (self.r1 - self.r0) / len;
            for k in 1..self.body {
                let s = len * k as f32 / self.body as f32;
                rings.push((
                    s,
                    self.r0 + (self.r1 - self.r0) * k as f32 / self.body as f32,
                    -slope,
                ));
            }
        }
        let first_far = if len > 1e-6 { nc } else { nc - 1 };
        for k in (1..=first_far).rev() {
            let phi = FRAC_PI_2 * k as f32 / nc as f32;
            rings.push((
                len + self.c1 * phi.cos(),
                self.r1 * phi.sin(),
                (self.r1 / self.c1) * phi.cos() / phi.sin().max(1e-6),
            ));
        }
        let n = self.segments;
        let base = positions.len() as u32;
        // Start pole.
        positions.push(self.a - axis * self.c0);
        normals.push(-axis);
        for &(s, r, ns) in &rings {
            for j in 0..n {
                let v = TAU * j as f32 / n as f32;
                let (sin, cos) = v.sin_cos();
                positions
                    .push(self.a + axis * s + e1 * (r * self.sx * cos) + e2 * (r * self.sz * sin));
                let normal = e1 * (cos / self.sx) + e2 * (sin / self.sz) + axis * ns;
                normals.push(normal.normalize_or(axis));
            }
        }
        let end_pole = positions.len() as u32;
        positions.push(self.a + axis * (len + self.c1));
        normals.push(axis);
        let ring = |i: usize, j: usize| base + 1 + (i * n + j % n) as u32;
        // (e1, e2, axis) is right-handed and v turns from e1 to e2, so (i, j), (i, j+1), (i+1, j)
        // is counter-clockwise seen from outside.
        for j in 0..n {
            indices.extend_from_slice(&[base, ring(0, j + 1), ring(0, j)]);
        }
        for i in 0..rings.len().saturating_sub(1) {
            for j in 0..n {
                indices.extend_from_slice(&[ring(i, j), ring(i, j + 1), ring(i + 1, j)]);
                indices.extend_from_slice(&[ring(i, j + 1), ring(i + 1, j + 1), ring(i + 1, j)]);
            }
        }
        let last = rings.len().saturating_sub(1);
        for j in 0..n {
            indices.extend_from_slice(&[ring(last, j), ring(last, j + 1), end_pole]);
        }
    }
}

/// Distance from `p` to the segment `a → b`.
fn segment_distance(p: Vec3, a: Vec3, b: Vec3) -> f32 {
    let d = b - a;
    let len2 = d.length_squared();
    let t = if len2 > 0.0 {
        ((p - a).dot(d) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    p.distance(a + d * t)
}

/// The body parts in model space, rest pose.
fn parts(rig: &RawRig, ids: &BoneIds) -> Vec<Part> {
    let model = rest_model_space(rig);
    let pos = |i: usize| {
        model
            .get(i)
            .map_or(Vec3::ZERO, |m| Vec3::from(m.translation))
    };
    let tips = segment_tips(rig, ids);
    let tip = |i: usize| tips.get(i).copied().unwrap_or(Vec3::ZERO);
    let [s1, s2, s3] = ids.spine;
    let (l, r) = (ids.side(Side::Left), ids.side(Side::Right));
    let mut parts = vec![
        // Pelvis: wide, flattened front to back.
        Part::tube(
            vec![ids.hips, s1],
            Vec3::new(0.0, 0.84, 0.0),
            Vec3::new(0.0, 1.0, 0.0),
            0.15,
            0.14,
        )
        .hint(Vec3::X)
        .section(1.0, 0.72)
        .caps(0.06, 0.03)
        .rings(24, 4, 3),
        // Torso from the waist to the shoulders.
        Part::tube(
            vec![
                ids.hips, s1, s2, s3, ids.chest, ids.neck, l.clavicle, r.clavicle,
            ],
            Vec3::new(0.0, 1.0, 0.0),
            Vec3::new(0.0, 1.44, 0.0),
            0.14,
            0.17,
        )
        .hint(Vec3::X)
        .section(1.0, 0.65)
        .caps(0.03, 0.07)
        .rings(24, 12, 3),
        Part::tube(
            vec![ids.chest, ids.neck, ids.head],
            Vec3::new(0.0, 1.44, 0.0),
            Vec3::new(0.0, 1.62, 0.0),
            0.055,
            0.05,
        )
        .hint(Vec3::X)
        .caps(0.02, 0.02)
        .rings(16, 4, 2),
        // Head: an ellipsoid (a sphere part) around the skull centre.
        Part::tube(
            vec![ids.neck, ids.head],
            pos(ids.head) + Vec3::new(0.0, 0.085, 0.015),
            pos(ids.head) + Vec3::new(0.0, 0.085, 0.015),
            0.105,
            0.105,
        )
        .hint(Vec3::X)
        .section(0.9, 1.0)
        .caps(0.115, 0.115)
        .rings(24, 1, 8),
        Part::tube(
            vec![ids.head, ids.jaw],
            pos(ids.jaw),
            tip(ids.jaw),
            0.045,
            0.03,
        )
        .hint(Vec3::X)
        .section(1.0, 0.7)
        .rings(12, 2, 2),
    ];
    for eye in ids.eyes {
        parts.push(
            Part::tube(vec![eye], pos(eye), pos(eye), 0.018, 0.018)
                .hint(Vec3::X)
                .rings(8, 1, 2),
        );
    }
    for side in Side::BOTH {
        let s = ids.side(side);
        let sv = |v: Vec3| side.vec(v);
        parts.push(
            Part::tube(
                vec![ids.chest, s.clavicle, s.upperarm],
                pos(s.clavicle),
                pos(s.upperarm) + sv(Vec3::new(0.02, 0.0, 0.0)),
                0.05,
                0.055,
            )
            .section(1.0, 0.9)
            .rings(12, 2, 2),
        );
        parts.push(Part::tube(
            vec![s.clavicle, s.upperarm, s.lowerarm],
            pos(s.upperarm),
            pos(s.lowerarm),
            0.05,
            0.04,
        ));
        parts.push(Part::tube(
            vec![s.upperarm, s.lowerarm, s.hand],
            pos(s.lowerarm),
            pos(s.hand),
            0.04,
            0.03,
        ));
        // Hand: a flat box-ish palm, thin along Y (the palm faces down in the T-pose).
        parts.push(
            Part::tube(
                vec![
                    s.lowerarm,
                    s.hand,
                    s.fingers[0][0],
                    s.fingers[1][0],
                    s.fingers[2][0],
                ],
                pos(s.hand),
                pos(s.hand) + sv(Vec3::new(0.085, 0.0, 0.0)),
                0.045,
                0.045,
            )
            .section(0.45, 1.0)
            .caps(0.02, 0.02)
            .rings(16, 4, 3),
        );
        for (f, chain) in s.fingers.iter().enumerate() {
            let radius = if f == 0 { 0.013 } else { 0.011 };
            for (j, &bone) in chain.iter().enumerate() {
                let parent = if j == 0 { s.hand } else { chain[j - 1] };
                let mut bones = vec![parent, bone];
                if let Some(&child) = chain.get(j + 1) {
                    bones.push(child);
                }
                parts.push(
                    Part::tube(bones, pos(bone), tip(bone), radius, radius * 0.9)
                        .caps(0.006, 0.006)
                        .rings(8, 2, 2),
                );
            }
        }
        parts.push(
            Part::tube(
                vec![ids.hips, s.thigh, s.shin],
                pos(s.thigh),
                pos(s.shin),
                0.08,
                0.055,
            )
            .hint(Vec3::X)
            .rings(16, 10, 3),
        );
        parts.push(
            Part::tube(
                vec![s.thigh, s.shin, s.foot],
                pos(s.shin),
                pos(s.foot),
                0.055,
                0.04,
            )
            .hint(Vec3::X)
            .rings(16, 10, 3),
        );
        parts.push(
            Part::tube(
                vec![s.shin, s.foot, s.toe],
                pos(s.foot) + Vec3::new(0.0, -0.025, -0.03),
                pos(s.toe) + Vec3::new(0.0, 0.02, -0.01),
                0.04,
                0.04,
            )
            .hint(Vec3::X)
            .section(1.1, 0.9)
            .caps(0.03, 0.02)
            .rings(16, 4, 3),
        );
        parts.push(
            Part::tube(
                vec![s.foot, s.toe],
                pos(s.toe) + Vec3::new(0.0, 0.01, 0.0),
                tip(s.toe),
                0.03,
                0.028,
            )
            .hint(Vec3::X)
            .section(1.3, 0.7)
            .caps(0.01, 0.015)
            .rings(12, 2, 2),
        );
    }
    parts
}

/// Builds the mesh for `rig` (raw bone order as built by `rig::build`).
pub(crate) fn build(rig: &RawRig, ids: &BoneIds) -> RawSkinnedMesh {
    let model = rest_model_space(rig);
    let tips = segment_tips(rig, ids);
    // Mesh bone order: sorted by name, so it differs from the rig's.
    let mut order: Vec<usize> = (0..rig.bones.len()).collect();
    order.sort_by(|&x, &y| rig.bones[x].name.cmp(&rig.bones[y].name));
    let mut mesh_index = vec![0u16; rig.bones.len()];
    for (m, &raw) in order.iter().enumerate() {
        mesh_index[raw] = m as u16;
    }
    let bones: Vec<(String, Mat4)> = order
        .iter()
        .map(|&i| {
            let inverse_bind = model
                .get(i)
                .map_or(Mat4::IDENTITY, |m| Mat4::from(m.inverse()));
            (rig.bones[i].name.clone(), inverse_bind)
        })
        .collect();

    let mut positions = Vec::with_capacity(5000);
    let mut normals = Vec::with_capacity(5000);
    let mut indices = Vec::with_capacity(30000);
    let mut influences = Vec::with_capacity(5000);
    for part in parts(rig, ids) {
        let first = positions.len();
        part.emit(&mut positions, &mut normals, &mut indices);
        for p in &positions[first..] {
            let mut w: Vec<(usize, f32)> = part
                .bones
                .iter()
                .map(|&bone| {
                    let a = model
                        .get(bone)
                        .map_or(Vec3::ZERO, |m| Vec3::from(m.translation));
                    let b = tips.get(bone).copied().unwrap_or(a);
                    (
                        bone,
                        (segment_distance(*p, a, b) + WEIGHT_SOFTNESS).powi(-WEIGHT_POWER),
                    )
                })
                .collect();
            w.sort_by(|x, y| y.1.total_cmp(&x.1));
            w.truncate(4);
            let sum: f32 = w.iter().map(|x| x.1).sum();
            influences.push(RawVertexInfluences(
                w.iter()
                    .map(|&(bone, x)| (mesh_index[bone], x / sum))
                    .collect(),
            ));
        }
    }
    RawSkinnedMesh {
        name: "sinew builtin character".into(),
        bones,
        positions,
        normals,
        influences,
        indices,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asset::SkinnedMesh;
    use crate::builtin::rig;

    fn mesh() -> (RawSkinnedMesh, SkinnedMesh) {
        let (raw_rig, ids) = rig::build();
        let raw = build(&raw_rig, &ids);
        let baked = raw.bake().unwrap();
        (raw, baked)
    }

    #[test]
    fn counts_weights_and_indices_are_valid() {
        let (_, m) = mesh();
        let nv = m.positions().len();
        assert!((3000..=6000).contains(&nv), "{nv} vertices");
        assert_eq!(m.normals().len(), nv);
        assert_eq!(m.indices().len() % 3, 0);
        assert!(m.indices().iter().all(|&i| (i as usize) < nv));
        assert_eq!(
            m.renormalized_vertices(),
            0,
            "weights are normalised before bake"
        );
        assert!(m.joints_extra().is_empty(), "at most four influences");
        for (v, w) in m.weights().iter().enumerate() {
            let sum: f32 = w.iter().sum();
            assert!((sum - 1.0).abs() < 1e-5, "vertex {v}: {sum}");
            assert!(w.iter().all(|&x| (0.0..=1.0).contains(&x)));
        }
        for n in m.normals() {
            assert!((n.length() - 1.0).abs() < 1e-5);
        }
    }

    #[test]
    fn triangles_wind_counter_clockwise_around_outward_normals() {
        let (_, m) = mesh();
        let (p, n) = (m.positions(), m.normals());
        let mut worst: f32 = 1.0;
        for t in m.indices().chunks_exact(3) {
            let [a, b, c] = [t[0] as usize, t[1] as usize, t[2] as usize];
            let face = (p[b] - p[a]).cross(p[c] - p[a]);
            assert!(face.length() > 1e-10, "degenerate triangle {t:?}");
            let dot = face.normalize().dot((n[a] + n[b] + n[c]).normalize());
            worst = worst.min(dot);
        }
        // Faces agree with their vertex normals (a second, independent normal): the smallest
        // cosine is well above 0 (the coarsest cap rings give the largest difference).
        assert!(worst > 0.5, "worst face/vertex normal cosine {worst}");
    }

    #[test]
    fn normals_match_area_weighted_face_normals_and_point_away_from_the_part_axis() {
        let (raw_rig, ids) = rig::build();
        let mut positions = Vec::new();
        let mut normals = Vec::new();
        let mut indices = Vec::new();
        for part in parts(&raw_rig, &ids) {
            let first = positions.len();
            part.emit(&mut positions, &mut normals, &mut indices);
            for (p, n) in positions[first..].iter().zip(&normals[first..]) {
                let d = part.b - part.a;
                let s = if d.length_squared() > 0.0 {
                    ((*p - part.a).dot(d) / d.length_squared()).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                let out = *p - (part.a + d * s);
                assert!(out.dot(*n) > 0.0, "normal {n} at {p} points inward");
            }
        }
        // The analytic normals against the average of the adjacent faces' normals.
        let mut acc = vec![Vec3::ZERO; positions.len()];
        for t in indices.chunks_exact(3) {
            let [a, b, c] = [t[0] as usize, t[1] as usize, t[2] as usize];
            let face = (positions[b] - positions[a]).cross(positions[c] - positions[a]);
            for v in [a, b, c] {
                acc[v] += face;
            }
        }
        let mut sum = 0.0;
        for (a, n) in acc.iter().zip(&normals) {
            let cos = a.normalize().dot(*n);
            assert!(cos > 0.8, "analytic and face normals differ: cos {cos}");
            sum += cos;
        }
        let mean = sum / normals.len() as f32;
        assert!(mean > 0.99, "mean cosine {mean}");
    }

    #[test]
    fn forearm_vertices_follow_the_lower_arm_and_the_elbow_blends() {
        let (raw_rig, _) = rig::build();
        let (raw, m) = mesh();
        let names: Vec<&str> = raw.bones.iter().map(|b| b.0.as_str()).collect();
        let lower = names.iter().position(|&n| n == "lowerarm_l").unwrap() as u32;
        let upper = names.iter().position(|&n| n == "upperarm_l").unwrap() as u32;
        let model = rest_model_space(&raw_rig);
        let x_of = |name: &str| {
            model[raw_rig.bones.iter().position(|b| b.name == name).unwrap()]
                .translation
                .x
        };
        let (elbow, wrist) = (x_of("lowerarm_l"), x_of("hand_l"));
        let weight_of = |v: usize, bone: u32| -> f32 {
            (0..4)
                .filter(|&k| m.joints()[v][k] == bone)
                .map(|k| m.weights()[v][k])
                .sum()
        };
        let near = |v: &Vec3, x: f32| {
            (v.x - x).abs() < 0.015 && (v.y - 1.45).abs() < 0.06 && v.z.abs() < 0.06
        };
        // Middle of the forearm: mostly the lower arm.
        let mid: Vec<usize> = (0..m.positions().len())
            .filter(|&v| near(&m.positions()[v], 0.5 * (elbow + wrist)))
            .collect();
        assert!(!mid.is_empty());
        for &v in &mid {
            assert!(
                weight_of(v, lower) > 0.9,
                "forearm vertex {v}: {}",
                weight_of(v, lower)
            );
        }
        // At the elbow, upper and lower arm share the vertex.
        let at_elbow: Vec<usize> = (0..m.positions().len())
            .filter(|&v| near(&m.positions()[v], elbow))
            .collect();
        assert!(!at_elbow.is_empty());
        for &v in &at_elbow {
            let (u, l) = (weight_of(v, upper), weight_of(v, lower));
            assert!(u > 0.2 && l > 0.2, "elbow vertex {v}: upper {u} lower {l}");
        }
    }

    #[test]
    fn inverse_binds_undo_the_rest_pose() {
        let (raw_rig, _) = rig::build();
        let (raw, _) = mesh();
        let model = rest_model_space(&raw_rig);
        for (name, inv) in &raw.bones {
            let i = raw_rig.bones.iter().position(|b| &b.name == name).unwrap();
            let product = Mat4::from(model[i]) * *inv;
            assert!(product.abs_diff_eq(Mat4::IDENTITY, 1e-5), "{name}");
        }
    }
}
