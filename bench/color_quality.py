#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Colour quality of voxlod's coloured trees against an independent reference (docs/COLOR.md).

For each textured mesh and resolution: voxlod converts the mesh (voxlod.convert, colour on);
the mesh is read again here with trimesh (and PIL for its textures, MTL files parsed here), and
bench/color_reference.py computes, on the tree's own grid (Tree.origin, Tree.scale), the texture
colour filtered over every surface voxel's footprint (exact triangle pieces, supersampled at
the texel rate, averaged in linear light). voxlod's albedo there is Tree.colors(voxel centres).
Printed: a markdown table of CIEDE2000 between the two (mean, 95th percentile, per level),
and with --dominant the share of voxels of a color_filter="dominant" tree whose colour is not
within dE00 1 of any colour of their footprint.

    python3 bench/color_quality.py                      # the shared textured meshes, 256 and 1024
    python3 bench/color_quality.py --res 256 --mesh duck --pictures docs/images/color

Needs numpy, trimesh, pillow (and pycollada for .dae); the voxlod package with colour.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import pathlib
import shutil
import struct
import sys
import tempfile
import time
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import color_reference as cr  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
MESHES = {  # name -> path under the shared meshes folder, camera (azimuth, elevation) for pictures
    "duck": ("duck/duck.dae", (30.0, 20.0)),
    "spider": ("spider/spider.obj", (30.0, 35.0)),
    "sponza": ("sponza_dabrovic/sponza.obj", (90.0, 35.0)),
    "cornell_box": ("cornell_box/CornellBox-Original.obj", (0.0, 0.0)),
    "2cylinder_engine": ("2cylinder_engine/2CylinderEngine.glb", (30.0, 20.0)),
}
PICTURE_MESHES = ("duck", "spider", "cornell_box", "2cylinder_engine")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- reading the mesh again

def _find_file(folder: pathlib.Path, name: str) -> Optional[pathlib.Path]:
    """A texture path as MTL files write it: relative to the mesh, with '\\' or '/', in any
    case; else its base name in the mesh's folder, in any case."""
    name = name.strip().strip('"').replace("\\", "/")
    cand = folder / name
    if cand.is_file():
        return cand
    lower = {p.name.lower(): p for p in folder.iterdir() if p.is_file()}
    for n in (name, name.split("/")[-1]):
        p = lower.get(n.lower().split("/")[-1])
        if p is not None:
            return p
    return None


def parse_mtl(obj_path: pathlib.Path) -> Dict[str, dict]:
    """Materials of an OBJ's MTL files: name -> {kd (floats), d, map_kd, map_d (paths)}."""
    mats: Dict[str, dict] = {}
    folder = obj_path.parent
    libs = []
    with open(obj_path, "r", errors="replace") as f:
        for line in f:
            if line.startswith("mtllib"):
                libs += line.split(None, 1)[1:]
    for lib in libs:
        p = _find_file(folder, lib.strip())
        if p is None:
            log(f"  warning: MTL {lib.strip()!r} not found")
            continue
        cur = None
        for line in open(p, "r", errors="replace"):
            t = line.split("#", 1)[0].split()
            if not t:
                continue
            key = t[0].lower()
            if key == "newmtl" and len(t) > 1:
                cur = mats.setdefault(" ".join(t[1:]), {"kd": (0.8, 0.8, 0.8), "d": 1.0})
            elif cur is None:
                continue
            elif key == "kd" and len(t) >= 4:
                cur["kd"] = tuple(float(x) for x in t[1:4])
            elif key == "d" and len(t) >= 2:
                cur["d"] = float(t[1])
            elif key == "tr" and len(t) >= 2 and "d" not in cur:
                cur["d"] = 1.0 - float(t[1])
            elif key in ("map_kd", "map_d") and len(t) >= 2:
                cur[key] = _find_file(folder, t[-1])
                if cur[key] is None:
                    log(f"  warning: texture {t[-1]!r} not found (material colour used)")
    return mats


def glb_factors(path: pathlib.Path) -> Dict[str, Tuple[float, float, float, float]]:
    """Material name -> baseColorFactor as floats (trimesh keeps them as uint8)."""
    out: Dict[str, Tuple[float, float, float, float]] = {}
    try:
        data = path.read_bytes()
        if path.suffix.lower() == ".glb":
            n = struct.unpack_from("<I", data, 12)[0]
            doc = json.loads(data[20:20 + n])
        else:
            doc = json.loads(data)
    except (OSError, ValueError, struct.error):
        return out
    for i, m in enumerate(doc.get("materials", [])):
        f = m.get("pbrMetallicRoughness", {}).get("baseColorFactor", [1, 1, 1, 1])
        out[m.get("name", f"material_{i}")] = tuple(float(x) for x in f)
    return out


_TEX_CACHE: Dict[object, np.ndarray] = {}


def texture_linear(img, alpha_img=None) -> Optional[np.ndarray]:
    """A PIL image (or a path) -> (H, W, 4) float32: rgb sRGB-decoded, alpha linear."""
    from PIL import Image
    key = (id(img) if not isinstance(img, (str, pathlib.Path)) else str(img),
           None if alpha_img is None else str(alpha_img))
    if key in _TEX_CACHE:
        return _TEX_CACHE[key]
    try:
        im = Image.open(img) if isinstance(img, (str, pathlib.Path)) else img
        a = np.asarray(im.convert("RGBA"), dtype=np.float32) / 255.0
        if alpha_img is not None:
            am = Image.open(alpha_img)
            am = am.getchannel("A") if "A" in am.getbands() else am.convert("L")
            am = am.resize((a.shape[1], a.shape[0]))
            a[:, :, 3] = np.asarray(am, dtype=np.float32) / 255.0
    except Exception as e:  # a corrupt texture: the material colour is used, as voxlod does
        log(f"  warning: texture {img!r} unreadable ({e}); material colour used")
        _TEX_CACHE[key] = None
        return None
    a[:, :, :3] = cr.srgb_to_linear(a[:, :, :3]).astype(np.float32)
    _TEX_CACHE[key] = a
    return a


def read_obj(path: pathlib.Path):
    """An OBJ's triangles per material, read here (polygons as fans; negative indices count
    back from the vertices read so far): {material: (positions (T, 3, 3), uv (T, 3, 2) or None,
    corner colours (T, 3, 3) sRGB floats or None)}."""
    v, vt, vc = [], [], []
    groups: Dict[str, list] = {}
    cur = ""
    with open(path, "r", errors="replace") as f:
        for line in f:
            t = line.split("#", 1)[0].split()
            if not t:
                continue
            if t[0] == "v":
                v.append([float(x) for x in t[1:4]])
                vc.append([float(x) for x in t[4:7]] if len(t) >= 7 else [np.nan] * 3)
            elif t[0] == "vt":
                vt.append([float(x) for x in (t[1:3] + ["0"])[:2]])
            elif t[0] == "usemtl":
                cur = " ".join(t[1:])
            elif t[0] == "f" and len(t) >= 4:
                idx = []
                for tok in t[1:]:
                    a = tok.split("/")
                    i = int(a[0])
                    j = int(a[1]) if len(a) > 1 and a[1] else None
                    idx.append((i - 1 if i > 0 else len(v) + i,
                                None if j is None else (j - 1 if j > 0 else len(vt) + j)))
                for k in range(1, len(idx) - 1):
                    groups.setdefault(cur, []).append((idx[0], idx[k], idx[k + 1]))
    v = np.asarray(v, np.float64).reshape(-1, 3)
    vc = np.asarray(vc, np.float64).reshape(-1, 3)
    vt = np.asarray(vt, np.float64).reshape(-1, 2)
    out = {}
    for name, tris in groups.items():
        pi = np.array([[c[0] for c in t] for t in tris], np.int64)
        ok = np.all((pi >= 0) & (pi < len(v)), axis=1)
        ti = np.array([[-1 if c[1] is None else c[1] for c in t] for t in tris], np.int64)
        has_uv = bool(len(vt)) and np.all((ti[ok] >= 0) & (ti[ok] < len(vt)))
        cols = vc[pi[ok]]
        cols = None if np.isnan(cols).any() else cols
        out[name] = (v[pi[ok]], vt[ti[ok]] if has_uv else None, cols)
    return out


def obj_parts(path: pathlib.Path, obj_kd: str) -> List[cr.Part]:
    mtl = parse_mtl(path)
    parts = []
    for name, (tris, uv, cols) in read_obj(path).items():
        m = mtl.get(name, {"kd": (0.8, 0.8, 0.8), "d": 1.0})
        factor = tuple(m["kd"]) + (m["d"],)
        tex, mode = None, "opaque"
        if m.get("map_kd") is not None and uv is not None:
            tex = texture_linear(m["map_kd"], m.get("map_d"))
        if tex is not None:
            if obj_kd == "ignore":
                factor = (1.0, 1.0, 1.0, m["d"])
            if m.get("map_d") is not None or float(tex[:, :, 3].min()) < 1.0:
                mode = "mask"  # OBJ cut-outs: map_d or an RGBA diffuse texture
            parts.append(cr.Part(tris, uv=uv, texture=tex, factor=factor, alpha_mode=mode,
                                 name=name))
        elif cols is not None:  # the common `v x y z r g b` extension
            corners = np.concatenate([cr.srgb_to_linear(cols), np.ones(cols.shape[:2] + (1,))],
                                     axis=-1)
            parts.append(cr.Part(tris, corners=corners, name=name))
        else:
            parts.append(cr.Part(tris, factor=factor,
                                 alpha_mode="blend" if m["d"] < 1.0 else "opaque", name=name))
    return parts


def load_parts(path, obj_kd: str = "multiply") -> List[cr.Part]:
    """The mesh as reference parts (world coordinates: every node's transform applied). OBJ
    files are read here (trimesh 4's OBJ reader misplaces faces with negative indices, as in
    the Cornell box); other formats through trimesh."""
    path = pathlib.Path(path)
    if path.suffix.lower() == ".obj":
        return obj_parts(path, obj_kd)
    import trimesh
    scene = trimesh.load(str(path), force="scene", process=False)
    gltf = glb_factors(path) if path.suffix.lower() in (".glb", ".gltf") else {}
    parts = []
    for node in scene.graph.nodes_geometry:
        xf, gname = scene.graph[node]
        g = scene.geometry[gname]
        if not hasattr(g, "faces") or len(g.faces) == 0:
            continue
        v = np.asarray(g.vertices, np.float64) @ xf[:3, :3].T + xf[:3, 3]
        f = np.asarray(g.faces, np.int64)
        tris = v[f]
        vis = g.visual
        kind = getattr(vis, "kind", None)
        if kind == "vertex" and hasattr(vis, "vertex_colors"):
            c = np.asarray(vis.vertex_colors, np.float64)[f]  # (T, 3, 4) uint8 sRGB
            corners = np.concatenate([cr.srgb8_to_linear(c[..., :3]), c[..., 3:] / 255.0], -1)
            parts.append(cr.Part(tris, corners=corners, name=gname))
            continue
        if kind == "face" and hasattr(vis, "face_colors"):
            c = np.asarray(vis.face_colors, np.float64)
            corners = np.repeat(np.concatenate([cr.srgb8_to_linear(c[:, :3]), c[:, 3:] / 255.0],
                                               -1)[:, None], 3, axis=1)
            parts.append(cr.Part(tris, corners=corners, name=gname))
            continue
        mat = getattr(vis, "material", None)
        uv = getattr(vis, "uv", None)
        name = getattr(mat, "name", None) or gname
        factor, tex, mode, cutoff = (1.0, 1.0, 1.0, 1.0), None, "opaque", 0.5
        if mat is not None and hasattr(mat, "baseColorFactor"):  # glTF, DAE
            bf = mat.baseColorFactor
            factor = gltf.get(name, None) or (
                (1.0, 1.0, 1.0, 1.0) if bf is None else tuple(np.asarray(bf, float) / 255.0))
            if getattr(mat, "baseColorTexture", None) is not None:
                tex = texture_linear(mat.baseColorTexture)
            am = (getattr(mat, "alphaMode", None) or "OPAQUE").upper()
            mode = {"MASK": "mask", "BLEND": "blend"}.get(am, "opaque")
            cutoff = getattr(mat, "alphaCutoff", None) or 0.5
        elif mat is not None:  # trimesh SimpleMaterial from other formats
            d = getattr(mat, "diffuse", None)
            if d is not None:
                factor = tuple(np.asarray(d, float) / 255.0)  # linear, as Kd and glTF
            if getattr(mat, "image", None) is not None:
                tex = texture_linear(mat.image)
        if tex is not None and (uv is None or len(uv) != len(g.vertices)):
            log(f"  warning: {gname}: a texture but no UVs; material colour used")
            tex = None
        if tex is not None:
            parts.append(cr.Part(tris, uv=np.asarray(uv, np.float64)[f], texture=tex,
                                 factor=factor, alpha_mode=mode, cutoff=cutoff, name=gname))
        else:
            parts.append(cr.Part(tris, factor=factor, alpha_mode=mode, cutoff=cutoff,
                                 name=gname))
    return parts


def resolve_mesh(path: pathlib.Path, tmp: pathlib.Path) -> Optional[pathlib.Path]:
    """The mesh file, a .gz beside a missing file unpacked (its folder linked beside it)."""
    if path.is_file():
        return path
    gz = path.with_name(path.name + ".gz")
    if not gz.is_file():
        return None
    out = tmp / path.parent.name
    out.mkdir(parents=True, exist_ok=True)
    for p in path.parent.iterdir():
        if p != gz and not (out / p.name).exists():
            os.symlink(p, out / p.name)
    with gzip.open(gz, "rb") as src, open(out / path.name, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out / path.name


# ---------------------------------------------------------------- measuring

def align(parts: Sequence[cr.Part], tree) -> List[cr.Part]:
    """The parts moved onto the mesh as voxlod read it. voxlod's grid is its mesh's bounding
    box (centre origin + res * scale / 2 on every axis, largest extent res * scale); where a
    reader applied a unit scale the other did not (COLLADA <unit>), the parts are scaled and
    moved to match. A mismatch that a similarity cannot explain is reported."""
    allp = np.concatenate([p.tris.reshape(-1, 3) for p in parts if len(p.tris)])
    lo, hi = allp.min(axis=0), allp.max(axis=0)
    ext = tree.scale * tree.resolution
    centre = np.asarray(tree.origin, np.float64) + 0.5 * ext
    mine = (hi - lo).max()
    k = ext / mine
    c0 = 0.5 * (lo + hi)
    if abs(k - 1.0) < 1e-5 and np.all(np.abs(c0 - centre) < 1e-5 * ext):
        return list(parts)
    log(f"  note: the reference mesh is mapped onto voxlod's (scale {k:.6g}, centre "
        f"{np.round(c0, 4)} -> {np.round(centre, 4)})")
    if abs(np.log10(k)) % 1.0 > 1e-4 and abs(np.log10(k)) % 1.0 < 1 - 1e-4:
        log("  WARNING: the scale is not a power of ten: the two readers may disagree on "
            "this mesh (check the pictures)")
    out = []
    for p in parts:
        q = cr.Part.__new__(cr.Part)
        for a in cr.Part.__slots__:
            setattr(q, a, getattr(p, a))
        q.tris = (p.tris - c0) * k + centre
        out.append(q)
    return out


def measure(parts: Sequence[cr.Part], tree, coarser=2, texel_density=2.0, cap=16,
            stats=None, keep=None, workers=1) -> List[dict]:
    """dE00 between tree.colors() and the footprint reference on the tree's grid, per level
    (finest first). Only cells whose reference has opaque surface are compared; cells voxlod
    left at alpha 0 there are counted as `missing`; reference holes (every piece cut out) are
    checked for alpha 0 (`holes`, `holes_drawn`). keep (a list) receives the finest
    level's reference, for measure_dominant."""
    if not hasattr(tree, "colors"):
        raise SystemExit("this voxlod has no Tree.colors(): install the package with colour")
    grid = cr.Grid(tree.origin, tree.scale, tree.resolution)
    fps = cr.footprint_reference(parts, grid, texel_density, cap, coarser=coarser, stats=stats,
                                 workers=workers)
    if keep is not None:
        keep.append(fps[0])
    rows = []
    for shift, fp in enumerate(fps):
        level = tree.depth - shift
        lod = None if shift == 0 else level
        cen = grid.centres(fp.keys, shift)
        got = np.asarray(tree.colors(cen.astype(np.float32), lod=lod))
        if got.shape != (len(cen), 4) or got.dtype != np.uint8:
            raise RuntimeError(f"Tree.colors returned {got.dtype} {got.shape}, "
                               f"expected uint8 ({len(cen)}, 4)")
        opaque = fp.opaque > 0
        drawn = got[:, 3] > 0
        cmp_ = opaque & drawn
        d = cr.ciede2000(cr.srgb8_to_lab(got[cmp_, :3]), cr.linear_to_lab(fp.rgb[cmp_]))
        rows.append({
            "level": int(level), "cells": int(len(fp.keys)), "compared": int(cmp_.sum()),
            "mean": float(d.mean()) if len(d) else float("nan"),
            "p95": float(np.percentile(d, 95)) if len(d) else float("nan"),
            "max": float(d.max()) if len(d) else float("nan"),
            "missing": int((opaque & ~drawn).sum()),
            "holes": int((~opaque).sum()), "holes_drawn": int((~opaque & drawn).sum()),
        })
    return rows


def measure_dominant(parts, tree, texel_density=2.0, cap=16, fp=None, workers=1) -> dict:
    """For a color_filter="dominant" tree: the share of compared voxels whose colour is more
    than dE00 1 from every texel under a sample of their footprint, of those the share that is
    no texel of the mesh's textures at all, and the share more than dE00 1 from every piece's
    filtered colour. fp: the finest reference on the same grid, if already made."""
    grid = cr.Grid(tree.origin, tree.scale, tree.resolution)
    if fp is None:
        fp = cr.footprint_reference(parts, grid, texel_density, cap, workers=workers)[0]
    keys = fp.keys[fp.opaque > 0]
    got = np.asarray(tree.colors(grid.centres(keys).astype(np.float32)))
    drawn = got[:, 3] > 0
    keys, got = keys[drawn], got[drawn]
    ds, dp = cr.dominant_distances(parts, grid, keys, cr.srgb8_to_lab(got[:, :3]),
                                   texel_density, cap, workers)
    n = max(len(keys), 1)
    # the misses against the sampled texels, checked against every texel of the mesh's textures
    # (8-bit sRGB, within 2 codes per channel: two JPEG decoders differ by a code or two;
    # textures whose colour factor is not white, and untextured parts, give no texel colours):
    # the samples cannot reach every texel of a large footprint
    w = np.array([1, 256, 65536])
    codes = [np.unique(cr.linear_to_srgb8(p.texture[..., :3].reshape(-1, 3)).astype(np.int64) @ w)
             for p in parts if p.texture is not None and np.all(p.factor[:3] == 1.0)]
    miss = ds > 1.0
    nowhere = int(miss.sum())
    if codes:
        codes = np.unique(np.concatenate(codes))
        mc = got[miss, :3].astype(np.int64)
        near = np.zeros(len(mc), bool)
        for dr in range(-2, 3):
            for dg in range(-2, 3):
                for db in range(-2, 3):
                    c = np.clip(mc + np.array([dr, dg, db]), 0, 255) @ w
                    near |= np.isin(c, codes)
        nowhere = int((~near).sum())
    return {"voxels": int(len(keys)), "not_a_texel": float(miss.sum() / n),
            "not_in_any_texture": float(nowhere / n),
            "not_a_piece": float((dp > 1.0).sum() / n)}


def convert(path, res, color_filter):
    import voxlod
    try:
        return voxlod.convert(str(path), res=res, color_filter=color_filter, progress=False)
    except TypeError as e:
        if "color_filter" not in str(e):
            raise
        raise SystemExit("this voxlod has no colour (voxlod.convert(..., color_filter=) is "
                         "missing): build and install the package with colour first")


# ---------------------------------------------------------------- pictures

def pictures(parts, tree, name, out_dir: pathlib.Path, az_el, tile=(240, 180), levels=3):
    """One PNG per mesh: the reference renderer's albedo, then voxlod's albedo at the finest
    level and `levels - 1` coarser ones (every second level), the same camera."""
    from PIL import Image, ImageDraw
    allp = np.concatenate([p.tris.reshape(-1, 3) for p in parts if len(p.tris)])
    lo, hi = allp.min(axis=0), allp.max(axis=0)
    eye, target = cr.orbit_camera(lo, hi, az_el[0], az_el[1], 40.0)
    w, h = tile
    imgs = []
    for k in range(levels):
        lv = tree.depth - 2 * k
        if lv < 1:
            break
        img = tree.render(w, h, lod=None if k == 0 else lv, eye=eye.tolist(),
                          target=target.tolist(), fov=40.0, shade="albedo")
        imgs.append((np.asarray(img), f"voxlod {1 << lv}^3"))
    # the reference on voxlod's background colour (its top-left pixel: the model is framed
    # with a margin)
    bg = tuple(int(c) for c in imgs[0][0][0, 0]) if imgs else (0, 0, 0)
    imgs.insert(0, (cr.render_reference(parts, eye, target, 40.0, w, h, background=bg),
                    "reference"))
    strip = Image.new("RGB", (w * len(imgs), h))
    draw = ImageDraw.Draw(strip)
    for i, (im, label) in enumerate(imgs):
        strip.paste(Image.fromarray(im), (i * w, 0))
        draw.text((i * w + 4, 3), label, fill=(255, 255, 255))
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{name}.png"
    strip.save(out, optimize=True)
    return out


# ---------------------------------------------------------------- table

def table(results) -> str:
    lines = ["| Mesh | Res | Level | Voxels compared | Mean dE00 | p95 dE00 | Max | "
             "Missing | Holes drawn |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['mesh']} | {r['res']} | - | - | {r['error']} | | | | |")
            continue
        for row in r["levels"]:
            lines.append(
                f"| {r['mesh']} | {r['res']} | {row['level']} | {row['compared']:,} | "
                f"{row['mean']:.2f} | {row['p95']:.2f} | {row['max']:.1f} | {row['missing']:,} | "
                f"{row['holes_drawn']:,} / {row['holes']:,} |")
    dom = [r for r in results if r.get("dominant")]
    if dom:
        lines += ["", "| Mesh | Res | Dominant voxels | Not within dE00 1 of a sampled texel | "
                  "Of those, no texel of the textures within 2 codes | "
                  "Not within dE00 1 of a piece |",
                  "|---|---:|---:|---:|---:|---:|"]
        for r in dom:
            d = r["dominant"]
            lines.append(f"| {r['mesh']} | {r['res']} | {d['voxels']:,} | "
                         f"{100 * d['not_a_texel']:.2f} % | "
                         f"{100 * d.get('not_in_any_texture', float('nan')):.2f} % | "
                         f"{100 * d['not_a_piece']:.2f} % |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.environ.get(
        "VOXLOD_MESHES", str(ROOT.parent / "shared" / "data" / "meshes")),
        help="the shared meshes folder (default ../shared/data/meshes, or $VOXLOD_MESHES)")
    ap.add_argument("--mesh", action="append", choices=sorted(MESHES),
                    help="a mesh (repeatable; default all)")
    ap.add_argument("--res", type=int, action="append", help="resolution (default 256 and 1024)")
    ap.add_argument("--coarser", type=int, default=2,
                    help="also compare this many coarser levels (default 2)")
    ap.add_argument("--dominant", action="store_true",
                    help="also convert with color_filter='dominant' and check its colours")
    ap.add_argument("--texel-density", type=float, default=2.0,
                    help="reference samples per texel along a piece's longest edge (default 2)")
    ap.add_argument("--cap", type=int, default=16,
                    help="at most cap^2 samples per piece triangle (default 16)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="processes for the reference (default: every core)")
    ap.add_argument("--obj-kd", choices=("multiply", "ignore"), default="multiply",
                    help="OBJ: the diffuse texture times Kd (default), or the texture alone")
    ap.add_argument("--pictures", metavar="DIR", nargs="?", const=str(ROOT / "docs/images/color"),
                    help="write reference-vs-voxlod PNGs (default docs/images/color) at the "
                         "lowest resolution")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    a = ap.parse_args(argv)
    names = a.mesh or list(MESHES)
    resolutions = a.res or [256, 1024]
    data = pathlib.Path(a.data)
    results = []
    with tempfile.TemporaryDirectory(prefix="color_quality_") as tmp:
        for name in names:
            rel, az_el = MESHES[name]
            path = resolve_mesh(data / rel, pathlib.Path(tmp))
            if path is None:
                log(f"{name}: {data / rel} missing, skipped")
                results.append({"mesh": name, "res": "-", "error": "missing"})
                continue
            t0 = time.time()
            parts = load_parts(path, a.obj_kd)
            ntri = sum(len(p.tris) for p in parts)
            ntex = sum(p.texture is not None for p in parts)
            log(f"{name}: {ntri} triangles in {len(parts)} parts ({ntex} textured), read in "
                f"{time.time() - t0:.1f} s")
            for res in resolutions:
                t0 = time.time()
                tree = convert(path, res, "mean")
                t1 = time.time()
                parts_r = align(parts, tree)
                stats: dict = {}
                finest: list = []
                rows = measure(parts_r, tree, a.coarser, a.texel_density, a.cap, stats, finest,
                               a.workers)
                t2 = time.time()
                log(f"  {res}^3: convert {t1 - t0:.1f} s, reference {t2 - t1:.1f} s "
                    f"({stats.get('pieces', 0):,} pieces, {stats.get('samples', 0):,} samples, "
                    f"{100 * stats.get('capped_area', 0) / max(stats.get('area', 1), 1e-300):.1f} "
                    f"% of the area at the sample cap)")
                r = {"mesh": name, "res": res, "levels": rows, "reference": stats}
                if a.dominant:
                    dom = convert(path, res, "dominant")
                    if (dom.origin, dom.scale) != (tree.origin, tree.scale):
                        raise SystemExit(f"{name}: the dominant tree has another grid")
                    r["dominant"] = measure_dominant(parts_r, dom, a.texel_density, a.cap,
                                                     finest[0], a.workers)
                    del dom
                results.append(r)
                if a.pictures and res == min(resolutions) and name in PICTURE_MESHES:
                    out = pictures(parts_r, tree, name, pathlib.Path(a.pictures), az_el)
                    log(f"  picture: {out} ({out.stat().st_size // 1024} KiB)")
                del tree
    print(table(results))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
