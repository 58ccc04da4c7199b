#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench_mesh_ratio.py - from the tables of bench/bench_mesh.sh: for each voxlod error cut,
OpenVDB's volumeToMesh at the same 99.9th-percentile distance to the source, and the ratio of
triangles.

OpenVDB's rows are taken in the order of increasing adaptivity (fewer triangles, larger
distance); the first two consecutive adaptivities whose p99.9 brackets voxlod's give the match:
the adaptivity, mean and max interpolated linearly and the triangles linearly in
log(triangles), at the fraction where p99.9 equals voxlod's. Where no two adaptivities bracket
it (OpenVDB never gets as close, or always is), the match is left out ('-').

usage: bench_mesh_ratio.py results.md
"""
import math
import re
import sys


def tables(path):
    """{mesh: {'voxlod': [row], 'openvdb': [row]}}, row = dict of the table's columns."""
    out, mesh = {}, None
    for line in open(path):
        m = re.match(r'## (\S+), (\d+)\^3', line)
        if m:
            mesh = f'{m.group(1)} {m.group(2)}³'
            out[mesh] = {'voxlod': [], 'openvdb': []}
            continue
        cells = [c.strip() for c in line.split('|')[1:-1]]
        if mesh is None or len(cells) != 10 or not cells[2].isdigit():
            continue
        num = lambda s: None if s == '-' else float(s)
        row = {'setting': cells[1], 'tris': int(cells[2]), 'sec': float(cells[3]),
               'max': float(cells[4]), 'p999': float(cells[5]), 'mean': float(cells[6]),
               'full_max': num(cells[7]), 'full_p999': num(cells[8]), 'full_mean': num(cells[9])}
        if cells[0] == 'voxlod':
            out[mesh]['voxlod'].append(row)
        else:
            row['adaptivity'] = float(cells[1].split()[-1])
            out[mesh]['openvdb'].append(row)
    return out


def match(rows, d):
    """OpenVDB interpolated at p99.9 = d: (adaptivity, triangles, mean, max) or None."""
    rows = sorted(rows, key=lambda r: r['adaptivity'])
    for a, b in zip(rows, rows[1:]):
        lo, hi = min(a['p999'], b['p999']), max(a['p999'], b['p999'])
        if lo <= d <= hi and hi > lo:
            f = (d - a['p999']) / (b['p999'] - a['p999'])
            lerp = lambda k: a[k] + f * (b[k] - a[k])
            tris = math.exp(math.log(a['tris']) + f * (math.log(b['tris']) - math.log(a['tris'])))
            return lerp('adaptivity'), tris, lerp('mean'), lerp('max')
    return None


def main():
    for mesh, t in tables(sys.argv[1]).items():
        print(f'\n### {mesh}\n')
        print('| cut | voxlod triangles | mean | p99.9 | max | max to full detail | '
              'OpenVDB at equal p99.9: adaptivity | triangles | mean | max | voxlod / OpenVDB |')
        print('|---|---|---|---|---|---|---|---|---|---|---|')
        for r in t['voxlod']:
            full = '-' if r['full_max'] is None else f"{r['full_max']:.2f}"
            row = [r['setting'], str(r['tris']), f"{r['mean']:.3f}", f"{r['p999']:.2f}",
                   f"{r['max']:.2f}", full]
            m = match(t['openvdb'], r['p999'])
            if m is None:
                row += ['-'] * 5
            else:
                a, tris, mean, mx = m
                row += [f'{a:.3f}', f'{tris:.0f}', f'{mean:.3f}', f'{mx:.2f}',
                        f"**{r['tris'] / tris:.2f}**"]
            print('| ' + ' | '.join(row) + ' |')


if __name__ == '__main__':
    main()
