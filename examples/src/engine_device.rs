//! An engine that owns its wgpu device and its palette buffer, with sinew animating into that
//! buffer and drawing on that device: what `cargo run --example engine_device` runs and what
//! `tests/engine_device.rs` checks.
//!
//! The engine creates the instance, adapter, device and queue ([`create_engine_device`]) and
//! hands clones of them to [`GpuContext::from_device`]. It sizes its own palette buffer from
//! [`crowd_palette_len`] before the first frame (checked with
//! [`GpuContext::check_palette_len`]), and every frame maps it, views the mapped range as
//! palette entries with [`mapped_palette`] and passes them to `Animator::run_frame_into_mapped`: the
//! skinning job writes each entry once, into the buffer the shader reads. Without
//! `MAPPABLE_PRIMARY_BUFFERS` the mapped buffer is a staging buffer and one copy moves it into
//! the storage buffer. sinew's [`CrowdRenderer`] and [`ComputeCrowdRenderer`] then draw from
//! the engine's buffer, offscreen.
//!
//! The engine keeps one palette buffer, so each frame waits for the previous frame's draw
//! before it maps the buffer again; sinew's own [`PaletteRing`](sinew_gpu::palette_ring::PaletteRing)
//! keeps several to avoid that wait.

use std::error::Error;
use std::sync::Arc;

use glam::{Quat, Vec3};
use sinew_fixtures::builtin::{self, BakedCharacter};
use sinew_gpu::context::GpuContext;
use sinew_gpu::palette_ring::{ENTRY_BYTES, crowd_palette_len, mapped_palette};
use sinew_gpu::raster::ComputeCrowdRenderer;
use sinew_gpu::render::{Camera, CrowdRenderer, Instance, RgbaImage};
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{AssetRegistry, SkinnedMesh, Transform};
use sinew_jobs::component::{AnimationToProcess, EntityTransform, FrameSlot, SkinRef, animated};
use sinew_jobs::frame::PaletteEntry;
use sinew_runtime::store::{Entity, Store};

/// The engine's GPU objects.
#[derive(Debug)]
pub struct EngineDevice {
    /// The engine's wgpu instance.
    pub instance: wgpu::Instance,
    /// Its adapter.
    pub adapter: wgpu::Adapter,
    /// Its device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
}

/// What the engine asks of its device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceRequest {
    /// Ask for `MAPPABLE_PRIMARY_BUFFERS` when the adapter has it (palettes written into the
    /// storage buffer itself); `false` forces the staging path.
    pub mappable: bool,
    /// Ask only for sinew's [`GpuContext::required_limits`] (with the adapter's buffer and
    /// texture sizes) instead of the adapter's full limits: shows that sinew's passes run
    /// within what it says it needs.
    pub minimal_limits: bool,
}

impl Default for DeviceRequest {
    fn default() -> Self {
        Self {
            mappable: true,
            minimal_limits: false,
        }
    }
}

/// The engine's device: `Ok(None)` when the machine has no adapter.
///
/// # Errors
/// The device request's failure, as text.
pub fn create_engine_device(request: DeviceRequest) -> Result<Option<EngineDevice>, String> {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let Ok(adapter) = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        force_fallback_adapter: false,
        compatible_surface: None,
        ..Default::default()
    })) else {
        return Ok(None);
    };
    let full = adapter.limits();
    let required_limits = if request.minimal_limits {
        wgpu::Limits {
            max_texture_dimension_1d: full.max_texture_dimension_1d,
            max_texture_dimension_2d: full.max_texture_dimension_2d,
            max_texture_dimension_3d: full.max_texture_dimension_3d,
            max_storage_buffer_binding_size: full.max_storage_buffer_binding_size,
            max_buffer_size: full.max_buffer_size,
            ..GpuContext::required_limits()
        }
    } else {
        full
    };
    let mut required_features = wgpu::Features::empty();
    if request.mappable {
        required_features |= adapter.features() & wgpu::Features::MAPPABLE_PRIMARY_BUFFERS;
    }
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("engine device"),
        required_features,
        required_limits,
        ..Default::default()
    }))
    .map_err(|e| format!("engine: request_device failed: {e}"))?;
    Ok(Some(EngineDevice {
        instance,
        adapter,
        device,
        queue,
    }))
}

/// The engine's palette memory.
#[derive(Debug)]
enum PaletteBuffers {
    /// One `MAP_WRITE | STORAGE` buffer, written mapped and bound as it is.
    Mapped(wgpu::Buffer),
    /// A `MAP_WRITE | COPY_SRC` staging buffer copied into a `STORAGE` buffer.
    Staged {
        staging: wgpu::Buffer,
        storage: wgpu::Buffer,
    },
}

impl PaletteBuffers {
    fn new(device: &wgpu::Device, bytes: u64) -> Self {
        let buffer = |label: &str, usage: wgpu::BufferUsages, mapped_at_creation: bool| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage,
                mapped_at_creation,
            })
        };
        use wgpu::BufferUsages as U;
        if device
            .features()
            .contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS)
        {
            Self::Mapped(buffer(
                "engine palettes",
                U::MAP_WRITE | U::STORAGE | U::COPY_SRC,
                true,
            ))
        } else {
            Self::Staged {
                staging: buffer("engine palette staging", U::MAP_WRITE | U::COPY_SRC, true),
                storage: buffer(
                    "engine palettes",
                    U::STORAGE | U::COPY_DST | U::COPY_SRC,
                    false,
                ),
            }
        }
    }

    /// The buffer the CPU maps.
    fn mapped(&self) -> &wgpu::Buffer {
        match self {
            Self::Mapped(b) => b,
            Self::Staged { staging, .. } => staging,
        }
    }

    /// The buffer the shaders read.
    fn storage(&self) -> &wgpu::Buffer {
        match self {
            Self::Mapped(b) => b,
            Self::Staged { storage, .. } => storage,
        }
    }
}

/// What [`run_engine`] does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EngineOptions {
    /// Characters in the crowd.
    pub count: usize,
    /// Frames to run.
    pub frames: usize,
    /// Frame time in seconds.
    pub dt: f32,
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            count: 5,
            frames: 8,
            dt: 1.0 / 60.0,
            width: 480,
            height: 240,
        }
    }
}

/// What the engine saw.
#[derive(Debug)]
pub struct EngineRun {
    /// The adapter's name.
    pub adapter: String,
    /// Whether palettes were written into the storage buffer itself (else through staging).
    pub mapped: bool,
    /// Each frame's palettes, read back from the engine's storage buffer after the draw.
    pub palettes: Vec<Vec<PaletteEntry>>,
    /// The last frame drawn by [`CrowdRenderer`].
    pub image: RgbaImage,
    /// The last frame drawn by [`ComputeCrowdRenderer`].
    pub compute_image: RgbaImage,
    /// The last frame's instances (palette offsets and world transforms).
    pub instances: Vec<Instance>,
    /// The camera of every frame.
    pub camera: Camera,
    /// The crowd's mesh.
    pub mesh: Arc<SkinnedMesh>,
}

/// Spawns `count` built-in characters in a row along X, facing the camera (+Z), each
/// playing one of idle, walk, run and wave from its own start time.
///
/// # Errors
/// The store's spawn error.
pub fn spawn_crowd(
    store: &mut Store,
    character: &BakedCharacter,
    count: usize,
) -> Result<Vec<Entity>, Box<dyn Error>> {
    let clips = [
        &character.idle,
        &character.walk,
        &character.run,
        &character.wave,
    ];
    let mut entities = Vec::with_capacity(count);
    for i in 0..count {
        let clip = clips[i % clips.len()].clone();
        let (a, b, c, d, e) = animated(
            character.rig.clone(),
            vec![AnimationToProcess::new(clip).at(0.13 * i as f32)],
        );
        let x = (i as f32 - (count as f32 - 1.0) * 0.5) * 1.6;
        let t = Transform::new(Vec3::new(x, 0.0, 0.0), Quat::IDENTITY, Vec3::ONE);
        let skin = SkinRef::new(character.mesh.clone());
        entities.push(store.spawn((a, b, c, d, e, skin, EntityTransform(t)))?);
    }
    Ok(entities)
}

/// A camera in front of a row of `count` characters (see [`spawn_crowd`]), seeing all of it.
pub fn crowd_camera(count: usize) -> Camera {
    let half_row = (count as f32 - 1.0) * 0.8 + 1.0;
    Camera::look_at(
        Vec3::new(0.0, 1.3, 1.0 + 1.2 * half_row),
        Vec3::new(0.0, 0.9, 0.0),
    )
}

/// Blocks until `buffer` (being mapped for writing) is mapped.
fn wait_mapped(engine: &EngineDevice, buffer: &wgpu::Buffer) -> Result<(), Box<dyn Error>> {
    let (tx, rx) = std::sync::mpsc::channel();
    buffer.map_async(wgpu::MapMode::Write, .., move |r| {
        let _ = tx.send(r);
    });
    engine.device.poll(wgpu::PollType::wait_indefinitely())?;
    rx.recv()??;
    Ok(())
}

/// Copies `bytes` of `buffer` into a read-back buffer and returns them as palette entries.
fn read_palettes(
    engine: &EngineDevice,
    buffer: &wgpu::Buffer,
    bytes: u64,
) -> Result<Vec<PaletteEntry>, Box<dyn Error>> {
    let read = engine.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("engine palette read-back"),
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = engine
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
    encoder.copy_buffer_to_buffer(buffer, 0, &read, 0, bytes);
    engine.queue.submit([encoder.finish()]);
    let (tx, rx) = std::sync::mpsc::channel();
    read.map_async(wgpu::MapMode::Read, .., move |r| {
        let _ = tx.send(r);
    });
    engine.device.poll(wgpu::PollType::wait_indefinitely())?;
    rx.recv()??;
    let entries = bytemuck::pod_collect_to_vec(&read.get_mapped_range(..)?);
    read.unmap();
    Ok(entries)
}

/// Runs `options.frames` frames of a crowd of the built-in character on the engine's device:
/// palettes written into the engine's mapped buffer, drawn by sinew's renderers.
///
/// # Errors
/// sinew's GPU or frame errors, wgpu's mapping errors.
pub fn run_engine(
    engine: &EngineDevice,
    options: &EngineOptions,
) -> Result<EngineRun, Box<dyn Error>> {
    // sinew on the engine's device: clones of the engine's handles.
    let ctx = GpuContext::from_device(
        engine.adapter.clone(),
        engine.device.clone(),
        engine.queue.clone(),
    )?;
    let character = builtin::bake_character(&AssetRegistry::new())?;
    let mut store = Store::new();
    let entities = spawn_crowd(&mut store, &character, options.count)?;
    let mut animator = Animator::new(&mut store)?;

    // The palette's size is known before the first frame; the engine allocates it once.
    let entries = crowd_palette_len(&mut store)?;
    ctx.check_palette_len(entries)?;
    let bytes = (entries.max(1) as u64) * ENTRY_BYTES;
    let buffers = PaletteBuffers::new(&engine.device, bytes);

    let camera = crowd_camera(options.count);
    let mut renderer = CrowdRenderer::new(&ctx, &character.mesh, options.width, options.height)?;
    let mut compute =
        ComputeCrowdRenderer::new(&ctx, &character.mesh, options.width, options.height)?;
    let mut palettes = Vec::with_capacity(options.frames);
    let mut frame_images = None;
    let mut instances = Vec::new();
    for frame in 0..options.frames {
        if frame > 0 {
            // Mapped at creation for the first frame; afterwards once the last draw is done.
            wait_mapped(engine, buffers.mapped())?;
        }
        {
            let mut view = buffers.mapped().get_mapped_range_mut(0..bytes)?;
            let all = mapped_palette(&mut view)?;
            animator.run_frame_into_mapped(&mut store, options.dt, &mut all[..entries])?;
        }
        buffers.mapped().unmap();
        if let PaletteBuffers::Staged { staging, storage } = &buffers {
            let mut encoder =
                engine
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("engine palette copy"),
                    });
            encoder.copy_buffer_to_buffer(staging, 0, storage, 0, bytes);
            engine.queue.submit([encoder.finish()]);
        }
        instances = entities
            .iter()
            .map(|&e| {
                let slot = store.get::<FrameSlot>(e)?;
                let world = store.get::<EntityTransform>(e)?.0.to_affine();
                Ok(Instance::new(slot.palette_offset, world))
            })
            .collect::<Result<Vec<_>, sinew_runtime::store::StoreError>>()?;
        let image = renderer.render(&ctx, buffers.storage(), &instances, &camera)?;
        palettes.push(read_palettes(engine, buffers.storage(), bytes)?);
        if frame + 1 == options.frames {
            let compute_image = compute.render(&ctx, buffers.storage(), &instances, &camera)?;
            frame_images = Some((image, compute_image));
        }
    }
    for p in &mut palettes {
        p.truncate(entries);
    }
    let (image, compute_image) = frame_images.ok_or("engine: no frame ran (frames = 0)")?;
    Ok(EngineRun {
        adapter: ctx.adapter_info.name.clone(),
        mapped: matches!(buffers, PaletteBuffers::Mapped(_)),
        palettes,
        image,
        compute_image,
        instances,
        camera,
        mesh: character.mesh,
    })
}
