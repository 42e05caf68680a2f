use glam::{Affine3A, Mat3A, Mat4, Quat, Vec3, Vec3A, Vec4};

/// A local transform: translation, rotation (unit quaternion) and scale, applied as
/// `T * R * S` (scale first).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transform {
    /// Translation.
    pub translation: Vec3,
    /// Rotation, a unit quaternion.
    pub rotation: Quat,
    /// Per-axis scale.
    pub scale: Vec3,
}

impl Default for Transform {
    fn default() -> Self {
        Self::IDENTITY
    }
}

impl Transform {
    /// The identity transform.
    pub const IDENTITY: Self = Self {
        translation: Vec3::ZERO,
        rotation: Quat::IDENTITY,
        scale: Vec3::ONE,
    };

    /// A pure translation.
    pub fn from_translation(translation: Vec3) -> Self {
        Self {
            translation,
            ..Self::IDENTITY
        }
    }

    /// A pure rotation.
    pub fn from_rotation(rotation: Quat) -> Self {
        Self {
            rotation,
            ..Self::IDENTITY
        }
    }

    /// Translation, rotation and scale.
    pub fn new(translation: Vec3, rotation: Quat, scale: Vec3) -> Self {
        Self {
            translation,
            rotation,
            scale,
        }
    }

    /// The affine matrix `T * R * S`.
    #[inline]
    pub fn to_affine(&self) -> Affine3A {
        Affine3A::from_scale_rotation_translation(self.scale, self.rotation, self.translation)
    }

    /// The 4x4 matrix `T * R * S`.
    pub fn to_mat4(&self) -> Mat4 {
        Mat4::from_scale_rotation_translation(self.scale, self.rotation, self.translation)
    }

    /// Whether every component is finite and the rotation has unit length within `1e-3`.
    pub fn is_valid(&self) -> bool {
        self.translation.is_finite()
            && self.rotation.is_finite()
            && self.scale.is_finite()
            && (self.rotation.length() - 1.0).abs() < 1e-3
    }

    /// Decomposes an affine matrix into translation, rotation and scale. Shear is lost.
    pub fn from_affine(m: &Affine3A) -> Self {
        let (scale, rotation, translation) = m.to_scale_rotation_translation();
        Self {
            translation,
            rotation,
            scale,
        }
    }
}

/// `a · b` for affine matrices, with fused multiply-adds where the target has them (x86-64-v3,
/// the workspace's build): three FMAs per column instead of glam's three multiplies and two
/// adds, summed innermost-first as `z·v.z + (y·v.y + (x·v.x + add))`. The same value as `a * b` to within rounding of each column's dot products; every
/// job that composes bones (7 and 9, staged or fused) uses this one, so results are the same
/// whatever the pipeline mode and thread count.
#[inline(always)]
pub fn mul_affine(a: &Affine3A, b: &Affine3A) -> Affine3A {
    let (x, y, z, t) = (
        b.matrix3.x_axis,
        b.matrix3.y_axis,
        b.matrix3.z_axis,
        b.translation,
    );
    mul_affine_by(a, |k| match k {
        0 => x.x,
        1 => x.y,
        2 => x.z,
        3 => y.x,
        4 => y.y,
        5 => y.z,
        6 => z.x,
        7 => z.y,
        8 => z.z,
        9 => t.x,
        10 => t.y,
        _ => t.z,
    })
}

/// [`mul_affine`] with `b` given element by element: `b(k)` for `k` in `0..12` is
/// `c0.x c0.y c0.z c1.x c1.y c1.z c2.x c2.y c2.z t.x t.y t.z`. Each element is broadcast on
/// its own, so `b` can live in structure-of-arrays memory (job 7 reads a lane of
/// `soa_local_rows` this way, with no transpose).
#[inline(always)]
pub fn mul_affine_by(a: &Affine3A, b: impl Fn(usize) -> f32) -> Affine3A {
    let m = &a.matrix3;
    #[cfg(target_feature = "fma")]
    let transform = |k: usize, add: Vec3A| {
        m.z_axis.mul_add(
            Vec3A::splat(b(k + 2)),
            m.y_axis.mul_add(
                Vec3A::splat(b(k + 1)),
                m.x_axis.mul_add(Vec3A::splat(b(k)), add),
            ),
        )
    };
    #[cfg(not(target_feature = "fma"))]
    let transform = |k: usize, add: Vec3A| {
        m.z_axis * Vec3A::splat(b(k + 2))
            + (m.y_axis * Vec3A::splat(b(k + 1)) + (m.x_axis * Vec3A::splat(b(k)) + add))
    };
    Affine3A {
        matrix3: Mat3A::from_cols(
            transform(0, Vec3A::ZERO),
            transform(3, Vec3A::ZERO),
            transform(6, Vec3A::ZERO),
        ),
        translation: transform(9, a.translation),
    }
}

/// Writes an affine matrix as a float3x4 palette entry: 12 floats, column-major
/// (`c0.xyz, c1.xyz, c2.xyz, c3.xyz`), the last column being the translation.
#[inline]
pub fn palette_3x4(m: &Affine3A, out: &mut [f32; 12]) {
    let (c0, c1, c2, c3) = (
        m.matrix3.x_axis,
        m.matrix3.y_axis,
        m.matrix3.z_axis,
        m.translation,
    );
    // Three 16-byte rows of the 48-byte entry (the compiler turns each into one shuffle).
    let rows = [
        Vec4::new(c0.x, c0.y, c0.z, c1.x),
        Vec4::new(c1.y, c1.z, c2.x, c2.y),
        Vec4::new(c2.z, c3.x, c3.y, c3.z),
    ];
    for (o, r) in out.chunks_exact_mut(4).zip(rows) {
        o.copy_from_slice(&r.to_array());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trs_applies_scale_then_rotation_then_translation() {
        let t = Transform::new(
            Vec3::new(1.0, 2.0, 3.0),
            Quat::from_rotation_z(std::f32::consts::FRAC_PI_2),
            Vec3::splat(2.0),
        );
        // (1,0,0) scaled by 2 -> (2,0,0), rotated 90 degrees about z -> (0,2,0), moved -> (1,4,3).
        let p = t.to_affine().transform_point3(Vec3::X);
        assert!((p - Vec3::new(1.0, 4.0, 3.0)).length() < 1e-6, "{p}");
    }

    #[test]
    fn palette_is_column_major_3x4() {
        let m = Affine3A::from_cols_array(&[1., 2., 3., 4., 5., 6., 7., 8., 9., 10., 11., 12.]);
        let mut out = [0.0; 12];
        palette_3x4(&m, &mut out);
        assert_eq!(out, [1., 2., 3., 4., 5., 6., 7., 8., 9., 10., 11., 12.]);
    }
}
