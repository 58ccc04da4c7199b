# SPDX-License-Identifier: Apache-2.0
"""`python -m voxlod samples OUT_DIR MESH_OR_DIR...`: sample_meshes from a shell (parse, call,
print a summary). Exit status 0 when every mesh succeeded, 1 when some failed, 2 on bad usage.

`python -m voxlod convert MESH OUT.svo --res N [--tile-depth T] [--scheduler ADDR]`: a mesh into
a .svo; with --scheduler, a tiled build as tasks on that Dask cluster (convert(client=)), the
same bytes as on one machine. Exit status 0 on success, 1 on failure, 2 on bad usage."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, List, Optional

from ._datasets import PRESETS, sample_meshes


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m voxlod")
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("samples", help="signed-distance training samples from many meshes: "
                       "one .npz per mesh in OUT_DIR (resumable)")
    s.add_argument("out_dir", metavar="OUT_DIR")
    s.add_argument("inputs", metavar="MESH_OR_DIR", nargs="+")
    s.add_argument("--points", type=int, default=250_000, help="samples per mesh (250000)")
    s.add_argument("--res", type=int, default=256, help="cells per axis, a power of two (256)")
    s.add_argument("--preset", choices=PRESETS, default="deepsdf")
    s.add_argument("--normalize", choices=("sphere", "cube"), default="sphere")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--band", type=float, default=None, help="field truncation in voxels (2)")
    s.add_argument("--workers", type=int, default=None, help="local processes (all cores)")
    s.add_argument("--scheduler", metavar="tcp://HOST:PORT", default=None,
                   help="run on this Dask cluster (needs dask[distributed])")
    s.add_argument("--shard", metavar="i/N", default=None,
                   help="take every N-th mesh of the sorted list, from the i-th")
    s.add_argument("--device", choices=("cpu", "gpu"), default=None)
    s.add_argument("--mem-limit", default=None, metavar="BYTES",
                   help="each conversion's peak memory, e.g. 4G")
    s.add_argument("--skip-unreliable", action="store_true",
                   help="skip meshes whose signs cannot be trusted")
    s.add_argument("--unsigned", action="store_true",
                   help="store |distance| (for meshes whose signs mean nothing)")
    s.add_argument("--no-progress", action="store_true")
    c = sub.add_parser("convert", help="a mesh into a .svo; tiled builds on a Dask cluster "
                       "with --scheduler")
    c.add_argument("mesh", metavar="MESH")
    c.add_argument("out", metavar="OUT.svo")
    c.add_argument("--res", type=int, default=256, help="cells per axis, a power of two (256; "
                   "tiled above 16384, up to 1048576)")
    c.add_argument("--tile-depth", type=int, default=0, metavar="T",
                   help="tiles of 2^T cells per axis (0: one tree up to 16384, tiles of 16384 "
                   "above)")
    c.add_argument("--band", type=float, default=None, help="field truncation in voxels (2)")
    c.add_argument("--error", type=float, default=0.0, metavar="E",
                   help="prune every subtree whose plane is within E finest voxels (0: the full "
                   "tree; in a tiled tree nothing above the tiles' roots is pruned)")
    c.add_argument("--device", choices=("cpu", "gpu"), default=None)
    c.add_argument("--sign", choices=("winding", "pseudo-normal"), default="winding")
    c.add_argument("--threads", type=int, default=None)
    c.add_argument("--mem-limit", default=None, metavar="BYTES",
                   help="peak memory of each build (each worker's plan and tile), e.g. 8G")
    c.add_argument("--scheduler", metavar="tcp://HOST:PORT", default=None,
                   help="build the tiles as tasks on this Dask cluster (needs dask[distributed]; "
                   "the workers must see MESH and OUT's folder at the same paths)")
    c.add_argument("--no-progress", action="store_true")
    return ap


def _client(scheduler: Optional[str]) -> Any:
    """A dask.distributed.Client of the scheduler at that address, or None (ImportError without
    dask)."""
    if not scheduler:
        return None
    from dask.distributed import Client

    return Client(scheduler)


def _convert(a: argparse.Namespace) -> int:
    import time

    from . import Error, TiledFile, convert

    try:
        client = _client(a.scheduler)
    except ImportError:
        print("voxlod convert: --scheduler needs dask: pip install 'voxlod[dask]'",
              file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    try:
        convert(a.mesh, res=a.res, out=a.out, tile_depth=a.tile_depth, band=a.band, error=a.error,
                gpu=None if a.device is None else a.device == "gpu", sign=a.sign,
                threads=a.threads, mem_limit=a.mem_limit, progress=not a.no_progress,
                client=client)
    except (ValueError, TypeError) as e:
        print(f"voxlod convert: {e}", file=sys.stderr)
        return 2
    except Error as e:
        print(f"voxlod convert: {e}", file=sys.stderr)
        return 1
    finally:
        if client is not None:
            client.close()
    dt = time.perf_counter() - t0
    size = os.path.getsize(a.out)
    try:
        f = TiledFile(a.out)
        print(f"{a.out}: {f.depth}-level tiled tree, {f.tile_count} tiles of "
              f"{1 << f.tile_depth}^3, {f.info['voxel_count']} surface voxels, {size} bytes, "
              f"{dt:.2f} s{' on ' + a.scheduler if a.scheduler else ''}")
    except Error:
        print(f"{a.out}: {size} bytes, {dt:.2f} s")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    a = _parser().parse_args(argv)
    if a.command == "convert":
        return _convert(a)
    try:
        client = _client(a.scheduler)
    except ImportError:
        print("voxlod samples: --scheduler needs dask: pip install 'voxlod[dask]'",
              file=sys.stderr)
        return 2
    try:
        recs = sample_meshes(a.inputs, a.out_dir, points=a.points, res=a.res, preset=a.preset,
                             normalize=a.normalize, seed=a.seed, client=client,
                             workers=a.workers, progress=not a.no_progress,
                             skip_unreliable=a.skip_unreliable, unsigned=a.unsigned,
                             band=a.band, device=a.device,
                             shard=a.shard, mem_limit=a.mem_limit)
    except (ValueError, TypeError) as e:
        print(f"voxlod samples: {e}", file=sys.stderr)
        return 2
    finally:
        if client is not None:
            client.close()
    ok = sum(1 for r in recs if r["ok"] and not r["skipped"])
    resumed = sum(1 for r in recs if r["ok"] and r["skipped"])
    skipped = [r for r in recs if not r["ok"] and r["skipped"]]
    failed = [r for r in recs if not r["ok"] and not r["skipped"]]
    for r in skipped + failed:
        print(f"{'skipped' if r['skipped'] else 'FAILED'}: {r['path']}: {r['error']}",
              file=sys.stderr)
    print(f"{ok} meshes sampled, {resumed} already done, {len(skipped)} skipped, "
          f"{len(failed)} failed -> {a.out_dir}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
