//! How nodes cut the crowd's flat frame buffers into per-chunk pieces.

use crate::component::FrameSlot;
use crate::error::JobError;
use crate::frame::{
    EntityCounts, FrameOffsets, PaletteBuffer, PaletteDestination, PaletteEntry,
    resize_frame_buffer, split_ranges,
};
use rayon::prelude::*;
use sinew_runtime::graph::{NodeContext, NodeError};
use sinew_runtime::store::{QueryChunk, QueryParam, ResMut, ScopedSliceGuard};

/// The flat range `[start, end)` of the entities `first..first + len` in the buffer whose
/// per-entity offsets `field` selects.
pub(super) fn chunk_range(
    offsets: &FrameOffsets,
    first: usize,
    len: usize,
    field: impl Fn(&EntityCounts) -> u32,
) -> (usize, usize) {
    let at = |i: usize| offsets.offsets.get(i).map_or(field(&offsets.total), &field) as usize;
    (at(first), at(first + len))
}

/// A slot's bone range (`offset`, `count`).
pub(super) fn bone_range(s: &FrameSlot) -> (u32, u32) {
    (s.bone_offset, s.bone_count)
}

/// A slot's palette range (`offset`, `count`).
pub(super) fn palette_range(s: &FrameSlot) -> (u32, u32) {
    (s.palette_offset, s.palette_count)
}

/// The flat range covered by a chunk's slots (`start_count` gives each slot's offset and count).
pub(super) fn slot_range(
    slots: &[FrameSlot],
    start_count: fn(&FrameSlot) -> (u32, u32),
) -> (usize, usize) {
    let start = slots.first().map_or(0, |s| start_count(s).0 as usize);
    let end = slots.last().map_or(start, |s| {
        let (o, c) = start_count(s);
        o as usize + c as usize
    });
    (start, end.max(start))
}

/// Runs `f` in parallel for every chunk with its own piece of the flat buffer `buf`: the range
/// its entities' [`FrameSlot`]s cover (`start_count` picks bones or palette entries), given
/// as `(start, end)` too. The pattern of every node that writes per-entity ranges.
pub(super) fn per_chunk_piece<'q, Q, T, F>(
    chunks: Vec<QueryChunk<'q, Q>>,
    buf: &mut [T],
    start_count: fn(&FrameSlot) -> (u32, u32),
    node: &'static str,
    f: F,
) -> Result<(), NodeError>
where
    Q: QueryParam,
    T: Send,
    F: Fn(QueryChunk<'q, Q>, &mut [T], (usize, usize)) -> Result<(), JobError> + Sync + Send,
{
    let ranges: Vec<(usize, usize)> = chunks
        .iter()
        .map(|c| slot_range(c.read_column::<FrameSlot>().unwrap_or(&[]), start_count))
        .collect();
    let pieces = split_ranges(buf, &ranges).ok_or_else(|| {
        NodeError::new(format!("{node}: frame-slot ranges do not fit the buffer"))
    })?;
    chunks
        .into_par_iter()
        .zip(pieces)
        .zip(ranges)
        .try_for_each(|((chunk, piece), range)| f(chunk, piece, range))?;
    Ok(())
}

/// The slice this frame's palettes go to, as [`PaletteDestination`] says: the caller's lent
/// slice (at least `total` entries; the [`PaletteBuffer`] is emptied so that no stale palette
/// stays readable there), or the [`PaletteBuffer`] resized to `total`. Holds the borrows.
pub(super) struct PaletteTarget<'a> {
    lent: Option<ScopedSliceGuard<'a, PaletteEntry>>,
    buffer: ResMut<'a, PaletteBuffer>,
    write_combined: bool,
}

impl<'a> PaletteTarget<'a> {
    /// Borrows the destination the frame call chose; `job` names the node in errors.
    pub(super) fn borrow(ctx: &NodeContext<'a>, job: &'static str) -> Result<Self, NodeError> {
        let destination = *ctx.resource::<PaletteDestination>()?;
        let lent = match destination {
            PaletteDestination::Buffer => None,
            PaletteDestination::Lent { .. } => {
                Some(ctx.scoped_slice_mut::<PaletteEntry>().map_err(|e| {
                    JobError::PaletteUnavailable {
                        job,
                        reason: e.to_string(),
                    }
                })?)
            }
        };
        let buffer = ctx.resource_mut::<PaletteBuffer>()?;
        let write_combined = matches!(
            destination,
            PaletteDestination::Lent {
                write_combined: true
            }
        );
        Ok(Self {
            lent,
            buffer,
            write_combined,
        })
    }

    /// Whether the palette is a lent slice of write-combined memory.
    pub(super) fn is_write_combined(&self) -> bool {
        self.write_combined
    }

    /// The palette slice for `total` entries.
    pub(super) fn slice(
        &mut self,
        job: &'static str,
        total: usize,
    ) -> Result<&mut [PaletteEntry], JobError> {
        match self.lent.as_deref_mut() {
            Some(s) if s.len() < total => Err(JobError::LengthMismatch {
                job,
                buffer: "palette slice",
                expected: total,
                actual: s.len(),
            }),
            Some(s) => {
                self.buffer.0.clear();
                Ok(s)
            }
            None => {
                resize_frame_buffer(&mut self.buffer.0, total);
                Ok(&mut self.buffer.0)
            }
        }
    }
}
