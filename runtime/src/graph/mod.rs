//! An explicit dependency graph of jobs, executed on rayon.
//!
//! Nodes declare what they read and write ([`Access`]). [`GraphBuilder::build`] checks the graph
//! once: cycles are rejected, two writers of one type with no path between them are rejected, and
//! a reader and a writer of one type with no path between them are ordered automatically **by
//! insertion order** (the node added first runs first). [`Graph::run`] then runs every frame by
//! counting down dependencies: nodes whose predecessors are done run concurrently; inside a node
//! the work may itself be data-parallel (`par_for_each_chunk`).
//!
//! Nodes reach the store only through a [`NodeContext`], which checks every access against the
//! declaration and takes run-time borrow flags, so a node that lies about its access gets an
//! error, never undefined behaviour.

mod access;
mod builder;
mod context;
mod error;
mod executor;

use std::fmt;
use std::time::Duration;

pub use access::Access;
pub use builder::GraphBuilder;
pub use context::NodeContext;
pub use error::{AccessError, AccessKind, FrameError, GraphBuildError, NodeError};
pub use executor::Graph;

/// The id of a node: its insertion index in the [`GraphBuilder`].
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    /// The insertion index of the node.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node#{}", self.0)
    }
}

/// A job in the graph.
pub trait Node: Send {
    /// Unique name (used in errors and timings).
    fn name(&self) -> &str;
    /// What the node reads and writes; asked once, at build.
    fn access(&self) -> Access;
    /// Runs the node for one frame.
    ///
    /// # Errors
    /// Any [`NodeError`]; it stops the frame (see [`Graph::run`]).
    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError>;
}

/// A node made from a closure.
///
/// ```
/// use sinew_runtime::graph::{Access, FnNode, GraphBuilder};
/// let mut b = GraphBuilder::new();
/// b.add_node(FnNode::new("noop", Access::new(), |_ctx| Ok(())));
/// assert!(b.build().is_ok());
/// ```
pub struct FnNode<F> {
    name: String,
    access: Access,
    f: F,
}

impl<F> FnNode<F>
where
    F: FnMut(&NodeContext<'_>) -> Result<(), NodeError> + Send,
{
    /// A node named `name` with `access`, running `f` each frame.
    pub fn new(name: impl Into<String>, access: Access, f: F) -> Self {
        Self {
            name: name.into(),
            access,
            f,
        }
    }
}

impl<F> fmt::Debug for FnNode<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnNode")
            .field("name", &self.name)
            .field("access", &self.access)
            .finish()
    }
}

impl<F> Node for FnNode<F>
where
    F: FnMut(&NodeContext<'_>) -> Result<(), NodeError> + Send,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn access(&self) -> Access {
        self.access.clone()
    }

    fn run(&mut self, ctx: &NodeContext<'_>) -> Result<(), NodeError> {
        (self.f)(ctx)
    }
}

/// How long a node ran in the last frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeTiming {
    /// The node's name.
    pub name: String,
    /// Wall time of its `run` (zero if it did not run).
    pub duration: Duration,
    /// When it started, relative to the start of the frame.
    pub started_at_offset: Duration,
    /// False if the node did not run (the frame stopped before it).
    pub ran: bool,
}

#[cfg(test)]
mod tests;
