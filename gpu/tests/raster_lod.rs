//! Level of detail and near-plane handling in the compute rasteriser, on a real adapter
//! (lavapipe in CI; skipped, with a message, only where no adapter exists).
//!
//! - LOD images: a crowd of built-in characters at crowd distance drawn with each simplified
//!   level alone covers nearly the same pixels as the full mesh (IoU ≥ 0.95 at 25 % of the
//!   triangles, ≥ 0.88 at 6 %; lavapipe: 0.978 and 0.934), and the chain with the default
//!   1-pixel error bound ≥ 0.95.
//! - Level choice: per-level instance counts equal those computed in the test from the camera
//!   (view depth of each character's LOD sphere, focal length from the field of view), for
//!   both vertex sources.
//! - Near plane: triangles with vertices behind the eye or in front of the near plane are
//!   clipped (a ground quad around the camera: same pixels as the graphics pipeline; without
//!   clipping the compute image was empty), and a character against the camera matches too.
#![allow(clippy::unwrap_used, clippy::panic)] // tests: a failed step is a failed test

mod common;

use common::context;
use std::sync::Arc;

use glam::{Affine3A, Quat, Vec3};
use sinew_fixtures::builtin;
use sinew_gpu::baked::draw::BakedRenderer;
use sinew_gpu::baked::{BakedAnimationGpu, BakedInstance, BakedTexelFormat};
use sinew_gpu::context::{GpuContext, GpuError};
use sinew_gpu::raster::{ComputeBakedRenderer, ComputeCrowdRenderer, LodLevel};
use sinew_gpu::render::{Camera, Instance, RgbaImage};
use sinew_jobs::asset::{AssetRegistry, Clip, MeshLod, Rig, SkinnedMesh, lod_chain};
use sinew_jobs::bake_texture::{BakeTextureOptions, bake_animation_texture};

struct Setup {
    rig: Arc<Rig>,
    mesh: Arc<SkinnedMesh>,
    clips: Vec<Arc<Clip>>,
    lods: Vec<MeshLod>,
}

fn setup() -> Setup {
    let c = builtin::bake_character(&AssetRegistry::new()).unwrap();
    let lods = lod_chain(&c.mesh, &[0.25, 0.06]).unwrap();
    for l in &lods {
        eprintln!(
            "level: {} triangles, error {}",
            l.mesh.indices().len() / 3,
            l.error
        );
    }
    Setup {
        rig: c.rig,
        mesh: c.mesh,
        clips: vec![c.walk, c.run, c.wave, c.idle],
        lods,
    }
}

fn chain(s: &Setup) -> Vec<LodLevel<'_>> {
    let mut levels = vec![LodLevel {
        mesh: &s.mesh,
        error: 0.0,
    }];
    levels.extend(s.lods.iter().map(|l| LodLevel {
        mesh: &l.mesh,
        error: l.error,
    }));
    levels
}

/// Bounding sphere of the bind pose with twice its radius (what the renderer documents),
/// computed here from the positions.
fn lod_sphere(mesh: &SkinnedMesh) -> (Vec3, f32) {
    let p = mesh.positions();
    let lo = p.iter().fold(Vec3::splat(f32::MAX), |a, b| a.min(*b));
    let hi = p.iter().fold(Vec3::splat(f32::MIN), |a, b| a.max(*b));
    let c = (lo + hi) * 0.5;
    let r = p.iter().map(|q| q.distance(c)).fold(0.0f32, f32::max);
    (c, 2.0 * r)
}

/// The baked renderers' clear colour (linear 0.55, 0.65, 0.75 in an RGBA8 unorm target).
const BACKGROUND: [u8; 3] = [140, 166, 191];

/// Pixels that differ from the background colour.
fn mask(pixels: &[u8]) -> Vec<bool> {
    pixels
        .chunks_exact(4)
        .map(|p| (0..3).any(|c| p[c].abs_diff(BACKGROUND[c]) > 2))
        .collect()
}

/// Intersection over union of two coverage masks.
fn mask_iou(a: &[bool], b: &[bool]) -> f32 {
    let inter = a.iter().zip(b).filter(|(x, y)| **x && **y).count();
    let union = a.iter().zip(b).filter(|(x, y)| **x || **y).count();
    inter as f32 / union.max(1) as f32
}

fn iou(a: &[u8], b: &[u8]) -> (f32, usize) {
    let (ma, mb) = (mask(a), mask(b));
    (mask_iou(&ma, &mb), ma.iter().filter(|m| **m).count())
}

/// The built-in character's clips baked (30 fps) and uploaded as RGBA32F.
fn baked_animation(ctx: &GpuContext, s: &Setup) -> BakedAnimationGpu {
    let baked = bake_animation_texture(
        &s.rig,
        &s.mesh,
        &s.clips,
        &BakeTextureOptions::new(30.0, ctx.limits.max_texture_dimension_2d),
    )
    .unwrap();
    BakedAnimationGpu::new(ctx, &baked, &s.mesh, BakedTexelFormat::Rgba32Float).unwrap()
}

/// A grid of characters in front of the camera, each `height_px`-ish pixels tall.
fn crowd(size: f32, n: usize) -> Vec<Affine3A> {
    let mut out = Vec::new();
    for z in 0..n {
        for x in 0..n {
            out.push(Affine3A::from_rotation_translation(
                Quat::from_rotation_y(0.7 * (x + 2 * z) as f32),
                Vec3::new(
                    (x as f32 - (n - 1) as f32 * 0.5) * 0.8 * size,
                    0.0,
                    -(z as f32) * 0.8 * size,
                ),
            ));
        }
    }
    out
}

#[test]
fn lod_images_match_the_full_mesh_at_crowd_distance() {
    let Some(ctx) = context() else { return };
    let s = setup();
    let (w, h) = (320u32, 200u32);
    let anim = baked_animation(&ctx, &s);
    let size = lod_sphere(&s.mesh).1 / 2.0;
    let places = crowd(size, 5);
    let instances: Vec<BakedInstance> = places
        .iter()
        .enumerate()
        .map(|(i, p)| BakedInstance::new(*p, i as u32 % 4, 0.2 + 0.37 * i as f32, 1.0))
        .collect();
    // Characters 25–40 px tall.
    let mut camera = Camera::look_at(
        Vec3::new(0.0, 2.0 * size, 7.0 * size),
        Vec3::new(0.0, 0.3 * size, -1.6 * size),
    );
    camera.near = 0.05 * size;
    camera.far = 50.0 * size;
    let vp = camera.view_proj(w as f32 / h as f32);
    let draw = |levels: &[LodLevel<'_>], pixel_error: f32| {
        let mut r = ComputeBakedRenderer::with_lods(&ctx, &anim, levels, w, h).unwrap();
        r.options_mut().lod_pixel_error = pixel_error;
        r.options_mut().count_levels = true;
        r.set_instances(&ctx, &anim, &instances).unwrap();
        r.render(&ctx, &anim, vp, 0.7).unwrap();
        (r.read_pixels(&ctx).unwrap(), r.level_counts(&ctx).unwrap())
    };
    let levels = chain(&s);
    let (full, _) = draw(&levels[..1], 1.0);
    for (k, bound) in [(1usize, 0.95f32), (2, 0.88)] {
        // The level alone, as level 0 of its own chain.
        let (img, counts) = draw(&levels[k..=k], 1.0);
        assert_eq!(counts, vec![25]);
        let (j, px) = iou(&full, &img);
        eprintln!("level {k} alone vs full: IoU {j:.4} ({px} px)");
        assert!(px > 1500, "too little drawn: {px}");
        assert!(j >= bound, "level {k}: IoU {j} < {bound}");
    }
    // The chain with the default bound picks coarser levels for the far rows.
    let (img, counts) = draw(&levels, 1.0);
    let (j, _) = iou(&full, &img);
    eprintln!("chain (1 px): counts {counts:?}, IoU {j:.4}");
    assert_eq!(counts.iter().sum::<u32>(), 25);
    assert!(
        counts[0] < 25,
        "no instance used a simplified level: {counts:?}"
    );
    assert!(j >= 0.95, "chain IoU {j}");
    // Forcing the coarsest level everywhere.
    let (_, counts) = draw(&levels, 1e9);
    assert_eq!(counts, vec![0, 0, 25]);
    let (_, counts) = draw(&levels, 0.0);
    assert_eq!(counts, vec![25, 0, 0]);
}

/// Expected level of a character at `world` (no scale), from the camera alone.
fn expected_level(
    camera: &Camera,
    height: u32,
    sphere: (Vec3, f32),
    world: Vec3,
    errors: &[f32],
) -> (usize, f64) {
    let forward = (camera.target - camera.eye).normalize().as_dvec3();
    let centre = (world + sphere.0).as_dvec3();
    let depth = (centre - camera.eye.as_dvec3()).dot(forward);
    let w_near = depth - f64::from(sphere.1);
    let focal = 0.5 * f64::from(height) / (0.5 * f64::from(camera.fov_y)).tan();
    if w_near <= 0.0 {
        // The sphere reaches the eye plane: full detail.
        return (0, f64::INFINITY);
    }
    let mut level = 0;
    // Closest approach of any level's projected error to the 1 px threshold (ratio).
    let mut margin = f64::INFINITY;
    for (l, e) in errors.iter().enumerate().skip(1) {
        let px = f64::from(*e) * focal / w_near;
        margin = margin.min((px.ln()).abs());
        if px <= 1.0 {
            level = l;
        }
    }
    (level, margin)
}

#[test]
fn level_choice_follows_projected_error() {
    let Some(ctx) = context() else { return };
    let s = setup();
    let levels = chain(&s);
    let errors: Vec<f32> = levels.iter().map(|l| l.error).collect();
    let (w, h) = (256u32, 256u32);
    let sphere = lod_sphere(&s.mesh);
    let size = sphere.1 / 2.0;
    let camera = {
        let mut c = Camera::look_at(
            Vec3::new(0.0, 0.5 * size, 0.0),
            Vec3::new(0.0, 0.5 * size, -1.0),
        );
        c.near = 0.01 * size;
        c.far = 1e4 * size;
        c
    };
    // Characters along the view axis (slightly to the side), at depths from 1 to 600 sizes.
    let mut places = Vec::new();
    let mut expected = vec![0u32; levels.len()];
    let mut d = 1.0f32;
    while d < 600.0 {
        let world = Vec3::new(0.05 * size * (places.len() % 3) as f32, 0.0, -d * size);
        let (l, margin) = expected_level(&camera, h, sphere, world, &errors);
        // Skip positions within 2 % of a threshold (float rounding could go either way).
        if margin > 0.02 {
            expected[l] += 1;
            places.push(world);
        }
        d *= 1.13;
    }
    eprintln!("expected per level: {expected:?}");
    assert!(
        expected.iter().all(|n| *n > 0),
        "test scene covers every level"
    );
    let vp = camera.view_proj(w as f32 / h as f32);
    // Baked source.
    let anim = baked_animation(&ctx, &s);
    let instances: Vec<BakedInstance> = places
        .iter()
        .map(|p| BakedInstance::new(Affine3A::from_translation(*p), 0, 0.0, 1.0))
        .collect();
    let mut r = ComputeBakedRenderer::with_lods(&ctx, &anim, &levels, w, h).unwrap();
    r.options_mut().count_levels = true;
    r.set_instances(&ctx, &anim, &instances).unwrap();
    r.render(&ctx, &anim, vp, 0.0).unwrap();
    assert_eq!(r.level_counts(&ctx).unwrap(), expected, "baked source");
    // Palette source (identity palettes, float3x4 column-major: the level choice needs no
    // animation).
    let bones = s.mesh.bone_count();
    let identity: Vec<[f32; 12]> =
        vec![[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]; bones];
    let palette = wgpu::util::DeviceExt::create_buffer_init(
        &ctx.device,
        &wgpu::util::BufferInitDescriptor {
            label: Some("test palette"),
            contents: bytemuck::cast_slice(&identity),
            usage: wgpu::BufferUsages::STORAGE,
        },
    );
    let instances: Vec<Instance> = places
        .iter()
        .map(|p| Instance::new(0, Affine3A::from_translation(*p)))
        .collect();
    let mut r = ComputeCrowdRenderer::with_lods(&ctx, &levels, w, h).unwrap();
    r.options_mut().count_levels = true;
    r.render(&ctx, &palette, &instances, &camera).unwrap();
    assert_eq!(r.level_counts(&ctx).unwrap(), expected, "palette source");
}

#[test]
fn bad_chains_are_refused() {
    let Some(ctx) = context() else { return };
    let s = setup();
    let fox_like = builtin::character();
    let mut other = fox_like.mesh.clone();
    other.bones.truncate(3);
    other
        .influences
        .iter_mut()
        .for_each(|i| i.0 = vec![(0, 1.0)]);
    let other = other.bake().unwrap();
    let bad: [&[LodLevel<'_>]; 3] = [
        &[],
        &[
            LodLevel {
                mesh: &s.mesh,
                error: 0.0,
            },
            LodLevel {
                mesh: &other,
                error: 0.1,
            },
        ],
        &[
            LodLevel {
                mesh: &s.mesh,
                error: 0.5,
            },
            LodLevel {
                mesh: &s.lods[0].mesh,
                error: 0.1,
            },
        ],
    ];
    for levels in bad {
        assert!(matches!(
            ComputeCrowdRenderer::with_lods(&ctx, levels, 64, 64),
            Err(GpuError::InvalidInput { .. })
        ));
    }
}

/// Pixels that differ from the background: (coverage mask, count).
fn coverage(pixels: &[u8]) -> (Vec<bool>, usize) {
    let m = mask(pixels);
    let n = m.iter().filter(|x| **x).count();
    (m, n)
}

/// A ground quad 10 × 10 units around the camera, seen from 1 and 0.1 units above it: its
/// triangles have vertices behind the eye and cross the near plane. The graphics
/// pipeline clips them; the compute rasteriser must draw the same ground (IoU ≥ 0.99, coverage
/// within 1 %; without clipping it drew nothing).
#[test]
fn ground_crossing_the_eye_plane_matches_the_hardware_renderer() {
    let Some(ctx) = context() else { return };
    let (w, h) = (160u32, 120u32);
    let corners = [
        Vec3::new(-5.0, 0.0, -5.0),
        Vec3::new(5.0, 0.0, -5.0),
        Vec3::new(5.0, 0.0, 5.0),
        Vec3::new(-5.0, 0.0, 5.0),
    ];
    let ground = sinew_jobs::asset::RawSkinnedMesh {
        name: "ground".into(),
        bones: vec![("root".into(), glam::Mat4::IDENTITY)],
        positions: corners.to_vec(),
        normals: vec![Vec3::Y; 4],
        influences: vec![sinew_jobs::asset::RawVertexInfluences(vec![(0, 1.0)]); 4],
        // Both windings: whichever faces the camera is drawn.
        indices: vec![0, 1, 2, 0, 2, 3, 0, 2, 1, 0, 3, 2],
        ..Default::default()
    }
    .bake()
    .unwrap();
    let identity: [[f32; 12]; 1] = [[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]];
    let palette = wgpu::util::DeviceExt::create_buffer_init(
        &ctx.device,
        &wgpu::util::BufferInitDescriptor {
            label: Some("test palette"),
            contents: bytemuck::cast_slice(&identity),
            usage: wgpu::BufferUsages::STORAGE,
        },
    );
    let instances = [Instance::new(0, Affine3A::IDENTITY)];
    // Looking ahead (eye 1 above the ground, near plane 0.05), and low with a near plane that
    // cuts the ground in view (eye 0.1 above it, near plane 0.3).
    for (label, eye, target, near) in [
        (
            "ahead",
            Vec3::new(0.0, 1.0, 0.0),
            Vec3::new(0.0, 0.3, -3.0),
            0.05f32,
        ),
        (
            "low",
            Vec3::new(0.0, 0.1, 0.0),
            Vec3::new(0.3, -0.1, -1.0),
            0.3,
        ),
    ] {
        let mut camera = Camera::look_at(eye, target);
        camera.near = near;
        camera.far = 100.0;
        let mut hw = sinew_gpu::render::CrowdRenderer::new(&ctx, &ground, w, h).unwrap();
        let hardware = hw.render(&ctx, &palette, &instances, &camera).unwrap();
        let mut cs = ComputeCrowdRenderer::new(&ctx, &ground, w, h).unwrap();
        let compute = cs.render(&ctx, &palette, &instances, &camera).unwrap();
        // The default clear colour (linear 0.02, 0.02, 0.03 in the sRGB image).
        let bg = [39u8, 39, 48];
        let fg = |px: &[u8]| -> Vec<bool> {
            px.chunks_exact(4)
                .map(|p| (0..3).any(|c| p[c].abs_diff(bg[c]) > 2))
                .collect()
        };
        let (mh, mc) = (fg(&hardware.pixels), fg(&compute.pixels));
        let nh = mh.iter().filter(|x| **x).count();
        let nc = mc.iter().filter(|x| **x).count();
        let iou = mask_iou(&mh, &mc);
        eprintln!("ground {label}: hardware {nh} px, compute {nc} px, IoU {iou:.4}");
        assert!(
            nh as f32 > 0.3 * (w * h) as f32,
            "{label}: ground too small: {nh}"
        );
        assert!(
            (nc as f32 - nh as f32).abs() <= 0.01 * nh as f32,
            "{label}: coverage {nc} vs {nh}"
        );
        assert!(iou >= 0.99, "{label}: IoU {iou}");
    }
}

/// A camera against a character's chest, the near plane cutting through it: the compute
/// image covers the same pixels as the hardware renderer's (IoU ≥ 0.97, coverage within 3 %).
/// (The character's triangles are small, so the pieces clipping adds here are a few pixels;
/// the ground test above is the one that fails without clipping.)
#[test]
fn characters_straddling_the_near_plane_match_the_hardware_renderer() {
    let Some(ctx) = context() else { return };
    let s = setup();
    let (w, h) = (320u32, 200u32);
    let anim = baked_animation(&ctx, &s);
    let size = lod_sphere(&s.mesh).1 / 2.0;
    // The eye is 0.05 % of the character's size in front of its chest (bind pose), looking at
    // it obliquely with the near plane (0.2 %) cutting through the chest: the triangles
    // around the eye straddle the near plane, some with vertices behind the eye, and their
    // clipped parts fill the middle of the image.
    let p = s.mesh.positions();
    let (ylo, yhi) = p
        .iter()
        .fold((f32::MAX, f32::MIN), |(l, h), q| (l.min(q.y), h.max(q.y)));
    let chest_y = ylo + 0.7 * (yhi - ylo);
    let front = p
        .iter()
        .filter(|q| q.x.abs() < 0.05 * size && (q.y - chest_y).abs() < 0.05 * size)
        .fold(f32::MIN, |m, q| m.max(q.z));
    assert!(front > f32::MIN, "no chest vertices found");
    let eye = Vec3::new(0.0, chest_y, front + 0.0005 * size);
    let mut camera = Camera::look_at(eye, eye + Vec3::new(0.8, -0.1, -0.5));
    camera.near = 0.002 * size;
    camera.far = 20.0 * size;
    let vp = camera.view_proj(w as f32 / h as f32);
    // A second character further ahead.
    let second = Affine3A::from_rotation_translation(
        Quat::from_rotation_y(-1.2),
        Vec3::new(1.5 * size, 0.0, -0.5 * size),
    );
    let instances: Vec<BakedInstance> = [Affine3A::IDENTITY, second]
        .iter()
        .enumerate()
        .map(|(i, p)| BakedInstance::new(*p, 3 * i as u32, 0.0, 1.0))
        .collect();
    let mut hw = BakedRenderer::new(&ctx, &anim, w, h).unwrap();
    hw.set_instances(&ctx, &anim, &instances).unwrap();
    hw.render(&ctx, &anim, vp, 0.0).unwrap();
    let hardware = hw.read_pixels(&ctx).unwrap();
    let mut cs = ComputeBakedRenderer::new(&ctx, &anim, &s.mesh, w, h).unwrap();
    cs.set_instances(&ctx, &anim, &instances).unwrap();
    cs.render(&ctx, &anim, vp, 0.0).unwrap();
    let compute = cs.read_pixels(&ctx).unwrap();
    if let Some(dir) = std::env::var_os("SINEW_TEST_PNG") {
        for (name, px) in [("near_hw.png", &hardware), ("near_cs.png", &compute)] {
            let img = RgbaImage {
                width: w,
                height: h,
                pixels: px.clone(),
            };
            img.save_png(std::path::Path::new(&dir).join(name)).unwrap();
        }
    }
    let (mh, nh) = coverage(&hardware);
    let (mc, nc) = coverage(&compute);
    let iou = mask_iou(&mh, &mc);
    let bottom = |m: &[bool]| m[((h - 1) * w) as usize..].iter().filter(|x| **x).count();
    eprintln!(
        "near plane: hardware {nh} px, compute {nc} px, IoU {iou:.4}; bottom row {} vs {}",
        bottom(&mh),
        bottom(&mc)
    );
    assert!(nh as f32 > 0.05 * (w * h) as f32, "scene too small: {nh}");
    assert!(
        bottom(&mh) > 0,
        "the lying character does not reach the image bottom"
    );
    assert!(
        (nc as f32 - nh as f32).abs() <= 0.03 * nh as f32,
        "coverage {nc} vs {nh}"
    );
    assert!(iou >= 0.97, "IoU {iou}");
}
