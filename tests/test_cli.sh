#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_cli.sh VOXLOD DATA_DIR - the command line as a user runs it: the whole
# pipeline on the bundled mesh, and each bad input below giving one clear message on stderr,
# a non-zero exit, no crash (exit >= 128) and no half-written output.
set -u
VOXLOD=$1 DATA=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0 passes=0
ok() { passes=$((passes + 1)); echo "ok   $1"; }
bad() { fails=$((fails + 1)); echo "FAIL $1"; }

# expect_fail NAME PATTERN CMD...: non-zero exit below 128, stderr matches PATTERN, one line or so.
expect_fail() {
  local name=$1 pat=$2; shift 2
  "$@" >"$T/out" 2>"$T/err"; local rc=$?
  if [ $rc -eq 0 ] || [ $rc -ge 128 ]; then bad "$name: exit $rc"; cat "$T/err"; return; fi
  if ! grep -qiE "$pat" "$T/err"; then bad "$name: message does not match '$pat'"; cat "$T/err"; return; fi
  if [ "$(grep -c . "$T/err")" -gt 3 ]; then bad "$name: more than a short message"; cat "$T/err"; return; fi
  ok "$name"
}
no_temp_left() {
  if ls "$1"/*.tmp* >/dev/null 2>&1; then bad "$2: temporary file left"; ls "$1"; else ok "$2: no temporary left"; fi
}

# ---- the main path ---------------------------------------------------------------------------
if "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/b.svo" --res 64 -q 2>"$T/err"; then ok convert; else bad convert; cat "$T/err"; fi
for lod in 3 4 5 6 auto; do
  if "$VOXLOD" render "$T/b.svo" "$T/b_$lod.png" --lod $lod --size 96x72 --cpu 2>"$T/err" &&
     head -c 8 "$T/b_$lod.png" | od -An -c | grep -q "P   N   G"; then ok "render lod $lod"; else bad "render lod $lod"; cat "$T/err"; fi
done
if "$VOXLOD" render "$T/b.svo" "$T/blocks.png" --shade blocks --size 64x48 --cpu 2>/dev/null; then ok "render blocks"; else bad "render blocks"; fi
if "$VOXLOD" render "$T/b.svo" "$T/albedo.png" --shade albedo --size 64x48 --cpu 2>/dev/null; then ok "render albedo"; else bad "render albedo"; fi
expect_fail "render --shade unknown" "smooth, blocks, normals or albedo" "$VOXLOD" render "$T/b.svo" "$T/x.png" --shade pink
if "$VOXLOD" stats "$T/b.svo" >"$T/stats" && grep -q "64^3" "$T/stats" && grep -q "per surface voxel" "$T/stats"; then ok stats; else bad stats; cat "$T/stats"; fi
if "$VOXLOD" stats "$T/b.svo" --plot "$T/m.svg" --error 0.5 --views 1 --size 64x48 --cpu >"$T/stats2" && grep -q "<svg" "$T/m.svg" && grep -q "PSNR" "$T/stats2"; then ok "stats --plot --error"; else bad "stats --plot --error"; cat "$T/stats2"; fi
if "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/p.svo" --res 64 --error 1 -q && "$VOXLOD" compare "$T/b.svo" "$T/p.svo" --views 1 --size 64x48 --cpu >"$T/cmp" && grep -q PSNR "$T/cmp"; then ok "convert --error, compare"; else bad "convert --error, compare"; fi
# options that would be ignored are refused
expect_fail "render --lod-scale without --lod auto" "lod-scale applies to --lod auto" "$VOXLOD" render "$T/b.svo" "$T/ls.png" --lod-scale 2
expect_fail "render --threads with --gpu" "threads applies to the CPU" "$VOXLOD" render "$T/b.svo" "$T/th.png" --gpu --threads 2
expect_fail "bench --threads with --gpu" "threads applies to the CPU" "$VOXLOD" bench "$T/b.svo" --gpu --threads 2
# a coloured tree (the fuzz seed written by fuzz/make_svo_seeds): colour columns and plot line
col="$(dirname "$DATA")/tests/corpus/svo/plane_d3_color.svo"
if "$VOXLOD" stats "$col" --plot "$T/c.svg" >"$T/cs" && grep -q "colour: yes" "$T/cs" &&
   grep -q "colour-disk" "$T/cs" && grep -q "per surface voxel)" "$T/cs" && grep -q "with colour" "$T/c.svg" &&
   ! grep -q "colour-disk" "$T/stats" && grep -q "colour: no" "$T/stats"; then ok "stats of a coloured tree"
else bad "stats of a coloured tree"; cat "$T/cs"; fi
expect_fail "stats --size without --error" "size applies to --error" "$VOXLOD" stats "$T/b.svo" --size 64x48
expect_fail "stats --views without --error" "views applies to --error" "$VOXLOD" stats "$T/b.svo" --views 2
expect_fail "stats --lod without --error" "lod applies to --error" "$VOXLOD" stats "$T/b.svo" --lod 3
for x in ls.png th.png; do [ -e "$T/$x" ] && bad "no $x left" || ok "no $x left"; done
if "$VOXLOD" render "$T/b.svo" "$T/la.png" --lod auto --lod-scale 2 --size 64x48 --cpu --threads 1 -q; then ok "render --lod auto --lod-scale"; else bad "render --lod auto --lod-scale"; fi
if "$VOXLOD" stats "$T/b.svo" --error 1 --lod 4 --views 1 --size 32x24 --cpu >"$T/sl" && grep -q PSNR "$T/sl"; then ok "stats --error --lod"; else bad "stats --error --lod"; cat "$T/sl"; fi
# convert --gpu: the same file as the CPU build, on the GPU where there is one, else through the
# CPU fallback with a one-line notice (what CI sees)
if "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/g.svo" --res 64 --gpu -q 2>"$T/gerr" && cmp -s "$T/g.svo" "$T/b.svo"; then
  ok "convert --gpu: same file$(grep -q 'building on the CPU' "$T/gerr" && echo ' (CPU fallback)')"
else bad "convert --gpu: same file"; cat "$T/gerr"; fi
expect_fail "--gpu with --cpu" "exclude" "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/x.svo" --res 16 --gpu --cpu
# colour options: a mesh without colour gives the same grey file whatever they say
if "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/nc.svo" --res 64 --no-color -q && cmp -s "$T/nc.svo" "$T/b.svo" &&
   "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/dc.svo" --res 64 --color-filter dominant -q && cmp -s "$T/dc.svo" "$T/b.svo"; then
  ok "convert --no-color, --color-filter on a grey mesh"; else bad "convert --no-color, --color-filter on a grey mesh"; fi
expect_fail "--no-color with --color-filter" "exclude" "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/x.svo" --res 16 --no-color --color-filter mean
expect_fail "--color-filter unknown" "mean or dominant" "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/x.svo" --res 16 --color-filter max
for c in convert render stats bench compare; do
  if "$VOXLOD" $c --help | grep -q "usage: voxlod $c"; then ok "$c --help"; else bad "$c --help"; fi
done
"$VOXLOD" --help | grep -q convert && ok "--help" || bad "--help"

# ---- bad inputs ------------------------------------------------------------------------------
expect_fail "missing mesh" "cannot open|no such file|not found|does not exist" "$VOXLOD" convert "$T/nope.obj" "$T/x.svo" --res 16
printf 'this is not a mesh\n\x01\x02' >"$T/garbage.xyzq"
expect_fail "unsupported mesh" "format|read|import|unsupported|assimp" "$VOXLOD" convert "$T/garbage.xyzq" "$T/x.svo" --res 16
printf 'v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\n' >"$T/flat.obj"
expect_fail "no triangles" "no (usable )?triangle|empty|nothing" "$VOXLOD" convert "$T/flat.obj" "$T/x.svo" --res 16
printf 'v nan 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n' >"$T/nan.obj"
expect_fail "NaN coordinates only" "no (usable )?triangle|empty|non-finite|nan" "$VOXLOD" convert "$T/nan.obj" "$T/x.svo" --res 16
printf 'v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nv inf 0 0\nf 1 2 3\nf 1 2 4\nf 1 1 2\nf 5 2 3\n' >"$T/mixed.obj"
if "$VOXLOD" convert "$T/mixed.obj" "$T/mixed.svo" --res 16 2>"$T/err" && grep -qiE "skipped.*(degenerate|non-finite)" "$T/err"; then ok "degenerate/non-finite skipped and counted"; else bad "degenerate/non-finite skipped and counted"; cat "$T/err"; fi
for r in 0 1 3 100 1000 2097152 -4 abc; do
  expect_fail "res $r rejected" "power of two" "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/x.svo" --res $r
done
# Tiled trees: written with --tile-depth, read back whole by every command (up to 16384^3)
expect_fail "tile depth 15 rejected" "1..14" "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/x.svo" --res 64 --tile-depth 15
expect_fail "tiles as large as the grid rejected" "smaller than the grid" "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/x.svo" --res 16 --tile-depth 4 -q
# pruned tiles: the stats say so, and the file is smaller than the unpruned one
if "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/tp.svo" --res 128 --tile-depth 4 --error 0.5 -q --no-color &&
   "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/tf.svo" --res 128 --tile-depth 4 -q --no-color &&
   "$VOXLOD" stats "$T/tp.svo" >"$T/tp.txt" && grep -q "pruned at max error 0.5" "$T/tp.txt" &&
   grep -q "tiled: .* tiles of 16^3" "$T/tp.txt" &&
   [ "$(stat -c %s "$T/tp.svo")" -lt "$(stat -c %s "$T/tf.svo")" ]; then
  ok "tiled and pruned: 128^3 in 16^3 tiles at --error 0.5"
else
  bad "tiled and pruned: 128^3 in 16^3 tiles at --error 0.5"; cat "$T/tp.txt"
fi
if "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/tu.svo" --res 64 -q --no-color &&
   "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/tt.svo" --res 64 --tile-depth 3 -q --no-color &&
   "$VOXLOD" stats "$T/tt.svo" >"$T/tt.txt" && "$VOXLOD" stats "$T/tu.svo" >"$T/tu.txt" &&
   grep -q "tiled: .* tiles of 8^3" "$T/tt.txt" &&
   diff <(grep -E "^[0-9]" "$T/tu.txt" | awk '{print $1, $2, $3, $4}') <(grep -E "^[0-9]" "$T/tt.txt" | awk '{print $1, $2, $3, $4}') >/dev/null &&
   "$VOXLOD" render "$T/tt.svo" "$T/tt.png" --size 64x48 && "$VOXLOD" render "$T/tu.svo" "$T/tu.png" --size 64x48 &&
   cmp -s "$T/tt.png" "$T/tu.png"; then
  ok "tiled 64^3 in 8^3 tiles: the same levels and the same picture as untiled"
else
  bad "tiled 64^3 in 8^3 tiles: the same levels and the same picture as untiled"; cat "$T/tt.txt"
fi
# a tiled file meshed window by window: the joined tree's triangles and vertices
if "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/tw.svo" --res 128 --tile-depth 4 -q --no-color &&
   "$VOXLOD" mesh "$T/tw.svo" "$T/tw1.ply" 2>"$T/tw1.txt" &&
   "$VOXLOD" mesh "$T/tw.svo" "$T/tw2.ply" --windows 2>"$T/tw2.txt" &&
   grep -q "window by window" "$T/tw2.txt" &&
   [ "$(grep -o "[0-9]* triangles, [0-9]* vertices" "$T/tw1.txt")" = "$(grep -o "[0-9]* triangles, [0-9]* vertices" "$T/tw2.txt")" ]; then
  ok "mesh --windows: a tiled file window by window, the joined tree's counts"
else
  bad "mesh --windows: a tiled file window by window, the joined tree's counts"; cat "$T/tw1.txt" "$T/tw2.txt"
fi
expect_fail "mesh --windows with tiles of 8^3 refused" "too small to mesh" "$VOXLOD" mesh "$T/tt.svo" "$T/tt.ply" --windows
expect_fail "mesh --windows with --lod refused" "meshes at full detail" "$VOXLOD" mesh "$T/tw.svo" "$T/tt.ply" --windows --lod 3
# Past 16384^3: a needle (tiny area, so fast) at 32768^3 in tiles of 16384^3; stats reads it tile
# by tile, commands that need one tree refuse it with a clear message
printf 'v 0 0 0\nv 1 0 0\nv 1 0.00002 0.00001\nf 1 2 3\n' >"$T/needle.obj"
if "$VOXLOD" convert "$T/needle.obj" "$T/n32.svo" --res 32768 -q &&
   "$VOXLOD" stats "$T/n32.svo" --tiles >"$T/n32.txt" && grep -q "^15 .*32768^3" "$T/n32.txt" &&
   grep -q "tiles of 16384^3 under 1 top levels" "$T/n32.txt" &&
   "$VOXLOD" stats "$T/n32.svo" --json --tiles | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["depth"] == 15 and len(d["tiles"]) == d["tile_count"] and sum(t["voxels"] for t in d["tiles"]) == d["levels"][15]["cells"]'; then
  ok "32768^3 tiled: stats tile by tile (table and JSON)"
else
  bad "32768^3 tiled: stats tile by tile (table and JSON)"; cat "$T/n32.txt"
fi
# render draws it tile by tile within a budget; mesh still needs one tree
if "$VOXLOD" render "$T/n32.svo" "$T/n32.png" --cpu --size 160x120 --lod auto --budget 1M 2>"$T/n32r.txt" &&
   grep -q "lod auto, CPU, .* ms, [0-9.]*% of pixels hit" "$T/n32r.txt" &&
   grep -q "tiles: [0-9]* of 8 finer than the coarse level .* resident of a 1.00 MiB budget" "$T/n32r.txt"; then
  ok "render of a 32768^3 tiled tree, tile by tile within --budget"
else
  bad "render of a 32768^3 tiled tree, tile by tile within --budget"; cat "$T/n32r.txt"
fi
expect_fail "render --budget on an untiled file refused" "applies to a tiled" "$VOXLOD" render "$T/b.svo" "$T/x.png" --budget 1M
# mesh and export read one tile by tile: one level as a tree of its own, the finest as points.
# A closed scene for it: a sphere of 130 voxels at 32768^3 and two little cubes at the corners.
python3 - "$T/cs.obj" <<'PY'
import math, sys
v, f = [], []
def sphere(c, r, nu=48, nv=24):
    b = len(v)
    v.append((c[0], c[1], c[2] + r)); v.append((c[0], c[1], c[2] - r))
    for j in range(1, nv):
        t = math.pi * j / nv
        for i in range(nu):
            p = 2 * math.pi * i / nu
            v.append((c[0] + r * math.sin(t) * math.cos(p), c[1] + r * math.sin(t) * math.sin(p), c[2] + r * math.cos(t)))
    ring = lambda j, i: b + 2 + (j - 1) * nu + i % nu
    for i in range(nu):
        f.append((b, ring(1, i), ring(1, i + 1))); f.append((b + 1, ring(nv - 1, i + 1), ring(nv - 1, i)))
        for j in range(1, nv - 1):
            f.append((ring(j, i), ring(j + 1, i), ring(j + 1, i + 1))); f.append((ring(j, i), ring(j + 1, i + 1), ring(j, i + 1)))
def cube(lo, hi):
    b = len(v)
    for k in range(8):
        v.append(tuple(hi[a] if k >> a & 1 else lo[a] for a in range(3)))
    for q in ((0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)):
        f.append((b + q[0], b + q[1], b + q[2])); f.append((b + q[0], b + q[2], b + q[3]))
sphere((0.125, 0.125, 0.125), 0.004)
cube((0, 0, 0), (0.002, 0.002, 0.002)); cube((0.998, 0.998, 0.998), (1, 1, 1))
with open(sys.argv[1], "w") as o:
    o.writelines("v %.9g %.9g %.9g\n" % p for p in v)
    o.writelines("f %d %d %d\n" % (a + 1, b + 1, c + 1) for a, b, c in f)
PY
"$VOXLOD" convert "$T/cs.obj" "$T/cs32.svo" --res 32768 --tile-depth 12 -q
if "$VOXLOD" mesh "$T/cs32.svo" "$T/cs32f.ply" 2>"$T/n32f.txt" &&
   grep -q "cut finest (32768^3, window by window)" "$T/n32f.txt" && [ -s "$T/cs32f.ply" ]; then
  ok "mesh of a 32768^3 tiled tree at its finest, window by window"
else
  bad "mesh of a 32768^3 tiled tree at its finest, window by window"; cat "$T/n32f.txt"
fi
if "$VOXLOD" mesh "$T/cs32.svo" "$T/cs32.ply" --lod 12 2>"$T/n32m.txt" &&
   grep -q "cut level 12 (4096^3) of 15" "$T/n32m.txt" && [ -s "$T/cs32.ply" ] &&
   "$VOXLOD" mesh "$T/cs32.svo" "$T/cs32e.obj" --error 4 -q && [ -s "$T/cs32e.obj" ] &&
   "$VOXLOD" export "$T/cs32.svo" "$T/cs32p.ply" 2>"$T/n32x.txt" &&
   grep -q "level 15 (32768^3)" "$T/n32x.txt" &&
   "$VOXLOD" export "$T/cs32.svo" "$T/cs32.binvox" --lod 11 -q && [ -s "$T/cs32.binvox" ]; then
  ok "mesh and export of a 32768^3 tiled tree, tile by tile"
else
  bad "mesh and export of a 32768^3 tiled tree, tile by tile"; cat "$T/n32m.txt" "$T/n32x.txt"
fi
expect_fail "export of a 32768^3 tiled tree as binvox refused" "too large for .binvox" "$VOXLOD" export "$T/cs32.svo" "$T/cs32x.binvox"
# distance queries on tiled files, tile by tile: past 16384^3 always, up to it with --tiles
if "$VOXLOD" bench "$T/n32.svo" --sample 2000 --reps 1 --cpu --json |
     python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["tiled"] and d["resolution"] == 32768 and d["points"] == 2000 and d["points_per_s"] > 0 and d["fraction_near"] > 0.3' &&
   "$VOXLOD" bench "$T/tt.svo" --sample 2000 --reps 1 --tiles --cache 1M >"$T/ts.txt" &&
   grep -q "64^3 in .* tiles of 8^3, tile by tile" "$T/ts.txt"; then
  ok "bench --sample on tiled files, tile by tile (32768^3; 64^3 with --tiles)"
else
  bad "bench --sample on tiled files, tile by tile (32768^3; 64^3 with --tiles)"; cat "$T/ts.txt"
fi
expect_fail "bench --tiles on an untiled file refused" "applies to a tiled file" "$VOXLOD" bench "$T/b.svo" --sample 10 --tiles
expect_fail "bench --cache without tiles refused" "applies to a tiled file" "$VOXLOD" bench "$T/tt.svo" --sample 10 --cache 1M
expect_fail "bench --band-cache tile by tile refused" "not for a tiled file" "$VOXLOD" bench "$T/n32.svo" --sample 10 --band-cache
# A binary STL split by tile without holding it (a tiled tree, --sign pseudo-normal): the bytes
# of the mesh loaded whole (--no-split)
python3 - "$T/sp.stl" <<'PY'
import math, struct, sys
t = []
def sphere(c, r, nu=40, nv=20):
    def p(j, i):
        t, f = math.pi * j / nv, 2 * math.pi * i / nu
        d = (math.sin(t) * math.cos(f), math.sin(t) * math.sin(f), math.cos(t))
        return tuple(c[k] + r * d[k] for k in range(3))
    for j in range(nv):
        for i in range(nu):
            if j > 0: t.append((p(j, i), p(j + 1, i), p(j, i + 1)))
            if j < nv - 1: t.append((p(j + 1, i), p(j + 1, i + 1), p(j, i + 1)))
sphere((0.3, 0.3, 0.3), 0.25); sphere((0.7, 0.6, 0.65), 0.3); t.append(t[5])
with open(sys.argv[1], "wb") as o:
    o.write(b"\0" * 80 + struct.pack("<I", len(t)))
    for a in t: o.write(struct.pack("<12fH", 0, 0, 0, *a[0], *a[1], *a[2], 0))
PY
if "$VOXLOD" convert "$T/sp.stl" "$T/sp1.svo" --res 256 --tile-depth 5 --sign pseudo-normal 2>"$T/sp.txt" &&
   grep -q "split by tile without holding the mesh" "$T/sp.txt" &&
   grep -q "1 exact duplicate triangle dropped" "$T/sp.txt" &&
   "$VOXLOD" convert "$T/sp.stl" "$T/sp2.svo" --res 256 --tile-depth 5 --sign pseudo-normal --no-split -q &&
   cmp -s "$T/sp1.svo" "$T/sp2.svo"; then
  ok "a binary STL split by tile: the bytes of the mesh loaded whole"
else
  bad "a binary STL split by tile: the bytes of the mesh loaded whole"; cat "$T/sp.txt"
fi
expect_fail "--no-split without tiles refused" "applies to a tiled tree" "$VOXLOD" convert "$T/sp.stl" "$T/x.svo" --res 64 --sign pseudo-normal --no-split
expect_fail "--no-split with the winding rule refused" "applies to a tiled tree" "$VOXLOD" convert "$T/sp.stl" "$T/x.svo" --res 64 --tile-depth 4 --no-split
expect_fail "unwritable output" "cannot|permission|no such|denied|write" "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/no/such/dir/x.svo" --res 16 -q
expect_fail "missing svo" "cannot open|no such" "$VOXLOD" render "$T/nope.svo" "$T/x.png"
cp "$T/b.svo" "$T/keep.svo"
size=$(stat -c %s "$T/b.svo")
for cut in 0 4 20 $((size / 2)) $((size - 1)); do
  head -c $cut "$T/b.svo" >"$T/trunc.svo"
  expect_fail "truncated svo ($cut bytes)" "truncat|corrupt|too short|format|empty" "$VOXLOD" render "$T/trunc.svo" "$T/x.png"
done
cp "$T/b.svo" "$T/corrupt.svo"
printf '\xff\xee' | dd of="$T/corrupt.svo" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
expect_fail "corrupted svo" "corrupt|checksum|invalid" "$VOXLOD" stats "$T/corrupt.svo"
expect_fail "unwritable png" "cannot|permission|no such|denied|write" "$VOXLOD" render "$T/b.svo" "$T/no/dir/x.png" --size 32x32 --cpu
expect_fail "file over --mem-limit" "limit" "$VOXLOD" stats "$T/b.svo" --mem-limit 1K
expect_fail "bad size" "bad value" "$VOXLOD" render "$T/b.svo" "$T/x.png" --size 0x10
expect_fail "bad lod" "bad value" "$VOXLOD" render "$T/b.svo" "$T/x.png" --lod deep
if [ ! -e "$T/x.png" ] && [ ! -e "$T/x.svo" ]; then ok "no output from failures"; else bad "a failed command left output"; fi
no_temp_left "$T" "after failures"

# Interrupted convert (SIGINT, SIGTERM): the previous output stays intact and no temporary is left.
for sig in INT TERM; do
  cp "$T/keep.svo" "$T/int.svo"
  "$VOXLOD" convert "$DATA/bunny.ply" "$T/int.svo" --res 2048 -q &
  pid=$!
  sleep 1.5
  kill -$sig $pid 2>/dev/null
  wait $pid; rc=$?
  if [ $rc -ne 0 ] && cmp -s "$T/keep.svo" "$T/int.svo"; then ok "SIG$sig keeps previous output"; else bad "SIG$sig keeps previous output (rc $rc)"; fi
  no_temp_left "$T" "after SIG$sig"
done

# ---- --mem-limit bounds the import and the build ---------------------------------------------
# peak_run OUT ERR CMD...: runs CMD and prints its exit code and the peak RSS in KiB of the largest
# of it and its descendants (the import child included), measured with getrusage.
peak_run() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys
out, err = sys.argv[1], sys.argv[2]
with open(out, 'wb') as o, open(err, 'wb') as e:
    rc = subprocess.call(sys.argv[3:], stdout=o, stderr=e)
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
}
# AddressSanitizer's shadow pages are resident without being in the address space the limit bounds
asan=0; ldd "$VOXLOD" 2>/dev/null | grep -q libasan && asan=1
if command -v python3 >/dev/null; then
  # a tiny model converts under a small limit, its peak under the limit (AddressSanitizer's own
  # resident memory, about 60 MiB, counts against the limit: a larger one there)
  lim=64M; [ $asan = 1 ] && lim=192M
  read rc kib < <(peak_run "$T/out" "$T/err" "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/small.svo" --res 16 --mem-limit $lim -q)
  if [ "$rc" = 0 ] && [ -s "$T/small.svo" ] && { [ $asan = 1 ] || [ "$kib" -le 65536 ]; }; then
    ok "16^3 under --mem-limit $lim (peak RSS $((kib / 1024)) MiB)"
  else bad "16^3 under --mem-limit $lim (exit $rc, peak RSS $((kib / 1024)) MiB)"; cat "$T/err"; fi
  # a 3MF whose model XML inflates to 108 MB of vertices (assimp needs about 1.1 GB for it)
  python3 - "$T/bomb.3mf" <<'PY'
import sys, zipfile
ct = ('<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/'
      'package/2006/content-types"><Default Extension="rels" ContentType="application/'
      'vnd.openxmlformats-package.relationships+xml"/><Default Extension="model" ContentType='
      '"application/vnd.ms-package.3dmanufacturing-3dmodel+xml"/></Types>')
rels = ('<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats'
        '.org/package/2006/relationships"><Relationship Target="/3D/3dmodel.model" Id="rel0" '
        'Type="http://schemas.microsoft.com/3dmanufacturing/2013/01/3dmodel"/></Relationships>')
head = ('<?xml version="1.0" encoding="UTF-8"?><model unit="millimeter" xmlns="http://schemas.'
        'microsoft.com/3dmanufacturing/core/2015/02"><resources><object id="1" type="model"><mesh>'
        '<vertices>')
tail = ('</vertices><triangles><triangle v1="0" v2="1" v3="2"/></triangles></mesh></object>'
        '</resources><build><item objectid="1"/></build></model>')
with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:
    z.writestr('[Content_Types].xml', ct)
    z.writestr('_rels/.rels', rels)
    with z.open('3D/3dmodel.model', 'w', force_zip64=True) as f:
        f.write(head.encode())
        chunk = ('<vertex x="1" y="2" z="3"/>' * 10000).encode()
        for _ in range(400):
            f.write(chunk)
        f.write(tail.encode())
PY
  read rc kib < <(ASAN_OPTIONS=allocator_may_return_null=1 peak_run "$T/out" "$T/err" "$VOXLOD" convert "$T/bomb.3mf" "$T/bomb.svo" --res 16 --mem-limit 300M -q)
  if [ "$rc" = 1 ] && grep -q "the import needs more than the memory limit (300.00 MiB)" "$T/err" &&
     [ ! -e "$T/bomb.svo" ] && { [ $asan = 1 ] || [ "$kib" -le 307200 ]; }; then
    ok "3MF zip bomb ($(($(stat -c %s "$T/bomb.3mf") / 1024)) KiB) refused under --mem-limit 300M (peak RSS $((kib / 1024)) MiB)"
  else bad "3MF zip bomb under --mem-limit 300M (exit $rc, peak RSS $((kib / 1024)) MiB)"; cat "$T/err"; fi
  # a 200-byte PLY header claiming 4e8 vertices: refused before any import starts
  printf 'ply\nformat binary_little_endian 1.0\nelement vertex 400000000\nproperty float x\nproperty float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n' >"$T/bomb.ply"
  read rc kib < <(peak_run "$T/out" "$T/err" "$VOXLOD" convert "$T/bomb.ply" "$T/bomb.svo" --res 16 --mem-limit 500M -q)
  if [ "$rc" = 1 ] && grep -q "PLY header declares 400000000 'vertex' elements" "$T/err" &&
     [ ! -e "$T/bomb.svo" ] && [ "$kib" -le 131072 ]; then
    ok "PLY header bomb refused at once (peak RSS $((kib / 1024)) MiB)"
  else bad "PLY header bomb (exit $rc, peak RSS $((kib / 1024)) MiB)"; cat "$T/err"; fi
else
  bad "--mem-limit section needs python3 (not found)"
fi

# ---- colour out of core: the smallest --mem-limit that converts a coloured mesh with its colour
# (below it the tree is grey, with a note) spills its levels, and the file is the one converted
# without a limit, byte for byte
col_mesh="$(dirname "$DATA")/tests/data/meshes/scene.glb"
if "$VOXLOD" convert "$col_mesh" "$T/cfull.svo" --res 512 -q 2>"$T/err" &&
   "$VOXLOD" stats "$T/cfull.svo" | grep -q "colour: yes"; then
  lo=16 hi=4096
  while [ $((hi - lo)) -gt 1 ]; do
    mid=$(((lo + hi) / 2))
    if "$VOXLOD" convert "$col_mesh" "$T/cooc.svo" --res 512 --mem-limit ${mid}M >"$T/out" 2>&1 &&
       ! grep -q "colour not computed" "$T/out"
    then hi=$mid; else lo=$mid; fi
  done
  # the resident size moves a little from run to run: a few limits just above the boundary
  spilled=""
  for m in $hi $((hi + 2)) $((hi + 4)) $((hi + 8)); do
    if "$VOXLOD" convert "$col_mesh" "$T/cooc.svo" --res 512 --mem-limit ${m}M >"$T/out" 2>&1 &&
       grep -q "built out of core" "$T/out" && ! grep -q "colour not computed" "$T/out"; then
      spilled=$m; break
    fi
  done
  if [ -n "$spilled" ] && cmp -s "$T/cfull.svo" "$T/cooc.svo"; then
    ok "coloured mesh out of core (--mem-limit ${spilled}M): the file converted in memory"
  else bad "coloured mesh out of core (--mem-limit ${hi}M..$((hi + 8))M, spilled at '$spilled')"; cat "$T/out"; fi
  # just below: refused, or a grey tree with a note (likewise a few limits just below)
  below=""
  for m in $lo $((lo - 2)) $((lo - 4)) $((lo - 8)); do
    if ! "$VOXLOD" convert "$col_mesh" "$T/cgrey.svo" --res 512 --mem-limit ${m}M >"$T/out" 2>&1 ||
       { grep -q "colour not computed" "$T/out" && "$VOXLOD" stats "$T/cgrey.svo" | grep -q "colour: no"; }
    then below=$m; break; fi
  done
  if [ -n "$below" ]; then ok "coloured mesh under --mem-limit ${below}M: refused or grey with a note"
  else bad "coloured mesh under --mem-limit ${lo}M..$((lo - 8))M: neither refused nor grey with a note"; cat "$T/out"; fi
else bad "coloured mesh converts with colour"; cat "$T/err"; fi

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
