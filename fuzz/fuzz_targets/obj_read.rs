//! Fuzz target for the OBJ reader of the `rbf` example (`sinew_examples::obj::parse_obj`,
//! `examples/src/obj.rs`, included here by path so that the target does not build the GPU
//! crates the examples crate depends on). Any UTF-8 text must give `Ok` with one position per
//! `v` line, or `Err` with a message that names the file; never a panic, an abort or a hang.
//!
//! - libFuzzer: `cargo +nightly fuzz run obj_read corpus/obj_read -- -max_total_time=300`
//! - stable, with the shared mutation harness (seeds: `fuzz/corpus/obj_read` and the sample
//!   cages in `fixtures/assets/rbf`):
//!   `cargo run --release --no-default-features --bin obj_read -- --seconds 300`
#![cfg_attr(feature = "libfuzzer", no_main)]

#[path = "../../examples/src/obj.rs"]
#[allow(dead_code)]
mod obj;

const NAME: &str = "fuzz.obj";

/// Reads `data` as an OBJ and checks the result's contract.
fn check(data: &[u8]) -> Result<(), String> {
    // The example reads files with `read_to_string`: non-UTF-8 never reaches the parser.
    let Ok(text) = std::str::from_utf8(data) else {
        return Ok(());
    };
    let v_lines = text
        .lines()
        .filter(|l| l.split_whitespace().next() == Some("v"))
        .count();
    match obj::parse_obj(text.to_owned(), NAME) {
        Ok(o) => {
            if o.positions.is_empty() {
                return Err("Ok with no positions".into());
            }
            if o.positions.len() != v_lines {
                return Err(format!(
                    "{} positions for {v_lines} 'v' lines",
                    o.positions.len()
                ));
            }
            if o.text != text {
                return Err("the text changed".into());
            }
            Ok(())
        }
        Err(e) if e.starts_with(NAME) && e.len() > NAME.len() + 2 => Ok(()),
        Err(e) => Err(format!("error without the file name or a reason: '{e}'")),
    }
}

#[cfg(feature = "libfuzzer")]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = check(data) {
        panic!("{e}");
    }
});

#[cfg(not(feature = "libfuzzer"))]
#[path = "common/harness.rs"]
mod harness;

#[cfg(not(feature = "libfuzzer"))]
fn main() {
    let mut seeds = Vec::new();
    if let Ok(dir) = sinew_fixtures::asset_path("rbf") {
        for p in ["sphere_low_rest.obj", "sphere_low_bend.obj"] {
            if let Ok(b) = std::fs::read(dir.join(p)) {
                seeds.push(b);
            }
        }
    }
    let dict: &[&[u8]] = &[
        b"v ",
        b"vt ",
        b"vn ",
        b"f ",
        b"o ",
        b"g ",
        b"s ",
        b"l ",
        b"p ",
        b"mtllib ",
        b"usemtl ",
        b"/",
        b"//",
        b"-1",
        b"0",
        b"1e39",
        b"nan",
        b"inf",
        b"-0",
        b"4294967295",
        b"\\\n",
        b"\r\n",
        b"#",
        b"\n",
    ];
    harness::main("obj_read", seeds, dict, check);
}
