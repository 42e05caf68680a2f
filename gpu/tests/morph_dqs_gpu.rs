//! Morph targets and dual-quaternion skinning in `skinning.wgsl` against the CPU reference
//! (`SkinnedMesh::skin_cpu_morphed`), on a real adapter (lavapipe in CI).
//!
//! Compute path: position metric `max_v |gpu_v − cpu_v| / d`, with `d` the diagonal of the
//! CPU-skinned mesh's bounding box, and `max_v |gpu_n − cpu_n|` for unit normals; bound 1e-5.
//! Vertex path: `vs_skin` (what `vs_main` computes before the world transform) run in the
//! vertex stage by a probe pipeline that writes each vertex's result to a float target, same
//! metric and bound; and the instanced draw of the morphed, skinned mesh against the same
//! renderer drawing the CPU-morphed and CPU-skinned vertices as a static mesh.
#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside #[test] functions

mod common;

use glam::{Affine3A, EulerRot, Mat3, Mat4, Quat, Vec3};
use sinew_gpu::raster::ComputeCrowdRenderer;
use sinew_gpu::render::{Camera, CrowdRenderer, Instance};
use sinew_gpu::skin_pass::{
    GpuSkinMesh, MorphInstances, SkinBatch, SkinBuffers, SkinPass, read_buffer_f32,
};
use sinew_jobs::asset::{
    ActiveMorph, RawMorphTarget, RawSkinnedMesh, RawVertexInfluences, SkinnedMesh, SkinningMethod,
};

const COLS: usize = 12;
const ROWS: usize = 10;
const BONES: u16 = 6;

/// A grid of `COLS × ROWS` vertices in the xy plane (two triangles per cell, both windings),
/// with up to `max_influences` per vertex (over four uses the second set), normals, and four
/// morph targets: 0 and 1 move positions and normals, 2 only positions, 3 a few vertices.
fn face(skinning: SkinningMethod, max_influences: usize) -> SkinnedMesh {
    let mut positions = Vec::new();
    let mut normals = Vec::new();
    let mut influences = Vec::new();
    for r in 0..ROWS {
        for c in 0..COLS {
            let (x, y) = (c as f32 / 4.0 - 1.4, r as f32 / 4.0 - 1.1);
            positions.push(Vec3::new(x, y, 0.1 * (x * y).sin()));
            normals.push(Vec3::new(0.1 * x, -0.05 * y, 1.0).normalize());
            let n = 1 + (r * COLS + c) % max_influences;
            let list: Vec<(u16, f32)> = (0..n)
                .map(|k| {
                    (
                        ((c + k) % usize::from(BONES)) as u16,
                        1.0 + k as f32 + 0.1 * r as f32,
                    )
                })
                .collect();
            influences.push(RawVertexInfluences(list));
        }
    }
    let nv = positions.len();
    let target = |k: usize, with_normals: bool| RawMorphTarget {
        name: format!("shape {k}"),
        positions: (0..nv)
            .map(|v| {
                let f = (v * (k + 3)) as f32;
                if k == 3 && v % 11 != 0 {
                    Vec3::ZERO
                } else {
                    Vec3::new((0.3 * f).sin(), (0.7 * f).cos(), 0.2 * (0.1 * f).sin()) * 0.2
                }
            })
            .collect(),
        normals: if with_normals {
            (0..nv)
                .map(|v| Vec3::new(0.0, 0.1 * (v as f32).sin(), 0.05 * k as f32))
                .collect()
        } else {
            Vec::new()
        },
    };
    let mut indices = Vec::new();
    for r in 0..ROWS - 1 {
        for c in 0..COLS - 1 {
            let i = (r * COLS + c) as u32;
            let (right, up) = (i + 1, i + COLS as u32);
            // Both windings: the skinned grid may turn either side to the camera.
            indices.extend([
                i,
                right,
                up + 1,
                i,
                up + 1,
                up,
                i,
                up + 1,
                right,
                i,
                up,
                up + 1,
            ]);
        }
    }
    RawSkinnedMesh {
        name: "face".into(),
        bones: (0..BONES)
            .map(|b| {
                let t = Vec3::new(f32::from(b) * 0.3 - 0.8, 0.1 * f32::from(b), 0.0);
                (format!("b{b}"), Mat4::from_translation(-t))
            })
            .collect(),
        positions,
        normals,
        influences,
        indices,
        morph_targets: vec![
            target(0, true),
            target(1, true),
            target(2, false),
            target(3, false),
        ],
        morph_weights: vec![0.5, 0.0, 0.0, 0.0],
        skinning,
    }
    .bake()
    .unwrap()
}

/// A palette entry with rotation, non-uniform scale, shear and translation.
fn entry(k: usize, phase: f32) -> [f32; 12] {
    let f = k as f32 + phase;
    let mut l = Mat3::from_quat(Quat::from_euler(EulerRot::XYZ, 0.4 * f, -0.9 * f, 0.3 + f))
        * Mat3::from_diagonal(Vec3::new(1.0 + 0.1 * f, 0.8, 1.1));
    l.y_axis += l.x_axis * 0.15;
    Affine3A::from_mat3_translation(l, Vec3::new(0.3 * f, -0.2 * f, 0.1)).to_cols_array()
}

fn palette(phase: f32) -> Vec<[f32; 12]> {
    (0..usize::from(BONES)).map(|k| entry(k, phase)).collect()
}

fn active_lists() -> [Vec<ActiveMorph>; 3] {
    let a = |target, weight| ActiveMorph { target, weight };
    [
        vec![a(0, 0.7), a(2, -0.3), a(3, 1.2)],
        vec![],
        vec![a(1, 1.0), a(3, 0.25)],
    ]
}

/// `(position error / bounding-box diagonal, normal error)` of `gpu` against `cpu`.
fn errors(gpu: &(Vec<Vec3>, Vec<Vec3>), cpu: &(Vec<Vec3>, Vec<Vec3>)) -> (f32, f32) {
    let (lo, hi) = cpu.0.iter().fold((Vec3::MAX, Vec3::MIN), |(lo, hi), p| {
        (lo.min(*p), hi.max(*p))
    });
    let d = (hi - lo).length();
    let pe = gpu
        .0
        .iter()
        .zip(&cpu.0)
        .map(|(g, c)| (*g - *c).length())
        .fold(0.0, f32::max);
    let ne = gpu
        .1
        .iter()
        .zip(&cpu.1)
        .map(|(g, c)| (*g - *c).length())
        .fold(0.0, f32::max);
    assert_eq!(gpu.0.len(), cpu.0.len());
    assert_eq!(gpu.1.len(), cpu.1.len());
    (pe / d, ne)
}

#[test]
fn compute_skinning_with_morphs_matches_the_cpu_for_lbs_and_dqs() {
    let Some(ctx) = common::context() else { return };
    for skinning in [SkinningMethod::Linear, SkinningMethod::DualQuaternion] {
        let mesh = face(skinning, 7);
        assert!(
            !mesh.joints_extra().is_empty(),
            "uses the second influence set"
        );
        let pal = palette(0.2);
        for active in active_lists() {
            let cpu = mesh.skin_cpu_morphed(&pal, &active);
            let gpu = SkinPass::skin_positions_morphed(&ctx, &mesh, &pal, &active).unwrap();
            let (pe, ne) = errors(&gpu, &cpu);
            eprintln!(
                "{skinning:?}, {} active targets: position {pe:.2e}, normal {ne:.2e}",
                active.len()
            );
            assert!(
                pe <= 1e-5 && ne <= 1e-5,
                "{skinning:?} {active:?}: {pe} {ne}"
            );
        }
        // The morph moves the mesh (the test could fail): bind shape vs morphed.
        let base = mesh.skin_cpu(&pal);
        let morphed = mesh.skin_cpu_morphed(&pal, &active_lists()[0]);
        assert!(errors(&base, &morphed).0 > 1e-2);
    }
}

#[test]
fn a_batch_gives_each_instance_its_own_targets_and_palette() {
    let Some(ctx) = common::context() else { return };
    let mesh = face(SkinningMethod::DualQuaternion, 7);
    let gpu_mesh = GpuSkinMesh::new(&ctx, &mesh).unwrap();
    let pass = SkinPass::new(&ctx);
    let lists = active_lists();
    let palettes: Vec<Vec<[f32; 12]>> = (0..3).map(|i| palette(0.5 * i as f32)).collect();
    let flat: Vec<[f32; 12]> = palettes.concat();
    let palette_buf = wgpu::util::DeviceExt::create_buffer_init(
        &ctx.device,
        &wgpu::util::BufferInitDescriptor {
            label: Some("palette"),
            contents: bytemuck::cast_slice(&flat),
            usage: wgpu::BufferUsages::STORAGE,
        },
    );
    let refs: Vec<&[ActiveMorph]> = lists.iter().map(Vec::as_slice).collect();
    let mut morphs = MorphInstances::new(&ctx, gpu_mesh.morph_target_count(), &refs).unwrap();
    let size = SkinPass::output_size(&gpu_mesh, 3);
    let out = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("out"),
        size,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let batch = SkinBatch {
        palette_base: 0,
        instance_count: 3,
    };
    let nv = mesh.positions().len();
    // The lists as given, then reversed and written into the same buffers (the next frame).
    for order in [[0, 1, 2], [2, 1, 0]] {
        let frame: Vec<&[ActiveMorph]> = order.iter().map(|&k| refs[k]).collect();
        morphs
            .write(&ctx, gpu_mesh.morph_target_count(), &frame)
            .unwrap();
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        let buffers = SkinBuffers {
            palette: &palette_buf,
            out: &out,
            morphs: Some(&morphs),
        };
        pass.encode(&ctx, &mut encoder, &gpu_mesh, buffers, batch, None)
            .unwrap();
        let floats = read_buffer_f32(&ctx, encoder, &out, size).unwrap();
        for i in 0..3 {
            let cpu = mesh.skin_cpu_morphed(&palettes[i], frame[i]);
            let part = &floats[i * nv * 8..(i + 1) * nv * 8];
            let gpu = (
                part.chunks(8)
                    .map(|v| Vec3::new(v[0], v[1], v[2]))
                    .collect(),
                part.chunks(8)
                    .map(|v| Vec3::new(v[4], v[5], v[6]))
                    .collect(),
            );
            let (pe, ne) = errors(&gpu, &cpu);
            assert!(
                pe <= 1e-5 && ne <= 1e-5,
                "order {order:?} instance {i}: {pe} {ne}"
            );
        }
    }
    // Morph lists for another number of instances than the batch are refused.
    let two = MorphInstances::new(&ctx, gpu_mesh.morph_target_count(), &refs[..2]).unwrap();
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    let buffers = SkinBuffers {
        palette: &palette_buf,
        out: &out,
        morphs: Some(&two),
    };
    assert!(
        pass.encode(&ctx, &mut encoder, &gpu_mesh, buffers, batch, None)
            .is_err()
    );
    // A target the mesh lacks, or a NaN weight, is refused before anything reaches the GPU.
    let bad = [ActiveMorph {
        target: 4,
        weight: 1.0,
    }];
    let e = MorphInstances::new(&ctx, 4, &[&[], &bad])
        .unwrap_err()
        .to_string();
    assert!(e.contains("instance 1 entry 0: target 4"), "{e}");
    let nan = [ActiveMorph {
        target: 0,
        weight: f32::NAN,
    }];
    assert!(MorphInstances::new(&ctx, 4, &[&nan]).is_err());
}

/// The two-bone cylinder twisted by 180° (see `jobs/tests/dual_quaternion.rs`), on the GPU.
#[test]
fn the_twisted_cylinder_skins_the_same_on_the_gpu() {
    let Some(ctx) = common::context() else { return };
    let (rings, sides) = (21, 32);
    let mut positions = Vec::new();
    let mut normals = Vec::new();
    let mut influences = Vec::new();
    for r in 0..rings {
        let x = 2.0 * r as f32 / (rings - 1) as f32;
        let wb = (x - 0.5).clamp(0.0, 1.0);
        for s in 0..sides {
            let a = std::f32::consts::TAU * s as f32 / sides as f32;
            positions.push(Vec3::new(x, a.cos(), a.sin()));
            normals.push(Vec3::new(0.0, a.cos(), a.sin()));
            influences.push(RawVertexInfluences(vec![(0, 1.0 - wb), (1, wb)]));
        }
    }
    let twist = Affine3A::from_translation(Vec3::X)
        * Affine3A::from_rotation_x(std::f32::consts::PI)
        * Affine3A::from_translation(-Vec3::X);
    let pal = [Affine3A::IDENTITY.to_cols_array(), twist.to_cols_array()];
    for skinning in [SkinningMethod::Linear, SkinningMethod::DualQuaternion] {
        let mesh = RawSkinnedMesh {
            name: "cylinder".into(),
            bones: vec![
                ("a".into(), Mat4::IDENTITY),
                ("b".into(), Mat4::from_translation(-Vec3::X)),
            ],
            positions: positions.clone(),
            normals: normals.clone(),
            influences: influences.clone(),
            skinning,
            ..Default::default()
        }
        .bake()
        .unwrap();
        let cpu = mesh.skin_cpu(&pal);
        let gpu = SkinPass::skin_positions(&ctx, &mesh, &pal).unwrap();
        let (pe, ne) = errors(&gpu, &cpu);
        // LBS collapses the middle ring, whose normals are then zero on both sides.
        assert!(pe <= 1e-5 && ne <= 1e-5, "{skinning:?}: {pe} {ne}");
    }
}

/// The vertex shader's morph and DQS path draws what the CPU computes: the same renderer
/// draws the mesh skinned on the GPU (morph lists, DQS palette) and the CPU's result as a
/// static mesh under an identity palette; the images agree but for rasterisation at edges,
/// and both differ from the bind shape.
#[test]
fn the_vertex_shader_morphs_and_skins_like_the_cpu() {
    let Some(ctx) = common::context() else { return };
    let (w, h) = (192u32, 160u32);
    let camera = Camera::look_at(Vec3::new(0.0, 0.0, 6.0), Vec3::ZERO);
    // Four influences: the vertex path reads the first set only.
    let mesh = face(SkinningMethod::DualQuaternion, 4);
    assert!(mesh.joints_extra().is_empty());
    let pal = palette(0.1);
    let active = active_lists()[0].clone();
    let draw = |mesh: &SkinnedMesh, palette: &[[f32; 12]], morphs: Option<&[ActiveMorph]>| {
        let mut r = CrowdRenderer::new(&ctx, mesh, w, h).unwrap();
        // Flat colour: coverage is what is compared.
        r.shading.ambient = 1.0;
        if let Some(m) = morphs {
            r.set_morphs(&ctx, &[m]).unwrap();
        }
        let buf = wgpu::util::DeviceExt::create_buffer_init(
            &ctx.device,
            &wgpu::util::BufferInitDescriptor {
                label: Some("palette"),
                contents: bytemuck::cast_slice(palette),
                usage: wgpu::BufferUsages::STORAGE,
            },
        );
        r.render(&ctx, &buf, &[Instance::new(0, Affine3A::IDENTITY)], &camera)
            .unwrap()
    };
    let gpu = draw(&mesh, &pal, Some(&active));
    // The CPU's vertices, drawn as they are: one bone with an identity inverse bind.
    let (p, n) = mesh.skin_cpu_morphed(&pal, &active);
    let to_raw = |positions: Vec<Vec3>, normals: Vec<Vec3>| RawSkinnedMesh {
        name: "cpu".into(),
        bones: vec![("root".into(), Mat4::IDENTITY)],
        positions,
        normals,
        influences: vec![RawVertexInfluences(vec![(0, 1.0)]); mesh.positions().len()],
        indices: mesh.indices().to_vec(),
        ..Default::default()
    };
    let identity = [Affine3A::IDENTITY.to_cols_array()];
    let cpu = draw(&to_raw(p, n).bake().unwrap(), &identity, None);
    let (bp, bn) = mesh.skin_cpu(&pal);
    let bind = draw(&to_raw(bp, bn).bake().unwrap(), &identity, None);
    let lit = |img: &sinew_gpu::render::RgbaImage| -> Vec<bool> {
        img.pixels.chunks(4).map(|px| px[0] > 40).collect()
    };
    let (g, c, b) = (lit(&gpu), lit(&cpu), lit(&bind));
    let covered = c.iter().filter(|x| **x).count();
    let differ = |a: &[bool], b: &[bool]| a.iter().zip(b).filter(|(x, y)| x != y).count();
    let (gpu_cpu, bind_cpu) = (differ(&g, &c), differ(&b, &c));
    eprintln!(
        "{covered} covered pixels; GPU vs CPU differ in {gpu_cpu}, bind shape vs CPU in {bind_cpu}"
    );
    assert!(covered > 1000, "the mesh is on screen");
    assert!(bind_cpu > 200, "the morph visibly moves the mesh");
    assert!(
        gpu_cpu * 100 <= covered,
        "GPU and CPU coverage differ in {gpu_cpu} pixels"
    );
}

/// The compute rasteriser's morph and DQS path draws what the CPU computes: two instances
/// with their own morph lists, palettes and world transforms, drawn by `ComputeCrowdRenderer`,
/// against the CPU-morphed and CPU-skinned vertices of each drawn as static meshes (one bone,
/// identity palette) by the same rasteriser; coverage agrees but for pixels at edges, and the
/// bind shape differs. Eight influences: the compute rasteriser blends both sets.
#[test]
fn the_compute_rasteriser_morphs_and_skins_like_the_cpu() {
    let Some(ctx) = common::context() else { return };
    let (w, h) = (192u32, 160u32);
    let camera = Camera::look_at(Vec3::new(0.0, 0.0, 9.0), Vec3::ZERO);
    let mesh = face(SkinningMethod::DualQuaternion, 7);
    let lists = active_lists();
    let lists = [lists[0].clone(), lists[2].clone()];
    let palettes = [palette(0.1), palette(0.6)];
    let worlds = [
        Affine3A::from_translation(Vec3::new(-1.8, 0.0, 0.0)),
        Affine3A::from_rotation_translation(Quat::from_rotation_z(0.5), Vec3::new(1.8, 0.2, 0.0)),
    ];
    let buffer = |contents: &[u8]| {
        wgpu::util::DeviceExt::create_buffer_init(
            &ctx.device,
            &wgpu::util::BufferInitDescriptor {
                label: Some("palette"),
                contents,
                usage: wgpu::BufferUsages::STORAGE,
            },
        )
    };
    let lit = |img: &sinew_gpu::render::RgbaImage| -> Vec<bool> {
        img.pixels.chunks(4).map(|px| px[0] > 40).collect()
    };
    let mut r = ComputeCrowdRenderer::new(&ctx, &mesh, w, h).unwrap();
    r.shading.ambient = 1.0;
    let refs: Vec<&[ActiveMorph]> = lists.iter().map(Vec::as_slice).collect();
    r.set_morphs(&ctx, &refs).unwrap();
    let bones = mesh.bone_count() as u32;
    let instances = [Instance::new(0, worlds[0]), Instance::new(bones, worlds[1])];
    let gpu = lit(&r
        .render(
            &ctx,
            &buffer(bytemuck::cast_slice(&palettes.concat())),
            &instances,
            &camera,
        )
        .unwrap());
    // The CPU's vertices of both instances, drawn as they are.
    let static_image = |skinned: [(Vec<Vec3>, Vec<Vec3>); 2]| {
        let mut combined = RawSkinnedMesh {
            name: "cpu".into(),
            bones: vec![("root".into(), Mat4::IDENTITY)],
            ..Default::default()
        };
        for (i, (p, n)) in skinned.into_iter().enumerate() {
            let base = combined.positions.len() as u32;
            combined
                .positions
                .extend(p.iter().map(|p| worlds[i].transform_point3(*p)));
            combined
                .normals
                .extend(n.iter().map(|n| worlds[i].transform_vector3(*n)));
            combined
                .indices
                .extend(mesh.indices().iter().map(|k| base + k));
        }
        combined.influences = vec![RawVertexInfluences(vec![(0, 1.0)]); combined.positions.len()];
        let mut r = ComputeCrowdRenderer::new(&ctx, &combined.bake().unwrap(), w, h).unwrap();
        r.shading.ambient = 1.0;
        let identity = buffer(bytemuck::cast_slice(&[Affine3A::IDENTITY.to_cols_array()]));
        lit(&r
            .render(
                &ctx,
                &identity,
                &[Instance::new(0, Affine3A::IDENTITY)],
                &camera,
            )
            .unwrap())
    };
    let cpu = static_image([0, 1].map(|i| mesh.skin_cpu_morphed(&palettes[i], &lists[i])));
    let bind = static_image([0, 1].map(|i| mesh.skin_cpu(&palettes[i])));
    let covered = cpu.iter().filter(|x| **x).count();
    let differ = |a: &[bool], b: &[bool]| a.iter().zip(b).filter(|(x, y)| x != y).count();
    let (gpu_cpu, bind_cpu) = (differ(&gpu, &cpu), differ(&bind, &cpu));
    eprintln!(
        "{covered} covered pixels; compute raster vs CPU differ in {gpu_cpu}, bind shape vs CPU in {bind_cpu}"
    );
    assert!(covered > 1000, "the meshes are on screen");
    assert!(bind_cpu > 200, "the morph visibly moves the mesh");
    assert!(
        gpu_cpu * 100 <= covered,
        "compute raster and CPU coverage differ in {gpu_cpu} pixels"
    );
}

#[test]
fn morph_lists_must_match_the_instances_and_can_be_cleared() {
    let Some(ctx) = common::context() else { return };
    let mesh = face(SkinningMethod::Linear, 4);
    let mut r = CrowdRenderer::new(&ctx, &mesh, 32, 32).unwrap();
    let empty: &[ActiveMorph] = &[];
    r.set_morphs(&ctx, &[empty, empty]).unwrap();
    let buf = wgpu::util::DeviceExt::create_buffer_init(
        &ctx.device,
        &wgpu::util::BufferInitDescriptor {
            label: Some("palette"),
            contents: bytemuck::cast_slice(&palette(0.0)),
            usage: wgpu::BufferUsages::STORAGE,
        },
    );
    let cam = Camera::look_at(Vec3::new(0.0, 0.0, 6.0), Vec3::ZERO);
    let one = [Instance::new(0, Affine3A::IDENTITY)];
    // Two morph lists for one instance: refused.
    assert!(r.render(&ctx, &buf, &one, &cam).is_err());
    r.clear_morphs();
    assert!(r.render(&ctx, &buf, &one, &cam).is_ok());
}

/// Probe entry points appended to `skinning.wgsl`: `vs_probe` runs `vs_skin` (what `vs_main`
/// computes before the world transform) and puts vertex `i` on pixel `(i % 16, i / 16)` of
/// two float targets, which `fs_probe` fills with the skinned position and normal.
const PROBE_WGSL: &str = r#"
const PROBE_W: u32 = 16u;
const PROBE_H: u32 = 8u;
struct ProbeOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) @interpolate(flat) position: vec4<f32>,
    @location(1) @interpolate(flat) normal: vec4<f32>,
}
struct ProbeTargets {
    @location(0) position: vec4<f32>,
    @location(1) normal: vec4<f32>,
}
@vertex
fn vs_probe(v: VertexIn) -> ProbeOut {
    let m = vs_skin(v);
    let px = vec2<f32>(f32(v.vertex % PROBE_W), f32(v.vertex / PROBE_W)) + 0.5;
    var out: ProbeOut;
    out.clip = vec4<f32>(px.x / f32(PROBE_W) * 2.0 - 1.0, 1.0 - px.y / f32(PROBE_H) * 2.0, 0.5, 1.0);
    out.position = vec4<f32>(m.position, 1.0);
    out.normal = vec4<f32>(m.normal, 0.0);
    return out;
}
@fragment
fn fs_probe(in: ProbeOut) -> ProbeTargets {
    return ProbeTargets(in.position, in.normal);
}
"#;

/// The vertex stage's positions and normals (`vs_skin`, as `vs_main` runs it, with the
/// renderer's vertex and instance layouts and bindings) for one instance of `mesh`.
fn vertex_stage(
    ctx: &sinew_gpu::context::GpuContext,
    mesh: &SkinnedMesh,
    palette: &[[f32; 12]],
    active: &[ActiveMorph],
) -> (Vec<Vec3>, Vec<Vec3>) {
    use wgpu::util::DeviceExt;
    let (w, h) = (16u32, 8u32);
    let nv = mesh.positions().len();
    assert!(nv <= (w * h) as usize);
    let device = &ctx.device;
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("probe"),
        source: wgpu::ShaderSource::Wgsl(
            format!("{}\n{PROBE_WGSL}", sinew_gpu::skin_pass::SKINNING_WGSL).into(),
        ),
    });
    // The renderer's layouts: position, normal, joints, weights; palette base and world rows.
    let vertex_attrs =
        wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3, 2 => Uint32x4, 3 => Float32x4];
    let instance_attrs = [
        wgpu::VertexAttribute {
            format: wgpu::VertexFormat::Uint32,
            offset: 0,
            shader_location: 4,
        },
        wgpu::VertexAttribute {
            format: wgpu::VertexFormat::Float32x4,
            offset: 16,
            shader_location: 5,
        },
        wgpu::VertexAttribute {
            format: wgpu::VertexFormat::Float32x4,
            offset: 32,
            shader_location: 6,
        },
        wgpu::VertexAttribute {
            format: wgpu::VertexFormat::Float32x4,
            offset: 48,
            shader_location: 7,
        },
    ];
    let format = wgpu::TextureFormat::Rgba32Float;
    let target = Some(wgpu::ColorTargetState {
        format,
        blend: None,
        write_mask: wgpu::ColorWrites::ALL,
    });
    let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some("probe"),
        layout: None,
        vertex: wgpu::VertexState {
            module: &module,
            entry_point: Some("vs_probe"),
            compilation_options: Default::default(),
            buffers: &[
                Some(wgpu::VertexBufferLayout {
                    array_stride: 56,
                    step_mode: wgpu::VertexStepMode::Vertex,
                    attributes: &vertex_attrs,
                }),
                Some(wgpu::VertexBufferLayout {
                    array_stride: std::mem::size_of::<Instance>() as u64,
                    step_mode: wgpu::VertexStepMode::Instance,
                    attributes: &instance_attrs,
                }),
            ],
        },
        primitive: wgpu::PrimitiveState {
            topology: wgpu::PrimitiveTopology::PointList,
            ..Default::default()
        },
        depth_stencil: None,
        multisample: wgpu::MultisampleState::default(),
        fragment: Some(wgpu::FragmentState {
            module: &module,
            entry_point: Some("fs_probe"),
            compilation_options: Default::default(),
            targets: &[target.clone(), target],
        }),
        multiview_mask: None,
        cache: None,
    });
    let init = |label: &str, contents: &[u8], usage| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents,
            usage,
        })
    };
    let mut vertices: Vec<u8> = Vec::new();
    for v in 0..nv {
        let n = mesh.normals()[v];
        let p = mesh.positions()[v];
        for x in [p.x, p.y, p.z, n.x, n.y, n.z] {
            vertices.extend(x.to_le_bytes());
        }
        for j in mesh.joints()[v] {
            vertices.extend(j.to_le_bytes());
        }
        for x in mesh.weights()[v] {
            vertices.extend(x.to_le_bytes());
        }
    }
    let vertices = init("probe vertices", &vertices, wgpu::BufferUsages::VERTEX);
    let instance = [Instance::new(0, Affine3A::IDENTITY)];
    let instances = init(
        "probe instance",
        bytemuck::cast_slice(&instance),
        wgpu::BufferUsages::VERTEX,
    );
    let storage = wgpu::BufferUsages::STORAGE;
    let palette = init("probe palette", bytemuck::cast_slice(palette), storage);
    // Globals: view_proj, light, albedo (unused here), then (dqs, vertex count, morphs, 0).
    let mut globals = vec![0u8; 96];
    for x in [
        u32::from(mesh.skinning() == SkinningMethod::DualQuaternion),
        nv as u32,
        1,
        0,
    ] {
        globals.extend(x.to_le_bytes());
    }
    let globals = init("probe globals", &globals, wgpu::BufferUsages::UNIFORM);
    // Deltas as the shader reads them, built here from the mesh's own arrays.
    let morph = mesh.morph_targets();
    let mut deltas: Vec<f32> = Vec::new();
    for (i, p) in morph.position_deltas().iter().enumerate() {
        let n = morph.normal_deltas().get(i).copied().unwrap_or(Vec3::ZERO);
        deltas.extend([p.x, p.y, p.z, 0.0, n.x, n.y, n.z, 0.0]);
    }
    let deltas = init("probe deltas", bytemuck::cast_slice(&deltas), storage);
    // One instance: its range (first entry 1, count), then the entries.
    let mut lists: Vec<[u32; 2]> = vec![[1, active.len() as u32]];
    lists.extend(active.iter().map(|a| [a.target, a.weight.to_bits()]));
    let lists = init("probe morph lists", bytemuck::cast_slice(&lists), storage);
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("probe"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: palette.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: globals.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 6,
                resource: deltas.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 7,
                resource: lists.as_entire_binding(),
            },
        ],
    });
    let texture = |label: &str| {
        device.create_texture(&wgpu::TextureDescriptor {
            label: Some(label),
            size: wgpu::Extent3d {
                width: w,
                height: h,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        })
    };
    let targets = [texture("probe positions"), texture("probe normals")];
    let views: Vec<wgpu::TextureView> = targets
        .iter()
        .map(|t| t.create_view(&Default::default()))
        .collect();
    let row = w * 16; // 256 bytes: already a multiple of the copy alignment
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("probe read-back"),
        size: u64::from(row * h) * 2,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let attachment = |view| {
            Some(wgpu::RenderPassColorAttachment {
                view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color::TRANSPARENT),
                    store: wgpu::StoreOp::Store,
                },
            })
        };
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("probe"),
            color_attachments: &[attachment(&views[0]), attachment(&views[1])],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.set_vertex_buffer(0, vertices.slice(..));
        pass.set_vertex_buffer(1, instances.slice(..));
        pass.draw(0..nv as u32, 0..1);
    }
    for (k, t) in targets.iter().enumerate() {
        encoder.copy_texture_to_buffer(
            wgpu::TexelCopyTextureInfo {
                texture: t,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            wgpu::TexelCopyBufferInfo {
                buffer: &readback,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: u64::from(row * h) * k as u64,
                    bytes_per_row: Some(row),
                    rows_per_image: Some(h),
                },
            },
            wgpu::Extent3d {
                width: w,
                height: h,
                depth_or_array_layers: 1,
            },
        );
    }
    let sub = ctx.queue.submit([encoder.finish()]);
    let (tx, rx) = std::sync::mpsc::channel();
    readback.map_async(wgpu::MapMode::Read, .., move |r| {
        let _ = tx.send(r);
    });
    device
        .poll(wgpu::PollType::Wait {
            submission_index: Some(sub),
            timeout: None,
        })
        .unwrap();
    rx.recv().unwrap().unwrap();
    let bytes = readback.get_mapped_range(..).unwrap().to_vec();
    let floats: Vec<f32> = bytemuck::cast_slice(&bytes).to_vec();
    let texel = |k: usize, v: usize| {
        let at = k * (w * h) as usize * 4 + v * 4;
        Vec3::new(floats[at], floats[at + 1], floats[at + 2])
    };
    (
        (0..nv).map(|v| texel(0, v)).collect(),
        (0..nv).map(|v| texel(1, v).normalize_or_zero()).collect(),
    )
}

#[test]
fn the_vertex_stage_equals_the_cpu_for_lbs_and_dqs() {
    let Some(ctx) = common::context() else { return };
    for skinning in [SkinningMethod::Linear, SkinningMethod::DualQuaternion] {
        // Four influences: the vertex path reads the first set only.
        let mesh = face(skinning, 4);
        let pal = palette(0.3);
        for active in active_lists() {
            let cpu = mesh.skin_cpu_morphed(&pal, &active);
            let gpu = vertex_stage(&ctx, &mesh, &pal, &active);
            let (pe, ne) = errors(&gpu, &cpu);
            eprintln!(
                "vertex stage {skinning:?}, {} active: position {pe:.2e}, normal {ne:.2e}",
                active.len()
            );
            assert!(
                pe <= 1e-5 && ne <= 1e-5,
                "{skinning:?} {active:?}: {pe} {ne}"
            );
        }
    }
}
