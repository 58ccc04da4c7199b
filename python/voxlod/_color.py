# SPDX-License-Identifier: Apache-2.0
"""Colour: per-vertex colours given with a mesh (checked and turned into uint8 RGB(A)), and
Tree.colors and TiledFile.colors, the colour of the tree at points (methods: _tree.py binds
them).

Colours are sRGB-encoded r, g, b and a linear alpha (the opaque share of the surface a cell
stands for; 0: a hole). The library averages them in linear light."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from ._cuda import _cuda_layout
from ._errors import InvalidArgumentError
from ._util import _bytes, _float32_rows, _host_array, _is_int

if TYPE_CHECKING:
    from ._tree import TiledFile, Tree

COLOR_MODES = {"auto": 0, "off": 1}
COLOR_FILTERS = {"mean": 0, "dominant": 1}


def _vertex_colors(colors: Any, vertex_count: int) -> np.ndarray:
    """Per-vertex colours as a C-contiguous uint8 (N, 3) or (N, 4) array. uint8 (and other
    integer types holding 0..255) are taken as they are; floats must lie in [0, 1] and become
    floor(c * 255 + 0.5). Anything else is refused with a message."""
    what = "colors"
    a, _ = _host_array(colors, what)
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{what} must be an array of shape (N, 3) or (N, 4), not "
                        f"{type(colors).__name__}")
    if a.ndim != 2 or a.shape[1] not in (3, 4):
        raise ValueError(f"{what} must have shape (N, 3) (RGB) or (N, 4) (RGBA), not {a.shape}")
    if a.shape[0] != vertex_count:
        raise ValueError(f"{what} must have one row per vertex: {vertex_count} rows, not "
                         f"{a.shape[0]}")
    if a.dtype == np.bool_ or not (np.issubdtype(a.dtype, np.integer)
                                   or np.issubdtype(a.dtype, np.floating)):
        raise TypeError(f"{what} must be uint8 (0..255, or integers in that range) or float "
                        f"(0..1), not {a.dtype}")
    if a.dtype == np.uint8:
        return np.ascontiguousarray(a)
    if np.issubdtype(a.dtype, np.integer):
        if a.size and (a.min() < 0 or a.max() > 255):
            raise ValueError(f"integer {what} must be in 0..255, found {a.min()}..{a.max()}")
        return np.ascontiguousarray(a, dtype=np.uint8)
    f = a.astype(np.float64)
    bad = ~np.isfinite(f)
    if bad.any():
        row = int(np.argwhere(bad)[0][0])
        raise ValueError(f"{what} have a NaN or infinite value (row {row}: {a[row].tolist()})")
    if f.size and (f.min() < 0.0 or f.max() > 1.0):
        raise ValueError(f"float {what} must be in [0, 1] (uint8 colours are 0..255), found "
                         f"{f.min():g}..{f.max():g}")
    return np.ascontiguousarray(np.floor(f * 255.0 + 0.5), dtype=np.uint8)


def _option(value: Any, table: dict, what: str) -> int:
    if not isinstance(value, str) or value not in table:
        names = " or ".join(repr(k) for k in table)
        raise ValueError(f"{what} must be {names}, not {value!r}")
    return int(table[value])


def _rgba_view(packed: np.ndarray) -> np.ndarray:
    """Packed RGBA8 (r in the low byte) as uint8 (N, 4): a view on little-endian machines."""
    if sys.byteorder == "little":
        return packed.view(np.uint8).reshape(packed.shape[0], 4)
    p = packed.astype(np.uint32)
    return np.stack([(p >> s) & 255 for s in (0, 8, 16, 24)], axis=1).astype(np.uint8)


def colors(self: Tree, points: Any, lod: Optional[int] = None) -> Any:
    """The colour of the tree at world points (N, 3): uint8 (N, 4) RGBA, r g b sRGB-encoded and
    alpha linear, of the surface voxel (or, with lod, the cell of that level; a pruned leaf
    stands for its subtree) containing each point, else of the nearest one within the band,
    else 0 0 0 0. Points as Tree.sample takes them on the host: numpy float32 or float64
    C-contiguous (lists through numpy; CPU arrays of other frameworks through DLPack, torch
    CPU tensors give a torch tensor back). lod: None (the finest level loaded) or a level.
    NaN or infinite points raise ValueError (naming the first), and so does a tree without
    colour (after the arguments are checked). The rule is vx_tree_colors' (include/voxlod/
    tree.h)."""
    level, p, wrap = _color_args(self, points, lod, self._info["levels_loaded"], "Tree")
    return _color_call(lambda out: self._t.colors(p, out, level), p, wrap)


def tiled_colors(self: TiledFile, points: Any, lod: Optional[int] = None,
                 cache_bytes: Any = None) -> Any:
    """Tree.colors on a tiled file of any depth, tile by tile (TiledFile.colors): the same
    arguments and rule. Up to 16384^3 the bytes are load(path).colors(...)'s; past it those of
    the same rule on the whole tree. The tiles are decoded as the points need them and kept
    with the file between calls, within cache_bytes of the latest call (None: 1 GiB; an int or
    a string such as "256M"); one group's tiles (a tile and its 26 neighbours) are held
    whatever it says."""
    level, p, wrap = _color_args(self, points, lod, self.depth + 1, "TiledFile")
    cache = _bytes(cache_bytes, "cache_bytes")
    return _color_call(lambda out: self._sampler().colors(p, out, level, cache), p, wrap)


def _color_args(self: Any, points: Any, lod: Optional[int], loaded: int, what: str):
    """colors' arguments checked: (level, float32 points, the wrapper of the result)."""
    if lod is None:
        level = -1
    elif _is_int(lod) and 0 <= lod <= self.depth:
        level = int(lod)
        if level >= loaded:
            raise ValueError(f"level {level} is not loaded (this tree holds levels "
                             f"0..{loaded - 1})")
    else:
        raise ValueError(f"lod must be None or a level in 0..{self.depth}, not {lod!r}")
    if _cuda_layout(points) is not None:
        raise TypeError(f"{what}.colors takes host arrays: copy CUDA points to the host first "
                        "(.cpu() in torch, .get() in cupy)")
    points, wrap = _host_array(points, "points")
    p = _float32_rows(points, "points")
    bad = ~np.isfinite(p).all(axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"points: point {i} has a NaN or infinite coordinate "
                         f"({p[i].tolist()})")
    if not self.has_color:
        raise ValueError("this tree has no colour (its mesh had none, or it was converted with "
                         "color='off')")
    return level, p, wrap


def _color_call(call: Any, p: np.ndarray, wrap: Any) -> Any:
    out = np.zeros((p.shape[0], 4), dtype=np.uint8)
    try:
        call(out)
    except InvalidArgumentError as e:
        if "no colour" in str(e):
            raise ValueError(f"this tree has no colour ({e})") from None
        raise
    return wrap(out)
