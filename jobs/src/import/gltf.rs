//! glTF 2.0 → `Raw*` assets → baked, deduplicated assets.

use super::ImportError;
use super::accessor::Reader;
use super::morph::{self, PrimitiveAt};
use super::quantization::FloatUse;
use super::{extensions, source};
use crate::asset::{
    AssetRegistry, BoneIndex, Clip, RawBone, RawBoneTracks, RawClip, RawCurve, RawRig,
    RawSkinnedMesh, RawTrack, RawVertexInfluences, Rig, SkinnedMesh, Transform,
};
use ::gltf::accessor::{DataType, Dimensions};
use ::gltf::animation::{Interpolation as GInterp, Property};
use ::gltf::mesh::{Mode, Semantic};
use glam::{Mat4, Quat, Vec3};
use hashbrown::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

/// Everything imported from one glTF file: one rig over the nodes of the scene, the skins,
/// one baked mesh per skinned primitive, one clip per animation.
#[derive(Debug)]
pub struct GltfScene {
    /// One rig over every node of the default scene (every node when the file names no
    /// default scene), parent-first, with the nodes' rest TRS. Bone names are
    /// [`GltfScene::node_names`].
    pub rig: Arc<Rig>,
    /// glTF node index → rig bone (`None` for nodes outside the default scene).
    pub node_to_bone: Vec<Option<BoneIndex>>,
    /// One entry per glTF skin, in file order.
    pub skins: Vec<GltfSkin>,
    /// One entry per (node with mesh and skin, primitive), by node index then primitive.
    pub meshes: Vec<GltfSkinnedPrimitive>,
    /// One entry per (node with a mesh with morph targets but no skin, primitive), by node
    /// index then primitive: the mesh bound rigidly to its node (one mesh bone named like the
    /// node, identity inverse bind), so the pipeline's palette places it at the node's world
    /// transform and its weights animate like a skinned mesh's.
    pub morphed_nodes: Vec<GltfSkinnedPrimitive>,
    /// One clip per glTF animation, in file order, bound to [`GltfScene::rig`].
    pub clips: Vec<Arc<Clip>>,
    /// Stable unique names, one per glTF node: the node's name, `node_<index>` when it has
    /// none, with `#<index>` appended to a name already taken by an earlier node.
    pub node_names: Vec<String>,
    /// Things imported with a change or skipped (renormalised weights, dropped TANGENT morph
    /// deltas, meshes without a skin or morph targets, duplicate channels, ...), one sentence
    /// each.
    pub warnings: Vec<String>,
}

/// One glTF skin.
#[derive(Clone, Debug, PartialEq)]
pub struct GltfSkin {
    /// The glTF skin index.
    pub index: usize,
    /// The skin's name (`skin_<index>` when unnamed).
    pub name: String,
    /// The joints' node indices, in joint order (the order of the mesh bones).
    pub joints: Vec<usize>,
    /// The rig bone of each joint (`None` for a joint outside the default scene).
    pub joint_bones: Vec<Option<BoneIndex>>,
    /// The `skeleton` root node, when the file names one.
    pub skeleton: Option<usize>,
    /// One inverse bind matrix per joint (identity when the skin has none).
    pub inverse_bind_matrices: Vec<Mat4>,
}

/// One skinned mesh primitive placed on a node.
#[derive(Clone, Debug)]
pub struct GltfSkinnedPrimitive {
    /// The glTF node that instantiates the mesh.
    pub node: usize,
    /// The glTF mesh index.
    pub mesh: usize,
    /// The primitive index within the mesh.
    pub primitive: usize,
    /// The glTF skin index (into [`GltfScene::skins`]); for [`GltfScene::morphed_nodes`], the
    /// node's own index is the mesh's only bone and this is `usize::MAX`.
    pub skin: usize,
    /// The node's starting morph weights, one per target of the mesh: `node.weights`, else
    /// `mesh.weights`, else 0. Animations drive them through the curves `<node name>.weights[k]`
    /// ([`GltfSkinnedPrimitive::morph_weights_component`]).
    pub morph_weights: Vec<f32>,
    /// The node's unique name ([`GltfScene::node_names`]), the prefix of its weight curves.
    pub node_name: String,
    /// The baked mesh; its bones are the skin's joints in joint order, named like the joint
    /// nodes, so they match the rig's bones by name.
    pub skinned_mesh: Arc<SkinnedMesh>,
}

/// The animations of a file imported onto an existing rig (see [`import_gltf_clips`]).
#[derive(Debug)]
pub struct GltfClips {
    /// One clip per glTF animation, in file order, bound to the rig. Bones the file does not
    /// animate hold the rig's rest pose.
    pub clips: Vec<Arc<Clip>>,
    /// The file's node names (as [`GltfScene::node_names`] makes them) that name no bone of
    /// the rig; channels that animate them are dropped, with a warning each.
    pub nodes_without_bone: Vec<String>,
    /// The rig's bones that no node of the file is named after, in rig order.
    pub bones_without_node: Vec<String>,
    /// Things imported with a change or skipped, one sentence each.
    pub warnings: Vec<String>,
}

/// Imports the animations of a `.glb` or `.gltf` file onto `rig`, matching each animated
/// node to the bone of the same name: an animation library (one file per clip, or a file
/// exported without the mesh) played on a character imported from another file. Node names
/// are made unique as in [`GltfScene::node_names`] (unnamed nodes are `node_<index>`, so
/// they match only between files with the same node order). Meshes and skins of the file
/// are not read.
///
/// # Errors
/// As [`import_gltf`]; a clip that does not bake for `rig` is [`ImportError::Bake`].
pub fn import_gltf_clips(
    path: &Path,
    rig: &Rig,
    registry: &AssetRegistry,
) -> Result<GltfClips, ImportError> {
    let bytes = std::fs::read(path).map_err(|source| ImportError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let base = path.parent().unwrap_or_else(|| Path::new("."));
    import_clips_guarded(
        &bytes,
        Some(base),
        rig,
        registry,
        &path.display().to_string(),
    )
}

/// [`import_gltf_clips`] from bytes (GLB or JSON), external buffers resolved relative to
/// `base_dir`.
///
/// # Errors
/// As [`import_gltf_clips`].
pub fn import_gltf_clips_slice(
    bytes: &[u8],
    base_dir: Option<&Path>,
    rig: &Rig,
    registry: &AssetRegistry,
) -> Result<GltfClips, ImportError> {
    import_clips_guarded(bytes, base_dir, rig, registry, "<memory>")
}

/// As [`import_guarded`], for [`import_gltf_clips`].
fn import_clips_guarded(
    bytes: &[u8],
    base_dir: Option<&Path>,
    rig: &Rig,
    registry: &AssetRegistry,
    file: &str,
) -> Result<GltfClips, ImportError> {
    let staging = AssetRegistry::new();
    let run = std::panic::AssertUnwindSafe(|| {
        Importer::open(bytes, base_dir, file, |imp| imp.clips_for(rig, &staging))
    });
    let mut clips = catch_import_panic(std::panic::catch_unwind(run), file)?;
    for c in &mut clips.clips {
        *c = registry.adopt_clip(c.clone());
    }
    Ok(clips)
}

/// Imports a `.glb` or `.gltf` file; external buffers are resolved relative to its folder.
/// Images are not loaded.
///
/// # Errors
/// [`ImportError`] when the file cannot be read or is not valid, consistent glTF 2.0 (see
/// [`import_gltf_slice`]).
pub fn import_gltf(path: &Path, registry: &AssetRegistry) -> Result<GltfScene, ImportError> {
    let bytes = std::fs::read(path).map_err(|source| ImportError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let label = path.display().to_string();
    let base = path.parent().unwrap_or_else(|| Path::new("."));
    let rig_name = path
        .file_stem()
        .map_or_else(|| label.clone(), |s| s.to_string_lossy().into_owned());
    import_guarded(&bytes, Some(base), registry, &label, &rig_name)
}

/// Imports glTF from bytes (GLB or JSON). External buffer files are resolved relative to
/// `base_dir`; without it only embedded (GLB or `data:` URI) buffers can be used.
///
/// # Errors
/// [`ImportError`] for: a malformed GLB container or JSON, schema validation failures
/// (out-of-range indices, ...), missing or short buffers, accessors of the wrong type or
/// count or reaching outside their buffer, NaN or infinite values, a cyclic node graph or a
/// node with two parents, a skin joint listed twice, joint indices out of range, negative
/// weights, key times that do not strictly increase, and anything `bake()` rejects
/// ([`ImportError::Bake`]).
pub fn import_gltf_slice(
    bytes: &[u8],
    base_dir: Option<&Path>,
    registry: &AssetRegistry,
) -> Result<GltfScene, ImportError> {
    import_guarded(bytes, base_dir, registry, "<memory>", "gltf")
}

/// Runs the import, turning a panic into [`ImportError::Malformed`]. Every byte range is
/// validated before reading and the GLB container is parsed here, so no panic is expected;
/// this is a last line of defence against panics inside the `gltf` crate on input that passes
/// its schema validation but that it does not handle (the registry's locks recover from
/// poisoning, so no state is left inconsistent).
///
/// The assets bake into a staging registry and move to `registry` only when the whole file
/// imported: a failed import leaves `registry` as it was.
fn import_guarded(
    bytes: &[u8],
    base_dir: Option<&Path>,
    registry: &AssetRegistry,
    file: &str,
    rig_name: &str,
) -> Result<GltfScene, ImportError> {
    let staging = AssetRegistry::new();
    let run =
        std::panic::AssertUnwindSafe(|| Importer::run(bytes, base_dir, &staging, file, rig_name));
    let mut scene = catch_import_panic(std::panic::catch_unwind(run), file)?;
    scene.rig = registry.adopt_rig(scene.rig);
    for m in scene.meshes.iter_mut().chain(&mut scene.morphed_nodes) {
        m.skinned_mesh = registry.adopt_mesh(m.skinned_mesh.clone());
    }
    for c in &mut scene.clips {
        *c = registry.adopt_clip(c.clone());
    }
    Ok(scene)
}

fn catch_import_panic<T>(
    result: std::thread::Result<Result<T, ImportError>>,
    file: &str,
) -> Result<T, ImportError> {
    result.unwrap_or_else(|payload| {
        let reason = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic while reading".to_string());
        Err(ImportError::Malformed {
            file: file.to_string(),
            reason,
        })
    })
}

/// The baked primitives of one (mesh, skin) pair: (primitive index, mesh).
type BakedPrimitives = Vec<(usize, Arc<SkinnedMesh>)>;

/// What a primitive's vertices are bound to.
#[derive(Clone, Copy)]
enum Binding<'s> {
    /// The node's skin.
    Skin(&'s GltfSkin),
    /// The node itself (a mesh without skin): one bone, every vertex weighted 1 to it.
    Node(usize),
}

impl GltfSkinnedPrimitive {
    /// The [`MorphWeights`](crate::component::MorphWeights) component for an entity that plays
    /// this file's clips with this primitive's mesh: the node's starting weights, driven by the
    /// curves `<node name>.weights[k]` the importer makes from `weights` channels.
    pub fn morph_weights_component(&self) -> crate::component::MorphWeights {
        crate::component::MorphWeights::new(self.morph_weights.clone()).animated_by(&self.node_name)
    }
}

/// State shared by the import steps.
struct Importer<'a> {
    file: &'a str,
    doc: &'a ::gltf::Document,
    reader: Reader<'a>,
    names: Vec<String>,
    warnings: Vec<String>,
}

/// Stable unique names: the node's name (or `node_<i>`), `#<i>` appended when taken.
fn unique_node_names(doc: &::gltf::Document) -> Vec<String> {
    let mut taken: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    for node in doc.nodes() {
        let i = node.index();
        let base = match node.name() {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => format!("node_{i}"),
        };
        let mut name = base.clone();
        let mut k = 0usize;
        while taken.contains(&name) {
            name = if k == 0 {
                format!("{base}#{i}")
            } else {
                format!("{base}#{i}.{k}")
            };
            k += 1;
        }
        taken.insert(name.clone());
        out.push(name);
    }
    out
}

/// The node's rest transform; a `matrix` is decomposed into TRS.
fn node_rest(node: &::gltf::Node<'_>) -> Result<Transform, String> {
    let t = match node.transform() {
        ::gltf::scene::Transform::Matrix { matrix } => {
            let m = Mat4::from_cols_array_2d(&matrix);
            if !m.is_finite() {
                return Err("matrix holds NaN or an infinite value".into());
            }
            let row3 = m.row(3);
            if (row3 - glam::Vec4::W).abs().max_element() > 1e-5 {
                return Err(format!("matrix is not affine (last row {row3})"));
            }
            let (scale, rotation, translation) = m.to_scale_rotation_translation();
            Transform {
                translation,
                rotation,
                scale,
            }
        }
        ::gltf::scene::Transform::Decomposed {
            translation,
            rotation,
            scale,
        } => {
            let q = Quat::from_array(rotation);
            let len = q.length();
            if !(len.is_finite() && len > 1e-6) {
                return Err(format!("rotation {rotation:?} is not a usable quaternion"));
            }
            Transform {
                translation: Vec3::from_array(translation),
                rotation: q / len,
                scale: Vec3::from_array(scale),
            }
        }
    };
    if t.is_valid() {
        Ok(t)
    } else {
        Err(format!(
            "transform {t:?} is not finite or cannot be decomposed into TRS"
        ))
    }
}

impl<'a> Importer<'a> {
    /// Parses the container and JSON, checks the extensions, loads the buffers and hands an
    /// importer over the file to `f`.
    fn open<R>(
        bytes: &[u8],
        base_dir: Option<&Path>,
        file: &str,
        f: impl FnOnce(&mut Importer<'_>) -> Result<R, ImportError>,
    ) -> Result<R, ImportError> {
        let container = source::split(bytes, file)?;
        let parse = |reason: String| ImportError::Parse {
            file: file.to_string(),
            reason,
        };
        let mut root: ::gltf::json::Root = ::gltf::json::deserialize::from_slice(container.json)
            .map_err(|e| parse(format!("JSON: {e}")))?;
        let extensions = extensions::accept(&mut root, file)?;
        precheck(&root, file)?;
        let doc = ::gltf::Document::from_json(root).map_err(|e| parse(validation_message(&e)))?;
        let buffers = source::load_buffers(&doc, container.bin, base_dir, file)?;
        #[cfg(feature = "meshopt")]
        let decoded_views = super::meshopt::decode_views(&doc, &buffers, file)?;
        #[cfg(not(feature = "meshopt"))]
        let decoded_views = HashMap::new();
        let mut imp = Importer {
            file,
            doc: &doc,
            reader: Reader {
                file,
                buffers: &buffers,
                mesh_quantization: extensions.mesh_quantization,
                decoded_views,
            },
            names: unique_node_names(&doc),
            warnings: Vec::new(),
        };
        f(&mut imp)
    }

    fn run(
        bytes: &[u8],
        base_dir: Option<&Path>,
        registry: &AssetRegistry,
        file: &str,
        rig_name: &str,
    ) -> Result<GltfScene, ImportError> {
        Self::open(bytes, base_dir, file, |imp| imp.scene(registry, rig_name))
    }

    /// The whole file: rig, skins, skinned meshes, clips.
    fn scene(
        &mut self,
        registry: &AssetRegistry,
        rig_name: &str,
    ) -> Result<GltfScene, ImportError> {
        let (file, doc) = (self.file, self.doc);
        let (rig, node_to_bone) = self.rig(registry, rig_name)?;
        let skins = self.skins(&node_to_bone)?;
        let (meshes, morphed_nodes) = self.meshes(registry, &node_to_bone, &skins)?;
        let mut clips = Vec::new();
        for anim in doc.animations() {
            let raw = self.animation(&anim, &node_to_bone)?;
            let clip = raw.bake(&rig).map_err(|source| ImportError::Bake {
                file: file.to_string(),
                source,
            })?;
            clips.push(registry.clip(clip));
        }
        Ok(GltfScene {
            rig,
            node_to_bone,
            skins,
            meshes,
            morphed_nodes,
            clips,
            node_names: self.names.clone(),
            warnings: std::mem::take(&mut self.warnings),
        })
    }

    /// The file's animations bound to `rig`, nodes matched to bones by name.
    fn clips_for(&mut self, rig: &Rig, registry: &AssetRegistry) -> Result<GltfClips, ImportError> {
        let node_to_bone: Vec<Option<BoneIndex>> =
            self.names.iter().map(|n| rig.find_by_name(n)).collect();
        let nodes_without_bone = self
            .names
            .iter()
            .zip(&node_to_bone)
            .filter(|(_, b)| b.is_none())
            .map(|(n, _)| n.clone())
            .collect();
        let mut matched = vec![false; rig.bone_count()];
        for b in node_to_bone.iter().flatten() {
            if let Some(m) = matched.get_mut(b.get()) {
                *m = true;
            }
        }
        let bones_without_node = rig
            .bone_names()
            .iter()
            .zip(&matched)
            .filter(|(_, m)| !**m)
            .map(|(n, _)| n.clone())
            .collect();
        let mut clips = Vec::new();
        for anim in self.doc.animations() {
            let raw = self.animation(&anim, &node_to_bone)?;
            let clip = raw.bake(rig).map_err(|source| ImportError::Bake {
                file: self.file.to_string(),
                source,
            })?;
            clips.push(registry.clip(clip));
        }
        Ok(GltfClips {
            clips,
            nodes_without_bone,
            bones_without_node,
            warnings: std::mem::take(&mut self.warnings),
        })
    }

    fn node_err(&self, node: usize, reason: String) -> ImportError {
        ImportError::Node {
            file: self.file.to_string(),
            node,
            reason,
        }
    }

    /// Parents per node; rejects self-parenting, two parents and cycles.
    fn parents(&self) -> Result<Vec<Option<usize>>, ImportError> {
        let n = self.doc.nodes().len();
        let mut parent: Vec<Option<usize>> = vec![None; n];
        for node in self.doc.nodes() {
            let p = node.index();
            for child in node.children() {
                let c = child.index();
                if c == p {
                    return Err(self.node_err(p, "is its own child (cyclic node graph)".into()));
                }
                let slot = parent
                    .get_mut(c)
                    .ok_or_else(|| self.node_err(p, format!("child index {c} out of range")))?;
                if let Some(q) = *slot {
                    return Err(self.node_err(
                        c,
                        format!("has two parents (nodes {q} and {p}); glTF node graphs are trees"),
                    ));
                }
                *slot = Some(p);
            }
        }
        // With at most one parent each, a cycle is a parent chain that meets itself. Each
        // node is walked once: 0 = not seen, 1 = on the current chain, 2 = known to reach a root.
        let mut state = vec![0u8; n];
        for start in 0..n {
            let mut chain = Vec::new();
            let mut cur = Some(start);
            while let Some(c) = cur {
                match state.get(c).copied() {
                    Some(0) => {
                        if let Some(s) = state.get_mut(c) {
                            *s = 1;
                        }
                        chain.push(c);
                        cur = parent.get(c).copied().flatten();
                    }
                    Some(1) => {
                        return Err(self.node_err(c, "is part of a cycle in the node graph".into()));
                    }
                    _ => break,
                }
            }
            for c in chain {
                if let Some(s) = state.get_mut(c) {
                    *s = 2;
                }
            }
        }
        Ok(parent)
    }

    /// The rig over the default scene (or all nodes), and node → bone.
    fn rig(
        &mut self,
        registry: &AssetRegistry,
        rig_name: &str,
    ) -> Result<(Arc<Rig>, Vec<Option<BoneIndex>>), ImportError> {
        let parent = self.parents()?;
        let n = parent.len();
        let roots: Vec<usize> = match self.doc.default_scene() {
            Some(scene) => {
                let mut roots = Vec::new();
                let mut listed = HashSet::new();
                for node in scene.nodes() {
                    let i = node.index();
                    if let Some(Some(p)) = parent.get(i) {
                        return Err(self.node_err(
                            i,
                            format!(
                                "is a root of scene {} but a child of node {p}",
                                scene.index()
                            ),
                        ));
                    }
                    if listed.insert(i) {
                        roots.push(i);
                    }
                }
                roots
            }
            None => (0..n)
                .filter(|&i| parent.get(i).is_some_and(Option::is_none))
                .collect(),
        };
        let nodes: Vec<::gltf::Node<'_>> = self.doc.nodes().collect();
        // Depth-first, children in file order: a parent-first order.
        let mut order = Vec::new();
        let mut raw_index: Vec<Option<usize>> = vec![None; n];
        let mut stack: Vec<usize> = roots.iter().rev().copied().collect();
        while let Some(i) = stack.pop() {
            let Some(node) = nodes.get(i) else { continue };
            if raw_index.get(i).is_some_and(Option::is_some) {
                continue;
            }
            if let Some(slot) = raw_index.get_mut(i) {
                *slot = Some(order.len());
            }
            order.push(i);
            let children: Vec<usize> = node.children().map(|c| c.index()).collect();
            stack.extend(children.into_iter().rev());
        }
        let mut bones = Vec::with_capacity(order.len());
        for &i in &order {
            let Some(node) = nodes.get(i) else { continue };
            let rest = node_rest(node).map_err(|r| self.node_err(i, r))?;
            let parent_raw = parent
                .get(i)
                .copied()
                .flatten()
                .and_then(|p| raw_index.get(p).copied().flatten());
            bones.push(RawBone {
                name: self.names.get(i).cloned().unwrap_or_default(),
                parent: parent_raw,
                rest,
            });
        }
        let raw = RawRig {
            name: rig_name.to_string(),
            bones,
        };
        let rig = raw.bake().map_err(|source| ImportError::Bake {
            file: self.file.to_string(),
            source,
        })?;
        let rig = registry.rig(rig);
        let node_to_bone = raw_index
            .iter()
            .map(|r| r.and_then(|r| rig.baked_index_of_raw(r)))
            .collect();
        Ok((rig, node_to_bone))
    }

    fn skins(&mut self, node_to_bone: &[Option<BoneIndex>]) -> Result<Vec<GltfSkin>, ImportError> {
        let mut out = Vec::new();
        for skin in self.doc.skins() {
            let index = skin.index();
            let err = |reason: String| ImportError::Skin {
                file: self.file.to_string(),
                skin: index,
                reason,
            };
            let joints: Vec<usize> = skin.joints().map(|j| j.index()).collect();
            if joints.is_empty() {
                return Err(err("has no joints".into()));
            }
            let mut seen = HashSet::new();
            if let Some(j) = joints.iter().find(|j| !seen.insert(**j)) {
                return Err(err(format!("lists node {j} twice as a joint")));
            }
            let inverse_bind_matrices = match skin.inverse_bind_matrices() {
                None => vec![Mat4::IDENTITY; joints.len()],
                Some(acc) => {
                    let used_as = format!("skin {index} inverseBindMatrices");
                    let c = self
                        .reader
                        .floats(&acc, &used_as, &[Dimensions::Mat4], false)?;
                    if c.count() != joints.len() {
                        return Err(err(format!(
                            "has {} joints but {} inverse bind matrices",
                            joints.len(),
                            c.count()
                        )));
                    }
                    (0..c.count())
                        .filter_map(|i| c.get::<16>(i))
                        .map(|m| Mat4::from_cols_array(&m))
                        .collect()
                }
            };
            let joint_bones: Vec<Option<BoneIndex>> = joints
                .iter()
                .map(|&j| node_to_bone.get(j).copied().flatten())
                .collect();
            let outside = joint_bones.iter().filter(|b| b.is_none()).count();
            let name = skin
                .name()
                .filter(|s| !s.is_empty())
                .map_or_else(|| format!("skin_{index}"), str::to_string);
            if outside > 0 {
                self.warnings.push(format!(
                    "skin {index} '{name}': {outside} joints are not in the default scene, so not in the rig; meshes keep their bind pose for them"
                ));
            }
            out.push(GltfSkin {
                index,
                name,
                joints,
                joint_bones,
                skeleton: skin.skeleton().map(|s| s.index()),
                inverse_bind_matrices,
            });
        }
        Ok(out)
    }

    fn meshes(
        &mut self,
        registry: &AssetRegistry,
        node_to_bone: &[Option<BoneIndex>],
        skins: &[GltfSkin],
    ) -> Result<(Vec<GltfSkinnedPrimitive>, Vec<GltfSkinnedPrimitive>), ImportError> {
        let mut out = Vec::new();
        let mut morphed = Vec::new();
        // Two nodes instancing one (mesh, skin) share the baked primitives.
        let mut cache: HashMap<(usize, usize), BakedPrimitives> = HashMap::new();
        let nodes: Vec<::gltf::Node<'_>> = self.doc.nodes().collect();
        for node in &nodes {
            let ni = node.index();
            if node_to_bone.get(ni).copied().flatten().is_none() {
                continue;
            }
            let Some(mesh) = node.mesh() else { continue };
            let mesh_name = mesh
                .name()
                .filter(|s| !s.is_empty())
                .map_or_else(|| format!("mesh_{}", mesh.index()), str::to_string);
            let Some(skin) = node.skin() else {
                if mesh.primitives().any(|p| p.morph_targets().len() > 0) {
                    self.node_primitives(&mesh, &mesh_name, node, &mut morphed)?;
                    continue;
                }
                self.warnings.push(format!(
                    "node {ni} '{}' has mesh {} '{mesh_name}' without a skin: not imported (only skinned meshes are)",
                    self.names.get(ni).map_or("", String::as_str),
                    mesh.index()
                ));
                continue;
            };
            let Some(gskin) = skins.get(skin.index()) else {
                continue;
            };
            let key = (mesh.index(), skin.index());
            if !cache.contains_key(&key) {
                let mut prims = Vec::new();
                for prim in mesh.primitives() {
                    let binding = Binding::Skin(gskin);
                    if let Some(raw) = self.primitive(&mesh, &mesh_name, &prim, binding)? {
                        let baked = raw.bake().map_err(|source| ImportError::Bake {
                            file: self.file.to_string(),
                            source,
                        })?;
                        if baked.renormalized_vertices() > 0 {
                            self.warnings.push(format!(
                                "renormalised weights of {} vertices in mesh '{mesh_name}' primitive {}",
                                baked.renormalized_vertices(),
                                prim.index()
                            ));
                        }
                        prims.push((prim.index(), registry.mesh(baked)));
                    }
                }
                cache.insert(key, prims);
            }
            for (primitive, m) in cache.get(&key).into_iter().flatten() {
                let morph = m.morph_targets();
                out.push(GltfSkinnedPrimitive {
                    node: ni,
                    mesh: mesh.index(),
                    primitive: *primitive,
                    skin: skin.index(),
                    morph_weights: morph::node_weights(
                        self.file,
                        node,
                        morph.len(),
                        morph.default_weights(),
                    )?,
                    node_name: self.names.get(ni).cloned().unwrap_or_default(),
                    skinned_mesh: m.clone(),
                });
            }
        }
        Ok((out, morphed))
    }

    /// The primitives of an unskinned node whose mesh has morph targets, bound rigidly to the
    /// node (see [`GltfScene::morphed_nodes`]).
    fn node_primitives(
        &mut self,
        mesh: &::gltf::Mesh<'_>,
        mesh_name: &str,
        node: &::gltf::Node<'_>,
        out: &mut Vec<GltfSkinnedPrimitive>,
    ) -> Result<(), ImportError> {
        let ni = node.index();
        for prim in mesh.primitives() {
            let Some(raw) = self.primitive(mesh, mesh_name, &prim, Binding::Node(ni))? else {
                continue;
            };
            let baked = raw.bake().map_err(|source| ImportError::Bake {
                file: self.file.to_string(),
                source,
            })?;
            let morph = baked.morph_targets();
            let morph_weights =
                morph::node_weights(self.file, node, morph.len(), morph.default_weights())?;
            out.push(GltfSkinnedPrimitive {
                node: ni,
                mesh: mesh.index(),
                primitive: prim.index(),
                skin: usize::MAX,
                morph_weights,
                node_name: self.names.get(ni).cloned().unwrap_or_default(),
                skinned_mesh: Arc::new(baked),
            });
        }
        Ok(())
    }

    /// One primitive as a `RawSkinnedMesh`, or `None` (with a warning) for point and line
    /// primitives.
    fn primitive(
        &mut self,
        mesh: &::gltf::Mesh<'_>,
        mesh_name: &str,
        prim: &::gltf::Primitive<'_>,
        binding: Binding<'_>,
    ) -> Result<Option<RawSkinnedMesh>, ImportError> {
        let (mi, pi) = (mesh.index(), prim.index());
        let err = |reason: String| ImportError::Mesh {
            file: self.file.to_string(),
            mesh: mi,
            primitive: pi,
            reason,
        };
        let mode = prim.mode();
        if !matches!(
            mode,
            Mode::Triangles | Mode::TriangleStrip | Mode::TriangleFan
        ) {
            self.warnings.push(format!(
                "mesh '{mesh_name}' primitive {pi}: mode {mode:?} is not triangles: skipped"
            ));
            return Ok(None);
        }
        let what = |s: &str| format!("mesh {mi} primitive {pi} {s}");
        let pos_acc = prim
            .get(&Semantic::Positions)
            .ok_or_else(|| err("has no POSITION attribute".into()))?;
        let pos = self
            .reader
            .float_attribute(&pos_acc, &what("POSITION"), FloatUse::Position)?;
        let nv = pos.count();
        let positions: Vec<Vec3> = (0..nv)
            .filter_map(|i| pos.get::<3>(i))
            .map(Vec3::from_array)
            .collect();
        let normals: Vec<Vec3> = match prim.get(&Semantic::Normals) {
            None => Vec::new(),
            Some(acc) => {
                let c = self
                    .reader
                    .float_attribute(&acc, &what("NORMAL"), FloatUse::Normal)?;
                if c.count() != nv {
                    return Err(err(format!(
                        "NORMAL has {} elements, POSITION {nv}",
                        c.count()
                    )));
                }
                (0..nv)
                    .filter_map(|i| c.get::<3>(i))
                    .map(Vec3::from_array)
                    .collect()
            }
        };
        // Tangents and texture coordinates are not kept (no material is imported), but they
        // are read, so that a file storing them in a type glTF does not allow is refused.
        for (semantic, acc) in prim.attributes() {
            let (name, u) = match semantic {
                Semantic::Tangents => ("TANGENT".to_string(), FloatUse::Tangent),
                Semantic::TexCoords(n) => (format!("TEXCOORD_{n}"), FloatUse::TexCoord),
                _ => continue,
            };
            let c = self.reader.float_attribute(&acc, &what(&name), u)?;
            if c.count() != nv {
                return Err(err(format!(
                    "{name} has {} elements, POSITION {nv}",
                    c.count()
                )));
            }
        }
        self.read_morph_targets(mi, prim, nv, &what)?;
        let at = PrimitiveAt {
            file: self.file,
            mesh: mi,
            primitive: pi,
            mesh_name,
        };
        let (morph_targets, morph_weights) = morph::read_targets(
            &self.reader,
            &at,
            mesh,
            prim,
            nv,
            !normals.is_empty(),
            &mut self.warnings,
        )?;
        let mut influences: Vec<Vec<(u16, f32)>> = vec![Vec::new(); nv];
        let rigid = GltfSkin {
            index: usize::MAX,
            name: String::new(),
            joints: Vec::new(),
            joint_bones: Vec::new(),
            skeleton: None,
            inverse_bind_matrices: Vec::new(),
        };
        let skin = match binding {
            Binding::Skin(skin) => skin,
            Binding::Node(_) => {
                influences.iter_mut().for_each(|inf| inf.push((0, 1.0)));
                &rigid
            }
        };
        let njoints = skin.joints.len();
        for set in 0..2u32 {
            if matches!(binding, Binding::Node(_)) {
                break;
            }
            let (j, w) = (
                prim.get(&Semantic::Joints(set)),
                prim.get(&Semantic::Weights(set)),
            );
            let (j, w) = match (j, w) {
                (None, None) if set > 0 => break,
                (None, None) => {
                    return Err(err(format!(
                        "is on a node with skin {} but has no JOINTS_0/WEIGHTS_0",
                        skin.index
                    )));
                }
                (Some(j), Some(w)) => (j, w),
                _ => {
                    return Err(err(format!(
                        "has only one of JOINTS_{set} and WEIGHTS_{set}"
                    )));
                }
            };
            let jc = self.reader.uints(
                &j,
                &what(&format!("JOINTS_{set}")),
                &[Dimensions::Vec4],
                &[DataType::U8, DataType::U16],
            )?;
            let wc = self.reader.float_attribute(
                &w,
                &what(&format!("WEIGHTS_{set}")),
                FloatUse::Weights,
            )?;
            if jc.count() != nv || wc.count() != nv {
                return Err(err(format!(
                    "JOINTS_{set} has {} and WEIGHTS_{set} {} elements, POSITION {nv}",
                    jc.count(),
                    wc.count()
                )));
            }
            for (v, inf) in influences.iter_mut().enumerate() {
                let (Some(js), Some(ws)) = (jc.get::<4>(v), wc.get::<4>(v)) else {
                    continue;
                };
                for (joint, weight) in js.into_iter().zip(ws) {
                    if weight < 0.0 {
                        return Err(err(format!(
                            "vertex {v} has a negative weight {weight} in WEIGHTS_{set}"
                        )));
                    }
                    if weight == 0.0 {
                        continue; // padding; its joint index is not used
                    }
                    if joint as usize >= njoints {
                        return Err(err(format!(
                            "vertex {v} uses joint {joint} in JOINTS_{set}, the skin has {njoints} joints"
                        )));
                    }
                    inf.push((joint as u16, weight));
                }
            }
        }
        let indices: Vec<u32> = match prim.indices() {
            None => (0..nv as u32).collect(),
            Some(acc) => {
                let c = self.reader.uints(
                    &acc,
                    &what("indices"),
                    &[Dimensions::Scalar],
                    &[DataType::U8, DataType::U16, DataType::U32],
                )?;
                if let Some(&bad) = c.values.iter().find(|&&i| i as usize >= nv) {
                    return Err(err(format!("index {bad} out of range ({nv} vertices)")));
                }
                c.values
            }
        };
        let indices = match mode {
            Mode::TriangleStrip => strip_to_list(&indices),
            Mode::TriangleFan => fan_to_list(&indices),
            _ => {
                if !indices.len().is_multiple_of(3) {
                    return Err(err(format!(
                        "{} indices is not a whole number of triangles",
                        indices.len()
                    )));
                }
                indices
            }
        };
        let bones = match binding {
            Binding::Skin(skin) => skin
                .joints
                .iter()
                .zip(&skin.inverse_bind_matrices)
                .map(|(&j, m)| (self.names.get(j).cloned().unwrap_or_default(), *m))
                .collect(),
            Binding::Node(node) => vec![(
                self.names.get(node).cloned().unwrap_or_default(),
                Mat4::IDENTITY,
            )],
        };
        Ok(Some(RawSkinnedMesh {
            name: format!("{mesh_name}/{pi}"),
            bones,
            positions,
            normals,
            influences: influences.into_iter().map(RawVertexInfluences).collect(),
            indices,
            morph_targets,
            morph_weights,
            ..RawSkinnedMesh::default()
        }))
    }

    /// Reads every morph target accessor of primitive `prim` of mesh `mesh` (a type glTF or
    /// `KHR_mesh_quantization` allows, one finite delta per vertex), so that a bad target is
    /// an error even though the mesh is imported in its base shape.
    fn read_morph_targets(
        &self,
        mesh: usize,
        prim: &::gltf::Primitive<'_>,
        nv: usize,
        what: &dyn Fn(&str) -> String,
    ) -> Result<(), ImportError> {
        for (k, target) in prim.morph_targets().enumerate() {
            let accessors = [
                ("POSITION", target.positions(), FloatUse::MorphPosition),
                ("NORMAL", target.normals(), FloatUse::MorphNormal),
                ("TANGENT", target.tangents(), FloatUse::MorphTangent),
            ];
            for (name, acc, u) in accessors {
                let Some(acc) = acc else { continue };
                let c =
                    self.reader
                        .float_attribute(&acc, &what(&format!("target {k} {name}")), u)?;
                if c.count() != nv {
                    return Err(ImportError::Mesh {
                        file: self.file.to_string(),
                        mesh,
                        primitive: prim.index(),
                        reason: format!(
                            "morph target {k} {name} has {} elements, POSITION {nv}",
                            c.count()
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// One glTF animation as a `RawClip`.
    fn animation(
        &mut self,
        anim: &::gltf::Animation<'_>,
        node_to_bone: &[Option<BoneIndex>],
    ) -> Result<RawClip, ImportError> {
        let ai = anim.index();
        let name = anim
            .name()
            .filter(|s| !s.is_empty())
            .map_or_else(|| format!("animation_{ai}"), str::to_string);
        let mut clip = ClipTracks::default();
        // The gltf crate's schema validation skips animation channels (only their sampler
        // index is checked), and `Target::node()` / `Target::property()` unwrap; so the
        // target is read from the JSON and checked here.
        let json_channels = self
            .doc
            .as_json()
            .animations
            .get(ai)
            .map_or(&[][..], |a| a.channels.as_slice());
        for channel in anim.channels() {
            let ci = channel.index();
            let Some(target) = json_channels.get(ci).map(|c| &c.target) else {
                continue;
            };
            let channel_err = |reason: String| ImportError::Animation {
                file: self.file.to_string(),
                animation: ai,
                channel: Some(ci),
                reason,
            };
            let Some(target) =
                self.channel_target(target, node_to_bone, &mut clip, &name, ai, ci)?
            else {
                continue;
            };
            let sampler = channel.sampler();
            let times = self.key_times(&sampler, ai, &channel_err)?;
            self.read_channel(&sampler, ai, times, &target, &mut clip, &channel_err)?;
        }
        Ok(clip.into_raw_clip(name))
    }

    /// The checked target of a channel, or `None` (with a warning) for a channel that is
    /// skipped: an unknown path, or a node outside the default scene.
    fn channel_target(
        &mut self,
        target: &::gltf::json::animation::Target,
        node_to_bone: &[Option<BoneIndex>],
        clip: &mut ClipTracks,
        name: &str,
        ai: usize,
        ci: usize,
    ) -> Result<Option<ChannelTarget>, ImportError> {
        let node = target.node.value();
        let node_count = self.doc.nodes().len();
        if node >= node_count {
            return Err(ImportError::Animation {
                file: self.file.to_string(),
                animation: ai,
                channel: Some(ci),
                reason: format!("target node {node} out of range ({node_count} nodes)"),
            });
        }
        let node_name = self.names.get(node).cloned().unwrap_or_default();
        let ::gltf::json::validation::Checked::Valid(property) = target.path else {
            self.warnings.push(format!(
                "animation {ai} '{name}' channel {ci}: unknown target path: channel skipped"
            ));
            return Ok(None);
        };
        let property_name = match property {
            Property::Translation => "translation",
            Property::Rotation => "rotation",
            Property::Scale => "scale",
            Property::MorphTargetWeights => "weights",
        };
        if !clip.seen.insert((node, property as u8)) {
            self.warnings.push(format!(
                "animation {ai} '{name}' channel {ci}: node '{node_name}' {property_name} is animated by an earlier channel too; the later channel wins"
            ));
        }
        if property != Property::MorphTargetWeights
            && node_to_bone.get(node).copied().flatten().is_none()
        {
            self.warnings.push(format!(
                "animation {ai} '{name}' channel {ci}: node '{node_name}' is no bone of the rig (outside the default scene, or no bone has its name): channel skipped"
            ));
            return Ok(None);
        }
        Ok(Some(ChannelTarget {
            node,
            node_name,
            property,
        }))
    }

    /// A sampler's key times; `channel_err` places an empty or non-increasing list.
    fn key_times(
        &self,
        sampler: &::gltf::animation::Sampler<'_>,
        ai: usize,
        channel_err: &dyn Fn(String) -> ImportError,
    ) -> Result<Vec<f32>, ImportError> {
        let times = self
            .reader
            .floats(
                &sampler.input(),
                &format!("animation {ai} sampler {} input", sampler.index()),
                &[Dimensions::Scalar],
                false,
            )?
            .values;
        if times.is_empty() {
            return Err(channel_err("sampler has no keys".into()));
        }
        if let Some(k) = times.windows(2).position(|w| w.first() >= w.get(1)) {
            return Err(channel_err(format!(
                "key time {} ({:?}) does not increase",
                k + 1,
                times.get(k + 1)
            )));
        }
        Ok(times)
    }

    /// Reads a channel's output values into `clip`; `channel_err` places wrong counts or
    /// values.
    fn read_channel(
        &self,
        sampler: &::gltf::animation::Sampler<'_>,
        ai: usize,
        times: Vec<f32>,
        target: &ChannelTarget,
        clip: &mut ClipTracks,
        channel_err: &dyn Fn(String) -> ImportError,
    ) -> Result<(), ImportError> {
        let interp = sampler.interpolation();
        let n = times.len();
        let cubic = interp == GInterp::CubicSpline;
        let per_key = if cubic { 3 } else { 1 };
        let what = format!("animation {ai} sampler {} output", sampler.index());
        let output = sampler.output();
        let (node, node_name) = (target.node, target.node_name.as_str());
        match target.property {
            Property::Translation | Property::Scale => {
                let c = self
                    .reader
                    .floats(&output, &what, &[Dimensions::Vec3], false)?;
                check_count(c.count(), n * per_key).map_err(channel_err)?;
                let v: Vec<Vec3> = (0..c.count())
                    .filter_map(|i| c.get::<3>(i))
                    .map(Vec3::from_array)
                    .collect();
                let track = make_track(interp, times, v);
                let slot = clip.tracks_for(node, node_name);
                if target.property == Property::Translation {
                    slot.translation = Some(track);
                } else {
                    slot.scale = Some(track);
                }
            }
            Property::Rotation => {
                let c = self
                    .reader
                    .float_attribute(&output, &what, FloatUse::RotationKeys)?;
                check_count(c.count(), n * per_key).map_err(channel_err)?;
                let v: Vec<Quat> = (0..c.count())
                    .filter_map(|i| c.get::<4>(i))
                    .map(Quat::from_array)
                    .collect();
                // Lengths are finite here (the reader rejects NaN and infinity).
                let zero = v.iter().position(|q| q.length() <= 1e-6);
                if let (false, Some(k)) = (cubic, zero) {
                    return Err(channel_err(format!("rotation key {k} has zero length")));
                }
                clip.tracks_for(node, node_name).rotation = Some(make_track(interp, times, v));
            }
            Property::MorphTargetWeights => {
                let c = self
                    .reader
                    .float_attribute(&output, &what, FloatUse::MorphWeightKeys)?;
                clip.morph_weight_curves(interp, &times, &c.values, node_name)
                    .map_err(channel_err)?;
            }
        }
        Ok(())
    }
}

/// A checked channel target.
struct ChannelTarget {
    node: usize,
    node_name: String,
    property: Property,
}

/// The tracks and curves of one clip as its channels are read.
#[derive(Default)]
struct ClipTracks {
    /// Track sets by node.
    bones: HashMap<usize, RawBoneTracks>,
    /// The order in which nodes were first animated.
    bone_order: Vec<usize>,
    curves: Vec<RawCurve>,
    /// (node, property) pairs seen, to warn when a later channel overrides an earlier one.
    seen: HashSet<(usize, u8)>,
}

impl ClipTracks {
    /// The track set of `node`, created on first use.
    fn tracks_for(&mut self, node: usize, name: &str) -> &mut RawBoneTracks {
        let order = &mut self.bone_order;
        self.bones.entry(node).or_insert_with(|| {
            order.push(node);
            RawBoneTracks {
                bone: name.to_string(),
                translation: None,
                rotation: None,
                scale: None,
            }
        })
    }

    /// One curve `node.weights[k]` per morph target from a weights channel's `values`
    /// (per key: [in tangents (m)], values (m), [out tangents (m)]).
    fn morph_weight_curves(
        &mut self,
        interp: GInterp,
        times: &[f32],
        values: &[f32],
        node_name: &str,
    ) -> Result<(), String> {
        let n = times.len();
        let per_key = if interp == GInterp::CubicSpline { 3 } else { 1 };
        let total = values.len();
        let m = total / (n * per_key);
        if m == 0 || m * n * per_key != total {
            return Err(format!(
                "{total} weight values is not a whole number of morph targets for {n} keys"
            ));
        }
        for k in 0..m {
            let pick = |part: usize| -> Vec<f32> {
                (0..n)
                    .filter_map(|key| values.get((key * per_key + part) * m + k).copied())
                    .collect()
            };
            let track = if interp == GInterp::CubicSpline {
                RawTrack::hermite(times.to_vec(), pick(1), pick(0), pick(2))
            } else {
                make_track(interp, times.to_vec(), pick(0))
            };
            let curve_name = format!("{node_name}.weights[{k}]");
            self.curves.retain(|c| c.name != curve_name);
            self.curves.push(RawCurve {
                name: curve_name,
                track,
            });
        }
        Ok(())
    }

    fn into_raw_clip(mut self, name: String) -> RawClip {
        let bones = self
            .bone_order
            .iter()
            .filter_map(|n| self.bones.remove(n))
            .collect();
        RawClip {
            name,
            duration: None,
            looping: true,
            bones,
            curves: self.curves,
            ..RawClip::default()
        }
    }
}

fn check_count(actual: usize, expected: usize) -> Result<(), String> {
    if actual == expected {
        Ok(())
    } else {
        Err(format!(
            "sampler output has {actual} elements, expected {expected}"
        ))
    }
}

/// A track from glTF output values: STEP and LINEAR take them as they are, CUBICSPLINE
/// splits each key's (in tangent, value, out tangent) triple.
fn make_track<T: Copy>(interp: GInterp, times: Vec<f32>, out: Vec<T>) -> RawTrack<T> {
    match interp {
        GInterp::Step => RawTrack::step(times, out),
        GInterp::Linear => RawTrack::linear(times, out),
        GInterp::CubicSpline => {
            let mut ins = Vec::with_capacity(out.len() / 3);
            let mut vals = Vec::with_capacity(out.len() / 3);
            let mut outs = Vec::with_capacity(out.len() / 3);
            for t in out.chunks_exact(3) {
                if let [a, v, b] = t {
                    ins.push(*a);
                    vals.push(*v);
                    outs.push(*b);
                }
            }
            RawTrack::hermite(times, vals, ins, outs)
        }
    }
}

fn strip_to_list(ix: &[u32]) -> Vec<u32> {
    let mut out = Vec::new();
    for (k, w) in ix.windows(3).enumerate() {
        if let [a, b, c] = *w {
            // Every other triangle is flipped to keep the winding.
            if k % 2 == 0 {
                out.extend([a, b, c])
            } else {
                out.extend([b, a, c])
            }
        }
    }
    out
}

fn fan_to_list(ix: &[u32]) -> Vec<u32> {
    let mut out = Vec::new();
    if let Some((&first, rest)) = ix.split_first() {
        for w in rest.windows(2) {
            if let [b, c] = *w {
                out.extend([first, b, c]);
            }
        }
    }
    out
}

/// Checks what the gltf crate's schema validation indexes without checking: it looks up each
/// primitive's POSITION accessor (for its `min`/`max`) before index validation (found by
/// fuzzing).
fn precheck(root: &::gltf::json::Root, file: &str) -> Result<(), ImportError> {
    let key = ::gltf::json::validation::Checked::Valid(::gltf::json::mesh::Semantic::Positions);
    for (mesh, m) in root.meshes.iter().enumerate() {
        for (primitive, p) in m.primitives.iter().enumerate() {
            let position = p.attributes.get(&key).map(|i| i.value());
            if let Some(i) = position.filter(|&i| i >= root.accessors.len()) {
                return Err(ImportError::Mesh {
                    file: file.to_string(),
                    mesh,
                    primitive,
                    reason: format!(
                        "POSITION accessor {i} out of range ({} accessors)",
                        root.accessors.len()
                    ),
                });
            }
        }
    }
    Ok(())
}

fn validation_message(e: &::gltf::Error) -> String {
    match e {
        ::gltf::Error::Validation(errors) => {
            let list: Vec<String> = errors
                .iter()
                .take(5)
                .map(|(path, err)| format!("{path}: {err}"))
                .collect();
            let more = errors.len().saturating_sub(5);
            if more > 0 {
                format!("{} (and {more} more)", list.join("; "))
            } else {
                list.join("; ")
            }
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_and_fans_become_lists_with_consistent_winding() {
        assert_eq!(
            strip_to_list(&[0, 1, 2, 3, 4]),
            vec![0, 1, 2, 2, 1, 3, 2, 3, 4]
        );
        assert_eq!(fan_to_list(&[0, 1, 2, 3]), vec![0, 1, 2, 0, 2, 3]);
        assert!(strip_to_list(&[0, 1]).is_empty());
        assert!(fan_to_list(&[]).is_empty());
    }

    #[test]
    fn cubic_spline_output_splits_into_in_value_out() {
        let t = make_track(
            GInterp::CubicSpline,
            vec![0.0, 1.0],
            vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0],
        );
        assert_eq!(t.in_tangents, vec![1.0, 4.0]);
        assert_eq!(t.values, vec![2.0, 5.0]);
        assert_eq!(t.out_tangents, vec![3.0, 6.0]);
        let s = make_track(GInterp::Step, vec![0.0], vec![7.0f32]);
        assert_eq!(s.interpolation, crate::asset::Interpolation::Step);
    }

    #[test]
    fn node_names_are_unique_and_stable() {
        let json = br#"{"asset":{"version":"2.0"},"nodes":[{"name":"a"},{},{"name":"a"},{"name":"node_1"},{"name":""}]}"#;
        let root: ::gltf::json::Root = ::gltf::json::deserialize::from_slice(json).unwrap();
        let doc = ::gltf::Document::from_json(root).unwrap();
        assert_eq!(
            unique_node_names(&doc),
            ["a", "node_1", "a#2", "node_1#3", "node_4"]
        );
    }

    #[test]
    fn matrix_nodes_decompose_to_trs() {
        let json = br#"{"asset":{"version":"2.0"},"nodes":[
            {"matrix":[2,0,0,0, 0,2,0,0, 0,0,2,0, 1,2,3,1]},
            {"matrix":[1,0,0,1, 0,1,0,0, 0,0,1,0, 0,0,0,1]},
            {"rotation":[0,0,0,0]}]}"#;
        let root: ::gltf::json::Root = ::gltf::json::deserialize::from_slice(json).unwrap();
        let doc = ::gltf::Document::from_json(root).unwrap();
        let nodes: Vec<_> = doc.nodes().collect();
        let t = node_rest(&nodes[0]).unwrap();
        assert!((t.translation - Vec3::new(1.0, 2.0, 3.0)).length() < 1e-6);
        assert!((t.scale - Vec3::splat(2.0)).length() < 1e-6);
        assert!(t.rotation.angle_between(Quat::IDENTITY) < 1e-5);
        assert!(node_rest(&nodes[1]).is_err(), "projective matrix");
        assert!(node_rest(&nodes[2]).is_err(), "zero quaternion");
    }
}
