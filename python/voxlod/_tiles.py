# SPDX-License-Identifier: Apache-2.0
"""Tiled conversions on a Dask cluster: convert(mesh_path, out=..., client=...).

The library cuts a tiled build into tasks (include/voxlod/convert.h, "a tiled conversion as
tasks"): each worker process makes the plan of the build once (the mesh, its grid, the sign
tables of the whole mesh, each tile's triangles; on a GPU, the mesh and tables uploaded there by
its first tile) and keeps it for the tasks that follow; a task
builds one tile by its index into a file beside the output and hands back a 360-byte record;
the client merges the files, checked against their records, into the tiled file and removes
them. Where the library splits the mesh by tile (sign="pseudo-normal" from a binary STL or PLY),
no process holds the mesh: a first task splits it into a parts file beside the output
(vx_tile_split), each worker's plan opens that file, and a task reads only its own tile's
triangles from it. The file is byte for byte the one convert(..., out=) writes on one machine with the same
options: a tile's bytes depend on the mesh, the options and its cell only.

The workers must see the mesh and the output's folder at the same paths as the client (a shared
file system, as for sample_meshes).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from . import _errors, _voxlod

# A worker process's plans: the last one kept (a cluster converts one mesh at a time), made
# under a lock so that the threads of a worker wait for one plan instead of making several.
_plan_lock = threading.Lock()
_plans: Dict[Tuple[Any, ...], Any] = {}


_OPTS = ("res", "band", "device", "mem_limit", "threads", "sign_rule", "tile_depth",
         "zstd_level", "max_error", "color", "color_filter")


def _plan_key(spec: dict) -> Tuple[Any, ...]:
    src = spec.get("parts") or spec["mesh"]
    st = os.stat(src)
    return (src, st.st_size, st.st_mtime_ns) + tuple(spec[k] for k in _OPTS)


def _plan(spec: dict) -> Any:
    key = _plan_key(spec)
    with _plan_lock:
        p = _plans.get(key)
        if p is None:
            _plans.clear()
            opts = [spec[k] for k in _OPTS]
            if spec.get("parts"):
                p = _voxlod._TilePlan.open_parts(spec["parts"], *opts)
            else:
                p = _voxlod._TilePlan.create(_voxlod._Mesh.load(spec["mesh"]), *opts)
            _plans[key] = p
        return p


def _plan_task(spec: dict) -> dict:
    """A task: the plan's summary (its tile count and build id)."""
    return dict(_plan(spec).info())


def _split_task(spec: dict, parts: bytes) -> Optional[dict]:
    """A task: the mesh split by tile into the parts file; its plan's summary, or None where the
    mesh is not split (the streaming reader leaves its format to assimp)."""
    try:
        return dict(_voxlod.tile_split(spec["mesh"], parts, *[spec[k] for k in _OPTS]))
    except _errors.FormatError:
        return None


# A test hook: a worker about to build tile $VOXLOD_TEST_DIE_TILE exits at once (as a killed
# worker does), once: only while the file $VOXLOD_TEST_DIE_MARK does not exist, creating it.
_DIE_TILE = "VOXLOD_TEST_DIE_TILE"
_DIE_MARK = "VOXLOD_TEST_DIE_MARK"


def _tile_task(spec: dict, k: int, path: bytes) -> bytes:
    """A task: tile k into the file at path; its record."""
    mark = os.environ.get(_DIE_MARK)
    if os.environ.get(_DIE_TILE) == str(k) and mark and not os.path.exists(mark):
        open(mark, "w").close()
        os._exit(3)
    return bytes(_plan(spec).build(k, path))


def convert_on_cluster(client: Any, mesh: bytes, out: bytes, spec: dict,
                       progress: bool = True) -> dict:
    """The tiled build of the mesh at path `mesh` (bytes) into `out` (bytes) as tasks on the
    Dask client's cluster; spec: the build's options (_convert.convert makes it). Returns the
    merge's summary (tiles, bytes, voxels, notes, seconds)."""
    t0 = time.perf_counter()
    spec = dict(spec, mesh=os.path.abspath(mesh))
    run = os.urandom(6).hex()  # a call's tasks never reuse an earlier call's results
    parts = os.path.abspath(out) + b".tiles-" + run.encode()
    split = parts + b".split"
    try:
        info = None
        if spec["sign_rule"] == 1:  # split by tile where the library can: no worker holds the mesh
            info = client.submit(_split_task, spec, split, key=f"voxlod-split-{run}",
                                 pure=False).result()
            if info is not None:
                spec = dict(spec, parts=split)
        if info is None:
            info = client.submit(_plan_task, spec, key=f"voxlod-plan-{run}", pure=False).result()
        return _tiles_and_merge(client, out, spec, info, run, parts, t0, progress)
    finally:
        if spec.get("parts"):  # the workers' plans on it close it: its blocks are freed
            try:
                client.run(_forget_plan, split)
            except Exception:  # a lost worker holds nothing; the file goes below either way
                pass
        try:
            os.unlink(split)
        except FileNotFoundError:
            pass


def _forget_plan(parts: bytes) -> None:
    """On every worker: drops a plan opened on that parts file (it is used once)."""
    with _plan_lock:
        for key in [k for k in _plans if k[0] == parts]:
            del _plans[key]


def _tiles_and_merge(client: Any, out: bytes, spec: dict, info: dict, run: str, parts: bytes,
                     t0: float, progress: bool) -> dict:
    """The tiles of the plan `info` summarizes as tasks into the folder `parts`, then merged."""
    from dask.distributed import as_completed  # optional dependency

    from ._datasets import _Progress

    n = int(info["tiles"])
    os.makedirs(parts)
    try:
        paths = [os.path.join(parts, b"tile-%d.svo" % k) for k in range(n)]
        futures = client.map(_tile_task, [spec] * n, range(n), paths,
                             key=[f"voxlod-tile-{run}-{k}" for k in range(n)], retries=1,
                             pure=False)
        index = {f.key: k for k, f in enumerate(futures)}
        records: List[Optional[bytes]] = [None] * n
        bar = _Progress(n, unit="tile", units="tiles", desc="tiles") if progress and n else None
        try:
            for f in as_completed(futures):
                records[index[f.key]] = f.result()  # a task's failure fails the conversion
                f.release()
                if bar is not None:
                    bar.update(True)
        finally:
            if bar is not None:
                bar.close()
        t1 = time.perf_counter()
        recs = [r for r in records if r is not None]
        files = [p if not _voxlod.tile_record_info(r)["empty"] else b""
                 for p, r in zip(paths, recs)]
        summary = dict(_voxlod.tile_merge(out, recs, files))
    finally:
        shutil.rmtree(parts, ignore_errors=True)
    summary.update(tiles=n, build_id=int(info["build_id"]), sec_plan=float(info["sec_plan"]),
                   split=bool(spec.get("parts")), sec_tiles=t1 - t0,
                   sec_total=time.perf_counter() - t0)
    return summary
