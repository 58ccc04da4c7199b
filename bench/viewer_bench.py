#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench.py VOXLOD TREE.svo [--gpu|--cpu] [--sizes 1280x720,1920x1080] [--frames 200]
[--warmup 20] [--lod finest|auto|L] [--quality 80] [--label NAME] [--moving] [--encode-threads N]
[--budget SIZE] [--still]

Times `voxlod view` as a page uses it: starts the server on TREE, opens one tab, and for each size
sends a view (the default camera turned a little each time, not moving), waits for its frame and
acknowledges it, one at a time, so that every frame measures one input's way through the server.
The server's timing log (--stats) gives per frame: render, copy back (GPU), JPEG encode, the
websocket write, and input -> bytes sent (the message's arrival to the end of the write of its
frame). Prints one markdown table row per size (medians, and the 90th percentile of the total).
--encode-threads N is passed to the server (JPEG strips encoded at once; 0, the server's default:
min(8, cores)); the row says how many threads and strips encoded the frames.
--still: one view (the default camera) instead of the orbit, which the server draws again while
its tiles arrive: with --budget, the table says how long after the view was sent every tile it
wants was resident, and times those frames.
--budget SIZE: passed to the server (a tiled tree drawn tile by tile within SIZE of GPU memory,
tiles streamed in the background); the table then adds what was resident and how many frames
still had tiles loading.
--moving: the views say the camera moves, so the server may answer with a lower-resolution
preview that fits its frame interval (--fps 60 here); the row then reports the size drawn.

Needs websocket-client (Debian: python3-websocket; elsewhere put its folder on PYTHONPATH)."""
import json
import math
import os
import re
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

try:
    import websocket
except ImportError:
    sys.exit("bench.py: needs websocket-client (python3-websocket, or its folder on PYTHONPATH)")


def arg(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    voxlod, tree = sys.argv[1], sys.argv[2]
    device = "--gpu" if "--gpu" in sys.argv else "--cpu" if "--cpu" in sys.argv else None
    sizes = [tuple(int(v) for v in s.split("x")) for s in arg("--sizes", "1280x720,1920x1080").split(",")]
    frames, warmup = int(arg("--frames", "200")), int(arg("--warmup", "20"))
    lod, quality = arg("--lod", "finest"), int(arg("--quality", "80"))
    label = arg("--label", os.path.basename(tree))
    moving = "--moving" in sys.argv
    still = "--still" in sys.argv
    threads = arg("--encode-threads", None)
    budget = arg("--budget", None)
    tmp = tempfile.mkdtemp(prefix="vx_bench_")
    stats = os.path.join(tmp, "stats.jsonl")
    cmd = [voxlod, "view", tree, "--port", "0", "--fps", "60" if moving else "1000", "--stats", stats,
           "--max-size", "8192x8192", "--quality", str(quality)] + ([device] if device else []) + \
        (["--encode-threads", threads] if threads is not None else []) + \
        (["--budget", budget] if budget is not None else [])
    err = open(os.path.join(tmp, "server.log"), "w")
    srv = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        ready, _, _ = select.select([srv.stdout], [], [], 600)
        url = srv.stdout.readline().strip() if ready else ""
        m = re.match(r"http://([^/]+)/", url)
        if not m:
            err.close()
            sys.exit("bench.py: the server printed no URL:\n" + open(os.path.join(tmp, "server.log")).read())
        ws = websocket.create_connection("ws://%s/ws" % m.group(1), timeout=120)
        info = json.loads(ws.recv())
        cam = info["camera"]
        eye, tgt = cam["eye"], cam["target"]
        d = [eye[i] - tgt[i] for i in range(3)]
        seq = 0
        client_ms, seqs = {}, {}
        t_full = None
        for (w, h) in sizes if still else []:
            # one view, drawn again by the server while its tiles arrive, until none is missing
            seq += 1
            client_ms[(w, h)] = []
            seqs[(w, h)] = (seq, seq)
            t0 = time.perf_counter()
            ws.send("view seq=%d eye=%s target=%s up=0,1,0 fov=%r w=%d h=%d lod=%s q=%d moving=0"
                    % (seq, ",".join(map(repr, eye)), ",".join(map(repr, tgt)), cam["fov"], w, h,
                       lod, quality))
            while time.perf_counter() - t0 < 600:
                op, data = ws.recv_data()
                if op != websocket.ABNF.OPCODE_BINARY:
                    continue
                n = struct.unpack("<I", data[:4])[0]
                hdr = json.loads(data[4:4 + n].decode())
                if hdr["type"] != "frame":
                    continue
                ws.send("ack frame=%d" % hdr["frame"])
                client_ms[(w, h)].append((time.perf_counter() - t0) * 1e3)
                if hdr["seq"] == seq and hdr.get("tiles_pending", 0) == 0:
                    t_full = time.perf_counter() - t0
                    break
        for (w, h) in [] if still else sizes:
            client_ms[(w, h)] = []
            seqs[(w, h)] = (seq + warmup + 1, seq + warmup + frames)
            for k in range(warmup + frames):
                a = 2 * math.pi * k / (warmup + frames)
                c, s = math.cos(a), math.sin(a)
                e = [tgt[0] + c * d[0] + s * d[2], eye[1], tgt[2] - s * d[0] + c * d[2]]
                seq += 1
                t0 = time.perf_counter()
                ws.send("view seq=%d eye=%s target=%s up=0,1,0 fov=%r w=%d h=%d lod=%s q=%d moving=%d"
                        % (seq, ",".join(map(repr, e)), ",".join(map(repr, tgt)), cam["fov"], w, h,
                           lod, quality, moving))
                while True:
                    op, data = ws.recv_data()
                    if op != websocket.ABNF.OPCODE_BINARY:
                        msg = json.loads(data.decode())
                        if msg.get("type") == "error":
                            sys.exit("bench.py: server error: " + msg["msg"])
                        continue
                    n = struct.unpack("<I", data[:4])[0]
                    hdr = json.loads(data[4:4 + n].decode())
                    if hdr["type"] == "frame":
                        ws.send("ack frame=%d" % hdr["frame"])
                        if hdr["seq"] == seq and (hdr["full"] or moving):
                            break
                if k >= warmup:
                    client_ms[(w, h)].append((time.perf_counter() - t0) * 1e3)

        ws.close()
    finally:
        srv.send_signal(signal.SIGINT)
        try:
            srv.wait(timeout=60)
        except subprocess.TimeoutExpired:
            srv.kill()
        err.close()
    rows = [json.loads(line) for line in open(stats)]
    log = open(os.path.join(tmp, "server.log")).read()
    dev = "GPU" if rows and rows[0]["gpu"] else "CPU"
    m = re.search(r"JPEG on (\d+) thread", log)
    enc_threads = m.group(1) if m else "?"
    print("server: " + " ".join(cmd))
    print("timing log (a JSON line per frame): " + stats)
    print([ln for ln in log.splitlines() if "drawn on" in ln][0] if "drawn on" in log else "")
    print("| tree | device | size | render ms | copy ms | encode ms (threads, strips) | send ms | "
          "input -> sent ms (median / p90) | frames/s served | JPEG KiB | round trip ms (client) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (w, h) in sizes:
        lo, hi = seqs[(w, h)]
        r = [x for x in rows if x["kind"] == "jpeg" and lo <= x["seq"] <= hi and
             (x["full"] or moving)]
        if not r:
            continue
        med = {k: statistics.median(x[k] for x in r)
               for k in ("ms_render", "ms_copy", "ms_encode", "ms_send", "ms_server", "bytes")}
        p90 = pct([x["ms_server"] for x in r], 90)
        busy = med["ms_render"] + med["ms_copy"] + med["ms_encode"]
        shown = "%dx%d" % (w, h)
        if moving:
            dw = statistics.median(x["w"] for x in r)
            dh = statistics.median(x["h"] for x in r)
            shown += " moving (drawn %dx%d)" % (dw, dh)
        strips = statistics.median(x.get("strips", 1) for x in r)
        print(("| %s | %s | %s | %.2f | %.2f | %.2f (%s, %g) | %.2f | %.2f / %.2f | %.0f | %.0f "
               "| %.2f |") % (
            label, dev, shown, med["ms_render"], med["ms_copy"], med["ms_encode"], enc_threads,
            strips, med["ms_send"],
            med["ms_server"], p90, 1000.0 / busy if busy > 0 else 0, med["bytes"] / 1024,
            statistics.median(client_ms[(w, h)])))
        if still:
            print("|   still view | | | every tile it wants resident %s after the view was sent "
                  "| | | | | | | |" % ("%.2f s" % t_full if t_full is not None else "never"))
        if budget is not None:
            print("|   tiles | | | resident %.0f MiB (median, budget %s) | frames with tiles still "
                  "loading: %d of %d | | | | | | |" % (
                      statistics.median(x.get("resident", 0) for x in r) / 1048576.0, budget,
                      sum(1 for x in r if x.get("tiles_pending", 0)), len(r)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
