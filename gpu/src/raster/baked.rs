//! The compute rasteriser with baked animation textures (the crowd of
//! [`crate::baked::draw::BakedRenderer`]).

use std::time::{Duration, Instant};

use glam::{Mat4, Vec3};
use sinew_jobs::asset::SkinnedMesh;

use super::{
    BAKED_MATERIAL_BITS, ComputeRasterOptions, FrameLook, FrameQueries, LodLevel, RASTER_MAX_BONES,
    RASTER_SKIN_LINEAR_WGSL, RASTER_WGSL, RasterCore, RasterGpuTimes, bind_pose_sphere,
};
use crate::baked::{
    BakedAnimationGpu, BakedInstance, common_bind_group, common_layout, globals_buffer, wait,
};
use crate::context::{GpuContext, GpuError};

const LABEL: &str = "ComputeBakedRenderer";

/// What one [`ComputeBakedRenderer::render`] cost.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RasterFrameTiming {
    /// CPU time to write the uniforms, encode and submit.
    pub cpu: Duration,
    /// Wall time from the start of the call until the GPU finished.
    pub wall: Duration,
    /// GPU time per pass, when the device has timestamp queries.
    pub gpu: Option<RasterGpuTimes>,
}

/// Draws a baked crowd through the compute rasteriser (see the
/// [module documentation](super)): same instances, texture, clip tints, light and clear
/// colour as [`crate::baked::draw::BakedRenderer`]; the image is linear RGBA8 (as that
/// renderer's `Rgba8Unorm` target).
#[derive(Debug)]
pub struct ComputeBakedRenderer {
    core: RasterCore,
    group0: wgpu::BindGroup,
    uniform: wgpu::Buffer,
    bone_count: u32,
    queries: Option<FrameQueries>,
}

impl ComputeBakedRenderer {
    /// A renderer for `anim`'s mesh and texture with a `width × height` target (`mesh` is the
    /// mesh `anim` was uploaded with; its bind pose gives the cull sphere). Whole
    /// instances are culled with the bind pose's bounding sphere at twice its radius
    /// ([`ComputeBakedRenderer::options_mut`] changes it).
    ///
    /// # Errors
    /// [`GpuError::InvalidInput`] for a zero or oversized target or a mesh with more than
    /// [`RASTER_MAX_BONES`] bones; [`GpuError::TooLarge`] for buffers over the limits.
    pub fn new(
        ctx: &GpuContext,
        anim: &BakedAnimationGpu,
        mesh: &SkinnedMesh,
        width: u32,
        height: u32,
    ) -> Result<Self, GpuError> {
        Self::with_lods(ctx, anim, &[LodLevel { mesh, error: 0.0 }], width, height)
    }

    /// [`ComputeBakedRenderer::new`] with a LOD chain: `levels[0]` is the mesh `anim` was
    /// uploaded with, the others simplified versions sharing its bones (for instance
    /// `sinew_jobs::asset::lod_chain`); each instance draws the coarsest level whose error is
    /// at most [`ComputeRasterOptions::lod_pixel_error`] pixels on screen.
    ///
    /// # Errors
    /// As [`ComputeBakedRenderer::new`]; [`GpuError::InvalidInput`] for a chain
    /// [`super::cluster_chain`] refuses.
    pub fn with_lods(
        ctx: &GpuContext,
        anim: &BakedAnimationGpu,
        levels: &[LodLevel<'_>],
        width: u32,
        height: u32,
    ) -> Result<Self, GpuError> {
        let Some(mesh) = levels.first().map(|l| l.mesh) else {
            return Err(GpuError::InvalidInput {
                what: format!("{LABEL}: empty LOD chain"),
            });
        };
        if anim.bone_count > RASTER_MAX_BONES || mesh.bone_count() != anim.bone_count as usize {
            return Err(GpuError::InvalidInput {
                what: format!(
                    "{LABEL}: {} bones in the texture, {} in mesh '{}' (they must agree; the compute rasteriser takes at most {RASTER_MAX_BONES})",
                    anim.bone_count,
                    mesh.bone_count(),
                    mesh.name()
                ),
            });
        }
        let layout = common_layout(ctx, &[]);
        let source = format!(
            "{}\n{}\n{RASTER_WGSL}\n{RASTER_SKIN_LINEAR_WGSL}",
            include_str!("../shaders/baked_common.wgsl"),
            include_str!("../shaders/raster_baked.wgsl")
        );
        let options =
            ComputeRasterOptions::with_cull_sphere(bind_pose_sphere(mesh.positions(), 2.0));
        let core = RasterCore::new(
            ctx,
            LABEL,
            source,
            &layout,
            levels,
            (width, height),
            options,
        )?;
        let uniform = globals_buffer(ctx, "raster baked globals");
        let group0 = common_bind_group(ctx, "raster baked", &layout, &uniform, anim, &[]);
        Ok(Self {
            core,
            group0,
            uniform,
            bone_count: anim.bone_count,
            queries: FrameQueries::new(ctx),
        })
    }

    /// Target size.
    pub fn size(&self) -> (u32, u32) {
        (self.core.width, self.core.height)
    }

    /// Instances drawn per frame.
    pub fn instance_count(&self) -> u32 {
        self.core.instance_count
    }

    /// The rasteriser's options.
    pub fn options(&self) -> &ComputeRasterOptions {
        &self.core.options
    }

    /// The rasteriser's options, to change (they apply from the next frame).
    pub fn options_mut(&mut self) -> &mut ComputeRasterOptions {
        &mut self.core.options
    }

    /// Uploads the instances (once; they stay on the GPU for every later frame).
    ///
    /// # Errors
    /// [`GpuError::InvalidInput`] for instances naming missing clips or with non-finite
    /// values; [`GpuError::TooLarge`] above the storage-buffer limit.
    pub fn set_instances(
        &mut self,
        ctx: &GpuContext,
        anim: &BakedAnimationGpu,
        instances: &[BakedInstance],
    ) -> Result<(), GpuError> {
        anim.validate_instances(instances)?;
        self.core
            .set_instances(ctx, LABEL, bytemuck::cast_slice(instances), instances.len())
    }

    /// Writes the uniforms, encodes one frame (with timestamps when available) and submits it
    /// without waiting.
    pub fn submit(
        &mut self,
        ctx: &GpuContext,
        anim: &BakedAnimationGpu,
        view_proj: Mat4,
        time: f32,
    ) -> wgpu::SubmissionIndex {
        let globals = anim.globals(view_proj, time, self.core.instance_count);
        ctx.queue
            .write_buffer(&self.uniform, 0, bytemuck::bytes_of(&globals));
        let look = FrameLook {
            view_proj,
            // The baked draw's light (towards the light) and ambient.
            light_to: Vec3::from_slice(&globals.light_dir[..3]).normalize_or_zero(),
            ambient: 0.25,
            clear: [0.55, 0.65, 0.75, 1.0],
            albedo: Vec3::ONE,
            srgb: false,
            material_bits: BAKED_MATERIAL_BITS,
            bone_count: self.bone_count,
            morph: false,
        };
        let params = self.core.params(&look);
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("raster baked frame"),
            });
        self.core.encode(
            ctx,
            &mut encoder,
            &self.group0,
            &params,
            self.queries.as_ref().map(FrameQueries::timestamps),
        );
        if let Some(q) = &self.queries {
            q.encode_resolve(&mut encoder);
        }
        ctx.queue.submit([encoder.finish()])
    }

    /// Draws every instance at global time `time` seen through `view_proj`, waits for the
    /// GPU and reads the passes' GPU times when the device has timestamp queries.
    ///
    /// # Errors
    /// [`GpuError::Poll`], [`GpuError::Map`].
    pub fn render(
        &mut self,
        ctx: &GpuContext,
        anim: &BakedAnimationGpu,
        view_proj: Mat4,
        time: f32,
    ) -> Result<RasterFrameTiming, GpuError> {
        ctx.check_device()?;
        let start = Instant::now();
        let sub = self.submit(ctx, anim, view_proj, time);
        let cpu = start.elapsed();
        wait(ctx, Some(sub))?;
        let wall = start.elapsed();
        let gpu = match &self.queries {
            Some(q) => Some(q.read(ctx)?),
            None => None,
        };
        Ok(RasterFrameTiming { cpu, wall, gpu })
    }

    /// Instances drawn at each LOD level by the last frame rendered with
    /// [`ComputeRasterOptions::count_levels`] on (blocking).
    ///
    /// # Errors
    /// [`GpuError::Map`], [`GpuError::Poll`].
    pub fn level_counts(&self, ctx: &GpuContext) -> Result<Vec<u32>, GpuError> {
        self.core.read_level_counts(ctx)
    }

    /// Reads the last frame's image back as tightly packed RGBA8 rows (blocking).
    ///
    /// # Errors
    /// [`GpuError::Map`], [`GpuError::Poll`].
    pub fn read_pixels(&self, ctx: &GpuContext) -> Result<Vec<u8>, GpuError> {
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("raster baked read pixels"),
            });
        self.core.encode_readback(&mut encoder);
        let sub = ctx.queue.submit([encoder.finish()]);
        self.core.read_pixels(ctx, Some(sub))
    }
}
