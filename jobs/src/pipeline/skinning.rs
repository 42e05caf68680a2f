//! Job 9's node (staged pipeline): palettes from the crowd's model matrices.

use super::frame_ranges::*;
use crate::SkinningJob;
use crate::component::{Animations, FrameSlot, LayerWeights, RigRef, SkinRef};
use crate::frame::{FrameOffsets, ModelPoses, PaletteBuffer, PaletteDestination, PaletteEntry};
use crate::j8_remap_cache::RemapCache;
use sinew_runtime::graph::{Access, Node, NodeContext, NodeError};
use sinew_runtime::store::ScopedSlice;

/// (`Store::with_scoped_slice::<PaletteEntry, _>`), else into [`PaletteBuffer`].
#[derive(Debug)]
pub(super) struct SkinningNode;

impl Node for SkinningNode {
    fn name(&self) -> &str {
        "9 skinning"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<RigRef>()
            .read::<SkinRef>()
            .read::<Animations>()
            .read::<LayerWeights>()
            .read::<FrameSlot>()
            .read::<ModelPoses>()
            .read::<RemapCache>()
            .read::<FrameOffsets>()
            .write::<ScopedSlice<PaletteEntry>>()
            .write::<PaletteBuffer>()
            .read::<PaletteDestination>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let model = ctx.resource::<ModelPoses>()?;
        let remap = ctx.resource::<RemapCache>()?;
        let total = ctx.resource::<FrameOffsets>()?.total.palette as usize;
        let mut target = PaletteTarget::borrow(ctx, "skinning")?;
        let palette = target.slice("skinning", total)?;
        let mut q = ctx
            .query::<(&RigRef, &SkinRef, &FrameSlot)>()?
            .with::<Animations>()
            .with::<LayerWeights>();
        let chunks = q.chunks();
        let (model, remap) = (&model.0, &*remap);
        per_chunk_piece(
            chunks,
            palette,
            palette_range,
            "skinning",
            |chunk, palette, (base, _)| {
                let (entities, (rigs, skins, slots)) = chunk.into_parts();
                let mut job = SkinningJob {
                    entities,
                    rigs,
                    skins,
                    slots,
                    model,
                    remap,
                    palette,
                    palette_base: base as u32,
                };
                job.validate()?;
                job.run();
                Ok(())
            },
        )
    }
}
