//! Job 5, user curves and events: blends each entity's user curves by the animations'
//! effective weights, and fires the events that playback passed since the previous frame
//! (loop-aware, and for reverse playback too).

use crate::asset::Clip;
use crate::component::{
    AnimationToProcess, Animations, CurveValues, EventSource, FiredEvent, FiredEvents, LayerWeights,
};
use crate::error::{JobError, check_len};
use sinew_runtime::store::Entity;

/// At most this many passes of one event are fired per frame (a huge time step on a short
/// looping clip would otherwise flood the queue).
pub const MAX_PASSES_PER_EVENT: i64 = 8;

/// Curves and events over one run of entities.
#[derive(Debug)]
pub struct UserCurvesJob<'a> {
    /// Entity handles (for errors).
    pub entities: &'a [Entity],
    /// Animations per entity.
    pub animations: &'a [Animations],
    /// Layer weights per entity.
    pub layer_weights: &'a [LayerWeights],
    /// Output curves per entity, when the run has them.
    pub curves: Option<&'a mut [CurveValues]>,
    /// Output events per entity (cleared, then filled), when the run has them.
    pub events: Option<&'a mut [FiredEvents]>,
}

impl UserCurvesJob<'_> {
    /// Checks lengths.
    ///
    /// # Errors
    /// [`JobError::LengthMismatch`] when the buffers differ in length.
    pub fn validate(&self) -> Result<(), JobError> {
        let n = self.entities.len();
        check_len("user curves", "animations", n, self.animations.len())?;
        check_len("user curves", "layer weights", n, self.layer_weights.len())?;
        if let Some(c) = &self.curves {
            check_len("user curves", "curves", n, c.len())?;
        }
        if let Some(e) = &self.events {
            check_len("user curves", "events", n, e.len())?;
        }
        Ok(())
    }

    /// Evaluates curves and fires events.
    pub fn run(&mut self) {
        for i in 0..self.animations.len() {
            let anims = self.animations[i].as_slice();
            let lw = self.layer_weights.get(i).copied().unwrap_or_default();
            if let Some(out) = self.curves.as_deref_mut().and_then(|c| c.get_mut(i)) {
                blend_curves(anims, &lw, out);
            }
            if let Some(out) = self.events.as_deref_mut().and_then(|e| e.get_mut(i)) {
                out.0.clear();
                for (k, a) in anims.iter().enumerate() {
                    let w = effective_weight(a, &lw);
                    fire_events(
                        &a.clip,
                        a.plays_looping(),
                        a.previous_time,
                        a.time,
                        |time, ev_index| {
                            if let Some(ev) = a.clip.events().get(ev_index) {
                                out.0.push(FiredEvent {
                                    name: ev.hash,
                                    time,
                                    payload: ev.payload,
                                    animation: k as u16,
                                    weight: w,
                                    source: EventSource::Clip,
                                });
                            }
                        },
                    );
                }
            }
        }
    }
}

fn effective_weight(a: &AnimationToProcess, lw: &LayerWeights) -> f32 {
    a.weight * lw.0.get(usize::from(a.layer)).copied().unwrap_or(0.0)
}

/// Weighted average of every curve over the animations that have it, accumulated in the
/// component's own buffers (no allocation once they have grown).
fn blend_curves(anims: &[AnimationToProcess], lw: &LayerWeights, out: &mut CurveValues) {
    out.clear();
    for a in anims {
        let w = effective_weight(a, lw);
        if w <= 0.0 {
            continue;
        }
        let t = a.clip_time();
        for (ci, c) in a.clip.curves().iter().enumerate() {
            let Some(v) = a.clip.sample_curve(ci, t) else {
                continue;
            };
            out.accumulate(c.hash, v, w);
        }
    }
    out.normalize();
}

/// Calls `fire(clip_time, event_index)` for every event whose time playback passed going from
/// `previous` to `current` (unwrapped playback times): the half-open interval
/// `(previous, current]` forward, `[current, previous)` backward, every loop counted where
/// playback loops (`looping`: the animation's [`plays_looping`]; at most
/// [`MAX_PASSES_PER_EVENT`] per event), clamped to the clip otherwise.
///
/// [`plays_looping`]: crate::component::AnimationToProcess::plays_looping
pub fn fire_events(
    clip: &Clip,
    looping: bool,
    previous: f32,
    current: f32,
    mut fire: impl FnMut(f32, usize),
) {
    if previous == current || clip.events().is_empty() {
        return;
    }
    let d = clip.duration();
    let forward = current > previous;
    if looping && d > 0.0 {
        let (p, c, dd) = (f64::from(previous), f64::from(current), f64::from(d));
        for (i, ev) in clip.events().iter().enumerate() {
            let e = f64::from(ev.time);
            let passes = if forward {
                ((c - e) / dd).floor() - ((p - e) / dd).floor()
            } else {
                ((p - e) / dd).ceil() - ((c - e) / dd).ceil()
            };
            let passes = (passes.max(0.0) as i64).min(MAX_PASSES_PER_EVENT);
            for _ in 0..passes {
                fire(ev.time, i);
            }
        }
    } else {
        let (p, c) = (previous.clamp(0.0, d), current.clamp(0.0, d));
        for (i, ev) in clip.events().iter().enumerate() {
            let hit = if forward {
                p < ev.time && ev.time <= c
            } else {
                c <= ev.time && ev.time < p
            };
            if hit {
                fire(ev.time, i);
            }
        }
    }
}
