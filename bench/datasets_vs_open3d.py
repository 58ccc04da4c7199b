# SPDX-License-Identifier: Apache-2.0
"""Training sets end to end: voxlod.sample_meshes against an Open3D pipeline on the same
meshes, in one run: meshes per second from the mesh file to the .npz on disk, and the accuracy
of voxlod's samples.

    python3 bench/datasets_vs_open3d.py [--res 256] [--points 250000] [--dask] [--cpu]
                                        [--profile] [--mesh-to-sdf K] [MESH ...]

What is compared. sample_meshes cannot be given points: it places them itself (preset
"deepsdf": surface points moved by Gaussians of variance 0.0025 and 0.00025, 47.5 % each, plus
5 % uniform in [-1, 1]^3, mesh normalized into the unit sphere). The Open3D pipeline makes the
same kind of point set the usual way: trimesh.load -> the same normalization ->
trimesh.sample.sample_surface + the same Gaussians + the same uniform share ->
open3d.t.geometry.RaycastingScene -> compute_signed_distance -> np.savez (temporary file, then
os.replace), one mesh after the other in this process (Open3D uses its own threads).
voxlod runs with 1 local worker and with the default (one per core), each from an empty
output directory.

Accuracy (voxlod's own .npz files, every point): exact unsigned distance = Open3D's
compute_distance (closest point on the triangles of the trimesh-loaded mesh); sign reference =
libigl's fast winding number (w > 0.5: inside) where igl is installed, else Open3D's ray parity.
|voxlod - exact| in voxels over the points voxlod answers within its band (flags without
SAMPLE_FAR) whose exact |d| is below the band; sign agreement over the points whose exact
|d| > 1 voxel, reported for all meshes and for those trimesh calls watertight. Open3D's own sign
(ray parity) is checked against the same reference on the same points.

--cpu: per mesh, the CPU seconds (all threads) of each pipeline in this process, the least of 3
runs: the work per mesh, which a shared machine's load distorts far less than wall time.
--dask: sample_meshes with a dask.distributed LocalCluster of 1 and then 2 worker processes
(one thread each), cluster start-up not timed. --profile: per mesh, where sample_meshes'
per-mesh function spends its time (1 thread, in this process), and how much of a conversion
comes before its first "voxelize" progress report (mesh load and sign tables) with the winding
and the pseudo-normal sign rule (a small mesh's conversion may end before any report). --mesh-to-sdf K: mesh_to_sdf's
sample_sdf_near_surface (sampled surface points, normal signs: no OpenGL) on the K smallest
meshes, where it is installed.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time

import numpy as np

import voxlod
from voxlod import _datasets

MESHES = "/work/shared/data/meshes"
DEFAULT_MESHES = [
    f"{MESHES}/stanford_bunny/bun_zipper.ply",
    f"{MESHES}/spot/spot_triangulated.obj",
    f"{MESHES}/suzanne/suzanne.obj",
    f"{MESHES}/utah_teapot/teapot.obj",
    f"{MESHES}/fandisk/fandisk.off",
    f"{MESHES}/messy/sphereWithHole.stl",
    f"{MESHES}/messy/two-boxes-bad-self-union.ply",
]
VARIANCES = (0.0025, 0.00025)
SHARES = (0.475, 0.475, 0.05)


def load_trimesh(path):
    import trimesh
    m = trimesh.load(path, force="mesh", process=True)
    return m


def normalization(lo, hi):
    """sample_meshes' 'sphere' normalization: centre of the bounding box, half its diagonal."""
    offset = (lo + hi) / 2.0
    return float(np.linalg.norm(hi - lo) / 2.0), offset


def open3d_one(path, out, n, seed):
    """trimesh load -> DeepSDF-like points -> RaycastingScene.compute_signed_distance -> .npz."""
    import open3d as o3d
    import trimesh
    m = load_trimesh(path)
    v = np.asarray(m.vertices, dtype=np.float64)
    scale, offset = normalization(v.min(0), v.max(0))
    rng = np.random.default_rng(seed)
    counts = np.floor(np.asarray(SHARES) / sum(SHARES) * n).astype(int)
    counts[0] += n - counts.sum()
    parts = []
    for var, k in zip(VARIANCES, counts[:2]):
        s, _ = trimesh.sample.sample_surface(m, int(k), seed=int(rng.integers(2 ** 31)))
        q = (s - offset) / scale + rng.normal(0.0, np.sqrt(var), size=(k, 3))
        parts.append(np.clip(q, -1.0, 1.0))
    parts.append(rng.uniform(-1.0, 1.0, size=(counts[2], 3)))
    pts = np.concatenate(parts).astype(np.float32)[rng.permutation(n)]
    scene = o3d.t.geometry.RaycastingScene()
    scene.add_triangles(o3d.core.Tensor(v.astype(np.float32)),
                        o3d.core.Tensor(np.asarray(m.faces, dtype=np.uint32)))
    world = (pts.astype(np.float64) * scale + offset).astype(np.float32)
    d = scene.compute_signed_distance(o3d.core.Tensor(world)).numpy()
    sdf = (d.astype(np.float64) / scale).astype(np.float32)
    _datasets._write_npz(out, {"points": pts, "sdf": sdf, "scale": np.float64(scale),
                               "offset": offset.astype(np.float64)})


def run_open3d(paths, out_dir, n):
    t0 = time.perf_counter()
    per = []
    for i, p in enumerate(paths):
        t1 = time.perf_counter()
        open3d_one(p, os.path.join(out_dir, f"{i:02d}_{os.path.basename(p)}.npz"), n, i)
        per.append(time.perf_counter() - t1)
    return time.perf_counter() - t0, per


def run_voxlod(paths, out_dir, n, res, **kw):
    t0 = time.perf_counter()
    recs = voxlod.sample_meshes(paths, out_dir, points=n, res=res, progress=False, **kw)
    dt = time.perf_counter() - t0
    bad = [r for r in recs if not r["ok"]]
    if bad:
        raise SystemExit(f"sample_meshes failed on {[(r['path'], r['error']) for r in bad]}")
    return dt, recs


def accuracy(rec):
    """Errors of one voxlod .npz against the exact distance and the winding-number sign."""
    import open3d as o3d
    m = load_trimesh(rec["path"])
    v = np.asarray(m.vertices, dtype=np.float64)
    f = np.asarray(m.faces, dtype=np.int64)
    with np.load(rec["file"]) as z:
        pts, sdf, fl = z["points"], z["sdf"].astype(np.float64), z["flags"]
        scale, offset = float(z["scale"]), z["offset"]
        rep = json.loads(str(z["report"]))
    voxel, band = rep["voxel"], rep["band"]  # normalized units
    world = pts.astype(np.float64) * scale + offset
    scene = o3d.t.geometry.RaycastingScene()
    scene.add_triangles(o3d.core.Tensor(v.astype(np.float32)),
                        o3d.core.Tensor(f.astype(np.uint32)))
    q = o3d.core.Tensor(world.astype(np.float32))
    unsigned = scene.compute_distance(q).numpy().astype(np.float64) / scale
    o3d_signed = scene.compute_signed_distance(q).numpy().astype(np.float64) / scale
    try:
        import igl
        w = igl.fast_winding_number(v, f, world)
        inside = w > 0.5
        ref = "igl fast winding number"
    except ImportError:
        inside = o3d_signed < 0
        ref = "Open3D ray parity"
    exact = np.where(inside, -unsigned, unsigned)
    in_band = ((fl & _datasets.SAMPLE_FAR) == 0) & (unsigned < band)
    err = np.abs(sdf - exact)[in_band] / voxel
    far = unsigned > voxel
    no_sign = (fl & _datasets.SAMPLE_NO_SIGN) != 0
    vox_ok = (np.sign(sdf) == np.sign(exact)) & ~no_sign
    o3d_ok = np.sign(o3d_signed) == np.sign(exact)
    return {
        "mesh": os.path.basename(rec["path"]), "triangles": len(f),
        "watertight": bool(m.is_watertight), "sign_reference": ref,
        "band_points": int(in_band.sum()),
        "err_p50_vox": float(np.percentile(err, 50)) if err.size else None,
        "err_p99_9_vox": float(np.percentile(err, 99.9)) if err.size else None,
        "err_max_vox": float(err.max()) if err.size else None,
        "far_points": int(far.sum()),
        "sign_agree_voxlod": float(vox_ok[far].mean()) if far.any() else None,
        "sign_agree_open3d": float(o3d_ok[far].mean()) if far.any() else None,
        "sign_reliable": rep["sign_reliable"],
    }


def phases_one(path, n, res, out_dir):
    """Where one mesh's time goes in sample_meshes' per-mesh function, in this process: the
    C calls (mesh load, conversion) and the Python steps (point placement, which samples the
    tree three times for surface points; writing) timed by wrapping them; the rest is the
    final sample of all points plus bookkeeping."""
    acc = {"load": 0.0, "convert": 0.0, "points": 0.0, "write": 0.0}

    def timed(name, fn):
        def w(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                acc[name] += time.perf_counter() - t0
        return w

    real = _datasets._voxlod

    class Mesh:
        load = staticmethod(timed("load", real._Mesh.load))

    class Shim:
        _Mesh = Mesh
        convert = staticmethod(timed("convert", real.convert))

        def __getattr__(self, name):
            return getattr(real, name)

    saved = (_datasets._voxlod, _datasets._points, _datasets._write_npz)
    _datasets._voxlod = Shim()
    _datasets._points = timed("points", saved[1])
    _datasets._write_npz = timed("write", saved[2])
    job = {"path": os.path.abspath(path), "rel": os.path.basename(path),
           "file": os.path.join(out_dir, "phases.npz"), "points": n, "res": res,
           "preset": "deepsdf", "normalize": "sphere", "seed": [0, 0], "opts": {},
           "band": None, "device": 0, "mem_limit": 0, "threads": 1,
           "skip_unreliable": False, "unsigned": False}
    try:
        rec = _datasets._sample_one(job)
    finally:
        _datasets._voxlod, _datasets._points, _datasets._write_npz = saved
    if not rec["ok"]:
        raise SystemExit(f"phases: {rec['error']}")
    acc["final sample + rest"] = rec["seconds"] - sum(acc.values())
    return rec["seconds"], acc


def cpu_seconds(paths, n, res, tmp, reps=3):
    """CPU seconds (time.process_time: every thread of this process) of one mesh through the
    Open3D pipeline and through sample_meshes' per-mesh function (1 conversion thread), the
    least of `reps` runs each: the work per mesh, which a busy machine inflates far less than
    wall time and which sets the meshes/s of a machine whose cores are all kept busy."""
    rows = []
    for i, p in enumerate(paths):
        o3d_t, vx_t = [], []
        for r in range(reps):
            c = time.process_time()
            open3d_one(p, os.path.join(tmp, "cpu_o3d.npz"), n, r)
            o3d_t.append(time.process_time() - c)
            job = {"path": os.path.abspath(p), "rel": os.path.basename(p),
                   "file": os.path.join(tmp, "cpu_vx.npz"), "points": n, "res": res,
                   "preset": "deepsdf", "normalize": "sphere", "seed": [r, i], "opts": {},
                   "band": None, "device": 1, "mem_limit": 0, "threads": 1,
                   "skip_unreliable": False, "unsigned": False}
            c = time.process_time()
            rec = _datasets._sample_one(job)
            vx_t.append(time.process_time() - c)
            if not rec["ok"]:
                raise SystemExit(f"cpu: {rec['error']}")
        rows.append((p, min(o3d_t), min(vx_t)))
    return rows


def sign_tables(path, res):
    """Seconds from the call to voxlod.convert's first "voxelize" progress report (mesh load
    and the sign tables) and in all, with each sign rule (1 thread, CPU, no colour)."""
    out = {}
    for sign in ("winding", "pseudo-normal"):
        first = []
        t0 = time.perf_counter()

        def cb(phase, frac):
            if phase == "voxelize" and not first:
                first.append(time.perf_counter() - t0)

        voxlod.convert(path, res, progress=cb, threads=1, color="off", sign=sign, gpu=False)
        out[sign] = (first[0] if first else float("nan"), time.perf_counter() - t0)
    return out


def mesh_to_sdf_runs(paths, n, k):
    """mesh_to_sdf.sample_sdf_near_surface (surface points sampled, sign from normals: no
    OpenGL) on the k meshes with the fewest triangles; seconds per mesh."""
    import mesh_to_sdf
    sizes = sorted((len(load_trimesh(p).faces), p) for p in paths)[:k]
    out = []
    for _, p in sizes:
        t0 = time.perf_counter()
        m = load_trimesh(p)
        mesh_to_sdf.sample_sdf_near_surface(m, number_of_points=n, surface_point_method="sample",
                                            sign_method="normal")
        out.append((p, time.perf_counter() - t0))
    return out


def dask_runs(paths, n, res, tmp):
    from dask.distributed import Client, LocalCluster
    out = {}
    for k in (1, 2):
        with LocalCluster(n_workers=k, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cl, Client(cl) as client:
            client.run(lambda: __import__("voxlod"))  # import on the workers before timing
            dt, _ = run_voxlod(paths, os.path.join(tmp, f"dask{k}"), n, res, client=client)
        out[k] = dt
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("meshes", nargs="*", default=DEFAULT_MESHES)
    ap.add_argument("--res", type=int, default=256)
    ap.add_argument("--points", type=int, default=250_000)
    ap.add_argument("--dask", action="store_true")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--no-accuracy", action="store_true")
    ap.add_argument("--cpu", action="store_true",
                    help="also the CPU seconds per mesh of both pipelines (least of 3 runs)")
    ap.add_argument("--mesh-to-sdf", type=int, default=0, metavar="K",
                    help="also time mesh_to_sdf on the K meshes with the fewest triangles")
    a = ap.parse_args()
    import open3d as o3d
    paths = [os.path.abspath(p) for p in a.meshes]
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next((ln.split(":", 1)[1].strip() for ln in cpu.splitlines()
                  if ln.startswith("Model name")), platform.processor())
    print(f"date {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"open3d {o3d.__version__}, voxlod {getattr(voxlod, '__version__', '?')}")
    print(f"res {a.res}, {a.points} points per mesh; points: voxlod places its own (deepsdf "
          "preset), Open3D's pipeline the same recipe with trimesh.sample_surface "
          "(same kind of point set, not the same points)")
    for p in paths:
        m = load_trimesh(p)
        print(f"  mesh {p} ({len(m.faces)} triangles, watertight {m.is_watertight})")
    tmp = tempfile.mkdtemp(prefix="voxlod-o3dbench-")
    try:
        nm = len(paths)
        rows = []
        t, per = run_open3d(paths, os.path.join(tmp, "o3d"), a.points)
        rows.append(("trimesh + Open3D (1 process)", t))
        print("  Open3D pipeline, s per mesh: " + ", ".join(
            f"{os.path.basename(p)} {x:.2f}" for p, x in zip(paths, per)))
        t1, recs = run_voxlod(paths, os.path.join(tmp, "vx1"), a.points, a.res, workers=1)
        rows.append(("voxlod.sample_meshes workers=1", t1))
        print("  voxlod workers=1, s per mesh (inside the worker): " + ", ".join(
            f"{os.path.basename(r['path'])} {r['seconds']:.2f}" for r in recs))
        tn, _ = run_voxlod(paths, os.path.join(tmp, "vxn"), a.points, a.res)
        rows.append((f"voxlod.sample_meshes workers=default ({os.cpu_count()})", tn))
        base = rows[0][1]
        print(f"\n| pipeline | seconds ({nm} meshes) | meshes/s | vs Open3D |")
        print("|---|---:|---:|---:|")
        for name, t in rows:
            print(f"| {name} | {t:.2f} | {nm / t:.2f} | {base / t:.2f}x |")
        if a.dask:
            d = dask_runs(paths, a.points, a.res, tmp)
            print(f"\ndask LocalCluster: 1 worker {d[1]:.2f} s ({nm / d[1]:.2f} meshes/s), "
                  f"2 workers {d[2]:.2f} s ({nm / d[2]:.2f} meshes/s), speed-up "
                  f"{d[1] / d[2]:.2f}x")
        if not a.no_accuracy:
            print("\n| mesh | triangles | watertight | band points | p50 err vox | p99.9 err vox "
                  "| max err vox | points > 1 voxel | sign agree voxlod | sign agree Open3D |")
            print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
            ref = None
            for r in recs:
                x = accuracy(r)
                ref = x["sign_reference"]
                print(f"| {x['mesh']} | {x['triangles']} | {x['watertight']} | "
                      f"{x['band_points']} | {x['err_p50_vox']:.3f} | "
                      f"{x['err_p99_9_vox']:.3f} | {x['err_max_vox']:.2f} | {x['far_points']} | "
                      f"{100 * x['sign_agree_voxlod']:.3f} % | "
                      f"{100 * x['sign_agree_open3d']:.3f} % |")
            print(f"sign reference: {ref}")
        if a.profile:
            for p in paths:
                total, acc = phases_one(p, a.points, a.res, tmp)
                print(f"phases {os.path.basename(p)} (1 thread) {total:.2f} s: " + ", ".join(
                    f"{k} {v:.2f} s ({100 * v / total:.0f} %)" for k, v in acc.items()))
                st = sign_tables(p, a.res)
                print("  convert before its first 'voxelize' report / in all: " + ", ".join(
                    f"sign={k} " + ("no report" if x != x else f"{x:.2f}") + f" / {y:.2f} s"
                    for k, (x, y) in st.items()))
        if a.cpu:
            rows = cpu_seconds(paths, a.points, a.res, tmp)
            print("\n| mesh | Open3D pipeline CPU s | voxlod CPU s | Open3D / voxlod |")
            print("|---|---:|---:|---:|")
            for p, o, v in rows:
                print(f"| {os.path.basename(p)} | {o:.3f} | {v:.3f} | {o / v:.2f}x |")
            to, tv = sum(r[1] for r in rows), sum(r[2] for r in rows)
            print(f"| all | {to:.2f} | {tv:.2f} | {to / tv:.2f}x |")
        if a.mesh_to_sdf:
            try:
                for p, t in mesh_to_sdf_runs(paths, a.points, a.mesh_to_sdf):
                    print(f"mesh_to_sdf {os.path.basename(p)}: {t:.2f} s "
                          f"({1 / t:.3f} meshes/s; Open3D pipeline above: {nm / base:.2f})")
            except Exception as e:  # noqa: BLE001 - optional
                print(f"mesh_to_sdf: skipped ({type(e).__name__}: {e})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
