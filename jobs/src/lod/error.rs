//! [`LodCrowdError`]: what [`LodCrowd`](super::LodCrowd) rejects, naming the entity or clip.

use super::LodError;
use crate::bake_texture::BakeTextureError;
use glam::Vec3;
use sinew_runtime::store::{Entity, StoreError};
use std::fmt;

/// Why a [`LodCrowd`](super::LodCrowd) call was rejected: what was wrong and for which entity
/// or clip.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum LodCrowdError {
    /// Baking the clips into a texture failed.
    Bake(BakeTextureError),
    /// The switch rejected its input.
    Switch(LodError),
    /// The entity lacks a component the crowd needs (`EntityTransform`, `Animations`,
    /// `SkinRef`, `RigRef`).
    MissingComponent {
        /// The entity.
        entity: Entity,
        /// The component type.
        component: &'static str,
    },
    /// Another store operation on the entity failed (despawned entity, stale handle, ...).
    Store {
        /// The entity.
        entity: Entity,
        /// What the crowd was doing.
        action: &'static str,
        /// The store's error.
        source: StoreError,
    },
    /// The entity plays no animation or several: a baked texture holds single clips.
    NotOneAnimation {
        /// The entity.
        entity: Entity,
        /// Animations it plays.
        count: usize,
    },
    /// The entity's animation is one that a baked clip does not reproduce.
    NotBakeable {
        /// The entity.
        entity: Entity,
        /// The clip it plays.
        clip: String,
        /// What differs from a lone layer-0 override animation of weight 1.
        reason: &'static str,
    },
    /// The entity plays a clip the texture was not baked from.
    ClipNotBaked {
        /// The entity.
        entity: Entity,
        /// The clip's name.
        clip: String,
        /// The baked clips' names.
        baked: Vec<String>,
    },
    /// The entity's rig or skinned mesh (or its palette root bone) is not the one the texture
    /// was baked for.
    AssetMismatch {
        /// The entity.
        entity: Entity,
        /// `"rig"`, `"mesh"` or `"root bone"`.
        asset: &'static str,
    },
    /// The entity carries `RootMotion` and the texture was baked with the root track as it is,
    /// or the other way round: the two tiers would pose it differently.
    RootMotionMismatch {
        /// The entity.
        entity: Entity,
        /// The clip it plays (a clip with root motion).
        clip: String,
        /// Whether the entity carries `RootMotion`.
        entity_has_root_motion: bool,
    },
    /// The entity is in the crowd already.
    AlreadyInCrowd {
        /// The entity.
        entity: Entity,
    },
    /// The entity is not in the crowd.
    NotInCrowd {
        /// The entity.
        entity: Entity,
    },
    /// The entity's position is not finite, so its distance to the eye is not either.
    NonFinitePosition {
        /// The entity.
        entity: Entity,
        /// Its position.
        position: Vec3,
    },
    /// The entity's animation time or speed is not finite.
    NonFiniteClock {
        /// The entity.
        entity: Entity,
        /// Its playback time.
        time: f32,
        /// Its playback speed.
        speed: f32,
    },
    /// The eye position is not finite.
    NonFiniteEye {
        /// The eye.
        eye: Vec3,
    },
    /// The frame time is not finite and positive.
    BadTimeStep {
        /// The frame time, seconds.
        dt: f32,
    },
    /// A call out of the per-frame order `before_frame`, `Animator::run_frame*`,
    /// `after_frame` (`add` and `remove` go between frames).
    OutOfOrder {
        /// The call made.
        call: &'static str,
        /// The call expected next.
        expected: &'static str,
    },
}

impl fmt::Display for LodCrowdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bake(e) => write!(f, "lod crowd: bake: {e}"),
            Self::Switch(e) => write!(f, "lod crowd: {e}"),
            Self::MissingComponent { entity, component } => {
                write!(f, "lod crowd: entity {entity} has no {component}")
            }
            Self::Store {
                entity,
                action,
                source,
            } => write!(f, "lod crowd: entity {entity}: {action}: {source}"),
            Self::NotOneAnimation { entity, count } => write!(
                f,
                "lod crowd: entity {entity} plays {count} animations; a baked texture holds single clips, so it must play exactly one"
            ),
            Self::NotBakeable {
                entity,
                clip,
                reason,
            } => write!(
                f,
                "lod crowd: entity {entity} plays clip '{clip}' {reason}; the baked clip is the clip alone (layer-0 override, weight 1, no mask, its own loop flag)"
            ),
            Self::ClipNotBaked {
                entity,
                clip,
                baked,
            } => write!(
                f,
                "lod crowd: entity {entity} plays clip '{clip}', which is not in the baked texture (baked: {})",
                baked.join(", ")
            ),
            Self::AssetMismatch { entity, asset } => write!(
                f,
                "lod crowd: entity {entity}'s {asset} is not the one the texture was baked for"
            ),
            Self::RootMotionMismatch {
                entity,
                clip,
                entity_has_root_motion,
            } => {
                let (has, baked) = if *entity_has_root_motion {
                    ("carries RootMotion", "with its root track as it is")
                } else {
                    ("carries no RootMotion", "with root motion in place")
                };
                write!(
                    f,
                    "lod crowd: entity {entity} {has} but clip '{clip}' is baked {baked}"
                )
            }
            Self::AlreadyInCrowd { entity } => {
                write!(f, "lod crowd: entity {entity} is in the crowd already")
            }
            Self::NotInCrowd { entity } => {
                write!(f, "lod crowd: entity {entity} is not in the crowd")
            }
            Self::NonFinitePosition { entity, position } => write!(
                f,
                "lod crowd: entity {entity} is at {position}, so its distance to the eye is not finite"
            ),
            Self::NonFiniteClock {
                entity,
                time,
                speed,
            } => write!(
                f,
                "lod crowd: entity {entity} plays at time {time} with speed {speed}; both must be finite"
            ),
            Self::NonFiniteEye { eye } => write!(f, "lod crowd: eye position {eye} is not finite"),
            Self::BadTimeStep { dt } => {
                write!(
                    f,
                    "lod crowd: frame time {dt} s must be finite and positive"
                )
            }
            Self::OutOfOrder { call, expected } => {
                write!(f, "lod crowd: {call} called where {expected} was expected")
            }
        }
    }
}

impl std::error::Error for LodCrowdError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Bake(e) => Some(e),
            Self::Switch(e) => Some(e),
            Self::Store { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<BakeTextureError> for LodCrowdError {
    fn from(e: BakeTextureError) -> Self {
        Self::Bake(e)
    }
}

impl From<LodError> for LodCrowdError {
    fn from(e: LodError) -> Self {
        Self::Switch(e)
    }
}

/// Maps a store error on `entity` to the crowd's error (a missing component by its name).
pub(super) fn store_error(
    entity: Entity,
    action: &'static str,
    source: StoreError,
) -> LodCrowdError {
    match source {
        StoreError::MissingComponent { type_name, .. } => LodCrowdError::MissingComponent {
            entity,
            component: short_type_name(type_name),
        },
        source => LodCrowdError::Store {
            entity,
            action,
            source,
        },
    }
}

/// `sinew_jobs::component::Animations` → `Animations`.
fn short_type_name(name: &'static str) -> &'static str {
    name.rsplit("::").next().unwrap_or(name)
}
