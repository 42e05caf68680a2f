//! The controller and IK state the panel shows (and `--report` writes): crowd-wide counts per
//! state, the picked character's states, transition and parameters, whether the pose stages
//! are on, and what the picked character's foot placement did ([`super::inspect`]).

use super::Crowd;
use super::inspect::FeetReport;
use sinew_jobs::controller::{ControllerState, ParamKind};
use std::collections::BTreeMap;

/// One layer's count of characters per current state.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LayerCounts {
    pub(crate) layer: String,
    /// `(state, characters)`, by state id.
    pub(crate) states: Vec<(String, usize)>,
    /// Characters in a transition on this layer.
    pub(crate) in_transition: usize,
}

/// Whether the pose stages run, and on how many characters.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum IkState {
    /// The model's rig has no legs and head the stages know (a glTF model).
    Unavailable,
    /// Off while LOD is on: the baked tier plays the clips alone.
    OffForLod,
    /// Off (`I`).
    Off,
    /// On, on this many characters; the picked character's foot placement, when one is picked.
    On {
        characters: usize,
        picked: Option<FeetReport>,
    },
}

/// The state shown for one frame.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StateSummary {
    /// The controller's name and per-layer counts; `None` when no character is under it.
    pub(crate) controller: Option<(String, Vec<LayerCounts>)>,
    /// The picked character's controller, as lines (layer states, parameters).
    pub(crate) picked: Vec<String>,
    pub(crate) ik: IkState,
}

impl StateSummary {
    pub(crate) fn of(c: &Crowd) -> Self {
        let states: Vec<&ControllerState> = c
            .entities
            .iter()
            .filter_map(|&e| c.store.get::<ControllerState>(e).ok())
            .collect();
        let controller = states.first().map(|first| {
            let ctrl = first.controller();
            let layers = (0..ctrl.layer_count())
                .map(|layer| {
                    let mut counts = BTreeMap::new();
                    let mut in_transition = 0;
                    for s in &states {
                        if let Some(id) = s.current_state(layer) {
                            *counts.entry(id).or_insert(0) += 1;
                        }
                        in_transition += usize::from(s.transition(layer).is_some());
                    }
                    LayerCounts {
                        layer: ctrl.layer_name(layer).unwrap_or("?").to_string(),
                        states: counts
                            .into_iter()
                            .map(|(id, n)| (ctrl.state_name(layer, id).unwrap_or("?").into(), n))
                            .collect(),
                        in_transition,
                    }
                })
                .collect();
            (ctrl.name().to_string(), layers)
        });
        let picked_state = c
            .picked
            .and_then(|i| c.entities.get(i))
            .and_then(|&e| c.store.get::<ControllerState>(e).ok());
        let picked = picked_state.map(picked_lines).unwrap_or_default();
        let ik = match (&c.procedural, &c.lod, c.ik) {
            (None, _, _) => IkState::Unavailable,
            (Some(_), Some(_), _) => IkState::OffForLod,
            (Some(_), None, false) => IkState::Off,
            (Some(_), None, true) => IkState::On {
                characters: c.entities.len(),
                picked: c
                    .feet
                    .lock()
                    .ok()
                    .and_then(|r| r.clone())
                    .filter(|r| Some(r.entity) == c.inspected),
            },
        };
        Self {
            controller,
            picked,
            ik,
        }
    }

    /// The panel's lines.
    pub(crate) fn lines(&self, c: &Crowd) -> Vec<String> {
        let mut out = Vec::new();
        match &self.controller {
            None if c.controller.is_none() => out.push(
                "controller: none (a glTF file has no controller: plain clips, N cycles them)"
                    .into(),
            ),
            None => out.push("controller: off (plain clips; N back to 'controller')".into()),
            Some((name, layers)) => {
                out.push(format!(
                    "controller '{name}' on {} characters (V speed, G wave, N clips)",
                    c.entities.len()
                ));
                for l in layers {
                    let states: Vec<String> =
                        l.states.iter().map(|(s, n)| format!("{s} {n}")).collect();
                    let moving = match l.in_transition {
                        0 => String::new(),
                        n => format!(", {n} in transition"),
                    };
                    out.push(format!("  {:<12} {}{moving}", l.layer, states.join(", ")));
                }
            }
        }
        if let Some(p) = c.picked {
            // Layers on one line, parameters (the last entry) on the next.
            match self.picked.split_last() {
                None => out.push(format!("picked #{p}: no controller")),
                Some((params, layers)) => {
                    out.push(format!("picked #{p}: {}", layers.join("; ")));
                    out.push(format!("  {params}"));
                }
            }
        }
        out.push(match &self.ik {
            IkState::Unavailable => {
                "ik: none for this rig (foot placement needs the built-in legs and head)".into()
            }
            IkState::OffForLod => "ik off while LOD is on (the baked tier plays clips alone)".into(),
            IkState::Off => "ik off (I): feet and heads as animated".into(),
            IkState::On { characters, .. } => format!(
                "ik on (I): feet placed on the ground, heads look at the camera; {characters} characters"
            ),
        });
        if let IkState::On { picked, .. } = &self.ik
            && let Some(p) = c.picked
        {
            out.push(match picked.as_ref().map(|r| &r.result) {
                Some(Ok(r)) => {
                    let foot = |k: usize| {
                        if r.reached[k] {
                            "reached"
                        } else {
                            "not reached"
                        }
                    };
                    format!(
                        "  picked #{p}: left foot {}, right foot {}, pelvis {:+.3} m",
                        foot(0),
                        foot(1),
                        r.pelvis_offset
                    )
                }
                Some(Err(e)) => format!("  picked #{p}: foot placement refused: {e}"),
                None => format!("  picked #{p}: no foot placement this frame"),
            });
        }
        out
    }

    /// The same, for `--report`.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        let controller = self.controller.as_ref().map(|(name, layers)| {
            serde_json::json!({
                "name": name,
                "layers": layers.iter().map(|l| serde_json::json!({
                    "layer": l.layer,
                    "states": l.states.iter().map(|(s, n)| serde_json::json!({"state": s, "characters": n})).collect::<Vec<_>>(),
                    "in_transition": l.in_transition,
                })).collect::<Vec<_>>(),
            })
        });
        let ik = match &self.ik {
            IkState::Unavailable => serde_json::json!({"on": false, "why": "unavailable"}),
            IkState::OffForLod => serde_json::json!({"on": false, "why": "lod"}),
            IkState::Off => serde_json::json!({"on": false, "why": "toggled off"}),
            IkState::On { characters, picked } => serde_json::json!({
                "on": true,
                "characters": characters,
                "picked": picked.as_ref().map(|r| match &r.result {
                    Ok(f) => serde_json::json!({"reached": f.reached, "pelvis_offset_m": f.pelvis_offset}),
                    Err(e) => serde_json::json!({"error": e.to_string()}),
                }),
            }),
        };
        serde_json::json!({ "controller": controller, "picked_controller": self.picked, "ik": ik })
    }
}

/// One character's controller: each layer's current state with its time, or its transition
/// and progress; then (the last entry) the parameter values.
fn picked_lines(s: &ControllerState) -> Vec<String> {
    let ctrl = s.controller();
    let mut out = Vec::new();
    for layer in 0..ctrl.layer_count() {
        let name = ctrl.layer_name(layer).unwrap_or("?");
        let state = s
            .current_state(layer)
            .and_then(|id| ctrl.state_name(layer, id))
            .unwrap_or("-");
        let detail = match s.transition(layer) {
            Some((t, progress)) => format!(
                "{} {:.0}%",
                ctrl.transition_name(layer, t).unwrap_or("?"),
                100.0 * progress
            ),
            None => format!("{state} t {:.2}", s.normalized_time(layer).unwrap_or(0.0)),
        };
        out.push(format!("{name} {detail}"));
    }
    let params: Vec<String> = ctrl
        .parameters()
        .filter_map(|(name, kind)| {
            let value = match kind {
                ParamKind::Float => s.float(name).ok().map(|v| format!("{v:.2}")),
                ParamKind::Int => s.int(name).ok().map(|v| v.to_string()),
                ParamKind::Bool | ParamKind::Trigger => s
                    .bool(name)
                    .ok()
                    .map(|v| if v { "on" } else { "off" }.into()),
            }?;
            Some(format!("{name} {value}"))
        })
        .collect();
    out.push(format!("params: {}", params.join(", ")));
    out
}
