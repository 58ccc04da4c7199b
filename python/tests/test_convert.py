# SPDX-License-Identifier: Apache-2.0
"""voxlod.convert / load / save, the tree's properties, raw views, statistics, errors, leaks."""
import gc
import os
import sys

import numpy as np
import pytest

import voxlod
from conftest import BUNNY, rss_bytes
from reference import box, uv_sphere


def test_convert_from_file():
    t = voxlod.convert(BUNNY, res=32, progress=False)
    assert t.resolution == 32 and t.depth == 5
    assert t.info["voxel_count"] > 0 and t.info["node_count"] > 0
    assert isinstance(t.notes, str)


def test_convert_from_arrays(sphere_mesh):
    v, f = sphere_mesh
    for verts in (v, v.astype(np.float32)):
        for faces in (f, f.astype(np.int32), f.astype(np.uint32)):
            t = voxlod.convert((verts, faces), res=16, progress=False)
            assert t.resolution == 16
            assert abs(t.scale * 16 - 2.0) < 1e-3  # the sphere's extent maps onto the grid
    t = voxlod.convert([v.tolist(), f.tolist()], res=16, progress=False)
    assert t.depth == 4


def test_save_and_load(tmp_path, sphere_tree):
    p = tmp_path / "s.svo"
    sphere_tree.save(p)
    assert p.stat().st_size > 0
    t = voxlod.load(p)
    assert t.info["voxel_count"] == sphere_tree.info["voxel_count"]
    assert np.array_equal(t.voxels, sphere_tree.voxels)
    assert np.array_equal(t.nodes, sphere_tree.nodes)
    cut = voxlod.load(str(p), max_level=3)
    assert cut.info["levels_loaded"] == 4 and cut.voxels.shape == (0, 8)


def test_properties_and_transform(sphere_tree):
    t = sphere_tree
    m = t.transform
    assert m.shape == (4, 4)
    g = np.array([t.resolution, 0, t.resolution / 2, 1.0])
    w = m @ g
    assert np.allclose(w[:3], np.array(t.origin) + g[:3] * t.scale)
    assert t.band == pytest.approx(2.0)
    assert "64^3" in repr(t)


def test_views_are_read_only_and_keep_the_tree(sphere_mesh):
    t = voxlod.convert(sphere_mesh, res=32, progress=False)
    nodes, voxels = t.nodes, t.voxels
    assert nodes.dtype == voxlod.NODE_DTYPE and nodes.shape == (t.info["node_count"],)
    assert voxels.dtype == np.int8 and voxels.shape == (t.info["voxel_count"], 8)
    with pytest.raises(ValueError):
        voxels[0, 0] = 1
    with pytest.raises(ValueError):
        nodes["d"][0] = 1.0
    root_mask = int(nodes["info"][0]) & 0xFF
    expected = voxels.copy()
    del t
    gc.collect()
    assert np.array_equal(voxels, expected)  # the view kept the tree alive
    assert root_mask != 0


def test_stats_table(sphere_tree):
    s = sphere_tree.stats()
    assert s.dtype == voxlod.STATS_DTYPE and len(s) == sphere_tree.depth + 1
    assert list(s["level"]) == list(range(sphere_tree.depth + 1))
    assert s["cells"][0] == 1 and s["cells"][-1] == sphere_tree.info["voxel_count"]
    assert np.all(np.diff(s["render_bytes"].astype(np.int64)) >= 0)


def test_prune(sphere_mesh):
    t = voxlod.convert(sphere_mesh, res=64, progress=False)
    p = t.prune(1.0)
    assert p.info["memory_bytes"] < t.info["memory_bytes"]
    q = voxlod.convert(sphere_mesh, res=64, error=1.0, progress=False)
    assert q.info["prune_error"] > 0


def test_progress_callable_and_bar(capsys, sphere_mesh):
    seen = []
    voxlod.convert(sphere_mesh, res=32, progress=lambda phase, f: seen.append((phase, f)))
    assert seen and all(0.0 <= f <= 1.0 for _, f in seen)
    voxlod.convert(sphere_mesh, res=32, progress=True)  # tqdm or the stderr line: no error


def test_progress_exception_stops_the_build(sphere_mesh):
    def stop(phase, f):
        raise RuntimeError("stop here")
    with pytest.raises(RuntimeError, match="stop here"):
        voxlod.convert(sphere_mesh, res=128, progress=stop)


def test_missing_and_bad_files(tmp_path):
    with pytest.raises(voxlod.FileError) as e:
        voxlod.convert(tmp_path / "missing.ply", res=16, progress=False)
    assert isinstance(e.value, OSError) and "missing.ply" in str(e.value)
    with pytest.raises(OSError):
        voxlod.load(tmp_path / "missing.svo")
    bad = tmp_path / "bad.svo"
    bad.write_bytes(b"not an svo file at all" * 10)
    with pytest.raises(voxlod.Error) as e:
        voxlod.load(bad)
    assert e.value.status and str(e.value)
    with pytest.raises(TypeError):
        voxlod.load(42)


def test_bad_arguments(sphere_mesh):
    v, f = sphere_mesh
    with pytest.raises(ValueError, match="power of two"):
        voxlod.convert((v, f), res=100, progress=False)
    with pytest.raises(ValueError, match="shape"):
        voxlod.convert((v[:, :2], f), res=16, progress=False)
    with pytest.raises(ValueError, match="shape"):
        voxlod.convert((v, f[:, :2]), res=16, progress=False)
    with pytest.raises(TypeError, match="float32 or float64"):
        voxlod.convert((v.astype(np.int32), f), res=16, progress=False)
    with pytest.raises(TypeError, match="integer"):
        voxlod.convert((v, f.astype(np.float64)), res=16, progress=False)
    with pytest.raises(ValueError, match="index"):
        voxlod.convert((v, f + len(v)), res=16, progress=False)
    with pytest.raises(ValueError, match="C-contiguous"):
        voxlod.convert((np.asfortranarray(v), f), res=16, progress=False)
    bad = v.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        voxlod.convert((bad, f), res=16, progress=False)
    with pytest.raises(voxlod.EmptyError):
        voxlod.convert((v, f[:0]), res=16, progress=False)
    with pytest.raises(ValueError):
        voxlod.convert((v, f), res=16, mem_limit="lots", progress=False)
    with pytest.raises(ValueError):
        voxlod.load("x.svo", max_level=99)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_no_leak_over_1000_conversions():
    v, f = box((-1, -1, -1), (1, 0.5, 0.8))
    v = v.astype(np.float32)
    f = f.astype(np.uint32)
    for _ in range(50):  # warm up allocator pools
        voxlod.convert((v, f), res=8, progress=False, gpu=False)
    gc.collect()
    before = rss_bytes()
    for _ in range(1000):
        t = voxlod.convert((v, f), res=8, progress=False, gpu=False)
        t.sample(np.zeros((4, 3), np.float32))
        del t
    gc.collect()
    grown = rss_bytes() - before
    assert grown < 8 << 20, f"RSS grew by {grown / 2**20:.1f} MiB over 1000 conversions"


@pytest.mark.skipif(not hasattr(os, "kill"), reason="needs signals")
def test_ctrl_c_cancels_a_build():
    import signal
    import threading
    import time

    # a job started in the background by a shell without job control inherits SIGINT ignored,
    # and Python then leaves it so: the handler Ctrl-C reaches in a terminal, for this test
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    t0 = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            voxlod.convert(BUNNY, res=1024, progress=False, gpu=False)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert time.perf_counter() - t0 < 10.0


def test_public_names():
    names = dir(voxlod)
    assert "np" not in names and "os" not in names and "Any" not in names
    assert all(hasattr(voxlod, n) for n in voxlod.__all__)
    assert {"convert", "load", "from_bytes", "Tree", "Error"} <= set(names)
