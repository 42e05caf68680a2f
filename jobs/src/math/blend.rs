use super::Transform;
use glam::{Quat, Vec3, Vec4};

/// Flips `q` onto the hemisphere of `reference` (`dot >= 0`), so that a weighted sum of the two
/// takes the shortest path.
#[inline]
pub fn quat_align(reference: Vec4, q: Quat) -> Vec4 {
    let v = Vec4::from(q);
    if reference.dot(v) < 0.0 { -v } else { v }
}

/// Accumulates one bone's pose across animation layers.
///
/// The rules, applied per bone in layer order:
/// - An **override** layer with layer weight `λ` whose animations have weights `wᵢ` (each
///   multiplied by its mask's weight for this bone) first averages its animations,
///   `P = Σ wᵢ·poseᵢ / Σ wᵢ`, then blends over what came before with `α = λ·min(Σ wᵢ, 1)`:
///   `acc = acc·(1 − α) + P·α`, and the accumulated weight becomes `W·(1 − α) + α`.
/// - An **additive** layer first completes the pose (see [`PoseAccumulator::finish`]) and then
///   adds each animation's difference from its reference pose, scaled by its weight (see
///   [`additive_apply`]).
/// - [`PoseAccumulator::finish`] fills the weight that is still missing (`1 − W`) with the rest
///   pose and normalises the rotation.
///
/// Rotations are summed as 4-vectors, each aligned to the running sum's hemisphere.
#[derive(Clone, Copy, Debug)]
pub struct PoseAccumulator {
    translation: Vec3,
    rotation: Vec4,
    scale: Vec3,
    weight: f32,
}

impl Default for PoseAccumulator {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl PoseAccumulator {
    /// Nothing accumulated yet.
    pub const EMPTY: Self = Self {
        translation: Vec3::ZERO,
        rotation: Vec4::ZERO,
        scale: Vec3::ZERO,
        weight: 0.0,
    };

    /// The accumulated weight `W` in `[0, 1]`.
    pub fn weight(&self) -> f32 {
        self.weight
    }

    /// Blends a layer's averaged pose over the accumulation with influence `alpha` in `[0, 1]`.
    #[inline(always)]
    pub fn blend_layer(&mut self, layer_pose: &LayerSum, alpha: f32) {
        if alpha <= 0.0 || layer_pose.weight <= 0.0 {
            return;
        }
        let inv = 1.0 / layer_pose.weight;
        let keep = 1.0 - alpha;
        let reference = if self.weight > 0.0 {
            self.rotation
        } else {
            layer_pose.rotation
        };
        let layer_rotation = if reference.dot(layer_pose.rotation) < 0.0 {
            -layer_pose.rotation
        } else {
            layer_pose.rotation
        };
        let a = alpha * inv;
        self.translation = self.translation * keep + layer_pose.translation * a;
        self.rotation = self.rotation * keep + layer_rotation * a;
        self.scale = self.scale * keep + layer_pose.scale * a;
        self.weight = self.weight * keep + alpha;
    }

    /// Completes the pose: the missing weight `1 − W` comes from `rest`; the rotation is
    /// normalised. An accumulation whose rotation sum vanished falls back to the rest rotation.
    #[inline(always)]
    pub fn finish(&self, rest: &Transform) -> Transform {
        let missing = (1.0 - self.weight).max(0.0);
        if missing >= 1.0 {
            return *rest;
        }
        let mut rotation = self.rotation;
        let mut translation = self.translation;
        let mut scale = self.scale;
        if missing > 0.0 {
            rotation += quat_align(rotation, rest.rotation) * missing;
            translation += rest.translation * missing;
            scale += rest.scale * missing;
        }
        let len_sq = rotation.length_squared();
        let rotation = if len_sq > 1e-12 && len_sq.is_finite() {
            Quat::from_vec4(rotation * len_sq.sqrt().recip())
        } else {
            rest.rotation
        };
        Transform {
            translation,
            rotation,
            scale,
        }
    }

    /// Restarts the accumulation from a complete pose (after an additive layer).
    #[inline]
    pub fn reset_to(&mut self, pose: &Transform) {
        self.translation = pose.translation;
        self.rotation = Vec4::from(pose.rotation);
        self.scale = pose.scale;
        self.weight = 1.0;
    }
}

/// The weighted sum of one layer's animations for one bone.
#[derive(Clone, Copy, Debug)]
pub struct LayerSum {
    /// Σ wᵢ·tᵢ.
    pub translation: Vec3,
    /// Σ wᵢ·qᵢ, each aligned with the first.
    pub rotation: Vec4,
    /// Σ wᵢ·sᵢ.
    pub scale: Vec3,
    /// Σ wᵢ.
    pub weight: f32,
}

impl Default for LayerSum {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl LayerSum {
    /// An empty sum.
    pub const EMPTY: Self = Self {
        translation: Vec3::ZERO,
        rotation: Vec4::ZERO,
        scale: Vec3::ZERO,
        weight: 0.0,
    };

    /// Adds `pose` with weight `w`.
    #[inline(always)]
    pub fn add(&mut self, pose: &Transform, w: f32) {
        if w <= 0.0 {
            return;
        }
        let q = if self.weight > 0.0 {
            quat_align(self.rotation, pose.rotation)
        } else {
            Vec4::from(pose.rotation)
        };
        self.translation += pose.translation * w;
        self.rotation += q * w;
        self.scale += pose.scale * w;
        self.weight += w;
    }
}

/// Applies an additive animation: `pose` relative to `reference`, scaled by `w`, on top of
/// `base`. Translation adds `w·(t − t_ref)`; rotation multiplies by the weighted delta
/// `nlerp(identity, r_ref⁻¹·r, w)` on the right (local space); scale multiplies by
/// `lerp(1, s / s_ref, w)`.
#[inline]
pub fn additive_apply(
    base: &Transform,
    pose: &Transform,
    reference: &Transform,
    w: f32,
) -> Transform {
    if w <= 0.0 {
        return *base;
    }
    let delta_rotation = reference.rotation.conjugate() * pose.rotation;
    let delta_v = quat_align(Vec4::W, delta_rotation);
    let weighted = Vec4::W + (delta_v - Vec4::W) * w;
    let weighted = Quat::from_vec4(weighted.normalize_or(Vec4::W));
    let safe_ref_scale = Vec3::select(
        reference.scale.abs().cmpgt(Vec3::splat(1e-12)),
        reference.scale,
        Vec3::ONE,
    );
    let delta_scale = pose.scale / safe_ref_scale;
    Transform {
        translation: base.translation + (pose.translation - reference.translation) * w,
        rotation: (base.rotation * weighted).normalize(),
        scale: base.scale * (Vec3::ONE + (delta_scale - Vec3::ONE) * w),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pose(t: f32, angle: f32) -> Transform {
        Transform::new(Vec3::splat(t), Quat::from_rotation_x(angle), Vec3::ONE)
    }

    #[test]
    fn workload_blend_is_the_normalised_weighted_sum() {
        let a = pose(1.0, 0.2);
        let b = pose(3.0, 0.6);
        let mut layer = LayerSum::EMPTY;
        layer.add(&a, 0.7);
        layer.add(&b, 0.3);
        let mut acc = PoseAccumulator::EMPTY;
        acc.blend_layer(&layer, 1.0);
        let out = acc.finish(&Transform::IDENTITY);
        assert!((out.translation - Vec3::splat(1.6)).length() < 1e-6);
        let sum = Vec4::from(a.rotation) * 0.7 + Vec4::from(b.rotation) * 0.3;
        let expected = Quat::from_vec4(sum.normalize());
        assert!(out.rotation.dot(expected) > 1.0 - 1e-6);
    }

    #[test]
    fn missing_weight_comes_from_rest() {
        let a = pose(2.0, 0.0);
        let mut layer = LayerSum::EMPTY;
        layer.add(&a, 0.25);
        let mut acc = PoseAccumulator::EMPTY;
        acc.blend_layer(&layer, 0.25);
        let rest = pose(10.0, 0.0);
        let out = acc.finish(&rest);
        // 0.25 * 2 + 0.75 * 10 = 8
        assert!(
            (out.translation - Vec3::splat(8.0)).length() < 1e-5,
            "{}",
            out.translation
        );
    }

    #[test]
    fn additive_with_weight_one_adds_the_difference() {
        let base = pose(1.0, 0.1);
        let reference = pose(0.5, 0.2);
        let clip = pose(1.5, 0.5);
        let out = additive_apply(&base, &clip, &reference, 1.0);
        assert!((out.translation - Vec3::splat(2.0)).length() < 1e-6);
        assert!(out.rotation.dot(Quat::from_rotation_x(0.4)).abs() > 1.0 - 1e-6);
    }
}
