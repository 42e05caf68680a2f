//! The crowd: N characters on a grid, each driven by an animation controller
//! ([`crowd_controller`]): a locomotion blend tree by speed (idle, walk, run) on the base
//! layer, a wave state on a masked upper-body layer entered by a trigger, additive breathing.
//! Root motion moves them and footstep events are counted. The built-in characters walk on a
//! gentle height field with their feet placed on it, heads looking at the camera within a cone
//! ([`crate::ground`]). Runs the nine-job graph and the controller and measures them. A glTF
//! model, and the LOD crowd, play plain clips.

use crate::crowd_gpu::{self, GpuSummary, GpuUse};
use crate::lod::{LodState, LodSummary};
use glam::{Quat, Vec3};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::ThreadPoolBuilder;
use sinew_fixtures::builtin::{self, BakedCharacter, FOOTSTEP, RUN_SPEED, WALK_SPEED};
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{AssetRegistry, Clip, SkinnedMesh, Transform, bone_hash};
use sinew_jobs::component::{
    AnimationToProcess, Animations, BlendMode, CurveValues, EntityTransform, EventSource,
    FiredEvents, FrameSlot, LayerWeights, RigRef, RootMotion, SamplingCursors, SkinRef,
};
use sinew_jobs::controller::{
    Controller, ControllerAssets, ControllerEventKind, ControllerState, RawBlendTree, RawCondition,
    RawController, RawLayer, RawMotion, RawState, RawTransition,
};
use sinew_jobs::frame::PaletteEntry;
use sinew_jobs::import::import_gltf;
use sinew_jobs::lod::LodSwitch;
use sinew_runtime::store::{Entity, Store};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Clone, Debug)]
pub struct CrowdOptions {
    /// Characters.
    pub count: usize,
    /// Frames to run (after one warm-up frame).
    pub frames: usize,
    /// Worker threads (0 = rayon's default, one per core).
    pub threads: usize,
    /// Share of the crowd despawned and respawned every simulated second.
    pub churn: f32,
    /// Crowd a glTF model instead of the built-in character.
    pub gltf: Option<PathBuf>,
    /// The glTF clip (index or name); default: every clip, spread over the crowd.
    pub clip: Option<String>,
    /// Show a progress bar (only when stdout is a terminal).
    pub progress: bool,
    /// Seconds per frame.
    pub dt: f32,
    /// Render the last frame on the GPU (palettes written straight into the mapped palette
    /// ring) and save it as a PNG.
    pub png: Option<PathBuf>,
    /// Level of detail: characters nearer the camera ([`crate::lod::lod_camera`]) than this
    /// many metres run the CPU pipeline, farther ones play baked textures (see
    /// [`crate::lod`]). Every character then plays a single clip.
    pub lod: Option<f32>,
    /// Width of the LOD hysteresis band in metres (default: a tenth of the distance).
    pub lod_hysteresis: Option<f32>,
    /// LOD bake rate in frames per second (default: the frame rate, `1 / dt`).
    pub lod_rate: Option<f32>,
    /// With `lod`: measure the pose difference between the two paths on every switch frame
    /// (outside the timings).
    pub lod_check: bool,
    /// Whether every measured frame is written into the palette ring and drawn on the GPU
    /// (see [`crate::crowd_gpu`]); default off, the binary's default is `Auto`.
    pub gpu: GpuUse,
    /// With `gpu`: the renderer (default: by adapter type, `Rasteriser::for_adapter`).
    pub raster: Option<sinew_gpu::crowd_frames::Rasteriser>,
    /// Foot placement on the height field and the heads' look-at (built-in character only,
    /// not with `lod`, whose baked tier plays the clips alone).
    pub ik: bool,
}

impl Default for CrowdOptions {
    fn default() -> Self {
        Self {
            count: 10_000,
            frames: 300,
            threads: 0,
            churn: 0.0,
            gltf: None,
            clip: None,
            progress: true,
            dt: 1.0 / 60.0,
            png: None,
            lod: None,
            lod_hysteresis: None,
            lod_rate: None,
            lod_check: false,
            gpu: GpuUse::Off,
            raster: None,
            ik: true,
        }
    }
}

/// Median time of one node over the run.
#[derive(Clone, Debug)]
pub struct NodeMedian {
    /// Node name.
    pub name: String,
    /// Median duration.
    pub median: Duration,
}

/// The measured results.
#[derive(Clone, Debug)]
pub struct CrowdSummary {
    /// The model.
    pub model: String,
    /// Characters.
    pub count: usize,
    /// Bones per character (rig).
    pub bones_per_character: usize,
    /// Palette entries per character (mesh bones).
    pub palette_per_character: usize,
    /// Frames measured.
    pub frames: usize,
    /// Worker threads.
    pub threads: usize,
    /// Median frame time (the whole graph).
    pub frame_median: Duration,
    /// Fastest and slowest frame.
    pub frame_min: Duration,
    /// Slowest frame.
    pub frame_max: Duration,
    /// Per-node medians, in graph order.
    pub nodes: Vec<NodeMedian>,
    /// Footstep (or any clip) events fired over the run.
    pub events_fired: u64,
    /// Controller transitions started over the run (0 without a controller).
    pub transitions: u64,
    /// Simulated seconds measured (frames × dt).
    pub simulated_seconds: f64,
    /// Median time of the controller node.
    pub controller_median: Duration,
    /// Entities despawned and respawned by churn.
    pub churned: u64,
    /// Bytes per character that live between frames (components and their heap data).
    pub state_bytes_per_character: usize,
    /// Bytes per character of the per-frame flat buffers (poses, matrices, palettes, tables).
    pub frame_bytes_per_character: usize,
    /// Mean distance walked per character (root motion), metres.
    pub mean_distance: f32,
    /// Checksum: sum of every palette float of the last frame.
    pub palette_checksum: f64,
    /// With `png`: the adapter that rendered, and the render's wall time.
    pub rendered: Option<(String, Duration)>,
    /// With `lod`: tiers, switches and the CPU time split.
    pub lod: Option<LodSummary>,
    /// With the GPU path: adapter, renderer and the frame split.
    pub gpu: Option<GpuSummary>,
    /// Why the frames ran on the CPU alone, when they did (no adapter, a CPU rasteriser,
    /// `--cpu-only`, `--lod`).
    pub cpu_only_reason: Option<String>,
}

impl CrowdSummary {
    /// Bones animated per second at the median frame time.
    pub fn bones_per_second(&self) -> f64 {
        (self.count * self.bones_per_character) as f64 / self.frame_median.as_secs_f64().max(1e-12)
    }
    /// Controller transitions started per simulated second.
    pub fn transitions_per_second(&self) -> f64 {
        self.transitions as f64 / self.simulated_seconds.max(1e-12)
    }
    /// Microseconds per character per frame.
    pub fn us_per_character(&self) -> f64 {
        self.frame_median.as_secs_f64() * 1e6 / self.count.max(1) as f64
    }
    /// The summary as a JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "model": self.model,
            "count": self.count,
            "bones_per_character": self.bones_per_character,
            "palette_per_character": self.palette_per_character,
            "frames": self.frames,
            "threads": self.threads,
            "frame_median_ms": self.frame_median.as_secs_f64() * 1e3,
            "frame_min_ms": self.frame_min.as_secs_f64() * 1e3,
            "frame_max_ms": self.frame_max.as_secs_f64() * 1e3,
            "bones_per_second": self.bones_per_second(),
            "us_per_character": self.us_per_character(),
            "state_bytes_per_character": self.state_bytes_per_character,
            "frame_bytes_per_character": self.frame_bytes_per_character,
            "events_fired": self.events_fired,
            "controller_median_ms": self.controller_median.as_secs_f64() * 1e3,
            "transitions": self.transitions,
            "transitions_per_second": self.transitions_per_second(),
            "churned": self.churned,
            "mean_distance_m": self.mean_distance,
            "palette_checksum": self.palette_checksum,
            "lod": self.lod.as_ref().map(|l| serde_json::json!({
                "distance_m": l.distance,
                "hysteresis_m": l.hysteresis,
                "bake_rate_hz": l.rate,
                "clips": l.clips,
                "bake_ms": l.bake_time.as_secs_f64() * 1e3,
                "texture_bytes": l.texture_bytes,
                "cpu_tier_first_frame": l.cpu_first,
                "cpu_tier": l.cpu_last,
                "baked_tier": l.baked_last,
                "cpu_tier_mean": l.cpu_mean,
                "switches": l.switches,
                "switches_per_frame": l.switches_per_frame(self.frames),
                "switches_max_per_frame": l.switches_max,
                "pipeline_median_ms": l.pipeline_median.as_secs_f64() * 1e3,
                "bookkeeping_median_ms": l.bookkeeping_median.as_secs_f64() * 1e3,
                "max_switch_pose_error": l.max_pose_error,
            })),
            "gpu": self.gpu.as_ref().map(|g| serde_json::json!({
                "adapter": g.adapter,
                "device_type": g.device_type,
                "backend": g.backend,
                "rasteriser": g.rasteriser.name(),
                "palette_upload": g.palette_upload,
                "width": g.size.0,
                "height": g.size.1,
                "pipeline_median_ms": g.pipeline_median.as_secs_f64() * 1e3,
                "ring_wait_median_ms": g.ring_wait_median.as_secs_f64() * 1e3,
                "encode_submit_median_ms": g.encode_submit_median.as_secs_f64() * 1e3,
                "gpu_median_ms": g.gpu_median.map(|d| d.as_secs_f64() * 1e3),
                "gpu_timer": if g.gpu_median.is_some() { "timestamp queries" } else { "none: the device has no timestamp queries" },
                "gpu_frames": g.gpu_frames,
                "gpu_time_covers": if g.lod { "the CPU tier's pass (the baked tier's is not timed)" } else { "the crowd's draw" },
            })),
            "cpu_only_reason": self.cpu_only_reason,
            "nodes": self.nodes.iter().map(|n| serde_json::json!({"name": n.name, "median_ms": n.median.as_secs_f64() * 1e3})).collect::<Vec<_>>(),
        })
    }
}

/// The assets a crowd plays.
pub(crate) struct Model {
    name: String,
    pub(crate) rig: Arc<sinew_jobs::asset::Rig>,
    pub(crate) mesh: Arc<SkinnedMesh>,
    pub(crate) kind: ModelKind,
}

impl Model {
    /// What is crowded: "built-in character" or the glTF file's path.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Curves over all the model's clips: room enough for any entity's [`CurveValues`].
    fn curve_count(&self) -> usize {
        let clips: Vec<&Arc<Clip>> = match &self.kind {
            ModelKind::Builtin {
                walk,
                run,
                wave,
                breathe,
                idle,
                ..
            } => vec![walk, run, wave, breathe, idle],
            ModelKind::Gltf { clips, .. } => clips.iter().collect(),
        };
        clips.iter().map(|c| c.curves().len()).sum()
    }
}

pub(crate) enum ModelKind {
    Builtin {
        walk: Arc<Clip>,
        run: Arc<Clip>,
        wave: Arc<Clip>,
        breathe: Arc<Clip>,
        idle: Arc<Clip>,
        mask: Arc<sinew_jobs::asset::AvatarMask>,
    },
    Gltf {
        clips: Vec<Arc<Clip>>,
    },
}

pub(crate) fn load_model(opts: &CrowdOptions, registry: &AssetRegistry) -> Result<Model, String> {
    match &opts.gltf {
        None => {
            let c = builtin::bake_character(registry)
                .map_err(|e| format!("built-in character: {e}"))?;
            Ok(Model {
                name: "built-in character".into(),
                rig: c.rig,
                mesh: c.mesh,
                kind: ModelKind::Builtin {
                    walk: c.walk,
                    run: c.run,
                    wave: c.wave,
                    breathe: c.breathe,
                    idle: c.idle,
                    mask: c.upper_body_mask,
                },
            })
        }
        Some(path) => {
            let scene =
                import_gltf(path, registry).map_err(|e| format!("{}: {e}", path.display()))?;
            let mesh = scene
                .meshes
                .first()
                .map(|m| m.skinned_mesh.clone())
                .ok_or_else(|| format!("{}: no skinned mesh in the file", path.display()))?;
            let clips = match &opts.clip {
                None => scene.clips.clone(),
                Some(sel) => {
                    let by_index = sel
                        .parse::<usize>()
                        .ok()
                        .and_then(|i| scene.clips.get(i).cloned());
                    let by_name = scene.clips.iter().find(|c| c.name() == sel).cloned();
                    vec![by_index.or(by_name).ok_or_else(|| {
                        let names: Vec<&str> = scene.clips.iter().map(|c| c.name()).collect();
                        format!(
                            "{}: no clip '{sel}' (clips: {})",
                            path.display(),
                            names.join(", ")
                        )
                    })?]
                }
            };
            if clips.is_empty() {
                return Err(format!("{}: the file has no animation", path.display()));
            }
            Ok(Model {
                name: path.display().to_string(),
                rig: scene.rig,
                mesh,
                kind: ModelKind::Gltf { clips },
            })
        }
    }
}

/// Deterministic per-character parameters from its index.
pub(crate) fn hash01(i: u64, salt: u64) -> f32 {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xD1B5_4A32_D192_ED03);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    (x >> 40) as f32 / (1u64 << 24) as f32
}

/// The animations of character `i`.
pub(crate) fn animations_for(model: &Model, i: u64) -> Vec<AnimationToProcess> {
    match &model.kind {
        ModelKind::Builtin {
            walk,
            run,
            wave,
            breathe,
            mask,
            ..
        } => {
            // Speed between a slow walk and a run; walk and run phase-locked (same normalised time).
            let speed = character_speed(i);
            let r = ((speed - WALK_SPEED) / (RUN_SPEED - WALK_SPEED)).clamp(0.0, 1.0);
            let stride_speed = WALK_SPEED + (RUN_SPEED - WALK_SPEED) * r;
            let cycle = walk.duration() + (run.duration() - walk.duration()) * r;
            let k = speed / stride_speed;
            let phase = hash01(i, 2);
            let mut v = vec![
                AnimationToProcess::new(walk.clone())
                    .at(phase * walk.duration())
                    .weight(1.0 - r)
                    .speed(k * walk.duration() / cycle),
                AnimationToProcess::new(run.clone())
                    .at(phase * run.duration())
                    .weight(r)
                    .speed(k * run.duration() / cycle),
                AnimationToProcess::new(breathe.clone())
                    .at(hash01(i, 3) * breathe.duration())
                    .layer(2, BlendMode::Additive),
            ];
            if i.is_multiple_of(4) {
                v.push(
                    AnimationToProcess::new(wave.clone())
                        .at(hash01(i, 4) * wave.duration())
                        .layer(1, BlendMode::Override)
                        .mask(mask.clone()),
                );
            }
            v
        }
        ModelKind::Gltf { clips } => {
            let clip = &clips[(i as usize) % clips.len()];
            vec![
                AnimationToProcess::new(clip.clone())
                    .at(hash01(i, 2) * clip.duration())
                    .speed(0.8 + 0.4 * hash01(i, 5)),
            ]
        }
    }
}

pub(crate) type CrowdBundle = (
    RigRef,
    Animations,
    LayerWeights,
    FrameSlot,
    SamplingCursors,
    SkinRef,
    EntityTransform,
    RootMotion,
    FiredEvents,
    CurveValues,
);

/// The clips a LOD crowd bakes (and plays, one per character).
pub(crate) fn lod_clips(model: &Model) -> Vec<Arc<Clip>> {
    match &model.kind {
        ModelKind::Builtin {
            walk, run, idle, ..
        } => vec![walk.clone(), run.clone(), idle.clone()],
        ModelKind::Gltf { clips } => clips.clone(),
    }
}

/// The animation of character `i` of a LOD crowd: one of `clips` (the model's [`lod_clips`]) at
/// speed 1, its phase on the bake's frame grid (`rate`); `None` when there are no clips.
pub(crate) fn lod_animation(
    model: &Model,
    clips: &[Arc<Clip>],
    i: u64,
    rate: f32,
) -> Option<AnimationToProcess> {
    let c = match &model.kind {
        // Walk or run by the same speed draw as the full crowd, idle for every tenth.
        ModelKind::Builtin { .. } if i.is_multiple_of(10) => 2,
        ModelKind::Builtin { .. } => usize::from(1.0 + 3.0 * hash01(i, 1) >= 2.45),
        ModelKind::Gltf { .. } => (i as usize) % clips.len().max(1),
    };
    let clip = clips.get(c)?.clone();
    let phase = (hash01(i, 2) * clip.duration() * rate).floor() / rate;
    Some(AnimationToProcess::new(clip).at(phase))
}

/// The crowd's controller for a model: [`crowd_controller`] for the built-in character,
/// `None` for a glTF model.
pub(crate) fn model_controller(model: &Model) -> Result<Option<Arc<Controller>>, String> {
    let ModelKind::Builtin {
        walk,
        run,
        wave,
        breathe,
        idle,
        mask,
    } = &model.kind
    else {
        return Ok(None);
    };
    let c = BakedCharacter {
        rig: model.rig.clone(),
        mesh: model.mesh.clone(),
        idle: idle.clone(),
        walk: walk.clone(),
        run: run.clone(),
        wave: wave.clone(),
        breathe: breathe.clone(),
        upper_body_mask: mask.clone(),
    };
    crowd_controller(&c).map(Some)
}

/// The crowd's controller for the built-in character: parameters `speed` (m/s), `pace` (a
/// speed multiplier past the run), `phase` and `breath_phase` (cycle offsets) and the trigger
/// `wave`; layers `locomotion` (a 1D tree idle / walk / run at 0, [`WALK_SPEED`],
/// [`RUN_SPEED`]), `upper body` (masked: an empty state and `wave`, in on the trigger over
/// 0.25 s, out at its exit time 0.9 over 0.2 s) and `breathing` (additive).
///
/// # Errors
/// The bake's error as a message (not expected for the built-in character).
pub fn crowd_controller(c: &BakedCharacter) -> Result<Arc<Controller>, String> {
    let (idle, walk, run, wave, breathe, mask) = (
        &c.idle,
        &c.walk,
        &c.run,
        &c.wave,
        &c.breathe,
        &c.upper_body_mask,
    );
    let locomotion = RawBlendTree::one_d("speed")
        .child(RawMotion::clip(idle.name()), 0.0)
        .child(RawMotion::clip(walk.name()), WALK_SPEED)
        .child(RawMotion::clip(run.name()), RUN_SPEED);
    let raw = RawController::new("crowd")
        .float("speed", 0.0)
        .float("pace", 1.0)
        .float("phase", 0.0)
        .float("breath_phase", 0.0)
        .trigger("wave")
        .layer(
            RawLayer::new("locomotion").state(
                RawState::tree("move", locomotion)
                    .speed_parameter("pace")
                    .cycle_offset_parameter("phase"),
            ),
        )
        .layer(
            RawLayer::new("upper body")
                .mask(mask.name())
                .state(
                    RawState::empty("none").transition(
                        RawTransition::to("wave")
                            .duration(0.25)
                            .when(RawCondition::trigger("wave")),
                    ),
                )
                .state(
                    RawState::clip("wave", wave.name())
                        .transition(RawTransition::to("none").exit_time(0.9).duration(0.2)),
                ),
        )
        .layer(RawLayer::new("breathing").additive().state(
            RawState::clip("breathe", breathe.name()).cycle_offset_parameter("breath_phase"),
        ));
    let assets = ControllerAssets::new()
        .clip(idle.clone())
        .clip(walk.clone())
        .clip(run.clone())
        .clip(wave.clone())
        .clip(breathe.clone())
        .mask(mask.clone());
    raw.bake(&c.rig, &assets)
        .map(Arc::new)
        .map_err(|e| format!("crowd controller: {e}"))
}

/// Character `i`'s controller state: speed drawn in [1, 4] m/s as the plain crowd draws it,
/// staggered phases.
///
/// # Errors
/// A message if `controller` is not [`crowd_controller`]'s for `rig`.
pub fn controller_state_for(
    controller: &Arc<Controller>,
    rig: &sinew_jobs::asset::Rig,
    i: u64,
) -> Result<ControllerState, String> {
    let e = |e: sinew_jobs::controller::ControllerError| format!("character {i}: {e}");
    let mut s = ControllerState::new(controller.clone(), rig).map_err(e)?;
    set_speed(&mut s, character_speed(i)).map_err(e)?;
    s.set_float("phase", hash01(i, 2)).map_err(e)?;
    s.set_float("breath_phase", hash01(i, 3)).map_err(e)?;
    Ok(s)
}

/// Character `i`'s own speed, m/s in [1, 4].
pub fn character_speed(i: u64) -> f32 {
    1.0 + 3.0 * hash01(i, 1)
}

/// Sets [`crowd_controller`]'s parameters for walking at `speed` m/s: `speed` up to the run's,
/// `pace` for the rest (the run played faster).
///
/// # Errors
/// The controller's, for a state of another controller.
pub fn set_speed(
    state: &mut ControllerState,
    speed: f32,
) -> Result<(), sinew_jobs::controller::ControllerError> {
    state.set_float("speed", speed.min(RUN_SPEED))?;
    state.set_float("pace", (speed / RUN_SPEED).max(1.0))
}

/// Every fourth character waves once every [`WAVE_PERIOD_FRAMES`] frames, at its own phase.
pub const WAVE_PERIOD_FRAMES: u64 = 240;

pub(crate) fn waves_at(i: u64, frame: u64) -> bool {
    i.is_multiple_of(4)
        && (frame + (hash01(i, 4) * WAVE_PERIOD_FRAMES as f32) as u64)
            .is_multiple_of(WAVE_PERIOD_FRAMES)
}

/// Sets the `wave` trigger of the controlled characters (`entities`, which are characters
/// `ids`) whose turn it is on `frame`; entities without a controller are skipped.
///
/// # Errors
/// The store's or the controller's, as a message.
pub(crate) fn trigger_waves(
    store: &mut Store,
    entities: &[Entity],
    ids: &[u64],
    frame: u64,
) -> Result<(), String> {
    for (&e, &i) in entities.iter().zip(ids) {
        if waves_at(i, frame)
            && let Ok(state) = store.get_mut::<ControllerState>(e)
        {
            state.set_trigger("wave").map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

pub(crate) type ControlledBundle = (
    RigRef,
    Animations,
    LayerWeights,
    FrameSlot,
    SamplingCursors,
    SkinRef,
    EntityTransform,
    RootMotion,
    FiredEvents,
    CurveValues,
    ControllerState,
);

/// Spawns character `i`: with a controller when there is one (its animation list starts
/// empty: the controller writes it), else playing [`character`]'s clips.
pub(crate) fn spawn_character(
    store: &mut Store,
    model: &Model,
    controller: Option<&Arc<Controller>>,
    i: u64,
    grid: usize,
) -> Result<Entity, String> {
    let b = character(model, i, grid, None);
    let r = match controller {
        None => store.spawn(b),
        Some(c) => store.spawn(controlled(b, controller_state_for(c, &model.rig, i)?)),
    };
    r.map_err(|e| format!("spawn: {e}"))
}

fn controlled(b: CrowdBundle, state: ControllerState) -> ControlledBundle {
    let (rig, _, lw, slot, cursors, skin, transform, root, events, curves) = b;
    (
        rig,
        state.animation_list(),
        lw,
        slot,
        cursors,
        skin,
        transform,
        root,
        events,
        curves,
        state,
    )
}

/// Spawns characters `0..count` on a `grid`-wide square: under `controller` when there is
/// one, else playing [`character`]'s clips (one clip each with `lod`, as in [`character`]).
///
/// # Errors
/// The store's or the controller's, as a message.
pub(crate) fn spawn_crowd(
    store: &mut Store,
    model: &Model,
    controller: Option<&Arc<Controller>>,
    count: usize,
    grid: usize,
    lod: Option<(f32, &[Arc<Clip>])>,
) -> Result<Vec<Entity>, String> {
    let r = match controller {
        None => store.spawn_batch((0..count as u64).map(|i| character(model, i, grid, lod))),
        Some(c) => {
            let bundles = (0..count as u64)
                .map(|i| {
                    controller_state_for(c, &model.rig, i)
                        .map(|s| controlled(character(model, i, grid, None), s))
                })
                .collect::<Result<Vec<_>, String>>()?;
            store.spawn_batch(bundles)
        }
    };
    r.map_err(|e| format!("spawn: {e}"))
}

/// Distance between neighbours of the crowd's grid, metres.
pub const SPACING: f32 = 2.0;

/// Character `i`; with `lod` (bake rate, the model's [`lod_clips`]) it plays one clip.
pub(crate) fn character(
    model: &Model,
    i: u64,
    grid: usize,
    lod: Option<(f32, &[Arc<Clip>])>,
) -> CrowdBundle {
    let spacing = SPACING;
    let (x, z) = (
        (i as usize % grid) as f32 * spacing,
        (i as usize / grid) as f32 * spacing,
    );
    let heading = Quat::from_rotation_y(hash01(i, 6) * 0.3 - 0.15);
    let animations = match lod {
        None => animations_for(model, i),
        Some((rate, clips)) => lod_animation(model, clips, i, rate).into_iter().collect(),
    };
    (
        RigRef(model.rig.clone()),
        Animations::new(animations),
        LayerWeights::default(),
        FrameSlot::default(),
        SamplingCursors::default(),
        SkinRef::new(model.mesh.clone()),
        EntityTransform(Transform::new(Vec3::new(x, 0.0, z), heading, Vec3::ONE)),
        RootMotion::default(),
        // Sized here, on the thread that spawns, not by the frame's workers (see
        // `ControllerState::new`).
        FiredEvents(Vec::with_capacity(4)),
        CurveValues::with_capacity(model.curve_count()),
    )
}

pub(crate) fn median(v: &mut [Duration]) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    v.sort_unstable();
    v[v.len() / 2]
}

/// Runs the crowd and measures it.
///
/// # Errors
/// A one-line message for bad options, unreadable files or a failed frame.
pub fn run_crowd(opts: &CrowdOptions) -> Result<CrowdSummary, String> {
    if opts.count == 0 {
        return Err("--count must be at least 1".into());
    }
    if opts.frames == 0 {
        return Err("--frames must be at least 1".into());
    }
    if !(0.0..=1.0).contains(&opts.churn) {
        return Err(format!(
            "--churn must be a fraction in [0, 1], got {}",
            opts.churn
        ));
    }
    if let Some(d) = opts.lod {
        if !(d.is_finite() && d > 0.0) {
            return Err(format!(
                "--lod must be a positive distance in metres, got {d}"
            ));
        }
        if opts.churn > 0.0 {
            return Err("--lod and --churn cannot be combined".into());
        }
        if let Some(r) = opts.lod_rate
            && !(r.is_finite() && r > 0.0)
        {
            return Err(format!("--lod-rate must be a positive rate, got {r}"));
        }
    }
    let pool = ThreadPoolBuilder::new()
        .num_threads(opts.threads)
        .build()
        .map_err(|e| format!("thread pool: {e}"))?;
    pool.install(|| run_in_pool(opts))
}

fn run_in_pool(opts: &CrowdOptions) -> Result<CrowdSummary, String> {
    let registry = AssetRegistry::new();
    let model = load_model(opts, &registry)?;
    let grid = (opts.count as f64).sqrt().ceil() as usize;
    let lod_rate = opts.lod.map(|_| opts.lod_rate.unwrap_or(1.0 / opts.dt));
    let clips = lod_clips(&model);
    let lod_setup = lod_rate.map(|r| (r, &clips[..]));
    let mut store = Store::new();
    // The LOD crowd keeps plain clips (its tiers hand clocks over by clip).
    let controller = match lod_setup {
        None => model_controller(&model)?,
        Some(_) => None,
    };
    let mut entities = spawn_crowd(
        &mut store,
        &model,
        controller.as_ref(),
        opts.count,
        grid,
        lod_setup,
    )?;
    // Which character each entity is (churn replaces them), for the wave triggers.
    let mut ids: Vec<u64> = (0..opts.count as u64).collect();
    let mut lod = match (opts.lod, lod_rate) {
        (Some(distance), Some(rate)) => {
            let switch = LodSwitch::new(distance, opts.lod_hysteresis.unwrap_or(0.1 * distance))
                .map_err(|e| format!("--lod: {e}"))?;
            if clips.is_empty() {
                return Err("--lod: the model has no clips".into());
            }
            Some(LodState::new(
                switch,
                &model.rig,
                model.mesh.clone(),
                clips.clone(),
                rate,
                &store,
                &entities,
                grid,
                opts.dt,
                opts.lod_check,
            )?)
        }
        _ => None,
    };
    // The baked tier of --lod plays textures of the clips alone, so that the two tiers show
    // one pose on a switch frame: the procedural stages stay off with it.
    let procedural = (opts.ik && opts.lod.is_none())
        .then(|| {
            let eye = crate::ground::camera_eye(grid, SPACING);
            crate::ground::Procedural::for_rig(&model.rig, eye)
        })
        .flatten();
    if let Some(p) = &procedural {
        p.equip_all(&mut store, &entities)?;
    }
    let stages = match procedural {
        Some(_) => crate::ground::stages(),
        None => sinew_jobs::pose_stage::PoseStages::new(),
    };
    let starts: Vec<Vec3> = entities
        .iter()
        .map(|&e| {
            store
                .get::<EntityTransform>(e)
                .map(|t| t.0.translation)
                .unwrap_or_default()
        })
        .collect();
    let config = sinew_jobs::pipeline::PipelineConfig::default();
    let mut animator = Animator::with_stages(&mut store, config, &stages, |_, _| {})
        .map_err(|e| format!("graph: {e}"))?;
    let footstep = bone_hash(FOOTSTEP);
    // The per-frame GPU path. `--lod` draws its baked tier into the graphics pipeline's
    // colour and depth targets, so it takes the graphics pipeline.
    let raster = match (opts.lod, opts.raster) {
        (Some(_), Some(sinew_gpu::crowd_frames::Rasteriser::Compute)) => {
            return Err(
                "--lod draws its baked tier over the graphics pipeline: not with --raster compute"
                    .into(),
            );
        }
        (Some(_), _) => Some(sinew_gpu::crowd_frames::Rasteriser::Graphics),
        (None, r) => r,
    };
    let (mut gpu, mut cpu_only_reason) = match opts.gpu {
        GpuUse::Off => (None, Some("--cpu-only".to_string())),
        use_gpu => match crowd_gpu::open(use_gpu, raster, &model.rig, &model.mesh, &mut store)? {
            Ok(g) => (Some(g), None),
            Err(reason) => (None, Some(reason)),
        },
    };
    // Drawn only on a terminal, so that piped output (`--json`, logs) stays clean.
    let progress = if opts.progress && std::io::stdout().is_terminal() {
        ProgressBar::with_draw_target(Some(opts.frames as u64), ProgressDrawTarget::stdout())
    } else {
        ProgressBar::hidden()
    };
    progress.set_style(
        ProgressStyle::with_template("[{bar:40}] {pos}/{len} frames, {per_sec}, eta {eta}")
            .map_err(|e| e.to_string())?
            .progress_chars("#>-"),
    );

    // Palettes go into one reusable slice, as they would into a mapped GPU buffer.
    let mut palette: Vec<PaletteEntry> = Vec::new();
    let mut frame_times = Vec::with_capacity(opts.frames);
    let mut node_times: Vec<Vec<Duration>> = Vec::new();
    let mut node_names: Vec<String> = Vec::new();
    let mut events_fired = 0u64;
    let mut transitions = 0u64;
    let mut churned = 0u64;
    let frames_per_second = (1.0 / opts.dt).round().max(1.0) as usize;
    let mut next_id = opts.count as u64;
    let mut gpu_checksum = None;
    for frame in 0..=opts.frames {
        if opts.churn > 0.0 && frame > 0 && frame % frames_per_second == 0 {
            let n = ((opts.count as f32) * opts.churn).round() as usize;
            for k in 0..n {
                let slot = (hash01(frame as u64, k as u64) * entities.len() as f32) as usize
                    % entities.len().max(1);
                store
                    .despawn(entities[slot])
                    .map_err(|e| format!("churn despawn: {e}"))?;
                entities[slot] =
                    spawn_character(&mut store, &model, controller.as_ref(), next_id, grid)
                        .map_err(|e| format!("churn {e}"))?;
                ids[slot] = next_id;
                if let Some(p) = &procedural {
                    p.equip(&mut store, entities[slot])?;
                }
                next_id += 1;
                churned += 1;
            }
        }
        // Size the palette slice for this frame's crowd (the last frame's total, or a bound).
        let needed = entities.len() * model.mesh.bone_count();
        if gpu.is_none() && palette.len() < needed {
            palette.resize(needed, [0.0; 12]);
        }
        if controller.is_some() {
            trigger_waves(&mut store, &entities, &ids, frame as u64)?;
        }
        let bookkeeping_before = match lod.as_mut() {
            Some(l) => l.before(&mut store, frame)?,
            None => Duration::ZERO,
        };
        let t0 = Instant::now();
        // (the frame's CPU time, the pipeline's part of it, the LOD bookkeeping after it)
        let (frame_time, pipeline, lod_after) = match gpu.as_mut() {
            Some(g) => {
                let f = g
                    .frame(
                        &mut store,
                        &mut animator,
                        opts.dt,
                        frame == opts.frames,
                        frame > 0,
                        lod.as_mut().map(|l| (l, frame)),
                    )
                    .map_err(|e| format!("frame {frame}: {e}"))?;
                if let Some(sum) = f.checksum {
                    gpu_checksum = Some(sum);
                }
                (f.time, f.pipeline, f.lod_after)
            }
            None => {
                animator
                    .run_frame_into(&mut store, opts.dt, &mut palette)
                    .map_err(|e| format!("frame {frame}: {e}"))?;
                (t0.elapsed(), t0.elapsed(), None)
            }
        };
        let elapsed = match lod.as_mut() {
            Some(l) => {
                // The GPU path ran the LOD bookkeeping after the pipeline, on the mapped palettes.
                let after = match lod_after {
                    Some(after) => after,
                    None => l.after(&mut store, Some(&palette), frame)?,
                };
                if frame > 0 {
                    l.record(pipeline, bookkeeping_before + after);
                }
                frame_time + bookkeeping_before + after
            }
            None => frame_time,
        };
        if frame == 0 {
            node_names = animator.timings().iter().map(|t| t.name.clone()).collect();
            node_times = vec![Vec::with_capacity(opts.frames); node_names.len()];
            continue; // warm-up
        }
        frame_times.push(elapsed);
        for (k, t) in animator.timings().iter().enumerate() {
            if let Some(v) = node_times.get_mut(k) {
                v.push(t.duration);
            }
        }
        // Characters in the pipeline (the baked tier of --lod fires no events).
        let mut q = store
            .query::<&FiredEvents>()
            .map_err(|e| e.to_string())?
            .with::<Animations>();
        q.for_each(|_, ev| {
            for f in &ev.0 {
                match f.source {
                    EventSource::Clip => {
                        events_fired += u64::from(f.name == footstep || opts.gltf.is_some());
                    }
                    EventSource::Controller {
                        kind: ControllerEventKind::TransitionStart { .. },
                        ..
                    } => transitions += 1,
                    EventSource::Controller { .. } => {}
                }
            }
        });
        drop(q);
        progress.set_position(frame as u64);
    }
    progress.finish_and_clear();
    let gpu_summary = match gpu.take() {
        Some(g) => Some(g.finish(1)?),
        None => None,
    };
    if gpu_summary.is_some() {
        cpu_only_reason = None;
    }
    if let Some(l) = &lod {
        l.sync_transforms(&mut store)?;
    }
    let mean_distance = if opts.churn == 0.0 {
        let total: f32 = entities
            .iter()
            .zip(&starts)
            .map(|(&e, s)| {
                store
                    .get::<EntityTransform>(e)
                    .map_or(0.0, |t| (t.0.translation - *s).length())
            })
            .sum();
        total / entities.len() as f32
    } else {
        f32::NAN
    };
    let rendered = match &opts.png {
        Some(path) => Some(render_png(
            &mut store,
            &mut animator,
            &model,
            opts.dt,
            path,
            lod.as_mut().map(|l| (l, opts.frames + 1)),
        )?),
        None => None,
    };
    let total_palette = animator.palette_len(&store);
    let palette_checksum: f64 = gpu_checksum.unwrap_or_else(|| {
        palette[..total_palette.min(palette.len())]
            .iter()
            .flatten()
            .map(|&x| f64::from(x))
            .sum()
    });
    let mut sorted = frame_times.clone();
    sorted.sort_unstable();
    let bones = model.rig.bone_count();
    let mesh_bones = model.mesh.bone_count();
    // State kept between frames: the components and the heap data they own.
    let anim_heap: usize = {
        let mut sum = 0usize;
        let mut q = store.query::<&Animations>().map_err(|e| e.to_string())?;
        q.for_each(|_, a| sum += a.len() * std::mem::size_of::<AnimationToProcess>());
        drop(q);
        let mut q = store
            .query::<&SamplingCursors>()
            .map_err(|e| e.to_string())?;
        q.for_each(|_, c| sum += c.0.capacity() * 4);
        drop(q);
        // The controller state's heap part (its inline part is in the bundle's size).
        let mut q = store
            .query::<&ControllerState>()
            .map_err(|e| e.to_string())?;
        q.for_each(|_, c| sum += c.bytes() - std::mem::size_of::<ControllerState>());
        drop(q);
        // The baked tier's animations are kept aside by the LOD state.
        sum += lod.as_ref().map_or(0, LodState::parked_animation_bytes);
        sum / entities.len().max(1)
    };
    let bundle = if controller.is_some() {
        std::mem::size_of::<ControlledBundle>()
    } else {
        std::mem::size_of::<CrowdBundle>()
    };
    let state_bytes_per_character = bundle + anim_heap;
    // The frame buffers as they are after the run (with the fused chain, local poses and
    // model matrices stay in per-worker scratch and these buffers are empty).
    let frame_bytes_per_character = {
        use sinew_jobs::frame::{
            BoneTable, FrameCounts, FrameOffsets, FrameSpans, LocalPoses, ModelPoses,
        };
        fn bytes<T>(v: &[T]) -> usize {
            std::mem::size_of_val(v)
        }
        let r = |e: sinew_runtime::store::StoreError| e.to_string();
        let total = bytes(&store.resource::<FrameCounts>().map_err(r)?.0)
            + bytes(&store.resource::<FrameOffsets>().map_err(r)?.offsets)
            + bytes(&store.resource::<BoneTable>().map_err(r)?.0)
            + bytes(&store.resource::<FrameSpans>().map_err(r)?.0)
            + bytes(&store.resource::<LocalPoses>().map_err(r)?.0)
            + bytes(&store.resource::<ModelPoses>().map_err(r)?.0)
            + mesh_bones * entities.len() * std::mem::size_of::<PaletteEntry>();
        total / entities.len().max(1)
    };
    let controller_median = node_names
        .iter()
        .zip(node_times.iter_mut())
        .find(|(n, _)| n.as_str() == "controller")
        .map_or(Duration::ZERO, |(_, v)| median(v));
    let simulated_seconds = frame_times.len() as f64 * f64::from(opts.dt);
    Ok(CrowdSummary {
        model: model.name,
        count: entities.len(),
        bones_per_character: bones,
        palette_per_character: mesh_bones,
        frames: frame_times.len(),
        threads: rayon::current_num_threads(),
        frame_median: median(&mut frame_times),
        frame_min: sorted.first().copied().unwrap_or_default(),
        frame_max: sorted.last().copied().unwrap_or_default(),
        nodes: node_names
            .into_iter()
            .zip(node_times.iter_mut())
            .map(|(name, v)| NodeMedian {
                name,
                median: median(v),
            })
            .collect(),
        events_fired,
        transitions,
        simulated_seconds,
        controller_median,
        churned,
        state_bytes_per_character,
        frame_bytes_per_character,
        mean_distance,
        palette_checksum,
        rendered,
        lod: lod.as_ref().map(LodState::summary),
        gpu: gpu_summary,
        cpu_only_reason,
    })
}

/// One more frame, its palettes written by the skinning job straight into this frame's mapped
/// buffer of a [`PaletteRing`], then drawn instanced and saved as a PNG.
fn render_png(
    store: &mut Store,
    animator: &mut Animator,
    model: &Model,
    dt: f32,
    path: &std::path::Path,
    mut lod: Option<(&mut LodState, usize)>,
) -> Result<(String, Duration), String> {
    use sinew_gpu::context::GpuContext;
    use sinew_gpu::palette_ring::{PaletteRing, crowd_palette_len};
    use sinew_gpu::render::{Camera, CrowdRenderer, Instance};
    let t0 = Instant::now();
    let ctx = GpuContext::new().map_err(|e| format!("--png: {e}"))?;
    if let Some((l, frame)) = lod.as_mut() {
        l.before(store, *frame)?;
    }
    let entries = crowd_palette_len(store).map_err(|e| format!("--png: {e}"))?;
    let mut ring = PaletteRing::with_best_mode(&ctx, entries).map_err(|e| format!("--png: {e}"))?;
    ring.write(&ctx, entries, |slice| {
        animator.run_frame_into_mapped(store, dt, slice)
    })
    .map_err(|e| format!("--png: {e}"))?
    .map_err(|e| format!("--png frame: {e}"))?;
    if let Some((l, frame)) = lod.as_mut() {
        l.after(store, None, *frame)?;
    }
    let mut instances = Vec::new();
    let (mut lo, mut hi) = (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY));
    let mut q = store
        .query::<(&FrameSlot, &EntityTransform)>()
        .map_err(|e| e.to_string())?
        .with::<SkinRef>();
    q.for_each(|_, (slot, t)| {
        instances.push(Instance::new(slot.palette_offset, t.0.to_affine()));
        lo = lo.min(t.0.translation);
        hi = hi.max(t.0.translation);
    });
    drop(q);
    let mut renderer =
        CrowdRenderer::new(&ctx, &model.mesh, 1280, 720).map_err(|e| format!("--png: {e}"))?;
    let image = match lod {
        None => {
            let center = (lo + hi) * 0.5 + Vec3::Y * 0.9;
            let extent = (hi - lo).length().max(3.0);
            let camera = Camera::look_at(
                center + Vec3::new(0.35, 0.45, -0.8).normalize() * extent * 0.9,
                center,
            );
            renderer
                .render_ring(&ctx, &mut ring, &instances, &camera)
                .map_err(|e| format!("--png: {e}"))?
        }
        Some((l, _)) => render_both_tiers(&ctx, &mut renderer, &mut ring, &instances, l, model)?,
    };
    image
        .save_png(path)
        .map_err(|e| format!("--png {}: {e}", path.display()))?;
    Ok((ctx.adapter_info.name.clone(), t0.elapsed()))
}

/// Draws the CPU tier (palettes in `ring`) with `renderer`, then the baked tier into the same
/// colour and depth targets, from the LOD camera, and reads the image back.
fn render_both_tiers(
    ctx: &sinew_gpu::context::GpuContext,
    renderer: &mut sinew_gpu::render::CrowdRenderer,
    ring: &mut sinew_gpu::palette_ring::PaletteRing,
    instances: &[sinew_gpu::render::Instance],
    lod: &LodState,
    model: &Model,
) -> Result<sinew_gpu::render::RgbaImage, String> {
    use sinew_gpu::baked::draw::{BakedRenderer, DrawTarget};
    use sinew_gpu::baked::{BakedAnimationGpu, BakedTexelFormat};
    use sinew_gpu::render::{COLOR_FORMAT, Camera};
    let e = |e: sinew_gpu::context::GpuError| format!("--png: {e}");
    let (eye, target) = crate::lod::lod_camera(lod.grid(), lod.time());
    let camera = Camera::look_at(eye, target);
    let palette = ring
        .buffer()
        .cloned()
        .ok_or_else(|| "--png: the palette ring holds no buffer".to_string())?;
    renderer
        .check_palette_bounds(instances, ring.len() as u64)
        .map_err(e)?;
    renderer.set_instances(ctx, instances).map_err(e)?;
    let anim = BakedAnimationGpu::new(
        ctx,
        lod.crowd().texture(),
        &model.mesh,
        BakedTexelFormat::Rgba32Float,
    )
    .map_err(e)?;
    let (w, h) = (renderer.width(), renderer.height());
    let mut baked = BakedRenderer::with_color_format(ctx, &anim, w, h, COLOR_FORMAT).map_err(e)?;
    baked
        .set_instances(ctx, &anim, &lod.baked_instances())
        .map_err(e)?;
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    renderer.encode(ctx, &mut encoder, &palette, &camera, None);
    baked.encode_over(
        ctx,
        &anim,
        &mut encoder,
        DrawTarget {
            color: renderer.color_view(),
            depth: renderer.depth_view(),
        },
        camera.view_proj(w as f32 / h as f32),
        lod.crowd().time(),
    );
    renderer.encode_readback(&mut encoder);
    let sub = ctx.queue.submit([encoder.finish()]);
    ring.submitted(Some(sub.clone()));
    renderer.read_image(ctx, sub).map_err(e)
}

/// The human-readable summary.
pub fn format_summary(s: &CrowdSummary) -> String {
    let mut out = String::new();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    out += &format!(
        "sinew crowd: {} x {} ({} bones, {} palette entries each), {} frames, {} threads\n",
        s.count, s.model, s.bones_per_character, s.palette_per_character, s.frames, s.threads
    );
    out += "\n  job                      median (ms)\n";
    for n in &s.nodes {
        out += &format!("  {:<24} {:>10.3}\n", n.name, ms(n.median));
    }
    out += &format!(
        "\n  frame time      median {:.3} ms  (min {:.3}, max {:.3})\n",
        ms(s.frame_median),
        ms(s.frame_min),
        ms(s.frame_max)
    );
    out += &format!(
        "  throughput      {:.1} M bones/s, {:.3} us per character\n",
        s.bones_per_second() / 1e6,
        s.us_per_character()
    );
    out += &format!(
        "  memory          {} B state + {} B frame buffers per character\n",
        s.state_bytes_per_character, s.frame_bytes_per_character
    );
    out += &format!("  events fired    {}\n", s.events_fired);
    out += &format!(
        "  controller      median {:.3} ms ({:.1}% of the frame), {:.1} transitions/s\n",
        ms(s.controller_median),
        100.0 * s.controller_median.as_secs_f64() / s.frame_median.as_secs_f64().max(1e-12),
        s.transitions_per_second()
    );
    if s.churned > 0 {
        out += &format!(
            "  churn           {} characters despawned and respawned\n",
            s.churned
        );
    }
    if let Some(l) = &s.lod {
        out += &format!(
            "  lod             {:.1} m (hysteresis {:.1} m); {} clips baked at {:.0} Hz in {:.1} ms ({} KiB)\n",
            l.distance,
            l.hysteresis,
            l.clips.len(),
            l.rate,
            ms(l.bake_time),
            l.texture_bytes / 1024
        );
        out += &format!(
            "  tiers           {} CPU + {} baked at the last frame (first frame {} CPU, mean {:.1} CPU)\n",
            l.cpu_last, l.baked_last, l.cpu_first, l.cpu_mean
        );
        out += &format!(
            "  switches        {:.2} per frame (max {} in a frame, {} in all)\n",
            l.switches_per_frame(s.frames),
            l.switches_max,
            l.switches
        );
        out += &format!(
            "  cpu time split  pipeline (CPU tier) median {:.3} ms, baked bookkeeping median {:.3} ms\n",
            ms(l.pipeline_median),
            ms(l.bookkeeping_median)
        );
        if let Some(err) = l.max_pose_error {
            out += &format!("  switch frames   max pose difference {err:.2e} of the model size\n");
        }
    }
    if let Some((adapter, t)) = &s.rendered {
        out += &format!(
            "  rendered        on {adapter} in {:.1} ms (mapped palette ring, instanced draw)\n",
            ms(*t)
        );
    }
    match (&s.gpu, &s.cpu_only_reason) {
        (Some(g), _) => {
            out += &format!(
                "  gpu             {} ({}, {}), {}, {}, {}x{}\n",
                g.adapter,
                g.device_type,
                g.backend,
                g.rasteriser.name(),
                g.palette_upload,
                g.size.0,
                g.size.1
            );
            let gpu = match g.gpu_median {
                Some(t) if g.lod => format!("GPU {:.3} ms for the CPU tier's pass", ms(t)),
                Some(t) => format!("GPU {:.3} ms", ms(t)),
                None => "GPU time not measured (no timestamp queries)".into(),
            };
            out += &format!(
                "  frame split     CPU pipeline {:.3} + ring wait {:.3} + encode and submit {:.3} ms; {gpu} (medians)\n",
                ms(g.pipeline_median),
                ms(g.ring_wait_median),
                ms(g.encode_submit_median),
            );
        }
        (None, Some(reason)) => out += &format!("  cpu only        {reason}\n"),
        (None, None) => {}
    }
    if s.mean_distance.is_finite() {
        out += &format!(
            "  root motion     {:.2} m walked per character on average\n",
            s.mean_distance
        );
    }
    out
}
