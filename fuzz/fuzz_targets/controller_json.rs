//! Fuzz target for the animation controller's JSON form (`RawController::from_json`), its bake
//! against the built-in character and the state machine it drives. Any bytes must give an `Err`
//! with a message, or a description that
//! - writes back to JSON that reads as the same description (`to_json` then `from_json`),
//! - bakes, or fails to bake with a message,
//! - once baked, steps 90 frames of varying length under changing parameters and triggers
//!   with every listed animation's times and weights finite, weights finite and not negative
//!   (`AnimationToProcess::weight`'s range), and every layer weight in [0, 1];
//!
//! never a panic, an abort or a hang (a cycle of zero-duration transitions is a bake error, so
//! no frame may spin).
//!
//! - libFuzzer: `cargo +nightly fuzz run controller_json corpus/controller_json -- -max_total_time=300`
//! - stable, with the shared mutation harness (seeds: `fuzz/corpus/controller_json`):
//!   `cargo run --release --no-default-features --bin controller_json -- --seconds 300`
#![cfg_attr(feature = "libfuzzer", no_main)]

use sinew_jobs::component::{Animations, LayerWeights};
use sinew_jobs::controller::{ControllerAssets, ControllerState, ParamKind, RawController};
use std::sync::{Arc, OnceLock};

/// The built-in character's rig, clips and mask, baked once per process.
fn character() -> Option<&'static (Arc<sinew_jobs::asset::Rig>, ControllerAssets)> {
    static CHARACTER: OnceLock<Option<(Arc<sinew_jobs::asset::Rig>, ControllerAssets)>> =
        OnceLock::new();
    CHARACTER
        .get_or_init(|| {
            let registry = sinew_jobs::asset::AssetRegistry::new();
            let c = sinew_fixtures::builtin::bake_character(&registry).ok()?;
            let assets = ControllerAssets::new()
                .clip(c.idle.clone())
                .clip(c.walk.clone())
                .clip(c.run.clone())
                .clip(c.wave.clone())
                .clip(c.breathe.clone())
                .mask(c.upper_body_mask.clone());
            Some((c.rig.clone(), assets))
        })
        .as_ref()
}

fn check(data: &[u8]) -> Result<(), String> {
    let Ok(text) = std::str::from_utf8(data) else {
        return Ok(());
    };
    let raw = match RawController::from_json(text) {
        Ok(raw) => raw,
        Err(e) if !e.to_string().trim().is_empty() => return Ok(()),
        Err(_) => return Err("a parse error without a message".into()),
    };
    let written = raw.to_json().map_err(|e| format!("to_json failed: {e}"))?;
    let reread = RawController::from_json(&written)
        .map_err(|e| format!("to_json wrote JSON that does not read back: {e}\n{written}"))?;
    if reread != raw {
        return Err(format!("the JSON round trip changed the description:\n{written}"));
    }
    let (rig, assets) = character().ok_or("the built-in character does not bake")?;
    let controller = match raw.bake(rig, assets) {
        Ok(c) => Arc::new(c),
        Err(e) if !e.to_string().trim().is_empty() => return Ok(()),
        Err(_) => return Err("a bake error without a message".into()),
    };
    let mut state = ControllerState::new(controller.clone(), rig)
        .map_err(|e| format!("a baked controller refuses its own rig: {e}"))?;
    let mut animations = Animations::default();
    let mut layer_weights = LayerWeights::default();
    // Parameter values that cross typical thresholds, signs and magnitudes.
    const FLOATS: [f32; 7] = [0.0, 1.0, -1.0, 0.5, 3.5, 1e6, -1e-30];
    for frame in 0..90usize {
        for (id, p) in raw.parameters.iter().enumerate() {
            let (name, kind) = (p.name.as_str(), p.kind);
            let turn = frame / 10 + id;
            let set = match kind {
                ParamKind::Float => state.set_float(name, FLOATS[turn % FLOATS.len()]),
                ParamKind::Int => state.set_int(name, (turn % 5) as i32 - 2),
                ParamKind::Bool => state.set_bool(name, turn % 2 == 1),
                ParamKind::Trigger if frame % 7 == 0 => state.set_trigger(name),
                ParamKind::Trigger => Ok(()),
            };
            set.map_err(|e| format!("setting parameter '{name}' ({kind:?}): {e}"))?;
        }
        // Frames of 0 to 0.1 s, with a long one now and then.
        let dt = if frame % 29 == 28 { 2.5 } else { (frame % 11) as f32 / 100.0 };
        state.step(dt, None, &mut animations, &mut layer_weights);
        for (i, a) in animations.as_slice().iter().enumerate() {
            let w = a.weight;
            if !(w >= 0.0 && w.is_finite()) {
                return Err(format!("frame {frame}: animation {i} has weight {w}"));
            }
            if !a.time.is_finite() || !a.previous_time.is_finite() {
                return Err(format!(
                    "frame {frame}: animation {i} has times {} -> {}",
                    a.previous_time, a.time
                ));
            }
        }
        for (l, w) in layer_weights.0.iter().enumerate() {
            if !(0.0..=1.0 + 1e-5).contains(w) {
                return Err(format!("frame {frame}: layer {l} has weight {w}"));
            }
        }
    }
    Ok(())
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
    let dict: &[&[u8]] = &[
        b"\"name\"",
        b"\"parameters\"",
        b"\"layers\"",
        b"\"states\"",
        b"\"transitions\"",
        b"\"motion\"",
        b"\"clip\"",
        b"\"tree\"",
        b"\"children\"",
        b"\"threshold\"",
        b"\"conditions\"",
        b"\"exit_time\"",
        b"\"duration\"",
        b"\"interruption\"",
        b"\"mask\"",
        b"\"additive\"",
        b"\"weight\"",
        b"\"idle\"",
        b"\"walk\"",
        b"\"run\"",
        b"\"wave\"",
        b"\"upper body\"",
        b"0",
        b"-1",
        b"1e39",
        b"0.0",
        b"null",
        b"true",
        b"[]",
        b"{}",
    ];
    harness::main("controller_json", Vec::new(), dict, check);
}
