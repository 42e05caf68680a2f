//! Morph targets end to end: imported deltas and weights, weights from animation and from
//! code, applied before skinning. Expected values are computed here, independently of the
//! importer and the skinning code: accessors are read from the bytes by hand (the JSON with
//! serde_json, base64 decoded here), curves interpolated by the glTF spec's LINEAR formula,
//! joint matrices built from the nodes' TRS, and positions from the spec's formula
//! `Σ wᵢ · Mᵢ · (p_bind + Σₖ mₖ · Δₖ)`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::glb::Builder;
use glam::{Mat4, Quat, Vec3};
use serde_json::{Value, json};
use sinew_jobs::animator::Animator;
use sinew_jobs::asset::{
    ActiveMorph, AssetRegistry, BakeError, RawMorphTarget, RawSkinnedMesh, RawVertexInfluences,
    SkinnedMesh,
};
use sinew_jobs::component::{
    AnimationToProcess, Animations, CurveValues, FrameSlot, MorphWeights, SkinRef, animated,
};
use sinew_jobs::error::JobError;
use sinew_jobs::import::{
    GltfScene, GltfSkinnedPrimitive, ImportError, import_gltf, import_gltf_slice,
};
use sinew_jobs::pipeline::PipelineConfig;
use sinew_runtime::store::{Entity, Store};
use std::sync::Arc;

/// Standard base64 decoding (RFC 4648), written here so that the expected values do not come
/// through the importer's own decoder.
fn base64_decode(s: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let bytes: Vec<u8> = s.bytes().filter(|c| *c != b'=').collect();
    let mut out = Vec::new();
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (k, c) in chunk.iter().enumerate() {
            n |= value(*c) << (18 - 6 * k);
        }
        for k in 0..chunk.len() - 1 {
            out.push((n >> (16 - 8 * k)) as u8);
        }
    }
    out
}

/// The FLOAT components of accessor `i` of a `.gltf` with `data:` buffers, read by hand.
fn floats(doc: &Value, buffers: &[Vec<u8>], i: usize) -> Vec<f32> {
    let acc = &doc["accessors"][i];
    let view = &doc["bufferViews"][acc["bufferView"].as_u64().unwrap() as usize];
    assert_eq!(acc["componentType"], 5126);
    let dims = match acc["type"].as_str().unwrap() {
        "SCALAR" => 1,
        "VEC3" => 3,
        other => panic!("{other}"),
    };
    let buffer = &buffers[view["buffer"].as_u64().unwrap() as usize];
    let start = view["byteOffset"].as_u64().unwrap_or(0) as usize
        + acc["byteOffset"].as_u64().unwrap_or(0) as usize;
    let stride = view["byteStride"].as_u64().map_or(4 * dims, |s| s as usize);
    let mut out = Vec::new();
    for e in 0..acc["count"].as_u64().unwrap() as usize {
        for c in 0..dims {
            let at = start + e * stride + 4 * c;
            out.push(f32::from_le_bytes(buffer[at..at + 4].try_into().unwrap()));
        }
    }
    out
}

fn vec3s(v: &[f32]) -> Vec<Vec3> {
    v.chunks(3).map(Vec3::from_slice).collect()
}

/// glTF LINEAR interpolation of one scalar curve, clamped at the ends.
fn linear(times: &[f32], values: &[f32], t: f32) -> f32 {
    if t <= times[0] {
        return values[0];
    }
    for k in 0..times.len() - 1 {
        if t <= times[k + 1] {
            let s = (t - times[k]) / (times[k + 1] - times[k]);
            return values[k] + s * (values[k + 1] - values[k]);
        }
    }
    *values.last().unwrap()
}

/// Runs one frame of the pipeline at `time` of `clip` for each primitive (one entity each,
/// with its curves and morph weights), and returns each one's palette and active list.
fn pose(
    scene: &GltfScene,
    prims: &[&GltfSkinnedPrimitive],
    clip: usize,
    time: f32,
) -> Vec<(Vec<[f32; 12]>, Vec<ActiveMorph>)> {
    let mut store = Store::new();
    let mut entities: Vec<Entity> = Vec::new();
    for p in prims {
        let anim = AnimationToProcess::new(scene.clips[clip].clone())
            .at(time)
            .looping(false);
        let e = store
            .spawn(animated(scene.rig.clone(), vec![anim]))
            .unwrap();
        store
            .insert(e, SkinRef::new(p.skinned_mesh.clone()))
            .unwrap();
        store.insert(e, CurveValues::default()).unwrap();
        store.insert(e, p.morph_weights_component()).unwrap();
        entities.push(e);
    }
    let config = PipelineConfig {
        advance_clocks: false,
        ..Default::default()
    };
    let mut animator = Animator::with(&mut store, config, |_, _| {}).unwrap();
    animator.run_frame(&mut store, 0.0).unwrap();
    let palettes = animator.palettes(&store).to_vec();
    entities
        .iter()
        .map(|e| {
            let slot = *store.get::<FrameSlot>(*e).unwrap();
            let start = slot.palette_offset as usize;
            let palette = palettes[start..start + slot.palette_count as usize].to_vec();
            let active = store.get::<MorphWeights>(*e).unwrap().active().to_vec();
            (palette, active)
        })
        .collect()
}

fn close(a: Vec3, b: Vec3, tol: f32) -> bool {
    (a - b).length() <= tol * (1.0 + b.length())
}

#[test]
fn simple_morph_matches_an_independent_parse() {
    let path = sinew_fixtures::asset_path("gltf/SimpleMorph.gltf").unwrap();
    let doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let buffers: Vec<Vec<u8>> = doc["buffers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let uri = b["uri"].as_str().unwrap();
            base64_decode(uri.split_once(";base64,").unwrap().1)
        })
        .collect();
    let base = vec3s(&floats(&doc, &buffers, 1));
    let d0 = vec3s(&floats(&doc, &buffers, 2));
    let d1 = vec3s(&floats(&doc, &buffers, 3));
    let times = floats(&doc, &buffers, 4);
    let keys = floats(&doc, &buffers, 5); // 2 weights per key
    let (w0, w1): (Vec<f32>, Vec<f32>) = keys.chunks(2).map(|k| (k[0], k[1])).unzip();

    let registry = AssetRegistry::new();
    let scene = import_gltf(&path, &registry).unwrap();
    assert!(scene.meshes.is_empty(), "no skin in SimpleMorph");
    assert_eq!(scene.morphed_nodes.len(), 1);
    let prim = &scene.morphed_nodes[0];
    let mesh = &prim.skinned_mesh;
    let morph = mesh.morph_targets();
    assert_eq!(morph.len(), 2);
    assert_eq!(morph.default_weights(), [0.5, 0.5]);
    assert_eq!(
        prim.morph_weights,
        [0.5, 0.5],
        "no node.weights: the mesh's"
    );
    assert_eq!(morph.target_positions(0), d0.as_slice());
    assert_eq!(morph.target_positions(1), d1.as_slice());
    assert_eq!(mesh.positions(), base.as_slice());

    // The node has an identity transform, so world = p_bind + Σ mₖ Δₖ.
    for t in [0.0, 0.5, 1.0, 1.25, 2.0, 3.5, 4.0, 9.0] {
        let (m0, m1) = (linear(&times, &w0, t), linear(&times, &w1, t));
        let (palette, active) = pose(&scene, &[prim], 0, t).remove(0);
        let expected_active = [(0, m0), (1, m1)]
            .into_iter()
            .filter(|(_, w)| *w != 0.0)
            .count();
        assert_eq!(
            active.len(),
            expected_active,
            "t = {t}: zero weights are dropped"
        );
        let (got, _) = mesh.skin_cpu_morphed(&palette, &active);
        for v in 0..base.len() {
            let want = base[v] + d0[v] * m0 + d1[v] * m1;
            assert!(
                close(got[v], want, 1e-6),
                "t = {t} vertex {v}: {} vs {want}",
                got[v]
            );
        }
    }
}

const BASE: [f32; 12] = [0., 0., 0., 1., 0., 0., 0., 2., 0., 1., 2., 0.];
const NORMALS: [f32; 12] = [0., 0., 1., 0., 0., 1., 0., 0., 1., 0., 0., 1.];
const DELTA0: [f32; 12] = [0., 0., 0.5, 0., 0., 0.5, 0., 0., 0., 0.25, 0., 0.];
const DELTA1: [f32; 12] = [0.1, 0., 0., 0., 0.2, 0., 0., 0., 0.3, 0., 0., 0.];
const NDELTA0: [f32; 12] = [1., 0., 0., 0., 0., 0., 0., 1., 0., 0., 0., 0.];
const JOINTS: [u8; 16] = [0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0];
const WEIGHTS: [f32; 16] = [
    1., 0., 0., 0., 0.5, 0.5, 0., 0., 1., 0., 0., 0., 1., 0., 0., 0.,
];
/// Weight keys at t = 0, 1, 2 for targets 0 and 1.
const WEIGHT_KEYS: [f32; 6] = [0.0, 1.0, 1.0, 0.0, 0.5, 0.5];

/// A two-joint skin ("root" at the origin, "arm" at (0, 2, 0) rotating about z), a mesh of
/// four vertices with two morph targets (POSITION, and NORMAL on target 0), `mesh.weights`
/// (0.25, 0.75), the node "body" with `weights` (0.5, 0.0), a second node "ghost" instancing
/// the same mesh and skin without weights, clip 0 animating the arm's rotation and the body's
/// weights, clip 1 only the rotation.
fn skinned_morphed_file() -> (Builder, Value) {
    let mut b = Builder::default();
    let pos = b.positions(&BASE);
    let nrm = b.f32s(&NORMALS, "VEC3", 3);
    let d0 = b.f32s(&DELTA0, "VEC3", 3);
    let d1 = b.f32s(&DELTA1, "VEC3", 3);
    let n0 = b.f32s(&NDELTA0, "VEC3", 3);
    let j = b.u8s(&JOINTS, "VEC4", 4, false);
    let w = b.f32s(&WEIGHTS, "VEC4", 4);
    let idx = b.u8s(&[0, 1, 2, 1, 3, 2], "SCALAR", 1, false);
    let ibm: Vec<f32> = [
        Mat4::IDENTITY,
        Mat4::from_translation(Vec3::new(0., -2., 0.)),
    ]
    .iter()
    .flat_map(|m| m.to_cols_array())
    .collect();
    let ibm = b.f32s(&ibm, "MAT4", 16);
    let t = b.f32s(&[0.0, 1.0, 2.0], "SCALAR", 1);
    let q = |deg: f32| Quat::from_rotation_z(deg.to_radians()).to_array();
    let rot: Vec<f32> = [q(0.0), q(90.0), q(180.0)].concat();
    let rot = b.f32s(&rot, "VEC4", 4);
    let mw = b.f32s(&WEIGHT_KEYS, "SCALAR", 1);
    let doc = json!({
        "scene": 0,
        "scenes": [{"nodes": [0, 2, 3]}],
        "nodes": [
            {"name": "root", "children": [1]},
            {"name": "arm", "translation": [0, 2, 0]},
            {"name": "body", "mesh": 0, "skin": 0, "weights": [0.5, 0.0]},
            {"name": "ghost", "mesh": 0, "skin": 0}
        ],
        "skins": [{"joints": [0, 1], "inverseBindMatrices": ibm}],
        "meshes": [{"name": "blob", "weights": [0.25, 0.75], "primitives": [{
            "attributes": {"POSITION": pos, "NORMAL": nrm, "JOINTS_0": j, "WEIGHTS_0": w},
            "indices": idx,
            "targets": [{"POSITION": d0, "NORMAL": n0}, {"POSITION": d1}]
        }]}],
        "animations": [
            {"name": "bend and morph", "samplers": [
                {"input": t, "output": rot, "interpolation": "LINEAR"},
                {"input": t, "output": mw, "interpolation": "LINEAR"}
            ], "channels": [
                {"sampler": 0, "target": {"node": 1, "path": "rotation"}},
                {"sampler": 1, "target": {"node": 2, "path": "weights"}}
            ]},
            {"name": "bend", "samplers": [{"input": t, "output": rot, "interpolation": "LINEAR"}],
             "channels": [{"sampler": 0, "target": {"node": 1, "path": "rotation"}}]}
        ]
    });
    (b, doc)
}

/// The arm joint's palette entry at clip time `t`: `T(0, 2, 0) · Rz(90° · t) · inverseBind`,
/// with the LINEAR (slerp) rotation between keys 0°, 90° and 180°.
fn arm_matrix(t: f32) -> Mat4 {
    let angle = 90f32.to_radians() * t.clamp(0.0, 2.0);
    Mat4::from_translation(Vec3::new(0., 2., 0.))
        * Mat4::from_rotation_z(angle)
        * Mat4::from_translation(Vec3::new(0., -2., 0.))
}

/// `Σ wᵢ · Mᵢ · (p + Σₖ mₖ Δₖ)` and the normal likewise (blended linear part, normalised).
fn expected(t: f32, m: [f32; 2]) -> (Vec<Vec3>, Vec<Vec3>) {
    let joints = [Mat4::IDENTITY, arm_matrix(t)];
    let (base, d0, d1) = (vec3s(&BASE), vec3s(&DELTA0), vec3s(&DELTA1));
    let (normals, n0) = (vec3s(&NORMALS), vec3s(&NDELTA0));
    let mut ps = Vec::new();
    let mut ns = Vec::new();
    for v in 0..4 {
        let p = base[v] + d0[v] * m[0] + d1[v] * m[1];
        let n = normals[v] + n0[v] * m[0];
        let mut blended = Mat4::ZERO;
        for k in 0..4 {
            let wk = WEIGHTS[v * 4 + k];
            if wk > 0.0 {
                blended += joints[usize::from(JOINTS[v * 4 + k])] * wk;
            }
        }
        ps.push(blended.transform_point3(p));
        ns.push(blended.transform_vector3(n).normalize());
    }
    (ps, ns)
}

#[test]
fn a_skinned_and_morphed_mesh_follows_the_spec_formula() {
    let (b, doc) = skinned_morphed_file();
    let scene = import_gltf_slice(&b.glb(doc), None, &AssetRegistry::new()).unwrap();
    assert_eq!(scene.meshes.len(), 2, "body and ghost");
    let (body, ghost) = (&scene.meshes[0], &scene.meshes[1]);
    assert!(
        Arc::ptr_eq(&body.skinned_mesh, &ghost.skinned_mesh),
        "one baked mesh"
    );
    let morph = body.skinned_mesh.morph_targets();
    assert_eq!(morph.len(), 2);
    assert_eq!(morph.default_weights(), [0.25, 0.75]);
    assert_eq!(morph.target_positions(0), vec3s(&DELTA0).as_slice());
    assert_eq!(body.morph_weights, [0.5, 0.0], "node.weights");
    assert_eq!(ghost.morph_weights, [0.25, 0.75], "mesh.weights");

    for t in [0.0, 0.4, 1.0, 1.7, 2.0] {
        // Clip 0 animates the body's weights; the ghost (another node) keeps the mesh's.
        let m = [
            linear(&[0., 1., 2.], &[0., 1., 0.5], t),
            linear(&[0., 1., 2.], &[1., 0., 0.5], t),
        ];
        let posed = pose(&scene, &[body, ghost], 0, t);
        for ((palette, active), weights, what) in
            [(&posed[0], m, "body"), (&posed[1], [0.25, 0.75], "ghost")]
        {
            let (p, n) = body.skinned_mesh.skin_cpu_morphed(palette, active);
            let (ep, en) = expected(t, weights);
            for v in 0..4 {
                assert!(
                    close(p[v], ep[v], 1e-5),
                    "{what} t = {t} vertex {v}: {} vs {}",
                    p[v],
                    ep[v]
                );
                assert!(
                    close(n[v], en[v], 1e-5),
                    "{what} t = {t} normal {v}: {} vs {}",
                    n[v],
                    en[v]
                );
            }
        }
        // Clip 1 does not animate weights: node.weights for the body.
        let (palette, active) = &pose(&scene, &[body], 1, t)[0];
        let (p, _) = body.skinned_mesh.skin_cpu_morphed(palette, active);
        let (ep, _) = expected(t, [0.5, 0.0]);
        assert_eq!(
            active.len(),
            1,
            "target 1 at weight 0 is not in the active list"
        );
        for v in 0..4 {
            assert!(close(p[v], ep[v], 1e-5), "clip 1 t = {t} vertex {v}");
        }
    }
}

#[test]
fn weights_set_from_code_apply_where_no_clip_animates_them() {
    let (b, doc) = skinned_morphed_file();
    let scene = import_gltf_slice(&b.glb(doc), None, &AssetRegistry::new()).unwrap();
    let body = &scene.meshes[0];
    let mut store = Store::new();
    let anim = AnimationToProcess::new(scene.clips[1].clone()).at(1.0);
    let e = store
        .spawn(animated(scene.rig.clone(), vec![anim]))
        .unwrap();
    store
        .insert(e, SkinRef::new(body.skinned_mesh.clone()))
        .unwrap();
    let mut weights = MorphWeights::for_mesh(&body.skinned_mesh);
    weights.set(1, 0.0).unwrap();
    weights.set(0, -0.5).unwrap();
    assert!(matches!(
        weights.set(2, 1.0),
        Err(JobError::BadMorphWeights {
            target: Some(2),
            ..
        })
    ));
    assert!(weights.set(0, f32::NAN).is_err());
    store.insert(e, weights).unwrap();
    let config = PipelineConfig {
        advance_clocks: false,
        ..Default::default()
    };
    let mut animator = Animator::with(&mut store, config, |_, _| {}).unwrap();
    animator.run_frame(&mut store, 0.0).unwrap();
    let active = store.get::<MorphWeights>(e).unwrap().active().to_vec();
    assert_eq!(
        active,
        [ActiveMorph {
            target: 0,
            weight: -0.5
        }]
    );
    let slot = *store.get::<FrameSlot>(e).unwrap();
    let palette = &animator.palettes(&store)[slot.palette_offset as usize..][..2];
    let (p, _) = body.skinned_mesh.skin_cpu_morphed(palette, &active);
    let (ep, _) = expected(1.0, [-0.5, 0.0]);
    for v in 0..4 {
        assert!(close(p[v], ep[v], 1e-5), "vertex {v}");
    }

    // Weights that do not fit the mesh fail the frame, naming the entity and the mesh; with
    // the clock node, before any clock moves.
    store.insert(e, MorphWeights::new(vec![1.0])).unwrap();
    let err = animator.run_frame(&mut store, 0.0).unwrap_err().to_string();
    assert!(
        err.contains("blob/0") && err.contains("1 weights for 2 targets"),
        "{err}"
    );
    let mut clocked = Animator::new(&mut store).unwrap();
    let err = clocked.run_frame(&mut store, 0.5).unwrap_err().to_string();
    assert!(err.contains("1 weights for 2 targets"), "{err}");
    let time = store.get::<Animations>(e).unwrap().as_slice()[0].time;
    assert_eq!(time, 1.0, "the clock did not move");
}

fn expect_err(doc: Value, b: &Builder) -> ImportError {
    import_gltf_slice(&b.glb(doc), None, &AssetRegistry::new()).unwrap_err()
}

#[test]
fn bad_morph_targets_are_errors_naming_mesh_primitive_and_target() {
    // A target whose delta count is not the vertex count.
    let (mut b, mut doc) = skinned_morphed_file();
    let short = b.f32s(&DELTA1[..9], "VEC3", 3);
    doc["meshes"][0]["primitives"][0]["targets"][1]["POSITION"] = json!(short);
    let e = expect_err(doc, &b);
    assert!(
        matches!(&e, ImportError::Mesh { mesh: 0, primitive: 0, reason, .. } if reason.contains("morph target 1")),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("mesh 0 primitive 0: morph target 1 POSITION has 3 elements, POSITION 4"),
        "{e}"
    );

    // NaN deltas.
    let (mut b, mut doc) = skinned_morphed_file();
    let mut nan = DELTA0;
    nan[4] = f32::NAN;
    let nan = b.f32s(&nan, "VEC3", 3);
    doc["meshes"][0]["primitives"][0]["targets"][0]["POSITION"] = json!(nan);
    let e = expect_err(doc, &b);
    assert!(
        matches!(&e, ImportError::Accessor { used_as, .. } if used_as == "mesh 0 primitive 0 target 0 POSITION"),
        "{e}"
    );

    // NORMAL deltas on a primitive without NORMAL.
    let (b, mut doc) = skinned_morphed_file();
    doc["meshes"][0]["primitives"][0]["attributes"]
        .as_object_mut()
        .unwrap()
        .remove("NORMAL");
    let e = expect_err(doc, &b);
    assert!(
        e.to_string().contains("morph target 0 has NORMAL deltas"),
        "{e}"
    );

    // mesh.weights of the wrong length, node.weights of the wrong length.
    let (b, mut doc) = skinned_morphed_file();
    doc["meshes"][0]["weights"] = json!([1.0]);
    let e = expect_err(doc, &b);
    assert!(
        e.to_string()
            .contains("mesh.weights lists 1 weights for 2 targets"),
        "{e}"
    );
    let (b, mut doc) = skinned_morphed_file();
    doc["nodes"][2]["weights"] = json!([1.0, 2.0, 3.0]);
    let e = expect_err(doc, &b);
    assert!(matches!(e, ImportError::Node { node: 2, .. }), "{e}");

    // More targets than the GPU path supports: 2²¹ vertices hold two targets in 128 MiB.
    // Sparse accessors without a buffer view are zeros but for one substitution, so the file
    // stays small.
    let (mut b, mut doc) = skinned_morphed_file();
    let n = 1usize << 21;
    let index = b.u8s(&[0], "SCALAR", 1, false);
    let value = b.f32s(&[0.0, 0.0, 0.0], "VEC3", 3);
    let (index_view, value_view) = (
        b.accessors[index]["bufferView"].clone(),
        b.accessors[value]["bufferView"].clone(),
    );
    let mut accessors = Vec::new();
    for _ in 0..4 {
        accessors.push(json!({"componentType": 5126, "type": "VEC3", "count": n,
            "min": [0, 0, 0], "max": [0, 0, 0],
            "sparse": {"count": 1, "indices": {"bufferView": index_view, "componentType": 5121},
                       "values": {"bufferView": value_view}}}));
    }
    doc["meshes"] = json!([{"name": "dense", "primitives": [{
        "attributes": {"POSITION": b.accessors.len()},
        "targets": [{"POSITION": b.accessors.len() + 1}, {"POSITION": b.accessors.len() + 2}, {"POSITION": b.accessors.len() + 3}]
    }]}]);
    doc["nodes"] = json!([{"name": "dense", "mesh": 0}]);
    doc["scenes"] = json!([{"nodes": [0]}]);
    doc.as_object_mut().unwrap().remove("skins");
    doc.as_object_mut().unwrap().remove("animations");
    b.accessors.extend(accessors);
    let e = expect_err(doc, &b);
    assert!(
        e.to_string().contains("mesh 0 primitive 0: morph target 2: 3 targets of 2097152 vertices, more than the GPU path supports (2)"),
        "{e}"
    );
}

fn raw_mesh() -> RawSkinnedMesh {
    RawSkinnedMesh {
        name: "m".into(),
        bones: vec![("a".into(), Mat4::IDENTITY)],
        positions: vec![Vec3::ZERO, Vec3::X],
        normals: vec![Vec3::Z, Vec3::Z],
        influences: vec![RawVertexInfluences(vec![(0, 1.0)]); 2],
        morph_targets: vec![RawMorphTarget {
            name: "smile".into(),
            positions: vec![Vec3::Y, Vec3::Y],
            normals: vec![],
        }],
        ..Default::default()
    }
}

#[test]
fn bake_rejects_bad_morph_targets_with_the_target_named() {
    let ok: SkinnedMesh = raw_mesh().bake().unwrap();
    assert_eq!(ok.morph_targets().names(), ["smile"]);
    assert_eq!(ok.morph_targets().default_weights(), [0.0]);
    let mut r = raw_mesh();
    r.morph_targets[0].positions.pop();
    assert!(matches!(
        r.bake(),
        Err(BakeError::MorphTarget { target: 0, .. })
    ));
    let mut r = raw_mesh();
    r.morph_targets[0].positions[1].x = f32::NAN;
    let e = r.bake().unwrap_err();
    assert_eq!(
        e.to_string(),
        "mesh 'm': morph target 0: position delta of vertex 1 is NaN or infinite"
    );
    let mut r = raw_mesh();
    r.morph_targets[0].normals = vec![Vec3::X, Vec3::INFINITY];
    assert!(matches!(
        r.bake(),
        Err(BakeError::MorphTarget { target: 0, .. })
    ));
    let mut r = raw_mesh();
    r.morph_weights = vec![0.5, 0.5];
    assert!(matches!(r.bake(), Err(BakeError::MorphTarget { .. })));
    let mut r = raw_mesh();
    r.normals.clear();
    r.morph_targets[0].normals = vec![Vec3::X, Vec3::X];
    assert!(matches!(
        r.bake(),
        Err(BakeError::MorphTarget { target: 0, .. })
    ));
}

/// The fuzz target's morphed seed files import, with their targets (so the fuzzer starts from
/// files that reach the morph code).
#[test]
fn the_morphed_fuzz_seeds_import_with_their_targets() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/gltf_import");
    for (file, skinned) in [("SimpleMorph.glb", false), ("SkinnedMorph.glb", true)] {
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let scene = import_gltf_slice(&bytes, None, &AssetRegistry::new()).unwrap();
        let prims = if skinned {
            &scene.meshes
        } else {
            &scene.morphed_nodes
        };
        assert!(!prims.is_empty(), "{file}");
        assert_eq!(prims[0].skinned_mesh.morph_targets().len(), 2, "{file}");
    }
}
