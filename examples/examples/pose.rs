//! One pose of a glTF file, as JSON, computed through the sinew pipeline (store, graph, the nine
//! jobs): `pose FILE --clip INDEX_OR_NAME --time SECONDS`.
//!
//! Prints `{"file", "clip", "time", "nodes": [{"index", "name", "world": [16 floats,
//! column-major]}...], "primitives": [{"node", "mesh", "primitive", "positions": [x, y, z,
//! ...]}...]}`. Only the chosen clip is applied; nodes it does not animate keep their rest
//! transform. Skinned positions follow the glTF formula `Σ wᵢ · (jointWorldᵢ · inverseBindᵢ) ·
//! (p_bind + Σₖ mₖ · Δₖ)`, ignoring the skinned node's own transform; the morph weights `mₖ`
//! are the clip's (its `weights` channel), else `node.weights`, else `mesh.weights`, else 0. A
//! mesh node without a skin whose weights an animation of the file drives is listed too, with
//! world-space positions `nodeWorld · (p_bind + Σₖ mₖ · Δₖ)`.

use clap::Parser;
use glam::Mat4;
use serde_json::json;
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::AssetRegistry;
use sinew_jobs::component::{
    AnimationToProcess, CurveValues, FrameSlot, MorphWeights, SkinRef, animated,
};
use sinew_jobs::frame::ModelPoses;
use sinew_jobs::import::import_gltf;
use sinew_jobs::pipeline::{PipelineConfig, PoseChain};
use sinew_runtime::store::Store;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "pose", about = "Print one pose of a glTF file as JSON")]
struct Args {
    /// The .glb or .gltf file.
    file: PathBuf,
    /// Animation index or name.
    #[arg(long)]
    clip: String,
    /// Time in seconds (the glTF timeline).
    #[arg(long)]
    time: f32,
    /// Skin on the GPU (compute shader) instead of the CPU.
    #[arg(long)]
    gpu: bool,
}

fn main() -> ExitCode {
    let args: Args = match sinew_examples::cli::parse_args("pose") {
        Ok(a) => a,
        Err(code) => return code,
    };
    match run(&args) {
        Ok(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pose: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<serde_json::Value, String> {
    if !args.time.is_finite() {
        return Err(format!(
            "--time must be a finite number of seconds, got {}",
            args.time
        ));
    }
    let registry = AssetRegistry::new();
    let scene =
        import_gltf(&args.file, &registry).map_err(|e| format!("{}: {e}", args.file.display()))?;
    let clip = args
        .clip
        .parse::<usize>()
        .ok()
        .and_then(|i| scene.clips.get(i))
        .or_else(|| scene.clips.iter().find(|c| c.name() == args.clip))
        .cloned()
        .ok_or_else(|| {
            let names: Vec<String> = scene
                .clips
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{i}: {}", c.name()))
                .collect();
            format!(
                "{}: no clip '{}' (clips: {})",
                args.file.display(),
                args.clip,
                names.join(", ")
            )
        })?;
    // The clip is sampled at the glTF time itself, clamped (no looping wrap).
    let mut store = Store::new();
    let anim = || {
        vec![
            AnimationToProcess::new(clip.clone())
                .at(args.time)
                .looping(false),
        ]
    };
    // One entity per skinned primitive (each gets its own palette), and one per primitive of
    // an unskinned node whose weights an animation drives (its mesh bound to the node); one
    // bare entity otherwise.
    let animated_weights = |node_name: &str| {
        let prefix = format!("{node_name}.weights[");
        scene
            .clips
            .iter()
            .any(|c| c.curves().iter().any(|k| k.name.starts_with(&prefix)))
    };
    let morphed = scene
        .morphed_nodes
        .iter()
        .filter(|m| animated_weights(&m.node_name));
    let mut skinned = Vec::new();
    for m in scene.meshes.iter().chain(morphed) {
        let e = store
            .spawn(animated(scene.rig.clone(), anim()))
            .map_err(|e| e.to_string())?;
        store
            .insert(e, SkinRef::new(m.skinned_mesh.clone()))
            .map_err(|e| e.to_string())?;
        if !m.skinned_mesh.morph_targets().is_empty() {
            store
                .insert(e, CurveValues::default())
                .map_err(|e| e.to_string())?;
            store
                .insert(e, m.morph_weights_component())
                .map_err(|e| e.to_string())?;
        }
        skinned.push((e, m));
    }
    let first = match skinned.first() {
        Some((e, _)) => *e,
        None => store
            .spawn(animated(scene.rig.clone(), anim()))
            .map_err(|e| e.to_string())?,
    };
    let mut animator = Animator::with(
        &mut store,
        PipelineConfig {
            advance_clocks: false,
            pose_chain: PoseChain::FUSED_KEEPING_MODEL_POSES,
            ..Default::default()
        },
        |_, _| {},
    )
    .map_err(|e| e.to_string())?;
    animator
        .run_frame(&mut store, 0.0)
        .map_err(|e| e.to_string())?;

    let model = &store.resource::<ModelPoses>().map_err(|e| e.to_string())?.0;
    let base = store
        .get::<FrameSlot>(first)
        .map_err(|e| e.to_string())?
        .bone_offset as usize;
    let nodes: Vec<serde_json::Value> = scene
        .node_names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let world = scene
                .node_to_bone
                .get(i)
                .copied()
                .flatten()
                .and_then(|b| model.get(base + b.get()))
                .map_or(Mat4::IDENTITY, |m| Mat4::from(*m));
            json!({"index": i, "name": name, "world": world.to_cols_array()})
        })
        .collect();
    let palettes = animator.palettes(&store);
    let mut primitives = Vec::new();
    for (e, m) in &skinned {
        let slot = store.get::<FrameSlot>(*e).map_err(|e| e.to_string())?;
        let range =
            slot.palette_offset as usize..(slot.palette_offset + slot.palette_count) as usize;
        let palette = palettes.get(range).ok_or("palette range out of bounds")?;
        let active = match store.get::<MorphWeights>(*e) {
            Ok(w) => w.active().to_vec(),
            Err(_) => Vec::new(),
        };
        let positions = if args.gpu {
            gpu_positions(&m.skinned_mesh, palette, &active)?
        } else {
            m.skinned_mesh.skin_cpu_morphed(palette, &active).0
        };
        let flat: Vec<f32> = positions.iter().flat_map(|p| [p.x, p.y, p.z]).collect();
        primitives.push(
            json!({"node": m.node, "mesh": m.mesh, "primitive": m.primitive, "positions": flat}),
        );
    }
    Ok(json!({
        "file": args.file.display().to_string(),
        "clip": clip.name(),
        "time": args.time,
        "nodes": nodes,
        "primitives": primitives,
    }))
}

/// The same positions from the skinning compute shader (`skinning.wgsl`), read back.
fn gpu_positions(
    mesh: &sinew_jobs::asset::SkinnedMesh,
    palette: &[[f32; 12]],
    active: &[sinew_jobs::asset::ActiveMorph],
) -> Result<Vec<glam::Vec3>, String> {
    let ctx = sinew_gpu::context::GpuContext::new().map_err(|e| format!("--gpu: {e}"))?;
    sinew_gpu::skin_pass::SkinPass::skin_positions_morphed(&ctx, mesh, palette, active)
        .map(|(p, _)| p)
        .map_err(|e| format!("--gpu: {e}"))
}
