// Compute rasteriser, linear blend skinning (joined with raster_common.wgsl and a vertex
// source): each bone's matrix premultiplied by the instance's world transform is kept in
// workgroup memory, and a vertex blends those, its quantised weights renormalised.

// Bone matrices of the workgroup's instance (RASTER_MAX_BONES in gpu/src/raster/mod.rs).
var<workgroup> raster_bones: array<RasterBone, 128>;

// Row `w` of the world transform times the bone matrix m (rows).
fn raster_world_times(w: vec4<f32>, m: RasterBone) -> vec4<f32> {
    return m.r0 * w.x + m.r1 * w.y + m.r2 * w.z + vec4<f32>(0.0, 0.0, 0.0, w.w);
}

fn raster_set_bone(b: u32, world: RasterBone, m: RasterBone) {
    raster_bones[b] = RasterBone(
        raster_world_times(world.r0, m),
        raster_world_times(world.r1, m),
        raster_world_times(world.r2, m),
    );
}

// Adds four influences (zero weights skipped).
fn raster_influences(acc: RasterBone, q: vec4<u32>) -> RasterBone {
    let w = raster_weights(q);
    let j = raster_joints(q);
    var r = acc;
    for (var i = 0u; i < 4u; i = i + 1u) {
        if (w[i] != 0.0) {
            let m = raster_bones[j[i]];
            r = RasterBone(r.r0 + m.r0 * w[i], r.r1 + m.r1 * w[i], r.r2 + m.r2 * w[i]);
        }
    }
    return r;
}

// World-space position and normal of cluster vertex v.
fn raster_skin(v: u32) -> RasterSourceVertex {
    let base = v * raster_params.vertex_stride;
    let zero = vec4<f32>(0.0);
    var m = raster_influences(RasterBone(zero, zero, zero), raster_vertices[base + 1u]);
    if (raster_params.vertex_stride > 2u) {
        m = raster_influences(m, raster_vertices[base + 2u]);
    }
    let src = raster_bind_vertex(v);
    let p = vec4<f32>(src.position, 1.0);
    let n = vec4<f32>(src.normal, 0.0);
    return RasterSourceVertex(
        vec3<f32>(dot(m.r0, p), dot(m.r1, p), dot(m.r2, p)) * raster_weight_scale(v),
        vec3<f32>(dot(m.r0, n), dot(m.r1, n), dot(m.r2, n)),
    );
}
