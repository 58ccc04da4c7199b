"""Trees as bytes: Tree.to_bytes / voxlod.from_bytes against the file save() writes, pickling,
and trees sent to worker processes (what a torch DataLoader with workers does)."""
import copy
import multiprocessing
import pickle

import numpy as np
import pytest

import voxlod


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
