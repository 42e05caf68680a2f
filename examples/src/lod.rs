//! `crowd --lod DISTANCE`: characters nearer the camera than `DISTANCE` run the nine-job CPU
//! pipeline, farther ones play from baked animation textures, switched per frame by distance
//! with hysteresis ([`LodSwitch`]).
//!
//! How a frame goes (`g` = global time of the frame, `(frame + 1)·dt`, the time the pipeline's
//! clock node reaches in that frame):
//!
//! 1. Before the pipeline: every character's distance to the camera ([`lod_camera`]) decides
//!    its tier. A character switching baked → CPU gets its `Animations` and `SkinRef` back (it
//!    rejoins the pipeline's entity set), its animation time set to the baked playback time
//!    `phase + g`, and its entity transform set to the one the baked tier kept. A character
//!    switching CPU → baked gets the phase that makes the baked time equal the CPU time; it
//!    still runs in the pipeline this one frame (so its root motion and, with `lod_check`, its
//!    CPU pose are those of the switch frame). Every other baked character is advanced by root
//!    motion exactly as job 6 would ([`sinew_jobs::bake_texture::baked_root_motion`], from the
//!    root pose kept from the last frame to [`BakedRootTrack::pose`] at the new time) and its
//!    [`BakedInstance`] world transform updated.
//! 2. The pipeline runs for the CPU tier.
//! 3. After it: characters that switched to baked leave the pipeline (their `Animations` and
//!    `SkinRef` are kept aside, so that no pipeline node, the clock and the remap cache
//!    included, visits them; the store keeps every other component) and the baked tier keeps
//!    their transform from now on.
//!
//! A baked texture holds single clips, so in LOD mode every character plays one clip (built-in:
//! walk, run or idle; glTF: its clips) at speed 1 from a phase on the bake's frame grid, and the
//! bake rate defaults to the frame rate: every frame's playback time is a frame time of the
//! bake, where the baked palette equals the CPU one (see `BENCHMARKS.md`, "Baked animation
//! textures"), so the switch frame shows the same pose from both paths.

use crate::crowd::SPACING;
use glam::Vec3;
use rayon::prelude::*;
use sinew_gpu::baked::BakedInstance;
use sinew_jobs::asset::{Clip, SkinnedMesh, Transform};
use sinew_jobs::bake_texture::{
    BakeTextureOptions, BakedAnimationTexture, BakedRootTrack, LodClock, LodPath, LodSwitch,
    LodTransition, bake_animation_texture,
};
use sinew_jobs::component::{Animations, EntityTransform, FrameSlot, SkinRef};
use sinew_jobs::frame::PaletteEntry;
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

/// The state of a LOD crowd between frames.
pub(crate) struct LodState {
    switch: LodSwitch,
    pub baked: BakedAnimationTexture,
    clips: Vec<Arc<Clip>>,
    /// Each clip's root track (`None`: no root motion).
    tracks: Vec<Option<BakedRootTrack>>,
    mesh: Arc<SkinnedMesh>,
    clip_of: Vec<u32>,
    clocks: Vec<LodClock>,
    positions: Vec<Vec3>,
    transitions: Vec<LodTransition>,
    /// Switched to baked this frame: they leave the pipeline after it.
    pending: Vec<usize>,
    just_baked: Vec<bool>,
    /// Entity transforms of baked characters (valid while baked).
    world: Vec<Transform>,
    /// The components a baked character leaves the pipeline without (see [`park`]).
    parked: Vec<Option<(Animations, SkinRef)>>,
    /// Each baked character's root pose at its playback time of the last frame (job 6's
    /// unwrapped root), so that a frame samples only the new time.
    root_pose: Vec<Option<(Vec3, glam::Quat)>>,
    /// One baked instance per character (drawn while baked).
    pub instances: Vec<BakedInstance>,
    grid: usize,
    dt: f32,
    check: bool,
    model_size: f32,
    g: f32,
    cpu_counts: Vec<usize>,
    switch_counts: Vec<usize>,
    pipeline: Vec<Duration>,
    bookkeeping: Vec<Duration>,
    summary: LodSummary,
}

/// Takes a character out of the pipeline: its `Animations` (so that neither the clock node
/// nor the nine jobs see it) and its `SkinRef` (so that the remap node and the palette layout
/// skip it), kept aside until it comes back.
fn park(store: &mut Store, e: Entity) -> Result<(Animations, SkinRef), String> {
    let anims = store
        .remove::<Animations>(e)
        .map_err(err("leave pipeline"))?;
    let skin = store.remove::<SkinRef>(e).map_err(err("leave pipeline"))?;
    Ok((anims, skin))
}

fn err<E: std::fmt::Display>(what: &str) -> impl Fn(E) -> String + '_ {
    move |e| format!("--lod: {what}: {e}")
}

impl LodState {
    /// Bakes `clips` at `rate` and prepares `count` characters; `clip_of[i]` is the index in
    /// `clips` that character `i` plays, `start_times[i]` its animation time at spawn.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        switch: LodSwitch,
        rig: &sinew_jobs::asset::Rig,
        mesh: Arc<SkinnedMesh>,
        clips: Vec<Arc<Clip>>,
        rate: f32,
        clip_of: Vec<u32>,
        start_times: &[f32],
        grid: usize,
        dt: f32,
        check: bool,
    ) -> Result<Self, String> {
        let t0 = Instant::now();
        let baked =
            bake_animation_texture(rig, &mesh, &clips, &BakeTextureOptions::new(rate, 8192))
                .map_err(err("bake"))?;
        let bake_time = t0.elapsed();
        let n = clip_of.len();
        let clocks: Vec<LodClock> = start_times
            .iter()
            .map(|&t| LodClock {
                cpu_time: t,
                // Baked playback time phase + g equals the CPU time at every frame.
                phase: t,
                speed: 1.0,
            })
            .collect();
        let instances = clip_of
            .iter()
            .zip(&clocks)
            .map(|(&c, k)| BakedInstance::new(glam::Affine3A::IDENTITY, c, k.phase, k.speed))
            .collect();
        let (lo, hi) = mesh.positions().iter().fold(
            (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
            |(lo, hi), p| (lo.min(*p), hi.max(*p)),
        );
        let summary = LodSummary {
            distance: switch.distance(),
            hysteresis: switch.hysteresis(),
            rate,
            clips: clips.iter().map(|c| c.name().to_string()).collect(),
            bake_time,
            texture_bytes: baked.texels.len() * 16,
            ..LodSummary::default()
        };
        let tracks = clips
            .iter()
            .map(|c| BakedRootTrack::new(c, rig.root()))
            .collect();
        Ok(Self {
            switch,
            baked,
            tracks,
            clips,
            clip_of,
            clocks,
            positions: vec![Vec3::ZERO; n],
            transitions: Vec::new(),
            pending: Vec::new(),
            just_baked: vec![false; n],
            world: vec![Transform::IDENTITY; n],
            parked: vec![None; n],
            root_pose: vec![None; n],
            instances,
            grid,
            dt,
            check,
            model_size: (hi - lo).length().max(1e-6),
            mesh,
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

    /// Step 1 of a frame (see the module docs); returns its CPU time.
    pub fn before(
        &mut self,
        store: &mut Store,
        entities: &[Entity],
        frame: usize,
    ) -> Result<Duration, String> {
        let t0 = Instant::now();
        let g = self.global_time(frame);
        self.g = g;
        let dt = self.dt;
        let (camera, _) = lod_camera(self.grid, g);
        for (i, &e) in entities.iter().enumerate() {
            if self.switch.paths().get(i) == Some(&LodPath::Baked) {
                self.positions[i] = self.world[i].translation;
            } else {
                self.positions[i] = store
                    .get::<EntityTransform>(e)
                    .map_err(err("transform"))?
                    .0
                    .translation;
                let a = store.get::<Animations>(e).map_err(err("animations"))?;
                if let Some(a) = a.as_slice().first() {
                    // The time the pipeline's clock node reaches this frame.
                    self.clocks[i].cpu_time = a.time + a.speed * dt;
                }
            }
        }
        self.switch
            .update(
                camera,
                &self.positions,
                g,
                &mut self.clocks,
                &mut self.transitions,
            )
            .map_err(err("switch"))?;
        self.pending.clear();
        for tr in &self.transitions {
            let i = tr.index;
            let e = entities[i];
            match (tr.to, tr.first) {
                (LodPath::Cpu, true) => {}
                (LodPath::Baked, true) => {
                    self.world[i] = store.get::<EntityTransform>(e).map_err(err("transform"))?.0;
                    self.instances[i].set_world(&self.world[i].to_affine());
                    self.parked[i] = Some(park(store, e)?);
                }
                (LodPath::Cpu, false) => {
                    let (mut anims, skin) = self.parked[i]
                        .take()
                        .ok_or_else(|| format!("--lod: character {i} has no parked animations"))?;
                    let clock = self.clocks[i];
                    for a in anims.iter_mut() {
                        // The clock node adds speed·dt before sampling.
                        a.time = clock.cpu_time - a.speed * dt;
                        a.previous_time = a.time;
                    }
                    store.insert(e, anims).map_err(err("join pipeline"))?;
                    store.insert(e, skin).map_err(err("join pipeline"))?;
                    store
                        .get_mut::<EntityTransform>(e)
                        .map_err(err("transform"))?
                        .0 = self.world[i];
                }
                (LodPath::Baked, false) => {
                    self.pending.push(i);
                    self.just_baked[i] = true;
                    self.instances[i].phase = self.clocks[i].phase;
                    self.instances[i].speed = self.clocks[i].speed;
                }
            }
            if !tr.first {
                self.summary.events.push(LodEvent {
                    frame,
                    index: i,
                    to: tr.to,
                    position: self.positions[i],
                    camera,
                    pose_error: None,
                });
            }
        }
        // The baked tier moves by its clips' root motion, as job 6 would move it.
        let (clips, tracks, paths) = (&self.clips, &self.tracks, self.switch.paths());
        let (clip_of, clocks, just_baked) = (&self.clip_of, &self.clocks, &self.just_baked);
        self.world
            .par_iter_mut()
            .zip(self.instances.par_iter_mut())
            .zip(self.root_pose.par_iter_mut())
            .enumerate()
            .for_each(|(i, ((w, inst), last))| {
                if paths.get(i) != Some(&LodPath::Baked) || just_baked[i] {
                    *last = None;
                    return;
                }
                let k = clocks[i];
                let c = clip_of[i] as usize;
                let (Some(clip), Some(Some(track))) = (clips.get(c), tracks.get(c)) else {
                    return;
                };
                let from = last.unwrap_or_else(|| track.pose(clip, k.baked_time(g - dt)));
                let to = track.pose(clip, k.baked_time(g));
                let ((t0, r0), (t1, r1)) = (from, to);
                w.translation += w.rotation * ((t1 - t0) * w.scale);
                w.rotation = (w.rotation * (r1 * r0.conjugate()).normalize()).normalize();
                *last = Some(to);
                inst.set_world(&w.to_affine());
            });
        Ok(t0.elapsed())
    }

    /// Step 3 of a frame; with `lod_check` and the frame's `palette`, measures the pose
    /// difference of every switching character. Returns the CPU time (checks excluded).
    pub fn after(
        &mut self,
        store: &mut Store,
        entities: &[Entity],
        palette: Option<&[PaletteEntry]>,
        frame: usize,
    ) -> Result<Duration, String> {
        if self.check
            && let Some(palette) = palette
        {
            self.check_switches(store, entities, palette, frame)?;
        }
        let t0 = Instant::now();
        for &i in &self.pending {
            let e = entities[i];
            self.world[i] = store.get::<EntityTransform>(e).map_err(err("transform"))?.0;
            self.instances[i].set_world(&self.world[i].to_affine());
            self.parked[i] = Some(park(store, e)?);
            self.just_baked[i] = false;
        }
        let switched = self.transitions.iter().filter(|t| !t.first).count();
        let cpu = self
            .switch
            .paths()
            .iter()
            .filter(|p| **p == LodPath::Cpu)
            .count();
        if frame == 0 {
            self.summary.cpu_first = cpu;
        } else {
            self.cpu_counts.push(cpu);
            self.switch_counts.push(switched);
        }
        Ok(t0.elapsed())
    }

    fn check_switches(
        &mut self,
        store: &Store,
        entities: &[Entity],
        palette: &[PaletteEntry],
        frame: usize,
    ) -> Result<(), String> {
        let bones = self.mesh.bone_count();
        let mut baked = vec![[0.0f32; 12]; bones];
        for ev in self
            .summary
            .events
            .iter_mut()
            .rev()
            .take_while(|ev| ev.frame == frame)
        {
            let i = ev.index;
            let slot = store
                .get::<FrameSlot>(entities[i])
                .map_err(err("frame slot"))?;
            let off = slot.palette_offset as usize;
            let cpu = palette
                .get(off..off + bones)
                .ok_or_else(|| format!("--lod: palette of character {i} out of range"))?;
            self.baked
                .sample_palette(
                    self.clip_of[i] as usize,
                    self.clocks[i].baked_time(self.g),
                    &mut baked,
                )
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

    /// The baked tier's instances (for drawing).
    pub fn baked_instances(&self) -> Vec<BakedInstance> {
        self.switch
            .paths()
            .iter()
            .zip(&self.instances)
            .filter(|(p, _)| **p == LodPath::Baked)
            .map(|(_, inst)| *inst)
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
        self.parked
            .iter()
            .flatten()
            .map(|(a, _)| {
                a.len() * std::mem::size_of::<sinew_jobs::component::AnimationToProcess>()
            })
            .sum()
    }

    /// Writes the baked tier's transforms into the store (for the summary's distances).
    pub fn sync_transforms(&self, store: &mut Store, entities: &[Entity]) -> Result<(), String> {
        for (i, p) in self.switch.paths().iter().enumerate() {
            if *p == LodPath::Baked
                && let Some(&e) = entities.get(i)
            {
                store
                    .get_mut::<EntityTransform>(e)
                    .map_err(err("transform"))?
                    .0 = self.world[i];
            }
        }
        Ok(())
    }

    /// The summary.
    pub fn summary(&self) -> LodSummary {
        let mut s = self.summary.clone();
        s.cpu_last = self.cpu_counts.last().copied().unwrap_or(s.cpu_first);
        s.baked_last = self.switch.paths().len() - s.cpu_last;
        s.cpu_mean =
            self.cpu_counts.iter().sum::<usize>() as f64 / self.cpu_counts.len().max(1) as f64;
        s.switches = self.switch_counts.iter().sum::<usize>() as u64;
        s.switches_max = self.switch_counts.iter().copied().max().unwrap_or(0);
        s.last_positions.clone_from(&self.positions);
        s.last_paths = self.switch.paths().to_vec();
        s.last_camera = lod_camera(self.grid, self.g).0;
        s.pipeline_median = crate::crowd::median(&mut self.pipeline.clone());
        s.bookkeeping_median = crate::crowd::median(&mut self.bookkeeping.clone());
        s
    }
}
