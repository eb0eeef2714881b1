"""What the examples share: the sample files the Rust crates' dependencies ship (found with
``cargo metadata`` in a clone of the repository, or named by ``VOXCAST_PACKAGE_<NAME>``), and writers of PNG and PLY files (numpy
alone, no imaging library)."""

import json
import os
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def package_dir(name: str) -> Path:
    """Where cargo keeps the source of the workspace's dependency ``name``: from
    ``VOXCAST_PACKAGE_<NAME>`` where set (for a machine without cargo), else from
    ``cargo metadata``."""
    given = os.environ.get("VOXCAST_PACKAGE_" + name.upper())
    if given:
        return Path(given)
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1"], cwd=REPO, check=True, capture_output=True
    ).stdout
    for p in json.loads(out)["packages"]:
        if p["name"] == name:
            return Path(p["manifest_path"]).parent
    raise SystemExit(f"{name} is not a dependency of the workspace")


def sample_region() -> Path:
    """fastanvil's Minecraft 1.19.4 region, a dependency of voxcast-import's tests."""
    return package_dir("fastanvil") / "resources" / "1.19.4.mca"


def write_png(path, rgb: np.ndarray) -> None:
    """An 8-bit RGB image ``(H, W, 3)`` as a PNG file."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].astype(np.uint8).tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")
    Path(path).write_bytes(png)


def write_ply(path, points: np.ndarray, intensity: np.ndarray) -> None:
    """Points ``(N, 3)`` with an intensity each as a binary PLY point cloud (x, y, z float32
    with Minecraft's y up, intensity float32)."""
    n = len(points)
    header = (
        "ply\nformat binary_little_endian 1.0\n"
        f"element vertex {n}\nproperty float x\nproperty float y\nproperty float z\n"
        "property float intensity\nend_header\n"
    ).encode()
    body = np.hstack([points.astype(np.float32), intensity.astype(np.float32)[:, None]])
    Path(path).write_bytes(header + body.astype("<f4").tobytes())


def colormap(v: np.ndarray) -> np.ndarray:
    """Values in [0, 1] to RGB, near (0) warm to far (1) cool; NaN black."""
    stops = np.array([[253, 231, 37], [94, 201, 98], [33, 145, 140], [59, 82, 139], [68, 1, 84]], float)
    t = np.clip(np.nan_to_num(v, nan=0.0), 0, 1) * (len(stops) - 1)
    i = np.minimum(t.astype(int), len(stops) - 2)
    f = (t - i)[..., None]
    rgb = stops[i] * (1 - f) + stops[i + 1] * f
    rgb[np.isnan(v)] = 0
    return rgb.astype(np.uint8)
