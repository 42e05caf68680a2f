use super::Transform;
use glam::{Quat, Vec3, Vec4};

/// Magnitude (2⁻³², about 2.3e-10) below which a component of a bone key, tangent or rest
/// pose is stored as zero (see [`flush_negligible_vec3`]).
pub const NEGLIGIBLE_COMPONENT: f32 = 1.0 / 4_294_967_296.0;

/// `v` with every component smaller in magnitude than [`NEGLIGIBLE_COMPONENT`] set to zero.
///
/// Exporters leave rounding noise such as 1e-20 where a component should be zero (Fox's tail
/// rotations have components down to 3.6e-25). The product of two such components, which every
/// dot product and squared length of the sampler forms, falls below `f32::MIN_POSITIVE`, and
/// Intel cores handle subnormal results and operands in microcode, at about a hundred cycles an
/// instruction. Flushed at bake time, every stored component is zero or at least 2⁻³², so such
/// a product is zero or at least 2⁻⁶⁴, 62 binary orders above the subnormal range, which leaves
/// room for weights, lerp fractions and cancellation. The values change by less than 2⁻³²:
/// a unit quaternion by under 1e-9 rad, far below the 6e-8 that `f32` resolves near 1.
#[inline]
pub fn flush_negligible_vec3(v: Vec3) -> Vec3 {
    Vec3::select(
        v.abs().cmplt(Vec3::splat(NEGLIGIBLE_COMPONENT)),
        Vec3::ZERO,
        v,
    )
}

/// [`flush_negligible_vec3`] for the four components of a quaternion.
#[inline]
pub fn flush_negligible_quat(q: Quat) -> Quat {
    let v = Vec4::from(q);
    Quat::from_vec4(Vec4::select(
        v.abs().cmplt(Vec4::splat(NEGLIGIBLE_COMPONENT)),
        Vec4::ZERO,
        v,
    ))
}

/// [`flush_negligible_vec3`] for every component of a transform.
#[inline]
pub fn flush_negligible(t: &Transform) -> Transform {
    Transform {
        translation: flush_negligible_vec3(t.translation),
        rotation: flush_negligible_quat(t.rotation),
        scale: flush_negligible_vec3(t.scale),
    }
}

/// The four cubic Hermite basis functions at `s` in `[0, 1]`:
/// `(h00, h10, h01, h11)` for value 0, tangent 0, value 1, tangent 1.
#[inline]
pub fn hermite_basis(s: f32) -> [f32; 4] {
    let s2 = s * s;
    let s3 = s2 * s;
    [
        2.0 * s3 - 3.0 * s2 + 1.0,
        s3 - 2.0 * s2 + s,
        -2.0 * s3 + 3.0 * s2,
        s3 - s2,
    ]
}

/// Cubic Hermite interpolation of a vector between key 0 and key 1. `out_tangent0` and
/// `in_tangent1` are derivatives per second; `dt` is the key interval in seconds, so the
/// tangents are scaled by it (glTF CUBICSPLINE and Unity curves both follow this rule).
#[inline]
pub fn hermite_vec3(
    v0: Vec3,
    out_tangent0: Vec3,
    v1: Vec3,
    in_tangent1: Vec3,
    dt: f32,
    s: f32,
) -> Vec3 {
    let [h00, h10, h01, h11] = hermite_basis(s);
    v0 * h00 + out_tangent0 * (h10 * dt) + v1 * h01 + in_tangent1 * (h11 * dt)
}

/// Component-wise cubic Hermite interpolation of a quaternion, normalised afterwards (the glTF
/// rule for CUBICSPLINE rotations).
#[inline]
pub fn hermite_quat(
    q0: Quat,
    out_tangent0: Quat,
    q1: Quat,
    in_tangent1: Quat,
    dt: f32,
    s: f32,
) -> Quat {
    let [h00, h10, h01, h11] = hermite_basis(s);
    let v = Vec4::from(q0) * h00
        + Vec4::from(out_tangent0) * (h10 * dt)
        + Vec4::from(q1) * h01
        + Vec4::from(in_tangent1) * (h11 * dt);
    let len = v.length();
    if len > 0.0 && len.is_finite() {
        Quat::from_vec4(v / len)
    } else {
        q0
    }
}

/// Linear interpolation of vectors.
#[inline]
pub fn lerp_vec3(a: Vec3, b: Vec3, s: f32) -> Vec3 {
    a + (b - a) * s
}

/// Normalised linear interpolation along the shortest path.
#[inline]
pub fn nlerp_shortest(a: Quat, b: Quat, s: f32) -> Quat {
    let va = Vec4::from(a);
    let vb = Vec4::from(b);
    let vb = if va.dot(vb) < 0.0 { -vb } else { vb };
    let v = va + (vb - va) * s;
    let len_sq = v.length_squared();
    if len_sq > 0.0 {
        Quat::from_vec4(v * len_sq.sqrt().recip())
    } else {
        a
    }
}

/// Spherical linear interpolation along the shortest path (the glTF LINEAR rule for
/// rotations). Falls back to a normalised lerp when the two rotations are nearly equal.
#[inline]
pub fn slerp_shortest(a: Quat, b: Quat, s: f32) -> Quat {
    let mut d = a.dot(b);
    let b = if d < 0.0 {
        d = -d;
        -b
    } else {
        b
    };
    if d > 0.9995 {
        let v = Vec4::from(a) + (Vec4::from(b) - Vec4::from(a)) * s;
        return Quat::from_vec4(v.normalize_or(Vec4::from(a)));
    }
    let theta = d.clamp(-1.0, 1.0).acos();
    let sin_theta = theta.sin();
    let wa = ((1.0 - s) * theta).sin() / sin_theta;
    let wb = (s * theta).sin() / sin_theta;
    Quat::from_vec4(Vec4::from(a) * wa + Vec4::from(b) * wb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hermite_hits_endpoints_and_matches_hand_computed_midpoint() {
        let v0 = Vec3::new(0.0, 1.0, 2.0);
        let v1 = Vec3::new(4.0, 1.0, -2.0);
        let m0 = Vec3::new(1.0, 0.0, 0.0);
        let m1 = Vec3::new(-1.0, 0.0, 0.0);
        assert_eq!(hermite_vec3(v0, m0, v1, m1, 2.0, 0.0), v0);
        assert_eq!(hermite_vec3(v0, m0, v1, m1, 2.0, 1.0), v1);
        // s = 0.5: h00 = h01 = 0.5, h10 = 0.125, h11 = -0.125; dt = 2
        // x = 0 + 1*0.125*2 + 4*0.5 + (-1)*(-0.125)*2 = 0.25 + 2 + 0.25 = 2.5
        let mid = hermite_vec3(v0, m0, v1, m1, 2.0, 0.5);
        assert!((mid - Vec3::new(2.5, 1.0, 0.0)).length() < 1e-6, "{mid}");
    }

    #[test]
    fn slerp_takes_the_short_way_and_keeps_unit_length() {
        let a = Quat::from_rotation_y(0.1);
        let b = -Quat::from_rotation_y(0.5); // same rotation, opposite sign
        let m = slerp_shortest(a, b, 0.5);
        let expected = Quat::from_rotation_y(0.3);
        assert!(m.dot(expected).abs() > 1.0 - 1e-6);
        assert!((m.length() - 1.0).abs() < 1e-6);
    }

    #[test]
    fn nlerp_stays_within_the_cubic_bound_of_slerp() {
        let a = Quat::from_rotation_z(0.0);
        for &theta in &[0.05f32, 0.2, 0.6] {
            let b = Quat::from_rotation_z(theta);
            for k in 0..=10 {
                let s = k as f32 / 10.0;
                let (n, e) = (nlerp_shortest(a, b, s), slerp_shortest(a, b, s));
                let angle = 2.0 * n.dot(e).abs().min(1.0).acos();
                assert!(
                    angle <= theta.powi(3) / 8.0 + 1e-5,
                    "theta {theta} s {s}: {angle}"
                );
            }
        }
    }
}
