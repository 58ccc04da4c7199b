# SPDX-License-Identifier: Apache-2.0
"""voxlod: triangle meshes to sparse voxel octrees (trees) with a signed-distance field and
per-node level-of-detail planes; images and distance queries from them, on the GPU (CUDA) or the
CPU.

    import voxlod
    tree = voxlod.convert("bunny.ply", res=256)          # or (vertices, faces) arrays
    image = tree.render(width=640, height=480)           # numpy uint8 (480, 640, 3)
    d = tree.sample(points)                              # signed distances, world units
    tree.save("bunny.svo"); tree = voxlod.load("bunny.svo")

docs/python.md in the source tree is the guide; include/voxlod/sample.h states the sampling
rule. Errors raise voxlod.Error (a subclass per status) with the library's message.

The package's modules, by concern: _convert (meshes into trees), _mesh (Mesh, load_mesh, meshes
from arrays), _tree (the Tree, load, from_bytes), _datasets (many meshes into training samples),
_sampling (distance queries), _color (vertex colours in, Tree.colors),
_errors (exceptions), _util (argument checks), _cuda (CUDA arrays), _voxlod (the compiled
bindings); __main__ is `python -m voxlod`. This file only re-exports the public names.
"""

from __future__ import annotations

from typing import List, Optional

from . import _voxlod
from ._convert import convert
from ._mesh import Mesh, load_mesh
from ._datasets import MESH_EXTENSIONS, PRESETS, sample_meshes
from ._errors import (CancelledError, CorruptError, CudaError, EmptyError, Error, FileError,
                      FormatError, InvalidArgumentError, LimitError, NoGpuError, NoMemoryError,
                      VersionError)
from ._sampling import (SAMPLE_FAR, SAMPLE_INVALID, SAMPLE_NEAR, SAMPLE_NO_SIGN, SAMPLE_OUTSIDE,
                        SAMPLE_PLANE)
from ._tree import NODE_DTYPE, STATS_DTYPE, TILE_DTYPE, TiledFile, Tree, from_bytes, load

__version__: str = _voxlod.version()

__all__ = [
    "Tree", "TiledFile", "TILE_DTYPE", "Mesh", "convert", "load_mesh", "sample_meshes", "MESH_EXTENSIONS", "PRESETS", "load", "from_bytes",
    "gpu_available", "gpu_name", "NODE_DTYPE",
    "STATS_DTYPE", "SAMPLE_PLANE", "SAMPLE_NEAR", "SAMPLE_FAR", "SAMPLE_OUTSIDE", "SAMPLE_NO_SIGN",
    "SAMPLE_INVALID", "Error", "InvalidArgumentError", "FileError", "NoMemoryError",
    "FormatError", "CorruptError", "VersionError", "EmptyError", "LimitError", "CudaError",
    "NoGpuError", "CancelledError",
]


def __dir__() -> List[str]:
    """The public names only (tab completion in a notebook shows the API, not the imports)."""
    return sorted(__all__ + ["__version__"])


def gpu_available() -> bool:
    """True when this build has CUDA and a CUDA device is usable now."""
    return bool(_voxlod.gpu_available())


def gpu_name() -> Optional[str]:
    """The name of the GPU voxlod would use, or None."""
    name: Optional[str] = _voxlod.gpu_name()
    return name
