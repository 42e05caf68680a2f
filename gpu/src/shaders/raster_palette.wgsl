// Compute rasteriser, palette vertex source: appended after skinning.wgsl (whose palette
// binding and matrix fetch it uses) and followed by raster_common.wgsl. Each instance's
// palette entries (from palette_base) are read once per workgroup, premultiplied by the
// instance's world transform, into raster_bones; vertices blend those.

// The layout of sinew_gpu::render::Instance.
struct RasterPaletteInstance {
    palette_base: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
    world_r0: vec4<f32>,
    world_r1: vec4<f32>,
    world_r2: vec4<f32>,
};

@group(1) @binding(3) var<storage, read> raster_instances: array<RasterPaletteInstance>;

fn source_world(instance: u32) -> RasterBone {
    let inst = raster_instances[instance];
    return RasterBone(inst.world_r0, inst.world_r1, inst.world_r2);
}

// Row `w` of the world transform times the palette matrix m (columns c0..c3, translation c3).
fn raster_world_row(w: vec4<f32>, m: Blend) -> vec4<f32> {
    return vec4<f32>(dot(w.xyz, m.c0), dot(w.xyz, m.c1), dot(w.xyz, m.c2), dot(w.xyz, m.c3) + w.w);
}

fn source_prepare(instance: u32, lid: u32) {
    let inst = raster_instances[instance];
    for (var b = lid; b < raster_params.bone_count; b = b + RASTER_GROUP) {
        // The palette entry as a blend of weight 1 (skinning.wgsl's fetch).
        let m = blend_add(blend_zero(), inst.palette_base + b, 1.0);
        raster_bones[b] = RasterBone(
            raster_world_row(inst.world_r0, m),
            raster_world_row(inst.world_r1, m),
            raster_world_row(inst.world_r2, m),
        );
    }
}

fn source_material(instance: u32) -> u32 {
    return 0u;
}

fn source_material_color(material: u32) -> vec3<f32> {
    return raster_params.albedo.rgb;
}
