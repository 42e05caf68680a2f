//! Override-transform and copy constraints: a bone takes a given model-space position and/or
//! rotation, or another bone's, blended by a weight (props, attachments, a hand on a weapon).
//!
//! The bone moves rigidly (its scale stays) and carries its descendants; position blends
//! linearly, rotation by slerp (shortest way).

use super::{
    Subtrees, TargetSpace, check_bone, check_finite, check_hierarchy, check_unit_range,
    rotate_subtree, rotation_of, to_model, translate_subtree,
};
use crate::asset::{Rig, Transform};
use crate::pose_stage::{PoseStage, StageError, StagePose};
use glam::{Affine3A, Vec3, Vec3A};

/// What a constraint sets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Channels {
    /// The position only.
    Position,
    /// The rotation only.
    Rotation,
    /// Both.
    #[default]
    Both,
}

impl Channels {
    fn position(self) -> bool {
        matches!(self, Channels::Position | Channels::Both)
    }
    fn rotation(self) -> bool {
        matches!(self, Channels::Rotation | Channels::Both)
    }
}

/// Where a constraint's transform comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConstraintSource {
    /// A given transform (its scale is ignored): override.
    Transform {
        /// Translation and rotation to take.
        transform: Transform,
        /// The space it is in.
        space: TargetSpace,
    },
    /// Another bone's model transform at the time the constraint runs: copy.
    Bone(usize),
}

/// A constraint over model matrices.
#[derive(Debug)]
pub struct ConstraintJob<'a> {
    /// Parent of each bone (parent-first, depth-first).
    pub parents: &'a [u32],
    /// Model matrices: the bone and its descendants are updated.
    pub model: &'a mut [Affine3A],
    /// The bone constrained.
    pub bone: usize,
    /// The transform it takes (a [`ConstraintSource::Transform`] in model space; world space
    /// needs the entity's transform, which the stage has).
    pub source: ConstraintSource,
    /// What it takes.
    pub channels: Channels,
    /// 0 leaves the pose, 1 takes the source.
    pub weight: f32,
}

impl ConstraintJob<'_> {
    /// Checks the hierarchy, the bones, a finite source and the weight.
    ///
    /// # Errors
    /// [`StageError`] naming the bone or the input.
    pub fn validate(&self) -> Result<(), StageError> {
        check_hierarchy(self.parents, self.model, &[self.bone])?;
        check_source(self.parents.len(), self.bone, &self.source, self.weight)?;
        if let ConstraintSource::Bone(b) = self.source
            && !self.model[b].is_finite()
        {
            return Err(StageError::NotFinite {
                what: "the source bone's model matrix",
            });
        }
        Ok(())
    }

    /// Moves the bone and its descendants (nothing at weight 0).
    pub fn run(&mut self) {
        let target = match self.source {
            ConstraintSource::Transform { transform, .. } => Some(transform),
            ConstraintSource::Bone(b) => self.model.get(b).map(|m| Transform {
                translation: m.translation.into(),
                rotation: rotation_of(m),
                scale: Vec3::ONE,
            }),
        };
        if let Some(t) = target {
            apply(
                Subtrees::Parents(self.parents),
                self.model,
                self.bone,
                &t,
                self.channels,
                self.weight,
            );
        }
    }
}

fn check_source(
    bone_count: usize,
    bone: usize,
    source: &ConstraintSource,
    weight: f32,
) -> Result<(), StageError> {
    check_bone(bone, bone_count)?;
    match source {
        ConstraintSource::Transform { transform, .. } => {
            check_finite("constraint translation", transform.translation)?;
            let q = transform.rotation;
            if !q.is_finite() {
                return Err(StageError::NotFinite {
                    what: "constraint rotation",
                });
            }
            if q.length_squared() < 1e-6 {
                return Err(StageError::ZeroDirection {
                    what: "constraint rotation",
                });
            }
        }
        ConstraintSource::Bone(b) => check_bone(*b, bone_count)?,
    }
    check_unit_range("weight", weight)
}

/// `bone` moved towards `target` (model space) by `weight`.
fn apply(
    tree: Subtrees<'_>,
    model: &mut [Affine3A],
    bone: usize,
    target: &Transform,
    channels: Channels,
    weight: f32,
) {
    let Some(m) = model.get(bone).copied() else {
        return;
    };
    if weight <= 0.0 {
        return;
    }
    if channels.rotation() {
        let r = rotation_of(&m);
        let want = r.slerp(target.rotation.normalize(), weight).normalize();
        rotate_subtree(
            tree,
            model,
            bone,
            m.translation,
            (want * r.inverse()).normalize(),
        );
    }
    if channels.position() {
        let p = m.translation;
        let delta = (Vec3A::from(target.translation) - p) * weight;
        translate_subtree(tree, model, bone, delta);
    }
}

/// An entity's constraint (the component [`ConstraintStage`] reads).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Constraint {
    /// The bone constrained.
    pub bone: usize,
    /// What it takes its transform from.
    pub source: ConstraintSource,
    /// What it takes.
    pub channels: Channels,
    /// 0 leaves the pose, 1 takes the source.
    pub weight: f32,
}

/// Runs [`ConstraintJob`] on every entity with a [`Constraint`].
#[derive(Clone, Copy, Debug, Default)]
pub struct ConstraintStage;

impl PoseStage for ConstraintStage {
    type Input = Constraint;

    fn name(&self) -> &str {
        "constraint"
    }

    fn check(&self, rig: &Rig, input: &Constraint) -> Result<(), StageError> {
        check_source(rig.bone_count(), input.bone, &input.source, input.weight)
    }

    fn apply(&self, input: &Constraint, pose: &mut StagePose<'_>) {
        let target = match input.source {
            ConstraintSource::Transform { transform, space } => {
                let rotation = match (space, pose.transform) {
                    (TargetSpace::World, Some(t)) => t.rotation.inverse() * transform.rotation,
                    _ => transform.rotation,
                };
                Some(Transform {
                    translation: to_model(space, transform.translation, pose.transform),
                    rotation,
                    scale: Vec3::ONE,
                })
            }
            ConstraintSource::Bone(b) => pose.model.get(b).map(|m| Transform {
                translation: m.translation.into(),
                rotation: rotation_of(m),
                scale: Vec3::ONE,
            }),
        };
        if let Some(t) = target {
            apply(
                Subtrees::Baked(pose.rig.subtree_ends()),
                pose.model,
                input.bone,
                &t,
                input.channels,
                input.weight,
            );
        }
    }
}
