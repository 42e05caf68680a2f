//! Mesh simplification on the built-in character (from sinew-fixtures): a two-level chain
//! meets its triangle budgets, its error grows with the reduction, and it keeps the bones.

use sinew_jobs::asset::lod_chain;

#[test]
fn builtin_character_chain() {
    let ch = sinew_fixtures::builtin::character();
    let mesh = ch.mesh.bake().expect("built-in mesh bakes");
    let n = mesh.indices().len() / 3;
    let chain = lod_chain(&mesh, &[0.25, 0.06]).expect("chain");
    assert_eq!(chain.len(), 2);
    assert!(chain[0].mesh.indices().len() / 3 <= (n as f64 * 0.25).round() as usize);
    assert!(chain[1].mesh.indices().len() / 3 <= (n as f64 * 0.06).round() as usize);
    assert!(chain[1].error >= chain[0].error);
    assert_eq!(chain[1].mesh.bones(), mesh.bones());
}
