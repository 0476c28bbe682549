//! GPU radix sort of (64-bit key, u32 value) pairs (drives `shaders/sort.wgsl`).
