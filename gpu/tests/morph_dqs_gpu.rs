//! Morph targets and dual-quaternion skinning in `skinning.wgsl` against the CPU reference
//! (`SkinnedMesh::skin_cpu_morphed`), on a real adapter (lavapipe in CI).
//!
//! Compute path: position metric `max_v |gpu_v − cpu_v| / d`, with `d` the diagonal of the
//! CPU-skinned mesh's bounding box, and `max_v |gpu_n − cpu_n|` for unit normals; bound 1e-5.
//! Vertex path: the instanced draw of the morphed, skinned mesh against the same renderer
//! drawing the CPU-morphed and CPU-skinned vertices as a static mesh (identity palette).
#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside #[test] functions

mod common;

use glam::{Affine3A, EulerRot, Mat3, Mat4, Quat, Vec3};
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
    let morphs = MorphInstances::new(&ctx, gpu_mesh.morph_target_count(), &refs).unwrap();
    let size = SkinPass::output_size(&gpu_mesh, 3);
    let out = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("out"),
        size,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    let batch = SkinBatch {
        palette_base: 0,
        instance_count: 3,
    };
    let buffers = SkinBuffers {
        palette: &palette_buf,
        out: &out,
        morphs: Some(&morphs),
    };
    pass.encode(&ctx, &mut encoder, &gpu_mesh, buffers, batch, None)
        .unwrap();
    let floats = read_buffer_f32(&ctx, encoder, &out, size).unwrap();
    let nv = mesh.positions().len();
    for i in 0..3 {
        let cpu = mesh.skin_cpu_morphed(&palettes[i], &lists[i]);
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
        assert!(pe <= 1e-5 && ne <= 1e-5, "instance {i}: {pe} {ne}");
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
