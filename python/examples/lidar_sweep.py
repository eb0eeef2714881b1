"""A 64-channel LiDAR sweep through a Minecraft region: a PLY point cloud and a PNG range image.

    python python/examples/lidar_sweep.py [--region r.0.0.mca] [--out-dir DIR] [--gpu]

Without --region it reads the sample region of fastanvil, a dependency of voxcast-import's
tests (found with ``cargo metadata``; run it from a clone of the repository).
"""

import argparse
import time
from pathlib import Path

import numpy as np

import voxcast as vc
from _files import colormap, sample_region, write_ply, write_png


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--region", type=Path, default=None)
    ap.add_argument("--out-dir", type=Path, default=Path("."))
    ap.add_argument("--gpu", action="store_true", help="sweep on the GPU (the answers are the same)")
    args = ap.parse_args()
    region = args.region or sample_region()
    started = time.perf_counter()
    world, palette = vc.World.from_minecraft(region)
    solid = vc.minecraft_solid(palette)
    print(f"region: {region.name}: {world.chunk_count} chunks, {len(palette)} block types, "
          f"{time.perf_counter() - started:.2f} s")
    target = vc.Gpu().upload(world) if args.gpu else world

    # The sensor 2.5 voxels above the ground at the middle of the region.
    (x0, _, z0), (x1, y1, z1) = world.loaded_bounds
    cx, cz = (x0 + x1) / 2 + 0.5, (z0 + z1) / 2 + 0.5
    down = target.raycast([[cx, y1 + 0.5, cz]], [[0, -1, 0]], 1000.0, solid=solid)
    if not down.hit[0]:
        raise SystemExit("no ground below the middle of the region")
    ground = down.voxel[0, 1] + 1
    pose = np.array([[cx, ground + 2.5, cz, 0, 0, 0, 1]])

    lidar = vc.Lidar(
        vc.SensorRig.lidar64(120.0),
        reflectivity={i: 0.2 + 0.6 * ((i * 37) % 11) / 10 for i in solid},
        range_noise=0.02,
        dropout=0.005,
        seed=1,
    )
    started = time.perf_counter()
    scan = lidar.scan(target, pose, solid=solid)
    took = time.perf_counter() - started
    beams = scan.ranges.size
    print(f"sweep: {beams} beams on the {'GPU' if args.gpu else 'CPU'} in {took * 1e3:.1f} ms "
          f"({beams / took / 1e6:.2f} M beams/s), {int(scan.returned.sum())} returns")

    args.out_dir.mkdir(parents=True, exist_ok=True)
    ok = scan.returned[0]
    ply = args.out_dir / "lidar.ply"
    write_ply(ply, scan.points[0][ok], scan.intensity[0][ok])
    ranges = scan.ranges[0].reshape(64, 1800)
    shade = np.where(np.isfinite(ranges), np.sqrt(ranges / 120.0), np.nan)
    # The top channel first, each 4 pixels tall; the azimuth from behind (left) through ahead
    # (the middle) to behind.
    image = np.repeat(np.roll(colormap(shade[::-1]), 900, axis=1), 4, axis=0)
    png = args.out_dir / "lidar_range.png"
    write_png(png, image)
    # The cloud seen from above, each point coloured by its height (warm low, cool high).
    pts = scan.points[0][ok]
    half = 120
    px = np.clip((pts[:, 0] - cx + half) * 2, 0, 4 * half - 1).astype(int)
    pz = np.clip((pts[:, 2] - cz + half) * 2, 0, 4 * half - 1).astype(int)
    top = np.full((4 * half, 4 * half), np.nan)
    order = np.argsort(pts[:, 1])  # the highest point of a pixel last, so it shows
    lo, hi = np.percentile(pts[:, 1], [2, 98])
    top[pz[order], px[order]] = np.clip((pts[order, 1] - lo) / max(hi - lo, 1.0), 0, 1)
    above = args.out_dir / "lidar_top.png"
    write_png(above, colormap(top))
    print(f"wrote {ply} ({int(ok.sum())} points), {png} ({image.shape[1]}x{image.shape[0]}) and {above}")


if __name__ == "__main__":
    main()
