//! The animation controller: per-entity parameters, one state machine per layer, blend trees,
//! and the animation list it writes for job 4 (docs/controller.md is the reference).
//!
//! - Authoring: [`RawController`] (a builder in Rust, or JSON with the `json` feature:
//!   `RawController::from_json`) baked against a rig and named clips and masks
//!   ([`ControllerAssets`]) into an immutable [`Controller`], shared behind `Arc`.
//! - Per entity: a [`ControllerState`] component (the controller, parameter values, each
//!   layer's playing states and transition, this frame's events). Code sets parameters on it;
//!   user curves can drive them through the controller's curve bindings.
//! - Each frame the pipeline's controller node ([`ControllerJob`]) advances every state
//!   machine by the frame time and rewrites the entity's
//!   [`Animations`](crate::component::Animations) and
//!   [`LayerWeights`](crate::component::LayerWeights); job 4 samples that list as any other.
//!   Its events (state enter and exit, transition start and end, the states' own events)
//!   reach [`FiredEvents`](crate::component::FiredEvents) after job 5's clip events.

pub mod blend_tree;
#[cfg(feature = "json")]
mod json;
mod params;
mod raw;
mod state_machine;

pub use blend_tree::{BlendLayoutError, BlendTreeKind};
pub use params::{ParamId, ParamKind};
pub use raw::{
    ConditionOp, ControllerAssets, DurationMode, InterruptionSource, RawBlendChild, RawBlendTree,
    RawCondition, RawController, RawCurveBinding, RawDestination, RawLayer, RawMotion,
    RawParameter, RawState, RawStateEvent, RawTransition,
};
pub(crate) use state_machine::check_states as state_machine_checks;
pub use state_machine::{
    ControllerEvent, ControllerEventKind, ControllerJob, ControllerState, PlayingState,
};

use crate::asset::{AvatarMask, BoneHash, Clip, ContentHash};
use crate::component::BlendMode;
use glam::Vec2;
use std::fmt;
use std::sync::Arc;

/// Most states per layer (state ids are `u16`, one value kept for "none").
pub const MAX_STATES: usize = 4096;
/// Most leaf clips one state's motion blends (weights are computed in stack buffers).
pub const MAX_LEAVES: usize = 64;
/// Most states whose blend an interrupted transition keeps fading out; past it the lightest
/// state is dropped and the others renormalised.
pub const MAX_FADING_STATES: usize = 3;

/// A state of a layer, by index.
pub type StateId = u16;
/// A transition of a layer (its index in the layer's transition table), by index.
pub type TransitionId = u16;

/// A baked controller: parameters, layers with their state machines, curve bindings. Built by
/// [`RawController::bake`]; immutable and shared behind `Arc` by every entity that uses it.
#[derive(Debug)]
pub struct Controller {
    pub(crate) name: String,
    pub(crate) rig_hash: ContentHash,
    pub(crate) rig_name: String,
    pub(crate) params: Vec<params::Parameter>,
    pub(crate) layers: Vec<Layer>,
    /// `(curve name hash, float parameter)`.
    pub(crate) curve_bindings: Vec<(BoneHash, ParamId)>,
}

impl Controller {
    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The name of the rig it was baked for.
    pub fn rig_name(&self) -> &str {
        &self.rig_name
    }
    /// The content hash of the rig it was baked for.
    pub fn rig_hash(&self) -> ContentHash {
        self.rig_hash
    }
    /// A parameter's id by name.
    pub fn parameter(&self, name: &str) -> Option<ParamId> {
        self.params
            .iter()
            .position(|p| p.name == name)
            .map(|i| ParamId(i as u16))
    }
    /// A parameter's name and kind.
    pub fn parameter_info(&self, id: ParamId) -> Option<(&str, ParamKind)> {
        self.params
            .get(usize::from(id.0))
            .map(|p| (p.name.as_str(), p.kind))
    }
    /// Every parameter's name and kind, in declaration order (id 0 first).
    pub fn parameters(&self) -> impl ExactSizeIterator<Item = (&str, ParamKind)> {
        self.params.iter().map(|p| (p.name.as_str(), p.kind))
    }
    /// Number of parameters.
    pub fn parameter_count(&self) -> usize {
        self.params.len()
    }
    /// Number of layers (layer `i` writes animation layer `i`).
    pub fn layer_count(&self) -> usize {
        self.layers.len()
    }
    /// A layer's index by name.
    pub fn layer(&self, name: &str) -> Option<usize> {
        self.layers.iter().position(|l| l.name == name)
    }
    /// A layer's name.
    pub fn layer_name(&self, layer: usize) -> Option<&str> {
        self.layers.get(layer).map(|l| l.name.as_str())
    }
    /// A state's id by layer and name.
    pub fn state(&self, layer: usize, name: &str) -> Option<StateId> {
        self.layers
            .get(layer)?
            .states
            .iter()
            .position(|s| s.name == name)
            .map(|i| i as StateId)
    }
    /// A state's name.
    pub fn state_name(&self, layer: usize, state: StateId) -> Option<&str> {
        self.layers
            .get(layer)?
            .states
            .get(usize::from(state))
            .map(|s| s.name.as_str())
    }
    /// A transition's name (`"from -> to"`, `"any -> to"`, `"entry -> to"`).
    pub fn transition_name(&self, layer: usize, transition: TransitionId) -> Option<&str> {
        self.layers
            .get(layer)?
            .transitions
            .get(usize::from(transition))
            .map(|t| t.name.as_str())
    }
}

/// One layer: its blend over the layers below, and its state machine (or, for a sync layer,
/// its own motions for the source layer's states).
#[derive(Debug)]
pub(crate) struct Layer {
    pub(crate) name: String,
    pub(crate) blend: BlendMode,
    pub(crate) weight: f32,
    pub(crate) mask: Option<Arc<AvatarMask>>,
    /// A sync layer follows this layer's states and times.
    pub(crate) sync: Option<usize>,
    pub(crate) states: Vec<State>,
    /// Every transition of the layer; states, any-state and entry own ranges of it.
    pub(crate) transitions: Vec<Transition>,
    pub(crate) any_state: std::ops::Range<usize>,
    pub(crate) entry: std::ops::Range<usize>,
    pub(crate) default_state: StateId,
}

#[derive(Debug)]
pub(crate) struct State {
    pub(crate) name: String,
    pub(crate) name_hash: BoneHash,
    pub(crate) motion: Option<Motion>,
    pub(crate) speed: f32,
    pub(crate) speed_param: Option<ParamId>,
    pub(crate) cycle_offset: f32,
    pub(crate) cycle_offset_param: Option<ParamId>,
    pub(crate) looping: bool,
    pub(crate) events: Vec<StateEvent>,
    pub(crate) transitions: std::ops::Range<usize>,
}

#[derive(Clone, Debug)]
pub(crate) struct StateEvent {
    pub(crate) hash: BoneHash,
    /// Normalised time in `[0, 1]`.
    pub(crate) time: f32,
    pub(crate) payload: f32,
}

/// A state's motion: a tree over leaf clips (a lone clip is a tree of one leaf).
#[derive(Debug)]
pub(crate) struct Motion {
    pub(crate) root: MotionNode,
    pub(crate) leaves: Vec<Leaf>,
}

#[derive(Debug)]
pub(crate) struct Leaf {
    pub(crate) clip: Arc<Clip>,
    /// Seconds of the clip per normalised unit (its duration over its time scale; a clip of
    /// zero duration counts one second, so that normalised time still advances).
    pub(crate) cycle: f32,
}

#[derive(Debug)]
pub(crate) enum MotionNode {
    Leaf(u16),
    Tree(Box<Tree>),
}

#[derive(Debug)]
pub(crate) struct Tree {
    pub(crate) kind: BlendTreeKind,
    pub(crate) x: Option<ParamId>,
    pub(crate) y: Option<ParamId>,
    pub(crate) thresholds: Vec<f32>,
    pub(crate) points: Vec<Vec2>,
    /// Simple directional: the directions sorted by angle.
    pub(crate) sorted: Vec<(usize, f32)>,
    pub(crate) direct: Vec<ParamId>,
    pub(crate) normalize: bool,
    pub(crate) children: Vec<MotionNode>,
}

#[derive(Debug)]
pub(crate) struct Transition {
    pub(crate) name: String,
    /// The state that owns it; `None` for any-state and entry transitions.
    pub(crate) source: Option<StateId>,
    /// `None`: the exit (back through the entry).
    pub(crate) destination: Option<StateId>,
    pub(crate) destination_hash: BoneHash,
    pub(crate) conditions: Vec<Condition>,
    pub(crate) exit_time: Option<f32>,
    pub(crate) duration: f32,
    pub(crate) normalized_duration: bool,
    pub(crate) offset: f32,
    pub(crate) interruption: InterruptionSource,
    pub(crate) ordered_interruption: bool,
    pub(crate) can_transition_to_self: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Condition {
    FloatGreater(ParamId, f32),
    FloatLess(ParamId, f32),
    IntEquals(ParamId, i32),
    IntNotEquals(ParamId, i32),
    IntGreater(ParamId, i32),
    IntLess(ParamId, i32),
    True(ParamId),
    False(ParamId),
    Trigger(ParamId),
}

/// Why a controller description, a parameter write or a binding is refused. Each variant names
/// the controller and the item (layer, state, transition, parameter) at fault.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ControllerError {
    /// A parameter name that the controller does not declare.
    UnknownParameter {
        /// The controller.
        controller: String,
        /// The name.
        parameter: String,
        /// Where it was used (a transition, a blend tree, a setter).
        used_by: String,
    },
    /// A parameter of the wrong kind for its use.
    ParameterKind {
        /// The controller.
        controller: String,
        /// The parameter.
        parameter: String,
        /// Its kind.
        kind: ParamKind,
        /// What the use needs.
        expected: &'static str,
        /// Where it was used.
        used_by: String,
    },
    /// A NaN or infinite value for a parameter (at the setter, or from a bound curve).
    NotFinite {
        /// The controller.
        controller: String,
        /// The parameter.
        parameter: String,
        /// The value.
        value: f32,
    },
    /// Two items of one kind share a name.
    DuplicateName {
        /// The controller.
        controller: String,
        /// What kind of item ("parameter", "layer", "state in layer 'base'").
        what: String,
        /// The name.
        name: String,
    },
    /// A state name (a destination, a default state, a sync motion) that the layer lacks.
    UnknownState {
        /// The controller.
        controller: String,
        /// The layer.
        layer: String,
        /// The name.
        state: String,
        /// Where it was used.
        used_by: String,
    },
    /// A clip name not among the [`ControllerAssets`].
    UnknownClip {
        /// The controller.
        controller: String,
        /// The state that plays it (`layer/state`).
        state: String,
        /// The clip name.
        clip: String,
    },
    /// A mask name not among the [`ControllerAssets`].
    UnknownMask {
        /// The controller.
        controller: String,
        /// The layer.
        layer: String,
        /// The mask name.
        mask: String,
    },
    /// A sync layer's source layer is missing, is itself a sync layer, or is not below it.
    BadSyncSource {
        /// The controller.
        controller: String,
        /// The sync layer.
        layer: String,
        /// The named source.
        source: String,
    },
    /// A layer has no state (a state machine needs at least one).
    NoStates {
        /// The controller.
        controller: String,
        /// The layer.
        layer: String,
    },
    /// A blend tree's layout is refused (no children, duplicate thresholds or positions, ...).
    BlendTree {
        /// The controller.
        controller: String,
        /// The state (`layer/state`) and the path to the tree inside its motion.
        state: String,
        /// What is wrong.
        reason: BlendLayoutError,
    },
    /// Transitions of zero duration and no exit time form a cycle, so they could loop within
    /// one frame.
    ZeroDurationCycle {
        /// The controller.
        controller: String,
        /// The layer.
        layer: String,
        /// The states around the cycle, in order.
        states: Vec<String>,
    },
    /// A number out of its range (a negative duration, a NaN speed, a weight outside `[0, 1]`).
    BadValue {
        /// The controller.
        controller: String,
        /// The item (`layer/state`, a transition name, ...).
        item: String,
        /// What is wrong.
        reason: String,
    },
    /// More than a limit allows (layers, states, leaves).
    TooMany {
        /// The controller.
        controller: String,
        /// What.
        what: String,
        /// How many.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// A clip or mask baked for another rig than the controller's.
    AssetForAnotherRig {
        /// The controller.
        controller: String,
        /// The clip or mask.
        asset: String,
        /// The controller's rig.
        rig: String,
    },
    /// An entity's rig is not the rig its controller was baked for.
    ControllerForAnotherRig {
        /// The entity (`None` at [`ControllerState::new`]).
        entity: Option<sinew_runtime::store::Entity>,
        /// The controller.
        controller: String,
        /// The controller's rig.
        controller_rig: String,
        /// The entity's rig.
        rig: String,
    },
    /// A layer index past the controller's layers.
    NoSuchLayer {
        /// The controller.
        controller: String,
        /// The index.
        layer: usize,
    },
    /// A JSON description that does not parse or does not match the schema.
    Json {
        /// serde_json's message (with line and column).
        message: String,
    },
}

impl fmt::Display for ControllerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownParameter {
                controller,
                parameter,
                used_by,
            } => write!(
                f,
                "controller '{controller}': unknown parameter '{parameter}' (used by {used_by})"
            ),
            Self::ParameterKind {
                controller,
                parameter,
                kind,
                expected,
                used_by,
            } => write!(
                f,
                "controller '{controller}': parameter '{parameter}' is a {kind}, {used_by} needs {expected}"
            ),
            Self::NotFinite {
                controller,
                parameter,
                value,
            } => write!(
                f,
                "controller '{controller}': parameter '{parameter}' set to {value}, which is not finite"
            ),
            Self::DuplicateName {
                controller,
                what,
                name,
            } => write!(f, "controller '{controller}': two {what}s named '{name}'"),
            Self::UnknownState {
                controller,
                layer,
                state,
                used_by,
            } => write!(
                f,
                "controller '{controller}', layer '{layer}': no state '{state}' (used by {used_by})"
            ),
            Self::UnknownClip {
                controller,
                state,
                clip,
            } => write!(
                f,
                "controller '{controller}', state '{state}': no clip named '{clip}' among the assets"
            ),
            Self::UnknownMask {
                controller,
                layer,
                mask,
            } => write!(
                f,
                "controller '{controller}', layer '{layer}': no mask named '{mask}' among the assets"
            ),
            Self::BadSyncSource {
                controller,
                layer,
                source,
            } => write!(
                f,
                "controller '{controller}', sync layer '{layer}': source layer '{source}' must be a state-machine layer below it"
            ),
            Self::NoStates { controller, layer } => {
                write!(f, "controller '{controller}', layer '{layer}' has no state")
            }
            Self::BlendTree {
                controller,
                state,
                reason,
            } => write!(
                f,
                "controller '{controller}', blend tree of state '{state}': {reason}"
            ),
            Self::ZeroDurationCycle {
                controller,
                layer,
                states,
            } => write!(
                f,
                "controller '{controller}', layer '{layer}': zero-duration transitions without exit time loop through {} (they could cycle within one frame; give one a duration or an exit time)",
                states.join(" -> ")
            ),
            Self::BadValue {
                controller,
                item,
                reason,
            } => write!(f, "controller '{controller}', {item}: {reason}"),
            Self::TooMany {
                controller,
                what,
                count,
                limit,
            } => write!(
                f,
                "controller '{controller}': {count} {what}, at most {limit}"
            ),
            Self::AssetForAnotherRig {
                controller,
                asset,
                rig,
            } => write!(
                f,
                "controller '{controller}': '{asset}' was baked for another rig than '{rig}'"
            ),
            Self::ControllerForAnotherRig {
                entity,
                controller,
                controller_rig,
                rig,
            } => {
                if let Some(e) = entity {
                    write!(f, "entity {e:?}: ")?;
                }
                write!(
                    f,
                    "controller '{controller}' was baked for rig '{controller_rig}', not '{rig}'"
                )
            }
            Self::NoSuchLayer { controller, layer } => {
                write!(f, "controller '{controller}' has no layer {layer}")
            }
            Self::Json { message } => write!(f, "controller JSON: {message}"),
        }
    }
}

impl std::error::Error for ControllerError {}

impl From<ControllerError> for sinew_runtime::graph::NodeError {
    fn from(e: ControllerError) -> Self {
        sinew_runtime::graph::NodeError::from_error(e)
    }
}
