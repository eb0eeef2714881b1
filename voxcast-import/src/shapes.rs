//! Minecraft block states to voxcast shapes ([`BlockShape`]): the boxes of the block's outline
//! (what the game's cursor targets) on the 1/16 grid.
//!
//! [`block_shape`] covers, by their properties:
//! - slabs (`type`: bottom, top; double is a cube);
//! - stairs (`facing`, `half`, `shape`: straight, inner and outer corners);
//! - fences, glass panes and iron bars (`north`, `east`, `south`, `west`: `true` adds an arm);
//!   walls (the same with `none`, `low`, `tall`, and `up` for the post);
//! - doors (`facing`, `open`, `hinge`), trapdoors (`facing`, `half`, `open`), ladders
//!   (`facing`);
//! - carpets, snow layers (`layers`), pressure plates;
//! - torches (standing and `wall_torch` by `facing`, of every kind), lanterns (`hanging`);
//! - flowers, saplings, grass, ferns, dead bushes, mushrooms, crops (`age`: wheat, carrots,
//!   potatoes, beetroots);
//! - chests.
//!
//! Everything else answers `None`: the caller's choice stands (a cube, or see-through through a
//! [`MaterialFilter`](voxcast::MaterialFilter), as without shapes). Bounds off the 1/16 grid
//! in the game (a wall torch is 5.5 to 10.5 wide) are rounded outward. The properties come from
//! palette keys in [`Names::WithProperties`](crate::anvil::Names::WithProperties) form; with
//! plain names, a family whose shape depends on its state answers with its default state
//! (a bottom slab, stairs facing north, a fence post alone, a closed door facing north).

use voxcast::{BlockShape, ShapeBox};

/// A box from bounds in sixteenths, checked when the table is set; the bounds here are
/// constants inside the voxel.
fn b(min: [u8; 3], max: [u8; 3]) -> ShapeBox {
    ShapeBox::new(min, max).unwrap_or(ShapeBox::FULL)
}

fn boxes(list: Vec<ShapeBox>) -> BlockShape {
    BlockShape::Boxes(list)
}

/// A horizontal direction.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    North,
    East,
    South,
    West,
}

impl Dir {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "north" => Self::North,
            "east" => Self::East,
            "south" => Self::South,
            "west" => Self::West,
            _ => return None,
        })
    }

    /// Turned a quarter counterclockwise, seen from above (north to west).
    fn ccw(self) -> Self {
        match self {
            Self::North => Self::West,
            Self::West => Self::South,
            Self::South => Self::East,
            Self::East => Self::North,
        }
    }

    fn cw(self) -> Self {
        self.ccw().ccw().ccw()
    }

    fn opposite(self) -> Self {
        self.ccw().ccw()
    }

    /// The half of the voxel on this side, as x and z ranges (x east, z south).
    fn half(self) -> ([u8; 2], [u8; 2]) {
        match self {
            Self::North => ([0, 16], [0, 8]),
            Self::South => ([0, 16], [8, 16]),
            Self::East => ([8, 16], [0, 16]),
            Self::West => ([0, 8], [0, 16]),
        }
    }

    /// The slab `depth` sixteenths thick against this side's face, as x and z ranges.
    fn against(self, depth: u8) -> ([u8; 2], [u8; 2]) {
        match self {
            Self::North => ([0, 16], [0, depth]),
            Self::South => ([0, 16], [16 - depth, 16]),
            Self::East => ([16 - depth, 16], [0, 16]),
            Self::West => ([0, depth], [0, 16]),
        }
    }
}

/// The quarter of the voxel where the halves of two perpendicular sides meet.
fn quarter(a: Dir, c: Dir) -> ([u8; 2], [u8; 2]) {
    let (ax, az) = a.half();
    let (cx, cz) = c.half();
    (
        [ax[0].max(cx[0]), ax[1].min(cx[1])],
        [az[0].max(cz[0]), az[1].min(cz[1])],
    )
}

fn column(xz: ([u8; 2], [u8; 2]), y: [u8; 2]) -> ShapeBox {
    let (x, z) = xz;
    b([x[0], y[0], z[0]], [x[1], y[1], z[1]])
}

/// A block state's name and properties (`minecraft:oak_slab[type=top,waterlogged=false]`).
struct State<'a> {
    name: &'a str,
    props: Vec<(&'a str, &'a str)>,
}

impl<'a> State<'a> {
    fn parse(key: &'a str) -> Self {
        let (name, rest) = key.split_once('[').unwrap_or((key, ""));
        let props = rest
            .trim_end_matches(']')
            .split(',')
            .filter_map(|kv| kv.split_once('='))
            .collect();
        Self {
            name: name.strip_prefix("minecraft:").unwrap_or(name),
            props,
        }
    }

    fn get(&self, key: &str) -> Option<&'a str> {
        self.props.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    fn is(&self, key: &str, value: &str) -> bool {
        self.get(key) == Some(value)
    }

    fn facing(&self) -> Dir {
        self.get("facing")
            .and_then(Dir::parse)
            .unwrap_or(Dir::North)
    }

    fn number(&self, key: &str, default: u8) -> u8 {
        self.get(key)
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }
}

/// The shape of a Minecraft block state given as a palette key (`minecraft:oak_stairs` or
/// `minecraft:oak_stairs[facing=east,half=bottom,shape=straight]`), or `None` where this
/// module does not cover it (see the module docs for what it covers).
#[must_use]
pub fn block_shape(key: &str) -> Option<BlockShape> {
    let s = State::parse(key);
    let n = s.name;
    let full = [0, 16];
    if n.ends_with("_slab") {
        return Some(match s.get("type") {
            Some("double") => BlockShape::Cube,
            Some("top") => boxes(vec![b([0, 8, 0], [16, 16, 16])]),
            _ => boxes(vec![b([0, 0, 0], [16, 8, 16])]),
        });
    }
    if n.ends_with("_stairs") {
        let top = s.is("half", "top");
        let (base, step) = if top {
            ([8, 16], [0, 8])
        } else {
            ([0, 8], [8, 16])
        };
        let f = s.facing();
        let mut list = vec![column((full, full), base)];
        match s.get("shape").unwrap_or("straight") {
            "outer_left" => list.push(column(quarter(f, f.ccw()), step)),
            "outer_right" => list.push(column(quarter(f, f.cw()), step)),
            "inner_left" => {
                list.push(column(f.half(), step));
                list.push(column(quarter(f.opposite(), f.ccw()), step));
            }
            "inner_right" => {
                list.push(column(f.half(), step));
                list.push(column(quarter(f.opposite(), f.cw()), step));
            }
            _ => list.push(column(f.half(), step)),
        }
        return Some(boxes(list));
    }
    let arms = |post: u8, arm: u8, arm_height: &dyn Fn(&str) -> Option<u8>| {
        let (p0, p1) = (8 - post, 8 + post);
        let (a0, a1) = (8 - arm, 8 + arm);
        let mut list = Vec::new();
        for (side, [x0, x1], [z0, z1]) in [
            ("north", [a0, a1], [0, p0]),
            ("south", [a0, a1], [p1, 16]),
            ("west", [0, p0], [a0, a1]),
            ("east", [p1, 16], [a0, a1]),
        ] {
            if let Some(h) = s.get(side).and_then(arm_height) {
                list.push(b([x0, 0, z0], [x1, h, z1]));
            }
        }
        list
    };
    let connected = |v: &str| (v == "true").then_some(16);
    if n.ends_with("_fence") {
        let mut list = vec![b([6, 0, 6], [10, 16, 10])];
        list.extend(arms(2, 1, &connected));
        return Some(boxes(list));
    }
    if n.ends_with("glass_pane") || n == "iron_bars" {
        let mut list = vec![b([7, 0, 7], [9, 16, 9])];
        list.extend(arms(1, 1, &connected));
        return Some(boxes(list));
    }
    if n.ends_with("_wall") {
        let height = |v: &str| match v {
            "low" => Some(14),
            "tall" => Some(16),
            _ => None,
        };
        let mut list = arms(4, 3, &height);
        if s.get("up") != Some("false") || list.is_empty() {
            list.insert(0, b([4, 0, 4], [12, 16, 12]));
        }
        return Some(boxes(list));
    }
    if n.ends_with("_door") {
        let f = s.facing();
        // Closed, the door stands against the side it faces away from; open, it turns on
        // its hinge.
        let side = match (s.is("open", "true"), s.is("hinge", "right")) {
            (false, _) => f.opposite(),
            (true, true) => f.ccw().opposite(),
            (true, false) => f.cw().opposite(),
        };
        return Some(boxes(vec![column(side.against(3), full)]));
    }
    if n.ends_with("_trapdoor") {
        if s.is("open", "true") {
            return Some(boxes(vec![column(s.facing().opposite().against(3), full)]));
        }
        let y = if s.is("half", "top") {
            [13, 16]
        } else {
            [0, 3]
        };
        return Some(boxes(vec![column((full, full), y)]));
    }
    if n == "ladder" {
        return Some(boxes(vec![column(s.facing().opposite().against(3), full)]));
    }
    if n.ends_with("carpet") {
        return Some(boxes(vec![b([0, 0, 0], [16, 1, 16])]));
    }
    if n == "snow" {
        let layers = s.number("layers", 1).clamp(1, 8);
        return Some(boxes(vec![b([0, 0, 0], [16, 2 * layers, 16])]));
    }
    if n.ends_with("_pressure_plate") {
        return Some(boxes(vec![b([1, 0, 1], [15, 1, 15])]));
    }
    if n.ends_with("wall_torch") {
        // The game's box is 5.5 to 10.5 across, 3 to 13 high, 5 deep against the wall.
        let (x, z) = s.facing().opposite().against(5);
        let (x, z) = if x == full {
            ([5, 11], z)
        } else {
            (x, [5, 11])
        };
        return Some(boxes(vec![column((x, z), [3, 13])]));
    }
    if n == "torch" || n.ends_with("_torch") {
        return Some(boxes(vec![b([6, 0, 6], [10, 10, 10])]));
    }
    if n == "lantern" || n == "soul_lantern" {
        let y: [u8; 2] = if s.is("hanging", "true") {
            [1, 10]
        } else {
            [0, 9]
        };
        return Some(boxes(vec![column(([5, 11], [5, 11]), y)]));
    }
    if matches!(n, "chest" | "trapped_chest" | "ender_chest") {
        return Some(boxes(vec![b([1, 0, 1], [15, 14, 15])]));
    }
    const FLOWERS: &[&str] = &[
        "dandelion",
        "poppy",
        "blue_orchid",
        "allium",
        "azure_bluet",
        "oxeye_daisy",
        "cornflower",
        "lily_of_the_valley",
        "wither_rose",
        "torchflower",
    ];
    if FLOWERS.contains(&n) || n.ends_with("_tulip") {
        return Some(boxes(vec![b([5, 0, 5], [11, 10, 11])]));
    }
    if n.ends_with("_sapling") {
        return Some(boxes(vec![b([2, 0, 2], [14, 12, 14])]));
    }
    if matches!(n, "short_grass" | "grass" | "fern" | "dead_bush") {
        return Some(boxes(vec![b([2, 0, 2], [14, 13, 14])]));
    }
    if matches!(n, "red_mushroom" | "brown_mushroom") {
        return Some(boxes(vec![b([5, 0, 5], [11, 6, 11])]));
    }
    let crop = |height: u8| Some(boxes(vec![b([0, 0, 0], [16, height.clamp(1, 16), 16])]));
    match n {
        "wheat" => crop(2 * (s.number("age", 0).min(7) + 1)),
        "carrots" | "potatoes" => crop(2 + s.number("age", 0).min(7)),
        "beetroots" => crop(2 + 2 * s.number("age", 0).min(3)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(key: &str) -> Vec<([u8; 3], [u8; 3])> {
        match block_shape(key) {
            Some(BlockShape::Boxes(b)) => b.iter().map(|b| (b.min(), b.max())).collect(),
            other => panic!("{key}: {other:?}"),
        }
    }

    #[test]
    fn slabs_and_stairs_by_their_properties() {
        assert_eq!(
            list("minecraft:oak_slab[type=bottom,waterlogged=false]"),
            [([0, 0, 0], [16, 8, 16])]
        );
        assert_eq!(
            list("minecraft:oak_slab[type=top]"),
            [([0, 8, 0], [16, 16, 16])]
        );
        assert_eq!(
            block_shape("minecraft:oak_slab[type=double]"),
            Some(BlockShape::Cube)
        );
        // Straight stairs facing east: the step on the east half, above a bottom slab.
        assert_eq!(
            list("minecraft:oak_stairs[facing=east,half=bottom,shape=straight]"),
            [([0, 0, 0], [16, 8, 16]), ([8, 8, 0], [16, 16, 16])]
        );
        // Upside down: the slab on top, the step below.
        assert_eq!(
            list("minecraft:oak_stairs[facing=north,half=top,shape=straight]"),
            [([0, 8, 0], [16, 16, 16]), ([0, 0, 0], [16, 8, 8])]
        );
        // Outer corner facing north, to the left: the north-west quarter.
        assert_eq!(
            list("minecraft:stone_stairs[facing=north,half=bottom,shape=outer_left]")[1],
            ([0, 8, 0], [8, 16, 8])
        );
        // Inner corner facing north, to the right: the north half and the south-east quarter.
        assert_eq!(
            list("minecraft:stone_stairs[facing=north,half=bottom,shape=inner_right]")[1..],
            [([0, 8, 0], [16, 16, 8]), ([8, 8, 8], [16, 16, 16])]
        );
    }

    #[test]
    fn connections_doors_and_small_things() {
        assert_eq!(
            list("minecraft:oak_fence[east=true,north=false,south=false,west=true]"),
            [
                ([6, 0, 6], [10, 16, 10]),
                ([0, 0, 7], [6, 16, 9]),
                ([10, 0, 7], [16, 16, 9])
            ]
        );
        assert_eq!(list("minecraft:glass_pane[north=true]").len(), 2);
        let wall =
            list("minecraft:cobblestone_wall[east=low,north=tall,south=none,up=false,west=none]");
        assert_eq!(wall, [([5, 0, 0], [11, 16, 4]), ([12, 0, 5], [16, 14, 11])]);
        // A closed door facing north stands against its voxel's south face.
        assert_eq!(
            list("minecraft:oak_door[facing=north,half=lower,hinge=left,open=false]"),
            [([0, 0, 13], [16, 16, 16])]
        );
        assert_eq!(
            list("minecraft:oak_door[facing=east,half=lower,hinge=right,open=true]"),
            [([0, 0, 13], [16, 16, 16])]
        );
        assert_eq!(
            list("minecraft:oak_trapdoor[half=top,open=false]"),
            [([0, 13, 0], [16, 16, 16])]
        );
        assert_eq!(list("minecraft:snow[layers=3]"), [([0, 0, 0], [16, 6, 16])]);
        assert_eq!(list("minecraft:torch"), [([6, 0, 6], [10, 10, 10])]);
        assert_eq!(
            list("minecraft:wall_torch[facing=north]"),
            [([5, 3, 11], [11, 13, 16])]
        );
        assert_eq!(list("minecraft:poppy"), [([5, 0, 5], [11, 10, 11])]);
        assert_eq!(list("minecraft:wheat[age=7]"), [([0, 0, 0], [16, 16, 16])]);
        assert_eq!(block_shape("minecraft:stone"), None);
        assert_eq!(block_shape("minecraft:water[level=0]"), None);
    }
}
