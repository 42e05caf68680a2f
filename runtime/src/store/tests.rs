//! Unit tests of the store.

use std::sync::Arc;

use rayon::prelude::*;

use super::*;

#[derive(Debug, Clone, Copy, PartialEq)]
struct Pos(f32, f32, f32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Vel(f32, f32, f32);
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tag;
#[derive(Debug, Clone, PartialEq)]
struct Name(String);

#[test]
fn spawn_get_insert_remove_despawn() {
    let mut s = Store::new();
    assert!(s.is_empty());
    let a = s.spawn((Pos(1.0, 2.0, 3.0), Vel(0.0, 1.0, 0.0))).unwrap();
    let b = s.spawn((Pos(4.0, 5.0, 6.0),)).unwrap();
    assert_eq!(s.len(), 2);
    assert!(s.contains(a) && s.contains(b));
    assert_eq!(s.get::<Pos>(a).unwrap(), &Pos(1.0, 2.0, 3.0));
    assert!(matches!(
        s.get::<Vel>(b),
        Err(StoreError::MissingComponent { entity, .. }) if entity == b
    ));
    s.get_mut::<Pos>(b).unwrap().0 = 40.0;
    assert_eq!(s.get::<Pos>(b).unwrap().0, 40.0);

    s.insert(b, Name("b".into())).unwrap();
    s.insert(b, Vel(9.0, 9.0, 9.0)).unwrap();
    assert_eq!(s.get::<Name>(b).unwrap(), &Name("b".into()));
    assert_eq!(s.get::<Pos>(b).unwrap(), &Pos(40.0, 5.0, 6.0));
    // replace in place
    s.insert(b, Name("bb".into())).unwrap();
    assert_eq!(s.get::<Name>(b).unwrap().0, "bb");
    assert_eq!(s.remove::<Name>(b).unwrap(), Name("bb".into()));
    assert!(matches!(
        s.remove::<Name>(b),
        Err(StoreError::MissingComponent { .. })
    ));
    assert!(s.has::<Vel>(b).unwrap());
    assert!(!s.has::<Name>(b).unwrap());
    // a and b are now in the same archetype
    assert_eq!(
        s.location(a).unwrap().archetype,
        s.location(b).unwrap().archetype
    );

    s.despawn(a).unwrap();
    assert_eq!(s.len(), 1);
    assert_eq!(s.get::<Pos>(b).unwrap(), &Pos(40.0, 5.0, 6.0));
    let empty = s.spawn(()).unwrap();
    assert!(s.contains(empty));
    assert_eq!(s.location(empty).unwrap().archetype.index(), 0);
}

#[test]
fn stale_handles_are_errors() {
    let mut s = Store::new();
    let a = s.spawn((Pos(0.0, 0.0, 0.0),)).unwrap();
    s.despawn(a).unwrap();
    assert!(!s.contains(a));
    assert!(matches!(
        s.get::<Pos>(a),
        Err(StoreError::StaleEntity { .. })
    ));
    assert!(matches!(
        s.get_mut::<Pos>(a),
        Err(StoreError::StaleEntity { .. })
    ));
    assert!(matches!(s.despawn(a), Err(StoreError::StaleEntity { .. })));
    assert!(matches!(
        s.insert(a, Tag),
        Err(StoreError::StaleEntity { .. })
    ));
    assert!(matches!(
        s.remove::<Pos>(a),
        Err(StoreError::StaleEntity { .. })
    ));
    // the slot is reused with a new generation; the old handle stays stale
    let b = s.spawn((Pos(1.0, 1.0, 1.0),)).unwrap();
    assert_eq!(b.index(), a.index());
    assert_ne!(b.generation(), a.generation());
    assert!(s.get::<Pos>(a).is_err());
    assert_eq!(s.get::<Pos>(b).unwrap().0, 1.0);
    assert!(matches!(
        s.get::<Pos>(Entity::DANGLING),
        Err(StoreError::NoSuchEntity { .. })
    ));
    let msg = s.get::<Pos>(a).unwrap_err().to_string();
    assert!(
        msg.contains("stale") && msg.contains(&a.to_string()),
        "{msg}"
    );
}

#[test]
fn foreign_handles_are_errors() {
    let mut s1 = Store::new();
    let mut s2 = Store::new();
    let a = s1.spawn((Pos(0.0, 0.0, 0.0),)).unwrap();
    let b = s2.spawn((Pos(0.0, 0.0, 0.0),)).unwrap();
    assert_eq!(a.index(), b.index());
    // Different first generations per store: same index, different generation.
    assert!(matches!(
        s2.get::<Pos>(a),
        Err(StoreError::StaleEntity { .. })
    ));
    assert!(matches!(s1.despawn(b), Err(StoreError::StaleEntity { .. })));
    let c = s1.spawn((Pos(0.0, 0.0, 0.0),)).unwrap();
    assert!(matches!(
        s2.get::<Pos>(c),
        Err(StoreError::NoSuchEntity { .. })
    ));
}

#[test]
fn drop_is_called_exactly_once() {
    let asset = Arc::new(vec![1u8; 16]);
    {
        let mut s = Store::with_chunk_bytes(256);
        let mut es = Vec::new();
        for i in 0..100 {
            es.push(
                s.spawn((Arc::clone(&asset), Pos(i as f32, 0.0, 0.0)))
                    .unwrap(),
            );
        }
        assert_eq!(Arc::strong_count(&asset), 101);
        for e in es.iter().step_by(3) {
            s.despawn(*e).unwrap();
        }
        assert_eq!(Arc::strong_count(&asset), 101 - 34);
        // replace drops the old value
        s.insert(es[1], Arc::clone(&asset)).unwrap();
        assert_eq!(Arc::strong_count(&asset), 67);
        // moving between archetypes neither clones nor drops
        s.insert(es[1], Tag).unwrap();
        s.insert(es[2], Name("x".into())).unwrap();
        assert_eq!(Arc::strong_count(&asset), 67);
        // remove hands the value back
        let taken: Arc<Vec<u8>> = s.remove(es[2]).unwrap();
        assert_eq!(Arc::strong_count(&asset), 67);
        drop(taken);
        assert_eq!(Arc::strong_count(&asset), 66);
        // resources too
        s.insert_resource(Arc::clone(&asset));
        assert_eq!(Arc::strong_count(&asset), 67);
        let old = s.insert_resource(Arc::clone(&asset)).unwrap();
        drop(old);
        assert_eq!(Arc::strong_count(&asset), 67);
        // commands dropped without being applied drop their values
        let cmd = CommandBuffer::new();
        cmd.spawn((Arc::clone(&asset),));
        cmd.insert(es[4], Arc::clone(&asset));
        assert_eq!(Arc::strong_count(&asset), 69);
        assert_eq!(cmd.clear(), 2);
        assert_eq!(Arc::strong_count(&asset), 67);
    }
    assert_eq!(Arc::strong_count(&asset), 1);
}

#[test]
fn zero_sized_components() {
    let mut s = Store::with_chunk_bytes(64);
    let es = s.spawn_batch((0..50).map(|_| (Tag,))).unwrap();
    let with_pos = s.spawn((Tag, Pos(1.0, 1.0, 1.0))).unwrap();
    assert_eq!(s.query::<&Tag>().unwrap().count(), 51);
    // 64-byte chunks, an 8-byte entity column only: 8 rows per chunk
    assert_eq!(s.chunk_capacity_of(es[0]).unwrap(), 8);
    s.insert(es[3], Pos(2.0, 0.0, 0.0)).unwrap();
    assert_eq!(s.remove::<Tag>(es[3]).unwrap(), Tag);
    s.despawn(es[7]).unwrap();
    assert_eq!(s.query::<&Tag>().unwrap().count(), 49);
    let mut n = 0;
    s.query::<(&mut Tag, &Pos)>()
        .unwrap()
        .for_each(|_, (t, p)| {
            assert_eq!(*t, Tag);
            n += p.0 as usize;
        });
    assert_eq!(n, 1);
    assert!(s.has::<Tag>(with_pos).unwrap());
    let mut chunks = 0;
    s.query::<&mut Tag>().unwrap().for_each_chunk(|c| {
        let tags = c.into_columns();
        chunks += tags.len();
    });
    assert_eq!(chunks, 49);
}

#[test]
fn oversized_component_gets_one_row_chunks() {
    #[derive(Clone)]
    struct Big([u64; 4096]); // 32 KiB > 16 KiB
    let mut s = Store::new();
    let mut es = Vec::new();
    for i in 0..5u64 {
        let mut b = Big([0; 4096]);
        b.0[0] = i;
        b.0[4095] = i * 10;
        es.push(s.spawn((b, Pos(i as f32, 0.0, 0.0))).unwrap());
    }
    assert_eq!(s.chunk_capacity_of(es[0]).unwrap(), 1);
    for (i, e) in es.iter().enumerate() {
        assert_eq!(s.location(*e).unwrap().chunk.index(), i);
        assert_eq!(s.get::<Big>(*e).unwrap().0[4095], i as u64 * 10);
    }
    s.despawn(es[1]).unwrap();
    assert_eq!(s.get::<Big>(es[4]).unwrap().0[0], 4);
    assert_eq!(s.location(es[4]).unwrap().chunk.index(), 1);
    let mut seen = 0;
    s.query::<(&Big, &Pos)>().unwrap().for_each_chunk(|c| {
        assert_eq!(c.len(), 1);
        seen += 1;
    });
    assert_eq!(seen, 4);
}

#[test]
fn chunk_capacity_follows_chunk_bytes() {
    let mut s = Store::with_chunk_bytes(1024);
    let e = s.spawn((0u64, 0i64)).unwrap();
    assert_eq!(s.chunk_capacity_of(e).unwrap(), 1024 / 24);
    let mut d = Store::new();
    let e = d.spawn((Pos(0.0, 0.0, 0.0), Vel(0.0, 0.0, 0.0))).unwrap();
    assert_eq!(d.chunk_capacity_of(e).unwrap(), 16 * 1024 / 32);
    // mixed alignments: padding between columns must still fit
    let e = d.spawn((1u8, 2u64, 3u16)).unwrap();
    let cap = d.chunk_capacity_of(e).unwrap();
    assert!(
        cap * (8 + 1 + 8 + 2) <= 16 * 1024 && cap >= 16 * 1024 / 19 - 2,
        "{cap}"
    );
    assert_eq!(d.get::<u64>(e).unwrap(), &2);
}

#[test]
fn chunks_never_move() {
    let mut s = Store::with_chunk_bytes(512);
    let first = s.spawn((Pos(1.0, 0.0, 0.0),)).unwrap();
    let p0 = s.get::<Pos>(first).unwrap() as *const Pos;
    s.spawn_batch((0..10_000).map(|i| (Pos(i as f32, 0.0, 0.0),)))
        .unwrap();
    assert_eq!(s.get::<Pos>(first).unwrap() as *const Pos, p0);
}

#[test]
fn query_aliasing_is_an_error() {
    let mut s = Store::new();
    s.spawn((Pos(0.0, 0.0, 0.0), Vel(0.0, 0.0, 0.0))).unwrap();
    assert!(matches!(
        s.query::<(&mut Pos, &Pos)>(),
        Err(StoreError::QueryAliasing { type_name }) if type_name.contains("Pos")
    ));
    assert!(s.query::<(&mut Pos, Option<&mut Pos>)>().is_err());
    assert!(s.query::<(&Vel, &mut Pos, &mut Vel)>().is_err());
    assert_eq!(s.query::<(&Pos, &Pos)>().unwrap().count(), 1);
}

#[test]
fn duplicate_bundle_types_are_an_error() {
    let mut s = Store::new();
    assert!(matches!(
        s.spawn((Pos(0.0, 0.0, 0.0), Vel(0.0, 0.0, 0.0), Pos(1.0, 1.0, 1.0))),
        Err(StoreError::DuplicateComponent { .. })
    ));
    assert!(s.is_empty());
}

#[test]
fn queries_options_filters_and_first_index() {
    let mut s = Store::with_chunk_bytes(256);
    for i in 0..100 {
        let e = s.spawn((Pos(i as f32, 0.0, 0.0),)).unwrap();
        if i % 2 == 0 {
            s.insert(e, Vel(1.0, 0.0, 0.0)).unwrap();
        }
        if i % 5 == 0 {
            s.insert(e, Tag).unwrap();
        }
    }
    assert_eq!(s.query::<&Pos>().unwrap().count(), 100);
    assert_eq!(s.query::<(&Pos, &Vel)>().unwrap().count(), 50);
    assert_eq!(s.query::<&Pos>().unwrap().with::<Tag>().count(), 20);
    assert_eq!(s.query::<&Pos>().unwrap().without::<Tag>().count(), 80);
    assert_eq!(
        s.query::<&Pos>()
            .unwrap()
            .with::<Vel>()
            .without::<Tag>()
            .count(),
        40
    );
    assert_eq!(s.query::<&Pos>().unwrap().with::<String>().count(), 0);
    assert_eq!(s.query::<&Pos>().unwrap().without::<String>().count(), 100);

    let mut with_vel = 0;
    s.query::<(&Pos, Option<&Vel>)>()
        .unwrap()
        .for_each(|_, (_, v)| {
            with_vel += usize::from(v.is_some());
        });
    assert_eq!(with_vel, 50);
    s.query::<(&mut Pos, Option<&mut Vel>)>()
        .unwrap()
        .for_each(|_, (p, v)| {
            if let Some(v) = v {
                p.1 += v.0;
                v.0 = 2.0;
            }
        });
    assert_eq!(s.query::<&Vel>().unwrap().entities().len(), 50);

    // first_index: flat writes in parallel, in the same order as sequential iteration
    let order = s.query::<&Pos>().unwrap().entities();
    let n = order.len();
    let out: Vec<std::sync::atomic::AtomicU32> = (0..n)
        .map(|_| std::sync::atomic::AtomicU32::new(u32::MAX))
        .collect();
    s.query::<&Pos>().unwrap().par_for_each_chunk(|c| {
        let base = c.first_index();
        let (ents, pos) = c.into_parts();
        for (k, (e, _p)) in ents.iter().zip(pos).enumerate() {
            out[base + k].store(e.index(), std::sync::atomic::Ordering::Relaxed);
        }
    });
    let got: Vec<u32> = out
        .iter()
        .map(|a| a.load(std::sync::atomic::Ordering::Relaxed))
        .collect();
    assert_eq!(got, order.iter().map(|e| e.index()).collect::<Vec<_>>());

    let mut total = 0;
    s.query::<(&Pos, Option<&Tag>)>()
        .unwrap()
        .for_each_chunk(|mut c| {
            assert_eq!(c.first_index(), total);
            total += c.len();
            let n = c.entities().len();
            let (p, t) = c.columns();
            assert_eq!(p.len(), n);
            if let Some(t) = t {
                assert_eq!(t.len(), p.len());
            }
        });
    assert_eq!(total, 100);
}

#[test]
fn par_for_each_matches_sequential() {
    let mut s = Store::with_chunk_bytes(1024);
    s.spawn_batch((0..10_000).map(|i| (Pos(i as f32, 0.0, 0.0), Vel(1.0, 2.0, 3.0))))
        .unwrap();
    s.query::<(&mut Pos, &Vel)>()
        .unwrap()
        .par_for_each(|_, (p, v)| {
            p.0 += v.0;
            p.1 += v.1;
        });
    s.query::<(&mut Pos, &Vel)>()
        .unwrap()
        .par_for_each_chunk(|c| {
            let (p, v) = c.into_columns();
            for (p, v) in p.iter_mut().zip(v) {
                p.2 += v.2;
            }
        });
    let mut i = 0.0;
    s.query::<&Pos>().unwrap().for_each(|_, p| {
        assert_eq!(*p, Pos(i + 1.0, 2.0, 3.0));
        i += 1.0;
    });
}

#[test]
fn changed_since_filters_chunks() {
    let mut s = Store::with_chunk_bytes(384); // 384 / (8 + 12 + 12) = 12 rows per chunk
    let es = s
        .spawn_batch((0..48).map(|i| (Pos(i as f32, 0.0, 0.0), Vel(0.0, 0.0, 0.0))))
        .unwrap();
    assert_eq!(s.chunk_capacity_of(es[0]).unwrap(), 12);
    assert_eq!(
        s.query::<&Pos>().unwrap().changed_since::<Pos>(0).count(),
        48
    );
    let f1 = s.advance_frame();
    assert_eq!(
        s.query::<&Pos>().unwrap().changed_since::<Pos>(f1).count(),
        0
    );
    s.get_mut::<Pos>(es[13]).unwrap().0 = -1.0; // chunk 1
    assert_eq!(
        s.query::<&Pos>().unwrap().changed_since::<Pos>(f1).count(),
        12
    );
    assert_eq!(
        s.query::<&Pos>().unwrap().changed_since::<Vel>(f1).count(),
        0
    );
    let f2 = s.advance_frame();
    // a read query does not stamp, a write query stamps every visited chunk
    s.query::<&Pos>().unwrap().for_each(|_, _| {});
    assert_eq!(
        s.query::<&Pos>().unwrap().changed_since::<Pos>(f2).count(),
        0
    );
    s.query::<&mut Vel>()
        .unwrap()
        .with::<Pos>()
        .for_each_chunk(|c| {
            assert_eq!(c.changed_frame::<Vel>(), s_frame());
            assert_eq!(c.changed_frame::<Pos>() == f1, c.chunk_id().index() == 1);
            assert_eq!(c.changed_frame::<Tag>(), 0);
        });
    fn s_frame() -> u64 {
        2
    }
    assert_eq!(
        s.query::<&Pos>().unwrap().changed_since::<Vel>(f2).count(),
        48
    );
    // a changed_since query itself only stamps the chunks it visits
    let f3 = s.advance_frame();
    s.get_mut::<Pos>(es[40]).unwrap().0 = 0.0; // chunk 3
    let mut visited = Vec::new();
    s.query::<(&mut Vel, &Pos)>()
        .unwrap()
        .changed_since::<Pos>(f3)
        .for_each_chunk(|c| {
            visited.push(c.chunk_id().index());
        });
    assert_eq!(visited, vec![3]);
    assert_eq!(
        s.query::<&Vel>().unwrap().changed_since::<Vel>(f3).count(),
        12
    );
    // structural changes count as writes
    let f4 = s.advance_frame();
    s.despawn(es[0]).unwrap(); // moves the last row into chunk 0
    assert_eq!(
        s.query::<&Pos>().unwrap().changed_since::<Pos>(f4).count(),
        12
    );
}

#[test]
fn a_view_tells_when_a_chunk_column_changed() {
    let mut s = Store::with_chunk_bytes(384); // 12 rows per chunk
    let es = s
        .spawn_batch((0..36).map(|i| (Pos(i as f32, 0.0, 0.0), Vel(0.0, 0.0, 0.0))))
        .unwrap();
    let mut chunks = Vec::new();
    s.query::<&Pos>()
        .unwrap()
        .for_each_chunk(|c| chunks.push((c.archetype_id(), c.chunk_id())));
    let f1 = s.advance_frame();
    s.get_mut::<Pos>(es[13]).unwrap().0 = -1.0; // chunk 1
    let frames = |s: &Store| -> Vec<Option<u64>> {
        let view = s.view_shared::<Pos>(None).unwrap();
        chunks
            .iter()
            .map(|&(a, c)| view.chunk_changed_frame(a, c))
            .collect()
    };
    assert_eq!(frames(&s), [Some(0), Some(f1), Some(0)]);
    let f2 = s.advance_frame();
    s.despawn(es[0]).unwrap(); // moves the last row into chunk 0
    assert_eq!(frames(&s), [Some(f2), Some(f1), Some(0)]);
    // No such column, no such chunk.
    let (a, c) = chunks[0];
    assert_eq!(
        s.view_shared::<Tag>(None)
            .unwrap()
            .chunk_changed_frame(a, c),
        None
    );
    assert_eq!(
        s.view_shared::<Pos>(None)
            .unwrap()
            .chunk_changed_frame(a, ChunkId(9)),
        None
    );
}

#[test]
fn command_buffer_from_many_rayon_threads() {
    let mut s = Store::new();
    let victims = s
        .spawn_batch((0..100).map(|i| (Pos(i as f32, 0.0, 0.0),)))
        .unwrap();
    let cmd = CommandBuffer::new();
    (0..8_000u32)
        .into_par_iter()
        .for_each_with(cmd.clone(), |cmd, i| {
            cmd.spawn((Pos(i as f32, 0.0, 0.0), Vel(0.0, 0.0, 0.0)));
            if i < 100 {
                cmd.insert(victims[i as usize], Tag);
            }
        });
    assert_eq!(cmd.len(), 8_100);
    let report = s.apply_commands(&cmd).unwrap();
    assert!(cmd.is_empty());
    assert_eq!(report.applied, 8_100);
    assert_eq!(report.spawned.len(), 8_000);
    assert_eq!(s.len(), 8_100);
    assert_eq!(s.query::<&Tag>().unwrap().count(), 100);
    let mut xs: Vec<i64> = Vec::new();
    s.query::<(&Pos, &Vel)>()
        .unwrap()
        .for_each(|_, (p, _)| xs.push(p.0 as i64));
    xs.sort_unstable();
    assert_eq!(xs, (0..8_000).collect::<Vec<_>>());

    // failures are collected and do not stop the rest; per-thread order is kept
    let cmd = CommandBuffer::new();
    cmd.despawn(victims[0]);
    cmd.despawn(victims[0]); // stale now
    cmd.remove::<Vel>(victims[1]); // missing
    cmd.insert(victims[2], Name("ok".into()));
    cmd.remove::<Name>(victims[2]);
    let err = s.apply_commands(&cmd).unwrap_err();
    let StoreError::CommandsFailed { report } = &err else {
        panic!("{err}")
    };
    assert_eq!(
        (report.total, report.applied, report.failures.len()),
        (5, 3, 2)
    );
    assert_eq!(report.failures[0].index, 1);
    assert_eq!(report.failures[0].entity, Some(victims[0]));
    assert!(matches!(
        report.failures[0].error,
        StoreError::StaleEntity { .. }
    ));
    assert_eq!(report.failures[1].command, "remove");
    assert!(
        report.failures[1]
            .type_name
            .is_some_and(|t| t.contains("Vel"))
    );
    assert!(!s.has::<Name>(victims[2]).unwrap());
    let msg = err.to_string();
    assert!(msg.contains("2 of 5") && msg.contains("remove"), "{msg}");
}

#[test]
fn resources() {
    let mut s = Store::new();
    assert!(!s.contains_resource::<u32>());
    assert!(matches!(
        s.resource::<u32>(),
        Err(StoreError::MissingResource { .. })
    ));
    assert_eq!(s.insert_resource(5u32), None);
    assert_eq!(s.insert_resource(6u32), Some(5));
    *s.resource_mut::<u32>().unwrap() += 1;
    assert_eq!(*s.resource::<u32>().unwrap(), 7);
    s.insert_resource(Name("r".into()));
    assert_eq!(s.remove_resource::<u32>().unwrap(), 7);
    assert!(s.remove_resource::<u32>().is_err());
    assert_eq!(s.resource::<Name>().unwrap().0, "r");
    let r = s.resource_shared::<Name>(None).unwrap();
    assert!(matches!(
        s.resource_mut_shared::<Name>(None),
        Err(StoreError::BorrowConflict {
            exclusive: true,
            ..
        })
    ));
    let r2 = s.resource_shared::<Name>(None).unwrap();
    assert_eq!(r.0, r2.0);
    drop((r, r2));
    let mut w = s.resource_mut_shared::<Name>(None).unwrap();
    w.0.push('!');
    assert!(s.resource_shared::<Name>(None).is_err());
    drop(w);
    assert_eq!(s.resource::<Name>().unwrap().0, "r!");
}

#[test]
fn scoped_slice_only_inside_scope() {
    let mut s = Store::new();
    let mut palette = vec![0.0f32; 8];
    assert!(matches!(
        s.scoped_slice_mut::<f32>(),
        Err(StoreError::NoScopedSlice { .. })
    ));
    let r = s.with_scoped_slice(&mut palette, |s| {
        let sl = s.scoped_slice_mut::<f32>().unwrap();
        sl[3] = 3.0;
        {
            let mut g = s.scoped_slice_shared::<f32>(None).unwrap();
            g[4] = 4.0;
            assert!(s.scoped_slice_shared::<f32>(None).is_err(), "exclusive");
        }
        let mut inner = vec![1u8; 2];
        s.with_scoped_slice(&mut inner, |s| s.scoped_slice_mut::<u8>().unwrap()[0] = 9);
        assert_eq!(inner, [9, 1]);
        assert!(s.scoped_slice_mut::<u8>().is_err());
        s.scoped_slice_mut::<f32>().unwrap().len()
    });
    assert_eq!(r, 8);
    assert_eq!(palette[3], 3.0);
    assert_eq!(palette[4], 4.0);
    assert!(s.scoped_slice_mut::<f32>().is_err());

    // removed on unwind too
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        s.with_scoped_slice(&mut palette, |_| panic!("boom"))
    }));
    assert!(caught.is_err());
    assert!(s.scoped_slice_mut::<f32>().is_err());

    // a store swapped out inside the scope keeps a dead entry, never a dangling one
    let mut other = Store::new();
    s.with_scoped_slice(&mut palette, |s| std::mem::swap(s, &mut other));
    assert!(other.scoped_slice_mut::<f32>().is_err());
    assert!(s.scoped_slice_mut::<f32>().is_err());
}

#[test]
fn bundles_up_to_twelve() {
    let mut s = Store::new();
    let e = s
        .spawn((
            1u8,
            2u16,
            3u32,
            4u64,
            5i8,
            6i16,
            7i32,
            8i64,
            9f32,
            10f64,
            Tag,
            Name("12".into()),
        ))
        .unwrap();
    assert_eq!(s.get::<f64>(e).unwrap(), &10.0);
    assert_eq!(s.get::<Name>(e).unwrap().0, "12");
    let mut n = 0;
    s.query::<(&u8, &u16, &u32, &u64, &i8, &i16, &i32, &mut i64)>()
        .unwrap()
        .for_each(|_, (a, b, c, d, e, f, g, h)| {
            *h += 1;
            n = *a as i64
                + *b as i64
                + *c as i64
                + *d as i64
                + *e as i64
                + *f as i64
                + *g as i64
                + *h;
        });
    assert_eq!(n, 37);
}

#[test]
fn same_operations_give_same_layout() {
    fn build() -> (Store, Vec<Entity>) {
        let mut s = Store::with_chunk_bytes(512);
        let mut es = Vec::new();
        for i in 0..300u32 {
            let e = match i % 3 {
                0 => s.spawn((Pos(i as f32, 0.0, 0.0),)).unwrap(),
                1 => s
                    .spawn((Pos(i as f32, 0.0, 0.0), Vel(0.0, 0.0, 0.0)))
                    .unwrap(),
                _ => s.spawn((Vel(i as f32, 0.0, 0.0), Tag)).unwrap(),
            };
            es.push(e);
            if i % 7 == 0 {
                s.insert(es[(i / 2) as usize], Name(i.to_string())).unwrap();
            }
            if i % 11 == 0 {
                let _ = s.despawn(es[(i / 3) as usize]);
            }
        }
        (s, es)
    }
    let (mut a, ea) = build();
    let (mut b, eb) = build();
    assert_eq!(
        ea.iter().map(|e| e.index()).collect::<Vec<_>>(),
        eb.iter().map(|e| e.index()).collect::<Vec<_>>()
    );
    for (x, y) in ea.iter().zip(&eb) {
        assert_eq!(a.location(*x).ok(), b.location(*y).ok());
    }
    let qa: Vec<u32> = a
        .query::<Option<&Pos>>()
        .unwrap()
        .entities()
        .iter()
        .map(|e| e.index())
        .collect();
    let qb: Vec<u32> = b
        .query::<Option<&Pos>>()
        .unwrap()
        .entities()
        .iter()
        .map(|e| e.index())
        .collect();
    assert_eq!(qa, qb);
}

#[test]
fn swap_remove_keeps_locations_consistent() {
    let mut s = Store::with_chunk_bytes(128);
    let es = s
        .spawn_batch((0..200).map(|i| (i as u64, Pos(i as f32, 0.0, 0.0))))
        .unwrap();
    for e in es.iter().filter(|e| e.index() % 3 == 1) {
        s.despawn(*e).unwrap();
    }
    for e in es.iter().filter(|e| e.index() % 3 == 2) {
        s.insert(*e, Tag).unwrap();
    }
    for e in es
        .iter()
        .filter(|e| e.index() % 3 == 0 && e.index() % 2 == 0)
    {
        assert_eq!(s.remove::<Pos>(*e).unwrap().0, e.index() as f32);
    }
    for e in &es {
        match e.index() % 3 {
            1 => assert!(!s.contains(*e)),
            _ => assert_eq!(*s.get::<u64>(*e).unwrap(), u64::from(e.index())),
        }
    }
    let mut seen = 0;
    s.query::<&u64>().unwrap().for_each(|e, v| {
        assert_eq!(*v, u64::from(e.index()));
        seen += 1;
    });
    assert_eq!(seen, s.len());
}

#[test]
fn a_nested_tuple_bundle_is_an_error_not_a_silent_tuple_component() {
    let mut s = Store::new();
    let err = s.spawn(((1u32, 2.0f32), 3u8)).unwrap_err();
    assert!(matches!(err, StoreError::NestedBundle { .. }), "{err}");
    assert!(err.to_string().contains("flat tuple"));
    assert!(s.is_empty());
    // A flat tuple, and a tuple wrapped in a struct, are fine.
    #[derive(Debug, PartialEq)]
    struct Pair((u32, f32));
    let e = s.spawn((1u32, 2.0f32, Pair((3, 4.0)))).unwrap();
    assert_eq!(s.get::<Pair>(e).unwrap(), &Pair((3, 4.0)));
}

#[test]
fn par_for_each_chunk_with_zero_one_and_many_chunks() {
    let mut s = Store::with_chunk_bytes(1024);
    let collect = |s: &mut Store| {
        let seen = std::sync::Mutex::new(Vec::new());
        s.query::<&Pos>().unwrap().par_for_each_chunk(|c| {
            let first = c.first_index();
            let values: Vec<f32> = c.into_columns().iter().map(|p| p.0).collect();
            seen.lock().unwrap().push((first, values));
        });
        let mut seen = seen.into_inner().unwrap();
        seen.sort_by_key(|(first, _)| *first);
        seen
    };
    assert!(collect(&mut s).is_empty());
    s.spawn_batch((0..3).map(|i| (Pos(i as f32, 0.0, 0.0),)))
        .unwrap();
    assert_eq!(collect(&mut s), [(0, vec![0.0, 1.0, 2.0])]);
    s.spawn_batch((3..500).map(|i| (Pos(i as f32, 0.0, 0.0),)))
        .unwrap();
    let seen = collect(&mut s);
    assert!(seen.len() > 2, "{} chunks", seen.len());
    let flat: Vec<f32> = seen.iter().flat_map(|(_, v)| v.iter().copied()).collect();
    assert_eq!(flat, (0..500).map(|i| i as f32).collect::<Vec<_>>());
    // the views of `chunks()` agree with the closure's chunks
    let mut q = s.query::<&Pos>().unwrap();
    let views: Vec<(usize, usize)> = q
        .chunks()
        .iter()
        .map(|c| (c.first_index(), c.len()))
        .collect();
    assert_eq!(
        views,
        seen.iter()
            .map(|(first, v)| (*first, v.len()))
            .collect::<Vec<_>>()
    );
}

/// Ten distinct component types, more than the borrow lists keep inline.
#[derive(Debug, Clone, Copy, PartialEq)]
struct C<const K: usize>(u32);

#[test]
fn queries_naming_many_types_borrow_and_release_them_all() {
    let mut s = Store::new();
    s.spawn((
        C::<0>(0),
        C::<1>(1),
        C::<2>(2),
        C::<3>(3),
        C::<4>(4),
        C::<5>(5),
        C::<6>(6),
        C::<7>(7),
        C::<8>(8),
        C::<9>(9),
    ))
    .unwrap();
    let store = &s;
    {
        let q = store
            .query_shared::<(
                (&C<0>, &C<1>, &C<2>, &C<3>, &C<4>, &C<5>, &C<6>, &C<7>),
                (&mut C<8>, &C<9>),
            )>(&query_access().unwrap(), |_| None)
            .unwrap();
        assert_eq!(q.count(), 1);
        // every one of the ten types is borrowed, the 9th exclusively
        assert!(
            store
                .query_shared::<&C<8>>(&query_access().unwrap(), |_| None)
                .is_err()
        );
        assert!(
            store
                .query_shared::<&mut C<9>>(&query_access().unwrap(), |_| None)
                .is_err()
        );
        assert!(
            store
                .query_shared::<&C<0>>(&query_access().unwrap(), |_| None)
                .is_ok()
        );
    }
    // and released again
    assert!(
        store
            .query_shared::<&mut C<8>>(&query_access().unwrap(), |_| None)
            .is_ok()
    );
    assert!(
        store
            .query_shared::<&mut C<0>>(&query_access().unwrap(), |_| None)
            .is_ok()
    );
    assert!(
        store
            .query_shared::<&mut C<9>>(&query_access().unwrap(), |_| None)
            .is_ok()
    );
}
