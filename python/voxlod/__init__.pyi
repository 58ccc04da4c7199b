"""Type stubs of the voxlod package (the implementation and its docstrings: __init__.py)."""
import os
from typing import Any, Callable, Optional, Sequence, Tuple, Union, overload

import numpy as np
from numpy.typing import NDArray

from ._errors import (CorruptError as CorruptError, CudaError as CudaError,
                      EmptyError as EmptyError, Error as Error, FormatError as FormatError,
                      InterruptedError as InterruptedError,
                      InvalidArgumentError as InvalidArgumentError, IOError as IOError,
                      LimitError as LimitError, NoGpuError as NoGpuError,
                      NoMemoryError as NoMemoryError, VersionError as VersionError)

__version__: str
NODE_DTYPE: np.dtype
STATS_DTYPE: np.dtype
SAMPLE_PLANE: int
SAMPLE_NEAR: int
SAMPLE_FAR: int
SAMPLE_OUTSIDE: int
SAMPLE_NO_SIGN: int
SAMPLE_INVALID: int

_Path = Union[str, os.PathLike]
_Mesh = Union[_Path, Tuple[Any, Any]]

def gpu_available() -> bool: ...
def gpu_name() -> Optional[str]: ...

class Tree:
    @property
    def depth(self) -> int: ...
    @property
    def resolution(self) -> int: ...
    @property
    def origin(self) -> Tuple[float, float, float]: ...
    @property
    def scale(self) -> float: ...
    @property
    def band(self) -> float: ...
    @property
    def transform(self) -> NDArray[np.float64]: ...
    @property
    def info(self) -> dict: ...
    @property
    def notes(self) -> str: ...
    @property
    def nodes(self) -> np.ndarray: ...
    @property
    def voxels(self) -> NDArray[np.int8]: ...
    def stats(self) -> np.ndarray: ...
    def save(self, path: _Path, zstd_level: int = 0) -> None: ...
    def prune(self, max_error: float) -> Tree: ...
    def render(self, width: int = 800, height: int = 600, lod: Union[None, int, str] = None,
               eye: Optional[Sequence[float]] = None, target: Optional[Sequence[float]] = None,
               fov: Optional[float] = None, shade: str = "smooth", depth: bool = False,
               up: Optional[Sequence[float]] = None, lod_scale: float = 1.0,
               device: Optional[str] = None) -> Any: ...
    def sample(self, points: Any, gradient: bool = False, flags: bool = False,
               lod: Optional[int] = None, nonfinite: str = "raise",
               device: Optional[str] = None) -> Any: ...
    def surface_points(self, n: int, spread: Optional[float] = None, seed: int = 0,
                       shuffle: bool = True) -> NDArray[np.float32]: ...

def convert(mesh: _Mesh, res: int = 256, error: float = 0.0, gpu: Optional[bool] = None,
            mem_limit: Union[None, int, str] = None,
            progress: Union[bool, Callable[[str, float], Any]] = True,
            band: Optional[float] = None, threads: Optional[int] = None,
            sign: str = "winding") -> Tree: ...
def load(path: _Path, max_level: Optional[int] = None,
         mem_limit: Union[None, int, str] = None) -> Tree: ...
