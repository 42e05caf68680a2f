//! A baked crowd: every clip of a model baked into an animation texture once, then N
//! instances drawn offscreen by one instanced draw call whose vertex shader plays them. Per
//! frame the CPU writes only the camera and the global time.
//!
//! `cargo run --release -p sinew-examples --example baked -- --count 100000` draws 100 000
//! built-in characters for 60 frames and prints bake time, GPU memory and per-frame CPU, GPU
//! and wall times. `--gltf FILE` crowds a glTF model instead, `--png FILE` writes the last
//! frame, `--counts 10000,100000` measures several crowd sizes in one run, `--cpu-path N`
//! also times the nine-job CPU pipeline on N characters for comparison, `--half` uploads
//! RGBA16F, `--raster compute,hardware` draws every crowd size with the compute rasteriser
//! (`sinew_gpu::raster`) and the graphics pipeline one after the other; `compute-lod` is the compute
//! rasteriser with a LOD chain (`--lod-mesh 0.25,0.06`, `--lod-pixel-error 1`). See `--help`.

use clap::Parser;
use glam::{Affine3A, Mat4, Quat, Vec3, Vec4};
use sinew_fixtures::builtin;
use sinew_gpu::baked::draw::BakedRenderer;
use sinew_gpu::baked::{BakedAnimationGpu, BakedInstance, BakedTexelFormat};
use sinew_gpu::context::GpuContext;
use sinew_gpu::raster::{ComputeBakedRenderer, LodLevel};
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{AssetRegistry, Clip, Rig, SkinnedMesh, lod_chain};
use sinew_jobs::bake_texture::{BakeTextureOptions, bake_animation_texture};
use sinew_jobs::component::{AnimationToProcess, EntityTransform, RootMotion, SkinRef, animated};
use sinew_jobs::import::import_gltf;
use sinew_runtime::store::Store;
use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(
    name = "baked",
    about = "Draw a crowd from a baked animation texture and measure it"
)]
struct Args {
    /// Number of characters.
    #[arg(long, default_value_t = 10_000)]
    count: usize,
    /// Several crowd sizes to measure one after the other (overrides --count), e.g. 10000,100000.
    #[arg(long, value_delimiter = ',')]
    counts: Vec<usize>,
    /// Frames to measure (after 3 warm-up frames).
    #[arg(long, default_value_t = 60)]
    frames: usize,
    /// Bake rate in frames per second.
    #[arg(long, default_value_t = 30.0)]
    rate: f32,
    /// Upload half floats (RGBA16F) instead of RGBA32F.
    #[arg(long)]
    half: bool,
    /// Crowd this glTF model (first skinned mesh, every clip) instead of the built-in character.
    #[arg(long)]
    gltf: Option<PathBuf>,
    /// Render target width.
    #[arg(long, default_value_t = 1280)]
    width: u32,
    /// Render target height.
    #[arg(long, default_value_t = 720)]
    height: u32,
    /// Write the last frame of the last crowd size to this PNG file.
    #[arg(long)]
    png: Option<PathBuf>,
    /// Also time the CPU pipeline (nine jobs, palettes in memory) on this many characters.
    #[arg(long)]
    cpu_path: Option<usize>,
    /// Which rasteriser(s) draw: `hardware` (graphics pipeline, vertex-shader playback),
    /// `compute` (compute-shader rasteriser), or both, comma-separated, timed one after the
    /// other.
    #[arg(long, value_delimiter = ',', default_value = "hardware")]
    raster: Vec<RasterKind>,
    /// LOD chain for `--raster compute-lod`: triangle ratios of the simplified levels
    /// (`sinew_jobs::asset::lod_chain`), e.g. 0.25,0.06.
    #[arg(long, value_delimiter = ',', default_value = "0.25,0.06")]
    lod_mesh: Vec<f32>,
    /// Largest projected simplification error (pixels) a LOD level may show.
    #[arg(long, default_value_t = 1.0)]
    lod_pixel_error: f32,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum RasterKind {
    Hardware,
    Compute,
    /// The compute rasteriser with the `--lod-mesh` chain.
    ComputeLod,
}

struct Model {
    name: String,
    rig: Arc<Rig>,
    mesh: Arc<SkinnedMesh>,
    clips: Vec<Arc<Clip>>,
}

fn load(gltf: Option<&PathBuf>) -> Result<Model, Box<dyn Error>> {
    let registry = AssetRegistry::new();
    match gltf {
        None => {
            let c = builtin::bake_character(&registry)?;
            Ok(Model {
                name: "built-in character".into(),
                rig: c.rig,
                mesh: c.mesh,
                clips: vec![c.idle, c.walk, c.run, c.wave],
            })
        }
        Some(path) => {
            let scene = import_gltf(path, &registry)?;
            let mesh = scene
                .meshes
                .first()
                .ok_or("the glTF file has no skinned mesh")?
                .skinned_mesh
                .clone();
            if scene.clips.is_empty() {
                return Err("the glTF file has no animations".into());
            }
            Ok(Model {
                name: path.display().to_string(),
                rig: scene.rig,
                mesh,
                clips: scene.clips,
            })
        }
    }
}

/// A small deterministic hash in [0, 1).
fn unit(i: usize, salt: u64) -> f32 {
    let mut x =
        (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xD1B5_4A32_D192_ED03);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    (x >> 40) as f32 / (1u64 << 24) as f32
}

/// Instances on a square grid with `spacing`, random heading, clip, phase and speed; every
/// eighth cross-fades from another clip over a one-second window that repeats every 4 s of
/// the first frames (so the fade path is exercised while measuring).
fn crowd(n: usize, clips: usize, spacing: f32) -> (Vec<BakedInstance>, f32) {
    let side = (n as f32).sqrt().ceil().max(1.0) as usize;
    let half = 0.5 * side as f32 * spacing;
    let instances = (0..n)
        .map(|i| {
            let (x, z) = (
                (i % side) as f32 * spacing - half,
                (i / side) as f32 * spacing - half,
            );
            let world = Affine3A::from_rotation_translation(
                Quat::from_rotation_y(unit(i, 1) * std::f32::consts::TAU),
                Vec3::new(x, 0.0, z),
            );
            let clip = (i % clips) as u32;
            let inst = BakedInstance::new(world, clip, unit(i, 2) * 10.0, 0.8 + 0.4 * unit(i, 3));
            if i % 8 == 0 && clips > 1 {
                inst.fading_from(
                    ((i / 8) % clips) as u32,
                    unit(i, 4) * 10.0,
                    1.0,
                    unit(i, 5) * 0.5,
                    1.0,
                )
            } else {
                inst
            }
        })
        .collect();
    (instances, half)
}

/// Right-handed perspective (depth 0..1), column-major.
fn perspective(fov_y: f32, aspect: f32, near: f32, far: f32) -> Mat4 {
    let f = 1.0 / (0.5 * fov_y).tan();
    let r = far / (near - far);
    Mat4::from_cols(
        Vec4::new(f / aspect, 0.0, 0.0, 0.0),
        Vec4::new(0.0, f, 0.0, 0.0),
        Vec4::new(0.0, 0.0, r, -1.0),
        Vec4::new(0.0, 0.0, r * near, 0.0),
    )
}

/// Right-handed look-at, +Y up.
fn look_at(eye: Vec3, target: Vec3) -> Mat4 {
    let f = (target - eye).normalize();
    let s = f.cross(Vec3::Y).normalize();
    let u = s.cross(f);
    Mat4::from_cols(
        Vec4::new(s.x, u.x, -f.x, 0.0),
        Vec4::new(s.y, u.y, -f.y, 0.0),
        Vec4::new(s.z, u.z, -f.z, 0.0),
        Vec4::new(-s.dot(eye), -u.dot(eye), f.dot(eye), 1.0),
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn model_size(mesh: &SkinnedMesh) -> f32 {
    let (lo, hi) = mesh.positions().iter().fold(
        (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)),
        |(lo, hi), p| (lo.min(*p), hi.max(*p)),
    );
    (hi - lo).length()
}

fn write_png(path: &PathBuf, width: u32, height: u32, rgba: &[u8]) -> Result<(), Box<dyn Error>> {
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut enc = png::Encoder::new(file, width, height);
    enc.set_color(png::ColorType::Rgba);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header()?;
    writer.write_image_data(rgba)?;
    writer.finish()?;
    Ok(())
}

/// The CPU path for comparison: the nine-job pipeline on `n` characters, median ms per frame.
fn cpu_path(m: &Model, n: usize, frames: usize) -> Result<f64, Box<dyn Error>> {
    let mut store = Store::new();
    let mut animator = Animator::new(&mut store)?;
    for i in 0..n {
        let clip = m.clips[i % m.clips.len()].clone();
        let e = store.spawn(animated(
            m.rig.clone(),
            vec![
                AnimationToProcess::new(clip)
                    .at(unit(i, 2) * 10.0)
                    .speed(0.8 + 0.4 * unit(i, 3)),
            ],
        ))?;
        store.insert(e, SkinRef::new(m.mesh.clone()))?;
        store.insert(e, RootMotion::default())?;
        store.insert(e, EntityTransform::default())?;
    }
    let mut times = Vec::with_capacity(frames);
    for f in 0..frames + 3 {
        let t = Instant::now();
        animator.run_frame(&mut store, 1.0 / 60.0)?;
        if f >= 3 {
            times.push(ms(t.elapsed()));
        }
    }
    Ok(median(&mut times))
}

fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    let ctx = GpuContext::new()?;
    println!(
        "adapter: {} ({:?}, {:?})",
        ctx.adapter_info.name, ctx.adapter_info.backend, ctx.adapter_info.device_type
    );
    let m = load(args.gltf.as_ref())?;
    println!(
        "model: {} — {} vertices, {} triangles, {} mesh bones, {} clips",
        m.name,
        m.mesh.positions().len(),
        m.mesh.indices().len() / 3,
        m.mesh.bone_count(),
        m.clips.len()
    );
    let options = BakeTextureOptions::new(args.rate, ctx.limits.max_texture_dimension_2d);
    let t = Instant::now();
    let baked = bake_animation_texture(&m.rig, &m.mesh, &m.clips, &options)?;
    let bake_ms = ms(t.elapsed());
    let format = if args.half {
        BakedTexelFormat::Rgba16Float
    } else {
        BakedTexelFormat::Rgba32Float
    };
    let t = Instant::now();
    let anim = BakedAnimationGpu::new(&ctx, &baked, &m.mesh, format)?;
    let upload_ms = ms(t.elapsed());
    println!(
        "bake: {} clips at {} Hz in {bake_ms:.1} ms; texture {}x{} {format:?} = {:.1} KiB (upload {upload_ms:.1} ms)",
        baked.clips.len(),
        args.rate,
        anim.width,
        anim.height,
        anim.texture_bytes() as f64 / 1024.0
    );
    for (i, c) in baked.clips.iter().enumerate() {
        println!(
            "  clip {i} '{}': {:.2} s, {} frames, {:.1} KiB",
            baked.clip_names[i],
            c.duration,
            c.frame_count,
            anim.clip_bytes(i).unwrap_or(0) as f64 / 1024.0
        );
    }
    let counts = if args.counts.is_empty() {
        vec![args.count]
    } else {
        args.counts.clone()
    };
    let spacing = model_size(&m.mesh) * 0.6;
    let (w, h) = (args.width, args.height);
    let mut renderer = BakedRenderer::new(&ctx, &anim, w, h)?;
    let mut compute = ComputeBakedRenderer::new(&ctx, &anim, &m.mesh, w, h)?;
    let mut compute_lod = if args.raster.contains(&RasterKind::ComputeLod) {
        let t = Instant::now();
        let lods = lod_chain(&m.mesh, &args.lod_mesh)?;
        println!(
            "LOD chain in {:.0} ms: level 0 {} triangles; {}",
            ms(t.elapsed()),
            m.mesh.indices().len() / 3,
            lods.iter()
                .enumerate()
                .map(|(i, l)| format!(
                    "level {} {} triangles ({} vertices), error {:.4} ({:.2} % of the model's size)",
                    i + 1,
                    l.mesh.indices().len() / 3,
                    l.mesh.positions().len(),
                    l.error,
                    100.0 * l.error / model_size(&m.mesh)
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
        let mut levels = vec![LodLevel {
            mesh: &m.mesh,
            error: 0.0,
        }];
        levels.extend(lods.iter().map(|l| LodLevel {
            mesh: &l.mesh,
            error: l.error,
        }));
        let mut r = ComputeBakedRenderer::with_lods(&ctx, &anim, &levels, w, h)?;
        r.options_mut().lod_pixel_error = args.lod_pixel_error;
        Some(r)
    } else {
        None
    };
    println!(
        "\n| model | raster | characters | vertices/frame | GPU ms/frame (median) | raster pass | big triangles | resolve | wall ms/frame (median) | CPU ms/frame (median) | instance buffer MiB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut last = None::<RasterKind>;
    for (&n, &kind) in counts
        .iter()
        .flat_map(|n| args.raster.iter().map(move |k| (n, k)))
    {
        let (instances, half) = crowd(n, baked.clips.len(), spacing);
        match kind {
            RasterKind::Hardware => renderer.set_instances(&ctx, &anim, &instances)?,
            RasterKind::Compute => compute.set_instances(&ctx, &anim, &instances)?,
            RasterKind::ComputeLod => {
                if let Some(r) = compute_lod.as_mut() {
                    r.set_instances(&ctx, &anim, &instances)?;
                }
            }
        }
        // Look at the whole crowd from above one corner.
        let eye = Vec3::new(-half * 1.1, half.max(spacing * 2.0) * 0.9, -half * 1.1)
            + Vec3::splat(spacing);
        let vp = perspective(
            0.9,
            w as f32 / h as f32,
            spacing * 0.05,
            half * 6.0 + spacing * 20.0,
        ) * look_at(eye, Vec3::new(0.0, 0.0, 0.0));
        let (mut gpu, mut wall, mut cpu) = (Vec::new(), Vec::new(), Vec::new());
        let mut passes: [Vec<f64>; 3] = Default::default();
        for f in 0..args.frames + 3 {
            let t = f as f32 / 60.0;
            let (frame_gpu, frame_wall, frame_cpu) = match kind {
                RasterKind::Hardware => {
                    let timing = renderer.render(&ctx, &anim, vp, t)?;
                    (timing.gpu.map(ms), timing.wall.map(ms), ms(timing.cpu))
                }
                RasterKind::Compute | RasterKind::ComputeLod => {
                    let r = match (kind, compute_lod.as_mut()) {
                        (RasterKind::ComputeLod, Some(r)) => r,
                        _ => &mut compute,
                    };
                    let timing = r.render(&ctx, &anim, vp, t)?;
                    if let (Some(g), true) = (timing.gpu, f >= 3) {
                        passes[0].push(ms(g.raster));
                        passes[1].push(ms(g.big));
                        passes[2].push(ms(g.resolve));
                    }
                    (
                        timing.gpu.map(|g| ms(g.total())),
                        Some(ms(timing.wall)),
                        ms(timing.cpu),
                    )
                }
            };
            if f >= 3 {
                gpu.extend(frame_gpu);
                wall.extend(frame_wall);
                cpu.push(frame_cpu);
            }
        }
        let gpu_ms = if gpu.is_empty() {
            "n/a".to_string()
        } else {
            format!("{:.2}", median(&mut gpu))
        };
        let split = if passes[0].is_empty() {
            "– | – | –".to_string()
        } else {
            let [a, b, c] = &mut passes;
            format!("{:.2} | {:.2} | {:.2}", median(a), median(b), median(c))
        };
        println!(
            "| {} | {kind:?} | {n} | {:.1} M | {gpu_ms} | {split} | {:.2} | {:.3} | {:.1} |",
            if args.gltf.is_some() {
                "glTF"
            } else {
                "built-in"
            },
            n as f64 * m.mesh.positions().len() as f64 / 1e6,
            median(&mut wall),
            median(&mut cpu),
            std::mem::size_of_val(instances.as_slice()) as f64 / (1024.0 * 1024.0)
        );
        if let (RasterKind::ComputeLod, Some(r)) = (kind, compute_lod.as_mut()) {
            // One more frame, counting the instances per level (not timed).
            r.options_mut().count_levels = true;
            r.render(&ctx, &anim, vp, args.frames as f32 / 60.0)?;
            r.options_mut().count_levels = false;
            println!("  instances per LOD level: {:?}", r.level_counts(&ctx)?);
        }
        last = Some(kind);
    }
    if let Some(n) = args.cpu_path {
        let ms = cpu_path(&m, n, args.frames.min(30))?;
        println!(
            "\nCPU path (nine jobs, palettes in memory, {} threads): {n} characters, {ms:.2} ms/frame median",
            rayon::current_num_threads()
        );
    }
    // The last frame of the last crowd size, per rasteriser (`FILE_hardware.png`,
    // `FILE_compute.png` when both ran).
    if let (Some(path), Some(_)) = (&args.png, last) {
        for &kind in &args.raster {
            let rgba = match kind {
                RasterKind::Hardware => renderer.read_pixels(&ctx)?,
                RasterKind::Compute => compute.read_pixels(&ctx)?,
                RasterKind::ComputeLod => match &compute_lod {
                    Some(r) => r.read_pixels(&ctx)?,
                    None => continue,
                },
            };
            let path = if args.raster.len() > 1 {
                let stem = path
                    .file_stem()
                    .map(|s| s.to_string_lossy())
                    .unwrap_or_default();
                let name = format!("{stem}_{}.png", format!("{kind:?}").to_lowercase());
                path.with_file_name(name)
            } else {
                path.clone()
            };
            write_png(&path, w, h, &rgba)?;
            println!("wrote {}", path.display());
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Args = match sinew_examples::cli::parse_args("baked") {
        Ok(a) => a,
        Err(code) => return code,
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("baked: {e}");
            ExitCode::FAILURE
        }
    }
}
