//! Command-line parsing shared by the example binaries.

use std::process::ExitCode;

/// The arguments, or the exit code to return: `--help` and `--version` print and give 0, a
/// bad argument prints clap's first line as `name: message` on stderr and gives 2.
///
/// # Errors
/// The exit code when the binary should stop without running.
pub fn parse_args<A: clap::Parser>(name: &str) -> Result<A, ExitCode> {
    A::try_parse().map_err(|e| {
        if e.use_stderr() {
            let msg = e.to_string();
            let first = msg.lines().next().unwrap_or("bad arguments");
            eprintln!("{name}: {}", first.trim_start_matches("error: "));
            ExitCode::from(2)
        } else {
            print!("{e}");
            ExitCode::SUCCESS
        }
    })
}
