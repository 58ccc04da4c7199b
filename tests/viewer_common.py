# SPDX-License-Identifier: Apache-2.0
"""viewer_common.py - what the `voxlod view` tests share: a small tree, a server process, a PNG
reader for pixel statistics. Standard library only (runs with /usr/bin/python3)."""
import os
import re
import select
import signal
import struct
import subprocess
import time
import zlib

# The renderer's background colour (marcher/trace_shade.h: VX_BG_R/G/B).
BACKGROUND = (34, 38, 46)


def make_tree(voxlod, data_dir, tmp, res=64):
    """Converts the bundled small bunny into tmp/bunny64.svo; returns its path."""
    out = os.path.join(tmp, "bunny%d.svo" % res)
    subprocess.run([voxlod, "convert", os.path.join(data_dir, "bunny_res4.ply"), out,
                    "--res", str(res), "-q"], check=True)
    return out


def _die_with_parent():
    """In the child: SIGTERM when the test dies, so that no server outlives a killed test."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001
        pass


class Server:
    """`voxlod view TREE --port 0 ...` running; .url is what it printed, .base without the
    query, .token the token (or None)."""

    def __init__(self, voxlod, tree, *args, tmp=".", name="server"):
        self.log = os.path.join(tmp, name + ".log")
        self.err = open(self.log, "w")
        self.proc = subprocess.Popen([voxlod, "view", tree, "--port", "0"] + list(args),
                                     stdout=subprocess.PIPE, stderr=self.err, text=True,
                                     preexec_fn=_die_with_parent)
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        line = self.proc.stdout.readline().strip() if ready else ""
        if not line.startswith("http://"):
            self.stop()
            raise RuntimeError("the server printed no URL:\n" + self.stderr())
        self.url = line
        m = re.match(r"http://([^/]+)/(\?token=([0-9a-f]+))?$", line)
        if not m:
            raise RuntimeError("unexpected URL " + line)
        self.hostport = m.group(1).replace("HOST", "127.0.0.1")
        self.token = m.group(3)
        self.base = "http://" + self.hostport
        self.port = int(self.hostport.rsplit(":", 1)[1])

    def ws_url(self, token=True):
        q = "?token=" + self.token if token and self.token else ""
        return "ws://" + self.hostport + "/ws" + q

    def alive(self):
        return self.proc.poll() is None

    def stderr(self):
        if not self.err.closed:
            self.err.flush()
        with open(self.log) as f:
            return f.read()

    def stop(self, timeout=30):
        """SIGINT, as Ctrl-C; returns (exit code, seconds it took)."""
        t = time.time()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()
        return self.proc.returncode, time.time() - t


def split_binary(msg):
    """A binary message: [u32 n][n bytes JSON header][body] -> (header dict, body bytes)."""
    import json
    n = struct.unpack("<I", msg[:4])[0]
    return json.loads(msg[4:4 + n].decode()), msg[4 + n:]


def jpeg_scan_markers(jpeg):
    """A JPEG's markers as (DRI segments, the RSTn numbers in the entropy-coded data in order,
    ends with EOI)."""
    sos = jpeg.find(b"\xff\xda")
    if sos < 0:
        return 0, [], False
    head, scan = jpeg[:sos], jpeg[sos:]
    rst = [scan[i + 1] - 0xD0 for i in range(len(scan) - 1)
           if scan[i] == 0xFF and 0xD0 <= scan[i + 1] <= 0xD7]
    return head.count(b"\xff\xdd"), rst, jpeg[-2:] == b"\xff\xd9"


def band_errors(jpeg, png, band=16):
    """Decodes a JPEG frame (PIL: libjpeg-turbo) and the lossless PNG of the same view and
    returns the mean absolute difference per band of `band` rows, or None without PIL. A strip
    that decoded wrong (a lost restart, a shifted DC) stands out as a band far off."""
    try:
        import io
        from PIL import Image, ImageChops, ImageStat
    except ImportError:
        return None
    a = Image.open(io.BytesIO(jpeg)).convert("RGB")
    b = Image.open(io.BytesIO(png)).convert("RGB")
    if a.size != b.size:
        return [255.0]
    d = ImageChops.difference(a, b)
    w, h = a.size
    return [sum(ImageStat.Stat(d.crop((0, y, w, min(h, y + band)))).mean) / 3
            for y in range(0, h, band)]


def png_pixels(data):
    """Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what vx_encode_png and chromium's
    screenshots write) to (w, h, RGB bytes). Uses PIL when it is there (fast), else plain
    Python."""
    try:
        import io
        from PIL import Image
        im = Image.open(io.BytesIO(data)).convert("RGB")
        return im.width, im.height, im.tobytes()
    except ImportError:
        pass
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, b""
    w = h = bpp = 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or color not in (2, 6) or interlace:
                raise ValueError("not 8-bit RGB or RGBA")
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    out = bytearray(w * h * 3)
    prev = bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pr) & 255
        if bpp == 3:
            out[y * w * 3:(y + 1) * w * 3] = line
        else:
            rgb = bytearray(w * 3)
            rgb[0::3], rgb[1::3], rgb[2::3] = line[0::4], line[1::4], line[2::4]
            out[y * w * 3:(y + 1) * w * 3] = rgb
        prev = line
    return w, h, bytes(out)


def object_fraction(w, h, rgb, box=None, background=BACKGROUND, tol=12):
    """The share of pixels (within box = (x0, y0, x1, y1), default all) that differ from the
    background by more than tol in some channel."""
    x0, y0, x1, y1 = box or (0, 0, w, h)
    hit = n = 0
    for y in range(y0, y1, 2):
        row = rgb[(y * w + x0) * 3:(y * w + x1) * 3]
        for i in range(0, len(row), 6):
            n += 1
            if (abs(row[i] - background[0]) > tol or abs(row[i + 1] - background[1]) > tol or
                    abs(row[i + 2] - background[2]) > tol):
                hit += 1
    return hit / max(1, n)
