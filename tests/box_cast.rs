//! Box casts (the rules in the crate docs, module `boxcast`) against the brute-force oracle
//! (`voxcast_testkit::boxes`), the adversarial cases, zero extents against rays, bad input,
//! and collide-and-slide.

use voxcast::glam::{IVec3, Vec3};
use voxcast::{
    BlockShape, BoxBody, BoxCast, BoxCastError, BoxCastOutcome, Chunk, ChunkPos, MAX_HALF_EXTENT,
    OriginPolicy, RayError, RaycastOptions, RaycastOutcome, ShapeBox, SlideOptions, UnloadedPolicy,
    VoxelId, VoxelRay, VoxelWorld, WorldPos, box_cast, box_cast_batch, collide_and_slide,
    voxel_raycast_with,
};
use voxcast_testkit::SplitMix64;
use voxcast_testkit::boxes::{contacts, contacts_in_shapes, judge, shape_boxes};
use voxcast_testkit::common::{
    dir_component, offset, random_shape, random_solids, sub_of_kind, world_with,
};

const STONE: VoxelId = VoxelId(1);

fn opts(origin: OriginPolicy) -> RaycastOptions {
    RaycastOptions {
        origin,
        ..RaycastOptions::default()
    }
}

/// A half extent of one of several kinds: 0, 0.5, 1, 0.3, 0.9 or random up to 2.5.
fn half_of_kind(kind: u64, random: f32) -> f32 {
    match kind % 6 {
        0 => 0.0,
        1 => 0.5,
        2 => 1.0,
        3 => 0.3,
        4 => 0.9,
        _ => random * 2.5,
    }
}

/// Random casts in and around a random 12³ world at `min`, judged by the oracle. Returns how
/// many needed a tie allowed. With `shaped`, the ids get random shapes and the centers lie on
/// the 1/16 grid a third of the time, where box faces are.
fn oracle_round(seed: u64, min: WorldPos, n: usize, origin: OriginPolicy, shaped: bool) -> usize {
    let solids = random_solids(seed, min, 12, 0.1, 3);
    let mut world = world_with(&solids);
    let mut rng = SplitMix64::new(seed ^ 0x5eed);
    if shaped {
        for id in 1..=3 {
            world
                .set_shape(VoxelId(id), &random_shape(&mut rng))
                .expect("a valid shape");
        }
    }
    let shape = |id: VoxelId| shape_boxes(&world, id);
    let mut ties = 0;
    for i in 0..n {
        let center = offset(min, std::array::from_fn(|_| rng.below(16) as i128 - 2));
        let sub = Vec3::from_array(std::array::from_fn(|_| {
            let kind = rng.below(if shaped { 4 } else { 3 }) as u8;
            let v = rng.next_f32();
            if kind == 3 {
                (v * 16.0).floor() / 16.0
            } else {
                sub_of_kind(kind, v)
            }
        }));
        let h = Vec3::from_array(std::array::from_fn(|_| {
            half_of_kind(rng.below(6), rng.next_f32())
        }));
        let mut dir = Vec3::from_array(std::array::from_fn(|_| {
            dir_component(rng.below(6) as u8, rng.next_f32())
        }));
        if dir == Vec3::ZERO {
            dir = Vec3::Y;
        }
        let max = [0.0, 0.5, 3.0, 10.0, 30.0][rng.below(5) as usize];
        let cast = BoxCast::new(center, sub, h, dir, max).expect("a valid cast");
        let got = box_cast(&cast, &world, &opts(origin));
        let c = contacts_in_shapes(&cast, &solids, &shape);
        match judge(&cast, &got, &c, origin) {
            Ok(tie) => ties += usize::from(tie),
            Err(e) => panic!("seed {seed} cast {i}: {cast:?} under {origin:?} gave {got:?}: {e}"),
        }
    }
    ties
}

#[test]
fn box_casts_agree_with_the_oracle() {
    let mut ties = 0;
    let mut total = 0;
    for seed in 0..24u64 {
        let min = match seed % 3 {
            0 => WorldPos::new(0, 0, 0),
            1 => WorldPos::new(-6, 26, -40),
            _ => WorldPos::new(1 << 100, -(1 << 90), 12345),
        };
        for origin in [OriginPolicy::Report, OriginPolicy::SkipOriginVoxel] {
            ties += oracle_round(seed, min, 1500, origin, false);
            total += 1500;
        }
    }
    // Ties are where the exact answer is on a knife edge: integer and half-integer centers and
    // extents along axis-aligned and diagonal moves make many on purpose, but not most.
    assert!(ties * 3 < total, "{ties} of {total} casts needed a tie");
}

/// Rule 2: a box of zero extents is a ray, except where the ray passes exactly through an
/// edge or corner (there the DDA visits a voxel beside it that the box only grazes).
#[test]
fn zero_extents_are_rays() {
    let mut rng = SplitMix64::new(7);
    let solids = random_solids(3, WorldPos::new(-5, -5, -5), 12, 0.15, 3);
    let world = world_with(&solids);
    let (mut same, mut grazes) = (0, 0);
    for _ in 0..20_000 {
        let origin = WorldPos::new(
            rng.below(14) as i128 - 6,
            rng.below(14) as i128 - 6,
            rng.below(14) as i128 - 6,
        );
        let sub = Vec3::from_array(std::array::from_fn(|_| {
            sub_of_kind(rng.below(3) as u8, rng.next_f32())
        }));
        let mut dir = Vec3::from_array(std::array::from_fn(|_| {
            dir_component(rng.below(6) as u8, rng.next_f32())
        }));
        if dir == Vec3::ZERO {
            dir = Vec3::NEG_X;
        }
        let ray = VoxelRay::new(origin, sub, dir, 20.0).expect("valid");
        let cast = BoxCast::new(origin, sub, Vec3::ZERO, dir, 20.0).expect("valid");
        for policy in [OriginPolicy::Report, OriginPolicy::SkipOriginVoxel] {
            let o = opts(policy);
            let r = voxel_raycast_with(&ray, &world, &o);
            let b = box_cast(&cast, &world, &o);
            let equal = match (r, b) {
                (
                    RaycastOutcome::Hit(h),
                    BoxCastOutcome::StartsInside {
                        voxel_pos,
                        voxel_type,
                    },
                ) => {
                    h.distance == 0.0
                        && h.face_normal == IVec3::ZERO
                        && h.voxel_pos == voxel_pos
                        && h.voxel_type == voxel_type
                }
                (RaycastOutcome::Hit(h), BoxCastOutcome::Hit(g)) => {
                    h.voxel_pos == g.voxel_pos
                        && h.face_normal == g.face_normal
                        && h.distance.to_bits() == g.distance.to_bits()
                        && h.voxel_type == g.voxel_type
                }
                (RaycastOutcome::Miss, BoxCastOutcome::Miss) => true,
                _ => false,
            };
            if equal {
                same += 1;
                continue;
            }
            // Only at an exact edge: the box's answer is the oracle's, and the ray's hit
            // touches the path only at its boundary.
            let c = contacts(&cast, &solids);
            judge(&cast, &b, &c, policy)
                .unwrap_or_else(|e| panic!("{cast:?}: box {b:?} against the oracle: {e}"));
            let RaycastOutcome::Hit(h) = r else {
                panic!("{cast:?}: ray {r:?}, box {b:?}");
            };
            grazes += 1;
            if let BoxCastOutcome::Hit(g) = b
                && (g.voxel_pos, g.distance.to_bits()) == (h.voxel_pos, h.distance.to_bits())
            {
                // The same voxel through an edge or corner: the ray's face is the last tied
                // axis, the box's the fastest.
                let c = c.iter().find(|c| c.voxel == g.voxel_pos).expect("judged");
                let tied = (0..3)
                    .filter(|&a| (c.per_axis[a] - c.entry).abs() < 1e-5)
                    .count();
                assert!(tied > 1, "{cast:?}: ray {h:?}, box {g:?}");
                continue;
            }
            assert!(
                !c.iter()
                    .any(|c| c.voxel == h.voxel_pos && c.entry < c.exit - 1e-6),
                "{cast:?}: the ray's {h:?} is overlapped for a while, box {b:?}"
            );
        }
    }
    assert!(grazes * 20 < same, "{grazes} grazes against {same} equal");
}

/// A 5×5 floor of stone at y = 0 around the origin, and a wall at x = 3 from y = 1 to 2.
fn room() -> VoxelWorld {
    let mut w = VoxelWorld::new();
    for x in -2..=2 {
        for z in -2..=2 {
            w.set_voxel(WorldPos::new(x, 0, z), STONE);
        }
    }
    for y in 1..=2 {
        for z in -2..=2 {
            w.set_voxel(WorldPos::new(3, y, z), STONE);
        }
    }
    w
}

fn hit_of(o: BoxCastOutcome) -> voxcast::BoxHit {
    *o.hit()
        .unwrap_or_else(|| panic!("expected a hit, got {o:?}"))
}

#[test]
fn aligned_boxes_touch_exactly() {
    let w = room();
    let o = RaycastOptions::default();
    // A unit box resting on the floor, flush: falling touches at 0 through the top face.
    let rest = BoxCast::new(
        WorldPos::new(0, 1, 0),
        Vec3::splat(0.5),
        Vec3::splat(0.5),
        Vec3::NEG_Y,
        2.0,
    )
    .expect("valid");
    let h = hit_of(box_cast(&rest, &w, &o));
    assert_eq!((h.distance, h.face_normal), (0.0, IVec3::Y));
    assert_eq!(h.voxel_pos.y, 0);
    // Moving along the floor it touches nothing until the wall: the box's +x face (at 0.5 + 0.5
    // = 1) meets the wall at x = 3 after 2 voxels.
    let along = BoxCast {
        direction: Vec3::X,
        max_distance: 5.0,
        ..rest
    };
    let h = hit_of(box_cast(&along, &w, &o));
    assert_eq!(
        (h.distance, h.face_normal, h.voxel_pos.x),
        (2.0, IVec3::NEG_X, 3)
    );
    assert_eq!(
        h.voxel_pos,
        WorldPos::new(3, 1, 0),
        "the lowest of the touched voxels"
    );
    // Up and away from everything: a miss.
    let up = BoxCast {
        direction: Vec3::Y,
        ..rest
    };
    assert_eq!(box_cast(&up, &w, &o), BoxCastOutcome::Miss);
    // Sunk into the floor a little: starts inside, or walks out under the other policies.
    let sunk = BoxCast {
        body: BoxBody {
            center_offset: Vec3::new(0.5, 0.4, 0.5),
            ..up.body
        },
        ..up
    };
    assert!(
        matches!(box_cast(&sunk, &w, &o), BoxCastOutcome::StartsInside { voxel_pos, .. } if voxel_pos.y == 0)
    );
    let skip = opts(OriginPolicy::SkipOriginVoxel);
    assert_eq!(box_cast(&sunk, &w, &skip), BoxCastOutcome::Miss);
    // Moving down from there, the floor's voxels it overlaps are ignored; the next layer
    // (unloaded air below y = 0 under Air) does not stop it.
    let down = BoxCast {
        direction: Vec3::NEG_Y,
        ..sunk
    };
    assert_eq!(box_cast(&down, &w, &skip), BoxCastOutcome::Miss);
}

#[test]
fn edges_and_corners_pick_the_fastest_axis() {
    // One voxel; a unit box below-left of it moving diagonally meets it exactly at its edge.
    let w = world_with(&[(WorldPos::new(2, 2, 0), STONE)]);
    let o = RaycastOptions::default();
    let cast = |dir: Vec3| {
        BoxCast::new(
            WorldPos::new(0, 0, 0),
            Vec3::splat(0.5),
            Vec3::splat(0.5),
            dir,
            8.0,
        )
        .expect("valid")
    };
    // At 45° both planes are crossed at once: an edge contact, equal speeds go to y (rule 6).
    let h = hit_of(box_cast(&cast(Vec3::new(1.0, 1.0, 0.0)), &w, &o));
    assert_eq!(
        (h.voxel_pos, h.face_normal),
        (WorldPos::new(2, 2, 0), IVec3::NEG_Y)
    );
    assert!((h.distance - 2f32.sqrt()).abs() < 1e-6);
    // Faster along x: the box reaches x = 2 first, below the voxel, and meets it through its
    // bottom face when its top reaches y = 2.
    let h = hit_of(box_cast(&cast(Vec3::new(0.9, 0.7, 0.0)), &w, &o));
    assert_eq!(
        (h.voxel_pos, h.face_normal),
        (WorldPos::new(2, 2, 0), IVec3::NEG_Y)
    );
    // Steeper: the box's top passes y = 2 while its right side is short of x = 2, and meets the
    // voxel through its left face.
    let h = hit_of(box_cast(&cast(Vec3::new(0.5, 1.0, 0.0)), &w, &o));
    assert_eq!(
        (h.voxel_pos, h.face_normal),
        (WorldPos::new(2, 2, 0), IVec3::NEG_X)
    );
    // Straight up next to the voxel, sharing only the plane x = 2: never touches.
    let beside = BoxCast::new(
        WorldPos::new(1, 0, 0),
        Vec3::splat(0.5),
        Vec3::splat(0.5),
        Vec3::Y,
        8.0,
    )
    .expect("valid");
    assert_eq!(box_cast(&beside, &w, &o), BoxCastOutcome::Miss);
    // Shifted a hair into the voxel's column: touches its bottom face.
    let inside = BoxCast {
        body: BoxBody {
            center_offset: Vec3::new(0.5001, 0.5, 0.5),
            ..beside.body
        },
        ..beside
    };
    let h = hit_of(box_cast(&inside, &w, &o));
    assert_eq!(
        (h.voxel_pos, h.face_normal, h.distance),
        (WorldPos::new(2, 2, 0), IVec3::NEG_Y, 1.0)
    );
}

#[test]
fn chunk_borders_and_the_i128_edges() {
    // A wall across a chunk border, the box straddling it.
    let mut w = VoxelWorld::new();
    for y in 28..36 {
        w.set_voxel(WorldPos::new(40, y, 5), STONE);
    }
    let cast = BoxCast::new(
        WorldPos::new(35, 31, 5),
        Vec3::new(0.5, 1.0, 0.5),
        Vec3::new(0.4, 2.0, 0.4),
        Vec3::X,
        10.0,
    )
    .expect("valid");
    let h = hit_of(box_cast(&cast, &w, &RaycastOptions::default()));
    assert_eq!((h.voxel_pos.x, h.face_normal), (40, IVec3::NEG_X));
    assert_eq!(
        h.voxel_pos.y, 30,
        "the box spans y 30..34; the lowest touched voxel"
    );
    // The leading face at 35.9 (rounded to f32) reaches the plane x = 40 after 4.1 voxels.
    assert!((h.distance - 4.1).abs() < 1e-5, "{h:?}");
    // At the top of the i128 world: a box that fits moves to the edge and misses there.
    let top = i128::MAX - 3;
    let mut edge = VoxelWorld::new();
    edge.insert_chunk(
        WorldPos::new(top, 0, 0).chunk(),
        Chunk::filled(VoxelId::AIR),
    )
    .expect("in the world");
    let cast = BoxCast::new(
        WorldPos::new(top, 0, 0),
        Vec3::splat(0.5),
        Vec3::splat(1.5),
        Vec3::X,
        100.0,
    )
    .expect("fits");
    let stop = RaycastOptions {
        unloaded: UnloadedPolicy::Stop,
        ..RaycastOptions::default()
    };
    assert!(matches!(
        box_cast(&cast, &edge, &stop),
        BoxCastOutcome::Unloaded { .. } | BoxCastOutcome::Miss
    ));
    assert_eq!(
        box_cast(&cast, &edge, &RaycastOptions::default()),
        BoxCastOutcome::Miss
    );
    // One that does not fit is refused.
    let over = BoxCast::new(
        WorldPos::new(i128::MAX, 0, 0),
        Vec3::splat(0.5),
        Vec3::splat(1.0),
        Vec3::X,
        1.0,
    );
    assert_eq!(over, Err(BoxCastError::OutOfWorld));
    let under = BoxCast::new(
        WorldPos::new(i128::MIN, 0, 0),
        Vec3::splat(0.25),
        Vec3::splat(0.5),
        Vec3::X,
        1.0,
    );
    assert_eq!(under, Err(BoxCastError::OutOfWorld));
}

#[test]
fn unloaded_chunks_stop_the_box_under_stop() {
    let mut w = VoxelWorld::new();
    w.insert_chunk(ChunkPos::new(0, 0, 0), Chunk::filled(VoxelId::AIR))
        .expect("ok");
    let stop = RaycastOptions {
        unloaded: UnloadedPolicy::Stop,
        ..RaycastOptions::default()
    };
    let cast = BoxCast::new(
        WorldPos::new(28, 5, 5),
        Vec3::splat(0.5),
        Vec3::splat(0.5),
        Vec3::X,
        10.0,
    )
    .expect("valid");
    assert_eq!(
        box_cast(&cast, &w, &stop),
        BoxCastOutcome::Unloaded {
            voxel_pos: WorldPos::new(32, 5, 5),
            distance: 3.0
        }
    );
    assert_eq!(
        box_cast(&cast, &w, &RaycastOptions::default()),
        BoxCastOutcome::Miss
    );
    // Starting across the border: unloaded at once.
    let across = BoxCast {
        body: BoxBody {
            center: WorldPos::new(31, 5, 5),
            ..cast.body
        },
        ..cast
    };
    assert!(matches!(
        box_cast(&across, &w, &stop),
        BoxCastOutcome::Unloaded { distance: 0.0, .. }
    ));
}

#[test]
fn bad_casts_are_errors_and_spoil_nothing_else() {
    let w = room();
    let good = BoxCast::new(
        WorldPos::new(0, 3, 0),
        Vec3::splat(0.5),
        Vec3::splat(0.4),
        Vec3::NEG_Y,
        5.0,
    )
    .expect("valid");
    for h in [-0.1, f32::NAN, f32::INFINITY, MAX_HALF_EXTENT + 0.01] {
        assert_eq!(
            BoxCast::new(
                good.body.center,
                good.body.center_offset,
                Vec3::new(0.3, h, 0.3),
                Vec3::X,
                1.0
            ),
            Err(BoxCastError::HalfExtents)
        );
    }
    assert_eq!(
        BoxCast::new(
            good.body.center,
            good.body.center_offset,
            good.body.half_extents,
            Vec3::ZERO,
            1.0
        ),
        Err(BoxCastError::Ray(RayError::ZeroDirection))
    );
    let mut casts = vec![good; 5];
    casts[1].body.half_extents.x = f32::NAN;
    casts[2].direction = Vec3::new(f32::NAN, 0.0, 0.0);
    casts[3].max_distance = -1.0;
    let out = box_cast_batch(&casts, &w, &RaycastOptions::default());
    assert!(matches!(
        out[1],
        BoxCastOutcome::Invalid(BoxCastError::HalfExtents)
    ));
    assert!(matches!(
        out[2],
        BoxCastOutcome::Invalid(BoxCastError::Ray(RayError::NanDirection))
    ));
    assert!(matches!(
        out[3],
        BoxCastOutcome::Invalid(BoxCastError::Ray(_))
    ));
    // A slide by a NaN or infinite displacement is refused, saying which.
    let so = SlideOptions::default();
    let slide = |d: Vec3| {
        collide_and_slide(
            &BoxBody {
                center: good.body.center,
                center_offset: good.body.center_offset,
                half_extents: good.body.half_extents,
            },
            d,
            &w,
            &so,
        )
    };
    assert_eq!(
        slide(Vec3::new(f32::NAN, 0.0, 0.0)),
        Err(BoxCastError::Ray(RayError::NanDirection))
    );
    assert_eq!(
        slide(Vec3::new(0.0, f32::INFINITY, 0.0)),
        Err(BoxCastError::Ray(RayError::InfiniteDirection))
    );
    // A move farther than a cast looks cannot be checked to its end: refused, where a cast
    // that far only looks as far as the cap.
    assert_eq!(
        slide(Vec3::new(70_000.0, 0.0, 0.0)),
        Err(BoxCastError::Ray(RayError::MaxDistanceTooLarge))
    );
    let far = BoxCast {
        max_distance: 1e9,
        ..good
    };
    assert!(matches!(
        box_cast_batch(&[far], &w, &RaycastOptions::default())[0],
        BoxCastOutcome::Hit(_)
    ));
    for i in [0, 4] {
        let h = hit_of(out[i]);
        assert_eq!(
            (h.voxel_pos.y, h.face_normal, h.distance),
            (0, IVec3::Y, 2.1)
        );
    }
}

/// The box's voxels overlap no stopping voxel: a cast of distance 0 under `Report` says so.
fn overlaps_nothing(w: &VoxelWorld, c: WorldPos, sub: Vec3, h: Vec3) -> bool {
    let cast = BoxCast::new(c, sub, h, Vec3::Y, 0.0).expect("valid");
    !matches!(
        box_cast(&cast, w, &RaycastOptions::default()),
        BoxCastOutcome::StartsInside { .. }
    )
}

#[test]
fn slides_along_walls_and_lands_flush() {
    let w = room();
    let h = Vec3::new(0.3, 0.9, 0.3);
    let so = SlideOptions::default();
    // Falling onto the floor: stops with the box's bottom exactly on y = 1.
    let s = collide_and_slide(
        &BoxBody {
            center: WorldPos::new(0, 3, 0),
            center_offset: Vec3::new(0.5, 0.5, 0.5),
            half_extents: h,
        },
        Vec3::new(0.0, -5.0, 0.0),
        &w,
        &so,
    )
    .expect("valid");
    assert!(s.blocked.y && !s.blocked.x && !s.blocked.z);
    let bottom = s.body.center.y as f64 + f64::from(s.body.center_offset.y) - 0.9;
    assert!((bottom - 1.0).abs() < 1e-6, "bottom at {bottom}");
    assert!(overlaps_nothing(&w, s.body.center, s.body.center_offset, h));
    // Walking diagonally into the wall while falling: x blocked, z and y go on.
    let s2 = collide_and_slide(&s.body, Vec3::new(4.0, -0.5, 1.0), &w, &so).expect("valid");
    assert!(s2.blocked.x && s2.blocked.y, "{s2:?}");
    assert!((s2.moved.z - 1.0).abs() < 1e-5, "{s2:?}");
    let right = s2.body.center.x as f64 + f64::from(s2.body.center_offset.x) + 0.3;
    assert!(
        (right - 3.0).abs() < 1e-6 && right <= 3.0,
        "right face at {right}"
    );
    assert!(overlaps_nothing(
        &w,
        s2.body.center,
        s2.body.center_offset,
        h
    ));
}

#[test]
fn steps_up_one_voxel_ledges_only() {
    // Floor at y = 0, a one-high step at x >= 3 (y = 1), a two-high wall at x >= 6.
    let mut w = VoxelWorld::new();
    for x in -2..10 {
        for z in -2..=2 {
            w.set_voxel(WorldPos::new(x, 0, z), STONE);
            if x >= 3 {
                w.set_voxel(WorldPos::new(x, 1, z), STONE);
            }
            if x >= 6 {
                w.set_voxel(WorldPos::new(x, 2, z), STONE);
                w.set_voxel(WorldPos::new(x, 3, z), STONE);
            }
        }
    }
    let h = Vec3::new(0.3, 0.9, 0.3);
    let start = BoxBody {
        center: WorldPos::new(1, 1, 0),
        center_offset: Vec3::new(0.5, 0.9, 0.5),
        half_extents: h,
    };
    let climb = SlideOptions {
        step_up: 1.01,
        ..SlideOptions::default()
    };
    let s = collide_and_slide(&start, Vec3::new(3.0, 0.0, 0.0), &w, &climb).expect("valid");
    assert!(s.stepped_up && !s.blocked.x, "{s:?}");
    let bottom = s.body.center.y as f64 + f64::from(s.body.center_offset.y) - 0.9;
    assert!(
        (bottom - 2.0).abs() < 1e-5,
        "on the step: bottom at {bottom}"
    );
    assert!(overlaps_nothing(&w, s.body.center, s.body.center_offset, h));
    // Without the option, the step blocks.
    let s = collide_and_slide(
        &start,
        Vec3::new(3.0, 0.0, 0.0),
        &w,
        &SlideOptions::default(),
    )
    .expect("valid");
    assert!(s.blocked.x && !s.stepped_up);
    // From the step, the two-high wall is not climbed.
    let on_step = BoxBody {
        center: WorldPos::new(4, 2, 0),
        ..start
    };
    let s = collide_and_slide(&on_step, Vec3::new(3.0, 0.0, 0.0), &w, &climb).expect("valid");
    assert!(s.blocked.x, "{s:?}");
    let right = s.body.center.x as f64 + f64::from(s.body.center_offset.x) + 0.3;
    assert!(
        (right - 6.0).abs() < 1e-5,
        "against the wall: right face at {right}"
    );
}

/// Random slides in a random world never leave the box overlapping a stopping voxel, and never
/// move it farther than asked on any axis.
#[test]
fn slides_never_overlap() {
    let solids = random_solids(11, WorldPos::new(0, 0, 0), 12, 0.12, 3);
    let w = world_with(&solids);
    slides_never_overlap_in(&w, 99, 0.0);
}

/// The same in worlds of shaped voxels (slides flush against boxes' faces), also climbing.
#[test]
fn slides_never_overlap_shapes() {
    for seed in 0..4u64 {
        let solids = random_solids(20 + seed, WorldPos::new(0, 0, 0), 12, 0.15, 3);
        let mut w = world_with(&solids);
        let mut rng = SplitMix64::new(seed);
        for id in 1..=3 {
            w.set_shape(VoxelId(id), &random_shape(&mut rng))
                .expect("a valid shape");
        }
        slides_never_overlap_in(&w, 100 + seed, [0.0, 0.5][seed as usize % 2]);
    }
}

/// Slides of random boxes that start clear in `w` end clear, and move no farther than asked
/// on any axis (but when they climbed).
fn slides_never_overlap_in(w: &VoxelWorld, seed: u64, step_up: f32) {
    let mut rng = SplitMix64::new(seed);
    let mut moved_any = 0;
    for _ in 0..3000 {
        let h = Vec3::new(0.3, 0.9, 0.3) * (0.5 + rng.next_f32());
        let c = WorldPos::new(
            rng.below(12) as i128,
            rng.below(12) as i128,
            rng.below(12) as i128,
        );
        let sub = Vec3::new(rng.next_f32(), rng.next_f32(), rng.next_f32());
        if !overlaps_nothing(w, c, sub, h) {
            continue;
        }
        let d = (Vec3::new(rng.next_f32(), rng.next_f32(), rng.next_f32()) * 2.0 - 1.0) * 4.0;
        let opts = SlideOptions {
            step_up,
            ..SlideOptions::default()
        };
        let body = BoxBody {
            center: c,
            center_offset: sub,
            half_extents: h,
        };
        let s = collide_and_slide(&body, d, w, &opts).expect("valid");
        assert!(
            overlaps_nothing(w, s.body.center, s.body.center_offset, h),
            "{c} {sub} {h} {d}: {s:?}"
        );
        for a in 0..3 {
            let want = f64::from(d[a]);
            assert!(
                s.moved[a].abs() <= want.abs() + 1e-4 || s.stepped_up,
                "axis {a}: moved {} of {want}",
                s.moved[a]
            );
        }
        moved_any += usize::from(s.moved.length() > 0.1);
    }
    assert!(moved_any > 500, "{moved_any} slides moved");
}

/// Review findings kept as tests: a box on the bottom face of the i128 world moving down
/// misses (it leaves the world) instead of being refused; a flat box slid into a wall twice
/// stays in front of it; a slide never moves farther than asked on any axis; a start a hair
/// above a face gives no subnormal distance.
#[test]
fn world_edges_flat_slides_and_tiny_offsets() {
    let o = RaycastOptions::default();
    let w = world_with(&[
        (WorldPos::new(3, 0, 0), STONE),
        (WorldPos::new(0, -1, 0), STONE),
    ]);
    // On the bottom face of the world, moving down: a miss, for a box and for a flat box as
    // for a ray.
    let bottom = BoxCast::new(
        WorldPos::new(i128::MIN, 0, 0),
        Vec3::new(0.5, 0.5, 0.5),
        Vec3::splat(0.5),
        Vec3::new(-1.0, 0.2, 0.0),
        4.0,
    )
    .expect("a box inside the world");
    assert_eq!(box_cast(&bottom, &w, &o), BoxCastOutcome::Miss);
    let flat = BoxCast::new(
        WorldPos::new(i128::MIN, 0, 0),
        Vec3::new(0.0, 0.5, 0.5),
        Vec3::ZERO,
        Vec3::NEG_X,
        4.0,
    )
    .expect("a point inside the world");
    assert_eq!(box_cast(&flat, &w, &o), BoxCastOutcome::Miss);
    let ray = VoxelRay::new(
        flat.body.center,
        flat.body.center_offset,
        flat.direction,
        4.0,
    )
    .expect("valid");
    assert_eq!(voxel_raycast_with(&ray, &w, &o), RaycastOutcome::Miss);
    // A box flat on x slid into the wall at x = 3, twice: it stays in front of it.
    let h = Vec3::new(0.0, 0.4, 0.4);
    let so = SlideOptions::default();
    let s1 = collide_and_slide(
        &BoxBody {
            center: WorldPos::new(0, 0, 0),
            center_offset: Vec3::splat(0.5),
            half_extents: h,
        },
        Vec3::new(5.0, 0.0, 0.0),
        &w,
        &so,
    )
    .expect("valid");
    let s2 = collide_and_slide(&s1.body, Vec3::new(5.0, 0.0, 0.0), &w, &so).expect("valid");
    for s in [s1, s2] {
        assert!(s.blocked.x, "{s:?}");
        assert!(
            (s.body.center.x as f64 + f64::from(s.body.center_offset.x)) < 3.0,
            "{s:?}"
        );
    }
    // Falling flat onto the floor (y = -1) twice: it stays on it.
    let h = Vec3::new(0.4, 0.0, 0.4);
    let f1 = collide_and_slide(
        &BoxBody {
            center: WorldPos::new(0, 2, 0),
            center_offset: Vec3::splat(0.5),
            half_extents: h,
        },
        Vec3::new(0.0, -5.0, 0.0),
        &w,
        &so,
    )
    .expect("valid");
    let f2 = collide_and_slide(&f1.body, Vec3::new(0.0, -5.0, 0.0), &w, &so).expect("valid");
    for f in [f1, f2] {
        assert!(f.blocked.y && f.body.center.y == 0, "{f:?}");
    }
    // Never farther than asked.
    let empty = VoxelWorld::new();
    let s = collide_and_slide(
        &BoxBody {
            center: WorldPos::ZERO,
            center_offset: Vec3::splat(0.5),
            half_extents: Vec3::splat(0.3),
        },
        Vec3::new(3.0, 4.0, 0.0),
        &empty,
        &so,
    )
    .expect("valid");
    assert!(
        s.moved.x <= 3.0 && s.moved.y <= 4.0 && s.moved.x > 2.999 && s.moved.y > 3.999,
        "{s:?}"
    );
    // A center a hair above a face, moving down a little faster than unit length: the
    // distance to the face is 0 or a normal number, never subnormal.
    let hair = BoxCast {
        body: BoxBody {
            center: WorldPos::new(0, 0, 0),
            center_offset: Vec3::new(0.5, f32::MIN_POSITIVE, 0.5),
            half_extents: Vec3::ZERO,
        },
        direction: Vec3::new(0.0, -1.000_004, 0.0),
        max_distance: 2.0,
    };
    // The offset counts as 2^-64 (rule 1): the flat box touches the floor's top face after
    // that, a normal number.
    for sub in [f32::MIN_POSITIVE, 1e-19, 1e-30] {
        let cast = BoxCast {
            body: BoxBody {
                center_offset: Vec3::new(0.5, sub, 0.5),
                ..hair.body
            },
            ..hair
        };
        let h = hit_of(box_cast(&cast, &w, &o));
        assert!(
            h.distance.is_normal() && h.face_normal == IVec3::Y,
            "{sub}: {h:?}"
        );
    }
}

/// Rule 10: box casts meet shaped voxels where the box first overlaps one of their boxes,
/// as the oracle (the box grown by the half extents against every box of every voxel) says.
#[test]
fn box_casts_meet_shapes_as_the_oracle_says() {
    let mut ties = 0;
    let mut total = 0;
    for seed in 0..18u64 {
        let min = match seed % 3 {
            0 => WorldPos::new(0, 0, 0),
            1 => WorldPos::new(-(1 << 64), 1 << 64, 7),
            _ => WorldPos::new(i128::MAX - 40, i128::MIN + 20, 1 << 100),
        };
        for origin in [OriginPolicy::Report, OriginPolicy::SkipOriginVoxel] {
            ties += oracle_round(seed, min, 1000, origin, true);
            total += 1000;
        }
    }
    assert!(ties * 3 < total, "{ties} of {total} casts needed a tie");
}

/// A shape of the one full box is the cube for box casts too, under every origin policy.
#[test]
fn box_casts_take_the_full_box_as_the_cube() {
    let min = WorldPos::new(-3, 5, 1 << 70);
    let solids = random_solids(11, min, 12, 0.2, 3);
    let cubes = world_with(&solids);
    let mut full = cubes.clone();
    for id in 1..=3 {
        full.set_shape(VoxelId(id), &BlockShape::Boxes(vec![ShapeBox::FULL]))
            .expect("valid");
    }
    let mut rng = SplitMix64::new(5);
    for _ in 0..4000 {
        let center = offset(min, std::array::from_fn(|_| rng.below(16) as i128 - 2));
        let sub = Vec3::from_array(std::array::from_fn(|_| {
            sub_of_kind(rng.below(3) as u8, rng.next_f32())
        }));
        let h = Vec3::from_array(std::array::from_fn(|_| {
            half_of_kind(rng.below(6), rng.next_f32())
        }));
        let dir = Vec3::from_array(std::array::from_fn(|_| {
            dir_component(rng.below(6) as u8, rng.next_f32())
        }));
        let dir = if dir == Vec3::ZERO { Vec3::X } else { dir };
        let cast = BoxCast::new(center, sub, h, dir, 12.0).expect("a valid cast");
        for origin in [
            OriginPolicy::Report,
            OriginPolicy::SkipOriginVoxel,
            OriginPolicy::ExitSolid,
        ] {
            for unloaded in [UnloadedPolicy::Air, UnloadedPolicy::Stop] {
                let o = RaycastOptions {
                    origin,
                    unloaded,
                    ..RaycastOptions::default()
                };
                assert_eq!(
                    box_cast(&cast, &cubes, &o),
                    box_cast(&cast, &full, &o),
                    "{cast:?} {o:?}"
                );
            }
        }
    }
}

const SLAB: VoxelId = VoxelId(2);
const FENCE: VoxelId = VoxelId(3);

/// A stone floor at y = 0 with a row of bottom slabs on it at x = 3; fence: a post in the
/// middle of the voxel and one high rail from its west face to its east face.
fn slab_world() -> VoxelWorld {
    let mut w = VoxelWorld::new();
    let b = |lo, hi| ShapeBox::new(lo, hi).expect("valid");
    w.set_shape(SLAB, &BlockShape::Boxes(vec![b([0, 0, 0], [16, 8, 16])]))
        .expect("valid");
    w.set_shape(
        FENCE,
        &BlockShape::Boxes(vec![b([6, 0, 6], [10, 16, 10]), b([0, 12, 7], [16, 15, 9])]),
    )
    .expect("valid");
    for x in -4..12 {
        for z in -4..=4 {
            w.set_voxel(WorldPos::new(x, 0, z), STONE);
        }
    }
    for z in -4..=4 {
        w.set_voxel(WorldPos::new(3, 1, z), SLAB);
    }
    w
}

fn bottom(b: &BoxBody) -> f64 {
    b.center.y as f64 + f64::from(b.center_offset.y) - f64::from(b.half_extents.y)
}

#[test]
fn a_player_steps_up_onto_a_bottom_slab_and_stands_on_its_top() {
    let w = slab_world();
    let h = Vec3::new(0.3, 0.9, 0.3);
    let start = BoxBody {
        center: WorldPos::new(1, 1, 0),
        center_offset: Vec3::new(0.5, 0.9, 0.5),
        half_extents: h,
    };
    // Walking into the slab without stepping: blocked by its side, flush against x = 3.
    let s = collide_and_slide(
        &start,
        Vec3::new(2.0, 0.0, 0.0),
        &w,
        &SlideOptions::default(),
    )
    .expect("valid");
    assert!(s.blocked.x, "{s:?}");
    let right = s.body.center.x as f64 + f64::from(s.body.center_offset.x) + 0.3;
    assert!(
        (right - 3.0).abs() < 1e-6 && right <= 3.0,
        "right face at {right}"
    );
    // A half-voxel step up climbs it: the box stands on the slab's top, y = 1.5.
    let climb = SlideOptions {
        step_up: 0.5,
        ..SlideOptions::default()
    };
    let s = collide_and_slide(&start, Vec3::new(2.5, 0.0, 0.0), &w, &climb).expect("valid");
    assert!(s.stepped_up && !s.blocked.x, "{s:?}");
    assert!(
        (bottom(&s.body) - 1.5).abs() < 1e-6,
        "bottom at {}",
        bottom(&s.body)
    );
    assert!(overlaps_nothing(&w, s.body.center, s.body.center_offset, h));
    // Falling onto a slab lands on its top face, the face met a box's, not the voxel's.
    let above = BoxBody {
        center: WorldPos::new(3, 4, 1),
        ..start
    };
    let fall = BoxCast::new(above.center, above.center_offset, h, Vec3::NEG_Y, 5.0).expect("valid");
    let BoxCastOutcome::Hit(hit) = box_cast(&fall, &w, &RaycastOptions::default()) else {
        panic!("the fall meets the slab");
    };
    assert_eq!(
        (hit.voxel_pos, hit.face_normal, hit.voxel_type),
        (WorldPos::new(3, 1, 1), IVec3::Y, SLAB)
    );
    assert_eq!(
        hit.distance, 2.5,
        "from a bottom at y = 4 to the slab's top at 1.5"
    );
    let s = collide_and_slide(
        &above,
        Vec3::new(0.0, -5.0, 0.0),
        &w,
        &SlideOptions::default(),
    )
    .expect("valid");
    assert!(s.blocked.y && (bottom(&s.body) - 1.5).abs() < 1e-6, "{s:?}");
    // Along the row of slabs, the box standing on them is not stopped by the next one.
    let s2 = collide_and_slide(
        &s.body,
        Vec3::new(0.0, 0.0, 3.0),
        &w,
        &SlideOptions::default(),
    )
    .expect("valid");
    assert!(!s2.blocked.z && (s2.moved.z - 3.0).abs() < 1e-6, "{s2:?}");
    // A box in the slab's empty top half starts inside nothing.
    let cast = BoxCast::new(
        WorldPos::new(3, 1, 0),
        Vec3::new(0.5, 0.75, 0.5),
        Vec3::splat(0.2),
        Vec3::Y,
        0.0,
    )
    .expect("valid");
    assert_eq!(
        box_cast(&cast, &w, &opts(OriginPolicy::Report)),
        BoxCastOutcome::Miss
    );
}

#[test]
fn a_thin_box_passes_a_fence_beside_its_post_and_a_wide_one_does_not() {
    let mut w = slab_world();
    w.set_voxel(WorldPos::new(6, 1, 0), FENCE);
    let across = |h: Vec3, sub: Vec3| {
        let cast = BoxCast::new(WorldPos::new(6, 1, -3), sub, h, Vec3::Z, 6.0).expect("valid");
        box_cast(&cast, &w, &RaycastOptions::default())
    };
    let small = Vec3::splat(0.1);
    // Beside the post (x 6.1..6.3, the post at 6.375..6.625) and under the rail (y 1.75 to
    // 1.9375): the box passes.
    assert_eq!(
        across(small, Vec3::new(0.2, 0.2, 0.5)),
        BoxCastOutcome::Miss
    );
    // In the post's column it meets the post's south face at z = 6/16, from z = -2.4.
    let BoxCastOutcome::Hit(h) = across(small, Vec3::new(0.5, 0.2, 0.5)) else {
        panic!("meets the post");
    };
    assert_eq!(
        (h.voxel_pos, h.face_normal),
        (WorldPos::new(6, 1, 0), IVec3::NEG_Z)
    );
    assert!((f64::from(h.distance) - 2.775).abs() < 1e-6, "{h:?}");
    // A box as high as the rail (y 1.2..2.2) meets the rail's south face at z = 7/16.
    let BoxCastOutcome::Hit(h) = across(Vec3::new(0.1, 0.5, 0.1), Vec3::new(0.2, 0.7, 0.5)) else {
        panic!("meets the rail");
    };
    assert_eq!(
        (h.voxel_pos, h.face_normal),
        (WorldPos::new(6, 1, 0), IVec3::NEG_Z)
    );
    assert!((f64::from(h.distance) - 2.8375).abs() < 1e-6, "{h:?}");
}
