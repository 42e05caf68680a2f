//! `LodCrowd` against the real pipeline (the `Animator`): hysteresis, the same pose from both
//! tiers on switch frames, root motion through a CPU → baked → CPU round trip, bad input.
#![allow(clippy::unwrap_used, clippy::panic)] // tests: a failed step is a failed test

use glam::{Quat, Vec3};
use sinew_fixtures::builtin;
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{AssetRegistry, Clip, Rig, SkinnedMesh, Transform};
use sinew_jobs::bake_texture::BakeTextureOptions;
use sinew_jobs::component::{
    AnimationToProcess, EntityTransform, FrameSlot, RootMotion, SkinRef, animated,
};
use sinew_jobs::lod::{LodCrowd, LodCrowdError, LodPath, LodSwitch};
use sinew_runtime::store::{Entity, Store};
use std::sync::Arc;

const DT: f32 = 1.0 / 60.0;

/// The built-in character: rig, mesh, idle, walk and run.
struct Model {
    rig: Arc<Rig>,
    mesh: Arc<SkinnedMesh>,
    idle: Arc<Clip>,
    walk: Arc<Clip>,
    run: Arc<Clip>,
}

fn model() -> Model {
    let c = builtin::bake_character(&AssetRegistry::new()).unwrap();
    Model {
        rig: c.rig,
        mesh: c.mesh,
        idle: c.idle,
        walk: c.walk,
        run: c.run,
    }
}

/// A crowd baked at the frame rate (every frame's playback time is a frame time of the bake).
fn crowd(m: &Model, distance: f32, hysteresis: f32) -> LodCrowd {
    LodCrowd::new(
        LodSwitch::new(distance, hysteresis).unwrap(),
        &m.rig,
        &m.mesh,
        vec![m.idle.clone(), m.walk.clone(), m.run.clone()],
        &BakeTextureOptions::new(1.0 / DT, 8192),
    )
    .unwrap()
}

/// A skinned character with root motion at `at`, playing `clip` from `time` (a multiple of
/// `DT`, on the bake's grid).
fn spawn(store: &mut Store, m: &Model, clip: &Arc<Clip>, time: f32, at: Transform) -> Entity {
    let e = store
        .spawn(animated(
            m.rig.clone(),
            vec![AnimationToProcess::new(clip.clone()).at(time)],
        ))
        .unwrap();
    store.insert(e, SkinRef::new(m.mesh.clone())).unwrap();
    store.insert(e, RootMotion::default()).unwrap();
    store.insert(e, EntityTransform(at)).unwrap();
    e
}

fn model_size(mesh: &SkinnedMesh) -> f32 {
    let (lo, hi) = mesh.positions().iter().fold(
        (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)),
        |(lo, hi), p| (lo.min(*p), hi.max(*p)),
    );
    (hi - lo).length()
}

/// One frame in the order an engine makes the calls.
fn frame(lod: &mut LodCrowd, animator: &mut Animator, store: &mut Store, eye: Vec3) {
    lod.before_frame(store, eye, DT).unwrap();
    animator.run_frame(store, DT).unwrap();
    lod.after_frame(store).unwrap();
}

/// A standing character (idle) 19 m from an eye that shakes by up to ±2.5 m along the line
/// between them, every frame, for 300 frames: with a 6 m band (17–23 m) it keeps the CPU tier
/// it was first given; with no band it switches on every crossing of 20 m, counted here from
/// the distances themselves. Then the eye backs off to 23.5 m: one switch, to baked.
#[test]
fn a_character_oscillating_inside_the_band_does_not_switch() {
    let m = model();
    let shake = |f: usize| {
        let t = f as f32;
        2.0 * (t * std::f32::consts::TAU / 7.0).sin() + 0.5 * (t * 2.1).sin()
    };
    let distance_at = |f: usize| 19.0 + shake(f);
    let crossings = (1..300)
        .filter(|&f| (distance_at(f) < 20.0) != (distance_at(f - 1) < 20.0))
        .count();
    assert!(crossings > 50, "{crossings}");
    for (band, expected) in [(6.0, 0), (0.0, crossings)] {
        let mut lod = crowd(&m, 20.0, band);
        let mut store = Store::new();
        let mut animator = Animator::new(&mut store).unwrap();
        let e = spawn(&mut store, &m, &m.idle, 0.0, Transform::IDENTITY);
        lod.add(&store, e).unwrap();
        let mut switches = 0;
        for f in 0..300 {
            let eye = Vec3::new(0.0, 0.0, -distance_at(f));
            frame(&mut lod, &mut animator, &mut store, eye);
            switches += lod.switches().len();
            if f == 0 {
                assert_eq!(lod.path(e), Some(LodPath::Cpu));
            }
        }
        assert_eq!(switches, expected, "band {band}");
        if band > 0.0 {
            assert_eq!(lod.path(e), Some(LodPath::Cpu));
            frame(
                &mut lod,
                &mut animator,
                &mut store,
                Vec3::new(0.0, 0.0, -23.5),
            );
            assert_eq!(lod.switches().len(), 1);
            assert_eq!(
                (lod.switches()[0].entity, lod.switches()[0].to),
                (e, LodPath::Baked)
            );
            // Parked after the switch frame: the pipeline no longer sees it.
            frame(
                &mut lod,
                &mut animator,
                &mut store,
                Vec3::new(0.0, 0.0, -23.5),
            );
            assert_eq!(animator.palette_len(&store), 0);
            assert_eq!(lod.baked_instances().count(), 1);
        }
    }
}

/// Characters walking and running past an eye that flies by: on every switch frame, in both
/// directions, the mesh skinned with the pipeline's palette and with the baked palette at the
/// crowd's playback time differ by at most 1e-5 of the model size.
#[test]
fn the_switch_frame_shows_the_same_pose_from_both_tiers() {
    let m = model();
    let size = model_size(&m.mesh);
    let mut lod = crowd(&m, 6.0, 1.0);
    let mut store = Store::new();
    let mut animator = Animator::new(&mut store).unwrap();
    for i in 0..24 {
        let clip = [&m.walk, &m.run][i % 2];
        let at = Transform::new(
            Vec3::new((i % 4) as f32 * 2.0, 0.0, (i / 4) as f32 * 2.0),
            Quat::from_rotation_y(0.1 * i as f32),
            Vec3::ONE,
        );
        let e = spawn(&mut store, &m, clip, (7 * i) as f32 * DT, at);
        lod.add(&store, e).unwrap();
    }
    let bones = m.mesh.bone_count();
    let mut baked = vec![[0.0f32; 12]; bones];
    let (mut to_cpu, mut to_baked, mut worst) = (0, 0, 0.0f32);
    for f in 0..480 {
        // From 3 m behind the crowd along +z at 2.5 m/s: slower than a run, faster than a
        // walk, so both kinds of switch happen.
        let eye = Vec3::new(3.0, 1.5, -3.0 + 2.5 * (f + 1) as f32 * DT);
        lod.before_frame(&mut store, eye, DT).unwrap();
        animator.run_frame(&mut store, DT).unwrap();
        for s in lod.switches() {
            let off = store.get::<FrameSlot>(s.entity).unwrap().palette_offset as usize;
            let cpu = &animator.palettes(&store)[off..off + bones];
            lod.baked_palette(s.entity, &mut baked).unwrap();
            let (pa, _) = m.mesh.skin_cpu(cpu);
            let (pb, _) = m.mesh.skin_cpu(&baked);
            let err = pa
                .iter()
                .zip(&pb)
                .map(|(a, b)| (*a - *b).length())
                .fold(0.0f32, f32::max)
                / size;
            assert!(err <= 1e-5, "frame {f}, {s:?}: relative error {err}");
            worst = worst.max(err);
            match s.to {
                LodPath::Cpu => to_cpu += 1,
                LodPath::Baked => to_baked += 1,
            }
        }
        lod.after_frame(&mut store).unwrap();
    }
    println!("{to_cpu} switches to CPU, {to_baked} to baked, worst pose difference {worst:e}");
    assert!(to_cpu >= 3 && to_baked >= 3, "{to_cpu} / {to_baked}");
}

/// The same characters (walk and run, turned, one scaled) run all on the CPU tier and through
/// CPU → baked → CPU (the eye near, then 1 km away, then near again) end at the same place and
/// heading. The CPU clock accumulates `time += dt` in f32 while the baked one is `phase + g`,
/// so they differ by float rounding: 1e-3 m bounds it over 4 s at 3.5 m/s.
#[test]
fn root_motion_continues_through_a_cpu_baked_cpu_round_trip() {
    let m = model();
    let starts = [
        (
            &m.walk,
            Transform::new(Vec3::ZERO, Quat::IDENTITY, Vec3::ONE),
        ),
        (
            &m.run,
            Transform::new(
                Vec3::new(4.0, 0.0, 1.0),
                Quat::from_rotation_y(0.7),
                Vec3::ONE,
            ),
        ),
        (
            &m.walk,
            Transform::new(
                Vec3::new(-3.0, 0.0, 2.0),
                Quat::from_rotation_y(-1.2),
                Vec3::splat(1.5),
            ),
        ),
    ];
    let frames = 240;
    let eye_at = |f: usize| {
        if (60..150).contains(&f) {
            Vec3::new(0.0, 0.0, -1000.0)
        } else {
            Vec3::new(0.0, 2.0, 0.0)
        }
    };

    let mut cpu_store = Store::new();
    let mut cpu_animator = Animator::new(&mut cpu_store).unwrap();
    let cpu: Vec<Entity> = starts
        .iter()
        .enumerate()
        .map(|(i, (c, t))| spawn(&mut cpu_store, &m, c, (5 * i) as f32 * DT, *t))
        .collect();
    for _ in 0..frames {
        cpu_animator.run_frame(&mut cpu_store, DT).unwrap();
    }

    let mut lod = crowd(&m, 20.0, 2.0);
    let mut store = Store::new();
    let mut animator = Animator::new(&mut store).unwrap();
    let mixed: Vec<Entity> = starts
        .iter()
        .enumerate()
        .map(|(i, (c, t))| spawn(&mut store, &m, c, (5 * i) as f32 * DT, *t))
        .collect();
    for &e in &mixed {
        lod.add(&store, e).unwrap();
    }
    let mut trips = vec![Vec::new(); mixed.len()];
    for f in 0..frames {
        frame(&mut lod, &mut animator, &mut store, eye_at(f));
        for s in lod.switches() {
            trips[s.index].push((f, s.to));
        }
    }
    for (i, (&a, &b)) in cpu.iter().zip(&mixed).enumerate() {
        assert_eq!(
            trips[i],
            vec![(60, LodPath::Baked), (150, LodPath::Cpu)],
            "character {i}"
        );
        let want = cpu_store.get::<EntityTransform>(a).unwrap().0;
        let got = store.get::<EntityTransform>(b).unwrap().0;
        let d = want.translation.distance(got.translation);
        println!(
            "character {i}: {} vs {} ({d:e} m)",
            want.translation, got.translation
        );
        assert!(d < 1e-3, "character {i}: {got:?} vs {want:?}");
        assert!(want.rotation.dot(got.rotation).abs() > 1.0 - 1e-6);
        // They really walked: 4 s at 1.4 m/s (walk) or 3.5 m/s (run).
        assert!(want.translation.distance(starts[i].1.translation) > 4.0);
    }
}

/// Bad input is a typed error that names the entity (and the clip), and leaves the crowd
/// usable.
#[test]
fn bad_input_is_an_error_naming_the_entity() {
    let m = model();
    let mut lod = LodCrowd::new(
        LodSwitch::new(10.0, 1.0).unwrap(),
        &m.rig,
        &m.mesh,
        vec![m.walk.clone()],
        &BakeTextureOptions::new(60.0, 8192),
    )
    .unwrap();
    let mut store = Store::new();
    let mut animator = Animator::new(&mut store).unwrap();

    // A clip the texture does not hold.
    let runner = spawn(&mut store, &m, &m.run, 0.0, Transform::IDENTITY);
    let e = lod.add(&store, runner).unwrap_err();
    assert!(
        matches!(&e, LodCrowdError::ClipNotBaked { entity, clip, .. } if *entity == runner && clip == "run"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!(
            "lod crowd: entity {runner} plays clip 'run', which is not in the baked texture (baked: walk)"
        )
    );

    // A component missing.
    let bare = store
        .spawn(animated(
            m.rig.clone(),
            vec![AnimationToProcess::new(m.walk.clone())],
        ))
        .unwrap();
    store
        .insert(bare, EntityTransform(Transform::IDENTITY))
        .unwrap();
    let e = lod.add(&store, bare).unwrap_err();
    assert_eq!(
        e,
        LodCrowdError::MissingComponent {
            entity: bare,
            component: "SkinRef"
        }
    );
    assert_eq!(
        e.to_string(),
        format!("lod crowd: entity {bare} has no SkinRef")
    );

    // A NaN position: the distance would be NaN.
    let walker = spawn(&mut store, &m, &m.walk, 0.0, Transform::IDENTITY);
    lod.add(&store, walker).unwrap();
    assert!(matches!(
        lod.add(&store, walker),
        Err(LodCrowdError::AlreadyInCrowd { .. })
    ));
    store
        .get_mut::<EntityTransform>(walker)
        .unwrap()
        .0
        .translation
        .x = f32::NAN;
    let e = lod.before_frame(&mut store, Vec3::ZERO, DT).unwrap_err();
    assert!(
        matches!(e, LodCrowdError::NonFinitePosition { entity, .. } if entity == walker),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains(&format!("entity {walker} is at [NaN, 0, 0]")),
        "{e}"
    );

    // A NaN eye, a bad frame time, and calls out of order.
    store
        .get_mut::<EntityTransform>(walker)
        .unwrap()
        .0
        .translation
        .x = 0.0;
    let nan_eye = Vec3::new(0.0, f32::NAN, 0.0);
    assert!(matches!(
        lod.before_frame(&mut store, nan_eye, DT),
        Err(LodCrowdError::NonFiniteEye { .. })
    ));
    assert!(matches!(
        lod.before_frame(&mut store, Vec3::ZERO, 0.0),
        Err(LodCrowdError::BadTimeStep { .. })
    ));
    let e = lod.after_frame(&mut store).unwrap_err();
    assert_eq!(
        e.to_string(),
        "lod crowd: after_frame called where before_frame was expected"
    );

    // After the rejected calls the crowd still runs its frames.
    frame(&mut lod, &mut animator, &mut store, Vec3::ZERO);
    assert_eq!(lod.path(walker), Some(LodPath::Cpu));
    assert_eq!(lod.time(), DT);
}

/// A baked character taken out of the crowd rejoins the pipeline where the baked tier left it
/// (transform and playback time); the last character takes its index.
#[test]
fn removing_a_baked_character_puts_it_back_into_the_pipeline() {
    use sinew_jobs::component::Animations;
    let m = model();
    let mut lod = crowd(&m, 10.0, 1.0);
    let mut store = Store::new();
    let mut animator = Animator::new(&mut store).unwrap();
    let at = |z: f32| Transform::from_translation(Vec3::new(0.0, 0.0, z));
    let near = spawn(&mut store, &m, &m.walk, 0.0, at(0.0));
    let far = spawn(&mut store, &m, &m.walk, 0.0, at(50.0));
    let farther = spawn(&mut store, &m, &m.run, 0.0, at(60.0));
    for e in [near, far, farther] {
        lod.add(&store, e).unwrap();
    }
    for _ in 0..30 {
        frame(&mut lod, &mut animator, &mut store, Vec3::ZERO);
    }
    assert_eq!(lod.paths(), &[LodPath::Cpu, LodPath::Baked, LodPath::Baked]);
    let bones = m.mesh.bone_count();
    assert_eq!(animator.palette_len(&store), bones);
    let world = lod.world(far).unwrap();
    // Half a second of walking at 1.4 m/s, by the baked tier's root motion.
    let walked = world.translation.distance(Vec3::new(0.0, 0.0, 50.0));
    assert!((walked - 0.7).abs() < 0.1, "{walked}");

    lod.remove(&mut store, far).unwrap();
    assert_eq!(store.get::<EntityTransform>(far).unwrap().0, world);
    let a = &store.get::<Animations>(far).unwrap().as_slice()[0];
    assert!((a.time - 30.0 * DT).abs() < 1e-5, "{}", a.time);
    assert_eq!(lod.entities().collect::<Vec<_>>(), vec![near, farther]);
    assert_eq!(
        (lod.path(far), lod.path(farther)),
        (None, Some(LodPath::Baked))
    );
    assert!(matches!(
        lod.remove(&mut store, far),
        Err(LodCrowdError::NotInCrowd { .. })
    ));
    frame(&mut lod, &mut animator, &mut store, Vec3::ZERO);
    assert_eq!(animator.palette_len(&store), 2 * bones);
}
