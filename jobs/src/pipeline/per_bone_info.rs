//! Job 3's node: the bone table and each entity's frame slot.

use crate::PerBoneInfoJob;
use crate::component::{Animations, FrameSlot, LayerWeights, RigRef};
use crate::frame::{BoneTable, FrameCounts, FrameOffsets, PaletteOffsets, resize_frame_buffer};
use sinew_runtime::graph::{Access, Node, NodeContext, NodeError};

/// Job 3's node: the bone table, each entity's [`FrameSlot`], and the [`PaletteOffsets`]
/// instance table.
#[derive(Debug)]
pub(super) struct PerBoneInfoNode;

/// Set by [`Animator`](crate::animator::Animator) before each frame: whether a node of its
/// graph other than job 3 reads the [`BoneTable`]. No library node does (the fused chain and
/// the staged jobs walk entities, not flat bones), so job 3 fills it only for a user node that
/// declares the read, and otherwise leaves it empty: at 10 000 Fox characters the fill writes
/// 1.9 MB a frame that nothing reads.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BoneTableRead(pub(crate) bool);

impl Node for PerBoneInfoNode {
    fn name(&self) -> &str {
        "3 per-bone info"
    }
    fn access(&self) -> Access {
        Access::new()
            .read::<FrameCounts>()
            .read::<FrameOffsets>()
            .read::<RigRef>()
            .read::<Animations>()
            .read::<LayerWeights>()
            .read::<BoneTableRead>()
            .write::<FrameSlot>()
            .write::<BoneTable>()
            .write::<PaletteOffsets>()
    }
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        let counts = ctx.resource::<FrameCounts>()?;
        let offsets = ctx.resource::<FrameOffsets>()?;
        let mut table = ctx.resource_mut::<BoneTable>()?;
        // Without the flag (a graph not built by the Animator), the table is filled.
        if ctx.resource::<BoneTableRead>().is_ok_and(|r| !r.0) {
            table.0.clear();
        } else {
            resize_frame_buffer(&mut table.0, offsets.total.bones as usize);
            let mut job = PerBoneInfoJob {
                counts: &counts.0,
                offsets: &offsets.offsets,
                table: &mut table.0,
            };
            job.validate()?;
            job.run();
        }
        let mut q = ctx
            .query::<&mut FrameSlot>()?
            .with::<RigRef>()
            .with::<Animations>()
            .with::<LayerWeights>();
        let (counts, offsets) = (&counts.0, &offsets.offsets);
        q.par_for_each_chunk(|chunk| {
            let first = chunk.first_index();
            for (row, slot) in chunk.into_columns().iter_mut().enumerate() {
                let i = first + row;
                let (c, o) = (
                    counts.get(i).copied().unwrap_or_default(),
                    offsets.get(i).copied().unwrap_or_default(),
                );
                *slot = FrameSlot {
                    index: i as u32,
                    bone_offset: o.bones,
                    bone_count: c.bones,
                    palette_offset: o.palette,
                    palette_count: c.palette,
                };
            }
        });
        drop(q);
        write_palette_offsets(ctx)
    }
}

/// The fewest entities per range of the instance table's parallel rebuild.
const PALETTE_OFFSETS_BLOCK: usize = 4096;

/// The instance table from this frame's slots, in parallel over ranges of entity indices (one
/// per worker thread; see [`PaletteOffsets::rebuild`]).
fn write_palette_offsets(ctx: &NodeContext<'_>) -> Result<(), NodeError> {
    let mut table = ctx.resource_mut::<PaletteOffsets>()?;
    let mut q = ctx
        .query::<&FrameSlot>()?
        .with::<RigRef>()
        .with::<Animations>()
        .with::<LayerWeights>();
    let runs: Vec<_> = q.chunks().into_iter().map(|c| c.into_parts()).collect();
    // A range per worker, of at least PALETTE_OFFSETS_BLOCK entities: waking a worker for a
    // few hundred entries costs more than writing them.
    let entities: usize = runs.iter().map(|r| r.0.len()).sum();
    let blocks = (rayon::current_num_threads()).min(entities.div_ceil(PALETTE_OFFSETS_BLOCK));
    table.rebuild(&runs, blocks.max(1));
    Ok(())
}
