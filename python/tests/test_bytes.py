# SPDX-License-Identifier: Apache-2.0
"""Trees as bytes: Tree.to_bytes / voxlod.from_bytes against the file save() writes, pickling,
trees sent to worker processes (what a torch DataLoader with workers does), no leak over round
trips, one tree used from several threads at once."""
import copy
import gc
import multiprocessing
import pickle
import sys
import threading

import numpy as np
import pytest

import voxlod
from conftest import rss_bytes
from reference import box


def same_tree(a, b):
    assert a.info["depth"] == b.info["depth"] and a.origin == b.origin and a.scale == b.scale
    assert np.array_equal(a.nodes, b.nodes) and np.array_equal(a.voxels, b.voxels)


def test_bytes_are_the_file(tmp_path, bunny_tree):
    path = tmp_path / "b.svo"
    for level in (0, 1, 19):
        bunny_tree.save(path, zstd_level=level)
        data = bunny_tree.to_bytes(zstd_level=level)
        assert isinstance(data, bytes) and data == path.read_bytes()
    t = voxlod.from_bytes(data)
    same_tree(t, bunny_tree)
    pts = bunny_tree.surface_points(2000, seed=5)
    assert np.array_equal(t.sample(pts), bunny_tree.sample(pts))


def test_from_any_buffer(bunny_tree):
    data = bunny_tree.to_bytes()
    for buf in (bytearray(data), memoryview(data), np.frombuffer(data, np.uint8),
                memoryview(b"xx" + data)[2:]):
        same_tree(voxlod.from_bytes(buf), bunny_tree)
    cut = voxlod.from_bytes(data, max_level=3)
    assert cut.info["levels_loaded"] == 4 and cut.voxels.shape[0] == 0


def test_from_bad_bytes(bunny_tree):
    data = bunny_tree.to_bytes()
    with pytest.raises(TypeError, match="bytes-like"):
        voxlod.from_bytes("not bytes")
    with pytest.raises(TypeError, match="bytes-like"):
        voxlod.from_bytes(12)
    with pytest.raises(voxlod.Error):
        voxlod.from_bytes(b"")
    with pytest.raises(voxlod.Error):
        voxlod.from_bytes(data[: len(data) // 2])
    bad = bytearray(data)
    bad[len(bad) // 2] ^= 0xFF
    with pytest.raises(voxlod.CorruptError):
        voxlod.from_bytes(bad)
    with pytest.raises(voxlod.Error, match="limit|exceeds|memory"):
        voxlod.from_bytes(data, mem_limit=1024)
    with pytest.raises(ValueError):
        voxlod.from_bytes(data, max_level=-1)
    # a partially loaded tree cannot be written out whole
    with pytest.raises(voxlod.Error):
        voxlod.from_bytes(data, max_level=2).to_bytes()


def test_pickle_and_copy(bunny_tree):
    t = pickle.loads(pickle.dumps(bunny_tree))
    same_tree(t, bunny_tree)
    assert t is not bunny_tree
    assert copy.copy(bunny_tree) is bunny_tree and copy.deepcopy(bunny_tree) is bunny_tree
    pts = bunny_tree.surface_points(1000, seed=6)
    assert np.array_equal(t.sample(pts), bunny_tree.sample(pts))


def test_trees_go_to_worker_processes(bunny_tree):
    """Each task pickles the bound method, hence the tree: a fresh interpreter (spawn) samples
    it and gives the parent's bits."""
    pts = bunny_tree.surface_points(4000, seed=7)
    chunks = np.array_split(pts, 4)
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        parts = pool.map(bunny_tree.sample, chunks)
    assert np.array_equal(np.concatenate(parts), bunny_tree.sample(pts))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_no_leak_over_1000_round_trips():
    v, f = box((-1, -1, -1), (1, 0.5, 0.8))
    small = voxlod.convert((v, f), res=8, progress=False, gpu=False)
    pts = np.zeros((4, 3), np.float32)

    def cycle():
        t = pickle.loads(pickle.dumps(voxlod.from_bytes(small.to_bytes())))
        t.sample(pts)
        t.render(width=8, height=8, device="cpu")
        with pytest.raises(voxlod.Error):
            voxlod.from_bytes(b"\\0" * 64)

    for _ in range(50):  # warm up allocator pools
        cycle()
    gc.collect()
    before = rss_bytes()
    for _ in range(1000):
        cycle()
    gc.collect()
    grown = rss_bytes() - before
    assert grown < 8 << 20, f"RSS grew by {grown / 2**20:.1f} MiB over 1000 round trips"


def test_threads_share_a_tree(bunny_tree):
    """Samples, renders and encodings from several threads at once (the library runs with the
    GIL released) give the single-threaded results."""
    pts = bunny_tree.surface_points(20000, seed=9)
    ref_d = bunny_tree.sample(pts)
    ref_img = bunny_tree.render(width=48, height=32, device="cpu")
    ref_bytes = bunny_tree.to_bytes(1)
    errors = []

    def work(k):
        try:
            for i in range(6):
                if (i + k) % 3 == 0:
                    assert np.array_equal(bunny_tree.sample(pts), ref_d)
                elif (i + k) % 3 == 1:
                    assert np.array_equal(bunny_tree.render(width=48, height=32, device="cpu"),
                                          ref_img)
                else:
                    assert bunny_tree.to_bytes(1) == ref_bytes
        except BaseException as e:  # noqa: B902 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not any(th.is_alive() for th in threads), "the threads deadlocked"
    assert not errors, errors


def _sample_in_child(tree, pts, queue):
    queue.put(tree.sample(pts))


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_forked_children_use_the_inherited_tree(bunny_tree):
    """A forked child (a DataLoader's default workers on Linux) inherits the tree without
    pickling; sampling there spawns its own threads and gives the parent's bits."""
    pts = bunny_tree.surface_points(3000, seed=10)
    ref = bunny_tree.sample(pts)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_sample_in_child, args=(bunny_tree, pts, queue))
    child.start()
    got = queue.get(timeout=120)
    child.join(timeout=60)
    assert child.exitcode == 0 and np.array_equal(got, ref)
