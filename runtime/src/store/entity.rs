//! Entity handles and the entity → location table.

use std::fmt;

use super::StoreError;

/// A handle to an entity of a [`Store`](super::Store): a slot index plus a generation.
///
/// Handles are plain values (`Copy`, hashable, ordered by index then generation). A handle whose
/// entity was despawned is *stale*: every store operation on it returns
/// [`StoreError::StaleEntity`] (never undefined behaviour). Each store starts its generations at a
/// store-specific offset, so a handle from another store is rejected with high probability
/// ([`StoreError::NoSuchEntity`] or [`StoreError::StaleEntity`]); it can never reach memory it
/// should not.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Entity {
    index: u32,
    generation: u32,
}

impl Entity {
    /// A placeholder handle that never refers to a live entity (slot `u32::MAX` is never
    /// allocated). Every store operation on it returns [`StoreError::NoSuchEntity`].
    pub const DANGLING: Entity = Entity {
        index: u32::MAX,
        generation: u32::MAX,
    };

    /// Builds a handle from its raw parts (for serialisation and tests). The store validates it
    /// on every use.
    pub const fn from_raw_parts(index: u32, generation: u32) -> Self {
        Self { index, generation }
    }

    /// The slot index of this entity (dense, reused after despawn).
    pub const fn index(self) -> u32 {
        self.index
    }

    /// The generation of the slot when this handle was created.
    pub const fn generation(self) -> u32 {
        self.generation
    }
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}v{}", self.index, self.generation)
    }
}

/// Where the row of a live entity is: archetype, chunk within the archetype, row within the chunk.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct Location {
    pub(crate) archetype: u32,
    pub(crate) chunk: u32,
    pub(crate) row: u32,
}

#[derive(Clone, Copy, Debug)]
struct Meta {
    generation: u32,
    alive: bool,
    location: Location,
}

/// The slot table: O(1) entity → location.
#[derive(Debug)]
pub(crate) struct Entities {
    meta: Vec<Meta>,
    free: Vec<u32>,
    base_generation: u32,
    len: usize,
}

impl Entities {
    pub(crate) fn new(base_generation: u32) -> Self {
        Self {
            meta: Vec::new(),
            free: Vec::new(),
            base_generation,
            len: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Reserves room for `additional` more slots (beyond the free list).
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.meta
            .reserve(additional.saturating_sub(self.free.len()));
    }

    /// Allocates a handle (reusing the most recently freed slot first). Its location must be set
    /// with [`Entities::set_location`] before it is resolved.
    pub(crate) fn alloc(&mut self) -> Result<Entity, StoreError> {
        if let Some(index) = self.free.pop() {
            let meta = &mut self.meta[index as usize];
            meta.alive = true;
            self.len += 1;
            return Ok(Entity {
                index,
                generation: meta.generation,
            });
        }
        let index = u32::try_from(self.meta.len())
            .ok()
            .filter(|&i| i != u32::MAX)
            .ok_or(StoreError::CapacityOverflow {
                what: "entity slots (u32 index)",
            })?;
        self.meta.push(Meta {
            generation: self.base_generation,
            alive: true,
            location: Location::default(),
        });
        self.len += 1;
        Ok(Entity {
            index,
            generation: self.base_generation,
        })
    }

    /// Resolves a handle to the location of its live entity.
    #[inline]
    pub(crate) fn resolve(&self, entity: Entity) -> Result<Location, StoreError> {
        match self.meta.get(entity.index as usize) {
            None => Err(StoreError::NoSuchEntity { entity }),
            Some(meta) if meta.alive && meta.generation == entity.generation => Ok(meta.location),
            Some(meta) => Err(StoreError::StaleEntity {
                entity,
                current_generation: meta.generation,
            }),
        }
    }

    /// Sets the location of a live entity (by index; the caller holds a valid handle).
    #[inline]
    pub(crate) fn set_location(&mut self, index: u32, location: Location) {
        if let Some(meta) = self.meta.get_mut(index as usize) {
            meta.location = location;
        }
    }

    /// Frees the slot of a live entity. The generation is bumped; a slot whose generation would
    /// come back to the store's first generation is retired (never reused) so that no handle
    /// can ever become valid again.
    pub(crate) fn free(&mut self, entity: Entity) {
        let Some(meta) = self.meta.get_mut(entity.index as usize) else {
            return;
        };
        if !meta.alive || meta.generation != entity.generation {
            return;
        }
        meta.alive = false;
        self.len -= 1;
        let next = meta.generation.wrapping_add(1);
        meta.generation = next;
        if next != self.base_generation {
            self.free.push(entity.index);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_free_reuse_bumps_generation() {
        let mut e = Entities::new(7);
        let a = e.alloc().unwrap();
        assert_eq!(a, Entity::from_raw_parts(0, 7));
        e.free(a);
        assert!(matches!(e.resolve(a), Err(StoreError::StaleEntity { .. })));
        let b = e.alloc().unwrap();
        assert_eq!(b.index(), 0);
        assert_eq!(b.generation(), 8);
        assert!(e.resolve(b).is_ok());
        assert!(matches!(
            e.resolve(Entity::from_raw_parts(5, 7)),
            Err(StoreError::NoSuchEntity { .. })
        ));
        assert_eq!(e.len(), 1);
        assert_eq!(b.to_string(), "0v8");
    }

    #[test]
    fn wrapped_slot_is_retired() {
        let mut e = Entities::new(0);
        let mut h = e.alloc().unwrap();
        e.meta[0].generation = u32::MAX;
        h = Entity::from_raw_parts(h.index(), u32::MAX);
        e.free(h);
        let next = e.alloc().unwrap();
        assert_eq!(next.index(), 1, "slot 0 wrapped around and must be retired");
    }
}
