# SPDX-License-Identifier: Apache-2.0
"""Colour through Python: vertex colours in (convert((vertices, faces, colors))), Tree.colors,
node/voxel colour views, shade="albedo", meshes' has_color and notes.

The references share no code with the library: colours on the mesh are sampled by Monte Carlo
(points uniform in area on the triangles, the corner colours decoded to linear light and
interpolated barycentrically, as svo/soup.h defines a triangle's colour), binned into the tree's
cells by numpy, averaged in linear light and compared with what the tree says for that cell."""
import pathlib

import numpy as np
import pytest

import voxlod
from reference import uv_sphere

ROOT = pathlib.Path(__file__).resolve().parents[2]



# ---- references -----------------------------------------------------------------------------

def srgb_to_linear(c):
    c = np.asarray(c, np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_to_srgb(c):
    c = np.clip(np.asarray(c, np.float64), 0.0, 1.0)
    return np.where(c <= 0.0031308, c * 12.92, 1.055 * c ** (1 / 2.4) - 0.055)


def colour_of(p):
    """A smooth colour (linear light, in [0.1, 0.9]) of a position on the unit sphere."""
    return 0.5 + 0.4 * np.clip(p, -1.0, 1.0)


def coloured_sphere(nu=96, nv=48):
    """A unit sphere with vertex colours: uint8 sRGB RGBA (alpha 255) of colour_of(vertex)."""
    v, f = uv_sphere(1.0, nu, nv)
    rgb = np.floor(linear_to_srgb(colour_of(v)) * 255.0 + 0.5).astype(np.uint8)
    rgba = np.concatenate([rgb, np.full((len(v), 1), 255, np.uint8)], axis=1)
    return v, f, rgba


def surface_samples(v, f, rgba, n, seed=0):
    """n points uniform in area on the triangles and their colour in linear light (the corner
    colours decoded, interpolated with the barycentric weights)."""
    rng = np.random.default_rng(seed)
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    t = rng.choice(len(f), size=n, p=area / area.sum())
    r1, r2 = rng.random(n), rng.random(n)
    s = np.sqrt(r1)
    w = np.stack([1 - s, s * (1 - r2), s * r2], axis=1)
    pts = w[:, :1] * a[t] + w[:, 1:2] * b[t] + w[:, 2:] * c[t]
    lin = srgb_to_linear(rgba[:, :3] / 255.0)
    col = sum(w[:, k:k + 1] * lin[f[t, k]] for k in range(3))
    return pts, col


def cell_means(tree, pts, col, level):
    """Per cell of `level` holding samples: (a query point in it, the samples' mean linear
    colour, its standard error, the sample count)."""
    size = tree.scale * 2 ** (tree.depth - level)
    idx = np.floor((pts - np.array(tree.origin)) / size).astype(np.int64)
    keys, inv, cnt = np.unique(idx, axis=0, return_inverse=True, return_counts=True)
    inv = inv.reshape(-1)
    mean = np.stack([np.bincount(inv, col[:, k]) for k in range(3)], axis=1) / cnt[:, None]
    sq = np.stack([np.bincount(inv, col[:, k] ** 2) for k in range(3)], axis=1) / cnt[:, None]
    se = np.sqrt(np.maximum(sq - mean ** 2, 0.0) / cnt[:, None])
    # the query point: the centroid of the cell's samples (inside the cell, which is convex)
    q = np.stack([np.bincount(inv, pts[:, k]) for k in range(3)], axis=1) / cnt[:, None]
    return q, mean, se, cnt


# Quantisation: the tree stores sRGB in 8 bits (half a step, 0.5/255, is at most 0.0047 in linear
# light, the sRGB curve's slope being at most 2.4 there) and may average 8-bit children into a
# node (another such step); the vertex colours' own 8 bits are in the reference already.
QUANT = 0.012


# ---- vertex colours in ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sphere_rgba():
    return coloured_sphere()


@pytest.fixture(scope="module")
def colour_tree(sphere_rgba):
    v, f, rgba = sphere_rgba
    return voxlod.convert((v, f, rgba), res=32, progress=False, gpu=False)


@pytest.fixture(scope="module")
def samples(sphere_rgba):
    v, f, rgba = sphere_rgba
    return surface_samples(v, f, rgba, 400_000)


def test_vertex_colours_make_a_coloured_tree(colour_tree):
    t = colour_tree
    assert t.has_color and t.info["has_color"]
    assert t.node_colors.shape == (len(t.nodes), 4) and t.node_colors.dtype == np.uint8
    assert t.voxel_colors.shape == (len(t.voxels), 4)
    assert not t.node_colors.flags.writeable
    assert t.info["color_bytes"] == 4 * (len(t.nodes) + len(t.voxels))
    s = t.stats()
    assert s["color_bytes"].sum() == t.info["color_bytes"]
    assert (s["color_bytes"] == 4 * s["cells"]).all()
    # every cell is reached by the opaque surface: alpha 255 everywhere
    assert (t.voxel_colors[:, 3] == 255).all() and (t.node_colors[:, 3] == 255).all()


@pytest.mark.parametrize("level", [None, 4, 2])
def test_colors_are_the_cells_area_mean(colour_tree, samples, level):
    """Tree.colors at a point of each cell (finest level, and coarser cuts) against the mean
    colour of the surface in that cell, by Monte Carlo in linear light. Tolerance: the 8-bit
    quantisation (QUANT) plus 5 standard errors of the Monte Carlo mean; cells with fewer than
    32 samples (slivers of surface) are left out."""
    t = colour_tree
    pts, col = samples
    lv = t.depth if level is None else level
    q, mean, se, cnt = cell_means(t, pts, col, lv)
    keep = cnt >= 32
    assert keep.sum() > (50 if lv == t.depth else 8)
    rgba = t.colors(q[keep], lod=level)
    assert rgba.dtype == np.uint8 and rgba.shape == (keep.sum(), 4)
    assert (rgba[:, 3] == 255).all()
    got = srgb_to_linear(rgba[:, :3] / 255.0)
    err = np.abs(got - mean[keep])
    tol = QUANT + 5.0 * se[keep]
    bad = err > tol
    assert not bad.any(), (f"{bad.any(axis=1).sum()} of {keep.sum()} cells off; worst "
                           f"{err.max():.4f} (tolerance {tol[bad].min():.4f}..)")
    # the colours vary as the function does: a constant answer could not pass the check above
    assert got.std(axis=0).min() > 0.1


def test_colors_near_and_far(colour_tree):
    """A point just off the surface (within the band) takes the nearest surface voxel's colour;
    one far from it gets 0 0 0 0."""
    t = colour_tree
    d = np.array([[1.0, 1.0, 1.0], [-1.0, 0.5, 0.2], [0.3, -0.4, 1.0]])
    d /= np.linalg.norm(d, axis=1, keepdims=True)  # on the sphere, inside the tree's box
    on = t.colors(d)
    off = t.colors(d * (1.0 + 0.5 * t.scale))  # half a voxel outside
    assert (off[:, 3] == 255).all()
    assert np.abs(off.astype(int) - on.astype(int)).max() <= 24  # a neighbour at most
    far = t.colors(np.array([[0.0, 0.0, 0.0], [0.3, 0.2, -0.1]]))  # deep inside the sphere
    assert (far == 0).all()


def test_uint8_and_float_colours_give_the_same_tree(sphere_rgba, colour_tree):
    v, f, rgba = sphere_rgba
    for c in (rgba / 255.0, (rgba / 255.0).astype(np.float32), rgba[:, :3] / 255.0,
              rgba.astype(np.int64)):
        t = voxlod.convert((v, f, c), res=32, progress=False, gpu=False)
        assert np.array_equal(t.node_colors, colour_tree.node_colors)
        assert np.array_equal(t.voxel_colors, colour_tree.voxel_colors)
        assert t.to_bytes(1) == colour_tree.to_bytes(1)


def test_float_colours_round_to_nearest():
    """floor(c * 255 + 0.5), the library's own rounding (svo/color.h vx_unorm8)."""
    from voxlod._color import _vertex_colors
    u = np.arange(256, dtype=np.uint8)
    c = np.stack([u, u, u], axis=1)
    assert np.array_equal(_vertex_colors(c / 255.0, 256), c)
    assert np.array_equal(_vertex_colors((c / 255.0).astype(np.float32), 256), c)
    half = np.array([[0.5, 1 / 510, 253.5 / 255]])
    assert _vertex_colors(half, 1).tolist() == [[128, 1, 254]]
    assert _vertex_colors([[0, 128, 255, 7]], 1).tolist() == [[0, 128, 255, 7]]


def test_color_off_gives_a_grey_tree(sphere_rgba, colour_tree):
    v, f, rgba = sphere_rgba
    t = voxlod.convert((v, f, rgba), res=32, progress=False, gpu=False, color="off")
    assert not t.has_color and t.node_colors.shape == (0, 4)
    assert np.array_equal(t.nodes, colour_tree.nodes)  # colour changes no geometry
    assert np.array_equal(t.voxels, colour_tree.voxels)


def test_dominant_filter_invents_no_colour():
    """Triangles of two solid colours (red above a latitude, blue below, corners not shared):
    "mean" mixes them in the voxels that span the border, "dominant" gives each voxel one of
    the two, the one with the larger area there where one clearly has it (Monte Carlo)."""
    v, f = uv_sphere(1.0, 48, 24)
    soup = v[f].reshape(-1, 3)
    faces = np.arange(len(soup)).reshape(-1, 3)
    # the border: the ring of vertices at z = cos(9 pi / 24) = 0.383, off the grid planes (which
    # lie at z = -1 + k / 16), so that voxels span it
    top = v[f].mean(axis=1)[:, 2] > np.cos(9 * np.pi / 24)
    red, blue = np.array([255, 0, 0, 255], np.uint8), np.array([0, 0, 255, 255], np.uint8)
    rgba = np.repeat(np.where(top[:, None], red, blue), 3, axis=0)
    mean = voxlod.convert((soup, faces, rgba), res=32, progress=False, gpu=False)
    dom = voxlod.convert((soup, faces, rgba), res=32, progress=False, gpu=False,
                         color_filter="dominant")
    assert mean.has_color and dom.has_color
    pure = lambda c: (np.all(c == red, axis=1) | np.all(c == blue, axis=1))  # noqa: E731
    assert pure(dom.voxel_colors).all()  # (nodes are means of their subtree in either mode)
    assert not pure(mean.voxel_colors).all()  # the border voxels are mixed
    pts, col = surface_samples(soup, faces, rgba, 200_000, seed=1)  # col[:, 0]: 1 red, 0 blue
    q, share, se, cnt = cell_means(dom, pts, col, dom.depth)
    clear = (cnt >= 64) & (np.abs(share[:, 0] - 0.5) > 0.3)
    assert clear.sum() > 100
    got = dom.colors(q[clear])
    assert np.array_equal(np.all(got == red, axis=1), share[clear, 0] > 0.5)
    # "mean" at the border: the area shares in linear light, (share, 0, 1 - share) decoded (a
    # mean of the sRGB bytes would be far off: share 0.5 is byte 188 in sRGB, not 128)
    border = (cnt >= 64) & (share[:, 0] > 0.1) & (share[:, 0] < 0.9)
    assert border.sum() > 10
    lin = srgb_to_linear(mean.colors(q[border])[:, :3] / 255.0)
    assert np.all(np.abs(lin - share[border]) <= QUANT + 5.0 * se[border])


# ---- bad input ------------------------------------------------------------------------------

@pytest.mark.parametrize("bad, exc, words", [
    (lambda c: c[:-1], ValueError, "one row per vertex"),
    (lambda c: c[:, :2], ValueError, "shape (N, 3)"),
    (lambda c: c[:, :, None], ValueError, "shape (N, 3)"),
    (lambda c: np.where(np.arange(len(c))[:, None] == 5, np.nan, c / 255.0), ValueError,
     "NaN or infinite value (row 5"),
    (lambda c: np.where(np.arange(len(c))[:, None] == 0, np.inf, c / 255.0), ValueError,
     "NaN or infinite"),
    (lambda c: c / 127.0, ValueError, "must be in [0, 1]"),
    (lambda c: -(c / 255.0), ValueError, "must be in [0, 1]"),
    (lambda c: c.astype(np.int32) * 2, ValueError, "0..255"),
    (lambda c: c.astype(np.int32) - 200, ValueError, "0..255"),
    (lambda c: c > 0, TypeError, "uint8"),
    (lambda c: c.astype(np.complex64), TypeError, "uint8"),
    (lambda c: "red", TypeError, "array of shape"),
])
def test_bad_vertex_colours(sphere_rgba, bad, exc, words):
    v, f, rgba = sphere_rgba
    with pytest.raises(exc) as e:
        voxlod.convert((v, f, bad(rgba)), res=8, progress=False, gpu=False)
    assert words in str(e.value)


def test_bad_colour_options(sphere_mesh):
    with pytest.raises(ValueError, match="color must be 'auto' or 'off'"):
        voxlod.convert(sphere_mesh, res=8, progress=False, color="on")
    with pytest.raises(ValueError, match="color_filter must be 'mean' or 'dominant'"):
        voxlod.convert(sphere_mesh, res=8, progress=False, color_filter="max")
    with pytest.raises(ValueError, match="a mesh is a path or"):
        voxlod.convert(sphere_mesh + (None, None), res=8, progress=False)


def test_colors_of_a_grey_tree(sphere_tree):
    t = sphere_tree
    assert not t.has_color and t.info["color_bytes"] == 0
    assert t.node_colors.shape == (0, 4) and t.voxel_colors.shape == (0, 4)
    assert (t.stats()["color_bytes"] == 0).all()
    with pytest.raises(ValueError, match="no colour"):
        t.colors(np.zeros((3, 3), np.float32))
    # (vertices, faces, None) is the grey (vertices, faces)
    v, f = uv_sphere(1.0, 16, 8)
    assert not voxlod.convert((v, f, None), res=8, progress=False, gpu=False).has_color


@pytest.mark.parametrize("points, lod, exc, words", [
    (np.zeros((4, 2)), None, ValueError, "shape (N, 3)"),
    (np.zeros(3), None, ValueError, "shape (N, 3)"),
    (np.zeros((4, 3), np.int32), None, TypeError, "float32 or float64"),
    (np.zeros((4, 6))[:, ::2], None, ValueError, "C-contiguous"),
    (np.array([[0.0, 0.0, 0.0], [0.0, np.nan, 0.0]]), None, ValueError, "point 1"),
    (np.array([[0.0, 0.0, 1e300]]), None, ValueError, "NaN or infinite"),
    ("points", None, TypeError, "numpy array"),
    (np.zeros((4, 3)), 99, ValueError, "lod must be None or a level"),
    (np.zeros((4, 3)), -1, ValueError, "lod must be None or a level"),
    (np.zeros((4, 3)), "auto", ValueError, "lod must be None or a level"),
])
def test_bad_color_queries(sphere_tree, points, lod, exc, words):
    """Arguments are checked before the tree's colour is (the same errors for a grey tree)."""
    with pytest.raises(exc) as e:
        sphere_tree.colors(points, lod=lod)
    assert words in str(e.value)


def test_colors_inputs_and_partial_trees(colour_tree):
    t = colour_tree
    p = np.array([[0.6, 0.8, 0.0], [0.0, 0.6, -0.8]], np.float64)
    ref = t.colors(p.astype(np.float32))
    assert np.array_equal(t.colors(p), ref) and np.array_equal(t.colors(p.tolist()), ref)
    assert t.colors(np.zeros((0, 3))).shape == (0, 4)
    # the same colours after a trip through the .svo bytes, and a partial load answers with its
    # finest loaded level
    back = voxlod.from_bytes(t.to_bytes())
    assert back.has_color and np.array_equal(back.node_colors, t.node_colors)
    assert np.array_equal(back.voxel_colors, t.voxel_colors)
    part = voxlod.from_bytes(t.to_bytes(), max_level=3)
    assert part.has_color and part.voxel_colors.shape == (0, 4)
    assert np.array_equal(part.colors(p), t.colors(p, lod=3))
    with pytest.raises(ValueError, match="not loaded"):
        part.colors(p, lod=4)


def test_pruned_and_pickled_trees_keep_their_colours(colour_tree, samples):
    """A pruned leaf keeps the colour of the subtree it replaced: at every surface point the
    pruned tree answers what the full tree answers at some level; a pickled tree (its .svo
    bytes) answers the same."""
    import pickle
    t = colour_tree
    q = cell_means(t, *samples, t.depth)[0]
    pruned = t.prune(0.5)
    assert pruned.has_color and len(pruned.voxels) < len(t.voxels)
    got = pruned.colors(q)
    levels = np.stack([t.colors(q, lod=level) for level in range(t.depth + 1)])
    assert np.all(np.any(np.all(levels == got[None], axis=2), axis=0))
    assert not np.array_equal(got, t.colors(q))  # some points are in pruned leaves
    back = pickle.loads(pickle.dumps(t))
    assert back.has_color and np.array_equal(back.colors(q), t.colors(q))


# ---- render ---------------------------------------------------------------------------------

def hit_points(eye, target, up, fov, width, height, depth):
    """World points of the hit pixels from the depth image (distance along the normalised ray
    through the pixel's centre; the pinhole camera of include/voxlod/render.h)."""
    eye, target, up = (np.asarray(x, np.float64) for x in (eye, target, up))
    fwd = (target - eye) / np.linalg.norm(target - eye)
    right = np.cross(fwd, up)
    right /= np.linalg.norm(right)
    upv = np.cross(right, fwd)
    h = 2.0 * np.tan(np.radians(fov) / 2) / height
    px, py = np.meshgrid(np.arange(width) + 0.5 - width / 2, np.arange(height) + 0.5 - height / 2)
    d = fwd + h * px[..., None] * right - h * py[..., None] * upv
    d /= np.linalg.norm(d, axis=2, keepdims=True)
    hit = np.isfinite(depth)
    return hit, eye + d[hit] * depth[hit][:, None]


def test_render_albedo_shows_the_trees_colours(colour_tree):
    """Each hit pixel of shade="albedo" is the colour Tree.colors gives at its hit point, or at
    a point half a voxel from it (the hit may lie on a voxel's face, where either side's colour
    is right), within 2 steps of 8 bits."""
    t = colour_tree
    cam = dict(eye=(2.2, 1.4, 2.6), target=(0.0, 0.0, 0.0), up=(0.0, 1.0, 0.0), fov=40.0)
    w, h = 96, 72
    rgb, depth = t.render(w, h, shade="albedo", depth=True, device="cpu", **cam)
    hit, pts = hit_points(cam["eye"], cam["target"], cam["up"], cam["fov"], w, h, depth)
    assert hit.sum() > 0.2 * w * h
    px = rgb[hit].astype(int)
    offs = [np.zeros(3)] + [s * 0.5 * t.scale * e for e in np.eye(3) for s in (1, -1)]
    near = np.stack([t.colors(pts + o)[:, :3].astype(int) for o in offs])  # (7, n, 3)
    near = np.where(near.sum(axis=2, keepdims=True) == 0, near[:1], near)  # misses: the centre's
    ok = np.all((px >= near.min(axis=0) - 2) & (px <= near.max(axis=0) + 2), axis=1)
    assert ok.mean() >= 0.98, f"{(~ok).sum()} of {len(ok)} hit pixels off"
    assert px.std(axis=0).min() > 10  # the colours vary over the sphere
    # the lit default draws the same sphere in colour, darker where it turns from the light
    lit = t.render(w, h, depth=False, device="cpu", **cam)
    assert not np.array_equal(lit[hit], rgb[hit])


def test_render_albedo_of_a_grey_tree(sphere_tree):
    rgb, depth = sphere_tree.render(64, 48, shade="albedo", depth=True, device="cpu")
    hit = np.isfinite(depth)
    assert hit.any()
    assert len(np.unique(rgb[hit].reshape(-1, 3), axis=0)) == 1  # unlit: one grey


def test_render_shade_names(sphere_tree):
    with pytest.raises(ValueError, match="albedo"):
        sphere_tree.render(8, 8, shade="colour")


# ---- meshes from files -------------------------------------------------------------------------

def test_load_mesh_without_colour():
    m = voxlod.load_mesh(ROOT / "data" / "spot.obj")
    assert isinstance(m, voxlod.Mesh) and m.triangles > 1000
    assert m.has_color is False and m.notes == "" and m.info["materials"] == 0
    lo, hi = m.bbox
    assert all(a < b for a, b in zip(lo, hi))
    t = voxlod.convert(m, res=16, progress=False, gpu=False)
    assert not t.has_color
    with pytest.raises(ValueError, match="timeout"):
        voxlod.load_mesh(ROOT / "data" / "spot.obj", timeout=0)
    with pytest.raises(TypeError, match="voxlod.load_mesh"):
        voxlod.Mesh(None)


def write_coloured_ply(path, v, f, rgb):
    """A binary PLY (float32 positions, exact) with uchar red green blue per vertex."""
    vert = np.zeros(len(v), dtype=[("p", "<f4", 3), ("c", "u1", 3)])
    vert["p"], vert["c"] = v, rgb[:, :3]
    face = np.zeros(len(f), dtype=[("n", "u1"), ("i", "<i4", 3)])
    face["n"], face["i"] = 3, f
    head = (f"ply\nformat binary_little_endian 1.0\nelement vertex {len(v)}\n"
            "property float x\nproperty float y\nproperty float z\nproperty uchar red\n"
            f"property uchar green\nproperty uchar blue\nelement face {len(f)}\n"
            "property list uchar int vertex_indices\nend_header\n")
    with open(path, "wb") as fh:
        fh.write(head.encode() + vert.tobytes() + face.tobytes())


def test_load_mesh_with_vertex_colours(tmp_path, sphere_rgba):
    """A PLY with vertex colours: a coloured mesh, and the same tree as the arrays give."""
    v, f, rgba = sphere_rgba
    write_coloured_ply(tmp_path / "s.ply", v, f, rgba)
    m = voxlod.load_mesh(tmp_path / "s.ply")
    assert m.has_color and m.notes == ""
    a = voxlod.convert(m, res=16, progress=False, gpu=False)
    b = voxlod.convert((v.astype(np.float32), f, rgba[:, :3]), res=16, progress=False, gpu=False)
    assert a.has_color and np.array_equal(a.voxels, b.voxels)
    # the same triangles and corner colours (an importer may order them its own way: the sums
    # then round differently, by one step at most)
    assert np.abs(a.voxel_colors.astype(int) - b.voxel_colors.astype(int)).max() <= 1


def test_missing_texture_is_a_note(tmp_path):
    """An OBJ whose material names a texture that is not there: loaded, coloured with the
    material's Kd, and a note naming the file (on the mesh and on the converted tree)."""
    v, f = uv_sphere(1.0, 16, 8)
    (tmp_path / "m.mtl").write_text("newmtl paint\nKd 0.8 0.2 0.1\nmap_Kd missing_texture.png\n")
    with open(tmp_path / "m.obj", "w") as fh:
        fh.write("mtllib m.mtl\n")
        for p in v:
            fh.write(f"v {p[0]} {p[1]} {p[2]}\nvt 0.5 0.5\n")
        fh.write("usemtl paint\n")
        for t in f + 1:
            fh.write(f"f {t[0]}/{t[0]} {t[1]}/{t[1]} {t[2]}/{t[2]}\n")
    m = voxlod.load_mesh(tmp_path / "m.obj")
    assert m.has_color and "missing_texture.png" in m.notes
    t = voxlod.convert(tmp_path / "m.obj", res=16, progress=False, gpu=False)
    assert t.has_color and "missing_texture.png" in t.notes
    assert t.notes.count("missing_texture.png") == m.notes.count("missing_texture.png")
    # the material's colour (whether Kd is read as linear or as sRGB is the importer's choice:
    # either keeps r > g > b)
    c = t.colors(np.array([[1.0, 0.0, 0.0]]))[0].astype(int)
    assert c[0] > c[1] > c[2] and c[3] == 255
