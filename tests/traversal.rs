//! Invariants of the voxel walk ([`VoxelTraversal`]), the grid walk ([`GridTraversal`]) and the
//! slab test ([`ray_aabb`]).
//!
//! The walk invariant, exactly:
//! - the first step is the start voxel (the origin voxel, one lower on each axis where the start
//!   point lies on the voxel's low face and the ray moves down), entered at `t = 0` through no face;
//! - each next voxel is a face neighbour of the previous one: exactly one axis changes, by the
//!   sign of the direction on that axis, and `entry_face` is minus that step;
//! - `t_enter` of step `k + 1` equals `t_exit` of step `k` bit for bit;
//! - `t_enter` never decreases. It stays equal only inside a tie group (a ray through an edge or
//!   corner crosses several boundaries at one distance), and then the crossed axes go x, y, z in
//!   that order; the first crossing is at `t > 0`;
//! - a voxel's stretch `t_exit - t_enter` is at most `√3` (the diagonal of a unit cube);
//! - the entry point lies on the entry face (coordinate integral within 1e-4) and within the
//!   face's extent on the other axes (within 1e-4); the midpoint of each stretch lies in the voxel;
//! - the walk ends in the voxel that holds the point at max distance, with `t_exit = max`.

use voxcast_testkit::common;

use common::{describe, point_rel, ray_at, rel, world_with};
use voxcast::glam::{IVec3, Vec3};
use voxcast::{
    GridCell, GridTraversal, RaycastOptions, TraversalStep, VoxelId, VoxelRay, VoxelTraversal,
    WorldPos, ray_aabb, voxel_raycast_with,
};
use voxcast_testkit::scene::SplitMix64;

const EPS: f64 = 1e-4;

/// The start voxel, from the definition (independent of the crate's `first_voxel`).
fn expected_start(r: &VoxelRay) -> WorldPos {
    WorldPos::from_array(std::array::from_fn(|a| {
        r.origin.axis(a) - i128::from(r.direction[a] < 0.0 && r.sub_offset[a] == 0.0)
    }))
}

fn check_walk(r: &VoxelRay) -> Vec<TraversalStep> {
    let ctx = describe(r);
    let steps: Vec<TraversalStep> = VoxelTraversal::new(r).take(100_000).collect();
    assert!(steps.len() < 100_000, "walk does not end: {ctx}");
    let first = steps.first().unwrap_or_else(|| panic!("empty walk: {ctx}"));
    assert_eq!(first.voxel, expected_start(r), "start voxel: {ctx}");
    assert_eq!(
        (first.t_enter, first.entry_face),
        (0.0, IVec3::ZERO),
        "first step: {ctx}"
    );

    let mut prev_axis: Option<usize> = None;
    for (k, s) in steps.iter().enumerate() {
        let at = format!("step {k} {s:?} of {ctx}");
        assert!(s.t_exit >= s.t_enter, "{at}");
        assert!(s.t_exit <= r.max_distance, "{at}");
        assert!(
            f64::from(s.t_exit - s.t_enter) <= 3f64.sqrt() + 1e-5,
            "stretch longer than √3: {at}"
        );
        let v = rel(s.voxel, r.origin);
        // The midpoint of the stretch lies in the voxel.
        let mid = point_rel(r, (s.t_enter + s.t_exit) * 0.5);
        for a in 0..3 {
            assert!(
                mid[a] >= v[a] - EPS && mid[a] <= v[a] + 1.0 + EPS,
                "midpoint {mid:?} outside: {at}"
            );
        }
        if k == 0 {
            continue;
        }
        let p = &steps[k - 1];
        assert_eq!(
            s.t_enter.to_bits(),
            p.t_exit.to_bits(),
            "t_enter != previous t_exit: {at}"
        );
        let diff: Vec<(usize, i128)> = (0..3)
            .map(|a| (a, s.voxel.axis(a) - p.voxel.axis(a)))
            .filter(|&(_, d)| d != 0)
            .collect();
        assert_eq!(diff.len(), 1, "not a face neighbour of {:?}: {at}", p.voxel);
        let (axis, d) = diff[0];
        let sign = if r.direction[axis] < 0.0 { -1 } else { 1 };
        assert!(
            r.direction[axis] != 0.0 && d == sign,
            "step against the direction: {at}"
        );
        let mut face = IVec3::ZERO;
        face[axis] = -sign as i32;
        assert_eq!(s.entry_face, face, "{at}");
        assert!(s.t_enter >= p.t_enter, "t decreased: {at}");
        if k == 1 {
            assert!(s.t_enter > 0.0, "first crossing at t = 0: {at}");
        } else if s.t_enter == p.t_enter {
            assert!(
                prev_axis.is_some_and(|pa| axis > pa),
                "tie group out of x, y, z order: {at}"
            );
        }
        prev_axis = Some(axis);
        // The entry point lies on the entered face.
        let e = point_rel(r, s.t_enter);
        let plane = v[axis] + if sign < 0 { 1.0 } else { 0.0 };
        assert!(
            (e[axis] - plane).abs() <= EPS,
            "entry point {e:?} off the face plane {plane}: {at}"
        );
        for b in (0..3).filter(|&b| b != axis) {
            assert!(
                e[b] >= v[b] - EPS && e[b] <= v[b] + 1.0 + EPS,
                "entry point {e:?} outside the face: {at}"
            );
        }
    }
    let last = steps.last().unwrap_or_else(|| unreachable!());
    assert_eq!(
        last.t_exit, r.max_distance,
        "walk ends before max distance: {ctx}"
    );
    let end = point_rel(r, r.max_distance);
    let v = rel(last.voxel, r.origin);
    for a in 0..3 {
        assert!(
            end[a] >= v[a] - EPS && end[a] <= v[a] + 1.0 + EPS,
            "end point {end:?} not in last voxel {last:?}: {ctx}"
        );
    }
    steps
}

/// The rays of the brief, as (voxel, offset) start points and directions.
fn brief_rays(max: f32) -> Vec<VoxelRay> {
    vec![
        ray_at([10, 11, 12], [0.3, 0.4, 0.5], [1.0, 2.0, 3.0], max),
        ray_at([10, 11, 12], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0], max),
        ray_at([10, 11, 12], [0.3, 0.4, 0.5], [1.0, -2.0, 0.0], max),
        ray_at([10, 11, 12], [0.3, 0.4, 0.5], [0.0, -1.0, 0.0], max),
        // More corner, edge and sign cases.
        ray_at([10, 11, 12], [0.0, 0.0, 0.0], [-1.0, -1.0, -1.0], max),
        ray_at([-10, 11, -12], [0.5, 0.5, 0.0], [-1.0, 1.0, -0.0], max),
        ray_at([-10, -11, -12], [0.0, 0.5, 0.5], [-3.0, 2.0, -1.0], max),
    ]
}

#[test]
fn voxel_walk_invariants() {
    for r in brief_rays(30.0) {
        check_walk(&r);
    }
}

#[test]
fn voxel_walk_specific_sequences() {
    // Through the corners of the diagonal: a tie group of three at every corner, x, y, z.
    let r = ray_at([10, 11, 12], [0.0; 3], [1.0, 1.0, 1.0], 3.5);
    let steps = check_walk(&r);
    let voxels: Vec<[i128; 3]> = steps.iter().map(|s| s.voxel.to_array()).collect();
    assert_eq!(
        voxels,
        [
            [10, 11, 12],
            [11, 11, 12],
            [11, 12, 12],
            [11, 12, 13],
            [12, 12, 13],
            [12, 13, 13],
            [12, 13, 14]
        ],
        "{}",
        describe(&r)
    );
    let t: Vec<f32> = steps.iter().map(|s| s.t_enter).collect();
    assert!(
        t[1] == t[2] && t[2] == t[3] && t[4] == t[5] && t[5] == t[6] && t[3] < t[4],
        "{t:?}"
    );
    assert!((f64::from(t[1]) - 3f64.sqrt()).abs() < 1e-5, "{t:?}");

    // Straight down: only y changes, one voxel per unit.
    let r = ray_at([10, 11, 12], [0.3, 0.4, 0.5], [0.0, -1.0, 0.0], 3.0);
    let steps = check_walk(&r);
    let ys: Vec<i128> = steps.iter().map(|s| s.voxel.y).collect();
    assert_eq!(ys, [11, 10, 9, 8], "{}", describe(&r));
    assert!(steps.iter().all(|s| s.voxel.x == 10 && s.voxel.z == 12));
    let t: Vec<f32> = steps.iter().map(|s| s.t_enter).collect();
    assert!(
        (t[1] - 0.4).abs() < 1e-6 && (t[2] - 1.4).abs() < 1e-6 && (t[3] - 2.4).abs() < 1e-6,
        "{t:?}"
    );
}

#[test]
fn voxel_walk_random_rays() {
    let mut rng = SplitMix64::new(0x7472_6176);
    for _ in 0..3000 {
        let origin = [0, 1, 2].map(|_| rng.below(200) as i128 - 100);
        let sub = [0, 1, 2].map(|_| common::sub_of_kind(rng.below(3) as u8, rng.next_f32()));
        let dir = [0, 1, 2].map(|_| common::dir_component(rng.below(6) as u8, rng.next_f32()));
        if dir.iter().all(|&d| d == 0.0) {
            continue;
        }
        let max = rng.next_f32() * 40.0;
        check_walk(&ray_at(origin, sub, dir, max));
    }
}

/// The walk and the raycast are the same walk: a lone solid placed in any voxel of the walk is
/// hit at that voxel's entry distance, through its entry face.
#[test]
fn voxel_walk_matches_raycast() {
    for r in brief_rays(12.0) {
        for s in check_walk(&r) {
            let world = world_with(&[(s.voxel, VoxelId(4))]);
            let o = voxel_raycast_with(&r, &world, &RaycastOptions::default());
            let hit = o
                .hit()
                .unwrap_or_else(|| panic!("{o:?} instead of {s:?} for {}", describe(&r)));
            assert_eq!(hit.voxel_pos, s.voxel, "{}", describe(&r));
            assert_eq!(
                hit.distance.to_bits(),
                s.t_enter.to_bits(),
                "{s:?} {hit:?} {}",
                describe(&r)
            );
            assert_eq!(
                hit.face_normal,
                s.entry_face,
                "{s:?} {hit:?} {}",
                describe(&r)
            );
        }
    }
}

#[test]
fn voxel_walk_stops_early() {
    let r = ray_at([10, 11, 12], [0.3, 0.4, 0.5], [1.0, 2.0, 3.0], 30.0);
    let full: Vec<TraversalStep> = VoxelTraversal::new(&r).collect();
    let mut it = VoxelTraversal::new(&r);
    let stop_at = full[full.len() / 2].voxel;
    let prefix: Vec<TraversalStep> = it.by_ref().take_while(|s| s.voxel != stop_at).collect();
    assert_eq!(prefix, full[..full.len() / 2]);
    assert_eq!(
        it.next(),
        Some(full[full.len() / 2 + 1]),
        "the iterator resumes after the stop"
    );
}

// ---------------------------------------------------------------------------------------------
// GridTraversal

fn check_grid<const D: usize>(a: [f64; D], b: [f64; D], cs: [f64; D]) -> Vec<GridCell<D>> {
    let ctx = format!("segment {a:?} -> {b:?}, cell size {cs:?}");
    let walk = GridTraversal::new(a, b, cs).unwrap_or_else(|e| panic!("{e}: {ctx}"));
    let hint = walk.size_hint();
    let cells: Vec<GridCell<D>> = walk.take(1_000_000).collect();
    assert!(cells.len() < 1_000_000, "walk does not end: {ctx}");
    assert_eq!(hint, (cells.len(), Some(cells.len())), "size_hint: {ctx}");
    let d: [f64; D] = std::array::from_fn(|k| b[k] - a[k]);
    let len = d.iter().map(|v| v * v).sum::<f64>().sqrt();
    let point = |t: f64| -> [f64; D] { std::array::from_fn(|k| (a[k] + t * d[k]) / cs[k]) };
    let max_cs = cs.iter().copied().fold(0.0, f64::max);
    let eps = 1e-6;

    let first = &cells[0];
    let start: [i64; D] = std::array::from_fn(|k| {
        let u = a[k] / cs[k];
        u.floor() as i64 - i64::from(d[k] < 0.0 && u == u.floor())
    });
    assert_eq!(
        (first.cell, first.t_enter, first.entry_axis),
        (start, 0.0, None),
        "first cell: {ctx}"
    );
    let mut prev_axis = None;
    for (i, c) in cells.iter().enumerate() {
        let at = format!("cell {i} {c:?} of {ctx}");
        assert!(c.t_exit >= c.t_enter && c.t_exit <= 1.0, "{at}");
        if len > 0.0 {
            assert!(
                (c.t_exit - c.t_enter) * len <= (D as f64).sqrt() * max_cs * (1.0 + 1e-9),
                "stretch too long: {at}"
            );
        }
        let mid = point((c.t_enter + c.t_exit) * 0.5);
        for k in 0..D {
            let v = c.cell[k] as f64;
            assert!(
                mid[k] >= v - eps && mid[k] <= v + 1.0 + eps,
                "midpoint {mid:?} outside: {at}"
            );
        }
        if i == 0 {
            continue;
        }
        let p = &cells[i - 1];
        assert_eq!(c.t_enter.to_bits(), p.t_exit.to_bits(), "{at}");
        let diff: Vec<usize> = (0..D).filter(|&k| c.cell[k] != p.cell[k]).collect();
        assert_eq!(diff.len(), 1, "not a face neighbour of {:?}: {at}", p.cell);
        let k = diff[0];
        let sign = if d[k] < 0.0 { -1 } else { 1 };
        assert!(d[k] != 0.0 && c.cell[k] - p.cell[k] == sign, "{at}");
        assert_eq!(c.entry_axis, Some(k), "{at}");
        assert!(c.t_enter >= p.t_enter, "{at}");
        if i == 1 {
            assert!(c.t_enter > 0.0, "{at}");
        } else if c.t_enter == p.t_enter {
            assert!(
                prev_axis.is_some_and(|pk| k > pk),
                "tie group out of axis order: {at}"
            );
        }
        prev_axis = Some(k);
        let e = point(c.t_enter);
        let plane = c.cell[k] as f64 + if sign < 0 { 1.0 } else { 0.0 };
        assert!(
            (e[k] - plane).abs() <= eps,
            "entry {e:?} off plane {plane}: {at}"
        );
        for j in (0..D).filter(|&j| j != k) {
            let v = c.cell[j] as f64;
            assert!(
                e[j] >= v - eps && e[j] <= v + 1.0 + eps,
                "entry {e:?} outside the face: {at}"
            );
        }
    }
    let last = cells.last().unwrap_or_else(|| unreachable!());
    assert_eq!(last.t_exit, 1.0, "{ctx}");
    // The last cell holds B by the same rule as the first holds A, computed in f64 as a
    // caller's hash keys would be, even where B lies on a face and crossing distances round.
    let end: [i64; D] = std::array::from_fn(|k| {
        let u = b[k] / cs[k];
        u.floor() as i64 - i64::from(d[k] < 0.0 && u == u.floor())
    });
    assert_eq!(last.cell, end, "last cell does not hold B: {ctx}");
    let apart: i64 = (0..D).map(|k| (end[k] - start[k]).abs()).sum();
    assert_eq!(cells.len() as i64, apart + 1, "{ctx}");
    cells
}

#[test]
fn grid_walk_invariants() {
    for cs in [10.0, 0.25, 3.0] {
        check_grid([1.0, 1.0], [25.0, 12.0], [cs, cs]);
        check_grid([-7.3, 4.1], [13.9, -22.6], [cs, cs]);
        check_grid([0.0, 0.0], [-30.0, -30.0], [cs, cs]);
        check_grid([2.5, -1.0], [2.5, 17.0], [cs, cs]);
        check_grid([1.0, 2.0, 3.0], [-14.0, 27.5, 9.25], [cs; 3]);
        check_grid([-3.7, 12.2, 5.1], [40.3, -7.9, 22.6], [cs; 3]);
        check_grid([0.0, 0.0, 0.0], [12.0, 12.0, 12.0], [cs; 3]);
        check_grid([6.0, -6.0, 0.5], [-6.0, 6.0, 0.5], [cs; 3]);
    }
    // Mixed cell sizes per axis.
    check_grid([1.3, -2.2, 7.7], [-20.1, 33.3, 2.9], [10.0, 0.25, 3.0]);
    // Direction (24, 11): x crosses 10 at t = 9/24 and 20 at t = 19/24, y crosses 10 only at
    // t = 9/11, after both.
    let cells: Vec<[i64; 2]> = check_grid([1.0, 1.0], [25.0, 12.0], [10.0, 10.0])
        .iter()
        .map(|c| c.cell)
        .collect();
    assert_eq!(cells, [[0, 0], [1, 0], [2, 0], [2, 1]]);
}

#[test]
fn grid_walk_crosses_a_face_next_to_a_tiny_coordinate() {
    // From just below the face at 0 to just above it: the crossing is halfway, on both sides
    // of zero. The fraction into cell -1 of -1e-300 rounds to 1, and the distance to the face
    // once cancelled to 0 (a crossing at t = 0).
    for (a, b) in [(-1e-300, 1e-300), (1e-300, -1e-300), (-1e-300, 3e-300)] {
        let cells = check_grid([a, 0.5], [b, 0.5], [1.0, 1.0]);
        let want = -a / (b - a);
        assert_eq!(cells.len(), 2, "{a} -> {b}");
        assert!(
            (cells[0].t_exit - want).abs() < 1e-12,
            "{a} -> {b}: crossing at {} instead of {want}",
            cells[0].t_exit
        );
    }
}

#[test]
fn grid_walk_ends_in_the_cell_of_b_on_faces() {
    // B exactly on a face, where the crossing distance rounds to just above or below 1: the
    // walk must still end in B's cell, and not go past it.
    check_grid([-1.4, 0.5], [0.0, 0.5], [16.0, 1.0]);
    check_grid([-2.0, 0.5], [-1.6, 0.5], [0.1, 1.0]);
    check_grid([0.0, 0.5], [0.3, 0.5], [0.1, 1.0]);
    let last = |a: [f64; 2], b: [f64; 2], cs: [f64; 2]| {
        GridTraversal::new(a, b, cs)
            .expect("valid")
            .last()
            .map(|c| c.cell)
    };
    assert_eq!(last([-1.4, 0.5], [0.0, 0.5], [16.0, 1.0]), Some([0, 0]));
    assert_eq!(last([0.0, 0.5], [0.3, 0.5], [0.1, 1.0]), Some([2, 0]));
    // Moving down onto a face ends below it.
    assert_eq!(last([1.4, 0.5], [0.0, 0.5], [16.0, 1.0]), Some([-1, 0]));
}

#[test]
fn grid_walk_rejects_a_segment_too_long_for_f64() {
    assert_eq!(
        GridTraversal::new([-1e308, 0.0], [1e308, 0.0], [1e300, 1.0]).err(),
        Some(voxcast::GridError::TooLong)
    );
}

#[test]
fn grid_walk_random_segments() {
    let mut rng = SplitMix64::new(0x6772_6964);
    let coord = |rng: &mut SplitMix64, cs: f64| -> f64 {
        match rng.below(3) {
            0 => (rng.below(40) as f64 - 20.0) * cs, // on a boundary
            1 => (rng.below(40) as f64 - 20.0 + 0.5) * cs, // in the middle of a cell
            _ => (f64::from(rng.next_f32()) - 0.5) * 100.0, // anywhere
        }
    };
    for i in 0..4000 {
        let cs = [10.0, 0.25, 3.0][i % 3];
        if i % 2 == 0 {
            let a = [0, 1].map(|_| coord(&mut rng, cs));
            let mut b = [0, 1].map(|_| coord(&mut rng, cs));
            if rng.below(4) == 0 {
                b[0] = a[0];
            }
            check_grid(a, b, [cs; 2]);
        } else {
            let a = [0, 1, 2].map(|_| coord(&mut rng, cs));
            let mut b = [0, 1, 2].map(|_| coord(&mut rng, cs));
            if rng.below(4) == 0 {
                b[1] = a[1];
            }
            check_grid(a, b, [cs; 3]);
        }
    }
}

#[test]
fn grid_walk_stops_early() {
    for cs in [10.0, 0.25, 3.0] {
        let (a, b) = ([-3.7, 12.2, 5.1], [40.3, -7.9, 22.6]);
        let full = check_grid(a, b, [cs; 3]);
        assert!(full.len() >= 3, "{full:?}");
        let stop = full.len() / 2;
        let blocked = full[stop].cell;
        let mut visited = 0;
        let mut it = GridTraversal::new(a, b, [cs; 3]).expect("valid");
        let prefix: Vec<GridCell<3>> = it
            .by_ref()
            .inspect(|_| visited += 1)
            .take_while(|c| c.cell != blocked)
            .collect();
        assert_eq!(prefix, full[..stop], "cell size {cs}");
        assert_eq!(
            visited,
            stop + 1,
            "take_while must stop pulling at the blocked cell"
        );
        assert_eq!(
            it.next(),
            Some(full[stop + 1]),
            "the iterator resumes after the stop"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Slab test

#[test]
fn slab_test_cases() {
    let (lo, hi) = (Vec3::splat(0.5), Vec3::splat(2.0));
    let v = Vec3::new;
    assert_eq!(
        ray_aabb(v(-2.0, -2.0, -2.0), v(2.0, 2.0, 2.0), lo, hi),
        Some((1.25, 2.0))
    );
    assert_eq!(ray_aabb(v(0.0, 0.0, 0.0), v(0.0, 1.0, 0.0), lo, hi), None);
    assert_eq!(ray_aabb(v(0.0, 0.0, 0.0), v(-1.0, 0.0, 0.0), lo, hi), None);
    assert_eq!(
        ray_aabb(v(1.0, 1.0, 1.0), v(1.0, 1.0, 0.0), lo, hi),
        Some((-0.5, 1.0)),
        "origin inside"
    );
    assert_eq!(
        ray_aabb(v(0.4, 1.0, 1.0), v(-1.0, 0.0, 0.0), lo, hi),
        None,
        "moving away"
    );
    assert_eq!(
        ray_aabb(v(3.0, 1.0, 1.0), v(1.0, 0.0, 0.0), lo, hi),
        None,
        "box behind"
    );
    let (n, f) =
        ray_aabb(v(0.4, 1.0, 1.0), v(1.0, 0.0, 0.0), lo, hi).expect("moving towards the box");
    assert!((n - 0.1).abs() < 1e-6 && (f - 1.6).abs() < 1e-6, "{n} {f}");

    // A zero direction component with the origin on the slab plane: inside (bounds are
    // inclusive), whatever the sign of the zero, and never NaN.
    for zero in [0.0f32, -0.0] {
        for x in [0.5, 2.0] {
            let r = ray_aabb(v(x, 1.0, 1.0), v(zero, 1.0, 0.0), lo, hi);
            assert_eq!(
                r,
                Some((-0.5, 1.0)),
                "origin x = {x} on the slab plane, dir x = {zero:?}"
            );
            let r = ray_aabb(v(x, -1.0, 1.0), v(zero, 1.0, zero), lo, hi);
            assert_eq!(
                r,
                Some((1.5, 3.0)),
                "origin x = {x}, dir ({zero:?}, 1, {zero:?})"
            );
            // z on the slab plane with a zero z direction; x and y enter at 1.5 and 0.5 (the
            // larger is t_near) and leave at 3.0 and 1.0.
            let r = ray_aabb(v(-1.0, 0.0, x), v(1.0, 1.0, zero), lo, hi);
            assert_eq!(
                r,
                Some((1.5, 2.0)),
                "x slab [1.5, 3] and y slab [0.5, 2] overlap in [1.5, 2]: {r:?}"
            );
            // Just outside the slab: a miss.
            assert_eq!(
                ray_aabb(v(0.5f32.next_down(), 1.0, 1.0), v(zero, 1.0, 0.0), lo, hi),
                None
            );
            assert_eq!(
                ray_aabb(v(2.0f32.next_up(), 1.0, 1.0), v(zero, 1.0, 0.0), lo, hi),
                None
            );
        }
        // On the plane and moving along the axis: entering at t = 0 / touching at t = 0.
        let r = ray_aabb(v(0.5, 1.0, 1.0), v(1.0, zero, zero), lo, hi).expect("enters at t = 0");
        assert_eq!(r, (0.0, 1.5));
        let r = ray_aabb(v(0.5, 1.0, 1.0), v(-1.0, zero, zero), lo, hi).expect("touches at t = 0");
        assert_eq!((r.0, r.1 == 0.0), (-1.5, true));
    }
    // Grazing an edge counts as a hit; NaN anywhere is a miss.
    assert!(ray_aabb(v(0.5, -1.0, 0.5), v(0.0, 1.0, 0.0), lo, hi).is_some());
    assert_eq!(
        ray_aabb(v(f32::NAN, 1.0, 1.0), v(1.0, 0.0, 0.0), lo, hi),
        None
    );
    assert_eq!(
        ray_aabb(v(0.0, 1.0, 1.0), v(1.0, f32::NAN, 0.0), lo, hi),
        None
    );
}

/// Sanity of the f64 helpers used above: the entry point of a step is computed relative to the
/// origin voxel, so it does not lose precision far from zero.
#[test]
fn entry_points_far_from_zero() {
    let big = 1i128 << 100;
    let r = ray_at([big, -big, big], [0.3, 0.4, 0.5], [1.0, 2.0, 3.0], 30.0);
    let near = ray_at([10, 11, 12], [0.3, 0.4, 0.5], [1.0, 2.0, 3.0], 30.0);
    let far_steps = check_walk(&r);
    let near_steps = check_walk(&near);
    assert_eq!(far_steps.len(), near_steps.len());
    for (f, n) in far_steps.iter().zip(&near_steps) {
        assert_eq!(
            (f.t_enter.to_bits(), f.t_exit.to_bits(), f.entry_face),
            (n.t_enter.to_bits(), n.t_exit.to_bits(), n.entry_face)
        );
        assert_eq!(rel(f.voxel, r.origin), rel(n.voxel, near.origin));
    }
}

/// Endpoints may have cell indices up to ±9e18, so two of them can be about 1.8e19 cells
/// apart: more than i64 holds. The count of cells still comes out right (it once overflowed:
/// a panic with overflow checks, a walk that stopped far short of `b` without).
#[test]
fn grid_walk_between_the_farthest_cells() {
    // 8.9e18 is a multiple of 2^17, so both endpoints lie exactly on cell faces.
    let far = 8.9e18;
    let cells = 17_800_000_000_000_000_001usize; // -8.9e18 ..= 8.9e18
    for (a, b) in [(-far, far), (far, -far)] {
        let mut walk = GridTraversal::new([a], [b], [1.0]).expect("in range");
        assert_eq!(walk.size_hint(), (cells, Some(cells)), "{a} -> {b}");
        let first = walk.next().expect("first cell");
        let step = if b > a { 1 } else { -1 };
        let second = walk.next().expect("second cell");
        assert_eq!(second.cell[0], first.cell[0] + step, "{a} -> {b}");
        assert_eq!(walk.size_hint(), (cells - 2, Some(cells - 2)), "{a} -> {b}");
    }
    let walk = GridTraversal::new([-far, 0.0], [far, 1.0], [1.0, 1.0]).expect("in range");
    assert_eq!(walk.size_hint(), (cells + 1, Some(cells + 1)));
}
