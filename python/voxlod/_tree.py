# SPDX-License-Identifier: Apache-2.0
"""Trees: the Tree class (inspect, files, images; its distance queries are _sampling.py's),
and trees read from .svo files or their bytes (load, from_bytes)."""

from __future__ import annotations

import os
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _color, _sampling, _voxlod
from ._mesh import Mesh
from ._errors import FormatError
from ._util import _bytes, _device, _is_int, _path, _zstd_level

PathArg = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

#: One node as the tree stores it (svo/node.h): first child index, info (mask | errmax << 8 |
#: errrms << 16 | flags << 24), octahedral normal, plane offset in node units.
NODE_DTYPE = np.dtype([("child", "<u4"), ("info", "<u4"), ("normal", "<u4"), ("d", "<f4")])

#: One row of the memory-per-level table (Tree.stats()).
STATS_DTYPE = np.dtype([(name, "<u8") for name in (
    "level", "cells", "leaves", "topology_bytes", "lod_bytes", "field_bytes", "disk_bytes",
    "render_bytes", "float8_bytes", "dense_bytes", "color_bytes")])

_SHADES = {"smooth": 0, "blocks": 1, "normals": 2, "albedo": 3}


class Tree:
    """A tree: a sparse voxel octree with a signed-distance field (from convert() or load()).

    Grid coordinates (finest voxels, [0, resolution]^3) map to world coordinates by
    world = origin + grid * scale (``transform`` is that map as a 4x4 matrix). The renderer and
    the sampler are made on first use and kept, so repeated renders and samples do not upload
    the tree again (a GPU sampler reads the renderer's copy).
    """

    __slots__ = ("_t", "_info", "__weakref__")

    def __init__(self, handle: Any) -> None:
        if not isinstance(handle, _voxlod._Tree):
            raise TypeError("use voxlod.convert() or voxlod.load() to make a Tree")
        self._t = handle
        self._info = handle.info()

    # ---- inspect
    @property
    def depth(self) -> int:
        """D: the finest level (2^D cells per axis)."""
        return self._info["depth"]

    @property
    def resolution(self) -> int:
        """2^depth: finest cells per axis."""
        return self._info["resolution"]

    @property
    def origin(self) -> Tuple[float, float, float]:
        """World position of grid point (0, 0, 0)."""
        return self._info["origin"]

    @property
    def scale(self) -> float:
        """World units per finest voxel."""
        return self._info["scale"]

    @property
    def band(self) -> float:
        """The field is truncated at +-band finest voxels."""
        return self._info["band"]

    @property
    def transform(self) -> np.ndarray:
        """4x4 float64 matrix taking homogeneous grid coordinates to world coordinates."""
        m = np.eye(4)
        m[:3, :3] *= self.scale
        m[:3, 3] = self.origin
        return m

    @property
    def has_color(self) -> bool:
        """True when the nodes and voxels carry colours (Tree.colors, shade="albedo")."""
        return self._info["has_color"]

    @property
    def info(self) -> dict:
        """Depth, counts, transform, band, prune error, memory and file bytes, has_color and
        color_bytes (a dict)."""
        return dict(self._info)

    @property
    def notes(self) -> str:
        """What the conversion wants you to know that is not an error ('' when nothing)."""
        return self._t.notes()

    @property
    def nodes(self) -> np.ndarray:
        """The nodes (levels 0 .. depth-1, breadth first, each level in Morton order) as a
        read-only structured array of NODE_DTYPE, sharing the tree's memory."""
        raw = self._t.nodes()
        return raw.view(NODE_DTYPE).reshape(raw.shape[0])

    @property
    def voxels(self) -> np.ndarray:
        """The surface voxels in Morton order, read-only int8 (N, 8): corner c at
        (c & 1, c >> 1 & 1, c >> 2 & 1), value q meaning q * band / 127 voxels."""
        return self._t.voxels()

    @property
    def node_colors(self) -> np.ndarray:
        """The nodes' colours, read-only uint8 (N, 4) RGBA (sRGB r g b, linear alpha) in the
        order of ``nodes``, each the coverage-weighted mean colour of the node's subtree; empty
        (0, 4) for a grey tree."""
        return _color._rgba_view(self._t.node_colors())

    @property
    def voxel_colors(self) -> np.ndarray:
        """The surface voxels' colours, read-only uint8 (N, 4) RGBA in the order of ``voxels``;
        empty (0, 4) for a grey tree or when the finest level is not loaded."""
        return _color._rgba_view(self._t.voxel_colors())

    def stats(self) -> np.ndarray:
        """The memory-per-level table (``voxlod stats``): a structured array of STATS_DTYPE,
        one row per level from 0 (1^3) to depth."""
        return np.array([tuple(r) for r in self._t.levels()], dtype=STATS_DTYPE)

    def __repr__(self) -> str:
        i = self._info
        return (f"<voxlod.Tree {i['resolution']}^3: {i['node_count']} nodes, "
                f"{i['voxel_count']} voxels, {i['memory_bytes'] / 2**20:.1f} MiB>")

    # ---- files
    def save(self, path: PathArg, zstd_level: int = 0) -> None:
        """Writes the tree as a .svo file, atomically (an existing file is replaced only by a
        complete new one). zstd_level 1..22, 0: by size."""
        self._t.save(_path(path, "path"), _zstd_level(zstd_level))

    def to_bytes(self, zstd_level: int = 0) -> bytes:
        """The .svo file's bytes (what save() writes), for storage elsewhere or sending;
        from_bytes() reads them back. The tree must be whole (all levels loaded)."""
        return self._t.encode(_zstd_level(zstd_level))

    # A Tree pickles as its .svo bytes (zstd level 1: fast), so it crosses process boundaries
    # (multiprocessing, a torch DataLoader's workers); the copy gets its own renderer and
    # sampler. Trees are immutable, so copy.copy and copy.deepcopy return the same tree.
    def __reduce__(self) -> Tuple[Callable[..., "Tree"], Tuple[bytes]]:
        return (from_bytes, (self.to_bytes(1),))

    def __copy__(self) -> "Tree":
        return self

    def __deepcopy__(self, memo: dict) -> "Tree":
        return self

    def prune(self, max_error: float) -> "Tree":
        """A copy with every subtree whose plane approximates it within max_error finest
        voxels replaced by that plane."""
        return Tree(self._t.prune(float(max_error)))

    def mesh(self, lod: Optional[int] = None, error: Optional[float] = None,
             threads: Optional[int] = None) -> "Mesh":
        """A triangle mesh of the tree by dual contouring (what `voxlod mesh` writes;
        docs/MESHING.md): full detail by default, the nodes of level `lod` (0..depth), or with
        `error` the adaptive cut within that many finest voxels of the full-detail mesh. An
        indexed Mesh: `vertices` (V, 3), `faces` (T, 3), `normals` (V, 3), `colors` (V, 4) for
        a coloured tree; `save()` writes it. threads: None for all cores."""
        cut, level, err, n = _mesh_args(self.depth, lod, error, threads)
        return Mesh(self._t.mesh(cut, level, err, n))

    # ---- render
    def render(self, width: int = 800, height: int = 600, lod: Union[None, int, str] = None,
               eye: Optional[Sequence[float]] = None, target: Optional[Sequence[float]] = None,
               fov: Optional[float] = None, shade: str = "smooth", depth: bool = False,
               up: Optional[Sequence[float]] = None, lod_scale: float = 1.0,
               device: Optional[str] = None) -> Any:
        """An image of the tree: numpy uint8 (height, width, 3), and with depth=True also the
        depth (float32 (height, width), world units along the ray, inf where nothing is hit).

        lod: None (finest level), a level 0..depth (nodes drawn as their planes) or "auto"
        (per pixel: nodes smaller than lod_scale pixels). Camera: eye and target in world
        coordinates (default: an orbit view at azimuth 30, elevation 20 that frames the model;
        with only target or eye given the other comes from it), fov the vertical field of view
        in degrees (default 40), up (default +y). shade: "smooth", "blocks", "normals" or
        "albedo" (the smooth surface in its unlit base colour: the tree's colours, grey for a
        tree without). A coloured tree is drawn in colour (lit) by the other shades too.
        device: None (the GPU when usable), "cpu" or "gpu"; the renderer is kept for the next
        call."""
        mode, level, camera = _render_args(self.depth, self._t.orbit_camera, width, height, lod,
                                           eye, target, fov, shade, up, lod_scale)
        rgb = np.empty((height, width, 3), dtype=np.uint8)
        dep = np.empty((height, width), dtype=np.float32) if depth else None
        self._t.render(rgb, dep, mode, level, float(lod_scale), _SHADES[shade], camera,
                       _device(device))
        return (rgb, dep) if depth else rgb

    # ---- sample (_sampling.py), colour (_color.py)
    sample = _sampling.sample
    surface_points = _sampling.surface_points
    colors = _color.colors


def _mesh_args(depth: int, lod: Any, error: Any, threads: Any) -> Tuple[int, int, float, int]:
    """Tree.mesh's arguments checked: (cut: 0 finest, 1 a level, 2 the error cut; level; error;
    threads, 0 for all cores)."""
    if lod is not None and error is not None:
        raise ValueError("lod and error exclude each other")
    if threads is None:
        threads = 0
    elif not _is_int(threads) or not 1 <= threads <= 1024:
        raise ValueError(f"threads must be None or an int in 1..1024, not {threads!r}")
    if lod is not None:
        if not _is_int(lod) or not 0 <= lod <= depth:
            raise ValueError(f"lod {lod!r}: a level 0..{depth} of this tree")
        return 1, int(lod), 0.0, int(threads)
    if error is not None:
        e = float(error)
        if not 0.0 < e < 1e6:
            raise ValueError(f"error {error!r}: a number of finest voxels > 0")
        return 2, 0, e, int(threads)
    return 0, 0, 0.0, int(threads)


def _render_args(depth: int, orbit: Callable, width: Any, height: Any, lod: Any, eye: Any,
                 target: Any, fov: Any, shade: Any, up: Any,
                 lod_scale: Any) -> Tuple[int, int, List[float]]:
    """Tree.render's arguments checked: (lod mode, level, camera list: empty for the default
    orbit view, else eye, target, up and fov). orbit(az, el, fov): the default camera."""
    if not _is_int(width) or not _is_int(height) \
            or not (1 <= width <= 32768 and 1 <= height <= 32768):
        raise ValueError(f"width and height must be ints in 1..32768, not {width!r}, "
                         f"{height!r}")
    if lod is None:
        mode, level = 0, 0
    elif isinstance(lod, str):
        if lod != "auto":
            raise ValueError(f"lod must be None, a level or 'auto', not {lod!r}")
        mode, level = 2, 0
    elif _is_int(lod) and 0 <= lod <= depth:
        mode, level = 1, int(lod)
    else:
        raise ValueError(f"lod must be None, 'auto' or a level in 0..{depth}, not {lod!r}")
    if shade not in _SHADES:
        raise ValueError(f"shade must be one of {sorted(_SHADES)}, not {shade!r}")
    if not (lod_scale > 0 and np.isfinite(lod_scale)):
        raise ValueError(f"lod_scale must be a positive number, not {lod_scale!r}")
    camera: List[float] = []
    if eye is not None or target is not None or fov is not None or up is not None:
        base = orbit(30.0, 20.0, 40.0 if fov is None else float(fov))
        e = base[0:3] if eye is None else [float(v) for v in eye]
        t = base[3:6] if target is None else [float(v) for v in target]
        u = [0.0, 1.0, 0.0] if up is None else [float(v) for v in up]
        if len(e) != 3 or len(t) != 3 or len(u) != 3:
            raise ValueError("eye, target and up must have 3 coordinates")
        f = 40.0 if fov is None else float(fov)
        if not 0.0 < f < 180.0:
            raise ValueError(f"fov must be in (0, 180) degrees, not {fov!r}")
        camera = list(e) + list(t) + list(u) + [f]
        if not np.all(np.isfinite(camera)):
            raise ValueError("the camera has a NaN or infinite coordinate")
    return mode, level, camera


def _levels(max_level: Optional[int]) -> int:
    if max_level is not None and (not _is_int(max_level) or not 0 <= max_level <= 14):
        raise ValueError(f"max_level must be None or a level in 0..14, not {max_level!r}")
    return 0 if max_level is None else int(max_level) + 1


def load(path: PathArg, max_level: Optional[int] = None,
         mem_limit: Union[None, int, str] = None) -> Tree:
    """Reads a .svo file (every byte checked). max_level: load levels 0..max_level only (enough
    to render or sample a cut there); mem_limit: refuse files whose decoded size exceeds it."""
    levels = _levels(max_level)
    return Tree(_voxlod._Tree.load(_path(path, "path"), levels, _bytes(mem_limit, "mem_limit")))


def from_bytes(data: Any, max_level: Optional[int] = None,
               mem_limit: Union[None, int, str] = None) -> Tree:
    """A tree from the bytes of a .svo file (bytes, bytearray, memoryview or any other
    buffer; Tree.to_bytes() makes them), checked as load() checks a file."""
    levels = _levels(max_level)
    if isinstance(data, str):
        raise TypeError("data must be bytes-like (the .svo file's bytes), not str")
    try:
        view = memoryview(data)
    except TypeError:
        raise TypeError(f"data must be bytes-like (the .svo file's bytes), not "
                        f"{type(data).__name__}") from None
    buf = np.frombuffer(view.cast("B") if view.contiguous else view.tobytes(), dtype=np.uint8)
    return Tree(_voxlod._Tree.load_bytes(buf, levels, _bytes(mem_limit, "mem_limit")))


#: One tile of a tiled file (TiledFile.tiles()): its cell (Morton code and coordinates in the
#: grid of tiles), surface voxels, nodes, bytes in the file, world origin and edge.
TILE_DTYPE = np.dtype([("code", "<u8"), ("cell", "<u4", (3,)), ("voxel_count", "<u8"),
                       ("node_count", "<u8"), ("file_bytes", "<u8"), ("origin", "<f8", (3,)),
                       ("edge", "<f8")])


class TiledFile:
    """A tiled .svo file (convert(..., out=, tile_depth=), or finer than 16384^3) read tile by
    tile: its header, top tree and tile index at open, a tile's header or the whole tile when
    asked. load() joins one of up to 16384^3 into one Tree; this reads any of them, up to 2^20.
    sample() gives signed distances from any of them, tile by tile, colors() the colour at
    points of a coloured one.
    """

    __slots__ = ("_f", "_info", "_open", "_s", "_r", "__weakref__")

    def __init__(self, path: PathArg, mem_limit: Union[None, int, str] = None) -> None:
        self._open = (_path(path, "path"), _bytes(mem_limit, "mem_limit"))
        self._f = _voxlod._TiledFile.open(*self._open)
        self._info = self._f.info()
        self._s = None
        self._r = None

    # ---- sample (_sampling.py) and colors (_color.py): a handle of their own on the file, made
    # on the first call
    sample = _sampling.tiled_sample
    colors = _color.tiled_colors

    def _sampler(self):
        if self._s is None:
            s = _voxlod._TiledSampler.open(*self._open)
            i = self._info
            if s.identity() != (i["depth"], i["tile_depth"], i["tile_count"], i["voxel_count"],
                                i["file_bytes"]):
                raise FormatError(f"{os.fsdecode(self._open[0])}: the file changed since it was "
                                  "opened; open it again")
            self._s = s
        return self._s

    @property
    def depth(self) -> int:
        """D: the finest level of the whole tree (2^D cells per axis)."""
        return self._info["depth"]

    @property
    def has_color(self) -> bool:
        """True when the tiles carry colours (TiledFile.colors)."""
        return self._info["has_color"]

    @property
    def tile_depth(self) -> int:
        """Each tile's depth: 2^tile_depth cells per axis."""
        return self._info["tile_depth"]

    @property
    def tile_count(self) -> int:
        """Tiles in the file (cells of the grid of tiles that hold surface voxels)."""
        return self._info["tile_count"]

    @property
    def info(self) -> dict:
        """The whole tree: depth, resolution, tile_depth, tile_count, node_count, voxel_count,
        origin, scale, band, memory_bytes (joined), file_bytes, file_version (3)."""
        return dict(self._info)

    def stats(self) -> np.ndarray:
        """The whole tree's memory-per-level table (STATS_DTYPE rows, as Tree.stats), from the
        top tree and the tiles' headers; no tile is loaded."""
        return np.array([tuple(r) for r in self._f.levels()], dtype=STATS_DTYPE)

    def tiles(self) -> np.ndarray:
        """One TILE_DTYPE row per tile, in file (Morton) order."""
        rows = []
        for i in range(self.tile_count):
            d = self._f.tile(i)
            rows.append((d["code"], d["cell"], d["voxel_count"], d["node_count"],
                         d["file_bytes"], d["origin"], d["edge"]))
        return np.array(rows, dtype=TILE_DTYPE)

    def load_tile(self, i: int, max_level: Optional[int] = None,
                  mem_limit: Union[None, int, str] = None) -> Tree:
        """Tile i as a Tree of its own (tile_depth levels, world coordinates as the whole
        tree's): render, sample, mesh it like any tree. max_level as for load()."""
        if not _is_int(i) or not 0 <= i < self.tile_count:
            raise IndexError(f"tile {i!r} of {self.tile_count}")
        levels = _levels(max_level)
        return Tree(self._f.load_tile(int(i), levels, _bytes(mem_limit, "mem_limit")))

    def level_tree(self, level: int, mem_limit: Union[None, int, str] = None) -> Tree:
        """Level `level` (1 .. min(depth, 14)) of the whole tree as a Tree of that depth, read
        tile by tile: its voxels are the level's cells (the surface voxels at the finest level,
        above it each node's plane at its corners). At the finest level of a file of up to
        16384^3 it is the tree load() joins, node for node; past 16384^3 it is how a tree of
        any depth is saved, sampled, rendered or meshed as one tree of up to 16384^3."""
        if not _is_int(level) or not 1 <= level <= min(self.depth, 14):
            raise ValueError(f"level {level!r}: a level 1..{min(self.depth, 14)} of this "
                             f"{self.depth}-level tree")
        return Tree(self._f.level_tree(int(level), _bytes(mem_limit, "mem_limit")))

    def mesh(self, lod: Optional[int] = None, error: Optional[float] = None,
             threads: Optional[int] = None) -> "Mesh":
        """Tree.mesh on a tiled file of any depth, without joining it: at full detail window by
        window (2 x 2 x 2 tiles each, welded at the seams; up to 16384^3 the joined tree's mesh;
        docs/MESHING.md), with `lod` (1..14) or `error` from one of its levels as a tree of its
        own (level_tree(lod), or level 14's error cut within `error` finest voxels)."""
        top = min(self.depth, 14)
        if lod is not None and error is None:
            if not _is_int(lod) or not 1 <= lod <= top:
                raise ValueError(f"lod {lod!r}: a level 1..{top} of this {self.depth}-level tree")
            return self.level_tree(int(lod)).mesh(threads=threads)
        cut, _, err, n = _mesh_args(self.depth, lod, error, threads)
        if cut == 2:
            return self.level_tree(top).mesh(error=err / 2.0 ** (self.depth - top), threads=n or None)
        return Mesh(self._f.mesh(n))

    # ---- render: a renderer of its own on the file, kept for the next call with the same
    # device, budget and streaming
    def render(self, width: int = 800, height: int = 600, lod: Union[None, int, str] = None,
               eye: Optional[Sequence[float]] = None, target: Optional[Sequence[float]] = None,
               fov: Optional[float] = None, shade: str = "smooth", depth: bool = False,
               up: Optional[Sequence[float]] = None, lod_scale: float = 1.0,
               device: Optional[str] = None, budget: Union[None, int, str] = None,
               stream: bool = False) -> Any:
        """An image of the tiled tree, drawn tile by tile (vx_renderer_create_tiled): as
        Tree.render, lod up to this tree's depth. budget: bytes of tiles kept resident (GPU
        memory, host memory on the CPU; an int or '2G'; None: 3/4 of the GPU's free memory, or
        half the default memory limit on the CPU): every tile keeps its coarse levels, the
        nearest visible tiles get the levels the view needs while the budget lasts, the others
        are drawn from their coarse levels. stream: frames never wait for tiles (they are read in
        the background; the image is coarser until they arrive: see render_info()'s
        "tiles_pending"), else each frame reads what it draws first."""
        mode, level, camera = _render_args(self.depth, self._orbit, width, height, lod, eye,
                                           target, fov, shade, up, lod_scale)
        b = _bytes(budget, "budget")
        if b and b < 1 << 20:
            raise ValueError(f"budget {budget!r} is below 1 MiB")
        key = (_device(device), b >> 20, 1 if stream else 0)
        if self._r is None or self._r[0] != key:
            self._r = None
            self._r = (key, _voxlod._TiledRenderer.open(self._open[0], self._open[1], *key), {})
        rgb = np.empty((height, width, 3), dtype=np.uint8)
        dep = np.empty((height, width), dtype=np.float32) if depth else None
        pending, resident, loaded = self._r[1].render(rgb, dep, mode, level, float(lod_scale),
                                                      _SHADES[shade], camera)
        self._r[2].update(tiles_pending=pending, resident_bytes=resident, tiles_loaded=loaded)
        return (rgb, dep) if depth else rgb

    def render_info(self) -> dict:
        """The renderer of the last render(): device, gpu, budget_bytes, resident_bytes,
        tiles, tiles_detailed (resident finer than their coarse levels), coarse_level (as a level
        of the whole tree), notes; and the last frame's tiles_pending, tiles_loaded. {} before
        the first render()."""
        if self._r is None:
            return {}
        d = self._r[1].info()
        d.update(self._r[2])
        return d

    def _orbit(self, az: float, el: float, fov: float) -> List[float]:
        return self._f.orbit_camera(az, el, fov)

    def __repr__(self) -> str:
        i = self._info
        return (f"<voxlod.TiledFile {i['resolution']}^3 in {i['tile_count']} tiles of "
                f"{1 << i['tile_depth']}^3: {i['voxel_count']} voxels>")
