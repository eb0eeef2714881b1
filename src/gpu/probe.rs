//! The self-check a raycaster runs on its device when it is created: a few thousand rays and
//! a small camera image over a small world of its own, each answer compared with the CPU
//! reference. [`Probe`] holds the queries and judges the device's answers; the raycaster casts
//! them.

use glam::Vec3;

use crate::camera::Camera;
use crate::coords::{ChunkPos, LocalPos, WorldPos};
use crate::cpu_ref::voxel_raycast_with;
use crate::gpu::error::GpuError;
use crate::ray::{RaycastOptions, RaycastOutcome, VoxelRay};
use crate::world::{Chunk, VoxelId, VoxelWorld};

/// What the self-check at creation found
/// ([`GpuRaycaster::self_check`](crate::gpu::GpuRaycaster::self_check)).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SelfCheckReport {
    /// Rays cast (uploaded from the host), each compared with the CPU reference.
    pub rays: usize,
    /// Pixels of the camera image made in the shader, each compared likewise.
    pub pixels: usize,
    /// Wall time of the check, in seconds: world upload, both batches and the CPU reference.
    pub seconds: f64,
    /// The first answer that differs from the CPU reference (the query and both answers), or
    /// `None` when every answer matches under the parity contract.
    pub difference: Option<String>,
}

impl SelfCheckReport {
    /// Whether every answer matched the CPU reference.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.difference.is_none()
    }
}

impl std::fmt::Display for SelfCheckReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = format!("{} rays and {} camera pixels", self.rays, self.pixels);
        match &self.difference {
            None => write!(f, "exact: {what} match the CPU reference"),
            Some(d) => write!(f, "NOT EXACT: of {what}, {d}"),
        }
    }
}

/// The probe's world in voxels: 2 × 1 × 2 chunks.
const PROBE_SIZE: [u32; 3] = [64, 32, 64];
/// Rays uploaded from the host.
const PROBE_RAYS: u64 = 3000;
/// The camera image made in the shader.
const PROBE_IMAGE: (u32, u32) = (48, 27);

/// The self-check's queries: a small terrain (hills, caves, water, ore) with rays from
/// anywhere in it (on voxel faces and edges too) in every direction, also along axes and
/// diagonals, and a camera that looks down across it at an odd angle and field of view, so
/// that its pixels' directions (made in the shader with divisions and a root) are rarely round
/// numbers.
#[derive(Debug)]
pub(super) struct Probe {
    pub(super) world: VoxelWorld,
    pub(super) rays: Vec<VoxelRay>,
    pub(super) camera: Camera,
    pub(super) opts: RaycastOptions,
}

impl Probe {
    /// The queries, the same every time.
    pub(super) fn new() -> Result<Self, GpuError> {
        let [sx, sy, sz] = PROBE_SIZE.map(u64::from);
        let offsets = [0.0, 0.5, 0.25];
        let mut draw = Draws(0x9E37_79B9);
        let rays = (0..PROBE_RAYS)
            .filter_map(|i| {
                let origin = WorldPos::new(
                    draw.below(sx).into(),
                    draw.below(sy).into(),
                    draw.below(sz).into(),
                );
                // Every fourth ray starts on a face, edge or corner, every eighth goes along an
                // axis or a diagonal.
                let sub = if i % 4 == 0 {
                    Vec3::from_array([0, 1, 2].map(|_| offsets[draw.below(3) as usize]))
                } else {
                    Vec3::new(draw.unit(), draw.unit(), draw.unit())
                };
                let dir = if i % 8 == 1 {
                    Vec3::from_array([0, 1, 2].map(|_| draw.below(3) as f32 - 1.0))
                } else {
                    Vec3::new(draw.unit(), draw.unit(), draw.unit()) - 0.5
                };
                let dir = if dir == Vec3::ZERO { Vec3::Y } else { dir };
                VoxelRay::new(origin, sub, dir, 4.0 + draw.unit() * 60.0).ok()
            })
            .collect();
        let (w, h) = PROBE_IMAGE;
        let camera = Camera::with_up(
            WorldPos::new(19, 28, 7),
            Vec3::new(0.3, 0.7, 0.1),
            Vec3::new(0.31, -0.47, 0.83),
            Vec3::new(0.05, 1.0, -0.02),
            71.3,
            w,
            h,
            96.0,
        )
        .map_err(|e| GpuError::Internal(format!("the self-check's camera: {e}")))?;
        Ok(Self {
            world: terrain(),
            rays,
            camera,
            opts: RaycastOptions::default(),
        })
    }

    /// Compares the device's answers to the rays and the camera's pixels with the CPU
    /// reference's; `seconds` is the check's wall time so far.
    pub(super) fn report(
        &self,
        answers: &[RaycastOutcome],
        pixels: &[RaycastOutcome],
        seconds: f64,
    ) -> SelfCheckReport {
        let (world, opts) = (&self.world, &self.opts);
        let ray_difference = self.rays.iter().zip(answers).find_map(|(ray, got)| {
            let want = voxel_raycast_with(ray, world, opts);
            (!want.matches(got))
                .then(|| format!("ray {ray:?}: the CPU gives {want:?}, the GPU {got:?}"))
        });
        let camera = &self.camera;
        let pixel_difference = || {
            pixels.iter().enumerate().find_map(|(i, got)| {
                let (px, py) = (i as u32 % camera.width, i as u32 / camera.width);
                let want = camera
                    .ray(px, py)
                    .map_or_else(RaycastOutcome::Invalid, |r| {
                        voxel_raycast_with(&r, world, opts)
                    });
                (!want.matches(got)).then(|| {
                    format!(
                        "camera pixel ({px}, {py}) of {camera:?}: the CPU gives {want:?}, the \
                         GPU {got:?}"
                    )
                })
            })
        };
        let count_difference = (answers.len() != self.rays.len()
            || pixels.len() != (camera.width * camera.height) as usize)
            .then(|| {
                format!(
                    "{} answers to {} rays and {} pixels of {}",
                    answers.len(),
                    self.rays.len(),
                    pixels.len(),
                    camera.width * camera.height
                )
            });
        SelfCheckReport {
            rays: answers.len(),
            pixels: pixels.len(),
            seconds,
            difference: count_difference
                .or(ray_difference)
                .or_else(pixel_difference),
        }
    }
}

/// The splitmix64 finaliser: a well-mixed 64-bit value of `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Numbers drawn one after another from a seed, each the mix of a counter.
struct Draws(u64);

impl Draws {
    /// A value in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.0 += 1;
        mix(self.0) % n
    }

    /// A value in `[0, 1)` with 24 random bits.
    fn unit(&mut self) -> f32 {
        self.below(1 << 24) as f32 / (1 << 24) as f32
    }
}

/// A value in `0..n` for the integer point `p`.
fn hash(p: [i64; 3], n: u64) -> u64 {
    let [x, y, z] = p.map(|c| c as u64);
    mix(x ^ mix(y ^ mix(z ^ 0x5E1F_C4EC))) % n
}

/// The probe's terrain: rolling hills (heights interpolated between random heights every 8
/// voxels), grass, sand at the water line, dirt, stone, caves, ore and water up to the sea
/// level, so that rays cross air, water, faces, edges and ids of every kind.
fn terrain() -> VoxelWorld {
    const SEA: i64 = 12;
    let height = |x: i64, z: i64| {
        let corner = |cx: i64, cz: i64| hash([cx, 0, cz], 14) as f32;
        let (gx, gz) = (x.div_euclid(8), z.div_euclid(8));
        let (tx, tz) = ((x & 7) as f32 / 8.0, (z & 7) as f32 / 8.0);
        let lerp = |a: f32, b: f32, t: f32| a + (b - a) * t;
        let top = lerp(corner(gx, gz), corner(gx + 1, gz), tx);
        let bottom = lerp(corner(gx, gz + 1), corner(gx + 1, gz + 1), tx);
        6 + lerp(top, bottom, tz) as i64
    };
    let id = |x: i64, y: i64, z: i64, h: i64| -> u16 {
        if y > h {
            return if y <= SEA { 5 } else { 0 };
        }
        if y > 0 && y < h - 3 {
            match hash([x / 3, y / 3, z / 3], 23) {
                0..=2 => return 0,
                3 => return 6,
                _ => {}
            }
        }
        match h - y {
            0 if h <= SEA + 1 => 4,
            0 => 3,
            1..=3 => 2,
            _ => 1,
        }
    };
    let [sx, sy, sz] = PROBE_SIZE.map(i64::from);
    let mut world = VoxelWorld::new();
    for cz in 0..sz / 32 {
        for cx in 0..sx / 32 {
            let mut chunk = Chunk::default();
            for lz in 0..32u8 {
                for lx in 0..32u8 {
                    let (x, z) = (cx * 32 + i64::from(lx), cz * 32 + i64::from(lz));
                    let h = height(x, z).min(sy - 1);
                    for y in 0..sy {
                        let v = id(x, y, z, h);
                        if v != 0 {
                            chunk.set(LocalPos::new(lx, y as u8, lz), VoxelId(v));
                        }
                    }
                }
            }
            world
                .insert_chunk(ChunkPos::new(cx.into(), 0, cz.into()), chunk)
                .expect("small chunk indices lie in the world");
        }
    }
    world
}
