#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make_city.py - a synthetic scene of many triangles: transformed copies of scanned meshes set
out on a grid of city blocks, written as one binary little-endian PLY, copy by copy (memory: one
copy at a time, whatever the total).

    python3 scripts/make_city.py OUT.ply --triangles 1e8 [--meshes A.ply B.ply ...] [--seed 0]

Each copy is one of the input meshes (in turn), turned about the vertical axis by a random angle
and scaled by a random factor in [0.8, 1.25], standing in its own cell of a square grid (cells
1.15 times the largest scaled mesh's size, a street every 8 cells). The same arguments give the
same file. Inputs are read with voxlod.load_mesh (any format it reads); the default inputs are the
Stanford bunny and dragon of ../shared/data/meshes (a .gz input is unpacked first). --save-npz
writes the prepared inputs (welded, centred) to one .npz that --meshes takes instead, for a
machine without the voxlod package.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "shared", "data", "meshes")


def _load(path: str):
    """A mesh's welded vertices (float64, centred, largest side 1, standing on y = 0) and faces;
    a .gz file is unpacked first."""
    if path.endswith(".npz"):  # meshes prepared by --save-npz
        return path
    import gzip
    import shutil
    import tempfile

    import voxlod

    with tempfile.TemporaryDirectory() as tmp:
        if path.endswith(".gz"):
            plain = os.path.join(tmp, os.path.basename(path)[:-3])
            with gzip.open(path, "rb") as src, open(plain, "wb") as dst:
                shutil.copyfileobj(src, dst)
            path = plain
        m = voxlod.load_mesh(path)
        soup = np.asarray(m.vertices, dtype=np.float32)
        f = np.asarray(m.faces, dtype=np.int64).reshape(-1, 3)
    # a loaded mesh is a soup (3 vertices a triangle): welded by exact position
    u, inv = np.unique(soup, axis=0, return_inverse=True)
    v = u.astype(np.float64)
    f = inv.reshape(-1)[f]
    lo, hi = v.min(axis=0), v.max(axis=0)
    v = (v - 0.5 * (lo + hi)) / float((hi - lo).max())  # centred, largest side 1
    v[:, 1] -= v[:, 1].min()  # standing on y = 0 (the scans' up axis)
    return v, f


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--triangles", type=float, default=1e8, help="at least this many (1e8)")
    ap.add_argument("--meshes", nargs="+", default=[
        os.path.join(SHARED, "stanford_bunny", "bun_zipper.ply"),
        os.path.join(SHARED, "stanford_dragon", "dragon_871k.ply.gz")])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save-npz", help="write the prepared meshes here and stop")
    a = ap.parse_args(argv)
    meshes = []
    for p in a.meshes:
        m = _load(p)
        if isinstance(m, str):
            with np.load(m) as z:
                meshes += [(z[f"v{k}"], z[f"f{k}"]) for k in range(len(z.files) // 2)]
        else:
            meshes.append(m)
    if a.save_npz:
        np.savez_compressed(a.save_npz, **{f"{c}{k}": m[i] for k, m in enumerate(meshes)
                                           for i, c in enumerate("vf")})
        return 0
    rng = np.random.default_rng(a.seed)
    plan = []  # (mesh index, angle, scale) per copy
    tris = 0
    while tris < a.triangles:
        k = len(plan) % len(meshes)
        plan.append((k, rng.uniform(0.0, 2.0 * math.pi), rng.uniform(0.8, 1.25)))
        tris += len(meshes[k][1])
    n = len(plan)
    side = math.ceil(math.sqrt(n))
    cell = 1.15 * 1.25 * math.sqrt(2.0)
    verts = sum(len(meshes[k][0]) for k, _, _ in plan)
    with open(a.out + ".tmp", "wb") as out:
        out.write((f"ply\nformat binary_little_endian 1.0\ncomment make_city.py seed {a.seed}\n"
                   f"element vertex {verts}\nproperty float x\nproperty float y\n"
                   f"property float z\nelement face {tris}\n"
                   f"property list uchar int vertex_indices\nend_header\n").encode())
        for i, (k, ang, s) in enumerate(plan):  # vertices, copy by copy
            v = meshes[k][0]
            c, sn = math.cos(ang), math.sin(ang)
            gx, gz = i % side, i // side
            x = (gx + gx // 8) * cell  # a street after every 8 blocks
            z = (gz + gz // 8) * cell
            w = np.empty_like(v)
            w[:, 0] = s * (c * v[:, 0] + sn * v[:, 2]) + x
            w[:, 1] = s * v[:, 1]
            w[:, 2] = s * (-sn * v[:, 0] + c * v[:, 2]) + z
            out.write(w.astype("<f4").tobytes())
        rec = np.dtype([("n", "u1"), ("i", "<i4", (3,))])  # packed: 13 bytes a face
        base = 0
        for k, _, _ in plan:  # faces, copy by copy
            f = meshes[k][1]
            r = np.empty(len(f), dtype=rec)
            r["n"] = 3
            r["i"] = f + base
            out.write(r.tobytes())
            base += len(meshes[k][0])
    os.replace(a.out + ".tmp", a.out)
    print(f"{a.out}: {n} copies, {verts} vertices, {tris} triangles, "
          f"{os.path.getsize(a.out) / 2**30:.2f} GiB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
