//! Per-entity controller state, and the job that advances every state machine by the frame
//! time and writes the animation list job 4 samples.
//!
//! One frame of one layer, in order:
//! 1. **Start**: on the first frame the layer enters through its entry transitions (or its
//!    default state) at normalised time 0.
//! 2. **Advance**: every playing state (the current one, those fading out, the destination of
//!    the active transition) advances its normalised time by `dt · speed / duration`, firing
//!    its own events on the way; the active transition advances by `dt` and completes when it
//!    reaches its duration.
//! 3. **Evaluate**: any-state transitions first, then the current state's (or, during a
//!    transition, those its interruption source allows), each in priority order; the first
//!    whose exit time has passed this frame and whose conditions hold starts, consuming its
//!    triggers. A transition of zero duration completes at once, and the new state's
//!    transitions without exit time are evaluated again in the same frame (bake refuses cycles
//!    of them).
//! 4. **Output**: each playing state's weight (the fading states' frozen weights times
//!    `1 − progress`, the destination's `progress`) times its blend tree's leaf weights gives
//!    one animation per clip of positive weight, at the state's normalised time times the
//!    clip's duration.

use super::blend_tree::{
    BlendTreeKind, MAX_CHILDREN, simple_directional_sorted, weights_1d, weights_cartesian,
    weights_direct, weights_directional,
};
use super::params::{ParamId, ParamKind, Values};
use super::{
    Condition, Controller, ControllerError, InterruptionSource, Layer, MAX_FADING_STATES,
    MAX_LEAVES, Motion, MotionNode, State, StateId, Transition, TransitionId,
};
use crate::asset::{BoneHash, Rig};
use crate::component::{AnimationToProcess, Animations, CurveValues, LayerWeights, RigRef};
use glam::Vec2;
use sinew_runtime::store::Entity;
use std::sync::Arc;

const NONE: u16 = u16::MAX;
const MAX_CYCLES_PER_FRAME: f32 = 1e6;

/// What a controller event reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ControllerEventKind {
    /// A state's own event (its name is the event's name).
    State {
        /// The state.
        state: StateId,
    },
    /// A state started playing (a transition towards it started, or the layer entered it).
    StateEnter {
        /// The state.
        state: StateId,
    },
    /// A state stopped playing (the transition away from it completed).
    StateExit {
        /// The state.
        state: StateId,
    },
    /// A transition started.
    TransitionStart {
        /// The transition.
        transition: TransitionId,
    },
    /// A transition completed.
    TransitionEnd {
        /// The transition.
        transition: TransitionId,
    },
    /// A transition was interrupted by another.
    TransitionInterrupted {
        /// The interrupted transition.
        transition: TransitionId,
    },
}

/// An event of the controller during the last frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ControllerEvent {
    /// The layer.
    pub layer: u8,
    /// What happened.
    pub kind: ControllerEventKind,
    /// Name hash: the event's for state events, the state's for enter and exit, the
    /// destination state's (or `"exit"`) for transitions.
    pub name: BoneHash,
    /// The state's normalised time (state events: the event's time; transitions: the
    /// destination's start time).
    pub time: f32,
    /// User value (state events), else 0.
    pub payload: f32,
    /// The state's weight in its layer when it fired (1 for transitions).
    pub weight: f32,
}

/// A state as it plays on a layer.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Playing {
    state: StateId,
    /// Normalised time, minus `loops` whole loops taken out to keep precision.
    time: f32,
    previous: f32,
    loops: i32,
    /// Weight among the fading states (sums to 1 over them).
    weight: f32,
    /// Not yet evaluated after a frame's advance: its first exit-time interval includes its
    /// start (so exit time 0, or one equal to the transition's offset, is reached).
    fresh: bool,
    /// Advanced in this frame's update (a state entered this frame is not).
    advanced: bool,
    /// The state whose transitions are the "current" ones.
    current: bool,
}

/// One layer's playing states and transition.
#[derive(Clone, Debug, PartialEq)]
struct LayerRun {
    sources: [Playing; MAX_FADING_STATES],
    n_sources: u8,
    target: Playing,
    transition: u16,
    progress: f32,
    duration: f32,
    weight: f32,
    started: bool,
}

impl LayerRun {
    fn new(weight: f32) -> Self {
        Self {
            sources: [Playing::default(); MAX_FADING_STATES],
            n_sources: 0,
            target: Playing::default(),
            transition: NONE,
            progress: 0.0,
            duration: 0.0,
            weight,
            started: false,
        }
    }
    fn in_transition(&self) -> bool {
        self.transition != NONE
    }
    /// The destination's share of the layer, `progress / duration` in `[0, 1]`.
    fn blend(&self) -> f32 {
        if !self.in_transition() {
            0.0
        } else if self.duration > 0.0 {
            (self.progress / self.duration).clamp(0.0, 1.0)
        } else {
            1.0
        }
    }
    fn sources(&self) -> &[Playing] {
        &self.sources[..usize::from(self.n_sources).min(MAX_FADING_STATES)]
    }
    fn current(&self) -> Option<&Playing> {
        let s = self.sources();
        s.iter().find(|p| p.current).or(s.first())
    }
}

/// A state's weight and normalised time on a layer (see [`ControllerState::playing`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlayingState {
    /// The state.
    pub state: StateId,
    /// Its weight in the layer.
    pub weight: f32,
    /// Its normalised time (whole loops included).
    pub normalized_time: f32,
}

/// The per-entity controller component: the shared [`Controller`], parameter values, each
/// layer's playing states and transition, and the last frame's events.
///
/// Heap: 4 bytes per parameter and [`ControllerState::LAYER_BYTES`] per layer, plus the event
/// buffer (empty unless events fire; its memory is kept between frames).
#[derive(Clone, Debug)]
pub struct ControllerState {
    controller: Arc<Controller>,
    values: Values,
    layers: Box<[LayerRun]>,
    events: Vec<ControllerEvent>,
    transitions_started: u64,
}

impl ControllerState {
    /// Bytes of run-time state per layer.
    pub const LAYER_BYTES: usize = std::mem::size_of::<LayerRun>();

    /// The state of one entity that `controller` animates, with default parameter values.
    ///
    /// # Errors
    /// [`ControllerError::ControllerForAnotherRig`] when `rig` is not the controller's rig.
    pub fn new(controller: Arc<Controller>, rig: &Rig) -> Result<Self, ControllerError> {
        check_rig(None, &controller, rig)?;
        Ok(Self {
            values: Values::new(&controller.params),
            layers: controller
                .layers
                .iter()
                .map(|l| LayerRun::new(l.weight))
                .collect(),
            // Room for an event per layer, reserved here, where the entity is made, rather than
            // by the worker thread of its first frame: memory allocated on one thread and freed
            // on another (despawn) is what fragments per-thread allocator arenas under churn.
            events: Vec::with_capacity(controller.layers.len()),
            controller,
            transitions_started: 0,
        })
    }

    /// An empty animation list with room for what the controller lists outside transitions
    /// (per layer, its largest motion's clips), for the entity's [`Animations`] at spawn: the
    /// controller fills it without allocating on whichever worker thread runs it, and a
    /// transition (two states' clips, up to [`MAX_FADING_STATES`] more when interrupted)
    /// grows it once. Room for every case would cost its memory on every entity, and more
    /// scattered memory slows the nodes that walk the crowd.
    pub fn animation_list(&self) -> Animations {
        let room: usize = self
            .controller
            .layers
            .iter()
            .map(|l| {
                let leaves = l.states.iter().filter_map(|s| s.motion.as_ref());
                leaves.map(|m| m.leaves.len()).max().unwrap_or(0)
            })
            .sum();
        Animations::new(Vec::with_capacity(room))
    }

    /// The controller.
    pub fn controller(&self) -> &Arc<Controller> {
        &self.controller
    }

    /// Bytes this state holds, inline and on the heap (the event buffer at its capacity).
    pub fn bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.values.0.len() * 4
            + self.layers.len() * Self::LAYER_BYTES
            + self.events.capacity() * std::mem::size_of::<ControllerEvent>()
    }

    fn id(&self, name: &str, used_by: &str) -> Result<ParamId, ControllerError> {
        self.controller
            .parameter(name)
            .ok_or_else(|| ControllerError::UnknownParameter {
                controller: self.controller.name.clone(),
                parameter: name.into(),
                used_by: used_by.into(),
            })
    }

    fn kind_check(
        &self,
        id: ParamId,
        wanted: &[ParamKind],
        expected: &'static str,
        used_by: &str,
    ) -> Result<(), ControllerError> {
        let p = self.controller.params.get(id.index()).ok_or_else(|| {
            ControllerError::UnknownParameter {
                controller: self.controller.name.clone(),
                parameter: format!("#{}", id.index()),
                used_by: used_by.into(),
            }
        })?;
        if !wanted.contains(&p.kind) {
            return Err(ControllerError::ParameterKind {
                controller: self.controller.name.clone(),
                parameter: p.name.clone(),
                kind: p.kind,
                expected,
                used_by: used_by.into(),
            });
        }
        Ok(())
    }

    /// Sets a float parameter by id (an id from this state's controller).
    ///
    /// # Errors
    /// [`ControllerError::ParameterKind`] for a parameter that is not a float;
    /// [`ControllerError::NotFinite`] for NaN or an infinity.
    pub fn set_float_id(&mut self, id: ParamId, value: f32) -> Result<(), ControllerError> {
        self.kind_check(id, &[ParamKind::Float], "a float", "set_float")?;
        if !value.is_finite() {
            return Err(ControllerError::NotFinite {
                controller: self.controller.name.clone(),
                parameter: self.controller.params[id.index()].name.clone(),
                value,
            });
        }
        self.values.set_raw(id, value.to_bits());
        Ok(())
    }
    /// Sets a float parameter by name.
    ///
    /// # Errors
    /// [`ControllerError::UnknownParameter`], or as [`ControllerState::set_float_id`].
    pub fn set_float(&mut self, name: &str, value: f32) -> Result<(), ControllerError> {
        let id = self.id(name, "set_float")?;
        self.set_float_id(id, value)
    }
    /// Sets an int parameter.
    ///
    /// # Errors
    /// [`ControllerError::UnknownParameter`] or [`ControllerError::ParameterKind`].
    pub fn set_int(&mut self, name: &str, value: i32) -> Result<(), ControllerError> {
        let id = self.id(name, "set_int")?;
        self.kind_check(id, &[ParamKind::Int], "an int", "set_int")?;
        self.values.set_raw(id, value as u32);
        Ok(())
    }
    /// Sets a bool parameter.
    ///
    /// # Errors
    /// [`ControllerError::UnknownParameter`] or [`ControllerError::ParameterKind`].
    pub fn set_bool(&mut self, name: &str, value: bool) -> Result<(), ControllerError> {
        let id = self.id(name, "set_bool")?;
        self.kind_check(id, &[ParamKind::Bool], "a bool", "set_bool")?;
        self.values.set_raw(id, u32::from(value));
        Ok(())
    }
    /// Sets a trigger (it stays set until a transition that tests it starts).
    ///
    /// # Errors
    /// [`ControllerError::UnknownParameter`] or [`ControllerError::ParameterKind`].
    pub fn set_trigger(&mut self, name: &str) -> Result<(), ControllerError> {
        let id = self.id(name, "set_trigger")?;
        self.set_trigger_id(id)
    }
    /// Sets a trigger by id.
    ///
    /// # Errors
    /// [`ControllerError::ParameterKind`] for a parameter that is not a trigger.
    pub fn set_trigger_id(&mut self, id: ParamId) -> Result<(), ControllerError> {
        self.kind_check(id, &[ParamKind::Trigger], "a trigger", "set_trigger")?;
        self.values.set_raw(id, 1);
        Ok(())
    }
    /// Clears a trigger.
    ///
    /// # Errors
    /// [`ControllerError::UnknownParameter`] or [`ControllerError::ParameterKind`].
    pub fn reset_trigger(&mut self, name: &str) -> Result<(), ControllerError> {
        let id = self.id(name, "reset_trigger")?;
        self.kind_check(id, &[ParamKind::Trigger], "a trigger", "reset_trigger")?;
        self.values.set_raw(id, 0);
        Ok(())
    }
    /// A float parameter's value.
    ///
    /// # Errors
    /// [`ControllerError::UnknownParameter`] or [`ControllerError::ParameterKind`].
    pub fn float(&self, name: &str) -> Result<f32, ControllerError> {
        let id = self.id(name, "float")?;
        self.kind_check(id, &[ParamKind::Float], "a float", "float")?;
        Ok(self.values.float(id))
    }
    /// An int parameter's value.
    ///
    /// # Errors
    /// [`ControllerError::UnknownParameter`] or [`ControllerError::ParameterKind`].
    pub fn int(&self, name: &str) -> Result<i32, ControllerError> {
        let id = self.id(name, "int")?;
        self.kind_check(id, &[ParamKind::Int], "an int", "int")?;
        Ok(self.values.int(id))
    }
    /// A bool parameter's or a trigger's value.
    ///
    /// # Errors
    /// [`ControllerError::UnknownParameter`] or [`ControllerError::ParameterKind`].
    pub fn bool(&self, name: &str) -> Result<bool, ControllerError> {
        let id = self.id(name, "bool")?;
        self.kind_check(
            id,
            &[ParamKind::Bool, ParamKind::Trigger],
            "a bool or a trigger",
            "bool",
        )?;
        Ok(self.values.flag(id))
    }

    /// Sets a layer's weight (in `[0, 1]`).
    ///
    /// # Errors
    /// [`ControllerError::NoSuchLayer`]; [`ControllerError::BadValue`] outside `[0, 1]`.
    pub fn set_layer_weight(&mut self, layer: usize, weight: f32) -> Result<(), ControllerError> {
        let name = self.controller.name.clone();
        if !(weight.is_finite() && (0.0..=1.0).contains(&weight)) {
            return Err(ControllerError::BadValue {
                controller: name,
                item: format!("layer {layer}"),
                reason: format!("weight {weight} is not in [0, 1]"),
            });
        }
        let l = self
            .layers
            .get_mut(layer)
            .ok_or(ControllerError::NoSuchLayer {
                controller: name,
                layer,
            })?;
        l.weight = weight;
        Ok(())
    }
    /// A layer's weight.
    pub fn layer_weight(&self, layer: usize) -> Option<f32> {
        self.layers.get(layer).map(|l| l.weight)
    }

    /// The run-time state a layer plays from (a sync layer's source).
    fn run_of(&self, layer: usize) -> Option<&LayerRun> {
        let l = self.controller.layers.get(layer)?;
        self.layers.get(l.sync.unwrap_or(layer))
    }
    /// The layer's current state (the source of its transition, if one is active).
    pub fn current_state(&self, layer: usize) -> Option<StateId> {
        self.run_of(layer)?.current().map(|p| p.state)
    }
    /// The current state's normalised time (whole loops included).
    pub fn normalized_time(&self, layer: usize) -> Option<f32> {
        self.run_of(layer)?
            .current()
            .map(|p| p.loops as f32 + p.time)
    }
    /// The active transition and its progress in `[0, 1]`.
    pub fn transition(&self, layer: usize) -> Option<(TransitionId, f32)> {
        let r = self.run_of(layer)?;
        r.in_transition().then(|| (r.transition, r.blend()))
    }
    /// Every playing state of a layer with its weight (summing to 1) and normalised time.
    pub fn playing(&self, layer: usize) -> Vec<PlayingState> {
        let Some(r) = self.run_of(layer) else {
            return Vec::new();
        };
        let p = r.blend();
        let mut v: Vec<PlayingState> = r
            .sources()
            .iter()
            .map(|s| PlayingState {
                state: s.state,
                weight: s.weight * (1.0 - p),
                normalized_time: s.loops as f32 + s.time,
            })
            .collect();
        if r.in_transition() {
            v.push(PlayingState {
                state: r.target.state,
                weight: p,
                normalized_time: r.target.loops as f32 + r.target.time,
            });
        }
        v
    }
    /// The last frame's events.
    pub fn events(&self) -> &[ControllerEvent] {
        &self.events
    }
    /// Transitions started since the state was created.
    pub fn transitions_started(&self) -> u64 {
        self.transitions_started
    }

    /// Advances every layer by `dt` seconds (after taking bound curve values from `curves`,
    /// the previous frame's), then writes the animation list and layer weights.
    pub fn step(
        &mut self,
        dt: f32,
        curves: Option<&CurveValues>,
        animations: &mut Animations,
        layer_weights: &mut LayerWeights,
    ) {
        self.update(dt, curves);
        self.write_output(dt, animations, layer_weights);
    }

    fn update(&mut self, dt: f32, curves: Option<&CurveValues>) {
        let Self {
            controller,
            values,
            layers,
            events,
            transitions_started,
        } = self;
        let ctl: &Controller = controller;
        events.clear();
        if let Some(c) = curves {
            for (hash, p) in &ctl.curve_bindings {
                if let Some((_, v)) = c.values().iter().find(|(h, _)| h == hash)
                    && v.is_finite()
                {
                    values.set_raw(*p, v.to_bits());
                }
            }
        }
        for (li, (layer, run)) in ctl.layers.iter().zip(layers.iter_mut()).enumerate() {
            if layer.sync.is_none() {
                let mut cx = LayerCx {
                    li: li as u8,
                    layer,
                    values,
                    events,
                    started: transitions_started,
                };
                cx.update(run, dt);
            }
        }
    }

    fn write_output(&self, dt: f32, animations: &mut Animations, layer_weights: &mut LayerWeights) {
        let ctl: &Controller = &self.controller;
        let list = animations.list_mut();
        let mut k = 0usize;
        let mut leaf_w = [0.0f32; MAX_LEAVES];
        for (li, layer) in ctl.layers.iter().enumerate() {
            let Some(own) = self.layers.get(li) else {
                continue;
            };
            if let Some(w) = layer_weights.0.get_mut(li) {
                *w = own.weight;
            }
            let Some(run) = self.layers.get(layer.sync.unwrap_or(li)) else {
                continue;
            };
            let p = run.blend();
            let target = run.in_transition().then_some((&run.target, p));
            let playing = run
                .sources()
                .iter()
                .map(|s| (s, s.weight * (1.0 - p)))
                .chain(target);
            for (play, w) in playing {
                if w <= 0.0 {
                    continue;
                }
                let Some(state) = layer.states.get(usize::from(play.state)) else {
                    continue;
                };
                let Some(motion) = &state.motion else {
                    continue;
                };
                let leaves = &mut leaf_w[..motion.leaves.len().min(MAX_LEAVES)];
                leaves.fill(0.0);
                eval_node(&motion.root, &self.values, 1.0, leaves);
                let rate = state_speed(state, &self.values) / motion_cycle(motion, leaves);
                let offset = cycle_offset(state, &self.values);
                let n1 = output_time(play.time, play.loops, offset, state.looping);
                let n0 = output_time(play.previous, play.loops, offset, state.looping);
                for (leaf, &lw) in motion.leaves.iter().zip(leaves.iter()) {
                    let weight = lw * w;
                    if weight <= 0.0 {
                        continue;
                    }
                    let d = leaf.clip.duration();
                    let entry = Entry {
                        time: n1 * d,
                        previous_time: n0 * d,
                        speed: if dt != 0.0 { rate * d } else { 0.0 },
                        weight,
                        layer: li as u8,
                        looping: state.looping,
                    };
                    put(list, k, &leaf.clip, layer, entry);
                    k += 1;
                }
            }
        }
        list.truncate(k);
    }
}

struct Entry {
    time: f32,
    previous_time: f32,
    speed: f32,
    weight: f32,
    layer: u8,
    looping: bool,
}

/// Writes animation `k` of the list, reusing the entry (and its `Arc`s) when it already
/// holds the same clip and mask, so that a steady list costs no reference counting.
fn put(
    list: &mut Vec<AnimationToProcess>,
    k: usize,
    clip: &Arc<crate::asset::Clip>,
    layer: &Layer,
    e: Entry,
) {
    if let Some(a) = list.get_mut(k) {
        if !Arc::ptr_eq(&a.clip, clip) {
            a.clip = clip.clone();
        }
        let same_mask = match (&a.mask, &layer.mask) {
            (Some(x), Some(y)) => Arc::ptr_eq(x, y),
            (None, None) => true,
            _ => false,
        };
        if !same_mask {
            a.mask = layer.mask.clone();
        }
        a.time = e.time;
        a.previous_time = e.previous_time;
        a.speed = e.speed;
        a.weight = e.weight;
        a.layer = e.layer;
        a.blend = layer.blend;
        a.looping = Some(e.looping);
    } else {
        list.push(AnimationToProcess {
            clip: clip.clone(),
            time: e.time,
            previous_time: e.previous_time,
            speed: e.speed,
            weight: e.weight,
            layer: e.layer,
            blend: layer.blend,
            mask: layer.mask.clone(),
            looping: Some(e.looping),
        });
    }
}

/// The normalised time a clip samples: looping states wrap (the whole loops were taken out,
/// so `time` stays small), others hold their ends.
fn output_time(time: f32, loops: i32, offset: f32, looping: bool) -> f32 {
    if looping {
        time + offset
    } else {
        (loops as f32 + time + offset).clamp(0.0, 1.0)
    }
}

fn state_speed(state: &State, values: &Values) -> f32 {
    state.speed * state.speed_param.map_or(1.0, |p| values.float(p))
}

fn cycle_offset(state: &State, values: &Values) -> f32 {
    state
        .cycle_offset_param
        .map_or(state.cycle_offset, |p| values.float(p))
}

/// Seconds per normalised unit: the leaves' cycles averaged by weight (their plain mean when
/// no leaf has weight).
fn motion_cycle(motion: &Motion, leaves: &[f32]) -> f32 {
    let (mut sum, mut w) = (0.0f32, 0.0f32);
    for (leaf, &lw) in motion.leaves.iter().zip(leaves) {
        sum += lw * leaf.cycle;
        w += lw;
    }
    if w > 0.0 {
        sum / w
    } else if motion.leaves.is_empty() {
        1.0
    } else {
        motion.leaves.iter().map(|l| l.cycle).sum::<f32>() / motion.leaves.len() as f32
    }
}

/// Adds `scale ×` each leaf's weight under `node` into `out`.
fn eval_node(node: &MotionNode, values: &Values, scale: f32, out: &mut [f32]) {
    match node {
        MotionNode::Leaf(i) => {
            if let Some(o) = out.get_mut(usize::from(*i)) {
                *o += scale;
            }
        }
        MotionNode::Tree(t) => {
            let n = t.children.len().min(MAX_CHILDREN);
            let mut w = [0.0f32; MAX_CHILDREN];
            let w = &mut w[..n];
            let x = t.x.map_or(0.0, |p| values.float(p));
            let y = t.y.map_or(0.0, |p| values.float(p));
            match t.kind {
                BlendTreeKind::OneD => weights_1d(&t.thresholds, x, w),
                BlendTreeKind::SimpleDirectional => {
                    simple_directional_sorted(&t.points, &t.sorted, Vec2::new(x, y), w);
                }
                BlendTreeKind::FreeformDirectional => {
                    weights_directional(&t.points, Vec2::new(x, y), w);
                }
                BlendTreeKind::FreeformCartesian => {
                    weights_cartesian(&t.points, Vec2::new(x, y), w);
                }
                BlendTreeKind::Direct => {
                    let mut v = [0.0f32; MAX_CHILDREN];
                    for (vi, p) in v.iter_mut().zip(&t.direct) {
                        *vi = values.float(*p);
                    }
                    weights_direct(&v[..n], t.normalize, w);
                }
            }
            for (child, &cw) in t.children.iter().zip(w.iter()) {
                if cw > 0.0 {
                    eval_node(child, values, scale * cw, out);
                }
            }
        }
    }
}

/// Seconds per normalised unit of a state at the current parameters (1 for an empty state).
fn state_cycle(state: &State, values: &Values) -> f32 {
    let Some(motion) = &state.motion else {
        return 1.0;
    };
    let mut leaf_w = [0.0f32; MAX_LEAVES];
    let leaves = &mut leaf_w[..motion.leaves.len().min(MAX_LEAVES)];
    eval_node(&motion.root, values, 1.0, leaves);
    motion_cycle(motion, leaves)
}

/// Whether normalised exit time `e` was reached while `p` went from `previous` to `time` this
/// frame: below 1, at any loop (`k + e`); from 1 up, once. The interval is open at its start,
/// except on a state's first frame.
fn exit_time_passed(e: f32, p: &Playing) -> bool {
    let base = f64::from(p.loops);
    let (a, b) = (base + f64::from(p.previous), base + f64::from(p.time));
    let (lo, hi) = if b >= a { (a, b) } else { (b, a) };
    let e = f64::from(e);
    let point = if e < 1.0 { (hi - e).floor() + e } else { e };
    point <= hi && (point > lo || (p.fresh && point >= lo))
}

fn holds(c: &Condition, v: &Values) -> bool {
    match *c {
        Condition::FloatGreater(p, x) => v.float(p) > x,
        Condition::FloatLess(p, x) => v.float(p) < x,
        Condition::IntEquals(p, x) => v.int(p) == x,
        Condition::IntNotEquals(p, x) => v.int(p) != x,
        Condition::IntGreater(p, x) => v.int(p) > x,
        Condition::IntLess(p, x) => v.int(p) < x,
        Condition::True(p) | Condition::Trigger(p) => v.flag(p),
        Condition::False(p) => !v.flag(p),
    }
}

/// Calls `fire(event)` for each event whose time normalised time passed going from `a` to `b`
/// (`(a, b]` forward, `[b, a)` backward): at every loop for looping states, within `[0, 1]`
/// for the others.
fn passed_events(
    events: &[super::StateEvent],
    a: f64,
    b: f64,
    looping: bool,
    mut fire: impl FnMut(&super::StateEvent),
) {
    if a == b {
        return;
    }
    for e in events {
        let t = f64::from(e.time);
        let passes = if looping {
            if b > a {
                (b - t).floor() - (a - t).floor()
            } else {
                (a - t).ceil() - (b - t).ceil()
            }
        } else {
            let (x, y) = (a.clamp(0.0, 1.0), b.clamp(0.0, 1.0));
            let hit = if b > a {
                x < t && t <= y
            } else {
                y <= t && t < x
            };
            f64::from(u8::from(hit))
        };
        let passes = (passes.max(0.0) as i64).min(crate::j5_user_curves::MAX_PASSES_PER_EVENT);
        for _ in 0..passes {
            fire(e);
        }
    }
}

/// One layer's update, with what it reads and writes.
struct LayerCx<'a> {
    li: u8,
    layer: &'a Layer,
    values: &'a mut Values,
    events: &'a mut Vec<ControllerEvent>,
    started: &'a mut u64,
}

impl LayerCx<'_> {
    fn push(
        &mut self,
        kind: ControllerEventKind,
        name: BoneHash,
        time: f32,
        payload: f32,
        weight: f32,
    ) {
        self.events.push(ControllerEvent {
            layer: self.li,
            kind,
            name,
            time,
            payload,
            weight,
        });
    }

    fn state(&self, s: StateId) -> Option<&State> {
        self.layer.states.get(usize::from(s))
    }

    fn state_hash(&self, s: StateId) -> BoneHash {
        self.state(s).map(|x| x.name_hash).unwrap_or(BoneHash(0))
    }

    fn enter(&mut self, s: StateId, time: f32, weight: f32) {
        let h = self.state_hash(s);
        self.push(
            ControllerEventKind::StateEnter { state: s },
            h,
            time,
            0.0,
            weight,
        );
    }

    fn exit(&mut self, p: &Playing) {
        let h = self.state_hash(p.state);
        self.push(
            ControllerEventKind::StateExit { state: p.state },
            h,
            p.loops as f32 + p.time,
            0.0,
            p.weight,
        );
    }

    /// The entry's destination: the first entry transition whose conditions hold (consuming
    /// its triggers), else the default state.
    fn entry_destination(&mut self) -> StateId {
        let layer = self.layer;
        for t in &layer.transitions[layer.entry.clone()] {
            if t.conditions.iter().all(|c| holds(c, self.values)) {
                self.consume(t);
                if let Some(d) = t.destination {
                    return d;
                }
            }
        }
        layer.default_state
    }

    fn consume(&mut self, t: &Transition) {
        for c in &t.conditions {
            if let Condition::Trigger(p) = c {
                self.values.set_raw(*p, 0);
            }
        }
    }

    fn update(&mut self, run: &mut LayerRun, dt: f32) {
        if !run.started {
            run.started = true;
            let s = self.entry_destination();
            run.sources[0] = Playing {
                state: s,
                weight: 1.0,
                fresh: true,
                current: true,
                ..Playing::default()
            };
            run.n_sources = 1;
            run.transition = NONE;
            self.enter(s, 0.0, 1.0);
        }
        // Advance every playing state, then the transition.
        let n = usize::from(run.n_sources).min(MAX_FADING_STATES);
        let p = run.blend();
        for i in 0..n {
            let mut pl = run.sources[i];
            let w = pl.weight * (1.0 - p);
            self.advance(&mut pl, dt, w);
            run.sources[i] = pl;
        }
        if run.in_transition() {
            let mut t = run.target;
            self.advance(&mut t, dt, p);
            run.target = t;
            run.progress += dt;
            if run.progress >= run.duration {
                self.complete(run);
            }
        }
        // Evaluate; follow transitions that complete at once.
        let mut exit_ok = true;
        for _ in 0..=self.layer.states.len() {
            let Some((t, from_next)) = self.choose(run, exit_ok) else {
                break;
            };
            if !self.start(run, t, from_next) {
                break;
            }
            exit_ok = false;
        }
        // A state's first advanced frame has been evaluated: its start is behind it.
        for pl in run
            .sources
            .iter_mut()
            .chain(std::iter::once(&mut run.target))
        {
            if pl.advanced {
                pl.fresh = false;
            }
            pl.advanced = false;
        }
    }

    fn advance(&mut self, pl: &mut Playing, dt: f32, weight: f32) {
        let layer = self.layer;
        let Some(state) = layer.states.get(usize::from(pl.state)) else {
            return;
        };
        // Whole loops out first, so the time keeps its precision (exact: |time| ≥ k).
        let k = pl.time.floor();
        if k != 0.0 && k.abs() < 1e9 {
            pl.time -= k;
            pl.loops = pl.loops.saturating_add(k as i32);
        }
        pl.previous = pl.time;
        pl.advanced = true;
        let rate = state_speed(state, self.values) / state_cycle(state, self.values);
        // At most a million cycles a frame, so that an absurd speed cannot overflow the time.
        pl.time += (dt * rate).clamp(-MAX_CYCLES_PER_FRAME, MAX_CYCLES_PER_FRAME);
        if !state.events.is_empty() && weight > 0.0 {
            let base = f64::from(pl.loops);
            let (a, b) = (base + f64::from(pl.previous), base + f64::from(pl.time));
            let (li, s) = (self.li, pl.state);
            let out = &mut *self.events;
            passed_events(&state.events, a, b, state.looping, |e| {
                out.push(ControllerEvent {
                    layer: li,
                    kind: ControllerEventKind::State { state: s },
                    name: e.hash,
                    time: e.time,
                    payload: e.payload,
                    weight,
                });
            });
        }
    }

    /// Completes the active transition: the destination becomes the only, current state.
    fn complete(&mut self, run: &mut LayerRun) {
        let n = usize::from(run.n_sources).min(MAX_FADING_STATES);
        for i in 0..n {
            let pl = run.sources[i];
            self.exit(&pl);
        }
        let t = run.transition;
        let h = self
            .layer
            .transitions
            .get(usize::from(t))
            .map(|x| x.destination_hash)
            .unwrap_or(BoneHash(0));
        self.push(
            ControllerEventKind::TransitionEnd { transition: t },
            h,
            0.0,
            0.0,
            1.0,
        );
        let mut target = run.target;
        target.weight = 1.0;
        target.current = true;
        run.sources = [Playing::default(); MAX_FADING_STATES];
        run.sources[0] = target;
        run.n_sources = 1;
        run.transition = NONE;
        run.progress = 0.0;
        run.duration = 0.0;
    }

    /// The transition to start now, if any, and whether it leaves the destination of the
    /// active transition (a "next" interruption).
    fn choose(&self, run: &LayerRun, exit_ok: bool) -> Option<(TransitionId, bool)> {
        let layer = self.layer;
        let current = *run.current()?;
        let in_transition = run.in_transition();
        for ti in layer.any_state.clone() {
            let t = &layer.transitions[ti];
            let blocked_state = if in_transition {
                run.target.state
            } else {
                current.state
            };
            if !t.can_transition_to_self && t.destination == Some(blocked_state) {
                continue;
            }
            if self.passes(t, &current, exit_ok) {
                return Some((ti as TransitionId, false));
            }
        }
        let own = |s: StateId| {
            layer
                .states
                .get(usize::from(s))
                .map_or(0..0, |x| x.transitions.clone())
        };
        if !in_transition {
            for ti in own(current.state) {
                if self.passes(&layer.transitions[ti], &current, exit_ok) {
                    return Some((ti as TransitionId, false));
                }
            }
            return None;
        }
        let active_i = usize::from(run.transition);
        let active = layer.transitions.get(active_i)?;
        let order: &[bool] = match active.interruption {
            InterruptionSource::None => &[],
            InterruptionSource::Current => &[false],
            InterruptionSource::Next => &[true],
            InterruptionSource::CurrentThenNext => &[false, true],
            InterruptionSource::NextThenCurrent => &[true, false],
        };
        for &next in order {
            let (play, range) = if next {
                (run.target, own(run.target.state))
            } else {
                (current, own(current.state))
            };
            for ti in range {
                if ti == active_i {
                    continue;
                }
                // Ordered: only the source state's transitions of higher priority.
                if !next
                    && active.ordered_interruption
                    && active.source == Some(current.state)
                    && ti > active_i
                {
                    continue;
                }
                if self.passes(&layer.transitions[ti], &play, exit_ok) {
                    return Some((ti as TransitionId, next));
                }
            }
        }
        None
    }

    fn passes(&self, t: &Transition, play: &Playing, exit_ok: bool) -> bool {
        if let Some(e) = t.exit_time
            && !(exit_ok && exit_time_passed(e, play))
        {
            return false;
        }
        t.conditions.iter().all(|c| holds(c, self.values))
    }

    /// Starts transition `ti`; returns whether it completed at once (zero duration).
    fn start(&mut self, run: &mut LayerRun, ti: TransitionId, from_next: bool) -> bool {
        let layer = self.layer;
        let Some(t) = layer.transitions.get(usize::from(ti)) else {
            return false;
        };
        self.consume(t);
        let dest = match t.destination {
            Some(d) => d,
            None => self.entry_destination(),
        };
        let source_play = if from_next {
            Some(run.target)
        } else {
            run.current().copied()
        };
        let duration = if t.normalized_duration {
            let (cycle, speed) = source_play
                .and_then(|p| self.state(p.state))
                .map_or((1.0, 1.0), |s| {
                    (state_cycle(s, self.values), state_speed(s, self.values))
                });
            let speed = if speed != 0.0 { speed.abs() } else { 1.0 };
            t.duration * cycle / speed
        } else {
            t.duration
        };
        if run.in_transition() {
            self.interrupt(run, from_next);
        }
        run.target = Playing {
            state: dest,
            time: t.offset,
            previous: t.offset,
            loops: 0,
            weight: 1.0,
            fresh: true,
            advanced: false,
            current: false,
        };
        run.transition = ti;
        run.progress = 0.0;
        run.duration = duration;
        *self.started += 1;
        self.push(
            ControllerEventKind::TransitionStart { transition: ti },
            t.destination_hash,
            t.offset,
            0.0,
            1.0,
        );
        self.enter(dest, t.offset, 0.0);
        if duration <= 0.0 {
            self.complete(run);
            return true;
        }
        false
    }

    /// Freezes the blend of the interrupted transition as the new fading set: each state keeps
    /// its current weight (and keeps playing); past [`MAX_FADING_STATES`] the lightest
    /// non-current state stops and the rest are renormalised.
    fn interrupt(&mut self, run: &mut LayerRun, from_next: bool) {
        let p = run.blend();
        let h = self
            .layer
            .transitions
            .get(usize::from(run.transition))
            .map(|x| x.destination_hash)
            .unwrap_or(BoneHash(0));
        self.push(
            ControllerEventKind::TransitionInterrupted {
                transition: run.transition,
            },
            h,
            0.0,
            0.0,
            1.0,
        );
        let mut all: [Playing; MAX_FADING_STATES + 1] = [Playing::default(); MAX_FADING_STATES + 1];
        let mut n = 0;
        for s in run.sources() {
            let mut s = *s;
            s.weight *= 1.0 - p;
            if from_next {
                s.current = false;
            }
            all[n] = s;
            n += 1;
        }
        let mut t = run.target;
        t.weight = p;
        t.current = from_next;
        all[n] = t;
        n += 1;
        // Drop states of no weight, then the lightest while too many.
        let mut kept = 0;
        for i in 0..n {
            let s = all[i];
            if s.weight > 0.0 || s.current {
                all[kept] = s;
                kept += 1;
            } else {
                self.exit(&s);
            }
        }
        let mut n = kept;
        while n > MAX_FADING_STATES {
            let mut lightest = None;
            for (i, s) in all[..n].iter().enumerate() {
                if !s.current && lightest.is_none_or(|(_, w)| s.weight < w) {
                    lightest = Some((i, s.weight));
                }
            }
            let Some((i, _)) = lightest else { break };
            let s = all[i];
            self.exit(&s);
            for j in i..n - 1 {
                all[j] = all[j + 1];
            }
            n -= 1;
        }
        let sum: f32 = all[..n].iter().map(|s| s.weight).sum();
        run.sources = [Playing::default(); MAX_FADING_STATES];
        for (i, s) in all[..n.min(MAX_FADING_STATES)].iter().enumerate() {
            let mut s = *s;
            s.weight = if sum > 0.0 {
                s.weight / sum
            } else {
                1.0 / n as f32
            };
            run.sources[i] = s;
        }
        run.n_sources = n.min(MAX_FADING_STATES) as u8;
    }
}

fn check_rig(
    entity: Option<Entity>,
    controller: &Controller,
    rig: &Rig,
) -> Result<(), ControllerError> {
    if controller.rig_hash != rig.content_hash() {
        return Err(ControllerError::ControllerForAnotherRig {
            entity,
            controller: controller.name.clone(),
            controller_rig: controller.rig_name.clone(),
            rig: rig.name().into(),
        });
    }
    Ok(())
}

/// The controller job over one run of entities: advances each entity's [`ControllerState`]
/// by `dt` and rewrites its [`Animations`] and [`LayerWeights`].
#[derive(Debug)]
pub struct ControllerJob<'a> {
    /// Entity handles (for errors).
    pub entities: &'a [Entity],
    /// Each entity's rig.
    pub rigs: &'a [RigRef],
    /// Each entity's controller state.
    pub states: &'a mut [ControllerState],
    /// Each entity's animation list (rewritten).
    pub animations: &'a mut [Animations],
    /// Each entity's layer weights (the controller's layers rewritten).
    pub layer_weights: &'a mut [LayerWeights],
    /// The previous frame's curve values, for curve-bound parameters, when the run has them.
    pub curves: Option<&'a [CurveValues]>,
    /// Seconds since the previous frame.
    pub dt: f32,
}

impl ControllerJob<'_> {
    /// Checks lengths, the frame time and each controller's rig, before anything moves.
    ///
    /// # Errors
    /// [`crate::error::JobError::LengthMismatch`] (as a [`ControllerError::BadValue`] naming
    /// the buffer), [`ControllerError::BadValue`] for a frame time that is not finite,
    /// [`ControllerError::ControllerForAnotherRig`] naming the entity.
    pub fn validate(&self) -> Result<(), ControllerError> {
        let n = self.entities.len();
        let lens = [
            ("rigs", self.rigs.len()),
            ("states", self.states.len()),
            ("animations", self.animations.len()),
            ("layer weights", self.layer_weights.len()),
            ("curves", self.curves.map_or(n, <[CurveValues]>::len)),
        ];
        for (buffer, len) in lens {
            if len != n {
                return Err(ControllerError::BadValue {
                    controller: String::new(),
                    item: format!("controller job buffer '{buffer}'"),
                    reason: format!("{len} entries for {n} entities"),
                });
            }
        }
        check_states(self.entities, self.rigs, self.states, self.dt)
    }

    /// Advances every entity's state machines and writes their animation lists.
    pub fn run(&mut self) {
        for (i, ((s, a), lw)) in self
            .states
            .iter_mut()
            .zip(self.animations.iter_mut())
            .zip(self.layer_weights.iter_mut())
            .enumerate()
        {
            let curves = self.curves.and_then(|c| c.get(i));
            s.step(self.dt, curves, a, lw);
        }
    }
}

/// The checks of [`ControllerJob::validate`] on read-only views (the node runs them on every
/// entity before any state moves).
pub(crate) fn check_states(
    entities: &[Entity],
    rigs: &[RigRef],
    states: &[ControllerState],
    dt: f32,
) -> Result<(), ControllerError> {
    for ((&e, r), s) in entities.iter().zip(rigs).zip(states) {
        if !dt.is_finite() {
            return Err(ControllerError::BadValue {
                controller: s.controller.name.clone(),
                item: format!("entity {e:?}"),
                reason: format!("frame time {dt} is not finite"),
            });
        }
        check_rig(Some(e), &s.controller, &r.0)?;
    }
    Ok(())
}
