//! The compute rasteriser with palette skinning (the crowd of [`crate::render::CrowdRenderer`]).

use glam::Vec3;
use sinew_jobs::asset::{ActiveMorph, Rig, SkinnedMesh, SkinningMethod};
use sinew_jobs::component::SkinRef;
use sinew_jobs::j7_propagate::propagate_one;
use sinew_jobs::j8_remap_cache::RemapTable;
use sinew_jobs::j9_skinning::skin_entity;

use super::{
    ComputeRasterOptions, FrameLook, LodLevel, RASTER_SKIN_DQ_WGSL, RASTER_SKIN_LINEAR_WGSL,
    RASTER_WGSL, RasterCore, RasterTimestamps, bind_pose_sphere,
};
use crate::context::{GpuContext, GpuError};
use crate::palette_ring::PaletteRing;
use crate::render::{Camera, Instance, PaletteFrame, RgbaImage, Shading};
use crate::skin_pass::{MorphInstances, SKINNING_WGSL, morph_delta_buffer};

const LABEL: &str = "ComputeCrowdRenderer";

/// Draws a crowd of one skinned mesh with palettes (a [`PaletteRing`] buffer, say) through the
/// compute rasteriser (see the [module documentation](super)). Same inputs and image as
/// [`crate::render::CrowdRenderer`]: [`Instance`]s (palette base + world transform), a
/// [`Camera`], [`Shading`]; the image is sRGB-encoded RGBA8.
///
/// Vertices blend both of the mesh's influence sets (as the compute skinning pass does; the
/// hardware path's vertex shader uses the first four influences), with weights quantised to
/// 16 bits and renormalised, by the mesh's [`SkinningMethod`] (`skinning.wgsl`'s blend or its
/// `dqs_*` functions). Like the other skinning paths, each vertex is first morphed by its
/// instance's active targets ([`ComputeCrowdRenderer::set_morphs`]).
#[derive(Debug)]
pub struct ComputeCrowdRenderer {
    core: RasterCore,
    group0_layout: wgpu::BindGroupLayout,
    bone_count: u32,
    morph_deltas: wgpu::Buffer,
    morph_targets: u32,
    morphs: Option<MorphInstances>,
    no_morphs: MorphInstances,
    /// Light, colours, clear colour.
    pub shading: Shading,
}

impl ComputeCrowdRenderer {
    /// Uploads `mesh` and creates the `width × height` visibility and colour buffers. Whole
    /// instances are culled with [`mesh_bounding_sphere`] at twice its radius
    /// ([`ComputeCrowdRenderer::options_mut`] changes it).
    ///
    /// # Errors
    /// [`GpuError::InvalidInput`] for a zero or oversized target, a mesh without triangles or
    /// with more than [`super::RASTER_MAX_BONES`] bones; [`GpuError::TooLarge`] for buffers
    /// over the device's limits.
    pub fn new(
        ctx: &GpuContext,
        mesh: &SkinnedMesh,
        width: u32,
        height: u32,
    ) -> Result<Self, GpuError> {
        Self::with_lods(ctx, &[LodLevel { mesh, error: 0.0 }], width, height)
    }

    /// [`ComputeCrowdRenderer::new`] with a LOD chain (`levels[0]` the full mesh, the others
    /// simplified versions sharing its bones); each instance draws the coarsest level whose
    /// error is at most [`ComputeRasterOptions::lod_pixel_error`] pixels on screen.
    ///
    /// # Errors
    /// As [`ComputeCrowdRenderer::new`]; [`GpuError::InvalidInput`] for a chain
    /// [`super::cluster_chain`] refuses.
    pub fn with_lods(
        ctx: &GpuContext,
        levels: &[LodLevel<'_>],
        width: u32,
        height: u32,
    ) -> Result<Self, GpuError> {
        let Some(mesh) = levels.first().map(|l| l.mesh) else {
            return Err(GpuError::InvalidInput {
                what: format!("{LABEL}: empty LOD chain"),
            });
        };
        if mesh.indices().len() < 3 {
            return Err(GpuError::InvalidInput {
                what: format!("{LABEL}: mesh '{}' has no triangles", mesh.name()),
            });
        }
        let bone_count = u32::try_from(mesh.bone_count()).map_err(|_| GpuError::InvalidInput {
            what: format!("{LABEL}: bone count over u32"),
        })?;
        let morph_targets =
            u32::try_from(mesh.morph_targets().len()).map_err(|_| GpuError::InvalidInput {
                what: format!("{LABEL}: morph target count over u32"),
            })?;
        // skinning.wgsl's palette, morph deltas and morph lists.
        let group0_layout = ctx
            .device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some("raster palette"),
                entries: &[
                    super::storage_entry(0, true),
                    super::storage_entry(6, true),
                    super::storage_entry(7, true),
                ],
            });
        let source = palette_source(mesh.skinning());
        let options = ComputeRasterOptions::with_cull_sphere(
            mesh_bounding_sphere(mesh).map(|(c, r)| (c, 2.0 * r)),
        );
        let meshes: Vec<&SkinnedMesh> = levels.iter().map(|l| l.mesh).collect();
        let morph_deltas = morph_delta_buffer(ctx, &meshes)?;
        let core = RasterCore::new(
            ctx,
            LABEL,
            source,
            &group0_layout,
            levels,
            (width, height),
            options,
        )?;
        Ok(Self {
            core,
            group0_layout,
            bone_count,
            morph_deltas,
            morph_targets,
            morphs: None,
            no_morphs: MorphInstances::none(ctx),
            shading: Shading::default(),
        })
    }

    /// Target width.
    pub fn width(&self) -> u32 {
        self.core.width
    }

    /// Target height.
    pub fn height(&self) -> u32 {
        self.core.height
    }

    /// Instances drawn by [`ComputeCrowdRenderer::encode`].
    pub fn instance_count(&self) -> u32 {
        self.core.instance_count
    }

    /// The rasteriser's options.
    pub fn options(&self) -> &ComputeRasterOptions {
        &self.core.options
    }

    /// The rasteriser's options, to change (they apply from the next encoded frame).
    pub fn options_mut(&mut self) -> &mut ComputeRasterOptions {
        &mut self.core.options
    }

    /// Sets each instance's active morph targets (one list per instance, in instance order:
    /// `MorphWeights::active` of its entity), as [`crate::render::CrowdRenderer::set_morphs`]
    /// does; until then, or after [`ComputeCrowdRenderer::clear_morphs`], instances draw the
    /// bind shape. The next [`ComputeCrowdRenderer::set_instances`] must upload as many
    /// instances.
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
    /// [`GpuError::InvalidInput`] for more than `u32::MAX` instances or another count than the
    /// morph lists of [`ComputeCrowdRenderer::set_morphs`], [`GpuError::TooLarge`] past the
    /// storage-buffer limit.
    pub fn set_instances(
        &mut self,
        ctx: &GpuContext,
        instances: &[Instance],
    ) -> Result<(), GpuError> {
        if let Some(m) = &self.morphs
            && m.instance_count() as usize != instances.len()
        {
            return Err(GpuError::InvalidInput {
                what: format!(
                    "{LABEL}: {} instances but morph lists for {}",
                    instances.len(),
                    m.instance_count()
                ),
            });
        }
        self.core
            .set_instances(ctx, LABEL, bytemuck::cast_slice(instances), instances.len())
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
        let bones = u64::from(self.bone_count);
        if let Some((i, inst)) = instances
            .iter()
            .enumerate()
            .find(|(_, inst)| u64::from(inst.palette_base) + bones > palette_entries)
        {
            return Err(GpuError::InvalidInput {
                what: format!(
                    "{LABEL}: instance {i} reads palette entries {}..{} of {palette_entries}",
                    inst.palette_base,
                    u64::from(inst.palette_base) + bones
                ),
            });
        }
        Ok(())
    }

    /// Records one frame (raster, big triangles, resolve) of the instances set by
    /// [`ComputeCrowdRenderer::set_instances`] reading palettes from `palette`, and queues
    /// the uniforms. `timestamps` receives [`super::TIMESTAMPS_PER_FRAME`] queries.
    pub fn encode(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        palette: &wgpu::Buffer,
        camera: &Camera,
        timestamps: Option<RasterTimestamps<'_>>,
    ) {
        let s = &self.shading;
        let [r, g, b, a] = s.clear;
        let look = FrameLook {
            view_proj: camera.view_proj(self.core.width as f32 / self.core.height as f32),
            light_to: -s.light_dir.normalize_or_zero(),
            ambient: s.ambient,
            clear: [r as f32, g as f32, b as f32, a as f32],
            albedo: s.albedo,
            srgb: true,
            material_bits: 0,
            bone_count: self.bone_count,
            morph: self.morphs.is_some() && self.morph_targets > 0,
        };
        let params = self.core.params(&look);
        let group0 = self.group0(ctx, palette);
        self.core.encode(ctx, encoder, &group0, &params, timestamps);
    }

    /// Group 0: the palette, the morph deltas and this frame's morph lists.
    fn group0(&self, ctx: &GpuContext, palette: &wgpu::Buffer) -> wgpu::BindGroup {
        let morphs = self.morphs.as_ref().unwrap_or(&self.no_morphs);
        ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("raster palette"),
            layout: &self.group0_layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: palette.as_entire_binding(),
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
        })
    }

    /// Instances drawn at each LOD level by the last frame encoded with
    /// [`ComputeRasterOptions::count_levels`] on (blocking; after that frame's submission).
    ///
    /// # Errors
    /// [`GpuError::Map`], [`GpuError::Poll`].
    pub fn level_counts(&self, ctx: &GpuContext) -> Result<Vec<u32>, GpuError> {
        self.core.read_level_counts(ctx)
    }

    /// The resolved image: one `u32` per pixel (RGBA8, sRGB-encoded), rows top to bottom,
    /// for a pass that shows it (a window's composite).
    pub fn color_buffer(&self) -> &wgpu::Buffer {
        self.core.color_buffer()
    }

    /// Records the copy of the image into the read-back buffer.
    pub fn encode_readback(&self, encoder: &mut wgpu::CommandEncoder) {
        self.core.encode_readback(encoder);
    }

    /// Waits for `submission` (which must include [`ComputeCrowdRenderer::encode_readback`])
    /// and returns the image.
    ///
    /// # Errors
    /// [`GpuError::Map`] / [`GpuError::Poll`].
    pub fn read_image(
        &self,
        ctx: &GpuContext,
        submission: wgpu::SubmissionIndex,
    ) -> Result<RgbaImage, GpuError> {
        let pixels = self.core.read_pixels(ctx, Some(submission))?;
        Ok(RgbaImage {
            width: self.core.width,
            height: self.core.height,
            pixels,
        })
    }

    /// Draws `instances` with the palettes in `palette` as seen by `camera`, waits, and
    /// returns the image.
    ///
    /// # Errors
    /// [`GpuError::InvalidInput`] when an instance reads past the end of `palette`; as
    /// [`ComputeCrowdRenderer::set_instances`] and [`ComputeCrowdRenderer::read_image`].
    pub fn render(
        &mut self,
        ctx: &GpuContext,
        palette: &wgpu::Buffer,
        instances: &[Instance],
        camera: &Camera,
    ) -> Result<RgbaImage, GpuError> {
        PaletteFrame::render_buffer(self, ctx, palette, instances, camera)
    }

    /// [`ComputeCrowdRenderer::render`] with this frame's buffer of `ring` (after
    /// [`PaletteRing::write`]); reports the submission to the ring.
    ///
    /// # Errors
    /// As [`ComputeCrowdRenderer::render`]; [`GpuError::InvalidInput`] when the ring holds no
    /// buffer.
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

impl PaletteFrame for ComputeCrowdRenderer {
    const NAME: &'static str = LABEL;
    const ENCODER_LABEL: &'static str = "compute raster";

    fn check_palette_bounds(
        &self,
        instances: &[Instance],
        palette_entries: u64,
    ) -> Result<(), GpuError> {
        ComputeCrowdRenderer::check_palette_bounds(self, instances, palette_entries)
    }

    fn set_instances(&mut self, ctx: &GpuContext, instances: &[Instance]) -> Result<(), GpuError> {
        ComputeCrowdRenderer::set_instances(self, ctx, instances)
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
        ComputeCrowdRenderer::read_image(self, ctx, submission)
    }
}

/// The bounding sphere of `skin`'s mesh skinned at `rig`'s rest pose, in the instances' space
/// (the palette job 9 writes for that pose: `entityToRoot · model · inverseBind`), grown by
/// the farthest any vertex moves with every morph target at a weight in −1..=1 (measured in
/// the mesh's space and scaled by the palette's largest axis scale). Unlike
/// [`mesh_bounding_sphere`] it bounds meshes whose positions are not in model space: a
/// quantized skinned mesh (`KHR_mesh_quantization`) keeps integer grid positions that its
/// inverse bind matrices scale back. `None` for a mesh without vertices or a non-finite pose.
pub fn rest_pose_bounding_sphere(rig: &Rig, skin: &SkinRef) -> Option<(Vec3, f32)> {
    let mesh = &skin.mesh;
    let mut model = vec![glam::Affine3A::IDENTITY; rig.bone_count()];
    propagate_one(rig.parent_indices(), rig.rest_pose(), &mut model);
    let mut palette = vec![[0.0f32; 12]; mesh.bone_count()];
    skin_entity(&model, skin, &RemapTable::build(rig, mesh), &mut palette);
    let (positions, _) = mesh.skin_cpu(&palette);
    if positions.iter().any(|p| !p.is_finite()) {
        return None;
    }
    let (centre, radius) = bind_pose_sphere(&positions, 1.0)?;
    let scale = palette
        .iter()
        .map(|m| {
            let axis = |k: usize| Vec3::new(m[3 * k], m[3 * k + 1], m[3 * k + 2]).length();
            axis(0).max(axis(1)).max(axis(2))
        })
        .fold(0.0f32, f32::max);
    let (_, bind_radius) = bind_pose_sphere(mesh.positions(), 1.0)?;
    let reach = mesh_bounding_sphere(mesh).map_or(0.0, |(_, r)| r - bind_radius);
    Some((centre, radius + reach * scale))
}

/// The raster passes' WGSL for palette crowds of meshes skinned by `skinning`: skinning.wgsl
/// (palette fetch, morphs, `dqs_*`), the palette source, the rasteriser and the method.
fn palette_source(skinning: SkinningMethod) -> String {
    let skin = match skinning {
        SkinningMethod::Linear => RASTER_SKIN_LINEAR_WGSL,
        SkinningMethod::DualQuaternion => RASTER_SKIN_DQ_WGSL,
    };
    format!(
        "{SKINNING_WGSL}\n{}\n{RASTER_WGSL}\n{skin}",
        include_str!("../shaders/raster_palette.wgsl")
    )
}

/// The bind pose's bounding sphere of `mesh` (centre, radius) in the mesh's own space, for
/// [`ComputeRasterOptions::cull_sphere`] of meshes whose positions are in model space (see
/// [`rest_pose_bounding_sphere`] for those that are not), grown by the farthest any vertex moves with every
/// morph target at a weight in −1..=1 (`max_v Σ_k |Δ_k(v)|`).
pub fn mesh_bounding_sphere(mesh: &SkinnedMesh) -> Option<(Vec3, f32)> {
    let (centre, radius) = bind_pose_sphere(mesh.positions(), 1.0)?;
    let morph = mesh.morph_targets();
    let reach = (0..mesh.positions().len())
        .map(|v| {
            (0..morph.len())
                .filter_map(|k| morph.target_positions(k).get(v))
                .map(|d| d.length())
                .sum::<f32>()
        })
        .fold(0.0f32, f32::max);
    Some((centre, radius + reach))
}

#[cfg(test)]
mod tests {
    //! The raster pass's skinning (`source_prepare` + `raster_skin`, the functions `cs_raster`
    //! calls, on the renderer's own buffers and bindings) against the CPU reference
    //! `SkinnedMesh::skin_cpu_morphed` placed by the instance's world transform: every cluster
    //! vertex of every instance, positions within 1e-5 of the skinned mesh's bounding-box
    //! diagonal, normals within 4e-3 (they travel as 10-bit snorm). Weights are multiples of
    //! 1/65535 summing to 1, so their unorm16 packing is exact and both sides blend the same
    //! weights.
    #![allow(clippy::unwrap_used, clippy::panic)]

    use super::*;
    use crate::raster::{LodLevel, cluster_chain};
    use crate::skin_pass::read_buffer_f32;
    use glam::{Affine3A, EulerRot, Mat3, Mat4, Quat};
    use sinew_jobs::asset::{RawMorphTarget, RawSkinnedMesh, RawVertexInfluences};
    use wgpu::util::DeviceExt;

    const BONES: usize = 5;
    const INSTANCES: usize = 3;

    /// A 9 × 7 grid with up to seven influences per vertex and three morph targets.
    fn grid(skinning: SkinningMethod) -> SkinnedMesh {
        let (cols, rows) = (9usize, 7usize);
        let mut positions = Vec::new();
        let mut normals = Vec::new();
        let mut influences = Vec::new();
        for r in 0..rows {
            for c in 0..cols {
                let (x, y) = (c as f32 / 3.0 - 1.3, r as f32 / 3.0 - 1.0);
                positions.push(Vec3::new(x, y, 0.2 * (x * y).sin()));
                normals.push(Vec3::new(0.2 * x, -0.1 * y, 1.0).normalize());
                // k influences with integer shares of 65535.
                let k = 1 + (r * cols + c) % 7;
                let shares: Vec<u32> = (0..k).map(|i| 1000 + 997 * i as u32).collect();
                let rest = 65535 - shares[1..].iter().sum::<u32>();
                let list = (0..k)
                    .map(|i| {
                        let a = if i == 0 { rest } else { shares[i] };
                        (((c + 2 * i) % BONES) as u16, a as f32 / 65535.0)
                    })
                    .collect();
                influences.push(RawVertexInfluences(list));
            }
        }
        let nv = positions.len();
        let target = |k: usize| RawMorphTarget {
            name: format!("t{k}"),
            positions: (0..nv)
                .map(|v| {
                    let f = (v * (k + 2)) as f32;
                    Vec3::new((0.3 * f).sin(), (0.5 * f).cos(), 0.4 * (0.2 * f).sin()) * 0.15
                })
                .collect(),
            normals: (0..nv)
                .map(|v| Vec3::new(0.05 * (v as f32).cos(), 0.0, 0.1 * k as f32))
                .collect(),
        };
        let mut indices = Vec::new();
        for r in 0..rows - 1 {
            for c in 0..cols - 1 {
                let i = (r * cols + c) as u32;
                let up = i + cols as u32;
                indices.extend([i, i + 1, up + 1, i, up + 1, up]);
            }
        }
        RawSkinnedMesh {
            name: "grid".into(),
            bones: (0..BONES)
                .map(|b| {
                    let t = Vec3::new(b as f32 * 0.5 - 1.0, 0.1 * b as f32, 0.0);
                    (format!("b{b}"), Mat4::from_translation(-t))
                })
                .collect(),
            positions,
            normals,
            influences,
            indices,
            morph_targets: (0..3).map(target).collect(),
            morph_weights: vec![0.0; 3],
            skinning,
        }
        .bake()
        .unwrap()
    }

    /// Palette entries with rotation, non-uniform scale, shear and translation.
    fn palette(phase: f32) -> Vec<[f32; 12]> {
        (0..BONES)
            .map(|k| {
                let f = k as f32 + phase;
                let mut l = Mat3::from_quat(Quat::from_euler(EulerRot::XYZ, 0.5 * f, -0.8 * f, f))
                    * Mat3::from_diagonal(Vec3::new(1.0 + 0.1 * f, 0.9, 1.2));
                l.y_axis += l.x_axis * 0.1;
                Affine3A::from_mat3_translation(l, Vec3::new(0.2 * f, -0.3 * f, 0.1))
                    .to_cols_array()
            })
            .collect()
    }

    const PROBE_WGSL: &str = r#"
@group(3) @binding(0) var<storage, read_write> probe_out: array<vec4<f32>>;

// One workgroup per instance: the raster pass's bone set-up, then every cluster vertex skinned.
@compute @workgroup_size(256)
fn cs_probe(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let instance = group.x;
    source_prepare(instance, lid);
    workgroupBarrier();
    let n = arrayLength(&probe_out) / (2u * raster_params.instance_count);
    for (var v = lid; v < n; v = v + RASTER_GROUP) {
        let s = raster_skin(v);
        probe_out[2u * (instance * n + v)] = vec4<f32>(s.position, 1.0);
        probe_out[2u * (instance * n + v) + 1u] = vec4<f32>(s.normal, 0.0);
    }
}
"#;

    /// Every cluster vertex of every instance, skinned by the raster pass's functions:
    /// (world position, world normal) per instance.
    fn probe(
        ctx: &GpuContext,
        r: &ComputeCrowdRenderer,
        skinning: SkinningMethod,
        palette: &wgpu::Buffer,
        vertices: usize,
    ) -> Vec<Vec<(Vec3, Vec3)>> {
        let device = &ctx.device;
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("raster probe"),
            source: wgpu::ShaderSource::Wgsl(
                format!("{}\n{PROBE_WGSL}", palette_source(skinning)).into(),
            ),
        });
        let out_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("probe out"),
            entries: &[super::super::storage_entry(0, false)],
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("probe"),
            bind_group_layouts: &[
                Some(&r.group0_layout),
                Some(&r.core.pipelines.group1_layout),
                None,
                Some(&out_layout),
            ],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("cs_probe"),
            layout: Some(&layout),
            module: &module,
            entry_point: Some("cs_probe"),
            compilation_options: Default::default(),
            cache: None,
        });
        let size = (vertices * INSTANCES * 32) as u64;
        let out = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("probe out"),
            size,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let out_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("probe out"),
            layout: &out_layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: out.as_entire_binding(),
            }],
        });
        // encode() queues this frame's uniforms and group 0 as a real frame does.
        let mut encoder = device.create_command_encoder(&Default::default());
        let camera = Camera::look_at(Vec3::new(0.0, 0.0, 6.0), Vec3::ZERO);
        r.encode(ctx, &mut encoder, palette, &camera, None);
        let group0 = r.group0(ctx, palette);
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &group0, &[]);
            pass.set_bind_group(1, r.core.group1.as_ref().unwrap(), &[]);
            pass.set_bind_group(3, &out_group, &[]);
            pass.dispatch_workgroups(INSTANCES as u32, 1, 1);
        }
        let floats = read_buffer_f32(ctx, encoder, &out, size).unwrap();
        floats
            .chunks_exact(vertices * 8)
            .map(|inst| {
                inst.chunks_exact(8)
                    .map(|v| {
                        (
                            Vec3::new(v[0], v[1], v[2]),
                            Vec3::new(v[4], v[5], v[6]).normalize_or_zero(),
                        )
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn raster_skinning_with_morphs_matches_the_cpu_for_lbs_and_dqs() {
        let ctx = match GpuContext::new() {
            Ok(c) => c,
            Err(GpuError::NoAdapter { .. }) => return,
            Err(e) => panic!("adapter exists but the device failed: {e}"),
        };
        let a = |target, weight| ActiveMorph { target, weight };
        let lists = [vec![a(0, 0.8), a(2, -0.4)], vec![], vec![a(1, 1.0)]];
        let palettes: Vec<Vec<[f32; 12]>> =
            (0..INSTANCES).map(|i| palette(0.4 * i as f32)).collect();
        let flat: Vec<[f32; 12]> = palettes.concat();
        let palette_buf = ctx
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("palette"),
                contents: bytemuck::cast_slice(&flat),
                usage: wgpu::BufferUsages::STORAGE,
            });
        let worlds = [
            Affine3A::IDENTITY,
            Affine3A::from_scale_rotation_translation(
                Vec3::new(1.5, 0.7, 1.1),
                Quat::from_rotation_y(0.6),
                Vec3::new(1.0, -2.0, 0.5),
            ),
            Affine3A::from_rotation_translation(Quat::from_rotation_z(2.0), Vec3::X * 3.0),
        ];
        let instances: Vec<Instance> = worlds
            .iter()
            .enumerate()
            .map(|(i, w)| Instance::new((i * BONES) as u32, *w))
            .collect();
        for skinning in [SkinningMethod::Linear, SkinningMethod::DualQuaternion] {
            let mesh = grid(skinning);
            let chain = cluster_chain(&[LodLevel {
                mesh: &mesh,
                error: 0.0,
            }])
            .unwrap();
            assert_eq!(chain.vertex_stride, 3, "uses the second influence set");
            let vertices = chain.sources.len();
            let mut r = ComputeCrowdRenderer::new(&ctx, &mesh, 64, 64).unwrap();
            let refs: Vec<&[ActiveMorph]> = lists.iter().map(Vec::as_slice).collect();
            for morphed in [true, false] {
                if morphed {
                    r.set_morphs(&ctx, &refs).unwrap();
                } else {
                    r.clear_morphs();
                }
                r.set_instances(&ctx, &instances).unwrap();
                let gpu = probe(&ctx, &r, skinning, &palette_buf, vertices);
                let mut moved = 0.0f32;
                for i in 0..INSTANCES {
                    let active: &[ActiveMorph] = if morphed { &lists[i] } else { &[] };
                    let (p, n) = mesh.skin_cpu_morphed(&palettes[i], active);
                    let (bind, _) = mesh.skin_cpu(&palettes[i]);
                    let place = |v: &[Vec3]| -> Vec<Vec3> {
                        v.iter().map(|p| worlds[i].transform_point3(*p)).collect()
                    };
                    let (p, bind) = (place(&p), place(&bind));
                    let (lo, hi) = p
                        .iter()
                        .fold((Vec3::MAX, Vec3::MIN), |(l, h), q| (l.min(*q), h.max(*q)));
                    let d = (hi - lo).length();
                    let (mut pe, mut ne) = (0.0f32, 0.0f32);
                    for (v, (gp, gn)) in gpu[i].iter().enumerate() {
                        let src = chain.sources[v] as usize;
                        let cn = worlds[i].transform_vector3(n[src]).normalize_or_zero();
                        pe = pe.max((*gp - p[src]).length() / d);
                        ne = ne.max((*gn - cn).length());
                        moved = moved.max((bind[src] - p[src]).length() / d);
                    }
                    eprintln!(
                        "{skinning:?} morphed {morphed} instance {i}: position {pe:.2e}, normal {ne:.2e}"
                    );
                    assert!(pe <= 1e-5, "{skinning:?} instance {i}: position {pe}");
                    assert!(ne <= 4e-3, "{skinning:?} instance {i}: normal {ne}");
                }
                // The morph moves the mesh, so the comparison could fail.
                assert_eq!(moved > 1e-2, morphed, "{skinning:?}: moved {moved}");
            }
        }
    }
}
