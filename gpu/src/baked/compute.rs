//! The baked skinning as a compute pass: world-space positions of every (instance, vertex) in
//! a buffer, computed by the same WGSL functions as the instanced draw (`baked_common.wgsl`).
//! Tests read it back and compare it with the CPU pipeline.

use super::{
    BakedAnimationGpu, BakedInstance, common_bind_group, common_layout, read_buffer, shader,
    storage_entry, wait,
};
use crate::context::{GpuContext, GpuError};
use glam::Vec3;
use wgpu::util::DeviceExt;

/// Skins a set of instances into a position buffer.
#[derive(Debug)]
pub struct BakedComputeSkinner {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
}

impl BakedComputeSkinner {
    /// Builds the compute pipeline.
    pub fn new(ctx: &GpuContext) -> Self {
        let c = wgpu::ShaderStages::COMPUTE;
        let layout = common_layout(
            ctx,
            &[
                storage_entry(3, c, true),
                storage_entry(4, c, true),
                storage_entry(5, c, false),
            ],
        );
        let module = shader(
            ctx,
            "baked compute",
            include_str!("../shaders/baked_compute.wgsl"),
        );
        let pl = ctx
            .device
            .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("baked compute"),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
        let pipeline = ctx
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("baked compute"),
                layout: Some(&pl),
                module: &module,
                entry_point: Some("cs_main"),
                compilation_options: Default::default(),
                cache: None,
            });
        Self { pipeline, layout }
    }

    /// Skins every vertex of `anim`'s mesh for every instance at global time `time` and reads
    /// the world positions back: `instances.len() · vertex_count` positions, instance-major.
    ///
    /// # Errors
    /// [`GpuError::InvalidInput`] for instances naming missing clips (or more than 65 535
    /// instances); [`GpuError::TooLarge`], [`GpuError::Map`], [`GpuError::Poll`].
    pub fn skin(
        &self,
        ctx: &GpuContext,
        anim: &BakedAnimationGpu,
        instances: &[BakedInstance],
        time: f32,
    ) -> Result<Vec<Vec3>, GpuError> {
        anim.validate_instances(instances)?;
        let n_inst = u32::try_from(instances.len())
            .ok()
            .filter(|&n| n <= 65_535)
            .ok_or_else(|| GpuError::InvalidInput {
                what: format!(
                    "baked compute: {} instances, at most 65535 per call",
                    instances.len()
                ),
            })?;
        if n_inst == 0 {
            return Ok(Vec::new());
        }
        let globals = anim.globals(glam::Mat4::IDENTITY, time, n_inst);
        let uniform = ctx
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("baked compute globals"),
                contents: bytemuck::bytes_of(&globals),
                usage: wgpu::BufferUsages::UNIFORM,
            });
        let inst = ctx.storage_init(
            "baked compute instances",
            bytemuck::cast_slice(instances),
            wgpu::BufferUsages::empty(),
        )?;
        let size = u64::from(n_inst) * u64::from(anim.vertex_count) * 16;
        ctx.check_storage_size(size, || "baked compute output".into())?;
        let out = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("baked compute output"),
            size,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let readback = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("baked compute readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bind_group = common_bind_group(
            ctx,
            "baked compute",
            &self.layout,
            &uniform,
            anim,
            &[
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: inst.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 4,
                    resource: anim.vertices.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 5,
                    resource: out.as_entire_binding(),
                },
            ],
        );
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("baked compute"),
            });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("baked compute"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(anim.vertex_count.div_ceil(64), n_inst, 1);
        }
        encoder.copy_buffer_to_buffer(&out, 0, &readback, 0, size);
        let sub = ctx.queue.submit([encoder.finish()]);
        wait(ctx, Some(sub))?;
        let bytes = read_buffer(ctx, &readback, size)?;
        let floats: &[f32] =
            bytemuck::try_cast_slice(&bytes).map_err(|e| GpuError::Map(format!("{e:?}")))?;
        Ok(floats
            .chunks_exact(4)
            .map(|c| Vec3::new(c[0], c[1], c[2]))
            .collect())
    }
}
