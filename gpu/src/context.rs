//! Headless wgpu device and adapter choice.
//!
//! [`GpuContext::new`] picks an adapter without a surface: the one whose name contains the
//! `SINEW_ADAPTER` environment variable (case-insensitive), else the best available
//! (discrete > integrated > virtual > CPU > other), over the backends in `WGPU_BACKEND` or
//! wgpu's primary ones (Vulkan first on Linux). The device gets the adapter's full limits and
//! `MAPPABLE_PRIMARY_BUFFERS` / `TIMESTAMP_QUERY` when the adapter has them.

use std::fmt;

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
    /// A required feature is missing on the chosen adapter.
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
    /// Mapping a buffer for read-back failed.
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
            Self::InvalidInput { what } => write!(f, "gpu: invalid input: {what}"),
            Self::TooLarge { what, size, limit } => {
                write!(
                    f,
                    "gpu: {what} is {size} bytes, over the device limit of {limit}"
                )
            }
            Self::Map(e) => write!(f, "gpu: buffer map failed: {e}"),
            Self::Poll(e) => write!(f, "gpu: device poll failed: {e}"),
            Self::Image(e) => write!(f, "gpu: image write failed: {e}"),
        }
    }
}

impl std::error::Error for GpuError {}

/// A headless device and everything needed to use it.
#[derive(Debug)]
pub struct GpuContext {
    /// The wgpu instance.
    pub instance: wgpu::Instance,
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
    /// The limits of the device (the adapter's).
    pub limits: wgpu::Limits,
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
    /// [`GpuError::MissingFeatures`], [`GpuError::RequestDevice`].
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
        let (device, queue) = pollster::block_on(chosen.request_device(&wgpu::DeviceDescriptor {
            label: Some("sinew device"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| GpuError::RequestDevice(format!("{e} (adapter '{}')", adapter_info.name)))?;
        Ok(Self {
            instance,
            adapter: chosen,
            device,
            queue,
            adapter_info,
            features,
            limits,
        })
    }
}
