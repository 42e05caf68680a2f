use crate::asset::BakeError;
use std::fmt;
use std::path::PathBuf;

/// Why a glTF file could not be imported. Each variant names the file (its path, or
/// `<memory>` for [`import_gltf_slice`](super::import_gltf_slice)) and the place in it.
#[derive(Debug)]
#[non_exhaustive]
pub enum ImportError {
    /// The file (or an external buffer it references) could not be read.
    Io {
        /// The path that could not be read.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The bytes are not a GLB container or glTF JSON, or the JSON does not pass the glTF
    /// schema checks (index out of range, missing required property, ...).
    Parse {
        /// The file.
        file: String,
        /// What is wrong.
        reason: String,
    },
    /// The file requires (`extensionsRequired`) a glTF extension the importer does not
    /// implement.
    UnsupportedExtension {
        /// The file.
        file: String,
        /// The extension's name.
        extension: String,
        /// Why, and how to write the file without it.
        reason: String,
    },
    /// A buffer is missing, too short, or has a URI that cannot be resolved.
    Buffer {
        /// The file.
        file: String,
        /// The buffer index.
        buffer: usize,
        /// What is wrong.
        reason: String,
    },
    /// A buffer view's data cannot be had (a compressed view that does not decode).
    BufferView {
        /// The file.
        file: String,
        /// The buffer view index.
        view: usize,
        /// What is wrong.
        reason: String,
    },
    /// An accessor has the wrong type or count, points outside its buffer view or buffer, or
    /// holds NaN or infinite values.
    Accessor {
        /// The file.
        file: String,
        /// The accessor index.
        accessor: usize,
        /// What the accessor was read for (e.g. `mesh 0 primitive 1 JOINTS_0`).
        used_as: String,
        /// What is wrong.
        reason: String,
    },
    /// The node graph is not a forest (a cycle, a node with two parents) or a node's transform
    /// is unusable.
    Node {
        /// The file.
        file: String,
        /// The node index.
        node: usize,
        /// What is wrong.
        reason: String,
    },
    /// A skin is unusable (no joints, a joint listed twice, too few inverse bind matrices).
    Skin {
        /// The file.
        file: String,
        /// The skin index.
        skin: usize,
        /// What is wrong.
        reason: String,
    },
    /// A mesh primitive is unusable (missing attributes, counts that differ, joint index out of
    /// range, negative weights).
    Mesh {
        /// The file.
        file: String,
        /// The mesh index.
        mesh: usize,
        /// The primitive index within the mesh.
        primitive: usize,
        /// What is wrong.
        reason: String,
    },
    /// An animation channel or sampler is unusable (key counts, key times that do not
    /// increase).
    Animation {
        /// The file.
        file: String,
        /// The animation index.
        animation: usize,
        /// The channel index, when one channel is at fault.
        channel: Option<usize>,
        /// What is wrong.
        reason: String,
    },
    /// The imported `Raw*` asset was rejected by its `bake()`.
    Bake {
        /// The file.
        file: String,
        /// The bake error (it names the asset and the place).
        source: BakeError,
    },
    /// The `gltf` crate panicked on malformed input; the panic was caught and turned into this
    /// error (a last line of defence: the importer validates byte ranges before reading).
    Malformed {
        /// The file.
        file: String,
        /// The panic message.
        reason: String,
    },
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, source } => write!(f, "{}: cannot read: {source}", path.display()),
            Self::Parse { file, reason } => write!(f, "{file}: not valid glTF 2.0: {reason}"),
            Self::UnsupportedExtension {
                file,
                extension,
                reason,
            } => write!(f, "{file}: requires extension {extension}: {reason}"),
            Self::Buffer {
                file,
                buffer,
                reason,
            } => write!(f, "{file}: buffer {buffer}: {reason}"),
            Self::BufferView { file, view, reason } => {
                write!(f, "{file}: buffer view {view}: {reason}")
            }
            Self::Accessor {
                file,
                accessor,
                used_as,
                reason,
            } => {
                write!(
                    f,
                    "{file}: accessor {accessor} (read as {used_as}): {reason}"
                )
            }
            Self::Node { file, node, reason } => write!(f, "{file}: node {node}: {reason}"),
            Self::Skin { file, skin, reason } => write!(f, "{file}: skin {skin}: {reason}"),
            Self::Mesh {
                file,
                mesh,
                primitive,
                reason,
            } => {
                write!(f, "{file}: mesh {mesh} primitive {primitive}: {reason}")
            }
            Self::Animation {
                file,
                animation,
                channel: Some(c),
                reason,
            } => {
                write!(f, "{file}: animation {animation} channel {c}: {reason}")
            }
            Self::Animation {
                file,
                animation,
                channel: None,
                reason,
            } => {
                write!(f, "{file}: animation {animation}: {reason}")
            }
            Self::Bake { file, source } => write!(f, "{file}: bake failed: {source}"),
            Self::Malformed { file, reason } => write!(f, "{file}: malformed input: {reason}"),
        }
    }
}

impl std::error::Error for ImportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Bake { source, .. } => Some(source),
            _ => None,
        }
    }
}
