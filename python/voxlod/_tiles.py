# SPDX-License-Identifier: Apache-2.0
"""Tiled conversions on a Dask cluster: convert(mesh_path, out=..., client=...).

The library cuts a tiled build into tasks (include/voxlod/convert.h, "a tiled conversion as
tasks"): each worker process makes the plan of the build once (the mesh, its grid, the sign
tables of the whole mesh, each tile's triangles; on a GPU, the mesh and tables uploaded there by
its first tile) and keeps it for the tasks that follow; a task
builds one tile by its index into a file beside the output and hands back a 320-byte record;
the client merges the files, checked against their records, into the tiled file and removes
them. The file is byte for byte the one convert(..., out=) writes on one machine with the same
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

from . import _voxlod

# A worker process's plans: the last one kept (a cluster converts one mesh at a time), made
# under a lock so that the threads of a worker wait for one plan instead of making several.
_plan_lock = threading.Lock()
_plans: Dict[Tuple[Any, ...], Any] = {}


def _plan_key(spec: dict) -> Tuple[Any, ...]:
    st = os.stat(spec["mesh"])
    return (spec["mesh"], st.st_size, st.st_mtime_ns, spec["res"], spec["band"],
            spec["device"], spec["mem_limit"], spec["threads"], spec["sign_rule"],
            spec["tile_depth"], spec["zstd_level"], spec["max_error"])


def _plan(spec: dict) -> Any:
    key = _plan_key(spec)
    with _plan_lock:
        p = _plans.get(key)
        if p is None:
            _plans.clear()
            mesh = _voxlod._Mesh.load(spec["mesh"])
            p = _voxlod._TilePlan.create(mesh, spec["res"], spec["band"], spec["device"],
                                         spec["mem_limit"], spec["threads"], spec["sign_rule"],
                                         spec["tile_depth"], spec["zstd_level"], spec["max_error"])
            _plans[key] = p
        return p


def _plan_task(spec: dict) -> dict:
    """A task: the plan's summary (its tile count and build id)."""
    return dict(_plan(spec).info())


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
    from dask.distributed import as_completed  # optional dependency

    from ._datasets import _Progress

    t0 = time.perf_counter()
    spec = dict(spec, mesh=os.path.abspath(mesh))
    run = os.urandom(6).hex()  # a call's tasks never reuse an earlier call's results
    info = client.submit(_plan_task, spec, key=f"voxlod-plan-{run}", pure=False).result()
    n = int(info["tiles"])
    parts = os.path.abspath(out) + b".tiles-" + run.encode()
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
                   sec_tiles=t1 - t0, sec_total=time.perf_counter() - t0)
    return summary
