//! Anvil regions: the 1.19.4 region fastanvil's package ships, block by block against
//! fastanvil's own reader and ray by ray between the GPU and the CPU; regions the tests write
//! with fastanvil, at offsets that do not line up with chunks; bad files, each an error.

#![cfg(feature = "anvil")]

use std::io::Cursor;
use voxcast::gpu::Rays;

use fastanvil::{Chunk as _, JavaChunk, Region};
use serde::Serialize;
use voxcast::glam::Vec3;
use voxcast::{RaycastOptions, VoxelId, VoxelRay, WorldPos, raycast_batch};
use voxcast_import::{ImportError, Palette, anvil};
use voxcast_testkit::scene::SplitMix64;

/// The region fastanvil ships: 1.19.4, chunk columns (0..32, 0..32) of region (0, 0).
fn shipped_region() -> Vec<u8> {
    let dir = voxcast_testkit::common::package_dir(env!("CARGO_MANIFEST_DIR"), "fastanvil");
    std::fs::read(dir.join("resources/1.19.4.mca")).expect("fastanvil ships resources/1.19.4.mca")
}

#[test]
fn the_shipped_region_holds_what_fastanvil_reads_there() {
    let bytes = shipped_region();
    let mut palette = Palette::new();
    let t = std::time::Instant::now();
    let world = anvil::region(&bytes, WorldPos::ZERO, &mut palette, anvil::Names::Plain)
        .expect("the region imports");
    eprintln!(
        "1.19.4 region: {} chunks, {} block types, imported in {:?}",
        world.chunk_count(),
        palette.len(),
        t.elapsed()
    );
    assert!(world.chunk_count() > 1000, "{}", world.chunk_count());
    // Block by block on a sample, against fastanvil's reader.
    let mut region = Region::from_stream(Cursor::new(bytes)).expect("fastanvil reads it");
    let mut rng = SplitMix64::new(3);
    let mut checked = 0;
    for _ in 0..200 {
        let (cx, cz) = (rng.below(32) as usize, rng.below(32) as usize);
        let Some(data) = region.read_chunk(cx, cz).expect("read") else {
            continue;
        };
        let JavaChunk::Post18(chunk) = JavaChunk::from_bytes(&data).expect("a 1.19 chunk") else {
            panic!("not a 1.18+ chunk");
        };
        let (cx, cz) = chunk_pos(&data);
        let (x0, z0) = (i128::from(cx) * 16, i128::from(cz) * 16);
        for _ in 0..200 {
            let (x, z) = (rng.below(16) as usize, rng.below(16) as usize);
            let y = rng.below(384) as isize - 64;
            let Some(block) = chunk.block(x, y, z) else {
                continue;
            };
            let at = WorldPos::new(x0 + x as i128, y as i128, z0 + z as i128);
            let id = world.get_voxel(&at).expect("loaded where a section is");
            let want = palette.get(block.name()).expect("every name has an id");
            assert_eq!(
                id,
                want,
                "{at}: {} against {:?}",
                block.name(),
                palette.name(id)
            );
            checked += 1;
        }
    }
    assert!(checked > 10_000, "{checked} blocks checked");
    // With properties: more ids, the same blocks under their base names.
    let mut with = Palette::new();
    let full = anvil::region(
        &shipped_region(),
        WorldPos::ZERO,
        &mut with,
        anvil::Names::WithProperties,
    )
    .expect("imports");
    assert!(with.len() > palette.len());
    assert_eq!(full.chunk_count(), world.chunk_count());
}

/// The column position `(xPos, zPos)` a chunk's NBT stores.
fn chunk_pos(data: &[u8]) -> (i32, i32) {
    let v: fastnbt::Value = fastnbt::from_bytes(data).expect("nbt");
    let fastnbt::Value::Compound(m) = v else {
        panic!("not a compound")
    };
    let int = |k: &str| match m.get(k) {
        Some(fastnbt::Value::Int(v)) => *v,
        other => panic!("{k} {other:?}"),
    };
    (int("xPos"), int("zPos"))
}

/// Rays from above the ground down and across, on the GPU and the CPU: every answer equal.
#[test]
fn rays_on_the_shipped_region_agree_between_gpu_and_cpu() {
    let Some(gpu) = voxcast_testkit::gpu::gpu() else {
        return;
    };
    let mut palette = Palette::new();
    let world = anvil::region(
        &shipped_region(),
        WorldPos::ZERO,
        &mut palette,
        anvil::Names::Plain,
    )
    .expect("imports");
    let gw = gpu.upload_world(&world).expect("upload");
    let mut rng = SplitMix64::new(9);
    // From points above the ground of the loaded columns, looking down and across.
    let (lo, hi) = world.loaded_chunk_bounds().expect("chunks");
    let (x0, z0) = (lo.x * 32, lo.z * 32);
    let (w, d) = ((hi.x - lo.x + 1) * 32, (hi.z - lo.z + 1) * 32);
    let rays: Vec<VoxelRay> = (0..20_000)
        .map(|_| {
            let at = WorldPos::new(
                x0 + i128::from(rng.below(w as u64)),
                70 + rng.below(60) as i128,
                z0 + i128::from(rng.below(d as u64)),
            );
            let v = rng.unit_vector();
            let down = Vec3::new(v.x, -v.y.abs() - 0.2, v.z);
            VoxelRay::new(at, Vec3::splat(0.5), down, 200.0).expect("ray")
        })
        .collect();
    for opts in [
        RaycastOptions::default(),
        RaycastOptions {
            blocks: palette.filter_passing(anvil::see_through),
            ..RaycastOptions::default()
        },
    ] {
        let g = gpu.cast(Rays(&rays), &gw, &opts).expect("raycast");
        let c = raycast_batch(&rays, &world, &opts);
        voxcast_testkit::gpu::assert_parity("1.19.4 region", &rays, &g, &c);
        let hits = c.iter().filter(|o| o.hit().is_some()).count();
        eprintln!("{hits} of {} rays hit", rays.len());
        assert!(hits > 5_000, "{hits} hits");
    }
}

#[derive(Serialize)]
struct ChunkOut {
    #[serde(rename = "DataVersion")]
    data_version: i32,
    #[serde(rename = "xPos")]
    x_pos: i32,
    #[serde(rename = "zPos")]
    z_pos: i32,
    #[serde(rename = "yPos")]
    y_pos: i32,
    #[serde(rename = "Status")]
    status: String,
    sections: Vec<SectionOut>,
}

#[derive(Serialize)]
struct SectionOut {
    #[serde(rename = "Y")]
    y: i8,
    block_states: StatesOut,
}

#[derive(Serialize)]
struct StatesOut {
    palette: Vec<StateOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<fastnbt::LongArray>,
}

#[derive(Serialize)]
struct StateOut {
    #[serde(rename = "Name")]
    name: String,
}

/// Block `(x, y, z)` of the test pattern: 0 air, 1 stone, 2 glass, 3 water.
fn pattern(x: i32, y: i32, z: i32) -> usize {
    ((x * 7 + y * 3 + z * 5).rem_euclid(11) % 4) as usize
}

/// A region of two columns at chunk (x, z) = (1, -1) and (2, -1), two sections each (y -1 and 2),
/// holding [`pattern`], written with fastanvil.
fn written_region() -> Vec<u8> {
    let names = [
        "minecraft:air",
        "minecraft:stone",
        "minecraft:glass",
        "minecraft:water",
    ];
    let mut region = Region::create(Cursor::new(Vec::new())).expect("create");
    for cx in [1, 2] {
        let cz = -1;
        let sections = [-1i8, 2]
            .iter()
            .map(|&sy| {
                // 4 bits a block, 16 to a long.
                let mut longs = vec![0i64; 256];
                for i in 0..4096 {
                    let (x, z, y) = (i & 15, (i >> 4) & 15, i >> 8);
                    let v = pattern(
                        cx * 16 + x as i32,
                        i32::from(sy) * 16 + y as i32,
                        cz * 16 + z as i32,
                    );
                    longs[i / 16] |= (v as i64) << ((i % 16) * 4);
                }
                SectionOut {
                    y: sy,
                    block_states: StatesOut {
                        palette: names
                            .iter()
                            .map(|n| StateOut {
                                name: (*n).to_owned(),
                            })
                            .collect(),
                        data: Some(fastnbt::LongArray::new(longs)),
                    },
                }
            })
            .collect();
        let chunk = ChunkOut {
            data_version: 3337,
            x_pos: cx,
            z_pos: cz,
            y_pos: -4,
            status: "minecraft:full".into(),
            sections,
        };
        let nbt = fastnbt::to_bytes(&chunk).expect("nbt");
        // The region of chunk (cx, -1) is (0, -1): in-region position (cx, 31).
        region.write_chunk(cx as usize, 31, &nbt).expect("write");
    }
    region.into_inner().expect("bytes").into_inner()
}

/// Every block of a written region at an offset that lines up with nothing, against the
/// pattern it was written with; chunks around it that no section overlaps are not loaded.
#[test]
fn a_written_region_at_any_offset() {
    let bytes = written_region();
    for offset in [
        WorldPos::ZERO,
        WorldPos::new(5, -3, 7),
        WorldPos::new(i128::MAX - 100, 17, -(1 << 100)),
    ] {
        let mut palette = Palette::new();
        let world =
            anvil::region(&bytes, offset, &mut palette, anvil::Names::Plain).expect("imports");
        let ids = [
            "minecraft:air",
            "minecraft:stone",
            "minecraft:glass",
            "minecraft:water",
        ]
        .map(|n| palette.get(n).expect("named"));
        for cx in [1, 2] {
            for sy in [-1, 2] {
                for x in 0..16 {
                    for y in 0..16 {
                        for z in 0..16 {
                            let (bx, by, bz) = (cx * 16 + x, sy * 16 + y, -16 + z);
                            let at = WorldPos::new(
                                offset.x + i128::from(bx),
                                offset.y + i128::from(by),
                                offset.z + i128::from(bz),
                            );
                            assert_eq!(
                                world.get_voxel(&at),
                                Some(ids[pattern(bx, by, bz)]),
                                "offset {offset}, block ({bx}, {by}, {bz})"
                            );
                        }
                    }
                }
            }
        }
        // Between the two sections of a column (y 0..32) nothing was written: air where a
        // chunk is loaded, unloaded elsewhere.
        let between = WorldPos::new(offset.x + 20, offset.y + 10, offset.z - 8);
        assert_ne!(world.get_voxel(&between).map(|id| id.is_air()), Some(false));
        assert_eq!(palette.get("minecraft:glass"), Some(VoxelId(2)));
    }
    // Past the edge of the i128 world: an error.
    let mut palette = Palette::new();
    assert_eq!(
        anvil::region(
            &bytes,
            WorldPos::new(i128::MAX - 10, 0, 0),
            &mut palette,
            anvil::Names::Plain
        )
        .map(|w| w.chunk_count()),
        Err(ImportError::OutsideWorld)
    );
}

/// Bad files give errors: cut short anywhere, a header pointing past the end or into itself,
/// an unknown or unsupported compression, a decompression bomb, bytes of another format.
#[test]
fn bad_regions_are_errors() {
    let good = written_region();
    let import = |bytes: &[u8]| {
        let mut palette = Palette::new();
        anvil::region(bytes, WorldPos::ZERO, &mut palette, anvil::Names::Plain)
            .map(|w| w.chunk_count())
    };
    assert_eq!(import(&[]), Ok(0), "an empty file is an empty region");
    for cut in [1, 100, 4096, 8191, 8192, 8200] {
        assert!(import(&good[..cut]).is_err(), "cut at {cut}");
    }
    // Header entries: past the end, into the header.
    let mut past = good.clone();
    past[4 * (1 + 31 * 32)..4 * (1 + 31 * 32) + 3].copy_from_slice(&[0x7F, 0xFF, 0xFF]);
    assert!(matches!(import(&past), Err(ImportError::Truncated(_))));
    let mut into = good.clone();
    into[4 * (1 + 31 * 32)..4 * (1 + 31 * 32) + 3].copy_from_slice(&[0, 0, 1]);
    assert!(matches!(import(&into), Err(ImportError::Corrupt(_))));
    // The compression byte of the column at (1, 31).
    let entry = u32::from_be_bytes(
        good[4 * (1 + 31 * 32)..4 * (1 + 31 * 32) + 4]
            .try_into()
            .expect("4"),
    );
    let start = (entry >> 8) as usize * 4096;
    for (kind, want) in [(4u8, "unsupported"), (130, "unsupported"), (9, "corrupt")] {
        let mut bad = good.clone();
        bad[start + 4] = kind;
        let err = import(&bad).expect_err("bad compression");
        assert!(err.to_string().contains(want), "{kind}: {err}");
    }
    // Zlib of garbage.
    let mut garbage = good.clone();
    for b in &mut garbage[start + 7..start + 60] {
        *b ^= 0x5A;
    }
    assert!(import(&garbage).is_err());
    // A bomb: 64 MiB of zeros compress to about 64 KiB.
    let mut bomb = vec![0u8; 8192];
    let zeros = vec![0u8; 64 << 20];
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut z, &zeros).expect("compress");
    let packed = z.finish().expect("compress");
    let sectors = (packed.len() + 5).div_ceil(4096);
    bomb[0..4].copy_from_slice(&((2u32 << 8) | sectors as u32).to_be_bytes());
    bomb.extend_from_slice(&(packed.len() as u32 + 1).to_be_bytes());
    bomb.push(2);
    bomb.extend_from_slice(&packed);
    bomb.resize(8192 + sectors * 4096, 0);
    assert!(
        matches!(import(&bomb), Err(ImportError::TooLarge(_))),
        "{:?}",
        import(&bomb)
    );
    // Another format.
    let png = b"\x89PNG\r\n\x1a\n".repeat(2000);
    assert!(import(&png).is_err());
}

/// A folder of region files imports as the regions in it; other files are left alone; a
/// folder that cannot be read is an error naming it.
#[test]
fn a_folder_of_regions() {
    let dir = std::env::temp_dir().join(format!("voxcast-import-folder-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp folder");
    std::fs::write(dir.join("r.0.-1.mca"), written_region()).expect("write");
    std::fs::write(dir.join("level.dat"), b"not a region").expect("write");
    let mut palette = Palette::new();
    let world =
        anvil::folder(&dir, WorldPos::ZERO, &mut palette, anvil::Names::Plain).expect("imports");
    let mut alone = Palette::new();
    let want = anvil::region(
        &written_region(),
        WorldPos::ZERO,
        &mut alone,
        anvil::Names::Plain,
    )
    .expect("imports");
    assert_eq!(world.chunk_count(), want.chunk_count());
    assert_eq!(palette, alone);
    std::fs::remove_dir_all(&dir).expect("clean up");
    let missing = anvil::folder(&dir, WorldPos::ZERO, &mut palette, anvil::Names::Plain);
    assert!(
        matches!(missing, Err(ImportError::Io { .. })),
        "{:?}",
        missing.map(|w| w.chunk_count())
    );
}

/// The presets name what their docs say.
#[test]
fn see_through_presets() {
    for n in [
        "minecraft:air",
        "minecraft:cave_air",
        "minecraft:water",
        "minecraft:glass",
        "minecraft:red_stained_glass_pane",
        "minecraft:oak_leaves",
        "minecraft:poppy",
        "minecraft:oak_sapling",
        "minecraft:short_grass",
    ] {
        assert!(anvil::see_through(n), "{n}");
    }
    for n in [
        "minecraft:stone",
        "minecraft:grass_block",
        "minecraft:oak_log",
        "minecraft:lava",
        "minecraft:glowstone",
    ] {
        assert!(!anvil::see_through(n), "{n}");
    }
    assert!(anvil::is_glass("minecraft:glass") && !anvil::is_water("minecraft:glass"));
}
