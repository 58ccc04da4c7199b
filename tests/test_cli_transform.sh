#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_cli_transform.sh - trees whose transform is finite but beyond single precision (origin and
# scale 1e300, scale 1e-300, a box 1e20 voxels from the world origin) are refused by every command
# that computes in world units, with one message, exit 1 and no file; the same tree with its own
# transform passes (the control). A tree whose band is under a voxel exports without --band.
# The trees are made by svo_edit (tests/svo_edit.c: the header rewritten with zstd alone).
# usage: test_cli_transform.sh VOXLOD SVO_EDIT DATA_DIR
set -u
V=$1
EDIT=$2
DATA=$3
T=$(mktemp -d /tmp/vx_cli_transform.XXXXXX)
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
  else bad "$name (exit $got, wanted $want; stderr: $(head -c 400 "$T/err"))"; fi
}
[ -f "$DATA/bunny.ply" ] || { echo "SKIP: no $DATA/bunny.ply"; exit 77; }
"$V" convert "$DATA/bunny.ply" "$T/b.svo" --res 32 -q || { echo "FAIL convert"; exit 1; }
"$EDIT" "$T/b.svo" "$T/same.svo" || { echo "FAIL svo_edit"; exit 1; }
"$EDIT" "$T/b.svo" "$T/huge.svo" --origin 1e300,1e300,1e300 --scale 1e300 &&
  "$EDIT" "$T/b.svo" "$T/tiny.svo" --scale 1e-300 &&
  "$EDIT" "$T/b.svo" "$T/far.svo" --origin 1e20,0,0 --scale 1 &&
  "$EDIT" "$T/b.svo" "$T/half.svo" --band 0.5 || { echo "FAIL svo_edit"; exit 1; }

msg="the tree's transform (origin"
# .nvdb and .vdb where this build writes them (the sanitizer build has no OpenVDB)
grids=""
for g in nvdb vdb; do
  "$V" export "$T/b.svo" "$T/probe.$g" -q 2>/dev/null && grids="$grids e.$g" && rm -f "$T/probe.$g"
done
[ -n "$grids" ] || echo "note: no .nvdb or .vdb export in this build"
outs="m.obj m.ply m.stl m.glb$grids e.binvox e.vox e.ply r.png"
# the control: an edited file with the same header is read and written like the original
for o in $outs; do
  case $o in
  m.*) expect "same tree: mesh $o" 0 "triangles" "$V" mesh "$T/same.svo" "$T/$o" ;;
  e.*) expect "same tree: export $o" 0 "surface cells" "$V" export "$T/same.svo" "$T/$o" ;;
  r.*) expect "same tree: render $o" 0 "pixels hit" "$V" render "$T/same.svo" "$T/$o" --size 64x48 --cpu ;;
  esac
  [ -s "$T/$o" ] && ok "same tree: $o written" || bad "same tree: $o written"
  rm -f "$T/$o"
done
grep -q -- "nan\|inf" "$T/err" && bad "no nan or inf in the report" || ok "no nan or inf in the report"

for t in huge tiny far; do
  for o in $outs; do
    case $o in
    m.*) expect "$t: mesh $o refused" 1 "$msg" "$V" mesh "$T/$t.svo" "$T/$o" ;;
    e.*) expect "$t: export $o refused" 1 "$msg" "$V" export "$T/$t.svo" "$T/$o" ;;
    r.*) expect "$t: render refused" 1 "$msg" "$V" render "$T/$t.svo" "$T/$o" --size 64x48 --cpu ;;
    esac
    [ -e "$T/$o" ] && bad "$t: no $o left behind" || ok "$t: no $o left behind"
  done
  expect "$t: mesh --lod refused" 1 "$msg" "$V" mesh "$T/$t.svo" "$T/l.ply" --lod 3
  expect "$t: export --lod refused" 1 "$msg" "$V" export "$T/$t.svo" "$T/l.binvox" --lod 3
  expect "$t: sampling refused" 1 "$msg" "$V" bench "$T/$t.svo" --sample 1000
  expect "$t: compare refused" 1 "$msg" "$V" compare "$T/$t.svo" "$T/$t.svo" --size 64x48
  # the viewer makes its renderer before it listens: refused at once (where it is built)
  if "$V" --help | grep -q "view IN.svo  *a web page"; then
    expect "$t: view refused" 1 "$msg" timeout 30 "$V" view "$T/$t.svo" --port 0
  fi
  # stats prints no world coordinates: the tree is read and described
  "$V" stats "$T/$t.svo" > "$T/out" 2>&1 && grep -q "depth 5" "$T/out" && ok "$t: stats reads it" ||
    bad "$t: stats reads it: $(head -c 300 "$T/out")"
done

# A band under a voxel: the grid exports get +-1 voxel and say so.
for o in ${grids//e./h.}; do
  expect "band 0.5: export $o" 0 "within +-1 voxels" "$V" export "$T/half.svo" "$T/$o"
  [ -s "$T/$o" ] && ok "band 0.5: $o written" || bad "band 0.5: $o written"
done
expect "band 0.5: --band 3 is kept" 0 "surface cells" "$V" export "$T/half.svo" "$T/h3.nvdb" --band 3
grep -q "within" "$T/err" && bad "band 3: no note" || ok "band 3: no note"
ls "$T" | grep -q voxlod-tmp && bad "no temporaries left" || ok "no temporaries left"
[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
