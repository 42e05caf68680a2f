//! Per-entity stages between the fused jobs: inverse kinematics, constraints, foot placement,
//! or an engine's own. A [`PoseStage`] edits model matrices between job 7 (propagation) and job
//! 9 (skinning); a [`LocalPoseStage`] edits local bone transforms after job 4 (sampling) or
//! after job 6 (root motion), at its [`LocalStagePoint`].
//!
//! A [`PoseStage`] names the component it reads ([`PoseStage::Input`]). The pipeline declares
//! that read on the node that runs the stages, so the graph orders the stage against any node
//! that writes the component, as for any other node. Per frame, every entity that has the
//! component gets [`PoseStage::check`] before any entity moves (a failing check fails the frame
//! with [`JobError::PoseStage`] naming the stage and the entity, and changes nothing), except
//! in a store chunk whose input and rig columns have not been written since the stage's last
//! check of it passed (a check depends only on the input and the rig), then
//! [`PoseStage::apply`] with its rig, its local pose and its model matrices, which the stage
//! edits in place before the palette is written. Entities without the component are not
//! visited; with no stage installed the chain does no work for stages at all.
//!
//! Stages run in the order they were added, each entity by one task, so the palettes do not
//! depend on the thread count. In the fused pipeline they run inside the pose chain, with the
//! entities' matrices still in cache, a model stage over a group of up to [`STAGE_GROUP`]
//! entities at once ([`PoseStage::apply_batch`], which a stage may solve lane-parallel); in
//! the staged pipeline a node between job 7 and job 9 runs them per entity over
//! [`ModelPoses`](crate::frame::ModelPoses).

use crate::asset::{Rig, Transform};
use crate::component::RigRef;
use crate::error::JobError;
use crate::math::soa::{LANES, SoaTransform};
use bumpalo::Bump;
use glam::Affine3A;
use sinew_runtime::graph::{Access, NodeContext, NodeError};
use sinew_runtime::store::{ArchetypeId, ChunkId, Component, ComponentView, Entity};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Why a stage refused its input (the job or the entity's component).
#[derive(Clone, Debug, PartialEq)]
pub enum StageError {
    /// A bone index outside the rig.
    BoneOutOfRange {
        /// The bone.
        bone: usize,
        /// Bones in the rig.
        bone_count: usize,
    },
    /// A chain whose bone does not descend from the chain's previous bone.
    NotAChain {
        /// The bone.
        bone: usize,
        /// The previous bone of the chain, which should be one of its ancestors.
        ancestor: usize,
    },
    /// Two consecutive chain joints at the same place: the bone between them has no length, so
    /// no rotation can move its end.
    ZeroLengthBone {
        /// The bone that starts the zero-length segment.
        bone: usize,
    },
    /// A target, axis or parameter that is NaN or infinite.
    NotFinite {
        /// Which input.
        what: &'static str,
    },
    /// A direction of zero length (a pole vector, an aim axis, a hinge axis).
    ZeroDirection {
        /// Which input.
        what: &'static str,
    },
    /// A parameter outside its range (a weight outside `[0, 1]`, say).
    OutOfRange {
        /// Which parameter.
        what: &'static str,
        /// Its value.
        value: f32,
        /// The range, in words.
        range: &'static str,
    },
    /// The model matrices or parents are shorter than the bones the job names, or the parents
    /// are not parent-first and depth-first (each bone's descendants right after it).
    BadHierarchy {
        /// What is wrong.
        reason: String,
    },
}

impl fmt::Display for StageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BoneOutOfRange { bone, bone_count } => {
                write!(f, "bone {bone} out of range ({bone_count} bones)")
            }
            Self::NotAChain { bone, ancestor } => write!(
                f,
                "bone {bone} does not descend from bone {ancestor}, the chain's previous bone"
            ),
            Self::ZeroLengthBone { bone } => write!(
                f,
                "bone {bone} has zero length (its chain joint and the next are at one place)"
            ),
            Self::NotFinite { what } => write!(f, "{what} is not finite"),
            Self::ZeroDirection { what } => write!(f, "{what} has zero length"),
            Self::OutOfRange { what, value, range } => {
                write!(f, "{what} is {value}, outside {range}")
            }
            Self::BadHierarchy { reason } => write!(f, "{reason}"),
        }
    }
}

impl std::error::Error for StageError {}

/// An entity's local pose as job 4 left it (read-only: stages edit model matrices, which are
/// what skinning reads).
#[derive(Clone, Copy, Debug)]
pub struct LocalPose<'a>(LocalRepr<'a>);

#[derive(Clone, Copy, Debug)]
enum LocalRepr<'a> {
    /// The fused chain's structure of arrays, 8 bones per block.
    Soa(&'a [SoaTransform], usize),
    /// The staged pipeline's [`LocalPoses`](crate::frame::LocalPoses) piece.
    Aos(&'a [Transform]),
}

impl<'a> LocalPose<'a> {
    pub(crate) fn soa(blocks: &'a [SoaTransform], bones: usize) -> Self {
        Self(LocalRepr::Soa(blocks, bones.min(blocks.len() * LANES)))
    }

    pub(crate) fn aos(bones: &'a [Transform]) -> Self {
        Self(LocalRepr::Aos(bones))
    }

    /// Bones in the pose.
    pub fn len(&self) -> usize {
        match self.0 {
            LocalRepr::Soa(_, n) => n,
            LocalRepr::Aos(b) => b.len(),
        }
    }

    /// Whether the pose has no bone.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bone `bone`'s local transform (relative to its parent).
    pub fn get(&self, bone: usize) -> Option<Transform> {
        match self.0 {
            LocalRepr::Soa(blocks, n) if bone < n => {
                blocks.get(bone / LANES).map(|b| b.lane(bone % LANES))
            }
            LocalRepr::Soa(..) => None,
            LocalRepr::Aos(b) => b.get(bone).copied(),
        }
    }
}

/// What a stage gets for one entity.
#[derive(Debug)]
pub struct StagePose<'a> {
    /// The entity.
    pub entity: Entity,
    /// Its rig (bones parent-first and depth-first).
    pub rig: &'a Rig,
    /// Its local pose (job 4, root motion applied).
    pub local: LocalPose<'a>,
    /// Its model matrices (job 7, and the earlier stages' edits), one per rig bone: the stage
    /// edits the bones it moves and their descendants.
    pub model: &'a mut [Affine3A],
    /// Its world transform after this frame's root motion (`world = transform · model`), when
    /// it has an [`EntityTransform`](crate::component::EntityTransform).
    pub transform: Option<&'a Transform>,
}

/// A per-entity step between propagation and skinning.
pub trait PoseStage: Send + Sync + fmt::Debug + 'static {
    /// The component the stage reads from each entity; entities without it are skipped.
    type Input: Component;

    /// The stage's name (in errors).
    fn name(&self) -> &str;

    /// Checks one entity's input against its rig before the frame moves anything. It must
    /// depend only on them: the pipeline does not check again a chunk whose inputs and rigs
    /// are unwritten since the last check passed.
    ///
    /// # Errors
    /// [`StageError`] saying what is wrong and with which bone.
    fn check(&self, rig: &Rig, input: &Self::Input) -> Result<(), StageError>;

    /// [`PoseStage::check`] for an entity of the same rig as one whose input `checked` passed
    /// it this frame, when the stage can tell more cheaply: what depends only on the rig and on
    /// bones that both inputs name alike need not be checked again. It must give what `check`
    /// gives. `None` (the default) runs `check`.
    fn check_like(
        &self,
        input: &Self::Input,
        checked: &Self::Input,
    ) -> Option<Result<(), StageError>> {
        let _ = (input, checked);
        None
    }

    /// Edits one entity's model matrices. Runs only after [`PoseStage::check`] accepted the
    /// input, and must leave every matrix finite.
    fn apply(&self, input: &Self::Input, pose: &mut StagePose<'_>);

    /// Edits the model matrices of a group of entities (up to [`STAGE_GROUP`], consecutive
    /// rows of one chunk): `inputs[k]` is `poses[k]`'s input. The pipeline runs stages this
    /// way; the default runs [`PoseStage::apply`] per entity. A stage that solves the group
    /// lane-parallel must give each entity what `apply` gives it, whatever else is in the
    /// group, so that the palettes do not depend on where a run's groups start.
    fn apply_batch(&self, inputs: &[Self::Input], poses: &mut [StagePose<'_>]) {
        for (input, pose) in inputs.iter().zip(poses) {
            self.apply(input, pose);
        }
    }
}

/// The most entities a [`PoseStage::apply_batch`] call gets: a group's model matrices (45
/// bones each, 48 bytes a matrix, 17 KiB for the built-in character) stay in the L1 cache, and
/// one `f32x8` lane per entity.
pub const STAGE_GROUP: usize = LANES;

/// An entity's local pose, to edit (a [`LocalPoseStage`]'s view of job 4's output).
#[derive(Debug)]
pub struct LocalPoseMut<'a>(LocalReprMut<'a>);

#[derive(Debug)]
enum LocalReprMut<'a> {
    Soa(&'a mut [SoaTransform], usize),
    Aos(&'a mut [Transform]),
}

impl<'a> LocalPoseMut<'a> {
    pub(crate) fn soa(blocks: &'a mut [SoaTransform], bones: usize) -> Self {
        let n = bones.min(blocks.len() * LANES);
        Self(LocalReprMut::Soa(blocks, n))
    }

    pub(crate) fn aos(bones: &'a mut [Transform]) -> Self {
        Self(LocalReprMut::Aos(bones))
    }

    /// Bones in the pose.
    pub fn len(&self) -> usize {
        match &self.0 {
            LocalReprMut::Soa(_, n) => *n,
            LocalReprMut::Aos(b) => b.len(),
        }
    }

    /// Whether the pose has no bone.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bone `bone`'s local transform (relative to its parent).
    pub fn get(&self, bone: usize) -> Option<Transform> {
        match &self.0 {
            LocalReprMut::Soa(blocks, n) if bone < *n => {
                blocks.get(bone / LANES).map(|b| b.lane(bone % LANES))
            }
            LocalReprMut::Soa(..) => None,
            LocalReprMut::Aos(b) => b.get(bone).copied(),
        }
    }

    /// Sets bone `bone`'s local transform; `false` (and nothing changes) when the pose has no
    /// such bone.
    pub fn set(&mut self, bone: usize, transform: &Transform) -> bool {
        match &mut self.0 {
            LocalReprMut::Soa(blocks, n) if bone < *n => match blocks.get_mut(bone / LANES) {
                Some(block) => {
                    block.set_lane(bone % LANES, transform);
                    true
                }
                None => false,
            },
            LocalReprMut::Soa(..) => false,
            LocalReprMut::Aos(b) => match b.get_mut(bone) {
                Some(t) => {
                    *t = *transform;
                    true
                }
                None => false,
            },
        }
    }
}

/// Where a [`LocalPoseStage`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LocalStagePoint {
    /// After job 4 (sampling and blending), before root motion: the root still carries the
    /// clip's motion, which job 6 then takes out (it holds the root at its start pose).
    AfterSampling,
    /// After job 6 (root motion), before propagation: the entity's transform has moved.
    AfterRootMotion,
}

/// What a [`LocalPoseStage`] gets for one entity.
#[derive(Debug)]
pub struct LocalStagePose<'a> {
    /// The entity.
    pub entity: Entity,
    /// Its rig.
    pub rig: &'a Rig,
    /// Its local pose, to edit: job 7 builds the model matrices from it.
    pub local: LocalPoseMut<'a>,
    /// Its world transform (after this frame's root motion at
    /// [`LocalStagePoint::AfterRootMotion`], before it at [`LocalStagePoint::AfterSampling`]),
    /// when it has an [`EntityTransform`](crate::component::EntityTransform).
    pub transform: Option<&'a Transform>,
}

/// A per-entity step on local bone transforms, after sampling or after root motion (a
/// procedural offset, a look-at expressed in local rotations, a pose correction before the
/// hierarchy is built).
pub trait LocalPoseStage: Send + Sync + fmt::Debug + 'static {
    /// The component the stage reads from each entity; entities without it are skipped.
    type Input: Component;

    /// The stage's name (in errors).
    fn name(&self) -> &str;

    /// Where it runs.
    fn point(&self) -> LocalStagePoint;

    /// Checks one entity's input against its rig before the frame moves anything; as
    /// [`PoseStage::check`], it must depend only on them.
    ///
    /// # Errors
    /// [`StageError`] saying what is wrong and with which bone.
    fn check(&self, rig: &Rig, input: &Self::Input) -> Result<(), StageError>;

    /// Edits one entity's local pose. Runs only after [`LocalPoseStage::check`] accepted the
    /// input, and must leave every transform finite (rotations unit length).
    fn apply(&self, input: &Self::Input, pose: &mut LocalStagePose<'_>);
}

/// Where a stage of either kind runs, in the chain's order: after the job that names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum StagePoint {
    Sampled,
    RootMoved,
    Propagated,
}

impl From<LocalStagePoint> for StagePoint {
    fn from(p: LocalStagePoint) -> Self {
        match p {
            LocalStagePoint::AfterSampling => Self::Sampled,
            LocalStagePoint::AfterRootMotion => Self::RootMoved,
        }
    }
}

/// Either kind of stage, as the pipeline runs it.
trait AnyStage: Send + Sync + fmt::Debug + 'static {
    type Input: Component;
    fn name(&self) -> &str;
    fn point(&self) -> StagePoint;
    fn check(&self, rig: &Rig, input: &Self::Input) -> Result<(), StageError>;
    fn check_like(
        &self,
        input: &Self::Input,
        checked: &Self::Input,
    ) -> Option<Result<(), StageError>>;
    fn apply_model(&self, inputs: &[Self::Input], poses: &mut [StagePose<'_>]);
    fn apply_local(&self, input: &Self::Input, pose: &mut LocalStagePose<'_>);
}

/// A [`PoseStage`] (model matrices after job 7).
#[derive(Debug)]
struct ModelStage<S>(S);

impl<S: PoseStage> AnyStage for ModelStage<S> {
    type Input = S::Input;
    fn name(&self) -> &str {
        self.0.name()
    }
    fn point(&self) -> StagePoint {
        StagePoint::Propagated
    }
    fn check(&self, rig: &Rig, input: &S::Input) -> Result<(), StageError> {
        self.0.check(rig, input)
    }
    fn check_like(&self, input: &S::Input, checked: &S::Input) -> Option<Result<(), StageError>> {
        self.0.check_like(input, checked)
    }
    fn apply_model(&self, inputs: &[S::Input], poses: &mut [StagePose<'_>]) {
        self.0.apply_batch(inputs, poses);
    }
    fn apply_local(&self, _: &S::Input, _: &mut LocalStagePose<'_>) {}
}

/// A [`LocalPoseStage`].
#[derive(Debug)]
struct LocalStage<S>(S);

impl<S: LocalPoseStage> AnyStage for LocalStage<S> {
    type Input = S::Input;
    fn name(&self) -> &str {
        self.0.name()
    }
    fn point(&self) -> StagePoint {
        self.0.point().into()
    }
    fn check(&self, rig: &Rig, input: &S::Input) -> Result<(), StageError> {
        self.0.check(rig, input)
    }
    fn check_like(&self, _: &S::Input, _: &S::Input) -> Option<Result<(), StageError>> {
        None
    }
    fn apply_model(&self, _: &[S::Input], _: &mut [StagePose<'_>]) {}
    fn apply_local(&self, input: &S::Input, pose: &mut LocalStagePose<'_>) {
        self.0.apply(input, pose);
    }
}

/// The stages a pipeline runs, in order (empty by default).
#[derive(Clone, Debug, Default)]
pub struct PoseStages {
    stages: Vec<Arc<dyn ErasedStage>>,
}

impl PoseStages {
    /// No stage.
    pub fn new() -> Self {
        Self::default()
    }

    /// These stages, then `stage` (on model matrices, after job 7).
    #[must_use]
    pub fn with(mut self, stage: impl PoseStage) -> Self {
        self.stages.push(Arc::new(ModelStage(stage)));
        self
    }

    /// These stages, then `stage` (on local transforms, at its [`LocalStagePoint`]). Stages
    /// run by point in the chain's order (after sampling, after root motion, after
    /// propagation), and in the order they were added within a point.
    #[must_use]
    pub fn with_local(mut self, stage: impl LocalPoseStage) -> Self {
        self.stages.push(Arc::new(LocalStage(stage)));
        self
    }

    /// Whether a stage runs at `point`.
    pub(crate) fn has(&self, point: StagePoint) -> bool {
        self.stages.iter().any(|s| s.point() == point)
    }

    /// Number of stages.
    pub fn len(&self) -> usize {
        self.stages.len()
    }

    /// Whether there is no stage.
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }

    /// The stages' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.stages.iter().map(|s| s.name())
    }

    /// `access` plus a read of every stage's input component.
    pub(crate) fn declare(&self, access: Access) -> Access {
        self.stages.iter().fold(access, |a, s| s.declare(a))
    }

    /// Each stage's view of its input column, for one frame.
    pub(crate) fn views<'a>(
        &'a self,
        ctx: &NodeContext<'a>,
    ) -> Result<Vec<Box<dyn StageView + 'a>>, NodeError> {
        (self.stages.iter().enumerate())
            .map(|(index, s)| s.view(index, ctx))
            .collect()
    }
}

/// A stage with its input type erased, as the pipeline holds it.
pub(crate) trait ErasedStage: Send + Sync + fmt::Debug {
    fn name(&self) -> &str;
    fn point(&self) -> StagePoint;
    fn declare(&self, access: Access) -> Access;
    /// The stage's view of its input; `index` is its place among the installed stages.
    fn view<'a>(
        &'a self,
        index: usize,
        ctx: &NodeContext<'a>,
    ) -> Result<Box<dyn StageView + 'a>, NodeError>;
}

impl<S: AnyStage> ErasedStage for S {
    fn name(&self) -> &str {
        AnyStage::name(self)
    }
    fn point(&self) -> StagePoint {
        AnyStage::point(self)
    }
    fn declare(&self, access: Access) -> Access {
        access.read::<S::Input>()
    }
    fn view<'a>(
        &'a self,
        index: usize,
        ctx: &NodeContext<'a>,
    ) -> Result<Box<dyn StageView + 'a>, NodeError> {
        Ok(Box::new(View {
            stage: self,
            index,
            inputs: ctx.view::<S::Input>()?,
        }))
    }
}

/// One frame's view of a stage's input component.
pub(crate) trait StageView {
    /// The stage over one store chunk, when the chunk's entities have its input, made in the
    /// node's frame arena (no heap allocation per chunk and frame).
    fn chunk<'s>(
        &'s self,
        arena: &'s Bump,
        archetype: ArchetypeId,
        chunk: ChunkId,
    ) -> Option<&'s dyn ChunkStage>;
}

struct View<'a, S: AnyStage> {
    stage: &'a S,
    index: usize,
    inputs: ComponentView<'a, S::Input>,
}

impl<S: AnyStage> StageView for View<'_, S> {
    fn chunk<'s>(
        &'s self,
        arena: &'s Bump,
        archetype: ArchetypeId,
        chunk: ChunkId,
    ) -> Option<&'s dyn ChunkStage> {
        let inputs = self.inputs.chunk_column(archetype, chunk)?;
        let changed = self.inputs.chunk_changed_frame(archetype, chunk)?;
        Some(arena.alloc(Column {
            stage: self.stage,
            index: self.index,
            inputs,
            changed,
        }))
    }
}

/// A stage over the rows of one chunk (row = the entity's row in its chunk).
pub(crate) trait ChunkStage: Send + Sync {
    fn point(&self) -> StagePoint;
    /// The stage's place among the installed stages.
    fn index(&self) -> usize;
    /// The frame at which the chunk's input column was last written.
    fn changed_frame(&self) -> u64;
    /// Checks rows `first_row..` (entities `entities`, rigs `rigs`), in order, up to the first
    /// failure; an entity after one of the same rig may be checked less
    /// ([`PoseStage::check_like`]).
    fn check_rows(
        &self,
        first_row: usize,
        entities: &[Entity],
        rigs: &[RigRef],
    ) -> Result<(), JobError>;
    /// Applies the stage to rows `first_row..first_row + poses.len()`.
    fn apply(&self, first_row: usize, poses: &mut [StagePose<'_>]);
    fn apply_local(&self, row: usize, pose: &mut LocalStagePose<'_>);
}

struct Column<'s, S: AnyStage> {
    stage: &'s S,
    index: usize,
    inputs: &'s [S::Input],
    changed: u64,
}

impl<S: AnyStage> ChunkStage for Column<'_, S> {
    fn point(&self) -> StagePoint {
        AnyStage::point(self.stage)
    }
    fn index(&self) -> usize {
        self.index
    }
    fn changed_frame(&self) -> u64 {
        self.changed
    }
    fn check_rows(
        &self,
        first_row: usize,
        entities: &[Entity],
        rigs: &[RigRef],
    ) -> Result<(), JobError> {
        let rows = first_row..first_row.saturating_add(entities.len().min(rigs.len()));
        let Some(inputs) = self.inputs.get(rows) else {
            return Ok(());
        };
        let mut checked: Option<(&S::Input, &Rig)> = None;
        for ((input, &entity), rig) in inputs.iter().zip(entities).zip(rigs) {
            let rig = &*rig.0;
            // The entity before passed: with the same rig, the stage may check less.
            let like = checked
                .filter(|&(_, checked_rig)| std::ptr::eq(checked_rig, rig))
                .and_then(|(checked, _)| self.stage.check_like(input, checked));
            like.unwrap_or_else(|| self.stage.check(rig, input))
                .map_err(|error| JobError::PoseStage {
                    stage: AnyStage::name(self.stage).to_owned(),
                    entity,
                    error,
                })?;
            checked = Some((input, rig));
        }
        Ok(())
    }
    fn apply(&self, first_row: usize, poses: &mut [StagePose<'_>]) {
        let rows = first_row..first_row.saturating_add(poses.len());
        if let Some(inputs) = self.inputs.get(rows) {
            self.stage.apply_model(inputs, poses);
        }
    }
    fn apply_local(&self, row: usize, pose: &mut LocalStagePose<'_>) {
        if let Some(input) = self.inputs.get(row) {
            self.stage.apply_local(input, pose);
        }
    }
}

/// The installed stages at `points` bound to one chunk (those whose input the chunk has), in
/// the node's frame arena.
pub(crate) fn bind_chunk<'s>(
    views: &'s [Box<dyn StageView + 's>],
    arena: &'s Bump,
    archetype: ArchetypeId,
    chunk: ChunkId,
    points: impl Fn(StagePoint) -> bool,
) -> &'s [&'s dyn ChunkStage] {
    let bound = views
        .iter()
        .filter_map(|v| v.chunk(arena, archetype, chunk))
        .filter(|s| points(s.point()));
    bumpalo::collections::Vec::from_iter_in(bound, arena).into_bump_slice()
}

/// The frame at which each stage last checked each store chunk's rows and found them good. A
/// check depends only on the entity's input and rig, so it still holds while neither column
/// of the chunk has been written since: a chunk checked at frame `f` whose columns were last
/// written before `f` is not checked again. A write in frame `f` itself, before or after the
/// check, stamps `f` and so is checked at the next frame, and so are new, moved and removed
/// rows (the store stamps every column of the chunks they touch).
#[derive(Debug, Default)]
pub(crate) struct CheckedChunks {
    /// The store the frames are of ([`sinew_runtime::store::Store::id`]).
    store: u64,
    checked: HashMap<(usize, ArchetypeId, ChunkId), u64>,
}

impl CheckedChunks {
    /// The checks recorded for the store `store_id`: those of another store are forgotten.
    pub(crate) fn of_store(&mut self, store_id: u64) -> &mut Self {
        if self.store != store_id {
            self.checked.clear();
            self.store = store_id;
        }
        self
    }

    /// Whether `stage`'s last check of the chunk still holds, `rigs_changed` being the frame
    /// of the last write to the chunk's rig column.
    pub(crate) fn holds(
        &self,
        stage: &dyn ChunkStage,
        archetype: ArchetypeId,
        chunk: ChunkId,
        rigs_changed: u64,
    ) -> bool {
        (self.checked.get(&(stage.index(), archetype, chunk)))
            .is_some_and(|&checked| stage.changed_frame() < checked && rigs_changed < checked)
    }

    /// `stage`'s check of the chunk passed (or still held) at `frame`.
    pub(crate) fn record(
        &mut self,
        stage: &dyn ChunkStage,
        archetype: ArchetypeId,
        chunk: ChunkId,
        frame: u64,
    ) {
        self.checked
            .insert((stage.index(), archetype, chunk), frame);
    }
}
