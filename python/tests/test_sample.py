# SPDX-License-Identifier: Apache-2.0
"""Tree.sample against a brute-force reference (every triangle, double precision, exact winding
number) and against libigl when installed; flags, gradients, cuts; bad inputs."""
import numpy as np
import pytest

import voxlod
from conftest import BUNNY, SPOT
from reference import box, signed_distance, uv_sphere


def check_bound(tree, pts, got, exact):
    """The accuracy bound: error <= 0.5 voxel on 99.9 % of the points within the band, the sign
    right wherever |d| > 1 voxel."""
    vox = tree.scale
    within = np.abs(exact) <= tree.band * vox
    err = np.abs(got.astype(np.float64) - exact)[within] / vox
    assert within.sum() > len(pts) // 2
    assert (err > 0.5).mean() <= 0.001, f"{(err > 0.5).sum()} of {len(err)} over 0.5 voxel"
    far = within & (np.abs(exact) > vox)
    assert np.all(np.sign(got[far]) == np.sign(exact[far]))
    return err


@pytest.mark.parametrize("shape", ["sphere", "box"])
def test_sample_matches_brute_force(shape):
    v, f = uv_sphere(1.0, 40, 20) if shape == "sphere" else box((-0.7, -0.4, -0.3), (0.6, 0.5, 0.2))
    t = voxlod.convert((v, f), res=32, progress=False, gpu=False)
    pts = t.surface_points(4000, seed=3)
    d = t.sample(pts)
    exact = signed_distance(pts, v, f)
    err = check_bound(t, pts, d, exact)
    assert np.median(err) < 0.05
    # the band cache (the rule's values stored around the surface) meets the same bound, and
    # gives the rule's bits in surface voxels
    dc, fc = t.sample(pts, band_cache=True, flags=True)
    err = check_bound(t, pts, dc, exact)
    assert np.median(err) < 0.05
    _, fl = t.sample(pts, flags=True)
    assert np.array_equal(dc[fl == 0], d[fl == 0]) and np.array_equal(fc[fl == 0], fl[fl == 0])
    assert not np.array_equal(dc, d)


def test_open_mesh_against_brute_force():
    """A sphere with a hole: the winding-number sign jumps across the membrane spanning it, where
    no triangle is, so the exact signed distance is discontinuous there. Away from the rim the
    bound holds; near it the error stays below the band."""
    v, f = uv_sphere(1.0, 40, 20)
    f = f[v[f].mean(1)[:, 2] < 0.8]  # faces around the +z pole removed
    t = voxlod.convert((v, f), res=64, progress=False, gpu=False)
    pts = t.surface_points(6000, seed=7)
    d = t.sample(pts)
    exact = signed_distance(pts, v, f)
    vox = t.scale
    rz = v[f].reshape(-1, 3)[:, 2].max()  # the rim: the circle at the top of the kept faces
    rim = np.hypot(np.hypot(pts[:, 0], pts[:, 1]) - np.sqrt(1 - rz * rz), pts[:, 2] - rz) / vox
    away = rim > t.band + 1.0
    check_bound(t, pts[away], d[away], exact[away])
    within = np.abs(exact) <= t.band * vox
    assert np.abs(d - exact)[within].max() / vox <= t.band + 0.5


def test_sample_against_libigl():
    igl = pytest.importorskip("igl")
    v, f = uv_sphere(1.0, 48, 24)
    t = voxlod.convert((v, f), res=64, progress=False, gpu=False)
    pts = t.surface_points(5000, seed=4)
    p64 = pts.astype(np.float64)
    s, _, c = igl.signed_distance(p64, v, f.astype(np.int64),
                                  sign_type=igl.SIGNED_DISTANCE_TYPE_WINDING_NUMBER)[:3]
    # the distance to libigl's closest point, the sign of its winding number (its value is
    # (1 - 2|w|) times the distance, which is the distance only where w is 0 or 1)
    exact = np.sign(s) * np.linalg.norm(p64 - c, axis=1)
    check_bound(t, pts, t.sample(pts), exact)


def test_thin_parts_keep_their_sign():
    """spot's hooves have parts thinner than a voxel at 256^3, whose voxels the converter
    re-signs so that they are drawn; beside them the sampler still says outside, having found
    those voxels from their corner values (sampler/resigned.h). The points of docs/BENCHMARKS.md's
    comparison, against libigl's closest point and winding number: without that, one of 72,967
    beyond 1 voxel got the inside sign."""
    igl = pytest.importorskip("igl")
    v, f = igl.read_triangle_mesh(str(SPOT))
    t = voxlod.convert((v, f), res=256, progress=False, gpu=False)
    pts = t.surface_points(200000, seed=1, shuffle=True)
    p64 = pts.astype(np.float64)
    s, _, c = igl.signed_distance(p64, v, f.astype(np.int64),
                                  sign_type=igl.SIGNED_DISTANCE_TYPE_WINDING_NUMBER)[:3]
    exact = np.sign(s) * np.linalg.norm(p64 - c, axis=1)
    check_bound(t, pts, t.sample(pts), exact)
    check_bound(t, pts, t.sample(pts, band_cache=True), exact)


def test_flags_gradients_and_far_points(sphere_tree):
    t = sphere_tree
    pts = np.array([[0, 0, 0.999], [0, 0, 0], [0, 0, 3.0], [0, 0, 1.04]], np.float32)
    d, g, fl = t.sample(pts, gradient=True, flags=True)
    assert d.dtype == np.float32 and g.shape == (4, 3) and fl.dtype == np.uint8
    assert fl[0] == 0 and abs(d[0] + 0.001) < 0.5 * t.scale
    assert np.linalg.norm(g[0]) == pytest.approx(1.0, abs=0.1) and g[0, 2] > 0.9
    assert fl[1] == voxlod.SAMPLE_FAR and d[1] == pytest.approx(-t.band * t.scale)
    assert fl[2] == voxlod.SAMPLE_FAR | voxlod.SAMPLE_OUTSIDE and d[2] == pytest.approx(2.0, rel=1e-4)
    assert d[3] == pytest.approx(0.04, abs=0.5 * t.scale)
    d2, g2 = t.sample(pts, gradient=True)
    assert np.array_equal(d, d2) and np.array_equal(g, g2)


def test_cut_levels(sphere_tree):
    t = sphere_tree
    pts = t.surface_points(2000, spread=0.5, seed=5)
    exact = np.linalg.norm(pts.astype(np.float64), axis=1) - 1.0
    for lod in (t.depth - 1, t.depth - 2):
        d, fl = t.sample(pts, flags=True, lod=lod)
        assert np.mean(fl & voxlod.SAMPLE_PLANE != 0) > 0.9
        assert np.percentile(np.abs(d - exact), 99) < 1.0 * t.scale
    with pytest.raises(ValueError):
        t.sample(pts, lod=t.depth + 1)


def test_float64_lists_and_empty(sphere_tree):
    t = sphere_tree
    p = t.surface_points(100, seed=1)
    assert np.array_equal(t.sample(p), t.sample(p.astype(np.float64)))
    assert t.sample(np.zeros((0, 3), np.float32)).shape == (0,)
    assert np.array_equal(t.sample(p.tolist()), t.sample(p.astype(np.float64)))


def test_threads(sphere_tree):
    """threads bounds the cores a CPU call takes; the answer does not depend on it."""
    t = sphere_tree
    p = t.surface_points(20000, seed=4) + np.float32(0.3 * t.scale)
    d, fl = t.sample(p, flags=True)
    d1, fl1 = t.sample(p, flags=True, threads=1)
    d3, fl3 = t.sample(p, flags=True, threads=3, band_cache=True)
    assert np.array_equal(d, d1) and np.array_equal(fl, fl1)
    assert np.array_equal(d3, t.sample(p, band_cache=True))
    for bad in (0, -1, 4097, 1.5, "2", True):
        with pytest.raises(ValueError, match="threads"):
            t.sample(p, threads=bad)


def test_bad_inputs(sphere_tree):
    t = sphere_tree
    p = t.surface_points(10, seed=2)
    with pytest.raises(ValueError, match="shape"):
        t.sample(p[:, :2])
    with pytest.raises(ValueError, match="shape"):
        t.sample(p.reshape(-1))
    with pytest.raises(TypeError, match="float32 or float64"):
        t.sample(p.astype(np.int32))
    with pytest.raises(ValueError, match="C-contiguous"):
        t.sample(np.asfortranarray(p))
    with pytest.raises(ValueError, match="C-contiguous"):
        t.sample(np.repeat(p, 2, axis=0)[::2])
    bad = p.copy()
    bad[7, 1] = np.nan
    with pytest.raises(ValueError, match="point 7"):
        t.sample(bad)
    d, fl = t.sample(bad, nonfinite="nan", flags=True)
    assert np.isnan(d[7]) and fl[7] == voxlod.SAMPLE_INVALID and np.isfinite(d[:7]).all()
    bad[2, 0] = np.inf
    with pytest.raises(ValueError, match="point 2"):
        t.sample(bad)
    with pytest.raises(ValueError):
        t.sample(p, nonfinite="ignore")
    with pytest.raises(ValueError):
        t.sample(p, device="tpu")
    with pytest.raises(TypeError, match="band_cache"):
        t.sample(p, band_cache="yes")
    with pytest.raises(ValueError, match="point 2"):
        t.sample(bad, band_cache=True)


def test_huge_coordinates():
    v, f = uv_sphere(1.0, 24, 12)
    t = voxlod.convert((v, f), res=32, progress=False, gpu=False)
    d, g, fl = t.sample(np.array([[1e30, 0, 0], [3e38, 0, 0]], np.float32), gradient=True,
                        flags=True, nonfinite="nan")
    assert fl[0] == voxlod.SAMPLE_FAR | voxlod.SAMPLE_OUTSIDE
    assert d[0] == pytest.approx(1e30, rel=1e-5) and g[0] == pytest.approx([1, 0, 0])
    assert fl[1] == voxlod.SAMPLE_INVALID  # its grid coordinate overflows a float
    big = voxlod.convert((v * 1e38, f), res=16, progress=False, gpu=False)
    with pytest.raises(ValueError, match="single precision"):
        big.sample(np.zeros((1, 3), np.float32))


def test_training_set_points(sphere_tree):
    t = sphere_tree
    a = t.surface_points(1000, seed=9)
    assert np.array_equal(a, t.surface_points(1000, seed=9))
    assert not np.array_equal(a, t.surface_points(1000, seed=10))
    r = np.linalg.norm(a, axis=1)
    assert np.all(np.abs(r - 1.0) < (t.band + 1.0) * t.scale * np.sqrt(3))


class _DLPackOnly:
    """A CPU array known only through DLPack (as jax or another framework's would be)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, *args, **kwargs):
        return self._a.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_lists_and_dlpack_cpu_arrays(sphere_tree):
    pts = sphere_tree.surface_points(500, seed=11)
    d = sphere_tree.sample(pts)
    got, fl = sphere_tree.sample(_DLPackOnly(pts), flags=True)
    assert isinstance(got, np.ndarray) and np.array_equal(got, d)
    with pytest.raises(ValueError, match="list"):
        sphere_tree.sample([[0.0, 0.0, 0.0], [1.0, 2.0]])
    with pytest.raises(ValueError, match="shape"):
        sphere_tree.sample(_DLPackOnly(pts[:, :2].copy()))
    v, f = uv_sphere(1.0, 16, 8)
    a = voxlod.convert((_DLPackOnly(v.astype(np.float32)), f), res=16, progress=False, gpu=False)
    b = voxlod.convert((v, f), res=16, progress=False, gpu=False)
    assert np.array_equal(a.voxels, b.voxels)


@pytest.mark.optional
def test_torch_cpu_tensors(sphere_tree):
    torch = pytest.importorskip("torch")
    pts = sphere_tree.surface_points(500, seed=12)
    d, g = sphere_tree.sample(torch.from_numpy(pts), gradient=True)
    assert isinstance(d, torch.Tensor) and not d.is_cuda and d.dtype == torch.float32
    assert np.array_equal(d.numpy(), sphere_tree.sample(pts)) and tuple(g.shape) == (500, 3)
    with pytest.raises(TypeError, match="DLPack"):
        sphere_tree.sample(torch.from_numpy(pts).requires_grad_())


def test_cli_sample_writes_what_the_library_gives(cli, tmp_path):
    """`voxlod sample`: points from .npy (float32/float64, C/Fortran order) and text (comments,
    CSV, extra columns, standard input), values out as .npy and text, read back by numpy: the
    library's distances, gradients, cuts and colours, on a tree and on a tiled file (joined and
    tile by tile). Bad inputs give an exit status and a message, and no output."""
    import subprocess

    def run(*args, stdin=None):
        return subprocess.run([cli, "sample", *map(str, args)], input=stdin,
                              capture_output=True, timeout=120)

    v, f = uv_sphere(1.0, 48, 24)
    rgba = np.concatenate([np.floor((0.5 + 0.45 * v) * 255).astype(np.uint8),
                           np.full((len(v), 1), 255, np.uint8)], axis=1)
    svo, tiled = tmp_path / "s.svo", tmp_path / "t.svo"
    voxlod.convert((v, f, rgba), res=64, out=svo, progress=False, gpu=False)
    t = voxlod.load(svo)
    voxlod.convert((v, f, rgba), res=64, out=tiled, tile_depth=3, progress=False, gpu=False)
    p = np.concatenate([t.surface_points(3000, seed=5),
                        np.random.default_rng(4).uniform(-1.6, 1.6, (1000, 3))]).astype(np.float32)
    p[7] = [np.nan, 0.0, 0.0]
    np.save(tmp_path / "p.npy", p)
    np.save(tmp_path / "p64f.npy", np.asfortranarray(p.astype(np.float64)))
    np.savetxt(tmp_path / "p.csv", np.hstack([p, p[:, :1]]), fmt="%.9g", delimiter=",",
               header="x,y,z,w")
    d = t.sample(p, nonfinite="nan")
    d3, g3 = t.sample(p, lod=3, gradient=True, nonfinite="nan")
    ok = np.isfinite(p).all(axis=1)
    c, c4 = np.zeros((len(p), 4), np.uint8), np.zeros((len(p), 4), np.uint8)
    c[ok], c4[ok] = t.colors(p[ok]), t.colors(p[ok], lod=4)
    for src in ("p.npy", "p64f.npy", "p.csv"):
        for tree, extra in ((svo, ()), (tiled, ()), (tiled, ("--tiles", "--cache", "1K"))):
            r = run(tree, tmp_path / src, tmp_path / "d.npy", "--cpu", *extra)
            assert r.returncode == 0, r.stderr
            assert b"distances at 4000 points" in r.stderr
            assert np.array_equal(np.load(tmp_path / "d.npy"), d, equal_nan=True)
    r = run(svo, tmp_path / "p.npy", tmp_path / "g.txt", "--lod", "3", "--gradient", "-q")
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    g = np.loadtxt(tmp_path / "g.txt", dtype=np.float32)  # 9 digits: the same float32
    assert g.shape == (4000, 4)
    assert np.array_equal(g[:, 0], d3, equal_nan=True)
    assert np.array_equal(g[:, 1:], g3, equal_nan=True)
    for tree, extra in ((svo, ()), (tiled, ("--tiles",))):
        r = run(tree, tmp_path / "p.npy", tmp_path / "c.npy", "--color", *extra)
        assert r.returncode == 0, r.stderr
        cc = np.load(tmp_path / "c.npy")
        assert cc.dtype == np.uint8 and np.array_equal(cc, c)
        r = run(tree, tmp_path / "p.npy", tmp_path / "c4.txt", "--color", "--lod", "4", *extra)
        assert r.returncode == 0, r.stderr
        assert np.array_equal(np.loadtxt(tmp_path / "c4.txt", dtype=np.uint8), c4)
    # a cut is the whole tree's (Tree.sample(lod=)), not a tree read down to that level only:
    # they differ on the bunny at level 2
    bunny = tmp_path / "b.svo"
    voxlod.convert(BUNNY, res=64, out=bunny, progress=False, gpu=False)
    tb = voxlod.load(bunny)
    pb = np.concatenate([tb.surface_points(3000, seed=5),
                         np.random.default_rng(4).uniform(-0.1, 0.1, (1000, 3))]).astype(np.float32)
    np.save(tmp_path / "pb.npy", pb)
    assert not np.array_equal(voxlod.load(bunny, max_level=2).sample(pb), tb.sample(pb, lod=2))
    for lod in (2, 5):
        r = run(bunny, tmp_path / "pb.npy", tmp_path / "db.npy", "--lod", lod, "--cpu", "-q")
        assert r.returncode == 0, r.stderr
        assert np.array_equal(np.load(tmp_path / "db.npy"), tb.sample(pb, lod=lod))
    # standard input and output, text both ways
    text = "".join(f"{x!r} {y!r} {z!r}\n" for x, y, z in p[:5].astype(np.float64).tolist())
    r = run(svo, "-", "-", "--cpu", "-q", stdin=("# points\n" + text).encode())
    assert r.returncode == 0, r.stderr
    assert np.array_equal(np.loadtxt(r.stdout.decode().splitlines(), dtype=np.float32), d[:5])
    # refusals: a message naming the fault, exit status 1 or 2, no output written
    (tmp_path / "bad.txt").write_text("1 2 3\n4 5\n")
    np.save(tmp_path / "bad.npy", np.zeros((3, 2), np.float32))
    out = tmp_path / "never.npy"
    for args, says in (((svo, tmp_path / "bad.txt", out), b"line 2"),
                       ((svo, tmp_path / "bad.npy", out), b"shape (3, 2)"),
                       ((svo, tmp_path / "none.npy", out), b"cannot open"),
                       ((svo, tmp_path / "p.npy", out, "--lod", "9"), b"beyond"),
                       ((svo, tmp_path / "p.npy", out, "--color", "--gradient"), b"--color"),
                       ((svo, tmp_path / "p.npy", svo), b"input"),
                       ((svo, tmp_path / "p.npy", out, "--tiles"), b"--tiles")):
        r = run(*args)
        assert r.returncode in (1, 2) and says in r.stderr, (args, r.stderr)
        assert not out.exists()
    grey = tmp_path / "grey.svo"
    voxlod.convert((v, f), res=32, out=grey, progress=False, gpu=False)
    r = run(grey, tmp_path / "p.npy", out, "--color")
    assert r.returncode == 1 and b"no colour" in r.stderr and not out.exists()
