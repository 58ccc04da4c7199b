#!/usr/bin/env bash
# test_cli.sh VOXLOD DATA_DIR SHARED_MESHES - the command line as a user runs it: the whole
# pipeline on the bundled mesh, and every bad input of issue 2 giving one clear message on stderr,
# a non-zero exit, no crash (exit >= 128) and no half-written output.
set -u
VOXLOD=$1 DATA=$2 SHARED=$3
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
if "$VOXLOD" stats "$T/b.svo" >"$T/stats" && grep -q "64^3" "$T/stats" && grep -q "per surface voxel" "$T/stats"; then ok stats; else bad stats; cat "$T/stats"; fi
if "$VOXLOD" stats "$T/b.svo" --plot "$T/m.svg" --error 0.5 --views 1 --size 64x48 --cpu >"$T/stats2" && grep -q "<svg" "$T/m.svg" && grep -q "psnr_db" "$T/stats2"; then ok "stats --plot --error"; else bad "stats --plot --error"; cat "$T/stats2"; fi
if "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/p.svo" --res 64 --error 1 -q && "$VOXLOD" compare "$T/b.svo" "$T/p.svo" --views 1 --size 64x48 --cpu >"$T/cmp" && grep -q PSNR "$T/cmp"; then ok "convert --error, compare"; else bad "convert --error, compare"; fi
# convert --gpu: the same file as the CPU build, on the GPU where there is one, else through the
# CPU fallback with a one-line notice (what CI sees)
if "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/g.svo" --res 64 --gpu -q 2>"$T/gerr" && cmp -s "$T/g.svo" "$T/b.svo"; then
  ok "convert --gpu: same file$(grep -q 'building on the CPU' "$T/gerr" && echo ' (CPU fallback)')"
else bad "convert --gpu: same file"; cat "$T/gerr"; fi
expect_fail "--gpu with --cpu" "exclude" "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/x.svo" --res 16 --gpu --cpu
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
for r in 0 1 3 100 1000 32768 -4 abc; do
  expect_fail "res $r rejected" "power of two" "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/x.svo" --res $r
done
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

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
