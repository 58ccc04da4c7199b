# SPDX-License-Identifier: Apache-2.0
"""Property-based fuzzing of the Python entry points (hypothesis): whatever a caller passes to
Tree.sample, convert (from arrays, with vertex colours), Tree.colors, Tree.render,
Tree.surface_points, load and from_bytes
(damaged files), or file names to save, load and convert (embedded NULs, bytes that are not
UTF-8, separators) and progress= values, arrays of any dtype, shape, layout and values or no arrays at all, the call
either gives well-formed results that satisfy the sampling rule's invariants or raises
TypeError, ValueError or voxlod.Error with a message. A crash, a hang, another exception or a
malformed result fails.

The examples are derandomized (the same ones in every run, so that CI is reproducible). Longer
runs with fresh examples: VOXLOD_FUZZ_EXAMPLES=5000 VOXLOD_FUZZ_RANDOM=1 pytest this file.
"""
import os

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, event, given, settings, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import voxlod  # noqa: E402
from reference import signed_distance, uv_sphere  # noqa: E402

EXAMPLES = int(os.environ.get("VOXLOD_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                derandomize=os.environ.get("VOXLOD_FUZZ_RANDOM", "0") != "1",
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])
ALLOWED = (TypeError, ValueError, voxlod.Error)


def mostly(valid, invalid, k=6):
    """Valid values about k times as often as invalid ones, so that most examples with several
    arguments get past the checks and into the library."""
    return st.sampled_from(range(k + 1)).flatmap(lambda i: valid if i < k else invalid)


def rarely_bad(valid, invalid):
    """For calls with many arguments (render): one invalid value per call or so."""
    return mostly(valid, invalid, k=20)


SPHERE = uv_sphere(1.0, 24, 12)


@pytest.fixture(scope="module")
def tree():
    return voxlod.convert(SPHERE, res=32, progress=False, gpu=False)


def expect_refusal(exc):
    """A refusal must be one of the documented kinds and say something."""
    what = "" if isinstance(exc, voxlod.Error) else ": " + str(exc)[:32]
    event(f"refused: {type(exc).__name__}{what}")
    assert isinstance(exc, ALLOWED), f"{type(exc).__name__}: {exc}"
    assert str(exc).strip(), f"{type(exc).__name__} without a message"


# ---- values and layouts -----------------------------------------------------------------------

# Coordinates: mostly near the unit sphere (the tree's box is about [-1.1, 1.1]^3), some anywhere
# a float can be: huge, tiny, signed zeros, NaN and infinities.
near = st.floats(-1.5, 1.5, width=32)
wild = st.one_of(st.floats(width=32), st.sampled_from(
    [0.0, -0.0, 1e-45, -1e-38, 1e30, -3e38, 3.4028235e38, float("nan"), float("inf"),
     float("-inf")]))
finite_far = st.floats(-1.0000000150474662e30, 1.0000000150474662e30, width=32)

DTYPES = [np.float32, np.float64, np.float16, np.int32, np.int64, np.uint8, np.bool_,
          np.complex64]


def layout(a, how):
    """The same values in another memory layout: C order, Fortran order, a stepped or reversed
    view, read-only, or misaligned (a float array starting one byte into a buffer)."""
    if how == "fortran":
        return np.asfortranarray(a)
    if how == "step":
        return np.repeat(a, 2, axis=0)[::2] if a.ndim else a
    if how == "reverse":
        return a[::-1] if a.ndim else a
    if how == "readonly":
        b = a.copy()
        b.flags.writeable = False
        return b
    if how == "misaligned" and a.ndim and a.dtype.itemsize > 1:
        raw = bytearray(a.nbytes + 1)
        b = np.frombuffer(raw, dtype=a.dtype, count=a.size, offset=1).reshape(a.shape)
        b[...] = a
        return b
    return a


LAYOUTS = ["c", "c", "c", "fortran", "step", "reverse", "readonly", "misaligned"]


@st.composite
def point_arrays(draw):
    """Mostly (N, 3) float32/float64 arrays, sometimes any dtype or shape, in any layout."""
    if draw(st.integers(0, 9)) < 9:
        dtype = draw(st.sampled_from([np.float32, np.float64]))
        shape = (draw(st.integers(0, 48)), 3)
    else:
        dtype = draw(st.sampled_from(DTYPES))
        shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
    if np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.complexfloating):
        # most arrays finite (near the tree, some far off), some with NaN and infinities
        coords = draw(st.sampled_from(["near", "near", "finite", "wild"]))
        elems = {"near": near, "finite": st.one_of(near, near, near, finite_far),
                 "wild": st.one_of(near, near, wild)}[coords]
        if dtype == np.float16:
            elems = st.floats(-2, 2, width=16)
    elif dtype == np.bool_:
        elems = st.booleans()
    else:
        elems = st.integers(0, 1)
    a = draw(hnp.arrays(dtype, shape, elements=elems))
    return layout(a, draw(st.sampled_from(LAYOUTS)))


not_arrays = st.one_of(st.none(), st.integers(), st.text(max_size=4),
                       st.lists(st.lists(near, min_size=3, max_size=3), max_size=3),
                       st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))


def grid_finite(tree, points):
    """Per point: are the coordinates and the grid coordinates (float32, as the sampler
    computes them) finite?"""
    with np.errstate(over="ignore", invalid="ignore"):
        p = np.asarray(points, dtype=np.float32)
        g = (p - np.asarray(tree.origin, dtype=np.float32)) * np.float32(1.0 / tree.scale)
        return np.all(np.isfinite(p), axis=1) & np.all(np.isfinite(g), axis=1)


def is_valid_points(p):
    if isinstance(p, list):  # lists go through numpy
        try:
            p = np.asarray(p)
        except ValueError:
            return False
    return (isinstance(p, np.ndarray) and p.ndim == 2 and p.shape[1] == 3 and
            p.dtype in (np.float32, np.float64) and p.flags.c_contiguous)


# ---- Tree.sample ------------------------------------------------------------------------------

@FUZZ
@given(points=mostly(point_arrays(), not_arrays, k=8),
       gradient=st.booleans(), flags=st.booleans(),
       lod=mostly(st.one_of(st.none(), st.none(), st.integers(0, 5)),
                  st.one_of(st.integers(-2, 8), st.booleans(), st.floats(0, 5),
                            st.text(max_size=3))),
       nonfinite=mostly(st.sampled_from(["raise", "nan", "nan"]), st.sampled_from(["NaN", None])))
def test_sample_any_input(tree, points, gradient, flags, lod, nonfinite):
    try:
        out = tree.sample(points, gradient=gradient, flags=flags, lod=lod, nonfinite=nonfinite)
    except BaseException as e:  # noqa: B902 - everything a call may raise is judged
        expect_refusal(e)
        valid_lod = lod is None or (isinstance(lod, int) and not isinstance(lod, bool) and
                                    0 <= lod <= tree.depth)
        if is_valid_points(points) and valid_lod and nonfinite in ("raise", "nan"):
            # the only refusal of well-formed input: a point without a finite grid position
            # (a NaN, an infinity, or beyond float range once in grid units) when told to raise
            assert nonfinite == "raise" and not np.all(grid_finite(tree, points)), str(e)
        return
    assert is_valid_points(points), "malformed points were accepted"
    points = np.asarray(points)
    n = points.shape[0]
    out = out if isinstance(out, tuple) else (out,)
    assert len(out) == 1 + gradient + flags
    d = out[0]
    assert d.dtype == np.float32 and d.shape == (n,)
    g = out[1] if gradient else None
    fl = out[-1] if flags else None
    if g is not None:
        assert g.dtype == np.float32 and g.shape == (n, 3)
    if fl is None:
        return
    assert fl.dtype == np.uint8 and fl.shape == (n,)
    p32 = np.asarray(points, dtype=np.float32)
    finite = grid_finite(tree, points)
    invalid = (fl & voxlod.SAMPLE_INVALID) != 0
    assert np.array_equal(invalid, ~finite), "INVALID is not exactly the non-finite points"
    assert np.all(np.isnan(d[invalid]))
    assert not np.any(np.isnan(d[~invalid])), "a valid point got NaN"
    # far points: at least the band, the sign's magnitude bounded by the documented value
    far = ((fl & voxlod.SAMPLE_FAR) != 0) & ~invalid
    assert np.all(np.abs(d[far]) >= tree.band * tree.scale * (1 - 1e-6))
    near_ = ((fl & voxlod.SAMPLE_NEAR) != 0) & ~invalid
    assert np.all(np.abs(d[near_]) < tree.band * tree.scale * (1 + 1e-6))
    if g is not None:
        assert np.all(np.isfinite(g[~invalid]))
    # the order of the points and their company do not change a point's bits
    if n and lod is None:
        one = np.ascontiguousarray(p32[::-1])
        rev = tree.sample(one, nonfinite="nan")
        assert np.array_equal(rev[::-1], d, equal_nan=True)
    # in a surface voxel the value is the field, within a voxel of the exact distance
    # (double precision over every triangle; the field is exact at the corners)
    inside = (fl == 0)
    if lod is None and inside.any():
        exact = signed_distance(p32[inside].astype(np.float64), *SPHERE)
        assert np.all(np.abs(d[inside] - exact) <= tree.scale)


# ---- convert from arrays ----------------------------------------------------------------------

@st.composite
def meshes(draw):
    """(vertices, faces): mostly small well-formed meshes with wild coordinates and indices,
    sometimes the wrong dtypes or shapes, in any layout."""
    nv = draw(st.integers(0, 9))
    if draw(st.integers(0, 9)) < 8:
        vdtype = draw(st.sampled_from([np.float32, np.float64]))
        vshape = (nv, 3)
    else:
        vdtype = draw(st.sampled_from(DTYPES))
        vshape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    if np.issubdtype(vdtype, np.floating) and vdtype != np.float16:
        clean = st.one_of(st.integers(-4, 4).map(float), st.floats(-1e3, 1e3, width=32))
        velem = draw(mostly(st.just(clean), st.just(st.one_of(clean, clean, wild)), k=5))
        velem = velem.map(np.float32)
    elif vdtype == np.float16:
        velem = st.floats(-4, 4, width=16)
    elif vdtype == np.bool_:
        velem = st.booleans()
    elif vdtype == np.complex64:
        velem = st.floats(-4, 4, width=32)
    else:
        velem = st.integers(-4, 4).map(abs) if vdtype == np.uint8 else st.integers(-4, 4)
    v = draw(hnp.arrays(vdtype, vshape, elements=velem))
    fdtype = draw(st.sampled_from([np.int32, np.int64, np.uint32, np.uint64, np.int8, np.int32,
                                   np.float32, np.bool_]))
    fshape = (draw(st.integers(0, 8)), 3) if draw(st.integers(0, 9)) < 8 else draw(
        hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    if fdtype == np.bool_:
        felem = st.booleans()
    elif fdtype == np.float32:
        felem = st.integers(0, 3).map(float)
    else:
        top = np.iinfo(fdtype).max
        lo = 0 if np.iinfo(fdtype).min == 0 else -2
        inrange = st.integers(0, max(nv - 1, 0))
        felem = draw(mostly(st.just(inrange), st.just(st.one_of(
            inrange, st.integers(lo, nv + 2), st.just(int(top)))), k=5))
    f = draw(hnp.arrays(fdtype, fshape, elements=felem))
    return layout(v, draw(st.sampled_from(LAYOUTS))), layout(f, draw(st.sampled_from(LAYOUTS)))


@FUZZ
@given(mesh=mostly(meshes(), st.one_of(st.tuples(not_arrays, not_arrays),
                                       st.lists(st.integers(), max_size=3))),
       res=mostly(st.sampled_from([2, 8, 16, 16, 32, np.int64(16)]),
                  st.sampled_from([0, 1, 3, 24, -16, 32768, 2.0, "16", True, None])),
       error=mostly(st.sampled_from([0.0, 0.0, 0.5, 2.0]),
                    st.sampled_from([-1.0, float("nan"), float("inf")])),
       band=mostly(st.sampled_from([None, None, 1.0, 3.5, 64.0]),
                   st.sampled_from([0.5, 65.0, float("nan")])))
def test_convert_any_arrays(mesh, res, error, band):
    try:
        t = voxlod.convert(mesh, res=res, error=error, band=band, progress=False, gpu=False)
    except BaseException as e:  # noqa: B902
        expect_refusal(e)
        return
    assert isinstance(res, (int, np.integer)) and res >= 2 and not res & (res - 1)
    v, f = mesh
    v = np.asarray(v, dtype=np.float64)
    assert v.ndim == 2 and v.shape[1] == 3 and np.all(np.isfinite(v))
    assert t.resolution == res and t.depth == int(res).bit_length() - 1
    s = t.stats()
    assert s["level"].tolist() == list(range(t.depth + 1))
    assert s["cells"][0] == 1 and s["cells"][t.depth] == t.voxels.shape[0]
    assert t.voxels.shape[0] > 0 or error > 0  # pruning may replace every voxel by planes
    # the tree's box holds the mesh: every vertex of a triangle with an area maps into the grid
    f = np.asarray(f).astype(np.int64)
    tri = v[f]
    area = np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    span = max(np.ptp(v, axis=0).max(), 1e-30) if len(v) else 1.0
    used = v[np.unique(f[area > 1e-6 * span * span])]
    grid = (used - np.asarray(t.origin)) / t.scale
    assert np.all(grid >= -1e-3 * res) and np.all(grid <= res * (1 + 1e-3))
    # every point can be asked for, and the answer has the documented shape
    try:
        extra = t.surface_points(64, seed=1) if t.voxels.shape[0] else np.zeros((0, 3))
        pts = np.concatenate([used, extra]).astype(np.float32)
        d, fl = t.sample(pts, flags=True, nonfinite="nan")
    except voxlod.InvalidArgumentError as e:  # a tree beyond single precision: refused
        assert "single precision" in str(e) or "float" in str(e), str(e)
        return
    assert d.shape == (len(pts),) and not np.any(np.isnan(d))


# ---- colour: vertex colours in, Tree.colors out --------------------------------------------------



def valid_colours(c, n):
    """Is c what convert takes as per-vertex colours of n vertices?"""
    if isinstance(c, list):
        try:
            c = np.asarray(c)
        except ValueError:
            return False
    if not isinstance(c, np.ndarray) or c.ndim != 2 or c.shape != (n, c.shape[1]) \
            or c.shape[1] not in (3, 4):
        return False
    if c.dtype == np.bool_ or c.dtype.kind == "c":
        return False
    if np.issubdtype(c.dtype, np.integer):
        return c.size == 0 or (int(c.min()) >= 0 and int(c.max()) <= 255)
    if not np.issubdtype(c.dtype, np.floating):
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.isfinite(c)) and np.all((c >= 0) & (c <= 1)))


@st.composite
def colour_arrays(draw):
    """Mostly (N, 3 or 4) uint8 or float colours for SPHERE's N vertices, sometimes a wrong
    count, dtype, shape or value, in any layout."""
    n = len(SPHERE[0])
    rows = n if draw(st.integers(0, 7)) else draw(st.sampled_from([0, 1, n - 1, n + 1]))
    shape = (rows, draw(mostly(st.sampled_from([3, 4]), st.sampled_from([0, 1, 2, 5]))))
    if draw(st.integers(0, 9)) == 0:
        shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
    dtype = draw(mostly(st.sampled_from([np.uint8, np.float32, np.float64]),
                        st.sampled_from(DTYPES + [np.uint16, np.int8])))
    if np.issubdtype(dtype, np.floating) or dtype == np.complex64:
        good = st.floats(0, 1, width=16 if dtype == np.float16 else 32)
        elems = draw(mostly(st.just(good), st.sampled_from([  # out of range, or not finite
            st.one_of(good, st.floats(-2, 2, width=16)),
            st.one_of(good, st.sampled_from([float("nan"), float("inf")]))]), k=2))
    elif dtype == np.bool_:
        elems = st.booleans()
    else:
        info = np.iinfo(dtype)
        elems = st.integers(max(info.min, -3), min(info.max, 300))
    a = draw(hnp.arrays(dtype, shape, elements=elems))
    return layout(a, draw(st.sampled_from(LAYOUTS)))


@FUZZ
@given(colours=mostly(colour_arrays(), not_arrays, k=8),
       color=mostly(st.sampled_from(["auto", "off"]), st.sampled_from(["on", "", None, 1])),
       color_filter=mostly(st.sampled_from(["mean", "dominant"]),
                           st.sampled_from(["max", "Mean", None, 0])))
def test_convert_any_colours(colours, color, color_filter):
    v, f = SPHERE
    try:
        t = voxlod.convert((v, f, colours), res=8, progress=False, gpu=False, color=color,
                           color_filter=color_filter)
    except BaseException as e:  # noqa: B902
        expect_refusal(e)
        assert not (valid_colours(colours, len(v)) and color in ("auto", "off")
                    and color_filter in ("mean", "dominant")) or colours is None, str(e)
        return
    assert colours is None or valid_colours(colours, len(v)), "malformed colours were accepted"
    assert color in ("auto", "off") and color_filter in ("mean", "dominant")
    assert t.has_color == (colours is not None and color == "auto")


@pytest.fixture(scope="module")
def colour_tree():
    v, f = SPHERE
    rgb = np.floor((v * 0.5 + 0.5) * 255 + 0.5).astype(np.uint8)
    return voxlod.convert((v, f, rgb), res=32, progress=False, gpu=False)


@FUZZ
@given(points=mostly(point_arrays(), not_arrays, k=8),
       lod=mostly(st.one_of(st.none(), st.none(), st.integers(0, 5)),
                  st.one_of(st.integers(-2, 8), st.booleans(), st.floats(0, 5),
                            st.text(max_size=3))))
def test_colors_any_input(colour_tree, points, lod):
    t = colour_tree
    try:
        out = t.colors(points, lod=lod)
    except BaseException as e:  # noqa: B902
        expect_refusal(e)
        valid_lod = lod is None or (isinstance(lod, int) and not isinstance(lod, bool) and
                                    0 <= lod <= t.depth)
        if is_valid_points(points) and valid_lod:
            # the refusals of well-formed input: a NaN or infinite point, a grey tree
            p32 = np.asarray(points, dtype=np.float32) if len(points) else np.zeros((0, 3))
            assert not np.all(np.isfinite(p32)), str(e)
        return
    assert is_valid_points(points), "malformed points were accepted"
    p = np.asarray(points, dtype=np.float32).astype(np.float64)
    assert out.dtype == np.uint8 and out.shape == (len(p), 4)
    # the sphere is opaque: a point has its cell's colour (alpha 255) or none (0 0 0 0)
    none = np.all(out == 0, axis=1)
    assert np.all(none | (out[:, 3] == 255))
    # none where no surface voxel is within the band; a colour within a voxel of the surface
    # (the nearest surface voxel is then within ceil(band) cells); distances to the mesh exact
    if lod is None and len(p):
        d = np.abs(signed_distance(p, *SPHERE))
        reach = (np.ceil(t.band) + 1) * t.scale * np.sqrt(3)
        assert not np.any(~none & (d > reach))
        assert not np.any(none & (d < 0.5 * t.scale))
    # a point's answer does not depend on its company or order
    if len(p):
        rev = t.colors(np.ascontiguousarray(np.asarray(points, dtype=np.float32)[::-1]), lod=lod)
        assert np.array_equal(rev[::-1], out)


# ---- render ----------------------------------------------------------------------------------

vec = rarely_bad(
    st.one_of(st.none(), st.lists(near.map(lambda x: 3 * x), min_size=3, max_size=3)),
    st.one_of(st.lists(st.one_of(near, wild), min_size=2, max_size=4), st.text(max_size=3),
              st.integers()))


@FUZZ
@given(width=rarely_bad(st.sampled_from([1, 7, 16, 33, np.int32(9)]),
                        st.sampled_from([0, -4, 40000, 2.5, "8", True])),
       height=rarely_bad(st.sampled_from([1, 5, 16, np.uint16(4)]),
                         st.sampled_from([0, -1, 40000, 3.0, None])),
       lod=rarely_bad(st.one_of(st.none(), st.integers(0, 5), st.just("auto")),
                      st.one_of(st.integers(-2, 8), st.text(max_size=4), st.booleans(),
                                st.floats(0, 3))),
       eye=vec, target=vec, up=vec,
       fov=rarely_bad(st.one_of(st.none(), st.floats(1, 179)),
                      st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just("40"))),
       shade=rarely_bad(st.sampled_from(["smooth", "blocks", "normals", "albedo"]),
                        st.sampled_from(["Smooth", "", 3])),
       lod_scale=rarely_bad(st.floats(0.1, 8), st.floats(allow_nan=True, allow_infinity=True)),
       depth=st.booleans())
def test_render_any_arguments(tree, width, height, lod, eye, target, up, fov, shade, lod_scale,
                              depth):
    try:
        out = tree.render(width=width, height=height, lod=lod, eye=eye, target=target, up=up,
                          fov=fov, shade=shade, lod_scale=lod_scale, depth=depth, device="cpu")
    except BaseException as e:  # noqa: B902
        expect_refusal(e)
        return
    assert not any(isinstance(x, bool) for x in (lod, width, height)), "a bool taken for an int"
    img, dep = out if depth else (out, None)
    assert img.dtype == np.uint8 and img.shape == (int(height), int(width), 3)
    if dep is not None:
        assert dep.dtype == np.float32 and dep.shape == (int(height), int(width))
        hit = np.isfinite(dep)
        assert np.all(dep[hit] >= 0) and not np.any(np.isnan(dep))  # 0: the eye on a surface


# ---- surface points --------------------------------------------------------------------------

@FUZZ
@given(n=mostly(st.sampled_from([0, 1, 17, 300, np.uint8(3)]),
                st.sampled_from([-1, 2.0, "5", None, True])),
       spread=mostly(st.one_of(st.none(), st.floats(0, 4), st.just(0.0)),
                     st.floats(allow_nan=True, allow_infinity=True)),
       seed=st.one_of(st.integers(-2 ** 70, 2 ** 70), st.just(0)),
       shuffle=st.booleans())
def test_surface_points_any_arguments(tree, n, spread, seed, shuffle):
    try:
        p = tree.surface_points(n, spread=spread, seed=seed, shuffle=shuffle)
    except BaseException as e:  # noqa: B902
        expect_refusal(e)
        return
    assert not isinstance(n, bool), "a bool taken for a count"
    assert p.dtype == np.float32 and p.shape == (int(n), 3) and np.all(np.isfinite(p))
    s = tree.band if spread is None else spread
    # within `spread` voxels (per axis) of a surface voxel's centre: inside the grown box
    g = (p.astype(np.float64) - np.asarray(tree.origin)) / tree.scale
    assert np.all(g >= -s - 1e-3) and np.all(g <= tree.resolution + s + 1e-3)
    if s < 1e-6:  # the centres themselves
        assert np.all(np.abs(g - np.floor(g) - 0.5) < 1e-3)
    q = tree.surface_points(n, spread=spread, seed=seed, shuffle=shuffle)
    assert np.array_equal(p, q), "the same seed gave other points"


# ---- damaged files ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def svo_bytes(tree, tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz") / "sphere.svo"
    tree.save(path)
    return path.read_bytes()


@FUZZ
@given(edits=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), max_size=3),
       cut=mostly(st.none(), st.integers(0, 1 << 20), k=3),
       max_level=mostly(st.sampled_from([None, None, 0, 3, 5, 14]), st.sampled_from([-1, 15])))
def test_load_damaged_files(svo_bytes, tmp_path_factory, edits, cut, max_level):
    data = bytearray(svo_bytes)
    for pos, val in edits:
        data[pos % len(data)] = val
    if cut is not None:
        data = data[:cut % (len(data) + 1)]
    path = tmp_path_factory.mktemp("damaged") / "t.svo"
    path.write_bytes(bytes(data))
    try:
        t = voxlod.load(path, max_level=max_level)
    except BaseException as e:  # noqa: B902
        expect_refusal(e)
        # the same bytes from memory are refused the same way
        with pytest.raises(type(e)):
            voxlod.from_bytes(data, max_level=max_level)
        return
    m = voxlod.from_bytes(memoryview(data), max_level=max_level)
    assert np.array_equal(m.nodes, t.nodes) and np.array_equal(m.voxels, t.voxels)
    # what loads is a usable tree: it samples, renders and saves
    d = t.sample(t.surface_points(32, seed=2) if t.info["levels_loaded"] == t.depth + 1
                 else np.zeros((4, 3), np.float32), nonfinite="nan")
    assert not np.any(np.isnan(d))
    img = t.render(width=16, height=12, device="cpu",
                   lod=None if t.info["levels_loaded"] == t.depth + 1 else
                   t.info["levels_loaded"] - 1)
    assert img.shape == (12, 16, 3)


# ---- file names and progress= -------------------------------------------------------------------

class _Fspath:
    def __init__(self, p):
        self.p = p

    def __fspath__(self):
        return self.p


names = st.one_of(st.text(max_size=12), st.binary(max_size=12),
                  st.sampled_from(["a\0b", "\0", "x.svo\0.txt", "..", ".", "a/b", "", "-"]),
                  st.sampled_from([b"\xff\xfe", b"\xe9t\xe9", b"a\0", b"\0"]))


@FUZZ
@given(name=names, kind=st.sampled_from(["as is", "pathlike", "pathlib"]),
       call=st.sampled_from(["save", "load", "convert"]))
def test_any_file_name(tree, tmp_path_factory, name, kind, call):
    d = tmp_path_factory.mktemp("names")
    base = os.fsencode(str(d)) + b"/" if isinstance(name, bytes) else str(d) + "/"
    full = base + name
    if kind == "pathlike":
        full = _Fspath(full)
    elif kind == "pathlib" and isinstance(full, str):
        full = __import__("pathlib").Path(full)
    try:
        encoded = os.fsencode(os.fspath(full))
    except UnicodeError:
        encoded = None
    has_nul = encoded is not None and b"\0" in encoded
    if call == "save":
        what = lambda: tree.save(full)  # noqa: E731
    elif call == "load":
        if encoded is not None and not has_nul and encoded != os.fsencode(str(d)) + b"/":
            try:
                tree.save(full)
            except (voxlod.Error, ValueError):
                pass
        what = lambda: voxlod.load(full)  # noqa: E731
    else:
        what = lambda: voxlod.convert(full, res=4, progress=False, gpu=False)  # noqa: E731
    try:
        r = what()
    except BaseException as e:  # noqa: B902
        expect_refusal(e)
        if has_nul:
            assert isinstance(e, ValueError) and not isinstance(e, voxlod.Error), repr(e)
        # nothing was written beside the name, in particular not at the name cut at a NUL
        assert not any(b".voxlod-tmp-" in n for n in os.listdir(os.fsencode(str(d))))
        if has_nul:
            cut = encoded.split(b"\0")[0]
            assert call != "save" or not os.path.isfile(cut)
        return
    assert not has_nul, "a name with an embedded NUL was accepted"
    if call == "save":
        assert os.path.isfile(encoded)
    elif call == "load":
        assert r.depth == tree.depth


progress_values = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(),
                            st.binary(max_size=4), st.lists(st.integers(), max_size=2),
                            st.just(np.bool_(True)), st.just(lambda phase, f: None),
                            st.just(lambda *a: True))


@FUZZ
@given(progress=progress_values)
def test_any_progress_value(progress):
    ok = progress is None or progress is True or progress is False or callable(progress)
    try:
        t = voxlod.convert(SPHERE, res=4, progress=progress, gpu=False)
    except BaseException as e:  # noqa: B902
        expect_refusal(e)
        assert not ok and isinstance(e, TypeError) and "progress" in str(e), repr(e)
        return
    assert ok, f"progress={progress!r} was accepted"
    assert t.resolution == 4

