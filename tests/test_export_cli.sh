#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_export_cli.sh - `voxlod export` and `voxlod convert IN.vdb` from the command line: every
# format written, vdb_print reading the .vdb, and the refusals (a .vox too large, --lod beyond the
# tree, an unwritable output, a fog volume, damaged .vdb files) giving one clear line, a non-zero
# exit and no output file.
#   test_export_cli.sh VOXLOD DATA_DIR CORPUS_DIR
set -u
V="$1"
DATA="$2"
CORPUS="$3"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# expect CODE PATTERN OUTPUT_THAT_MUST_NOT_EXIST -- command...
expect() {
  local code="$1" pat="$2" out="$3"
  shift 4
  "$@" >"$T/stdout" 2>"$T/stderr"
  local rc=$?
  [ "$rc" = "$code" ] || bad "$*: exit $rc, want $code: $(cat "$T/stderr")"
  grep -q -- "$pat" "$T/stderr" || bad "$*: message lacks '$pat': $(cat "$T/stderr")"
  [ -z "$out" ] || [ ! -e "$out" ] || bad "$*: left $out"
  [ "$(wc -l <"$T/stderr")" -le 2 ] || bad "$*: more than a line or two: $(cat "$T/stderr")"
}

"$V" --help | grep -q "export IN.svo" || bad "help lacks export"
"$V" convert "$DATA/bunny_res4.ply" "$T/b.svo" --res 32 -q || bad "convert"
for f in b.nvdb b.vdb b.binvox b.vox b.ply; do
  if "$V" export "$T/b.svo" "$T/$f" -q 2>"$T/err"; then
    [ -s "$T/$f" ] || bad "$f is empty"
  elif grep -q "built without" "$T/err"; then
    echo "skipped $f: $(cat "$T/err")"
  else
    bad "export $f: $(cat "$T/err")"
  fi
done
"$V" export "$T/b.svo" "$T/l2.binvox" --lod 2 --solid -q || bad "export --lod 2 --solid"
head -c 40 "$T/l2.binvox" | grep -q "dim 4 4 4" || bad "--lod 2 did not give a 4^3 grid"
ls "$T" | grep -q voxlod-tmp && bad "a temporary was left"

if [ -s "$T/b.vdb" ]; then
  if command -v vdb_print >/dev/null; then
    vdb_print -l "$T/b.vdb" >"$T/print" 2>&1 || bad "vdb_print failed: $(cat "$T/print")"
    grep -q "surface" "$T/print" && grep -q "Tree_float_5_4_3" "$T/print" ||
      bad "vdb_print does not show the float grid: $(cat "$T/print")"
  else
    case "${CI:-}" in
      ""|0|false|no) echo "skipped the vdb_print check: vdb_print (libopenvdb-tools) not found" ;;
      *) bad "vdb_print (libopenvdb-tools) not found" ;;
    esac
  fi
  "$V" convert "$T/b.vdb" "$T/back.svo" -q || bad "convert .vdb"
  "$V" stats "$T/back.svo" >/dev/null || bad "stats of the converted .vdb"
  # damaged copies: truncated and flipped bytes, each refused with a message and no output
  size=$(stat -c %s "$T/b.vdb")
  for n in 0 7 60 130 $((size / 3)) $((size - 1)); do
    head -c "$n" "$T/b.vdb" >"$T/cut.vdb"
    expect 1 "voxlod: convert: " "$T/cut.svo" -- "$V" convert "$T/cut.vdb" "$T/cut.svo" -q
  done
  cp "$T/b.vdb" "$T/flip.vdb"
  printf '\xff\xff\xff\x7f' | dd of="$T/flip.vdb" bs=1 seek=129 conv=notrunc 2>/dev/null
  "$V" convert "$T/flip.vdb" "$T/flip.svo" -q 2>"$T/err"
  rc=$?
  [ $rc = 0 ] || [ ! -e "$T/flip.svo" ] || bad "a failed convert left flip.svo"
  [ $rc = 0 ] || grep -q "voxlod: convert: " "$T/err" || bad "flip: $(cat "$T/err")"
fi

expect 1 "no float level set" "$T/fog.svo" -- "$V" convert "$CORPUS/vdb/fog.vdb" "$T/fog.svo"
expect 1 "no grid named 'x'" "$T/fog.svo" -- "$V" convert "$CORPUS/vdb/fog.vdb" "$T/fog.svo" --grid x
expect 2 "beyond" "$T/deep.nvdb" -- "$V" export "$T/b.svo" "$T/deep.nvdb" --lod 6
expect 2 "unknown format" "$T/x.obj" -- "$V" export "$T/b.svo" "$T/x.obj"
expect 1 "voxlod: export: " "" -- "$V" export "$T/b.svo" "$T/no/such/dir/x.vox"
expect 2 "needs an OpenVDB" "" -- "$V" convert "$DATA/bunny_res4.ply" "$T/g.svo" --res 8 --grid a
# options that do not apply to the format are refused, not ignored
expect 2 "does not apply to .nvdb" "$T/o1.nvdb" -- "$V" export "$T/b.svo" "$T/o1.nvdb" --solid
expect 2 "does not apply to .vox" "$T/o2.vox" -- "$V" export "$T/b.svo" "$T/o2.vox" --grid a
expect 2 "does not apply to .ply" "$T/o3.ply" -- "$V" export "$T/b.svo" "$T/o3.ply" --band 3
expect 2 "does not apply to .binvox" "$T/o4.binvox" -- "$V" export "$T/b.svo" "$T/o4.binvox" --surface-points
expect 2 "does not apply to .ply" "$T/o5.ply" -- "$V" export "$T/b.svo" "$T/o5.ply" --solid
expect 2 "contradicts" "$T/o6.vox" -- "$V" export "$T/b.svo" "$T/o6.vox" --format binvox
# standard output with --format: the same bytes as the file
for f in binvox ply vox; do
  "$V" export "$T/b.svo" - --format $f -q >"$T/std.$f" 2>"$T/stderr" || bad "export - --format $f: $(cat "$T/stderr")"
  cmp -s "$T/std.$f" "$T/b.$f" || bad "export - --format $f differs from b.$f"
done
expect 2 "name the format with --format" "" -- "$V" export "$T/b.svo" -
# a level set is converted on the CPU and carries its sign: --gpu and --sign are refused
if [ -s "$T/b.vdb" ]; then
  expect 2 "--gpu does not apply" "$T/g1.svo" -- "$V" convert "$T/b.vdb" "$T/g1.svo" --gpu
  expect 2 "--sign does not apply" "$T/g2.svo" -- "$V" convert "$T/b.vdb" "$T/g2.svo" --sign winding
fi
# two tiny tetrahedra at opposite corners: a 4096^3 tree with few voxels
cat >"$T/far.obj" <<'OBJ'
v 0 0 0
v 0.01 0 0
v 0 0.01 0
v 0 0 0.01
v 1 1 1
v 0.99 1 1
v 1 0.99 1
v 1 1 0.99
f 1 3 2
f 1 2 4
f 1 4 3
f 2 3 4
f 5 6 7
f 5 8 6
f 5 7 8
f 6 8 7
OBJ
"$V" convert "$T/far.obj" "$T/big.svo" --res 4096 -q || bad "convert 4096"
expect 1 "too large for .vox" "$T/big.vox" -- "$V" export "$T/big.svo" "$T/big.vox"
chmod 500 "$T" 2>/dev/null
if [ "$(id -u)" != 0 ]; then
  expect 1 "voxlod: export: " "$T/ro.vox" -- "$V" export "$T/b.svo" "$T/ro.vox"
fi
chmod 700 "$T"
[ $fail = 0 ] && echo "all export CLI checks passed"
exit $fail
