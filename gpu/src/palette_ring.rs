//! [`PaletteRing`]: the skinning job writes float3x4 palettes straight into GPU-visible memory.
//!
//! # Modes ([`PaletteUpload`])
//!
//! - [`PaletteUpload::Mapped`] (needs `Features::MAPPABLE_PRIMARY_BUFFERS`, which lavapipe and
//!   the NVIDIA Vulkan driver have): the ring holds N ≥ 3 buffers of usage
//!   `MAP_WRITE | STORAGE | COPY_SRC`. The buffer of this frame is mapped; the closure given to
//!   [`PaletteRing::write`] receives the mapped memory as `&mut [[f32; 12]]` and hands it to
//!   `Animator::run_frame_into_mapped`, so the rayon workers of the skinning job write each palette
//!   entry once, into the memory the shader reads — no intermediate `Vec`, no second copy.
//!   The buffer is then unmapped and bound as a storage buffer ([`PaletteRing::buffer`]); after
//!   the caller submits the work that reads it, [`PaletteRing::submitted`] asks for it to be
//!   mapped again (`map_async(MapMode::Write)`), which wgpu completes once the GPU is done.
//! - [`PaletteUpload::Staging`] (any adapter): N mapped staging buffers
//!   (`MAP_WRITE | COPY_SRC`) receive the palettes the same way, then one
//!   `copy_buffer_to_buffer` (submitted by [`PaletteRing::write`]) moves them into one
//!   `STORAGE` buffer. The staging buffer is re-mapped right after that copy's submission.
//! - [`PaletteUpload::WriteBuffer`] (for comparison): palettes go to a CPU `Vec`, then
//!   `queue.write_buffer` into one `STORAGE` buffer (wgpu copies them into its own staging
//!   memory, then on the GPU: two copies).
//!
//! # When the CPU waits for the GPU
//!
//! Only in [`PaletteRing::write`], and only when the ring buffer it is about to fill is not
//! mapped yet. Each `write` first polls without blocking (which runs the callbacks of finished
//! mappings, and wgpu's device-lost callback: a lost device is [`GpuError::DeviceLost`] before
//! the frame runs); if the buffer is still pending it blocks with
//! `device.poll(PollType::Wait { submission_index: the last submission that used it })`.
//! With N buffers this happens when the GPU is more than N − 1 frames behind the CPU (or the
//! map takes longer than a frame). The time spent is [`RingStats::wait`]. Growing the ring
//! ([`PaletteRing::write`] with more entries than the capacity) creates new buffers mapped at
//! creation, so it never waits; the old buffers are released when the GPU is done with them.
//! `WriteBuffer` never waits for the GPU (wgpu's staging belt may allocate instead).
//!
//! # Unsafe
//!
//! wgpu 30 exposes mapped memory only as `WriteOnly<[u8]>` (mapped memory may be
//! write-combined), while the jobs write through `&mut [[f32; 12]]`. One function,
//! [`mapped_bytes`], turns the mapped range into `&mut [u8]` (then `bytemuck` makes it
//! `&mut [[f32; 12]]`: [`mapped_palette`]); it is the crate's only `unsafe` and its contract
//! is documented there. Both are public, so an engine that keeps its own palette buffer writes
//! into it the same way, with no copy.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use sinew_jobs::component::{Animations, FrameSlot, LayerWeights, RigRef, SkinRef};
use sinew_jobs::frame::PaletteEntry;
use sinew_runtime::store::Store;

use crate::context::{GpuContext, GpuError};

/// Bytes per palette entry (float3x4).
pub const ENTRY_BYTES: u64 = 48;

/// The smallest number of buffers in a mapped or staging ring.
pub const MIN_SLOTS: usize = 3;

/// How palettes reach the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PaletteUpload {
    /// Mapped storage buffers written in place (needs `MAPPABLE_PRIMARY_BUFFERS`).
    Mapped,
    /// Mapped staging buffers plus one `copy_buffer_to_buffer` per frame.
    Staging,
    /// A CPU `Vec` plus `queue.write_buffer` (for comparison).
    WriteBuffer,
}

impl PaletteUpload {
    /// [`Mapped`](Self::Mapped) when the device has `MAPPABLE_PRIMARY_BUFFERS`, else
    /// [`Staging`](Self::Staging).
    pub fn best(ctx: &GpuContext) -> Self {
        if ctx
            .features
            .contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS)
        {
            Self::Mapped
        } else {
            Self::Staging
        }
    }

    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Self::Mapped => "mapped ring",
            Self::Staging => "staging ring + copy",
            Self::WriteBuffer => "queue.write_buffer",
        }
    }
}

/// Timings and sizes of the last [`PaletteRing::write`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RingStats {
    /// Time the CPU blocked waiting for the GPU to release (re-map) the next buffer.
    pub wait: Duration,
    /// Time inside the caller's closure (for `run_frame_into`: the whole CPU frame, palette
    /// writes included).
    pub fill: Duration,
    /// Time after the closure: unmap (mapped), unmap + copy submission (staging), or
    /// `queue.write_buffer` (write-buffer mode).
    pub finish: Duration,
    /// Palette bytes written this frame.
    pub bytes: u64,
    /// Whether the ring was reallocated (larger) for this frame.
    pub grew: bool,
}

const UNMAPPED: u8 = 0;
const PENDING: u8 = 1;
const MAPPED: u8 = 2;
const FAILED: u8 = 3;

#[derive(Debug)]
struct Slot {
    buffer: wgpu::Buffer,
    state: Arc<AtomicU8>,
    last_use: Option<wgpu::SubmissionIndex>,
}

impl Slot {
    fn request_map(&mut self) {
        let state = Arc::clone(&self.state);
        state.store(PENDING, Ordering::Release);
        self.buffer.map_async(wgpu::MapMode::Write, .., move |r| {
            state.store(if r.is_ok() { MAPPED } else { FAILED }, Ordering::Release);
        });
    }
}

/// A ring of palette buffers; see the [module documentation](self).
#[derive(Debug)]
pub struct PaletteRing {
    mode: PaletteUpload,
    slot_count: usize,
    slots: Vec<Slot>,
    storage: Option<wgpu::Buffer>,
    capacity: u64,
    current: usize,
    len: usize,
    awaiting_submit: bool,
    scratch: Vec<PaletteEntry>,
    stats: RingStats,
    generation: u64,
}

/// Palette entries needed by the crowd in `store` this frame: the sum of the skinned meshes'
/// bone counts over the animated entities with a [`SkinRef`] (the same set and count as the
/// pipeline's bone-offsets job), i.e. what `Animator::palette_len` will report after the frame.
///
/// # Errors
/// [`GpuError::InvalidInput`] when the store refuses the query.
pub fn crowd_palette_len(store: &mut Store) -> Result<usize, GpuError> {
    let mut q = store
        .query::<(&RigRef, &SkinRef)>()
        .map_err(|e| GpuError::InvalidInput {
            what: format!("crowd_palette_len: {e}"),
        })?
        .with::<Animations>()
        .with::<LayerWeights>()
        .with::<FrameSlot>();
    let mut n = 0usize;
    q.for_each(|_, (_, skin)| n += skin.mesh.bone_count());
    Ok(n)
}

impl PaletteRing {
    /// A ring of `slots` buffers (at least [`MIN_SLOTS`]; ignored for
    /// [`PaletteUpload::WriteBuffer`]) with room for `capacity` palette entries.
    ///
    /// # Errors
    /// [`GpuError::MissingFeatures`] for [`PaletteUpload::Mapped`] without
    /// `MAPPABLE_PRIMARY_BUFFERS`; [`GpuError::TooLarge`] when `capacity` entries exceed the
    /// device's storage binding size; [`GpuError::DeviceLost`].
    pub fn new(
        ctx: &GpuContext,
        mode: PaletteUpload,
        slots: usize,
        capacity: usize,
    ) -> Result<Self, GpuError> {
        ctx.check_device()?;
        if mode == PaletteUpload::Mapped
            && !ctx
                .features
                .contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS)
        {
            return Err(GpuError::MissingFeatures {
                adapter: ctx.adapter_info.name.clone(),
                missing: "MAPPABLE_PRIMARY_BUFFERS (PaletteUpload::Mapped)".into(),
            });
        }
        let mut ring = Self {
            mode,
            slot_count: slots.max(MIN_SLOTS),
            slots: Vec::new(),
            storage: None,
            capacity: 0,
            current: 0,
            len: 0,
            awaiting_submit: false,
            scratch: Vec::new(),
            stats: RingStats::default(),
            generation: 0,
        };
        ring.allocate(ctx, capacity.max(1) as u64)?;
        Ok(ring)
    }

    /// [`PaletteRing::new`] with [`PaletteUpload::best`] and [`MIN_SLOTS`] buffers.
    ///
    /// # Errors
    /// As [`PaletteRing::new`].
    pub fn with_best_mode(ctx: &GpuContext, capacity: usize) -> Result<Self, GpuError> {
        Self::new(ctx, PaletteUpload::best(ctx), MIN_SLOTS, capacity)
    }

    fn allocate(&mut self, ctx: &GpuContext, capacity: u64) -> Result<(), GpuError> {
        let size = capacity.saturating_mul(ENTRY_BYTES);
        ctx.check_storage_size(size, || format!("palette ring buffer ({capacity} entries)"))?;
        let device = &ctx.device;
        self.slots.clear();
        self.storage = None;
        let slot_usage = match self.mode {
            PaletteUpload::Mapped => {
                wgpu::BufferUsages::MAP_WRITE
                    | wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
            }
            PaletteUpload::Staging => wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
            PaletteUpload::WriteBuffer => wgpu::BufferUsages::empty(),
        };
        if self.mode != PaletteUpload::WriteBuffer {
            for i in 0..self.slot_count {
                let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&format!("palette ring slot {i}")),
                    size,
                    usage: slot_usage,
                    mapped_at_creation: true,
                });
                self.slots.push(Slot {
                    buffer,
                    state: Arc::new(AtomicU8::new(MAPPED)),
                    last_use: None,
                });
            }
        }
        if self.mode != PaletteUpload::Mapped {
            self.storage = Some(device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("palette storage"),
                size,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_DST
                    | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }));
        }
        self.capacity = capacity;
        self.current = self.slot_count - 1;
        self.awaiting_submit = false;
        self.generation += 1;
        Ok(())
    }

    /// The upload mode.
    pub fn mode(&self) -> PaletteUpload {
        self.mode
    }

    /// Buffers in the ring (0 for [`PaletteUpload::WriteBuffer`]).
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Capacity in palette entries.
    pub fn capacity(&self) -> usize {
        usize::try_from(self.capacity).unwrap_or(usize::MAX)
    }

    /// Palette entries of the last frame written.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the last frame wrote no entries.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Incremented whenever the buffers are reallocated (bind groups made for
    /// [`PaletteRing::buffer`] must then be remade; renderers compare this).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Timings of the last [`PaletteRing::write`].
    pub fn stats(&self) -> RingStats {
        self.stats
    }

    /// The storage buffer holding the last frame's palettes (bind it as
    /// `var<storage, read> palette: array<f32>`): this frame's ring buffer in mapped mode, the
    /// one storage buffer otherwise. In mapped mode it is available from
    /// [`PaletteRing::write`] until [`PaletteRing::submitted`] (any number of submissions may
    /// read it in between; report the last one); afterwards it is being re-mapped and this
    /// returns `None` until the next `write`.
    pub fn buffer(&self) -> Option<&wgpu::Buffer> {
        match self.mode {
            PaletteUpload::Mapped if self.awaiting_submit => {
                self.slots.get(self.current).map(|s| &s.buffer)
            }
            PaletteUpload::Mapped => None,
            _ => self.storage.as_ref(),
        }
    }

    /// Fills this frame's palettes: `fill` gets exactly `entries` palette entries of
    /// GPU-visible memory (mapped mode: the mapped storage buffer itself) and must write all of
    /// them, typically `|p| animator.run_frame_into_mapped(&mut store, dt, p)` with `entries` from
    /// [`crowd_palette_len`]. Grows the ring (50 % headroom) when `entries` exceeds the
    /// capacity. Returns what `fill` returned. Afterwards bind [`PaletteRing::buffer`], submit,
    /// and call [`PaletteRing::submitted`].
    ///
    /// # Errors
    /// [`GpuError::DeviceLost`] once the device is lost, [`GpuError::TooLarge`] when growing
    /// past the device limit (all three before `fill` runs), [`GpuError::Map`] /
    /// [`GpuError::Poll`] when mapping or waiting fails (a buffer of a destroyed device cannot
    /// be mapped); `fill` has then not run, so the caller's frame has not advanced.
    pub fn write<R>(
        &mut self,
        ctx: &GpuContext,
        entries: usize,
        fill: impl FnOnce(&mut [PaletteEntry]) -> R,
    ) -> Result<R, GpuError> {
        // Runs finished callbacks without blocking: mappings that completed, and the
        // device-lost callback, which wgpu calls from a poll once the dead device's queue has
        // drained, rather than when the device dies.
        ctx.device
            .poll(wgpu::PollType::Poll)
            .map_err(|e| GpuError::Poll(e.to_string()))?;
        ctx.check_device()?;
        if self.awaiting_submit {
            // The caller did not report the submission reading the last buffer: re-map it now
            // (wgpu completes the mapping once every submission using it has finished).
            self.submitted(None);
        }
        let mut stats = RingStats {
            bytes: entries as u64 * ENTRY_BYTES,
            ..RingStats::default()
        };
        let want = entries as u64;
        if want > self.capacity {
            let headroom = want + want / 2;
            let grown = headroom.div_ceil(256) * 256;
            let limit_entries = ctx.storage_limit() / ENTRY_BYTES;
            self.allocate(ctx, grown.min(limit_entries.max(want)))?;
            stats.grew = true;
        }
        let result = match self.mode {
            PaletteUpload::WriteBuffer => {
                let t = Instant::now();
                self.scratch.resize(entries, [0.0; 12]);
                let r = fill(&mut self.scratch[..entries]);
                stats.fill = t.elapsed();
                let t = Instant::now();
                if let Some(storage) = &self.storage
                    && entries > 0
                {
                    ctx.queue.write_buffer(
                        storage,
                        0,
                        bytemuck::cast_slice(&self.scratch[..entries]),
                    );
                }
                stats.finish = t.elapsed();
                r
            }
            PaletteUpload::Mapped | PaletteUpload::Staging => {
                let next = (self.current + 1) % self.slots.len().max(1);
                let t = Instant::now();
                self.wait_mapped(ctx, next)?;
                stats.wait = t.elapsed();
                let slot = self
                    .slots
                    .get_mut(next)
                    .ok_or_else(|| GpuError::InvalidInput {
                        what: "palette ring has no buffers".into(),
                    })?;
                let t = Instant::now();
                let r = if entries == 0 {
                    fill(&mut [])
                } else {
                    let mut view = slot
                        .buffer
                        .get_mapped_range_mut(0..want * ENTRY_BYTES)
                        .map_err(|e| GpuError::Map(format!("palette ring slot {next}: {e}")))?;
                    let palette = mapped_palette(&mut view)
                        .map_err(|e| GpuError::Map(format!("palette ring slot {next}: {e}")))?;
                    fill(palette)
                };
                stats.fill = t.elapsed();
                let t = Instant::now();
                slot.buffer.unmap();
                slot.state.store(UNMAPPED, Ordering::Release);
                if self.mode == PaletteUpload::Staging {
                    if let Some(storage) = &self.storage
                        && entries > 0
                    {
                        let mut enc =
                            ctx.device
                                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                                    label: Some("palette staging copy"),
                                });
                        enc.copy_buffer_to_buffer(&slot.buffer, 0, storage, 0, want * ENTRY_BYTES);
                        slot.last_use = Some(ctx.queue.submit([enc.finish()]));
                    }
                    slot.request_map();
                } else {
                    self.awaiting_submit = true;
                }
                stats.finish = t.elapsed();
                self.current = next;
                r
            }
        };
        self.len = entries;
        self.stats = stats;
        Ok(result)
    }

    /// Reports the submission that reads this frame's [`PaletteRing::buffer`] (None: the
    /// latest one). In mapped mode the buffer is re-mapped asynchronously
    /// (`map_async(MapMode::Write)`), completing when that submission has finished; a no-op in
    /// the other modes.
    pub fn submitted(&mut self, submission: Option<wgpu::SubmissionIndex>) {
        if !self.awaiting_submit {
            return;
        }
        self.awaiting_submit = false;
        if let Some(slot) = self.slots.get_mut(self.current) {
            slot.last_use = submission;
            slot.request_map();
        }
    }

    fn wait_mapped(&mut self, ctx: &GpuContext, index: usize) -> Result<(), GpuError> {
        let Some(slot) = self.slots.get_mut(index) else {
            return Ok(());
        };
        if slot.state.load(Ordering::Acquire) == UNMAPPED {
            slot.request_map();
        }
        if slot.state.load(Ordering::Acquire) == PENDING {
            // Runs the callbacks of whatever has finished, without blocking.
            ctx.device
                .poll(wgpu::PollType::Poll)
                .map_err(|e| GpuError::Poll(e.to_string()))?;
        }
        let mut submission = slot.last_use.clone();
        while slot.state.load(Ordering::Acquire) == PENDING {
            ctx.device
                .poll(wgpu::PollType::Wait {
                    submission_index: submission.take(),
                    timeout: None,
                })
                .map_err(|e| GpuError::Poll(e.to_string()))?;
        }
        if slot.state.load(Ordering::Acquire) == FAILED {
            return Err(GpuError::Map(format!(
                "palette ring slot {index}: map_async(Write) failed"
            )));
        }
        Ok(())
    }
}

/// The mapped range of `view` as palette entries, for writing palettes straight into a
/// buffer of your own: map it for writing (`map_async(MapMode::Write, ..)` or
/// `mapped_at_creation`), take `get_mapped_range_mut`, and hand the entries to
/// `Animator::run_frame_into_mapped(store, dt, entries)`; then drop the view and unmap.
///
/// ```no_run
/// # fn frame(
/// #     buffer: &wgpu::Buffer,
/// #     animator: &mut sinew_jobs::animator::Animator,
/// #     store: &mut sinew_runtime::store::Store,
/// #     entries: u64,
/// # ) -> Result<(), Box<dyn std::error::Error>> {
/// // `buffer` is mapped for writing and holds at least `entries` palette entries.
/// let mut view = buffer.get_mapped_range_mut(0..entries * sinew_gpu::palette_ring::ENTRY_BYTES)?;
/// let palettes = sinew_gpu::palette_ring::mapped_palette(&mut view)?;
/// animator.run_frame_into_mapped(store, 1.0 / 60.0, palettes)?;
/// drop(view);
/// buffer.unmap();
/// # Ok(())
/// # }
/// ```
///
/// The entries are the mapped memory itself: each one the skinning job writes goes to the
/// GPU-visible buffer once, with no copy. Reading them back through this slice is allowed but
/// may be slow (mapped memory can be write-combined). See [`mapped_bytes`] for the contract.
///
/// # Errors
/// [`GpuError::Map`] when the range is not a whole number of [`ENTRY_BYTES`] entries.
pub fn mapped_palette(view: &mut wgpu::BufferViewMut) -> Result<&mut [PaletteEntry], GpuError> {
    let bytes = mapped_bytes(view);
    let len = bytes.len();
    bytemuck::try_cast_slice_mut(bytes).map_err(|e| {
        GpuError::Map(format!(
            "mapped range of {len} bytes as palette entries of {ENTRY_BYTES} bytes: {e:?}"
        ))
    })
}

/// The mapped range of `view` as `&mut [u8]`.
///
/// wgpu 30 hands out mapped memory as `WriteOnly<[u8]>` because it may be write-combined (slow
/// to read) and because `&mut` formally allows spurious reads. This is the one place the
/// crate leaves safe Rust, so that `Animator::run_frame_into_mapped` can write palettes in place,
/// into the palette ring's buffers or an engine's own ([`mapped_palette`]).
///
/// It is safe to call with any `BufferViewMut`: wgpu only creates one for a mapped, writable
/// range, and the slice borrows the view, so it cannot outlive the mapping or alias another
/// view. What it asks of a caller is only what any write-combined memory asks: write, and
/// read rarely.
#[allow(unsafe_code)]
pub fn mapped_bytes(view: &mut wgpu::BufferViewMut) -> &mut [u8] {
    let mut w = view.slice(..);
    let len = w.len();
    let ptr = w.as_raw_element_ptr();
    // SAFETY: `ptr..ptr+len` is the mapped range of `view`: host-visible memory, valid for
    // reads and writes of `len` bytes and aligned for `u8` (wgpu maps at MAP_ALIGNMENT). Its
    // bytes are initialised: wgpu-core zero-fills every range of a mapped buffer that was
    // never written before handing it out, and `u8` accepts any bit pattern. The slice
    // borrows `view` mutably for its whole life, and wgpu refuses overlapping views of the
    // same buffer, so no other reference to these bytes exists; `Buffer::unmap` refuses
    // (panics) while a view is alive, so the memory stays mapped until the slice is gone.
    // Reads through it are allowed by Vulkan/Metal/DX12 host-visible memory, only possibly
    // slow (write-combined); the skinning job only writes.
    unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), len) }
}
