//! `crowd --lod DISTANCE`: characters nearer the camera than `DISTANCE` run the nine-job CPU
//! pipeline, farther ones play from baked animation textures, switched per frame by distance
//! with hysteresis. The library's [`LodCrowd`] does the tiering; this module adds what is the
//! example's own: the flying camera ([`lod_camera`]), the switch log and the timings of the
//! summary, and with `lod_check` the pose comparison of the two tiers on every switch frame.
//!
//! A baked texture holds single clips, so in LOD mode every character plays one clip (built-in:
//! walk, run or idle; glTF: its clips) at speed 1 from a phase on the bake's frame grid, and the
//! bake rate defaults to the frame rate: every frame's playback time is a frame time of the
//! bake, where the baked palette equals the CPU one (see `BENCHMARKS.md`, "Baked animation
//! textures"), so the switch frame shows the same pose from both paths.

use crate::crowd::SPACING;
use glam::Vec3;
use sinew_gpu::baked::BakedInstance;
use sinew_jobs::asset::{Clip, Rig, SkinnedMesh};
use sinew_jobs::bake_texture::BakeTextureOptions;
use sinew_jobs::component::{AnimationToProcess, FrameSlot};
use sinew_jobs::frame::PaletteEntry;
use sinew_jobs::lod::{LodCrowd, LodPath, LodSwitch};
use sinew_runtime::store::{Entity, Store};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Camera height above the ground, metres.
pub const CAMERA_HEIGHT: f32 = 6.0;
/// Camera position along z at global time 0, metres (the first row of the grid is at z = 0).
pub const CAMERA_START_Z: f32 = -6.0;
/// Camera speed along +z, metres per second: faster than a walk (1.4 m/s), slower than a run
/// (3.5 m/s), so characters switch in both directions.
pub const CAMERA_SPEED: f32 = 3.0;
/// The camera looks at the ground this far ahead of it, metres.
pub const CAMERA_LOOK_AHEAD: f32 = 25.0;

/// The LOD crowd's camera at global time `g` for a `grid`-wide crowd: `(eye, target)`. It
/// flies along the middle of the grid (x = `(grid − 1)·SPACING/2`) at [`CAMERA_HEIGHT`] from
/// z = [`CAMERA_START_Z`] at [`CAMERA_SPEED`], looking ahead and down.
pub fn lod_camera(grid: usize, g: f32) -> (Vec3, Vec3) {
    let eye = Vec3::new(
        grid.saturating_sub(1) as f32 * SPACING * 0.5,
        CAMERA_HEIGHT,
        CAMERA_START_Z + CAMERA_SPEED * g,
    );
    (eye, eye + Vec3::new(0.0, -CAMERA_HEIGHT, CAMERA_LOOK_AHEAD))
}

/// One switch of one character.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LodEvent {
    /// Frame (0 = the warm-up frame).
    pub frame: usize,
    /// Character index (spawn order).
    pub index: usize,
    /// The tier it switched to.
    pub to: LodPath,
    /// Its position when the switch was decided.
    pub position: Vec3,
    /// The camera's eye then.
    pub camera: Vec3,
    /// With `lod_check`: max distance between the vertices skinned by the CPU palette and by
    /// the baked palette on the switch frame, over the model's bounding-box diagonal.
    pub pose_error: Option<f32>,
}

/// What the LOD crowd did.
#[derive(Clone, Debug, Default)]
pub struct LodSummary {
    /// Switch distance, metres.
    pub distance: f32,
    /// Hysteresis band width, metres.
    pub hysteresis: f32,
    /// Bake rate, frames per second.
    pub rate: f32,
    /// Clips baked (texture order).
    pub clips: Vec<String>,
    /// Time to bake the texture at start.
    pub bake_time: Duration,
    /// Bytes of the texture (RGBA32F).
    pub texture_bytes: usize,
    /// CPU-tier characters on the warm-up frame.
    pub cpu_first: usize,
    /// CPU-tier characters on the last frame.
    pub cpu_last: usize,
    /// Baked-tier characters on the last frame.
    pub baked_last: usize,
    /// Mean CPU-tier characters over the measured frames.
    pub cpu_mean: f64,
    /// Switches over the measured frames.
    pub switches: u64,
    /// Most switches in one frame.
    pub switches_max: usize,
    /// Median CPU time of the pipeline (the CPU tier) per frame.
    pub pipeline_median: Duration,
    /// Median CPU time of the LOD bookkeeping (distances, switches, baked root motion and
    /// instance updates) per frame.
    pub bookkeeping_median: Duration,
    /// Every switch (warm-up frame included; the first assignment is not a switch).
    pub events: Vec<LodEvent>,
    /// Each character's position at the last decision.
    pub last_positions: Vec<Vec3>,
    /// Each character's tier after it.
    pub last_paths: Vec<LodPath>,
    /// The camera's eye then.
    pub last_camera: Vec3,
    /// Largest `pose_error` over the switches, with `lod_check`.
    pub max_pose_error: Option<f32>,
}

impl LodSummary {
    /// Mean switches per measured frame.
    pub fn switches_per_frame(&self, frames: usize) -> f64 {
        self.switches as f64 / frames.max(1) as f64
    }
}

/// The LOD crowd of the example: the library's [`LodCrowd`] plus the camera, the switch log and
/// the timings.
pub(crate) struct LodState {
    crowd: LodCrowd,
    mesh: Arc<SkinnedMesh>,
    grid: usize,
    dt: f32,
    check: bool,
    model_size: f32,
    /// Global time of the last frame (the camera's clock).
    g: f32,
    cpu_counts: Vec<usize>,
    switch_counts: Vec<usize>,
    pipeline: Vec<Duration>,
    bookkeeping: Vec<Duration>,
    summary: LodSummary,
}

fn err<E: std::fmt::Display>(what: &str) -> impl Fn(E) -> String + '_ {
    move |e| format!("--lod: {what}: {e}")
}

impl LodState {
    /// Bakes `clips` at `rate` and adds `entities` (each playing one of `clips`) to the crowd.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        switch: LodSwitch,
        rig: &Rig,
        mesh: Arc<SkinnedMesh>,
        clips: Vec<Arc<Clip>>,
        rate: f32,
        store: &Store,
        entities: &[Entity],
        grid: usize,
        dt: f32,
        check: bool,
    ) -> Result<Self, String> {
        let summary = LodSummary {
            distance: switch.distance(),
            hysteresis: switch.hysteresis(),
            rate,
            clips: clips.iter().map(|c| c.name().to_string()).collect(),
            ..LodSummary::default()
        };
        let t0 = Instant::now();
        let mut crowd = LodCrowd::new(
            switch,
            rig,
            &mesh,
            clips,
            &BakeTextureOptions::new(rate, 8192),
        )
        .map_err(err("bake"))?;
        let bake_time = t0.elapsed();
        for &e in entities {
            crowd.add(store, e).map_err(err("add"))?;
        }
        let (lo, hi) = mesh.positions().iter().fold(
            (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
            |(lo, hi), p| (lo.min(*p), hi.max(*p)),
        );
        let summary = LodSummary {
            bake_time,
            texture_bytes: crowd.texture().texels.len() * 16,
            ..summary
        };
        Ok(Self {
            crowd,
            mesh,
            grid,
            dt,
            check,
            model_size: (hi - lo).length().max(1e-6),
            g: 0.0,
            cpu_counts: Vec::new(),
            switch_counts: Vec::new(),
            pipeline: Vec::new(),
            bookkeeping: Vec::new(),
            summary,
        })
    }

    /// Global time of `frame`.
    fn global_time(&self, frame: usize) -> f32 {
        ((frame + 1) as f64 * f64::from(self.dt)) as f32
    }

    /// Before the pipeline: tiers from the camera of `frame`, switches, baked root motion.
    /// Returns its CPU time.
    pub fn before(&mut self, store: &mut Store, frame: usize) -> Result<Duration, String> {
        let t0 = Instant::now();
        self.g = self.global_time(frame);
        let (camera, _) = lod_camera(self.grid, self.g);
        self.crowd
            .before_frame(store, camera, self.dt)
            .map_err(err("frame"))?;
        self.summary
            .events
            .extend(self.crowd.switches().iter().map(|s| LodEvent {
                frame,
                index: s.index,
                to: s.to,
                position: s.position,
                camera,
                pose_error: None,
            }));
        Ok(t0.elapsed())
    }

    /// After the pipeline: with `lod_check` and the frame's `palette`, measures the pose
    /// difference of every switching character, then lets the crowd park the characters that
    /// switched to baked. Returns the CPU time (checks excluded).
    pub fn after(
        &mut self,
        store: &mut Store,
        palette: Option<&[PaletteEntry]>,
        frame: usize,
    ) -> Result<Duration, String> {
        if self.check
            && let Some(palette) = palette
        {
            self.check_switches(store, palette)?;
        }
        let t0 = Instant::now();
        self.crowd.after_frame(store).map_err(err("frame"))?;
        let cpu = self.crowd.count(LodPath::Cpu);
        if frame == 0 {
            self.summary.cpu_first = cpu;
        } else {
            self.cpu_counts.push(cpu);
            self.switch_counts.push(self.crowd.switches().len());
        }
        Ok(t0.elapsed())
    }

    /// Skins the mesh with the CPU palette and with the baked palette of every character that
    /// switched this frame and records the largest vertex distance over the model size.
    fn check_switches(&mut self, store: &Store, palette: &[PaletteEntry]) -> Result<(), String> {
        let bones = self.mesh.bone_count();
        let mut baked = vec![[0.0f32; 12]; bones];
        let switched = self.crowd.switches().len();
        let first = self.summary.events.len() - switched;
        for (ev, s) in self.summary.events[first..]
            .iter_mut()
            .zip(self.crowd.switches())
        {
            let slot = store
                .get::<FrameSlot>(s.entity)
                .map_err(err("frame slot"))?;
            let off = slot.palette_offset as usize;
            let cpu = palette
                .get(off..off + bones)
                .ok_or_else(|| format!("--lod: palette of character {} out of range", s.index))?;
            self.crowd
                .baked_palette(s.entity, &mut baked)
                .map_err(err("sample"))?;
            let (pa, _) = self.mesh.skin_cpu(cpu);
            let (pb, _) = self.mesh.skin_cpu(&baked);
            let e = pa
                .iter()
                .zip(&pb)
                .map(|(a, b)| (*a - *b).length())
                .fold(0.0f32, f32::max)
                / self.model_size;
            ev.pose_error = Some(e);
            self.summary.max_pose_error = Some(self.summary.max_pose_error.unwrap_or(0.0).max(e));
        }
        Ok(())
    }

    /// Records one measured frame's CPU times.
    pub fn record(&mut self, pipeline: Duration, bookkeeping: Duration) {
        self.pipeline.push(pipeline);
        self.bookkeeping.push(bookkeeping);
    }

    /// The library's crowd (texture, baked instances, global time).
    pub fn crowd(&self) -> &LodCrowd {
        &self.crowd
    }

    /// The baked tier's instances (for drawing).
    pub fn baked_instances(&self) -> Vec<BakedInstance> {
        self.crowd
            .baked_instances()
            .map(BakedInstance::from)
            .collect()
    }

    /// Width of the crowd's grid.
    pub fn grid(&self) -> usize {
        self.grid
    }

    /// Global time of the last frame.
    pub fn time(&self) -> f32 {
        self.g
    }

    /// Bytes of the animations kept aside for the baked tier.
    pub fn parked_animation_bytes(&self) -> usize {
        self.crowd
            .parked_animations()
            .map(|a| a.len() * std::mem::size_of::<AnimationToProcess>())
            .sum()
    }

    /// Writes the baked tier's transforms into the store (for the summary's distances).
    pub fn sync_transforms(&self, store: &mut Store) -> Result<(), String> {
        self.crowd.sync_transforms(store).map_err(err("transform"))
    }

    /// The summary.
    pub fn summary(&self) -> LodSummary {
        let mut s = self.summary.clone();
        s.cpu_last = self.cpu_counts.last().copied().unwrap_or(s.cpu_first);
        s.baked_last = self.crowd.paths().len() - s.cpu_last;
        s.cpu_mean =
            self.cpu_counts.iter().sum::<usize>() as f64 / self.cpu_counts.len().max(1) as f64;
        s.switches = self.switch_counts.iter().sum::<usize>() as u64;
        s.switches_max = self.switch_counts.iter().copied().max().unwrap_or(0);
        s.last_positions = self.crowd.positions().to_vec();
        s.last_paths = self.crowd.paths().to_vec();
        s.last_camera = lod_camera(self.grid, self.g).0;
        s.pipeline_median = crate::crowd::median(&mut self.pipeline.clone());
        s.bookkeeping_median = crate::crowd::median(&mut self.bookkeeping.clone());
        s
    }
}
