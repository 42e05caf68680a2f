//! Baked animation textures (seed `003_*`): every clip's skin palette, sampled once at a fixed
//! rate, stored as RGBA texels that a vertex shader reads with `textureLoad`. Mixing baked and
//! CPU-animated characters in one crowd is [`crate::lod`]'s concern.
//!
//! # What is baked
//!
//! For every clip and every frame the bake runs the animation core's own math, as the
//! pipeline does for an entity playing that one clip as a layer-0 override animation with
//! weight 1: [`Clip::sample_bone`] for every bone (what job 4 produces in that case), the
//! root-motion job's in-place correction of the root bone for clips with root motion (as
//! job 6 does for entities that carry [`RootMotion`](crate::component::RootMotion); see
//! [`BakeTextureOptions::root_motion_in_place`]), [`propagate_one`] (job 7) and [`skin_one`]
//! (job 9) with a [`RemapTable`] (job 8). The result is one float3x4 palette entry per **mesh
//! bone**, so the texture belongs to a (rig, mesh) pair and a vertex's joint index addresses it
//! directly.
//!
//! # Frames
//!
//! A clip of duration `d` baked at `rate` frames per second has `n = ceil(d·rate)` intervals
//! (`n = 0` for `d = 0`; a product within `1e-3` above an integer rounds down, so that no
//! interval is shorter than a thousandth of a frame) and stores `n + 1` frames: frame `k < n`
//! at clip time `k / rate`, frame `n` at clip time `d` (the clip's end pose, sampled without
//! wrapping). Playback at clip time `t` interpolates frames `k = min(floor(t·rate), n − 1)`
//! and `k + 1` with `f = (t − t_k) / (t_{k+1} − t_k)`, so the last, possibly shorter, interval
//! ends exactly at `d`. Looping clips wrap `t` into `[0, d)` first: just before the end they
//! approach the end pose (as the CPU sampler does) and at `d` they are back at frame 0;
//! interpolation never reads across the wrap, so it is valid over the loop whether or not the
//! clip's last key equals its first. Non-looping clips clamp `t` to `[0, d]`.
//!
//! Interpolation is a per-element lerp of the two float3x4 matrices, as in the seed (the
//! vertex shader blends matrices, it does not re-slerp bones). At frame times it reproduces the
//! CPU palette; between frames its error shrinks with the rate (see `BENCHMARKS.md`).
//!
//! # Texture layout
//!
//! RGBA32F (or RGBA16F via [`BakedAnimationTexture::texels_f16`]). Three texels per bone per
//! frame, each a **row** of the 3x4 matrix `[m_r0, m_r1, m_r2, t_r]` for `r = 0, 1, 2`, so a
//! shader computes `p'_r = dot(row_r, vec4(p, 1))`. Texels are addressed linearly: the texel
//! of clip `c`, frame `k`, bone `b`, row `r` has index
//! `clips[c].first_texel + (k·bones + b)·3 + r`, stored at `x = index % width`,
//! `y = index / width`. The width is the device's `max_texture_dimension_2d` (or the total
//! texel count, when smaller): rows wrap to the device's limit, and a bake whose height would
//! exceed that limit is rejected. Unused texels at the end are zero.
//!
//! ```
//! use sinew_jobs::asset::AssetRegistry;
//! use sinew_jobs::bake_texture::{BakeTextureOptions, bake_animation_texture};
//! use sinew_fixtures::builtin;
//!
//! let c = builtin::bake_character(&AssetRegistry::new())?;
//! let clips = [c.idle.clone(), c.walk.clone()];
//! let baked = bake_animation_texture(&c.rig, &c.mesh, &clips, &BakeTextureOptions::new(30.0, 8192))?;
//! assert_eq!(baked.clips.len(), 2);
//! assert_eq!(baked.clips[1].frame_count, 31); // walk: 1 s at 30 Hz, frames 0..=30
//! let mut palette = vec![[0.0f32; 12]; c.mesh.bone_count()];
//! baked.sample_palette(1, 0.25, &mut palette)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::asset::{BoneIndex, Clip, ContentHash, Rig, SkinnedMesh, Transform};
use crate::j7_propagate::propagate_one;
use crate::j8_remap_cache::RemapTable;
use crate::j9_skinning::skin_one;
use crate::math::quat_align;
use glam::{Affine3A, Quat, Vec4};
use rayon::prelude::*;
use std::fmt;
use std::sync::Arc;

/// Texels per bone per frame (the three rows of a float3x4).
pub const TEXELS_PER_BONE: u32 = 3;

/// One clip's entry in the clip table, as uploaded to the GPU (32 bytes, `#[repr(C)]`).
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct BakedClip {
    /// Index of the clip's first texel (frame 0, bone 0, row 0).
    pub first_texel: u32,
    /// Stored frames, `n + 1` for `n` intervals (see the module docs); at least 1.
    pub frame_count: u32,
    /// Palette entries (mesh bones) per frame.
    pub bone_count: u32,
    /// 1 when the clip loops, 0 when it clamps.
    pub looping: u32,
    /// Frames per second.
    pub rate: f32,
    /// Clip duration in seconds.
    pub duration: f32,
    /// Padding (zero).
    pub pad: [u32; 2],
}

impl BakedClip {
    /// The number of interpolation intervals, `frame_count − 1`.
    pub fn intervals(&self) -> u32 {
        self.frame_count.saturating_sub(1)
    }

    /// Clip time of stored frame `k` (`k / rate`, the last frame at the duration).
    pub fn frame_time(&self, k: u32) -> f32 {
        if k >= self.intervals() && self.intervals() > 0 {
            self.duration
        } else {
            k as f32 / self.rate
        }
    }

    /// Playback time to clip time, as the shader does it: looping clips wrap into
    /// `[0, duration)` with `t − d·floor(t/d)`, others clamp to `[0, duration]`; non-finite
    /// times give 0.
    pub fn clip_time(&self, t: f32) -> f32 {
        if !t.is_finite() {
            return 0.0;
        }
        let d = self.duration;
        if self.looping != 0 && d > 0.0 {
            let w = t - d * (t / d).floor();
            if w >= d || w < 0.0 { 0.0 } else { w }
        } else {
            t.clamp(0.0, d)
        }
    }

    /// The two stored frames around clip time `tc` and the weight of the second, exactly as
    /// the shader computes them.
    pub fn frame_pair(&self, tc: f32) -> (u32, u32, f32) {
        let n = self.intervals();
        if n == 0 {
            return (0, 0, 0.0);
        }
        let u = (tc * self.rate).max(0.0);
        let k = (u.floor() as u32).min(n - 1);
        let t0 = k as f32 / self.rate;
        let t1 = if k + 1 == n {
            self.duration
        } else {
            (k + 1) as f32 / self.rate
        };
        let span = t1 - t0;
        let f = if span > 0.0 {
            ((tc - t0) / span).clamp(0.0, 1.0)
        } else {
            0.0
        };
        (k, k + 1, f)
    }

    /// Bytes this clip takes in a texture of `bytes_per_texel` (16 for RGBA32F, 8 for RGBA16F).
    pub fn bytes(&self, bytes_per_texel: u64) -> u64 {
        u64::from(self.frame_count)
            * u64::from(self.bone_count)
            * u64::from(TEXELS_PER_BONE)
            * bytes_per_texel
    }
}

/// Options of a bake.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BakeTextureOptions {
    /// Frames per second, finite and in `(0, 10 000]`.
    pub rate: f32,
    /// The device's `max_texture_dimension_2d` (width and height limit), at least 1.
    pub max_texture_dimension: u32,
    /// As [`SkinRef::root_bone`](crate::component::SkinRef::root_bone): palettes relative to
    /// this bone's model transform; `None` for entity space.
    pub root_bone: Option<BoneIndex>,
    /// Bake root-motion clips in place, as the pipeline poses entities that carry
    /// [`RootMotion`](crate::component::RootMotion) (the root bone keeps its clip-start
    /// position and heading; the entity transform moves instead). `false` bakes the clip's
    /// root track as it is, as the pipeline poses entities without `RootMotion`. Default true.
    pub root_motion_in_place: bool,
}

impl BakeTextureOptions {
    /// `rate` frames per second for a device whose textures may be `max_texture_dimension`
    /// texels wide and high; entity space, root motion in place.
    pub fn new(rate: f32, max_texture_dimension: u32) -> Self {
        Self {
            rate,
            max_texture_dimension,
            root_bone: None,
            root_motion_in_place: true,
        }
    }
}

/// Why a bake was rejected: what was wrong and where.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum BakeTextureError {
    /// The rate is not a finite number in `(0, 10 000]` frames per second.
    BadRate {
        /// The rate given.
        rate: f32,
    },
    /// The device limit given is 0.
    BadMaxDimension {
        /// The value given.
        max_texture_dimension: u32,
    },
    /// No clips to bake.
    NoClips,
    /// The mesh has no bones.
    EmptyMesh {
        /// The mesh.
        mesh: String,
    },
    /// A clip was baked for another rig.
    ClipForAnotherRig {
        /// Index of the clip in the list.
        index: usize,
        /// Its name.
        clip: String,
        /// The rig it was baked for (content hash).
        clip_rig: ContentHash,
        /// The rig of this bake.
        rig: ContentHash,
    },
    /// A clip's duration is negative or not finite.
    BadDuration {
        /// Index of the clip in the list.
        index: usize,
        /// Its name.
        clip: String,
        /// The duration.
        duration: f32,
    },
    /// `root_bone` names no bone of the rig.
    RootBoneOutOfRange {
        /// The bone.
        bone: usize,
        /// The rig's bone count.
        bone_count: usize,
    },
    /// The frames do not fit a texture of the device's maximum size.
    TextureTooLarge {
        /// Texels needed.
        texels: u64,
        /// Texture width (the device limit).
        width: u32,
        /// Rows needed.
        rows: u64,
        /// The device's `max_texture_dimension_2d`.
        max_texture_dimension: u32,
    },
    /// A job binding does not match the plan (texel buffer length, clip table).
    LengthMismatch {
        /// The buffer.
        buffer: &'static str,
        /// Expected length.
        expected: usize,
        /// Actual length.
        actual: usize,
    },
    /// A clip index outside the clip table.
    ClipOutOfRange {
        /// The index.
        clip: usize,
        /// Clips in the table.
        clip_count: usize,
    },
}

impl fmt::Display for BakeTextureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadRate { rate } => {
                write!(
                    f,
                    "bake texture: rate {rate} is not a finite number of frames per second in (0, 10000]"
                )
            }
            Self::BadMaxDimension {
                max_texture_dimension,
            } => {
                write!(
                    f,
                    "bake texture: max texture dimension {max_texture_dimension} must be at least 1"
                )
            }
            Self::NoClips => write!(f, "bake texture: no clips to bake"),
            Self::EmptyMesh { mesh } => write!(f, "bake texture: mesh '{mesh}' has no bones"),
            Self::ClipForAnotherRig {
                index,
                clip,
                clip_rig,
                rig,
            } => write!(
                f,
                "bake texture: clip {index} ('{clip}') was baked for rig {:032x}, not for this rig {:032x}",
                clip_rig.0, rig.0
            ),
            Self::BadDuration {
                index,
                clip,
                duration,
            } => {
                write!(
                    f,
                    "bake texture: clip {index} ('{clip}') has duration {duration}"
                )
            }
            Self::RootBoneOutOfRange { bone, bone_count } => {
                write!(
                    f,
                    "bake texture: root bone {bone} is outside the rig's {bone_count} bones"
                )
            }
            Self::TextureTooLarge {
                texels,
                width,
                rows,
                max_texture_dimension,
            } => write!(
                f,
                "bake texture: {texels} texels need {rows} rows of {width}, over the device's max texture dimension {max_texture_dimension}; lower the rate or bake fewer clips per texture"
            ),
            Self::LengthMismatch {
                buffer,
                expected,
                actual,
            } => {
                write!(
                    f,
                    "bake texture: {buffer} has length {actual}, expected {expected}"
                )
            }
            Self::ClipOutOfRange { clip, clip_count } => {
                write!(
                    f,
                    "bake texture: clip {clip} is outside the table of {clip_count} clips"
                )
            }
        }
    }
}

impl std::error::Error for BakeTextureError {}

/// Where everything goes: texture size and the clip table. From [`plan`].
#[derive(Clone, Debug, PartialEq)]
pub struct BakeLayout {
    /// Texture width in texels.
    pub width: u32,
    /// Texture height in texels.
    pub height: u32,
    /// Texels holding frames (the rest, up to `width · height`, are padding).
    pub used_texels: u64,
    /// One entry per clip, in input order.
    pub clips: Vec<BakedClip>,
}

impl BakeLayout {
    /// `width · height`: the texel buffer length a [`BakeTextureJob`] writes.
    pub fn texel_count(&self) -> usize {
        self.width as usize * self.height as usize
    }
}

fn intervals(duration: f32, rate: f32) -> u64 {
    if duration <= 0.0 {
        return 0;
    }
    ((f64::from(duration) * f64::from(rate) - 1e-3).ceil() as u64).max(1)
}

fn check_inputs(
    rig: &Rig,
    mesh: &SkinnedMesh,
    clips: &[Arc<Clip>],
    options: &BakeTextureOptions,
) -> Result<(), BakeTextureError> {
    let rate = options.rate;
    if !rate.is_finite() || rate <= 0.0 || rate > 10_000.0 {
        return Err(BakeTextureError::BadRate { rate });
    }
    if options.max_texture_dimension == 0 {
        return Err(BakeTextureError::BadMaxDimension {
            max_texture_dimension: 0,
        });
    }
    if clips.is_empty() {
        return Err(BakeTextureError::NoClips);
    }
    if mesh.bone_count() == 0 {
        return Err(BakeTextureError::EmptyMesh {
            mesh: mesh.name().to_string(),
        });
    }
    if let Some(b) = options.root_bone.filter(|b| b.get() >= rig.bone_count()) {
        return Err(BakeTextureError::RootBoneOutOfRange {
            bone: b.get(),
            bone_count: rig.bone_count(),
        });
    }
    for (index, c) in clips.iter().enumerate() {
        if c.rig_hash() != rig.content_hash() {
            return Err(BakeTextureError::ClipForAnotherRig {
                index,
                clip: c.name().to_string(),
                clip_rig: c.rig_hash(),
                rig: rig.content_hash(),
            });
        }
        if !c.duration().is_finite() || c.duration() < 0.0 {
            return Err(BakeTextureError::BadDuration {
                index,
                clip: c.name().to_string(),
                duration: c.duration(),
            });
        }
    }
    Ok(())
}

/// Plans a bake: validates the inputs and computes the texture size and clip table.
///
/// # Errors
/// [`BakeTextureError::BadRate`], [`BakeTextureError::BadMaxDimension`],
/// [`BakeTextureError::NoClips`], [`BakeTextureError::EmptyMesh`],
/// [`BakeTextureError::ClipForAnotherRig`], [`BakeTextureError::BadDuration`],
/// [`BakeTextureError::RootBoneOutOfRange`], [`BakeTextureError::TextureTooLarge`].
pub fn plan(
    rig: &Rig,
    mesh: &SkinnedMesh,
    clips: &[Arc<Clip>],
    options: &BakeTextureOptions,
) -> Result<BakeLayout, BakeTextureError> {
    check_inputs(rig, mesh, clips, options)?;
    let bones = mesh.bone_count() as u64;
    let max = options.max_texture_dimension;
    let mut table = Vec::with_capacity(clips.len());
    let mut next: u64 = 0;
    for c in clips {
        let frames = intervals(c.duration(), options.rate) + 1;
        let too_large = |texels: u64| BakeTextureError::TextureTooLarge {
            texels,
            width: max,
            rows: texels.div_ceil(u64::from(max)),
            max_texture_dimension: max,
        };
        let first = u32::try_from(next).map_err(|_| too_large(next))?;
        let frame_count =
            u32::try_from(frames).map_err(|_| too_large(frames.saturating_mul(bones * 3)))?;
        table.push(BakedClip {
            first_texel: first,
            frame_count,
            bone_count: bones as u32,
            looping: u32::from(c.looping()),
            rate: options.rate,
            duration: c.duration(),
            pad: [0; 2],
        });
        next = next.saturating_add(frames.saturating_mul(bones * u64::from(TEXELS_PER_BONE)));
    }
    let width = u64::from(max).min(next.max(1));
    let rows = next.div_ceil(width).max(1);
    if rows > u64::from(max) || next > u64::from(u32::MAX) {
        return Err(BakeTextureError::TextureTooLarge {
            texels: next,
            width: width as u32,
            rows,
            max_texture_dimension: max,
        });
    }
    Ok(BakeLayout {
        width: width as u32,
        height: rows as u32,
        used_texels: next,
        clips: table,
    })
}

/// Bakes the frames of a [`plan`] into a caller's texel buffer, in parallel over frames.
///
/// Inputs: rig, mesh, clips and options as given to [`plan`], and its layout. Output:
/// `texels` (length [`BakeLayout::texel_count`]), RGBA per texel, in the layout of the module
/// docs; padding texels are set to zero. Per-worker scratch (local poses, model matrices, one
/// palette) is allocated by `run`; the bake is an offline step.
#[derive(Debug)]
pub struct BakeTextureJob<'a> {
    /// The rig the clips were baked for.
    pub rig: &'a Rig,
    /// The skinned mesh (palette entries are its bones).
    pub mesh: &'a SkinnedMesh,
    /// The clips, in clip-table order.
    pub clips: &'a [Arc<Clip>],
    /// The options.
    pub options: BakeTextureOptions,
    /// The plan of these inputs.
    pub layout: &'a BakeLayout,
    /// Output texels.
    pub texels: &'a mut [[f32; 4]],
}

impl BakeTextureJob<'_> {
    /// Checks the inputs as [`plan`] does, and that layout and texel buffer match them.
    ///
    /// # Errors
    /// The errors of [`plan`], and [`BakeTextureError::LengthMismatch`] for a clip table or
    /// texel buffer that does not match.
    pub fn validate(&self) -> Result<(), BakeTextureError> {
        let expected = plan(self.rig, self.mesh, self.clips, &self.options)?;
        if expected.clips.len() != self.layout.clips.len() || expected != *self.layout {
            return Err(BakeTextureError::LengthMismatch {
                buffer: "layout (clip table)",
                expected: expected.clips.len(),
                actual: self.layout.clips.len(),
            });
        }
        if self.texels.len() != self.layout.texel_count() {
            return Err(BakeTextureError::LengthMismatch {
                buffer: "texels",
                expected: self.layout.texel_count(),
                actual: self.texels.len(),
            });
        }
        Ok(())
    }

    /// Samples, propagates and skins every frame of every clip and writes its texels.
    pub fn run(&mut self) {
        let table = RemapTable::build(self.rig, self.mesh);
        let bones = self.mesh.bone_count();
        let per_frame = bones * TEXELS_PER_BONE as usize;
        if per_frame == 0 {
            return;
        }
        // (clip, frame) of every frame, in texel order.
        let frames: Vec<(usize, u32)> = self
            .layout
            .clips
            .iter()
            .enumerate()
            .flat_map(|(c, info)| (0..info.frame_count).map(move |k| (c, k)))
            .collect();
        let used = (frames.len() * per_frame).min(self.texels.len());
        let (body, padding) = self.texels.split_at_mut(used);
        padding.fill([0.0; 4]);
        let (rig, mesh, clips, layout, options) =
            (self.rig, self.mesh, self.clips, self.layout, self.options);
        body.par_chunks_mut(per_frame)
            .zip(frames.par_iter())
            .for_each_init(
                || PoseScratch::new(rig, mesh),
                |scratch, (out, &(c, k))| {
                    let (Some(clip), Some(info)) = (clips.get(c), layout.clips.get(c)) else {
                        return;
                    };
                    scratch.palette_at(rig, mesh, &table, clip, info.frame_time(k), &options);
                    write_rows(&scratch.palette, out);
                },
            );
    }
}

/// Scratch buffers for one palette evaluation.
#[derive(Debug)]
struct PoseScratch {
    local: Vec<Transform>,
    model: Vec<Affine3A>,
    palette: Vec<[f32; 12]>,
}

impl PoseScratch {
    fn new(rig: &Rig, mesh: &SkinnedMesh) -> Self {
        Self {
            local: vec![Transform::IDENTITY; rig.bone_count()],
            model: vec![Affine3A::IDENTITY; rig.bone_count()],
            palette: vec![[0.0; 12]; mesh.bone_count()],
        }
    }

    /// The pipeline's palette for `clip` played alone at clip time `t` (not wrapped).
    fn palette_at(
        &mut self,
        rig: &Rig,
        mesh: &SkinnedMesh,
        table: &RemapTable,
        clip: &Clip,
        t: f32,
        options: &BakeTextureOptions,
    ) {
        for (b, l) in self.local.iter_mut().enumerate() {
            *l = clip.sample_bone(BoneIndex(b as u32), t);
        }
        if options.root_motion_in_place && clip.root_motion() {
            let root = rig.root();
            if let Some(pose) = self.local.get_mut(root.get()) {
                // Job 6 for one override animation of weight 1 (same operations, same order).
                let start = clip.sample_bone(root, 0.0);
                let now = *pose;
                let since_r = (now.rotation * start.rotation.conjugate()).normalize();
                let st = (now.translation - start.translation) * 1.0 / 1.0;
                let sr =
                    Quat::from_vec4((quat_align(Vec4::W, since_r) * 1.0).normalize_or(Vec4::W));
                pose.translation -= st;
                pose.rotation = (sr.conjugate() * pose.rotation).normalize();
            }
        }
        propagate_one(rig.parent_indices(), &self.local, &mut self.model);
        let entity_to_root = options
            .root_bone
            .and_then(|b| self.model.get(b.get()))
            .map(|m| m.inverse());
        skin_one(
            &self.model,
            mesh.inverse_binds(),
            table,
            entity_to_root,
            &mut self.palette,
        );
    }
}

/// float3x4 column-major entries → three row texels per entry.
fn write_rows(palette: &[[f32; 12]], out: &mut [[f32; 4]]) {
    for (p, rows) in palette
        .iter()
        .zip(out.chunks_exact_mut(TEXELS_PER_BONE as usize))
    {
        for (r, texel) in rows.iter_mut().enumerate() {
            *texel = [p[r], p[3 + r], p[6 + r], p[9 + r]];
        }
    }
}

/// Three row texels → a float3x4 column-major entry.
#[inline]
fn read_rows(rows: &[[f32; 4]]) -> [f32; 12] {
    let mut m = [0.0; 12];
    for (r, t) in rows.iter().enumerate().take(3) {
        m[r] = t[0];
        m[3 + r] = t[1];
        m[6 + r] = t[2];
        m[9 + r] = t[3];
    }
    m
}

/// A baked animation texture: texels, size and clip table, ready to upload.
#[derive(Clone, Debug)]
pub struct BakedAnimationTexture {
    /// Width in texels.
    pub width: u32,
    /// Height in texels.
    pub height: u32,
    /// `width · height` RGBA texels (layout in the module docs).
    pub texels: Vec<[f32; 4]>,
    /// The clip table, in input order.
    pub clips: Vec<BakedClip>,
    /// The clips' names, in the same order.
    pub clip_names: Vec<String>,
    /// Palette entries per frame (the mesh's bone count).
    pub bone_count: u32,
    /// Content hash of the rig.
    pub rig_hash: ContentHash,
    /// Content hash of the mesh.
    pub mesh_hash: ContentHash,
}

/// Plans, allocates and bakes: the usual way to make a [`BakedAnimationTexture`].
///
/// # Errors
/// As [`plan`].
pub fn bake_animation_texture(
    rig: &Rig,
    mesh: &SkinnedMesh,
    clips: &[Arc<Clip>],
    options: &BakeTextureOptions,
) -> Result<BakedAnimationTexture, BakeTextureError> {
    let layout = plan(rig, mesh, clips, options)?;
    let mut texels = vec![[0.0f32; 4]; layout.texel_count()];
    let mut job = BakeTextureJob {
        rig,
        mesh,
        clips,
        options: *options,
        layout: &layout,
        texels: &mut texels,
    };
    job.validate()?;
    job.run();
    Ok(BakedAnimationTexture {
        width: layout.width,
        height: layout.height,
        texels,
        clips: layout.clips,
        clip_names: clips.iter().map(|c| c.name().to_string()).collect(),
        bone_count: mesh.bone_count() as u32,
        rig_hash: rig.content_hash(),
        mesh_hash: mesh.content_hash(),
    })
}

impl BakedAnimationTexture {
    /// The clip table entry of `clip`.
    ///
    /// # Errors
    /// [`BakeTextureError::ClipOutOfRange`].
    pub fn clip(&self, clip: usize) -> Result<&BakedClip, BakeTextureError> {
        self.clips
            .get(clip)
            .ok_or(BakeTextureError::ClipOutOfRange {
                clip,
                clip_count: self.clips.len(),
            })
    }

    /// The index of the clip with this name.
    pub fn clip_index(&self, name: &str) -> Option<usize> {
        self.clip_names.iter().position(|n| n == name)
    }

    /// The texels of one stored frame (`bone_count · 3`).
    fn frame_texels(&self, info: &BakedClip, k: u32) -> &[[f32; 4]] {
        let per = info.bone_count as usize * TEXELS_PER_BONE as usize;
        let start = info.first_texel as usize + k.min(info.intervals()) as usize * per;
        self.texels.get(start..start + per).unwrap_or(&[])
    }

    /// The palette of stored frame `k` of `clip` (clamped to the last frame).
    ///
    /// # Errors
    /// [`BakeTextureError::ClipOutOfRange`]; [`BakeTextureError::LengthMismatch`] when `out`
    /// is not `bone_count` long.
    pub fn frame_palette(
        &self,
        clip: usize,
        k: u32,
        out: &mut [[f32; 12]],
    ) -> Result<(), BakeTextureError> {
        let info = *self.clip(clip)?;
        self.check_out(out)?;
        for (o, rows) in out
            .iter_mut()
            .zip(self.frame_texels(&info, k).chunks_exact(3))
        {
            *o = read_rows(rows);
        }
        Ok(())
    }

    /// The palette of `clip` at playback time `t` (unwrapped seconds), computed exactly as the
    /// vertex shader does: wrap or clamp, locate the two frames, lerp every matrix element.
    ///
    /// # Errors
    /// As [`BakedAnimationTexture::frame_palette`].
    pub fn sample_palette(
        &self,
        clip: usize,
        t: f32,
        out: &mut [[f32; 12]],
    ) -> Result<(), BakeTextureError> {
        let info = *self.clip(clip)?;
        self.check_out(out)?;
        let (k0, k1, f) = info.frame_pair(info.clip_time(t));
        let (a, b) = (self.frame_texels(&info, k0), self.frame_texels(&info, k1));
        for ((o, ra), rb) in out.iter_mut().zip(a.chunks_exact(3)).zip(b.chunks_exact(3)) {
            let (ma, mb) = (read_rows(ra), read_rows(rb));
            for e in 0..12 {
                o[e] = ma[e] + (mb[e] - ma[e]) * f;
            }
        }
        Ok(())
    }

    fn check_out(&self, out: &[[f32; 12]]) -> Result<(), BakeTextureError> {
        if out.len() != self.bone_count as usize {
            return Err(BakeTextureError::LengthMismatch {
                buffer: "palette",
                expected: self.bone_count as usize,
                actual: out.len(),
            });
        }
        Ok(())
    }

    /// The texels as RGBA16F bit patterns (IEEE half, round to nearest even), for a
    /// half-precision texture.
    pub fn texels_f16(&self) -> Vec<[u16; 4]> {
        self.texels.iter().map(|t| t.map(f32_to_f16_bits)).collect()
    }

    /// A copy whose texels are rounded to half precision and back: what a shader reading the
    /// RGBA16F texture sees (use it to measure the half-float error on the CPU).
    pub fn quantized_f16(&self) -> Self {
        let mut q = self.clone();
        for t in &mut q.texels {
            *t = t.map(|x| f16_bits_to_f32(f32_to_f16_bits(x)));
        }
        q
    }

    /// Texture bytes for RGBA32F (`bytes_per_texel = 16`) or RGBA16F (8), padding included.
    pub fn texture_bytes(&self, bytes_per_texel: u64) -> u64 {
        u64::from(self.width) * u64::from(self.height) * bytes_per_texel
    }
}

/// `f32` → IEEE 754 half-precision bits, rounding to nearest even; overflow gives infinity,
/// NaN stays NaN (quiet), tiny values become subnormal or zero.
pub fn f32_to_f16_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x007f_ffff;
    if exp == 0xff {
        // Inf or NaN (keep NaN quiet and non-zero).
        return sign
            | 0x7c00
            | if man != 0 {
                0x0200 | (man >> 13) as u16
            } else {
                0
            };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        // Subnormal half (or zero): shift the full mantissa (with its implicit 1) right.
        if e < -10 {
            return sign;
        }
        let m = man | 0x0080_0000;
        let shift = (14 - e) as u32;
        let half = m >> shift;
        let rest = m & ((1 << shift) - 1);
        let mid = 1 << (shift - 1);
        let round = u32::from(rest > mid || (rest == mid && half & 1 == 1));
        return sign | (half + round) as u16;
    }
    let half = ((e as u32) << 10) | (man >> 13);
    let rest = man & 0x1fff;
    let round = u32::from(rest > 0x1000 || (rest == 0x1000 && half & 1 == 1));
    // A carry out of the mantissa correctly bumps the exponent (up to infinity).
    sign | (half + round) as u16
}

/// IEEE 754 half-precision bits → `f32` (exact).
pub fn f16_bits_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x03ff);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: value = m · 2^-24.
            let v = m as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, m) => sign | 0x7fc0_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_round_trips_every_finite_half() {
        for h in 0..=u16::MAX {
            let x = f16_bits_to_f32(h);
            if x.is_nan() {
                assert!(f16_bits_to_f32(f32_to_f16_bits(x)).is_nan());
                continue;
            }
            assert_eq!(f32_to_f16_bits(x), h, "half {h:#06x} = {x}");
        }
    }

    #[test]
    fn half_rounds_to_nearest_even() {
        // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1).
        assert_eq!(f32_to_f16_bits(1.0 + 2f32.powi(-11)), 0x3c00);
        // 1 + 3·2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: ties to even (1 + 2^-9).
        assert_eq!(f32_to_f16_bits(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
        // Just above the midpoint rounds up.
        assert_eq!(
            f32_to_f16_bits(1.0 + 2f32.powi(-11) + 2f32.powi(-20)),
            0x3c01
        );
        assert_eq!(f32_to_f16_bits(65504.0), 0x7bff);
        assert_eq!(f32_to_f16_bits(65520.0), 0x7c00); // rounds to infinity
        assert_eq!(f32_to_f16_bits(-2.0), 0xc000);
        assert_eq!(f32_to_f16_bits(2f32.powi(-24)), 0x0001); // smallest subnormal
        assert_eq!(f32_to_f16_bits(2f32.powi(-25)), 0x0000); // tie to even: zero
        assert_eq!(f32_to_f16_bits(3.0 * 2f32.powi(-25)), 0x0002);
        assert_eq!(f32_to_f16_bits(2f32.powi(-14) - 2f32.powi(-25)), 0x0400); // rounds up to the smallest normal
    }

    #[test]
    fn frame_pair_covers_the_last_short_interval() {
        // 0.7 s at 30 Hz: 21 intervals, frame 21 at 0.7 s.
        let c = BakedClip {
            first_texel: 0,
            frame_count: 22,
            bone_count: 1,
            looping: 1,
            rate: 30.0,
            duration: 0.7,
            pad: [0; 2],
        };
        assert_eq!(c.frame_pair(0.0), (0, 1, 0.0));
        let (k0, k1, f) = c.frame_pair(0.69);
        assert_eq!((k0, k1), (20, 21));
        assert!((f - (0.69 - 20.0 / 30.0) / (0.7 - 20.0 / 30.0)).abs() < 1e-5);
        assert_eq!(c.clip_time(0.7), 0.0);
        assert!((c.clip_time(1.5) - 0.1).abs() < 1e-6);
        assert_eq!(intervals(0.7, 30.0), 21);
        assert_eq!(intervals(1.0, 30.0), 30);
        assert_eq!(intervals(1.000_01, 30.0), 30); // within 1e-3 of a frame: rounds down
        assert_eq!(intervals(0.0, 30.0), 0);
    }
}
