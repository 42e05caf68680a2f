//! The flat per-frame buffers the jobs pass to each other (graph resources), and a helper to
//! cut a flat buffer into disjoint per-entity or per-chunk pieces for parallel writers.

use crate::asset::{KeySpan, Transform};
use glam::Affine3A;
use sinew_runtime::store::Entity;

/// Per-entity sizes in the flat buffers (job 1 writes them, job 2 scans them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EntityCounts {
    /// Rig bones.
    pub bones: u32,
    /// Palette entries (mesh bones).
    pub palette: u32,
    /// Key spans: Σ over the entity's animations of its clip's timeline count.
    pub spans: u32,
}

impl EntityCounts {
    /// Component-wise sum, saturating (a crowd of 4 billion bones is refused elsewhere).
    #[inline]
    pub fn saturating_add(self, o: Self) -> Self {
        Self {
            bones: self.bones.saturating_add(o.bones),
            palette: self.palette.saturating_add(o.palette),
            spans: self.spans.saturating_add(o.spans),
        }
    }
}

/// Job 1's output: one [`EntityCounts`] per animated entity, in iteration order.
#[derive(Clone, Debug, Default)]
pub struct FrameCounts(pub Vec<EntityCounts>);

/// Job 2's output: exclusive prefix sums of [`FrameCounts`] and the totals.
#[derive(Clone, Debug, Default)]
pub struct FrameOffsets {
    /// Offsets, one per entity.
    pub offsets: Vec<EntityCounts>,
    /// Totals.
    pub total: EntityCounts,
}

/// Which entity and rig bone a flat bone belongs to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BoneSlot {
    /// Entity index (iteration order).
    pub entity: u32,
    /// Bone index in the entity's rig.
    pub bone: u32,
}

/// Job 3's output: one [`BoneSlot`] per flat bone, for per-bone user nodes. Job 3 fills it
/// only when a node of the [`Animator`](crate::animator::Animator)'s graph declares a read of
/// it (no library node does); otherwise it stays empty.
#[derive(Clone, Debug, Default)]
pub struct BoneTable(pub Vec<BoneSlot>);

/// Job 4's key spans: per entity, per animation, per timeline of its clip.
#[derive(Clone, Debug, Default)]
pub struct FrameSpans(pub Vec<KeySpan>);

/// Job 4's output (adjusted by job 6): local bone poses, flat.
#[derive(Clone, Debug, Default)]
pub struct LocalPoses(pub Vec<Transform>);

/// Job 7's output: model-space (entity-space) bone matrices, flat.
#[derive(Clone, Debug, Default)]
pub struct ModelPoses(pub Vec<Affine3A>);

/// Palette storage used when the caller supplies no slice (CPU-only use and tests): one
/// float3x4 (column-major, 12 floats) per palette entry.
#[derive(Clone, Debug, Default)]
pub struct PaletteBuffer(pub Vec<[f32; 12]>);

/// One palette entry: a float3x4, column-major (12 floats), as the skinning shader reads it.
pub type PaletteEntry = [f32; 12];

/// Where the frame's palettes go, set by the frame call and read by the node that writes
/// them: the destination reaches that node explicitly, so a lent slice it cannot borrow is an
/// error, never a silent write elsewhere.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum PaletteDestination {
    /// The store's [`PaletteBuffer`], resized to the frame's total.
    #[default]
    Buffer,
    /// The caller's slice, lent for the frame as the store's scoped slice of [`PaletteEntry`];
    /// `write_combined` when it is write-combined memory (a mapped GPU buffer), which each
    /// entity's palette is then written to in one ascending run.
    Lent { write_combined: bool },
}

/// The instance table: each entity's first palette entry in this frame's palette, indexed by
/// [`Entity::index`], [`PaletteOffsets::NONE`] for indices without a palette (no skin, not
/// animated, or no entity). Written by job 3 every frame, so an engine can upload
/// [`PaletteOffsets::as_slice`] as it is and let its shader find each instance's palette from
/// the entity index it already keeps, however churn has moved the ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PaletteOffsets {
    offsets: Vec<u32>,
    /// The generation of the entity each entry belongs to, so that [`PaletteOffsets::get`]
    /// does not answer for a despawned entity whose index was reused.
    generations: Vec<u32>,
}

impl PaletteOffsets {
    /// The entry of an index without a palette.
    pub const NONE: u32 = u32::MAX;

    pub(crate) const EMPTY: Self = Self {
        offsets: Vec::new(),
        generations: Vec::new(),
    };

    /// The entity's first palette entry, if it has a palette this frame.
    pub fn get(&self, entity: Entity) -> Option<u32> {
        let i = entity.index() as usize;
        let offset = *self.offsets.get(i)?;
        (offset != Self::NONE && self.generations.get(i) == Some(&entity.generation()))
            .then_some(offset)
    }

    /// The table by entity index, for upload (one `u32` per index up to the highest animated
    /// one).
    pub fn as_slice(&self) -> &[u32] {
        &self.offsets
    }

    /// Empties the table and sizes it for indices below `end` (with [`Self::set`], the
    /// sequential reference for [`Self::rebuild`]).
    #[cfg(test)]
    pub(crate) fn reset(&mut self, end: usize) {
        self.offsets.clear();
        self.offsets.resize(end, Self::NONE);
        self.generations.clear();
        self.generations.resize(end, 0);
    }

    /// Records `entity`'s first palette entry.
    #[cfg(test)]
    pub(crate) fn set(&mut self, entity: Entity, offset: u32) {
        let i = entity.index() as usize;
        if let (Some(o), Some(g)) = (self.offsets.get_mut(i), self.generations.get_mut(i)) {
            *o = offset;
            *g = entity.generation();
        }
    }

    /// Rebuilds the table from runs of entities and their frame slots (one run per store
    /// chunk), in parallel over `blocks` contiguous ranges of entity indices: each range is
    /// reset and takes the entries whose index falls in it. Every range reads every run, but
    /// an index belongs to one range and one live entity, so the table does not depend on
    /// `blocks` and needs no unsafe scattered writes.
    pub(crate) fn rebuild(
        &mut self,
        runs: &[(&[Entity], &[crate::component::FrameSlot])],
        blocks: usize,
    ) {
        use rayon::prelude::*;
        let end = runs
            .par_iter()
            .map(|(entities, _)| {
                entities
                    .iter()
                    .map(|e| e.index() as usize + 1)
                    .max()
                    .unwrap_or(0)
            })
            .max()
            .unwrap_or(0);
        resize_frame_buffer(&mut self.offsets, end);
        resize_frame_buffer(&mut self.generations, end);
        let block = end.div_ceil(blocks.max(1)).max(1);
        self.offsets
            .par_chunks_mut(block)
            .zip(self.generations.par_chunks_mut(block))
            .enumerate()
            .for_each(|(b, (offsets, generations))| {
                offsets.fill(Self::NONE);
                generations.fill(0);
                let lo = b * block;
                for (entities, slots) in runs {
                    for (e, slot) in entities.iter().zip(*slots) {
                        let Some(i) = (e.index() as usize).checked_sub(lo) else {
                            continue;
                        };
                        if let (Some(o), Some(g)) = (offsets.get_mut(i), generations.get_mut(i))
                            && slot.palette_count > 0
                        {
                            *o = slot.palette_offset;
                            *g = e.generation();
                        }
                    }
                }
            });
    }
}

/// Cuts `buf` into consecutive pieces of the given lengths (the rest, if any, is dropped).
/// Returns `None` when the lengths add up to more than `buf.len()`.
pub fn split_lengths<T>(
    mut buf: &mut [T],
    lengths: impl IntoIterator<Item = usize>,
) -> Option<Vec<&mut [T]>> {
    let lengths = lengths.into_iter();
    let mut out = Vec::with_capacity(lengths.size_hint().0);
    for n in lengths {
        if n > buf.len() {
            return None;
        }
        let (head, tail) = std::mem::take(&mut buf).split_at_mut(n);
        out.push(head);
        buf = tail;
    }
    Some(out)
}

/// Resizes a frame buffer to `n` entries without shrinking its capacity (no allocation once
/// the crowd has reached its size).
pub fn resize_frame_buffer<T: Clone + Default>(v: &mut Vec<T>, n: usize) {
    if v.len() != n {
        v.resize(n, T::default());
    }
}

/// Cuts `buf` into the pieces `ranges` (half-open, increasing, non-overlapping; gaps between
/// them are skipped). Returns `None` when the ranges are out of order or run past the end.
pub fn split_ranges<'a, T>(
    buf: &'a mut [T],
    ranges: &[(usize, usize)],
) -> Option<Vec<&'a mut [T]>> {
    let mut pieces = Pieces::new(buf);
    ranges.iter().map(|&r| pieces.take(r)).collect()
}

/// Cuts pieces off a buffer one at a time, in increasing order, as [`split_ranges`] does for a
/// list of ranges: for a caller that builds one job per range as it goes.
#[derive(Debug)]
pub struct Pieces<'a, T> {
    rest: &'a mut [T],
    /// The index in the whole buffer of `rest[0]`.
    at: usize,
}

impl<'a, T> Pieces<'a, T> {
    /// Pieces of `buf`.
    pub fn new(buf: &'a mut [T]) -> Self {
        Self { rest: buf, at: 0 }
    }

    /// The piece `[start, end)` of the buffer (the part before it is skipped), or `None` when
    /// it starts before the end of the last piece taken, ends before it starts, or runs past
    /// the buffer.
    pub fn take(&mut self, (start, end): (usize, usize)) -> Option<&'a mut [T]> {
        let skip = start.checked_sub(self.at)?;
        let len = end.checked_sub(start)?;
        if skip.checked_add(len)? > self.rest.len() {
            return None;
        }
        let (_, tail) = std::mem::take(&mut self.rest).split_at_mut(skip);
        let (piece, tail) = tail.split_at_mut(len);
        (self.rest, self.at) = (tail, end);
        Some(piece)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_lengths_cuts_consecutive_pieces() {
        let mut v: Vec<u32> = (0..10).collect();
        let parts = split_lengths(&mut v, [3, 0, 4]).unwrap();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0], &[0, 1, 2]);
        assert!(parts[1].is_empty());
        assert_eq!(parts[2], &[3, 4, 5, 6]);
        assert!(split_lengths(&mut v, [11]).is_none());
        let parts = split_ranges(&mut v, &[(1, 3), (3, 3), (5, 8)]).unwrap();
        assert_eq!(parts[0], &[1, 2]);
        assert!(parts[1].is_empty());
        assert_eq!(parts[2], &[5, 6, 7]);
        assert!(split_ranges(&mut v, &[(2, 4), (3, 5)]).is_none());
        assert!(split_ranges(&mut v, &[(8, 11)]).is_none());
        assert!(split_ranges(&mut v, &[(4, 3)]).is_none());
        // One range at a time, as the pose chain cuts them: the same pieces.
        let mut pieces = Pieces::new(&mut v);
        assert_eq!(pieces.take((1, 3)).unwrap(), &[1, 2]);
        assert!(
            pieces.take((2, 4)).is_none(),
            "starts inside the last piece"
        );
        assert_eq!(pieces.take((5, 8)).unwrap(), &[5, 6, 7]);
        assert!(pieces.take((9, 11)).is_none(), "past the end");
        assert_eq!(pieces.take((9, 10)).unwrap(), &[9]);
    }

    /// The parallel rebuild of the instance table equals the sequential scatter for any
    /// number of blocks: scattered indices (churn), gaps, entities without a palette, and a
    /// generation per entry.
    #[test]
    fn palette_offsets_rebuild_matches_the_sequential_scatter() {
        use crate::component::FrameSlot;
        let mut s = 0x2545_f491_u64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        // Three "chunks" of entities with distinct, shuffled indices below 1000.
        let mut indices: Vec<u32> = (0..1000).filter(|i| i % 7 != 3).collect();
        for i in (1..indices.len()).rev() {
            indices.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        indices.truncate(700);
        let entities: Vec<Entity> = indices
            .iter()
            .map(|&i| Entity::from_raw_parts(i, (next() % 5) as u32 + 1))
            .collect();
        let slots: Vec<FrameSlot> = (0..entities.len())
            .map(|k| FrameSlot {
                palette_offset: 45 * k as u32,
                palette_count: if k % 11 == 0 { 0 } else { 45 },
                ..FrameSlot::default()
            })
            .collect();
        let runs: Vec<(&[Entity], &[FrameSlot])> = [0..250, 250..251, 251..700]
            .into_iter()
            .map(|r| (&entities[r.clone()], &slots[r]))
            .collect();
        let mut reference = PaletteOffsets::default();
        let end = indices.iter().map(|&i| i as usize + 1).max().unwrap();
        reference.reset(end);
        for (e, slot) in entities.iter().zip(&slots) {
            if slot.palette_count > 0 {
                reference.set(*e, slot.palette_offset);
            }
        }
        for blocks in [1, 2, 3, 7, 64, 5000] {
            // Start from a stale, longer table: the rebuild must clear what is not set.
            let mut table = PaletteOffsets {
                offsets: vec![7; 1200],
                generations: vec![9; 1200],
            };
            table.rebuild(&runs, blocks);
            assert_eq!(table, reference, "{blocks} blocks");
        }
        assert_eq!(reference.get(entities[1]), Some(45));
        assert_eq!(reference.get(entities[0]), None); // no palette
        let g = entities[1].generation();
        let stale = Entity::from_raw_parts(entities[1].index(), g + 1);
        assert_eq!(reference.get(stale), None);
        let mut empty = PaletteOffsets::default();
        empty.rebuild(&[], 2);
        assert!(empty.as_slice().is_empty());
    }
}
