//! The `viewer` example under Xvfb on the machine's Vulkan adapter (lavapipe in CI): a
//! scripted camera for a fixed number of frames, then a screenshot where every character is
//! where the camera says it is, the text panel is in the top-left corner, and (default content)
//! the ground's checker cells are where the camera puts them and the picked character's
//! skeleton is drawn over it, or (LOD turned on by the script) near characters come from the
//! pipeline's palettes and far ones from baked textures.
//!
//! Skips (with the reason printed) where `xvfb-run` or a Vulkan adapter is missing; where both
//! are there, the viewer failing fails the test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests unwrap

mod common;

use glam::Vec3;
use sinew_gpu::context::{GpuContext, GpuError};
use sinew_gpu::render::Camera;
use std::path::PathBuf;
use std::process::Command;

fn viewer_binary() -> PathBuf {
    common::example_binary("viewer")
}

fn has_xvfb_run() -> bool {
    Command::new("xvfb-run").arg("--help").output().is_ok()
}

const COUNT: usize = 25; // a 5 × 5 grid, 2 m apart
const FRAMES: usize = 8;
const EYE: Vec3 = Vec3::new(4.0, 5.0, -8.0);
const TARGET: Vec3 = Vec3::new(4.0, 0.8, 6.0);
const SIZE: (u32, u32) = (800, 450);

/// A scripted run's screenshot (RGB rows) and report.
struct Shot {
    pixels: Vec<u8>,
    report: serde_json::Value,
}

impl Shot {
    fn px(&self, x: u32, y: u32) -> [u8; 3] {
        let i = ((y * SIZE.0 + x) * 4) as usize;
        [self.pixels[i], self.pixels[i + 1], self.pixels[i + 2]]
    }

    /// The text panel's size in pixels (top-left).
    fn overlay(&self) -> (u32, u32) {
        let o = self.report["overlay"].as_array().unwrap();
        (o[0].as_u64().unwrap() as u32, o[1].as_u64().unwrap() as u32)
    }

    fn positions(&self) -> Vec<Vec3> {
        self.report["positions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let v: Vec<f32> = p
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap() as f32)
                    .collect();
                Vec3::from_slice(&v)
            })
            .collect()
    }
}

/// Whether the viewer can run here (prints why not).
fn can_run() -> bool {
    if !has_xvfb_run() {
        eprintln!("skipped: no xvfb-run (Debian: apt-get install xvfb xauth)");
        return false;
    }
    if let Err(GpuError::NoAdapter { hint, .. }) = GpuContext::new() {
        eprintln!("skipped: no GPU adapter ({hint})");
        return false;
    }
    true
}

/// Runs the viewer under Xvfb: COUNT characters, FRAMES frames from the camera EYE → TARGET,
/// then `script` (more lines) and `args`.
fn run_viewer(name: &str, script: &str, args: &[&str]) -> Shot {
    let dir = std::env::temp_dir().join(format!("sinew-viewer-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (script_path, png, json) = (dir.join("s.txt"), dir.join("v.png"), dir.join("v.json"));
    std::fs::write(
        &script_path,
        format!(
            "# eye, target\n0 camera {} {} {} {} {} {}\n{script}",
            EYE.x, EYE.y, EYE.z, TARGET.x, TARGET.y, TARGET.z
        ),
    )
    .unwrap();
    let out = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 1024x768x24"])
        .arg(viewer_binary())
        .args(["--count", &COUNT.to_string()])
        .args(["--frames", &FRAMES.to_string()])
        .args(["--width", &SIZE.0.to_string()])
        .args(["--height", &SIZE.1.to_string()])
        .args(args)
        .arg("--script")
        .arg(&script_path)
        .arg("--screenshot")
        .arg(&png)
        .arg("--report")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the viewer failed under Xvfb:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((info.width, info.height), SIZE);
    assert_eq!(report["frame"], FRAMES - 1);
    std::fs::remove_dir_all(&dir).ok();
    Shot { pixels, report }
}

fn srgb(c: f32) -> i32 {
    let e = if c <= 0.0031308 {
        12.92 * c
    } else {
        1.055 * c.powf(1.0 / 2.4) - 0.055
    };
    (255.0 * e).round() as i32
}

/// The crowd renderer's clear colour, linear (0.02, 0.02, 0.03), sRGB-encoded.
fn is_background(p: [u8; 3]) -> bool {
    p.iter()
        .zip([srgb(0.02), srgb(0.02), srgb(0.03)])
        .all(|(got, want)| (i32::from(*got) - want).abs() <= 2)
}

/// A pixel of the ground: one of its two tones lit by a lambert term in [0.8, 1] (the gentle
/// slopes of the height field), sRGB-encoded.
fn is_ground(p: [u8; 3]) -> bool {
    use sinew_examples::viewer::GROUND_COLORS;
    GROUND_COLORS.iter().any(|tone| {
        (0..=10).any(|k| {
            let light = 0.55 + 0.45 * (0.8 + 0.02 * k as f32);
            p.iter()
                .zip(tone)
                .all(|(got, c)| (i32::from(*got) - srgb(c * light)).abs() <= 6)
        })
    })
}

/// A character's pixel: neither background nor ground (the characters' albedo and the baked
/// tier's tints are far brighter than the ground's tones).
fn is_character(p: [u8; 3]) -> bool {
    !is_background(p) && !is_ground(p)
}

/// The panel: top-left, dark, with white text in it.
fn check_panel(shot: &Shot) -> (u32, u32) {
    let (w, h) = SIZE;
    let (ow, oh) = shot.overlay();
    assert!(ow > 100 && oh > 50 && ow <= w && oh < h, "{ow}x{oh}");
    let ink = (0..oh)
        .flat_map(|y| (0..ow).map(move |x| (x, y)))
        .filter(|&(x, y)| shot.px(x, y) == [255, 255, 255])
        .count();
    assert!(ink > 500, "{ink} white text pixels in the panel");
    (ow, oh)
}

/// The camera as the script wrote it (the viewer's report must agree); each character within
/// walking distance of its grid spot (at most 4 m/s for FRAMES / 60 s); and every character's
/// chest (1.3 m up) that is in the image and outside the panel covered by a character's colour.
fn check_crowd(shot: &Shot, (ow, oh): (u32, u32)) -> Camera {
    let (w, h) = SIZE;
    let camera = Camera::look_at(EYE, TARGET);
    let eye: Vec<f32> = shot.report["eye"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap() as f32)
        .collect();
    assert!(Vec3::from_slice(&eye).distance(EYE) < 1e-4, "{eye:?}");
    let positions = shot.positions();
    assert_eq!(positions.len(), COUNT);
    for (i, p) in positions.iter().enumerate() {
        let spot = Vec3::new((i % 5) as f32 * 2.0, 0.0, (i / 5) as f32 * 2.0);
        assert!(
            p.distance(spot) <= 4.0 * FRAMES as f32 / 60.0 + 0.5,
            "character {i} at {p}, grid spot {spot}"
        );
    }
    let (mut seen, mut covered) = (0, 0);
    for p in &positions {
        let Some(q) = camera.project(*p + Vec3::Y * 1.3, w, h) else {
            continue;
        };
        let (x, y) = (q.x as u32, q.y as u32);
        if q.x < 1.0 || q.y < 1.0 || x >= w - 1 || y >= h - 1 || (x < ow && y < oh) {
            continue;
        }
        seen += 1;
        covered += usize::from(is_character(shot.px(x, y)));
    }
    println!("covered at the chest: {covered}/{seen}");
    assert!(seen >= 10, "{seen} characters in view");
    assert!(covered * 10 >= seen * 9, "{covered} of {seen}");
    camera
}

/// The default content: the controller crowd on the ground, feet placed, #0 picked. The
/// ground is where the camera says: at the centre of each 1 m checker cell near the eye (on
/// the height field, away from the characters and the panel) the pixel has the cell's tone;
/// the sky above it is background. The report has the controller's counts and IK state.
#[test]
fn scripted_viewer_shows_the_controller_crowd_on_its_ground() {
    if !can_run() {
        return;
    }
    // The graphics pipeline draws the ground into the crowd's depth; the compute rasteriser
    // has the composite lay the crowd over the ground's own image.
    for raster in ["graphics", "compute"] {
        println!("{raster}:");
        let shot = run_viewer(raster, "3 pick 0\n4 key wave\n", &["--raster", raster]);
        check_ground_run(&shot);
    }
}

fn check_ground_run(shot: &Shot) {
    use sinew_examples::ground::Waves;
    use sinew_examples::viewer::GROUND_COLORS;
    use sinew_jobs::ik::GroundQuery;
    let (w, h) = SIZE;
    let panel = check_panel(shot);
    let camera = check_crowd(shot, panel);
    assert_eq!(shot.report["ground"], true);
    // The top-right corner looks above the ground's far edge.
    assert!(is_background(shot.px(w - 1, 0)), "{:?}", shot.px(w - 1, 0));
    // Screen boxes of the characters (0.9 m wide, 2 m tall, padded): ground samples avoid them.
    let boxes: Vec<[f32; 4]> = shot
        .positions()
        .iter()
        .filter_map(|p| {
            let corners = [-0.45f32, 0.45].into_iter().flat_map(|dx| {
                [-0.45f32, 0.45]
                    .into_iter()
                    .flat_map(move |dz| [0.0f32, 2.0].map(move |y| *p + Vec3::new(dx, y, dz)))
            });
            let q: Vec<_> = corners.filter_map(|c| camera.project(c, w, h)).collect();
            (q.len() == 8).then(|| {
                let (x0, x1) = q
                    .iter()
                    .fold((f32::MAX, f32::MIN), |a, v| (a.0.min(v.x), a.1.max(v.x)));
                let (y0, y1) = q
                    .iter()
                    .fold((f32::MAX, f32::MIN), |a, v| (a.0.min(v.y), a.1.max(v.y)));
                [x0 - 4.0, y0 - 4.0, x1 + 4.0, y1 + 4.0]
            })
        })
        .collect();
    // The two tones after lighting: the even cells' darkest (ambient 0.55 on a gentle slope,
    // lambert ≥ 0.8) is brighter than the odd cells' brightest; split the green between them.
    let split = (srgb(GROUND_COLORS[0][1] * (0.55 + 0.45 * 0.8)) + srgb(GROUND_COLORS[1][1])) / 2;
    let (mut sampled, mut right) = (0, 0);
    for cz in -4i32..20 {
        for cx in -8i32..16 {
            let (x, z) = (cx as f32 + 0.5, cz as f32 + 0.5);
            let p = Vec3::new(x, Waves.ground(x, z).height, z);
            if p.distance(EYE) > 16.0 {
                continue;
            }
            let Some(q) = camera.project(p, w, h) else {
                continue;
            };
            let inside = |b: &[f32; 4]| q.x >= b[0] && q.x <= b[2] && q.y >= b[1] && q.y <= b[3];
            if q.x < 2.0
                || q.y < 2.0
                || q.x > w as f32 - 2.0
                || q.y > h as f32 - 2.0
                || (q.x < panel.0 as f32 + 2.0 && q.y < panel.1 as f32 + 2.0)
                || boxes.iter().any(inside)
            {
                continue;
            }
            let px = shot.px(q.x as u32, q.y as u32);
            let even = (cx + cz).rem_euclid(2) == 0;
            sampled += 1;
            right += usize::from((i32::from(px[1]) > split) == even && is_ground(px));
        }
    }
    println!("ground cells with their tone: {right}/{sampled}");
    assert!(sampled >= 40, "{sampled} ground cells sampled");
    assert_eq!(right, sampled);
    // The controller's counts cover the crowd on each layer, and #0 waves (G on frame 4).
    let state = &shot.report["state"];
    let layers = state["controller"]["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 3);
    for l in layers {
        let n: u64 = l["states"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["characters"].as_u64().unwrap())
            .sum();
        assert_eq!(n, COUNT as u64, "{l}");
    }
    let picked = state["picked_controller"].to_string();
    assert!(picked.contains("upper body none -> wave"), "{picked}");
    assert_eq!(state["ik"]["on"], true);
    assert_eq!(state["ik"]["characters"], COUNT);
    let feet = &state["ik"]["picked"];
    assert_eq!(feet["reached"].as_array().unwrap().len(), 2, "{feet}");
    assert!(
        feet["pelvis_offset_m"].as_f64().unwrap().abs() < 0.2,
        "{feet}"
    );
    // The picked character (#0, picked on frame 3) has its skeleton drawn in yellow near it,
    // and nowhere far from it.
    assert_eq!(shot.report["picked"], 0);
    assert!(shot.report["skeleton_segments"].as_u64().unwrap() >= 10);
    let positions = shot.positions();
    let chest0 = camera.project(positions[0] + Vec3::Y * 1.0, w, h).unwrap();
    let (mut near, mut far) = (0, 0);
    for y in panel.1..h {
        for x in 0..w {
            let [r, g, b] = shot.px(x, y);
            if r > 200 && g > 150 && b < 90 {
                let d = (x as f32 - chest0.x).hypot(y as f32 - chest0.y);
                if d < 120.0 {
                    near += 1;
                } else {
                    far += 1;
                }
            }
        }
    }
    println!("skeleton pixels: {near} near character 0, {far} elsewhere");
    assert!(near >= 30 && far == 0, "{near} near, {far} far");
}

/// LOD turned on by the script: near characters from the pipeline's palettes, far ones from
/// baked textures, all where the camera says; the controller and the stages are off for it.
#[test]
fn scripted_viewer_lod_shows_both_tiers_where_the_camera_puts_them() {
    if !can_run() {
        return;
    }
    let shot = run_viewer("lod", "2 key lod\n", &["--lod-distance", "11"]);
    let panel = check_panel(&shot);
    check_crowd(&shot, panel);
    // LOD from frame 2, switching at 11 m from the eye: the front row (9.4 to 10.3 m away)
    // runs the pipeline, the rows from z = 4 m on (over 12.8 m) play baked textures.
    let lod = &shot.report["lod"];
    let (cpu, baked) = (lod["cpu"].as_u64().unwrap(), lod["baked"].as_u64().unwrap());
    assert_eq!(cpu + baked, COUNT as u64);
    assert!(cpu >= 5 && baked >= 15, "{cpu} CPU, {baked} baked");
    let state = &shot.report["state"];
    assert!(state["controller"].is_null(), "{state}");
    assert_eq!(state["ik"]["why"], "lod");
}

/// A user's glTF file: plain clips (no controller), no stages, no ground, and the report says
/// so; its characters are still drawn where the camera puts them (Fox is in centimetres: its
/// grid is wider, so only the count and coverage of the first character are checked).
#[test]
fn scripted_viewer_plays_a_gltf_model_on_plain_clips() {
    if !can_run() {
        return;
    }
    let fox = sinew_fixtures::asset_path("gltf/Fox.glb").unwrap();
    let shot = run_viewer("gltf", "", &["--gltf", fox.to_str().unwrap()]);
    check_panel(&shot);
    assert_eq!(shot.report["ground"], false);
    let state = &shot.report["state"];
    assert!(state["controller"].is_null(), "{state}");
    assert_eq!(state["ik"]["why"], "unavailable");
    assert_eq!(shot.positions().len(), COUNT);
    let covered = shot
        .pixels
        .chunks(4)
        .filter(|p| is_character([p[0], p[1], p[2]]))
        .count();
    assert!(covered > 500, "{covered} pixels of Fox");
}

/// Bad input, no display among it: one line on stderr, exit status 1, no panic. Runs without a
/// display (the display variables removed), so the last case reaches winit's event loop.
#[test]
fn bad_input_is_one_line_and_a_clean_exit() {
    let dir = std::env::temp_dir().join(format!("sinew-viewer-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("bad.txt");
    std::fs::write(&script, "0 camera 0 0 0 1 1 1\n7 camera 1 2 3\n").unwrap();
    let script = script.to_str().unwrap().to_string();
    let bin = viewer_binary();
    for (args, needle) in [
        (vec!["--count", "0"], "--count must be at least 1"),
        (vec!["--gltf", "/nonexistent/x.glb"], "/nonexistent/x.glb"),
        (
            vec!["--script", &script],
            "line 2: camera takes six numbers",
        ),
        (
            vec!["--lod-distance=-1"],
            "--lod-distance must be a positive",
        ),
        (vec!["--count", "4"], "no display"),
    ] {
        let out = Command::new(&bin)
            .args(&args)
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("WAYLAND_SOCKET")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("viewer: ")).collect();
        assert_eq!(lines.len(), 1, "{args:?}: {err}");
        assert!(lines[0].contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
