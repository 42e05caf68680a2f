//! Each class of bad asset input is refused with an error that names the asset, the item and
//! the index (issue #18, point 8; the glTF importer's own cases are in `gltf_import.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests unwrap: a failure is the test failing

use glam::{Mat4, Quat, Vec3};
use sinew_jobs::asset::{
    RawBone, RawBoneTracks, RawClip, RawRig, RawSkinnedMesh, RawTrack, RawVertexInfluences, Rig,
    Transform,
};

fn rig() -> Rig {
    RawRig {
        name: "two".into(),
        bones: vec![
            RawBone {
                name: "root".into(),
                parent: None,
                rest: Transform::IDENTITY,
            },
            RawBone {
                name: "tip".into(),
                parent: Some(0),
                rest: Transform::from_translation(Vec3::Y),
            },
        ],
    }
    .bake()
    .unwrap()
}

fn clip_with(times: Vec<f32>, values: Vec<Quat>) -> RawClip {
    RawClip {
        name: "swing".into(),
        bones: vec![RawBoneTracks {
            bone: "tip".into(),
            translation: None,
            rotation: Some(RawTrack::linear(times, values)),
            scale: None,
        }],
        ..Default::default()
    }
}

fn clip_err(times: Vec<f32>, values: Vec<Quat>) -> String {
    clip_with(times, values)
        .bake(&rig())
        .unwrap_err()
        .to_string()
}

fn mesh(positions: usize, influences: Vec<RawVertexInfluences>) -> RawSkinnedMesh {
    RawSkinnedMesh {
        name: "tri".into(),
        bones: vec![
            ("root".into(), Mat4::IDENTITY),
            ("tip".into(), Mat4::IDENTITY),
        ],
        positions: vec![Vec3::ZERO; positions],
        normals: vec![],
        influences,
        indices: vec![],
        ..Default::default()
    }
}

fn one(joint: u16, weight: f32) -> RawVertexInfluences {
    RawVertexInfluences(vec![(joint, weight)])
}

#[test]
fn key_times_that_do_not_increase_name_the_clip_track_and_key() {
    let q = Quat::IDENTITY;
    for times in [vec![0.0, 1.0, 0.5], vec![0.0, 1.0, 1.0]] {
        let e = clip_err(times.clone(), vec![q; 3]);
        assert!(
            e.starts_with("clip 'swing': ")
                && e.contains("track 'tip.rotation': key time 2 does not increase"),
            "{times:?}: {e}"
        );
    }
}

#[test]
fn nan_or_infinite_keys_name_the_clip_track_and_key() {
    let q = Quat::IDENTITY;
    let e = clip_err(vec![0.0, f32::INFINITY], vec![q; 2]);
    assert!(
        e.starts_with("clip 'swing': ") && e.contains("track 'tip.rotation'"),
        "{e}"
    );
    let e = clip_err(
        vec![0.0, 1.0],
        vec![q, Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0)],
    );
    assert!(
        e.starts_with("clip 'swing': ")
            && e.contains("track 'tip.rotation' value or tangent 1 is NaN"),
        "{e}"
    );
}

#[test]
fn a_joint_index_out_of_range_names_the_mesh_vertex_and_joint() {
    let e = mesh(2, vec![one(0, 1.0), one(7, 1.0)])
        .bake()
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("mesh 'tri': ")
            && e.contains("joint of vertex 1: index 7 out of range (len 2)"),
        "{e}"
    );
}

#[test]
fn an_influence_count_that_differs_from_the_positions_names_the_mesh() {
    let e = mesh(3, vec![one(0, 1.0), one(1, 1.0)])
        .bake()
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("mesh 'tri': ") && e.contains("influences has 2 entries, expected 3"),
        "{e}"
    );
}

/// Weights far from 1 are renormalised, not refused: the bake counts the vertices it fixed
/// (the glTF importer turns the count into a warning naming the mesh and primitive).
#[test]
fn weights_far_from_one_are_renormalised_and_counted() {
    let m = mesh(
        2,
        vec![one(0, 1.0), RawVertexInfluences(vec![(0, 3.0), (1, 1.0)])],
    )
    .bake()
    .unwrap();
    assert_eq!(m.renormalized_vertices(), 1);
    // No weight at all cannot be renormalised.
    let e = mesh(1, vec![one(0, 0.0)]).bake().unwrap_err().to_string();
    assert!(
        e.starts_with("mesh 'tri': ") && e.contains("vertex 0 has no positive weight"),
        "{e}"
    );
}

/// A mesh without bones is refused; one without vertices is allowed (a palette-only mesh, as
/// the crowd LOD uses).
#[test]
fn a_mesh_without_bones_and_a_track_without_keys_say_so() {
    let mut m = mesh(1, vec![one(0, 1.0)]);
    m.bones.clear();
    let e = m.bake().unwrap_err().to_string();
    assert_eq!(e, "mesh 'tri': the bone list is empty");
    assert!(mesh(0, vec![]).bake().is_ok());
    let e = clip_err(vec![], vec![]);
    assert_eq!(e, "clip 'swing': track 'tip.rotation' has no keys");
}

/// A clip of one key at 0 s has length zero: a pose, allowed; played looping it holds the
/// pose (wrapping needs a positive length).
#[test]
fn a_zero_length_clip_is_a_pose() {
    let c = clip_with(vec![0.0], vec![Quat::IDENTITY])
        .bake(&rig())
        .unwrap();
    assert_eq!(c.duration(), 0.0);
    assert_eq!(c.wrap_time_as(5.0, true), 0.0);
}
