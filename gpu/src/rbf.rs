//! RBF deformation on the GPU (compute shader `shaders/rbf.wgsl`).
//!
//! The CSR table of a baked [`RbfBinding`] (row offsets, control indices, weights), the high
//! rest positions and the control displacements live in storage buffers; one invocation per
//! high vertex computes `rest + Σ w · Δ` into an output storage buffer (`3 × f32` per vertex),
//! which a renderer can bind directly or [`GpuRbfDeformer::read_back`] copies to the CPU. Per
//! frame the CPU only uploads `n_ctrl × 16` bytes of displacements.

use glam::Vec3;
use sinew_jobs::deform::RbfBinding;
use wgpu::util::DeviceExt;

use crate::context::{GpuContext, GpuError};

/// Invocations per workgroup (must match `@workgroup_size` in `rbf.wgsl`).
pub const WORKGROUP_SIZE: u32 = 64;

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n_high: u32,
    row_stride: u32,
    pad0: u32,
    pad1: u32,
}

/// GPU resources for deforming one high mesh from a baked binding.
#[derive(Debug)]
pub struct GpuRbfDeformer {
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    delta: wgpu::Buffer,
    out: wgpu::Buffer,
    readback: wgpu::Buffer,
    low_rest: Vec<Vec3>,
    delta_cpu: Vec<[f32; 4]>,
    n_high: u32,
    groups: (u32, u32),
}

impl GpuRbfDeformer {
    /// Uploads the binding's weights and rest positions and builds the pipeline.
    ///
    /// # Errors
    /// [`GpuError::InvalidInput`] when the binding holds coefficients instead of a weight table
    /// (bake with pruning or a larger `dense_budget_bytes`), [`GpuError::TooLarge`] when a
    /// buffer exceeds the device's storage binding limit.
    pub fn new(ctx: &GpuContext, binding: &RbfBinding) -> Result<Self, GpuError> {
        let w = binding.weights().ok_or_else(|| GpuError::InvalidInput {
            what: "GpuRbfDeformer::new: the binding keeps coefficients (dense W over budget); the GPU path needs a weight table".into(),
        })?;
        let n_high = u32::try_from(w.n_rows()).map_err(|_| GpuError::InvalidInput {
            what: format!("{} high vertices do not fit u32", w.n_rows()),
        })?;
        let rest: Vec<f32> = binding
            .high_rest()
            .iter()
            .flat_map(|p| [p.x, p.y, p.z])
            .collect();
        let n_ctrl = binding.low_rest().len();
        let device = &ctx.device;
        let row_ptr = ctx.storage_init(
            "rbf row_ptr",
            bytemuck::cast_slice(w.row_ptr()),
            wgpu::BufferUsages::empty(),
        )?;
        let cols = ctx.storage_init(
            "rbf cols",
            bytemuck::cast_slice(w.cols()),
            wgpu::BufferUsages::empty(),
        )?;
        let vals = ctx.storage_init(
            "rbf vals",
            bytemuck::cast_slice(w.vals()),
            wgpu::BufferUsages::empty(),
        )?;
        let rest_buf = ctx.storage_init(
            "rbf rest",
            bytemuck::cast_slice(&rest),
            wgpu::BufferUsages::empty(),
        )?;
        let delta_cpu = vec![[0.0f32; 4]; n_ctrl];
        let delta = ctx.storage_init(
            "rbf delta",
            bytemuck::cast_slice(&delta_cpu),
            wgpu::BufferUsages::empty(),
        )?;
        let out_size = (rest.len() * 4) as u64;
        ctx.check_storage_size(out_size, || "rbf output buffer".into())?;
        let out = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("rbf deformed positions"),
            size: out_size.max(16),
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::VERTEX,
            mapped_at_creation: false,
        });
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("rbf readback"),
            size: out_size.max(16),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        // 2D grid when one dimension would exceed the per-dimension workgroup limit.
        let total_groups = n_high.div_ceil(WORKGROUP_SIZE).max(1);
        let max_dim = ctx.limits.max_compute_workgroups_per_dimension.max(1);
        let gx = total_groups.min(max_dim);
        let gy = total_groups.div_ceil(gx);
        if gy > max_dim {
            return Err(GpuError::InvalidInput {
                what: format!("{n_high} vertices need {total_groups} workgroups, over {max_dim}²"),
            });
        }
        let params = Params {
            n_high,
            row_stride: gx * WORKGROUP_SIZE,
            pad0: 0,
            pad1: 0,
        };
        let params_buf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("rbf params"),
            contents: bytemuck::bytes_of(&params),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("rbf.wgsl"),
            source: wgpu::ShaderSource::Wgsl(include_str!("shaders/rbf.wgsl").into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("rbf deform"),
            layout: None,
            module: &module,
            entry_point: Some("deform"),
            compilation_options: Default::default(),
            cache: None,
        });
        let layout = pipeline.get_bind_group_layout(0);
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("rbf bind group"),
            layout: &layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: params_buf.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: row_ptr.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: cols.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: vals.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 4,
                    resource: rest_buf.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 5,
                    resource: delta.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 6,
                    resource: out.as_entire_binding(),
                },
            ],
        });
        Ok(Self {
            pipeline,
            bind_group,
            delta,
            out,
            readback,
            low_rest: binding.low_rest().to_vec(),
            delta_cpu,
            n_high,
            groups: (gx, gy),
        })
    }

    /// Number of high vertices.
    pub fn n_high(&self) -> usize {
        self.n_high as usize
    }

    /// The output buffer: `3 × f32` per high vertex (STORAGE | COPY_SRC | VERTEX).
    pub fn output_buffer(&self) -> &wgpu::Buffer {
        &self.out
    }

    /// Computes the control displacements on the CPU and queues their upload.
    ///
    /// # Errors
    /// [`GpuError::InvalidInput`] for a wrong count or a non-finite position,
    /// [`GpuError::DeviceLost`].
    pub fn upload_low(&mut self, ctx: &GpuContext, low_now: &[Vec3]) -> Result<(), GpuError> {
        ctx.check_device()?;
        if low_now.len() != self.low_rest.len() {
            return Err(GpuError::InvalidInput {
                what: format!(
                    "rbf: {} current low-poly positions, expected {}",
                    low_now.len(),
                    self.low_rest.len()
                ),
            });
        }
        if let Some(i) = low_now.iter().position(|p| !p.is_finite()) {
            return Err(GpuError::InvalidInput {
                what: format!("rbf: current low-poly position {i} is not finite"),
            });
        }
        for ((d, now), rest) in self.delta_cpu.iter_mut().zip(low_now).zip(&self.low_rest) {
            let v = *now - *rest;
            *d = [v.x, v.y, v.z, 0.0];
        }
        if !self.delta_cpu.is_empty() {
            ctx.queue
                .write_buffer(&self.delta, 0, bytemuck::cast_slice(&self.delta_cpu));
        }
        Ok(())
    }

    /// Records the deformation dispatch into `encoder`.
    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder) {
        self.encode_timed(encoder, None);
    }

    /// Records the deformation dispatch into `encoder` as a compute pass bracketed by
    /// `timestamp_writes` (needs `Features::TIMESTAMP_QUERY`; see
    /// [`GpuContext::features`](crate::context::GpuContext::features)), to measure the kernel's GPU time.
    pub fn encode_timed(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        timestamp_writes: Option<wgpu::ComputePassTimestampWrites<'_>>,
    ) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("rbf deform"),
            timestamp_writes,
        });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.dispatch_workgroups(self.groups.0, self.groups.1, 1);
    }

    /// Uploads `low_now`, dispatches and submits; returns the submission to wait on.
    ///
    /// # Errors
    /// As [`upload_low`](Self::upload_low).
    pub fn deform(
        &mut self,
        ctx: &GpuContext,
        low_now: &[Vec3],
    ) -> Result<wgpu::SubmissionIndex, GpuError> {
        self.upload_low(ctx, low_now)?;
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("rbf deform"),
            });
        self.encode(&mut encoder);
        Ok(ctx.queue.submit([encoder.finish()]))
    }

    /// Blocks until `submission` has finished on the device.
    ///
    /// # Errors
    /// [`GpuError::Poll`].
    pub fn wait(
        &self,
        ctx: &GpuContext,
        submission: wgpu::SubmissionIndex,
    ) -> Result<(), GpuError> {
        ctx.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(submission),
                timeout: None,
            })
            .map(|_| ())
            .map_err(|e| GpuError::Poll(e.to_string()))
    }

    /// Copies the deformed positions back to the CPU (blocking).
    ///
    /// # Errors
    /// [`GpuError::Map`] / [`GpuError::Poll`].
    pub fn read_back(&self, ctx: &GpuContext) -> Result<Vec<Vec3>, GpuError> {
        let size = u64::from(self.n_high) * 12;
        if size == 0 {
            return Ok(Vec::new());
        }
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("rbf readback"),
            });
        encoder.copy_buffer_to_buffer(&self.out, 0, &self.readback, 0, size);
        let sub = ctx.queue.submit([encoder.finish()]);
        let (tx, rx) = std::sync::mpsc::channel();
        self.readback
            .map_async(wgpu::MapMode::Read, 0..size, move |r| {
                let _ = tx.send(r);
            });
        self.wait(ctx, sub)?;
        rx.recv()
            .map_err(|e| GpuError::Map(e.to_string()))?
            .map_err(|e| GpuError::Map(e.to_string()))?;
        let out = {
            let view = self
                .readback
                .get_mapped_range(0..size)
                .map_err(|e| GpuError::Map(e.to_string()))?;
            let floats: &[f32] =
                bytemuck::try_cast_slice(&view).map_err(|e| GpuError::Map(format!("{e:?}")))?;
            floats
                .chunks_exact(3)
                .map(|c| Vec3::new(c[0], c[1], c[2]))
                .collect()
        };
        self.readback.unmap();
        Ok(out)
    }
}
