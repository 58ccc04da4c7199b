#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_cli_paths.sh VOXLOD DATA_DIR - nothing lost, nothing hung: outputs that are not plain files
# (devices, FIFOs, standard output, symbolic links), outputs equal to inputs, signals during a
# write, FIFO inputs, size bombs, and the values and messages a careless user meets. Devices are
# mknod copies inside a scratch directory when run as root, the real /dev/null and /dev/full otherwise.
set -u
VOXLOD=$1 DATA=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0 passes=0
ok() { passes=$((passes + 1)); echo "ok   $1"; }
bad() { fails=$((fails + 1)); echo "FAIL $1"; [ -s "$T/err" ] && head -5 "$T/err"; }
is_png() { head -c 8 "$1" 2>/dev/null | od -An -c | grep -q "P   N   G"; }
no_temp() { ! ls "$1" | grep -q "voxlod-tmp"; }
# expect_fail NAME PATTERN CMD...: exit 1 or 2, stderr matches, a short message.
expect_fail() {
  local name=$1 pat=$2; shift 2
  "$@" >"$T/out" 2>"$T/err"; local rc=$?
  if [ $rc -eq 0 ] || [ $rc -ge 128 ]; then bad "$name: exit $rc"; return; fi
  if ! grep -qiE "$pat" "$T/err"; then bad "$name: message does not match '$pat'"; return; fi
  if [ "$(grep -c . "$T/err")" -gt 3 ]; then bad "$name: more than a short message"; return; fi
  ok "$name"
}

"$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/b.svo" --res 64 -q || { echo "FAIL setup"; exit 1; }
"$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/b32.svo" --res 32 -q || { echo "FAIL setup"; exit 1; }
R="--size 48x36 --cpu -q"
command -v python3 >/dev/null || bad "python3 not found (the socket and JSON checks need it)"

# ---- outputs that are not plain files ----------------------------------------------------------
# Root works on mknod copies in the scratch directory; anyone else on the real /dev/null and
# /dev/full, which a process without root cannot replace or remove.
NULLDEV=/dev/null FULLDEV=/dev/full
if [ "$(id -u)" = 0 ]; then
  NULLDEV=$T/null FULLDEV=$T/full
  mknod "$NULLDEV" c 1 3 && mknod "$FULLDEV" c 1 7 || bad "mknod in the scratch directory"
fi
if "$VOXLOD" render "$T/b.svo" "$NULLDEV" $R 2>"$T/err" && [ -c "$NULLDEV" ]; then
  ok "render to $NULLDEV: written through, still a device"; else bad "render to $NULLDEV"; fi
expect_fail "render to $FULLDEV fails" "no space|cannot write" "$VOXLOD" render "$T/b.svo" "$FULLDEV" $R
[ -c "$FULLDEV" ] && ok "$FULLDEV still a device" || bad "$FULLDEV replaced"
if "$VOXLOD" convert "$DATA/bunny_res4.ply" "$NULLDEV" --res 16 -q 2>"$T/err" && [ -c "$NULLDEV" ]; then
  ok "convert to $NULLDEV"; else bad "convert to $NULLDEV"; fi
mkfifo "$T/fifo"
(cat "$T/fifo" >"$T/from_fifo.png") &
reader=$!
if timeout 20 "$VOXLOD" render "$T/b.svo" "$T/fifo" $R 2>"$T/err" && wait $reader && is_png "$T/from_fifo.png" &&
   [ -p "$T/fifo" ]; then ok "render into a FIFO (a reader gets the PNG, the FIFO stays)"; else bad "render into a FIFO"; kill $reader 2>/dev/null; fi
if "$VOXLOD" render "$T/b.svo" - $R >"$T/dash.png" 2>"$T/err" && is_png "$T/dash.png"; then ok "render to - (standard output)"; else bad "render to -"; fi
if "$VOXLOD" render "$T/b.svo" /dev/stdout $R 2>"$T/err" | cat >"$T/pipe.png" && is_png "$T/pipe.png"; then ok "render to /dev/stdout in a pipeline"; else bad "render to /dev/stdout"; fi
mkdir "$T/other"
ln -s other/target.png "$T/link.png"
if "$VOXLOD" render "$T/b.svo" "$T/link.png" $R 2>"$T/err" && [ -L "$T/link.png" ] && is_png "$T/other/target.png" &&
   no_temp "$T/other" && no_temp "$T"; then ok "a symbolic link is followed (dangling: target created in its own directory)"; else bad "symbolic link output"; fi
cp "$T/dash.png" "$T/other/target.png"
"$VOXLOD" render "$T/b.svo" "$T/link.png" --size 40x30 --cpu -q 2>"$T/err"
if [ -L "$T/link.png" ] && is_png "$T/other/target.png" && ! cmp -s "$T/dash.png" "$T/other/target.png"; then
  ok "a symbolic link's target is replaced, the link stays"; else bad "symbolic link to an existing file"; fi
expect_fail "a directory is refused" "directory" "$VOXLOD" render "$T/b.svo" "$T/other" $R
if command -v python3 >/dev/null && python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$T/sock" 2>/dev/null; then
  expect_fail "a socket is refused" "not a regular file" "$VOXLOD" render "$T/b.svo" "$T/sock" $R
  [ -S "$T/sock" ] && ok "the socket is left alone" || bad "the socket was replaced"
fi

# ---- output equal to input ------------------------------------------------------------------
cp "$DATA/bunny_res4.ply" "$T/m.ply"
cp "$T/m.ply" "$T/m.keep"
expect_fail "convert m.ply m.ply refused" "input" "$VOXLOD" convert "$T/m.ply" "$T/m.ply" --res 16
cmp -s "$T/m.ply" "$T/m.keep" && ok "the mesh is intact" || bad "the mesh was changed"
cp "$T/b.svo" "$T/b.keep"
expect_fail "render x.svo x.svo refused" "input" "$VOXLOD" render "$T/b.svo" "$T/b.svo" $R
expect_fail "stats x.svo --plot x.svo refused" "input" "$VOXLOD" stats "$T/b.svo" --plot "$T/b.svo"
ln "$T/b.svo" "$T/hard.svo"
ln -s b.svo "$T/soft.svo"
expect_fail "render through a hard link refused" "input" "$VOXLOD" render "$T/b.svo" "$T/hard.svo" $R
expect_fail "render through a symbolic link refused" "input" "$VOXLOD" render "$T/soft.svo" "$T/b.svo" $R
cp "$T/b.svo" "$T/v_001.svo"
expect_fail "--views: every image name is checked" "input" "$VOXLOD" render "$T/v_001.svo" "$T/v.svo" --views 2 $R
[ ! -e "$T/v_000.svo" ] && ok "--views: refused before the first image" || bad "--views wrote before refusing"
cmp -s "$T/b.svo" "$T/b.keep" && ok "the tree is intact" || bad "the tree was changed"
rm -f "$T/hard.svo" "$T/soft.svo"

# ---- signals and file size limits during a write -------------------------------------------
for sig in HUP INT TERM; do
  cp "$T/b.keep" "$T/sig.svo"
  "$VOXLOD" convert "$DATA/bunny.ply" "$T/sig.svo" --res 1024 -q &
  pid=$!
  sleep 2
  kill -$sig $pid 2>/dev/null
  wait $pid; rc=$?
  if [ $rc -ne 0 ] && cmp -s "$T/b.keep" "$T/sig.svo" && no_temp "$T"; then ok "SIG$sig: previous output intact, no temporary"; else bad "SIG$sig (rc $rc)"; ls "$T"; fi
done
( ulimit -f 64; "$VOXLOD" convert "$DATA/bunny.ply" "$T/fsz.svo" --res 256 -q ) 2>"$T/err"; rc=$?
if [ $rc -eq 1 ] && grep -qi "too large\|cannot write" "$T/err" && [ ! -e "$T/fsz.svo" ] && no_temp "$T"; then
  ok "a file size limit is a write error (exit 1, no temporary)"; else bad "file size limit (rc $rc)"; fi
rm -f "$T/sig.svo"

# ---- inputs that would hang or explode --------------------------------------------------------
mkfifo "$T/in.svo"
expect_fail "a FIFO as .svo input is refused at once" "not a regular file" timeout 10 "$VOXLOD" stats "$T/in.svo"
mkfifo "$T/in.ply"
expect_fail "a FIFO as mesh input is refused at once" "regular|cannot|read" timeout 10 "$VOXLOD" convert "$T/in.ply" "$T/x.svo" --res 16
bomb="$(dirname "$0")/corpus/svo/bomb_masks_d9.svo"
start=$(date +%s%N)
expect_fail ".svo decompression bomb refused at its first level" "masks" "$VOXLOD" stats "$bomb"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ $ms -lt 2000 ] && ok "bomb refused in $ms ms" || bad "bomb took $ms ms"
expect_fail "read limit message in the right unit" "1\.00 KiB" "$VOXLOD" stats "$T/b.svo" --mem-limit 1K

# ---- models at any scale -----------------------------------------------------------------------
scale_ply() { awk -v s="$1" 'BEGIN{h=1} h{print; if($0=="end_header")h=0; next} NF==3{printf "%.9g %.9g %.9g\n",$1*s,$2*s,$3*s; next} {print}' "$DATA/bunny_res4.ply" >"$2"; }
for s in 1e-10 1e37; do
  scale_ply $s "$T/scaled.ply"
  if "$VOXLOD" convert "$T/scaled.ply" "$T/scaled.svo" --res 32 -q 2>"$T/err" &&
     "$VOXLOD" render "$T/scaled.svo" "$T/scaled.png" --size 64x48 --cpu 2>"$T/err"; then
    pct=$(sed -n 's/.*, \([0-9.]*\)% of pixels hit.*/\1/p' "$T/err")
    awk -v p="$pct" 'BEGIN{exit !(p > 5)}' && ok "a model $s across is framed ($pct% of pixels hit)" || bad "model $s: $pct% hit"
  else bad "model scaled by $s"; fi
done

# ---- values are range-checked as they are parsed ---------------------------------------------
expect_fail "--size 4294967297x1" "bad value" "$VOXLOD" render "$T/b.svo" "$T/x.png" --size 4294967297x1
expect_fail "--res ' -18446744073709551614'" "bad value|power of two" "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/x.svo" --res ' -18446744073709551614'
for v in 0.5 inf 99999999T -1 nan 8Q; do
  expect_fail "--mem-limit $v" "bad value '$v' for --mem-limit" "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/x.svo" --res 16 --mem-limit "$v"
done
expect_fail "--error 1e40 before the import" "bad value '1e40' for --error" "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/x.svo" --res 16 --error 1e40
grep -q "triangles from" "$T/err" && bad "--error checked after the import" || ok "--error checked before the import"
expect_fail "an unknown option last" "unknown option '--bogus'" "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/x.svo" --res 16 --bogus
expect_fail "--eye 1e300,0,0" "too far" "$VOXLOD" render "$T/b.svo" "$T/x.png" --eye 1e300,0,0 $R
grep -q "equals target" "$T/err" && bad "--eye 1e300: says eye equals target" || ok "--eye 1e300: no 'eye equals target'"
expect_fail "output directory checked before the build" "does not exist" "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/no/dir/x.svo" --res 16
grep -q "triangles from" "$T/err" && bad "missing directory found only after the import" || ok "missing directory found before the import"
expect_fail "--plot errors carry the voxlod: prefix" "^voxlod: stats: .*does not exist" "$VOXLOD" stats "$T/b.svo" --plot "$T/no/dir/p.svg"
long=$(printf 'n%.0s' $(seq 1 246)).svo
if "$VOXLOD" convert "$DATA/bunny_res4.ply" "$T/$long" --res 16 -q 2>"$T/err" && [ -s "$T/$long" ] && no_temp "$T"; then
  ok "a 250-character output name"; else bad "a 250-character output name"; fi

# ---- JSON that parses; comparisons that say what they compared --------------------------------
if command -v python3 >/dev/null; then
  "$VOXLOD" stats "$T/b.svo" --json --error 0 --views 1 --size 32x24 --cpu >"$T/s.json" 2>"$T/err"
  if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['pruned']['psnr_db'] is None; assert len(d['levels'])==7" "$T/s.json" 2>>"$T/err"; then
    ok "stats --json --error 0: one JSON document, psnr null"; else bad "stats --json"; cat "$T/s.json" | head -5; fi
  "$VOXLOD" bench "$T/b.svo" --cpu --size 32x24 --frames 2 --views 2 --lod 3,auto --json >"$T/b.json" 2>"$T/err"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['levels'])==2" "$T/b.json" && ok "bench --json parses" || bad "bench --json"
fi
for order in "b.svo b32.svo" "b32.svo b.svo"; do
  set -- $order
  if "$VOXLOD" compare "$T/$1" "$T/$2" --views 1 --size 48x36 --cpu >"$T/out" 2>"$T/err" &&
     grep -q "each at its finest level" "$T/out"; then ok "compare $order says what it compared"; else bad "compare $order"; cat "$T/out" "$T/err"; fi
done
expect_fail "compare --lod beyond one tree names it" "b32.svo" "$VOXLOD" compare "$T/b.svo" "$T/b32.svo" --lod 6 --cpu

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
