//! The IK stages over 10 000 built-in characters: each standalone job over every character's
//! model matrices on one thread (in place, frame after frame: the solvers do the same work
//! whether or not the pose was solved before), and the whole frame on the default thread
//! count without stages, with a head look-at, and with the crowd example's foot placement
//! (two-bone IK on both legs, the pelvis, the feet's tilt) and neck-head look-at: a superset of
//! the budget of two-bone IK on both legs plus a head look-at, at most 10% of the frame.
//! The jobs are the scalar reference, one entity at a time; in the frames the stages run over
//! groups of eight entities, foot placement and look-at one entity per `f32x8` lane.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use glam::{Affine3A, Quat, Vec3};
use sinew_examples::ground::{Procedural, Waves, camera_eye, stages as crowd_stages};
use sinew_fixtures::builtin::{self, BakedCharacter};
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{AssetRegistry, Rig, Transform};
use sinew_jobs::component::EntityTransform;
use sinew_jobs::frame::ModelPoses;
use sinew_jobs::ik::{
    AimIkJob, Channels, ConstraintJob, ConstraintSource, FabrikJob, FootPlacement,
    FootPlacementJob, Leg, LookAt, LookAtStage, TargetSpace, TwoBoneIkJob,
};
use sinew_jobs::pipeline::{PipelineConfig, PoseChain};
use sinew_jobs::pose_stage::PoseStages;
use sinew_runtime::store::{Entity, Store};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

const N: usize = 10_000;
const DT: f32 = 1.0 / 60.0;

fn bone(rig: &Rig, name: &str) -> usize {
    rig.find_by_name(name).map(|b| b.get()).expect("bone")
}

fn place(i: usize) -> Transform {
    let grid = (N as f64).sqrt().ceil() as usize;
    Transform::new(
        Vec3::new((i % grid) as f32 * 2.0, 0.0, (i / grid) as f32 * 2.0),
        Quat::IDENTITY,
        Vec3::ONE,
    )
}

fn spawn(c: &BakedCharacter, store: &mut Store) -> Vec<Entity> {
    store
        .spawn_batch((0..N).map(|i| {
            let mut m = c.crowd_member(i);
            m.6 = EntityTransform(place(i));
            m
        }))
        .expect("spawn")
}

/// Every character's model matrices after one frame, and the entities' transforms.
fn model_poses(c: &BakedCharacter) -> Vec<Affine3A> {
    let mut store = Store::new();
    spawn(c, &mut store);
    let config = PipelineConfig {
        pose_chain: PoseChain::FUSED_KEEPING_MODEL_POSES,
        ..PipelineConfig::default()
    };
    let mut animator = Animator::with(&mut store, config, |_, _| {}).expect("graph");
    animator.run_frame(&mut store, DT).expect("frame");
    store.resource::<ModelPoses>().expect("poses").0.clone()
}

fn legs(rig: &Rig) -> [(usize, usize, usize); 2] {
    ["_l", "_r"].map(|s| {
        (
            bone(rig, &format!("thigh{s}")),
            bone(rig, &format!("shin{s}")),
            bone(rig, &format!("foot{s}")),
        )
    })
}

fn jobs(cr: &mut Criterion) {
    let c = builtin::bake_character(&AssetRegistry::new()).expect("bake");
    let rig = c.rig.clone();
    let parents = rig.parent_indices();
    let bones = rig.bone_count();
    let mut model = model_poses(&c);
    let mut group = cr.benchmark_group("ik job");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Elements(N as u64));
    let legs = legs(&rig);
    group.bench_function(BenchmarkId::new("two-bone, both legs", N), |b| {
        b.iter(|| {
            for m in model.chunks_mut(bones) {
                for (k, &(start, mid, end)) in legs.iter().enumerate() {
                    let ankle: Vec3 = m[end].translation.into();
                    let r = TwoBoneIkJob {
                        parents,
                        model: m,
                        start,
                        mid,
                        end,
                        target: ankle + Vec3::new(0.02 * k as f32, 0.05, 0.01),
                        pole_vector: None,
                        mid_axis: Some(Vec3::X),
                        weight: 1.0,
                        soften: 1.0,
                        twist_angle: 0.0,
                    }
                    .run();
                    black_box(r);
                }
            }
        })
    });
    let head = bone(&rig, "head");
    group.bench_function(BenchmarkId::new("aim, head", N), |b| {
        b.iter(|| {
            for m in model.chunks_mut(bones) {
                let r = AimIkJob {
                    parents,
                    model: m,
                    joint: head,
                    target: Vec3::new(3.0, 1.7, 8.0),
                    forward: Vec3::Z,
                    up: Vec3::Y,
                    offset: Vec3::new(0.0, 0.09, 0.1),
                    pole_vector: Some(Vec3::Y),
                    weight: 1.0,
                }
                .run();
                black_box(r);
            }
        })
    });
    let spine: Vec<usize> = [
        "hips", "spine_01", "spine_02", "spine_03", "chest", "neck", "head",
    ]
    .iter()
    .map(|n| bone(&rig, n))
    .collect();
    group.bench_function(BenchmarkId::new("FABRIK, 7-joint spine", N), |b| {
        b.iter(|| {
            for m in model.chunks_mut(bones) {
                let hips: Vec3 = m[spine[0]].translation.into();
                let r = FabrikJob {
                    parents,
                    model: m,
                    chain: &spine,
                    target: hips + Vec3::new(0.1, 0.62, 0.15),
                    tolerance: 1e-3,
                    max_iterations: 10,
                    fixed_root: true,
                    limits: None,
                    weight: 1.0,
                }
                .run();
                black_box(r);
            }
        })
    });
    let hand = bone(&rig, "hand_r");
    group.bench_function(BenchmarkId::new("constraint, hand", N), |b| {
        b.iter(|| {
            for m in model.chunks_mut(bones) {
                ConstraintJob {
                    parents,
                    model: m,
                    bone: hand,
                    source: ConstraintSource::Transform {
                        transform: Transform::new(
                            Vec3::new(-0.3, 1.1, 0.3),
                            Quat::from_rotation_x(0.3),
                            Vec3::ONE,
                        ),
                        space: TargetSpace::Model,
                    },
                    channels: Channels::Both,
                    weight: 0.8,
                }
                .run();
            }
        })
    });
    let placement = FootPlacement {
        pelvis: bone(&rig, "hips"),
        legs: legs.map(|(hip, knee, ankle)| Leg {
            hip,
            knee,
            ankle,
            ankle_height: 0.07,
            knee_axis: Some(Vec3::X),
        }),
        weight: 1.0,
        max_tilt: 0.5,
    };
    group.bench_function(BenchmarkId::new("foot placement", N), |b| {
        b.iter(|| {
            for (i, m) in model.chunks_mut(bones).enumerate() {
                let r = FootPlacementJob {
                    parents,
                    model: m,
                    transform: place(i),
                    placement: &placement,
                    ground: &Waves,
                }
                .run();
                black_box(r);
            }
        })
    });
    group.finish();
}

fn frames(cr: &mut Criterion) {
    let c = builtin::bake_character(&AssetRegistry::new()).expect("bake");
    let rig = c.rig.clone();
    let mut group = cr.benchmark_group("ik frame");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(N as u64));
    let head = bone(&rig, "head");
    let grid = (N as f64).sqrt().ceil() as usize;
    let eye = camera_eye(grid, 2.0);
    type Setup<'a> = (&'a str, PoseStages, Box<dyn Fn(&mut Store, Entity) + 'a>);
    let setups: Vec<Setup<'_>> = vec![
        ("no stages", PoseStages::new(), Box::new(|_, _| {})),
        (
            "head look-at",
            PoseStages::new().with(LookAtStage),
            Box::new(|store, e| {
                let look = LookAt {
                    chain: Arc::from([head]),
                    share: 0.0,
                    target: eye,
                    space: TargetSpace::World,
                    forward: Vec3::Z,
                    up: Vec3::Y,
                    offset: Vec3::new(0.0, 0.09, 0.1),
                    pole_vector: Some(Vec3::Y),
                    weight: 1.0,
                    cone: None,
                };
                store.insert(e, look).expect("insert");
            }),
        ),
        (
            "crowd: foot placement (two-bone IK on both legs) + neck-head look-at",
            crowd_stages(),
            Box::new(|store, e| {
                Procedural::for_rig(&rig, eye)
                    .expect("built-in rig")
                    .equip(store, e)
                    .expect("equip");
            }),
        ),
    ];
    for (name, stages, equip) in &setups {
        let mut store = Store::new();
        for e in spawn(&c, &mut store) {
            equip(&mut store, e);
        }
        let mut animator =
            Animator::with_stages(&mut store, PipelineConfig::default(), stages, |_, _| {})
                .expect("graph");
        let mut palette = vec![[0.0f32; 12]; N * c.mesh.bone_count()];
        group.bench_function(BenchmarkId::new(*name, N), |b| {
            b.iter(|| {
                animator
                    .run_frame_into(&mut store, DT, &mut palette)
                    .expect("frame")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, jobs, frames);
criterion_main!(benches);
