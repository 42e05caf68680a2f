//! [`Animator`]: the pipeline's graph with the calls an engine makes each frame.

use crate::component::{Animations, FrameSlot, RigRef, SkinRef};
use crate::frame::{
    BoneTable, FrameOffsets, LocalPoses, ModelPoses, PaletteBuffer, PaletteDestination,
    PaletteEntry, PaletteOffsets,
};
use crate::pipeline::{
    BoneTableRead, ClockCheckedBindings, FrameTime, PipelineConfig, PipelineNodes, PoseChain,
    insert_resources, register_layout, register_with_stages,
};
use crate::pose_stage::PoseStages;
use sinew_runtime::graph::{FrameError, Graph, GraphBuildError, GraphBuilder, NodeTiming};
use sinew_runtime::store::{Entity, Store};

/// The nine-job graph, built once, run every frame.
///
/// ```
/// use sinew_jobs::animator::Animator;
/// use sinew_runtime::store::{Entity, Store};
///
/// let mut store = Store::new();
/// let mut animator = Animator::new(&mut store)?;
/// animator.run_frame(&mut store, 1.0 / 60.0)?; // an empty crowd is fine
/// assert!(animator.palettes(&store).is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Animator {
    graph: Graph,
    /// Jobs 1 to 3 alone, for [`Animator::layout`].
    layout: Graph,
    nodes: PipelineNodes,
    /// Whether the clock node's binding checks still hold when job 1 runs, so that job 1
    /// skips them ([`clock_checks_cover_job1`]).
    clock_checks_bindings: bool,
    /// Whether a node other than job 3 reads the bone table (job 3 fills it only then).
    bone_table_read: bool,
}

impl Animator {
    /// The default pipeline (with the clock node).
    ///
    /// # Errors
    /// [`GraphBuildError`] (not expected for the library's own nodes).
    pub fn new(store: &mut Store) -> Result<Self, GraphBuildError> {
        Self::with(store, PipelineConfig::default(), |_, _| {})
    }

    /// The pipeline with a configuration, plus whatever `extend` adds to the builder (user
    /// nodes and their edges, using the pipeline's node ids).
    ///
    /// A node that edits poses (writes [`LocalPoses`] or [`ModelPoses`]) needs
    /// [`PoseChain::Staged`], where those buffers exist
    /// between jobs, and an edge to [`PipelineNodes::skinning`] so that its edits reach this
    /// frame's palettes. A node that writes [`Animations`] or
    /// [`LayerWeights`](crate::component::LayerWeights) (a clock of its own, say) needs an edge
    /// to [`PipelineNodes::controller`], which rewrites them for controller-driven entities
    /// before job 1. Per-entity edits (IK) are better installed as pose stages
    /// ([`Animator::with_stages`]), which run inside the fused chain.
    ///
    /// # Errors
    /// [`GraphBuildError`] when the user's additions make a cycle or an unordered write
    /// conflict, and [`GraphBuildError::Misplaced`], saying what to do instead, for a node
    /// that edits poses after the palettes are written or in the fused pipeline, or one
    /// ordered between two of the fused jobs 4, 6, 7 and 9.
    pub fn with(
        store: &mut Store,
        config: PipelineConfig,
        extend: impl FnOnce(&mut GraphBuilder, &PipelineNodes),
    ) -> Result<Self, GraphBuildError> {
        Self::with_stages(store, config, &PoseStages::new(), extend)
    }

    /// [`Animator::with`], plus per-entity `stages` (IK, constraints, foot placement: see
    /// [`crate::ik`]) between job 7 and job 9, in both pipeline modes; the fast path for
    /// editing poses. Each stage runs on the entities that have its input component, and the
    /// graph orders it against the nodes that write that component.
    ///
    /// # Errors
    /// As [`Animator::with`].
    pub fn with_stages(
        store: &mut Store,
        config: PipelineConfig,
        stages: &PoseStages,
        extend: impl FnOnce(&mut GraphBuilder, &PipelineNodes),
    ) -> Result<Self, GraphBuildError> {
        insert_resources(store);
        let mut builder = GraphBuilder::new();
        let nodes = register_with_stages(&mut builder, config, stages)?;
        let pipeline_nodes = builder.len();
        extend(&mut builder, &nodes);
        let graph = builder
            .build()
            .map_err(|e| explain_build_error(e, config.pose_chain, &nodes))?;
        check_pose_editors(&graph, pipeline_nodes, config.pose_chain, &nodes)?;
        let mut layout = GraphBuilder::new();
        register_layout(&mut layout);
        Ok(Self {
            clock_checks_bindings: clock_checks_cover_job1(&graph, &nodes),
            bone_table_read: bone_table_read(&graph, &nodes),
            graph,
            layout: layout.build()?,
            nodes,
        })
    }

    /// Runs one frame (`dt` seconds after the previous one); palettes go to the store's
    /// [`PaletteBuffer`]. Advances the store's frame counter afterwards.
    ///
    /// A frame with a bad binding fails as a whole and changes no state: every entity's
    /// bindings (clips and masks baked for its rig, finite times, speeds and weights, layers)
    /// are checked before the clock node moves any clock, and the pose chain checks every
    /// entity before it moves any of them, so clocks, [`FiredEvents`](crate::component::FiredEvents),
    /// [`RootMotion`](crate::component::RootMotion), sampling cursors, entity transforms and
    /// the palettes stay as the last good frame left them. The error names the entity and
    /// what is wrong (for a clip, the clip, its rig and the entity's rig); fix or despawn the
    /// entity and run the frame again. Clips assigned through
    /// [`Animations::for_rig`](crate::component::Animations::for_rig),
    /// [`try_animated`](crate::component::try_animated) or
    /// [`try_skinned`](crate::component::try_skinned) cannot reach a frame for another rig.
    ///
    /// # Errors
    /// [`FrameError`] naming the node that failed.
    pub fn run_frame(&mut self, store: &mut Store, dt: f32) -> Result<(), FrameError> {
        set_dt(store, dt);
        set_destination(store, PaletteDestination::Buffer);
        set_resource(store, ClockCheckedBindings(self.clock_checks_bindings));
        set_resource(store, BoneTableRead(self.bone_table_read));
        let r = self.graph.run(store);
        store.advance_frame();
        r
    }

    /// Runs one frame writing palettes straight into `palette` (mapped GPU memory, say); it
    /// must hold at least the frame's palette length ([`Animator::layout`] tells it before the
    /// frame). The slice reaches the palette-writing node explicitly: if that node cannot
    /// borrow it, or it is too short, the frame fails and says so; palettes never go elsewhere.
    /// Entity `e`'s palette starts at [`PaletteOffsets::get`]`(e)` in it. A bad binding fails
    /// the frame with no state changed, as in [`Animator::run_frame`]; a slice that is too
    /// short is found by the pose chain, after the clocks moved (size it with
    /// [`Animator::layout`]).
    ///
    /// # Errors
    /// [`FrameError`] naming the node that failed (the palette-writing node when the slice is
    /// short or cannot be borrowed).
    pub fn run_frame_into(
        &mut self,
        store: &mut Store,
        dt: f32,
        palette: &mut [PaletteEntry],
    ) -> Result<(), FrameError> {
        self.run_frame_lent(store, dt, palette, false)
    }

    /// [`Animator::run_frame_into`] for a slice of write-combined memory (a mapped GPU
    /// buffer, which the CPU writes through combining buffers rather than its caches): each
    /// entity's palette is written in one ascending run, never as partial cache lines out of
    /// order, which such memory flushes piecemeal. Costs a copy through the workers' caches
    /// that cached memory does not need.
    ///
    /// # Errors
    /// As [`Animator::run_frame_into`].
    pub fn run_frame_into_mapped(
        &mut self,
        store: &mut Store,
        dt: f32,
        palette: &mut [PaletteEntry],
    ) -> Result<(), FrameError> {
        self.run_frame_lent(store, dt, palette, true)
    }

    fn run_frame_lent(
        &mut self,
        store: &mut Store,
        dt: f32,
        palette: &mut [PaletteEntry],
        write_combined: bool,
    ) -> Result<(), FrameError> {
        set_dt(store, dt);
        set_destination(store, PaletteDestination::Lent { write_combined });
        set_resource(store, ClockCheckedBindings(self.clock_checks_bindings));
        set_resource(store, BoneTableRead(self.bone_table_read));
        let graph = &mut self.graph;
        let r = store.with_scoped_slice(palette, |store| graph.run(store));
        store.advance_frame();
        r
    }

    /// Lays out the next frame's buffers without animating: runs jobs 1 to 3, so that the
    /// palette length, each entity's [`FrameSlot`] and the [`PaletteOffsets`] instance table
    /// are known before the frame (to size a mapped GPU buffer, say). The next frame lays out
    /// the same way unless entities, animations, rigs or meshes change in between.
    ///
    /// ```
    /// use sinew_jobs::animator::Animator;
    /// use sinew_runtime::store::Store;
    ///
    /// let mut store = Store::new();
    /// let mut animator = Animator::new(&mut store)?;
    /// let layout = animator.layout(&mut store)?;
    /// assert_eq!(layout.palette_len(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`FrameError`] naming the job that rejected its inputs (a clip for another rig, say).
    pub fn layout<'s>(&mut self, store: &'s mut Store) -> Result<FrameLayout<'s>, FrameError> {
        // No clock runs here: job 1 checks the bindings itself.
        set_resource(store, ClockCheckedBindings(false));
        self.layout.run(store)?;
        Ok(FrameLayout { store })
    }

    /// Palette entries of the last frame or [`Animator::layout`] (the total over the crowd).
    pub fn palette_len(&self, store: &Store) -> usize {
        palette_len(store)
    }

    /// The instance table of the last frame or [`Animator::layout`]: each entity's first
    /// palette entry, by entity index.
    pub fn palette_offsets<'s>(&self, store: &'s Store) -> &'s PaletteOffsets {
        palette_offsets(store)
    }

    /// The palettes of the last [`Animator::run_frame`].
    pub fn palettes<'s>(&self, store: &'s Store) -> &'s [PaletteEntry] {
        store
            .resource::<PaletteBuffer>()
            .map_or(&[], |p| p.0.as_slice())
    }

    /// Per-node timings of the last frame, in the order the nodes started.
    pub fn timings(&self) -> &[NodeTiming] {
        self.graph.last_timings()
    }

    /// The graph.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The pipeline's node ids.
    pub fn nodes(&self) -> &PipelineNodes {
        &self.nodes
    }
}

/// Sets resource `R` in place, inserting it the first time (it is set every frame: no
/// allocation once it is there).
fn set_resource<R: sinew_runtime::store::Component>(store: &mut Store, value: R) {
    match store.resource_mut::<R>() {
        Ok(r) => *r = value,
        Err(_) => {
            store.insert_resource(value);
        }
    }
}

/// Whether a node other than job 3 declares a read of the [`BoneTable`].
fn bone_table_read(graph: &Graph, nodes: &PipelineNodes) -> bool {
    graph.node_ids().any(|id| {
        id != nodes.per_bone_info && graph.access(id).is_some_and(|a| a.reads::<BoneTable>())
    })
}

/// Whether the clock node's binding checks (clip, mask and skin rigs, finite values, layers)
/// still hold when job 1 runs: every other node that writes what they read ([`RigRef`],
/// [`SkinRef`], [`Animations`]) runs before the clock or after job 1. The graph orders each
/// such writer against both (they read those types), so one that runs before job 1 but not
/// before the clock sits between them, and job 1 must check again.
fn clock_checks_cover_job1(graph: &Graph, nodes: &PipelineNodes) -> bool {
    let Some(clock) = nodes.advance_clocks else {
        return false;
    };
    let job1 = nodes.bone_offsets;
    let controller = Some(nodes.controller);
    graph.node_ids().all(|id| {
        let writes_bindings = graph.access(id).is_some_and(|a| {
            a.writes::<RigRef>() || a.writes::<SkinRef>() || a.writes::<Animations>()
        });
        // The controller rewrites the lists of the entities it drives from clips and masks
        // baked for its rig, after checking that rig against the entity's: what the clock
        // checked still holds.
        id == clock
            || Some(id) == controller
            || !writes_bindings
            || graph.runs_before(id, clock)
            || graph.runs_before(job1, id)
    })
}

fn set_dt(store: &mut Store, dt: f32) {
    match store.resource_mut::<FrameTime>() {
        Ok(t) => t.dt = dt,
        Err(_) => {
            store.insert_resource(FrameTime { dt });
        }
    }
}

/// The buffers' layout from [`Animator::layout`], valid until the store changes.
#[derive(Debug)]
pub struct FrameLayout<'s> {
    store: &'s Store,
}

impl FrameLayout<'_> {
    /// Palette entries over the crowd: the length of the slice for
    /// [`Animator::run_frame_into`].
    pub fn palette_len(&self) -> usize {
        palette_len(self.store)
    }

    /// The entity's range in the palette (`offset..offset + count`), if it is animated and
    /// skinned.
    pub fn palette_range(&self, entity: Entity) -> Option<std::ops::Range<usize>> {
        let slot = self.store.get::<FrameSlot>(entity).ok()?;
        (slot.palette_count > 0).then(|| {
            let start = slot.palette_offset as usize;
            start..start + slot.palette_count as usize
        })
    }

    /// The instance table: each entity's first palette entry, by entity index.
    pub fn palette_offsets(&self) -> &PaletteOffsets {
        palette_offsets(self.store)
    }
}

/// Build errors a user node causes by where it asks to run, said as what they are, with the
/// fix: a cycle through the fused chain node (the node asked to run between two of its jobs),
/// and an unordered write of a pose buffer (a pose-editing node without edges).
fn explain_build_error(
    e: GraphBuildError,
    chain: PoseChain,
    nodes: &PipelineNodes,
) -> GraphBuildError {
    if let GraphBuildError::UnorderedWriteConflict { a, b, type_name } = &e {
        let pose = ["::ModelPoses", "::LocalPoses"]
            .iter()
            .find(|t| type_name.ends_with(*t));
        if let Some(pose) = pose {
            return pose_editor_error(b.clone(), &pose[2..], chain, None);
        }
        let list = ["::Animations", "::LayerWeights"]
            .iter()
            .find(|t| type_name.ends_with(*t));
        if let (Some(list), true) = (list, a == "controller") {
            return GraphBuildError::Misplaced {
                node: b.clone(),
                problem: format!(
                    "it writes `{}`, which the `controller` node rewrites each frame for the \
                     entities that have a `ControllerState`",
                    &list[2..]
                ),
                fix: "order it before the controller: add an edge from it to \
                      `PipelineNodes::controller` (which runs before job 1)"
                    .into(),
            };
        }
        return e;
    }
    let GraphBuildError::Cycle { nodes: cycle } = &e else {
        return e;
    };
    if chain == PoseChain::Staged || cycle.len() < 2 {
        return e;
    }
    let chain_name = PipelineNodes::FUSED_CHAIN_NAME;
    match (
        cycle.iter().any(|n| n == chain_name),
        cycle.iter().find(|n| *n != chain_name),
    ) {
        (true, Some(node)) if nodes.sample_blend == nodes.skinning => GraphBuildError::Misplaced {
            node: node.clone(),
            problem: format!(
                "it is ordered both after and before `{chain_name}`, the one node that runs jobs \
                 4, 6, 7 and 9 entity by entity in the fused pipeline"
            ),
            fix: "for a per-entity edit between 7 and 9 (IK, a constraint), install it as a \
                  `PoseStage` with `Animator::with_stages`, which runs inside the chain; to run \
                  a node between two of those jobs, build the pipeline with `PoseChain::Staged`"
                .into(),
        },
        _ => e,
    }
}

/// User nodes (insertion index `first_user` on) that write pose buffers must run before the
/// palettes are written, and only where those buffers exist between jobs (staged).
fn check_pose_editors(
    graph: &Graph,
    first_user: usize,
    chain: PoseChain,
    nodes: &PipelineNodes,
) -> Result<(), GraphBuildError> {
    let skinning = graph.node_name(nodes.skinning).unwrap_or("9 skinning");
    for id in graph.node_ids().skip(first_user) {
        let Some(access) = graph.access(id) else {
            continue;
        };
        let edits = if access.writes::<ModelPoses>() {
            "ModelPoses"
        } else if access.writes::<LocalPoses>() {
            "LocalPoses"
        } else {
            continue;
        };
        let node = graph.node_name(id).unwrap_or_default().to_string();
        if matches!(chain, PoseChain::Fused { .. }) || !graph.runs_before(id, nodes.skinning) {
            return Err(pose_editor_error(node, edits, chain, Some(skinning)));
        }
    }
    Ok(())
}

/// The error for a node that writes the pose buffer `edits` where no palette sees it.
fn pose_editor_error(
    node: String,
    edits: &str,
    chain: PoseChain,
    skinning: Option<&str>,
) -> GraphBuildError {
    let skinning = skinning.unwrap_or("9 skinning");
    match chain {
        PoseChain::Fused { .. } => GraphBuildError::Misplaced {
            node,
            problem: format!(
                "it writes `{edits}`, but the fused pipeline keeps each entity's poses in \
                 per-worker scratch while `{}` writes its palette, so the edit would reach no \
                 palette",
                PipelineNodes::FUSED_CHAIN_NAME
            ),
            fix: "install a per-entity edit as a `PoseStage` with `Animator::with_stages` \
                  (it runs inside the chain), or build the pipeline with `PoseChain::Staged` \
                  and order the node after `PipelineNodes::propagate` and before \
                  `PipelineNodes::skinning`"
                .into(),
        },
        PoseChain::Staged => GraphBuildError::Misplaced {
            node,
            problem: format!(
                "it writes `{edits}`, which `{skinning}` reads, but nothing orders it before \
                 `{skinning}`, so its edits would miss this frame's palettes"
            ),
            fix: "add an edge from it to `PipelineNodes::skinning` (and from \
                  `PipelineNodes::propagate` to it, to edit this frame's model poses)"
                .into(),
        },
    }
}

fn set_destination(store: &mut Store, destination: PaletteDestination) {
    match store.resource_mut::<PaletteDestination>() {
        Ok(d) => *d = destination,
        Err(_) => {
            store.insert_resource(destination);
        }
    }
}

fn palette_len(store: &Store) -> usize {
    store
        .resource::<FrameOffsets>()
        .map_or(0, |o| o.total.palette as usize)
}

fn palette_offsets(store: &Store) -> &PaletteOffsets {
    static EMPTY: PaletteOffsets = PaletteOffsets::EMPTY;
    store.resource::<PaletteOffsets>().unwrap_or(&EMPTY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asset::{RawBone, RawRig, RawSkinnedMesh, RawVertexInfluences, Transform};
    use crate::component::skinned;
    use glam::{Mat4, Vec3};
    use std::sync::Arc;

    fn one_bone_character(store: &mut Store) {
        let rig = RawRig {
            name: "stick".into(),
            bones: vec![RawBone {
                name: "root".into(),
                parent: None,
                rest: Transform::from_translation(Vec3::X),
            }],
        }
        .bake()
        .unwrap();
        let mesh = RawSkinnedMesh {
            name: "stick mesh".into(),
            bones: vec![("root".into(), Mat4::IDENTITY)],
            positions: vec![Vec3::ZERO],
            normals: vec![],
            influences: vec![RawVertexInfluences(vec![(0, 1.0)])],
            indices: vec![],
            ..Default::default()
        }
        .bake()
        .unwrap();
        store
            .spawn(skinned(Arc::new(rig), Arc::new(mesh), vec![]))
            .unwrap();
    }

    /// Job 1 leaves the binding checks to the clock node exactly when no other node writes
    /// the bindings between the two.
    #[test]
    fn job_1_skips_the_clock_nodes_checks_only_when_they_still_hold() {
        use sinew_runtime::graph::{Access, FnNode, GraphBuilder, NodeId};
        let build = |config: PipelineConfig, place: fn(&mut GraphBuilder, &PipelineNodes)| {
            let mut store = Store::new();
            Animator::with(&mut store, config, place)
                .unwrap()
                .clock_checks_bindings
        };
        fn writer(b: &mut GraphBuilder) -> NodeId {
            b.add_node(FnNode::new(
                "relist",
                Access::new().write::<Animations>(),
                |_| Ok(()),
            ))
        }
        let default = PipelineConfig::default();
        let staged = PipelineConfig {
            pose_chain: PoseChain::Staged,
            ..default
        };
        assert!(build(default, |_, _| {}));
        assert!(build(staged, |_, _| {}));
        // No clock: job 1 checks.
        let manual = PipelineConfig {
            advance_clocks: false,
            ..default
        };
        assert!(!build(manual, |_, _| {}));
        // A writer before the clock changes nothing job 1 reads after the clock checked it;
        // one between them does (ordered before the controller, as the controller asks of
        // list writers). The controller itself, between them in every pipeline, does not
        // count: it checks what it writes.
        assert!(build(default, |b, n| {
            let w = writer(b);
            b.add_edge(w, n.advance_clocks.unwrap());
        }));
        assert!(!build(default, |b, n| {
            let w = writer(b);
            b.add_edge(n.advance_clocks.unwrap(), w)
                .add_edge(w, n.controller);
        }));
        // Writing the rig or skin counts too.
        assert!(!build(default, |b, n| {
            let w = b.add_node(FnNode::new(
                "reskin",
                Access::new().write::<SkinRef>(),
                |_| Ok(()),
            ));
            b.add_edge(n.advance_clocks.unwrap(), w)
                .add_edge(w, n.bone_offsets);
        }));
        // After job 1, a rig writer changes nothing job 1 read.
        assert!(build(default, |b, n| {
            let w = b.add_node(FnNode::new(
                "rerig",
                Access::new().write::<RigRef>(),
                |_| Ok(()),
            ));
            b.add_edge(n.skinning, w);
        }));
    }

    /// A frame that lends a palette slice which the palette-writing node cannot borrow fails
    /// and writes nowhere; the store's buffer is not a silent fallback.
    #[test]
    fn a_lent_palette_that_cannot_be_borrowed_is_an_error() {
        let mut store = Store::new();
        one_bone_character(&mut store);
        let mut animator = Animator::new(&mut store).unwrap();
        animator.run_frame(&mut store, 0.0).unwrap();
        assert_eq!(animator.palettes(&store).len(), 1);
        store.resource_mut::<PaletteBuffer>().unwrap().0.clear();
        // The destination says "lent", but no slice is lent for this run.
        set_destination(
            &mut store,
            PaletteDestination::Lent {
                write_combined: false,
            },
        );
        let err = animator.graph.run(&mut store).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("palette slice cannot be borrowed")
                && text.contains("no palette was written"),
            "{text}"
        );
        assert_eq!(err.node(), Some("4·6·7·9 pose chain"));
        assert!(animator.palettes(&store).is_empty());
    }
}
