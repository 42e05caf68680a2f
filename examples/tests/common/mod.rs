//! Shared by the tests that run an example binary as a user would.
#![allow(dead_code, clippy::unwrap_used)] // each test binary uses its part; a failure is the test failing

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

/// Example `name`'s binary, built (or found up to date) by cargo for the profile this test was
/// built with, in the same target directory; built once per test binary.
pub fn example_binary(name: &str) -> PathBuf {
    static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, bin)) = built.iter().find(|(n, _)| n == name) {
        return bin.clone();
    }
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let profile = match profile_dir.file_name().unwrap().to_str().unwrap() {
        "debug" => "dev",
        other => other,
    };
    let status = Command::new(env!("CARGO"))
        .args(["build", "-q", "-p", "sinew-examples", "--example", name])
        .args(["--profile", profile])
        .env("CARGO_TARGET_DIR", profile_dir.parent().unwrap())
        .status()
        .unwrap();
    assert!(status.success(), "cargo build --example {name} failed");
    let bin = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(bin.exists(), "{} not built", bin.display());
    built.push((name.to_owned(), bin.clone()));
    bin
}
