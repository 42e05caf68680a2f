//! Files written by the glTF pipelines' tools (gltf-transform, gltfpack), derived from the
//! Khronos samples by `fixtures/assets/make_derived.mjs`: `KHR_mesh_quantization`, sparse
//! accessors in a `data:` URI buffer, and clips imported from a file without the mesh.
//! Expected values come from an independent parse: the JSON with serde_json, the buffers
//! split and base64-decoded here, accessor components decoded with the spec's formulas.
// Helpers outside `#[test]` functions unwrap and panic on fixture errors, as tests do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use glam::{Mat4, Vec3};
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
            let (a, b) = (influences(mesh, v), file_influences(&f, &scene.node_names, v));
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
    let (lo, hi) = (&f.json["accessors"][pos]["min"], &f.json["accessors"][pos]["max"]);
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
        let (jo, jq) = (joint_positions(&original, &mo), joint_positions(&quantized, &mq));
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

/// gltfpack's Fox (UNSIGNED_SHORT positions whose dequantization is in the inverse bind
/// matrices, and also on the mesh node, which glTF ignores for skinned meshes; 12-bit
/// rotation keys in normalized SHORT; 8-bit weights; merged vertices) poses and skins like
/// the original. Bounds, with `s` the model's size: a 12-bit rotation key is off by at most
/// `δ = 2·asin(1/2047)` rad, which moves everything below the bone by at most `δ·s`, so a
/// bone `d` levels deep is off by at most `d·δ·s` and a vertex by `(D + 1)·δ·s` (`D` the
/// deepest joint); weights quantized to 8 bits (4 influences, each off by at most 0.5/255)
/// add `4 · 0.5/255 · s`, positions on a 14-bit grid `√3 · s/16383`. Vertices are matched to
/// the nearest vertex of the other file (gltfpack merges and reorders them).
#[test]
fn gltfpack_fox_poses_and_skins_like_the_original() {
    let registry = AssetRegistry::new();
    let original = import("Fox.glb", &registry);
    let packed = import("Fox.gltfpack.glb", &registry);
    let f = load("Fox.gltfpack.glb");
    let node0 = &f.json["nodes"][0];
    assert!(node0["mesh"].is_u64() && node0["skin"].is_u64() && node0["scale"].is_array());
    let rot = f.json["animations"][0]["samplers"][1]["output"].as_u64().unwrap() as usize;
    assert_eq!(f.storage(rot), (5122, true), "rotation keys");
    let delta = 2.0 * (1.0f32 / 2047.0).asin();
    let size = 150.0; // the Fox is about 130 units long
    let depth = |rig: &Rig, i: usize| {
        let (mut d, mut b) = (0, BoneIndex(i as u32));
        while let Some(p) = rig.parent(b) {
            d += 1;
            b = p;
        }
        d
    };
    let deepest = (0..original.rig.bone_count())
        .map(|i| depth(&original.rig, i))
        .max()
        .unwrap();
    let vertex_bound = (deepest + 1) as f32 * delta * size
        + 4.0 * 0.5 / 255.0 * size
        + 3f32.sqrt() * size / 16383.0;
    let (mut worst_bone, mut worst_vertex) = (0.0f32, 0.0f32);
    for (ci, clip) in original.clips.iter().enumerate() {
        let pc = &packed.clips[ci];
        assert_eq!(pc.name(), clip.name());
        for t in [0.0, 0.41, clip.duration() * 0.77] {
            let (mo, mp) = (model_at(&original.rig, clip, t), model_at(&packed.rig, pc, t));
            for (i, name) in original.rig.bone_names().iter().enumerate() {
                let j = packed.rig.find_by_name(name).unwrap().get();
                let (a, q) = (mo[i].w_axis.truncate(), mp[j].w_axis.truncate());
                let bound = depth(&original.rig, i) as f32 * delta * size + 1e-4 * size;
                let e = (a - q).length();
                assert!(e <= bound, "{name} at {t}: {a} {q}");
                worst_bone = worst_bone.max(e);
            }
            let xo: Vec<Vec3> = joint_positions(&original, &mo)
                .iter()
                .map(|j| skinned(j))
                .collect();
            let xp: Vec<Vec3> = joint_positions(&packed, &mp)
                .iter()
                .map(|j| skinned(j))
                .collect();
            let nearest = |p: Vec3, set: &[Vec3]| {
                set.iter()
                    .map(|q| (p - *q).length())
                    .fold(f32::MAX, f32::min)
            };
            for (v, p) in xp.iter().enumerate() {
                let e = nearest(*p, &xo);
                assert!(e <= vertex_bound, "{} at {t}: packed vertex {v}: {e}", clip.name());
                worst_vertex = worst_vertex.max(e);
            }
            for (v, p) in xo.iter().enumerate() {
                let e = nearest(*p, &xp);
                assert!(e <= vertex_bound, "{} at {t}: vertex {v}: {e}", clip.name());
            }
        }
    }
    println!(
        "gltfpack Fox: largest bone error {worst_bone}, vertex error {worst_vertex} (bound {vertex_bound}), size {size}"
    );
}
