# SPDX-License-Identifier: Apache-2.0
"""File paths and arguments as a hostile or careless caller passes them: embedded NULs (refused as
open() refuses them, never cut at the NUL), os.PathLike and bytes paths, names that are not
UTF-8, progress= values that are not a switch or a callable, and exception names that shadow
nothing in builtins."""
import builtins
import os
import pathlib
import sys

import pytest

import voxlod
from reference import uv_sphere

needs_bytes_names = pytest.mark.skipif(sys.platform != "linux",
                                       reason="names that are not UTF-8: a Linux file system")


@pytest.fixture(scope="module")
def small_tree():
    return voxlod.convert(uv_sphere(1.0, 16, 8), res=16, progress=False, gpu=False)


def write_obj(path):
    """A tetrahedron as an OBJ file at path (str or bytes)."""
    with open(path, "w") as f:
        f.write("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")


# ---- embedded NUL -------------------------------------------------------------------------------

def test_save_with_nul_is_refused_and_touches_nothing(small_tree, tmp_path):
    victim = tmp_path / "important.txt"
    victim.write_text("keep me")
    for p in (str(victim) + "\0.svo", os.fsencode(str(victim)) + b"\0.svo"):
        with pytest.raises(ValueError, match="null"):
            small_tree.save(p)
    assert victim.read_text() == "keep me"
    assert sorted(os.listdir(tmp_path)) == ["important.txt"]
    with pytest.raises(ValueError):  # what open() does with the same name
        open(str(victim) + "\0.svo", "wb")


def test_load_and_convert_with_nul_are_refused(small_tree, tmp_path):
    good = tmp_path / "t.svo"
    small_tree.save(good)
    with pytest.raises(ValueError, match="null"):
        voxlod.load(str(good) + "\0ignored")
    with pytest.raises(ValueError, match="null"):
        voxlod.load(os.fsencode(str(good)) + b"\0")
    mesh = tmp_path / "m.obj"
    write_obj(mesh)
    with pytest.raises(ValueError, match="null"):
        voxlod.convert(str(mesh) + "\0.ply", res=8, progress=False, gpu=False)
    with pytest.raises(ValueError, match="null"):
        voxlod.convert(pathlib.Path(str(mesh) + "\0x"), res=8, progress=False, gpu=False)


def test_the_module_refuses_nul_too(small_tree, tmp_path):
    """The compiled layer checks again, for a caller that skips the package's checks."""
    from voxlod import _voxlod
    with pytest.raises(ValueError, match="null"):
        _voxlod._Tree.load(os.fsencode(str(tmp_path / "a")) + b"\0b")
    with pytest.raises(ValueError, match="null"):
        _voxlod._Mesh.load(b"x\0.obj")


# ---- os.PathLike, bytes, names that are not UTF-8 -----------------------------------------------

class Fspath:
    """A minimal os.PathLike that is not a pathlib.Path."""

    def __init__(self, p):
        self.p = p

    def __fspath__(self):
        return self.p


def test_pathlike_and_bytes_paths(small_tree, tmp_path):
    for i, make in enumerate((str, pathlib.Path, os.fsencode, Fspath,
                              lambda s: Fspath(os.fsencode(s)))):
        p = make(str(tmp_path / f"t{i}.svo"))
        small_tree.save(p)
        t = voxlod.load(p)
        assert t.info["voxel_count"] == small_tree.info["voxel_count"]
        assert t.info["file_bytes"] == os.path.getsize(os.fsdecode(os.fspath(p)))
    mesh = tmp_path / "m.obj"
    write_obj(mesh)
    for p in (mesh, os.fsencode(str(mesh)), Fspath(str(mesh))):
        t = voxlod.convert(p, res=8, progress=False, gpu=False)
        assert t.resolution == 8 and t.info["voxel_count"] > 0


def test_bad_path_types(small_tree):
    for bad in (3, 2.5, None, ["a.svo"], Fspath(3)):
        with pytest.raises(TypeError):
            small_tree.save(bad)
        with pytest.raises(TypeError):
            voxlod.load(bad)
    with pytest.raises(ValueError, match="empty"):
        voxlod.load(b"")


@needs_bytes_names
def test_names_that_are_not_utf8(small_tree, tmp_path):
    d = os.fsencode(str(tmp_path))
    name = d + b"/caf\xe9-\xff\xfe.svo"  # Latin-1 bytes: not UTF-8
    small_tree.save(name)
    assert os.path.exists(name)
    t = voxlod.load(name)
    assert t.info["voxel_count"] == small_tree.info["voxel_count"]
    # the same file through str with surrogate escapes (what os.listdir gives for it)
    (listed,) = [n for n in os.listdir(str(tmp_path)) if n.startswith("caf")]
    assert voxlod.load(os.path.join(str(tmp_path), listed)).depth == t.depth
    mesh = d + b"/m\xe9sh.obj"
    write_obj(mesh)
    assert voxlod.convert(mesh, res=8, progress=False, gpu=False).resolution == 8
    with pytest.raises(voxlod.FileError) as e:
        voxlod.load(d + b"/missing-\xff.svo")
    assert isinstance(e.value, OSError) and "missing-\\xff.svo" in str(e.value)


# ---- progress= ----------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [5, 0, 1, "x", "", 2.0, [], object()])
def test_progress_must_be_a_switch_or_a_callable(bad):
    with pytest.raises(TypeError, match="progress"):
        voxlod.convert(uv_sphere(1.0, 8, 4), res=8, progress=bad, gpu=False)


def test_progress_values_that_work(capsys):
    mesh = uv_sphere(1.0, 8, 4)
    for ok in (None, False):
        voxlod.convert(mesh, res=8, progress=ok, gpu=False)
    seen = []
    voxlod.convert(mesh, res=8, progress=lambda phase, f: seen.append(f), gpu=False)
    assert seen and all(0.0 <= f <= 1.0 for f in seen)


# ---- exception names ----------------------------------------------------------------------------

def test_exceptions_shadow_no_builtin():
    for name in voxlod.__all__:
        assert not hasattr(builtins, name), f"voxlod.{name} shadows the built-in {name}"
    assert not hasattr(voxlod, "IOError") and not hasattr(voxlod, "InterruptedError")
    assert issubclass(voxlod.FileError, voxlod.Error) and issubclass(voxlod.FileError, OSError)
    assert issubclass(voxlod.CancelledError, voxlod.Error)
    assert not issubclass(voxlod.CancelledError, InterruptedError)


def test_statuses_map_to_the_renamed_exceptions():
    """VX_ERR_IO and VX_ERR_INTERRUPTED (a cancelled call) under their new names."""
    from voxlod import _errors
    e = _errors._make_error(11, "interrupted (lib/convert.c:1)")
    assert type(e) is voxlod.CancelledError and e.code == 11 and "interrupted" in str(e)
    e = _errors._make_error(2, "cannot open 'x'")
    assert type(e) is voxlod.FileError and isinstance(e, OSError)
