"""voxcast: exact voxel raycasting in i128 worlds, numpy in and numpy out.

A :class:`World` holds voxel ids (uint16, 0 is air) in chunks of 32x32x32 anywhere in a world
whose coordinates are 128-bit integers. Batches of rays, line-of-sight segments and sensor
sweeps are answered by the CPU reference (on every core, without the GIL) or, through
:class:`Gpu`, on the GPU with the same calls and the same answers bit for bit.

Coordinates. numpy has no 128-bit integers, so every call takes a ``frame``: a voxel of the
world given as three Python ints (default ``(0, 0, 0)``). Points are float64 offsets in voxels
from the frame's low corner (exact within 2**53 of it; a ray's start is then rounded to f32
inside its voxel, within 2**-25 voxels). Voxels come back as int64 offsets from the frame;
:meth:`Hits.voxel_ints` gives them as Python ints of the world.

Answers never raise for one bad ray: each row has a ``status`` (:data:`MISS`, :data:`HIT`,
:data:`UNLOADED`, :data:`INVALID`) and ``Hits.errors`` says why a row is invalid. Wrong shapes,
dtypes or options raise ``ValueError`` or ``TypeError`` naming the argument.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence, Tuple, Union

import numpy as np

from . import _voxcast

__all__ = [
    "MISS",
    "HIT",
    "UNLOADED",
    "INVALID",
    "MAX_DISTANCE",
    "World",
    "Gpu",
    "GpuWorld",
    "Hits",
    "Scan",
    "SensorRig",
    "depth_image",
    "ray_perception",
]

#: Status of a ray that found nothing within its max distance.
MISS: int = _voxcast.MISS
#: Status of a ray that hit a stopping voxel.
HIT: int = _voxcast.HIT
#: Status of a ray that stopped where unloaded space begins (``unloaded="stop"``).
UNLOADED: int = _voxcast.UNLOADED
#: Status of an invalid ray (see ``Hits.errors``): a NaN, infinite or zero direction, a bad
#: max distance, a point that is not finite or lies 2**62 voxels or more from the frame.
INVALID: int = _voxcast.INVALID
#: The longest ray, in voxels: ``max_distance=inf`` means this.
MAX_DISTANCE: float = _voxcast.MAX_DISTANCE

Frame = Tuple[int, int, int]

# The most chunks one dense block may cover (2^24 chunks: 512 GiB of voxels at 2 bytes).
_MAX_DENSE_CHUNKS = 1 << 24
ArrayLike = Union[np.ndarray, Sequence]


def _frame(frame: Iterable[int], name: str = "frame") -> Frame:
    try:
        parts = tuple(frame)
    except TypeError:
        raise TypeError(f"{name}: three ints (x, y, z), not {type(frame).__name__}") from None
    if len(parts) != 3:
        raise ValueError(f"{name}: three ints (x, y, z), not {len(parts)} values")
    out = []
    for a, v in enumerate(parts):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name}: component {a} is {type(v).__name__}, not an int")
        v = int(v)
        if not -(2**127) <= v < 2**127:
            raise ValueError(f"{name}: component {a} lies outside the i128 world")
        out.append(v)
    return (out[0], out[1], out[2])


def _array(name: str, a: ArrayLike, dtype, shape: Tuple[Optional[int], ...]) -> np.ndarray:
    """`a` as a C-contiguous array of `dtype` (no copy where it already is one) of `shape`
    (None: any length)."""
    src = np.asarray(a) if not isinstance(a, np.ndarray) else a
    if src.dtype.kind not in "biuf":
        raise TypeError(f"{name}: numbers, not dtype {src.dtype}")
    if np.dtype(dtype).kind in "iu" and src.dtype.kind == "f":
        raise TypeError(f"{name}: integers, not dtype {src.dtype}")
    if src.ndim != len(shape) or any(w is not None and w != s for w, s in zip(shape, src.shape)):
        want = "(" + ", ".join("N" if w is None else str(w) for w in shape) + ("," if len(shape) == 1 else "") + ")"
        raise ValueError(f"{name}: shape {want}, not {src.shape}")
    return np.ascontiguousarray(src, dtype=dtype)


def _solid(solid: Optional[Iterable[int]]) -> Optional[list]:
    if solid is None:
        return None
    ids = [int(i) for i in solid]
    for i in ids:
        if not 0 <= i < 65536:
            raise ValueError(f"solid: voxel ids are 0..65535, not {i}")
    return ids


def _max_distances(max_distance, n: int) -> np.ndarray:
    if np.ndim(max_distance) == 0:
        return np.full(n, max_distance, dtype=np.float32)
    return _array("max_distance", max_distance, np.float32, (n,))


@dataclass(frozen=True)
class Hits:
    """What a batch found, one row per ray (or per agent and ray: shape ``(A, R)``).

    ``status``: :data:`MISS`, :data:`HIT`, :data:`UNLOADED` or :data:`INVALID` (uint8).
    ``voxel``: the hit voxel, or where unloaded space began, as int64 offsets from ``frame``
    (0 for misses and invalid rays). ``normal``: the face the ray entered the voxel through
    (int8, zero where the ray started inside it). ``distance``: voxels along the ray (float32;
    ``inf`` for a miss, NaN for an invalid ray). ``id``: the hit voxel's id (uint16). ``uv``: where
    on that face (float32, each in [0, 1]). ``errors``: (row, why) for each invalid row, the row
    counted in the flat order of ``status``.
    """

    frame: Frame
    status: np.ndarray
    voxel: np.ndarray
    normal: np.ndarray
    distance: np.ndarray
    id: np.ndarray
    uv: np.ndarray
    errors: list = field(default_factory=list)

    @property
    def hit(self) -> np.ndarray:
        """True where the ray hit a stopping voxel."""
        return self.status == HIT

    @property
    def visible(self) -> np.ndarray:
        """Line of sight: True where nothing stopped the segment (and it met no unloaded space
        under ``unloaded="stop"``)."""
        return self.status == MISS

    def voxel_ints(self, index) -> Frame:
        """Row `index`'s voxel as Python ints of the world: ``frame + voxel[index]``."""
        v = self.voxel[index]
        return (self.frame[0] + int(v[0]), self.frame[1] + int(v[1]), self.frame[2] + int(v[2]))

    def __len__(self) -> int:
        return len(self.status)


@dataclass(frozen=True)
class Scan(Hits):
    """A sensor sweep's answers, shaped ``(A, R)`` (agents, rays of the rig), with each hit's
    point ``points`` ``(A, R, 3)`` in float64 voxels from the frame (NaN where nothing was hit).
    """

    points: np.ndarray = None  # type: ignore[assignment]

    @property
    def ranges(self) -> np.ndarray:
        """Distance of each ray's hit, ``inf`` where there was none (float32, ``(A, R)``)."""
        return np.where(self.status == HIT, self.distance, np.float32(np.inf)).astype(np.float32)


def _hits(frame: Frame, out) -> Hits:
    status, voxel, normal, distance, ids, uv, errors = out
    return Hits(frame, status, voxel, normal, distance, ids, uv, list(errors))


def _policy(origin_policy: str, unloaded: str) -> Tuple[str, str]:
    if origin_policy not in ("report", "skip", "exit"):
        raise ValueError(f'origin_policy: "report", "skip" or "exit", not {origin_policy!r}')
    if unloaded not in ("air", "stop"):
        raise ValueError(f'unloaded: "air" or "stop", not {unloaded!r}')
    return origin_policy, unloaded


class _Casts:
    """The batch calls, the same on a :class:`World` (CPU) and a :class:`GpuWorld` (GPU)."""

    _native: object

    def raycast(
        self,
        origins: ArrayLike,
        directions: ArrayLike,
        max_distance: Union[float, ArrayLike] = math.inf,
        *,
        frame: Iterable[int] = (0, 0, 0),
        origin_policy: str = "report",
        unloaded: str = "air",
        solid: Optional[Iterable[int]] = None,
    ) -> Hits:
        """Casts one ray per row: from ``origins`` (float64 ``(N, 3)``, voxels from the frame)
        along ``directions`` (``(N, 3)``, any non-zero length; rounded to float32) for
        ``max_distance`` voxels (a number or ``(N,)``; ``inf`` means :data:`MAX_DISTANCE`).

        ``origin_policy``: a ray that starts in a stopping voxel reports it at distance 0
        (``"report"``), skips it (``"skip"``), or passes through solid until it has been in a
        non-stopping voxel (``"exit"``). ``unloaded``: unloaded chunks are ``"air"``, or the ray
        ``"stop"``s there (status :data:`UNLOADED`). ``solid``: the ids that stop rays (default
        every id but 0).
        """
        f = _frame(frame)
        o = _array("origins", origins, np.float64, (None, 3))
        d = _array("directions", directions, np.float32, (o.shape[0], 3))
        m = _max_distances(max_distance, o.shape[0])
        p, u = _policy(origin_policy, unloaded)
        return _hits(f, self._native.raycast(f, o, d, m, p, u, _solid(solid)))

    def line_of_sight(
        self,
        a: ArrayLike,
        b: ArrayLike,
        *,
        frame: Iterable[int] = (0, 0, 0),
        conservative: bool = False,
        origin_policy: str = "report",
        unloaded: str = "air",
        solid: Optional[Iterable[int]] = None,
    ) -> Hits:
        """Whether each segment from ``a[i]`` to ``b[i]`` (float64 ``(N, 3)``, voxels from the
        frame) is clear: ``Hits.visible``; where it is blocked, the first blocking voxel is the
        row's hit. The voxel that ``b[i]`` lies in counts. ``conservative=True`` also blocks a
        segment that passes exactly through an edge or corner touching a stopping voxel (no
        seeing through diagonal cracks). Other options as :meth:`raycast`.
        """
        f = _frame(frame)
        pa = _array("a", a, np.float64, (None, 3))
        pb = _array("b", b, np.float64, (pa.shape[0], 3))
        p, u = _policy(origin_policy, unloaded)
        return _hits(f, self._native.line_of_sight(f, pa, pb, bool(conservative), p, u, _solid(solid)))

    def sense(
        self,
        rig: "SensorRig",
        poses: ArrayLike,
        *,
        frame: Iterable[int] = (0, 0, 0),
        origin_policy: str = "report",
        unloaded: str = "air",
        solid: Optional[Iterable[int]] = None,
    ) -> Scan:
        """Casts every ray of ``rig`` from every pose: ``poses`` is float64 ``(A, 7)``, each row
        a position (voxels from the frame) and a unit quaternion ``(qx, qy, qz, qw)`` turning
        the rig's frame (``-Z`` forward, ``+Y`` up, ``+X`` right) into the world's. A row whose
        position is not finite, or whose quaternion is not of unit length, makes its agent's rays
        :data:`INVALID`; the other agents are answered. Returns a :class:`Scan` ``(A, R)``.
        """
        if not isinstance(rig, SensorRig):
            raise TypeError(f"rig: a SensorRig, not {type(rig).__name__}")
        f = _frame(frame)
        q = _array("poses", poses, np.float64, (None, 7))
        p, u = _policy(origin_policy, unloaded)
        cols, points = self._native.sense(f, rig._native, q, p, u, _solid(solid))
        status, voxel, normal, distance, ids, uv, errors = cols
        return Scan(f, status, voxel, normal, distance, ids, uv, list(errors), points)


class World(_Casts):
    """A voxel world on the host, answered by the CPU reference on every core.

    Chunks are 32x32x32 voxels; a chunk that was never written is unloaded (``unloaded="air"``
    treats it as air). Ids are uint16, 0 is air.
    """

    def __init__(self) -> None:
        self._native = _voxcast.World()

    @classmethod
    def from_dense(cls, ids: ArrayLike, origin: Iterable[int] = (0, 0, 0)) -> "World":
        """A world holding the dense block ``ids`` (uint8 or uint16, indexed ``[x, y, z]``)
        with its ``[0, 0, 0]`` at voxel ``origin`` (Python ints)."""
        w = cls()
        w.load_dense(ids, origin)
        return w

    @classmethod
    def from_minecraft(
        cls, path, origin: Iterable[int] = (0, 0, 0), properties: bool = False
    ) -> Tuple["World", dict]:
        """A Minecraft region file (``r.X.Z.mca``) or a folder of them, block (x, y, z) of the
        save at ``origin + (x, y, z)``; also returns the palette, block name to id. With
        ``properties`` each block state gets its own id (``minecraft:oak_log[axis=y]``)."""
        w = cls.__new__(cls)
        w._native, names = _voxcast.World.from_minecraft(str(path), _frame(origin, "origin"), bool(properties))
        return w, dict(names)

    @classmethod
    def from_magica(cls, path, origin: Iterable[int] = (0, 0, 0)) -> "World":
        """A MagicaVoxel model (``.vox``), its voxel (x, y, z) at ``origin + (x, z, -y - 1)``
        (MagicaVoxel's z is up)."""
        w = cls.__new__(cls)
        w._native = _voxcast.World.from_magica(str(path), _frame(origin, "origin"))
        return w

    def load_dense(self, ids: ArrayLike, origin: Iterable[int] = (0, 0, 0)) -> None:
        """Writes the dense block ``ids`` (uint8 or uint16, ``[x, y, z]``) at ``origin``. Every
        chunk it touches becomes loaded; voxels of those chunks outside the block keep their ids."""
        a = np.asarray(ids)
        if a.dtype not in (np.uint8, np.uint16):
            raise TypeError(f"ids: uint8 or uint16, not dtype {a.dtype}")
        if a.ndim != 3:
            raise ValueError(f"ids: three dimensions [x, y, z], not shape {a.shape}")
        o = _frame(origin, "origin")
        chunks = 1
        for lo, n in zip(o, a.shape):
            chunks *= ((lo + n - 1) >> 5) - (lo >> 5) + 1 if n else 0
        if chunks > _MAX_DENSE_CHUNKS:
            raise ValueError(f"ids: the block covers too many chunks ({chunks}, at most {_MAX_DENSE_CHUNKS})")
        self._native.load_dense(np.ascontiguousarray(a, dtype=np.uint16), o)

    def set_voxels(self, voxels: ArrayLike, ids: Union[int, ArrayLike], *, frame: Iterable[int] = (0, 0, 0)) -> None:
        """Sets each voxel of ``voxels`` (integers ``(N, 3)``, from the frame) to its id (one id
        or ``(N,)``). A voxel of an unloaded chunk loads that chunk, the rest of it air."""
        v = _array("voxels", voxels, np.int64, (None, 3))
        if np.ndim(ids) == 0:
            i = int(ids)
            if not 0 <= i < 65536:
                raise ValueError(f"ids: voxel ids are 0..65535, not {i}")
            idv = np.full(v.shape[0], i, dtype=np.uint16)
        else:
            raw = _array("ids", ids, np.int64, (v.shape[0],))
            if raw.size and (raw.min() < 0 or raw.max() > 65535):
                raise ValueError("ids: voxel ids are 0..65535")
            idv = raw.astype(np.uint16)
        self._native.set_voxels(_frame(frame), v, idv)

    def clear_voxels(self, voxels: ArrayLike, *, frame: Iterable[int] = (0, 0, 0)) -> None:
        """Sets each voxel of ``voxels`` to air (0)."""
        self.set_voxels(voxels, 0, frame=frame)

    def get_voxels(self, voxels: ArrayLike, *, frame: Iterable[int] = (0, 0, 0)) -> Tuple[np.ndarray, np.ndarray]:
        """The ids of ``voxels`` (integers ``(N, 3)``, from the frame) and whether each one's
        chunk is loaded (0 and False where it is not)."""
        v = _array("voxels", voxels, np.int64, (None, 3))
        return self._native.get_voxels(_frame(frame), v)

    @property
    def chunk_count(self) -> int:
        """How many chunks are loaded."""
        return self._native.chunk_count

    @property
    def memory_bytes(self) -> int:
        """Host memory the world takes, in bytes."""
        return self._native.memory_bytes


class Gpu:
    """A GPU raycaster (wgpu on Vulkan, Metal or DX12). Making one picks an adapter
    (``WGPU_BACKEND`` and ``WGPU_ADAPTER_NAME`` choose), and checks its answers against the CPU
    reference; ``RuntimeError`` when there is no adapter or they differ."""

    def __init__(self) -> None:
        self._native = _voxcast.Gpu()

    @property
    def adapter(self) -> str:
        """The adapter and the self-check's outcome, in one line."""
        return self._native.adapter

    def upload(self, world: World) -> "GpuWorld":
        """``world`` uploaded to the GPU. The upload follows the world: each call brings over
        the chunks edited since the one before."""
        if not isinstance(world, World):
            raise TypeError(f"world: a World, not {type(world).__name__}")
        g = GpuWorld.__new__(GpuWorld)
        g._native = self._native.upload(world._native)
        g._world = world
        return g


class GpuWorld(_Casts):
    """A :class:`World` as uploaded to a :class:`Gpu` (:meth:`Gpu.upload`): the same calls,
    answered on the GPU, equal to the world's own answers."""

    _world: World

    @property
    def world(self) -> World:
        """The world this upload follows."""
        return self._world


class SensorRig:
    """Directions in an agent's frame (``-Z`` forward, ``+Y`` up, ``+X`` right), each with its
    max distance: the rays :meth:`World.sense` casts from every pose. Directions are normalised
    and quantized once, as the GPU reads them; :meth:`rays` gives them as used.
    """

    def __init__(self, directions: ArrayLike, max_distances: Union[float, ArrayLike] = 100.0) -> None:
        d = _array("directions", directions, np.float32, (None, 3))
        m = _max_distances(max_distances, d.shape[0]) if np.ndim(max_distances) == 0 else _array(
            "max_distances", max_distances, np.float32, (d.shape[0],)
        )
        self._native = _voxcast.Rig(d, m)

    def __len__(self) -> int:
        return len(self._native)

    def rays(self) -> Tuple[np.ndarray, np.ndarray]:
        """The rig's unit directions ``(R, 3)`` and max distances ``(R,)``, as cast."""
        return self._native.rays()

    @classmethod
    def lidar(
        cls,
        elevations_deg: ArrayLike,
        azimuth_step_deg: float,
        max_distance: float = 100.0,
    ) -> "SensorRig":
        """A spinning LiDAR: one channel per elevation (degrees above the horizon, in the order
        given), each swept all around in steps of ``azimuth_step_deg``, starting straight
        ahead (``-Z``) and turning left. Ray ``c * columns + k`` is channel ``c`` at azimuth
        ``k * azimuth_step_deg``."""
        el = np.radians(np.asarray(elevations_deg, dtype=np.float64))
        columns = int(round(360.0 / float(azimuth_step_deg)))
        if columns < 1 or not math.isclose(columns * float(azimuth_step_deg), 360.0, rel_tol=1e-9):
            raise ValueError(f"azimuth_step_deg: must divide 360, not {azimuth_step_deg}")
        az = np.radians(np.arange(columns, dtype=np.float64) * float(azimuth_step_deg))
        e, a = np.meshgrid(el, az, indexing="ij")
        d = np.stack([-np.cos(e) * np.sin(a), np.sin(e), -np.cos(e) * np.cos(a)], axis=-1)
        return cls(d.reshape(-1, 3), max_distance)

    @classmethod
    def lidar16(cls, max_distance: float = 100.0) -> "SensorRig":
        """A 16-channel spinning LiDAR (as Velodyne's VLP-16): channels every 2 degrees from
        -15 to +15, 0.2 degree azimuth steps: 16 x 1,800 rays."""
        return cls.lidar(np.linspace(-15.0, 15.0, 16), 0.2, max_distance)

    @classmethod
    def lidar64(cls, max_distance: float = 120.0) -> "SensorRig":
        """A 64-channel spinning LiDAR (as Velodyne's HDL-64E's span): 64 channels evenly from
        -24.9 to +2.0 degrees, 0.2 degree azimuth steps: 64 x 1,800 rays."""
        return cls.lidar(np.linspace(-24.9, 2.0, 64), 0.2, max_distance)

    @classmethod
    def depth_camera(
        cls, width: int, height: int, fov_y_deg: float = 60.0, max_distance: float = 100.0
    ) -> "SensorRig":
        """A pinhole depth camera looking along ``-Z``: one ray through the center of each pixel,
        row after row from the top, ``fov_y_deg`` the vertical field of view. The ray of pixel
        (u, v) is ``(x, y, -1)`` normalised, with ``x = (2 (u + 0.5) / width - 1) tan(fov/2)
        width/height`` and ``y = (1 - 2 (v + 0.5) / height) tan(fov/2)``. A pixel's depth along
        the camera axis is its range times ``-direction.z`` (:func:`depth_image`)."""
        if width < 1 or height < 1:
            raise ValueError(f"width, height: at least 1, not {width} x {height}")
        t = math.tan(math.radians(fov_y_deg) / 2)
        u = (2 * (np.arange(width) + 0.5) / width - 1) * t * width / height
        v = (1 - 2 * (np.arange(height) + 0.5) / height) * t
        x, y = np.meshgrid(u, v)
        d = np.stack([x, y, -np.ones_like(x)], axis=-1).reshape(-1, 3)
        rig = cls(d, max_distance)
        rig.shape = (height, width)
        return rig

    @classmethod
    def ray_fan(cls, rays_per_side: int, max_degrees: float, max_distance: float = 20.0) -> "SensorRig":
        """Unity ML-Agents' ``RayPerceptionSensor3D`` layout: ``2 * rays_per_side + 1`` rays
        in the horizontal plane, straight ahead first, then for k = 1, 2, ... one turned
        ``max_degrees * k / rays_per_side`` to the right (``+X``) and one as far to the left."""
        if rays_per_side < 0:
            raise ValueError("rays_per_side: 0 or more")
        angles = [0.0]
        for k in range(1, rays_per_side + 1):
            a = max_degrees * k / rays_per_side
            angles += [-a, a]
        r = np.radians(np.asarray(angles))
        # A negative angle turns right (+X), a positive one left (-X).
        d = np.stack([-np.sin(r), np.zeros_like(r), -np.cos(r)], axis=-1)
        return cls(d, max_distance)


def depth_image(scan: Scan, rig: SensorRig) -> np.ndarray:
    """A depth camera's image from its scan: per agent ``(A, height, width)`` float32, the
    depth along the camera axis (range times ``-direction.z``), ``inf`` where nothing was hit."""
    shape = getattr(rig, "shape", None)
    if shape is None:
        raise ValueError("rig: made by SensorRig.depth_camera")
    d, _ = rig.rays()
    depth = scan.ranges * (-d[:, 2])[None, :]
    return depth.reshape(scan.status.shape[0], *shape).astype(np.float32)


def ray_perception(scan: Scan, rig: SensorRig, ids: Sequence[int]) -> np.ndarray:
    """ML-Agents-style observations from a scan (for example of a :meth:`SensorRig.ray_fan`):
    per agent and ray, a one-hot of the hit voxel's id among ``ids`` (all zero for another id
    or no hit), then 1 if nothing was hit, then the hit distance over the ray's max distance
    (1 where nothing was hit). Shape ``(A, R * (len(ids) + 2))``, float32: what a policy
    network takes as one observation vector per agent."""
    ids = list(ids)
    a, r = scan.status.shape
    _, max_d = rig.rays()
    hit = scan.status == HIT
    out = np.zeros((a, r, len(ids) + 2), dtype=np.float32)
    for k, i in enumerate(ids):
        out[:, :, k] = hit & (scan.id == i)
    out[:, :, len(ids)] = ~hit
    out[:, :, len(ids) + 1] = np.where(hit, scan.distance / max_d[None, :], 1.0)
    return out.reshape(a, -1)
