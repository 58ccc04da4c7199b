# SPDX-License-Identifier: Apache-2.0
"""Meshes out of trees from Python: Tree.mesh (full detail, a level, the error cut) and
TiledFile.mesh (window by window at full detail: the joined tree's mesh), Mesh.save read back by
trimesh (another library's reader and watertightness test)."""
import numpy as np
import pytest

import voxlod
from conftest import BUNNY
from reference import uv_sphere


def directed_edges_closed(faces):
    """Each directed edge once and its reverse once (closed, edge-manifold), by numpy alone."""
    f = np.asarray(faces, dtype=np.int64)
    e = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    key = e[:, 0] * (1 << 32) + e[:, 1]
    rev = e[:, 1] * (1 << 32) + e[:, 0]
    u, n = np.unique(key, return_counts=True)
    return bool(np.all(n == 1) and np.all(np.isin(rev, u)))


def test_tree_mesh_sphere(sphere_tree):
    t = sphere_tree
    m = t.mesh()
    v, f, nrm = m.vertices, m.faces, m.normals
    assert v.shape[1] == 3 and f.shape == (m.triangles, 3) and nrm.shape == v.shape
    assert m.colors is None
    assert directed_edges_closed(f)
    r = np.linalg.norm(v.astype(np.float64), axis=1)
    # within a voxel of the unit sphere (the 48 x 24 facets lie within 0.0086 of it)
    assert np.abs(r - 1.0).max() < t.scale + 0.01
    assert np.allclose(np.linalg.norm(nrm, axis=1), 1.0, atol=1e-4)
    assert np.mean(np.einsum("ij,ij->i", nrm, v) > 0) > 0.99  # out of the sphere
    coarse, adaptive = t.mesh(lod=4), t.mesh(error=1.0)
    assert 0 < coarse.triangles < m.triangles and 0 < adaptive.triangles < m.triangles
    assert directed_edges_closed(coarse.faces) and directed_edges_closed(adaptive.faces)
    assert t.mesh(threads=1).faces.tolist() == f.tolist()  # any thread count: the same mesh


def test_tree_mesh_arguments(sphere_tree):
    with pytest.raises(ValueError):
        sphere_tree.mesh(lod=3, error=1.0)
    for bad in (-1, sphere_tree.depth + 1, 2.5):
        with pytest.raises(ValueError):
            sphere_tree.mesh(lod=bad)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError):
            sphere_tree.mesh(error=bad)
    with pytest.raises(ValueError):
        sphere_tree.mesh(threads=0)
    with pytest.raises(voxlod.Error):  # level 0 is one cell: no surface crossing
        sphere_tree.mesh(lod=0)


def test_mesh_save_read_back(sphere_tree, tmp_path):
    trimesh = pytest.importorskip("trimesh")
    m = sphere_tree.mesh()
    for ext in ("ply", "stl", "obj", "glb"):
        p = tmp_path / f"s.{ext}"
        m.save(p)
        back = trimesh.load(str(p), force="mesh", process=False)
        assert len(back.faces) == m.triangles, ext
    back = trimesh.load(str(tmp_path / "s.ply"), force="mesh", process=True)  # welded
    assert back.is_watertight and back.is_winding_consistent
    assert np.allclose(back.volume, 4.0 / 3.0 * np.pi, rtol=0.02)
    m.save(tmp_path / "s.bin", format="ply")
    assert (tmp_path / "s.bin").stat().st_size > 0
    with pytest.raises(ValueError):
        m.save(tmp_path / "s.ply", format="fbx")
    with pytest.raises(voxlod.Error):
        m.save(tmp_path / "s.xyz")
    # a loaded mesh has no normals or colours of its own
    loaded = voxlod.load_mesh(tmp_path / "s.ply")
    assert loaded.normals is None and loaded.colors is None


def sorted_rows(a):
    a = np.asarray(a, dtype=np.float64)
    return a[np.lexsort(a.T[::-1])]


def test_tiled_file_mesh_is_the_joined_trees(tmp_path):
    sphere = uv_sphere(0.8, 64, 32, centre=(0.1, -0.05, 0.03))
    path = tmp_path / "t.svo"
    voxlod.convert(sphere, res=128, out=path, tile_depth=4, color="off", progress=False)
    joined = voxlod.load(path).mesh()
    f = voxlod.TiledFile(path)
    windows = f.mesh()
    assert windows.triangles == joined.triangles
    assert len(windows.vertices) == len(joined.vertices)
    assert directed_edges_closed(windows.faces)
    scale = voxlod.load(path).scale
    assert np.abs(sorted_rows(windows.vertices) - sorted_rows(joined.vertices)).max() < 1e-3 * scale
    # a level and the error cut come from the level tree
    lv = f.mesh(lod=5)
    assert lv.triangles == f.level_tree(5).mesh().triangles
    assert 0 < f.mesh(error=2.0).triangles < joined.triangles
    with pytest.raises(ValueError):
        f.mesh(lod=0)


def test_tiled_file_mesh_of_the_bunny(tmp_path):
    path = tmp_path / "b.svo"
    voxlod.convert(BUNNY, res=128, out=path, tile_depth=5, color="off", progress=False)
    a, b = voxlod.TiledFile(path).mesh(), voxlod.load(path).mesh()
    assert a.triangles == b.triangles and len(a.vertices) == len(b.vertices)
