//! The benchmark workload of `docs/WORKLOAD.md`, run through the full nine-job graph:
//! N Fox characters, Walk·0.7 + Run·0.3 in one layer (LINEAR keys: translations lerped,
//! rotations nlerped as ozz does — `Clip::with_linear_rotation(Nlerp)`; glTF's slerp is the
//! importer's default — then blended as a weighted quaternion sum with sign alignment and
//! normalised), hierarchy, float3x4 palettes (48 B, not ozz's 4x4).
//!
//! [`Variant::Layered`] adds WORKLOAD.md's "Layered variant": Survey at its own phase on a
//! second override layer, animation weight 0.5, masked to the subtree of `b_Spine02_03`.
//! Masked layers take the sampler's per-bone path, not the SoA grid path
//! ([`sinew_jobs::j4_sample_blend`]).

use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{
    AssetRegistry, AvatarMask, Clip, LinearRotation, RawAvatarMask, Rig, SkinnedMesh,
};
use sinew_jobs::component::{
    AnimationToProcess, Animations, BlendMode, FrameSlot, LayerWeights, RigRef, SamplingCursors,
    SkinRef,
};
use sinew_jobs::frame::{ModelPoses, PaletteEntry};
use sinew_jobs::import::import_gltf;
use sinew_jobs::j8_remap_cache::RemapTable;
use sinew_jobs::pipeline::{DEFAULT_GRAIN, PipelineConfig, PoseChain};
use sinew_runtime::graph::{Access, FnNode, NodeError};
use sinew_runtime::store::Store;
use std::path::Path;
use std::sync::Arc;

/// Frame step of the workload.
pub const DT: f64 = 1.0 / 60.0;
/// The golden ratio's fraction, for phases.
const PHI_FRAC: f64 = 0.618_033_988_749_894_9;

/// Character `i`'s phase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Phase(pub f64);

/// The workload's frame counter `f` (a resource).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WorkloadFrame(pub u64);

/// The layered variant's mask root: it and its descendants (9 joints) play Survey.
pub const MASK_ROOT: &str = "b_Spine02_03";
/// The layered variant's Survey weight inside the mask.
pub const SURVEY_WEIGHT: f32 = 0.5;

/// Which of WORKLOAD.md's workloads runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Variant {
    /// Walk·0.7 + Run·0.3 on one layer.
    #[default]
    Basic,
    /// The basic layer, then Survey on a second override layer of weight
    /// [`SURVEY_WEIGHT`], masked to the subtree of [`MASK_ROOT`].
    Layered,
}

/// How [`setup_with`] builds the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkloadConfig {
    /// Basic or layered.
    pub variant: Variant,
    /// How jobs 4, 6, 7 and 9 run.
    pub pose_chain: PoseChain,
    /// [`PipelineConfig::grain`]: entities per task in the pose chain.
    pub grain: usize,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        Self {
            variant: Variant::Basic,
            pose_chain: PoseChain::default(),
            grain: DEFAULT_GRAIN,
        }
    }
}

/// The assets of the workload.
#[derive(Clone, Debug)]
pub struct FoxAssets {
    /// The rig (every node of the scene).
    pub rig: Arc<Rig>,
    /// The skinned mesh (24 joints).
    pub mesh: Arc<SkinnedMesh>,
    /// Clip A.
    pub walk: Arc<Clip>,
    /// Clip B.
    pub run: Arc<Clip>,
    /// Clip C of the layered variant.
    pub survey: Arc<Clip>,
    /// The layered variant's mask: weight 1 on [`MASK_ROOT`] and its descendants, 0 elsewhere.
    pub upper_body: Arc<AvatarMask>,
}

/// Loads Fox.glb.
///
/// # Errors
/// A message when the file cannot be imported or lacks the clips.
pub fn load_fox(path: &Path) -> Result<FoxAssets, String> {
    let registry = AssetRegistry::new();
    let scene = import_gltf(path, &registry).map_err(|e| format!("{}: {e}", path.display()))?;
    let find = |name: &str| {
        scene
            .clips
            .iter()
            .find(|c| c.name() == name)
            .cloned()
            .ok_or_else(|| format!("{}: no clip '{name}'", path.display()))
    };
    let mesh = scene
        .meshes
        .first()
        .map(|m| m.skinned_mesh.clone())
        .ok_or_else(|| format!("{}: no skinned mesh", path.display()))?;
    // ozz-animation samples LINEAR rotations with nlerp; the workload follows it (glTF's own
    // rule, slerp, lands about 5e-3 away from ozz's palette checksum).
    let nlerp = |c: Arc<Clip>| Arc::new(c.with_linear_rotation(LinearRotation::Nlerp));
    let upper_body = RawAvatarMask {
        name: "upper body".into(),
        bones: vec![(MASK_ROOT.into(), 1.0)],
        include_descendants: true,
    }
    .bake(&scene.rig)
    .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(FoxAssets {
        rig: scene.rig.clone(),
        walk: nlerp(find("Walk")?),
        run: nlerp(find("Run")?),
        survey: nlerp(find("Survey")?),
        upper_body: Arc::new(upper_body),
        mesh,
    })
}

/// The workload's times of character `i` at frame `f`: `(time_A, time_B)`.
pub fn times(i: u64, f: u64, dur_a: f64, dur_b: f64) -> (f32, f32) {
    let frac = |x: f64| x - x.floor();
    let ph = frac(i as f64 * PHI_FRAC);
    let ra = frac(ph + f as f64 * DT / dur_a);
    let rb = frac(ph + 0.37 + f as f64 * DT / dur_b);
    ((ra * dur_a) as f32, (rb * dur_b) as f32)
}

/// The layered variant's Survey time of character `i` at frame `f`:
/// `frac(ph_i + 0.61 + f·dt / duration_C) · duration_C`.
pub fn time_survey(i: u64, f: u64, dur_c: f64) -> f32 {
    let frac = |x: f64| x - x.floor();
    let ph = frac(i as f64 * PHI_FRAC);
    (frac(ph + 0.61 + f as f64 * DT / dur_c) * dur_c) as f32
}

/// The basic workload ([`setup_with`] with the default [`WorkloadConfig`] and `pose_chain`).
///
/// # Errors
/// A message when the store or graph cannot be built.
pub fn setup(
    fox: &FoxAssets,
    n: usize,
    pose_chain: PoseChain,
) -> Result<(Store, Animator), String> {
    setup_with(
        fox,
        n,
        WorkloadConfig {
            pose_chain,
            ..WorkloadConfig::default()
        },
    )
}

/// A store with `n` characters and an animator (jobs 4, 6, 7 and 9 run as `config` says)
/// whose first node sets every character's clip times from the frame counter.
///
/// # Errors
/// A message when the store or graph cannot be built.
pub fn setup_with(
    fox: &FoxAssets,
    n: usize,
    config: WorkloadConfig,
) -> Result<(Store, Animator), String> {
    let mut store = Store::new();
    let layered = config.variant == Variant::Layered;
    store
        .spawn_batch((0..n as u64).map(|i| {
            let mut list = vec![
                AnimationToProcess::new(fox.walk.clone()).weight(0.7),
                AnimationToProcess::new(fox.run.clone()).weight(0.3),
            ];
            if layered {
                list.push(
                    AnimationToProcess::new(fox.survey.clone())
                        .weight(SURVEY_WEIGHT)
                        .layer(1, BlendMode::Override)
                        .mask(fox.upper_body.clone()),
                );
            }
            (
                RigRef(fox.rig.clone()),
                Animations::new(list),
                LayerWeights::default(),
                FrameSlot::default(),
                SamplingCursors::default(),
                SkinRef::new(fox.mesh.clone()),
                Phase(i as f64),
            )
        }))
        .map_err(|e| e.to_string())?;
    store.insert_resource(WorkloadFrame(0));
    let (dur_a, dur_b, dur_c) = (
        f64::from(fox.walk.duration()),
        f64::from(fox.run.duration()),
        f64::from(fox.survey.duration()),
    );
    let pipeline = PipelineConfig {
        advance_clocks: false,
        pose_chain: config.pose_chain,
        grain: config.grain,
    };
    let animator = Animator::with(&mut store, pipeline, |b, nodes| {
        let clock = b.add_node(FnNode::new(
            "workload clock",
            Access::new()
                .read::<WorkloadFrame>()
                .read::<Phase>()
                .write::<Animations>(),
            move |ctx| {
                let f = ctx
                    .resource::<WorkloadFrame>()
                    .map_err(NodeError::from_error)?
                    .0;
                let mut q = ctx
                    .query::<(&Phase, &mut Animations)>()
                    .map_err(NodeError::from_error)?;
                q.par_for_each_chunk(|chunk| {
                    let (phases, anims) = chunk.into_columns();
                    for (p, a) in phases.iter().zip(anims.iter_mut()) {
                        let (ta, tb) = times(p.0 as u64, f, dur_a, dur_b);
                        let mut it = a.iter_mut();
                        if let (Some(x), Some(y)) = (it.next(), it.next()) {
                            (x.time, x.previous_time, y.time, y.previous_time) = (ta, ta, tb, tb);
                        }
                        // Layer 1 sorts after layer 0: the third animation is Survey.
                        if let Some(z) = it.next() {
                            let tc = time_survey(p.0 as u64, f, dur_c);
                            (z.time, z.previous_time) = (tc, tc);
                        }
                    }
                });
                Ok(())
            },
        ));
        // Before the controller node, the other writer of animation lists (it drives no
        // entity here), and so before job 1.
        b.add_edge(clock, nodes.controller);
    })
    .map_err(|e| e.to_string())?;
    Ok((store, animator))
}

/// Runs frame `f` (sets the counter, runs the graph into `palette`).
///
/// # Errors
/// The frame's error as text.
pub fn run_frame(
    store: &mut Store,
    animator: &mut Animator,
    f: u64,
    palette: &mut [PaletteEntry],
) -> Result<(), String> {
    if let Ok(fr) = store.resource_mut::<WorkloadFrame>() {
        fr.0 = f;
    }
    animator
        .run_frame_into(store, DT as f32, palette)
        .map_err(|e| e.to_string())
}

/// WORKLOAD.md's checksums over characters 0..3 (4x4 matrices, as ozz writes them):
/// `(Σ palette elements, Σ model-matrix elements of the skin's joints)`, the second `None`
/// when the pipeline did not keep model matrices.
pub fn checksums(store: &Store, fox: &FoxAssets, palette: &[PaletteEntry]) -> (f64, Option<f64>) {
    let joints = fox.mesh.bone_count();
    let table = RemapTable::build(&fox.rig, &fox.mesh);
    let bones = fox.rig.bone_count();
    let model = store
        .resource::<ModelPoses>()
        .map(|m| m.0.as_slice())
        .unwrap_or(&[]);
    let mut pal = 0.0f64;
    let mut mdl = 0.0f64;
    let kept = model.len() >= 4 * bones;
    for c in 0..4usize {
        for j in 0..joints {
            if let Some(p) = palette.get(c * joints + j) {
                pal += p.iter().map(|&x| f64::from(x)).sum::<f64>() + 1.0; // + the row (0 0 0 1)
            }
            if let Some(m) = table
                .mesh_to_rig
                .get(j)
                .and_then(|&r| model.get(c * bones + r as usize))
            {
                mdl += m.to_cols_array().iter().map(|&x| f64::from(x)).sum::<f64>() + 1.0;
            }
        }
    }
    (pal, kept.then_some(mdl))
}
