//! Errors of the jobs.

use sinew_runtime::store::Entity;
use std::fmt;

/// Why a job rejected its bindings. Each variant names the job and what was wrong where.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum JobError {
    /// Two buffers that must have matching lengths do not.
    LengthMismatch {
        /// The job.
        job: &'static str,
        /// The buffer.
        buffer: &'static str,
        /// Expected length.
        expected: usize,
        /// Actual length.
        actual: usize,
    },
    /// A clip baked for another rig plays on this entity.
    ClipRigMismatch {
        /// The entity.
        entity: Entity,
        /// The clip.
        clip: String,
        /// The rig the clip was baked for.
        clip_rig: String,
        /// The entity's rig.
        entity_rig: String,
    },
    /// A clip baked for another rig is assigned to a rig (caught before any entity plays it,
    /// by [`Animations::for_rig`](crate::component::Animations::for_rig)).
    ClipForAnotherRig {
        /// The clip.
        clip: String,
        /// Its index in the assigned list.
        animation: usize,
        /// The rig the clip was baked for.
        clip_rig: String,
        /// The rig it was assigned to.
        rig: String,
    },
    /// A mask baked for another rig is assigned to a rig (caught by
    /// [`Animations::for_rig`](crate::component::Animations::for_rig)).
    MaskForAnotherRig {
        /// The mask.
        mask: String,
        /// Index of the animation that uses it.
        animation: usize,
        /// The rig it was assigned to.
        rig: String,
    },
    /// A mask baked for another rig is used on this entity.
    MaskRigMismatch {
        /// The entity.
        entity: Entity,
        /// The mask.
        mask: String,
    },
    /// An animation's weight, time or speed is NaN or infinite, or a weight is negative.
    BadAnimation {
        /// The entity.
        entity: Entity,
        /// Index in the entity's animations.
        animation: usize,
        /// What is wrong.
        reason: String,
    },
    /// A layer index `>= MAX_LAYERS`, or a layer mixing override and additive animations, or
    /// an additive animation whose clip has no additive reference.
    BadLayer {
        /// The entity.
        entity: Entity,
        /// The layer.
        layer: usize,
        /// What is wrong.
        reason: String,
    },
    /// A bone index out of range.
    BoneOutOfRange {
        /// The job.
        job: &'static str,
        /// The entity, when the job knows it.
        entity: Option<Entity>,
        /// The bone.
        bone: usize,
        /// Bones in the rig.
        bone_count: usize,
    },
    /// The skinning job found no remap table for a (rig, mesh) pair.
    MissingRemap {
        /// The entity.
        entity: Entity,
        /// The mesh.
        mesh: String,
    },
    /// A result that is not finite (a NaN reached the output).
    NotFinite {
        /// The job.
        job: &'static str,
        /// The entity.
        entity: Entity,
        /// Where.
        what: String,
    },
    /// A pose stage (IK, a constraint, foot placement) refused an entity's input.
    PoseStage {
        /// The stage.
        stage: String,
        /// The entity.
        entity: Entity,
        /// What is wrong, and with which bone.
        error: crate::pose_stage::StageError,
    },
    /// An entity's morph weights do not fit its mesh (another count of targets than the
    /// mesh has, or a NaN or infinite weight set from code).
    BadMorphWeights {
        /// The entity, when known (`None` when set on a component not yet spawned).
        entity: Option<Entity>,
        /// The mesh.
        mesh: String,
        /// The target, when one is at fault.
        target: Option<usize>,
        /// What is wrong.
        reason: String,
    },
    /// The frame call lent a palette slice that the palette-writing node cannot borrow.
    PaletteUnavailable {
        /// The job.
        job: &'static str,
        /// The store's reason.
        reason: String,
    },
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LengthMismatch {
                job,
                buffer,
                expected,
                actual,
            } => {
                write!(
                    f,
                    "{job}: buffer '{buffer}' has {actual} entries, expected {expected}"
                )
            }
            Self::ClipRigMismatch {
                entity,
                clip,
                clip_rig,
                entity_rig,
            } => {
                write!(
                    f,
                    "entity {entity:?}: clip '{clip}' was baked for rig '{clip_rig}', but the \
                     entity's rig is '{entity_rig}'"
                )
            }
            Self::ClipForAnotherRig {
                clip,
                animation,
                clip_rig,
                rig,
            } => {
                write!(
                    f,
                    "animation {animation}: clip '{clip}' was baked for rig '{clip_rig}', not \
                     for rig '{rig}'"
                )
            }
            Self::MaskForAnotherRig {
                mask,
                animation,
                rig,
            } => {
                write!(
                    f,
                    "animation {animation}: mask '{mask}' was baked for another rig than '{rig}'"
                )
            }
            Self::MaskRigMismatch { entity, mask } => {
                write!(
                    f,
                    "entity {entity:?}: mask '{mask}' was baked for another rig"
                )
            }
            Self::BadAnimation {
                entity,
                animation,
                reason,
            } => {
                write!(f, "entity {entity:?}: animation {animation}: {reason}")
            }
            Self::BadLayer {
                entity,
                layer,
                reason,
            } => write!(f, "entity {entity:?}: layer {layer}: {reason}"),
            Self::BoneOutOfRange {
                job,
                entity,
                bone,
                bone_count,
            } => {
                write!(f, "{job}: ")?;
                if let Some(entity) = entity {
                    write!(f, "entity {entity:?}: ")?;
                }
                write!(f, "bone {bone} out of range ({bone_count} bones)")
            }
            Self::BadMorphWeights {
                entity,
                mesh,
                target,
                reason,
            } => {
                write!(f, "morph weights: ")?;
                if let Some(entity) = entity {
                    write!(f, "entity {entity:?}: ")?;
                }
                write!(f, "mesh '{mesh}': ")?;
                if let Some(target) = target {
                    write!(f, "target {target}: ")?;
                }
                write!(f, "{reason}")
            }
            Self::MissingRemap { entity, mesh } => {
                write!(
                    f,
                    "skinning: entity {entity:?}: no remap table for mesh '{mesh}' (did the remap-cache job run?)"
                )
            }
            Self::PoseStage {
                stage,
                entity,
                error,
            } => write!(f, "pose stage '{stage}': entity {entity:?}: {error}"),
            Self::NotFinite { job, entity, what } => {
                write!(f, "{job}: entity {entity:?}: {what} is not finite")
            }
            Self::PaletteUnavailable { job, reason } => write!(
                f,
                "{job}: the frame's palette slice cannot be borrowed ({reason}); no palette was written"
            ),
        }
    }
}

impl std::error::Error for JobError {}

/// Checks that `buffer` has `expected` entries.
pub(crate) fn check_len(
    job: &'static str,
    buffer: &'static str,
    expected: usize,
    actual: usize,
) -> Result<(), JobError> {
    if expected == actual {
        Ok(())
    } else {
        Err(JobError::LengthMismatch {
            job,
            buffer,
            expected,
            actual,
        })
    }
}

impl From<JobError> for sinew_runtime::graph::NodeError {
    fn from(e: JobError) -> Self {
        sinew_runtime::graph::NodeError::from_error(e)
    }
}
