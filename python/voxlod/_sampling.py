# SPDX-License-Identifier: Apache-2.0
"""Signed-distance queries: Tree.sample (host arrays on all cores or the GPU, CUDA arrays in
place) and Tree.surface_points. The rule (fields, the search near the surface, the bounded far
value) is include/voxlod/sample.h's. The functions here are Tree's methods (_tree.py binds them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Tuple

import numpy as np

from ._cuda import CudaLayout, _cuda_empty, _cuda_layout
from ._errors import InvalidArgumentError
from ._util import _bytes, _device, _float32_rows, _host_array, _is_int

if TYPE_CHECKING:
    from ._tree import TiledFile, Tree

# Per-point flags of Tree.sample(..., flags=True) (include/voxlod/sample.h).
SAMPLE_PLANE = 0x01    #: from a node's plane (a cut level or a pruned leaf)
SAMPLE_NEAR = 0x02     #: outside every cell with a field, extrapolated from the nearest
SAMPLE_FAR = 0x04      #: no field within the band: +-band (a lower bound of |d|)
SAMPLE_OUTSIDE = 0x08  #: beyond the root box
SAMPLE_NO_SIGN = 0x10  #: far, and the sign could not be found (+ assumed)
SAMPLE_INVALID = 0x20  #: a NaN or infinite coordinate (only with nonfinite="nan")


def _host_call(call: Any, wrap: Any, dist: np.ndarray, grad: Optional[np.ndarray],
               fl: Optional[np.ndarray]) -> Any:
    """Runs a sampling call on host arrays (a non-finite point refused: ValueError) and returns
    the distances, then the gradients and flags when asked for, in the caller's array kind."""
    try:
        call()
    except InvalidArgumentError as e:
        if "NaN or infinite" in str(e):
            raise ValueError(f"points: {e}") from None
        raise
    outs: Tuple[Any, ...] = (dist,) + ((grad,) if grad is not None else ()) + \
        ((fl,) if fl is not None else ())
    out = tuple(wrap(a) for a in outs)
    return out[0] if len(out) == 1 else out


def _sample_args(threads: Any, lod: Any, nonfinite: Any, depth: int) -> Tuple[int, int]:
    """threads (None: 0, all cores), the cut level (None: -1, full detail) and nonfinite, checked
    as sample() takes them."""
    if threads is None:
        threads = 0
    elif not _is_int(threads) or not 1 <= threads <= 4096:
        raise ValueError(f"threads must be None or an integer in 1..4096, not {threads!r}")
    if lod is None:
        level = -1
    elif _is_int(lod) and 0 <= lod <= depth:
        level = int(lod)
    else:
        raise ValueError(f"lod must be None or a level in 0..{depth}, not {lod!r}")
    if nonfinite not in ("raise", "nan"):
        raise ValueError(f"nonfinite must be 'raise' or 'nan', not {nonfinite!r}")
    return int(threads), level


def sample(self: Tree, points: Any, gradient: bool = False, flags: bool = False,
           lod: Optional[int] = None, nonfinite: str = "raise",
           device: Optional[str] = None, band_cache: bool = False,
           threads: Optional[int] = None):
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
    the tree (CPU) or its GPU sampler (GPU) (3-4x faster near the surface on the CPU,
    2-4x on the GPU; values in empty cells are the trilinear interpolation of the rule's
    at the cell's corners, within 0.5 voxel of the rule; docs/python.md).
    threads: how many cores sample host arrays on the CPU (None: all), for callers that
    run several samplers side by side (a Dask worker with one thread)."""
    if not isinstance(band_cache, (bool, np.bool_)):
        raise TypeError(f"band_cache must be True or False, not {band_cache!r}")
    threads, level = _sample_args(threads, lod, nonfinite, self.depth)
    fail = nonfinite == "raise"
    cuda = _cuda_layout(points)
    if cuda is not None:
        return _sample_cuda(self, points, cuda, gradient, flags, level, fail, band_cache)
    points, wrap = _host_array(points, "points")
    p = _float32_rows(points, "points")
    n = p.shape[0]
    dist = np.empty(n, dtype=np.float32)
    grad = np.empty((n, 3), dtype=np.float32) if gradient else None
    fl = np.empty(n, dtype=np.uint8) if flags else None
    dev = _device(device)
    return _host_call(lambda: self._t.sample_host(p, dist, grad, fl, level, fail,
                                                  2 if dev == 2 else 1, int(band_cache),
                                                  int(threads)), wrap, dist, grad, fl)


def tiled_sample(self: TiledFile, points: Any, gradient: bool = False, flags: bool = False,
                 lod: Optional[int] = None, nonfinite: str = "raise",
                 device: Optional[str] = None, threads: Optional[int] = None,
                 cache_bytes: Any = None):
    """Tree.sample on a tiled file of any depth, tile by tile (TiledFile.sample).

    Host arrays as Tree.sample takes them ((N, 3) float32 or float64, C-contiguous; CPU arrays
    of other frameworks through DLPack), the same outputs. Up to 16384^3 the results are those
    of load(path).sample(...) bit for bit; past it, the same rule in windows of 2 x 2 x 2 tiles
    (include/voxlod/sample.h, TILED SAMPLING, says what differs). The tiles are decoded as the
    points need them and kept within cache_bytes (None: 1 GiB of tiles, and past 16384^3 every
    window while the process stays under 80% of physical memory; an int or a string such as
    "256M": tiles and windows together); one group's tiles (a tile and its 26 neighbours) are
    held whatever it says.
    device: None, "auto" or "cpu": the CPU; "gpu": the search near the surface on the GPU
    (each group's tiles uploaded), the far points' sign walks on the CPU, the same results.
    Points come from host memory: CUDA arrays are refused."""
    threads, level = _sample_args(threads, lod, nonfinite, self.depth)
    dev = _device(device)
    if _cuda_layout(points) is not None:
        raise TypeError("points: a tiled file is sampled from host arrays, not CUDA arrays")
    cache = _bytes(cache_bytes, "cache_bytes")
    points, wrap = _host_array(points, "points")
    p = _float32_rows(points, "points")
    n = p.shape[0]
    dist = np.empty(n, dtype=np.float32)
    grad = np.empty((n, 3), dtype=np.float32) if gradient else None
    fl = np.empty(n, dtype=np.uint8) if flags else None
    return _host_call(lambda: self._sampler().sample(p, dist, grad, fl, level,
                                                     nonfinite == "raise", dev, int(threads),
                                                     cache), wrap, dist, grad, fl)


def _sample_cuda(self: Tree, points: Any, layout: CudaLayout, gradient: bool, flags: bool,
                 level: int, fail: bool, band_cache: bool = False) -> Any:
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


def surface_points(self: Tree, n: int, spread: Optional[float] = None, seed: int = 0,
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
