//! [`Graph`]: runs the nodes each frame on rayon by counting down dependencies.

use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use bumpalo::Bump;

use super::context::NodeContext;
use super::{Access, FrameError, Node, NodeError, NodeId, NodeTiming};
use crate::store::{ApplyReport, CommandBuffer, SlotHint, Store, StoreError};

/// A node that took less than this last frame is light: it runs on the thread that made it
/// ready instead of being handed to another (see [`Frame::make_ready`]). About the cost of a
/// hand-off that wakes a sleeping worker.
const LIGHT: Duration = Duration::from_micros(5);

struct Slot {
    node: Box<dyn Node>,
    scratch: Bump,
    timing: Option<(Duration, Duration)>,
}

/// A checked graph, built by [`GraphBuilder::build`](super::GraphBuilder::build).
pub struct Graph {
    slots: Vec<Mutex<Slot>>,
    names: Vec<String>,
    accesses: Vec<Access>,
    /// Per node, the borrow flag slot of each declared type (kept across frames).
    hints: Vec<Box<[SlotHint]>>,
    successors: Vec<Vec<usize>>,
    successor_ids: Vec<Vec<NodeId>>,
    in_degree: Vec<usize>,
    /// Nodes without predecessors, in insertion order.
    roots: Vec<usize>,
    /// Per-frame countdown of unfinished predecessors, kept between frames to avoid allocating.
    remaining: Vec<AtomicUsize>,
    /// Per node, whether it ran in under [`LIGHT`] last frame (none before the first).
    light: Vec<bool>,
    commands: CommandBuffer,
    /// Node indices in dependency order (Kahn's algorithm, ties in insertion order): the order
    /// of [`Graph::last_timings`].
    order: Vec<usize>,
    timings: Vec<NodeTiming>,
    frame_time: Duration,
    last_report: Option<ApplyReport>,
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph")
            .field("nodes", &self.names)
            .field("successors", &self.successors)
            .finish()
    }
}

enum Failure {
    Error(NodeError),
    Panic(String),
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic payload>".to_owned()
    }
}

/// The ready nodes a thread keeps for itself: light ones (a bounded stack) and one heavy one.
#[derive(Default)]
struct Ready {
    light: LightStack,
    heavy: Option<usize>,
}

impl Ready {
    fn heavy(i: usize) -> Self {
        Self {
            heavy: Some(i),
            ..Self::default()
        }
    }
}

/// Up to 16 light nodes, kept inline (no allocation per frame); a full stack hands the node
/// back, to be spawned.
#[derive(Default)]
struct LightStack {
    nodes: [usize; 16],
    len: usize,
}

impl LightStack {
    fn push(&mut self, i: usize) -> Result<(), usize> {
        let slot = self.nodes.get_mut(self.len).ok_or(i)?;
        *slot = i;
        self.len += 1;
        Ok(())
    }

    fn pop(&mut self) -> Option<usize> {
        self.len = self.len.checked_sub(1)?;
        self.nodes.get(self.len).copied()
    }
}

/// State shared by the tasks of one frame.
struct Frame<'g> {
    graph_slots: &'g [Mutex<Slot>],
    names: &'g [String],
    accesses: &'g [Access],
    hints: &'g [Box<[SlotHint]>],
    successors: &'g [Vec<usize>],
    /// Per node, predecessors not yet done (reset from the in-degrees by [`Graph::run`]).
    remaining: &'g [AtomicUsize],
    light: &'g [bool],
    stop: AtomicBool,
    failure: Mutex<Option<(usize, Failure)>>,
    store: &'g Store,
    commands: &'g CommandBuffer,
    start: Instant,
}

impl<'g> Frame<'g> {
    /// Runs the nodes of `ready` and keeps going on this thread with those their completion
    /// makes ready, as [`Frame::make_ready`] sorts them: a chain of nodes runs on one thread,
    /// without a task and a hand-off per node. Which thread runs a node never changes what it
    /// computes (its inputs are complete when it becomes ready), and every node still starts
    /// only after all of its predecessors.
    fn run_ready<'s>(&'s self, scope: &rayon::Scope<'s>, mut ready: Ready) {
        // Light nodes first: they delay the heavy one by little, and their successors may be
        // heavy nodes that other threads can start meanwhile.
        while let Some(i) = ready.light.pop().or_else(|| ready.heavy.take()) {
            if self.stop.load(Ordering::Acquire) || !self.run_node(i) {
                return;
            }
            for &s in &self.successors[i] {
                if self.remaining[s].fetch_sub(1, Ordering::AcqRel) == 1 {
                    self.make_ready(scope, &mut ready, s);
                }
            }
        }
    }

    /// Node `i` is ready. A light one (it took less than [`LIGHT`] last frame) stays on this
    /// thread, where it costs less than a hand-off to another (a task, and waking a sleeping
    /// worker); of the heavy ones this thread keeps the last, and the others are spawned for
    /// idle threads to take (the earliest first: successors are sorted).
    fn make_ready<'s>(&'s self, scope: &rayon::Scope<'s>, ready: &mut Ready, i: usize) {
        let i = if self.light[i] {
            match ready.light.push(i) {
                Ok(()) => return,
                Err(full) => full,
            }
        } else {
            match ready.heavy.replace(i) {
                Some(earlier) => earlier,
                None => return,
            }
        };
        scope.spawn(move |scope| self.run_ready(scope, Ready::heavy(i)));
    }

    /// Runs node `i`; on an error or panic records it, raises `stop`, and returns false.
    fn run_node(&self, i: usize) -> bool {
        let outcome = {
            let mut guard = self.graph_slots[i]
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let slot = &mut *guard;
            slot.scratch.reset();
            let ctx = NodeContext {
                store: self.store,
                name: &self.names[i],
                access: &self.accesses[i],
                hints: &self.hints[i],
                commands: self.commands,
                scratch: &slot.scratch,
            };
            let t0 = Instant::now();
            let node = &mut slot.node;
            let result = catch_unwind(AssertUnwindSafe(|| node.run(&ctx)));
            slot.timing = Some((t0.duration_since(self.start), t0.elapsed()));
            result
        };
        let failure = match outcome {
            Ok(Ok(())) => return true,
            Ok(Err(e)) => Failure::Error(e),
            Err(payload) => Failure::Panic(panic_message(&*payload)),
        };
        self.stop.store(true, Ordering::Release);
        let mut slot = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
        // Keep the failure of the lowest node index, for a deterministic report.
        if slot.as_ref().is_none_or(|(j, _)| i < *j) {
            *slot = Some((i, failure));
        }
        false
    }
}

impl Graph {
    pub(crate) fn new(
        nodes: Vec<Box<dyn Node>>,
        names: Vec<String>,
        accesses: Vec<Access>,
        successors: Vec<Vec<usize>>,
    ) -> Self {
        let mut in_degree = vec![0; nodes.len()];
        for ss in &successors {
            for &s in ss {
                in_degree[s] += 1;
            }
        }
        let roots = (0..nodes.len()).filter(|&i| in_degree[i] == 0).collect();
        let remaining = in_degree.iter().map(|&d| AtomicUsize::new(d)).collect();
        let successor_ids = successors
            .iter()
            .map(|ss| ss.iter().map(|&s| NodeId(s as u32)).collect())
            .collect();
        let order = dependency_order(&successors, &in_degree);
        let timings = order
            .iter()
            .map(|&i| NodeTiming {
                name: names[i].clone(),
                duration: Duration::ZERO,
                started_at_offset: Duration::ZERO,
                ran: false,
            })
            .collect();
        Self {
            slots: nodes
                .into_iter()
                .map(|node| {
                    Mutex::new(Slot {
                        node,
                        scratch: Bump::new(),
                        timing: None,
                    })
                })
                .collect(),
            names,
            hints: accesses
                .iter()
                .map(|a| (0..a.declarations()).map(|_| SlotHint::new()).collect())
                .collect(),
            accesses,
            successors,
            successor_ids,
            light: vec![false; in_degree.len()],
            in_degree,
            roots,
            remaining,
            commands: CommandBuffer::new(),
            order,
            timings,
            frame_time: Duration::ZERO,
            last_report: None,
        }
    }

    /// Runs one frame: every node once, each after all of its predecessors (explicit edges and
    /// the read/write orderings added at build), ready nodes concurrently on the current rayon
    /// pool. Then applies the commands recorded into [`Graph::commands`].
    ///
    /// A thread that finishes a node goes on with the successors this made ready that took
    /// under 5 µs last frame (light nodes: handing them to another thread would cost more),
    /// then with the last of the others, and spawns rayon tasks only for the rest; so a chain
    /// of nodes runs on one thread without a hand-off per node, and a small crowd's cheap nodes
    /// do not wait for a worker to wake. The roots are spawned, except the last, which starts
    /// on the calling thread: a root wakes an idle worker at the start of the frame, which is
    /// then awake when a heavy node splits its work. Results do not depend on this: a node
    /// starts only once its inputs are complete.
    ///
    /// A node that returns an error or panics stops the frame: no new node starts, running ones
    /// finish, the commands recorded during the frame are discarded, and the error names the
    /// node (if several fail concurrently, the one added first is reported).
    ///
    /// # Errors
    /// [`FrameError::NodeFailed`], [`FrameError::NodePanicked`], or [`FrameError::Commands`] if
    /// some deferred commands failed (the others were applied; see
    /// [`Graph::last_apply_report`]).
    pub fn run(&mut self, store: &mut Store) -> Result<(), FrameError> {
        let start = Instant::now();
        for slot in &mut self.slots {
            slot.get_mut()
                .unwrap_or_else(PoisonError::into_inner)
                .timing = None;
        }
        for (r, &d) in self.remaining.iter_mut().zip(&self.in_degree) {
            *r.get_mut() = d;
        }
        let frame = Frame {
            graph_slots: &self.slots,
            names: &self.names,
            accesses: &self.accesses,
            hints: &self.hints,
            successors: &self.successors,
            remaining: &self.remaining,
            light: &self.light,
            stop: AtomicBool::new(false),
            failure: Mutex::new(None),
            store,
            commands: &self.commands,
            start,
        };
        rayon::scope(|scope| {
            let frame = &frame;
            // Roots are spawned, light or not, except the last: an idle worker wakes for them
            // at the start of the frame and is awake when a heavy node splits its work.
            if let Some((&last, others)) = self.roots.split_last() {
                for &r in others {
                    scope.spawn(move |scope| frame.run_ready(scope, Ready::heavy(r)));
                }
                frame.run_ready(scope, Ready::heavy(last));
            }
        });
        let failure = frame
            .failure
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        for (&i, timing) in self.order.iter().zip(&mut self.timings) {
            let t = self.slots[i]
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner)
                .timing;
            timing.ran = t.is_some();
            let (started, duration) = t.unwrap_or_default();
            self.light[i] = t.is_some() && duration < LIGHT;
            timing.started_at_offset = started;
            timing.duration = duration;
        }
        if let Some((i, f)) = failure {
            self.commands.clear();
            self.last_report = None;
            self.frame_time = start.elapsed();
            let node = self.names[i].clone();
            return Err(match f {
                Failure::Error(error) => FrameError::NodeFailed { node, error },
                Failure::Panic(message) => FrameError::NodePanicked { node, message },
            });
        }
        let applied = store.apply_commands(&self.commands);
        self.frame_time = start.elapsed();
        match applied {
            Ok(report) => {
                self.last_report = Some(report);
                Ok(())
            }
            Err(StoreError::CommandsFailed { report }) => {
                self.last_report = Some((*report).clone());
                Err(FrameError::Commands {
                    error: StoreError::CommandsFailed { report },
                })
            }
            Err(error) => Err(FrameError::Commands { error }),
        }
    }

    /// The deferred command buffer nodes record into ([`NodeContext::commands`]); applied at the
    /// end of each successful [`Graph::run`].
    pub fn commands(&self) -> &CommandBuffer {
        &self.commands
    }

    /// The report of the commands applied at the end of the last successful frame.
    pub fn last_apply_report(&self) -> Option<&ApplyReport> {
        self.last_report.as_ref()
    }

    /// Per-node timings of the last frame, in dependency order: every node after its
    /// predecessors, nodes that could run in either order in insertion order. The order is
    /// fixed at build, so entries line up frame after frame.
    pub fn last_timings(&self) -> &[NodeTiming] {
        &self.timings
    }

    /// Wall time of the last frame (nodes and command application).
    pub fn last_frame_time(&self) -> Duration {
        self.frame_time
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True if the graph has no node.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The id of the node named `name`.
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|i| NodeId(i as u32))
    }

    /// The name of a node.
    pub fn node_name(&self, id: NodeId) -> Option<&str> {
        self.names.get(id.index()).map(String::as_str)
    }

    /// The nodes that wait for `id` (explicit edges plus the read/write orderings added at build).
    pub fn successors(&self, id: NodeId) -> &[NodeId] {
        self.successor_ids
            .get(id.index())
            .map_or(&[], Vec::as_slice)
    }

    /// Every node's id, in insertion order.
    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.names.len()).map(|i| NodeId(i as u32))
    }

    /// What a node declared it reads and writes.
    pub fn access(&self, id: NodeId) -> Option<&Access> {
        self.accesses.get(id.index())
    }

    /// Whether `before` always finishes before `after` starts (a path of edges or orderings
    /// leads from one to the other).
    pub fn runs_before(&self, before: NodeId, after: NodeId) -> bool {
        let (from, to) = (before.index(), after.index());
        if from >= self.successors.len() || from == to {
            return false;
        }
        let mut seen = vec![false; self.successors.len()];
        let mut stack = vec![from];
        while let Some(u) = stack.pop() {
            for &s in &self.successors[u] {
                if s == to {
                    return true;
                }
                if !std::mem::replace(&mut seen[s], true) {
                    stack.push(s);
                }
            }
        }
        false
    }

    /// The ordering edges `(before, after)` by node name, without those a longer path already
    /// implies (the transitive reduction), sources in dependency order: what a reader needs to
    /// see of the graph.
    pub fn edges(&self) -> Vec<(&str, &str)> {
        let n = self.names.len();
        // reach[u][v]: v runs after u.
        let mut reach = vec![vec![false; n]; n];
        for &u in self.order.iter().rev() {
            for &s in &self.successors[u] {
                reach[u][s] = true;
                let after_s = reach[s].clone();
                for (r, t) in reach[u].iter_mut().zip(after_s) {
                    *r |= t;
                }
            }
        }
        let mut edges = Vec::new();
        for &u in &self.order {
            let mut direct: Vec<usize> = self.successors[u]
                .iter()
                .copied()
                .filter(|&v| !self.successors[u].iter().any(|&w| w != v && reach[w][v]))
                .collect();
            direct.sort_by_key(|v| self.order.iter().position(|o| o == v));
            edges.extend(
                direct
                    .into_iter()
                    .map(|v| (self.names[u].as_str(), self.names[v].as_str())),
            );
        }
        edges
    }

    /// The graph in Graphviz DOT: every node, and the edges of [`Graph::edges`].
    pub fn to_dot(&self) -> String {
        let quote = |name: &str| format!("\"{}\"", name.replace('\\', "\\\\").replace('"', "\\\""));
        let mut out = String::from("digraph frame {\n    rankdir=LR;\n");
        for &i in &self.order {
            out += &format!("    {};\n", quote(&self.names[i]));
        }
        for (a, b) in self.edges() {
            out += &format!("    {} -> {};\n", quote(a), quote(b));
        }
        out + "}\n"
    }
}

impl fmt::Display for Graph {
    /// One line per ordering edge (`before -> after`, as [`Graph::edges`]), then nodes that
    /// have none.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let edges = self.edges();
        for (a, b) in &edges {
            writeln!(f, "{a} -> {b}")?;
        }
        for &i in &self.order {
            let name = self.names[i].as_str();
            if !edges.iter().any(|(a, b)| *a == name || *b == name) {
                writeln!(f, "{name}")?;
            }
        }
        Ok(())
    }
}

/// Node indices with every node after its predecessors; among ready nodes the first inserted
/// goes first. `successors` form a DAG (checked at build).
fn dependency_order(successors: &[Vec<usize>], in_degree: &[usize]) -> Vec<usize> {
    let mut remaining = in_degree.to_vec();
    let mut ready: std::collections::BTreeSet<usize> = (0..remaining.len())
        .filter(|&i| remaining[i] == 0)
        .collect();
    let mut order = Vec::with_capacity(remaining.len());
    while let Some(i) = ready.pop_first() {
        order.push(i);
        for &s in &successors[i] {
            remaining[s] -= 1;
            if remaining[s] == 0 {
                ready.insert(s);
            }
        }
    }
    order
}
