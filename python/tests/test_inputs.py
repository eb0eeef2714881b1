"""Bad input: a clear error naming the argument, or a per-ray status; never a crash."""

import numpy as np
import pytest

import voxcast as vc
from conftest import assert_same


@pytest.fixture
def world():
    w = vc.World()
    w.set_voxels([[0, 0, 0]], 1)
    return w


def test_wrong_shapes_name_the_argument(world):
    with pytest.raises(ValueError, match="origins"):
        world.raycast(np.zeros((4, 2)), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="directions"):
        world.raycast(np.zeros((4, 3)), np.zeros((5, 3)))
    with pytest.raises(ValueError, match="max_distance"):
        world.raycast(np.zeros((4, 3)), np.ones((4, 3)), np.ones(3))
    with pytest.raises(ValueError, match="b"):
        world.line_of_sight(np.zeros((4, 3)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="poses"):
        world.sense(vc.SensorRig.ray_fan(2, 45), np.zeros((2, 6)))
    with pytest.raises(ValueError, match="ids"):
        world.set_voxels([[0, 0, 0], [1, 1, 1]], [1, 2, 3])


def test_wrong_dtypes_name_the_argument(world):
    with pytest.raises(TypeError, match="origins"):
        world.raycast(np.array([["a", "b", "c"]]), np.ones((1, 3)))
    with pytest.raises(TypeError, match="voxels"):
        world.set_voxels(np.zeros((1, 3)), 1)
    with pytest.raises(TypeError, match="ids"):
        vc.World.from_dense(np.zeros((2, 2, 2), np.float32))
    with pytest.raises(TypeError, match="rig"):
        world.sense("lidar", np.zeros((1, 7)))


def test_frames_and_offsets_outside_i128(world):
    with pytest.raises(ValueError, match="frame"):
        world.raycast(np.zeros((1, 3)), np.ones((1, 3)), frame=(2**127, 0, 0))
    with pytest.raises(TypeError, match="frame"):
        world.raycast(np.zeros((1, 3)), np.ones((1, 3)), frame=(0.5, 0, 0))
    with pytest.raises(ValueError, match="frame"):
        world.raycast(np.zeros((1, 3)), np.ones((1, 3)), frame=(0, 0))
    with pytest.raises(ValueError, match="voxels"):
        world.set_voxels([[1, 0, 0]], 1, frame=(2**127 - 1, 0, 0))
    with pytest.raises(ValueError, match="ids"):
        world.load_dense(np.ones((2, 2, 2), np.uint8), origin=(2**127 - 1, 0, 0))
    # A ray that starts past the world's edge is one invalid row.
    world.set_voxels([[1, 0, 0]], 1, frame=(2**127 - 2, 0, 0))
    h = world.raycast([[0.5, 0.5, 0.5], [2.0, 0.5, 0.5]], [[1, 0, 0], [1, 0, 0]], frame=(2**127 - 2, 0, 0))
    assert h.status.tolist() == [vc.HIT, vc.INVALID]
    assert h.errors == [(1, "point lies outside the i128 world")]


def test_a_block_too_large_is_refused(world):
    big = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint16), shape=(2**20, 2**20, 2**20), strides=(0, 0, 0))
    with pytest.raises(ValueError, match="too many chunks"):
        world.load_dense(big)


def test_bad_rays_are_rows_not_exceptions(world):
    o = np.array([[0.5, 3, 0.5], [np.nan, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0], [np.inf, 0, 0], [2.0**62, 0, 0]])
    d = np.array([[0, -1, 0], [0, 1, 0], [0, 0, 0], [np.nan, 1, 0], [1, 0, 0], [1, 0, 0], [1, 0, 0]])
    m = np.array([10, 10, 10, 10, -1, 10, 10], np.float32)
    h = world.raycast(o, d, m)
    assert h.status.tolist() == [vc.HIT] + [vc.INVALID] * 6
    why = dict(h.errors)
    assert why[1] == "point is not finite" and "zero" in why[2] and "NaN" in why[3]
    assert "negative" in why[4] and why[5] == "point is not finite" and "2**62" in why[6]
    assert np.isnan(h.distance[1:]).all()


def test_bad_options_and_rigs(world):
    with pytest.raises(ValueError, match="origin_policy"):
        world.raycast(np.zeros((1, 3)), np.ones((1, 3)), origin_policy="inside")
    with pytest.raises(ValueError, match="unloaded"):
        world.raycast(np.zeros((1, 3)), np.ones((1, 3)), unloaded="solid")
    with pytest.raises(ValueError, match="solid"):
        world.raycast(np.zeros((1, 3)), np.ones((1, 3)), solid=[70000])
    with pytest.raises(ValueError, match="ray 1"):
        vc.SensorRig([[0, 0, -1], [0, 0, 0]])
    with pytest.raises(ValueError, match="azimuth"):
        vc.SensorRig.lidar([0.0], 0.7)


def test_empty_batches(world):
    h = world.raycast(np.zeros((0, 3)), np.zeros((0, 3)))
    assert len(h) == 0 and h.voxel.shape == (0, 3)


def test_array_likes_and_empty_batches_everywhere(world):
    # Empty in, empty out, whatever the empty input's shape.
    h = world.raycast([], [], 50)
    assert len(h) == 0 and h.voxel.shape == (0, 3)
    assert len(world.line_of_sight([], [])) == 0
    # A nested list of ids is a dense block, as numpy arrays of any integer type are.
    w = vc.World.from_dense([[[0, 1], [2, 0]], [[0, 0], [3, 0]]])
    assert w.get_voxels([[0, 0, 1], [0, 1, 0], [1, 1, 0]])[0].tolist() == [1, 2, 3]
    assert vc.World.from_dense(np.full((2, 2, 2), 7, np.int64)).get_voxels([[1, 1, 1]])[0].tolist() == [7]
    with pytest.raises(ValueError, match="ids"):
        vc.World.from_dense(np.full((2, 2, 2), 70000))
    with pytest.raises(TypeError, match="ids"):
        vc.World.from_dense([[[0.5]]])


def test_numbers_that_would_be_truncated_or_ignored_are_refused(world):
    with pytest.raises(TypeError, match="ids"):
        world.set_voxels([[0, 0, 0]], 2.9)
    assert world.get_voxels([[0, 0, 0]])[0].tolist() == [1], "the refused edit changed nothing"
    for r in (-1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="radius"):
            world.visible_pairs_within([[0.5, 3, 0.5], [2.5, 3, 0.5]], r)
    with pytest.raises(ValueError, match="fov_y_deg"):
        vc.SensorRig.depth_camera(8, 8, fov_y_deg=180)
    with pytest.raises(ValueError, match="threads"):
        vc.set_threads(10_000)
    with pytest.raises(ValueError, match="threads"):
        vc.set_threads(-1)


def test_a_ray_asked_to_look_farther_than_the_cap_looks_as_far_as_the_cap():
    w = vc.World()
    w.set_voxels([[65_535, 0, 0], [-65_538, 0, 0]], 1)
    o = [[0.0, 0.5, 0.5], [0.0, 0.5, 0.5]]
    d = [[1, 0, 0], [-1, 0, 0]]
    for far in (65_537.0, 1e5, 1e6, 1e30, np.inf):
        h = w.raycast(o, d, far)
        assert h.status.tolist() == [vc.HIT, vc.MISS], far
        assert h.distance[0] == 65_535.0
    # A segment longer than the cap is refused, as a row.
    s = w.line_of_sight([[0.5, 0.5, 0.5]], [[70_000.5, 0.5, 0.5]])
    assert s.status.tolist() == [vc.INVALID] and "cap" in s.errors[0][1]


def test_edits_wait_for_batches_on_other_threads():
    """An edit made while another thread casts on the same world waits for that batch (the
    batch answers for the world as it was), instead of failing with "Already borrowed"."""
    import threading

    w = vc.World()
    w.set_voxels([[x, 0, z] for x in range(64) for z in range(64)], 1)
    n = 200_000
    origins = np.tile([[0.5, 40.5, 0.5]], (n, 1))
    rng = np.random.default_rng(5)
    dirs = rng.normal(size=(n, 3))
    dirs[:, 1] = -np.abs(dirs[:, 1]) - 0.1
    stop = threading.Event()
    errors = []
    batches = [0]

    def cast():
        while not stop.is_set():
            try:
                w.raycast(origins, dirs, 200.0)
                batches[0] += 1
            except Exception as e:  # noqa: BLE001 - every failure is the test's finding
                errors.append(e)
                return

    t = threading.Thread(target=cast)
    t.start()
    try:
        edits = 0
        while batches[0] < 3 and not errors:
            w.set_voxels([[edits % 64, 1, 7]], 2)
            w.skip_empty_bricks = None
            edits += 1
    finally:
        stop.set()
        t.join()
    assert not errors, errors
    assert edits > 0
    ids, _ = w.get_voxels([[x, 1, 7] for x in range(min(edits, 64))])
    assert (ids == 2).all()


def test_the_documented_precision_of_float64_offsets():
    """The package's precision statement: a start is within 2**-25 voxels of the float64 it
    is given, and a float64 is within half its spacing of the number meant (at most 2**-25
    below 2**28 from the frame, 2**-13 below 2**40). Measured through the distance to the
    face of the next voxel (under one voxel, so the f32 distance adds at most 2**-25)."""
    from fractions import Fraction

    rng = np.random.default_rng(11)
    w = vc.World()
    for scale, bound in [(2.0**20, 2.0**-24), (2.0**27, 2.0**-24), (2.0**39, 2.0**-12)]:
        meant = [Fraction(int(scale) + int(k)) + Fraction(int(n), 1000) for k, n in
                 zip(rng.integers(0, 1000, 20), rng.integers(1, 999, 20))]
        walls = [int(m) + 1 for m in meant]
        # One row of y per ray, so that no ray starts in another's wall.
        w.set_voxels([[x, 2 * i, 0] for i, x in enumerate(walls)], 1)
        origins = np.array([[float(m), 2 * i + 0.5, 0.5] for i, m in enumerate(meant)])
        hits = w.raycast(origins, np.tile([1.0, 0.0, 0.0], (len(meant), 1)), 2.0)
        assert (hits.status == vc.HIT).all()
        for m, x, d in zip(meant, walls, hits.distance):
            exact = Fraction(x) - m
            assert abs(Fraction(float(d)) - exact) <= Fraction(bound), (scale, m, d)


def _bar_rays(rng, n):
    """Rays along a long bar of id 1 that only id 2 stops (``_bar_world``): hundreds of voxel
    steps each, in the dtypes the calls take, so that a call spends its time casting."""
    o = rng.uniform(1.0, 31.0, size=(n, 3))
    o[:, 0] = rng.uniform(1.0, 1023.0, size=n)
    d = np.column_stack([rng.choice([-1.0, 1.0], n), rng.normal(0, 0.01, (n, 2))])
    return o, d.astype(np.float32)


def _bar_world():
    return vc.World.from_dense(np.ones((1024, 32, 32), np.uint8))


def _ctrl_c_after_a_second(call):
    """Runs ``call`` (on the main thread) with Ctrl-C sent to this process a second in: the
    seconds from the signal to ``KeyboardInterrupt`` (which must come)."""
    import os
    import signal
    import threading
    import time

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        call()
        time.sleep(10)  # Without the checks, the interrupt arrives only after the call.
    took = time.perf_counter() - start
    timer.join()
    return took - 1.0


def _seconds(call):
    import time

    t = time.perf_counter()
    call()
    return time.perf_counter() - t


def test_ctrl_c_stops_a_gpu_batch_soon_and_leaves_the_gpu_usable(gpu):
    """Ctrl-C during a long GPU batch raises KeyboardInterrupt within a fraction of a second
    (the batch's dispatches in flight are abandoned), and the GPU answers the next batches as
    the CPU does."""
    w = _bar_world()
    on_gpu = gpu.upload(w)
    rng = np.random.default_rng(4)
    o, d = _bar_rays(rng, 1 << 16)
    on_gpu.raycast(o, d, 2000.0, solid=[2])
    per_ray = _seconds(lambda: on_gpu.raycast(o, d, 2000.0, solid=[2])) / len(o)
    n = int(min(6.0 / per_ray, 1 << 23))
    o, d = _bar_rays(rng, n)
    took = _ctrl_c_after_a_second(lambda: on_gpu.raycast(o, d, 2000.0, solid=[2]))
    if per_ray * n > 3.0:
        assert took < 1.0, f"Ctrl-C took {took:.2f} s to stop a {per_ray * n:.1f} s batch"
    # The next batches, of every kind that waits on the GPU, answer as the CPU does.
    o, d = _bar_rays(rng, 5000)
    assert_same(w.raycast(o, d, 2000.0, solid=[2]), on_gpu.raycast(o, d, 2000.0, solid=[2]), "rays after Ctrl-C")
    assert_same(w.line_of_sight(o[:100], o[100:200]), on_gpu.line_of_sight(o[:100], o[100:200]), "sight after Ctrl-C")


def test_sense_in_bands_answers_each_pose_as_alone(gpu):
    """A CPU sweep from many poses is cast in bands of poses (Ctrl-C is heard between them):
    every pose's answers, bad poses and their errors among them, equal that pose's sweep alone
    and the GPU's."""
    from conftest import terrain

    w = vc.World.from_dense(terrain())
    rng = np.random.default_rng(8)
    d = rng.normal(0, 1, (5000, 3))
    rig = vc.SensorRig((d / np.linalg.norm(d, axis=1)[:, None]).astype(np.float32), 60.0)
    poses = np.zeros((40, 7))
    poses[:, :3] = rng.uniform(4, 90, (40, 3))
    poses[:, 1] = rng.uniform(20, 40, 40)
    poses[:, 6] = 1.0
    poses[[3, 17, 39], 0] = np.nan
    scan = w.sense(rig, poses)
    assert scan.status.shape == (40, 5000)
    assert sorted({row // 5000 for row, _ in scan.errors}) == [3, 17, 39]
    for a in range(40):
        alone = w.sense(rig, poses[a : a + 1])
        assert np.array_equal(alone.status[0], scan.status[a]), a
        assert np.array_equal(alone.distance[0].view(np.uint32), scan.distance[a].view(np.uint32)), a
        assert np.array_equal(alone.voxel[0], scan.voxel[a]), a
    assert_same(scan, gpu.upload(w).sense(rig, poses), "sense on the GPU")


@pytest.mark.parametrize("call", ["sense", "agents"])
def test_ctrl_c_stops_cpu_sensors_and_agents_soon(call):
    """Ctrl-C during a long CPU sensor sweep or agent visibility call raises
    KeyboardInterrupt within a fraction of a second, and the next call answers."""
    w = _bar_world()
    rng = np.random.default_rng(5)
    d = np.column_stack([rng.choice([-1.0, 1.0], 4096), rng.normal(0, 0.01, (4096, 2))])
    rig = vc.SensorRig(d.astype(np.float32), 2000.0)

    def run(n):
        if call == "sense":
            poses = np.zeros((n, 7))
            poses[:, 0] = rng.uniform(1.0, 1023.0, n)
            poses[:, 1:3] = rng.uniform(1.0, 31.0, (n, 2))
            poses[:, 6] = 1.0
            return w.sense(rig, poses, solid=[2])
        eyes = rng.uniform(1.0, 31.0, (n, 3))
        eyes[:, 0] = rng.uniform(1.0, 1023.0, n)
        pairs = rng.integers(0, n, (n * 64, 2))
        return w.agent_visibility(eyes, pairs, solid=[2])

    per_unit = _seconds(lambda: run(16)) / 16
    n = int(min(6.0 / per_unit, 1 << 16))
    took = _ctrl_c_after_a_second(lambda: run(n))
    print(f"{call}: a {per_unit * n:.1f} s call stopped after {took:.2f} s")
    if per_unit * n > 3.0:
        assert took < 1.0, f"Ctrl-C took {took:.2f} s to stop a {per_unit * n:.1f} s call"
    assert len(run(2).status) > 0


def test_ctrl_c_stops_a_cpu_batch_soon_and_leaves_the_world_usable():
    """Ctrl-C during a long CPU batch raises KeyboardInterrupt within a fraction of a second,
    not when the batch would have ended, and the world answers the next batch as before."""
    w = _bar_world()
    rng = np.random.default_rng(3)
    o, d = _bar_rays(rng, 1 << 16)
    per_ray = _seconds(lambda: w.raycast(o, d, 2000.0, solid=[2])) / len(o)
    # A batch that would take seconds (about 6, at most 4 M rays).
    n = int(min(6.0 / per_ray, 1 << 22))
    o, d = _bar_rays(rng, n)
    took = _ctrl_c_after_a_second(lambda: w.raycast(o, d, 2000.0, solid=[2]))
    assert took < 1.0, f"Ctrl-C took {took:.2f} s to stop a {per_ray * n:.1f} s batch"
    hits = w.raycast([[0.5, 0.5, -3.5]], [[0.0, 0.0, 1.0]], 10.0)
    assert hits.status[0] == vc.HIT and hits.distance[0] == 3.5
