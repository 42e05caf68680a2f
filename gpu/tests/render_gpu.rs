//! Offscreen crowd rendering on a real adapter (lavapipe in CI): the characters appear where
//! the camera puts them.
//!
//! Reference: the same frame's palettes skinned on the CPU (`SkinnedMesh::skin_cpu`), moved
//! by each instance's world transform, projected with the same camera matrix and rasterised
//! on the CPU (pixel-centre coverage, all triangles). The GPU image's foreground (pixels that
//! differ from the clear colour) must match it: coverage within 2 %, intersection over union
//! ≥ 0.95, centroid within 1 px overall and 1.5 px per character; each character's pixel
//! centroid lies within 8 % of the image height of the projection of its known position (the
//! centre of its CPU-skinned world bounding box; the entity origin is printed too, but clips
//! with root motion carry the body away from it).
#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside #[test] functions

mod common;

use common::context;
use std::sync::Arc;

use glam::{Quat, Vec2, Vec3};
use sinew_fixtures::builtin;
use sinew_gpu::context::{GpuContext, GpuError};
use sinew_gpu::render::{Camera, CrowdRenderer, Instance, RgbaImage};
use sinew_jobs::asset::{AssetRegistry, Clip, Rig, SkinnedMesh, Transform};
use sinew_jobs::component::{AnimationToProcess, EntityTransform, FrameSlot, SkinRef, animated};
use sinew_jobs::import::import_gltf;
use sinew_runtime::store::{Entity, Store};

/// Pixel-centre coverage of the triangles (either winding).
fn raster(tris: &[[Vec2; 3]], w: u32, h: u32) -> Vec<bool> {
    let mut mask = vec![false; (w * h) as usize];
    for t in tris {
        let [a, b, c] = *t;
        let area = (b - a).perp_dot(c - a);
        if area == 0.0 {
            continue;
        }
        let lo = a.min(b).min(c);
        let hi = a.max(b).max(c);
        let x0 = lo.x.floor().max(0.0) as u32;
        let y0 = lo.y.floor().max(0.0) as u32;
        let x1 = (hi.x.ceil() as i64).clamp(0, w as i64) as u32;
        let y1 = (hi.y.ceil() as i64).clamp(0, h as i64) as u32;
        for y in y0..y1 {
            for x in x0..x1 {
                let p = Vec2::new(x as f32 + 0.5, y as f32 + 0.5);
                let e0 = (b - a).perp_dot(p - a);
                let e1 = (c - b).perp_dot(p - b);
                let e2 = (a - c).perp_dot(p - c);
                let inside = if area > 0.0 {
                    e0 >= 0.0 && e1 >= 0.0 && e2 >= 0.0
                } else {
                    e0 <= 0.0 && e1 <= 0.0 && e2 <= 0.0
                };
                if inside {
                    mask[(y * w + x) as usize] = true;
                }
            }
        }
    }
    mask
}

fn centroid(mask: &[bool], w: u32, keep: impl Fn(u32, u32) -> bool) -> (Vec2, usize) {
    let (mut s, mut n) = (Vec2::ZERO, 0usize);
    for (i, _) in mask.iter().enumerate().filter(|(_, m)| **m) {
        let (x, y) = (i as u32 % w, i as u32 / w);
        if keep(x, y) {
            s += Vec2::new(x as f32 + 0.5, y as f32 + 0.5);
            n += 1;
        }
    }
    (if n > 0 { s / n as f32 } else { Vec2::ZERO }, n)
}

struct Scene {
    rig: Arc<Rig>,
    mesh: Arc<SkinnedMesh>,
    clips: Vec<Arc<Clip>>,
    spacing: f32,
    scale: f32,
}

fn check_render(ctx: &GpuContext, scene: &Scene, name: &str) {
    let (w, h) = (320u32, 200u32);
    let mut store = Store::new();
    let ents: Vec<Entity> = (0..3)
        .map(|i| {
            let (a, b, c, d, e) = animated(
                scene.rig.clone(),
                vec![
                    AnimationToProcess::new(scene.clips[i % scene.clips.len()].clone())
                        .at(0.31 + 0.47 * i as f32),
                ],
            );
            let x = (i as f32 - 1.0) * scene.spacing;
            let t = Transform::new(
                Vec3::new(x, 0.0, -0.3 * x),
                Quat::from_rotation_y(0.6 * (i as f32 - 1.0)),
                Vec3::splat(scene.scale),
            );
            store
                .spawn((
                    a,
                    b,
                    c,
                    d,
                    e,
                    SkinRef::new(scene.mesh.clone()),
                    EntityTransform(t),
                ))
                .unwrap()
        })
        .collect();
    let (mut ring, cpu_palette) = common::first_frame(ctx, &mut store);
    // Instances and the CPU reference geometry (world space).
    let mut instances = Vec::new();
    let mut world_tris: Vec<Vec<[Vec3; 3]>> = Vec::new();
    let mut origins = Vec::new();
    for e in &ents {
        let slot = *store.get::<FrameSlot>(*e).unwrap();
        let world = store.get::<EntityTransform>(*e).unwrap().0.to_affine();
        origins.push(Vec3::from(world.translation));
        instances.push(Instance::new(slot.palette_offset, world));
        let pal = &cpu_palette
            [slot.palette_offset as usize..(slot.palette_offset + slot.palette_count) as usize];
        let (p, _) = scene.mesh.skin_cpu(pal);
        let wp: Vec<Vec3> = p.iter().map(|v| world.transform_point3(*v)).collect();
        world_tris.push(
            scene
                .mesh
                .indices()
                .chunks_exact(3)
                .map(|t| [wp[t[0] as usize], wp[t[1] as usize], wp[t[2] as usize]])
                .collect(),
        );
    }
    assert_eq!(
        Instance::new(7, instances[2].world()).world_rows,
        instances[2].world_rows
    );
    // Camera framing the crowd's bounding box.
    let all: Vec<Vec3> = world_tris.iter().flatten().flatten().copied().collect();
    let (lo, hi) = all.iter().fold(
        (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)),
        |(l, u), v| (l.min(*v), u.max(*v)),
    );
    let centre = (lo + hi) * 0.5;
    let diag = (hi - lo).length();
    let mut camera = Camera::look_at(
        centre + Vec3::new(0.15, 0.35, 1.0).normalize() * 1.3 * diag,
        centre,
    );
    camera.near = 0.01 * diag;
    camera.far = 10.0 * diag;
    let mut renderer = CrowdRenderer::new(ctx, &scene.mesh, w, h).unwrap();
    let image = renderer
        .render_ring(ctx, &mut ring, &instances, &camera)
        .unwrap();
    assert_eq!(
        (image.width, image.height, image.pixels.len()),
        (w, h, (w * h * 4) as usize)
    );

    // CPU reference mask, and per-character projected bbox centres.
    let project = |p: Vec3| camera.project(p, w, h).unwrap();
    let mut cpu_masks = Vec::new();
    for tris in &world_tris {
        let px: Vec<[Vec2; 3]> = tris
            .iter()
            .map(|t| [project(t[0]), project(t[1]), project(t[2])])
            .collect();
        cpu_masks.push(raster(&px, w, h));
    }
    let cpu: Vec<bool> = (0..(w * h) as usize)
        .map(|i| cpu_masks.iter().any(|m| m[i]))
        .collect();
    assert!(!cpu[0], "corner must be background");
    let bg = image.pixel(0, 0).unwrap();
    let gpu: Vec<bool> = image
        .pixels
        .chunks_exact(4)
        .map(|p| p.iter().zip(bg).any(|(a, b)| a.abs_diff(b) > 2))
        .collect();
    let (c_cpu, n_cpu) = centroid(&cpu, w, |_, _| true);
    let (c_gpu, n_gpu) = centroid(&gpu, w, |_, _| true);
    let inter = cpu.iter().zip(&gpu).filter(|(a, b)| **a && **b).count();
    let union = cpu.iter().zip(&gpu).filter(|(a, b)| **a || **b).count();
    let iou = inter as f32 / union.max(1) as f32;
    let frac = n_gpu as f32 / (w * h) as f32;
    eprintln!(
        "{name}: coverage gpu {n_gpu} px ({:.1} %), cpu {n_cpu} px; IoU {iou:.4}; centroid gpu {c_gpu} cpu {c_cpu} (Δ {:.3} px)",
        100.0 * frac,
        c_gpu.distance(c_cpu)
    );
    assert!((0.01..0.6).contains(&frac), "implausible coverage {frac}");
    assert!(
        (n_gpu as f32 - n_cpu as f32).abs() <= 0.02 * n_cpu as f32,
        "coverage {n_gpu} vs {n_cpu}"
    );
    assert!(iou >= 0.95, "IoU {iou}");
    assert!(c_gpu.distance(c_cpu) <= 1.0);

    // Per character: pixels nearest to each projected known position.
    let anchors: Vec<Vec2> = world_tris
        .iter()
        .map(|tris| {
            let (l, u) = tris.iter().flatten().fold(
                (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)),
                |(l, u), v| (l.min(*v), u.max(*v)),
            );
            project((l + u) * 0.5)
        })
        .collect();
    let nearest = |x: u32, y: u32| {
        let p = Vec2::new(x as f32 + 0.5, y as f32 + 0.5);
        (0..anchors.len())
            .min_by(|a, b| anchors[*a].distance(p).total_cmp(&anchors[*b].distance(p)))
            .unwrap_or(0)
    };
    for (i, anchor) in anchors.iter().enumerate() {
        let (cg, ng) = centroid(&gpu, w, |x, y| nearest(x, y) == i);
        let (cc, nc) = centroid(&cpu, w, |x, y| nearest(x, y) == i);
        let origin_px = project(origins[i]);
        eprintln!(
            "  character {i}: projected position {origin_px}, bbox centre {anchor}, gpu centroid {cg} ({ng} px), cpu centroid {cc} ({nc} px)"
        );
        assert!(ng > 50, "character {i} barely visible");
        assert!(
            cg.distance(cc) <= 1.5,
            "character {i}: centroid {cg} vs {cc}"
        );
        assert!(
            cg.distance(*anchor) <= 0.08 * h as f32,
            "character {i}: centroid {cg} far from {anchor}"
        );
    }

    // Lambert shading: brightness varies across the characters.
    let lum: Vec<u32> = image
        .pixels
        .chunks_exact(4)
        .zip(&gpu)
        .filter(|(_, m)| **m)
        .map(|(p, _)| u32::from(p[0]) + u32::from(p[1]) + u32::from(p[2]))
        .collect();
    let (lmin, lmax) = (
        lum.iter().min().copied().unwrap_or(0),
        lum.iter().max().copied().unwrap_or(0),
    );
    assert!(lmax - lmin > 120, "flat shading: luminance {lmin}..{lmax}");

    // PNG round trip.
    let path = common::png_dir().join(format!("render_gpu_{name}.png"));
    image.save_png(&path).unwrap();
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0u8; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let back = RgbaImage {
        width: info.width,
        height: info.height,
        pixels: buf[..info.buffer_size()].to_vec(),
    };
    assert_eq!(back, image);
    eprintln!("  wrote {}", path.display());
}

#[test]
fn builtin_crowd_renders_where_the_camera_says() {
    let Some(ctx) = context() else { return };
    let registry = AssetRegistry::new();
    let c = builtin::bake_character(&registry).unwrap();
    let scene = Scene {
        rig: c.rig,
        mesh: c.mesh,
        clips: vec![c.walk, c.run, c.wave],
        spacing: 1.4,
        scale: 1.0,
    };
    check_render(&ctx, &scene, "builtin");
}

#[test]
fn fox_crowd_renders_where_the_camera_says() {
    let Some(ctx) = context() else { return };
    let registry = AssetRegistry::new();
    let s = import_gltf(&common::fox_path(), &registry).unwrap();
    let scene = Scene {
        rig: s.rig,
        mesh: s.meshes[0].skinned_mesh.clone(),
        clips: s.clips,
        spacing: 120.0,
        scale: 1.0,
    };
    check_render(&ctx, &scene, "fox");
}

#[test]
fn render_rejects_instances_past_the_palette() {
    let Some(ctx) = context() else { return };
    let registry = AssetRegistry::new();
    let c = builtin::bake_character(&registry).unwrap();
    let mut renderer = CrowdRenderer::new(&ctx, &c.mesh, 64, 64).unwrap();
    let palette = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 48 * c.mesh.bone_count() as u64,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let cam = Camera::look_at(Vec3::new(0.0, 1.0, 5.0), Vec3::Y);
    let ok = [Instance::new(0, glam::Affine3A::IDENTITY)];
    assert!(renderer.render(&ctx, &palette, &ok, &cam).is_ok());
    let bad = [Instance::new(1, glam::Affine3A::IDENTITY)];
    assert!(matches!(
        renderer.render(&ctx, &palette, &bad, &cam),
        Err(GpuError::InvalidInput { .. })
    ));
    assert!(matches!(
        CrowdRenderer::new(&ctx, &c.mesh, 0, 10),
        Err(GpuError::InvalidInput { .. })
    ));
}
