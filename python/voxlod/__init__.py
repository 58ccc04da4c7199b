"""voxlod: triangle meshes to sparse voxel octrees with a signed-distance field and per-node
level-of-detail planes; images and distance queries from them, on the GPU (CUDA) or the CPU.

    import voxlod
    tree = voxlod.convert("bunny.ply", res=256)          # or (vertices, faces) arrays
    image = tree.render(width=640, height=480)           # numpy uint8 (480, 640, 3)
    d = tree.sample(points)                              # signed distances, world units
    tree.save("bunny.svo"); tree = voxlod.load("bunny.svo")

docs/python.md in the source tree is the guide; include/voxlod/sample.h states the sampling
rule. Errors raise voxlod.Error (a subclass per status) with the library's message.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Optional, Sequence, Tuple, Union

import numpy as np

from . import _voxlod
from ._errors import (CorruptError, CudaError, EmptyError, Error, FormatError,
                      InterruptedError, InvalidArgumentError, IOError, LimitError,
                      NoGpuError, NoMemoryError, VersionError)

__version__ = _voxlod.version()

__all__ = [
    "Tree", "convert", "load", "from_bytes", "gpu_available", "gpu_name", "NODE_DTYPE",
    "STATS_DTYPE", "SAMPLE_PLANE", "SAMPLE_NEAR", "SAMPLE_FAR", "SAMPLE_OUTSIDE", "SAMPLE_NO_SIGN",
    "SAMPLE_INVALID", "Error", "InvalidArgumentError", "IOError", "NoMemoryError",
    "FormatError", "CorruptError", "VersionError", "EmptyError", "LimitError", "CudaError",
    "NoGpuError", "InterruptedError",
]


def __dir__():
    """The public names only (tab completion in a notebook shows the API, not the imports)."""
    return sorted(__all__ + ["__version__"])


#: One node as the tree stores it (svo/node.h): first child index, info (mask | errmax << 8 |
#: errrms << 16 | flags << 24), octahedral normal, plane offset in node units.
NODE_DTYPE = np.dtype([("child", "<u4"), ("info", "<u4"), ("normal", "<u4"), ("d", "<f4")])

#: One row of the memory-per-level table (Tree.stats()).
STATS_DTYPE = np.dtype([(name, "<u8") for name in (
    "level", "cells", "leaves", "topology_bytes", "lod_bytes", "field_bytes", "disk_bytes",
    "render_bytes", "float8_bytes", "dense_bytes")])

# Per-point flags of Tree.sample(..., flags=True) (include/voxlod/sample.h).
SAMPLE_PLANE = 0x01    #: from a node's plane (a cut level or a pruned leaf)
SAMPLE_NEAR = 0x02     #: outside every cell with a field, extrapolated from the nearest
SAMPLE_FAR = 0x04      #: no field within the band: +-band (a lower bound of |d|)
SAMPLE_OUTSIDE = 0x08  #: beyond the root box
SAMPLE_NO_SIGN = 0x10  #: far, and the sign could not be found (+ assumed)
SAMPLE_INVALID = 0x20  #: a NaN or infinite coordinate (only with nonfinite="nan")

_SHADES = {"smooth": 0, "blocks": 1, "normals": 2}
_DEVICES = {None: 0, "auto": 0, "cpu": 1, "gpu": 2, "cuda": 2}


def gpu_available() -> bool:
    """True when this build has CUDA and a CUDA device is usable now."""
    return _voxlod.gpu_available()


def gpu_name() -> Optional[str]:
    """The name of the GPU voxlod would use, or None."""
    return _voxlod.gpu_name()


# ---- helpers ----------------------------------------------------------------------------------

def _device(device: Optional[str]) -> int:
    if isinstance(device, str):
        device = device.lower()
    if device not in _DEVICES:
        raise ValueError(f"device must be None, 'auto', 'cpu' or 'gpu', not {device!r}")
    return _DEVICES[device]


def _bytes(value: Union[None, int, str], what: str) -> int:
    """A byte count from an int or a string such as '8G' (K, M, G, T: powers of 1024)."""
    if value is None:
        return 0
    if isinstance(value, str):
        s = value.strip().upper().rstrip("B")
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(s[-1:], 1)
        try:
            n = float(s[:-1] if mult > 1 else s) * mult
        except ValueError:
            raise ValueError(f"{what} {value!r} is not a size such as 8G or 512M") from None
    else:
        n = value
    if not (n >= 1) or n >= 2 ** 63:
        raise ValueError(f"{what} must be a positive size, not {value!r}")
    return int(n)


def _is_int(x: Any) -> bool:
    """An int or numpy integer, not a bool (True is not a count or a level)."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _zstd_level(level: Any) -> int:
    if not _is_int(level) or not 0 <= level <= 22:
        raise ValueError(f"zstd_level must be an int in 0..22, not {level!r}")
    return int(level)


def _path(path: Any, what: str) -> str:
    try:
        p = os.fspath(path)
    except TypeError:
        raise TypeError(f"{what} must be a path (str or os.PathLike), not {type(path).__name__}") from None
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    if not p:
        raise ValueError(f"{what} is empty")
    return p


class _StderrProgress:
    """A one-line progress report on stderr when tqdm is not installed."""

    def __init__(self) -> None:
        self.phase = None
        self.shown = -1

    def __call__(self, phase: str, fraction: float) -> None:
        pct = int(fraction * 100)
        if phase != self.phase or pct >= self.shown + 5:
            self.phase, self.shown = phase, pct
            sys.stderr.write(f"\rvoxlod: {phase:<24} {pct:3d}%")
            sys.stderr.flush()

    def close(self) -> None:
        if self.phase is not None:
            sys.stderr.write("\n")
            sys.stderr.flush()


class _TqdmProgress:
    def __init__(self, tqdm: Any) -> None:
        self.bar = tqdm(total=100, unit="%", leave=False, bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}")
        self.phase = None

    def __call__(self, phase: str, fraction: float) -> None:
        if phase != self.phase:
            self.phase = phase
            self.bar.set_description_str(phase)
        self.bar.n = fraction * 100.0
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


def _progress(progress: Union[bool, Callable[[str, float], Any]]):
    if progress is False or progress is None:
        return None
    if callable(progress):
        return progress
    try:
        from tqdm.auto import tqdm
        return _TqdmProgress(tqdm)
    except ImportError:
        return _StderrProgress()


def _float32_rows(a: Any, what: str, width: int = 3) -> np.ndarray:
    """A (N, width) C-contiguous float32 array: float32 as is, float64 converted (a copy);
    anything else (another dtype, shape or a strided view) is refused with a message."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{what} must be a numpy array of shape (N, {width}), not {type(a).__name__}")
    if a.ndim != 2 or a.shape[1] != width:
        raise ValueError(f"{what} must have shape (N, {width}), not {a.shape}")
    if a.dtype not in (np.float32, np.float64):
        raise TypeError(f"{what} must be float32 or float64, not {a.dtype}")
    if not a.flags.c_contiguous:
        raise ValueError(f"{what} must be C-contiguous (use numpy.ascontiguousarray)")
    # float64 and misaligned float32 (a view into a byte buffer) are copied: the library reads
    # aligned floats
    return np.require(a, dtype=np.float32, requirements=["C", "A"])


def _host_array(a: Any, what: str) -> Tuple[Any, Callable[[np.ndarray], Any]]:
    """Host points as numpy: numpy arrays as they are; CPU arrays of other frameworks through
    DLPack (a torch CPU tensor: no copy; its outputs come back as torch tensors, sharing the
    numpy arrays' memory); lists, tuples and objects with __array__ through numpy.asarray.
    Anything else is left for _float32_rows to refuse. Returns the array and what turns an output into the caller's kind."""
    keep = lambda x: x  # noqa: E731
    if isinstance(a, np.ndarray):
        return a, keep
    if isinstance(a, (list, tuple)):
        try:
            return np.asarray(a), keep
        except (ValueError, TypeError):
            raise ValueError(f"{what}: a list that is not a (N, 3) table of numbers") from None
    if hasattr(a, "__dlpack__") and hasattr(a, "__dlpack_device__"):
        try:
            view = np.from_dlpack(a)
        except (RuntimeError, TypeError, BufferError, ValueError) as e:
            raise TypeError(f"{what}: cannot read this {type(a).__name__} through DLPack "
                            f"({e})") from None
        if type(a).__module__.split(".")[0] == "torch":
            import torch
            return view, torch.from_numpy
        return view, keep
    if hasattr(a, "__array__") or hasattr(a, "__array_interface__"):
        return np.asarray(a), keep
    return a, keep


# ---- CUDA arrays (torch, cupy, anything with __cuda_array_interface__ or DLPack) -----------------

def _cuda_layout(a: Any) -> Optional[Tuple[int, Tuple[int, ...], Optional[Tuple[int, ...]], str, int]]:
    """(pointer, shape, strides in bytes or None, dtype str, device) of a CUDA array, or None
    for host arrays."""
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        dev = -1
        if hasattr(a, "device"):
            dev = getattr(a.device, "index", getattr(a.device, "id", -1))
            dev = -1 if dev is None else int(dev)
        return (int(cai["data"][0]), tuple(cai["shape"]),
                tuple(cai["strides"]) if cai.get("strides") else None,
                np.dtype(cai["typestr"]).str, dev)
    if hasattr(a, "__dlpack_device__") and not isinstance(a, np.ndarray):
        dev_type, dev_id = a.__dlpack_device__()
        if int(dev_type) not in (2, 13):  # kDLCUDA, kDLCUDAManaged
            return None
        ptr, _, dev, shape, strides, code, bits = _voxlod.dlpack_info(a)
        kind = {0: "i", 1: "u", 2: "f"}.get(code, "V")
        item = bits // 8
        return (ptr, tuple(shape), tuple(s * item for s in strides) if strides else None,
                np.dtype(f"<{kind}{item}").str, dev)
    return None


def _cuda_empty(like: Any, shape: Tuple[int, ...], dtype: str) -> Tuple[Any, int]:
    """A new CUDA array of the framework of `like` (torch or cupy) on its device, and its
    pointer."""
    mod = type(like).__module__.split(".")[0]
    if mod == "torch":
        import torch
        t = torch.empty(shape, dtype={"float32": torch.float32, "uint8": torch.uint8}[dtype],
                        device=like.device)
        return t, t.data_ptr()
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        dev = getattr(getattr(like, "device", None), "id", None)
        with cupy.cuda.Device(dev if dev is not None else cupy.cuda.runtime.getDevice()):
            c = cupy.empty(shape, dtype=dtype)
        return c, c.data.ptr
    try:
        import torch
        t = torch.empty(shape, dtype={"float32": torch.float32, "uint8": torch.uint8}[dtype],
                        device="cuda")
        return t, t.data_ptr()
    except ImportError:
        raise TypeError(f"cannot allocate CUDA outputs for a {type(like).__name__}: "
                        "install cupy or torch") from None


# ---- trees ------------------------------------------------------------------------------------

class Tree:
    """A sparse voxel octree with a signed-distance field (from convert() or load()).

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
    def info(self) -> dict:
        """Depth, counts, transform, band, prune error, memory and file bytes (a dict)."""
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

    def stats(self) -> np.ndarray:
        """The memory-per-level table (``voxlod stats``): a structured array of STATS_DTYPE,
        one row per level from 0 (1^3) to depth."""
        return np.array([tuple(r) for r in self._t.levels()], dtype=STATS_DTYPE)

    def __repr__(self) -> str:
        i = self._info
        return (f"<voxlod.Tree {i['resolution']}^3: {i['node_count']} nodes, "
                f"{i['voxel_count']} voxels, {i['memory_bytes'] / 2**20:.1f} MiB>")

    # ---- files
    def save(self, path: Union[str, os.PathLike], zstd_level: int = 0) -> None:
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
    def __reduce__(self):
        return (from_bytes, (self.to_bytes(1),))

    def __copy__(self) -> "Tree":
        return self

    def __deepcopy__(self, memo: dict) -> "Tree":
        return self

    def prune(self, max_error: float) -> "Tree":
        """A copy with every subtree whose plane approximates it within max_error finest
        voxels replaced by that plane."""
        return Tree(self._t.prune(float(max_error)))

    # ---- render
    def render(self, width: int = 800, height: int = 600, lod: Union[None, int, str] = None,
               eye: Optional[Sequence[float]] = None, target: Optional[Sequence[float]] = None,
               fov: Optional[float] = None, shade: str = "smooth", depth: bool = False,
               up: Optional[Sequence[float]] = None, lod_scale: float = 1.0,
               device: Optional[str] = None):
        """An image of the tree: numpy uint8 (height, width, 3), and with depth=True also the
        depth (float32 (height, width), world units along the ray, inf where nothing is hit).

        lod: None (finest level), a level 0..depth (nodes drawn as their planes) or "auto"
        (per pixel: nodes smaller than lod_scale pixels). Camera: eye and target in world
        coordinates (default: an orbit view at azimuth 30, elevation 20 that frames the model;
        with only target or eye given the other comes from it), fov the vertical field of view
        in degrees (default 40), up (default +y). shade: "smooth", "blocks" or "normals".
        device: None (the GPU when usable), "cpu" or "gpu"; the renderer is kept for the next
        call."""
        if not _is_int(width) or not _is_int(height) \
                or not (1 <= width <= 32768 and 1 <= height <= 32768):
            raise ValueError(f"width and height must be ints in 1..32768, not {width!r}, {height!r}")
        if lod is None:
            mode, level = 0, 0
        elif isinstance(lod, str):
            if lod != "auto":
                raise ValueError(f"lod must be None, a level or 'auto', not {lod!r}")
            mode, level = 2, 0
        elif _is_int(lod) and 0 <= lod <= self.depth:
            mode, level = 1, int(lod)
        else:
            raise ValueError(f"lod must be None, 'auto' or a level in 0..{self.depth}, not {lod!r}")
        if shade not in _SHADES:
            raise ValueError(f"shade must be one of {sorted(_SHADES)}, not {shade!r}")
        if not (lod_scale > 0 and np.isfinite(lod_scale)):
            raise ValueError(f"lod_scale must be a positive number, not {lod_scale!r}")
        camera: list = []
        if eye is not None or target is not None or fov is not None or up is not None:
            base = self._t.orbit_camera(30.0, 20.0, 40.0 if fov is None else float(fov))
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
        rgb = np.empty((height, width, 3), dtype=np.uint8)
        dep = np.empty((height, width), dtype=np.float32) if depth else None
        self._t.render(rgb, dep, mode, level, float(lod_scale), _SHADES[shade], camera,
                       _device(device))
        return (rgb, dep) if depth else rgb

    # ---- sample
    def sample(self, points: Any, gradient: bool = False, flags: bool = False,
               lod: Optional[int] = None, nonfinite: str = "raise",
               device: Optional[str] = None, band_cache: bool = False):
        """Signed distances (world units, negative inside) at world points (N, 3).

        numpy float32 or float64 (converted to float32), C-contiguous: numpy float32 (N,) out,
        on all cores (device="gpu": through the GPU sampler). Lists go through numpy; CPU
        arrays of other frameworks through DLPack without a copy (torch CPU tensors give torch
        CPU tensors back). torch/cupy CUDA arrays (float32,
        contiguous; via __cuda_array_interface__ or DLPack): sampled in place on the GPU, CUDA
        arrays of the same framework out, no copy.
        gradient=True adds the gradient (N, 3) (dimensionless, about unit length); flags=True
        the per-point SAMPLE_* flags (uint8 (N,)); the result is then a tuple
        (distances, gradients?, flags?). lod: None (full detail) or a level (the nodes' planes
        there). nonfinite: "raise" (ValueError naming the first NaN/inf point) or "nan" (NaN
        out, SAMPLE_INVALID). The rule (fields, the search near the surface, the bounded far
        value) is include/voxlod/sample.h's.
        band_cache=True (full detail): points within the band come from the band cache, the
        rule's values stored around the surface, built by the first such call and kept with
        the tree (CPU) or its GPU sampler (GPU) (about 10x faster near the surface on the CPU,
        6-20x on the GPU; values in empty cells are the trilinear interpolation of the rule's
        at the cell's corners; docs/python.md)."""
        if not isinstance(band_cache, (bool, np.bool_)):
            raise TypeError(f"band_cache must be True or False, not {band_cache!r}")
        if lod is None:
            level = -1
        elif _is_int(lod) and 0 <= lod <= self.depth:
            level = int(lod)
        else:
            raise ValueError(f"lod must be None or a level in 0..{self.depth}, not {lod!r}")
        if nonfinite not in ("raise", "nan"):
            raise ValueError(f"nonfinite must be 'raise' or 'nan', not {nonfinite!r}")
        fail = nonfinite == "raise"
        cuda = _cuda_layout(points)
        if cuda is not None:
            return self._sample_cuda(points, cuda, gradient, flags, level, fail, band_cache)
        points, wrap = _host_array(points, "points")
        p = _float32_rows(points, "points")
        n = p.shape[0]
        dist = np.empty(n, dtype=np.float32)
        grad = np.empty((n, 3), dtype=np.float32) if gradient else None
        fl = np.empty(n, dtype=np.uint8) if flags else None
        dev = _device(device)
        try:
            self._t.sample_host(p, dist, grad, fl, level, fail, 2 if dev == 2 else 1,
                                int(band_cache))
        except InvalidArgumentError as e:
            if "NaN or infinite" in str(e):
                raise ValueError(f"points: {e}") from None
            raise
        out = tuple(wrap(a) for a in (dist,) + ((grad,) if gradient else ()) +
                    ((fl,) if flags else ()))
        return out[0] if len(out) == 1 else out

    def _sample_cuda(self, points, layout, gradient, flags, level, fail, band_cache=False):
        ptr, shape, strides, dtype, _ = layout
        if len(shape) != 2 or shape[1] != 3:
            raise ValueError(f"points must have shape (N, 3), not {shape}")
        if dtype != "<f4":
            raise TypeError(f"CUDA points must be float32, not {np.dtype(dtype)}")
        if strides is not None and tuple(strides) != (12, 4) and shape[0] > 1:
            raise ValueError("CUDA points must be C-contiguous (call .contiguous())")
        n = int(shape[0])
        dist, dp = _cuda_empty(points, (n,), "float32")
        grad, gp = _cuda_empty(points, (n, 3), "float32") if gradient else (None, 0)
        fl, fp = _cuda_empty(points, (n,), "uint8") if flags else (None, 0)
        try:
            self._t.sample_device(ptr, n, dp, gp, fp, level, fail, 0, int(band_cache))
        except InvalidArgumentError as e:
            if "NaN or infinite" in str(e):
                raise ValueError(f"points: {e}") from None
            raise
        out = (dist,) + ((grad,) if gradient else ()) + ((fl,) if flags else ())
        return out[0] if len(out) == 1 else out

    def surface_points(self, n: int, spread: Optional[float] = None, seed: int = 0,
                       shuffle: bool = True) -> np.ndarray:
        """n world points near the surface (float32 (n, 3)): surface voxels' centres moved by a
        uniform offset of up to `spread` voxels per axis (default: the band; 0: the centres),
        spread evenly over the surface; shuffled, or in Morton order (shuffle=False). For
        training sets: tree.sample(tree.surface_points(n)) gives their distances."""
        if not _is_int(n) or n < 0:
            raise ValueError(f"n must be a count >= 0, not {n!r}")
        s = 0.0 if spread is None else float(spread)
        if not (0.0 <= s <= 1e6):
            raise ValueError(f"spread must be in [0, 1e6] voxels, not {spread!r}")
        if spread is not None and s < 1e-30:
            # the library reads 0 as "the band"; offsets this small round away, so an explicit
            # spread of 0 (or below float32's range) gives the voxels' centres exactly
            s = 1e-30
        out = np.empty((int(n), 3), dtype=np.float32)
        self._t.surface_points(out, s, int(seed) & (2 ** 64 - 1), bool(shuffle))
        return out


# ---- entry points -----------------------------------------------------------------------------

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


def convert(mesh: Any, res: int = 256, error: float = 0.0, gpu: Optional[bool] = None,
            mem_limit: Union[None, int, str] = None, progress: Union[bool, Callable] = True,
            band: Optional[float] = None, threads: Optional[int] = None,
            sign: str = "winding") -> Tree:
    """Converts a mesh into a Tree.

    mesh: a file path (any format assimp reads: OBJ, PLY, STL, glTF, FBX, ...) or a
    (vertices (N, 3) float, faces (M, 3) int) pair. res: cells per axis, a power of two from 2
    to 16384. error: prune subtrees whose plane is within this many finest voxels (0: the full
    tree). gpu: None (the GPU when usable, else the CPU: the same tree either way), True (fail
    without one), False. mem_limit: peak bytes (int, or '8G'). progress: True (a tqdm bar when
    tqdm is installed, else a line on stderr), False, or a callable(phase, fraction). band:
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
    m = _mesh(mesh)
    cb = _progress(progress)
    try:
        t = _voxlod.convert(m, int(res), float(error), b, device, _bytes(mem_limit, "mem_limit"),
                            int(threads or 0), 0 if sign == "winding" else 1, cb)
    finally:
        if hasattr(cb, "close"):
            cb.close()
    return Tree(t)


def _levels(max_level: Optional[int]) -> int:
    if max_level is not None and (not _is_int(max_level) or not 0 <= max_level <= 14):
        raise ValueError(f"max_level must be None or a level in 0..14, not {max_level!r}")
    return 0 if max_level is None else int(max_level) + 1


def load(path: Union[str, os.PathLike], max_level: Optional[int] = None,
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
