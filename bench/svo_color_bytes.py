# SPDX-License-Identifier: Apache-2.0
"""svo_color_bytes.py - what colour costs on disk in a .svo file, for the candidate layouts of a
colour section (docs/SVO_FORMAT.md, "Colour sections: why this layout").

    python3 bench/svo_color_bytes.py TREE.svo MESH.obj TEXTURE.png [--noise N] [--levels 19,9,3]
                                     [--write OUT.svo]

TREE.svo is a grey tree of MESH.obj (voxlod convert MESH.obj TREE.svo --res R). Each surface
voxel gets the area-weighted mean colour, in linear light, of the textured surface inside it
(dense random samples of the triangles, bilinear texture lookups through the OBJ's UVs; a voxel
no sample fell in takes the nearest sample's colour); each node the coverage-weighted mean of its
children, as the colour pass defines them. A second field, "smooth+noise", is a smooth function of
position plus uniform noise of +-N per channel. For each field and layout the colour sections
(one zstd frame per level) are compressed and reported in bytes per surface voxel.

Needs numpy, Pillow, scipy and zstandard (pip). Reads the .svo with its own parser (the format's
text), so it measures the layouts, not the library's writer. --write OUT.svo also writes TREE.svo
with the texture field's colours in the chosen layout (the writer's zstd level rule), for
`voxlod stats OUT.svo` and the viewers.
"""
import argparse
import struct
import sys

import numpy as np
import zstandard
from PIL import Image
from scipy.spatial import cKDTree


def read_tree(path):
    b = open(path, "rb").read()
    assert b[:8] == b"VXLOD\0\r\n", "not a .svo"
    version, flags, hz, hr = struct.unpack_from("<IIII", b, 8)
    assert flags == 0, "give a grey tree"
    hdr = zstandard.ZstdDecompressor().decompress(b[32:32 + hz], max_output_size=hr)
    depth, band = struct.unpack_from("<If", hdr, 0)
    origin = struct.unpack_from("<3d", hdr, 16)
    scale = struct.unpack_from("<d", hdr, 40)[0]
    off = 32 + hz
    counts, masks, geo = [], [], 0
    for l in range(depth + 1):
        count, z, raw = struct.unpack_from("<QQQ", hdr, 48 + 32 * l)
        counts.append(count)
        if l < depth:
            sec = zstandard.ZstdDecompressor().decompress(b[off:off + z], max_output_size=raw)
            masks.append(np.frombuffer(sec[:count], dtype=np.uint8))
        off += z
        geo += z
    return depth, np.array(origin), scale, counts, masks, len(b)


def check32(data):
    """The low 32 bits of XXH64: a zstd frame's content checksum."""
    f = zstandard.ZstdCompressor(level=1, write_checksum=True).compress(data)
    return struct.unpack("<I", f[-4:])[0]


def write_colored(src, dst, secs, counts):
    b = open(src, "rb").read()
    _, _, hz, hr = struct.unpack_from("<IIII", b, 8)
    hdr = bytearray(zstandard.ZstdDecompressor().decompress(b[32:32 + hz], max_output_size=hr))
    depth = len(counts) - 1
    raw_total = sum(struct.unpack_from("<Q", hdr, 48 + 32 * l + 16)[0] for l in range(depth + 1))
    raw_total += sum(len(x) for x in secs)
    level = 19 if raw_total < 8 << 20 else 9 if raw_total < 64 << 20 else 3
    frames = [zstandard.ZstdCompressor(level=level, write_checksum=True).compress(x) for x in secs]
    for l, f in enumerate(frames):
        hdr += struct.pack("<QQQII", counts[l], len(f), 4 * counts[l], check32(f), 0)
    hframe = zstandard.ZstdCompressor(level=19, write_checksum=True).compress(bytes(hdr))
    pro = b[:8] + struct.pack("<IIIIII", 2, 1, len(hframe), len(hdr), check32(hframe), 0)
    with open(dst, "wb") as f:
        f.write(pro + hframe + b[32 + hz:] + b"".join(frames))


def cells(depth, masks):
    """Coordinates of every level's cells, and each node's first child and child count."""
    xyz = [np.zeros((1, 3), dtype=np.int64)]
    first, nchild = [], []
    for l in range(depth):
        bits = np.unpackbits(masks[l][:, None], axis=1, bitorder="little")  # (n, 8)
        node, slot = np.nonzero(bits)
        c = 2 * xyz[l][node] + np.stack([slot & 1, slot >> 1 & 1, slot >> 2 & 1], axis=1)
        xyz.append(c)
        k = bits.sum(axis=1).astype(np.int64)
        nchild.append(k)
        first.append(np.concatenate([[0], np.cumsum(k)[:-1]]).astype(np.int64))
    return xyz, first, nchild


def morton(c):
    m = np.zeros(len(c), dtype=np.uint64)
    for bit in range(21):
        for a in range(3):
            m |= ((c[:, a].astype(np.uint64) >> np.uint64(bit)) & np.uint64(1)) << np.uint64(3 * bit + a)
    return m


def srgb_to_linear(c):
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_to_srgb8(c):
    c = np.clip(c, 0, 1)
    s = np.where(c <= 0.0031308, c * 12.92, 1.055 * c ** (1 / 2.4) - 0.055)
    return np.floor(s * 255 + 0.5).astype(np.uint8)


def read_obj(path):
    v, vt, f = [], [], []
    for line in open(path):
        p = line.split()
        if not p:
            continue
        if p[0] == "v":
            v.append([float(x) for x in p[1:4]])
        elif p[0] == "vt":
            vt.append([float(x) for x in p[1:3]])
        elif p[0] == "f":
            idx = [q.split("/") for q in p[1:]]
            for k in range(1, len(idx) - 1):
                f.append([int(idx[j][i]) - 1 for j in (0, k, k + 1) for i in (0, 1)])
    f = np.array(f)
    return np.array(v), np.array(vt), f[:, 0::2], f[:, 1::2]


def texture_field(xyz_d, origin, scale, mesh, tex_path, per_voxel=12, seed=1):
    v, vt, fv, ft = read_obj(mesh)
    img = np.asarray(Image.open(tex_path).convert("RGB"), dtype=np.float64) / 255.0
    lin = srgb_to_linear(img)
    h, w = lin.shape[:2]
    a, b, c = v[fv[:, 0]], v[fv[:, 1]], v[fv[:, 2]]
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    n = np.maximum(1, np.round(area / scale ** 2 * per_voxel)).astype(np.int64)
    rng = np.random.default_rng(seed)
    vm = morton(xyz_d)
    order = np.argsort(vm)
    sums = np.zeros((len(xyz_d), 3))
    weight = np.zeros(len(xyz_d))
    keep_p, keep_c = [], []
    tri = np.repeat(np.arange(len(fv)), n)
    for lo in range(0, len(tri), 4_000_000):
        t = tri[lo:lo + 4_000_000]
        r1, r2 = rng.random(len(t)), rng.random(len(t))
        s = np.sqrt(r1)
        u, vv, ww = 1 - s, s * (1 - r2), s * r2
        p = u[:, None] * a[t] + vv[:, None] * b[t] + ww[:, None] * c[t]
        uv = u[:, None] * vt[ft[t, 0]] + vv[:, None] * vt[ft[t, 1]] + ww[:, None] * vt[ft[t, 2]]
        x = (uv[:, 0] % 1.0) * w - 0.5
        y = (1 - uv[:, 1] % 1.0) * h - 0.5
        x0, y0 = np.floor(x).astype(np.int64), np.floor(y).astype(np.int64)
        fx, fy = (x - x0)[:, None], (y - y0)[:, None]
        x0c, x1c = np.clip(x0, 0, w - 1), np.clip(x0 + 1, 0, w - 1)
        y0c, y1c = np.clip(y0, 0, h - 1), np.clip(y0 + 1, 0, h - 1)
        col = ((1 - fx) * (1 - fy) * lin[y0c, x0c] + fx * (1 - fy) * lin[y0c, x1c] +
               (1 - fx) * fy * lin[y1c, x0c] + fx * fy * lin[y1c, x1c])
        g = np.floor((p - origin) / scale).astype(np.int64)
        m = morton(np.clip(g, 0, None))
        i = np.searchsorted(vm[order], m)
        i = np.clip(i, 0, len(vm) - 1)
        hit = vm[order][i] == m
        idx = order[i[hit]]
        np.add.at(sums, idx, col[hit])
        np.add.at(weight, idx, 1.0)
        keep_p.append(p[::8])
        keep_c.append(col[::8])
    empty = weight == 0
    if empty.any():
        kp, kc = np.concatenate(keep_p), np.concatenate(keep_c)
        centre = origin + (xyz_d[empty] + 0.5) * scale
        _, j = cKDTree(kp).query(centre)
        sums[empty] = kc[j]
        weight[empty] = 1.0
    print(f"  texture: {len(tri)} samples, {empty.sum()} of {len(xyz_d)} voxels took the nearest",
          file=sys.stderr)
    return sums, weight


def smooth_field(xyz_d, depth, noise, seed=2):
    u = (xyz_d + 0.5) / (1 << depth)
    rng = np.random.default_rng(seed)
    base = np.stack([0.5 + 0.4 * np.sin(6 * u[:, 0] + 2 * u[:, 2]),
                     0.5 + 0.4 * np.cos(5 * u[:, 1] - 3 * u[:, 0]),
                     0.5 + 0.35 * np.sin(4 * u[:, 2] + u[:, 1])], axis=1)
    s8 = np.clip(np.round(base * 255 + rng.integers(-noise, noise + 1, size=base.shape)), 0, 255)
    return srgb_to_linear(s8 / 255.0), np.ones(len(xyz_d))


def level_colors(depth, first, nchild, sums, weight):
    """Packed sRGB8 RGBA per level (alpha 255), node = weighted mean of its children."""
    out = [None] * (depth + 1)
    s, wt = sums, weight
    for l in range(depth, -1, -1):
        mean = s / wt[:, None]
        rgba = np.full((len(wt), 4), 255, dtype=np.uint8)
        rgba[:, :3] = linear_to_srgb8(mean)
        out[l] = rgba
        if l > 0:
            k = nchild[l - 1]
            starts = first[l - 1]
            s = np.add.reduceat(s, starts, axis=0)
            wt = np.add.reduceat(wt, starts)
            assert len(wt) == len(k)
    return out


def layouts(levels, first, nchild):
    def parent_of(l):
        return np.repeat(np.arange(len(nchild[l - 1])), nchild[l - 1])

    res = {}
    res["interleaved RGBA"] = [c.tobytes() for c in levels]
    res["byte planes"] = [c.T.copy().tobytes() for c in levels]
    res["byte planes, delta in Morton order"] = [
        np.diff(c.T.astype(np.int16), axis=1, prepend=0).astype(np.uint8).tobytes() for c in levels]
    res["interleaved RGBA, minus parent"] = [levels[0].tobytes()] + [
        (levels[l].astype(np.int16) - levels[l - 1][parent_of(l)].astype(np.int16)).astype(np.uint8).tobytes()
        for l in range(1, len(levels))]
    res["byte planes, minus parent"] = [levels[0].T.copy().tobytes()] + [
        (levels[l].astype(np.int16) - levels[l - 1][parent_of(l)].astype(np.int16)).astype(np.uint8).T.copy().tobytes()
        for l in range(1, len(levels))]
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("svo")
    ap.add_argument("obj")
    ap.add_argument("texture")
    ap.add_argument("--noise", type=int, default=4)
    ap.add_argument("--levels", default="19,9,3")
    ap.add_argument("--write")
    args = ap.parse_args()
    depth, origin, scale, counts, masks, file_bytes = read_tree(args.svo)
    xyz, first, nchild = cells(depth, masks)
    nv = counts[depth]
    print(f"{args.svo}: depth {depth}, {nv} surface voxels, {sum(counts[:depth])} nodes, "
          f"grey file {file_bytes} B ({file_bytes / nv:.2f} B per surface voxel)")
    fields = {"texture": texture_field(xyz[depth], origin, scale, args.obj, args.texture),
              f"smooth+noise(+-{args.noise})": smooth_field(xyz[depth], depth, args.noise)}
    zl = [int(x) for x in args.levels.split(",")]
    print(f"{'field':<22} {'layout':<38} " + " ".join(f"{'zstd ' + str(z):>10}" for z in zl) +
          "   (B per surface voxel, all levels)")
    for name, (s, w) in fields.items():
        lv = level_colors(depth, first, nchild, s, w)
        lays = layouts(lv, first, nchild)
        if args.write and name == "texture":
            write_colored(args.svo, args.write, lays["byte planes, minus parent"], counts)
        for lname, secs in lays.items():
            sizes = []
            for z in zl:
                cc = zstandard.ZstdCompressor(level=z, write_checksum=True)
                sizes.append(sum(len(cc.compress(x)) for x in secs))
            print(f"{name:<22} {lname:<38} " + " ".join(f"{b / nv:>10.3f}" for b in sizes))


if __name__ == "__main__":
    main()
