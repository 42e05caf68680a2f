//! Random sequences of spawn / despawn / insert / remove / get on a `Store` agree with a simple
//! `HashMap` model.

use std::collections::HashMap;
use std::sync::Arc;

use proptest::prelude::*;
use sinew_runtime::store::{Entity, Store, StoreError};

#[derive(Debug, Clone, Copy, PartialEq)]
struct A(u32);
/// Owns heap memory and counts clones through the shared `Arc`.
#[derive(Debug, Clone, PartialEq)]
struct B(Arc<u64>);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Z; // zero-sized

#[derive(Debug, Clone, Default, PartialEq)]
struct Row {
    a: Option<u32>,
    b: bool,
    z: bool,
}

#[derive(Debug, Clone)]
enum Op {
    Spawn { a: Option<u32>, b: bool, z: bool },
    Despawn(usize),
    InsertA(usize, u32),
    InsertB(usize),
    InsertZ(usize),
    RemoveA(usize),
    RemoveB(usize),
    RemoveZ(usize),
    GetMutA(usize, u32),
    AdvanceFrame,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (proptest::option::of(any::<u32>()), any::<bool>(), any::<bool>())
            .prop_map(|(a, b, z)| Op::Spawn { a, b, z }),
        2 => any::<usize>().prop_map(Op::Despawn),
        2 => (any::<usize>(), any::<u32>()).prop_map(|(i, v)| Op::InsertA(i, v)),
        1 => any::<usize>().prop_map(Op::InsertB),
        1 => any::<usize>().prop_map(Op::InsertZ),
        1 => any::<usize>().prop_map(Op::RemoveA),
        1 => any::<usize>().prop_map(Op::RemoveB),
        1 => any::<usize>().prop_map(Op::RemoveZ),
        1 => (any::<usize>(), any::<u32>()).prop_map(|(i, v)| Op::GetMutA(i, v)),
        1 => Just(Op::AdvanceFrame),
    ]
}

fn check(store: &mut Store, model: &HashMap<Entity, Row>, all: &[Entity], asset: &Arc<u64>) {
    assert_eq!(store.len(), model.len());
    for e in all {
        match model.get(e) {
            Some(row) => {
                assert!(store.contains(*e));
                assert_eq!(store.get::<A>(*e).ok().map(|a| a.0), row.a, "{e}");
                assert_eq!(store.has::<B>(*e).unwrap(), row.b, "{e}");
                assert_eq!(store.has::<Z>(*e).unwrap(), row.z, "{e}");
            }
            None => {
                assert!(!store.contains(*e));
                assert!(matches!(
                    store.get::<A>(*e),
                    Err(StoreError::StaleEntity { .. })
                ));
            }
        }
    }
    // one B per live entity that has one, plus the test's own handle
    let bs = model.values().filter(|r| r.b).count();
    assert_eq!(Arc::strong_count(asset), bs + 1);
    // queries agree with the model
    let q = store.query::<(&A, Option<&Z>)>().unwrap();
    assert_eq!(q.count(), model.values().filter(|r| r.a.is_some()).count());
    drop(q);
    let mut seen = 0;
    store
        .query::<(&A, &B)>()
        .unwrap()
        .without::<Z>()
        .for_each(|e, (a, _)| {
            let row = &model[&e];
            assert_eq!(Some(a.0), row.a);
            assert!(row.b && !row.z);
            seen += 1;
        });
    assert_eq!(
        seen,
        model
            .values()
            .filter(|r| r.a.is_some() && r.b && !r.z)
            .count()
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn store_agrees_with_hashmap_model(ops in proptest::collection::vec(op(), 1..120)) {
        let asset = Arc::new(7u64);
        {
            // small chunks: many chunks per archetype, exercising swap-remove across chunks
            let mut store = Store::with_chunk_bytes(96);
            let mut model: HashMap<Entity, Row> = HashMap::new();
            let mut all: Vec<Entity> = Vec::new();
            for op in ops {
                let pick = |i: usize| all.get(i % all.len().max(1)).copied();
                match op {
                    Op::Spawn { a, b, z } => {
                        let bv = B(Arc::clone(&asset));
                        let e = match (a, b, z) {
                            (None, false, false) => store.spawn(()),
                            (Some(a), false, false) => store.spawn((A(a),)),
                            (None, true, false) => store.spawn((bv.clone(),)),
                            (None, false, true) => store.spawn((Z,)),
                            (Some(a), true, false) => store.spawn((A(a), bv.clone())),
                            (Some(a), false, true) => store.spawn((Z, A(a))),
                            (None, true, true) => store.spawn((bv.clone(), Z)),
                            (Some(a), true, true) => store.spawn((bv.clone(), Z, A(a))),
                        }
                        .unwrap();
                        drop(bv);
                        model.insert(e, Row { a, b, z });
                        all.push(e);
                    }
                    Op::Despawn(i) => {
                        let Some(e) = pick(i) else { continue };
                        let r = store.despawn(e);
                        prop_assert_eq!(r.is_ok(), model.remove(&e).is_some());
                    }
                    Op::InsertA(i, v) => {
                        let Some(e) = pick(i) else { continue };
                        let r = store.insert(e, A(v));
                        match model.get_mut(&e) {
                            Some(row) => { prop_assert!(r.is_ok()); row.a = Some(v); }
                            None => prop_assert!(r.is_err()),
                        }
                    }
                    Op::InsertB(i) => {
                        let Some(e) = pick(i) else { continue };
                        let r = store.insert(e, B(Arc::clone(&asset)));
                        match model.get_mut(&e) {
                            Some(row) => { prop_assert!(r.is_ok()); row.b = true; }
                            None => prop_assert!(r.is_err()),
                        }
                    }
                    Op::InsertZ(i) => {
                        let Some(e) = pick(i) else { continue };
                        let r = store.insert(e, Z);
                        match model.get_mut(&e) {
                            Some(row) => { prop_assert!(r.is_ok()); row.z = true; }
                            None => prop_assert!(r.is_err()),
                        }
                    }
                    Op::RemoveA(i) => {
                        let Some(e) = pick(i) else { continue };
                        let r = store.remove::<A>(e);
                        match model.get_mut(&e) {
                            Some(row) => {
                                prop_assert_eq!(r.ok().map(|a| a.0), row.a);
                                row.a = None;
                            }
                            None => {
                                let stale = matches!(r, Err(StoreError::StaleEntity { .. }));
                                prop_assert!(stale);
                            }
                        }
                    }
                    Op::RemoveB(i) => {
                        let Some(e) = pick(i) else { continue };
                        let r = store.remove::<B>(e);
                        match model.get_mut(&e) {
                            Some(row) => {
                                prop_assert_eq!(r.is_ok(), row.b);
                                row.b = false;
                            }
                            None => prop_assert!(r.is_err()),
                        }
                    }
                    Op::RemoveZ(i) => {
                        let Some(e) = pick(i) else { continue };
                        let r = store.remove::<Z>(e);
                        match model.get_mut(&e) {
                            Some(row) => {
                                prop_assert_eq!(r.is_ok(), row.z);
                                row.z = false;
                            }
                            None => prop_assert!(r.is_err()),
                        }
                    }
                    Op::GetMutA(i, v) => {
                        let Some(e) = pick(i) else { continue };
                        let r = store.get_mut::<A>(e);
                        match model.get_mut(&e) {
                            Some(Row { a: Some(a), .. }) => {
                                r.unwrap().0 = v;
                                *a = v;
                            }
                            _ => prop_assert!(r.is_err()),
                        }
                    }
                    Op::AdvanceFrame => {
                        store.advance_frame();
                    }
                }
                check(&mut store, &model, &all, &asset);
            }
        }
        // dropping the store dropped every B exactly once
        prop_assert_eq!(Arc::strong_count(&asset), 1);
    }
}
