//! Fuzz target for the glTF importer: any byte string given to `import_gltf_slice` must give
//! `Ok` or `Err`, never a panic (also not one that the importer's own `catch_unwind` turns into
//! `ImportError::Malformed`: that is a finding too), an abort or a hang.
//!
//! Two ways to run it:
//! - libFuzzer (needs nightly or `RUSTC_BOOTSTRAP=1`):
//!   `RUSTC_BOOTSTRAP=1 cargo fuzz run gltf_import -- -max_total_time=300`
//!   (the `libfuzzer` feature is on by default; `fuzz/corpus/gltf_import` is seeded from
//!   `fixtures/assets/gltf/*.glb` by `fuzz/run.sh`).
//! - A plain binary on stable Rust, which mutates the sample files itself (bit flips, byte
//!   and integer overwrites, truncations, splices, number edits in the JSON chunk with the GLB
//!   lengths kept consistent) with a deterministic xorshift PRNG:
//!   `cargo run --release --no-default-features --bin gltf_import -- --seconds 300`
//!   Inputs that panic are written to `fuzz/artifacts/gltf_import/`.
#![cfg_attr(feature = "libfuzzer", no_main)]

use sinew_jobs::asset::AssetRegistry;
use sinew_jobs::import::{ImportError, import_gltf_slice};

/// Imports `data`: `Some(true)` imported, `Some(false)` an ordinary error, `None` the importer
/// caught a panic (`ImportError::Malformed`).
fn one(data: &[u8]) -> Option<bool> {
    let registry = AssetRegistry::new();
    match import_gltf_slice(data, None, &registry) {
        Ok(_) => Some(true),
        Err(ImportError::Malformed { .. }) => None,
        Err(_) => Some(false),
    }
}

#[cfg(feature = "libfuzzer")]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // libFuzzer's panic hook aborts on any panic, caught or not; a Malformed error is
    // reported the same way.
    assert!(one(data).is_some(), "the importer caught a panic");
});

#[cfg(not(feature = "libfuzzer"))]
#[path = "common/harness.rs"]
mod harness;

/// Structure-aware mutations of GLB files for the stable harness.
#[cfg(not(feature = "libfuzzer"))]
mod glb {
    use super::harness::Rng;

    /// A GLB split into JSON text and BIN bytes, for structure-aware mutations.
    fn split_glb(b: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
        let u = |at: usize| {
            b.get(at..at + 4)
                .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as usize)
        };
        let jl = u(12)?;
        let json = b.get(20..20 + jl)?.to_vec();
        let bl = u(20 + jl).unwrap_or(0);
        let bin = b
            .get(28 + jl..28 + jl + bl)
            .map(<[u8]>::to_vec)
            .unwrap_or_default();
        Some((json, bin))
    }

    fn pack_glb(json: &[u8], bin: &[u8]) -> Vec<u8> {
        let mut j = json.to_vec();
        while j.len() % 4 != 0 {
            j.push(b' ');
        }
        let mut out = b"glTF".to_vec();
        out.extend_from_slice(&2u32.to_le_bytes());
        out.extend_from_slice(&((28 + j.len() + bin.len()) as u32).to_le_bytes());
        out.extend_from_slice(&(j.len() as u32).to_le_bytes());
        out.extend_from_slice(b"JSON");
        out.extend_from_slice(&j);
        out.extend_from_slice(&(bin.len() as u32).to_le_bytes());
        out.extend_from_slice(b"BIN\0");
        out.extend_from_slice(bin);
        out
    }

    const NUMBERS: [&str; 14] = [
        "0",
        "1",
        "-1",
        "2",
        "3",
        "4",
        "255",
        "65535",
        "4294967295",
        "4294967296",
        "99999999999999999999",
        "1e39",
        "-0.0",
        "0.5",
    ];

    /// Replaces a number in the JSON text with an interesting one.
    fn mutate_number(json: &mut Vec<u8>, rng: &mut Rng) {
        let starts: Vec<usize> = (0..json.len())
            .filter(|&i| {
                json[i].is_ascii_digit()
                    && (i == 0 || !json[i - 1].is_ascii_digit() && json[i - 1] != b'.')
            })
            .collect();
        if starts.is_empty() {
            return;
        }
        let s = starts[rng.below(starts.len())];
        let mut e = s;
        while e < json.len()
            && (json[e].is_ascii_digit() || matches!(json[e], b'.' | b'e' | b'E' | b'-' | b'+'))
        {
            e += 1;
        }
        let repl: Vec<u8> = if rng.below(4) == 0 {
            // Off by a little: n +- 1..4.
            let n: i64 = std::str::from_utf8(&json[s..e])
                .ok()
                .and_then(|t| t.parse().ok())
                .unwrap_or(0);
            (n + rng.below(9) as i64 - 4).to_string().into_bytes()
        } else {
            NUMBERS[rng.below(NUMBERS.len())].as_bytes().to_vec()
        };
        json.splice(s..e, repl);
    }

    pub(super) fn mutate(seeds: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
        let mut b = seeds[rng.below(seeds.len())].clone();
        let rounds = 1 + rng.below(4);
        for _ in 0..rounds {
            match rng.below(10) {
                0 | 1 => {
                    // Bit flips.
                    for _ in 0..1 + rng.below(8) {
                        if !b.is_empty() {
                            let i = rng.below(b.len());
                            b[i] ^= 1 << rng.below(8);
                        }
                    }
                }
                2 => {
                    // Interesting u32 at a random (often header or chunk-header) position.
                    let vals = [
                        0u32,
                        1,
                        3,
                        4,
                        12,
                        0x7fff_ffff,
                        0xffff_ffff,
                        b.len() as u32,
                        b.len() as u32 + 4,
                    ];
                    let at = if rng.below(2) == 0 {
                        [4, 8, 12, 16][rng.below(4)]
                    } else {
                        rng.below(b.len())
                    };
                    let v = vals[rng.below(vals.len())].to_le_bytes();
                    for (k, x) in v.iter().enumerate() {
                        if let Some(slot) = b.get_mut(at + k) {
                            *slot = *x;
                        }
                    }
                }
                3 => {
                    // Truncation.
                    let n = rng.below(b.len() + 1);
                    b.truncate(n);
                }
                4 => {
                    // Splice with another seed.
                    let o = &seeds[rng.below(seeds.len())];
                    let cut = rng.below(b.len() + 1);
                    let from = rng.below(o.len() + 1);
                    b.truncate(cut);
                    b.extend_from_slice(&o[from..]);
                }
                5 => {
                    // Delete or duplicate a range.
                    if !b.is_empty() {
                        let s = rng.below(b.len());
                        let e = (s + 1 + rng.below(64)).min(b.len());
                        if rng.below(2) == 0 {
                            b.drain(s..e);
                        } else {
                            let dup = b[s..e].to_vec();
                            b.splice(s..s, dup);
                        }
                    }
                }
                _ => {
                    // Structure-aware: edit the JSON (numbers, or bytes) or the BIN data and repack
                    // with consistent lengths.
                    if let Some((mut json, mut bin)) = split_glb(&b) {
                        match rng.below(4) {
                            0 | 1 => mutate_number(&mut json, rng),
                            2 if !bin.is_empty() => {
                                // Overwrite BIN floats with NaN, inf, huge or negative values.
                                let vals = [f32::NAN, f32::INFINITY, -1.0, 1e30, 0.0, 255.0];
                                let at = rng.below(bin.len() / 4) * 4;
                                let v = vals[rng.below(vals.len())].to_le_bytes();
                                if let Some(s) = bin.get_mut(at..at + 4) {
                                    s.copy_from_slice(&v);
                                }
                            }
                            _ => {
                                if !json.is_empty() {
                                    let i = rng.below(json.len());
                                    json[i] = b"{}[],:\"0-"[rng.below(9)];
                                }
                            }
                        }
                        b = pack_glb(&json, &bin);
                    }
                }
            }
        }
        b
    }
}

#[cfg(not(feature = "libfuzzer"))]
fn main() {
    // Seeds: the committed corpus plus the fixture sample files.
    let samples = sinew_fixtures::asset_path("gltf")
        .ok()
        .and_then(|dir| std::fs::read_dir(dir).ok())
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "glb"))
        .filter_map(|p| std::fs::read(p).ok())
        .collect();
    harness::main_with("gltf_import", samples, &glb::mutate, |data| {
        match one(data) {
            Some(_) => Ok(()),
            None => Err("the importer caught a panic (ImportError::Malformed)".into()),
        }
    });
}
