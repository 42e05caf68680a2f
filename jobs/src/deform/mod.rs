//! RBF deformation: a low-poly cage drives a high-poly mesh.
