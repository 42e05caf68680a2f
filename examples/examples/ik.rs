//! Two-bone and aim IK cases in the terms of ozz's `IKTwoBoneJob` and `IKAimJob`: reads a JSON
//! list of cases on stdin and prints `{"results":[...]}` (see `sinew_examples::ik_cases`).
//!
//! `echo '[{"id":1,"kind":"aim","joint":[1,0,0,0,0,1,0,0,0,0,1,0,0,0,0,1],"target":[0,0,5]}]' | cargo run --example ik`

use sinew_examples::ik_cases::solve_cases;
use std::io::Read;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        eprintln!("ik: reading stdin: {e}");
        return ExitCode::FAILURE;
    }
    let cases: serde_json::Value = match serde_json::from_str(&input) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("ik: the input is not JSON: {e}");
            return ExitCode::FAILURE;
        }
    };
    match solve_cases(&cases) {
        Ok(out) => {
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ik: {e}");
            ExitCode::FAILURE
        }
    }
}
