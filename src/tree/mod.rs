//! The Bonsai-style sparse octree tree code on the GPU.

pub mod sort;
