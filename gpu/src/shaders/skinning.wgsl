// Linear blend skinning for sinew.
//
// The palette is a storage array of f32 holding one float3x4 per mesh bone, column-major,
// 12 floats per bone: c0.xyz c1.xyz c2.xyz c3.xyz (c3 is the translation). A skinned point is
//   p' = (Σ wᵢ Mᵢ) · (p, 1)
// i.e. the matrices are blended first and the blend is applied once, exactly as
// `SkinnedMesh::skin_cpu` does; normals use the blended matrix's linear part, renormalised.
//
// Entry points:
// - `vs_main` / `fs_main`: instanced draw; four influences per vertex (vertex attributes),
//   per-instance palette base (first palette entry of the instance) and world transform
//   (three rows of a 3x4 matrix); lambert + ambient shading.
// - `cs_skin`: compute; up to eight influences per vertex (two sets of four), writes the skinned
//   position and normal of every vertex of every instance of a batch to a storage buffer.

@group(0) @binding(0) var<storage, read> palette: array<f32>;

struct Blend {
    c0: vec3<f32>,
    c1: vec3<f32>,
    c2: vec3<f32>,
    c3: vec3<f32>,
}

fn blend_zero() -> Blend {
    return Blend(vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0));
}

// Adds w · palette[bone] to the blend (skipped for a zero weight, as on the CPU).
fn blend_add(b: Blend, bone: u32, w: f32) -> Blend {
    if (w == 0.0) {
        return b;
    }
    let o = bone * 12u;
    var r: Blend;
    r.c0 = b.c0 + vec3<f32>(palette[o], palette[o + 1u], palette[o + 2u]) * w;
    r.c1 = b.c1 + vec3<f32>(palette[o + 3u], palette[o + 4u], palette[o + 5u]) * w;
    r.c2 = b.c2 + vec3<f32>(palette[o + 6u], palette[o + 7u], palette[o + 8u]) * w;
    r.c3 = b.c3 + vec3<f32>(palette[o + 9u], palette[o + 10u], palette[o + 11u]) * w;
    return r;
}

fn blend4(b: Blend, base: u32, j: vec4<u32>, w: vec4<f32>) -> Blend {
    var r = blend_add(b, base + j.x, w.x);
    r = blend_add(r, base + j.y, w.y);
    r = blend_add(r, base + j.z, w.z);
    r = blend_add(r, base + j.w, w.w);
    return r;
}

fn apply_point(b: Blend, p: vec3<f32>) -> vec3<f32> {
    return b.c0 * p.x + b.c1 * p.y + b.c2 * p.z + b.c3;
}

fn apply_vector(b: Blend, n: vec3<f32>) -> vec3<f32> {
    return b.c0 * n.x + b.c1 * n.y + b.c2 * n.z;
}

fn normalize_or_zero(v: vec3<f32>) -> vec3<f32> {
    let l2 = dot(v, v);
    if (l2 > 0.0) {
        return v * inverseSqrt(l2);
    }
    return vec3<f32>(0.0);
}

// ---------------------------------------------------------------------------------------------
// Instanced draw.

struct Globals {
    view_proj: mat4x4<f32>,
    // xyz: direction the light travels (normalised), w unused.
    light_dir: vec4<f32>,
    // rgb: albedo, a: ambient term.
    albedo_ambient: vec4<f32>,
}

@group(0) @binding(1) var<uniform> globals: Globals;

struct VertexIn {
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) joints: vec4<u32>,
    @location(3) weights: vec4<f32>,
    @location(4) palette_base: u32,
    @location(5) world_r0: vec4<f32>,
    @location(6) world_r1: vec4<f32>,
    @location(7) world_r2: vec4<f32>,
}

struct VertexOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) normal: vec3<f32>,
}

@vertex
fn vs_main(v: VertexIn) -> VertexOut {
    let b = blend4(blend_zero(), v.palette_base, v.joints, v.weights);
    let p = vec4<f32>(apply_point(b, v.position), 1.0);
    let n = vec4<f32>(apply_vector(b, v.normal), 0.0);
    let world = vec4<f32>(dot(v.world_r0, p), dot(v.world_r1, p), dot(v.world_r2, p), 1.0);
    let wn = vec3<f32>(dot(v.world_r0, n), dot(v.world_r1, n), dot(v.world_r2, n));
    var out: VertexOut;
    out.clip = globals.view_proj * world;
    out.normal = wn;
    return out;
}

@fragment
fn fs_main(in: VertexOut) -> @location(0) vec4<f32> {
    let n = normalize_or_zero(in.normal);
    let lambert = max(dot(n, -globals.light_dir.xyz), 0.0);
    let ambient = globals.albedo_ambient.w;
    let c = globals.albedo_ambient.rgb * (ambient + (1.0 - ambient) * lambert);
    return vec4<f32>(c, 1.0);
}

// ---------------------------------------------------------------------------------------------
// Compute skinning.

struct SkinParams {
    vertex_count: u32,
    // Palette entry of the first instance of this dispatch.
    palette_base: u32,
    // Palette entries per instance (instance i uses palette_base + i · bones_per_instance).
    bones_per_instance: u32,
    // 1 when the second influence set is present.
    has_extra: u32,
    // Invocations per row of the dispatch grid (x groups · workgroup size).
    row_stride: u32,
    instance_count: u32,
    pad0: u32,
    pad1: u32,
}

struct SkinVertex {
    // xyz position, w unused.
    position: vec4<f32>,
    // xyz normal, w unused.
    normal: vec4<f32>,
}

struct Influences {
    j0: vec4<u32>,
    w0: vec4<f32>,
    j1: vec4<u32>,
    w1: vec4<f32>,
}

@group(0) @binding(2) var<uniform> params: SkinParams;
@group(0) @binding(3) var<storage, read> vertices: array<SkinVertex>;
@group(0) @binding(4) var<storage, read> influences: array<Influences>;
// Two vec4 per output vertex: skinned position (w = 1), skinned normal (w = 0).
@group(0) @binding(5) var<storage, read_write> skinned: array<vec4<f32>>;

@compute @workgroup_size(64)
fn cs_skin(@builtin(global_invocation_id) gid: vec3<u32>) {
    let v = gid.x + gid.y * params.row_stride;
    let instance = gid.z;
    if (v >= params.vertex_count || instance >= params.instance_count) {
        return;
    }
    let base = params.palette_base + instance * params.bones_per_instance;
    let inf = influences[v];
    var b = blend4(blend_zero(), base, inf.j0, inf.w0);
    if (params.has_extra != 0u) {
        b = blend4(b, base, inf.j1, inf.w1);
    }
    let src = vertices[v];
    let o = (instance * params.vertex_count + v) * 2u;
    skinned[o] = vec4<f32>(apply_point(b, src.position.xyz), 1.0);
    skinned[o + 1u] = vec4<f32>(normalize_or_zero(apply_vector(b, src.normal.xyz)), 0.0);
}
