use super::BakeError;
use super::hash::{ContentHash, ContentHasher};
use super::rig::Rig;

/// An editable avatar mask: the bones a layer may touch, each with a weight in `[0, 1]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawAvatarMask {
    /// Name for messages.
    pub name: String,
    /// `(bone name, weight)`; bones not listed get weight 0.
    pub bones: Vec<(String, f32)>,
    /// When set, every listed bone's descendants are included with the same weight unless
    /// listed themselves.
    pub include_descendants: bool,
}

/// A baked avatar mask: one weight per rig bone.
#[derive(Debug)]
pub struct AvatarMask {
    name: String,
    weights: Vec<f32>,
    rig_hash: ContentHash,
    content_hash: ContentHash,
}

impl RawAvatarMask {
    /// Resolves the mask against `rig`.
    ///
    /// # Errors
    /// [`BakeError::UnknownBone`] for a name the rig lacks; [`BakeError::NotFinite`] for a weight
    /// outside `[0, 1]` or NaN.
    pub fn bake(&self, rig: &Rig) -> Result<AvatarMask, BakeError> {
        let asset = format!("mask '{}'", self.name);
        let n = rig.bone_count();
        let mut weights = vec![0.0f32; n];
        let mut listed = vec![false; n];
        for (name, w) in &self.bones {
            let b = rig
                .find_by_name(name)
                .ok_or_else(|| BakeError::UnknownBone {
                    asset: asset.clone(),
                    bone: name.clone(),
                })?;
            if !(0.0..=1.0).contains(w) {
                return Err(BakeError::NotFinite {
                    asset,
                    location: format!("weight of bone '{name}' (must be in [0, 1])"),
                });
            }
            weights[b.get()] = *w;
            listed[b.get()] = true;
        }
        if self.include_descendants {
            let parents = rig.parent_indices();
            for i in 0..n {
                if let Some(&p) = parents.get(i)
                    && !listed[i]
                    && (p as usize) < i
                {
                    weights[i] = weights[p as usize];
                    listed[i] = listed[p as usize];
                }
            }
        }
        let mut h = ContentHasher::new();
        h.str("mask").str(&self.name).f32s(&weights);
        Ok(AvatarMask {
            name: self.name.clone(),
            weights,
            rig_hash: rig.content_hash(),
            content_hash: h.finish(),
        })
    }
}

impl AvatarMask {
    /// Name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// One weight per rig bone.
    pub fn weights(&self) -> &[f32] {
        &self.weights
    }
    /// The weight of one bone (0 when out of range).
    #[inline]
    pub fn weight(&self, bone: usize) -> f32 {
        self.weights.get(bone).copied().unwrap_or(0.0)
    }
    /// Content hash of the rig it was baked for.
    pub fn rig_hash(&self) -> ContentHash {
        self.rig_hash
    }
    /// Content hash.
    pub fn content_hash(&self) -> ContentHash {
        self.content_hash
    }
}
