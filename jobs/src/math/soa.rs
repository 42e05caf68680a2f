//! Structure-of-arrays transforms, [`LANES`] bones at a time on `wide::f32x8`: the sampling
//! job's paths (the shared-time-grid sum, see [`crate::asset::KeyGrid`], and the layered
//! blend of [`layers`]).
//!
//! Every function here computes what its scalar reference computes
//! ([`lerp_vec3`](super::lerp_vec3), [`nlerp_shortest`](super::nlerp_shortest),
//! [`slerp_shortest`](super::slerp_shortest), [`LayerSum`](super::LayerSum),
//! [`PoseAccumulator`](super::PoseAccumulator), [`additive_apply`](super::additive_apply)),
//! with the same sums in the same order (dot products grouped as glam's SSE2 `Vec4::dot`,
//! `(x·x' + z·z') + (y·y' + w·w')`), except four things that trade the last bits for speed:
//! lerps and weighted sums are fused multiply-adds, quaternions are normalised with the
//! reciprocal-square-root estimate and one Newton step (`inv_sqrt`) rather than a square root
//! and a division, slerp's weights `sin(t·θ) / sin θ` come from a power series in `cos θ − 1`
//! (`slerp_weight_series`: four terms for keys less than 9.9° apart, ten up to 45°; `wide`'s
//! vector `acos` and `sin` beyond), and blocks of bones that no clip translates (or scales) take the rest
//! translations (scales) rather than their weighted sum. The paths agree with the scalar
//! reference to about 1e-7 (the tests allow 1e-6). Which path an entity takes depends only on
//! its animations, so results never depend on the thread count or on the pipeline mode.
//!
//! Subnormal values are kept out of these kernels (Intel cores take about a hundred cycles
//! over an instruction with a subnormal operand or result, or one that underflows): the bake
//! stores key and rest-pose components below 2⁻³² as zero
//! ([`flush_negligible_vec3`](super::flush_negligible_vec3)), so a product of two components
//! is zero or above 2⁻⁶⁴, and the slerp series is evaluated by Horner's rule, so no power of a
//! small `cos θ − 1` is formed. Inputs far outside the usual ranges can still underflow: blend
//! weights below about 1e-18, key fractions below about 1e-19 (the series squares them), and
//! on the `acos`/`sin` path (whose `sin` raises its argument to the fourth power and `acos` the
//! cosine to the eighth) a time within a millionth of a key interval past a key, or keys a half
//! turn apart to within 0.002°. This crate's tests count the subnormal lanes of every
//! intermediate value over the sample files and the built-in character.

use super::Transform;
use glam::{Affine3A, Mat3A, Quat, Vec3, Vec3A};
use wide::{f32x4, f32x8};

mod layers;
pub(crate) use layers::{SoaLayerSum, SoaPoseAccumulator, additive_apply, lane_weights};

/// Bones per SoA block.
pub(crate) const LANES: usize = 8;

/// [`BlockKeys::animated`] bit: some lane of the block has a translation track.
pub(crate) const ANIMATES_TRANSLATION: u8 = 1;
/// [`BlockKeys::animated`] bit: some lane of the block has a scale track.
pub(crate) const ANIMATES_SCALE: u8 = 2;

/// [`LANES`] transforms as structure of arrays: `translation[c]` holds component `c` of every
/// lane, rotations as (x, y, z, w), scales likewise.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct SoaTransform {
    /// Translation x, y, z.
    pub(crate) translation: [f32x8; 3],
    /// Rotation x, y, z, w.
    pub(crate) rotation: [f32x8; 4],
    /// Scale x, y, z.
    pub(crate) scale: [f32x8; 3],
}

/// Counts, per thread, the lanes of the kernels' intermediate values that are subnormal and
/// the products whose exact value is (a product that rounds to zero from below
/// `f32::MIN_POSITIVE` stalls Intel cores just the same). Test builds of this crate only; the
/// hooks below compile to nothing elsewhere. `wide`'s `acos` and `sin` are not looked into.
#[cfg(test)]
pub(crate) mod subnormal_watch {
    use std::cell::Cell;
    use wide::f32x8;

    thread_local! {
        static FOUND: Cell<u64> = const { Cell::new(0) };
        static SEEN: Cell<u64> = const { Cell::new(0) };
    }

    fn count(lanes: impl Iterator<Item = f64>) {
        for x in lanes {
            SEEN.set(SEEN.get() + 1);
            if x != 0.0 && x.abs() < f64::from(f32::MIN_POSITIVE) {
                FOUND.set(FOUND.get() + 1);
            }
        }
    }

    /// Checks the lanes of `v`.
    pub(crate) fn value(v: f32x8) {
        count(v.to_array().into_iter().map(f64::from));
    }

    /// Checks the exact lane products `a · b` (exact in `f64`).
    pub(crate) fn product(a: f32x8, b: f32x8) {
        let (a, b) = (a.to_array(), b.to_array());
        count(
            a.into_iter()
                .zip(b)
                .map(|(x, y)| f64::from(x) * f64::from(y)),
        );
    }

    /// `(subnormal lanes, lanes checked)` since the last call, on this thread.
    pub(crate) fn take() -> (u64, u64) {
        (FOUND.replace(0), SEEN.replace(0))
    }
}

/// `v`, checked by `subnormal_watch` in test builds.
#[inline(always)]
fn watch(v: f32x8) -> f32x8 {
    #[cfg(test)]
    subnormal_watch::value(v);
    v
}

/// `a · b`, its exact value checked by `subnormal_watch` in test builds.
#[inline(always)]
fn mul(a: f32x8, b: f32x8) -> f32x8 {
    #[cfg(test)]
    subnormal_watch::product(a, b);
    watch(a * b)
}

/// `a · b + c`, fused where the target has FMA; the product is checked as well as the sum in
/// test builds, since targets without FMA round it on its own.
#[inline(always)]
fn mul_add(a: f32x8, b: f32x8, c: f32x8) -> f32x8 {
    #[cfg(test)]
    subnormal_watch::product(a, b);
    watch(a.mul_add(b, c))
}

#[inline(always)]
fn lerp(a: f32x8, b: f32x8, s: f32x8) -> f32x8 {
    mul_add(watch(b - a), s, a)
}

/// Lane-wise 4-component dot product, grouped as glam's SSE2 `Vec4::dot`.
#[inline(always)]
pub(crate) fn dot4(a: &[f32x8; 4], b: &[f32x8; 4]) -> f32x8 {
    let even = watch(mul(a[0], b[0]) + mul(a[2], b[2]));
    let odd = watch(mul(a[1], b[1]) + mul(a[3], b[3]));
    watch(even + odd)
}

impl SoaTransform {
    /// Up to [`LANES`] transforms; missing lanes are the identity.
    pub(crate) fn from_transforms(t: &[Transform]) -> Self {
        let mut a = [[0.0f32; LANES]; 10];
        for l in 0..LANES {
            // (Lane-major input, component-major output: an index loop reads best.)
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
            for (row, value) in a.iter_mut().zip(v) {
                row[l] = value;
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
    pub(crate) fn write_transforms(&self, out: &mut [Transform]) {
        write_vec3s(&self.translation, out, |o| &mut o.translation);
        write_vec3s(&self.scale, out, |o| &mut o.scale);
        let r = &self.rotation;
        let (x, y, z, w) = (halves(r[0]), halves(r[1]), halves(r[2]), halves(r[3]));
        for h in 0..2 {
            let lanes = f32x4::transpose([x[h], y[h], z[h], w[h]]);
            for (o, v) in out.iter_mut().skip(4 * h).take(4).zip(lanes) {
                o.rotation = Quat::from_array(v.to_array());
            }
        }
    }

    /// Lane `l`'s transform (the identity for `l ≥ LANES`).
    pub(crate) fn lane(&self, l: usize) -> Transform {
        let at = |v: f32x8| v.as_array().get(l).copied();
        let (t, r, s) = (&self.translation, &self.rotation, &self.scale);
        match (
            at(t[0]),
            at(t[1]),
            at(t[2]),
            at(r[0]),
            at(r[1]),
            at(r[2]),
            at(r[3]),
            at(s[0]),
            at(s[1]),
            at(s[2]),
        ) {
            (
                Some(tx),
                Some(ty),
                Some(tz),
                Some(rx),
                Some(ry),
                Some(rz),
                Some(rw),
                Some(sx),
                Some(sy),
                Some(sz),
            ) => Transform::new(
                Vec3::new(tx, ty, tz),
                Quat::from_xyzw(rx, ry, rz, rw),
                Vec3::new(sx, sy, sz),
            ),
            _ => Transform::IDENTITY,
        }
    }

    /// Sets lane `l` to `x` (nothing for `l ≥ LANES`).
    pub(crate) fn set_lane(&mut self, l: usize, x: &Transform) {
        let [tx, ty, tz] = &mut self.translation;
        let [rx, ry, rz, rw] = &mut self.rotation;
        let [sx, sy, sz] = &mut self.scale;
        let values = [
            (tx, x.translation.x),
            (ty, x.translation.y),
            (tz, x.translation.z),
            (rx, x.rotation.x),
            (ry, x.rotation.y),
            (rz, x.rotation.z),
            (rw, x.rotation.w),
            (sx, x.scale.x),
            (sy, x.scale.y),
            (sz, x.scale.z),
        ];
        for (v, value) in values {
            if let Some(slot) = v.as_mut_array().get_mut(l) {
                *slot = value;
            }
        }
    }
}

/// `q` negated in the lanes where `dot < 0`: one XOR of the sign bit.
#[inline(always)]
fn negate_where_negative(dot: f32x8, q: [f32x8; 4]) -> [f32x8; 4] {
    let sign = dot.simd_lt(f32x8::ZERO) & f32x8::splat(-0.0);
    let mut out = q;
    for c in &mut out {
        *c ^= sign;
    }
    out
}

/// Lane-wise [`super::slerp_shortest`] (the glTF LINEAR rule): lanes whose rotations are
/// nearly equal (`|dot| > 0.9995`) take the normalised lerp, as the scalar reference does; the
/// others weigh the two keys by `sin((1 − s)·θ) / sin θ` and `sin(s·θ) / sin θ`. `acos` and
/// `sin` are `wide`'s vector versions, so this path agrees with the scalar reference to a few
/// ulps rather than to the last bit. Lanes whose bit in `tracked` is clear keep `q0`.
#[inline(always)]
fn slerp_rotation(q0: &[f32x8; 4], q1: &[f32x8; 4], s: f32x8, tracked: f32x8) -> [f32x8; 4] {
    let dot = dot4(q0, q1);
    let q1 = negate_where_negative(dot, *q1);
    let d = dot.abs();
    // Nearly equal: normalised lerp, falling back to q0 where the length is 0 or not finite.
    let mut near = [f32x8::ZERO; 4];
    for c in 0..4 {
        near[c] = lerp(q0[c], q1[c], s);
    }
    let inv_len = watch(f32x8::ONE / watch(dot4(&near, &near).sqrt()));
    let len_ok = inv_len.is_finite() & inv_len.simd_gt(f32x8::ZERO);
    for c in 0..4 {
        near[c] = len_ok.select(mul(near[c], inv_len), q0[c]);
    }
    let is_near = d.simd_gt(f32x8::splat(0.9995));
    if is_near.all() {
        for c in 0..4 {
            near[c] = tracked.select(near[c], q0[c]);
        }
        return near;
    }
    let x = d.min(f32x8::ONE);
    let (wa, wb) = if x.simd_ge(f32x8::splat(SLERP_SERIES_CLOSE_COS)).all() {
        (
            slerp_weight_series::<SLERP_SERIES_CLOSE_TERMS>(watch(f32x8::ONE - s), x),
            slerp_weight_series::<SLERP_SERIES_CLOSE_TERMS>(s, x),
        )
    } else if x.simd_ge(f32x8::splat(SLERP_SERIES_MIN_COS)).all() {
        (
            slerp_weight_series::<SLERP_SERIES_TERMS>(watch(f32x8::ONE - s), x),
            slerp_weight_series::<SLERP_SERIES_TERMS>(s, x),
        )
    } else {
        let theta = watch(x.acos());
        let sin_theta = watch(theta.sin());
        (
            watch(watch(mul(f32x8::ONE - s, theta).sin()) / sin_theta),
            watch(watch(mul(s, theta).sin()) / sin_theta),
        )
    };
    let mut out = [f32x8::ZERO; 4];
    for c in 0..4 {
        let far = watch(mul(q0[c], wa) + mul(q1[c], wb));
        out[c] = tracked.select(is_near.select(near[c], far), q0[c]);
    }
    out
}

/// The smallest key-to-key cosine `cos θ` that [`slerp_weight_series`] takes (θ ≤ 45.6°, far
/// more than consecutive keys turn); a block with a wider lane takes `acos` and `sin`.
const SLERP_SERIES_MIN_COS: f32 = 0.7;

/// Terms of [`slerp_weight_series`] for `cos θ ≥ SLERP_SERIES_MIN_COS`. Term `i` is at most
/// `|cos θ − 1| / 2` of term `i − 1` (`|t² − i²| / (i·(2i + 1)) < 1/2` for `t` in `[0, 1]`),
/// 0.15 here, so the truncation error is below 1e-8.
const SLERP_SERIES_TERMS: usize = 10;

/// Blocks whose keys are all at most 9.9° apart (`cos θ ≥ 0.985`, the common case between
/// consecutive keys) take [`SLERP_SERIES_CLOSE_TERMS`] terms: each term is then at most 0.0075
/// of the one before, and four leave a truncation error below 4e-9.
const SLERP_SERIES_CLOSE_COS: f32 = 0.985;

/// Terms of [`slerp_weight_series`] for `cos θ ≥ SLERP_SERIES_CLOSE_COS`.
const SLERP_SERIES_CLOSE_TERMS: usize = 4;

/// `sin(t·θ) / sin θ` from `x = cos θ` without `acos` or `sin`, as a power series in
/// `d = x − 1`: `Σ bᵢ(t)·dⁱ` with `b₀ = t` and `bᵢ = bᵢ₋₁·(t² − i²) / (i·(2i + 1))` (the
/// expansion of the slerp weights around θ = 0, as in Eberly's "A fast and accurate algorithm
/// for computing slerp"). Evaluated by Horner's rule, so every product is a coefficient of
/// order `t` times `d`, and no power of a small `d` underflows. Agrees with the trigonometric
/// form to a few ulps for `x ≥ SLERP_SERIES_MIN_COS`.
/// `N` terms (see [`SLERP_SERIES_TERMS`] and [`SLERP_SERIES_CLOSE_TERMS`] for the ranges).
#[inline(always)]
fn slerp_weight_series<const N: usize>(t: f32x8, x: f32x8) -> f32x8 {
    let d = watch(x - f32x8::ONE);
    let t2 = mul(t, t);
    let mut b = [f32x8::ZERO; N];
    let mut prev = t;
    for (i, bi) in b.iter_mut().enumerate() {
        if i > 0 {
            let i = i as f32;
            let (u, v) = (1.0 / (i * (2.0 * i + 1.0)), i / (2.0 * i + 1.0));
            prev = mul(prev, mul_add(t2, f32x8::splat(u), f32x8::splat(-v)));
        }
        *bi = prev;
    }
    let mut acc = f32x8::ZERO;
    for bi in b.iter().rev() {
        acc = mul_add(acc, d, *bi);
    }
    acc
}

/// `1 / √x` for normal positive `x`: the hardware estimate refined by one Newton step
/// (relative error about 1e-7, as ozz-animation normalises), in place of a square root and
/// a division, the two slowest operations of the blend. The estimate is the CPU's, so the
/// last bits may differ between CPU models (never between runs or thread counts on one).
#[inline(always)]
fn inv_sqrt(x: f32x8) -> f32x8 {
    let y = watch(x.recip_sqrt());
    let half_x_y = mul(mul(x, f32x8::splat(0.5)), y);
    #[cfg(test)]
    subnormal_watch::product(half_x_y, y);
    mul(y, watch(half_x_y.mul_neg_add(y, f32x8::splat(1.5))))
}

/// Lane-wise [`super::nlerp_shortest`]; lanes whose bit in `tracked` is clear keep `q0`
/// (where the grid stores the rest rotation of an untracked bone, in every key).
#[inline(always)]
fn nlerp_rotation(q0: &[f32x8; 4], q1: &[f32x8; 4], s: f32x8, tracked: f32x8) -> [f32x8; 4] {
    let q1 = negate_where_negative(dot4(q0, q1), *q1);
    let mut v = [f32x8::ZERO; 4];
    for c in 0..4 {
        v[c] = lerp(q0[c], q1[c], s);
    }
    let len_sq = dot4(&v, &v);
    let ok = len_sq.simd_ge(f32x8::splat(f32::MIN_POSITIVE)) & tracked;
    let inv = inv_sqrt(len_sq);
    for c in 0..4 {
        v[c] = ok.select(mul(v[c], inv), q0[c]);
    }
    v
}

/// One animation's part in an entity's blend: the key rows around its time (one
/// [`SoaTransform`] per block of [`LANES`] bones), the fraction between them, its weight
/// (`> 0`) and, per block, which lanes have a rotation track.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlockKeys<'a> {
    /// The earlier key row.
    pub k0: &'a [SoaTransform],
    /// The later key row.
    pub k1: &'a [SoaTransform],
    /// Fraction between them.
    pub(crate) s: f32,
    /// The animation's weight.
    pub(crate) w: f32,
    /// Lanes with a rotation track (all bits set), per block.
    pub(crate) tracked: &'a [f32x8],
    /// Per block, [`ANIMATES_TRANSLATION`] and [`ANIMATES_SCALE`] when some lane has that
    /// track (a block without is the rest value in every row).
    pub(crate) animated: &'a [u8],
    /// Whether rotations slerp (glTF's LINEAR rule) rather than nlerp.
    pub(crate) slerp: bool,
    /// Hermite keys' tangents (`None`: LINEAR keys).
    pub(crate) hermite: Option<HermiteKeys<'a>>,
}

/// The tangents of Hermite keys around a span: the earlier key's out tangents and the later
/// key's in tangents (one [`SoaTransform`] per block; derivatives per second), and the
/// seconds between the keys.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HermiteKeys<'a> {
    pub(crate) out0: &'a [SoaTransform],
    pub(crate) in1: &'a [SoaTransform],
    pub(crate) dt: f32,
}

impl BlockKeys<'_> {
    /// No rows (fills unused slots of a fixed-size list).
    pub(crate) const EMPTY: BlockKeys<'static> = BlockKeys {
        k0: &[],
        k1: &[],
        s: 0.0,
        w: 0.0,
        tracked: &[],
        animated: &[],
        slerp: false,
        hermite: None,
    };

    /// Block `b` sampled at the span (see [`layers::sample_rows`] and
    /// [`layers::sample_hermite_rows`]); `None` past the rows.
    #[inline(always)]
    pub(crate) fn sample(&self, b: usize) -> Option<SoaTransform> {
        let (r0, r1, &tracked) = (self.k0.get(b)?, self.k1.get(b)?, self.tracked.get(b)?);
        let animated = self.animated.get(b).copied().unwrap_or(u8::MAX);
        Some(match &self.hermite {
            None => layers::sample_rows(r0, r1, self.s, tracked, animated, self.slerp),
            Some(h) => {
                let (o0, i1) = (h.out0.get(b)?, h.in1.get(b)?);
                layers::sample_hermite_rows([r0, o0, r1, i1], self.s, h.dt, tracked, animated)
            }
        })
    }
}

/// The per-entity scalars of one unmasked override layer blended over nothing and completed
/// from the rest pose: what [`super::PoseAccumulator::blend_layer`] and
/// [`super::PoseAccumulator::finish`] compute from the layer's weight sum `W` and the layer
/// weight `λ`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SingleLayer {
    /// `α / W`, the factor on the layer's weighted sum.
    a: f32,
    /// `max(1 − α, 0)`, the rest pose's share.
    missing: f32,
    /// Whether the result is the rest pose.
    rest_only: bool,
}

impl SingleLayer {
    /// From the layer's weight sum and its layer weight.
    #[inline]
    pub(crate) fn new(weight_sum: f32, layer_weight: f32) -> Self {
        let alpha = (layer_weight * weight_sum.min(1.0)).clamp(0.0, 1.0);
        if alpha <= 0.0 || weight_sum <= 0.0 {
            return Self {
                a: 0.0,
                missing: 1.0,
                rest_only: true,
            };
        }
        let missing = (1.0 - alpha).max(0.0);
        Self {
            a: alpha * (1.0 / weight_sum),
            missing,
            rest_only: missing >= 1.0,
        }
    }
}

/// Samples and blends block `b` ([`LANES`] bones) from `keys` (one override layer, in
/// animation order). Translations, rotations and scales are done one after the other so that
/// the sums stay in registers. An animation whose rows lack block `b` is skipped. Where no
/// animation has a translation (or scale) track in the block, every row holds the rest values
/// and the block's translations (scales) are the rest values, which the weighted sum equals
/// up to rounding.
#[inline(always)]
pub(crate) fn blend_block(
    keys: &[BlockKeys<'_>],
    b: usize,
    layer: &SingleLayer,
    rest: &SoaTransform,
    out: &mut SoaTransform,
) {
    if layer.rest_only {
        *out = *rest;
        return;
    }
    let (a, zero) = (f32x8::splat(layer.a), f32x8::ZERO);
    let m = f32x8::splat(layer.missing);
    #[inline(always)]
    fn vec3(
        keys: &[BlockKeys<'_>],
        b: usize,
        field: impl Fn(&SoaTransform) -> &[f32x8; 3],
        rest: &[f32x8; 3],
        layer: &SingleLayer,
    ) -> [f32x8; 3] {
        let (a, zero) = (f32x8::splat(layer.a), f32x8::ZERO);
        let mut acc = [zero; 3];
        for k in keys {
            let (Some(r0), Some(r1)) = (k.k0.get(b), k.k1.get(b)) else {
                continue;
            };
            let (s, w) = (f32x8::splat(k.s), f32x8::splat(k.w));
            let (v0, v1) = (field(r0), field(r1));
            for c in 0..3 {
                acc[c] = mul_add(lerp(v0[c], v1[c], s), w, acc[c]);
            }
        }
        for c in &mut acc {
            *c = mul(*c, a);
        }
        if layer.missing > 0.0 {
            let m = f32x8::splat(layer.missing);
            for c in 0..3 {
                acc[c] = mul_add(rest[c], m, acc[c]);
            }
        }
        acc
    }
    let animated = keys.iter().fold(0, |bits, k| {
        bits | k.animated.get(b).copied().unwrap_or(u8::MAX)
    });
    out.translation = if animated & ANIMATES_TRANSLATION != 0 {
        vec3(keys, b, |t| &t.translation, &rest.translation, layer)
    } else {
        rest.translation
    };
    out.scale = if animated & ANIMATES_SCALE != 0 {
        vec3(keys, b, |t| &t.scale, &rest.scale, layer)
    } else {
        rest.scale
    };
    let mut sum = [zero; 4];
    let mut first = true;
    for k in keys {
        let (Some(r0), Some(r1), Some(&tracked)) = (k.k0.get(b), k.k1.get(b), k.tracked.get(b))
        else {
            continue;
        };
        let mut q = if k.slerp {
            slerp_rotation(&r0.rotation, &r1.rotation, f32x8::splat(k.s), tracked)
        } else {
            nlerp_rotation(&r0.rotation, &r1.rotation, f32x8::splat(k.s), tracked)
        };
        if !std::mem::replace(&mut first, false) {
            q = negate_where_negative(dot4(&sum, &q), q);
        }
        let w = f32x8::splat(k.w);
        for (r, q) in sum.iter_mut().zip(q) {
            *r = mul_add(q, w, *r);
        }
    }
    let mut p = sum;
    for c in &mut p {
        *c = mul(*c, a);
    }
    if layer.missing > 0.0 {
        let q = negate_where_negative(dot4(&p, &rest.rotation), rest.rotation);
        for (r, q) in p.iter_mut().zip(q) {
            *r = mul_add(q, m, *r);
        }
    }
    let len_sq = dot4(&p, &p);
    let ok = len_sq.simd_gt(f32x8::splat(1e-12)) & len_sq.is_finite();
    let inv = inv_sqrt(len_sq);
    for ((o, c), r) in out.rotation.iter_mut().zip(p).zip(rest.rotation) {
        *o = ok.select(mul(c, inv), r);
    }
}

/// The two 4-lane halves of an 8-lane vector.
#[inline(always)]
fn halves(v: f32x8) -> [f32x4; 2] {
    bytemuck::cast(v)
}

/// Writes lanes of three component vectors into a `Vec3` field of each output transform.
#[inline(always)]
fn write_vec3s(v: &[f32x8; 3], out: &mut [Transform], field: fn(&mut Transform) -> &mut Vec3) {
    let (x, y, z) = (halves(v[0]), halves(v[1]), halves(v[2]));
    for h in 0..2 {
        let lanes = f32x4::transpose([x[h], y[h], z[h], f32x4::ZERO]);
        for (o, v) in out.iter_mut().skip(4 * h).take(4).zip(lanes) {
            let a = v.to_array();
            *field(o) = Vec3::new(a[0], a[1], a[2]);
        }
    }
}

/// Four local transforms as affine matrices `T · R · S`, computed four at a time (the same
/// operations in the same order as glam's `Affine3A::from_scale_rotation_translation`, so the
/// results are identical). Lanes past `t.len()` are the identity.
#[inline(always)]
pub(crate) fn trs_to_affine4(t: &[Transform]) -> [Affine3A; 4] {
    let get = |l: usize| t.get(l).copied().unwrap_or(Transform::IDENTITY);
    let tr = [get(0), get(1), get(2), get(3)];
    let [x, y, z, w] = f32x4::transpose([
        f32x4::from(tr[0].rotation.to_array()),
        f32x4::from(tr[1].rotation.to_array()),
        f32x4::from(tr[2].rotation.to_array()),
        f32x4::from(tr[3].rotation.to_array()),
    ]);
    let s4 = |v: Vec3| f32x4::new([v.x, v.y, v.z, 0.0]);
    let [sx, sy, sz, _] = f32x4::transpose([
        s4(tr[0].scale),
        s4(tr[1].scale),
        s4(tr[2].scale),
        s4(tr[3].scale),
    ]);
    let (x2, y2, z2) = (x + x, y + y, z + z);
    let (xx, xy, xz) = (x * x2, x * y2, x * z2);
    let (yy, yz, zz) = (y * y2, y * z2, z * z2);
    let (wx, wy, wz) = (w * x2, w * y2, w * z2);
    let one = f32x4::ONE;
    let cols = |a: f32x4, b: f32x4, c: f32x4, s: f32x4| {
        f32x4::transpose([a * s, b * s, c * s, f32x4::ZERO]).map(bytemuck::cast::<f32x4, Vec3A>)
    };
    let c0 = cols(one - (yy + zz), xy + wz, xz - wy, sx);
    let c1 = cols(xy - wz, one - (xx + zz), yz + wx, sy);
    let c2 = cols(xz + wy, yz - wx, one - (xx + yy), sz);
    let m = |l: usize| Affine3A {
        matrix3: Mat3A::from_cols(c0[l], c1[l], c2[l]),
        translation: tr[l].translation.into(),
    };
    [m(0), m(1), m(2), m(3)]
}

/// The local matrices `T · R · S` of a block's [`LANES`] transforms as rows: `rows[k][l]` is
/// element `k` (`c0.x c0.y c0.z c1.x c1.y c1.z c2.x c2.y c2.z t.x t.y t.z`) of lane `l`:
/// the same operations in the same order as glam's `Affine3A::from_scale_rotation_translation`
/// (and [`trs_to_affine4`]), so the values are identical, left in structure of arrays for
/// [`mul_affine_by`](super::mul_affine_by) to broadcast from.
#[inline(always)]
pub(crate) fn soa_local_rows(t: &SoaTransform) -> [[f32; LANES]; 12] {
    bytemuck::cast(soa_local_matrices(t))
}

/// [`soa_local_rows`] as vectors: element `k` of every lane's local matrix in vector `k`.
#[inline(always)]
pub(crate) fn soa_local_matrices(t: &SoaTransform) -> [f32x8; 12] {
    let [x, y, z, w] = t.rotation;
    let [sx, sy, sz] = t.scale;
    let (x2, y2, z2) = (x + x, y + y, z + z);
    let (xx, xy, xz) = (mul(x, x2), mul(x, y2), mul(x, z2));
    let (yy, yz, zz) = (mul(y, y2), mul(y, z2), mul(z, z2));
    let (wx, wy, wz) = (mul(w, x2), mul(w, y2), mul(w, z2));
    let one = f32x8::ONE;
    let [tx, ty, tz] = t.translation;
    let rows: [f32x8; 12] = [
        mul(one - (yy + zz), sx),
        mul(watch(xy + wz), sx),
        mul(watch(xz - wy), sx),
        mul(watch(xy - wz), sy),
        mul(one - (xx + zz), sy),
        mul(watch(yz + wx), sy),
        mul(watch(xz + wy), sz),
        mul(watch(yz - wx), sz),
        mul(one - (xx + yy), sz),
        tx,
        ty,
        tz,
    ];
    rows
}

/// Affine matrices of up to [`LANES`] entities, one per lane: vector `k` holds element `k`
/// (`c0.x c0.y c0.z c1.x c1.y c1.z c2.x c2.y c2.z t.x t.y t.z`) of every lane's matrix. Jobs 7
/// and 9 run a group of entities of one rig in this form (see `propagate_lanes`).
pub(crate) type LaneAffine = [f32x8; 12];

/// `a · b` for every lane, with `b` given element by element (`b(k)`, as
/// [`LaneAffine`]'s order): the same operations in the same order as
/// [`mul_affine_by`](super::mul_affine_by) on each lane (fused multiply-adds where the target
/// has FMA, separate products and sums, grouped alike, where it has not), so each lane's result
/// is bit for bit the scalar product's.
#[inline(always)]
pub(crate) fn mul_lanes_by(a: &LaneAffine, b: impl Fn(usize) -> f32x8) -> LaneAffine {
    #[cfg(target_feature = "fma")]
    let madd = |x: f32x8, y: f32x8, z: f32x8| x.mul_add(y, z);
    #[cfg(not(target_feature = "fma"))]
    let madd = |x: f32x8, y: f32x8, z: f32x8| x * y + z;
    // Column `k / 3` of the product: a's columns weighted by b's elements k, k + 1, k + 2.
    let column = |k: usize, add: [f32x8; 3]| {
        let (b0, b1, b2) = (b(k), b(k + 1), b(k + 2));
        [
            madd(a[6], b2, madd(a[3], b1, madd(a[0], b0, add[0]))),
            madd(a[7], b2, madd(a[4], b1, madd(a[1], b0, add[1]))),
            madd(a[8], b2, madd(a[5], b1, madd(a[2], b0, add[2]))),
        ]
    };
    let zero = [f32x8::ZERO; 3];
    let [c0, c1, c2, t] = [
        column(0, zero),
        column(3, zero),
        column(6, zero),
        column(9, [a[9], a[10], a[11]]),
    ];
    [
        c0[0], c0[1], c0[2], c1[0], c1[1], c1[2], c2[0], c2[1], c2[2], t[0], t[1], t[2],
    ]
}

#[cfg(test)]
mod tests {
    use super::layers::sample_rows;
    use super::*;
    use crate::math::{LayerSum, PoseAccumulator, nlerp_shortest};
    use glam::Vec4;

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

    /// The series weights against `sin(t·θ) / sin θ` in f64, over the cosines it takes and
    /// fractions from 0 to 1.
    #[test]
    fn slerp_series_weights_equal_the_trigonometric_ones() {
        fn worst<const N: usize>(min_cos: f32) -> f64 {
            let mut worst = 0.0f64;
            for xi in 0..=300 {
                let x = min_cos + (1.0 - min_cos) * xi as f32 / 300.0;
                for ti in 0..=64 {
                    let t = ti as f32 / 64.0;
                    let got =
                        slerp_weight_series::<N>(f32x8::splat(t), f32x8::splat(x)).as_array()[0];
                    let theta = f64::from(x).acos();
                    let want = if theta == 0.0 {
                        f64::from(t)
                    } else {
                        (f64::from(t) * theta).sin() / theta.sin()
                    };
                    worst = worst.max((f64::from(got) - want).abs());
                }
            }
            worst
        }
        let wide = worst::<SLERP_SERIES_TERMS>(SLERP_SERIES_MIN_COS);
        let close = worst::<SLERP_SERIES_CLOSE_TERMS>(SLERP_SERIES_CLOSE_COS);
        assert!(
            wide < 1e-7 && close < 1e-7,
            "largest errors {wide:e}, {close:e}"
        );
        // The close range does need its own cut: the short series is too short beyond it.
        let short_too_wide = worst::<SLERP_SERIES_CLOSE_TERMS>(SLERP_SERIES_MIN_COS);
        assert!(short_too_wide > 1e-6, "{short_too_wide:e}");
    }

    #[test]
    fn slerp_matches_the_scalar_reference_near_far_flipped_and_untracked() {
        use crate::math::slerp_shortest;
        // Lane pairs: far apart, opposite hemispheres (the shortest path flips one), nearly
        // equal (the nlerp branch, |dot| > 0.9995), identical, and 170° apart.
        let base = poses(3);
        let mut b = poses(4);
        b[1].rotation = -b[1].rotation;
        b[2].rotation = base[2].rotation * Quat::from_rotation_y(0.01);
        b[3].rotation = base[3].rotation;
        b[4].rotation = base[4].rotation * Quat::from_rotation_x(170f32.to_radians());
        b[5].rotation = -(base[5].rotation * Quat::from_rotation_z(0.02));
        let (sa, sb) = (
            SoaTransform::from_transforms(&base),
            SoaTransform::from_transforms(&b),
        );
        let untracked_lane = 6;
        let tracked = f32x8::from(std::array::from_fn::<f32, LANES, _>(|l| {
            if l == untracked_lane { 0.0 } else { 1.0 }
        }))
        .simd_gt(f32x8::splat(0.5));
        let mut out = [Transform::IDENTITY; LANES];
        for s in [0.0, 0.1, 0.5, 0.77, 0.999] {
            sample_rows(&sa, &sb, s, tracked, u8::MAX, true).write_transforms(&mut out);
            for l in 0..LANES {
                let want = if l == untracked_lane {
                    base[l].rotation
                } else {
                    slerp_shortest(base[l].rotation, b[l].rotation, s)
                };
                let err = (out[l].rotation - want).length();
                assert!(
                    err <= 1e-6,
                    "s {s} lane {l}: {:?} vs {want:?} ({err})",
                    out[l].rotation
                );
                assert!((out[l].rotation.length() - 1.0).abs() <= 1e-6);
            }
        }
        // All lanes nearly equal: the early-out branch.
        let mut c = base.clone();
        for (q, p) in c.iter_mut().zip(&base) {
            q.rotation = p.rotation * Quat::from_rotation_x(0.005);
        }
        let sc = SoaTransform::from_transforms(&c);
        sample_rows(&sa, &sc, 0.3, tracked, u8::MAX, true).write_transforms(&mut out);
        for l in 0..LANES {
            let want = if l == untracked_lane {
                base[l].rotation
            } else {
                slerp_shortest(base[l].rotation, c[l].rotation, 0.3)
            };
            assert!((out[l].rotation - want).length() <= 1e-6, "lane {l}");
        }
    }

    #[test]
    fn exporter_noise_in_rotation_keys_forms_subnormal_products_until_flushed() {
        use crate::math::flush_negligible_quat;
        // Two keys of Fox's Run clip, tail bone: x and y are rounding noise around 1e-24.
        let k0 = Quat::from_xyzw(3.56e-25, -2.1e-24, -0.0696, 0.9975).normalize();
        let k1 = Quat::from_xyzw(-1.2e-24, 9.8e-25, -0.0712, 0.9975).normalize();
        let all = f32x8::ZERO.simd_lt(f32x8::ONE);
        let rows = |q0: Quat, q1: Quat| {
            let mut a = poses(1);
            let mut b = poses(2);
            a[3].rotation = q0;
            b[3].rotation = q1;
            (
                SoaTransform::from_transforms(&a),
                SoaTransform::from_transforms(&b),
            )
        };
        let (a, b) = rows(k0, k1);
        subnormal_watch::take();
        let noisy = sample_rows(&a, &b, 0.4, all, u8::MAX, false);
        let (found, seen) = subnormal_watch::take();
        // dot(k0, k1) and the squared length each multiply x by x and y by y: four products
        // around 1e-48, below the smallest normal float (1.2e-38).
        assert!(found >= 4, "{found} of {seen}");
        let (a, b) = rows(flush_negligible_quat(k0), flush_negligible_quat(k1));
        assert_eq!(flush_negligible_quat(k0).x, 0.0);
        let flushed = sample_rows(&a, &b, 0.4, all, u8::MAX, false);
        let (found, seen) = subnormal_watch::take();
        assert_eq!(found, 0, "{seen} lanes checked");
        // The rotation moves by less than f32 resolves.
        let (mut x, mut y) = ([Transform::IDENTITY; LANES], [Transform::IDENTITY; LANES]);
        noisy.write_transforms(&mut x);
        flushed.write_transforms(&mut y);
        assert!(
            (Vec4::from(x[3].rotation) - Vec4::from(y[3].rotation))
                .abs()
                .max_element()
                <= 1e-23
        );
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
            let m = sample_rows(&sa, &sb, s, tracked, u8::MAX, false);
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
        let (sa, sb, sr) = (
            SoaTransform::from_transforms(&a),
            SoaTransform::from_transforms(&b),
            SoaTransform::from_transforms(&rest),
        );
        let tracked =
            f32x8::from([1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]).simd_gt(f32x8::splat(0.5));
        let (ra, rb, tr) = ([sa], [sb], [tracked]);
        let keys = [
            BlockKeys {
                k0: &ra,
                k1: &rb,
                s: 0.3,
                w: 0.7,
                tracked: &tr,
                animated: &[ANIMATES_TRANSLATION | ANIMATES_SCALE],
                slerp: false,
                hermite: None,
            },
            BlockKeys {
                k0: &rb,
                k1: &ra,
                s: 0.8,
                w: 0.3,
                tracked: &tr,
                animated: &[ANIMATES_TRANSLATION | ANIMATES_SCALE],
                slerp: false,
                hermite: None,
            },
        ];
        // The interpolated poses, for the lanes' expected values.
        let weight_sum: f32 = keys.iter().map(|k| k.w).sum();
        let mut samples = Vec::new();
        for k in &keys {
            let p = sample_rows(&k.k0[0], &k.k1[0], k.s, k.tracked[0], u8::MAX, false);
            let mut t = [Transform::IDENTITY; LANES];
            p.write_transforms(&mut t);
            samples.push(t);
        }
        for lw in [1.0, 0.6, 0.0] {
            let mut back = [Transform::IDENTITY; LANES];
            let mut blended = SoaTransform::default();
            blend_block(
                &keys,
                0,
                &SingleLayer::new(weight_sum, lw),
                &sr,
                &mut blended,
            );
            blended.write_transforms(&mut back);
            for l in 0..LANES {
                let mut s = LayerSum::EMPTY;
                s.add(&samples[0][l], 0.7);
                s.add(&samples[1][l], 0.3);
                let mut acc = PoseAccumulator::EMPTY;
                acc.blend_layer(&s, (lw * s.weight.min(1.0)).clamp(0.0, 1.0));
                let e = acc.finish(&rest[l]);
                assert!((back[l].rotation - e.rotation).length() <= 1e-6, "{lw} {l}");
                assert!((back[l].translation - e.translation).length() <= 1e-6);
                assert!((back[l].scale - e.scale).length() <= 1e-6);
                // Untracked lanes keep key 0's rotation before blending.
                if l == 1 || l == 4 {
                    assert_eq!(samples[0][l].rotation, a[l].rotation);
                }
            }
        }
    }

    #[test]
    fn soa_local_rows_equal_glam_and_lanes_round_trip() {
        let p = poses(11);
        let soa = SoaTransform::from_transforms(&p);
        let rows = soa_local_rows(&soa);
        for (l, t) in p.iter().enumerate() {
            let from_rows: [f32; 12] = std::array::from_fn(|k| rows[k][l]);
            assert_eq!(from_rows, t.to_affine().to_cols_array(), "lane {l}");
            assert_eq!(soa.lane(l), *t, "lane {l}");
        }
        assert_eq!(soa.lane(LANES), Transform::IDENTITY);
        let mut edited = soa;
        edited.set_lane(5, &p[2]);
        edited.set_lane(LANES, &p[3]);
        for l in 0..LANES {
            let want = if l == 5 { p[2] } else { p[l] };
            assert_eq!(edited.lane(l), want, "lane {l}");
        }
    }

    #[test]
    fn trs_to_affine4_equals_glam() {
        let p = poses(9);
        for n in 0..=4 {
            let m = trs_to_affine4(&p[..n]);
            for (l, got) in m.iter().enumerate() {
                let e = p
                    .get(l)
                    .filter(|_| l < n)
                    .map_or(Affine3A::IDENTITY, |t| t.to_affine());
                assert_eq!(*got, e, "{n} {l}");
            }
        }
    }
}
