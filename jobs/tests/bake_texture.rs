//! Baked animation textures against the real CPU pipeline (the `Animator`): equality at frame
//! times, interpolation error against bake rate, half-float error, errors, and the LOD switch.
#![allow(clippy::unwrap_used, clippy::panic)] // tests: a failed step is a failed test

use glam::Vec3;
use sinew_fixtures::builtin;
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{AssetRegistry, Clip, RawBone, RawRig, Rig, SkinnedMesh, Transform};
use sinew_jobs::bake_texture::{
    BakeLayout, BakeTextureError, BakeTextureJob, BakeTextureOptions, BakedAnimationTexture,
    bake_animation_texture, plan,
};
use sinew_jobs::component::{
    AnimationToProcess, Animations, EntityTransform, FrameSlot, RootMotion, SkinRef, animated,
};
use sinew_jobs::import::import_gltf;
use sinew_jobs::lod::{LodClock, LodPath, LodSwitch};
use sinew_jobs::pipeline::PipelineConfig;
use sinew_runtime::store::{Entity, Store};
use std::sync::Arc;

/// A model: rig, mesh and the clips to bake.
struct Model {
    name: &'static str,
    rig: Arc<Rig>,
    mesh: Arc<SkinnedMesh>,
    clips: Vec<Arc<Clip>>,
}

fn builtin_model() -> Model {
    let c = builtin::bake_character(&AssetRegistry::new()).unwrap();
    Model {
        name: "builtin",
        rig: c.rig,
        mesh: c.mesh,
        clips: vec![c.idle, c.walk, c.run, c.wave],
    }
}

/// Fox (glTF sample model, from the fixture assets).
fn fox_model() -> Model {
    let path = sinew_fixtures::asset_path("gltf/Fox.glb").unwrap();
    let scene = import_gltf(&path, &AssetRegistry::new()).unwrap();
    let mesh = scene.meshes[0].skinned_mesh.clone();
    Model {
        name: "Fox",
        rig: scene.rig,
        mesh,
        clips: scene.clips,
    }
}

/// Rest-pose bounding-box diagonal of the mesh.
fn model_size(mesh: &SkinnedMesh) -> f32 {
    let (lo, hi) = mesh.positions().iter().fold(
        (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)),
        |(lo, hi), p| (lo.min(*p), hi.max(*p)),
    );
    (hi - lo).length()
}

/// The real pipeline: one entity per (clip, time), all posed in one frame with the clock node
/// off (times are exact). Returns one palette per request.
fn cpu_palettes(m: &Model, requests: &[(usize, f32)], root_motion: bool) -> Vec<Vec<[f32; 12]>> {
    let mut store = Store::new();
    let config = PipelineConfig {
        advance_clocks: false,
        ..PipelineConfig::default()
    };
    let mut animator = Animator::with(&mut store, config, |_, _| {}).unwrap();
    let mut entities: Vec<Entity> = Vec::new();
    for &(c, t) in requests {
        let bundle = animated(
            m.rig.clone(),
            vec![AnimationToProcess::new(m.clips[c].clone()).at(t)],
        );
        let e = store.spawn(bundle).unwrap();
        store.insert(e, SkinRef::new(m.mesh.clone())).unwrap();
        if root_motion {
            store.insert(e, RootMotion::default()).unwrap();
            store.insert(e, EntityTransform::default()).unwrap();
        }
        entities.push(e);
    }
    animator.run_frame(&mut store, 0.0).unwrap();
    let palettes = animator.palettes(&store);
    entities
        .iter()
        .map(|e| {
            let s = *store.get::<FrameSlot>(*e).unwrap();
            palettes[s.palette_offset as usize..(s.palette_offset + s.palette_count) as usize]
                .to_vec()
        })
        .collect()
}

fn max_position_error(mesh: &SkinnedMesh, a: &[[f32; 12]], b: &[[f32; 12]]) -> f32 {
    let (pa, _) = mesh.skin_cpu(a);
    let (pb, _) = mesh.skin_cpu(b);
    pa.iter()
        .zip(&pb)
        .map(|(x, y)| (*x - *y).length())
        .fold(0.0, f32::max)
}

fn bake(m: &Model, rate: f32) -> BakedAnimationTexture {
    bake_animation_texture(
        &m.rig,
        &m.mesh,
        &m.clips,
        &BakeTextureOptions::new(rate, 8192),
    )
    .unwrap()
}

/// At every stored frame time (and the same times a few loops later) the baked palette skins
/// the mesh to the pipeline's positions within 1e-5 of the model size.
fn check_frame_times(m: &Model, rate: f32) {
    let baked = bake(m, rate);
    let size = model_size(&m.mesh);
    let mut requests = Vec::new();
    for (c, info) in baked.clips.iter().enumerate() {
        for k in 0..info.intervals().max(1) {
            let t = info.frame_time(k);
            requests.push((c, t));
            if info.looping != 0 && k % 7 == 3 {
                requests.push((c, t + 2.0 * info.duration)); // two loops later
            }
        }
    }
    let cpu = cpu_palettes(m, &requests, true);
    let mut out = vec![[0.0f32; 12]; m.mesh.bone_count()];
    let mut worst = 0.0f32;
    for (&(c, t), cpu) in requests.iter().zip(&cpu) {
        baked.sample_palette(c, t, &mut out).unwrap();
        let e = max_position_error(&m.mesh, &out, cpu) / size;
        assert!(
            e <= 1e-5,
            "{} clip {} t {t}: relative error {e}",
            m.name,
            baked.clip_names[c]
        );
        worst = worst.max(e);
    }
    // The check is not vacuous: the poses really differ between frames.
    let (a, b) = (
        &cpu[0],
        &cpu[requests.iter().position(|r| r.0 == 0 && r.1 > 0.3).unwrap()],
    );
    assert!(max_position_error(&m.mesh, a, b) / size > 1e-3);
    eprintln!(
        "{}: {} frame times at {rate} Hz, worst relative error {worst:e}",
        m.name,
        requests.len()
    );
}

#[test]
fn baked_frames_equal_the_pipeline_at_frame_times_builtin() {
    check_frame_times(&builtin_model(), 30.0);
    check_frame_times(&builtin_model(), 23.0); // durations not multiples of the frame length
}

#[test]
fn baked_frames_equal_the_pipeline_at_frame_times_fox() {
    check_frame_times(&fox_model(), 30.0);
}

#[test]
fn without_root_motion_in_place_the_root_track_is_baked_as_is() {
    let m = builtin_model();
    let mut opts = BakeTextureOptions::new(30.0, 8192);
    opts.root_motion_in_place = false;
    let free = bake_animation_texture(&m.rig, &m.mesh, &m.clips, &opts).unwrap();
    let in_place = bake(&m, 30.0);
    let walk = 1;
    let t = free.clips[walk].frame_time(15);
    let cpu_free = cpu_palettes(&m, &[(walk, t)], false);
    let mut out = vec![[0.0f32; 12]; m.mesh.bone_count()];
    free.sample_palette(walk, t, &mut out).unwrap();
    assert!(max_position_error(&m.mesh, &out, &cpu_free[0]) / model_size(&m.mesh) <= 1e-5);
    let mut out2 = vec![[0.0f32; 12]; m.mesh.bone_count()];
    in_place.sample_palette(walk, t, &mut out2).unwrap();
    // Half a walk cycle apart: the free root has moved forward by about half a walk length.
    assert!(max_position_error(&m.mesh, &out, &out2) > 0.3);
}

/// Max position error (model units) of the baked interpolation against the pipeline, per
/// clip, at 40 sample times per second offset from the frame grid.
fn interpolation_error(m: &Model, rate: f32) -> Vec<f32> {
    let baked = bake(m, rate);
    let mut requests = Vec::new();
    for (c, info) in baked.clips.iter().enumerate() {
        let n = (info.duration * 40.0).ceil() as usize;
        for i in 0..n {
            requests.push((c, (i as f32 + 0.37) / 40.0));
        }
    }
    let cpu = cpu_palettes(m, &requests, true);
    let mut out = vec![[0.0f32; 12]; m.mesh.bone_count()];
    let mut worst = vec![0.0f32; m.clips.len()];
    for (&(c, t), cpu) in requests.iter().zip(&cpu) {
        baked.sample_palette(c, t, &mut out).unwrap();
        worst[c] = worst[c].max(max_position_error(&m.mesh, &out, cpu));
    }
    worst
}

fn check_error_decreases(m: &Model) {
    let rates = [15.0, 30.0, 60.0, 120.0];
    let per_clip: Vec<Vec<f32>> = rates.iter().map(|&r| interpolation_error(m, r)).collect();
    let errors: Vec<f32> = per_clip
        .iter()
        .map(|e| e.iter().copied().fold(0.0, f32::max))
        .collect();
    let names: Vec<&str> = m.clips.iter().map(|c| c.name()).collect();
    eprintln!(
        "{} (model size {:.3}): rate -> max position error, all clips and per clip {names:?}",
        m.name,
        model_size(&m.mesh)
    );
    for ((r, e), pc) in rates.iter().zip(&errors).zip(&per_clip) {
        let pc: Vec<String> = pc.iter().map(|x| format!("{x:.5}")).collect();
        eprintln!("  | {} | {r} Hz | {e:.5} | {} |", m.name, pc.join(" | "));
    }
    for w in errors.windows(2) {
        assert!(
            w[1] < w[0],
            "{}: error does not decrease with rate: {errors:?}",
            m.name
        );
    }
    assert!(errors[0] > 0.0);
}

#[test]
fn interpolation_error_decreases_with_rate_builtin() {
    check_error_decreases(&builtin_model());
}

#[test]
fn interpolation_error_decreases_with_rate_fox() {
    check_error_decreases(&fox_model());
}

#[test]
fn half_float_error_is_small_but_real() {
    let models = [builtin_model(), fox_model()];
    for m in &models {
        let full = bake(m, 30.0);
        let half = full.quantized_f16();
        let (mut a, mut b) = (
            vec![[0.0f32; 12]; m.mesh.bone_count()],
            vec![[0.0f32; 12]; m.mesh.bone_count()],
        );
        let mut worst = 0.0f32;
        for (c, info) in full.clips.iter().enumerate() {
            for k in 0..info.frame_count {
                let t = info.frame_time(k);
                full.sample_palette(c, t, &mut a).unwrap();
                half.sample_palette(c, t, &mut b).unwrap();
                worst = worst.max(max_position_error(&m.mesh, &a, &b));
            }
        }
        let size = model_size(&m.mesh);
        eprintln!(
            "{}: RGBA16F vs RGBA32F max position error {worst:.6} (model size {size:.3}, relative {:.2e})",
            m.name,
            worst / size
        );
        assert!(
            worst > 0.0 && worst / size < 2e-3,
            "{}: half error {worst}",
            m.name
        );
        assert_eq!(full.texels_f16().len(), full.texels.len());
    }
}

#[test]
fn rows_wrap_to_the_device_limit_without_changing_the_data() {
    let m = builtin_model();
    let wide = bake(&m, 30.0);
    let narrow = bake_animation_texture(
        &m.rig,
        &m.mesh,
        &m.clips,
        &BakeTextureOptions::new(30.0, 1000),
    )
    .unwrap();
    assert_eq!(narrow.width, 1000);
    let used: u64 = wide
        .clips
        .iter()
        .map(|c| u64::from(c.frame_count) * u64::from(c.bone_count) * 3)
        .sum();
    assert_eq!(u64::from(narrow.height), used.div_ceil(1000));
    assert_eq!(
        &narrow.texels[..used as usize],
        &wide.texels[..used as usize]
    );
    assert!(
        narrow.texels[used as usize..]
            .iter()
            .all(|t| *t == [0.0; 4])
    );
    // Clip table: contiguous, in order; memory per clip as stated.
    let mut next = 0;
    for c in &narrow.clips {
        assert_eq!(c.first_texel, next);
        next += c.frame_count * c.bone_count * 3;
    }
    assert_eq!(narrow.clips[1].bytes(16), 31 * 45 * 3 * 16); // walk: 1 s at 30 Hz
}

fn other_rig() -> Rig {
    RawRig {
        name: "other".into(),
        bones: vec![RawBone {
            name: "root".into(),
            parent: None,
            rest: Transform::IDENTITY,
        }],
    }
    .bake()
    .unwrap()
}

#[test]
fn bad_inputs_are_rejected_with_what_and_where() {
    let m = builtin_model();
    let opts = |rate: f32, max: u32| BakeTextureOptions::new(rate, max);
    for rate in [0.0, -30.0, f32::NAN, f32::INFINITY, 20_000.0] {
        let e = plan(&m.rig, &m.mesh, &m.clips, &opts(rate, 8192)).unwrap_err();
        assert!(matches!(e, BakeTextureError::BadRate { .. }), "{e}");
    }
    let e = plan(&m.rig, &m.mesh, &m.clips, &opts(30.0, 0)).unwrap_err();
    assert!(matches!(e, BakeTextureError::BadMaxDimension { .. }));
    let e = plan(&m.rig, &m.mesh, &[], &opts(30.0, 8192)).unwrap_err();
    assert_eq!(e, BakeTextureError::NoClips);
    // A clip baked for another rig: index and name in the error.
    let other = Arc::new(other_rig());
    let foreign = Arc::new(
        sinew_jobs::asset::RawClip {
            name: "foreign".into(),
            duration: Some(1.0),
            ..Default::default()
        }
        .bake(&other)
        .unwrap(),
    );
    let clips = vec![m.clips[0].clone(), foreign];
    let e = plan(&m.rig, &m.mesh, &clips, &opts(30.0, 8192)).unwrap_err();
    assert!(
        matches!(&e, BakeTextureError::ClipForAnotherRig { index: 1, clip, .. } if clip == "foreign"),
        "{e}"
    );
    assert!(e.to_string().contains("clip 1 ('foreign')"));
    // Too large for a 64 x 64 device.
    let e = plan(&m.rig, &m.mesh, &m.clips, &opts(30.0, 64)).unwrap_err();
    assert!(
        matches!(
            e,
            BakeTextureError::TextureTooLarge {
                width: 64,
                max_texture_dimension: 64,
                ..
            }
        ),
        "{e}"
    );
    let mut o = opts(30.0, 8192);
    o.root_bone = Some(sinew_jobs::asset::BoneIndex(45));
    assert!(matches!(
        plan(&m.rig, &m.mesh, &m.clips, &o),
        Err(BakeTextureError::RootBoneOutOfRange {
            bone: 45,
            bone_count: 45
        })
    ));
    // The job rejects a texel buffer or layout that does not match its inputs.
    let layout = plan(&m.rig, &m.mesh, &m.clips, &opts(30.0, 8192)).unwrap();
    let mut short = vec![[0.0f32; 4]; layout.texel_count() - 1];
    let job = BakeTextureJob {
        rig: &m.rig,
        mesh: &m.mesh,
        clips: &m.clips,
        options: opts(30.0, 8192),
        layout: &layout,
        texels: &mut short,
    };
    assert!(matches!(
        job.validate(),
        Err(BakeTextureError::LengthMismatch {
            buffer: "texels",
            ..
        })
    ));
    let other_layout = BakeLayout {
        width: layout.width,
        ..plan(&m.rig, &m.mesh, &m.clips, &opts(60.0, 8192)).unwrap()
    };
    let mut texels = vec![[0.0f32; 4]; other_layout.texel_count()];
    let job = BakeTextureJob {
        rig: &m.rig,
        mesh: &m.mesh,
        clips: &m.clips,
        options: opts(30.0, 8192),
        layout: &other_layout,
        texels: &mut texels,
    };
    assert!(job.validate().is_err());
    // Sampling outside the table or into a short palette.
    let baked = bake(&m, 30.0);
    let mut out = vec![[0.0f32; 12]; 45];
    assert!(matches!(
        baked.sample_palette(4, 0.0, &mut out),
        Err(BakeTextureError::ClipOutOfRange {
            clip: 4,
            clip_count: 4
        })
    ));
    assert!(matches!(
        baked.sample_palette(0, 0.0, &mut out[..3]),
        Err(BakeTextureError::LengthMismatch { .. })
    ));
}

/// One character walks from 40 m to 5 m from the camera and back, at the bake's frame
/// times. It starts baked; when it crosses the near threshold the CPU pipeline takes over at
/// the baked playback time, when it crosses the far threshold the baked instance takes over at
/// the CPU time. On both switch frames the two paths give the same positions.
#[test]
fn lod_switch_keeps_the_pose_on_the_switch_frame() {
    let m = builtin_model();
    let rate = 30.0;
    let baked = bake(&m, rate);
    let size = model_size(&m.mesh);
    let walk = 1usize;
    let dt = 1.0 / rate;
    let mut lod = LodSwitch::new(20.0, 4.0).unwrap();
    let mut clocks = [LodClock {
        cpu_time: 0.0,
        phase: 7.0 / rate,
        speed: 1.0,
    }];
    let mut changes = Vec::new();

    // The CPU side: one entity, clocks advanced by the pipeline itself.
    let mut store = Store::new();
    let mut animator = Animator::new(&mut store).unwrap();
    let e = store
        .spawn(animated(
            m.rig.clone(),
            vec![AnimationToProcess::new(m.clips[walk].clone())],
        ))
        .unwrap();
    store.insert(e, SkinRef::new(m.mesh.clone())).unwrap();
    store.insert(e, RootMotion::default()).unwrap();

    let mut baked_palette = vec![[0.0f32; 12]; m.mesh.bone_count()];
    let mut switches = Vec::new();
    let mut anim_time = 0.0f32; // the entity's time after the last pipeline frame
    let frames = 200;
    for f in 0..=frames {
        let g = f as f32 * dt;
        // In 100 frames from 40 m to 5 m, then back.
        let s = if f <= 100 {
            f as f32 / 100.0
        } else {
            (frames - f) as f32 / 100.0
        };
        let pos = Vec3::new(0.0, 0.0, 40.0 - 35.0 * s);
        // The time the CPU animation plays this frame (meaningful while on the CPU path).
        clocks[0].cpu_time = anim_time + dt;
        let was = lod.paths().first().copied();
        lod.update(Vec3::ZERO, &[pos], g, &mut clocks, &mut changes)
            .unwrap();
        let now = lod.paths()[0];
        if was != Some(now) {
            assert_eq!(changes.len(), 1);
            assert_eq!((changes[0].to, changes[0].first), (now, was.is_none()));
        } else {
            assert!(changes.is_empty());
        }
        match (was, now) {
            (None, p) => assert_eq!(p, LodPath::Baked),
            (Some(LodPath::Cpu), LodPath::Cpu) => {
                animator.run_frame(&mut store, dt).unwrap();
                anim_time = store.get::<Animations>(e).unwrap().as_slice()[0].time;
            }
            (Some(LodPath::Baked), LodPath::Cpu) => {
                // The CPU animation starts at the synced time (the clock node adds dt first).
                for a in store.get_mut::<Animations>(e).unwrap().iter_mut() {
                    a.time = clocks[0].cpu_time - dt;
                    a.previous_time = a.time;
                }
                animator.run_frame(&mut store, dt).unwrap();
                anim_time = store.get::<Animations>(e).unwrap().as_slice()[0].time;
                assert!((anim_time - clocks[0].baked_time(g)).abs() < 1e-5);
                baked
                    .sample_palette(walk, clocks[0].baked_time(g), &mut baked_palette)
                    .unwrap();
                let err =
                    max_position_error(&m.mesh, &baked_palette, animator.palettes(&store)) / size;
                assert!(
                    err <= 1e-5,
                    "baked -> cpu at frame {f}: relative error {err}"
                );
                switches.push((f, now));
            }
            (Some(LodPath::Cpu), LodPath::Baked) => {
                // This frame's CPU pose (what the CPU path would draw) against the baked one.
                animator.run_frame(&mut store, dt).unwrap();
                assert!((clocks[0].baked_time(g) - clocks[0].cpu_time).abs() < 1e-5);
                baked
                    .sample_palette(walk, clocks[0].baked_time(g), &mut baked_palette)
                    .unwrap();
                let err =
                    max_position_error(&m.mesh, &baked_palette, animator.palettes(&store)) / size;
                assert!(
                    err <= 1e-5,
                    "cpu -> baked at frame {f}: relative error {err}"
                );
                switches.push((f, now));
            }
            (Some(LodPath::Baked), LodPath::Baked) => {}
        }
    }
    // Hysteresis: in below 18 m (frame 63: 40 - 35·0.63 = 17.95 m), out above 22 m (frame
    // 149: 40 - 35·0.51 = 22.15 m), not at 20 m.
    assert_eq!(switches, vec![(63, LodPath::Cpu), (149, LodPath::Baked)]);
    // The walk really moves between the two switches (the comparison is not of rest poses).
    assert!(anim_time > 1.0);
}

/// A character standing 20 m from a shaking camera (distance 20 ± 0.8 m, changing every
/// frame): without hysteresis it flips tier on most threshold crossings, with a 2 m band it
/// keeps the tier it was first given. A character walking through the band slowly switches
/// once, on the far side of it.
#[test]
fn lod_hysteresis_prevents_flip_flopping() {
    let switches = |band: f32, path: &dyn Fn(usize) -> f32| {
        let mut lod = LodSwitch::new(20.0, band).unwrap();
        let mut clocks = [LodClock {
            cpu_time: 0.0,
            phase: 0.0,
            speed: 1.0,
        }];
        let mut changes = Vec::new();
        let mut n = 0;
        for f in 0..300 {
            let pos = Vec3::new(path(f), 0.0, 0.0);
            lod.update(
                Vec3::ZERO,
                &[pos],
                f as f32 / 60.0,
                &mut clocks,
                &mut changes,
            )
            .unwrap();
            n += changes.iter().filter(|c| !c.first).count();
        }
        (n, lod.paths()[0])
    };
    // Shake: a 7-frame and a 3-frame period superposed, amplitude 0.8 m in all.
    let shaking = |f: usize| {
        let t = f as f32;
        20.0 + 0.5 * (t * std::f32::consts::TAU / 7.0).sin() + 0.3 * (t * 2.1).sin()
    };
    let crossings = (1..300)
        .filter(|&f| (shaking(f) < 20.0) != (shaking(f - 1) < 20.0))
        .count();
    let (without, _) = switches(0.0, &shaking);
    let (with, _) = switches(2.0, &shaking);
    assert!(crossings > 50, "{crossings}");
    assert_eq!(without, crossings);
    assert_eq!(with, 0);
    // Walking away from 15 m to 25 m: one switch, once past 21 m.
    let walking = |f: usize| 15.0 + 10.0 * f as f32 / 299.0;
    let (n, last) = switches(2.0, &walking);
    assert_eq!((n, last), (1, LodPath::Baked));
}

/// A baked character moved by `baked_root_motion` each frame ends where job 6 moves the same
/// character on the CPU (walk and run, several loops, a turned and scaled entity), and the
/// cached `BakedRootTrack` gives the same motion bit for bit.
#[test]
fn baked_root_motion_moves_a_character_as_job_6_does() {
    use sinew_jobs::lod::{BakedRootTrack, baked_root_motion};
    let m = builtin_model();
    let root = m.rig.root();
    assert!(BakedRootTrack::new(&m.clips[0], root).is_none()); // idle: no root motion
    for clip in [&m.clips[1], &m.clips[2]] {
        let track = BakedRootTrack::new(clip, root).unwrap();
        for k in 0..200 {
            let (a, b) = (k as f32 * 0.037 - 1.0, k as f32 * 0.11 - 7.0);
            assert_eq!(
                track.motion(clip, a, b),
                baked_root_motion(clip, root, a, b).unwrap()
            );
        }
        let start = Transform::new(
            Vec3::new(3.0, 0.0, -2.0),
            glam::Quat::from_rotation_y(0.7),
            Vec3::splat(1.5),
        );
        let mut store = Store::new();
        let mut animator = Animator::new(&mut store).unwrap();
        let e = store
            .spawn(animated(
                m.rig.clone(),
                vec![AnimationToProcess::new(clip.clone()).at(0.2)],
            ))
            .unwrap();
        store.insert(e, SkinRef::new(m.mesh.clone())).unwrap();
        store.insert(e, RootMotion::default()).unwrap();
        store.insert(e, EntityTransform(start)).unwrap();
        let dt = 1.0 / 60.0;
        let mut baked = start;
        let mut time = 0.2f32;
        for _ in 0..150 {
            animator.run_frame(&mut store, dt).unwrap();
            let (dt_, dr) = baked_root_motion(clip, root, time, time + dt).unwrap();
            time += dt;
            baked.translation += baked.rotation * (dt_ * baked.scale);
            baked.rotation = (baked.rotation * dr).normalize();
        }
        let cpu = store.get::<EntityTransform>(e).unwrap().0;
        assert!(
            cpu.translation.distance(baked.translation) < 1e-4,
            "{}: {} vs {}",
            clip.name(),
            cpu.translation,
            baked.translation
        );
        assert!(cpu.rotation.dot(baked.rotation).abs() > 1.0 - 1e-6);
        // 2.5 s at 1.4 m/s (walk) or 3.5 m/s (run), scaled by 1.5.
        assert!(cpu.translation.distance(start.translation) > 4.0);
    }
}
