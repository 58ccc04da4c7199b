# SPDX-License-Identifier: Apache-2.0
"""Argument checks shared by the package's modules: devices, sizes, paths, progress reports and
host arrays. Checks a user should read as Python messages happen here, before the library
(which validates everything again) is called."""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Optional, Tuple, Union

import numpy as np

_DEVICES = {None: 0, "auto": 0, "cpu": 1, "gpu": 2, "cuda": 2}


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


def _path(path: Any, what: str) -> bytes:
    """A file path as the file system's bytes (os.fsencode), for the library: str, bytes or
    os.PathLike. Names that are not UTF-8 work (bytes, or str with surrogate escapes); an
    embedded NUL is refused with ValueError, as open() refuses it (the C library would
    silently cut the name there)."""
    try:
        p = os.fspath(path)
    except TypeError:
        raise TypeError(f"{what} must be a path (str, bytes or os.PathLike), not "
                        f"{type(path).__name__}") from None
    b = os.fsencode(p)
    if not b:
        raise ValueError(f"{what} is empty")
    if b"\0" in b:
        raise ValueError(f"{what}: embedded null character in path")
    return b


class _StderrProgress:
    """A one-line progress report on stderr when tqdm is not installed."""

    def __init__(self) -> None:
        self.phase: Optional[str] = None
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
        self.bar = tqdm(total=100, unit="%", leave=False,
                        bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}")
        self.phase: Optional[str] = None

    def __call__(self, phase: str, fraction: float) -> None:
        if phase != self.phase:
            self.phase = phase
            self.bar.set_description_str(phase)
        self.bar.n = fraction * 100.0
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


ProgressArg = Union[None, bool, Callable[[str, float], Any]]


def _progress(progress: ProgressArg) -> Optional[Callable[[str, float], Any]]:
    """The callback for a progress= argument: None or False (none), True (a tqdm bar when tqdm
    is installed, else a line on stderr) or a callable(phase, fraction); anything else is a
    TypeError."""
    if progress is None or progress is False:
        return None
    if progress is True:
        try:
            from tqdm.auto import tqdm  # type: ignore[import-untyped, unused-ignore]
            return _TqdmProgress(tqdm)
        except ImportError:
            return _StderrProgress()
    if callable(progress):
        return progress
    raise TypeError(f"progress must be None, False, True or a callable(phase, fraction), "
                    f"not {progress!r}")


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
            import torch  # type: ignore[import-not-found, unused-ignore]
            return view, torch.from_numpy
        return view, keep
    if hasattr(a, "__array__") or hasattr(a, "__array_interface__"):
        return np.asarray(a), keep
    return a, keep
