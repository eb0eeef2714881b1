"""Worlds from what Python users have: chunks in bulk, Minecraft regions, MagicaVoxel models;
and agents' visibility on them."""

import sys
from pathlib import Path

import numpy as np
import pytest

import voxcast as vc
from conftest import assert_same, terrain

REPO = Path(__file__).resolve().parents[2]
# The examples' helper finds the sample files the Rust dependencies ship.
sys.path.insert(0, str(REPO / "python" / "examples"))
from _files import package_dir  # noqa: E402


def test_load_chunks_equals_load_dense():
    ids = terrain(size=(64, 64, 64)).astype(np.uint16)
    dense = vc.World.from_dense(ids, origin=(2**90, 0, -64))
    blocks = ids.reshape(2, 32, 2, 32, 2, 32).transpose(0, 2, 4, 1, 3, 5).reshape(8, 32, 32, 32)
    where = np.array([[x, y, z] for x in range(2) for y in range(2) for z in range(2)])
    chunked = vc.World()
    chunked.load_chunks(where, blocks, frame=(2**85, 0, -2))
    rng = np.random.default_rng(1)
    o = rng.uniform(0, 64, (5000, 3))
    d = rng.normal(size=(5000, 3))
    frame = (2**90, 0, -64)
    assert_same(dense.raycast(o, d, 60.0, frame=frame), chunked.raycast(o, d, 60.0, frame=frame), "chunks")
    with pytest.raises(ValueError, match="ids"):
        chunked.load_chunks(where, blocks[:, :16])
    with pytest.raises(ValueError, match="chunks"):
        chunked.load_chunks([[0, 0, 0]], blocks[:1], frame=(2**122, 0, 0))


def test_minecraft_region():
    world, palette = vc.World.from_minecraft(package_dir("fastanvil") / "resources" / "1.19.4.mca")
    assert world.chunk_count == 2028 and len(palette) == 106
    solid = vc.minecraft_solid(palette)
    assert palette["minecraft:stone"] in solid and palette["minecraft:air"] not in solid
    assert all(palette[n] not in solid for n in palette if "water" in n or "leaves" in n)
    (x0, _, z0), (x1, y1, _) = world.loaded_bounds
    # Straight down from above the region, over its columns: the loaded ones have ground,
    # which the solid ids stop at; without them water and leaves stop rays too.
    g = np.arange(0, 512, 4) + 0.5
    xz = np.array(np.meshgrid(g + x0, g + z0)).reshape(2, -1).T
    o = np.column_stack([xz[:, 0], np.full(len(xz), y1 + 0.5), xz[:, 1]])
    d = np.tile([0.0, -1.0, 0.0], (len(xz), 1))
    down = world.raycast(o, d, 1000.0, solid=solid)
    assert down.hit.mean() > 0.2 and set(down.id[down.hit].tolist()) <= set(solid)
    anything = world.raycast(o, d, 1000.0)
    assert np.any(anything.hit & ~np.isin(anything.id, solid))
    with pytest.raises(OSError):
        vc.World.from_minecraft(REPO / "no-such-region.mca")
    with pytest.raises(ValueError):
        vc.World.from_minecraft(REPO / "README.md")


def test_magicavoxel_model():
    world = vc.World.from_magica(package_dir("dot_vox") / "src" / "resources" / "axes.vox", origin=(2**70, 0, 0))
    assert world.chunk_count >= 1
    (lo, hi) = world.loaded_bounds
    assert lo[0] >= 2**70 - 32


def test_agent_visibility_is_line_of_sight_between_eyes(gpu):
    frame = (2**64, 0, 2**64)
    world = vc.World.from_dense(terrain(), origin=frame)
    rng = np.random.default_rng(3)
    eyes = rng.uniform(0, 96, (200, 3))
    eyes[:, 1] = rng.uniform(10, 40, 200)
    pairs = rng.integers(0, 200, (3000, 2))
    seen = world.agent_visibility(eyes, pairs, frame=frame)
    sight = world.line_of_sight(eyes[pairs[:, 0]], eyes[pairs[:, 1]], frame=frame)
    assert_same(seen, sight, "agents against segments")
    assert 0 < seen.visible.sum() < 3000
    assert_same(seen, gpu.upload(world).agent_visibility(eyes, pairs, frame=frame), "agents on the GPU")
    for conservative in (False, True):
        cpu = world.visible_pairs_within(eyes, 30.0, frame=frame, conservative=conservative)
        on_gpu = gpu.upload(world).visible_pairs_within(eyes, 30.0, frame=frame, conservative=conservative)
        assert np.array_equal(cpu, on_gpu) and len(cpu) > 0
        i, j = cpu[:, 0], cpu[:, 1]
        assert np.all(i < j) and np.all(np.linalg.norm(eyes[i] - eyes[j], axis=1) <= 30.0 + 1e-6)
        assert world.agent_visibility(eyes, cpu.astype(np.int64), frame=frame, conservative=conservative).visible.all()


def test_line_of_sight_is_one_answer_for_either_order(gpu):
    """Eyes on voxel centres (where a segment and its reverse step through exact edges): every
    pair answers alike in both orders, in both modes, on both engines; eyes at one point see
    each other."""
    frame = (2**64, 0, 2**64)
    ids = terrain()
    world = vc.World.from_dense(ids, origin=frame)
    on_gpu = gpu.upload(world)
    rng = np.random.default_rng(5)
    eyes = rng.integers(0, 96, (150, 3)).astype(np.float64) + 0.5
    eyes[:, 1] = rng.integers(8, 30, 150) + 0.5
    # Two eyes at one point, in air.
    eyes[0] = np.argwhere(ids[:, 40:, :] == 0)[0] + (0.5, 40.5, 0.5)
    eyes[1] = eyes[0]
    pairs = np.array([(i, j) for i in range(150) for j in range(i + 1, 150)])
    for conservative in (False, True):
        for engine in (world, on_gpu):
            ab = engine.line_of_sight(eyes[pairs[:, 0]], eyes[pairs[:, 1]], frame=frame, conservative=conservative)
            ba = engine.line_of_sight(eyes[pairs[:, 1]], eyes[pairs[:, 0]], frame=frame, conservative=conservative)
            assert_same(ab, ba, f"line of sight reversed, conservative={conservative}")
            seen = engine.agent_visibility(eyes, pairs[:, ::-1], frame=frame, conservative=conservative)
            assert_same(ab, seen, "agents reversed")
            assert bool(seen.visible[0]) and seen.status[0] == vc.MISS
            assert 0 < ab.visible.sum() < len(pairs)
            flipped = engine.visible_pairs_within(eyes[::-1], 30.0, frame=frame, conservative=conservative)
            back = np.sort(149 - flipped[:, ::-1], axis=1)
            back = back[np.lexsort((back[:, 1], back[:, 0]))]
            assert np.array_equal(engine.visible_pairs_within(eyes, 30.0, frame=frame, conservative=conservative), back)


def test_agent_visibility_bad_input():
    world = vc.World.from_dense(np.zeros((64, 64, 64), np.uint8))
    eyes = np.array([[1.0, 40, 1], [np.nan, 40, 1], [50, 40, 50]])
    seen = world.agent_visibility(eyes, [[0, 2], [0, 1]])
    assert seen.status.tolist() == [vc.MISS, vc.INVALID] and seen.errors == [(1, "point is not finite")]
    with pytest.raises(ValueError, match="pairs"):
        world.agent_visibility(eyes, [[0, 3]])
    with pytest.raises(ValueError, match="pairs"):
        world.agent_visibility(eyes, [[0, 1, 2]])


def test_shapes_on_cpu_and_gpu(gpu):
    """Shaped ids: a ray over a bottom slab passes, one at a flower's box hits it on its face;
    the GPU answers as the CPU does, also after the shapes change; bad shapes raise."""
    origin = (2**100, 0, -(2**90))
    ids = terrain(size=(64, 48, 64)).astype(np.uint16)
    world = vc.World.from_dense(ids, origin=origin)
    world.set_shape(1, [((0, 0, 0), (16, 8, 16))])
    world.set_shape(2, [((5, 0, 5), (11, 10, 11)), ((0, 0, 0), (16, 2, 16))])
    world.set_shape(3, "empty")
    assert world.shape(1) == [((0, 0, 0), (16, 8, 16))] and world.shape(3) == "empty"
    assert world.shape(4) == "cube"
    rng = np.random.default_rng(5)
    o = rng.uniform(0, 64, (20000, 3))
    d = rng.normal(size=(20000, 3))
    cpu = world.raycast(o, d, 80.0, frame=origin)
    cubes = vc.World.from_dense(ids, origin=origin).raycast(o, d, 80.0, frame=origin)
    assert np.mean(cpu.distance != cubes.distance) > 0.1, "the shapes change many answers"
    # Hits on a shaped voxel lie on a box face: distances off the voxel grid by sixteenths.
    on_slab = cpu.hit & (cpu.id == 1) & (np.abs(cpu.normal[:, 1]) == 1)
    y_hit = o[on_slab, 1] + d[on_slab, 1] / np.linalg.norm(d[on_slab], axis=1) * cpu.distance[on_slab]
    assert on_slab.sum() > 50
    frac = y_hit - np.floor(y_hit + 1e-4)
    assert np.all((np.abs(frac - 0.5) < 1e-3) | (np.abs(frac) < 1e-3)), "on the slab's top or bottom"
    assert np.any(np.abs(frac - 0.5) < 1e-3), "some on its top, half a voxel up"
    if gpu is not None:
        on_gpu = gpu.upload(world)
        assert_same(cpu, on_gpu.raycast(o, d, 80.0, frame=origin), "shapes on the GPU")
        world.set_shape(1, "cube")
        world.set_shape(4, [((0, 0, 0), (16, 16, 4))])
        assert_same(world.raycast(o, d, 80.0, frame=origin), on_gpu.raycast(o, d, 80.0, frame=origin), "shapes changed")
    for bad in ([((0, 0, 0), (17, 8, 16))], [((4, 0, 0), (4, 8, 16))], [((0, 0, 0), (16, 8, 16))] * 9, [], "round"):
        with pytest.raises(ValueError):
            world.set_shape(5, bad)
    with pytest.raises(ValueError):
        world.set_shape(0, "empty")


def test_minecraft_region_with_shapes():
    path = package_dir("fastanvil") / "resources" / "1.19.4.mca"
    world, palette = vc.World.from_minecraft(path, shapes=True)
    stairs = [i for n, i in palette.items() if "_stairs[" in n]
    assert stairs and all(isinstance(world.shape(i), list) for i in stairs)
    assert world.shape(palette["minecraft:stone"]) == "cube"
