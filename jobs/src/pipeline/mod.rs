//! Registers the nine jobs as graph nodes, with the frame buffers they share.
//!
//! ```text
//!  [advance clocks] ─► controller ─► 1 bone offsets ─► 2 prefix sum ─► 3 per-bone info ─► 4 sample + blend ─┬► 5 user curves ─► controller events
//!                                                                                                           └► 6 root motion ─► 7 propagate ─► 9 skinning
//!                                                                            8 remap cache (beside 1–7) ──────────────────────────────────────┘
//! ```
//!
//! The controller node advances every entity's
//! [`ControllerState`](crate::controller::ControllerState) and rewrites its animation list; it
//! costs nothing for entities without one.
//!
//! The graph is data: [`register`] returns the node ids, so a user can add a node (IK, a
//! constraint) with edges `propagate → it → skinning` without editing the library.
//!
//! The nodes agree on one set of animated entities: those with
//! [`RigRef`](crate::component::RigRef), [`Animations`](crate::component::Animations),
//! [`LayerWeights`](crate::component::LayerWeights) and
//! [`FrameSlot`](crate::component::FrameSlot) (see
//! [`AnimatedBundle`](crate::component::AnimatedBundle)).
//! Their order in the flat buffers is the store's iteration order of that set.

mod advance_clocks;
mod bone_offsets;
mod controller;
mod exposed_bones;
mod frame_ranges;
mod per_bone_info;
mod pose_chain;
mod pose_stages;
mod prefix_sum;
mod propagate;
mod remap_cache;
mod root_motion;
mod sample_blend;
mod skinning;
mod user_curves;

use crate::frame::{
    BoneTable, FrameCounts, FrameOffsets, FrameSpans, LocalPoses, ModelPoses, PaletteBuffer,
    PaletteDestination, PaletteOffsets,
};
use crate::j8_remap_cache::RemapCache;
use crate::pose_stage::{PoseStages, StagePoint};
use advance_clocks::AdvanceClocksNode;
use bone_offsets::BoneOffsetsNode;
pub(crate) use bone_offsets::ClockCheckedBindings;
use controller::{ControllerEventsNode, ControllerNode};
use exposed_bones::ExposedBonesNode;
pub(crate) use per_bone_info::BoneTableRead;
use per_bone_info::PerBoneInfoNode;
use pose_chain::PoseChainNode;
use pose_stages::PoseStagesNode;
use prefix_sum::PrefixSumNode;
use propagate::PropagateNode;
use remap_cache::RemapCacheNode;
use root_motion::RootMotionNode;
use sample_blend::SampleBlendNode;
use sinew_runtime::graph::{GraphBuildError, GraphBuilder, NodeId};
use sinew_runtime::store::Store;
use skinning::SkinningNode;
use user_curves::UserCurvesNode;

/// The frame time, read by the clock node and for root-motion velocity.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameTime {
    /// Seconds since the previous frame.
    pub dt: f32,
}

/// The default [`PipelineConfig::grain`]: 16 entities per task, the design card's batch size.
/// On the Fox workload (24 joints, 2 threads) grains 4 to 64 time within a few percent of
/// each other; 1 costs about 10% in task overhead, and 256 leaves a thread idle at 100
/// characters (one task per store chunk).
pub const DEFAULT_GRAIN: usize = 16;

/// Options of [`register`].
#[derive(Clone, Copy, Debug)]
pub struct PipelineConfig {
    /// Items per rayon task in the data-parallel nodes whose work scales with the bones
    /// (the default [`DEFAULT_GRAIN`]). A run is halved (rayon `join`) until it holds at most
    /// `grain` items, so a task holds between `grain / 2` and `grain`; the grain changes how
    /// the work is cut, never what is computed, so palettes are bit-identical for every grain.
    /// What one item is:
    ///
    /// - the fused pose chain (jobs 4, 6, 7 and 9, [`PoseChain::Fused`]): one **entity**, all
    ///   four jobs for it, in one task with its worker's scratch; runs are cut within each
    ///   store chunk (chunks run in parallel beside each other, so a grain larger than a
    ///   chunk's entity count means one task per chunk);
    /// - staged job 4 (sample + blend), its bone phase: one **entity** (all its bones: an
    ///   entity is never split, because its clips' key rows are loaded once per 8-bone SoA
    ///   block, and cutting it would load them once per piece); its span phase is per chunk;
    /// - the per-chunk nodes (the clock, jobs 1 and 5, the exposed-bone node, and staged
    ///   jobs 6, 7 and 9): one **store chunk** (16 KiB of rows, tens to hundreds of
    ///   entities); the grain does not apply. The clock and jobs 1 and 5 do a few
    ///   operations per entity, so tasks smaller than a chunk would cost more in rayon
    ///   overhead than they balance. Staged 6, 7 and 9 do O(bones) work and would gain from an
    ///   entity grain at small crowds (one chunk is one task), but the staged chain is the
    ///   mode for user nodes between the jobs, not the fast path, and keeps the chunk;
    /// - job 2 (prefix sum): sequential below
    ///   [`PARALLEL_SCAN_THRESHOLD`](crate::j2_prefix_sum::PARALLEL_SCAN_THRESHOLD) entities,
    ///   above it blocks of at least 1024 entities; job 3 (per-bone table): groups of at least
    ///   4096 **bones**. Both are integer bookkeeping bound by memory, not a grain to tune.
    ///   Job 8 (remap cache) runs on one thread: it holds one entry per rig and skin pair.
    ///
    /// 0 is read as 1 (the finest split), because no grain is wrong, only slower: the field
    /// is a tuning knob, and its only invalid value has one obvious meaning.
    pub grain: usize,
    /// Whether to add the clock node that advances every animation by [`FrameTime`] before
    /// job 1 (`previous_time := time; time += speed · dt`). Without it the caller sets times.
    pub advance_clocks: bool,
    /// How jobs 4, 6, 7 and 9 run: fused entity by entity (the default) or as four nodes.
    pub pose_chain: PoseChain,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        Self {
            grain: DEFAULT_GRAIN,
            advance_clocks: true,
            pose_chain: PoseChain::default(),
        }
    }
}

/// How the pipeline runs jobs 4 (sample + blend), 6 (root motion), 7 (propagate) and
/// 9 (skinning). Both modes compute the same palettes, bit for bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoseChain {
    /// One node ([`crate::pose_chain`]) runs the four jobs entity by entity, each entity's
    /// local pose (and model matrices, unless kept) in a per-worker scratch that stays in
    /// cache: no crowd-sized [`LocalPoses`] written and read back. [`FrameSpans`] and
    /// [`LocalPoses`] are left empty. Exposed bones are updated by a node after the chain, from
    /// [`ModelPoses`], so they need `keep_model_poses` (without it, an exposed bone stops the
    /// frame with an error that says so). Like Unity's "optimize game objects", model space
    /// is written out only when asked: it is a crowd-sized buffer (64 bytes per bone) that
    /// costs about a fifth of the frame in memory traffic at 10 000 characters.
    Fused {
        /// Whether the chain also writes every bone's model matrix to [`ModelPoses`] (for
        /// exposed bones, attachments and nodes that read model poses after the chain).
        keep_model_poses: bool,
    },
    /// Four nodes with [`LocalPoses`] and [`ModelPoses`] between them, so that a user node
    /// can run between two of them (an IK step between 7 and 9, say).
    Staged,
}

impl Default for PoseChain {
    /// Fused, model matrices not kept (nothing in the pipeline reads them after job 9; turn
    /// them on for exposed bones or nodes that read [`ModelPoses`]).
    fn default() -> Self {
        PoseChain::Fused {
            keep_model_poses: false,
        }
    }
}

impl PoseChain {
    /// Fused, with every bone's model matrix kept in [`ModelPoses`].
    pub const FUSED_KEEPING_MODEL_POSES: Self = PoseChain::Fused {
        keep_model_poses: true,
    };
}

/// The ids of the pipeline's nodes, for adding edges to user nodes.
#[derive(Clone, Copy, Debug)]
pub struct PipelineNodes {
    /// The clock node, when configured.
    pub advance_clocks: Option<NodeId>,
    /// The controller node (after the clock, before job 1): advances every
    /// [`ControllerState`](crate::controller::ControllerState) and writes its entity's
    /// animation list and layer weights.
    pub controller: NodeId,
    /// The node that appends controller events to `FiredEvents` (after job 5).
    pub controller_events: NodeId,
    /// Job 1.
    pub bone_offsets: NodeId,
    /// Job 2.
    pub prefix_sum: NodeId,
    /// Job 3.
    pub per_bone_info: NodeId,
    /// Job 4 (with [`PoseChain::Fused`], the chain node: jobs 4, 6, 7 and 9 are one node).
    pub sample_blend: NodeId,
    /// Job 5.
    pub user_curves: NodeId,
    /// Job 6 (the chain node when fused).
    pub root_motion: NodeId,
    /// Job 7 (the chain node when fused).
    pub propagate: NodeId,
    /// Job 8.
    pub remap_cache: NodeId,
    /// Job 9 (the chain node when fused).
    pub skinning: NodeId,
    /// The node that moves exposed bone entities (after job 7: its own node when fused, job
    /// 7's node when staged).
    pub exposed_bones: NodeId,
    /// The node that runs the model stages ([`PoseStage`](crate::pose_stage::PoseStage)s),
    /// when any is installed (the chain node when fused). Staged, local stages run in nodes
    /// of their own after job 4 and after job 6.
    pub pose_stages: Option<NodeId>,
}

/// Inserts the frame buffers the nodes share (once, before the first frame; existing ones are
/// kept).
pub fn insert_resources(store: &mut Store) {
    fn ensure<R: Send + Sync + 'static + Default>(store: &mut Store) {
        if !store.contains_resource::<R>() {
            store.insert_resource(R::default());
        }
    }
    ensure::<FrameTime>(store);
    ensure::<FrameCounts>(store);
    ensure::<FrameOffsets>(store);
    ensure::<BoneTable>(store);
    ensure::<FrameSpans>(store);
    ensure::<LocalPoses>(store);
    ensure::<ModelPoses>(store);
    ensure::<RemapCache>(store);
    ensure::<PaletteBuffer>(store);
    ensure::<PaletteDestination>(store);
    ensure::<PaletteOffsets>(store);
}

/// Adds jobs 1 to 3 alone (bone offsets → prefix sum → per-bone info): the layout of the
/// frame's buffers, computed before a frame by [`Animator::layout`](crate::animator::Animator::layout).
pub(crate) fn register_layout(builder: &mut GraphBuilder) {
    let bone_offsets = builder.add_node(BoneOffsetsNode);
    let prefix_sum = builder.add_node(PrefixSumNode);
    let per_bone_info = builder.add_node(PerBoneInfoNode);
    builder
        .add_edge(bone_offsets, prefix_sum)
        .add_edge(prefix_sum, per_bone_info);
}

/// Adds the pipeline's nodes and edges to `builder`.
///
/// # Errors
/// None from the pipeline itself; the builder's errors surface at `build()`. The `Result`
/// leaves room for configuration checks.
pub fn register(
    builder: &mut GraphBuilder,
    config: PipelineConfig,
) -> Result<PipelineNodes, GraphBuildError> {
    register_with_stages(builder, config, &PoseStages::new())
}

/// [`register`], with `stages` run on each entity at their points (local stages after job 4
/// or job 6, model stages between job 7 and job 9): inside the pose chain when fused; when
/// staged, in a node per point between the jobs it falls between (`pose stages`, named by
/// [`PipelineNodes::pose_stages`], for the model stages).
///
/// # Errors
/// As [`register`].
pub fn register_with_stages(
    builder: &mut GraphBuilder,
    config: PipelineConfig,
    stages: &PoseStages,
) -> Result<PipelineNodes, GraphBuildError> {
    let advance_clocks = config
        .advance_clocks
        .then(|| builder.add_node(AdvanceClocksNode));
    // The controller runs after the clock (whose binding checks cover last frame's list, and
    // whose advance it overwrites for the entities it drives) and before job 1.
    let controller = builder.add_node(ControllerNode);
    let bone_offsets = builder.add_node(BoneOffsetsNode);
    let prefix_sum = builder.add_node(PrefixSumNode);
    let per_bone_info = builder.add_node(PerBoneInfoNode);
    let user_curves = builder.add_node(UserCurvesNode);
    let controller_events = builder.add_node(ControllerEventsNode);
    let remap_cache = builder.add_node(RemapCacheNode);
    if let Some(a) = advance_clocks {
        builder.add_edge(a, controller);
    }
    builder
        .add_edge(controller, bone_offsets)
        .add_edge(user_curves, controller_events);
    builder
        .add_edge(bone_offsets, prefix_sum)
        .add_edge(prefix_sum, per_bone_info);
    let batch = config.grain.max(1);
    match config.pose_chain {
        PoseChain::Fused { keep_model_poses } => {
            let chain = builder.add_node(PoseChainNode {
                batch,
                keep_model_poses,
                stages: stages.clone(),
                checked: Default::default(),
            });
            let exposed_bones = builder.add_node(ExposedBonesNode);
            builder
                .add_edge(per_bone_info, chain)
                .add_edge(per_bone_info, user_curves)
                .add_edge(remap_cache, chain)
                .add_edge(chain, exposed_bones);
            Ok(PipelineNodes {
                advance_clocks,
                controller,
                controller_events,
                bone_offsets,
                prefix_sum,
                per_bone_info,
                sample_blend: chain,
                user_curves,
                root_motion: chain,
                propagate: chain,
                remap_cache,
                skinning: chain,
                exposed_bones,
                pose_stages: (!stages.is_empty()).then_some(chain),
            })
        }
        PoseChain::Staged => {
            let sample_blend = builder.add_node(SampleBlendNode { batch });
            let root_motion = builder.add_node(RootMotionNode);
            let propagate = builder.add_node(PropagateNode);
            let skinning = builder.add_node(SkinningNode);
            builder
                .add_edge(per_bone_info, sample_blend)
                .add_edge(sample_blend, user_curves)
                .add_edge(sample_blend, root_motion)
                .add_edge(root_motion, propagate)
                .add_edge(propagate, skinning)
                .add_edge(remap_cache, skinning);
            // Each point's stages in a node between the jobs it falls between.
            let mut stage_node = |point: StagePoint, before: NodeId, after: NodeId| {
                stages.has(point).then(|| {
                    let node = builder.add_node(PoseStagesNode {
                        stages: stages.clone(),
                        point,
                        checked: Default::default(),
                    });
                    builder.add_edge(before, node).add_edge(node, after);
                    node
                })
            };
            stage_node(StagePoint::Sampled, sample_blend, root_motion);
            stage_node(StagePoint::RootMoved, root_motion, propagate);
            let pose_stages = stage_node(StagePoint::Propagated, propagate, skinning);
            Ok(PipelineNodes {
                advance_clocks,
                controller,
                controller_events,
                bone_offsets,
                prefix_sum,
                per_bone_info,
                sample_blend,
                user_curves,
                root_motion,
                propagate,
                remap_cache,
                skinning,
                exposed_bones: propagate,
                pose_stages,
            })
        }
    }
}

impl PipelineNodes {
    /// The name of the fused pipeline's node for jobs 4, 6, 7 and 9.
    pub const FUSED_CHAIN_NAME: &'static str = "4·6·7·9 pose chain";
}
