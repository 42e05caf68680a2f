//! glTF import tests against the Khronos sample files in `fixtures/assets/gltf/` and hand-written
//! files. Expected values are derived independently: the JSON chunk is parsed here with
//! serde_json, accessor floats are read from the BIN chunk by hand, and interpolation is
//! computed from the glTF spec formulas.
// Helpers outside `#[test]` functions unwrap and panic on fixture errors, as tests do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::glb::Builder;
use glam::{Mat4, Quat, Vec3, Vec4};
use serde_json::{Value, json};
use sinew_jobs::asset::{AssetRegistry, BoneIndex, Clip, Rig};
use sinew_jobs::import::{GltfScene, ImportError, import_gltf, import_gltf_slice};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

const FILES: [&str; 5] = [
    "Fox.glb",
    "CesiumMan.glb",
    "RiggedSimple.glb",
    "SimpleSkin.glb",
    "InterpolationTest.glb",
];

fn asset_path(name: &str) -> PathBuf {
    sinew_fixtures::asset_path(format!("gltf/{name}")).unwrap()
}

/// A GLB file split by hand: the parsed JSON and the BIN chunk.
struct Glb {
    bytes: Vec<u8>,
    json: Value,
    json_range: std::ops::Range<usize>,
    bin: Vec<u8>,
}

fn u32_at(b: &[u8], at: usize) -> usize {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize
}

fn load(name: &str) -> Glb {
    let bytes = std::fs::read(asset_path(name)).unwrap();
    assert_eq!(&bytes[0..4], b"glTF");
    let jlen = u32_at(&bytes, 12);
    let json: Value = serde_json::from_slice(&bytes[20..20 + jlen]).unwrap();
    let bstart = 20 + jlen;
    let blen = u32_at(&bytes, bstart);
    let bin = bytes[bstart + 8..bstart + 8 + blen].to_vec();
    Glb {
        json_range: 20..20 + jlen,
        bytes,
        json,
        bin,
    }
}

impl Glb {
    fn arr(&self, key: &str) -> Vec<Value> {
        self.json[key].as_array().cloned().unwrap_or_default()
    }
    /// The float components of accessor `i` (FLOAT, possibly strided).
    fn floats(&self, i: usize) -> Vec<f32> {
        let acc = &self.json["accessors"][i];
        assert_eq!(
            acc["componentType"], 5126,
            "test helper reads FLOAT accessors only"
        );
        let dims = match acc["type"].as_str().unwrap() {
            "SCALAR" => 1,
            "VEC2" => 2,
            "VEC3" => 3,
            "VEC4" => 4,
            "MAT4" => 16,
            t => panic!("{t}"),
        };
        let view = &self.json["bufferViews"][acc["bufferView"].as_u64().unwrap() as usize];
        let base = view["byteOffset"].as_u64().unwrap_or(0) as usize
            + acc["byteOffset"].as_u64().unwrap_or(0) as usize;
        let stride = view["byteStride"].as_u64().map_or(dims * 4, |s| s as usize);
        let count = acc["count"].as_u64().unwrap() as usize;
        let mut out = Vec::new();
        for e in 0..count {
            for c in 0..dims {
                let at = base + e * stride + c * 4;
                out.push(f32::from_le_bytes(self.bin[at..at + 4].try_into().unwrap()));
            }
        }
        out
    }
    /// Node indices in the rig: reachable from the default scene, or all.
    fn rig_nodes(&self) -> Vec<usize> {
        let nodes = self.arr("nodes");
        match self.json["scene"].as_u64() {
            None => (0..nodes.len()).collect(),
            Some(s) => {
                let mut out = Vec::new();
                let mut stack: Vec<usize> = self.json["scenes"][s as usize]["nodes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_u64().unwrap() as usize)
                    .collect();
                while let Some(n) = stack.pop() {
                    out.push(n);
                    for c in nodes[n]["children"].as_array().into_iter().flatten() {
                        stack.push(c.as_u64().unwrap() as usize);
                    }
                }
                out.sort_unstable();
                out
            }
        }
    }
}

fn vec3(v: &Value, default: Vec3) -> Vec3 {
    v.as_array()
        .map_or(default, |a| Vec3::new(f(&a[0]), f(&a[1]), f(&a[2])))
}
fn f(v: &Value) -> f32 {
    v.as_f64().unwrap() as f32
}

/// The node's local matrix from the JSON (TRS or matrix), computed without the importer.
fn json_local(node: &Value) -> Mat4 {
    if let Some(m) = node["matrix"].as_array() {
        let a: Vec<f32> = m.iter().map(f).collect();
        return Mat4::from_cols_slice(&a);
    }
    let t = vec3(&node["translation"], Vec3::ZERO);
    let s = vec3(&node["scale"], Vec3::ONE);
    let r = node["rotation"].as_array().map_or(Quat::IDENTITY, |a| {
        Quat::from_xyzw(f(&a[0]), f(&a[1]), f(&a[2]), f(&a[3]))
    });
    Mat4::from_translation(t) * Mat4::from_quat(r) * Mat4::from_scale(s)
}

fn mat_close(a: Mat4, b: Mat4, tol: f32) -> bool {
    a.to_cols_array()
        .iter()
        .zip(b.to_cols_array())
        .all(|(x, y)| (x - y).abs() <= tol * (1.0 + y.abs()))
}

fn model_matrices(rig: &Rig, pose: &[sinew_jobs::asset::Transform]) -> Vec<Mat4> {
    assert_eq!(pose.len(), rig.bone_count());
    let mut out: Vec<Mat4> = Vec::with_capacity(rig.bone_count());
    for (i, t) in pose.iter().enumerate() {
        let local = t.to_mat4();
        let m = match rig.parent(BoneIndex(i as u32)) {
            Some(p) => out[p.get()] * local,
            None => local,
        };
        out.push(m);
    }
    out
}

fn import(name: &str, registry: &AssetRegistry) -> GltfScene {
    import_gltf(&asset_path(name), registry).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_sample_matches_its_json() {
    for name in FILES {
        let g = load(name);
        let registry = AssetRegistry::new();
        let scene = import(name, &registry);
        let nodes = g.arr("nodes");
        let in_rig = g.rig_nodes();
        assert_eq!(scene.rig.bone_count(), in_rig.len(), "{name}");
        assert_eq!(scene.node_names.len(), nodes.len(), "{name}");
        assert_eq!(scene.node_to_bone.len(), nodes.len(), "{name}");
        // Names: the node's own name when it has one (these files have no duplicates).
        for (i, n) in nodes.iter().enumerate() {
            let expected = n["name"]
                .as_str()
                .map_or_else(|| format!("node_{i}"), str::to_string);
            assert_eq!(scene.node_names[i], expected, "{name} node {i}");
        }
        // Hierarchy and rest pose.
        for &i in &in_rig {
            let bone =
                scene.node_to_bone[i].unwrap_or_else(|| panic!("{name}: node {i} not in rig"));
            assert_eq!(scene.rig.bone_names()[bone.get()], scene.node_names[i]);
            assert_eq!(scene.rig.find_by_name(&scene.node_names[i]), Some(bone));
            let rest = scene.rig.rest_pose()[bone.get()].to_mat4();
            assert!(
                mat_close(rest, json_local(&nodes[i]), 1e-5),
                "{name} node {i}: {rest} vs {}",
                json_local(&nodes[i])
            );
            for c in nodes[i]["children"].as_array().into_iter().flatten() {
                let c = c.as_u64().unwrap() as usize;
                assert_eq!(
                    scene.rig.parent(scene.node_to_bone[c].unwrap()),
                    Some(bone),
                    "{name}: parent of node {c}"
                );
            }
        }
        // Skins: joints, inverse bind matrices, mesh bones.
        let skins = g.arr("skins");
        assert_eq!(scene.skins.len(), skins.len(), "{name}");
        for (s, js) in scene.skins.iter().zip(&skins) {
            let joints: Vec<usize> = js["joints"]
                .as_array()
                .unwrap()
                .iter()
                .map(|j| j.as_u64().unwrap() as usize)
                .collect();
            assert_eq!(s.joints, joints, "{name}");
            assert_eq!(s.skeleton, js["skeleton"].as_u64().map(|x| x as usize));
            let ibm = g.floats(js["inverseBindMatrices"].as_u64().unwrap() as usize);
            assert_eq!(s.inverse_bind_matrices.len(), joints.len());
            for (k, m) in s.inverse_bind_matrices.iter().enumerate() {
                assert_eq!(
                    m.to_cols_array().as_slice(),
                    &ibm[k * 16..k * 16 + 16],
                    "{name} joint {k}"
                );
            }
        }
        // One skinned primitive per (node with mesh and skin, primitive).
        let expected_prims: usize = nodes
            .iter()
            .filter(|n| n["skin"].is_u64())
            .map(|n| {
                g.json["meshes"][n["mesh"].as_u64().unwrap() as usize]["primitives"]
                    .as_array()
                    .unwrap()
                    .len()
            })
            .sum();
        assert_eq!(scene.meshes.len(), expected_prims, "{name}");
        for p in &scene.meshes {
            let skin = &scene.skins[p.skin];
            let mesh = &p.skinned_mesh;
            let names: Vec<&str> = mesh.bones().iter().map(|b| b.name.as_str()).collect();
            let expected: Vec<&str> = skin
                .joints
                .iter()
                .map(|&j| scene.node_names[j].as_str())
                .collect();
            assert_eq!(names, expected, "{name}");
            for (b, m) in mesh.bones().iter().zip(&skin.inverse_bind_matrices) {
                assert_eq!(b.inverse_bind, *m);
            }
            let prim = &g.json["meshes"][p.mesh]["primitives"][p.primitive];
            let pos_acc =
                &g.json["accessors"][prim["attributes"]["POSITION"].as_u64().unwrap() as usize];
            assert_eq!(
                mesh.positions().len() as u64,
                pos_acc["count"].as_u64().unwrap()
            );
            let pos = g.floats(prim["attributes"]["POSITION"].as_u64().unwrap() as usize);
            assert_eq!(mesh.positions()[1], Vec3::new(pos[3], pos[4], pos[5]));
            let index_count = match prim["indices"].as_u64() {
                Some(i) => g.json["accessors"][i as usize]["count"].as_u64().unwrap() as usize,
                None => mesh.positions().len(),
            };
            assert_eq!(mesh.indices().len(), index_count);
            assert_eq!(
                mesh.normals().len(),
                if prim["attributes"]["NORMAL"].is_u64() {
                    mesh.positions().len()
                } else {
                    0
                }
            );
            for w in mesh.weights() {
                assert!((w.iter().sum::<f32>() - 1.0).abs() < 1e-4);
            }
        }
        // Clips: one per animation, names, key counts, duration = last key time.
        let anims = g.arr("animations");
        assert_eq!(scene.clips.len(), anims.len(), "{name}");
        for (ai, (clip, a)) in scene.clips.iter().zip(&anims).enumerate() {
            let expected = a["name"]
                .as_str()
                .map_or_else(|| format!("animation_{ai}"), str::to_string);
            assert_eq!(clip.name(), expected);
            assert!(clip.looping());
            let mut last = 0.0f32;
            for ch in a["channels"].as_array().unwrap() {
                let sampler = &a["samplers"][ch["sampler"].as_u64().unwrap() as usize];
                let times = g.floats(sampler["input"].as_u64().unwrap() as usize);
                last = last.max(*times.last().unwrap());
                let node = ch["target"]["node"].as_u64().unwrap() as usize;
                let bone = scene.node_to_bone[node].unwrap().get();
                let channel = match ch["target"]["path"].as_str().unwrap() {
                    "translation" => clip.bone_channels()[bone][0],
                    "rotation" => clip.bone_channels()[bone][1],
                    "scale" => clip.bone_channels()[bone][2],
                    p => panic!("{p}"),
                }
                .unwrap();
                assert_eq!(
                    clip.timelines()[channel.timeline as usize].times(),
                    times.as_slice(),
                    "{name} clip {ai}"
                );
            }
            assert_eq!(clip.duration(), last, "{name} clip {ai}");
        }
    }
}

#[test]
fn fox_and_cesium_man_have_the_documented_content() {
    let registry = AssetRegistry::new();
    let fox = import("Fox.glb", &registry);
    assert_eq!(fox.skins[0].joints.len(), 24);
    let names: Vec<&str> = fox.clips.iter().map(|c| c.name()).collect();
    assert_eq!(names, ["Survey", "Walk", "Run"]);
    assert_eq!(fox.meshes.len(), 1);
    assert_eq!(fox.meshes[0].skinned_mesh.name(), "fox1/0");
    let man = import("CesiumMan.glb", &registry);
    assert_eq!(man.skins[0].joints.len(), 19);
    assert_eq!(man.meshes[0].skinned_mesh.bone_count(), 19);
    assert_eq!(man.clips.len(), 1);
    assert_eq!(man.clips[0].name(), "animation_0");
}

/// Palette of a skinned primitive at `pose`: model(joint) × inverse bind, as float3x4.
fn palette(
    scene: &GltfScene,
    prim: usize,
    pose: &[sinew_jobs::asset::Transform],
) -> Vec<[f32; 12]> {
    let p = &scene.meshes[prim];
    let model = model_matrices(&scene.rig, pose);
    let skin = &scene.skins[p.skin];
    skin.joints
        .iter()
        .zip(&skin.inverse_bind_matrices)
        .map(|(&j, ibm)| {
            let m = model[scene.node_to_bone[j].unwrap().get()] * *ibm;
            let c = m.to_cols_array();
            [
                c[0], c[1], c[2], c[4], c[5], c[6], c[8], c[9], c[10], c[12], c[13], c[14],
            ]
        })
        .collect()
}

#[test]
fn simple_skin_rest_pose_and_rotation_keys() {
    // SimpleSkin (glTF tutorial): node 0 holds mesh + skin, node 1 (translation 0,1,0) is the
    // root joint, node 2 its child; both inverse bind matrices translate by (-0.5, -1, 0).
    let registry = AssetRegistry::new();
    let scene = import("SimpleSkin.glb", &registry);
    let g = load("SimpleSkin.glb");
    assert_eq!(scene.skins[0].joints, [1, 2]);
    let t = Mat4::from_translation(Vec3::new(-0.5, -1.0, 0.0));
    assert_eq!(scene.skins[0].inverse_bind_matrices, [t, t]);
    let j1 = scene.node_to_bone[1].unwrap();
    assert_eq!(scene.rig.rest_pose()[j1.get()].translation, Vec3::Y);
    // At rest, model(joint) × IBM = translate(-0.5, 0, 0) for both joints: every vertex moves by -0.5 in x.
    let mesh = &scene.meshes[0].skinned_mesh;
    assert_eq!(mesh.positions().len(), 10);
    let (skinned, _) = mesh.skin_cpu(&palette(&scene, 0, scene.rig.rest_pose()));
    for (s, p) in skinned.iter().zip(mesh.positions()) {
        assert!(
            (*s - (*p - Vec3::new(0.5, 0.0, 0.0))).length() < 1e-6,
            "{s} {p}"
        );
    }
    // The rotation channel of node 2: keys and slerp between them, from the raw floats.
    let a = &g.json["animations"][0];
    let times = g.floats(a["samplers"][0]["input"].as_u64().unwrap() as usize);
    let rots = g.floats(a["samplers"][0]["output"].as_u64().unwrap() as usize);
    let clip = &scene.clips[0];
    let bone = scene.node_to_bone[2].unwrap();
    let key = |k: usize| {
        Quat::from_xyzw(
            rots[4 * k],
            rots[4 * k + 1],
            rots[4 * k + 2],
            rots[4 * k + 3],
        )
        .normalize()
    };
    for k in 0..times.len() - 1 {
        let got = clip.sample_bone(bone, times[k]).rotation;
        assert!(got.dot(key(k)).abs() > 1.0 - 1e-6, "key {k}");
        let s = 0.3;
        let t = times[k] + s * (times[k + 1] - times[k]);
        let want = slerp(key(k), key(k + 1), s);
        let got = clip.sample_bone(bone, t).rotation;
        assert!(
            got.dot(want).abs() > 1.0 - 1e-5,
            "between {k} and {}: {got} vs {want}",
            k + 1
        );
    }
    // At the key farthest from the rest rotation, the skinned mesh is no longer the rest mesh.
    let angle = |k: usize| key(k).angle_between(Quat::IDENTITY);
    let far = (0..times.len())
        .max_by(|&a, &b| angle(a).total_cmp(&angle(b)))
        .unwrap();
    assert!(angle(far) > 0.1, "{}", angle(far));
    let pose: Vec<_> = (0..scene.rig.bone_count())
        .map(|b| clip.sample_bone(BoneIndex(b as u32), times[far]))
        .collect();
    let (moved, _) = mesh.skin_cpu(&palette(&scene, 0, &pose));
    assert!(
        moved
            .iter()
            .zip(&skinned)
            .any(|(a, b)| (*a - *b).length() > 1e-2)
    );
}

/// Shortest-path slerp from the textbook formula.
fn slerp(a: Quat, b: Quat, s: f32) -> Quat {
    let (a, mut b) = (Vec4::from(a), Vec4::from(b));
    let mut d = a.dot(b);
    if d < 0.0 {
        b = -b;
        d = -d;
    }
    if d > 0.9999 {
        return Quat::from_vec4((a + (b - a) * s).normalize());
    }
    let th = d.acos();
    Quat::from_vec4((a * ((1.0 - s) * th).sin() + b * (s * th).sin()) / th.sin())
}

fn hermite(v0: Vec4, b0: Vec4, v1: Vec4, a1: Vec4, dt: f32, s: f32) -> Vec4 {
    let (s2, s3) = (s * s, s * s * s);
    v0 * (2.0 * s3 - 3.0 * s2 + 1.0)
        + b0 * (dt * (s3 - 2.0 * s2 + s))
        + v1 * (-2.0 * s3 + 3.0 * s2)
        + a1 * (dt * (s3 - s2))
}

#[test]
fn interpolation_test_matches_the_spec_formulas() {
    let registry = AssetRegistry::new();
    let scene = import("InterpolationTest.glb", &registry);
    let g = load("InterpolationTest.glb");
    assert!(scene.meshes.is_empty(), "no skins, so no skinned meshes");
    assert!(
        scene.warnings.iter().any(|w| w.contains("without a skin")),
        "{:?}",
        scene.warnings
    );
    let mut checked = 0;
    for (ai, a) in g.arr("animations").iter().enumerate() {
        let clip: &Arc<Clip> = &scene.clips[ai];
        let ch = &a["channels"][0];
        let sampler = &a["samplers"][ch["sampler"].as_u64().unwrap() as usize];
        let times = g.floats(sampler["input"].as_u64().unwrap() as usize);
        let out = g.floats(sampler["output"].as_u64().unwrap() as usize);
        let path = ch["target"]["path"].as_str().unwrap();
        let interp = sampler["interpolation"].as_str().unwrap_or("LINEAR");
        let dims = if path == "rotation" { 4 } else { 3 };
        let per_key = if interp == "CUBICSPLINE" { 3 } else { 1 };
        let part = |k: usize, which: usize| {
            let o = (k * per_key + which) * dims;
            let mut v = Vec4::ZERO;
            for c in 0..dims {
                v[c] = out[o + c];
            }
            v
        };
        let value_of = |k: usize| if per_key == 3 { part(k, 1) } else { part(k, 0) };
        let bone = scene.node_to_bone[ch["target"]["node"].as_u64().unwrap() as usize].unwrap();
        let sample = |t: f32| {
            let tr = clip.sample_bone(bone, t);
            match path {
                "translation" => tr.translation.extend(0.0),
                "scale" => tr.scale.extend(0.0),
                _ => Vec4::from(tr.rotation),
            }
        };
        let close = |got: Vec4, want: Vec4, what: &str| {
            let ok = if dims == 4 {
                got.dot(want).abs() > 1.0 - 1e-5
            } else {
                (got - want).length() < 1e-4
            };
            assert!(
                ok,
                "{} ({interp} {path}) {what}: got {got}, want {want}",
                clip.name()
            );
        };
        let norm = |v: Vec4| if dims == 4 { v.normalize() } else { v };
        // Before the first and after the last key: held.
        close(
            sample(times[0] - 1.0),
            norm(value_of(0)),
            "before first key",
        );
        close(
            sample(times[times.len() - 1] + 1.0),
            norm(value_of(times.len() - 1)),
            "after last key",
        );
        for k in 0..times.len() - 1 {
            let dt = times[k + 1] - times[k];
            for s in [0.0f32, 0.25, 0.5, 0.8] {
                let t = times[k] + s * dt;
                let want = match interp {
                    "STEP" => norm(value_of(k)),
                    "LINEAR" if dims == 4 => Vec4::from(slerp(
                        Quat::from_vec4(value_of(k)).normalize(),
                        Quat::from_vec4(value_of(k + 1)).normalize(),
                        s,
                    )),
                    "LINEAR" => value_of(k) + (value_of(k + 1) - value_of(k)) * s,
                    // p(s) = h00 v_k + h10 dt b_k + h01 v_k+1 + h11 dt a_k+1; b = out tangent, a = in tangent.
                    "CUBICSPLINE" => norm(hermite(
                        part(k, 1),
                        part(k, 2),
                        part(k + 1, 1),
                        part(k + 1, 0),
                        dt,
                        s,
                    )),
                    i => panic!("{i}"),
                };
                close(sample(t), want, &format!("key {k} + {s}"));
                checked += 1;
            }
        }
    }
    assert!(checked > 30, "{checked}");
}

#[test]
fn cubic_spline_translation_at_a_mid_key_time_by_hand() {
    // "CubicSpline Translation" (animation 7) animates node 9: key 1 → 2 at s = 0.5, where
    // h00 = h01 = 0.5, h10 = 0.125, h11 = -0.125.
    let registry = AssetRegistry::new();
    let scene = import("InterpolationTest.glb", &registry);
    let g = load("InterpolationTest.glb");
    let a = &g.json["animations"][7];
    assert_eq!(a["name"], "CubicSpline Translation");
    let times = g.floats(a["samplers"][0]["input"].as_u64().unwrap() as usize);
    let out = g.floats(a["samplers"][0]["output"].as_u64().unwrap() as usize);
    let v = |k: usize, part: usize| {
        Vec3::new(
            out[(3 * k + part) * 3],
            out[(3 * k + part) * 3 + 1],
            out[(3 * k + part) * 3 + 2],
        )
    };
    let dt = times[2] - times[1];
    let want = v(1, 1) * 0.5 + v(1, 2) * (0.125 * dt) + v(2, 1) * 0.5 - v(2, 0) * (0.125 * dt);
    let bone = scene.node_to_bone[9].unwrap();
    let got = scene.clips[7]
        .sample_bone(bone, times[1] + 0.5 * dt)
        .translation;
    assert!((got - want).length() < 1e-5, "{got} vs {want}");
    // The Clip holds glTF time: the duration is the last key time.
    assert_eq!(scene.clips[7].duration(), *times.last().unwrap());
}

#[test]
fn importing_twice_shares_every_asset() {
    let registry = AssetRegistry::new();
    for name in FILES {
        let a = import(name, &registry);
        let counts = registry.counts();
        let b = import(name, &registry);
        let bytes = std::fs::read(asset_path(name)).unwrap();
        let c = import_gltf_slice(&bytes, None, &registry).unwrap();
        assert_eq!(registry.counts(), counts, "{name}: nothing new interned");
        for other in [&b, &c] {
            assert!(Arc::ptr_eq(&a.rig, &other.rig), "{name}");
            assert_eq!(a.clips.len(), other.clips.len());
            for (x, y) in a.clips.iter().zip(&other.clips) {
                assert!(Arc::ptr_eq(x, y), "{name}");
            }
            for (x, y) in a.meshes.iter().zip(&other.meshes) {
                assert!(Arc::ptr_eq(&x.skinned_mesh, &y.skinned_mesh), "{name}");
            }
        }
    }
    // Different files give different rigs.
    let fox = import("Fox.glb", &registry);
    let man = import("CesiumMan.glb", &registry);
    assert!(!Arc::ptr_eq(&fox.rig, &man.rig));
}

#[test]
fn truncated_and_corrupted_samples_are_errors_not_panics() {
    for name in ["Fox.glb", "SimpleSkin.glb"] {
        let g = load(name);
        let n = g.bytes.len();
        for cut in [
            0,
            3,
            11,
            12,
            19,
            20,
            g.json_range.end / 2,
            g.json_range.end,
            g.json_range.end + 8,
            n / 2,
            n - 4,
            n - 1,
        ] {
            let r = import_gltf_slice(&g.bytes[..cut], None, &AssetRegistry::new());
            assert!(r.is_err(), "{name} cut at {cut} of {n}");
        }
        // The same cuts with the GLB header (and, inside the BIN chunk, the chunk header) made
        // to agree with the shorter file: the chunk or buffer checks catch them.
        let bin_start = g.json_range.end;
        for cut in [
            g.json_range.end - 4,
            bin_start + 4,
            bin_start + 8,
            bin_start + 200,
            n / 2,
            n - 4,
        ] {
            let mut b = g.bytes[..cut].to_vec();
            b[8..12].copy_from_slice(&(cut as u32).to_le_bytes());
            assert!(
                import_gltf_slice(&b, None, &AssetRegistry::new()).is_err(),
                "{name} header-patched cut at {cut}"
            );
            if cut >= bin_start + 8 {
                b[bin_start..bin_start + 4]
                    .copy_from_slice(&((cut - bin_start - 8) as u32).to_le_bytes());
                let e = import_gltf_slice(&b, None, &AssetRegistry::new()).unwrap_err();
                assert!(
                    matches!(e, ImportError::Buffer { buffer: 0, .. }),
                    "{name} chunk-patched cut at {cut}: {e}"
                );
            }
        }
        // Breaking the JSON's first brace is a parse error.
        let mut b = g.bytes.clone();
        b[g.json_range.start] = b'x';
        assert!(matches!(
            import_gltf_slice(&b, None, &AssetRegistry::new()),
            Err(ImportError::Parse { .. })
        ));
        // One bit flipped anywhere in the JSON (300 times) or the whole file (100 times): a
        // valid scene or an error with a message, within a second, and never a panic (the
        // importer turns a caught panic into `Malformed`, which fails here).
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let (mut ok, mut err, mut slowest) = (0, 0, Duration::ZERO);
        for flip in 0..400 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let mut b = g.bytes.clone();
            let at = if flip < 300 {
                g.json_range.start + (state as usize) % g.json_range.len()
            } else {
                (state as usize) % n
            };
            let bit = (state >> 32) % 8;
            b[at] ^= 1 << bit;
            let what = format!("{name}, flip {flip}: bit {bit} of byte {at}");
            let start = Instant::now();
            let r = import_gltf_slice(&b, None, &AssetRegistry::new());
            let took = start.elapsed();
            slowest = slowest.max(took);
            assert!(
                took < Duration::from_secs(1),
                "{what}: the import took {took:?} (limit 1 s)"
            );
            match r {
                Ok(scene) => {
                    ok += 1;
                    check_valid_scene(&scene, &what);
                }
                Err(e @ ImportError::Malformed { .. }) => {
                    panic!("{what}: the importer panicked (caught as {e})")
                }
                Err(e) => {
                    err += 1;
                    let msg = e.to_string();
                    let reason = msg.strip_prefix("<memory>").unwrap_or(&msg);
                    // Every message is `<memory>: <place>: <reason>`; an empty reason leaves
                    // nothing after the file name or a trailing colon.
                    assert!(
                        !reason
                            .trim_start_matches(|c: char| c == ':' || c.is_whitespace())
                            .is_empty()
                            && !msg.trim_end().ends_with(':'),
                        "{what}: error without a message: {msg:?} ({e:?})"
                    );
                }
            }
        }
        assert_eq!(ok + err, 400);
        eprintln!("{name}: 400 bit flips: {ok} valid scenes, {err} errors, slowest {slowest:?}");
    }
}

/// What a successful import promises: a rig with bones, meshes bound to bones with finite
/// vertices, clips for the rig with finite non-negative durations.
fn check_valid_scene(scene: &GltfScene, what: &str) {
    assert!(scene.rig.bone_count() > 0, "{what}: a rig without bones");
    for m in &scene.meshes {
        let mesh = &m.skinned_mesh;
        assert!(mesh.bone_count() > 0, "{what}: a mesh without bones");
        assert!(
            mesh.positions().iter().all(|p| p.is_finite()),
            "{what}: a non-finite vertex"
        );
    }
    for c in &scene.clips {
        assert_eq!(c.bone_count(), scene.rig.bone_count(), "{what}: clip bones");
        assert!(
            c.duration().is_finite() && c.duration() >= 0.0,
            "{what}: clip duration {}",
            c.duration()
        );
    }
}

// ---------------------------------------------------------------------------------------
// Hand-written files.

/// A triangle skinned to two skins that share joints, 8 influences on vertex 0 through
/// JOINTS_1/WEIGHTS_1, u8 normalized weights that do not sum to 1 on vertex 1, no indices,
/// a matrix node, an animated non-joint node, i16-normalized rotation keys, morph weights and
/// a duplicated channel.
fn rich_file() -> (Builder, Value) {
    let mut b = Builder::default();
    let pos = b.positions(&[0., 0., 0., 1., 0., 0., 0., 1., 0.]);
    let j0 = b.u8s(&[0, 1, 2, 3, 0, 1, 0, 0, 3, 0, 0, 0], "VEC4", 4, false);
    // Vertex 0: about 1/8 each over 8 influences, summing to 1 with the u8 weights of set 1;
    // vertex 1: 100/255 + 50/255 (renormalised); vertex 2: 1.0.
    let last = 1.0 - 0.375 - 128.0 / 255.0;
    let w0 = b.f32s(
        &[
            0.125,
            0.125,
            0.125,
            last,
            100.0 / 255.0,
            50.0 / 255.0,
            0.,
            0.,
            1.,
            0.,
            0.,
            0.,
        ],
        "VEC4",
        4,
    );
    let j1 = b.u8s(&[3, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0], "VEC4", 4, false);
    let w1 = b.u8s(&[32, 32, 32, 32, 0, 0, 0, 0, 0, 0, 0, 0], "VEC4", 4, true);
    let ibm: Vec<f32> = (0..4)
        .flat_map(|k| Mat4::from_translation(Vec3::new(0.0, -(k as f32), 0.0)).to_cols_array())
        .collect();
    let ibm = b.f32s(&ibm, "MAT4", 16);
    let t = b.f32s(&[0.0, 1.0, 2.0], "SCALAR", 1);
    let tr = b.f32s(&[0., 0., 0., 1., 0., 0., 2., 0., 0.], "VEC3", 3);
    let tr2 = b.f32s(&[5., 0., 0., 6., 0., 0., 7., 0., 0.], "VEC3", 3);
    // 90 degrees about z at key 1 (i16 normalized: 23170 / 32767 = 0.7071).
    let rot = b.i16s(
        &[0, 0, 0, 32767, 0, 0, 23170, 23170, 0, 0, 32767, 0],
        "VEC4",
        4,
        true,
    );
    // Two morph targets, CUBICSPLINE: per key in tangents (2), values (2), out tangents (2).
    #[rustfmt::skip]
    let mw = b.f32s(&[9., 9., 0., 1., 1., 0.,  2., -1., 1., 0., 9., 9.,  0., 0., 0., 0., 0., 0.], "SCALAR", 1);
    // CUBICSPLINE translation with in tangents different from out tangents.
    #[rustfmt::skip]
    let cs = b.f32s(&[9., 9., 9., 0., 0., 0., 1., 0., 0.,  -2., 0., 0., 1., 0., 0., 5., 5., 5.,  0., 0., 0., 0., 0., 0., 7., 7., 7.], "VEC3", 3);
    let doc = json!({
        "scene": 0,
        "scenes": [{"nodes": [0, 5]}],
        "nodes": [
            {"name": "root", "children": [1], "matrix": [1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,3,1]},
            {"name": "hip", "children": [2], "translation": [0, 1, 0]},
            {"name": "spine", "children": [3, 4], "translation": [0, 1, 0]},
            {"name": "head", "translation": [0, 1, 0]},
            {"name": "prop", "translation": [1, 0, 0]},
            {"name": "body", "mesh": 0, "skin": 0, "children": [6]},
            {"name": "body", "mesh": 0, "skin": 1},
            {"name": "orphan"}
        ],
        "skins": [
            {"joints": [0, 1, 2, 3], "inverseBindMatrices": ibm, "skeleton": 0},
            {"joints": [3, 2, 1, 0]}
        ],
        "meshes": [{"name": "tri", "primitives": [
            {"attributes": {"POSITION": pos, "JOINTS_0": j0, "WEIGHTS_0": w0, "JOINTS_1": j1, "WEIGHTS_1": w1}},
            {"attributes": {"POSITION": pos, "JOINTS_0": j0, "WEIGHTS_0": w0}}
        ]}],
        "animations": [{
            "samplers": [
                {"input": t, "output": tr, "interpolation": "LINEAR"},
                {"input": t, "output": rot, "interpolation": "LINEAR"},
                {"input": t, "output": mw, "interpolation": "CUBICSPLINE"},
                {"input": t, "output": tr2, "interpolation": "STEP"},
                {"input": t, "output": cs, "interpolation": "CUBICSPLINE"}
            ],
            "channels": [
                {"sampler": 0, "target": {"node": 4, "path": "translation"}},
                {"sampler": 1, "target": {"node": 1, "path": "rotation"}},
                {"sampler": 2, "target": {"node": 5, "path": "weights"}},
                {"sampler": 3, "target": {"node": 4, "path": "translation"}},
                {"sampler": 0, "target": {"node": 7, "path": "translation"}},
                {"sampler": 4, "target": {"node": 3, "path": "translation"}}
            ]
        }]
    });
    (b, doc)
}

#[test]
fn a_rich_hand_written_file_imports_as_specified() {
    let (b, doc) = rich_file();
    let registry = AssetRegistry::new();
    let scene = import_gltf_slice(&b.glb(doc), None, &registry).unwrap();
    // Rig: scene 0 reaches nodes 0..=6 (node 7 is outside); duplicate names get "#<index>".
    assert_eq!(
        scene.node_names,
        [
            "root", "hip", "spine", "head", "prop", "body", "body#6", "orphan"
        ]
    );
    assert_eq!(scene.rig.bone_count(), 7);
    assert_eq!(scene.node_to_bone[7], None);
    assert_eq!(
        scene.rig.rest_pose()[scene.node_to_bone[0].unwrap().get()].translation,
        Vec3::new(0.0, 0.0, 3.0)
    );
    // Skins share joints; the second has identity inverse binds.
    assert_eq!(
        scene.skins[1].inverse_bind_matrices,
        vec![Mat4::IDENTITY; 4]
    );
    assert_eq!(
        scene.skins[0].inverse_bind_matrices[2],
        Mat4::from_translation(Vec3::new(0.0, -2.0, 0.0))
    );
    assert_eq!(scene.skins[0].skeleton, Some(0));
    // Node 5 (skin 0) and node 6 (skin 1) each instance both primitives.
    let keys: Vec<(usize, usize, usize)> = scene
        .meshes
        .iter()
        .map(|m| (m.node, m.primitive, m.skin))
        .collect();
    assert_eq!(keys, [(5, 0, 0), (5, 1, 0), (6, 0, 1), (6, 1, 1)]);
    let m = &scene.meshes[0].skinned_mesh;
    assert_eq!(m.name(), "tri/0");
    assert_eq!(m.indices(), [0, 1, 2], "generated indices");
    assert_eq!(m.joints_extra().len(), 3, "second influence set present");
    let total: f32 = m.weights()[0].iter().chain(&m.weights_extra()[0]).sum();
    assert!(
        (total - 1.0).abs() < 1e-3,
        "8 influences of ~1/8 each: {total}"
    );
    // Vertex 1: 100/255 + 50/255 renormalised to 2/3 + 1/3.
    assert_eq!(m.joints()[1][..2], [0, 1]);
    assert!((m.weights()[1][0] - 2.0 / 3.0).abs() < 1e-5);
    assert_eq!(m.renormalized_vertices(), 1);
    // Skin 1 reverses the joint order: its mesh bones are named accordingly.
    let names: Vec<&str> = scene.meshes[2]
        .skinned_mesh
        .bones()
        .iter()
        .map(|b| b.name.as_str())
        .collect();
    assert_eq!(names, ["head", "spine", "hip", "root"]);
    // Warnings: renormalisation (per primitive and skin), duplicate channel, channel on a node outside the scene.
    let w = &scene.warnings;
    assert!(
        w.iter()
            .any(|s| s.contains("renormalised weights of 1 vertices in mesh 'tri' primitive 0")),
        "{w:?}"
    );
    assert!(w.iter().any(|s| s.contains("later channel wins")), "{w:?}");
    assert!(
        w.iter()
            .any(|s| s.contains("'orphan'") && s.contains("skipped")),
        "{w:?}"
    );
    // Clip: the later (STEP) channel on "prop" won; "prop" is not a joint but is animated.
    let clip = &scene.clips[0];
    assert_eq!(clip.name(), "animation_0");
    let prop = scene.node_to_bone[4].unwrap();
    assert_eq!(
        clip.sample_bone(prop, 1.5).translation,
        Vec3::new(6.0, 0.0, 0.0)
    );
    // i16-normalized rotation keys, slerped: 45 degrees about z at t = 0.5.
    let hip = scene.node_to_bone[1].unwrap();
    let q = clip.sample_bone(hip, 0.5).rotation;
    assert!(
        q.dot(Quat::from_rotation_z(std::f32::consts::FRAC_PI_4))
            .abs()
            > 1.0 - 1e-4,
        "{q}"
    );
    // Morph weights as user curves "<node>.weights[k]", CUBICSPLINE. At t = 0.5 (dt = 1):
    // h00 = h01 = 0.5, h10 = 0.125, h11 = -0.125, so
    // w0 = 0.5 * 0 + 0.125 * 1 + 0.5 * 1 - 0.125 * 2 = 0.375 and
    // w1 = 0.5 * 1 + 0.125 * 0 + 0.5 * 0 - 0.125 * (-1) = 0.625.
    let curves: Vec<&str> = clip.curves().iter().map(|c| c.name.as_str()).collect();
    assert_eq!(curves, ["body.weights[0]", "body.weights[1]"]);
    assert!((clip.sample_curve(0, 0.5).unwrap() - 0.375).abs() < 1e-6);
    assert!((clip.sample_curve(1, 0.5).unwrap() - 0.625).abs() < 1e-6);
    assert_eq!(clip.sample_curve(1, 1.0), Some(0.0));
    // CUBICSPLINE translation of "head" with distinct in and out tangents, at t = 0.5:
    // 0.5 * v0 + 0.125 * out0 + 0.5 * v1 - 0.125 * in1 = 0 + 0.125 + 0.5 + 0.25 = 0.875 (x).
    let head = scene.node_to_bone[3].unwrap();
    let p = clip.sample_bone(head, 0.5).translation;
    assert!((p - Vec3::new(0.875, 0.0, 0.0)).length() < 1e-6, "{p}");
    // t = 1.5: 0.5 * v1 + 0.125 * out1 + 0.5 * v2 - 0.125 * in2 = (0.5 + 0.625, 0.625, 0.625).
    let p = clip.sample_bone(head, 1.5).translation;
    assert!((p - Vec3::new(1.125, 0.625, 0.625)).length() < 1e-6, "{p}");
    assert_eq!(clip.duration(), 2.0);
}

#[test]
fn external_buffers_resolve_relative_to_the_file() {
    let (b, mut doc) = rich_file();
    doc["asset"] = json!({"version": "2.0"});
    doc["buffers"] = json!([{"byteLength": b.bin.len(), "uri": "rich%20data.bin"}]);
    doc["bufferViews"] = Value::Array(b.views.clone());
    doc["accessors"] = Value::Array(b.accessors.clone());
    let dir = std::env::temp_dir().join(format!("sinew-gltf-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("rich data.bin"), &b.bin).unwrap();
    let path = dir.join("rich.gltf");
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    let registry = AssetRegistry::new();
    let from_file = import_gltf(&path, &registry).unwrap();
    let from_glb = import_gltf_slice(&b.glb(rich_file().1), None, &registry).unwrap();
    assert!(Arc::ptr_eq(&from_file.rig, &from_glb.rig));
    assert!(Arc::ptr_eq(
        &from_file.meshes[0].skinned_mesh,
        &from_glb.meshes[0].skinned_mesh
    ));
    // Without a base directory the external buffer cannot be found.
    let json = std::fs::read(&path).unwrap();
    assert!(matches!(
        import_gltf_slice(&json, None, &registry),
        Err(ImportError::Buffer { buffer: 0, .. })
    ));
    // A missing file is an I/O error naming the path.
    std::fs::remove_file(dir.join("rich data.bin")).unwrap();
    let err = import_gltf(&path, &registry).unwrap_err();
    assert!(
        matches!(&err, ImportError::Io { path, .. } if path.ends_with("rich data.bin")),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn expect_err(doc: Value, b: &Builder) -> ImportError {
    match import_gltf_slice(&b.glb(doc), None, &AssetRegistry::new()) {
        Ok(_) => panic!("imported a bad file"),
        Err(e) => {
            // Display says where.
            assert!(e.to_string().starts_with("<memory>: "), "{e}");
            e
        }
    }
}

#[test]
fn bad_hand_written_files_are_errors_that_say_where() {
    // Joint index out of range: vertex 0 uses joint 4 of a 4-joint skin, with a positive weight.
    let (mut b, mut doc) = rich_file();
    let bad_j = b.u8s(&[4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "VEC4", 4, false);
    doc["meshes"][0]["primitives"][1]["attributes"]["JOINTS_0"] = json!(bad_j);
    let e = expect_err(doc, &b);
    assert!(
        matches!(
            e,
            ImportError::Mesh {
                mesh: 0,
                primitive: 1,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("joint 4"), "{e}");

    // Non-increasing key times.
    let (mut b, mut doc) = rich_file();
    let t = b.f32s(&[0.0, 1.0, 1.0], "SCALAR", 1);
    doc["animations"][0]["samplers"][1]["input"] = json!(t);
    let e = expect_err(doc, &b);
    assert!(
        matches!(
            e,
            ImportError::Animation {
                animation: 0,
                channel: Some(1),
                ..
            }
        ),
        "{e}"
    );

    // NaN in an accessor (translation keys).
    let (mut b, mut doc) = rich_file();
    let tr = b.f32s(&[0., 0., 0., f32::NAN, 0., 0., 2., 0., 0.], "VEC3", 3);
    doc["animations"][0]["samplers"][0]["output"] = json!(tr);
    let e = expect_err(doc, &b);
    assert!(
        matches!(&e, ImportError::Accessor { accessor, .. } if *accessor == tr),
        "{e}"
    );

    // Infinite position.
    let (mut b, mut doc) = rich_file();
    let bytes: Vec<u8> = [0., 0., 0., f32::INFINITY, 0., 0., 0., 1., 0.]
        .iter()
        .flat_map(|x: &f32| x.to_le_bytes())
        .collect();
    let pos = b.raw(
        &bytes,
        5126,
        "VEC3",
        3,
        json!({"min": [0, 0, 0], "max": [1, 1, 0]}),
    );
    doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"] = json!(pos);
    assert!(matches!(expect_err(doc, &b), ImportError::Accessor { .. }));

    // Wrong accessor type (NORMAL as VEC2) and wrong component type (JOINTS as FLOAT).
    let (mut b, mut doc) = rich_file();
    let n = b.f32s(&[0., 0., 1., 0., 0., 1.], "VEC2", 2);
    doc["meshes"][0]["primitives"][0]["attributes"]["NORMAL"] = json!(n);
    let e = expect_err(doc, &b);
    assert!(
        e.to_string().contains("NORMAL") && e.to_string().contains("VEC2"),
        "{e}"
    );
    let (mut b, mut doc) = rich_file();
    let j = b.f32s(&[0.; 12], "VEC4", 4);
    doc["meshes"][0]["primitives"][0]["attributes"]["JOINTS_0"] = json!(j);
    assert!(matches!(expect_err(doc, &b), ImportError::Accessor { .. }));

    // Wrong counts: 2 output keys for 3 input times; 2 JOINTS for 3 positions.
    let (mut b, mut doc) = rich_file();
    let tr = b.f32s(&[0., 0., 0., 1., 0., 0.], "VEC3", 3);
    doc["animations"][0]["samplers"][0]["output"] = json!(tr);
    assert!(matches!(
        expect_err(doc, &b),
        ImportError::Animation {
            channel: Some(0),
            ..
        }
    ));
    let (mut b, mut doc) = rich_file();
    let j = b.u8s(&[0; 8], "VEC4", 4, false);
    doc["meshes"][0]["primitives"][1]["attributes"]["JOINTS_0"] = json!(j);
    assert!(matches!(
        expect_err(doc, &b),
        ImportError::Mesh { primitive: 1, .. }
    ));

    // Accessor past the end of its buffer view; buffer view past the end of the buffer.
    let (b, mut doc) = rich_file();
    doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"] = json!(b.accessors.len());
    let mut b2 = Builder {
        bin: b.bin.clone(),
        views: b.views.clone(),
        accessors: b.accessors.clone(),
    };
    b2.accessors.push(json!({"bufferView": 0, "byteOffset": 4, "componentType": 5126, "type": "VEC3", "count": 3, "min": [0, 0, 0], "max": [1, 1, 0]}));
    let e = expect_err(doc.clone(), &b2);
    assert!(matches!(e, ImportError::Accessor { .. }), "{e}");
    let mut b3 = Builder {
        bin: b.bin.clone(),
        views: b.views.clone(),
        accessors: b.accessors.clone(),
    };
    b3.views[0]["byteLength"] = json!(1 << 20);
    b3.accessors
        .push(json!({"bufferView": 0, "componentType": 5126, "type": "VEC3", "count": 3, "min": [0, 0, 0], "max": [1, 1, 0]}));
    assert!(matches!(expect_err(doc, &b3), ImportError::Accessor { .. }));

    // Out-of-range node index (schema validation).
    let (b, mut doc) = rich_file();
    doc["nodes"][0]["children"] = json!([1, 99]);
    assert!(matches!(expect_err(doc, &b), ImportError::Parse { .. }));

    // Cyclic node graph: head -> root.
    let (b, mut doc) = rich_file();
    doc["nodes"][3]["children"] = json!([0]);
    assert!(matches!(expect_err(doc, &b), ImportError::Node { .. }));
    // A node with two parents.
    let (b, mut doc) = rich_file();
    doc["nodes"][4]["children"] = json!([3]);
    assert!(matches!(
        expect_err(doc, &b),
        ImportError::Node { node: 3, .. }
    ));
    // A node that is its own child.
    let (b, mut doc) = rich_file();
    doc["nodes"][7]["children"] = json!([7]);
    assert!(matches!(
        expect_err(doc, &b),
        ImportError::Node { node: 7, .. }
    ));

    // A skin listing a joint twice; too few inverse bind matrices.
    let (b, mut doc) = rich_file();
    doc["skins"][1]["joints"] = json!([3, 3]);
    assert!(matches!(
        expect_err(doc, &b),
        ImportError::Skin { skin: 1, .. }
    ));
    let (mut b, mut doc) = rich_file();
    let ibm = b.f32s(&Mat4::IDENTITY.to_cols_array(), "MAT4", 16);
    doc["skins"][0]["inverseBindMatrices"] = json!(ibm);
    assert!(matches!(
        expect_err(doc, &b),
        ImportError::Skin { skin: 0, .. }
    ));

    // Missing buffer data: the BIN chunk is shorter than the declared buffer.
    let (b, doc) = rich_file();
    let mut glb = b.glb(doc);
    let bin_len_at = glb.len() - b.bin.len().next_multiple_of(4) - 8;
    let short = (b.bin.len().next_multiple_of(4) - 8) as u32;
    glb[bin_len_at..bin_len_at + 4].copy_from_slice(&short.to_le_bytes());
    let total = glb.len() as u32 - 8;
    glb[8..12].copy_from_slice(&total.to_le_bytes());
    glb.truncate(total as usize);
    let e = import_gltf_slice(&glb, None, &AssetRegistry::new()).unwrap_err();
    assert!(matches!(e, ImportError::Buffer { buffer: 0, .. }), "{e}");

    // A mesh on a skinned node without JOINTS_0/WEIGHTS_0; a negative weight.
    let (b, mut doc) = rich_file();
    doc["meshes"][0]["primitives"][1]["attributes"] = json!({"POSITION": 0});
    assert!(matches!(
        expect_err(doc, &b),
        ImportError::Mesh { primitive: 1, .. }
    ));
    let (mut b, mut doc) = rich_file();
    let w = b.f32s(
        &[1.5, -0.5, 0., 0., 1., 0., 0., 0., 1., 0., 0., 0.],
        "VEC4",
        4,
    );
    doc["meshes"][0]["primitives"][1]["attributes"]["WEIGHTS_0"] = json!(w);
    assert!(matches!(
        expect_err(doc, &b),
        ImportError::Mesh { primitive: 1, .. }
    ));

    // A zero rotation key; a node rotation that is not a quaternion; a projective matrix.
    let (mut b, mut doc) = rich_file();
    let rot = b.f32s(&[0., 0., 0., 1., 0., 0., 0., 0., 0., 0., 0., 1.], "VEC4", 4);
    doc["animations"][0]["samplers"][1]["output"] = json!(rot);
    assert!(matches!(
        expect_err(doc, &b),
        ImportError::Animation {
            channel: Some(1),
            ..
        }
    ));
    let (b, mut doc) = rich_file();
    doc["nodes"][2]["rotation"] = json!([0, 0, 0, 0]);
    assert!(matches!(
        expect_err(doc, &b),
        ImportError::Node { node: 2, .. }
    ));
    let (b, mut doc) = rich_file();
    doc["nodes"][0]["matrix"] = json!([1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
    assert!(matches!(
        expect_err(doc, &b),
        ImportError::Node { node: 0, .. }
    ));
}

#[test]
fn indices_the_gltf_crate_does_not_check_are_checked_here() {
    // Found by fuzzing: the gltf crate's validation skips animation channel targets, and its
    // accessors unwrap them. An out-of-range target node is an error; an unknown path is skipped
    // with a warning.
    let (b, mut doc) = rich_file();
    doc["animations"][0]["channels"][0]["target"]["node"] = json!(99);
    let e = expect_err(doc, &b);
    assert!(
        matches!(
            e,
            ImportError::Animation {
                animation: 0,
                channel: Some(0),
                ..
            }
        ),
        "{e}"
    );
    let (b, mut doc) = rich_file();
    doc["animations"][0]["channels"][1]["target"]["path"] = json!("bogus");
    let scene = import_gltf_slice(&b.glb(doc), None, &AssetRegistry::new()).unwrap();
    assert!(
        scene
            .warnings
            .iter()
            .any(|w| w.contains("channel 1: unknown target path")),
        "{:?}",
        scene.warnings
    );
    // Also found by fuzzing: the gltf crate's validation indexes the POSITION accessor unchecked.
    let (b, mut doc) = rich_file();
    doc["meshes"][0]["primitives"][1]["attributes"]["POSITION"] = json!(99);
    let e = expect_err(doc, &b);
    assert!(
        matches!(
            e,
            ImportError::Mesh {
                mesh: 0,
                primitive: 1,
                ..
            }
        ),
        "{e}"
    );
    // The same edit in Fox.glb (same length, so the GLB lengths stay valid).
    let mut fox = load("Fox.glb").bytes;
    let needle = b"\"path\":\"rotation\"";
    let at = fox.windows(needle.len()).position(|w| w == needle).unwrap();
    fox[at + needle.len() - 2] = b'X';
    let scene = import_gltf_slice(&fox, None, &AssetRegistry::new()).unwrap();
    assert!(
        scene
            .warnings
            .iter()
            .any(|w| w.contains("unknown target path"))
    );
}

#[test]
fn error_display_names_file_and_place() {
    let missing = asset_path("Fox.glb").with_file_name("does-not-exist.glb");
    let e = import_gltf(&missing, &AssetRegistry::new()).unwrap_err();
    assert!(matches!(e, ImportError::Io { .. }));
    assert!(e.to_string().contains("does-not-exist.glb"), "{e}");
    let e = import_gltf_slice(b"glTF\x02\x00\x00\x00", None, &AssetRegistry::new()).unwrap_err();
    assert!(e.to_string().contains("GLB header truncated"), "{e}");
}

/// Standard base64 (RFC 4648, with padding), written here so that the test does not decode
/// with the importer's own dependency.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn base64_matches_the_rfc_examples() {
    for (plain, encoded) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(base64(plain.as_bytes()), encoded);
    }
}

/// A `.gltf` whose buffer is a `data:` URI imports to the same assets as the GLB holding the
/// same bytes in its binary chunk (the registry shares them by content).
#[test]
fn data_uri_buffers_import_like_the_binary_chunk() {
    let (b, mut doc) = rich_file();
    doc["asset"] = json!({"version": "2.0"});
    let uri = format!("data:application/octet-stream;base64,{}", base64(&b.bin));
    doc["buffers"] = json!([{"byteLength": b.bin.len(), "uri": uri}]);
    doc["bufferViews"] = Value::Array(b.views.clone());
    doc["accessors"] = Value::Array(b.accessors.clone());
    let registry = AssetRegistry::new();
    let from_uri = import_gltf_slice(&serde_json::to_vec(&doc).unwrap(), None, &registry).unwrap();
    let from_glb = import_gltf_slice(&b.glb(rich_file().1), None, &registry).unwrap();
    assert!(Arc::ptr_eq(&from_uri.rig, &from_glb.rig));
    for (u, g) in from_uri.meshes.iter().zip(&from_glb.meshes) {
        assert!(Arc::ptr_eq(&u.skinned_mesh, &g.skinned_mesh));
    }
    assert_eq!(from_uri.meshes[0].skinned_mesh.positions()[1], Vec3::X);
    // A data URI that is not base64 is an error naming the buffer.
    doc["buffers"] =
        json!([{"byteLength": b.bin.len(), "uri": "data:application/octet-stream;base64,@@@"}]);
    let err = import_gltf_slice(&serde_json::to_vec(&doc).unwrap(), None, &registry).unwrap_err();
    assert!(
        matches!(err, ImportError::Buffer { buffer: 0, .. }),
        "{err}"
    );
}

/// Sparse accessors (glTF 2.0 §3.6.2.3): the base view's elements with the listed ones
/// substituted, and a view-less accessor that is zero but for its substitutions.
#[test]
fn sparse_positions_substitute_the_listed_vertices() {
    let (mut b, mut doc) = rich_file();
    // Substitutions for vertices 0 and 2 of the triangle (0,0,0) (1,0,0) (0,1,0).
    let indices = b.u8s(&[0, 2], "SCALAR", 1, false);
    let values = b.f32s(&[5., 5., 5., -1., 2., 3.], "VEC3", 3);
    let view = |b: &Builder, accessor: usize| b.accessors[accessor]["bufferView"].clone();
    let sparse = json!({
        "count": 2,
        "indices": {"bufferView": view(&b, indices), "componentType": 5121},
        "values": {"bufferView": view(&b, values)}
    });
    let pos = doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"]
        .as_u64()
        .unwrap() as usize;
    b.accessors[pos]["sparse"] = sparse.clone();
    b.accessors[pos]["min"] = json!([-1., 0., 0.]);
    b.accessors[pos]["max"] = json!([5., 5., 5.]);
    // A view-less accessor for primitive 1: zeros, vertex 1 and 2 substituted.
    let values_2 = b.f32s(&[0., 0., 2., 0., 3., 0.], "VEC3", 3);
    let indices_2 = b.u8s(&[1, 2], "SCALAR", 1, false);
    b.accessors.push(json!({
        "componentType": 5126, "type": "VEC3", "count": 3,
        "min": [0., 0., 0.], "max": [0., 3., 2.],
        "sparse": {
            "count": 2,
            "indices": {"bufferView": view(&b, indices_2), "componentType": 5121},
            "values": {"bufferView": view(&b, values_2)}
        }
    }));
    doc["meshes"][0]["primitives"][1]["attributes"]["POSITION"] = json!(b.accessors.len() - 1);
    let scene = import_gltf_slice(&b.glb(doc), None, &AssetRegistry::new()).unwrap();
    assert_eq!(
        scene.meshes[0].skinned_mesh.positions(),
        [Vec3::splat(5.0), Vec3::X, Vec3::new(-1.0, 2.0, 3.0)]
    );
    assert_eq!(
        scene.meshes[1].skinned_mesh.positions(),
        [
            Vec3::ZERO,
            Vec3::new(0.0, 0.0, 2.0),
            Vec3::new(0.0, 3.0, 0.0)
        ]
    );
}

/// A failed import adds nothing to the registry: a file whose rig and meshes are good but
/// whose animation is bad (non-increasing key times, found after the rig and meshes bake)
/// leaves the registry with what it held before, and the good file then imports as usual.
#[test]
fn a_failed_import_leaves_the_registry_as_it_was() {
    let registry = AssetRegistry::new();
    import("SimpleSkin.glb", &registry);
    let before = registry.counts();
    let (mut b, mut doc) = rich_file();
    let good = b.glb(doc.clone());
    let t = b.f32s(&[0.0, 1.0, 1.0], "SCALAR", 1);
    doc["animations"][0]["samplers"][1]["input"] = json!(t);
    let e = import_gltf_slice(&b.glb(doc), None, &registry).unwrap_err();
    assert!(
        e.to_string()
            .contains("animation 0 channel 1: key time 2 (Some(1.0)) does not increase"),
        "{e}"
    );
    assert_eq!(registry.counts(), before);
    let scene = import_gltf_slice(&good, None, &registry).unwrap();
    assert!(!scene.clips.is_empty());
    assert_ne!(registry.counts(), before);
}
