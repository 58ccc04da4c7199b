# SPDX-License-Identifier: Apache-2.0
"""test_export_color.py - colour in meshes and exported grids, read by code that shares nothing with
voxlod's writers.

    python3 tests/test_export_color.py HELPER WORKDIR meshes   (trimesh, numpy; a .vox parser here)
    /usr/bin/python3 tests/test_export_color.py HELPER WORKDIR vdb   (pyopenvdb)

HELPER is test_export_color (test_export_color.c): it colours a 64^3 sphere's tree by hand (every
cell the colour of its octant around the grid's centre, its level in the blue channel, cells above
a cap plane alpha 0: holes) and writes meshes and exports into WORKDIR with frame.txt (origin,
voxel size, depth, cap plane, octant centre). Here:
- PLY, OBJ (trimesh) and GLB (trimesh, COLOR_0 linear): every vertex off the octant planes has its
  octant's colour at the mesh's level (sRGB 8-bit; GLB: the linear value within 1e-3); no vertex
  above the cap (holes are not meshed); the grey tree's PLY has no colour;
- .vox (a chunk parser written here from the format's description): palette entries are colours of
  the level, each voxel's colour is its cell's octant colour, nothing above the cap;
- PLY points: red green blue per point, its octant's colour;
- .vdb (level D - 1: node colours): a vec3s grid Cd with exactly the active voxels of the level
  set; off the octant planes its value is the octant colour in linear light.
Skips (77) where the readers are missing; fails then when $CI is set.
"""
import os
import struct
import subprocess
import sys


def skip(why):
    print("SKIP:", why)
    sys.exit(1 if os.environ.get("CI", "").lower() not in ("", "0", "false", "no") else 77)


HELPER, WORK, PART = sys.argv[1], sys.argv[2], sys.argv[3]
if PART == "meshes":
    try:
        import numpy as np
        import trimesh
    except ImportError:
        skip("trimesh/numpy are not installed for %s" % sys.executable)
else:
    try:
        import pyopenvdb as vdb
    except ImportError:
        skip("pyopenvdb is not installed for %s" % sys.executable)

os.makedirs(WORK, exist_ok=True)
r = subprocess.run([HELPER, WORK], capture_output=True, text=True)
if r.returncode != 0:
    print(r.stdout, r.stderr)
    sys.exit(1)
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def path(name):
    return os.path.join(WORK, name)


with open(path("frame.txt")) as f:
    vals = f.read().split()
ORIGIN = [float(v) for v in vals[0:3]]
SCALE, DEPTH, CAP = float(vals[3]), int(vals[4]), float(vals[5])
MID = [float(v) for v in vals[6:9]]


def octant_color(octant, level):
    """The colour the helper gives: r from bits 0 and 2, g from bit 1, b the level."""
    return (40 + 120 * (octant & 1) + 60 * (octant >> 2 & 1), 60 + 120 * (octant >> 1 & 1),
            20 + 25 * level)


def srgb_to_linear(c):
    c = c / 255.0
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def octant_of(p):
    return sum(1 << k for k in range(3) if p[k] > MID[k])


def near_plane(p, tol):
    return any(abs(p[k] - MID[k]) < tol for k in range(3))


def check_vertices(name, verts, colors, level, linear=False):
    cell = SCALE * 2 ** (DEPTH - level)
    checked = bad = 0
    for p, c in zip(verts, colors):
        if p[2] > CAP + cell:
            bad += 1
            continue
        if near_plane(p, 1e-3 * cell):
            continue
        checked += 1
        want = octant_color(octant_of(p), level)
        if linear:
            ok = all(abs(c[k] - srgb_to_linear(want[k])) < 1e-3 for k in range(3))
        else:
            ok = tuple(int(x) for x in c[:3]) == want
        bad += 0 if ok else 1
    check(bad == 0, "%s: %d of %d vertices with a colour not their octant's (or in a hole)"
          % (name, bad, len(verts)))
    check(checked * 2 > len(verts), "%s: only %d of %d vertices checked" % (name, checked, len(verts)))


def read_vox(name):
    """MagicaVoxel .vox: 'VOX ' version, MAIN, then chunks id, content size, children size."""
    with open(path(name), "rb") as f:
        b = f.read()
    assert b[:4] == b"VOX " and b[8:12] == b"MAIN"
    palette, voxels, size = None, [], None
    at = 20
    while at + 12 <= len(b):
        cid = b[at:at + 4]
        n, children = struct.unpack_from("<ii", b, at + 4)
        c = b[at + 12:at + 12 + n]
        if cid == b"SIZE":
            size = struct.unpack_from("<iii", c)
        elif cid == b"XYZI":
            k = struct.unpack_from("<i", c)[0]
            voxels += [tuple(c[4 + 4 * i:8 + 4 * i]) for i in range(k)]
        elif cid == b"RGBA":
            # entry i of the chunk is colour index i + 1
            palette = {i + 1: tuple(c[4 * i:4 * i + 4]) for i in range(255)}
        at += 12 + n + children
    return size, palette, voxels


if PART == "meshes":
    for name, level in (("fine.ply", DEPTH), ("fine.obj", DEPTH), ("lod4.ply", 4)):
        m = trimesh.load(path(name), process=False, force="mesh")
        check(m.visual.kind == "vertex", "%s: no vertex colours (%s)" % (name, m.visual.kind))
        check_vertices(name, m.vertices, m.visual.vertex_colors, level)
    scene = trimesh.load(path("fine.glb"), process=False)
    g = list(scene.geometry.values())[0]
    col = g.visual.vertex_attributes.get("color") if hasattr(g.visual, "vertex_attributes") else None
    if col is None and g.visual.kind == "vertex":
        col = g.visual.vertex_colors
    check(col is not None and np.asarray(col).dtype.kind == "f", "fine.glb: no float COLOR_0")
    if col is not None:
        check_vertices("fine.glb", g.vertices, np.asarray(col), DEPTH, linear=True)
    grey = trimesh.load(path("grey.ply"), process=False, force="mesh")
    with open(path("grey.ply"), "rb") as f:
        head = f.read(400)
    check(b"red" not in head, "grey.ply: colour properties in a grey tree's mesh")
    check(grey.vertices[:, 2].max() > CAP + 0.2, "grey.ply: the grey sphere has holes")
    # PLY points: the centres of level-D cells
    pts = trimesh.load(path("points.ply"), process=False)
    check(len(pts.vertices) > 0 and pts.colors.shape[1] >= 3, "points.ply: no colours")
    check_vertices("points.ply", pts.vertices, pts.colors, DEPTH)
    # .vox at levels D, D-1, D-2: cells (x, y, z) of the level, their centres' octants
    for level in (DEPTH, DEPTH - 1, DEPTH - 2):
        size, palette, voxels = read_vox("lod%d.vox" % level)
        check(palette is not None and len(voxels) > 0, "lod%d.vox: no palette or no voxels" % level)
        h = SCALE * 2 ** (DEPTH - level)
        bad = 0
        for x, y, z, ci in voxels:
            centre = [ORIGIN[0] + (x + 0.5) * h, ORIGIN[1] + (y + 0.5) * h, ORIGIN[2] + (z + 0.5) * h]
            want = octant_color(octant_of(centre), level) + (255,)
            if palette[ci] != want or ORIGIN[2] + z * h > CAP:
                bad += 1
        check(bad == 0, "lod%d.vox: %d of %d voxels with the wrong colour or in a hole"
              % (level, bad, len(voxels)))
        used = {ci for _, _, _, ci in voxels}
        check(len(used) <= 8, "lod%d.vox: %d colours for 8 octants" % (level, len(used)))
else:
    level = DEPTH - 1  # the helper exports level D - 1: node colours
    grids = {g.name: g for g in vdb.readAllGridMetadata(path("lod%d.vdb" % level))}
    check(set(grids) == {"surface", "Cd"}, "vdb grids: %s" % sorted(grids))
    sdf = vdb.read(path("lod%d.vdb" % level), "surface")
    cd = vdb.read(path("lod%d.vdb" % level), "Cd")
    check(cd.valueTypeName == "vec3s", "Cd is %s, not vec3s" % cd.valueTypeName)
    on_sdf = {v.min for v in sdf.iterOnValues()}
    on_cd = {v.min: v.value for v in cd.iterOnValues()}
    check(on_sdf == set(on_cd), "Cd on %d voxels, the level set on %d (%d in common)"
          % (len(on_cd), len(on_sdf), len(on_sdf & set(on_cd))))
    # a point (i, j, k) lies at origin + index * voxel; away from the octant planes and the holes
    # by more than the band, every cell around it and its extension share one octant colour
    res, far, checked, bad = 2 ** level, 6, 0, 0
    cap_index = (CAP - ORIGIN[2]) / (SCALE * 2 ** (DEPTH - level))
    for ijk, v in on_cd.items():
        if any(abs(ijk[k] - res / 2) < far for k in range(3)) or ijk[2] > cap_index - far:
            continue
        octant = sum(1 << k for k in range(3) if ijk[k] > res / 2)
        want = [srgb_to_linear(c) for c in octant_color(octant, level)]
        checked += 1
        if any(abs(v[k] - want[k]) > 1e-4 for k in range(3)):
            bad += 1
    check(checked > 100, "Cd: only %d points checked" % checked)
    check(bad == 0, "Cd: %d of %d points not their octant's linear colour" % (bad, checked))

print("%s: %s" % (PART, "ok" if failures == 0 else "%d failures" % failures))
sys.exit(1 if failures else 0)
