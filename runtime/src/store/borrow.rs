//! Run-time borrow flags per type (components, resources, scoped slices).
//!
//! Graph nodes reach the store through `&Store`; their declared access is checked, but soundness
//! does not rely on it: every shared-path borrow takes a flag here first (count > 0: shared
//! borrows, -1: one exclusive borrow). Conflicting live borrows get
//! [`StoreError::BorrowConflict`].
//!
//! Each type has a slot, assigned under a lock the first time the type is borrowed and never
//! moved or removed; its flag is an atomic. Callers that borrow the same types every frame (the
//! graph's node contexts) keep each type's slot in a [`SlotHint`], so a borrow is a check that
//! the hinted slot belongs to the type and one atomic update, with no lock and no hash lookup:
//! two threads borrowing at once do not wait for each other.

use std::any::TypeId;
use std::sync::atomic::{AtomicIsize, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use hashbrown::HashMap;

use super::StoreError;

/// One requested borrow: type, name (for errors), exclusive?
pub(crate) type BorrowRequest = (TypeId, &'static str, bool);

/// How many entries a [`SmallList`] keeps inline: as many as a query tuple has elements, so
/// taking borrows for a query or a resource allocates nothing.
const INLINE: usize = 8;

/// A list of `Copy` values kept inline up to [`INLINE`] entries; longer lists move to the heap.
/// Borrow requests and held borrows use it, so taking and releasing run-time borrow flags
/// (several times per graph node and frame) does not allocate.
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct SmallList<T: Copy>(Repr<T>);

#[derive(Clone, Debug)]
enum Repr<T: Copy> {
    /// The first `len` items are the entries; the rest are filler.
    Inline {
        len: u8,
        items: [T; INLINE],
    },
    Heap(Vec<T>),
}

impl<T: Copy> SmallList<T> {
    /// An empty list; `fill` only initialises the unused inline slots.
    #[inline]
    pub(crate) fn new(fill: T) -> Self {
        Self(Repr::Inline {
            len: 0,
            items: [fill; INLINE],
        })
    }

    /// Appends `value`.
    #[inline]
    pub(crate) fn push(&mut self, value: T) {
        match &mut self.0 {
            Repr::Inline { len, items } => {
                if let Some(slot) = items.get_mut(usize::from(*len)) {
                    *slot = value;
                    *len += 1;
                } else {
                    let mut heap = Vec::with_capacity(2 * INLINE);
                    heap.extend_from_slice(items);
                    heap.push(value);
                    self.0 = Repr::Heap(heap);
                }
            }
            Repr::Heap(heap) => heap.push(value),
        }
    }

    /// The entries, in push order.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[T] {
        match &self.0 {
            Repr::Inline { len, items } => &items[..usize::from(*len)],
            Repr::Heap(heap) => heap,
        }
    }
}

/// A list of borrow requests (what a query type names).
pub(crate) type RequestList = SmallList<BorrowRequest>;

impl RequestList {
    /// An empty request list.
    pub(crate) fn empty() -> Self {
        Self::new((TypeId::of::<()>(), "", false))
    }
}

/// Flags per segment; segments are allocated when their first type is borrowed.
const SEGMENT: usize = 64;
/// Segments: at most `SEGMENT * SEGMENTS` (4096) borrowed types per store.
const SEGMENTS: usize = 64;

/// Where a caller keeps the flag slot of one type between borrows (`u32::MAX`: none yet). A
/// stale or wrong hint costs a locked lookup, never a wrong flag: the slot's type is checked.
#[derive(Debug)]
pub(crate) struct SlotHint(AtomicU32);

impl SlotHint {
    /// A hint that knows no slot yet.
    pub(crate) const fn new() -> Self {
        Self(AtomicU32::new(u32::MAX))
    }
}

/// One type's flag, on a cache line of its own: flags of types that different threads borrow
/// at once do not share a line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Flag {
    /// The type, set once when the slot is assigned (before its slot number is handed out).
    ty: OnceLock<TypeId>,
    /// count > 0: shared borrows, -1: one exclusive borrow, 0: free.
    state: AtomicIsize,
}

impl Flag {
    /// Takes the flag, shared or exclusive; false if a live borrow conflicts.
    fn take(&self, exclusive: bool) -> bool {
        if exclusive {
            self.state
                .compare_exchange(0, -1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        } else {
            self.state
                .fetch_update(Ordering::Acquire, Ordering::Relaxed, |n| {
                    if n >= 0 { n.checked_add(1) } else { None }
                })
                .is_ok()
        }
    }

    fn give_back(&self, exclusive: bool) {
        if exclusive {
            self.state.store(0, Ordering::Release);
        } else {
            self.state.fetch_sub(1, Ordering::Release);
        }
    }
}

/// The flags of one store.
#[derive(Debug)]
pub(crate) struct BorrowTable {
    /// Type → slot; taken only to assign a slot or to find one without a valid hint.
    slot_of: Mutex<HashMap<TypeId, u32>>,
    segments: [OnceLock<Box<[Flag; SEGMENT]>>; SEGMENTS],
}

impl Default for BorrowTable {
    fn default() -> Self {
        Self {
            slot_of: Mutex::default(),
            segments: std::array::from_fn(|_| OnceLock::new()),
        }
    }
}

/// A borrow held on one flag slot.
#[derive(Clone, Copy, Debug)]
struct Held {
    slot: u32,
    exclusive: bool,
}

impl BorrowTable {
    fn flag(&self, slot: u32) -> Option<&Flag> {
        let slot = slot as usize;
        let segment = self.segments.get(slot / SEGMENT)?.get()?;
        segment.get(slot % SEGMENT)
    }

    /// The slot of `id`: the hinted one when it belongs to `id`, else found (or assigned) under
    /// the lock and left in the hint.
    #[inline]
    fn slot(&self, id: TypeId, hint: Option<&SlotHint>) -> Result<u32, StoreError> {
        if let Some(hint) = hint {
            let slot = hint.0.load(Ordering::Relaxed);
            if self.flag(slot).and_then(|f| f.ty.get()) == Some(&id) {
                return Ok(slot);
            }
        }
        self.slot_locked(id, hint)
    }

    #[cold]
    #[inline(never)]
    fn slot_locked(&self, id: TypeId, hint: Option<&SlotHint>) -> Result<u32, StoreError> {
        let mut slot_of = self.slot_of.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = match slot_of.get(&id) {
            Some(&slot) => slot,
            None => {
                let slot = slot_of.len();
                let overflow = StoreError::CapacityOverflow {
                    what: "borrowed types",
                };
                let segment = self.segments.get(slot / SEGMENT).ok_or(overflow)?;
                let segment =
                    segment.get_or_init(|| Box::new(std::array::from_fn(|_| Flag::default())));
                // A fresh slot: its type is unset (slots are assigned in order, under the lock).
                let _ = segment[slot % SEGMENT].ty.set(id);
                let slot = slot as u32;
                slot_of.insert(id, slot);
                slot
            }
        };
        if let Some(hint) = hint {
            hint.0.store(slot, Ordering::Relaxed);
        }
        Ok(slot)
    }

    /// Takes all borrows or none; `hint(k)` is the slot hint of request `k`, if any.
    ///
    /// All or nothing: requests are taken in order, each flag updated at once (so a later
    /// request of the same type sees it); on a conflict the flags this call took are given
    /// back before it returns. A concurrent call may see such a flag taken for that moment and
    /// fail too: only borrows that conflict with one another (the same type, one exclusive)
    /// ever meet, and no failed call keeps a flag.
    pub(crate) fn acquire<'h>(
        &self,
        requests: &[BorrowRequest],
        hint: impl Fn(usize) -> Option<&'h SlotHint>,
    ) -> Result<BorrowSet<'_>, StoreError> {
        let mut set = BorrowSet {
            table: self,
            held: SmallList::new(Held {
                slot: 0,
                exclusive: false,
            }),
        };
        for (k, &(id, name, exclusive)) in requests.iter().enumerate() {
            // On an error `set` is dropped, which gives back what it holds.
            let slot = self.slot(id, hint(k))?;
            if !self.flag(slot).is_some_and(|f| f.take(exclusive)) {
                return Err(StoreError::BorrowConflict {
                    type_name: name,
                    exclusive,
                });
            }
            set.held.push(Held { slot, exclusive });
        }
        Ok(set)
    }
}

/// Live borrows, released on drop.
#[derive(Debug)]
pub(crate) struct BorrowSet<'a> {
    table: &'a BorrowTable,
    held: SmallList<Held>,
}

impl Drop for BorrowSet<'_> {
    fn drop(&mut self) {
        for h in self.held.as_slice() {
            if let Some(flag) = self.table.flag(h.slot) {
                flag.give_back(h.exclusive);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req<T: 'static>(exclusive: bool) -> BorrowRequest {
        (TypeId::of::<T>(), std::any::type_name::<T>(), exclusive)
    }

    #[test]
    fn shared_and_exclusive() {
        let t = BorrowTable::default();
        let a = t
            .acquire(&[req::<u32>(false), req::<u32>(false)], |_| None)
            .unwrap();
        let b = t.acquire(&[req::<u32>(false)], |_| None).unwrap();
        assert!(t.acquire(&[req::<u32>(true)], |_| None).is_err());
        drop((a, b));
        let w = t
            .acquire(&[req::<u32>(true), req::<u64>(false)], |_| None)
            .unwrap();
        assert!(t.acquire(&[req::<u32>(false)], |_| None).is_err());
        assert!(t.acquire(&[req::<u64>(false)], |_| None).is_ok());
        // all-or-nothing: the failed request took nothing
        assert!(
            t.acquire(&[req::<u8>(true), req::<u32>(false)], |_| None)
                .is_err()
        );
        assert!(t.acquire(&[req::<u8>(true)], |_| None).is_ok());
        drop(w);
        assert!(t.acquire(&[req::<u32>(true)], |_| None).is_ok());
        assert!(
            t.acquire(&[req::<u16>(true), req::<u16>(false)], |_| None)
                .is_err()
        );
    }

    #[test]
    fn a_failed_request_gives_back_what_it_took_first() {
        let t = BorrowTable::default();
        let held = t.acquire(&[req::<u64>(false)], |_| None).unwrap();
        // u8 and u16 are taken, then u64 (exclusive) conflicts: u8 and u16 must be free again.
        let err = t
            .acquire(
                &[req::<u8>(true), req::<u16>(false), req::<u64>(true)],
                |_| None,
            )
            .unwrap_err();
        assert!(matches!(
            err,
            StoreError::BorrowConflict {
                exclusive: true,
                ..
            }
        ));
        assert!(
            t.acquire(&[req::<u8>(true), req::<u16>(true)], |_| None)
                .is_ok()
        );
        // the shared borrow held before is untouched
        assert!(t.acquire(&[req::<u64>(false)], |_| None).is_ok());
        assert!(t.acquire(&[req::<u64>(true)], |_| None).is_err());
        drop(held);
        assert!(t.acquire(&[req::<u64>(true)], |_| None).is_ok());
        // same type twice in one request, shared then exclusive: refused, nothing kept
        assert!(
            t.acquire(&[req::<i8>(false), req::<i8>(true)], |_| None)
                .is_err()
        );
        assert!(t.acquire(&[req::<i8>(true)], |_| None).is_ok());
    }

    #[test]
    fn a_hint_from_another_table_finds_its_own_type() {
        let (t1, t2) = (BorrowTable::default(), BorrowTable::default());
        let (h8, h16) = (SlotHint::new(), SlotHint::new());
        let hints = [&h8, &h16];
        drop(t1.acquire(&[req::<u8>(false), req::<u16>(false)], |k| {
            hints.get(k).copied()
        }));
        // In t2, u16's slot in t1 (1) belongs to u64, which is held exclusively.
        let held = t2
            .acquire(&[req::<u32>(false), req::<u64>(true)], |_| None)
            .unwrap();
        let again = t2.acquire(&[req::<u16>(true)], |_| Some(&h16)).unwrap();
        assert!(t2.acquire(&[req::<u16>(false)], |_| None).is_err());
        assert!(t2.acquire(&[req::<u64>(false)], |_| None).is_err());
        drop((again, held));
        // The hint now names u16's slot in t2, and every flag is free.
        let all = [
            req::<u8>(true),
            req::<u16>(true),
            req::<u32>(true),
            req::<u64>(true),
        ];
        drop(t2.acquire(&all, |k| (k == 1).then_some(&h16)).unwrap());
        assert!(t1.acquire(&all, |_| None).is_ok());
    }

    /// Threads borrowing overlapping sets at once: a borrow that succeeds is never shared with
    /// a conflicting one (checked with counters of the holders, kept apart from the table),
    /// a type that is only ever borrowed shared never fails, and every flag is free at the end.
    #[test]
    fn concurrent_borrows_exclude_each_other() {
        use std::sync::atomic::AtomicIsize;
        const TYPES: usize = 4;
        let table = BorrowTable::default();
        let ids = [req::<u8>, req::<u16>, req::<u32>, req::<u64>];
        let holders: [AtomicIsize; TYPES] = Default::default();
        let hints: [SlotHint; TYPES] = std::array::from_fn(|_| SlotHint::new());
        // (type, exclusive) sets; type 3 is never borrowed exclusively.
        let sets: [&[(usize, bool)]; 5] = [
            &[(3, false)],
            &[(0, false), (1, false), (3, false)],
            &[(0, true)],
            &[(2, false), (1, true)],
            &[(2, true), (0, false), (3, false)],
        ];
        let start = std::sync::Barrier::new(4);
        std::thread::scope(|scope| {
            for thread in 0..4 {
                let (table, holders, hints, start) = (&table, &holders, &hints, &start);
                scope.spawn(move || {
                    start.wait();
                    for i in 0..100_000 {
                        let which = (thread + i * 7) % sets.len();
                        let set = sets[which];
                        let requests: Vec<_> = set.iter().map(|&(t, x)| ids[t](x)).collect();
                        let hint = |k: usize| Some(&hints[set[k].0]);
                        let Ok(borrows) = table.acquire(&requests, hint) else {
                            assert_ne!(which, 0, "a borrow without any conflict failed");
                            continue;
                        };
                        for &(t, x) in set {
                            let before = if x {
                                holders[t].swap(-1, Ordering::SeqCst)
                            } else {
                                holders[t].fetch_add(1, Ordering::SeqCst)
                            };
                            assert!(if x { before == 0 } else { before >= 0 }, "type {t}");
                        }
                        for &(t, x) in set {
                            if x {
                                holders[t].store(0, Ordering::SeqCst);
                            } else {
                                holders[t].fetch_sub(1, Ordering::SeqCst);
                            }
                        }
                        drop(borrows);
                    }
                });
            }
        });
        let all: Vec<_> = ids.iter().map(|r| r(true)).collect();
        assert!(table.acquire(&all, |_| None).is_ok());
    }

    #[test]
    fn small_list_spills_to_the_heap_in_order() {
        let mut l = SmallList::new(0usize);
        assert!(l.as_slice().is_empty());
        for i in 0..INLINE {
            l.push(i);
        }
        assert_eq!(l.as_slice(), (0..INLINE).collect::<Vec<_>>());
        for i in INLINE..3 * INLINE {
            l.push(i);
        }
        assert_eq!(l.as_slice(), (0..3 * INLINE).collect::<Vec<_>>());
    }
}
