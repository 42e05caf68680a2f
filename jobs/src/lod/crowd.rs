//! [`LodCrowd`]: two-tier animation of entities in a store, switched per frame by distance.

use super::error::store_error;
use super::{BakedRootTrack, LodClock, LodCrowdError, LodPath, LodSwitch, LodTransition};
use crate::asset::{BoneIndex, Clip, Rig, SkinnedMesh, Transform};
use crate::bake_texture::{BakeTextureOptions, BakedAnimationTexture, bake_animation_texture};
use crate::component::{Animations, EntityTransform, RigRef, RootMotion, SkinRef};
use crate::frame::PaletteEntry;
use glam::{Affine3A, Vec3};
use hashbrown::HashMap;
use rayon::prelude::*;
use sinew_runtime::store::{Entity, Store};
use std::sync::Arc;

/// One baked-tier character for this frame, in a GPU-neutral form: what a baked-texture
/// vertex shader needs to draw it (`sinew_gpu::baked::BakedInstance` converts from it). Its
/// playback time at global time `g` ([`LodCrowd::time`]) is `phase + speed · g`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LodInstance {
    /// The entity.
    pub entity: Entity,
    /// Its world transform (the baked tier's, moved by root motion).
    pub world: Affine3A,
    /// Index of its clip in the baked texture's clip table.
    pub clip: u32,
    /// Playback time at global time 0, seconds.
    pub phase: f32,
    /// Playback speed.
    pub speed: f32,
}

/// A character that changed tier in the last [`LodCrowd::before_frame`] (a character's first
/// assignment is not a switch).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TierSwitch {
    /// The entity.
    pub entity: Entity,
    /// Its index in the crowd ([`LodCrowd::entities`]).
    pub index: usize,
    /// The tier it has from this frame on.
    pub to: LodPath,
    /// Its position when the switch was decided.
    pub position: Vec3,
}

/// A character's state between frames.
#[derive(Debug)]
struct Member {
    entity: Entity,
    /// Index in the texture's clip table.
    clip: u32,
    /// Whether its clip's root motion moves it (it carries `RootMotion` with `apply`, and the
    /// clip has root motion).
    moves: bool,
    /// Entity transform of the baked tier (the store's `EntityTransform` is not updated while
    /// baked; see [`LodCrowd::sync_transforms`]).
    world: Transform,
    /// `world` as an affine matrix, for the instance data.
    affine: Affine3A,
    /// The components a baked character leaves the pipeline without.
    parked: Option<(Animations, SkinRef)>,
    /// Switched to baked this frame: it runs the pipeline once more and is parked after it.
    just_baked: bool,
}

/// Level of detail for a crowd of entities in a [`Store`]: characters near the eye run the
/// nine-job CPU pipeline, far ones play from a baked animation texture, by distance with
/// hysteresis ([`LodSwitch`]). The switch frame shows the same pose from both tiers (at the
/// bake's frame times the baked palette equals the CPU one), and root motion continues across
/// switches.
///
/// The crowd owns the texture (bake it once with [`LodCrowd::new`]; upload
/// [`LodCrowd::texture`]) and the tier state. An engine calls, each frame:
/// 1. [`LodCrowd::before_frame`] with the eye position and the frame time;
/// 2. `Animator::run_frame*` with the same frame time (the CPU tier);
/// 3. [`LodCrowd::after_frame`];
///
/// then draws the CPU tier from the palettes and the baked tier from
/// [`LodCrowd::baked_instances`] at global time [`LodCrowd::time`].
///
/// A baked character leaves the pipeline: its `Animations` and `SkinRef` are kept in the
/// crowd, so no pipeline node (the clock, the nine jobs, the remap cache, the palette layout)
/// visits it; every other component stays in the store. Its `EntityTransform` in the store
/// is not updated while it is baked: [`LodCrowd::world`] has it, and
/// [`LodCrowd::sync_transforms`] writes it back. Take a character out with
/// [`LodCrowd::remove`] before despawning it.
///
/// A character must play one clip of the texture alone (a layer-0 override animation of
/// weight 1, no mask) with the rig, mesh and palette root bone of the bake; characters whose
/// clip has root motion carry `RootMotion` exactly when the texture is baked with
/// [`BakeTextureOptions::root_motion_in_place`]. The pose on a switch frame is exact when
/// every frame's playback time is a frame time of the bake: bake at the frame rate and start
/// each character on the bake's frame grid.
///
/// ```
/// use glam::Vec3;
/// use sinew_jobs::animator::Animator;
/// use sinew_jobs::asset::{AssetRegistry, Transform};
/// use sinew_jobs::bake_texture::BakeTextureOptions;
/// use sinew_fixtures::builtin;
/// use sinew_jobs::component::{AnimationToProcess, EntityTransform, RootMotion, SkinRef, animated};
/// use sinew_jobs::lod::{LodCrowd, LodPath, LodSwitch};
/// use sinew_runtime::store::Store;
///
/// let c = builtin::bake_character(&AssetRegistry::new())?;
/// let dt = 1.0 / 60.0;
/// let options = BakeTextureOptions::new(1.0 / dt, 8192);
/// let switch = LodSwitch::new(20.0, 2.0)?;
/// let mut lod = LodCrowd::new(switch, &c.rig, &c.mesh, vec![c.walk.clone()], &options)?;
/// let mut store = Store::new();
/// let mut animator = Animator::new(&mut store)?;
/// for x in [5.0, 50.0] {
///     let walk = AnimationToProcess::new(c.walk.clone());
///     let e = store.spawn(animated(c.rig.clone(), vec![walk]))?;
///     store.insert(e, SkinRef::new(c.mesh.clone()))?;
///     store.insert(e, RootMotion::default())?;
///     store.insert(e, EntityTransform(Transform::from_translation(Vec3::new(x, 0.0, 0.0))))?;
///     lod.add(&store, e)?;
/// }
/// for _ in 0..10 {
///     lod.before_frame(&mut store, Vec3::ZERO, dt)?;
///     animator.run_frame(&mut store, dt)?;
///     lod.after_frame(&mut store)?;
/// }
/// assert_eq!(lod.paths(), &[LodPath::Cpu, LodPath::Baked]);
/// assert_eq!(animator.palette_len(&store), c.mesh.bone_count()); // the near one alone
/// let far = lod.baked_instances().next().ok_or("no baked instance")?;
/// let walked = Vec3::from(far.world.translation).distance(Vec3::new(50.0, 0.0, 0.0));
/// assert!(walked > 0.2); // 10 frames at 1.4 m/s, moved by root motion
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct LodCrowd {
    switch: LodSwitch,
    texture: BakedAnimationTexture,
    /// The baked clips, in texture order.
    clips: Vec<Arc<Clip>>,
    /// Each clip's root track (`None`: no root motion, or not baked in place).
    tracks: Vec<Option<BakedRootTrack>>,
    root_motion_in_place: bool,
    root_bone: Option<BoneIndex>,
    members: Vec<Member>,
    index_of: HashMap<Entity, usize>,
    /// Positions of the last decision (index order).
    positions: Vec<Vec3>,
    clocks: Vec<LodClock>,
    transitions: Vec<LodTransition>,
    switches: Vec<TierSwitch>,
    /// Switched to baked this frame: parked after the pipeline.
    pending: Vec<usize>,
    /// Global time of the current (or last) frame, accumulated in f64 so that it stays on the
    /// frame grid over long runs.
    time: f64,
    in_frame: bool,
}

impl LodCrowd {
    /// Bakes `clips` for `rig` and `mesh` with `options` and makes an empty crowd that
    /// switches with `switch`. Global time starts at 0.
    ///
    /// # Errors
    /// [`LodCrowdError::Bake`] as [`bake_animation_texture`].
    pub fn new(
        switch: LodSwitch,
        rig: &Rig,
        mesh: &SkinnedMesh,
        clips: Vec<Arc<Clip>>,
        options: &BakeTextureOptions,
    ) -> Result<Self, LodCrowdError> {
        let texture = bake_animation_texture(rig, mesh, &clips, options)?;
        let tracks = clips
            .iter()
            .map(|c| {
                options
                    .root_motion_in_place
                    .then(|| BakedRootTrack::new(c, rig.root()))
                    .flatten()
            })
            .collect();
        Ok(Self {
            switch,
            texture,
            clips,
            tracks,
            root_motion_in_place: options.root_motion_in_place,
            root_bone: options.root_bone,
            members: Vec::new(),
            index_of: HashMap::new(),
            positions: Vec::new(),
            clocks: Vec::new(),
            transitions: Vec::new(),
            switches: Vec::new(),
            pending: Vec::new(),
            time: 0.0,
            in_frame: false,
        })
    }

    /// Adds `entity` (in the pipeline, with `EntityTransform`, `Animations`, `RigRef` and
    /// `SkinRef`); it gets its tier in the next [`LodCrowd::before_frame`]. Its baked clock
    /// starts where its animation is now. Returns its index in the crowd.
    ///
    /// # Errors
    /// [`LodCrowdError::OutOfOrder`] inside a frame; [`LodCrowdError::AlreadyInCrowd`];
    /// [`LodCrowdError::MissingComponent`]; [`LodCrowdError::NotOneAnimation`],
    /// [`LodCrowdError::NotBakeable`], [`LodCrowdError::ClipNotBaked`],
    /// [`LodCrowdError::NonFiniteClock`] for an animation the texture cannot play;
    /// [`LodCrowdError::AssetMismatch`], [`LodCrowdError::RootMotionMismatch`],
    /// [`LodCrowdError::NonFinitePosition`].
    pub fn add(&mut self, store: &Store, entity: Entity) -> Result<usize, LodCrowdError> {
        if self.in_frame {
            return Err(LodCrowdError::OutOfOrder {
                call: "add",
                expected: "after_frame",
            });
        }
        if self.index_of.contains_key(&entity) {
            return Err(LodCrowdError::AlreadyInCrowd { entity });
        }
        let read = "add to the crowd";
        let world = store
            .get::<EntityTransform>(entity)
            .map_err(|e| store_error(entity, read, e))?
            .0;
        if !world.translation.is_finite() {
            return Err(LodCrowdError::NonFinitePosition {
                entity,
                position: world.translation,
            });
        }
        let rig = &store
            .get::<RigRef>(entity)
            .map_err(|e| store_error(entity, read, e))?
            .0;
        if rig.content_hash() != self.texture.rig_hash {
            return Err(LodCrowdError::AssetMismatch {
                entity,
                asset: "rig",
            });
        }
        let skin = store
            .get::<SkinRef>(entity)
            .map_err(|e| store_error(entity, read, e))?;
        if skin.mesh.content_hash() != self.texture.mesh_hash {
            return Err(LodCrowdError::AssetMismatch {
                entity,
                asset: "mesh",
            });
        }
        if skin.root_bone != self.root_bone {
            return Err(LodCrowdError::AssetMismatch {
                entity,
                asset: "root bone",
            });
        }
        let anims = store
            .get::<Animations>(entity)
            .map_err(|e| store_error(entity, read, e))?;
        let [a] = anims.as_slice() else {
            return Err(LodCrowdError::NotOneAnimation {
                entity,
                count: anims.len(),
            });
        };
        let not_bakeable = |reason| LodCrowdError::NotBakeable {
            entity,
            clip: a.clip.name().to_string(),
            reason,
        };
        if a.layer != 0 {
            return Err(not_bakeable("on a layer above 0"));
        }
        if a.blend != crate::component::BlendMode::Override {
            return Err(not_bakeable("as an additive animation"));
        }
        if a.weight != 1.0 {
            return Err(not_bakeable("with a weight other than 1"));
        }
        if a.mask.is_some() {
            return Err(not_bakeable("with a mask"));
        }
        if a.looping.is_some_and(|l| l != a.clip.looping()) {
            return Err(not_bakeable("with its loop flag overridden"));
        }
        if !(a.time.is_finite() && a.speed.is_finite()) {
            return Err(LodCrowdError::NonFiniteClock {
                entity,
                time: a.time,
                speed: a.speed,
            });
        }
        let hash = a.clip.content_hash();
        let clip = self
            .clips
            .iter()
            .position(|c| c.content_hash() == hash)
            .ok_or_else(|| LodCrowdError::ClipNotBaked {
                entity,
                clip: a.clip.name().to_string(),
                baked: self.texture.clip_names.clone(),
            })?;
        let root_motion = store.get::<RootMotion>(entity).ok();
        if a.clip.root_motion() && root_motion.is_some() != self.root_motion_in_place {
            return Err(LodCrowdError::RootMotionMismatch {
                entity,
                clip: a.clip.name().to_string(),
                entity_has_root_motion: root_motion.is_some(),
            });
        }
        let moves = root_motion.is_some_and(|r| r.apply)
            && self.tracks.get(clip).is_some_and(Option::is_some);
        let index = self.members.len();
        self.clocks.push(LodClock {
            cpu_time: a.time,
            phase: LodClock::phase_for(a.time, a.speed, self.time as f32),
            speed: a.speed,
        });
        self.members.push(Member {
            entity,
            clip: clip as u32,
            moves,
            world,
            affine: world.to_affine(),
            parked: None,
            just_baked: false,
        });
        self.positions.push(world.translation);
        self.index_of.insert(entity, index);
        Ok(index)
    }

    /// Takes `entity` out of the crowd. A baked character that is still alive rejoins the
    /// pipeline where the baked tier left it: its `Animations` (at the baked playback time),
    /// `SkinRef` and `EntityTransform` go back into the store. The last character takes the
    /// removed one's index.
    ///
    /// # Errors
    /// [`LodCrowdError::OutOfOrder`] inside a frame; [`LodCrowdError::NotInCrowd`];
    /// [`LodCrowdError::Store`] when the components cannot be put back.
    pub fn remove(&mut self, store: &mut Store, entity: Entity) -> Result<(), LodCrowdError> {
        if self.in_frame {
            return Err(LodCrowdError::OutOfOrder {
                call: "remove",
                expected: "after_frame",
            });
        }
        let index = *self
            .index_of
            .get(&entity)
            .ok_or(LodCrowdError::NotInCrowd { entity })?;
        let clock = self.clocks[index];
        let time = self.time as f32;
        if let Some((mut anims, skin)) = self.members[index].parked.take()
            && store.contains(entity)
        {
            for a in anims.iter_mut() {
                a.time = clock.baked_time(time);
                a.previous_time = a.time;
            }
            let world = self.members[index].world;
            let back = "rejoin the pipeline";
            store
                .insert(entity, anims)
                .map_err(|e| store_error(entity, back, e))?;
            store
                .insert(entity, skin)
                .map_err(|e| store_error(entity, back, e))?;
            store
                .get_mut::<EntityTransform>(entity)
                .map_err(|e| store_error(entity, back, e))?
                .0 = world;
        }
        self.members.swap_remove(index);
        self.clocks.swap_remove(index);
        self.positions.swap_remove(index);
        self.switch.swap_remove(index);
        self.index_of.remove(&entity);
        if let Some(moved) = self.members.get(index) {
            self.index_of.insert(moved.entity, index);
        }
        Ok(())
    }

    /// Starts a frame of `dt` seconds (the `dt` the animator runs next) seen from `eye`:
    /// advances global time by `dt`, decides every character's tier from its distance to
    /// `eye`, brings characters switching to the CPU tier back into the pipeline at the baked
    /// playback time and position, syncs the baked clock of those switching to baked (they run
    /// the pipeline this one frame more, so that their root motion and CPU pose are those of
    /// the switch frame), and moves every other baked character by its clip's root motion as
    /// job 6 would.
    ///
    /// # Errors
    /// [`LodCrowdError::OutOfOrder`] when the last frame was not finished with
    /// [`LodCrowd::after_frame`]; [`LodCrowdError::BadTimeStep`];
    /// [`LodCrowdError::NonFiniteEye`]; [`LodCrowdError::NonFinitePosition`] (nothing is
    /// changed then); [`LodCrowdError::MissingComponent`] or [`LodCrowdError::Store`] for a
    /// CPU-tier entity that lost its components or was despawned without
    /// [`LodCrowd::remove`].
    pub fn before_frame(
        &mut self,
        store: &mut Store,
        eye: Vec3,
        dt: f32,
    ) -> Result<(), LodCrowdError> {
        if self.in_frame {
            return Err(LodCrowdError::OutOfOrder {
                call: "before_frame",
                expected: "after_frame",
            });
        }
        if !(dt.is_finite() && dt > 0.0) {
            return Err(LodCrowdError::BadTimeStep { dt });
        }
        if !eye.is_finite() {
            return Err(LodCrowdError::NonFiniteEye { eye });
        }
        let next_time = self.time + f64::from(dt);
        let g = next_time as f32;
        let read = "read for the tier decision";
        for (i, m) in self.members.iter().enumerate() {
            let e = m.entity;
            let position = if self.switch.paths().get(i) == Some(&LodPath::Baked) {
                m.world.translation
            } else {
                let p = store
                    .get::<EntityTransform>(e)
                    .map_err(|err| store_error(e, read, err))?
                    .0
                    .translation;
                let anims = store
                    .get::<Animations>(e)
                    .map_err(|err| store_error(e, read, err))?;
                let [a] = anims.as_slice() else {
                    return Err(LodCrowdError::NotOneAnimation {
                        entity: e,
                        count: anims.len(),
                    });
                };
                // The time the pipeline's clock node reaches this frame.
                self.clocks[i].cpu_time = a.time + a.speed * dt;
                p
            };
            if !position.is_finite() {
                return Err(LodCrowdError::NonFinitePosition {
                    entity: e,
                    position,
                });
            }
            self.positions[i] = position;
        }
        self.switch.update(
            eye,
            &self.positions,
            g,
            &mut self.clocks,
            &mut self.transitions,
        )?;
        self.time = next_time;
        self.in_frame = true;
        self.pending.clear();
        self.switches.clear();
        for tr in &self.transitions {
            let i = tr.index;
            let m = &mut self.members[i];
            let e = m.entity;
            match (tr.to, tr.first) {
                (LodPath::Cpu, true) => {}
                (LodPath::Baked, true) => {
                    let leave = "leave the pipeline";
                    m.world = store
                        .get::<EntityTransform>(e)
                        .map_err(|err| store_error(e, leave, err))?
                        .0;
                    m.affine = m.world.to_affine();
                    m.parked = Some(park(store, e)?);
                }
                (LodPath::Cpu, false) => {
                    let join = "rejoin the pipeline";
                    if let Some((anims, skin)) = m.parked.take() {
                        store
                            .insert(e, anims)
                            .map_err(|err| store_error(e, join, err))?;
                        store
                            .insert(e, skin)
                            .map_err(|err| store_error(e, join, err))?;
                    }
                    let cpu_time = self.clocks[i].cpu_time;
                    for a in store
                        .get_mut::<Animations>(e)
                        .map_err(|err| store_error(e, join, err))?
                        .iter_mut()
                    {
                        // The clock node adds speed·dt before sampling.
                        a.time = cpu_time - a.speed * dt;
                        a.previous_time = a.time;
                    }
                    store
                        .get_mut::<EntityTransform>(e)
                        .map_err(|err| store_error(e, join, err))?
                        .0 = m.world;
                }
                (LodPath::Baked, false) => {
                    self.pending.push(i);
                    m.just_baked = true;
                }
            }
            if !tr.first {
                self.switches.push(TierSwitch {
                    entity: e,
                    index: i,
                    to: tr.to,
                    position: self.positions[i],
                });
            }
        }
        self.advance_baked(g, dt);
        Ok(())
    }

    /// Moves the baked tier by its clips' root motion from playback time `g − dt` to `g`, as
    /// job 6 moves a CPU character.
    fn advance_baked(&mut self, g: f32, dt: f32) {
        let (clips, tracks, paths) = (&self.clips, &self.tracks, self.switch.paths());
        let clocks = &self.clocks;
        self.members.par_iter_mut().enumerate().for_each(|(i, m)| {
            if paths.get(i) != Some(&LodPath::Baked) || m.just_baked || !m.moves {
                return;
            }
            let c = m.clip as usize;
            let (Some(clip), Some(Some(track)), Some(k)) =
                (clips.get(c), tracks.get(c), clocks.get(i))
            else {
                return;
            };
            let (delta_t, delta_r) = track.motion(clip, k.baked_time(g - dt), k.baked_time(g));
            let w = &mut m.world;
            w.translation += w.rotation * (delta_t * w.scale);
            w.rotation = (w.rotation * delta_r).normalize();
            m.affine = w.to_affine();
        });
    }

    /// Finishes a frame after the animator ran: characters that switched to baked in this
    /// frame's [`LodCrowd::before_frame`] leave the pipeline, and the baked tier keeps their
    /// transform from now on.
    ///
    /// # Errors
    /// [`LodCrowdError::OutOfOrder`] without a [`LodCrowd::before_frame`] before it;
    /// [`LodCrowdError::MissingComponent`] or [`LodCrowdError::Store`] for an entity that
    /// cannot be taken out of the pipeline.
    pub fn after_frame(&mut self, store: &mut Store) -> Result<(), LodCrowdError> {
        if !self.in_frame {
            return Err(LodCrowdError::OutOfOrder {
                call: "after_frame",
                expected: "before_frame",
            });
        }
        self.in_frame = false;
        let leave = "leave the pipeline";
        for &i in &self.pending {
            let m = &mut self.members[i];
            let e = m.entity;
            m.world = store
                .get::<EntityTransform>(e)
                .map_err(|err| store_error(e, leave, err))?
                .0;
            m.affine = m.world.to_affine();
            m.parked = Some(park(store, e)?);
            m.just_baked = false;
        }
        self.pending.clear();
        Ok(())
    }

    /// The baked tier's characters for this frame, in crowd index order.
    pub fn baked_instances(&self) -> impl Iterator<Item = LodInstance> + '_ {
        let paths = self.switch.paths();
        self.members
            .iter()
            .zip(&self.clocks)
            .zip(paths)
            .filter(|(_, p)| **p == LodPath::Baked)
            .map(|((m, k), _)| LodInstance {
                entity: m.entity,
                world: m.affine,
                clip: m.clip,
                phase: k.phase,
                speed: k.speed,
            })
    }

    /// Global time of the current (or last) frame, seconds: the sum of the frame times given
    /// to [`LodCrowd::before_frame`]. The baked shader plays [`LodInstance`]s at this time.
    pub fn time(&self) -> f32 {
        self.time as f32
    }

    /// This frame's switches (first assignments excluded).
    pub fn switches(&self) -> &[TierSwitch] {
        &self.switches
    }

    /// Every character's tier after the last decision, by crowd index (shorter than the crowd
    /// when characters were added since).
    pub fn paths(&self) -> &[LodPath] {
        self.switch.paths()
    }

    /// The tier of `entity`; `None` when it is not in the crowd or has no tier yet.
    pub fn path(&self, entity: Entity) -> Option<LodPath> {
        let i = *self.index_of.get(&entity)?;
        self.switch.paths().get(i).copied()
    }

    /// Each character's position at the last decision, by crowd index.
    pub fn positions(&self) -> &[Vec3] {
        &self.positions
    }

    /// The characters, by crowd index.
    pub fn entities(&self) -> impl ExactSizeIterator<Item = Entity> + '_ {
        self.members.iter().map(|m| m.entity)
    }

    /// Characters in the crowd.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the crowd is empty.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Characters on `path` after the last decision.
    pub fn count(&self, path: LodPath) -> usize {
        self.switch.paths().iter().filter(|p| **p == path).count()
    }

    /// The world transform of `entity` as the crowd has it: the baked tier's for a baked
    /// character (the store's is stale while baked), `None` for others and strangers.
    pub fn world(&self, entity: Entity) -> Option<Transform> {
        let i = *self.index_of.get(&entity)?;
        (self.switch.paths().get(i) == Some(&LodPath::Baked)).then(|| self.members[i].world)
    }

    /// Writes the baked tier's transforms into the store's `EntityTransform`s.
    ///
    /// # Errors
    /// [`LodCrowdError::MissingComponent`] or [`LodCrowdError::Store`] naming the entity.
    pub fn sync_transforms(&self, store: &mut Store) -> Result<(), LodCrowdError> {
        for (m, p) in self.members.iter().zip(self.switch.paths()) {
            if *p == LodPath::Baked {
                store
                    .get_mut::<EntityTransform>(m.entity)
                    .map_err(|err| store_error(m.entity, "write the baked transform", err))?
                    .0 = m.world;
            }
        }
        Ok(())
    }

    /// The baked tier's palette of `entity` at its playback time of this frame (what the
    /// baked shader draws, or the CPU tier would on a switch frame).
    ///
    /// # Errors
    /// [`LodCrowdError::NotInCrowd`]; [`LodCrowdError::Bake`] when `out` is not the mesh's
    /// bone count long.
    pub fn baked_palette(
        &self,
        entity: Entity,
        out: &mut [PaletteEntry],
    ) -> Result<(), LodCrowdError> {
        let i = *self
            .index_of
            .get(&entity)
            .ok_or(LodCrowdError::NotInCrowd { entity })?;
        let (m, k) = (&self.members[i], self.clocks[i]);
        self.texture
            .sample_palette(m.clip as usize, k.baked_time(self.time()), out)?;
        Ok(())
    }

    /// The animations kept aside for the baked tier.
    pub fn parked_animations(&self) -> impl Iterator<Item = &Animations> + '_ {
        self.members
            .iter()
            .filter_map(|m| m.parked.as_ref().map(|(a, _)| a))
    }

    /// The baked texture (upload it once; its clip table indexes [`LodInstance::clip`]).
    pub fn texture(&self) -> &BakedAnimationTexture {
        &self.texture
    }

    /// The baked clips, in texture order.
    pub fn clips(&self) -> &[Arc<Clip>] {
        &self.clips
    }

    /// The switch (distance, hysteresis).
    pub fn switch(&self) -> &LodSwitch {
        &self.switch
    }
}

/// Takes a character out of the pipeline: its `Animations` (so that neither the clock node
/// nor the nine jobs see it) and its `SkinRef` (so that the remap node and the palette layout
/// skip it).
fn park(store: &mut Store, e: Entity) -> Result<(Animations, SkinRef), LodCrowdError> {
    let leave = "leave the pipeline";
    let anims = store
        .remove::<Animations>(e)
        .map_err(|err| store_error(e, leave, err))?;
    match store.remove::<SkinRef>(e) {
        Ok(skin) => Ok((anims, skin)),
        Err(err) => {
            // Put the animations back so that the entity stays whole in the pipeline.
            store.insert(e, anims).ok();
            Err(store_error(e, leave, err))
        }
    }
}
