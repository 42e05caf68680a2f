//! [`LodSwitch`]: per-character tier decisions by distance with hysteresis, and the two clocks
//! ([`LodClock`]) it keeps in step on a switch.

use glam::Vec3;
use std::fmt;

/// Which path animates a character.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LodPath {
    /// The nine-job CPU pipeline (full blending, IK, events, ...).
    Cpu,
    /// The baked texture, played by the vertex shader.
    Baked,
}

/// A character's two clocks: the CPU animation's playback time and the baked instance's
/// phase and speed (baked playback time = `phase + speed · global_time`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LodClock {
    /// Playback time of the CPU animation (unwrapped seconds, as
    /// [`AnimationToProcess::time`](crate::component::AnimationToProcess::time)).
    pub cpu_time: f32,
    /// The baked instance's phase in seconds.
    pub phase: f32,
    /// Playback speed (shared by both paths).
    pub speed: f32,
}

impl LodClock {
    /// The baked instance's playback time at `global_time`.
    #[inline]
    pub fn baked_time(&self, global_time: f32) -> f32 {
        self.phase + self.speed * global_time
    }

    /// The phase that makes the baked playback time equal `cpu_time` at `global_time`.
    #[inline]
    pub fn phase_for(cpu_time: f32, speed: f32, global_time: f32) -> f32 {
        cpu_time - speed * global_time
    }
}

/// A character that changed path in the last [`LodSwitch::update`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LodTransition {
    /// Index of the character.
    pub index: usize,
    /// The path it takes from this frame on.
    pub to: LodPath,
    /// True the first time a character is seen (its clocks were left as they were).
    pub first: bool,
}

/// Why [`LodSwitch`] rejected its input.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum LodError {
    /// Switch distance or hysteresis negative or not finite, or hysteresis wider than twice
    /// the distance.
    BadDistance {
        /// The switch distance.
        distance: f32,
        /// The hysteresis band width.
        hysteresis: f32,
    },
    /// Positions and clocks differ in length.
    LengthMismatch {
        /// Positions given.
        positions: usize,
        /// Clocks given.
        clocks: usize,
    },
}

impl fmt::Display for LodError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadDistance {
                distance,
                hysteresis,
            } => write!(
                f,
                "lod switch: distance {distance} and hysteresis {hysteresis} must be finite, non-negative, hysteresis at most twice the distance"
            ),
            Self::LengthMismatch { positions, clocks } => {
                write!(f, "lod switch: {positions} positions but {clocks} clocks")
            }
        }
    }
}

impl std::error::Error for LodError {}

/// Decides per character whether the CPU pipeline or the baked texture animates it, by
/// distance to the camera with hysteresis, and keeps the two clocks in step on a switch so
/// that the pose does not pop.
///
/// A character goes to [`LodPath::Cpu`] when it comes closer than `distance − hysteresis/2`
/// and to [`LodPath::Baked`] when it moves farther than `distance + hysteresis/2`; in between
/// it keeps its path. A character seen for the first time takes `Cpu` when closer than
/// `distance`, else `Baked`. On a switch baked → CPU its `cpu_time` is set to the baked
/// playback time at `global_time`; on CPU → baked its `phase` is set so that the baked
/// playback time equals `cpu_time`. At frame times of the bake both paths then give the same
/// palette (within float rounding); between frames they differ by the bake's interpolation
/// error.
///
/// [`LodCrowd`](super::LodCrowd) does the following each frame for entities of a store; use
/// the switch alone where characters live elsewhere:
/// 1. copy each CPU character's animation time into `clocks[i].cpu_time`;
/// 2. `switch.update(camera, &positions, global_time, &mut clocks, &mut transitions)?`;
/// 3. for each transition to `Cpu`: give the entity its animation at `clocks[i].cpu_time`
///    (and let the pipeline run it); to `Baked`: remove it from the pipeline (or skip its
///    draw) and write its baked instance with `clocks[i].phase` and `clocks[i].speed`;
/// 4. run the pipeline for the `Cpu` characters, draw the `Baked` ones instanced.
///
/// ```
/// use glam::Vec3;
/// use sinew_jobs::lod::{LodClock, LodPath, LodSwitch};
///
/// let mut lod = LodSwitch::new(20.0, 4.0)?;
/// let mut clocks = vec![LodClock { cpu_time: 0.0, phase: 0.0, speed: 1.0 }; 2];
/// let mut changes = Vec::new();
/// lod.update(Vec3::ZERO, &[Vec3::new(5.0, 0.0, 0.0), Vec3::new(50.0, 0.0, 0.0)], 0.0, &mut clocks, &mut changes)?;
/// assert_eq!(lod.paths(), &[LodPath::Cpu, LodPath::Baked]);
/// // The far one walks in to 19 m: inside the band, it stays baked; at 17 m it switches.
/// lod.update(Vec3::ZERO, &[Vec3::new(5.0, 0.0, 0.0), Vec3::new(19.0, 0.0, 0.0)], 1.0, &mut clocks, &mut changes)?;
/// assert!(changes.is_empty());
/// clocks[1].phase = 0.25;
/// lod.update(Vec3::ZERO, &[Vec3::new(5.0, 0.0, 0.0), Vec3::new(17.0, 0.0, 0.0)], 2.0, &mut clocks, &mut changes)?;
/// assert_eq!(lod.paths()[1], LodPath::Cpu);
/// assert_eq!(clocks[1].cpu_time, 2.25); // the baked playback time at global time 2
/// # Ok::<(), sinew_jobs::lod::LodError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct LodSwitch {
    distance: f32,
    hysteresis: f32,
    paths: Vec<LodPath>,
}

impl LodSwitch {
    /// Switches at `distance` (world units) with a band of `hysteresis` around it.
    ///
    /// # Errors
    /// [`LodError::BadDistance`].
    pub fn new(distance: f32, hysteresis: f32) -> Result<Self, LodError> {
        let ok = distance.is_finite()
            && hysteresis.is_finite()
            && distance >= 0.0
            && hysteresis >= 0.0
            && hysteresis <= 2.0 * distance;
        if !ok {
            return Err(LodError::BadDistance {
                distance,
                hysteresis,
            });
        }
        Ok(Self {
            distance,
            hysteresis,
            paths: Vec::new(),
        })
    }

    /// The switch distance.
    pub fn distance(&self) -> f32 {
        self.distance
    }

    /// The hysteresis band width.
    pub fn hysteresis(&self) -> f32 {
        self.hysteresis
    }

    /// The current path of every character seen so far.
    pub fn paths(&self) -> &[LodPath] {
        &self.paths
    }

    /// Forgets characters from `len` on (after the crowd shrank).
    pub fn truncate(&mut self, len: usize) {
        self.paths.truncate(len);
    }

    /// Forgets character `index`, the last one taking its index (as [`Vec::swap_remove`]);
    /// the path it had, `None` when `index` was not seen yet.
    pub fn swap_remove(&mut self, index: usize) -> Option<LodPath> {
        (index < self.paths.len()).then(|| self.paths.swap_remove(index))
    }

    /// Decides every character's path for this frame, syncs the clocks of those that switch,
    /// and lists the changes in `transitions` (cleared first). A character whose distance is
    /// not finite keeps its path (a new one goes baked).
    ///
    /// # Errors
    /// [`LodError::LengthMismatch`] when `positions` and `clocks` differ in length.
    pub fn update(
        &mut self,
        camera: Vec3,
        positions: &[Vec3],
        global_time: f32,
        clocks: &mut [LodClock],
        transitions: &mut Vec<LodTransition>,
    ) -> Result<(), LodError> {
        if positions.len() != clocks.len() {
            return Err(LodError::LengthMismatch {
                positions: positions.len(),
                clocks: clocks.len(),
            });
        }
        transitions.clear();
        let near = (self.distance - 0.5 * self.hysteresis).max(0.0);
        let far = self.distance + 0.5 * self.hysteresis;
        let known = self.paths.len().min(positions.len());
        for (i, (p, clock)) in positions.iter().zip(clocks.iter_mut()).enumerate() {
            let d = camera.distance(*p);
            if i >= known {
                let to = if d.is_finite() && d < self.distance {
                    LodPath::Cpu
                } else {
                    LodPath::Baked
                };
                self.paths.push(to);
                transitions.push(LodTransition {
                    index: i,
                    to,
                    first: true,
                });
                continue;
            }
            let Some(path) = self.paths.get_mut(i) else {
                continue;
            };
            let to = match *path {
                LodPath::Baked if d < near => LodPath::Cpu,
                LodPath::Cpu if d > far => LodPath::Baked,
                keep => keep,
            };
            if to == *path {
                continue;
            }
            match to {
                LodPath::Cpu => clock.cpu_time = clock.baked_time(global_time),
                LodPath::Baked => {
                    clock.phase = LodClock::phase_for(clock.cpu_time, clock.speed, global_time)
                }
            }
            *path = to;
            transitions.push(LodTransition {
                index: i,
                to,
                first: false,
            });
        }
        Ok(())
    }
}
