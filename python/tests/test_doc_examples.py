# SPDX-License-Identifier: Apache-2.0
"""The README's Python example and docs/python.md's worked example, run as a user runs them: in a
scratch folder with data/ beside it (they read data/bunny.ply and write their files there)."""
import pathlib
import re

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]


def first_python_block(doc):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / doc).read_text(), re.S)
    assert blocks, f"{doc} has no python example"
    return blocks[0]


def run_example(doc, tmp_path, monkeypatch):
    (tmp_path / "data").symlink_to(ROOT / "data")
    monkeypatch.chdir(tmp_path)
    scope = {"__name__": "__example__"}
    exec(compile(first_python_block(doc), doc, "exec"), scope)
    return scope


def test_readme_example(tmp_path, monkeypatch):
    s = run_example("README.md", tmp_path, monkeypatch)
    assert s["image"].shape == (480, 640, 3) and s["image"].dtype == np.uint8
    assert s["image"].std() > 0  # the bunny is in the picture
    n = len(s["points"])
    assert s["dist"].shape == (n,) and s["grad"].shape == (n, 3)
    assert np.isfinite(s["dist"]).all()
    assert (tmp_path / "bunny.svo").stat().st_size > 1000


def test_python_md_worked_example(tmp_path, monkeypatch):
    s = run_example("docs/python.md", tmp_path, monkeypatch)
    assert s["tree"].resolution == 256
    assert s["coarse"].shape == s["image"].shape == (480, 640, 3)
    assert s["depth"].shape == (480, 640) and np.isinf(s["depth"]).any()
    sdf = np.load(tmp_path / "bunny_sdf.npz")
    assert sdf["points"].shape == (1_000_000, 3) and sdf["sdf"].shape == (1_000_000,)
    assert 0.2 < (sdf["sdf"] < 0).mean() < 0.8  # points on both sides of the surface
    assert len(s["stats"]) == s["tree"].depth + 1
