//! Structure-of-arrays transforms, [`LANES`] bones at a time on `wide::f32x8`: the sampling
//! job's shared-time-grid path (see [`crate::asset::KeyGrid`]).
//!
//! Every function here performs the same IEEE operations in the same order as its scalar
//! reference ([`lerp_vec3`](super::lerp_vec3), [`nlerp_shortest`](super::nlerp_shortest),
//! [`LayerSum`](super::LayerSum), [`PoseAccumulator`](super::PoseAccumulator)); dot products
//! group their terms as glam's SSE2 `Vec4::dot` does, `(x·x' + z·z') + (y·y' + w·w')`, and no
//! multiply-add is fused, so the two paths agree to the last bit on x86-64 (the tests allow
//! 1e-6 so that other targets' glam backends may round differently).

use super::Transform;
use glam::{Quat, Vec3};
use wide::f32x8;

/// Bones per SoA block.
pub const LANES: usize = 8;

/// [`LANES`] transforms as structure of arrays: `translation[c]` holds component `c` of every
/// lane, rotations as (x, y, z, w), scales likewise.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SoaTransform {
    /// Translation x, y, z.
    pub translation: [f32x8; 3],
    /// Rotation x, y, z, w.
    pub rotation: [f32x8; 4],
    /// Scale x, y, z.
    pub scale: [f32x8; 3],
}

#[inline(always)]
fn lerp(a: f32x8, b: f32x8, s: f32x8) -> f32x8 {
    a + (b - a) * s
}

/// Lane-wise 4-component dot product, grouped as glam's SSE2 `Vec4::dot`.
#[inline(always)]
pub fn dot4(a: &[f32x8; 4], b: &[f32x8; 4]) -> f32x8 {
    (a[0] * b[0] + a[2] * b[2]) + (a[1] * b[1] + a[3] * b[3])
}

impl SoaTransform {
    /// Up to [`LANES`] transforms; missing lanes are the identity.
    pub fn from_transforms(t: &[Transform]) -> Self {
        let mut a = [[0.0f32; LANES]; 10];
        for l in 0..LANES {
            let x = t.get(l).copied().unwrap_or(Transform::IDENTITY);
            let v = [
                x.translation.x,
                x.translation.y,
                x.translation.z,
                x.rotation.x,
                x.rotation.y,
                x.rotation.z,
                x.rotation.w,
                x.scale.x,
                x.scale.y,
                x.scale.z,
            ];
            for (c, value) in v.into_iter().enumerate() {
                a[c][l] = value;
            }
        }
        let v = a.map(f32x8::from);
        Self {
            translation: [v[0], v[1], v[2]],
            rotation: [v[3], v[4], v[5], v[6]],
            scale: [v[7], v[8], v[9]],
        }
    }

    /// Writes the first `out.len()` (at most [`LANES`]) lanes as transforms.
    #[inline(always)]
    pub fn write_transforms(&self, out: &mut [Transform]) {
        let [tx, ty, tz] = self.translation.map(f32x8::to_array);
        let [rx, ry, rz, rw] = self.rotation.map(f32x8::to_array);
        let [sx, sy, sz] = self.scale.map(f32x8::to_array);
        for (l, o) in out.iter_mut().take(LANES).enumerate() {
            *o = Transform {
                translation: Vec3::new(tx[l], ty[l], tz[l]),
                rotation: Quat::from_xyzw(rx[l], ry[l], rz[l], rw[l]),
                scale: Vec3::new(sx[l], sy[l], sz[l]),
            };
        }
    }

    /// Interpolates between two key rows at fraction `s`: translations and scales lerped,
    /// rotations nlerped along the shortest path (as [`super::nlerp_shortest`]). Lanes whose
    /// bit in `rotation_tracked` is clear take `rest_rotation` (untracked rotations).
    #[inline(always)]
    pub fn lerp_nlerp(
        k0: &Self,
        k1: &Self,
        s: f32,
        rotation_tracked: f32x8,
        rest_rotation: &[f32x8; 4],
    ) -> Self {
        let s = f32x8::splat(s);
        let q0 = &k0.rotation;
        let flip = dot4(q0, &k1.rotation).simd_lt(f32x8::ZERO);
        let q1 = k1.rotation.map(|c| flip.bitselect(-c, c));
        let v = [
            lerp(q0[0], q1[0], s),
            lerp(q0[1], q1[1], s),
            lerp(q0[2], q1[2], s),
            lerp(q0[3], q1[3], s),
        ];
        let len_sq = dot4(&v, &v);
        let ok = len_sq.simd_gt(f32x8::ZERO) & rotation_tracked;
        let inv = f32x8::ONE / len_sq.sqrt();
        // Untracked lanes hold the rest rotation in both keys; a zero-length lerp keeps key 0.
        let fallback = [
            rotation_tracked.bitselect(q0[0], rest_rotation[0]),
            rotation_tracked.bitselect(q0[1], rest_rotation[1]),
            rotation_tracked.bitselect(q0[2], rest_rotation[2]),
            rotation_tracked.bitselect(q0[3], rest_rotation[3]),
        ];
        Self {
            translation: [
                lerp(k0.translation[0], k1.translation[0], s),
                lerp(k0.translation[1], k1.translation[1], s),
                lerp(k0.translation[2], k1.translation[2], s),
            ],
            rotation: [
                ok.bitselect(v[0] * inv, fallback[0]),
                ok.bitselect(v[1] * inv, fallback[1]),
                ok.bitselect(v[2] * inv, fallback[2]),
                ok.bitselect(v[3] * inv, fallback[3]),
            ],
            scale: [
                lerp(k0.scale[0], k1.scale[0], s),
                lerp(k0.scale[1], k1.scale[1], s),
                lerp(k0.scale[2], k1.scale[2], s),
            ],
        }
    }
}

/// The weighted sum of one override layer's animations, [`LANES`] bones at once (the SoA twin
/// of [`super::LayerSum`]; weights are per animation, not per lane: no masks).
#[derive(Clone, Copy, Debug, Default)]
pub struct SoaLayerSum {
    /// Σ wᵢ·poseᵢ, rotations aligned lane by lane to the running sum.
    pub pose: SoaTransform,
    /// Σ wᵢ.
    pub weight: f32,
}

impl SoaLayerSum {
    /// An empty sum.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `pose` with weight `w` (ignored unless `w > 0`).
    #[inline(always)]
    pub fn add(&mut self, pose: &SoaTransform, w: f32) {
        if w.is_nan() || w <= 0.0 {
            return;
        }
        let ws = f32x8::splat(w);
        let q = if self.weight > 0.0 {
            let flip = dot4(&self.pose.rotation, &pose.rotation).simd_lt(f32x8::ZERO);
            pose.rotation.map(|c| flip.bitselect(-c, c))
        } else {
            pose.rotation
        };
        let p = &mut self.pose;
        for c in 0..3 {
            p.translation[c] += pose.translation[c] * ws;
            p.scale[c] += pose.scale[c] * ws;
        }
        for (r, q) in p.rotation.iter_mut().zip(q) {
            *r += q * ws;
        }
        self.weight += w;
    }

    /// Blends this layer over nothing with the layer weight `layer_weight` and completes the
    /// pose from `rest` (what [`super::PoseAccumulator::blend_layer`] followed by
    /// [`super::PoseAccumulator::finish`] computes for a single override layer).
    #[inline(always)]
    pub fn finish_single_layer(&self, layer_weight: f32, rest: &SoaTransform) -> SoaTransform {
        let alpha = (layer_weight * self.weight.min(1.0)).clamp(0.0, 1.0);
        if alpha <= 0.0 || self.weight <= 0.0 {
            return *rest;
        }
        let a = f32x8::splat(alpha * (1.0 / self.weight));
        let zero = f32x8::ZERO;
        let keep = f32x8::splat(1.0 - alpha);
        // acc = 0·keep + sum·a, as the scalar accumulator computes it.
        let mut p = SoaTransform {
            translation: self.pose.translation.map(|c| zero * keep + c * a),
            rotation: self.pose.rotation.map(|c| zero * keep + c * a),
            scale: self.pose.scale.map(|c| zero * keep + c * a),
        };
        let weight = 0.0 * (1.0 - alpha) + alpha;
        let missing = (1.0 - weight).max(0.0);
        if missing >= 1.0 {
            return *rest;
        }
        if missing > 0.0 {
            let m = f32x8::splat(missing);
            let flip = dot4(&p.rotation, &rest.rotation).simd_lt(zero);
            for (r, q) in p.rotation.iter_mut().zip(rest.rotation) {
                *r += flip.bitselect(-q, q) * m;
            }
            for c in 0..3 {
                p.translation[c] += rest.translation[c] * m;
                p.scale[c] += rest.scale[c] * m;
            }
        }
        let len_sq = dot4(&p.rotation, &p.rotation);
        let ok = len_sq.simd_gt(f32x8::splat(1e-12)) & len_sq.is_finite();
        let inv = f32x8::ONE / len_sq.sqrt();
        for (r, q) in p.rotation.iter_mut().zip(rest.rotation) {
            *r = ok.bitselect(*r * inv, q);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::{LayerSum, PoseAccumulator, nlerp_shortest};

    fn poses(seed: u32) -> Vec<Transform> {
        (0..LANES as u32)
            .map(|i| {
                let f = (i * 7 + seed * 13) as f32;
                Transform::new(
                    Vec3::new(f.sin(), f.cos() * 2.0, 0.1 * f),
                    Quat::from_euler(glam::EulerRot::XYZ, f * 0.3, -f * 0.7, f * 1.1),
                    Vec3::new(1.0 + 0.01 * f, 1.0, 0.5),
                )
            })
            .collect()
    }

    #[test]
    fn soa_round_trips_and_nlerp_matches_the_scalar_reference() {
        let (a, b) = (poses(1), poses(2));
        let (sa, sb) = (
            SoaTransform::from_transforms(&a),
            SoaTransform::from_transforms(&b),
        );
        let mut back = [Transform::IDENTITY; LANES];
        sa.write_transforms(&mut back);
        assert_eq!(back.as_slice(), a.as_slice());
        let tracked = f32x8::ZERO.simd_lt(f32x8::ONE);
        for s in [0.0, 0.25, 0.5, 0.99] {
            let m = SoaTransform::lerp_nlerp(&sa, &sb, s, tracked, &sa.rotation);
            m.write_transforms(&mut back);
            for l in 0..LANES {
                let r = nlerp_shortest(a[l].rotation, b[l].rotation, s);
                assert!((back[l].rotation - r).length() <= 1e-6, "{s} {l}");
                let t = a[l].translation + (b[l].translation - a[l].translation) * s;
                assert!((back[l].translation - t).length() <= 1e-6);
            }
        }
    }

    #[test]
    fn soa_blend_matches_the_scalar_accumulator() {
        let (a, b, rest) = (poses(3), poses(4), poses(5));
        let mut sum = SoaLayerSum::new();
        sum.add(&SoaTransform::from_transforms(&a), 0.7);
        sum.add(&SoaTransform::from_transforms(&b), 0.3);
        for lw in [1.0, 0.6, 0.0] {
            let out = sum.finish_single_layer(lw, &SoaTransform::from_transforms(&rest));
            let mut back = [Transform::IDENTITY; LANES];
            out.write_transforms(&mut back);
            for l in 0..LANES {
                let mut s = LayerSum::EMPTY;
                s.add(&a[l], 0.7);
                s.add(&b[l], 0.3);
                let mut acc = PoseAccumulator::EMPTY;
                acc.blend_layer(&s, (lw * s.weight.min(1.0)).clamp(0.0, 1.0));
                let e = acc.finish(&rest[l]);
                assert!((back[l].rotation - e.rotation).length() <= 1e-6, "{lw} {l}");
                assert!((back[l].translation - e.translation).length() <= 1e-6);
                assert!((back[l].scale - e.scale).length() <= 1e-6);
            }
        }
    }
}
