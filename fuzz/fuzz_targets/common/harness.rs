//! The stable-Rust mutation harness shared by the `obj_read` and `rbf_bake` targets when built
//! without the `libfuzzer` feature: mutates the seed files with a deterministic xorshift PRNG
//! (bit flips, interesting bytes, dictionary tokens, truncations, splices, range deletes and
//! duplications), runs the target's check on each input, and writes every input whose check
//! fails or panics to `fuzz/artifacts/<target>/`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// xorshift64: deterministic, so a finding replays from `--seed`.
pub struct Rng(u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn mutate(seeds: &[Vec<u8>], dict: &[&[u8]], rng: &mut Rng) -> Vec<u8> {
    let mut b = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(4) {
        match rng.below(8) {
            0 => {
                for _ in 0..1 + rng.below(8) {
                    if !b.is_empty() {
                        let i = rng.below(b.len());
                        b[i] ^= 1 << rng.below(8);
                    }
                }
            }
            1 => {
                if !b.is_empty() {
                    let i = rng.below(b.len());
                    b[i] = [0u8, 1, 0x7f, 0x80, 0xff, b'\n', b' ', b'-'][rng.below(8)];
                }
            }
            2 | 3 if !dict.is_empty() => {
                let tok = dict[rng.below(dict.len())];
                let at = rng.below(b.len() + 1);
                if rng.below(2) == 0 {
                    b.splice(at..at, tok.iter().copied());
                } else {
                    let end = (at + tok.len()).min(b.len());
                    b.splice(at..end, tok.iter().copied());
                }
            }
            4 => {
                let n = rng.below(b.len() + 1);
                b.truncate(n);
            }
            5 => {
                let o = &seeds[rng.below(seeds.len())];
                let cut = rng.below(b.len() + 1);
                let from = rng.below(o.len() + 1);
                b.truncate(cut);
                b.extend_from_slice(&o[from..]);
            }
            _ => {
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
        }
    }
    b
}

fn seeds_from(dir: &Path) -> Vec<Vec<u8>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    files
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .filter(|b| !b.is_empty())
        .collect()
}

/// Runs `check` on mutations of the files in `fuzz/corpus/<name>/` (plus `extra_seeds`) for
/// `--seconds` (default 60) or `--iterations`, from `--seed`; exits 1 when any input failed.
/// `--replay FILE...` runs the check once on each file instead.
#[allow(dead_code)] // each target binary uses one of the two entry points
pub fn main(
    name: &str,
    extra_seeds: Vec<Vec<u8>>,
    dict: &[&[u8]],
    check: fn(&[u8]) -> Result<(), String>,
) {
    main_with(
        name,
        extra_seeds,
        &|seeds, rng| mutate(seeds, dict, rng),
        check,
    );
}

/// [`main`] with the target's own mutator (the glTF target edits GLB structure).
#[allow(dead_code)] // each target binary uses one of the two entry points
pub fn main_with(
    name: &str,
    extra_seeds: Vec<Vec<u8>>,
    mutate: &dyn Fn(&[Vec<u8>], &mut Rng) -> Vec<u8>,
    check: fn(&[u8]) -> Result<(), String>,
) {
    let args: Vec<String> = std::env::args().collect();
    let arg = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    if let Some(i) = args.iter().position(|a| a == "--replay") {
        // Runs the check once on each file given after `--replay`.
        let mut failed = false;
        for f in &args[i + 1..] {
            let data = std::fs::read(f).unwrap_or_default();
            match check(&data) {
                Ok(()) => println!("{f}: ok"),
                Err(e) => {
                    failed = true;
                    println!("{f}: {e}");
                }
            }
        }
        std::process::exit(i32::from(failed));
    }
    let seconds = arg("--seconds").unwrap_or(60);
    let max_iters = arg("--iterations").unwrap_or(u64::MAX);
    let seed = arg("--seed").unwrap_or(0x5eed_0f_91f7);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let artifacts = root.join("artifacts").join(name);
    let mut seeds = seeds_from(&root.join("corpus").join(name));
    seeds.extend(extra_seeds.into_iter().filter(|s| !s.is_empty()));
    if seeds.is_empty() {
        eprintln!("{name}: no seeds in fuzz/corpus/{name}");
        std::process::exit(2);
    }
    std::panic::set_hook(Box::new(|info| {
        if let Ok(mut slot) = LAST_PANIC.lock() {
            *slot = Some(format!("{info}"));
        }
    }));
    let mut rng = Rng(seed | 1);
    let start = Instant::now();
    let deadline = start + Duration::from_secs(seconds);
    let (mut execs, mut findings) = (0u64, 0u64);
    let mut slowest = Duration::ZERO;
    while execs < max_iters && Instant::now() < deadline {
        let input = mutate(&seeds, &mut rng);
        let t0 = Instant::now();
        let result = std::panic::catch_unwind(|| check(&input));
        slowest = slowest.max(t0.elapsed());
        execs += 1;
        let panic = LAST_PANIC.lock().ok().and_then(|mut s| s.take());
        let failure = match result {
            Ok(Ok(())) => None,
            Ok(Err(msg)) => Some(msg),
            Err(_) => Some(panic.unwrap_or_else(|| "panic".into())),
        };
        if let Some(msg) = failure {
            findings += 1;
            let _ = std::fs::create_dir_all(&artifacts);
            let path = artifacts.join(format!("crash-{execs}.bin"));
            let _ = std::fs::write(&path, &input);
            eprintln!(
                "finding {findings} at exec {execs}: {msg} -> {}",
                path.display()
            );
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{name}: {execs} execs in {secs:.0} s ({:.0}/s), {findings} findings, slowest input {:.1} ms, {} seeds",
        execs as f64 / secs.max(1e-9),
        slowest.as_secs_f64() * 1e3,
        seeds.len()
    );
    if findings > 0 {
        std::process::exit(1);
    }
}
