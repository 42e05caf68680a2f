//! [`CrowdFrames`]: a crowd animated, written into the palette ring and drawn, every frame.
//!
//! Each frame: [`PaletteRing::write`] hands this frame's mapped buffer to the caller's closure
//! (the pipeline's `Animator::run_frame_into_mapped`), the instance table is gathered from the store
//! (palette base and world transform per skinned entity), one renderer records the draw, and
//! the caller submits (after adding its own passes, e.g. a window's composite) and reports the
//! submission. The GPU draws frame N while the CPU runs frame N + 1; the CPU waits only when
//! the ring's next buffer is still in use ([`FrameSplit::ring_wait`]).
//!
//! The renderer is the graphics pipeline's instanced draw ([`CrowdRenderer`]) or the compute
//! rasteriser ([`ComputeCrowdRenderer`]), chosen by [`Rasteriser`]. GPU time comes from
//! timestamp queries around the draw's passes, read back a few frames later without
//! blocking, where the device has `TIMESTAMP_QUERY`; [`CrowdFrames::has_gpu_timer`] says
//! whether it does.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use glam::Vec3;
use sinew_jobs::asset::ActiveMorph;
use sinew_jobs::asset::{Rig, SkinnedMesh};
use sinew_jobs::component::{
    Animations, EntityTransform, FrameSlot, LayerWeights, MorphWeights, RigRef, SkinRef,
};
use sinew_jobs::frame::PaletteEntry;
use sinew_runtime::store::Store;

use crate::context::{GpuContext, GpuError};
use crate::palette_ring::{PaletteRing, PaletteUpload, crowd_palette_len};
use crate::raster::{
    ComputeCrowdRenderer, RASTER_MAX_BONES, RasterTimestamps, TIMESTAMPS_PER_FRAME,
    rest_pose_bounding_sphere,
};
use crate::render::{Camera, CrowdRenderer, Instance, RgbaImage, Shading};

/// Which renderer draws the crowd.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rasteriser {
    /// The graphics pipeline: one instanced, indexed draw ([`CrowdRenderer`]).
    Graphics,
    /// The compute rasteriser ([`ComputeCrowdRenderer`], meshes of at most
    /// [`RASTER_MAX_BONES`] bones).
    Compute,
}

impl Rasteriser {
    /// The default for an adapter: the compute rasteriser on a discrete GPU (a crowd is
    /// mostly triangles of a pixel or less; on the H200 the compute rasteriser draws 100 000
    /// Fox characters many times faster than its raster hardware, see BENCHMARKS.md), the
    /// graphics pipeline elsewhere (integrated GPUs, whose raster hardware is not the
    /// bottleneck measured, and CPU rasterisers such as lavapipe, whose raster path is their
    /// optimised one). A mesh over [`RASTER_MAX_BONES`] bones always takes the graphics
    /// pipeline.
    pub fn for_adapter(info: &wgpu::AdapterInfo, mesh: &SkinnedMesh) -> Self {
        match info.device_type {
            wgpu::DeviceType::DiscreteGpu if mesh.bone_count() <= RASTER_MAX_BONES as usize => {
                Self::Compute
            }
            _ => Self::Graphics,
        }
    }

    /// A short name for summaries.
    pub fn name(self) -> &'static str {
        match self {
            Self::Graphics => "graphics pipeline",
            Self::Compute => "compute rasteriser",
        }
    }
}

/// Where one frame's CPU time went.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameSplit {
    /// The caller's closure: the animation pipeline writing palettes into mapped memory.
    pub pipeline: Duration,
    /// Blocked until the ring's next buffer was free (the GPU more than the ring's depth
    /// behind), plus the unmap (or staging copy) after the pipeline.
    pub ring_wait: Duration,
    /// Gathering the instance table after the pipeline (in [`CrowdFrames::write`]); the
    /// caller adds the time [`CrowdFrames::encode`] returns and its own submission.
    pub encode: Duration,
}

/// The drawing half of a frame's result: where the image is.
#[derive(Clone, Copy, Debug)]
pub enum FrameImage<'a> {
    /// The graphics pipeline's colour target (`Rgba8UnormSrgb`, bindable as a texture).
    Texture(&'a wgpu::TextureView),
    /// The compute rasteriser's colour buffer: one `u32` per pixel, RGBA8 sRGB-encoded,
    /// rows top to bottom, `width` words a row.
    Buffer(&'a wgpu::Buffer),
}

#[derive(Debug)]
enum Renderer {
    Graphics(CrowdRenderer),
    Compute(ComputeCrowdRenderer),
}

const MAP_IDLE: u8 = 0;
const MAP_PENDING: u8 = 1;
const MAP_DONE: u8 = 2;
const MAP_FAILED: u8 = 3;

/// Timestamp queries of one frame in flight.
#[derive(Debug)]
struct TimerSlot {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    read: wgpu::Buffer,
    state: Arc<AtomicU8>,
    submission: Option<wgpu::SubmissionIndex>,
}

/// More slots than the palette ring has buffers: when a slot comes round again, the ring has
/// already waited for the frame that used it.
const TIMER_SLOTS: usize = 4;

#[derive(Debug)]
struct GpuTimer {
    slots: Vec<TimerSlot>,
    period_ns: f64,
    times: Vec<Duration>,
}

impl GpuTimer {
    fn new(ctx: &GpuContext) -> Option<Self> {
        if !ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
            return None;
        }
        let bytes = u64::from(TIMESTAMPS_PER_FRAME) * 8;
        let slots = (0..TIMER_SLOTS)
            .map(|_| TimerSlot {
                set: ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("crowd frame timestamps"),
                    ty: wgpu::QueryType::Timestamp,
                    count: TIMESTAMPS_PER_FRAME,
                }),
                resolve: ctx.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("crowd frame timestamps resolve"),
                    size: bytes,
                    usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                }),
                read: ctx.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("crowd frame timestamps read"),
                    size: bytes,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                }),
                state: Arc::new(AtomicU8::new(MAP_IDLE)),
                submission: None,
            })
            .collect();
        Some(Self {
            slots,
            period_ns: f64::from(ctx.queue.get_timestamp_period()),
            times: Vec::new(),
        })
    }

    /// Reads slot `i` if its map completed (blocking on its submission when `wait`); the GPU
    /// time is the first to the last tick the frame wrote (`last` is its index).
    fn collect(
        &mut self,
        ctx: &GpuContext,
        i: usize,
        last: u32,
        wait: bool,
    ) -> Result<(), GpuError> {
        let Some(slot) = self.slots.get_mut(i) else {
            return Ok(());
        };
        if wait && slot.state.load(Ordering::Acquire) == MAP_PENDING {
            ctx.device
                .poll(wgpu::PollType::Wait {
                    submission_index: slot.submission.take(),
                    timeout: None,
                })
                .map_err(|e| GpuError::Poll(e.to_string()))?;
        }
        match slot.state.load(Ordering::Acquire) {
            MAP_DONE => {
                let ticks: Vec<u64> = {
                    let view = slot
                        .read
                        .get_mapped_range(..)
                        .map_err(|e| GpuError::Map(format!("frame timestamps: {e}")))?;
                    view.chunks_exact(8)
                        .map(|c| {
                            let mut b = [0u8; 8];
                            b.copy_from_slice(c);
                            u64::from_le_bytes(b)
                        })
                        .collect()
                };
                slot.read.unmap();
                slot.state.store(MAP_IDLE, Ordering::Release);
                if let (Some(first), Some(end)) = (ticks.first(), ticks.get(last as usize)) {
                    let ns = end.saturating_sub(*first) as f64 * self.period_ns;
                    self.times.push(Duration::from_nanos(ns as u64));
                }
                Ok(())
            }
            MAP_FAILED => Err(GpuError::Map(
                "frame timestamps: map_async(Read) failed".into(),
            )),
            _ => Ok(()),
        }
    }
}

/// A crowd drawn every frame from the palette ring; see the [module documentation](self).
#[derive(Debug)]
pub struct CrowdFrames {
    ring: PaletteRing,
    renderer: Renderer,
    rasteriser: Rasteriser,
    mesh: Arc<SkinnedMesh>,
    /// The compute rasteriser's culling sphere (kept for resizes).
    cull_sphere: Option<(Vec3, f32)>,
    timer: Option<GpuTimer>,
    instances: Vec<Instance>,
    /// The instances' active morph targets, flat, and each instance's range of it (gathered
    /// only when the mesh has targets).
    morphs: Vec<ActiveMorph>,
    morph_ranges: Vec<std::ops::Range<usize>>,
    frame: usize,
    bounds: (Vec3, Vec3),
}

impl CrowdFrames {
    /// A ring with room for `palette_entries` entries (it grows when a frame needs more) and
    /// a `width × height` renderer of `mesh`, skinned by `rig`'s characters, of the kind
    /// `rasteriser` names. The compute rasteriser culls instances by the mesh's rest pose on
    /// `rig` ([`rest_pose_bounding_sphere`], twice its radius for animated limbs), which bounds
    /// meshes whose positions are not in model space (quantized skinned meshes) too.
    ///
    /// # Errors
    /// As [`PaletteRing::new`], [`CrowdRenderer::new`] and [`ComputeCrowdRenderer::new`]
    /// (which refuses meshes over [`RASTER_MAX_BONES`] bones).
    pub fn new(
        ctx: &GpuContext,
        rig: &Rig,
        mesh: Arc<SkinnedMesh>,
        rasteriser: Rasteriser,
        (width, height): (u32, u32),
        palette_entries: usize,
    ) -> Result<Self, GpuError> {
        ctx.check_palette_len(palette_entries)?;
        let ring = PaletteRing::new(ctx, PaletteUpload::best(ctx), 3, palette_entries)?;
        let cull_sphere = rest_pose_bounding_sphere(rig, &SkinRef::new(mesh.clone()))
            .map(|(centre, radius)| (centre, 2.0 * radius));
        let renderer = Self::make_renderer(ctx, &mesh, rasteriser, width, height, cull_sphere)?;
        Ok(Self {
            ring,
            renderer,
            rasteriser,
            mesh,
            cull_sphere,
            timer: GpuTimer::new(ctx),
            instances: Vec::new(),
            morphs: Vec::new(),
            morph_ranges: Vec::new(),
            frame: 0,
            bounds: (Vec3::ZERO, Vec3::ZERO),
        })
    }

    fn make_renderer(
        ctx: &GpuContext,
        mesh: &SkinnedMesh,
        rasteriser: Rasteriser,
        width: u32,
        height: u32,
        cull_sphere: Option<(Vec3, f32)>,
    ) -> Result<Renderer, GpuError> {
        Ok(match rasteriser {
            Rasteriser::Graphics => {
                Renderer::Graphics(CrowdRenderer::new(ctx, mesh, width, height)?)
            }
            Rasteriser::Compute => {
                let mut r = ComputeCrowdRenderer::new(ctx, mesh, width, height)?;
                r.options_mut().cull_sphere = cull_sphere;
                Renderer::Compute(r)
            }
        })
    }

    /// A new target size (a window's resize). The ring, the timer and the shading stay.
    ///
    /// # Errors
    /// As [`CrowdFrames::new`] for the renderer (a zero size among them).
    pub fn resize(&mut self, ctx: &GpuContext, width: u32, height: u32) -> Result<(), GpuError> {
        let shading = self.shading();
        self.renderer = Self::make_renderer(
            ctx,
            &self.mesh,
            self.rasteriser,
            width,
            height,
            self.cull_sphere,
        )?;
        self.set_shading(shading);
        Ok(())
    }

    /// The renderer in use.
    pub fn rasteriser(&self) -> Rasteriser {
        self.rasteriser
    }

    /// The palette ring (its mode and last frame's statistics).
    pub fn ring(&self) -> &PaletteRing {
        &self.ring
    }

    /// Whether GPU times are measured (the device has `TIMESTAMP_QUERY`).
    pub fn has_gpu_timer(&self) -> bool {
        self.timer.is_some()
    }

    /// Target size.
    pub fn size(&self) -> (u32, u32) {
        match &self.renderer {
            Renderer::Graphics(r) => (r.width(), r.height()),
            Renderer::Compute(r) => (r.width(), r.height()),
        }
    }

    /// The shading (light, albedo, clear colour).
    pub fn shading(&self) -> Shading {
        match &self.renderer {
            Renderer::Graphics(r) => r.shading,
            Renderer::Compute(r) => r.shading,
        }
    }

    /// Sets the shading.
    pub fn set_shading(&mut self, shading: Shading) {
        match &mut self.renderer {
            Renderer::Graphics(r) => r.shading = shading,
            Renderer::Compute(r) => r.shading = shading,
        }
    }

    /// The instances of the last [`CrowdFrames::write`] (palette base, world transform), in
    /// the store's order of the animated, skinned set.
    pub fn instances(&self) -> &[Instance] {
        &self.instances
    }

    /// The bounding box of the last frame's entity origins (lower, upper corner).
    pub fn bounds(&self) -> (Vec3, Vec3) {
        self.bounds
    }

    /// Frames written so far.
    pub fn frame_count(&self) -> usize {
        self.frame
    }

    /// Runs `fill` on this frame's palette buffer (exactly the crowd's palette length, as
    /// [`crowd_palette_len`] counts it before the frame) and gathers the instance table from
    /// `store` after it. Returns what `fill` returned, with the pipeline and ring-wait times
    /// in the split (its `encode` is zero until [`CrowdFrames::encode`]).
    ///
    /// # Errors
    /// As [`PaletteRing::write`]; [`GpuError::InvalidInput`] when the store refuses a query.
    pub fn write<R>(
        &mut self,
        ctx: &GpuContext,
        store: &mut Store,
        fill: impl FnOnce(&mut Store, &mut [PaletteEntry]) -> R,
    ) -> Result<(R, FrameSplit), GpuError> {
        let entries = crowd_palette_len(store)?;
        let mut pipeline = Duration::ZERO;
        let t0 = Instant::now();
        let r = self.ring.write(ctx, entries, |p| {
            let t = Instant::now();
            let r = fill(store, p);
            pipeline = t.elapsed();
            r
        })?;
        let ring_wait = t0.elapsed().saturating_sub(pipeline);
        let t = Instant::now();
        self.gather_instances(store)?;
        self.frame += 1;
        Ok((
            r,
            FrameSplit {
                pipeline,
                ring_wait,
                encode: t.elapsed(),
            },
        ))
    }

    fn gather_instances(&mut self, store: &mut Store) -> Result<(), GpuError> {
        self.instances.clear();
        self.morphs.clear();
        self.morph_ranges.clear();
        let morphed = !self.mesh.morph_targets().is_empty();
        let (mut lo, mut hi) = (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY));
        // The set `crowd_palette_len` counts: the entities the pipeline wrote palettes for.
        let mut q = store
            .query::<(&FrameSlot, &EntityTransform, Option<&MorphWeights>)>()
            .map_err(|e| GpuError::InvalidInput {
                what: format!("CrowdFrames: {e}"),
            })?
            .with::<RigRef>()
            .with::<SkinRef>()
            .with::<Animations>()
            .with::<LayerWeights>();
        let (instances, morphs, ranges) = (
            &mut self.instances,
            &mut self.morphs,
            &mut self.morph_ranges,
        );
        q.for_each(|_, (slot, t, weights)| {
            instances.push(Instance::new(slot.palette_offset, t.0.to_affine()));
            lo = lo.min(t.0.translation);
            hi = hi.max(t.0.translation);
            if morphed {
                let start = morphs.len();
                morphs.extend_from_slice(weights.map_or(&[][..], |w| w.active()));
                ranges.push(start..morphs.len());
            }
        });
        self.bounds = if self.instances.is_empty() {
            (Vec3::ZERO, Vec3::ZERO)
        } else {
            (lo, hi)
        };
        Ok(())
    }

    /// Uploads the instance table and records the draw of the last [`CrowdFrames::write`]
    /// from `camera` (with the GPU timer's queries where there is one), then, with
    /// `readback`, the copy of the image into the read-back buffer. Submit `encoder`, then
    /// call [`CrowdFrames::submitted`]. Returns the time it took.
    ///
    /// # Errors
    /// [`GpuError::InvalidInput`] when the ring holds no buffer (no `write` since the last
    /// submission) or an instance reads past the palette; as the renderers' `set_instances`.
    pub fn encode(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        camera: &Camera,
        readback: bool,
    ) -> Result<Duration, GpuError> {
        let t = Instant::now();
        ctx.check_device()?;
        let palette = self
            .ring
            .buffer()
            .cloned()
            .ok_or_else(|| GpuError::InvalidInput {
                what: "CrowdFrames::encode: no palettes written since the last submission".into(),
            })?;
        let entries = self.ring.len() as u64;
        let slot = self.frame % TIMER_SLOTS;
        let last_tick = match self.rasteriser {
            Rasteriser::Graphics => 1,
            Rasteriser::Compute => TIMESTAMPS_PER_FRAME - 1,
        };
        if let Some(timer) = &mut self.timer {
            // The ring waited for the frame that used this slot; its read-back is due.
            timer.collect(ctx, slot, last_tick, true)?;
        }
        let queries = self
            .timer
            .as_ref()
            .and_then(|t| t.slots.get(slot))
            .map(|s| &s.set);
        // Each instance's active morph targets (job 5 compacted them), for meshes that have
        // targets: an entity without `MorphWeights` draws the bind shape.
        let lists: Vec<&[ActiveMorph]> = self
            .morph_ranges
            .iter()
            .filter_map(|r| self.morphs.get(r.clone()))
            .collect();
        let morphed = !self.mesh.morph_targets().is_empty();
        match &mut self.renderer {
            Renderer::Graphics(r) => {
                if morphed {
                    r.set_morphs(ctx, &lists)?;
                }
                r.check_palette_bounds(&self.instances, entries)?;
                r.set_instances(ctx, &self.instances)?;
                let tw = queries.map(|set| wgpu::RenderPassTimestampWrites {
                    query_set: set,
                    beginning_of_pass_write_index: Some(0),
                    end_of_pass_write_index: Some(1),
                });
                r.encode(ctx, encoder, &palette, camera, tw);
                if readback {
                    r.encode_readback(encoder);
                }
            }
            Renderer::Compute(r) => {
                if morphed {
                    r.set_morphs(ctx, &lists)?;
                }
                r.check_palette_bounds(&self.instances, entries)?;
                r.set_instances(ctx, &self.instances)?;
                let tw = queries.map(|set| RasterTimestamps {
                    query_set: set,
                    first: 0,
                });
                r.encode(ctx, encoder, &palette, camera, tw);
                if readback {
                    r.encode_readback(encoder);
                }
            }
        }
        if let Some(s) = self.timer.as_ref().and_then(|t| t.slots.get(slot)) {
            encoder.resolve_query_set(&s.set, 0..last_tick + 1, &s.resolve, 0);
            encoder.copy_buffer_to_buffer(&s.resolve, 0, &s.read, 0, s.read.size());
        }
        Ok(t.elapsed())
    }

    /// Reports the submission that holds this frame's [`CrowdFrames::encode`]: the ring
    /// re-maps its buffer, and the timestamps are read back once the GPU is done.
    pub fn submitted(&mut self, submission: wgpu::SubmissionIndex) {
        self.ring.submitted(Some(submission.clone()));
        let slot = self.frame % TIMER_SLOTS;
        if let Some(s) = self.timer.as_mut().and_then(|t| t.slots.get_mut(slot)) {
            let state = Arc::clone(&s.state);
            state.store(MAP_PENDING, Ordering::Release);
            s.submission = Some(submission);
            s.read.map_async(wgpu::MapMode::Read, .., move |r| {
                state.store(
                    if r.is_ok() { MAP_DONE } else { MAP_FAILED },
                    Ordering::Release,
                );
            });
        }
    }

    /// Waits for every frame in flight and returns the GPU times measured since the last
    /// call, oldest first (empty without a timer).
    ///
    /// # Errors
    /// [`GpuError::Poll`] / [`GpuError::Map`].
    pub fn finish(&mut self, ctx: &GpuContext) -> Result<Vec<Duration>, GpuError> {
        self.drain(ctx, true)
    }

    /// The GPU times that have arrived since the last call, without blocking.
    ///
    /// # Errors
    /// [`GpuError::Poll`] / [`GpuError::Map`].
    pub fn gpu_times(&mut self, ctx: &GpuContext) -> Result<Vec<Duration>, GpuError> {
        self.drain(ctx, false)
    }

    fn drain(&mut self, ctx: &GpuContext, wait: bool) -> Result<Vec<Duration>, GpuError> {
        let last_tick = match self.rasteriser {
            Rasteriser::Graphics => 1,
            Rasteriser::Compute => TIMESTAMPS_PER_FRAME - 1,
        };
        let Some(timer) = &mut self.timer else {
            return Ok(Vec::new());
        };
        ctx.device
            .poll(wgpu::PollType::Poll)
            .map_err(|e| GpuError::Poll(e.to_string()))?;
        // Oldest first: the slot after this frame's is the oldest in flight.
        for k in 1..=TIMER_SLOTS {
            timer.collect(ctx, (self.frame + k) % TIMER_SLOTS, last_tick, wait)?;
        }
        Ok(std::mem::take(&mut timer.times))
    }

    /// The image of a frame encoded with `readback` (waits for `submission`).
    ///
    /// # Errors
    /// [`GpuError::Map`] / [`GpuError::Poll`].
    pub fn read_image(
        &self,
        ctx: &GpuContext,
        submission: wgpu::SubmissionIndex,
    ) -> Result<RgbaImage, GpuError> {
        match &self.renderer {
            Renderer::Graphics(r) => r.read_image(ctx, submission),
            Renderer::Compute(r) => r.read_image(ctx, submission),
        }
    }

    /// The graphics pipeline's colour and depth targets, for a renderer that draws over the
    /// crowd with depth testing (`None` for the compute rasteriser, which has no depth
    /// target).
    pub fn graphics_targets(&self) -> Option<(&wgpu::TextureView, &wgpu::TextureView)> {
        match &self.renderer {
            Renderer::Graphics(r) => Some((r.color_view(), r.depth_view())),
            Renderer::Compute(_) => None,
        }
    }

    /// Where the drawn image is, for a pass that shows it (a window's composite).
    pub fn image(&self) -> FrameImage<'_> {
        match &self.renderer {
            Renderer::Graphics(r) => FrameImage::Texture(r.color_view()),
            Renderer::Compute(r) => FrameImage::Buffer(r.color_buffer()),
        }
    }
}
