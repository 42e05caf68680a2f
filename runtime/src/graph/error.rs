//! Graph errors: build, frame, node, access.

use std::error::Error;
use std::fmt;

use crate::store::StoreError;

/// Why [`GraphBuilder::build`](super::GraphBuilder::build) rejected a graph.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GraphBuildError {
    /// Two nodes have the same name.
    DuplicateNodeName {
        /// The repeated name.
        name: String,
        /// Insertion index of the first node with it.
        first: usize,
        /// Insertion index of the second.
        second: usize,
    },
    /// An edge names a node id this builder never returned.
    UnknownNode {
        /// The unknown index.
        index: usize,
        /// Number of nodes in the builder.
        node_count: usize,
    },
    /// The edges form a cycle; the nodes on it, in edge order (the first follows the last).
    Cycle {
        /// Node names along the cycle.
        nodes: Vec<String>,
    },
    /// Two nodes write the same type and no path orders them.
    UnorderedWriteConflict {
        /// The node added first.
        a: String,
        /// The node added second.
        b: String,
        /// The type both write.
        type_name: &'static str,
    },
    /// The graph's owner (a pipeline) refused how a node was placed; `fix` says what to do.
    Misplaced {
        /// The node.
        node: String,
        /// What is wrong with its place.
        problem: String,
        /// How to place it instead.
        fix: String,
    },
}

impl fmt::Display for GraphBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DuplicateNodeName {
                name,
                first,
                second,
            } => {
                write!(
                    f,
                    "node name `{name}` is used twice (nodes #{first} and #{second})"
                )
            }
            Self::UnknownNode { index, node_count } => {
                write!(
                    f,
                    "edge names node #{index}, but the builder has {node_count} nodes"
                )
            }
            Self::Cycle { nodes } => {
                write!(f, "dependency cycle: ")?;
                for n in nodes {
                    write!(f, "`{n}` -> ")?;
                }
                match nodes.first() {
                    Some(n) => write!(f, "`{n}`"),
                    None => Ok(()),
                }
            }
            Self::UnorderedWriteConflict { a, b, type_name } => write!(
                f,
                "nodes `{a}` and `{b}` both write `{type_name}` but no edge path orders them"
            ),
            Self::Misplaced { node, problem, fix } => write!(f, "node `{node}`: {problem}; {fix}"),
        }
    }
}

impl Error for GraphBuildError {}

/// A node's own error: any `Error + Send + Sync`, or a message.
pub struct NodeError {
    inner: Box<dyn Error + Send + Sync + 'static>,
}

#[derive(Debug)]
struct Message(String);

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for Message {}

impl NodeError {
    /// An error with a message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            inner: Box::new(Message(message.into())),
        }
    }

    /// Wraps any error (for example a job's `JobError`).
    pub fn from_error(error: impl Error + Send + Sync + 'static) -> Self {
        Self {
            inner: Box::new(error),
        }
    }

    /// The wrapped error.
    pub fn inner(&self) -> &(dyn Error + Send + Sync + 'static) {
        &*self.inner
    }

    /// The wrapped error if it is an `E`.
    pub fn downcast_ref<E: Error + 'static>(&self) -> Option<&E> {
        self.inner.downcast_ref::<E>()
    }

    /// Unwraps the boxed error.
    pub fn into_inner(self) -> Box<dyn Error + Send + Sync + 'static> {
        self.inner
    }
}

impl fmt::Debug for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}

impl fmt::Display for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

impl Error for NodeError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.inner.source()
    }
}

impl From<AccessError> for NodeError {
    fn from(e: AccessError) -> Self {
        Self::from_error(e)
    }
}

impl From<StoreError> for NodeError {
    fn from(e: StoreError) -> Self {
        Self::from_error(e)
    }
}

impl From<String> for NodeError {
    fn from(message: String) -> Self {
        Self::new(message)
    }
}

impl From<&str> for NodeError {
    fn from(message: &str) -> Self {
        Self::new(message)
    }
}

impl From<Box<dyn Error + Send + Sync + 'static>> for NodeError {
    fn from(inner: Box<dyn Error + Send + Sync + 'static>) -> Self {
        Self { inner }
    }
}

/// Why a [`Graph::run`](super::Graph::run) frame stopped.
#[non_exhaustive]
#[derive(Debug)]
pub enum FrameError {
    /// A node returned an error.
    NodeFailed {
        /// The node's name.
        node: String,
        /// Its error.
        error: NodeError,
    },
    /// A node panicked (the panic was caught).
    NodePanicked {
        /// The node's name.
        node: String,
        /// The panic message (or a placeholder if the payload was not a string).
        message: String,
    },
    /// Every node ran, but applying the frame's deferred commands reported failures
    /// ([`StoreError::CommandsFailed`]; the other commands were applied).
    Commands {
        /// The store's report.
        error: StoreError,
    },
}

impl FrameError {
    /// The name of the failing node, if a node failed.
    pub fn node(&self) -> Option<&str> {
        match self {
            Self::NodeFailed { node, .. } | Self::NodePanicked { node, .. } => Some(node),
            Self::Commands { .. } => None,
        }
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NodeFailed { node, error } => write!(f, "node `{node}` failed: {error}"),
            Self::NodePanicked { node, message } => write!(f, "node `{node}` panicked: {message}"),
            Self::Commands { error } => write!(f, "applying deferred commands: {error}"),
        }
    }
}

impl Error for FrameError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::NodeFailed { error, .. } => Some(error),
            Self::NodePanicked { .. } => None,
            Self::Commands { error } => Some(error),
        }
    }
}

/// Whether an access was for reading or writing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessKind {
    /// `&T`.
    Read,
    /// `&mut T`.
    Write,
}

impl fmt::Display for AccessKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Read => "read",
            Self::Write => "write",
        })
    }
}

/// A refused access from a [`NodeContext`](super::NodeContext).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub enum AccessError {
    /// The node did not declare this access in [`Node::access`](super::Node::access).
    Undeclared {
        /// The node's name.
        node: String,
        /// The type.
        type_name: &'static str,
        /// What was attempted.
        kind: AccessKind,
    },
    /// A live borrow conflicts (only possible if some node's declaration was wrong, or a node
    /// holds two conflicting guards itself).
    BorrowConflict {
        /// The node's name.
        node: String,
        /// The type.
        type_name: &'static str,
        /// What was attempted.
        kind: AccessKind,
    },
    /// The store refused (query aliasing, missing resource, no scoped slice, …).
    Store {
        /// The node's name.
        node: String,
        /// The store's error.
        error: StoreError,
    },
}

impl fmt::Display for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Undeclared {
                node,
                type_name,
                kind,
            } => write!(
                f,
                "node `{node}` tried to {kind} `{type_name}` without declaring it in its access set"
            ),
            Self::BorrowConflict {
                node,
                type_name,
                kind,
            } => write!(
                f,
                "node `{node}` cannot {kind} `{type_name}`: a conflicting borrow is live"
            ),
            Self::Store { node, error } => write!(f, "node `{node}`: {error}"),
        }
    }
}

impl Error for AccessError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::Store { error, .. } => Some(error),
            _ => None,
        }
    }
}
