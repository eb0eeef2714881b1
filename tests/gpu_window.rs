//! A `GpuWorld` whose window follows a player (`GpuRaycaster::upload_window`, `recenter`): after
//! every move the GPU answers as the CPU does on the chunks the window may hold, ray by ray,
//! and a move uploads the chunks that enter the window and nothing else (counted). Walks
//! cross chunk, region and i32 boundaries and the edges of the i128 world while chunks
//! stream in and out and blocks are edited. Runs on lavapipe in CI; see `voxcast_testkit::gpu`.

#![cfg(feature = "gpu")]

use voxcast::gpu::{AgentPairs, CameraImage, Rays};
use voxcast_testkit::gpu::*;

use voxcast::gpu::{GpuError, GpuWorld, WindowMove};
use voxcast::{
    Agent, Chunk, ChunkPos, LocalPos, RaycastOptions, UnloadedPolicy, VoxelId, VoxelWorld,
    WorldPos, glam::Vec3,
};
use voxcast_testkit::scene::SplitMix64;

/// An inclusive box of chunk indices.
type Box3 = ([i128; 3], [i128; 3]);

/// The chunk streamed in at `pos`: chosen by a hash of its position, so that a chunk that
/// leaves and comes back is the same. Some are not loaded at all (holes inside the loaded
/// box), some are all air or all stone, the rest hold a floor, a wall or scattered voxels of
/// five ids (bricks of one id and bricks of many).
fn chunk_at(pos: ChunkPos) -> Option<Chunk> {
    let hash = |p: [i128; 3]| {
        p.iter().fold(0x5EED_u64, |h, &c| {
            (h ^ (c as u64) ^ ((c >> 64) as u64)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        })
    };
    let mut rng = SplitMix64::new(hash(pos.to_array()));
    let kind = rng.below(10);
    // A third of the regions (4 x 4 x 4 chunks) are open sky, crossed in runs of empty chunks.
    if SplitMix64::new(hash(pos.to_array().map(|c| c >> 2))).below(3) == 0 {
        return (kind != 0).then(Chunk::default);
    }
    if kind == 0 {
        return None;
    }
    if kind <= 2 {
        return Some(Chunk::default());
    }
    if kind == 3 {
        return Some(Chunk::filled(VoxelId(1)));
    }
    let mut chunk = Chunk::default();
    if kind <= 5 {
        // A floor of one id, two voxels thick: bricks of stone beside bricks of air.
        let (y, id) = (rng.below(30) as u8, VoxelId(1 + rng.below(3) as u16));
        for x in 0..32 {
            for z in 0..32 {
                chunk.set(LocalPos::new(x, y, z), id);
                chunk.set(LocalPos::new(x, y + 1, z), id);
            }
        }
    } else if kind == 6 {
        let x = rng.below(32) as u8;
        for y in 0..32 {
            for z in 0..32 {
                chunk.set(LocalPos::new(x, y, z), VoxelId(4));
            }
        }
    }
    for _ in 0..rng.below(300) {
        let l = LocalPos::new(
            rng.below(32) as u8,
            rng.below(32) as u8,
            rng.below(32) as u8,
        );
        chunk.set(l, VoxelId(rng.below(6) as u16));
    }
    Some(chunk)
}

/// The chunks within `radius` of `center` (per axis), clamped to the i128 world.
fn around(center: ChunkPos, radius: [i128; 3]) -> Box3 {
    let lo = std::array::from_fn(|a| {
        center
            .axis(a)
            .saturating_sub(radius[a])
            .max(ChunkPos::MIN_INDEX)
    });
    let hi = std::array::from_fn(|a| {
        center
            .axis(a)
            .saturating_add(radius[a])
            .min(ChunkPos::MAX_INDEX)
    });
    (lo, hi)
}

fn inside(b: Box3, p: ChunkPos) -> bool {
    (0..3).all(|a| (b.0[a]..=b.1[a]).contains(&p.axis(a)))
}

fn each(b: Box3) -> impl Iterator<Item = ChunkPos> {
    (b.0[2]..=b.1[2]).flat_map(move |z| {
        (b.0[1]..=b.1[1]).flat_map(move |y| (b.0[0]..=b.1[0]).map(move |x| ChunkPos::new(x, y, z)))
    })
}

/// Chunks of one id, stone or air by a hash of their position (mostly air): a window that
/// moves finds table entries equal to those of the chunks whose slots it takes, so only the
/// region records say which region a slot now belongs to.
fn uniform_chunk_at(pos: ChunkPos) -> Option<Chunk> {
    let h = pos.to_array().iter().fold(0xC0DE_u64, |h, &c| {
        (h ^ (c as u64)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    });
    Some(match SplitMix64::new(h).below(8) {
        0 => Chunk::filled(VoxelId(1)),
        _ => Chunk::default(),
    })
}

/// A world streamed around a player: the chunks within `radius` of it loaded, the others not.
struct Streamed {
    world: VoxelWorld,
    radius: [i128; 3],
    chunk_at: fn(ChunkPos) -> Option<Chunk>,
}

impl Streamed {
    fn new(center: ChunkPos, radius: [i128; 3], chunk_at: fn(ChunkPos) -> Option<Chunk>) -> Self {
        let mut s = Self {
            world: VoxelWorld::new(),
            radius,
            chunk_at,
        };
        s.world.set_track_changes(true);
        s.stream(center);
        s
    }

    /// Loads the chunks that came within reach of `center` and unloads those that left it.
    fn stream(&mut self, center: ChunkPos) {
        let keep = around(center, self.radius);
        let gone: Vec<ChunkPos> = self
            .world
            .chunks()
            .map(|(p, _)| p)
            .filter(|&p| !inside(keep, p))
            .collect();
        for p in gone {
            self.world.remove_chunk(p);
        }
        for p in each(keep) {
            if !self.world.is_loaded(p)
                && let Some(c) = (self.chunk_at)(p)
            {
                self.world.insert_chunk(p, c).expect("in the world");
            }
        }
    }
}

/// Checks a move's account: the chunks that entered and left the loadable box, and the bytes
/// of the stored ones among those that entered, counted from the world.
fn check_move(what: &str, world: &VoxelWorld, before: Box3, after: Box3, mv: &WindowMove) {
    let entered: Vec<ChunkPos> = each(after).filter(|&p| !inside(before, p)).collect();
    let left = each(before).filter(|&p| !inside(after, p)).count();
    assert_eq!(mv.entered, entered.len() as u64, "{what}: chunks entered");
    assert_eq!(mv.left, left as u64, "{what}: chunks left");
    let stored: Vec<u64> = entered
        .iter()
        .filter_map(|&p| world.chunk(p))
        .map(GpuWorld::stored_chunk_bytes)
        .filter(|&b| b > 0)
        .collect();
    assert_eq!(
        mv.stored,
        stored.len() as u64,
        "{what}: stored chunks entered"
    );
    assert_eq!(
        mv.chunk_bytes,
        stored.iter().sum::<u64>(),
        "{what}: chunk bytes uploaded"
    );
}

/// Raycasts under both unloaded policies and conservative line of sight around `player`,
/// GPU against the CPU on the chunks the window may hold.
fn check_around(
    gpu: &voxcast::gpu::GpuRaycaster,
    what: &str,
    s: &Streamed,
    gw: &GpuWorld,
    player: WorldPos,
    seed: u64,
) {
    let rays = adversarial_rays(player, 150, seed);
    for unloaded in [UnloadedPolicy::Air, UnloadedPolicy::Stop] {
        let opts = RaycastOptions {
            unloaded,
            ..Default::default()
        };
        check_window_rays(
            gpu,
            &format!("{what} {unloaded:?}"),
            gw,
            &s.world,
            &rays,
            &opts,
        );
    }
    check_window_sight(
        gpu,
        what,
        gw,
        &s.world,
        &rays[..60],
        &RaycastOptions::default(),
    );
}

/// A walk of `steps` moves from chunk `start`: mostly a chunk along one axis, sometimes two
/// axes, standing still or a jump past the window; blocks edited and chunks streamed in and
/// out between moves.
fn walk(start: ChunkPos, steps: usize, seed: u64, half: [u32; 3], radius: [i128; 3]) {
    walk_in(chunk_at, start, steps, seed, half, radius);
}

/// [`walk`] through the world `chunk_at` makes.
fn walk_in(
    chunk_at: fn(ChunkPos) -> Option<Chunk>,
    start: ChunkPos,
    steps: usize,
    seed: u64,
    half: [u32; 3],
    radius: [i128; 3],
) {
    let Some(gpu) = gpu() else { return };
    let mut rng = SplitMix64::new(seed);
    let mut center = start;
    let mut s = Streamed::new(center, radius, chunk_at);
    s.world.take_changed_chunks();
    let mut gw = gpu.upload_window(&s.world, center, half).expect("window");
    let mut through = 0u64;
    for step in 0..steps {
        let what = format!("walk from {start:?}, step {step}, center {center:?}");
        // Edits near the player, and chunks streamed around it.
        for _ in 0..rng.below(4) {
            let p = center.origin();
            let at = WorldPos::new(
                p.x.saturating_add(rng.below(64) as i128 - 16),
                p.y.saturating_add(rng.below(64) as i128 - 16),
                p.z.saturating_add(rng.below(64) as i128 - 16),
            );
            s.world.set_voxel(at, VoxelId(rng.below(5) as u16));
        }
        let changed = s.world.take_changed_chunks();
        gw.update_chunks(&s.world, &changed).expect("update");
        // The move.
        let mut next = center.to_array();
        match rng.below(20) {
            0 => {}
            1 => {
                let a = rng.below(3) as usize;
                next[a] = next[a].saturating_add(9 + rng.below(5) as i128);
            }
            2..=4 => {
                for c in next.iter_mut().take(2) {
                    *c = c.saturating_add(rng.below(3) as i128 - 1);
                }
            }
            _ => {
                let a = [0, 0, 2, 2, 1][rng.below(5) as usize];
                next[a] = next[a].saturating_add(if rng.below(3) == 0 { -1 } else { 1 });
            }
        }
        center =
            ChunkPos::from_array(next.map(|c| c.clamp(ChunkPos::MIN_INDEX, ChunkPos::MAX_INDEX)));
        s.stream(center);
        let changed = s.world.take_changed_chunks();
        gw.update_chunks(&s.world, &changed)
            .expect("streamed chunks");
        let before = gw.loadable_chunks();
        let uploaded = gw.uploaded_bytes();
        let mv = gw.recenter(&s.world, center).expect("move");
        let after = gw.loadable_chunks();
        let (b, a) = (
            (before.0.to_array(), before.1.to_array()),
            (after.0.to_array(), after.1.to_array()),
        );
        check_move(&what, &s.world, b, a, &mv);
        assert_eq!(
            gw.uploaded_bytes() - uploaded,
            mv.chunk_bytes + mv.table_bytes,
            "{what}: a move uploads its chunks and table entries, nothing else"
        );
        gw.check_table(&s.world)
            .unwrap_or_else(|e| panic!("{what}: the table after the move: {e}"));
        through += mv.entered;
        let player = WorldPos::new(
            center.origin().x.saturating_add(16),
            center.origin().y.saturating_add(9),
            center.origin().z.saturating_add(16),
        );
        check_around(gpu, &what, &s, &gw, player, seed ^ step as u64);
    }
    eprintln!("walk from {start:?}: {through} chunks entered the window in {steps} moves");
}

/// Around the origin: negative coordinates, chunk and region boundaries, hundreds of chunks
/// through the window, the CPU world streamed wider than the window.
#[test]
fn a_window_follows_a_player_around_the_origin() {
    walk(ChunkPos::new(-3, 0, 2), 150, 1, [2, 1, 2], [3, 2, 3]);
}

/// Through chunks of one id each, where a moved window's table entries mostly keep their
/// values and the region records alone change.
#[test]
fn a_window_moves_through_uniform_chunks() {
    walk_in(
        uniform_chunk_at,
        ChunkPos::new(5, -1, -6),
        80,
        5,
        [3, 1, 2],
        [3, 1, 2],
    );
}

/// Across chunk 2^26 on x (voxel 2^31, where an i32 voxel coordinate would overflow) and
/// -2^26 on z, with the world streamed no wider than the window.
#[test]
fn a_window_crosses_the_i32_limits() {
    walk(
        ChunkPos::new((1 << 26) - 4, 7, -(1 << 26) + 3),
        40,
        2,
        [2, 1, 2],
        [2, 1, 2],
    );
}

/// Into the corners of the i128 world: the window stays inside it and reaches its edge.
#[test]
fn a_window_walks_into_the_edges_of_the_i128_world() {
    let m = ChunkPos::MAX_INDEX;
    walk(
        ChunkPos::new(m - 3, m - 2, m - 4),
        30,
        3,
        [2, 1, 2],
        [3, 2, 3],
    );
    let n = ChunkPos::MIN_INDEX;
    walk(
        ChunkPos::new(n + 3, n + 1, n + 2),
        30,
        4,
        [1, 1, 2],
        [2, 2, 2],
    );
}

/// A one-chunk move uploads one slab of chunks: at most the window's cross-section times the
/// average stored chunk, and a jump farther than the window fills it anew.
#[test]
fn a_one_chunk_move_uploads_one_slab() {
    let Some(gpu) = gpu() else { return };
    let (_, terrain) = terrain();
    let center = ChunkPos::new(3, 1, 3);
    let mut gw = gpu
        .upload_window(terrain, center, [2, 1, 2])
        .expect("window");
    let stored = gw.stored_chunks() as u64;
    let average = gw.stored_bytes() / stored.max(1);
    let dims = gw.dims();
    for (a, to) in [
        (0, [4, 1, 3]),
        (2, [4, 1, 4]),
        (0, [3, 1, 4]),
        (1, [3, 2, 4]),
    ] {
        let to = ChunkPos::from_array(to);
        let mv = gw.recenter(terrain, to).expect("move");
        let area: u64 = (0..3)
            .filter(|&k| k != a)
            .map(|k| u64::from(dims[k]))
            .product();
        assert!(
            mv.chunk_bytes + mv.table_bytes <= area * average,
            "a one-chunk move along axis {a} to {to:?} uploaded {} bytes, more than {area} \
             chunks of {average} bytes",
            mv.chunk_bytes + mv.table_bytes
        );
        // The loadable box less its margin: 5 x 3 x 5 chunks.
        let slab: u64 = (0..3).filter(|&k| k != a).map(|k| [5, 3, 5][k]).product();
        assert_eq!(
            (mv.entered, mv.left),
            (slab, slab),
            "move along axis {a}: {mv:?}"
        );
    }
    let rays = adversarial_rays(WorldPos::new(110, 60, 140), 400, 8);
    check_window_rays(
        gpu,
        "after the moves",
        &gw,
        terrain,
        &rays,
        &RaycastOptions::default(),
    );
    // A jump: every chunk of the box enters.
    let mv = gw
        .recenter(terrain, ChunkPos::new(20, 1, 20))
        .expect("jump");
    let (lo, hi) = gw.loadable_chunks();
    let volume: u64 = (0..3)
        .map(|a| (hi.axis(a) - lo.axis(a) + 1) as u64)
        .product();
    assert_eq!(mv.entered, volume, "a jump past the window fills it anew");
    // Back to the start: the answers are those of a window made there.
    gw.recenter(terrain, center).expect("back");
    let fresh = gpu
        .upload_window(terrain, center, [2, 1, 2])
        .expect("window");
    let rays = adversarial_rays(WorldPos::new(100, 40, 100), 600, 9);
    let g1 = gpu
        .cast(Rays(&rays), &gw, &RaycastOptions::default())
        .expect("moved");
    let g2 = gpu
        .cast(Rays(&rays), &fresh, &RaycastOptions::default())
        .expect("fresh");
    assert_eq!(g1, g2, "a window moved back answers as one made there");
}

/// Bad input: a center outside the i128 world, a window wider than the shader's coordinates
/// or the device allow, a fixed window asked to move, agents of the window before a move.
#[test]
fn bad_windows_get_clear_errors() {
    let Some(gpu) = gpu() else { return };
    let world = VoxelWorld::new();
    let outside = ChunkPos::new(ChunkPos::MAX_INDEX + 1, 0, 0);
    assert_eq!(
        gpu.upload_window(&world, outside, [1, 1, 1]).map(|_| ()),
        Err(GpuError::CenterOutsideWorld(outside))
    );
    assert!(matches!(
        gpu.upload_window(&world, ChunkPos::new(0, 0, 0), [1 << 25, 1, 1]),
        Err(GpuError::LimitExceeded {
            what: "window extent in chunks",
            ..
        })
    ));
    assert!(matches!(
        gpu.upload_window(&world, ChunkPos::new(0, 0, 0), [5000, 5000, 5000]),
        Err(GpuError::LimitExceeded {
            what: "chunk table (bytes)",
            ..
        })
    ));
    // Each axis within the shader's coordinates, but 2^75 chunks in all: more than a u64
    // counts, on any target.
    assert!(matches!(
        gpu.upload_window(&world, ChunkPos::new(0, 0, 0), [1 << 24; 3]),
        Err(GpuError::LimitExceeded {
            what: "chunk table (bytes)",
            needed: u64::MAX,
            ..
        })
    ));
    let mut gw = gpu
        .upload_window(&world, ChunkPos::new(0, 0, 0), [1, 1, 1])
        .expect("window");
    let before = gw.loadable_chunks();
    assert_eq!(
        gw.recenter(&world, ChunkPos::new(0, ChunkPos::MIN_INDEX - 1, 0)),
        Err(GpuError::CenterOutsideWorld(ChunkPos::new(
            0,
            ChunkPos::MIN_INDEX - 1,
            0
        )))
    );
    assert_eq!(
        gw.loadable_chunks(),
        before,
        "a refused move leaves the window"
    );
    let mut fixed = gpu.upload_world(&world).expect("upload");
    assert_eq!(
        fixed.recenter(&world, ChunkPos::new(1, 0, 0)),
        Err(GpuError::WindowCannotMove)
    );
    // Agents are relative to the window: after a move they must be uploaded again.
    let agents = [
        Agent::new(WorldPos::new(5, 5, 5), Vec3::splat(0.5), 1.0),
        Agent::new(WorldPos::new(9, 5, 5), Vec3::splat(0.5), 1.0),
    ];
    let mut eyes = gpu.upload_agents(&agents, &gw).expect("agents");
    gw.recenter(&world, ChunkPos::new(1, 0, 0)).expect("move");
    let opts = voxcast::LineOfSightOptions::default();
    assert!(matches!(
        gpu.cast(
            AgentPairs {
                agents: &eyes,
                pairs: &[[0, 1]],
                outcomes: false
            },
            &gw,
            &opts
        ),
        Err(GpuError::AgentsForAnotherWindow)
    ));
    eyes.update(&agents, &gw).expect("agents again");
    assert!(
        gpu.cast(
            AgentPairs {
                agents: &eyes,
                pairs: &[[0, 1]],
                outcomes: false
            },
            &gw,
            &opts
        )
        .is_ok()
    );
}

/// Batches submitted before a move answer on the world as it was; one whose later dispatches
/// would see the move fails instead of mixing two worlds.
#[test]
fn batches_in_flight_see_the_world_they_were_cast_on() {
    let Some(mut gpu) = own_gpu() else { return };
    let (_, terrain) = terrain();
    let center = ChunkPos::new(3, 1, 3);
    let mut gw = gpu
        .upload_window(terrain, center, [2, 1, 2])
        .expect("window");
    // What the GPU answers on the window before the move (checked against the CPU there).
    let rays = adversarial_rays(WorldPos::new(110, 50, 110), 500, 12);
    let opts = RaycastOptions::default();
    check_window_rays(&gpu, "before the move", &gw, terrain, &rays, &opts);
    let before = gpu.cast(Rays(&rays), &gw, &opts).expect("raycast");
    let small = gpu.submit(Rays(&rays), &gw, &opts).expect("submit");
    gpu.set_max_dispatch_rays(64);
    let large = gpu.submit(Rays(&rays), &gw, &opts).expect("submit");
    gw.recenter(terrain, ChunkPos::new(5, 1, 4)).expect("move");
    let answers = small.wait().expect("a batch of one dispatch");
    assert_parity("submitted before the move", &rays, &answers, &before);
    assert_eq!(large.wait().map(|_| ()), Err(GpuError::WorldChanged));
}

/// On a device whose storage bindings hold 304 KiB (76 stored chunks' occupancy, 76 Ki words
/// of ids, 2% more than the walk's busiest window needs), a window walking over the terrain fills its id heap: records are packed anew when
/// it is too fragmented, every move keeps the answers exact, and a window whose chunks cannot
/// fit is refused, the world left as it was.
#[test]
fn a_full_id_heap_is_packed_and_an_overflow_refused() {
    if gpu().is_none() {
        return;
    }
    let limits = voxcast::gpu::wgpu::Limits {
        max_storage_buffer_binding_size: 304 << 10,
        ..voxcast::gpu::wgpu::Limits::default()
    };
    let (device, queue) = application_device(limits);
    let small = voxcast::gpu::GpuRaycaster::from_device(
        &device,
        &queue,
        voxcast::gpu::GpuConfig::default(),
    )
    .expect("a raycaster");
    let (_, terrain) = terrain();
    let mut rng = SplitMix64::new(21);
    let mut gw = small
        .upload_window(terrain, ChunkPos::new(3, 1, 3), [2, 1, 2])
        .expect("window");
    let rays = adversarial_rays(WorldPos::new(128, 48, 128), 300, 22);
    for step in 0..60 {
        let to = ChunkPos::new(1 + rng.below(6) as i128, 1, 1 + rng.below(6) as i128);
        gw.recenter(terrain, to)
            .unwrap_or_else(|e| panic!("move {step} to {to:?}: {e}"));
        gw.check_table(terrain).expect("the table");
        check_window_rays(
            &small,
            &format!("move {step} to {to:?}"),
            &gw,
            terrain,
            &rays,
            &RaycastOptions::default(),
        );
    }
    assert!(
        gw.heap_packs() > 0,
        "the walk never filled the heap: {gw:?}"
    );
    let before = gw.loadable_chunks();
    let wide = small.upload_window(terrain, ChunkPos::new(3, 1, 3), [4, 1, 4]);
    assert!(
        matches!(wide, Err(GpuError::LimitExceeded { .. })),
        "{wide:?}"
    );
    assert_eq!(gw.loadable_chunks(), before);
}

/// On a device with wgpu's default limits (128 MiB per storage binding), a `GpuWorld` holds
/// over 8,000 stored terrain chunks (the test terrain repeated), and answers as the CPU does.
#[test]
fn eight_thousand_terrain_chunks_fit_the_default_limits() {
    if gpu().is_none() {
        return;
    }
    let (device, queue) = application_device(voxcast::gpu::wgpu::Limits::default());
    let gpu = voxcast::gpu::GpuRaycaster::from_device(
        &device,
        &queue,
        voxcast::gpu::GpuConfig::default(),
    )
    .expect("a raycaster");
    let (_, terrain) = terrain();
    let mut world = VoxelWorld::new();
    let mut stored = 0;
    'tiles: for tz in 0..8 {
        for tx in 0..8 {
            for (p, c) in terrain.chunks() {
                stored += usize::from(GpuWorld::stored_chunk_bytes(c) > 0);
                let at = ChunkPos::new(p.x + 8 * tx, p.y, p.z + 8 * tz);
                world.insert_chunk(at, c.clone()).expect("in the world");
            }
            if stored > 8_000 {
                break 'tiles;
            }
        }
    }
    let gw = gpu
        .upload_world(&world)
        .expect("upload within the default limits");
    assert!(gw.stored_chunks() > 8_000, "{gw:?}");
    let per_chunk = gw.stored_bytes() / gw.stored_chunks() as u64;
    assert!(per_chunk <= 17 << 10, "{per_chunk} bytes a stored chunk");
    let rays = adversarial_rays(WorldPos::new(1000, 60, 1000), 2000, 31);
    check(
        &gpu,
        "8,000 stored chunks",
        &world,
        &gw,
        &rays,
        &RaycastOptions::default(),
    );
}

/// Rays, line of sight, cameras and agent pairs that leave a window that follows a center:
/// every answer is the CPU's on the whole world or says it left the window (`Unloaded` at the
/// first voxel outside the box, under both unloaded policies), exactly where it left it (the
/// CPU on the window's chunks alone, holes filled with air, under `Stop`), and the completing
/// forms give the CPU's answer for every ray. Checked for two places of the window, one a move
/// away.
#[test]
fn rays_that_leave_a_window_say_so() {
    use voxcast::{
        Agent, LineOfSightOptions, RaycastOutcome, VoxelRay, agent_visibility, raycast_batch,
    };
    let Some(gpu) = gpu() else { return };
    let (_, tw) = terrain();
    let mut gw = gpu
        .upload_window(tw, ChunkPos::new(3, 1, 3), [1, 1, 1])
        .expect("window");
    let mut rng = SplitMix64::new(5);
    let (mut left, mut total) = (0, 0);
    for center in [ChunkPos::new(3, 1, 3), ChunkPos::new(4, 1, 3)] {
        gw.recenter(tw, center).expect("move");
        let o = center.origin();
        // From anywhere in the box (and a few from its margin), in every direction, long
        // enough to leave it.
        let rays: Vec<VoxelRay> = (0..3000)
            .map(|_| {
                let p = WorldPos::new(
                    o.x + rng.below(112) as i128 - 40,
                    o.y + rng.below(96) as i128 - 32,
                    o.z + rng.below(112) as i128 - 40,
                );
                let mut unit = || rng.below(1000) as f32 / 1000.0;
                let sub = Vec3::new(unit(), unit(), unit());
                VoxelRay::new(p, sub, rng.unit_vector(), 20.0 + rng.below(160) as f32)
                    .expect("a ray")
            })
            .collect();
        for opts in every_option() {
            let what = format!("center {center:?}, {opts:?}");
            left += check_window_rays(gpu, &what, &gw, tw, &rays, &opts);
            total += rays.len();
        }
        for unloaded in [UnloadedPolicy::Air, UnloadedPolicy::Stop] {
            let opts = RaycastOptions {
                unloaded,
                ..Default::default()
            };
            let segs: Vec<VoxelRay> = rays[..800].to_vec();
            left += check_window_sight(gpu, &format!("center {center:?}"), &gw, tw, &segs, &opts);
            // A camera in the box looking out of it.
            let cam = voxcast::Camera::new(
                WorldPos::new(o.x + 16, o.y + 20, o.z + 16),
                Vec3::splat(0.5),
                Vec3::new(1.0, -0.3, 0.4),
                70.0,
                48,
                32,
                200.0,
            )
            .expect("camera");
            let cam_rays = cam.rays().expect("camera rays");
            let image = gpu.cast(CameraImage(&cam), &gw, &opts).expect("camera");
            left += check_window_edge(
                &format!("center {center:?}, camera, {unloaded:?}"),
                &gw,
                tw,
                &cam_rays,
                &image,
                |w, held| {
                    let (w, o) = window_cpu(&gw, w, tw, held, &opts);
                    raycast_batch(&cam_rays, &w, &o)
                },
            );
            // Agents in and around the box, every pair.
            let agents: Vec<Agent> = rays[..40]
                .iter()
                .map(|r| Agent::new(r.origin, r.sub_offset, 1.0))
                .collect();
            let on_gpu = gpu.upload_agents(&agents, &gw).expect("agents");
            let pairs: Vec<[u32; 2]> = (0..40u32)
                .flat_map(|a| (0..40u32).filter(move |&b| b != a).map(move |b| [a, b]))
                .collect();
            let sight = LineOfSightOptions {
                conservative: false,
                raycast: opts.clone(),
            };
            let vis = gpu
                .cast(
                    AgentPairs {
                        agents: &on_gpu,
                        pairs: &pairs,
                        outcomes: true,
                    },
                    &gw,
                    &sight,
                )
                .expect("visibility");
            let answers: Vec<RaycastOutcome> = vis
                .answers()
                .expect("answers")
                .iter()
                .map(|l| RaycastOutcome::from(*l))
                .collect();
            let cpu_pairs = agent_visibility(&agents, &pairs, tw, &sight);
            for (i, (g, c)) in answers.iter().zip(&cpu_pairs).enumerate() {
                let c = RaycastOutcome::from(*c);
                assert!(
                    g.matches(&c) || gw.left_window(g),
                    "center {center:?}, pair {i}: gpu {g:?}, cpu {c:?}"
                );
                left += usize::from(gw.left_window(g));
            }
        }
    }
    eprintln!("{left} answers left the window, of about {total} rays and the rest");
    assert!(
        left > 1000,
        "the rays must leave the window to test it: {left}"
    );
}
