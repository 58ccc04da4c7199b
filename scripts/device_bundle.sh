#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# device_bundle.sh - build the CUDA binaries here and bundle what the GPU machine lacks.
#
# Builds voxlod, bench_nanovdb and the GPU tests into build-gpu (sm_90; VX_CUDA_ARCHS: other CUDA
# architectures, a CMake list, e.g. 75-virtual for PTX only), copies the shared
# libraries that the GPU machine's image (Ubuntu 24.04 + CUDA) does not have - libassimp.so.5 and
# what it pulls in (libdraco.so.7, libminizip.so.1), libzstd - into build-gpu/lib, where the
# binaries' RPATH $ORIGIN/lib finds them, and puts test meshes into devdata/ (ignored through
# .git/info/exclude). Then prints the `carry` list for the device run, which runs
# scripts/device_gpu_tests.sh there.
#
#   scripts/device_bundle.sh [EXTRA_TARGET...]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${VX_BUILD:-$ROOT/build-gpu}  # VX_BUILD: another build folder
BN=$(basename "$B")
MESHES=${VX_SHARED_MESHES:-$ROOT/../shared/data/meshes}

# OpenVDB stays out (the device needs none of it, and its library alone is 57 MB of the 64 MB a
# run may carry).
cmake -S "$ROOT" -B "$B" -DVOXLOD_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${VX_CUDA_ARCHS:-90}" \
  -DVOXLOD_OPENVDB=OFF -DVOXLOD_BENCH=ON >/dev/null
cmake --build "$B" -j2 --target voxlod bench_nanovdb bench_color test_gpu_render test_gpu_nanovdb \
  test_gpu_build test_gpu_color test_gpu_ooc_color test_gpu_sample test_gpu_sample_agree \
  test_gpu_tiled test_gpu_render_tiled test_sample_tiled "$@"
rm -f "$B"/*/libvx_*.a # the layers' static archives: not needed there, and large
mkdir -p "$B/gputests" # the GPU tests, in one folder to carry (test_sample_tiled: on the GPU too)
cp "$B"/tests/test_gpu_* "$B"/tests/test_sample_tiled "$B/gputests/"

# Libraries present on the device image: the C runtime, libstdc++, libgcc, zlib. Everything else
# the binaries load (directly or through another copied library) is copied.
core='^(linux-vdso|ld-linux|libc\.|libm\.|libstdc\+\+|libgcc_s|libz\.|libpthread|libdl\.|librt\.)'
mkdir -p "$B/lib"
# $B/bench_nanovdb_base (optional): a bench_nanovdb built from the code before a change, copied
# there by hand, so that the device times both in the same run.
bins=("$B/voxlod" "$B/bench_nanovdb" "$B/bench_color" "$B"/gputests/test_*)
[ -f "$B/bench_nanovdb_base" ] && bins+=("$B/bench_nanovdb_base")
todo=()
for f in "${bins[@]}"; do [ -f "$f" ] && [ -x "$f" ] && todo+=("$f"); done
seen=" "
while [ ${#todo[@]} -gt 0 ]; do
  f=${todo[0]}
  todo=("${todo[@]:1}")
  while read -r name path; do
    [[ $name =~ $core ]] && continue
    [[ $seen == *" $name "* ]] && continue
    seen="$seen$name "
    # already bundled (a binary whose RPATH finds $B/lib): nothing to copy
    [ "$(readlink -f "$path")" = "$(readlink -f "$B/lib/$name" 2>/dev/null)" ] || cp -L "$path" "$B/lib/$name"
    todo+=("$path")
  done < <(ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
done
strip --strip-debug "$B"/lib/*.so* "$B"/gputests/* "$B/bench_nanovdb" "$B/bench_color" "$B/voxlod" 2>/dev/null ||
  true # what travels has no debug info (it stays in the build's objects here)
echo "bundled into $BN/lib:$seen"

# Test meshes for the device (it cannot reach ../shared).
mkdir -p "$ROOT/devdata"
cp "$MESHES/stanford_bunny/bun_zipper.ply" "$ROOT/devdata/bunny.ply"
# the dragon travels compressed (device_gpu_tests.sh unpacks it there)
rm -f "$ROOT/devdata/dragon.ply"
cp "$MESHES/stanford_dragon/dragon_871k.ply.gz" "$ROOT/devdata/dragon.ply.gz"
# textured meshes for the colour step (duck: DAE + TGA, spider: OBJ + MTL + JPEGs, a GLB)
rm -rf "$ROOT/devdata/color" && mkdir -p "$ROOT/devdata/color"
cp -r "$MESHES/duck" "$MESHES/spider" "$MESHES/2cylinder_engine" "$ROOT/devdata/color/"
# the viewer's protocol test runs with the device's python3 and Debian's websocket-client module
[ -d /usr/lib/python3/dist-packages/websocket ] && mkdir -p "$ROOT/devdata/pylib" &&
  cp -r /usr/lib/python3/dist-packages/websocket "$ROOT/devdata/pylib/"
EXCL=$(cd "$ROOT" && realpath -m "$(git rev-parse --git-path info/exclude)")
mkdir -p "$(dirname "$EXCL")"
grep -qx '/devdata/' "$EXCL" 2>/dev/null || echo '/devdata/' >> "$EXCL"

du -sh "$B/voxlod" "$B/bench_nanovdb" "$B/lib" "$B/gputests" "$ROOT/devdata" | sed 's/^/  /'
base=""
[ -f "$B/bench_nanovdb_base" ] && base=", \"$BN/bench_nanovdb_base\""
echo "carry: [\"$BN/voxlod\", \"$BN/bench_nanovdb\", \"$BN/bench_color\", \"$BN/lib\", \"$BN/gputests\", \"devdata\"$base]"
echo "(the Python wheel for the device's Python 3.12: python3.12 -m pip wheel --no-deps -w .whl ., carried as .whl)"
echo "run:   VX_BUILD=$BN bash scripts/device_gpu_tests.sh"

