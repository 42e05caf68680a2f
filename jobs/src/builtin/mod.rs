//! The built-in procedural character: rig, skinned mesh and clips made in code.
