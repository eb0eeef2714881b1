//! GPU batch raycasting (wgpu).
