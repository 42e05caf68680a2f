//! Offscreen rendering of a skinned crowd to an image (and PNG).
//!
//! [`CrowdRenderer`] draws every instance of one skinned mesh in one instanced, indexed draw:
//! the vertex shader (`skinning.wgsl`, `vs_main`) blends four palette matrices per vertex, the
//! palette being a storage buffer of float3x4 entries (a [`PaletteRing`] buffer, say) and each
//! [`Instance`] naming its first palette entry and its world transform. Shading is lambert plus
//! ambient with one directional light. The target is `Rgba8UnormSrgb` colour with a
//! `Depth32Float` depth buffer; [`CrowdRenderer::render`] reads it back as an [`RgbaImage`].
//!
//! The vertex path uses the mesh's first four influences (those with the largest weights);
//! a second influence set, when the mesh has one, is used only by the compute path
//! ([`crate::skin_pass`]). Like the compute path, it morphs each vertex by its instance's
//! active targets first ([`CrowdRenderer::set_morphs`]; deltas in a storage buffer, indexed by
//! `instance_index`) and skins by the mesh's `SkinningMethod` (linear or dual quaternion).

use std::path::Path;

use glam::{Affine3A, Mat4, Vec2, Vec3, Vec4};
use sinew_jobs::asset::{ActiveMorph, SkinnedMesh, SkinningMethod};
use wgpu::util::DeviceExt;

use crate::context::{GpuContext, GpuError};
use crate::palette_ring::{ENTRY_BYTES, PaletteRing};
use crate::skin_pass::{MorphInstances, SKINNING_WGSL, morph_delta_buffer};

/// The colour target format.
pub const COLOR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;
/// The depth target format.
pub const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

/// Per-instance data: first palette entry and world transform (rows of a 3x4 matrix).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Instance {
    /// Index of the instance's first palette entry (`FrameSlot::palette_offset`).
    pub palette_base: u32,
    /// Padding (keeps the rows 16-byte aligned).
    pub pad: [u32; 3],
    /// The world transform's three rows (`x' = row0 · (x, y, z, 1)`, ...).
    pub world_rows: [[f32; 4]; 3],
}

impl Instance {
    /// An instance at `world` using palette entries from `palette_base` on.
    pub fn new(palette_base: u32, world: Affine3A) -> Self {
        let m = Mat4::from(world);
        let r = |i: usize| m.row(i).to_array();
        Self {
            palette_base,
            pad: [0; 3],
            world_rows: [r(0), r(1), r(2)],
        }
    }

    /// The world transform.
    pub fn world(&self) -> Affine3A {
        let [r0, r1, r2] = self.world_rows;
        Affine3A::from_mat4(
            Mat4::from_cols_array_2d(&[r0, r1, r2, [0.0, 0.0, 0.0, 1.0]]).transpose(),
        )
    }
}

/// A perspective camera looking at a point (right-handed, Y up, depth 0..1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    /// Eye position.
    pub eye: Vec3,
    /// Point looked at.
    pub target: Vec3,
    /// Up direction.
    pub up: Vec3,
    /// Vertical field of view in radians.
    pub fov_y: f32,
    /// Near plane distance.
    pub near: f32,
    /// Far plane distance.
    pub far: f32,
}

impl Camera {
    /// A camera at `eye` looking at `target`, Y up, 45° vertical field of view, planes at
    /// 0.1 and 1000.
    pub fn look_at(eye: Vec3, target: Vec3) -> Self {
        Self {
            eye,
            target,
            up: Vec3::Y,
            fov_y: std::f32::consts::FRAC_PI_4,
            near: 0.1,
            far: 1000.0,
        }
    }

    /// Projection × view for a target of `width / height` aspect ratio.
    pub fn view_proj(&self, aspect: f32) -> Mat4 {
        // Right-handed perspective with depth 0..1 (wgpu's clip space).
        let h = 1.0 / (0.5 * self.fov_y).tan();
        let r = self.far / (self.near - self.far);
        let proj = Mat4::from_cols(
            Vec4::new(h / aspect, 0.0, 0.0, 0.0),
            Vec4::new(0.0, h, 0.0, 0.0),
            Vec4::new(0.0, 0.0, r, -1.0),
            Vec4::new(0.0, 0.0, r * self.near, 0.0),
        );
        // Right-handed look-at: the camera looks down its −Z.
        let f = (self.target - self.eye).normalize_or_zero();
        let s = f.cross(self.up).normalize_or_zero();
        let u = s.cross(f);
        let view = Mat4::from_cols(
            Vec4::new(s.x, u.x, -f.x, 0.0),
            Vec4::new(s.y, u.y, -f.y, 0.0),
            Vec4::new(s.z, u.z, -f.z, 0.0),
            Vec4::new(-s.dot(self.eye), -u.dot(self.eye), f.dot(self.eye), 1.0),
        );
        proj * view
    }

    /// Pixel coordinates (x right, y down, pixel centres at .5) of world point `p` on a
    /// `width × height` target, or `None` behind the eye.
    pub fn project(&self, p: Vec3, width: u32, height: u32) -> Option<Vec2> {
        let clip = self.view_proj(width as f32 / height.max(1) as f32) * Vec4::from((p, 1.0));
        if clip.w <= 0.0 {
            return None;
        }
        let ndc = clip.truncate() / clip.w;
        Some(Vec2::new(
            (ndc.x + 1.0) * 0.5 * width as f32,
            (1.0 - ndc.y) * 0.5 * height as f32,
        ))
    }
}

/// An RGBA8 image (sRGB-encoded), rows top to bottom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RgbaImage {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width × height × 4` bytes.
    pub pixels: Vec<u8>,
}

impl RgbaImage {
    /// The pixel at (x, y), or `None` outside.
    pub fn pixel(&self, x: u32, y: u32) -> Option<[u8; 4]> {
        if x >= self.width || y >= self.height {
            return None;
        }
        let i = ((y * self.width + x) * 4) as usize;
        self.pixels
            .get(i..i + 4)
            .and_then(|s| <[u8; 4]>::try_from(s).ok())
    }

    /// Writes a PNG file.
    ///
    /// # Errors
    /// [`GpuError::Image`] when the file cannot be created or encoded.
    pub fn save_png(&self, path: impl AsRef<Path>) -> Result<(), GpuError> {
        let path = path.as_ref();
        let err = |e: &dyn std::fmt::Display| GpuError::Image(format!("{}: {e}", path.display()));
        let file = std::fs::File::create(path).map_err(|e| err(&e))?;
        let mut enc = png::Encoder::new(std::io::BufWriter::new(file), self.width, self.height);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
        let mut writer = enc.write_header().map_err(|e| err(&e))?;
        writer.write_image_data(&self.pixels).map_err(|e| err(&e))?;
        writer.finish().map_err(|e| err(&e))
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct RenderVertex {
    position: [f32; 3],
    normal: [f32; 3],
    joints: [u32; 4],
    weights: [f32; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Globals {
    view_proj: [[f32; 4]; 4],
    light_dir: [f32; 4],
    albedo_ambient: [f32; 4],
    /// Dual quaternion (1) or linear (0), vertex count, whether instances have morph ranges.
    skin: [u32; 4],
}

/// Shading parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shading {
    /// Direction the light travels (normalised when used).
    pub light_dir: Vec3,
    /// Linear RGB albedo.
    pub albedo: Vec3,
    /// Ambient fraction in `[0, 1]`.
    pub ambient: f32,
    /// Linear RGBA clear colour.
    pub clear: [f64; 4],
}

impl Default for Shading {
    fn default() -> Self {
        Self {
            light_dir: Vec3::new(-0.4, -1.0, -0.6),
            albedo: Vec3::new(0.8, 0.55, 0.35),
            ambient: 0.25,
            clear: [0.02, 0.02, 0.03, 1.0],
        }
    }
}

/// Draws a crowd of one skinned mesh offscreen; see the [module documentation](self).
#[derive(Debug)]
pub struct CrowdRenderer {
    pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    vertices: wgpu::Buffer,
    indices: wgpu::Buffer,
    index_count: u32,
    bone_count: u32,
    instances: wgpu::Buffer,
    instance_count: u32,
    morph_deltas: wgpu::Buffer,
    morph_targets: u32,
    morphs: Option<MorphInstances>,
    no_morphs: MorphInstances,
    skinning: SkinningMethod,
    vertex_count: u32,
    globals: wgpu::Buffer,
    color: wgpu::Texture,
    color_view: wgpu::TextureView,
    depth_view: wgpu::TextureView,
    readback: wgpu::Buffer,
    padded_row: u32,
    width: u32,
    height: u32,
    /// Light, colours, clear colour.
    pub shading: Shading,
}

impl CrowdRenderer {
    /// Uploads `mesh` and creates `width × height` targets.
    ///
    /// # Errors
    /// [`GpuError::InvalidInput`] for a zero or oversized target or a mesh without triangles;
    /// [`GpuError::TooLarge`] for a mesh over the buffer limit.
    pub fn new(
        ctx: &GpuContext,
        mesh: &SkinnedMesh,
        width: u32,
        height: u32,
    ) -> Result<Self, GpuError> {
        let max = ctx.limits.max_texture_dimension_2d;
        if width == 0 || height == 0 || width > max || height > max {
            return Err(GpuError::InvalidInput {
                what: format!("CrowdRenderer: target {width}×{height} (1..={max} per side)"),
            });
        }
        if mesh.indices().is_empty() {
            return Err(GpuError::InvalidInput {
                what: format!("CrowdRenderer: mesh '{}' has no triangles", mesh.name()),
            });
        }
        let device = &ctx.device;
        let normals = mesh.normals();
        let verts: Vec<RenderVertex> = mesh
            .positions()
            .iter()
            .enumerate()
            .map(|(i, p)| RenderVertex {
                position: p.to_array(),
                normal: normals.get(i).map_or([0.0, 1.0, 0.0], |n| n.to_array()),
                joints: mesh.joints().get(i).copied().unwrap_or([0; 4]),
                weights: mesh
                    .weights()
                    .get(i)
                    .copied()
                    .unwrap_or([1.0, 0.0, 0.0, 0.0]),
            })
            .collect();
        let vbytes: &[u8] = bytemuck::cast_slice(&verts);
        let ibytes: &[u8] = bytemuck::cast_slice(mesh.indices());
        for (what, size) in [
            ("mesh vertices", vbytes.len()),
            ("mesh indices", ibytes.len()),
        ] {
            if size as u64 > ctx.limits.max_buffer_size {
                return Err(GpuError::TooLarge {
                    what: what.into(),
                    size: size as u64,
                    limit: ctx.limits.max_buffer_size,
                });
            }
        }
        let vertices = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("crowd mesh vertices"),
            contents: vbytes,
            usage: wgpu::BufferUsages::VERTEX,
        });
        let indices = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("crowd mesh indices"),
            contents: ibytes,
            usage: wgpu::BufferUsages::INDEX,
        });
        let index_count =
            u32::try_from(mesh.indices().len()).map_err(|_| GpuError::InvalidInput {
                what: "CrowdRenderer: index count over u32".into(),
            })?;
        let bone_count = u32::try_from(mesh.bone_count()).map_err(|_| GpuError::InvalidInput {
            what: "CrowdRenderer: bone count over u32".into(),
        })?;
        let globals = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("crowd globals"),
            size: std::mem::size_of::<Globals>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let instances = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("crowd instances"),
            size: std::mem::size_of::<Instance>() as u64 * 64,
            usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("skinning.wgsl"),
            source: wgpu::ShaderSource::Wgsl(SKINNING_WGSL.into()),
        });
        let vertex_attrs = wgpu::vertex_attr_array![
            0 => Float32x3, 1 => Float32x3, 2 => Uint32x4, 3 => Float32x4
        ];
        let instance_attrs = wgpu::vertex_attr_array![
            4 => Uint32, 5 => Float32x4, 6 => Float32x4, 7 => Float32x4
        ];
        // `Uint32` at offset 0 and the rows at 16, 32, 48.
        let instance_attrs = [
            instance_attrs[0],
            wgpu::VertexAttribute {
                offset: 16,
                ..instance_attrs[1]
            },
            wgpu::VertexAttribute {
                offset: 32,
                ..instance_attrs[2]
            },
            wgpu::VertexAttribute {
                offset: 48,
                ..instance_attrs[3]
            },
        ];
        let pipeline = instanced_mesh_pipeline(
            device,
            "crowd",
            None,
            &module,
            [
                (std::mem::size_of::<RenderVertex>(), &vertex_attrs),
                (std::mem::size_of::<Instance>(), &instance_attrs),
            ],
            COLOR_FORMAT,
        );
        let layout = pipeline.get_bind_group_layout(0);
        let size = wgpu::Extent3d {
            width,
            height,
            depth_or_array_layers: 1,
        };
        let color = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("crowd colour"),
            size,
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: COLOR_FORMAT,
            // Sampled by a window's composite pass (`crowd_frames::FrameImage::Texture`).
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT
                | wgpu::TextureUsages::COPY_SRC
                | wgpu::TextureUsages::TEXTURE_BINDING,
            view_formats: &[],
        });
        let depth = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("crowd depth"),
            size,
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: DEPTH_FORMAT,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            view_formats: &[],
        });
        let padded_row = (width * 4).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT)
            * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("crowd read-back"),
            size: u64::from(padded_row) * u64::from(height),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let vertex_count =
            u32::try_from(mesh.positions().len()).map_err(|_| GpuError::InvalidInput {
                what: "CrowdRenderer: vertex count over u32".into(),
            })?;
        let morph_targets =
            u32::try_from(mesh.morph_targets().len()).map_err(|_| GpuError::InvalidInput {
                what: "CrowdRenderer: morph target count over u32".into(),
            })?;
        Ok(Self {
            pipeline,
            layout,
            vertices,
            indices,
            index_count,
            bone_count,
            instances,
            instance_count: 0,
            morph_deltas: morph_delta_buffer(ctx, &[mesh])?,
            morph_targets,
            morphs: None,
            no_morphs: MorphInstances::none(ctx),
            skinning: mesh.skinning(),
            vertex_count,
            globals,
            color_view: color.create_view(&wgpu::TextureViewDescriptor::default()),
            color,
            depth_view: depth.create_view(&wgpu::TextureViewDescriptor::default()),
            readback,
            padded_row,
            width,
            height,
            shading: Shading::default(),
        })
    }

    /// Target width.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Target height.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The colour target ([`COLOR_FORMAT`]), for a renderer that draws over this one's pass.
    pub fn color_view(&self) -> &wgpu::TextureView {
        &self.color_view
    }

    /// The depth target ([`DEPTH_FORMAT`], stored by [`CrowdRenderer::encode`]), for a
    /// renderer that draws over this one's pass with depth testing.
    pub fn depth_view(&self) -> &wgpu::TextureView {
        &self.depth_view
    }

    /// Instances drawn by [`CrowdRenderer::encode`].
    pub fn instance_count(&self) -> u32 {
        self.instance_count
    }

    /// Sets each instance's active morph targets (one list per instance, in instance order:
    /// `MorphWeights::active` of its entity); until then, or after
    /// [`CrowdRenderer::clear_morphs`], instances draw the bind shape. The next
    /// [`CrowdRenderer::set_instances`] must upload as many instances.
    ///
    /// # Errors
    /// As [`MorphInstances::new`].
    pub fn set_morphs(
        &mut self,
        ctx: &GpuContext,
        lists: &[&[ActiveMorph]],
    ) -> Result<(), GpuError> {
        MorphInstances::set(&mut self.morphs, ctx, self.morph_targets, lists)
    }

    /// Drops the morph lists: instances draw the bind shape.
    pub fn clear_morphs(&mut self) {
        self.morphs = None;
    }

    /// Uploads the instances (growing the instance buffer when needed).
    ///
    /// # Errors
    /// [`GpuError::InvalidInput`] for more than `u32::MAX` instances, or another count than
    /// the morph lists of [`CrowdRenderer::set_morphs`]; [`GpuError::TooLarge`] past the
    /// buffer limit.
    pub fn set_instances(
        &mut self,
        ctx: &GpuContext,
        instances: &[Instance],
    ) -> Result<(), GpuError> {
        let count = u32::try_from(instances.len()).map_err(|_| GpuError::InvalidInput {
            what: format!("CrowdRenderer: {} instances (over u32)", instances.len()),
        })?;
        if let Some(m) = &self.morphs
            && m.instance_count() != count
        {
            return Err(GpuError::InvalidInput {
                what: format!(
                    "CrowdRenderer: {count} instances but morph lists for {}",
                    m.instance_count()
                ),
            });
        }
        let bytes: &[u8] = bytemuck::cast_slice(instances);
        if bytes.len() as u64 > self.instances.size() {
            let size = (bytes.len() as u64).saturating_mul(3) / 2;
            if size > ctx.limits.max_buffer_size {
                return Err(GpuError::TooLarge {
                    what: "crowd instance buffer".into(),
                    size,
                    limit: ctx.limits.max_buffer_size,
                });
            }
            self.instances = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("crowd instances"),
                size: size.div_ceil(4) * 4,
                usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
        }
        if !bytes.is_empty() {
            ctx.queue.write_buffer(&self.instances, 0, bytes);
        }
        self.instance_count = count;
        Ok(())
    }

    /// Checks that every instance's palette lies inside a palette of `palette_entries`.
    ///
    /// # Errors
    /// [`GpuError::InvalidInput`] naming the first instance that reads past the end.
    pub fn check_palette_bounds(
        &self,
        instances: &[Instance],
        palette_entries: u64,
    ) -> Result<(), GpuError> {
        if let Some((i, inst)) = instances.iter().enumerate().find(|(_, inst)| {
            u64::from(inst.palette_base) + u64::from(self.bone_count) > palette_entries
        }) {
            return Err(GpuError::InvalidInput {
                what: format!(
                    "CrowdRenderer: instance {i} reads palette entries {}..{} of {palette_entries}",
                    inst.palette_base,
                    u64::from(inst.palette_base) + u64::from(self.bone_count)
                ),
            });
        }
        Ok(())
    }

    /// Records the render pass (clear, one instanced draw of the instances set by
    /// [`CrowdRenderer::set_instances`]) reading palettes from `palette`, and queues the
    /// camera/shading uniforms. `timestamp_writes` brackets the pass.
    pub fn encode(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        palette: &wgpu::Buffer,
        camera: &Camera,
        timestamp_writes: Option<wgpu::RenderPassTimestampWrites<'_>>,
    ) {
        let s = &self.shading;
        let globals = Globals {
            view_proj: camera
                .view_proj(self.width as f32 / self.height as f32)
                .to_cols_array_2d(),
            light_dir: Vec4::from((s.light_dir.normalize_or_zero(), 0.0)).to_array(),
            albedo_ambient: Vec4::from((s.albedo, s.ambient.clamp(0.0, 1.0))).to_array(),
            skin: [
                u32::from(self.skinning == SkinningMethod::DualQuaternion),
                self.vertex_count,
                u32::from(self.morphs.is_some() && self.morph_targets > 0),
                0,
            ],
        };
        ctx.queue
            .write_buffer(&self.globals, 0, bytemuck::bytes_of(&globals));
        let morphs = self.morphs.as_ref().unwrap_or(&self.no_morphs);
        let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("crowd bind group"),
            layout: &self.layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: palette.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: self.globals.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 6,
                    resource: self.morph_deltas.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 7,
                    resource: morphs.lists().as_entire_binding(),
                },
            ],
        });
        let [r, g, b, a] = s.clear;
        // The depth is kept, so that another renderer can draw into the same target after this
        // pass (the baked crowd of `crowd --lod`, the viewer's ground).
        let mut pass = begin_target_pass(
            encoder,
            "crowd",
            [&self.color_view, &self.depth_view],
            Some(wgpu::Color { r, g, b, a }),
            true,
            timestamp_writes,
        );
        if self.instance_count == 0 {
            return;
        }
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.set_vertex_buffer(0, self.vertices.slice(..));
        pass.set_vertex_buffer(1, self.instances.slice(..));
        pass.set_index_buffer(self.indices.slice(..), wgpu::IndexFormat::Uint32);
        pass.draw_indexed(0..self.index_count, 0, 0..self.instance_count);
    }

    /// Records the copy of the colour target into the read-back buffer.
    pub fn encode_readback(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.copy_texture_to_buffer(
            wgpu::TexelCopyTextureInfo {
                texture: &self.color,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            wgpu::TexelCopyBufferInfo {
                buffer: &self.readback,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(self.padded_row),
                    rows_per_image: Some(self.height),
                },
            },
            wgpu::Extent3d {
                width: self.width,
                height: self.height,
                depth_or_array_layers: 1,
            },
        );
    }

    /// Waits for `submission` (which must include [`CrowdRenderer::encode_readback`]) and
    /// returns the image.
    ///
    /// # Errors
    /// [`GpuError::Map`] / [`GpuError::Poll`].
    pub fn read_image(
        &self,
        ctx: &GpuContext,
        submission: wgpu::SubmissionIndex,
    ) -> Result<RgbaImage, GpuError> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.readback.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        ctx.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(submission),
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
                .readback
                .get_mapped_range(..)
                .map_err(|e| GpuError::Map(e.to_string()))?;
            for y in 0..self.height as usize {
                let start = y * self.padded_row as usize;
                let line = view.get(start..start + row).ok_or_else(|| {
                    GpuError::Map("CrowdRenderer: read-back shorter than the image".into())
                })?;
                pixels.extend_from_slice(line);
            }
        }
        self.readback.unmap();
        Ok(RgbaImage {
            width: self.width,
            height: self.height,
            pixels,
        })
    }

    /// Draws `instances` with the palettes in `palette` (a storage buffer of float3x4
    /// entries) as seen by `camera`, waits, and returns the image.
    ///
    /// # Errors
    /// [`GpuError::InvalidInput`] when an instance reads past the end of `palette`; as
    /// [`CrowdRenderer::set_instances`] and [`CrowdRenderer::read_image`].
    pub fn render(
        &mut self,
        ctx: &GpuContext,
        palette: &wgpu::Buffer,
        instances: &[Instance],
        camera: &Camera,
    ) -> Result<RgbaImage, GpuError> {
        PaletteFrame::render_buffer(self, ctx, palette, instances, camera)
    }

    /// [`CrowdRenderer::render`] with this frame's buffer of `ring` (after
    /// [`PaletteRing::write`]); reports the submission to the ring so it re-maps the buffer.
    ///
    /// # Errors
    /// As [`CrowdRenderer::render`]; [`GpuError::InvalidInput`] when the ring holds no buffer.
    pub fn render_ring(
        &mut self,
        ctx: &GpuContext,
        ring: &mut PaletteRing,
        instances: &[Instance],
        camera: &Camera,
    ) -> Result<RgbaImage, GpuError> {
        PaletteFrame::render_ring(self, ctx, ring, instances, camera)
    }
}

impl PaletteFrame for CrowdRenderer {
    const NAME: &'static str = "CrowdRenderer";
    const ENCODER_LABEL: &'static str = "crowd render";

    fn check_palette_bounds(
        &self,
        instances: &[Instance],
        palette_entries: u64,
    ) -> Result<(), GpuError> {
        CrowdRenderer::check_palette_bounds(self, instances, palette_entries)
    }

    fn set_instances(&mut self, ctx: &GpuContext, instances: &[Instance]) -> Result<(), GpuError> {
        CrowdRenderer::set_instances(self, ctx, instances)
    }

    fn encode_frame(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        palette: &wgpu::Buffer,
        camera: &Camera,
    ) {
        self.encode(ctx, encoder, palette, camera, None);
        self.encode_readback(encoder);
    }

    fn read_image(
        &self,
        ctx: &GpuContext,
        submission: wgpu::SubmissionIndex,
    ) -> Result<RgbaImage, GpuError> {
        CrowdRenderer::read_image(self, ctx, submission)
    }
}

/// What the blocking `render` / `render_ring` of a palette-driven crowd renderer
/// ([`CrowdRenderer`], [`crate::raster::ComputeCrowdRenderer`]) are made of; they are written
/// once here, as provided methods.
pub(crate) trait PaletteFrame {
    /// The renderer's name in error messages.
    const NAME: &'static str;
    /// The label of the command encoder of one frame.
    const ENCODER_LABEL: &'static str;

    /// Checks every instance's palette against a palette of `palette_entries`.
    fn check_palette_bounds(
        &self,
        instances: &[Instance],
        palette_entries: u64,
    ) -> Result<(), GpuError>;

    /// Uploads `instances`.
    fn set_instances(&mut self, ctx: &GpuContext, instances: &[Instance]) -> Result<(), GpuError>;

    /// Records the frame (without timestamps) and the copy into the read-back buffer.
    fn encode_frame(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        palette: &wgpu::Buffer,
        camera: &Camera,
    );

    /// Waits for `submission` and returns the image.
    fn read_image(
        &self,
        ctx: &GpuContext,
        submission: wgpu::SubmissionIndex,
    ) -> Result<RgbaImage, GpuError>;

    /// Draws `instances` with the whole of `palette`, waits, and returns the image.
    fn render_buffer(
        &mut self,
        ctx: &GpuContext,
        palette: &wgpu::Buffer,
        instances: &[Instance],
        camera: &Camera,
    ) -> Result<RgbaImage, GpuError> {
        let (image, _) = self.render_frame(
            ctx,
            palette,
            palette.size() / ENTRY_BYTES,
            instances,
            camera,
        )?;
        Ok(image)
    }

    /// Draws with this frame's buffer of `ring` and reports the submission to the ring.
    fn render_ring(
        &mut self,
        ctx: &GpuContext,
        ring: &mut PaletteRing,
        instances: &[Instance],
        camera: &Camera,
    ) -> Result<RgbaImage, GpuError> {
        let palette = ring
            .buffer()
            .cloned()
            .ok_or_else(|| GpuError::InvalidInput {
                what: format!("{}::render_ring: the ring has no buffer", Self::NAME),
            })?;
        let (image, sub) =
            self.render_frame(ctx, &palette, ring.len() as u64, instances, camera)?;
        ring.submitted(Some(sub));
        Ok(image)
    }

    /// One blocking frame with a palette of `palette_entries`: the image and its submission.
    fn render_frame(
        &mut self,
        ctx: &GpuContext,
        palette: &wgpu::Buffer,
        palette_entries: u64,
        instances: &[Instance],
        camera: &Camera,
    ) -> Result<(RgbaImage, wgpu::SubmissionIndex), GpuError> {
        ctx.check_device()?;
        // The whole buffer is bound: an engine's buffer over the binding limit is an error
        // here, not a validation failure inside wgpu.
        ctx.check_storage_size(palette.size(), || {
            format!("{}: palette buffer bound as storage", Self::NAME)
        })?;
        self.check_palette_bounds(instances, palette_entries)?;
        self.set_instances(ctx, instances)?;
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some(Self::ENCODER_LABEL),
            });
        self.encode_frame(ctx, &mut encoder, palette, camera);
        let sub = ctx.queue.submit([encoder.finish()]);
        // The read-back waits for this submission; keep a clone for the ring.
        let image = self.read_image(ctx, sub.clone())?;
        Ok((image, sub))
    }
}

/// The depth test of every pass over the crowd targets: [`DEPTH_FORMAT`], written, `Less`. A
/// pipeline that draws into [`CrowdRenderer::depth_view`] after the crowd takes it.
pub fn depth_test() -> wgpu::DepthStencilState {
    wgpu::DepthStencilState {
        format: DEPTH_FORMAT,
        depth_write_enabled: Some(true),
        depth_compare: Some(wgpu::CompareFunction::Less),
        stencil: wgpu::StencilState::default(),
        bias: wgpu::DepthBiasState::default(),
    }
}

/// Starts a pass over a colour and a depth target: cleared (`clear`: the colour; depth to the
/// far plane) or loading what an earlier pass drew (`None`), the colour stored, the depth
/// stored where `keep_depth` (for a pass after this one) and discarded otherwise. The crowd
/// renderers begin their passes with it, and so can a pass that draws over theirs.
pub fn begin_target_pass<'e>(
    encoder: &'e mut wgpu::CommandEncoder,
    label: &str,
    [color, depth]: [&wgpu::TextureView; 2],
    clear: Option<wgpu::Color>,
    keep_depth: bool,
    timestamp_writes: Option<wgpu::RenderPassTimestampWrites<'_>>,
) -> wgpu::RenderPass<'e> {
    let (color_load, depth_load) = match clear {
        Some(c) => (wgpu::LoadOp::Clear(c), wgpu::LoadOp::Clear(1.0)),
        None => (wgpu::LoadOp::Load, wgpu::LoadOp::Load),
    };
    let depth_store = if keep_depth {
        wgpu::StoreOp::Store
    } else {
        wgpu::StoreOp::Discard
    };
    encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some(label),
        color_attachments: &[Some(wgpu::RenderPassColorAttachment {
            view: color,
            depth_slice: None,
            resolve_target: None,
            ops: wgpu::Operations {
                load: color_load,
                store: wgpu::StoreOp::Store,
            },
        })],
        depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
            view: depth,
            depth_ops: Some(wgpu::Operations {
                load: depth_load,
                store: depth_store,
            }),
            stencil_ops: None,
        }),
        timestamp_writes,
        occlusion_query_set: None,
        multiview_mask: None,
    })
}

/// The render pipeline both instanced crowd renderers use ([`CrowdRenderer`] and
/// [`crate::baked::BakedRenderer`]): `vs_main`/`fs_main` of `module`, one per-vertex and one
/// per-instance buffer (`(stride, attributes)` each), triangle lists with back faces culled,
/// [`DEPTH_FORMAT`] depth with `Less`, one unblended colour target of `color_format`.
pub(crate) fn instanced_mesh_pipeline(
    device: &wgpu::Device,
    label: &str,
    layout: Option<&wgpu::PipelineLayout>,
    module: &wgpu::ShaderModule,
    [
        (vertex_stride, vertex_attrs),
        (instance_stride, instance_attrs),
    ]: [(usize, &[wgpu::VertexAttribute]); 2],
    color_format: wgpu::TextureFormat,
) -> wgpu::RenderPipeline {
    device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some(label),
        layout,
        vertex: wgpu::VertexState {
            module,
            entry_point: Some("vs_main"),
            compilation_options: Default::default(),
            buffers: &[
                Some(wgpu::VertexBufferLayout {
                    array_stride: vertex_stride as u64,
                    step_mode: wgpu::VertexStepMode::Vertex,
                    attributes: vertex_attrs,
                }),
                Some(wgpu::VertexBufferLayout {
                    array_stride: instance_stride as u64,
                    step_mode: wgpu::VertexStepMode::Instance,
                    attributes: instance_attrs,
                }),
            ],
        },
        primitive: wgpu::PrimitiveState {
            topology: wgpu::PrimitiveTopology::TriangleList,
            front_face: wgpu::FrontFace::Ccw,
            cull_mode: Some(wgpu::Face::Back),
            ..Default::default()
        },
        depth_stencil: Some(depth_test()),
        multisample: wgpu::MultisampleState::default(),
        fragment: Some(wgpu::FragmentState {
            module,
            entry_point: Some("fs_main"),
            compilation_options: Default::default(),
            targets: &[Some(wgpu::ColorTargetState {
                format: color_format,
                blend: None,
                write_mask: wgpu::ColorWrites::ALL,
            })],
        }),
        multiview_mask: None,
        cache: None,
    })
}
