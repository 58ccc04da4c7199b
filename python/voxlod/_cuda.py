# SPDX-License-Identifier: Apache-2.0
"""CUDA arrays (torch, cupy, anything with __cuda_array_interface__ or DLPack): their layout, and
new arrays of the same framework for a call's outputs."""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from . import _voxlod

CudaLayout = Tuple[int, Tuple[int, ...], Optional[Tuple[int, ...]], str, int]


def _cuda_layout(a: Any) -> Optional[CudaLayout]:
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
        import torch  # type: ignore[import-not-found, unused-ignore]
        t = torch.empty(shape, dtype={"float32": torch.float32, "uint8": torch.uint8}[dtype],
                        device=like.device)
        return t, t.data_ptr()
    try:
        import cupy  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        cupy = None
    if cupy is not None:
        dev = getattr(getattr(like, "device", None), "id", None)
        with cupy.cuda.Device(dev if dev is not None else cupy.cuda.runtime.getDevice()):
            c = cupy.empty(shape, dtype=dtype)
        return c, c.data.ptr
    try:
        import torch  # type: ignore[import-not-found, unused-ignore]
        t = torch.empty(shape, dtype={"float32": torch.float32, "uint8": torch.uint8}[dtype],
                        device="cuda")
        return t, t.data_ptr()
    except ImportError:
        raise TypeError(f"cannot allocate CUDA outputs for a {type(like).__name__}: "
                        "install cupy or torch") from None
