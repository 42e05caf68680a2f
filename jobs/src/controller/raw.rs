//! The editable description of a controller (a Rust builder, and with the `json` feature a
//! serde schema), and its bake into a [`Controller`].

use super::blend_tree::{self, BlendTreeKind, MAX_CHILDREN};
use super::params::{ParamId, ParamKind, Parameter};
use super::{
    Condition, Controller, ControllerError, Layer, Leaf, MAX_LEAVES, MAX_STATES, Motion,
    MotionNode, State, StateEvent, StateId, Transition, Tree,
};
use crate::asset::{AvatarMask, Clip, Rig, bone_hash};
use crate::component::{BlendMode, MAX_LAYERS};
use glam::Vec2;
use std::sync::Arc;

#[cfg(feature = "json")]
use serde::{Deserialize, Serialize};

#[cfg(feature = "json")]
fn one() -> f32 {
    1.0
}
#[cfg(feature = "json")]
fn yes() -> bool {
    true
}

/// A controller as authored: parameters, layers, curve bindings. [`RawController::bake`] turns
/// it into a [`Controller`].
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "json", serde(deny_unknown_fields))]
pub struct RawController {
    /// Name for messages.
    pub name: String,
    /// Declared parameters.
    #[cfg_attr(feature = "json", serde(default))]
    pub parameters: Vec<RawParameter>,
    /// Layers, bottom first (layer `i` writes animation layer `i`).
    pub layers: Vec<RawLayer>,
    /// User curves that drive float parameters.
    #[cfg_attr(feature = "json", serde(default))]
    pub curve_bindings: Vec<RawCurveBinding>,
}

/// A declared parameter.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "json", serde(deny_unknown_fields))]
pub struct RawParameter {
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: ParamKind,
    /// Its starting value (floats as they are, ints exactly, 0 or 1 for bools and triggers).
    #[cfg_attr(feature = "json", serde(default))]
    pub default: f64,
}

/// A user curve (by name, as job 5 writes it into `CurveValues`) that sets a float parameter
/// each frame, from the previous frame's curve value.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "json", serde(deny_unknown_fields))]
pub struct RawCurveBinding {
    /// The curve's name.
    pub curve: String,
    /// The float parameter it drives.
    pub parameter: String,
}

/// One layer.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "json", serde(deny_unknown_fields))]
pub struct RawLayer {
    /// Its name.
    pub name: String,
    /// Override or additive.
    #[cfg_attr(feature = "json", serde(default, with = "blend_mode"))]
    pub blend: BlendMode,
    /// Its weight in `[0, 1]` (code can change it per entity).
    #[cfg_attr(feature = "json", serde(default = "one"))]
    pub weight: f32,
    /// The name of its avatar mask among the assets.
    #[cfg_attr(feature = "json", serde(default))]
    pub mask: Option<String>,
    /// A sync layer: follows this (lower, non-sync) layer's states and times, playing its own
    /// motions (its `states` give a motion per source state, by name; unlisted states play
    /// nothing on this layer).
    #[cfg_attr(feature = "json", serde(default))]
    pub sync_source: Option<String>,
    /// The state entered when no entry transition applies (default: the first).
    #[cfg_attr(feature = "json", serde(default))]
    pub default_state: Option<String>,
    /// The states.
    #[cfg_attr(feature = "json", serde(default))]
    pub states: Vec<RawState>,
    /// Transitions from any state, checked before the current state's.
    #[cfg_attr(feature = "json", serde(default))]
    pub any_state_transitions: Vec<RawTransition>,
    /// Transitions from the entry (conditions only), checked when the layer starts and after
    /// an exit.
    #[cfg_attr(feature = "json", serde(default))]
    pub entry_transitions: Vec<RawTransition>,
}

#[cfg(feature = "json")]
mod blend_mode {
    use crate::component::BlendMode;
    use serde::{Deserialize, Deserializer, Serializer};
    pub(super) fn serialize<S: Serializer>(b: &BlendMode, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match b {
            BlendMode::Override => "override",
            BlendMode::Additive => "additive",
        })
    }
    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BlendMode, D::Error> {
        match String::deserialize(d)?.as_str() {
            "override" => Ok(BlendMode::Override),
            "additive" => Ok(BlendMode::Additive),
            other => Err(serde::de::Error::unknown_variant(
                other,
                &["override", "additive"],
            )),
        }
    }
}

/// One state.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "json", serde(deny_unknown_fields))]
pub struct RawState {
    /// Its name.
    pub name: String,
    /// What it plays.
    #[cfg_attr(feature = "json", serde(default))]
    pub motion: RawMotion,
    /// Speed multiplier (negative plays backwards).
    #[cfg_attr(feature = "json", serde(default = "one"))]
    pub speed: f32,
    /// A float parameter that multiplies the speed.
    #[cfg_attr(feature = "json", serde(default))]
    pub speed_parameter: Option<String>,
    /// Normalised offset added to the clips' times (not to the state's time).
    #[cfg_attr(feature = "json", serde(default))]
    pub cycle_offset: f32,
    /// A float parameter that replaces the cycle offset.
    #[cfg_attr(feature = "json", serde(default))]
    pub cycle_offset_parameter: Option<String>,
    /// Loops (`None`: when every clip of the motion loops).
    #[cfg_attr(feature = "json", serde(default))]
    pub looping: Option<bool>,
    /// Its own events, at normalised times.
    #[cfg_attr(feature = "json", serde(default))]
    pub events: Vec<RawStateEvent>,
    /// Its outgoing transitions, in priority order.
    #[cfg_attr(feature = "json", serde(default))]
    pub transitions: Vec<RawTransition>,
}

/// An event of a state, fired when the state's normalised time passes `time`.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "json", serde(deny_unknown_fields))]
pub struct RawStateEvent {
    /// Its name.
    pub name: String,
    /// Normalised time in `[0, 1]`.
    pub time: f32,
    /// User value.
    #[cfg_attr(feature = "json", serde(default))]
    pub payload: f32,
}

/// What a state plays.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "json", serde(rename_all = "snake_case"))]
pub enum RawMotion {
    /// Nothing (an empty state: its layer adds nothing while it plays).
    #[default]
    None,
    /// A clip, by name among the assets.
    Clip(String),
    /// A blend tree.
    Tree(RawBlendTree),
}

/// A blend tree.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "json", serde(deny_unknown_fields))]
pub struct RawBlendTree {
    /// How children are placed.
    pub kind: BlendTreeKind,
    /// The float parameter of a 1D tree, or the x parameter of a 2D tree.
    #[cfg_attr(feature = "json", serde(default))]
    pub parameter: Option<String>,
    /// The y parameter of a 2D tree.
    #[cfg_attr(feature = "json", serde(default))]
    pub parameter_y: Option<String>,
    /// Direct trees: divide the weights by their sum.
    #[cfg_attr(feature = "json", serde(default))]
    pub normalize: bool,
    /// The children.
    pub children: Vec<RawBlendChild>,
}

/// A child of a blend tree.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "json", serde(deny_unknown_fields))]
pub struct RawBlendChild {
    /// A clip or a nested tree.
    pub motion: RawMotion,
    /// 1D threshold.
    #[cfg_attr(feature = "json", serde(default))]
    pub threshold: f32,
    /// 2D position.
    #[cfg_attr(feature = "json", serde(default))]
    pub position: [f32; 2],
    /// Direct trees: the float parameter that is this child's weight.
    #[cfg_attr(feature = "json", serde(default))]
    pub parameter: Option<String>,
    /// Playback rate of the child relative to the tree (it shortens the child's cycle, and so
    /// the tree's duration; children stay synchronised by normalised time).
    #[cfg_attr(feature = "json", serde(default = "one"))]
    pub time_scale: f32,
}

/// A transition.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "json", serde(deny_unknown_fields))]
pub struct RawTransition {
    /// Where it goes.
    pub to: RawDestination,
    /// All must hold.
    #[cfg_attr(feature = "json", serde(default))]
    pub conditions: Vec<RawCondition>,
    /// Normalised exit time of the source state (`None`: conditions only). Below 1 it is
    /// checked in every loop; from 1 up, once.
    #[cfg_attr(feature = "json", serde(default))]
    pub exit_time: Option<f32>,
    /// Cross-fade duration (seconds, or the source state's normalised time).
    #[cfg_attr(feature = "json", serde(default))]
    pub duration: f32,
    /// How `duration` is measured.
    #[cfg_attr(feature = "json", serde(default))]
    pub duration_mode: DurationMode,
    /// Normalised time at which the destination starts.
    #[cfg_attr(feature = "json", serde(default))]
    pub offset: f32,
    /// Which transitions may interrupt this one.
    #[cfg_attr(feature = "json", serde(default))]
    pub interruption: InterruptionSource,
    /// With a current-state source: only the source state's transitions listed before this
    /// one may interrupt it.
    #[cfg_attr(feature = "json", serde(default = "yes"))]
    pub ordered_interruption: bool,
    /// Any-state transitions: may restart the state they lead to while it plays.
    #[cfg_attr(feature = "json", serde(default))]
    pub can_transition_to_self: bool,
}

/// Where a transition leads.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "json", serde(rename_all = "snake_case"))]
pub enum RawDestination {
    /// A state of the layer, by name.
    State(String),
    /// The exit: back through the layer's entry transitions (or its default state).
    Exit,
}

/// How a transition's duration is measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "json", serde(rename_all = "snake_case"))]
pub enum DurationMode {
    /// Seconds.
    #[default]
    Fixed,
    /// A fraction of the source state's duration (converted to seconds when it starts).
    Normalized,
}

/// Which transitions may interrupt an active transition (as Unity's Animator).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "json", serde(rename_all = "snake_case"))]
pub enum InterruptionSource {
    /// None (any-state transitions still can).
    #[default]
    None,
    /// The source state's transitions.
    Current,
    /// The destination state's transitions.
    Next,
    /// The source's, then the destination's.
    CurrentThenNext,
    /// The destination's, then the source's.
    NextThenCurrent,
}

/// A condition on a parameter.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "json", serde(deny_unknown_fields))]
pub struct RawCondition {
    /// The parameter.
    pub parameter: String,
    /// The test.
    pub op: ConditionOp,
    /// The value compared with (floats and ints; unused for bools and triggers).
    #[cfg_attr(feature = "json", serde(default))]
    pub value: f64,
}

/// A condition's test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "json", serde(rename_all = "snake_case"))]
pub enum ConditionOp {
    /// Float or int `>` value.
    Greater,
    /// Float or int `<` value.
    Less,
    /// Int `==` value.
    Equals,
    /// Int `!=` value.
    NotEquals,
    /// Bool is true.
    True,
    /// Bool is false.
    False,
    /// Trigger is set (and is consumed when the transition starts).
    Trigger,
}

/// The clips and masks a description names, found by name when it is baked.
#[derive(Clone, Debug, Default)]
pub struct ControllerAssets {
    /// Clips, by [`Clip::name`].
    pub clips: Vec<Arc<Clip>>,
    /// Masks, by [`AvatarMask::name`].
    pub masks: Vec<Arc<AvatarMask>>,
}

impl ControllerAssets {
    /// No assets.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds a clip.
    pub fn clip(mut self, clip: Arc<Clip>) -> Self {
        self.clips.push(clip);
        self
    }
    /// Adds a mask.
    pub fn mask(mut self, mask: Arc<AvatarMask>) -> Self {
        self.masks.push(mask);
        self
    }
}

// ---- builder -----------------------------------------------------------------------------

impl RawController {
    /// An empty controller.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }
    fn param(mut self, name: impl Into<String>, kind: ParamKind, default: f64) -> Self {
        self.parameters.push(RawParameter {
            name: name.into(),
            kind,
            default,
        });
        self
    }
    /// Declares a float parameter.
    pub fn float(self, name: impl Into<String>, default: f32) -> Self {
        self.param(name, ParamKind::Float, f64::from(default))
    }
    /// Declares an int parameter.
    pub fn int(self, name: impl Into<String>, default: i32) -> Self {
        self.param(name, ParamKind::Int, f64::from(default))
    }
    /// Declares a bool parameter.
    pub fn bool(self, name: impl Into<String>, default: bool) -> Self {
        self.param(name, ParamKind::Bool, f64::from(u8::from(default)))
    }
    /// Declares a trigger.
    pub fn trigger(self, name: impl Into<String>) -> Self {
        self.param(name, ParamKind::Trigger, 0.0)
    }
    /// Adds a layer (above the previous ones).
    pub fn layer(mut self, layer: RawLayer) -> Self {
        self.layers.push(layer);
        self
    }
    /// Binds a user curve to a float parameter.
    pub fn bind_curve(mut self, curve: impl Into<String>, parameter: impl Into<String>) -> Self {
        self.curve_bindings.push(RawCurveBinding {
            curve: curve.into(),
            parameter: parameter.into(),
        });
        self
    }
}

impl RawLayer {
    /// An override layer of weight 1.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            blend: BlendMode::Override,
            weight: 1.0,
            mask: None,
            sync_source: None,
            default_state: None,
            states: Vec::new(),
            any_state_transitions: Vec::new(),
            entry_transitions: Vec::new(),
        }
    }
    /// Makes it additive.
    pub fn additive(mut self) -> Self {
        self.blend = BlendMode::Additive;
        self
    }
    /// Sets its weight.
    pub fn weight(mut self, weight: f32) -> Self {
        self.weight = weight;
        self
    }
    /// Masks it (by mask name).
    pub fn mask(mut self, mask: impl Into<String>) -> Self {
        self.mask = Some(mask.into());
        self
    }
    /// Makes it a sync layer of `source`.
    pub fn sync(mut self, source: impl Into<String>) -> Self {
        self.sync_source = Some(source.into());
        self
    }
    /// Sets the default state.
    pub fn default_state(mut self, state: impl Into<String>) -> Self {
        self.default_state = Some(state.into());
        self
    }
    /// Adds a state.
    pub fn state(mut self, state: RawState) -> Self {
        self.states.push(state);
        self
    }
    /// Adds an any-state transition.
    pub fn any_state(mut self, t: RawTransition) -> Self {
        self.any_state_transitions.push(t);
        self
    }
    /// Adds an entry transition.
    pub fn entry(mut self, t: RawTransition) -> Self {
        self.entry_transitions.push(t);
        self
    }
}

impl RawState {
    /// A state playing `motion`, speed 1.
    pub fn new(name: impl Into<String>, motion: RawMotion) -> Self {
        Self {
            name: name.into(),
            motion,
            speed: 1.0,
            speed_parameter: None,
            cycle_offset: 0.0,
            cycle_offset_parameter: None,
            looping: None,
            events: Vec::new(),
            transitions: Vec::new(),
        }
    }
    /// A state playing a clip (by name).
    pub fn clip(name: impl Into<String>, clip: impl Into<String>) -> Self {
        Self::new(name, RawMotion::Clip(clip.into()))
    }
    /// A state playing a blend tree.
    pub fn tree(name: impl Into<String>, tree: RawBlendTree) -> Self {
        Self::new(name, RawMotion::Tree(tree))
    }
    /// An empty state.
    pub fn empty(name: impl Into<String>) -> Self {
        Self::new(name, RawMotion::None)
    }
    /// Sets the speed.
    pub fn speed(mut self, speed: f32) -> Self {
        self.speed = speed;
        self
    }
    /// Multiplies the speed by a float parameter.
    pub fn speed_parameter(mut self, p: impl Into<String>) -> Self {
        self.speed_parameter = Some(p.into());
        self
    }
    /// Sets the cycle offset.
    pub fn cycle_offset(mut self, offset: f32) -> Self {
        self.cycle_offset = offset;
        self
    }
    /// Takes the cycle offset from a float parameter.
    pub fn cycle_offset_parameter(mut self, p: impl Into<String>) -> Self {
        self.cycle_offset_parameter = Some(p.into());
        self
    }
    /// Sets the loop flag.
    pub fn looping(mut self, looping: bool) -> Self {
        self.looping = Some(looping);
        self
    }
    /// Adds an event at a normalised time.
    pub fn event(mut self, name: impl Into<String>, time: f32, payload: f32) -> Self {
        self.events.push(RawStateEvent {
            name: name.into(),
            time,
            payload,
        });
        self
    }
    /// Adds an outgoing transition (after the previous ones in priority).
    pub fn transition(mut self, t: RawTransition) -> Self {
        self.transitions.push(t);
        self
    }
}

impl RawMotion {
    /// A clip by name.
    pub fn clip(name: impl Into<String>) -> Self {
        Self::Clip(name.into())
    }
}

impl RawBlendTree {
    fn with(kind: BlendTreeKind, x: Option<String>, y: Option<String>) -> Self {
        Self {
            kind,
            parameter: x,
            parameter_y: y,
            normalize: false,
            children: Vec::new(),
        }
    }
    /// A 1D tree on a float parameter.
    pub fn one_d(parameter: impl Into<String>) -> Self {
        Self::with(BlendTreeKind::OneD, Some(parameter.into()), None)
    }
    /// A 2D tree of `kind` on two float parameters.
    pub fn two_d(kind: BlendTreeKind, x: impl Into<String>, y: impl Into<String>) -> Self {
        Self::with(kind, Some(x.into()), Some(y.into()))
    }
    /// A direct tree.
    pub fn direct(normalize: bool) -> Self {
        Self {
            normalize,
            ..Self::with(BlendTreeKind::Direct, None, None)
        }
    }
    fn push(
        mut self,
        motion: RawMotion,
        threshold: f32,
        position: [f32; 2],
        p: Option<String>,
    ) -> Self {
        self.children.push(RawBlendChild {
            motion,
            threshold,
            position,
            parameter: p,
            time_scale: 1.0,
        });
        self
    }
    /// Adds a 1D child at a threshold.
    pub fn child(self, motion: RawMotion, threshold: f32) -> Self {
        self.push(motion, threshold, [0.0; 2], None)
    }
    /// Adds a 2D child at a position.
    pub fn child_at(self, motion: RawMotion, x: f32, y: f32) -> Self {
        self.push(motion, 0.0, [x, y], None)
    }
    /// Adds a direct child weighted by a float parameter.
    pub fn child_weighted_by(self, motion: RawMotion, parameter: impl Into<String>) -> Self {
        self.push(motion, 0.0, [0.0; 2], Some(parameter.into()))
    }
}

impl RawTransition {
    /// A transition to a state, 0 s, no condition, no exit time.
    pub fn to(state: impl Into<String>) -> Self {
        Self::new(RawDestination::State(state.into()))
    }
    /// A transition to the exit.
    pub fn to_exit() -> Self {
        Self::new(RawDestination::Exit)
    }
    fn new(to: RawDestination) -> Self {
        Self {
            to,
            conditions: Vec::new(),
            exit_time: None,
            duration: 0.0,
            duration_mode: DurationMode::Fixed,
            offset: 0.0,
            interruption: InterruptionSource::None,
            ordered_interruption: true,
            can_transition_to_self: false,
        }
    }
    /// Adds a condition.
    pub fn when(mut self, c: RawCondition) -> Self {
        self.conditions.push(c);
        self
    }
    /// Sets the exit time.
    pub fn exit_time(mut self, normalized: f32) -> Self {
        self.exit_time = Some(normalized);
        self
    }
    /// A fixed duration in seconds.
    pub fn duration(mut self, seconds: f32) -> Self {
        self.duration = seconds;
        self.duration_mode = DurationMode::Fixed;
        self
    }
    /// A duration in the source state's normalised time.
    pub fn normalized_duration(mut self, d: f32) -> Self {
        self.duration = d;
        self.duration_mode = DurationMode::Normalized;
        self
    }
    /// Sets the destination's start offset.
    pub fn offset(mut self, normalized: f32) -> Self {
        self.offset = normalized;
        self
    }
    /// Sets the interruption source and ordering.
    pub fn interruption(mut self, source: InterruptionSource, ordered: bool) -> Self {
        self.interruption = source;
        self.ordered_interruption = ordered;
        self
    }
    /// Any-state transitions: lets it restart its destination.
    pub fn can_transition_to_self(mut self, yes: bool) -> Self {
        self.can_transition_to_self = yes;
        self
    }
}

impl RawCondition {
    fn new(parameter: impl Into<String>, op: ConditionOp, value: f64) -> Self {
        Self {
            parameter: parameter.into(),
            op,
            value,
        }
    }
    /// Float or int parameter `> value`.
    pub fn greater(p: impl Into<String>, value: f64) -> Self {
        Self::new(p, ConditionOp::Greater, value)
    }
    /// Float or int parameter `< value`.
    pub fn less(p: impl Into<String>, value: f64) -> Self {
        Self::new(p, ConditionOp::Less, value)
    }
    /// Int parameter `== value`.
    pub fn equals(p: impl Into<String>, value: i32) -> Self {
        Self::new(p, ConditionOp::Equals, f64::from(value))
    }
    /// Int parameter `!= value`.
    pub fn not_equals(p: impl Into<String>, value: i32) -> Self {
        Self::new(p, ConditionOp::NotEquals, f64::from(value))
    }
    /// Bool parameter is true.
    pub fn is_true(p: impl Into<String>) -> Self {
        Self::new(p, ConditionOp::True, 0.0)
    }
    /// Bool parameter is false.
    pub fn is_false(p: impl Into<String>) -> Self {
        Self::new(p, ConditionOp::False, 0.0)
    }
    /// Trigger is set.
    pub fn trigger(p: impl Into<String>) -> Self {
        Self::new(p, ConditionOp::Trigger, 0.0)
    }
}

// ---- bake --------------------------------------------------------------------------------

/// The context of one bake, for lookups and error messages.
struct Baker<'a> {
    name: &'a str,
    rig: &'a Rig,
    assets: &'a ControllerAssets,
    params: Vec<Parameter>,
}

impl Baker<'_> {
    fn err_value(&self, item: impl Into<String>, reason: impl Into<String>) -> ControllerError {
        ControllerError::BadValue {
            controller: self.name.into(),
            item: item.into(),
            reason: reason.into(),
        }
    }

    fn param(
        &self,
        name: &str,
        wanted: &[ParamKind],
        expected: &'static str,
        used_by: &str,
    ) -> Result<ParamId, ControllerError> {
        let i = self
            .params
            .iter()
            .position(|p| p.name == name)
            .ok_or_else(|| ControllerError::UnknownParameter {
                controller: self.name.into(),
                parameter: name.into(),
                used_by: used_by.into(),
            })?;
        let kind = self.params[i].kind;
        if !wanted.contains(&kind) {
            return Err(ControllerError::ParameterKind {
                controller: self.name.into(),
                parameter: name.into(),
                kind,
                expected,
                used_by: used_by.into(),
            });
        }
        Ok(ParamId(i as u16))
    }

    fn float_param(
        &self,
        name: &Option<String>,
        used_by: &str,
    ) -> Result<Option<ParamId>, ControllerError> {
        name.as_deref()
            .map(|n| self.param(n, &[ParamKind::Float], "a float", used_by))
            .transpose()
    }

    fn clip(&self, name: &str, state: &str) -> Result<Arc<Clip>, ControllerError> {
        let clip = self
            .assets
            .clips
            .iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| ControllerError::UnknownClip {
                controller: self.name.into(),
                state: state.into(),
                clip: name.into(),
            })?;
        if clip.rig_hash() != self.rig.content_hash() {
            return Err(ControllerError::AssetForAnotherRig {
                controller: self.name.into(),
                asset: format!("clip '{name}'"),
                rig: self.rig.name().into(),
            });
        }
        Ok(clip.clone())
    }

    fn motion(&self, raw: &RawMotion, state: &str) -> Result<Option<Motion>, ControllerError> {
        if *raw == RawMotion::None {
            return Ok(None);
        }
        let mut leaves = Vec::new();
        let root = self.node(raw, state, "", 1.0, &mut leaves)?;
        if leaves.len() > MAX_LEAVES {
            return Err(ControllerError::TooMany {
                controller: self.name.into(),
                what: format!("clips in the motion of state '{state}'"),
                count: leaves.len(),
                limit: MAX_LEAVES,
            });
        }
        Ok(Some(Motion { root, leaves }))
    }

    fn node(
        &self,
        raw: &RawMotion,
        state: &str,
        path: &str,
        time_scale: f32,
        leaves: &mut Vec<Leaf>,
    ) -> Result<MotionNode, ControllerError> {
        let at = if path.is_empty() {
            state.to_string()
        } else {
            format!("{state}{path}")
        };
        match raw {
            RawMotion::None => Err(ControllerError::BlendTree {
                controller: self.name.into(),
                state: at,
                reason: super::BlendLayoutError::NoChildren,
            }),
            RawMotion::Clip(name) => {
                let clip = self.clip(name, state)?;
                let d = clip.duration();
                let cycle = if d > 0.0 {
                    d / time_scale
                } else {
                    1.0 / time_scale
                };
                leaves.push(Leaf { clip, cycle });
                Ok(MotionNode::Leaf(
                    (leaves.len() - 1).min(u16::MAX as usize) as u16
                ))
            }
            RawMotion::Tree(t) => {
                let used_by = format!("the blend tree of state '{at}'");
                let thresholds: Vec<f32> = t.children.iter().map(|c| c.threshold).collect();
                let points: Vec<Vec2> = t.children.iter().map(|c| Vec2::from(c.position)).collect();
                let layout_err = |reason| ControllerError::BlendTree {
                    controller: self.name.into(),
                    state: at.clone(),
                    reason,
                };
                if t.children.len() > MAX_CHILDREN {
                    return Err(layout_err(super::BlendLayoutError::TooManyChildren {
                        count: t.children.len(),
                    }));
                }
                blend_tree::check_layout(t.kind, &thresholds, &points).map_err(layout_err)?;
                let (x, y) = match t.kind {
                    BlendTreeKind::Direct => (None, None),
                    BlendTreeKind::OneD => {
                        let x = t.parameter.as_ref().ok_or_else(|| {
                            self.err_value(used_by.clone(), "a 1D tree needs a parameter")
                        })?;
                        (
                            Some(self.param(x, &[ParamKind::Float], "a float", &used_by)?),
                            None,
                        )
                    }
                    _ => {
                        let (Some(x), Some(y)) = (&t.parameter, &t.parameter_y) else {
                            return Err(self
                                .err_value(used_by, "a 2D tree needs parameter and parameter_y"));
                        };
                        (
                            Some(self.param(x, &[ParamKind::Float], "a float", &used_by)?),
                            Some(self.param(y, &[ParamKind::Float], "a float", &used_by)?),
                        )
                    }
                };
                let mut direct = Vec::new();
                if t.kind == BlendTreeKind::Direct {
                    for (i, c) in t.children.iter().enumerate() {
                        let p = c.parameter.as_ref().ok_or_else(|| {
                            self.err_value(
                                used_by.clone(),
                                format!("direct child {i} needs a parameter"),
                            )
                        })?;
                        direct.push(self.param(p, &[ParamKind::Float], "a float", &used_by)?);
                    }
                }
                let mut children = Vec::with_capacity(t.children.len());
                for (i, c) in t.children.iter().enumerate() {
                    if !(c.time_scale.is_finite() && c.time_scale > 0.0) {
                        return Err(self.err_value(
                            used_by,
                            format!("child {i}'s time scale {} must be positive", c.time_scale),
                        ));
                    }
                    let child_path = format!("{path}/{i}");
                    children.push(self.node(
                        &c.motion,
                        state,
                        &child_path,
                        time_scale * c.time_scale,
                        leaves,
                    )?);
                }
                let sorted = if t.kind == BlendTreeKind::SimpleDirectional {
                    blend_tree::sorted_directions(&points)
                } else {
                    Vec::new()
                };
                Ok(MotionNode::Tree(Box::new(Tree {
                    kind: t.kind,
                    x,
                    y,
                    thresholds,
                    points,
                    sorted,
                    direct,
                    normalize: t.normalize,
                    children,
                })))
            }
        }
    }
}

impl RawController {
    /// Bakes the description for `rig`, resolving clips and masks by name in `assets`.
    ///
    /// # Errors
    /// [`ControllerError`] naming the controller and the item at fault: unknown parameters,
    /// states, clips or masks; parameters of the wrong kind; duplicate names; empty blend
    /// trees, duplicate thresholds or positions; values out of range; clips or masks for
    /// another rig; a cycle of zero-duration transitions without exit time.
    pub fn bake(
        &self,
        rig: &Rig,
        assets: &ControllerAssets,
    ) -> Result<Controller, ControllerError> {
        let name = self.name.as_str();
        let dup = |what: &str, n: &str| ControllerError::DuplicateName {
            controller: name.into(),
            what: what.into(),
            name: n.into(),
        };
        if self.layers.len() > MAX_LAYERS {
            return Err(ControllerError::TooMany {
                controller: name.into(),
                what: "layers".into(),
                count: self.layers.len(),
                limit: MAX_LAYERS,
            });
        }
        if self.parameters.len() > usize::from(u16::MAX) {
            return Err(ControllerError::TooMany {
                controller: name.into(),
                what: "parameters".into(),
                count: self.parameters.len(),
                limit: usize::from(u16::MAX),
            });
        }
        let mut params = Vec::with_capacity(self.parameters.len());
        for (i, p) in self.parameters.iter().enumerate() {
            if self.parameters[..i].iter().any(|q| q.name == p.name) {
                return Err(dup("parameter", &p.name));
            }
            let item = format!("parameter '{}'", p.name);
            let bad = |reason: String| ControllerError::BadValue {
                controller: name.into(),
                item: item.clone(),
                reason,
            };
            let default = match p.kind {
                ParamKind::Float => {
                    let v = p.default as f32;
                    if !v.is_finite() {
                        return Err(bad(format!("default {} is not a finite f32", p.default)));
                    }
                    v.to_bits()
                }
                ParamKind::Int => {
                    if p.default.fract() != 0.0
                        || p.default < f64::from(i32::MIN)
                        || p.default > f64::from(i32::MAX)
                    {
                        return Err(bad(format!("default {} is not an i32", p.default)));
                    }
                    (p.default as i32) as u32
                }
                ParamKind::Bool | ParamKind::Trigger => {
                    if p.default != 0.0 && p.default != 1.0 {
                        return Err(bad(format!("default {} is not 0 or 1", p.default)));
                    }
                    p.default as u32
                }
            };
            params.push(Parameter {
                name: p.name.clone(),
                kind: p.kind,
                default,
            });
        }
        let b = Baker {
            name,
            rig,
            assets,
            params,
        };
        let mut curve_bindings = Vec::new();
        for c in &self.curve_bindings {
            let p = b.param(
                &c.parameter,
                &[ParamKind::Float],
                "a float",
                &format!("the binding of curve '{}'", c.curve),
            )?;
            curve_bindings.push((bone_hash(&c.curve), p));
        }
        let mut layers: Vec<Layer> = Vec::with_capacity(self.layers.len());
        for (li, rl) in self.layers.iter().enumerate() {
            if self.layers[..li].iter().any(|l| l.name == rl.name) {
                return Err(dup("layer", &rl.name));
            }
            let layer = bake_layer(&b, rl, &layers, &self.layers[..li])?;
            layers.push(layer);
        }
        Ok(Controller {
            name: self.name.clone(),
            rig_hash: rig.content_hash(),
            rig_name: rig.name().into(),
            params: b.params,
            layers,
            curve_bindings,
        })
    }
}

fn bake_layer(
    b: &Baker<'_>,
    rl: &RawLayer,
    below: &[Layer],
    raw_below: &[RawLayer],
) -> Result<Layer, ControllerError> {
    let lname = rl.name.as_str();
    if !(rl.weight.is_finite() && (0.0..=1.0).contains(&rl.weight)) {
        return Err(b.err_value(
            format!("layer '{lname}'"),
            format!("weight {} is not in [0, 1]", rl.weight),
        ));
    }
    let mask = match &rl.mask {
        None => None,
        Some(m) => {
            let mask = b
                .assets
                .masks
                .iter()
                .find(|x| x.name() == m)
                .ok_or_else(|| ControllerError::UnknownMask {
                    controller: b.name.into(),
                    layer: lname.into(),
                    mask: m.clone(),
                })?;
            if mask.rig_hash() != b.rig.content_hash() {
                return Err(ControllerError::AssetForAnotherRig {
                    controller: b.name.into(),
                    asset: format!("mask '{m}'"),
                    rig: b.rig.name().into(),
                });
            }
            Some(mask.clone())
        }
    };
    if let Some(src) = &rl.sync_source {
        let bad = || ControllerError::BadSyncSource {
            controller: b.name.into(),
            layer: lname.into(),
            source: src.clone(),
        };
        let si = raw_below
            .iter()
            .position(|l| &l.name == src)
            .ok_or_else(bad)?;
        let source = below.get(si).ok_or_else(bad)?;
        if source.sync.is_some() {
            return Err(bad());
        }
        if !rl.any_state_transitions.is_empty()
            || !rl.entry_transitions.is_empty()
            || rl.states.iter().any(|s| !s.transitions.is_empty())
        {
            return Err(b.err_value(
                format!("sync layer '{lname}'"),
                "a sync layer has no transitions of its own (it follows its source's)",
            ));
        }
        for (i, s) in rl.states.iter().enumerate() {
            if rl.states[..i].iter().any(|q| q.name == s.name) {
                return Err(ControllerError::DuplicateName {
                    controller: b.name.into(),
                    what: format!("state in layer '{lname}'"),
                    name: s.name.clone(),
                });
            }
            if !source.states.iter().any(|q| q.name == s.name) {
                return Err(ControllerError::UnknownState {
                    controller: b.name.into(),
                    layer: src.clone(),
                    state: s.name.clone(),
                    used_by: format!("sync layer '{lname}'"),
                });
            }
        }
        let mut states = Vec::with_capacity(source.states.len());
        for s in &source.states {
            let own = rl.states.iter().find(|q| q.name == s.name);
            let motion = match own {
                Some(o) => b.motion(&o.motion, &format!("{lname}/{}", s.name))?,
                None => None,
            };
            states.push(State {
                name: s.name.clone(),
                name_hash: s.name_hash,
                motion,
                speed: s.speed,
                speed_param: s.speed_param,
                cycle_offset: s.cycle_offset,
                cycle_offset_param: s.cycle_offset_param,
                looping: s.looping,
                events: Vec::new(),
                transitions: 0..0,
            });
        }
        return Ok(Layer {
            name: lname.into(),
            blend: rl.blend,
            weight: rl.weight,
            mask,
            sync: Some(si),
            states,
            transitions: Vec::new(),
            any_state: 0..0,
            entry: 0..0,
            default_state: source.default_state,
        });
    }
    if rl.states.is_empty() {
        return Err(ControllerError::NoStates {
            controller: b.name.into(),
            layer: lname.into(),
        });
    }
    if rl.states.len() > MAX_STATES {
        return Err(ControllerError::TooMany {
            controller: b.name.into(),
            what: format!("states in layer '{lname}'"),
            count: rl.states.len(),
            limit: MAX_STATES,
        });
    }
    let state_id = |n: &str, used_by: &str| -> Result<StateId, ControllerError> {
        rl.states
            .iter()
            .position(|s| s.name == n)
            .map(|i| i as StateId)
            .ok_or_else(|| ControllerError::UnknownState {
                controller: b.name.into(),
                layer: lname.into(),
                state: n.into(),
                used_by: used_by.into(),
            })
    };
    let mut states = Vec::with_capacity(rl.states.len());
    let mut transitions = Vec::new();
    for (i, s) in rl.states.iter().enumerate() {
        if rl.states[..i].iter().any(|q| q.name == s.name) {
            return Err(ControllerError::DuplicateName {
                controller: b.name.into(),
                what: format!("state in layer '{lname}'"),
                name: s.name.clone(),
            });
        }
        let at = format!("{lname}/{}", s.name);
        let item = format!("state '{at}'");
        if !s.speed.is_finite() {
            return Err(b.err_value(item, format!("speed {} is not finite", s.speed)));
        }
        if !s.cycle_offset.is_finite() {
            return Err(b.err_value(
                item,
                format!("cycle offset {} is not finite", s.cycle_offset),
            ));
        }
        let mut events = Vec::with_capacity(s.events.len());
        for e in &s.events {
            if !(e.time.is_finite() && (0.0..=1.0).contains(&e.time) && e.payload.is_finite()) {
                return Err(b.err_value(
                    item,
                    format!(
                        "event '{}' needs a time in [0, 1] and a finite payload",
                        e.name
                    ),
                ));
            }
            events.push(StateEvent {
                hash: bone_hash(&e.name),
                time: e.time,
                payload: e.payload,
            });
        }
        let motion = b.motion(&s.motion, &at)?;
        let looping = s.looping.unwrap_or_else(|| {
            motion
                .as_ref()
                .is_none_or(|m| m.leaves.iter().all(|l| l.clip.looping()))
        });
        let start = transitions.len();
        for t in &s.transitions {
            transitions.push(needs_a_trigger(
                b,
                bake_transition(b, rl, t, Some(i as StateId), &state_id)?,
            )?);
        }
        states.push(State {
            name: s.name.clone(),
            name_hash: bone_hash(&s.name),
            motion,
            speed: s.speed,
            speed_param: b
                .float_param(&s.speed_parameter, &format!("the speed of state '{at}'"))?,
            cycle_offset: s.cycle_offset,
            cycle_offset_param: b.float_param(
                &s.cycle_offset_parameter,
                &format!("the cycle offset of state '{at}'"),
            )?,
            looping,
            events,
            transitions: start..transitions.len(),
        });
    }
    let any_start = transitions.len();
    for t in &rl.any_state_transitions {
        transitions.push(needs_a_trigger(
            b,
            bake_transition(b, rl, t, None, &state_id)?,
        )?);
    }
    let entry_start = transitions.len();
    for t in &rl.entry_transitions {
        let bt = bake_transition(b, rl, t, None, &state_id)?;
        if bt.destination.is_none() || bt.exit_time.is_some() {
            return Err(b.err_value(
                format!("entry transition '{}'", bt.name),
                "an entry transition leads to a state and has no exit time",
            ));
        }
        transitions.push(bt);
    }
    if transitions.len() >= usize::from(u16::MAX) {
        return Err(ControllerError::TooMany {
            controller: b.name.into(),
            what: format!("transitions in layer '{lname}'"),
            count: transitions.len(),
            limit: usize::from(u16::MAX) - 1,
        });
    }
    let default_state = match &rl.default_state {
        Some(n) => state_id(n, "the default state")?,
        None => 0,
    };
    let end = transitions.len();
    let layer = Layer {
        name: lname.into(),
        blend: rl.blend,
        weight: rl.weight,
        mask,
        sync: None,
        states,
        transitions,
        any_state: any_start..entry_start,
        entry: entry_start..end,
        default_state,
    };
    check_zero_duration_cycles(b.name, &layer)?;
    Ok(layer)
}

/// A state or any-state transition with neither conditions nor exit time would start every
/// frame; refused (entry transitions may be unconditional).
fn needs_a_trigger(b: &Baker<'_>, t: Transition) -> Result<Transition, ControllerError> {
    if t.exit_time.is_none() && t.conditions.is_empty() {
        return Err(b.err_value(
            format!("transition '{}'", t.name),
            "needs a condition or an exit time",
        ));
    }
    Ok(t)
}

fn bake_transition(
    b: &Baker<'_>,
    rl: &RawLayer,
    t: &RawTransition,
    source: Option<StateId>,
    state_id: &dyn Fn(&str, &str) -> Result<StateId, ControllerError>,
) -> Result<Transition, ControllerError> {
    let from = source
        .and_then(|s| rl.states.get(usize::from(s)))
        .map_or("any", |s| s.name.as_str());
    let (destination, to_name) = match &t.to {
        RawDestination::State(n) => {
            let used = format!("a transition from '{from}'");
            (Some(state_id(n, &used)?), n.as_str())
        }
        RawDestination::Exit => (None, "exit"),
    };
    let name = format!("{from} -> {to_name}");
    let item = format!("transition '{name}' of layer '{}'", rl.name);
    if let Some(e) = t.exit_time
        && !(e.is_finite() && e >= 0.0)
    {
        return Err(b.err_value(
            item,
            format!("exit time {e} must be finite and not negative"),
        ));
    }
    if !(t.duration.is_finite() && t.duration >= 0.0) {
        return Err(b.err_value(
            item,
            format!("duration {} must be finite and not negative", t.duration),
        ));
    }
    if !t.offset.is_finite() {
        return Err(b.err_value(item, format!("offset {} is not finite", t.offset)));
    }
    let mut conditions = Vec::with_capacity(t.conditions.len());
    for c in &t.conditions {
        conditions.push(bake_condition(b, c, &item)?);
    }
    Ok(Transition {
        name,
        source,
        destination,
        destination_hash: bone_hash(to_name),
        conditions,
        exit_time: t.exit_time,
        duration: t.duration,
        normalized_duration: t.duration_mode == DurationMode::Normalized,
        offset: t.offset,
        interruption: t.interruption,
        ordered_interruption: t.ordered_interruption,
        can_transition_to_self: t.can_transition_to_self,
    })
}

fn bake_condition(
    b: &Baker<'_>,
    c: &RawCondition,
    item: &str,
) -> Result<Condition, ControllerError> {
    use ParamKind::{Bool, Float, Int, Trigger};
    let used_by = format!("a condition of {item}");
    let int_value = || -> Result<i32, ControllerError> {
        if c.value.fract() != 0.0 || c.value < f64::from(i32::MIN) || c.value > f64::from(i32::MAX)
        {
            return Err(b.err_value(used_by.clone(), format!("{} is not an i32", c.value)));
        }
        Ok(c.value as i32)
    };
    Ok(match c.op {
        ConditionOp::Greater | ConditionOp::Less => {
            let p = b.param(&c.parameter, &[Float, Int], "a float or an int", &used_by)?;
            let kind = b.params[p.index()].kind;
            let greater = c.op == ConditionOp::Greater;
            if kind == Int {
                let v = int_value()?;
                if greater {
                    Condition::IntGreater(p, v)
                } else {
                    Condition::IntLess(p, v)
                }
            } else {
                let v = c.value as f32;
                if !v.is_finite() {
                    return Err(b.err_value(used_by, format!("{} is not a finite f32", c.value)));
                }
                if greater {
                    Condition::FloatGreater(p, v)
                } else {
                    Condition::FloatLess(p, v)
                }
            }
        }
        ConditionOp::Equals | ConditionOp::NotEquals => {
            let p = b.param(&c.parameter, &[Int], "an int", &used_by)?;
            let v = int_value()?;
            if c.op == ConditionOp::Equals {
                Condition::IntEquals(p, v)
            } else {
                Condition::IntNotEquals(p, v)
            }
        }
        ConditionOp::True | ConditionOp::False => {
            let p = b.param(&c.parameter, &[Bool], "a bool", &used_by)?;
            if c.op == ConditionOp::True {
                Condition::True(p)
            } else {
                Condition::False(p)
            }
        }
        ConditionOp::Trigger => {
            Condition::Trigger(b.param(&c.parameter, &[Trigger], "a trigger", &used_by)?)
        }
    })
}

/// Refuses a cycle of transitions that complete at once (zero duration) and need no exit time:
/// the state machine follows such transitions within one frame, so a cycle could spin.
fn check_zero_duration_cycles(controller: &str, layer: &Layer) -> Result<(), ControllerError> {
    let n = layer.states.len();
    let instant = |t: &Transition| t.duration == 0.0 && t.exit_time.is_none();
    // Where an exit leads: the entry destinations and the default state.
    let mut exit_targets: Vec<usize> = layer.transitions[layer.entry.clone()]
        .iter()
        .filter_map(|t| t.destination.map(usize::from))
        .collect();
    exit_targets.push(usize::from(layer.default_state));
    let targets = |t: &Transition| -> Vec<usize> {
        match t.destination {
            Some(d) => vec![usize::from(d)],
            None => exit_targets.clone(),
        }
    };
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (s, state) in layer.states.iter().enumerate() {
        for t in &layer.transitions[state.transitions.clone()] {
            if instant(t) {
                edges[s].extend(targets(t));
            }
        }
    }
    for t in &layer.transitions[layer.any_state.clone()] {
        if instant(t) {
            for d in targets(t) {
                for (s, e) in edges.iter_mut().enumerate() {
                    if s != d || t.can_transition_to_self {
                        e.push(d);
                    }
                }
            }
        }
    }
    // Depth-first search with colours; the grey stack is the path.
    let mut colour = vec![0u8; n];
    let mut path: Vec<usize> = Vec::new();
    for root in 0..n {
        if colour[root] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        colour[root] = 1;
        path.push(root);
        while let Some(top) = stack.last_mut() {
            let (v, k) = *top;
            if let Some(&w) = edges[v].get(k) {
                top.1 += 1;
                if colour[w] == 1 {
                    let from = path.iter().position(|&x| x == w).unwrap_or(0);
                    let mut states: Vec<String> = path[from..]
                        .iter()
                        .map(|&s| layer.states[s].name.clone())
                        .collect();
                    states.push(layer.states[w].name.clone());
                    return Err(ControllerError::ZeroDurationCycle {
                        controller: controller.into(),
                        layer: layer.name.clone(),
                        states,
                    });
                }
                if colour[w] == 0 {
                    colour[w] = 1;
                    path.push(w);
                    stack.push((w, 0));
                }
            } else {
                colour[v] = 2;
                path.pop();
                stack.pop();
            }
        }
    }
    Ok(())
}
