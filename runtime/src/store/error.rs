//! [`StoreError`]: everything a store operation can reject.

use std::error::Error;
use std::fmt;

use super::{ApplyReport, Entity};

/// An error of a [`Store`](super::Store) operation. Each variant says what was wrong and where.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub enum StoreError {
    /// The handle's index was never allocated by this store (for example a handle from another
    /// store).
    NoSuchEntity {
        /// The rejected handle.
        entity: Entity,
    },
    /// The entity was despawned (or the handle belongs to another store): its slot now has
    /// another generation.
    StaleEntity {
        /// The rejected handle.
        entity: Entity,
        /// The generation the slot has now.
        current_generation: u32,
    },
    /// The entity does not have the component.
    MissingComponent {
        /// The entity.
        entity: Entity,
        /// The component type.
        type_name: &'static str,
    },
    /// A bundle element is itself a tuple: `(bundle, extra)` would store the inner tuple as
    /// one component instead of flattening it. Spawn a flat tuple, or wrap the tuple in a
    /// struct to store it as one component.
    NestedBundle {
        /// The tuple type.
        type_name: &'static str,
    },
    /// A bundle names the same component type twice.
    DuplicateComponent {
        /// The repeated type.
        type_name: &'static str,
    },
    /// A query names a type twice and at least once as `&mut`.
    QueryAliasing {
        /// The repeated type.
        type_name: &'static str,
    },
    /// The resource is not in the store.
    MissingResource {
        /// The resource type.
        type_name: &'static str,
    },
    /// No scoped slice of this element type is reachable now (outside `with_scoped_slice`).
    NoScopedSlice {
        /// The element type.
        type_name: &'static str,
    },
    /// A run-time borrow conflicts with a live one (shared vs exclusive) on the same type.
    BorrowConflict {
        /// The type whose borrow flag refused.
        type_name: &'static str,
        /// True if the refused borrow was exclusive (`&mut`).
        exclusive: bool,
    },
    /// A chunk could not be allocated.
    ChunkAllocation {
        /// Requested size in bytes.
        bytes: usize,
        /// Requested alignment in bytes.
        align: usize,
        /// The archetype's components.
        archetype: String,
    },
    /// A counter (entity slots, chunks, archetypes, component types) exceeded its index type.
    CapacityOverflow {
        /// What overflowed.
        what: &'static str,
    },
    /// Some deferred commands failed; the report lists every failure (entity and what).
    CommandsFailed {
        /// The full report, including the commands that succeeded.
        report: Box<ApplyReport>,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSuchEntity { entity } => {
                write!(f, "entity {entity}: no such entity slot in this store")
            }
            Self::StaleEntity {
                entity,
                current_generation,
            } => write!(
                f,
                "entity {entity}: stale handle (slot {} is now at generation {current_generation})",
                entity.index()
            ),
            Self::MissingComponent { entity, type_name } => {
                write!(f, "entity {entity}: has no component `{type_name}`")
            }
            Self::NestedBundle { type_name } => write!(
                f,
                "bundle element `{type_name}` is a tuple: spawn a flat tuple (or wrap the tuple in a struct to store it as one component)"
            ),
            Self::DuplicateComponent { type_name } => {
                write!(f, "bundle names component `{type_name}` more than once")
            }
            Self::QueryAliasing { type_name } => write!(
                f,
                "query names `{type_name}` more than once with a `&mut` access (aliasing)"
            ),
            Self::MissingResource { type_name } => {
                write!(f, "no resource `{type_name}` in the store")
            }
            Self::NoScopedSlice { type_name } => write!(
                f,
                "no scoped slice of `{type_name}` is reachable (only inside `with_scoped_slice`)"
            ),
            Self::BorrowConflict {
                type_name,
                exclusive,
            } => write!(
                f,
                "cannot borrow `{type_name}` {}: it is already borrowed {}",
                if *exclusive { "exclusively" } else { "shared" },
                if *exclusive {
                    "(shared or exclusive)"
                } else {
                    "exclusively"
                }
            ),
            Self::ChunkAllocation {
                bytes,
                align,
                archetype,
            } => write!(
                f,
                "could not allocate a chunk of {bytes} bytes (align {align}) for archetype [{archetype}]"
            ),
            Self::CapacityOverflow { what } => write!(f, "capacity overflow: too many {what}"),
            Self::CommandsFailed { report } => {
                write!(
                    f,
                    "{} of {} deferred commands failed",
                    report.failures.len(),
                    report.total
                )?;
                for failure in &report.failures {
                    write!(f, "; {failure}")?;
                }
                Ok(())
            }
        }
    }
}

impl Error for StoreError {}
