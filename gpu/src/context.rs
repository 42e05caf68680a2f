//! The wgpu device sinew works on: its own headless one, or an engine's.
//!
//! [`GpuContext::new`] picks an adapter without a surface: the one whose name contains the
//! `SINEW_ADAPTER` environment variable (case-insensitive), else the best available
//! (discrete > integrated > virtual > CPU > other), over the backends in `WGPU_BACKEND` or
//! wgpu's primary ones (Vulkan first on Linux). The device gets the adapter's full limits and
//! `MAPPABLE_PRIMARY_BUFFERS` / `TIMESTAMP_QUERY` when the adapter has them.
//!
//! [`GpuContext::from_device`] wraps an engine's adapter, device and queue instead (wgpu's
//! handles are reference-counted: the engine keeps its clones and goes on using them). sinew
//! needs no feature: `MAPPABLE_PRIMARY_BUFFERS` enables [`PaletteUpload::Mapped`], and
//! `TIMESTAMP_QUERY` the GPU timings; without them the palette ring stages its uploads and the
//! timings are absent. It needs the limits of [`GpuContext::required_limits`] and compute
//! shaders with storage buffers in vertex shaders ([`GpuContext::required_downlevel_flags`]);
//! a device without them is refused with the missing limit or flag named, rather than failing
//! in the middle of a pipeline's creation.
//!
//! [`PaletteUpload::Mapped`]: crate::palette_ring::PaletteUpload::Mapped

use std::fmt;
use std::sync::{Arc, OnceLock};

/// Where to look for an adapter.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuOptions {
    /// Backends to enumerate.
    pub backends: wgpu::Backends,
    /// Case-insensitive substring of the adapter name to require (None: best available).
    pub adapter_name: Option<String>,
    /// Features that must be present (requested in addition to the optional ones).
    pub required_features: wgpu::Features,
}

impl GpuOptions {
    /// `WGPU_BACKEND` (else `Backends::PRIMARY`) and `SINEW_ADAPTER` from the environment.
    pub fn from_env() -> Self {
        Self {
            backends: wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY),
            adapter_name: std::env::var("SINEW_ADAPTER")
                .ok()
                .filter(|s| !s.trim().is_empty()),
            required_features: wgpu::Features::empty(),
        }
    }
}

impl Default for GpuOptions {
    fn default() -> Self {
        Self::from_env()
    }
}

/// Errors of the GPU crate: what failed and where.
#[derive(Debug)]
#[non_exhaustive]
pub enum GpuError {
    /// No adapter matched.
    NoAdapter {
        /// The backends searched.
        backends: String,
        /// What to do about it (and which adapters exist, if any).
        hint: String,
    },
    /// `request_device` failed.
    RequestDevice(String),
    /// A device's limits are below what sinew's pipelines need
    /// ([`GpuContext::required_limits`]).
    MissingLimits {
        /// The adapter.
        adapter: String,
        /// Each limit that falls short.
        missing: Vec<LimitShortfall>,
    },
    /// A required feature (or downlevel capability) is missing on the chosen adapter.
    MissingFeatures {
        /// The adapter.
        adapter: String,
        /// The missing features.
        missing: String,
    },
    /// Bad input to a GPU routine.
    InvalidInput {
        /// Which routine and what was wrong.
        what: String,
    },
    /// A buffer larger than the device allows.
    TooLarge {
        /// Which buffer.
        what: String,
        /// Its size in bytes.
        size: u64,
        /// The device limit in bytes.
        limit: u64,
    },
    /// The device is lost (destroyed, or the driver gave up): GPU work cannot go on, while
    /// the CPU pipeline can (`Animator::run_frame` does not touch the device). The palette
    /// ring, the renderers' `render` calls, the skinning pass and RBF uploads return it once
    /// the loss is known: wgpu reports it from a poll, which every `PaletteRing::write` makes.
    DeviceLost {
        /// The adapter.
        adapter: String,
        /// wgpu's reason and message, or the engine's (see
        /// [`GpuContext::report_device_lost`]).
        reason: String,
    },
    /// Mapping a buffer failed.
    Map(String),
    /// Waiting for the device failed.
    Poll(String),
    /// Writing an image file failed.
    Image(String),
}

impl fmt::Display for GpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoAdapter { backends, hint } => {
                write!(f, "gpu: no adapter on backends {backends}: {hint}")
            }
            Self::RequestDevice(e) => write!(f, "gpu: request_device failed: {e}"),
            Self::MissingFeatures { adapter, missing } => {
                write!(
                    f,
                    "gpu: adapter '{adapter}' lacks required features {missing}"
                )
            }
            Self::MissingLimits { adapter, missing } => {
                write!(
                    f,
                    "gpu: device on '{adapter}' has limits below sinew's needs:"
                )?;
                for (i, m) in missing.iter().enumerate() {
                    let sep = if i == 0 { " " } else { ", " };
                    write!(f, "{sep}{m}")?;
                }
                Ok(())
            }
            Self::InvalidInput { what } => write!(f, "gpu: invalid input: {what}"),
            Self::TooLarge { what, size, limit } => {
                write!(
                    f,
                    "gpu: {what} is {size} bytes, over the device limit of {limit}"
                )
            }
            Self::DeviceLost { adapter, reason } => {
                write!(f, "gpu: device on '{adapter}' is lost: {reason}")
            }
            Self::Map(e) => write!(f, "gpu: buffer map failed: {e}"),
            Self::Poll(e) => write!(f, "gpu: device poll failed: {e}"),
            Self::Image(e) => write!(f, "gpu: image write failed: {e}"),
        }
    }
}

impl std::error::Error for GpuError {}

/// One device limit below what sinew needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitShortfall {
    /// The field of `wgpu::Limits`, e.g. `max_storage_buffers_per_shader_stage`.
    pub limit: &'static str,
    /// The device's value.
    pub device: u64,
    /// The value sinew needs (a maximum at least this large; for an alignment, at most this).
    pub needed: u64,
}

impl fmt::Display for LimitShortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is {} (sinew needs {})",
            self.limit, self.device, self.needed
        )
    }
}

/// A device and everything needed to use it: sinew's own ([`GpuContext::new`]) or an
/// engine's ([`GpuContext::from_device`]).
#[derive(Debug)]
pub struct GpuContext {
    /// The wgpu instance that sinew created; `None` for a wrapped engine device.
    pub instance: Option<wgpu::Instance>,
    /// The chosen adapter.
    pub adapter: wgpu::Adapter,
    /// The device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// The adapter's name, backend, type and driver.
    pub adapter_info: wgpu::AdapterInfo,
    /// The features enabled on the device.
    pub features: wgpu::Features,
    /// The limits of the device (for [`GpuContext::new`]: the adapter's).
    pub limits: wgpu::Limits,
    /// Why the device was lost, once it is.
    lost: Arc<OnceLock<String>>,
}

fn type_rank(t: wgpu::DeviceType) -> u8 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    }
}

impl GpuContext {
    /// The largest storage buffer this device binds: the smaller of the storage binding and
    /// buffer size limits.
    pub(crate) fn storage_limit(&self) -> u64 {
        self.limits
            .max_storage_buffer_binding_size
            .min(self.limits.max_buffer_size)
    }

    /// Why the device was lost, once it is: reported by wgpu's device-lost callback on a
    /// device sinew created, or by [`GpuContext::report_device_lost`].
    pub fn device_lost(&self) -> Option<&str> {
        self.lost.get().map(String::as_str)
    }

    /// Records that the device is lost. On a wrapped engine device the device-lost callback is
    /// the engine's (wgpu keeps one, and sinew does not replace it): the engine calls this from
    /// it, and sinew's GPU calls then return [`GpuError::DeviceLost`] instead of reaching wgpu.
    /// The first reason is kept.
    pub fn report_device_lost(&self, reason: impl Into<String>) {
        let _ = self.lost.set(reason.into());
    }

    /// [`GpuError::DeviceLost`] once the device is lost.
    pub(crate) fn check_device(&self) -> Result<(), GpuError> {
        match self.lost.get() {
            Some(reason) => Err(GpuError::DeviceLost {
                adapter: self.adapter_info.name.clone(),
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// The most palette entries (float3x4) one storage buffer of this device binds, i.e. the
    /// largest crowd palette the palette ring and the renderers take.
    pub fn max_palette_entries(&self) -> u64 {
        self.storage_limit() / crate::palette_ring::ENTRY_BYTES
    }

    /// Checks, before any frame runs, that a palette of `entries` float3x4 entries (e.g.
    /// `crowd_palette_len` or the animator's palette length) fits one storage buffer binding
    /// of this device.
    ///
    /// # Errors
    /// [`GpuError::TooLarge`] naming the entry count, its size and the device limit.
    pub fn check_palette_len(&self, entries: usize) -> Result<(), GpuError> {
        let size = (entries as u64).saturating_mul(crate::palette_ring::ENTRY_BYTES);
        self.check_storage_size(size, || format!("a palette of {entries} entries"))
    }

    /// A storage buffer (plus `extra` usages) holding `bytes`, checked against the device's
    /// storage limit. Empty contents are padded to 64 bytes: a binding must hold one element
    /// of its array, and the largest element sinew's shaders read (the skinning influences)
    /// is 64 bytes.
    pub(crate) fn storage_init(
        &self,
        label: &str,
        bytes: &[u8],
        extra: wgpu::BufferUsages,
    ) -> Result<wgpu::Buffer, GpuError> {
        use wgpu::util::DeviceExt;
        self.check_storage_size(bytes.len() as u64, || format!("{label} buffer"))?;
        let padded = [0u8; 64];
        let contents = if bytes.is_empty() { &padded[..] } else { bytes };
        Ok(self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | extra,
            }))
    }

    /// The smallest limits sinew's pipelines work with: wgpu's downlevel defaults (what every
    /// compute-capable backend offers), with ten storage buffers per shader stage (the compute
    /// rasteriser's passes bind the vertex source's one, eight of their own and the indirect
    /// arguments). Buffer and texture sizes are not fixed needs: each buffer and texture is
    /// checked against the device's own limits when it is made (a [`GpuError::TooLarge`] or
    /// [`GpuError::InvalidInput`] naming it), so they are zero here.
    pub fn required_limits() -> wgpu::Limits {
        wgpu::Limits {
            max_storage_buffers_per_shader_stage: 10,
            max_texture_dimension_1d: 0,
            max_texture_dimension_2d: 0,
            max_texture_dimension_3d: 0,
            max_storage_buffer_binding_size: 0,
            max_buffer_size: 0,
            ..wgpu::Limits::downlevel_defaults()
        }
    }

    /// The downlevel capabilities sinew needs: compute shaders (skinning, RBF, the compute
    /// rasteriser) and storage buffers read by vertex shaders (the palette and baked renderers).
    pub fn required_downlevel_flags() -> wgpu::DownlevelFlags {
        wgpu::DownlevelFlags::COMPUTE_SHADERS | wgpu::DownlevelFlags::VERTEX_STORAGE
    }

    /// Refuses an adapter or device whose downlevel flags or `limits` fall short of
    /// [`GpuContext::required_limits`] / [`GpuContext::required_downlevel_flags`].
    fn check_capabilities(adapter: &wgpu::Adapter, limits: &wgpu::Limits) -> Result<(), GpuError> {
        let name = adapter.get_info().name;
        let flags = adapter.get_downlevel_capabilities().flags;
        let missing_flags = Self::required_downlevel_flags() - flags;
        if !missing_flags.is_empty() {
            return Err(GpuError::MissingFeatures {
                adapter: name,
                missing: format!("downlevel {missing_flags:?}"),
            });
        }
        let mut missing = Vec::new();
        Self::required_limits().check_limits_with_fail_fn(
            limits,
            false,
            |limit, needed, device| {
                missing.push(LimitShortfall {
                    limit,
                    device,
                    needed,
                });
            },
        );
        if !missing.is_empty() {
            return Err(GpuError::MissingLimits {
                adapter: name,
                missing,
            });
        }
        Ok(())
    }

    /// Wraps an engine's adapter, device and queue, so that the palette ring, the renderers
    /// and the compute passes work on the engine's device (pass clones: wgpu's handles are
    /// reference-counted, and the engine keeps using its own). The device's own features and
    /// limits are used as they are; nothing is requested.
    ///
    /// wgpu reports validation errors through the device's uncaptured-error handler, which is
    /// the engine's: sinew sets none and checks sizes against the device's limits before it
    /// creates buffers, so its own calls do not reach that handler with bad sizes. The
    /// device-lost callback is the engine's too: forward a loss with
    /// [`GpuContext::report_device_lost`].
    ///
    /// # Errors
    /// [`GpuError::MissingFeatures`] when the adapter lacks
    /// [`GpuContext::required_downlevel_flags`], [`GpuError::MissingLimits`] naming each limit
    /// of the device below [`GpuContext::required_limits`].
    pub fn from_device(
        adapter: wgpu::Adapter,
        device: wgpu::Device,
        queue: wgpu::Queue,
    ) -> Result<Self, GpuError> {
        let limits = device.limits();
        Self::check_capabilities(&adapter, &limits)?;
        Ok(Self {
            instance: None,
            adapter_info: adapter.get_info(),
            adapter,
            features: device.features(),
            device,
            queue,
            limits,
            lost: Arc::new(OnceLock::new()),
        })
    }

    /// [`GpuError::TooLarge`], the buffer named by `what`, when a storage buffer of `size`
    /// bytes is over [`GpuContext::storage_limit`].
    pub(crate) fn check_storage_size(
        &self,
        size: u64,
        what: impl FnOnce() -> String,
    ) -> Result<(), GpuError> {
        let limit = self.storage_limit();
        if size > limit {
            return Err(GpuError::TooLarge {
                what: what(),
                size,
                limit,
            });
        }
        Ok(())
    }

    /// A device from [`GpuOptions::from_env`].
    ///
    /// # Errors
    /// As [`with_options`](Self::with_options).
    pub fn new() -> Result<Self, GpuError> {
        Self::with_options(&GpuOptions::from_env())
    }

    /// A device on the adapter chosen by `opts`.
    ///
    /// # Errors
    /// [`GpuError::NoAdapter`] when no adapter exists or none matches `adapter_name`,
    /// [`GpuError::MissingFeatures`], [`GpuError::MissingLimits`] (as
    /// [`from_device`](Self::from_device)), [`GpuError::RequestDevice`].
    pub fn with_options(opts: &GpuOptions) -> Result<Self, GpuError> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        desc.backends = opts.backends;
        let instance = wgpu::Instance::new(desc);
        let adapters = pollster::block_on(instance.enumerate_adapters(opts.backends));
        let names: Vec<String> = adapters
            .iter()
            .map(|a| {
                let i = a.get_info();
                format!("'{}' ({:?}, {:?})", i.name, i.backend, i.device_type)
            })
            .collect();
        let backends = format!("{:?}", opts.backends);
        let chosen = match &opts.adapter_name {
            Some(want) => {
                let want_l = want.to_lowercase();
                adapters
                    .into_iter()
                    .filter(|a| a.get_info().name.to_lowercase().contains(&want_l))
                    .min_by_key(|a| type_rank(a.get_info().device_type))
                    .ok_or_else(|| GpuError::NoAdapter {
                        backends: backends.clone(),
                        hint: format!(
                            "SINEW_ADAPTER='{want}' matches none of [{}]",
                            names.join(", ")
                        ),
                    })?
            }
            None => adapters
                .into_iter()
                .min_by_key(|a| type_rank(a.get_info().device_type))
                .ok_or_else(|| GpuError::NoAdapter {
                    backends: backends.clone(),
                    hint:
                        "no adapter found; on a machine without a GPU install a CPU Vulkan driver \
                           (Debian: apt-get install mesa-vulkan-drivers for lavapipe), or set \
                           WGPU_BACKEND"
                            .into(),
                })?,
        };
        let adapter_info = chosen.get_info();
        let available = chosen.features();
        let missing = opts.required_features - available;
        if !missing.is_empty() {
            return Err(GpuError::MissingFeatures {
                adapter: adapter_info.name.clone(),
                missing: format!("{missing:?}"),
            });
        }
        let optional = wgpu::Features::MAPPABLE_PRIMARY_BUFFERS | wgpu::Features::TIMESTAMP_QUERY;
        let features = opts.required_features | (available & optional);
        let limits = chosen.limits();
        Self::check_capabilities(&chosen, &limits)?;
        let (device, queue) = pollster::block_on(chosen.request_device(&wgpu::DeviceDescriptor {
            label: Some("sinew device"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| GpuError::RequestDevice(format!("{e} (adapter '{}')", adapter_info.name)))?;
        let lost = Arc::new(OnceLock::new());
        let on_lost = Arc::clone(&lost);
        device.set_device_lost_callback(move |reason, message| {
            let _ = on_lost.set(format!("{reason:?}: {message}"));
        });
        Ok(Self {
            instance: Some(instance),
            adapter: chosen,
            device,
            queue,
            adapter_info,
            features,
            limits,
            lost,
        })
    }
}
