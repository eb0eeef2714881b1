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
