// Compute rasteriser for skinned crowds (see gpu/src/raster/mod.rs). Joined with a vertex
// source (raster_palette.wgsl or raster_baked.wgsl), which provides:
//   @group(1) @binding(3) the instances,
//   fn source_world(instance) -> RasterBone              world transform rows (culling)
//   fn source_prepare(instance, lid)                     calls raster_set_bone(b, world, m) for
//                                                        each bone b < bone_count (m: the bone's
//                                                        skinning matrix as rows)
//   fn source_morph(v, position, normal) -> RasterSourceVertex
//                                                        cluster vertex v's morphed bind shape
//   fn source_material(instance) -> u32                  material index (masked by the caller)
//   fn source_material_color(material) -> vec3<f32>      linear colour of a material
// and with a skinning method (raster_skin_linear.wgsl or raster_skin_dq.wgsl), which provides
// raster_set_bone and fn raster_skin(v) -> RasterSourceVertex (world position and normal of
// cluster vertex v).
//
// The mesh arrives as clusters of at most 256 unique vertices (built on the CPU after merging
// identical vertices): raster_mesh holds 4 words per cluster (first vertex, vertex count,
// first triangle word, triangle count) followed by the triangles, three 8-bit local indices
// per word; raster_vertices holds each cluster's vertices, vertex_stride vec4<u32> each:
// position (f32 bits) + normal (10:10:10 snorm), then joints (u16 pairs) and weights (unorm16
// pairs) for four influences, and four more when the mesh has a second influence set.
//
// Passes (one frame):
//   cs_raster      one workgroup per instance: sphere-vs-frustum cull, bone matrices into
//                  workgroup memory, then per cluster: one invocation per vertex skins and
//                  projects it into workgroup memory; then invocations take the cluster's
//                  triangles lid, lid + 256, ...: cull (eye plane, depth range, back face, zero
//                  pixel coverage) and either rasterise the pixel bounding box or, over
//                  big_threshold pixels, append the triangle to the big-triangle list;
//   cs_big_prepare writes the indirect dispatch for the list;
//   cs_big         one workgroup per listed triangle, invocations stride over its pixels;
//   cs_resolve     one invocation per pixel: decodes the visibility word, writes RGBA8, and
//                  clears the word (and the list counter) for the next frame.
//
// Visibility word (32 bits, atomicMax): the top 22 bits of the f32 "reversed depth"
// d = (w - z) / w = 1 - z_ndc (1 at the near plane, 0 at the far plane; positive floats order
// like their bit patterns, so the word orders by depth with 13 mantissa bits = a relative
// precision of 2^-13 in d), then a 10-bit payload: material (material_bits) and the quantised
// light factor (the remaining bits). 0 = empty. Nearest wins; ties go to the larger payload.

struct RasterParams {
    // Rows of view_proj: clip x, clip y, clip w, and (row w - row z) for the reversed depth.
    clip_x: vec4<f32>,
    clip_y: vec4<f32>,
    clip_w: vec4<f32>,
    depth_row: vec4<f32>,
    // Frustum planes (xyz normal pointing inside, w offset), normalised.
    frustum: array<vec4<f32>, 6>,
    // xyz: unit vector towards the light; w: ambient fraction.
    light_to: vec4<f32>,
    // Model-space bounding sphere (xyz centre, w radius); w < 0: no instance culling.
    cull_sphere: vec4<f32>,
    // Linear RGBA of empty pixels.
    clear: vec4<f32>,
    // Linear RGB of material 0 (palette source).
    albedo: vec4<f32>,
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
    // Pixels per model unit at clip w = 1 (focal length in pixels).
    lod_scale: f32,
    // Largest projected error (pixels) a level may have to be drawn.
    lod_pixel_error: f32,
    // Morph targets (palette source): vertices per target in the delta buffer, and where the
    // cluster vertices' source vertex indices start in raster_mesh.
    morph_vertex_count: u32,
    source_offset: u32,
    pad: u32,
    // Model-space LOD sphere (xyz centre, w radius; w < 0: always level 0).
    lod_sphere: vec4<f32>,
    // Per level: first cluster, cluster count, error (f32 bits, model units), 0.
    levels: array<vec4<u32>, 8>,
};

// A listed big triangle: its three screen vertices (x px, y px, reversed depth, light),
// positively oriented, and (material, 0, 0, 0).
struct RasterBigTriangle {
    a: vec4<f32>,
    b: vec4<f32>,
    c: vec4<f32>,
    material: vec4<u32>,
};

// A 3x4 matrix as rows.
struct RasterBone {
    r0: vec4<f32>,
    r1: vec4<f32>,
    r2: vec4<f32>,
};

struct RasterSourceVertex {
    position: vec3<f32>,
    normal: vec3<f32>,
};

@group(1) @binding(0) var<uniform> raster_params: RasterParams;
@group(1) @binding(1) var<storage, read> raster_vertices: array<vec4<u32>>;
@group(1) @binding(2) var<storage, read> raster_mesh: array<u32>;
@group(1) @binding(4) var<storage, read_write> raster_vis: array<atomic<u32>>;
@group(1) @binding(5) var<storage, read_write> raster_big: array<RasterBigTriangle>;
// [0]: listed big triangles; [1 + level]: instances drawn at each LOD level (when
// RASTER_FLAG_COUNT_LEVELS).
@group(1) @binding(6) var<storage, read_write> raster_counters: array<atomic<u32>, 9>;
@group(1) @binding(7) var<storage, read_write> raster_color: array<u32>;
@group(2) @binding(0) var<storage, read_write> raster_big_args: array<u32, 4>;

const RASTER_GROUP: u32 = 256u;
const RASTER_MAX_GROUPS_X: u32 = 65535u;
const RASTER_FLAG_SRGB: u32 = 1u;
const RASTER_FLAG_SKIN_ONLY: u32 = 2u;
const RASTER_FLAG_COUNT_LEVELS: u32 = 4u;
// x of a vertex in front of the near plane (behind the eye included): clipping path.
const RASTER_BEHIND: f32 = 3e38;

// The current cluster's projected vertices: x px, y px, reversed depth, light.
var<workgroup> raster_screen: array<vec4<f32>, 256>;
// 0: culled; else 1 + the instance's LOD level.
var<workgroup> raster_instance_visible: u32;

fn raster_weight_sum(q: vec4<u32>) -> f32 {
    let w = raster_weights(q);
    return w.x + w.y + w.z + w.w;
}

fn raster_unpack_normal(bits: u32) -> vec3<f32> {
    let x = bitcast<i32>(bits << 22u) >> 22u;
    let y = bitcast<i32>(bits << 12u) >> 22u;
    let z = bitcast<i32>(bits << 2u) >> 22u;
    return vec3<f32>(f32(x), f32(y), f32(z)) / 511.0;
}

// Joints (u16 pairs in q.xy) and weights (unorm16 pairs in q.zw) of four influences.
fn raster_joints(q: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(q.x & 0xffffu, q.x >> 16u, q.y & 0xffffu, q.y >> 16u);
}

fn raster_weights(q: vec4<u32>) -> vec4<f32> {
    return vec4<f32>(unpack2x16unorm(q.z), unpack2x16unorm(q.w));
}

// Cluster vertex v's bind position and normal, morphed by the vertex source.
fn raster_bind_vertex(v: u32) -> RasterSourceVertex {
    let q0 = raster_vertices[v * raster_params.vertex_stride];
    return source_morph(v, bitcast<vec3<f32>>(q0.xyz), raster_unpack_normal(q0.w));
}

// 1 / the sum of cluster vertex v's quantised weights (0 when they sum to 0).
fn raster_weight_scale(v: u32) -> f32 {
    let base = v * raster_params.vertex_stride;
    var sum = raster_weight_sum(raster_vertices[base + 1u]);
    if (raster_params.vertex_stride > 2u) {
        sum = sum + raster_weight_sum(raster_vertices[base + 2u]);
    }
    return select(0.0, 1.0 / sum, sum > 0.0);
}

fn raster_light(n: vec3<f32>) -> f32 {
    let l2 = dot(n, n);
    var lambert = 0.0;
    if (l2 > 0.0) {
        lambert = max(dot(n * inverseSqrt(l2), raster_params.light_to.xyz), 0.0);
    }
    let ambient = raster_params.light_to.w;
    return ambient + (1.0 - ambient) * lambert;
}

// Clip coordinates (x, y, w - z, w) of a world position: the third is the reversed depth's
// numerator; the near plane is where it equals w.
fn raster_clip(position: vec3<f32>) -> vec4<f32> {
    let h = vec4<f32>(position, 1.0);
    return vec4<f32>(
        dot(raster_params.clip_x, h),
        dot(raster_params.clip_y, h),
        dot(raster_params.depth_row, h),
        dot(raster_params.clip_w, h),
    );
}

// Signed distance-like value to the near plane (≥ 0 on the visible side): z_clip = w − (w − z).
fn raster_near_side(c: vec4<f32>) -> f32 {
    return c.w - c.z;
}

// Clip coordinates (with w > 0) → (x px, y px, reversed depth).
fn raster_to_screen(c: vec4<f32>) -> vec3<f32> {
    let inv = 1.0 / c.w;
    let x = (c.x * inv + 1.0) * 0.5 * f32(raster_params.width);
    let y = (1.0 - c.y * inv) * 0.5 * f32(raster_params.height);
    return vec3<f32>(x, y, c.z * inv);
}

// (x px, y px, reversed depth, light); x = RASTER_BEHIND in front of the near plane (behind
// the eye included): triangles with such a vertex take the clipping path.
fn raster_project(v: RasterSourceVertex) -> vec4<f32> {
    let c = raster_clip(v.position);
    if (!(raster_near_side(c) >= 0.0 && c.w > 0.0)) {
        return vec4<f32>(RASTER_BEHIND, 0.0, 0.0, 0.0);
    }
    return vec4<f32>(raster_to_screen(c), raster_light(v.normal));
}

// False for NaN and huge values (vertices very close to the eye plane).
fn raster_finite(p: vec4<f32>) -> bool {
    return abs(p.x) < 1e30 && abs(p.y) < 1e30 && abs(p.z) < 1e30;
}

fn raster_key(depth: f32, light: f32, material: u32) -> u32 {
    let light_bits = 10u - raster_params.material_bits;
    let levels = f32((1u << light_bits) - 1u);
    let q = u32(clamp(light, 0.0, 1.0) * levels + 0.5);
    return (bitcast<u32>(depth) & 0xfffffc00u) | (material << light_bits) | q;
}

// Pixel centres inside the bounding box of a, b, c, clamped to the target: (x0, y0, x1, y1),
// empty when x0 > x1 or y0 > y1.
fn raster_bounds(a: vec4<f32>, b: vec4<f32>, c: vec4<f32>) -> vec4<i32> {
    let size = vec2<f32>(f32(raster_params.width), f32(raster_params.height));
    let lo = min(a.xy, min(b.xy, c.xy));
    let hi = max(a.xy, max(b.xy, c.xy));
    let first = clamp(ceil(lo - 0.5), vec2<f32>(0.0), size);
    let last = clamp(floor(hi - 0.5), vec2<f32>(-1.0), size - 1.0);
    return vec4<i32>(vec2<i32>(first), vec2<i32>(last));
}

// Edge-function test of the pixel centre (x + 0.5, y + 0.5) against the positively oriented
// triangle a, b, c (1 / area given); interpolates depth and light in screen space and writes
// the visibility word.
fn raster_pixel(a: vec4<f32>, b: vec4<f32>, c: vec4<f32>, inv_area: f32, x: i32, y: i32, material: u32) {
    let p = vec2<f32>(f32(x) + 0.5, f32(y) + 0.5);
    let e_c = (b.x - a.x) * (p.y - a.y) - (b.y - a.y) * (p.x - a.x);
    let e_a = (c.x - b.x) * (p.y - b.y) - (c.y - b.y) * (p.x - b.x);
    let e_b = (a.x - c.x) * (p.y - c.y) - (a.y - c.y) * (p.x - c.x);
    if (e_a < 0.0 || e_b < 0.0 || e_c < 0.0) {
        return;
    }
    let wa = e_a * inv_area;
    let wb = e_b * inv_area;
    let wc = e_c * inv_area;
    let depth = wa * a.z + wb * b.z + wc * c.z;
    if (!(depth > 0.0 && depth <= 1.0)) {
        return;
    }
    let light = wa * a.w + wb * b.w + wc * c.w;
    let i = u32(y) * raster_params.width + u32(x);
    let key = raster_key(depth, light, material);
    // Early depth test: most crowd pixels are hidden, and a load is cheaper than an atomic.
    if (key > atomicLoad(&raster_vis[i])) {
        atomicMax(&raster_vis[i], key);
    }
}

// Vertices in the order of the mesh (counter-clockwise front faces).
fn raster_triangle(a: vec4<f32>, vb: vec4<f32>, vc: vec4<f32>, material: u32) {
    // b and c swapped so that a front face is positively oriented in pixel space.
    let c = vb;
    let b = vc;
    // Not finite: a vertex behind (or very close to) the eye plane.
    if (!(raster_finite(a) && raster_finite(b) && raster_finite(c))) {
        return;
    }
    // Entirely beyond the far plane or in front of the near plane.
    if (max(a.z, max(b.z, c.z)) < 0.0 || min(a.z, min(b.z, c.z)) > 1.0) {
        return;
    }
    // Front faces are counter-clockwise in NDC (y up): clockwise in pixels (y down), i.e.
    // positive here after the swap. Back faces and zero-area triangles are culled.
    let area = (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x);
    if (!(area > 0.0)) {
        return;
    }
    let r = raster_bounds(a, b, c);
    if (r.x > r.z || r.y > r.w) {
        return; // no pixel centre inside (or off screen)
    }
    let extent = vec2<u32>(r.zw - r.xy) + 1u;
    if (extent.x * extent.y > raster_params.big_threshold) {
        let slot = atomicAdd(&raster_counters[0], 1u);
        if (slot < raster_params.big_capacity) {
            raster_big[slot] = RasterBigTriangle(a, b, c, vec4<u32>(material, 0u, 0u, 0u));
            return;
        }
        // List full: rasterise it here.
    }
    let inv_area = 1.0 / area;
    for (var y = r.y; y <= r.w; y = y + 1) {
        for (var x = r.x; x <= r.z; x = x + 1) {
            raster_pixel(a, b, c, inv_area, x, y, material);
        }
    }
}

// Largest axis scale of a world transform.
fn raster_world_scale(world: RasterBone) -> f32 {
    let c0 = vec3<f32>(world.r0.x, world.r1.x, world.r2.x);
    let c1 = vec3<f32>(world.r0.y, world.r1.y, world.r2.y);
    let c2 = vec3<f32>(world.r0.z, world.r1.z, world.r2.z);
    return sqrt(max(dot(c0, c0), max(dot(c1, c1), dot(c2, c2))));
}

fn raster_world_point(world: RasterBone, p: vec3<f32>) -> vec4<f32> {
    let h = vec4<f32>(p, 1.0);
    return vec4<f32>(dot(world.r0, h), dot(world.r1, h), dot(world.r2, h), 1.0);
}

// The coarsest level whose error, scaled to world units and projected at the near side of the
// LOD sphere (clip w of the centre minus the radius), is at most lod_pixel_error pixels.
// Level 0 when the sphere reaches the eye plane.
fn raster_pick_level(world: RasterBone) -> u32 {
    let s = raster_params.lod_sphere;
    if (s.w < 0.0 || raster_params.level_count <= 1u) {
        return 0u;
    }
    let scale = raster_world_scale(world);
    let w_near = dot(raster_params.clip_w, raster_world_point(world, s.xyz)) - s.w * scale;
    if (!(w_near > 0.0)) {
        return 0u;
    }
    let px_per_unit = raster_params.lod_scale * scale / w_near;
    var level = 0u;
    for (var l = 1u; l < raster_params.level_count; l = l + 1u) {
        let err = bitcast<f32>(raster_params.levels[l].z);
        if (err * px_per_unit <= raster_params.lod_pixel_error) {
            level = l;
        }
    }
    return level;
}

// A triangle (mesh order, cluster-local indices in `packed`) with a vertex in front of the
// near plane: re-skins its three vertices, clips the triangle against the near plane in clip
// space (Sutherland–Hodgman: up to four vertices, light interpolated linearly in clip space)
// and rasterises the fan; large pieces go to the big-triangle list as usual.
fn raster_near_clipped(first_vertex: u32, packed: u32, material: u32) {
    var c: array<vec4<f32>, 3>;
    var l: array<f32, 3>;
    for (var k = 0u; k < 3u; k = k + 1u) {
        let v = raster_skin(first_vertex + ((packed >> (8u * k)) & 0xffu));
        c[k] = raster_clip(v.position);
        l[k] = raster_light(v.normal);
    }
    var out: array<vec4<f32>, 4>;
    var out_light: array<f32, 4>;
    var n = 0u;
    for (var k = 0u; k < 3u; k = k + 1u) {
        let next = (k + 1u) % 3u;
        let fa = raster_near_side(c[k]);
        let fb = raster_near_side(c[next]);
        if (fa >= 0.0) {
            out[n] = c[k];
            out_light[n] = l[k];
            n = n + 1u;
        }
        if ((fa >= 0.0) != (fb >= 0.0)) {
            let t = fa / (fa - fb);
            var p = mix(c[k], c[next], t);
            // Exactly on the near plane (reversed depth 1).
            p.z = p.w;
            out[n] = p;
            out_light[n] = mix(l[k], l[next], t);
            n = n + 1u;
        }
    }
    if (n < 3u) {
        return;
    }
    var s: array<vec4<f32>, 4>;
    for (var k = 0u; k < n; k = k + 1u) {
        if (!(out[k].w > 0.0)) {
            return;
        }
        s[k] = vec4<f32>(raster_to_screen(out[k]), out_light[k]);
        s[k].z = min(s[k].z, 1.0);
    }
    raster_triangle(s[0], s[1], s[2], material);
    if (n == 4u) {
        raster_triangle(s[0], s[2], s[3], material);
    }
}

fn raster_sphere_visible(world: RasterBone) -> bool {
    let s = raster_params.cull_sphere;
    if (s.w < 0.0) {
        return true;
    }
    let centre = raster_world_point(world, s.xyz);
    let radius = s.w * raster_world_scale(world);
    for (var i = 0u; i < 6u; i = i + 1u) {
        if (dot(raster_params.frustum[i], centre) < -radius) {
            return false;
        }
    }
    return true;
}

@compute @workgroup_size(256)
fn cs_raster(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let instance = group.x + group.y * groups.x;
    if (instance >= raster_params.instance_count) {
        return;
    }
    if (lid == 0u) {
        let world = source_world(instance);
        var v = 0u;
        if (raster_sphere_visible(world)) {
            let level = raster_pick_level(world);
            v = level + 1u;
            if ((raster_params.flags & RASTER_FLAG_COUNT_LEVELS) != 0u) {
                atomicAdd(&raster_counters[1u + level], 1u);
            }
        }
        raster_instance_visible = v;
    }
    let visible = workgroupUniformLoad(&raster_instance_visible);
    if (visible == 0u) {
        return;
    }
    let level = raster_params.levels[visible - 1u];
    source_prepare(instance, lid);
    workgroupBarrier();
    let material = source_material(instance) & ((1u << raster_params.material_bits) - 1u);
    let skin_only = (raster_params.flags & RASTER_FLAG_SKIN_ONLY) != 0u;
    for (var k = level.x; k < level.x + level.y; k = k + 1u) {
        let first_vertex = raster_mesh[4u * k];
        let vertex_count = raster_mesh[4u * k + 1u];
        let first_triangle = raster_mesh[4u * k + 2u];
        let triangle_count = raster_mesh[4u * k + 3u];
        if (lid < vertex_count) {
            let s = raster_project(raster_skin(first_vertex + lid));
            raster_screen[lid] = s;
            // Timing mode: keep the result alive, write nothing.
            if (skin_only && s.z == -3.0) {
                atomicMax(&raster_vis[0], 1u);
            }
        }
        workgroupBarrier();
        if (!skin_only) {
            for (var t = lid; t < triangle_count; t = t + RASTER_GROUP) {
                let packed = raster_mesh[first_triangle + t];
                let a = raster_screen[packed & 0xffu];
                let b = raster_screen[(packed >> 8u) & 0xffu];
                let c = raster_screen[packed >> 16u];
                let clipped = u32(a.x == RASTER_BEHIND) + u32(b.x == RASTER_BEHIND)
                    + u32(c.x == RASTER_BEHIND);
                if (clipped == 0u) {
                    raster_triangle(a, b, c, material);
                } else if (clipped < 3u) {
                    raster_near_clipped(first_vertex, packed, material);
                }
            }
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(1)
fn cs_big_prepare() {
    let n = min(atomicLoad(&raster_counters[0]), raster_params.big_capacity);
    raster_big_args[0] = min(n, RASTER_MAX_GROUPS_X);
    raster_big_args[1] = (n + RASTER_MAX_GROUPS_X - 1u) / RASTER_MAX_GROUPS_X;
    raster_big_args[2] = 1u;
}

@compute @workgroup_size(256)
fn cs_big(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let e = group.x + group.y * groups.x;
    let n = min(atomicLoad(&raster_counters[0]), raster_params.big_capacity);
    if (e >= n) {
        return;
    }
    let t = raster_big[e];
    let r = raster_bounds(t.a, t.b, t.c);
    let area = (t.b.x - t.a.x) * (t.c.y - t.a.y) - (t.b.y - t.a.y) * (t.c.x - t.a.x);
    let inv_area = 1.0 / area;
    let extent = vec2<u32>(r.zw - r.xy) + 1u;
    let count = extent.x * extent.y;
    for (var k = lid; k < count; k = k + RASTER_GROUP) {
        let x = r.x + i32(k % extent.x);
        let y = r.y + i32(k / extent.x);
        raster_pixel(t.a, t.b, t.c, inv_area, x, y, t.material.x);
    }
}

fn raster_srgb(c: f32) -> f32 {
    if (c <= 0.0031308) {
        return 12.92 * max(c, 0.0);
    }
    return 1.055 * pow(c, 1.0 / 2.4) - 0.055;
}

@compute @workgroup_size(8, 8)
fn cs_resolve(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x >= raster_params.width || id.y >= raster_params.height) {
        return;
    }
    if (id.x == 0u && id.y == 0u) {
        atomicStore(&raster_counters[0], 0u);
    }
    let i = id.y * raster_params.width + id.x;
    let key = atomicExchange(&raster_vis[i], 0u);
    var c = raster_params.clear;
    if (key != 0u) {
        let light_bits = 10u - raster_params.material_bits;
        let levels = (1u << light_bits) - 1u;
        let light = f32(key & levels) / f32(levels);
        let material = (key & 0x3ffu) >> light_bits;
        c = vec4<f32>(source_material_color(material) * light, 1.0);
    }
    if ((raster_params.flags & RASTER_FLAG_SRGB) != 0u) {
        c = vec4<f32>(raster_srgb(c.r), raster_srgb(c.g), raster_srgb(c.b), c.a);
    }
    raster_color[i] = pack4x8unorm(c);
}
