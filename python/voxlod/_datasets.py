# SPDX-License-Identifier: Apache-2.0
"""Training sets from many meshes: each mesh converted, sampled by a preset and written as one
.npz (atomically), on local worker processes or a Dask cluster, resumably (sample_meshes)."""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import multiprocessing
import os
import sys
import tempfile
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _voxlod
from ._sampling import SAMPLE_FAR, SAMPLE_NO_SIGN
from ._tree import Tree
from ._util import _bytes, _device, _is_int, _path

#: File name endings the mesh loader (assimp) reads; directories are walked for these.
MESH_EXTENSIONS = frozenset((
    ".obj", ".ply", ".stl", ".off", ".gltf", ".glb", ".fbx", ".dae", ".3ds", ".blend", ".x",
    ".ms3d", ".lwo", ".lws", ".ase", ".ac", ".md2", ".md3", ".md5mesh", ".smd", ".mdl", ".3mf",
    ".amf", ".x3d", ".ifc", ".dxf", ".irr", ".irrmesh", ".ter", ".raw", ".nff", ".cob", ".b3d",
    ".csm", ".ogex", ".xgl", ".zgl", ".ndo", ".hmp", ".q3o", ".q3s"))

PRESETS = ("deepsdf", "uniform", "surface", "near")

#: DeepSDF's defaults: surface points moved by Gaussians of variance 0.0025 and 0.00025
#: (normalized units), 47.5 % each, plus 5 % uniform in the box.
_DEEPSDF = {"variances": (0.0025, 0.00025), "shares": (0.475, 0.475, 0.05)}

# A test hook: a worker that is about to sample a file whose name is $VOXLOD_TEST_DIE_ON exits
# at once (as a killed worker does): every time without $VOXLOD_TEST_DIE_MARK, else only while
# that marker file does not exist yet, creating it (so it dies once).
_DIE_ON = "VOXLOD_TEST_DIE_ON"
_DIE_MARK = "VOXLOD_TEST_DIE_MARK"


# ---- inputs
def _collect(paths: Union[str, os.PathLike, Iterable[Any]]) -> Tuple[str, List[Tuple[str, str]],
                                                                    List[dict]]:
    """The meshes named by paths (files, or directories walked for MESH_EXTENSIONS), as
    (absolute path, path relative to the common root) sorted by the relative path, one per real
    file, and records for paths that do not exist or repeat another."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    files: List[str] = []
    bad: List[dict] = []
    for p in paths:
        p = os.path.abspath(os.fsdecode(os.fspath(p)))
        if os.path.isdir(p):
            for d, dirs, names in os.walk(p):
                dirs.sort()
                files += [os.path.join(d, n) for n in sorted(names)
                          if os.path.splitext(n)[1].lower() in MESH_EXTENSIONS]
        elif os.path.exists(p):
            files.append(p)
        else:
            bad.append(_record(p, error="no such file or directory"))
    seen: Dict[str, str] = {}
    kept: List[str] = []
    for f in files:
        real = os.path.realpath(f)
        if real in seen:
            bad.append(_record(f, error=f"the same file as {seen[real]} (skipped)", skipped=True))
            continue
        seen[real] = f
        kept.append(f)
    if not kept:
        return "", [], bad
    root = os.path.commonpath([os.path.dirname(f) for f in kept])
    items = sorted((f, os.path.relpath(f, root)) for f in kept)
    items.sort(key=lambda t: t[1])
    return root, items, bad


def _file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _shard(shard: Optional[str]) -> Tuple[int, int]:
    if shard is None:
        return 0, 1
    try:
        i, n = (int(x) for x in str(shard).split("/"))
    except ValueError:
        raise ValueError(f"shard must be 'i/N' (e.g. '0/4'), not {shard!r}") from None
    if not (n >= 1 and 0 <= i < n):
        raise ValueError(f"shard {shard!r}: i must be in 0..N-1 and N >= 1")
    return i, n


def _record(path: str, **kw: Any) -> dict:
    r = {"path": path, "ok": False, "error": None, "file": None, "seconds": 0.0,
         "skipped": False, "report": None, "gpu": None}
    r.update(kw)
    return r


def _mesh_seed(seed: int, rel: str) -> List[int]:
    """Entropy for a mesh's generator: the run's seed and a hash of the relative path (so the
    order, the sharding and the engine do not change a mesh's samples)."""
    h = hashlib.blake2b(rel.replace(os.sep, "/").encode("utf-8", "surrogateescape"),
                        digest_size=8).digest()
    return [int(seed) & (2 ** 64 - 1), int.from_bytes(h, "little")]


# ---- outputs
def _settings(job: dict) -> dict:
    """What an output depends on besides its mesh (a rerun with other settings redoes it)."""
    return {k: job[k] for k in ("points", "res", "preset", "normalize", "seed", "band", "opts",
                                "unsigned")}


def _valid_npz(path: str, points: int, settings: dict) -> bool:
    """True when path holds a complete output of `points` samples made with `settings` (every
    array read, so a truncated or damaged file fails its zip checks)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            p, d = z["points"], z["sdf"]
            s, o = z["scale"], z["offset"]
            rep = json.loads(str(z["report"]))
        if rep.get("settings") != json.loads(json.dumps(settings)):
            return False
        return (p.dtype == np.float32 and p.shape == (points, 3) and d.dtype == np.float32
                and d.shape == (points,) and s.shape == () and o.shape == (3,)
                and bool(np.isfinite(p).all()) and bool(np.isfinite(d).all()))
    except Exception:  # noqa: BLE001 - any failure to read means "redo it"
        return False


def _write_npz(path: str, arrays: Dict[str, Any]) -> None:
    """np.savez into a temporary file beside path, then os.replace: path is either absent, the
    old file, or the complete new one."""
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=d)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ---- topology of a loaded mesh (a triangle soup)
#: A mesh that is not watertight keeps trustworthy signs while its openings are small: the
#: generalized winding number is off by the solid angle an opening subtends over 4 pi (far from
#: it, its vector area over 4 pi r^2), so only points about as close to an opening as the
#: opening is wide can flip. Signs are called unreliable when the openings' vector areas add up
#: to more than this share of the surface's area. Measured on 8,000 uniform points in the
#: bounding sphere's box: a sphere with a polar cap open (0.0215) has 0.2 % of points with an
#: ambiguous winding number (between 0.2 and 0.8), a box without its lid (0.2) 10.5 %, the
#: Stanford bunny (five holes in its base, 0.0178) none.
OPEN_AREA_SHARE = 0.01


def _components(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """Connected-component labels (the smallest vertex id of each) of n vertices joined by the
    edges (a[i], b[i]): min-label hooking with pointer jumping until nothing changes."""
    lab = np.arange(n, dtype=np.int64)
    while True:
        old = lab.copy()
        m = np.minimum(lab[a], lab[b])
        np.minimum.at(lab, a, m)
        np.minimum.at(lab, b, m)
        while True:
            j = lab[lab]
            if np.array_equal(j, lab):
                break
            lab = j
        if np.array_equal(lab, old):
            return lab


def _topology(v: np.ndarray) -> dict:
    """Edge counts of a triangle soup v (3 vertices per triangle), corners welded by exact
    position: `edges` (undirected), `boundary_edges` (used by one triangle),
    `nonmanifold_edges` (by more than two), `inconsistent_edges` (two triangles that run along
    it in the same direction: one of them is flipped), `watertight` (no boundary and no
    non-manifold edge), and `open_area_share`: the openings' area over the surface's area (0
    for a closed, consistently oriented mesh, any number of triangles on an edge included). An
    edge is open when the triangles that run along it one way are not matched by as many
    running the other way; the open edges form loops, each loop's vector area is
    sum(p_a x p_b) / 2 along it in the triangles' direction (each edge weighted by how many
    uses are unmatched), which is the area of a planar hole, at most the area of any cap, and
    what sets the winding number's error away from the hole. A flipped triangle counts twice
    its area (its contribution to the winding number changes sign)."""
    v = np.ascontiguousarray(v, dtype=np.float32).reshape(-1, 3) + np.float32(0.0)  # -0 is 0
    t = v.shape[0] // 3
    rows = v.view(np.dtype((np.void, 12))).reshape(-1)
    _, first, ids = np.unique(rows, return_index=True, return_inverse=True)
    pos = v[first].astype(np.float64)
    f = ids.reshape(t, 3).astype(np.int64)
    a, b = f.reshape(-1), f[:, [1, 2, 0]].reshape(-1)
    keep = a != b
    a, b = a[keep], b[keep]
    nv = max(1, pos.shape[0])
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    key = lo * nv + hi
    uk, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
    fwd = np.bincount(inv.reshape(-1), weights=(a < b), minlength=uk.size)
    e0, e1 = uk // nv, uk % nv
    area = 0.5 * float(np.linalg.norm(np.cross(pos[f[:, 1]] - pos[f[:, 0]],
                                               pos[f[:, 2]] - pos[f[:, 0]]), axis=1).sum())
    net = 2 * fwd - cnt  # uses from e0 to e1 minus uses from e1 to e0
    open_e = net != 0
    share = 0.0
    if open_e.any():
        oa, ob = e0[open_e], e1[open_e]
        # each loop's vector area: sum of p_a x p_b / 2 along it, in the triangles' direction
        va = 0.5 * np.cross(pos[oa], pos[ob]) * net[open_e][:, None]
        lab = np.unique(_components(oa, ob, nv)[oa], return_inverse=True)[1].reshape(-1)
        per_loop = np.stack([np.bincount(lab, weights=va[:, k]) for k in range(3)], axis=1)
        caps = float(np.linalg.norm(per_loop, axis=1).sum())
        share = caps / area if area > 0 else float("inf")
    boundary = int(np.count_nonzero(cnt == 1))
    nonmanifold = int(np.count_nonzero(cnt > 2))
    return {"edges": int(uk.size), "boundary_edges": boundary,
            "nonmanifold_edges": nonmanifold,
            "inconsistent_edges": int(np.count_nonzero((cnt == 2) & (fwd != 1))),
            "watertight": boundary == 0 and nonmanifold == 0,
            "open_area_share": share}


# ---- one mesh (runs in a worker process or a Dask task)
def _surface(tree: Tree, n: int, rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray]:
    """n world points on the surface and their unit normals: points spread evenly over the
    surface voxels, each moved onto the zero level set along the gradient (two steps)."""
    p = tree.surface_points(n, spread=0.5, seed=int(rng.integers(2 ** 63)))
    for _ in range(2):
        d, g = tree.sample(p, gradient=True)
        p = p - d[:, None] * g
    _, g = tree.sample(p, gradient=True)
    nrm = np.linalg.norm(g, axis=1, keepdims=True)
    g = np.where(nrm > 0, g / np.maximum(nrm, 1e-30), 0).astype(np.float32)
    return p.astype(np.float32), g


def _on_triangles(tris: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """n world points on the triangles tris (T, 3, 3), as trimesh.sample.sample_surface places
    them: each triangle gets a share of the points proportional to its area (a multinomial
    draw), each point uniform on its triangle (float64 (n, 3), grouped by triangle)."""
    a, b, c = tris[:, 0], tris[:, 1], tris[:, 2]
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    total = float(area.sum())
    if not total > 0:
        raise ValueError("the mesh's triangles have no area")
    counts = rng.multinomial(n, area / total)
    u, v = rng.uniform(size=(2, n, 1))
    su = np.sqrt(u)
    return (np.repeat(a, counts, axis=0) * (1.0 - su) + np.repeat(b, counts, axis=0) *
            (su * (1.0 - v)) + np.repeat(c, counts, axis=0) * (su * v))


def _counts(n: int, shares: Sequence[float]) -> List[int]:
    s = np.asarray(shares, dtype=np.float64)
    if s.ndim != 1 or not np.all(s >= 0) or not s.sum() > 0:
        raise ValueError(f"shares must be non-negative numbers, not {shares!r}")
    c = np.floor(s / s.sum() * n).astype(int)
    c[int(np.argmax(s))] += n - int(c.sum())
    return [int(x) for x in c]


def _deepsdf_counts(n: int, opts: dict) -> Tuple[Tuple[float, ...], List[int]]:
    """The deepsdf preset's variances and its point counts (one per variance, then uniform)."""
    variances = tuple(float(v) for v in opts.get("variances", _DEEPSDF["variances"]))
    shares = tuple(opts.get("shares", _DEEPSDF["shares"]))
    if len(shares) != len(variances) + 1 or not all(v >= 0 for v in variances):
        raise ValueError("preset_opts: 'shares' needs one entry per variance plus the uniform "
                         "share, variances >= 0")
    return variances, _counts(n, shares)


def _points(tree: Tree, preset: str, n: int, rng: np.random.Generator, scale: float,
            offset: np.ndarray, box: float, opts: dict,
            tris: Optional[np.ndarray] = None) -> Dict[str, np.ndarray]:
    """The preset's points in normalized coordinates (and normals for 'surface'); tris: the
    mesh's triangles (world, (T, 3, 3)), where deepsdf places its surface points."""
    def to_norm(w: np.ndarray) -> np.ndarray:
        return ((w.astype(np.float64) - offset) / scale).astype(np.float32)

    def uniform(k: int) -> np.ndarray:
        return rng.uniform(-box, box, size=(k, 3)).astype(np.float32)

    if preset == "uniform":
        return {"points": uniform(n)}
    if preset == "near":
        seed = int(rng.integers(2 ** 63))
        return {"points": to_norm(tree.surface_points(n, seed=seed))}
    if preset == "surface":
        p, g = _surface(tree, n, rng)
        return {"points": to_norm(p), "normals": g}
    variances, counts = _deepsdf_counts(n, opts)
    parts = []
    for var, k in zip(variances, counts[:-1]):
        if k:
            q = to_norm(_on_triangles(tris, k, rng)) + rng.normal(
                0.0, np.sqrt(var), size=(k, 3)).astype(np.float32)
            parts.append(np.clip(q, -box, box))
    parts.append(uniform(counts[-1]))
    pts = np.concatenate(parts).astype(np.float32)
    return {"points": pts[rng.permutation(n)]}


def _sample_one(job: dict) -> dict:
    """Converts, samples and writes one mesh; never raises (the error goes in the record)."""
    t0 = time.perf_counter()
    path, out = job["path"], job["file"]
    rec = _record(path, file=out)
    try:
        die = os.environ.get(_DIE_ON)
        mark = os.environ.get(_DIE_MARK)
        if die and os.path.basename(path) == die and not (mark and os.path.exists(mark)):
            if mark:
                open(mark, "w").close()
            os._exit(3)
        m = _voxlod._Mesh.load(_path(path, "mesh"), 0.0)
        info = m.info()
        topo = _topology(m.vertices()) if info["triangles"] else {}
        lo, hi = np.array(info["bbox_min"], float), np.array(info["bbox_max"], float)
        if info["triangles"] == 0:
            raise ValueError("the mesh has no triangles")
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()) or not (hi - lo).max() > 0:
            raise ValueError(f"the mesh's bounding box is empty or not finite ({lo}, {hi})")
        reasons = []
        if info["skipped_nonfinite"]:
            reasons.append(f"{info['skipped_nonfinite']} triangles with NaN or infinite "
                           "coordinates dropped (holes)")
        if topo["open_area_share"] > OPEN_AREA_SHARE:
            reasons.append(
                f"open or inconsistently oriented ({topo['boundary_edges']} boundary, "
                f"{topo['nonmanifold_edges']} non-manifold, {topo['inconsistent_edges']} "
                f"inconsistently oriented edges) and its openings' area is "
                f"{topo['open_area_share']:.3g} of its surface's (more than "
                f"{OPEN_AREA_SHARE}): the winding number is ambiguous near them")
        offset = (lo + hi) / 2.0
        if job["normalize"] == "sphere":
            scale, box = float(np.linalg.norm(hi - lo) / 2.0), 1.0
        else:
            scale, box = float((hi - lo).max()), 0.5
        band = 0.0 if job["band"] is None else float(job["band"])
        # distances only: no colour pass (color=1: off)
        t = Tree(_voxlod.convert(m, int(job["res"]), 0.0, band, job["device"], job["mem_limit"],
                                 int(job["threads"]), 0, None, color=1))
        tris = None
        if job["preset"] == "deepsdf":
            tris = m.vertices().reshape(-1, 3, 3).astype(np.float64)
        del m
        rng = np.random.default_rng(job["seed"])
        arrays = _points(t, job["preset"], int(job["points"]), rng, scale, offset, box,
                         job["opts"], tris)
        del tris
        world = (arrays["points"].astype(np.float64) * scale + offset).astype(np.float32)
        dev = "gpu" if job["device"] == 2 else ("cpu" if job["device"] == 1 else None)
        d, fl = t.sample(world, flags=True, device=dev, threads=int(job["threads"]))
        no_sign = int(np.count_nonzero(fl & SAMPLE_NO_SIGN))
        if no_sign:
            reasons.append(f"{no_sign} points whose sign could not be found")
        report = {
            "triangles": int(info["triangles"]), "meshes": int(info["meshes"]),
            "skipped_degenerate": int(info["skipped_degenerate"]),
            "skipped_nonfinite": int(info["skipped_nonfinite"]),
            "skipped_nontriangle": int(info["skipped_nontriangle"]),
            "no_sign_points": no_sign,
            "far_points": int(np.count_nonzero(fl & SAMPLE_FAR)),
            **topo,
            "unsigned": bool(job["unsigned"]),
            "sign_reliable": not reasons, "unreliable_because": reasons,
            "voxel": float(t.scale / scale), "band": float(t.band * t.scale / scale),
            "resolution": int(t.resolution), "notes": t.notes,
            "preset": job["preset"], "normalize": job["normalize"],
            "settings": _settings(job),
        }
        rec["report"] = report
        if reasons and job["skip_unreliable"]:
            rec.update(skipped=True, file=None,
                       error="sign unreliable (skipped): " + "; ".join(reasons))
            return rec
        if job["unsigned"]:
            d = np.abs(d)
        arrays["sdf"] = (d.astype(np.float64) / scale).astype(np.float32)
        arrays["flags"] = fl
        arrays["scale"] = np.float64(scale)
        arrays["offset"] = offset.astype(np.float64)
        arrays["report"] = np.array(json.dumps(report))
        _write_npz(out, arrays)
        rec["ok"] = True
    except Exception as e:  # noqa: BLE001 - one bad mesh never stops a run
        rec.update(ok=False, file=None, error=f"{type(e).__name__}: {e}")
    finally:
        rec["seconds"] = time.perf_counter() - t0
        rec["gpu"] = os.environ.get(_PINNED)
    return rec


# ---- engines

_PINNED = "VOXLOD_WORKER_GPU"  # set in a local worker pinned to one GPU: which one


def _visible_gpus() -> List[str]:
    """The GPUs local workers may use, found without starting CUDA in this process: the entries
    of CUDA_VISIBLE_DEVICES up to the first invalid one (as CUDA reads it; "-1": none), else
    one per GPU of the NVIDIA driver (Linux)."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        out = []
        for g in env.split(","):
            g = g.strip()
            if not g or g.startswith("-"):
                break
            out.append(g)
        return out
    try:
        return [str(i) for i in range(len(os.listdir("/proc/driver/nvidia/gpus")))]
    except OSError:
        return []


def _pin_worker(gpus: List[str], counter: Any) -> None:
    """A local worker process's initializer: the next GPU of `gpus` in turn becomes its only
    visible one, before anything in it starts CUDA (the workers are spawned)."""
    with counter.get_lock():
        i = counter.value
        counter.value += 1
    g = gpus[i % len(gpus)]
    os.environ["CUDA_VISIBLE_DEVICES"] = g
    os.environ[_PINNED] = g
def _run_local(jobs: List[dict], workers: int, done: Callable[[dict], None],
               gpus: Sequence[str] = ()) -> None:
    """Jobs on `workers` processes, at most `workers` in flight. A worker that dies breaks the
    pool: the jobs it held (those in flight) are rerun once, each alone in a fresh process, and a
    second death is that mesh's failure. With several `gpus`, each worker process is given one,
    in turn, so that every GPU is fed by its share of the workers."""
    ctx = multiprocessing.get_context("spawn")
    init: Dict[str, Any] = {}
    if len(gpus) > 1:
        init = {"initializer": _pin_worker, "initargs": (list(gpus), ctx.Value("i", 0))}
    suspects: List[dict] = []
    pending = list(reversed(jobs))
    while pending:
        with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, **init) as pool:
            flight: Dict[cf.Future, dict] = {}
            broken = False
            while (pending and not broken) or flight:
                while pending and not broken and len(flight) < workers:
                    j = pending.pop()
                    try:
                        flight[pool.submit(_sample_one, j)] = j
                    except cf.process.BrokenProcessPool:
                        pending.append(j)
                        broken = True
                fin, _ = cf.wait(flight, return_when=cf.FIRST_COMPLETED)
                for f in fin:
                    j = flight.pop(f)
                    try:
                        done(f.result())
                    except cf.process.BrokenProcessPool:
                        broken = True
                        suspects.append(j)
    for j in suspects:
        with cf.ProcessPoolExecutor(max_workers=1, mp_context=ctx, **init) as pool:
            try:
                rec = pool.submit(_sample_one, j).result()
            except cf.process.BrokenProcessPool:
                rec = _record(j["path"], error="the worker process died twice on this mesh "
                              "(killed, or out of memory)")
        rec["retried"] = True
        done(rec)


def _run_dask(jobs: List[dict], client: Any, done: Callable[[dict], None]) -> None:
    """The same per-mesh function as Dask tasks (retries=1); a task that fails (its worker died
    twice: KilledWorker, or an error outside the function) is that mesh's failure."""
    from dask.distributed import as_completed  # optional dependency

    run = os.urandom(6).hex()  # a call's tasks never reuse an earlier call's results
    keys = [f"voxlod-sample-{run}-{i}" for i in range(len(jobs))]
    futures = client.map(_sample_one, jobs, key=keys, retries=1, pure=False)
    by_key = {f.key: j for f, j in zip(futures, jobs)}
    for f in as_completed(futures):
        j = by_key[f.key]
        try:
            done(f.result())
        except Exception as e:  # noqa: BLE001 - a task's failure is its mesh's
            done(_record(j["path"], error=f"task failed: {type(e).__name__}: {e}"))
        f.release()


class _Progress:
    """Items (meshes, tiles) per second, ETA and failures so far on stderr: a tqdm bar when tqdm
    is installed, else a line rewritten in place."""

    def __init__(self, total: int, unit: str = "mesh", units: str = "meshes",
                 desc: str = "samples") -> None:
        self.total, self.n, self.failed, self.t0 = total, 0, 0, time.perf_counter()
        self.units, self.desc = units, desc
        self.bar = None
        try:
            from tqdm.auto import tqdm  # type: ignore[import-untyped, unused-ignore]
            self.bar = tqdm(total=total, unit=unit, desc=desc)
        except ImportError:
            pass

    def update(self, ok: bool) -> None:
        self.n += 1
        self.failed += 0 if ok else 1
        if self.bar is not None:
            self.bar.set_postfix(failed=self.failed, refresh=False)
            self.bar.update(1)
            return
        dt = time.perf_counter() - self.t0
        rate = self.n / dt if dt > 0 else 0.0
        eta = (self.total - self.n) / rate if rate > 0 else 0.0
        sys.stderr.write(f"\rvoxlod {self.desc}: {self.n}/{self.total} {self.units}, "
                         f"{rate:.2f} {self.units}/s, ETA {eta:.0f} s, {self.failed} failed ")
        sys.stderr.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.n:
            sys.stderr.write("\n")


def sample_meshes(paths: Any, out_dir: Any, *, points: int = 250_000, res: int = 256,
                  preset: str = "deepsdf", normalize: str = "sphere", seed: int = 0,
                  client: Any = None, workers: Optional[int] = None, progress: bool = True,
                  skip_unreliable: bool = False, unsigned: bool = False,
                  preset_opts: Optional[dict] = None,
                  band: Optional[float] = None, device: Optional[str] = None,
                  shard: Optional[str] = None,
                  mem_limit: Union[None, int, str] = None) -> List[dict]:
    """Signed-distance training samples from many meshes: one .npz per mesh in out_dir.

    paths: a file or directory, or a list of them (directories are walked for MESH_EXTENSIONS;
    two paths to one file count once). Each output is out_dir/<path relative to the inputs'
    common root>.npz with `points` (float32 (N, 3), normalized), `sdf` (float32 (N,), normalized
    units, truncated at +-band: see `flags`), `flags` (uint8, Tree.sample's), `scale`, `offset`
    (world = points * scale + offset), `normals` (preset "surface") and `report` (a JSON string:
    triangles, dropped triangles, edge counts of the mesh welded by exact position (`edges`,
    `boundary_edges`, `nonmanifold_edges`, `inconsistent_edges`), `watertight` (no boundary and
    no non-manifold edge), `open_area_share`, sign indicators, `sign_reliable` and
    `unreliable_because`). Written atomically; meshes whose output is already complete are
    skipped (resumable); a damaged output is redone.

    sign_reliable is False when NaN triangles were dropped, when some point's sign could not
    be found, or when the mesh has openings that are not small: the open edges (boundary
    edges, and edges whose triangles do not pair one way with the other: next to a flipped
    triangle, or odd non-manifold ones) form loops, and when their vector areas add up to more
    than OPEN_AREA_SHARE (1 %) of the surface's area (report "open_area_share") the winding
    number, hence the sign, is ambiguous in a sizeable region (a sphere with 2 % open: 0.2 % of
    the box's points). So a mesh with a few pinholes keeps reliable signs, an open sheet or a
    box without a lid does not, a watertight mesh with a flipped triangle does not unless the
    triangle is small, and two closed solids touching along an edge (four consistently
    oriented triangles on it: not watertight) do. skip_unreliable=True writes nothing for such
    meshes (the record says why). unsigned=True stores |distance| in `sdf` (report
    "unsigned": true) for meshes whose signs mean nothing; skip_unreliable still applies.

    preset: "deepsdf" (points drawn on the triangles by area, moved by Gaussians, plus a
    uniform share; preset_opts
    {"variances": (0.0025, 0.00025), "shares": (0.475, 0.475, 0.05)}), "uniform" (in the
    box), "surface" (on the surface, with normals) or "near" (within the band). normalize:
    "sphere" (the mesh's bounding box inside the unit sphere; box [-1, 1]^3) or "cube" (inside
    [-0.5, 0.5]^3). seed: per mesh, combined with its relative path. client: a
    dask.distributed.Client (else `workers` local processes, default all cores; on a machine
    with several GPUs, unless device="cpu", each worker is given one of them in turn through
    CUDA_VISIBLE_DEVICES, so that the cores feed every GPU; a record's `gpu` says which).
    shard: "i/N"
    takes every N-th mesh of the sorted list from the i-th. band: the field's truncation in
    voxels (default 2). mem_limit: each conversion's peak bytes (int, or '8G'; a mesh that
    cannot be converted within it fails with its message). Returns one record (dict) per
    input: path, ok, error, file, seconds, skipped, report (and gpu, from local workers given
    one: the CUDA_VISIBLE_DEVICES entry); failures are also appended to
    out_dir/failures.jsonl."""
    if not _is_int(points) or not 1 <= points <= 2 ** 31:
        raise ValueError(f"points must be a count >= 1, not {points!r}")
    if not _is_int(res) or res < 2 or res > 16384 or res & (res - 1):
        raise ValueError(f"res must be a power of two from 2 to 16384, not {res!r}")
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {PRESETS}, not {preset!r}")
    if normalize not in ("sphere", "cube"):
        raise ValueError(f"normalize must be 'sphere' or 'cube', not {normalize!r}")
    if not _is_int(seed):
        raise TypeError(f"seed must be an int, not {seed!r}")
    if workers is not None and (not _is_int(workers) or workers < 1):
        raise ValueError(f"workers must be an int >= 1, not {workers!r}")
    if band is not None and not 1.0 <= float(band) <= 64.0:
        raise ValueError(f"band must be in 1..64 voxels, not {band!r}")
    opts = dict(preset_opts or {})
    unknown = set(opts) - {"variances", "shares"}
    if unknown:
        raise ValueError(f"preset_opts: unknown keys {sorted(unknown)}")
    for k in opts:  # plain lists of floats: they go into each output's JSON report
        try:
            opts[k] = [float(x) for x in opts[k]]
        except (TypeError, ValueError):
            raise ValueError(f"preset_opts[{k!r}] must be a list of numbers") from None
    if preset == "deepsdf":  # a wrong preset_opts fails here, not once per mesh
        _deepsdf_counts(10, opts)
    dev = _device(device)
    limit = _bytes(mem_limit, "mem_limit")
    si, sn = _shard(shard)
    out_dir = os.path.abspath(os.fsdecode(os.fspath(out_dir)))
    _, items, records = _collect(paths)
    items = items[si::sn]
    if si:  # missing and repeated inputs are reported by shard 0 only
        records = []
    ncpu = os.cpu_count() or 1
    nworkers = int(workers or ncpu)
    jobs = []
    for path, rel in items:
        out = os.path.join(out_dir, rel + ".npz")
        job = {"path": path, "rel": rel, "file": out, "points": int(points), "res": int(res),
               "preset": preset, "normalize": normalize, "seed": _mesh_seed(seed, rel),
               "opts": opts, "band": None if band is None else float(band), "device": dev,
               "mem_limit": limit, "threads": max(1, ncpu // max(1, nworkers)),
               "skip_unreliable": bool(skip_unreliable), "unsigned": bool(unsigned)}
        if os.path.isfile(out) and _valid_npz(out, int(points), _settings(job)):
            records.append(_record(path, ok=True, file=out, skipped=True))
            continue
        jobs.append(job)
    # Largest files first (a mesh's time grows with its size): a worker that draws the largest
    # mesh last would finish alone while the others idle. Records are put back in input order.
    jobs.sort(key=lambda j: -_file_size(j["path"]))
    bar = _Progress(len(jobs)) if progress and jobs else None
    done_recs: List[dict] = []

    def done(rec: dict) -> None:
        done_recs.append(rec)
        if bar is not None:
            bar.update(rec["ok"])

    try:
        if not jobs:
            pass
        elif client is not None:
            _run_dask(jobs, client, done)
        else:
            _run_local(jobs, min(nworkers, len(jobs)), done,
                       _visible_gpus() if dev != _device("cpu") else ())
    finally:
        if bar is not None:
            bar.close()
    records += done_recs
    failed = [r for r in records if not r["ok"] and r["error"]]
    if failed:
        try:
            os.makedirs(out_dir, exist_ok=True)
            with open(os.path.join(out_dir, "failures.jsonl"), "a", encoding="utf-8") as fh:
                for r in failed:
                    fh.write(json.dumps({"path": r["path"], "error": r["error"],
                                         "skipped": r["skipped"], "time": time.time()}) + "\n")
        except OSError as e:
            sys.stderr.write(f"voxlod samples: cannot append to failures.jsonl ({e})\n")
    order = {p: i for i, (p, _) in enumerate(items)}
    records.sort(key=lambda r: order.get(r["path"], -1))
    return records
