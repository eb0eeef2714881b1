"""The CPU reference through Python: answers against a brute-force walk in numpy, frames and
exact voxels at i128 offsets, world edits, options."""

import math

import numpy as np
import pytest

import voxcast as vc
from conftest import OFFSETS, terrain


def brute_first_hit(ids, o, d, max_distance, step=1e-3):
    """The first solid voxel along the ray by sampling every `step` voxels: the voxel and the
    distance to within `step` (rays that pass near an edge are left out by the caller)."""
    d = d / np.linalg.norm(d)
    t = np.arange(0.0, max_distance, step)
    p = o[None, :] + t[:, None] * d[None, :]
    v = np.floor(p).astype(np.int64)
    inside = np.all((v >= 0) & (v < np.asarray(ids.shape)), axis=1)
    solid = np.zeros(len(t), bool)
    solid[inside] = ids[v[inside, 0], v[inside, 1], v[inside, 2]] != 0
    k = np.argmax(solid)
    if not solid[k]:
        return None, None
    return tuple(v[k]), t[k]


def test_raycasts_match_a_brute_force_walk():
    ids = terrain(size=(48, 32, 48))
    world = vc.World.from_dense(ids)
    rng = np.random.default_rng(3)
    n = 300
    o = rng.uniform(1, 47, (n, 3))
    o[:, 1] = rng.uniform(20, 31, n)
    d = rng.normal(size=(n, 3))
    hits = world.raycast(o, d, 40.0)
    checked = 0
    for i in range(n):
        voxel, t = brute_first_hit(ids, o[i], d[i], 40.0)
        if voxel is None:
            if hits.status[i] == vc.MISS:
                checked += 1
            continue
        if abs(hits.distance[i] - t) > 2e-3 and hits.status[i] == vc.HIT:
            # Within the sampling step of an edge: the walk's exact answer may be either voxel.
            continue
        assert hits.status[i] == vc.HIT, i
        assert tuple(hits.voxel[i]) == voxel, i
        assert abs(hits.distance[i] - t) <= 2e-3, i
        assert hits.id[i] == ids[voxel]
        checked += 1
    assert checked > 250


@pytest.mark.parametrize("frame", OFFSETS)
def test_the_same_world_answers_the_same_at_every_offset(frame):
    ids = terrain(size=(64, 32, 64))
    here = vc.World.from_dense(ids)
    there = vc.World.from_dense(ids, origin=frame)
    rng = np.random.default_rng(5)
    o = rng.uniform(0, 64, (2000, 3))
    d = rng.normal(size=(2000, 3))
    a = here.raycast(o, d, 50.0)
    b = there.raycast(o, d, 50.0, frame=frame)
    for name in ("status", "voxel", "normal", "id"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.array_equal(a.distance, b.distance)
    k = int(np.argmax(b.hit))
    assert b.voxel_ints(k) == tuple(f + int(v) for f, v in zip(frame, a.voxel[k]))


def test_a_hit_reports_voxel_face_distance_id_and_uv():
    world = vc.World()
    world.set_voxels([[4, 0, 0]], 5, frame=(2**100, 0, 0))
    h = world.raycast([[0.5, 0.25, 0.75]], [[1, 0, 0]], 10.0, frame=(2**100, 0, 0))
    assert h.status[0] == vc.HIT and h.hit[0]
    assert h.voxel.tolist() == [[4, 0, 0]]
    assert h.voxel_ints(0) == (2**100 + 4, 0, 0)
    assert h.normal.tolist() == [[-1, 0, 0]]
    assert h.distance[0] == np.float32(3.5)
    assert h.id[0] == 5
    assert h.uv.dtype == np.float32 and np.all((h.uv >= 0) & (h.uv <= 1))
    # Too short, then cleared.
    assert world.raycast([[0.5, 0.25, 0.75]], [[1, 0, 0]], 3.0, frame=(2**100, 0, 0)).status[0] == vc.MISS
    world.clear_voxels([[4, 0, 0]], frame=(2**100, 0, 0))
    assert world.raycast([[0.5, 0.25, 0.75]], [[1, 0, 0]], 10.0, frame=(2**100, 0, 0)).status[0] == vc.MISS


@pytest.mark.parametrize(
    "x",
    [0.0, -0.0, 0.5, -0.5, -1.0, 1e-300, -(2.0**-20), 2.5, -2.5, 2.0**52 - 0.5, -(2.0**52) + 0.5,
     2.0**53 + 2, -(2.0**53) - 2, 2.0**61 + 2048, -(2.0**61) - 2048],
)
def test_a_point_lies_in_the_voxel_of_its_floor(x):
    # The start voxel of a ray from x is floor(x), at any magnitude up to 2^62 (where the offset
    # in it does not round up to 1 in f32).
    world = vc.World()
    v = math.floor(x)
    world.set_voxels([[v, 0, 0]], 7)
    h = world.raycast([[x, 0.5, 0.5]], [[1.0, 0, 0]], 0.0)
    assert h.status[0] == vc.HIT and h.voxel.tolist() == [[v, 0, 0]] and h.distance[0] == 0.0
    assert h.voxel_ints(0) == (v, 0, 0)


def test_options_origin_unloaded_and_solid():
    world = vc.World()
    world.set_voxels([[0, 0, 0], [3, 0, 0]], [1, 2])
    o, d = [[0.5, 0.5, 0.5]], [[1, 0, 0]]
    assert world.raycast(o, d, 10.0).distance[0] == 0.0
    skip = world.raycast(o, d, 10.0, origin_policy="skip")
    assert skip.voxel.tolist() == [[3, 0, 0]] and skip.id[0] == 2
    only2 = world.raycast(o, d, 10.0, solid=[2])
    assert only2.id[0] == 2
    # Past the loaded chunk: air, or a stop where unloaded space begins.
    far = world.raycast([[0.5, 0.5, 0.5]], [[-1, 0, 0]], 100.0, origin_policy="skip")
    assert far.status[0] == vc.MISS
    stop = world.raycast([[0.5, 0.5, 0.5]], [[-1, 0, 0]], 100.0, origin_policy="skip", unloaded="stop")
    assert stop.status[0] == vc.UNLOADED and stop.voxel.tolist() == [[-1, 0, 0]]
    assert stop.distance[0] == np.float32(0.5)


def test_line_of_sight_and_its_conservative_mode():
    world = vc.World()
    # The segment passes exactly through the edge between voxels (1, 0, 0) and (0, 1, 0); at
    # the tie the walk steps along x first, so only the conservative mode meets (0, 1, 0).
    world.set_voxels([[0, 1, 0]], 1)
    a, b = [[0.5, 0.5, 0.5]], [[1.5, 1.5, 0.5]]
    assert world.line_of_sight(a, b).visible.tolist() == [True]
    assert world.line_of_sight(a, b, conservative=True).visible.tolist() == [False]
    world.set_voxels([[1, 0, 0]], 1)
    blocked = world.line_of_sight([[0.5, 0.5, 0.5]], [[3.5, 0.5, 0.5]])
    assert not blocked.visible[0] and blocked.voxel.tolist() == [[1, 0, 0]]


def test_edits_in_bulk_and_reads():
    world = vc.World()
    v = np.array([[0, 0, 0], [40, -3, 2], [-100, 5, 99]])
    world.set_voxels(v, np.array([1, 2, 3]), frame=(2**90, 0, 0))
    ids, loaded = world.get_voxels(np.vstack([v, [[1000, 0, 0]]]), frame=(2**90, 0, 0))
    assert ids.tolist() == [1, 2, 3, 0] and loaded.tolist() == [True, True, True, False]
    assert world.chunk_count == 3


def test_load_dense_keeps_what_lies_outside_the_block():
    world = vc.World()
    world.set_voxels([[31, 31, 31]], 4)
    world.load_dense(np.ones((2, 2, 2), np.uint8), origin=(0, 0, 0))
    ids, _ = world.get_voxels([[31, 31, 31], [1, 1, 1], [2, 2, 2]])
    assert ids.tolist() == [4, 1, 0]


def test_answers_do_not_depend_on_threads_or_layout():
    ids = terrain(size=(48, 32, 48))
    world = vc.World.from_dense(ids)
    rng = np.random.default_rng(9)
    o = rng.uniform(0, 48, (5000, 3))
    d = rng.normal(size=(5000, 3))
    a = world.raycast(o, d, 30.0)
    # Fortran order, a strided view and float32 origins (exact in f64) give the same answers.
    of = np.asfortranarray(o.astype(np.float32).astype(np.float64))
    b = world.raycast(of, np.asfortranarray(d)[:, :], 30.0)
    c = world.raycast(o.astype(np.float32).astype(np.float64), d, 30.0)
    assert np.array_equal(b.voxel, c.voxel) and np.array_equal(b.distance, c.distance)
    assert a.status.shape == (5000,)
    import threading

    out = [None] * 4

    def run(k):
        out[k] = world.raycast(o, d, 30.0)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in out:
        assert np.array_equal(r.voxel, a.voxel) and np.array_equal(r.distance, a.distance)


def test_either_walk_gives_the_same_answers():
    world = vc.World.from_dense(terrain())
    rng = np.random.default_rng(12)
    o = rng.uniform(0, 96, (20000, 3))
    d = rng.normal(size=(20000, 3))
    answers = []
    for skip in (None, True, False):
        world.skip_empty_bricks = skip
        assert world.skip_empty_bricks is skip
        answers.append(world.raycast(o, d, 200.0))
    for other in answers[1:]:
        for name in ("status", "voxel", "normal", "id", "distance"):
            assert np.array_equal(getattr(answers[0], name), getattr(other, name)), name
    with pytest.raises(TypeError, match="skip_empty_bricks"):
        world.skip_empty_bricks = "yes"


@pytest.mark.parametrize("frame", [OFFSETS[0], OFFSETS[2]])
def test_rays_from_one_eye_answer_as_rays_cast_alone(frame):
    """A camera's rays in pixel order from one eye (cast as sweeps, blocks of nearby
    directions crossing the air together) answer exactly as the same rays shuffled, which no
    sweep groups, and as rays cast one a call; bad rows among them stay rows."""
    from conftest import assert_same

    ids = terrain(size=(96, 48, 96))
    world = vc.World.from_dense(ids, origin=frame)
    w, h = 120, 80
    u, v = np.meshgrid((np.arange(w) + 0.5) / w * 2 - 1, (np.arange(h) + 0.5) / h * 2 - 1)
    d = np.column_stack([u.ravel() * 0.8, -0.6 - 0.3 * v.ravel(), np.ones(w * h)])
    # Two eyes, the second's rays after the first's, over the terrain and near a chunk edge.
    o = np.repeat([[48.5, 40.25, 2.0], [31.999, 44.0, 64.0]], w * h, axis=0)
    d = np.vstack([d, d[:, [2, 1, 0]] * [-1, 1, 1]])
    o[1000] = np.nan
    d[5000] = 0.0
    a = world.raycast(o, d, 200.0, frame=frame)
    perm = np.random.default_rng(4).permutation(len(o))
    b = world.raycast(o[perm], d[perm], 200.0, frame=frame)
    inv = np.argsort(perm)
    b = vc.Hits(b.frame, b.status[inv], b.voxel[inv], b.normal[inv], b.distance[inv], b.id[inv], b.uv[inv],
                sorted((int(perm[i]), e) for i, e in b.errors))
    assert_same(a, b, "one eye against shuffled")
    assert (a.status == 1).sum() > len(o) // 2, "most rays hit the ground"
    assert [i for i, _ in a.errors] == [1000, 5000]
    for i in range(0, len(o), 997):
        one = world.raycast(o[i:i + 1], d[i:i + 1], 200.0, frame=frame)
        assert one.status[0] == a.status[i] and np.array_equal(one.voxel[0], a.voxel[i]), i
        assert one.distance.view(np.uint32)[0] == a.distance.view(np.uint32)[i], i


@pytest.mark.parametrize("frame", [OFFSETS[0], OFFSETS[3]])
def test_the_camera_call_answers_as_its_rays_cast_one_by_one(frame):
    """`raycast_camera` (8x8 tiles crossing air together) gives, pixel by pixel, what
    `raycast` gives for the rays of `camera_directions`, at i128 offsets; bad cameras raise."""
    from conftest import assert_same

    world = vc.World.from_dense(terrain(size=(96, 48, 96)), origin=frame)
    eye, fwd = [48.5, 40.25, 2.0], [0.1, -0.5, 0.9]
    img = world.raycast_camera(eye, fwd, width=100, height=60, fov_y_degrees=70, max_distance=150.0, frame=frame)
    assert img.status.shape == (60, 100) and img.voxel.shape == (60, 100, 3)
    dirs = vc.camera_directions(fwd, width=100, height=60, fov_y_degrees=70)
    assert dirs.shape == (60, 100, 3) and dirs.dtype == np.float32
    assert np.allclose(np.linalg.norm(dirs, axis=2), 1.0, atol=1e-6)
    d = dirs.reshape(-1, 3)
    perm = np.random.default_rng(1).permutation(len(d))
    alone = world.raycast(np.tile(eye, (len(d), 1)), d[perm], 150.0, frame=frame)
    inv = np.argsort(perm)
    flat = vc.Hits(img.frame, img.status.ravel(), img.voxel.reshape(-1, 3), img.normal.reshape(-1, 3),
                   img.distance.ravel(), img.id.ravel(), img.uv.reshape(-1, 2))
    alone = vc.Hits(alone.frame, alone.status[inv], alone.voxel[inv], alone.normal[inv], alone.distance[inv],
                    alone.id[inv], alone.uv[inv])
    assert_same(flat, alone, "camera against its rays one by one")
    assert img.hit.mean() > 0.5, "the camera sees the ground"
    with pytest.raises(ValueError, match="camera"):
        world.raycast_camera(eye, [0, 1, 0])  # looks straight up along `up`
    with pytest.raises(ValueError, match="width"):
        world.raycast_camera(eye, fwd, width=0)
    with pytest.raises(ValueError, match="camera"):
        world.raycast_camera(eye, fwd, width=2**20, height=2**11)
    with pytest.raises(ValueError, match="position"):
        world.raycast_camera([np.nan, 0, 0], fwd)
