//! `viewer`: the crowd in a window, drawn every frame through the same path as `crowd`
//! (pipeline → mapped palette ring → renderer, [`sinew_gpu::crowd_frames::CrowdFrames`]), then
//! composited with a text panel onto the window's surface.
//!
//! The built-in crowd is `crowd`'s, set up by the same code ([`crate::crowd`],
//! [`crate::ground`]): driven by the crowd controller, feet placed on the height field (drawn,
//! `ground_pass`), heads looking at the camera. The panel shows the controller's and the
//! pose stages' state (`state`). A glTF model plays plain clips.
//!
//! Bad input ends the run with one message and no panic: no display (winit's event loop
//! fails), no adapter, a surface the adapter cannot present to, a model that fails to load, a
//! script with a bad line, a device that is lost. A window closed mid-frame ends the loop
//! after that frame; a window resized to 0×0 (minimised) draws nothing until it has a size
//! again.

mod camera;
mod ground_pass;
mod inspect;
mod lod;
mod present;
pub mod script;
mod state;
pub mod text;

pub use ground_pass::{CELLS as GROUND_CELLS, GROUND_COLORS};

pub use camera::{CameraMode, ViewCamera};

use crate::crowd::{
    CrowdOptions, Model, ModelKind, SPACING, character_speed, controller_state_for, hash01,
    load_model, model_controller, set_speed, spawn_crowd, trigger_waves,
};
use crate::ground::Procedural;
use glam::{Affine3A, Vec3};
use ground_pass::GroundPass;
use inspect::{InspectStage, Inspected, ReportSlot};
use present::Presenter;
use script::Script;
use sinew_fixtures::builtin::{RUN_SPEED, WALK_SPEED};
use sinew_gpu::context::GpuContext;
use sinew_gpu::crowd_frames::{CrowdFrames, Rasteriser};
use sinew_gpu::palette_ring::crowd_palette_len;
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{AssetRegistry, Clip};
use sinew_jobs::component::{
    AnimationToProcess, Animations, EntityTransform, FrameSlot, RootMotion, SamplingCursors,
};
use sinew_jobs::controller::{Controller, ControllerState};
use sinew_jobs::ik::LookAt;
use sinew_jobs::pipeline::{PipelineConfig, PipelineNodes};
use sinew_jobs::pose_stage::PoseStages;
use sinew_runtime::store::{Entity, Store};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use winit::application::ApplicationHandler;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, EventLoop};
use winit::keyboard::{Key, NamedKey};
use winit::window::{Window, WindowId};

/// A viewer key (also a script's `key` name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Space: pause or resume.
    Pause,
    /// `.`: while paused, advance one frame.
    Step,
    /// `+`: double the playback speed.
    Faster,
    /// `-`: halve the playback speed.
    Slower,
    /// Tab: pick the next character (its skeleton is drawn).
    PickNext,
    /// Pick the character of this spawn index (a script's `pick INDEX`; a click picks the
    /// one under the cursor).
    Pick(usize),
    /// Escape: drop the pick.
    Unpick,
    /// `N`: the next clip set (the built-in crowd: its controller, then the plain crowd
    /// blend, then each clip alone; a glTF model: the blend, then each clip).
    NextClip,
    /// `C`: orbit ↔ fly.
    CameraMode,
    /// `L`: level of detail on or off.
    Lod,
    /// `I`: the pose stages (foot placement, look-at) on or off.
    Ik,
    /// `V`: the next walking speed for the controller (each character its own, idle, walk,
    /// run, a faster run), for the picked character or, with none picked, for all.
    Speed,
    /// `G`: the controller's `wave` trigger, for the picked character or all.
    Wave,
}

impl Action {
    /// The script names, in [`Action::from_name`]'s order.
    pub const NAMES: [&'static str; 12] = [
        "pause", "step", "faster", "slower", "pick", "unpick", "clip", "camera", "lod", "ik",
        "speed", "wave",
    ];

    /// The action of a script name.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "pause" => Self::Pause,
            "step" => Self::Step,
            "faster" => Self::Faster,
            "slower" => Self::Slower,
            "pick" => Self::PickNext,
            "unpick" => Self::Unpick,
            "clip" => Self::NextClip,
            "camera" => Self::CameraMode,
            "lod" => Self::Lod,
            "ik" => Self::Ik,
            "speed" => Self::Speed,
            "wave" => Self::Wave,
            _ => return None,
        })
    }
}

/// What to show.
#[derive(Clone, Debug)]
pub struct ViewerOptions {
    /// Characters.
    pub count: usize,
    /// The user's character instead of the built-in one.
    pub gltf: Option<PathBuf>,
    /// The renderer (default: by adapter type).
    pub raster: Option<Rasteriser>,
    /// A scripted camera and keys (fixed 1/60 s steps).
    pub script: Option<PathBuf>,
    /// Frames to draw before closing (default: until the window is closed).
    pub frames: Option<usize>,
    /// Save the last frame (what the window shows) as a PNG.
    pub screenshot: Option<PathBuf>,
    /// With `screenshot`: write the camera and each character's position at that frame as
    /// JSON (what a test needs to check the image).
    pub report: Option<PathBuf>,
    /// Window size.
    pub size: (u32, u32),
    /// `L`: characters farther than this (model units: metres for the built-in character)
    /// play baked textures; default ten grid spacings (20 m for the built-in character).
    pub lod_distance: Option<f32>,
}

impl Default for ViewerOptions {
    fn default() -> Self {
        Self {
            count: 1000,
            gltf: None,
            raster: None,
            script: None,
            frames: None,
            screenshot: None,
            report: None,
            size: (1280, 720),
            lod_distance: None,
        }
    }
}

/// What `N` sets the crowd to play.
#[derive(Clone, Debug)]
enum ClipSet {
    /// The crowd controller drives every character.
    Controller,
    /// The plain crowd's animations ([`crate::crowd::animations_for`]).
    Blend,
    /// One clip for everyone.
    Clip(Arc<Clip>),
}

/// The speeds `V` cycles through, m/s (`None`: each character its own, as spawned).
const SPEEDS: [Option<f32>; 5] = [
    None,
    Some(0.0),
    Some(WALK_SPEED),
    Some(RUN_SPEED),
    Some(6.0),
];

/// The clip sets `N` cycles through: the controller (built-in crowd), the crowd's own
/// animations, then each clip alone.
fn clip_sets(model: &Model, controlled: bool) -> Vec<(String, ClipSet)> {
    let mut sets = Vec::new();
    if controlled {
        sets.push(("controller".to_string(), ClipSet::Controller));
    }
    sets.push(("crowd blend".to_string(), ClipSet::Blend));
    let clips: Vec<Arc<Clip>> = match &model.kind {
        ModelKind::Builtin {
            walk,
            run,
            idle,
            wave,
            ..
        } => vec![walk.clone(), run.clone(), idle.clone(), wave.clone()],
        ModelKind::Gltf { clips } => clips.clone(),
    };
    sets.extend(
        clips
            .into_iter()
            .map(|c| (c.name().to_string(), ClipSet::Clip(c))),
    );
    sets
}

/// The mesh's skeleton: per mesh bone, its bind-pose joint position (model space) and the
/// nearest ancestor that is a mesh bone.
struct Skeleton {
    joints: Vec<Vec3>,
    parents: Vec<Option<usize>>,
}

impl Skeleton {
    fn new(model: &Model) -> Self {
        let mesh = &model.mesh;
        let joints = mesh
            .inverse_binds()
            .iter()
            .map(|ib| ib.inverse().translation.into())
            .collect();
        let mesh_of_rig: Vec<Option<usize>> = model
            .rig
            .bone_hashes()
            .iter()
            .map(|h| mesh.bones().iter().position(|b| b.hash == *h))
            .collect();
        let parents = mesh
            .bones()
            .iter()
            .map(|b| {
                let mut bone = model.rig.find(b.hash)?;
                while let Some(p) = model.rig.parent(bone) {
                    if let Some(m) = mesh_of_rig.get(p.get()).copied().flatten() {
                        return Some(m);
                    }
                    bone = p;
                }
                None
            })
            .collect();
        Self { joints, parents }
    }

    /// World-space bone segments of a character drawn with `palette` at `world`.
    fn segments(&self, palette: &[[f32; 12]], world: Affine3A) -> Vec<[Vec3; 2]> {
        let p: Vec<Vec3> = self
            .joints
            .iter()
            .zip(palette)
            .map(|(j, m)| world.transform_point3(Affine3A::from_cols_array(m).transform_point3(*j)))
            .collect();
        self.parents
            .iter()
            .enumerate()
            .filter_map(|(i, parent)| Some([*p.get((*parent)?)?, *p.get(i)?]))
            .collect()
    }
}

/// The crowd and its playback state.
struct Crowd {
    model: Model,
    store: Store,
    animator: Animator,
    entities: Vec<Entity>,
    /// Which character each entity is (its spawn index), for the wave triggers.
    ids: Vec<u64>,
    sets: Vec<(String, ClipSet)>,
    set: usize,
    /// The crowd controller (`None` for a glTF model).
    controller: Option<Arc<Controller>>,
    /// The pose stages' components (`None` for a rig without the built-in legs and head).
    procedural: Option<Procedural>,
    /// Whether the pose stages run (`I`; off while LOD is on).
    ik: bool,
    /// Frames simulated (`dt > 0`): the wave triggers' clock.
    sim_frame: u64,
    /// `V`: the index in [`SPEEDS`] last set.
    speed_preset: usize,
    /// The entity that has [`Inspected`], and where its foot placement report arrives.
    inspected: Option<Entity>,
    feet: ReportSlot,
    skeleton: Skeleton,
    paused: bool,
    step: bool,
    speed: f32,
    picked: Option<usize>,
    picked_palette: Vec<[f32; 12]>,
    chest: f32,
    /// Distance between grid neighbours, model units.
    spacing: f32,
    /// Characters per grid row.
    grid: usize,
    lod: Option<lod::ViewerLod>,
    /// A one-line answer to the last key that could not be done.
    notice: Option<String>,
}

impl Crowd {
    /// The built-in crowd as `crowd` sets it up (controller, foot placement on the height field,
    /// look-at), or the user's glTF model on plain clips. `eye`: where the heads look first.
    fn new(opts: &ViewerOptions, eye: impl Fn(usize, f32, f32) -> Vec3) -> Result<Self, String> {
        if opts.count == 0 {
            return Err("--count must be at least 1".into());
        }
        let crowd_opts = CrowdOptions {
            gltf: opts.gltf.clone(),
            ..CrowdOptions::default()
        };
        let model = load_model(&crowd_opts, &AssetRegistry::new())?;
        let grid = (opts.count as f64).sqrt().ceil() as usize;
        let controller = model_controller(&model)?;
        let mut store = Store::new();
        let entities = spawn_crowd(
            &mut store,
            &model,
            controller.as_ref(),
            opts.count,
            grid,
            None,
        )?;
        // The crowd's grid is 2 m apart, for a person-sized model; a model whose footprint is
        // more than twice that (a model in other units: Fox is in centimetres) gets a grid of
        // 1.2 footprints.
        let (lo, hi) = model.mesh.positions().iter().fold(
            (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
            |(lo, hi), p| (lo.min(*p), hi.max(*p)),
        );
        let size = (hi - lo).max(Vec3::ZERO);
        let height = hi.y.max(0.0);
        let footprint = size.x.max(size.z);
        let spacing = if footprint > 2.0 * SPACING {
            1.2 * footprint
        } else {
            SPACING
        };
        if spacing > SPACING {
            for &e in &entities {
                let t = store
                    .get_mut::<EntityTransform>(e)
                    .map_err(|e| format!("spawn: {e}"))?;
                t.0.translation *= spacing / SPACING;
            }
        }
        let chest = 0.7 * height;
        // The stages of `crowd`, after the viewer's inspect stage (which reads the picked
        // character's pre-stage matrices and edits nothing).
        let procedural = Procedural::for_rig(&model.rig, eye(grid, spacing, chest));
        let (inspect, feet) = InspectStage::new();
        let stages = match &procedural {
            Some(p) => {
                p.equip_all(&mut store, &entities)?;
                crate::ground::stages_after(PoseStages::new().with(inspect))
            }
            None => PoseStages::new(),
        };
        let animator =
            Animator::with_stages(&mut store, PipelineConfig::default(), &stages, |_, _| {})
                .map_err(|e| format!("graph: {e}"))?;
        Ok(Self {
            sets: clip_sets(&model, controller.is_some()),
            skeleton: Skeleton::new(&model),
            model,
            store,
            animator,
            ids: (0..entities.len() as u64).collect(),
            entities,
            set: 0,
            ik: procedural.is_some(),
            controller,
            procedural,
            sim_frame: 0,
            speed_preset: 0,
            inspected: None,
            feet,
            paused: false,
            step: false,
            speed: 1.0,
            picked: None,
            picked_palette: Vec::new(),
            chest,
            spacing,
            grid,
            lod: None,
            notice: None,
        })
    }

    fn next_clip(&mut self) -> Result<(), String> {
        if self.lod.is_some() {
            self.notice =
                Some("LOD on: each character plays its one baked clip (L turns it off)".into());
            return Ok(());
        }
        self.apply_set((self.set + 1) % self.sets.len().max(1))
    }

    /// Gives every character clip set `set`: the controller (a fresh state each, at its own
    /// speed), or plain animations without it.
    fn apply_set(&mut self, set: usize) -> Result<(), String> {
        self.set = set;
        let chosen = self.sets.get(self.set).map(|s| s.1.clone());
        let err = |e: sinew_runtime::store::StoreError| format!("clip change: {e}");
        for (&e, &i) in self.entities.iter().zip(&self.ids) {
            let list = match (&chosen, &self.controller) {
                (Some(ClipSet::Controller), Some(c)) => {
                    let state = controller_state_for(c, &self.model.rig, i)?;
                    self.store.insert(e, state).map_err(err)?;
                    Vec::new() // the controller writes the list
                }
                (Some(ClipSet::Clip(c)), _) => {
                    vec![AnimationToProcess::new(c.clone()).at(hash01(i, 2) * c.duration())]
                }
                _ => crate::crowd::animations_for(&self.model, i),
            };
            if !matches!(chosen, Some(ClipSet::Controller))
                && self.store.has::<ControllerState>(e).map_err(err)?
            {
                self.store.remove::<ControllerState>(e).map_err(err)?;
            }
            self.store.get_mut::<Animations>(e).map_err(err)?.set(list);
            // The new clips have other timelines and root tracks: start both afresh.
            *self.store.get_mut::<SamplingCursors>(e).map_err(err)? = SamplingCursors::default();
            *self.store.get_mut::<RootMotion>(e).map_err(err)? = RootMotion::default();
        }
        self.speed_preset = 0;
        Ok(())
    }

    /// Takes every character off its controller (LOD: the baked tier plays single clips).
    fn detach_controller(&mut self) -> Result<(), String> {
        for &e in &self.entities {
            let err = |e: sinew_runtime::store::StoreError| format!("lod: {e}");
            if self.store.has::<ControllerState>(e).map_err(err)? {
                self.store.remove::<ControllerState>(e).map_err(err)?;
            }
        }
        Ok(())
    }

    /// Gives every character the pose stages' components, or takes them away.
    fn equip_stages(&mut self, on: bool) -> Result<(), String> {
        let Some(p) = &self.procedural else {
            return Ok(());
        };
        for &e in &self.entities {
            match on {
                true => p.equip(&mut self.store, e)?,
                false => Procedural::unequip(&mut self.store, e)?,
            }
        }
        Ok(())
    }

    /// Whether the pose stages run this frame.
    fn stages_running(&self) -> bool {
        self.ik && self.lod.is_none() && self.procedural.is_some()
    }

    /// `I`.
    fn toggle_ik(&mut self) -> Result<(), String> {
        if self.procedural.is_none() {
            self.notice =
                Some("no IK for this rig: foot placement needs the built-in legs and head".into());
        } else if self.lod.is_some() {
            self.notice = Some("LOD on: the baked tier plays clips alone (L turns it off)".into());
        } else {
            self.ik = !self.ik;
            self.equip_stages(self.ik)?;
        }
        Ok(())
    }

    /// The controller states `V` and `G` change: the picked character's, or everyone's.
    fn targets(&self) -> Vec<(Entity, u64)> {
        match self.picked {
            Some(p) => self
                .entities
                .get(p)
                .zip(self.ids.get(p))
                .map(|(&e, &i)| (e, i))
                .into_iter()
                .collect(),
            None => self
                .entities
                .iter()
                .copied()
                .zip(self.ids.clone())
                .collect(),
        }
    }

    /// Runs `f` on the controller state of each of [`Crowd::targets`]; says so when there is
    /// none (a glTF model, a plain clip set, LOD).
    fn with_controllers(
        &mut self,
        mut f: impl FnMut(&mut ControllerState, u64) -> Result<(), String>,
    ) -> Result<(), String> {
        let targets = self.targets();
        let mut changed = 0;
        for (e, i) in targets {
            if let Ok(state) = self.store.get_mut::<ControllerState>(e) {
                f(state, i)?;
                changed += 1;
            }
        }
        if changed == 0 {
            self.notice = Some(match (&self.controller, &self.lod) {
                (None, _) => "no controller: a glTF file plays plain clips".into(),
                (Some(_), Some(_)) => "LOD on: no controller (L turns it off)".into(),
                (Some(_), None) => "no controller in this clip set: N back to 'controller'".into(),
            });
        }
        Ok(())
    }

    /// `V`: the next of [`SPEEDS`].
    fn next_speed(&mut self) -> Result<(), String> {
        let preset = (self.speed_preset + 1) % SPEEDS.len();
        self.with_controllers(|state, i| {
            set_speed(state, SPEEDS[preset].unwrap_or_else(|| character_speed(i)))
                .map_err(|e| format!("speed: {e}"))
        })?;
        if self.notice.is_none() {
            self.speed_preset = preset;
        }
        Ok(())
    }

    /// `G`: the `wave` trigger.
    fn wave(&mut self) -> Result<(), String> {
        self.with_controllers(|state, _| {
            state.set_trigger("wave").map_err(|e| format!("wave: {e}"))
        })
    }

    /// Before a frame: when it moves, the crowd's own wave triggers; the heads' target at the
    /// eye; the inspected character.
    fn before_frame(&mut self, eye: Vec3, moving: bool) -> Result<(), String> {
        if moving {
            trigger_waves(&mut self.store, &self.entities, &self.ids, self.sim_frame)?;
            self.sim_frame += 1;
        }
        if self.ik && self.lod.is_none() {
            let mut q = self
                .store
                .query::<&mut LookAt>()
                .map_err(|e| format!("look-at: {e}"))?;
            q.for_each(|_, look| look.target = eye);
        }
        self.inspect()
    }

    /// Puts [`Inspected`] on the picked character while the stages run on it (and on no
    /// other), so that the inspect stage reports its foot placement.
    fn inspect(&mut self) -> Result<(), String> {
        let want = self
            .picked
            .and_then(|i| self.entities.get(i).copied())
            .filter(|&e| {
                self.ik
                    && self
                        .store
                        .has::<sinew_jobs::ik::FootPlacement>(e)
                        .unwrap_or(false)
            });
        if want == self.inspected {
            return Ok(());
        }
        let err = |e: sinew_runtime::store::StoreError| format!("inspect: {e}");
        if let Some(old) = self.inspected.take()
            && self.store.has::<Inspected>(old).map_err(err)?
        {
            self.store.remove::<Inspected>(old).map_err(err)?;
        }
        if let (Some(e), Some(p)) = (want, &self.procedural) {
            self.store.insert(e, Inspected(*p.feet())).map_err(err)?;
            self.inspected = Some(e);
        }
        if let Ok(mut r) = self.feet.lock() {
            *r = None;
        }
        Ok(())
    }

    fn position(&self, i: usize) -> Option<Vec3> {
        let e = *self.entities.get(i)?;
        if let Some(p) = self.lod.as_ref().and_then(|l| l.position(e)) {
            return Some(p);
        }
        self.store
            .get::<EntityTransform>(e)
            .ok()
            .map(|t| t.0.translation)
    }

    /// The character whose chest projects nearest to `cursor` (within 40 px).
    fn pick_at(
        &self,
        camera: &sinew_gpu::render::Camera,
        cursor: (f32, f32),
        size: (u32, u32),
    ) -> Option<usize> {
        (0..self.entities.len())
            .filter_map(|i| {
                let p = camera.project(self.position(i)? + Vec3::Y * self.chest, size.0, size.1)?;
                let d = (p.x - cursor.0).hypot(p.y - cursor.1);
                (d < 40.0).then_some((d, i))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, i)| i)
    }
}

/// The device, the window and what draws into it.
struct Gpu {
    ctx: GpuContext,
    lost: Arc<Mutex<Option<String>>>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    frames: CrowdFrames,
    presenter: Presenter,
    /// The height field under the built-in crowd (`None` for a glTF model).
    ground: Option<GroundPass>,
    window: Arc<Window>,
}

/// Rolling timings shown on screen.
#[derive(Default)]
struct Stats {
    frame: Vec<Duration>,
    pipeline: Vec<Duration>,
    ring_wait: Vec<Duration>,
    encode: Vec<Duration>,
    gpu: Vec<Duration>,
    jobs: Vec<(String, Vec<Duration>)>,
    shown: Vec<String>,
    last_update: Option<Instant>,
    /// Whether the stages ran through the frames measured since the last update (`None`:
    /// no frame yet), and whether that changed among them.
    window_ik: Option<bool>,
    window_mixed: bool,
    /// The pose chain's mean time (ms) in the last update that ran without, and with, the
    /// stages: the stages' cost, measured by toggling them (`I`).
    chain_ms: [Option<f64>; 2],
}

fn mean_ms(v: &[Duration]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.iter().map(Duration::as_secs_f64).sum::<f64>() * 1e3 / v.len() as f64
}

struct App {
    opts: ViewerOptions,
    script: Option<Script>,
    crowd: Crowd,
    gpu: Option<Gpu>,
    camera: ViewCamera,
    error: Option<String>,
    frame: usize,
    last_frame: Option<Instant>,
    stats: Stats,
    cursor: (f32, f32),
    dragging: bool,
    drag_from: Option<(f32, f32)>,
    done: bool,
}

/// Runs the viewer until the window is closed or `frames` are drawn.
///
/// # Errors
/// One line saying what failed: no display, no adapter, the model, the script, the device.
pub fn run(opts: ViewerOptions) -> Result<(), String> {
    if opts.size.0 == 0 || opts.size.1 == 0 {
        return Err("--size must be at least 1x1".into());
    }
    if let Some(d) = opts.lod_distance
        && !(d.is_finite() && d > 0.0)
    {
        return Err(format!(
            "--lod-distance must be a positive distance, got {d}"
        ));
    }
    if opts.report.is_some() && opts.screenshot.is_none() {
        return Err("--report needs --screenshot".into());
    }
    let script = opts.script.as_deref().map(Script::load).transpose()?;
    let crowd = Crowd::new(&opts, |grid, spacing, chest| {
        start_camera(grid, spacing, chest).camera().eye
    })?;
    let camera = start_camera(crowd.grid, crowd.spacing, crowd.chest);
    let event_loop = EventLoop::new().map_err(|e| {
        // winit's message starts with its source location; the reason is after it.
        let msg = e.to_string();
        let reason = msg
            .rsplit(".rs:")
            .next()
            .and_then(|r| r.split_once(": "))
            .map_or(msg.as_str(), |r| r.1);
        format!("no display: {reason}")
    })?;
    let mut app = App {
        opts,
        script,
        crowd,
        gpu: None,
        camera,
        error: None,
        frame: 0,
        last_frame: None,
        stats: Stats::default(),
        cursor: (0.0, 0.0),
        dragging: false,
        drag_from: None,
        done: false,
    };
    event_loop
        .run_app(&mut app)
        .map_err(|e| format!("event loop: {e}"))?;
    match app.error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The orbit camera the viewer starts with, over a `grid`-wide crowd.
fn start_camera(grid: usize, spacing: f32, chest: f32) -> ViewCamera {
    let extent = grid as f32 * spacing;
    let centre = Vec3::new(extent * 0.5, 0.7 * chest, extent * 0.5);
    ViewCamera::orbit(centre, extent.max(3.0 * spacing) * 1.1, 0.6, -0.45)
}

impl App {
    fn fail(&mut self, event_loop: &ActiveEventLoop, e: String) {
        if self.error.is_none() {
            self.error = Some(e);
        }
        self.done = true;
        event_loop.exit();
    }

    fn open(&mut self, event_loop: &ActiveEventLoop) -> Result<Gpu, String> {
        let attrs = Window::default_attributes()
            .with_title("sinew viewer")
            .with_inner_size(winit::dpi::PhysicalSize::new(
                self.opts.size.0,
                self.opts.size.1,
            ));
        let window = Arc::new(
            event_loop
                .create_window(attrs)
                .map_err(|e| format!("window: {e}"))?,
        );
        let mut desc = wgpu::InstanceDescriptor::new_with_display_handle_from_env(Box::new(
            event_loop.owned_display_handle(),
        ));
        desc.backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY);
        let instance = wgpu::Instance::new(desc);
        let surface = instance.create_surface(window.clone()).map_err(|e| {
            format!(
                "no GPU backend can draw to this window ({e}); on a machine without a GPU \
                     install a CPU Vulkan driver (Debian: mesa-vulkan-drivers)"
            )
        })?;
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: Some(&surface),
            ..Default::default()
        }))
        .map_err(|e| {
            format!(
                "no GPU adapter can draw to this window ({e}); on a machine without a GPU \
                 install a CPU Vulkan driver (Debian: mesa-vulkan-drivers)"
            )
        })?;
        let optional = wgpu::Features::MAPPABLE_PRIMARY_BUFFERS | wgpu::Features::TIMESTAMP_QUERY;
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("sinew viewer"),
            required_features: adapter.features() & optional,
            required_limits: adapter.limits(),
            ..Default::default()
        }))
        .map_err(|e| format!("device: {e}"))?;
        let lost = Arc::new(Mutex::new(None));
        let on_lost = Arc::clone(&lost);
        device.set_device_lost_callback(move |reason, message| {
            if let Ok(mut l) = on_lost.lock() {
                *l = Some(format!("{reason:?}: {message}"));
            }
        });
        let ctx = GpuContext::from_device(adapter, device, queue).map_err(|e| e.to_string())?;
        let caps = surface.get_capabilities(&ctx.adapter);
        let format = caps
            .formats
            .iter()
            .copied()
            .find(|f| f.is_srgb())
            .or_else(|| caps.formats.first().copied())
            .ok_or_else(|| {
                format!(
                    "the adapter '{}' cannot present to this window",
                    ctx.adapter_info.name
                )
            })?;
        let size = window.inner_size();
        let config = wgpu::SurfaceConfiguration {
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            format,
            color_space: wgpu::SurfaceColorSpace::Auto,
            width: size.width.max(1),
            height: size.height.max(1),
            present_mode: wgpu::PresentMode::AutoVsync,
            desired_maximum_frame_latency: 2,
            alpha_mode: caps
                .alpha_modes
                .first()
                .copied()
                .unwrap_or(wgpu::CompositeAlphaMode::Auto),
            view_formats: vec![],
        };
        surface.configure(&ctx.device, &config);
        let raster = self
            .opts
            .raster
            .unwrap_or_else(|| Rasteriser::for_adapter(&ctx.adapter_info, &self.crowd.model.mesh));
        let entries = crowd_palette_len(&mut self.crowd.store).map_err(|e| e.to_string())?;
        let frames = CrowdFrames::new(
            &ctx,
            &self.crowd.model.rig,
            self.crowd.model.mesh.clone(),
            raster,
            (config.width, config.height),
            entries,
        )
        .map_err(|e| e.to_string())?;
        let mut frames = frames;
        let presenter = Presenter::new(&ctx, format);
        let ground = self
            .crowd
            .procedural
            .is_some()
            .then(|| GroundPass::new(&ctx));
        if ground.is_some() && frames.graphics_targets().is_none() {
            // The compute rasteriser's background becomes transparent: the composite shows
            // the ground's own image there.
            let mut shading = frames.shading();
            shading.clear[3] = 0.0;
            frames.set_shading(shading);
        }
        Ok(Gpu {
            ctx,
            lost,
            surface,
            config,
            frames,
            presenter,
            ground,
            window,
        })
    }

    fn act(&mut self, a: Action) -> Result<(), String> {
        let c = &mut self.crowd;
        c.notice = None;
        match a {
            Action::Pause => c.paused = !c.paused,
            Action::Step => c.step = true,
            Action::Faster => c.speed = (c.speed * 2.0).min(16.0),
            Action::Slower => c.speed = (c.speed * 0.5).max(1.0 / 16.0),
            Action::PickNext => {
                c.picked = Some(c.picked.map_or(0, |p| (p + 1) % c.entities.len().max(1)));
            }
            Action::Pick(i) => {
                if i >= c.entities.len() {
                    return Err(format!(
                        "pick {i}: the crowd has {} characters",
                        c.entities.len()
                    ));
                }
                c.picked = Some(i);
            }
            Action::Unpick => c.picked = None,
            Action::NextClip => c.next_clip()?,
            Action::CameraMode => self.camera.toggle_mode(),
            Action::Ik => c.toggle_ik()?,
            Action::Speed => c.next_speed()?,
            Action::Wave => c.wave()?,
            Action::Lod => match (c.lod.take(), &self.gpu) {
                (Some(l), _) => {
                    l.disable(c)?;
                    c.apply_set(c.set)?;
                    c.equip_stages(c.ik)?;
                }
                (None, Some(gpu)) if gpu.frames.graphics_targets().is_none() => {
                    c.notice = Some(
                        "LOD draws its baked tier with the graphics pipeline: run with --raster graphics"
                            .into(),
                    );
                }
                (None, Some(gpu)) => {
                    // The baked tier plays single clips alone: no controller, no stages.
                    c.detach_controller()?;
                    c.equip_stages(false)?;
                    c.lod = Some(lod::ViewerLod::enable(
                        c,
                        &gpu.ctx,
                        self.opts.lod_distance.unwrap_or(10.0 * c.spacing),
                    )?);
                }
                (None, None) => {}
            },
        }
        Ok(())
    }

    /// One frame: script, pipeline into the ring, draw, composite, present.
    fn redraw(&mut self) -> Result<(), String> {
        let Some(gpu) = self.gpu.as_mut() else {
            return Ok(());
        };
        if let Some(reason) = gpu.lost.lock().ok().and_then(|l| l.clone()) {
            gpu.ctx.report_device_lost(reason);
        }
        if gpu.config.width == 0 || gpu.config.height == 0 {
            return Ok(()); // minimised
        }
        let now = Instant::now();
        let wall_dt = self
            .last_frame
            .map_or(1.0 / 60.0, |t| now.duration_since(t).as_secs_f32());
        self.last_frame = Some(now);
        if let Some(script) = &self.script {
            if let Some((eye, target)) = script.camera_at(self.frame) {
                self.camera = ViewCamera::look_at(eye, target);
            }
            let keys: Vec<Action> = script.keys_at(self.frame).collect();
            for k in keys {
                self.act(k)?;
            }
        }
        let Some(gpu) = self.gpu.as_mut() else {
            return Ok(());
        };
        let surface_texture = match gpu.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(t) => t,
            wgpu::CurrentSurfaceTexture::Suboptimal(t) => {
                gpu.surface.configure(&gpu.ctx.device, &gpu.config);
                t
            }
            wgpu::CurrentSurfaceTexture::Timeout | wgpu::CurrentSurfaceTexture::Occluded => {
                return Ok(());
            }
            wgpu::CurrentSurfaceTexture::Outdated => {
                gpu.surface.configure(&gpu.ctx.device, &gpu.config);
                return Ok(());
            }
            other => return Err(format!("surface: {other:?}")),
        };
        let last = self.opts.frames.is_some_and(|n| self.frame + 1 >= n);
        let c = &mut self.crowd;
        // Scripted runs step 1/60 s a frame (reproducible); interactive ones follow the clock.
        let base = if self.script.is_some() {
            1.0 / 60.0
        } else {
            wall_dt.min(0.1)
        };
        let dt = if c.paused && !c.step {
            0.0
        } else {
            base * c.speed
        };
        c.step = false;
        let eye = self.camera.camera().eye;
        c.before_frame(eye, dt > 0.0)?;
        let mut lod = c.lod.take();
        if let Some(l) = lod.as_mut() {
            l.before(c, eye, dt)?;
        }
        c.lod = lod;
        let picked = c.picked.and_then(|i| c.entities.get(i).copied());
        let bones = c.model.mesh.bone_count();
        let animator = &mut c.animator;
        let picked_palette = &mut c.picked_palette;
        let t0 = Instant::now();
        let (run, split) = gpu
            .frames
            .write(&gpu.ctx, &mut c.store, |store, palette| {
                let r = animator.run_frame_into_mapped(store, dt, palette);
                picked_palette.clear();
                if let Some(e) = picked
                    && let Ok(slot) = store.get::<FrameSlot>(e)
                {
                    let o = slot.palette_offset as usize;
                    if let Some(p) = palette.get(o..o + bones) {
                        picked_palette.extend_from_slice(p);
                    }
                }
                r
            })
            .map_err(|e| e.to_string())?;
        run.map_err(|e| format!("frame {}: {e}", self.frame))?;
        let mut lod = c.lod.take();
        if let Some(l) = lod.as_mut() {
            l.after(c)?;
        }
        c.lod = lod;
        let camera = self.camera.camera();
        let size = (gpu.config.width, gpu.config.height);
        let segments = match picked.and_then(|e| c.store.get::<EntityTransform>(e).ok()) {
            Some(t) if !c.picked_palette.is_empty() => {
                c.skeleton.segments(&c.picked_palette, t.0.to_affine())
            }
            _ => Vec::new(),
        };
        // The panel shows the last half second's means (and the state of this frame).
        // Twice the glyph size on large (high-density) windows.
        gpu.presenter.overlay_scale = if size.0 >= 2400 { 2 } else { 1 };
        let s = &mut self.stats;
        let due = s
            .last_update
            .is_none_or(|t| t.elapsed() > Duration::from_millis(500));
        if due || last {
            if let (Some(ik), false) = (s.window_ik, s.window_mixed)
                && let Some(chain) = s
                    .jobs
                    .iter()
                    .find(|j| j.0 == PipelineNodes::FUSED_CHAIN_NAME)
                && !chain.1.is_empty()
            {
                s.chain_ms[usize::from(ik)] = Some(mean_ms(&chain.1));
            }
            (s.window_ik, s.window_mixed) = (None, false);
            s.shown = overlay_lines(s, c, &gpu.frames, &gpu.ctx, &self.camera);
            s.last_update = Some(Instant::now());
            for v in [
                &mut s.frame,
                &mut s.pipeline,
                &mut s.ring_wait,
                &mut s.encode,
                &mut s.gpu,
            ] {
                v.clear();
            }
            for j in &mut s.jobs {
                j.1.clear();
            }
            let img = text::render_lines(
                &s.shown,
                size.0 as usize / gpu.presenter.overlay_scale.max(1) as usize,
            );
            gpu.presenter.set_text(&gpu.ctx, &img);
        }
        let aspect = size.0 as f32 / size.1 as f32;
        gpu.presenter
            .set_lines(&gpu.ctx, &segments, camera.view_proj(aspect));
        let t_encode = Instant::now();
        let mut encoder = gpu
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("viewer frame"),
            });
        gpu.frames
            .encode(&gpu.ctx, &mut encoder, &camera, false)
            .map_err(|e| e.to_string())?;
        if let (Some(l), Some((color, depth))) = (c.lod.as_mut(), gpu.frames.graphics_targets()) {
            l.encode(
                &gpu.ctx,
                &mut encoder,
                sinew_gpu::baked::draw::DrawTarget { color, depth },
                size,
                camera.view_proj(aspect),
            )?;
        }
        if let Some(ground) = gpu.ground.as_mut() {
            let ahead = (camera.target - camera.eye).normalize_or_zero();
            let distance = self.camera.distance.max(1.0);
            ground.follow(
                &gpu.ctx,
                camera.eye + ahead * distance,
                1.5 * distance + 16.0,
            );
            let view_proj = camera.view_proj(aspect);
            match gpu.frames.graphics_targets() {
                Some(targets) => ground.encode_over(&gpu.ctx, &mut encoder, targets, view_proj),
                None => {
                    let [r, g, b, _] = gpu.frames.shading().clear;
                    ground.encode_own(&gpu.ctx, &mut encoder, size, [r, g, b], view_proj);
                }
            }
        }
        let backdrop = gpu.ground.as_ref().and_then(GroundPass::own_color);
        let view = surface_texture
            .texture
            .create_view(&wgpu::TextureViewDescriptor::default());
        let image = gpu.frames.image();
        gpu.presenter
            .encode(&gpu.ctx, &mut encoder, image, backdrop, size, &view);
        let shot = match (&self.opts.screenshot, last) {
            (Some(_), true) => {
                Some(
                    gpu.presenter
                        .screenshot(&gpu.ctx, &mut encoder, image, backdrop, size)?,
                )
            }
            _ => None,
        };
        let sub = gpu.ctx.queue.submit([encoder.finish()]);
        gpu.frames.submitted(sub);
        gpu.window.pre_present_notify();
        gpu.ctx.queue.present(surface_texture);
        let encode = split.encode + t_encode.elapsed();
        // Timings and text.
        let s = &mut self.stats;
        s.frame.push(t0.elapsed());
        s.pipeline.push(split.pipeline);
        s.ring_wait.push(split.ring_wait);
        s.encode.push(encode);
        s.gpu
            .extend(gpu.frames.gpu_times(&gpu.ctx).map_err(|e| e.to_string())?);
        for t in c.animator.timings() {
            match s.jobs.iter_mut().find(|j| j.0 == t.name) {
                Some(j) => j.1.push(t.duration),
                None => s.jobs.push((t.name.clone(), vec![t.duration])),
            }
        }
        let ik = c.stages_running();
        match s.window_ik {
            None => s.window_ik = Some(ik),
            Some(was) => s.window_mixed |= was != ik,
        }
        if let Some(shot) = shot {
            let image = shot.read(&gpu.ctx).map_err(|e| e.to_string())?;
            if let Some(path) = &self.opts.screenshot {
                image
                    .save_png(path)
                    .map_err(|e| format!("--screenshot {}: {e}", path.display()))?;
            }
            if let Some(path) = &self.opts.report {
                let positions: Vec<[f32; 3]> = (0..c.entities.len())
                    .filter_map(|i| c.position(i).map(|p| p.to_array()))
                    .collect();
                let report = serde_json::json!({
                    "frame": self.frame,
                    "width": size.0,
                    "height": size.1,
                    "eye": camera.eye.to_array(),
                    "target": camera.target.to_array(),
                    "overlay": [
                        gpu.presenter.overlay_scale * text_width(&s.shown, size.0 / gpu.presenter.overlay_scale.max(1)),
                        gpu.presenter.overlay_scale * (s.shown.len() * text::LINE + 4) as u32
                    ],
                    "positions": positions,
                    "picked": c.picked,
                    "lod": c.lod.as_ref().map(|l| {
                        let (cpu, baked) = l.counts();
                        serde_json::json!({ "distance_m": l.distance(), "cpu": cpu, "baked": baked })
                    }),
                    "skeleton_segments": segments.len(),
                    "ground": gpu.ground.is_some(),
                    "state": state::StateSummary::of(c).to_json(),
                    "pose_chain_ms": { "without_ik": s.chain_ms[0], "with_ik": s.chain_ms[1] },
                    "adapter": gpu.ctx.adapter_info.name,
                    "rasteriser": gpu.frames.rasteriser().name(),
                });
                std::fs::write(path, report.to_string())
                    .map_err(|e| format!("--report {}: {e}", path.display()))?;
            }
        }
        self.frame += 1;
        if last {
            self.done = true;
        }
        Ok(())
    }
}

/// The text panel's width in panel pixels, as [`text::render_lines`] lays it out.
fn text_width(lines: &[String], max_width: u32) -> u32 {
    let cols = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    (((cols + 2) * text::GLYPH) as u32).min(max_width.max(text::GLYPH as u32))
}

fn overlay_lines(
    s: &Stats,
    c: &Crowd,
    frames: &CrowdFrames,
    ctx: &GpuContext,
    camera: &ViewCamera,
) -> Vec<String> {
    let gpu = if frames.has_gpu_timer() {
        if s.gpu.is_empty() {
            "gpu -".to_string()
        } else {
            format!("gpu {:.2}", mean_ms(&s.gpu))
        }
    } else {
        "gpu n/a (no timestamp queries)".to_string()
    };
    let mut lines = vec![
        format!(
            "sinew viewer: {} x {} ({} bones), {}",
            c.entities.len(),
            c.model.name(),
            c.model.rig.bone_count(),
            ctx.adapter_info.name
        ),
        format!(
            "frame {:.2} ms: pipeline {:.2}, ring wait {:.2}, encode+submit {:.2}; {gpu}",
            mean_ms(&s.frame),
            mean_ms(&s.pipeline),
            mean_ms(&s.ring_wait),
            mean_ms(&s.encode)
        ),
        format!(
            "{}, {}",
            frames.rasteriser().name(),
            frames.ring().mode().name()
        ),
    ];
    // Job times (ms), two to a line.
    for pair in s.jobs.chunks(2) {
        let cell =
            |(name, v): &(String, Vec<Duration>)| format!("  {name:<20} {:>7.3}", mean_ms(v));
        lines.push(pair.iter().map(cell).collect::<String>());
    }
    let clip = match c.lod {
        Some(_) => "one per character (LOD)",
        None => c.sets.get(c.set).map_or("", |s| s.0.as_str()),
    };
    lines.push(format!(
        "clips: {clip}   playback x{:.3}{}",
        c.speed,
        if c.paused { "   PAUSED" } else { "" }
    ));
    lines.extend(state::StateSummary::of(c).lines(c));
    if c.procedural.is_some() {
        let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3} ms"));
        lines.push(format!(
            "  stage cost: pose chain {} with IK, {} without (I toggles)",
            ms(s.chain_ms[1]),
            ms(s.chain_ms[0])
        ));
    }
    if c.controller.is_some() {
        let speed = match SPEEDS[c.speed_preset] {
            None => "each its own (1-4 m/s)".to_string(),
            Some(v) => format!("{v:.1} m/s"),
        };
        let whom = c.picked.map_or("all".to_string(), |p| format!("#{p}"));
        lines.push(format!("V speed: {speed} (next applies to {whom})"));
    }
    let lod = match &c.lod {
        Some(l) => {
            let (cpu, baked) = l.counts();
            format!(
                "lod {:.0} m: {cpu} CPU pipeline + {baked} baked texture",
                l.distance()
            )
        }
        None => "lod off (L)".to_string(),
    };
    let mode = match camera.mode {
        CameraMode::Orbit => "orbit",
        CameraMode::Fly => "fly",
    };
    let picked = c
        .picked
        .map_or("none".to_string(), |p| format!("#{p} (skeleton)"));
    lines.push(format!("{lod}   camera: {mode}   picked: {picked}"));
    if let Some(n) = &c.notice {
        lines.push(n.clone());
    }
    lines.push("space pause  . step  +/- playback  N clips  V speed  G wave  I ik  L lod".into());
    lines.push(
        "click/tab pick  esc unpick  C orbit/fly  drag turn  wheel zoom  WASD QE move".into(),
    );
    lines
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.gpu.is_some() || self.done {
            return;
        }
        match self.open(event_loop) {
            Ok(g) => {
                g.window.request_redraw();
                self.gpu = Some(g);
            }
            Err(e) => self.fail(event_loop, e),
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        if self.done {
            return;
        }
        match event {
            WindowEvent::CloseRequested | WindowEvent::Destroyed => {
                self.done = true;
                event_loop.exit();
            }
            WindowEvent::Resized(size) => {
                if let Some(gpu) = self.gpu.as_mut() {
                    gpu.config.width = size.width;
                    gpu.config.height = size.height;
                    if size.width > 0 && size.height > 0 {
                        gpu.surface.configure(&gpu.ctx.device, &gpu.config);
                        if let Err(e) = gpu.frames.resize(&gpu.ctx, size.width, size.height) {
                            self.fail(event_loop, e.to_string());
                        }
                    }
                }
            }
            WindowEvent::RedrawRequested => {
                if let Err(e) = self.redraw() {
                    self.fail(event_loop, e);
                } else if self.done {
                    event_loop.exit();
                }
            }
            WindowEvent::KeyboardInput { event, .. } if event.state == ElementState::Pressed => {
                let step = 0.5 * self.camera.distance.max(4.0) / 10.0;
                let action = match event.logical_key.as_ref() {
                    Key::Named(NamedKey::Space) => Some(Action::Pause),
                    Key::Named(NamedKey::Tab) => Some(Action::PickNext),
                    Key::Named(NamedKey::Escape) => Some(Action::Unpick),
                    Key::Character(".") => Some(Action::Step),
                    Key::Character("+") | Key::Character("=") => Some(Action::Faster),
                    Key::Character("-") => Some(Action::Slower),
                    Key::Character("n") | Key::Character("N") => Some(Action::NextClip),
                    Key::Character("c") | Key::Character("C") => Some(Action::CameraMode),
                    Key::Character("l") | Key::Character("L") => Some(Action::Lod),
                    Key::Character("i") | Key::Character("I") => Some(Action::Ik),
                    Key::Character("v") | Key::Character("V") => Some(Action::Speed),
                    Key::Character("g") | Key::Character("G") => Some(Action::Wave),
                    Key::Character(k) => {
                        let (r, u, f) = match k.to_ascii_lowercase().as_str() {
                            "w" => (0.0, 0.0, 1.0),
                            "s" => (0.0, 0.0, -1.0),
                            "a" => (-1.0, 0.0, 0.0),
                            "d" => (1.0, 0.0, 0.0),
                            "q" => (0.0, -1.0, 0.0),
                            "e" => (0.0, 1.0, 0.0),
                            _ => (0.0, 0.0, 0.0),
                        };
                        self.camera.translate(r * step, u * step, f * step);
                        None
                    }
                    _ => None,
                };
                if let Some(a) = action
                    && let Err(e) = self.act(a)
                {
                    self.fail(event_loop, e);
                }
            }
            WindowEvent::CursorMoved { position, .. } => {
                let p = (position.x as f32, position.y as f32);
                if self.dragging {
                    self.camera.turn(p.0 - self.cursor.0, p.1 - self.cursor.1);
                }
                self.cursor = p;
            }
            WindowEvent::MouseInput { state, button, .. } => match (button, state) {
                (MouseButton::Left, ElementState::Pressed) => {
                    self.dragging = true;
                    self.drag_from = Some(self.cursor);
                }
                (MouseButton::Left, ElementState::Released) => {
                    self.dragging = false;
                    // A click (no drag) picks the character under the cursor.
                    if let (Some(from), Some(gpu)) = (self.drag_from.take(), &self.gpu)
                        && (from.0 - self.cursor.0).hypot(from.1 - self.cursor.1) < 4.0
                    {
                        let size = (gpu.config.width, gpu.config.height);
                        self.crowd.picked =
                            self.crowd.pick_at(&self.camera.camera(), self.cursor, size);
                    }
                }
                _ => {}
            },
            WindowEvent::MouseWheel { delta, .. } => {
                let steps = match delta {
                    MouseScrollDelta::LineDelta(_, y) => y,
                    MouseScrollDelta::PixelDelta(p) => p.y as f32 / 40.0,
                };
                self.camera.zoom(steps);
            }
            _ => {}
        }
    }

    fn about_to_wait(&mut self, _event_loop: &ActiveEventLoop) {
        if let Some(gpu) = &self.gpu
            && !self.done
        {
            gpu.window.request_redraw();
        }
    }
}
