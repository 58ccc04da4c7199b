#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# device_tiled_levels.sh - on the GPU machine: the dragon converted at 32768^3 (a tiled file),
# then `export` and `mesh` of its levels read tile by tile, each timed with its peak host memory.
# Needs what scripts/device_bundle.sh builds (build-gpu) and devdata/dragon.ply.gz.
#
#   bash scripts/device_tiled_levels.sh [LEVEL...]       (default: 11 12; results in $OUT)
#   VX_STEPS="nvdb ply mesh" (default: all three)
set -uo pipefail
OUT=${OUT:-/tmp/vx_out}
B=${VX_BUILD:-build-gpu}
export LD_LIBRARY_PATH=$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p /tmp/vx "$OUT"
exec > >(tee -a "$OUT/tiled_levels_log.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
nproc
free -g | head -2
t() { /usr/bin/time -f "   %e s wall, %M KiB peak" "$@"; }
[ -f /tmp/vx/dragon.ply ] || gzip -dc devdata/dragon.ply.gz >/tmp/vx/dragon.ply
[ -f /tmp/vx/d32.svo ] || t $B/voxlod convert /tmp/vx/dragon.ply /tmp/vx/d32.svo --res 32768 --gpu
$B/voxlod stats /tmp/vx/d32.svo | head -4
for L in ${*:-11 12}; do
  for s in ${VX_STEPS:-nvdb ply mesh}; do
    echo "== level $L: $s"
    case $s in
    nvdb | ply) t $B/voxlod export /tmp/vx/d32.svo /tmp/vx/d$L.$s --lod "$L" 2>&1 | grep -v "%" ;;
    mesh) t $B/voxlod mesh /tmp/vx/d32.svo /tmp/vx/m$L.ply --lod "$L" 2>&1 | grep -v "%" ;;
    esac
    rm -f /tmp/vx/d$L.$s /tmp/vx/m$L.ply
  done
done
