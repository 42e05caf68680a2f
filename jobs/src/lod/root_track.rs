//! Root motion of baked characters: the root bone's motion between two playback times,
//! computed as job 6 computes it, so that a character drawn from a texture baked in place
//! moves as it would on the CPU.

use crate::asset::{BoneIndex, Clip, Transform};
use glam::{Quat, Vec3};

/// Root motion of a baked character playing `clip` from playback time `from` to `to`: the
/// translation delta (in the root's start frame, before the entity's rotation and scale) and
/// rotation delta, continued across loops, exactly as job 6 extracts it for an entity playing
/// `clip` alone (one layer-0 override animation of weight 1). `None` when the clip has no root
/// motion or `root` is not a bone of the clip's rig.
///
/// A baked character (drawn from a texture baked with
/// [`BakeTextureOptions::root_motion_in_place`]) keeps moving like a CPU one when its entity
/// transform is advanced each frame as job 6 does:
/// `translation += rotation · (delta_t · scale)`, `rotation = normalize(rotation · delta_r)`.
///
/// [`BakeTextureOptions::root_motion_in_place`]:
///     crate::bake_texture::BakeTextureOptions::root_motion_in_place
pub fn baked_root_motion(clip: &Clip, root: BoneIndex, from: f32, to: f32) -> Option<(Vec3, Quat)> {
    BakedRootTrack::new(clip, root).map(|r| r.motion(clip, from, to))
}

/// The root's samples at a clip's start and end, kept so that [`BakedRootTrack::motion`]
/// samples the clip twice per call instead of four times ([`baked_root_motion`] without the
/// cache).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BakedRootTrack {
    root: BoneIndex,
    start: Transform,
    end: Transform,
}

impl BakedRootTrack {
    /// The track of `clip`'s root bone; `None` when the clip has no root motion or `root` is
    /// not a bone of the clip's rig.
    pub fn new(clip: &Clip, root: BoneIndex) -> Option<Self> {
        if !clip.root_motion() || root.get() >= clip.bone_count() {
            return None;
        }
        Some(Self {
            root,
            start: clip.sample_bone(root, 0.0),
            end: clip.sample_bone(root, clip.duration()),
        })
    }

    /// [`baked_root_motion`] of `clip` (the clip this track was made from) from `from` to
    /// `to`; equal to it bit for bit.
    pub fn motion(&self, clip: &Clip, from: f32, to: f32) -> (Vec3, Quat) {
        crate::j6_root_motion::root_delta(
            clip,
            self.root.get(),
            from,
            to,
            Some((&self.start, &self.end)),
        )
    }
}
