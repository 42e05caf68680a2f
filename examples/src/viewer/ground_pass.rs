//! The ground the built-in crowd walks on ([`Waves`]), drawn so that planted feet can be seen:
//! a square grid of [`CELLS`]² quads whose heights come from [`Waves::ground`] (the height
//! field foot placement reads), checkered in 1 m squares and lit by its normals.
//!
//! With the graphics pipeline the ground is drawn into the crowd's colour and depth targets
//! after the crowd, so that it hides what is below it (a foot sunk into it, with IK off). The
//! compute rasteriser has no depth target to share: the ground is drawn into targets of its
//! own, and the composite lays the crowd over it where the crowd's image is not background
//! (the crowd is cleared with alpha 0 there).

use glam::{Mat4, Vec3};
use sinew_gpu::context::GpuContext;
use sinew_gpu::render::{self, COLOR_FORMAT, DEPTH_FORMAT};
use sinew_jobs::ik::GroundQuery;
use wgpu::util::DeviceExt;

use crate::ground::Waves;

/// Quads per side of the grid.
pub const CELLS: u32 = 384;

/// The checker's two linear colours (before lighting): cells where `⌊x⌋ + ⌊z⌋` is even, odd.
pub const GROUND_COLORS: [[f32; 3]; 2] = [[0.20, 0.24, 0.17], [0.08, 0.10, 0.07]];

/// Lighting: `AMBIENT + (1 − AMBIENT) · max(n · LIGHT, 0)`, `LIGHT` normalised (towards the
/// crowd's default light, `-Shading::light_dir`).
const LIGHT: [f32; 3] = [0.4, 1.0, 0.6];
const AMBIENT: f32 = 0.55;

const GROUND_WGSL: &str = r#"
struct Ground { view_proj: mat4x4<f32>, light: vec4<f32>, even: vec4<f32>, odd: vec4<f32> }
@group(0) @binding(0) var<uniform> ground: Ground;

struct Out {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) normal: vec3<f32>,
}

@vertex
fn vs_ground(@location(0) p: vec3<f32>, @location(1) n: vec3<f32>) -> Out {
    var o: Out;
    o.clip = ground.view_proj * vec4<f32>(p, 1.0);
    o.world = p;
    o.normal = n;
    return o;
}

@fragment
fn fs_ground(i: Out) -> @location(0) vec4<f32> {
    let cell = vec2<i32>(floor(i.world.xz));
    let odd = ((cell.x + cell.y) & 1) != 0;
    let base = select(ground.even.rgb, ground.odd.rgb, odd);
    let lambert = max(dot(normalize(i.normal), ground.light.xyz), 0.0);
    let ambient = ground.light.w;
    return vec4<f32>(base * (ambient + (1.0 - ambient) * lambert), 1.0);
}
"#;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Uniform {
    view_proj: [[f32; 4]; 4],
    light: [f32; 4],
    even: [f32; 4],
    odd: [f32; 4],
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Vertex {
    position: [f32; 3],
    normal: [f32; 3],
}

/// Targets of the ground's own (for the compute rasteriser).
struct OwnTargets {
    size: (u32, u32),
    color: wgpu::TextureView,
    depth: wgpu::TextureView,
}

/// The ground's pipeline, mesh and (for the compute rasteriser) targets.
pub(crate) struct GroundPass {
    pipeline: wgpu::RenderPipeline,
    uniform: wgpu::Buffer,
    bind: wgpu::BindGroup,
    indices: wgpu::Buffer,
    index_count: u32,
    /// The grid's vertices and its (centre x, centre z, half side), when built.
    mesh: Option<(wgpu::Buffer, [f32; 3])>,
    own: Option<OwnTargets>,
}

impl GroundPass {
    pub(crate) fn new(ctx: &GpuContext) -> Self {
        let device = &ctx.device;
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("viewer ground"),
            source: wgpu::ShaderSource::Wgsl(GROUND_WGSL.into()),
        });
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("viewer ground"),
            layout: None,
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs_ground"),
                compilation_options: Default::default(),
                buffers: &[Some(wgpu::VertexBufferLayout {
                    array_stride: std::mem::size_of::<Vertex>() as u64,
                    step_mode: wgpu::VertexStepMode::Vertex,
                    attributes: &wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3],
                })],
            },
            // Seen from below too (a fly camera under the ground).
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: Some(render::depth_test()),
            multisample: wgpu::MultisampleState::default(),
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("fs_ground"),
                compilation_options: Default::default(),
                targets: &[Some(wgpu::ColorTargetState {
                    format: COLOR_FORMAT,
                    blend: None,
                    write_mask: wgpu::ColorWrites::ALL,
                })],
            }),
            multiview_mask: None,
            cache: None,
        });
        let uniform = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("viewer ground"),
            size: std::mem::size_of::<Uniform>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let layout = pipeline.get_bind_group_layout(0);
        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("viewer ground"),
            layout: &layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: uniform.as_entire_binding(),
            }],
        });
        // Two triangles per quad, counter-clockwise seen from above.
        let row = CELLS + 1;
        let indices: Vec<u32> = (0..CELLS)
            .flat_map(|j| (0..CELLS).map(move |i| (i, j)))
            .flat_map(|(i, j)| {
                let a = j * row + i;
                [a, a + row, a + 1, a + 1, a + row, a + row + 1]
            })
            .collect();
        let index_count = indices.len() as u32;
        Self {
            pipeline,
            uniform,
            bind,
            indices: device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("viewer ground indices"),
                contents: bytemuck::cast_slice(&indices),
                usage: wgpu::BufferUsages::INDEX,
            }),
            index_count,
            mesh: None,
            own: None,
        }
    }

    /// Centres the grid under `focus` (snapped to 8 m, so that it is rebuilt only when the
    /// view moves that far), `reach` metres out each way (rounded up to a power of two, at
    /// least 32 m).
    pub(crate) fn follow(&mut self, ctx: &GpuContext, focus: Vec3, reach: f32) {
        let half = reach.clamp(32.0, 4096.0).log2().ceil().exp2();
        let snap = |v: f32| (v / 8.0).round() * 8.0;
        let key = [snap(focus.x), snap(focus.z), half];
        if self.mesh.as_ref().is_some_and(|m| m.1 == key) || !key.iter().all(|v| v.is_finite()) {
            return;
        }
        let step = 2.0 * half / CELLS as f32;
        let vertices: Vec<Vertex> = (0..=CELLS)
            .flat_map(|j| (0..=CELLS).map(move |i| (i, j)))
            .map(|(i, j)| {
                let x = key[0] - half + i as f32 * step;
                let z = key[1] - half + j as f32 * step;
                let g = Waves.ground(x, z);
                Vertex {
                    position: [x, g.height, z],
                    normal: g.normal.to_array(),
                }
            })
            .collect();
        let buffer = ctx
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("viewer ground vertices"),
                contents: bytemuck::cast_slice(&vertices),
                usage: wgpu::BufferUsages::VERTEX,
            });
        self.mesh = Some((buffer, key));
    }

    /// The colour target of the ground's own (after [`GroundPass::encode_own`]).
    pub(crate) fn own_color(&self) -> Option<&wgpu::TextureView> {
        self.own.as_ref().map(|o| &o.color)
    }

    /// Records the ground over the crowd's colour and depth (graphics pipeline).
    pub(crate) fn encode_over(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        (color, depth): (&wgpu::TextureView, &wgpu::TextureView),
        view_proj: Mat4,
    ) {
        self.record(ctx, encoder, color, depth, None, view_proj);
    }

    /// Records the ground into its own targets of `size` (compute rasteriser), cleared to
    /// `clear` (linear RGB).
    pub(crate) fn encode_own(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        size: (u32, u32),
        clear: [f64; 3],
        view_proj: Mat4,
    ) {
        if self.own.as_ref().is_none_or(|o| o.size != size) {
            let target = |label, format, usage| {
                ctx.device
                    .create_texture(&wgpu::TextureDescriptor {
                        label: Some(label),
                        size: wgpu::Extent3d {
                            width: size.0.max(1),
                            height: size.1.max(1),
                            depth_or_array_layers: 1,
                        },
                        mip_level_count: 1,
                        sample_count: 1,
                        dimension: wgpu::TextureDimension::D2,
                        format,
                        usage,
                        view_formats: &[],
                    })
                    .create_view(&Default::default())
            };
            let color_usage =
                wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING;
            self.own = Some(OwnTargets {
                size,
                color: target("viewer ground colour", COLOR_FORMAT, color_usage),
                depth: target(
                    "viewer ground depth",
                    DEPTH_FORMAT,
                    wgpu::TextureUsages::RENDER_ATTACHMENT,
                ),
            });
        }
        if let Some(own) = &self.own {
            self.record(ctx, encoder, &own.color, &own.depth, Some(clear), view_proj);
        }
    }

    fn record(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        color: &wgpu::TextureView,
        depth: &wgpu::TextureView,
        clear: Option<[f64; 3]>,
        view_proj: Mat4,
    ) {
        let l = Vec3::from(LIGHT).normalize();
        let [even, odd] = GROUND_COLORS;
        let u = Uniform {
            view_proj: view_proj.to_cols_array_2d(),
            light: [l.x, l.y, l.z, AMBIENT],
            even: [even[0], even[1], even[2], 1.0],
            odd: [odd[0], odd[1], odd[2], 1.0],
        };
        ctx.queue
            .write_buffer(&self.uniform, 0, bytemuck::bytes_of(&u));
        let clear = clear.map(|[r, g, b]| wgpu::Color { r, g, b, a: 1.0 });
        let mut pass =
            render::begin_target_pass(encoder, "viewer ground", [color, depth], clear, true, None);
        if let Some((vertices, _)) = &self.mesh {
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &self.bind, &[]);
            pass.set_vertex_buffer(0, vertices.slice(..));
            pass.set_index_buffer(self.indices.slice(..), wgpu::IndexFormat::Uint32);
            pass.draw_indexed(0..self.index_count, 0, 0..1);
        }
    }
}
