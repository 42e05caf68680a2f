//! Typed singletons (resources) and scoped borrowed slices.

use std::any::{Any, TypeId};
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hashbrown::HashMap;

use super::borrow::BorrowSet;
use super::{Component, StoreError};

/// One resource: an owned `Box<dyn Any + Send + Sync>` kept as a raw pointer so that the graph's
/// borrow-checked shared path can hand out `&mut` through `&Store`.
pub(crate) struct ResourceCell {
    ptr: NonNull<dyn Any + Send + Sync>,
}

// SAFETY: the pointee is `Send + Sync`; the cell owns it like a `Box`.
unsafe impl Send for ResourceCell {}
// SAFETY: `&ResourceCell` only gives `&` access, except through the borrow-flag checked guards.
unsafe impl Sync for ResourceCell {}

impl ResourceCell {
    fn new<R: Component>(value: R) -> Self {
        let boxed: Box<dyn Any + Send + Sync> = Box::new(value);
        Self {
            ptr: NonNull::from(Box::leak(boxed)),
        }
    }

    fn into_box(self) -> Box<dyn Any + Send + Sync> {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `ptr` came from `Box::leak` and ownership is taken back once (`self` is not
        // dropped).
        unsafe { Box::from_raw(this.ptr.as_ptr()) }
    }

    /// # Safety
    /// No `&mut` to this resource may be live.
    unsafe fn get<R: Component>(&self) -> Option<&R> {
        // SAFETY: the pointer is valid while the cell lives; the caller excludes `&mut`.
        unsafe { self.ptr.as_ref() }.downcast_ref::<R>()
    }

    /// # Safety
    /// No other reference to this resource may be live.
    #[allow(clippy::mut_from_ref)]
    unsafe fn get_mut<R: Component>(&self) -> Option<&mut R> {
        // SAFETY: valid pointer; the caller guarantees exclusivity.
        unsafe { &mut *self.ptr.as_ptr() }.downcast_mut::<R>()
    }
}

impl Drop for ResourceCell {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `Box::leak`; dropped exactly once here.
        drop(unsafe { Box::from_raw(self.ptr.as_ptr()) });
    }
}

/// Resource map by type.
#[derive(Default)]
pub(crate) struct Resources {
    map: HashMap<TypeId, ResourceCell>,
}

impl fmt::Debug for Resources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resources")
            .field("len", &self.map.len())
            .finish()
    }
}

fn missing<R>() -> StoreError {
    StoreError::MissingResource {
        type_name: std::any::type_name::<R>(),
    }
}

impl Resources {
    pub(crate) fn insert<R: Component>(&mut self, value: R) -> Option<R> {
        let old = self
            .map
            .insert(TypeId::of::<R>(), ResourceCell::new(value))?;
        old.into_box().downcast::<R>().ok().map(|b| *b)
    }

    pub(crate) fn remove<R: Component>(&mut self) -> Result<R, StoreError> {
        let cell = self
            .map
            .remove(&TypeId::of::<R>())
            .ok_or_else(missing::<R>)?;
        cell.into_box()
            .downcast::<R>()
            .map(|b| *b)
            .map_err(|_| missing::<R>())
    }

    pub(crate) fn contains<R: Component>(&self) -> bool {
        self.map.contains_key(&TypeId::of::<R>())
    }

    /// # Safety
    /// No `&mut R` may be live (guaranteed by `&self` on the store's public methods, or by a
    /// shared borrow flag).
    pub(crate) unsafe fn get<R: Component>(&self) -> Result<&R, StoreError> {
        let cell = self.map.get(&TypeId::of::<R>()).ok_or_else(missing::<R>)?;
        // SAFETY: forwarded from the caller.
        unsafe { cell.get::<R>() }.ok_or_else(missing::<R>)
    }

    /// # Safety
    /// No other reference to `R` may be live (`&mut Store`, or an exclusive borrow flag).
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn get_mut<R: Component>(&self) -> Result<&mut R, StoreError> {
        let cell = self.map.get(&TypeId::of::<R>()).ok_or_else(missing::<R>)?;
        // SAFETY: forwarded from the caller.
        unsafe { cell.get_mut::<R>() }.ok_or_else(missing::<R>)
    }
}

/// Shared access to a resource through a graph node context; holds a shared borrow flag.
pub struct Res<'a, R> {
    pub(crate) value: &'a R,
    pub(crate) _borrow: BorrowSet<'a>,
}

impl<R> Deref for Res<'_, R> {
    type Target = R;
    fn deref(&self) -> &R {
        self.value
    }
}

impl<R: fmt::Debug> fmt::Debug for Res<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

/// Exclusive access to a resource through a graph node context; holds an exclusive borrow flag.
pub struct ResMut<'a, R> {
    pub(crate) value: &'a mut R,
    pub(crate) _borrow: BorrowSet<'a>,
}

impl<R> Deref for ResMut<'_, R> {
    type Target = R;
    fn deref(&self) -> &R {
        self.value
    }
}

impl<R> DerefMut for ResMut<'_, R> {
    fn deref_mut(&mut self) -> &mut R {
        self.value
    }
}

impl<R: fmt::Debug> fmt::Debug for ResMut<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

/// Marker type naming "the scoped slice of `T`" in an [`Access`](crate::graph::Access) set:
/// `Access::new().write::<ScopedSlice<T>>()`.
pub struct ScopedSlice<T>(PhantomData<fn() -> T>);

/// A caller-owned slice made reachable for the duration of `Store::with_scoped_slice`.
pub(crate) struct ScopedEntry {
    pub(crate) ptr: NonNull<u8>,
    pub(crate) len: usize,
    /// Cleared when the scope ends (also on unwind, and also if the store was swapped away
    /// inside the scope), so a stale entry can never be dereferenced.
    pub(crate) alive: Arc<AtomicBool>,
}

// SAFETY: the entry stands for a `&mut [T]` with `T: Send + Sync` (enforced by
// `with_scoped_slice`); access goes through `&mut Store` or an exclusive borrow flag.
unsafe impl Send for ScopedEntry {}
// SAFETY: as above.
unsafe impl Sync for ScopedEntry {}

impl ScopedEntry {
    pub(crate) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }
}

/// Exclusive access to a scoped slice through a graph node context (holds an exclusive borrow
/// flag on [`ScopedSlice<T>`]).
pub struct ScopedSliceGuard<'a, T> {
    pub(crate) slice: &'a mut [T],
    pub(crate) _borrow: BorrowSet<'a>,
}

impl<T> Deref for ScopedSliceGuard<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.slice
    }
}

impl<T> DerefMut for ScopedSliceGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.slice
    }
}

impl<T> fmt::Debug for ScopedSliceGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopedSliceGuard")
            .field("len", &self.slice.len())
            .finish()
    }
}
