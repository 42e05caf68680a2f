//! The chunked archetype store: entities, components, queries, resources, deferred commands.
//!
//! Entities with the same set of component types share an *archetype* whose rows live
//! in fixed-size chunks ([`DEFAULT_CHUNK_BYTES`] by default): one column per component (SoA) plus
//! an entity column. A chunk is its own heap allocation and never moves, so column slices stay
//! valid while a frame runs. An archetype whose single row does not fit the chunk size gets larger
//! chunks holding exactly one row each.
//!
//! Entity lookup is O(1) (slot table: entity → archetype, chunk, row). `insert` / `remove` move
//! the row to the neighbouring archetype through cached transition edges. Removing a row moves the
//! archetype's last row into the hole (swap-remove), so rows stay dense. Every layout decision is
//! a function of the operations applied, so the same operations in the same order give the same
//! layout and iteration order.

// This module (and its submodules) is the crate's only place with `unsafe`: chunks are raw,
// type-erased, manually laid-out allocations (one column per run-time-registered component type),
// and graph nodes reach them concurrently through `&Store` under run-time borrow flags. Every
// unsafe block carries a `// SAFETY:` comment.
#![allow(unsafe_code)]

mod archetype;
mod borrow;
mod bundle;
mod chunk;
mod commands;
mod component;
mod entity;
mod error;
mod query;
mod resource;

use std::any::TypeId;
use std::fmt;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hashbrown::HashMap;

pub use archetype::ArchetypeId;
pub use bundle::Bundle;
pub use chunk::ChunkId;
pub use commands::{ApplyReport, CommandBuffer, CommandFailure};
pub use component::{Component, ComponentId, ComponentInfo};
pub use entity::Entity;
pub use error::StoreError;
#[doc(hidden)]
pub use query::Fetch;
pub use query::{Query, QueryChunk, QueryItem, QueryParam, QuerySlices};
pub(crate) use query::{QueryAccess, query_access};
pub use resource::{Res, ResMut, ScopedSlice, ScopedSliceGuard};

use archetype::Archetype;
pub(crate) use borrow::SlotHint;
use borrow::{BorrowSet, BorrowTable};
use component::Registry;
use entity::{Entities, Location};
use resource::{Resources, ScopedEntry};

/// Default chunk size in bytes (16 KiB).
pub const DEFAULT_CHUNK_BYTES: usize = 16 * 1024;

static NEXT_STORE_ID: AtomicU64 = AtomicU64::new(1);

/// Where a live entity's row is.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct EntityLocation {
    /// Its archetype.
    pub archetype: ArchetypeId,
    /// Its chunk within the archetype.
    pub chunk: ChunkId,
    /// Its row within the chunk.
    pub row: usize,
}

struct BundleSlot {
    archetype: usize,
    /// Column index in the archetype of each bundle element, in element order.
    columns: Box<[usize]>,
}

/// The entity/component store. See the [module docs](self).
pub struct Store {
    id: u64,
    pub(crate) registry: Registry,
    entities: Entities,
    pub(crate) archetypes: Vec<Archetype>,
    archetype_index: HashMap<Box<[ComponentId]>, usize>,
    bundles: HashMap<TypeId, usize>,
    bundle_slots: Vec<BundleSlot>,
    chunk_bytes: usize,
    pub(crate) frame: u64,
    resources: Resources,
    scoped: HashMap<TypeId, ScopedEntry>,
    pub(crate) borrows: BorrowTable,
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("id", &self.id)
            .field("entities", &self.entities.len())
            .field("archetypes", &self.archetypes)
            .field("component_types", &self.registry.len())
            .field("chunk_bytes", &self.chunk_bytes)
            .field("frame", &self.frame)
            .field("resources", &self.resources)
            .finish()
    }
}

fn missing<C>(entity: Entity) -> StoreError {
    StoreError::MissingComponent {
        entity,
        type_name: std::any::type_name::<C>(),
    }
}

impl Store {
    /// An empty store with [`DEFAULT_CHUNK_BYTES`] chunks.
    pub fn new() -> Self {
        Self::with_chunk_bytes(DEFAULT_CHUNK_BYTES)
    }

    /// An empty store whose chunks are `chunk_bytes` bytes (an archetype whose single row is
    /// larger gets chunks of exactly one row).
    pub fn with_chunk_bytes(chunk_bytes: usize) -> Self {
        let id = NEXT_STORE_ID.fetch_add(1, Ordering::Relaxed);
        // A store-specific first generation, so that handles of another store are rejected with
        // high probability.
        let base_generation = (id as u32).wrapping_mul(0x9E37_79B9);
        let mut archetype_index = HashMap::new();
        let mut archetypes = Vec::new();
        // Archetype 0: entities without components. Its layout only holds the entity column,
        // so building it cannot fail for any chunk size.
        if let Ok(empty) = Archetype::new(Box::new([]), &[], chunk_bytes) {
            archetypes.push(empty);
            archetype_index.insert(Box::<[ComponentId]>::from([]), 0);
        }
        Self {
            id,
            registry: Registry::default(),
            entities: Entities::new(base_generation),
            archetypes,
            archetype_index,
            bundles: HashMap::new(),
            bundle_slots: Vec::new(),
            chunk_bytes,
            frame: 0,
            resources: Resources::default(),
            scoped: HashMap::new(),
            borrows: BorrowTable::default(),
        }
    }

    /// This store's id: no other store of the process has it (state kept about one store's
    /// chunks, such as their change frames, is told apart from another's by it).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The configured chunk size in bytes.
    pub fn chunk_bytes(&self) -> usize {
        self.chunk_bytes
    }

    /// The current frame (starts at 0). Writes are stamped with it.
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// Advances to the next frame and returns it.
    pub fn advance_frame(&mut self) -> u64 {
        self.frame += 1;
        self.frame
    }

    /// Number of live entities.
    pub fn len(&self) -> usize {
        self.entities.len()
    }

    /// True if there is no live entity.
    pub fn is_empty(&self) -> bool {
        self.entities.len() == 0
    }

    /// True if `entity` is alive in this store.
    pub fn contains(&self, entity: Entity) -> bool {
        self.entities.resolve(entity).is_ok()
    }

    /// True if the live `entity` has a `C`.
    ///
    /// # Errors
    /// Stale or unknown entity.
    pub fn has<C: Component>(&self, entity: Entity) -> Result<bool, StoreError> {
        let loc = self.entities.resolve(entity)?;
        Ok(self.column_of::<C>(loc).is_some())
    }

    /// The id of `T` if it was registered (used as a component at least once).
    pub fn component_id<T: Component>(&self) -> Option<ComponentId> {
        self.registry.get(TypeId::of::<T>())
    }

    /// Number of archetypes (including the empty one).
    pub fn archetype_count(&self) -> usize {
        self.archetypes.len()
    }

    /// Rows per chunk of the archetype holding `entity`.
    ///
    /// # Errors
    /// Stale or unknown entity.
    pub fn chunk_capacity_of(&self, entity: Entity) -> Result<usize, StoreError> {
        let loc = self.entities.resolve(entity)?;
        Ok(self.archetypes[loc.archetype as usize].capacity)
    }

    /// Where the row of `entity` is.
    ///
    /// # Errors
    /// Stale or unknown entity.
    pub fn location(&self, entity: Entity) -> Result<EntityLocation, StoreError> {
        let loc = self.entities.resolve(entity)?;
        Ok(EntityLocation {
            archetype: ArchetypeId(loc.archetype),
            chunk: ChunkId(loc.chunk),
            row: loc.row as usize,
        })
    }

    fn column_of<C: Component>(&self, loc: Location) -> Option<usize> {
        let id = self.registry.get(TypeId::of::<C>())?;
        self.archetypes[loc.archetype as usize].column_index(id)
    }

    fn archetype_for(&mut self, sorted: &[ComponentId]) -> Result<usize, StoreError> {
        if let Some(&a) = self.archetype_index.get(sorted) {
            return Ok(a);
        }
        if u32::try_from(self.archetypes.len()).is_err() {
            return Err(StoreError::CapacityOverflow { what: "archetypes" });
        }
        let infos: Vec<ComponentInfo> = sorted.iter().map(|&id| *self.registry.info(id)).collect();
        let archetype = Archetype::new(sorted.into(), &infos, self.chunk_bytes)?;
        let index = self.archetypes.len();
        self.archetypes.push(archetype);
        self.archetype_index.insert(sorted.into(), index);
        Ok(index)
    }

    fn bundle_slot<B: Bundle>(&mut self) -> Result<usize, StoreError> {
        if let Some(&slot) = self.bundles.get(&TypeId::of::<B>()) {
            return Ok(slot);
        }
        let mut infos = Vec::new();
        B::infos(&mut infos);
        if let Some(nested) = infos
            .iter()
            .find(|i| i.name.starts_with('(') && i.name != "()")
        {
            return Err(StoreError::NestedBundle {
                type_name: nested.name,
            });
        }
        let ids = infos
            .iter()
            .map(|info| self.registry.register_info(*info))
            .collect::<Result<Vec<_>, _>>()?;
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(StoreError::DuplicateComponent {
                type_name: self.registry.info(w[0]).name,
            });
        }
        let archetype = self.archetype_for(&sorted)?;
        let columns = ids
            .iter()
            .map(|&id| sorted.binary_search(&id).ok())
            .collect::<Option<Box<[usize]>>>()
            .ok_or(StoreError::DuplicateComponent {
                type_name: std::any::type_name::<B>(),
            })?;
        let slot = self.bundle_slots.len();
        self.bundle_slots.push(BundleSlot { archetype, columns });
        self.bundles.insert(TypeId::of::<B>(), slot);
        Ok(slot)
    }

    fn spawn_in_slot<B: Bundle>(&mut self, slot: usize, bundle: B) -> Result<Entity, StoreError> {
        let arch_index = self.bundle_slots[slot].archetype;
        let entity = self.entities.alloc()?;
        let (chunk, row) = match self.archetypes[arch_index].alloc_row(self.frame) {
            Ok(place) => place,
            Err(e) => {
                self.entities.free(entity);
                return Err(e);
            }
        };
        let archetype = &self.archetypes[arch_index];
        let columns = &self.bundle_slots[slot].columns;
        let base = archetype.chunks[chunk].base();
        // SAFETY: (chunk, row) was just reserved in a live chunk; nothing else references it.
        unsafe { base.cast::<Entity>().add(row).write(entity) };
        let cols = &archetype.columns;
        // SAFETY: element `i` of the bundle has the type of column `columns[i]` (the slot was
        // built from the same type infos); `base + offset + row * size` is that column's slot for
        // the reserved, uninitialised row, aligned for the type.
        unsafe {
            bundle.write_into(|element| {
                let col = &cols[columns[element]];
                base.add(col.offset + row * col.size)
            });
        }
        self.entities.set_location(
            entity.index(),
            Location {
                archetype: arch_index as u32,
                chunk: chunk as u32,
                row: row as u32,
            },
        );
        Ok(entity)
    }

    /// Spawns an entity with the components of `bundle` (a tuple; `()` for none).
    ///
    /// # Errors
    /// [`StoreError::DuplicateComponent`] if the bundle names a type twice; allocation or
    /// capacity errors.
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Result<Entity, StoreError> {
        let slot = self.bundle_slot::<B>()?;
        self.spawn_in_slot(slot, bundle)
    }

    /// Spawns one entity per bundle, in order. On error, the entities spawned before it stay.
    ///
    /// # Errors
    /// As [`Store::spawn`].
    pub fn spawn_batch<B, I>(&mut self, bundles: I) -> Result<Vec<Entity>, StoreError>
    where
        B: Bundle,
        I: IntoIterator<Item = B>,
    {
        let slot = self.bundle_slot::<B>()?;
        let iter = bundles.into_iter();
        let hint = iter.size_hint().0;
        self.entities.reserve(hint);
        let mut out = Vec::with_capacity(hint);
        for bundle in iter {
            out.push(self.spawn_in_slot(slot, bundle)?);
        }
        Ok(out)
    }

    /// Despawns `entity`, dropping its components.
    ///
    /// # Errors
    /// Stale or unknown entity.
    pub fn despawn(&mut self, entity: Entity) -> Result<(), StoreError> {
        let loc = self.entities.resolve(entity)?;
        let a = loc.archetype as usize;
        let moved =
            self.archetypes[a].remove_row(loc.chunk as usize, loc.row as usize, self.frame, true);
        if let Some(m) = moved {
            self.entities.set_location(m.index(), loc);
        }
        self.entities.free(entity);
        // SAFETY: right after `remove_row(.., true)`, no row allocated since.
        unsafe { self.archetypes[a].drop_detached() };
        Ok(())
    }

    fn transition(
        &mut self,
        src: usize,
        id: ComponentId,
        insert: bool,
    ) -> Result<usize, StoreError> {
        let edges = if insert {
            &self.archetypes[src].insert_edges
        } else {
            &self.archetypes[src].remove_edges
        };
        if let Some(&t) = edges.get(&id) {
            return Ok(t as usize);
        }
        let mut components = self.archetypes[src].components.to_vec();
        if insert {
            components.push(id);
            components.sort_unstable();
        } else {
            components.retain(|&c| c != id);
        }
        let target = self.archetype_for(&components)?;
        if insert {
            self.archetypes[src].insert_edges.insert(id, target as u32);
            self.archetypes[target].remove_edges.insert(id, src as u32);
        } else {
            self.archetypes[src].remove_edges.insert(id, target as u32);
            self.archetypes[target].insert_edges.insert(id, src as u32);
        }
        Ok(target)
    }

    /// Moves `entity`'s row from `loc` to the reserved row (`dst`, `dc`, `dr`): copies every column
    /// both archetypes share; columns only in the source must have been moved out by the caller,
    /// columns only in the destination must be written by the caller.
    fn finish_move(&mut self, entity: Entity, loc: Location, dst: usize, dc: usize, dr: usize) {
        let src = loc.archetype as usize;
        let (sc, sr) = (loc.chunk as usize, loc.row as usize);
        {
            let s = &self.archetypes[src];
            let d = &self.archetypes[dst];
            for (dcol, id) in d.components.iter().enumerate() {
                if let Some(scol) = s.column_index(*id) {
                    // SAFETY: distinct archetypes, so distinct chunks; the source row is
                    // initialised, the destination row reserved; same component type and size.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            s.ptr_at(scol, sc, sr),
                            d.ptr_at(dcol, dc, dr),
                            d.columns[dcol].size,
                        );
                    }
                }
            }
            // SAFETY: the destination row is reserved in a live chunk.
            unsafe { d.entity_ptr(dc, dr).write(entity) };
        }
        let moved = self.archetypes[src].remove_row(sc, sr, self.frame, false);
        if let Some(m) = moved {
            self.entities.set_location(m.index(), loc);
        }
        self.entities.set_location(
            entity.index(),
            Location {
                archetype: dst as u32,
                chunk: dc as u32,
                row: dr as u32,
            },
        );
    }

    /// Adds `component` to `entity`, or replaces (and drops) its current `C`.
    ///
    /// # Errors
    /// Stale or unknown entity; allocation or capacity errors.
    pub fn insert<C: Component>(&mut self, entity: Entity, component: C) -> Result<(), StoreError> {
        let loc = self.entities.resolve(entity)?;
        let id = self.registry.register::<C>()?;
        let src = loc.archetype as usize;
        let (sc, sr) = (loc.chunk as usize, loc.row as usize);
        if let Some(col) = self.archetypes[src].column_index(id) {
            let archetype = &self.archetypes[src];
            archetype.chunks[sc].stamp(col, self.frame);
            // SAFETY: the row is initialised and holds a `C` in column `col`; `&mut self`
            // excludes other references.
            let old =
                unsafe { std::ptr::replace(archetype.ptr_at(col, sc, sr).cast::<C>(), component) };
            drop(old);
            return Ok(());
        }
        let dst = self.transition(src, id, true)?;
        let (dc, dr) = self.archetypes[dst].alloc_row(self.frame)?;
        {
            let d = &self.archetypes[dst];
            let dcol = d.column_index(id).unwrap_or(0);
            // SAFETY: the target archetype has `C` (it is src ∪ {C}) at `dcol`; the row was just
            // reserved and is uninitialised.
            unsafe { d.ptr_at(dcol, dc, dr).cast::<C>().write(component) };
        }
        self.finish_move(entity, loc, dst, dc, dr);
        Ok(())
    }

    /// Removes and returns `entity`'s `C`, moving it to the archetype without `C`.
    ///
    /// # Errors
    /// Stale or unknown entity; [`StoreError::MissingComponent`]; allocation errors.
    pub fn remove<C: Component>(&mut self, entity: Entity) -> Result<C, StoreError> {
        let loc = self.entities.resolve(entity)?;
        let src = loc.archetype as usize;
        let id = self
            .registry
            .get(TypeId::of::<C>())
            .ok_or_else(|| missing::<C>(entity))?;
        let col = self.archetypes[src]
            .column_index(id)
            .ok_or_else(|| missing::<C>(entity))?;
        let dst = self.transition(src, id, false)?;
        let (dc, dr) = self.archetypes[dst].alloc_row(self.frame)?;
        // SAFETY: the row is initialised and holds a `C` at `col`; it is moved out here and the
        // row is then removed without dropping (`finish_move` → `remove_row(.., false)`).
        let value = unsafe {
            self.archetypes[src]
                .ptr_at(col, loc.chunk as usize, loc.row as usize)
                .cast::<C>()
                .read()
        };
        self.finish_move(entity, loc, dst, dc, dr);
        Ok(value)
    }

    /// `entity`'s `C`.
    ///
    /// # Errors
    /// Stale or unknown entity; [`StoreError::MissingComponent`].
    pub fn get<C: Component>(&self, entity: Entity) -> Result<&C, StoreError> {
        let loc = self.entities.resolve(entity)?;
        let col = self
            .column_of::<C>(loc)
            .ok_or_else(|| missing::<C>(entity))?;
        let archetype = &self.archetypes[loc.archetype as usize];
        // SAFETY: initialised `C` at this row and column; `&self` excludes `&mut` through the
        // public API (graph nodes never see `&Store`).
        Ok(unsafe {
            &*archetype
                .ptr_at(col, loc.chunk as usize, loc.row as usize)
                .cast::<C>()
        })
    }

    /// `entity`'s `C`, mutably (stamps the chunk's `C` column with the current frame).
    ///
    /// # Errors
    /// Stale or unknown entity; [`StoreError::MissingComponent`].
    pub fn get_mut<C: Component>(&mut self, entity: Entity) -> Result<&mut C, StoreError> {
        let loc = self.entities.resolve(entity)?;
        let col = self
            .column_of::<C>(loc)
            .ok_or_else(|| missing::<C>(entity))?;
        let archetype = &self.archetypes[loc.archetype as usize];
        archetype.chunks[loc.chunk as usize].stamp(col, self.frame);
        // SAFETY: initialised `C`; `&mut self` makes this the only reference.
        Ok(unsafe {
            &mut *archetype
                .ptr_at(col, loc.chunk as usize, loc.row as usize)
                .cast::<C>()
        })
    }

    /// A query over entities matching `Q` (`&A`, `&mut B`, `Option<&C>`, `Option<&mut C>` or a
    /// tuple of up to 8 of these).
    ///
    /// # Errors
    /// [`StoreError::QueryAliasing`] if `Q` names a type twice with a `&mut`.
    pub fn query<Q: QueryParam>(&mut self) -> Result<Query<'_, Q>, StoreError> {
        Query::new(self)
    }

    /// Query through `&Store` for graph nodes (borrow flags make it sound), with the access list
    /// the node context already checked against the node's declaration.
    /// `hint(k)` is the flag slot hint of the access list's `k`-th type.
    pub(crate) fn query_shared<'h, Q: QueryParam>(
        &self,
        access: &QueryAccess<Q>,
        hint: impl Fn(usize) -> Option<&'h SlotHint>,
    ) -> Result<Query<'_, Q>, StoreError> {
        Query::with_access(self, access, hint)
    }

    /// One borrow flag of `T` (shared or `exclusive`), found through `hint` when given.
    fn borrow_one<T: 'static>(
        &self,
        exclusive: bool,
        hint: Option<&SlotHint>,
    ) -> Result<BorrowSet<'_>, StoreError> {
        let request = (TypeId::of::<T>(), std::any::type_name::<T>(), exclusive);
        self.borrows.acquire(&[request], |_| hint)
    }

    /// Random access to `C` through `&Store` for graph nodes (shared borrow flag held).
    pub(crate) fn view_shared<C: Component>(
        &self,
        hint: Option<&SlotHint>,
    ) -> Result<ComponentView<'_, C>, StoreError> {
        let borrow = self.borrow_one::<C>(false, hint)?;
        Ok(ComponentView {
            store: self,
            _borrow: borrow,
            _c: PhantomData,
        })
    }

    /// Inserts resource `value`, returning the previous one.
    pub fn insert_resource<R: Component>(&mut self, value: R) -> Option<R> {
        self.resources.insert(value)
    }

    /// The resource `R`.
    ///
    /// # Errors
    /// [`StoreError::MissingResource`].
    pub fn resource<R: Component>(&self) -> Result<&R, StoreError> {
        // SAFETY: `&self` excludes `&mut R` through the public API.
        unsafe { self.resources.get::<R>() }
    }

    /// The resource `R`, mutably.
    ///
    /// # Errors
    /// [`StoreError::MissingResource`].
    pub fn resource_mut<R: Component>(&mut self) -> Result<&mut R, StoreError> {
        // SAFETY: `&mut self` makes this the only reference.
        unsafe { self.resources.get_mut::<R>() }
    }

    /// Removes and returns the resource `R`.
    ///
    /// # Errors
    /// [`StoreError::MissingResource`].
    pub fn remove_resource<R: Component>(&mut self) -> Result<R, StoreError> {
        self.resources.remove::<R>()
    }

    /// True if resource `R` is present.
    pub fn contains_resource<R: Component>(&self) -> bool {
        self.resources.contains::<R>()
    }

    pub(crate) fn resource_shared<R: Component>(
        &self,
        hint: Option<&SlotHint>,
    ) -> Result<Res<'_, R>, StoreError> {
        let borrow = self.borrow_one::<R>(false, hint)?;
        // SAFETY: the shared flag excludes exclusive borrows on the shared path, and the
        // `&mut self` methods cannot run while `&self` is lent to a graph.
        let value = unsafe { self.resources.get::<R>() }?;
        Ok(Res {
            value,
            _borrow: borrow,
        })
    }

    pub(crate) fn resource_mut_shared<R: Component>(
        &self,
        hint: Option<&SlotHint>,
    ) -> Result<ResMut<'_, R>, StoreError> {
        let borrow = self.borrow_one::<R>(true, hint)?;
        // SAFETY: the exclusive flag excludes every other borrow on the shared path.
        let value = unsafe { self.resources.get_mut::<R>() }?;
        Ok(ResMut {
            value,
            _borrow: borrow,
        })
    }

    /// Makes `slice` reachable as the scoped slice of `T` (through graph node contexts and
    /// [`Store::scoped_slice_mut`]) only while `f` runs; removed again afterwards, also on
    /// unwind. Nested scopes of the same `T` shadow the outer one until they end.
    pub fn with_scoped_slice<T: Component, Ret>(
        &mut self,
        slice: &mut [T],
        f: impl FnOnce(&mut Store) -> Ret,
    ) -> Ret {
        let key = TypeId::of::<ScopedSlice<T>>();
        let alive = Arc::new(AtomicBool::new(true));
        let entry = ScopedEntry {
            ptr: NonNull::from(&mut *slice).cast::<u8>(),
            len: slice.len(),
            alive: Arc::clone(&alive),
        };
        let previous = self.scoped.insert(key, entry);
        let result = catch_unwind(AssertUnwindSafe(|| f(self)));
        // Cleared first: even if `f` swapped this store with another one, the entry it left
        // there can never be dereferenced again.
        alive.store(false, Ordering::Release);
        let ours = self
            .scoped
            .get(&key)
            .is_some_and(|e| Arc::ptr_eq(&e.alive, &alive));
        if ours {
            match previous {
                Some(p) => {
                    self.scoped.insert(key, p);
                }
                None => {
                    self.scoped.remove(&key);
                }
            }
        }
        match result {
            Ok(r) => r,
            Err(payload) => resume_unwind(payload),
        }
    }

    /// The scoped slice of `T`, inside [`Store::with_scoped_slice`].
    ///
    /// # Errors
    /// [`StoreError::NoScopedSlice`] outside such a scope.
    pub fn scoped_slice_mut<T: Component>(&mut self) -> Result<&mut [T], StoreError> {
        let entry = self.live_scoped::<T>()?;
        // SAFETY: the entry is alive, so the caller's `&mut [T]` is borrowed by the running
        // `with_scoped_slice` call; `&mut self` makes this the only access.
        Ok(unsafe { std::slice::from_raw_parts_mut(entry.ptr.as_ptr().cast::<T>(), entry.len) })
    }

    fn live_scoped<T: Component>(&self) -> Result<&ScopedEntry, StoreError> {
        self.scoped
            .get(&TypeId::of::<ScopedSlice<T>>())
            .filter(|e| e.is_alive())
            .ok_or(StoreError::NoScopedSlice {
                type_name: std::any::type_name::<T>(),
            })
    }

    pub(crate) fn scoped_slice_shared<T: Component>(
        &self,
        hint: Option<&SlotHint>,
    ) -> Result<ScopedSliceGuard<'_, T>, StoreError> {
        let borrow = self.borrow_one::<ScopedSlice<T>>(true, hint)?;
        let entry = self.live_scoped::<T>()?;
        // SAFETY: alive entry (the scope outlives this `&self` borrow: it ends only after the
        // `&mut Store` lent to `f` is returned); the exclusive flag makes this the only access.
        let slice =
            unsafe { std::slice::from_raw_parts_mut(entry.ptr.as_ptr().cast::<T>(), entry.len) };
        Ok(ScopedSliceGuard {
            slice,
            _borrow: borrow,
        })
    }

    /// Applies and empties `commands`, in channel order (see [`CommandBuffer`]). A failed command
    /// does not stop the others.
    ///
    /// # Errors
    /// [`StoreError::CommandsFailed`] carrying the full [`ApplyReport`] (every failure with its
    /// entity and what was attempted) if any command failed.
    pub fn apply_commands(&mut self, commands: &CommandBuffer) -> Result<ApplyReport, StoreError> {
        let report = commands.apply(self);
        if report.is_ok() {
            Ok(report)
        } else {
            Err(StoreError::CommandsFailed {
                report: Box::new(report),
            })
        }
    }
}

/// Random access to one component type by entity, from a graph node (holds a shared borrow flag
/// on `C`).
pub struct ComponentView<'a, C> {
    store: &'a Store,
    _borrow: BorrowSet<'a>,
    _c: PhantomData<fn() -> C>,
}

impl<C: Component> ComponentView<'_, C> {
    /// `entity`'s `C`.
    ///
    /// # Errors
    /// Stale or unknown entity; [`StoreError::MissingComponent`].
    pub fn get(&self, entity: Entity) -> Result<&C, StoreError> {
        let store = self.store;
        let loc = store.entities.resolve(entity)?;
        let col = store
            .column_of::<C>(loc)
            .ok_or_else(|| missing::<C>(entity))?;
        let archetype = &store.archetypes[loc.archetype as usize];
        // SAFETY: initialised `C`; the shared flag excludes `&mut C` on the shared path, and no
        // structural change can happen while `&Store` is lent.
        Ok(unsafe {
            &*archetype
                .ptr_at(col, loc.chunk as usize, loc.row as usize)
                .cast::<C>()
        })
    }

    /// The whole column of `C` in one chunk, in row order (row `r` belongs to the chunk's
    /// `r`-th entity, as in a [`QueryChunk`] of that chunk); `None` when the archetype has no
    /// `C` or the ids name no chunk. A node that runs a query over other components finds its
    /// own optional column per chunk this way, without a lookup per entity.
    pub fn chunk_column(&self, archetype: ArchetypeId, chunk: ChunkId) -> Option<&[C]> {
        let store = self.store;
        let component = store.registry.get(TypeId::of::<C>())?;
        let archetype = store.archetypes.get(archetype.0 as usize)?;
        let col = archetype.column_index(component)?;
        let chunk = archetype.chunks.get(chunk.0 as usize)?;
        let offset = archetype.columns[col].offset;
        // SAFETY: the view holds the shared borrow flag of `C`, so no `&mut C` exists on the
        // shared path, and no structural change can happen while `&Store` is lent; the column
        // lies inside the chunk's allocation at `offset`, is aligned for `C` and holds `len`
        // initialised values.
        Some(unsafe {
            std::slice::from_raw_parts(chunk.base().add(offset).cast::<C>(), chunk.len())
        })
    }

    /// The frame at which the column of `C` in one chunk was last written (or its rows last
    /// changed: spawns, moves and removals stamp every column of the chunks they touch), as
    /// [`QueryChunk::changed_frame`]; `None` when the archetype has no `C` or the ids name no
    /// chunk. A node that checks a chunk's values once can tell from it that they are the
    /// ones it checked.
    pub fn chunk_changed_frame(&self, archetype: ArchetypeId, chunk: ChunkId) -> Option<u64> {
        let store = self.store;
        let component = store.registry.get(TypeId::of::<C>())?;
        let archetype = store.archetypes.get(archetype.0 as usize)?;
        let col = archetype.column_index(component)?;
        Some(archetype.chunks.get(chunk.0 as usize)?.changed_frame(col))
    }
}

impl<C> fmt::Debug for ComponentView<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ComponentView")
            .field("type", &std::any::type_name::<C>())
            .finish()
    }
}

#[cfg(test)]
mod tests;
