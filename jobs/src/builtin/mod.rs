//! The built-in procedural character: rig, skinned mesh and clips made in code, no asset files.
//!
//! [`character`] builds the editable assets, deterministically (no randomness: two calls give
//! equal values and equal content hashes); [`bake_character`] bakes them through an
//! [`AssetRegistry`], so every entity of the crowd shares one `Arc` of each.
//!
//! - **Rig**: 45 bones, Y up, facing +Z, the character's left on +X, about 1.8 m tall, T-pose
//!   rest with identity rest rotations. `root` sits on the ground (it carries root motion), then
//!   `hips`, `spine_01..03`, `chest`, `neck`, `head` (+ `jaw`, `eye_l/_r`), and per side
//!   `clavicle`, `upperarm`, `lowerarm`, `hand`, three-joint `thumb`, `index` and `middle`
//!   chains, `thigh`, `shin`, `foot`, `toe` (suffixes `_l`, `_r`).
//! - **Mesh**: about 4 600 vertices in closed capsule/ellipsoid shells around the bones, exact
//!   outward normals, counter-clockwise triangles, smooth weights on up to four bones. Its bone
//!   list is the rig's bones **sorted by name**, not in rig order, so the rig → mesh remap
//!   (matching by name hash) is always exercised.
//! - **Clips** (all looping; the last key equals the first): `idle` (3 s, Hermite keys),
//!   `walk` (1 s at [`WALK_SPEED`]) and `run` (0.7 s at [`RUN_SPEED`]) with root motion, foot
//!   contact curves ([`FOOT_CONTACT_LEFT`], [`FOOT_CONTACT_RIGHT`]) and [`FOOTSTEP`] events,
//!   `wave` (2 s, upper body only, for a layer masked by
//!   [`BuiltinCharacter::upper_body_mask`]) and `breathe` (4 s, additive on the rest pose).
//!
//! ```
//! use sinew_jobs::asset::AssetRegistry;
//! use sinew_jobs::builtin;
//!
//! let registry = AssetRegistry::new();
//! let baked = builtin::bake_character(&registry)?;
//! assert_eq!(baked.rig.bone_count(), baked.mesh.bone_count());
//! assert!(baked.walk.root_motion());
//! // Baking again shares the same assets.
//! let again = builtin::bake_character(&registry)?;
//! assert!(std::sync::Arc::ptr_eq(&baked.mesh, &again.mesh));
//! # Ok::<(), sinew_jobs::asset::BakeError>(())
//! ```

mod clips;
mod mesh;
mod rig;

pub use clips::{
    FOOT_CONTACT_LEFT, FOOT_CONTACT_RIGHT, FOOTSTEP, FOOTSTEP_LEFT, FOOTSTEP_RIGHT, RUN_SPEED,
    WALK_SPEED,
};
pub use rig::{FOOT_LEFT, FOOT_RIGHT, HIPS, ROOT, SPINE_01};

use crate::asset::{
    AssetRegistry, AvatarMask, BakeError, Clip, RawAvatarMask, RawClip, RawRig, RawSkinnedMesh,
    Rig, SkinnedMesh,
};
use crate::component::{
    AnimationToProcess, Animations, BlendMode, EntityTransform, FrameSlot, LayerWeights, RigRef,
    RootMotion, SamplingCursors, SkinRef,
};
use std::sync::Arc;

/// The editable (`Raw*`) assets of the built-in character.
#[derive(Clone, Debug, PartialEq)]
pub struct BuiltinCharacter {
    /// The 45-bone humanoid rig.
    pub rig: RawRig,
    /// The skinned mesh (bones sorted by name, unlike the rig).
    pub mesh: RawSkinnedMesh,
    /// Standing idle, 3 s, Hermite keys.
    pub idle: RawClip,
    /// Walk cycle, 1 s, root motion at [`WALK_SPEED`], contact curves and footstep events.
    pub walk: RawClip,
    /// Run cycle, 0.7 s, root motion at [`RUN_SPEED`], contact curves and footstep events.
    pub run: RawClip,
    /// Right-arm wave, 2 s, upper-body bones only: play it on a layer masked by
    /// [`BuiltinCharacter::upper_body_mask`].
    pub wave: RawClip,
    /// Breathing, 4 s, additive relative to the rest pose (spine, chest, shoulders).
    pub breathe: RawClip,
    /// Weight 1 on `spine_01` and every bone below it (spine, chest, arms, hands, neck,
    /// head); weight 0 on the root, hips and legs.
    pub upper_body_mask: RawAvatarMask,
}

/// The baked, shared assets of the built-in character.
#[derive(Clone, Debug)]
pub struct BakedCharacter {
    /// The rig.
    pub rig: Arc<Rig>,
    /// The skinned mesh.
    pub mesh: Arc<SkinnedMesh>,
    /// Standing idle.
    pub idle: Arc<Clip>,
    /// Walk cycle (root motion).
    pub walk: Arc<Clip>,
    /// Run cycle (root motion).
    pub run: Arc<Clip>,
    /// Upper-body wave.
    pub wave: Arc<Clip>,
    /// Additive breathing.
    pub breathe: Arc<Clip>,
    /// The upper-body mask.
    pub upper_body_mask: Arc<AvatarMask>,
}

/// The components of one member of [`BakedCharacter::crowd_member`]'s reference crowd.
pub type CrowdMember = (
    RigRef,
    Animations,
    LayerWeights,
    FrameSlot,
    SamplingCursors,
    SkinRef,
    EntityTransform,
    RootMotion,
);

impl BakedCharacter {
    /// Member `i` of the reference crowd that the crowd tests and the pipeline benches animate:
    /// walk and run blended by `r = (i mod 7) / 6` (weights `1 − r` and `r`, times `0.137·i`
    /// and `0.7` of it), breathing on additive layer 2 (time `1.3 · 0.137·i`) and, for every
    /// third member, the wave on override layer 1 masked to the upper body; root motion on,
    /// entity at the origin. Deterministic in `i`.
    pub fn crowd_member(&self, i: usize) -> CrowdMember {
        let t = i as f32 * 0.137;
        let r = (i % 7) as f32 / 6.0;
        let mut anims = vec![
            AnimationToProcess::new(self.walk.clone())
                .at(t)
                .weight(1.0 - r),
            AnimationToProcess::new(self.run.clone())
                .at(t * 0.7)
                .weight(r),
            AnimationToProcess::new(self.breathe.clone())
                .at(t * 1.3)
                .layer(2, BlendMode::Additive),
        ];
        if i.is_multiple_of(3) {
            anims.push(
                AnimationToProcess::new(self.wave.clone())
                    .at(t)
                    .layer(1, BlendMode::Override)
                    .mask(self.upper_body_mask.clone()),
            );
        }
        (
            RigRef(self.rig.clone()),
            Animations::new(anims),
            LayerWeights::default(),
            FrameSlot::default(),
            SamplingCursors::default(),
            SkinRef::new(self.mesh.clone()),
            EntityTransform::default(),
            RootMotion::default(),
        )
    }
}

/// Builds the built-in character's editable assets. Deterministic.
pub fn character() -> BuiltinCharacter {
    let (rig, ids) = rig::build();
    let mesh = mesh::build(&rig, &ids);
    BuiltinCharacter {
        idle: clips::idle(&rig, &ids),
        walk: clips::walk(&rig, &ids),
        run: clips::run(&rig, &ids),
        wave: clips::wave(&rig, &ids),
        breathe: clips::breathe(&rig, &ids),
        upper_body_mask: RawAvatarMask {
            name: "upper body".into(),
            bones: vec![(SPINE_01.into(), 1.0)],
            include_descendants: true,
        },
        rig,
        mesh,
    }
}

impl BuiltinCharacter {
    /// Bakes every asset and interns it in `registry`.
    ///
    /// # Errors
    /// The first [`BakeError`] of any asset (none is expected for the unmodified character;
    /// the error is possible after editing the raw assets).
    pub fn bake(&self, registry: &AssetRegistry) -> Result<BakedCharacter, BakeError> {
        let rig = self.rig.bake()?;
        let clip = |c: &RawClip| c.bake(&rig).map(|c| registry.clip(c));
        let idle = clip(&self.idle)?;
        let walk = clip(&self.walk)?;
        let run = clip(&self.run)?;
        let wave = clip(&self.wave)?;
        let breathe = clip(&self.breathe)?;
        let upper_body_mask = registry.mask(self.upper_body_mask.bake(&rig)?);
        let mesh = registry.mesh(self.mesh.bake()?);
        Ok(BakedCharacter {
            rig: registry.rig(rig),
            mesh,
            idle,
            walk,
            run,
            wave,
            breathe,
            upper_body_mask,
        })
    }
}

/// Builds and bakes the built-in character through `registry` (see [`character`]).
///
/// # Errors
/// A [`BakeError`] if an asset fails to bake (not expected: the tests bake every one).
pub fn bake_character(registry: &AssetRegistry) -> Result<BakedCharacter, BakeError> {
    character().bake(registry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::{Transform, palette_3x4};
    use glam::{Affine3A, Vec3};

    /// Model-space matrices from a baked rig's parents and a local pose (parent-first order).
    fn model(rig: &Rig, local: &[Transform]) -> Vec<Affine3A> {
        let mut out: Vec<Affine3A> = Vec::new();
        for (i, &p) in rig.parent_indices().iter().enumerate() {
            let l = local[i].to_affine();
            out.push(if i == 0 { l } else { out[p as usize] * l });
        }
        out
    }

    #[test]
    fn every_asset_bakes_and_is_deterministic() {
        let a = character();
        assert_eq!(a, character());
        let registry = AssetRegistry::new();
        let baked = a.bake(&registry).unwrap();
        assert_eq!(registry.counts(), (1, 5, 1, 1));
        let again = bake_character(&registry).unwrap();
        assert!(Arc::ptr_eq(&baked.rig, &again.rig) && Arc::ptr_eq(&baked.walk, &again.walk));
        assert_eq!(registry.counts(), (1, 5, 1, 1));
        for clip in [
            &baked.idle,
            &baked.walk,
            &baked.run,
            &baked.wave,
            &baked.breathe,
        ] {
            assert_eq!(clip.rig_hash(), baked.rig.content_hash());
            assert!(clip.looping());
        }
        assert!(baked.breathe.additive_reference().is_some());
        assert!(baked.walk.root_motion() && baked.run.root_motion() && !baked.idle.root_motion());
    }

    #[test]
    fn mesh_bones_are_the_rig_bones_in_a_different_order() {
        let c = character();
        let rig = c.rig.bake().unwrap();
        let mesh = c.mesh.bake().unwrap();
        let rig_names = rig.bone_names();
        let mesh_names: Vec<&str> = mesh.bones().iter().map(|b| b.name.as_str()).collect();
        assert_eq!(mesh_names.len(), rig_names.len());
        assert_ne!(
            mesh_names,
            rig_names.iter().map(String::as_str).collect::<Vec<_>>(),
            "the remap must be exercised"
        );
        for b in mesh.bones() {
            assert!(
                rig.find(b.hash).is_some(),
                "mesh bone {} has no rig bone",
                b.name
            );
        }
    }

    #[test]
    fn skinning_the_bind_pose_gives_back_the_rest_positions() {
        let c = character();
        let rig = c.rig.bake().unwrap();
        let mesh = c.mesh.bake().unwrap();
        // Model-space rest matrices computed here from the baked rig, independently of the
        // builder's own (which walked the raw rig).
        let model = model(&rig, rig.rest_pose());
        let palette: Vec<[f32; 12]> = mesh
            .bones()
            .iter()
            .map(|b| {
                let i = rig.find(b.hash).unwrap().get();
                let m = model[i] * Affine3A::from_mat4(b.inverse_bind);
                let mut out = [0.0; 12];
                palette_3x4(&m, &mut out);
                out
            })
            .collect();
        let (p, n) = mesh.skin_cpu(&palette);
        let worst = p
            .iter()
            .zip(mesh.positions())
            .map(|(a, b)| a.distance(*b))
            .fold(0.0, f32::max);
        assert!(worst < 1e-4, "bind-pose skinning moved a vertex by {worst}");
        let worst_n = n
            .iter()
            .zip(mesh.normals())
            .map(|(a, b)| a.distance(*b))
            .fold(0.0, f32::max);
        assert!(worst_n < 1e-4, "normals moved by {worst_n}");
    }

    #[test]
    fn a_posed_forearm_follows_the_lower_arm() {
        // Bend the left elbow 90 degrees forward: a vertex in the middle of the forearm must
        // land where the lower arm's bone takes it (it is weighted almost fully to it).
        let c = character();
        let rig = c.rig.bake().unwrap();
        let mesh = c.mesh.bake().unwrap();
        let mut local = rig.rest_pose().to_vec();
        let elbow = rig.find_by_name("lowerarm_l").unwrap().get();
        local[elbow].rotation = glam::Quat::from_rotation_y(-std::f32::consts::FRAC_PI_2);
        let posed = model(&rig, &local);
        let rest = model(&rig, rig.rest_pose());
        let palette: Vec<[f32; 12]> = mesh
            .bones()
            .iter()
            .map(|b| {
                let mut out = [0.0; 12];
                palette_3x4(
                    &(posed[rig.find(b.hash).unwrap().get()] * Affine3A::from_mat4(b.inverse_bind)),
                    &mut out,
                );
                out
            })
            .collect();
        let (p, _) = mesh.skin_cpu(&palette);
        let elbow_pos = Vec3::from(rest[elbow].translation);
        let v = mesh
            .positions()
            .iter()
            .position(|q| {
                (q.x - (elbow_pos.x + 0.13)).abs() < 0.02
                    && (q.y - elbow_pos.y).abs() < 0.05
                    && q.z.abs() < 0.05
            })
            .unwrap();
        let expected = (posed[elbow] * rest[elbow].inverse()).transform_point3(mesh.positions()[v]);
        assert!(p[v].distance(expected) < 0.01, "{} vs {expected}", p[v]);
        // The bend took it forward (+Z), in front of the elbow.
        assert!(p[v].z > elbow_pos.z + 0.08, "{}", p[v]);
    }

    #[test]
    fn upper_body_mask_covers_the_spine_arms_and_head_and_not_the_legs() {
        let c = character();
        let rig = c.rig.bake().unwrap();
        let mask = c.upper_body_mask.bake(&rig).unwrap();
        for name in [
            "spine_01",
            "spine_03",
            "chest",
            "neck",
            "head",
            "jaw",
            "clavicle_l",
            "hand_r",
            "middle_03_l",
            "thumb_01_r",
        ] {
            assert_eq!(
                mask.weight(rig.find_by_name(name).unwrap().get()),
                1.0,
                "{name}"
            );
        }
        for name in ["root", "hips", "thigh_l", "shin_r", "foot_l", "toe_r"] {
            assert_eq!(
                mask.weight(rig.find_by_name(name).unwrap().get()),
                0.0,
                "{name}"
            );
        }
    }
}
