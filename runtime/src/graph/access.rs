//! [`Access`]: the set of types a node reads and writes.

use std::any::TypeId;

/// The types a node reads and writes: components, resources, or
/// [`ScopedSlice<T>`](crate::store::ScopedSlice) markers.
///
/// Declaring `write::<T>()` implies read access to `T`.
///
/// ```
/// use sinew_runtime::graph::Access;
/// struct Position;
/// struct Velocity;
/// let access = Access::new().read::<Velocity>().write::<Position>();
/// assert!(access.reads::<Velocity>() && access.reads::<Position>());
/// assert!(access.writes::<Position>() && !access.writes::<Velocity>());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Access {
    reads: Vec<(TypeId, &'static str)>,
    writes: Vec<(TypeId, &'static str)>,
}

impl Access {
    /// An empty access set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds read access to `T`.
    #[must_use]
    pub fn read<T: 'static>(mut self) -> Self {
        let key = (TypeId::of::<T>(), std::any::type_name::<T>());
        if !self.reads.contains(&key) {
            self.reads.push(key);
        }
        self
    }

    /// Adds write (and read) access to `T`.
    #[must_use]
    pub fn write<T: 'static>(mut self) -> Self {
        let key = (TypeId::of::<T>(), std::any::type_name::<T>());
        if !self.writes.contains(&key) {
            self.writes.push(key);
        }
        self
    }

    /// True if `T` may be read (declared read or write).
    pub fn reads<T: 'static>(&self) -> bool {
        self.can_read(TypeId::of::<T>())
    }

    /// True if `T` may be written.
    pub fn writes<T: 'static>(&self) -> bool {
        self.can_write(TypeId::of::<T>())
    }

    /// Names of the types declared read-only, in declaration order.
    pub fn read_type_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.reads
            .iter()
            .filter(|r| !self.can_write(r.0))
            .map(|r| r.1)
    }

    /// Names of the types declared written, in declaration order.
    pub fn write_type_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.writes.iter().map(|w| w.1)
    }

    pub(crate) fn can_read(&self, id: TypeId) -> bool {
        self.reads.iter().any(|r| r.0 == id) || self.can_write(id)
    }

    pub(crate) fn can_write(&self, id: TypeId) -> bool {
        self.writes.iter().any(|w| w.0 == id)
    }

    /// The index of `id`'s declaration among all of them (reads first, then writes) that
    /// allows the access: a write declaration for `write`, else the read declaration or, failing
    /// that, the write one. `None` if undeclared. [`Access::declarations`] entries are numbered
    /// alike.
    pub(crate) fn declaration(&self, id: TypeId, write: bool) -> Option<usize> {
        let in_writes = || self.writes.iter().position(|w| w.0 == id);
        if write {
            return in_writes().map(|i| self.reads.len() + i);
        }
        (self.reads.iter().position(|r| r.0 == id))
            .or_else(|| in_writes().map(|i| self.reads.len() + i))
    }

    /// How many declarations there are (reads and writes).
    pub(crate) fn declarations(&self) -> usize {
        self.reads.len() + self.writes.len()
    }

    pub(crate) fn write_entries(&self) -> &[(TypeId, &'static str)] {
        &self.writes
    }

    pub(crate) fn read_entries(&self) -> &[(TypeId, &'static str)] {
        &self.reads
    }
}
