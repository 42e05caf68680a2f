//! The crowd's GPU path: every measured frame's palettes are written by the pipeline into the
//! mapped palette ring and drawn ([`sinew_gpu::crowd_frames::CrowdFrames`]), and the frame is
//! split into CPU pipeline, ring wait, encode + submit and GPU time.

use crate::crowd::median;
use crate::lod::{LodState, lod_camera};
use glam::Vec3;
use sinew_gpu::baked::draw::{BakedRenderer, DrawTarget};
use sinew_gpu::baked::{BakedAnimationGpu, BakedTexelFormat};
use sinew_gpu::context::{GpuContext, GpuError};
use sinew_gpu::crowd_frames::{CrowdFrames, Rasteriser};
use sinew_gpu::palette_ring::crowd_palette_len;
use sinew_gpu::render::COLOR_FORMAT;
use sinew_gpu::render::Camera;
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{Rig, SkinnedMesh};
use sinew_runtime::store::Store;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Whether the crowd draws on the GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GpuUse {
    /// The CPU alone: palettes go into a `Vec` (`--cpu-only`).
    #[default]
    Off,
    /// A GPU adapter when there is one; a CPU rasteriser (lavapipe) or no adapter runs on the
    /// CPU, and the summary says why.
    Auto,
    /// Any adapter, a CPU rasteriser included; none is an error (`--gpu`).
    Required,
}

/// Size of the crowd's drawing target.
pub const DRAW_SIZE: (u32, u32) = (1280, 720);

/// What the GPU path measured.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuSummary {
    /// Adapter name.
    pub adapter: String,
    /// Adapter type (discrete, integrated, CPU, ...).
    pub device_type: String,
    /// Backend (Vulkan, Metal, ...).
    pub backend: String,
    /// The renderer that drew.
    pub rasteriser: Rasteriser,
    /// How palettes reach the GPU (`PaletteUpload::name`).
    pub palette_upload: &'static str,
    /// Target size.
    pub size: (u32, u32),
    /// Median time of the animation pipeline writing into mapped memory.
    pub pipeline_median: Duration,
    /// Median time blocked on the ring (plus its unmap or staging copy).
    pub ring_wait_median: Duration,
    /// Median time gathering instances, recording the draw and submitting.
    pub encode_submit_median: Duration,
    /// Median GPU time of the draw (timestamp queries), `None` without `TIMESTAMP_QUERY`.
    pub gpu_median: Option<Duration>,
    /// GPU times measured (one per measured frame when the device has timestamps).
    pub gpu_frames: usize,
    /// With `--lod`: the GPU time covers the CPU tier's pass only (the baked renderer's pass
    /// is not timed).
    pub lod: bool,
}

/// What one GPU frame returns.
pub(crate) struct GpuFrame {
    /// The frame's CPU time: pipeline + ring wait + encode and submit.
    pub(crate) time: Duration,
    /// The animation pipeline's part of it.
    pub(crate) pipeline: Duration,
    /// With `checksum`: the sum of every palette float.
    pub(crate) checksum: Option<f64>,
    /// With `lod`: the CPU time of `LodState::after`, run on the mapped palettes.
    pub(crate) lod_after: Option<Duration>,
}

/// The per-frame GPU path of the crowd.
pub(crate) struct CrowdGpu {
    ctx: GpuContext,
    frames: CrowdFrames,
    /// `--lod`: the baked tier's texture and renderer, made on the first frame.
    baked: Option<(BakedAnimationGpu, BakedRenderer)>,
    mesh: Arc<SkinnedMesh>,
    pipeline: Vec<Duration>,
    ring_wait: Vec<Duration>,
    encode_submit: Vec<Duration>,
}

/// The GPU path for `use_gpu`: `Ok(Err(note))` when it runs on the CPU instead (the note
/// says why, once, in the summary).
pub(crate) fn open(
    use_gpu: GpuUse,
    raster: Option<Rasteriser>,
    rig: &Rig,
    mesh: &Arc<SkinnedMesh>,
    store: &mut Store,
) -> Result<Result<CrowdGpu, String>, String> {
    let ctx = match (use_gpu, GpuContext::new()) {
        (GpuUse::Off, _) => return Ok(Err("--cpu-only".into())),
        (_, Ok(ctx)) => ctx,
        (GpuUse::Auto, Err(GpuError::NoAdapter { .. })) => {
            return Ok(Err("no GPU adapter: palettes go to CPU memory".into()));
        }
        (GpuUse::Auto, Err(e)) => {
            return Ok(Err(format!("{e}; palettes go to CPU memory")));
        }
        (GpuUse::Required, Err(e)) => return Err(format!("{e} (--gpu asks for one)")),
    };
    let info = &ctx.adapter_info;
    if use_gpu == GpuUse::Auto && info.device_type == wgpu::DeviceType::Cpu {
        return Ok(Err(format!(
            "adapter '{}' is a CPU rasteriser, where drawing the crowd would time the \
             rasteriser rather than sinew: palettes go to CPU memory (--gpu draws there)",
            info.name
        )));
    }
    let raster = raster.unwrap_or_else(|| Rasteriser::for_adapter(info, mesh));
    let entries = crowd_palette_len(store).map_err(|e| format!("gpu: {e}"))?;
    let frames = CrowdFrames::new(&ctx, rig, mesh.clone(), raster, DRAW_SIZE, entries)
        .map_err(|e| format!("gpu: {e}"))?;
    Ok(Ok(CrowdGpu {
        ctx,
        frames,
        baked: None,
        mesh: mesh.clone(),
        pipeline: Vec::new(),
        ring_wait: Vec::new(),
        encode_submit: Vec::new(),
    }))
}

impl CrowdGpu {
    /// One frame: the pipeline writes into the ring, the crowd is drawn from a camera that
    /// frames it (with `lod`, `frame`: the LOD crowd's flying camera, and the baked tier drawn
    /// after the CPU tier), the draw is submitted. With `checksum`, the sum of every palette
    /// float (read back from the mapped buffer after the timed pipeline). The times are
    /// recorded when `measured`.
    pub(crate) fn frame(
        &mut self,
        store: &mut Store,
        animator: &mut Animator,
        dt: f32,
        checksum: bool,
        measured: bool,
        mut lod: Option<(&mut LodState, usize)>,
    ) -> Result<GpuFrame, String> {
        let ((run, pipeline, sum, after), split) = self
            .frames
            .write(&self.ctx, store, |store, palette| {
                let t = Instant::now();
                let run = animator.run_frame_into_mapped(store, dt, palette);
                let pipeline = t.elapsed();
                let sum =
                    checksum.then(|| palette.iter().flatten().map(|&x| f64::from(x)).sum::<f64>());
                // LOD bookkeeping (and `--lod-check`) reads this frame's palettes.
                let after = match (&run, lod.as_mut()) {
                    (Ok(()), Some((l, frame))) => Some(l.after(store, Some(palette), *frame)),
                    _ => None,
                };
                (run, pipeline, sum, after)
            })
            .map_err(|e| format!("gpu: {e}"))?;
        run.map_err(|e| format!("frame: {e}"))?;
        let lod_after = after.transpose()?;
        let t = Instant::now();
        let camera = match &lod {
            Some((l, _)) => {
                let (eye, target) = lod_camera(l.grid(), l.time());
                Camera::look_at(eye, target)
            }
            None => {
                let (lo, hi) = self.frames.bounds();
                let center = (lo + hi) * 0.5 + Vec3::Y * 0.9;
                let extent = (hi - lo).length().max(3.0);
                let mut camera = Camera::look_at(
                    center + Vec3::new(0.35, 0.45, -0.8).normalize() * extent * 0.9,
                    center,
                );
                // The far corner is 0.9 + 0.5 extents away: keep the whole crowd in front of
                // the far plane (100 000 characters span ~900 m).
                camera.far = camera.far.max(2.0 * extent);
                camera
            }
        };
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("crowd frame"),
            });
        self.frames
            .encode(&self.ctx, &mut encoder, &camera, false)
            .map_err(|e| format!("gpu: {e}"))?;
        if let Some((l, _)) = &lod {
            self.encode_baked(&mut encoder, l, &camera)?;
        }
        let sub = self.ctx.queue.submit([encoder.finish()]);
        self.frames.submitted(sub);
        let encode_submit = split.encode + t.elapsed();
        if measured {
            self.pipeline.push(pipeline);
            self.ring_wait.push(split.ring_wait);
            self.encode_submit.push(encode_submit);
        }
        Ok(GpuFrame {
            time: pipeline + split.ring_wait + encode_submit,
            pipeline,
            checksum: sum,
            lod_after,
        })
    }

    /// Records the baked tier's draw into the graphics pipeline's colour and depth targets.
    fn encode_baked(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        lod: &LodState,
        camera: &Camera,
    ) -> Result<(), String> {
        let e = |e: GpuError| format!("--lod draw: {e}");
        let (w, h) = self.frames.size();
        if self.baked.is_none() {
            let anim = BakedAnimationGpu::new(
                &self.ctx,
                lod.crowd().texture(),
                &self.mesh,
                BakedTexelFormat::Rgba32Float,
            )
            .map_err(e)?;
            let renderer = BakedRenderer::with_color_format(&self.ctx, &anim, w, h, COLOR_FORMAT)
                .map_err(e)?;
            self.baked = Some((anim, renderer));
        }
        let (Some((anim, renderer)), Some((color, depth))) =
            (self.baked.as_mut(), self.frames.graphics_targets())
        else {
            return Err("--lod draw: the crowd is not drawn by the graphics pipeline".into());
        };
        renderer
            .set_instances(&self.ctx, anim, &lod.baked_instances())
            .map_err(e)?;
        renderer.encode_over(
            &self.ctx,
            anim,
            encoder,
            DrawTarget { color, depth },
            camera.view_proj(w as f32 / h as f32),
            lod.crowd().time(),
        );
        Ok(())
    }

    /// Waits for the GPU and summarises; `warm_up` frames at the start are left out of the
    /// GPU times as they are out of the CPU ones.
    pub(crate) fn finish(mut self, warm_up: usize) -> Result<GpuSummary, String> {
        let mut gpu = self
            .frames
            .finish(&self.ctx)
            .map_err(|e| format!("gpu: {e}"))?;
        let mut gpu: Vec<Duration> = gpu.drain(..).skip(warm_up).collect();
        let info = &self.ctx.adapter_info;
        Ok(GpuSummary {
            adapter: info.name.clone(),
            device_type: format!("{:?}", info.device_type),
            backend: format!("{:?}", info.backend),
            rasteriser: self.frames.rasteriser(),
            palette_upload: self.frames.ring().mode().name(),
            size: self.frames.size(),
            pipeline_median: median(&mut self.pipeline),
            ring_wait_median: median(&mut self.ring_wait),
            encode_submit_median: median(&mut self.encode_submit),
            gpu_median: (self.frames.has_gpu_timer() && !gpu.is_empty()).then(|| median(&mut gpu)),
            gpu_frames: gpu.len(),
            lod: self.baked.is_some(),
        })
    }
}
