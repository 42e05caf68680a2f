// Baked animation textures: shared declarations and sampling (prepended to baked_draw.wgsl and
// baked_compute.wgsl). The math mirrors sinew_jobs::bake_texture::BakedClip::{clip_time,
// frame_pair} and BakedAnimationTexture::sample_palette: wrap or clamp the playback time, find
// the two stored frames around it, lerp every element of the two float3x4 matrices.

struct Globals {
    view_proj: mat4x4<f32>,
    light_dir: vec4<f32>,
    // Global time in seconds; the only value the CPU writes per frame.
    time: f32,
    // Texture width in texels (texel i lives at (i % width, i / width)).
    tex_width: u32,
    vertex_count: u32,
    instance_count: u32,
};

struct ClipInfo {
    first_texel: u32,
    frame_count: u32,
    bone_count: u32,
    looping: u32,
    rate: f32,
    duration: f32,
    pad0: u32,
    pad1: u32,
};

// Per instance: world transform rows, (clip, previous clip), (phase, speed, previous phase,
// previous speed), (fade start, fade duration). Playback time = phase + speed * time.
struct Instance {
    row0: vec4<f32>,
    row1: vec4<f32>,
    row2: vec4<f32>,
    clips: vec4<u32>,
    times: vec4<f32>,
    fade: vec4<f32>,
};

const NO_CLIP: u32 = 0xffffffffu;

@group(0) @binding(0) var<uniform> globals: Globals;
@group(0) @binding(1) var anim_tex: texture_2d<f32>;
@group(0) @binding(2) var<storage, read> clip_table: array<ClipInfo>;

fn clip_time(c: ClipInfo, t: f32) -> f32 {
    let d = c.duration;
    if (c.looping != 0u && d > 0.0) {
        let w = t - d * floor(t / d);
        if (w >= d || w < 0.0) {
            return 0.0;
        }
        return w;
    }
    return clamp(t, 0.0, d);
}

// Texel index of frame a, of frame b, and the weight of b.
struct FramePair {
    a: u32,
    b: u32,
    f: f32,
};

fn frame_pair(c: ClipInfo, t: f32) -> FramePair {
    let tc = clip_time(c, t);
    let per = c.bone_count * 3u;
    if (c.frame_count <= 1u) {
        return FramePair(c.first_texel, c.first_texel, 0.0);
    }
    let n = c.frame_count - 1u;
    let u = max(tc * c.rate, 0.0);
    let k = min(u32(floor(u)), n - 1u);
    let t0 = f32(k) / c.rate;
    var t1 = f32(k + 1u) / c.rate;
    if (k + 1u == n) {
        t1 = c.duration;
    }
    let span = t1 - t0;
    var f = 0.0;
    if (span > 0.0) {
        f = clamp((tc - t0) / span, 0.0, 1.0);
    }
    return FramePair(c.first_texel + k * per, c.first_texel + (k + 1u) * per, f);
}

fn texel(i: u32) -> vec4<f32> {
    let w = globals.tex_width;
    return textureLoad(anim_tex, vec2<u32>(i % w, i / w), 0);
}

fn lerp4(a: vec4<f32>, b: vec4<f32>, f: f32) -> vec4<f32> {
    // a + (b - a) * f, as the CPU mirror computes it (exact at f = 0).
    return a + (b - a) * f;
}

// A float3x4 as its three rows.
struct Rows {
    r0: vec4<f32>,
    r1: vec4<f32>,
    r2: vec4<f32>,
};

fn bone_rows(p: FramePair, bone: u32) -> Rows {
    let ia = p.a + bone * 3u;
    let ib = p.b + bone * 3u;
    return Rows(
        lerp4(texel(ia), texel(ib), p.f),
        lerp4(texel(ia + 1u), texel(ib + 1u), p.f),
        lerp4(texel(ia + 2u), texel(ib + 2u), p.f),
    );
}

// The instance's current and previous frame pairs and the cross-fade weight of the current
// clip (1: no fade).
struct Playback {
    cur: FramePair,
    prev: FramePair,
    w: f32,
};

fn playback(inst: Instance) -> Playback {
    let t = globals.time;
    let cur = frame_pair(clip_table[inst.clips.x], inst.times.x + inst.times.y * t);
    var prev = cur;
    var w = 1.0;
    if (inst.clips.y != NO_CLIP && inst.fade.y > 0.0) {
        w = clamp((t - inst.fade.x) / inst.fade.y, 0.0, 1.0);
        if (w < 1.0) {
            prev = frame_pair(clip_table[inst.clips.y], inst.times.z + inst.times.w * t);
        }
    }
    return Playback(cur, prev, w);
}

fn bone_matrix(pb: Playback, bone: u32) -> Rows {
    let c = bone_rows(pb.cur, bone);
    if (pb.w >= 1.0) {
        return c;
    }
    let p = bone_rows(pb.prev, bone);
    return Rows(lerp4(p.r0, c.r0, pb.w), lerp4(p.r1, c.r1, pb.w), lerp4(p.r2, c.r2, pb.w));
}

fn add_weighted(acc: Rows, m: Rows, w: f32) -> Rows {
    return Rows(acc.r0 + m.r0 * w, acc.r1 + m.r1 * w, acc.r2 + m.r2 * w);
}

// Linear blend skinning matrix of a vertex with up to eight influences (zero weights skipped).
fn skin_rows(pb: Playback, j0: vec4<u32>, w0: vec4<f32>, j1: vec4<u32>, w1: vec4<f32>) -> Rows {
    var acc = Rows(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    for (var i = 0u; i < 4u; i = i + 1u) {
        if (w0[i] != 0.0) {
            acc = add_weighted(acc, bone_matrix(pb, j0[i]), w0[i]);
        }
    }
    for (var i = 0u; i < 4u; i = i + 1u) {
        if (w1[i] != 0.0) {
            acc = add_weighted(acc, bone_matrix(pb, j1[i]), w1[i]);
        }
    }
    return acc;
}

fn apply_point(m: Rows, p: vec3<f32>) -> vec3<f32> {
    let h = vec4<f32>(p, 1.0);
    return vec3<f32>(dot(m.r0, h), dot(m.r1, h), dot(m.r2, h));
}

fn apply_vector(m: Rows, v: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(dot(m.r0.xyz, v), dot(m.r1.xyz, v), dot(m.r2.xyz, v));
}

fn instance_rows(inst: Instance) -> Rows {
    return Rows(inst.row0, inst.row1, inst.row2);
}

// Colour of a clip (the baked draw tints each character by its clip; the compute rasteriser too).
fn clip_tint(clip: u32) -> vec3<f32> {
    let h = (clip * 2654435761u) >> 8u;
    return vec3<f32>(f32(h & 255u), f32((h >> 8u) & 255u), f32((h >> 16u) & 255u)) / 255.0 * 0.5 + 0.4;
}
