#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job on the bundled mesh: installs missing packages, builds, converts data/bunny.ply
# at 512^3, renders PNGs at a few levels of detail (and auto LOD), prints the memory report.
# Output goes to out/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >build.log 2>&1 || { cat build.log; exit 1; }
cmake --build build -j"$(nproc)" >>build.log 2>&1 || { tail -50 build.log; exit 1; }
mkdir -p out
./build/voxlod convert data/bunny.ply out/bunny.svo --res 512
for lod in 5 7 9 auto; do
  ./build/voxlod render out/bunny.svo "out/bunny_lod$lod.png" --lod "$lod" --size 800x600
done
./build/voxlod render out/bunny.svo out/bunny_blocks.png --lod 6 --shade blocks --size 800x600
./build/voxlod stats out/bunny.svo --plot out/bunny_memory.svg
echo "images and the memory plot are in out/"
