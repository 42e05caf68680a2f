//! Unit tests of the graph builder and executor.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::store::{Entity, ScopedSlice, Store, StoreError};

#[derive(Debug, Clone, Copy, PartialEq)]
struct Pos(f32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Vel(f32);
#[derive(Debug)]
struct Counter(usize);

type Log = Arc<Mutex<Vec<&'static str>>>;

fn logging(name: &'static str, access: Access, log: &Log) -> impl Node + 'static {
    let log = Arc::clone(log);
    FnNode::new(name, access, move |_ctx| {
        log.lock().unwrap().push(name);
        Ok(())
    })
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

#[test]
fn chain_runs_in_order_every_frame() {
    let log: Log = Arc::default();
    let mut b = GraphBuilder::new();
    let c = b.add_node(logging("c", Access::new(), &log));
    let a = b.add_node(logging("a", Access::new(), &log));
    let m = b.add_node(logging("b", Access::new(), &log));
    b.add_edge(a, m).add_edge(m, c);
    assert_eq!(b.node_id("b"), Some(m));
    let mut g = b.build().unwrap();
    let mut store = Store::new();
    for _ in 0..3 {
        g.run(&mut store).unwrap();
    }
    assert_eq!(
        *log.lock().unwrap(),
        ["a", "b", "c", "a", "b", "c", "a", "b", "c"]
    );
    assert_eq!(g.successors(a), &[m]);
    assert_eq!(g.node_name(c), Some("c"));
    assert_eq!(g.node_id("a"), Some(a));
    assert_eq!(g.len(), 3);
    // timings follow the dependency order, not the insertion order (c, a, b)
    let names: Vec<&str> = g.last_timings().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
}

#[test]
fn cycles_are_rejected_with_their_nodes() {
    let log: Log = Arc::default();
    let mut b = GraphBuilder::new();
    let x = b.add_node(logging("x", Access::new(), &log));
    let y = b.add_node(logging("y", Access::new(), &log));
    let z = b.add_node(logging("z", Access::new(), &log));
    let w = b.add_node(logging("w", Access::new(), &log));
    b.add_edge(w, x)
        .add_edge(x, y)
        .add_edge(y, z)
        .add_edge(z, x);
    let err = b.build().unwrap_err();
    let GraphBuildError::Cycle { nodes } = &err else {
        panic!("{err}")
    };
    let mut sorted = nodes.clone();
    sorted.sort();
    assert_eq!(sorted, ["x", "y", "z"]);
    assert!(err.to_string().contains("cycle"), "{err}");

    let mut b = GraphBuilder::new();
    let x = b.add_node(logging("self", Access::new(), &log));
    b.add_edge(x, x);
    assert!(matches!(b.build(), Err(GraphBuildError::Cycle { nodes }) if nodes == ["self"]));
}

#[test]
fn duplicate_names_and_unknown_ids() {
    let log: Log = Arc::default();
    let mut b = GraphBuilder::new();
    b.add_node(logging("n", Access::new(), &log));
    b.add_node(logging("n", Access::new(), &log));
    assert!(matches!(
        b.build(),
        Err(GraphBuildError::DuplicateNodeName { name, first: 0, second: 1 }) if name == "n"
    ));
    let mut b = GraphBuilder::new();
    let n = b.add_node(logging("n", Access::new(), &log));
    b.add_edge(n, NodeId(7));
    assert!(matches!(
        b.build(),
        Err(GraphBuildError::UnknownNode {
            index: 7,
            node_count: 1
        })
    ));
}

#[test]
fn unordered_writers_are_rejected() {
    let log: Log = Arc::default();
    let mut b = GraphBuilder::new();
    b.add_node(logging("w1", Access::new().write::<Pos>(), &log));
    b.add_node(logging("r", Access::new().read::<Vel>(), &log));
    b.add_node(logging(
        "w2",
        Access::new().read::<Vel>().write::<Pos>(),
        &log,
    ));
    let err = b.build().unwrap_err();
    assert_eq!(
        err,
        GraphBuildError::UnorderedWriteConflict {
            a: "w1".into(),
            b: "w2".into(),
            type_name: std::any::type_name::<Pos>(),
        }
    );
    assert!(err.to_string().contains("w1") && err.to_string().contains("Pos"));

    // an indirect path orders them
    let mut b = GraphBuilder::new();
    let w1 = b.add_node(logging("w1", Access::new().write::<Pos>(), &log));
    let mid = b.add_node(logging("mid", Access::new(), &log));
    let w2 = b.add_node(logging("w2", Access::new().write::<Pos>(), &log));
    b.add_edge(w2, mid).add_edge(mid, w1);
    let mut g = b.build().unwrap();
    g.run(&mut Store::new()).unwrap();
    assert_eq!(*log.lock().unwrap(), ["w2", "mid", "w1"]);
}

#[test]
fn read_write_conflicts_are_ordered_by_insertion() {
    for _ in 0..20 {
        let log: Log = Arc::default();
        let mut b = GraphBuilder::new();
        b.add_node(logging("reader", Access::new().read::<Pos>(), &log));
        b.add_node(logging("writer", Access::new().write::<Pos>(), &log));
        b.add_node(logging("reader2", Access::new().read::<Pos>(), &log));
        b.add_node(logging("free", Access::new().read::<Vel>(), &log));
        let mut g = b.build().unwrap();
        assert_eq!(g.successors(NodeId(0)), &[NodeId(1)]);
        assert_eq!(g.successors(NodeId(1)), &[NodeId(2)]);
        assert!(g.successors(NodeId(3)).is_empty());
        g.run(&mut Store::new()).unwrap();
        let order: Vec<_> = log
            .lock()
            .unwrap()
            .iter()
            .copied()
            .filter(|n| *n != "free")
            .collect();
        assert_eq!(order, ["reader", "writer", "reader2"]);
    }
}

#[test]
fn independent_nodes_run_concurrently() {
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let mut b = GraphBuilder::new();
    for i in 0..4 {
        let (running, peak) = (Arc::clone(&running), Arc::clone(&peak));
        b.add_node(FnNode::new(format!("n{i}"), Access::new(), move |_| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(40));
            running.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        }));
    }
    let mut g = b.build().unwrap();
    let mut store = Store::new();
    pool(4).install(|| g.run(&mut store)).unwrap();
    assert!(
        peak.load(Ordering::SeqCst) >= 2,
        "peak {}",
        peak.load(Ordering::SeqCst)
    );
}

fn failing_graph(panic: bool, ran_after: &Arc<AtomicUsize>) -> Graph {
    let mut b = GraphBuilder::new();
    let first = b.add_node(FnNode::new("first", Access::new(), |ctx| {
        ctx.commands().spawn((Pos(1.0),));
        Ok(())
    }));
    let bad = b.add_node(FnNode::new("bad", Access::new(), move |_| {
        if panic {
            panic!("exploded at frame");
        }
        Err(NodeError::new("bad input: 3 bones, expected 4"))
    }));
    let after = Arc::clone(ran_after);
    let next = b.add_node(FnNode::new("after", Access::new(), move |_| {
        after.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }));
    b.add_edge(first, bad).add_edge(bad, next);
    b.build().unwrap()
}

#[test]
fn node_error_stops_the_frame() {
    let ran_after = Arc::new(AtomicUsize::new(0));
    let mut g = failing_graph(false, &ran_after);
    let mut store = Store::new();
    for threads in [1, 3] {
        let err = pool(threads).install(|| g.run(&mut store)).unwrap_err();
        assert_eq!(err.node(), Some("bad"));
        let FrameError::NodeFailed { error, .. } = &err else {
            panic!("{err}")
        };
        assert!(error.to_string().contains("3 bones"));
        assert!(err.to_string().contains("`bad`"));
    }
    assert_eq!(ran_after.load(Ordering::SeqCst), 0);
    // commands of a failed frame are discarded
    assert!(store.is_empty());
    assert!(g.commands().is_empty());
    let t = g.last_timings();
    assert_eq!(
        t.iter()
            .map(|t| (t.name.as_str(), t.ran))
            .collect::<Vec<_>>(),
        [("first", true), ("bad", true), ("after", false)]
    );
}

#[test]
fn node_panic_is_caught_and_named() {
    let ran_after = Arc::new(AtomicUsize::new(0));
    let mut g = failing_graph(true, &ran_after);
    let mut store = Store::new();
    let err = pool(2).install(|| g.run(&mut store)).unwrap_err();
    let FrameError::NodePanicked { node, message } = &err else {
        panic!("{err}")
    };
    assert_eq!(node, "bad");
    assert!(message.contains("exploded"));
    assert_eq!(ran_after.load(Ordering::SeqCst), 0);
    // the graph stays usable
    let err2 = g.run(&mut store).unwrap_err();
    assert_eq!(err2.node(), Some("bad"));
}

#[test]
fn panic_inside_parallel_query_is_caught() {
    let mut store = Store::new();
    store
        .spawn_batch((0..2000).map(|i| (Pos(i as f32),)))
        .unwrap();
    let mut b = GraphBuilder::new();
    b.add_node(FnNode::new("par", Access::new().write::<Pos>(), |ctx| {
        ctx.query::<&mut Pos>()?.par_for_each(|_, p| {
            if p.0 == 1500.0 {
                panic!("bad pos");
            }
        });
        Ok(())
    }));
    let mut g = b.build().unwrap();
    let err = pool(4).install(|| g.run(&mut store)).unwrap_err();
    assert!(
        matches!(&err, FrameError::NodePanicked { message, .. } if message.contains("bad pos"))
    );
    // borrows were released during the unwind
    assert!(store.query::<&mut Pos>().is_ok());
}

#[test]
fn undeclared_access_is_an_error_naming_node_and_type() {
    let mut store = Store::new();
    store.spawn((Pos(0.0), Vel(1.0))).unwrap();
    store.insert_resource(Counter(0));
    let seen: Arc<Mutex<Vec<AccessError>>> = Arc::default();
    let s2 = Arc::clone(&seen);
    let mut b = GraphBuilder::new();
    b.add_node(FnNode::new(
        "liar",
        Access::new().read::<Pos>(),
        move |ctx| {
            let mut seen = s2.lock().unwrap();
            seen.push(ctx.query::<&mut Pos>().unwrap_err());
            seen.push(ctx.query::<(&Pos, &Vel)>().unwrap_err());
            seen.push(ctx.resource::<Counter>().unwrap_err());
            seen.push(ctx.resource_mut::<Counter>().unwrap_err());
            seen.push(ctx.scoped_slice_mut::<f32>().unwrap_err());
            seen.push(ctx.view::<Vel>().unwrap_err());
            seen.push(ctx.query::<(&Pos, &mut Pos)>().unwrap_err());
            // declared: fine
            assert_eq!(ctx.query::<&Pos>()?.count(), 1);
            Ok(())
        },
    ));
    let mut g = b.build().unwrap();
    g.run(&mut store).unwrap();
    let seen = seen.lock().unwrap();
    assert!(
        matches!(&seen[0], AccessError::Undeclared { node, type_name, kind: AccessKind::Write }
        if node == "liar" && type_name.contains("Pos"))
    );
    assert!(
        matches!(&seen[1], AccessError::Undeclared { type_name, kind: AccessKind::Read, .. }
        if type_name.contains("Vel"))
    );
    assert!(
        matches!(&seen[2], AccessError::Undeclared { type_name, .. } if type_name.contains("Counter"))
    );
    assert!(matches!(
        &seen[3],
        AccessError::Undeclared {
            kind: AccessKind::Write,
            ..
        }
    ));
    assert!(
        matches!(&seen[4], AccessError::Undeclared { type_name, .. } if type_name.contains("ScopedSlice"))
    );
    assert!(matches!(&seen[5], AccessError::Undeclared { .. }));
    assert!(matches!(
        &seen[6],
        AccessError::Store {
            error: StoreError::QueryAliasing { .. },
            ..
        }
    ));
    let msg = seen[0].to_string();
    assert!(
        msg.contains("liar") && msg.contains("Pos") && msg.contains("write"),
        "{msg}"
    );
}

#[test]
fn runtime_borrow_flags_catch_conflicting_live_borrows() {
    let mut store = Store::new();
    store.spawn((Pos(0.0),)).unwrap();
    store.insert_resource(Counter(0));
    let mut b = GraphBuilder::new();
    b.add_node(FnNode::new(
        "greedy",
        Access::new().write::<Pos>().write::<Counter>(),
        |ctx| {
            let q = ctx.query::<&mut Pos>()?;
            let second = ctx.query::<&Pos>();
            assert!(matches!(
                second,
                Err(AccessError::BorrowConflict {
                    kind: AccessKind::Read,
                    ..
                })
            ));
            drop(q);
            let r = ctx.resource::<Counter>()?;
            assert!(ctx.resource_mut::<Counter>().is_err());
            let r2 = ctx.resource::<Counter>()?;
            assert_eq!(r.0, r2.0);
            drop((r, r2));
            let mut w = ctx.resource_mut::<Counter>()?;
            w.0 += 1;
            Ok(())
        },
    ));
    let mut g = b.build().unwrap();
    g.run(&mut store).unwrap();
    assert_eq!(store.resource::<Counter>().unwrap().0, 1);
}

#[test]
fn timings_record_duration_and_start() {
    let mut b = GraphBuilder::new();
    let slow = b.add_node(FnNode::new("slow", Access::new(), |_| {
        std::thread::sleep(Duration::from_millis(20));
        Ok(())
    }));
    let fast = b.add_node(FnNode::new("fast", Access::new(), |_| Ok(())));
    b.add_edge(slow, fast);
    let mut g = b.build().unwrap();
    g.run(&mut Store::new()).unwrap();
    let t = g.last_timings();
    assert_eq!(t.len(), 2);
    assert_eq!((t[0].name.as_str(), t[1].name.as_str()), ("slow", "fast"));
    assert!(t[0].duration >= Duration::from_millis(20));
    assert!(t[1].started_at_offset >= t[0].started_at_offset + t[0].duration);
    assert!(t.iter().all(|t| t.ran));
    assert!(g.last_frame_time() >= t[1].started_at_offset + t[1].duration);
}

#[test]
fn scoped_slice_through_the_graph() {
    let mut store = Store::new();
    store
        .spawn_batch((0..100).map(|i| (Pos(i as f32),)))
        .unwrap();
    let mut b = GraphBuilder::new();
    b.add_node(FnNode::new(
        "palette",
        Access::new().read::<Pos>().write::<ScopedSlice<f32>>(),
        |ctx| {
            let out = ctx.scoped_slice_mut::<f32>()?;
            let n = out.len();
            let q = ctx.query::<&Pos>()?;
            if q.count() != n {
                return Err(NodeError::new(format!(
                    "palette has {n} slots, {} entities",
                    q.count()
                )));
            }
            // write each entity's value into its flat slot, in parallel
            let out = std::sync::Mutex::new(out);
            let mut q = q;
            q.par_for_each_chunk(|c| {
                let base = c.first_index();
                let vals: Vec<f32> = c.into_columns().iter().map(|p| p.0 * 2.0).collect();
                out.lock().unwrap()[base..base + vals.len()].copy_from_slice(&vals);
            });
            Ok(())
        },
    ));
    let mut g = b.build().unwrap();
    let mut mapped = vec![0.0f32; 100];
    store
        .with_scoped_slice(&mut mapped, |store| g.run(store))
        .unwrap();
    assert_eq!(mapped[7], 14.0);
    assert_eq!(mapped[99], 198.0);
    // outside the scope, the node gets an error
    let err = g.run(&mut store).unwrap_err();
    let FrameError::NodeFailed { error, .. } = &err else {
        panic!("{err}")
    };
    assert!(matches!(
        error.downcast_ref::<AccessError>(),
        Some(AccessError::Store {
            error: StoreError::NoScopedSlice { .. },
            ..
        })
    ));
}

#[test]
fn commands_scratch_frame_and_node_name() {
    let mut store = Store::new();
    let victim = store.spawn((Pos(0.0),)).unwrap();
    let mut b = GraphBuilder::new();
    let frames: Arc<Mutex<Vec<u64>>> = Arc::default();
    let f2 = Arc::clone(&frames);
    b.add_node(FnNode::new(
        "spawner",
        Access::new().read::<Pos>(),
        move |ctx| {
            let scratch = ctx.scratch();
            assert!(
                scratch.allocated_bytes() <= 64 * 1024,
                "scratch reset every frame"
            );
            let tmp = scratch.alloc_slice_fill_copy(1000, 0u32);
            tmp[999] = 1;
            f2.lock().unwrap().push(ctx.frame());
            assert_eq!(ctx.node_name(), "spawner");
            let n = ctx.entity_count();
            // `NodeContext` is not `Sync` (its scratch arena is per node): take what parallel
            // closures need first.
            let commands = ctx.commands();
            ctx.query::<&Pos>()?.par_for_each(|e, _| {
                if n < 3 {
                    commands.spawn((Pos(1.0),));
                }
                let _: Entity = e;
            });
            Ok(())
        },
    ));
    let mut g = b.build().unwrap();
    for _ in 0..4 {
        g.run(&mut store).unwrap();
        store.advance_frame();
    }
    // 1 -> 2 -> 4 -> 4 (stops once there are >= 3)
    assert_eq!(store.len(), 4);
    assert_eq!(*frames.lock().unwrap(), [0, 1, 2, 3]);
    assert_eq!(g.last_apply_report().unwrap().applied, 0);

    // failed commands are reported after the frame
    store.despawn(victim).unwrap();
    let mut b = GraphBuilder::new();
    b.add_node(FnNode::new("stale", Access::new(), move |ctx| {
        ctx.commands().insert(victim, Vel(0.0));
        ctx.commands().spawn((Vel(1.0),));
        Ok(())
    }));
    let mut g = b.build().unwrap();
    let err = g.run(&mut store).unwrap_err();
    assert!(matches!(err, FrameError::Commands { .. }));
    let report = g.last_apply_report().unwrap();
    assert_eq!((report.applied, report.failures.len()), (1, 1));
    assert_eq!(report.failures[0].entity, Some(victim));
}

#[test]
fn same_results_for_any_thread_count() {
    fn run(threads: usize) -> Vec<f32> {
        let mut store = Store::with_chunk_bytes(512);
        store
            .spawn_batch((0..5000).map(|i| (Pos(i as f32), Vel((i % 7) as f32))))
            .unwrap();
        store.insert_resource(Counter(0));
        let mut b = GraphBuilder::new();
        let integrate = b.add_node(FnNode::new(
            "integrate",
            Access::new().read::<Vel>().write::<Pos>(),
            |ctx| {
                ctx.query::<(&mut Pos, &Vel)>()?
                    .par_for_each(|_, (p, v)| p.0 += v.0 * 0.5);
                Ok(())
            },
        ));
        let damp = b.add_node(FnNode::new("damp", Access::new().write::<Vel>(), |ctx| {
            ctx.query::<&mut Vel>()?.par_for_each_chunk(|c| {
                for v in c.into_columns() {
                    v.0 *= 0.9;
                }
            });
            Ok(())
        }));
        b.add_node(FnNode::new(
            "count",
            Access::new().read::<Pos>().write::<Counter>(),
            |ctx| {
                let n = ctx.query::<&Pos>()?.count();
                ctx.resource_mut::<Counter>()?.0 += n;
                Ok(())
            },
        ));
        b.add_edge(integrate, damp);
        let mut g = b.build().unwrap();
        pool(threads).install(|| {
            for _ in 0..5 {
                g.run(&mut store).unwrap();
                store.advance_frame();
            }
        });
        assert_eq!(store.resource::<Counter>().unwrap().0, 25_000);
        let mut out = Vec::new();
        store
            .query::<&Pos>()
            .unwrap()
            .for_each(|_, p| out.push(p.0));
        out
    }
    let one = run(1);
    assert_eq!(one, run(4));
    assert_eq!(one, run(2));
}

#[test]
fn node_error_conversions() {
    fn f() -> Result<(), NodeError> {
        Err("plain message")?
    }
    assert_eq!(f().unwrap_err().to_string(), "plain message");
    let e = NodeError::from_error(StoreError::MissingResource { type_name: "X" });
    assert!(e.downcast_ref::<StoreError>().is_some());
    let e: NodeError = String::from("s").into();
    assert_eq!(format!("{e}"), "s");
    let boxed: Box<dyn std::error::Error + Send + Sync> = "b".into();
    assert_eq!(NodeError::from(boxed).to_string(), "b");
}

/// A chain of `len` nodes added in reverse order (so insertion order is not run order), each
/// checking that its predecessor's write is visible, plus a free node beside it.
fn reversed_chain(len: usize, log: &Log) -> Graph {
    let mut b = GraphBuilder::new();
    let ids: Vec<NodeId> = (0..len)
        .rev()
        .map(|k| {
            b.add_node(FnNode::new(
                format!("step {k}"),
                Access::new().write::<Counter>(),
                move |ctx| {
                    let mut c = ctx.resource_mut::<Counter>()?;
                    if c.0 % len != k {
                        return Err(NodeError::new(format!("step {k} saw {}", c.0)));
                    }
                    c.0 += 1;
                    Ok(())
                },
            ))
        })
        .collect();
    // ids[j] is step len-1-j
    for j in (1..len).rev() {
        b.add_edge(ids[j], ids[j - 1]);
    }
    b.add_node(logging("beside", Access::new(), log));
    b.build().unwrap()
}

#[test]
fn a_long_chain_runs_in_order_on_any_thread_count() {
    for threads in [1, 2, 4] {
        let log: Log = Arc::default();
        let mut g = reversed_chain(40, &log);
        let mut store = Store::new();
        store.insert_resource(Counter(0));
        pool(threads).install(|| {
            for _ in 0..5 {
                g.run(&mut store).unwrap();
            }
        });
        assert_eq!(store.resource::<Counter>().unwrap().0, 200);
        assert_eq!(log.lock().unwrap().len(), 5);
        let t = g.last_timings();
        assert!(t.iter().all(|t| t.ran));
        // timings are in dependency order: step 0, step 1, ...; each started after the one
        // before it ended
        assert_eq!(t[0].name, "step 0");
        for w in t[..40].windows(2) {
            assert!(w[1].started_at_offset >= w[0].started_at_offset + w[0].duration);
        }
    }
}

#[test]
fn a_failure_inside_a_chain_stops_it_and_the_frame_ends() {
    for threads in [1, 2, 4] {
        let log: Log = Arc::default();
        let mut g = reversed_chain(12, &log);
        let mut store = Store::new();
        // step 0 expects 0 (mod 12): start at 5, so step 0 fails at once
        store.insert_resource(Counter(5));
        let err = pool(threads).install(|| g.run(&mut store)).unwrap_err();
        assert_eq!(err.node(), Some("step 0"), "{err}");
        assert!(err.to_string().contains("saw 5"), "{err}");
        assert_eq!(store.resource::<Counter>().unwrap().0, 5);
        let ran: Vec<bool> = g.last_timings()[..12].iter().map(|t| t.ran).collect();
        // only step 0 (added last of the steps, first in dependency order) ran
        assert_eq!(ran.iter().filter(|&&r| r).count(), 1);
        assert!(ran[0]);
    }
}

#[test]
fn concurrent_failures_report_the_lowest_node_index() {
    // root -> a, root -> b: both start, wait until the other is running, then fail. Each
    // sleeps first, so that it is never light (light nodes run one after the other).
    let mut b = GraphBuilder::new();
    let arrived = Arc::new(AtomicUsize::new(0));
    let root = b.add_node(FnNode::new("root", Access::new(), |_| Ok(())));
    let mut failing = |name: &'static str| {
        let arrived = Arc::clone(&arrived);
        b.add_node(FnNode::new(name, Access::new(), move |_| {
            std::thread::sleep(Duration::from_millis(1));
            arrived.fetch_add(1, Ordering::SeqCst);
            let t = std::time::Instant::now();
            while !arrived.load(Ordering::SeqCst).is_multiple_of(2)
                && t.elapsed() < Duration::from_secs(5)
            {
                std::hint::spin_loop();
            }
            Err(NodeError::new(format!("{name} failed")))
        }))
    };
    let x = failing("a");
    let y = failing("b");
    b.add_edge(root, x).add_edge(root, y);
    let mut g = b.build().unwrap();
    let mut store = Store::new();
    for threads in [2, 4] {
        pool(threads).install(|| {
            for _ in 0..20 {
                let err = g.run(&mut store).unwrap_err();
                assert_eq!(err.node(), Some("a"), "{err}");
                assert!(g.last_timings().iter().all(|t| t.ran));
            }
        });
    }
}

#[test]
fn a_failing_branch_stops_the_other_branch_from_going_on() {
    // root -> bad; root -> slow -> next: with several threads `bad` fails while `slow` runs,
    // so `next` never starts. `slow` waits until `bad` has run (at most a few seconds, so that
    // a loaded machine cannot reorder them) and a little longer, whichever thread runs which.
    let ran_next = Arc::new(AtomicUsize::new(0));
    let bad_ran = Arc::new(AtomicUsize::new(0));
    let mut b = GraphBuilder::new();
    let root = b.add_node(FnNode::new("root", Access::new(), |_| Ok(())));
    let flag = Arc::clone(&bad_ran);
    let bad = b.add_node(FnNode::new("bad", Access::new(), move |_| {
        flag.fetch_add(1, Ordering::SeqCst);
        Err(NodeError::new("bad"))
    }));
    let flag = Arc::clone(&bad_ran);
    let slow = b.add_node(FnNode::new("slow", Access::new(), move |_| {
        let start = std::time::Instant::now();
        let before = flag.load(Ordering::SeqCst);
        while rayon::current_num_threads() > 1
            && flag.load(Ordering::SeqCst) == before
            && start.elapsed() < Duration::from_secs(5)
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        // `bad` has returned its error or is about to: the executor raises the stop flag
        // right after.
        std::thread::sleep(Duration::from_millis(20));
        Ok(())
    }));
    let counter = Arc::clone(&ran_next);
    let next = b.add_node(FnNode::new("next", Access::new(), move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }));
    b.add_edge(root, bad)
        .add_edge(root, slow)
        .add_edge(slow, next);
    let mut g = b.build().unwrap();
    let mut store = Store::new();
    for threads in [2, 4] {
        let err = pool(threads).install(|| g.run(&mut store)).unwrap_err();
        assert_eq!(err.node(), Some("bad"));
    }
    // `bad` ran in each frame, before `slow` finished or before it started (light, on
    // `root`'s thread): either way `next` was never started.
    assert_eq!(bad_ran.load(Ordering::SeqCst), 2);
    assert_eq!(ran_next.load(Ordering::SeqCst), 0);
    let err = pool(1).install(|| g.run(&mut store)).unwrap_err();
    assert_eq!(err.node(), Some("bad"));
}

#[test]
fn light_nodes_run_on_the_thread_that_made_them_ready() {
    // root -> a, b, c (quick); root -> heavy (a millisecond). A node that took under 5 µs in
    // the frame before is light and runs where root ran, never handed to another worker.
    let threads: Arc<Mutex<Vec<(&str, std::thread::ThreadId)>>> = Arc::default();
    let mut b = GraphBuilder::new();
    let mut node = |name: &'static str, sleep: u64| {
        let threads = Arc::clone(&threads);
        b.add_node(FnNode::new(name, Access::new(), move |_| {
            if sleep > 0 {
                std::thread::sleep(Duration::from_millis(sleep));
            }
            threads
                .lock()
                .unwrap()
                .push((name, std::thread::current().id()));
            Ok(())
        }))
    };
    let root = node("root", 0);
    let children = [node("a", 0), node("b", 0), node("c", 0), node("heavy", 1)];
    for c in children {
        b.add_edge(root, c);
    }
    let mut g = b.build().unwrap();
    let mut store = Store::new();
    let mut checked = 0;
    pool(4).install(|| {
        for _ in 0..20 {
            let light: Vec<String> = (g.last_timings().iter())
                .filter(|t| t.ran && t.duration < Duration::from_micros(5))
                .map(|t| t.name.clone())
                .collect();
            threads.lock().unwrap().clear();
            g.run(&mut store).unwrap();
            let ran = threads.lock().unwrap();
            assert_eq!(ran.len(), 5);
            let root_thread = ran.iter().find(|(n, _)| *n == "root").unwrap().1;
            for (name, thread) in ran.iter().filter(|(n, _)| light.iter().any(|l| l == n)) {
                assert_eq!(*thread, root_thread, "{name} was light");
                checked += 1;
            }
            assert!(!light.iter().any(|l| l == "heavy"));
        }
    });
    // Most frames have light children (a preempted node may take longer once).
    assert!(checked >= 20, "only {checked} light nodes seen");
}

#[test]
fn printed_edges_are_the_transitive_reduction() {
    // a -> b -> c plus a -> c (implied), d alone; e reads what b writes (ordered b -> e).
    let log: Log = Arc::default();
    let mut b = GraphBuilder::new();
    let a = b.add_node(logging("a", Access::new(), &log));
    let m = b.add_node(logging("b", Access::new().write::<Counter>(), &log));
    let c = b.add_node(logging("c", Access::new(), &log));
    b.add_node(logging("d", Access::new(), &log));
    b.add_node(logging(
        "e \"quoted\"",
        Access::new().read::<Counter>(),
        &log,
    ));
    b.add_edge(a, m).add_edge(m, c).add_edge(a, c);
    let g = b.build().unwrap();
    assert_eq!(g.edges(), [("a", "b"), ("b", "c"), ("b", "e \"quoted\"")]);
    assert_eq!(g.to_string(), "a -> b\nb -> c\nb -> e \"quoted\"\nd\n");
    let dot = g.to_dot();
    assert!(dot.starts_with("digraph frame {"), "{dot}");
    assert!(dot.contains("    \"a\" -> \"b\";\n"), "{dot}");
    assert!(
        dot.contains("    \"b\" -> \"e \\\"quoted\\\"\";\n"),
        "{dot}"
    );
    assert!(!dot.contains("\"a\" -> \"c\""), "{dot}");
}

/// A node that queries one set of components finds another component's column per chunk
/// through a view: row `r` of the column is the chunk's `r`-th entity, and chunks without the
/// component give `None`.
#[test]
fn a_view_hands_out_the_column_of_one_chunk() {
    let mut store = Store::new();
    let with_vel: Vec<Entity> = (0..5)
        .map(|i| store.spawn((Pos(i as f32), Vel(10.0 + i as f32))).unwrap())
        .collect();
    store.spawn((Pos(-1.0),)).unwrap();
    type Columns = (Vec<f32>, Option<Vec<f32>>);
    let seen: Arc<Mutex<Vec<Columns>>> = Arc::default();
    let s2 = Arc::clone(&seen);
    let mut b = GraphBuilder::new();
    b.add_node(FnNode::new(
        "columns",
        Access::new().read::<Pos>().read::<Vel>(),
        move |ctx| {
            let view = ctx.view::<Vel>()?;
            let mut q = ctx.query::<&Pos>()?;
            for chunk in q.chunks() {
                let (archetype, id) = (chunk.archetype_id(), chunk.chunk_id());
                let pos = chunk.into_columns().iter().map(|p| p.0).collect();
                let vel = view
                    .chunk_column(archetype, id)
                    .map(|v| v.iter().map(|v| v.0).collect());
                s2.lock().unwrap().push((pos, vel));
            }
            let far = crate::store::ArchetypeId(9_999);
            assert!(view.chunk_column(far, crate::store::ChunkId(0)).is_none());
            Ok(())
        },
    ));
    let mut g = b.build().unwrap();
    g.run(&mut store).unwrap();
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_by_key(|c| c.0.len());
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0], (vec![-1.0], None));
    assert_eq!(seen[1].0, vec![0.0, 1.0, 2.0, 3.0, 4.0]);
    assert_eq!(seen[1].1, Some(vec![10.0, 11.0, 12.0, 13.0, 14.0]));
    assert_eq!(with_vel.len(), 5);
}
