//! Blocks that are not cubes: a shape per voxel id, made of axis-aligned boxes on a 1/16 grid.
//!
//! A world carries a [`ShapeTable`] ([`VoxelWorld::set_shape`](crate::VoxelWorld::set_shape)); the
//! ray's box test is in `cpu_ref::shapes` (and its twin in `shaders/shapes.wgsl`).
//! An id without an entry is the full cube, as every id is in a world without shapes (which
//! costs nothing more). A shaped id that stops a ray (its [`MaterialFilter`](crate::MaterialFilter)) stops it only
//! where the ray meets one of its boxes; [`BlockShape::Empty`] never stops it.
//!
//! The rule, one definition for the CPU and the GPU, is the crate docs' "Shapes" section.
//!
//! A shape of the one box `[0, 16]³` answers exactly as the cube does (tested).

use super::VoxelId;

/// Sixteenths per voxel edge: box bounds are whole numbers of them, `0..=16`.
pub const SHAPE_GRID: u8 = 16;

/// Most boxes a [`BlockShape::Boxes`] may hold: enough for stairs (2 or 3), a fence, wall or
/// pane with all four connections (5) and a door or trapdoor (1).
pub const MAX_SHAPE_BOXES: usize = 8;

/// An axis-aligned box inside a voxel, in sixteenths of the voxel: it covers `min/16` to
/// `max/16` on each axis, measured from the voxel's low corner (so `[0, 0, 0]` to
/// `[16, 8, 16]` is a bottom slab). Made by [`ShapeBox::new`], which checks the bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ShapeBox {
    min: [u8; 3],
    max: [u8; 3],
}

impl ShapeBox {
    /// The full voxel, `[0, 16]³`.
    pub const FULL: Self = Self {
        min: [0; 3],
        max: [16; 3],
    };

    /// A box from its low and high corners in sixteenths (`0..=16`), low below high on every
    /// axis.
    ///
    /// # Errors
    /// [`ShapeError::OutsideVoxel`] for a bound above 16, [`ShapeError::Degenerate`] where a
    /// low bound is not below the high one (an inverted or flat box).
    pub const fn new(min: [u8; 3], max: [u8; 3]) -> Result<Self, ShapeError> {
        let mut a = 0;
        while a < 3 {
            if min[a] > SHAPE_GRID || max[a] > SHAPE_GRID {
                return Err(ShapeError::OutsideVoxel { min, max });
            }
            if min[a] >= max[a] {
                return Err(ShapeError::Degenerate { min, max });
            }
            a += 1;
        }
        Ok(Self { min, max })
    }

    /// A box from corners in voxels (`0.0..=1.0`), each a whole number of sixteenths, as
    /// block models write them divided by 16.
    ///
    /// # Errors
    /// [`ShapeError::OffGrid`] for a bound that is not a multiple of `1/16` (or not finite),
    /// then as [`ShapeBox::new`].
    pub fn from_voxels(min: [f32; 3], max: [f32; 3]) -> Result<Self, ShapeError> {
        let sixteenths = |v: f32| {
            let s = v * f32::from(SHAPE_GRID);
            if s.is_finite() && s.fract() == 0.0 && (0.0..=255.0).contains(&s) {
                Ok(s as u8)
            } else {
                Err(ShapeError::OffGrid { value: v })
            }
        };
        let lo = [
            sixteenths(min[0])?,
            sixteenths(min[1])?,
            sixteenths(min[2])?,
        ];
        let hi = [
            sixteenths(max[0])?,
            sixteenths(max[1])?,
            sixteenths(max[2])?,
        ];
        Self::new(lo, hi)
    }

    /// Low corner in sixteenths.
    #[must_use]
    pub const fn min(&self) -> [u8; 3] {
        self.min
    }

    /// High corner in sixteenths.
    #[must_use]
    pub const fn max(&self) -> [u8; 3] {
        self.max
    }

    /// The box packed as the GPU reads it: 5 bits per bound, `min` x, y, z then `max` x, y, z
    /// from bit 0.
    pub(crate) fn packed(&self) -> u32 {
        let b = [
            self.min[0],
            self.min[1],
            self.min[2],
            self.max[0],
            self.max[1],
            self.max[2],
        ];
        b.iter()
            .enumerate()
            .fold(0, |w, (i, &v)| w | u32::from(v) << (5 * i))
    }

    pub(crate) fn unpacked(w: u32) -> Self {
        let f = |i: u32| ((w >> (5 * i)) & 31) as u8;
        Self {
            min: [f(0), f(1), f(2)],
            max: [f(3), f(4), f(5)],
        }
    }
}

/// What a voxel id is to rays.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum BlockShape {
    /// The full voxel (every id's shape unless set).
    #[default]
    Cube,
    /// Nothing: rays pass through, whatever the material filter says (a flower that should
    /// not be targeted, a light block).
    Empty,
    /// One to [`MAX_SHAPE_BOXES`] boxes; they may overlap.
    Boxes(Vec<ShapeBox>),
}

/// Why a shape was refused.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ShapeError {
    /// A bound above 16 sixteenths.
    #[error("box {min:?}..{max:?} reaches outside its voxel: bounds are sixteenths in 0..=16")]
    OutsideVoxel {
        /// The low corner given.
        min: [u8; 3],
        /// The high corner given.
        max: [u8; 3],
    },
    /// A low bound not below its high bound.
    #[error(
        "box {min:?}..{max:?} is inverted or flat: each low bound must be below its high bound"
    )]
    Degenerate {
        /// The low corner given.
        min: [u8; 3],
        /// The high corner given.
        max: [u8; 3],
    },
    /// A bound in voxels that is not a whole number of sixteenths.
    #[error("bound {value} is not a multiple of 1/16 in 0..=1")]
    OffGrid {
        /// The bound given.
        value: f32,
    },
    /// More boxes than [`MAX_SHAPE_BOXES`].
    #[error("a shape has {count} boxes, at most {MAX_SHAPE_BOXES} are allowed")]
    TooManyBoxes {
        /// Boxes given.
        count: usize,
    },
    /// `BlockShape::Boxes` with no box (use `BlockShape::Empty`).
    #[error("a shape of no boxes: use BlockShape::Empty for a block rays pass through")]
    NoBoxes,
    /// A shape for air, which rays always pass.
    #[error("air (id 0) has no shape: rays always pass through it")]
    Air,
}

/// The shapes of a world's ids, in the form both the CPU and the GPU read: per id a word
/// (`0`: the cube; else bit 31, the index of the first box from bit 4, the count in bits
/// 0..4, 0 for [`BlockShape::Empty`]) and one packed word per box.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShapeTable {
    entries: Vec<u32>,
    boxes: Vec<u32>,
}

const SHAPED: u32 = 1 << 31;

impl ShapeTable {
    /// Whether every id is the cube (the fast path: nothing is looked up).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Sets the shape of `id`; [`BlockShape::Cube`] removes it.
    ///
    /// # Errors
    /// [`ShapeError::Air`] for id 0, [`ShapeError::NoBoxes`] or
    /// [`ShapeError::TooManyBoxes`] for a box list of the wrong length; the table is
    /// unchanged.
    pub fn set(&mut self, id: VoxelId, shape: &BlockShape) -> Result<(), ShapeError> {
        if id.is_air() {
            return Err(ShapeError::Air);
        }
        let entry = match shape {
            BlockShape::Cube => 0,
            BlockShape::Empty => SHAPED,
            BlockShape::Boxes(b) if b.is_empty() => return Err(ShapeError::NoBoxes),
            BlockShape::Boxes(b) if b.len() > MAX_SHAPE_BOXES => {
                return Err(ShapeError::TooManyBoxes { count: b.len() });
            }
            BlockShape::Boxes(b) => {
                // Replaced boxes are left in place until `compact`; a table is small.
                let first = self.boxes.len() as u32;
                self.boxes.extend(b.iter().map(ShapeBox::packed));
                SHAPED | first << 4 | b.len() as u32
            }
        };
        let i = usize::from(id.0);
        if self.entries.len() <= i {
            if entry == 0 {
                return Ok(());
            }
            self.entries.resize(i + 1, 0);
        }
        self.entries[i] = entry;
        self.compact();
        Ok(())
    }

    /// Drops trailing cube entries and boxes no entry refers to.
    fn compact(&mut self) {
        while self.entries.last() == Some(&0) {
            self.entries.pop();
        }
        let used: usize = self.entries.iter().map(|&e| (e & 15) as usize).sum();
        if used == self.boxes.len() {
            return;
        }
        let mut boxes = Vec::with_capacity(used);
        for e in &mut self.entries {
            if *e != 0 {
                let (first, count) = ((*e & !SHAPED) >> 4, *e & 15);
                let at = boxes.len() as u32;
                boxes.extend_from_slice(&self.boxes[first as usize..(first + count) as usize]);
                *e = SHAPED | at << 4 | count;
            }
        }
        self.boxes = boxes;
    }

    /// The shape of `id`.
    #[must_use]
    pub fn get(&self, id: VoxelId) -> BlockShape {
        match self.boxes_of(id) {
            None => BlockShape::Cube,
            Some([]) => BlockShape::Empty,
            Some(b) => BlockShape::Boxes(b.iter().map(|&w| ShapeBox::unpacked(w)).collect()),
        }
    }

    /// The packed boxes of a shaped `id` (empty for [`BlockShape::Empty`]); `None` for a cube.
    #[inline]
    pub(crate) fn boxes_of(&self, id: VoxelId) -> Option<&[u32]> {
        let e = *self.entries.get(usize::from(id.0))?;
        if e == 0 {
            return None;
        }
        let (first, count) = (((e & !SHAPED) >> 4) as usize, (e & 15) as usize);
        Some(&self.boxes[first..first + count])
    }

    /// The per-id words (see the type's docs), as the GPU uploads them.
    #[cfg(feature = "gpu")]
    #[must_use]
    pub(crate) fn entry_words(&self) -> &[u32] {
        &self.entries
    }

    /// The packed boxes, as the GPU uploads them.
    #[cfg(feature = "gpu")]
    #[must_use]
    pub(crate) fn box_words(&self) -> &[u32] {
        &self.boxes
    }
}
