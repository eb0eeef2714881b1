"""What the package's modules share: the statuses, and the checks and conversions of
arguments (each error names its argument)."""

from __future__ import annotations

from typing import Iterable, Optional, Sequence, Tuple, Union

import numpy as np

from . import _voxcast

#: Status of a ray that found nothing within its max distance.
MISS: int = _voxcast.MISS
#: Status of a ray that hit a stopping voxel.
HIT: int = _voxcast.HIT
#: Status of a ray that stopped where unloaded space begins (``unloaded="stop"``).
UNLOADED: int = _voxcast.UNLOADED
#: Status of an invalid ray (see ``Hits.errors``): a NaN, infinite or zero direction, a bad
#: max distance, a point that is not finite or lies 2**62 voxels or more from the frame.
INVALID: int = _voxcast.INVALID
#: The farthest a ray looks, in voxels: a larger ``max_distance`` (``inf`` included) means this.
#: A segment (line of sight) longer than this is an invalid row.
MAX_DISTANCE: float = _voxcast.MAX_DISTANCE

Frame = Tuple[int, int, int]

# The most chunks one dense block may cover (2^24 chunks: 512 GiB of voxels at 2 bytes).
_MAX_DENSE_CHUNKS = 1 << 24
ArrayLike = Union[np.ndarray, Sequence]


def _frame(frame: Iterable[int], name: str = "frame") -> Frame:
    if type(frame) is tuple and len(frame) == 3:
        x, y, z = frame
        if type(x) is int and type(y) is int and type(z) is int and all(_LO <= v < _HI for v in frame):
            return frame  # the common case, checked without conversions
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


_LO, _HI = -(2**127), 2**127


def _array(name: str, a: ArrayLike, dtype, shape: Tuple[Optional[int], ...]) -> np.ndarray:
    """`a` as a C-contiguous array of `dtype` (no copy where it already is one) of `shape`
    (None: any length)."""
    if (
        type(a) is np.ndarray
        and a.dtype == dtype
        and a.flags.c_contiguous
        and a.ndim == len(shape)
        and all(w is None or w == s for w, s in zip(shape, a.shape))
    ):
        return a  # already what the native module takes
    src = np.asarray(a) if not isinstance(a, np.ndarray) else a
    if src.size == 0 and shape[0] in (None, 0) and all(w is not None for w in shape[1:]):
        # Empty in, empty out: `[]` is a batch of no rows whatever its shape says.
        return np.zeros((0,) + tuple(shape[1:]), dtype=dtype)
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
    if isinstance(max_distance, (int, float)) or np.ndim(max_distance) == 0:
        out = np.empty(n, dtype=np.float32)
        out.fill(max_distance)
        return out
    return _array("max_distance", max_distance, np.float32, (n,))
