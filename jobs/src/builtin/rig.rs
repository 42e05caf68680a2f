//! The built-in humanoid rig: 45 bones, Y up, facing +Z, about 1.8 m tall, T-pose rest.
//!
//! The character's left is +X (the glTF convention for a character facing +Z). Every rest
//! rotation is the identity, so each bone's frame is parallel to model space in the rest pose;
//! right-side bones mirror their left twins (translation x negated).

use crate::asset::{RawBone, RawRig, Transform};
use glam::{Affine3A, Vec3};

/// Name of the root bone (on the ground between the feet; carries root motion).
pub const ROOT: &str = "root";
/// Name of the hips (pelvis) bone.
pub const HIPS: &str = "hips";
/// Name of the first spine bone: the upper-body mask starts here.
pub const SPINE_01: &str = "spine_01";
/// Name of the left foot bone (the ankle).
pub const FOOT_LEFT: &str = "foot_l";
/// Name of the right foot bone (the ankle).
pub const FOOT_RIGHT: &str = "foot_r";

/// Which side of the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Left,
    Right,
}

impl Side {
    pub(crate) const BOTH: [Side; 2] = [Side::Left, Side::Right];

    /// `+1` for left (+X), `-1` for right.
    pub(crate) fn sign(self) -> f32 {
        match self {
            Side::Left => 1.0,
            Side::Right => -1.0,
        }
    }

    pub(crate) fn suffix(self) -> &'static str {
        match self {
            Side::Left => "_l",
            Side::Right => "_r",
        }
    }

    /// Mirrors a left-side vector to this side (x negated for the right).
    pub(crate) fn vec(self, v: Vec3) -> Vec3 {
        Vec3::new(v.x * self.sign(), v.y, v.z)
    }

    /// Index into `[left, right]` arrays.
    pub(crate) fn index(self) -> usize {
        match self {
            Side::Left => 0,
            Side::Right => 1,
        }
    }
}

/// Raw indices of the bones of one side.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SideBones {
    pub clavicle: usize,
    pub upperarm: usize,
    pub lowerarm: usize,
    pub hand: usize,
    /// Thumb, index and middle finger chains, three joints each.
    pub fingers: [[usize; 3]; 3],
    pub thigh: usize,
    pub shin: usize,
    pub foot: usize,
    pub toe: usize,
}

/// Raw indices (into [`RawRig::bones`]) of every bone, known by construction.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BoneIds {
    pub root: usize,
    pub hips: usize,
    pub spine: [usize; 3],
    pub chest: usize,
    pub neck: usize,
    pub head: usize,
    pub jaw: usize,
    pub eyes: [usize; 2],
    pub sides: [SideBones; 2],
}

impl BoneIds {
    pub(crate) fn side(&self, side: Side) -> &SideBones {
        &self.sides[side.index()]
    }
}

/// The finger chains: name prefix and the left-side offsets of their three joints (the first
/// relative to the hand, the others to the previous joint), then the tip offset from the last.
pub(crate) const FINGERS: [(&str, [Vec3; 3], Vec3); 3] = [
    (
        "thumb",
        [
            Vec3::new(0.025, -0.01, 0.03),
            Vec3::new(0.03, 0.0, 0.015),
            Vec3::new(0.025, 0.0, 0.005),
        ],
        Vec3::new(0.022, 0.0, 0.004),
    ),
    (
        "index",
        [
            Vec3::new(0.09, 0.0, 0.025),
            Vec3::new(0.04, 0.0, 0.0),
            Vec3::new(0.025, 0.0, 0.0),
        ],
        Vec3::new(0.02, 0.0, 0.0),
    ),
    (
        "middle",
        [
            Vec3::new(0.095, 0.0, 0.0),
            Vec3::new(0.045, 0.0, 0.0),
            Vec3::new(0.03, 0.0, 0.0),
        ],
        Vec3::new(0.022, 0.0, 0.0),
    ),
];

/// Tip of the head bone's segment, relative to the head joint (the top of the skull).
pub(crate) const HEAD_TIP: Vec3 = Vec3::new(0.0, 0.19, 0.0);
/// Tip of the toe bone's segment, relative to the toe joint.
pub(crate) const TOE_TIP: Vec3 = Vec3::new(0.0, 0.0, 0.06);
/// Tip of the jaw bone's segment (the chin), relative to the jaw joint.
pub(crate) const JAW_TIP: Vec3 = Vec3::new(0.0, -0.03, 0.06);
/// Tip of an eye bone's segment, relative to the eye joint.
pub(crate) const EYE_TIP: Vec3 = Vec3::new(0.0, 0.0, 0.015);

struct Builder {
    bones: Vec<RawBone>,
}

impl Builder {
    fn add(&mut self, name: String, parent: Option<usize>, offset: Vec3) -> usize {
        self.bones.push(RawBone {
            name,
            parent,
            rest: Transform::from_translation(offset),
        });
        self.bones.len() - 1
    }
}

/// Builds the rig (bones in parent-first order) and the index of every bone.
pub(crate) fn build() -> (RawRig, BoneIds) {
    let mut b = Builder {
        bones: Vec::with_capacity(48),
    };
    let root = b.add(ROOT.into(), None, Vec3::ZERO);
    let hips = b.add(HIPS.into(), Some(root), Vec3::new(0.0, 0.95, 0.0));
    let spine_01 = b.add(SPINE_01.into(), Some(hips), Vec3::new(0.0, 0.08, 0.0));
    let spine_02 = b.add("spine_02".into(), Some(spine_01), Vec3::new(0.0, 0.10, 0.0));
    let spine_03 = b.add("spine_03".into(), Some(spine_02), Vec3::new(0.0, 0.10, 0.0));
    let chest = b.add("chest".into(), Some(spine_03), Vec3::new(0.0, 0.12, 0.0));
    let neck = b.add("neck".into(), Some(chest), Vec3::new(0.0, 0.17, 0.0));
    let head = b.add("head".into(), Some(neck), Vec3::new(0.0, 0.09, 0.0));
    let jaw = b.add("jaw".into(), Some(head), Vec3::new(0.0, -0.02, 0.04));
    let eye_l = b.add("eye_l".into(), Some(head), Vec3::new(0.035, 0.09, 0.105));
    let eye_r = b.add("eye_r".into(), Some(head), Vec3::new(-0.035, 0.09, 0.105));
    let arm = |b: &mut Builder, side: Side| {
        let s = side.suffix();
        let clavicle = b.add(
            format!("clavicle{s}"),
            Some(chest),
            side.vec(Vec3::new(0.03, 0.11, 0.02)),
        );
        let upperarm = b.add(
            format!("upperarm{s}"),
            Some(clavicle),
            side.vec(Vec3::new(0.15, -0.01, -0.02)),
        );
        let lowerarm = b.add(
            format!("lowerarm{s}"),
            Some(upperarm),
            side.vec(Vec3::new(0.29, 0.0, 0.0)),
        );
        let hand = b.add(
            format!("hand{s}"),
            Some(lowerarm),
            side.vec(Vec3::new(0.26, 0.0, 0.0)),
        );
        let mut fingers = [[0usize; 3]; 3];
        for (f, (name, offsets, _)) in FINGERS.iter().enumerate() {
            let mut parent = hand;
            for (j, off) in offsets.iter().enumerate() {
                parent = b.add(
                    format!("{name}_0{}{s}", j + 1),
                    Some(parent),
                    side.vec(*off),
                );
                fingers[f][j] = parent;
            }
        }
        (clavicle, upperarm, lowerarm, hand, fingers)
    };
    let arms = [arm(&mut b, Side::Left), arm(&mut b, Side::Right)];
    let mut sides = Vec::with_capacity(2);
    for side in Side::BOTH {
        let s = side.suffix();
        let thigh = b.add(
            format!("thigh{s}"),
            Some(hips),
            side.vec(Vec3::new(0.09, -0.05, 0.0)),
        );
        let shin = b.add(format!("shin{s}"), Some(thigh), Vec3::new(0.0, -0.43, 0.0));
        let foot = b.add(format!("foot{s}"), Some(shin), Vec3::new(0.0, -0.40, 0.0));
        let toe = b.add(format!("toe{s}"), Some(foot), Vec3::new(0.0, -0.05, 0.13));
        let (clavicle, upperarm, lowerarm, hand, fingers) = arms[side.index()];
        sides.push(SideBones {
            clavicle,
            upperarm,
            lowerarm,
            hand,
            fingers,
            thigh,
            shin,
            foot,
            toe,
        });
    }
    let ids = BoneIds {
        root,
        hips,
        spine: [spine_01, spine_02, spine_03],
        chest,
        neck,
        head,
        jaw,
        eyes: [eye_l, eye_r],
        sides: [sides[0], sides[1]],
    };
    (
        RawRig {
            name: "sinew builtin character".into(),
            bones: b.bones,
        },
        ids,
    )
}

/// Model-space matrices of a local pose (`local[i]` for `rig.bones[i]`): each bone's TRS
/// multiplied down the hierarchy. Assumes parents precede children in `rig.bones` (true for the
/// built-in rig); a bone whose parent comes later is treated as a root.
pub(crate) fn model_space(rig: &RawRig, local: &[Transform]) -> Vec<Affine3A> {
    let mut out: Vec<Affine3A> = Vec::with_capacity(rig.bones.len());
    for (i, bone) in rig.bones.iter().enumerate() {
        let l = local.get(i).copied().unwrap_or(bone.rest).to_affine();
        let m = match bone
            .parent
            .and_then(|p| if p < i { out.get(p) } else { None })
        {
            Some(parent) => *parent * l,
            None => l,
        };
        out.push(m);
    }
    out
}

/// Model-space rest matrices of the rig (see [`model_space`]).
pub(crate) fn rest_model_space(rig: &RawRig) -> Vec<Affine3A> {
    let rest: Vec<Transform> = rig.bones.iter().map(|b| b.rest).collect();
    model_space(rig, &rest)
}

/// For each bone, the model-space end of its segment in the rest pose: the joint of its main
/// child, or a fixed tip for leaves and for bones whose children branch off sideways (head,
/// chest: the neck; hand: the middle finger). Used for skin weights.
pub(crate) fn segment_tips(rig: &RawRig, ids: &BoneIds) -> Vec<Vec3> {
    let model = rest_model_space(rig);
    let pos = |i: usize| {
        model
            .get(i)
            .map_or(Vec3::ZERO, |m| Vec3::from(m.translation))
    };
    let mut tips: Vec<Vec3> = (0..rig.bones.len()).map(pos).collect();
    let mut set = |bone: usize, tip: Vec3| {
        if let Some(t) = tips.get_mut(bone) {
            *t = tip;
        }
    };
    set(ids.root, pos(ids.hips));
    set(ids.hips, pos(ids.spine[0]));
    set(ids.spine[0], pos(ids.spine[1]));
    set(ids.spine[1], pos(ids.spine[2]));
    set(ids.spine[2], pos(ids.chest));
    set(ids.chest, pos(ids.neck));
    set(ids.neck, pos(ids.head));
    set(ids.head, pos(ids.head) + HEAD_TIP);
    set(ids.jaw, pos(ids.jaw) + JAW_TIP);
    for e in ids.eyes {
        set(e, pos(e) + EYE_TIP);
    }
    for side in Side::BOTH {
        let s = ids.side(side);
        set(s.clavicle, pos(s.upperarm));
        set(s.upperarm, pos(s.lowerarm));
        set(s.lowerarm, pos(s.hand));
        set(s.hand, pos(s.fingers[2][0]));
        for (f, chain) in s.fingers.iter().enumerate() {
            set(chain[0], pos(chain[1]));
            set(chain[1], pos(chain[2]));
            set(chain[2], pos(chain[2]) + side.vec(FINGERS[f].2));
        }
        set(s.thigh, pos(s.shin));
        set(s.shin, pos(s.foot));
        set(s.foot, pos(s.toe));
        set(s.toe, pos(s.toe) + TOE_TIP);
    }
    tips
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asset::BoneIndex;

    #[test]
    fn rig_has_a_humanoid_bone_set_that_bakes_parent_first() {
        let (raw, ids) = build();
        let n = raw.bones.len();
        assert!((40..=70).contains(&n), "{n} bones");
        // The raw order is already parent-first (model_space relies on it).
        for (i, b) in raw.bones.iter().enumerate() {
            assert!(
                b.parent.is_none_or(|p| p < i),
                "bone {} precedes its parent",
                b.name
            );
        }
        let rig = raw.bake().unwrap();
        assert_eq!(rig.bone_count(), n);
        for (i, &p) in rig.parent_indices().iter().enumerate().skip(1) {
            assert!((p as usize) < i, "baked bone {i} has parent {p}");
        }
        assert_eq!(rig.bone_names()[0], ROOT);
        let mut names: Vec<&String> = rig.bone_names().iter().collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n, "names are unique");
        for required in [
            "root",
            "hips",
            "spine_01",
            "spine_02",
            "spine_03",
            "chest",
            "neck",
            "head",
            "clavicle_l",
            "upperarm_r",
            "lowerarm_l",
            "hand_r",
            "thumb_03_l",
            "index_02_r",
            "middle_01_l",
            "thigh_l",
            "shin_r",
            "foot_l",
            "toe_r",
        ] {
            assert!(rig.find_by_name(required).is_some(), "missing {required}");
        }
        assert_eq!(ids.root, 0);
        assert_eq!(rig.baked_index_of_raw(ids.root), Some(BoneIndex(0)));
    }

    #[test]
    fn left_and_right_bones_mirror_each_other() {
        let (raw, _) = build();
        let mut pairs = 0;
        for b in &raw.bones {
            let Some(stem) = b.name.strip_suffix("_l") else {
                continue;
            };
            let twin = raw
                .bones
                .iter()
                .find(|o| o.name == format!("{stem}_r"))
                .unwrap();
            let (l, r) = (b.rest.translation, twin.rest.translation);
            assert!(
                (l - Vec3::new(-r.x, r.y, r.z)).length() < 1e-7,
                "{}: {l} vs {r}",
                b.name
            );
            assert_eq!(b.rest.rotation, twin.rest.rotation);
            // Parents mirror too (or are shared, on the centre line).
            let (pl, pr) = (
                &raw.bones[b.parent.unwrap()].name,
                &raw.bones[twin.parent.unwrap()].name,
            );
            assert!(
                pl == pr || pl.strip_suffix("_l") == pr.strip_suffix("_r"),
                "{pl} / {pr}"
            );
            pairs += 1;
        }
        assert_eq!(
            pairs * 2 + 9,
            raw.bones.len(),
            "9 centre bones, the rest in pairs"
        );
    }

    #[test]
    fn proportions_are_those_of_a_1_8_m_adult_facing_plus_z() {
        let (raw, ids) = build();
        let m = rest_model_space(&raw);
        let p = |i: usize| Vec3::from(m[i].translation);
        let tips = segment_tips(&raw, &ids);
        let top = tips[ids.head].y;
        assert!((1.75..=1.85).contains(&top), "top of head at {top}");
        assert_eq!(p(ids.root), Vec3::ZERO);
        let l = ids.side(Side::Left);
        // Left is +X; toes point forward (+Z); ankle above ground.
        assert!(p(l.hand).x > 0.6 && p(l.toe).z > 0.1 && p(l.foot).y > 0.0);
        let leg = p(l.thigh).distance(p(l.shin)) + p(l.shin).distance(p(l.foot));
        assert!((0.75..=0.9).contains(&leg), "leg {leg}");
        let arm = p(l.upperarm).distance(p(l.lowerarm)) + p(l.lowerarm).distance(p(l.hand));
        assert!((0.5..=0.6).contains(&arm), "arm {arm}");
    }
}
