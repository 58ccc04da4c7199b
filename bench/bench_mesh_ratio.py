#!/usr/bin/env python3
"""bench_mesh_ratio.py - from the tables of bench/bench_mesh.sh: for each voxlod row, the
triangles OpenVDB's volumeToMesh needs for the same distance to the source, and the ratio.

OpenVDB's curve (triangles against distance, over its adaptivities) is interpolated linearly in
log(triangles) between the two adaptivities whose distances bracket ours; where no adaptivity is
as close or as far as ours, or where OpenVDB's distance does not change with adaptivity (a
feature of the source that no mesher of this field can reach), the ratio is left out ('-').
Distances: the two-sided Hausdorff distance (max), its 99th percentile and its mean, in voxels.

usage: bench_mesh_ratio.py results.md
"""
import math
import re
import sys


def tables(path):
    """{mesh: {'voxlod': [(setting, tris, max, p99, mean)], 'openvdb': [...]}}"""
    out, mesh = {}, None
    for line in open(path):
        m = re.match(r'## (\S+), (\d+)\^3', line)
        if m:
            mesh = f'{m.group(1)} {m.group(2)}³'
            out[mesh] = {'voxlod': [], 'openvdb': []}
            continue
        cells = [c.strip() for c in line.split('|')[1:-1]]
        if mesh is None or len(cells) != 7 or not cells[2].isdigit():
            continue
        tool = 'voxlod' if cells[0] == 'voxlod' else 'openvdb'
        out[mesh][tool].append((cells[1], int(cells[2]), float(cells[4]), float(cells[5]),
                                float(cells[6])))
    return out


def needed(curve, d):
    """OpenVDB's triangles at distance d, or None."""
    pts = sorted(curve)  # by distance
    for (d0, t0), (d1, t1) in zip(pts, pts[1:]):
        if d0 <= d <= d1 and d1 > d0:
            f = (d - d0) / (d1 - d0)
            return math.exp(math.log(t0) + f * (math.log(t1) - math.log(t0)))
    return None


def main():
    for mesh, t in tables(sys.argv[1]).items():
        print(f'\n{mesh}: OpenVDB triangles at voxlod\'s distance, and voxlod / OpenVDB\n')
        print('| voxlod cut | triangles | max: OpenVDB | ratio | p99: OpenVDB | ratio | '
              'mean: OpenVDB | ratio |')
        print('|---|---|---|---|---|---|---|---|')
        for setting, tris, *dist in t['voxlod']:
            row = [setting, str(tris)]
            for k in range(3):
                curve = [(r[2 + k], r[1]) for r in t['openvdb']]
                # a flat curve says nothing about triangles against distance
                n = needed(curve, dist[k]) if len({c[0] for c in curve}) > 2 else None
                row += ['-', '-'] if n is None else [f'{n:.0f}', f'{tris / n:.2f}']
            print('| ' + ' | '.join(row) + ' |')


if __name__ == '__main__':
    main()
