//! World, chunk and local voxel coordinates.
//!
//! A [`WorldPos`] names one voxel of the i128 world; the voxel occupies `[p, p + 1)` on each axis.
//! Chunks are cubes of [`CHUNK_EDGE`]³ voxels. The split is floor-correct for negative
//! coordinates: it uses an arithmetic shift and a mask, never `/` or `%`, so world `-1` lies in
//! chunk `-1` at local `31`.

use glam::IVec3;

/// Edge length of a chunk in voxels (a power of two).
pub const CHUNK_EDGE: i128 = 32;
/// `log2(CHUNK_EDGE)`: the shift that turns a world coordinate into a chunk coordinate.
pub(crate) const CHUNK_SHIFT: u32 = 5;
/// Voxels in one chunk (`CHUNK_EDGE³`).
pub const CHUNK_VOLUME: usize = 32 * 32 * 32;
const LOCAL_MASK: i128 = CHUNK_EDGE - 1;

/// A voxel coordinate in the i128 world. The voxel covers `[x, x+1) × [y, y+1) × [z, z+1)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorldPos {
    /// X coordinate in voxels.
    pub x: i128,
    /// Y coordinate in voxels (up, by the convention of the examples).
    pub y: i128,
    /// Z coordinate in voxels.
    pub z: i128,
}

/// A chunk coordinate: the chunk covering world voxels `[32·c, 32·c + 31]` on each axis.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChunkPos {
    /// X chunk index.
    pub x: i128,
    /// Y chunk index.
    pub y: i128,
    /// Z chunk index.
    pub z: i128,
}

/// A voxel position inside its chunk, each component in `0..32`. [`LocalPos::new`] masks
/// its arguments into that range; a value built with larger fields is read modulo 32
/// everywhere it is used ([`crate::Chunk::get`], [`crate::Chunk::set`], [`ChunkPos::world`],
/// [`LocalPos::index`]), never out of bounds. Comparison and hashing see the fields as they
/// are: such a value is not equal to its masked form, so build keys with [`LocalPos::new`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalPos {
    /// X within the chunk, `0..32`.
    pub x: u8,
    /// Y within the chunk, `0..32`.
    pub y: u8,
    /// Z within the chunk, `0..32`.
    pub z: u8,
}

impl WorldPos {
    /// The voxel at the world origin.
    pub const ZERO: Self = Self::new(0, 0, 0);

    /// Builds a world position from its three coordinates.
    #[inline]
    #[must_use]
    pub const fn new(x: i128, y: i128, z: i128) -> Self {
        Self { x, y, z }
    }

    /// The chunk holding this voxel: `floor(p / 32)` per axis, exact for every i128 (including
    /// `i128::MIN`, which lies in chunk `i128::MIN >> 5`).
    #[inline]
    #[must_use]
    pub const fn chunk(self) -> ChunkPos {
        ChunkPos {
            x: self.x >> CHUNK_SHIFT,
            y: self.y >> CHUNK_SHIFT,
            z: self.z >> CHUNK_SHIFT,
        }
    }

    /// The position of this voxel inside its chunk: `p mod 32` in `0..32` (so `-1` gives `31`).
    #[inline]
    #[must_use]
    pub const fn local(self) -> LocalPos {
        LocalPos {
            x: (self.x & LOCAL_MASK) as u8,
            y: (self.y & LOCAL_MASK) as u8,
            z: (self.z & LOCAL_MASK) as u8,
        }
    }

    /// `self + offset`, or `None` where a component would leave the i128 range.
    #[inline]
    #[must_use]
    pub fn checked_offset(self, offset: IVec3) -> Option<Self> {
        Some(Self {
            x: self.x.checked_add(i128::from(offset.x))?,
            y: self.y.checked_add(i128::from(offset.y))?,
            z: self.z.checked_add(i128::from(offset.z))?,
        })
    }

    /// `self + offset`, each component wrapping around the i128 range (`i128::MAX + 1` is
    /// `i128::MIN`): for worlds that are meant to wrap; everything else wants
    /// [`WorldPos::checked_offset`].
    #[inline]
    #[must_use]
    pub fn wrapping_offset(self, offset: IVec3) -> Self {
        self.wrapping_add([offset.x, offset.y, offset.z].map(i128::from))
    }

    /// `self + delta` for a delta in i128 voxels, or `None` where a component would leave the
    /// i128 range.
    #[inline]
    #[must_use]
    pub fn checked_add(self, delta: [i128; 3]) -> Option<Self> {
        Some(Self {
            x: self.x.checked_add(delta[0])?,
            y: self.y.checked_add(delta[1])?,
            z: self.z.checked_add(delta[2])?,
        })
    }

    /// `self + delta`, each component wrapping around the i128 range.
    #[inline]
    #[must_use]
    pub const fn wrapping_add(self, delta: [i128; 3]) -> Self {
        Self {
            x: self.x.wrapping_add(delta[0]),
            y: self.y.wrapping_add(delta[1]),
            z: self.z.wrapping_add(delta[2]),
        }
    }

    /// The voxels from `other` to `self`, `self - other` per axis, or `None` where it does not
    /// fit an i128 (the two lie more than `i128::MAX` voxels apart on an axis).
    #[inline]
    #[must_use]
    pub fn checked_sub(self, other: Self) -> Option<[i128; 3]> {
        Some([
            self.x.checked_sub(other.x)?,
            self.y.checked_sub(other.y)?,
            self.z.checked_sub(other.z)?,
        ])
    }

    /// `self - other` per axis, wrapping around the i128 range.
    #[inline]
    #[must_use]
    pub const fn wrapping_sub(self, other: Self) -> [i128; 3] {
        [
            self.x.wrapping_sub(other.x),
            self.y.wrapping_sub(other.y),
            self.z.wrapping_sub(other.z),
        ]
    }

    /// Component `axis` (0 = x, 1 = y, 2 = z). Any other `axis` reads z.
    #[inline]
    #[must_use]
    pub const fn axis(self, axis: usize) -> i128 {
        match axis {
            0 => self.x,
            1 => self.y,
            _ => self.z,
        }
    }

    /// The components as an array `[x, y, z]`.
    #[inline]
    #[must_use]
    pub const fn to_array(self) -> [i128; 3] {
        [self.x, self.y, self.z]
    }

    /// Builds a position from `[x, y, z]`.
    #[inline]
    #[must_use]
    pub const fn from_array(a: [i128; 3]) -> Self {
        Self::new(a[0], a[1], a[2])
    }
}

/// `pos + offset`, as [`WorldPos::checked_offset`].
///
/// # Panics
/// When a component would leave the i128 world (as integer overflow does in debug builds, but
/// in every build): at the world's edge use [`WorldPos::checked_offset`] or
/// [`WorldPos::wrapping_offset`].
impl std::ops::Add<IVec3> for WorldPos {
    type Output = Self;

    fn add(self, offset: IVec3) -> Self {
        self.checked_offset(offset)
            .expect("WorldPos + IVec3 left the i128 world (use checked_offset at its edge)")
    }
}

/// `pos - offset`, as [`WorldPos::checked_offset`] with `-offset`.
///
/// # Panics
/// When a component would leave the i128 world, as `+` does.
impl std::ops::Sub<IVec3> for WorldPos {
    type Output = Self;

    fn sub(self, offset: IVec3) -> Self {
        let neg = [offset.x, offset.y, offset.z].map(|c| -i128::from(c));
        self.checked_add(neg)
            .expect("WorldPos - IVec3 left the i128 world (use checked_add at its edge)")
    }
}

/// `pos += offset`, as `+`.
///
/// # Panics
/// When a component would leave the i128 world.
impl std::ops::AddAssign<IVec3> for WorldPos {
    fn add_assign(&mut self, offset: IVec3) {
        *self = *self + offset;
    }
}

/// `pos -= offset`, as `-`.
///
/// # Panics
/// When a component would leave the i128 world.
impl std::ops::SubAssign<IVec3> for WorldPos {
    fn sub_assign(&mut self, offset: IVec3) {
        *self = *self - offset;
    }
}

/// `(x, y, z)`, the coordinates in decimal.
impl std::fmt::Display for WorldPos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "({}, {}, {})", self.x, self.y, self.z)
    }
}

/// `chunk (x, y, z)`, the chunk indices in decimal.
impl std::fmt::Display for ChunkPos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "chunk ({}, {}, {})", self.x, self.y, self.z)
    }
}

impl ChunkPos {
    /// The lowest chunk index of the i128 world on each axis, `i128::MIN >> 5`: the chunk of
    /// voxel `i128::MIN`.
    pub const MIN_INDEX: i128 = i128::MIN >> CHUNK_SHIFT;
    /// The highest chunk index of the i128 world on each axis, `i128::MAX >> 5`: the chunk of
    /// voxel `i128::MAX`.
    pub const MAX_INDEX: i128 = i128::MAX >> CHUNK_SHIFT;

    /// Whether every index lies in [`ChunkPos::MIN_INDEX`]`..=`[`ChunkPos::MAX_INDEX`]: the
    /// chunk holds voxels of the i128 world. Only such chunks can be loaded.
    #[inline]
    #[must_use]
    pub const fn is_in_world(self) -> bool {
        const fn ok(c: i128) -> bool {
            c >= ChunkPos::MIN_INDEX && c <= ChunkPos::MAX_INDEX
        }
        ok(self.x) && ok(self.y) && ok(self.z)
    }

    /// Builds a chunk position from its three chunk indices.
    #[inline]
    #[must_use]
    pub const fn new(x: i128, y: i128, z: i128) -> Self {
        Self { x, y, z }
    }

    /// The lowest voxel of this chunk, `32·c` per axis. Exact for every chunk of the i128 world
    /// (chunk indices lie in `i128::MIN >> 5 ..= i128::MAX >> 5`); outside that range the shift
    /// wraps, so such chunk positions name no voxel.
    #[inline]
    #[must_use]
    pub const fn origin(self) -> WorldPos {
        WorldPos {
            x: self.x << CHUNK_SHIFT,
            y: self.y << CHUNK_SHIFT,
            z: self.z << CHUNK_SHIFT,
        }
    }

    /// The world position of `local` inside this chunk (each component of `local` taken
    /// modulo 32, see [`LocalPos`]).
    #[inline]
    #[must_use]
    pub const fn world(self, local: LocalPos) -> WorldPos {
        let o = self.origin();
        let l = local.wrapped();
        WorldPos {
            x: o.x | l.x as i128,
            y: o.y | l.y as i128,
            z: o.z | l.z as i128,
        }
    }

    /// Component `axis` (0 = x, 1 = y, 2 = z). Any other `axis` reads z.
    #[inline]
    #[must_use]
    pub const fn axis(self, axis: usize) -> i128 {
        match axis {
            0 => self.x,
            1 => self.y,
            _ => self.z,
        }
    }

    /// The chunk indices as an array `[x, y, z]`.
    #[inline]
    #[must_use]
    pub const fn to_array(self) -> [i128; 3] {
        [self.x, self.y, self.z]
    }

    /// Builds a chunk position from its indices `[x, y, z]`.
    #[inline]
    #[must_use]
    pub const fn from_array(a: [i128; 3]) -> Self {
        Self::new(a[0], a[1], a[2])
    }
}

impl LocalPos {
    /// Builds a local position. Each component is masked into `0..32`.
    #[inline]
    #[must_use]
    pub const fn new(x: u8, y: u8, z: u8) -> Self {
        Self {
            x: x & 31,
            y: y & 31,
            z: z & 31,
        }
    }

    /// Linear index inside a chunk, `x + 32·(y + 32·z)`, in `0..CHUNK_VOLUME` (each component
    /// taken modulo 32). The GPU uses the same order (see `slot_id` in `shaders/window.wgsl`).
    #[inline]
    #[must_use]
    pub const fn index(self) -> usize {
        let l = self.wrapped();
        l.x as usize | (l.y as usize) << 5 | (l.z as usize) << 10
    }

    /// Each component modulo 32: the position [`LocalPos::new`] would have built.
    #[inline]
    #[must_use]
    pub const fn wrapped(self) -> Self {
        Self::new(self.x, self.y, self.z)
    }

    /// Inverse of [`LocalPos::index`]; only the low 15 bits of `index` are used.
    #[inline]
    #[must_use]
    pub const fn from_index(index: usize) -> Self {
        Self {
            x: (index & 31) as u8,
            y: ((index >> 5) & 31) as u8,
            z: ((index >> 10) & 31) as u8,
        }
    }
}

impl From<IVec3> for WorldPos {
    #[inline]
    fn from(v: IVec3) -> Self {
        Self::new(v.x.into(), v.y.into(), v.z.into())
    }
}

/// An inclusive box of voxels, `min..=max` on each axis. Inclusive bounds can name the voxel at
/// `i128::MAX` without overflowing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VoxelBox {
    /// Lowest voxel on each axis.
    pub min: WorldPos,
    /// Highest voxel on each axis (inclusive).
    pub max: WorldPos,
}

impl VoxelBox {
    /// Whether `p` lies inside the box (bounds inclusive).
    #[inline]
    #[must_use]
    pub fn contains(&self, p: WorldPos) -> bool {
        (0..3).all(|a| self.min.axis(a) <= p.axis(a) && p.axis(a) <= self.max.axis(a))
    }

    /// The voxels covered by the inclusive chunk range `min..=max`.
    #[inline]
    #[must_use]
    pub const fn from_chunks(min: ChunkPos, max: ChunkPos) -> Self {
        let hi = max.origin();
        Self {
            min: min.origin(),
            max: WorldPos::new(hi.x | LOCAL_MASK, hi.y | LOCAL_MASK, hi.z | LOCAL_MASK),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_coordinates_floor() {
        let p = WorldPos::new(-1, -32, -33);
        assert_eq!(p.chunk(), ChunkPos::new(-1, -1, -2));
        assert_eq!(p.local(), LocalPos::new(31, 0, 31));
        assert_eq!(p.chunk().world(p.local()), p);
    }

    #[test]
    fn extremes_round_trip() {
        for v in [
            i128::MIN,
            i128::MIN + 1,
            -1,
            0,
            31,
            32,
            i128::MAX - 1,
            i128::MAX,
        ] {
            let p = WorldPos::new(v, v, v);
            assert_eq!(p.chunk().world(p.local()), p, "round trip of {v}");
            assert!(p.chunk().origin().x <= v);
        }
        let b = VoxelBox::from_chunks(
            WorldPos::new(i128::MAX, 0, 0).chunk(),
            ChunkPos::new(i128::MAX >> 5, 0, 0),
        );
        assert_eq!(b.max.x, i128::MAX);
    }

    #[test]
    fn local_index_round_trip() {
        for i in [0, 1, 31, 32, 1023, 1024, 32767] {
            assert_eq!(LocalPos::from_index(i).index(), i);
        }
    }

    #[test]
    fn arithmetic_checks_or_wraps_at_the_i128_edge() {
        let p = WorldPos::new(1, -2, 3);
        assert_eq!(p + IVec3::new(1, 1, -4), WorldPos::new(2, -1, -1));
        assert_eq!(p - IVec3::new(1, 1, -4), WorldPos::new(0, -3, 7));
        let mut q = p;
        q += IVec3::Y;
        q -= IVec3::X;
        assert_eq!(q, WorldPos::new(0, -1, 3));
        let top = WorldPos::new(i128::MAX, 0, i128::MIN);
        assert_eq!(top.checked_offset(IVec3::X), None);
        assert_eq!(top.checked_offset(IVec3::NEG_Z), None);
        assert_eq!(top.wrapping_offset(IVec3::X).x, i128::MIN);
        assert_eq!(top.wrapping_offset(IVec3::NEG_Z).z, i128::MAX);
        assert_eq!(
            top.checked_add([0, i128::MAX, 1]),
            Some(WorldPos::new(i128::MAX, i128::MAX, i128::MIN + 1))
        );
        assert_eq!(top.checked_add([1, 0, 0]), None);
        assert_eq!(
            top.wrapping_add([1, 0, -1]),
            WorldPos::new(i128::MIN, 0, i128::MAX)
        );
        assert_eq!(p.checked_sub(WorldPos::new(0, 0, 0)), Some([1, -2, 3]));
        assert_eq!(top.checked_sub(WorldPos::new(-1, 0, 0)), None);
        assert_eq!(top.wrapping_sub(WorldPos::new(-1, 0, 0))[0], i128::MIN);
        assert!(std::panic::catch_unwind(|| top + IVec3::X).is_err());
        assert!(std::panic::catch_unwind(|| top - IVec3::Z).is_err());
    }

    #[test]
    fn positions_display_their_coordinates() {
        assert_eq!(
            WorldPos::new(-1, 2, i128::MAX).to_string(),
            format!("(-1, 2, {})", i128::MAX)
        );
        assert_eq!(
            WorldPos::new(-1, 2, 3).chunk().to_string(),
            "chunk (-1, 0, 0)"
        );
    }
}
