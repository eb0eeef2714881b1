"""Type stubs of the native module (``voxcast._voxcast``). Use the package's own classes
(``voxcast.World`` and the rest): they check and convert their arguments, then call these with
C-contiguous arrays of exactly the dtypes given here."""

from os import PathLike
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

MISS: int
HIT: int
UNLOADED: int
INVALID: int
MAX_RIG_PART: int
MAX_DISTANCE: float

Frame = Tuple[int, int, int]
# (origin_policy, unloaded, solid ids or None, conservative)
Options = Tuple[str, str, Optional[Sequence[int]], bool]
# (status uint8, voxel int64 (..., 3), normal int8 (..., 3), distance float32, id uint16,
# uv float32 (..., 2), errors [(flat row, message)])
Columns = Tuple[
    npt.NDArray[np.uint8],
    npt.NDArray[np.int64],
    npt.NDArray[np.int8],
    npt.NDArray[np.float32],
    npt.NDArray[np.uint16],
    npt.NDArray[np.float32],
    List[Tuple[int, str]],
]

def minecraft_see_through(name: str) -> bool: ...
def set_threads(threads: int) -> None: ...

class Rig:
    def __init__(self, directions: npt.NDArray[np.float32], max_distances: npt.NDArray[np.float32]) -> None: ...
    def __len__(self) -> int: ...
    def rays(self) -> Tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]: ...

class World:
    def __init__(self) -> None: ...
    @staticmethod
    def from_minecraft(path: Union[str, PathLike], origin: Frame, properties: bool, shapes: bool) -> Tuple["World", List[Tuple[str, int]]]: ...
    @staticmethod
    def from_magica(path: Union[str, PathLike], origin: Frame) -> "World": ...
    def set_shape(self, id: int, kind: str, boxes: List[Tuple[Tuple[int, int, int], Tuple[int, int, int]]]) -> None: ...
    def shape(self, id: int) -> Tuple[str, List[Tuple[Tuple[int, int, int], Tuple[int, int, int]]]]: ...
    def load_dense(self, ids: npt.NDArray[np.uint16], origin: Frame) -> None: ...
    def load_chunks(self, frame: Frame, chunks: npt.NDArray[np.int64], ids: npt.NDArray[np.uint16]) -> None: ...
    def set_voxels(self, frame: Frame, voxels: npt.NDArray[np.int64], ids: npt.NDArray[np.uint16]) -> None: ...
    def get_voxels(self, frame: Frame, voxels: npt.NDArray[np.int64]) -> Tuple[npt.NDArray[np.uint16], npt.NDArray[np.bool_]]: ...
    @property
    def chunk_count(self) -> int: ...
    skip_empty_bricks: Optional[bool]
    @property
    def loaded_bounds(self) -> Optional[Tuple[Frame, Frame]]: ...
    @property
    def memory_bytes(self) -> int: ...

class Caster:
    def __init__(self, world: World) -> None: ...
    @property
    def world(self) -> World: ...
    def raycast(
        self,
        frame: Frame,
        origins: npt.NDArray[np.float64],
        directions: npt.NDArray[np.float32],
        max_distance: npt.NDArray[np.float32],
        options: Options,
    ) -> Columns: ...
    def line_of_sight(
        self,
        frame: Frame,
        a: npt.NDArray[np.float64],
        b: npt.NDArray[np.float64],
        options: Options,
    ) -> Columns: ...
    def agent_visibility(
        self,
        frame: Frame,
        eyes: npt.NDArray[np.float64],
        pairs: npt.NDArray[np.int64],
        options: Options,
    ) -> Columns: ...
    def visible_pairs_within(
        self,
        frame: Frame,
        eyes: npt.NDArray[np.float64],
        radius: float,
        options: Options,
    ) -> npt.NDArray[np.uint32]: ...
    def sense(
        self,
        frame: Frame,
        rig: Rig,
        poses: npt.NDArray[np.float64],
        options: Options,
    ) -> Tuple[Columns, npt.NDArray[np.float64]]: ...

class Gpu:
    def __init__(self) -> None: ...
    @property
    def adapter(self) -> str: ...
    def upload(self, world: World) -> Caster: ...
