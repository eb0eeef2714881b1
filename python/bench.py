"""voxcast beside the raycasters Python users have, on one voxel scene, in one run.

    scripts/python.sh bench [--threads 1 2] [--quick]

Speeds are medians of 5 runs, voxcast's and Open3D's alternated. The peers: Open3D's ``RaycastingScene`` (Embree's BVH over the voxels' exposed faces as
triangles) and pyoctomap's ``OcTree.castRay`` (an octree of the same voxels at resolution 1,
one ray a call). voxcast answers on the CPU (on the threads given) and on the GPU where one is
present. For each workload the table gives rays per second and how many answers agree with
voxcast's: the same hit voxel (Open3D: the voxel behind the hit face; OctoMap: the voxel whose
centre it returns) and, for Open3D, the same distance within 1e-3 voxels. Rays that pass
exactly through an edge or a corner of voxels may enter a different (equally first) voxel in
a triangle mesh; OctoMap's own DDA steps with a floating-point accumulator.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time

import sys
from pathlib import Path

# numpy's BLAS threads would spin beside the raycasters timed here.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

# This file lies beside the package's sources (python/voxcast, without its native module):
# import the installed package instead.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
import voxcast as vc  # noqa: E402


def scene(size: int = 256, height: int = 64, seed: int = 1) -> np.ndarray:
    """A heightmap terrain of a few ids with trees: what a game or a mapping robot meets."""
    rng = np.random.default_rng(seed)
    x, z = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    h = (18 + 8 * np.sin(x / 23.0) * np.cos(z / 17.0) + 4 * np.sin((x + 2 * z) / 9.0)).astype(int)
    ids = np.zeros((size, height, size), np.uint8)
    y = np.arange(height)[None, :, None]
    ids[y < h[:, None, :]] = 1
    ids[y == (h - 1)[:, None, :]] = 2
    for tx, tz in zip(*np.nonzero(rng.random((size, size)) < 0.004)):
        top = h[tx, tz]
        ids[tx, top:top + 6, tz] = 3
        ids[max(tx - 2, 0):tx + 3, top + 4:top + 8, max(tz - 2, 0):tz + 3] = 4
    return ids, h


def exposed_faces(ids: np.ndarray):
    """The faces of solid voxels that touch air (or the edge), as triangles (float32 vertices,
    int32 triangles) and the voxel of each triangle."""
    solid = ids != 0
    verts, tris, owner = [], [], []
    corners = {
        (0, -1): [(0, 0, 0), (0, 0, 1), (0, 1, 1), (0, 1, 0)],
        (0, 1): [(1, 0, 0), (1, 1, 0), (1, 1, 1), (1, 0, 1)],
        (1, -1): [(0, 0, 0), (1, 0, 0), (1, 0, 1), (0, 0, 1)],
        (1, 1): [(0, 1, 0), (0, 1, 1), (1, 1, 1), (1, 1, 0)],
        (2, -1): [(0, 0, 0), (0, 1, 0), (1, 1, 0), (1, 0, 0)],
        (2, 1): [(0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)],
    }
    base = 0
    for (axis, sign), quad in corners.items():
        neighbour = np.zeros_like(solid)
        src = [slice(None)] * 3
        dst = [slice(None)] * 3
        if sign < 0:
            src[axis], dst[axis] = slice(0, -1), slice(1, None)
        else:
            src[axis], dst[axis] = slice(1, None), slice(0, -1)
        neighbour[tuple(dst)] = solid[tuple(src)]
        v = np.argwhere(solid & ~neighbour)
        n = len(v)
        q = v[:, None, :] + np.asarray(quad)[None, :, :]
        verts.append(q.reshape(-1, 3))
        k = base + 4 * np.arange(n)[:, None]
        tris.append(np.concatenate([k + [0, 1, 2], k + [0, 2, 3]], axis=0))
        owner.append(np.concatenate([v, v], axis=0))
        base += 4 * n
    return (
        np.concatenate(verts).astype(np.float32),
        np.concatenate(tris).astype(np.int32),
        np.concatenate(owner),
    )


class Open3D:
    name = "Open3D RaycastingScene"

    def __init__(self, ids, threads):
        import open3d as o3d

        self.o3d = o3d
        self.threads = threads
        self.build(ids)

    def build(self, ids):
        o3d = self.o3d
        v, t, self.owner = exposed_faces(ids)
        mesh = o3d.t.geometry.TriangleMesh()
        mesh.vertex.positions = o3d.core.Tensor(v)
        mesh.triangle.indices = o3d.core.Tensor(t)
        self.scene = o3d.t.geometry.RaycastingScene()
        self.scene.add_triangles(mesh)
        self.triangles = len(t)

    def cast(self, o, d, max_distance):
        rays = np.hstack([o, d]).astype(np.float32)
        r = self.scene.cast_rays(self.o3d.core.Tensor(rays), nthreads=self.threads)
        t = r["t_hit"].numpy()
        prim = r["primitive_ids"].numpy()
        hit = t <= max_distance
        return hit, np.where(hit[:, None], self.owner[np.minimum(prim, len(self.owner) - 1)], 0), t


class OctoMap:
    name = "pyoctomap castRay"

    def __init__(self, ids):
        import pyoctomap

        self.tree = pyoctomap.OcTree(1.0)
        # Only voxels that touch air can be a ray's first hit; unknown space is ignored.
        _, _, owner = exposed_faces(ids)
        for p in np.unique(owner, axis=0):
            self.tree.updateNode(p.astype(np.float64) + 0.5, True)
        self.tree.updateInnerOccupancy()

    def set(self, voxel, occupied):
        self.tree.updateNode(np.asarray(voxel, np.float64) + 0.5, bool(occupied))

    def cast(self, o, d, max_distance):
        n = len(o)
        hit = np.zeros(n, bool)
        voxel = np.zeros((n, 3), np.int64)
        end = np.zeros(3)
        cast = self.tree.castRay
        for i in range(n):
            if cast(o[i], d[i], end, True, float(max_distance)):
                hit[i] = True
                voxel[i] = np.floor(end)
        return hit, voxel, None


def timed(f, repeat=3):
    best = math.inf
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best, out


def alternated(fs, rounds=5):
    """Each of `fs` timed `rounds` times, one after the other in turn (so that a slow spell of
    the machine falls on all of them): the median time of each and its last answer."""
    times = [[] for _ in fs]
    outs = [None] * len(fs)
    for _ in range(rounds):
        for k, f in enumerate(fs):
            t = time.perf_counter()
            outs[k] = f()
            times[k].append(time.perf_counter() - t)
    return [(float(np.median(t)), o) for t, o in zip(times, outs)]


#: The workloads that are one camera's image, by name: `World.raycast_camera`'s arguments.
cameras = {}


def workloads(ids, h, quick):
    rng = np.random.default_rng(7)
    size = ids.shape[0]
    n = 20_000 if quick else 200_000
    out = {}
    # Reach: eyes 1.6 above the ground, any direction, 8 voxels (a player's block targeting).
    x = rng.uniform(8, size - 8, (n, 2))
    eye = h[x[:, 0].astype(int), x[:, 1].astype(int)] + 1.6
    o = np.column_stack([x[:, 0], eye, x[:, 1]])
    d = rng.normal(size=(n, 3))
    out["reach (8 voxels)"] = (o, d / np.linalg.norm(d, axis=1, keepdims=True), 8.0)
    # Sensors: the same eyes, directions in a horizontal band, 32 voxels.
    d = np.column_stack([rng.normal(size=n), rng.normal(size=n) * 0.3, rng.normal(size=n)])
    out["sensors (32 voxels)"] = (o, d / np.linalg.norm(d, axis=1, keepdims=True), 32.0)
    # A camera from above the terrain looking down at 30 degrees, 200 voxels: its pixels' rays
    # in pixel order, as `World.raycast_camera` casts them.
    w, hgt = (320, 180) if quick else (640, 360)
    view = dict(width=w, height=hgt, fov_y_degrees=math.degrees(2 * math.atan(0.4)))
    fwd = np.array([0.0, -0.5, 0.866])
    eye = [size / 2, 60.0, 4.0]
    d = vc.camera_directions(fwd, **view).reshape(-1, 3).astype(np.float64)
    o = np.tile(eye, (len(d), 1))
    out["camera (200 voxels)"] = (o, d, 200.0)
    cameras["camera (200 voxels)"] = dict(position=eye, forward=fwd, max_distance=200.0, **view)
    # A 64-channel LiDAR's beams from 6 robots, 120 voxels.
    dirs, _ = vc.SensorRig.lidar64().rays()
    robots = rng.uniform(40, size - 40, (2 if quick else 6, 2))
    eyes = np.column_stack([robots[:, 0], h[robots[:, 0].astype(int), robots[:, 1].astype(int)] + 2.5, robots[:, 1]])
    o = np.repeat(eyes, len(dirs), axis=0)
    d = np.tile(dirs.astype(np.float64), (len(eyes), 1))
    out["LiDAR (120 voxels)"] = (o, d, 120.0)
    return out


def agreement(ref, hit, voxel, t):
    same = (ref.hit == hit) & np.where(hit, np.all(ref.voxel == voxel, axis=1), True)
    if t is not None:
        with np.errstate(invalid="ignore"):
            same &= np.where(hit, np.abs(ref.distance - t) <= 1e-3, True)
    return same.mean()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    ap.add_argument("--quick", action="store_true", help="fewer rays (a smoke run)")
    ap.add_argument("--octomap-rays", type=int, default=20_000, help="rays a workload for OctoMap (one a call)")
    args = ap.parse_args()
    ids, h = scene()
    world = vc.World.from_dense(ids)
    try:
        gpu = vc.Gpu()
        on_gpu = gpu.upload(world)
        gpu_name = gpu.adapter.split(";")[0]
    except RuntimeError as e:
        on_gpu, gpu_name = None, f"none ({e})"
    print(f"scene: {ids.shape} voxels, {int((ids != 0).sum())} solid; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores; GPU: {gpu_name}")
    o3d_scenes = {t: Open3D(ids, t) for t in args.threads}
    print(f"Open3D: {o3d_scenes[args.threads[0]].triangles} triangles")
    octo = OctoMap(ids)

    rows = []
    for name, (o, d, m) in workloads(ids, h, args.quick).items():
        n = len(o)
        ref = world.raycast(o, d, m)
        cam = cameras.get(name)
        for t in args.threads:
            vc.set_threads(t)
            fs = [lambda: world.raycast(o, d, m), lambda: o3d_scenes[t].cast(o, d, m)]
            if cam:
                fs.append(lambda: world.raycast_camera(**cam))
            timings = alternated(fs)
            (s_vc, _), (s_o3d, (hit, vox, th)) = timings[:2]
            rows.append((name, f"voxcast CPU {t}T", n / s_vc, 1.0))
            rows.append((name, f"Open3D {t}T", n / s_o3d, agreement(ref, hit, vox, th)))
            if cam:
                s_cam, img = timings[2]
                same = (img.status.ravel() == ref.status) & (img.distance.ravel().view(np.uint32) == ref.distance.view(np.uint32))
                rows.append((name, f"voxcast camera {t}T", n / s_cam, float(same.mean())))
        vc.set_threads(0)
        if on_gpu is not None:
            s, g = timed(lambda: on_gpu.raycast(o, d, m))
            same = (g.status == ref.status) & np.all(g.voxel == ref.voxel, axis=1)
            same &= g.distance.view(np.uint32) == ref.distance.view(np.uint32)
            rows.append((name, "voxcast GPU", n / s, float(same.mean())))
        k = min(n, args.octomap_rays)
        s, (hit, vox, _) = timed(lambda: octo.cast(o[:k], d[:k], m), repeat=1)
        sub = vc.Hits(ref.frame, ref.status[:k], ref.voxel[:k], ref.normal[:k], ref.distance[:k], ref.id[:k], ref.uv[:k])
        rows.append((name, "pyoctomap 1T", k / s, agreement(sub, hit, vox, None)))

    print(f"\n{'workload':<22} {'raycaster':<18} {'M rays/s':>9} {'agree':>8}")
    for name, who, rate, agree in rows:
        print(f"{name:<22} {who:<18} {rate / 1e6:9.3f} {agree * 100:7.2f}%")
    print("\nratios (voxcast CPU over the peer, equal threads):")
    for name in dict.fromkeys(r[0] for r in rows):
        mine = {r[1]: r[2] for r in rows if r[0] == name}
        parts = [f"{t}T: {mine[f'voxcast CPU {t}T'] / mine[f'Open3D {t}T']:.2f}x Open3D" for t in args.threads]
        parts += [f"camera call {t}T: {mine[f'voxcast camera {t}T'] / mine[f'Open3D {t}T']:.2f}x" for t in args.threads if f"voxcast camera {t}T" in mine]
        parts.append(f"1T: {mine['voxcast CPU 1T'] / mine['pyoctomap 1T']:.0f}x pyoctomap" if "voxcast CPU 1T" in mine else "")
        print(f"  {name:<22} " + ", ".join(p for p in parts if p))

    # A LiDAR's effects: the same 6 robots' lidar64 scans plain, through `Lidar` without
    # effects, with noise, dropout, reflectivity and a threshold, and with 3 sub-rays a beam.
    rng = np.random.default_rng(7)
    robots = rng.uniform(40, ids.shape[0] - 40, (6, 2))
    eyes = np.column_stack([robots[:, 0], h[robots[:, 0].astype(int), robots[:, 1].astype(int)] + 2.5, robots[:, 1]])
    poses = np.column_stack([eyes, np.zeros((6, 3)), np.ones(6)])
    rig = vc.SensorRig.lidar64(120.0)
    fx = dict(range_noise=0.02, dropout=0.01, reflectivity={1: 0.3, 2: 0.6, 3: 0.4, 4: 0.2}, min_intensity=0.05, seed=3)
    scans = {
        "sense": lambda: world.sense(rig, poses),
        "Lidar.scan": lambda: plain.scan(world, poses),
        "every effect": lambda: effects.scan(world, poses),
        "3 sub-rays": lambda: diverging.scan(world, poses),
    }
    plain, effects = vc.Lidar(rig), vc.Lidar(rig, **fx)
    diverging = vc.Lidar(rig, divergence_deg=0.3, sub_rays=3, returns="strongest", **fx)
    for t in args.threads:
        vc.set_threads(t)
        times = dict(zip(scans, (s for s, _ in alternated(list(scans.values())))))
        base = times["Lidar.scan"]
        print(f"LiDAR effects {t}T (6 x lidar64): " + ", ".join(
            f"{k} {v * 1e3:.0f} ms ({v / base:.2f}x)" for k, v in times.items()))
    vc.set_threads(0)

    # The Python overhead of a call: one ray, and 1,000, on a world of one voxel.
    tiny = vc.World()
    tiny.set_voxels([[4, 0, 0]], 1)
    one = (np.array([[0.5, 0.5, 0.5]]), np.array([[1.0, 0, 0]]))
    s1, _ = timed(lambda: [tiny.raycast(*one, 10.0) for _ in range(1000)])
    many = (np.tile(one[0], (1000, 1)), np.tile(one[1], (1000, 1)))
    s2, _ = timed(lambda: [tiny.raycast(*many, 10.0) for _ in range(100)])
    print(f"\nPython overhead: {s1 / 1000 * 1e6:.1f} us a call of one ray; {s2 / 100 / 1000 * 1e9:.0f} ns a ray in calls of 1,000")

    # A world that changes: 1,000 voxel edits between batches of 100,000 rays, end to end.
    rng = np.random.default_rng(3)
    o, d, m = workloads(ids, h, True)["sensors (32 voxels)"]
    o, d = np.tile(o, (5, 1))[:100_000], np.tile(d, (5, 1))[:100_000]
    cells = np.column_stack([rng.integers(0, ids.shape[0], 1000), rng.integers(10, 40, 1000), rng.integers(0, ids.shape[2], 1000)])
    t = args.threads[-1]
    vc.set_threads(t)
    edits = ids.copy()

    def voxcast_step(target):
        world.set_voxels(cells, rng.integers(0, 5, 1000))
        return target.raycast(o, d, m)

    s_cpu, _ = timed(lambda: voxcast_step(world))
    line = f"edits: 1,000 voxels then 100,000 rays: voxcast CPU {t}T {s_cpu * 1e3:.1f} ms"
    if on_gpu is not None:
        s_gpu, _ = timed(lambda: voxcast_step(on_gpu))
        line += f", voxcast GPU {s_gpu * 1e3:.1f} ms"

    def open3d_step():
        edits[cells[:, 0], cells[:, 1], cells[:, 2]] = rng.integers(0, 5, 1000)
        o3d_scenes[t].build(edits)
        return o3d_scenes[t].cast(o, d, m)

    s_o3d, _ = timed(open3d_step)
    line += f", Open3D {t}T {s_o3d * 1e3:.1f} ms (mesh and BVH rebuilt)"
    k = args.octomap_rays

    def octomap_step():
        for c, v in zip(cells, rng.integers(0, 2, 1000)):
            octo.set(c, v)
        return octo.cast(o[:k], d[:k], m)

    s_octo, _ = timed(octomap_step, repeat=1)
    line += f", pyoctomap {s_octo * 100_000 / k * 1e3:.0f} ms (scaled from {k} rays)"
    print(line)


if __name__ == "__main__":
    main()
