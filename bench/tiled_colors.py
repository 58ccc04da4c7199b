#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tiled_colors.py - the colour at points of a tiled file read tile by tile (TiledFile.colors)
against the joined tree's Tree.colors (files up to 16384^3; past it TiledFile.colors alone).

Converts MESH at RES^3 in tiles of 2^TILE_DEPTH (CPU) unless the file exists, then times 10^6
points within a band width of the surface (Tree.surface_points, up to 16384^3; past it the
surface voxels of a few tiles) and 10^6 points uniform in the box, at the finest level and one
above: the median of REPS calls on one handle (its tiles decoded by the first and kept), the
first call on a new handle, and the joined tree's; checks that both give the same bytes.

usage: tiled_colors.py MESH RES TILE_DEPTH OUT.svo [REPS]
"""
import os
import sys
import time

import numpy as np

import voxlod


def timed(fn, reps):
    times, out = [], None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e3, out


def main():
    mesh, res, td, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    reps = int(sys.argv[5]) if len(sys.argv) > 5 else 5
    if not os.path.exists(path):
        t = time.perf_counter()
        voxlod.convert(mesh, res=res, out=path, tile_depth=td, progress=False, gpu=False)
        print(f"convert: {time.perf_counter() - t:.1f} s")
    tf = voxlod.TiledFile(path)
    print(tf, f"({os.cpu_count()} cores)")
    whole = voxlod.load(path) if tf.depth <= 14 else None
    if whole is not None:
        near = whole.surface_points(1_000_000, spread=whole.band)
    else:  # past 16384^3: a few tiles' surface voxels, moved by up to a band width
        rng = np.random.default_rng(2)
        parts = []
        for i in np.argsort(tf.tiles()["voxel_count"])[::-1][:8]:
            parts.append(tf.load_tile(int(i)).surface_points(125_000, spread=tf.info["band"]))
        near = np.concatenate(parts)
    rng = np.random.default_rng(1)
    lo, edge = np.asarray(tf.info["origin"]), tf.info["scale"] * (1 << tf.depth)
    box = (lo + rng.random((1_000_000, 3)) * edge).astype(np.float32)
    print("| points | level | TiledFile.colors, ms | its first call, ms | Tree.colors (joined), ms "
          "| coloured |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, p in (("near the surface", near), ("uniform in the box", box)):
        for lod in (None, tf.depth - 1):
            cold = voxlod.TiledFile(path)  # a new handle: every tile read and decoded
            ms_first, _ = timed(lambda: cold.colors(p, lod=lod), 1)
            ms_t, b = timed(lambda: tf.colors(p, lod=lod), reps)
            joined = "-"
            if whole is not None:
                ms_w, a = timed(lambda: whole.colors(p, lod=lod), reps)
                assert np.array_equal(a, b), "TiledFile.colors differs from Tree.colors"
                joined = f"{ms_w:.0f}"
            level = tf.depth if lod is None else lod
            print(f"| {name} | {level} | {ms_t:.0f} | {ms_first:.0f} | {joined} "
                  f"| {(b[:, 3] > 0).mean():.0%} |")


if __name__ == "__main__":
    main()
