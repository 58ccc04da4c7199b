# SPDX-License-Identifier: Apache-2.0
"""Meshes: read from files (load_mesh, the Mesh class) or made from arrays (vertices, faces and
optional per-vertex colours), for convert()."""

from __future__ import annotations

import os
from typing import Any, Optional, Tuple, Union

import numpy as np

from . import _voxlod
from ._color import _vertex_colors
from ._util import _bytes, _float32_rows, _host_array, _path

PathArg = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]


class Mesh:
    """A triangle mesh read by load_mesh(), for convert() (which also takes a path or arrays
    directly). Loading once and converting several times reads the file once."""

    __slots__ = ("_m", "_info")

    def __init__(self, handle: Any) -> None:
        if not isinstance(handle, _voxlod._Mesh):
            raise TypeError("use voxlod.load_mesh() to make a Mesh")
        self._m = handle
        self._info = handle.info()

    @property
    def triangles(self) -> int:
        """Triangles kept (zero-area, non-finite ones, points and lines are dropped)."""
        return self._info["triangles"]

    @property
    def bbox(self) -> Tuple[Tuple[float, float, float], Tuple[float, float, float]]:
        """(min xyz, max xyz) of the triangles, world units."""
        return self._info["bbox_min"], self._info["bbox_max"]

    @property
    def has_color(self) -> bool:
        """True when the triangles carry colour (textures, vertex or material colours):
        convert() then makes a coloured tree (unless color='off')."""
        return self._info["has_color"]

    @property
    def notes(self) -> str:
        """What the load wants you to know that is not an error, one line each (a texture
        that could not be read and the material colour used instead, ...); '' when nothing."""
        return self._m.notes()

    @property
    def vertices(self) -> np.ndarray:
        """The vertices, float32 (V, 3), world coordinates, read-only (a view valid while the
        Mesh lives). A loaded mesh is a triangle soup: 3 vertices per triangle, in the order of
        `faces`, so corners shared by several triangles repeat (weld by position if needed)."""
        return self._m.vertices()

    @property
    def faces(self) -> np.ndarray:
        """The triangles as vertex indices into `vertices`, int64 (T, 3); for a loaded mesh
        (a soup) simply [[0, 1, 2], [3, 4, 5], ...]."""
        idx = self._m.indices()
        if idx is not None:
            return idx.astype(np.int64)
        n = self._m.vertices().shape[0] // 3
        return np.arange(3 * n, dtype=np.int64).reshape(n, 3)

    @property
    def normals(self) -> Optional[np.ndarray]:
        """A mesh made from a tree (Tree.mesh): unit normals float32 (V, 3) from the field's
        gradient, one per vertex, read-only; None for a loaded mesh."""
        return self._m.normals()

    @property
    def colors(self) -> Optional[np.ndarray]:
        """A mesh made from a coloured tree: RGBA8 uint8 (V, 4) per vertex (sRGB r, g, b, linear
        alpha), read-only; None otherwise."""
        return self._m.colors()

    def save(self, path: Union[str, os.PathLike], format: Optional[str] = None) -> None:
        """Writes the mesh through assimp, atomically: .obj, .ply (binary), .stl (binary) or
        .glb (binary glTF 2), by the extension or `format` ("obj", "ply", "stl", "glb")."""
        if format is not None and format not in ("obj", "ply", "stl", "glb"):
            raise ValueError(f"format {format!r}: 'obj', 'ply', 'stl' or 'glb'")
        self._m.save(_path(path, "path"), format or "")

    @property
    def info(self) -> dict:
        """Counts (triangles, meshes, materials, textures, skipped_*), bbox_min/bbox_max,
        has_color and load_seconds (a dict)."""
        return dict(self._info)

    def __repr__(self) -> str:
        c = " coloured" if self.has_color else ""
        return f"<voxlod.Mesh: {self.triangles} triangles{c}>"


def load_mesh(path: PathArg, timeout: Optional[float] = None,
              mem_limit: Union[None, int, str] = None) -> Mesh:
    """Reads every mesh of a scene file (any format assimp reads), with its colour (textures,
    vertex or material colours) when it has some. The import runs in a child process (a large
    binary STL or PLY of plain triangles: voxlod's own streaming reader, in this process): timeout
    (seconds, default 300) and mem_limit (bytes or '8G', default 80% of memory) bound it.
    Warnings that do not fail the load (a missing or corrupt texture) are in Mesh.notes."""
    t = 0.0
    if timeout is not None:
        t = float(timeout)
        if not (t > 0.0 and np.isfinite(t)):
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
    return Mesh(_voxlod._Mesh.load(_path(path, "mesh"), t, _bytes(mem_limit, "mem_limit")))


def _mesh_handle(mesh: Any) -> Any:
    """The library's mesh for convert(): from a Mesh, a path, or (vertices, faces[, colors])."""
    if isinstance(mesh, Mesh):
        return mesh._m
    if isinstance(mesh, (tuple, list)):
        if len(mesh) not in (2, 3):
            raise ValueError("a mesh is a path or a (vertices, faces) or (vertices, faces, "
                             "colors) tuple")
        v, f = mesh[0], mesh[1]
        c = mesh[2] if len(mesh) == 3 else None
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
        rgba = None if c is None else _vertex_colors(c, v.shape[0])  # before any work
        f = np.ascontiguousarray(f, dtype=np.uint32)
        m = _voxlod._Mesh.from_arrays(v, f)
        if rgba is not None:
            m.set_vertex_colors(rgba)
        return m
    return _voxlod._Mesh.load(_path(mesh, "mesh"))
