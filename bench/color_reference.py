# SPDX-License-Identifier: Apache-2.0
"""An independent colour reference for voxlod's coloured trees (numpy only, shares no code with
the library): colour science (sRGB transfer, CIELAB, CIEDE2000), the texture colour of a surface
filtered over each voxel's footprint by dense supersampling, and a point-splatting reference
renderer. bench/color_quality.py measures voxlod against it; python/tests/test_color_reference.py
checks it against published data and analytic means.

Surface model (the glTF / OBJ reading of a material, as issue text and svo/soup.h state it): a
triangle's colour at barycentric weights w is
  texture:          factor x bilinear(texture, sum w_k uv_k)    (uv wrapped: repeat)
  vertex colours:   sum w_k corner_k
  else:             factor
products and sums in linear light. Alpha: "opaque" ignores it, "mask" makes a sample opaque when
alpha >= cutoff and a hole otherwise, "blend" weights the colour by alpha.

Footprint reference: every triangle is cut into s^2 congruent sub-triangles (s per triangle, see
subdivisions()) and each sub-triangle's centroid is one sample of weight area / s^2, so the
samples integrate the triangle's area exactly and uniformly. A voxel's reference colour is the sum
of (opaque weight x linear colour) of the samples inside it over the sum of their opaque weights,
accumulated in float64: the area-weighted mean in linear light of the texture over the voxel's
footprint.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Sequence, Tuple

import numpy as np

# ---------------------------------------------------------------- colour science

#: linear sRGB -> CIE XYZ (IEC 61966-2-1, D65 white).
SRGB_TO_XYZ = np.array([[0.4124, 0.3576, 0.1805],
                        [0.2126, 0.7152, 0.0722],
                        [0.0193, 0.1192, 0.9505]])
#: The white point: XYZ of linear (1, 1, 1), so that sRGB white is L* 100, a* = b* = 0 exactly.
WHITE = SRGB_TO_XYZ.sum(axis=1)
_EPS = (6.0 / 29.0) ** 3
_KAPPA = 3.0 * (6.0 / 29.0) ** 2


def srgb_to_linear(c):
    """sRGB-encoded values in [0, 1] -> linear light (IEC 61966-2-1), float64."""
    c = np.asarray(c, dtype=np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_to_srgb(c):
    """Linear light -> sRGB-encoded values, clamped to [0, 1], float64."""
    c = np.clip(np.asarray(c, dtype=np.float64), 0.0, 1.0)
    return np.where(c <= 0.0031308, c * 12.92, 1.055 * c ** (1.0 / 2.4) - 0.055)


def srgb8_to_linear(c):
    """uint8 sRGB -> linear light in [0, 1] (float64)."""
    return srgb_to_linear(np.asarray(c, dtype=np.float64) / 255.0)


def linear_to_srgb8(c):
    """Linear light -> uint8 sRGB (rounded)."""
    return np.floor(linear_to_srgb(c) * 255.0 + 0.5).astype(np.uint8)


def linear_to_lab(rgb):
    """Linear sRGB (..., 3) -> CIELAB (..., 3), D65."""
    xyz = np.asarray(rgb, dtype=np.float64) @ SRGB_TO_XYZ.T / WHITE
    f = np.where(xyz > _EPS, np.cbrt(np.maximum(xyz, _EPS)), xyz / _KAPPA + 4.0 / 29.0)
    return np.stack([116.0 * f[..., 1] - 16.0, 500.0 * (f[..., 0] - f[..., 1]),
                     200.0 * (f[..., 1] - f[..., 2])], axis=-1)


def lab_to_linear(lab):
    """CIELAB (..., 3) -> linear sRGB (..., 3), D65 (not clamped: out-of-gamut stays outside)."""
    lab = np.asarray(lab, dtype=np.float64)
    fy = (lab[..., 0] + 16.0) / 116.0
    f = np.stack([fy + lab[..., 1] / 500.0, fy, fy - lab[..., 2] / 200.0], axis=-1)
    xyz = np.where(f > 6.0 / 29.0, f ** 3, _KAPPA * (f - 4.0 / 29.0)) * WHITE
    return xyz @ np.linalg.inv(SRGB_TO_XYZ).T


def srgb8_to_lab(c):
    """uint8 sRGB (..., 3) -> CIELAB."""
    return linear_to_lab(srgb8_to_linear(c))


def ciede2000(lab1, lab2, kl=1.0, kc=1.0, kh=1.0):
    """CIEDE2000 colour difference between CIELAB arrays (..., 3), vectorized (float64).

    The formula as written by Sharma, Wu and Dalal, "The CIEDE2000 color-difference formula:
    implementation notes, supplementary test data, and mathematical observations", Color Res.
    Appl. 30(1), 2005 (eqs. 2-22), including their rules for zero chroma and for the mean hue
    of hues more than 180 degrees apart."""
    lab1 = np.asarray(lab1, dtype=np.float64)
    lab2 = np.asarray(lab2, dtype=np.float64)
    l1, a1, b1 = lab1[..., 0], lab1[..., 1], lab1[..., 2]
    l2, a2, b2 = lab2[..., 0], lab2[..., 1], lab2[..., 2]
    cab = 0.5 * (np.hypot(a1, b1) + np.hypot(a2, b2))
    c7 = cab ** 7
    g = 0.5 * (1.0 - np.sqrt(c7 / (c7 + 25.0 ** 7)))
    a1p, a2p = (1.0 + g) * a1, (1.0 + g) * a2
    c1p, c2p = np.hypot(a1p, b1), np.hypot(a2p, b2)
    h1p = np.where(c1p == 0.0, 0.0, np.degrees(np.arctan2(b1, a1p)) % 360.0)
    h2p = np.where(c2p == 0.0, 0.0, np.degrees(np.arctan2(b2, a2p)) % 360.0)
    zero = c1p * c2p == 0.0
    dlp = l2 - l1
    dcp = c2p - c1p
    dh = h2p - h1p
    dh = np.where(dh > 180.0, dh - 360.0, np.where(dh < -180.0, dh + 360.0, dh))
    dh = np.where(zero, 0.0, dh)
    dhp = 2.0 * np.sqrt(c1p * c2p) * np.sin(np.radians(0.5 * dh))
    lm = 0.5 * (l1 + l2)
    cm = 0.5 * (c1p + c2p)
    hs = h1p + h2p
    hm = np.where(zero, hs,
                  np.where(np.abs(h1p - h2p) <= 180.0, 0.5 * hs,
                           np.where(hs < 360.0, 0.5 * (hs + 360.0), 0.5 * (hs - 360.0))))
    t = (1.0 - 0.17 * np.cos(np.radians(hm - 30.0)) + 0.24 * np.cos(np.radians(2.0 * hm))
         + 0.32 * np.cos(np.radians(3.0 * hm + 6.0)) - 0.20 * np.cos(np.radians(4.0 * hm - 63.0)))
    dtheta = 30.0 * np.exp(-(((hm - 275.0) / 25.0) ** 2))
    cm7 = cm ** 7
    rc = 2.0 * np.sqrt(cm7 / (cm7 + 25.0 ** 7))
    l50 = (lm - 50.0) ** 2
    sl = 1.0 + 0.015 * l50 / np.sqrt(20.0 + l50)
    sc = 1.0 + 0.045 * cm
    sh = 1.0 + 0.015 * cm * t
    rt = -np.sin(np.radians(2.0 * dtheta)) * rc
    x, y, z = dlp / (kl * sl), dcp / (kc * sc), dhp / (kh * sh)
    return np.sqrt(np.maximum(x * x + y * y + z * z + rt * y * z, 0.0))


# ---------------------------------------------------------------- surfaces

class Part:
    """Triangles that share one material: world positions (T, 3, 3) float64, and either uv
    (T, 3, 2) with a linear RGBA texture (H, W, 4) float32 (row 0 = the top of the image, uv
    (0, 0) its bottom-left corner), or linear RGBA corner colours (T, 3, 4), or only the linear
    RGBA factor. alpha_mode: "opaque", "mask" (cutoff) or "blend"."""

    __slots__ = ("name", "tris", "uv", "texture", "corners", "factor", "alpha_mode", "cutoff",
                 "_mips")

    def __init__(self, tris, uv=None, texture=None, corners=None, factor=(1.0, 1.0, 1.0, 1.0),
                 alpha_mode="opaque", cutoff=0.5, name=""):
        self.name = name
        self._mips = None
        self.tris = np.ascontiguousarray(tris, dtype=np.float64).reshape(-1, 3, 3)
        self.texture = None if texture is None else np.ascontiguousarray(texture, np.float32)
        self.uv = None
        if self.texture is not None:
            if self.texture.ndim != 3 or self.texture.shape[2] != 4:
                raise ValueError("texture must be (H, W, 4) linear RGBA")
            uv = np.asarray(uv, dtype=np.float64).reshape(-1, 3, 2)
            self.uv = np.where(np.isfinite(uv), uv, 0.0)
        self.corners = None if corners is None else \
            np.asarray(corners, dtype=np.float64).reshape(-1, 3, 4)
        self.factor = np.asarray(factor, dtype=np.float64).reshape(4)
        if alpha_mode not in ("opaque", "mask", "blend"):
            raise ValueError(f"alpha_mode must be opaque, mask or blend, not {alpha_mode!r}")
        self.alpha_mode = alpha_mode
        self.cutoff = float(cutoff)

    def mip(self, level):
        """The texture box-filtered `level` times (2 x 2 texels in linear light, wrapping at
        odd sizes): texel size 2^level of the original."""
        if self._mips is None:
            self._mips = [self.texture]
        while len(self._mips) <= level:
            t = self._mips[-1].astype(np.float64)
            h, w = t.shape[:2]
            r0, r1 = np.arange(0, h, 2), np.arange(1, h + 1, 2) % h
            c0, c1 = np.arange(0, w, 2), np.arange(1, w + 1, 2) % w
            t = 0.25 * (t[r0][:, c0] + t[r0][:, c1] + t[r1][:, c0] + t[r1][:, c1])
            self._mips.append(t.astype(np.float32))
        return self._mips[level]


def bilinear(tex, u, v):
    """Bilinear lookup of a (H, W, C) texture at uv (repeat wrap; texel centres at
    ((x + 0.5) / W, 1 - (y + 0.5) / H)), float64 (N, C)."""
    h, w = tex.shape[:2]
    x = np.mod(u, 1.0) * w - 0.5
    y = np.mod(1.0 - v, 1.0) * h - 0.5
    x0 = np.floor(x)
    y0 = np.floor(y)
    fx = (x - x0)[:, None]
    fy = (y - y0)[:, None]
    x0 = x0.astype(np.int64) % w
    y0 = y0.astype(np.int64) % h
    x1 = (x0 + 1) % w
    y1 = (y0 + 1) % h
    t00 = tex[y0, x0].astype(np.float64)
    t01 = tex[y0, x1].astype(np.float64)
    t10 = tex[y1, x0].astype(np.float64)
    t11 = tex[y1, x1].astype(np.float64)
    return (t00 * (1 - fx) + t01 * fx) * (1 - fy) + (t10 * (1 - fx) + t11 * fx) * fy


_LATTICES: Dict[int, np.ndarray] = {}


def lattice(s):
    """Barycentric (b1, b2) of the centroids of the s^2 congruent sub-triangles of a triangle cut
    s times along each edge: (s^2, 2) float64."""
    if s not in _LATTICES:
        i, j = np.meshgrid(np.arange(s), np.arange(s), indexing="ij")
        up = (i + j) <= s - 1
        down = (i + j) <= s - 2
        a = np.concatenate([(i[up] + 1.0 / 3.0), (i[down] + 2.0 / 3.0)]) / s
        b = np.concatenate([(j[up] + 1.0 / 3.0), (j[down] + 2.0 / 3.0)]) / s
        _LATTICES[s] = np.stack([a, b], axis=1)
        if len(_LATTICES) > 64:
            _LATTICES.pop(next(iter(_LATTICES)))
    return _LATTICES[s]


def subdivisions(part, voxel, density=2.0, cap=1024, texel_rate=True):
    """Per triangle s (>= 1): at least `density` samples per voxel edge length (voxel: world
    size of the finest voxel compared) and, with texel_rate, per texel edge length along the
    triangle's longest edge, in world and in texel units, capped at `cap` (cap^2 samples).
    Returns (s int64, capped bool)."""
    t = part.tris
    e = np.stack([t[:, 1] - t[:, 0], t[:, 2] - t[:, 1], t[:, 0] - t[:, 2]], axis=1)
    need = np.linalg.norm(e, axis=2).max(axis=1) / voxel
    if part.texture is not None and texel_rate:
        h, w = part.texture.shape[:2]
        uv = part.uv
        d = np.stack([uv[:, 1] - uv[:, 0], uv[:, 2] - uv[:, 1], uv[:, 0] - uv[:, 2]], axis=1)
        d = d * np.array([w, h], dtype=np.float64)
        need = np.maximum(need, np.linalg.norm(d, axis=2).max(axis=1))
    need = np.where(np.isfinite(need), need, cap)
    s = np.ceil(density * need).astype(np.int64)
    capped = s > cap
    return np.clip(s, 1, cap), capped


def triangle_areas(tris):
    return 0.5 * np.linalg.norm(np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]), axis=1)


def nearest(tex, u, v):
    """The texel of a (H, W, C) texture holding uv (repeat wrap, rows top first), float64."""
    h, w = tex.shape[:2]
    x = np.floor(np.mod(u, 1.0) * w).astype(np.int64) % w
    y = np.floor(np.mod(1.0 - v, 1.0) * h).astype(np.int64) % h
    return tex[y, x].astype(np.float64)


def shade(part, idx, bary, level=None, texel=False):
    """Linear RGBA (N, 4) and opaque weight (N,) of the samples: triangles idx (N,) of `part`
    at barycentric (N, 2) = (b1, b2), b0 = 1 - b1 - b2; level (N,): the texture's mip level
    to read at each sample (None: the texture itself); texel: the texel holding each sample
    instead of the bilinear value (the colours the dominant filter may pick)."""
    b1, b2 = bary[:, 0], bary[:, 1]
    b0 = 1.0 - b1 - b2
    if part.texture is not None:
        uv = part.uv[idx]
        u = b0 * uv[:, 0, 0] + b1 * uv[:, 1, 0] + b2 * uv[:, 2, 0]
        v = b0 * uv[:, 0, 1] + b1 * uv[:, 1, 1] + b2 * uv[:, 2, 1]
        if texel:
            rgba = nearest(part.texture, u, v) * part.factor
        elif level is None or not np.any(level):
            rgba = bilinear(part.texture, u, v) * part.factor
        else:
            rgba = np.empty((len(u), 4))
            for lv in np.unique(level):
                m = level == lv
                rgba[m] = bilinear(part.mip(int(lv)), u[m], v[m])
            rgba *= part.factor
    elif part.corners is not None:
        c = part.corners[idx]
        rgba = b0[:, None] * c[:, 0] + b1[:, None] * c[:, 1] + b2[:, None] * c[:, 2]
    else:
        rgba = np.broadcast_to(part.factor, (len(idx), 4)).copy()
    a = rgba[:, 3]
    if part.alpha_mode == "opaque":
        op = np.ones_like(a)
    elif part.alpha_mode == "mask":
        op = (a >= part.cutoff).astype(np.float64)
    else:
        op = np.clip(a, 0.0, 1.0)
    return rgba, op


def samples(parts: Sequence[Part], voxel: float, density=2.0, cap=1024, chunk=1 << 21,
            texel_rate=True) -> Iterator[Tuple[np.ndarray, ...]]:
    """Dense uniform samples of every triangle, in chunks that hold whole triangles:
    yields (positions (N, 3), linear rgba (N, 4), area weight (N,), opaque share (N,), global
    triangle id (N,)). Triangle ids count across parts in order."""
    base = 0
    for part in parts:
        n = len(part.tris)
        if n == 0:
            continue
        s_all, _ = subdivisions(part, voxel, density, cap, texel_rate)
        area = triangle_areas(part.tris)
        order = np.argsort(s_all, kind="stable")
        s_sorted = s_all[order]
        bounds = np.flatnonzero(np.diff(s_sorted)) + 1
        for grp in np.split(np.arange(n), bounds):
            if len(grp) == 0:
                continue
            s = int(s_sorted[grp[0]])
            lat = lattice(s)
            per = max(1, chunk // (s * s))
            tri_ids = order[grp]
            for k in range(0, len(tri_ids), per):
                ids = tri_ids[k:k + per]
                idx = np.repeat(ids, s * s)
                bary = np.tile(lat, (len(ids), 1))
                t = part.tris[idx]
                b1, b2 = bary[:, :1], bary[:, 1:]
                pos = t[:, 0] + b1 * (t[:, 1] - t[:, 0]) + b2 * (t[:, 2] - t[:, 0])
                rgba, op = shade(part, idx, bary)
                w = area[idx] / (s * s)
                yield pos, rgba, w, op, idx + base
        base += n


# ---------------------------------------------------------------- footprint reference

class Grid:
    """voxlod's grid: world = origin + grid * scale, `res` finest voxels per axis."""

    def __init__(self, origin, scale, res):
        self.origin = np.asarray(origin, dtype=np.float64).reshape(3)
        self.scale = float(scale)
        self.res = int(res)

    def key(self, cells, level_shift=0):
        """Linear index ((i * r + j) * r + k) of integer cells (N, 3) at res >> level_shift."""
        r = self.res >> level_shift
        c = np.asarray(cells, dtype=np.int64)
        return (c[:, 0] * r + c[:, 1]) * r + c[:, 2]

    def cells(self, keys, level_shift=0):
        r = self.res >> level_shift
        i, rem = np.divmod(np.asarray(keys, dtype=np.int64), r * r)
        j, k = np.divmod(rem, r)
        return np.stack([i, j, k], axis=1)

    def centres(self, keys, level_shift=0):
        """World centres of the cells given by linear index at res >> level_shift."""
        g = self.cells(keys, level_shift).astype(np.float64) + 0.5
        return self.origin + g * self.scale * (1 << level_shift)

    def parent_keys(self, keys, level_shift):
        """Finest-level keys -> the keys of their ancestors `level_shift` levels up."""
        return self.key(self.cells(keys) >> level_shift, level_shift)


_MAXV = 10  # a triangle clipped by 6 planes has at most 9 vertices


def _clip(v, n, axis, plane, keep_below):
    """Clips convex polygons v (N, _MAXV, C) with n (N,) vertices (columns 0..2: grid
    position; the rest interpolated along) to x[axis] <= plane (keep_below) or >= plane."""
    m = v.shape[1]
    d = v[:, :, axis] - plane[:, None]
    if not keep_below:
        d = -d
    col = np.arange(m)[None, :]
    valid = col < n[:, None]
    nxt = (col + 1) % np.maximum(n[:, None], 1)
    vn = np.take_along_axis(v, nxt[:, :, None], axis=1)
    dn = np.take_along_axis(d, nxt, axis=1)
    inside = d <= 0.0
    cross = valid & (inside != (dn <= 0.0))
    t = np.where(cross, d / np.where(cross, d - dn, 1.0), 0.0)
    x = v + t[:, :, None] * (vn - v)
    cand = np.stack([v, x], axis=2).reshape(len(v), 2 * m, v.shape[2])
    emit = np.stack([valid & inside, cross], axis=2).reshape(len(v), 2 * m)
    order = np.argsort(~emit, axis=1, kind="stable")[:, :m]
    out = np.take_along_axis(cand, order[:, :, None], axis=1)
    n2 = emit.sum(axis=1)
    if np.any(n2 > m):
        raise AssertionError("clipped polygon with more vertices than a triangle can get")
    return out, n2


def _split(v, n, cells, src, axis):
    """Cuts polygons at the integer planes of one axis: pieces with their cell along it."""
    col = np.arange(v.shape[1])[None, :]
    valid = col < n[:, None]
    x = v[:, :, axis]
    lo = np.floor(np.where(valid, x, np.inf).min(axis=1)).astype(np.int64)
    hi = np.maximum(lo, np.ceil(np.where(valid, x, -np.inf).max(axis=1)).astype(np.int64) - 1)
    outs = []
    while len(v):
        last = lo >= hi
        c = cells[last].copy()
        c[:, axis] = lo[last]
        outs.append((v[last], n[last], c, src[last]))
        keep = ~last
        v, n, cells, src, lo, hi = v[keep], n[keep], cells[keep], src[keep], lo[keep], hi[keep]
        if not len(v):
            break
        plane = (lo + 1).astype(np.float64)
        lv, ln = _clip(v, n, axis, plane, True)
        c = cells.copy()
        c[:, axis] = lo
        ok = ln >= 3
        outs.append((lv[ok], ln[ok], c[ok], src[ok]))
        v, n = _clip(v, n, axis, plane, False)
        lo = lo + 1
        ok = n >= 3
        v, n, cells, src, lo, hi = v[ok], n[ok], cells[ok], src[ok], lo[ok], hi[ok]
    return (np.concatenate([o[0] for o in outs]), np.concatenate([o[1] for o in outs]),
            np.concatenate([o[2] for o in outs]), np.concatenate([o[3] for o in outs]))


def pieces(tris_grid):
    """Exact parts of triangles (T, 3, 3) (grid coordinates) inside each cell they cross:
    (fans (F, 3, 5): triangles (x, y, z, b1, b2) that tile the pieces, fan_piece (F,) their
    piece, piece_cell (P, 3) integer cells, piece_tri (P,) the source triangle)."""
    t = len(tris_grid)
    v = np.zeros((t, _MAXV, 5))
    v[:, :3, :3] = tris_grid
    v[:, 1, 3] = 1.0
    v[:, 2, 4] = 1.0
    n = np.full(t, 3)
    cells = np.zeros((t, 3), np.int64)
    src = np.arange(t)
    for axis in range(3):
        v, n, cells, src = _split(v, n, cells, src, axis)
    fans, owner = [], []
    for k in range(1, _MAXV - 1):
        has = n > k + 1
        if not np.any(has):
            break
        fans.append(np.stack([v[has, 0], v[has, k], v[has, k + 1]], axis=1))
        owner.append(np.flatnonzero(has))
    if not fans:
        return np.zeros((0, 3, 5)), np.zeros(0, np.int64), cells, src
    return np.concatenate(fans), np.concatenate(owner), cells, src


def _fan_subdivisions(part, fans, tri, texel_density, cap):
    """s per fan triangle: texel_density samples per texel along its longest edge in texture
    space (1 without a texture: the centroid integrates the linear vertex colours exactly), at
    most cap; and the mip level to sample: 0, or where s hit the cap, the coarsest level whose
    texels are at most the sample spacing (box-filtered, so the samples still average nearly
    every texel without blurring much across the piece's border)."""
    if part.texture is None or texel_density <= 0:
        return np.ones(len(fans), np.int64), np.zeros(len(fans), np.int64)
    h, w = part.texture.shape[:2]
    uv = part.uv[tri]  # (F, 3, 2)
    b = fans[:, :, 3:5]  # (F, 3 corners, 2)
    b0 = 1.0 - b[:, :, 0] - b[:, :, 1]
    cuv = (b0[:, :, None] * uv[:, None, 0] + b[:, :, 0:1] * uv[:, None, 1]
           + b[:, :, 1:2] * uv[:, None, 2])
    d = np.stack([cuv[:, 1] - cuv[:, 0], cuv[:, 2] - cuv[:, 1], cuv[:, 0] - cuv[:, 2]], axis=1)
    need = np.linalg.norm(d * np.array([w, h], np.float64), axis=2).max(axis=1)
    need = np.where(np.isfinite(need), need, cap)
    s = np.clip(np.ceil(texel_density * need).astype(np.int64), 1, cap)
    spacing = need / s  # texels between samples
    level = np.where(texel_density * need > cap,
                     np.floor(np.log2(np.maximum(spacing, 1.0))), 0.0).astype(np.int64)
    top = int(np.ceil(np.log2(max(h, w))))
    return s, np.clip(level, 0, top)


def _jobs(parts: Sequence[Part], grid: Grid, piece_chunk=1 << 17):
    """(part index, first triangle, end) ranges of whole triangles holding about piece_chunk
    pieces each (a triangle crosses about its area plus its perimeter in cells)."""
    jobs = []
    for pi, part in enumerate(parts):
        if not len(part.tris):
            continue
        g = (part.tris - grid.origin) / grid.scale
        e = np.linalg.norm(g - np.roll(g, 1, axis=1), axis=2).sum(axis=1)
        est = triangle_areas(g) + e + 1.0
        est = np.where(np.isfinite(est), est, 1.0)
        ends = np.searchsorted(np.cumsum(est), np.arange(1, int(est.sum() // piece_chunk) + 2)
                               * float(piece_chunk))
        starts = np.unique(np.concatenate([[0], ends]))
        starts = starts[starts < len(est)]
        jobs += [(pi, int(t0), int(t1)) for t0, t1 in zip(starts, list(starts[1:]) + [len(est)])]
    return jobs


def _piece_colours(part: Part, grid: Grid, tri, texel_density, cap, want_samples,
                   sample_chunk=1 << 20):
    """The pieces of triangles tri of part: (keys (P,) of the pieces inside the grid, sums
    (P, 5): area, opaque area, opaque-weighted linear rgb; stats; and with want_samples the
    samples (linear rgba (S, 4), opaque (S,), piece index into keys (S,)))."""
    g = (part.tris[tri] - grid.origin) / grid.scale
    fans, fan_piece, cells, src = pieces(g)
    # a face lying in the grid's last plane (coordinate == res) belongs to the last cell; a
    # piece further out than one cell is outside the grid (not compared)
    inside = np.all((cells >= -1) & (cells <= grid.res), axis=1)
    cells = np.clip(cells, 0, grid.res - 1)
    p0 = fans[:, 1, :3] - fans[:, 0, :3]
    p1 = fans[:, 2, :3] - fans[:, 0, :3]
    area = 0.5 * np.linalg.norm(np.cross(p0, p1), axis=1) * grid.scale ** 2
    ftri = tri[src[fan_piece]]
    s_all, lev_all = _fan_subdivisions(part, fans, ftri, texel_density, cap)
    st = {"pieces": len(cells), "outside": int((~inside).sum()),
          "samples": int((s_all * s_all).sum()), "capped_area": float(area[s_all >= cap].sum()),
          "area": float(area.sum())}
    npiece = len(cells)
    sums = np.zeros((npiece, 5))
    srgba, sop, spiece = [], [], []
    order = np.argsort(s_all, kind="stable")
    s_sorted = s_all[order]
    for grp in np.split(order, np.flatnonzero(np.diff(s_sorted)) + 1):
        if not len(grp):
            continue
        s = int(s_all[grp[0]])
        lat = lattice(s)
        per = max(1, sample_chunk // (s * s))
        for k in range(0, len(grp), per):
            ids = grp[k:k + per]
            f = np.repeat(ids, s * s)
            lb = np.tile(lat, (len(ids), 1))
            cb = fans[f, :, 3:5]  # corner barycentrics (S, 3, 2)
            bary = (cb[:, 0] + lb[:, 0:1] * (cb[:, 1] - cb[:, 0])
                    + lb[:, 1:2] * (cb[:, 2] - cb[:, 0]))
            rgba, op = shade(part, ftri[f], bary, lev_all[f])
            w = area[f] / (s * s)
            ow = w * op
            pc = fan_piece[f]
            sums[:, 0] += np.bincount(pc, weights=w, minlength=npiece)
            sums[:, 1] += np.bincount(pc, weights=ow, minlength=npiece)
            for c in range(3):
                sums[:, 2 + c] += np.bincount(pc, weights=ow * rgba[:, c], minlength=npiece)
            if want_samples:  # the dominant check: the texels under the samples
                trgba, top = shade(part, ftri[f], bary, None, texel=True)
                srgba.append(trgba)
                sop.append(top)
                spiece.append(pc)
    keys = grid.key(cells[inside])
    samples_out = None
    if want_samples:
        remap = np.cumsum(inside) - 1
        sp = np.concatenate(spiece) if spiece else np.zeros(0, np.int64)
        sk = inside[sp]
        samples_out = (np.concatenate(srgba)[sk] if srgba else np.zeros((0, 4)),
                       np.concatenate(sop)[sk] if sop else np.zeros(0), remap[sp[sk]])
    return keys, sums[inside], st, samples_out


_CTX: dict = {}  # what the worker processes read (inherited through fork)


def _run_job(job):
    c = _CTX
    pi, t0, t1 = job
    keys, sums, st, smp = _piece_colours(c["parts"][pi], c["grid"], np.arange(t0, t1),
                                         c["texel_density"], c["cap"], c["dominant"])
    if not c["dominant"]:
        return keys, sums, st
    # dominant checks: per cell, the smallest dE00 to a piece's colour and to a sample's
    ref, lab = c["keys"], c["lab"]
    slot = np.minimum(np.searchsorted(ref, keys), len(ref) - 1)
    found = ref[slot] == keys
    ok = found & (sums[:, 1] > 0)
    dp = ciede2000(linear_to_lab(sums[ok, 2:5] / sums[ok, 1:2]), lab[slot[ok]])
    rgba, op, sp = smp
    sok = np.flatnonzero(found[sp] & (op > 0))
    ss, sinv = np.unique(slot[sp[sok]], return_inverse=True)
    ds = np.full(len(ss), np.inf)
    for k in range(0, len(sok), 1 << 22):
        i = sok[k:k + (1 << 22)]
        d = ciede2000(linear_to_lab(rgba[i, :3]), lab[slot[sp[i]]])
        np.minimum.at(ds, sinv.ravel()[k:k + (1 << 22)], d)
    return slot[ok], dp, ss, ds, st


def _map(jobs, workers):
    """Runs _run_job over jobs, in `workers` forked processes when more than one."""
    if workers > 1 and len(jobs) > 1:
        import multiprocessing
        with multiprocessing.get_context("fork").Pool(min(workers, len(jobs))) as pool:
            yield from pool.imap_unordered(_run_job, jobs, chunksize=1)
    else:
        for j in jobs:
            yield _run_job(j)


def _add_stats(total, st):
    if total is not None:
        for k, v in st.items():
            total[k] = total.get(k, 0) + v


def _reduce(keys, cols):
    """Sums the rows of cols (N, C) that share a key: (unique sorted keys, sums)."""
    u, inv = np.unique(keys, return_inverse=True)
    out = np.zeros((len(u), cols.shape[1]))
    for c in range(cols.shape[1]):
        out[:, c] = np.bincount(inv.ravel(), weights=cols[:, c], minlength=len(u))
    return u, out


class Footprint:
    """Per cell of one level: keys (sorted linear index), area (world area of the surface
    inside), opaque (opaque area), rgb (linear, the opaque-area-weighted mean; NaN where the
    cell's surface is all cut out)."""

    __slots__ = ("keys", "area", "opaque", "rgb")

    def __init__(self, keys, sums):
        self.keys = keys
        self.area = sums[:, 0]
        self.opaque = sums[:, 1]
        with np.errstate(invalid="ignore", divide="ignore"):
            self.rgb = sums[:, 2:5] / sums[:, 1:2]

    @property
    def alpha(self):
        return np.where(self.area > 0, self.opaque / np.maximum(self.area, 1e-300), 0.0)


def footprint_reference(parts: Sequence[Part], grid: Grid, texel_density=2.0, cap=16,
                        coarser=0, stats=None, workers=1,
                        piece_chunk=1 << 17) -> List[Footprint]:
    """The reference colour of every cell the surface crosses, at the finest level and
    `coarser` levels above it: [finest, finest - 1, ...] (sums of the exact pieces, so every
    level is the area-weighted mean in linear light of its footprint). The pieces are exact
    (polygon clipping at the grid planes); within a piece the texture is averaged over a
    lattice of s^2 samples per fan triangle (texel_density per texel along the longest edge,
    at most cap^2, minified textures through mip levels). workers: processes (fork), each
    taking triangles of about piece_chunk pieces at a time."""
    _CTX.clear()
    _CTX.update(parts=parts, grid=grid, texel_density=texel_density, cap=cap, dominant=False)
    pend_k: List[np.ndarray] = []
    pend_v: List[np.ndarray] = []
    pending = 0
    acc_k = np.zeros(0, np.int64)
    acc_v = np.zeros((0, 5))
    for keys, sums, st in _map(_jobs(parts, grid, piece_chunk), workers):
        _add_stats(stats, st)
        pend_k.append(keys)
        pend_v.append(sums)
        pending += len(keys)
        if pending > (1 << 22):
            acc_k, acc_v = _reduce(np.concatenate([acc_k] + pend_k),
                                   np.concatenate([acc_v] + pend_v))
            pend_k, pend_v, pending = [], [], 0
    _CTX.clear()
    acc_k, acc_v = _reduce(np.concatenate([acc_k] + pend_k), np.concatenate([acc_v] + pend_v))
    out = [Footprint(acc_k, acc_v)]
    for lv in range(1, coarser + 1):
        if (grid.res >> lv) < 1:
            break
        out.append(Footprint(*_reduce(grid.parent_keys(acc_k, lv), acc_v)))
    return out


def dominant_distances(parts: Sequence[Part], grid: Grid, keys, lab, texel_density=2.0,
                       cap=16, workers=1, piece_chunk=1 << 17):
    """For checks of the dominant filter at the finest level: for each cell keys[i] (sorted)
    with the colour lab[i] (CIELAB: what voxlod stored), the smallest CIEDE2000 to (a) the
    colour of any texel under a sample inside the cell (not cut out; vertex colours: the
    sample's value) and (b) the filtered colour of any one piece (a triangle's part) inside the
    cell. inf where the cell has no opaque sample."""
    keys = np.asarray(keys, dtype=np.int64)
    best_s = np.full(len(keys), np.inf)
    best_p = np.full(len(keys), np.inf)
    if not len(keys):
        return best_s, best_p
    _CTX.clear()
    _CTX.update(parts=parts, grid=grid, texel_density=texel_density, cap=cap, dominant=True,
                keys=keys, lab=np.asarray(lab, np.float64))
    for sp, dp, ss, ds, _ in _map(_jobs(parts, grid, piece_chunk), workers):
        np.minimum.at(best_p, sp, dp)
        np.minimum.at(best_s, ss, ds)
    _CTX.clear()
    return best_s, best_p


# ---------------------------------------------------------------- reference pictures

def look_at(eye, target, up=(0.0, 1.0, 0.0)):
    """Camera frame (forward, right, up) as voxlod's renderer builds it: right = forward x up."""
    eye = np.asarray(eye, np.float64)
    f = np.asarray(target, np.float64) - eye
    f /= np.linalg.norm(f)
    r = np.cross(f, np.asarray(up, np.float64))
    r /= np.linalg.norm(r)
    u = np.cross(r, f)
    return f, r, u


def orbit_camera(lo, hi, azimuth=30.0, elevation=20.0, fov=40.0, margin=1.05):
    """Eye and target that frame the box [lo, hi] (a sphere around it) from the given angles."""
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    c = 0.5 * (lo + hi)
    rad = 0.5 * np.linalg.norm(hi - lo)
    az, el = np.radians(azimuth), np.radians(elevation)
    d = np.array([np.cos(el) * np.sin(az), np.sin(el), np.cos(el) * np.cos(az)])
    dist = margin * rad / np.sin(np.radians(0.5 * fov))
    return c + d * dist, c


def render_reference(parts: Sequence[Part], eye, target, fov=40.0, width=320, height=240,
                     up=(0.0, 1.0, 0.0), background=(0, 0, 0), chunk=1 << 21):
    """Unlit albedo picture of the surface (uint8 sRGB (height, width, 3)): a perspective
    z-buffer of dense surface samples (about 2 per pixel along each edge at the nearest depth
    of the model), each sample splatted to the pixel its ray falls in. Cut-out samples (opaque
    share 0) are skipped; blend samples are drawn opaque with their colour."""
    f, r, u = look_at(eye, target, up)
    eye = np.asarray(eye, np.float64)
    pitch = 2.0 * np.tan(np.radians(0.5 * fov)) / height
    allp = np.concatenate([p.tris.reshape(-1, 3) for p in parts if len(p.tris)])
    near = max(float(((allp - eye) @ f).min()), 1e-9)
    spacing = near * pitch  # world size of a pixel at the nearest depth
    depth = np.full(height * width, np.inf)
    color = np.zeros((height * width, 3))
    for pos, rgba, w, op, _ in samples(parts, spacing, 2.0, 2048, chunk, texel_rate=False):
        d = pos - eye
        z = d @ f
        ok = (z > 1e-9) & (op > 0)
        x = (d[ok] @ r) / z[ok] / pitch + 0.5 * width
        y = 0.5 * height - (d[ok] @ u) / z[ok] / pitch
        xi, yi = np.floor(x).astype(np.int64), np.floor(y).astype(np.int64)
        inb = (xi >= 0) & (xi < width) & (yi >= 0) & (yi < height)
        pix = yi[inb] * width + xi[inb]
        zz = z[ok][inb]
        cc = rgba[ok][inb, :3]
        # nearest sample per pixel within the chunk, then against the buffer
        o = np.lexsort((zz, pix))
        pix, zz, cc = pix[o], zz[o], cc[o]
        first = np.ones(len(pix), bool)
        first[1:] = pix[1:] != pix[:-1]
        pix, zz, cc = pix[first], zz[first], cc[first]
        closer = zz < depth[pix]
        depth[pix[closer]] = zz[closer]
        color[pix[closer]] = cc[closer]
    img = linear_to_srgb8(color).reshape(height, width, 3)
    img[np.isinf(depth).reshape(height, width)] = np.asarray(background, np.uint8)
    return img
