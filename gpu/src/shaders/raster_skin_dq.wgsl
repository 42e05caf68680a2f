// Compute rasteriser, dual-quaternion skinning (joined with raster_common.wgsl, the palette
// source and skinning.wgsl, whose dqs_bone, dqs_blend and dqs_apply it uses, so the blend is
// cs_skin's operation for operation): each palette entry is split once per instance into its
// rigid part and scale/shear (dqs_bone) in workgroup memory; a vertex blends those with its
// renormalised weights in model space, then the world transform places it.

var<workgroup> raster_dq_bones: array<DqsBone, 128>;
var<workgroup> raster_world: RasterBone;

fn raster_set_bone(b: u32, world: RasterBone, m: RasterBone) {
    if (b == 0u) {
        raster_world = world;
    }
    raster_dq_bones[b] = dqs_bone(
        vec3<f32>(m.r0.x, m.r1.x, m.r2.x),
        vec3<f32>(m.r0.y, m.r1.y, m.r2.y),
        vec3<f32>(m.r0.z, m.r1.z, m.r2.z),
        vec3<f32>(m.r0.w, m.r1.w, m.r2.w),
    );
}

// Adds four influences, weights times `scale` (zero weights skipped by dqs_blend).
fn raster_dq_influences(acc: DqsBlend, q: vec4<u32>, scale: f32) -> DqsBlend {
    let w = raster_weights(q) * scale;
    let j = raster_joints(q);
    var r = acc;
    for (var i = 0u; i < 4u; i = i + 1u) {
        r = dqs_blend(r, raster_dq_bones[j[i]], w[i]);
    }
    return r;
}

// World-space position and normal of cluster vertex v.
fn raster_skin(v: u32) -> RasterSourceVertex {
    let base = v * raster_params.vertex_stride;
    let scale = raster_weight_scale(v);
    var d = raster_dq_influences(dqs_zero(), raster_vertices[base + 1u], scale);
    if (raster_params.vertex_stride > 2u) {
        d = raster_dq_influences(d, raster_vertices[base + 2u], scale);
    }
    let src = raster_bind_vertex(v);
    let s = dqs_apply(d, src.position, src.normal);
    let w = raster_world;
    let p = vec4<f32>(s.position, 1.0);
    let n = vec4<f32>(s.normal, 0.0);
    return RasterSourceVertex(
        vec3<f32>(dot(w.r0, p), dot(w.r1, p), dot(w.r2, p)),
        vec3<f32>(dot(w.r0, n), dot(w.r1, n), dot(w.r2, n)),
    );
}
