//! Compute skinning (`shaders/skinning.wgsl`, entry point `cs_skin`).
//!
//! One invocation per (vertex, instance) blends up to eight palette matrices (the mesh's first
//! influence set and, when present, the second) and writes the skinned position and normal to
//! a storage buffer: two `vec4<f32>` per vertex (position with w = 1, normal with w = 0), instance
//! after instance. Use it to read skinned vertices back ([`SkinPass::skin_positions`]) or for
//! renderers that want pre-skinned vertices.
//!
//! Instances of one dispatch use palettes at `palette_base + i · bones_per_instance`: the
//! layout `Animator` produces for a crowd of one mesh (each entity's palette follows the
//! previous one's).
//!
//! A mesh with morph targets keeps its deltas in a storage buffer ([`GpuSkinMesh`]); each
//! instance of a batch names its active targets ([`MorphInstances`], built from the entities'
//! `MorphWeights::active` lists), and the shader adds only those deltas before skinning, so
//! targets at weight 0 cost nothing. A mesh whose [`SkinningMethod`] is dual quaternion is
//! skinned by the shader's `dqs_*` functions.

use glam::Vec3;
use sinew_jobs::asset::{ActiveMorph, SkinnedMesh, SkinningMethod};
use wgpu::util::DeviceExt;

use crate::context::{GpuContext, GpuError};

/// Invocations per workgroup of `cs_skin` (must match the shader).
pub const WORKGROUP_SIZE: u32 = 64;

/// Bytes per skinned vertex in the output buffer (two `vec4<f32>`).
pub const SKINNED_VERTEX_BYTES: u64 = 32;

/// The shader source (`vs_main`/`fs_main` for instanced drawing, `cs_skin` for compute).
pub const SKINNING_WGSL: &str = include_str!("shaders/skinning.wgsl");

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct SkinParams {
    vertex_count: u32,
    palette_base: u32,
    bones_per_instance: u32,
    has_extra: u32,
    row_stride: u32,
    instance_count: u32,
    skinning: u32,
    has_morph: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct SkinVertex {
    position: [f32; 4],
    normal: [f32; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Influences {
    j0: [u32; 4],
    w0: [f32; 4],
    j1: [u32; 4],
    w1: [f32; 4],
}

/// A skinned mesh's bind-pose vertices and influences on the GPU.
#[derive(Debug)]
pub struct GpuSkinMesh {
    vertices: wgpu::Buffer,
    influences: wgpu::Buffer,
    morph_deltas: wgpu::Buffer,
    vertex_count: u32,
    bone_count: u32,
    morph_targets: u32,
    skinning: SkinningMethod,
    has_extra: bool,
    has_normals: bool,
}

/// The morph deltas of `meshes` (a mesh, or the levels of a LOD chain, each with the same
/// number of targets) as the shaders read them: two `vec4<f32>` (position, normal delta) per
/// (target, vertex), target-major, the meshes' vertices numbered one after the other; one zero
/// entry when there are no targets (a binding needs a buffer).
pub(crate) fn morph_delta_buffer(
    ctx: &GpuContext,
    meshes: &[&SkinnedMesh],
) -> Result<wgpu::Buffer, GpuError> {
    let targets = meshes.first().map_or(0, |m| m.morph_targets().len());
    let vertices: usize = meshes.iter().map(|m| m.positions().len()).sum();
    let mut deltas: Vec<[f32; 4]> = Vec::with_capacity(2 * targets * vertices);
    for k in 0..targets {
        for mesh in meshes {
            let morph = mesh.morph_targets();
            let normals = morph.target_normals(k);
            for (v, p) in morph.target_positions(k).iter().enumerate() {
                let n = normals.get(v).copied().unwrap_or(Vec3::ZERO);
                deltas.push([p.x, p.y, p.z, 0.0]);
                deltas.push([n.x, n.y, n.z, 0.0]);
            }
        }
    }
    if deltas.is_empty() {
        deltas.push([0.0; 4]);
        deltas.push([0.0; 4]);
    }
    let name = meshes.first().map_or("", |m| m.name());
    ctx.storage_init(
        &format!("morph deltas of mesh '{name}' ({targets} targets)"),
        bytemuck::cast_slice(&deltas),
        wgpu::BufferUsages::empty(),
    )
}

/// The active morph targets of each instance of a batch, on the GPU, in one buffer of
/// `vec2<u32>`: per instance its range `(first, count)`, then every instance's `(target,
/// weight bits)` entries (`first` indexes the same buffer). Build one per batch, instance
/// after instance in the batch's order.
#[derive(Debug)]
pub struct MorphInstances {
    lists: wgpu::Buffer,
    instances: u32,
}

impl MorphInstances {
    /// Uploads one active list per instance (`MorphWeights::active` of each entity), checked
    /// against a mesh of `targets` morph targets.
    ///
    /// # Errors
    /// [`GpuError::InvalidInput`] naming the instance and entry for a target index out of
    /// range or a weight that is NaN or infinite; [`GpuError::TooLarge`] past the storage
    /// binding limit.
    pub fn new(ctx: &GpuContext, targets: u32, lists: &[&[ActiveMorph]]) -> Result<Self, GpuError> {
        let (words, instances) = Self::pack(targets, lists)?;
        Ok(Self {
            lists: ctx.storage_init(
                "morph lists",
                bytemuck::cast_slice(&words),
                wgpu::BufferUsages::empty(),
            )?,
            instances,
        })
    }

    /// `slot`'s lists replaced by `lists` ([`MorphInstances::write`]), or made
    /// ([`MorphInstances::new`]) when it has none: the renderers' `set_morphs`.
    ///
    /// # Errors
    /// As [`MorphInstances::new`].
    pub(crate) fn set(
        slot: &mut Option<Self>,
        ctx: &GpuContext,
        targets: u32,
        lists: &[&[ActiveMorph]],
    ) -> Result<(), GpuError> {
        match slot {
            Some(m) => m.write(ctx, targets, lists),
            None => {
                *slot = Some(Self::new(ctx, targets, lists)?);
                Ok(())
            }
        }
    }

    /// Replaces the lists (the next frame's), writing into the existing buffer when it is
    /// large enough (one `queue.write_buffer`) and growing it otherwise.
    ///
    /// # Errors
    /// As [`MorphInstances::new`]; on an error the previous lists stay.
    pub fn write(
        &mut self,
        ctx: &GpuContext,
        targets: u32,
        lists: &[&[ActiveMorph]],
    ) -> Result<(), GpuError> {
        let (words, instances) = Self::pack(targets, lists)?;
        let bytes: &[u8] = bytemuck::cast_slice(&words);
        if bytes.len() as u64 <= self.lists.size()
            && self.lists.usage().contains(wgpu::BufferUsages::COPY_DST)
        {
            ctx.queue.write_buffer(&self.lists, 0, bytes);
        } else {
            self.lists = ctx.storage_init("morph lists", bytes, wgpu::BufferUsages::empty())?;
        }
        self.instances = instances;
        Ok(())
    }

    /// Checks the lists and flattens them: the per-instance `(first, count)` ranges, then the
    /// `(target, weight bits)` entries (never empty: a binding needs a buffer), and the
    /// instance count.
    fn pack(targets: u32, lists: &[&[ActiveMorph]]) -> Result<(Vec<[u32; 2]>, u32), GpuError> {
        let too_many = || GpuError::InvalidInput {
            what: "MorphInstances: more than u32::MAX instances and entries".into(),
        };
        let instances = u32::try_from(lists.len()).map_err(|_| too_many())?;
        let entries: usize = lists.iter().map(|l| l.len()).sum();
        let mut words: Vec<[u32; 2]> = Vec::with_capacity((lists.len() + entries).max(1));
        let mut first = instances;
        for (i, list) in lists.iter().enumerate() {
            if let Some((k, a)) = list
                .iter()
                .enumerate()
                .find(|(_, a)| a.target >= targets || !a.weight.is_finite())
            {
                return Err(GpuError::InvalidInput {
                    what: format!(
                        "MorphInstances: instance {i} entry {k}: target {} weight {} (the mesh has {targets} targets; weights must be finite)",
                        a.target, a.weight
                    ),
                });
            }
            let count = u32::try_from(list.len()).map_err(|_| too_many())?;
            words.push([first, count]);
            first = first.checked_add(count).ok_or_else(too_many)?;
        }
        for list in lists {
            words.extend(list.iter().map(|a| [a.target, a.weight.to_bits()]));
        }
        if words.is_empty() {
            words.push([0, 0]);
        }
        Ok((words, instances))
    }

    /// The placeholder bound when a batch has no morph lists (one empty range; the shader
    /// does not read it).
    pub(crate) fn none(ctx: &GpuContext) -> Self {
        Self {
            lists: ctx
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("no morph lists"),
                    contents: &[0u8; 16],
                    usage: wgpu::BufferUsages::STORAGE,
                }),
            instances: 0,
        }
    }

    /// Number of instances.
    pub fn instance_count(&self) -> u32 {
        self.instances
    }

    /// The ranges and entries (binding 7 of `skinning.wgsl`).
    pub(crate) fn lists(&self) -> &wgpu::Buffer {
        &self.lists
    }
}

impl GpuSkinMesh {
    /// Uploads `mesh` (positions, normals, both influence sets, morph deltas).
    ///
    /// # Errors
    /// [`GpuError::TooLarge`] past the storage binding limit (the morph deltas' error names the
    /// mesh and its target count), [`GpuError::InvalidInput`] for more vertices than `u32`
    /// holds.
    pub fn new(ctx: &GpuContext, mesh: &SkinnedMesh) -> Result<Self, GpuError> {
        let n = mesh.positions().len();
        let vertex_count = u32::try_from(n).map_err(|_| GpuError::InvalidInput {
            what: format!("mesh '{}' has {n} vertices (over u32)", mesh.name()),
        })?;
        let bone_count = u32::try_from(mesh.bone_count()).map_err(|_| GpuError::InvalidInput {
            what: format!("mesh '{}' has too many bones", mesh.name()),
        })?;
        let normals = mesh.normals();
        let vertices: Vec<SkinVertex> = (0..n)
            .map(|i| {
                let p = mesh.positions()[i];
                let nn = normals.get(i).copied().unwrap_or(Vec3::ZERO);
                SkinVertex {
                    position: [p.x, p.y, p.z, 1.0],
                    normal: [nn.x, nn.y, nn.z, 0.0],
                }
            })
            .collect();
        let has_extra = !mesh.joints_extra().is_empty() && !mesh.weights_extra().is_empty();
        let influences: Vec<Influences> = (0..n)
            .map(|i| Influences {
                j0: mesh.joints().get(i).copied().unwrap_or([0; 4]),
                w0: mesh.weights().get(i).copied().unwrap_or([0.0; 4]),
                j1: mesh.joints_extra().get(i).copied().unwrap_or([0; 4]),
                w1: mesh.weights_extra().get(i).copied().unwrap_or([0.0; 4]),
            })
            .collect();
        let morph_targets =
            u32::try_from(mesh.morph_targets().len()).map_err(|_| GpuError::InvalidInput {
                what: format!("mesh '{}' has too many morph targets", mesh.name()),
            })?;
        Ok(Self {
            morph_deltas: morph_delta_buffer(ctx, &[mesh])?,
            morph_targets,
            skinning: mesh.skinning(),
            vertices: ctx.storage_init(
                "skin vertices",
                bytemuck::cast_slice(&vertices),
                wgpu::BufferUsages::empty(),
            )?,
            influences: ctx.storage_init(
                "skin influences",
                bytemuck::cast_slice(&influences),
                wgpu::BufferUsages::empty(),
            )?,
            vertex_count,
            bone_count,
            has_extra,
            has_normals: !normals.is_empty(),
        })
    }

    /// Number of vertices.
    pub fn vertex_count(&self) -> u32 {
        self.vertex_count
    }

    /// Number of mesh bones (palette entries per instance).
    pub fn bone_count(&self) -> u32 {
        self.bone_count
    }

    /// Whether the mesh has a second influence set (up to eight influences).
    pub fn has_extra_influences(&self) -> bool {
        self.has_extra
    }

    /// Number of morph targets.
    pub fn morph_target_count(&self) -> u32 {
        self.morph_targets
    }
}

/// One batch of a skinning dispatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SkinBatch {
    /// Palette entry of the batch's first instance.
    pub palette_base: u32,
    /// Instances in the batch (at most the device's `max_compute_workgroups_per_dimension`).
    pub instance_count: u32,
}

/// The buffers one dispatch reads and writes.
#[derive(Clone, Copy, Debug)]
pub struct SkinBuffers<'a> {
    /// Palettes: float3x4 entries (STORAGE), e.g. a `PaletteRing` buffer.
    pub palette: &'a wgpu::Buffer,
    /// Output (STORAGE), at least [`SkinPass::output_size`] bytes.
    pub out: &'a wgpu::Buffer,
    /// The active morph targets of each instance of the batch (`None`: the bind shape).
    pub morphs: Option<&'a MorphInstances>,
}

/// The compute skinning pipeline.
#[derive(Debug)]
pub struct SkinPass {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    no_morphs: MorphInstances,
}

impl SkinPass {
    /// Builds the pipeline.
    pub fn new(ctx: &GpuContext) -> Self {
        let module = ctx
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("skinning.wgsl"),
                source: wgpu::ShaderSource::Wgsl(SKINNING_WGSL.into()),
            });
        let pipeline = ctx
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("cs_skin"),
                layout: None,
                module: &module,
                entry_point: Some("cs_skin"),
                compilation_options: Default::default(),
                cache: None,
            });
        let layout = pipeline.get_bind_group_layout(0);
        Self {
            pipeline,
            layout,
            no_morphs: MorphInstances::none(ctx),
        }
    }

    /// Bytes of output for `instances` instances of `mesh`.
    pub fn output_size(mesh: &GpuSkinMesh, instances: u32) -> u64 {
        u64::from(mesh.vertex_count) * u64::from(instances) * SKINNED_VERTEX_BYTES
    }

    /// Records one compute pass skinning `batch.instance_count` instances of `mesh` with the
    /// palettes in `buffers.palette` (float3x4 entries, see the module docs) into
    /// `buffers.out`. `timestamp_writes` brackets the pass.
    ///
    /// # Errors
    /// [`GpuError::TooLarge`] when the batch's output exceeds the storage binding limit;
    /// [`GpuError::InvalidInput`] when `out` is too small, the batch has more instances than
    /// the device's per-dimension workgroup limit, the mesh needs more workgroups than
    /// two dimensions hold, or `buffers.morphs` holds another number of instances than the
    /// batch.
    pub fn encode(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        mesh: &GpuSkinMesh,
        buffers: SkinBuffers<'_>,
        batch: SkinBatch,
        timestamp_writes: Option<wgpu::ComputePassTimestampWrites<'_>>,
    ) -> Result<(), GpuError> {
        ctx.check_device()?;
        let SkinBuffers {
            palette,
            out,
            morphs,
        } = buffers;
        if let Some(m) = morphs
            && m.instances != batch.instance_count
        {
            return Err(GpuError::InvalidInput {
                what: format!(
                    "SkinPass::encode: morph lists for {} instances, the batch has {}",
                    m.instances, batch.instance_count
                ),
            });
        }
        let has_morph = morphs.is_some() && mesh.morph_targets > 0;
        let morphs = morphs.unwrap_or(&self.no_morphs);
        let need = Self::output_size(mesh, batch.instance_count);
        if out.size() < need {
            return Err(GpuError::InvalidInput {
                what: format!(
                    "SkinPass::encode: output buffer of {} bytes, {need} needed",
                    out.size()
                ),
            });
        }
        let limit = ctx.limits.max_storage_buffer_binding_size;
        if need > limit {
            return Err(GpuError::TooLarge {
                what: format!(
                    "SkinPass::encode: output of {} instances (use smaller batches)",
                    batch.instance_count
                ),
                size: need,
                limit,
            });
        }
        let max_dim = ctx.limits.max_compute_workgroups_per_dimension.max(1);
        if batch.instance_count > max_dim {
            return Err(GpuError::InvalidInput {
                what: format!(
                    "SkinPass::encode: {} instances in one batch, at most {max_dim}",
                    batch.instance_count
                ),
            });
        }
        let groups = mesh.vertex_count.div_ceil(WORKGROUP_SIZE).max(1);
        let gx = groups.min(max_dim);
        let gy = groups.div_ceil(gx);
        if gy > max_dim {
            return Err(GpuError::InvalidInput {
                what: format!(
                    "SkinPass::encode: {} vertices need too many workgroups",
                    mesh.vertex_count
                ),
            });
        }
        let params = SkinParams {
            vertex_count: mesh.vertex_count,
            palette_base: batch.palette_base,
            bones_per_instance: mesh.bone_count,
            has_extra: u32::from(mesh.has_extra),
            row_stride: gx * WORKGROUP_SIZE,
            instance_count: batch.instance_count,
            skinning: u32::from(mesh.skinning == SkinningMethod::DualQuaternion),
            has_morph: u32::from(has_morph),
        };
        let params = ctx
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("skin params"),
                contents: bytemuck::bytes_of(&params),
                usage: wgpu::BufferUsages::UNIFORM,
            });
        let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("skin bind group"),
            layout: &self.layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: palette.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: params.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: mesh.vertices.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 4,
                    resource: mesh.influences.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 5,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: out,
                        offset: 0,
                        size: std::num::NonZeroU64::new(need.max(32)),
                    }),
                },
                wgpu::BindGroupEntry {
                    binding: 6,
                    resource: mesh.morph_deltas.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 7,
                    resource: morphs.lists.as_entire_binding(),
                },
            ],
        });
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("cs_skin"),
            timestamp_writes,
        });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(gx, gy, batch.instance_count);
        Ok(())
    }

    /// Skins `mesh` with one palette (one float3x4 per mesh bone, column-major) in the compute
    /// shader and reads positions and normals back (blocking). Normals are empty when the
    /// mesh has none, as with `SkinnedMesh::skin_cpu`.
    ///
    /// # Errors
    /// As [`SkinPass::skin_positions_morphed`].
    pub fn skin_positions(
        ctx: &GpuContext,
        mesh: &SkinnedMesh,
        palette: &[[f32; 12]],
    ) -> Result<(Vec<Vec3>, Vec<Vec3>), GpuError> {
        Self::skin_positions_morphed(ctx, mesh, palette, &[])
    }

    /// [`SkinPass::skin_positions`] with the morph targets in `active` applied first: the GPU
    /// counterpart of `SkinnedMesh::skin_cpu_morphed`.
    ///
    /// # Errors
    /// [`GpuError::InvalidInput`] when `palette` is shorter than the mesh's bone count or
    /// holds a non-finite value, or `active` names a target the mesh lacks or a non-finite
    /// weight; [`GpuError::Map`] / [`GpuError::Poll`] on read-back.
    pub fn skin_positions_morphed(
        ctx: &GpuContext,
        mesh: &SkinnedMesh,
        palette: &[[f32; 12]],
        active: &[ActiveMorph],
    ) -> Result<(Vec<Vec3>, Vec<Vec3>), GpuError> {
        ctx.check_device()?;
        if palette.len() < mesh.bone_count() {
            return Err(GpuError::InvalidInput {
                what: format!(
                    "SkinPass::skin_positions: palette of {} entries for mesh '{}' with {} bones",
                    palette.len(),
                    mesh.name(),
                    mesh.bone_count()
                ),
            });
        }
        if let Some(i) = palette
            .iter()
            .position(|m| m.iter().any(|x| !x.is_finite()))
        {
            return Err(GpuError::InvalidInput {
                what: format!("SkinPass::skin_positions: palette entry {i} is not finite"),
            });
        }
        let gpu_mesh = GpuSkinMesh::new(ctx, mesh)?;
        let pass = Self::new(ctx);
        let morphs = MorphInstances::new(ctx, gpu_mesh.morph_targets, &[active])?;
        let palette_buf = ctx.storage_init(
            "palette",
            bytemuck::cast_slice(palette),
            wgpu::BufferUsages::empty(),
        )?;
        let size = Self::output_size(&gpu_mesh, 1).max(32);
        let out = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("skinned vertices"),
            size,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("skin_positions"),
            });
        pass.encode(
            ctx,
            &mut encoder,
            &gpu_mesh,
            SkinBuffers {
                palette: &palette_buf,
                out: &out,
                morphs: Some(&morphs),
            },
            SkinBatch {
                palette_base: 0,
                instance_count: 1,
            },
            None,
        )?;
        let floats = read_buffer_f32(ctx, encoder, &out, size)?;
        let n = gpu_mesh.vertex_count as usize;
        let mut positions = Vec::with_capacity(n);
        let mut normals = Vec::with_capacity(if gpu_mesh.has_normals { n } else { 0 });
        for v in floats.chunks_exact(8).take(n) {
            positions.push(Vec3::new(v[0], v[1], v[2]));
            if gpu_mesh.has_normals {
                normals.push(Vec3::new(v[4], v[5], v[6]));
            }
        }
        Ok((positions, normals))
    }
}

/// Submits `encoder` plus a copy of `size` bytes of `src` (COPY_SRC) into a read-back buffer,
/// waits, and returns the bytes as `f32`s.
///
/// # Errors
/// [`GpuError::Map`] / [`GpuError::Poll`].
pub fn read_buffer_f32(
    ctx: &GpuContext,
    encoder: wgpu::CommandEncoder,
    src: &wgpu::Buffer,
    size: u64,
) -> Result<Vec<f32>, GpuError> {
    let bytes = read_buffer_bytes(ctx, encoder, src, size)?;
    Ok(bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// Submits `encoder` plus a copy of `size` bytes (a multiple of 4) of `src` (COPY_SRC) into a
/// read-back buffer, waits, and returns the bytes.
///
/// # Errors
/// [`GpuError::Map`] / [`GpuError::Poll`].
pub fn read_buffer_bytes(
    ctx: &GpuContext,
    mut encoder: wgpu::CommandEncoder,
    src: &wgpu::Buffer,
    size: u64,
) -> Result<Vec<u8>, GpuError> {
    if size == 0 {
        ctx.queue.submit([encoder.finish()]);
        return Ok(Vec::new());
    }
    let readback = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("read-back"),
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    encoder.copy_buffer_to_buffer(src, 0, &readback, 0, size);
    let sub = ctx.queue.submit([encoder.finish()]);
    let (tx, rx) = std::sync::mpsc::channel();
    readback.map_async(wgpu::MapMode::Read, .., move |r| {
        let _ = tx.send(r);
    });
    ctx.device
        .poll(wgpu::PollType::Wait {
            submission_index: Some(sub),
            timeout: None,
        })
        .map_err(|e| GpuError::Poll(e.to_string()))?;
    rx.recv()
        .map_err(|e| GpuError::Map(e.to_string()))?
        .map_err(|e| GpuError::Map(e.to_string()))?;
    let out = readback
        .get_mapped_range(..)
        .map_err(|e| GpuError::Map(e.to_string()))?
        .to_vec();
    readback.unmap();
    Ok(out)
}
