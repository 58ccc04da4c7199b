# SPDX-License-Identifier: Apache-2.0
"""A tiled conversion as tasks on a Dask LocalCluster, against one process: wall time, each
worker process's peak resident memory, and the files compared byte for byte.

Modes: "one" (voxlod.convert in this process, out=), "split" (convert(client=): where the
library splits the mesh by tile, a first task writes the parts file and no worker loads the
mesh), "whole" (every worker loads the mesh and plans the whole build, as before the split
existed; forced here by skipping the split task).

    python3 bench/tiles_dask.py city.ply --res 32768 --sign pseudo-normal --workers 2 \\
        --threads 8 --modes one,split,whole --tmp /tmp/vx
"""

import argparse
import hashlib
import os
import resource
import sys
import time


def peak_rss() -> int:
    """This process's peak resident bytes: VmHWM (its own address space; ru_maxrss would carry
    the peak of the process a worker was forked from)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def md5(path: str) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 24), b""):
            h.update(b)
    return h.hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mesh")
    ap.add_argument("--res", type=int, default=32768)
    ap.add_argument("--tile-depth", type=int, default=0)
    ap.add_argument("--sign", default="pseudo-normal")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2, help="threads per worker process")
    ap.add_argument("--gpu", action="store_true", help="tiles on the GPU (every worker)")
    ap.add_argument("--modes", default="one,split,whole")
    ap.add_argument("--tmp", default="/tmp")
    a = ap.parse_args()

    import voxlod
    from dask.distributed import Client, LocalCluster
    from voxlod import _tiles

    files = {}
    for mode in a.modes.split(","):
        out = os.path.join(a.tmp, f"tiles_dask_{mode}.svo")
        t0 = time.perf_counter()
        workers = {}
        if mode == "one":
            voxlod.convert(a.mesh, res=a.res, tile_depth=a.tile_depth, sign=a.sign, out=out,
                           gpu=a.gpu or None, gpus="all" if a.gpu else None, progress=False)
            summary = {"split": "(library's choice)"}
        else:
            with LocalCluster(n_workers=a.workers, threads_per_worker=a.threads, processes=True,
                              memory_limit=0, dashboard_address=None) as cluster, \
                    Client(cluster) as client:
                t0 = time.perf_counter()  # the cluster's start-up is not the conversion's
                spec = dict(res=a.res, band=0.0, device=2 if a.gpu else 1, mem_limit=0,
                            threads=a.threads, sign_rule=1 if a.sign == "pseudo-normal" else 0,
                            tile_depth=a.tile_depth, zstd_level=0, max_error=0.0)
                m, o = os.fsencode(os.path.abspath(a.mesh)), os.fsencode(out)
                if mode == "split":
                    summary = _tiles.convert_on_cluster(client, m, o, spec, progress=False)
                else:
                    spec = dict(spec, mesh=m)
                    run = os.urandom(6).hex()
                    info = client.submit(_tiles._plan_task, spec, pure=False).result()
                    summary = _tiles._tiles_and_merge(client, o, spec, info, run,
                                                      o + b".tiles-" + run.encode(), t0, False)
                workers = client.run(peak_rss)
        wall = time.perf_counter() - t0
        files[mode] = out
        print(f"{mode}: {wall:.1f} s wall, split {summary.get('split')}, this process's peak "
              f"{peak_rss() / 2**30:.1f} GiB, workers' peaks "
              f"{', '.join(f'{v / 2**30:.1f}' for v in workers.values()) or '-'} GiB, "
              f"{os.path.getsize(out)} bytes, md5 {md5(out)[:8]}", flush=True)
        for k in ("sec_plan", "sec_tiles", "sec_merge", "tiles"):
            if k in summary:
                print(f"  {k}: {summary[k]}", flush=True)
    sums = {md5(p) for p in files.values()}
    same = len(sums) == 1
    print("IDENTICAL" if same else "DIFFERENT", flush=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
