//! The solvers' geometry for [`LANES`] entities at once, one per `f32x8` lane: vectors,
//! quaternions, rotation matrices and rigid motions, and the lane forms of [`arc`],
//! [`rotation_from_cos_sin`], [`turn_about`] and [`weighted`] that the batched stages solve
//! with.
//!
//! Each lane takes the scalar form's branches as its own values decide (a select per branch),
//! and no value crosses lanes, so what a lane computes does not depend on the others: an
//! entity's pose is the same whatever group it is solved in. The scalar forms are the
//! reference; the lane forms agree with them to rounding (`wide`'s polynomial `atan2` and
//! `sin_cos` stand for libm's), which the stages' tests bound.
//!
//! [`arc`]: super::arc
//! [`rotation_from_cos_sin`]: super::rotation_from_cos_sin
//! [`turn_about`]: super::turn_about
//! [`weighted`]: super::weighted

use super::Motion;
use crate::asset::Transform;
use crate::math::soa::LANES;
use crate::pose_stage::StagePose;
use glam::{Affine3A, Mat3A, Vec3A};
use std::ops::{Add, Mul, Neg, Range, Sub};
use wide::f32x8;

pub(crate) type F = f32x8;

/// Lanes of `f` per entity.
#[inline]
pub(crate) fn gather(f: impl Fn(usize) -> f32) -> F {
    F::from(std::array::from_fn::<f32, LANES, _>(f))
}

/// A vector per lane.
#[derive(Clone, Copy, Debug)]
pub(crate) struct V3 {
    pub(crate) x: F,
    pub(crate) y: F,
    pub(crate) z: F,
}

impl V3 {
    pub(crate) const ZERO: Self = Self::new(0.0, 0.0, 0.0);

    /// `(x, y, z)` in every lane.
    #[inline]
    pub(crate) const fn new(x: f32, y: f32, z: f32) -> Self {
        Self {
            x: F::splat(x),
            y: F::splat(y),
            z: F::splat(z),
        }
    }

    /// Lane `k` is `f(k)`.
    #[inline]
    pub(crate) fn gather(f: impl Fn(usize) -> Vec3A) -> Self {
        let v: [Vec3A; LANES] = std::array::from_fn(f);
        Self {
            x: gather(|k| v[k].x),
            y: gather(|k| v[k].y),
            z: gather(|k| v[k].z),
        }
    }

    /// All lanes.
    #[inline]
    pub(crate) fn lanes(&self) -> [Vec3A; LANES] {
        let (x, y, z) = (self.x.to_array(), self.y.to_array(), self.z.to_array());
        std::array::from_fn(|k| Vec3A::new(x[k], y[k], z[k]))
    }

    #[inline]
    pub(crate) fn dot(self, o: Self) -> F {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    #[inline]
    pub(crate) fn cross(self, o: Self) -> Self {
        Self {
            x: self.y * o.z - self.z * o.y,
            y: self.z * o.x - self.x * o.z,
            z: self.x * o.y - self.y * o.x,
        }
    }

    #[inline]
    pub(crate) fn length_squared(self) -> F {
        self.dot(self)
    }

    #[inline]
    pub(crate) fn length(self) -> F {
        self.length_squared().sqrt()
    }

    /// `self` normalised, or zero where its length has no finite, positive reciprocal (glam's
    /// `normalize_or_zero`).
    #[inline]
    pub(crate) fn normalize_or_zero(self) -> Self {
        let rcp = F::ONE / self.length();
        let ok = rcp.is_finite() & rcp.simd_gt(F::ZERO);
        Self::select(ok, self * rcp, Self::ZERO)
    }

    /// Per lane, `a` where `mask` is set, else `b`.
    #[inline]
    pub(crate) fn select(mask: F, a: Self, b: Self) -> Self {
        Self {
            x: mask.select(a.x, b.x),
            y: mask.select(a.y, b.y),
            z: mask.select(a.z, b.z),
        }
    }

    /// A unit normal of unit `self` (glam's `any_orthonormal_vector`).
    #[inline]
    pub(crate) fn any_orthonormal(self) -> Self {
        let sign = F::ONE.copysign(self.z);
        let a = -F::ONE / (sign + self.z);
        let b = self.x * self.y * a;
        Self {
            x: b,
            y: sign + self.y * self.y * a,
            z: -self.y,
        }
    }
}

impl Add for V3 {
    type Output = Self;
    #[inline]
    fn add(self, o: Self) -> Self {
        Self {
            x: self.x + o.x,
            y: self.y + o.y,
            z: self.z + o.z,
        }
    }
}

impl Sub for V3 {
    type Output = Self;
    #[inline]
    fn sub(self, o: Self) -> Self {
        Self {
            x: self.x - o.x,
            y: self.y - o.y,
            z: self.z - o.z,
        }
    }
}

impl Mul<F> for V3 {
    type Output = Self;
    #[inline]
    fn mul(self, s: F) -> Self {
        Self {
            x: self.x * s,
            y: self.y * s,
            z: self.z * s,
        }
    }
}

impl Neg for V3 {
    type Output = Self;
    #[inline]
    fn neg(self) -> Self {
        Self {
            x: -self.x,
            y: -self.y,
            z: -self.z,
        }
    }
}

/// A quaternion per lane.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Q {
    pub(crate) v: V3,
    pub(crate) w: F,
}

impl Q {
    pub(crate) const IDENTITY: Self = Self {
        v: V3::ZERO,
        w: F::ONE,
    };

    #[inline]
    pub(crate) fn normalize(self) -> Self {
        let n = (self.v.length_squared() + self.w * self.w).sqrt();
        let r = F::ONE / n;
        Self {
            v: self.v * r,
            w: self.w * r,
        }
    }

    #[inline]
    pub(crate) fn select(mask: F, a: Self, b: Self) -> Self {
        Self {
            v: V3::select(mask, a.v, b.v),
            w: mask.select(a.w, b.w),
        }
    }

    /// `self · o` (`o` first, then `self`).
    #[inline]
    pub(crate) fn mul(self, o: Self) -> Self {
        Self {
            v: o.v * self.w + self.v * o.w + self.v.cross(o.v),
            w: self.w * o.w - self.v.dot(o.v),
        }
    }

    /// `x` turned by `self` (unit).
    #[inline]
    pub(crate) fn rotate(self, x: V3) -> V3 {
        let t = self.v.cross(x) * F::splat(2.0);
        x + t * self.w + self.v.cross(t)
    }
}

/// A 3 × 3 matrix per lane, by columns.
#[derive(Clone, Copy, Debug)]
pub(crate) struct M3 {
    pub(crate) x: V3,
    pub(crate) y: V3,
    pub(crate) z: V3,
}

impl M3 {
    pub(crate) const IDENTITY: Self = Self {
        x: V3::new(1.0, 0.0, 0.0),
        y: V3::new(0.0, 1.0, 0.0),
        z: V3::new(0.0, 0.0, 1.0),
    };

    /// Lane `k` is `f(k)`.
    #[inline]
    pub(crate) fn gather(f: impl Fn(usize) -> Mat3A) -> Self {
        let m: [Mat3A; LANES] = std::array::from_fn(f);
        Self {
            x: V3::gather(|k| m[k].x_axis),
            y: V3::gather(|k| m[k].y_axis),
            z: V3::gather(|k| m[k].z_axis),
        }
    }

    /// All lanes.
    #[inline]
    pub(crate) fn lanes(&self) -> [Mat3A; LANES] {
        let (x, y, z) = (self.x.lanes(), self.y.lanes(), self.z.lanes());
        std::array::from_fn(|k| Mat3A::from_cols(x[k], y[k], z[k]))
    }

    /// The rotation of unit `q` (glam's `Mat3A::from_quat`).
    #[inline]
    pub(crate) fn from_quat(q: Q) -> Self {
        let two = F::splat(2.0);
        let (x, y, z, w) = (q.v.x, q.v.y, q.v.z, q.w);
        let (x2, y2, z2) = (x * two, y * two, z * two);
        let (xx, xy, xz) = (x * x2, x * y2, x * z2);
        let (yy, yz, zz) = (y * y2, y * z2, z * z2);
        let (wx, wy, wz) = (w * x2, w * y2, w * z2);
        Self {
            x: V3 {
                x: F::ONE - (yy + zz),
                y: xy + wz,
                z: xz - wy,
            },
            y: V3 {
                x: xy - wz,
                y: F::ONE - (xx + zz),
                z: yz + wx,
            },
            z: V3 {
                x: xz + wy,
                y: yz - wx,
                z: F::ONE - (xx + yy),
            },
        }
    }

    #[inline]
    pub(crate) fn mul_vec(&self, v: V3) -> V3 {
        self.x * v.x + self.y * v.y + self.z * v.z
    }

    #[inline]
    pub(crate) fn mul_mat(&self, o: &Self) -> Self {
        Self {
            x: self.mul_vec(o.x),
            y: self.mul_vec(o.y),
            z: self.mul_vec(o.z),
        }
    }
}

/// An entity transform per lane (`world = transform · model`, uniform or not): its matrix and
/// translation, and the inverse matrix, `scale⁻¹ · rotationᵀ` (the rotation unit length, as
/// [`Transform::is_valid`] requires).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LaneTransform {
    to_world: M3,
    translation: V3,
    to_model: M3,
}

impl LaneTransform {
    /// Lane `k` is `f(k)` (scales non-zero).
    #[inline]
    pub(crate) fn gather(f: impl Fn(usize) -> Transform) -> Self {
        let t: [Transform; LANES] = std::array::from_fn(f);
        let q = Q {
            v: V3::gather(|k| Vec3A::new(t[k].rotation.x, t[k].rotation.y, t[k].rotation.z)),
            w: gather(|k| t[k].rotation.w),
        };
        let s = V3::gather(|k| t[k].scale.into());
        let r = M3::from_quat(q);
        let (ix, iy, iz) = (F::ONE / s.x, F::ONE / s.y, F::ONE / s.z);
        let row = |c: fn(&V3) -> F| V3 {
            x: c(&r.x) * ix,
            y: c(&r.y) * iy,
            z: c(&r.z) * iz,
        };
        Self {
            to_world: M3 {
                x: r.x * s.x,
                y: r.y * s.y,
                z: r.z * s.z,
            },
            translation: V3::gather(|k| t[k].translation.into()),
            to_model: M3 {
                x: row(|v| v.x),
                y: row(|v| v.y),
                z: row(|v| v.z),
            },
        }
    }

    /// The world translation (where the model origin lies).
    #[inline]
    pub(crate) fn translation(&self) -> V3 {
        self.translation
    }

    /// A model-space point in world space.
    #[inline]
    pub(crate) fn world_point(&self, p: V3) -> V3 {
        self.to_world.mul_vec(p) + self.translation
    }

    /// A world-space point in model space.
    #[inline]
    pub(crate) fn model_point(&self, p: V3) -> V3 {
        self.to_model.mul_vec(p - self.translation)
    }

    /// A world-space direction in model space.
    #[inline]
    pub(crate) fn model_vector(&self, v: V3) -> V3 {
        self.to_model.mul_vec(v)
    }
}

/// A rigid motion per lane, `x ↦ to + R·(x − pivot)`, as [`Motion`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct LaneMotion {
    pub(crate) r: M3,
    pub(crate) pivot: V3,
    pub(crate) to: V3,
}

impl LaneMotion {
    /// The motion that moves nothing (exactly: `point(x)` is `x`).
    pub(crate) const IDENTITY: Self = Self {
        r: M3::IDENTITY,
        pivot: V3::ZERO,
        to: V3::ZERO,
    };

    /// Per lane, `a` where `mask` is set, else `b`.
    #[inline]
    pub(crate) fn select(mask: F, a: Self, b: Self) -> Self {
        Self {
            r: M3 {
                x: V3::select(mask, a.r.x, b.r.x),
                y: V3::select(mask, a.r.y, b.r.y),
                z: V3::select(mask, a.r.z, b.r.z),
            },
            pivot: V3::select(mask, a.pivot, b.pivot),
            to: V3::select(mask, a.to, b.to),
        }
    }

    #[inline]
    pub(crate) fn turn(q: Q, pivot: V3) -> Self {
        Self::turn_and_move(q, pivot, pivot)
    }

    #[inline]
    pub(crate) fn turn_and_move(q: Q, pivot: V3, to: V3) -> Self {
        Self {
            r: M3::from_quat(q),
            pivot,
            to,
        }
    }

    /// This motion, then `outer`.
    #[inline]
    pub(crate) fn then(&self, outer: &Self) -> Self {
        Self {
            r: outer.r.mul_mat(&self.r),
            pivot: self.pivot,
            to: outer.point(self.to),
        }
    }

    #[inline]
    pub(crate) fn point(&self, x: V3) -> V3 {
        self.to + self.r.mul_vec(x - self.pivot)
    }

    /// All lanes, as scalar motions.
    #[inline]
    pub(crate) fn lanes(&self) -> [Motion; LANES] {
        let (r, pivot, to) = (self.r.lanes(), self.pivot.lanes(), self.to.lanes());
        std::array::from_fn(|k| Motion {
            r: r[k],
            pivot: pivot[k],
            to: to[k],
        })
    }
}

/// The model matrices of a group's entities, one per lane, moved a bone at a time across the
/// lanes: a bone's matrix in each entity is read (two 8 × 8 transposes of the matrices as 16
/// floats: three columns and the translation, each with its padding float), moved by its lane's
/// motion, and written back to the entities whose lanes the move names. The stages use it for
/// groups whose entities move the same bones.
///
/// A lane computes what [`Motion::move_bones`] computes for its entity, bit for bit: the same
/// products and sums in the same order (glam's `Mat3A` product is three column sums, as
/// [`M3::mul_mat`]), so a group moved this way equals its entities moved one at a time.
pub(crate) struct GroupModels<'g> {
    models: [&'g mut [Affine3A]; LANES],
    /// Bones that every lane's entity has (0 with an empty lane).
    shared: usize,
}

impl<'g> GroupModels<'g> {
    /// The model matrices of `poses` (the first [`LANES`]; lanes past them are empty).
    pub(crate) fn new(poses: &'g mut [StagePose<'_>]) -> Self {
        let mut entities = poses.iter_mut();
        let models: [&'g mut [Affine3A]; LANES] =
            std::array::from_fn(|_| entities.next().map_or(&mut [][..], |p| &mut *p.model));
        let shared = models.iter().map(|m| m.len()).min().unwrap_or(0);
        Self { models, shared }
    }

    /// Moves bones `range` of the entities in lanes `lanes` (a bit per lane) by their lane's
    /// motion (`model' = motion · model`), as [`Motion::move_bones`] does: an entity that lacks
    /// a bone of the range is left alone.
    #[inline]
    pub(crate) fn move_bones(&mut self, motion: &LaneMotion, lanes: u32, range: Range<usize>) {
        if range.is_empty() {
            return;
        }
        let mut lanes = lanes;
        if range.end > self.shared {
            for (k, model) in self.models.iter().enumerate() {
                if range.end > model.len() {
                    lanes &= !(1 << k);
                }
            }
        }
        if lanes == 0 {
            return;
        }
        for bone in range {
            let (lo, hi) = self.load(bone);
            let column = |rows: &[F; 8], r: usize| V3 {
                x: rows[r],
                y: rows[r + 1],
                z: rows[r + 2],
            };
            let m = motion.r.mul_mat(&M3 {
                x: column(&lo, 0),
                y: column(&lo, 4),
                z: column(&hi, 0),
            });
            let t = motion.point(column(&hi, 4));
            let lo = [m.x.x, m.x.y, m.x.z, lo[3], m.y.x, m.y.y, m.y.z, lo[7]];
            let hi = [m.z.x, m.z.y, m.z.z, hi[3], t.x, t.y, t.z, hi[7]];
            self.store(bone, lo, hi, lanes);
        }
    }

    /// Bone `bone` of every lane's entity as 16 rows, in two halves: its matrix's floats in
    /// column order, padding included (zero in empty lanes).
    #[inline(always)]
    fn load(&self, bone: usize) -> ([F; 8], [F; 8]) {
        let (mut lo, mut hi) = ([F::ZERO; LANES], [F::ZERO; LANES]);
        for (k, model) in self.models.iter().enumerate() {
            if let Some(m) = model.get(bone) {
                [lo[k], hi[k]] = bytemuck::cast::<Affine3A, [F; 2]>(*m);
            }
        }
        (F::transpose(lo), F::transpose(hi))
    }

    /// Writes rows as [`GroupModels::load`] reads them into bone `bone` of the entities in
    /// `lanes`.
    #[inline(always)]
    fn store(&mut self, bone: usize, lo: [F; 8], hi: [F; 8], lanes: u32) {
        let (lo, hi) = (F::transpose(lo), F::transpose(hi));
        for (k, model) in self.models.iter_mut().enumerate() {
            if lanes & (1 << k) != 0
                && let Some(m) = model.get_mut(bone)
            {
                *m = bytemuck::cast::<[F; 2], Affine3A>([lo[k], hi[k]]);
            }
        }
    }
}

/// [`super::arc`] per lane: the shortest rotation from `from` to `to` (both non-zero).
#[inline]
pub(crate) fn arc(from: V3, to: V3) -> Q {
    let n = (from.length_squared() * to.length_squared()).sqrt();
    let dot = from.dot(to);
    let near = F::splat(1.0 - 2.0 * f32::EPSILON) * n;
    let c = from.cross(to);
    // Nearly parallel lanes keep their small turn, as the scalar form does.
    let mut q = Q { v: c, w: n + dot }.normalize();
    let opposite = dot.simd_lt(-near);
    if opposite.any() {
        // Half a turn, about any normal of `from`.
        let axis = (from * (F::ONE / from.length())).any_orthonormal();
        q = Q::select(
            opposite,
            Q {
                v: axis,
                w: F::ZERO,
            },
            q,
        );
    }
    q
}

/// [`super::rotation_from_cos_sin`] per lane: the turn about unit `axis` by the angle whose
/// cosine and sine are `cos`, `sin` times any positive factor.
#[inline]
pub(crate) fn rotation_from_cos_sin(axis: V3, cos: F, sin: F) -> Q {
    let n = (cos * cos + sin * sin).sqrt();
    let (c, s) = (cos / n, sin / n);
    let two = F::splat(2.0);
    let h_pos = (F::HALF * (F::ONE + c)).sqrt();
    let h_neg = (F::HALF * (F::ONE - c)).sqrt().copysign(s);
    let positive = c.simd_ge(F::ZERO);
    let half_cos = positive.select(h_pos, s / (two * h_neg));
    let half_sin = positive.select(s / (two * h_pos), h_neg);
    let q = Q {
        v: axis * half_sin,
        w: half_cos,
    }
    .normalize();
    Q::select(n.simd_le(F::splat(f32::MIN_POSITIVE)), Q::IDENTITY, q)
}

/// [`super::turn_about`] per lane, and the lanes where it is defined (where neither projection
/// vanishes).
#[inline]
pub(crate) fn turn_about(axis: V3, from: V3, to: V3) -> (Q, F) {
    let a = from - axis * from.dot(axis);
    let b = to - axis * to.dot(axis);
    let scale = from.length_squared() + to.length_squared();
    let tiny = F::splat(1e-12) * scale.max(F::splat(f32::MIN_POSITIVE));
    let ok = a.length_squared().simd_gt(tiny) & b.length_squared().simd_gt(tiny);
    let q = rotation_from_cos_sin(axis, a.dot(b), a.cross(b).dot(axis));
    (Q::select(ok, q, Q::IDENTITY), ok)
}

/// [`super::weighted`] per lane: the rotation by `w` (in `[0, 1]`) of the way from the
/// identity to unit `q`, the short way.
#[inline]
pub(crate) fn weighted(q: Q, w: F) -> Q {
    let full = w.simd_ge(F::ONE);
    if full.all() {
        return q;
    }
    let whole = q;
    let flip = q.w.simd_lt(F::ZERO);
    let q = Q::select(flip, Q { v: -q.v, w: -q.w }, q);
    let s = q.v.length();
    let (sin, cos) = (w * s.atan2(q.w)).sin_cos();
    let turned = Q {
        v: q.v * (sin / s),
        w: cos,
    };
    // Within a few microradians of the identity: the chord is the arc.
    let chord = Q {
        v: q.v * w,
        w: F::ONE + (q.w - F::ONE) * w,
    }
    .normalize();
    let part = Q::select(s.simd_le(F::splat(1e-6)), chord, turned);
    Q::select(full, whole, part)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests unwrap: a failure is the test failing
    use super::*;
    use crate::ik::test_rig::{Rng, biped, bits, random_pose};
    use crate::pose_stage::LocalPose;
    use sinew_runtime::store::Entity;

    /// Moving bones across the lanes gives each entity named the bits that moving its bones
    /// alone with its lane's motion gives ([`Motion::move_bones`]), and leaves the other
    /// entities, an entity that lacks a bone of the range included, as they were; groups of
    /// every size.
    #[test]
    fn group_moves_equal_entity_moves() {
        let rig = biped();
        let mut rng = Rng::new(5);
        for n in 1..=LANES {
            let (local, _) = random_pose(&rig, &mut rng, 0.5);
            let mut models: Vec<Vec<Affine3A>> =
                (0..n).map(|_| random_pose(&rig, &mut rng, 1.0).1).collect();
            // The last entity lacks bones 10 and up.
            models[n - 1].truncate(10);
            let before = models.clone();
            let v = |rng: &mut Rng| Vec3A::new(rng.range(-2.0, 2.0), rng.range(0.0, 2.0), 0.3);
            let q = |rng: &mut Rng| {
                let q = rng.rotation(3.0);
                Q {
                    v: V3::new(q.x, q.y, q.z),
                    w: F::splat(q.w),
                }
            };
            // A motion per lane: lane k's rotation, pivot and destination.
            let turns: Vec<Q> = (0..LANES).map(|_| q(&mut rng)).collect();
            let pick = |c: fn(&Q) -> F| gather(|k| c(&turns[k]).to_array()[k]);
            let motion = LaneMotion::turn_and_move(
                Q {
                    v: V3 {
                        x: pick(|q| q.v.x),
                        y: pick(|q| q.v.y),
                        z: pick(|q| q.v.z),
                    },
                    w: pick(|q| q.w),
                },
                V3::gather(|_| v(&mut Rng::new(n as u64))),
                V3::gather(|k| v(&mut Rng::new(k as u64 + 40))),
            );
            let lanes = 0b1011_0111u32;
            for range in [3..12, 0..8] {
                let mut poses: Vec<StagePose<'_>> = models
                    .iter_mut()
                    .map(|model| StagePose {
                        entity: Entity::DANGLING,
                        rig: &rig,
                        local: LocalPose::aos(&local),
                        model,
                        transform: None,
                    })
                    .collect();
                GroupModels::new(&mut poses).move_bones(&motion, lanes, range.clone());
            }
            for (k, (got, before)) in models.iter().zip(&before).enumerate() {
                let mut want = before.clone();
                if lanes & (1 << k) != 0 {
                    for range in [3..12, 0..8] {
                        motion.lanes()[k].move_bones(&mut want, range);
                    }
                }
                assert_eq!(bits(got), bits(&want), "{n} entities, entity {k}");
                let moved = got.iter().zip(before).any(|(a, b)| a != b);
                assert_eq!(moved, lanes & (1 << k) != 0, "{n} entities, entity {k}");
            }
        }
    }
}
