#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# device_tiled_build.sh - on the GPU machine: tiled GPU builds timed, each with its peak host
# memory, the convert report's stages and the file's md5; with VX_BASE (another voxlod, e.g. one
# built from the code before a change, its libvoxlod in lib/ beside it) each build runs with both
# and the files are compared.
# Needs what scripts/device_bundle.sh builds (build-gpu) and devdata/dragon.ply.gz.
#
#   bash scripts/device_tiled_build.sh [CASE...]          (results in $OUT/tiled_build_log.txt)
#   cases: t12 (the dragon at 32768^3 in 129 tiles of 4096^3), t14 (8 tiles of 16384^3),
#          big (the dragon's own 2048^3 mesh, about 2e7 triangles, at 32768^3 in 4096^3 tiles:
#          a mesh whose upload to the GPU is large),
#          scale (t12 and t14 on 1, 2, 4 and 8 GPUs, as many as the machine has: the multi-GPU
#          speed-up against one GPU of the same machine, the files compared); default: t12 t14
#   VX_GPUS=all (default) | N
set -uo pipefail
OUT=${OUT:-/tmp/vx_out}
B=${VX_BUILD:-build-gpu}
export LD_LIBRARY_PATH=$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p /tmp/vx "$OUT"
exec > >(tee -a "$OUT/tiled_build_log.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
nproc
t() { /usr/bin/time -f "   %e s wall, %M KiB peak" "$@"; }
[ -f /tmp/vx/dragon.ply ] || gzip -dc devdata/dragon.ply.gz >/tmp/vx/dragon.ply
build() { # name mesh args...
  local name=$1 mesh=$2
  shift 2
  for bin in "$B/voxlod" ${VX_BASE:+"$VX_BASE"}; do
    echo "== $name: $bin"
    # a base build's own libvoxlod beside it (its lib/), ahead of this build's
    LD_LIBRARY_PATH=$(dirname "$bin")/lib:$LD_LIBRARY_PATH /usr/bin/time -f "   %e s wall, %M KiB peak" \
      "$bin" convert "$mesh" /tmp/vx/$name.svo --gpus "${VX_GPUS:-all}" "$@" 2>&1 |
      grep -v "%" | tail -n 14
    md5sum /tmp/vx/$name.svo
    if [ "$bin" = "$B/voxlod" ]; then mv /tmp/vx/$name.svo /tmp/vx/$name.new.svo; fi
  done
  [ -f /tmp/vx/$name.svo ] && cmp /tmp/vx/$name.new.svo /tmp/vx/$name.svo && echo "IDENTICAL"
  rm -f /tmp/vx/$name.svo /tmp/vx/$name.new.svo
}
# The same build on 1, 2, 4, 8 GPUs of this machine (as many as it has), each file against the
# one-GPU file.
scale() { # name mesh args...
  local name=$1 mesh=$2 n gpus
  shift 2
  gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
  for n in 1 2 4 8; do
    [ "$n" -le "$gpus" ] || break
    echo "== $name on $n GPU(s)"
    t "$B/voxlod" convert "$mesh" /tmp/vx/$name.$n.svo --gpus "$n" "$@" 2>&1 | grep -v "%" | tail -n 14
    md5sum /tmp/vx/$name.$n.svo
    if [ "$n" -gt 1 ]; then
      cmp /tmp/vx/$name.1.svo /tmp/vx/$name.$n.svo && echo "IDENTICAL to 1 GPU"
      rm -f /tmp/vx/$name.$n.svo
    fi
  done
  rm -f /tmp/vx/$name.1.svo
}
for c in ${*:-t12 t14}; do
  case $c in
  scale)
    scale s12 /tmp/vx/dragon.ply --res 32768 --tile-depth 12
    scale s14 /tmp/vx/dragon.ply --res 32768
    ;;
  t12) build t12 /tmp/vx/dragon.ply --res 32768 --tile-depth 12 ;;
  t14) build t14 /tmp/vx/dragon.ply --res 32768 ;;
  big)
    if [ ! -f /tmp/vx/big.ply ]; then
      $B/voxlod convert /tmp/vx/dragon.ply /tmp/vx/d2k.svo --res 2048 --gpu >/dev/null 2>&1
      t $B/voxlod mesh /tmp/vx/d2k.svo /tmp/vx/big.ply 2>&1 | grep -v "%" | tail -n 3
    fi
    ls -l /tmp/vx/big.ply
    build big /tmp/vx/big.ply --res 32768 --tile-depth 12
    ;;
  esac
done
