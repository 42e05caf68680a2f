//! The `rbf` example as a user runs it, on `fixtures/assets/rbf`: the OBJ it writes keeps the
//! input's vertex order and faces, equals the library's result, and agrees with scipy's
//! reference (`jobs/tests/data/rbf_reference`); bad inputs give one line on stderr and a
//! non-zero exit status.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests unwrap: a failure is the test failing

mod common;

use glam::Vec3;
use sinew_jobs::deform::{BakeOptions, Kernel, RbfDeformer, bake};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

const EPSILON: &str = "3.578478427567448";

fn assets() -> PathBuf {
    sinew_fixtures::asset_path("rbf").unwrap()
}

fn rbf_binary() -> PathBuf {
    common::example_binary("rbf")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sinew-rbf-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn run(args: &[&str]) -> Output {
    Command::new(rbf_binary()).args(args).output().unwrap()
}

fn obj_vertices(text: &str) -> Vec<Vec3> {
    text.lines()
        .filter_map(|l| l.strip_prefix("v "))
        .map(|l| {
            let c: Vec<f32> = l.split_whitespace().map(|s| s.parse().unwrap()).collect();
            Vec3::new(c[0], c[1], c[2])
        })
        .collect()
}

fn non_vertex_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.starts_with("v ") && !l.starts_with('#'))
        .collect()
}

fn sphere(name: &str) -> String {
    assets().join(name).display().to_string()
}

fn deform_sphere(mode: &str, kernel: &str, pose: &str) -> (Vec<Vec3>, String) {
    let out = scratch(&format!("{mode}-{kernel}-{pose}.obj"));
    let o = run(&[
        "--low-rest",
        &sphere("sphere_low_rest.obj"),
        "--low-posed",
        &sphere(&format!("sphere_low_{pose}.obj")),
        "--high",
        &sphere("sphere_high.obj"),
        "--kernel",
        kernel,
        "--epsilon",
        EPSILON,
        "--mode",
        mode,
        "--out",
        &out.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    (obj_vertices(&text), text)
}

fn file_vertices(name: &str) -> Vec<Vec3> {
    obj_vertices(&std::fs::read_to_string(assets().join(name)).unwrap())
}

#[test]
fn writes_the_library_result_in_input_order_matching_scipy() {
    let high_text = std::fs::read_to_string(assets().join("sphere_high.obj")).unwrap();
    let high = obj_vertices(&high_text);
    let low = file_vertices("sphere_low_rest.obj");
    // scipy's sphere results, the first mesh of the reference manifest.
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../jobs/tests/data/rbf_reference");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("manifest.json")).unwrap())
            .unwrap();
    let le = |b: &[u8]| -> Vec<u32> {
        b.chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let sample = le(&std::fs::read(data.join("sphere_sample.u32")).unwrap());
    let expected: Vec<f32> = le(&std::fs::read(data.join("sphere_expected.f32")).unwrap())
        .into_iter()
        .map(f32::from_bits)
        .collect();
    for (mode, kernel, pose) in [
        ("interpolate", "thin_plate_spline", "twist"),
        ("normalized", "gaussian", "bulge"),
    ] {
        let (got, text) = deform_sphere(mode, kernel, pose);
        // Same vertex count, faces and other lines unchanged: the input order is kept.
        assert_eq!(got.len(), high.len());
        assert_eq!(non_vertex_lines(&text), non_vertex_lines(&high_text));
        // The library on the same inputs: the OBJ prints f32 with Rust's shortest
        // round-trip formatting, so the values are equal exactly.
        let k: Kernel = kernel.parse().unwrap();
        let eps: f64 = EPSILON.parse().unwrap();
        let opts = if mode == "normalized" {
            BakeOptions::normalized(eps).with_kernel(k)
        } else {
            BakeOptions::interpolate(k, eps)
        };
        let mut d = RbfDeformer::new(Arc::new(bake(&low, &high, &opts).unwrap()));
        let mut lib = vec![Vec3::ZERO; high.len()];
        d.deform(&file_vertices(&format!("sphere_low_{pose}.obj")), &mut lib)
            .unwrap();
        assert_eq!(got, lib, "{mode} {kernel} {pose}");
        // scipy, at the sampled vertices (unit sphere: diagonal 2·sqrt(3)).
        let case = manifest["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| {
                c["mesh"] == "sphere"
                    && c["pose"] == pose
                    && c["kernel"] == kernel
                    && c["mode"] == mode
            })
            .unwrap();
        let block = case["block"].as_u64().unwrap() as usize * sample.len();
        let worst = sample
            .iter()
            .enumerate()
            .map(|(j, &v)| {
                let e = &expected[(block + j) * 3..(block + j) * 3 + 3];
                got[v as usize].distance(Vec3::new(e[0], e[1], e[2]))
            })
            .fold(0.0f32, f32::max);
        assert!(
            worst <= 1e-6 * 2.0 * 3f32.sqrt(),
            "{mode} {kernel} {pose}: {worst}"
        );
    }
}

#[test]
fn bad_inputs_are_one_line_errors_with_a_failure_status() {
    let write = |name: &str, text: &str| {
        let p = scratch(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let tri = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\n";
    let good = write("good.obj", tri);
    let three = write("three.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
    let nan = write("nan.obj", "v 0 0 0\nv 1 0 0\nv 0 nan 0\nv 0 0 1\nf 1 2 3\n");
    let dup = write(
        "dup.obj",
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nv 1 0 0\nf 1 2 3\n",
    );
    let dup_posed = write(
        "dup_posed.obj",
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nv 1 0 0.5\nf 1 2 3\n",
    );
    let empty = write("empty.obj", "# nothing\n");
    let out = scratch("out.obj").display().to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--low-rest", &good, "--low-posed", &three, "--high", &good],
            "3",
        ),
        (
            vec!["--low-rest", &good, "--low-posed", &good, "--high", &nan],
            "nan",
        ),
        (
            vec![
                "--low-rest",
                &dup,
                "--low-posed",
                &dup_posed,
                "--high",
                &good,
            ],
            "control",
        ),
        (
            vec!["--low-rest", &empty, "--low-posed", &empty, "--high", &good],
            "no vertices",
        ),
        (
            vec![
                "--low-rest",
                "/nonexistent/a.obj",
                "--low-posed",
                &good,
                "--high",
                &good,
            ],
            "/nonexistent/a.obj",
        ),
        (
            vec![
                "--low-rest",
                &good,
                "--low-posed",
                &good,
                "--high",
                &good,
                "--kernel",
                "nope",
            ],
            "nope",
        ),
    ];
    for (args, needle) in cases {
        let mut all = args.clone();
        all.extend(["--out", &out]);
        let o = run(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} succeeded");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {err}");
        assert!(
            lines[0].starts_with("error: ") && lines[0].to_lowercase().contains(needle),
            "{args:?}: {err}"
        );
    }
}
