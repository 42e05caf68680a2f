use super::BakeError;
use super::hash::{BoneHash, ContentHash, ContentHasher, bone_hash};
use crate::math::soa::{LANES, SoaTransform};
use crate::math::{Transform, flush_negligible};
use hashbrown::HashMap;

/// The index of a bone in a baked [`Rig`] (parent-first order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct BoneIndex(pub u32);

impl BoneIndex {
    /// As a `usize` for indexing.
    #[inline]
    pub fn get(self) -> usize {
        self.0 as usize
    }
}

/// An editable bone: name, optional parent (an index into [`RawRig::bones`]) and rest pose.
#[derive(Clone, Debug, PartialEq)]
pub struct RawBone {
    /// Unique name; bones are matched between rigs, clips and meshes by its hash.
    pub name: String,
    /// Index of the parent in the same `RawRig::bones`, `None` for a root.
    pub parent: Option<usize>,
    /// The rest (reference) pose, relative to the parent.
    pub rest: Transform,
}

/// An editable rig: bones in any order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawRig {
    /// A name for messages.
    pub name: String,
    /// The bones.
    pub bones: Vec<RawBone>,
}

/// A baked, immutable skeleton. Bones are ordered parent-first: `parent(i) < i`.
#[derive(Debug)]
pub struct Rig {
    name: String,
    names: Vec<String>,
    hashes: Vec<BoneHash>,
    parents: Vec<u32>,
    subtree_ends: Vec<u32>,
    rest_pose: Vec<Transform>,
    /// The rest pose in `LANES`-bone blocks (padding lanes are the identity).
    rest_blocks: Vec<SoaTransform>,
    source_order: Vec<u32>,
    by_hash: HashMap<BoneHash, BoneIndex>,
    content_hash: ContentHash,
}

/// Parent value of a root bone in [`Rig::parent_indices`].
pub const NO_PARENT: u32 = u32::MAX;

impl RawRig {
    /// Validates the rig and orders its bones parent-first (stable: among valid orders it keeps
    /// the input order as far as possible).
    ///
    /// # Errors
    /// [`BakeError`] for an empty rig, a parent out of range, a cycle, duplicate names or a
    /// rest pose that is not finite.
    pub fn bake(&self) -> Result<Rig, BakeError> {
        let asset = format!("rig '{}'", self.name);
        let n = self.bones.len();
        if n == 0 {
            return Err(BakeError::Empty {
                asset,
                what: "the bone list",
            });
        }
        if n >= NO_PARENT as usize {
            return Err(BakeError::Invalid {
                asset,
                reason: format!("{n} bones is too many"),
            });
        }
        let mut seen = HashMap::with_capacity(n);
        for (i, b) in self.bones.iter().enumerate() {
            if let Some(p) = b.parent {
                if p >= n {
                    return Err(BakeError::BadHierarchy {
                        asset,
                        bone: b.name.clone(),
                        reason: format!("parent index {p} out of range ({n} bones)"),
                    });
                }
                if p == i {
                    return Err(BakeError::BadHierarchy {
                        asset,
                        bone: b.name.clone(),
                        reason: "is its own parent".into(),
                    });
                }
            }
            if !b.rest.is_valid() {
                return Err(BakeError::NotFinite {
                    asset,
                    location: format!("rest pose of bone '{}'", b.name),
                });
            }
            if seen.insert(bone_hash(&b.name), i).is_some() {
                return Err(BakeError::DuplicateBoneName {
                    asset,
                    name: b.name.clone(),
                });
            }
        }
        // Stable parent-first order: repeatedly emit, in input order, bones whose parent is placed.
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut roots = Vec::new();
        for (i, b) in self.bones.iter().enumerate() {
            match b.parent {
                Some(p) => children[p].push(i),
                None => roots.push(i),
            }
        }
        let mut order: Vec<usize> = Vec::with_capacity(n);
        let mut stack: Vec<usize> = roots.iter().rev().copied().collect();
        while let Some(i) = stack.pop() {
            order.push(i);
            stack.extend(children[i].iter().rev().copied());
        }
        if order.len() != n {
            let placed: hashbrown::HashSet<usize> = order.iter().copied().collect();
            let bone = self
                .bones
                .iter()
                .enumerate()
                .find(|(i, _)| !placed.contains(i))
                .map(|(_, b)| b.name.clone());
            return Err(BakeError::BadHierarchy {
                asset,
                bone: bone.unwrap_or_default(),
                reason: "is part of a parent cycle".into(),
            });
        }
        let mut new_index = vec![0u32; n];
        for (new, &old) in order.iter().enumerate() {
            new_index[old] = new as u32;
        }
        let names: Vec<String> = order.iter().map(|&i| self.bones[i].name.clone()).collect();
        let hashes: Vec<BoneHash> = names.iter().map(|s| bone_hash(s)).collect();
        let parents: Vec<u32> = order
            .iter()
            .map(|&i| self.bones[i].parent.map_or(NO_PARENT, |p| new_index[p]))
            .collect();
        // Parent-first order from a preorder walk is depth-first: each bone's subtree is the run
        // from it to the furthest end among its children's.
        let mut subtree_ends: Vec<u32> = (1..=n as u32).collect();
        for i in (0..n).rev() {
            if let Some(&p) = parents.get(i).filter(|&&p| p != NO_PARENT) {
                subtree_ends[p as usize] = subtree_ends[p as usize].max(subtree_ends[i]);
            }
        }
        // Negligible components are stored as zero: the samplers multiply rest values
        // together, and products of exporter noise are subnormal (see `flush_negligible`).
        let rest_pose: Vec<Transform> = order
            .iter()
            .map(|&i| flush_negligible(&self.bones[i].rest))
            .collect();
        let by_hash = hashes
            .iter()
            .enumerate()
            .map(|(i, h)| (*h, BoneIndex(i as u32)))
            .collect();
        let mut h = ContentHasher::new();
        h.str("rig").u64(n as u64);
        for i in 0..n {
            h.str(&names[i]).u64(u64::from(parents[i]));
            let r = &rest_pose[i];
            h.vec3(r.translation).quat(r.rotation).vec3(r.scale);
        }
        let rest_blocks = rest_pose
            .chunks(LANES)
            .map(SoaTransform::from_transforms)
            .collect();
        Ok(Rig {
            name: self.name.clone(),
            names,
            hashes,
            parents,
            subtree_ends,
            rest_pose,
            rest_blocks,
            source_order: new_index,
            by_hash,
            content_hash: h.finish(),
        })
    }
}

impl Rig {
    /// The rig's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Number of bones.
    pub fn bone_count(&self) -> usize {
        self.names.len()
    }
    /// Bone names, parent-first order.
    pub fn bone_names(&self) -> &[String] {
        &self.names
    }
    /// Bone name hashes, parent-first order.
    pub fn bone_hashes(&self) -> &[BoneHash] {
        &self.hashes
    }
    /// Parent of each bone (`u32::MAX` for roots); `parents[i] < i` for every other bone.
    pub fn parent_indices(&self) -> &[u32] {
        &self.parents
    }
    /// One past the last descendant of each bone: bones are depth-first, so bone `i` and its
    /// descendants are the bones `i..subtree_ends[i]`.
    pub fn subtree_ends(&self) -> &[u32] {
        &self.subtree_ends
    }
    /// The parent of `bone`, `None` for a root.
    pub fn parent(&self, bone: BoneIndex) -> Option<BoneIndex> {
        self.parents
            .get(bone.get())
            .and_then(|&p| (p != NO_PARENT).then_some(BoneIndex(p)))
    }
    /// The rest pose, parent-first order.
    pub fn rest_pose(&self) -> &[Transform] {
        &self.rest_pose
    }

    /// Block `b` of the rest pose: bones `8b .. 8b + 8` in structure of arrays.
    #[inline(always)]
    pub(crate) fn rest_block(&self, b: usize) -> Option<&SoaTransform> {
        self.rest_blocks.get(b)
    }
    /// The root bone (the first bone; bake puts a root first).
    pub fn root(&self) -> BoneIndex {
        BoneIndex(0)
    }
    /// The baked index of the bone that was `raw_index` in [`RawRig::bones`].
    pub fn baked_index_of_raw(&self, raw_index: usize) -> Option<BoneIndex> {
        self.source_order.get(raw_index).map(|&i| BoneIndex(i))
    }
    /// Looks a bone up by name hash.
    pub fn find(&self, hash: BoneHash) -> Option<BoneIndex> {
        self.by_hash.get(&hash).copied()
    }
    /// Looks a bone up by name.
    pub fn find_by_name(&self, name: &str) -> Option<BoneIndex> {
        self.find(bone_hash(name))
    }
    /// The content hash (names, hierarchy, rest pose).
    pub fn content_hash(&self) -> ContentHash {
        self.content_hash
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3;

    fn bone(name: &str, parent: Option<usize>) -> RawBone {
        RawBone {
            name: name.into(),
            parent,
            rest: Transform::from_translation(Vec3::X),
        }
    }

    #[test]
    fn bake_orders_parent_first_and_keeps_a_map_back() {
        //   input order: [hand, arm, root]   hierarchy: root -> arm -> hand
        let raw = RawRig {
            name: "r".into(),
            bones: vec![
                bone("hand", Some(1)),
                bone("arm", Some(2)),
                bone("root", None),
            ],
        };
        let rig = raw.bake().unwrap();
        assert_eq!(rig.bone_names(), &["root", "arm", "hand"]);
        assert_eq!(rig.parent_indices(), &[NO_PARENT, 0, 1]);
        assert_eq!(rig.baked_index_of_raw(0), Some(BoneIndex(2)));
        assert_eq!(rig.find_by_name("arm"), Some(BoneIndex(1)));
    }

    #[test]
    fn bake_rejects_cycles_duplicates_and_bad_parents() {
        let cyc = RawRig {
            name: "c".into(),
            bones: vec![bone("a", Some(1)), bone("b", Some(0))],
        };
        assert!(matches!(cyc.bake(), Err(BakeError::BadHierarchy { .. })));
        let dup = RawRig {
            name: "d".into(),
            bones: vec![bone("a", None), bone("a", Some(0))],
        };
        assert!(matches!(
            dup.bake(),
            Err(BakeError::DuplicateBoneName { .. })
        ));
        let oob = RawRig {
            name: "o".into(),
            bones: vec![bone("a", Some(7))],
        };
        assert!(matches!(oob.bake(), Err(BakeError::BadHierarchy { .. })));
        let empty = RawRig {
            name: "e".into(),
            bones: vec![],
        };
        assert!(matches!(empty.bake(), Err(BakeError::Empty { .. })));
        let mut nan = RawRig {
            name: "n".into(),
            bones: vec![bone("a", None)],
        };
        nan.bones[0].rest.translation.x = f32::NAN;
        assert!(matches!(nan.bake(), Err(BakeError::NotFinite { .. })));
    }

    #[test]
    fn equal_content_gives_equal_hashes() {
        let a = RawRig {
            name: "x".into(),
            bones: vec![bone("a", None), bone("b", Some(0))],
        };
        let mut b = a.clone();
        assert_eq!(
            a.bake().unwrap().content_hash(),
            b.bake().unwrap().content_hash()
        );
        b.bones[1].rest.translation.y = 1.0;
        assert_ne!(
            a.bake().unwrap().content_hash(),
            b.bake().unwrap().content_hash()
        );
    }
}
