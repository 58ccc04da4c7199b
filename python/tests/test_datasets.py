# SPDX-License-Identifier: Apache-2.0
"""voxlod.sample_meshes and `python -m voxlod samples`: many meshes (generated here, written as
OBJ/PLY text, with a corrupt, an empty and a NaN one) into .npz training samples on local worker
processes and on a Dask LocalCluster; outputs checked against the exact signed distance to the
triangles (reference.py), resumes, damaged outputs, shards, a worker killed mid-run."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import voxlod
from reference import box, signed_distance, uv_sphere

OPTS = dict(points=3000, res=32, progress=False)
MODEL = os.path.join("models", "model_normalized.obj")


def write_obj(path, v, f):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fh.write("".join(f"v {float(x)!r} {float(y)!r} {float(z)!r}\n" for x, y, z in v))
        fh.write("".join(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in f))


def write_ply(path, v, f):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fh.write(f"ply\nformat ascii 1.0\nelement vertex {len(v)}\nproperty float x\n"
                 f"property float y\nproperty float z\nelement face {len(f)}\n"
                 "property list uchar int vertex_indices\nend_header\n")
        fh.write("".join(f"{float(x)!r} {float(y)!r} {float(z)!r}\n" for x, y, z in v))
        fh.write("".join(f"3 {a} {b} {c}\n" for a, b, c in f))


@pytest.fixture(scope="module")
def meshes(tmp_path_factory):
    """A ShapeNet-like tree (two models with the same name under different ids), a box, and
    broken inputs. Returns the root and {relative path: (vertices, faces)} of the good ones."""
    root = tmp_path_factory.mktemp("meshes")
    good = {
        os.path.join("s1", "a", MODEL): uv_sphere(1.0, 32, 16),
        os.path.join("s2", "a", MODEL): uv_sphere(0.5, 32, 16, centre=(1.0, 2.0, -3.0)),
        "box.ply": box((-1.0, -0.5, -0.25), (1.0, 0.5, 0.25)),
    }
    for rel, (v, f) in good.items():
        (write_ply if rel.endswith(".ply") else write_obj)(root / rel, v, f)
    v, f = uv_sphere(1.0, 16, 8)
    v[3] = np.nan
    write_obj(root / "broken" / "nan.obj", v, f)
    (root / "broken" / "empty.obj").write_text("")
    (root / "broken" / "corrupt.ply").write_bytes(b"ply\nformat ascii 1.0\n\x00\xff garbage\n")
    (root / "broken" / "notes.txt").write_text("not a mesh: not walked")
    return root, good


@pytest.fixture(scope="module")
def local_run(meshes, tmp_path_factory):
    root, _ = meshes
    out = tmp_path_factory.mktemp("out")
    recs = voxlod.sample_meshes(root, out, workers=2, **OPTS)
    return out, recs


def check_output(file, v, f, points, normalize="sphere"):
    with np.load(file, allow_pickle=False) as z:
        p, d, fl = z["points"], z["sdf"], z["flags"]
        scale, offset = float(z["scale"]), z["offset"]
        rep = json.loads(str(z["report"]))
    assert rep["preset"] and p.dtype == np.float32 and p.shape == (points, 3)
    assert d.dtype == np.float32 and d.shape == (points,)
    lim = 1.0 if normalize == "sphere" else 0.5
    # "near" points lie within the band of the surface, which may touch the cube's faces
    assert np.abs(p).max() <= lim + (rep["band"] if rep["preset"] == "near" else 1e-6)
    # the normalization: the mesh's vertices inside the unit sphere (or cube)
    vn = (v - offset) / scale
    assert np.abs(np.linalg.norm(vn, axis=1) if normalize == "sphere" else vn).max() <= lim + 1e-6
    assert rep["triangles"] == len(f)
    # against the exact signed distance to the triangles, in normalized units: within a voxel
    # inside the band; beyond it the value is +-band with the exact distance's sign
    rng = np.random.default_rng(1)
    idx = rng.choice(points, 300, replace=False)
    exact = signed_distance(p[idx].astype(np.float64) * scale + offset, v, f) / scale
    far = (fl[idx] & voxlod.SAMPLE_FAR) != 0
    vox = rep["voxel"]
    assert (~far).sum() > 100
    assert np.abs(d[idx][~far] - exact[~far]).max() <= vox
    assert np.all(np.sign(d[idx][far]) == np.sign(exact[far]))
    assert np.all(np.abs(d[idx][far]) <= np.abs(exact[far]) + vox)
    return rep


def test_local_engine(meshes, local_run):
    root, good = meshes
    out, recs = local_run
    got = {os.path.relpath(r["path"], root): r for r in recs}
    assert set(got) == set(good) | {os.path.join("broken", n)
                                    for n in ("nan.obj", "empty.obj", "corrupt.ply")}
    for rel, (v, f) in good.items():
        r = got[rel]
        assert r["ok"], r
        assert r["file"] == str(out / (rel + ".npz")) and r["seconds"] > 0
        rep = check_output(r["file"], v, f, OPTS["points"])
        assert rep["sign_reliable"] and rep["unreliable_because"] == []
    # the NaN mesh: its NaN triangles dropped, so its signs are not trusted
    nan = got[os.path.join("broken", "nan.obj")]
    assert nan["ok"] and nan["report"]["skipped_nonfinite"] > 0
    assert not nan["report"]["sign_reliable"]
    for n in ("empty.obj", "corrupt.ply"):
        r = got[os.path.join("broken", n)]
        assert not r["ok"] and r["error"] and r["file"] is None
        assert not (out / "broken" / (n + ".npz")).exists()
    fails = [json.loads(s) for s in (out / "failures.jsonl").read_text().splitlines()]
    assert sorted(os.path.basename(x["path"]) for x in fails) == ["corrupt.ply", "empty.obj"]
    assert not list(out.rglob(".tmp-*"))


def test_rerun_skips_and_redoes_damaged(meshes, local_run, tmp_path):
    root, good = meshes
    out, first = local_run
    files = {r["path"]: r["file"] for r in first if r["ok"]}
    mtimes = {p: os.stat(f).st_mtime_ns for p, f in files.items()}
    damaged = files[str(root / "box.ply")]
    with open(damaged, "r+b") as fh:  # what kill -9 of a writer that was not atomic leaves
        fh.truncate(os.path.getsize(damaged) // 2)
    recs = voxlod.sample_meshes(root, out, workers=2, **OPTS)
    for r in recs:
        if r["path"] == str(root / "box.ply"):
            assert r["ok"] and not r["skipped"]
        elif r["ok"]:
            assert r["skipped"] and os.stat(r["file"]).st_mtime_ns == mtimes[r["path"]]
    v, f = good["box.ply"]
    check_output(damaged, v, f, OPTS["points"])
    # other settings (here DeepSDF's shares, as numpy numbers) make other outputs: redone
    opts = {"shares": np.array([0.5, 0.3, 0.2])}
    recs = voxlod.sample_meshes(root / "s1", tmp_path, preset_opts=opts, **OPTS)
    again = voxlod.sample_meshes(root / "s1", tmp_path, preset_opts=opts, **OPTS)
    assert recs[0]["ok"] and not recs[0]["skipped"] and again[0]["skipped"]
    redo = voxlod.sample_meshes(root / "s1", tmp_path, **OPTS)
    assert redo[0]["ok"] and not redo[0]["skipped"]


def test_shards_and_seeds(meshes, local_run, tmp_path):
    root, _ = meshes
    out, full = local_run
    a = voxlod.sample_meshes(root, tmp_path, shard="0/2", workers=1, **OPTS)
    b = voxlod.sample_meshes(root, tmp_path, shard="1/2", workers=1, **OPTS)
    assert sorted(r["path"] for r in a + b) == sorted(r["path"] for r in full)
    assert not {r["path"] for r in a} & {r["path"] for r in b}
    for r in full:
        if r["ok"]:
            other = tmp_path / os.path.relpath(r["file"], out)
            with np.load(r["file"]) as x, np.load(other) as y:
                for k in ("points", "sdf", "flags", "scale", "offset"):
                    assert np.array_equal(x[k], y[k]), k
    # another seed gives other points
    c = voxlod.sample_meshes(root / "box.ply", tmp_path / "s7", seed=7, **OPTS)
    with np.load(c[0]["file"]) as x, np.load(out / "box.ply.npz") as y:
        assert not np.array_equal(x["points"], y["points"])
    with pytest.raises(ValueError):
        voxlod.sample_meshes(root, tmp_path, shard="2/2", **OPTS)


@pytest.mark.parametrize("preset", ["uniform", "surface", "near"])
def test_presets_cube(meshes, tmp_path, preset):
    root, good = meshes
    rel = os.path.join("s2", "a", MODEL)
    v, f = good[rel]
    r = voxlod.sample_meshes(root / rel, tmp_path, preset=preset, normalize="cube", workers=1,
                             **OPTS)[0]
    assert r["ok"], r
    check_output(r["file"], v, f, OPTS["points"], normalize="cube")
    with np.load(r["file"]) as z:
        d, fl = z["sdf"], z["flags"]
        vox = json.loads(str(z["report"]))["voxel"]
        if preset == "surface":
            assert np.abs(d).max() <= vox
            n = z["normals"]
            p = z["points"] * z["scale"] + z["offset"]
            radial = (p - (1.0, 2.0, -3.0)) / np.linalg.norm(p - (1.0, 2.0, -3.0), axis=1)[:, None]
            assert np.median((n * radial).sum(1)) > 0.99
        if preset == "near":
            # surface voxels' centres moved by up to the band per axis: mostly within it
            band = json.loads(str(z["report"]))["band"]
            assert np.abs(d).max() <= band * (1 + 1e-5)
            assert np.mean((fl & voxlod.SAMPLE_FAR) != 0) < 0.3


def test_deepsdf_surface_points_on_the_triangles(meshes, tmp_path):
    """The deepsdf preset's surface points (here not moved: variances 0) lie on the triangles,
    spread by area: the box's faces get points in proportion to their areas."""
    root, good = meshes
    v, f = good["box.ply"]
    r = voxlod.sample_meshes(root / "box.ply", tmp_path, workers=1, preset="deepsdf",
                             preset_opts={"variances": [0.0, 0.0], "shares": [0.5, 0.5, 0.0]},
                             **OPTS)[0]
    assert r["ok"], r
    with np.load(r["file"]) as z:
        p = z["points"].astype(np.float64) * float(z["scale"]) + z["offset"]
        scale = float(z["scale"])
    exact = np.abs(signed_distance(p[:500], v, f)) / scale
    assert exact.max() < 1e-5
    # faces x = +-1 (area 0.5 each), y = +-0.5 (1 each), z = +-0.25 (2 each): 1/7, 2/7, 4/7
    on = np.abs(np.abs(p) - (1.0, 0.5, 0.25)) < 1e-5
    share = on.sum(0) / len(p)
    assert np.allclose(share, (1 / 7, 2 / 7, 4 / 7), atol=0.04), share


def test_largest_files_first(meshes, tmp_path, monkeypatch):
    """The local engine gets the meshes largest file first (records still in input order)."""
    root, _ = meshes
    seen = []
    monkeypatch.setattr(voxlod._datasets, "_run_local",
                        lambda jobs, *_: seen.extend(j["path"] for j in jobs))
    voxlod.sample_meshes(root, tmp_path, **OPTS)
    sizes = [os.path.getsize(p) for p in seen]
    assert len(seen) >= 4 and sizes == sorted(sizes, reverse=True)
    assert sizes != sorted(sizes) and sorted(seen) != seen  # not the input order here


def test_workers_spread_over_gpus(meshes, tmp_path, monkeypatch):
    """On a machine with several GPUs each local worker process is given one in turn
    (CUDA_VISIBLE_DEVICES, read as CUDA reads it); its records say which. Without a GPU there
    (CI) the workers fall back to the CPU as device=None does. device="cpu" pins none."""
    from voxlod._datasets import _visible_gpus
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2, 5,-1,3")
    assert _visible_gpus() == ["2", "5"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert _visible_gpus() == []
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    root, good = meshes
    files = [root / rel for rel in good]
    recs = voxlod.sample_meshes(files, tmp_path / "g", workers=2, **OPTS)
    assert len(recs) == 3 and all(r["ok"] for r in recs)
    assert all(r["gpu"] in ("0", "1") for r in recs)
    recs = voxlod.sample_meshes(files, tmp_path / "c", workers=2, device="cpu", **OPTS)
    assert all(r["ok"] and r["gpu"] is None for r in recs)


def test_bad_inputs(meshes, tmp_path):
    root, _ = meshes
    good = root / "box.ply"
    link = tmp_path / "link.ply"
    link.symlink_to(good)
    recs = voxlod.sample_meshes([good, link, good, tmp_path / "missing.obj"], tmp_path / "o",
                                workers=1, **OPTS)
    assert [r["ok"] for r in recs].count(True) == 1
    dup = [r for r in recs if r["skipped"]]
    assert len(dup) == 2 and all("same file" in r["error"] for r in dup)
    assert any("no such file" in (r["error"] or "") for r in recs)
    # skip_unreliable: the NaN mesh is skipped with its reason, nothing written
    r = voxlod.sample_meshes(root / "broken" / "nan.obj", tmp_path / "u", skip_unreliable=True,
                             **OPTS)[0]
    assert not r["ok"] and r["skipped"] and "NaN" in r["error"]
    assert not (tmp_path / "u" / "nan.obj.npz").exists()
    # an output directory that cannot be made: per-mesh errors, the run goes on
    (tmp_path / "file").write_text("")
    recs = voxlod.sample_meshes(root, tmp_path / "file" / "out", workers=1, **OPTS)
    assert recs and not any(r["ok"] for r in recs)
    assert all(r["error"] for r in recs)
    # a memory limit no conversion fits in: each mesh fails with the library's message
    recs = voxlod.sample_meshes(root / "s1", tmp_path / "m", mem_limit="1K", **OPTS)
    assert not recs[0]["ok"] and "LimitError" in recs[0]["error"]
    with pytest.raises(ValueError):
        voxlod.sample_meshes(root, tmp_path, preset="nope")
    with pytest.raises(ValueError):
        voxlod.sample_meshes(root, tmp_path, preset_opts={"shares": (1, 1)}, **OPTS)


def test_worker_killed(meshes, local_run, tmp_path, monkeypatch):
    root, _ = meshes
    mark = tmp_path / "died"
    monkeypatch.setenv("VOXLOD_TEST_DIE_ON", "box.ply")
    monkeypatch.setenv("VOXLOD_TEST_DIE_MARK", str(mark))
    recs = voxlod.sample_meshes(root, tmp_path / "o", workers=2, **OPTS)
    assert mark.exists()  # a worker did die
    r = next(r for r in recs if r["path"] == str(root / "box.ply"))
    assert r["ok"] and r.get("retried"), r
    assert sum(r["ok"] for r in recs) == sum(r["ok"] for r in local_run[1])
    with np.load(r["file"]) as x, np.load(local_run[0] / "box.ply.npz") as y:
        assert np.array_equal(x["sdf"], y["sdf"])


def test_worker_killed_twice(meshes, tmp_path, monkeypatch):
    root, _ = meshes
    monkeypatch.setenv("VOXLOD_TEST_DIE_ON", "box.ply")  # no marker: it dies every time
    recs = voxlod.sample_meshes([root / "box.ply", root / "s1"], tmp_path, workers=2, **OPTS)
    r = {os.path.basename(r["path"]): r for r in recs}
    assert not r["box.ply"]["ok"] and "died twice" in r["box.ply"]["error"]
    assert r["model_normalized.obj"]["ok"]
    assert not (tmp_path / "box.ply.npz").exists()
    assert "died twice" in (tmp_path / "failures.jsonl").read_text()


def test_cli(meshes, tmp_path):
    root, _ = meshes
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    cmd = [sys.executable, "-m", "voxlod", "samples", str(tmp_path / "a"), "--points", "2000",
           "--res", "32", "--workers", "1", "--seed", "3"]
    p = subprocess.run(cmd + [str(root / "box.ply"), str(root / "s1")], env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "meshes/s" in p.stderr or "mesh/s" in p.stderr
    assert (tmp_path / "a" / "box.ply.npz").exists()
    p = subprocess.run(cmd + ["--no-progress", str(root)], env=env, capture_output=True,
                       text=True)
    assert p.returncode == 1
    assert "2 already done" in p.stdout and "2 failed" in p.stdout
    assert "corrupt.ply" in p.stderr
    p = subprocess.run(cmd + ["--shard", "x", str(root)], env=env, capture_output=True, text=True)
    assert p.returncode == 2


def test_dask(meshes, local_run, tmp_path, monkeypatch):
    distributed = pytest.importorskip("dask.distributed")
    root, _ = meshes
    out, local = local_run
    mark = tmp_path / "died"
    # a worker process dies (as killed) on the box; Dask reruns its task elsewhere
    monkeypatch.setenv("VOXLOD_TEST_DIE_ON", "box.ply")
    monkeypatch.setenv("VOXLOD_TEST_DIE_MARK", str(mark))
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        recs = voxlod.sample_meshes(root, tmp_path / "o", client=client, **OPTS)
        # the command line on the same cluster
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        p = subprocess.run([sys.executable, "-m", "voxlod", "samples", str(tmp_path / "cli"),
                            str(root / "box.ply"), "--points", "3000", "--res", "32",
                            "--no-progress", "--scheduler", cluster.scheduler_address],
                           env=env, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        with np.load(tmp_path / "cli" / "box.ply.npz") as x, \
                np.load(local_run[0] / "box.ply.npz") as y:
            assert np.array_equal(x["sdf"], y["sdf"])
    assert mark.exists()
    want = {r["path"]: r for r in local}
    assert {r["path"] for r in recs} == set(want)
    for r in recs:
        assert r["ok"] == want[r["path"]]["ok"], r
        if r["ok"]:
            with np.load(r["file"]) as x, np.load(want[r["path"]]["file"]) as y:
                for k in ("points", "sdf", "flags", "scale", "offset"):
                    assert np.array_equal(x[k], y[k]), k
        else:
            assert r["error"]


def two_boxes_on_an_edge():
    """Two unit boxes touching along the edge x = y = 1: that edge carries four triangles."""
    v0, f0 = box((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
    v1, f1 = box((1.0, 1.0, 0.0), (2.0, 2.0, 1.0))
    return np.concatenate([v0, v1]), np.concatenate([f0, f1 + len(v0)])


def edge_counts(v, f):
    """Boundary, non-manifold and inconsistently oriented edges by brute force: a dict of
    undirected edges (vertex positions as tuples) to their directed uses."""
    uses = {}
    for tri in f:
        for i in range(3):
            a, b = tuple(v[tri[i]]), tuple(v[tri[(i + 1) % 3]])
            uses.setdefault(frozenset((a, b)), []).append((a, b))
    boundary = sum(len(u) == 1 for u in uses.values())
    nonmanifold = sum(len(u) > 2 for u in uses.values())
    inconsistent = sum(len(u) == 2 and u[0] == u[1] for u in uses.values())
    return len(uses), boundary, nonmanifold, inconsistent


def test_sign_report(tmp_path):
    cube = box((-1.0, -1.0, -1.0), (1.0, 1.0, 1.0))
    v, f = cube
    flipped = f.copy()
    flipped[0] = flipped[0][::-1]
    cases = {  # name: (vertices, faces, watertight, sign_reliable)
        "cube": (v, f, True, True),
        "open.obj": (v, f[2:], False, False),   # no lid: an opening of a sixth of the area
        "edge.obj": (*two_boxes_on_an_edge(), False, True),  # closed, oriented: signs hold
        "flipped.obj": (v, flipped, True, False),  # half a face the wrong way round
    }
    # a fine sphere with one small hole: open, but the hole is far below 1 % of the area
    sv, sf = uv_sphere(1.0, 64, 32)
    cases["pinhole.obj"] = (sv, sf[1:], False, True)
    for name, (cv, cf, _, _) in cases.items():
        write_obj(tmp_path / "in" / (name if name.endswith(".obj") else name + ".obj"), cv, cf)
    recs = voxlod.sample_meshes(tmp_path / "in", tmp_path / "out", workers=1, **OPTS)
    got = {os.path.basename(r["path"]): r for r in recs}
    for name, (cv, cf, watertight, reliable) in cases.items():
        r = got[name if name.endswith(".obj") else name + ".obj"]
        assert r["ok"], r
        rep = r["report"]
        edges, boundary, nonmanifold, inconsistent = edge_counts(cv, cf)
        assert (rep["edges"], rep["boundary_edges"], rep["nonmanifold_edges"],
                rep["inconsistent_edges"]) == (edges, boundary, nonmanifold, inconsistent), name
        assert rep["watertight"] is watertight and rep["sign_reliable"] is reliable, (name, rep)
        assert (rep["unreliable_because"] == []) is reliable
        assert rep["unsigned"] is False
        with np.load(r["file"]) as z:
            assert json.loads(str(z["report"]))["watertight"] is watertight
    # the expected counts themselves
    # open_area_share against the areas by hand (the box is 2 wide: faces of 4, triangles of 2)
    assert got["cube.obj"]["report"]["open_area_share"] == 0.0
    assert got["edge.obj"]["report"]["open_area_share"] == 0.0
    assert got["open.obj"]["report"]["open_area_share"] == pytest.approx(4 / 20)  # the lid
    assert got["flipped.obj"]["report"]["open_area_share"] == pytest.approx(2 * 2 / 24)
    assert 0 < got["pinhole.obj"]["report"]["open_area_share"] < 1e-3
    assert got["open.obj"]["report"]["boundary_edges"] == 4
    assert got["edge.obj"]["report"]["nonmanifold_edges"] == 1
    assert got["flipped.obj"]["report"]["inconsistent_edges"] == 3
    assert got["pinhole.obj"]["report"]["boundary_edges"] == 3
    assert "open or inconsistently oriented" in " ".join(
        got["open.obj"]["report"]["unreliable_because"])
    # skip_unreliable: the open box and the flipped cube are skipped, the others written
    recs = voxlod.sample_meshes(tmp_path / "in", tmp_path / "skip", workers=1,
                                skip_unreliable=True, **OPTS)
    skipped = sorted(os.path.basename(r["path"]) for r in recs if r["skipped"])
    assert skipped == ["flipped.obj", "open.obj"]
    assert all(r["ok"] for r in recs if not r["skipped"])
    # Mesh exposes the loaded soup: 3 vertices per triangle, the faces index them in order
    m = voxlod.load_mesh(tmp_path / "in" / "cube.obj")
    assert m.vertices.shape == (36, 3) and m.vertices.dtype == np.float32
    assert not m.vertices.flags.writeable
    assert np.array_equal(m.faces, np.arange(36).reshape(12, 3))
    assert np.array_equal(m.vertices, v[f].reshape(-1, 3).astype(np.float32))


def test_unsigned(meshes, tmp_path):
    root, _ = meshes
    src = [root / "box.ply", root / "s1"]
    signed = voxlod.sample_meshes(src, tmp_path / "s", workers=1, **OPTS)
    unsigned = voxlod.sample_meshes(src, tmp_path / "u", workers=1, unsigned=True, **OPTS)
    assert len(signed) == len(unsigned) == 2
    for a, b in zip(signed, unsigned):
        assert a["ok"] and b["ok"] and b["report"]["unsigned"] is True
        with np.load(a["file"]) as x, np.load(b["file"]) as y:
            assert np.array_equal(x["points"], y["points"])
            assert (x["sdf"] < 0).any()  # the signed run has inside points
            assert (y["sdf"] >= 0).all()
            assert np.array_equal(y["sdf"], np.abs(x["sdf"]))
            assert json.loads(str(y["report"]))["unsigned"] is True
    # a signed output is not a finished unsigned one: a rerun into the same folder redoes it
    again = voxlod.sample_meshes(src, tmp_path / "s", workers=1, unsigned=True, **OPTS)
    assert all(r["ok"] and not r["skipped"] for r in again)
    # the shell's --unsigned
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.run([sys.executable, "-m", "voxlod", "samples", str(tmp_path / "c"),
                        "--points", "3000", "--res", "32", "--workers", "1", "--no-progress",
                        "--unsigned", str(root / "box.ply")], env=env, capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    with np.load(tmp_path / "c" / "box.ply.npz") as z, np.load(tmp_path / "u" / "box.ply.npz") as y:
        assert np.array_equal(z["sdf"], y["sdf"])
