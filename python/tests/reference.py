# SPDX-License-Identifier: Apache-2.0
"""Brute-force references for the tests: analytic meshes, and the exact signed distance to every
triangle in double precision (closest point by Ericson's region test, inside where the
generalized winding number, the sum of solid angles, exceeds 1/2)."""
import numpy as np


def uv_sphere(r=1.0, nu=48, nv=24, centre=(0.0, 0.0, 0.0)):
    """Vertices (float64) and faces (int64) of a UV sphere, wound outward."""
    v = [(0.0, 0.0, r), (0.0, 0.0, -r)]
    for i in range(1, nv):
        th = np.pi * i / nv
        for j in range(nu):
            ph = 2 * np.pi * j / nu
            v.append((r * np.sin(th) * np.cos(ph), r * np.sin(th) * np.sin(ph), r * np.cos(th)))
    f = []
    ring = lambda i, j: 2 + (i - 1) * nu + j % nu  # noqa: E731
    for j in range(nu):
        f.append((0, ring(1, j), ring(1, j + 1)))
        f.append((1, ring(nv - 1, j + 1), ring(nv - 1, j)))
    for i in range(1, nv - 1):
        for j in range(nu):
            a, b, c, d = ring(i, j), ring(i, j + 1), ring(i + 1, j), ring(i + 1, j + 1)
            f.append((a, c, d))
            f.append((a, d, b))
    return np.array(v) + np.array(centre), np.array(f, dtype=np.int64)


def box(lo, hi):
    """Vertices and faces of an axis-aligned box, wound outward."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    v = np.array([[hi[0] if k & 1 else lo[0], hi[1] if k & 2 else lo[1], hi[2] if k & 4 else lo[2]]
                  for k in range(8)])
    quads = [(0, 4, 6, 2), (1, 3, 7, 5), (0, 1, 5, 4), (2, 6, 7, 3), (0, 2, 3, 1), (4, 5, 7, 6)]
    f = []
    for a, b, c, d in quads:
        f += [(a, b, c), (a, c, d)]
    return v, np.array(f, dtype=np.int64)


def _closest_dist2(p, a, b, c):
    """Squared distance from points p (N, 3) to triangles (a, b, c) (M, 3): (N, M)."""
    p = p[:, None, :]
    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = (ab * ap).sum(-1), (ac * ap).sum(-1)
    bp, cp = p - b, p - c
    d3, d4 = (ab * bp).sum(-1), (ac * bp).sum(-1)
    d5, d6 = (ab * cp).sum(-1), (ac * cp).sum(-1)
    vc, vb, va = d1 * d4 - d3 * d2, d5 * d2 - d1 * d6, d3 * d6 - d5 * d4
    with np.errstate(divide="ignore", invalid="ignore"):
        den = 1.0 / (va + vb + vc)
        v, w = vb * den, vc * den
        q = a + ab * v[..., None] + ac * w[..., None]  # interior
        t = np.clip(d4 - d3, 0, None) / (np.clip(d4 - d3, 0, None) + np.clip(d5 - d6, 0, None))
        q = np.where(((va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0))[..., None], b + (c - b) * t[..., None], q)
        t = d2 / (d2 - d6)
        q = np.where(((vb <= 0) & (d2 >= 0) & (d6 <= 0))[..., None], a + ac * t[..., None], q)
        t = d1 / (d1 - d3)
        q = np.where(((vc <= 0) & (d1 >= 0) & (d3 <= 0))[..., None], a + ab * t[..., None], q)
    q = np.where(((d6 >= 0) & (d5 <= d6))[..., None], np.broadcast_to(c, q.shape), q)
    q = np.where(((d3 >= 0) & (d4 <= d3))[..., None], np.broadcast_to(b, q.shape), q)
    q = np.where(((d1 <= 0) & (d2 <= 0))[..., None], np.broadcast_to(a, q.shape), q)
    return ((p - q) ** 2).sum(-1)


def _winding(p, a, b, c):
    """Generalized winding number of the triangles at points p (N,)."""
    a, b, c = a - p[:, None, :], b - p[:, None, :], c - p[:, None, :]
    la, lb, lc = (np.linalg.norm(x, axis=-1) for x in (a, b, c))
    det = (a * np.cross(b, c)).sum(-1)
    den = la * lb * lc + (a * b).sum(-1) * lc + (a * c).sum(-1) * lb + (b * c).sum(-1) * la
    return (2.0 * np.arctan2(det, den)).sum(-1) / (4 * np.pi)


def signed_distance(points, vertices, faces, chunk=512):
    """Exact signed distance (float64, negative inside) of points (N, 3) to the mesh."""
    v = np.asarray(vertices, dtype=np.float64)
    a, b, c = v[faces[:, 0]], v[faces[:, 1]], v[faces[:, 2]]
    pts = np.asarray(points, dtype=np.float64)
    out = np.empty(len(pts))
    for i in range(0, len(pts), chunk):
        p = pts[i:i + chunk]
        d = np.sqrt(_closest_dist2(p, a, b, c).min(axis=1))
        w = _winding(p, a, b, c)
        out[i:i + chunk] = np.where(np.abs(w) > 0.5, -d, d)
    return out
