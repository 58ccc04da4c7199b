# SPDX-License-Identifier: Apache-2.0
"""Conversions: meshes (files, or vertex and face arrays) into trees."""

from __future__ import annotations

import os
from typing import Any, Optional, Union

import numpy as np

from . import _voxlod
from ._color import COLOR_FILTERS, COLOR_MODES, _option
from ._mesh import Mesh, _mesh_handle
from ._tree import PathArg, Tree
from ._util import ProgressArg, _bytes, _is_int, _path, _progress

MeshArg = Union[PathArg, Mesh, Any]  # a path, a Mesh, or (vertices, faces[, colors]) arrays


def convert(mesh: MeshArg, res: int = 256, error: float = 0.0, gpu: Optional[bool] = None,
            mem_limit: Union[None, int, str] = None, progress: ProgressArg = True,
            band: Optional[float] = None, threads: Optional[int] = None,
            sign: str = "winding", color: str = "auto", color_filter: str = "mean",
            out: Optional[PathArg] = None, tile_depth: int = 0,
            gpus: Union[None, int, str] = None, client: Any = None) -> Optional[Tree]:
    """Converts a mesh into a Tree.

    mesh: a file path (any format assimp reads: OBJ, PLY, STL, glTF, FBX, ...), a Mesh
    (load_mesh), a (vertices (N, 3) float, faces (M, 3) int) pair, or a (vertices, faces,
    colors) triple with per-vertex colours (N, 3) RGB or (N, 4) RGBA: uint8 sRGB values, or
    floats in [0, 1] (rounded to uint8). res: cells per axis, a power of two from 2
    to 16384. error: prune subtrees whose plane is within this many finest voxels (0: the full
    tree). gpu: None (the GPU when usable, else the CPU: the same tree either way), True (fail
    without one), False. mem_limit: peak bytes (int, or '8G'). progress: True (a tqdm bar when
    tqdm is installed, else a line on stderr), False or None, or a callable(phase, fraction). band:
    field truncation in voxels (default 2). sign: "winding" (generalized winding number) or
    "pseudo-normal". color: "auto" (a coloured tree when the mesh has colour: textures, vertex
    or material colours) or "off" (grey). color_filter: "mean" (a voxel's colour is the
    area-weighted mean, in linear light, of the surface in it) or "dominant" (a colour of
    the surface itself from its largest part: a texel, a vertex or a material colour, never a
    mix). Ctrl-C cancels the build
    (KeyboardInterrupt).

    out: a .svo path to write the tree to (atomically) instead of returning it (None comes
    back): the only way for trees that do not fit in memory, and for tiled trees. tile_depth: 0
    (one tree; res up to 16384, tiles of 16384^3 above) or T in 1..14: a tiled .svo of tiles of
    2^T cells per axis (res up to 2^20; coloured as the untiled tree; error= prunes inside
    the tiles, never above their roots), read back with load() up to 16384^3
    and with TiledFile at any size. gpus: for a tiled build on the GPU, "all" or a count: one
    tile stream per GPU, the same bytes. A path converted to out= is read by the library: a
    tiled build with sign="pseudo-normal" from a binary STL or PLY is split by tile without
    holding the mesh, the same bytes.

    client: a dask.distributed.Client: the tiled build as tasks on its cluster (needs out= and a
    tiled build; mesh a path the workers can read, the output's folder shared with them): each
    worker process plans the build once, tasks build tiles into files beside out, this process
    merges them. The same bytes as without a client; gpu= applies to each worker (one GPU per
    worker process: CUDA_VISIBLE_DEVICES), gpus= does not. Where the mesh is split by tile
    (sign="pseudo-normal", a binary STL or PLY), no worker loads it: a first task splits it into
    a parts file beside out, and each task reads only its tile's triangles from there."""
    tiled = out is not None and (tile_depth or (_is_int(res) and res > 16384))
    top = 1 << 20 if tiled else 16384
    if not _is_int(res) or res < 2 or res > top or res & (res - 1):
        raise ValueError(f"res must be a power of two from 2 to {top}, not {res!r}" +
                         ("" if tiled else " (finer: tiled, with out=)"))
    if not _is_int(tile_depth) or not 0 <= tile_depth <= 14:
        raise ValueError(f"tile_depth must be an int in 0..14, not {tile_depth!r}")
    if tile_depth and out is None:
        raise ValueError("a tiled tree is written to a file: give out=")
    if gpus is None:
        g = 0
    elif gpus == "all":
        g = -1
    elif _is_int(gpus) and 1 <= gpus <= 64:
        g = int(gpus)
    else:
        raise ValueError(f"gpus must be 'all' or a count from 1 to 64, not {gpus!r}")
    if g and gpu is False:
        raise ValueError("gpus= builds on the GPU: not with gpu=False")
    if not (error >= 0.0 and np.isfinite(error)):
        raise ValueError(f"error must be a number >= 0, not {error!r}")
    b = 0.0 if band is None else float(band)
    if band is not None and not 1.0 <= b <= 64.0:
        raise ValueError(f"band must be in 1..64 voxels, not {band!r}")
    if threads is not None and (not _is_int(threads) or not 0 <= threads <= 1024):
        raise ValueError(f"threads must be an int in 0..1024, not {threads!r}")
    if sign not in ("winding", "pseudo-normal"):
        raise ValueError(f"sign must be 'winding' or 'pseudo-normal', not {sign!r}")
    cmode = _option(color, COLOR_MODES, "color")
    cfilter = _option(color_filter, COLOR_FILTERS, "color_filter")
    device = 0 if gpu is None else (2 if gpu else 1)
    limit = _bytes(mem_limit, "mem_limit")
    if client is not None:
        if out is None or not tiled:
            raise ValueError("client= runs a tiled build: give out= and tile_depth= (or a res "
                             "above 16384)")
        if not isinstance(mesh, (str, bytes, os.PathLike)):
            raise TypeError("with client=, mesh must be a path the workers can read")
        if g:
            raise ValueError("gpus= is for one machine: with client=, each worker uses its GPU")
        from ._tiles import convert_on_cluster
        spec = dict(res=int(res), band=b, device=device, mem_limit=limit,
                    threads=int(threads or 0), sign_rule=0 if sign == "winding" else 1,
                    tile_depth=int(tile_depth), zstd_level=0, max_error=float(error),
                    color=cmode, color_filter=cfilter)
        convert_on_cluster(client, _path(mesh, "mesh"), _path(out, "out"), spec,
                           progress=bool(progress))
        return None
    cb = _progress(progress)  # before the mesh is read: a wrong progress= costs nothing
    try:
        # a file to a file: the library reads it (split by tile without holding it, where it can)
        direct = out is not None and isinstance(mesh, (str, bytes, os.PathLike))
        m = _path(mesh, "mesh") if direct else _mesh_handle(mesh)
        t = _voxlod.convert(m, int(res), float(error), b, device, limit, int(threads or 0),
                            0 if sign == "winding" else 1, cb, cmode, cfilter,
                            None if out is None else _path(out, "out"), int(tile_depth), g)
    finally:
        close = getattr(cb, "close", None)
        if close is not None:
            close()
    return None if out is not None else Tree(t)
