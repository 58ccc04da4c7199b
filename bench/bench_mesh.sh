#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench_mesh.sh - voxlod's meshes (dual contouring at every cut) against OpenVDB's volumeToMesh on
# the same signed distance field: triangles against the two-sided distance to the source mesh (max,
# 99.9th percentile, mean, in voxels), and each voxlod error cut's distance to voxlod's own
# full-detail mesh (the bound --error names), for a few meshes and several error levels; then the
# triangles OpenVDB needs for voxlod's p99.9 (bench_mesh_ratio.py). docs/MESHING.md has the results.
#
# usage: bench/bench_mesh.sh [BUILD_DIR] [WORK_DIR]
#   BUILD_DIR  a build with bench/mesh_bench (needs libopenvdb-dev; default build)
#   WORK_DIR   where the trees, the meshes and the tables go (default /tmp/voxlod-bench-mesh)
# Meshes come from ../shared/data/meshes (the dragon is unpacked into WORK_DIR first).
# Environment: SAMPLES (random points per mesh and direction, default 20000; every vertex is
# measured too), CUTS, ADAPT, THREADS.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
WORK=${2:-/tmp/voxlod-bench-mesh}
SHARED=$ROOT/../shared/data/meshes
SAMPLES=${SAMPLES:-20000}
V=$BUILD/voxlod
B=$BUILD/mesh_bench
[ -x "$V" ] && [ -x "$B" ] || { echo "build voxlod and mesh_bench in $BUILD first" >&2; exit 1; }
mkdir -p "$WORK"
[ -f "$WORK/dragon.ply" ] || gunzip -c "$SHARED/stanford_dragon/dragon_871k.ply.gz" > "$WORK/dragon.ply"

# name  source  resolution
MESHES="bunny:$SHARED/stanford_bunny/bun_zipper.ply:512
dragon:$WORK/dragon.ply:512
spot:$SHARED/spot/spot_triangulated.obj:256
fandisk:$SHARED/fandisk/fandisk.off:256"
CUTS=${CUTS:-F,E0.5,E1,E2,E4}
ADAPT=${ADAPT:-0,0.01,0.02,0.05,0.1,0.15,0.2,0.25,0.35,0.5,0.75,1}

{
  echo "# voxlod mesh vs OpenVDB volumeToMesh"
  echo
  echo "$(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') x $(nproc) cores,"
  echo "$(. /etc/os-release; echo "$PRETTY_NAME"), OpenVDB $(dpkg-query -W -f='${Version}' libopenvdb-dev 2>/dev/null || echo '?')."
  echo "Command: bench/bench_mesh.sh (SAMPLES=$SAMPLES random points per mesh and direction, plus every vertex)."
} > "$WORK/results.md"

echo "$MESHES" | while IFS=: read -r name src res; do
  [ -f "$src" ] || { echo "skip $name: no $src" >&2; continue; }
  svo=$WORK/${name}${res}.svo
  [ -f "$svo" ] || "$V" convert "$src" "$svo" --res "$res" -q
  echo "== $name ${res}^3" >&2
  {
    echo
    echo "## $name, ${res}^3"
    echo
    "$B" "$src" "$svo" --cuts "$CUTS" --adaptivity "$ADAPT" --samples "$SAMPLES" \
      ${THREADS:+--threads $THREADS}
  } | tee -a "$WORK/results.md"
done
python3 "$ROOT/bench/bench_mesh_ratio.py" "$WORK/results.md" > "$WORK/ratios.md"
echo "tables in $WORK/results.md, OpenVDB at equal p99.9 in $WORK/ratios.md" >&2
