//! Replays the RBF bake's fuzz findings (`fuzz/regressions/rbf_bake/`) through the fuzz
//! target's own input decoder and contract check (`fuzz/fuzz_targets/common/rbf_case.rs`,
//! included by path): each input must bake to an error with a message, or to a binding whose
//! weights are finite and that deforms the rest cage and the moved cage to finite positions.
#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "../../fuzz/fuzz_targets/common/rbf_case.rs"]
#[allow(dead_code, unreachable_pub)]
mod rbf_case;

use std::path::PathBuf;

fn regressions() -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions/rbf_bake");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect()
}

#[test]
fn rbf_bake_fuzz_findings_meet_the_fuzz_contract() {
    let cases = regressions();
    assert!(cases.len() >= 5, "{} regression inputs", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(path, bytes)| {
            rbf_case::check(bytes)
                .err()
                .map(|e| format!("{}: {e}", path.display()))
        })
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
}
