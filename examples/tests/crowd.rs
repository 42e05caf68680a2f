//! The crowd example's engine, run small: the summary must describe what really happened.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests unwrap: a failure is the test failing

use sinew_examples::crowd::{CrowdOptions, format_summary, run_crowd};
use sinew_fixtures::builtin::RUN_SPEED;

fn opts(count: usize, frames: usize) -> CrowdOptions {
    CrowdOptions {
        count,
        frames,
        threads: 2,
        progress: false,
        ..CrowdOptions::default()
    }
}

#[test]
fn summary_reports_every_job_events_and_root_motion() {
    let s = run_crowd(&opts(40, 120)).unwrap();
    assert_eq!(s.count, 40);
    assert_eq!(s.frames, 120);
    assert_eq!(s.threads, 2);
    assert_eq!(s.bones_per_character, 45);
    let names: Vec<&str> = s.nodes.iter().map(|n| n.name.as_str()).collect();
    // Clock, controller, 1, 2, 3, 5, the controller's events, 8, then 4·6·7·9 fused and the
    // exposed-bone step of 7.
    assert_eq!(names.len(), 10, "{names:?}");
    assert!(names.contains(&"4·6·7·9 pose chain") && names.contains(&"3 per-bone info"));
    assert!(names.contains(&"controller") && names.contains(&"controller events"));
    // Every fourth character (10 of 40) is triggered once per 240 frames at its own phase, so
    // over 120 frames each starts at most one wave and at most one way out of it (a wave
    // leaves at 0.9 of its 2 s): between 1 and 20 transitions, with phases spread evenly.
    assert!(
        (1..=20).contains(&s.transitions),
        "{} transitions",
        s.transitions
    );
    assert!(s.controller_median > std::time::Duration::ZERO);
    // Two seconds of walking or running: every character plants each foot at least once.
    assert!(s.events_fired >= 2 * 40, "{} footsteps", s.events_fired);
    // Speeds are drawn in [1, 4] m/s and root motion moves each character at its speed, so the
    // mean distance over 2 s lies between 2 m and 8 m.
    assert!(
        s.mean_distance > 2.0 && s.mean_distance < 2.0 * RUN_SPEED.max(4.0),
        "{}",
        s.mean_distance
    );
    assert!(s.palette_checksum.is_finite());
    assert!(
        s.frame_median > std::time::Duration::ZERO
            && s.frame_min <= s.frame_median
            && s.frame_median <= s.frame_max
    );
    // Frame buffers: the palette (48 B an entry) and a few per-entity counts; no local or
    // model poses, and no bone table (no node reads it).
    assert!(s.state_bytes_per_character > 100);
    let (b, palette) = (s.frame_bytes_per_character, s.palette_per_character * 48);
    assert!((palette..palette + 64).contains(&b), "{b} B");
    let text = format_summary(&s);
    for needle in [
        "frame time",
        "events fired",
        "M bones/s",
        "per character",
        "4·6·7·9 pose chain",
        "transitions/s",
    ] {
        assert!(text.contains(needle), "missing '{needle}' in:\n{text}");
    }
    let json = s.to_json();
    assert_eq!(json["count"], 40);
    assert_eq!(json["nodes"].as_array().unwrap().len(), 10);
    assert_eq!(json["transitions"], s.transitions);
}

#[test]
fn churn_respawns_the_asked_share_every_second() {
    let s = run_crowd(&CrowdOptions {
        churn: 0.1,
        ..opts(50, 130)
    })
    .unwrap();
    // Frames 60 and 120 churn 5 characters each.
    assert_eq!(s.churned, 10);
    assert_eq!(s.count, 50);
}

#[test]
fn a_gltf_model_can_be_crowded() {
    let fox = sinew_fixtures::asset_path("gltf/Fox.glb").unwrap();
    let s = run_crowd(&CrowdOptions {
        gltf: Some(fox.clone()),
        clip: Some("Run".into()),
        ..opts(10, 5)
    })
    .unwrap();
    assert_eq!(s.palette_per_character, 24);
    let err = run_crowd(&CrowdOptions {
        gltf: Some(fox),
        clip: Some("Dance".into()),
        ..opts(10, 5)
    })
    .unwrap_err();
    assert!(
        err.contains("no clip 'Dance'") && err.contains("Walk"),
        "{err}"
    );
}

#[test]
fn bad_options_and_files_are_one_line_errors() {
    for (o, needle) in [
        (opts(0, 10), "--count"),
        (opts(10, 0), "--frames"),
        (
            CrowdOptions {
                churn: 1.5,
                ..opts(10, 10)
            },
            "--churn",
        ),
        (
            CrowdOptions {
                gltf: Some("/nonexistent/x.glb".into()),
                ..opts(10, 10)
            },
            "/nonexistent/x.glb",
        ),
    ] {
        let e = run_crowd(&o).unwrap_err();
        assert!(e.contains(needle) && !e.contains('\n'), "{e}");
    }
}

/// `--lod`: the camera of the LOD crowd, written out from its documentation (eye at height
/// 6 m over the grid's middle column, z = −6 m + 3 m/s · g), not taken from the library.
fn lod_eye(grid: usize, frame: usize) -> glam::Vec3 {
    let g = (frame + 1) as f32 / 60.0;
    glam::Vec3::new((grid - 1) as f32 * 2.0 * 0.5, 6.0, -6.0 + 3.0 * g)
}

#[test]
fn lod_tiers_follow_the_distance_with_hysteresis_and_switches_keep_the_pose() {
    use sinew_jobs::lod::LodPath;
    let (distance, band) = (10.0f32, 2.0f32);
    let (near, far) = (distance - band / 2.0, distance + band / 2.0);
    let frames = 240;
    let s = run_crowd(&CrowdOptions {
        lod: Some(distance),
        lod_hysteresis: Some(band),
        lod_check: true,
        ..opts(400, frames)
    })
    .unwrap();
    let l = s.lod.as_ref().unwrap();
    let grid = 20;

    // Warm-up frame: every character stands where it was spawned (grid of 2 m from the
    // origin); the tier is CPU exactly when nearer than the distance.
    let eye = lod_eye(grid, 0);
    let expected_first = (0..400)
        .filter(|i| {
            let p = glam::Vec3::new((i % grid) as f32 * 2.0, 0.0, (i / grid) as f32 * 2.0);
            p.distance(eye) < distance
        })
        .count();
    assert!(expected_first > 5, "{expected_first}");
    assert_eq!(l.cpu_first, expected_first);

    // Last frame: inside the band either tier, outside it the tier the distance says.
    let eye = lod_eye(grid, frames);
    assert!((l.last_camera - eye).length() < 1e-4, "{:?}", l.last_camera);
    assert_eq!(l.last_positions.len(), 400);
    let mut cpu = 0;
    for (p, path) in l.last_positions.iter().zip(&l.last_paths) {
        let d = p.distance(eye);
        if d < near {
            assert_eq!(*path, LodPath::Cpu, "at {d} m");
        } else if d > far {
            assert_eq!(*path, LodPath::Baked, "at {d} m");
        }
        cpu += usize::from(*path == LodPath::Cpu);
    }
    assert_eq!((l.cpu_last, l.baked_last), (cpu, 400 - cpu));
    let json = s.to_json();
    assert_eq!(json["lod"]["cpu_tier"], cpu);
    assert_eq!(json["lod"]["baked_tier"], 400 - cpu);

    // Switches: both directions happen (the camera overtakes walkers, runners outrun it).
    let to_cpu = l.events.iter().filter(|e| e.to == LodPath::Cpu).count();
    let to_baked = l.events.iter().filter(|e| e.to == LodPath::Baked).count();
    assert!(to_cpu > 0 && to_baked > 0, "{to_cpu} / {to_baked}");
    assert_eq!(
        l.switches,
        l.events.iter().filter(|e| e.frame > 0).count() as u64
    );
    for e in &l.events {
        // Hysteresis: a switch only outside the band, so between two switches of one
        // character its distance changed by at least the band's width (no flip-flop).
        let d = e.position.distance(lod_eye(grid, e.frame));
        match e.to {
            LodPath::Cpu => assert!(d < near, "{e:?} at {d} m"),
            LodPath::Baked => assert!(d > far, "{e:?} at {d} m"),
        }
        // Same skinned pose from both paths on the switch frame.
        let err = e.pose_error.unwrap();
        assert!(err <= 1e-5, "{e:?}");
    }
    for i in 0..400 {
        let mine: Vec<LodPath> = l
            .events
            .iter()
            .filter(|e| e.index == i)
            .map(|e| e.to)
            .collect();
        assert!(mine.windows(2).all(|w| w[0] != w[1]), "{i}: {mine:?}");
    }
    println!(
        "{} switches ({to_cpu} to CPU, {to_baked} to baked), max pose difference {:e}",
        l.events.len(),
        l.max_pose_error.unwrap()
    );
    assert!(l.max_pose_error.unwrap() <= 1e-5);
    let text = format_summary(&s);
    for needle in [
        "tiers",
        "switches",
        "baked bookkeeping",
        "pipeline (CPU tier)",
    ] {
        assert!(text.contains(needle), "missing '{needle}' in:\n{text}");
    }
}

/// Root motion stays consistent through switches: the same crowd (same clips and phases) run
/// all on the CPU tier, all baked, and mixed with switches ends with every character at the
/// same place.
#[test]
fn lod_root_motion_is_the_same_on_both_tiers_and_through_switches() {
    let run = |distance: f32| {
        let s = run_crowd(&CrowdOptions {
            lod: Some(distance),
            ..opts(400, 240)
        })
        .unwrap();
        let l = s.lod.unwrap();
        (l.last_positions, l.cpu_last, l.switches)
    };
    let (all_cpu, cpu, switches) = run(1.0e4);
    assert_eq!((cpu, switches), (400, 0));
    let (all_baked, cpu, switches) = run(0.01);
    assert_eq!((cpu, switches), (0, 0));
    let (mixed, _, switches) = run(10.0);
    assert!(switches > 10, "{switches}");
    let start = |i: usize| glam::Vec3::new((i % 20) as f32 * 2.0, 0.0, (i / 20) as f32 * 2.0);
    let walked: f32 = (0..400).map(|i| all_cpu[i].distance(start(i))).sum::<f32>() / 400.0;
    assert!(walked > 3.0, "{walked}"); // 4 s of walking and running
    // The CPU clock accumulates `time += dt` in f32 while the baked one is `phase + g`: they
    // drift apart by float rounding (~1e-5 s over 240 frames, ~1e-4 m at 3.5 m/s).
    let mut worst = 0.0f32;
    for i in 0..400 {
        for (what, p) in [("baked", all_baked[i]), ("mixed", mixed[i])] {
            let d = p.distance(all_cpu[i]);
            worst = worst.max(d);
            assert!(
                d < 1e-3,
                "character {i}, {what}: {p} vs {} ({d} m)",
                all_cpu[i]
            );
        }
    }
    println!("{switches} switches; largest position difference to the all-CPU crowd {worst:e} m");
}

#[test]
fn without_lod_nothing_changes_and_bad_lod_options_are_one_line_errors() {
    let s = run_crowd(&opts(20, 10)).unwrap();
    assert!(s.lod.is_none());
    assert!(s.to_json()["lod"].is_null());
    assert!(!format_summary(&s).contains("tiers"));
    for (o, needle) in [
        (
            CrowdOptions {
                lod: Some(-1.0),
                ..opts(10, 10)
            },
            "--lod",
        ),
        (
            CrowdOptions {
                lod: Some(10.0),
                churn: 0.1,
                ..opts(10, 10)
            },
            "--churn",
        ),
        (
            CrowdOptions {
                lod: Some(10.0),
                lod_hysteresis: Some(30.0),
                ..opts(10, 10)
            },
            "hysteresis",
        ),
    ] {
        let e = run_crowd(&o).unwrap_err();
        assert!(e.contains(needle) && !e.contains('\n'), "{e}");
    }
}

/// `--png` with `--lod`: both tiers in one image. Every character is projected with the
/// camera written out from its documentation; near (CPU) characters, drawn first by the
/// skinning renderer, and far (baked) ones, drawn over them with depth testing by the baked
/// renderer, must both cover the pixel at their chest. Skips (with a message) where no GPU
/// adapter exists.
#[test]
fn lod_png_draws_both_tiers_in_one_image() {
    use sinew_gpu::render::Camera;
    use sinew_jobs::lod::LodPath;
    if sinew_gpu::context::GpuContext::new().is_err() {
        eprintln!("skipped: no GPU adapter (install mesa-vulkan-drivers for lavapipe)");
        return;
    }
    let path = std::env::temp_dir().join(format!("sinew-lod-{}.png", std::process::id()));
    let frames = 30;
    let s = run_crowd(&CrowdOptions {
        lod: Some(12.0),
        png: Some(path.clone()),
        ..opts(100, frames)
    })
    .unwrap();
    let l = s.lod.as_ref().unwrap();
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let (w, h) = (info.width, info.height);
    let px = |x: u32, y: u32| {
        let i = ((y * w + x) * 4) as usize;
        [buf[i], buf[i + 1], buf[i + 2]]
    };
    let background = px(0, 0);
    // The render is one frame after the last measured one.
    let eye = lod_eye(10, frames + 1);
    let camera = Camera::look_at(eye, eye + glam::Vec3::new(0.0, -6.0, 25.0));
    let (mut covered, mut seen) = ([0usize; 2], [0usize; 2]);
    for (p, path) in l.last_positions.iter().zip(&l.last_paths) {
        let Some(q) = camera.project(*p + glam::Vec3::Y * 1.3, w, h) else {
            continue;
        };
        if q.x < 1.0 || q.y < 1.0 || q.x >= (w - 1) as f32 || q.y >= (h - 1) as f32 {
            continue;
        }
        let tier = usize::from(*path == LodPath::Baked);
        seen[tier] += 1;
        covered[tier] += usize::from(px(q.x as u32, q.y as u32) != background);
    }
    println!(
        "covered at the chest: CPU {}/{}, baked {}/{}",
        covered[0], seen[0], covered[1], seen[1]
    );
    assert!(seen[0] >= 3 && seen[1] >= 10, "{seen:?}");
    assert!(covered[0] * 10 >= seen[0] * 9, "{covered:?} of {seen:?}");
    assert!(covered[1] * 10 >= seen[1] * 9, "{covered:?} of {seen:?}");
    std::fs::remove_file(&path).ok();
}

/// The GPU path: every frame's palettes are written into the mapped ring and drawn. The last
/// frame's palettes (read back from the mapped buffer) are bit for bit those of the CPU path,
/// the summary names the adapter and splits the frame, and the JSON carries the same fields.
/// Skips (with a message) where no GPU adapter exists.
#[test]
fn gpu_frames_write_the_cpu_paths_palettes_and_split_the_frame() {
    use sinew_examples::crowd_gpu::GpuUse;
    use sinew_gpu::crowd_frames::Rasteriser;
    let Ok(ctx) = sinew_gpu::context::GpuContext::new() else {
        eprintln!("skipped: no GPU adapter (install mesa-vulkan-drivers for lavapipe)");
        return;
    };
    let cpu = run_crowd(&opts(30, 4)).unwrap();
    assert!(cpu.gpu.is_none());
    for raster in [Rasteriser::Graphics, Rasteriser::Compute] {
        let gpu = run_crowd(&CrowdOptions {
            gpu: GpuUse::Required,
            raster: Some(raster),
            ..opts(30, 4)
        })
        .unwrap();
        assert_eq!(
            gpu.palette_checksum.to_bits(),
            cpu.palette_checksum.to_bits()
        );
        assert_eq!(gpu.events_fired, cpu.events_fired);
        let g = gpu.gpu.as_ref().unwrap();
        assert_eq!(g.adapter, ctx.adapter_info.name);
        assert_eq!(g.rasteriser, raster);
        assert!(g.pipeline_median > std::time::Duration::ZERO);
        // One GPU time per measured frame where the device has timestamp queries.
        let timed = ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY);
        assert_eq!(g.gpu_frames, if timed { 4 } else { 0 });
        assert_eq!(g.gpu_median.is_some(), timed);
        let text = format_summary(&gpu);
        assert!(
            text.contains("frame split") && text.contains(&g.adapter),
            "{text}"
        );
        let json = gpu.to_json();
        assert_eq!(json["gpu"]["adapter"], g.adapter.as_str());
        assert_eq!(json["gpu"]["rasteriser"], raster.name());
        assert!(json["gpu"]["ring_wait_median_ms"].is_number());
        assert!(json["cpu_only_reason"].is_null());
    }
    // Auto on a CPU rasteriser (lavapipe) stays on the CPU and says why.
    if ctx.adapter_info.device_type == wgpu::DeviceType::Cpu {
        let auto = run_crowd(&CrowdOptions {
            gpu: GpuUse::Auto,
            ..opts(10, 2)
        })
        .unwrap();
        assert!(auto.gpu.is_none());
        let reason = auto.cpu_only_reason.unwrap();
        assert!(reason.contains("CPU rasteriser"), "{reason}");
    }
}

/// `--lod` on the GPU path: the near tier's palettes go through the ring and the baked tier is
/// drawn after it every frame; tiers, switches, the switch-frame pose check and the last
/// palettes are those of the CPU path. Skips (with a message) where no GPU adapter exists.
#[test]
fn lod_on_the_gpu_path_switches_as_on_the_cpu() {
    use sinew_examples::crowd_gpu::GpuUse;
    if sinew_gpu::context::GpuContext::new().is_err() {
        eprintln!("skipped: no GPU adapter (install mesa-vulkan-drivers for lavapipe)");
        return;
    }
    // 0.1 s frames: the camera flies 3 m in the run, so characters switch both ways.
    let lod = |gpu| CrowdOptions {
        lod: Some(9.0),
        lod_check: true,
        dt: 0.1,
        gpu,
        ..opts(36, 10)
    };
    let cpu = run_crowd(&lod(GpuUse::Off)).unwrap();
    let gpu = run_crowd(&lod(GpuUse::Required)).unwrap();
    let (c, g) = (cpu.lod.as_ref().unwrap(), gpu.lod.as_ref().unwrap());
    assert!(
        c.switches > 0 && c.cpu_last > 0 && c.baked_last > 0,
        "{c:?}"
    );
    assert_eq!(
        (g.cpu_last, g.baked_last, g.switches),
        (c.cpu_last, c.baked_last, c.switches)
    );
    assert_eq!(g.max_pose_error, c.max_pose_error);
    assert!(g.max_pose_error.unwrap() < 1e-5);
    assert_eq!(
        gpu.palette_checksum.to_bits(),
        cpu.palette_checksum.to_bits()
    );
    let s = gpu.gpu.as_ref().unwrap();
    assert_eq!(s.rasteriser, sinew_gpu::crowd_frames::Rasteriser::Graphics);
    assert!(s.lod);
}

/// The controller-driven crowd gives the same palettes, bit for bit, on 1 and 4 threads, with
/// waves triggered part way.
#[test]
fn controller_crowd_palettes_are_bit_identical_across_thread_counts() {
    use sinew_examples::crowd::{controller_state_for, crowd_controller};
    use sinew_jobs::animator::Animator;
    use sinew_jobs::asset::AssetRegistry;
    use sinew_jobs::component::{FiredEvents, skinned};
    use sinew_jobs::controller::ControllerState;
    use sinew_runtime::store::Store;
    let c = sinew_fixtures::builtin::bake_character(&AssetRegistry::new()).unwrap();
    let ctl = crowd_controller(&c).unwrap();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut store = Store::new();
            let es: Vec<_> = (0..300u64)
                .map(|i| {
                    let e = store
                        .spawn(skinned(c.rig.clone(), c.mesh.clone(), vec![]))
                        .unwrap();
                    store
                        .insert(e, controller_state_for(&ctl, &c.rig, i).unwrap())
                        .unwrap();
                    store.insert(e, FiredEvents::default()).unwrap();
                    e
                })
                .collect();
            let mut animator = Animator::new(&mut store).unwrap();
            let mut out = Vec::new();
            for frame in 0..90 {
                if frame == 10 {
                    for &e in es.iter().step_by(3) {
                        store
                            .get_mut::<ControllerState>(e)
                            .unwrap()
                            .set_trigger("wave")
                            .unwrap();
                    }
                }
                animator.run_frame(&mut store, 1.0 / 60.0).unwrap();
                out.extend(
                    animator
                        .palettes(&store)
                        .iter()
                        .flatten()
                        .map(|x| x.to_bits()),
                );
            }
            out
        })
    };
    let one = run(1);
    assert!(!one.is_empty());
    assert!(one == run(4), "palettes differ between 1 and 4 threads");
}
