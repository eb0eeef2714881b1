"""1,024 agents' ray observations a step, as one array: the way an RL environment uses voxcast.

    python python/examples/agent_observations.py [--agents 1024] [--steps 20] [--gpu]

Each agent has an ML-Agents-style ray fan (7 rays over 120 degrees, 20 voxels) and walks on
a random heightmap; every step the environment casts all fans in one batch and builds the
observation matrix (agents x rays x (one-hot of 4 ids, "nothing", normalised distance)).
"""

import argparse
import time

import numpy as np

import voxcast as vc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--gpu", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    size = 256
    x, z = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    height = (8 + 4 * np.sin(x / 17.0) + 3 * np.cos(z / 11.0)).astype(int)
    ids = np.zeros((size, 32, size), np.uint8)
    y = np.arange(32)[None, :, None]
    ids[y < height[:, None, :]] = 1  # ground
    trees = rng.random((size, size)) < 0.01
    for tx, tz in zip(*np.nonzero(trees)):
        ids[tx, height[tx, tz]:height[tx, tz] + 5, tz] = 2  # trunks
    walls = rng.random((size, size)) < 0.003
    for wx, wz in zip(*np.nonzero(walls)):
        ids[wx:wx + 6, height[wx, wz]:height[wx, wz] + 3, wz] = 3  # low walls
    world = vc.World.from_dense(ids)
    target = vc.Gpu().upload(world) if args.gpu else world
    fan = vc.SensorRig.ray_fan(3, 60.0, 20.0)

    pos = rng.uniform(20, size - 20, (args.agents, 2))
    yaw = rng.uniform(0, 2 * np.pi, args.agents)
    times = []
    for step in range(args.steps):
        gx, gz = pos[:, 0].astype(int), pos[:, 1].astype(int)
        eye = height[gx, gz] + 1.6
        poses = np.column_stack([pos[:, 0], eye, pos[:, 1], np.zeros(args.agents), np.sin(yaw / 2),
                                 np.zeros(args.agents), np.cos(yaw / 2)])
        started = time.perf_counter()
        obs = vc.ray_perception(target.sense(fan, poses), fan, ids=[1, 2, 3, 4])
        times.append(time.perf_counter() - started)
        # A stand-in policy: turn away from whatever is close ahead, else walk on.
        ahead = obs.reshape(args.agents, len(fan), 6)[:, 0, 5]
        yaw += np.where(ahead < 0.3, 0.8, rng.normal(0, 0.1, args.agents))
        pos += 0.5 * np.column_stack([-np.sin(yaw), -np.cos(yaw)])
        pos = np.clip(pos, 10, size - 10)
    print(f"observations: {obs.shape} {obs.dtype} a step, {args.agents * len(fan)} rays")
    print(f"{'GPU' if args.gpu else 'CPU'}: {np.median(times) * 1e3:.2f} ms a step (median of {args.steps})")


if __name__ == "__main__":
    main()
