# SPDX-License-Identifier: Apache-2.0
"""Tiled trees from Python: convert(out=, tile_depth=) writes one; load() joins it into the
untiled tree (node for node); TiledFile reads it tile by tile (levels, tiles, a tile as a
Tree)."""
import os

import numpy as np
import pytest

import voxlod
from conftest import BUNNY, write_stl


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


def _points(whole, seed, spread):
    """Points of a 64^3 tree in tiles of 8^3: 3000 in and around the box, 3000 within spread
    band widths of the surface, 2000 near the tiles' faces."""
    rng = np.random.default_rng(seed)
    lo, edge = np.asarray(whole.origin), whole.scale * 64
    far = (lo + (rng.random((3000, 3)) * 1.2 - 0.1) * edge).astype(np.float32)
    near = whole.surface_points(3000, spread=spread * whole.band)
    faces = lo + np.floor(rng.random((2000, 3)) * 9) * 8 * whole.scale
    faces = (faces + (rng.random((2000, 3)) - 0.5) * 4 * whole.scale).astype(np.float32)
    return np.concatenate([far, near, faces])


def test_tiled_file_sample(tmp_path):
    """TiledFile.sample: load(path).sample's results bit for bit (up to 16384^3), tile by tile,
    at full detail and at a cut, with gradients and flags, whatever the cache holds."""
    t = tmp_path / "t.svo"
    voxlod.convert(BUNNY, res=64, out=t, tile_depth=3, color="off", progress=False)
    whole, f = voxlod.load(t), voxlod.TiledFile(t)
    p = _points(whole, 5, 2.0)
    for lod in (None, 2, 3, 5):
        d0, g0, f0 = whole.sample(p, gradient=True, flags=True, lod=lod)
        d1, g1, f1 = f.sample(p, gradient=True, flags=True, lod=lod, cache_bytes="1K")
        assert d1.dtype == np.float32 and g1.shape == (len(p), 3) and f1.dtype == np.uint8
        assert np.array_equal(d0.view(np.uint32), d1.view(np.uint32))
        assert np.array_equal(g0.view(np.uint32), g1.view(np.uint32))
        assert np.array_equal(f0, f1)
    assert np.array_equal(f.sample(p[:10].astype(np.float64)), whole.sample(p[:10]))
    bad = np.array([[np.nan, 0, 0]], dtype=np.float32)
    with pytest.raises(ValueError, match="NaN"):
        f.sample(bad)
    d, fl = f.sample(bad, flags=True, nonfinite="nan")
    assert np.isnan(d[0]) and fl[0] == voxlod.SAMPLE_INVALID
    with pytest.raises(ValueError, match="shape"):
        f.sample(np.zeros((4, 2), dtype=np.float32))
    with pytest.raises(ValueError, match="strided|contiguous|C-contiguous"):
        f.sample(np.zeros((4, 6), dtype=np.float32)[:, ::2])
    with pytest.raises(TypeError):
        f.sample(np.zeros((4, 3), dtype=np.int32))
    with pytest.raises(ValueError, match="lod"):
        f.sample(p[:1], lod=7)
    # a file replaced between open and the first sample is refused, not read as the one opened
    other = tmp_path / "o.svo"
    voxlod.convert(BUNNY, res=64, out=other, tile_depth=4, color="off", progress=False)
    g = voxlod.TiledFile(t)
    os.replace(other, t)
    with pytest.raises(voxlod.FormatError, match="changed"):
        g.sample(p[:1])
    if not voxlod.gpu_available():
        with pytest.raises(voxlod.NoGpuError):
            f.sample(p[:1], device="gpu")
    else:  # the same bits with the search on the GPU
        d2, g2, f2 = f.sample(p, gradient=True, flags=True, device="gpu")
        d0, g0, f0 = whole.sample(p, gradient=True, flags=True)
        assert np.array_equal(d0.view(np.uint32), d2.view(np.uint32))
        assert np.array_equal(g0.view(np.uint32), g2.view(np.uint32))
        assert np.array_equal(f0, f2)


def test_tiled_file_sample_past_16384(tmp_path):
    """TiledFile.sample past 16384^3, where no Tree holds the file: a needle at 32768^3."""
    obj, t = tmp_path / "needle.obj", tmp_path / "n.svo"
    obj.write_text("v 0 0 0\nv 1 0 0\nv 1 0.00002 0.00001\nf 1 2 3\n")
    voxlod.convert(str(obj), res=32768, out=t, color="off", progress=False)
    f = voxlod.TiledFile(t)
    assert f.depth == 15
    voxel = f.info["scale"]
    x = np.linspace(0.1, 0.9, 200)
    p = np.stack([x, np.zeros_like(x), np.full_like(x, 1.5 * voxel)], axis=1).astype(np.float32)
    d, fl = f.sample(p, flags=True, cache_bytes="64M")
    # an open sheet: outside on both sides, about 1.5 voxels away (within the field's step)
    assert np.all(d > 0) and np.all(np.abs(d / voxel - 1.5) < 1.0)
    far, ffl = f.sample(np.array([[0.5, 0.4, 0.3]], dtype=np.float32), flags=True)
    assert far[0] > 0 and ffl[0] & voxlod.SAMPLE_FAR
    assert np.array_equal(f.sample(p, lod=3), f.sample(p, lod=3))


def test_tiled_render(tmp_path):
    """TiledFile.render draws tile by tile: the joined tree's image (up to a pixel), the top tree
    at cuts above the tiles, coarse levels within a small budget, streaming until nothing is
    pending; bad arguments refused."""
    t = tmp_path / "t.svo"
    voxlod.convert(BUNNY, res=256, out=t, tile_depth=6, color="off", progress=False)
    joined, f = voxlod.load(t), voxlod.TiledFile(t)
    cam = dict(eye=(-0.1, 0.2, 0.25), target=(-0.02, 0.1, 0.0))
    for lod in (None, 1, 5, "auto"):
        a = joined.render(200, 150, lod=lod, device="cpu", **cam)
        b, d = f.render(200, 150, lod=lod, device="cpu", depth=True, **cam)
        assert (a != b).any(axis=2).mean() <= 0.002, lod
        assert np.isfinite(d).mean() > 0.2
    info = f.render_info()
    assert info["tiles"] == f.tile_count and info["coarse_level"] == 8 and not info["gpu"]
    # 1 MiB: the far tiles keep coarser levels; what is resident stays within the budget
    f.render(200, 150, device="cpu", budget="1M", **cam)
    info = f.render_info()
    assert info["budget_bytes"] == 1 << 20 and info["resident_bytes"] <= 1 << 20
    assert info["coarse_level"] < 8 and 0 < info["tiles_detailed"] < info["tiles"]
    want = f.render(200, 150, device="cpu", budget="1M", **cam)
    for _ in range(2000):  # streaming: the same image once every tile it wants has arrived
        got = f.render(200, 150, device="cpu", budget="1M", stream=True, **cam)
        if f.render_info()["tiles_pending"] == 0:
            break
    assert f.render_info()["tiles_pending"] == 0 and np.array_equal(got, want)
    with pytest.raises(ValueError, match="lod"):
        f.render(32, 32, lod=9)
    with pytest.raises(ValueError, match="budget"):
        f.render(32, 32, budget="100K")


def test_tiled_level_tree(tmp_path):
    """TiledFile.level_tree: at the finest level the joined tree node for node; past 16384^3 a
    Tree of the level asked for, whose distances are the whole tree's within a cell."""
    t = tmp_path / "t.svo"
    voxlod.convert(BUNNY, res=128, out=t, tile_depth=4, color="off", progress=False)
    f = voxlod.TiledFile(t)
    a, b = voxlod.load(t), f.level_tree(7)
    assert np.array_equal(a.nodes, b.nodes) and np.array_equal(a.voxels, b.voxels)
    c = f.level_tree(5)
    assert c.depth == 5 and np.isclose(c.scale, 4 * a.scale) and c.info["voxel_count"] > 0
    for bad in (0, 8, "5", 5.0):
        with pytest.raises((ValueError, TypeError)):
            f.level_tree(bad)
    # past 16384^3: a needle at 32768^3 (tiny area), level 12 as a tree
    obj, n = tmp_path / "needle.obj", tmp_path / "n.svo"
    obj.write_text("v 0 0 0\nv 1 0 0\nv 1 0.00002 0.00001\nf 1 2 3\n")
    voxlod.convert(str(obj), res=32768, out=n, color="off", progress=False)
    big = voxlod.TiledFile(n)
    assert big.depth == 15
    lt = big.level_tree(12)
    assert lt.depth == 12 and np.isclose(lt.scale, 8 * big.info["scale"])
    assert lt.info["voxel_count"] > 0
    x = np.linspace(0.1, 0.9, 50)
    p = np.stack([x, np.zeros_like(x), np.full_like(x, 1.5 * lt.scale)], axis=1).astype(np.float32)
    got = lt.sample(p)
    assert np.all(np.abs(got / lt.scale - 1.5) < 1.0)
    with pytest.raises(ValueError):
        big.level_tree(15)


def test_pruned_tiles(tmp_path):
    """error= with tiles prunes inside each tile, never above the tiles' roots: the joined tree
    is the full tree's, pruned that way (fewer nodes, every pruned leaf at or below the tiles'
    level), and samples of it are the tiled file's read tile by tile."""
    full, t = tmp_path / "full.svo", tmp_path / "t.svo"
    voxlod.convert(BUNNY, res=128, out=full, tile_depth=4, color="off", progress=False)
    voxlod.convert(BUNNY, res=128, out=t, tile_depth=4, error=1.0, color="off", progress=False)
    a, b = voxlod.load(full), voxlod.load(t)
    assert b.info["prune_error"] == 1.0 and b.info["node_count"] < a.info["node_count"]
    assert b.info["voxel_count"] < a.info["voxel_count"]
    assert t.stat().st_size < full.stat().st_size
    f = voxlod.TiledFile(t)
    lo = np.array(b.origin, dtype=np.float64)
    p = (lo + np.random.default_rng(1).random((5000, 3)) * 128 * b.scale).astype(np.float32)
    assert np.array_equal(b.sample(p), f.sample(p))


def test_split_file(tmp_path):
    """A binary STL converted file to file, tiled with sign="pseudo-normal", is split by tile
    without being held whole: the bytes of the mesh loaded and converted."""
    stl = write_stl(tmp_path / "bunny.stl", voxlod.load_mesh(BUNNY))
    a, b = tmp_path / "a.svo", tmp_path / "b.svo"
    opts = dict(res=256, tile_depth=5, sign="pseudo-normal", color="off", progress=False)
    voxlod.convert(voxlod.load_mesh(stl), out=a, **opts)
    voxlod.convert(stl, out=b, **opts)
    assert a.read_bytes() == b.read_bytes()
    voxlod.convert(str(stl), out=b, **dict(opts, sign="winding"))  # loaded: not split
    voxlod.convert(voxlod.load_mesh(stl), out=a, **dict(opts, sign="winding"))
    assert a.read_bytes() == b.read_bytes()


def test_coloured_tiles(tmp_path):
    """A coloured mesh converted in tiles: load() joins it into the untiled coloured tree (its
    colours and bytes), TiledFile reports the colour, a tile loaded alone is coloured and the
    tiled renderer draws the unlit colours of the joined tree."""
    from test_color import coloured_sphere
    v, f, rgba = coloured_sphere()
    u, t = tmp_path / "u.svo", tmp_path / "t.svo"
    voxlod.convert((v, f, rgba), res=128, out=u, progress=False, gpu=False)
    voxlod.convert((v, f, rgba), res=128, out=t, tile_depth=5, progress=False, gpu=False)
    a, b = voxlod.load(u), voxlod.load(t)
    assert a.has_color and b.has_color
    assert np.array_equal(a.node_colors, b.node_colors)
    assert np.array_equal(a.voxel_colors, b.voxel_colors)
    assert a.to_bytes() == b.to_bytes()
    tf = voxlod.TiledFile(t)
    assert tf.info["has_color"] and tf.info["color_bytes"] == a.info["color_bytes"]
    assert tf.load_tile(0).has_color
    cam = dict(eye=(2.0, 1.2, 1.6), target=(0.0, 0.0, 0.0))
    x = a.render(160, 120, shade="albedo", device="cpu", **cam)
    y = tf.render(160, 120, shade="albedo", device="cpu", **cam)
    assert (x != y).any(axis=2).mean() <= 0.002
    assert (y[..., 0] != y[..., 1]).mean() > 0.1  # in colour, not grey


def test_tiled_file_colors(tmp_path):
    """TiledFile.colors: load(path).colors' bytes (up to 16384^3), tile by tile, at every
    level, whatever the cache holds; the same refusals."""
    from reference import uv_sphere
    v, f = uv_sphere(1.0, 64, 32)
    rgba = np.concatenate([np.floor((0.5 + 0.45 * v) * 255).astype(np.uint8),
                           np.full((len(v), 1), 255, np.uint8)], axis=1)
    t = tmp_path / "c.svo"
    voxlod.convert((v, f, rgba), res=64, out=t, tile_depth=3, progress=False, gpu=False)
    whole, tf = voxlod.load(t), voxlod.TiledFile(t)
    assert tf.has_color and whole.has_color
    p = _points(whole, 9, 1.5)
    near = p[3000:6000]
    for lod in (None, 0, 2, 3, 4, 6):
        a = whole.colors(p, lod=lod)
        b = tf.colors(p, lod=lod, cache_bytes="1K")
        assert b.dtype == np.uint8 and b.shape == (len(p), 4)
        assert np.array_equal(a, b)
    assert (tf.colors(near)[:, 3] > 0).mean() > 0.9  # near the surface: coloured
    assert np.array_equal(tf.colors(p[:10].astype(np.float64)), whole.colors(p[:10]))
    with pytest.raises(ValueError, match="NaN"):
        tf.colors(np.array([[np.nan, 0, 0]], dtype=np.float32))
    with pytest.raises(ValueError, match="lod"):
        tf.colors(p[:1], lod=7)
    with pytest.raises(ValueError, match="shape"):
        tf.colors(np.zeros((4, 2), dtype=np.float32))
    grey = tmp_path / "g.svo"
    voxlod.convert(BUNNY, res=32, out=grey, tile_depth=3, color="off", progress=False)
    with pytest.raises(ValueError, match="no colour"):
        voxlod.TiledFile(grey).colors(p[:1])
