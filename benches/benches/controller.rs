//! The animation controller at 10 000 built-in characters driven by the crowd's controller
//! (a 1D locomotion tree of three clips, a masked wave layer entered by a trigger, additive
//! breathing): the job alone on one thread over flat buffers, and the pipeline's controller
//! node measured in place on 1 and 2 threads. Prints the per-entity state bytes.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sinew_examples::crowd::{controller_state_for, crowd_controller};
use sinew_fixtures::builtin;
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::AssetRegistry;
use sinew_jobs::component::{Animations, LayerWeights, RigRef, skinned};
use sinew_jobs::controller::{ControllerJob, ControllerState};
use sinew_runtime::store::{Entity, Store};
use std::time::Duration;

const N: usize = 10_000;
const DT: f32 = 1.0 / 60.0;

fn bench(cr: &mut Criterion) {
    let c = builtin::bake_character(&AssetRegistry::new()).expect("bake");
    let ctl = crowd_controller(&c).expect("controller");
    let mut states: Vec<ControllerState> = (0..N as u64)
        .map(|i| controller_state_for(&ctl, &c.rig, i).expect("state"))
        .collect();
    let mut animations = vec![Animations::default(); N];
    let mut layer_weights = vec![LayerWeights::default(); N];
    let rigs = vec![RigRef(c.rig.clone()); N];
    let entities = vec![Entity::DANGLING; N];
    let mut frame = 0u64;
    let mut step =
        |states: &mut [ControllerState], animations: &mut [Animations], lw: &mut [LayerWeights]| {
            frame += 1;
            if frame.is_multiple_of(60) {
                for s in states.iter_mut().step_by(4) {
                    s.set_trigger("wave").expect("trigger");
                }
            }
            let mut job = ControllerJob {
                entities: &entities,
                rigs: &rigs,
                states,
                animations,
                layer_weights: lw,
                curves: None,
                dt: DT,
            };
            job.validate().expect("valid");
            job.run();
        };
    for _ in 0..120 {
        step(&mut states, &mut animations, &mut layer_weights);
    }
    let bytes: usize = states.iter().map(ControllerState::bytes).sum::<usize>() / N;
    eprintln!(
        "controller state: {bytes} bytes per entity ({} inline, {} per layer, 3 layers, 5 parameters; event buffer at its capacity)",
        std::mem::size_of::<ControllerState>(),
        ControllerState::LAYER_BYTES
    );
    let mut group = cr.benchmark_group("controller");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Elements(N as u64));
    group.bench_function(BenchmarkId::new("job_1_thread", N), |b| {
        b.iter(|| step(&mut states, &mut animations, &mut layer_weights))
    });
    for threads in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        let (mut store, mut animator, mut palette) = pool.install(|| {
            let mut store = Store::new();
            for i in 0..N as u64 {
                let e = store
                    .spawn(skinned(c.rig.clone(), c.mesh.clone(), vec![]))
                    .expect("spawn");
                store
                    .insert(e, controller_state_for(&ctl, &c.rig, i).expect("state"))
                    .expect("insert");
            }
            let mut animator = Animator::new(&mut store).expect("graph");
            let mut palette = vec![[0.0f32; 12]; N * c.mesh.bone_count()];
            animator
                .run_frame_into(&mut store, DT, &mut palette)
                .expect("frame");
            (store, animator, palette)
        });
        let k = animator
            .timings()
            .iter()
            .position(|t| t.name == "controller")
            .expect("controller node");
        group.bench_with_input(
            BenchmarkId::new("node", format!("{N}/{threads}_threads")),
            &threads,
            |b, _| {
                b.iter_custom(|iters| {
                    pool.install(|| {
                        let mut total = Duration::ZERO;
                        for _ in 0..iters {
                            animator
                                .run_frame_into(&mut store, DT, &mut palette)
                                .expect("frame");
                            total += animator
                                .timings()
                                .get(k)
                                .map_or(Duration::ZERO, |t| t.duration);
                        }
                        total
                    })
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
