#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_cli_names.sh - names that come from files reach the terminal escaped: a .vdb grid name and
# a glTF buffer path carrying terminal escape sequences (retitle the window, clear the screen, a
# fake success line after a newline) appear in the error message as \xNN text, never as raw
# control bytes.
# usage: test_cli_names.sh VOXLOD DATA_DIR
set -u
V=$1
DATA=$2
T=$(mktemp -d /tmp/vx_cli_names.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
# clean NAME STATUS PATTERN CMD...: exit STATUS, PATTERN (fixed text) on stderr, and no byte of
# stderr a control character other than the line ends
clean() {
  local name=$1 want=$2 pat=$3
  shift 3
  "$@" > "$T/out" 2> "$T/err"
  local got=$?
  if [ "$got" -eq "$want" ] && grep -qF -- "$pat" "$T/err"; then ok "$name"
  else bad "$name (exit $got, wanted $want; stderr: $(head -c 400 "$T/err" | cat -v))"; fi
  if LC_ALL=C grep -q '[[:cntrl:]]' <(tr -d '\n' < "$T/err"); then
    bad "$name: raw control bytes on stderr: $(cat -v "$T/err")"
  else ok "$name: no control bytes"; fi
}

# a .vdb whose grid name is ESC ] 0 ; p w n BEL (8 bytes, written over an 8-byte name)
"$V" convert "$DATA/bunny.ply" "$T/b.svo" --res 16 -q || { echo "FAIL convert"; exit 1; }
if "$V" export "$T/b.svo" "$T/g.vdb" --grid AAAAAAAA -q 2>/dev/null; then
  perl -0777 -pe 's/AAAAAAAA/\e]0;pwn\a/g' "$T/g.vdb" > "$T/esc.vdb"
  cmp -s "$T/g.vdb" "$T/esc.vdb" && bad "the grid name was not found in the .vdb"
  clean ".vdb grid name escaped" 1 'grids: \x1b]0;pwn\x07' \
    "$V" convert "$T/esc.vdb" "$T/x.svo" --grid nope
  [ -e "$T/x.svo" ] && bad "no x.svo left" || ok "no x.svo left"
  # a name with a newline and a fake report line, same length as the original
  perl -0777 -pe 's/AAAAAAAA/\nOK \e[1m/g' "$T/g.vdb" > "$T/nl.vdb"
  clean ".vdb grid name with a newline" 1 'grids: \x0aOK \x1b[1m' \
    "$V" convert "$T/nl.vdb" "$T/x.svo" --grid nope
else
  echo "skip: no .vdb export in this build"
fi

# a glTF whose buffer path carries escapes: the importer's message echoes it
cat > "$T/e.gltf" <<'JSON'
{"asset":{"version":"2.0"},"buffers":[{"uri":"\u001b]0;pwn\u0007\n\u001b[2J.bin","byteLength":36}],
"bufferViews":[{"buffer":0,"byteLength":36}],
"accessors":[{"bufferView":0,"componentType":5126,"count":3,"type":"VEC3","min":[0,0,0],"max":[1,1,0]}],
"meshes":[{"name":"\u001b[2Jmesh","primitives":[{"attributes":{"POSITION":0}}]}],
"nodes":[{"mesh":0,"name":"\u001b]0;node\u0007"}],"scenes":[{"nodes":[0]}],"scene":0}
JSON
clean "glTF buffer path escaped" 1 '\x1b]0;pwn\x07\x0a\x1b[2J.bin' \
  "$V" convert "$T/e.gltf" "$T/y.svo" --res 8
[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
