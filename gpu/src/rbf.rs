//! RBF deformation on the GPU (compute shader).
