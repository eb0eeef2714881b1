"""Shared worlds and the GPU for the tests.

The GPU tests follow the Rust ones: with ``VOXCAST_REQUIRE_GPU=1`` (``scripts/test.sh`` sets
it) a missing adapter fails them; otherwise they are skipped with a loud message.
"""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

# Run from inside python/ (`python -m pytest tests`), the current folder would put the
# package's sources, which lack the built native module, ahead of the installed package: the
# tests import the installed one.
_SOURCES = Path(__file__).resolve().parent.parent
sys.path = [p for p in sys.path if Path(p or ".").resolve() != _SOURCES]

import voxcast as vc  # noqa: E402

# Offsets in the i128 world the tests place their worlds at: the origin, 2^64, 2^120, and near
# both edges (a 96-voxel world must fit below 2^127).
OFFSETS = [
    (0, 0, 0),
    (2**64, -(2**64), 2**64 + 5),
    (2**120, 3, -(2**120)),
    (2**127 - 128, 2**127 - 128, 2**127 - 128),
    (-(2**127), -(2**127), -(2**127)),
]


def terrain(seed: int = 7, size=(96, 48, 96)) -> np.ndarray:
    """Hills of a few ids with caves and floating blocks: rays meet faces, edges and corners."""
    rng = np.random.default_rng(seed)
    x, y, z = np.meshgrid(*(np.arange(s) for s in size), indexing="ij")
    height = 12 + 6 * np.sin(x / 9.0) * np.cos(z / 13.0) + 3 * np.sin((x + z) / 5.0)
    ids = np.where(y < height, 1 + (y // 5) % 3, 0).astype(np.uint16)
    caves = rng.random(size) < 0.08
    ids[caves] = 0
    floating = rng.random(size) < 0.01
    ids[floating] = 9
    return ids


@pytest.fixture(scope="session")
def gpu():
    try:
        return vc.Gpu()
    except RuntimeError as e:
        if os.environ.get("VOXCAST_REQUIRE_GPU") == "1":
            pytest.fail(f"VOXCAST_REQUIRE_GPU=1 and no GPU raycaster: {e}")
        print(f"\n!!! SKIPPING GPU TESTS: no GPU raycaster ({e}) !!!\n", file=sys.stderr)
        pytest.skip(f"no GPU raycaster: {e}")


def random_rays(n: int, size, seed: int):
    rng = np.random.default_rng(seed)
    o = rng.uniform(-4, np.asarray(size) + 4, (n, 3))
    d = rng.normal(size=(n, 3))
    # Some rays along axes and diagonals, from voxel corners and centres: the ties.
    k = n // 4
    o[:k] = np.floor(o[:k]) + rng.choice([0.0, 0.5], (k, 3))
    d[:k] = rng.choice([-1.0, 0.0, 1.0], (k, 3))
    d[:k][np.all(d[:k] == 0, axis=1)] = (1.0, 1.0, 1.0)
    return o, d


def assert_same(a, b, what: str):
    """Two answers equal under the parity contract: everything bit for bit, UV within 1e-5."""
    assert a.status.shape == b.status.shape, what
    rows = a.status.size
    for name in ("status", "voxel", "normal", "id"):
        x = getattr(a, name).reshape(rows, -1)
        y = getattr(b, name).reshape(rows, -1)
        bad = np.flatnonzero((x != y).any(axis=1))
        assert bad.size == 0, f"{what}: {name} differs at rows {bad[:5].tolist()}"
    bad = np.flatnonzero(a.distance.reshape(-1).view(np.uint32) != b.distance.reshape(-1).view(np.uint32))
    assert bad.size == 0, f"{what}: distance differs at rows {bad[:5].tolist()}"
    assert np.all(np.abs(a.uv - b.uv) <= 1e-5), f"{what}: uv"
    assert a.errors == b.errors, what
