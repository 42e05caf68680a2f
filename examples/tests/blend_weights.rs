//! The `blend_weights` example as a reference checker runs it: one JSON request on stdin, one
//! JSON answer on stdout; invalid layouts answer `{"error": ...}` with a non-zero status.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests unwrap: a failure is the test failing

mod common;

use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn binary() -> PathBuf {
    common::example_binary("blend_weights")
}

fn ask(request: &str) -> (bool, Value) {
    let mut child = Command::new(binary())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "one line: {text}");
    (out.status.success(), serde_json::from_str(&text).unwrap())
}

fn rows(v: &Value) -> Vec<Vec<f64>> {
    v["weights"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        })
        .collect()
}

fn assert_rows(got: &[Vec<f64>], want: &[&[f64]]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.len(), w.len());
        for (a, b) in g.iter().zip(*w) {
            assert!((a - b).abs() < 1e-6, "{got:?} vs {want:?}");
        }
    }
}

#[test]
fn the_issue_requests_get_hand_computed_answers() {
    let (ok, v) = ask(r#"{"kind": "1d", "points": [0.0, 1.5, 4.0], "queries": [0.75, 5.0]}"#);
    assert!(ok);
    assert_rows(&rows(&v), &[&[0.5, 0.5, 0.0], &[0.0, 0.0, 1.0]]);
    let (ok, v) = ask(r#"{"kind": "cartesian", "points": [[0,1],[1,0]], "queries": [[0.5,0.5]]}"#);
    assert!(ok);
    assert_rows(&rows(&v), &[&[0.5, 0.5]]);
    // Four directions, queried at 45° between +x and +y and at +x.
    let (ok, v) = ask(
        r#"{"kind": "directional", "points": [[1,0],[0,1],[-1,0],[0,-1]],
            "queries": [[0.7071067811865476, 0.7071067811865476], [1, 0]]}"#,
    );
    assert!(ok);
    assert_rows(&rows(&v), &[&[0.5, 0.5, 0.0, 0.0], &[1.0, 0.0, 0.0, 0.0]]);
    let (ok, v) = ask(
        r#"{"kind": "simple_directional", "points": [[0,0],[1,0],[0,1],[-1,0],[0,-1]], "queries": [[0.25,0.25]]}"#,
    );
    assert!(ok);
    assert_rows(&rows(&v), &[&[0.5, 0.25, 0.25, 0.0, 0.0]]);
}

#[test]
fn invalid_layouts_answer_an_error_and_fail() {
    for (request, needle) in [
        (
            r#"{"kind": "1d", "points": [0.0, 1.0, 1.0], "queries": [0.5]}"#,
            "share the threshold 1",
        ),
        (
            r#"{"kind": "cartesian", "points": [[0,1],[0,1]], "queries": [[0,0]]}"#,
            "share a position",
        ),
        (
            r#"{"kind": "directional", "points": [], "queries": [[0,0]]}"#,
            "no children",
        ),
        (
            r#"{"kind": "1d", "points": [], "queries": [0.5]}"#,
            "no children",
        ),
        (
            r#"{"kind": "spline", "points": [1], "queries": [1]}"#,
            "unknown kind 'spline'",
        ),
        (r#"{"kind": "1d", "points": [0, 1]"#, "request:"),
        (
            r#"{"kind": "cartesian", "points": [[0,1],[1]], "queries": []}"#,
            "points[1]",
        ),
    ] {
        let (ok, v) = ask(request);
        assert!(!ok, "{request}");
        let e = v["error"].as_str().unwrap();
        assert!(e.contains(needle), "{request}: {e}");
    }
}
