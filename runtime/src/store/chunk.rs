//! One chunk: a single heap allocation holding the entity column and one column per component.

use std::alloc::{self, Layout};
use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Entity, StoreError};

/// The index of a chunk within its archetype (chunks are numbered in allocation order and never
/// move).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct ChunkId(pub(crate) u32);

impl ChunkId {
    /// The index of the chunk within its archetype.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "chunk#{}", self.0)
    }
}

/// A chunk's memory and bookkeeping. The memory is its own allocation, so pointers into it stay
/// valid while the chunk lives, however the `Vec` holding the chunks grows.
///
/// Layout (offsets computed by the archetype): `[Entity; capacity]` at offset 0, then each column
/// `[T; capacity]` at its aligned offset. Rows `0..len` are initialised in every column.
pub struct Chunk {
    ptr: NonNull<u8>,
    layout: Layout,
    pub(crate) len: usize,
    /// Frame of the last write, per component column (archetype column order).
    pub(crate) changed: Box<[AtomicU64]>,
}

// SAFETY: a chunk owns its allocation; the values in it are `Send + Sync` components (the store
// only admits `Component` types) and `Entity` values. Access to the memory is governed by the
// store: `&mut Store` for structural changes, run-time borrow flags for shared query access.
unsafe impl Send for Chunk {}
// SAFETY: see `Send` above; shared access only reads the pointer and the atomics.
unsafe impl Sync for Chunk {}

impl Chunk {
    pub(crate) fn new(
        layout: Layout,
        columns: usize,
        frame: u64,
        archetype_name: impl FnOnce() -> String,
    ) -> Result<Self, StoreError> {
        // The entity column is never empty, so `layout.size() > 0`.
        let ptr = if layout.size() == 0 {
            None
        } else {
            // SAFETY: the layout has non-zero size (checked just above).
            NonNull::new(unsafe { alloc::alloc(layout) })
        };
        let ptr = ptr.ok_or_else(|| StoreError::ChunkAllocation {
            bytes: layout.size(),
            align: layout.align(),
            archetype: archetype_name(),
        })?;
        Ok(Self {
            ptr,
            layout,
            len: 0,
            changed: (0..columns).map(|_| AtomicU64::new(frame)).collect(),
        })
    }

    /// Base pointer of the chunk memory.
    #[inline]
    pub(crate) fn base(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Number of initialised rows.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The entity column (rows `0..len`).
    #[inline]
    pub(crate) fn entities(&self) -> &[Entity] {
        // SAFETY: the entity column starts at offset 0 of an allocation aligned for `Entity`
        // (the archetype's layout has align >= align_of::<Entity>()), and rows `0..len` are
        // initialised. Entities are only written through `&mut Store`, so no `&mut` aliases this.
        unsafe { std::slice::from_raw_parts(self.base().cast::<Entity>(), self.len) }
    }

    #[inline]
    pub(crate) fn stamp(&self, column: usize, frame: u64) {
        if let Some(c) = self.changed.get(column) {
            c.store(frame, Ordering::Relaxed);
        }
    }

    pub(crate) fn stamp_all(&self, frame: u64) {
        for c in self.changed.iter() {
            c.store(frame, Ordering::Relaxed);
        }
    }

    #[inline]
    pub(crate) fn changed_frame(&self, column: usize) -> u64 {
        self.changed
            .get(column)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        // SAFETY: `ptr` was allocated with exactly `layout` in `Chunk::new` and is freed once.
        // The values in it were dropped (or moved out) by the owning archetype before.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

impl fmt::Debug for Chunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chunk")
            .field("len", &self.len)
            .field("bytes", &self.layout.size())
            .finish()
    }
}
