//! The `viewer` example under Xvfb on the machine's Vulkan adapter (lavapipe in CI): a
//! scripted camera for a fixed number of frames, then a screenshot where every character is
//! where the camera says it is (near ones from the pipeline's palettes, far ones from baked
//! textures: LOD is turned on by the script), the picked character's skeleton is drawn over
//! it, and the text panel is in the top-left corner.
//!
//! Skips (with the reason printed) where `xvfb-run` or a Vulkan adapter is missing; where both
//! are there, the viewer failing fails the test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests unwrap

use glam::Vec3;
use sinew_gpu::context::{GpuContext, GpuError};
use sinew_gpu::render::Camera;
use std::path::PathBuf;
use std::process::Command;

/// The example binary, built (or found up to date) by cargo for this test's profile.
fn viewer_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let profile = match profile_dir.file_name().unwrap().to_str().unwrap() {
        "debug" => "dev",
        other => other,
    };
    let status = Command::new(env!("CARGO"))
        .args(["build", "-q", "-p", "sinew-examples", "--example", "viewer"])
        .args(["--profile", profile])
        .env("CARGO_TARGET_DIR", profile_dir.parent().unwrap())
        .status()
        .unwrap();
    assert!(status.success(), "cargo build --example viewer failed");
    profile_dir
        .join("examples")
        .join(format!("viewer{}", std::env::consts::EXE_SUFFIX))
}

fn has_xvfb_run() -> bool {
    Command::new("xvfb-run").arg("--help").output().is_ok()
}

const COUNT: usize = 25; // a 5 × 5 grid, 2 m apart
const FRAMES: usize = 8;
const EYE: Vec3 = Vec3::new(4.0, 5.0, -8.0);
const TARGET: Vec3 = Vec3::new(4.0, 0.8, 6.0);
const SIZE: (u32, u32) = (800, 450);

#[test]
fn scripted_viewer_screenshot_shows_the_crowd_where_the_camera_puts_it() {
    if !has_xvfb_run() {
        eprintln!("skipped: no xvfb-run (Debian: apt-get install xvfb xauth)");
        return;
    }
    if let Err(GpuError::NoAdapter { hint, .. }) = GpuContext::new() {
        eprintln!("skipped: no GPU adapter ({hint})");
        return;
    }
    let dir = std::env::temp_dir().join(format!("sinew-viewer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (script, png, json) = (dir.join("s.txt"), dir.join("v.png"), dir.join("v.json"));
    std::fs::write(
        &script,
        format!(
            "# eye, target\n0 camera {} {} {} {} {} {}\n2 key lod\n3 key pick\n",
            EYE.x, EYE.y, EYE.z, TARGET.x, TARGET.y, TARGET.z
        ),
    )
    .unwrap();
    let out = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 1024x768x24"])
        .arg(viewer_binary())
        .args([
            "--count",
            &COUNT.to_string(),
            "--frames",
            &FRAMES.to_string(),
        ])
        .args([
            "--lod-distance",
            "11",
            "--width",
            &SIZE.0.to_string(),
            "--height",
            &SIZE.1.to_string(),
        ])
        .arg("--script")
        .arg(&script)
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
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), SIZE);
    assert_eq!(report["frame"], FRAMES - 1);
    let (w, h) = SIZE;
    let px = |x: u32, y: u32| {
        let i = ((y * w + x) * 4) as usize;
        [buf[i], buf[i + 1], buf[i + 2]]
    };
    // The crowd renderer's clear colour, linear (0.02, 0.02, 0.03), sRGB-encoded.
    let background = px(w - 1, h - 1);
    let srgb = |c: f32| (255.0 * (1.055 * c.powf(1.0 / 2.4) - 0.055)).round() as i32;
    for (got, want) in background.iter().zip([srgb(0.02), srgb(0.02), srgb(0.03)]) {
        assert!((i32::from(*got) - want).abs() <= 2, "{background:?}");
    }
    // The panel: top-left, dark, with white text in it.
    let overlay = report["overlay"].as_array().unwrap();
    let (ow, oh) = (
        overlay[0].as_u64().unwrap() as u32,
        overlay[1].as_u64().unwrap() as u32,
    );
    assert!(ow > 100 && oh > 50 && ow <= w && oh < h, "{ow}x{oh}");
    let ink = (0..oh)
        .flat_map(|y| (0..ow).map(move |x| (x, y)))
        .filter(|&(x, y)| px(x, y) == [255, 255, 255])
        .count();
    assert!(ink > 500, "{ink} white text pixels in the panel");
    // The camera as the script wrote it (the viewer's report must agree), and each character
    // within walking distance of its grid spot: at most 4 m/s for FRAMES / 60 s.
    let camera = Camera::look_at(EYE, TARGET);
    let eye: Vec<f32> = report["eye"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap() as f32)
        .collect();
    assert!(Vec3::from_slice(&eye).distance(EYE) < 1e-4, "{eye:?}");
    let positions: Vec<Vec3> = report["positions"]
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
        .collect();
    assert_eq!(positions.len(), COUNT);
    for (i, p) in positions.iter().enumerate() {
        let spot = Vec3::new((i % 5) as f32 * 2.0, 0.0, (i / 5) as f32 * 2.0);
        assert!(
            p.distance(spot) <= 4.0 * FRAMES as f32 / 60.0 + 0.5,
            "character {i} at {p}, grid spot {spot}"
        );
    }
    // Every character's chest (1.3 m up) that is in the image and outside the panel is
    // covered by it.
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
        covered += usize::from(px(x, y) != background);
    }
    println!("covered at the chest: {covered}/{seen}");
    assert!(seen >= 15, "{seen} characters in view");
    assert!(covered * 10 >= seen * 9, "{covered} of {seen}");
    // LOD from frame 2, switching at 11 m from the eye: the front row (9.4 to 10.3 m away)
    // runs the pipeline, the rows from z = 4 m on (over 12.8 m) play baked textures.
    let lod = &report["lod"];
    let (cpu, baked) = (lod["cpu"].as_u64().unwrap(), lod["baked"].as_u64().unwrap());
    assert_eq!(cpu + baked, COUNT as u64);
    assert!(cpu >= 5 && baked >= 15, "{cpu} CPU, {baked} baked");
    // The picked character (#0, picked on frame 3) has its skeleton drawn in yellow near it,
    // and nowhere far from it.
    assert_eq!(report["picked"], 0);
    assert!(report["skeleton_segments"].as_u64().unwrap() >= 10);
    let chest0 = camera.project(positions[0] + Vec3::Y * 1.0, w, h).unwrap();
    let (mut near, mut far) = (0, 0);
    for y in oh..h {
        for x in 0..w {
            let [r, g, b] = px(x, y);
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
    std::fs::remove_dir_all(&dir).ok();
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
