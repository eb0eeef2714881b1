"""Sensor rigs: every preset's geometry, poses, points and the observations built from them."""

import math

import numpy as np
import pytest

import voxcast as vc
from conftest import terrain


def elevations(d):
    return np.degrees(np.arcsin(d[:, 1]))


def test_lidar16_geometry():
    rig = vc.SensorRig.lidar16(80.0)
    d, m = rig.rays()
    assert d.shape == (16 * 1800, 3) and np.all(m == 80.0)
    assert np.allclose(np.linalg.norm(d, axis=1), 1.0, atol=1e-5)
    rows = elevations(d).reshape(16, 1800)
    assert np.allclose(rows, np.linspace(-15, 15, 16)[:, None], atol=1e-3)
    az = np.degrees(np.arctan2(-d[:, 0], -d[:, 2])).reshape(16, 1800) % 360
    assert np.allclose(az[3], np.arange(1800) * 0.2, atol=1e-3)
    # The first ray of each channel is straight ahead (-Z), the next turns left (-X).
    assert d[0, 0] == 0 and d[0, 2] < 0 and d[1, 0] < 0


def test_lidar64_geometry():
    d, _ = vc.SensorRig.lidar64().rays()
    rows = elevations(d).reshape(64, 1800)
    assert np.allclose(rows[:, 0], np.linspace(-24.9, 2.0, 64), atol=1e-3)


def test_depth_camera_geometry():
    rig = vc.SensorRig.depth_camera(4, 2, 90.0)
    d, _ = rig.rays()
    t = math.tan(math.radians(45.0))
    want = np.array([[(2 * (u + 0.5) / 4 - 1) * t * 2, (1 - 2 * (v + 0.5) / 2) * t, -1] for v in range(2) for u in range(4)])
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    assert np.allclose(d, want, atol=1e-5)
    assert rig.shape == (2, 4)


def test_ray_fan_geometry():
    d, m = vc.SensorRig.ray_fan(2, 60.0, 15.0).rays()
    angles = np.degrees(np.arctan2(d[:, 0], -d[:, 2]))
    assert np.allclose(angles, [0, 30, -30, 60, -60], atol=1e-3)
    assert np.all(d[:, 1] == 0) and np.all(m == 15.0)


def test_a_pose_turns_the_rig_and_points_lie_on_the_hits():
    ids = np.zeros((64, 64, 64), np.uint8)
    ids[:, :8, :] = 1  # the ground: y < 8
    ids[40:, :, :] = 2  # a wall at x >= 40
    frame = (2**80, 0, 0)
    world = vc.World.from_dense(ids, origin=frame)
    rig = vc.SensorRig([[0, 0, -1], [0, -1, 0]], 100.0)
    # Turned -90 degrees about +Y, forward (-Z) becomes +X; turned +90 degrees, -X.
    s = math.sqrt(0.5)
    poses = np.array([[20.5, 20.5, 20.5, 0, -s, 0, s], [20.5, 20.5, 20.5, 0, s, 0, s]])
    scan = world.sense(rig, poses, frame=frame)
    assert scan.status.shape == (2, 2) and scan.points.shape == (2, 2, 3)
    # The rotation is quantized (to 2^-19), so the distances are close to, not exactly, 19.5.
    assert scan.id[0].tolist() == [2, 1] and np.allclose(scan.ranges[0], [19.5, 12.5], atol=1e-4)
    assert np.allclose(scan.points[0, 0], [40.0, 20.5, 20.5], atol=1e-4)
    assert np.allclose(scan.points[0, 1], [20.5, 8.0, 20.5], atol=1e-4)
    assert scan.status[1, 0] == vc.MISS and np.isnan(scan.points[1, 0]).all() and scan.ranges[1, 0] == np.inf
    assert tuple(scan.voxel[0, 0]) == (40, 20, 20) and scan.voxel_ints((0, 0)) == (2**80 + 40, 20, 20)


def test_depth_image_and_ray_perception():
    world = vc.World.from_dense(terrain())
    cam = vc.SensorRig.depth_camera(32, 24, 60.0, 100.0)
    poses = np.array([[48.0, 40.0, 90.0, 0, 0, 0, 1]])
    scan = world.sense(cam, poses)
    depth = vc.depth_image(scan, cam)
    assert depth.shape == (1, 24, 32)
    hit = scan.hit.reshape(1, 24, 32)
    assert np.all(depth[hit] <= scan.ranges.reshape(1, 24, 32)[hit] + 1e-6)
    fan = vc.SensorRig.ray_fan(3, 70.0, 20.0)
    agents = np.tile([[48.0, 20.0, 48.0, 0, 0, 0, 1]], (1024, 1))
    agents[:, :3] += np.random.default_rng(1).uniform(-30, 30, (1024, 3))
    obs = vc.ray_perception(world.sense(fan, agents), fan, ids=[1, 2, 3, 9])
    assert obs.shape == (1024, 7 * 6) and obs.dtype == np.float32
    per_ray = obs.reshape(1024, 7, 6)
    assert np.all(per_ray[:, :, :5].sum(axis=2) <= 1) and np.all((per_ray[:, :, 5] >= 0) & (per_ray[:, :, 5] <= 1))


def lidar_world():
    return vc.World.from_dense(terrain(), origin=(2**70, 0, 0))


def test_lidar_realism_is_reproducible_from_its_seed():
    world = lidar_world()
    rig = vc.SensorRig.lidar([-10.0, -5.0, 0.0], 2.0, 80.0)
    poses = np.array([[48.0, 30.0, 48.0, 0, 0, 0, 1], [20.0, 30.0, 70.0, 0, 0.6, 0, 0.8]])
    frame = (2**70, 0, 0)
    kw = dict(range_noise=0.05, dropout=0.1, reflectivity={1: 0.2, 2: 0.9}, seed=3)
    a = vc.Lidar(rig, **kw).scan(world, poses, step=5, frame=frame)
    b = vc.Lidar(rig, **kw).scan(world, poses, step=5, frame=frame)
    c = vc.Lidar(rig, **kw).scan(world, poses, step=6, frame=frame)
    assert np.array_equal(a.ranges, b.ranges) and np.array_equal(a.intensity, b.intensity)
    assert not np.array_equal(a.ranges, c.ranges)
    clean = vc.Lidar(rig).scan(world, poses, frame=frame)
    kept = a.returned
    # Dropout near its rate, noise near its spread, intensity from the table and the angle.
    assert 0.05 < 1 - kept.sum() / clean.returned.sum() < 0.15
    diff = a.ranges[kept] - clean.ranges[kept]
    assert 0.03 < diff.std() < 0.07
    assert np.all(a.intensity[a.id == 1] <= 0.2 + 1e-6) and np.all(a.intensity[a.id == 2] <= 0.9 + 1e-6)
    assert np.all(a.intensity[kept] > 0) and np.all(a.ranges[~kept] == np.inf)
    # A point lies on its beam at its (noisy) range.
    r = np.linalg.norm(a.points - poses[:, None, :3], axis=-1)
    assert np.allclose(r[kept], a.ranges[kept], atol=1e-3)


def test_lidar_divergence_and_return_modes():
    world = lidar_world()
    rig = vc.SensorRig.lidar([-8.0, 0.0], 5.0, 80.0)
    poses = np.array([[48.0, 30.0, 48.0, 0, 0, 0, 1]])
    frame = (2**70, 0, 0)
    first = vc.Lidar(rig, divergence_deg=2.0, sub_rays=5, returns="first").scan(world, poses, frame=frame)
    last = vc.Lidar(rig, divergence_deg=2.0, sub_rays=5, returns="last").scan(world, poses, frame=frame)
    strong = vc.Lidar(rig, divergence_deg=2.0, sub_rays=5, returns="strongest").scan(world, poses, frame=frame)
    both = first.returned & last.returned
    assert both.sum() > 20
    assert np.all(first.ranges[both] <= last.ranges[both])
    assert np.any(first.ranges[both] < last.ranges[both])
    assert np.all((first.ranges[both] <= strong.ranges[both]) & (strong.ranges[both] <= last.ranges[both]))
    # The sub-rays lie on a ring a half divergence off their beam's axis.
    subs = vc.sensors._sub_directions(rig.rays()[0].astype(np.float64), 2.0, 5)
    cos = np.einsum("rkc,rc->rk", subs[:, 1:], subs[:, 0])
    assert np.allclose(cos, math.cos(math.radians(1.0)))


def test_lidar_scans_do_not_depend_on_threads_and_bad_poses_return_nothing():
    world = lidar_world()
    frame = (2**70, 0, 0)
    lidar = vc.Lidar(vc.SensorRig.lidar([-10.0, -5.0, 0.0], 1.0, 80.0), divergence_deg=0.5, sub_rays=3,
                     returns="last", range_noise=0.05, dropout=0.1, min_intensity=0.1, seed=2**64 - 1)
    poses = np.array([[48.0, 30.0, 48.0, 0, 0, 0, 1], [np.nan, 30.0, 70.0, 0, 0, 0, 1], [20.0, 30.0, 70.0, 0, 0.6, 0, 0.8]])
    scans = []
    for t in (1, 2, 0):
        vc.set_threads(t)
        scans.append(lidar.scan(world, poses, step=9, frame=frame))
    for s in scans[1:]:
        for name in ("ranges", "intensity", "id"):
            assert np.array_equal(getattr(scans[0], name), getattr(s, name)), name
        assert np.array_equal(scans[0].points, s.points, equal_nan=True)
    a = scans[0]
    assert a.ranges.shape == (3, 1080) and a.points.shape == (3, 1080, 3)
    assert not a.returned[1].any() and np.isnan(a.points[1]).all()
    # Every beam says what it is: the bad pose's beams are INVALID (not open sky), with why.
    assert np.all(a.status[1] == vc.INVALID) and [k for k, _ in a.errors] == [1]
    assert "finite" in a.errors[0][1]
    assert set(np.unique(a.status[[0, 2]])) <= {vc.HIT, vc.MISS} and np.any(a.status[0] == vc.MISS)
    stop = lidar.scan(vc.World.from_dense(terrain()[:40]), poses[:1], unloaded="stop", step=9)
    assert np.any(stop.status == vc.UNLOADED)
    assert a.returned[0].sum() > 100 and np.all(a.intensity[a.returned] >= 0.1)
    with pytest.raises(ValueError, match="seed"):
        vc.Lidar(lidar.rig, seed=-1)
    with pytest.raises(ValueError, match="step"):
        lidar.scan(world, poses, step=-1)
    with pytest.raises(ValueError, match="default_reflectivity"):
        vc.Lidar(lidar.rig, default_reflectivity=2.0)
