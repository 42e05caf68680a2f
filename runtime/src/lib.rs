//! sinew-runtime: storage and scheduling for sinew, with no animation knowledge.
//!
//! - [`store`]: a chunked archetype store. Entities are index + generation handles; components
//!   are any `'static + Send + Sync` type, registered on first use; entities with the same
//!   component set live in 16 KiB chunks, one column per component. Typed queries iterate column
//!   slices sequentially or in parallel (one rayon task per chunk), with per-chunk change frames.
//!   Resources, scoped borrowed slices and a deferred command buffer complete it.
//! - [`graph`]: an explicit dependency graph of nodes declaring their reads and writes, checked
//!   once (cycles, unordered write conflicts) and run each frame on rayon by counting down
//!   dependencies.
//!
//! # Example
//!
//! ```
//! use sinew_runtime::graph::{Access, FnNode, GraphBuilder};
//! use sinew_runtime::store::Store;
//!
//! #[derive(Debug, Clone, Copy, PartialEq)]
//! struct Position(f32);
//! #[derive(Debug, Clone, Copy, PartialEq)]
//! struct Velocity(f32);
//! struct Gravity(f32);
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut store = Store::new();
//! let a = store.spawn((Position(0.0), Velocity(1.0)))?;
//! store.spawn_batch((0..1000).map(|i| (Position(i as f32), Velocity(0.5))))?;
//! store.insert_resource(Gravity(-1.0));
//!
//! // Direct queries: chunk-wise, with typed column slices.
//! store.query::<(&mut Position, &Velocity)>()?.par_for_each_chunk(|chunk| {
//!     let (pos, vel) = chunk.into_columns();
//!     for (p, v) in pos.iter_mut().zip(vel) {
//!         p.0 += v.0;
//!     }
//! });
//! assert_eq!(store.get::<Position>(a)?, &Position(1.0));
//!
//! // A graph: `integrate` writes Velocity, `apply` reads it; nothing orders them explicitly,
//! // so they are ordered by insertion order.
//! let mut builder = GraphBuilder::new();
//! builder.add_node(FnNode::new(
//!     "integrate",
//!     Access::new().read::<Gravity>().write::<Velocity>(),
//!     |ctx| {
//!         let g = ctx.resource::<Gravity>()?.0;
//!         ctx.query::<&mut Velocity>()?.for_each(|_, v| v.0 += g);
//!         Ok(())
//!     },
//! ));
//! builder.add_node(FnNode::new(
//!     "apply",
//!     Access::new().read::<Velocity>().write::<Position>(),
//!     |ctx| {
//!         ctx.query::<(&mut Position, &Velocity)>()?.par_for_each(|_, (p, v)| p.0 += v.0);
//!         Ok(())
//!     },
//! ));
//! let mut graph = builder.build()?;
//! graph.run(&mut store)?;
//! store.advance_frame();
//! assert_eq!(store.get::<Position>(a)?, &Position(1.0));
//! assert_eq!(store.get::<Velocity>(a)?, &Velocity(0.0));
//! assert_eq!(graph.last_timings().len(), 2);
//! # Ok(())
//! # }
//! ```

pub mod graph;
pub mod store;

pub use graph::{Access, FnNode, Graph, GraphBuilder, Node, NodeContext, NodeError, NodeId};
pub use store::{CommandBuffer, Entity, Query, Store, StoreError};
