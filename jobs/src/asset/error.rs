use std::fmt;

/// Why a `Raw*` asset could not be baked. Each variant says what was wrong and where.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum BakeError {
    /// A rig, mesh or clip with nothing in it where something is required.
    Empty {
        /// The asset.
        asset: String,
        /// What is empty.
        what: &'static str,
    },
    /// A bone's parent index is out of range or the hierarchy has a cycle.
    BadHierarchy {
        /// The asset.
        asset: String,
        /// The bone.
        bone: String,
        /// What is wrong.
        reason: String,
    },
    /// Two bones share a name (bone matching is by name hash, so names must be unique).
    DuplicateBoneName {
        /// The asset.
        asset: String,
        /// The name.
        name: String,
    },
    /// A number is NaN or infinite, or a rotation is not a unit quaternion.
    NotFinite {
        /// The asset.
        asset: String,
        /// Where.
        location: String,
    },
    /// Arrays that must have equal lengths do not.
    LengthMismatch {
        /// The asset.
        asset: String,
        /// Where.
        location: String,
        /// Expected length.
        expected: usize,
        /// Actual length.
        actual: usize,
    },
    /// Key times that do not strictly increase.
    KeyTimesNotIncreasing {
        /// The asset.
        asset: String,
        /// The track.
        track: String,
        /// The index of the first offending key.
        key: usize,
    },
    /// An index (joint, bone, vertex) out of range.
    IndexOutOfRange {
        /// The asset.
        asset: String,
        /// Where.
        location: String,
        /// The index.
        index: usize,
        /// The number of valid entries.
        len: usize,
    },
    /// A track or mask names a bone the rig does not have.
    UnknownBone {
        /// The asset.
        asset: String,
        /// The bone name.
        bone: String,
    },
    /// A mesh's morph target is unusable: delta counts that are not the mesh's vertex count,
    /// NaN or infinite deltas or weights, or more targets than the GPU path holds.
    MorphTarget {
        /// The mesh (importer meshes are named `<mesh>/<primitive>`).
        asset: String,
        /// The target's index.
        target: usize,
        /// What is wrong.
        reason: String,
    },
    /// Something else that violates an asset invariant.
    Invalid {
        /// The asset.
        asset: String,
        /// What is wrong.
        reason: String,
    },
}

impl fmt::Display for BakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty { asset, what } => write!(f, "{asset}: {what} is empty"),
            Self::BadHierarchy {
                asset,
                bone,
                reason,
            } => write!(f, "{asset}: bone '{bone}': {reason}"),
            Self::DuplicateBoneName { asset, name } => {
                write!(f, "{asset}: two bones are named '{name}'")
            }
            Self::NotFinite { asset, location } => write!(
                f,
                "{asset}: {location} is NaN, infinite or not a unit rotation"
            ),
            Self::LengthMismatch {
                asset,
                location,
                expected,
                actual,
            } => {
                write!(
                    f,
                    "{asset}: {location} has {actual} entries, expected {expected}"
                )
            }
            Self::KeyTimesNotIncreasing { asset, track, key } => {
                write!(
                    f,
                    "{asset}: track '{track}': key time {key} does not increase"
                )
            }
            Self::IndexOutOfRange {
                asset,
                location,
                index,
                len,
            } => {
                write!(
                    f,
                    "{asset}: {location}: index {index} out of range (len {len})"
                )
            }
            Self::UnknownBone { asset, bone } => {
                write!(f, "{asset}: no bone named '{bone}' in the rig")
            }
            Self::MorphTarget {
                asset,
                target,
                reason,
            } => write!(f, "{asset}: morph target {target}: {reason}"),
            Self::Invalid { asset, reason } => write!(f, "{asset}: {reason}"),
        }
    }
}

impl std::error::Error for BakeError {}
