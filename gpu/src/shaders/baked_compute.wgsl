// Baked animation textures: the same skinning as baked_draw.wgsl, written to a buffer (for
// read-back tests and renderers that want pre-skinned vertices). Appended to baked_common.wgsl.
// Output: one world-space position (xyz, w = 1) per (instance, vertex), instance-major.

struct Vertex {
    position: vec4<f32>,
    normal: vec4<f32>,
    joints0: vec4<u32>,
    weights0: vec4<f32>,
    joints1: vec4<u32>,
    weights1: vec4<f32>,
};

@group(0) @binding(3) var<storage, read> instances: array<Instance>;
@group(0) @binding(4) var<storage, read> vertices: array<Vertex>;
@group(0) @binding(5) var<storage, read_write> out_positions: array<vec4<f32>>;

@compute @workgroup_size(64)
fn cs_main(@builtin(global_invocation_id) id: vec3<u32>) {
    let v = id.x;
    let i = id.y;
    if (v >= globals.vertex_count || i >= globals.instance_count) {
        return;
    }
    let inst = instances[i];
    let vert = vertices[v];
    let pb = playback(inst);
    let skin = skin_rows(pb, vert.joints0, vert.weights0, vert.joints1, vert.weights1);
    let p = apply_point(instance_rows(inst), apply_point(skin, vert.position.xyz));
    out_positions[i * globals.vertex_count + v] = vec4<f32>(p, 1.0);
}
