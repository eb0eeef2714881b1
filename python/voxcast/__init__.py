"""voxcast: exact voxel raycasting in i128 worlds, numpy in and numpy out.

A :class:`World` holds voxel ids (uint16, 0 is air) in chunks of 32x32x32 anywhere in a world
whose coordinates are 128-bit integers. Batches of rays, line-of-sight segments and sensor
sweeps are answered by the CPU reference (on every core, without the GIL) or, through
:class:`Gpu`, on the GPU with the same calls and the same answers bit for bit.

Coordinates. numpy has no 128-bit integers, so every call takes a ``frame``: a voxel of the
world given as three Python ints (default ``(0, 0, 0)``). Points are float64 offsets in voxels
from the frame's low corner. What holds: a point's voxel is the exact floor of the float64 you
pass, and its start inside that voxel is the float64's fraction rounded to f32, within 2**-25
voxels of the float64. The float64 itself holds a number to within half its spacing, which
grows with the offset: below 2**28 voxels from the frame that is at most 2**-25 (so a start
within 2**-24 of the number you meant), below 2**40 at most 2**-13, and from 2**52 on the
offset is a whole number (whole offsets are exact up to 2**53). Keep offsets small by passing a
frame near the rays. Voxels come back as int64 offsets from the frame; :meth:`Hits.voxel_ints`
gives them as Python ints of the world.

Answers never raise for one bad ray: each row has a ``status`` (:data:`MISS`, :data:`HIT`,
:data:`UNLOADED`, :data:`INVALID`) and ``Hits.errors`` says why a row is invalid. Wrong shapes,
dtypes or options raise ``ValueError`` or ``TypeError`` naming the argument.
"""

import os

from ._common import INVALID, HIT, MAX_DISTANCE, MISS, UNLOADED
from .sensors import Lidar, LidarScan, SensorRig, depth_image, ray_perception
from . import _voxcast
from .world import Gpu, GpuWorld, Hits, Scan, World, camera_directions, minecraft_solid



def set_threads(threads: int) -> None:
    """Runs the CPU's batches on ``threads`` threads from now on (0, the default: one a core).
    Batches from several Python threads share them. More than 4 threads a core (at least 256)
    is refused: each is made at once, and so many only slow the batches down."""
    most = max(256, 4 * (os.cpu_count() or 1))
    if isinstance(threads, bool) or not isinstance(threads, int) or not 0 <= threads <= most:
        raise ValueError(f"threads: 0 (one a core) to {most} (4 a core, at least 256), not {threads!r}")
    _voxcast.set_threads(threads)


__all__ = [
    "set_threads",
    "MISS",
    "HIT",
    "UNLOADED",
    "INVALID",
    "MAX_DISTANCE",
    "World",
    "minecraft_solid",
    "camera_directions",
    "Gpu",
    "GpuWorld",
    "Hits",
    "Scan",
    "SensorRig",
    "Lidar",
    "LidarScan",
    "depth_image",
    "ray_perception",
]
