# SPDX-License-Identifier: Apache-2.0
"""The colour reference of bench/color_reference.py (what bench/color_quality.py measures voxlod
against) checked on its own: CIEDE2000 against the 34 published pairs of Sharma, Wu and Dalal
(2005), sRGB and CIELAB conversions against their definitions, and the footprint-filtered
reference against analytic means on generated meshes (a checkerboard quad, a cube with six face
colours, vertex colours, an alpha mask). Needs only numpy."""
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import color_reference as cr  # noqa: E402

# Sharma, Wu, Dalal, Color Res. Appl. 30(1) 2005, Table 1: L1 a1 b1 L2 a2 b2 dE00.
SHARMA = np.array([
    [50.0000, 2.6772, -79.7751, 50.0000, 0.0000, -82.7485, 2.0425],
    [50.0000, 3.1571, -77.2803, 50.0000, 0.0000, -82.7485, 2.8615],
    [50.0000, 2.8361, -74.0200, 50.0000, 0.0000, -82.7485, 3.4412],
    [50.0000, -1.3802, -84.2814, 50.0000, 0.0000, -82.7485, 1.0000],
    [50.0000, -1.1848, -84.8006, 50.0000, 0.0000, -82.7485, 1.0000],
    [50.0000, -0.9009, -85.5211, 50.0000, 0.0000, -82.7485, 1.0000],
    [50.0000, 0.0000, 0.0000, 50.0000, -1.0000, 2.0000, 2.3669],
    [50.0000, -1.0000, 2.0000, 50.0000, 0.0000, 0.0000, 2.3669],
    [50.0000, 2.4900, -0.0010, 50.0000, -2.4900, 0.0009, 7.1792],
    [50.0000, 2.4900, -0.0010, 50.0000, -2.4900, 0.0010, 7.1792],
    [50.0000, 2.4900, -0.0010, 50.0000, -2.4900, 0.0011, 7.2195],
    [50.0000, 2.4900, -0.0010, 50.0000, -2.4900, 0.0012, 7.2195],
    [50.0000, -0.0010, 2.4900, 50.0000, 0.0009, -2.4900, 4.8045],
    [50.0000, -0.0010, 2.4900, 50.0000, 0.0010, -2.4900, 4.8045],
    [50.0000, -0.0010, 2.4900, 50.0000, 0.0011, -2.4900, 4.7461],
    [50.0000, 2.5000, 0.0000, 50.0000, 0.0000, -2.5000, 4.3065],
    [50.0000, 2.5000, 0.0000, 73.0000, 25.0000, -18.0000, 27.1492],
    [50.0000, 2.5000, 0.0000, 61.0000, -5.0000, 29.0000, 22.8977],
    [50.0000, 2.5000, 0.0000, 56.0000, -27.0000, -3.0000, 31.9030],
    [50.0000, 2.5000, 0.0000, 58.0000, 24.0000, 15.0000, 19.4535],
    [50.0000, 2.5000, 0.0000, 50.0000, 3.1736, 0.5854, 1.0000],
    [50.0000, 2.5000, 0.0000, 50.0000, 3.2972, 0.0000, 1.0000],
    [50.0000, 2.5000, 0.0000, 50.0000, 1.8634, 0.5757, 1.0000],
    [50.0000, 2.5000, 0.0000, 50.0000, 3.2592, 0.3350, 1.0000],
    [60.2574, -34.0099, 36.2677, 60.4626, -34.1751, 39.4387, 1.2644],
    [63.0109, -31.0961, -5.8663, 62.8187, -29.7946, -4.0864, 1.2630],
    [61.2901, 3.7196, -5.3901, 61.4292, 2.2480, -4.9620, 1.8731],
    [35.0831, -44.1164, 3.7933, 35.0232, -40.0716, 1.5901, 1.8645],
    [22.7233, 20.0904, -46.6940, 23.0331, 14.9730, -42.5619, 2.0373],
    [36.4612, 47.8580, 18.3852, 36.2715, 50.5065, 21.2231, 1.4146],
    [90.8027, -2.0831, 1.4410, 91.1528, -1.6435, 0.0447, 1.4441],
    [90.9257, -0.5406, -0.9208, 88.6381, -0.8985, -0.7239, 1.5381],
    [6.7747, -0.2908, -2.4247, 5.8714, -0.0985, -2.2286, 0.6377],
    [2.0776, 0.0795, -1.1350, 0.9033, -0.0636, -0.5514, 0.9082],
])


# ---------------------------------------------------------------- colour science

def test_ciede2000_sharma_pairs_both_orders():
    assert SHARMA.shape == (34, 7)
    d12 = cr.ciede2000(SHARMA[:, 0:3], SHARMA[:, 3:6])
    d21 = cr.ciede2000(SHARMA[:, 3:6], SHARMA[:, 0:3])
    np.testing.assert_allclose(d12, SHARMA[:, 6], atol=5e-5)
    np.testing.assert_allclose(d21, SHARMA[:, 6], atol=5e-5)


def test_ciede2000_zero_and_symmetric():
    rng = np.random.default_rng(1)
    lab = np.column_stack([rng.uniform(0, 100, 1000), rng.uniform(-100, 100, (1000, 2))])
    other = lab[::-1]
    assert np.all(cr.ciede2000(lab, lab) == 0.0)
    np.testing.assert_allclose(cr.ciede2000(lab, other), cr.ciede2000(other, lab), atol=1e-9)
    # a pure lightness difference around L* 50: S_L = 1, so dE00 = |dL|
    a = np.array([[48.5, 0.0, 0.0]])
    assert cr.ciede2000(a, a + [3.0, 0.0, 0.0])[0] == pytest.approx(3.0, abs=1e-12)


def test_srgb_transfer_round_trip_and_definition():
    v = np.arange(256)
    lin = cr.srgb8_to_linear(v)
    assert np.all(np.diff(lin) > 0)
    assert np.array_equal(cr.linear_to_srgb8(lin), v.astype(np.uint8))
    # the definition's two branches (IEC 61966-2-1)
    assert cr.srgb_to_linear(0.04) == pytest.approx(0.04 / 12.92)
    assert cr.srgb_to_linear(0.5) == pytest.approx(((0.5 + 0.055) / 1.055) ** 2.4)
    x = np.linspace(0, 1, 1001)
    np.testing.assert_allclose(cr.srgb_to_linear(cr.linear_to_srgb(x)), x, atol=1e-12)


def test_lab_of_known_colours():
    # CIELAB (D65) of the sRGB primaries and white, as tabulated for IEC 61966-2-1
    cases = {(255, 255, 255): (100.0, 0.0, 0.0), (0, 0, 0): (0.0, 0.0, 0.0),
             (255, 0, 0): (53.24, 80.09, 67.20), (0, 255, 0): (87.73, -86.18, 83.18),
             (0, 0, 255): (32.30, 79.19, -107.86), (128, 128, 128): (53.59, 0.0, 0.0)}
    for rgb, lab in cases.items():
        np.testing.assert_allclose(cr.srgb8_to_lab(np.array(rgb)), lab, atol=0.05)


def test_lab_round_trip():
    rng = np.random.default_rng(2)
    rgb = rng.uniform(0, 1, (5000, 3))
    np.testing.assert_allclose(cr.lab_to_linear(cr.linear_to_lab(rgb)), rgb, atol=1e-10)
    tiny = rng.uniform(0, 0.002, (1000, 3))  # the linear branch of f near black
    np.testing.assert_allclose(cr.lab_to_linear(cr.linear_to_lab(tiny)), tiny, atol=1e-12)


# ---------------------------------------------------------------- sampling

def test_lattice_is_uniform_on_the_triangle():
    for s in (1, 2, 3, 7, 40):
        b = cr.lattice(s)
        assert b.shape == (s * s, 2)
        assert np.all(b > 0) and np.all(b.sum(axis=1) < 1)
        assert len(np.unique(np.round(b * 3 * s).astype(int), axis=0)) == s * s
        # the midpoint rule on congruent pieces integrates linear functions exactly
        np.testing.assert_allclose(b.mean(axis=0), [1 / 3, 1 / 3], atol=1e-12)
    # and quadratics with error O(1/s^2): E[b1^2] = 1/6 over the triangle
    assert abs((cr.lattice(40)[:, 0] ** 2).mean() - 1 / 6) < 1e-4


def test_bilinear_at_texel_centres_and_between():
    rng = np.random.default_rng(3)
    tex = rng.uniform(0, 1, (5, 7, 4)).astype(np.float32)
    y, x = np.mgrid[0:5, 0:7]
    u = (x.ravel() + 0.5) / 7
    v = 1 - (y.ravel() + 0.5) / 5
    np.testing.assert_allclose(cr.bilinear(tex, u, v), tex.reshape(-1, 4), atol=1e-6)
    # halfway between two horizontal neighbours; and the repeat wrap
    mid = cr.bilinear(tex, np.array([2.0 / 7]), np.array([1 - 0.5 / 5]))[0]
    np.testing.assert_allclose(mid, 0.5 * (tex[0, 1] + tex[0, 2]), atol=1e-6)
    np.testing.assert_allclose(cr.bilinear(tex, u + 3.0, v - 2.0), tex.reshape(-1, 4),
                               atol=1e-5)


def quad_part(tex, z=0.5, factor=(1, 1, 1, 1), alpha_mode="opaque"):
    """The unit square [0, 1]^2 at height z, uv = (x, y)."""
    p = np.array([[0, 0, z], [1, 0, z], [1, 1, z], [0, 1, z]], float)
    uv = p[:, :2]
    f = np.array([[0, 1, 2], [0, 2, 3]])
    return cr.Part(p[f], uv=uv[f], texture=tex, factor=factor, alpha_mode=alpha_mode)


def checker_texture(n, c0, c1):
    i, j = np.mgrid[0:n, 0:n]
    odd = ((i + j) % 2).astype(np.float64)[..., None]
    rgb = np.asarray(c0) * (1 - odd) + np.asarray(c1) * odd
    return np.concatenate([rgb, np.ones((n, n, 1))], axis=2).astype(np.float32)


def tent_integral_1d(n, lo, hi, flip=False, m=20000):
    """The mean over [lo, hi] (uv units) of the 1D linear interpolation (repeat wrap, texel
    centres at (i + 0.5) / n) of x_i = i mod 2: an independent midpoint rule. flip: texel i
    counted from the other end (image rows run from the top, v from the bottom)."""
    t = lo + (np.arange(m) + 0.5) / m * (hi - lo)
    x = np.mod(1.0 - t if flip else t, 1.0) * n - 0.5
    i0 = np.floor(x).astype(int)
    f = x - i0
    return np.mean((i0 % n % 2) * (1 - f) + ((i0 + 1) % n % 2) * f)


@pytest.mark.parametrize("n,res", [(64, 4), (8, 32), (2, 16)])
def test_checkerboard_footprint_means(n, res):
    """Many squares per voxel: their mean; squares larger than voxels: the bilinear texture
    integrated over the voxel (checker = X + Y - 2XY, X and Y the 1D interpolations)."""
    c0, c1 = np.array([0.8, 0.1, 0.05]), np.array([0.02, 0.3, 0.9])
    part = quad_part(checker_texture(n, c0, c1))
    grid = cr.Grid((0, 0, 0), 1.0 / res, res)
    fp = cr.footprint_reference([part], grid, texel_density=3.0)[0]
    assert len(fp.keys) == res * res  # every cell of the plane z = 0.5, nothing else
    cen = grid.centres(fp.keys)
    assert np.allclose(cen[:, 2], (np.floor(0.5 * res) + 0.5) / res)
    np.testing.assert_allclose(fp.area, 1.0 / res ** 2, rtol=1e-9)
    for key, rgb, c in zip(fp.keys, fp.rgb, cen):
        lo = c[:2] - 0.5 / res
        hi = c[:2] + 0.5 / res
        x = tent_integral_1d(n, lo[0], hi[0])
        y = tent_integral_1d(n, lo[1], hi[1], flip=True)
        share = x + y - 2 * x * y  # separable: the mean of X Y is mean X times mean Y
        np.testing.assert_allclose(rgb, c0 + (c1 - c0) * share, atol=2e-3)
    if n >= 4 * res:
        np.testing.assert_allclose(fp.rgb, np.tile(0.5 * (c0 + c1), (res * res, 1)), atol=2e-3)


def cube_parts(lo=0.2, hi=0.8):
    """Six faces of the cube [lo, hi]^3, each a part with its own material colour."""
    colours = [(0.9, 0.1, 0.1, 1), (0.1, 0.9, 0.1, 1), (0.1, 0.1, 0.9, 1),
               (0.9, 0.9, 0.1, 1), (0.1, 0.9, 0.9, 1), (0.9, 0.1, 0.9, 1)]
    parts = []
    for axis in range(3):
        for side, v in enumerate((lo, hi)):
            q = np.array([[lo, lo], [hi, lo], [hi, hi], [lo, hi]])
            p = np.insert(q, axis, v, axis=1)
            tris = p[np.array([[0, 1, 2], [0, 2, 3]])]
            parts.append(cr.Part(tris, factor=colours[2 * axis + side]))
    return parts, np.array(colours)[:, :3]


def test_cube_face_colours_and_their_means_at_coarse_levels():
    parts, colours = cube_parts()
    grid = cr.Grid((0, 0, 0), 1.0 / 16, 16)
    levels = cr.footprint_reference(parts, grid, coarser=4)
    fine = levels[0]
    g = np.floor((grid.centres(fine.keys) - grid.origin) / grid.scale).astype(int)
    lo_c, hi_c = int(0.2 * 16), int(0.8 * 16)  # the cells holding the faces: 3 and 12
    for axis in range(3):
        for side, c in enumerate((lo_c, hi_c)):
            others = [a for a in range(3) if a != axis]
            interior = (g[:, axis] == c) & np.all((g[:, others] > lo_c) & (g[:, others] < hi_c),
                                                  axis=1)
            assert interior.sum() == (hi_c - lo_c - 1) ** 2
            np.testing.assert_allclose(fine.rgb[interior], np.tile(colours[2 * axis + side],
                                                                   (interior.sum(), 1)),
                                       atol=1e-12)
    # level 0 (one cell): the mean of the six equal faces; level 1: each octant holds a
    # quarter of three faces
    root = levels[4]
    assert len(root.keys) == 1
    np.testing.assert_allclose(root.rgb[0], colours.mean(axis=0), atol=1e-9)
    np.testing.assert_allclose(root.area[0], 6 * 0.6 ** 2, rtol=1e-9)
    l1 = levels[3]
    assert len(l1.keys) == 8
    for key, rgb in zip(l1.keys, l1.rgb):
        i, rem = divmod(int(key), 4)  # res 2: key = (i * 2 + j) * 2 + k
        j, k = divmod(rem, 2)
        o = np.array([i, j, k])  # octant: 0 -> low faces, 1 -> high faces
        want = np.mean([colours[2 * a + o[a]] for a in range(3)], axis=0)
        np.testing.assert_allclose(rgb, want, atol=1e-9)


def test_vertex_colours_mean_is_the_corner_mean():
    corners = np.array([[[1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 1.0], [0.0, 0.0, 1.0, 1.0]]])
    tri = np.array([[[0.1, 0.1, 0.3], [0.9, 0.2, 0.3], [0.3, 0.8, 0.3]]])
    grid = cr.Grid((0, 0, 0), 1.0, 1)
    fp = cr.footprint_reference([cr.Part(tri, corners=corners)], grid)[0]
    np.testing.assert_allclose(fp.rgb[0], [1 / 3, 1 / 3, 1 / 3], atol=1e-12)


def test_alpha_mask_makes_holes_and_blend_weights():
    tex = np.ones((4, 4, 4), np.float32) * np.array([0.2, 0.4, 0.6, 1.0], np.float32)
    tex[:, :2, 3] = 0.0  # the left half (u < 0.5) cut out
    grid = cr.Grid((0, 0, 0), 0.25, 4)
    fp = cr.footprint_reference([quad_part(tex, alpha_mode="mask")], grid, texel_density=4.0)[0]
    cx = grid.centres(fp.keys)[:, 0]
    left, right = cx < 0.25, cx > 0.75  # away from the bilinear transition at u = 0.5
    assert np.all(fp.alpha[left] == 0) and np.all(np.isnan(fp.rgb[left]))
    assert np.all(fp.alpha[right] == 1)
    np.testing.assert_allclose(fp.rgb[right], np.tile([0.2, 0.4, 0.6], (right.sum(), 1)),
                               atol=1e-6)
    # blend: two triangles in one cell, alpha 1 red and alpha 1/3 blue, equal areas
    p = np.array([[0.1, 0.1, 0.5], [0.9, 0.1, 0.5], [0.9, 0.9, 0.5], [0.1, 0.9, 0.5]])
    a = cr.Part(p[[[0, 1, 2]]], factor=(1, 0, 0, 1), alpha_mode="blend")
    b = cr.Part(p[[[0, 2, 3]]], factor=(0, 0, 1, 1 / 3), alpha_mode="blend")
    fp = cr.footprint_reference([a, b], cr.Grid((0, 0, 0), 1.0, 1))[0]
    np.testing.assert_allclose(fp.rgb[0], [0.75, 0, 0.25], atol=1e-12)
    np.testing.assert_allclose(fp.alpha[0], 2 / 3, atol=1e-12)


def test_dominant_distances():
    """One cell holding a red and a blue triangle of equal area: red is a colour of the
    footprint (distance 0 to a part and to a sample), their mean (purple) is none."""
    p = np.array([[0.1, 0.1, 0.5], [0.9, 0.1, 0.5], [0.9, 0.9, 0.5], [0.1, 0.9, 0.5]])
    parts = [cr.Part(p[[[0, 1, 2]]], factor=(1, 0, 0, 1)),
             cr.Part(p[[[0, 2, 3]]], factor=(0, 0, 1, 1))]
    grid = cr.Grid((0, 0, 0), 1.0, 1)
    keys = cr.footprint_reference(parts, grid)[0].keys
    red = cr.linear_to_lab(np.array([[1.0, 0, 0]]))
    mean = cr.linear_to_lab(np.array([[0.5, 0, 0.5]]))
    s, q = cr.dominant_distances(parts, grid, keys, red)
    assert s[0] < 1e-9 and q[0] < 1e-9
    s, q = cr.dominant_distances(parts, grid, keys, mean)
    assert s[0] > 10 and q[0] > 10


def test_nearest_texel():
    """nearest() returns the texel holding uv: rows top first, repeat wrap, no blending."""
    tex = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)  # 2 rows, 3 columns
    u = np.array([0.1, 0.5, 0.9, 0.1, 1.1, -0.2])
    v = np.array([0.9, 0.9, 0.9, 0.1, 0.9, 0.1])
    got = cr.nearest(tex, u, v)
    want = tex[[0, 0, 0, 1, 0, 1], [0, 1, 2, 0, 0, 2]]
    np.testing.assert_array_equal(got, want)


def test_render_reference_draws_the_nearest_surface():
    """Two parallel squares facing the camera: the nearer one's colour in the middle of the
    picture, the background in the corners."""
    def square(z, colour):
        p = np.array([[-1, -1, z], [1, -1, z], [1, 1, z], [-1, 1, z]], float)
        return cr.Part(p[np.array([[0, 1, 2], [0, 2, 3]])], factor=colour)
    parts = [square(0.0, (0.0, 0.0, 1.0, 1.0)), square(0.5, (1.0, 0.0, 0.0, 1.0))]
    img = cr.render_reference(parts, eye=(0, 0, 5), target=(0, 0, 0), fov=40, width=64,
                              height=48, background=(7, 7, 7))
    assert img.shape == (48, 64, 3)
    assert tuple(img[24, 32]) == (255, 0, 0)
    assert tuple(img[0, 0]) == (7, 7, 7)
    # the square's half-size 1 at distance 4.5 spans tan^-1(1/4.5) of the 20 degree half-fov
    half = np.tan(np.arctan(1 / 4.5)) / np.tan(np.radians(20)) * 24
    row = img[24]
    red = np.flatnonzero((row == [255, 0, 0]).all(axis=1))
    assert abs((red[-1] - red[0] + 1) / 2 - half) <= 1.5


# ---------------------------------------------------------------- the measurement's plumbing

class FakeTree:
    """What bench/color_quality.py uses of a voxlod Tree: the grid and colors(points, lod);
    colours from a function of the point (the analytic albedo), alpha 255."""

    def __init__(self, origin, scale, depth, albedo):
        self.origin, self.scale, self.depth = tuple(origin), scale, depth
        self.resolution = 1 << depth
        self.albedo = albedo
        self.lods = []

    def colors(self, points, lod=None):
        self.lods.append(lod)
        rgb = cr.linear_to_srgb8(self.albedo(np.asarray(points)))
        return np.concatenate([rgb, np.full((len(rgb), 1), 255, np.uint8)], axis=1)


def two_colour_obj(tmp_path, scale=1.0):
    """Two quads in the plane z = 0.3, x < 0.5 red (a material), x > 0.5 vertex colours
    (all blue), written as OBJ + MTL with negative indices."""
    (tmp_path / "m.mtl").write_text("newmtl red\nKd 0.9 0.05 0.02\n")
    s = scale
    (tmp_path / "m.obj").write_text(
        "mtllib m.mtl\nusemtl red\n"
        f"v 0 0 {0.3 * s}\nv {0.5 * s} 0 {0.3 * s}\nv {0.5 * s} {s} {0.3 * s}\n"
        f"v 0 {s} {0.3 * s}\nf -4 -3 -2 -1\n"
        "usemtl none\n"
        f"v {0.5 * s} 0 {0.3 * s} 0 0 1\nv {s} 0 {0.3 * s} 0 0 1\nv {s} {s} {0.3 * s} 0 0 1\n"
        f"v {0.5 * s} {s} {0.3 * s} 0 0 1\nf 5 6 7 8\n")
    return tmp_path / "m.obj"


def test_measure_compares_each_voxel_with_its_footprint(tmp_path):
    import color_quality as cq
    parts = cq.load_parts(two_colour_obj(tmp_path))
    assert sorted(len(p.tris) for p in parts) == [2, 2]
    red, blue = np.array([0.9, 0.05, 0.02]), np.array([0.0, 0.0, 1.0])
    tree = FakeTree((0, 0, 0), 1 / 8, 3, lambda p: np.where(p[:, :1] < 0.5, red, blue))
    rows = cq.measure(parts, tree, coarser=3)
    assert [r["level"] for r in rows] == [3, 2, 1, 0]
    assert tree.lods == [None, 2, 1, 0]
    fine = rows[0]
    assert fine["cells"] == fine["compared"] == 64 and fine["missing"] == 0
    assert fine["max"] < 0.5  # only the 8-bit rounding of the fake tree
    # level 0: one cell holding both halves (reference: their mean), the fake says blue
    root = rows[3]
    assert root["compared"] == 1
    want = cr.ciede2000(cr.srgb8_to_lab(cr.linear_to_srgb8(blue)),
                        cr.linear_to_lab(0.5 * (red + blue)))
    assert root["mean"] == pytest.approx(float(want), abs=0.5)
    assert root["mean"] > 10


def test_align_maps_a_rescaled_mesh_onto_the_tree(tmp_path):
    """A mesh read at 100 times voxlod's size (a unit scale one reader ignored) is mapped
    onto the tree's grid before the footprints are taken."""
    import color_quality as cq
    parts = cq.load_parts(two_colour_obj(tmp_path, scale=100.0))
    tree = FakeTree((0, -0.5 + 0.5, 0.3 - 0.5), 1 / 8, 3, lambda p: np.zeros((len(p), 3)))
    moved = cq.align(parts, tree)
    allp = np.concatenate([p.tris.reshape(-1, 3) for p in moved])
    np.testing.assert_allclose(allp.min(axis=0), [0, 0, 0.3], atol=1e-9)
    np.testing.assert_allclose(allp.max(axis=0), [1, 1, 0.3], atol=1e-9)


def test_faces_on_the_grid_boundary_belong_to_the_boundary_cells():
    """A square lying in the plane x = res (the grid's far side, where voxlod's bounding box
    puts a mesh's extreme face) falls into the last layer of cells, not outside."""
    p = np.array([[1.0, 0, 0], [1.0, 1, 0], [1.0, 1, 1], [1.0, 0, 1]])
    part = cr.Part(p[np.array([[0, 1, 2], [0, 2, 3]])], factor=(0.2, 0.3, 0.4, 1))
    st = {}
    fp = cr.footprint_reference([part], cr.Grid((0, 0, 0), 0.25, 4), stats=st)[0]
    assert len(fp.keys) == 16 and st["outside"] == 0
    assert np.all(cr.Grid((0, 0, 0), 0.25, 4).cells(fp.keys)[:, 0] == 3)
    np.testing.assert_allclose(fp.area.sum(), 1.0, rtol=1e-12)


def test_minified_texture_mean_through_mip_levels():
    """One cell holding a whole quad whose 64^2 random texture is sampled with at most 4^2
    samples per triangle: the samples read a box-filtered level, so the cell still gets the
    mean of all 4,096 texels (the integral of a bilinear texture over whole periods)."""
    rng = np.random.default_rng(5)
    tex = np.concatenate([rng.uniform(0, 1, (64, 64, 3)), np.ones((64, 64, 1))], axis=2)
    want = tex[:, :, :3].reshape(-1, 3).mean(axis=0)
    fp = cr.footprint_reference([quad_part(tex)], cr.Grid((0, 0, 0), 1.0, 1), cap=4)[0]
    np.testing.assert_allclose(fp.rgb[0], want, atol=1e-6)
    # the same lattice on the full-size texture alone misses the mean by far more
    part = quad_part(tex)
    b = cr.lattice(4)
    rgba, _ = cr.shade(part, np.repeat([0, 1], 16), np.tile(b, (2, 1)))
    assert np.abs(rgba[:, :3].mean(axis=0) - want).max() > 4e-3


def test_worker_processes_give_the_same_reference():
    """The reference split over forked workers and many small jobs equals the one-process one
    (up to the order of float64 sums), for the footprints and the dominant check."""
    parts, _ = cube_parts()
    tex = checker_texture(8, (0.9, 0.2, 0.1), (0.1, 0.2, 0.9))
    parts.append(quad_part(tex, z=0.55))
    grid = cr.Grid((0, 0, 0), 1.0 / 16, 16)
    one = cr.footprint_reference(parts, grid, coarser=2)
    many = cr.footprint_reference(parts, grid, coarser=2, workers=2, piece_chunk=16)
    for a, b in zip(one, many):
        assert np.array_equal(a.keys, b.keys)
        np.testing.assert_allclose(a.rgb, b.rgb, rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.area, b.area, rtol=1e-12)
    lab = cr.linear_to_lab(one[0].rgb)
    s1, p1 = cr.dominant_distances(parts, grid, one[0].keys, lab)
    s2, p2 = cr.dominant_distances(parts, grid, one[0].keys, lab, workers=2, piece_chunk=16)
    np.testing.assert_allclose(s1, s2, atol=1e-12)
    np.testing.assert_allclose(p1, p2, atol=1e-12)
    assert np.isfinite(s1).all() and np.isfinite(p1).all()
