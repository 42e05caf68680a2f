//! Baked animation textures on the GPU (seed `003_*`): upload a
//! [`sinew_jobs::bake_texture::BakedAnimationTexture`] once, then draw
//! instanced characters whose vertex shader `textureLoad`s the two frames around each
//! instance's playback time and lerps them, element by element, as float3x4 matrices.
//!
//! Per instance the GPU gets only a [`BakedInstance`]: world transform, clip index, phase and
//! speed (playback time = `phase + speed · global_time`), and optionally a previous clip to
//! cross-fade from (previous clip, phase, speed, fade start, fade duration; the two clips'
//! palettes are lerped per element by the fade weight). With the instance buffer uploaded
//! once, the CPU writes one small uniform per frame (global time and camera) and nothing per
//! character.
//!
//! - [`BakedAnimationGpu`]: the texture (RGBA32F or RGBA16F), the clip table and the mesh.
//! - [`draw::BakedRenderer`]: offscreen instanced draw (colour + depth), timings, read-back.
//! - [`compute::BakedComputeSkinner`]: the same shader code writing skinned world positions
//!   to a buffer (tests compare it with the CPU pipeline).
//!
//! ```no_run
//! use glam::{Affine3A, Mat4, Vec3};
//! use sinew_gpu::baked::draw::BakedRenderer;
//! use sinew_gpu::baked::{BakedAnimationGpu, BakedInstance, BakedTexelFormat};
//! use sinew_gpu::context::GpuContext;
//! use sinew_jobs::asset::AssetRegistry;
//! use sinew_jobs::bake_texture::{BakeTextureOptions, bake_animation_texture};
//! use sinew_fixtures::builtin;
//!
//! let ctx = GpuContext::new()?;
//! let c = builtin::bake_character(&AssetRegistry::new())?;
//! let options = BakeTextureOptions::new(30.0, ctx.limits.max_texture_dimension_2d);
//! let baked = bake_animation_texture(&c.rig, &c.mesh, &[c.idle.clone(), c.walk.clone()], &options)?;
//! let anim = BakedAnimationGpu::new(&ctx, &baked, &c.mesh, BakedTexelFormat::Rgba32Float)?;
//! let mut renderer = BakedRenderer::new(&ctx, &anim, 640, 360)?;
//! let instances: Vec<BakedInstance> = (0..100)
//!     .map(|i| BakedInstance::new(Affine3A::from_translation(Vec3::new(i as f32, 0.0, 0.0)), (i % 2) as u32, i as f32 * 0.1, 1.0))
//!     .collect();
//! renderer.set_instances(&ctx, &anim, &instances)?;
//! // Any camera: here a top-down orthographic view of x in [-1, 101], z in [-51, 51].
//! let view_proj = Mat4::from_cols_array(&[0.02, 0.0, 0.0, 0.0, 0.0, 0.0, -0.001, 0.0, 0.0, 0.02, 0.0, 0.0, -0.98, 0.0, 0.5, 1.0]);
//! renderer.render(&ctx, &anim, view_proj, 1.5)?; // global time 1.5 s
//! let rgba = renderer.read_pixels(&ctx)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

pub mod compute;
pub mod draw;

use crate::context::{GpuContext, GpuError};
use glam::Affine3A;
use sinew_jobs::asset::SkinnedMesh;
use sinew_jobs::bake_texture::{BakedAnimationTexture, BakedClip};
use wgpu::util::DeviceExt;

/// Marks "no previous clip" in [`BakedInstance::prev_clip`].
pub const NO_CLIP: u32 = u32::MAX;

/// Which texel format to upload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BakedTexelFormat {
    /// 32-bit floats (exact copy of the bake).
    Rgba32Float,
    /// Half floats: half the memory, error measured in `BENCHMARKS.md`.
    Rgba16Float,
}

impl BakedTexelFormat {
    /// Bytes per texel.
    pub fn bytes_per_texel(self) -> u64 {
        match self {
            Self::Rgba32Float => 16,
            Self::Rgba16Float => 8,
        }
    }

    fn wgpu(self) -> wgpu::TextureFormat {
        match self {
            Self::Rgba32Float => wgpu::TextureFormat::Rgba32Float,
            Self::Rgba16Float => wgpu::TextureFormat::Rgba16Float,
        }
    }
}

/// One instance of a baked crowd (96 bytes, `#[repr(C)]`, the layout the shaders read).
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct BakedInstance {
    /// Rows of the 3x4 world transform.
    pub world: [[f32; 4]; 3],
    /// Clip index in the clip table.
    pub clip: u32,
    /// Clip to cross-fade from, or [`NO_CLIP`].
    pub prev_clip: u32,
    /// Padding (zero).
    pub pad0: [u32; 2],
    /// Playback time at global time 0, seconds.
    pub phase: f32,
    /// Playback speed.
    pub speed: f32,
    /// Previous clip's phase.
    pub prev_phase: f32,
    /// Previous clip's speed.
    pub prev_speed: f32,
    /// Global time at which the fade starts.
    pub fade_start: f32,
    /// Fade length in seconds (0: no fade, the current clip alone).
    pub fade_duration: f32,
    /// Padding (zero).
    pub pad1: [f32; 2],
}

impl BakedInstance {
    /// An instance at `world` playing `clip` with `phase` and `speed`, no fade.
    pub fn new(world: Affine3A, clip: u32, phase: f32, speed: f32) -> Self {
        Self {
            world: world_rows(&world),
            clip,
            prev_clip: NO_CLIP,
            pad0: [0; 2],
            phase,
            speed,
            prev_phase: 0.0,
            prev_speed: 0.0,
            fade_start: 0.0,
            fade_duration: 0.0,
            pad1: [0.0; 2],
        }
    }

    /// Cross-fades from `prev_clip` (played with `prev_phase`, `prev_speed`) to this clip over
    /// `[fade_start, fade_start + fade_duration]` of global time.
    pub fn fading_from(
        mut self,
        prev_clip: u32,
        prev_phase: f32,
        prev_speed: f32,
        fade_start: f32,
        fade_duration: f32,
    ) -> Self {
        self.prev_clip = prev_clip;
        self.prev_phase = prev_phase;
        self.prev_speed = prev_speed;
        self.fade_start = fade_start;
        self.fade_duration = fade_duration;
        self
    }

    /// Playback time of the current clip at `global_time` (the shader's formula).
    pub fn playback_time(&self, global_time: f32) -> f32 {
        self.phase + self.speed * global_time
    }

    /// Sets the world transform.
    pub fn set_world(&mut self, world: &Affine3A) {
        self.world = world_rows(world);
    }
}

/// A baked-tier character of a [`LodCrowd`](sinew_jobs::lod::LodCrowd), drawn with no fade.
impl From<sinew_jobs::lod::LodInstance> for BakedInstance {
    fn from(i: sinew_jobs::lod::LodInstance) -> Self {
        Self::new(i.world, i.clip, i.phase, i.speed)
    }
}

/// Rows of an affine transform's 3x4 matrix.
pub fn world_rows(m: &Affine3A) -> [[f32; 4]; 3] {
    let (x, y, z, t) = (
        m.matrix3.x_axis,
        m.matrix3.y_axis,
        m.matrix3.z_axis,
        m.translation,
    );
    [
        [x.x, y.x, z.x, t.x],
        [x.y, y.y, z.y, t.y],
        [x.z, y.z, z.z, t.z],
    ]
}

/// One mesh vertex as the shaders read it (96 bytes): position and normal (`w` unused), two
/// sets of four joints and weights (the mesh's extra influences, zero when it has none).
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct BakedVertex {
    /// Bind-pose position.
    pub position: [f32; 4],
    /// Bind-pose normal.
    pub normal: [f32; 4],
    /// First four joints.
    pub joints0: [u32; 4],
    /// Their weights.
    pub weights0: [f32; 4],
    /// Influences five to eight.
    pub joints1: [u32; 4],
    /// Their weights.
    pub weights1: [f32; 4],
}

/// The vertices of a skinned mesh in the shaders' layout.
pub fn baked_vertices(mesh: &SkinnedMesh) -> Vec<BakedVertex> {
    (0..mesh.positions().len())
        .map(|v| {
            let p = mesh.positions()[v];
            let n = mesh.normals().get(v).copied().unwrap_or(glam::Vec3::Y);
            BakedVertex {
                position: [p.x, p.y, p.z, 1.0],
                normal: [n.x, n.y, n.z, 0.0],
                joints0: mesh.joints().get(v).copied().unwrap_or([0; 4]),
                weights0: mesh.weights().get(v).copied().unwrap_or([0.0; 4]),
                joints1: mesh.joints_extra().get(v).copied().unwrap_or([0; 4]),
                weights1: mesh.weights_extra().get(v).copied().unwrap_or([0.0; 4]),
            }
        })
        .collect()
}

/// The shaders' uniform block (96 bytes).
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub(crate) struct Globals {
    pub view_proj: [[f32; 4]; 4],
    pub light_dir: [f32; 4],
    pub time: f32,
    pub tex_width: u32,
    pub vertex_count: u32,
    pub instance_count: u32,
}

/// A baked animation texture, its clip table and its mesh, uploaded.
#[derive(Debug)]
pub struct BakedAnimationGpu {
    /// The animation texture.
    pub texture: wgpu::Texture,
    /// A view of it.
    pub view: wgpu::TextureView,
    /// The clip table (storage buffer of [`BakedClip`]).
    pub clip_table: wgpu::Buffer,
    /// Mesh vertices ([`BakedVertex`]), usable as vertex and storage buffer.
    pub vertices: wgpu::Buffer,
    /// Triangle indices (u32).
    pub indices: wgpu::Buffer,
    /// The format uploaded.
    pub format: BakedTexelFormat,
    /// Texture width in texels.
    pub width: u32,
    /// Texture height in texels.
    pub height: u32,
    /// The clip table, as uploaded.
    pub clips: Vec<BakedClip>,
    /// Vertex count.
    pub vertex_count: u32,
    /// Index count.
    pub index_count: u32,
    /// Palette entries per frame.
    pub bone_count: u32,
}

impl BakedAnimationGpu {
    /// Uploads the texture (in `format`), the clip table and the mesh.
    ///
    /// # Errors
    /// [`GpuError::InvalidInput`] when the mesh is not the one baked (content hash or bone
    /// count) or has no vertices; [`GpuError::TooLarge`] when the texture exceeds the device's
    /// `max_texture_dimension_2d` or a buffer its limits.
    pub fn new(
        ctx: &GpuContext,
        baked: &BakedAnimationTexture,
        mesh: &SkinnedMesh,
        format: BakedTexelFormat,
    ) -> Result<Self, GpuError> {
        if mesh.content_hash() != baked.mesh_hash || mesh.bone_count() != baked.bone_count as usize
        {
            return Err(GpuError::InvalidInput {
                what: format!(
                    "baked animation: mesh '{}' ({} bones) is not the mesh the texture was baked for ({} bones)",
                    mesh.name(),
                    mesh.bone_count(),
                    baked.bone_count
                ),
            });
        }
        if mesh.positions().is_empty() || mesh.indices().is_empty() {
            return Err(GpuError::InvalidInput {
                what: format!(
                    "baked animation: mesh '{}' has no vertices or triangles",
                    mesh.name()
                ),
            });
        }
        let max = ctx.limits.max_texture_dimension_2d;
        if baked.width > max || baked.height > max || baked.width == 0 || baked.height == 0 {
            return Err(GpuError::TooLarge {
                what: format!(
                    "baked animation texture {}x{} (device max {max} per side)",
                    baked.width, baked.height
                ),
                size: baked.texture_bytes(format.bytes_per_texel()),
                limit: u64::from(max) * u64::from(max) * format.bytes_per_texel(),
            });
        }
        if baked.texels.len() != baked.width as usize * baked.height as usize {
            return Err(GpuError::InvalidInput {
                what: format!(
                    "baked animation: {} texels for a {}x{} texture",
                    baked.texels.len(),
                    baked.width,
                    baked.height
                ),
            });
        }
        let size = wgpu::Extent3d {
            width: baked.width,
            height: baked.height,
            depth_or_array_layers: 1,
        };
        let texture = ctx.device.create_texture(&wgpu::TextureDescriptor {
            label: Some("baked animation texture"),
            size,
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: format.wgpu(),
            usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        });
        let half;
        let bytes: &[u8] = match format {
            BakedTexelFormat::Rgba32Float => bytemuck::cast_slice(&baked.texels),
            BakedTexelFormat::Rgba16Float => {
                half = baked.texels_f16();
                bytemuck::cast_slice(&half)
            }
        };
        let row_bytes = u64::from(baked.width) * format.bytes_per_texel();
        let row_bytes = u32::try_from(row_bytes).map_err(|_| GpuError::TooLarge {
            what: "baked animation texture row".into(),
            size: row_bytes,
            limit: u64::from(u32::MAX),
        })?;
        ctx.queue.write_texture(
            wgpu::TexelCopyTextureInfo {
                texture: &texture,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            bytes,
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(row_bytes),
                rows_per_image: Some(baked.height),
            },
            size,
        );
        let view = texture.create_view(&wgpu::TextureViewDescriptor::default());
        let clip_table = ctx.storage_init(
            "baked clip table",
            bytemuck::cast_slice(&baked.clips),
            wgpu::BufferUsages::empty(),
        )?;
        let verts = baked_vertices(mesh);
        let vertices = ctx.storage_init(
            "baked vertices",
            bytemuck::cast_slice(&verts),
            wgpu::BufferUsages::VERTEX,
        )?;
        let indices = ctx
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("baked indices"),
                contents: bytemuck::cast_slice(mesh.indices()),
                usage: wgpu::BufferUsages::INDEX,
            });
        Ok(Self {
            texture,
            view,
            clip_table,
            vertices,
            indices,
            format,
            width: baked.width,
            height: baked.height,
            clips: baked.clips.clone(),
            vertex_count: verts.len() as u32,
            index_count: mesh.indices().len() as u32,
            bone_count: baked.bone_count,
        })
    }

    /// GPU bytes of the animation texture (padding included).
    pub fn texture_bytes(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height) * self.format.bytes_per_texel()
    }

    /// GPU bytes of one clip's frames in this texture.
    pub fn clip_bytes(&self, clip: usize) -> Option<u64> {
        self.clips
            .get(clip)
            .map(|c| c.bytes(self.format.bytes_per_texel()))
    }

    /// Checks that every instance names clips of the table and has finite numbers.
    ///
    /// # Errors
    /// [`GpuError::InvalidInput`] naming the first bad instance.
    pub fn validate_instances(&self, instances: &[BakedInstance]) -> Result<(), GpuError> {
        let n = self.clips.len() as u32;
        for (i, inst) in instances.iter().enumerate() {
            let finite = inst.world.iter().flatten().all(|x| x.is_finite())
                && [
                    inst.phase,
                    inst.speed,
                    inst.prev_phase,
                    inst.prev_speed,
                    inst.fade_start,
                    inst.fade_duration,
                ]
                .iter()
                .all(|x| x.is_finite());
            if inst.clip >= n || (inst.prev_clip != NO_CLIP && inst.prev_clip >= n) || !finite {
                return Err(GpuError::InvalidInput {
                    what: format!(
                        "baked instance {i}: clip {} / previous clip {} (table has {n}) or a non-finite transform, time or fade",
                        inst.clip, inst.prev_clip
                    ),
                });
            }
        }
        Ok(())
    }

    pub(crate) fn globals(&self, view_proj: glam::Mat4, time: f32, instance_count: u32) -> Globals {
        Globals {
            view_proj: view_proj.to_cols_array_2d(),
            light_dir: [0.4, 0.8, 0.45, 0.0],
            time,
            tex_width: self.width,
            vertex_count: self.vertex_count,
            instance_count,
        }
    }
}

/// Bind group layout 0: globals (uniform), animation texture, clip table, then `extra`.
pub(crate) fn common_layout(
    ctx: &GpuContext,
    extra: &[wgpu::BindGroupLayoutEntry],
) -> wgpu::BindGroupLayout {
    let vis =
        wgpu::ShaderStages::VERTEX | wgpu::ShaderStages::FRAGMENT | wgpu::ShaderStages::COMPUTE;
    let mut entries = vec![
        wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: vis,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        },
        wgpu::BindGroupLayoutEntry {
            binding: 1,
            visibility: wgpu::ShaderStages::VERTEX | wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Texture {
                sample_type: wgpu::TextureSampleType::Float { filterable: false },
                view_dimension: wgpu::TextureViewDimension::D2,
                multisampled: false,
            },
            count: None,
        },
        storage_entry(
            2,
            wgpu::ShaderStages::VERTEX | wgpu::ShaderStages::COMPUTE,
            true,
        ),
    ];
    entries.extend_from_slice(extra);
    ctx.device
        .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("baked layout"),
            entries: &entries,
        })
}

/// A uniform buffer for one [`Globals`], written each frame.
pub(crate) fn globals_buffer(ctx: &GpuContext, label: &str) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: std::mem::size_of::<Globals>() as u64,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

/// Bind group 0 of a [`common_layout`]: `uniform`, `anim`'s texture and clip table, then
/// `extra`.
pub(crate) fn common_bind_group(
    ctx: &GpuContext,
    label: &str,
    layout: &wgpu::BindGroupLayout,
    uniform: &wgpu::Buffer,
    anim: &BakedAnimationGpu,
    extra: &[wgpu::BindGroupEntry<'_>],
) -> wgpu::BindGroup {
    let mut entries = vec![
        wgpu::BindGroupEntry {
            binding: 0,
            resource: uniform.as_entire_binding(),
        },
        wgpu::BindGroupEntry {
            binding: 1,
            resource: wgpu::BindingResource::TextureView(&anim.view),
        },
        wgpu::BindGroupEntry {
            binding: 2,
            resource: anim.clip_table.as_entire_binding(),
        },
    ];
    entries.extend_from_slice(extra);
    ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(label),
        layout,
        entries: &entries,
    })
}

pub(crate) fn storage_entry(
    binding: u32,
    visibility: wgpu::ShaderStages,
    read_only: bool,
) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

/// The shader source: the common part followed by `body`.
pub(crate) fn shader(ctx: &GpuContext, label: &str, body: &str) -> wgpu::ShaderModule {
    let source = format!("{}\n{}", include_str!("../shaders/baked_common.wgsl"), body);
    ctx.device
        .create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(label),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        })
}

/// Blocks until `submission` is done.
pub(crate) fn wait(
    ctx: &GpuContext,
    submission: Option<wgpu::SubmissionIndex>,
) -> Result<(), GpuError> {
    ctx.device
        .poll(wgpu::PollType::Wait {
            submission_index: submission,
            timeout: None,
        })
        .map(|_| ())
        .map_err(|e| GpuError::Poll(e.to_string()))
}

/// Maps `buffer` (`size` bytes) for reading, blocking, and returns a copy of its bytes.
pub(crate) fn read_buffer(
    ctx: &GpuContext,
    buffer: &wgpu::Buffer,
    size: u64,
) -> Result<Vec<u8>, GpuError> {
    let (tx, rx) = std::sync::mpsc::channel();
    buffer.map_async(wgpu::MapMode::Read, 0..size, move |r| {
        let _ = tx.send(r);
    });
    wait(ctx, None)?;
    rx.recv()
        .map_err(|e| GpuError::Map(e.to_string()))?
        .map_err(|e| GpuError::Map(e.to_string()))?;
    let out = buffer
        .get_mapped_range(0..size)
        .map_err(|e| GpuError::Map(e.to_string()))?
        .to_vec();
    buffer.unmap();
    Ok(out)
}
