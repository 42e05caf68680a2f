//! Typed queries over chunk columns.
//!
//! A query type `Q` is `&A`, `&mut B`, `Option<&C>`, `Option<&mut C>` or a tuple of up to 8 of
//! these. A [`Query`] holds run-time borrow flags for every type it names (shared for `&`,
//! exclusive for `&mut`) until it is dropped.

use std::any::TypeId;
use std::fmt;
use std::marker::PhantomData;

use rayon::prelude::*;

use super::archetype::{Archetype, ArchetypeId};
use super::borrow::{BorrowRequest, BorrowSet, RequestList, SlotHint};
use super::chunk::{Chunk, ChunkId};
use super::{Component, Entity, Store, StoreError};

/// How a query type reads one chunk. Implementation detail of [`QueryParam`]; implemented for
/// the column fetchers of this module and tuples of them.
///
/// # Safety
/// `access` must list every type whose column `ptr`/`item`/`slice` touch, with `true` for every
/// column written; `prepare` must only return state for columns that exist in the archetype with
/// the type the fetcher reads.
#[doc(hidden)]
pub unsafe trait Fetch: 'static {
    /// One entity's item (`&A`, `&mut B`, …).
    type Item<'a>;
    /// One chunk's column slices (`&[A]`, `&mut [B]`, …).
    type Slice<'a>;
    /// Per-archetype state (column indices and offsets).
    type State: Copy + Send + Sync + 'static;
    /// Per-chunk column pointers.
    type Ptr: Copy;
    /// Lists (type, name, exclusive) for every type named.
    fn access(out: &mut RequestList);
    /// State for an archetype, or `None` if it does not match.
    fn prepare(store: &Store, archetype: &Archetype) -> Option<Self::State>;
    /// Column pointers of a chunk of the prepared archetype; stamps written columns with `frame`.
    ///
    /// # Safety
    /// `chunk` belongs to the archetype `state` was prepared for.
    unsafe fn ptr(state: Self::State, chunk: &Chunk, frame: u64) -> Self::Ptr;
    /// The item at `row`.
    ///
    /// # Safety
    /// `row < chunk.len()`; the borrows named by `access` are held for `'a`; each row of a
    /// chunk is handed out at most once while `'a` lives.
    unsafe fn item<'a>(ptr: Self::Ptr, row: usize) -> Self::Item<'a>;
    /// The column slices of `len` rows.
    ///
    /// # Safety
    /// `len == chunk.len()`; borrows held for `'a`; handed out at most once while `'a` lives.
    unsafe fn slice<'a>(ptr: Self::Ptr, len: usize) -> Self::Slice<'a>;
}

/// A type usable as a query: `&A`, `&mut B`, `Option<&C>`, `Option<&mut C>`, or a tuple of up to
/// 8 of these.
pub trait QueryParam {
    /// The fetcher reading chunks for this query type.
    #[doc(hidden)]
    type Fetch: Fetch;
}

/// The per-entity item of a query type `Q` (for `(&A, &mut B)`: `(&A, &mut B)`).
pub type QueryItem<'a, Q> = <<Q as QueryParam>::Fetch as Fetch>::Item<'a>;
/// The per-chunk column slices of a query type `Q` (for `(&A, &mut B, Option<&C>)`:
/// `(&[A], &mut [B], Option<&[C]>)`).
pub type QuerySlices<'a, Q> = <<Q as QueryParam>::Fetch as Fetch>::Slice<'a>;

fn column_of<T: 'static>(store: &Store, archetype: &Archetype) -> Option<(usize, usize)> {
    let id = store.registry.get(TypeId::of::<T>())?;
    let col = archetype.column_index(id)?;
    Some((col, archetype.columns[col].offset))
}

/// Fetches `&T`.
#[doc(hidden)]
pub struct Read<T>(PhantomData<fn() -> T>);
/// Fetches `&mut T`.
#[doc(hidden)]
pub struct Write<T>(PhantomData<fn() -> T>);
/// Fetches `Option<&T>`.
#[doc(hidden)]
pub struct OptRead<T>(PhantomData<fn() -> T>);
/// Fetches `Option<&mut T>`.
#[doc(hidden)]
pub struct OptWrite<T>(PhantomData<fn() -> T>);

// SAFETY: reads only the column of `T`, declared shared; `prepare` finds that column by TypeId.
unsafe impl<T: Component> Fetch for Read<T> {
    type Item<'a> = &'a T;
    type Slice<'a> = &'a [T];
    type State = (usize, usize);
    type Ptr = *const T;
    fn access(out: &mut RequestList) {
        out.push((TypeId::of::<T>(), std::any::type_name::<T>(), false));
    }
    fn prepare(store: &Store, archetype: &Archetype) -> Option<Self::State> {
        column_of::<T>(store, archetype)
    }
    #[inline]
    unsafe fn ptr(state: Self::State, chunk: &Chunk, _frame: u64) -> *const T {
        // SAFETY: the offset of a column of this chunk's archetype lies inside the allocation.
        unsafe { chunk.base().add(state.1).cast::<T>() }
    }
    #[inline]
    unsafe fn item<'a>(ptr: *const T, row: usize) -> &'a T {
        // SAFETY: `row < len`, the value is initialised, shared borrow held (caller contract).
        unsafe { &*ptr.add(row) }
    }
    #[inline]
    unsafe fn slice<'a>(ptr: *const T, len: usize) -> &'a [T] {
        // SAFETY: `len` initialised values of `T`, aligned column, shared borrow held.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

// SAFETY: writes only the column of `T`, declared exclusive.
unsafe impl<T: Component> Fetch for Write<T> {
    type Item<'a> = &'a mut T;
    type Slice<'a> = &'a mut [T];
    type State = (usize, usize);
    type Ptr = *mut T;
    fn access(out: &mut RequestList) {
        out.push((TypeId::of::<T>(), std::any::type_name::<T>(), true));
    }
    fn prepare(store: &Store, archetype: &Archetype) -> Option<Self::State> {
        column_of::<T>(store, archetype)
    }
    #[inline]
    unsafe fn ptr(state: Self::State, chunk: &Chunk, frame: u64) -> *mut T {
        chunk.stamp(state.0, frame);
        // SAFETY: the offset of a column of this chunk's archetype lies inside the allocation.
        unsafe { chunk.base().add(state.1).cast::<T>() }
    }
    #[inline]
    unsafe fn item<'a>(ptr: *mut T, row: usize) -> &'a mut T {
        // SAFETY: `row < len`, initialised, exclusive borrow held, row handed out once.
        unsafe { &mut *ptr.add(row) }
    }
    #[inline]
    unsafe fn slice<'a>(ptr: *mut T, len: usize) -> &'a mut [T] {
        // SAFETY: `len` initialised values, exclusive borrow held, chunk handed out once.
        unsafe { std::slice::from_raw_parts_mut(ptr, len) }
    }
}

// SAFETY: as `Read<T>`, for archetypes with or without the column.
unsafe impl<T: Component> Fetch for OptRead<T> {
    type Item<'a> = Option<&'a T>;
    type Slice<'a> = Option<&'a [T]>;
    type State = Option<(usize, usize)>;
    type Ptr = Option<*const T>;
    fn access(out: &mut RequestList) {
        Read::<T>::access(out);
    }
    fn prepare(store: &Store, archetype: &Archetype) -> Option<Self::State> {
        Some(column_of::<T>(store, archetype))
    }
    #[inline]
    unsafe fn ptr(state: Self::State, chunk: &Chunk, frame: u64) -> Self::Ptr {
        // SAFETY: forwarded contract.
        state.map(|s| unsafe { Read::<T>::ptr(s, chunk, frame) })
    }
    #[inline]
    unsafe fn item<'a>(ptr: Self::Ptr, row: usize) -> Self::Item<'a> {
        // SAFETY: forwarded contract.
        ptr.map(|p| unsafe { Read::<T>::item(p, row) })
    }
    #[inline]
    unsafe fn slice<'a>(ptr: Self::Ptr, len: usize) -> Self::Slice<'a> {
        // SAFETY: forwarded contract.
        ptr.map(|p| unsafe { Read::<T>::slice(p, len) })
    }
}

// SAFETY: as `Write<T>`, for archetypes with or without the column.
unsafe impl<T: Component> Fetch for OptWrite<T> {
    type Item<'a> = Option<&'a mut T>;
    type Slice<'a> = Option<&'a mut [T]>;
    type State = Option<(usize, usize)>;
    type Ptr = Option<*mut T>;
    fn access(out: &mut RequestList) {
        Write::<T>::access(out);
    }
    fn prepare(store: &Store, archetype: &Archetype) -> Option<Self::State> {
        Some(column_of::<T>(store, archetype))
    }
    #[inline]
    unsafe fn ptr(state: Self::State, chunk: &Chunk, frame: u64) -> Self::Ptr {
        // SAFETY: forwarded contract.
        state.map(|s| unsafe { Write::<T>::ptr(s, chunk, frame) })
    }
    #[inline]
    unsafe fn item<'a>(ptr: Self::Ptr, row: usize) -> Self::Item<'a> {
        // SAFETY: forwarded contract.
        ptr.map(|p| unsafe { Write::<T>::item(p, row) })
    }
    #[inline]
    unsafe fn slice<'a>(ptr: Self::Ptr, len: usize) -> Self::Slice<'a> {
        // SAFETY: forwarded contract.
        ptr.map(|p| unsafe { Write::<T>::slice(p, len) })
    }
}

impl<T: Component> QueryParam for &T {
    type Fetch = Read<T>;
}
impl<T: Component> QueryParam for &mut T {
    type Fetch = Write<T>;
}
impl<T: Component> QueryParam for Option<&T> {
    type Fetch = OptRead<T>;
}
impl<T: Component> QueryParam for Option<&mut T> {
    type Fetch = OptWrite<T>;
}

macro_rules! tuple_query {
    ($($n:tt $T:ident),+) => {
        impl<$($T: QueryParam),+> QueryParam for ($($T,)+) {
            type Fetch = ($($T::Fetch,)+);
        }
        // SAFETY: the union of the elements' accesses; aliasing between elements is rejected
        // by `Query` construction (a type named twice with `&mut` is an error).
        unsafe impl<$($T: Fetch),+> Fetch for ($($T,)+) {
            type Item<'a> = ($($T::Item<'a>,)+);
            type Slice<'a> = ($($T::Slice<'a>,)+);
            type State = ($($T::State,)+);
            type Ptr = ($($T::Ptr,)+);
            fn access(out: &mut RequestList) {
                $($T::access(out);)+
            }
            fn prepare(store: &Store, archetype: &Archetype) -> Option<Self::State> {
                Some(($($T::prepare(store, archetype)?,)+))
            }
            #[inline]
            unsafe fn ptr(state: Self::State, chunk: &Chunk, frame: u64) -> Self::Ptr {
                // SAFETY: forwarded contract.
                unsafe { ($($T::ptr(state.$n, chunk, frame),)+) }
            }
            #[inline]
            unsafe fn item<'a>(ptr: Self::Ptr, row: usize) -> Self::Item<'a> {
                // SAFETY: forwarded contract.
                unsafe { ($($T::item(ptr.$n, row),)+) }
            }
            #[inline]
            unsafe fn slice<'a>(ptr: Self::Ptr, len: usize) -> Self::Slice<'a> {
                // SAFETY: forwarded contract.
                unsafe { ($($T::slice(ptr.$n, len),)+) }
            }
        }
    };
}

tuple_query!(0 A);
tuple_query!(0 A, 1 B);
tuple_query!(0 A, 1 B, 2 C);
tuple_query!(0 A, 1 B, 2 C, 3 D);
tuple_query!(0 A, 1 B, 2 C, 3 D, 4 E);
tuple_query!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F);
tuple_query!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G);
tuple_query!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H);

/// The (type, name, exclusive) list of query type `Q`, made only by [`query_access`], so that a
/// [`Query<Q>`] built from it borrows exactly what `Q` touches. Kept inline: no allocation for
/// query types of up to 8 elements.
pub(crate) struct QueryAccess<Q> {
    list: RequestList,
    _q: PhantomData<fn() -> Q>,
}

impl<Q> QueryAccess<Q> {
    /// The requests, in the query type's element order.
    pub(crate) fn as_slice(&self) -> &[BorrowRequest] {
        self.list.as_slice()
    }
}

/// The access list of a query type, or [`StoreError::QueryAliasing`] if a type is named twice
/// with at least one `&mut`.
pub(crate) fn query_access<Q: QueryParam>() -> Result<QueryAccess<Q>, StoreError> {
    let mut list = RequestList::empty();
    Q::Fetch::access(&mut list);
    let items = list.as_slice();
    for (i, a) in items.iter().enumerate() {
        for b in &items[i + 1..] {
            if a.0 == b.0 && (a.2 || b.2) {
                return Err(StoreError::QueryAliasing { type_name: a.1 });
            }
        }
    }
    Ok(QueryAccess {
        list,
        _q: PhantomData,
    })
}

/// A prepared query over a [`Store`]: `store.query::<(&A, &mut B)>()?`.
///
/// Iteration order is deterministic: archetypes in creation order, chunks in order, rows in
/// order. Holds run-time borrow flags on every named type until dropped.
pub struct Query<'w, Q: QueryParam> {
    store: &'w Store,
    _borrows: BorrowSet<'w>,
    with: Vec<TypeId>,
    without: Vec<TypeId>,
    changed: Vec<(TypeId, u64)>,
    _q: PhantomData<fn() -> Q>,
}

impl<Q: QueryParam> fmt::Debug for Query<'_, Q> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Query")
            .field("query", &std::any::type_name::<Q>())
            .field("with", &self.with.len())
            .field("without", &self.without.len())
            .field("changed", &self.changed)
            .finish()
    }
}

/// The matching chunks of a query: none, one (kept inline), or several.
enum Tasks<V> {
    None,
    One(V),
    Many(Vec<V>),
}

impl<V> Tasks<V> {
    /// Adds `v`; the list of several is allocated for `bound` entries.
    fn push(&mut self, v: V, bound: usize) {
        *self = match std::mem::replace(self, Tasks::None) {
            Tasks::None => Tasks::One(v),
            Tasks::One(first) => {
                let mut all = Vec::with_capacity(bound.max(2));
                all.push(first);
                all.push(v);
                Tasks::Many(all)
            }
            Tasks::Many(mut all) => {
                all.push(v);
                Tasks::Many(all)
            }
        };
    }
}

/// A matching chunk handed to a query's closure.
#[derive(Clone, Copy)]
struct Visit<S> {
    archetype: usize,
    chunk: usize,
    first_index: usize,
    state: S,
}

impl<'w, Q: QueryParam> Query<'w, Q> {
    pub(crate) fn new(store: &'w Store) -> Result<Self, StoreError> {
        Self::with_access(store, &query_access::<Q>()?, |_| None)
    }

    /// A query taking the borrows of `access` (computed once by a caller that also checked it),
    /// `hint(k)` the flag slot hint of its `k`-th type.
    pub(crate) fn with_access<'h>(
        store: &'w Store,
        access: &QueryAccess<Q>,
        hint: impl Fn(usize) -> Option<&'h SlotHint>,
    ) -> Result<Self, StoreError> {
        let borrows = store.borrows.acquire(access.as_slice(), hint)?;
        Ok(Self {
            store,
            _borrows: borrows,
            with: Vec::new(),
            without: Vec::new(),
            changed: Vec::new(),
            _q: PhantomData,
        })
    }

    /// Keeps only entities that have a `T` (not fetched).
    #[must_use]
    pub fn with<T: Component>(mut self) -> Self {
        self.with.push(TypeId::of::<T>());
        self
    }

    /// Keeps only entities that do not have a `T`.
    #[must_use]
    pub fn without<T: Component>(mut self) -> Self {
        self.without.push(TypeId::of::<T>());
        self
    }

    /// Keeps only chunks whose `T` column was written at frame `frame` or later (entities without
    /// a `T` are skipped). Written means: `&mut T` access through a query or `get_mut`, or a
    /// structural change of the chunk (spawn, insert, remove, despawn moving rows).
    #[must_use]
    pub fn changed_since<T: Component>(mut self, frame: u64) -> Self {
        self.changed.push((TypeId::of::<T>(), frame));
        self
    }

    fn prepare(
        &self,
        archetype: &Archetype,
        changed: &mut Vec<(usize, u64)>,
    ) -> Option<<Q::Fetch as Fetch>::State> {
        let registry = &self.store.registry;
        let has = |t: &TypeId| {
            registry
                .get(*t)
                .and_then(|id| archetype.column_index(id))
                .is_some()
        };
        if !self.with.iter().all(has) || self.without.iter().any(has) {
            return None;
        }
        changed.clear();
        for (t, frame) in &self.changed {
            let col = registry.get(*t).and_then(|id| archetype.column_index(id))?;
            changed.push((col, *frame));
        }
        Q::Fetch::prepare(self.store, archetype)
    }

    /// Calls `f` for every matching chunk in iteration order (no borrows are created here).
    fn visit(
        &self,
        mut f: impl FnMut(&'w Archetype, &'w Chunk, Visit<<Q::Fetch as Fetch>::State>),
    ) {
        let store: &'w Store = self.store;
        let mut changed = Vec::new();
        let mut first_index = 0;
        for (ai, archetype) in store.archetypes.iter().enumerate() {
            if archetype.len == 0 {
                continue;
            }
            let Some(state) = self.prepare(archetype, &mut changed) else {
                continue;
            };
            for (ci, chunk) in archetype.chunks[..archetype.used_chunks()]
                .iter()
                .enumerate()
            {
                if changed
                    .iter()
                    .any(|&(col, frame)| chunk.changed_frame(col) < frame)
                {
                    continue;
                }
                f(
                    archetype,
                    chunk,
                    Visit {
                        archetype: ai,
                        chunk: ci,
                        first_index,
                        state,
                    },
                );
                first_index += chunk.len();
            }
        }
    }

    /// Number of matching entities (no column is stamped as written).
    pub fn count(&self) -> usize {
        let mut n = 0;
        self.visit(|_, chunk, _| n += chunk.len());
        n
    }

    /// The matching entities, in iteration order.
    pub fn entities(&self) -> Vec<Entity> {
        let mut out = Vec::new();
        self.visit(|_, chunk, _| out.extend_from_slice(chunk.entities()));
        out
    }

    /// Calls `f(entity, item)` for every matching entity, in iteration order.
    pub fn for_each<F>(&mut self, mut f: F)
    where
        F: FnMut(Entity, QueryItem<'_, Q>),
    {
        let frame = self.store.frame;
        self.visit(|_, chunk, v| {
            // SAFETY: `chunk` belongs to the archetype the state was prepared for.
            let ptr = unsafe { Q::Fetch::ptr(v.state, chunk, frame) };
            for (row, &entity) in chunk.entities().iter().enumerate() {
                // SAFETY: `row < len`; this query holds the borrows; `&mut self` and the
                // closure's higher-ranked lifetime keep each row's item unique.
                f(entity, unsafe { Q::Fetch::item(ptr, row) });
            }
        });
    }

    /// Calls `f` for every matching chunk, in iteration order.
    pub fn for_each_chunk<F>(&mut self, mut f: F)
    where
        F: FnMut(QueryChunk<'_, Q>),
    {
        let store = self.store;
        let frame = store.frame;
        self.visit(|archetype, chunk, v| {
            // SAFETY: `chunk` belongs to the archetype the state was prepared for.
            let ptr = unsafe { Q::Fetch::ptr(v.state, chunk, frame) };
            f(QueryChunk::new(store, archetype, chunk, v, ptr));
        });
    }

    /// The matching chunks, without a heap allocation when there is at most one, and with one
    /// allocation (of at most [`Query::chunk_bound`] entries) otherwise.
    fn tasks(&self) -> Tasks<Visit<<Q::Fetch as Fetch>::State>> {
        let mut tasks = Tasks::None;
        let bound = self.chunk_bound();
        self.visit(|_, _, v| tasks.push(v, bound));
        tasks
    }

    /// An upper bound of the matching chunks: every used chunk of every non-empty archetype.
    /// Chunk lists are allocated at this size once instead of grown by doubling, so a frame's
    /// queries allocate the same few block sizes every frame (the allocator reuses them, where
    /// blocks of changing sizes, freed on other threads, fragment it).
    fn chunk_bound(&self) -> usize {
        self.store
            .archetypes
            .iter()
            .filter(|a| a.len > 0)
            .map(|a| a.used_chunks())
            .sum()
    }

    /// Calls `f` for every matching chunk in parallel on rayon (one task per chunk). Use
    /// [`QueryChunk::first_index`] to write per-entity results into flat arrays without locks.
    ///
    /// A query matching a single chunk calls `f` on the current thread (what rayon would do for
    /// one task, without its set-up).
    pub fn par_for_each_chunk<F>(&mut self, f: F)
    where
        F: Fn(QueryChunk<'_, Q>) + Sync + Send,
    {
        let store = self.store;
        let frame = store.frame;
        let run = |v: Visit<<Q::Fetch as Fetch>::State>| {
            let archetype = &store.archetypes[v.archetype];
            let chunk = &archetype.chunks[v.chunk];
            // SAFETY: `chunk` belongs to the archetype the state was prepared for; each chunk
            // is visited by exactly one task, so the slices of different tasks are disjoint.
            let ptr = unsafe { Q::Fetch::ptr(v.state, chunk, frame) };
            f(QueryChunk::new(store, archetype, chunk, v, ptr));
        };
        match self.tasks() {
            Tasks::None => {}
            Tasks::One(v) => run(v),
            Tasks::Many(tasks) => tasks.into_par_iter().for_each(run),
        }
    }

    /// Every matching chunk as a view, in iteration order, for the life of the query's borrow.
    ///
    /// Unlike [`Query::for_each_chunk`], the views outlive a closure call: a job can pair them
    /// with pieces of flat frame buffers (`views.into_par_iter().zip(pieces)`) and keep
    /// references into the columns while the query lives. Each chunk appears once, so the
    /// views' column slices are disjoint.
    pub fn chunks(&mut self) -> Vec<QueryChunk<'_, Q>> {
        let store = self.store;
        let frame = store.frame;
        let bound = self.chunk_bound();
        let mut views = Vec::new();
        self.visit(|archetype, chunk, v| {
            // Reserved at the first match: a query that matches nothing allocates nothing.
            views.reserve_exact(bound);
            // SAFETY: `chunk` belongs to the archetype the state was prepared for.
            let ptr = unsafe { Q::Fetch::ptr(v.state, chunk, frame) };
            views.push(QueryChunk::new(store, archetype, chunk, v, ptr));
        });
        views
    }

    /// Calls `f(entity, item)` for every matching entity, in parallel over chunks.
    pub fn par_for_each<F>(&mut self, f: F)
    where
        F: Fn(Entity, QueryItem<'_, Q>) + Sync + Send,
    {
        self.par_for_each_chunk(|chunk| {
            let ptr = chunk.ptr;
            for (row, &entity) in chunk.entities().iter().enumerate() {
                // SAFETY: as in `for_each`; the chunk view is consumed here and never yields
                // its slices.
                f(entity, unsafe { Q::Fetch::item(ptr, row) });
            }
        });
    }
}

// SAFETY: every component is `Send + Sync` (the `Component` bound); a view grants access to the
// rows of one chunk only, each chunk is handed out once per query, and the query's borrow flags
// stay held while views live, so moving a view to another thread is like sending `&[T]` /
// `&mut [T]` of those rows.
unsafe impl<Q: QueryParam> Send for QueryChunk<'_, Q> {}

/// Variance/auto-trait marker of [`QueryChunk`]: borrows the chunk mutably, no `Q` values.
type ChunkMarker<'c, Q> = PhantomData<(&'c mut (), fn() -> Q)>;

/// One matching chunk of a query: its entities and typed column slices.
pub struct QueryChunk<'c, Q: QueryParam> {
    store: &'c Store,
    archetype: &'c Archetype,
    chunk: &'c Chunk,
    visit: Visit<<Q::Fetch as Fetch>::State>,
    ptr: <Q::Fetch as Fetch>::Ptr,
    _q: ChunkMarker<'c, Q>,
}

impl<Q: QueryParam> fmt::Debug for QueryChunk<'_, Q> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueryChunk")
            .field("archetype", &self.visit.archetype)
            .field("chunk", &self.visit.chunk)
            .field("len", &self.chunk.len())
            .field("first_index", &self.visit.first_index)
            .finish()
    }
}

impl<'c, Q: QueryParam> QueryChunk<'c, Q> {
    fn new(
        store: &'c Store,
        archetype: &'c Archetype,
        chunk: &'c Chunk,
        visit: Visit<<Q::Fetch as Fetch>::State>,
        ptr: <Q::Fetch as Fetch>::Ptr,
    ) -> Self {
        Self {
            store,
            archetype,
            chunk,
            visit,
            ptr,
            _q: PhantomData,
        }
    }

    /// The entities of the chunk's rows, in row order.
    pub fn entities(&self) -> &'c [Entity] {
        self.chunk.entities()
    }

    /// Number of rows (≥ 1).
    pub fn len(&self) -> usize {
        self.chunk.len()
    }

    /// Always false: queries never visit empty chunks.
    pub fn is_empty(&self) -> bool {
        self.chunk.len() == 0
    }

    /// Number of matching entities in all earlier chunks of this query, in iteration order.
    pub fn first_index(&self) -> usize {
        self.visit.first_index
    }

    /// The archetype of this chunk.
    pub fn archetype_id(&self) -> ArchetypeId {
        ArchetypeId(self.visit.archetype as u32)
    }

    /// The index of this chunk within its archetype.
    pub fn chunk_id(&self) -> ChunkId {
        ChunkId(self.visit.chunk as u32)
    }

    /// The typed column slices, borrowed from this view.
    pub fn columns(&mut self) -> QuerySlices<'_, Q> {
        // SAFETY: the view holds the query's borrows for `'c`; `&mut self` makes the slices
        // unique for their lifetime.
        unsafe { Q::Fetch::slice(self.ptr, self.chunk.len()) }
    }

    /// The typed column slices for the whole closure call (consumes the view).
    pub fn into_columns(self) -> QuerySlices<'c, Q> {
        // SAFETY: the view is consumed, so the slices are handed out once.
        unsafe { Q::Fetch::slice(self.ptr, self.chunk.len()) }
    }

    /// The entities and the typed column slices (consumes the view).
    pub fn into_parts(self) -> (&'c [Entity], QuerySlices<'c, Q>) {
        let entities = self.chunk.entities();
        (entities, self.into_columns())
    }

    /// The column of `T`, when the query reads `T` shared (`&T` or `Option<&T>`) and the chunk
    /// has it; `None` otherwise (a type the query writes is never handed out this way).
    pub fn read_column<T: Component>(&self) -> Option<&'c [T]> {
        let mut list = RequestList::empty();
        Q::Fetch::access(&mut list);
        let access = list.as_slice();
        let id = TypeId::of::<T>();
        if !access.iter().any(|&(t, _, _)| t == id) || access.iter().any(|&(t, _, w)| t == id && w)
        {
            return None;
        }
        let component = self.store.registry.get(id)?;
        let col = self.archetype.column_index(component)?;
        let offset = self.archetype.columns[col].offset;
        // SAFETY: the query holds a shared borrow of `T` for `'c` and no exclusive one (checked
        // above), the column lies inside the chunk's allocation at `offset`, is aligned for `T`
        // and holds `len` initialised values.
        Some(unsafe {
            std::slice::from_raw_parts(self.chunk.base().add(offset).cast::<T>(), self.chunk.len())
        })
    }

    /// The frame at which column `T` of this chunk was last written, or 0 if the chunk has no
    /// `T` column.
    pub fn changed_frame<T: Component>(&self) -> u64 {
        self.store
            .registry
            .get(TypeId::of::<T>())
            .and_then(|id| self.archetype.column_index(id))
            .map_or(0, |col| self.chunk.changed_frame(col))
    }
}
