"""Shared fixtures: small trees made once per session, the bundled bunny, the CLI binary."""
import os
import pathlib
import shutil

import numpy as np
import pytest

import voxlod
from reference import uv_sphere

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUNNY = ROOT / "data" / "bunny.ply"


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


def rss_bytes():
    """The process's resident memory (Linux)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
