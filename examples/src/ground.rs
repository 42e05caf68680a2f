//! The crowd's ground and procedural stages: a gentle height field (a sum of sines) that the
//! built-in characters' feet are placed on, and heads that look at the camera within a cone.

use glam::Vec3;
use sinew_jobs::asset::Rig;
use sinew_jobs::ik::{
    FootPlacement, FootPlacementStage, GroundQuery, GroundSample, Leg, LookAt, LookAtStage,
    LookCone, TargetSpace,
};
use sinew_jobs::pose_stage::PoseStages;
use sinew_runtime::store::{Entity, Store};
use std::sync::Arc;
use wide::f32x8;

/// The ground: `y = Σ aᵢ · sin(kₓᵢ·x + k_zᵢ·z + φᵢ)`, a few centimetres of swell over metres.
#[derive(Clone, Copy, Debug, Default)]
pub struct Waves;

/// (amplitude, k_x, k_z, phase) of each sine.
const SINES: [(f32, f32, f32, f32); 3] = [
    (0.06, 0.45, 0.10, 0.0),
    (0.04, -0.15, 0.60, 1.3),
    (0.02, 1.10, 0.85, 2.1),
];

impl GroundQuery for Waves {
    fn ground(&self, x: f32, z: f32) -> GroundSample {
        let (mut h, mut dx, mut dz) = (0.0, 0.0, 0.0);
        for (a, kx, kz, phase) in SINES {
            let (sin, cos) = (kx * x + kz * z + phase).sin_cos();
            h += a * sin;
            let c = a * cos;
            dx += c * kx;
            dz += c * kz;
        }
        GroundSample {
            height: h,
            normal: Vec3::new(-dx, 1.0, -dz).normalize(),
        }
    }

    /// [`Waves::ground`] for eight points at once: the same sums per lane, with `wide`'s
    /// polynomial `sin_cos` (its own lanes' inputs only, so each answer is deterministic and
    /// independent of the other points).
    fn ground_batch(&self, x: &[f32; 8], z: &[f32; 8]) -> [GroundSample; 8] {
        let (x, z) = (f32x8::from(*x), f32x8::from(*z));
        let (mut h, mut dx, mut dz) = (f32x8::ZERO, f32x8::ZERO, f32x8::ZERO);
        for (a, kx, kz, phase) in SINES {
            let (sin, cos) = (x * kx + z * kz + phase).sin_cos();
            h += sin * a;
            let c = cos * a;
            dx += c * kx;
            dz += c * kz;
        }
        let r = f32x8::ONE / (dx * dx + f32x8::ONE + dz * dz).sqrt();
        let (h, nx, ny, nz) = (
            h.to_array(),
            (-dx * r).to_array(),
            r.to_array(),
            (-dz * r).to_array(),
        );
        std::array::from_fn(|k| GroundSample {
            height: h[k],
            normal: Vec3::new(nx[k], ny[k], nz[k]),
        })
    }
}

/// The components that turn the stages on for one character of a rig.
#[derive(Clone, Debug)]
pub struct Procedural {
    feet: FootPlacement,
    look: LookAt,
}

impl Procedural {
    /// Foot placement and a look at `eye` (world space) for the built-in rig; `None` for a
    /// rig without its leg and head bones.
    pub fn for_rig(rig: &Rig, eye: Vec3) -> Option<Self> {
        let bone = |name: &str| rig.find_by_name(name).map(|b| b.get());
        let leg = |s: &str| {
            Some(Leg {
                hip: bone(&format!("thigh{s}"))?,
                knee: bone(&format!("shin{s}"))?,
                ankle: bone(&format!("foot{s}"))?,
                // The built-in ankle stands 7 cm above the sole.
                ankle_height: 0.07,
                knee_axis: Some(Vec3::X),
            })
        };
        let feet = FootPlacement {
            pelvis: bone("hips")?,
            legs: [leg("_l")?, leg("_r")?],
            weight: 1.0,
            max_tilt: 0.5,
        };
        let look = LookAt {
            // The neck takes half the turn, the head the rest.
            chain: Arc::from([bone("neck")?, bone("head")?]),
            share: 0.5,
            target: eye,
            space: TargetSpace::World,
            forward: Vec3::Z,
            up: Vec3::Y,
            offset: Vec3::new(0.0, 0.09, 0.1),
            pole_vector: Some(Vec3::Y),
            weight: 1.0,
            // The character faces +Z; it looks at most 70° away from straight ahead.
            cone: Some(LookCone {
                axis: Vec3::Z,
                half_angle: 70f32.to_radians(),
            }),
        };
        Some(Self { feet, look })
    }

    /// Gives `entity` the components.
    ///
    /// # Errors
    /// The store's, for a dead entity.
    pub fn equip(&self, store: &mut Store, entity: Entity) -> Result<(), String> {
        store
            .insert(entity, self.feet)
            .and_then(|()| store.insert(entity, self.look.clone()))
            .map_err(|e| format!("procedural stages: {e}"))
    }

    /// Gives each of `entities` the components.
    ///
    /// # Errors
    /// The store's, for a dead entity.
    pub fn equip_all(&self, store: &mut Store, entities: &[Entity]) -> Result<(), String> {
        entities.iter().try_for_each(|&e| self.equip(store, e))
    }

    /// Takes the components from `entity` (the stages then skip it); one it lacks is no error.
    ///
    /// # Errors
    /// The store's, for a dead entity.
    pub fn unequip(store: &mut Store, entity: Entity) -> Result<(), String> {
        let e = |e: sinew_runtime::store::StoreError| format!("procedural stages: {e}");
        if store.has::<FootPlacement>(entity).map_err(e)? {
            store.remove::<FootPlacement>(entity).map_err(e)?;
        }
        if store.has::<LookAt>(entity).map_err(e)? {
            store.remove::<LookAt>(entity).map_err(e)?;
        }
        Ok(())
    }

    /// The foot placement the components hold.
    pub fn feet(&self) -> &FootPlacement {
        &self.feet
    }
}

/// The stages: feet on [`Waves`], then the look-at.
pub fn stages() -> PoseStages {
    stages_after(PoseStages::new())
}

/// `first`, then [`stages`].
pub fn stages_after(first: PoseStages) -> PoseStages {
    first.with(FootPlacementStage::new(Waves)).with(LookAtStage)
}

/// Where the `--png` render's camera stands for a crowd on a `grid`-wide square of
/// `spacing`-metre cells: the heads look at it.
pub fn camera_eye(grid: usize, spacing: f32) -> Vec3 {
    let side = grid.saturating_sub(1) as f32 * spacing;
    let (lo, hi) = (Vec3::ZERO, Vec3::new(side, 0.0, side));
    let center = (lo + hi) * 0.5 + Vec3::Y * 0.9;
    let extent = (hi - lo).length().max(3.0);
    center + Vec3::new(0.35, 0.45, -0.8).normalize() * extent * 0.9
}

/// `count` members of the built-in character's reference crowd on a grid of `columns`, `step`
/// metres apart in x and z (the tests' crowds over the waves).
#[cfg(test)]
pub(crate) fn spawn_test_crowd(
    character: &sinew_fixtures::builtin::BakedCharacter,
    store: &mut Store,
    count: usize,
    columns: usize,
    step: (f32, f32),
) -> Vec<Entity> {
    let member = |i: usize| {
        let mut m = character.crowd_member(i);
        let at = Vec3::new(
            (i % columns) as f32 * step.0,
            0.0,
            (i / columns) as f32 * step.1,
        );
        m.6 = sinew_jobs::component::EntityTransform(
            sinew_jobs::asset::Transform::from_translation(at),
        );
        m
    };
    match store.spawn_batch((0..count).map(member)) {
        Ok(entities) => entities,
        Err(e) => panic!("spawning the test crowd: {e}"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests unwrap: a failure is the test failing
    use super::*;
    use sinew_fixtures::builtin;
    use sinew_jobs::animator::Animator;
    use sinew_jobs::asset::AssetRegistry;
    use sinew_jobs::component::{EntityTransform, FrameSlot};
    use sinew_jobs::frame::ModelPoses;
    use sinew_jobs::pipeline::{PipelineConfig, PoseChain};
    use sinew_jobs::pose_stage::PoseStages;

    /// The built-in crowd walking over the waves keeps the clearance its walk has on flat
    /// ground: each character's lower ankle stands as high above the waves (along the normal)
    /// as the same character's lower ankle above the flat ground without the stages; and each
    /// head looks at the eye, or as near as the cone allows.
    #[test]
    fn the_crowd_walks_on_the_waves_and_looks_at_the_eye() {
        let c = builtin::bake_character(&AssetRegistry::new()).unwrap();
        let eye = Vec3::new(3.0, 1.8, 12.0);
        let procedural = Procedural::for_rig(&c.rig, eye).unwrap();
        let config = PipelineConfig {
            pose_chain: PoseChain::FUSED_KEEPING_MODEL_POSES,
            ..PipelineConfig::default()
        };
        let crowd = |with_stages: bool| {
            let mut store = Store::new();
            let entities = spawn_test_crowd(&c, &mut store, 24, 6, (1.7, 1.9));
            let stages = if with_stages {
                for &e in &entities {
                    procedural.equip(&mut store, e).unwrap();
                }
                stages()
            } else {
                PoseStages::new()
            };
            let animator = Animator::with_stages(&mut store, config, &stages, |_, _| {}).unwrap();
            (store, entities, animator)
        };
        let (mut placed, entities, mut with) = crowd(true);
        let (mut flat, flat_entities, mut without) = crowd(false);
        let bone = |n: &str| c.rig.find_by_name(n).unwrap().get();
        let (feet, head) = ([bone("foot_l"), bone("foot_r")], bone("head"));
        let pose = |store: &Store, e: Entity| {
            let slot = store.get::<FrameSlot>(e).unwrap();
            let world = store.get::<EntityTransform>(e).unwrap().0.to_affine();
            let model = &store.resource::<ModelPoses>().unwrap().0;
            let m = model[slot.bone_offset as usize..][..slot.bone_count as usize].to_vec();
            (world, m)
        };
        let mut worst_flat = 0.0f32;
        for frame in 0..40 {
            with.run_frame(&mut placed, 1.0 / 30.0).unwrap();
            without.run_frame(&mut flat, 1.0 / 30.0).unwrap();
            for (&e, &fe) in entities.iter().zip(&flat_entities) {
                let (world, m) = pose(&placed, e);
                let (flat_world, flat_m) = pose(&flat, fe);
                let mut above = [0.0f32; 2];
                let mut authored = [0.0f32; 2];
                let mut unplaced = [0.0f32; 2];
                for (k, &f) in feet.iter().enumerate() {
                    let a = world.transform_point3(m[f].translation.into());
                    let g = Waves.ground(a.x, a.z);
                    above[k] = (a.y - g.height) * g.normal.y;
                    let b = flat_world.transform_point3(flat_m[f].translation.into());
                    authored[k] = b.y;
                    unplaced[k] = b.y - Waves.ground(b.x, b.z).height;
                }
                let (lower, want) = (above[0].min(above[1]), authored[0].min(authored[1]));
                assert!(
                    (lower - want).abs() < 0.01,
                    "frame {frame}: {above:?} vs {authored:?}"
                );
                worst_flat = worst_flat.max((unplaced[0].min(unplaced[1]) - want).abs());
                let h = world * m[head];
                let from = h.transform_point3(Vec3::new(0.0, 0.09, 0.1));
                let look = h.transform_vector3(Vec3::Z).normalize();
                let want = (eye - from).normalize();
                let ahead = world.transform_vector3(Vec3::Z).normalize();
                if want.angle_between(ahead) < 65f32.to_radians() {
                    assert!(look.angle_between(want) < 0.02, "frame {frame}");
                } else {
                    assert!(look.angle_between(ahead) < 75f32.to_radians());
                }
            }
        }
        // Without the stages the same feet float above or sink into the waves.
        assert!(worst_flat > 0.05, "{worst_flat}");
    }

    /// The normal is the height field's gradient, checked by central differences.
    #[test]
    fn the_normal_is_the_gradient_of_the_height() {
        for (x, z) in [(0.0, 0.0), (3.7, -1.2), (-8.0, 12.5)] {
            let g = Waves.ground(x, z);
            let e = 1e-3;
            let dx = (Waves.ground(x + e, z).height - Waves.ground(x - e, z).height) / (2.0 * e);
            let dz = (Waves.ground(x, z + e).height - Waves.ground(x, z - e).height) / (2.0 * e);
            let want = Vec3::new(-dx, 1.0, -dz).normalize();
            assert!(g.normal.dot(want) > 1.0 - 1e-5, "{x}, {z}");
            assert!(g.height.abs() <= 0.12);
        }
    }
}
