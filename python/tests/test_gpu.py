# SPDX-License-Identifier: Apache-2.0
"""CUDA arrays in, CUDA arrays out (torch, cupy): sampled in place on the GPU, the same values
as the CPU's. Skipped without a GPU or without the framework."""
import numpy as np
import pytest

import voxlod

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not voxlod.gpu_available(), reason="no usable GPU")]


def _cpu_reference(tree, pts):
    return tree.sample(pts, flags=True, nonfinite="nan")


def test_torch_cuda_arrays(sphere_tree):
    torch = pytest.importorskip("torch")
    pts = sphere_tree.surface_points(100000, seed=1)
    d_cpu, f_cpu = _cpu_reference(sphere_tree, pts)
    x = torch.from_numpy(pts).cuda()
    d, g, fl = sphere_tree.sample(x, gradient=True, flags=True)
    assert isinstance(d, torch.Tensor) and d.is_cuda and d.dtype == torch.float32
    assert g.shape == (len(pts), 3) and fl.dtype == torch.uint8
    same = fl.cpu().numpy() == f_cpu
    assert same.mean() > 0.9999
    assert np.allclose(d.cpu().numpy()[same], d_cpu[same], atol=1e-4 * sphere_tree.scale)
    with pytest.raises(ValueError, match="C-contiguous"):
        sphere_tree.sample(x.t().contiguous().t())
    with pytest.raises(TypeError):
        sphere_tree.sample(x.double())
    bad = x.clone()
    bad[5, 0] = float("nan")
    with pytest.raises(ValueError, match="point 5"):
        sphere_tree.sample(bad)


def test_cupy_arrays(sphere_tree):
    cupy = pytest.importorskip("cupy")
    pts = sphere_tree.surface_points(100000, seed=2)
    d_cpu, f_cpu = _cpu_reference(sphere_tree, pts)
    x = cupy.asarray(pts)
    d, fl = sphere_tree.sample(x, flags=True)
    assert isinstance(d, cupy.ndarray)
    same = cupy.asnumpy(fl) == f_cpu
    assert same.mean() > 0.9999
    assert np.allclose(cupy.asnumpy(d)[same], d_cpu[same], atol=1e-4 * sphere_tree.scale)


def test_numpy_through_the_gpu_sampler(sphere_tree):
    pts = sphere_tree.surface_points(50000, seed=3)
    d_cpu, f_cpu = _cpu_reference(sphere_tree, pts)
    d, fl = sphere_tree.sample(pts, flags=True, device="gpu")
    same = fl == f_cpu
    assert same.mean() > 0.9999
    assert np.allclose(d[same], d_cpu[same], atol=1e-4 * sphere_tree.scale)


def test_band_cache_on_the_gpu(sphere_tree):
    """The GPU sampler's band cache (built with the rule evaluated on the device, kept there)
    answers as the CPU's, within one quantization step of a corner, through host arrays and
    through device pointers."""
    pts = sphere_tree.surface_points(50000, seed=6)
    d_cpu, f_cpu = sphere_tree.sample(pts, flags=True, band_cache=True)
    d, fl = sphere_tree.sample(pts, flags=True, device="gpu", band_cache=True)
    same = fl == f_cpu
    assert same.mean() > 0.9999
    step = sphere_tree.band / 127 * sphere_tree.scale
    assert np.allclose(d[same], d_cpu[same], atol=step)
    rt = _cudart()
    x = _CudaArray(rt, pts.shape, "<f4", pts)
    dd = _CudaArray(rt, (len(pts),), "<f4")
    sphere_tree._t.sample_device(x.ptr, len(pts), dd.ptr, 0, 0, -1, 1, 0, 1)
    assert np.allclose(dd.get(np.float32)[same], d_cpu[same], atol=step)
    assert not np.array_equal(d_cpu, sphere_tree.sample(pts))


def test_render_then_sample_share_the_upload(sphere_mesh):
    t = voxlod.convert(sphere_mesh, res=64, progress=False)
    t.render(width=64, height=48, device="gpu")
    pts = t.surface_points(1000, seed=4)
    d = t.sample(pts, device="gpu")
    assert np.isfinite(d).all()


class _CudaArray:
    """A float32/uint8 device array made through the CUDA runtime with ctypes, exposing
    __cuda_array_interface__: the device path without torch or cupy."""

    def __init__(self, rt, shape, typestr, host=None):
        import ctypes
        self.rt, self.shape, self.typestr = rt, shape, typestr
        self.nbytes = int(np.prod(shape)) * np.dtype(typestr).itemsize
        p = ctypes.c_void_p()
        assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(max(self.nbytes, 1))) == 0
        self.ptr = p.value
        if host is not None:
            assert rt.cudaMemcpy(ctypes.c_void_p(self.ptr), host.ctypes.data_as(ctypes.c_void_p),
                                 ctypes.c_size_t(self.nbytes), 1) == 0  # host to device

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.typestr, "data": (self.ptr, False),
                "version": 3, "strides": None}

    def get(self, dtype):
        import ctypes
        out = np.empty(self.shape, dtype=dtype)
        assert self.rt.cudaMemcpy(out.ctypes.data_as(ctypes.c_void_p), ctypes.c_void_p(self.ptr),
                                  ctypes.c_size_t(self.nbytes), 2) == 0  # device to host
        return out

    def __del__(self):
        import ctypes
        self.rt.cudaFree(ctypes.c_void_p(self.ptr))


def _cudart():
    import ctypes
    import ctypes.util
    for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12",
                 "/usr/local/cuda/lib64/libcudart.so", ctypes.util.find_library("cudart")):
        if not name:
            continue
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    pytest.skip("no CUDA runtime library for ctypes")


def test_device_pointers_without_a_framework(sphere_tree):
    rt = _cudart()
    pts = sphere_tree.surface_points(100000, seed=5)
    d_cpu, f_cpu = _cpu_reference(sphere_tree, pts)
    x = _CudaArray(rt, pts.shape, "<f4", pts)
    layout = voxlod._cuda._cuda_layout(x)
    assert layout[0] == x.ptr and layout[1] == pts.shape and layout[3] == "<f4"
    d = _CudaArray(rt, (len(pts),), "<f4")
    fl = _CudaArray(rt, (len(pts),), "|u1")
    sphere_tree._t.sample_device(x.ptr, len(pts), d.ptr, 0, fl.ptr, -1, 1, 0)
    dd, ff = d.get(np.float32), fl.get(np.uint8)
    same = ff == f_cpu
    assert same.mean() > 0.9999
    assert np.allclose(dd[same], d_cpu[same], atol=1e-4 * sphere_tree.scale)
    # host memory given as device memory is refused
    with pytest.raises(voxlod.Error):
        sphere_tree._t.sample_device(pts.ctypes.data, len(pts), d.ptr, 0, 0, -1, 1, 0)
