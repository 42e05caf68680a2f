//! Parameters: their kinds, declarations and per-entity values.

use std::fmt;

/// A parameter of a controller, by index (from [`Controller::parameter`](super::Controller::parameter)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ParamId(pub(crate) u16);

impl ParamId {
    /// The index among the controller's parameters.
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

/// What a parameter holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "json", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "json", serde(rename_all = "snake_case"))]
pub enum ParamKind {
    /// A finite `f32`.
    Float,
    /// An `i32`.
    Int,
    /// A `bool`.
    Bool,
    /// A `bool` that the transition using it resets (consumes).
    Trigger,
}

impl fmt::Display for ParamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Float => "float",
            Self::Int => "int",
            Self::Bool => "bool",
            Self::Trigger => "trigger",
        })
    }
}

/// A declared parameter with its default value (as [`Values`] stores it).
#[derive(Clone, Debug)]
pub(crate) struct Parameter {
    pub(crate) name: String,
    pub(crate) kind: ParamKind,
    pub(crate) default: u32,
}

/// Per-entity values, 4 bytes each: float bits, an `i32`'s bits, or 0/1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Values(pub(crate) Box<[u32]>);

impl Values {
    pub(crate) fn new(params: &[Parameter]) -> Self {
        Self(params.iter().map(|p| p.default).collect())
    }
    #[inline]
    pub(crate) fn float(&self, p: ParamId) -> f32 {
        f32::from_bits(self.raw(p))
    }
    #[inline]
    pub(crate) fn int(&self, p: ParamId) -> i32 {
        self.raw(p) as i32
    }
    #[inline]
    pub(crate) fn flag(&self, p: ParamId) -> bool {
        self.raw(p) != 0
    }
    #[inline]
    pub(crate) fn raw(&self, p: ParamId) -> u32 {
        self.0.get(p.index()).copied().unwrap_or(0)
    }
    #[inline]
    pub(crate) fn set_raw(&mut self, p: ParamId, v: u32) {
        if let Some(x) = self.0.get_mut(p.index()) {
            *x = v;
        }
    }
}
