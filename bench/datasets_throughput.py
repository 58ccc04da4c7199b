# SPDX-License-Identifier: Apache-2.0
"""Training sets per second: voxlod.sample_meshes alone (no reference pipeline), for machines
that have only numpy and the package, such as the GPU machine.

    python3 bench/datasets_throughput.py [--count 40] [--triangles 100000] [--res 256]
                                         [--points 250000] [--device cpu|gpu|auto]
                                         [--workers N ...] [--reps 3] [--profile K] [MESH ...]

Without meshes it writes --count scan-like meshes of about --triangles triangles each (closed
bumpy spheres, each with its own random bumps: a latitude-longitude grid displaced along the
normal by a sum of random waves, binary PLY) into a temporary folder, so that every run sees
the same inputs (seeded). For each --workers value and each repetition, sample_meshes runs
into an empty output folder and the wall time from the call to its return is taken (mesh files
to .npz on disk); the median of --reps is reported as meshes/s, beside the machine and the
settings. --profile K: sample_meshes' per-mesh function on the first K meshes in this process
under cProfile (all cores' threads), the extension's calls timed apart (cProfile cannot see
them), then the Python calls that took the most time.
"""
import argparse
import cProfile
import datetime
import os
import platform
import pstats
import shutil
import statistics
import tempfile
import time

import numpy as np

import voxlod
from voxlod import _datasets


def bumpy_sphere(path, triangles, rng):
    """A closed bumpy sphere of about `triangles` triangles as a binary PLY."""
    nv = max(8, int(round((triangles / 2) ** 0.5 / 2 ** 0.5)))  # rows; 2 nv columns
    nu = 2 * nv
    th = np.linspace(0, np.pi, nv + 1)[1:-1]  # the poles are separate vertices
    ph = np.linspace(0, 2 * np.pi, nu, endpoint=False)
    T, P = np.meshgrid(th, ph, indexing="ij")
    d = np.stack([np.sin(T) * np.cos(P), np.sin(T) * np.sin(P), np.cos(T)], -1).reshape(-1, 3)
    d = np.vstack([d, [[0, 0, 1], [0, 0, -1]]])
    r = np.ones(len(d))
    for _ in range(12):  # random waves on the sphere
        k = rng.normal(size=3)
        k *= rng.uniform(2, 12) / np.linalg.norm(k)
        r += rng.uniform(0.01, 0.06) * np.sin(d @ k + rng.uniform(0, 2 * np.pi))
    v = (d * r[:, None]).astype(np.float32)
    rows = nv - 1
    idx = np.arange(rows * nu).reshape(rows, nu)
    a, b = idx[:-1], idx[1:]
    a1, b1 = np.roll(a, -1, 1), np.roll(b, -1, 1)
    quads = np.concatenate([np.stack([a, b, b1], -1).reshape(-1, 3),
                            np.stack([a, b1, a1], -1).reshape(-1, 3)])
    north, south = rows * nu, rows * nu + 1
    top = np.stack([np.full(nu, north), idx[0, np.arange(nu)], idx[0, (np.arange(nu) + 1) % nu]], -1)
    bot = np.stack([np.full(nu, south), idx[-1, (np.arange(nu) + 1) % nu], idx[-1, np.arange(nu)]], -1)
    f = np.concatenate([quads, top, bot]).astype(np.int32)
    # outward orientation: flip every face if the first points inwards
    c = v[f[:, 0]] + v[f[:, 1]] + v[f[:, 2]]
    n = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    if np.sum(np.einsum("ij,ij->i", n, c)) < 0:
        f = f[:, ::-1].copy()
    head = (f"ply\nformat binary_little_endian 1.0\nelement vertex {len(v)}\n"
            "property float x\nproperty float y\nproperty float z\n"
            f"element face {len(f)}\nproperty list uchar int vertex_indices\nend_header\n")
    rec = np.zeros(len(f), dtype=[("n", "u1"), ("i", "<i4", 3)])
    rec["n"] = 3
    rec["i"] = f
    with open(path, "wb") as fh:
        fh.write(head.encode())
        fh.write(v.astype("<f4").tobytes())
        fh.write(rec.tobytes())
    return len(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("meshes", nargs="*")
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--triangles", type=int, default=100_000)
    ap.add_argument("--res", type=int, default=256)
    ap.add_argument("--points", type=int, default=250_000)
    ap.add_argument("--device", default="auto", choices=["cpu", "gpu", "auto"])
    ap.add_argument("--workers", type=int, nargs="+", default=[0], help="0: the default")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--profile", type=int, default=0, metavar="K")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="voxlod-throughput-")
    try:
        paths = a.meshes
        if not paths:
            rng = np.random.default_rng(7)
            tris = []
            for i in range(a.count):
                p = os.path.join(tmp, "in", f"scan{i:04d}.ply")
                os.makedirs(os.path.dirname(p), exist_ok=True)
                tris.append(bumpy_sphere(p, a.triangles, rng))
                paths.append(p)
            print(f"{len(paths)} generated meshes of {min(tris)}..{max(tris)} triangles")
        print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
              f"{platform.node()}, {os.cpu_count()} CPUs, voxlod {voxlod.__version__}, "
              f"res {a.res}, {a.points} points, device {a.device}")
        dev = None if a.device == "auto" else a.device
        if a.profile:
            # the extension's calls do not show in cProfile: wrapped here as Python functions
            real = _datasets._voxlod

            acc = {}

            def wrap(name, fn):
                def call(*args, **kw):
                    t0 = time.perf_counter()
                    try:
                        return fn(*args, **kw)
                    finally:
                        acc[name] = acc.get(name, 0.0) + time.perf_counter() - t0
                return call

            class Mesh:
                load = staticmethod(wrap("_Mesh.load", real._Mesh.load))

            class Shim:
                _Mesh = Mesh

                def __getattr__(self, name):
                    v = getattr(real, name)
                    return wrap(name, v) if callable(v) and not isinstance(v, type) else v

            _datasets._voxlod = Shim()
            prof = cProfile.Profile()
            for i, p in enumerate(paths[:a.profile]):
                job = {"path": os.path.abspath(p), "rel": os.path.basename(p),
                       "file": os.path.join(tmp, "profile.npz"), "points": a.points,
                       "res": a.res, "preset": "deepsdf", "normalize": "sphere",
                       "seed": [0, i], "opts": {}, "band": None,
                       "device": {"cpu": 1, "gpu": 2}.get(a.device, 0), "mem_limit": 0,
                       "threads": os.cpu_count() or 1, "skip_unreliable": False,
                       "unsigned": False}
                t0 = time.perf_counter()
                prof.enable()
                rec = _datasets._sample_one(job)
                prof.disable()
                print(f"profile {os.path.basename(p)}: {time.perf_counter() - t0:.3f} s, "
                      f"ok {rec['ok']} {rec.get('error') or ''}")
            _datasets._voxlod = real
            print("extension calls (s): " + ", ".join(f"{k} {v:.3f}" for k, v in
                                                       sorted(acc.items(), key=lambda x: -x[1])))
            pstats.Stats(prof).sort_stats("tottime").print_stats(10)
        for w in a.workers:
            times = []
            for r in range(a.reps):
                out = os.path.join(tmp, f"out-{w}-{r}")
                t0 = time.perf_counter()
                recs = voxlod.sample_meshes(paths, out, points=a.points, res=a.res, device=dev,
                                            workers=w or None, progress=False)
                times.append(time.perf_counter() - t0)
                bad = [x for x in recs if not x["ok"]]
                if bad:
                    print(f"  {len(bad)} failed, e.g. {bad[0]['path']}: {bad[0]['error']}")
                shutil.rmtree(out, ignore_errors=True)
            t = statistics.median(times)
            print(f"workers {w or 'default'}: " + ", ".join(f"{x:.2f}" for x in times)
                  + f" s; median {len(paths) / t:.2f} meshes/s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
