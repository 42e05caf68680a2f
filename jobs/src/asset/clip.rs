use super::BakeError;
use super::hash::{BoneHash, ContentHash, ContentHasher, bone_hash};
use super::rig::{BoneIndex, Rig};
use crate::math::soa::{
    ANIMATES_SCALE, ANIMATES_TRANSLATION, BlockKeys, HermiteKeys, LANES, SoaTransform,
};
use crate::math::{
    Transform, flush_negligible, flush_negligible_quat, flush_negligible_vec3, hermite_basis,
    hermite_quat, hermite_vec3, lerp_vec3, nlerp_shortest, slerp_shortest,
};
use glam::{Quat, Vec3};
use std::cell::Cell;
use wide::f32x8;

/// How values between two keys are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Interpolation {
    /// Hold the earlier key's value.
    Step,
    /// Linear for vectors and scalars, shortest-path slerp for rotations.
    Linear,
    /// Cubic Hermite with per-key in and out tangents (derivatives per second); rotations are
    /// interpolated component-wise and normalised. glTF CUBICSPLINE and Unity Bezier curves map
    /// to it.
    Hermite,
}

/// An editable key track: key times (seconds, strictly increasing), values, and for
/// [`Interpolation::Hermite`] in and out tangents (one per key, derivatives per second).
#[derive(Clone, Debug, PartialEq)]
pub struct RawTrack<T> {
    /// How to interpolate.
    pub interpolation: Interpolation,
    /// Key times in seconds.
    pub times: Vec<f32>,
    /// One value per key.
    pub values: Vec<T>,
    /// Hermite only: one in tangent per key. Empty otherwise.
    pub in_tangents: Vec<T>,
    /// Hermite only: one out tangent per key. Empty otherwise.
    pub out_tangents: Vec<T>,
}

impl<T> RawTrack<T> {
    /// A linear track.
    pub fn linear(times: Vec<f32>, values: Vec<T>) -> Self {
        Self {
            interpolation: Interpolation::Linear,
            times,
            values,
            in_tangents: Vec::new(),
            out_tangents: Vec::new(),
        }
    }
    /// A step track.
    pub fn step(times: Vec<f32>, values: Vec<T>) -> Self {
        Self {
            interpolation: Interpolation::Step,
            times,
            values,
            in_tangents: Vec::new(),
            out_tangents: Vec::new(),
        }
    }
    /// A Hermite track.
    pub fn hermite(
        times: Vec<f32>,
        values: Vec<T>,
        in_tangents: Vec<T>,
        out_tangents: Vec<T>,
    ) -> Self {
        Self {
            interpolation: Interpolation::Hermite,
            times,
            values,
            in_tangents,
            out_tangents,
        }
    }
}

/// The tracks of one bone. A missing track leaves that part of the bone at its rest value.
#[derive(Clone, Debug, PartialEq)]
pub struct RawBoneTracks {
    /// The bone's name in the rig.
    pub bone: String,
    /// Translation keys.
    pub translation: Option<RawTrack<Vec3>>,
    /// Rotation keys (need not be normalised; bake normalises them, tangents excepted).
    pub rotation: Option<RawTrack<Quat>>,
    /// Scale keys.
    pub scale: Option<RawTrack<Vec3>>,
}

/// A named float curve (a user curve, e.g. foot contact).
#[derive(Clone, Debug, PartialEq)]
pub struct RawCurve {
    /// Its name.
    pub name: String,
    /// Its keys.
    pub track: RawTrack<f32>,
}

/// An event fired when playback passes its time.
#[derive(Clone, Debug, PartialEq)]
pub struct RawEvent {
    /// Its name.
    pub name: String,
    /// Time in seconds.
    pub time: f32,
    /// A user value.
    pub payload: f32,
}

/// What an additive clip is relative to.
#[derive(Clone, Debug, PartialEq)]
pub enum AdditiveReference {
    /// The rig's rest pose.
    RestPose,
    /// The clip's own pose at its first key time.
    ClipStart,
    /// Explicit per-bone poses; bones not listed use the rest pose.
    Pose(Vec<(String, Transform)>),
}

/// An editable clip.
#[derive(Clone, Debug, PartialEq)]
pub struct RawClip {
    /// Name.
    pub name: String,
    /// Length in seconds; `None` means the last key time over every track.
    pub duration: Option<f32>,
    /// Whether playback wraps.
    pub looping: bool,
    /// Per-bone tracks.
    pub bones: Vec<RawBoneTracks>,
    /// User curves.
    pub curves: Vec<RawCurve>,
    /// Events.
    pub events: Vec<RawEvent>,
    /// Whether the root bone's motion is extracted as root motion (applied to the entity, the
    /// root then held in place).
    pub root_motion: bool,
    /// When set, the clip can be played on additive layers relative to this reference.
    pub additive_reference: Option<AdditiveReference>,
}

impl Default for RawClip {
    fn default() -> Self {
        Self {
            name: String::new(),
            duration: None,
            looping: true,
            bones: Vec::new(),
            curves: Vec::new(),
            events: Vec::new(),
            root_motion: false,
            additive_reference: None,
        }
    }
}

/// A shared sequence of key times. Tracks whose keys fall at the same times share one
/// timeline, so the key search runs once per timeline, not once per track.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    times: Vec<f32>,
}

impl Timeline {
    /// The key times.
    pub fn times(&self) -> &[f32] {
        &self.times
    }

    /// Finds the keys around `t`, starting the search at `cursor` (the result of the previous
    /// frame), so forward playback advances by a step or two instead of searching.
    #[inline]
    pub fn locate(&self, t: f32, cursor: u32) -> KeySpan {
        if let Some(end) = self.outside(t) {
            return end;
        }
        let times = &self.times;
        let last = times.len() - 1;
        // Invariant wanted: times[k] <= t < times[k + 1], k < last.
        let mut k = (cursor as usize).min(last - 1);
        if times[k] <= t {
            let mut steps = 0;
            while times[k + 1] <= t {
                k += 1;
                steps += 1;
                if steps == 4 && times[k + 1] <= t {
                    k = k + times[k..].partition_point(|&x| x <= t) - 1;
                    break;
                }
            }
        } else {
            k = times.partition_point(|&x| x <= t) - 1;
        }
        self.span(k, t)
    }

    /// [`Timeline::locate`] without a cursor: a binary search over all keys, for lookups that
    /// jump anywhere in the clip (the reference sampler, root motion's previous time).
    #[inline]
    pub fn search(&self, t: f32) -> KeySpan {
        match self.outside(t) {
            Some(end) => end,
            None => self.span(self.times.partition_point(|&x| x <= t) - 1, t),
        }
    }

    /// The span held at an end when `t` is not strictly inside the keys (or is NaN, or the
    /// timeline has fewer than two keys); `None` when `times[0] < t < times[last]`.
    #[inline]
    fn outside(&self, t: f32) -> Option<KeySpan> {
        let times = &self.times;
        let n = times.len();
        let held = |k: usize| KeySpan {
            k0: k as u32,
            k1: k as u32,
            alpha: 0.0,
            dt: 0.0,
        };
        if n <= 1 || t <= times[0] || t.is_nan() {
            Some(held(0))
        } else if t >= times[n - 1] {
            Some(held(n - 1))
        } else {
            None
        }
    }

    /// The span from key `k` to `k + 1` at `t` (`times[k] <= t < times[k + 1]`).
    #[inline]
    fn span(&self, k: usize, t: f32) -> KeySpan {
        let t0 = self.times[k];
        let dt = self.times[k + 1] - t0;
        KeySpan {
            k0: k as u32,
            k1: k as u32 + 1,
            alpha: (t - t0) / dt,
            dt,
        }
    }
}

/// The two keys around a time and the fraction between them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KeySpan {
    /// The earlier key.
    pub k0: u32,
    /// The later key (equal to `k0` before the first or after the last key).
    pub k1: u32,
    /// Fraction in `[0, 1)`.
    pub alpha: f32,
    /// Seconds between the keys (0 when `k0 == k1`).
    pub dt: f32,
}

/// The keys of a clip whose bone channels all interpolate alike (all LINEAR, or all Hermite)
/// on one shared timeline (glTF exporters usually bake every channel on one grid), stored for
/// the SoA sampler: one row per key, each row `LANES`-bone blocks of `SoaTransform`
/// (translations, rotations, scales of every bone, untracked parts holding the rest value),
/// and for Hermite keys a row of in tangents and one of out tangents per key (untracked parts
/// zero). Sampling a block is two block loads (four with tangents) and a lerp/nlerp (or the
/// cubic) of `LANES` bones at once; the key search happens once per entity and clip.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyGrid {
    timeline: u32,
    blocks: usize,
    slerp_rotations: bool,
    /// Per block, which of translation and scale any lane has a track for
    /// ([`ANIMATES_TRANSLATION`], [`ANIMATES_SCALE`]).
    animated: Vec<u8>,
    rows: Vec<SoaTransform>,
    /// Hermite keys' `(in, out)` tangent rows, laid out as `rows`.
    tangents: Option<(Vec<SoaTransform>, Vec<SoaTransform>)>,
    rotation_tracked: Vec<f32x8>,
    rest: Vec<SoaTransform>,
}

impl KeyGrid {
    /// Index of the shared timeline in [`Clip::timelines`].
    pub fn timeline(&self) -> u32 {
        self.timeline
    }
    /// Number of `LANES`-bone blocks (bones rounded up).
    pub fn blocks(&self) -> usize {
        self.blocks
    }
    /// The rest pose of block `b` (padding lanes are the identity).
    #[inline(always)]
    pub(crate) fn rest_block(&self, b: usize) -> Option<&SoaTransform> {
        self.rest.get(b)
    }
    /// Samples block `b` at a span of the grid's timeline: LINEAR keys' translations and
    /// scales lerped and tracked rotations slerped or nlerped as the clip's
    /// [`LinearRotation`] says, Hermite keys' cubic (rotations normalised), untracked parts at
    /// the rest value (read, not interpolated, where no lane of the block has the track).
    #[inline(always)]
    pub(crate) fn sample_block(&self, b: usize, span: &KeySpan) -> Option<SoaTransform> {
        self.keys_at(span, 1.0)?.sample(b)
    }

    /// The key rows around `span`, with weight `w`, for [`blend_block`] (`None` for a key
    /// out of range).
    ///
    /// [`blend_block`]: crate::math::soa::blend_block
    #[inline]
    pub(crate) fn keys_at(&self, span: &KeySpan, w: f32) -> Option<BlockKeys<'_>> {
        let row = |k: u32| {
            let start = k as usize * self.blocks;
            self.rows.get(start..start + self.blocks)
        };
        let hermite = match &self.tangents {
            Some((in_rows, out_rows)) => {
                let (out0, in1) = (
                    span.k0 as usize * self.blocks,
                    span.k1 as usize * self.blocks,
                );
                Some(HermiteKeys {
                    out0: out_rows.get(out0..out0 + self.blocks)?,
                    in1: in_rows.get(in1..in1 + self.blocks)?,
                    dt: span.dt,
                })
            }
            None => None,
        };
        Some(BlockKeys {
            k0: row(span.k0)?,
            k1: row(span.k1)?,
            s: span.alpha,
            w,
            tracked: &self.rotation_tracked,
            animated: &self.animated,
            slerp: self.slerp_rotations,
            hermite,
        })
    }

    /// Whether the keys are Hermite (the SoA path's single-layer sum takes LINEAR keys only).
    pub(crate) fn is_hermite(&self) -> bool {
        self.tangents.is_some()
    }

    /// Builds the grid when every bone channel is LINEAR on one timeline (rotations slerped
    /// until [`Clip::with_linear_rotation`] says otherwise), or every one Hermite on one.
    fn build(clip: &Clip) -> Option<Self> {
        let (bone_channels, timelines) = (&clip.bone_channels, &clip.timelines);
        let (vec3_values, quat_values, rest) =
            (&clip.vec3_values, &clip.quat_values, &clip.rest_pose);
        let mut timeline = None;
        let mut interpolation = None;
        for c in bone_channels.iter().flatten() {
            let Some(c) = c else { continue };
            let alike = *interpolation.get_or_insert(c.interpolation) == c.interpolation;
            if c.interpolation == Interpolation::Step
                || !alike
                || *timeline.get_or_insert(c.timeline) != c.timeline
            {
                return None;
            }
        }
        let timeline = timeline?;
        let keys = timelines.get(timeline as usize)?.times.len();
        let n = bone_channels.len();
        let blocks = n.div_ceil(LANES);
        let mut rows = Vec::with_capacity(keys * blocks);
        let mut pose = vec![Transform::IDENTITY; blocks * LANES];
        for k in 0..keys {
            for (bone, p) in pose.iter_mut().enumerate().take(n) {
                let r = rest.get(bone).copied().unwrap_or(Transform::IDENTITY);
                let [t, q, s] = bone_channels.get(bone).copied().unwrap_or([None; 3]);
                let v3 = |c: Option<Channel>, d: Vec3| {
                    c.and_then(|c| vec3_values.get(c.first as usize + k).copied())
                        .unwrap_or(d)
                };
                *p = Transform {
                    translation: v3(t, r.translation),
                    rotation: q
                        .and_then(|c| quat_values.get(c.first as usize + k).copied())
                        .unwrap_or(r.rotation),
                    scale: v3(s, r.scale),
                };
            }
            rows.extend(pose.chunks(LANES).map(SoaTransform::from_transforms));
        }
        let tangents = (interpolation == Some(Interpolation::Hermite)).then(|| {
            let rows_of = |vec3: &[Vec3], quat: &[Quat]| {
                let zero = Quat::from_xyzw(0.0, 0.0, 0.0, 0.0);
                let still = Transform {
                    translation: Vec3::ZERO,
                    rotation: zero,
                    scale: Vec3::ZERO,
                };
                let mut rows = Vec::with_capacity(keys * blocks);
                let mut pose = vec![still; blocks * LANES];
                for k in 0..keys {
                    for (bone, p) in pose.iter_mut().enumerate().take(n) {
                        let [t, q, s] = bone_channels.get(bone).copied().unwrap_or([None; 3]);
                        let v3 = |c: Option<Channel>| {
                            c.and_then(|c| vec3.get(c.first_tangent as usize + k).copied())
                                .unwrap_or(Vec3::ZERO)
                        };
                        *p = Transform {
                            translation: v3(t),
                            rotation: q
                                .and_then(|c| quat.get(c.first_tangent as usize + k).copied())
                                .unwrap_or(zero),
                            scale: v3(s),
                        };
                    }
                    rows.extend(pose.chunks(LANES).map(SoaTransform::from_transforms));
                }
                rows
            };
            (
                rows_of(&clip.vec3_in, &clip.quat_in),
                rows_of(&clip.vec3_out, &clip.quat_out),
            )
        });
        let mut rest_padded = vec![Transform::IDENTITY; blocks * LANES];
        rest_padded[..n.min(rest.len())].copy_from_slice(&rest[..n.min(rest.len())]);
        let rotation_tracked = (0..blocks)
            .map(|b| {
                let lanes: [f32; LANES] = std::array::from_fn(|l| {
                    let tracked = bone_channels
                        .get(b * LANES + l)
                        .is_some_and(|c| c[1].is_some());
                    if tracked { 1.0 } else { 0.0 }
                });
                f32x8::from(lanes).simd_gt(f32x8::splat(0.5))
            })
            .collect();
        Some(Self {
            timeline,
            blocks,
            // Baked clips start with glTF's rule; `Clip::with_linear_rotation` switches it.
            slerp_rotations: true,
            animated: (0..blocks)
                .map(|b| {
                    let lanes = bone_channels.iter().skip(b * LANES).take(LANES);
                    lanes.fold(0, |bits, c| {
                        bits | if c[0].is_some() {
                            ANIMATES_TRANSLATION
                        } else {
                            0
                        } | if c[2].is_some() { ANIMATES_SCALE } else { 0 }
                    })
                })
                .collect(),
            rows,
            tangents,
            rotation_tracked,
            rest: rest_padded
                .chunks(LANES)
                .map(SoaTransform::from_transforms)
                .collect(),
        })
    }
}

/// How LINEAR rotation keys are interpolated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LinearRotation {
    /// Spherical linear interpolation along the shortest path (the glTF rule; the default).
    #[default]
    Slerp,
    /// Normalised linear interpolation along the shortest path (what ozz-animation samples;
    /// cheaper, and within `θ³/8` radians of slerp for a key-to-key rotation angle `θ`).
    Nlerp,
}

/// A baked channel: where its keys live.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Channel {
    /// Index into [`Clip::timelines`].
    pub timeline: u32,
    /// Interpolation.
    pub interpolation: Interpolation,
    /// Offset of key 0 in the clip's value array of this channel's type.
    pub first: u32,
    /// Offset of key 0's tangents in the tangent arrays (Hermite only).
    pub first_tangent: u32,
}

/// A baked user curve.
#[derive(Clone, Debug, PartialEq)]
pub struct CurveChannel {
    /// Name.
    pub name: String,
    /// Name hash.
    pub hash: BoneHash,
    /// Keys.
    pub channel: Channel,
}

/// A baked event.
#[derive(Clone, Debug, PartialEq)]
pub struct ClipEvent {
    /// Name.
    pub name: String,
    /// Name hash.
    pub hash: BoneHash,
    /// Time in seconds.
    pub time: f32,
    /// User value.
    pub payload: f32,
}

/// A baked clip, bound to the rig it was baked for (tracks are in the rig's bone order).
///
/// Layout for the sampler: key times live in shared [`Timeline`]s; values are structure of
/// arrays per type (`Vec3` translations and scales, `Quat` rotations, `f32` curves), each
/// channel's keys contiguous, tangents in parallel arrays only for Hermite channels. A clip
/// whose bone channels are all LINEAR, or all Hermite, on one timeline also carries a
/// [`KeyGrid`] (the same keys key-major in 8-bone SoA blocks) for the sampling job's SoA path.
#[derive(Clone, Debug)]
pub struct Clip {
    name: String,
    linear_rotation: LinearRotation,
    duration: f32,
    looping: bool,
    rig_hash: ContentHash,
    /// The rig's name, for errors that name it (not hashed: the hash above identifies the rig).
    rig_name: String,
    timelines: Vec<Timeline>,
    /// Translation, rotation and scale channel of each bone side by side (one cache line per
    /// bone) for the sampler.
    bone_channels: Vec<BoneChannels>,
    vec3_values: Vec<Vec3>,
    vec3_in: Vec<Vec3>,
    vec3_out: Vec<Vec3>,
    quat_values: Vec<Quat>,
    quat_in: Vec<Quat>,
    quat_out: Vec<Quat>,
    f32_values: Vec<f32>,
    f32_in: Vec<f32>,
    f32_out: Vec<f32>,
    curves: Vec<CurveChannel>,
    events: Vec<ClipEvent>,
    root_motion: bool,
    /// With root motion: the rig's root bone and its poses at time 0 and at the clip's end,
    /// which job 6 reads every frame.
    root_ends: Option<(usize, Transform, Transform)>,
    additive_reference: Option<Vec<Transform>>,
    /// The additive reference in `LANES`-bone blocks (empty without one).
    additive_blocks: Vec<SoaTransform>,
    /// Per block, whether the clip changes a pose it is added to there: some lane has a track,
    /// or a reference that differs from the rest pose (elsewhere the delta is the identity).
    additive_changes: Vec<bool>,
    rest_pose: Vec<Transform>,
    grid: Option<KeyGrid>,
    content_hash: ContentHash,
}

struct ClipBuilder<'a> {
    asset: String,
    timelines: Vec<Timeline>,
    vec3_values: Vec<Vec3>,
    vec3_in: Vec<Vec3>,
    vec3_out: Vec<Vec3>,
    quat_values: Vec<Quat>,
    quat_in: Vec<Quat>,
    quat_out: Vec<Quat>,
    f32_values: Vec<f32>,
    f32_in: Vec<f32>,
    f32_out: Vec<f32>,
    hasher: &'a mut ContentHasher,
}

trait KeyValue: Copy {
    fn finite(&self) -> bool;
    fn hash_into(&self, h: &mut ContentHasher);
}
impl KeyValue for Vec3 {
    fn finite(&self) -> bool {
        self.is_finite()
    }
    fn hash_into(&self, h: &mut ContentHasher) {
        h.vec3(*self);
    }
}
impl KeyValue for Quat {
    fn finite(&self) -> bool {
        self.is_finite()
    }
    fn hash_into(&self, h: &mut ContentHasher) {
        h.quat(*self);
    }
}
impl KeyValue for f32 {
    fn finite(&self) -> bool {
        self.is_finite()
    }
    fn hash_into(&self, h: &mut ContentHasher) {
        h.f32(*self);
    }
}

impl ClipBuilder<'_> {
    fn check_track<T: KeyValue>(
        &mut self,
        track: &RawTrack<T>,
        label: &str,
    ) -> Result<u32, BakeError> {
        let asset = &self.asset;
        let n = track.times.len();
        if n == 0 {
            return Err(BakeError::Invalid {
                asset: asset.clone(),
                reason: format!("track '{label}' has no keys"),
            });
        }
        if track.values.len() != n {
            return Err(BakeError::LengthMismatch {
                asset: asset.clone(),
                location: format!("track '{label}' values"),
                expected: n,
                actual: track.values.len(),
            });
        }
        if track.interpolation == Interpolation::Hermite {
            for (what, v) in [
                ("in tangents", &track.in_tangents),
                ("out tangents", &track.out_tangents),
            ] {
                if v.len() != n {
                    return Err(BakeError::LengthMismatch {
                        asset: asset.clone(),
                        location: format!("track '{label}' {what}"),
                        expected: n,
                        actual: v.len(),
                    });
                }
            }
        }
        for (k, t) in track.times.iter().enumerate() {
            if !t.is_finite() {
                return Err(BakeError::NotFinite {
                    asset: asset.clone(),
                    location: format!("track '{label}' key time {k}"),
                });
            }
            if k > 0 && *t <= track.times[k - 1] {
                return Err(BakeError::KeyTimesNotIncreasing {
                    asset: asset.clone(),
                    track: label.to_string(),
                    key: k,
                });
            }
        }
        let all = track
            .values
            .iter()
            .chain(&track.in_tangents)
            .chain(&track.out_tangents);
        if let Some(k) = all.clone().position(|v| !v.finite()) {
            return Err(BakeError::NotFinite {
                asset: asset.clone(),
                location: format!("track '{label}' value or tangent {k}"),
            });
        }
        self.hasher
            .str(label)
            .u64(track.interpolation as u64)
            .f32s(&track.times);
        for v in all {
            v.hash_into(self.hasher);
        }
        // Share timelines with identical key times.
        let idx = match self.timelines.iter().position(|tl| tl.times == track.times) {
            Some(i) => i,
            None => {
                self.timelines.push(Timeline {
                    times: track.times.clone(),
                });
                self.timelines.len() - 1
            }
        };
        Ok(idx as u32)
    }

    fn vec3(&mut self, track: &RawTrack<Vec3>, label: &str) -> Result<Channel, BakeError> {
        let timeline = self.check_track(track, label)?;
        let first = self.vec3_values.len() as u32;
        // Negligible components are stored as zero (see `flush_negligible_vec3`: products
        // of exporter noise are subnormal and stall Intel cores).
        let flushed = |v: &Vec3| flush_negligible_vec3(*v);
        self.vec3_values.extend(track.values.iter().map(flushed));
        let first_tangent = self.vec3_in.len() as u32;
        if track.interpolation == Interpolation::Hermite {
            self.vec3_in.extend(track.in_tangents.iter().map(flushed));
            self.vec3_out.extend(track.out_tangents.iter().map(flushed));
        }
        Ok(Channel {
            timeline,
            interpolation: track.interpolation,
            first,
            first_tangent,
        })
    }

    fn quat(&mut self, track: &RawTrack<Quat>, label: &str) -> Result<Channel, BakeError> {
        let timeline = self.check_track(track, label)?;
        let first = self.quat_values.len() as u32;
        for (k, q) in track.values.iter().enumerate() {
            let len = q.length();
            if len.is_nan() || len <= 1e-6 {
                return Err(BakeError::NotFinite {
                    asset: self.asset.clone(),
                    location: format!("track '{label}' rotation key {k} (zero length)"),
                });
            }
            // Hermite rotations are interpolated component-wise, so keep their scale with the tangents.
            // Negligible components are stored as zero, as in `vec3`.
            if track.interpolation == Interpolation::Hermite {
                self.quat_values.push(flush_negligible_quat(*q));
            } else {
                self.quat_values.push(flush_negligible_quat(*q / len));
            }
        }
        let first_tangent = self.quat_in.len() as u32;
        if track.interpolation == Interpolation::Hermite {
            let flushed = |q: &Quat| flush_negligible_quat(*q);
            self.quat_in.extend(track.in_tangents.iter().map(flushed));
            self.quat_out.extend(track.out_tangents.iter().map(flushed));
        }
        Ok(Channel {
            timeline,
            interpolation: track.interpolation,
            first,
            first_tangent,
        })
    }

    fn scalar(&mut self, track: &RawTrack<f32>, label: &str) -> Result<Channel, BakeError> {
        let timeline = self.check_track(track, label)?;
        let first = self.f32_values.len() as u32;
        self.f32_values.extend_from_slice(&track.values);
        let first_tangent = self.f32_in.len() as u32;
        if track.interpolation == Interpolation::Hermite {
            self.f32_in.extend_from_slice(&track.in_tangents);
            self.f32_out.extend_from_slice(&track.out_tangents);
        }
        Ok(Channel {
            timeline,
            interpolation: track.interpolation,
            first,
            first_tangent,
        })
    }
}

/// A bone's translation, rotation and scale channels.
type BoneChannels = [Option<Channel>; 3];

impl RawClip {
    /// Validates the clip and binds it to `rig`: tracks are stored in the rig's bone order.
    ///
    /// # Errors
    /// [`BakeError`] for a track naming a bone the rig does not have (or named twice), key
    /// times that are not finite or do not increase, array lengths that differ, NaN or
    /// infinite values, zero-length rotations, or a negative or non-finite duration.
    pub fn bake(&self, rig: &Rig) -> Result<Clip, BakeError> {
        let asset = format!("clip '{}'", self.name);
        let mut hasher = ContentHasher::new();
        hasher
            .str("clip")
            .str(&self.name)
            .u64(u64::from(self.looping))
            .u64(u64::from(self.root_motion));
        hasher
            .u64(rig.content_hash().0 as u64)
            .u64((rig.content_hash().0 >> 64) as u64);
        let mut b = ClipBuilder {
            asset: asset.clone(),
            timelines: Vec::new(),
            vec3_values: Vec::new(),
            vec3_in: Vec::new(),
            vec3_out: Vec::new(),
            quat_values: Vec::new(),
            quat_in: Vec::new(),
            quat_out: Vec::new(),
            f32_values: Vec::new(),
            f32_in: Vec::new(),
            f32_out: Vec::new(),
            hasher: &mut hasher,
        };
        let (bone_channels, tracks_end) = self.bake_bone_tracks(rig, &mut b)?;
        let (curves, curves_end) = self.bake_curves(&mut b)?;
        let duration = self.duration_or(tracks_end.max(curves_end), &asset)?;
        let events = self.bake_events(b.hasher, &asset)?;
        b.hasher.f32(duration);
        let ClipBuilder {
            timelines,
            vec3_values,
            vec3_in,
            vec3_out,
            quat_values,
            quat_in,
            quat_out,
            f32_values,
            f32_in,
            f32_out,
            ..
        } = b;
        let mut clip = Clip {
            name: self.name.clone(),
            linear_rotation: LinearRotation::Slerp,
            duration,
            looping: self.looping,
            rig_hash: rig.content_hash(),
            rig_name: rig.name().to_string(),
            timelines,
            bone_channels,
            vec3_values,
            vec3_in,
            vec3_out,
            quat_values,
            quat_in,
            quat_out,
            f32_values,
            f32_in,
            f32_out,
            curves,
            events,
            root_motion: self.root_motion,
            root_ends: None,
            additive_reference: None,
            additive_blocks: Vec::new(),
            additive_changes: Vec::new(),
            rest_pose: rig.rest_pose().to_vec(),
            grid: None,
            content_hash: ContentHash(0),
        };
        clip.grid = KeyGrid::build(&clip);
        if let Some(reference) = &self.additive_reference {
            let poses = additive_reference_poses(reference, &clip, rig, &asset)?;
            for p in &poses {
                hasher.vec3(p.translation).quat(p.rotation).vec3(p.scale);
            }
            let mut padded = poses.clone();
            padded.resize(poses.len().div_ceil(LANES) * LANES, Transform::IDENTITY);
            clip.additive_blocks = padded
                .chunks(LANES)
                .map(SoaTransform::from_transforms)
                .collect();
            clip.additive_reference = Some(poses);
        }
        let reference = clip
            .additive_reference
            .as_deref()
            .unwrap_or(&clip.rest_pose);
        let changes = clip
            .bone_channels
            .chunks(LANES)
            .zip(reference.chunks(LANES).zip(clip.rest_pose.chunks(LANES)))
            .map(|(channels, (reference, rest))| {
                channels.iter().flatten().any(Option::is_some) || reference != rest
            })
            .collect();
        clip.additive_changes = changes;
        if clip.root_motion {
            clip.root_ends = Some(clip.sample_root_ends(rig.root().get()));
        }
        clip.content_hash = hasher.finish();
        Ok(clip)
    }
    /// The bone tracks in the rig's order, `[translation, rotation, scale]` per bone, and the
    /// last key time over them.
    fn bake_bone_tracks(
        &self,
        rig: &Rig,
        b: &mut ClipBuilder<'_>,
    ) -> Result<(Vec<BoneChannels>, f32), BakeError> {
        let mut channels = vec![[None; 3]; rig.bone_count()];
        let mut bound = vec![false; rig.bone_count()];
        let mut last_key = 0.0f32;
        for tracks in &self.bones {
            let bone = rig
                .find_by_name(&tracks.bone)
                .ok_or_else(|| BakeError::UnknownBone {
                    asset: b.asset.clone(),
                    bone: tracks.bone.clone(),
                })?;
            if std::mem::replace(&mut bound[bone.get()], true) {
                return Err(BakeError::Invalid {
                    asset: b.asset.clone(),
                    reason: format!("bone '{}' has two track sets", tracks.bone),
                });
            }
            b.hasher.str(&tracks.bone);
            let [translation, rotation, scale] = &mut channels[bone.get()];
            if let Some(t) = &tracks.translation {
                *translation = Some(b.vec3(t, &format!("{}.translation", tracks.bone))?);
                last_key = last_key.max(t.times.last().copied().unwrap_or(0.0));
            }
            if let Some(t) = &tracks.rotation {
                *rotation = Some(b.quat(t, &format!("{}.rotation", tracks.bone))?);
                last_key = last_key.max(t.times.last().copied().unwrap_or(0.0));
            }
            if let Some(t) = &tracks.scale {
                *scale = Some(b.vec3(t, &format!("{}.scale", tracks.bone))?);
                last_key = last_key.max(t.times.last().copied().unwrap_or(0.0));
            }
        }
        Ok((channels, last_key))
    }

    /// The user curves, and the last key time over them.
    fn bake_curves(&self, b: &mut ClipBuilder<'_>) -> Result<(Vec<CurveChannel>, f32), BakeError> {
        let mut last_key = 0.0f32;
        let curves = self
            .curves
            .iter()
            .map(|c| {
                let channel = b.scalar(&c.track, &format!("curve {}", c.name))?;
                last_key = last_key.max(c.track.times.last().copied().unwrap_or(0.0));
                Ok(CurveChannel {
                    name: c.name.clone(),
                    hash: bone_hash(&c.name),
                    channel,
                })
            })
            .collect::<Result<Vec<_>, BakeError>>()?;
        Ok((curves, last_key))
    }

    /// The given duration, or `last_key` without one.
    fn duration_or(&self, last_key: f32, asset: &str) -> Result<f32, BakeError> {
        match self.duration {
            Some(d) if d.is_finite() && d >= 0.0 => Ok(d),
            Some(_) => Err(BakeError::NotFinite {
                asset: asset.to_string(),
                location: "duration".into(),
            }),
            None => Ok(last_key),
        }
    }

    /// The events, checked, hashed and sorted by time.
    fn bake_events(
        &self,
        hasher: &mut ContentHasher,
        asset: &str,
    ) -> Result<Vec<ClipEvent>, BakeError> {
        let mut events = Vec::with_capacity(self.events.len());
        for e in &self.events {
            if !e.time.is_finite() || !e.payload.is_finite() {
                return Err(BakeError::NotFinite {
                    asset: asset.to_string(),
                    location: format!("event '{}'", e.name),
                });
            }
            hasher.str(&e.name).f32(e.time).f32(e.payload);
            events.push(ClipEvent {
                name: e.name.clone(),
                hash: bone_hash(&e.name),
                time: e.time,
                payload: e.payload,
            });
        }
        events.sort_by(|a, b| a.time.total_cmp(&b.time));
        Ok(events)
    }
}

/// The pose an additive clip is played relative to, one per rig bone.
fn additive_reference_poses(
    reference: &AdditiveReference,
    clip: &Clip,
    rig: &Rig,
    asset: &str,
) -> Result<Vec<Transform>, BakeError> {
    Ok(match reference {
        AdditiveReference::RestPose => rig.rest_pose().to_vec(),
        AdditiveReference::ClipStart => {
            let t0 = clip
                .timelines
                .iter()
                .filter_map(|t| t.times.first().copied())
                .fold(f32::INFINITY, f32::min);
            let t0 = if t0.is_finite() { t0 } else { 0.0 };
            (0..rig.bone_count())
                .map(|i| clip.sample_bone(BoneIndex(i as u32), t0))
                .collect()
        }
        AdditiveReference::Pose(list) => {
            let mut poses = rig.rest_pose().to_vec();
            for (name, pose) in list {
                let bone = rig
                    .find_by_name(name)
                    .ok_or_else(|| BakeError::UnknownBone {
                        asset: asset.to_string(),
                        bone: name.clone(),
                    })?;
                if !pose.is_valid() {
                    return Err(BakeError::NotFinite {
                        asset: asset.to_string(),
                        location: format!("additive reference of bone '{name}'"),
                    });
                }
                poses[bone.get()] = flush_negligible(pose);
            }
            poses
        }
    })
}

impl Clip {
    /// Name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Length in seconds.
    pub fn duration(&self) -> f32 {
        self.duration
    }
    /// Whether playback wraps.
    pub fn looping(&self) -> bool {
        self.looping
    }
    /// Content hash of the rig this clip was baked for.
    pub fn rig_hash(&self) -> ContentHash {
        self.rig_hash
    }
    /// Name of the rig this clip was baked for.
    pub fn rig_name(&self) -> &str {
        &self.rig_name
    }
    /// Number of bones (the rig's).
    pub fn bone_count(&self) -> usize {
        self.bone_channels.len()
    }
    /// The shared key-time sequences.
    pub fn timelines(&self) -> &[Timeline] {
        &self.timelines
    }
    /// The translation, rotation and scale channel of each bone, in the rig's order.
    pub fn bone_channels(&self) -> &[[Option<Channel>; 3]] {
        &self.bone_channels
    }
    /// User curves.
    pub fn curves(&self) -> &[CurveChannel] {
        &self.curves
    }
    /// Events, sorted by time.
    pub fn events(&self) -> &[ClipEvent] {
        &self.events
    }
    /// Whether root motion is extracted from the root bone.
    pub fn root_motion(&self) -> bool {
        self.root_motion
    }

    /// `root` with its poses at time 0 and at the end, under the clip's rotation rule.
    fn sample_root_ends(&self, root: usize) -> (usize, Transform, Transform) {
        let bone = BoneIndex(root as u32);
        let ends = (
            self.sample_bone(bone, 0.0),
            self.sample_bone(bone, self.duration),
        );
        (root, ends.0, ends.1)
    }

    /// The root's poses at time 0 and at the end (`None` without root motion, or for another
    /// bone than the rig's root).
    #[inline]
    pub(crate) fn root_ends(&self, root: usize) -> Option<(&Transform, &Transform)> {
        match &self.root_ends {
            Some((r, start, end)) if *r == root => Some((start, end)),
            _ => None,
        }
    }
    /// Per-bone reference pose for additive playback, when the clip has one.
    pub fn additive_reference(&self) -> Option<&[Transform]> {
        self.additive_reference.as_deref()
    }

    /// Block `b` of the additive reference pose (`None` without one).
    #[inline(always)]
    pub(crate) fn additive_block(&self, b: usize) -> Option<&SoaTransform> {
        self.additive_blocks.get(b)
    }

    /// Whether, added to a pose, the clip can change block `b`: some bone of the block has a
    /// track, or a reference other than its rest pose (the reference is the rest pose when the
    /// clip has none).
    #[inline(always)]
    pub(crate) fn additive_changes(&self, b: usize) -> bool {
        self.additive_changes.get(b).copied().unwrap_or(true)
    }
    /// The rig's rest pose (bones the clip does not animate keep it).
    pub fn rest_pose(&self) -> &[Transform] {
        &self.rest_pose
    }
    /// Content hash.
    pub fn content_hash(&self) -> ContentHash {
        self.content_hash
    }

    /// The shared-time-grid layout, when the SoA sampler can use it: every bone channel is
    /// LINEAR on one timeline (rotations slerped or nlerped as [`Clip::linear_rotation`] says),
    /// or every one Hermite on one.
    #[inline]
    pub fn grid(&self) -> Option<&KeyGrid> {
        self.grid.as_ref()
    }

    /// How LINEAR rotation keys are interpolated.
    pub fn linear_rotation(&self) -> LinearRotation {
        self.linear_rotation
    }

    /// A copy of this clip whose LINEAR rotation keys interpolate with `mode` (a different
    /// asset: its content hash differs unless the mode is unchanged).
    pub fn with_linear_rotation(&self, mode: LinearRotation) -> Clip {
        let mut c = self.clone();
        if mode != self.linear_rotation {
            c.linear_rotation = mode;
            if let Some(grid) = &mut c.grid {
                grid.slerp_rotations = mode == LinearRotation::Slerp;
            }
            if let Some((root, ..)) = c.root_ends {
                c.root_ends = Some(c.sample_root_ends(root));
            }
            let mut h = ContentHasher::new();
            h.u64(self.content_hash.0 as u64)
                .u64((self.content_hash.0 >> 64) as u64)
                .str("linear rotation")
                .u64(mode as u64);
            c.content_hash = h.finish();
        }
        c
    }

    /// Maps a playback time to clip time: wrapped into `[0, duration)` for looping clips,
    /// clamped to `[0, duration]` otherwise.
    #[inline]
    pub fn wrap_time(&self, t: f32) -> f32 {
        self.wrap_time_as(t, self.looping)
    }

    /// [`Clip::wrap_time`] with the loop flag given by the caller (an animation may play a
    /// looping clip once, or hold a pose past its end).
    #[inline]
    pub fn wrap_time_as(&self, t: f32, looping: bool) -> f32 {
        if !t.is_finite() {
            return 0.0;
        }
        if looping && self.duration > 0.0 {
            // Already inside the clip (forward playback wrapped by the caller): `rem_euclid`
            // would return `t` itself; skip its `fmod`.
            if (0.0..self.duration).contains(&t) {
                return t;
            }
            let w = t.rem_euclid(self.duration);
            if w >= self.duration { 0.0 } else { w }
        } else {
            t.clamp(0.0, self.duration)
        }
    }

    /// Evaluates a vector channel at a located span.
    #[inline(always)]
    pub fn eval_vec3(&self, c: &Channel, span: &KeySpan) -> Vec3 {
        let i0 = (c.first + span.k0) as usize;
        let i1 = (c.first + span.k1) as usize;
        let (Some(&v0), Some(&v1)) = (self.vec3_values.get(i0), self.vec3_values.get(i1)) else {
            return Vec3::ZERO;
        };
        match c.interpolation {
            Interpolation::Step => v0,
            Interpolation::Linear => lerp_vec3(v0, v1, span.alpha),
            Interpolation::Hermite => {
                if span.k0 == span.k1 {
                    return v0;
                }
                let j0 = (c.first_tangent + span.k0) as usize;
                let j1 = (c.first_tangent + span.k1) as usize;
                match (self.vec3_out.get(j0), self.vec3_in.get(j1)) {
                    (Some(&o0), Some(&i1)) => hermite_vec3(v0, o0, v1, i1, span.dt, span.alpha),
                    _ => v0,
                }
            }
        }
    }

    /// Evaluates a rotation channel at a located span (unit quaternion out).
    #[inline(always)]
    pub fn eval_quat(&self, c: &Channel, span: &KeySpan) -> Quat {
        let i0 = (c.first + span.k0) as usize;
        let i1 = (c.first + span.k1) as usize;
        let (Some(&q0), Some(&q1)) = (self.quat_values.get(i0), self.quat_values.get(i1)) else {
            return Quat::IDENTITY;
        };
        match c.interpolation {
            Interpolation::Step => q0,
            Interpolation::Linear => match self.linear_rotation {
                LinearRotation::Slerp => slerp_shortest(q0, q1, span.alpha),
                LinearRotation::Nlerp => nlerp_shortest(q0, q1, span.alpha),
            },
            Interpolation::Hermite => {
                let j0 = (c.first_tangent + span.k0) as usize;
                let j1 = (c.first_tangent + span.k1) as usize;
                match (self.quat_out.get(j0), self.quat_in.get(j1)) {
                    (Some(&o0), Some(&i1)) if span.k0 != span.k1 => {
                        hermite_quat(q0, o0, q1, i1, span.dt, span.alpha)
                    }
                    _ => q0.normalize(),
                }
            }
        }
    }

    /// Evaluates a scalar (curve) channel at a located span.
    #[inline]
    pub fn eval_f32(&self, c: &Channel, span: &KeySpan) -> f32 {
        let i0 = (c.first + span.k0) as usize;
        let i1 = (c.first + span.k1) as usize;
        let (Some(&v0), Some(&v1)) = (self.f32_values.get(i0), self.f32_values.get(i1)) else {
            return 0.0;
        };
        match c.interpolation {
            Interpolation::Step => v0,
            Interpolation::Linear => v0 + (v1 - v0) * span.alpha,
            Interpolation::Hermite => {
                if span.k0 == span.k1 {
                    return v0;
                }
                let j0 = (c.first_tangent + span.k0) as usize;
                let j1 = (c.first_tangent + span.k1) as usize;
                match (self.f32_out.get(j0), self.f32_in.get(j1)) {
                    (Some(&o0), Some(&i1)) => {
                        let [h00, h10, h01, h11] = hermite_basis(span.alpha);
                        v0 * h00 + o0 * h10 * span.dt + v1 * h01 + i1 * h11 * span.dt
                    }
                    _ => v0,
                }
            }
        }
    }

    /// The span of a timeline at clip time `t`, searched from scratch.
    #[inline]
    pub fn locate(&self, timeline: u32, t: f32) -> KeySpan {
        self.timelines
            .get(timeline as usize)
            .map_or_else(KeySpan::default, |tl| tl.search(t))
    }

    /// Samples one bone from spans already located on this clip's timelines (`spans[i]` for
    /// timeline `i`): the sampling job's inner step. Parts without a track take `rest`.
    #[inline(always)]
    pub fn sample_bone_at(&self, bone: usize, spans: &[KeySpan], rest: &Transform) -> Transform {
        self.sample_bone_with(bone, rest, |c| {
            spans.get(c.timeline as usize).copied().unwrap_or_default()
        })
    }

    /// Reference sampler: one bone at clip time `t` (no wrapping), searching every key. Bones
    /// or parts without a track take the rest pose. The sampling job is checked against it.
    pub fn sample_bone(&self, bone: BoneIndex, t: f32) -> Transform {
        let i = bone.get();
        let rest = self
            .rest_pose
            .get(i)
            .copied()
            .unwrap_or(Transform::IDENTITY);
        // A bone's channels usually share one timeline: search it once.
        let last = Cell::new(None);
        self.sample_bone_with(i, &rest, |c| match last.get() {
            Some((timeline, span)) if timeline == c.timeline => span,
            _ => {
                let span = self.locate(c.timeline, t);
                last.set(Some((c.timeline, span)));
                span
            }
        })
    }

    /// One bone's channels evaluated at the spans `span` gives for each channel's timeline.
    #[inline(always)]
    fn sample_bone_with(
        &self,
        bone: usize,
        rest: &Transform,
        span: impl Fn(&Channel) -> KeySpan,
    ) -> Transform {
        let Some([t, r, s]) = self.bone_channels.get(bone) else {
            return *rest;
        };
        Transform {
            translation: t
                .as_ref()
                .map_or(rest.translation, |c| self.eval_vec3(c, &span(c))),
            rotation: r
                .as_ref()
                .map_or(rest.rotation, |c| self.eval_quat(c, &span(c))),
            scale: s
                .as_ref()
                .map_or(rest.scale, |c| self.eval_vec3(c, &span(c))),
        }
    }

    /// Reference sampler for a user curve at clip time `t`.
    pub fn sample_curve(&self, curve: usize, t: f32) -> Option<f32> {
        let c = self.curves.get(curve)?;
        Some(self.eval_f32(&c.channel, &self.locate(c.channel.timeline, t)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asset::{RawBone, RawRig};

    fn rig() -> Rig {
        RawRig {
            name: "r".into(),
            bones: vec![
                RawBone {
                    name: "root".into(),
                    parent: None,
                    rest: Transform::IDENTITY,
                },
                RawBone {
                    name: "b".into(),
                    parent: Some(0),
                    rest: Transform::from_translation(Vec3::Y),
                },
            ],
        }
        .bake()
        .unwrap()
    }

    #[test]
    fn linear_step_and_hermite_match_hand_computed_values() {
        let rig = rig();
        let times = vec![0.5, 1.5, 2.5];
        let raw = RawClip {
            name: "c".into(),
            bones: vec![RawBoneTracks {
                bone: "b".into(),
                translation: Some(RawTrack::linear(
                    times.clone(),
                    vec![Vec3::ZERO, Vec3::X * 2.0, Vec3::X * 4.0],
                )),
                rotation: None,
                scale: Some(RawTrack::step(
                    times.clone(),
                    vec![Vec3::ONE, Vec3::splat(2.0), Vec3::splat(3.0)],
                )),
            }],
            curves: vec![RawCurve {
                name: "h".into(),
                track: RawTrack::hermite(
                    vec![0.0, 2.0],
                    vec![0.0, 4.0],
                    vec![1.0, -1.0],
                    vec![1.0, -1.0],
                ),
            }],
            ..Default::default()
        };
        let clip = raw.bake(&rig).unwrap();
        assert_eq!(clip.duration(), 2.5);
        assert_eq!(clip.timelines().len(), 2, "T and S share a timeline");
        // Before the first key: hold the first value. After the last: the last.
        assert_eq!(clip.sample_bone(BoneIndex(1), 0.0).translation, Vec3::ZERO);
        assert_eq!(
            clip.sample_bone(BoneIndex(1), 9.0).translation,
            Vec3::X * 4.0
        );
        // 1.0 is half way between 0.5 and 1.5.
        assert!((clip.sample_bone(BoneIndex(1), 1.0).translation - Vec3::X).length() < 1e-6);
        assert_eq!(clip.sample_bone(BoneIndex(1), 1.49).scale, Vec3::ONE);
        assert_eq!(clip.sample_bone(BoneIndex(1), 1.5).scale, Vec3::splat(2.0));
        // Untracked parts keep the rest pose.
        assert_eq!(clip.sample_bone(BoneIndex(1), 1.0).rotation, Quat::IDENTITY);
        assert_eq!(clip.sample_bone(BoneIndex(0), 1.0), Transform::IDENTITY);
        // Hermite at s = 0.5, dt = 2: 0*0.5 + 1*0.125*2 + 4*0.5 + (-1)*(-0.125)*2 = 2.5
        assert!((clip.sample_curve(0, 1.0).unwrap() - 2.5).abs() < 1e-6);
    }

    /// The root's end poses kept for job 6 are its samples at 0 and at the duration, under
    /// each rotation rule (an explicit duration between keys makes the rule matter).
    #[test]
    fn root_ends_are_the_roots_samples_at_both_ends() {
        let rig = rig();
        let turn = |a: f32| Quat::from_rotation_y(a);
        let raw = RawClip {
            name: "walk".into(),
            duration: Some(1.6),
            root_motion: true,
            bones: vec![RawBoneTracks {
                bone: "root".into(),
                translation: Some(RawTrack::linear(
                    vec![0.0, 1.0, 2.0],
                    vec![Vec3::ZERO, Vec3::X, Vec3::X * 3.0],
                )),
                rotation: Some(RawTrack::linear(
                    vec![0.0, 1.0, 2.0],
                    vec![turn(0.0), turn(1.0), turn(2.5)],
                )),
                scale: None,
            }],
            ..Default::default()
        };
        let clip = raw.bake(&rig).unwrap();
        for c in [
            clip.clone(),
            clip.with_linear_rotation(LinearRotation::Nlerp),
        ] {
            let (start, end) = c.root_ends(0).unwrap();
            assert_eq!(*start, c.sample_bone(BoneIndex(0), 0.0));
            assert_eq!(*end, c.sample_bone(BoneIndex(0), 1.6));
            assert!(c.root_ends(1).is_none());
        }
        let slerped = clip.root_ends(0).unwrap().1.rotation;
        let nlerped = clip.with_linear_rotation(LinearRotation::Nlerp);
        assert_ne!(slerped, nlerped.root_ends(0).unwrap().1.rotation);
        let still = RawClip {
            root_motion: false,
            ..raw
        }
        .bake(&rig)
        .unwrap();
        assert!(still.root_ends(0).is_none());
    }

    #[test]
    fn bake_stores_negligible_components_as_zero() {
        use crate::math::NEGLIGIBLE_COMPONENT;
        let noisy_rest = Transform::new(
            Vec3::new(1e-30, 1.0, -2e-12),
            Quat::from_xyzw(1.4e-20, 0.0, 0.6, 0.8),
            Vec3::new(1.0, 1.0, 1.0 + f32::EPSILON),
        );
        let rig = RawRig {
            name: "r".into(),
            bones: vec![RawBone {
                name: "b".into(),
                parent: None,
                rest: noisy_rest,
            }],
        }
        .bake()
        .unwrap();
        let rest = rig.rest_pose()[0];
        assert_eq!(rest.translation, Vec3::new(0.0, 1.0, 0.0));
        assert_eq!(rest.rotation, Quat::from_xyzw(0.0, 0.0, 0.6, 0.8));
        assert_eq!(rest.scale, noisy_rest.scale);
        // Keys: exporter noise (Fox's tail keys go down to 3.6e-25), a value just below the
        // threshold and one at it, which stays.
        let q0 = Quat::from_xyzw(3.56e-25, -2.1e-24, -0.0696, 0.9975).normalize();
        let q1 = Quat::from_xyzw(NEGLIGIBLE_COMPONENT, 0.0, 0.6, 0.8);
        let raw = RawClip {
            name: "c".into(),
            bones: vec![RawBoneTracks {
                bone: "b".into(),
                translation: Some(RawTrack::linear(
                    vec![0.0, 1.0],
                    vec![Vec3::new(NEGLIGIBLE_COMPONENT * 0.99, 2.0, 0.0), Vec3::X],
                )),
                rotation: Some(RawTrack::linear(vec![0.0, 1.0], vec![q0, q1])),
                scale: None,
            }],
            ..Default::default()
        };
        let clip = raw.bake(&rig).unwrap();
        let at = |t: f32| clip.sample_bone(BoneIndex(0), t);
        assert_eq!(at(0.0).translation, Vec3::new(0.0, 2.0, 0.0));
        assert_eq!(
            at(0.0).rotation,
            Quat::from_xyzw(0.0, 0.0, q0.z, q0.w),
            "the normalised key, flushed"
        );
        assert_eq!(at(1.0).rotation.x, NEGLIGIBLE_COMPONENT / q1.length());
        // The shared-grid copy holds the same values.
        let grid = clip.grid().unwrap();
        let span = clip.locate(grid.timeline(), 0.0);
        let block = grid.sample_block(0, &span).unwrap();
        assert_eq!(block.lane(0), at(0.0));
    }

    #[test]
    fn locate_with_a_cursor_agrees_with_a_fresh_search() {
        let tl = Timeline {
            times: (0..50)
                .map(|i| i as f32 * 0.1 + (i % 3) as f32 * 0.01)
                .collect(),
        };
        let mut cursor = 0;
        let mut t = -0.3;
        while t < 5.5 {
            let a = tl.locate(t, cursor);
            let b = tl.locate(t, 0);
            assert_eq!(a, b, "t = {t}");
            cursor = a.k0;
            t += 0.037;
        }
        // Backwards jumps too.
        assert_eq!(tl.locate(0.55, 40), tl.locate(0.55, 0));
    }

    #[test]
    fn search_finds_the_keys_around_a_time_by_hand() {
        let tl = Timeline {
            times: vec![0.0, 0.5, 1.0, 2.0, 4.0, 4.5, 6.0],
        };
        let span = |k0: u32, k1: u32, alpha: f32, dt: f32| KeySpan { k0, k1, alpha, dt };
        for (t, want) in [
            (-1.0, span(0, 0, 0.0, 0.0)),
            (0.0, span(0, 0, 0.0, 0.0)),
            (0.25, span(0, 1, 0.5, 0.5)),
            (0.5, span(1, 2, 0.0, 0.5)),
            (3.0, span(3, 4, 0.5, 2.0)),
            (4.25, span(4, 5, 0.5, 0.5)),
            (5.625, span(5, 6, 0.75, 1.5)),
            (6.0, span(6, 6, 0.0, 0.0)),
            (7.0, span(6, 6, 0.0, 0.0)),
            (f32::NAN, span(0, 0, 0.0, 0.0)),
        ] {
            assert_eq!(tl.search(t), want, "t = {t}");
            // The cursor walk from any start finds the same span.
            for cursor in [0, 3, 6, 40] {
                assert_eq!(tl.locate(t, cursor), want, "t = {t}, cursor {cursor}");
            }
        }
    }

    #[test]
    fn bake_rejects_bad_tracks() {
        let rig = rig();
        let mk = |track: RawTrack<Vec3>| RawClip {
            name: "bad".into(),
            bones: vec![RawBoneTracks {
                bone: "b".into(),
                translation: Some(track),
                rotation: None,
                scale: None,
            }],
            ..Default::default()
        };
        assert!(matches!(
            mk(RawTrack::linear(vec![0.0, 0.0], vec![Vec3::ZERO; 2])).bake(&rig),
            Err(BakeError::KeyTimesNotIncreasing { .. })
        ));
        assert!(matches!(
            mk(RawTrack::linear(vec![0.0, 1.0], vec![Vec3::ZERO])).bake(&rig),
            Err(BakeError::LengthMismatch { .. })
        ));
        assert!(matches!(
            mk(RawTrack::linear(vec![0.0], vec![Vec3::NAN])).bake(&rig),
            Err(BakeError::NotFinite { .. })
        ));
        assert!(matches!(
            mk(RawTrack::linear(vec![f32::NAN], vec![Vec3::ZERO])).bake(&rig),
            Err(BakeError::NotFinite { .. })
        ));
        assert!(matches!(
            mk(RawTrack::linear(vec![], vec![])).bake(&rig),
            Err(BakeError::Invalid { .. })
        ));
        let unknown = RawClip {
            name: "u".into(),
            bones: vec![RawBoneTracks {
                bone: "nope".into(),
                translation: None,
                rotation: None,
                scale: None,
            }],
            ..Default::default()
        };
        assert!(matches!(
            unknown.bake(&rig),
            Err(BakeError::UnknownBone { .. })
        ));
    }
}
