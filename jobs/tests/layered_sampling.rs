//! The sampling job's layered path (override layers, avatar masks, additive layers, blended
//! in structure of arrays) against its per-bone reference, `sample_blend_bone`, which applies
//! the accumulator's rules one bone at a time with the scalar helpers.
#![allow(clippy::unwrap_used, clippy::panic)] // tests: a failed step is a failed test

use sinew_jobs::asset::{
    AssetRegistry, Clip, KeySpan, LinearRotation, RawAvatarMask, Rig, Transform,
};
use sinew_jobs::component::{AnimationToProcess, BlendMode, MAX_LAYERS, SamplingCursors};
use sinew_jobs::j4_sample_blend::{
    EntitySampling, resolve_spans, sample_blend_bone, sample_blend_entity,
};
use std::sync::Arc;

/// Samples and blends every entity through the job's entry point and checks each bone
/// against the per-bone reference (`sample_blend_bone`); returns the bones checked.
fn check_against_per_bone(
    rig: &Rig,
    sets: &[Vec<AnimationToProcess>],
    lw: [f32; MAX_LAYERS],
) -> usize {
    let bones = rig.bone_count();
    let mut checked = 0;
    for anims in sets {
        let need = anims.iter().map(|a| a.clip.timelines().len()).sum();
        let mut spans = vec![KeySpan::default(); need];
        resolve_spans(anims, &mut SamplingCursors::default(), &mut spans);
        let e = EntitySampling {
            rig,
            animations: anims,
            layer_weights: lw,
            span_offset: 0,
            bone_offset: 0,
        };
        let mut out = vec![Transform::IDENTITY; bones];
        sample_blend_entity(&e, &spans, &mut out);
        for (bone, &got) in out.iter().enumerate() {
            let want = sample_blend_bone(&e, &spans, bone);
            let ok = (got.translation - want.translation).length()
                <= 1e-6 * (1.0 + want.translation.length())
                && (got.scale - want.scale).length() <= 1e-6 * (1.0 + want.scale.length())
                && got.rotation.dot(want.rotation).abs() >= 1.0 - 1e-6
                && got.rotation.is_normalized();
            let names: Vec<_> = anims
                .iter()
                .map(|a| (a.clip.name(), a.layer, a.weight))
                .collect();
            assert!(ok, "{names:?} {lw:?} bone {bone}: {got:?} vs {want:?}");
            checked += 1;
        }
    }
    checked
}

/// The crowd's content (walk and run averaged on layer 0, the wave masked to the upper
/// body on layer 1, breathing additive on layer 2), with masks and additive layers at
/// partial weights, zero weights and layer weights, under both rotation rules: the
/// layered SoA path equals the per-bone reference on every bone.
#[test]
fn layered_soa_path_equals_the_per_bone_reference_on_the_builtin_character() {
    let c = sinew_fixtures::builtin::bake_character(&AssetRegistry::new()).unwrap();
    let half_arm = RawAvatarMask {
        name: "half arm".into(),
        bones: vec![("spine_02".into(), 0.5), ("upperarm_l".into(), 0.25)],
        include_descendants: true,
    }
    .bake(&c.rig);
    let half_arm = Arc::new(half_arm.unwrap_or_else(|e| panic!("{e}")));
    let mut checked = 0;
    for mode in [LinearRotation::Slerp, LinearRotation::Nlerp] {
        let m = |clip: &Arc<Clip>| Arc::new(clip.with_linear_rotation(mode));
        let (walk, run, wave, breathe, idle) =
            (m(&c.walk), m(&c.run), m(&c.wave), m(&c.breathe), m(&c.idle));
        let sets: Vec<Vec<AnimationToProcess>> = (0..12)
            .map(|i| {
                let t = 0.173 * i as f32;
                let r = (i % 5) as f32 / 4.0;
                let mut v = vec![
                    AnimationToProcess::new(walk.clone()).at(t).weight(1.0 - r),
                    AnimationToProcess::new(run.clone()).at(0.7 * t).weight(r),
                    AnimationToProcess::new(wave.clone())
                        .at(t)
                        .weight(if i % 3 == 0 { 1.0 } else { 0.6 })
                        .layer(1, BlendMode::Override)
                        .mask(if i % 2 == 0 {
                            c.upper_body_mask.clone()
                        } else {
                            half_arm.clone()
                        }),
                    AnimationToProcess::new(breathe.clone())
                        .at(1.3 * t)
                        .weight(if i % 4 == 1 { 0.0 } else { 0.8 })
                        .layer(2, BlendMode::Additive),
                ];
                if i % 3 == 1 {
                    // A second additive animation on the same layer, masked.
                    v.push(
                        AnimationToProcess::new(idle.clone())
                            .at(t)
                            .weight(0.5)
                            .layer(2, BlendMode::Additive)
                            .mask(half_arm.clone()),
                    );
                }
                if i % 4 == 2 {
                    // A masked override on the base layer: the rest pose fills the rest.
                    v[0].mask = Some(half_arm.clone());
                }
                if i % 4 == 3 {
                    // An override over the additive layer, on a base layer that leaves
                    // weight missing: the additive layer completes the pose below first,
                    // also in blocks where its clip adds nothing.
                    v[2].layer = 3;
                    v[0].mask = Some(half_arm.clone());
                    v[1].mask = Some(half_arm.clone());
                    v.sort_by_key(|a| a.layer);
                }
                v
            })
            .collect();
        for lw in [[1.0; MAX_LAYERS], {
            let mut w = [1.0; MAX_LAYERS];
            (w[0], w[1], w[2], w[3]) = (0.8, 0.5, 0.3, 0.7);
            w
        }] {
            checked += check_against_per_bone(&c.rig, &sets, lw);
        }
    }
    assert_eq!(checked, 2 * 2 * 12 * c.rig.bone_count());
}
