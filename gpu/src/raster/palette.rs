//! The compute rasteriser with palette skinning (the crowd of [`crate::render::CrowdRenderer`]).

use glam::Vec3;
use sinew_jobs::asset::{ActiveMorph, SkinnedMesh, SkinningMethod};

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
        let skin = match mesh.skinning() {
            SkinningMethod::Linear => RASTER_SKIN_LINEAR_WGSL,
            SkinningMethod::DualQuaternion => RASTER_SKIN_DQ_WGSL,
        };
        let source = format!(
            "{SKINNING_WGSL}\n{}\n{RASTER_WGSL}\n{skin}",
            include_str!("../shaders/raster_palette.wgsl")
        );
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
        match &mut self.morphs {
            Some(m) => m.write(ctx, self.morph_targets, lists)?,
            None => self.morphs = Some(MorphInstances::new(ctx, self.morph_targets, lists)?),
        }
        Ok(())
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
        let morphs = self.morphs.as_ref().unwrap_or(&self.no_morphs);
        let group0 = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
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
        });
        self.core.encode(ctx, encoder, &group0, &params, timestamps);
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

/// The bind pose's bounding sphere of `mesh` (centre, radius), for
/// [`ComputeRasterOptions::cull_sphere`], grown by the farthest any vertex moves with every
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
