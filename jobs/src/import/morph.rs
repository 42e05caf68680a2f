//! Morph targets of a glTF primitive, the mesh's default weights and a node's weights.

use super::ImportError;
use super::accessor::Reader;
use super::quantization::FloatUse;
use crate::asset::{RawMorphTarget, max_morph_targets};
use glam::Vec3;

/// Where a primitive's morph targets are read from, for messages.
pub(super) struct PrimitiveAt<'a> {
    pub(super) file: &'a str,
    pub(super) mesh: usize,
    pub(super) primitive: usize,
    pub(super) mesh_name: &'a str,
}

impl PrimitiveAt<'_> {
    fn err(&self, reason: String) -> ImportError {
        ImportError::Mesh {
            file: self.file.to_string(),
            mesh: self.mesh,
            primitive: self.primitive,
            reason,
        }
    }
}

/// The primitive's morph targets (POSITION and NORMAL deltas; TANGENT deltas are dropped with
/// a warning, as the baked mesh keeps no tangents) and the mesh's default weights (empty when
/// the mesh lists none).
///
/// # Errors
/// [`ImportError::Mesh`] naming the target for a delta count that is not the primitive's
/// vertex count, NORMAL deltas on a primitive without NORMAL, more targets than the GPU path
/// supports, or `mesh.weights` of another length than the targets;
/// [`ImportError::Accessor`] (`mesh M primitive P target K POSITION`) for NaN or infinite
/// deltas and accessors of the wrong type.
pub(super) fn read_targets(
    reader: &Reader<'_>,
    at: &PrimitiveAt<'_>,
    mesh: &::gltf::Mesh<'_>,
    prim: &::gltf::Primitive<'_>,
    vertices: usize,
    has_normals: bool,
    warnings: &mut Vec<String>,
) -> Result<(Vec<RawMorphTarget>, Vec<f32>), ImportError> {
    let count = prim.morph_targets().len();
    let limit = max_morph_targets(vertices);
    if count > limit {
        return Err(at.err(format!(
            "morph target {limit}: {count} targets of {vertices} vertices, more than the GPU path supports ({limit})"
        )));
    }
    let names = target_names(mesh);
    let mut targets = Vec::with_capacity(count);
    let mut tangents_dropped = false;
    for (k, target) in prim.morph_targets().enumerate() {
        let read = |acc: Option<::gltf::Accessor<'_>>,
                    what: &str,
                    u: FloatUse|
         -> Result<Vec<Vec3>, ImportError> {
            let Some(acc) = acc else {
                return Ok(Vec::new());
            };
            let used_as = format!(
                "mesh {} primitive {} target {k} {what}",
                at.mesh, at.primitive
            );
            // Core FLOAT, or the types KHR_mesh_quantization allows, dequantized.
            let c = reader.float_attribute(&acc, &used_as, u)?;
            if c.count() != vertices {
                return Err(at.err(format!(
                    "morph target {k}: {what} has {} elements, POSITION {vertices}",
                    c.count()
                )));
            }
            Ok((0..vertices)
                .filter_map(|i| c.get::<3>(i))
                .map(Vec3::from_array)
                .collect())
        };
        let positions = match target.positions() {
            Some(acc) => read(Some(acc), "POSITION", FloatUse::MorphPosition)?,
            // A target without POSITION moves no vertex (it may move only normals).
            None => vec![Vec3::ZERO; vertices],
        };
        let normals = read(target.normals(), "NORMAL", FloatUse::MorphNormal)?;
        if !normals.is_empty() && !has_normals {
            return Err(at.err(format!(
                "morph target {k} has NORMAL deltas but the primitive has no NORMAL"
            )));
        }
        tangents_dropped |= target.tangents().is_some();
        targets.push(RawMorphTarget {
            name: names.get(k).cloned().unwrap_or_default(),
            positions,
            normals,
        });
    }
    if tangents_dropped {
        warnings.push(format!(
            "mesh '{}' primitive {}: TANGENT morph deltas ignored (the baked mesh keeps no tangents)",
            at.mesh_name, at.primitive
        ));
    }
    let weights = mesh.weights().map(<[f32]>::to_vec).unwrap_or_default();
    if count > 0 && !weights.is_empty() && weights.len() != count {
        return Err(at.err(format!(
            "morph target {}: mesh.weights lists {} weights for {count} targets",
            weights.len().min(count),
            weights.len()
        )));
    }
    if let Some(k) = weights.iter().position(|w| !w.is_finite()) {
        return Err(at.err(format!("morph target {k}: mesh weight is NaN or infinite")));
    }
    Ok((targets, if count > 0 { weights } else { Vec::new() }))
}

/// The weights a node starts with: `node.weights`, else the mesh's (`mesh_weights`), else 0,
/// one per target.
///
/// # Errors
/// [`ImportError::Node`] when `node.weights` has another length than the targets or holds
/// NaN or infinity.
pub(super) fn node_weights(
    file: &str,
    node: &::gltf::Node<'_>,
    targets: usize,
    mesh_weights: &[f32],
) -> Result<Vec<f32>, ImportError> {
    let err = |reason: String| ImportError::Node {
        file: file.to_string(),
        node: node.index(),
        reason,
    };
    match node.weights() {
        Some(w) if targets > 0 => {
            if w.len() != targets {
                return Err(err(format!(
                    "weights lists {} morph weights, its mesh has {targets} targets",
                    w.len()
                )));
            }
            if let Some(k) = w.iter().position(|x| !x.is_finite()) {
                return Err(err(format!("morph weight {k} is NaN or infinite")));
            }
            Ok(w.to_vec())
        }
        _ if mesh_weights.len() == targets => Ok(mesh_weights.to_vec()),
        _ => Ok(vec![0.0; targets]),
    }
}

/// `mesh.extras.targetNames` (the convention Blender and three.js follow), when present.
fn target_names(mesh: &::gltf::Mesh<'_>) -> Vec<String> {
    let Some(raw) = mesh.extras() else {
        return Vec::new();
    };
    let Ok(value) = ::gltf::json::deserialize::from_str::<::gltf::json::Value>(raw.get()) else {
        return Vec::new();
    };
    value
        .get("targetNames")
        .and_then(|n| n.as_array())
        .map(|names| {
            names
                .iter()
                .map(|n| n.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}
