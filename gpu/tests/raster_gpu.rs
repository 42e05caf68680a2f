//! The compute rasteriser on a real adapter (lavapipe in CI) against the hardware renderers:
//! the same crowd, camera and light drawn by `CrowdRenderer` / `BakedRenderer` (graphics
//! pipeline) and by `ComputeCrowdRenderer` / `ComputeBakedRenderer` (compute passes only) must
//! cover the same pixels (IoU ≥ 0.97, coverage within 3 %, centroid within 0.5 px) with the same
//! shading (mean channel difference on common pixels ≤ 6 of 255, so back faces are culled and
//! the light is the same), for the built-in character and Fox, both vertex sources. Depth:
//! a near character occludes a far one at pixels computed from the camera. Culling: instances
//! outside the frustum produce nothing, and characters straddling the image's edges are not
//! dropped by the per-instance sphere test. The big-triangle pass, the inline fallback and the
//! in-loop path give identical images. Clusters rebuild every triangle of the mesh.
#![allow(clippy::unwrap_used, clippy::panic)] // tests: a failed step is a failed test

mod common;

use common::{Model, context, model_size};

use glam::{Affine3A, Quat, Vec2, Vec3};
use sinew_gpu::baked::draw::BakedRenderer;
use sinew_gpu::baked::{BakedAnimationGpu, BakedInstance, BakedTexelFormat};
use sinew_gpu::context::{GpuContext, GpuError};
use sinew_gpu::palette_ring::PaletteRing;
use sinew_gpu::raster::{
    CLUSTER_VERTICES, ComputeBakedRenderer, ComputeCrowdRenderer, cluster_mesh,
};
use sinew_gpu::render::{Camera, CrowdRenderer, Instance, RgbaImage};
use sinew_jobs::asset::Transform;
use sinew_jobs::component::{AnimationToProcess, EntityTransform, FrameSlot, SkinRef, animated};
use sinew_runtime::store::Store;

/// The built-in character, clips in the order walk, run, wave, idle.
fn builtin_model() -> Model {
    let mut m = common::builtin_model();
    m.clips.rotate_left(1);
    m
}

fn fox_model() -> Model {
    common::fox_model("fox")
}

/// Foreground mask: pixels that differ from the corner's (background) colour.
fn mask(pixels: &[u8], bg: [u8; 4]) -> Vec<bool> {
    pixels
        .chunks_exact(4)
        .map(|p| p.iter().zip(bg).any(|(a, b)| a.abs_diff(b) > 2))
        .collect()
}

fn centroid(mask: &[bool], w: u32) -> (Vec2, usize) {
    let (mut s, mut n) = (Vec2::ZERO, 0usize);
    for (i, _) in mask.iter().enumerate().filter(|(_, m)| **m) {
        s += Vec2::new((i as u32 % w) as f32 + 0.5, (i as u32 / w) as f32 + 0.5);
        n += 1;
    }
    (if n > 0 { s / n as f32 } else { Vec2::ZERO }, n)
}

/// Coverage, IoU, centroid and shading of `compute` against `hardware` (RGBA8, same size).
fn compare(name: &str, hardware: &[u8], compute: &[u8], w: u32, h: u32) {
    assert_eq!(hardware.len(), (w * h * 4) as usize);
    assert_eq!(compute.len(), hardware.len());
    let bg: [u8; 4] = hardware[..4].try_into().unwrap();
    let cbg: [u8; 4] = compute[..4].try_into().unwrap();
    assert!(
        bg.iter().zip(cbg).all(|(a, b)| a.abs_diff(b) <= 1),
        "{name}: background {bg:?} vs {cbg:?}"
    );
    let hw = mask(hardware, bg);
    let cs = mask(compute, bg);
    let (c_hw, n_hw) = centroid(&hw, w);
    let (c_cs, n_cs) = centroid(&cs, w);
    let inter = hw.iter().zip(&cs).filter(|(a, b)| **a && **b).count();
    let union = hw.iter().zip(&cs).filter(|(a, b)| **a || **b).count();
    let iou = inter as f32 / union.max(1) as f32;
    let (mut diff, mut channels) = (0u64, 0u64);
    for (i, _) in hw
        .iter()
        .zip(&cs)
        .enumerate()
        .filter(|(_, (a, b))| **a && **b)
    {
        for c in 0..3 {
            diff += u64::from(hardware[4 * i + c].abs_diff(compute[4 * i + c]));
            channels += 1;
        }
    }
    let mean_diff = diff as f64 / channels.max(1) as f64;
    eprintln!(
        "{name}: hardware {n_hw} px, compute {n_cs} px ({:.1} % of the image); IoU {iou:.4}; centroid Δ {:.3} px; mean colour difference {mean_diff:.2}/255",
        100.0 * n_hw as f32 / (w * h) as f32,
        c_hw.distance(c_cs)
    );
    assert!(
        n_hw as f32 > 0.01 * (w * h) as f32,
        "{name}: too little drawn"
    );
    assert!(
        (n_cs as f32 - n_hw as f32).abs() <= 0.03 * n_hw as f32,
        "{name}: coverage {n_cs} vs {n_hw}"
    );
    assert!(iou >= 0.97, "{name}: IoU {iou}");
    assert!(
        c_hw.distance(c_cs) <= 0.5,
        "{name}: centroid {c_cs} vs {c_hw}"
    );
    assert!(
        mean_diff <= 6.0,
        "{name}: mean colour difference {mean_diff}"
    );
}

/// A crowd animated by the CPU pipeline with its palettes in a ring.
struct PaletteScene {
    ring: PaletteRing,
    instances: Vec<Instance>,
    /// World-space bind-pose-free bounding box centre of each character (CPU-skinned).
    centres: Vec<Vec3>,
}

/// `placements`: world transform and animation choice `k` (clip `k % clips`, phase
/// `0.31 + 0.47 k`) per character.
fn palette_scene(ctx: &GpuContext, m: &Model, placements: &[(Affine3A, usize)]) -> PaletteScene {
    let mut store = Store::new();
    let ents: Vec<_> = placements
        .iter()
        .map(|(world, k)| {
            let (a, b, c, d, e) = animated(
                m.rig.clone(),
                vec![
                    AnimationToProcess::new(m.clips[k % m.clips.len()].clone())
                        .at(0.31 + 0.47 * *k as f32),
                ],
            );
            let (scale, rotation, translation) = world.to_scale_rotation_translation();
            store
                .spawn((
                    a,
                    b,
                    c,
                    d,
                    e,
                    SkinRef::new(m.mesh.clone()),
                    EntityTransform(Transform::new(translation, rotation, scale)),
                ))
                .unwrap()
        })
        .collect();
    let (ring, palette) = common::first_frame(ctx, &mut store);
    let mut instances = Vec::new();
    let mut centres = Vec::new();
    for e in &ents {
        let slot = *store.get::<FrameSlot>(*e).unwrap();
        let world = store.get::<EntityTransform>(*e).unwrap().0.to_affine();
        instances.push(Instance::new(slot.palette_offset, world));
        let pal = &palette
            [slot.palette_offset as usize..(slot.palette_offset + slot.palette_count) as usize];
        let (p, _) = m.mesh.skin_cpu(pal);
        let (lo, hi) = p.iter().fold(
            (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)),
            |(l, u), v| {
                let v = world.transform_point3(*v);
                (l.min(v), u.max(v))
            },
        );
        centres.push((lo + hi) * 0.5);
    }
    PaletteScene {
        ring,
        instances,
        centres,
    }
}

fn row_of_three(m: &Model) -> (Vec<Affine3A>, f32) {
    let size = model_size(&m.mesh);
    let spacing = 0.7 * size;
    let placements = (0..3)
        .map(|i| {
            let x = (i as f32 - 1.0) * spacing;
            Affine3A::from_rotation_translation(
                Quat::from_rotation_y(0.6 * (i as f32 - 1.0)),
                Vec3::new(x, 0.0, -0.3 * x),
            )
        })
        .collect();
    (placements, size)
}

fn framing_camera(size: f32, distance: f32) -> Camera {
    let centre = Vec3::new(0.0, 0.35 * size, 0.0);
    let mut camera = Camera::look_at(
        centre + Vec3::new(0.15, 0.35, 1.0).normalize() * distance * size,
        centre,
    );
    camera.near = 0.01 * size;
    camera.far = 20.0 * size;
    camera
}

fn hardware_image(
    ctx: &GpuContext,
    m: &Model,
    scene: &mut PaletteScene,
    camera: &Camera,
    (w, h): (u32, u32),
) -> RgbaImage {
    let mut hw = CrowdRenderer::new(ctx, &m.mesh, w, h).unwrap();
    let palette = scene.ring.buffer().unwrap().clone();
    hw.render(ctx, &palette, &scene.instances, camera).unwrap()
}

fn check_palette(ctx: &GpuContext, m: &Model) {
    let (w, h) = (320u32, 200u32);
    let (placements, size) = row_of_three(m);
    let placed: Vec<(Affine3A, usize)> = placements.iter().copied().zip(0..).collect();
    let mut scene = palette_scene(ctx, m, &placed);
    for (label, distance) in [("far", 2.2f32), ("close", 0.9)] {
        let camera = framing_camera(size, distance);
        let hardware = hardware_image(ctx, m, &mut scene, &camera, (w, h));
        let mut cs = ComputeCrowdRenderer::new(ctx, &m.mesh, w, h).unwrap();
        let palette = scene.ring.buffer().unwrap().clone();
        let compute = cs.render(ctx, &palette, &scene.instances, &camera).unwrap();
        compare(
            &format!("{} palette {label}", m.name),
            &hardware.pixels,
            &compute.pixels,
            w,
            h,
        );
        // The same frame with every triangle in one invocation's loop, and with every
        // triangle in the big-triangle pass: identical images (atomicMax is order-free).
        cs.options_mut().big_triangle_pixels = u32::MAX;
        let inline = cs.render(ctx, &palette, &scene.instances, &camera).unwrap();
        cs.options_mut().big_triangle_pixels = 0;
        let all_big = cs.render(ctx, &palette, &scene.instances, &camera).unwrap();
        cs.options_mut().big_triangle_capacity = 16;
        let overflow = cs.render(ctx, &palette, &scene.instances, &camera).unwrap();
        assert!(inline == compute && all_big == compute && overflow == compute);
        let path = common::png_dir().join(format!("raster_gpu_{}_{label}.png", m.name));
        compute.save_png(&path).unwrap();
        eprintln!("  wrote {}", path.display());
    }
}

#[test]
fn builtin_palette_crowd_matches_the_hardware_renderer() {
    let Some(ctx) = context() else { return };
    check_palette(&ctx, &builtin_model());
}

#[test]
fn fox_palette_crowd_matches_the_hardware_renderer() {
    let Some(ctx) = context() else { return };
    check_palette(&ctx, &fox_model());
}

fn check_baked(ctx: &GpuContext, m: &Model) {
    let (w, h) = (320u32, 200u32);
    let baked = common::bake(ctx, m, 30.0);
    let anim = BakedAnimationGpu::new(ctx, &baked, &m.mesh, BakedTexelFormat::Rgba32Float).unwrap();
    let (placements, size) = row_of_three(m);
    let n = m.clips.len() as u32;
    let instances: Vec<BakedInstance> = placements
        .iter()
        .enumerate()
        .map(|(i, world)| {
            let inst = BakedInstance::new(*world, i as u32 % n, 0.3 + 0.41 * i as f32, 1.0);
            if i == 1 {
                inst.fading_from((i as u32 + 1) % n, 0.2, 1.0, 0.5, 1.0)
            } else {
                inst
            }
        })
        .collect();
    for (label, distance) in [("far", 2.2f32), ("close", 0.9)] {
        let vp = framing_camera(size, distance).view_proj(w as f32 / h as f32);
        let mut hw = BakedRenderer::new(ctx, &anim, w, h).unwrap();
        hw.set_instances(ctx, &anim, &instances).unwrap();
        let mut cs = ComputeBakedRenderer::new(ctx, &anim, &m.mesh, w, h).unwrap();
        cs.set_instances(ctx, &anim, &instances).unwrap();
        // Global time 0.9 s: the middle instance is cross-fading.
        hw.render(ctx, &anim, vp, 0.9).unwrap();
        let timing = cs.render(ctx, &anim, vp, 0.9).unwrap();
        eprintln!("  {} baked {label}: {timing:?}", m.name);
        compare(
            &format!("{} baked {label}", m.name),
            &hw.read_pixels(ctx).unwrap(),
            &cs.read_pixels(ctx).unwrap(),
            w,
            h,
        );
    }
}

#[test]
fn builtin_baked_crowd_matches_the_hardware_renderer() {
    let Some(ctx) = context() else { return };
    check_baked(&ctx, &builtin_model());
}

#[test]
fn fox_baked_crowd_matches_the_hardware_renderer() {
    let Some(ctx) = context() else { return };
    check_baked(&ctx, &fox_model());
}

/// Two characters on the camera's axis, one near and one far behind it: where both cover the
/// image (the near one's projected centre), the near one's colour wins, whatever the order of
/// the instances. The far one alone is visible there, so occlusion is what hides it.
#[test]
fn near_character_occludes_far_one() {
    let Some(ctx) = context() else { return };
    let m = builtin_model();
    let (w, h) = (160u32, 160u32);
    let size = model_size(&m.mesh);
    let near = Affine3A::from_translation(Vec3::ZERO);
    // Far one: further along the view axis and turned so its shading differs.
    let far = Affine3A::from_rotation_translation(
        Quat::from_rotation_y(2.5),
        Vec3::new(0.0, 0.0, -1.5 * size),
    );
    let mut camera = Camera::look_at(
        Vec3::new(0.0, 0.4 * size, 1.6 * size),
        Vec3::new(0.0, 0.4 * size, 0.0),
    );
    camera.near = 0.01 * size;
    camera.far = 20.0 * size;
    let mut cs = ComputeCrowdRenderer::new(&ctx, &m.mesh, w, h).unwrap();
    let mut render = |placements: &[(Affine3A, usize)]| {
        let mut scene = palette_scene(&ctx, &m, placements);
        let palette = scene.ring.buffer().unwrap().clone();
        let image = cs
            .render(&ctx, &palette, &scene.instances, &camera)
            .unwrap();
        scene.ring.submitted(None);
        (image, scene.centres)
    };
    let (near, far) = ((near, 0), (far, 1));
    let (near_only, centres) = render(&[near]);
    let (far_only, far_centres) = render(&[far]);
    let (both, _) = render(&[near, far]);
    let (both_reversed, _) = render(&[far, near]);
    let bg = near_only.pixel(0, 0).unwrap();
    // Pixels around the near character's projected centre covered by both characters alone.
    let p = camera.project(centres[0], w, h).unwrap();
    let pf = camera.project(far_centres[0], w, h).unwrap();
    eprintln!("near centre projects to {p}, far centre to {pf}");
    let mut checked = 0;
    for dy in -6i32..=6 {
        for dx in -6i32..=6 {
            let (x, y) = ((p.x as i32 + dx) as u32, (p.y as i32 + dy) as u32);
            let (n, f) = (
                near_only.pixel(x, y).unwrap(),
                far_only.pixel(x, y).unwrap(),
            );
            if n == bg || f == bg || n == f {
                continue;
            }
            assert_eq!(both.pixel(x, y).unwrap(), n, "pixel ({x}, {y})");
            assert_eq!(both_reversed.pixel(x, y).unwrap(), n, "pixel ({x}, {y})");
            checked += 1;
        }
    }
    eprintln!("{checked} pixels where the near character hides the far one");
    assert!(checked >= 20, "only {checked} overlapping pixels");
    // Where only the far one covers (its centre lies off the near one), it shows.
    let (fx, fy) = (pf.x as u32, pf.y as u32);
    if near_only.pixel(fx, fy).unwrap() == bg {
        assert_eq!(both.pixel(fx, fy).unwrap(), far_only.pixel(fx, fy).unwrap());
    }
}

/// Instances outside the frustum (behind the camera, beside it, beyond the far plane) draw
/// nothing, with and without the per-instance sphere test; one in view still draws.
#[test]
fn culled_instances_draw_nothing() {
    let Some(ctx) = context() else { return };
    let m = fox_model();
    let (w, h) = (128u32, 96u32);
    let size = model_size(&m.mesh);
    let camera = {
        let mut c = Camera::look_at(Vec3::new(0.0, 0.3 * size, 2.0 * size), Vec3::ZERO);
        c.near = 0.05 * size;
        c.far = 10.0 * size;
        c
    };
    let outside = [
        Affine3A::from_translation(Vec3::new(0.0, 0.0, 6.0 * size)), // behind the eye
        Affine3A::from_translation(Vec3::new(12.0 * size, 0.0, 0.0)), // far to the right
        Affine3A::from_translation(Vec3::new(0.0, 0.0, -40.0 * size)), // beyond the far plane
        Affine3A::from_translation(Vec3::new(0.0, -15.0 * size, 0.0)), // below
    ];
    let placed: Vec<(Affine3A, usize)> = outside.iter().copied().zip(0..).collect();
    let mut scene = palette_scene(&ctx, &m, &placed);
    let palette = scene.ring.buffer().unwrap().clone();
    let mut cs = ComputeCrowdRenderer::new(&ctx, &m.mesh, w, h).unwrap();
    for cull in [cs.options().cull_sphere, None] {
        cs.options_mut().cull_sphere = cull;
        let image = cs
            .render(&ctx, &palette, &scene.instances, &camera)
            .unwrap();
        let bg = image.pixel(0, 0).unwrap();
        let drawn = image.pixels.chunks_exact(4).filter(|p| *p != bg).count();
        assert_eq!(
            drawn, 0,
            "culled instances drew {drawn} pixels (cull sphere {cull:?})"
        );
        let mut with_visible = scene.instances.clone();
        with_visible.push(Instance::new(0, Affine3A::IDENTITY));
        let image = cs.render(&ctx, &palette, &with_visible, &camera).unwrap();
        let drawn = image.pixels.chunks_exact(4).filter(|p| *p != bg).count();
        assert!(drawn > 100, "the visible instance drew {drawn} pixels");
    }
    scene.ring.submitted(None);
    // Characters straddling the image's edges draw the same pixels with the sphere test as
    // without it (the test never drops a visible instance).
    let half_width = 2.0 * size * (camera.fov_y * 0.5).tan() * w as f32 / h as f32;
    let straddling: Vec<(Affine3A, usize)> = [-1.0f32, 1.0]
        .iter()
        .enumerate()
        .map(|(i, side)| {
            let at = Vec3::new(side * half_width, 0.0, 0.0);
            (Affine3A::from_translation(at), i)
        })
        .collect();
    let mut scene = palette_scene(&ctx, &m, &straddling);
    let palette = scene.ring.buffer().unwrap().clone();
    let sphere = ComputeCrowdRenderer::new(&ctx, &m.mesh, w, h)
        .unwrap()
        .options()
        .cull_sphere;
    cs.options_mut().cull_sphere = sphere;
    let culled = cs
        .render(&ctx, &palette, &scene.instances, &camera)
        .unwrap();
    cs.options_mut().cull_sphere = None;
    let unculled = cs
        .render(&ctx, &palette, &scene.instances, &camera)
        .unwrap();
    let bg = unculled.pixel(w / 2, 0).unwrap();
    let drawn = unculled.pixels.chunks_exact(4).filter(|p| *p != bg).count();
    assert!(drawn > 50, "edge characters drew {drawn} pixels");
    assert!(
        culled == unculled,
        "the sphere test dropped a visible character"
    );
    scene.ring.submitted(None);
    // Baked: the same placements draw nothing either.
    let baked = common::bake(&ctx, &m, 30.0);
    let anim =
        BakedAnimationGpu::new(&ctx, &baked, &m.mesh, BakedTexelFormat::Rgba32Float).unwrap();
    let instances: Vec<BakedInstance> = outside
        .iter()
        .map(|w| BakedInstance::new(*w, 0, 0.5, 1.0))
        .collect();
    let mut cb = ComputeBakedRenderer::new(&ctx, &anim, &m.mesh, w, h).unwrap();
    cb.set_instances(&ctx, &anim, &instances).unwrap();
    cb.render(&ctx, &anim, camera.view_proj(w as f32 / h as f32), 0.0)
        .unwrap();
    let px = cb.read_pixels(&ctx).unwrap();
    let bg: [u8; 4] = px[..4].try_into().unwrap();
    assert!(px.chunks_exact(4).all(|p| p == bg));
}

#[test]
fn rejects_bad_input() {
    let Some(ctx) = context() else { return };
    let m = builtin_model();
    assert!(matches!(
        ComputeCrowdRenderer::new(&ctx, &m.mesh, 0, 10),
        Err(GpuError::InvalidInput { .. })
    ));
    let mut cs = ComputeCrowdRenderer::new(&ctx, &m.mesh, 32, 32).unwrap();
    let palette = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 48 * m.mesh.bone_count() as u64,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let cam = Camera::look_at(Vec3::new(0.0, 1.0, 5.0), Vec3::Y);
    assert!(
        cs.render(
            &ctx,
            &palette,
            &[Instance::new(0, Affine3A::IDENTITY)],
            &cam
        )
        .is_ok()
    );
    assert!(matches!(
        cs.render(
            &ctx,
            &palette,
            &[Instance::new(1, Affine3A::IDENTITY)],
            &cam
        ),
        Err(GpuError::InvalidInput { .. })
    ));
    // No instances: a cleared image.
    let empty = cs.render(&ctx, &palette, &[], &cam).unwrap();
    let bg = empty.pixel(0, 0).unwrap();
    assert!(empty.pixels.chunks_exact(4).all(|p| p == bg));
}

/// Clusters rebuild every triangle of the mesh (positions and joints of its three vertices,
/// in the mesh's winding), with local indices inside each cluster's at most 64 vertices.
#[test]
fn clusters_rebuild_every_triangle() {
    for m in [builtin_model(), fox_model()] {
        let c = cluster_mesh(&m.mesh).unwrap();
        let words = 4 * c.vertex_stride as usize;
        let mut rebuilt = Vec::new();
        for k in 0..c.cluster_count as usize {
            let [first_vertex, count, first_tri, tri_count] =
                <[u32; 4]>::try_from(&c.mesh_words[4 * k..4 * k + 4]).unwrap();
            assert!(count as usize <= CLUSTER_VERTICES);
            for t in &c.mesh_words[first_tri as usize..(first_tri + tri_count) as usize] {
                for shift in [0, 8, 16] {
                    let local = (t >> shift) & 0xff;
                    assert!(local < count);
                    let v = (first_vertex + local) as usize * words;
                    rebuilt.push(c.vertex_words[v..v + words].to_vec());
                }
            }
        }
        assert_eq!(rebuilt.len(), m.mesh.indices().len());
        // The same triangles (position and first joints of each corner), in any order.
        let corner = |r: &[u32]| [r[0], r[1], r[2], r[4], r[5]];
        let mut got: Vec<_> = rebuilt
            .chunks_exact(3)
            .map(|t| t.iter().map(|r| corner(r)).collect::<Vec<_>>())
            .collect();
        let mut want: Vec<_> = m
            .mesh
            .indices()
            .chunks_exact(3)
            .map(|t| {
                t.iter()
                    .map(|i| {
                        let p = m.mesh.positions()[*i as usize];
                        let j = m.mesh.joints()[*i as usize];
                        [
                            p.x.to_bits(),
                            p.y.to_bits(),
                            p.z.to_bits(),
                            j[0] | (j[1] << 16),
                            j[2] | (j[3] << 16),
                        ]
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        got.sort();
        want.sort();
        assert!(got == want, "{}: clusters do not rebuild the mesh", m.name);
        eprintln!(
            "{}: {} vertices, {} triangles → {} unique vertices, {} clusters, {} vertices skinned per instance",
            m.name,
            m.mesh.positions().len(),
            m.mesh.indices().len() / 3,
            c.unique_vertices,
            c.cluster_count,
            c.cluster_vertices
        );
    }
}
