//! Importers that turn files into `Raw*` assets and bake them (glTF 2.0).
//!
//! [`import_gltf`] reads a `.glb` or `.gltf` file (embedded, `data:` or external buffers) and
//! returns a [`GltfScene`]: one [`Rig`](crate::asset::Rig) over every node of the default
//! scene, one [`SkinnedMesh`](crate::asset::SkinnedMesh) per skinned primitive (bones = the
//! skin's joints; morph targets and default weights included), one per primitive of an
//! unskinned node with morph targets (bound to the node), one [`Clip`](crate::asset::Clip) per
//! animation (a `weights` channel becomes curves `<node>.weights[k]`), all interned in an
//! [`AssetRegistry`](crate::asset::AssetRegistry) so importing a file twice shares every `Arc`.
//! Malformed input gives an [`ImportError`], never a panic.
//!
//! Files written by the asset pipelines' tools import as they are: `KHR_mesh_quantization`
//! (integer attributes, dequantized by the spec's formulas), sparse accessors, and with the
//! `meshopt` feature `EXT_meshopt_compression`. [`import_gltf_clips`] imports a file's
//! animations onto a rig from another file, matching bones by name.
//!
//! ```
//! use sinew_jobs::asset::AssetRegistry;
//! use sinew_jobs::import::import_gltf_slice;
//!
//! // A minimal glTF: one node, no meshes, no animations.
//! let json = br#"{"asset":{"version":"2.0"},"nodes":[{"name":"root","translation":[0,1,0]}]}"#;
//! let registry = AssetRegistry::new();
//! let scene = import_gltf_slice(json, None, &registry)?;
//! assert_eq!(scene.rig.bone_names(), ["root"]);
//! assert!(import_gltf_slice(b"not gltf", None, &registry).is_err());
//! # Ok::<(), sinew_jobs::import::ImportError>(())
//! ```

mod accessor;
mod error;
mod extensions;
mod gltf;
#[cfg(feature = "meshopt")]
mod meshopt;
mod morph;
mod quantization;
mod source;

pub use self::error::ImportError;
pub use self::gltf::{
    GltfClips, GltfScene, GltfSkin, GltfSkinnedPrimitive, import_gltf, import_gltf_clips,
    import_gltf_clips_slice, import_gltf_slice,
};
