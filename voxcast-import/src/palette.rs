//! [`Palette`]: block names to voxcast ids.

use std::collections::HashMap;

use voxcast::{BlockShape, MaterialFilter, ShapeError, VoxelId, VoxelWorld};

use crate::ImportError;

/// Block names (`minecraft:stone`, or with properties `minecraft:oak_log[axis=y]`) to voxcast
/// ids, in both directions. Id 0 is air: [`Palette::new`] maps Minecraft's air variants
/// (`minecraft:air`, `minecraft:cave_air`, `minecraft:void_air`) to it, so that chunks of air
/// stay chunks of one id. Importers give each new name the next free id, in the order they meet
/// names (the file's order), so one file gives the same ids every time; seed the palette
/// ([`Palette::insert`]) to fix ids of your own, and keep one palette across files for ids that
/// agree between them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Palette {
    ids: HashMap<String, VoxelId>,
    names: Vec<Option<String>>,
    next: u32,
}

impl Default for Palette {
    fn default() -> Self {
        Self::new()
    }
}

impl Palette {
    /// A palette holding the air variants, all as id 0.
    #[must_use]
    pub fn new() -> Self {
        let mut p = Self {
            ids: HashMap::new(),
            names: vec![Some("minecraft:air".to_owned())],
            next: 1,
        };
        for air in ["minecraft:air", "minecraft:cave_air", "minecraft:void_air"] {
            p.ids.insert(air.to_owned(), VoxelId::AIR);
        }
        p
    }

    /// Gives `name` the id `id` (replacing any id it had); `id`'s name, for
    /// [`Palette::name`], becomes `name` unless it had one. Later new names take ids above
    /// every id given so far.
    pub fn insert(&mut self, name: &str, id: VoxelId) {
        self.ids.insert(name.to_owned(), id);
        let i = usize::from(id.0);
        if self.names.len() <= i {
            self.names.resize(i + 1, None);
        }
        self.names[i].get_or_insert_with(|| name.to_owned());
        self.next = self.next.max(u32::from(id.0) + 1);
    }

    /// The id of `name`, if it has one.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<VoxelId> {
        self.ids.get(name).copied()
    }

    /// The id of `name`, giving it the next free id when it has none.
    ///
    /// # Errors
    /// [`ImportError::TooManyBlockTypes`] when every id is taken.
    pub fn id(&mut self, name: &str) -> Result<VoxelId, ImportError> {
        if let Some(&id) = self.ids.get(name) {
            return Ok(id);
        }
        let id = u16::try_from(self.next).map_err(|_| ImportError::TooManyBlockTypes)?;
        self.insert(name, VoxelId(id));
        Ok(VoxelId(id))
    }

    /// The name of `id` (the first name it was given), if any.
    #[must_use]
    pub fn name(&self, id: VoxelId) -> Option<&str> {
        self.names.get(usize::from(id.0))?.as_deref()
    }

    /// How many names the palette holds (the air variants included).
    #[must_use]
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the palette holds no names (never: the air variants are always there).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Every name with its id, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, VoxelId)> {
        self.ids.iter().map(|(n, &id)| (n.as_str(), id))
    }

    /// A filter that stops rays at every id of the palette but air and the ids whose names
    /// `passes` (the block name without its properties, `minecraft:water`): what lets a ray
    /// through is the game's decision; [`crate::anvil::see_through`] is the usual one. Ids
    /// the palette does not hold stop rays too.
    #[must_use]
    pub fn filter_passing(&self, passes: impl Fn(&str) -> bool) -> MaterialFilter {
        let mut filter = MaterialFilter::every_non_air();
        for (name, id) in self.iter() {
            let base = name.split('[').next().unwrap_or(name);
            if !id.is_air() && passes(base) {
                filter = filter.without(id);
            }
        }
        filter
    }
}

impl Palette {
    /// Gives each id of the palette, in `world`, the shape `shape_of` gives its name (the
    /// first name the id was given, with properties where the importer kept them); ids it
    /// answers `None` for keep the shape they have. [`crate::shapes::block_shape`] is the
    /// Minecraft preset; wrap it to override any block:
    /// `|n| if n.starts_with("minecraft:torch") { Some(BlockShape::Empty) } else { block_shape(n) }`.
    /// Returns how many ids got a shape.
    ///
    /// # Errors
    /// The first shape `world` refuses ([`VoxelWorld::set_shape`]), with the ids before it set.
    pub fn apply_shapes(
        &self,
        world: &mut VoxelWorld,
        shape_of: impl Fn(&str) -> Option<BlockShape>,
    ) -> Result<usize, ShapeError> {
        let mut shaped = 0;
        for (i, name) in self.names.iter().enumerate().skip(1) {
            let Some(shape) = name.as_deref().and_then(&shape_of) else {
                continue;
            };
            world.set_shape(VoxelId(i as u16), &shape)?;
            shaped += 1;
        }
        Ok(shaped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_get_ids_in_order_and_air_is_zero() {
        let mut p = Palette::new();
        assert_eq!(p.id("minecraft:cave_air"), Ok(VoxelId::AIR));
        assert_eq!(p.id("minecraft:stone"), Ok(VoxelId(1)));
        assert_eq!(p.id("minecraft:dirt"), Ok(VoxelId(2)));
        assert_eq!(p.id("minecraft:stone"), Ok(VoxelId(1)));
        p.insert("minecraft:glass", VoxelId(100));
        assert_eq!(p.id("minecraft:sand"), Ok(VoxelId(101)));
        assert_eq!(p.name(VoxelId(100)), Some("minecraft:glass"));
        assert_eq!(p.name(VoxelId(50)), None);
        let f = p.filter_passing(|n| n.ends_with("glass"));
        assert!(!f.contains(VoxelId(100)));
        assert!(f.contains(VoxelId(1)) && f.contains(VoxelId(101)));
        p.insert("minecraft:last", VoxelId(u16::MAX));
        assert_eq!(
            p.id("minecraft:one_more"),
            Err(ImportError::TooManyBlockTypes)
        );
    }
}
