//! [`Animator`]: the pipeline's graph with the calls an engine makes each frame.

use crate::frame::{PaletteBuffer, PaletteEntry};
use crate::pipeline::{FrameTime, PipelineConfig, PipelineNodes, insert_resources, register};
use sinew_runtime::graph::{FrameError, Graph, GraphBuildError, GraphBuilder, NodeTiming};
use sinew_runtime::store::Store;

/// The nine-job graph, built once, run every frame.
///
/// ```
/// use sinew_jobs::animator::Animator;
/// use sinew_runtime::store::Store;
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
    nodes: PipelineNodes,
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
    /// # Errors
    /// [`GraphBuildError`] when the user's additions make a cycle or an unordered write
    /// conflict.
    pub fn with(
        store: &mut Store,
        config: PipelineConfig,
        extend: impl FnOnce(&mut GraphBuilder, &PipelineNodes),
    ) -> Result<Self, GraphBuildError> {
        insert_resources(store);
        let mut builder = GraphBuilder::new();
        let nodes = register(&mut builder, config)?;
        extend(&mut builder, &nodes);
        Ok(Self {
            graph: builder.build()?,
            nodes,
        })
    }

    /// Runs one frame (`dt` seconds after the previous one); palettes go to the store's
    /// [`PaletteBuffer`]. Advances the store's frame counter afterwards.
    ///
    /// # Errors
    /// [`FrameError`] naming the node that failed.
    pub fn run_frame(&mut self, store: &mut Store, dt: f32) -> Result<(), FrameError> {
        set_dt(store, dt);
        let r = self.graph.run(store);
        store.advance_frame();
        r
    }

    /// Runs one frame writing palettes straight into `palette` (mapped GPU memory, say); it
    /// must hold at least [`Animator::palette_len`] entries.
    ///
    /// # Errors
    /// [`FrameError`] naming the node that failed (the skinning node when the slice is short).
    pub fn run_frame_into(
        &mut self,
        store: &mut Store,
        dt: f32,
        palette: &mut [PaletteEntry],
    ) -> Result<(), FrameError> {
        set_dt(store, dt);
        let graph = &mut self.graph;
        let r = store.with_scoped_slice(palette, |store| graph.run(store));
        store.advance_frame();
        r
    }

    /// Palette entries the last frame produced (the total over the crowd).
    pub fn palette_len(&self, store: &Store) -> usize {
        store
            .resource::<crate::frame::FrameOffsets>()
            .map_or(0, |o| o.total.palette as usize)
    }

    /// The palettes of the last [`Animator::run_frame`].
    pub fn palettes<'s>(&self, store: &'s Store) -> &'s [PaletteEntry] {
        store
            .resource::<PaletteBuffer>()
            .map_or(&[], |p| p.0.as_slice())
    }

    /// Per-node timings of the last frame.
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

fn set_dt(store: &mut Store, dt: f32) {
    match store.resource_mut::<FrameTime>() {
        Ok(t) => t.dt = dt,
        Err(_) => {
            store.insert_resource(FrameTime { dt });
        }
    }
}
