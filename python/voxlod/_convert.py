# SPDX-License-Identifier: Apache-2.0
"""Conversions: meshes (files, or vertex and face arrays) into trees."""

from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np

from . import _voxlod
from ._tree import PathArg, Tree
from ._util import ProgressArg, _bytes, _float32_rows, _host_array, _is_int, _path, _progress

MeshArg = Union[PathArg, Any]  # a path, or a (vertices, faces) pair


def _mesh(mesh: Any) -> Any:
    if isinstance(mesh, tuple) or isinstance(mesh, list):
        if len(mesh) != 2:
            raise ValueError("a mesh is a path or a (vertices, faces) pair")
        v, f = mesh
        v = _float32_rows(_host_array(v, "vertices")[0], "vertices")
        if not isinstance(f, np.ndarray):
            f = np.asarray(f)
        if f.ndim != 2 or f.shape[1] != 3:
            raise ValueError(f"faces must have shape (M, 3), not {f.shape}")
        if not np.issubdtype(f.dtype, np.integer):
            raise TypeError(f"faces must be integer indices, not {f.dtype}")
        if f.size and (f.min() < 0 or f.max() >= v.shape[0]):
            raise ValueError(f"faces index vertices 0..{v.shape[0] - 1}; found {f.min()}..{f.max()}")
        if not np.all(np.isfinite(v)):
            raise ValueError("vertices have NaN or infinite coordinates (or beyond float32's "
                             "range)")
        f = np.ascontiguousarray(f, dtype=np.uint32)
        return _voxlod._Mesh.from_arrays(v, f)
    return _voxlod._Mesh.load(_path(mesh, "mesh"))


def convert(mesh: MeshArg, res: int = 256, error: float = 0.0, gpu: Optional[bool] = None,
            mem_limit: Union[None, int, str] = None, progress: ProgressArg = True,
            band: Optional[float] = None, threads: Optional[int] = None,
            sign: str = "winding") -> Tree:
    """Converts a mesh into a Tree.

    mesh: a file path (any format assimp reads: OBJ, PLY, STL, glTF, FBX, ...) or a
    (vertices (N, 3) float, faces (M, 3) int) pair. res: cells per axis, a power of two from 2
    to 16384. error: prune subtrees whose plane is within this many finest voxels (0: the full
    tree). gpu: None (the GPU when usable, else the CPU: the same tree either way), True (fail
    without one), False. mem_limit: peak bytes (int, or '8G'). progress: True (a tqdm bar when
    tqdm is installed, else a line on stderr), False or None, or a callable(phase, fraction). band:
    field truncation in voxels (default 2). sign: "winding" (generalized winding number) or
    "pseudo-normal". Ctrl-C cancels the build (KeyboardInterrupt)."""
    if not _is_int(res) or res < 2 or res > 16384 or res & (res - 1):
        raise ValueError(f"res must be a power of two from 2 to 16384, not {res!r}")
    if not (error >= 0.0 and np.isfinite(error)):
        raise ValueError(f"error must be a number >= 0, not {error!r}")
    b = 0.0 if band is None else float(band)
    if band is not None and not 1.0 <= b <= 64.0:
        raise ValueError(f"band must be in 1..64 voxels, not {band!r}")
    if threads is not None and (not _is_int(threads) or not 0 <= threads <= 1024):
        raise ValueError(f"threads must be an int in 0..1024, not {threads!r}")
    if sign not in ("winding", "pseudo-normal"):
        raise ValueError(f"sign must be 'winding' or 'pseudo-normal', not {sign!r}")
    device = 0 if gpu is None else (2 if gpu else 1)
    limit = _bytes(mem_limit, "mem_limit")
    cb = _progress(progress)  # before the mesh is read: a wrong progress= costs nothing
    try:
        m = _mesh(mesh)
        t = _voxlod.convert(m, int(res), float(error), b, device, limit, int(threads or 0),
                            0 if sign == "winding" else 1, cb)
    finally:
        close = getattr(cb, "close", None)
        if close is not None:
            close()
    return Tree(t)
