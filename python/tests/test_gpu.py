"""The GPU against the CPU reference, ray by ray: every call, at i128 offsets, after edits."""

import numpy as np
import pytest

import voxcast as vc
from conftest import OFFSETS, assert_same, random_rays, terrain


@pytest.mark.parametrize("frame", OFFSETS)
def test_raycasts_equal_the_cpu(gpu, frame):
    ids = terrain()
    world = vc.World.from_dense(ids, origin=frame)
    on_gpu = gpu.upload(world)
    o, d = random_rays(20000, ids.shape, seed=11)
    for opts in ({}, {"origin_policy": "skip", "unloaded": "stop"}, {"origin_policy": "exit", "solid": [1, 9]}):
        cpu = world.raycast(o, d, 80.0, frame=frame, **opts)
        assert np.count_nonzero(cpu.hit) > 5000
        assert_same(cpu, on_gpu.raycast(o, d, 80.0, frame=frame, **opts), f"{frame} {opts}")


@pytest.mark.parametrize("frame", [OFFSETS[0], OFFSETS[2]])
def test_camera_images_equal_the_cpu(gpu, frame):
    world = vc.World.from_dense(terrain(), origin=frame)
    args = dict(width=96, height=64, fov_y_degrees=75, max_distance=120.0, frame=frame)
    for eye, fwd, opts in (([48.5, 40.25, 2.0], [0.1, -0.5, 0.9], {}), ([5.5, 8.5, 90.0], [1, 0.1, -1], {"solid": [1, 9]})):
        cpu = world.raycast_camera(eye, fwd, **args, **opts)
        assert cpu.hit.mean() > 0.3
        assert_same(cpu, gpu.upload(world).raycast_camera(eye, fwd, **args, **opts), f"{frame} {eye}")


@pytest.mark.parametrize("conservative", [False, True])
def test_line_of_sight_equals_the_cpu(gpu, conservative):
    frame = (2**64, 0, -(2**100))
    ids = terrain()
    world = vc.World.from_dense(ids, origin=frame)
    on_gpu = gpu.upload(world)
    rng = np.random.default_rng(4)
    a = rng.uniform(0, 96, (10000, 3))
    b = np.floor(rng.uniform(0, 96, (10000, 3))) + 0.5
    cpu = world.line_of_sight(a, b, frame=frame, conservative=conservative)
    assert 0 < np.count_nonzero(cpu.visible) < 10000
    assert_same(cpu, on_gpu.line_of_sight(a, b, frame=frame, conservative=conservative), "sight")


@pytest.mark.parametrize("frame", [OFFSETS[0], OFFSETS[2]])
def test_sensor_sweeps_equal_the_cpu(gpu, frame):
    world = vc.World.from_dense(terrain(), origin=frame)
    on_gpu = gpu.upload(world)
    rng = np.random.default_rng(2)
    q = rng.normal(size=(9, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    poses = np.hstack([rng.uniform(10, 86, (9, 3)), q])
    poses[4, 3:] = (0, 0, 0, 2)  # not a rotation: that agent's rays are invalid
    for rig in (vc.SensorRig.lidar16(60.0), vc.SensorRig.depth_camera(64, 48, 70.0, 90.0)):
        cpu = world.sense(rig, poses, frame=frame)
        gpu_scan = on_gpu.sense(rig, poses, frame=frame)
        assert_same(cpu, gpu_scan, "sense")
        assert np.array_equal(np.isnan(cpu.points), np.isnan(gpu_scan.points))
        assert np.array_equal(np.nan_to_num(cpu.points), np.nan_to_num(gpu_scan.points))
        assert np.all(cpu.status[4] == vc.INVALID) and np.any(cpu.hit)


def test_a_rig_of_more_rays_than_one_part_holds(gpu):
    world = vc.World.from_dense(terrain())
    rig = vc.SensorRig.lidar64(100.0)
    assert len(rig) == 64 * 1800 > vc._voxcast.MAX_RIG_PART
    poses = np.array([[48.0, 30.0, 48.0, 0, 0, 0, 1], [20.0, 25.0, 70.0, 0, 0.6, 0, 0.8]])
    assert_same(world.sense(rig, poses), gpu.upload(world).sense(rig, poses), "lidar64")


def test_the_upload_follows_edits(gpu):
    world = vc.World.from_dense(terrain())
    on_gpu = gpu.upload(world)
    o, d = random_rays(5000, (96, 48, 96), seed=6)
    before = on_gpu.raycast(o, d, 60.0)
    rng = np.random.default_rng(8)
    cells = rng.integers(0, 96, (1000, 3))
    cells[:, 1] %= 48
    world.set_voxels(cells, 12)
    world.set_voxels([[500, 0, 0]], 3)  # a chunk the upload never had
    after_cpu = world.raycast(o, d, 60.0)
    after_gpu = on_gpu.raycast(o, d, 60.0)
    assert_same(after_cpu, after_gpu, "after edits")
    assert not np.array_equal(before.voxel, after_gpu.voxel)
    far = world.raycast([[400.5, 0.5, 0.5]], [[1, 0, 0]], 200.0)
    assert_same(far, on_gpu.raycast([[400.5, 0.5, 0.5]], [[1, 0, 0]], 200.0), "new chunk")
    assert far.id[0] == 3


def test_bad_rays_are_answered_alike(gpu):
    world = vc.World.from_dense(terrain())
    o = np.array([[1.0, 40, 1], [np.nan, 1, 1], [1, 1, 1], [2.0**63, 0, 0], [5, 40, 5]])
    d = np.array([[0, -1, 0], [0, 1, 0], [0, 0, 0], [1, 0, 0], [np.inf, 0, 0]], dtype=np.float64)
    cpu = world.raycast(o, d, 50.0)
    assert cpu.status.tolist() == [vc.HIT, vc.INVALID, vc.INVALID, vc.INVALID, vc.INVALID]
    assert_same(cpu, gpu.upload(world).raycast(o, d, 50.0), "bad rays")
    # Farther than the cap: the cap, on both engines.
    assert_same(world.raycast(o, d, 1e30), gpu.upload(world).raycast(o, d, 1e30), "far rays")


def test_lidar_realism_equals_on_cpu_and_gpu(gpu):
    frame = (2**100, 0, 2**100)
    world = vc.World.from_dense(terrain(), origin=frame)
    on_gpu = gpu.upload(world)
    lidar = vc.Lidar(
        vc.SensorRig.lidar16(80.0),
        divergence_deg=0.3,
        sub_rays=3,
        returns="strongest",
        reflectivity={1: 0.3, 2: 0.7, 3: 0.5, 9: 1.0},
        range_noise=0.02,
        dropout=0.05,
        seed=11,
    )
    poses = np.array([[48.0, 30.0, 48.0, 0, 0, 0, 1], [10.0, 25.0, 80.0, 0, 0.6, 0, 0.8]])
    a = lidar.scan(world, poses, step=2, frame=frame)
    b = lidar.scan(on_gpu, poses, step=2, frame=frame)
    assert a.returned.sum() > 10000
    for name in ("ranges", "intensity", "id"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.array_equal(np.nan_to_num(a.points), np.nan_to_num(b.points))


def test_the_readme_example_runs(gpu):
    """The README's "From Python" example, run as written."""
    import pathlib
    import re

    readme = pathlib.Path(__file__).resolve().parents[2] / "README.md"
    section = readme.read_text().split("## From Python", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    from conftest import assert_same

    assert_same(scope["hits"], scope["same"], "README")
    assert scope["hits"].hit.sum() > 1000 and scope["scan"].returned.sum() > 1000


def test_a_software_adapter_says_so(gpu):
    """lavapipe and llvmpipe (what CI runs) are software adapters; the summary says so too."""
    if "llvmpipe" in gpu.adapter or "lavapipe" in gpu.adapter:
        assert gpu.is_software
    assert gpu.is_software == (", software" in gpu.adapter)
