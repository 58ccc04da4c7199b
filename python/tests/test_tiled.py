# SPDX-License-Identifier: Apache-2.0
"""Tiled trees from Python: convert(out=, tile_depth=) writes one; load() joins it into the
untiled tree (node for node); TiledFile reads it tile by tile (levels, tiles, a tile as a
Tree)."""
import numpy as np
import pytest

import voxlod
from conftest import BUNNY


def test_tiled_file_is_the_untiled_tree(tmp_path):
    u, t = tmp_path / "u.svo", tmp_path / "t.svo"
    assert voxlod.convert(BUNNY, res=128, out=u, color="off", progress=False) is None
    assert voxlod.convert(BUNNY, res=128, out=t, tile_depth=5, color="off", progress=False) is None
    a, b = voxlod.load(u), voxlod.load(t)
    assert np.array_equal(a.nodes, b.nodes) and np.array_equal(a.voxels, b.voxels)
    assert a.to_bytes() == b.to_bytes()
    f = voxlod.TiledFile(t)
    assert f.depth == 7 and f.tile_depth == 5 and 1 <= f.tile_count <= 64
    assert f.info["file_version"] == 3 and f.info["voxel_count"] == a.info["voxel_count"]
    s = f.stats()
    assert np.array_equal(s["cells"], a.stats()["cells"])
    tiles = f.tiles()
    assert len(tiles) == f.tile_count and tiles["voxel_count"].sum() == a.info["voxel_count"]
    assert np.all(np.diff(tiles["code"].astype(np.int64)) > 0)
    k = int(np.argmax(tiles["voxel_count"]))
    one = f.load_tile(k)
    assert one.depth == 5 and one.info["voxel_count"] == tiles["voxel_count"][k]
    assert np.allclose(one.origin, tiles["origin"][k])
    # a point inside the tile gets the whole tree's answer
    p = np.asarray(tiles["origin"][k] + 0.5 * tiles["edge"][k], dtype=np.float32)[None, :]
    assert np.allclose(one.sample(p), a.sample(p))
    with pytest.raises(IndexError):
        f.load_tile(f.tile_count)


def test_tiled_arguments(tmp_path):
    with pytest.raises(ValueError, match="out="):
        voxlod.convert(BUNNY, res=64, tile_depth=3, progress=False)
    with pytest.raises(ValueError, match="16384"):
        voxlod.convert(BUNNY, res=32768, progress=False)
    with pytest.raises(ValueError, match="tile_depth"):
        voxlod.convert(BUNNY, res=64, out=tmp_path / "x.svo", tile_depth=15, progress=False)
    with pytest.raises(ValueError, match="gpus"):
        voxlod.convert(BUNNY, res=64, out=tmp_path / "x.svo", tile_depth=3, gpus=0,
                       progress=False)
    with pytest.raises(voxlod.FormatError):
        u = tmp_path / "u.svo"
        voxlod.convert(BUNNY, res=16, out=u, progress=False)
        voxlod.TiledFile(u)
