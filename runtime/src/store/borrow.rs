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

#[derive(Debug, Default)]
pub(crate) struct BorrowTable {
    flags: Mutex<HashMap<TypeId, isize>>,
}

impl BorrowTable {
    /// Takes all borrows or none.
    pub(crate) fn acquire(&self, requests: &[BorrowRequest]) -> Result<BorrowSet<'_>, StoreError> {
        let mut flags = self.flags.lock().unwrap_or_else(PoisonError::into_inner);
        for (i, &(id, name, exclusive)) in requests.iter().enumerate() {
            let current = flags.get(&id).copied().unwrap_or(0);
            // Borrows of the same type earlier in this request count too.
            let earlier = &requests[..i];
            let shared_before = earlier.iter().filter(|r| r.0 == id && !r.2).count();
            let exclusive_before = earlier.iter().any(|r| r.0 == id && r.2);
            let ok = if exclusive {
                current == 0 && shared_before == 0 && !exclusive_before
            } else {
                current >= 0 && !exclusive_before
            };
            if !ok {
                return Err(StoreError::BorrowConflict {
                    type_name: name,
                    exclusive,
                });
            }
        }
        for &(id, _, exclusive) in requests {
            let flag = flags.entry(id).or_insert(0);
            if exclusive {
                *flag = -1;
            } else {
                *flag += 1;
            }
        }
        Ok(BorrowSet {
            table: self,
            held: requests.iter().map(|r| (r.0, r.2)).collect(),
        })
    }

    fn release(&self, held: &[(TypeId, bool)]) {
        let mut flags = self.flags.lock().unwrap_or_else(PoisonError::into_inner);
        for &(id, exclusive) in held {
            if let Some(flag) = flags.get_mut(&id) {
                if exclusive {
                    *flag = 0;
                } else {
                    *flag -= 1;
                }
            }
        }
    }
}

/// Live borrows, released on drop.
#[derive(Debug)]
pub(crate) struct BorrowSet<'a> {
    table: &'a BorrowTable,
    held: Vec<(TypeId, bool)>,
}

impl Drop for BorrowSet<'_> {
    fn drop(&mut self) {
        self.table.release(&self.held);
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
}
