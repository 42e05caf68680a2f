//! The error type of RBF bake and deformation.

use std::fmt;

/// What went wrong in an RBF bake or deformation, and where.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum DeformError {
    /// An input that must not be empty was empty.
    Empty {
        /// Which input (e.g. "low-poly rest positions").
        what: &'static str,
    },
    /// Two inputs that must have the same length did not.
    LengthMismatch {
        /// Which input.
        what: &'static str,
        /// The length required.
        expected: usize,
        /// The length given.
        actual: usize,
    },
    /// A NaN or infinite coordinate.
    NotFinite {
        /// Which input.
        what: &'static str,
        /// The index of the offending element.
        index: usize,
    },
    /// The shape parameter must be finite and > 0.
    InvalidEpsilon {
        /// The value given.
        epsilon: f64,
    },
    /// An option that does not fit the others (e.g. a kernel that cannot be normalised).
    InvalidOption {
        /// Why.
        reason: String,
    },
    /// Two controls at the same position: the interpolation system is singular.
    DuplicateControls {
        /// Index of the first control.
        first: usize,
        /// Index of the control at the same position.
        second: usize,
    },
    /// The interpolation system could not be solved.
    Singular {
        /// Why (which check failed, with the numbers).
        reason: String,
    },
    /// In normalized mode, a high vertex got zero total kernel weight (outside every compact support).
    Unreached {
        /// The high vertex.
        vertex: usize,
    },
    /// An index stored in a weight table is out of range.
    IndexOutOfRange {
        /// Which table.
        what: &'static str,
        /// The index.
        index: usize,
        /// The length it indexes.
        len: usize,
    },
    /// The cage (controls) and the high-poly mesh differ in size by more than
    /// [`BakeOptions::max_size_ratio`](super::BakeOptions::max_size_ratio): most likely
    /// different units (metres and centimetres).
    ScaleMismatch {
        /// The controls' bounding box, minimum corner.
        cage_min: [f32; 3],
        /// The controls' bounding box, maximum corner.
        cage_max: [f32; 3],
        /// The high-poly vertices' bounding box, minimum corner.
        mesh_min: [f32; 3],
        /// The high-poly vertices' bounding box, maximum corner.
        mesh_max: [f32; 3],
        /// The larger box's largest extent over the smaller's.
        ratio: f32,
        /// The ratio allowed.
        limit: f32,
    },
    /// A baked weight does not fit an `f32`: the interpolation system is too ill-conditioned
    /// for these positions.
    IllConditioned {
        /// The high vertex.
        vertex: usize,
        /// The control.
        control: usize,
        /// The weight, as solved in f64.
        weight: f64,
    },
    /// A deformation whose result would overflow `f32`.
    Overflow {
        /// Why, with the numbers.
        reason: String,
    },
    /// A size over a limit (e.g. more than `u32::MAX` stored weights).
    TooLarge {
        /// What is too large.
        what: &'static str,
        /// Its size.
        size: usize,
        /// The limit.
        limit: usize,
    },
}

impl fmt::Display for DeformError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty { what } => write!(f, "rbf: {what} is empty"),
            Self::LengthMismatch {
                what,
                expected,
                actual,
            } => {
                write!(f, "rbf: {what} has {actual} elements, expected {expected}")
            }
            Self::NotFinite { what, index } => {
                write!(f, "rbf: {what}[{index}] is NaN or infinite")
            }
            Self::InvalidEpsilon { epsilon } => {
                write!(f, "rbf: epsilon must be finite and > 0, got {epsilon}")
            }
            Self::InvalidOption { reason } => write!(f, "rbf: invalid option: {reason}"),
            Self::DuplicateControls { first, second } => write!(
                f,
                "rbf: controls {first} and {second} are at the same position, the interpolation \
                 system is singular (remove duplicates or use normalized mode)"
            ),
            Self::Singular { reason } => write!(f, "rbf: singular system: {reason}"),
            Self::Unreached { vertex } => write!(
                f,
                "rbf: high vertex {vertex} is outside the support of every control (kernel sum is \
                 0); decrease epsilon"
            ),
            Self::IndexOutOfRange { what, index, len } => {
                write!(f, "rbf: {what}: index {index} out of range (len {len})")
            }
            Self::ScaleMismatch {
                cage_min,
                cage_max,
                mesh_min,
                mesh_max,
                ratio,
                limit,
            } => write!(
                f,
                "rbf: the cage (controls, bounding box {cage_min:?} to {cage_max:?}) and the \
                 high-poly mesh (bounding box {mesh_min:?} to {mesh_max:?}) differ in size by a \
                 factor of {ratio} (more than {limit}): different units, such as metres and \
                 centimetres? Scale one of them, or raise BakeOptions::max_size_ratio"
            ),
            Self::IllConditioned {
                vertex,
                control,
                weight,
            } => write!(
                f,
                "rbf: the weight of high vertex {vertex} on control {control} is {weight:e}, \
                 beyond f32: the interpolation system is too ill-conditioned for these positions \
                 (controls too close together for this kernel and epsilon, or the vertex far \
                 outside the cage)"
            ),
            Self::Overflow { reason } => write!(f, "rbf: the result overflows f32: {reason}"),
            Self::TooLarge { what, size, limit } => {
                write!(f, "rbf: {what} is too large ({size} > {limit})")
            }
        }
    }
}

impl std::error::Error for DeformError {}
