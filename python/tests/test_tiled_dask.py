# SPDX-License-Identifier: Apache-2.0
"""Tiled builds as tasks on a Dask cluster (convert(client=), `python -m voxlod convert
--scheduler`): the file is byte for byte the one-machine build's; the merge refuses records
that do not belong together."""
import os
import subprocess
import sys

import pytest

import voxlod
from voxlod import _voxlod
from conftest import BUNNY, ROOT, write_stl

distributed = pytest.importorskip("dask.distributed")


def test_cluster_build_is_the_local_build(tmp_path, monkeypatch):
    local, remote, cli = tmp_path / "local.svo", tmp_path / "dask.svo", tmp_path / "cli.svo"
    voxlod.convert(BUNNY, res=256, tile_depth=5, out=local, color="off", progress=False)
    # the worker building tile 7 dies once (as killed); Dask reruns that task elsewhere
    mark = tmp_path.parent / (tmp_path.name + "-died")
    monkeypatch.setenv("VOXLOD_TEST_DIE_TILE", "7")
    monkeypatch.setenv("VOXLOD_TEST_DIE_MARK", str(mark))
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=2,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        voxlod.convert(BUNNY, res=256, tile_depth=5, out=remote, client=client, progress=False)
        assert remote.read_bytes() == local.read_bytes()
        assert mark.exists()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        p = subprocess.run([sys.executable, "-m", "voxlod", "convert", str(BUNNY), str(cli),
                            "--res", "256", "--tile-depth", "5", "--no-progress",
                            "--scheduler", cluster.scheduler_address],
                           env=env, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert "tiled tree" in p.stdout and cluster.scheduler_address in p.stdout
        assert cli.read_bytes() == local.read_bytes()
        # pruned inside the tiles: the same bytes on the cluster (through the command line)
        pl, pc = tmp_path / "plocal.svo", tmp_path / "pcli.svo"
        voxlod.convert(BUNNY, res=256, tile_depth=5, error=1.0, out=pl, color="off",
                       progress=False)
        p = subprocess.run([sys.executable, "-m", "voxlod", "convert", str(BUNNY), str(pc),
                            "--res", "256", "--tile-depth", "5", "--error", "1", "--no-progress",
                            "--scheduler", cluster.scheduler_address],
                           env=env, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert pc.read_bytes() == pl.read_bytes()
        assert pl.stat().st_size < local.stat().st_size
        pl.unlink()
        pc.unlink()
        # a coloured mesh (materials' colours): the coloured file of one process
        scene = ROOT / "tests" / "data" / "meshes" / "scene.obj"
        cl, cd = tmp_path / "clocal.svo", tmp_path / "cdask.svo"
        voxlod.convert(scene, res=64, tile_depth=3, out=cl, progress=False)
        voxlod.convert(scene, res=64, tile_depth=3, out=cd, client=client, progress=False)
        assert voxlod.TiledFile(cd).info["has_color"]
        assert cd.read_bytes() == cl.read_bytes()
        cl.unlink()
        cd.unlink()
        with pytest.raises(ValueError, match="tile_depth"):
            voxlod.convert(BUNNY, res=256, out=tmp_path / "x.svo", client=client)
        with pytest.raises(TypeError, match="path"):
            voxlod.convert(voxlod.load_mesh(BUNNY), res=256, tile_depth=5,
                           out=tmp_path / "x.svo", client=client)
    f = voxlod.TiledFile(remote)
    assert f.depth == 8 and f.tile_depth == 5
    # the tiles' files are gone; nothing else was left beside the output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli.svo", "dask.svo", "local.svo"]


def test_cluster_split_build(tmp_path):
    """sign="pseudo-normal" from a binary STL: a first task splits the mesh by tile into a parts
    file beside the output, each worker's plan reads only its tiles' parts (no worker loads the
    mesh): the one-machine bytes; the parts file and the workers' plans on it are gone after."""
    from voxlod import _tiles

    stl = write_stl(tmp_path / "bunny.stl", voxlod.load_mesh(BUNNY))
    local, remote = tmp_path / "local.svo", tmp_path / "dask.svo"
    for error in (0.0, 1.0):
        voxlod.convert(stl, res=256, tile_depth=5, sign="pseudo-normal", error=error, out=local,
                       progress=False)
        with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=2,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            spec = dict(res=256, band=0.0, device=1, mem_limit=0, threads=0, sign_rule=1,
                        tile_depth=5, zstd_level=0, max_error=error, color=0, color_filter=0)
            summary = _tiles.convert_on_cluster(client, os.fsencode(stl), os.fsencode(remote),
                                                spec, progress=False)
            assert summary["split"] and summary["tiles"] > 8
            assert remote.read_bytes() == local.read_bytes()
            plans = client.run(lambda: len(_tiles._plans))
            assert set(plans.values()) == {0}, plans
            # an ASCII PLY is not split: each worker loads it, the same bytes as one machine
            voxlod.convert(BUNNY, res=256, tile_depth=5, sign="pseudo-normal", error=error,
                           out=local, color="off", progress=False)
            summary = _tiles.convert_on_cluster(client, os.fsencode(BUNNY), os.fsencode(remote),
                                                spec, progress=False)
            assert not summary["split"]
            assert remote.read_bytes() == local.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bunny.stl", "dask.svo", "local.svo"]


def test_parts_file_refused(tmp_path):
    """A parts file opened with other options, damaged or cut short: clear errors."""
    stl = write_stl(tmp_path / "bunny.stl", voxlod.load_mesh(BUNNY))
    parts = os.fsencode(tmp_path / "parts")
    opts = [64, 0.0, 1, 0, 0, 1, 3]
    info = _voxlod.tile_split(os.fsencode(stl), parts, *opts)
    assert info["tiles"] > 1 and info["depth"] == 6
    p = _voxlod._TilePlan.open_parts(parts, *opts)
    assert p.info()["build_id"] == info["build_id"]
    del p
    with pytest.raises(voxlod.InvalidArgumentError, match="split for another build"):
        _voxlod._TilePlan.open_parts(parts, 64, 0.0, 1, 0, 0, 1, 4)
    with pytest.raises(voxlod.InvalidArgumentError, match="pseudo-normal"):
        _voxlod.tile_split(os.fsencode(stl), parts, 64, 0.0, 1, 0, 0, 0, 3)
    b = bytearray(open(parts, "rb").read())
    b[300] ^= 1
    open(parts, "wb").write(bytes(b))
    p = _voxlod._TilePlan.open_parts(parts, *opts)
    with pytest.raises(voxlod.CorruptError, match="damaged"):
        for k in range(p.info()["tiles"]):
            p.build(k, os.fsencode(tmp_path / "t.svo"))
    open(parts, "wb").write(bytes(b[:-5]))
    with pytest.raises(voxlod.CorruptError, match="parts file"):
        _voxlod._TilePlan.open_parts(parts, *opts)


def test_merge_refuses_what_does_not_belong(tmp_path):
    mesh = voxlod.load_mesh(BUNNY)._m

    def plan(band):
        return _voxlod._TilePlan.create(mesh, 64, band, 1, 0, 0, 0, 3)

    a, b = plan(2.0), plan(3.0)
    n = a.info()["tiles"]
    assert n == b.info()["tiles"] and a.info()["build_id"] != b.info()["build_id"]
    recs, paths = [], []
    for k in range(n):
        p = os.fsencode(tmp_path / f"t{k}.svo")
        r = a.build(k, p)
        recs.append(r)
        paths.append(b"" if _voxlod.tile_record_info(r)["empty"] else p)
    out = os.fsencode(tmp_path / "out.svo")
    full = [k for k in range(n) if paths[k]]
    i, j = full[0], full[1]
    other = os.fsencode(tmp_path / "other.svo")
    with pytest.raises(voxlod.InvalidArgumentError, match="another build"):
        _voxlod.tile_merge(out, recs[:i] + [b.build(i, other)] + recs[i + 1:], paths)
    with pytest.raises(voxlod.InvalidArgumentError, match="twice"):
        _voxlod.tile_merge(out, recs + [recs[i]], paths + [paths[i]])
    swapped = list(paths)
    swapped[i], swapped[j] = paths[j], paths[i]
    with pytest.raises(voxlod.Error):
        _voxlod.tile_merge(out, recs, swapped)
    bad = bytearray(recs[i])
    bad[30] ^= 1
    with pytest.raises(voxlod.CorruptError):
        _voxlod.tile_merge(out, recs[:i] + [bytes(bad)] + recs[i + 1:], paths)
    with pytest.raises(ValueError, match="360"):
        _voxlod.tile_merge(out, [recs[i][:100]], [paths[i]])
    assert not os.path.exists(out)
    s = _voxlod.tile_merge(out, recs, paths)
    assert s["file_bytes"] == os.path.getsize(out) and s["surface_voxels"] > 0
    whole = tmp_path / "whole.svo"
    voxlod.convert(BUNNY, res=64, tile_depth=3, out=whole, gpu=False, color="off",
                   progress=False)
    assert whole.read_bytes() == open(out, "rb").read()
