// Compute rasteriser, baked-texture vertex source: joined with baked_common.wgsl (whose
// texel fetch, frame lerp and cross-fade it uses), raster_common.wgsl and
// raster_skin_linear.wgsl. source_prepare computes each bone's matrix once per instance
// (bone_matrix: two frames, lerped, cross-faded) and hands it to raster_set_bone.

@group(1) @binding(3) var<storage, read> raster_instances: array<Instance>;

fn source_world(instance: u32) -> RasterBone {
    let inst = raster_instances[instance];
    return RasterBone(inst.row0, inst.row1, inst.row2);
}

fn source_prepare(instance: u32, lid: u32) {
    let inst = raster_instances[instance];
    let world = RasterBone(inst.row0, inst.row1, inst.row2);
    let pb = playback(inst);
    for (var b = lid; b < raster_params.bone_count; b = b + RASTER_GROUP) {
        let m = bone_matrix(pb, b);
        raster_set_bone(b, world, RasterBone(m.r0, m.r1, m.r2));
    }
}

// Baked crowds draw the bind shape's vertices (their textures hold bone matrices only).
fn source_morph(v: u32, position: vec3<f32>, normal: vec3<f32>) -> RasterSourceVertex {
    return RasterSourceVertex(position, normal);
}

fn source_material(instance: u32) -> u32 {
    return raster_instances[instance].clips.x;
}

fn source_material_color(material: u32) -> vec3<f32> {
    return clip_tint(material);
}
