//! Files written by the glTF pipelines' tools (gltf-transform, gltfpack), derived from the
//! Khronos samples by `fixtures/assets/make_derived.mjs`: `KHR_mesh_quantization`, sparse
//! accessors in a `data:` URI buffer, and clips imported from a file without the mesh.
//! Expected values come from an independent parse: the JSON with serde_json, the buffers
//! split and base64-decoded here, accessor components decoded with the spec's formulas.
// Helpers outside `#[test]` functions unwrap and panic on fixture errors, as tests do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use glam::{Mat4, Quat, Vec3};
use serde_json::{Value, json};
use sinew_jobs::asset::{AssetRegistry, BoneIndex, Rig, SkinnedMesh};
use sinew_jobs::import::{
    GltfScene, ImportError, import_gltf, import_gltf_clips, import_gltf_clips_slice,
    import_gltf_slice,
};
use std::path::PathBuf;

fn asset_path(name: &str) -> PathBuf {
    sinew_fixtures::asset_path(format!("gltf/{name}")).unwrap()
}

fn import(name: &str, registry: &AssetRegistry) -> GltfScene {
    import_gltf(&asset_path(name), registry).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A glTF file parsed here: its JSON and its one buffer.
struct File {
    json: Value,
    bin: Vec<u8>,
}

fn u32_at(b: &[u8], at: usize) -> usize {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize
}

/// Standard base64 (RFC 4648), decoded here rather than with the importer's dependency.
fn base64_decode(s: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let digits: Vec<u8> = s.bytes().filter(|&c| c != b'=').map(value).collect();
    let mut out = Vec::new();
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (k, &d)| n | (u32::from(d) << (18 - 6 * k)));
        for k in 0..chunk.len() - 1 {
            out.push((n >> (16 - 8 * k)) as u8);
        }
    }
    out
}

fn load(name: &str) -> File {
    let bytes = std::fs::read(asset_path(name)).unwrap();
    if bytes.starts_with(b"glTF") {
        let jlen = u32_at(&bytes, 12);
        let json: Value = serde_json::from_slice(&bytes[20..20 + jlen]).unwrap();
        let b = 20 + jlen;
        let bin = bytes[b + 8..b + 8 + u32_at(&bytes, b)].to_vec();
        return File { json, bin };
    }
    let json: Value = serde_json::from_slice(&bytes).unwrap();
    let uri = json["buffers"][0]["uri"].as_str().unwrap();
    let (_, data) = uri.split_once(";base64,").unwrap();
    let bin = base64_decode(data);
    File { json, bin }
}

/// Size in bytes of a component type.
fn size_of(component_type: u64) -> usize {
    match component_type {
        5120 | 5121 => 1,
        5122 | 5123 => 2,
        5125 | 5126 => 4,
        t => panic!("component type {t}"),
    }
}

/// One component as the spec decodes it: the value, or for normalized integers
/// `max(c / 127, -1)`, `c / 255`, `max(c / 32767, -1)`, `c / 65535` (in f32).
fn component(b: &[u8], component_type: u64, normalized: bool) -> f32 {
    let c = match component_type {
        5120 => f32::from(b[0] as i8),
        5121 => f32::from(b[0]),
        5122 => f32::from(i16::from_le_bytes([b[0], b[1]])),
        5123 => f32::from(u16::from_le_bytes([b[0], b[1]])),
        5125 => u32::from_le_bytes(b[..4].try_into().unwrap()) as f32,
        5126 => return f32::from_le_bytes(b[..4].try_into().unwrap()),
        t => panic!("component type {t}"),
    };
    if !normalized {
        return c;
    }
    match component_type {
        5120 => (c / 127.0).max(-1.0),
        5121 => c / 255.0,
        5122 => (c / 32767.0).max(-1.0),
        5123 => c / 65535.0,
        t => panic!("normalized {t}"),
    }
}

impl File {
    /// `count` elements of `dims` components at `view` + `offset` (tightly packed unless the
    /// view has a stride).
    fn elements(
        &self,
        view: &Value,
        offset: usize,
        count: usize,
        dims: usize,
        ty: u64,
        norm: bool,
    ) -> Vec<f32> {
        let base = view["byteOffset"].as_u64().unwrap_or(0) as usize + offset;
        let stride = view["byteStride"]
            .as_u64()
            .map_or(dims * size_of(ty), |s| s as usize);
        let mut out = Vec::new();
        for e in 0..count {
            for c in 0..dims {
                let at = base + e * stride + c * size_of(ty);
                out.push(component(&self.bin[at..], ty, norm));
            }
        }
        out
    }

    /// Accessor `i` decoded by the spec: (components per element, values), sparse
    /// substitutions applied.
    fn accessor(&self, i: usize) -> (usize, Vec<f32>) {
        let a = &self.json["accessors"][i];
        let dims = match a["type"].as_str().unwrap() {
            "SCALAR" => 1,
            "VEC2" => 2,
            "VEC3" => 3,
            "VEC4" => 4,
            "MAT4" => 16,
            t => panic!("{t}"),
        };
        let ty = a["componentType"].as_u64().unwrap();
        let norm = a["normalized"].as_bool().unwrap_or(false);
        let count = a["count"].as_u64().unwrap() as usize;
        let offset = a["byteOffset"].as_u64().unwrap_or(0) as usize;
        let mut values = match a["bufferView"].as_u64() {
            Some(v) => {
                let view = &self.json["bufferViews"][v as usize];
                self.elements(view, offset, count, dims, ty, norm)
            }
            None => vec![0.0; count * dims],
        };
        if let Some(sparse) = a.get("sparse") {
            let n = sparse["count"].as_u64().unwrap() as usize;
            let ind = &sparse["indices"];
            let iview = &self.json["bufferViews"][ind["bufferView"].as_u64().unwrap() as usize];
            let ioff = ind["byteOffset"].as_u64().unwrap_or(0) as usize;
            let ity = ind["componentType"].as_u64().unwrap();
            let indices = self.elements(iview, ioff, n, 1, ity, false);
            let val = &sparse["values"];
            let vview = &self.json["bufferViews"][val["bufferView"].as_u64().unwrap() as usize];
            let voff = val["byteOffset"].as_u64().unwrap_or(0) as usize;
            let subst = self.elements(vview, voff, n, dims, ty, norm);
            for (k, &index) in indices.iter().enumerate() {
                let at = index as usize * dims;
                values[at..at + dims].copy_from_slice(&subst[k * dims..(k + 1) * dims]);
            }
        }
        (dims, values)
    }

    fn vec3s(&self, i: usize) -> Vec<Vec3> {
        let (dims, v) = self.accessor(i);
        assert_eq!(dims, 3);
        v.chunks_exact(3).map(Vec3::from_slice).collect()
    }

    fn attribute(&self, name: &str) -> usize {
        self.json["meshes"][0]["primitives"][0]["attributes"][name]
            .as_u64()
            .unwrap() as usize
    }

    /// (componentType, normalized) of accessor `i`.
    fn storage(&self, i: usize) -> (u64, bool) {
        let a = &self.json["accessors"][i];
        (
            a["componentType"].as_u64().unwrap(),
            a["normalized"].as_bool().unwrap_or(false),
        )
    }
}

/// The (joint name, weight) pairs of vertex `v`, weights over their sum, sorted by name.
fn influences(mesh: &SkinnedMesh, v: usize) -> Vec<(String, f32)> {
    let mut out: Vec<(String, f32)> = mesh.joints()[v]
        .iter()
        .zip(mesh.weights()[v])
        .filter(|(_, w)| *w > 0.0)
        .map(|(&j, w)| (mesh.bones()[j as usize].name.clone(), w))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The file's own joints and weights of vertex `v`, from the raw bytes: nonzero weights over
/// their sum (the bake's renormalisation), by joint node name.
fn file_influences(f: &File, names: &[String], v: usize) -> Vec<(String, f32)> {
    let (_, joints) = f.accessor(f.attribute("JOINTS_0"));
    let (_, weights) = f.accessor(f.attribute("WEIGHTS_0"));
    let skin_joints = f.json["skins"][0]["joints"].as_array().unwrap();
    let w = &weights[4 * v..4 * v + 4];
    let sum: f32 = w.iter().sum();
    let mut out: Vec<(String, f32)> = (0..4)
        .filter(|&k| w[k] > 0.0)
        .map(|k| {
            let node = skin_joints[joints[4 * v + k] as usize].as_u64().unwrap() as usize;
            let w = if (sum - 1.0).abs() > 1e-3 {
                w[k] / sum
            } else {
                w[k]
            };
            (names[node].clone(), w)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Integer positions, normals and weights written by gltf-transform (normalized SHORT
/// positions and normals, normalized UNSIGNED_BYTE weights) and gltfpack (UNSIGNED_SHORT
/// positions, not normalized) import as the spec's dequantization of their bytes, exactly.
#[test]
fn quantized_attributes_are_the_spec_formulas_of_their_bytes() {
    let registry = AssetRegistry::new();
    for (name, position_storage) in [
        ("CesiumMan.quantized.glb", (5122, true)),
        ("Fox.gltfpack.glb", (5123, false)),
    ] {
        let f = load(name);
        assert_eq!(
            f.json["extensionsRequired"],
            json!(["KHR_mesh_quantization"])
        );
        let pos = f.attribute("POSITION");
        assert_eq!(f.storage(pos), position_storage, "{name}");
        assert_eq!(f.storage(f.attribute("WEIGHTS_0")), (5121, true), "{name}");
        let scene = import(name, &registry);
        let mesh = &scene.meshes[0].skinned_mesh;
        let expected = f.vec3s(pos);
        assert_eq!(mesh.positions().len(), expected.len());
        for (v, (a, b)) in mesh.positions().iter().zip(&expected).enumerate() {
            assert_eq!(a.to_array(), b.to_array(), "{name} vertex {v}");
        }
        if let Some(n) = f.json["meshes"][0]["primitives"][0]["attributes"]["NORMAL"].as_u64() {
            assert_eq!(f.storage(n as usize), (5122, true), "{name}");
            assert_eq!(mesh.normals(), f.vec3s(n as usize), "{name} normals");
        }
        for v in 0..expected.len() {
            let (a, b) = (
                influences(mesh, v),
                file_influences(&f, &scene.node_names, v),
            );
            assert_eq!(a.len(), b.len(), "{name} vertex {v}: {a:?} {b:?}");
            for ((ja, wa), (jb, wb)) in a.iter().zip(&b) {
                assert_eq!(ja, jb, "{name} vertex {v}");
                assert!((wa - wb).abs() < 1e-6, "{name} vertex {v}: {wa} {wb}");
            }
        }
    }
}

/// Model matrices of every bone of `rig` at time `t` of `clip`.
fn model_at(rig: &Rig, clip: &sinew_jobs::asset::Clip, t: f32) -> Vec<Mat4> {
    let mut out: Vec<Mat4> = Vec::with_capacity(rig.bone_count());
    for i in 0..rig.bone_count() {
        let b = BoneIndex(i as u32);
        let local = clip.sample_bone(b, t).to_mat4();
        let m = match rig.parent(b) {
            Some(p) => out[p.get()] * local,
            None => local,
        };
        out.push(m);
    }
    out
}

/// Per vertex, each influence's joint name, weight and position `model(joint) × inverseBind
/// × p`; the skinned position is the weighted sum.
fn joint_positions(scene: &GltfScene, model: &[Mat4]) -> Vec<Vec<(String, f32, Vec3)>> {
    let mesh = &scene.meshes[0].skinned_mesh;
    let palette: Vec<Mat4> = mesh
        .bones()
        .iter()
        .map(|b| model[scene.rig.find_by_name(&b.name).unwrap().get()] * b.inverse_bind)
        .collect();
    (0..mesh.positions().len())
        .map(|v| {
            let p = mesh.positions()[v];
            mesh.joints()[v]
                .iter()
                .zip(mesh.weights()[v])
                .filter(|(_, w)| *w > 0.0)
                .map(|(&j, w)| {
                    let name = mesh.bones()[j as usize].name.clone();
                    (name, w, palette[j as usize].transform_point3(p))
                })
                .collect()
        })
        .collect()
}

fn skinned(joints: &[(String, f32, Vec3)]) -> Vec3 {
    joints.iter().map(|(_, w, p)| *w * *p).sum()
}

/// gltf-transform's quantized CesiumMan skins like the original, within what quantization
/// allows per vertex: a 14-bit position grid over the mesh's extent (√3 steps: the grid's
/// offset and scale are rounded too) plus, for 8-bit weights, `Σ |w' − w| · |P_j − x|` over
/// the influences `P_j` of the original vertex `x`. Its animation keys are the original
/// floats, so every bone's model matrix is the original's (within float rounding).
#[test]
fn quantized_cesium_man_skins_like_the_original_within_the_quantization_step() {
    let registry = AssetRegistry::new();
    let original = import("CesiumMan.glb", &registry);
    let quantized = import("CesiumMan.quantized.glb", &registry);
    let f = load("CesiumMan.glb");
    let pos = f.attribute("POSITION");
    let (lo, hi) = (
        &f.json["accessors"][pos]["min"],
        &f.json["accessors"][pos]["max"],
    );
    let extent = (0..3)
        .map(|k| (hi[k].as_f64().unwrap() - lo[k].as_f64().unwrap()) as f32)
        .fold(0.0, f32::max);
    let step = extent / ((1 << 14) - 1) as f32;
    let mut worst = 0.0f32;
    for t in [0.0, 0.37, 1.0, 1.62] {
        let (mo, mq) = (
            model_at(&original.rig, &original.clips[0], t),
            model_at(&quantized.rig, &quantized.clips[0], t),
        );
        // Same nodes in the same order (unnamed, so named by index in both); gltf-transform
        // writes the root's matrix as TRS and rounds scales of 0.9999998 to 1.
        for (name, a) in original.rig.bone_names().iter().zip(&mo) {
            let q = mq[quantized.rig.find_by_name(name).unwrap().get()];
            let close = a
                .to_cols_array()
                .iter()
                .zip(q.to_cols_array())
                .all(|(x, y)| (x - y).abs() <= 1e-6 * (1.0 + x.abs()));
            assert!(close, "bone {name} at {t}: {a} {q}");
        }
        let (jo, jq) = (
            joint_positions(&original, &mo),
            joint_positions(&quantized, &mq),
        );
        for v in 0..jo.len() {
            let (x, y) = (skinned(&jo[v]), skinned(&jq[v]));
            // Weight error, joint by joint (by name), times the joint's lever arm.
            let weight_term: f32 = jo[v]
                .iter()
                .map(|(name, w, p)| {
                    let wq = jq[v].iter().find(|q| q.0 == *name).map_or(0.0, |q| q.1);
                    (w - wq).abs() * (*p - x).length()
                })
                .sum();
            let bound = 3f32.sqrt() * step + weight_term + 1e-5 * extent;
            let e = (x - y).length();
            assert!(e <= bound, "vertex {v} at {t}: {e} > {bound}");
            worst = worst.max(e / step);
        }
    }
    // The files do differ: quantization moved vertices by a fraction of a grid step or more.
    println!("quantized CesiumMan: largest vertex difference {worst} grid steps ({step} m)");
    assert!(worst > 0.1, "largest difference {worst} steps");
}

/// An unskinned mesh quantized by gltf-transform (RiggedSimple's cylinder with its skin
/// removed, normalized SHORT positions): the dequantization is its node's scale, and that
/// node is a bone of the rig like any other, so the node's world matrix from the rig (rest
/// pose and clip) places the dequantized positions where the original's are, within a
/// 14-bit step of the mesh's extent.
#[test]
fn an_unskinned_quantized_mesh_is_placed_by_its_node() {
    let registry = AssetRegistry::new();
    let original = import("RiggedSimple.glb", &registry);
    let quantized = import("RiggedSimple.unskinned.quantized.glb", &registry);
    assert!(
        quantized.meshes.is_empty(),
        "unskinned meshes are not imported"
    );
    let (fo, fq) = (
        load("RiggedSimple.glb"),
        load("RiggedSimple.unskinned.quantized.glb"),
    );
    let (po, pq) = (
        fo.vec3s(fo.attribute("POSITION")),
        fq.vec3s(fq.attribute("POSITION")),
    );
    assert_eq!(fq.storage(fq.attribute("POSITION")), (5122, true));
    let acc = &fo.json["accessors"][fo.attribute("POSITION")];
    let extent = (0..3)
        .map(|k| (acc["max"][k].as_f64().unwrap() - acc["min"][k].as_f64().unwrap()) as f32)
        .fold(0.0, f32::max);
    let bone = |scene: &GltfScene| scene.rig.find_by_name("Cylinder").unwrap();
    let rest = quantized.rig.rest_pose()[bone(&quantized).get()];
    assert!((rest.scale - Vec3::splat(extent / 2.0)).abs().max_element() < 1e-3 * extent);
    let bound = 3f32.sqrt() * extent / 16383.0 + 1e-5 * extent;
    let mut worst = 0.0f32;
    for t in [0.0, 0.7, 1.3] {
        let mo = model_at(&original.rig, &original.clips[0], t)[bone(&original).get()];
        let mq = model_at(&quantized.rig, &quantized.clips[0], t)[bone(&quantized).get()];
        for (v, (a, b)) in po.iter().zip(&pq).enumerate() {
            let e = (mo.transform_point3(*a) - mq.transform_point3(*b)).length();
            assert!(e <= bound, "vertex {v} at {t}: {e} > {bound}");
            worst = worst.max(e);
        }
    }
    assert!(worst > 0.0);
}

/// gltfpack's Fox (UNSIGNED_SHORT positions whose dequantization is in the inverse bind
/// matrices, and also on the mesh node, which glTF ignores for skinned meshes; 12-bit
/// rotation keys in normalized SHORT; 8-bit weights; merged vertices) poses and skins like
/// the original. Bounds, to first order: a 12-bit rotation key is off by at most
/// `δ = 2·asin(1/2047)` rad, which turns everything below bone `k` about its origin `o_k`, so
/// a point `x` moved by bone `j` is off by at most `Σ δ·|x − o_k|` over `j` and its ancestors
/// `k`; translations are rounded to 16 bits (`2⁻¹⁶` of each, summed down the chain). A vertex
/// adds its weights' rounding to 8 bits (each off by at most 0.5/255, times the influence's
/// distance from the vertex) and a 14-bit position step. Vertices are matched to the nearest
/// vertex of the other file (gltfpack merges and reorders them).
#[test]
fn gltfpack_fox_poses_and_skins_like_the_original() {
    let registry = AssetRegistry::new();
    let original = import("Fox.glb", &registry);
    let packed = import("Fox.gltfpack.glb", &registry);
    let f = load("Fox.gltfpack.glb");
    let node0 = &f.json["nodes"][0];
    assert!(node0["mesh"].is_u64() && node0["skin"].is_u64() && node0["scale"].is_array());
    let rot = f.json["animations"][0]["samplers"][1]["output"]
        .as_u64()
        .unwrap() as usize;
    assert_eq!(f.storage(rot), (5122, true), "rotation keys");
    let delta = 2.0 * (1.0f32 / 2047.0).asin();
    let rig = &original.rig;
    let chain = |i: usize| {
        let mut out = vec![i];
        let mut b = BoneIndex(i as u32);
        while let Some(p) = rig.parent(b) {
            out.push(p.get());
            b = p;
        }
        out
    };
    let fox = load("Fox.glb");
    let pos = &fox.json["accessors"][fox.attribute("POSITION")];
    let extent = (0..3)
        .map(|k| (pos["max"][k].as_f64().unwrap() - pos["min"][k].as_f64().unwrap()) as f32)
        .fold(0.0, f32::max);
    let step = 3f32.sqrt() * extent / 16383.0;
    let (mut worst_bone, mut worst_vertex, mut worst_ratio) = (0.0f32, 0.0f32, 0.0f32);
    for (ci, clip) in original.clips.iter().enumerate() {
        let pc = &packed.clips[ci];
        assert_eq!(pc.name(), clip.name());
        for t in [0.0, 0.41, clip.duration() * 0.77] {
            let (mo, mp) = (model_at(rig, clip, t), model_at(&packed.rig, pc, t));
            let origin = |k: usize| mo[k].w_axis.truncate();
            // Error bound of a point `x` carried by bone `j`.
            let bound = |j: usize, x: Vec3| -> f32 {
                chain(j)
                    .iter()
                    .map(|&k| {
                        let local = clip.sample_bone(BoneIndex(k as u32), t).translation;
                        delta * (x - origin(k)).length() + local.length() * 2f32.powi(-16)
                    })
                    .sum::<f32>()
                    + 1e-5 * extent
            };
            for (i, name) in rig.bone_names().iter().enumerate() {
                let j = packed.rig.find_by_name(name).unwrap().get();
                let (a, q) = (origin(i), mp[j].w_axis.truncate());
                let e = (a - q).length();
                assert!(e <= bound(i, a), "{name} at {t}: {a} {q}");
                worst_bone = worst_bone.max(e);
            }
            let jo = joint_positions(&original, &mo);
            let xo: Vec<Vec3> = jo.iter().map(|j| skinned(j)).collect();
            let xp: Vec<Vec3> = joint_positions(&packed, &mp)
                .iter()
                .map(|j| skinned(j))
                .collect();
            let vertex_bound: Vec<f32> = jo
                .iter()
                .zip(&xo)
                .map(|(joints, &x)| {
                    let pose = joints
                        .iter()
                        .map(|(n, _, _)| bound(rig.find_by_name(n).unwrap().get(), x))
                        .fold(0.0, f32::max);
                    let weights: f32 = joints
                        .iter()
                        .map(|(_, _, p)| 0.5 / 255.0 * (*p - x).length())
                        .sum();
                    pose + weights + step
                })
                .collect();
            let nearest = |p: Vec3, set: &[Vec3]| {
                (0..set.len())
                    .map(|k| (k, (p - set[k]).length()))
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .unwrap()
            };
            for (v, p) in xo.iter().enumerate() {
                let (_, e) = nearest(*p, &xp);
                assert!(
                    e <= vertex_bound[v],
                    "{} at {t}: vertex {v}: {e} > {}",
                    clip.name(),
                    vertex_bound[v]
                );
                worst_vertex = worst_vertex.max(e);
                worst_ratio = worst_ratio.max(e / vertex_bound[v]);
            }
            for (v, p) in xp.iter().enumerate() {
                let (k, e) = nearest(*p, &xo);
                assert!(
                    e <= vertex_bound[k],
                    "{} at {t}: packed vertex {v}: {e}",
                    clip.name()
                );
            }
        }
    }
    println!(
        "gltfpack Fox: largest bone error {worst_bone}, vertex error {worst_vertex}, at most {worst_ratio} of its bound"
    );
}

// ---------------------------------------------------------------------------------------
// Hand-written files: every storage the extension allows, and the ones it does not.

/// A one-triangle skinned file whose attributes are given as (componentType, normalized,
/// type, bytes); `extensions` goes to extensionsUsed and extensionsRequired.
fn triangle(attributes: &[(&str, u32, bool, &str, Vec<u8>)], extensions: &[&str]) -> Vec<u8> {
    let mut bin: Vec<u8> = Vec::new();
    let (mut views, mut accessors, mut attrs) = (vec![], vec![], serde_json::Map::new());
    // Vertex attribute elements are 4-byte aligned (glTF 2.0 §3.6.2.4): a stride when padded.
    let mut push = |bin: &mut Vec<u8>, bytes: &[u8], acc: Value, stride: usize| {
        while !bin.len().is_multiple_of(4) {
            bin.push(0);
        }
        views.push(json!({"buffer": 0, "byteOffset": bin.len(), "byteLength": bytes.len(), "byteStride": stride}));
        bin.extend_from_slice(bytes);
        let mut acc = acc;
        acc["bufferView"] = json!(views.len() - 1);
        accessors.push(acc);
        accessors.len() - 1
    };
    let has = |n: &str| attributes.iter().any(|a| a.0 == n);
    let mut all: Vec<(&str, u32, bool, &str, Vec<u8>)> = attributes.to_vec();
    if !has("POSITION") {
        let p: Vec<u8> = [0f32, 0., 0., 1., 0., 0., 0., 1., 0.]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        all.push(("POSITION", 5126, false, "VEC3", p));
    }
    if !has("WEIGHTS_0") {
        let w: Vec<u8> = [1f32, 0., 0., 0.]
            .repeat(3)
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        all.push(("WEIGHTS_0", 5126, false, "VEC4", w));
    }
    all.push(("JOINTS_0", 5121, false, "VEC4", vec![0; 12]));
    for (name, ct, norm, ty, bytes) in &all {
        let mut acc = json!({"componentType": ct, "type": ty, "count": 3});
        if *norm {
            acc["normalized"] = json!(true);
        }
        if *name == "POSITION" {
            acc["min"] = json!([-1e9, -1e9, -1e9]);
            acc["max"] = json!([1e9, 1e9, 1e9]);
        }
        let i = push(&mut bin, bytes, acc, bytes.len() / 3);
        attrs.insert(name.to_string(), json!(i));
    }
    let mut doc = json!({
        "asset": {"version": "2.0"},
        "scene": 0, "scenes": [{"nodes": [0, 1]}],
        "nodes": [{"name": "bone"}, {"name": "body", "mesh": 0, "skin": 0}],
        "skins": [{"joints": [0]}],
        "meshes": [{"name": "tri", "primitives": [{"attributes": attrs}]}],
        "buffers": [{"byteLength": bin.len()}],
        "bufferViews": views,
        "accessors": accessors,
    });
    if !extensions.is_empty() {
        doc["extensionsUsed"] = json!(extensions);
        doc["extensionsRequired"] = json!(extensions);
    }
    pack_glb(&doc, bin)
}

/// A GLB of `doc` and `bin`, chunks padded to 4 bytes, buffer 0 (the BIN chunk) as long as
/// `bin`.
fn pack_glb(doc: &Value, mut bin: Vec<u8>) -> Vec<u8> {
    while !bin.len().is_multiple_of(4) {
        bin.push(0);
    }
    let mut doc = doc.clone();
    if doc["buffers"].as_array().is_none_or(Vec::is_empty) {
        doc["buffers"] = json!([{}]);
    }
    doc["buffers"][0]["byteLength"] = json!(bin.len());
    let mut j = serde_json::to_vec(&doc).unwrap();
    while !j.len().is_multiple_of(4) {
        j.push(b' ');
    }
    let mut out = b"glTF".to_vec();
    out.extend_from_slice(&2u32.to_le_bytes());
    out.extend_from_slice(&((28 + j.len() + bin.len()) as u32).to_le_bytes());
    out.extend_from_slice(&(j.len() as u32).to_le_bytes());
    out.extend_from_slice(b"JSON");
    out.extend_from_slice(&j);
    out.extend_from_slice(&(bin.len() as u32).to_le_bytes());
    out.extend_from_slice(b"BIN\0");
    out.extend_from_slice(&bin);
    out
}

const QUANTIZATION: &[&str] = &["KHR_mesh_quantization"];

/// Components `c` stored as `component_type`, 4-byte aligned elements of `dims` components.
fn stored(c: &[i32], component_type: u32, dims: usize) -> Vec<u8> {
    let size = match component_type {
        5120 | 5121 => 1,
        _ => 2,
    };
    let stride = (dims * size).div_ceil(4) * 4;
    let mut out = Vec::new();
    for e in c.chunks(dims) {
        let start = out.len();
        for &x in e {
            match component_type {
                5120 => out.push(x as i8 as u8),
                5121 => out.push(x as u8),
                5122 => out.extend_from_slice(&(x as i16).to_le_bytes()),
                _ => out.extend_from_slice(&(x as u16).to_le_bytes()),
            }
        }
        out.resize(start + stride, 0);
    }
    out
}

/// Every POSITION storage the extension allows imports as the spec's formula of its
/// components (computed here in f32); NORMAL in normalized BYTE and SHORT likewise.
#[test]
fn every_allowed_position_and_normal_storage_dequantizes_by_the_formula() {
    let registry = AssetRegistry::new();
    for (ct, norm) in [
        (5120, false),
        (5120, true),
        (5121, false),
        (5121, true),
        (5122, false),
        (5122, true),
        (5123, false),
        (5123, true),
    ] {
        let c: Vec<i32> = match ct {
            5120 => vec![-128, -127, 0, 1, 127, 5, -3, 64, 100],
            5121 => vec![0, 1, 254, 255, 128, 7, 3, 64, 100],
            5122 => vec![-32768, -32767, 0, 1, 32767, 5, -3, 640, 1000],
            _ => vec![0, 1, 65534, 65535, 32768, 7, 3, 640, 1000],
        };
        let mut attrs = vec![("POSITION", ct, norm, "VEC3", stored(&c, ct, 3))];
        let normal = [-127, 0, 0, 0, 127, 0, 3, 4, -128];
        if ct == 5120 || ct == 5122 {
            attrs.push(("NORMAL", ct, true, "VEC3", stored(&normal, ct, 3)));
        }
        let scene = import_gltf_slice(&triangle(&attrs, QUANTIZATION), None, &registry)
            .unwrap_or_else(|e| panic!("{ct} {norm}: {e}"));
        let mesh = &scene.meshes[0].skinned_mesh;
        let got: Vec<f32> = mesh.positions().iter().flat_map(|p| p.to_array()).collect();
        let bytes = stored(&c, ct, 3);
        let stride = bytes.len() / 3;
        let size = if ct <= 5121 { 1 } else { 2 };
        let want: Vec<f32> = (0..9)
            .map(|k| {
                component(
                    &bytes[(k / 3) * stride + (k % 3) * size..],
                    u64::from(ct),
                    norm,
                )
            })
            .collect();
        assert_eq!(got, want, "{ct} normalized {norm}");
        if ct == 5120 || ct == 5122 {
            let d = if ct == 5120 { 127.0 } else { 32767.0 };
            let got: Vec<f32> = mesh.normals().iter().flat_map(|p| p.to_array()).collect();
            let want: Vec<f32> = normal.iter().map(|&x| (x as f32 / d).max(-1.0)).collect();
            assert_eq!(got, want, "NORMAL {ct}");
        }
    }
}

fn accessor_error(bytes: &[u8]) -> (usize, String, String) {
    match import_gltf_slice(bytes, None, &AssetRegistry::new()) {
        Err(ImportError::Accessor {
            accessor,
            used_as,
            reason,
            ..
        }) => (accessor, used_as, reason),
        Err(e) => panic!("not an accessor error: {e}"),
        Ok(_) => panic!("imported"),
    }
}

/// Storages outside the tables are errors naming mesh, primitive, attribute and accessor:
/// integer positions without the extension, non-normalized or unsigned normals, signed
/// weights, normalized FLOAT, UNSIGNED_INT texture coordinates, integer tangents that are
/// not normalized.
#[test]
fn storages_outside_the_extension_are_errors_that_say_where() {
    let pos = stored(&[0, 0, 0, 1, 0, 0, 0, 1, 0], 5122, 3);
    let (acc, used_as, reason) = accessor_error(&triangle(
        &[("POSITION", 5122, false, "VEC3", pos.clone())],
        &[],
    ));
    assert_eq!((acc, used_as.as_str()), (0, "mesh 0 primitive 0 POSITION"));
    assert!(
        reason.contains("component type SHORT needs KHR_mesh_quantization"),
        "{reason}"
    );
    // Declared, the same file imports.
    assert!(
        import_gltf_slice(
            &triangle(&[("POSITION", 5122, false, "VEC3", pos)], QUANTIZATION),
            None,
            &AssetRegistry::new()
        )
        .is_ok()
    );
    let n = stored(&[0, 0, 1, 0, 0, 1, 0, 0, 1], 5120, 3);
    for (attr, ct, norm, ty, bytes, want) in [
        (
            "NORMAL",
            5120,
            false,
            "VEC3",
            n.clone(),
            "component type BYTE is not allowed here, even with KHR_mesh_quantization",
        ),
        (
            "NORMAL",
            5121,
            true,
            "VEC3",
            n.clone(),
            "normalized UNSIGNED_BYTE is not allowed here",
        ),
        (
            "WEIGHTS_0",
            5120,
            true,
            "VEC4",
            [127, 0, 0, 0].repeat(3),
            "normalized BYTE is not allowed here",
        ),
        (
            "TANGENT",
            5122,
            false,
            "VEC4",
            stored(&[1, 0, 0, 1].repeat(3), 5122, 4),
            "SHORT is not allowed here",
        ),
        (
            "TEXCOORD_0",
            5125,
            false,
            "VEC2",
            vec![0; 24],
            "UNSIGNED_INT is not allowed here",
        ),
        (
            "NORMAL",
            5126,
            true,
            "VEC3",
            vec![0; 36],
            "normalized FLOAT is not allowed here",
        ),
    ] {
        let (_, used_as, reason) =
            accessor_error(&triangle(&[(attr, ct, norm, ty, bytes)], QUANTIZATION));
        assert_eq!(used_as, format!("mesh 0 primitive 0 {attr}"));
        assert!(reason.contains(want), "{attr}: {reason}");
    }
    // Allowed tangents and texture coordinates are read (and refused when short).
    let t = stored(&[127, 0, 0, 127].repeat(3), 5120, 4);
    let uv = stored(&[0, 0, 65535, 0, 0, 65535], 5123, 2);
    assert!(
        import_gltf_slice(
            &triangle(
                &[
                    ("TANGENT", 5120, true, "VEC4", t),
                    ("TEXCOORD_0", 5123, false, "VEC2", uv)
                ],
                QUANTIZATION
            ),
            None,
            &AssetRegistry::new()
        )
        .is_ok()
    );
}

/// Without the `meshopt` feature, a file that requires EXT_meshopt_compression is refused
/// with an error naming the extension, the feature and how to write the file without it.
#[cfg(not(feature = "meshopt"))]
#[test]
fn meshopt_compressed_files_are_refused_naming_the_extension_and_the_fix() {
    let doc = json!({
        "asset": {"version": "2.0"},
        "extensionsUsed": ["KHR_mesh_quantization", "EXT_meshopt_compression"],
        "extensionsRequired": ["KHR_mesh_quantization", "EXT_meshopt_compression"],
        "nodes": [{"name": "root"}]
    });
    let e = import_gltf_slice(
        &serde_json::to_vec(&doc).unwrap(),
        None,
        &AssetRegistry::new(),
    )
    .unwrap_err();
    assert!(
        matches!(&e, ImportError::UnsupportedExtension { extension, .. } if extension == "EXT_meshopt_compression"),
        "{e}"
    );
    let text = e.to_string();
    for part in [
        "requires extension EXT_meshopt_compression",
        "gltfpack without -c",
        "gltf-transform copy",
    ] {
        assert!(text.contains(part), "{text}");
    }
}

/// Splits a GLB made by [`triangle`], lets `f` change its JSON and buffer, and packs it again.
fn edit(glb: &[u8], f: impl FnOnce(&mut Value, &mut Vec<u8>)) -> Vec<u8> {
    let jlen = u32_at(glb, 12);
    let mut doc: Value = serde_json::from_slice(&glb[20..20 + jlen]).unwrap();
    let b = 20 + jlen;
    let mut bin = glb[b + 8..b + 8 + u32_at(glb, b)].to_vec();
    f(&mut doc, &mut bin);
    doc["buffers"] = json!([{}]);
    pack_glb(&doc, bin)
}

/// Appends an accessor over `bytes` (its own view, `stride` when given) and returns its index.
fn add_accessor(
    doc: &mut Value,
    bin: &mut Vec<u8>,
    bytes: &[u8],
    acc: Value,
    stride: Option<usize>,
) -> usize {
    while !bin.len().is_multiple_of(4) {
        bin.push(0);
    }
    let mut view = json!({"buffer": 0, "byteOffset": bin.len(), "byteLength": bytes.len()});
    if let Some(s) = stride {
        view["byteStride"] = json!(s);
    }
    bin.extend_from_slice(bytes);
    let views = doc["bufferViews"].as_array_mut().unwrap();
    views.push(view);
    let mut acc = acc;
    acc["bufferView"] = json!(views.len() - 1);
    let accessors = doc["accessors"].as_array_mut().unwrap();
    accessors.push(acc);
    accessors.len() - 1
}

/// Rotation keys in normalized integers decode by the spec's formulas; keys in a type the
/// core spec does not allow for rotations (SHORT not normalized, UNSIGNED_INT) and morph
/// target deltas in a type the extension does not allow (UNSIGNED_SHORT POSITION) are errors
/// that name the sampler or the target.
#[test]
fn animation_keys_and_morph_deltas_follow_their_tables() {
    let base = triangle(&[], QUANTIZATION);
    let with_rotation = |ct: u32, norm: bool, comps: &[i32]| {
        edit(&base, |doc, bin| {
            let times: Vec<u8> = [0f32, 1.0].iter().flat_map(|x| x.to_le_bytes()).collect();
            let t = add_accessor(
                doc,
                bin,
                &times,
                json!({"componentType": 5126, "type": "SCALAR", "count": 2, "min": [0.0], "max": [1.0]}),
                None,
            );
            let r = add_accessor(
                doc,
                bin,
                &stored(comps, ct, 4),
                json!({"componentType": ct, "type": "VEC4", "count": 2, "normalized": norm}),
                None,
            );
            doc["animations"] = json!([{"samplers": [{"input": t, "output": r}], "channels": [{"sampler": 0, "target": {"node": 0, "path": "rotation"}}]}]);
        })
    };
    // Key 1 holds the type's minimum and maximum: -90 degrees about z only through the
    // clamp max(c / 127, -1) (without it, -128/127 would tilt the axis).
    for (ct, lo, hi) in [(5122u32, -32768, 32767), (5120, -128, 127)] {
        let file = with_rotation(ct, true, &[0, 0, 0, hi, 0, 0, lo, hi]);
        let scene = import_gltf_slice(&file, None, &AssetRegistry::new()).unwrap();
        let q = scene.clips[0].sample_bone(BoneIndex(0), 1.0).rotation;
        let want = Quat::from_rotation_z(-std::f32::consts::FRAC_PI_2);
        assert!(
            q.dot(want) > 1.0 - 1e-7 && (q.z + q.w).abs() < 1e-7,
            "{ct}: {q}"
        );
    }
    let (_, used_as, reason) =
        accessor_error(&with_rotation(5122, false, &[0, 0, 0, 1, 0, 0, 1, 1]));
    assert_eq!(used_as, "animation 0 sampler 0 output");
    assert!(
        reason.contains("SHORT is not allowed here") && reason.contains("normalized SHORT"),
        "{reason}"
    );
    let targets = edit(&base, |doc, bin| {
        let d = stored(&[1, 0, 0, 0, 1, 0, 0, 0, 1], 5123, 3);
        let t = add_accessor(
            doc,
            bin,
            &d,
            json!({"componentType": 5123, "type": "VEC3", "count": 3}),
            Some(8),
        );
        doc["meshes"][0]["primitives"][0]["targets"] = json!([{"POSITION": t}]);
    });
    let (_, used_as, reason) = accessor_error(&targets);
    assert_eq!(used_as, "mesh 0 primitive 0 target 0 POSITION");
    assert!(
        reason.contains("UNSIGNED_SHORT is not allowed here, even with KHR_mesh_quantization"),
        "{reason}"
    );
}

// ---------------------------------------------------------------------------------------
// Sparse accessors in a data: URI buffer.

/// gltf-transform's RiggedSimple with its POSITION written as a sparse accessor without a
/// buffer view (every vertex substituted) and a sparse morph target (64 of 160 vertices),
/// in a `.gltf` whose buffer is a base64 `data:` URI: positions equal the parse here (base64
/// decoded, substitutions applied by hand) and the original file's floats; the morph target
/// imports with the deltas of the same parse (a bad one fails the import).
#[test]
fn sparse_positions_in_a_data_uri_file_match_an_independent_parse_and_the_original() {
    let f = load("RiggedSimple.sparse.gltf");
    let uri = f.json["buffers"][0]["uri"].as_str().unwrap();
    assert!(uri.starts_with("data:application/octet-stream;base64,"));
    let pos = f.attribute("POSITION");
    let acc = &f.json["accessors"][pos];
    assert!(acc["bufferView"].is_null() && acc["sparse"]["count"] == acc["count"]);
    let target = f.json["meshes"][0]["primitives"][0]["targets"][0]["POSITION"]
        .as_u64()
        .unwrap() as usize;
    assert_eq!(f.json["accessors"][target]["sparse"]["count"], 64);
    let registry = AssetRegistry::new();
    let scene = import("RiggedSimple.sparse.gltf", &registry);
    let mesh = &scene.meshes[0].skinned_mesh;
    assert_eq!(mesh.positions(), f.vec3s(pos));
    let original = import("RiggedSimple.glb", &registry);
    assert_eq!(
        mesh.positions(),
        original.meshes[0].skinned_mesh.positions()
    );
    // The independent parse of the target: zero but for the top cap, which moves up 0.5; the
    // imported target holds exactly these deltas.
    let deltas = f.vec3s(target);
    assert_eq!(mesh.morph_targets().len(), 1);
    assert_eq!(mesh.morph_targets().target_positions(0), deltas.as_slice());
    let moved: Vec<usize> = (0..deltas.len())
        .filter(|&v| deltas[v] != Vec3::ZERO)
        .collect();
    assert_eq!(moved.len(), 64);
    assert!(
        moved
            .iter()
            .all(|&v| deltas[v].z == 0.5 && mesh.positions()[v].z > 3.5)
    );
    // A sparse index past the end of the target is an error naming the target accessor.
    let mut json = f.json.clone();
    json["accessors"][target]["count"] = json!(10);
    let e = import_gltf_slice(&serde_json::to_vec(&json).unwrap(), None, &registry).unwrap_err();
    assert!(
        matches!(&e, ImportError::Accessor { accessor, .. } if *accessor == target),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------
// Clips from other files.

/// Fox split by gltf-transform into a file with the mesh and no animations and a file with
/// the animations and no mesh: the clips imported onto the mesh file's rig sample exactly
/// as the original file's clips, bone by bone, at key times and between them, and every
/// bone and node is matched.
#[test]
fn clips_from_an_animation_only_file_equal_the_original_clips() {
    let registry = AssetRegistry::new();
    let original = import("Fox.glb", &registry);
    let character = import("Fox.mesh.glb", &registry);
    assert!(character.clips.is_empty() && !character.meshes.is_empty());
    let f = load("Fox.clips.glb");
    assert!(f.json["meshes"].is_null() && f.json["animations"].as_array().unwrap().len() == 3);
    let lib = import_gltf_clips(&asset_path("Fox.clips.glb"), &character.rig, &registry).unwrap();
    assert!(
        lib.nodes_without_bone.is_empty(),
        "{:?}",
        lib.nodes_without_bone
    );
    assert!(
        lib.bones_without_node.is_empty(),
        "{:?}",
        lib.bones_without_node
    );
    assert_eq!(lib.clips.len(), 3);
    for (clip, want) in lib.clips.iter().zip(&original.clips) {
        assert_eq!(clip.name(), want.name());
        assert_eq!(clip.rig_hash(), character.rig.content_hash());
        assert_eq!(clip.duration(), want.duration());
        let times = [
            0.0,
            0.1,
            0.25,
            want.duration() * 0.5,
            want.duration() * 0.93,
        ];
        for (i, name) in original.rig.bone_names().iter().enumerate() {
            let b = character.rig.find_by_name(name).unwrap();
            for t in times {
                assert_eq!(
                    clip.sample_bone(b, t),
                    want.sample_bone(BoneIndex(i as u32), t),
                    "{} {name} at {t}",
                    clip.name()
                );
            }
        }
    }
    // The clips bind to the character: the checked spawn bundle accepts them.
    let anim = sinew_jobs::component::AnimationToProcess::new(lib.clips[1].clone());
    let mesh = character.meshes[0].skinned_mesh.clone();
    assert!(sinew_jobs::component::try_skinned(character.rig.clone(), mesh, vec![anim]).is_ok());
    // Onto gltfpack's Fox rig, which has an extra (unnamed) mesh node: reported, unanimated.
    let packed = import("Fox.gltfpack.glb", &registry);
    let lib = import_gltf_clips(&asset_path("Fox.clips.glb"), &packed.rig, &registry).unwrap();
    assert_eq!(lib.bones_without_node, ["node_0"]);
    assert!(lib.nodes_without_bone.is_empty());
}

/// Unmatched both ways: an animated node the rig lacks (its channels dropped, with a
/// warning) and rig bones the file lacks (left at the rig's rest pose).
#[test]
fn unmatched_bones_are_reported_both_ways() {
    let registry = AssetRegistry::new();
    let character = import("Fox.mesh.glb", &registry);
    let f = load("Fox.clips.glb");
    let mut json = f.json.clone();
    // Rename the head, so the clip's head channels match no bone.
    let head = json["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .position(|n| n["name"] == "b_Head_05")
        .unwrap();
    json["nodes"][head]["name"] = json!("b_Head_99");
    let glb = pack_glb(&json, f.bin.clone());
    let lib = import_gltf_clips_slice(&glb, None, &character.rig, &registry).unwrap();
    assert_eq!(lib.nodes_without_bone, ["b_Head_99"]);
    assert_eq!(lib.bones_without_node, ["b_Head_05"]);
    assert!(
        lib.warnings
            .iter()
            .any(|w| w.contains("'b_Head_99' is no bone of the rig") && w.contains("skipped")),
        "{:?}",
        lib.warnings
    );
    let bone = character.rig.find_by_name("b_Head_05").unwrap();
    let rest = character.rig.rest_pose()[bone.get()];
    assert_eq!(lib.clips[2].sample_bone(bone, 0.3), rest);
}

// ---------------------------------------------------------------------------------------
// EXT_meshopt_compression (feature `meshopt`).

/// Model matrices of every bone, at each of a few times of every clip, by bone name.
#[cfg(feature = "meshopt")]
fn poses(scene: &GltfScene) -> Vec<(String, f32, Mat4)> {
    let mut out = Vec::new();
    for clip in &scene.clips {
        for t in [0.0, 0.29, clip.duration() * 0.61] {
            let model = model_at(&scene.rig, clip, t);
            for (name, m) in scene.rig.bone_names().iter().zip(model) {
                out.push((format!("{} {name}", clip.name()), t, m));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    out
}

/// A vertex's data as bits: position, then (joint name, weight) pairs.
#[cfg(feature = "meshopt")]
type VertexBits = ([u32; 3], Vec<(String, u32)>);

/// The triangles of `m` as vertex data, each rotated to start at its smallest vertex, sorted.
#[cfg(feature = "meshopt")]
fn triangle_soup(m: &SkinnedMesh) -> Vec<[VertexBits; 3]> {
    let vertex = |v: u32| -> VertexBits {
        let v = v as usize;
        let p = m.positions()[v].to_array().map(f32::to_bits);
        let inf = influences(m, v)
            .into_iter()
            .map(|(n, w)| (n, w.to_bits()))
            .collect();
        (p, inf)
    };
    let mut out: Vec<[VertexBits; 3]> = m
        .indices()
        .chunks_exact(3)
        .map(|t| {
            let c = [vertex(t[0]), vertex(t[1]), vertex(t[2])];
            let k = (0..3).min_by(|&i, &j| c[i].cmp(&c[j])).unwrap();
            [c[k].clone(), c[(k + 1) % 3].clone(), c[(k + 2) % 3].clone()]
        })
        .collect();
    out.sort();
    out
}

/// gltfpack `-c` (no filters) writes the same quantized data as without `-c`, compressed:
/// decoded, the meshopt file's mesh and clips equal the uncompressed gltfpack file's, value
/// for value (the same triangles of the same vertex data, in another order). With `-cc` rotations go through the QUATERNION filter and translations through
/// the EXPONENTIAL one (the same 12- and 16-bit precisions, encoded differently): the poses
/// agree with the uncompressed file's within the Fox test's rotation bound, `d · 2δ · s`.
#[cfg(feature = "meshopt")]
#[test]
fn meshopt_files_decode_to_the_uncompressed_files_data() {
    let registry = AssetRegistry::new();
    let plain = import("Fox.gltfpack.glb", &registry);
    let c = import("Fox.meshopt.glb", &registry);
    let f = load("Fox.meshopt.glb");
    assert!(
        f.json["extensionsRequired"]
            .as_array()
            .unwrap()
            .contains(&json!("EXT_meshopt_compression"))
    );
    let (a, b) = (&plain.meshes[0].skinned_mesh, &c.meshes[0].skinned_mesh);
    // Compression reorders the vertices and rotates triangles' corners: the meshes are the
    // same triangles of the same vertex data.
    assert_eq!(triangle_soup(a), triangle_soup(b));
    let ibm = |m: &SkinnedMesh| m.bones().iter().map(|b| b.inverse_bind).collect::<Vec<_>>();
    assert_eq!(ibm(a), ibm(b));
    assert_eq!(poses(&plain), poses(&c));
    let cc = import("Fox.meshopt-cc.glb", &registry);
    let filters: Vec<String> = load("Fox.meshopt-cc.glb").json["bufferViews"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["extensions"]["EXT_meshopt_compression"]["filter"].as_str())
        .map(str::to_string)
        .collect();
    assert!(
        filters.contains(&"QUATERNION".to_string()) && filters.contains(&"EXPONENTIAL".to_string())
    );
    assert_eq!(triangle_soup(&cc.meshes[0].skinned_mesh), triangle_soup(a));
    let delta = 2.0 * (1.0f32 / 2047.0).asin();
    let mut worst = 0.0f32;
    for ((name, t, m), (name_cc, _, m_cc)) in poses(&plain).iter().zip(poses(&cc)) {
        assert_eq!(*name, name_cc);
        let bone = name.split_once(' ').unwrap().1;
        let mut d = 0;
        let mut b = plain.rig.find_by_name(bone).unwrap();
        while let Some(p) = plain.rig.parent(b) {
            d += 1;
            b = p;
        }
        let e = (m.w_axis - m_cc.w_axis).length();
        assert!(
            e <= d as f32 * 2.0 * delta * 150.0 + 1e-3,
            "{name} at {t}: {e}"
        );
        worst = worst.max(e);
    }
    println!("Fox -cc against gltfpack without -c: largest bone difference {worst}");
}

/// Compressed views that lie about their size, stride, mode or filter, or whose data is
/// corrupt, are errors naming the view; none reaches the decoder's assertions.
#[cfg(feature = "meshopt")]
#[test]
fn bad_meshopt_views_are_errors_that_name_the_view() {
    let f = load("Fox.meshopt.glb");
    let registry = AssetRegistry::new();
    let views = f.json["bufferViews"].as_array().unwrap();
    let attr = views
        .iter()
        .position(|v| v["extensions"]["EXT_meshopt_compression"]["mode"] == "ATTRIBUTES")
        .unwrap();
    let tri = views
        .iter()
        .position(|v| v["extensions"]["EXT_meshopt_compression"]["mode"] == "TRIANGLES")
        .unwrap();
    let stride12 = views
        .iter()
        .position(|v| v["extensions"]["EXT_meshopt_compression"]["byteStride"] == 12)
        .unwrap();
    let ext = |v: usize| format!("/bufferViews/{v}/extensions/EXT_meshopt_compression");
    let cases: Vec<(usize, &str, Value, &str)> = vec![
        (attr, "byteStride", json!(6), "not the view's byteLength"),
        (
            attr,
            "count",
            json!(1_000_000_000_u64),
            "not the view's byteLength",
        ),
        (attr, "mode", json!("POINTS"), "unknown mode"),
        (
            stride12,
            "filter",
            json!("OCTAHEDRAL"),
            "filter OCTAHEDRAL with byte stride",
        ),
        (
            tri,
            "filter",
            json!("QUATERNION"),
            "filters apply to ATTRIBUTES",
        ),
        (attr, "byteLength", json!(3), "cannot decode"),
        (attr, "byteOffset", json!(1_000_000), "runs past the end"),
        (attr, "buffer", json!(7), "missing buffer 7"),
    ];
    for (view, key, value, want) in cases {
        let mut json = f.json.clone();
        json.pointer_mut(&ext(view)).unwrap()[key] = value.clone();
        if key == "byteStride" {
            // Keep count × stride equal to the view's length, so the stride check is reached.
            let len = json["bufferViews"][view]["byteLength"].as_u64().unwrap();
            json["bufferViews"][view]["byteLength"] = json!(len / 8 * 6);
            *json.pointer_mut(&format!("{}/count", ext(view))).unwrap() = json!(len / 8);
        }
        let e = import_gltf_slice(&pack_glb(&json, f.bin.clone()), None, &registry)
            .err()
            .unwrap_or_else(|| panic!("{key} = {value} imported"));
        let text = e.to_string();
        assert!(
            matches!(&e, ImportError::BufferView { view: v, .. } if *v == view)
                && text.contains(want)
                || key == "byteStride" && text.contains("byte stride 6"),
            "{key} = {value}: {text}"
        );
    }
    // TRIANGLES whose count is not a multiple of 3.
    let mut json = f.json.clone();
    let count = json
        .pointer(&format!("{}/count", ext(tri)))
        .unwrap()
        .as_u64()
        .unwrap();
    *json.pointer_mut(&format!("{}/count", ext(tri))).unwrap() = json!(count - 1);
    json["bufferViews"][tri]["byteLength"] = json!((count - 1) * 2);
    let e = import_gltf_slice(&pack_glb(&json, f.bin.clone()), None, &registry).unwrap_err();
    assert!(e.to_string().contains("not a multiple of 3"), "{e}");
    // Corrupt compressed bytes: an error or garbage the accessor checks catch, never a panic.
    let c = &views[attr]["extensions"]["EXT_meshopt_compression"];
    let start = c["byteOffset"].as_u64().unwrap() as usize;
    for k in [0usize, 1, 7, 40] {
        let mut bin = f.bin.clone();
        bin[start + k] ^= 0x5a;
        let _ = import_gltf_slice(&pack_glb(&f.json, bin), None, &registry);
    }
}

/// One bit flipped anywhere in the derived files (200 times each, half in the BIN chunk,
/// where the quantized integers and the compressed streams are): a scene with finite
/// vertices or an error with a message, never a panic (a caught panic is `Malformed`).
#[test]
fn bit_flips_in_quantized_and_compressed_files_are_errors_not_panics() {
    let mut names = vec![
        "CesiumMan.quantized.glb",
        "Fox.gltfpack.glb",
        "RiggedSimple.morph.gltfpack.glb",
    ];
    if cfg!(feature = "meshopt") {
        names.push("Fox.meshopt-cc.glb");
    }
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for name in names {
        let bytes = std::fs::read(asset_path(name)).unwrap();
        // Unchanged, every file imports (RiggedSimple.morph.gltfpack.glb with its SHORT
        // morph deltas too).
        import_gltf_slice(&bytes, None, &AssetRegistry::new()).unwrap_or_else(|e| panic!("{e}"));
        let bin_start = 20 + u32_at(&bytes, 12) + 8;
        let (mut ok, mut err) = (0, 0);
        for flip in 0..200 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = if flip % 2 == 0 {
                bin_start + (state as usize) % (bytes.len() - bin_start)
            } else {
                (state as usize) % bytes.len()
            };
            let mut b = bytes.clone();
            b[at] ^= 1 << ((state >> 32) % 8);
            match import_gltf_slice(&b, None, &AssetRegistry::new()) {
                Ok(scene) => {
                    ok += 1;
                    for m in &scene.meshes {
                        let mesh = &m.skinned_mesh;
                        assert!(
                            mesh.positions().iter().all(|p| p.is_finite()),
                            "{name} byte {at}"
                        );
                    }
                }
                Err(e @ ImportError::Malformed { .. }) => panic!("{name} byte {at}: {e}"),
                Err(e) => {
                    err += 1;
                    assert!(
                        !e.to_string().trim_end().ends_with(':'),
                        "{name} byte {at}: {e}"
                    );
                }
            }
        }
        eprintln!("{name}: 200 bit flips: {ok} valid scenes, {err} errors");
    }
}
