// Compute rasteriser, palette vertex source: appended after skinning.wgsl (whose palette
// binding and blend functions it uses) and followed by raster_common.wgsl. Each vertex blends
// its palette matrices (both influence sets, zero weights skipped, as cs_skin does) from the
// instance's palette base, then the instance's world transform moves it.

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

fn source_world(instance: u32) -> RasterWorld {
    let inst = raster_instances[instance];
    return RasterWorld(inst.world_r0, inst.world_r1, inst.world_r2);
}

fn source_prepare(instance: u32, lid: u32) {}

fn source_material(instance: u32) -> u32 {
    return 0u;
}

fn source_material_color(material: u32) -> vec3<f32> {
    return raster_params.albedo.rgb;
}

fn source_vertex(instance: u32, v: RasterMeshVertex) -> RasterSourceVertex {
    let inst = raster_instances[instance];
    var b = blend4(blend_zero(), inst.palette_base, v.joints0, v.weights0);
    b = blend4(b, inst.palette_base, v.joints1, v.weights1);
    let p = vec4<f32>(apply_point(b, v.position.xyz), 1.0);
    let n = vec4<f32>(apply_vector(b, v.normal.xyz), 0.0);
    return RasterSourceVertex(
        vec3<f32>(dot(inst.world_r0, p), dot(inst.world_r1, p), dot(inst.world_r2, p)),
        vec3<f32>(dot(inst.world_r0, n), dot(inst.world_r1, n), dot(inst.world_r2, n)),
    );
}
