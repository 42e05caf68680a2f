//! Run-time component registry: one [`ComponentId`] per Rust type, with its layout and drop fn.

use std::alloc::Layout;
use std::any::TypeId;
use std::fmt;

use hashbrown::HashMap;

use super::StoreError;

/// Anything that can be stored as a component (or a resource): `'static + Send + Sync`.
///
/// Implemented for every such type; assets held through `Arc` are ordinary components.
pub trait Component: 'static + Send + Sync {}

impl<T: 'static + Send + Sync> Component for T {}

/// The id of a registered component type within one [`Store`](super::Store).
///
/// Ids are dense and given in registration order; archetypes list their components sorted by id.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct ComponentId(u32);

impl ComponentId {
    /// The dense index of this component type in its store's registry.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for ComponentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "component#{}", self.0)
    }
}

/// Drops a value of the erased type in place.
pub(crate) type DropFn = unsafe fn(*mut u8);

/// # Safety
/// `ptr` must point to a valid, initialised `T` that is not used again.
unsafe fn drop_erased<T>(ptr: *mut u8) {
    // SAFETY: the caller guarantees `ptr` points to an initialised `T` that is dropped once.
    unsafe { std::ptr::drop_in_place(ptr.cast::<T>()) }
}

/// The layout and drop function of a component type.
#[derive(Clone, Copy, Debug)]
pub struct ComponentInfo {
    pub(crate) type_id: TypeId,
    pub(crate) name: &'static str,
    pub(crate) layout: Layout,
    pub(crate) drop: Option<DropFn>,
}

impl ComponentInfo {
    /// The info of the type `T`.
    pub fn of<T: Component>() -> Self {
        Self {
            type_id: TypeId::of::<T>(),
            name: std::any::type_name::<T>(),
            layout: Layout::new::<T>(),
            drop: if std::mem::needs_drop::<T>() {
                Some(drop_erased::<T> as DropFn)
            } else {
                None
            },
        }
    }

    /// The Rust type name (`std::any::type_name`).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Size of one value in bytes (0 for zero-sized types).
    pub fn size(&self) -> usize {
        self.layout.size()
    }

    /// Alignment of the type in bytes.
    pub fn align(&self) -> usize {
        self.layout.align()
    }

    /// The `TypeId` of the type.
    pub fn type_id(&self) -> TypeId {
        self.type_id
    }
}

/// Per-store registry, filled lazily on first use of a type.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    by_type: HashMap<TypeId, ComponentId>,
    infos: Vec<ComponentInfo>,
}

impl Registry {
    pub(crate) fn register_info(&mut self, info: ComponentInfo) -> Result<ComponentId, StoreError> {
        if let Some(&id) = self.by_type.get(&info.type_id) {
            return Ok(id);
        }
        let id = ComponentId(u32::try_from(self.infos.len()).map_err(|_| {
            StoreError::CapacityOverflow {
                what: "component types",
            }
        })?);
        self.infos.push(info);
        self.by_type.insert(info.type_id, id);
        Ok(id)
    }

    pub(crate) fn register<T: Component>(&mut self) -> Result<ComponentId, StoreError> {
        match self.by_type.get(&TypeId::of::<T>()) {
            Some(&id) => Ok(id),
            None => self.register_info(ComponentInfo::of::<T>()),
        }
    }

    #[inline]
    pub(crate) fn get(&self, type_id: TypeId) -> Option<ComponentId> {
        self.by_type.get(&type_id).copied()
    }

    #[inline]
    pub(crate) fn info(&self, id: ComponentId) -> &ComponentInfo {
        &self.infos[id.index()]
    }

    pub(crate) fn len(&self) -> usize {
        self.infos.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_once_in_order() {
        let mut r = Registry::default();
        let a = r.register::<u32>().unwrap();
        let b = r.register::<String>().unwrap();
        assert_eq!(r.register::<u32>().unwrap(), a);
        assert_eq!((a.index(), b.index()), (0, 1));
        assert!(r.info(a).drop.is_none());
        assert!(r.info(b).drop.is_some());
        assert_eq!(r.info(b).size(), std::mem::size_of::<String>());
        assert_eq!(r.get(TypeId::of::<u64>()), None);
        assert_eq!(r.len(), 2);
    }
}
