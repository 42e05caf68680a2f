//! [`NodeContext`]: what a running node may touch.

use std::any::TypeId;
use std::fmt;

use bumpalo::Bump;

use super::error::AccessKind;
use super::{Access, AccessError};
use crate::store::{
    CommandBuffer, Component, ComponentView, Query, QueryParam, Res, ResMut, ScopedSlice,
    ScopedSliceGuard, SlotHint, Store, StoreError, query_access,
};

/// The view of the store and frame services given to [`Node::run`](super::Node::run).
///
/// Every accessor checks the node's declared [`Access`] (an undeclared access is an
/// [`AccessError::Undeclared`] naming node and type) and takes run-time borrow flags, released
/// when the returned query or guard is dropped.
///
/// A context is not `Sync` (its [`scratch`](NodeContext::scratch) arena belongs to the node's
/// thread): inside `par_for_each*` closures use what you took from it before (a query's items,
/// `ctx.commands()`, a resource guard's contents).
pub struct NodeContext<'a> {
    pub(crate) store: &'a Store,
    pub(crate) name: &'a str,
    pub(crate) access: &'a Access,
    /// The borrow flag slot of each declared type, numbered as [`Access::declaration`].
    pub(crate) hints: &'a [SlotHint],
    pub(crate) commands: &'a CommandBuffer,
    pub(crate) scratch: &'a Bump,
}

impl fmt::Debug for NodeContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeContext")
            .field("node", &self.name)
            .field("frame", &self.store.frame())
            .finish()
    }
}

impl<'a> NodeContext<'a> {
    fn undeclared(&self, type_name: &'static str, kind: AccessKind) -> AccessError {
        AccessError::Undeclared {
            node: self.name.to_owned(),
            type_name,
            kind,
        }
    }

    fn store_error(&self, error: StoreError) -> AccessError {
        match error {
            StoreError::BorrowConflict {
                type_name,
                exclusive,
            } => AccessError::BorrowConflict {
                node: self.name.to_owned(),
                type_name,
                kind: if exclusive {
                    AccessKind::Write
                } else {
                    AccessKind::Read
                },
            },
            error => AccessError::Store {
                node: self.name.to_owned(),
                error,
            },
        }
    }

    /// The slot hint of `id`'s declaration for the access, or [`AccessError::Undeclared`].
    fn check(
        &self,
        id: TypeId,
        type_name: &'static str,
        write: bool,
    ) -> Result<&'a SlotHint, AccessError> {
        let kind = if write {
            AccessKind::Write
        } else {
            AccessKind::Read
        };
        (self.access.declaration(id, write))
            .and_then(|d| self.hints.get(d))
            .ok_or_else(|| self.undeclared(type_name, kind))
    }

    /// A query (see [`Store::query`]); every `&T` needs declared read access, every `&mut T`
    /// declared write access.
    ///
    /// # Errors
    /// [`AccessError::Undeclared`], [`AccessError::BorrowConflict`], or
    /// [`AccessError::Store`] with [`StoreError::QueryAliasing`].
    pub fn query<Q: QueryParam>(&self) -> Result<Query<'a, Q>, AccessError> {
        let list = query_access::<Q>().map_err(|e| self.store_error(e))?;
        let requests = list.as_slice();
        // At most one hint per query element inline (up to 8); longer lists look the rest up.
        let mut hints: [Option<&SlotHint>; 8] = [None; 8];
        for (k, &(id, name, write)) in requests.iter().enumerate() {
            let hint = self.check(id, name, write)?;
            if let Some(h) = hints.get_mut(k) {
                *h = Some(hint);
            }
        }
        self.store
            .query_shared::<Q>(&list, |k| hints.get(k).copied().flatten())
            .map_err(|e| self.store_error(e))
    }

    /// Random access to component `C` by entity (needs declared read access to `C`).
    ///
    /// # Errors
    /// [`AccessError::Undeclared`], [`AccessError::BorrowConflict`].
    pub fn view<C: Component>(&self) -> Result<ComponentView<'a, C>, AccessError> {
        let hint = self.check(TypeId::of::<C>(), std::any::type_name::<C>(), false)?;
        self.store
            .view_shared::<C>(Some(hint))
            .map_err(|e| self.store_error(e))
    }

    /// The resource `R` (needs declared read access to `R`).
    ///
    /// # Errors
    /// [`AccessError::Undeclared`], [`AccessError::BorrowConflict`], or
    /// [`AccessError::Store`] with [`StoreError::MissingResource`].
    pub fn resource<R: Component>(&self) -> Result<Res<'a, R>, AccessError> {
        let hint = self.check(TypeId::of::<R>(), std::any::type_name::<R>(), false)?;
        self.store
            .resource_shared::<R>(Some(hint))
            .map_err(|e| self.store_error(e))
    }

    /// The resource `R`, mutably (needs declared write access to `R`).
    ///
    /// # Errors
    /// As [`NodeContext::resource`].
    pub fn resource_mut<R: Component>(&self) -> Result<ResMut<'a, R>, AccessError> {
        let hint = self.check(TypeId::of::<R>(), std::any::type_name::<R>(), true)?;
        self.store
            .resource_mut_shared::<R>(Some(hint))
            .map_err(|e| self.store_error(e))
    }

    /// The scoped slice of `T` lent by [`Store::with_scoped_slice`] (needs declared write access
    /// to [`ScopedSlice<T>`]).
    ///
    /// # Errors
    /// [`AccessError::Undeclared`], [`AccessError::BorrowConflict`], or
    /// [`AccessError::Store`] with [`StoreError::NoScopedSlice`].
    pub fn scoped_slice_mut<T: Component>(&self) -> Result<ScopedSliceGuard<'a, T>, AccessError> {
        let hint = self.check(
            TypeId::of::<ScopedSlice<T>>(),
            std::any::type_name::<ScopedSlice<T>>(),
            true,
        )?;
        self.store
            .scoped_slice_shared::<T>(Some(hint))
            .map_err(|e| self.store_error(e))
    }

    /// The graph's deferred command buffer (applied after the frame).
    pub fn commands(&self) -> &'a CommandBuffer {
        self.commands
    }

    /// The store's current frame.
    pub fn frame(&self) -> u64 {
        self.store.frame()
    }

    /// The store's id ([`Store::id`](crate::store::Store::id)).
    pub fn store_id(&self) -> u64 {
        self.store.id()
    }

    /// Number of live entities.
    pub fn entity_count(&self) -> usize {
        self.store.len()
    }

    /// This node's scratch arena, reset at the start of each frame.
    pub fn scratch(&self) -> &'a Bump {
        self.scratch
    }

    /// This node's name.
    pub fn node_name(&self) -> &'a str {
        self.name
    }
}
