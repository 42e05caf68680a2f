//! The soak run (issue #18, point 5): the default crowd (the built-in character with the crowd
//! example's blends and layers) run for a long time on few threads, with churn, clip changes,
//! mesh swaps and a user stage between propagation and skinning.
//!
//! Every `check_every` frames a sample of entities is snapshotted before the frame and, after
//! the crowd's frame, each is spawned alone into a fresh store with a fresh [`Animator`] built
//! the same way and run for one frame with the same `dt`: its palette and its state after the
//! frame must equal the crowd's, bit for bit. Each sample is run alone twice, with the crowd's
//! sampling cursors and with none: a key search from none must end where the crowd's did.
//! Resident memory
//! (`/proc/self/statm`) is sampled at the checks and must not grow by more than
//! `max_memory_growth` after `memory_warmup`; with a heap probe (the example's counting
//! allocator) the live heap is sampled too and held to the same limit, which tells growth of
//! what the program holds from growth of the allocator's free lists.

use crate::crowd::{self, CrowdBundle, Model, ModelKind, hash01};
use glam::Affine3A;
use rayon::ThreadPoolBuilder;
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{AssetRegistry, SkinnedMesh, bone_hash, lod_chain};
use sinew_jobs::component::{
    AnimationToProcess, Animations, BlendMode, CurveValues, EntityTransform, FiredEvents,
    FrameSlot, LayerWeights, RigRef, RootMotion, SamplingCursors, SkinRef,
};
use sinew_jobs::frame::{ModelPoses, PaletteEntry};
use sinew_jobs::pipeline::{PipelineConfig, PoseChain};
use sinew_runtime::graph::{Access, FnNode, NodeError};
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
    /// Share of the crowd given a new animation list every simulated second.
    pub clip_changes: f32,
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
    /// Entities despawned and respawned.
    pub churned: u64,
    /// Animation lists replaced.
    pub clip_changes: u64,
    /// Meshes swapped.
    pub mesh_swaps: u64,
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

/// The user stage: tilts each head bone in model space, about its own X axis, by an angle that
/// depends on the head's model-space height, so that each entity's edit depends on its own pose
/// (an entity given another's pose or slot would show up in the comparison).
fn head_tilt() -> impl sinew_runtime::graph::Node + 'static {
    let head = bone_hash("head");
    FnNode::new(
        "soak head tilt",
        Access::new()
            .read::<FrameSlot>()
            .read::<RigRef>()
            .write::<ModelPoses>(),
        move |ctx| {
            let mut model = ctx
                .resource_mut::<ModelPoses>()
                .map_err(NodeError::from_error)?;
            let mut q = ctx
                .query::<(&FrameSlot, &RigRef)>()
                .map_err(NodeError::from_error)?
                .with::<Animations>()
                .with::<LayerWeights>();
            let mut missing = None;
            q.for_each(|e, (slot, rig)| {
                let Some(h) = rig.0.find(head) else { return };
                let i = slot.bone_offset as usize + h.get();
                match model.0.get_mut(i) {
                    Some(m) if h.get() < slot.bone_count as usize => {
                        let angle = 0.1 + 0.2 * (m.translation.y * 7.0).sin();
                        *m *= Affine3A::from_rotation_x(angle);
                    }
                    _ => missing = Some(e),
                }
            });
            match missing {
                Some(e) => Err(NodeError::new(format!(
                    "entity {e:?}: head bone outside this frame's model poses"
                ))),
                None => Ok(()),
            }
        },
    )
}

/// The soak's animator: the staged pipeline with `head_tilt` between propagation and
/// skinning. The crowd and every lone run build it the same way.
pub fn soak_animator(store: &mut Store) -> Result<Animator, String> {
    let config = PipelineConfig {
        pose_chain: PoseChain::Staged,
        ..Default::default()
    };
    Animator::with(store, config, |b, nodes| {
        let tilt = b.add_node(head_tilt());
        b.add_edge(nodes.propagate, tilt)
            .add_edge(tilt, nodes.skinning);
    })
    .map_err(|e| format!("soak graph: {e}"))
}

fn get<T: Component + Clone>(store: &Store, e: Entity) -> Result<T, String> {
    store
        .get::<T>(e)
        .cloned()
        .map_err(|err| format!("entity {e:?}: {err}"))
}

fn snapshot(store: &Store, e: Entity) -> Result<CrowdBundle, String> {
    Ok((
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
    ))
}

/// An entity's state after a frame that must not depend on the crowd around it, as text:
/// `{:?}` prints each float's shortest round-trip form, so equal text is equal bits (NaN
/// aside, which is itself a failure of the pipeline's invariants).
fn state_after(store: &Store, e: Entity) -> Result<String, String> {
    let times: Vec<(f32, f32)> = store
        .get::<Animations>(e)
        .map_err(|err| format!("entity {e:?}: {err}"))?
        .as_slice()
        .iter()
        .map(|a| (a.time, a.previous_time))
        .collect();
    Ok(format!(
        "times {times:?}\ntransform {:?}\nroot motion {:?}\ncurves {:?}\nevents {:?}\ncursors {:?}",
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
    before: CrowdBundle,
    layout_range: Range<usize>,
}

/// Compares one sample after the crowd's frame with the same entity animated alone: the
/// crowd's range of it (layout, [`FrameSlot`] and `PaletteOffsets` must agree) against the lone
/// run's palette, bit for bit, and the state after the frame.
fn check_alone(
    s: &Sample,
    store: &Store,
    animator: &Animator,
    palette: &[PaletteEntry],
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
        let mut bundle = s.before.clone();
        if !with_cursors {
            bundle.4 = SamplingCursors::default();
        }
        let mut lone = Store::new();
        let le = lone.spawn(bundle).map_err(|err| at(err.to_string()))?;
        let mut animator = soak_animator(&mut lone)?;
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
    /// The second mesh: a simplified level of the first, same bones.
    lod_mesh: Arc<SkinnedMesh>,
    grid: usize,
    entities: Vec<Entity>,
    next_id: u64,
}

impl Crowd {
    fn pick(&self, frame: usize, k: usize, salt: u64) -> usize {
        (hash01(frame as u64, k as u64 ^ (salt << 40)) * self.entities.len() as f32) as usize
            % self.entities.len()
    }

    /// A new animation list: another character's blend (a new speed, phase, maybe the wave),
    /// or idle (Hermite keys, the per-bone sampling path) with breathing.
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
    let grid = (opts.count as f64).sqrt().ceil() as usize;
    let mut store = Store::new();
    let entities = store
        .spawn_batch((0..opts.count as u64).map(|i| crowd::character(&model, i, grid, None)))
        .map_err(|e| format!("spawn: {e}"))?;
    let mut crowd = Crowd {
        model,
        lod_mesh,
        grid,
        entities,
        next_id: opts.count as u64,
    };
    let mut animator = soak_animator(&mut store)?;
    check_stage_reaches_palettes(&crowd, opts.dt)?;

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
                store
                    .despawn(crowd.entities[slot])
                    .map_err(|e| format!("churn despawn: {e}"))?;
                let e = store
                    .spawn(crowd::character(
                        &crowd.model,
                        crowd.next_id,
                        crowd.grid,
                        None,
                    ))
                    .map_err(|e| format!("churn spawn: {e}"))?;
                crowd.entities[slot] = e;
                crowd.next_id += 1;
                report.churned += 1;
                touched.push(e);
            }
        }
        if frame % fps == fps / 3 {
            for k in 0..per_second(opts.clip_changes) {
                let e = crowd.entities[crowd.pick(frame, k, 2)];
                let list = crowd.new_animations(crowd.next_id);
                crowd.next_id += 1;
                store
                    .get_mut::<Animations>(e)
                    .map_err(|err| format!("clip change: {err}"))?
                    .set(list);
                report.clip_changes += 1;
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
                    before: snapshot(&store, e)?,
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
                check_alone(s, &store, &animator, &palette, dt, frame)?;
            }
            report.checks += 1;
            report.entities_checked += samples.len();
        }
        if let Some(every) = opts.progress
            && last_progress.elapsed() >= every
        {
            last_progress = Instant::now();
            eprintln!(
                "soak: {:>6.1} s, frame {frame}, {} checks, {:.1} MiB resident, median frame {:.2} ms, load {}",
                start.elapsed().as_secs_f64(),
                report.checks,
                resident_bytes().unwrap_or(0) as f64 / 1048576.0,
                hist.quantile(0.5).as_secs_f64() * 1e3,
                loadavg()
            );
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
        return Err(format!(
            "resident memory grew by {:.2} % after the warm-up ({} -> {} bytes), over the {:.2} % allowed",
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

/// The user stage must reach the palettes (else the soak would test a no-op): one character,
/// with and without the stage, must differ in a palette entry.
fn check_stage_reaches_palettes(crowd: &Crowd, dt: f32) -> Result<(), String> {
    let run = |stage: bool| -> Result<Vec<PaletteEntry>, String> {
        let mut store = Store::new();
        store
            .spawn(crowd::character(&crowd.model, 0, crowd.grid, None))
            .map_err(|e| e.to_string())?;
        let mut animator = if stage {
            soak_animator(&mut store)?
        } else {
            let config = PipelineConfig {
                pose_chain: PoseChain::Staged,
                ..Default::default()
            };
            Animator::with(&mut store, config, |_, _| {}).map_err(|e| e.to_string())?
        };
        animator
            .run_frame(&mut store, dt)
            .map_err(|e| e.to_string())?;
        Ok(animator.palettes(&store).to_vec())
    };
    if run(true)? == run(false)? {
        return Err("the head-tilt stage changes no palette entry".into());
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
        "  changes         {} churned, {} animation lists replaced, {} meshes swapped\n",
        r.churned, r.clip_changes, r.mesh_swaps
    );
    out += &format!(
        "  checks          {} checks, {} entities equal to their lone runs bit for bit (x2: with and without cursors)\n",
        r.checks, r.entities_checked
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

    /// The comparison can fail: one flipped bit in the crowd's palette of a sampled entity is
    /// reported, naming the entry.
    #[test]
    fn a_flipped_palette_bit_is_reported() {
        let registry = AssetRegistry::new();
        let model = crowd::load_model(&crowd::CrowdOptions::default(), &registry).unwrap();
        let mut store = Store::new();
        let entities: Vec<Entity> = (0..3)
            .map(|i| store.spawn(crowd::character(&model, i, 2, None)).unwrap())
            .collect();
        let mut animator = soak_animator(&mut store).unwrap();
        let len = animator.layout(&mut store).unwrap().palette_len();
        let layout_range = animator
            .layout(&mut store)
            .unwrap()
            .palette_range(entities[1])
            .unwrap();
        let sample = Sample {
            entity: entities[1],
            before: snapshot(&store, entities[1]).unwrap(),
            layout_range: layout_range.clone(),
        };
        let mut palette = vec![[0.0f32; 12]; len];
        animator
            .run_frame_into(&mut store, 0.02, &mut palette)
            .unwrap();
        check_alone(&sample, &store, &animator, &palette, 0.02, 0).unwrap();
        let k = layout_range.start + 3;
        palette[k][5] = f32::from_bits(palette[k][5].to_bits() ^ 1);
        let err = check_alone(&sample, &store, &animator, &palette, 0.02, 0).unwrap_err();
        assert!(err.contains("palette entry 3 differs"), "{err}");
        // And the state: a root-motion result off by one bit.
        palette[k][5] = f32::from_bits(palette[k][5].to_bits() ^ 1);
        let t = store.get_mut::<EntityTransform>(entities[1]).unwrap();
        t.0.translation.x = f32::from_bits(t.0.translation.x.to_bits() ^ 1);
        let err = check_alone(&sample, &store, &animator, &palette, 0.02, 0).unwrap_err();
        assert!(err.contains("state after the frame differs"), "{err}");
    }
}
