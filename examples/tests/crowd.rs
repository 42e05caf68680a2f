//! The crowd example's engine, run small: the summary must describe what really happened.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests unwrap: a failure is the test failing

use sinew_examples::crowd::{CrowdOptions, format_summary, run_crowd};
use sinew_jobs::builtin::RUN_SPEED;
use std::path::PathBuf;

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
    assert_eq!(names.len(), 10, "{names:?}");
    assert!(names.contains(&"4 sample + blend") && names.contains(&"9 skinning"));
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
    assert!(s.state_bytes_per_character > 100 && s.frame_bytes_per_character > 45 * 48);
    let text = format_summary(&s);
    for needle in [
        "frame time",
        "events fired",
        "M bones/s",
        "per character",
        "4 sample + blend",
    ] {
        assert!(text.contains(needle), "missing '{needle}' in:\n{text}");
    }
    let json = s.to_json();
    assert_eq!(json["count"], 40);
    assert_eq!(json["nodes"].as_array().unwrap().len(), 10);
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
    let fox = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/assets/gltf/Fox.glb"
    ));
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
