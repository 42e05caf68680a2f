//! Property tests of the animation core: blend invariants, the prefix sum, Hermite sampling,
//! and the batched sampling job against its per-bone scalar reference.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests unwrap: a failure is the test failing

use glam::{Quat, Vec3};
use proptest::prelude::*;
use sinew_jobs::asset::{
    AdditiveReference, BoneIndex, Clip, KeySpan, LinearRotation, RawAvatarMask, RawBone,
    RawBoneTracks, RawClip, RawCurve, RawRig, RawTrack, Rig, Transform,
};
use sinew_jobs::component::{AnimationToProcess, BlendMode, MAX_LAYERS, SamplingCursors};
use sinew_jobs::frame::EntityCounts;
use sinew_jobs::j2_prefix_sum::{PrefixSumJob, scan_sequential};
use sinew_jobs::j4_sample_blend::{
    EntitySampling, SampleBlendJob, resolve_spans, sample_blend_bone,
};
use std::sync::Arc;

const BONES: usize = 5;

fn rig() -> Rig {
    // root ─ a ─ b
    //   └─ c ─ d
    let parents = [None, Some(0), Some(1), Some(0), Some(3)];
    RawRig {
        name: "p".into(),
        bones: (0..BONES)
            .map(|i| RawBone {
                name: format!("bone{i}"),
                parent: parents[i],
                rest: Transform::new(
                    Vec3::new(0.1 * i as f32, 1.0, 0.0),
                    Quat::from_rotation_x(0.1 * i as f32),
                    Vec3::ONE,
                ),
            })
            .collect(),
    }
    .bake()
    .unwrap()
}

fn quat(a: f32, b: f32, c: f32) -> Quat {
    Quat::from_euler(glam::EulerRot::XYZ, a, b, c)
}

prop_compose! {
    fn arb_quat()(a in -3.0f32..3.0, b in -3.0f32..3.0, c in -3.0f32..3.0) -> Quat { quat(a, b, c) }
}
prop_compose! {
    fn arb_vec()(x in -5.0f32..5.0, y in -5.0f32..5.0, z in -5.0f32..5.0) -> Vec3 { Vec3::new(x, y, z) }
}

/// A clip with `keys` linear keys per bone on a shared timeline over [0, 1].
fn arb_clip(keys: usize) -> impl Strategy<Value = RawClip> {
    (
        prop::collection::vec(arb_vec(), keys * BONES),
        prop::collection::vec(arb_quat(), keys * BONES),
        prop::collection::vec(0.5f32..1.5, keys * BONES),
        any::<bool>(),
    )
        .prop_map(move |(t, r, s, hermite)| {
            let times: Vec<f32> = (0..keys).map(|k| k as f32 / (keys - 1) as f32).collect();
            RawClip {
                name: "random".into(),
                duration: Some(1.0),
                looping: true,
                bones: (0..BONES)
                    .map(|b| {
                        let vals = |v: &[Vec3]| v[b * keys..(b + 1) * keys].to_vec();
                        let tr = vals(&t);
                        RawBoneTracks {
                            bone: format!("bone{b}"),
                            translation: Some(if hermite {
                                RawTrack::hermite(
                                    times.clone(),
                                    tr.clone(),
                                    tr.iter().map(|v| *v * 0.5).collect(),
                                    tr.iter().map(|v| -*v).collect(),
                                )
                            } else {
                                RawTrack::linear(times.clone(), tr)
                            }),
                            rotation: Some(RawTrack::linear(
                                times.clone(),
                                r[b * keys..(b + 1) * keys].to_vec(),
                            )),
                            scale: Some(RawTrack::linear(
                                times.clone(),
                                s[b * keys..(b + 1) * keys]
                                    .iter()
                                    .map(|&x| Vec3::splat(x))
                                    .collect(),
                            )),
                        }
                    })
                    .collect(),
                additive_reference: Some(AdditiveReference::RestPose),
                ..Default::default()
            }
        })
}

/// Samples and blends every bone of one entity through the job's per-bone function.
fn blend(
    rig: &Rig,
    anims: &[AnimationToProcess],
    layer_weights: [f32; MAX_LAYERS],
) -> Vec<Transform> {
    let mut sorted = anims.to_vec();
    sorted.sort_by_key(|a| a.layer);
    let need: usize = sorted.iter().map(|a| a.clip.timelines().len()).sum();
    let mut spans = vec![KeySpan::default(); need];
    resolve_spans(&sorted, &mut SamplingCursors::default(), &mut spans);
    let e = EntitySampling {
        rig,
        animations: &sorted,
        layer_weights,
        span_offset: 0,
        bone_offset: 0,
    };
    (0..rig.bone_count())
        .map(|b| sample_blend_bone(&e, &spans, b))
        .collect()
}

fn same_pose(a: &Transform, b: &Transform, tol: f32) -> bool {
    (a.translation - b.translation).length() <= tol * (1.0 + a.translation.length())
        && a.rotation.dot(b.rotation).abs() >= 1.0 - tol
        && (a.scale - b.scale).length() <= tol * (1.0 + a.scale.length())
}

fn lerp_pose(a: &Transform, b: &Transform, w: f32) -> Transform {
    let rb = if a.rotation.dot(b.rotation) < 0.0 {
        -b.rotation
    } else {
        b.rotation
    };
    Transform {
        translation: a.translation * (1.0 - w) + b.translation * w,
        rotation: Quat::from_vec4(
            glam::Vec4::from(a.rotation) * (1.0 - w) + glam::Vec4::from(rb) * w,
        )
        .normalize(),
        scale: a.scale * (1.0 - w) + b.scale * w,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn weight_one_override_is_the_clip_pose(raw in arb_clip(4), t in 0.0f32..1.0) {
        let rig = rig();
        let clip = Arc::new(raw.bake(&rig).unwrap());
        let out = blend(&rig, &[AnimationToProcess::new(clip.clone()).at(t)], [1.0; MAX_LAYERS]);
        for (b, pose) in out.iter().enumerate() {
            let reference = clip.sample_bone(BoneIndex(b as u32), t);
            prop_assert!(same_pose(pose, &reference, 1e-5), "bone {b}: {pose:?} vs {reference:?}");
        }
    }

    #[test]
    fn zero_weight_additive_is_the_base(a in arb_clip(3), b in arb_clip(3), t in 0.0f32..1.0) {
        let rig = rig();
        let (ca, cb) = (Arc::new(a.bake(&rig).unwrap()), Arc::new(b.bake(&rig).unwrap()));
        let base = blend(&rig, &[AnimationToProcess::new(ca.clone()).at(t)], [1.0; MAX_LAYERS]);
        let with_add = blend(&rig, &[
            AnimationToProcess::new(ca).at(t),
            AnimationToProcess::new(cb).at(t).weight(0.0).layer(1, BlendMode::Additive),
        ], [1.0; MAX_LAYERS]);
        prop_assert_eq!(base, with_add);
    }

    #[test]
    fn blending_identical_poses_returns_them(raw in arb_clip(3), t in 0.0f32..1.0, w1 in 0.1f32..1.0, w2 in 0.1f32..1.0) {
        let rig = rig();
        let clip = Arc::new(raw.bake(&rig).unwrap());
        let single = blend(&rig, &[AnimationToProcess::new(clip.clone()).at(t)], [1.0; MAX_LAYERS]);
        let double = blend(&rig, &[
            AnimationToProcess::new(clip.clone()).at(t).weight(w1),
            AnimationToProcess::new(clip).at(t).weight(w2.max(1.0 - w1)),
        ], [1.0; MAX_LAYERS]);
        for (a, b) in single.iter().zip(&double) {
            prop_assert!(same_pose(a, b, 1e-5));
        }
    }

    #[test]
    fn outputs_are_unit_quaternions(a in arb_clip(3), b in arb_clip(3), t in 0.0f32..3.0, w in 0.0f32..2.0, lw in 0.0f32..1.0) {
        let rig = rig();
        let (ca, cb) = (Arc::new(a.bake(&rig).unwrap()), Arc::new(b.bake(&rig).unwrap()));
        let mut weights = [1.0; MAX_LAYERS];
        weights[1] = lw;
        let out = blend(&rig, &[
            AnimationToProcess::new(ca.clone()).at(t).weight(w),
            AnimationToProcess::new(cb.clone()).at(t * 0.7).weight(1.0 - w.min(1.0)),
            AnimationToProcess::new(cb).at(t).layer(1, BlendMode::Additive).weight(w),
            AnimationToProcess::new(ca).at(t).layer(2, BlendMode::Override).weight(0.5),
        ], weights);
        for p in &out {
            prop_assert!((p.rotation.length() - 1.0).abs() < 1e-5, "{:?}", p.rotation);
            prop_assert!(p.translation.is_finite() && p.scale.is_finite());
        }
    }

    #[test]
    fn a_mask_excludes_its_bones(a in arb_clip(3), b in arb_clip(3), t in 0.0f32..1.0, excluded in 0usize..BONES) {
        let rig = rig();
        let (ca, cb) = (Arc::new(a.bake(&rig).unwrap()), Arc::new(b.bake(&rig).unwrap()));
        let mask = Arc::new(RawAvatarMask {
            name: "m".into(),
            bones: (0..BONES).map(|i| (format!("bone{i}"), if i == excluded { 0.0 } else { 1.0 })).collect(),
            include_descendants: false,
        }.bake(&rig).unwrap());
        let base = blend(&rig, &[AnimationToProcess::new(ca.clone()).at(t)], [1.0; MAX_LAYERS]);
        let masked = blend(&rig, &[
            AnimationToProcess::new(ca).at(t),
            AnimationToProcess::new(cb.clone()).at(t).layer(1, BlendMode::Override).mask(mask),
        ], [1.0; MAX_LAYERS]);
        prop_assert_eq!(base[excluded], masked[excluded]);
        for bone in (0..BONES).filter(|&b| b != excluded) {
            let reference = cb.sample_bone(BoneIndex(bone as u32), t);
            prop_assert!(same_pose(&masked[bone], &reference, 1e-5));
        }
    }

    #[test]
    fn rest_pose_fills_missing_weight(raw in arb_clip(3), t in 0.0f32..1.0, w in 0.0f32..1.0) {
        let rig = rig();
        let clip = Arc::new(raw.bake(&rig).unwrap());
        let out = blend(&rig, &[AnimationToProcess::new(clip.clone()).at(t).weight(w)], [1.0; MAX_LAYERS]);
        for (b, p) in out.iter().enumerate() {
            let expected = lerp_pose(&rig.rest_pose()[b], &clip.sample_bone(BoneIndex(b as u32), t), w);
            prop_assert!(same_pose(p, &expected, 1e-4), "bone {b} w {w}: {p:?} vs {expected:?}");
        }
    }

    #[test]
    fn layer_order_is_respected(a in arb_clip(3), b in arb_clip(3), t in 0.0f32..1.0) {
        let rig = rig();
        let (ca, cb) = (Arc::new(a.bake(&rig).unwrap()), Arc::new(b.bake(&rig).unwrap()));
        // B on layer 1 overrides A on layer 0, whichever order they are listed in.
        for list in [
            vec![AnimationToProcess::new(ca.clone()).at(t), AnimationToProcess::new(cb.clone()).at(t).layer(1, BlendMode::Override)],
            vec![AnimationToProcess::new(cb.clone()).at(t).layer(1, BlendMode::Override), AnimationToProcess::new(ca.clone()).at(t)],
        ] {
            let out = blend(&rig, &list, [1.0; MAX_LAYERS]);
            for (bone, p) in out.iter().enumerate() {
                prop_assert!(same_pose(p, &cb.sample_bone(BoneIndex(bone as u32), t), 1e-5));
            }
        }
    }

    #[test]
    fn batched_job_equals_the_per_bone_reference(
        clips in prop::collection::vec((arb_clip(4), any::<bool>(), 0usize..BONES + 1), 1..3),
        times in prop::collection::vec(0.0f32..4.0, 1..40),
        weights in (0.0f32..1.0, 0.0f32..1.0, 0.0f32..1.5),
        batch in 1usize..40,
    ) {
        // Half the clips nlerp their rotations (the SoA grid path), one bone may lose its
        // rotation track (rest rotation in the grid); the rest take the per-channel path.
        let rig = rig();
        let clips: Vec<Arc<Clip>> = clips
            .into_iter()
            .map(|(mut c, nlerp, untracked)| {
                if let Some(b) = c.bones.get_mut(untracked) {
                    b.rotation = None;
                }
                let c = c.bake(&rig).unwrap();
                Arc::new(if nlerp { c.with_linear_rotation(LinearRotation::Nlerp) } else { c })
            })
            .collect();
        let anims: Vec<Vec<AnimationToProcess>> = times.iter().enumerate().map(|(i, &t)| {
            vec![
                AnimationToProcess::new(clips[i % clips.len()].clone()).at(t).weight(weights.0),
                AnimationToProcess::new(clips[(i + 1) % clips.len()].clone()).at(t * 1.3).weight(weights.1),
            ]
        }).collect();
        let mut spans = Vec::new();
        let mut offsets = Vec::new();
        for a in &anims {
            offsets.push(spans.len() as u32);
            let need: usize = a.iter().map(|x| x.clip.timelines().len()).sum();
            let start = spans.len();
            spans.resize(start + need, KeySpan::default());
            resolve_spans(a, &mut SamplingCursors::default(), &mut spans[start..]);
        }
        let mut layer_weights = [1.0; MAX_LAYERS];
        layer_weights[0] = weights.2;
        let entities: Vec<Option<EntitySampling>> = anims.iter().zip(&offsets).enumerate().map(|(e, (a, &o))| Some(EntitySampling {
            rig: &rig, animations: a, layer_weights, span_offset: o, bone_offset: (e * BONES) as u32,
        })).collect();
        let mut out = vec![Transform::IDENTITY; anims.len() * BONES];
        let mut job = SampleBlendJob { entities: &entities, spans: &spans, out: &mut out, batch };
        job.validate().unwrap();
        job.run();
        for (k, pose) in out.iter().enumerate() {
            let e = entities[k / BONES].as_ref().unwrap();
            let reference = sample_blend_bone(e, &spans, k % BONES);
            prop_assert!(same_pose(pose, &reference, 1e-6), "{:?} vs {:?}", pose, reference);
        }
    }

    #[test]
    fn layered_blends_equal_the_per_bone_reference(
        clips in prop::collection::vec((arb_clip(4), any::<bool>()), 2..5),
        layers in prop::collection::vec((0u8..3, 0.0f32..1.2, prop::option::of(prop::collection::vec(0.0f32..=1.0, BONES))), 2..5),
        layer_weights in (0.0f32..1.0, 0.0f32..1.0, 0.0f32..1.0),
        t in 0.0f32..3.0,
    ) {
        // Override layers 0 and 1 (masked or not), additive layer 2; Hermite, slerped and
        // nlerped clips; weights from 0 (skipped) up: the job's layered SoA path against the
        // per-bone reference.
        let rig = rig();
        let clips: Vec<Arc<Clip>> = clips
            .into_iter()
            .map(|(c, nlerp)| {
                let c = c.bake(&rig).unwrap();
                Arc::new(if nlerp { c.with_linear_rotation(LinearRotation::Nlerp) } else { c })
            })
            .collect();
        let mut anims: Vec<AnimationToProcess> = layers
            .iter()
            .enumerate()
            .map(|(i, (layer, weight, mask))| {
                let blend = if *layer == 2 { BlendMode::Additive } else { BlendMode::Override };
                let mut a = AnimationToProcess::new(clips[i % clips.len()].clone())
                    .at(t + 0.37 * i as f32)
                    .weight(*weight)
                    .layer(*layer, blend);
                if let Some(w) = mask {
                    let mask = RawAvatarMask {
                        name: format!("mask{i}"),
                        bones: w.iter().enumerate().map(|(b, &w)| (format!("bone{b}"), w)).collect(),
                        include_descendants: false,
                    };
                    a = a.mask(Arc::new(mask.bake(&rig).unwrap()));
                }
                a
            })
            .collect();
        anims.sort_by_key(|a| a.layer);
        let need: usize = anims.iter().map(|a| a.clip.timelines().len()).sum();
        let mut spans = vec![KeySpan::default(); need];
        resolve_spans(&anims, &mut SamplingCursors::default(), &mut spans);
        let mut lw = [1.0; MAX_LAYERS];
        (lw[0], lw[1], lw[2]) = layer_weights;
        let e = Some(EntitySampling { rig: &rig, animations: &anims, layer_weights: lw, span_offset: 0, bone_offset: 0 });
        let entities = [e];
        let mut out = vec![Transform::IDENTITY; BONES];
        let mut job = SampleBlendJob { entities: &entities, spans: &spans, out: &mut out, batch: 1 };
        job.validate().unwrap();
        job.run();
        let e = entities[0].as_ref().unwrap();
        for (bone, pose) in out.iter().enumerate() {
            let reference = sample_blend_bone(e, &spans, bone);
            prop_assert!(same_pose(pose, &reference, 1e-5), "bone {}: {:?} vs {:?}", bone, pose, reference);
            prop_assert!(pose.rotation.is_normalized());
        }
    }

    #[test]
    fn prefix_sum_is_an_exclusive_scan_and_parallel_equals_sequential(counts in prop::collection::vec((0u32..300, 0u32..300, 0u32..8), 0..40_000)) {
        let counts: Vec<EntityCounts> = counts.into_iter().map(|(b, p, s)| EntityCounts { bones: b, palette: p, spans: s }).collect();
        let mut par = vec![EntityCounts::default(); counts.len()];
        let mut seq = par.clone();
        let (mut tp, mut ts) = (EntityCounts::default(), EntityCounts::default());
        let mut job = PrefixSumJob { counts: &counts, offsets: &mut par, total: &mut tp, sequential: false };
        job.validate().unwrap();
        job.run();
        PrefixSumJob { counts: &counts, offsets: &mut seq, total: &mut ts, sequential: true }.run();
        prop_assert_eq!(&par, &seq);
        prop_assert_eq!(tp, ts);
        let mut acc = 0u32;
        for (c, o) in counts.iter().zip(&par) {
            prop_assert_eq!(o.bones, acc);
            acc += c.bones;
        }
        prop_assert_eq!(tp.bones, acc);
        prop_assert_eq!(tp.palette, counts.iter().map(|c| c.palette).sum::<u32>());
        let mut empty_total = EntityCounts { bones: 1, palette: 1, spans: 1 };
        prop_assert_eq!(scan_sequential(&[], &mut [], EntityCounts::default()), EntityCounts::default());
        PrefixSumJob { counts: &[], offsets: &mut [], total: &mut empty_total, sequential: false }.run();
        prop_assert_eq!(empty_total, EntityCounts::default());
    }

    #[test]
    fn hermite_hits_keys_and_is_continuous(
        values in prop::collection::vec(-10.0f32..10.0, 2..8),
        tangents in prop::collection::vec(-10.0f32..10.0, 16),
        gaps in prop::collection::vec(0.05f32..1.0, 8),
    ) {
        let n = values.len();
        let mut times = vec![0.0f32];
        for g in gaps.iter().take(n - 1) {
            times.push(times.last().unwrap() + g);
        }
        let rig = rig();
        let clip = RawClip {
            name: "h".into(),
            curves: vec![RawCurve { name: "c".into(), track: RawTrack::hermite(times.clone(), values.clone(), tangents[..n].to_vec(), tangents[8..8 + n].to_vec()) }],
            ..Default::default()
        }.bake(&rig).unwrap();
        for (k, &t) in times.iter().enumerate() {
            prop_assert!((clip.sample_curve(0, t).unwrap() - values[k]).abs() < 1e-4);
        }
        // Continuity at every key: values just before and after agree within the slope bound.
        let max_slope = tangents.iter().fold(0.0f32, |m, x| m.max(x.abs())) * 3.0 + 40.0 / gaps.iter().cloned().fold(1.0, f32::min);
        for &t in &times[1..n - 1] {
            let eps = 1e-4;
            let (a, b) = (clip.sample_curve(0, t - eps).unwrap(), clip.sample_curve(0, t + eps).unwrap());
            prop_assert!((a - b).abs() <= max_slope * 2.0 * eps + 1e-4, "jump at {t}: {a} vs {b}");
        }
    }
}
