//! Job 8's node: remap tables for (rig, mesh) pairs not seen before.

use crate::RemapCacheJob;
use crate::component::{RigRef, SkinRef};
use crate::j8_remap_cache::RemapCache;
use sinew_runtime::graph::{Access, Node, NodeContext, NodeError};

#[derive(Debug)]
pub(super) struct RemapCacheNode;

impl Node for RemapCacheNode {
    fn name(&self) -> &str {
        "8 remap cache"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<RigRef>()
            .read::<SkinRef>()
            .write::<RemapCache>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let mut cache = ctx.resource_mut::<RemapCache>()?;
        let mut q = ctx.query::<(&RigRef, &SkinRef)>()?;
        let mut pairs = Vec::new();
        let mut last: Option<(*const crate::asset::Rig, *const crate::asset::SkinnedMesh)> = None;
        for chunk in q.chunks() {
            let (_, (rigs, skins)) = chunk.into_parts();
            for (r, s) in rigs.iter().zip(skins) {
                let key = (
                    std::sync::Arc::as_ptr(&r.0),
                    std::sync::Arc::as_ptr(&s.mesh),
                );
                if last == Some(key) {
                    continue;
                }
                last = Some(key);
                if !cache.contains(&r.0, &s.mesh) {
                    pairs.push((&*r.0, &*s.mesh));
                }
            }
        }
        let mut job = RemapCacheJob {
            pairs: &pairs,
            cache: &mut cache,
        };
        job.validate()?;
        job.run();
        Ok(())
    }
}
