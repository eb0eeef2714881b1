"""Sensor rigs (LiDARs, depth cameras, ray fans) and what is made of their scans: depth
images, ML-Agents-style observations, and realistic LiDAR returns."""

from __future__ import annotations

import math
from typing import Iterable, Optional, Sequence, Tuple, Union

import numpy as np

from . import _voxcast
from ._common import HIT, MISS, ArrayLike, _array, _frame, _max_distances
from .world import Scan, _options

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
        if not 0 < fov_y_deg < 180:
            raise ValueError(f"fov_y_deg: in (0, 180) degrees, not {fov_y_deg}")
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


def _sub_directions(d: np.ndarray, divergence_deg: float, sub_rays: int) -> np.ndarray:
    """Each unit direction of ``d`` (R, 3) as ``sub_rays`` directions (R, K, 3): the first the
    beam's axis, the others evenly around a ring ``divergence_deg / 2`` off it, starting in
    the plane of the axis and ``+Y`` (``+X`` for a vertical axis)."""
    if sub_rays == 1:
        return d[:, None, :]
    up = np.where(np.abs(d[:, 1:2]) > 0.999, np.array([[1.0, 0, 0]]), np.array([[0.0, 1, 0]]))
    a = np.cross(d, up)
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b = np.cross(a, d)
    half = math.radians(divergence_deg) / 2
    phi = 2 * math.pi * np.arange(sub_rays - 1) / (sub_rays - 1)
    ring = math.cos(half) * d[:, None, :] + math.sin(half) * (
        np.cos(phi)[None, :, None] * b[:, None, :] + np.sin(phi)[None, :, None] * a[:, None, :]
    )
    return np.concatenate([d[:, None, :], ring], axis=1)


class Lidar:
    """A LiDAR as a robot sees one: a rig's beams cast with the effects of a real sensor,
    each documented and drawn from ``seed`` (and a scan's ``step``) alone, so that a scan is
    reproducible and equal on the CPU and the GPU (they answer every sub-ray alike; the effects
    are then computed natively on the host's threads, as ``voxcast::LidarEffects`` in Rust).

    - ``divergence_deg``, ``sub_rays``: each beam is ``sub_rays`` rays, the beam's axis and the
      others evenly around a ring ``divergence_deg / 2`` off it; ``returns`` picks the
      ``"first"`` (nearest), ``"last"`` (farthest) or ``"strongest"`` (highest intensity,
      the nearer at equal intensity) of the sub-rays that hit.
    - ``reflectivity``: per voxel id, a number in [0, 1] (a dict; ids not in it get
      ``default_reflectivity``). A return's intensity is its voxel's reflectivity times the
      cosine of the angle between the ray and the face it hit.
    - ``range_noise``: the standard deviation, in voxels, of Gaussian noise added to each
      return's range (its point moves along the ray).
    - ``dropout``: the probability that a return is lost.
    - ``min_intensity``: returns weaker than this are lost (as a real receiver's threshold).
    """

    def __init__(
        self,
        rig: SensorRig,
        *,
        divergence_deg: float = 0.0,
        sub_rays: int = 1,
        returns: str = "first",
        reflectivity: Union[dict, None] = None,
        default_reflectivity: float = 0.5,
        range_noise: float = 0.0,
        dropout: float = 0.0,
        min_intensity: float = 0.0,
        seed: int = 0,
    ) -> None:
        if not isinstance(rig, SensorRig):
            raise TypeError(f"rig: a SensorRig, not {type(rig).__name__}")
        if returns not in ("first", "last", "strongest"):
            raise ValueError(f'returns: "first", "last" or "strongest", not {returns!r}')
        if sub_rays < 1 or (sub_rays > 1 and not divergence_deg > 0):
            raise ValueError("sub_rays: 1, or more with a divergence_deg above 0")
        if not (0.0 <= dropout <= 1.0):
            raise ValueError(f"dropout: a probability in [0, 1], not {dropout}")
        if not range_noise >= 0.0:
            raise ValueError(f"range_noise: 0 or more voxels, not {range_noise}")
        if not 0.0 <= default_reflectivity <= 1.0:
            raise ValueError(f"default_reflectivity: a value in [0, 1], not {default_reflectivity}")
        if not 0 <= int(seed) < 2**64:
            raise ValueError(f"seed: an int in 0..2**64, not {seed}")
        table = {}
        for i, r in (reflectivity or {}).items():
            if not 0 <= int(i) < 65536 or not 0.0 <= float(r) <= 1.0:
                raise ValueError(f"reflectivity: ids 0..65535 to values in [0, 1], not {i}: {r}")
            table[int(i)] = float(r)
        by_id = [float(default_reflectivity)] * (max(table) + 1 if table else 0)
        for i, r in table.items():
            by_id[i] = r
        d, m = rig.rays()
        self.beams = len(rig)
        self.sub_rays = int(sub_rays)
        self.returns = returns
        self.seed = int(seed)
        self._effects = (
            returns, by_id, float(default_reflectivity), float(range_noise), float(dropout), float(min_intensity), self.seed,
        )
        subs = _sub_directions(d.astype(np.float64), float(divergence_deg), self.sub_rays)
        self.rig = rig if self.sub_rays == 1 else SensorRig(subs.reshape(-1, 3), np.repeat(m, self.sub_rays))

    def scan(
        self,
        world,
        poses: ArrayLike,
        *,
        step: int = 0,
        frame: Iterable[int] = (0, 0, 0),
        origin_policy: str = "report",
        unloaded: str = "air",
        solid: Optional[Iterable[int]] = None,
    ) -> "LidarScan":
        """One sweep from every pose of ``poses`` (as :meth:`World.sense`) on ``world`` (a
        :class:`World` or a :class:`GpuWorld`); ``step`` (with the seed) draws the noise and
        dropout, so that each step of a simulation differs and each is reproducible. The
        effects are computed natively on every thread; a beam's draws depend on the seed, the
        step, its agent and its index alone, so the scan is the same on the CPU and the GPU and
        at any thread count. An agent whose pose is bad returns nothing."""
        if not 0 <= int(step) < 2**64:
            raise ValueError(f"step: an int in 0..2**64, not {step}")
        f = _frame(frame)
        q = _array("poses", poses, np.float64, (None, 7))
        status, ranges, points, intensity, ids, errors = world._caster.lidar_scan(
            f, self.rig._native, q, _options(origin_policy, unloaded, solid), self.sub_rays, self._effects, int(step)
        )
        return LidarScan(ranges=ranges, points=points, intensity=intensity, id=ids, status=status, errors=list(errors))


class LidarScan:
    """A :class:`Lidar`'s sweep, per agent and beam ``(A, R)``: ``ranges`` (float32 voxels,
    ``inf`` where no return came back), ``points`` ``(A, R, 3)`` (float64 voxels from the
    frame, NaN without a return), ``intensity`` (float32 in [0, 1]) and the voxel ``id``.
    ``status`` says what each beam is: :data:`HIT` where its return came back; else
    :data:`INVALID` (its agent's pose is bad: ``errors`` lists ``(agent, why)``),
    :data:`UNLOADED` (a sub-ray stopped where unloaded space begins, ``unloaded="stop"``) or
    :data:`MISS` (nothing within range, or the return was lost to dropout or the threshold)."""

    def __init__(
        self,
        ranges: np.ndarray,
        points: np.ndarray,
        intensity: np.ndarray,
        id: np.ndarray,
        status: Optional[np.ndarray] = None,
        errors: Optional[list] = None,
    ) -> None:
        self.ranges = ranges
        self.points = points
        self.intensity = intensity
        self.id = id
        self.status = np.where(np.isfinite(ranges), HIT, MISS).astype(np.uint8) if status is None else status
        self.errors = errors or []

    @property
    def returned(self) -> np.ndarray:
        """True where a beam's return came back."""
        return self.status == HIT
