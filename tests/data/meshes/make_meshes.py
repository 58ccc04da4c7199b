#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make_meshes.py - writes the small test meshes in this folder and prints what each must import as.

    python3 tests/data/meshes/make_meshes.py            # rewrites the files, prints the table
    python3 tests/data/meshes/make_meshes.py --check    # also asks assimp's command-line tool

Every mesh here is made by this script (or, for DAE/FBX/3MF, by assimp's own exporter from the
glTF this script writes), so the project may license them as it licenses its code. Python's
standard library only. What the script writes itself is the same on every run (no time stamp in
the gzip member); the exporter's DAE, FBX and 3MF carry the time of their export.

The scene (`scene.*`): a torus (256 triangles) and a box (12) with 4 degenerate triangles inside
it (2 with a repeated vertex, 2 with three collinear vertices), as two meshes with two materials
where the format has them. glTF/GLB (and what assimp exports from them) also place the torus a
second time through another node (translated and scaled), so a correct import expands node
instances. `scene_quads.obj` has the torus and box as quads. `scene.ply.gz` is a gzip member,
which the importer must refuse.

Messy meshes (`messy/`), each in the format of a real mesh it stands for:
  sphere_with_hole.stl  UV sphere with its top cap removed: 24 boundary edges (STL ascii)
  doubled_cube.obj      a cube whose every face is present twice, once per winding
  two_boxes.ply         two overlapping closed boxes, one missing its face inside the other
                        (4 boundary edges), plus 6 unreferenced vertices (PLY binary)
  cube_with_fold.ply    a cube with 2x2 quads per face whose top centre vertex is moved within
                        the face to (0.6, 0.6, 1): closed, two of its triangles folded over their
                        neighbours (PLY binary, doubles)
And `star_prism.off`: a closed seven-pointed star prism with sharp concave and convex edges.

`--check` exports each file with `assimp export FILE out.ply -fply -ptv -tri` (the flattening
that assimp itself does) and compares the triangle count and bounding box with the table.
"""
import gzip
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def f32(x):
    """x rounded to float32, as every file here stores it."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def fmt(x):
    return repr(f32(x)) if f32(x) != int(f32(x)) else str(int(f32(x)))


# ---- geometry -----------------------------------------------------------------------------------

def torus(c, R, r, nu, nv):
    """Vertices and quads (counter-clockwise from outside) of a torus around z."""
    v, q = [], []
    for i in range(nu):
        a = 2 * math.pi * i / nu
        for j in range(nv):
            b = 2 * math.pi * j / nv
            v.append(tuple(f32(x) for x in (c[0] + (R + r * math.cos(b)) * math.cos(a),
                                             c[1] + (R + r * math.cos(b)) * math.sin(a),
                                             c[2] + r * math.sin(b))))
    for i in range(nu):
        for j in range(nv):
            i1, j1 = (i + 1) % nu, (j + 1) % nv
            q.append((i * nv + j, i1 * nv + j, i1 * nv + j1, i * nv + j1))
    return v, q


def box(lo, hi):
    """Vertices and quads (counter-clockwise from outside) of an axis-aligned box."""
    v = [tuple(f32((lo, hi)[(k >> a) & 1][a]) for a in range(3)) for k in range(8)]
    q = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    return v, q


def tris(quads):
    out = []
    for a, b, c, d in quads:
        out += [(a, b, c), (a, c, d)]
    return out


def scene_quads():
    """The torus and the box as quads: [(name, material, vertices, quads)]."""
    tv, tq = torus((0.25, -0.5, 0.125), 1.0, 0.35, 16, 8)
    bv, bq = box((1.5, -0.5, -0.3), (2.25, 0.25, 0.45))
    return [("torus", "red", tv, tq), ("box", "grey", bv, bq)]


def scene_meshes():
    """[(name, material, vertices, triangles)]: the torus, the box with 4 degenerate triangles."""
    (_, _, tv, tq), (_, _, bv, bq) = scene_quads()
    bt = tris(bq)
    n = len(bv)
    bv = bv + [(1.75, -0.25, 0.0), (2.0, -0.25, 0.0), (1.875, -0.25, 0.0), (1.875, 0.0, 0.25)]
    bt = bt + [(n, n, n + 1), (n + 3, n + 1, n + 3), (n, n + 1, n + 2), (n + 2, n, n + 1)]
    return [("torus", "red", tv, tris(tq)), ("box", "grey", bv, bt)]


DEGENERATE = 4


def world(meshes, instances=()):
    """All triangles as position triples: every mesh once, plus (mesh index, scale, offset)."""
    out = []
    for _, _, v, t in meshes:
        out += [tuple(v[i] for i in tri) for tri in t]
    for mi, s, off in instances:
        _, _, v, t = meshes[mi]
        out += [tuple(tuple(f32(s * p[a] + off[a]) for a in range(3)) for p in (v[i] for i in tri))
                for tri in t]
    return out


def bbox(triangles, skip_degenerate=True):
    lo, hi = [math.inf] * 3, [-math.inf] * 3
    for t in triangles:
        if skip_degenerate and degenerate(t):
            continue
        for p in t:
            for a in range(3):
                lo[a], hi[a] = min(lo[a], p[a]), max(hi[a], p[a])
    return lo, hi


def degenerate(t):
    e0 = [t[1][a] - t[0][a] for a in range(3)]
    e1 = [t[2][a] - t[0][a] for a in range(3)]
    n = (e0[1] * e1[2] - e0[2] * e1[1], e0[2] * e1[0] - e0[0] * e1[2], e0[0] * e1[1] - e0[1] * e1[0])
    return n == (0, 0, 0)


# ---- writers ------------------------------------------------------------------------------------

def write(rel, data):
    path = os.path.join(HERE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w", **({} if isinstance(data, bytes) else {"newline": "\n"})) as f:
        f.write(data)
    return path


def obj_text(meshes, faces_of=lambda m: m[3], mtl=None):
    s = ["# generated by make_meshes.py"]
    if mtl:
        s.append("mtllib " + mtl)
    base = 1
    for name, mat, v, _ in meshes:
        s += ["v %s %s %s" % tuple(fmt(x) for x in p) for p in v]
    for m in meshes:
        name, mat, v, _ = m
        s += ["o " + name] + (["usemtl " + mat] if mtl else [])
        s += ["f " + " ".join(str(base + i) for i in f) for f in faces_of(m)]
        base += len(v)
    return "\n".join(s) + "\n"


def merged(meshes):
    v, t = [], []
    for _, _, mv, mt in meshes:
        t += [tuple(len(v) + i for i in f) for f in mt]
        v += mv
    return v, t


def ply_ascii(v, t):
    h = ("ply\nformat ascii 1.0\ncomment generated by make_meshes.py\nelement vertex %d\n"
         "property float x\nproperty float y\nproperty float z\nelement face %d\n"
         "property list uchar int vertex_indices\nend_header\n" % (len(v), len(t)))
    return h + "".join("%s %s %s\n" % tuple(fmt(x) for x in p) for p in v) + \
        "".join("3 %d %d %d\n" % f for f in t)


def ply_binary(v, t, coord="float", endian="<"):
    h = ("ply\nformat %s 1.0\ncomment generated by make_meshes.py\nelement vertex %d\n"
         "property %s x\nproperty %s y\nproperty %s z\nelement face %d\n"
         "property list uchar int vertex_indices\nend_header\n"
         % ("binary_little_endian" if endian == "<" else "binary_big_endian", len(v), coord, coord,
            coord, len(t)))
    c = "f" if coord == "float" else "d"
    body = b"".join(struct.pack(endian + "3" + c, *p) for p in v)
    body += b"".join(struct.pack(endian + "B3i", 3, *f) for f in t)
    return h.encode() + body


def normal(t):
    e0 = [t[1][a] - t[0][a] for a in range(3)]
    e1 = [t[2][a] - t[0][a] for a in range(3)]
    n = [e0[1] * e1[2] - e0[2] * e1[1], e0[2] * e1[0] - e0[0] * e1[2], e0[0] * e1[1] - e0[1] * e1[0]]
    ln = math.sqrt(sum(x * x for x in n))
    return [f32(x / ln) if ln else 0.0 for x in n]


def stl_ascii(tri, name):
    s = ["solid " + name]
    for t in tri:
        s.append("  facet normal %s %s %s" % tuple(fmt(x) for x in normal(t)))
        s.append("    outer loop")
        s += ["      vertex %s %s %s" % tuple(fmt(x) for x in p) for p in t]
        s += ["    endloop", "  endfacet"]
    return "\n".join(s + ["endsolid " + name]) + "\n"


def stl_binary(tri):
    head = b"generated by make_meshes.py".ljust(80, b" ")
    body = b"".join(struct.pack("<12fH", *normal(t), *t[0], *t[1], *t[2], 0) for t in tri)
    return head + struct.pack("<I", len(tri)) + body


def off(v, faces):
    return ("OFF\n# generated by make_meshes.py\n%d %d 0\n" % (len(v), len(faces)) +
            "".join("%s %s %s\n" % tuple(fmt(x) for x in p) for p in v) +
            "".join("%d %s\n" % (len(f), " ".join(map(str, f))) for f in faces))


INSTANCE = (0, 0.5, (0.0, 2.5, 0.5))  # the torus again: half size, moved


def gltf(meshes, glb):
    """glTF 2.0: one mesh per input mesh, nodes: each once, the torus again through a parent
    node that scales and a child that translates (world = 0.5 * p + (0, 2.5, 0.5))."""
    blob, views, accessors, gmeshes = b"", [], [], []
    for name, mat, v, t in meshes:
        pos = b"".join(struct.pack("<3f", *p) for p in v)
        idx = b"".join(struct.pack("<3I", *f) for f in t)
        lo = [min(p[a] for p in v) for a in range(3)]
        hi = [max(p[a] for p in v) for a in range(3)]
        views.append({"buffer": 0, "byteOffset": len(blob), "byteLength": len(pos), "target": 34962})
        blob += pos
        views.append({"buffer": 0, "byteOffset": len(blob), "byteLength": len(idx), "target": 34963})
        blob += idx
        accessors.append({"bufferView": len(views) - 2, "componentType": 5126, "count": len(v),
                          "type": "VEC3", "min": lo, "max": hi})
        accessors.append({"bufferView": len(views) - 1, "componentType": 5125, "count": 3 * len(t),
                          "type": "SCALAR"})
        gmeshes.append({"name": name, "primitives": [{"attributes": {"POSITION": len(accessors) - 2},
                                                      "indices": len(accessors) - 1,
                                                      "material": len(gmeshes)}]})
    mi, s, off_ = INSTANCE
    doc = {
        "asset": {"version": "2.0", "generator": "make_meshes.py"},
        "scene": 0,
        "scenes": [{"nodes": [0, 1, 2]}],
        "nodes": [{"name": "torus", "mesh": 0}, {"name": "box", "mesh": 1},
                  {"name": "small", "scale": [s, s, s], "translation": list(off_), "children": [3]},
                  {"name": "torus_again", "mesh": mi}],
        "materials": [{"name": m[1], "pbrMetallicRoughness": {"baseColorFactor": c}}
                      for m, c in zip(meshes, ([0.8, 0.1, 0.1, 1], [0.5, 0.5, 0.5, 1]))],
        "meshes": gmeshes,
        "accessors": accessors,
        "bufferViews": views,
        "buffers": [{"byteLength": len(blob)}],
    }
    if not glb:
        doc["buffers"][0]["uri"] = "scene.bin"
        return json.dumps(doc, indent=1) + "\n", blob
    js = json.dumps(doc, separators=(",", ":")).encode()
    js += b" " * (-len(js) % 4)
    blob += b"\0" * (-len(blob) % 4)
    body = struct.pack("<I4s", len(js), b"JSON") + js + struct.pack("<I4s", len(blob), b"BIN\0") + blob
    return struct.pack("<4sII", b"glTF", 2, 12 + len(body)) + body


def fbx_74(d):
    """Binary FBX 7.5 (64-bit record headers, as assimp 5.2's exporter writes) -> 7.4 (32-bit)."""
    assert d[:21] == b"Kaydara FBX Binary  \0" and struct.unpack("<I", d[23:27])[0] >= 7500
    def node(p):
        end, nprops, plen = struct.unpack("<QQQ", d[p:p + 24])
        if end == 0:
            return None, p + 25
        nl = d[p + 24]
        name = d[p + 25:p + 25 + nl]
        q = p + 25 + nl
        props = d[q:q + plen]
        q += plen
        kids = []
        had_null = False
        while q < end:
            k, q = node(q)
            if k is None:
                had_null = True
                break
            kids.append(k)
        return (name, nprops, props, kids, had_null), end
    def emit(n, off):
        name, nprops, props, kids, had_null = n
        body = bytes([len(name)]) + name + props
        off2 = off + 12 + len(body)
        out = b""
        for k in kids:
            b = emit(k, off2 + len(out))
            out += b
        if had_null or kids:
            out += b"\0" * 13
        return struct.pack("<III", off + 12 + len(body) + len(out), nprops, len(props)) + body + out
    p, top = 27, []
    while True:
        n, p = node(p)
        if n is None:
            break
        top.append(n)
    out = bytearray(d[:23] + struct.pack("<I", 7400))
    for n in top:
        out += emit(n, len(out))
    out += b"\0" * 13
    footer = d[p:]
    return bytes(out) + footer


# ---- messy meshes and the star ------------------------------------------------------------------

def sphere_with_hole(c, r, nu, nv):
    """UV sphere without the triangles around the top pole (a hole bounded by nu edges)."""
    v = [(c[0], c[1], c[2] - r)]
    for j in range(1, nv):
        th = math.pi * j / nv - math.pi / 2
        for i in range(nu):
            a = 2 * math.pi * i / nu
            v.append((c[0] + r * math.cos(th) * math.cos(a), c[1] + r * math.cos(th) * math.sin(a),
                      c[2] + r * math.sin(th)))
    v = [tuple(f32(x) for x in p) for p in v]
    ring = lambda j, i: 1 + (j - 1) * nu + i % nu
    t = [(0, ring(1, i + 1), ring(1, i)) for i in range(nu)]
    for j in range(1, nv - 1):
        for i in range(nu):
            t += [(ring(j, i), ring(j, i + 1), ring(j + 1, i + 1)),
                  (ring(j, i), ring(j + 1, i + 1), ring(j + 1, i))]
    return [tuple(v[i] for i in f) for f in t]


def doubled_cube():
    v, q = box((-1, -1, -1), (1, 1, 1))
    t = tris(q)
    return v, [f for tri in t for f in (tri, (tri[0], tri[2], tri[1]))]


def two_boxes():
    av, aq = box((-0.5, -0.5, -0.5), (0.5, 0.5, 0.5))
    bv, bq = box((0.0, -0.25, -0.25), (1.0, 0.25, 0.25))
    bq = [f for f in bq if f != (0, 4, 6, 2)]  # B's x = 0 face, inside A
    v = av + bv + [(f32(0.1 * k), 0.75, 0.75) for k in range(6)]  # unreferenced
    t = tris(aq) + [tuple(8 + i for i in f) for f in tris(bq)]
    return v, t


def cube_with_fold():
    """Cube [-1,1]^3 with 2x2 quads per face (26 vertices, 48 triangles); the top face's centre
    moves within the face to (0.6, 0.6, 1), so that triangles around it fold over."""
    index, v, t = {}, [], []

    def vid(p):
        if p not in index:
            index[p] = len(v)
            v.append(p)
        return index[p]
    for a in range(3):
        for side in (-1, 1):
            u, w = (a + 1) % 3, (a + 2) % 3
            for i in range(2):
                for j in range(2):
                    quad = []
                    for di, dj in ((0, 0), (1, 0), (1, 1), (0, 1)):
                        p = [0, 0, 0]
                        p[a], p[u], p[w] = side, i + di - 1, j + dj - 1
                        quad.append(vid(tuple(float(x) for x in p)))
                    if side < 0:
                        quad = quad[::-1]
                    t += [(quad[0], quad[1], quad[2]), (quad[0], quad[2], quad[3])]
    top = index[(0.0, 0.0, 1.0)]
    v[top] = (0.6, 0.6, 1.0)
    return v, t


def star_prism(points=7, r_out=1.0, r_in=0.45, z0=-0.4, z1=0.4, rows=4):
    ring = []
    for k in range(2 * points):
        a = math.pi * k / points + 0.1
        r = r_out if k % 2 == 0 else r_in
        ring.append((r * math.cos(a), r * math.sin(a)))
    n = len(ring)
    v = [tuple(f32(x) for x in (x, y, z0 + (z1 - z0) * j / rows)) for j in range(rows + 1) for x, y in ring]
    bottom, top = len(v), len(v) + 1
    v += [(0.0, 0.0, f32(z0)), (0.0, 0.0, f32(z1))]
    faces = []
    for j in range(rows):
        for k in range(n):
            k1 = (k + 1) % n
            faces.append((j * n + k, j * n + k1, (j + 1) * n + k1, (j + 1) * n + k))
    for k in range(n):
        k1 = (k + 1) % n
        faces.append((bottom, k1, k))
        faces.append((top, rows * n + k, rows * n + k1))
    tri = [t for f in faces for t in ((f,) if len(f) == 3 else ((f[0], f[1], f[2]), (f[0], f[2], f[3])))]
    return v, faces, tri


# ---- main ---------------------------------------------------------------------------------------

def main():
    check = "--check" in sys.argv
    meshes = scene_meshes()
    table = []  # (file, flattened triangles, degenerate, lo, hi)

    def record(rel, triangles):
        lo, hi = bbox(triangles)
        table.append((rel, len(triangles), sum(degenerate(t) for t in triangles), lo, hi))

    once = world(meshes)
    twice = world(meshes, [INSTANCE])
    write("scene.mtl", "# generated by make_meshes.py\nnewmtl red\nKd 0.8 0.1 0.1\n\n"
          "newmtl grey\nKd 0.5 0.5 0.5\n")
    write("scene.obj", obj_text(meshes, mtl="scene.mtl"))
    record("scene.obj", once)
    quads = scene_quads()
    write("scene_quads.obj", obj_text(quads))
    record("scene_quads.obj", world([(n, m, v, tris(q)) for n, m, v, q in quads]))
    v, t = merged(meshes)
    write("scene_ascii.ply", ply_ascii(v, t))
    record("scene_ascii.ply", once)
    write("scene_binary.ply", ply_binary(v, t))
    record("scene_binary.ply", once)
    write("scene_be.ply", ply_binary(v, t, endian=">"))
    record("scene_be.ply", once)
    write("scene_ascii.stl", stl_ascii(once, "scene"))
    record("scene_ascii.stl", once)
    write("scene_binary.stl", stl_binary(once))
    record("scene_binary.stl", once)
    write("scene.off", off(v, t))
    record("scene.off", once)
    text, blob = gltf(meshes, glb=False)
    write("scene.gltf", text)
    write("scene.bin", blob)
    record("scene.gltf", twice)
    write("scene.glb", gltf(meshes, glb=True))
    record("scene.glb", twice)
    gz = gzip.compress(ply_binary(v, t), mtime=0)
    write("scene.ply.gz", gz)
    # DAE, FBX, 3MF: assimp's exporter, from the glTF (the files are kept: testing needs no
    # exporter). Its binary FBX is version 7.5, which assimp 5.2's importer cannot read back; it
    # is re-encoded as 7.4 (32-bit record headers, the same records). Its 3MF exporter writes each
    # mesh once and drops node transforms, so the 3MF holds the scene without the second torus.
    exported = [("scene.dae", "collada", twice), ("scene.fbx", "fbx", twice),
                ("scene_ascii.fbx", "fbxa", twice), ("scene.3mf", "3mf", once)]
    if shutil.which("assimp"):
        for rel, fid, _ in exported:
            out = os.path.join(HERE, rel)
            subprocess.run(["assimp", "export", os.path.join(HERE, "scene.gltf"), out, "-f" + fid],
                           check=True, stdout=subprocess.DEVNULL)
            if fid == "fbx":
                with open(out, "rb") as f:
                    data = fbx_74(f.read())
                write(rel, data)
    else:
        print("assimp (Debian's assimp-utils) not found: %s left as they are" %
              ", ".join(r for r, _, _ in exported), file=sys.stderr)
    for rel, _, triangles in exported:
        record(rel, triangles)

    swh = sphere_with_hole((1.5, 1.5, 1.5), 1.5, 24, 12)
    write("messy/sphere_with_hole.stl", stl_ascii(swh, "sphere_with_hole"))
    record("messy/sphere_with_hole.stl", swh)
    v, t = doubled_cube()
    write("messy/doubled_cube.obj", obj_text([("cube", None, v, t)]))
    record("messy/doubled_cube.obj", [tuple(v[i] for i in f) for f in t])
    v, t = two_boxes()
    write("messy/two_boxes.ply", ply_binary(v, t))
    record("messy/two_boxes.ply", [tuple(v[i] for i in f) for f in t])
    v, t = cube_with_fold()
    write("messy/cube_with_fold.ply", ply_binary(v, t, coord="double"))
    record("messy/cube_with_fold.ply", [tuple(v[i] for i in f) for f in t])
    v, faces, t = star_prism()
    write("star_prism.off", off(v, faces))
    record("star_prism.off", [tuple(v[i] for i in f) for f in t])

    print("/* file, flattened triangles, degenerate, bbox min, bbox max (make_meshes.py) */")
    for rel, n, d, lo, hi in table:
        print('    {"%s", %d, %d, {%s}, {%s}},' % (rel, n, d, ", ".join("%.9g" % x for x in lo),
                                                  ", ".join("%.9g" % x for x in hi)))
    if check:
        return check_with_assimp(table)
    return 0


def check_with_assimp(table):
    """assimp's own flattening (export -ptv -tri to ascii PLY): count and bounding box."""
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for rel, n, d, lo, hi in table:
            out = os.path.join(tmp, "out.ply")
            r = subprocess.run(["assimp", "export", os.path.join(HERE, rel), out, "-fply", "-ptv", "-tri"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if r.returncode != 0:
                print("assimp: %s did not load" % rel)
                bad += 1
                continue
            with open(out) as f:
                lines = f.read().split("\n")
            nv = nf = 0
            for k, line in enumerate(lines):
                if line.startswith("element vertex"):
                    nv = int(line.split()[2])
                if line.startswith("element face"):
                    nf = int(line.split()[2])
                if line == "end_header":
                    body = k + 1
                    break
            pts = [tuple(float(x) for x in lines[body + i].split()[:3]) for i in range(nv)]
            faces = [tuple(int(x) for x in lines[body + nv + i].split()[1:4]) for i in range(nf)]
            alo, ahi = bbox([tuple(pts[i] for i in f) for f in faces])
            ok = nf == n and all(abs(alo[a] - lo[a]) <= 1e-5 * (1 + abs(lo[a])) and
                                 abs(ahi[a] - hi[a]) <= 1e-5 * (1 + abs(hi[a])) for a in range(3))
            print("%-28s assimp %5d triangles, table %5d%s" % (rel, nf, n, "" if ok else "  MISMATCH %r %r" % (alo, ahi)))
            bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
