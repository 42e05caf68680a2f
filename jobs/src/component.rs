//! The components an animated entity carries, and the per-frame buffers the jobs share.
//!
//! An animated entity has [`RigRef`], [`Animations`], [`LayerWeights`], [`FrameSlot`] and
//! [`SamplingCursors`] (use [`AnimatedBundle`]), usually [`EntityTransform`] and
//! [`RootMotion`], optionally [`SkinRef`] (a skinned mesh driven by the rig), [`CurveValues`],
//! [`FiredEvents`] and [`MorphWeights`] (the mesh's morph-target weights). Bone entities that follow a bone carry [`ExposedBone`] and
//! [`BoneWorld`].

use crate::asset::{
    ActiveMorph, AvatarMask, BoneHash, BoneIndex, Clip, Rig, SkinnedMesh, Transform, bone_hash,
};
use crate::error::JobError;
use glam::{Affine3A, Quat, Vec3};
use sinew_runtime::store::Entity;
use std::sync::Arc;

/// Maximum number of animation layers per entity.
pub const MAX_LAYERS: usize = 8;

/// How an animation combines with the layers below it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum BlendMode {
    /// Replace what is below, by the layer's weight.
    #[default]
    Override,
    /// Add the clip's difference from its additive reference pose.
    Additive,
}

/// One animation playing on an entity.
#[derive(Clone, Debug)]
pub struct AnimationToProcess {
    /// The clip (baked for the entity's rig).
    pub clip: Arc<Clip>,
    /// Playback time in seconds, unwrapped (it keeps growing across loops); the clip wraps it.
    pub time: f32,
    /// Playback time of the previous frame (events and root motion use the interval).
    pub previous_time: f32,
    /// Playback speed (negative plays backwards); used by [`Animations::advance`].
    pub speed: f32,
    /// Weight in `[0, ∞)`; within a layer weights are normalised when they sum above 1.
    pub weight: f32,
    /// Layer index, `< MAX_LAYERS`; layers blend in increasing order.
    pub layer: u8,
    /// Override or additive. All animations of a layer share the mode.
    pub blend: BlendMode,
    /// Limits the animation to some bones.
    pub mask: Option<Arc<AvatarMask>>,
    /// Overrides the clip's loop flag for sampling (`Some(false)`: clamp to the clip's range,
    /// holding the last key after its end). `None` follows the clip.
    pub looping: Option<bool>,
}

impl AnimationToProcess {
    /// An override animation on layer 0 with weight 1, speed 1, time 0.
    pub fn new(clip: Arc<Clip>) -> Self {
        Self {
            clip,
            time: 0.0,
            previous_time: 0.0,
            speed: 1.0,
            weight: 1.0,
            layer: 0,
            blend: BlendMode::Override,
            mask: None,
            looping: None,
        }
    }
    /// Sets time (and previous time) in seconds.
    pub fn at(mut self, time: f32) -> Self {
        self.time = time;
        self.previous_time = time;
        self
    }
    /// Sets the weight.
    pub fn weight(mut self, weight: f32) -> Self {
        self.weight = weight;
        self
    }
    /// Sets the speed.
    pub fn speed(mut self, speed: f32) -> Self {
        self.speed = speed;
        self
    }
    /// Sets layer and blend mode.
    pub fn layer(mut self, layer: u8, blend: BlendMode) -> Self {
        self.layer = layer;
        self.blend = blend;
        self
    }
    /// Plays the clip looping or clamped, whatever the clip's own flag.
    pub fn looping(mut self, looping: bool) -> Self {
        self.looping = Some(looping);
        self
    }
    /// Whether this animation loops: its own flag where it sets one, else its clip's.
    pub fn plays_looping(&self) -> bool {
        self.looping.unwrap_or(self.clip.looping())
    }
    /// The clip time this animation samples at its current time.
    pub fn clip_time(&self) -> f32 {
        self.clip.wrap_time_as(self.time, self.plays_looping())
    }
    /// Sets the mask.
    pub fn mask(mut self, mask: Arc<AvatarMask>) -> Self {
        self.mask = Some(mask);
        self
    }
}

/// The animations an entity plays this frame, kept sorted by layer (stable).
#[derive(Clone, Debug, Default)]
pub struct Animations {
    list: Vec<AnimationToProcess>,
}

impl Animations {
    /// From a list (sorted by layer, keeping the order within a layer), unchecked:
    /// [`Animations::for_rig`] also checks the clips against the rig.
    pub fn new(mut list: Vec<AnimationToProcess>) -> Self {
        list.sort_by_key(|a| a.layer);
        Self { list }
    }
    /// The animations, sorted by layer.
    pub fn as_slice(&self) -> &[AnimationToProcess] {
        &self.list
    }
    /// Mutable access to each animation (layer changes are re-sorted by [`Animations::set`]).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut AnimationToProcess> {
        self.list.iter_mut()
    }
    /// From a list, checking that every clip (and mask) was baked for `rig`: the assignment
    /// path that catches a clip for another rig before a frame runs.
    ///
    /// # Errors
    /// [`JobError::ClipForAnotherRig`] naming the clip, its index, the clip's rig and `rig`;
    /// [`JobError::MaskForAnotherRig`] likewise for a mask.
    pub fn for_rig(rig: &Rig, list: Vec<AnimationToProcess>) -> Result<Self, JobError> {
        check_for_rig(rig, &list)?;
        Ok(Self::new(list))
    }
    /// Replaces the list.
    pub fn set(&mut self, list: Vec<AnimationToProcess>) {
        *self = Self::new(list);
    }
    /// Adds an animation.
    pub fn push(&mut self, a: AnimationToProcess) {
        let at = self.list.partition_point(|x| x.layer <= a.layer);
        self.list.insert(at, a);
    }
    /// Number of animations.
    pub fn len(&self) -> usize {
        self.list.len()
    }
    /// Whether none play.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
    /// The list itself, for the controller job, which rewrites it in layer order and reuses
    /// its entries.
    pub(crate) fn list_mut(&mut self) -> &mut Vec<AnimationToProcess> {
        &mut self.list
    }
    /// Advances every animation by `dt · speed` seconds (previous time := time).
    pub fn advance(&mut self, dt: f32) {
        for a in &mut self.list {
            a.previous_time = a.time;
            a.time += a.speed * dt;
        }
    }
}

/// Per-layer weights (multiplying the weights of the layer's animations). Default: all 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerWeights(pub [f32; MAX_LAYERS]);

impl Default for LayerWeights {
    fn default() -> Self {
        Self([1.0; MAX_LAYERS])
    }
}

/// The rig that animates this entity.
#[derive(Clone, Debug)]
pub struct RigRef(pub Arc<Rig>);

/// A skinned mesh driven by this entity's rig.
#[derive(Clone, Debug)]
pub struct SkinRef {
    /// The mesh.
    pub mesh: Arc<SkinnedMesh>,
    /// When set, palettes are expressed relative to this bone's model transform
    /// (`entityToRootBone = inverse(model[root_bone])`, as Unity's root bone); `None` uses the
    /// entity (rig) space, as glTF does.
    pub root_bone: Option<BoneIndex>,
}

impl SkinRef {
    /// A mesh skinned in entity space.
    pub fn new(mesh: Arc<SkinnedMesh>) -> Self {
        Self {
            mesh,
            root_bone: None,
        }
    }
}

/// The entity's transform in the world (root motion moves it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EntityTransform(pub Transform);

/// Root motion of the last frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RootMotion {
    /// Whether the delta is applied to [`EntityTransform`].
    pub apply: bool,
    /// Translation delta of the last frame, in entity space.
    pub delta_translation: Vec3,
    /// Rotation delta of the last frame.
    pub delta_rotation: Quat,
    /// Linear velocity in world space (delta / dt), when the frame time is known.
    pub velocity: Vec3,
}

impl Default for RootMotion {
    fn default() -> Self {
        Self {
            apply: true,
            delta_translation: Vec3::ZERO,
            delta_rotation: Quat::IDENTITY,
            velocity: Vec3::ZERO,
        }
    }
}

/// User-curve values of the last frame: `(curve name hash, value)`, one per distinct curve
/// among the playing clips, blended by the animations' effective weights.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CurveValues {
    values: Vec<(BoneHash, f32)>,
    /// Σ weight per entry of `values` while the job accumulates (kept to reuse its memory).
    weights: Vec<f32>,
}

impl CurveValues {
    /// No value yet, with room for `curves` distinct curves: reserved at spawn, so that job 5
    /// fills it without allocating on its worker threads.
    pub fn with_capacity(curves: usize) -> Self {
        Self {
            values: Vec::with_capacity(curves),
            weights: Vec::with_capacity(curves),
        }
    }
    /// The value of a named curve.
    pub fn get(&self, name: &str) -> Option<f32> {
        let h = crate::asset::bone_hash(name);
        self.values.iter().find(|(k, _)| *k == h).map(|(_, v)| *v)
    }
    /// Every `(curve name hash, value)` of the last frame.
    pub fn values(&self) -> &[(BoneHash, f32)] {
        &self.values
    }
    /// Starts a frame: no curve, memory kept.
    pub(crate) fn clear(&mut self) {
        self.values.clear();
        self.weights.clear();
    }
    /// Adds `w · v` to curve `hash`.
    pub(crate) fn accumulate(&mut self, hash: BoneHash, v: f32, w: f32) {
        match self.values.iter().position(|(k, _)| *k == hash) {
            Some(i) => {
                self.values[i].1 += w * v;
                self.weights[i] += w;
            }
            None => {
                self.values.push((hash, w * v));
                self.weights.push(w);
            }
        }
    }
    /// Divides every sum by its weight.
    pub(crate) fn normalize(&mut self) {
        for ((_, v), w) in self.values.iter_mut().zip(&self.weights) {
            *v /= *w;
        }
    }
}

/// The morph-target weights of an entity's mesh ([`SkinRef`]): one base weight per target,
/// set from code (or the file's node and mesh defaults), and optionally the curve that
/// animates each target. Each frame the morph-weights job
/// ([`MorphWeightsJob`](crate::morph_weights::MorphWeightsJob)) takes, per target, the value of
/// its curve in [`CurveValues`] when a playing clip has that curve, else the base weight, and
/// writes the targets whose weight is not 0 to [`MorphWeights::active`]: the compacted list
/// the CPU and GPU skinning paths walk, so targets at weight 0 cost nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MorphWeights {
    base: Vec<f32>,
    /// Per target, the hash of the curve that animates it (empty: none is animated).
    curves: Vec<BoneHash>,
    active: Vec<ActiveMorph>,
}

impl MorphWeights {
    /// Base weights, one per target of the entity's mesh, none animated.
    pub fn new(base: Vec<f32>) -> Self {
        Self {
            base,
            curves: Vec::new(),
            active: Vec::new(),
        }
    }
    /// The mesh's default weights, none animated.
    pub fn for_mesh(mesh: &SkinnedMesh) -> Self {
        Self::new(mesh.morph_targets().default_weights().to_vec())
    }
    /// Animates target `k` by the curve `<prefix>.weights[k]` (the name the glTF importer gives
    /// a node's `weights` channel; `prefix` is the node's name).
    pub fn animated_by(mut self, prefix: &str) -> Self {
        self.curves = (0..self.base.len())
            .map(|k| bone_hash(&format!("{prefix}.weights[{k}]")))
            .collect();
        self
    }
    /// Sets target `target`'s base weight (what it takes while no playing clip animates it).
    ///
    /// # Errors
    /// [`JobError::BadMorphWeights`] for a target out of range or a NaN or infinite weight.
    pub fn set(&mut self, target: usize, weight: f32) -> Result<(), JobError> {
        let err = |reason: String| JobError::BadMorphWeights {
            entity: None,
            mesh: String::new(),
            target: Some(target),
            reason,
        };
        if !weight.is_finite() {
            return Err(err(format!("weight {weight} is not finite")));
        }
        let n = self.base.len();
        let slot = self
            .base
            .get_mut(target)
            .ok_or_else(|| err(format!("out of range ({n} targets)")))?;
        *slot = weight;
        Ok(())
    }
    /// Base weights, one per target.
    pub fn base(&self) -> &[f32] {
        &self.base
    }
    /// The curve hash animating each target (empty when none is animated).
    pub fn curves(&self) -> &[BoneHash] {
        &self.curves
    }
    /// The targets whose weight was not 0 in the last frame, by increasing target index.
    pub fn active(&self) -> &[ActiveMorph] {
        &self.active
    }
    /// Rewrites the active list: per target in order, `animated(curve)` when it gives a value,
    /// else the base weight; zeros left out. No allocation once the list has grown.
    pub(crate) fn compact(&mut self, animated: impl Fn(BoneHash) -> Option<f32>) {
        self.active.clear();
        for (k, base) in self.base.iter().enumerate() {
            let weight = self
                .curves
                .get(k)
                .and_then(|h| animated(*h))
                .unwrap_or(*base);
            if weight != 0.0 {
                self.active.push(ActiveMorph {
                    target: k as u32,
                    weight,
                });
            }
        }
    }
}

/// An event that playback passed during the last frame.
#[derive(Clone, Debug, PartialEq)]
pub struct FiredEvent {
    /// Event name hash.
    pub name: BoneHash,
    /// Clip time of the event.
    pub time: f32,
    /// User value.
    pub payload: f32,
    /// Index of the animation (in [`Animations`]) that fired it.
    pub animation: u16,
    /// Effective weight of that animation.
    pub weight: f32,
    /// What fired it: a clip (job 5) or the entity's controller.
    pub source: EventSource,
}

/// What fired an event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EventSource {
    /// A clip's event, passed by playback (job 5).
    #[default]
    Clip,
    /// The entity's [`ControllerState`](crate::controller::ControllerState): `animation` is
    /// `u16::MAX`, `time` the state's normalised time, `weight` the state's weight.
    Controller {
        /// The controller layer.
        layer: u8,
        /// What happened.
        kind: crate::controller::ControllerEventKind,
    },
}

/// Events fired during the last frame (cleared every frame by the user-curve job).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FiredEvents(pub Vec<FiredEvent>);

/// Per-entity cursors into the clips' timelines, so forward playback advances a key or two
/// instead of searching. Owned by the sampling job.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SamplingCursors(pub Vec<u32>);

/// Where the entity's data lives in this frame's flat buffers (written by the per-bone-info
/// job; valid from then until the end of the frame).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameSlot {
    /// The entity's index in this frame's iteration order.
    pub index: u32,
    /// First bone in the flat pose buffers.
    pub bone_offset: u32,
    /// Number of bones.
    pub bone_count: u32,
    /// First palette entry (float3x4) in the palette slice.
    pub palette_offset: u32,
    /// Number of palette entries (the mesh's bone count, 0 without a mesh).
    pub palette_count: u32,
}

/// A bone entity that follows a bone of an animated entity (attachments).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExposedBone {
    /// The animated entity.
    pub owner: Entity,
    /// The bone.
    pub bone: BoneIndex,
}

/// World transform of an exposed bone entity (written by the propagation job).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoneWorld(pub Affine3A);

impl Default for BoneWorld {
    fn default() -> Self {
        Self(Affine3A::IDENTITY)
    }
}

/// The components every animated entity needs. Spawn it as it is and `insert` optional
/// components afterwards, or destructure it into a longer flat tuple: a tuple nested in a
/// bundle is refused by the store (`StoreError::NestedBundle`). A skinned character is
/// [`skinned`], spawned in one call.
pub type AnimatedBundle = (RigRef, Animations, LayerWeights, FrameSlot, SamplingCursors);

/// Builds an [`AnimatedBundle`], without checking the clips against the rig (a clip for
/// another rig then fails the frame; [`try_animated`] refuses it here).
pub fn animated(rig: Arc<Rig>, animations: Vec<AnimationToProcess>) -> AnimatedBundle {
    (
        RigRef(rig),
        Animations::new(animations),
        LayerWeights::default(),
        FrameSlot::default(),
        SamplingCursors::default(),
    )
}

/// The components of an animated, skinned character: [`AnimatedBundle`] plus its mesh.
pub type SkinnedBundle = (
    RigRef,
    SkinRef,
    Animations,
    LayerWeights,
    FrameSlot,
    SamplingCursors,
);

/// [`animated`], checking the clips against the rig first (see [`Animations::for_rig`]).
///
/// # Errors
/// As [`Animations::for_rig`].
pub fn try_animated(
    rig: Arc<Rig>,
    animations: Vec<AnimationToProcess>,
) -> Result<AnimatedBundle, JobError> {
    check_for_rig(&rig, &animations)?;
    Ok(animated(rig, animations))
}

/// [`skinned`], checking the clips against the rig first (see [`Animations::for_rig`]).
///
/// # Errors
/// As [`Animations::for_rig`].
pub fn try_skinned(
    rig: Arc<Rig>,
    mesh: Arc<SkinnedMesh>,
    animations: Vec<AnimationToProcess>,
) -> Result<SkinnedBundle, JobError> {
    check_for_rig(&rig, &animations)?;
    Ok(skinned(rig, mesh, animations))
}

fn check_for_rig(rig: &Rig, list: &[AnimationToProcess]) -> Result<(), JobError> {
    let hash = rig.content_hash();
    for (animation, a) in list.iter().enumerate() {
        if a.clip.rig_hash() != hash {
            return Err(JobError::ClipForAnotherRig {
                clip: a.clip.name().to_string(),
                animation,
                clip_rig: a.clip.rig_name().to_string(),
                rig: rig.name().to_string(),
            });
        }
        if let Some(m) = &a.mask
            && m.rig_hash() != hash
        {
            return Err(JobError::MaskForAnotherRig {
                mask: m.name().to_string(),
                animation,
                rig: rig.name().to_string(),
            });
        }
    }
    Ok(())
}

/// Builds a [`SkinnedBundle`]: `store.spawn(skinned(rig, mesh, animations))` spawns an
/// animated, skinned character in one call. The clips are not checked against the rig (a
/// clip for another rig then fails the frame; [`try_skinned`] refuses it here).
pub fn skinned(
    rig: Arc<Rig>,
    mesh: Arc<SkinnedMesh>,
    animations: Vec<AnimationToProcess>,
) -> SkinnedBundle {
    (
        RigRef(rig),
        SkinRef::new(mesh),
        Animations::new(animations),
        LayerWeights::default(),
        FrameSlot::default(),
        SamplingCursors::default(),
    )
}
