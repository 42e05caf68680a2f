//! Random DAGs run every node exactly once, after all of its predecessors; random cycles are
//! rejected naming nodes on the cycle.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use sinew_runtime::graph::{Access, FnNode, GraphBuildError, GraphBuilder};
use sinew_runtime::store::Store;

/// A DAG over `n` nodes: edges (i, j) with i < j in a shuffled labelling.
fn dag() -> impl Strategy<Value = (usize, Vec<usize>, Vec<(usize, usize)>)> {
    (1usize..14).prop_flat_map(|n| {
        let perm = Just((0..n).collect::<Vec<_>>()).prop_shuffle();
        let edges = proptest::collection::vec((0..n, 0..n), 0..n * 2);
        (Just(n), perm, edges).prop_map(|(n, perm, raw)| {
            let edges = raw
                .into_iter()
                .filter(|(a, b)| a != b)
                .map(|(a, b)| {
                    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
                    (perm[lo], perm[hi])
                })
                .collect();
            (n, perm, edges)
        })
    })
}

struct Record {
    clock: AtomicUsize,
    start: Vec<AtomicUsize>,
    end: Vec<AtomicUsize>,
    runs: Vec<AtomicUsize>,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_dags_run_in_dependency_order((n, _perm, edges) in dag(), threads in 1usize..5) {
        let rec = Arc::new(Record {
            clock: AtomicUsize::new(0),
            start: (0..n).map(|_| AtomicUsize::new(usize::MAX)).collect(),
            end: (0..n).map(|_| AtomicUsize::new(usize::MAX)).collect(),
            runs: (0..n).map(|_| AtomicUsize::new(0)).collect(),
        });
        let mut b = GraphBuilder::new();
        let ids: Vec<_> = (0..n)
            .map(|i| {
                let rec = Arc::clone(&rec);
                b.add_node(FnNode::new(format!("n{i}"), Access::new(), move |_| {
                    rec.start[i].store(rec.clock.fetch_add(1, Ordering::SeqCst), Ordering::SeqCst);
                    rec.runs[i].fetch_add(1, Ordering::SeqCst);
                    std::hint::spin_loop();
                    rec.end[i].store(rec.clock.fetch_add(1, Ordering::SeqCst), Ordering::SeqCst);
                    Ok(())
                }))
            })
            .collect();
        for &(a, c) in &edges {
            b.add_edge(ids[a], ids[c]);
        }
        let mut graph = b.build().unwrap();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let mut store = Store::new();
        for frame in 1..=3 {
            pool.install(|| graph.run(&mut store)).unwrap();
            for i in 0..n {
                prop_assert_eq!(rec.runs[i].load(Ordering::SeqCst), frame, "node {} ran once per frame", i);
            }
            for &(a, c) in &edges {
                prop_assert!(
                    rec.end[a].load(Ordering::SeqCst) < rec.start[c].load(Ordering::SeqCst),
                    "edge n{} -> n{} violated", a, c
                );
            }
        }
        prop_assert!(graph.last_timings().iter().all(|t| t.ran));
    }

    #[test]
    fn random_cycles_are_rejected((n, perm, edges) in dag(), pick in any::<usize>()) {
        prop_assume!(!edges.is_empty());
        let _ = (n, perm);
        // close a cycle: the edge (a, c) plus a back edge (c, a)
        let (a, c) = edges[pick % edges.len()];
        let mut b = GraphBuilder::new();
        let ids: Vec<_> = (0..n)
            .map(|i| b.add_node(FnNode::new(format!("n{i}"), Access::new(), |_| Ok(()))))
            .collect();
        for &(x, y) in &edges {
            b.add_edge(ids[x], ids[y]);
        }
        b.add_edge(ids[c], ids[a]);
        let mut all = edges.clone();
        all.push((c, a));
        match b.build() {
            Err(GraphBuildError::Cycle { nodes }) => {
                let idx: Vec<usize> = nodes.iter().map(|s| s[1..].parse().unwrap()).collect();
                prop_assert!(idx.contains(&a) && idx.contains(&c), "{:?}", nodes);
                for k in 0..idx.len() {
                    let edge = (idx[k], idx[(k + 1) % idx.len()]);
                    prop_assert!(all.contains(&edge), "{:?} is not an edge of the cycle {:?}", edge, nodes);
                }
            }
            other => prop_assert!(false, "expected a cycle error, got {:?}", other.map(|_| ())),
        }
    }
}
