//! What one voxel step of the CPU reference costs, by the kind of direction the ray has.
//!
//! The world is a 256³ block in which every `8³` brick holds one voxel of an id the material
//! filter lets through, so no brick is empty (nothing is skipped) and no ray is stopped: every
//! ray walks voxel by voxel through dense chunks to its max distance (120 voxels). Throughput
//! is in voxel steps (`Throughput::Elements`), counted with `VoxelTraversal`.
//!
//! The direction classes separate the cost of the step's work from the cost of mispredicting
//! which axis it crosses next:
//!
//! - `random_3d`: uniform random directions (the three axes interleave irregularly)
//! - `two_axis`: directions in a plane close to z = 0 (two axes interleave)
//! - `near_axis`: within about 1° of +x (almost every step crosses x)
//! - `diagonal`: close to (1, 1, 1) (x, y, z in turn)
//!
//! ```text
//! cargo bench --bench step_cost
//! ```

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use voxcast::glam::Vec3;
use voxcast::{
    MaterialFilter, RaycastOptions, RaycastOutcome, VoxelId, VoxelRay, VoxelTraversal, VoxelWorld,
    WorldPos, voxel_raycast_with,
};
use voxcast_testkit::scene::SplitMix64;

/// Edge of the loaded block, in voxels.
const EDGE: i128 = 256;
/// Max distance of every ray, in voxels: well inside the block from its center.
const MAX_DISTANCE: f32 = 120.0;
/// The id placed once per brick and let through by the filter.
const GLASS: VoxelId = VoxelId(7);
/// Rays per direction class.
const RAYS: usize = 10_000;

/// Direction classes: name and a generator of (not necessarily unit) directions.
type DirectionClass = (&'static str, fn(&mut SplitMix64) -> Vec3);

const CLASSES: [DirectionClass; 4] = [
    ("random_3d", |r| r.unit_vector()),
    ("two_axis", |r| {
        Vec3::new(1.0, 0.3 + 0.7 * r.next_f32(), 0.001 * r.next_f32())
    }),
    ("near_axis", |r| {
        Vec3::new(1.0, 0.01 * r.next_f32(), 0.013 * r.next_f32())
    }),
    ("diagonal", |r| {
        Vec3::new(1.0, 1.0 + 0.01 * r.next_f32(), 1.0 + 0.01 * r.next_f32())
    }),
];

fn step_cost(c: &mut Criterion) {
    let mut world = VoxelWorld::new();
    for x in (0..EDGE).step_by(8) {
        for y in (0..EDGE).step_by(8) {
            for z in (0..EDGE).step_by(8) {
                world.set_voxel(WorldPos::new(x + 3, y + 5, z + 2), GLASS);
            }
        }
    }
    let opts = RaycastOptions {
        blocks: MaterialFilter::every_non_air().without(GLASS),
        ..RaycastOptions::default()
    };
    let mut group = c.benchmark_group("step_cost");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    let mut rng = SplitMix64::new(5);
    for (name, direction) in CLASSES {
        let center = WorldPos::new(EDGE / 2, EDGE / 2, EDGE / 2);
        let rays: Vec<VoxelRay> = (0..RAYS)
            .map(|_| {
                let sub = Vec3::new(rng.next_f32(), rng.next_f32(), rng.next_f32());
                VoxelRay::new(center, sub, direction(&mut rng), MAX_DISTANCE)
                    .expect("finite, non-zero direction")
            })
            .collect();
        let steps: usize = rays.iter().map(|r| VoxelTraversal::new(r).count()).sum();
        // Every ray must walk to its max distance: a hit would measure something else.
        assert!(
            rays.iter()
                .all(|r| voxel_raycast_with(r, &world, &opts) == RaycastOutcome::Miss),
            "a {name} ray was stopped"
        );
        group.throughput(Throughput::Elements(steps as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                rays.iter()
                    .filter(|r| {
                        voxel_raycast_with(black_box(r), &world, &opts) != RaycastOutcome::Miss
                    })
                    .count()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, step_cost);
criterion_main!(benches);
