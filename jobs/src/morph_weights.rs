//! The morph-weights job: each entity's morph-target weights for this frame, from its
//! animated curves (job 5's [`CurveValues`]) or its base weights, compacted into the list of
//! targets whose weight is not 0 ([`MorphWeights::active`]), which the skinning paths walk.

use crate::component::{CurveValues, MorphWeights, SkinRef};
use crate::error::{JobError, check_len};
use sinew_runtime::store::Entity;

/// Checks one entity's weights against its mesh (also run by the clock node before any clock
/// moves, so that a frame failing here changes nothing).
///
/// # Errors
/// [`JobError::BadMorphWeights`] naming the entity and mesh: no [`SkinRef`], base weights or
/// curve bindings that are not one per target, or a NaN or infinite base weight.
pub(crate) fn check_morph_weights(
    entity: Entity,
    skin: Option<&SkinRef>,
    weights: &MorphWeights,
) -> Result<(), JobError> {
    let Some(skin) = skin else {
        return Err(JobError::BadMorphWeights {
            entity: Some(entity),
            mesh: String::new(),
            target: None,
            reason: "MorphWeights on an entity without SkinRef (the weights are its mesh's)".into(),
        });
    };
    let targets = skin.mesh.morph_targets().len();
    let err = |target: Option<usize>, reason: String| JobError::BadMorphWeights {
        entity: Some(entity),
        mesh: skin.mesh.name().to_string(),
        target,
        reason,
    };
    let w = weights;
    if w.base().len() != targets {
        return Err(err(
            None,
            format!("{} weights for {targets} targets", w.base().len()),
        ));
    }
    if !w.curves().is_empty() && w.curves().len() != targets {
        return Err(err(
            None,
            format!("{} curve bindings for {targets} targets", w.curves().len()),
        ));
    }
    if let Some(k) = w.base().iter().position(|x| !x.is_finite()) {
        return Err(err(Some(k), "weight is NaN or infinite".into()));
    }
    Ok(())
}

/// Morph weights over one run of entities.
#[derive(Debug)]
pub struct MorphWeightsJob<'a> {
    /// Entity handles (for errors).
    pub entities: &'a [Entity],
    /// The entities' meshes.
    pub skins: &'a [SkinRef],
    /// This frame's curve values, when the run has them (without, only base weights apply).
    pub curves: Option<&'a [CurveValues]>,
    /// Per entity: base weights and curve bindings in, the active list out.
    pub weights: &'a mut [MorphWeights],
}

impl MorphWeightsJob<'_> {
    /// Checks lengths, and each entity's weights against its mesh.
    ///
    /// # Errors
    /// [`JobError::LengthMismatch`] when the buffers differ in length;
    /// [`JobError::BadMorphWeights`] naming the entity and mesh when the base weights or curve
    /// bindings are not one per target of the mesh, or a base weight is NaN or infinite.
    pub fn validate(&self) -> Result<(), JobError> {
        let n = self.entities.len();
        check_len("morph weights", "skins", n, self.skins.len())?;
        check_len("morph weights", "weights", n, self.weights.len())?;
        if let Some(c) = self.curves {
            check_len("morph weights", "curves", n, c.len())?;
        }
        for ((e, skin), w) in self.entities.iter().zip(self.skins).zip(&*self.weights) {
            check_morph_weights(*e, Some(skin), w)?;
        }
        Ok(())
    }

    /// Writes each entity's active list: per target in order, the curve's value when a playing
    /// clip has the curve, else the base weight; targets at 0 are left out.
    pub fn run(&mut self) {
        for (i, w) in self.weights.iter_mut().enumerate() {
            let values = self.curves.and_then(|c| c.get(i)).map(CurveValues::values);
            w.compact(|h| values?.iter().find(|(k, _)| *k == h).map(|(_, x)| *x));
        }
    }
}
