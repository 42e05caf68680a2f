//! The viewer's level of detail (`L`): characters farther from the eye than a distance play
//! baked animation textures ([`LodCrowd`]) and are drawn by the baked renderer into the
//! graphics pipeline's colour and depth targets after the CPU tier, as `crowd --lod --png`
//! draws them. A baked texture holds single clips, so while LOD is on every character plays
//! one clip (as in `crowd --lod`); turning it off puts every character back in the pipeline
//! and restores the clip set.

use super::Crowd;
use crate::crowd::{lod_animation, lod_clips};
use glam::{Mat4, Vec3};
use sinew_gpu::baked::draw::{BakedRenderer, DrawTarget};
use sinew_gpu::baked::{BakedAnimationGpu, BakedInstance, BakedTexelFormat};
use sinew_gpu::context::GpuContext;
use sinew_gpu::render::COLOR_FORMAT;
use sinew_jobs::bake_texture::BakeTextureOptions;
use sinew_jobs::component::{Animations, RootMotion, SamplingCursors};
use sinew_jobs::lod::{LodCrowd, LodPath, LodSwitch};

/// The bake rate: the viewer's scripted frame rate, so that scripted frames fall on the
/// bake's frame grid.
const RATE: f32 = 60.0;

pub(crate) struct ViewerLod {
    crowd: LodCrowd,
    anim: BakedAnimationGpu,
    renderer: Option<(BakedRenderer, (u32, u32))>,
    in_frame: bool,
}

impl ViewerLod {
    /// Gives every character its single LOD clip, bakes the clips and adds the crowd.
    pub(crate) fn enable(c: &mut Crowd, ctx: &GpuContext, distance: f32) -> Result<Self, String> {
        let e = |what: &str| {
            let what = what.to_string();
            move |err: &dyn std::fmt::Display| format!("lod: {what}: {err}")
        };
        let clips = lod_clips(&c.model);
        if clips.is_empty() {
            return Err("lod: the model has no clips".into());
        }
        for (i, &entity) in c.entities.iter().enumerate() {
            let anim = lod_animation(&c.model, &clips, i as u64, RATE)
                .ok_or_else(|| "lod: the model has no clips".to_string())?;
            let s = |err: sinew_runtime::store::StoreError| e("clips")(&err);
            c.store
                .get_mut::<Animations>(entity)
                .map_err(s)?
                .set(vec![anim]);
            *c.store.get_mut::<SamplingCursors>(entity).map_err(s)? = SamplingCursors::default();
            *c.store.get_mut::<RootMotion>(entity).map_err(s)? = RootMotion::default();
        }
        let switch = LodSwitch::new(distance, 0.1 * distance).map_err(|x| e("switch")(&x))?;
        let mut crowd = LodCrowd::new(
            switch,
            &c.model.rig,
            &c.model.mesh,
            clips,
            &BakeTextureOptions::new(RATE, 8192),
        )
        .map_err(|x| e("bake")(&x))?;
        for &entity in &c.entities {
            crowd.add(&c.store, entity).map_err(|x| e("add")(&x))?;
        }
        let anim = BakedAnimationGpu::new(
            ctx,
            crowd.texture(),
            &c.model.mesh,
            BakedTexelFormat::Rgba32Float,
        )
        .map_err(|x| e("texture")(&x))?;
        Ok(Self {
            crowd,
            anim,
            renderer: None,
            in_frame: false,
        })
    }

    /// Every character back in the pipeline (baked ones at their baked time and place).
    pub(crate) fn disable(mut self, c: &mut Crowd) -> Result<(), String> {
        for &entity in &c.entities {
            self.crowd
                .remove(&mut c.store, entity)
                .map_err(|x| format!("lod off: {x}"))?;
        }
        Ok(())
    }

    /// Tiers for this frame from `eye` (nothing moves when `dt` is 0: paused).
    pub(crate) fn before(&mut self, c: &mut Crowd, eye: Vec3, dt: f32) -> Result<(), String> {
        if dt > 0.0 {
            self.crowd
                .before_frame(&mut c.store, eye, dt)
                .map_err(|x| format!("lod: {x}"))?;
            self.in_frame = true;
        }
        Ok(())
    }

    /// After the pipeline: characters that switched to baked leave it.
    pub(crate) fn after(&mut self, c: &mut Crowd) -> Result<(), String> {
        if self.in_frame {
            self.in_frame = false;
            self.crowd
                .after_frame(&mut c.store)
                .map_err(|x| format!("lod: {x}"))?;
        }
        Ok(())
    }

    /// Characters per tier: (CPU, baked).
    pub(crate) fn counts(&self) -> (usize, usize) {
        (
            self.crowd.count(LodPath::Cpu),
            self.crowd.count(LodPath::Baked),
        )
    }

    /// The switch distance, metres.
    pub(crate) fn distance(&self) -> f32 {
        self.crowd.switch().distance()
    }

    /// Records the baked tier's draw over `target` (the CPU tier's colour and depth).
    pub(crate) fn encode(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        target: DrawTarget<'_>,
        size: (u32, u32),
        view_proj: Mat4,
    ) -> Result<(), String> {
        let e = |x: sinew_gpu::context::GpuError| format!("lod draw: {x}");
        if self.renderer.as_ref().is_none_or(|r| r.1 != size) {
            let r = BakedRenderer::with_color_format(ctx, &self.anim, size.0, size.1, COLOR_FORMAT)
                .map_err(e)?;
            self.renderer = Some((r, size));
        }
        let instances: Vec<BakedInstance> = self
            .crowd
            .baked_instances()
            .map(BakedInstance::from)
            .collect();
        if let Some((r, _)) = self.renderer.as_mut() {
            r.set_instances(ctx, &self.anim, &instances).map_err(e)?;
            r.encode_over(
                ctx,
                &self.anim,
                encoder,
                target,
                view_proj,
                self.crowd.time(),
            );
        }
        Ok(())
    }

    /// Where the crowd keeps a baked character (its store transform is stale).
    pub(crate) fn position(&self, entity: sinew_runtime::store::Entity) -> Option<Vec3> {
        self.crowd.world(entity).map(|t| t.translation)
    }
}
