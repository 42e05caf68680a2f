//! Job 8, remap cache: for each (rig, skinned mesh) pair, which rig bone drives each mesh bone,
//! matched by bone-name hash. Built once per pair, then reused by every entity and frame.

use crate::asset::{ContentHash, Rig, SkinnedMesh};
use hashbrown::HashMap;
use std::sync::Arc;

/// Marks a mesh bone that no rig bone drives: its palette entry is the identity, so the
/// vertices it owns stay in bind pose.
pub const NO_RIG_BONE: u32 = u32::MAX;

/// Mesh bone → rig bone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemapTable {
    /// One entry per mesh bone: the rig bone, or [`NO_RIG_BONE`].
    pub mesh_to_rig: Vec<u32>,
    /// Mesh bones without a rig bone.
    pub missing: usize,
}

impl RemapTable {
    /// Matches every mesh bone with the rig bone of the same name hash.
    pub fn build(rig: &Rig, mesh: &SkinnedMesh) -> Self {
        let mesh_to_rig: Vec<u32> = mesh
            .bones()
            .iter()
            .map(|b| rig.find(b.hash).map_or(NO_RIG_BONE, |i| i.0))
            .collect();
        let missing = mesh_to_rig.iter().filter(|&&r| r == NO_RIG_BONE).count();
        Self {
            mesh_to_rig,
            missing,
        }
    }
}

/// The cache, keyed by the content hashes of rig and mesh (a graph resource).
#[derive(Debug, Default)]
pub struct RemapCache {
    tables: HashMap<(ContentHash, ContentHash), Arc<RemapTable>>,
    builds: usize,
}

impl RemapCache {
    /// The table of a pair, when built.
    #[inline]
    pub fn get(&self, rig: &Rig, mesh: &SkinnedMesh) -> Option<&Arc<RemapTable>> {
        self.tables.get(&(rig.content_hash(), mesh.content_hash()))
    }
    /// Whether the pair's table is built.
    pub fn contains(&self, rig: &Rig, mesh: &SkinnedMesh) -> bool {
        self.get(rig, mesh).is_some()
    }
    /// Distinct pairs cached.
    pub fn len(&self) -> usize {
        self.tables.len()
    }
    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }
    /// How many tables were ever built (a pair already cached is not built again).
    pub fn builds(&self) -> usize {
        self.builds
    }
}

/// Builds the tables of pairs not yet cached.
#[derive(Debug)]
pub struct RemapCacheJob<'a> {
    /// Pairs seen this frame (duplicates allowed).
    pub pairs: &'a [(&'a Rig, &'a SkinnedMesh)],
    /// The cache.
    pub cache: &'a mut RemapCache,
}

impl RemapCacheJob<'_> {
    /// Nothing can be wrong with the bindings: every pair can be matched (unmatched bones are
    /// recorded as [`NO_RIG_BONE`]).
    ///
    /// # Errors
    /// Never.
    pub fn validate(&self) -> Result<(), crate::error::JobError> {
        Ok(())
    }

    /// Builds missing tables.
    pub fn run(&mut self) {
        for (rig, mesh) in self.pairs {
            let key = (rig.content_hash(), mesh.content_hash());
            if !self.cache.tables.contains_key(&key) {
                self.cache
                    .tables
                    .insert(key, Arc::new(RemapTable::build(rig, mesh)));
                self.cache.builds += 1;
            }
        }
    }
}
