//! A compute-shader rasteriser for skinned crowds (`shaders/raster_common.wgsl`).
//!
//! Why: on a compute GPU such as the NVIDIA H200 only a small part of the chip runs vertex and
//! raster work; the instanced vertex-shader draw of 100 000 Fox characters takes ~235 ms there
//! while the same skinning in a compute shader runs at ~45 G vertices/s. A crowd at a distance
//! is mostly triangles of a pixel or less, which a compute shader rasterises well (the idea of
//! Nanite's software rasteriser). This module draws the same crowds as
//! [`crate::render::CrowdRenderer`] (palette skinning, [`ComputeCrowdRenderer`]) and
//! [`crate::baked::draw::BakedRenderer`] (baked animation textures, [`ComputeBakedRenderer`])
//! into the same kind of image, with compute passes only:
//!
//! 1. **raster** (`cs_raster`): one workgroup of [`GROUP_SIZE`] invocations per instance.
//!    The instance's bounding sphere is tested against the frustum (a culled instance costs
//!    one test). The vertex source writes every bone's matrix, premultiplied by the world
//!    transform, into workgroup memory (palettes: `skinning.wgsl`'s fetch; baked:
//!    `baked_common.wgsl`'s `playback`/`bone_matrix`, i.e. texel fetch, frame lerp and
//!    cross-fade). The mesh is pre-split on the CPU ([`cluster_mesh`]) into clusters of at
//!    most [`CLUSTER_VERTICES`] unique vertices (identical vertices merged; Fox's 1 728
//!    vertices are 290 distinct ones): per cluster, one invocation per vertex skins and
//!    projects it into workgroup memory, then the invocations take the cluster's triangles,
//!    cull them (eye plane, depth range, back faces, triangles whose bounding box holds no
//!    pixel centre) and rasterise the pixel bounding box with edge functions, one 32-bit
//!    `atomicMax` per covered pixel (after an early depth test with a plain load). A
//!    triangle whose box exceeds [`ComputeRasterOptions::big_triangle_pixels`] goes to a list
//!    instead.
//! 2. **big triangles** (`cs_big_prepare`, `cs_big`): an indirect dispatch of one workgroup
//!    per listed triangle; its invocations stride over the box's pixels.
//! 3. **resolve** (`cs_resolve`): one invocation per pixel turns the visibility word into
//!    RGBA8 (lambert + ambient with one directional light, like the hardware path) and clears
//!    it for the next frame.
//!
//! The visibility word is a packed `depth | payload`: the top 22 bits of the reversed depth
//! `1 − z_ndc` as an f32 (positive floats order like their bits; 13 mantissa bits give a
//! relative depth precision of 2⁻¹³), then 10 bits of payload: a material index (the clip's
//! tint for baked crowds, [`BAKED_MATERIAL_BITS`] bits) and the light factor, quantised, which
//! the vertices carry and the pixels interpolate (Gouraud rather than the hardware path's
//! per-pixel normal). Nearest wins; only 32-bit atomics are needed (portable WGSL, runs on
//! lavapipe).
//!
//! Palette crowds morph each vertex by its instance's active targets and skin it by the mesh's
//! [`sinew_jobs::asset::SkinningMethod`] with `skinning.wgsl`'s own functions (`morph_vertex`,
//! `dqs_bone`, `dqs_blend`, `dqs_apply`); the method's WGSL piece (`raster_skin_linear.wgsl`
//! or `raster_skin_dq.wgsl`) is joined at pipeline creation.
//!
//! Near plane: a vertex in front of the near plane (behind the eye included) is marked, and a
//! triangle with one or two marked vertices is re-skinned, clipped against the near plane in
//! clip space and drawn as one or two triangles (like the graphics pipeline's clipping).
//!
//! Level of detail ([`LodLevel`], `with_lods` on both renderers): the levels of a chain share
//! the vertex and cluster buffers; per instance, invocation 0 picks the coarsest level whose
//! error (model units × the world transform's largest scale) projects to at most
//! [`ComputeRasterOptions::lod_pixel_error`] pixels at the near side of the LOD sphere (the
//! bind pose's bounding sphere with twice its radius): `error × focal_px / (w_centre −
//! radius)`, level 0 when that sphere reaches the eye plane.
//!
//! Differences from the hardware path, by design: pixel-centre coverage with inclusive edges
//! (no top-left rule: shared edges are written twice, harmlessly), screen-space (not perspective-correct) interpolation of depth and light
//! across a triangle (exact for depth, which is affine in screen space).
#![forbid(unsafe_code)]

mod baked;
mod palette;

pub use baked::{ComputeBakedRenderer, RasterFrameTiming};
pub use palette::{ComputeCrowdRenderer, mesh_bounding_sphere, rest_pose_bounding_sphere};

use std::time::Duration;

use glam::{DMat4, DVec4, Mat4, Vec3};

use sinew_jobs::asset::SkinnedMesh;

use crate::context::{GpuContext, GpuError};

/// The shared rasteriser source (joined with a vertex source and a skinning method).
pub const RASTER_WGSL: &str = include_str!("../shaders/raster_common.wgsl");
/// The rasteriser's linear blend skinning (`raster_set_bone`, `raster_skin`).
pub(crate) const RASTER_SKIN_LINEAR_WGSL: &str = include_str!("../shaders/raster_skin_linear.wgsl");
/// The rasteriser's dual-quaternion skinning, on `skinning.wgsl`'s `dqs_*` functions.
pub(crate) const RASTER_SKIN_DQ_WGSL: &str = include_str!("../shaders/raster_skin_dq.wgsl");
/// Invocations per workgroup of the raster and big-triangle passes (must match the shader).
pub const GROUP_SIZE: u32 = 256;
/// Most bones a baked mesh may have for the compute rasteriser (workgroup memory).
pub const RASTER_MAX_BONES: u32 = 128;
/// Bits of the visibility payload that hold the clip's tint index for baked crowds (the
/// remaining 7 bits hold the light factor; palette crowds use all 10 for light).
pub const BAKED_MATERIAL_BITS: u32 = 3;
/// Timestamp queries one frame writes (raster start, raster end, big end, resolve end).
pub const TIMESTAMPS_PER_FRAME: u32 = 4;
const MAX_GROUPS_X: u32 = 65_535;
/// Most levels in a renderer's LOD chain (the uniform's level table).
pub const MAX_LOD_LEVELS: usize = 8;

/// One level of a LOD chain: a mesh with the same bones as level 0 and its geometric error in
/// model units (0 for the full mesh; `sinew_jobs::asset::MeshLod::error` for a simplified
/// one). Levels are ordered finest first with non-decreasing errors.
#[derive(Clone, Copy, Debug)]
pub struct LodLevel<'a> {
    /// The level's mesh.
    pub mesh: &'a SkinnedMesh,
    /// Largest distance from the full mesh's surface, model units.
    pub error: f32,
}
const BIG_TRIANGLE_BYTES: u64 = 64;

/// Tuning knobs of the compute rasteriser.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ComputeRasterOptions {
    /// A triangle whose clamped pixel bounding box holds more pixels than this goes to the
    /// big-triangle pass (a workgroup per triangle) instead of one invocation's loop.
    pub big_triangle_pixels: u32,
    /// Capacity of the big-triangle list per frame; past it the raster pass draws them itself.
    /// The list is allocated when the renderer is created: a larger value set later is
    /// limited to that.
    pub big_triangle_capacity: u32,
    /// Model-space bounding sphere (centre, radius) used to cull whole instances against the
    /// frustum, or `None` to draw every instance's triangles. The renderers default to the
    /// bind pose's bounding sphere with twice its radius (animation moves limbs).
    pub cull_sphere: Option<(Vec3, f32)>,
    /// What the raster pass does (timing only: [`RasterWork::SkinOnly`] draws nothing).
    pub work: RasterWork,
    /// Level of detail: each instance draws the coarsest level of its chain whose
    /// [`LodLevel::error`], projected at the near side of the instance's LOD sphere, is at
    /// most this many pixels (see the [module documentation](self)). Default 1.0; 0 keeps
    /// level 0.
    pub lod_pixel_error: f32,
    /// Count the instances drawn at each level (one atomic per drawn instance; read with
    /// `read_level_counts`). Off by default (it costs time at a million instances).
    pub count_levels: bool,
}

impl ComputeRasterOptions {
    /// Defaults (256-pixel threshold, 65 536 list entries) with the given cull sphere.
    pub fn with_cull_sphere(cull_sphere: Option<(Vec3, f32)>) -> Self {
        Self {
            big_triangle_pixels: 256,
            big_triangle_capacity: 1 << 16,
            cull_sphere,
            work: RasterWork::Full,
            lod_pixel_error: 1.0,
            count_levels: false,
        }
    }
}

/// What the raster pass does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RasterWork {
    /// Cull, skin, project and rasterise (a real frame).
    #[default]
    Full,
    /// Cull, skin and project every triangle's vertices but rasterise nothing: timing the
    /// skinning half of the raster pass (the image stays empty).
    SkinOnly,
}

/// GPU time of one frame's passes (timestamp queries).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RasterGpuTimes {
    /// Instance culling, skinning and small-triangle rasterisation.
    pub raster: Duration,
    /// The big-triangle list (prepare + indirect dispatch).
    pub big: Duration,
    /// Resolve to RGBA8 (and clearing for the next frame).
    pub resolve: Duration,
}

impl RasterGpuTimes {
    /// Sum of the passes.
    pub fn total(&self) -> Duration {
        self.raster + self.big + self.resolve
    }

    /// The times between `TIMESTAMPS_PER_FRAME` consecutive ticks, `period_ns` per tick.
    pub fn from_ticks(ticks: &[u64], period_ns: f32) -> Option<Self> {
        let d = |a: u64, b: u64| {
            Duration::from_nanos((b.saturating_sub(a) as f64 * f64::from(period_ns)) as u64)
        };
        match ticks {
            [t0, t1, t2, t3, ..] => Some(Self {
                raster: d(*t0, *t1),
                big: d(*t1, *t2),
                resolve: d(*t2, *t3),
            }),
            _ => None,
        }
    }
}

/// Where one frame writes its [`TIMESTAMPS_PER_FRAME`] timestamps.
#[derive(Clone, Copy, Debug)]
pub struct RasterTimestamps<'a> {
    /// A timestamp query set.
    pub query_set: &'a wgpu::QuerySet,
    /// Index of the first of the frame's queries.
    pub first: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct RasterParams {
    clip_x: [f32; 4],
    clip_y: [f32; 4],
    clip_w: [f32; 4],
    depth_row: [f32; 4],
    frustum: [[f32; 4]; 6],
    light_to: [f32; 4],
    cull_sphere: [f32; 4],
    clear: [f32; 4],
    albedo: [f32; 4],
    width: u32,
    height: u32,
    instance_count: u32,
    cluster_count: u32,
    big_capacity: u32,
    big_threshold: u32,
    material_bits: u32,
    flags: u32,
    bone_count: u32,
    vertex_stride: u32,
    level_count: u32,
    lod_scale: f32,
    lod_pixel_error: f32,
    /// Vertices per target in the morph delta buffer (all levels' vertices).
    morph_vertex_count: u32,
    /// Where the cluster vertices' source vertex indices start in the cluster buffer.
    source_offset: u32,
    pad: u32,
    /// Model-space sphere (centre, radius) whose near side the level choice projects.
    lod_sphere: [f32; 4],
    /// Per level: first cluster, cluster count, error (f32 bits), 0.
    levels: [[u32; 4]; MAX_LOD_LEVELS],
}

const FLAG_SRGB: u32 = 1;
const FLAG_SKIN_ONLY: u32 = 2;
const FLAG_COUNT_LEVELS: u32 = 4;
const FLAG_MORPH: u32 = 8;

/// Per-frame inputs of [`RasterCore::params`] that depend on the vertex source.
pub(crate) struct FrameLook {
    pub view_proj: Mat4,
    /// Unit vector towards the light.
    pub light_to: Vec3,
    pub ambient: f32,
    pub clear: [f32; 4],
    pub albedo: Vec3,
    pub srgb: bool,
    pub material_bits: u32,
    pub bone_count: u32,
    /// Whether the instances have morph lists (palette source).
    pub morph: bool,
}

/// Frustum planes (inside: `dot(plane, (p, 1)) ≥ 0`), normalised, for depth 0..1.
fn frustum_planes(vp: &DMat4) -> [[f32; 4]; 6] {
    let (r0, r1, r2, r3) = (vp.row(0), vp.row(1), vp.row(2), vp.row(3));
    let planes: [DVec4; 6] = [r3 + r0, r3 - r0, r3 + r1, r3 - r1, r2, r3 - r2];
    planes.map(|p| {
        let l = p.truncate().length();
        let p = if l > 0.0 { p / l } else { p };
        p.as_vec4().to_array()
    })
}

/// The bind-pose bounding sphere of `positions` with `margin` times its radius.
pub(crate) fn bind_pose_sphere(positions: &[Vec3], margin: f32) -> Option<(Vec3, f32)> {
    let first = positions.first()?;
    let (lo, hi) = positions
        .iter()
        .fold((*first, *first), |(l, h), p| (l.min(*p), h.max(*p)));
    let centre = (lo + hi) * 0.5;
    let radius = positions
        .iter()
        .map(|p| p.distance(centre))
        .fold(0.0f32, f32::max);
    Some((centre, radius * margin))
}

/// The pipelines of one vertex source.
#[derive(Debug)]
pub(crate) struct RasterPipelines {
    raster: wgpu::ComputePipeline,
    prepare: wgpu::ComputePipeline,
    big: wgpu::ComputePipeline,
    resolve: wgpu::ComputePipeline,
    group1_layout: wgpu::BindGroupLayout,
}

fn storage_entry(binding: u32, read_only: bool) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

/// Buffers, pipelines and bind groups shared by both vertex sources.
#[derive(Debug)]
pub(crate) struct RasterCore {
    pipelines: RasterPipelines,
    group2: wgpu::BindGroup,
    buffers: RasterBuffers,
    instances: Option<wgpu::Buffer>,
    group1: Option<wgpu::BindGroup>,
    levels: Vec<[u32; 4]>,
    lod_sphere: [f32; 4],
    pub(crate) width: u32,
    pub(crate) height: u32,
    cluster_count: u32,
    vertex_stride: u32,
    morph_vertex_count: u32,
    source_offset: u32,
    big_allocated: u32,
    pub(crate) instance_count: u32,
    pub(crate) options: ComputeRasterOptions,
}

/// Most vertices per cluster (one invocation each: equal to [`GROUP_SIZE`] and the shader's
/// arrays; local indices are 8 bits).
pub const CLUSTER_VERTICES: usize = 256;

/// A mesh prepared for the raster pass: identical vertices merged, triangles grouped by
/// adjacency into clusters of at most [`CLUSTER_VERTICES`] unique vertices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusteredMesh {
    /// Each cluster's vertices, `vertex_stride` `vec4<u32>` per vertex (see the shader).
    pub vertex_words: Vec<u32>,
    /// Four words per cluster (first vertex, vertex count, first triangle word, triangle
    /// count), then the triangles (three 8-bit local indices per word).
    pub mesh_words: Vec<u32>,
    /// Number of clusters.
    pub cluster_count: u32,
    /// `vec4<u32>` per vertex: 2 (four influences) or 3 (eight).
    pub vertex_stride: u32,
    /// Vertices of the mesh after merging identical ones.
    pub unique_vertices: usize,
    /// Vertices skinned per instance (unique vertices plus those repeated across clusters).
    pub cluster_vertices: usize,
    /// Per cluster vertex, the mesh vertex it stands for (whose morph deltas it takes).
    pub sources: Vec<u32>,
}

fn pack_snorm10(v: f32) -> u32 {
    let q = (v.clamp(-1.0, 1.0) * 511.0).round() as i32;
    (q as u32) & 0x3ff
}

fn pack_unorm16_pair(a: f32, b: f32) -> u32 {
    let q = |w: f32| (w.clamp(0.0, 1.0) * 65535.0).round() as u32;
    q(a) | (q(b) << 16)
}

/// Groups `mesh` into clusters for the raster pass.
///
/// # Errors
/// [`GpuError::InvalidInput`] for a mesh without triangles, an index past the vertices or a
/// joint index over 65 535.
pub fn cluster_mesh(mesh: &SkinnedMesh) -> Result<ClusteredMesh, GpuError> {
    cluster_mesh_stride(mesh, false)
}

fn has_extra_influences(mesh: &SkinnedMesh) -> bool {
    mesh.weights_extra().iter().flatten().any(|w| *w != 0.0)
}

/// [`cluster_mesh`] with the 8-influence layout forced when `force_extra` (a LOD chain shares
/// one vertex stride).
fn cluster_mesh_stride(mesh: &SkinnedMesh, force_extra: bool) -> Result<ClusteredMesh, GpuError> {
    let what = |w: String| GpuError::InvalidInput {
        what: format!("compute raster: mesh '{}': {w}", mesh.name()),
    };
    let n = mesh.positions().len();
    let extra = force_extra || has_extra_influences(mesh);
    let stride = if extra { 3 } else { 2 };
    let joint_pair = |j: [u32; 4]| -> Result<[u32; 2], GpuError> {
        if let Some(bad) = j.iter().find(|j| **j > 0xffff) {
            return Err(what(format!("joint index {bad} over 65535")));
        }
        Ok([j[0] | (j[1] << 16), j[2] | (j[3] << 16)])
    };
    // Vertices merge when their words are equal and, for a mesh with morph targets, so are
    // their deltas in every target (the key holds a hash of them; equal keys are compared).
    let morph = mesh.morph_targets();
    let deltas = |v: usize| {
        (0..morph.len()).flat_map(move |k| {
            let n = morph
                .target_normals(k)
                .get(v)
                .copied()
                .unwrap_or(Vec3::ZERO);
            [
                morph
                    .target_positions(k)
                    .get(v)
                    .copied()
                    .unwrap_or(Vec3::ZERO),
                n,
            ]
        })
    };
    let delta_hash = |v: usize| {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for d in deltas(v) {
            d.to_array().map(f32::to_bits).hash(&mut h);
        }
        h.finish()
    };
    let same_deltas = |a: usize, b: usize| {
        deltas(a)
            .zip(deltas(b))
            .all(|(x, y)| x.to_array().map(f32::to_bits) == y.to_array().map(f32::to_bits))
    };
    let mut unique: std::collections::HashMap<([u32; 12], u64), Vec<u32>> =
        std::collections::HashMap::new();
    let mut unique_words: Vec<[u32; 12]> = Vec::new();
    let mut unique_source: Vec<u32> = Vec::new();
    let mut remap = Vec::with_capacity(n);
    for (v, p) in mesh.positions().iter().enumerate() {
        let nrm = mesh.normals().get(v).copied().unwrap_or(Vec3::Y);
        let mut w = [0u32; 12];
        w[0] = p.x.to_bits();
        w[1] = p.y.to_bits();
        w[2] = p.z.to_bits();
        w[3] = pack_snorm10(nrm.x) | (pack_snorm10(nrm.y) << 10) | (pack_snorm10(nrm.z) << 20);
        let [j01, j23] = joint_pair(mesh.joints().get(v).copied().unwrap_or([0; 4]))?;
        let wt = mesh
            .weights()
            .get(v)
            .copied()
            .unwrap_or([1.0, 0.0, 0.0, 0.0]);
        w[4..8].copy_from_slice(&[
            j01,
            j23,
            pack_unorm16_pair(wt[0], wt[1]),
            pack_unorm16_pair(wt[2], wt[3]),
        ]);
        if extra {
            let [j45, j67] = joint_pair(mesh.joints_extra().get(v).copied().unwrap_or([0; 4]))?;
            let we = mesh.weights_extra().get(v).copied().unwrap_or([0.0; 4]);
            w[8..12].copy_from_slice(&[
                j45,
                j67,
                pack_unorm16_pair(we[0], we[1]),
                pack_unorm16_pair(we[2], we[3]),
            ]);
        }
        let key = (w, if morph.is_empty() { 0 } else { delta_hash(v) });
        let candidates = unique.entry(key).or_default();
        let id = match candidates
            .iter()
            .find(|id| morph.is_empty() || same_deltas(unique_source[**id as usize] as usize, v))
        {
            Some(id) => *id,
            None => {
                unique_words.push(w);
                unique_source.push(v as u32);
                let id = (unique_words.len() - 1) as u32;
                candidates.push(id);
                id
            }
        };
        remap.push(id);
    }
    let words = stride * 4;
    let mut vertex_words = Vec::new();
    let mut table = Vec::new();
    let mut triangles: Vec<u32> = Vec::new();
    let mut local: Vec<u32> = Vec::with_capacity(CLUSTER_VERTICES);
    let mut cluster_tris: Vec<u32> = Vec::new();
    let mut cluster_vertices = 0usize;
    let mut sources = Vec::new();
    let mut flush = |local: &mut Vec<u32>, cluster_tris: &mut Vec<u32>| {
        if cluster_tris.is_empty() {
            return;
        }
        table.push([
            (vertex_words.len() / words) as u32,
            local.len() as u32,
            triangles.len() as u32,
            cluster_tris.len() as u32,
        ]);
        for id in local.iter() {
            vertex_words.extend_from_slice(&unique_words[*id as usize][..words]);
            sources.push(unique_source[*id as usize]);
        }
        cluster_vertices += local.len();
        triangles.append(cluster_tris);
        local.clear();
    };
    // Triangles by unique vertex ids, and the triangles around each vertex.
    let mut tris: Vec<[u32; 3]> = Vec::with_capacity(mesh.indices().len() / 3);
    let mut around: Vec<Vec<u32>> = vec![Vec::new(); unique_words.len()];
    for t in mesh.indices().chunks_exact(3) {
        let mut ids = [0u32; 3];
        for (k, i) in t.iter().enumerate() {
            ids[k] = *remap
                .get(*i as usize)
                .ok_or_else(|| what(format!("index {i} past {n} vertices")))?;
            around[ids[k] as usize].push(tris.len() as u32);
        }
        tris.push(ids);
    }
    // Grow each cluster from the first unassigned triangle by the neighbouring triangle that
    // adds the fewest new vertices (else the next unassigned one), until none fits.
    let mut assigned = vec![false; tris.len()];
    let mut candidates: Vec<u32> = Vec::new();
    let new_vertices = |local: &[u32], ids: &[u32; 3]| {
        ids.iter()
            .enumerate()
            .filter(|(k, id)| !local.contains(id) && !ids[..*k].contains(id))
            .count()
    };
    let mut seed = 0usize;
    while seed < tris.len() {
        if assigned[seed] {
            seed += 1;
            continue;
        }
        let mut next = Some(seed as u32);
        while let Some(t) = next {
            let ids = tris[t as usize];
            assigned[t as usize] = true;
            let mut packed = 0u32;
            for (k, id) in ids.iter().enumerate() {
                let slot = match local.iter().position(|l| l == id) {
                    Some(s) => s,
                    None => {
                        local.push(*id);
                        candidates.extend_from_slice(&around[*id as usize]);
                        local.len() - 1
                    }
                };
                packed |= (slot as u32) << (8 * k);
            }
            cluster_tris.push(packed);
            candidates.retain(|c| !assigned[*c as usize]);
            next = candidates
                .iter()
                .map(|c| (new_vertices(&local, &tris[*c as usize]), *c))
                .filter(|(new, _)| local.len() + new <= CLUSTER_VERTICES)
                .min()
                .map(|(_, c)| c);
            if next.is_none() {
                // No neighbour fits (or none is left): continue with the next unassigned
                // triangle in index order when it fits (disconnected pieces share clusters).
                while seed < tris.len() && assigned[seed] {
                    seed += 1;
                }
                next = tris
                    .get(seed)
                    .filter(|t| local.len() + new_vertices(&local, t) <= CLUSTER_VERTICES)
                    .map(|_| seed as u32);
            }
        }
        candidates.clear();
        flush(&mut local, &mut cluster_tris);
    }
    if table.is_empty() {
        return Err(what("no triangles".into()));
    }
    let header = 4 * table.len() as u32;
    let mut mesh_words = Vec::with_capacity(header as usize + triangles.len());
    for [first_vertex, count, first_tri, tri_count] in &table {
        mesh_words.extend_from_slice(&[*first_vertex, *count, header + first_tri, *tri_count]);
    }
    mesh_words.extend_from_slice(&triangles);
    Ok(ClusteredMesh {
        vertex_words,
        mesh_words,
        cluster_count: table.len() as u32,
        vertex_stride: stride as u32,
        unique_vertices: unique_words.len(),
        cluster_vertices,
        sources,
    })
}

/// A LOD chain clustered into one vertex buffer and one cluster buffer: the clusters of all
/// levels, level after level, then all triangles; the level table gives each level's range.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusteredChain {
    /// All levels' vertices (one stride).
    pub vertex_words: Vec<u32>,
    /// Cluster headers of every level, then the triangles (as [`ClusteredMesh::mesh_words`]).
    pub mesh_words: Vec<u32>,
    /// Per level: first cluster, cluster count, error (f32 bits), 0.
    pub levels: Vec<[u32; 4]>,
    /// `vec4<u32>` per vertex.
    pub vertex_stride: u32,
    /// Clusters of all levels.
    pub cluster_count: u32,
    /// Vertices skinned per instance at each level.
    pub level_vertices: Vec<usize>,
    /// Triangles per level.
    pub level_triangles: Vec<usize>,
    /// Per vertex of [`ClusteredChain::vertex_words`], the vertex whose morph deltas it takes,
    /// numbering the levels' vertices one after the other (level 0's first).
    pub sources: Vec<u32>,
}

/// Clusters every level of a LOD chain into shared buffers.
///
/// # Errors
/// [`GpuError::InvalidInput`] for an empty chain or one longer than [`MAX_LOD_LEVELS`], levels
/// whose bones differ from level 0's, errors that are negative, not finite or decreasing, and
/// [`cluster_mesh`]'s errors.
pub fn cluster_chain(levels: &[LodLevel<'_>]) -> Result<ClusteredChain, GpuError> {
    let bad = |what: String| GpuError::InvalidInput {
        what: format!("compute raster LOD chain: {what}"),
    };
    let Some(first) = levels.first() else {
        return Err(bad("no levels".into()));
    };
    if levels.len() > MAX_LOD_LEVELS {
        return Err(bad(format!(
            "{} levels (at most {MAX_LOD_LEVELS})",
            levels.len()
        )));
    }
    let mut previous = 0.0f32;
    for (i, l) in levels.iter().enumerate() {
        if l.mesh.bones() != first.mesh.bones() {
            return Err(bad(format!(
                "level {i} ('{}') has other bones than level 0 ('{}')",
                l.mesh.name(),
                first.mesh.name()
            )));
        }
        if l.mesh.skinning() != first.mesh.skinning()
            || l.mesh.morph_targets().len() != first.mesh.morph_targets().len()
        {
            return Err(bad(format!(
                "level {i} ('{}') has {:?} skinning and {} morph targets, level 0 {:?} and {}",
                l.mesh.name(),
                l.mesh.skinning(),
                l.mesh.morph_targets().len(),
                first.mesh.skinning(),
                first.mesh.morph_targets().len()
            )));
        }
        if !(l.error.is_finite() && l.error >= previous) {
            return Err(bad(format!(
                "level {i} error {} (finite, ≥ 0 and non-decreasing)",
                l.error
            )));
        }
        previous = l.error;
    }
    let extra = levels.iter().any(|l| has_extra_influences(l.mesh));
    let clustered = levels
        .iter()
        .map(|l| cluster_mesh_stride(l.mesh, extra))
        .collect::<Result<Vec<_>, _>>()?;
    let total: u32 = clustered.iter().map(|c| c.cluster_count).sum();
    let stride = clustered.first().map_or(2, |c| c.vertex_stride);
    let mut vertex_words = Vec::new();
    let mut headers = Vec::with_capacity(4 * total as usize);
    let mut triangles = Vec::new();
    let mut table = Vec::new();
    let mut sources = Vec::new();
    let mut level_base = 0u32;
    for (c, l) in clustered.iter().zip(levels) {
        let vertex_base = (vertex_words.len() / (4 * stride as usize)) as u32;
        let own_header = 4 * c.cluster_count;
        table.push([
            (headers.len() / 4) as u32,
            c.cluster_count,
            l.error.to_bits(),
            0,
        ]);
        for h in c.mesh_words[..own_header as usize].chunks_exact(4) {
            headers.extend_from_slice(&[
                h[0] + vertex_base,
                h[1],
                4 * total + triangles.len() as u32 + (h[2] - own_header),
                h[3],
            ]);
        }
        triangles.extend_from_slice(&c.mesh_words[own_header as usize..]);
        vertex_words.extend_from_slice(&c.vertex_words);
        sources.extend(c.sources.iter().map(|v| level_base + v));
        level_base += l.mesh.positions().len() as u32;
    }
    headers.extend_from_slice(&triangles);
    Ok(ClusteredChain {
        vertex_words,
        mesh_words: headers,
        levels: table,
        vertex_stride: stride,
        cluster_count: total,
        level_vertices: clustered.iter().map(|c| c.cluster_vertices).collect(),
        level_triangles: levels.iter().map(|l| l.mesh.indices().len() / 3).collect(),
        sources,
    })
}

/// The mesh of level 0 of `levels`, when the chain is not empty, the mesh has at most
/// [`RASTER_MAX_BONES`] bones and the `width × height` target is within the device's limits.
fn check_chain_and_target<'m>(
    ctx: &GpuContext,
    label: &str,
    levels: &[LodLevel<'m>],
    (width, height): (u32, u32),
) -> Result<&'m SkinnedMesh, GpuError> {
    let Some(mesh) = levels.first().map(|l| l.mesh) else {
        return Err(GpuError::InvalidInput {
            what: format!("{label}: no mesh (empty LOD chain)"),
        });
    };
    let max = ctx.limits.max_texture_dimension_2d;
    if width == 0 || height == 0 || width > max || height > max {
        return Err(GpuError::InvalidInput {
            what: format!("{label}: target {width}×{height} (1..={max} per side)"),
        });
    }
    if mesh.bone_count() > RASTER_MAX_BONES as usize {
        return Err(GpuError::InvalidInput {
            what: format!(
                "{label}: mesh '{}' has {} bones (the compute rasteriser takes at most {RASTER_MAX_BONES})",
                mesh.name(),
                mesh.bone_count()
            ),
        });
    }
    Ok(mesh)
}

/// The buffers of the raster passes, apart from the instances (sized per frame).
#[derive(Debug)]
struct RasterBuffers {
    params: wgpu::Buffer,
    vertices: wgpu::Buffer,
    indices: wgpu::Buffer,
    vis: wgpu::Buffer,
    big: wgpu::Buffer,
    /// The big-triangle count, then the instances drawn per level.
    counters: wgpu::Buffer,
    big_args: wgpu::Buffer,
    color: wgpu::Buffer,
    readback: wgpu::Buffer,
    level_counts_read: wgpu::Buffer,
}

impl RasterBuffers {
    /// The clustered chain's vertex and cluster buffers (the cluster buffer followed by the
    /// vertices' sources), a visibility word and a colour word per pixel of the `width ×
    /// height` target, the big-triangle list of `big_triangle_capacity` entries and its
    /// indirect arguments, the counters and the read-back buffers.
    fn new(
        ctx: &GpuContext,
        label: &str,
        clustered: &ClusteredChain,
        (width, height): (u32, u32),
        big_triangle_capacity: u32,
    ) -> Result<Self, GpuError> {
        let device = &ctx.device;
        let pixels_bytes = u64::from(width) * u64::from(height) * 4;
        let big_bytes = u64::from(big_triangle_capacity.max(1)) * BIG_TRIANGLE_BYTES;
        for (what, size) in [
            ("visibility buffer", pixels_bytes),
            ("big-triangle list", big_bytes),
        ] {
            ctx.check_storage_size(size, || format!("{label}: {what}"))?;
        }
        let storage = |label: &str, size: u64, extra: wgpu::BufferUsages| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: size.max(16),
                usage: wgpu::BufferUsages::STORAGE | extra,
                mapped_at_creation: false,
            })
        };
        let read = |label: &str, size: u64| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let none = wgpu::BufferUsages::empty();
        let counts_bytes = 4 * MAX_LOD_LEVELS as u64;
        let mesh_words = [clustered.mesh_words.as_slice(), &clustered.sources].concat();
        Ok(Self {
            params: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("raster params"),
                size: std::mem::size_of::<RasterParams>() as u64,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            vertices: ctx.storage_init(
                "raster vertices",
                bytemuck::cast_slice(&clustered.vertex_words),
                none,
            )?,
            indices: ctx.storage_init(
                "raster clusters",
                bytemuck::cast_slice(&mesh_words),
                none,
            )?,
            vis: storage("raster visibility", pixels_bytes, none),
            big: storage("raster big triangles", big_bytes, none),
            counters: storage(
                "raster counters",
                4 + counts_bytes,
                wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            ),
            big_args: storage("raster big args", 16, wgpu::BufferUsages::INDIRECT),
            color: storage("raster colour", pixels_bytes, wgpu::BufferUsages::COPY_SRC),
            readback: read("raster read-back", pixels_bytes),
            level_counts_read: read("raster level counts read", counts_bytes),
        })
    }
}

impl RasterPipelines {
    /// Compiles `source` and builds the four passes' pipelines over group 0
    /// (`group0_layout`, the vertex source's bindings), group 1 (the raster buffers) and, for
    /// the big-triangle preparation, group 2 (the indirect arguments it writes): the pipelines
    /// and group 2's layout.
    fn new(
        device: &wgpu::Device,
        label: &str,
        source: String,
        group0_layout: &wgpu::BindGroupLayout,
    ) -> (Self, wgpu::BindGroupLayout) {
        let group1_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("raster group 1"),
            entries: &[
                wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                },
                storage_entry(1, true),
                storage_entry(2, true),
                storage_entry(3, true),
                storage_entry(4, false),
                storage_entry(5, false),
                storage_entry(6, false),
                storage_entry(7, false),
            ],
        });
        let group2_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("raster group 2"),
            entries: &[storage_entry(0, false)],
        });
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(label),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
        let layout2 = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("raster"),
            bind_group_layouts: &[Some(group0_layout), Some(&group1_layout)],
            immediate_size: 0,
        });
        // The preparation reads no vertex source binding: without group 0 it stays within the
        // storage-buffer limit with group 2 added.
        let layout3 = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("raster prepare"),
            bind_group_layouts: &[None, Some(&group1_layout), Some(&group2_layout)],
            immediate_size: 0,
        });
        let pipeline = |entry: &str, layout: &wgpu::PipelineLayout| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(layout),
                module: &module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        let pipelines = Self {
            raster: pipeline("cs_raster", &layout2),
            prepare: pipeline("cs_big_prepare", &layout3),
            big: pipeline("cs_big", &layout2),
            resolve: pipeline("cs_resolve", &layout2),
            group1_layout,
        };
        (pipelines, group2_layout)
    }
}

impl RasterCore {
    /// `source` is the full WGSL (vertex source + [`RASTER_WGSL`]); `group0_layout` the
    /// source's own bindings; `levels` the LOD chain (level 0 alone for no LOD).
    pub(crate) fn new(
        ctx: &GpuContext,
        label: &str,
        source: String,
        group0_layout: &wgpu::BindGroupLayout,
        levels: &[LodLevel<'_>],
        target: (u32, u32),
        options: ComputeRasterOptions,
    ) -> Result<Self, GpuError> {
        let mesh = check_chain_and_target(ctx, label, levels, target)?;
        let clustered = cluster_chain(levels)?;
        let lod_sphere = bind_pose_sphere(mesh.positions(), 2.0)
            .map_or([0.0, 0.0, 0.0, -1.0], |(c, r)| [c.x, c.y, c.z, r]);
        let buffers = RasterBuffers::new(
            ctx,
            label,
            &clustered,
            target,
            options.big_triangle_capacity,
        )?;
        let (pipelines, group2_layout) =
            RasterPipelines::new(&ctx.device, label, source, group0_layout);
        let group2 = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("raster big args"),
            layout: &group2_layout,
            entries: &[entry(0, &buffers.big_args)],
        });
        Ok(Self {
            pipelines,
            group2,
            buffers,
            instances: None,
            group1: None,
            levels: clustered.levels,
            lod_sphere,
            width: target.0,
            height: target.1,
            cluster_count: clustered.cluster_count,
            vertex_stride: clustered.vertex_stride,
            morph_vertex_count: levels.iter().map(|l| l.mesh.positions().len() as u32).sum(),
            source_offset: clustered.mesh_words.len() as u32,
            big_allocated: options.big_triangle_capacity,
            instance_count: 0,
            options,
        })
    }
}

fn entry(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: buffer.as_entire_binding(),
    }
}

impl RasterCore {
    /// Uploads the instances' bytes (growing the buffer when needed) and rebuilds group 1.
    pub(crate) fn set_instances(
        &mut self,
        ctx: &GpuContext,
        label: &str,
        bytes: &[u8],
        count: usize,
    ) -> Result<(), GpuError> {
        let count = u32::try_from(count).map_err(|_| GpuError::InvalidInput {
            what: format!("{label}: {count} instances (over u32)"),
        })?;
        let size = bytes.len() as u64;
        ctx.check_storage_size(size, || format!("{label}: instance buffer"))?;
        let reuse = self.instances.as_ref().is_some_and(|b| b.size() >= size);
        if !reuse || self.group1.is_none() {
            let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("raster instances"),
                size: size.max(128).div_ceil(16) * 16,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            self.group1 = Some(ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("raster group 1"),
                layout: &self.pipelines.group1_layout,
                entries: &[
                    entry(0, &self.buffers.params),
                    entry(1, &self.buffers.vertices),
                    entry(2, &self.buffers.indices),
                    entry(3, &buffer),
                    entry(4, &self.buffers.vis),
                    entry(5, &self.buffers.big),
                    entry(6, &self.buffers.counters),
                    entry(7, &self.buffers.color),
                ],
            }));
            self.instances = Some(buffer);
        }
        if let Some(b) = &self.instances
            && !bytes.is_empty()
        {
            ctx.queue.write_buffer(b, 0, bytes);
        }
        self.instance_count = count;
        Ok(())
    }

    /// The uniform block for one frame.
    pub(crate) fn params(&self, look: &FrameLook) -> RasterParams {
        let vp = look.view_proj.as_dmat4();
        let row = |i: usize| vp.row(i).as_vec4().to_array();
        let depth_row = (vp.row(3) - vp.row(2)).as_vec4().to_array();
        let o = &self.options;
        let cull_sphere = match o.cull_sphere {
            Some((c, r)) if r.is_finite() && r >= 0.0 && c.is_finite() => [c.x, c.y, c.z, r],
            _ => [0.0, 0.0, 0.0, -1.0],
        };
        let mut flags = 0;
        if look.morph {
            flags |= FLAG_MORPH;
        }
        if look.srgb {
            flags |= FLAG_SRGB;
        }
        if o.work == RasterWork::SkinOnly {
            flags |= FLAG_SKIN_ONLY;
        }
        if o.count_levels {
            flags |= FLAG_COUNT_LEVELS;
        }
        let mut levels = [[0u32; 4]; MAX_LOD_LEVELS];
        for (slot, l) in levels.iter_mut().zip(&self.levels) {
            *slot = *l;
        }
        // Pixels per model unit at clip w = 1: half the height times the length of view_proj's
        // y row over that of its w row (for a perspective camera: the focal length in pixels;
        // w is the view depth).
        let wlen = vp.row(3).truncate().length();
        let lod_scale = if wlen > 0.0 {
            (0.5 * f64::from(self.height) * vp.row(1).truncate().length() / wlen) as f32
        } else {
            0.0
        };
        RasterParams {
            clip_x: row(0),
            clip_y: row(1),
            clip_w: row(3),
            depth_row,
            frustum: frustum_planes(&vp),
            light_to: [
                look.light_to.x,
                look.light_to.y,
                look.light_to.z,
                look.ambient.clamp(0.0, 1.0),
            ],
            cull_sphere,
            clear: look.clear,
            albedo: [look.albedo.x, look.albedo.y, look.albedo.z, 1.0],
            width: self.width,
            height: self.height,
            instance_count: self.instance_count,
            cluster_count: self.cluster_count,
            // The list was allocated with the capacity at creation.
            big_capacity: o.big_triangle_capacity.min(self.big_allocated),
            big_threshold: o.big_triangle_pixels,
            material_bits: look.material_bits.min(9),
            flags,
            bone_count: look.bone_count,
            vertex_stride: self.vertex_stride,
            level_count: self.levels.len() as u32,
            lod_scale,
            lod_pixel_error: if o.lod_pixel_error.is_finite() {
                o.lod_pixel_error.max(0.0)
            } else {
                0.0
            },
            morph_vertex_count: self.morph_vertex_count,
            source_offset: self.source_offset,
            pad: 0,
            lod_sphere: self.lod_sphere,
            levels,
        }
    }

    /// Records the raster, big-triangle and resolve passes (queueing `params`).
    pub(crate) fn encode(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        group0: &wgpu::BindGroup,
        params: &RasterParams,
        timestamps: Option<RasterTimestamps<'_>>,
    ) {
        ctx.queue
            .write_buffer(&self.buffers.params, 0, bytemuck::bytes_of(params));
        let Some(group1) = &self.group1 else {
            return;
        };
        if self.options.count_levels {
            encoder.clear_buffer(&self.buffers.counters, 4, None);
        }
        let tw = |begin: Option<u32>, end: u32| {
            timestamps.map(|t| wgpu::ComputePassTimestampWrites {
                query_set: t.query_set,
                beginning_of_pass_write_index: begin.map(|b| t.first + b),
                end_of_pass_write_index: Some(t.first + end),
            })
        };
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("raster"),
                timestamp_writes: tw(Some(0), 1),
            });
            let n = self.instance_count;
            if n > 0 {
                pass.set_pipeline(&self.pipelines.raster);
                pass.set_bind_group(0, group0, &[]);
                pass.set_bind_group(1, group1, &[]);
                pass.dispatch_workgroups(n.min(MAX_GROUPS_X), n.div_ceil(MAX_GROUPS_X), 1);
            }
        }
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("raster big triangles"),
                timestamp_writes: tw(None, 2),
            });
            pass.set_pipeline(&self.pipelines.prepare);
            pass.set_bind_group(1, group1, &[]);
            pass.set_bind_group(2, &self.group2, &[]);
            pass.dispatch_workgroups(1, 1, 1);
            pass.set_pipeline(&self.pipelines.big);
            pass.set_bind_group(0, group0, &[]);
            pass.set_bind_group(1, group1, &[]);
            pass.dispatch_workgroups_indirect(&self.buffers.big_args, 0);
        }
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("raster resolve"),
                timestamp_writes: tw(None, 3),
            });
            pass.set_pipeline(&self.pipelines.resolve);
            pass.set_bind_group(0, group0, &[]);
            pass.set_bind_group(1, group1, &[]);
            pass.dispatch_workgroups(self.width.div_ceil(8), self.height.div_ceil(8), 1);
        }
    }

    /// The instances drawn at each level by the last frame encoded with
    /// [`ComputeRasterOptions::count_levels`] (blocking; zeros without it).
    ///
    /// # Errors
    /// [`GpuError::Map`], [`GpuError::Poll`].
    pub(crate) fn read_level_counts(&self, ctx: &GpuContext) -> Result<Vec<u32>, GpuError> {
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("raster level counts"),
            });
        encoder.copy_buffer_to_buffer(
            &self.buffers.counters,
            4,
            &self.buffers.level_counts_read,
            0,
            self.buffers.level_counts_read.size(),
        );
        let sub = ctx.queue.submit([encoder.finish()]);
        crate::baked::wait(ctx, Some(sub))?;
        let bytes = crate::baked::read_buffer(
            ctx,
            &self.buffers.level_counts_read,
            self.buffers.level_counts_read.size(),
        )?;
        Ok(bytes
            .chunks_exact(4)
            .take(self.levels.len())
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    /// The resolved image (one RGBA8 word per pixel).
    pub(crate) fn color_buffer(&self) -> &wgpu::Buffer {
        &self.buffers.color
    }

    /// Records the copy of the resolved image into the read-back buffer.
    pub(crate) fn encode_readback(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.copy_buffer_to_buffer(
            &self.buffers.color,
            0,
            &self.buffers.readback,
            0,
            self.buffers.readback.size(),
        );
    }

    /// Waits for `submission` (which must include [`RasterCore::encode_readback`]) and
    /// returns the RGBA8 rows, top to bottom.
    pub(crate) fn read_pixels(
        &self,
        ctx: &GpuContext,
        submission: Option<wgpu::SubmissionIndex>,
    ) -> Result<Vec<u8>, GpuError> {
        crate::baked::wait(ctx, submission)?;
        crate::baked::read_buffer(ctx, &self.buffers.readback, self.buffers.readback.size())
    }
}

/// A timestamp query set for `frames` frames and its resolve/read buffers, when the device has
/// timestamp queries.
#[derive(Debug)]
pub(crate) struct FrameQueries {
    pub set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    read: wgpu::Buffer,
}

impl FrameQueries {
    pub(crate) fn new(ctx: &GpuContext) -> Option<Self> {
        if !ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
            return None;
        }
        let bytes = u64::from(TIMESTAMPS_PER_FRAME) * 8;
        Some(Self {
            set: ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("raster timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: TIMESTAMPS_PER_FRAME,
            }),
            resolve: ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("raster timestamps resolve"),
                size: bytes,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
            read: ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("raster timestamps read"),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
        })
    }

    pub(crate) fn timestamps(&self) -> RasterTimestamps<'_> {
        RasterTimestamps {
            query_set: &self.set,
            first: 0,
        }
    }

    pub(crate) fn encode_resolve(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.resolve_query_set(&self.set, 0..TIMESTAMPS_PER_FRAME, &self.resolve, 0);
        encoder.copy_buffer_to_buffer(&self.resolve, 0, &self.read, 0, self.read.size());
    }

    /// Reads the times (after the submission that resolved them completed).
    pub(crate) fn read(&self, ctx: &GpuContext) -> Result<RasterGpuTimes, GpuError> {
        let bytes = crate::baked::read_buffer(ctx, &self.read, self.read.size())?;
        let ticks: Vec<u64> = bytes
            .chunks_exact(8)
            .map(|c| {
                let mut b = [0u8; 8];
                b.copy_from_slice(c);
                u64::from_le_bytes(b)
            })
            .collect();
        RasterGpuTimes::from_ticks(&ticks, ctx.queue.get_timestamp_period())
            .ok_or_else(|| GpuError::Map("raster timestamps: short read".into()))
    }
}
