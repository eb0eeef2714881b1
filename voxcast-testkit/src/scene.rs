//! Deterministic scenes and ray sets shared by tests, benches and examples: a noise terrain
//! with caves and several materials, a sparse random world, and the standard ray sets on them:
//! reach rays, line-of-sight segments, a camera over the terrain and rays through the sparse
//! world (BENCHMARKS.md's workloads are built from these).
//!
//! The random numbers come from SplitMix64, written out here so that scenes stay bit-identical
//! across dependency upgrades (benchmarks compare runs over months).

use glam::Vec3;

use voxcast::{Agent, Camera, Chunk, ChunkPos, LocalPos, VoxelId, VoxelRay, VoxelWorld, WorldPos};

/// Stone: the terrain's bulk.
pub const STONE: VoxelId = VoxelId(1);
/// Dirt: a few voxels under the surface.
pub const DIRT: VoxelId = VoxelId(2);
/// Grass: the top voxel of the ground.
pub const GRASS: VoxelId = VoxelId(3);
/// Sand: the ground near and under water.
pub const SAND: VoxelId = VoxelId(4);
/// Water: fills air below sea level (transparent to bullets in the examples).
pub const WATER: VoxelId = VoxelId(5);
/// Ore: scattered through stone.
pub const ORE: VoxelId = VoxelId(6);

/// A small deterministic random number generator (SplitMix64).
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    #[must_use]
    pub const fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        hash64(self.0)
    }

    /// A uniform float in `[0, 1)`.
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / (1u64 << 24) as f32)
    }

    /// A uniform integer in `0..n` (`n > 0`; `0` gives `0`).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
        }
    }

    /// A uniformly distributed unit vector.
    pub fn unit_vector(&mut self) -> Vec3 {
        loop {
            let v = Vec3::new(self.next_f32(), self.next_f32(), self.next_f32()) * 2.0 - 1.0;
            let l = v.length_squared();
            if l > 1e-4 && l <= 1.0 {
                return v / l.sqrt();
            }
        }
    }
}

#[inline]
fn hash64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn lattice(seed: u64, x: i64, y: i64, z: i64) -> f32 {
    let h = hash64(seed ^ hash64(x as u64 ^ hash64(y as u64 ^ hash64(z as u64))));
    (h >> 40) as f32 / (1u64 << 24) as f32
}

fn smooth(t: f32) -> f32 {
    t * t * (3.0 - 2.0 * t)
}

/// Value noise in `[0, 1)` at `(x, y, z)` with unit lattice spacing.
fn value_noise(seed: u64, x: f32, y: f32, z: f32) -> f32 {
    let (fx, fy, fz) = (x.floor(), y.floor(), z.floor());
    let (ix, iy, iz) = (fx as i64, fy as i64, fz as i64);
    let (tx, ty, tz) = (smooth(x - fx), smooth(y - fy), smooth(z - fz));
    let l = |dx, dy, dz| lattice(seed, ix + dx, iy + dy, iz + dz);
    let lerp = |a: f32, b: f32, t: f32| a + (b - a) * t;
    let x00 = lerp(l(0, 0, 0), l(1, 0, 0), tx);
    let x10 = lerp(l(0, 1, 0), l(1, 1, 0), tx);
    let x01 = lerp(l(0, 0, 1), l(1, 0, 1), tx);
    let x11 = lerp(l(0, 1, 1), l(1, 1, 1), tx);
    lerp(lerp(x00, x10, ty), lerp(x01, x11, ty), tz)
}

/// A heightmap terrain with caves, dirt, grass, sand, water and ore, occupying voxels
/// `0..size[0]`, `0..size[1]`, `0..size[2]` (x, y up, z). Sizes are rounded up to whole chunks;
/// every chunk of that box is loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Terrain {
    /// Size in voxels (x, y, z).
    pub size: [u32; 3],
    /// Noise seed.
    pub seed: u64,
}

impl Terrain {
    /// The standard terrain of the reach, line-of-sight and camera ray sets: 512 × 128 × 512
    /// voxels.
    pub const STANDARD: Self = Self {
        size: [512, 128, 512],
        seed: 0x766F_7863,
    };

    /// Sea level in voxels: air below it (and above the ground) is water.
    #[must_use]
    pub fn sea_level(&self) -> i32 {
        (self.size[1] as f32 * 0.38) as i32
    }

    /// Height of the ground's top voxel at column `(x, z)` (the grass or sand voxel), in
    /// `1..=size[1] - 2` (1 for a terrain less than 3 voxels high).
    #[must_use]
    pub fn height(&self, x: i64, z: i64) -> i32 {
        let (fx, fz) = (x as f32, z as f32);
        let mut n = 0.0;
        let mut amp = 0.5;
        let mut freq = 1.0 / 96.0;
        for octave in 0..4 {
            n += amp * value_noise(self.seed.wrapping_add(octave), fx * freq, 0.0, fz * freq);
            amp *= 0.5;
            freq *= 2.0;
        }
        let h = self.size[1] as f32 * (0.12 + 0.62 * n / 0.9375);
        (h as i32).clamp(1, (self.top_y() - 1).max(1))
    }

    /// The highest voxel row inside the terrain's box (-1 for a box 0 voxels high).
    fn top_y(&self) -> i32 {
        i32::try_from(self.size[1]).map_or(i32::MAX, |h| h - 1)
    }

    fn voxel(&self, x: i64, y: i32, z: i64, h: i32) -> VoxelId {
        let sea = self.sea_level();
        if y > h {
            return if y <= sea { WATER } else { VoxelId::AIR };
        }
        if y > 0 && y < h - 4 {
            let c = value_noise(
                self.seed ^ 0xCAFE,
                x as f32 / 14.0,
                y as f32 / 9.0,
                z as f32 / 14.0,
            );
            if c > 0.72 {
                return VoxelId::AIR;
            }
            if c < 0.06 {
                return ORE;
            }
        }
        if y == h {
            if h <= sea + 1 { SAND } else { GRASS }
        } else if y >= h - 3 {
            if h <= sea + 1 { SAND } else { DIRT }
        } else {
            STONE
        }
    }

    /// Builds the world.
    #[must_use]
    pub fn build(&self) -> VoxelWorld {
        let mut world = VoxelWorld::new();
        let chunks = self.size.map(|s| i128::from(s.div_ceil(32)));
        for cz in 0..chunks[2] {
            for cx in 0..chunks[0] {
                let mut column: Vec<Chunk> = (0..chunks[1]).map(|_| Chunk::default()).collect();
                for lz in 0..32u8 {
                    for lx in 0..32u8 {
                        let (x, z) = (
                            (cx * 32) as i64 + i64::from(lx),
                            (cz * 32) as i64 + i64::from(lz),
                        );
                        self.column(x, z, |y, id| {
                            column[(y >> 5) as usize]
                                .set(LocalPos::new(lx, (y & 31) as u8, lz), id);
                        });
                    }
                }
                for (cy, chunk) in column.into_iter().enumerate() {
                    world
                        .insert_chunk(ChunkPos::new(cx, cy as i128, cz), chunk)
                        .expect("chunk indices from u32 sizes lie in the world");
                }
            }
        }
        world
    }

    /// Calls `f` with each voxel of the terrain that is not air, and its id: what
    /// [`Terrain::build`] puts in the world, for a caller that builds a world of its own.
    pub fn for_each_voxel(&self, mut f: impl FnMut([i64; 3], u16)) {
        for z in 0..i64::from(self.size[2]) {
            for x in 0..i64::from(self.size[0]) {
                self.column(x, z, |y, id| f([x, i64::from(y), z], id.0));
            }
        }
    }

    /// Calls `f` with the height and id of each voxel of column `(x, z)` that is not air
    /// (none outside the terrain's box).
    fn column(&self, x: i64, z: i64, mut f: impl FnMut(i32, VoxelId)) {
        if x >= i64::from(self.size[0]) || z >= i64::from(self.size[2]) {
            return;
        }
        let h = self.height(x, z);
        let top = h.max(self.sea_level()).min(self.top_y());
        for y in 0..=top {
            let id = self.voxel(x, y, z, h);
            if !id.is_air() {
                f(y, id);
            }
        }
    }

    /// A random eye point 1.6 voxels above the ground (or water) of a random column.
    fn eye(&self, rng: &mut SplitMix64) -> (WorldPos, Vec3) {
        let x = rng.below(u64::from(self.size[0])) as i64;
        let z = rng.below(u64::from(self.size[2])) as i64;
        let (sx, sz) = (rng.next_f32(), rng.next_f32());
        (
            WorldPos::new(x.into(), i128::from(self.eye_voxel_y(x, z)), z.into()),
            Vec3::new(sx, 0.6, sz),
        )
    }

    /// The voxel row holding an eye 1.6 voxels above the ground or water surface of column
    /// `(x, z)` (the eye itself is 0.6 into that voxel). Standing on water keeps eyes out of it.
    #[must_use]
    pub fn eye_voxel_y(&self, x: i64, z: i64) -> i32 {
        // The surface's top face is at max(height, sea level) + 1.
        self.height(x, z).max(self.sea_level()) + 2
    }

    /// `n` agents standing on the ground (or the water's surface) of random columns, their
    /// eyes 1.6 voxels up (the eye of [`Terrain::reach_rays`] and
    /// [`Terrain::sight_segments`]). Every fourth stands on a voxel's corner (offset 0 on x and
    /// z): its segments to an agent straight along an axis lie in voxel face planes, the
    /// conservative line of sight's hardest case.
    #[must_use]
    pub fn agents(&self, n: usize, seed: u64) -> Vec<Agent> {
        let mut rng = SplitMix64::new(seed);
        (0..n)
            .map(|i| {
                let x = rng.below(u64::from(self.size[0])) as i64;
                let z = rng.below(u64::from(self.size[2])) as i64;
                let feet = self.height(x, z).max(self.sea_level()) + 1;
                let offset = if i % 4 == 0 {
                    Vec3::ZERO
                } else {
                    Vec3::new(rng.next_f32(), 0.0, rng.next_f32())
                };
                Agent::new(WorldPos::new(x.into(), feet.into(), z.into()), offset, 1.6)
            })
            .collect()
    }

    /// Reach rays: `n` rays from 1.6 voxels above random ground (or water) points in uniformly random
    /// directions, max distance 8.
    #[must_use]
    pub fn reach_rays(&self, n: usize, seed: u64) -> Vec<VoxelRay> {
        let mut rng = SplitMix64::new(seed);
        (0..n)
            .map(|_| {
                let (p, s) = self.eye(&mut rng);
                VoxelRay::new(p, s, rng.unit_vector(), 8.0)
                    .unwrap_or_else(|e| unreachable!("valid ray: {e}"))
            })
            .collect()
    }

    /// Line of sight: `n` segments between random eye points (1.6 above ground or water) at
    /// most `max_len` voxels apart (64 in the standard workload). At most `64·n + 1024`
    /// candidates are drawn, so that a `max_len` too short for any segment (under about a
    /// voxel, or NaN) or a terrain with no columns returns fewer than `n` (none) instead of
    /// looping forever.
    #[must_use]
    pub fn sight_segments(&self, n: usize, max_len: f32, seed: u64) -> Vec<VoxelRay> {
        let mut rng = SplitMix64::new(seed);
        let mut out = Vec::with_capacity(n);
        let mut candidates = n.saturating_mul(64).saturating_add(1024);
        while out.len() < n && candidates > 0 {
            candidates -= 1;
            let (a, sa) = self.eye(&mut rng);
            let ang = rng.next_f32() * std::f32::consts::TAU;
            let r = rng.next_f32() * max_len * 0.95;
            let bx = (a.x as f32 + sa.x + ang.cos() * r).floor() as i64;
            let bz = (a.z as f32 + sa.z + ang.sin() * r).floor() as i64;
            if bx < 0 || bz < 0 || bx >= i64::from(self.size[0]) || bz >= i64::from(self.size[2]) {
                continue;
            }
            let b = WorldPos::new(bx.into(), i128::from(self.eye_voxel_y(bx, bz)), bz.into());
            let sb = Vec3::new(rng.next_f32(), 0.6, rng.next_f32());
            if let Ok(seg) = VoxelRay::between(a, sa, b, sb)
                && seg.max_distance <= max_len
            {
                out.push(seg);
            }
        }
        out
    }

    /// The standard camera: a pinhole camera 40 voxels above the ground, centered in x and an eighth of the
    /// way in along z, looking across the terrain (mostly +z) and slightly down, 60 degree
    /// vertical field of view, max distance 1024. A width or height of 0 is taken as 1.
    #[must_use]
    pub fn camera(&self, width: u32, height: u32) -> Camera {
        let (width, height) = (width.max(1), height.max(1));
        let cx = i64::from(self.size[0] / 2);
        let cz = i64::from(self.size[2] / 8);
        let ground = self.height(cx, cz).max(self.sea_level());
        let eye = WorldPos::new(cx.into(), i128::from(ground + 40), cz.into());
        Camera::new(
            eye,
            Vec3::new(0.5, 0.5, 0.5),
            Vec3::new(0.15, -0.28, 1.0),
            60.0,
            width,
            height,
            1024.0,
        )
        .unwrap_or_else(|e| unreachable!("valid camera: {e}"))
    }
}

/// A cube of `size³` voxels from the origin where each voxel is solid with probability
/// `density`, with ids 1..=3.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sparse {
    /// Edge in voxels (rounded up to whole chunks; every chunk is loaded).
    pub size: u32,
    /// Probability that a voxel is solid.
    pub density: f32,
    /// Seed.
    pub seed: u64,
}

impl Sparse {
    /// The standard sparse world: 256³ voxels, 0.5% solid.
    pub const STANDARD: Self = Self {
        size: 256,
        density: 0.005,
        seed: 0x5350_4152,
    };

    /// Builds the world.
    #[must_use]
    pub fn build(&self) -> VoxelWorld {
        let mut world = VoxelWorld::new();
        let c = i128::from(self.size.div_ceil(32));
        for cz in 0..c {
            for cy in 0..c {
                for cx in 0..c {
                    world
                        .insert_chunk(ChunkPos::new(cx, cy, cz), Chunk::default())
                        .expect("chunk indices from u32 sizes lie in the world");
                }
            }
        }
        self.for_each_voxel(|[x, y, z], id| {
            world.set_voxel(WorldPos::new(x.into(), y.into(), z.into()), VoxelId(id));
        });
        world
    }

    /// Calls `f` with each solid voxel and its id: what [`Sparse::build`] puts in the world
    /// (every chunk of the box loaded), for a caller that builds a world of its own.
    pub fn for_each_voxel(&self, mut f: impl FnMut([i64; 3], u16)) {
        let mut rng = SplitMix64::new(self.seed);
        let threshold = (f64::from(self.density) * (1u64 << 32) as f64) as u64;
        for z in 0..self.size {
            for y in 0..self.size {
                for x in 0..self.size {
                    let r = rng.next_u64();
                    if r & 0xFFFF_FFFF < threshold {
                        f([x, y, z].map(i64::from), 1 + ((r >> 32) % 3) as u16);
                    }
                }
            }
        }
    }

    /// Rays through the sparse world: `n` rays from random interior points in random directions, max distance 512.
    #[must_use]
    pub fn rays(&self, n: usize, seed: u64) -> Vec<VoxelRay> {
        let mut rng = SplitMix64::new(seed);
        (0..n)
            .map(|_| {
                let p = WorldPos::new(
                    rng.below(self.size.into()).into(),
                    rng.below(self.size.into()).into(),
                    rng.below(self.size.into()).into(),
                );
                let s = Vec3::new(rng.next_f32(), rng.next_f32(), rng.next_f32());
                VoxelRay::new(p, s, rng.unit_vector(), 512.0)
                    .unwrap_or_else(|e| unreachable!("valid ray: {e}"))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Terrains too low for the standard heights, and segment requests no segment can meet,
    /// return instead of panicking or looping forever.
    #[test]
    fn degenerate_terrains_and_requests_return() {
        for h in [0, 1, 2, 3, u32::MAX] {
            let t = Terrain {
                size: [8, h, 8],
                seed: 1,
            };
            let top = t.height(3, 4);
            let highest = i32::try_from(h)
                .unwrap_or(i32::MAX)
                .saturating_sub(2)
                .max(1);
            assert!((1..=highest).contains(&top), "{h}: {top}");
            let _ = t.camera(4, 4);
        }
        for h in [0, 1, 2, 3] {
            let world = Terrain {
                size: [8, h, 8],
                seed: 1,
            }
            .build();
            let above_empty = (0..8)
                .flat_map(|x| (0..8).map(move |z| (x, z)))
                .all(|(x, z)| {
                    (i128::from(h)..40).all(|y| {
                        world
                            .get_voxel(&WorldPos::new(x, y, z))
                            .is_none_or(VoxelId::is_air)
                    })
                });
            assert!(above_empty, "terrain {h} high has voxels above its box");
        }
        let t = Terrain::STANDARD;
        for max_len in [0.0, -1.0, f32::NAN] {
            assert!(t.sight_segments(10, max_len, 1).is_empty(), "{max_len}");
        }
        let empty = Terrain {
            size: [0, 64, 0],
            seed: 1,
        };
        assert!(empty.sight_segments(10, 64.0, 1).is_empty());
        assert_eq!(t.sight_segments(1000, 64.0, 1).len(), 1000);
    }
}
