# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures: small trees made once per session, the bundled meshes, the CLI binary; the
skip policy: only tests marked `gpu` (a usable CUDA device) or `optional` (a package that
scripts/test.sh does not install, named in the reason) may skip where $CI is set; any other skip
is reported there as a failure, since the test script installs everything else."""
import os
import pathlib
import shutil

import numpy as np
import pytest

import voxlod
from reference import uv_sphere

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUNNY = ROOT / "data" / "bunny.ply"
SPOT = ROOT / "data" / "spot.obj"
STRICT = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a usable CUDA device (may skip)")
    config.addinivalue_line("markers", "optional: needs a package scripts/test.sh does not install "
                            "(may skip)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """In CI, a skip of a test marked neither `gpu` nor `optional` is a failure."""
    rep = (yield).get_result()
    if STRICT and rep.skipped and not hasattr(rep, "wasxfail") and \
            not any(item.get_closest_marker(m) for m in ("gpu", "optional")):
        why = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        rep.outcome = "failed"
        rep.longrepr = "skipped where $CI is set (only gpu/optional tests may skip): " + str(why)


@pytest.fixture(scope="session")
def sphere_mesh():
    return uv_sphere(1.0, 48, 24)


@pytest.fixture(scope="session")
def sphere_tree(sphere_mesh):
    return voxlod.convert(sphere_mesh, res=64, progress=False, gpu=False)


@pytest.fixture(scope="session")
def bunny_tree():
    return voxlod.convert(BUNNY, res=64, progress=False, gpu=False)


@pytest.fixture(scope="session")
def cli():
    """The voxlod command line of a CMake build: $VOXLOD_CLI, else build*/voxlod in the source
    tree, else voxlod on PATH; the test is skipped without one."""
    cand = [os.environ.get("VOXLOD_CLI")] + sorted(str(p) for p in ROOT.glob("build*/voxlod"))
    cand.append(shutil.which("voxlod"))
    for c in cand:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    pytest.skip("no voxlod command line found (set VOXLOD_CLI)")


def rng(seed=0):
    return np.random.default_rng(seed)


def write_stl(path, mesh):
    """mesh's triangles as a binary STL at path (what the library splits by tile)."""
    tri = np.ascontiguousarray(mesh.vertices[mesh.faces].reshape(-1, 9), dtype="<f4")
    rec = np.zeros(len(tri), dtype=[("n", "<f4", 3), ("p", "<f4", 9), ("a", "<u2")])
    rec["p"] = tri
    path.write_bytes(b"\0" * 80 + np.uint32(len(tri)).tobytes() + rec.tobytes())
    return path


def rss_bytes():
    """The process's resident memory (Linux)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
