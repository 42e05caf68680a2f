//! Run-time borrow flags per type (components, resources, scoped slices).
//!
//! Graph nodes reach the store through `&Store`; their declared access is checked, but soundness
//! does not rely on it: every shared-path borrow takes a flag here first (count > 0: shared
//! borrows, -1: one exclusive borrow). Conflicting live borrows get
//! [`StoreError::BorrowConflict`].

use std::any::TypeId;
use std::sync::{Mutex, PoisonError};

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

#[derive(Debug, Default)]
pub(crate) struct BorrowTable {
    flags: Mutex<Flags>,
}

/// The flags, one slot per type ever borrowed (slots are never removed, so a held borrow
/// remembers its slot and is released without a lookup).
#[derive(Debug, Default)]
struct Flags {
    slot_of: HashMap<TypeId, u32>,
    /// count > 0: shared borrows, -1: one exclusive borrow, 0: free.
    state: Vec<isize>,
}

/// A borrow held on one flag slot.
#[derive(Clone, Copy, Debug)]
struct Held {
    slot: u32,
    exclusive: bool,
}

impl Flags {
    fn release(&mut self, held: &[Held]) {
        for h in held {
            if let Some(flag) = self.state.get_mut(h.slot as usize) {
                if h.exclusive {
                    *flag = 0;
                } else {
                    *flag -= 1;
                }
            }
        }
    }
}

impl BorrowTable {
    /// Takes all borrows or none.
    ///
    /// One pass under the lock: each request updates its flag at once (so later requests of the
    /// same type see it); on a conflict the flags this call already changed are restored before
    /// the lock is released, so no other caller ever sees a partial acquisition.
    pub(crate) fn acquire(&self, requests: &[BorrowRequest]) -> Result<BorrowSet<'_>, StoreError> {
        let mut guard = self.flags.lock().unwrap_or_else(PoisonError::into_inner);
        let flags = &mut *guard;
        let mut held = SmallList::new(Held {
            slot: 0,
            exclusive: false,
        });
        for &(id, name, exclusive) in requests {
            let slot = match flags.slot_of.get(&id) {
                Some(&slot) => slot,
                None => {
                    let Ok(slot) = u32::try_from(flags.state.len()) else {
                        flags.release(held.as_slice());
                        return Err(StoreError::CapacityOverflow {
                            what: "borrowed types",
                        });
                    };
                    flags.state.push(0);
                    flags.slot_of.insert(id, slot);
                    slot
                }
            };
            let free = match flags.state.get_mut(slot as usize) {
                Some(flag) if exclusive && *flag == 0 => {
                    *flag = -1;
                    true
                }
                Some(flag) if !exclusive && *flag >= 0 => {
                    *flag += 1;
                    true
                }
                _ => false,
            };
            if !free {
                flags.release(held.as_slice());
                return Err(StoreError::BorrowConflict {
                    type_name: name,
                    exclusive,
                });
            }
            held.push(Held { slot, exclusive });
        }
        Ok(BorrowSet { table: self, held })
    }

    fn release(&self, held: &[Held]) {
        self.flags
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .release(held);
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
        self.table.release(self.held.as_slice());
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
        let a = t.acquire(&[req::<u32>(false), req::<u32>(false)]).unwrap();
        let b = t.acquire(&[req::<u32>(false)]).unwrap();
        assert!(t.acquire(&[req::<u32>(true)]).is_err());
        drop((a, b));
        let w = t.acquire(&[req::<u32>(true), req::<u64>(false)]).unwrap();
        assert!(t.acquire(&[req::<u32>(false)]).is_err());
        assert!(t.acquire(&[req::<u64>(false)]).is_ok());
        // all-or-nothing: the failed request took nothing
        assert!(t.acquire(&[req::<u8>(true), req::<u32>(false)]).is_err());
        assert!(t.acquire(&[req::<u8>(true)]).is_ok());
        drop(w);
        assert!(t.acquire(&[req::<u32>(true)]).is_ok());
        assert!(t.acquire(&[req::<u16>(true), req::<u16>(false)]).is_err());
    }

    #[test]
    fn a_failed_request_gives_back_what_it_took_first() {
        let t = BorrowTable::default();
        let held = t.acquire(&[req::<u64>(false)]).unwrap();
        // u8 and u16 are taken, then u64 (exclusive) conflicts: u8 and u16 must be free again.
        let err = t
            .acquire(&[req::<u8>(true), req::<u16>(false), req::<u64>(true)])
            .unwrap_err();
        assert!(matches!(
            err,
            StoreError::BorrowConflict {
                exclusive: true,
                ..
            }
        ));
        assert!(t.acquire(&[req::<u8>(true), req::<u16>(true)]).is_ok());
        // the shared borrow held before is untouched
        assert!(t.acquire(&[req::<u64>(false)]).is_ok());
        assert!(t.acquire(&[req::<u64>(true)]).is_err());
        drop(held);
        assert!(t.acquire(&[req::<u64>(true)]).is_ok());
        // same type twice in one request, shared then exclusive: refused, nothing kept
        assert!(t.acquire(&[req::<i8>(false), req::<i8>(true)]).is_err());
        assert!(t.acquire(&[req::<i8>(true)]).is_ok());
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
