//! Every job's `validate()` rejects each bad binding with the matching error, and accepts an
//! empty crowd.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests unwrap: a failure is the test failing

use glam::{Affine3A, Quat, Vec3};
use sinew_jobs::asset::{
    BoneIndex, KeySpan, RawAvatarMask, RawBone, RawBoneTracks, RawClip, RawRig, RawSkinnedMesh,
    RawTrack, RawVertexInfluences, Rig, Transform,
};
use sinew_jobs::component::{
    AnimationToProcess, Animations, BlendMode, CurveValues, FiredEvents, FrameSlot, LayerWeights,
    RigRef, RootMotion, SkinRef,
};
use sinew_jobs::error::JobError;
use sinew_jobs::frame::EntityCounts;
use sinew_jobs::j4_sample_blend::EntitySampling;
use sinew_jobs::j8_remap_cache::RemapCache;
use sinew_jobs::{
    BoneOffsetsJob, PropagateJob, RemapCacheJob, RootMotionJob, SampleBlendJob, SkinningJob,
    UserCurvesJob,
};
use sinew_runtime::store::Entity;
use std::sync::Arc;

//   root ── tip      (two bones)
fn rig(name: &str) -> Arc<Rig> {
    Arc::new(
        RawRig {
            name: name.into(),
            bones: vec![
                RawBone {
                    name: "root".into(),
                    parent: None,
                    rest: Transform::IDENTITY,
                },
                RawBone {
                    name: "tip".into(),
                    parent: Some(0),
                    rest: Transform::from_translation(Vec3::Y),
                },
            ],
        }
        .bake()
        .unwrap(),
    )
}

fn clip(rig: &Rig, additive: bool) -> Arc<sinew_jobs::asset::Clip> {
    Arc::new(
        RawClip {
            name: "c".into(),
            bones: vec![RawBoneTracks {
                bone: "tip".into(),
                translation: None,
                rotation: Some(RawTrack::linear(
                    vec![0.0, 1.0],
                    vec![Quat::IDENTITY, Quat::from_rotation_z(1.0)],
                )),
                scale: None,
            }],
            additive_reference: additive.then_some(sinew_jobs::asset::AdditiveReference::RestPose),
            ..Default::default()
        }
        .bake(rig)
        .unwrap(),
    )
}

const E: Entity = Entity::DANGLING;

fn offsets_job_err(rigs: &[RigRef], animations: &[Animations]) -> JobError {
    let mut counts = vec![EntityCounts::default(); rigs.len()];
    let entities = vec![E; rigs.len()];
    BoneOffsetsJob {
        entities: &entities,
        rigs,
        skins: None,
        animations,
        counts: &mut counts,
    }
    .validate()
    .unwrap_err()
}

#[test]
fn bone_offsets_rejects_each_bad_binding() {
    let r = rig("a");
    let c = clip(&r, false);
    // Lengths.
    let mut counts = vec![EntityCounts::default(); 2];
    let one = [RigRef(r.clone())];
    assert!(matches!(
        BoneOffsetsJob {
            entities: &[E, E],
            rigs: &one,
            skins: None,
            animations: &[Animations::default()],
            counts: &mut counts
        }
        .validate(),
        Err(JobError::LengthMismatch { .. })
    ));
    // A clip baked for another rig (same bone names, different rest pose: a different content hash).
    let mut other_raw = RawRig {
        name: "x".into(),
        bones: vec![RawBone {
            name: "root".into(),
            parent: None,
            rest: Transform::IDENTITY,
        }],
    };
    other_raw.bones.push(RawBone {
        name: "tip".into(),
        parent: Some(0),
        rest: Transform::from_translation(Vec3::X),
    });
    let foreign_rig = other_raw.bake().unwrap();
    let foreign = clip(&foreign_rig, false);
    let e = offsets_job_err(
        &[RigRef(r.clone())],
        &[Animations::new(vec![AnimationToProcess::new(foreign)])],
    );
    assert!(matches!(e, JobError::ClipRigMismatch { .. }), "{e}");
    // A mask for another rig.
    let mask = Arc::new(
        RawAvatarMask {
            name: "m".into(),
            bones: vec![("tip".into(), 1.0)],
            include_descendants: false,
        }
        .bake(&foreign_rig)
        .unwrap(),
    );
    let e = offsets_job_err(
        &[RigRef(r.clone())],
        &[Animations::new(vec![
            AnimationToProcess::new(c.clone()).mask(mask),
        ])],
    );
    assert!(matches!(e, JobError::MaskRigMismatch { .. }), "{e}");
    // Negative weight, NaN time.
    let e = offsets_job_err(
        &[RigRef(r.clone())],
        &[Animations::new(vec![
            AnimationToProcess::new(c.clone()).weight(-1.0),
        ])],
    );
    assert!(matches!(e, JobError::BadAnimation { .. }), "{e}");
    let e = offsets_job_err(
        &[RigRef(r.clone())],
        &[Animations::new(vec![
            AnimationToProcess::new(c.clone()).at(f32::NAN),
        ])],
    );
    assert!(matches!(e, JobError::BadAnimation { .. }), "{e}");
    // Layer out of range, a layer mixing modes, additive without a reference pose.
    let e = offsets_job_err(
        &[RigRef(r.clone())],
        &[Animations::new(vec![
            AnimationToProcess::new(c.clone()).layer(8, BlendMode::Override),
        ])],
    );
    assert!(matches!(e, JobError::BadLayer { layer: 8, .. }), "{e}");
    let add = clip(&r, true);
    let e = offsets_job_err(
        &[RigRef(r.clone())],
        &[Animations::new(vec![
            AnimationToProcess::new(add.clone()),
            AnimationToProcess::new(add).layer(0, BlendMode::Additive),
        ])],
    );
    assert!(matches!(e, JobError::BadLayer { layer: 0, .. }), "{e}");
    let e = offsets_job_err(
        &[RigRef(r.clone())],
        &[Animations::new(vec![
            AnimationToProcess::new(c).layer(1, BlendMode::Additive),
        ])],
    );
    assert!(matches!(e, JobError::BadLayer { layer: 1, .. }), "{e}");
    // Empty crowd.
    BoneOffsetsJob {
        entities: &[],
        rigs: &[],
        skins: None,
        animations: &[],
        counts: &mut [],
    }
    .validate()
    .unwrap();
}

#[test]
fn sampling_rejects_bad_ranges_and_spans() {
    let r = rig("a");
    let c = clip(&r, false);
    let anims = [AnimationToProcess::new(c)];
    let entity = |bone_offset| {
        Some(EntitySampling {
            rig: &r,
            animations: &anims,
            layer_weights: [1.0; 8],
            span_offset: 0,
            bone_offset,
        })
    };
    let entities = [entity(0)];
    let spans = [KeySpan::default()];
    let mut out = [Transform::IDENTITY; 2];
    SampleBlendJob {
        entities: &entities,
        spans: &spans,
        out: &mut out,
        batch: 16,
    }
    .validate()
    .unwrap();
    let mut short = [Transform::IDENTITY; 1];
    assert!(matches!(
        SampleBlendJob {
            entities: &entities,
            spans: &spans,
            out: &mut short,
            batch: 16
        }
        .validate(),
        Err(JobError::LengthMismatch { buffer: "out", .. })
    ));
    assert!(matches!(
        SampleBlendJob {
            entities: &entities,
            spans: &[],
            out: &mut out,
            batch: 16
        }
        .validate(),
        Err(JobError::LengthMismatch {
            buffer: "spans",
            ..
        })
    ));
    // Bone ranges past the output, or overlapping the previous entity's.
    assert!(matches!(
        SampleBlendJob {
            entities: &[entity(1)],
            spans: &spans,
            out: &mut out,
            batch: 16
        }
        .validate(),
        Err(JobError::LengthMismatch { buffer: "out", .. })
    ));
    let mut four = [Transform::IDENTITY; 4];
    assert!(matches!(
        SampleBlendJob {
            entities: &[entity(0), entity(1)],
            spans: &spans,
            out: &mut four,
            batch: 16
        }
        .validate(),
        Err(JobError::LengthMismatch {
            buffer: "bone offsets",
            ..
        })
    ));
    SampleBlendJob {
        entities: &[entity(0), None, entity(2)],
        spans: &spans,
        out: &mut four,
        batch: 16,
    }
    .validate()
    .unwrap();
    SampleBlendJob {
        entities: &[],
        spans: &[],
        out: &mut [],
        batch: 16,
    }
    .validate()
    .unwrap();
}

#[test]
fn user_curves_root_motion_and_propagation_reject_bad_lengths() {
    let r = rig("a");
    let anims = [Animations::default()];
    let lw = [LayerWeights::default()];
    let mut curves = [CurveValues::default(), CurveValues::default()];
    assert!(matches!(
        UserCurvesJob {
            entities: &[E],
            animations: &anims,
            layer_weights: &lw,
            curves: Some(&mut curves),
            events: None
        }
        .validate(),
        Err(JobError::LengthMismatch {
            buffer: "curves",
            ..
        })
    ));
    let mut events = [FiredEvents::default()];
    UserCurvesJob {
        entities: &[E],
        animations: &anims,
        layer_weights: &lw,
        curves: None,
        events: Some(&mut events),
    }
    .validate()
    .unwrap();
    UserCurvesJob {
        entities: &[],
        animations: &[],
        layer_weights: &[],
        curves: None,
        events: None,
    }
    .validate()
    .unwrap();

    let rigs = [RigRef(r.clone())];
    let slot = [FrameSlot {
        index: 0,
        bone_offset: 10,
        bone_count: 2,
        palette_offset: 0,
        palette_count: 0,
    }];
    let mut motion = [RootMotion::default()];
    let mut poses = [Transform::IDENTITY; 2];
    // The root (flat bone 10) lies outside a piece that starts at flat bone 0.
    let e = RootMotionJob {
        entities: &[E],
        rigs: &rigs,
        animations: &anims,
        layer_weights: &lw,
        slots: &slot,
        motion: &mut motion,
        transforms: None,
        poses: &mut poses,
        pose_base: 0,
        dt: 0.1,
    }
    .validate();
    assert!(
        matches!(
            e,
            Err(JobError::LengthMismatch {
                buffer: "poses",
                ..
            })
        ),
        "{e:?}"
    );
    RootMotionJob {
        entities: &[E],
        rigs: &rigs,
        animations: &anims,
        layer_weights: &lw,
        slots: &slot,
        motion: &mut motion,
        transforms: None,
        poses: &mut poses,
        pose_base: 10,
        dt: 0.1,
    }
    .validate()
    .unwrap();
    assert!(matches!(
        RootMotionJob {
            entities: &[E],
            rigs: &rigs,
            animations: &anims,
            layer_weights: &lw,
            slots: &slot,
            motion: &mut [],
            transforms: None,
            poses: &mut poses,
            pose_base: 10,
            dt: 0.1
        }
        .validate(),
        Err(JobError::LengthMismatch {
            buffer: "motion",
            ..
        })
    ));

    let local = [Transform::IDENTITY; 2];
    let mut model = [Affine3A::IDENTITY; 2];
    PropagateJob {
        entities: &[E],
        rigs: &rigs,
        slots: &slot,
        local: &local,
        model: &mut model,
        base: 10,
    }
    .validate()
    .unwrap();
    let wrong_count = [FrameSlot {
        bone_count: 3,
        ..slot[0]
    }];
    assert!(
        PropagateJob {
            entities: &[E],
            rigs: &rigs,
            slots: &wrong_count,
            local: &local,
            model: &mut model,
            base: 10
        }
        .validate()
        .is_err()
    );
    let mut short = [Affine3A::IDENTITY; 1];
    assert!(matches!(
        PropagateJob {
            entities: &[E],
            rigs: &rigs,
            slots: &slot,
            local: &local,
            model: &mut short,
            base: 10
        }
        .validate(),
        Err(JobError::LengthMismatch {
            buffer: "model",
            ..
        })
    ));
    assert!(
        PropagateJob {
            entities: &[E],
            rigs: &rigs,
            slots: &slot,
            local: &local,
            model: &mut model,
            base: 0
        }
        .validate()
        .is_err()
    );
}

#[test]
fn skinning_rejects_missing_remap_short_palette_and_bad_root_bone() {
    let r = rig("a");
    let mesh = Arc::new(
        RawSkinnedMesh {
            name: "m".into(),
            bones: vec![("tip".into(), glam::Mat4::IDENTITY)],
            positions: vec![Vec3::ZERO],
            normals: vec![],
            influences: vec![RawVertexInfluences(vec![(0, 1.0)])],
            indices: vec![],
            ..Default::default()
        }
        .bake()
        .unwrap(),
    );
    let rigs = [RigRef(r.clone())];
    let skins = [SkinRef::new(mesh.clone())];
    let slots = [FrameSlot {
        index: 0,
        bone_offset: 0,
        bone_count: 2,
        palette_offset: 0,
        palette_count: 1,
    }];
    let model = [Affine3A::IDENTITY; 2];
    let mut palette = [[0.0f32; 12]; 1];
    let empty = RemapCache::default();
    let e = SkinningJob {
        entities: &[E],
        rigs: &rigs,
        skins: &skins,
        slots: &slots,
        model: &model,
        remap: &empty,
        palette: &mut palette,
        palette_base: 0,
    }
    .validate();
    assert!(matches!(e, Err(JobError::MissingRemap { .. })), "{e:?}");
    let mut cache = RemapCache::default();
    let pairs = [(&*r, &*mesh)];
    let mut job8 = RemapCacheJob {
        pairs: &pairs,
        cache: &mut cache,
    };
    job8.validate().unwrap();
    job8.run();
    // Built once, reused: running again builds nothing.
    RemapCacheJob {
        pairs: &pairs,
        cache: &mut cache,
    }
    .run();
    assert_eq!((cache.len(), cache.builds()), (1, 1));
    assert_eq!(cache.get(&r, &mesh).unwrap().mesh_to_rig, vec![1]);
    let mut job = SkinningJob {
        entities: &[E],
        rigs: &rigs,
        skins: &skins,
        slots: &slots,
        model: &model,
        remap: &cache,
        palette: &mut palette,
        palette_base: 0,
    };
    job.validate().unwrap();
    job.run();
    assert_eq!(palette[0], [1., 0., 0., 0., 1., 0., 0., 0., 1., 0., 0., 0.]);
    let mut none: [[f32; 12]; 0] = [];
    assert!(matches!(
        SkinningJob {
            entities: &[E],
            rigs: &rigs,
            skins: &skins,
            slots: &slots,
            model: &model,
            remap: &cache,
            palette: &mut none,
            palette_base: 0
        }
        .validate(),
        Err(JobError::LengthMismatch {
            buffer: "palette",
            ..
        })
    ));
    let bad_root = [SkinRef {
        mesh: mesh.clone(),
        root_bone: Some(BoneIndex(7)),
    }];
    assert!(matches!(
        SkinningJob {
            entities: &[E],
            rigs: &rigs,
            skins: &bad_root,
            slots: &slots,
            model: &model,
            remap: &cache,
            palette: &mut palette,
            palette_base: 0
        }
        .validate(),
        Err(JobError::BoneOutOfRange { bone: 7, .. })
    ));
    SkinningJob {
        entities: &[],
        rigs: &[],
        skins: &[],
        slots: &[],
        model: &[],
        remap: &empty,
        palette: &mut [],
        palette_base: 0,
    }
    .validate()
    .unwrap();
}
