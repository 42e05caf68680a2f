// Compute rasteriser, baked-texture vertex source: appended after baked_common.wgsl (whose
// texel fetch, frame lerp and cross-fade it uses) and followed by raster_common.wgsl.
// source_prepare computes each bone's matrix once per instance (bone_matrix: two frames,
// lerped, cross-faded) premultiplied by the world transform into raster_bones; vertices then
// blend those.

@group(1) @binding(3) var<storage, read> raster_instances: array<Instance>;

fn source_world(instance: u32) -> RasterBone {
    let inst = raster_instances[instance];
    return RasterBone(inst.row0, inst.row1, inst.row2);
}

fn raster_world_times(w: vec4<f32>, m: Rows) -> vec4<f32> {
    return m.r0 * w.x + m.r1 * w.y + m.r2 * w.z + vec4<f32>(0.0, 0.0, 0.0, w.w);
}

fn source_prepare(instance: u32, lid: u32) {
    let inst = raster_instances[instance];
    let pb = playback(inst);
    for (var b = lid; b < raster_params.bone_count; b = b + RASTER_GROUP) {
        let m = bone_matrix(pb, b);
        raster_bones[b] = RasterBone(
            raster_world_times(inst.row0, m),
            raster_world_times(inst.row1, m),
            raster_world_times(inst.row2, m),
        );
    }
}

fn source_material(instance: u32) -> u32 {
    return raster_instances[instance].clips.x;
}

fn source_material_color(material: u32) -> vec3<f32> {
    return clip_tint(material);
}
