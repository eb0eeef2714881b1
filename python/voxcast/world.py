"""Worlds and their batch calls: :class:`World` on the CPU, :class:`GpuWorld` on the GPU, and
the answers they give (:class:`Hits`, :class:`Scan`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Optional, Tuple, Union

import numpy as np

from . import _voxcast
from ._common import (
    HIT,
    MISS,
    ArrayLike,
    Frame,
    _MAX_DENSE_CHUNKS,
    _array,
    _frame,
    _max_distances,
    _solid,
)

if TYPE_CHECKING:
    from .sensors import SensorRig


@dataclass(frozen=True)
class Hits:
    """What a batch found, one row per ray (per agent and ray: ``(A, R)``; per pixel of a camera:
    ``(height, width)``).

    ``status``: :data:`MISS`, :data:`HIT`, :data:`UNLOADED` or :data:`INVALID` (uint8).
    ``voxel``: the hit voxel, or where unloaded space began, as int64 offsets from ``frame``
    (0 for misses and invalid rays). ``normal``: the face the ray entered the voxel through
    (int8, zero where the ray started inside it). ``distance``: voxels along the ray (float32;
    ``inf`` for a miss, NaN for an invalid ray). ``id``: the hit voxel's id (uint16). ``uv``: where
    the ray entered that face (float32, each in [0, 1], from the voxel's low corner): ``(y, z)``
    on an x face, ``(x, z)`` on a y face, ``(x, y)`` on a z face; zero where the ray started
    inside the voxel. ``errors``: (row, why) for each invalid row, the row
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


def _ids(ids: ArrayLike) -> np.ndarray:
    """`ids` as uint8 or uint16 (kept as given) or, for other integers in 0..65535, uint16."""
    a = np.asarray(ids)
    if a.dtype in (np.uint8, np.uint16):
        return a
    if a.dtype.kind not in "iu" or a.dtype == np.bool_:
        raise TypeError(f"ids: integers (uint8 or uint16), not dtype {a.dtype}")
    if a.size and (a.min() < 0 or a.max() > 65535):
        raise ValueError("ids: voxel ids are 0..65535")
    return a.astype(np.uint16)


def _options(origin_policy: str, unloaded: str, solid, conservative: bool = False) -> tuple:
    """The options of a call as the native module takes them, each checked."""
    if origin_policy not in ("report", "skip", "exit"):
        raise ValueError(f'origin_policy: "report", "skip" or "exit", not {origin_policy!r}')
    if unloaded not in ("air", "stop"):
        raise ValueError(f'unloaded: "air" or "stop", not {unloaded!r}')
    return (origin_policy, unloaded, _solid(solid), bool(conservative))


def _view(forward, up, fov_y_degrees, width, height) -> tuple:
    """A camera's view as the native module takes it, each argument checked."""
    fw = _array("forward", forward, np.float32, (3,))
    u = _array("up", up, np.float32, (3,))
    for name, v in (("width", width), ("height", height)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v < 2**32:
            raise ValueError(f"{name}: an int in 1..2**32, not {v!r}")
    return (fw.tolist(), u.tolist(), float(fov_y_degrees), int(width), int(height))


def camera_directions(
    forward: ArrayLike,
    *,
    width: int = 640,
    height: int = 360,
    fov_y_degrees: float = 60.0,
    up: ArrayLike = (0.0, 1.0, 0.0),
) -> np.ndarray:
    """The unit direction of each pixel's ray of :meth:`World.raycast_camera` with the same
    arguments, float32 ``(height, width, 3)``, row 0 at the top: to turn its distances into
    depth along the view axis (``distance * (dirs @ forward / |forward|)``), or to cast those
    rays yourself. Errors as :meth:`World.raycast_camera`."""
    return _voxcast.camera_directions(*_view(forward, up, fov_y_degrees, width, height))


class _Casts:
    """The batch calls, the same on a :class:`World` (CPU) and a :class:`GpuWorld` (GPU)."""

    _caster: object

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
        ``max_distance`` voxels (a number or ``(N,)``; farther than :data:`MAX_DISTANCE`,
        ``inf`` included, means :data:`MAX_DISTANCE`).

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
        return _hits(f, self._caster.raycast(f, o, d, m, _options(origin_policy, unloaded, solid)))

    def raycast_camera(
        self,
        position: ArrayLike,
        forward: ArrayLike,
        *,
        width: int = 640,
        height: int = 360,
        fov_y_degrees: float = 60.0,
        up: ArrayLike = (0.0, 1.0, 0.0),
        max_distance: float = math.inf,
        frame: Iterable[int] = (0, 0, 0),
        origin_policy: str = "report",
        unloaded: str = "air",
        solid: Optional[Iterable[int]] = None,
    ) -> Hits:
        """A pinhole camera's image: one ray through the center of each pixel, from the eye at
        ``position`` (three floats, voxels from the frame) looking along ``forward`` (any
        non-zero length), rolled so that ``up`` points to the top of the image as nearly as
        it can, ``fov_y_degrees`` (in (0, 180)) the vertical field of view. Returns
        :class:`Hits` shaped ``(height, width)``, row 0 at the top; ``distance`` is measured
        along each pixel's ray. Each answer is exactly what :meth:`raycast` gives for that
        pixel's ray; faster than it where rays cross open air first (8x8 tiles of pixels cross
        it together on the CPU, the shader makes the rays on the GPU). ``ValueError`` for a bad
        camera (a vertical ``forward`` with the default ``up``, an empty image, more than
        2**30 pixels, a position that is not finite); the other arguments as :meth:`raycast`.
        """
        f = _frame(frame)
        p = _array("position", position, np.float64, (3,))
        view = _view(forward, up, fov_y_degrees, width, height)
        out = self._caster.raycast_camera(
            f, p.tolist(), *view, float(max_distance), _options(origin_policy, unloaded, solid)
        )
        return _hits(f, out)

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
        """Whether each segment between ``a[i]`` and ``b[i]`` (float64 ``(N, 3)``, voxels from
        the frame) is clear: ``Hits.visible``; where it is blocked, the first blocking voxel is
        the row's hit. Each segment is cast from the lower of its two points (by voxel x, y, z,
        then offset), so swapping ``a`` and ``b`` gives the same answers, and a blocked row's
        distance is measured from that point; the voxels both points lie in count (under the
        default ``origin_policy="report"``). Two points at one place see each other unless the
        voxel there stops rays. ``conservative=True`` also blocks a segment that passes exactly
        through an edge or corner touching a stopping voxel (no seeing through diagonal
        cracks). Other options as :meth:`raycast`.
        """
        f = _frame(frame)
        pa = _array("a", a, np.float64, (None, 3))
        pb = _array("b", b, np.float64, (pa.shape[0], 3))
        return _hits(f, self._caster.line_of_sight(f, pa, pb, _options(origin_policy, unloaded, solid, conservative)))

    def agent_visibility(
        self,
        eyes: ArrayLike,
        pairs: ArrayLike,
        *,
        frame: Iterable[int] = (0, 0, 0),
        conservative: bool = False,
        origin_policy: str = "report",
        unloaded: str = "air",
        solid: Optional[Iterable[int]] = None,
    ) -> Hits:
        """Whether agents see each other: ``eyes`` (float64 ``(A, 3)``, voxels from the frame)
        and ``pairs`` (integers ``(P, 2)``, indices into ``eyes``); one row per pair, its
        ``visible`` True where the segment between the two eyes is clear, else its first
        blocking voxel. The same answers as :meth:`line_of_sight` between the eyes; the GPU
        uploads each eye once, not once a pair. A pair with a bad eye is :data:`INVALID`."""
        f = _frame(frame)
        e = _array("eyes", eyes, np.float64, (None, 3))
        p = _array("pairs", pairs, np.int64, (None, 2))
        return _hits(f, self._caster.agent_visibility(f, e, p, _options(origin_policy, unloaded, solid, conservative)))

    def visible_pairs_within(
        self,
        eyes: ArrayLike,
        radius: float,
        *,
        frame: Iterable[int] = (0, 0, 0),
        conservative: bool = False,
        origin_policy: str = "report",
        unloaded: str = "air",
        solid: Optional[Iterable[int]] = None,
    ) -> np.ndarray:
        """Every pair ``(i, j)``, ``i < j``, of agents whose eyes (float64 ``(A, 3)``) lie
        within ``radius`` voxels of each other and see each other (:meth:`line_of_sight`: the
        same pairs whatever the order of the eyes), sorted: uint32 ``(K, 2)``."""
        f = _frame(frame)
        e = _array("eyes", eyes, np.float64, (None, 3))
        if not (isinstance(radius, (int, float, np.integer, np.floating)) and 0 <= radius < math.inf):
            raise ValueError(f"radius: 0 or more voxels (finite), not {radius!r}")
        return self._caster.visible_pairs_within(f, e, float(radius), _options(origin_policy, unloaded, solid, conservative))

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
        from .sensors import SensorRig

        if not isinstance(rig, SensorRig):
            raise TypeError(f"rig: a SensorRig, not {type(rig).__name__}")
        f = _frame(frame)
        q = _array("poses", poses, np.float64, (None, 7))
        cols, points = self._caster.sense(f, rig._native, q, _options(origin_policy, unloaded, solid))
        status, voxel, normal, distance, ids, uv, errors = cols
        return Scan(f, status, voxel, normal, distance, ids, uv, list(errors), points)


class World(_Casts):
    """A voxel world on the host, answered by the CPU reference on every core.

    Chunks are 32x32x32 voxels; a chunk that was never written is unloaded (``unloaded="air"``
    treats it as air). Ids are uint16, 0 is air.
    """

    def __init__(self) -> None:
        self._native = _voxcast.World()
        self._caster = _voxcast.Caster(self._native)

    @classmethod
    def from_dense(cls, ids: ArrayLike, origin: Iterable[int] = (0, 0, 0)) -> "World":
        """A world holding the dense block ``ids`` (uint8 or uint16, indexed ``[x, y, z]``)
        with its ``[0, 0, 0]`` at voxel ``origin`` (Python ints)."""
        w = cls()
        w.load_dense(ids, origin)
        return w

    @classmethod
    def from_minecraft(
        cls, path, origin: Iterable[int] = (0, 0, 0), properties: bool = False, shapes: bool = False
    ) -> Tuple["World", dict]:
        """A Minecraft region file (``r.X.Z.mca``) or a folder of them, block (x, y, z) of the
        save at ``origin + (x, y, z)``; also returns the palette, block name to id. With
        ``properties`` each block state gets its own id (``minecraft:oak_log[axis=y]``).
        With ``shapes`` (which implies ``properties``) slabs, stairs, fences, doors, torches,
        flowers and the other blocks voxcast-import's ``shapes`` preset covers get their
        shapes (:meth:`set_shape`), so rays pass over a bottom slab and hit a flower's box.
        :func:`minecraft_solid` gives the ids rays should stop at (not air, water, glass,
        leaves or plants)."""
        w = cls.__new__(cls)
        w._native, names = _voxcast.World.from_minecraft(
            str(path), _frame(origin, "origin"), bool(properties), bool(shapes)
        )
        w._caster = _voxcast.Caster(w._native)
        return w, dict(names)

    @classmethod
    def from_magica(cls, path, origin: Iterable[int] = (0, 0, 0)) -> "World":
        """A MagicaVoxel model (``.vox``), its voxel (x, y, z) at ``origin + (x, z, -y - 1)``
        (MagicaVoxel's z is up)."""
        w = cls.__new__(cls)
        w._native = _voxcast.World.from_magica(str(path), _frame(origin, "origin"))
        w._caster = _voxcast.Caster(w._native)
        return w

    def set_shape(self, id: int, shape) -> None:
        """Sets the shape voxel id ``id`` has for every call on this world (and on its GPU
        uploads): ``"cube"`` (every id's unless set), ``"empty"`` (rays pass it, whatever the
        filter says) or a list of up to 8 boxes, each ``((x0, y0, z0), (x1, y1, z1))`` in
        sixteenths of the voxel (``((0, 0, 0), (16, 8, 16))`` is a bottom slab). A ray that
        meets a shaped voxel hits it only where it meets a box, with that box face's normal,
        distance and UV. Raises ``ValueError`` for a box outside the voxel, inverted, flat,
        more than 8 boxes, or id 0."""
        if isinstance(shape, str):
            if shape not in ("cube", "empty"):
                raise ValueError(f'shape: "cube", "empty" or a list of boxes, not {shape!r}')
            self._native.set_shape(int(id), shape, [])
            return
        boxes = []
        for b in shape:
            lo, hi = b
            boxes.append((tuple(int(v) for v in lo), tuple(int(v) for v in hi)))
        if not boxes:
            raise ValueError('shape: no boxes; use "empty" for a block rays pass')
        if any(len(lo) != 3 or len(hi) != 3 for lo, hi in boxes):
            raise ValueError("shape: each box is ((x0, y0, z0), (x1, y1, z1))")
        if any(not 0 <= v <= 255 for lo, hi in boxes for v in lo + hi):
            raise ValueError("shape: bounds are sixteenths in 0..=16")
        self._native.set_shape(int(id), "boxes", boxes)

    def shape(self, id: int):
        """The shape of ``id``: ``"cube"``, ``"empty"`` or its list of boxes (see :meth:`set_shape`)."""
        kind, boxes = self._native.shape(int(id))
        return kind if kind != "boxes" else [tuple(map(tuple, b)) for b in boxes]

    def load_dense(self, ids: ArrayLike, origin: Iterable[int] = (0, 0, 0)) -> None:
        """Writes the dense block ``ids`` (uint8 or uint16, ``[x, y, z]``; other integers,
        numpy arrays or nested lists, are taken where every id lies in 0..65535) at ``origin``. Every
        chunk it touches becomes loaded; voxels of those chunks outside the block keep their ids."""
        a = _ids(ids)
        if a.ndim != 3:
            raise ValueError(f"ids: three dimensions [x, y, z], not shape {a.shape}")
        o = _frame(origin, "origin")
        chunks = 1
        for lo, n in zip(o, a.shape):
            chunks *= ((lo + n - 1) >> 5) - (lo >> 5) + 1 if n else 0
        if chunks > _MAX_DENSE_CHUNKS:
            raise ValueError(f"ids: the block covers too many chunks ({chunks}, at most {_MAX_DENSE_CHUNKS})")
        self._native.load_dense(np.ascontiguousarray(a, dtype=np.uint16), o)

    def load_chunks(self, chunks: ArrayLike, ids: ArrayLike, *, frame: Iterable[int] = (0, 0, 0)) -> None:
        """Loads whole chunks at once, the fastest way to fill a world: ``ids[k]`` (uint8 or
        uint16 ``(K, 32, 32, 32)``, indexed ``[x, y, z]``) becomes the chunk at ``chunks[k]``
        (integers ``(K, 3)``, chunk coordinates counted from the chunk ``frame``, Python ints;
        chunk ``c`` holds voxels ``32 c`` to ``32 c + 31``), replacing what was there."""
        c = _array("chunks", chunks, np.int64, (None, 3))
        a = np.asarray(ids)
        if a.dtype not in (np.uint8, np.uint16):
            raise TypeError(f"ids: uint8 or uint16, not dtype {a.dtype}")
        if a.shape != (c.shape[0], 32, 32, 32):
            raise ValueError(f"ids: shape ({c.shape[0]}, 32, 32, 32), not {a.shape}")
        self._native.load_chunks(_frame(frame), c, np.ascontiguousarray(a, dtype=np.uint16))

    def set_voxels(self, voxels: ArrayLike, ids: Union[int, ArrayLike], *, frame: Iterable[int] = (0, 0, 0)) -> None:
        """Sets each voxel of ``voxels`` (integers ``(N, 3)``, from the frame) to its id (one id
        or ``(N,)``). A voxel of an unloaded chunk loads that chunk, the rest of it air."""
        v = _array("voxels", voxels, np.int64, (None, 3))
        if np.ndim(ids) == 0:
            if isinstance(ids, (bool, np.bool_)) or not isinstance(ids, (int, np.integer)):
                raise TypeError(f"ids: an integer voxel id, not {type(ids).__name__} {ids!r}")
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
    def skip_empty_bricks(self) -> Optional[bool]:
        """Whether rays skip empty 8x8x8 bricks whole (True), step through them (False), or let
        each ray's length and the world's air decide (None, the default). Answers never
        change; a camera high above terrain gains from True, rays that hug the ground from
        False."""
        return self._native.skip_empty_bricks

    @skip_empty_bricks.setter
    def skip_empty_bricks(self, skip: Optional[bool]) -> None:
        if skip is not None and not isinstance(skip, bool):
            raise TypeError(f"skip_empty_bricks: True, False or None, not {skip!r}")
        self._native.skip_empty_bricks = skip

    @property
    def loaded_bounds(self) -> Optional[Tuple[Frame, Frame]]:
        """The inclusive voxel box ``(lowest, highest)`` of every loaded chunk, as Python ints,
        or None when nothing is loaded."""
        return self._native.loaded_bounds

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

    @property
    def is_software(self) -> bool:
        """Whether the adapter runs on the CPU (Mesa's lavapipe or llvmpipe, SwiftShader):
        there the CPU engine (:class:`World`'s own calls) is usually faster on the same cores."""
        return self._native.is_software

    def upload(self, world: World) -> "GpuWorld":
        """``world`` uploaded to the GPU. The upload follows the world: each call brings over
        the chunks edited since the one before."""
        if not isinstance(world, World):
            raise TypeError(f"world: a World, not {type(world).__name__}")
        g = GpuWorld.__new__(GpuWorld)
        g._caster = self._native.upload(world._native)
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


def minecraft_solid(palette: dict) -> list:
    """The ids of a Minecraft palette (:meth:`World.from_minecraft`) that rays stop at: every
    block but air, water, glass, leaves, plants and the like (voxcast-import's
    ``see_through``). Pass it as ``solid=``."""
    return sorted(i for name, i in palette.items() if not _voxcast.minecraft_see_through(name.split("[")[0]))
