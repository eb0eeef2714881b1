//! Minecraft Java Edition Anvil regions (`.mca`, 1.18 and later) into a [`VoxelWorld`].
//!
//! A region holds up to 32 × 32 chunk columns of 16 × 16 blocks, each a tower of 16³
//! sections. Block `(x, y, z)` of Minecraft (y up, from -64 in 1.18) becomes voxel
//! `offset + (x, y, z)`; its name becomes an id through the caller's [`Palette`]. A voxcast
//! chunk (32³) is loaded wherever a section of the region overlaps it; the parts of it no
//! section covers are air. Columns are read with the chunk positions they store (`xPos`,
//! `zPos`), so a region file keeps its place in the Minecraft world whatever its file name.
//!
//! Limits, so that a file cannot make the importer allocate what its size does not justify: a
//! column decompresses to at most [`MAX_COLUMN_BYTES`]; a section's palette holds at most 4096
//! entries and its data exactly the longs its palette needs.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use rayon::prelude::*;
use serde::Deserialize;
use voxcast::{ChunkPos, VoxelId, VoxelWorld, WorldPos};

use crate::{ImportError, Palette, assemble};

/// The most bytes one chunk column may decompress to (real columns take well under 1 MiB).
pub const MAX_COLUMN_BYTES: usize = 16 << 20;

/// How block names become palette keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Names {
    /// The block's name alone (`minecraft:oak_log`): one id per block type.
    #[default]
    Plain,
    /// The name with its properties in Minecraft's syntax, sorted by key
    /// (`minecraft:oak_log[axis=y]`): one id per block state.
    WithProperties,
}

/// The name without its namespace (`minecraft:`).
fn bare(name: &str) -> &str {
    name.strip_prefix("minecraft:").unwrap_or(name)
}

/// Whether `name` (without properties) is one of the air variants.
#[must_use]
pub fn is_air(name: &str) -> bool {
    matches!(bare(name), "air" | "cave_air" | "void_air")
}

/// Whether `name` is water or a bubble column.
#[must_use]
pub fn is_water(name: &str) -> bool {
    matches!(bare(name), "water" | "bubble_column")
}

/// Whether `name` is glass or a glass pane, of any colour.
#[must_use]
pub fn is_glass(name: &str) -> bool {
    let n = bare(name);
    n.ends_with("glass") || n.ends_with("glass_pane")
}

/// Whether `name` is leaves of any tree.
#[must_use]
pub fn is_leaves(name: &str) -> bool {
    bare(name).ends_with("leaves")
}

/// Whether `name` is a plant or a small thing a ray usually passes: grass, ferns, flowers,
/// saplings, crops, vines, kelp and seagrass, mushrooms, carpets, torches, cobwebs.
#[must_use]
pub fn is_plant(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "short_grass",
        "grass",
        "tall_grass",
        "fern",
        "large_fern",
        "dead_bush",
        "seagrass",
        "tall_seagrass",
        "kelp",
        "kelp_plant",
        "vine",
        "glow_lichen",
        "sugar_cane",
        "wheat",
        "carrots",
        "potatoes",
        "beetroots",
        "sweet_berry_bush",
        "dandelion",
        "poppy",
        "blue_orchid",
        "allium",
        "azure_bluet",
        "oxeye_daisy",
        "cornflower",
        "lily_of_the_valley",
        "sunflower",
        "lilac",
        "rose_bush",
        "peony",
        "torch",
        "wall_torch",
        "light",
        "cobweb",
        "hanging_roots",
        "spore_blossom",
    ];
    let n = bare(name);
    EXACT.contains(&n)
        || n.ends_with("_sapling")
        || n.ends_with("_tulip")
        || n.ends_with("_mushroom")
        || n.ends_with("_carpet")
}

/// Whether a block usually lets a ray through: [`is_air`], [`is_water`], [`is_glass`],
/// [`is_leaves`] or [`is_plant`]. A preset for [`Palette::filter_passing`], which passes the
/// name without properties; combine the others for a rule of your own (sight through glass
/// but not water: `|n| is_glass(n) || is_plant(n)`).
#[must_use]
pub fn see_through(name: &str) -> bool {
    is_air(name) || is_water(name) || is_glass(name) || is_leaves(name) || is_plant(name)
}

/// One region's bytes into a world: every column's sections, each block's name through
/// `palette` (new names get new ids there, in file order), block `(x, y, z)` at voxel
/// `offset + (x, y, z)`. An empty file is an empty region.
///
/// # Errors
/// [`ImportError::Truncated`], [`ImportError::Corrupt`], [`ImportError::TooLarge`] or
/// [`ImportError::Unsupported`] (chunks older than 1.18, LZ4 or external chunk storage) for a
/// bad file; [`ImportError::TooManyBlockTypes`]; [`ImportError::OutsideWorld`] when the offset
/// puts a block outside the i128 world. Nothing is imported then, but `palette` may hold the
/// names met before the error.
pub fn region(
    bytes: &[u8],
    offset: WorldPos,
    palette: &mut Palette,
    names: Names,
) -> Result<VoxelWorld, ImportError> {
    regions(&[bytes], offset, palette, names)
}

/// Every region file of `folder` (the files named `r.<x>.<z>.mca`, in name order) into one
/// world, as [`region`] reads one.
///
/// # Errors
/// [`ImportError::Io`] when the folder or a file cannot be read; otherwise as [`region`], the
/// message naming the file.
pub fn folder(
    folder: &Path,
    offset: WorldPos,
    palette: &mut Palette,
    names: Names,
) -> Result<VoxelWorld, ImportError> {
    let io = |path: &Path, e: std::io::Error| ImportError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let mut paths: Vec<_> = std::fs::read_dir(folder)
        .map_err(|e| io(folder, e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("r.") && n.ends_with(".mca"))
        })
        .collect();
    paths.sort();
    let files = paths
        .iter()
        .map(|p| std::fs::read(p).map_err(|e| io(p, e)))
        .collect::<Result<Vec<_>, _>>()?;
    let named: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let slices: Vec<(&str, &[u8])> = named
        .iter()
        .map(String::as_str)
        .zip(files.iter().map(Vec::as_slice))
        .collect();
    regions_named(&slices, offset, palette, names)
}

/// The regions of `files` into one world.
fn regions(
    files: &[&[u8]],
    offset: WorldPos,
    palette: &mut Palette,
    names: Names,
) -> Result<VoxelWorld, ImportError> {
    regions_named(
        &files.iter().map(|b| ("", *b)).collect::<Vec<_>>(),
        offset,
        palette,
        names,
    )
}

/// The regions of `files` (each with the name its errors carry; empty for none) into one
/// world. Memory stays within a constant factor of the files' size: the columns decompress
/// to at most [`max_nbt_bytes`] of NBT in all, and the world fills at most [`max_chunks`]
/// chunks.
fn regions_named(
    files: &[(&str, &[u8])],
    offset: WorldPos,
    palette: &mut Palette,
    names: Names,
) -> Result<VoxelWorld, ImportError> {
    let total: usize = files.iter().map(|(_, b)| b.len()).sum();
    let budget = std::sync::atomic::AtomicUsize::new(max_nbt_bytes(total));
    let mut columns = Vec::new();
    for (name, bytes) in files {
        columns.extend(read_columns(bytes, names, &budget).map_err(|e| e.in_file(name))?);
    }
    // Names to ids in file order (columns in region order, sections bottom up); a section met
    // again (the same column and y) replaces the earlier one.
    let mut sections: HashMap<[i128; 3], PendingSection> = HashMap::new();
    for column in columns {
        for s in column.sections {
            let ids = s
                .keys
                .iter()
                .map(|k| palette.id(k))
                .collect::<Result<Vec<_>, _>>()?;
            sections.insert(
                [i128::from(column.x), i128::from(s.y), i128::from(column.z)],
                (ids, s.data),
            );
        }
    }
    let decoded: Vec<([i128; 3], SectionIds)> = sections
        .into_par_iter()
        .map(|(at, (ids, data))| decode_section(&ids, data.as_deref()).map(|s| (at, s)))
        .collect::<Result<_, _>>()?;
    build_world(decoded, offset, max_chunks(total))
}

/// The most NBT the columns of region files of `len` bytes in all may decompress to: 16 MiB
/// plus 32 bytes per byte of the files (real regions take about 10).
#[must_use]
pub const fn max_nbt_bytes(len: usize) -> usize {
    (16 << 20) + len.saturating_mul(32)
}

/// The most voxcast chunks region files of `len` bytes in all may fill: 64 plus one per
/// 512 bytes of the files (fastanvil's 4.2 MB region fills 2,028 of its 8,400).
#[must_use]
pub const fn max_chunks(len: usize) -> usize {
    64 + len / 512
}

/// A section's palette as ids and its packed indices, before decoding.
type PendingSection = (Vec<VoxelId>, Option<Vec<i64>>);

/// One chunk column as read: its chunk position and its sections.
struct Column {
    x: i32,
    z: i32,
    sections: Vec<RawSection>,
}

/// A section as read: its y, its palette as keys, its packed indices.
struct RawSection {
    y: i8,
    keys: Vec<String>,
    data: Option<Vec<i64>>,
}

/// A section's ids, in Minecraft's order (`x + 16·z + 256·y`).
enum SectionIds {
    Uniform(VoxelId),
    Dense(Box<[VoxelId]>),
}

impl SectionIds {
    #[inline]
    fn get(&self, i: usize) -> VoxelId {
        match self {
            Self::Uniform(id) => *id,
            Self::Dense(ids) => ids[i],
        }
    }
}

#[derive(Deserialize)]
struct ChunkNbt {
    #[serde(rename = "xPos")]
    x_pos: Option<i32>,
    #[serde(rename = "zPos")]
    z_pos: Option<i32>,
    #[serde(rename = "DataVersion")]
    data_version: Option<i32>,
    sections: Option<Vec<SectionNbt>>,
    #[serde(rename = "Level")]
    level: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct SectionNbt {
    #[serde(rename = "Y")]
    y: i8,
    block_states: Option<BlockStatesNbt>,
}

#[derive(Deserialize)]
struct BlockStatesNbt {
    palette: Vec<BlockStateNbt>,
    data: Option<fastnbt::LongArray>,
}

#[derive(Deserialize)]
struct BlockStateNbt {
    #[serde(rename = "Name")]
    name: String,
    #[serde(rename = "Properties")]
    properties: Option<std::collections::BTreeMap<String, String>>,
}

/// The columns of one region file, in the order of its header.
fn read_columns(
    bytes: &[u8],
    names: Names,
    budget: &std::sync::atomic::AtomicUsize,
) -> Result<Vec<Column>, ImportError> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    if bytes.len() < 8192 {
        return Err(ImportError::Truncated(format!(
            "{} bytes, less than the 8192-byte header",
            bytes.len()
        )));
    }
    let columns: Vec<Option<Column>> = (0..1024)
        .into_par_iter()
        .map(|i| read_column(bytes, i, names, budget))
        .collect::<Result<_, _>>()?;
    Ok(columns.into_iter().flatten().collect())
}

/// Column `i` of the header, `None` where the region has none.
fn read_column(
    bytes: &[u8],
    i: usize,
    names: Names,
    budget: &std::sync::atomic::AtomicUsize,
) -> Result<Option<Column>, ImportError> {
    let entry = u32::from_be_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap_or_default());
    let (sector, count) = ((entry >> 8) as usize, (entry & 0xFF) as usize);
    if sector == 0 && count == 0 {
        return Ok(None);
    }
    if sector < 2 {
        return Err(ImportError::Corrupt(format!(
            "column {i} starts in the header (sector {sector})"
        )));
    }
    let past = || ImportError::Truncated(format!("column {i} lies past the end"));
    let start = sector.checked_mul(4096).ok_or_else(past)?;
    let head = bytes
        .get(start..start.checked_add(5).ok_or_else(past)?)
        .ok_or_else(|| ImportError::Truncated(format!("column {i} starts past the end")))?;
    let length = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    if length == 0 || length.saturating_add(4) > count * 4096 {
        return Err(ImportError::Corrupt(format!(
            "column {i}: {length} bytes in {count} sectors"
        )));
    }
    let data = bytes
        .get(start + 5..start.saturating_add(4).saturating_add(length))
        .ok_or_else(|| ImportError::Truncated(format!("column {i} ends past the end")))?;
    let nbt = decompress(head[4], data, i)?;
    // All columns together, within the budget of the files' size.
    let spent = budget.fetch_update(
        std::sync::atomic::Ordering::Relaxed,
        std::sync::atomic::Ordering::Relaxed,
        |left| left.checked_sub(nbt.len()),
    );
    if spent.is_err() {
        return Err(ImportError::TooLarge(format!(
            "the columns decompress to more than {} bytes in all",
            max_nbt_bytes(bytes.len())
        )));
    }
    check_nbt(&nbt).map_err(|e| ImportError::Corrupt(format!("column {i}: {e}")))?;
    let chunk: ChunkNbt =
        fastnbt::from_bytes(&nbt).map_err(|e| ImportError::Corrupt(format!("column {i}: {e}")))?;
    let Some(sections) = chunk.sections else {
        if chunk.level.is_some() {
            return Err(ImportError::Unsupported(format!(
                "column {i} is older than Minecraft 1.18 (data version {:?})",
                chunk.data_version
            )));
        }
        return Ok(None);
    };
    let (Some(x), Some(z)) = (chunk.x_pos, chunk.z_pos) else {
        return Err(ImportError::Corrupt(format!("column {i} has no position")));
    };
    let sections = sections
        .into_iter()
        .filter_map(|s| {
            let states = s.block_states?;
            Some(RawSection {
                y: s.y,
                keys: states.palette.iter().map(|b| key(b, names)).collect(),
                data: states.data.map(|d| d.to_vec()),
            })
        })
        .collect();
    Ok(Some(Column { x, z, sections }))
}

/// The deepest nesting of lists and compounds accepted (Minecraft's own limit).
const MAX_NBT_DEPTH: usize = 512;

/// Whether `b` is well-formed NBT with a compound at its root: every tag known, every length
/// within the bytes and not negative, no non-empty list of end tags, nesting at most
/// [`MAX_NBT_DEPTH`] deep. Checked before fastnbt reads the bytes, which recurses once a
/// level and panics on such a list.
fn check_nbt(b: &[u8]) -> Result<(), String> {
    enum Frame {
        Compound,
        List { tag: u8, left: usize },
    }
    let mut at = 0usize;
    let mut take = |n: usize| -> Result<&[u8], String> {
        let end = at
            .checked_add(n)
            .filter(|&e| e <= b.len())
            .ok_or_else(|| "the NBT ends early".to_owned())?;
        let s = &b[at..end];
        at = end;
        Ok(s)
    };
    let len = |s: &[u8]| -> Result<usize, String> {
        let n = i32::from_be_bytes([s[0], s[1], s[2], s[3]]);
        usize::try_from(n).map_err(|_| format!("a negative length {n}"))
    };
    let short = |s: &[u8]| usize::from(u16::from_be_bytes([s[0], s[1]]));
    if take(1)?[0] != 10 {
        return Err("the NBT root is not a compound".into());
    }
    let name = short(take(2)?);
    take(name)?;
    let mut stack = vec![Frame::Compound];
    while let Some(top) = stack.last_mut() {
        let tag = match top {
            Frame::Compound => {
                let tag = take(1)?[0];
                if tag == 0 {
                    stack.pop();
                    continue;
                }
                let name = short(take(2)?);
                take(name)?;
                tag
            }
            Frame::List { tag, left } => {
                if *left == 0 {
                    stack.pop();
                    continue;
                }
                *left -= 1;
                *tag
            }
        };
        match tag {
            1 => {
                take(1)?;
            }
            2 => {
                take(2)?;
            }
            3 | 5 => {
                take(4)?;
            }
            4 | 6 => {
                take(8)?;
            }
            7 => {
                let n = len(take(4)?)?;
                take(n)?;
            }
            8 => {
                let n = short(take(2)?);
                take(n)?;
            }
            11 | 12 => {
                let n = len(take(4)?)?;
                let size = if tag == 11 { 4 } else { 8 };
                take(n.checked_mul(size).ok_or("an array too long")?)?;
            }
            9 => {
                let element = take(1)?[0];
                let n = len(take(4)?)?;
                if element > 12 || (element == 0 && n > 0) {
                    return Err(format!("a list of {n} elements of tag {element}"));
                }
                stack.push(Frame::List {
                    tag: element,
                    left: n,
                });
            }
            10 => stack.push(Frame::Compound),
            t => return Err(format!("an unknown tag {t}")),
        }
        if stack.len() > MAX_NBT_DEPTH {
            return Err(format!("nesting deeper than {MAX_NBT_DEPTH}"));
        }
    }
    Ok(())
}

/// The palette key of a block state.
fn key(b: &BlockStateNbt, names: Names) -> String {
    match (names, &b.properties) {
        (Names::WithProperties, Some(props)) if !props.is_empty() => {
            let props: Vec<String> = props.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{}[{}]", b.name, props.join(","))
        }
        _ => b.name.clone(),
    }
}

/// A column's NBT, decompressed as its compression byte says, at most [`MAX_COLUMN_BYTES`].
fn decompress(kind: u8, data: &[u8], i: usize) -> Result<Vec<u8>, ImportError> {
    let limit = MAX_COLUMN_BYTES as u64 + 1;
    let mut out = Vec::new();
    let read = match kind {
        1 => flate2::read::GzDecoder::new(data)
            .take(limit)
            .read_to_end(&mut out),
        2 => flate2::read::ZlibDecoder::new(data)
            .take(limit)
            .read_to_end(&mut out),
        3 => {
            out.extend_from_slice(data);
            Ok(data.len())
        }
        4 => {
            return Err(ImportError::Unsupported(format!(
                "column {i} is LZ4-compressed"
            )));
        }
        k if k >= 128 => {
            return Err(ImportError::Unsupported(format!(
                "column {i} is stored in an external file"
            )));
        }
        k => {
            return Err(ImportError::Corrupt(format!(
                "column {i}: unknown compression {k}"
            )));
        }
    };
    read.map_err(|e| ImportError::Corrupt(format!("column {i}: {e}")))?;
    if out.len() > MAX_COLUMN_BYTES {
        return Err(ImportError::TooLarge(format!(
            "column {i} decompresses to more than {MAX_COLUMN_BYTES} bytes"
        )));
    }
    Ok(out)
}

/// A section's ids from its palette (as ids) and its packed indices: `bits` per block (at
/// least 4), `64 / bits` to a long, none across longs.
fn decode_section(palette: &[VoxelId], data: Option<&[i64]>) -> Result<SectionIds, ImportError> {
    let n = palette.len();
    if n == 0 || n > 4096 {
        return Err(ImportError::Corrupt(format!(
            "a section's palette has {n} entries"
        )));
    }
    let Some(data) = data else {
        return if n == 1 {
            Ok(SectionIds::Uniform(palette[0]))
        } else {
            Err(ImportError::Corrupt(format!(
                "a section of {n} block states has no data"
            )))
        };
    };
    let bits = (usize::BITS - (n - 1).leading_zeros()).max(4) as usize;
    let per_long = 64 / bits;
    let needed = 4096usize.div_ceil(per_long);
    if data.len() != needed {
        return Err(ImportError::Corrupt(format!(
            "a section of {n} block states has {} longs of data, not {needed}",
            data.len()
        )));
    }
    let mask = (1u64 << bits) - 1;
    let mut ids = vec![VoxelId::AIR; 4096].into_boxed_slice();
    for (i, id) in ids.iter_mut().enumerate() {
        let word = data[i / per_long] as u64;
        let v = (word >> ((i % per_long) * bits) & mask) as usize;
        *id = *palette.get(v).ok_or_else(|| {
            ImportError::Corrupt(format!("a block state index {v} past a palette of {n}"))
        })?;
    }
    Ok(SectionIds::Dense(ids))
}

/// The world of `sections` (section coordinates, in sections, and ids), block `(x, y, z)` at
/// `offset + (x, y, z)`.
fn build_world(
    sections: Vec<([i128; 3], SectionIds)>,
    offset: WorldPos,
    max_chunks: usize,
) -> Result<VoxelWorld, ImportError> {
    let index: HashMap<[i128; 3], usize> = sections
        .iter()
        .enumerate()
        .map(|(i, (at, _))| (*at, i))
        .collect();
    // Every voxcast chunk a section overlaps.
    let mut chunks = Vec::new();
    for (at, _) in &sections {
        let lo = assemble::offset(offset, at.map(|c| c * 16))?;
        let hi = assemble::offset(lo, [15; 3])?;
        let (a, b) = (lo.chunk(), hi.chunk());
        for x in a.x..=b.x {
            for y in a.y..=b.y {
                for z in a.z..=b.z {
                    chunks.push(ChunkPos::new(x, y, z));
                }
            }
        }
    }
    chunks.sort_unstable();
    chunks.dedup();
    if chunks.len() > max_chunks {
        return Err(ImportError::TooLarge(format!(
            "the sections fill {} chunks, more than the {max_chunks} the files' size allows",
            chunks.len()
        )));
    }
    assemble::world(chunks, |pos, ids| {
        // The Minecraft blocks of this chunk (world voxel minus the offset), copied section by
        // section: at most 3 sections a side overlap a chunk.
        let origin = pos.origin();
        let mc0 = [
            origin.x - offset.x,
            origin.y - offset.y,
            origin.z - offset.z,
        ];
        let s_lo = mc0.map(|c| c.div_euclid(16));
        let s_hi = mc0.map(|c| (c + 31).div_euclid(16));
        for sx in s_lo[0]..=s_hi[0] {
            for sy in s_lo[1]..=s_hi[1] {
                for sz in s_lo[2]..=s_hi[2] {
                    let Some(&k) = index.get(&[sx, sy, sz]) else {
                        continue;
                    };
                    let section = &sections[k].1;
                    let s0 = [sx * 16, sy * 16, sz * 16];
                    // The overlap, in chunk-local voxels.
                    let lo: [usize; 3] =
                        std::array::from_fn(|a| (s0[a].max(mc0[a]) - mc0[a]) as usize);
                    let hi: [usize; 3] =
                        std::array::from_fn(|a| ((s0[a] + 15).min(mc0[a] + 31) - mc0[a]) as usize);
                    for lz in lo[2]..=hi[2] {
                        for ly in lo[1]..=hi[1] {
                            let row = 32 * ly + 1024 * lz;
                            let (y, z) = (
                                (mc0[1] + ly as i128 - s0[1]) as usize,
                                (mc0[2] + lz as i128 - s0[2]) as usize,
                            );
                            for lx in lo[0]..=hi[0] {
                                let x = (mc0[0] + lx as i128 - s0[0]) as usize;
                                ids[row + lx] = section.get(x + 16 * z + 256 * y);
                            }
                        }
                    }
                }
            }
        }
    })
}
