# SPDX-License-Identifier: Apache-2.0
"""`voxlod mesh` writes only formats that another library reads back: each advertised format
(.obj, .ply, .stl, .glb) is read by trimesh (its own parsers, not assimp and not ours), and the
counts the command reports, the vertex positions across formats and the bounds against the source
mesh must agree. Every other extension is refused with a message listing the four."""
import io
import re
import subprocess

import numpy as np
import pytest

from conftest import BUNNY

trimesh = pytest.importorskip("trimesh")

FORMATS = ["obj", "ply", "stl", "glb"]
RES = 32


def run(cli, *args):
    return subprocess.run([cli, *map(str, args)], capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def bunny_svo(cli, tmp_path_factory):
    d = tmp_path_factory.mktemp("mesh_formats")
    svo = d / "b.svo"
    r = run(cli, "convert", BUNNY, svo, "--res", RES, "-q")
    assert r.returncode == 0, r.stderr.decode()
    return svo


def counts(stderr):
    m = re.search(r"(\d+) triangles, (\d+) vertices", stderr.decode())
    assert m, stderr.decode()
    return int(m.group(1)), int(m.group(2))


def read(data_or_path, file_type=None):
    if file_type:
        return trimesh.load(io.BytesIO(data_or_path), file_type=file_type, process=False,
                            force="mesh")
    return trimesh.load(str(data_or_path), process=False, force="mesh")


def test_every_format_reads_back(cli, bunny_svo, tmp_path):
    src = trimesh.load(str(BUNNY), process=False, force="mesh")
    voxel = float(np.max(src.bounds[1] - src.bounds[0])) / RES
    meshes = {}
    for f in FORMATS:
        out = tmp_path / f"b.{f}"
        r = run(cli, "mesh", bunny_svo, out)
        assert r.returncode == 0, r.stderr.decode()
        tris, verts = counts(r.stderr)
        m = read(out)
        assert len(m.faces) == tris, f
        # STL holds no shared vertices: three per triangle
        assert len(m.vertices) == (3 * tris if f == "stl" else verts), f
        # inside the source mesh's box (plus a voxel: vertices sit in the cells that straddle it)
        assert np.all(m.bounds[0] >= src.bounds[0] - voxel), f
        assert np.all(m.bounds[1] <= src.bounds[1] + voxel), f
        # and filling it: the mesh spans the source's box to within two voxels on every side
        assert np.all(np.abs(m.bounds - src.bounds) <= 2 * voxel), f
        meshes[f] = m
    ref = meshes["ply"]
    corners = ref.vertices[ref.faces]  # triangles as corner positions, float32 from the file
    assert np.array_equal(meshes["glb"].vertices, ref.vertices)
    assert np.array_equal(meshes["glb"].faces, ref.faces)
    # OBJ is text (and its reader may renumber the vertices): the same triangles, corner by corner
    obj = meshes["obj"]
    np.testing.assert_allclose(obj.vertices[obj.faces], corners, rtol=0, atol=1e-6 * voxel * RES)
    stl = meshes["stl"]
    np.testing.assert_array_equal(stl.vertices[stl.faces], corners)
    # the facet winding agrees: STL's stored facet normals point the way of the PLY's triangles
    n = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    assert np.all(np.einsum("ij,ij->i", n, stl.face_normals) >= 0)


@pytest.mark.parametrize("fmt", FORMATS)
def test_standard_output(cli, bunny_svo, tmp_path, fmt):
    r = run(cli, "mesh", bunny_svo, "-", "--format", fmt, "--lod", 4)
    assert r.returncode == 0, r.stderr.decode()
    f = tmp_path / f"l4.{fmt}"
    assert run(cli, "mesh", bunny_svo, f, "--lod", 4, "-q").returncode == 0
    assert r.stdout == f.read_bytes()
    m = read(r.stdout, fmt)
    tris, _ = counts(r.stderr)
    assert len(m.faces) == tris > 0


@pytest.mark.parametrize("ext", ["pbrt", "3mf", "dae", "x3d", "fbx", "3ds", "gltf", "off", "xyz"])
def test_other_formats_refused(cli, bunny_svo, tmp_path, ext):
    out = tmp_path / f"b.{ext}"
    r = run(cli, "mesh", bunny_svo, out)
    assert r.returncode == 1, r.stderr.decode()
    msg = r.stderr.decode()
    assert ".obj, .ply, .stl" in msg or ".glb (one file)" in msg, msg
    assert not out.exists()
    assert not list(tmp_path.iterdir())
