//! The soak run (issue #18, point 5): the default crowd of `crowd` (the built-in character
//! driven by [`crowd::crowd_controller`], feet placed on the crowd's ground and heads looking at
//! the camera, [`ground::stages`]) run for a long time on few threads, with churn, clip changes,
//! mesh swaps and a user stage ([`HeadTiltStage`]) after the crowd's stages.
//!
//! Clip changes are what a game does to controller-driven characters: a new speed (another
//! blend of idle, walk and run) and the wave trigger; some characters are switched between the
//! controller and a plain animation list (respawned with the other bundle), and plain ones get
//! new lists. Churn respawns controller-driven characters.
//!
//! Every `check_every` frames a sample of entities is snapshotted before the frame (their
//! controller state and IK inputs included) and, after the crowd's frame, each is spawned alone
//! into a fresh store with a fresh [`Animator`] built with the same stages and run for one frame
//! with the same `dt`: its palette and its state after the frame must equal the crowd's, bit
//! for bit. Each sample is run alone twice, with the crowd's sampling cursors and with none: a
//! key search from none must end where the crowd's did. Resident memory
//! (`/proc/self/statm`) is sampled at the checks and must not grow by more than
//! `max_memory_growth` after `memory_warmup`; with a heap probe (the example's counting
//! allocator) the live heap is sampled too and held to the same limit, which tells growth of
//! what the program holds from growth of the allocator's free lists.

use crate::crowd::{self, CrowdBundle, Model, ModelKind, hash01};
use crate::ground::{self, Procedural};
use glam::Affine3A;
use rayon::ThreadPoolBuilder;
use sinew_fixtures::builtin::RUN_SPEED;
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{AssetRegistry, Rig, SkinnedMesh, lod_chain};
use sinew_jobs::component::{
    AnimationToProcess, Animations, BlendMode, CurveValues, EntityTransform, FiredEvents,
    FrameSlot, LayerWeights, RigRef, RootMotion, SamplingCursors, SkinRef,
};
use sinew_jobs::controller::{Controller, ControllerState};
use sinew_jobs::frame::PaletteEntry;
use sinew_jobs::ik::{FootPlacement, LookAt};
use sinew_jobs::pipeline::PipelineConfig;
use sinew_jobs::pose_stage::{PoseStage, PoseStages, StageError, StagePose};
use sinew_runtime::store::{Component, Entity, Store};
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Clone, Debug)]
pub struct SoakOptions {
    /// Characters.
    pub count: usize,
    /// Worker threads.
    pub threads: usize,
    /// Stop after this many frames (if set).
    pub frames: Option<usize>,
    /// Stop after this much wall time (if set).
    pub duration: Option<Duration>,
    /// Mean seconds per frame; each frame's `dt` varies deterministically in ±25 % of it.
    pub dt: f32,
    /// Share of the crowd despawned and respawned every simulated second.
    pub churn: f32,
    /// Share of the crowd whose animation changes every simulated second: a new speed or the
    /// wave trigger for a controller-driven character, a new list for a plain one, or (one
    /// change in [`SoakOptions::switch_share`]) a switch between the two.
    pub clip_changes: f32,
    /// Share of the clip changes that switch a character between the controller and a plain
    /// animation list.
    pub switch_share: f32,
    /// Share of the crowd whose mesh is swapped (full ↔ simplified) every simulated second.
    pub mesh_swaps: f32,
    /// Frames between checks against lone runs (frame 0 is checked).
    pub check_every: usize,
    /// Entities checked per check (those touched on that frame first).
    pub samples: usize,
    /// Wall time after which resident memory is the baseline; `None`: memory is only reported.
    pub memory_warmup: Option<Duration>,
    /// Largest allowed growth of resident memory over the baseline (0.01 = 1 %).
    pub max_memory_growth: f64,
    /// Print a progress line this often (to stderr).
    pub progress: Option<Duration>,
    /// Live heap bytes (a counting global allocator's figure), read at each check before the
    /// lone runs and recorded in [`SoakReport::live_heap`]; `None`: not read.
    pub heap_probe: Option<fn() -> u64>,
}

impl Default for SoakOptions {
    fn default() -> Self {
        Self {
            count: 10_000,
            threads: 2,
            frames: None,
            duration: Some(Duration::from_secs(600)),
            dt: 1.0 / 60.0,
            churn: 0.1,
            clip_changes: 0.05,
            switch_share: 0.2,
            mesh_swaps: 0.05,
            check_every: 100,
            samples: 16,
            memory_warmup: Some(Duration::from_secs(60)),
            max_memory_growth: 0.01,
            progress: None,
            heap_probe: None,
        }
    }
}

/// What a soak run did and measured.
#[derive(Clone, Debug, Default)]
pub struct SoakReport {
    /// Characters.
    pub count: usize,
    /// Worker threads.
    pub threads: usize,
    /// Frames run.
    pub frames: usize,
    /// Simulated seconds (sum of the frame times).
    pub simulated_s: f64,
    /// Wall time of the run.
    pub wall: Duration,
    /// Checks against lone runs, and entities compared in them (each run alone twice).
    pub checks: usize,
    /// Entities compared.
    pub entities_checked: usize,
    /// Of them, entities driven by the controller.
    pub controlled_checked: usize,
    /// Entities despawned and respawned.
    pub churned: u64,
    /// Controller parameter changes (a new speed, or a new speed and the wave trigger).
    pub parameter_changes: u64,
    /// Plain animation lists replaced.
    pub lists_replaced: u64,
    /// Characters switched between the controller and a plain list.
    pub switches: u64,
    /// Meshes swapped.
    pub mesh_swaps: u64,
    /// Controller-driven characters at the end.
    pub controlled_last: usize,
    /// Median, 99th percentile and slowest crowd frame (the graph only).
    pub frame_median: Duration,
    /// 99th percentile frame.
    pub frame_p99: Duration,
    /// Slowest frame.
    pub frame_max: Duration,
    /// Resident bytes after the first frame.
    pub rss_first: u64,
    /// Resident bytes at the first check after the warm-up (`None`: the run was shorter).
    pub rss_baseline: Option<u64>,
    /// Largest resident bytes at a check after the baseline.
    pub rss_max_after: Option<u64>,
    /// Resident bytes at the end.
    pub rss_last: u64,
    /// `/proc/loadavg` at the start and the end.
    pub load: (String, String),
    /// `(frame, live heap bytes)` at each check, when [`SoakOptions::heap_probe`] is set.
    pub live_heap: Vec<(usize, u64)>,
    /// Live heap bytes at the resident-memory baseline's check.
    pub live_heap_baseline: Option<u64>,
    /// Largest live heap bytes at a check after the baseline.
    pub live_heap_max_after: Option<u64>,
}

impl SoakReport {
    /// Clip changes of every kind: parameter changes, lists replaced and switches.
    pub fn clip_changes(&self) -> u64 {
        self.parameter_changes + self.lists_replaced + self.switches
    }

    /// Growth of resident memory after the warm-up, as a fraction of the baseline.
    pub fn memory_growth(&self) -> Option<f64> {
        let (b, m) = (self.rss_baseline?, self.rss_max_after?);
        Some((m as f64 - b as f64) / b as f64)
    }

    /// Growth of the live heap after the warm-up, as a fraction of its baseline (with a heap
    /// probe): what the program holds, where resident memory also counts the allocator's
    /// free lists.
    pub fn live_heap_growth(&self) -> Option<f64> {
        let (b, m) = (self.live_heap_baseline?, self.live_heap_max_after?);
        Some((m as f64 - b as f64) / b as f64)
    }
}

/// Resident bytes of this process, from `/proc/self/statm` (resident pages × 4 KiB, the page
/// size of x86-64 Linux).
pub fn resident_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = s.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The input of [`HeadTiltStage`]: the bone it tilts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeadTilt {
    /// The head bone.
    pub head: usize,
}

/// The soak's user stage, after the crowd's: tilts the head bone in model space, about its own
/// X axis, by an angle that depends on the head's model-space height after foot placement, so
/// that each entity's edit depends on its own pose and on the stages before it (an entity
/// given another's pose, or a run without the IK stages, shows up in the comparison).
#[derive(Clone, Copy, Debug)]
pub struct HeadTiltStage;

impl PoseStage for HeadTiltStage {
    type Input = HeadTilt;

    fn name(&self) -> &str {
        "soak head tilt"
    }

    fn check(&self, rig: &Rig, input: &HeadTilt) -> Result<(), StageError> {
        let bone_count = rig.bone_count();
        if input.head < bone_count {
            Ok(())
        } else {
            Err(StageError::BoneOutOfRange {
                bone: input.head,
                bone_count,
            })
        }
    }

    fn apply(&self, input: &HeadTilt, pose: &mut StagePose<'_>) {
        if let Some(m) = pose.model.get_mut(input.head) {
            let angle = 0.1 + 0.2 * (m.translation.y * 7.0).sin();
            *m *= Affine3A::from_rotation_x(angle);
        }
    }
}

/// The soak's stages: the crowd's ([`ground::stages`]: feet on the waves, the look-at), then
/// the user stage.
pub fn soak_stages() -> PoseStages {
    ground::stages().with(HeadTiltStage)
}

/// An animator as `crowd` builds it (the default, fused pipeline) with `stages`. The crowd and
/// every lone run build it the same way.
fn soak_animator(store: &mut Store, stages: &PoseStages) -> Result<Animator, String> {
    Animator::with_stages(store, PipelineConfig::default(), stages, |_, _| {})
        .map_err(|e| format!("soak graph: {e}"))
}

fn get<T: Component + Clone>(store: &Store, e: Entity) -> Result<T, String> {
    store
        .get::<T>(e)
        .cloned()
        .map_err(|err| format!("entity {e:?}: {err}"))
}

/// One entity's components before a frame: what a lone run needs to animate it as the crowd
/// does.
#[derive(Clone)]
struct Snapshot {
    bundle: CrowdBundle,
    /// `None` for a character playing a plain animation list.
    controller: Option<ControllerState>,
    feet: FootPlacement,
    look: LookAt,
    tilt: HeadTilt,
}

impl Snapshot {
    fn of(store: &Store, e: Entity) -> Result<Self, String> {
        let controlled = store
            .has::<ControllerState>(e)
            .map_err(|err| format!("entity {e:?}: {err}"))?;
        Ok(Self {
            bundle: (
                get::<RigRef>(store, e)?,
                get::<Animations>(store, e)?,
                get::<LayerWeights>(store, e)?,
                get::<FrameSlot>(store, e)?,
                get::<SamplingCursors>(store, e)?,
                get::<SkinRef>(store, e)?,
                get::<EntityTransform>(store, e)?,
                get::<RootMotion>(store, e)?,
                get::<FiredEvents>(store, e)?,
                get::<CurveValues>(store, e)?,
            ),
            controller: controlled
                .then(|| get::<ControllerState>(store, e))
                .transpose()?,
            feet: get::<FootPlacement>(store, e)?,
            look: get::<LookAt>(store, e)?,
            tilt: get::<HeadTilt>(store, e)?,
        })
    }

    /// Spawns the entity into `store`.
    fn spawn(self, store: &mut Store) -> Result<Entity, String> {
        let e = store.spawn(self.bundle).map_err(|err| err.to_string())?;
        let inserted = match self.controller {
            Some(c) => store.insert(e, c),
            None => Ok(()),
        };
        inserted
            .and_then(|()| store.insert(e, self.feet))
            .and_then(|()| store.insert(e, self.look))
            .and_then(|()| store.insert(e, self.tilt))
            .map_err(|err| err.to_string())?;
        Ok(e)
    }
}

/// The crowd controller's parameters, by kind.
const FLOAT_PARAMETERS: [&str; 4] = ["speed", "pace", "phase", "breath_phase"];
const TRIGGERS: [&str; 1] = ["wave"];

/// A controller state as text: parameters, each layer's playing states (weights, normalised
/// times), transition and the frame's events.
fn controller_text(s: &ControllerState) -> Result<String, String> {
    let e = |e: sinew_jobs::controller::ControllerError| e.to_string();
    let mut out = String::new();
    for p in FLOAT_PARAMETERS {
        out += &format!("{p} {:?}, ", s.float(p).map_err(e)?);
    }
    for p in TRIGGERS {
        out += &format!("{p} {}, ", s.bool(p).map_err(e)?);
    }
    for layer in 0..s.controller().layer_count() {
        out += &format!(
            "\n  layer {layer}: {:?}, transition {:?}",
            s.playing(layer),
            s.transition(layer)
        );
    }
    out += &format!(
        "\n  events {:?}, {} transitions started",
        s.events(),
        s.transitions_started()
    );
    Ok(out)
}

/// An entity's state after a frame that must not depend on the crowd around it, as text:
/// `{:?}` prints each float's shortest round-trip form, so equal text is equal bits (NaN
/// aside, which is itself a failure of the pipeline's invariants).
fn state_after(store: &Store, e: Entity) -> Result<String, String> {
    let mut animations = String::new();
    for a in get::<Animations>(store, e)?.as_slice() {
        animations += &format!(
            "\n  {} time {:?} previous {:?} speed {:?} weight {:?} layer {}",
            a.clip.name(),
            a.time,
            a.previous_time,
            a.speed,
            a.weight,
            a.layer
        );
    }
    let at = |err: sinew_runtime::store::StoreError| format!("entity {e:?}: {err}");
    let controller = if store.has::<ControllerState>(e).map_err(at)? {
        controller_text(store.get::<ControllerState>(e).map_err(at)?)?
    } else {
        "none".into()
    };
    Ok(format!(
        "animations{animations}\nlayer weights {:?}\ncontroller {controller}\ntransform {:?}\n\
         root motion {:?}\ncurves {:?}\nevents {:?}\ncursors {:?}",
        get::<LayerWeights>(store, e)?,
        get::<EntityTransform>(store, e)?,
        get::<RootMotion>(store, e)?,
        get::<CurveValues>(store, e)?.values(),
        get::<FiredEvents>(store, e)?,
        get::<SamplingCursors>(store, e)?,
    ))
}

/// A sampled entity: its components before the frame and its palette range from
/// [`Animator::layout`] before the frame.
struct Sample {
    entity: Entity,
    before: Snapshot,
    layout_range: Range<usize>,
}

/// Compares one sample after the crowd's frame with the same entity animated alone with
/// `stages`: the crowd's range of it (layout, [`FrameSlot`] and `PaletteOffsets` must agree)
/// against the lone run's palette, bit for bit, and the state after the frame.
fn check_alone(
    s: &Sample,
    store: &Store,
    animator: &Animator,
    palette: &[PaletteEntry],
    stages: &PoseStages,
    dt: f32,
    frame: usize,
) -> Result<(), String> {
    let e = s.entity;
    let at = |what: String| format!("frame {frame}, entity {e:?}: {what}");
    let slot = get::<FrameSlot>(store, e)?;
    let range = slot.palette_offset as usize..(slot.palette_offset + slot.palette_count) as usize;
    let offset = animator.palette_offsets(store).get(e);
    if range != s.layout_range || offset != Some(slot.palette_offset) {
        return Err(at(format!(
            "palette range {range:?} (FrameSlot), {:?} (layout before the frame), \
             offset {offset:?} (PaletteOffsets) disagree",
            s.layout_range
        )));
    }
    let crowd = palette
        .get(range.clone())
        .ok_or_else(|| at(format!("range {range:?} outside the palette")))?;
    let crowd_state = state_after(store, e)?;
    for with_cursors in [true, false] {
        let mut before = s.before.clone();
        if !with_cursors {
            before.bundle.4 = SamplingCursors::default();
        }
        let mut lone = Store::new();
        let le = before.spawn(&mut lone).map_err(at)?;
        let mut animator = soak_animator(&mut lone, stages)?;
        animator
            .run_frame(&mut lone, dt)
            .map_err(|err| at(format!("lone frame: {err}")))?;
        let alone = animator.palettes(&lone);
        let label = if with_cursors {
            "alone (the crowd's cursors)"
        } else {
            "alone (no cursors)"
        };
        if alone.len() != crowd.len() {
            return Err(at(format!(
                "{} palette entries in the crowd, {} {label}",
                crowd.len(),
                alone.len()
            )));
        }
        let bits = |p: &PaletteEntry| p.map(f32::to_bits);
        if let Some(k) = (0..crowd.len()).find(|&k| bits(&crowd[k]) != bits(&alone[k])) {
            return Err(at(format!(
                "palette entry {k} differs: crowd {:?}, {label} {:?}",
                crowd[k], alone[k]
            )));
        }
        // Cursors too: a search from none must end where the crowd's cursors did.
        let lone_state = state_after(&lone, le)?;
        if crowd_state != lone_state {
            return Err(at(format!(
                "state after the frame differs:\ncrowd:\n{crowd_state}\n{label}:\n{lone_state}"
            )));
        }
    }
    Ok(())
}

/// Frame times in 10 µs buckets up to 10 ms, then 1 ms buckets up to 1 s: 8 KiB, touched
/// whole when made, so that neither a long run's statistics nor the rare slow frames of a
/// loaded machine (each reaching buckets not used before) grow the resident set being measured.
struct Histogram {
    buckets: Vec<u32>,
    max: Duration,
    n: u64,
}

impl Histogram {
    const FINE_US: u64 = 10;
    const FINE: usize = 1_000;
    const COARSE_US: u64 = 1_000;
    const COARSE: usize = 990;
    fn new() -> Self {
        Self {
            buckets: vec![0; Self::FINE + Self::COARSE],
            max: Duration::ZERO,
            n: 0,
        }
    }
    fn bucket(us: u64) -> usize {
        let fine_end = Self::FINE as u64 * Self::FINE_US;
        if us < fine_end {
            (us / Self::FINE_US) as usize
        } else {
            (Self::FINE + ((us - fine_end) / Self::COARSE_US) as usize)
                .min(Self::FINE + Self::COARSE - 1)
        }
    }
    /// The upper end of bucket `b`.
    fn upper_us(b: usize) -> u64 {
        if b < Self::FINE {
            (b as u64 + 1) * Self::FINE_US
        } else {
            Self::FINE as u64 * Self::FINE_US + (b - Self::FINE + 1) as u64 * Self::COARSE_US
        }
    }
    fn add(&mut self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.buckets[Self::bucket(us)] += 1;
        self.max = self.max.max(d);
        self.n += 1;
    }
    fn quantile(&self, q: f64) -> Duration {
        let target = ((self.n as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0u64;
        for (b, &c) in self.buckets.iter().enumerate() {
            seen += u64::from(c);
            if seen >= target {
                return Duration::from_micros(Self::upper_us(b)).min(self.max);
            }
        }
        self.max
    }
}

/// Runs the soak.
///
/// # Errors
/// A message naming the frame and entity on the first mismatch against a lone run, a memory
/// growth over the limit, a failed frame or bad options.
pub fn run_soak(opts: &SoakOptions) -> Result<SoakReport, String> {
    if opts.count == 0 || opts.check_every == 0 || !opts.dt.is_finite() || opts.dt <= 0.0 {
        return Err("count, check_every and dt must be positive".into());
    }
    if opts.frames.is_none() && opts.duration.is_none() {
        return Err("set frames or duration".into());
    }
    for (name, v) in [
        ("churn", opts.churn),
        ("clip_changes", opts.clip_changes),
        ("switch_share", opts.switch_share),
        ("mesh_swaps", opts.mesh_swaps),
    ] {
        if !(0.0..=1.0).contains(&v) {
            return Err(format!("{name} must be a fraction in [0, 1], got {v}"));
        }
    }
    let pool = ThreadPoolBuilder::new()
        .num_threads(opts.threads)
        .build()
        .map_err(|e| format!("thread pool: {e}"))?;
    pool.install(|| soak_in_pool(opts))
}

/// The crowd's entities and what changes them.
struct Crowd {
    model: Model,
    controller: Arc<Controller>,
    /// The crowd's IK inputs (foot placement, look-at at the camera).
    procedural: Procedural,
    tilt: HeadTilt,
    /// The second mesh: a simplified level of the first, same bones.
    lod_mesh: Arc<SkinnedMesh>,
    grid: usize,
    entities: Vec<Entity>,
    /// Which character each entity is (for its grid place, parameters and wave phase).
    ids: Vec<u64>,
    next_id: u64,
}

impl Crowd {
    fn new(model: Model, lod_mesh: Arc<SkinnedMesh>, count: usize) -> Result<Self, String> {
        let controller = crowd::model_controller(&model)?.ok_or(
            "the soak's model has no crowd controller (only the built-in character has one)",
        )?;
        let grid = (count as f64).sqrt().ceil() as usize;
        let eye = ground::camera_eye(grid, crowd::SPACING);
        let procedural = Procedural::for_rig(&model.rig, eye)
            .ok_or("the built-in rig lacks the bones of foot placement and look-at")?;
        let head = model
            .rig
            .find_by_name("head")
            .ok_or("the built-in rig has no head bone")?
            .get();
        Ok(Self {
            model,
            controller,
            procedural,
            tilt: HeadTilt { head },
            lod_mesh,
            grid,
            entities: Vec::with_capacity(count),
            ids: Vec::with_capacity(count),
            next_id: count as u64,
        })
    }

    /// Spawns character `id` as `crowd` does (driven by the controller, or playing
    /// [`crowd::animations_for`]'s plain list), with the crowd's IK inputs and the user
    /// stage's.
    fn spawn(&self, store: &mut Store, id: u64, controlled: bool) -> Result<Entity, String> {
        let controller = controlled.then_some(&self.controller);
        let e = crowd::spawn_character(store, &self.model, controller, id, self.grid)?;
        self.procedural.equip(store, e)?;
        store
            .insert(e, self.tilt)
            .map_err(|err| format!("head tilt: {err}"))?;
        Ok(e)
    }

    /// Despawns the entity in `slot` and spawns character `id` there.
    fn respawn(
        &mut self,
        store: &mut Store,
        slot: usize,
        id: u64,
        controlled: bool,
    ) -> Result<Entity, String> {
        store
            .despawn(self.entities[slot])
            .map_err(|e| format!("despawn: {e}"))?;
        let e = self.spawn(store, id, controlled)?;
        self.entities[slot] = e;
        self.ids[slot] = id;
        Ok(e)
    }

    fn pick(&self, frame: usize, k: usize, salt: u64) -> usize {
        (hash01(frame as u64, k as u64 ^ (salt << 40)) * self.entities.len() as f32) as usize
            % self.entities.len()
    }

    /// A new plain animation list: another character's blend (a new speed, phase, maybe the
    /// wave), or idle (Hermite keys, the per-bone sampling path) with breathing.
    fn new_animations(&self, id: u64) -> Vec<AnimationToProcess> {
        match &self.model.kind {
            ModelKind::Builtin { idle, breathe, .. } if id.is_multiple_of(3) => vec![
                AnimationToProcess::new(idle.clone()).at(hash01(id, 7) * idle.duration()),
                AnimationToProcess::new(breathe.clone())
                    .at(hash01(id, 8) * breathe.duration())
                    .layer(2, BlendMode::Additive),
            ],
            _ => crowd::animations_for(&self.model, id),
        }
    }
}

/// What a clip change did.
enum Change {
    Parameters,
    List,
    Switch,
}

/// Changes the animation of the entity in `slot` as a game would, by draw `draw`: switches it
/// between the controller and a plain list (respawned as the same character with the other
/// bundle), or gives a controller-driven character a new speed (from standing to past the run:
/// another blend of idle, walk and run), with the wave trigger one time in three, or a plain
/// one a new list.
fn change_clip(
    crowd: &mut Crowd,
    store: &mut Store,
    slot: usize,
    draw: u64,
    switch_share: f32,
) -> Result<(Entity, Change), String> {
    let e = crowd.entities[slot];
    let controlled = store
        .has::<ControllerState>(e)
        .map_err(|err| format!("clip change: {err}"))?;
    if hash01(draw, 10) < switch_share {
        let id = crowd.ids[slot];
        let e = crowd.respawn(store, slot, id, !controlled)?;
        return Ok((e, Change::Switch));
    }
    if !controlled {
        let list = crowd.new_animations(draw);
        store
            .get_mut::<Animations>(e)
            .map_err(|err| format!("clip change: {err}"))?
            .set(list);
        return Ok((e, Change::List));
    }
    let s = store
        .get_mut::<ControllerState>(e)
        .map_err(|err| format!("parameter change: {err}"))?;
    let err = |err: sinew_jobs::controller::ControllerError| format!("parameter change: {err}");
    let speed = 1.2 * RUN_SPEED * hash01(draw, 9);
    s.set_float("speed", speed.min(RUN_SPEED)).map_err(err)?;
    s.set_float("pace", (speed / RUN_SPEED).max(1.0))
        .map_err(err)?;
    if draw.is_multiple_of(3) {
        s.set_trigger("wave").map_err(err)?;
    }
    Ok((e, Change::Parameters))
}

fn soak_in_pool(opts: &SoakOptions) -> Result<SoakReport, String> {
    let registry = AssetRegistry::new();
    let model = crowd::load_model(&crowd::CrowdOptions::default(), &registry)?;
    let lod = lod_chain(&model.mesh, &[0.5]).map_err(|e| format!("mesh LOD: {e}"))?;
    let lod_mesh = registry.mesh(lod.into_iter().next().ok_or("mesh LOD: no level")?.mesh);
    if lod_mesh.bone_count() != model.mesh.bone_count()
        || lod_mesh.indices().len() >= model.mesh.indices().len()
    {
        return Err("mesh LOD: the second mesh must be smaller with the same bones".into());
    }
    let mut crowd = Crowd::new(model, lod_mesh, opts.count)?;
    let mut store = Store::new();
    for id in 0..opts.count as u64 {
        let e = crowd.spawn(&mut store, id, true)?;
        crowd.entities.push(e);
        crowd.ids.push(id);
    }
    let stages = soak_stages();
    let mut animator = soak_animator(&mut store, &stages)?;
    check_stages_reach_palettes(&crowd, opts.dt)?;

    let per_second = |share: f32| ((opts.count as f32) * share).round() as usize;
    let fps = (1.0 / opts.dt).round().max(3.0) as usize;
    let mut report = SoakReport {
        count: opts.count,
        threads: rayon::current_num_threads(),
        load: (loadavg(), String::new()),
        ..Default::default()
    };
    if opts.heap_probe.is_some() {
        // Reserved up front, so that recording does not grow the heap being measured.
        report
            .live_heap
            .reserve(opts.frames.map_or(1 << 16, |n| n / opts.check_every + 1));
    }
    let mut hist = Histogram::new();
    let mut palette: Vec<PaletteEntry> =
        vec![[0.0; 12]; opts.count * crowd.model.mesh.bone_count()];
    let mut touched: Vec<Entity> = Vec::with_capacity(opts.count);
    let mut samples: Vec<Sample> = Vec::with_capacity(opts.samples);
    let start = Instant::now();
    let mut last_progress = start;
    for frame in 0.. {
        let elapsed = start.elapsed();
        if opts.frames.is_some_and(|n| frame >= n) || opts.duration.is_some_and(|d| elapsed >= d) {
            break;
        }
        // Churn, clip changes and mesh swaps fall on different frames of each simulated second,
        // so that checks (every 100 frames: 40, 20, 0 mod 60) meet each kind in turn.
        touched.clear();
        if frame > 0 && frame % fps == 0 {
            for k in 0..per_second(opts.churn) {
                let slot = crowd.pick(frame, k, 1);
                let id = crowd.next_id;
                crowd.next_id += 1;
                let e = crowd
                    .respawn(&mut store, slot, id, true)
                    .map_err(|e| format!("churn {e}"))?;
                report.churned += 1;
                touched.push(e);
            }
        }
        if frame % fps == fps / 3 {
            for k in 0..per_second(opts.clip_changes) {
                let slot = crowd.pick(frame, k, 2);
                let draw = crowd.next_id;
                crowd.next_id += 1;
                let (e, change) =
                    change_clip(&mut crowd, &mut store, slot, draw, opts.switch_share)?;
                match change {
                    Change::Parameters => report.parameter_changes += 1,
                    Change::List => report.lists_replaced += 1,
                    Change::Switch => report.switches += 1,
                }
                touched.push(e);
            }
        }
        if frame % fps == 2 * fps / 3 {
            for k in 0..per_second(opts.mesh_swaps) {
                let e = crowd.entities[crowd.pick(frame, k, 3)];
                let skin = store
                    .get_mut::<SkinRef>(e)
                    .map_err(|err| format!("mesh swap: {err}"))?;
                skin.mesh = if Arc::ptr_eq(&skin.mesh, &crowd.model.mesh) {
                    crowd.lod_mesh.clone()
                } else {
                    crowd.model.mesh.clone()
                };
                report.mesh_swaps += 1;
                touched.push(e);
            }
        }
        // The crowd's own waves: every fourth controller-driven character, once in a while.
        for (&e, &id) in crowd.entities.iter().zip(&crowd.ids) {
            let wave = |err: &dyn std::fmt::Display| format!("wave: {err}");
            if crowd::waves_at(id, frame as u64)
                && store.has::<ControllerState>(e).map_err(|e| wave(&e))?
            {
                store
                    .get_mut::<ControllerState>(e)
                    .map_err(|e| wave(&e))?
                    .set_trigger("wave")
                    .map_err(|e| wave(&e))?;
            }
        }
        let dt = opts.dt * (0.75 + 0.5 * hash01(frame as u64, 0x50a4));
        let check = frame % opts.check_every == 0;
        if check {
            // Memory first, before the lone runs allocate.
            let live = opts.heap_probe.map(|probe| probe());
            if let Some(live) = live {
                report.live_heap.push((frame, live));
            }
            let rss = resident_bytes().unwrap_or(0);
            if let Some(w) = opts.memory_warmup
                && elapsed >= w
            {
                match report.rss_baseline {
                    None => {
                        report.rss_baseline = Some(rss);
                        report.live_heap_baseline = live;
                    }
                    Some(_) => {
                        report.rss_max_after = Some(report.rss_max_after.unwrap_or(0).max(rss));
                        report.live_heap_max_after =
                            live.map(|l| report.live_heap_max_after.unwrap_or(0).max(l));
                    }
                }
            }
            samples.clear();
            // A churn pick can despawn an entity spawned earlier in the same frame.
            let mut picks: Vec<Entity> = Vec::with_capacity(opts.samples);
            for &e in &touched {
                if picks.len() < opts.samples / 2 && store.contains(e) && !picks.contains(&e) {
                    picks.push(e);
                }
            }
            let mut k = 0;
            while picks.len() < opts.samples.min(crowd.entities.len()) {
                let e = crowd.entities[crowd.pick(frame, k, 4)];
                if !picks.contains(&e) {
                    picks.push(e);
                }
                k += 1;
            }
            let layout = animator
                .layout(&mut store)
                .map_err(|e| format!("frame {frame} layout: {e}"))?;
            let ranges: Vec<Option<Range<usize>>> =
                picks.iter().map(|&e| layout.palette_range(e)).collect();
            for (e, range) in picks.into_iter().zip(ranges) {
                let layout_range = range
                    .ok_or_else(|| format!("frame {frame}: entity {e:?} has no palette range"))?;
                samples.push(Sample {
                    entity: e,
                    before: Snapshot::of(&store, e)?,
                    layout_range,
                });
            }
        }
        let t0 = Instant::now();
        animator
            .run_frame_into(&mut store, dt, &mut palette)
            .map_err(|e| format!("frame {frame}: {e}"))?;
        hist.add(t0.elapsed());
        report.frames += 1;
        report.simulated_s += f64::from(dt);
        if frame == 0 {
            report.rss_first = resident_bytes().unwrap_or(0);
        }
        if check {
            for s in &samples {
                check_alone(s, &store, &animator, &palette, &stages, dt, frame)?;
            }
            report.checks += 1;
            report.entities_checked += samples.len();
            report.controlled_checked += samples
                .iter()
                .filter(|s| s.before.controller.is_some())
                .count();
        }
        if let Some(every) = opts.progress
            && last_progress.elapsed() >= every
        {
            last_progress = Instant::now();
            let live = match opts.heap_probe {
                Some(probe) => format!(" ({:.2} MiB live heap)", probe() as f64 / 1048576.0),
                None => String::new(),
            };
            eprintln!(
                "soak: {:>6.1} s, frame {frame}, {} checks, {:.2} MiB resident{live}, median frame {:.2} ms, load {}",
                start.elapsed().as_secs_f64(),
                report.checks,
                resident_bytes().unwrap_or(0) as f64 / 1048576.0,
                hist.quantile(0.5).as_secs_f64() * 1e3,
                loadavg()
            );
        }
    }
    for &e in &crowd.entities {
        if store
            .has::<ControllerState>(e)
            .map_err(|err| format!("entity {e:?}: {err}"))?
        {
            report.controlled_last += 1;
        }
    }
    report.wall = start.elapsed();
    report.rss_last = resident_bytes().unwrap_or(0);
    report.frame_median = hist.quantile(0.5);
    report.frame_p99 = hist.quantile(0.99);
    report.frame_max = hist.max;
    report.load.1 = loadavg();
    if let Some(g) = report.memory_growth()
        && g > opts.max_memory_growth
    {
        let live = match report.live_heap_growth() {
            Some(l) => format!(
                "; the live heap grew by {:.3} % ({} -> {} bytes)",
                l * 100.0,
                report.live_heap_baseline.unwrap_or(0),
                report.live_heap_max_after.unwrap_or(0)
            ),
            None => String::new(),
        };
        return Err(format!(
            "resident memory grew by {:.2} % after the warm-up ({} -> {} bytes), over the {:.2} % allowed{live}",
            g * 100.0,
            report.rss_baseline.unwrap_or(0),
            report.rss_max_after.unwrap_or(0),
            opts.max_memory_growth * 100.0
        ));
    }
    if let Some(g) = report.live_heap_growth()
        && g > opts.max_memory_growth
    {
        return Err(format!(
            "the live heap grew by {:.2} % after the warm-up ({} -> {} bytes), over the {:.2} % allowed",
            g * 100.0,
            report.live_heap_baseline.unwrap_or(0),
            report.live_heap_max_after.unwrap_or(0),
            opts.max_memory_growth * 100.0
        ));
    }
    Ok(report)
}

/// Each stage must reach the palettes (else the soak would test a no-op): one
/// controller-driven character run with the soak's stages must differ in a palette entry from
/// the same character run without the user stage, and without the crowd's IK stages.
fn check_stages_reach_palettes(crowd: &Crowd, dt: f32) -> Result<(), String> {
    let run = |stages: &PoseStages| -> Result<Vec<PaletteEntry>, String> {
        let mut store = Store::new();
        crowd.spawn(&mut store, 0, true)?;
        let mut animator = soak_animator(&mut store, stages)?;
        animator
            .run_frame(&mut store, dt)
            .map_err(|e| e.to_string())?;
        Ok(animator.palettes(&store).to_vec())
    };
    let all = run(&soak_stages())?;
    if all == run(&ground::stages())? {
        return Err("the head-tilt stage changes no palette entry".into());
    }
    if all == run(&PoseStages::new().with(HeadTiltStage))? {
        return Err("foot placement and look-at change no palette entry".into());
    }
    Ok(())
}

/// The report as text.
pub fn format_report(r: &SoakReport, opts: &SoakOptions) -> String {
    let mib = |b: u64| b as f64 / 1048576.0;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut out = format!(
        "sinew soak: {} built-in characters, {} threads, {} frames ({:.0} s simulated) in {:.1} s\n",
        r.count,
        r.threads,
        r.frames,
        r.simulated_s,
        r.wall.as_secs_f64()
    );
    out += &format!(
        "  changes         {} churned, {} clip changes ({} parameter changes, {} plain lists replaced, {} switches between controller and plain list), {} meshes swapped\n",
        r.churned,
        r.clip_changes(),
        r.parameter_changes,
        r.lists_replaced,
        r.switches,
        r.mesh_swaps
    );
    out += &format!(
        "  crowd           {} of {} characters controller-driven at the end, all with foot placement, look-at and the head-tilt stage\n",
        r.controlled_last, r.count
    );
    out += &format!(
        "  checks          {} checks, {} entities ({} controller-driven) equal to their lone runs bit for bit (x2: with and without cursors)\n",
        r.checks, r.entities_checked, r.controlled_checked
    );
    out += &format!(
        "  frame time      median {:.3} ms, p99 {:.3} ms, max {:.3} ms\n",
        ms(r.frame_median),
        ms(r.frame_p99),
        ms(r.frame_max)
    );
    out += &format!(
        "  resident        {:.2} MiB after frame 0, {:.2} MiB at the end\n",
        mib(r.rss_first),
        mib(r.rss_last)
    );
    match (r.rss_baseline, r.rss_max_after, r.memory_growth()) {
        (Some(b), Some(m), Some(g)) => {
            out += &format!(
                "  memory check    baseline {:.2} MiB after {} s, max after {:.2} MiB: {:+.3} % (limit {:.2} %)\n",
                mib(b),
                opts.memory_warmup.map_or(0, |w| w.as_secs()),
                mib(m),
                g * 100.0,
                opts.max_memory_growth * 100.0
            )
        }
        _ => out += "  memory check    not made (the run ended before the warm-up was over)\n",
    }
    if let (Some(b), Some(m), Some(g)) = (
        r.live_heap_baseline,
        r.live_heap_max_after,
        r.live_heap_growth(),
    ) {
        out += &format!(
            "  live heap       baseline {:.2} MiB, max after {:.2} MiB: {:+.3} % (counted by the allocator)\n",
            mib(b),
            mib(m),
            g * 100.0
        );
    }
    out += &format!(
        "  load average    {} at the start, {} at the end\n",
        r.load.0, r.load.1
    );
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // a failed unwrap is the test failing

    use super::*;

    /// Quantiles come from the bucket that holds them, in both bucket widths.
    #[test]
    fn histogram_quantiles_fall_in_the_right_bucket() {
        let mut h = Histogram::new();
        for _ in 0..50 {
            h.add(Duration::from_micros(5));
        }
        for _ in 0..49 {
            h.add(Duration::from_micros(25_500));
        }
        h.add(Duration::from_millis(1_500));
        assert_eq!(h.quantile(0.5), Duration::from_micros(10));
        // 25.5 ms is in the coarse bucket [25 ms, 26 ms).
        assert_eq!(h.quantile(0.99), Duration::from_millis(26));
        // Past 1 s everything shares the last bucket; the maximum is kept exactly.
        assert_eq!(h.quantile(1.0), Duration::from_millis(1_000));
        assert_eq!(h.max, Duration::from_millis(1_500));
        assert_eq!(h.buckets.len() * 4, 7_960);
    }

    /// A crowd of `n` controller-driven characters and its animator with the soak's stages,
    /// after `frames` frames; `plain` of them (the first) are switched to plain lists.
    fn small_crowd(n: u64, plain: usize, frames: usize) -> (Crowd, Store, Animator) {
        let registry = AssetRegistry::new();
        let model = crowd::load_model(&crowd::CrowdOptions::default(), &registry).unwrap();
        let mesh = model.mesh.clone();
        let mut crowd = Crowd::new(model, mesh, n as usize).unwrap();
        let mut store = Store::new();
        for id in 0..n {
            let e = crowd.spawn(&mut store, id, true).unwrap();
            crowd.entities.push(e);
            crowd.ids.push(id);
        }
        for slot in 0..plain {
            crowd.respawn(&mut store, slot, slot as u64, false).unwrap();
        }
        let mut animator = soak_animator(&mut store, &soak_stages()).unwrap();
        for _ in 0..frames {
            animator.run_frame(&mut store, 0.02).unwrap();
        }
        (crowd, store, animator)
    }

    /// One more frame of the crowd into a palette slice, with `entity` sampled before it.
    fn frame_with_sample(
        store: &mut Store,
        animator: &mut Animator,
        entity: Entity,
    ) -> (Sample, Vec<PaletteEntry>) {
        let layout = animator.layout(store).unwrap();
        let (layout_range, len) = (layout.palette_range(entity).unwrap(), layout.palette_len());
        let sample = Sample {
            entity,
            before: Snapshot::of(store, entity).unwrap(),
            layout_range,
        };
        let mut palette = vec![[0.0f32; 12]; len];
        animator.run_frame_into(store, 0.02, &mut palette).unwrap();
        (sample, palette)
    }

    /// The comparison can fail: one flipped bit in the crowd's palette of a sampled
    /// controller-driven entity is reported, naming the entry, and so is one in its state.
    #[test]
    fn a_flipped_palette_bit_is_reported() {
        let (crowd, mut store, mut animator) = small_crowd(3, 0, 30);
        let e = crowd.entities[1];
        let (sample, mut palette) = frame_with_sample(&mut store, &mut animator, e);
        assert!(sample.before.controller.is_some());
        let stages = soak_stages();
        check_alone(&sample, &store, &animator, &palette, &stages, 0.02, 0).unwrap();
        let k = sample.layout_range.start + 3;
        palette[k][5] = f32::from_bits(palette[k][5].to_bits() ^ 1);
        let err = check_alone(&sample, &store, &animator, &palette, &stages, 0.02, 0).unwrap_err();
        assert!(err.contains("palette entry 3 differs"), "{err}");
        // And the state: a root-motion result off by one bit.
        palette[k][5] = f32::from_bits(palette[k][5].to_bits() ^ 1);
        let t = store.get_mut::<EntityTransform>(e).unwrap();
        t.0.translation.x = f32::from_bits(t.0.translation.x.to_bits() ^ 1);
        let err = check_alone(&sample, &store, &animator, &palette, &stages, 0.02, 0).unwrap_err();
        assert!(err.contains("state after the frame differs"), "{err}");
    }

    /// The lone run needs the crowd's stages: animated alone without foot placement and the
    /// look-at, a controller-driven and a plain entity both differ from the crowd's.
    #[test]
    fn a_lone_run_without_the_ik_stages_differs() {
        let (crowd, mut store, mut animator) = small_crowd(4, 1, 10);
        for slot in [0, 2] {
            let e = crowd.entities[slot];
            let (sample, palette) = frame_with_sample(&mut store, &mut animator, e);
            assert_eq!(sample.before.controller.is_some(), slot != 0);
            check_alone(
                &sample,
                &store,
                &animator,
                &palette,
                &soak_stages(),
                0.02,
                0,
            )
            .unwrap();
            let without_ik = PoseStages::new().with(HeadTiltStage);
            let err = check_alone(&sample, &store, &animator, &palette, &without_ik, 0.02, 0)
                .unwrap_err();
            assert!(
                err.contains("palette entry") && err.contains("differs"),
                "{err}"
            );
        }
    }

    /// The lone run needs the controller state as the crowd had it: a snapshot given another
    /// character's state (another speed) differs.
    #[test]
    fn a_lone_run_with_another_controller_state_differs() {
        let (crowd, mut store, mut animator) = small_crowd(3, 0, 10);
        let (mut sample, palette) = frame_with_sample(&mut store, &mut animator, crowd.entities[1]);
        let stages = soak_stages();
        check_alone(&sample, &store, &animator, &palette, &stages, 0.02, 0).unwrap();
        let other = store.get::<ControllerState>(crowd.entities[2]).unwrap();
        assert_ne!(
            other.float("speed").unwrap(),
            sample
                .before
                .controller
                .as_ref()
                .unwrap()
                .float("speed")
                .unwrap()
        );
        sample.before.controller = Some(other.clone());
        let err = check_alone(&sample, &store, &animator, &palette, &stages, 0.02, 0).unwrap_err();
        assert!(err.contains("differs"), "{err}");
    }

    /// A head bone outside the rig fails the frame, naming the stage and the bone.
    #[test]
    fn the_head_tilt_stage_refuses_a_bone_outside_the_rig() {
        let (crowd, mut store, mut animator) = small_crowd(2, 0, 0);
        let bones = crowd.model.rig.bone_count();
        store
            .insert(crowd.entities[1], HeadTilt { head: bones })
            .unwrap();
        let err = animator
            .run_frame(&mut store, 0.02)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("soak head tilt") && err.contains(&format!("bone {bones} out of range")),
            "{err}"
        );
    }
}
