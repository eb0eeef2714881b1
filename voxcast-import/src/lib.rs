//! # voxcast-import
//!
//! Worlds people already have, as [`voxcast`] worlds, to raycast exactly:
//! - [`anvil`] (feature `anvil`): Minecraft Java Edition regions (`.mca`, 1.18 and later), a
//!   file or a folder of them, at any i128 offset, block names to ids through a [`Palette`]
//!   the caller can read and seed, and [`MaterialFilter`](voxcast::MaterialFilter) presets for
//!   what usually lets a ray through;
//! - [`shapes`]: Minecraft block states to voxcast shapes (slabs, stairs, fences, doors,
//!   torches, plants, ...), set in a world by [`Palette::apply_shapes`];
//! - [`vox`] (feature `vox`): MagicaVoxel models and scenes (`.vox`), palette index `i` as id
//!   `i + 1`, the scene graph's translations and rotations applied.
//!
//! Both build each chunk of the world from its ids in one pass
//! ([`Chunk::from_ids`](voxcast::Chunk::from_ids)) on all threads. Bad files (truncated,
//! corrupt, of another format, claiming absurd sizes) give an [`ImportError`], never a panic,
//! and nothing is allocated that the file's size does not justify.
//!
//! ```no_run
//! # #[cfg(feature = "anvil")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use voxcast::{RaycastOptions, VoxelRay, WorldPos, voxel_raycast_with};
//! use voxcast::glam::Vec3;
//! use voxcast_import::{Palette, anvil};
//!
//! let bytes = std::fs::read("r.0.0.mca")?;
//! let mut palette = Palette::new();
//! let world = anvil::region(&bytes, WorldPos::ZERO, &mut palette, anvil::Names::Plain)?;
//! // What stops a ray is the game's choice: here everything but air, water, glass, leaves and
//! // plants.
//! let opts = RaycastOptions {
//!     blocks: palette.filter_passing(anvil::see_through),
//!     ..RaycastOptions::default()
//! };
//! let ray = VoxelRay::new(WorldPos::new(8, 120, 8), Vec3::splat(0.5), Vec3::NEG_Y, 300.0)?;
//! if let Some(hit) = voxel_raycast_with(&ray, &world, &opts).hit() {
//!     println!("{} at {}", palette.name(hit.voxel_type).unwrap_or("?"), hit.voxel_pos);
//! }
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "anvil"))]
//! # fn main() {}
//! ```

#[cfg(feature = "anvil")]
pub mod anvil;
mod palette;
pub mod shapes;
#[cfg(feature = "vox")]
pub mod vox;

pub use palette::Palette;

/// Why a file could not be imported. Nothing is imported from a file that gives an error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The file ends before what its own header says it holds.
    #[error("the file is truncated: {0}")]
    Truncated(String),
    /// The file is not of the expected format, or its data contradicts itself.
    #[error("the file is corrupt or of another format: {0}")]
    Corrupt(String),
    /// The file claims a size beyond what this importer accepts (the limit is in the message).
    #[error("the file claims an absurd size: {0}")]
    TooLarge(String),
    /// A version or encoding this importer does not read.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// More distinct block types than ids (`VoxelId` is 16 bits; id 0 is air).
    #[error("more than 65,535 block types")]
    TooManyBlockTypes,
    /// The world would reach past the i128 world at this offset.
    #[error("the offset puts the model outside the i128 world")]
    OutsideWorld,
    /// Reading a file or folder failed.
    #[error("{path}: {message}")]
    Io {
        /// The path that could not be read.
        path: String,
        /// The operating system's message.
        message: String,
    },
}

impl ImportError {
    /// The error with `file` named in its message (unchanged for an empty name).
    #[cfg(feature = "anvil")]
    pub(crate) fn in_file(self, file: &str) -> Self {
        if file.is_empty() {
            return self;
        }
        let name = |m: String| format!("{file}: {m}");
        match self {
            Self::Truncated(m) => Self::Truncated(name(m)),
            Self::Corrupt(m) => Self::Corrupt(name(m)),
            Self::TooLarge(m) => Self::TooLarge(name(m)),
            Self::Unsupported(m) => Self::Unsupported(name(m)),
            other => other,
        }
    }
}

/// Ids of voxels in world space, gathered into voxcast chunks: the last step of every importer.
#[cfg(any(feature = "anvil", feature = "vox"))]
pub(crate) mod assemble {
    use rayon::prelude::*;
    use voxcast::{CHUNK_VOLUME, Chunk, ChunkPos, VoxelId, VoxelWorld, WorldPos};

    use crate::ImportError;

    /// Builds the world of the chunks at `positions`, each from the ids `fill` writes into an
    /// all-air buffer in local order (`x + 32·y + 1024·z`), in one pass on all threads.
    pub(crate) fn world(
        positions: Vec<ChunkPos>,
        fill: impl Fn(ChunkPos, &mut [VoxelId]) + Sync,
    ) -> Result<VoxelWorld, ImportError> {
        let built: Vec<(ChunkPos, Chunk)> = positions
            .into_par_iter()
            .map_init(
                || vec![VoxelId::AIR; CHUNK_VOLUME],
                |ids, pos| {
                    ids.fill(VoxelId::AIR);
                    fill(pos, ids);
                    Chunk::from_ids(ids).map(|c| (pos, c))
                },
            )
            .collect::<Result<_, _>>()
            .map_err(|e| ImportError::Corrupt(e.to_string()))?;
        let mut world = VoxelWorld::new();
        world
            .insert_chunks(built)
            .map_err(|_| ImportError::OutsideWorld)?;
        Ok(world)
    }

    /// `base + delta`, or [`ImportError::OutsideWorld`].
    pub(crate) fn offset(base: WorldPos, delta: [i128; 3]) -> Result<WorldPos, ImportError> {
        base.checked_add(delta).ok_or(ImportError::OutsideWorld)
    }
}
