//! Offscreen instanced draw of a baked crowd: one indexed, instanced draw call; per frame the
//! CPU writes only the 96-byte uniform (camera and global time).

use super::{
    BakedAnimationGpu, BakedInstance, BakedVertex, common_bind_group, common_layout,
    globals_buffer, read_buffer, shader, wait,
};
use crate::context::{GpuContext, GpuError};
use crate::render::instanced_mesh_pipeline;
use glam::Mat4;
use std::time::{Duration, Instant};

/// Colour target format (read back as RGBA8).
pub const COLOR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;
/// Depth format.
pub use crate::render::DEPTH_FORMAT;

/// Another renderer's colour and depth targets, for [`BakedRenderer::encode_over`].
#[derive(Clone, Copy, Debug)]
pub struct DrawTarget<'a> {
    /// Colour target view.
    pub color: &'a wgpu::TextureView,
    /// Depth target view ([`DEPTH_FORMAT`]).
    pub depth: &'a wgpu::TextureView,
}

/// What one [`BakedRenderer::render`] cost.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameTiming {
    /// CPU time to write the uniform, encode and submit.
    pub cpu: Duration,
    /// Wall time from the start of the call until the GPU finished (when `wait` was asked).
    pub wall: Option<Duration>,
    /// GPU time of the render pass from timestamp queries, when the device has them.
    pub gpu: Option<Duration>,
}

/// Draws a baked crowd into an offscreen colour + depth target.
#[derive(Debug)]
pub struct BakedRenderer {
    pipeline: wgpu::RenderPipeline,
    bind_group: wgpu::BindGroup,
    uniform: wgpu::Buffer,
    instances: Option<wgpu::Buffer>,
    instance_count: u32,
    color: wgpu::Texture,
    color_view: wgpu::TextureView,
    depth_view: wgpu::TextureView,
    width: u32,
    height: u32,
    queries: Option<(wgpu::QuerySet, wgpu::Buffer, wgpu::Buffer)>,
}

impl BakedRenderer {
    /// A renderer for `anim`'s mesh and texture with a `width × height` target.
    ///
    /// # Errors
    /// [`GpuError::InvalidInput`] for a zero-sized target; [`GpuError::TooLarge`] above the
    /// device's texture limit.
    pub fn new(
        ctx: &GpuContext,
        anim: &BakedAnimationGpu,
        width: u32,
        height: u32,
    ) -> Result<Self, GpuError> {
        Self::with_color_format(ctx, anim, width, height, COLOR_FORMAT)
    }

    /// As [`BakedRenderer::new`] with a pipeline for colour targets of `format` (its own
    /// target too), so that [`BakedRenderer::encode_over`] can draw into another renderer's
    /// target, e.g. [`crate::render::CrowdRenderer`]'s `Rgba8UnormSrgb`.
    ///
    /// # Errors
    /// As [`BakedRenderer::new`].
    pub fn with_color_format(
        ctx: &GpuContext,
        anim: &BakedAnimationGpu,
        width: u32,
        height: u32,
        format: wgpu::TextureFormat,
    ) -> Result<Self, GpuError> {
        if width == 0 || height == 0 {
            return Err(GpuError::InvalidInput {
                what: format!("baked renderer: target {width}x{height}"),
            });
        }
        let max = ctx.limits.max_texture_dimension_2d;
        if width > max || height > max {
            return Err(GpuError::TooLarge {
                what: format!("baked renderer target {width}x{height}"),
                size: u64::from(width) * u64::from(height) * 4,
                limit: u64::from(max) * u64::from(max) * 4,
            });
        }
        let layout = common_layout(ctx, &[]);
        let module = shader(
            ctx,
            "baked draw",
            include_str!("../shaders/baked_draw.wgsl"),
        );
        let pl = ctx
            .device
            .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("baked draw"),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
        let vertex_attrs = wgpu::vertex_attr_array![
            0 => Float32x4, 1 => Float32x4, 2 => Uint32x4, 3 => Float32x4, 4 => Uint32x4, 5 => Float32x4
        ];
        let instance_attrs = wgpu::vertex_attr_array![
            6 => Float32x4, 7 => Float32x4, 8 => Float32x4, 9 => Uint32x4, 10 => Float32x4, 11 => Float32x4
        ];
        let pipeline = instanced_mesh_pipeline(
            &ctx.device,
            "baked draw",
            Some(&pl),
            &module,
            [
                (std::mem::size_of::<BakedVertex>(), &vertex_attrs),
                (std::mem::size_of::<BakedInstance>(), &instance_attrs),
            ],
            format,
        );
        let uniform = globals_buffer(ctx, "baked globals");
        let bind_group = common_bind_group(ctx, "baked draw", &layout, &uniform, anim, &[]);
        let size = wgpu::Extent3d {
            width,
            height,
            depth_or_array_layers: 1,
        };
        let target = |label: &str, format: wgpu::TextureFormat, usage: wgpu::TextureUsages| {
            ctx.device.create_texture(&wgpu::TextureDescriptor {
                label: Some(label),
                size,
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage,
                view_formats: &[],
            })
        };
        let color = target(
            "baked colour",
            format,
            wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
        );
        let depth = target(
            "baked depth",
            DEPTH_FORMAT,
            wgpu::TextureUsages::RENDER_ATTACHMENT,
        );
        let color_view = color.create_view(&wgpu::TextureViewDescriptor::default());
        let depth_view = depth.create_view(&wgpu::TextureViewDescriptor::default());
        let queries = ctx
            .features
            .contains(wgpu::Features::TIMESTAMP_QUERY)
            .then(|| {
                let qs = ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("baked timestamps"),
                    ty: wgpu::QueryType::Timestamp,
                    count: 2,
                });
                let resolve = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("baked timestamps resolve"),
                    size: 16,
                    usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                });
                let read = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("baked timestamps read"),
                    size: 16,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                (qs, resolve, read)
            });
        Ok(Self {
            pipeline,
            bind_group,
            uniform,
            instances: None,
            instance_count: 0,
            color,
            color_view,
            depth_view,
            width,
            height,
            queries,
        })
    }

    /// Uploads the instances (once; they stay on the GPU for every later frame).
    ///
    /// # Errors
    /// [`GpuError::InvalidInput`] for instances naming missing clips or with non-finite
    /// values; [`GpuError::TooLarge`] above the device's buffer size.
    pub fn set_instances(
        &mut self,
        ctx: &GpuContext,
        anim: &BakedAnimationGpu,
        instances: &[BakedInstance],
    ) -> Result<(), GpuError> {
        anim.validate_instances(instances)?;
        let count = u32::try_from(instances.len()).map_err(|_| GpuError::InvalidInput {
            what: format!("baked renderer: {} instances", instances.len()),
        })?;
        let size = std::mem::size_of_val(instances) as u64;
        if size > ctx.limits.max_buffer_size {
            return Err(GpuError::TooLarge {
                what: "baked instance buffer".into(),
                size,
                limit: ctx.limits.max_buffer_size,
            });
        }
        let reuse = self
            .instances
            .as_ref()
            .is_some_and(|b| b.size() >= size && size > 0);
        if !reuse && size > 0 {
            self.instances = Some(ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("baked instances"),
                size,
                usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }));
        }
        if let Some(b) = &self.instances
            && size > 0
        {
            ctx.queue
                .write_buffer(b, 0, bytemuck::cast_slice(instances));
        }
        self.instance_count = count;
        Ok(())
    }

    /// Instances drawn per frame.
    pub fn instance_count(&self) -> u32 {
        self.instance_count
    }

    /// Target size.
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// Draws every instance at global time `time` seen through `view_proj`, then waits for
    /// the GPU and, when the device has timestamp queries, reads the pass's GPU time.
    ///
    /// # Errors
    /// [`GpuError::Poll`], [`GpuError::Map`].
    pub fn render(
        &mut self,
        ctx: &GpuContext,
        anim: &BakedAnimationGpu,
        view_proj: Mat4,
        time: f32,
    ) -> Result<FrameTiming, GpuError> {
        ctx.check_device()?;
        let start = Instant::now();
        let sub = self.submit(ctx, anim, view_proj, time);
        let cpu = start.elapsed();
        wait(ctx, Some(sub))?;
        let wall = start.elapsed();
        let gpu = match &self.queries {
            Some((_, _, read)) => {
                let bytes = read_buffer(ctx, read, 16)?;
                let ts: &[u64] = bytemuck::try_cast_slice(&bytes)
                    .map_err(|e| GpuError::Map(format!("{e:?}")))?;
                let ticks = match ts {
                    [a, b] => b.saturating_sub(*a),
                    _ => 0,
                };
                let ns = ticks as f64 * f64::from(ctx.queue.get_timestamp_period());
                Some(Duration::from_nanos(ns as u64))
            }
            None => None,
        };
        Ok(FrameTiming {
            cpu,
            wall: Some(wall),
            gpu,
        })
    }

    /// Writes the uniform, encodes the draw and submits it without waiting.
    pub fn submit(
        &mut self,
        ctx: &GpuContext,
        anim: &BakedAnimationGpu,
        view_proj: Mat4,
        time: f32,
    ) -> wgpu::SubmissionIndex {
        let globals = anim.globals(view_proj, time, self.instance_count);
        ctx.queue
            .write_buffer(&self.uniform, 0, bytemuck::bytes_of(&globals));
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("baked frame"),
            });
        {
            let timestamp_writes =
                self.queries
                    .as_ref()
                    .map(|(qs, _, _)| wgpu::RenderPassTimestampWrites {
                        query_set: qs,
                        beginning_of_pass_write_index: Some(0),
                        end_of_pass_write_index: Some(1),
                    });
            self.record_pass(
                anim,
                &mut encoder,
                &self.color_view,
                &self.depth_view,
                true,
                timestamp_writes,
            );
        }
        if let Some((qs, resolve, read)) = &self.queries {
            encoder.resolve_query_set(qs, 0..2, resolve, 0);
            encoder.copy_buffer_to_buffer(resolve, 0, read, 0, 16);
        }
        ctx.queue.submit([encoder.finish()])
    }

    /// Records a draw of every instance at global time `time` through `view_proj` into
    /// another renderer's targets, keeping what they hold (colour and depth loaded, depth
    /// tested and written): both tiers of a level-of-detail crowd end up in one image,
    /// correctly occluded. `target.color` must have this renderer's colour format (see
    /// [`BakedRenderer::with_color_format`]) and `target.depth` [`DEPTH_FORMAT`], both of this
    /// renderer's size. Queues the uniform write; submit `encoder` afterwards.
    pub fn encode_over(
        &self,
        ctx: &GpuContext,
        anim: &BakedAnimationGpu,
        encoder: &mut wgpu::CommandEncoder,
        target: DrawTarget<'_>,
        view_proj: Mat4,
        time: f32,
    ) {
        let globals = anim.globals(view_proj, time, self.instance_count);
        ctx.queue
            .write_buffer(&self.uniform, 0, bytemuck::bytes_of(&globals));
        self.record_pass(anim, encoder, target.color, target.depth, false, None);
    }

    /// The render pass: clears (`clear`) or loads the targets, then one instanced draw.
    fn record_pass(
        &self,
        anim: &BakedAnimationGpu,
        encoder: &mut wgpu::CommandEncoder,
        color: &wgpu::TextureView,
        depth: &wgpu::TextureView,
        clear: bool,
        timestamp_writes: Option<wgpu::RenderPassTimestampWrites<'_>>,
    ) {
        let sky = wgpu::Color {
            r: 0.55,
            g: 0.65,
            b: 0.75,
            a: 1.0,
        };
        // Its own cleared pass is the last (depth discarded); over another's, depth is kept.
        let mut pass = crate::render::begin_target_pass(
            encoder,
            "baked crowd",
            [color, depth],
            clear.then_some(sky),
            !clear,
            timestamp_writes,
        );
        if let Some(inst) = &self.instances
            && self.instance_count > 0
        {
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &self.bind_group, &[]);
            pass.set_vertex_buffer(0, anim.vertices.slice(..));
            pass.set_vertex_buffer(1, inst.slice(..));
            pass.set_index_buffer(anim.indices.slice(..), wgpu::IndexFormat::Uint32);
            pass.draw_indexed(0..anim.index_count, 0, 0..self.instance_count);
        }
    }

    /// Reads the colour target back as tightly packed RGBA8 rows (blocking).
    ///
    /// # Errors
    /// [`GpuError::Map`], [`GpuError::Poll`].
    pub fn read_pixels(&self, ctx: &GpuContext) -> Result<Vec<u8>, GpuError> {
        let row = self.width * 4;
        let padded =
            row.div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
        let size = u64::from(padded) * u64::from(self.height);
        let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("baked pixels"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("baked read pixels"),
            });
        encoder.copy_texture_to_buffer(
            wgpu::TexelCopyTextureInfo {
                texture: &self.color,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            wgpu::TexelCopyBufferInfo {
                buffer: &buffer,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(padded),
                    rows_per_image: Some(self.height),
                },
            },
            wgpu::Extent3d {
                width: self.width,
                height: self.height,
                depth_or_array_layers: 1,
            },
        );
        let sub = ctx.queue.submit([encoder.finish()]);
        wait(ctx, Some(sub))?;
        let bytes = read_buffer(ctx, &buffer, size)?;
        let mut out = Vec::with_capacity((row * self.height) as usize);
        for r in bytes.chunks_exact(padded as usize) {
            out.extend_from_slice(r.get(..row as usize).unwrap_or(&[]));
        }
        Ok(out)
    }
}
