use super::hash::ContentHash;
use super::{AvatarMask, Clip, Rig, SkinnedMesh};
use hashbrown::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Deduplicates baked assets by content hash: 10 000 entities of one model, or one model
/// imported twice, share one `Arc` of each asset.
#[derive(Default, Debug)]
pub struct AssetRegistry {
    rigs: Mutex<HashMap<ContentHash, Arc<Rig>>>,
    clips: Mutex<HashMap<ContentHash, Arc<Clip>>>,
    meshes: Mutex<HashMap<ContentHash, Arc<SkinnedMesh>>>,
    masks: Mutex<HashMap<ContentHash, Arc<AvatarMask>>>,
}

fn intern<T>(map: &Mutex<HashMap<ContentHash, Arc<T>>>, hash: ContentHash, value: T) -> Arc<T> {
    let mut map = map.lock().unwrap_or_else(PoisonError::into_inner);
    map.entry(hash).or_insert_with(|| Arc::new(value)).clone()
}

/// `value` unless the map holds an asset of the same content, which it returns instead.
#[cfg(feature = "gltf")]
fn adopt<T>(map: &Mutex<HashMap<ContentHash, Arc<T>>>, hash: ContentHash, value: Arc<T>) -> Arc<T> {
    let mut map = map.lock().unwrap_or_else(PoisonError::into_inner);
    map.entry(hash).or_insert(value).clone()
}

impl AssetRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }
    /// The shared rig with this content.
    pub fn rig(&self, rig: Rig) -> Arc<Rig> {
        let h = rig.content_hash();
        intern(&self.rigs, h, rig)
    }
    /// The shared clip with this content.
    pub fn clip(&self, clip: Clip) -> Arc<Clip> {
        let h = clip.content_hash();
        intern(&self.clips, h, clip)
    }
    /// The shared mesh with this content.
    pub fn mesh(&self, mesh: SkinnedMesh) -> Arc<SkinnedMesh> {
        let h = mesh.content_hash();
        intern(&self.meshes, h, mesh)
    }
    /// The shared mask with this content.
    pub fn mask(&self, mask: AvatarMask) -> Arc<AvatarMask> {
        let h = mask.content_hash();
        intern(&self.masks, h, mask)
    }
    /// The shared rig with this content, `rig` itself when none is held yet (for moving
    /// assets from a staging registry without copying them).
    #[cfg(feature = "gltf")]
    pub(crate) fn adopt_rig(&self, rig: Arc<Rig>) -> Arc<Rig> {
        let h = rig.content_hash();
        adopt(&self.rigs, h, rig)
    }
    /// As [`AssetRegistry::adopt_rig`], for a clip.
    #[cfg(feature = "gltf")]
    pub(crate) fn adopt_clip(&self, clip: Arc<Clip>) -> Arc<Clip> {
        let h = clip.content_hash();
        adopt(&self.clips, h, clip)
    }
    /// As [`AssetRegistry::adopt_rig`], for a mesh.
    #[cfg(feature = "gltf")]
    pub(crate) fn adopt_mesh(&self, mesh: Arc<SkinnedMesh>) -> Arc<SkinnedMesh> {
        let h = mesh.content_hash();
        adopt(&self.meshes, h, mesh)
    }
    /// Number of distinct assets held: (rigs, clips, meshes, masks).
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        fn n<T>(m: &Mutex<HashMap<ContentHash, Arc<T>>>) -> usize {
            m.lock().map_or(0, |m| m.len())
        }
        (
            n(&self.rigs),
            n(&self.clips),
            n(&self.meshes),
            n(&self.masks),
        )
    }
}
