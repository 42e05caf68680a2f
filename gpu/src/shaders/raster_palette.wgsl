// Compute rasteriser, palette vertex source: joined with skinning.wgsl (whose palette binding
// and fetch, morph bindings and morph_vertex it uses), raster_common.wgsl and a skinning
// method. Each instance's palette entries (from palette_base) are read once per workgroup and
// handed to raster_set_bone; with RASTER_FLAG_MORPH its active morph targets (morph_lists) are
// added to each vertex first, exactly as cs_skin and vs_main add them.

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

const RASTER_FLAG_MORPH: u32 = 8u;

// The workgroup's instance's morph range (first entry, count) in morph_lists.
var<workgroup> raster_morph_range: vec2<u32>;

fn source_world(instance: u32) -> RasterBone {
    let inst = raster_instances[instance];
    return RasterBone(inst.world_r0, inst.world_r1, inst.world_r2);
}

fn source_prepare(instance: u32, lid: u32) {
    let inst = raster_instances[instance];
    let world = RasterBone(inst.world_r0, inst.world_r1, inst.world_r2);
    if (lid == 0u) {
        var range = vec2<u32>(0u);
        if ((raster_params.flags & RASTER_FLAG_MORPH) != 0u) {
            range = morph_lists[instance];
        }
        raster_morph_range = range;
    }
    for (var b = lid; b < raster_params.bone_count; b = b + RASTER_GROUP) {
        // The palette entry as a blend of weight 1 (skinning.wgsl's fetch), as rows.
        let m = blend_add(blend_zero(), inst.palette_base + b, 1.0);
        raster_set_bone(b, world, RasterBone(
            vec4<f32>(m.c0.x, m.c1.x, m.c2.x, m.c3.x),
            vec4<f32>(m.c0.y, m.c1.y, m.c2.y, m.c3.y),
            vec4<f32>(m.c0.z, m.c1.z, m.c2.z, m.c3.z),
        ));
    }
}

// The mesh vertex behind cluster vertex v (raster_mesh from source_offset) names its deltas.
fn source_morph(v: u32, position: vec3<f32>, normal: vec3<f32>) -> RasterSourceVertex {
    let range = raster_morph_range;
    if (range.y == 0u) {
        return RasterSourceVertex(position, normal);
    }
    let source = raster_mesh[raster_params.source_offset + v];
    let m = morph_vertex(source, raster_params.morph_vertex_count, range, position, normal);
    return RasterSourceVertex(m.position, m.normal);
}

fn source_material(instance: u32) -> u32 {
    return 0u;
}

fn source_material_color(material: u32) -> vec3<f32> {
    return raster_params.albedo.rgb;
}
