//! Helpers shared by the integration tests: building rays and small worlds, and printing a
//! ray so that a failing assertion says which ray failed. CPU only; the GPU helpers are in
//! [`crate::gpu`].

use crate::scene::SplitMix64;
use voxcast::glam::{DVec3, IVec3, Vec3};
use voxcast::{
    Chunk, ChunkPos, OriginPolicy, RaycastOptions, UnloadedPolicy, VoxelId, VoxelRay,
    VoxelRaycastHit, VoxelWorld, WorldPos, voxel_raycast_with,
};

/// Every origin policy, for tests that run each.
pub const ORIGIN_POLICIES: [OriginPolicy; 3] = [
    OriginPolicy::Report,
    OriginPolicy::SkipOriginVoxel,
    OriginPolicy::ExitSolid,
];

/// The default options with the given origin and unloaded policies.
pub fn opts(origin: OriginPolicy, unloaded: UnloadedPolicy) -> RaycastOptions {
    RaycastOptions {
        origin,
        unloaded,
        ..RaycastOptions::default()
    }
}

/// The hit of `r` under `o`, or a panic that names the ray and what came back instead.
#[track_caller]
pub fn expect_hit(r: &VoxelRay, world: &VoxelWorld, o: &RaycastOptions) -> VoxelRaycastHit {
    let out = voxel_raycast_with(r, world, o);
    *out.hit()
        .unwrap_or_else(|| panic!("expected a hit, got {out:?} for {}", describe(r)))
}

/// A valid ray, or a panic that names the bad input.
#[track_caller]
pub fn ray(origin: WorldPos, sub: Vec3, dir: Vec3, max: f32) -> VoxelRay {
    VoxelRay::new(origin, sub, dir, max).unwrap_or_else(|e| {
        panic!("test ray must be valid: {e}: origin {origin:?} sub {sub:?} dir {dir:?} max {max}")
    })
}

/// A ray from the point `(x, y, z)` given as voxel plus offset, written the way people think of
/// it: `ray_xyz([10, 11, 12], [0.3, 0.4, 0.5], ...)`.
#[track_caller]
pub fn ray_at(origin: [i128; 3], sub: [f32; 3], dir: [f32; 3], max: f32) -> VoxelRay {
    ray(
        WorldPos::from_array(origin),
        Vec3::from_array(sub),
        Vec3::from_array(dir),
        max,
    )
}

/// One line that identifies a ray exactly (bit patterns included, so `-0.0` and near-ties show).
pub fn describe(r: &VoxelRay) -> String {
    let bits = |v: Vec3| {
        format!(
            "[{:#010x}, {:#010x}, {:#010x}]",
            v.x.to_bits(),
            v.y.to_bits(),
            v.z.to_bits()
        )
    };
    format!(
        "ray {{ origin: ({}, {}, {}), sub_offset: {:?} (bits {}), direction: {:?} (bits {}), max_distance: {:?} }}",
        r.origin.x,
        r.origin.y,
        r.origin.z,
        r.sub_offset,
        bits(r.sub_offset),
        r.direction,
        bits(r.direction),
        r.max_distance,
    )
}

/// A world holding exactly the listed voxels (their chunks are loaded, filled with air).
pub fn world_with(voxels: &[(WorldPos, VoxelId)]) -> VoxelWorld {
    let mut w = VoxelWorld::new();
    for &(p, id) in voxels {
        w.set_voxel(p, id);
    }
    w
}

/// `p + (dx, dy, dz)`.
pub fn offset(p: WorldPos, d: [i128; 3]) -> WorldPos {
    WorldPos::new(p.x + d[0], p.y + d[1], p.z + d[2])
}

/// Case `case` of a family of sparse random worlds: voxels over several regions, also stacked
/// in y (regions are 128 voxels), with unloaded chunks between them; at an ordinary place, or
/// far out in the i128 world up to its edge (by `case % 4`). Returns the world's base corner
/// and the world.
pub fn sparse_regions_world(case: u64) -> (WorldPos, VoxelWorld) {
    let base = match case % 4 {
        0 | 1 => WorldPos::new(-70, -150, -40),
        2 => WorldPos::new(1 << 100, -(1 << 90), 1 << 120),
        _ => WorldPos::new(i128::MAX - 300, i128::MIN + 20, i128::MAX - 200),
    };
    let mut solids = random_solids(case, base, 48, 0.01, 3);
    solids.extend(random_solids(
        case + 1000,
        offset(base, [0, 170, 40]),
        40,
        0.02,
        3,
    ));
    (base, world_with(&solids))
}

/// A random small world: the voxels of the box `min .. min + edge` (each axis) that are solid
/// with probability `density`, with ids `1..=ids`. Returns the solid voxels in a list too, so
/// that an oracle can walk them without going through the world.
pub fn random_solids(
    seed: u64,
    min: WorldPos,
    edge: i128,
    density: f64,
    ids: u16,
) -> Vec<(WorldPos, VoxelId)> {
    let mut rng = SplitMix64::new(seed);
    let threshold = (density * (1u64 << 32) as f64) as u64;
    let mut out = Vec::new();
    for z in 0..edge {
        for y in 0..edge {
            for x in 0..edge {
                let r = rng.next_u64();
                if r & 0xFFFF_FFFF < threshold {
                    let id = VoxelId(1 + ((r >> 32) % u64::from(ids)) as u16);
                    out.push((offset(min, [x, y, z]), id));
                }
            }
        }
    }
    out
}

/// A sub offset of one of three kinds: on a face (0), at a half (0.5) or random.
pub fn sub_of_kind(kind: u8, random: f32) -> f32 {
    match kind % 3 {
        0 => 0.0,
        1 => 0.5,
        _ => random,
    }
}

/// A direction component of one of several kinds: `+0.0`, `-0.0`, `+1`, `-1`, or a random value
/// in `[-1, 1]`.
pub fn dir_component(kind: u8, random: f32) -> f32 {
    match kind % 6 {
        0 => 0.0,
        1 => -0.0,
        2 => 1.0,
        3 => -1.0,
        _ => random * 2.0 - 1.0,
    }
}

/// The point at distance `t` relative to the ray's origin voxel, in f64 (exact inputs: the f32
/// sub offset, direction and distance).
pub fn point_rel(r: &VoxelRay, t: f32) -> DVec3 {
    r.sub_offset.as_dvec3() + r.direction.as_dvec3() * f64::from(t)
}

/// `p - origin` as f64 (exact for the small differences the tests use).
pub fn rel(p: WorldPos, origin: WorldPos) -> DVec3 {
    DVec3::new(
        (p.x - origin.x) as f64,
        (p.y - origin.y) as f64,
        (p.z - origin.z) as f64,
    )
}

/// A world of many regions (`4×4×4` chunks each) that is mostly empty chunks, with scattered
/// dense chunks, uniform chunks and unloaded holes, placed at `base` (in chunks): the DDA
/// crosses runs of empty chunks in one step here.
pub fn region_world(base: [i128; 3], seed: u64) -> VoxelWorld {
    let mut rng = SplitMix64::new(seed);
    let mut world = VoxelWorld::new();
    for cz in -6i128..6 {
        for cy in -3i128..5 {
            for cx in -6i128..6 {
                let pos = ChunkPos::new(base[0] + cx, base[1] + cy, base[2] + cz);
                match rng.below(100) {
                    0..=2 => {} // a hole: not loaded
                    3 => {
                        world
                            .insert_chunk(pos, Chunk::filled(VoxelId(2)))
                            .expect("in the world");
                    }
                    4..=7 => {
                        let origin = pos.origin();
                        for _ in 0..1 + rng.below(6) {
                            let v =
                                offset(origin, [0, 1, 2].map(|_| i128::from(rng.below(32) as u8)));
                            world.set_voxel(v, VoxelId(1 + rng.below(3) as u16));
                        }
                    }
                    _ => {
                        world
                            .insert_chunk(pos, Chunk::default())
                            .expect("in the world");
                    }
                }
            }
        }
    }
    world
}

/// `n` rays through [`region_world`] at `base`: three in four from random origins inside the
/// loaded box or up to 64 voxels beyond it, in random directions; one in four from chunk
/// corners along axes and diagonals. Max distance 700 (longer than the box).
pub fn region_rays(base: [i128; 3], seed: u64, n: usize) -> Vec<VoxelRay> {
    let lo = ChunkPos::new(base[0] - 6, base[1] - 3, base[2] - 6).origin();
    let extent = [384u64, 256, 384];
    let mut rng = SplitMix64::new(seed);
    let mut rays = Vec::new();
    for i in 0..n {
        let o = [0, 1, 2].map(|a| lo.axis(a) - 64 + i128::from(rng.below(extent[a] + 128) as u32));
        let ray = if i % 4 == 0 {
            let sub = [0, 1, 2].map(|_| sub_of_kind(rng.below(2) as u8, 0.0));
            let dir = [0, 1, 2].map(|_| dir_component(rng.below(4) as u8, 0.0));
            if dir.iter().all(|&c| c == 0.0) {
                continue;
            }
            ray_at(o.map(|v| v & !31), sub, dir, 700.0)
        } else {
            let sub = [0, 1, 2].map(|_| rng.next_f32());
            ray_at(o, sub, rng.unit_vector().to_array(), 700.0)
        };
        rays.push(ray);
    }
    rays
}

/// A chunk at `base` (in chunks) whose top 8 voxel layers are solid with probability 1/8,
/// optionally with an all-air chunk loaded above it, and diagonal rays that start above it,
/// with every crossing a tie (voxel centers, directions of ±1 components). Where the air chunk
/// is not loaded the rays start outside the loaded and the occupied bounds, so they are clipped
/// to the box, often inside a tie group whose extra voxels conservative line of sight tests.
pub fn tie_entry_world(base: [i128; 3], air_above: bool) -> (VoxelWorld, Vec<VoxelRay>) {
    let mut rng = SplitMix64::new(0x7E1E);
    let mut world = VoxelWorld::new();
    let chunk = ChunkPos::new(base[0], base[1], base[2]);
    world
        .insert_chunk(chunk, Chunk::default())
        .expect("in the world");
    if air_above {
        world
            .insert_chunk(
                ChunkPos::new(base[0], base[1] + 1, base[2]),
                Chunk::default(),
            )
            .expect("in the world");
    }
    let o = chunk.origin();
    for x in 0..32 {
        for y in 24..32 {
            for z in 0..32 {
                if rng.below(8) == 0 {
                    world.set_voxel(offset(o, [x, y, z]), VoxelId(1 + rng.below(3) as u16));
                }
            }
        }
    }
    let mut rays = Vec::new();
    for x in 0..32 {
        for z in 0..32 {
            for dir in [
                [1.0, -1.0, 0.0],
                [0.0, -1.0, -1.0],
                [-1.0, -1.0, 1.0],
                [1.0, -1.0, 1.0],
            ] {
                let start = offset(o, [x, 33 + (x + z) % 5, z]);
                rays.push(ray(start, Vec3::splat(0.5), Vec3::from_array(dir), 24.0));
            }
        }
    }
    (world, rays)
}

/// Where a segment between two lattice points passes exactly (in exact arithmetic) through a
/// voxel edge or corner. The segment runs from `from + (h, h, h)` to `from + d + (h, h, h)` with
/// `h = 0.5` (voxel centers) or `h = 0` (voxel corners; then every component of `d` must be
/// non-zero, so that the segment does not run along a face plane). Returns, for each such point
/// strictly between the ends, its parameter `s` in `(0, 1)`, the voxel the segment is in just
/// before it (relative to `from`), and the tied axes as a bit mask (two or three bits).
/// Computed with integers only: crossing `k` (from 0) on axis `a` lies at
/// `s = (2k + 1) / (2|d_a|)` for centers and `s = (k + 1) / |d_a|` for corners.
pub fn lattice_ties(d: [i64; 3], centers: bool) -> Vec<(f64, [i64; 3], u32)> {
    // Crossings as fractions num / den of s.
    let crossing = |a: usize, k: i64| -> (i64, i64) {
        let m = d[a].abs();
        if centers {
            (2 * k + 1, 2 * m)
        } else {
            (k + 1, m)
        }
    };
    let count = |a: usize| -> i64 {
        let m = d[a].abs();
        if centers { m } else { m - 1 }
    };
    let lt = |p: (i64, i64), q: (i64, i64)| p.0 * q.1 < q.0 * p.1;
    let eq = |p: (i64, i64), q: (i64, i64)| p.0 * q.1 == q.0 * p.1;
    let mut out = Vec::new();
    for a in 0..3 {
        for k in 0..count(a) {
            let s = crossing(a, k);
            // Report each tie once: from its lowest tied axis.
            let mut tied = 1u32 << a;
            let mut lower = false;
            for b in 0..3 {
                if b != a && (0..count(b)).any(|j| eq(crossing(b, j), s)) {
                    tied |= 1 << b;
                    lower |= b < a;
                }
            }
            if tied.count_ones() < 2 || lower {
                continue;
            }
            // The voxel before the crossing: the start voxel (corners: one below on axes that
            // move down) moved by every crossing strictly before s.
            let before = std::array::from_fn(|b| {
                let sign = d[b].signum();
                let start = if !centers && sign < 0 { -1 } else { 0 };
                let crossed = (0..count(b)).filter(|&j| lt(crossing(b, j), s)).count() as i64;
                start + sign * crossed
            });
            out.push((s.0 as f64 / s.1 as f64, before, tied));
        }
    }
    out
}

/// A voxel touching an edge or corner a segment passes through: the tie's parameter `s` in
/// `(0, 1)`, the voxel relative to the segment's start voxel, and whether the tie is a corner.
pub type Touching = (f64, [i64; 3], bool);

/// The voxels (relative to the segment's start voxel, as in [`lattice_ties`]) touching each
/// edge or corner the segment passes through, but the voxel it is in just before: those that
/// stop conservative line of sight there. Each with the tie's parameter `s` and whether it is
/// a corner.
pub fn lattice_touching(d: [i64; 3], centers: bool) -> Vec<Touching> {
    let mut out = Vec::new();
    for (s, before, tied) in lattice_ties(d, centers) {
        for mask in (1..8u32).filter(|&m| m & tied == m) {
            let v = std::array::from_fn(|a| before[a] + i64::from(mask >> a & 1) * d[a].signum());
            out.push((s, v, tied == 7));
        }
    }
    out
}

/// Every offset in the cube `-reach..=reach` on each axis, `x` fastest.
pub fn cube(reach: i32) -> impl Iterator<Item = IVec3> {
    let r = -reach..=reach;
    r.clone()
        .flat_map(move |z| r.clone().map(move |y| (y, z)))
        .flat_map(move |(y, z)| (-reach..=reach).map(move |x| IVec3::new(x, y, z)))
}

/// The segments from `from` to every lattice point up to `reach` away on each axis that pass
/// through a voxel edge or corner, first between voxel centers, then between voxel corners
/// (those with a zero component skipped: they run along a face plane), each with the voxels
/// touching its edges and corners as [`lattice_touching`] gives them (relative to `from`).
pub fn lattice_segments(from: WorldPos, reach: i32) -> Vec<(VoxelRay, Vec<Touching>)> {
    let mut out = Vec::new();
    for centers in [true, false] {
        let h = Vec3::splat(if centers { 0.5 } else { 0.0 });
        for d in cube(reach) {
            let d64 = d.to_array().map(i64::from);
            if d == IVec3::ZERO || (!centers && d64.contains(&0)) {
                continue;
            }
            let touching = lattice_touching(d64, centers);
            if !touching.is_empty() {
                let to = from.checked_offset(d).expect("lattice points lie near 0");
                let seg = VoxelRay::between(from, h, to, h).expect("valid segment");
                out.push((seg, touching));
            }
        }
    }
    out
}

/// The segments from the voxel corner `from` to every lattice point up to `reach` away on each
/// axis that lie in a voxel face plane (at least one zero component; two: along an edge line),
/// each with its offset `d`. They touch the voxels on both sides of each such plane.
pub fn face_plane_segments(from: WorldPos, reach: i32) -> Vec<(VoxelRay, [i64; 3])> {
    cube(reach)
        .filter(|d| *d != IVec3::ZERO && d.to_array().contains(&0))
        .map(|d| {
            let to = from.checked_offset(d).expect("lattice points lie near 0");
            let seg = VoxelRay::between(from, Vec3::ZERO, to, Vec3::ZERO).expect("valid segment");
            (seg, d.to_array().map(i64::from))
        })
        .collect()
}

/// Every voxel (relative to the segment's start point, a voxel corner) whose closed box the
/// closed segment from 0 to `d` touches beyond its start point, with the least parameter `s`
/// in `[0, 1]` at which it does. Exact: each bound is a ratio of small integers, and f64
/// division rounds equal ratios to equal values.
pub fn closed_touching(d: [i64; 3]) -> Vec<([i64; 3], f64)> {
    let range = |a: usize| d[a].min(0) - 1..=d[a].max(0);
    let mut out = Vec::new();
    for z in range(2) {
        for y in range(1) {
            for x in range(0) {
                let v = [x, y, z];
                let (mut lo, mut hi) = (0.0f64, 1.0f64);
                for a in 0..3 {
                    if d[a] == 0 {
                        if !(v[a] == 0 || v[a] == -1) {
                            hi = -1.0;
                        }
                    } else {
                        let (p, q) = (v[a] as f64 / d[a] as f64, (v[a] + 1) as f64 / d[a] as f64);
                        lo = lo.max(p.min(q));
                        hi = hi.min(p.max(q));
                    }
                }
                if lo <= hi && hi > 0.0 {
                    out.push((v, lo));
                }
            }
        }
    }
    out
}

/// The folder of the package `name` as Cargo resolved it for the workspace (`cargo metadata`,
/// run with the Cargo that runs the program, from `manifest_dir`): where the files a
/// dependency ships (fastanvil's region, dot_vox's models) are read from, never fetched.
///
/// # Panics
/// When `cargo metadata` fails or `name` is no package of the workspace's graph.
#[must_use]
pub fn package_dir(manifest_dir: &str, name: &str) -> std::path::PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(manifest_dir)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let manifest = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"] == name)
        .and_then(|p| p["manifest_path"].as_str())
        .unwrap_or_else(|| panic!("{name} is a dependency of this workspace"));
    std::path::PathBuf::from(manifest)
        .parent()
        .expect("a manifest lies in its package")
        .to_path_buf()
}

/// The files of `<fuzz>/<dir>/<target>/` (`dir`: `corpus` or `regressions`), sorted; empty
/// when the folder does not exist. What the corpus replays of the fuzz targets read.
#[must_use]
pub fn fuzz_files(fuzz: &std::path::Path, dir: &str, target: &str) -> Vec<std::path::PathBuf> {
    let path = fuzz.join(dir).join(target);
    let mut out: Vec<std::path::PathBuf> = std::fs::read_dir(&path)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// A random shape: the cube, empty, the full box, or one to four boxes whose bounds favour the
/// voxel's faces and middle planes.
pub fn random_shape(rng: &mut SplitMix64) -> voxcast::BlockShape {
    use voxcast::{BlockShape, ShapeBox};
    const PICK: [u8; 10] = [0, 8, 16, 4, 12, 1, 15, 2, 6, 10];
    match rng.below(8) {
        0 => BlockShape::Cube,
        1 => BlockShape::Empty,
        2 => BlockShape::Boxes(vec![ShapeBox::FULL]),
        _ => BlockShape::Boxes(
            (0..1 + rng.below(4))
                .map(|_| {
                    let mut lo = [0u8; 3];
                    let mut hi = [16u8; 3];
                    for a in 0..3 {
                        let (p, q) = (PICK[rng.below(10) as usize], PICK[rng.below(10) as usize]);
                        if p != q {
                            (lo[a], hi[a]) = (p.min(q), p.max(q));
                        }
                    }
                    ShapeBox::new(lo, hi).expect("a valid box")
                })
                .collect(),
        ),
    }
}
