// Baked animation textures: instanced draw (appended to baked_common.wgsl).

struct VsIn {
    @location(0) position: vec4<f32>,
    @location(1) normal: vec4<f32>,
    @location(2) joints0: vec4<u32>,
    @location(3) weights0: vec4<f32>,
    @location(4) joints1: vec4<u32>,
    @location(5) weights1: vec4<f32>,
    @location(6) row0: vec4<f32>,
    @location(7) row1: vec4<f32>,
    @location(8) row2: vec4<f32>,
    @location(9) clips: vec4<u32>,
    @location(10) times: vec4<f32>,
    @location(11) fade: vec4<f32>,
};

struct VsOut {
    @builtin(position) clip_pos: vec4<f32>,
    @location(0) normal: vec3<f32>,
    @location(1) @interpolate(flat) tint: vec3<f32>,
};

@vertex
fn vs_main(v: VsIn) -> VsOut {
    let inst = Instance(v.row0, v.row1, v.row2, v.clips, v.times, v.fade);
    let pb = playback(inst);
    let skin = skin_rows(pb, v.joints0, v.weights0, v.joints1, v.weights1);
    let world = instance_rows(inst);
    let p = apply_point(world, apply_point(skin, v.position.xyz));
    let n = apply_vector(world, apply_vector(skin, v.normal.xyz));
    var out: VsOut;
    out.clip_pos = globals.view_proj * vec4<f32>(p, 1.0);
    out.normal = n;
    out.tint = clip_tint(v.clips.x);
    return out;
}

@fragment
fn fs_main(i: VsOut) -> @location(0) vec4<f32> {
    let n = normalize(i.normal);
    let l = normalize(globals.light_dir.xyz);
    let lit = 0.25 + 0.75 * max(dot(n, l), 0.0);
    return vec4<f32>(i.tint * lit, 1.0);
}
