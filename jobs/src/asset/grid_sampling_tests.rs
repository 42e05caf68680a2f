//! The shared-time-grid sampler (`KeyGrid`, SoA, 8 bones at a time) against the per-channel
//! scalar reference (`Clip::sample_bone`) on the Khronos sample files, and the sampling job's
//! SoA path against its per-bone reference (`sample_blend_bone`) on Fox's workload blend.

use crate::asset::{AssetRegistry, BoneIndex, Clip, KeySpan, LinearRotation, Transform};
use crate::component::{AnimationToProcess, SamplingCursors};
use crate::import::import_gltf;
use crate::j4_sample_blend::{EntitySampling, SampleBlendJob, resolve_spans, sample_blend_bone};
use crate::math::soa::LANES;
use std::sync::Arc;

fn clips(name: &str) -> (Arc<crate::asset::Rig>, Vec<Arc<Clip>>) {
    let path = sinew_fixtures::asset_path(format!("gltf/{name}")).unwrap();
    let scene = import_gltf(&path, &AssetRegistry::new()).unwrap_or_else(|e| panic!("{name}: {e}"));
    (scene.rig.clone(), scene.clips.clone())
}

fn close(a: &Transform, b: &Transform, tol: f32) -> bool {
    (a.translation - b.translation).length() <= tol * (1.0 + b.translation.length())
        && (a.scale - b.scale).length() <= tol * (1.0 + b.scale.length())
        && a.rotation.dot(b.rotation).abs() >= 1.0 - tol
}

/// Every block of a gridded clip equals the per-channel reference at key times, between
/// keys, before the first and after the last key.
fn check_grid(name: &str, clip: &Clip) -> usize {
    let Some(grid) = clip.grid() else { return 0 };
    let times = clip.timelines()[grid.timeline() as usize].times().to_vec();
    let mut probes: Vec<f32> = times.clone();
    probes.extend(times.windows(2).map(|w| w[0] + 0.37 * (w[1] - w[0])));
    probes.extend([-1.0, times[0] - 1e-3, times[times.len() - 1] + 0.5]);
    let bones = clip.bone_count();
    for &t in &probes {
        let span = clip.locate(grid.timeline(), t);
        let mut out = vec![Transform::IDENTITY; grid.blocks() * LANES];
        for b in 0..grid.blocks() {
            grid.sample_block(b, &span)
                .unwrap()
                .write_transforms(&mut out[b * LANES..(b + 1) * LANES]);
        }
        for (bone, got) in out.iter().take(bones).enumerate() {
            let want = clip.sample_bone(BoneIndex(bone as u32), t);
            assert!(
                close(got, &want, 1e-6),
                "{name} '{}' bone {bone} t {t}: {got:?} vs {want:?}",
                clip.name()
            );
        }
    }
    probes.len()
}

#[test]
fn grid_sampler_equals_the_per_channel_sampler_on_real_assets() {
    // Which clips qualify (every bone channel LINEAR on one timeline).
    let mut gridded = Vec::new();
    for name in [
        "Fox.glb",
        "CesiumMan.glb",
        "InterpolationTest.glb",
        "RiggedSimple.glb",
        "SimpleSkin.glb",
    ] {
        let (_, clips) = clips(name);
        for c in clips {
            // glTF's own rule (slerp, the importer's default) and ozz's nlerp both take the
            // grid, each equal to the per-channel sampler under the same rule.
            assert_eq!(c.linear_rotation(), LinearRotation::Slerp);
            let slerp_probes = check_grid(name, &c);
            let n = c.with_linear_rotation(LinearRotation::Nlerp);
            assert_eq!(check_grid(name, &n), slerp_probes, "{name} '{}'", c.name());
            if slerp_probes > 0 {
                gridded.push(format!("{name}/{}", c.name()));
            }
        }
    }
    for expected in [
        "Fox.glb/Walk",
        "Fox.glb/Run",
        "Fox.glb/Survey",
        "CesiumMan.glb/",
    ] {
        assert!(
            gridded.iter().any(|g| g.starts_with(expected)),
            "{expected} should have a shared grid: {gridded:?}"
        );
    }
    // InterpolationTest has one clip per interpolation mode: the LINEAR and CUBICSPLINE ones
    // take the grid, STEP keeps the per-channel path.
    for g in gridded
        .iter()
        .filter(|g| g.starts_with("InterpolationTest"))
    {
        assert!(g.contains("Linear") || g.contains("CubicSpline"), "{g}");
    }
    for expected in [
        "Linear Rotation",
        "CubicSpline Rotation",
        "CubicSpline Translation",
    ] {
        assert!(
            gridded.iter().any(|g| g.contains(expected)),
            "{expected}: {gridded:?}"
        );
    }
}

/// A clip of Hermite keys on one grid (the built-in idle's kind: every moved bone's
/// translation and rotation, on a rig of two blocks, tangents unlike the values' slopes) takes
/// the grid, equal to the per-channel sampler.
#[test]
fn hermite_keys_on_one_grid_take_the_grid() {
    use crate::asset::{RawBone, RawBoneTracks, RawClip, RawRig, RawTrack};
    use glam::{Quat, Vec3};
    let rig = RawRig {
        name: "chain".into(),
        bones: (0..11)
            .map(|i| RawBone {
                name: format!("b{i}"),
                parent: (i > 0).then(|| i - 1),
                rest: Transform::from_translation(Vec3::new(0.0, 0.3, 0.05 * i as f32)),
            })
            .collect(),
    }
    .bake()
    .unwrap();
    let times: Vec<f32> = (0..9)
        .map(|k| 0.1 * k as f32 + 0.02 * (k % 3) as f32)
        .collect();
    let f = |b: usize, k: usize, c: f32| ((b * 7 + k * 3) as f32 * 0.37 + c).sin();
    let bones = (0..11)
        .filter(|b| b % 4 != 3)
        .map(|b| {
            let q = |k: usize| {
                Quat::from_euler(glam::EulerRot::XYZ, f(b, k, 0.1), 0.5 * f(b, k, 1.3), 0.2)
            };
            let dq = |k: usize| {
                let v = glam::Vec4::from(q(k)) * 0.3 * f(b, k, 2.0);
                Quat::from_vec4(v)
            };
            let v = |k: usize| Vec3::new(f(b, k, 0.0), f(b, k, 0.5), 0.1 * f(b, k, 0.9));
            let n = times.len();
            RawBoneTracks {
                bone: format!("b{b}"),
                translation: (b % 2 == 0).then(|| {
                    RawTrack::hermite(
                        times.clone(),
                        (0..n).map(v).collect(),
                        (0..n).map(|k| v(k) * -1.5).collect(),
                        (0..n).map(|k| v(k) * 2.0).collect(),
                    )
                }),
                rotation: Some(RawTrack::hermite(
                    times.clone(),
                    (0..n).map(q).collect(),
                    (0..n).map(dq).collect(),
                    (0..n).map(|k| dq((k + 1) % n)).collect(),
                )),
                scale: None,
            }
        })
        .collect();
    let clip = RawClip {
        name: "hermite".into(),
        duration: Some(0.9),
        bones,
        ..Default::default()
    }
    .bake(&rig)
    .unwrap();
    assert!(
        clip.grid()
            .is_some_and(|g| g.is_hermite() && g.blocks() == 2)
    );
    assert!(check_grid("hand-built", &clip) >= 20);
}

#[test]
fn fox_workload_blend_soa_path_equals_the_per_bone_reference() {
    let (rig, clips) = clips("Fox.glb");
    let find = |n: &str| {
        let c = clips.iter().find(|c| c.name() == n).unwrap();
        Arc::new(c.with_linear_rotation(LinearRotation::Nlerp))
    };
    let (walk, run) = (find("Walk"), find("Run"));
    assert!(walk.grid().is_some() && run.grid().is_some());
    let bones = rig.bone_count();
    let entities_anims: Vec<Vec<AnimationToProcess>> = (0..40)
        .map(|i| {
            let t = i as f32 * 0.0731;
            vec![
                AnimationToProcess::new(walk.clone()).at(t).weight(0.7),
                AnimationToProcess::new(run.clone())
                    .at(t * 1.7 + 0.2)
                    .weight(0.3),
            ]
        })
        .collect();
    let mut spans = Vec::new();
    let mut offsets = Vec::new();
    for a in &entities_anims {
        offsets.push(spans.len() as u32);
        let need: usize = a.iter().map(|x| x.clip.timelines().len()).sum();
        let start = spans.len();
        spans.resize(start + need, KeySpan::default());
        resolve_spans(a, &mut SamplingCursors::default(), &mut spans[start..]);
    }
    for layer_weight in [1.0, 0.4] {
        let mut lw = [1.0; 8];
        lw[0] = layer_weight;
        let entities: Vec<Option<EntitySampling>> = entities_anims
            .iter()
            .zip(&offsets)
            .enumerate()
            .map(|(e, (a, &o))| {
                Some(EntitySampling {
                    rig: &rig,
                    animations: a,
                    layer_weights: lw,
                    span_offset: o,
                    bone_offset: (e * bones) as u32,
                })
            })
            .collect();
        let mut out = vec![Transform::IDENTITY; entities.len() * bones];
        let mut job = SampleBlendJob {
            entities: &entities,
            spans: &spans,
            out: &mut out,
            batch: 64,
        };
        job.validate().unwrap();
        job.run();
        for (k, got) in out.iter().enumerate() {
            let e = entities[k / bones].as_ref().unwrap();
            let want = sample_blend_bone(e, &spans, k % bones);
            assert!(
                close(got, &want, 1e-6),
                "flat bone {k}: {got:?} vs {want:?}"
            );
        }
    }
}
