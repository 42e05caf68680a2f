//! Dual-quaternion skinning with scale: the CPU reference that `skinning.wgsl`'s
//! `dqs_*` functions mirror operation for operation.
//!
//! Each palette entry `A = [L | t]` (float3x4) is split into a rigid part and a scale/shear
//! part, `L = Q · U`, by Gram–Schmidt on the columns of `L` (`Q` a proper rotation, `U = Qᵀ·L`
//! the rest: scale and shear, a reflection folded in as a negative entry). A vertex is first
//! moved by the linear blend of the `U`s (scale blended apart from the rigid part, as Kavan et
//! al. and Rukhanka do), then by the normalised blend of the rigid parts as dual quaternions,
//! each flipped into the hemisphere of the first influence's rotation (antipodal quaternions
//! are the same rotation, and blending `q` with `−q` would cancel it). Gram–Schmidt rather
//! than an iterative polar decomposition: exact (`Q·U = L` to rounding), branch-light on the
//! GPU, and equal to the polar rotation when the scale is axis-aligned in bone space, which is
//! what TRS rigs produce.

use glam::{Mat3, Quat, Vec3};

/// Column lengths below this are treated as zero (a bone scaled to nothing).
const TINY: f32 = 1e-20;

/// One palette entry split for blending: rotation quaternion, its dual part (translation),
/// and the scale/shear matrix applied before them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DualQuatBone {
    /// Rotation (unit quaternion, `xyzw`).
    pub real: Quat,
    /// Dual part: `½ · (0, t) · real`.
    pub dual: Quat,
    /// Scale and shear (`Qᵀ · L`).
    pub scale: Mat3,
}

/// A unit vector orthogonal to unit `x`.
fn any_orthogonal(x: Vec3) -> Vec3 {
    let axis = if x.x.abs() < 0.9 { Vec3::X } else { Vec3::Y };
    x.cross(axis).normalize()
}

/// Rotation matrix (columns `x`, `y`, `z`) to a unit quaternion (Shepperd's method: the branch
/// with the largest diagonal term, so the square root never sees a small argument).
fn quat_from_columns(x: Vec3, y: Vec3, z: Vec3) -> Quat {
    let (m00, m11, m22) = (x.x, y.y, z.z);
    let trace = m00 + m11 + m22;
    let q = if trace > 0.0 {
        let s = (trace + 1.0).sqrt() * 2.0;
        Quat::from_xyzw((y.z - z.y) / s, (z.x - x.z) / s, (x.y - y.x) / s, 0.25 * s)
    } else if m00 > m11 && m00 > m22 {
        let s = (1.0 + m00 - m11 - m22).sqrt() * 2.0;
        Quat::from_xyzw(0.25 * s, (y.x + x.y) / s, (z.x + x.z) / s, (y.z - z.y) / s)
    } else if m11 > m22 {
        let s = (1.0 + m11 - m00 - m22).sqrt() * 2.0;
        Quat::from_xyzw((y.x + x.y) / s, 0.25 * s, (z.y + y.z) / s, (z.x - x.z) / s)
    } else {
        let s = (1.0 + m22 - m00 - m11).sqrt() * 2.0;
        Quat::from_xyzw((z.x + x.z) / s, (z.y + y.z) / s, 0.25 * s, (x.y - y.x) / s)
    };
    q.normalize()
}

/// Quaternion product `a · b`, written out (the WGSL mirrors it term for term).
fn qmul(a: Quat, b: Quat) -> Quat {
    let (av, bv) = (Vec3::new(a.x, a.y, a.z), Vec3::new(b.x, b.y, b.z));
    let v = bv * a.w + av * b.w + av.cross(bv);
    Quat::from_xyzw(v.x, v.y, v.z, a.w * b.w - av.dot(bv))
}

/// Splits a float3x4 palette entry (column-major) into rotation, dual part and scale/shear.
pub fn decompose(entry: &[f32; 12]) -> DualQuatBone {
    let c0 = Vec3::new(entry[0], entry[1], entry[2]);
    let c1 = Vec3::new(entry[3], entry[4], entry[5]);
    let c2 = Vec3::new(entry[6], entry[7], entry[8]);
    let t = Vec3::new(entry[9], entry[10], entry[11]);
    let l0 = c0.length();
    let x = if l0 > TINY { c0 / l0 } else { Vec3::X };
    let y_raw = c1 - x * x.dot(c1);
    let l1 = y_raw.length();
    let y = if l1 > TINY {
        y_raw / l1
    } else {
        any_orthogonal(x)
    };
    let z = x.cross(y);
    let real = quat_from_columns(x, y, z);
    let dual = qmul(Quat::from_xyzw(t.x, t.y, t.z, 0.0), real) * 0.5;
    // U = Qᵀ · L, column by column.
    let col = |c: Vec3| Vec3::new(x.dot(c), y.dot(c), z.dot(c));
    DualQuatBone {
        real,
        dual,
        scale: Mat3::from_cols(col(c0), col(c1), col(c2)),
    }
}

/// A running dual-quaternion blend of one vertex's influences.
#[derive(Clone, Copy, Debug)]
pub struct DualQuatBlend {
    real: Quat,
    dual: Quat,
    scale: Mat3,
    pivot: Option<Quat>,
}

impl Default for DualQuatBlend {
    fn default() -> Self {
        Self {
            real: Quat::from_xyzw(0.0, 0.0, 0.0, 0.0),
            dual: Quat::from_xyzw(0.0, 0.0, 0.0, 0.0),
            scale: Mat3::ZERO,
            pivot: None,
        }
    }
}

impl DualQuatBlend {
    /// Adds `w ·` bone; the first bone added fixes the hemisphere the others are flipped into.
    pub fn add(&mut self, bone: &DualQuatBone, w: f32) {
        let pivot = *self.pivot.get_or_insert(bone.real);
        let s = if pivot.dot(bone.real) < 0.0 { -w } else { w };
        self.real += bone.real * s;
        self.dual += bone.dual * s;
        self.scale += bone.scale * w;
    }

    /// The blended transform of a point.
    pub fn transform_point(&self, p: Vec3) -> Vec3 {
        let (r, d) = self.normalized();
        let ps = self.scale * p;
        let rv = Vec3::new(r.x, r.y, r.z);
        let dv = Vec3::new(d.x, d.y, d.z);
        let rotated = ps + 2.0 * rv.cross(rv.cross(ps) + ps * r.w);
        let t = 2.0 * (dv * r.w - rv * d.w + rv.cross(dv));
        rotated + t
    }

    /// The blended linear part applied to a direction (scale/shear, then rotation), not
    /// renormalised.
    pub fn transform_vector(&self, n: Vec3) -> Vec3 {
        let (r, _) = self.normalized();
        let ns = self.scale * n;
        let rv = Vec3::new(r.x, r.y, r.z);
        ns + 2.0 * rv.cross(rv.cross(ns) + ns * r.w)
    }

    /// Real and dual parts divided by the real part's length (the identity when nothing was
    /// added or the blend cancelled out).
    fn normalized(&self) -> (Quat, Quat) {
        let len = self.real.length();
        if len > TINY {
            (self.real / len, self.dual / len)
        } else {
            (Quat::IDENTITY, Quat::from_xyzw(0.0, 0.0, 0.0, 0.0))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use glam::Affine3A;

    fn entry(a: Affine3A) -> [f32; 12] {
        a.to_cols_array()
    }

    #[test]
    fn one_bone_reproduces_its_matrix() {
        // Rotation, non-uniform scale, shear and a reflection: Q·U must give L back.
        let mut l = glam::Mat3::from_quat(Quat::from_euler(glam::EulerRot::XYZ, 0.3, -1.2, 2.5))
            * glam::Mat3::from_diagonal(Vec3::new(2.0, 0.5, -1.5));
        l.y_axis += l.x_axis * 0.25;
        let a = Affine3A::from_mat3_translation(l, Vec3::new(1.0, -2.0, 3.0));
        let b = decompose(&entry(a));
        let mut blend = DualQuatBlend::default();
        blend.add(&b, 1.0);
        for p in [Vec3::ZERO, Vec3::X, Vec3::new(0.3, -0.7, 2.0)] {
            let want = a.transform_point3(p);
            assert!((blend.transform_point(p) - want).length() < 1e-5, "{p}");
        }
    }

    #[test]
    fn antipodal_rotations_are_flipped_before_blending() {
        // ±170° about X: blended half and half, the shortest path is 180° about X. Without
        // the flip the quaternions (cos 85°, ±sin 85° x) would sum to a rotation of 0°.
        let a = decompose(&entry(Affine3A::from_rotation_x(170f32.to_radians())));
        let b = decompose(&entry(Affine3A::from_rotation_x(-170f32.to_radians())));
        let mut blend = DualQuatBlend::default();
        blend.add(&a, 0.5);
        blend.add(&b, 0.5);
        let p = blend.transform_point(Vec3::Y);
        assert!((p - Vec3::NEG_Y).length() < 1e-5, "{p}");
    }
}
