//! [`Bundle`]: a tuple of components spawned together.

use super::component::{Component, ComponentInfo};

mod sealed {
    /// Bundles are implemented only by this crate (the store trusts their type info).
    pub trait Sealed {}
}

/// A tuple of 0 to 12 components of distinct types, spawned or inserted together.
///
/// Sealed: implemented for tuples `()`, `(A,)`, `(A, B)`, … up to 12 elements. A tuple naming one
/// type twice is rejected at spawn with [`StoreError::DuplicateComponent`](super::StoreError).
pub trait Bundle: Send + 'static + sealed::Sealed {
    /// Pushes the info of each element, in element order.
    #[doc(hidden)]
    fn infos(out: &mut Vec<ComponentInfo>);
    /// Moves each element into `dst(element index)`, in element order.
    ///
    /// # Safety
    /// For each element index `i`, `dst(i)` must return a pointer valid for writing one value
    /// of element `i`'s type, properly aligned, whose previous contents are not dropped.
    #[doc(hidden)]
    unsafe fn write_into<F: FnMut(usize) -> *mut u8>(self, dst: F);
}

macro_rules! tuple_bundle {
    ($($n:tt $T:ident),*) => {
        impl<$($T: Component),*> sealed::Sealed for ($($T,)*) {}
        impl<$($T: Component),*> Bundle for ($($T,)*) {
            #[allow(unused_variables)]
            fn infos(out: &mut Vec<ComponentInfo>) {
                $(out.push(ComponentInfo::of::<$T>());)*
            }
            #[allow(unused_variables, unused_mut)]
            unsafe fn write_into<Dst: FnMut(usize) -> *mut u8>(self, mut dst: Dst) {
                $(
                    // SAFETY: the caller guarantees `dst($n)` is valid, aligned storage for a
                    // `$T` (typed write: the size is known at compile time).
                    unsafe { dst($n).cast::<$T>().write(self.$n) };
                )*
            }
        }
    };
}

tuple_bundle!();
tuple_bundle!(0 A);
tuple_bundle!(0 A, 1 B);
tuple_bundle!(0 A, 1 B, 2 C);
tuple_bundle!(0 A, 1 B, 2 C, 3 D);
tuple_bundle!(0 A, 1 B, 2 C, 3 D, 4 E);
tuple_bundle!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F);
tuple_bundle!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G);
tuple_bundle!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H);
tuple_bundle!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I);
tuple_bundle!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J);
tuple_bundle!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K);
tuple_bundle!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L);
