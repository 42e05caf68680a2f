//! [`GraphBuilder`]: collects nodes and edges, checks them, and builds a [`Graph`].

use std::fmt;

use hashbrown::HashMap;

use super::executor::Graph;
use super::{Access, GraphBuildError, Node, NodeId};

/// Builds a [`Graph`]. See the [module docs](super) for the rules `build` checks.
///
/// ```
/// use sinew_runtime::graph::{Access, FnNode, GraphBuilder, GraphBuildError};
/// struct Pose;
/// let mut b = GraphBuilder::new();
/// let x = b.add_node(FnNode::new("a", Access::new().write::<Pose>(), |_| Ok(())));
/// let y = b.add_node(FnNode::new("b", Access::new().write::<Pose>(), |_| Ok(())));
/// // Both write `Pose` and nothing orders them:
/// assert!(matches!(b.build(), Err(GraphBuildError::UnorderedWriteConflict { .. })));
/// ```
#[derive(Default)]
pub struct GraphBuilder {
    nodes: Vec<Box<dyn Node>>,
    edges: Vec<(NodeId, NodeId)>,
}

impl fmt::Debug for GraphBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphBuilder")
            .field(
                "nodes",
                &self
                    .nodes
                    .iter()
                    .map(|n| n.name().to_owned())
                    .collect::<Vec<_>>(),
            )
            .field("edges", &self.edges)
            .finish()
    }
}

/// Bit matrix row: which nodes are reachable.
type Bits = Vec<u64>;

fn bit(bits: &Bits, j: usize) -> bool {
    bits[j / 64] & (1 << (j % 64)) != 0
}

fn set(bits: &mut Bits, j: usize) {
    bits[j / 64] |= 1 << (j % 64);
}

fn or_into(dst: &mut Bits, src: &Bits) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d |= s;
    }
}

impl GraphBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a node (its id is its insertion index). Names must be unique: a repeated name is
    /// reported by [`GraphBuilder::build`].
    pub fn add_node(&mut self, node: impl Node + 'static) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(Box::new(node));
        id
    }

    /// Adds an edge: `after` runs only once `before` is done. Ids not returned by this builder
    /// are reported by [`GraphBuilder::build`].
    pub fn add_edge(&mut self, before: NodeId, after: NodeId) -> &mut Self {
        self.edges.push((before, after));
        self
    }

    /// The id of the node named `name`.
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.nodes
            .iter()
            .position(|n| n.name() == name)
            .map(|i| NodeId(i as u32))
    }

    /// Number of nodes added.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True if no node was added.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Checks and builds the graph.
    ///
    /// # Errors
    /// [`GraphBuildError::DuplicateNodeName`], [`GraphBuildError::UnknownNode`],
    /// [`GraphBuildError::Cycle`] (naming the nodes on one cycle),
    /// [`GraphBuildError::UnorderedWriteConflict`].
    pub fn build(self) -> Result<Graph, GraphBuildError> {
        let n = self.nodes.len();
        let names: Vec<String> = self
            .nodes
            .iter()
            .map(|node| node.name().to_owned())
            .collect();
        {
            let mut seen: HashMap<&str, usize> = HashMap::new();
            for (i, name) in names.iter().enumerate() {
                if let Some(&first) = seen.get(name.as_str()) {
                    return Err(GraphBuildError::DuplicateNodeName {
                        name: name.clone(),
                        first,
                        second: i,
                    });
                }
                seen.insert(name, i);
            }
        }
        let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(a, b) in &self.edges {
            for id in [a, b] {
                if id.index() >= n {
                    return Err(GraphBuildError::UnknownNode {
                        index: id.index(),
                        node_count: n,
                    });
                }
            }
            if a == b {
                return Err(GraphBuildError::Cycle {
                    nodes: vec![names[a.index()].clone()],
                });
            }
            if !succ[a.index()].contains(&b.index()) {
                succ[a.index()].push(b.index());
            }
        }
        let order = topo_order(&succ).map_err(|cycle| GraphBuildError::Cycle {
            nodes: cycle.into_iter().map(|i| names[i].clone()).collect(),
        })?;

        // reach[i]: nodes reachable from i by one or more edges.
        let words = n.div_ceil(64).max(1);
        let mut reach: Vec<Bits> = vec![vec![0; words]; n];
        for &i in order.iter().rev() {
            let mut r = vec![0; words];
            for &s in &succ[i] {
                set(&mut r, s);
                or_into(&mut r, &reach[s]);
            }
            reach[i] = r;
        }
        let ordered = |reach: &[Bits], i: usize, j: usize| bit(&reach[i], j) || bit(&reach[j], i);

        let accesses: Vec<Access> = self.nodes.iter().map(|node| node.access()).collect();
        // Two writers of one type must be ordered by explicit edges.
        for i in 0..n {
            for j in i + 1..n {
                if ordered(&reach, i, j) {
                    continue;
                }
                if let Some(&(_, type_name)) = accesses[i]
                    .write_entries()
                    .iter()
                    .find(|w| accesses[j].can_write(w.0))
                {
                    return Err(GraphBuildError::UnorderedWriteConflict {
                        a: names[i].clone(),
                        b: names[j].clone(),
                        type_name,
                    });
                }
            }
        }
        // A reader and a writer of one type: ordered by insertion order.
        for i in 0..n {
            for j in i + 1..n {
                if ordered(&reach, i, j) {
                    continue;
                }
                let conflict = accesses[i]
                    .write_entries()
                    .iter()
                    .any(|w| accesses[j].can_read(w.0))
                    || accesses[i]
                        .read_entries()
                        .iter()
                        .any(|r| accesses[j].can_write(r.0));
                if !conflict {
                    continue;
                }
                succ[i].push(j);
                // Every node reaching i (and i itself) now reaches j and everything after j.
                let mut add = reach[j].clone();
                set(&mut add, j);
                for (a, row) in reach.iter_mut().enumerate() {
                    if a == i || bit(row, i) {
                        or_into(row, &add);
                    }
                }
            }
        }
        for s in &mut succ {
            s.sort_unstable();
        }
        Ok(Graph::new(self.nodes, names, accesses, succ))
    }
}

/// Kahn's algorithm; on a cycle returns the nodes of one cycle in edge order.
fn topo_order(succ: &[Vec<usize>]) -> Result<Vec<usize>, Vec<usize>> {
    let n = succ.len();
    let mut indegree = vec![0usize; n];
    let mut pred: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (a, ss) in succ.iter().enumerate() {
        for &b in ss {
            indegree[b] += 1;
            pred[b].push(a);
        }
    }
    let mut ready: Vec<usize> = (0..n).rev().filter(|&i| indegree[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(i) = ready.pop() {
        order.push(i);
        for &s in &succ[i] {
            indegree[s] -= 1;
            if indegree[s] == 0 {
                ready.push(s);
            }
        }
    }
    if order.len() == n {
        return Ok(order);
    }
    // Every node left has a predecessor that is also left: walk predecessors until one repeats.
    let left: Vec<bool> = indegree.iter().map(|&d| d > 0).collect();
    let Some(start) = left.iter().position(|&l| l) else {
        return Ok(order);
    };
    let mut path = vec![start];
    let mut at = vec![usize::MAX; n];
    at[start] = 0;
    let mut cur = start;
    loop {
        let Some(&p) = pred[cur].iter().filter(|&&p| left[p]).min() else {
            return Err(path);
        };
        if at[p] != usize::MAX {
            let mut cycle = path[at[p]..].to_vec();
            cycle.reverse();
            return Err(cycle);
        }
        at[p] = path.len();
        path.push(p);
        cur = p;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topo_and_cycle() {
        assert_eq!(topo_order(&[vec![1], vec![2], vec![]]), Ok(vec![0, 1, 2]));
        // 0 -> 1 -> 2 -> 1, 2 -> 3
        let is_cycle = |succ: &[Vec<usize>], c: &[usize]| {
            (0..c.len()).all(|k| succ[c[k]].contains(&c[(k + 1) % c.len()]))
        };
        let g = [vec![1], vec![2], vec![1, 3], vec![]];
        let err = topo_order(&g).unwrap_err();
        assert_eq!(err.len(), 2);
        assert!(is_cycle(&g, &err), "{err:?}");
        let g = [vec![1], vec![2], vec![0]];
        let err = topo_order(&g).unwrap_err();
        assert_eq!(err.len(), 3);
        assert!(is_cycle(&g, &err), "{err:?}");
    }
}
