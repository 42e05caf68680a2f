// RBF deformation: out[i] = rest[i] + sum_e vals[e] * delta[cols[e]] over row i of the CSR table W.
// One invocation per high vertex. Positions are tightly packed f32 triples (no vec3 padding);
// displacements are vec4 (x, y, z, 0) so one load fetches a control.

struct Params {
    n_high: u32,
    // invocations per row of the 2D dispatch grid (workgroups_x * 64)
    row_stride: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(2) var<storage, read> cols: array<u32>;
@group(0) @binding(3) var<storage, read> vals: array<f32>;
@group(0) @binding(4) var<storage, read> rest: array<f32>;
@group(0) @binding(5) var<storage, read> delta: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> out_pos: array<f32>;

@compute @workgroup_size(64)
fn deform(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.y * params.row_stride + gid.x;
    if (i >= params.n_high) {
        return;
    }
    let a = row_ptr[i];
    let b = row_ptr[i + 1u];
    var acc = vec3<f32>(0.0, 0.0, 0.0);
    for (var e = a; e < b; e = e + 1u) {
        acc = acc + vals[e] * delta[cols[e]].xyz;
    }
    let o = 3u * i;
    out_pos[o] = rest[o] + acc.x;
    out_pos[o + 1u] = rest[o + 1u] + acc.y;
    out_pos[o + 2u] = rest[o + 2u] + acc.z;
}
