#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""test_viewer_protocol.py VOXLOD DATA_DIR [--gpu] - `voxlod view` without a browser: the HTTP
side (the page, 404 elsewhere, methods, Host/Origin checks, the token), frames over the websocket
(JPEG frames, JPEGs encoded in strips on several threads and joined with restart markers, the PNG,
clamped sizes, coalesced floods, several tabs) and every bad input a client
can send (malformed, unknown, oversized, binary and fragmented messages, NaN cameras, absurd sizes,
lying acks, a tab that never reads), each followed by a check that the server still serves the
other tabs, and a clean Ctrl-C. With --gpu the same against `voxlod view --gpu` (the device).

Needs Debian's python3-websocket (websocket-client); skips (77) without it."""
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from viewer_common import (BACKGROUND, Server, band_errors,  # noqa: E402
                           jpeg_scan_markers, make_tree, object_fraction, png_pixels,
                           split_binary)

try:
    import websocket  # websocket-client
except ImportError:
    print("SKIP: python3-websocket (websocket-client) is not installed for /usr/bin/python3")
    sys.exit(1 if os.environ.get("CI", "").lower() not in ("", "0", "false", "no") else 77)

FAILS = []


def ok(name):
    print("ok   " + name, flush=True)


def bad(name, why):
    FAILS.append(name)
    print("FAIL %s: %s" % (name, why), flush=True)


def check(cond, name, why=""):
    if cond:
        ok(name)
    else:
        bad(name, why)
    return cond


class Tab:
    """A page's websocket, as a test drives it."""

    def __init__(self, srv, origin=None, token=True, timeout=20):
        kw = {"timeout": timeout}
        if origin:
            kw["origin"] = origin
        self.ws = websocket.create_connection(srv.ws_url(token), **kw)
        self.info = json.loads(self.ws.recv())
        self.errors = []
        self.seq = 0
        cam = self.info["camera"]
        self.eye, self.target = cam["eye"], cam["target"]

    def send(self, text):
        self.ws.send(text)

    def view(self, w=160, h=120, turn=0.0, extra="", moving=0):
        """A view orbiting `turn` radians from the default camera."""
        import math
        self.seq += 1
        d = [self.eye[i] - self.target[i] for i in range(3)]
        c, s = math.cos(turn), math.sin(turn)
        e = [self.target[0] + c * d[0] + s * d[2], self.eye[1], self.target[2] - s * d[0] + c * d[2]]
        self.send("view seq=%d eye=%s target=%s up=0,1,0 fov=40 w=%d h=%d moving=%d%s" % (
            self.seq, ",".join(repr(x) for x in e), ",".join(repr(x) for x in self.target), w, h,
            moving, (" " + extra) if extra else ""))
        return self.seq

    def recv_any(self):
        """The next message: ('text', dict) or ('binary', header, body)."""
        op, data = self.ws.recv_data()
        if op == websocket.ABNF.OPCODE_TEXT:
            return ("text", json.loads(data.decode()))
        return ("binary",) + split_binary(data)

    def frame(self, kind="frame", ack=True, seq=None, full=None):
        """The next image of that kind (optionally showing view `seq`, full or not); text messages
        on the way are kept in .errors."""
        while True:
            m = self.recv_any()
            if m[0] == "text":
                if m[1].get("type") == "error":
                    self.errors.append(m[1]["msg"])
                continue
            hdr, body = m[1], m[2]
            if hdr["type"] == "frame" and ack:
                self.send("ack frame=%d" % hdr["frame"])
            if hdr["type"] != kind or (seq is not None and hdr["seq"] != seq) or \
                    (full is not None and hdr["full"] != full):
                continue
            return hdr, body

    def error(self):
        """The next error message's text (frames on the way are acknowledged and skipped)."""
        while True:
            m = self.recv_any()
            if m[0] == "text" and m[1].get("type") == "error":
                return m[1]["msg"]
            if m[0] == "binary" and m[1]["type"] == "frame":
                self.send("ack frame=%d" % m[1]["frame"])

    def ping(self):
        self.send("ping")
        while True:
            m = self.recv_any()
            if m[0] == "text" and m[1].get("type") == "pong":
                return m[1]
            if m[0] == "binary" and m[1]["type"] == "frame":
                self.send("ack frame=%d" % m[1]["frame"])

    def closed_with(self, timeout=15):
        """Waits for the server to close: the close code, or -1 when the socket just ended."""
        self.ws.settimeout(timeout)
        try:
            while True:
                op, data = self.ws.recv_data(control_frame=True)
                if op == websocket.ABNF.OPCODE_CLOSE:
                    return struct.unpack(">H", data[:2])[0] if len(data) >= 2 else 1005
                if op == websocket.ABNF.OPCODE_BINARY:
                    hdr, _ = split_binary(data)
                    if hdr["type"] == "frame":
                        self.ws.send("ack frame=%d" % hdr["frame"])
        except (websocket.WebSocketConnectionClosedException, ConnectionError, OSError):
            return -1
        except websocket.WebSocketTimeoutException:
            return None

    def close(self):
        try:
            self.ws.close(timeout=2)
        except Exception:
            pass


def http(srv, path, method="GET", headers=None):
    """(status, headers, body) of one request (no redirects, no exceptions for errors)."""
    req = urllib.request.Request(srv.base + path, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def raw_http(srv, data, timeout=10):
    """Sends raw bytes to the server and returns what comes back until it closes."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=timeout)
    try:
        s.sendall(data)
        out = b""
        while True:
            try:
                k = s.recv(65536)
            except (ConnectionError, socket.timeout):
                break
            if not k:
                break
            out += k
        return out
    finally:
        s.close()


def raw_ws(srv):
    """A websocket opened by hand (handshake checked), for frames websocket-client won't send."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(("GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
               % srv.hostport).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        k = s.recv(1)
        if not k:
            raise RuntimeError("handshake refused")
        head += k
    if b" 101 " not in head.split(b"\r\n")[0]:
        raise RuntimeError("handshake refused: " + head.split(b"\r\n")[0].decode())
    return s


def ws_frame(op, payload, fin=True, length=None):
    """One masked client frame; `length` may claim another payload length than the real one."""
    n = len(payload) if length is None else length
    b0 = (0x80 if fin else 0) | op
    if n < 126:
        h = bytes([b0, 0x80 | n])
    elif n < 65536:
        h = bytes([b0, 0x80 | 126]) + struct.pack(">H", n)
    else:
        h = bytes([b0, 0x80 | 127]) + struct.pack(">Q", n)
    mask = b"\x11\x22\x33\x44"
    return h + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload))


def raw_closed(s, timeout=15):
    """True when the server ends a raw connection (a close frame or EOF) within timeout."""
    s.settimeout(timeout)
    try:
        while True:
            k = s.recv(65536)
            if not k:
                return True
            if k[0] & 0x0f == 0x8:
                return True
    except (ConnectionError, OSError):
        return True
    except socket.timeout:
        return False


def still_serves(srv, name):
    """A fresh tab gets a frame: the server survived what came before."""
    try:
        t = Tab(srv)
        seq = t.view(64, 48)
        hdr, body = t.frame(seq=seq)
        t.close()
        return check(body[:2] == b"\xff\xd8" and hdr["w"] == 64, name + ": server still serves")
    except Exception as e:  # noqa: BLE001
        return bad(name + ": server still serves", repr(e))


# ---- the tests -----------------------------------------------------------------------------

def test_http(srv):
    st, hd, body = http(srv, "/")
    check(st == 200 and hd.get("Content-Type", "").startswith("text/html") and
          body.startswith(b"<!DOCTYPE html>"), "GET / serves the page", "%s %s" % (st, hd))
    check("default-src 'none'" in hd.get("Content-Security-Policy", "") and
          hd.get("X-Frame-Options") == "DENY", "the page carries CSP and no-framing headers")
    check(re.search(rb"""(src|href)\s*=\s*["']?(https?:)?//""", body) is None and
          b"import(" not in body, "the page loads nothing from elsewhere")
    st, _, body = http(srv, "/", method="HEAD")
    check(st == 200 and body == b"", "HEAD / answers without a body")
    check(http(srv, "/index.html")[0] == 200, "GET /index.html serves the page")
    for p in ["/nope", "/favicon.ico", "/index.html/x", "/ws", "/etc/passwd", "/%2e%2e/%2e%2e/etc/passwd",
              "/" + "a" * 3000]:
        st = http(srv, p)[0]
        check(st == 404, "GET %s is 404" % p[:40], "got %s" % st)
    out = raw_http(srv, b"GET /../../../etc/passwd HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    check(b"root:" not in out and (b" 404 " in out or b" 400 " in out or out == b""),
          "a path outside the page is not served", out[:80])
    check(http(srv, "/", method="POST")[0] == 405, "POST / is 405")
    st = http(srv, "/", headers={"Host": "evil.example:%d" % srv.port})[0]
    check(st == 403, "a foreign Host header is refused (DNS rebinding)", "got %s" % st)
    out = raw_http(srv, b"\x00\x01\x02 garbage\r\n\r\n")
    check(b" 200 " not in out, "a garbage request line gets no page")
    out = raw_http(srv, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n")
    check(b" 200 " not in out, "an oversized request head is refused")
    still_serves(srv, "malformed HTTP")


def test_origin(srv):
    try:
        t = Tab(srv, origin="http://evil.example")
        t.close()
        bad("a websocket from another origin is refused", "it was accepted")
    except Exception:  # noqa: BLE001
        ok("a websocket from another origin is refused")


def test_frames(srv, depth):
    t = Tab(srv)
    info = t.info
    check(info["depth"] == depth and len(info["levels"]) == depth + 1 and
          info["max_w"] == 512 and "camera" in info, "the first message describes the tree")
    seq = t.view(320, 240)
    hdr, body = t.frame(seq=seq)
    check(body[:2] == b"\xff\xd8" and body[-2:] == b"\xff\xd9" and hdr["w"] == 320 and
          hdr["h"] == 240 and hdr["full"] == 1, "a view gives a 320x240 JPEG frame", str(hdr))
    check(all(isinstance(hdr[k], (int, float)) and hdr[k] >= 0
              for k in ("ms_render", "ms_copy", "ms_encode", "ms_server")),
          "the frame header carries render, copy, encode and server times")
    t.send("png")
    hdr, body = t.frame(kind="png")
    w, h, rgb = png_pixels(body)
    frac = object_fraction(w, h, rgb)
    check(w == 320 and h == 240 and 0.03 < frac < 0.9, "the PNG shows the object at full size",
          "%dx%d, %.3f of pixels off the background" % (w, h, frac))
    # each level of detail and shading draws
    for lod in ["auto", "0", str(depth // 2), "finest"]:
        seq = t.view(96, 72, extra="lod=%s shade=blocks" % lod)
        hdr, _ = t.frame(seq=seq)
        want = "auto" if lod == "auto" else depth if lod == "finest" else int(lod)
        check(hdr["lod"] == want, "lod=%s draws at that level" % lod, str(hdr))
    # every shading mode draws; albedo of a grey tree: the object in one grey (sRGB of linear
    # 0.8), nothing else off the background
    check(info.get("color") == 0, "the first message says the tree is grey", str(info.get("color")))
    for name, want in [("normals", 2), ("smooth", 0), ("albedo", 3)]:
        seq = t.view(160, 120, extra="lod=finest shade=%s" % name)
        hdr, _ = t.frame(seq=seq)
        check(hdr["shade"] == want, "shade=%s draws in that mode" % name, str(hdr))
    t.send("png")
    hdr, body = t.frame(kind="png")
    w, h, rgb = png_pixels(body)
    px = set(tuple(rgb[i:i + 3]) for i in range(0, len(rgb), 3))
    check(px == {BACKGROUND, (231, 231, 231)} and hdr["shade"] == 3,
          "albedo of a grey tree is grey 231 on the background", str(sorted(px)[:6]))
    # absurd sizes are clamped, keeping the aspect ratio
    for (w, h), want in [((100000, 100000), (512, 512)), ((100000, 50000), (512, 256)),
                         ((1, 100000), (1, 512)), ((2147483647, 1), (512, 1))]:
        seq = t.view(w, h, extra="lod=3")
        hdr, _ = t.frame(seq=seq)
        check((hdr["w"], hdr["h"]) == want, "a %dx%d request is clamped to %dx%d" % (w, h, *want),
              "got %dx%d" % (hdr["w"], hdr["h"]))
    t.close()


def test_strips(srv):
    """--encode-threads 3: a 512x384 frame is encoded in 6 strips (of 32768 pixels, the smallest)
    at once and joined into one baseline JPEG: one DRI segment, RST0..RST4 in order, EOI; decoded,
    every band of 16 rows is close to the lossless PNG of the same view (a strip joined wrong
    would be far off). Small frames stay in one piece. At quality 95 (4:4:4, 8-row MCUs) the
    same."""
    t = Tab(srv)
    for q in (80, 95):
        seq = t.view(512, 384, extra="q=%d" % q)
        hdr, body = t.frame(seq=seq)
        dri, rst, eoi = jpeg_scan_markers(body)
        check(hdr["strips"] == 6 and body[:2] == b"\xff\xd8" and eoi and dri == 1 and
              rst == list(range(hdr["strips"] - 1)),
              "q%d: a 512x384 frame is 6 strips joined with restart markers" % q,
              "strips %s, DRI %d, RST %s" % (hdr.get("strips"), dri, rst))
        t.send("png")
        _, png = t.frame(kind="png")
        err = band_errors(body, png)
        if err is None:
            print("     (no PIL: the strips' pixels are not compared)")
        else:
            check(max(err) < 10 and sum(err) / len(err) < 4,
                  "q%d: each band of 16 rows decodes close to the PNG (worst %.2f, mean %.2f)"
                  % (q, max(err), sum(err) / len(err)), ["%.1f" % e for e in err])
    seq = t.view(160, 120)
    hdr, _ = t.frame(seq=seq)
    check(hdr["strips"] == 1, "a small frame is encoded in one piece", str(hdr))
    t.close()


# (message, part of the expected error)
BAD_MESSAGES = [
    (b"bogus", "unknown command"),
    (b"view eye=1,2", "x,y,z"),
    (b"view eye=nan,0,0", "x,y,z"),
    (b"view eye=inf,0,0", "x,y,z"),
    (b"view eye=0x10,0,0", "x,y,z"),
    (b"view eye=1e999,0,0", "x,y,z"),
    (b"view eye=1e31,0,0", "x,y,z"),
    (b"view eye=+1,0,0", "x,y,z"),
    (b"view fov=NaN", "fov"),
    (b"view fov=0", "fov"),
    (b"view fov=180", "fov"),
    (b"view w=0", "pixel count"),
    (b"view w=-5", "pixel count"),
    (b"view w=99999999999", "pixel count"),
    (b"view lod=99", "lod"),
    (b"view lod=-1", "lod"),
    (b"view shade=pink", "shade"),
    (b"view q=0", "quality"),
    (b"view moving=2", "moving"),
    (b"view seq=-1", "seq"),
    (b"view eye=1,1,1 target=1,1,1", "eye is at the target"),
    (b"view up=0,0,0", "up vector is zero"),
    (b"view eye=0,5,0 target=0,0,0 up=0,1,0", "along the view"),
    (b"view  w=5", "empty field"),
    (b"view w=5 ", "empty field"),
    (b"view w=5 w=6", "twice"),
    (b"view foo=1", "no field"),
    (b"view eye", "key=value"),
    (b"png q=1", "no field"),
    (b"ack", "needs frame"),
    (b"ack frame=999999", "never sent"),
    (b"ack frame=x", "whole number"),
    (b"ping x=1", "no field"),
    (b"", "empty"),
    ("view shade=smooth\u00e9".encode(), "printable"),
    (b"view\x01 w=1", "printable"),
    (b"view w=1\x00", "printable"),
]


def test_bad_messages(srv):
    tab = None
    used = 0
    for msg, want in BAD_MESSAGES:
        if tab is None or used == 12:  # a tab is closed after 16 bad messages
            if tab:
                tab.close()
            tab = Tab(srv)
            tab.view(32, 24)
            used = 0
        tab.ws.send(msg, opcode=websocket.ABNF.OPCODE_TEXT)
        used += 1
        err = tab.error()
        check(want in err, "refused: %r" % msg[:40], "error was %r" % err)
    seq = tab.view(48, 36)
    hdr, _ = tab.frame(seq=seq)
    check(hdr["w"] == 48, "a tab keeps working after bad messages")
    tab.close()
    # the 16th bad message closes the tab
    t = Tab(srv)
    for _ in range(16):
        t.send("nonsense")
    check(t.closed_with() == 1008, "16 bad messages close the tab (1008)")
    still_serves(srv, "bad messages")


def test_bad_frames(srv):
    t = Tab(srv)
    t.send("view w=" + "9" * 2000)
    check(t.closed_with() == 1009, "a text message over 1024 bytes closes the tab (1009)")
    t = Tab(srv)
    t.ws.send_binary(b"\x00\x01view")
    check(t.closed_with() == 1003, "a binary message closes the tab (1003)")
    s = raw_ws(srv)
    s.sendall(ws_frame(0x1, b"vi", fin=False) + ws_frame(0x0, b"ew w=4"))
    check(raw_closed(s), "a fragmented message closes the tab")
    s.close()
    s = raw_ws(srv)
    s.sendall(ws_frame(0x1, b"abc", length=1 << 62))
    check(raw_closed(s), "a frame claiming 2^62 bytes closes the connection")
    s.close()
    s = raw_ws(srv)
    s.sendall(ws_frame(0x1, b"x" * (1 << 20)))
    check(raw_closed(s), "a 1 MiB text frame closes the tab")
    s.close()
    s = raw_ws(srv)
    s.sendall(b"\xff\xff\xff\xff\xff\xff\xff\xff" * 4)
    check(raw_closed(s), "bytes that are no websocket frame close the connection")
    s.close()
    still_serves(srv, "bad frames")


def test_flood(srv):
    """3000 views sent without reading: coalesced, the last one wins."""
    t = Tab(srv)
    t0 = time.time()
    for i in range(3000):
        last = t.view(96, 72, turn=i * 0.002, moving=1 if i < 2999 else 0)
    hdr, _ = t.frame(seq=last, full=1)
    frames = hdr["frame"]
    check(frames < 200, "a flood of 3000 views is coalesced (%d frames drawn)" % frames)
    check(time.time() - t0 < 30, "the flood's last view arrives promptly (%.1fs)" % (time.time() - t0))
    t.close()


def tabs_open(tab, want, timeout=10):
    """The server's count of open tabs, asked until it is `want` (closes finish asynchronously)."""
    t = time.time()
    while True:
        n = tab.ping()["tabs"]
        if n == want or time.time() - t > timeout:
            return n
        time.sleep(0.1)


def test_tabs(srv):
    probe = Tab(srv)
    check(tabs_open(probe, 1) == 1, "earlier tabs are all closed")
    probe.close()
    time.sleep(0.5)
    tabs = [Tab(srv) for _ in range(3)]
    seqs = [t.view(40 + 8 * i, 30 + 8 * i) for i, t in enumerate(tabs)]
    good = True
    for i, t in enumerate(tabs):
        hdr, _ = t.frame(seq=seqs[i])
        good &= hdr["w"] == 40 + 8 * i
    check(good, "three tabs at once each get their own frames")
    n = tabs_open(tabs[0], 3)
    check(n == 3, "the server counts 3 open tabs", n)
    for t in tabs:
        t.close()
    # closed tabs free their state: open and close many, then one is left
    for _ in range(12):
        Tab(srv).close()
    t = Tab(srv)
    n = tabs_open(t, 1)
    check(n == 1, "closed tabs are gone (1 open after 15 closed)", n)
    extra = [Tab(srv) for _ in range(3)]  # --max-tabs 4
    try:
        Tab(srv).close()
        bad("a tab beyond --max-tabs is refused", "accepted")
    except Exception:  # noqa: BLE001
        ok("a tab beyond --max-tabs is refused")
    for x in extra + [t]:
        x.close()
    time.sleep(1.0)
    still_serves(srv, "many tabs")


def test_no_ack(srv):
    """A tab that stops reading and acknowledging: at most 2 frames go out, the others are
    served meanwhile, and after --timeout (2 s here) it is dropped."""
    t = Tab(srv)
    for i in range(15):  # spread out, so that each could have its own frame
        t.view(64, 48, turn=i * 0.1)
        time.sleep(0.03)
    other = Tab(srv)
    t0 = time.time()
    for i in range(5):
        seq = other.view(64, 48, turn=i * 0.3)
        other.frame(seq=seq)
    check(time.time() - t0 < 10, "another tab is served meanwhile (%.2fs for 5 frames)" % (time.time() - t0))
    got, closed = 0, False
    t.ws.settimeout(10)
    try:
        while True:
            m = t.recv_any()
            got += m[0] == "binary"
    except websocket.WebSocketTimeoutException:
        pass
    except (websocket.WebSocketConnectionClosedException, ConnectionError, OSError):
        closed = True
    check(got == 2, "a tab that does not acknowledge gets 2 frames, no more (got %d)" % got)
    check(closed or t.closed_with(timeout=15) is not None, "the silent tab is dropped after --timeout")
    other.close()


def test_no_read(srv):
    """A client that floods requests but never reads what comes back: the server's replies back
    up, its write times out and the client is dropped; the others are served meanwhile."""
    s = raw_ws(srv)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stop = threading.Event()
    sent = [0]

    def flood():
        chunk = ws_frame(0x1, b"ping") * 256
        try:
            while not stop.is_set():
                s.sendall(chunk)
                sent[0] += 256
        except OSError:
            pass
    th = threading.Thread(target=flood, daemon=True)
    th.start()
    time.sleep(1.0)
    other = Tab(srv)
    t0 = time.time()
    for i in range(5):
        seq = other.view(64, 48, turn=i * 0.3)
        other.frame(seq=seq)
    check(time.time() - t0 < 10, "others are served while a client does not read (%.2fs)" % (time.time() - t0))
    th.join(timeout=25)
    dropped = not th.is_alive()
    stop.set()
    check(dropped, "the client that does not read is dropped (its sends fail after %d pings)" % sent[0])
    s.close()
    other.close()
    still_serves(srv, "a client that does not read")


def test_stats(path):
    rows = []
    with open(path) as f:
        for line in f:
            rows.append(json.loads(line))
    keys = {"tab", "frame", "seq", "kind", "w", "h", "full", "gpu", "ms_wait", "ms_render",
            "ms_copy", "ms_encode", "ms_send", "ms_server", "bytes", "strips"}
    check(rows and all(keys <= set(r) for r in rows) and
          all(r["ms_server"] >= r["ms_render"] for r in rows if r["kind"] == "jpeg"),
          "--stats logs a JSON line per frame (%d lines)" % len(rows))


def test_token(voxlod, tree, tmp, device):
    srv = Server(voxlod, tree, device, "--token", "--encode-threads", "1", tmp=tmp, name="token")
    try:
        check(srv.token and len(srv.token) == 32, "--token puts a 32-digit token into the URL", srv.url)
        check(http(srv, "/")[0] == 403, "no token: 403")
        check(http(srv, "/?token=" + "0" * 32)[0] == 403, "a wrong token: 403")
        check(http(srv, "/?token=" + srv.token)[0] == 200, "the token: the page")
        try:
            Tab(srv, token=False).close()
            bad("a websocket without the token is refused", "accepted")
        except Exception:  # noqa: BLE001
            ok("a websocket without the token is refused")
        t = Tab(srv)
        seq = t.view(32, 24)
        check(t.frame(seq=seq)[0]["w"] == 32, "a websocket with the token gets frames")
        seq = t.view(640, 480)
        hdr, body = t.frame(seq=seq)
        check(hdr["strips"] == 1 and jpeg_scan_markers(body)[:2] == (0, []),
              "--encode-threads 1: a 640x480 frame in one piece, no restart markers")
        t.close()
    finally:
        srv.stop()
    srv = Server(voxlod, tree, device, "--host", "0.0.0.0", tmp=tmp, name="anyhost")
    try:
        check(srv.token is not None, "--host 0.0.0.0 requires a token", srv.url)
        check(http(srv, "/")[0] == 403, "--host 0.0.0.0 without the token: 403")
    finally:
        srv.stop()


def test_tiled(voxlod, data, tmp, device):
    """A tiled tree served tile by tile within --budget: frames come at once, drawn partly from
    coarse levels while tiles load in the background, and the view is drawn again by itself until
    no tile is missing; then its PNG is the untiled tree's image of the same view."""
    tiled = os.path.join(tmp, "tiled.svo")
    subprocess.run([voxlod, "convert", os.path.join(data, "bunny_res4.ply"), tiled, "--res", "256",
                    "--tile-depth", "6", "-q"], check=True)
    plain = make_tree(voxlod, data, tmp, res=256)
    pngs = []
    for path, args in [(tiled, ["--budget", "1M"]), (plain, [])]:
        srv = Server(voxlod, path, device, *args, tmp=tmp, name="tiled")
        try:
            t = Tab(srv)
            check(t.info["depth"] == 8 and len(t.info["levels"]) == 9,
                  "a tiled tree's first message describes its 9 levels", str(t.info["depth"]))
            seq = t.view(320, 240, extra="lod=finest")
            hdr, _ = t.frame(seq=seq)
            pending, frames, t0 = hdr.get("tiles_pending", 0), 1, time.time()
            while pending and time.time() - t0 < 20:
                hdr, _ = t.frame(seq=seq)
                pending = hdr["tiles_pending"]
                frames += 1
            check(pending == 0, "the view is drawn again until its tiles are resident (%d frames)"
                  % frames, str(hdr))
            if args:
                check(frames > 1 and 0 < hdr["resident"] <= 1 << 20,
                      "a 1 MiB budget: tiles streamed, what is resident within it", str(hdr))
                check("tiles drawn within a 1.00 MiB budget" in srv.stderr(),
                      "the server reports the budget")
            t.send("png")
            _, body = t.frame(kind="png")
            pngs.append(png_pixels(body))
            t.close()
        finally:
            srv.stop()
    (w, h, a), (_, _, b) = pngs
    differ = sum(1 for i in range(0, len(a), 3) if a[i:i + 3] != b[i:i + 3]) / (w * h)
    off = object_fraction(w, h, a)
    # the far tiles keep coarser levels within 1 MiB: their planes differ from the voxels
    check(0.03 < off and differ < 0.25, "the tiled view shows the model (%.3f differs)" % differ)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    voxlod, data = sys.argv[1], sys.argv[2]
    device = "--gpu" if "--gpu" in sys.argv[3:] else "--cpu"
    tmp = tempfile.mkdtemp(prefix="vx_view_")
    tree = make_tree(voxlod, data, tmp)
    stats = os.path.join(tmp, "stats.jsonl")
    srv = Server(voxlod, tree, device, "--max-size", "512x512", "--timeout", "2", "--max-tabs", "4",
                 "--fps", "240", "--stats", stats, "--encode-threads", "3", "-v", tmp=tmp)
    t_all = time.time()
    try:
        first = Tab(srv)
        depth = first.info["depth"]
        first.close()
        for name, fn in [("http", lambda: test_http(srv)), ("origin", lambda: test_origin(srv)),
                         ("frames", lambda: test_frames(srv, depth)),
                         ("strips", lambda: test_strips(srv)),
                         ("bad messages", lambda: test_bad_messages(srv)),
                         ("bad frames", lambda: test_bad_frames(srv)),
                         ("flood", lambda: test_flood(srv)), ("tabs", lambda: test_tabs(srv)),
                         ("no ack", lambda: test_no_ack(srv)), ("no read", lambda: test_no_read(srv))]:
            t0 = time.time()
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                bad(name, "raised %r" % e)
            print("     (%s: %.1fs)" % (name, time.time() - t0), flush=True)
            if not srv.alive():
                bad(name, "the server died:\n" + srv.stderr())
                break
        # Ctrl-C with a tab open
        t = Tab(srv)
        t.view(64, 48)
        code, secs = srv.stop()
        log = srv.stderr()
        check(code == 0 and "stopped" in log, "Ctrl-C stops the server cleanly (%.1fs)" % secs,
              "exit %s\n%s" % (code, log[-2000:]))
        check("dropping tab" in log, "the log names the dropped tabs")
        check("JPEG on 3 threads" in log and "in one piece" not in log,
              "the server encodes on 3 threads and never fell back to one piece")
        test_stats(stats)
        test_token(voxlod, tree, tmp, device)
        t0 = time.time()
        test_tiled(voxlod, data, tmp, device)
        print("     (tiled: %.1fs)" % (time.time() - t0), flush=True)
    finally:
        if srv.alive():
            srv.stop()
    print("%d failed; %.1fs" % (len(FAILS), time.time() - t_all))
    if FAILS:
        print("server log (kept in %s):\n%s" % (tmp, srv.stderr()[-3000:]))
        return 1
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
