#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_mesher_cli.sh - `voxlod mesh` end to end: every format, every cut, and the inputs and
# outputs it must refuse with a clear message, a non-zero exit and no file left behind.
# usage: test_mesher_cli.sh VOXLOD DATA_DIR
set -u
V=$1
DATA=$2
T=$(mktemp -d /tmp/vx_mesher_cli.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
# expect NAME STATUS PATTERN CMD...: exit status STATUS and PATTERN on stderr
expect() {
  local name=$1 want=$2 pat=$3
  shift 3
  "$@" > "$T/out" 2> "$T/err"
  local got=$?
  if [ "$got" -eq "$want" ] && grep -q -- "$pat" "$T/err"; then ok "$name"
  else bad "$name (exit $got, wanted $want; stderr: $(head -c 300 "$T/err"))"; fi
}
[ -f "$DATA/bunny.ply" ] || { echo "FAIL no $DATA/bunny.ply"; exit 1; }
"$V" convert "$DATA/bunny.ply" "$T/b.svo" --res 64 -q || { echo "FAIL convert"; exit 1; }

for f in obj ply stl glb; do
  expect "mesh writes .$f" 0 "triangles" "$V" mesh "$T/b.svo" "$T/b.$f"
  [ -s "$T/b.$f" ] && ok ".$f not empty" || bad ".$f not empty"
done
expect "mesh --lod" 0 "cut level 4" "$V" mesh "$T/b.svo" "$T/l4.ply" --lod 4
expect "mesh --error" 0 "cut error 1" "$V" mesh "$T/b.svo" "$T/e1.ply" --error 1
expect "mesh output reads back" 0 "triangles" "$V" convert "$T/l4.ply" "$T/l4.svo" --res 32
"$V" mesh --help | grep -q -- "--error E" && ok "mesh --help" || bad "mesh --help"

expect "--lod beyond the tree" 2 "beyond" "$V" mesh "$T/b.svo" "$T/x1.ply" --lod 7
expect "--lod and --error" 2 "exclude" "$V" mesh "$T/b.svo" "$T/x2.ply" --lod 3 --error 1
expect "--error not a number" 2 "error" "$V" mesh "$T/b.svo" "$T/x3.ply" --error abc
expect "--lod 0 is one cell" 1 "no surface" "$V" mesh "$T/b.svo" "$T/x4.ply" --lod 0
expect "unknown extension" 1 "written as .obj, .ply, .stl or .glb" "$V" mesh "$T/b.svo" "$T/x5.abc"
# only the formats read back by another reader (python/tests/test_mesh_formats.py) are written:
# assimp's .pbrt exporter crashed on our mesh, its .3mf exporter failed
for x in pbrt 3mf dae x3d fbx 3ds ply2 PBRT; do
  expect ".$x refused" 1 "written as .obj, .ply, .stl or .glb" "$V" mesh "$T/b.svo" "$T/r.$x"
  [ -e "$T/r.$x" ] && bad "no r.$x left behind" || ok "no r.$x left behind"
done
expect "upper-case extension" 0 "triangles" "$V" mesh "$T/b.svo" "$T/u.OBJ" --lod 3
# standard output, with the format named
"$V" mesh "$T/b.svo" - --format ply -q > "$T/stdout.ply" 2> "$T/err"
[ $? -eq 0 ] && [ "$(head -c 4 "$T/stdout.ply")" = "$(printf 'ply\n')" ] && ok "'-' writes a .ply" ||
  bad "'-' writes a .ply ($(cat "$T/err"))"
cmp -s "$T/stdout.ply" "$T/b.ply" && ok "'-' gives the file's bytes" || bad "'-' gives the file's bytes"
expect "'-' needs --format" 2 "format" "$V" mesh "$T/b.svo" -
expect "--format against the extension" 2 "contradicts" "$V" mesh "$T/b.svo" "$T/x10.ply" --format obj
expect "--format unknown" 2 "obj, ply, stl or glb" "$V" mesh "$T/b.svo" - --format pbrt
expect "--format names it for any name" 0 "triangles" "$V" mesh "$T/b.svo" "$T/any.mesh" --format stl
[ "$(head -c 80 "$T/any.mesh" | wc -c)" -eq 80 ] && ok "--format stl wrote" || bad "--format stl wrote"
expect ".gltf writes two files" 1 ".glb" "$V" mesh "$T/b.svo" "$T/x6.gltf"
expect "unwritable directory" 1 "does not exist" "$V" mesh "$T/b.svo" "$T/no/dir/x7.ply"
expect "missing input" 1 "x8.svo" "$V" mesh "$T/x8.svo" "$T/x8.ply"
"$V" convert "$DATA/bunny.ply" "$T/p.svo" --res 64 --error 1 -q
expect "pruned input" 1 "pruned" "$V" mesh "$T/p.svo" "$T/x9.ply"
echo old > "$T/keep.ply"
expect "failed mesh keeps the old file" 2 "beyond" "$V" mesh "$T/b.svo" "$T/keep.ply" --lod 9
[ "$(cat "$T/keep.ply")" = old ] && ok "old file untouched" || bad "old file untouched"
for x in x1.ply x2.ply x3.ply x4.ply x5.abc x6.gltf x8.ply x9.ply x10.ply; do
  [ -e "$T/$x" ] && bad "no $x left behind" || ok "no $x left behind"
done
ls "$T" | grep -q voxlod-tmp && bad "no temporaries left" || ok "no temporaries left"
[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
