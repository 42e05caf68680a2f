//! A small biped and random poses of it, for the batched stages' tests.

#![allow(clippy::unwrap_used)] // tests unwrap: a failure is the test failing

use crate::asset::{RawBone, RawRig, Rig, Transform};
use glam::{Affine3A, Quat, Vec3};

/// Root, pelvis, spine, neck, head with an eye, and two legs (thigh, shin, foot, toe), about
/// 1.8 units tall, legs 0.83 long.
pub(crate) fn biped() -> Rig {
    let mut bones = Vec::new();
    let mut add = |name: &str, parent: Option<usize>, at: Vec3| {
        bones.push(RawBone {
            name: name.into(),
            parent,
            rest: Transform::from_translation(at),
        });
        bones.len() - 1
    };
    let root = add("root", None, Vec3::ZERO);
    let pelvis = add("pelvis", Some(root), Vec3::new(0.0, 0.95, 0.0));
    let spine = add("spine", Some(pelvis), Vec3::new(0.0, 0.3, 0.0));
    let neck = add("neck", Some(spine), Vec3::new(0.0, 0.3, 0.0));
    let head = add("head", Some(neck), Vec3::new(0.0, 0.1, 0.0));
    add("eye", Some(head), Vec3::new(0.0, 0.09, 0.1));
    for (side, x) in [("_l", 0.1), ("_r", -0.1)] {
        let thigh = add(
            &format!("thigh{side}"),
            Some(pelvis),
            Vec3::new(x, -0.05, 0.0),
        );
        let shin = add(
            &format!("shin{side}"),
            Some(thigh),
            Vec3::new(0.0, -0.43, 0.0),
        );
        let foot = add(
            &format!("foot{side}"),
            Some(shin),
            Vec3::new(0.0, -0.4, 0.0),
        );
        add(
            &format!("toe{side}"),
            Some(foot),
            Vec3::new(0.0, -0.05, 0.13),
        );
    }
    RawRig {
        name: "test biped".into(),
        bones,
    }
    .bake()
    .unwrap()
}

/// A bone of `rig` by name.
pub(crate) fn bone(rig: &Rig, name: &str) -> usize {
    rig.find_by_name(name).unwrap().get()
}

/// A small deterministic generator (xorshift).
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Uniform in `[lo, hi)`.
    pub(crate) fn range(&mut self, lo: f32, hi: f32) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        lo + (hi - lo) * ((self.0 >> 40) as f32 / (1u64 << 24) as f32)
    }

    /// A rotation about a random axis by up to `angle` radians.
    pub(crate) fn rotation(&mut self, angle: f32) -> Quat {
        let axis = Vec3::new(
            self.range(-1.0, 1.0),
            self.range(-1.0, 1.0),
            self.range(-1.0, 1.0),
        );
        Quat::from_axis_angle(
            axis.try_normalize().unwrap_or(Vec3::X),
            self.range(0.0, angle),
        )
    }
}

/// The rest pose with every bone turned by up to `angle`, and its model matrices.
pub(crate) fn random_pose(rig: &Rig, rng: &mut Rng, angle: f32) -> (Vec<Transform>, Vec<Affine3A>) {
    let local: Vec<Transform> = (rig.rest_pose().iter())
        .map(|r| Transform {
            rotation: (rng.rotation(angle) * r.rotation).normalize(),
            ..*r
        })
        .collect();
    let mut model: Vec<Affine3A> = Vec::with_capacity(local.len());
    for (i, (t, &p)) in local.iter().zip(rig.parent_indices()).enumerate() {
        let m = match model.get(p as usize) {
            Some(parent) if (p as usize) < i => *parent * t.to_affine(),
            _ => t.to_affine(),
        };
        model.push(m);
    }
    (local, model)
}

/// The largest difference between two poses' matrices (any column or translation component).
pub(crate) fn largest_gap(a: &[Affine3A], b: &[Affine3A]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(a, b)| {
            let d = |x: glam::Vec3A, y: glam::Vec3A| (x - y).abs().max_element();
            d(a.matrix3.x_axis, b.matrix3.x_axis)
                .max(d(a.matrix3.y_axis, b.matrix3.y_axis))
                .max(d(a.matrix3.z_axis, b.matrix3.z_axis))
                .max(d(a.translation, b.translation))
        })
        .fold(0.0, f32::max)
}

/// The matrices' bits, to compare poses exactly.
pub(crate) fn bits(model: &[Affine3A]) -> Vec<u32> {
    model
        .iter()
        .flat_map(|m| m.to_cols_array())
        .map(f32::to_bits)
        .collect()
}
