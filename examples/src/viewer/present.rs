//! Putting the drawn crowd on screen: a composite pass reads the renderer's image (the
//! graphics pipeline's colour texture or the compute rasteriser's colour buffer), lays the
//! text panel over it and writes the window's surface texture; a line pass draws the picked
//! character's skeleton over that. The compute rasteriser's image is laid over a backdrop (the
//! ground's own image) where its alpha is 0 (background), as it has no depth to draw into. A screenshot runs the same passes into an offscreen
//! `Rgba8UnormSrgb` texture and reads it back.

use super::text::TextImage;
use glam::{Mat4, Vec3};
use sinew_gpu::context::{GpuContext, GpuError};
use sinew_gpu::crowd_frames::FrameImage;
use sinew_gpu::render::RgbaImage;
use wgpu::util::DeviceExt;

const COMPOSITE_WGSL: &str = r#"
struct Params {
    size: vec2<u32>,
    overlay_size: vec2<u32>,
    overlay_scale: u32,
    source_is_buffer: u32,
    encode_srgb: u32,
    pad: u32,
}
@group(0) @binding(0) var<uniform> params: Params;
// The graphics pipeline's image, or the compute rasteriser's backdrop.
@group(0) @binding(1) var scene_tex: texture_2d<f32>;
@group(0) @binding(2) var<storage, read> scene_buf: array<u32>;
@group(0) @binding(3) var overlay: texture_2d<f32>;

@vertex
fn vs_full(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {
    let uv = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u));
    return vec4<f32>(uv * 2.0 - 1.0, 0.0, 1.0);
}

fn to_linear(c: vec3<f32>) -> vec3<f32> {
    return select(pow((c + 0.055) / 1.055, vec3<f32>(2.4)), c / 12.92, c <= vec3<f32>(0.04045));
}

fn to_srgb(c: vec3<f32>) -> vec3<f32> {
    return select(1.055 * pow(c, vec3<f32>(1.0 / 2.4)) - 0.055, c * 12.92, c <= vec3<f32>(0.0031308));
}

@fragment
fn fs_composite(@builtin(position) pos: vec4<f32>) -> @location(0) vec4<f32> {
    let p = min(vec2<u32>(pos.xy), params.size - vec2<u32>(1u));
    var c: vec3<f32>;
    if params.source_is_buffer == 1u {
        let b = unpack4x8unorm(scene_buf[p.y * params.size.x + p.x]);
        c = mix(textureLoad(scene_tex, p, 0).rgb, to_linear(b.rgb), b.a);
    } else {
        c = textureLoad(scene_tex, p, 0).rgb;
    }
    let o = p / max(params.overlay_scale, 1u);
    if o.x < params.overlay_size.x && o.y < params.overlay_size.y {
        let t = textureLoad(overlay, o, 0);
        c = mix(c, t.rgb, t.a);
    }
    if params.encode_srgb == 1u {
        c = to_srgb(c);
    }
    return vec4<f32>(c, 1.0);
}
"#;

const LINES_WGSL: &str = r#"
struct Lines { view_proj: mat4x4<f32>, color: vec4<f32> }
@group(0) @binding(0) var<uniform> lines: Lines;

@vertex
fn vs_line(@location(0) p: vec3<f32>) -> @builtin(position) vec4<f32> {
    return lines.view_proj * vec4<f32>(p, 1.0);
}

@fragment
fn fs_line() -> @location(0) vec4<f32> {
    return lines.color;
}
"#;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    size: [u32; 2],
    overlay_size: [u32; 2],
    overlay_scale: u32,
    source_is_buffer: u32,
    encode_srgb: u32,
    pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct LineUniform {
    view_proj: [[f32; 4]; 4],
    color: [f32; 4],
}

/// The two pipelines for one target format.
struct Passes {
    format: wgpu::TextureFormat,
    composite: wgpu::RenderPipeline,
    lines: wgpu::RenderPipeline,
}

impl Passes {
    fn new(device: &wgpu::Device, format: wgpu::TextureFormat) -> Self {
        let composite_module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("viewer composite"),
            source: wgpu::ShaderSource::Wgsl(COMPOSITE_WGSL.into()),
        });
        let lines_module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("viewer lines"),
            source: wgpu::ShaderSource::Wgsl(LINES_WGSL.into()),
        });
        let target = [Some(wgpu::ColorTargetState {
            format,
            blend: None,
            write_mask: wgpu::ColorWrites::ALL,
        })];
        let composite = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("viewer composite"),
            layout: None,
            vertex: wgpu::VertexState {
                module: &composite_module,
                entry_point: Some("vs_full"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: None,
            multisample: wgpu::MultisampleState::default(),
            fragment: Some(wgpu::FragmentState {
                module: &composite_module,
                entry_point: Some("fs_composite"),
                compilation_options: Default::default(),
                targets: &target,
            }),
            multiview_mask: None,
            cache: None,
        });
        let lines = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("viewer skeleton"),
            layout: None,
            vertex: wgpu::VertexState {
                module: &lines_module,
                entry_point: Some("vs_line"),
                compilation_options: Default::default(),
                buffers: &[Some(wgpu::VertexBufferLayout {
                    array_stride: 12,
                    step_mode: wgpu::VertexStepMode::Vertex,
                    attributes: &wgpu::vertex_attr_array![0 => Float32x3],
                })],
            },
            primitive: wgpu::PrimitiveState {
                topology: wgpu::PrimitiveTopology::LineList,
                ..Default::default()
            },
            depth_stencil: None,
            multisample: wgpu::MultisampleState::default(),
            fragment: Some(wgpu::FragmentState {
                module: &lines_module,
                entry_point: Some("fs_line"),
                compilation_options: Default::default(),
                targets: &target,
            }),
            multiview_mask: None,
            cache: None,
        });
        Self {
            format,
            composite,
            lines,
        }
    }
}

/// The composite, the skeleton lines and the screenshot target.
pub(crate) struct Presenter {
    surface_passes: Passes,
    screenshot_passes: Option<Passes>,
    params: wgpu::Buffer,
    line_uniform: wgpu::Buffer,
    line_vertices: Option<(wgpu::Buffer, u32)>,
    overlay: wgpu::Texture,
    overlay_size: (u32, u32),
    dummy_texture: wgpu::TextureView,
    dummy_buffer: wgpu::Buffer,
    /// Integer scale of the text panel on screen.
    pub overlay_scale: u32,
}

/// Whether `format` stores sRGB-encoded values itself (then the shader writes linear ones).
fn is_srgb(format: wgpu::TextureFormat) -> bool {
    format.is_srgb()
}

impl Presenter {
    pub(crate) fn new(ctx: &GpuContext, surface_format: wgpu::TextureFormat) -> Self {
        let device = &ctx.device;
        let uniform = |label: &str, size: u64| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let dummy = device.create_texture(&texture_desc("viewer dummy", 1, 1, false));
        Self {
            surface_passes: Passes::new(device, surface_format),
            screenshot_passes: None,
            params: uniform(
                "viewer composite params",
                std::mem::size_of::<Params>() as u64,
            ),
            line_uniform: uniform("viewer lines", std::mem::size_of::<LineUniform>() as u64),
            line_vertices: None,
            overlay: device.create_texture(&texture_desc("viewer text", 1, 1, false)),
            overlay_size: (1, 1),
            dummy_texture: dummy.create_view(&Default::default()),
            dummy_buffer: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("viewer dummy"),
                size: 16,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            }),
            overlay_scale: 2,
        }
    }

    /// Uploads the text panel.
    pub(crate) fn set_text(&mut self, ctx: &GpuContext, text: &TextImage) {
        let (w, h) = (text.width.max(1) as u32, text.height.max(1) as u32);
        if (w, h) != self.overlay_size {
            self.overlay = ctx
                .device
                .create_texture(&texture_desc("viewer text", w, h, false));
            self.overlay_size = (w, h);
        }
        if text.pixels.len() as u64 == u64::from(w) * u64::from(h) * 4 {
            ctx.queue.write_texture(
                self.overlay.as_image_copy(),
                &text.pixels,
                wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(4 * w),
                    rows_per_image: Some(h),
                },
                wgpu::Extent3d {
                    width: w,
                    height: h,
                    depth_or_array_layers: 1,
                },
            );
        }
    }

    /// The skeleton to draw: segments as pairs of world points (empty: none), seen through
    /// `view_proj`.
    pub(crate) fn set_lines(&mut self, ctx: &GpuContext, segments: &[[Vec3; 2]], view_proj: Mat4) {
        if segments.is_empty() {
            self.line_vertices = None;
            return;
        }
        let points: Vec<[f32; 3]> = segments
            .iter()
            .flat_map(|s| [s[0].to_array(), s[1].to_array()])
            .collect();
        let buffer = ctx
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("viewer skeleton"),
                contents: bytemuck::cast_slice(&points),
                usage: wgpu::BufferUsages::VERTEX,
            });
        self.line_vertices = Some((buffer, points.len() as u32));
        let u = LineUniform {
            view_proj: view_proj.to_cols_array_2d(),
            color: [1.0, 0.85, 0.1, 1.0],
        };
        ctx.queue
            .write_buffer(&self.line_uniform, 0, bytemuck::bytes_of(&u));
    }

    /// Records the composite (and the skeleton) of `image` (`size` pixels, over `backdrop`
    /// where it is a buffer with alpha 0) into `target`.
    #[allow(clippy::too_many_arguments)] // one call per target, all of it the frame's
    fn encode_passes(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        passes: &Passes,
        image: FrameImage<'_>,
        backdrop: Option<&wgpu::TextureView>,
        size: (u32, u32),
        target: &wgpu::TextureView,
    ) {
        // One uniform buffer serves both targets: the values differ only in `encode_srgb`,
        // so the screenshot's target is sRGB like the usual surface (checked in `screenshot`).
        let params = Params {
            size: [size.0.max(1), size.1.max(1)],
            overlay_size: [self.overlay_size.0, self.overlay_size.1],
            overlay_scale: self.overlay_scale,
            source_is_buffer: u32::from(matches!(image, FrameImage::Buffer(_))),
            encode_srgb: u32::from(!is_srgb(passes.format)),
            pad: 0,
        };
        ctx.queue
            .write_buffer(&self.params, 0, bytemuck::bytes_of(&params));
        let overlay_view = self.overlay.create_view(&Default::default());
        let (scene_tex, scene_buf) = match image {
            FrameImage::Texture(t) => (t, &self.dummy_buffer),
            FrameImage::Buffer(b) => (backdrop.unwrap_or(&self.dummy_texture), b),
        };
        let layout = passes.composite.get_bind_group_layout(0);
        let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("viewer composite"),
            layout: &layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: self.params.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::TextureView(scene_tex),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: scene_buf.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: wgpu::BindingResource::TextureView(&overlay_view),
                },
            ],
        });
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("viewer composite"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: target,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        pass.set_pipeline(&passes.composite);
        pass.set_bind_group(0, &bind, &[]);
        pass.draw(0..3, 0..1);
        if let Some((buffer, count)) = &self.line_vertices {
            let layout = passes.lines.get_bind_group_layout(0);
            let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("viewer skeleton"),
                layout: &layout,
                entries: &[wgpu::BindGroupEntry {
                    binding: 0,
                    resource: self.line_uniform.as_entire_binding(),
                }],
            });
            pass.set_pipeline(&passes.lines);
            pass.set_bind_group(0, &bind, &[]);
            pass.set_vertex_buffer(0, buffer.slice(..));
            pass.draw(0..*count, 0..1);
        }
    }

    /// Records the passes into the window's surface texture.
    pub(crate) fn encode(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        image: FrameImage<'_>,
        backdrop: Option<&wgpu::TextureView>,
        size: (u32, u32),
        target: &wgpu::TextureView,
    ) {
        let passes = &self.surface_passes;
        self.encode_passes(ctx, encoder, passes, image, backdrop, size, target);
    }

    /// Records the same passes into an offscreen sRGB texture and its copy into a read-back
    /// buffer; [`Screenshot::read`] returns the image after the submission.
    pub(crate) fn screenshot(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        image: FrameImage<'_>,
        backdrop: Option<&wgpu::TextureView>,
        (width, height): (u32, u32),
    ) -> Result<Screenshot, String> {
        let format = wgpu::TextureFormat::Rgba8UnormSrgb;
        if is_srgb(self.surface_passes.format) != is_srgb(format) {
            return Err(format!(
                "screenshot: the surface format {:?} is not sRGB, the screenshot's is; one \
                 composite uniform cannot serve both",
                self.surface_passes.format
            ));
        }
        if self.screenshot_passes.is_none() {
            self.screenshot_passes = Some(Passes::new(&ctx.device, format));
        }
        let texture =
            ctx.device
                .create_texture(&texture_desc("viewer screenshot", width, height, true));
        let view = texture.create_view(&Default::default());
        if let Some(passes) = &self.screenshot_passes {
            let size = (width, height);
            self.encode_passes(ctx, encoder, passes, image, backdrop, size, &view);
        }
        let padded_row = (width * 4).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT)
            * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
        let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("viewer screenshot read-back"),
            size: u64::from(padded_row) * u64::from(height),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        encoder.copy_texture_to_buffer(
            texture.as_image_copy(),
            wgpu::TexelCopyBufferInfo {
                buffer: &buffer,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(padded_row),
                    rows_per_image: Some(height),
                },
            },
            wgpu::Extent3d {
                width,
                height,
                depth_or_array_layers: 1,
            },
        );
        Ok(Screenshot {
            buffer,
            padded_row,
            width,
            height,
        })
    }
}

/// A screenshot on its way back from the GPU.
pub(crate) struct Screenshot {
    buffer: wgpu::Buffer,
    padded_row: u32,
    width: u32,
    height: u32,
}

impl Screenshot {
    /// Waits for the copy and returns the image.
    pub(crate) fn read(self, ctx: &GpuContext) -> Result<RgbaImage, GpuError> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.buffer.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        ctx.device
            .poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: None,
            })
            .map_err(|e| GpuError::Poll(e.to_string()))?;
        rx.recv()
            .map_err(|e| GpuError::Map(e.to_string()))?
            .map_err(|e| GpuError::Map(e.to_string()))?;
        let row = (self.width * 4) as usize;
        let mut pixels = Vec::with_capacity(row * self.height as usize);
        {
            let view = self
                .buffer
                .get_mapped_range(..)
                .map_err(|e| GpuError::Map(e.to_string()))?;
            for y in 0..self.height as usize {
                let start = y * self.padded_row as usize;
                let line = view
                    .get(start..start + row)
                    .ok_or_else(|| GpuError::Map("screenshot read-back too short".into()))?;
                pixels.extend_from_slice(line);
            }
        }
        self.buffer.unmap();
        Ok(RgbaImage {
            width: self.width,
            height: self.height,
            pixels,
        })
    }
}

fn texture_desc(label: &str, width: u32, height: u32, target: bool) -> wgpu::TextureDescriptor<'_> {
    wgpu::TextureDescriptor {
        label: Some(label),
        size: wgpu::Extent3d {
            width,
            height,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba8UnormSrgb,
        usage: if target {
            wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC
        } else {
            wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST
        },
        view_formats: &[],
    }
}
