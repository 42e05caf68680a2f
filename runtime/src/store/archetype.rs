//! Archetypes: one per set of component types, holding fixed-size chunks of rows.

use std::alloc::Layout;
use std::fmt;

use hashbrown::HashMap;

use super::chunk::Chunk;
use super::component::{ComponentId, ComponentInfo, DropFn};
use super::{Entity, StoreError};

/// The index of an archetype in its store (archetypes are numbered in creation order).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct ArchetypeId(pub(crate) u32);

impl ArchetypeId {
    /// The index of the archetype in creation order.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for ArchetypeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "archetype#{}", self.0)
    }
}

/// One component column of an archetype.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Column {
    pub(crate) name: &'static str,
    pub(crate) offset: usize,
    pub(crate) size: usize,
    pub(crate) drop: Option<DropFn>,
}

/// A set of component types and the chunks holding its entities.
///
/// Rows are dense: every chunk but the last holding rows is full. Removing a row moves the
/// archetype's last row into the hole (swap-remove).
pub struct Archetype {
    pub(crate) components: Box<[ComponentId]>,
    pub(crate) columns: Box<[Column]>,
    pub(crate) capacity: usize,
    pub(crate) layout: Layout,
    pub(crate) chunks: Vec<Chunk>,
    pub(crate) len: usize,
    pub(crate) insert_edges: HashMap<ComponentId, u32>,
    pub(crate) remove_edges: HashMap<ComponentId, u32>,
}

fn align_up(x: usize, align: usize) -> Option<usize> {
    x.checked_add(align - 1).map(|v| v & !(align - 1))
}

/// Total bytes needed for `n` rows, and the column offsets.
fn layout_for(n: usize, infos: &[ComponentInfo], offsets: &mut Vec<usize>) -> Option<usize> {
    offsets.clear();
    let mut end = n.checked_mul(std::mem::size_of::<Entity>())?;
    for info in infos {
        let start = align_up(end, info.layout.align())?;
        offsets.push(start);
        end = start.checked_add(n.checked_mul(info.layout.size())?)?;
    }
    Some(end)
}

impl Archetype {
    /// Builds the archetype for `infos` (sorted by component id, matching `components`).
    ///
    /// Capacity is the largest row count whose columns fit in `chunk_bytes`; if not even one row
    /// fits, the chunks of this archetype are larger than `chunk_bytes` and hold exactly 1 row.
    pub(crate) fn new(
        components: Box<[ComponentId]>,
        infos: &[ComponentInfo],
        chunk_bytes: usize,
    ) -> Result<Self, StoreError> {
        let overflow = StoreError::CapacityOverflow {
            what: "bytes in one chunk row",
        };
        let align = infos
            .iter()
            .map(|i| i.layout.align())
            .fold(std::mem::align_of::<Entity>(), usize::max);
        let row_bytes = infos
            .iter()
            .try_fold(std::mem::size_of::<Entity>(), |acc, i| {
                acc.checked_add(i.layout.size())
            })
            .ok_or_else(|| overflow.clone())?;
        let mut offsets = Vec::with_capacity(infos.len());
        let mut capacity = chunk_bytes / row_bytes;
        while capacity > 0
            && layout_for(capacity, infos, &mut offsets).is_none_or(|t| t > chunk_bytes)
        {
            capacity -= 1;
        }
        let bytes = if capacity == 0 {
            capacity = 1;
            layout_for(1, infos, &mut offsets).ok_or_else(|| overflow.clone())?
        } else {
            layout_for(capacity, infos, &mut offsets).ok_or_else(|| overflow.clone())?;
            chunk_bytes
        };
        let layout = Layout::from_size_align(bytes.max(1), align).map_err(|_| overflow)?;
        let columns = infos
            .iter()
            .zip(&offsets)
            .map(|(i, &offset)| Column {
                name: i.name,
                offset,
                size: i.layout.size(),
                drop: i.drop,
            })
            .collect();
        Ok(Self {
            components,
            columns,
            capacity,
            layout,
            chunks: Vec::new(),
            len: 0,
            insert_edges: HashMap::new(),
            remove_edges: HashMap::new(),
        })
    }

    /// Column index of a component, if the archetype has it.
    #[inline]
    pub(crate) fn column_index(&self, id: ComponentId) -> Option<usize> {
        self.components.binary_search(&id).ok()
    }

    /// The component type names, for messages.
    pub(crate) fn describe(&self) -> String {
        self.columns
            .iter()
            .map(|c| c.name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Number of chunks holding at least one row.
    #[inline]
    pub(crate) fn used_chunks(&self) -> usize {
        self.len.div_ceil(self.capacity)
    }

    /// Pointer to the value of `column` at (`chunk`, `row`). The chunk must exist.
    #[inline]
    pub(crate) fn ptr_at(&self, column: usize, chunk: usize, row: usize) -> *mut u8 {
        let col = &self.columns[column];
        // The offset stays inside the chunk allocation: `row < capacity` and the column holds
        // `capacity` values starting at `col.offset` (see `layout_for`).
        self.chunks[chunk]
            .base()
            .wrapping_add(col.offset + row * col.size)
    }

    /// Pointer to the entity at (`chunk`, `row`).
    #[inline]
    pub(crate) fn entity_ptr(&self, chunk: usize, row: usize) -> *mut Entity {
        self.chunks[chunk].base().cast::<Entity>().wrapping_add(row)
    }

    /// Reserves the next row (allocating a chunk if needed) and returns (chunk, row). The caller
    /// must initialise the entity and every column of the row before any other operation.
    pub(crate) fn alloc_row(&mut self, frame: u64) -> Result<(usize, usize), StoreError> {
        let chunk = self.len / self.capacity;
        let row = self.len % self.capacity;
        if chunk == self.chunks.len() {
            if u32::try_from(chunk).is_err() {
                return Err(StoreError::CapacityOverflow {
                    what: "chunks in one archetype",
                });
            }
            let c = Chunk::new(self.layout, self.columns.len(), frame, || self.describe())?;
            self.chunks.push(c);
        }
        let c = &mut self.chunks[chunk];
        c.len += 1;
        c.stamp_all(frame);
        self.len += 1;
        Ok((chunk, row))
    }

    /// Removes the row at (`chunk`, `row`) by moving the archetype's last row into it; returns
    /// the entity that moved into the hole, if any.
    ///
    /// With `keep_detached`, the removed row's values are swapped to the row just past the new end
    /// (row index `self.len` in archetype order), still initialised: the caller must then call
    /// [`Archetype::drop_detached`] (after fixing its entity table, so that a panicking drop
    /// leaves the store consistent). Without it the removed row's values are overwritten: the
    /// caller must have moved them out first.
    pub(crate) fn remove_row(
        &mut self,
        chunk: usize,
        row: usize,
        frame: u64,
        keep_detached: bool,
    ) -> Option<Entity> {
        let last = self.len - 1;
        let (lc, lr) = (last / self.capacity, last % self.capacity);
        let mut moved = None;
        if (lc, lr) != (chunk, row) {
            for col in 0..self.columns.len() {
                let size = self.columns[col].size;
                let dst = self.ptr_at(col, chunk, row);
                let src = self.ptr_at(col, lc, lr);
                if keep_detached {
                    // SAFETY: both rows are initialised, distinct, and inside their chunks;
                    // swapping keeps every value owned exactly once (the removed one ends up in
                    // the last row, which becomes the detached row below).
                    unsafe { std::ptr::swap_nonoverlapping(dst, src, size) };
                } else {
                    // SAFETY: distinct initialised rows; the value at `dst` was moved out by the
                    // caller, so overwriting it leaks nothing; `src` becomes unused below.
                    unsafe { std::ptr::copy_nonoverlapping(src, dst, size) };
                }
            }
            // SAFETY: both entity slots are initialised rows of live chunks.
            unsafe {
                let e = self.entity_ptr(lc, lr).read();
                self.entity_ptr(chunk, row).write(e);
                moved = Some(e);
            }
            self.chunks[chunk].stamp_all(frame);
        }
        self.chunks[lc].len -= 1;
        self.len -= 1;
        moved
    }

    /// Drops the values of the detached row left by `remove_row(.., keep_detached = true)`.
    ///
    /// # Safety
    /// Must be called exactly once right after such a `remove_row`, before any row is allocated.
    pub(crate) unsafe fn drop_detached(&mut self) {
        let (lc, lr) = (self.len / self.capacity, self.len % self.capacity);
        for col in 0..self.columns.len() {
            if let Some(drop) = self.columns[col].drop {
                // SAFETY: the detached row's values are initialised and no longer reachable
                // (the row count shrank); each is dropped exactly once here. If a drop panics
                // the remaining values leak, which is safe.
                unsafe { drop(self.ptr_at(col, lc, lr)) };
            }
        }
    }
}

impl Drop for Archetype {
    fn drop(&mut self) {
        for chunk in &self.chunks {
            for col in self.columns.iter() {
                let Some(drop) = col.drop else { continue };
                for row in 0..chunk.len() {
                    // SAFETY: rows `0..len` are initialised and dropped exactly once, here.
                    unsafe { drop(chunk.base().wrapping_add(col.offset + row * col.size)) };
                }
            }
        }
    }
}

impl fmt::Debug for Archetype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Archetype")
            .field("components", &self.describe())
            .field("len", &self.len)
            .field("capacity", &self.capacity)
            .field("chunks", &self.chunks.len())
            .finish()
    }
}
