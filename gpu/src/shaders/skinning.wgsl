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
//
// Both morph the vertex first, p = p_bind + Σ m_k · Δ_k over the instance's active targets
// (a compacted list: targets at weight 0 are not in it and cost nothing), then skin it by
// linear blending or, per mesh, by dual quaternions (`dqs_*`, the mirror of
// `sinew_jobs::math::dual_quat`): each palette entry split into rotation × scale/shear by
// Gram–Schmidt, the scale/shear parts blended linearly and applied first, the rigid parts
// blended as dual quaternions flipped into the first influence's hemisphere.

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
// Morph targets.

// The mesh's deltas, target-major: (target k, vertex v) at 2 · (k · vertex_count + v), the
// position delta then the normal delta.
@group(0) @binding(6) var<storage, read> morph_deltas: array<vec4<f32>>;
// The instances' active targets: first one (first entry, entry count) per instance, then the
// entries, (target index, weight's bits); an instance's first entry indexes this same array.
@group(0) @binding(7) var<storage, read> morph_lists: array<vec2<u32>>;

struct Morphed {
    position: vec3<f32>,
    normal: vec3<f32>,
}

// Vertex `v`'s bind position and normal plus the weighted deltas of the instance's active
// targets, in list order (as `MorphTargets::apply` on the CPU).
fn morph_vertex(v: u32, vertex_count: u32, range: vec2<u32>, p: vec3<f32>, n: vec3<f32>) -> Morphed {
    var out = Morphed(p, n);
    for (var i = 0u; i < range.y; i = i + 1u) {
        let a = morph_lists[range.x + i];
        let w = bitcast<f32>(a.y);
        let o = (a.x * vertex_count + v) * 2u;
        out.position = out.position + morph_deltas[o].xyz * w;
        out.normal = out.normal + morph_deltas[o + 1u].xyz * w;
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Dual-quaternion skinning with scale.

const DQS_TINY: f32 = 1e-20;

struct DqsBlend {
    real: vec4<f32>,
    dual: vec4<f32>,
    s0: vec3<f32>,
    s1: vec3<f32>,
    s2: vec3<f32>,
    pivot: vec4<f32>,
    started: bool,
}

fn dqs_zero() -> DqsBlend {
    return DqsBlend(vec4<f32>(0.0), vec4<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0),
        vec3<f32>(0.0), vec4<f32>(0.0), false);
}

// Rotation matrix (columns x, y, z) to a unit quaternion (xyzw), Shepperd's branches.
fn dqs_quat_from_columns(x: vec3<f32>, y: vec3<f32>, z: vec3<f32>) -> vec4<f32> {
    let m00 = x.x;
    let m11 = y.y;
    let m22 = z.z;
    let trace = m00 + m11 + m22;
    var q: vec4<f32>;
    if (trace > 0.0) {
        let s = sqrt(trace + 1.0) * 2.0;
        q = vec4<f32>((y.z - z.y) / s, (z.x - x.z) / s, (x.y - y.x) / s, 0.25 * s);
    } else if (m00 > m11 && m00 > m22) {
        let s = sqrt(1.0 + m00 - m11 - m22) * 2.0;
        q = vec4<f32>(0.25 * s, (y.x + x.y) / s, (z.x + x.z) / s, (y.z - z.y) / s);
    } else if (m11 > m22) {
        let s = sqrt(1.0 + m11 - m00 - m22) * 2.0;
        q = vec4<f32>((y.x + x.y) / s, 0.25 * s, (z.y + y.z) / s, (z.x - x.z) / s);
    } else {
        let s = sqrt(1.0 + m22 - m00 - m11) * 2.0;
        q = vec4<f32>((z.x + x.z) / s, (z.y + y.z) / s, 0.25 * s, (x.y - y.x) / s);
    }
    return normalize(q);
}

fn dqs_qmul(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    let v = b.xyz * a.w + a.xyz * b.w + cross(a.xyz, b.xyz);
    return vec4<f32>(v, a.w * b.w - dot(a.xyz, b.xyz));
}

// One palette entry (columns c0, c1, c2, translation t) split into its rigid part as a dual
// quaternion and its scale/shear U = Qᵀ · L (columns u0, u1, u2).
struct DqsBone {
    real: vec4<f32>,
    dual: vec4<f32>,
    u0: vec3<f32>,
    u1: vec3<f32>,
    u2: vec3<f32>,
}

fn dqs_bone(c0: vec3<f32>, c1: vec3<f32>, c2: vec3<f32>, t: vec3<f32>) -> DqsBone {
    let l0 = length(c0);
    var x = vec3<f32>(1.0, 0.0, 0.0);
    if (l0 > DQS_TINY) {
        x = c0 / l0;
    }
    let y_raw = c1 - x * dot(x, c1);
    let l1 = length(y_raw);
    var y: vec3<f32>;
    if (l1 > DQS_TINY) {
        y = y_raw / l1;
    } else {
        var axis = vec3<f32>(0.0, 1.0, 0.0);
        if (abs(x.x) < 0.9) {
            axis = vec3<f32>(1.0, 0.0, 0.0);
        }
        y = normalize(cross(x, axis));
    }
    let z = cross(x, y);
    let real = dqs_quat_from_columns(x, y, z);
    return DqsBone(
        real,
        dqs_qmul(vec4<f32>(t, 0.0), real) * 0.5,
        vec3<f32>(dot(x, c0), dot(y, c0), dot(z, c0)),
        vec3<f32>(dot(x, c1), dot(y, c1), dot(z, c1)),
        vec3<f32>(dot(x, c2), dot(y, c2), dot(z, c2)),
    );
}

// Adds w · bone to the blend, the rigid part flipped into the first influence's hemisphere
// (skipped for a zero weight, as on the CPU).
fn dqs_blend(b: DqsBlend, bone: DqsBone, w: f32) -> DqsBlend {
    if (w == 0.0) {
        return b;
    }
    var r = b;
    if (!b.started) {
        r.pivot = bone.real;
        r.started = true;
    }
    var s = w;
    if (dot(r.pivot, bone.real) < 0.0) {
        s = -w;
    }
    r.real = b.real + bone.real * s;
    r.dual = b.dual + bone.dual * s;
    r.s0 = b.s0 + bone.u0 * w;
    r.s1 = b.s1 + bone.u1 * w;
    r.s2 = b.s2 + bone.u2 * w;
    return r;
}

// Adds w · palette[bone], split as `dqs_bone` does, to the blend.
fn dqs_add(b: DqsBlend, bone: u32, w: f32) -> DqsBlend {
    if (w == 0.0) {
        return b;
    }
    let o = bone * 12u;
    let c0 = vec3<f32>(palette[o], palette[o + 1u], palette[o + 2u]);
    let c1 = vec3<f32>(palette[o + 3u], palette[o + 4u], palette[o + 5u]);
    let c2 = vec3<f32>(palette[o + 6u], palette[o + 7u], palette[o + 8u]);
    let t = vec3<f32>(palette[o + 9u], palette[o + 10u], palette[o + 11u]);
    return dqs_blend(b, dqs_bone(c0, c1, c2, t), w);
}

fn dqs_add4(b: DqsBlend, base: u32, j: vec4<u32>, w: vec4<f32>) -> DqsBlend {
    var r = dqs_add(b, base + j.x, w.x);
    r = dqs_add(r, base + j.y, w.y);
    r = dqs_add(r, base + j.z, w.z);
    r = dqs_add(r, base + j.w, w.w);
    return r;
}

fn dqs_rotate(r: vec4<f32>, v: vec3<f32>) -> vec3<f32> {
    return v + 2.0 * cross(r.xyz, cross(r.xyz, v) + v * r.w);
}

// The blend applied to a point and to a direction (the direction not renormalised).
fn dqs_apply(b: DqsBlend, p: vec3<f32>, n: vec3<f32>) -> Morphed {
    let len = length(b.real);
    var r = vec4<f32>(0.0, 0.0, 0.0, 1.0);
    var d = vec4<f32>(0.0);
    if (len > DQS_TINY) {
        r = b.real / len;
        d = b.dual / len;
    }
    let ps = b.s0 * p.x + b.s1 * p.y + b.s2 * p.z;
    let ns = b.s0 * n.x + b.s1 * n.y + b.s2 * n.z;
    let t = 2.0 * (d.xyz * r.w - r.xyz * d.w + cross(r.xyz, d.xyz));
    return Morphed(dqs_rotate(r, ps) + t, dqs_rotate(r, ns));
}

// ---------------------------------------------------------------------------------------------
// Instanced draw.

struct Globals {
    view_proj: mat4x4<f32>,
    // xyz: direction the light travels (normalised), w unused.
    light_dir: vec4<f32>,
    // rgb: albedo, a: ambient term.
    albedo_ambient: vec4<f32>,
    // x: 1 for dual-quaternion skinning, y: vertex count, z: 1 when instances have morph
    // ranges, w unused.
    skin: vec4<u32>,
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
    @builtin(vertex_index) vertex: u32,
    @builtin(instance_index) instance: u32,
}

struct VertexOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) normal: vec3<f32>,
}

// The vertex morphed by its instance's active targets and skinned, in model space (the normal
// not renormalised): `vs_main`'s work before the world transform.
fn vs_skin(v: VertexIn) -> Morphed {
    var m = Morphed(v.position, v.normal);
    if (globals.skin.z != 0u) {
        m = morph_vertex(v.vertex, globals.skin.y, morph_lists[v.instance], v.position, v.normal);
    }
    if (globals.skin.x == 1u) {
        return dqs_apply(dqs_add4(dqs_zero(), v.palette_base, v.joints, v.weights), m.position,
            m.normal);
    }
    let b = blend4(blend_zero(), v.palette_base, v.joints, v.weights);
    return Morphed(apply_point(b, m.position), apply_vector(b, m.normal));
}

@vertex
fn vs_main(v: VertexIn) -> VertexOut {
    let skinned = vs_skin(v);
    let p = vec4<f32>(skinned.position, 1.0);
    let n = vec4<f32>(skinned.normal, 0.0);
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
    // 1 for dual-quaternion skinning.
    skinning: u32,
    // 1 when the batch's instances have morph ranges (`morph_lists[instance]`).
    has_morph: u32,
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
    let src = vertices[v];
    var m = Morphed(src.position.xyz, src.normal.xyz);
    if (params.has_morph != 0u) {
        m = morph_vertex(v, params.vertex_count, morph_lists[instance], m.position, m.normal);
    }
    var out: Morphed;
    if (params.skinning == 1u) {
        var d = dqs_add4(dqs_zero(), base, inf.j0, inf.w0);
        if (params.has_extra != 0u) {
            d = dqs_add4(d, base, inf.j1, inf.w1);
        }
        out = dqs_apply(d, m.position, m.normal);
    } else {
        var b = blend4(blend_zero(), base, inf.j0, inf.w0);
        if (params.has_extra != 0u) {
            b = blend4(b, base, inf.j1, inf.w1);
        }
        out = Morphed(apply_point(b, m.position), apply_vector(b, m.normal));
    }
    let o = (instance * params.vertex_count + v) * 2u;
    skinned[o] = vec4<f32>(out.position, 1.0);
    skinned[o + 1u] = vec4<f32>(normalize_or_zero(out.normal), 0.0);
}
