# SPDX-License-Identifier: Apache-2.0
"""Tree.render: shapes, options, the kept renderer, and the CLI's image pixel for pixel."""
import struct
import subprocess
import zlib

import numpy as np
import pytest

import voxlod


def read_png(path):
    """An 8-bit RGB PNG (as stb writes them) into (H, W, 3) uint8: IHDR, IDAT and the five
    scanline filters of the PNG specification."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    w = h = None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color == 2
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride, bpp = w * 3, 3
    out = np.zeros((h, stride), dtype=np.int32)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        cur = np.zeros(stride, dtype=np.int32)
        for x in range(stride):
            a = cur[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 0:
                pred = 0
            elif f == 1:
                pred = a
            elif f == 2:
                pred = b
            elif f == 3:
                pred = (a + b) // 2
            else:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[x] = (line[x] + pred) & 0xFF
        out[y] = cur
        prev = cur
    return out.reshape(h, w, 3).astype(np.uint8)


def test_render_shapes_and_depth(bunny_tree):
    img = bunny_tree.render(width=64, height=48, device="cpu")
    assert img.shape == (48, 64, 3) and img.dtype == np.uint8
    assert img.std() > 0  # something drawn
    rgb, depth = bunny_tree.render(width=64, height=48, depth=True, device="cpu")
    assert np.array_equal(rgb, img)
    assert depth.shape == (48, 64) and depth.dtype == np.float32
    hit = np.isfinite(depth)
    assert 0 < hit.mean() < 1


def test_render_options(bunny_tree):
    full = bunny_tree.render(width=48, height=40, device="cpu")
    for lod in (3, "auto", bunny_tree.depth):
        assert bunny_tree.render(width=48, height=40, lod=lod, device="cpu").shape == (40, 48, 3)
    blocks = bunny_tree.render(width=48, height=40, shade="blocks", device="cpu")
    assert not np.array_equal(full, blocks)
    t = bunny_tree
    c = np.array(t.origin) + t.scale * t.resolution / 2
    side = t.render(width=48, height=40, eye=c + [0, 0, 3 * t.scale * t.resolution], target=c,
                    fov=30, device="cpu")
    assert side.shape == (40, 48, 3) and not np.array_equal(side, full)
    with pytest.raises(ValueError):
        t.render(width=0)
    with pytest.raises(ValueError):
        t.render(lod=99)
    with pytest.raises(ValueError):
        t.render(shade="toon")
    with pytest.raises(ValueError):
        t.render(eye=[np.nan, 0, 0])
    with pytest.raises(voxlod.InvalidArgumentError):
        t.render(eye=c, target=c, device="cpu")  # eye == target


def test_render_matches_cli(tmp_path, bunny_tree, cli):
    svo, png = tmp_path / "b.svo", tmp_path / "b.png"
    bunny_tree.save(svo)
    subprocess.run([cli, "render", str(svo), str(png), "--cpu", "--size", "96x72", "-q"],
                   check=True)
    ref = read_png(png)
    img = voxlod.load(svo).render(width=96, height=72, device="cpu")
    assert ref.shape == img.shape
    assert np.array_equal(ref, img)
