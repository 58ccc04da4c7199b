# SPDX-License-Identifier: Apache-2.0
"""Distance queries: voxlod's Tree.sample against libigl's signed_distance (winding-number sign)
on the same points and mesh, in one run: throughput of both, and voxlod's accuracy with libigl's
exact distance as the reference.

    python3 bench/sample_vs_libigl.py [--mesh data/bunny.ply] [--res 512] [--points 200000]
                                             [--spread 2 | --box]

Points: Tree.surface_points (surface voxels' centres moved by up to --spread voxels per axis,
default the band, 2 voxels), shuffled, or with --box uniform in the mesh's bounding box; voxlod
is also timed on the same points in Morton order of their voxels (as a scan or a sorted training
set gives them). libigl builds its AABB tree and winding-number
hierarchy inside signed_distance, as a caller pays them; its time on 1/10 of the points is also
shown to separate that set-up. Each rate is the median of several runs (--reps, --igl-reps),
in one process. Accuracy: |voxlod - exact| in voxels over the points whose exact
|d| is within the band, and the sign wherever exact |d| > 1 voxel; exact = the distance to
libigl's closest point with the sign of libigl's winding number.
"""
import argparse
import json
import os
import platform
import time

import numpy as np

import voxlod


def median_of(fn, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def morton_order(pts, origin, scale):
    """The permutation that sorts points by the Morton code of the finest voxel holding them."""
    g = np.clip(np.floor((pts - np.asarray(origin, np.float32)) / scale), 0, 2 ** 20 - 1)
    code = np.zeros(len(pts), dtype=np.uint64)
    for axis in range(3):
        x = g[:, axis].astype(np.uint64)
        for bit in range(20):
            code |= ((x >> np.uint64(bit)) & np.uint64(1)) << np.uint64(3 * bit + axis)
    return np.argsort(code, kind="stable")


def boundary_edges(f):
    """The edges of one triangle only, (E, 2)."""
    import igl
    e = igl.boundary_facets(f)
    return np.asarray(e[0] if isinstance(e, tuple) else e).reshape(-1, 2)


def rim_distance(points, v, f, chunk=4096):
    """Distance from each point to the mesh's boundary edges (hole rims), inf without any: the
    winding-number sign flips across a membrane spanning each hole, where no triangle is, so the
    signed distance is discontinuous there and no field sampled at voxel corners follows it."""
    import igl
    e = boundary_edges(f)
    if e.size == 0:
        return np.full(len(points), np.inf)
    a, b = v[e[:, 0]], v[e[:, 1]]
    ab = b - a
    ll = np.maximum((ab * ab).sum(1), 1e-300)
    out = np.empty(len(points))
    for i in range(0, len(points), chunk):
        p = points[i:i + chunk, None, :].astype(np.float64)
        t = np.clip(((p - a) * ab).sum(-1) / ll, 0.0, 1.0)
        q = a + t[..., None] * ab
        out[i:i + chunk] = np.sqrt(((p - q) ** 2).sum(-1).min(1))
    return out


def libigl_exact(points, v, f, sign_type):
    """libigl's signed distance as the reference: its closest point's distance with the sign of
    its value. (With the winding-number sign libigl returns (1 - 2|w|) times the distance, w the
    winding number: the distance itself only where w is 0 or 1, so not near an open mesh's holes.)"""
    import igl
    s, _, c = igl.signed_distance(points, v, f, sign_type=sign_type)[:3]
    return np.sign(s) * np.linalg.norm(points - c, axis=1)


def accuracy(d, exact, within, vox):
    err = np.abs(d.astype(np.float64) - exact)[within] / vox
    signed = within & (np.abs(exact) > vox)
    return {"points": int(within.sum()), "median": float(np.median(err)),
            "p999": float(np.percentile(err, 99.9)), "max": float(err.max()),
            "over_half": float(np.mean(err > 0.5)),
            "wrong_signs": int(np.sum(np.sign(d[signed]) != np.sign(exact[signed]))),
            "signed_points": int(signed.sum())}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mesh", default=os.path.join(here, "..", "data", "bunny.ply"))
    ap.add_argument("--res", type=int, default=512)
    ap.add_argument("--points", type=int, default=200000)
    ap.add_argument("--reps", type=int, default=5, help="voxlod's timed runs (median)")
    ap.add_argument("--igl-reps", type=int, default=3,
                    help="libigl's timed runs (median; its rate moves by 20 %% between runs)")
    ap.add_argument("--spread", type=float, default=None,
                    help="voxels each point lies from a surface voxel's centre, per axis (default: "
                         "the band)")
    ap.add_argument("--box", action="store_true",
                    help="points uniform in the mesh's bounding box instead (mostly far from it)")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    a = ap.parse_args()
    import igl

    v, f = igl.read_triangle_mesh(a.mesh)
    f = f.astype(np.int64)
    t0 = time.perf_counter()
    tree = voxlod.convert((v, f), res=a.res, progress=False, gpu=False)
    convert_s = time.perf_counter() - t0
    if a.box:
        rng = np.random.default_rng(1)
        lo, hi = v.min(0), v.max(0)
        pts = (lo + rng.random((a.points, 3)) * (hi - lo)).astype(np.float32)
        where = "uniform in the mesh's bounding box"
    else:
        pts = tree.surface_points(a.points, spread=a.spread, seed=1, shuffle=True)
        spread = tree.band if a.spread is None else a.spread
        where = f"within {spread:g} voxels of a surface voxel's centre"
    order = morton_order(pts, tree.origin, tree.scale)
    sorted_pts = np.ascontiguousarray(pts[order])
    pts64 = pts.astype(np.float64)

    wn = igl.SIGNED_DISTANCE_TYPE_WINDING_NUMBER
    igl_s, _ = median_of(lambda: igl.signed_distance(pts64, v, f, sign_type=wn), a.igl_reps)
    exact = libigl_exact(pts64, v, f, wn)
    tenth = pts64[: max(1, len(pts64) // 10)]
    igl_tenth_s, _ = median_of(lambda: igl.signed_distance(tenth, v, f, sign_type=wn), a.igl_reps)
    fwn_s, _ = median_of(lambda: igl.signed_distance(pts64, v, f,
                                                   sign_type=igl.SIGNED_DISTANCE_TYPE_FAST_WINDING_NUMBER),
                       a.igl_reps)

    tree.sample(pts[:1000])  # first call: thread start-up, page faults
    vx_s, d = median_of(lambda: tree.sample(pts), a.reps)
    vx_sorted_s, _ = median_of(lambda: tree.sample(sorted_pts), a.reps)
    _, fl = tree.sample(pts, flags=True)
    t0 = time.perf_counter()
    tree.sample(pts[:1000], band_cache=True)  # builds the band cache, kept with the tree
    cache_s = time.perf_counter() - t0
    vc_s, dc = median_of(lambda: tree.sample(pts, band_cache=True), a.reps)
    vc_sorted_s, _ = median_of(lambda: tree.sample(sorted_pts, band_cache=True), a.reps)

    vox = tree.scale
    within = np.abs(exact) <= tree.band * vox
    acc = accuracy(d, exact, within, vox)
    rim = rim_distance(pts, v, f)
    acc_closed = accuracy(d, exact, within & (rim > 4.0 * vox), vox)
    acc_cache = accuracy(dc, exact, within, vox)
    acc_cache_closed = accuracy(dc, exact, within & (rim > 4.0 * vox), vox)
    n = len(pts)
    r = {
        "machine": f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}",
        "mesh": os.path.basename(a.mesh), "triangles": int(len(f)), "resolution": a.res,
        "points": n, "where": where, "convert_s": round(convert_s, 3),
        "libigl_winding_pts_per_s": n / igl_s,
        "libigl_winding_tenth_pts_per_s": len(tenth) / igl_tenth_s,
        "libigl_fast_winding_pts_per_s": n / fwn_s,
        "voxlod_pts_per_s": n / vx_s, "voxlod_sorted_pts_per_s": n / vx_sorted_s,
        "speedup_vs_winding": igl_s / vx_s, "speedup_sorted_vs_winding": igl_s / vx_sorted_s,
        "band_cache_build_s": cache_s,
        "voxlod_cache_pts_per_s": n / vc_s, "voxlod_cache_sorted_pts_per_s": n / vc_sorted_s,
        "speedup_cache_vs_winding": igl_s / vc_s,
        "speedup_cache_sorted_vs_winding": igl_s / vc_sorted_s,
        "boundary_edges": int(len(boundary_edges(f))),
        "accuracy_in_band": acc, "accuracy_in_band_away_from_holes": acc_closed,
        "band_cache_accuracy_in_band": acc_cache,
        "band_cache_accuracy_in_band_away_from_holes": acc_cache_closed,
        "fraction_in_voxel": float(np.mean(fl == 0)),
        "fraction_near": float(np.mean(fl & voxlod.SAMPLE_NEAR != 0)),
        "fraction_far": float(np.mean(fl & voxlod.SAMPLE_FAR != 0)),
    }
    if a.json:
        print(json.dumps(r, indent=1))
        return
    print(f"{r['mesh']}: {r['triangles']} triangles, tree {a.res}^3 (built in {convert_s:.2f} s), "
          f"{n} points {where}; {r['machine']}")
    print(f"| method | points/s | vs libigl winding |\n|---|---:|---:|")
    print(f"| libigl signed_distance, winding number | {r['libigl_winding_pts_per_s']:,.0f} | 1.0x |")
    print(f"| libigl, same on 1/10 of the points | {r['libigl_winding_tenth_pts_per_s']:,.0f} | |")
    print(f"| libigl signed_distance, fast winding number | {r['libigl_fast_winding_pts_per_s']:,.0f} | "
          f"{r['libigl_fast_winding_pts_per_s'] / r['libigl_winding_pts_per_s']:.1f}x |")
    print(f"| voxlod Tree.sample, random order | {r['voxlod_pts_per_s']:,.0f} | {r['speedup_vs_winding']:.0f}x |")
    print(f"| voxlod Tree.sample, Morton order | {r['voxlod_sorted_pts_per_s']:,.0f} | "
          f"{r['speedup_sorted_vs_winding']:.0f}x |")
    print(f"| voxlod Tree.sample(band_cache=True), random order | {r['voxlod_cache_pts_per_s']:,.0f} | "
          f"{r['speedup_cache_vs_winding']:.0f}x |")
    print(f"| voxlod Tree.sample(band_cache=True), Morton order | "
          f"{r['voxlod_cache_sorted_pts_per_s']:,.0f} | {r['speedup_cache_sorted_vs_winding']:.0f}x |")
    print(f"band cache: built once per tree in {cache_s:.3f} s")
    for what, q in (("all points within the band", acc),
                    ("those more than 4 voxels from a hole's rim", acc_closed),
                    ("band cache, all points within the band", acc_cache),
                    ("band cache, more than 4 voxels from a hole's rim", acc_cache_closed)):
        print(f"accuracy, {what} ({q['points']}): error median {q['median']:.4f}, 99.9% "
              f"{q['p999']:.3f}, max {q['max']:.3f} voxel; {100 * q['over_half']:.3f}% over 0.5 "
              f"voxel; {q['wrong_signs']} wrong signs among {q['signed_points']} points beyond "
              f"1 voxel")
    print(f"voxlod rules: {100 * r['fraction_in_voxel']:.1f}% in a surface voxel, "
          f"{100 * r['fraction_near']:.1f}% near, {100 * r['fraction_far']:.1f}% far")


if __name__ == "__main__":
    main()
