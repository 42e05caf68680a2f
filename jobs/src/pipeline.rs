//! Registers the nine jobs as graph nodes, with the frame buffers they share.
//!
//! ```text
//!  [advance clocks] ─► 1 bone offsets ─► 2 prefix sum ─► 3 per-bone info ─► 4 sample + blend ─┬► 5 user curves
//!                                                                                             └► 6 root motion ─► 7 propagate ─► 9 skinning
//!                                                              8 remap cache (beside 1–7) ──────────────────────────────────────┘
//! ```
//!
//! The graph is data: [`register`] returns the node ids, so a user can add a node (IK, a
//! constraint) with edges `propagate → it → skinning` without editing the library.
//!
//! The nodes agree on one set of animated entities: those with [`RigRef`], [`Animations`],
//! [`LayerWeights`] and [`FrameSlot`] (see [`AnimatedBundle`](crate::component::AnimatedBundle)).
//! Their order in the flat buffers is the store's iteration order of that set.

use crate::component::{
    Animations, BoneWorld, CurveValues, EntityTransform, ExposedBone, FiredEvents, FrameSlot,
    LayerWeights, RigRef, RootMotion, SAMPLING_BATCH, SamplingCursors, SkinRef,
};
use crate::error::JobError;
use crate::frame::{
    BoneTable, EntityCounts, FrameCounts, FrameOffsets, FrameSpans, LocalPoses, ModelPoses,
    PaletteBuffer, PaletteEntry, resize_frame_buffer, split_lengths, split_ranges,
};
use crate::j4_sample_blend::{EntitySampling, resolve_spans};
use crate::j8_remap_cache::RemapCache;
use crate::pose_chain::PoseChainJob;
use crate::{
    BoneOffsetsJob, PerBoneInfoJob, PrefixSumJob, PropagateJob, RemapCacheJob, RootMotionJob,
    SampleBlendJob, SkinningJob, UserCurvesJob,
};
use glam::Affine3A;
use rayon::prelude::*;
use sinew_runtime::graph::{
    Access, GraphBuildError, GraphBuilder, Node, NodeContext, NodeError, NodeId,
};
use sinew_runtime::store::{QueryChunk, QueryParam, ScopedSlice, Store};

/// The frame time, read by the clock node and for root-motion velocity.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameTime {
    /// Seconds since the previous frame.
    pub dt: f32,
}

/// Options of [`register`].
#[derive(Clone, Copy, Debug)]
pub struct PipelineConfig {
    /// Bones per parallel task in the sampling job (whole entities per task).
    pub sampling_batch: usize,
    /// Whether to add the clock node that advances every animation by [`FrameTime`] before
    /// job 1 (`previous_time := time; time += speed · dt`). Without it the caller sets times.
    pub advance_clocks: bool,
    /// How jobs 4, 6, 7 and 9 run: fused entity by entity (the default) or as four nodes.
    pub pose_chain: PoseChain,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        Self {
            sampling_batch: SAMPLING_BATCH,
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
    let advance_clocks = config
        .advance_clocks
        .then(|| builder.add_node(AdvanceClocksNode));
    let bone_offsets = builder.add_node(BoneOffsetsNode);
    let prefix_sum = builder.add_node(PrefixSumNode);
    let per_bone_info = builder.add_node(PerBoneInfoNode);
    let user_curves = builder.add_node(UserCurvesNode);
    let remap_cache = builder.add_node(RemapCacheNode);
    if let Some(a) = advance_clocks {
        builder.add_edge(a, bone_offsets);
    }
    builder
        .add_edge(bone_offsets, prefix_sum)
        .add_edge(prefix_sum, per_bone_info);
    let batch = config.sampling_batch.max(1);
    match config.pose_chain {
        PoseChain::Fused { keep_model_poses } => {
            let chain = builder.add_node(PoseChainNode {
                batch,
                keep_model_poses,
            });
            let exposed_bones = builder.add_node(ExposedBonesNode);
            builder
                .add_edge(per_bone_info, chain)
                .add_edge(per_bone_info, user_curves)
                .add_edge(remap_cache, chain)
                .add_edge(chain, exposed_bones);
            Ok(PipelineNodes {
                advance_clocks,
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
            Ok(PipelineNodes {
                advance_clocks,
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
            })
        }
    }
}

fn node_err(e: impl std::error::Error + Send + Sync + 'static) -> NodeError {
    NodeError::from_error(e)
}

/// The clock node: `previous_time := time; time += speed · dt` for every animation.
#[derive(Debug)]
pub struct AdvanceClocksNode;

impl Node for AdvanceClocksNode {
    fn name(&self) -> &str {
        "advance clocks"
    }
    fn access(&self) -> Access {
        Access::new().read::<FrameTime>().write::<Animations>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let dt = ctx.resource::<FrameTime>().map_err(node_err)?.dt;
        let mut q = ctx.query::<&mut Animations>().map_err(node_err)?;
        q.par_for_each_chunk(|chunk| {
            for a in chunk.into_columns() {
                a.advance(dt);
            }
        });
        Ok(())
    }
}

/// Job 1's node.
#[derive(Debug)]
pub struct BoneOffsetsNode;

impl Node for BoneOffsetsNode {
    fn name(&self) -> &str {
        "1 bone offsets"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<RigRef>()
            .read::<SkinRef>()
            .read::<Animations>()
            .read::<LayerWeights>()
            .read::<FrameSlot>()
            .write::<FrameCounts>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let mut q = ctx
            .query::<(&RigRef, &Animations, Option<&SkinRef>)>()
            .map_err(node_err)?
            .with::<LayerWeights>()
            .with::<FrameSlot>();
        let chunks = q.chunks();
        let mut counts = ctx.resource_mut::<FrameCounts>().map_err(node_err)?;
        let n: usize = chunks.iter().map(|c| c.len()).sum();
        resize_frame_buffer(&mut counts.0, n);
        let pieces = split_lengths(&mut counts.0, chunks.iter().map(|c| c.len()))
            .ok_or_else(|| NodeError::new("bone offsets: chunk sizes exceed the entity count"))?;
        chunks
            .into_par_iter()
            .zip(pieces)
            .try_for_each(|(chunk, out)| {
                let (entities, (rigs, animations, skins)) = chunk.into_parts();
                let mut job = BoneOffsetsJob {
                    entities,
                    rigs,
                    skins,
                    animations,
                    counts: out,
                };
                job.validate()?;
                job.run();
                Ok::<(), JobError>(())
            })?;
        Ok(())
    }
}

/// Job 2's node.
#[derive(Debug)]
pub struct PrefixSumNode;

impl Node for PrefixSumNode {
    fn name(&self) -> &str {
        "2 prefix sum"
    }
    fn access(&self) -> Access {
        Access::new().read::<FrameCounts>().write::<FrameOffsets>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let counts = ctx.resource::<FrameCounts>().map_err(node_err)?;
        let mut offsets = ctx.resource_mut::<FrameOffsets>().map_err(node_err)?;
        let FrameOffsets { offsets, total } = &mut *offsets;
        resize_frame_buffer(offsets, counts.0.len());
        let mut job = PrefixSumJob {
            counts: &counts.0,
            offsets,
            total,
            sequential: false,
        };
        job.validate()?;
        job.run();
        Ok(())
    }
}

/// Job 3's node: the bone table, and each entity's [`FrameSlot`].
#[derive(Debug)]
pub struct PerBoneInfoNode;

impl Node for PerBoneInfoNode {
    fn name(&self) -> &str {
        "3 per-bone info"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<FrameCounts>()
            .read::<FrameOffsets>()
            .read::<RigRef>()
            .read::<Animations>()
            .read::<LayerWeights>()
            .write::<FrameSlot>()
            .write::<BoneTable>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let counts = ctx.resource::<FrameCounts>().map_err(node_err)?;
        let offsets = ctx.resource::<FrameOffsets>().map_err(node_err)?;
        let mut table = ctx.resource_mut::<BoneTable>().map_err(node_err)?;
        resize_frame_buffer(&mut table.0, offsets.total.bones as usize);
        let mut job = PerBoneInfoJob {
            counts: &counts.0,
            offsets: &offsets.offsets,
            table: &mut table.0,
        };
        job.validate()?;
        job.run();
        let mut q = ctx
            .query::<&mut FrameSlot>()
            .map_err(node_err)?
            .with::<RigRef>()
            .with::<Animations>()
            .with::<LayerWeights>();
        let (counts, offsets) = (&counts.0, &offsets.offsets);
        q.par_for_each_chunk(|chunk| {
            let first = chunk.first_index();
            for (row, slot) in chunk.into_columns().iter_mut().enumerate() {
                let i = first + row;
                let (c, o) = (
                    counts.get(i).copied().unwrap_or_default(),
                    offsets.get(i).copied().unwrap_or_default(),
                );
                *slot = FrameSlot {
                    index: i as u32,
                    bone_offset: o.bones,
                    bone_count: c.bones,
                    palette_offset: o.palette,
                    palette_count: c.palette,
                };
            }
        });
        Ok(())
    }
}

/// Job 4's node: spans per entity, then every entity's bones (runs of entities in parallel).
#[derive(Debug)]
pub struct SampleBlendNode {
    batch: usize,
}

impl Node for SampleBlendNode {
    fn name(&self) -> &str {
        "4 sample + blend"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<RigRef>()
            .read::<Animations>()
            .read::<LayerWeights>()
            .read::<FrameSlot>()
            .read::<FrameOffsets>()
            .write::<SamplingCursors>()
            .write::<FrameSpans>()
            .write::<LocalPoses>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let mut q = ctx
            .query::<(
                &RigRef,
                &Animations,
                &LayerWeights,
                &FrameSlot,
                Option<&mut SamplingCursors>,
            )>()
            .map_err(node_err)?;
        let chunks = q.chunks();
        let offsets = ctx.resource::<FrameOffsets>().map_err(node_err)?;
        let mut spans = ctx.resource_mut::<FrameSpans>().map_err(node_err)?;
        let mut poses = ctx.resource_mut::<LocalPoses>().map_err(node_err)?;
        resize_frame_buffer(&mut spans.0, offsets.total.spans as usize);
        resize_frame_buffer(&mut poses.0, offsets.total.bones as usize);
        let n = offsets.offsets.len();
        let entities: &mut [Option<EntitySampling<'_>>] =
            ctx.scratch().alloc_slice_fill_copy(n, None);

        // Phase one, per chunk: spans and the per-entity table.
        let span_ranges: Vec<(usize, usize)> = chunks
            .iter()
            .map(|c| chunk_range(&offsets, c.first_index(), c.len(), |o| o.spans))
            .collect();
        let span_pieces = split_ranges(&mut spans.0, &span_ranges)
            .ok_or_else(|| NodeError::new("sampling: span ranges do not fit"))?;
        let entity_pieces = split_lengths(entities, chunks.iter().map(|c| c.len()))
            .ok_or_else(|| NodeError::new("sampling: chunk sizes exceed the entity count"))?;
        let offs = &offsets.offsets;
        chunks
            .into_par_iter()
            .zip(span_pieces)
            .zip(entity_pieces)
            .for_each(|((chunk, spans_piece), table_out)| {
                let first = chunk.first_index();
                let span_base = offs.get(first).map_or(0, |o| o.spans as usize);
                let (_, (rigs, animations, layer_weights, _slots, mut cursors)) =
                    chunk.into_parts();
                let mut fallback = SamplingCursors::default();
                for (i, out) in table_out.iter_mut().enumerate() {
                    let (Some(o), Some(rig), Some(anims), Some(lw)) = (
                        offs.get(first + i),
                        rigs.get(i),
                        animations.get(i),
                        layer_weights.get(i),
                    ) else {
                        continue;
                    };
                    let need: usize = anims
                        .as_slice()
                        .iter()
                        .map(|a| a.clip.timelines().len())
                        .sum();
                    let start = o.spans as usize - span_base;
                    let Some(piece) = spans_piece.get_mut(start..start + need) else {
                        continue;
                    };
                    let cursor = match cursors.as_deref_mut().and_then(|c| c.get_mut(i)) {
                        Some(c) => c,
                        None => &mut fallback,
                    };
                    resolve_spans(anims.as_slice(), cursor, piece);
                    *out = Some(EntitySampling {
                        rig: &rig.0,
                        animations: anims.as_slice(),
                        layer_weights: lw.0,
                        span_offset: o.spans,
                        bone_offset: o.bones,
                    });
                }
            });

        // Phase two: every entity's bones, runs of whole entities in parallel.
        let mut job = SampleBlendJob {
            entities,
            spans: &spans.0,
            out: &mut poses.0,
            batch: self.batch,
        };
        job.validate()?;
        job.run();
        Ok(())
    }
}

/// The flat range `[start, end)` of the entities `first..first + len` in the buffer whose
/// per-entity offsets `field` selects.
fn chunk_range(
    offsets: &FrameOffsets,
    first: usize,
    len: usize,
    field: impl Fn(&EntityCounts) -> u32,
) -> (usize, usize) {
    let at = |i: usize| offsets.offsets.get(i).map_or(field(&offsets.total), &field) as usize;
    (at(first), at(first + len))
}

/// Job 5's node.
#[derive(Debug)]
pub struct UserCurvesNode;

impl Node for UserCurvesNode {
    fn name(&self) -> &str {
        "5 user curves"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<RigRef>()
            .read::<Animations>()
            .read::<LayerWeights>()
            .read::<FrameSlot>()
            .write::<CurveValues>()
            .write::<FiredEvents>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let mut q = ctx
            .query::<(
                &Animations,
                &LayerWeights,
                Option<&mut CurveValues>,
                Option<&mut FiredEvents>,
            )>()
            .map_err(node_err)?
            .with::<RigRef>()
            .with::<FrameSlot>();
        q.chunks().into_par_iter().try_for_each(|chunk| {
            let (entities, (animations, layer_weights, curves, events)) = chunk.into_parts();
            let mut job = UserCurvesJob {
                entities,
                animations,
                layer_weights,
                curves,
                events,
            };
            job.validate()?;
            job.run();
            Ok::<(), JobError>(())
        })?;
        Ok(())
    }
}

/// Job 6's node.
#[derive(Debug)]
pub struct RootMotionNode;

impl Node for RootMotionNode {
    fn name(&self) -> &str {
        "6 root motion"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<RigRef>()
            .read::<Animations>()
            .read::<LayerWeights>()
            .read::<FrameSlot>()
            .read::<FrameTime>()
            .write::<RootMotion>()
            .write::<EntityTransform>()
            .write::<LocalPoses>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let dt = ctx.resource::<FrameTime>().map_err(node_err)?.dt;
        let mut q = ctx
            .query::<(
                &RigRef,
                &Animations,
                &LayerWeights,
                &FrameSlot,
                &mut RootMotion,
                Option<&mut EntityTransform>,
            )>()
            .map_err(node_err)?;
        let chunks = q.chunks();
        let mut poses = ctx.resource_mut::<LocalPoses>().map_err(node_err)?;
        per_chunk_piece(
            chunks,
            &mut poses.0,
            bone_range,
            "root motion",
            |chunk, poses, (base, _)| {
                let (entities, (rigs, animations, layer_weights, slots, motion, transforms)) =
                    chunk.into_parts();
                let mut job = RootMotionJob {
                    entities,
                    rigs,
                    animations,
                    layer_weights,
                    slots,
                    motion,
                    transforms,
                    poses,
                    pose_base: base as u32,
                    dt,
                };
                job.validate()?;
                job.run();
                Ok(())
            },
        )
    }
}

/// A slot's bone range (`offset`, `count`).
fn bone_range(s: &FrameSlot) -> (u32, u32) {
    (s.bone_offset, s.bone_count)
}

/// A slot's palette range (`offset`, `count`).
fn palette_range(s: &FrameSlot) -> (u32, u32) {
    (s.palette_offset, s.palette_count)
}

/// The flat range covered by a chunk's slots (`start_count` gives each slot's offset and count).
fn slot_range(slots: &[FrameSlot], start_count: fn(&FrameSlot) -> (u32, u32)) -> (usize, usize) {
    let start = slots.first().map_or(0, |s| start_count(s).0 as usize);
    let end = slots.last().map_or(start, |s| {
        let (o, c) = start_count(s);
        o as usize + c as usize
    });
    (start, end.max(start))
}

/// Runs `f` in parallel for every chunk with its own piece of the flat buffer `buf`: the range
/// its entities' [`FrameSlot`]s cover (`start_count` picks bones or palette entries), given
/// as `(start, end)` too. The pattern of every node that writes per-entity ranges.
fn per_chunk_piece<'q, Q, T, F>(
    chunks: Vec<QueryChunk<'q, Q>>,
    buf: &mut [T],
    start_count: fn(&FrameSlot) -> (u32, u32),
    node: &'static str,
    f: F,
) -> Result<(), NodeError>
where
    Q: QueryParam,
    T: Send,
    F: Fn(QueryChunk<'q, Q>, &mut [T], (usize, usize)) -> Result<(), JobError> + Sync + Send,
{
    let ranges: Vec<(usize, usize)> = chunks
        .iter()
        .map(|c| slot_range(c.read_column::<FrameSlot>().unwrap_or(&[]), start_count))
        .collect();
    let pieces = split_ranges(buf, &ranges).ok_or_else(|| {
        NodeError::new(format!("{node}: frame-slot ranges do not fit the buffer"))
    })?;
    chunks
        .into_par_iter()
        .zip(pieces)
        .zip(ranges)
        .try_for_each(|((chunk, piece), range)| f(chunk, piece, range))?;
    Ok(())
}

/// Job 7's node: model matrices, then exposed bone entities.
#[derive(Debug)]
pub struct PropagateNode;

impl Node for PropagateNode {
    fn name(&self) -> &str {
        "7 propagate"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<RigRef>()
            .read::<Animations>()
            .read::<LayerWeights>()
            .read::<FrameSlot>()
            .read::<LocalPoses>()
            .read::<EntityTransform>()
            .read::<ExposedBone>()
            .write::<ModelPoses>()
            .write::<BoneWorld>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let local = ctx.resource::<LocalPoses>().map_err(node_err)?;
        let mut model = ctx.resource_mut::<ModelPoses>().map_err(node_err)?;
        resize_frame_buffer(&mut model.0, local.0.len());
        {
            let mut q = ctx
                .query::<(&RigRef, &FrameSlot)>()
                .map_err(node_err)?
                .with::<Animations>()
                .with::<LayerWeights>();
            let chunks = q.chunks();
            let local = &local.0;
            per_chunk_piece(
                chunks,
                &mut model.0,
                bone_range,
                "propagate",
                |chunk, model, (a, b)| {
                    let (entities, (rigs, slots)) = chunk.into_parts();
                    let local = local.get(a..b).unwrap_or(&[]);
                    let mut job = PropagateJob {
                        entities,
                        rigs,
                        slots,
                        local,
                        model,
                        base: a as u32,
                    };
                    job.validate()?;
                    job.run();
                    Ok(())
                },
            )?;
        }
        update_exposed_bones(ctx, &model.0)
    }
}

/// Moves every exposed bone entity to its owner's bone in world space
/// (`owner transform · model[bone]`): the end of job 7.
fn update_exposed_bones(ctx: &NodeContext<'_>, model: &[Affine3A]) -> Result<(), NodeError> {
    let slots = ctx.view::<FrameSlot>().map_err(node_err)?;
    let transforms = ctx.view::<EntityTransform>().map_err(node_err)?;
    let mut q = ctx
        .query::<(&ExposedBone, &mut BoneWorld)>()
        .map_err(node_err)?;
    q.chunks().into_par_iter().try_for_each(|chunk| {
        let (entities, (bones, worlds)) = chunk.into_parts();
        for ((e, b), w) in entities.iter().zip(bones).zip(worlds) {
            let slot = slots.get(b.owner).map_err(|_| JobError::BoneOutOfRange {
                job: "propagate (exposed bones)",
                entity: Some(*e),
                bone: b.bone.get(),
                bone_count: 0,
            })?;
            if b.bone.get() >= slot.bone_count as usize {
                return Err(JobError::BoneOutOfRange {
                    job: "propagate (exposed bones)",
                    entity: Some(*e),
                    bone: b.bone.get(),
                    bone_count: slot.bone_count as usize,
                });
            }
            let m = model
                .get(slot.bone_offset as usize + b.bone.get())
                .copied()
                .ok_or(JobError::LengthMismatch {
                    job: "propagate (exposed bones)",
                    buffer: "model poses (fused pipelines need keep_model_poses)",
                    expected: slot.bone_offset as usize + b.bone.get() + 1,
                    actual: model.len(),
                })?;
            let owner = transforms
                .get(b.owner)
                .map_or(Affine3A::IDENTITY, |t| t.0.to_affine());
            w.0 = owner * m;
        }
        Ok::<(), JobError>(())
    })?;
    Ok(())
}

/// Job 7's exposed-bone step as its own node, after the fused chain.
#[derive(Debug)]
pub struct ExposedBonesNode;

impl Node for ExposedBonesNode {
    fn name(&self) -> &str {
        "7 exposed bones"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<FrameSlot>()
            .read::<ModelPoses>()
            .read::<EntityTransform>()
            .read::<ExposedBone>()
            .write::<BoneWorld>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let model = ctx.resource::<ModelPoses>().map_err(node_err)?;
        update_exposed_bones(ctx, &model.0)
    }
}

/// Job 8's node: builds the tables of (rig, mesh) pairs it has not seen.
#[derive(Debug)]
pub struct RemapCacheNode;

impl Node for RemapCacheNode {
    fn name(&self) -> &str {
        "8 remap cache"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<RigRef>()
            .read::<SkinRef>()
            .write::<RemapCache>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let mut cache = ctx.resource_mut::<RemapCache>().map_err(node_err)?;
        let mut q = ctx.query::<(&RigRef, &SkinRef)>().map_err(node_err)?;
        let mut pairs = Vec::new();
        let mut last: Option<(*const crate::asset::Rig, *const crate::asset::SkinnedMesh)> = None;
        for chunk in q.chunks() {
            let (_, (rigs, skins)) = chunk.into_parts();
            for (r, s) in rigs.iter().zip(skins) {
                let key = (
                    std::sync::Arc::as_ptr(&r.0),
                    std::sync::Arc::as_ptr(&s.mesh),
                );
                if last == Some(key) {
                    continue;
                }
                last = Some(key);
                if !cache.contains(&r.0, &s.mesh) {
                    pairs.push((&*r.0, &*s.mesh));
                }
            }
        }
        let mut job = RemapCacheJob {
            pairs: &pairs,
            cache: &mut cache,
        };
        job.validate()?;
        job.run();
        Ok(())
    }
}

/// Job 9's node: writes into the caller's palette slice when one is lent
/// (`Store::with_scoped_slice::<PaletteEntry, _>`), else into [`PaletteBuffer`].
#[derive(Debug)]
pub struct SkinningNode;

impl Node for SkinningNode {
    fn name(&self) -> &str {
        "9 skinning"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<RigRef>()
            .read::<SkinRef>()
            .read::<Animations>()
            .read::<LayerWeights>()
            .read::<FrameSlot>()
            .read::<ModelPoses>()
            .read::<RemapCache>()
            .read::<FrameOffsets>()
            .write::<ScopedSlice<PaletteEntry>>()
            .write::<PaletteBuffer>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let model = ctx.resource::<ModelPoses>().map_err(node_err)?;
        let remap = ctx.resource::<RemapCache>().map_err(node_err)?;
        let total = ctx
            .resource::<FrameOffsets>()
            .map_err(node_err)?
            .total
            .palette as usize;
        let mut scoped = ctx.scoped_slice_mut::<PaletteEntry>().ok();
        let mut buffer = ctx.resource_mut::<PaletteBuffer>().map_err(node_err)?;
        let palette = palette_target(scoped.as_deref_mut(), &mut buffer, total)?;
        let mut q = ctx
            .query::<(&RigRef, &SkinRef, &FrameSlot)>()
            .map_err(node_err)?
            .with::<Animations>()
            .with::<LayerWeights>();
        let chunks = q.chunks();
        let (model, remap) = (&model.0, &*remap);
        per_chunk_piece(
            chunks,
            palette,
            palette_range,
            "skinning",
            |chunk, palette, (base, _)| {
                let (entities, (rigs, skins, slots)) = chunk.into_parts();
                let mut job = SkinningJob {
                    entities,
                    rigs,
                    skins,
                    slots,
                    model,
                    remap,
                    palette,
                    palette_base: base as u32,
                };
                job.validate()?;
                job.run();
                Ok(())
            },
        )
    }
}

/// Where this frame's palettes go: the caller's lent slice (at least `total` entries), else
/// the [`PaletteBuffer`] resource resized to `total`.
fn palette_target<'b>(
    scoped: Option<&'b mut [PaletteEntry]>,
    buffer: &'b mut PaletteBuffer,
    total: usize,
) -> Result<&'b mut [PaletteEntry], NodeError> {
    match scoped {
        Some(s) if s.len() < total => Err(NodeError::from_error(JobError::LengthMismatch {
            job: "skinning",
            buffer: "palette slice",
            expected: total,
            actual: s.len(),
        })),
        Some(s) => Ok(s),
        None => {
            resize_frame_buffer(&mut buffer.0, total);
            Ok(&mut buffer.0)
        }
    }
}

/// Jobs 4, 6, 7 and 9 fused ([`PoseChain::Fused`]): per chunk, runs of whole entities in
/// parallel through [`PoseChainJob`].
#[derive(Debug)]
pub struct PoseChainNode {
    batch: usize,
    keep_model_poses: bool,
}

impl Node for PoseChainNode {
    fn name(&self) -> &str {
        "4·6·7·9 pose chain"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<RigRef>()
            .read::<SkinRef>()
            .read::<Animations>()
            .read::<LayerWeights>()
            .read::<FrameSlot>()
            .read::<FrameOffsets>()
            .read::<FrameTime>()
            .read::<RemapCache>()
            .write::<SamplingCursors>()
            .write::<RootMotion>()
            .write::<EntityTransform>()
            .write::<ModelPoses>()
            .write::<LocalPoses>()
            .write::<FrameSpans>()
            .write::<ScopedSlice<PaletteEntry>>()
            .write::<PaletteBuffer>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        // Local poses and spans live in the workers' scratch: nothing stale stays readable.
        ctx.resource_mut::<LocalPoses>()
            .map_err(node_err)?
            .0
            .clear();
        ctx.resource_mut::<FrameSpans>()
            .map_err(node_err)?
            .0
            .clear();
        let dt = ctx.resource::<FrameTime>().map_err(node_err)?.dt;
        let remap = ctx.resource::<RemapCache>().map_err(node_err)?;
        let totals = ctx.resource::<FrameOffsets>().map_err(node_err)?.total;
        let mut model = ctx.resource_mut::<ModelPoses>().map_err(node_err)?;
        let mut scoped = ctx.scoped_slice_mut::<PaletteEntry>().ok();
        let mut buffer = ctx.resource_mut::<PaletteBuffer>().map_err(node_err)?;
        let palette = palette_target(scoped.as_deref_mut(), &mut buffer, totals.palette as usize)?;
        let mut q = ctx
            .query::<(
                &RigRef,
                &Animations,
                &LayerWeights,
                &FrameSlot,
                Option<&mut SamplingCursors>,
                Option<&SkinRef>,
                Option<&mut RootMotion>,
                Option<&mut EntityTransform>,
            )>()
            .map_err(node_err)?;
        let chunks = q.chunks();
        let bone_ranges: Vec<(usize, usize)> = chunks
            .iter()
            .map(|c| slot_range(c.read_column::<FrameSlot>().unwrap_or(&[]), bone_range))
            .collect();
        let model_pieces: Vec<Option<&mut [Affine3A]>> = if self.keep_model_poses {
            resize_frame_buffer(&mut model.0, totals.bones as usize);
            split_ranges(&mut model.0, &bone_ranges)
                .ok_or_else(|| NodeError::new("pose chain: bone ranges do not fit model poses"))?
                .into_iter()
                .map(Some)
                .collect()
        } else {
            model.0.clear();
            chunks.iter().map(|_| None).collect()
        };
        let palette_ranges: Vec<(usize, usize)> = chunks
            .iter()
            .map(|c| slot_range(c.read_column::<FrameSlot>().unwrap_or(&[]), palette_range))
            .collect();
        let palette_pieces = split_ranges(palette, &palette_ranges)
            .ok_or_else(|| NodeError::new("pose chain: palette ranges do not fit the palette"))?;
        let (remap, batch) = (&*remap, self.batch);
        chunks
            .into_par_iter()
            .zip(model_pieces)
            .zip(palette_pieces)
            .zip(bone_ranges)
            .zip(palette_ranges)
            .try_for_each(|((((chunk, model), palette), bones), pal)| {
                let (entities, parts) = chunk.into_parts();
                let (rigs, animations, layer_weights, slots, cursors, skins, motion, transforms) =
                    parts;
                let job = PoseChainJob {
                    entities,
                    rigs,
                    animations,
                    layer_weights,
                    slots,
                    cursors,
                    skins,
                    motion,
                    transforms,
                    remap,
                    model,
                    model_base: bones.0 as u32,
                    palette,
                    palette_base: pal.0 as u32,
                    dt,
                };
                job.validate()?;
                job.run_parallel(batch);
                Ok::<(), JobError>(())
            })?;
        Ok(())
    }
}

impl From<JobError> for NodeError {
    fn from(e: JobError) -> Self {
        NodeError::from_error(e)
    }
}
