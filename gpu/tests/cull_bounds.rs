//! Culling bounds of quantized skinned meshes (`KHR_mesh_quantization`): their positions are
//! integer grid values that the inverse bind matrices scale back, so the bind-space sphere
//! (`mesh_bounding_sphere`) is in grid units, while `rest_pose_bounding_sphere` is in the
//! instances' space. Checked against the same characters' unquantized files (the fixtures'
//! originals): the quantized file's sphere holds every vertex of the original skinned at its
//! rest pose (by the pipeline's per-entity functions: propagation, then job 9's palette) up
//! to 0.2 % of the radius (the grid's step), and has the original's radius within 1 %; the
//! grid-space sphere misses the model by more than a tenth of its radius or is ten times too
//! large.
#![allow(clippy::unwrap_used, clippy::panic)] // tests: a failed step is a failed test

use glam::{Affine3A, Vec3};
use sinew_gpu::raster::{mesh_bounding_sphere, rest_pose_bounding_sphere};
use sinew_jobs::asset::AssetRegistry;
use sinew_jobs::component::SkinRef;
use sinew_jobs::import::import_gltf;
use sinew_jobs::j7_propagate::propagate_one;
use sinew_jobs::j8_remap_cache::RemapTable;
use sinew_jobs::j9_skinning::skin_entity;

fn scene(file: &str) -> sinew_jobs::import::GltfScene {
    import_gltf(
        &sinew_fixtures::asset_path(format!("gltf/{file}")).unwrap(),
        &AssetRegistry::new(),
    )
    .unwrap()
}

#[test]
fn quantized_skinned_meshes_are_bounded_in_model_space() {
    for (quantized, original) in [
        ("CesiumMan.quantized.glb", "CesiumMan.glb"),
        ("Fox.gltfpack.glb", "Fox.glb"),
    ] {
        let q = scene(quantized);
        let o = scene(original);
        let qmesh = &q.meshes[0].skinned_mesh;
        let omesh = &o.meshes[0].skinned_mesh;
        let skin = SkinRef {
            mesh: qmesh.clone(),
            root_bone: None,
        };
        let (centre, radius) = rest_pose_bounding_sphere(&q.rig, &skin).unwrap();
        // The original's vertices at its rest pose, in the instances' space.
        let mut model = vec![Affine3A::IDENTITY; o.rig.bone_count()];
        propagate_one(o.rig.parent_indices(), o.rig.rest_pose(), &mut model);
        let oskin = SkinRef {
            mesh: omesh.clone(),
            root_bone: None,
        };
        let mut palette = vec![[0.0f32; 12]; omesh.bone_count()];
        skin_entity(
            &model,
            &oskin,
            &RemapTable::build(&o.rig, omesh),
            &mut palette,
        );
        let (rest, _) = omesh.skin_cpu(&palette);
        let (lo, hi) = rest
            .iter()
            .fold((Vec3::MAX, Vec3::MIN), |(l, h), p| (l.min(*p), h.max(*p)));
        let original_radius = rest
            .iter()
            .map(|p| p.distance((lo + hi) * 0.5))
            .fold(0.0f32, f32::max);
        let outside = rest
            .iter()
            .map(|p| p.distance(centre) - radius)
            .fold(f32::MIN, f32::max);
        let (grid_centre, grid_radius) = mesh_bounding_sphere(qmesh).unwrap();
        let grid_outside = rest
            .iter()
            .map(|p| p.distance(grid_centre) - grid_radius)
            .fold(f32::MIN, f32::max);
        eprintln!(
            "{quantized}: rest-pose radius {radius}, original {original_radius}, farthest original vertex {outside:+e} outside; grid-space radius {grid_radius}, {grid_outside:+e} outside"
        );
        assert!(outside <= 2e-3 * original_radius, "{quantized}: {outside}");
        assert!(
            (radius / original_radius - 1.0).abs() <= 0.01,
            "{quantized}: {radius} vs {original_radius}"
        );
        // The bind-space sphere is in grid units: it misses the model, or is far too large.
        assert!(
            grid_outside > 0.1 * original_radius || grid_radius > 10.0 * original_radius,
            "{quantized}: grid-space sphere {grid_radius}, {grid_outside} outside"
        );
    }
}
