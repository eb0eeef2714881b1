//! MagicaVoxel files: the models dot_vox's package ships, a scene the test writes with dot_vox
//! (translations, a rotation, one model placed twice) against positions worked out by hand,
//! and bad files, each an error.

#![cfg(feature = "vox")]

use std::collections::HashMap;

use dot_vox::{Dict, DotVoxData, Frame, Model, SceneNode, ShapeModel, Size, Voxel};
use voxcast::{VoxelId, VoxelWorld, WorldPos};
use voxcast_import::{ImportError, vox};

/// Every voxel of `world` that is not air.
fn solid(world: &VoxelWorld) -> HashMap<WorldPos, VoxelId> {
    let mut out = HashMap::new();
    for (pos, chunk) in world.chunks() {
        for i in 0..voxcast::CHUNK_VOLUME {
            let local = voxcast::LocalPos::from_index(i);
            let id = chunk.get(local);
            if !id.is_air() {
                out.insert(pos.world(local), id);
            }
        }
    }
    out
}

#[test]
fn the_shipped_models_import_whole() {
    let dir = voxcast_testkit::common::package_dir(env!("CARGO_MANIFEST_DIR"), "dot_vox")
        .join("src/resources");
    let mut seen = 0;
    for name in [
        "placeholder.vox",
        "axes.vox",
        "placeholder-with-materials.vox",
        "single-voxel-with-material.vox",
    ] {
        let bytes = std::fs::read(dir.join(name)).expect("dot_vox ships it");
        let data = dot_vox::load_bytes(&bytes).expect("dot_vox reads it");
        let world = vox::model(&bytes, WorldPos::new(100, -50, 3)).expect("imports");
        let voxels = solid(&world);
        // Every model is placed at least once (axes.vox places some several times), each
        // voxel with its palette index plus one.
        let total: usize = data.models.iter().map(|m| m.voxels.len()).sum();
        assert!(voxels.len() >= total, "{name}: {} of {total}", voxels.len());
        let mut want: Vec<u16> = data
            .models
            .iter()
            .flat_map(|m| m.voxels.iter().map(|v| u16::from(v.i) + 1))
            .collect();
        let mut got: Vec<u16> = voxels.values().map(|id| id.0).collect();
        for v in [&mut want, &mut got] {
            v.sort_unstable();
            v.dedup();
        }
        assert_eq!(got, want, "{name}: the ids");
        seen += total;
    }
    assert!(seen > 100, "{seen} voxels");
}

fn frame(pairs: &[(&str, &str)]) -> Frame {
    Frame::new(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    )
}

fn transform(child: u32, pairs: &[(&str, &str)]) -> SceneNode {
    SceneNode::Transform {
        attributes: Dict::default(),
        frames: vec![frame(pairs)],
        child,
        layer_id: 0,
    }
}

fn shape(model: u32) -> SceneNode {
    SceneNode::Shape {
        attributes: Dict::default(),
        models: vec![ShapeModel {
            model_id: model,
            attributes: Dict::default(),
        }],
    }
}

/// One model of two voxels (palette 0 at x = 0, palette 1 at x = 1) placed twice.
fn scene(nodes: Vec<SceneNode>) -> Vec<u8> {
    let data = DotVoxData {
        version: 150,
        index_map: Vec::new(),
        models: vec![Model {
            size: Size { x: 2, y: 1, z: 1 },
            voxels: vec![
                Voxel {
                    x: 0,
                    y: 0,
                    z: 0,
                    i: 0,
                },
                Voxel {
                    x: 1,
                    y: 0,
                    z: 0,
                    i: 1,
                },
            ],
        }],
        palette: dot_vox::DEFAULT_PALETTE.to_vec(),
        materials: Vec::new(),
        scenes: nodes,
        layers: Vec::new(),
    };
    let mut out = Vec::new();
    data.write_vox(&mut out).expect("write");
    out
}

/// The model's center at the translation; the second instance turned a quarter about z
/// (`_r` 17: +x to +y). Scene voxels `T + floor(R (2v + 1 - s) / 2)`, then (x, z, -y - 1):
/// the first instance at scene (9, 0, 0) and (10, 0, 0), the second at (0, -1, 0) and
/// (0, 0, 0).
#[test]
fn a_scene_places_its_models_where_magicavoxel_does() {
    let bytes = scene(vec![
        transform(1, &[]),
        SceneNode::Group {
            attributes: Dict::default(),
            children: vec![2, 4],
        },
        transform(3, &[("_t", "10 0 0")]),
        shape(0),
        transform(5, &[("_r", "17")]),
        shape(0),
    ]);
    let world = vox::model(&bytes, WorldPos::new(-1000, 7, 0)).expect("imports");
    let at = |x: i128, y: i128, z: i128| WorldPos::new(-1000 + x, 7 + z, -y - 1);
    let want: HashMap<WorldPos, VoxelId> = [
        (at(9, 0, 0), VoxelId(1)),
        (at(10, 0, 0), VoxelId(2)),
        (at(0, -1, 0), VoxelId(1)),
        (at(0, 0, 0), VoxelId(2)),
    ]
    .into_iter()
    .collect();
    assert_eq!(solid(&world), want);
}

#[test]
fn bad_files_are_errors() {
    let good = scene(vec![transform(1, &[]), shape(0)]);
    assert!(vox::model(&good, WorldPos::ZERO).is_ok());
    for cut in [0, 4, 8, 20, good.len() / 2, good.len() - 1] {
        let r = vox::model(&good[..cut], WorldPos::ZERO);
        assert!(
            r.is_err() || cut == good.len(),
            "cut at {cut}: {:?}",
            r.map(|w| w.chunk_count())
        );
    }
    assert!(matches!(
        vox::model(b"PK\x03\x04 not a vox file at all", WorldPos::ZERO),
        Err(ImportError::Corrupt(_))
    ));
    let cases: Vec<(&str, Vec<SceneNode>)> = vec![
        ("a node that is not there", vec![transform(7, &[])]),
        (
            "a model that is not there",
            vec![transform(1, &[]), shape(3)],
        ),
        (
            "a rotation that is no permutation",
            vec![transform(1, &[("_r", "15")]), shape(0)],
        ),
        (
            "a translation of two numbers",
            vec![transform(1, &[("_t", "1 2")]), shape(0)],
        ),
        (
            "a cycle",
            vec![SceneNode::Group {
                attributes: Dict::default(),
                children: vec![0],
            }],
        ),
    ];
    for (what, nodes) in cases {
        let r = vox::model(&scene(nodes), WorldPos::ZERO).map(|w| w.chunk_count());
        assert!(
            matches!(r, Err(ImportError::Corrupt(_) | ImportError::TooLarge(_))),
            "{what}: {r:?}"
        );
    }
    // Every group node twice over the next, 40 deep: 2^40 instances, refused early.
    let mut nodes: Vec<SceneNode> = (0..40)
        .map(|i| SceneNode::Group {
            attributes: Dict::default(),
            children: vec![i + 1, i + 1],
        })
        .collect();
    nodes.push(shape(0));
    let r = vox::model(&scene(nodes), WorldPos::ZERO).map(|w| w.chunk_count());
    assert!(matches!(r, Err(ImportError::TooLarge(_))), "{r:?}");
    // A translation beyond MagicaVoxel's i32.
    let r = vox::model(
        &scene(vec![transform(1, &[("_t", "99999999999 0 0")]), shape(0)]),
        WorldPos::ZERO,
    );
    assert!(
        matches!(r, Err(ImportError::Corrupt(_))),
        "{:?}",
        r.map(|w| w.chunk_count())
    );
    // A chunk nested below MAIN (dot_vox would recurse into it): the first child of MAIN
    // claims children of its own.
    let mut nested = good.clone();
    let main_content = u32::from_le_bytes(nested[12..16].try_into().expect("4")) as usize;
    let child = 20 + main_content;
    nested[child + 8..child + 12].copy_from_slice(&12u32.to_le_bytes());
    let r = vox::model(&nested, WorldPos::ZERO);
    assert!(
        matches!(r, Err(ImportError::Corrupt(_) | ImportError::Truncated(_))),
        "{:?}",
        r.map(|w| w.chunk_count())
    );
    // A scene of 4,096 instances of one voxel, each in a chunk of its own, from a file of a
    // few kilobytes: refused (the chunks it may fill grow with the file's size).
    let mut nodes = Vec::new();
    for level in 0..12u32 {
        let next = 4 * (level + 1);
        let far = format!("{} 0 0", 64i64 << level);
        nodes.push(SceneNode::Group {
            attributes: Dict::default(),
            children: vec![4 * level + 1, 4 * level + 2],
        });
        nodes.push(transform(next, &[]));
        nodes.push(transform(next, &[("_t", far.as_str())]));
        nodes.push(SceneNode::Group {
            attributes: Dict::default(),
            children: vec![],
        });
    }
    nodes.push(shape(0));
    let bytes = scene(nodes);
    let r = vox::model(&bytes, WorldPos::ZERO);
    assert!(
        matches!(r, Err(ImportError::TooLarge(_))),
        "{} bytes: {:?}",
        bytes.len(),
        r.map(|w| w.chunk_count())
    );
    // Past the i128 world.
    assert_eq!(
        vox::model(&good, WorldPos::new(0, 0, i128::MIN)).map(|w| w.chunk_count()),
        Err(ImportError::OutsideWorld)
    );
}
