//! Layered blending in structure of arrays: the [`LANES`]-bone twins of
//! [`LayerSum`](crate::math::LayerSum), [`PoseAccumulator`](crate::math::PoseAccumulator) and
//! [`additive_apply`](crate::math::additive_apply), with one weight per lane so that avatar
//! masks (a weight per bone) blend in the same pass. Each follows its scalar reference rule for
//! rule, lane by lane: a lane whose weight is zero is left as it was, bit for bit, as the scalar
//! code skips it. The arithmetic differs from the reference in the last bits only as the rest
//! of [`super`] does (fused multiply-adds, `inv_sqrt`).

use super::{
    ANIMATES_SCALE, ANIMATES_TRANSLATION, LANES, SoaTransform, dot4, inv_sqrt, lerp, mul, mul_add,
    negate_where_negative, nlerp_rotation, slerp_rotation, watch,
};
use wide::f32x8;

/// Lanes where `v > 0` (false for NaN).
#[inline(always)]
fn positive(v: f32x8) -> f32x8 {
    v.simd_gt(f32x8::ZERO)
}

/// `when ? a : b`, component by component.
#[inline(always)]
fn select<const N: usize>(when: f32x8, a: [f32x8; N], b: [f32x8; N]) -> [f32x8; N] {
    std::array::from_fn(|c| when.select(a[c], b[c]))
}

/// `when ? a : b`, transform by transform.
#[inline(always)]
fn select_transform(when: f32x8, a: &SoaTransform, b: &SoaTransform) -> SoaTransform {
    SoaTransform {
        translation: select(when, a.translation, b.translation),
        rotation: select(when, a.rotation, b.rotation),
        scale: select(when, a.scale, b.scale),
    }
}

/// One block of a key grid's rows sampled at fraction `s`: translations and scales lerped,
/// tracked rotations slerped (`slerp`) or nlerped, untracked lanes at `k0`'s rotation (the
/// grid's rest value). Where `animated` lacks [`ANIMATES_TRANSLATION`] (or
/// [`ANIMATES_SCALE`]) every row holds the rest value, which is taken as it is. The full pose,
/// for blends that need each animation's own sample.
#[inline(always)]
pub(crate) fn sample_rows(
    k0: &SoaTransform,
    k1: &SoaTransform,
    s: f32,
    tracked: f32x8,
    animated: u8,
    slerp: bool,
) -> SoaTransform {
    let s = f32x8::splat(s);
    let vec3 = |v0: &[f32x8; 3], v1: &[f32x8; 3], bit: u8| {
        if animated & bit != 0 {
            std::array::from_fn(|c| lerp(v0[c], v1[c], s))
        } else {
            *v0
        }
    };
    SoaTransform {
        translation: vec3(&k0.translation, &k1.translation, ANIMATES_TRANSLATION),
        rotation: if slerp {
            slerp_rotation(&k0.rotation, &k1.rotation, s, tracked)
        } else {
            nlerp_rotation(&k0.rotation, &k1.rotation, s, tracked)
        },
        scale: vec3(&k0.scale, &k1.scale, ANIMATES_SCALE),
    }
}

/// One block of a Hermite key grid's rows sampled at fraction `s` of a span `dt` seconds
/// long: `[k0, out0, k1, in1]` are the earlier key's values and out tangents and the later
/// key's values and in tangents. Translations and scales are the cubic
/// `h₀₀·v₀ + h₁₀·dt·o₀ + h₀₁·v₁ + h₁₁·dt·i₁` ([`hermite_basis`](crate::math::hermite_basis)),
/// rotations the same per component, normalised (`k0`'s where the length vanishes), as
/// [`hermite_vec3`](crate::math::hermite_vec3) and [`hermite_quat`](crate::math::hermite_quat)
/// compute per bone; untracked lanes keep `k0`'s rotation (the grid's rest value), and where
/// `animated` lacks [`ANIMATES_TRANSLATION`] (or [`ANIMATES_SCALE`]) the rest value is taken as
/// it is.
#[inline(always)]
pub(crate) fn sample_hermite_rows(
    [k0, out0, k1, in1]: [&SoaTransform; 4],
    s: f32,
    dt: f32,
    tracked: f32x8,
    animated: u8,
) -> SoaTransform {
    let [h00, h10, h01, h11] = crate::math::hermite_basis(s);
    let (h00, h01) = (f32x8::splat(h00), f32x8::splat(h01));
    let (h10, h11) = (f32x8::splat(h10 * dt), f32x8::splat(h11 * dt));
    let cubic = |v0: f32x8, o0: f32x8, v1: f32x8, i1: f32x8| {
        mul_add(i1, h11, mul_add(v1, h01, mul_add(o0, h10, mul(v0, h00))))
    };
    let vec3 = |f: fn(&SoaTransform) -> &[f32x8; 3], bit: u8| -> [f32x8; 3] {
        let (v0, o0, v1, i1) = (f(k0), f(out0), f(k1), f(in1));
        if animated & bit != 0 {
            std::array::from_fn(|c| cubic(v0[c], o0[c], v1[c], i1[c]))
        } else {
            *v0
        }
    };
    let (q0, o0, q1, i1) = (&k0.rotation, &out0.rotation, &k1.rotation, &in1.rotation);
    let q: [f32x8; 4] = std::array::from_fn(|c| cubic(q0[c], o0[c], q1[c], i1[c]));
    let len_sq = dot4(&q, &q);
    let ok = len_sq.simd_ge(f32x8::splat(f32::MIN_POSITIVE)) & len_sq.is_finite() & tracked;
    let inv = inv_sqrt(len_sq);
    SoaTransform {
        translation: vec3(|t| &t.translation, ANIMATES_TRANSLATION),
        rotation: std::array::from_fn(|c| ok.select(mul(q[c], inv), q0[c])),
        scale: vec3(|t| &t.scale, ANIMATES_SCALE),
    }
}

/// The weighted sum of one override layer's animations, lane by lane
/// ([`LayerSum`](crate::math::LayerSum) with a weight per lane).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SoaLayerSum {
    /// Σ wᵢ·poseᵢ, each rotation aligned lane by lane to the running sum.
    sum: SoaTransform,
    /// Σ wᵢ per lane.
    weight: f32x8,
}

impl SoaLayerSum {
    /// An empty sum.
    pub(crate) const EMPTY: Self = Self {
        sum: SoaTransform {
            translation: [f32x8::ZERO; 3],
            rotation: [f32x8::ZERO; 4],
            scale: [f32x8::ZERO; 3],
        },
        weight: f32x8::ZERO,
    };

    /// Adds `pose` with weight `w` in the lanes where `w > 0`. Aligning to a sum that is still
    /// zero keeps the rotation (its dot product is 0), as the reference's first add does.
    #[inline(always)]
    pub(crate) fn add(&mut self, pose: &SoaTransform, w: f32x8) {
        let w = positive(w).select(w, f32x8::ZERO);
        let q = negate_where_negative(dot4(&self.sum.rotation, &pose.rotation), pose.rotation);
        let s = &mut self.sum;
        for c in 0..3 {
            s.translation[c] = mul_add(pose.translation[c], w, s.translation[c]);
            s.scale[c] = mul_add(pose.scale[c], w, s.scale[c]);
        }
        for (r, q) in s.rotation.iter_mut().zip(q) {
            *r = mul_add(q, w, *r);
        }
        self.weight = watch(self.weight + w);
    }
}

/// One block's pose accumulated across layers
/// ([`PoseAccumulator`](crate::math::PoseAccumulator), lane by lane).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SoaPoseAccumulator {
    acc: SoaTransform,
    /// Accumulated weight per lane, in `[0, 1]`.
    weight: f32x8,
}

impl SoaPoseAccumulator {
    /// Nothing accumulated yet.
    pub(crate) const EMPTY: Self = Self {
        acc: SoaLayerSum::EMPTY.sum,
        weight: f32x8::ZERO,
    };

    /// Blends an override layer's average over the accumulation with, per lane,
    /// `α = clamp(λ·min(W, 1), 0, 1)` (`W` the layer's weight sum, `λ` the layer weight); lanes
    /// where `α` or `W` is not positive are left as they were.
    #[inline(always)]
    pub(crate) fn blend_layer(&mut self, layer: &SoaLayerSum, layer_weight: f32) {
        let w = layer.weight;
        let alpha = mul(f32x8::splat(layer_weight), w.min(f32x8::ONE))
            .max(f32x8::ZERO)
            .min(f32x8::ONE);
        let active = positive(alpha) & positive(w);
        if !active.any() {
            return;
        }
        let a = mul(alpha, watch(f32x8::ONE / w));
        if self.weight.simd_eq(f32x8::ZERO).all() {
            self.blend_onto_nothing(layer, a, alpha, active);
        } else {
            self.blend_onto(layer, a, alpha, active);
        }
    }

    /// [`Self::blend_layer`]'s blend: `acc·(1 − α) + layer·a` in the active lanes, `a = α / W`.
    #[inline(always)]
    fn blend_onto(&mut self, layer: &SoaLayerSum, a: f32x8, alpha: f32x8, active: f32x8) {
        let keep = watch(f32x8::ONE - alpha);
        // The reference aligns to the accumulation, or to the layer itself when nothing is
        // accumulated: the accumulation is then zero, whose dot product keeps the layer.
        let layer_rotation = negate_where_negative(
            dot4(&self.acc.rotation, &layer.sum.rotation),
            layer.sum.rotation,
        );
        let blend = |acc: f32x8, v: f32x8| mul_add(v, a, mul(acc, keep));
        let blended = SoaTransform {
            translation: std::array::from_fn(|c| {
                blend(self.acc.translation[c], layer.sum.translation[c])
            }),
            rotation: std::array::from_fn(|c| blend(self.acc.rotation[c], layer_rotation[c])),
            scale: std::array::from_fn(|c| blend(self.acc.scale[c], layer.sum.scale[c])),
        };
        self.acc = select_transform(active, &blended, &self.acc);
        self.weight = active.select(mul_add(self.weight, keep, alpha), self.weight);
    }

    /// [`Self::blend_onto`] when nothing is accumulated yet (every lane's weight 0, so every
    /// lane still the empty zero: a lane is written only with a positive weight): the blend
    /// is then `layer·a + 0`, since `acc·(1 − α)` is +0 and the zero accumulation's dot
    /// product keeps the layer's rotations. The same fused rounding, so the same bits, with
    /// no alignment and no products of the zero accumulation (the first override layer of
    /// every entity).
    #[inline(always)]
    fn blend_onto_nothing(&mut self, layer: &SoaLayerSum, a: f32x8, alpha: f32x8, active: f32x8) {
        let scaled = |v: f32x8| mul_add(v, a, f32x8::ZERO);
        let blended = SoaTransform {
            translation: layer.sum.translation.map(scaled),
            rotation: layer.sum.rotation.map(scaled),
            scale: layer.sum.scale.map(scaled),
        };
        self.acc = select_transform(active, &blended, &self.acc);
        // `0·(1 − α) + α`.
        self.weight = active.select(alpha, self.weight);
    }

    /// Completes the pose: the missing weight `1 − W` of each lane comes from `rest`, the
    /// rotation is normalised (the rest rotation where the sum vanished or is not finite),
    /// and lanes with nothing accumulated are `rest`.
    #[inline(always)]
    pub(crate) fn finish(&self, rest: &SoaTransform) -> SoaTransform {
        let missing = watch(f32x8::ONE - self.weight).max(f32x8::ZERO);
        let mut p = self.acc;
        if missing.simd_gt(f32x8::ZERO).any() {
            let q = negate_where_negative(dot4(&p.rotation, &rest.rotation), rest.rotation);
            for (r, q) in p.rotation.iter_mut().zip(q) {
                *r = mul_add(q, missing, *r);
            }
            for c in 0..3 {
                p.translation[c] = mul_add(rest.translation[c], missing, p.translation[c]);
                p.scale[c] = mul_add(rest.scale[c], missing, p.scale[c]);
            }
        }
        let len_sq = dot4(&p.rotation, &p.rotation);
        let ok = len_sq.simd_gt(f32x8::splat(1e-12)) & len_sq.is_finite();
        let inv = inv_sqrt(len_sq);
        p.rotation = std::array::from_fn(|c| ok.select(mul(p.rotation[c], inv), rest.rotation[c]));
        let rest_only = missing.simd_ge(f32x8::ONE);
        select_transform(rest_only, rest, &p)
    }

    /// The accumulation as it stands, for one that is already a finished pose (every lane of
    /// weight 1 and normalised, as after an additive layer that touched them all).
    #[inline(always)]
    pub(crate) fn pose(&self) -> SoaTransform {
        self.acc
    }

    /// Restarts the accumulation from `pose` in the lanes of `lanes` (after an additive layer
    /// changed them); the others keep theirs.
    #[inline(always)]
    pub(crate) fn reset_where(&mut self, lanes: f32x8, pose: &SoaTransform) {
        self.acc = select_transform(lanes, pose, &self.acc);
        self.weight = lanes.select(f32x8::ONE, self.weight);
    }
}

/// The Hamilton product `a · b` of quaternions stored (x, y, z, w), lane by lane (glam's
/// `Quat * Quat`).
#[inline(always)]
fn quat_mul(a: &[f32x8; 4], b: &[f32x8; 4]) -> [f32x8; 4] {
    let [ax, ay, az, aw] = *a;
    let [bx, by, bz, bw] = *b;
    [
        watch(mul_add(aw, bx, mul(ax, bw)) + watch(mul(ay, bz) - mul(az, by))),
        watch(watch(mul(aw, by) - mul(ax, bz)) + mul_add(ay, bw, mul(az, bx))),
        watch(mul_add(aw, bz, mul(ax, by)) + watch(mul(az, bw) - mul(ay, bx))),
        watch(watch(mul(aw, bw) - mul(ax, bx)) - watch(mul(ay, by) + mul(az, bz))),
    ]
}

/// `q / |q|` where the length is normal and finite, else `fallback`.
#[inline(always)]
fn normalize_or(q: [f32x8; 4], fallback: [f32x8; 4]) -> [f32x8; 4] {
    let len_sq = dot4(&q, &q);
    let ok = len_sq.simd_ge(f32x8::splat(f32::MIN_POSITIVE)) & len_sq.is_finite();
    let inv = inv_sqrt(len_sq);
    std::array::from_fn(|c| ok.select(mul(q[c], inv), fallback[c]))
}

/// [`additive_apply`](crate::math::additive_apply) lane by lane: `pose` relative to
/// `reference`, scaled by `w`, on top of `base`; lanes where `w` is not positive are `base`.
#[inline(always)]
pub(crate) fn additive_apply(
    base: &SoaTransform,
    pose: &SoaTransform,
    reference: &SoaTransform,
    w: f32x8,
) -> SoaTransform {
    let active = positive(w);
    let r = &reference.rotation;
    let conjugate = [-r[0], -r[1], -r[2], r[3]];
    let delta = quat_mul(&conjugate, &pose.rotation);
    // Aligned to the identity (w ≥ 0), then nlerped from it by `w`.
    let delta = negate_where_negative(delta[3], delta);
    let one = f32x8::ONE;
    let weighted = [
        mul(delta[0], w),
        mul(delta[1], w),
        mul(delta[2], w),
        mul_add(watch(delta[3] - one), w, one),
    ];
    let identity = [f32x8::ZERO, f32x8::ZERO, f32x8::ZERO, one];
    let weighted = normalize_or(weighted, identity);
    let rotation = normalize_or(quat_mul(&base.rotation, &weighted), base.rotation);
    let threshold = f32x8::splat(1e-12);
    let applied = SoaTransform {
        translation: std::array::from_fn(|c| {
            mul_add(
                watch(pose.translation[c] - reference.translation[c]),
                w,
                base.translation[c],
            )
        }),
        rotation,
        scale: std::array::from_fn(|c| {
            let rs = reference.scale[c];
            let safe = rs.abs().simd_gt(threshold).select(rs, one);
            let delta = watch(pose.scale[c] / safe);
            mul(base.scale[c], mul_add(watch(delta - one), w, one))
        }),
    };
    select_transform(active, &applied, base)
}

/// Lane `l`'s weights of a per-bone weight list starting at bone `first` (0 past its end).
#[inline(always)]
pub(crate) fn lane_weights(weights: &[f32], first: usize) -> f32x8 {
    // A whole block is one load; only a rig's last block, when its bone count is not a
    // multiple of the lane count, reads lane by lane.
    if let Some(block) = weights.get(first..first + LANES)
        && let Ok(lanes) = <[f32; LANES]>::try_from(block)
    {
        return f32x8::from(lanes);
    }
    let lanes: [f32; LANES] =
        std::array::from_fn(|l| weights.get(first + l).copied().unwrap_or(0.0));
    f32x8::from(lanes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::math::{LayerSum, PoseAccumulator, Transform};
    use glam::{Quat, Vec3};

    fn poses(seed: u32) -> [Transform; LANES] {
        std::array::from_fn(|i| {
            let f = (i as u32 * 7 + seed * 13) as f32;
            Transform::new(
                Vec3::new(f.sin(), f.cos() * 2.0, 0.1 * f),
                Quat::from_euler(glam::EulerRot::XYZ, f * 0.3, -f * 0.7, f * 1.1),
                Vec3::new(1.0 + 0.01 * f, 1.0, 0.5 + 0.02 * f),
            )
        })
    }

    fn lanes(t: &SoaTransform) -> [Transform; LANES] {
        std::array::from_fn(|l| t.lane(l))
    }

    fn close(a: &Transform, b: &Transform, tol: f32) -> bool {
        (a.translation - b.translation).abs().max_element() <= tol
            && (a.scale - b.scale).abs().max_element() <= tol
            && a.rotation.dot(b.rotation).abs() >= 1.0 - tol
    }

    /// Two override layers (the second masked lane by lane, one lane weighted 0)
    /// and an additive layer, finished over a rest pose: every lane equals the scalar
    /// accumulator's result for that bone.
    #[test]
    fn layers_match_the_scalar_accumulator_lane_by_lane() {
        let (a, b, c, d, rest, reference) =
            (poses(1), poses(2), poses(3), poses(4), poses(5), poses(6));
        let soa = |p: &[Transform; LANES]| SoaTransform::from_transforms(p);
        let mask: [f32; LANES] = [1.0, 0.5, 0.0, 0.25, 0.05, 1.0, 0.75, 0.1];
        for (lw0, lw1, lw2) in [(1.0, 0.6, 0.8), (0.3, 1.0, 1.0), (0.0, 0.5, 0.0)] {
            let mut acc = SoaPoseAccumulator::EMPTY;
            let mut l0 = SoaLayerSum::EMPTY;
            l0.add(&soa(&a), f32x8::splat(0.7));
            l0.add(&soa(&b), f32x8::splat(0.6));
            acc.blend_layer(&l0, lw0);
            let mut l1 = SoaLayerSum::EMPTY;
            l1.add(&soa(&c), f32x8::from(mask) * f32x8::splat(0.9));
            acc.blend_layer(&l1, lw1);
            let w2 = f32x8::from(mask) * f32x8::splat(lw2);
            let base = acc.finish(&soa(&rest));
            let added = additive_apply(&base, &soa(&d), &soa(&reference), w2);
            acc.reset_where(positive(w2), &added);
            let out = lanes(&acc.finish(&soa(&rest)));
            for l in 0..LANES {
                let mut s = PoseAccumulator::EMPTY;
                let mut sum = LayerSum::EMPTY;
                sum.add(&a[l], 0.7);
                sum.add(&b[l], 0.6);
                s.blend_layer(&sum, (lw0 * sum.weight.min(1.0)).clamp(0.0, 1.0));
                let mut sum = LayerSum::EMPTY;
                sum.add(&c[l], mask[l] * 0.9);
                s.blend_layer(&sum, (lw1 * sum.weight.min(1.0)).clamp(0.0, 1.0));
                let w = lw2 * mask[l];
                if w > 0.0 {
                    let p =
                        crate::math::additive_apply(&s.finish(&rest[l]), &d[l], &reference[l], w);
                    s.reset_to(&p);
                }
                let want = s.finish(&rest[l]);
                assert!(
                    close(&out[l], &want, 2e-6),
                    "weights ({lw0}, {lw1}, {lw2}) lane {l}: {:?} vs {want:?}",
                    out[l]
                );
            }
        }
    }

    /// The first layer's blend onto nothing equals the general blend onto the empty
    /// accumulation bit for bit: lanes of weight 0, partial and full weights, layer weights
    /// below and at 1, rotations of either sign (whose products with the zero accumulation are
    /// −0).
    #[test]
    fn blending_onto_nothing_is_the_general_blend_bit_for_bit() {
        let mask: [f32; LANES] = [1.0, 0.5, 0.0, 0.25, 0.05, 1.0, 0.75, 0.1];
        for (seeds, layer_weight) in [((1, 2), 1.0), ((3, 4), 0.6), ((5, 9), 0.3)] {
            let mut layer = SoaLayerSum::EMPTY;
            layer.add(
                &SoaTransform::from_transforms(&poses(seeds.0)),
                f32x8::from(mask),
            );
            layer.add(
                &SoaTransform::from_transforms(&poses(seeds.1)),
                f32x8::splat(0.4) * f32x8::from(mask),
            );
            let w = layer.weight;
            let alpha = mul(f32x8::splat(layer_weight), w.min(f32x8::ONE))
                .max(f32x8::ZERO)
                .min(f32x8::ONE);
            let active = positive(alpha) & positive(w);
            let a = mul(alpha, watch(f32x8::ONE / w));
            let (mut general, mut shortcut) =
                (SoaPoseAccumulator::EMPTY, SoaPoseAccumulator::EMPTY);
            general.blend_onto(&layer, a, alpha, active);
            shortcut.blend_onto_nothing(&layer, a, alpha, active);
            let bits = |p: &SoaPoseAccumulator| {
                let t = &p.acc;
                t.translation
                    .iter()
                    .chain(&t.rotation)
                    .chain(&t.scale)
                    .chain(std::iter::once(&p.weight))
                    .flat_map(|v| v.to_array().map(f32::to_bits))
                    .collect::<Vec<u32>>()
            };
            assert_eq!(
                bits(&general),
                bits(&shortcut),
                "layer weight {layer_weight}"
            );
            // And blend_layer onto an empty accumulation gives the same.
            let mut via_layer = SoaPoseAccumulator::EMPTY;
            via_layer.blend_layer(&layer, layer_weight);
            assert_eq!(bits(&via_layer), bits(&general));
        }
    }

    /// A lane that no layer touches is the rest pose exactly, and a zero additive weight
    /// leaves the base unchanged bit for bit.
    #[test]
    fn untouched_lanes_are_left_exactly() {
        let (a, rest) = (poses(7), poses(8));
        let rest_soa = SoaTransform::from_transforms(&rest);
        let mut w = [0.5f32; LANES];
        w[3] = 0.0;
        let mut sum = SoaLayerSum::EMPTY;
        sum.add(&SoaTransform::from_transforms(&a), f32x8::from(w));
        let mut acc = SoaPoseAccumulator::EMPTY;
        acc.blend_layer(&sum, 1.0);
        let out = lanes(&acc.finish(&rest_soa));
        assert_eq!(out[3], rest[3]);
        let base = SoaTransform::from_transforms(&a);
        let same = additive_apply(
            &base,
            &rest_soa,
            &rest_soa,
            f32x8::from(w) - f32x8::splat(0.5),
        );
        assert_eq!(lanes(&same), a);
    }

    #[test]
    fn the_quaternion_product_is_glams() {
        let (a, b) = (poses(9), poses(10));
        let qa = SoaTransform::from_transforms(&a).rotation;
        let qb = SoaTransform::from_transforms(&b).rotation;
        let p = quat_mul(&qa, &qb);
        for l in 0..LANES {
            let want = a[l].rotation * b[l].rotation;
            let got = Quat::from_xyzw(
                p[0].as_array()[l],
                p[1].as_array()[l],
                p[2].as_array()[l],
                p[3].as_array()[l],
            );
            assert!(
                (got - want).length() < 1e-6,
                "lane {l}: {got:?} vs {want:?}"
            );
        }
    }
}
