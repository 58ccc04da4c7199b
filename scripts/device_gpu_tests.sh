#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# device_gpu_tests.sh - what runs on the GPU machine (after scripts/device_bundle.sh here):
#   1. the GPU tests (exit 0 pass, 77 skip);
#   2. the SASS check: node fetches of the default kernel are LDG.E.128.CONSTANT, no spills;
#   3. the benchmarks: bunny at 512^3 (kernel variants, every LOD cut, NanoVDB) and the dragon at
#      2048^3 and 4096^3 (voxlod vs NanoVDB), 1920x1080, 8 orbit views.
# Results go under $OUT (at most 8 files come back): gpu_log.txt, sass_check.txt,
# bunny/{voxlod,nanovdb}.png, dragon/{voxlod,nanovdb}.png, bunny/bench.json, dragon/bench.json.
#
#   bash scripts/device_gpu_tests.sh [STEP ...]
#   steps: tests sass bunny dragon dragon4k color gpubuild zoom perf variants trees versus big lib ncu
#   viewer tiledrender colortiles samplecli tiledsample tiledmesh
#   (default: tests sass bunny dragon dragon4k; `gpubuild` times convert --gpu against the CPU
#   build; `zoom` repeats the dragons filling the frame; `perf` times every model framed and zoomed
#   with the kernel variants, 50 frames; `variants` does the same against a base build, with the
#   tests and the SASS check while the trees convert; each step below says what it does)
set -uo pipefail
OUT=${OUT:-/tmp/vx_out}
B=${VX_BUILD:-build-gpu}
D=devdata
# RUNPATH ($ORIGIN/lib) is not searched for the dependencies of libassimp (libdraco, libminizip).
export LD_LIBRARY_PATH=$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
FRAMES=${VX_FRAMES:-30}
mkdir -p "$OUT/bunny" "$OUT/dragon" /tmp/vx
[ -f $D/dragon.ply ] || gunzip -c $D/dragon.ply.gz > $D/dragon.ply
exec > >(tee -a "$OUT/gpu_log.txt") 2>&1
steps=${*:-"tests sass bunny dragon dragon4k"}
T0=$(date +%s)
stamp() { echo "== $1 ($(( $(date +%s) - T0 )) s)"; }

stamp "device"
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
nproc

for s in $steps; do
  case $s in
  tests)
    stamp "gpu tests"
    export VOXLOD_DATA_DIR=$PWD/data VOXLOD_TEST_MESHES=$PWD/tests/data/meshes
    for t in $B/gputests/test_*; do
      [ -x "$t" ] || continue
      timeout 300 "$t" > /tmp/vx/t.log 2>&1
      rc=$?
      tail -n 40 /tmp/vx/t.log
      echo "RESULT $(basename "$t"): rc=$rc ($([ $rc = 0 ] && echo pass || ([ $rc = 77 ] && echo skip || echo FAIL)))"
    done
    ;;
  sass)
    stamp "sass check"
    # the kernels live in the shared library
    cuobjdump --dump-sass "$B/lib/libvoxlod.so" > /tmp/vx/sass.txt 2>&1 || echo "cuobjdump failed"
    awk '/Function : /{fn=$3}
         match($0, /(LDG|LDL|STL|STG|LDS|STS)[A-Z0-9.]*/){n[fn" "substr($0, RSTART, RLENGTH)]++}
         END{for (k in n) print k, n[k]}' /tmp/vx/sass.txt | sort > "$OUT/sass_check.txt"
    grep -m3 -n "LDG.E.128.CONSTANT" /tmp/vx/sass.txt >> "$OUT/sass_check.txt"
    grep "_Z15vx_kernel_tiledILi1E" "$OUT/sass_check.txt"
    ;;
  bunny)
    stamp "bunny 512"
    timeout 120 $B/voxlod convert $D/bunny.ply /tmp/vx/bunny512.svo --res 512 2>&1 | tail -n 1
    timeout 400 $B/bench_nanovdb /tmp/vx/bunny512.svo --size 1920x1080 --frames "$FRAMES" --views 8 \
      --sweep --lods --out "$OUT/bunny" --json "$OUT/bunny/bench.json"
    ;;
  dragon)
    stamp "dragon 2048"
    timeout 200 $B/voxlod convert $D/dragon.ply /tmp/vx/dragon2048.svo --res 2048 2>&1 | tail -n 1
    timeout 300 $B/bench_nanovdb /tmp/vx/dragon2048.svo --size 1920x1080 --frames "$FRAMES" --views 8 \
      --lods --out "$OUT/dragon" --json "$OUT/dragon/bench.json"
    ;;
  dragon4k)
    stamp "dragon 4096"
    timeout 240 $B/voxlod convert $D/dragon.ply /tmp/vx/dragon4096.svo --res 4096 2>&1 | tail -n 1
    mkdir -p /tmp/vx/d4k
    timeout 300 $B/bench_nanovdb /tmp/vx/dragon4096.svo --size 1920x1080 --frames "$FRAMES" --views 8 \
      --lods --out /tmp/vx/d4k --json /tmp/vx/d4k/bench.json
    cat /tmp/vx/d4k/bench.json 2>/dev/null
    ;;
  color)
    # Colour: convert --gpu against --cpu (same file) on the textured meshes of devdata/color,
    # the time colour adds to convert --gpu (against --no-color, best of 3), and the frame time
    # of coloured trees against grey ones (bench_color: CUDA events, median of the frames).
    stamp "colour"
    medtime() { # median "total" and "write" (and "colour") of 5 runs of convert "$@"
      for k in 1 2 3 4 5; do
        $B/voxlod convert "$@" 2>&1 | tr '\r' '\n' | awk '
          /on disk/ { for (i = 1; i < NF; i++) { if ($i == "write") w = $(i + 1); if ($i == "total") t = $(i + 1) } }
          /: colour [0-9.]+s/ { for (i = 1; i < NF; i++) if ($i == "colour") c = $(i + 1) }
          END { gsub(/[s,]/, "", w); gsub(/[s,]/, "", t); gsub(/s/, "", c); print t, w, (c == "" ? 0 : c) }'
      done | sort -n | sed -n 3p
    }
    C=$D/color
    for m in "$C/duck/duck.dae" "$C/spider/spider.obj" "$C/2cylinder_engine/2CylinderEngine.glb"; do
      n=$(basename "$m" | cut -d. -f1)
      for r in ${VX_COLOR_RES:-512 1024}; do
        echo "-- $n $r"
        timeout 280 $B/voxlod convert "$m" /tmp/vx/${n}_gpu.svo --res "$r" --gpu 2>&1 | tr '\r' '\n' | grep -v '%' | tail -n 3
        if [ "$r" -le "${VX_COLOR_CPU:-512}" ]; then
          timeout 280 $B/voxlod convert "$m" /tmp/vx/${n}_cpu.svo --res "$r" --cpu 2>&1 | tr '\r' '\n' | grep -v '%' | tail -n 1
          cmp /tmp/vx/${n}_gpu.svo /tmp/vx/${n}_cpu.svo && echo "SAME FILE $n $r"
        fi
        echo "convert --gpu, median of 5 (total write colour, s): with colour" \
             "$(medtime "$m" /tmp/vx/t.svo --res "$r" --gpu); --no-color" \
             "$(medtime "$m" /tmp/vx/t.svo --res "$r" --gpu --no-color)"
        timeout 60 $B/voxlod stats /tmp/vx/${n}_gpu.svo 2>&1 | tail -n 4
        [ -x $B/bench_color ] && timeout 200 $B/bench_color /tmp/vx/${n}_gpu.svo --size 1920x1080 --frames 30 --rounds 3 2>&1 | tail -n 8
        timeout 60 $B/voxlod render /tmp/vx/${n}_gpu.svo $OUT/${n}_${r}_albedo.png --gpu --shade albedo 2>&1 | tail -n 1
        timeout 60 $B/voxlod render /tmp/vx/${n}_gpu.svo /tmp/vx/${n}_cpu_albedo.png --cpu --shade albedo 2>&1 | tail -n 1
        cmp $OUT/${n}_${r}_albedo.png /tmp/vx/${n}_cpu_albedo.png && echo "SAME IMAGE $n $r (GPU and CPU, albedo)"
        rm -f /tmp/vx/${n}_gpu.svo /tmp/vx/${n}_cpu.svo /tmp/vx/t.svo
      done
    done
    ;;
  gpubuild)
    # convert --gpu against the CPU build (same file, byte for byte) and its time; peak RSS from
    # /usr/bin/time when present. VX_GB_RES: resolutions; VX_GB_CPU: the largest one the CPU
    # build also runs for the comparison.
    stamp "gpu build"
    conv() { # mesh res tag [--gpu]
      local tv=""
      [ -x /usr/bin/time ] && tv="/usr/bin/time -f peak_rss_kb=%M"
      $tv timeout 280 $B/voxlod convert "$1" /tmp/vx/$3.svo --res "$2" ${4:-} 2>&1 | tr '\r' '\n' | grep -v '%' | tail -n 4
    }
    for m in bunny dragon; do
      for r in ${VX_GB_RES:-512 2048 4096 8192}; do
        echo "-- $m $r"
        conv $D/$m.ply "$r" "${m}_${r}_gpu" --gpu
        if [ "$r" -le "${VX_GB_CPU:-4096}" ]; then
          conv $D/$m.ply "$r" "${m}_${r}_cpu"
          cmp /tmp/vx/${m}_${r}_gpu.svo /tmp/vx/${m}_${r}_cpu.svo && echo "SAME FILE $m $r"
          rm -f /tmp/vx/${m}_${r}_cpu.svo
        fi
        ls -l /tmp/vx/${m}_${r}_gpu.svo
        [ "$r" = 8192 ] && timeout 120 $B/voxlod stats /tmp/vx/${m}_${r}_gpu.svo 2>&1 | tail -n 18
        rm -f /tmp/vx/${m}_${r}_gpu.svo
      done
    done
    ;;
  zoom)
    # the model filling most of the frame (eye at 0.4 x the framing distance): most rays hit
    stamp "zoomed dragon 2048 and 4096"
    mkdir -p "$OUT/zoom2k" "$OUT/zoom4k"
    [ -f /tmp/vx/dragon2048.svo ] || timeout 200 $B/voxlod convert $D/dragon.ply /tmp/vx/dragon2048.svo --res 2048 2>&1 | tail -n 1
    timeout 200 $B/bench_nanovdb /tmp/vx/dragon2048.svo --size 1920x1080 --frames "$FRAMES" --views 8 \
      --zoom 0.4 --sweep --out "$OUT/zoom2k" --json "$OUT/zoom2k/bench.json"
    [ -f /tmp/vx/dragon4096.svo ] || timeout 240 $B/voxlod convert $D/dragon.ply /tmp/vx/dragon4096.svo --res 4096 2>&1 | tail -n 1
    timeout 200 $B/bench_nanovdb /tmp/vx/dragon4096.svo --size 1920x1080 --frames "$FRAMES" --views 8 \
      --zoom 0.4 --lods --out "$OUT/zoom4k" --json "$OUT/zoom4k/bench.json"
    ;;
  perf)
    # the speed benchmark: every model framed and zoomed (0.4), the kernel variants (--sweep:
    # block shapes, register caps, persistent) and NanoVDB, 50 frames
    FRAMES=${VX_FRAMES:-50}
    for m in dragon4096:4096 dragon2048:2048 bunny512:512; do
      name=${m%%:*}; res=${m##*:}; src=$D/dragon.ply
      [ "$name" = bunny512 ] && src=$D/bunny.ply
      stamp "perf $name"
      [ -f /tmp/vx/$name.svo ] || timeout 240 $B/voxlod convert $src /tmp/vx/$name.svo --res $res 2>&1 | tail -n 1
      for z in 0.4 1; do
        mkdir -p "$OUT/perf/$name-z$z"
        timeout 200 $B/bench_nanovdb /tmp/vx/$name.svo --size 1920x1080 --frames "$FRAMES" --views 8 \
          --zoom $z --sweep --out "$OUT/perf/$name-z$z" --json "$OUT/perf/$name-z$z/bench.json"
        rm -f "$OUT/perf/$name-z$z"/*.png
      done
    done
    stamp "voxlod bench dragon4096 zoomed"
    timeout 100 $B/voxlod bench /tmp/vx/dragon4096.svo --zoom 0.4 --lod 12,11,10,auto --frames 50
    ;;
  trees)
    # the benchmark trees, built on the GPU (convert --gpu gives the CPU's file, GPU_BUILD.md)
    stamp "trees (convert --gpu)"
    for m in bunny512:bunny:512 dragon2048:dragon:2048 dragon4096:dragon:4096; do
      IFS=: read -r name src res <<< "$m"
      [ -f /tmp/vx/$name.svo ] || timeout 120 $B/voxlod convert $D/$src.ply /tmp/vx/$name.svo --res $res --gpu -q 2>&1 | tail -n 2
      # the same tree from the code before a change (it may not read this build's files)
      [ -x $B/voxlod_base ] && { [ -f /tmp/vx/$name.base.svo ] || timeout 120 $B/voxlod_base convert \
        $D/$src.ply /tmp/vx/$name.base.svo --res $res --gpu -q 2>&1 | tail -n 2; }
    done
    ls -l /tmp/vx/*.svo
    ;;
  versus)
    # this build against $B/bench_nanovdb_base (the code before a change) in the same run: every
    # model framed and zoomed, the sweep (culling off, block shapes, caps) and NanoVDB
    FRAMES=${VX_FRAMES:-50}
    for name in dragon4096 dragon2048 bunny512; do
      for z in 0.4 1; do
        stamp "versus $name zoom $z"
        mkdir -p "/tmp/vx/vs/$name-z$z"
        if [ -x $B/bench_nanovdb_base ]; then
          echo "-- base:"
          bt=/tmp/vx/$name.svo
          [ -f /tmp/vx/$name.base.svo ] && bt=/tmp/vx/$name.base.svo
          timeout 100 $B/bench_nanovdb_base $bt --size 1920x1080 --frames "$FRAMES" \
            --views 8 --zoom $z --no-nanovdb --out /tmp/vx
        fi
        echo "-- this build:"
        timeout 200 $B/bench_nanovdb /tmp/vx/$name.svo --size 1920x1080 --frames "$FRAMES" --views 8 \
          --zoom $z ${VX_SWEEP---sweep} --out "/tmp/vx/vs/$name-z$z" --json "/tmp/vx/vs/$name-z$z/bench.json"
        cat "/tmp/vx/vs/$name-z$z/bench.json"
      done
    done
    cp /tmp/vx/vs/dragon4096-z0.4/voxlod.png "$OUT/voxlod_dragon4096_z04.png"
    stamp "voxlod bench dragon4096 zoomed, every level"
    timeout 100 $B/voxlod bench /tmp/vx/dragon4096.svo --zoom 0.4 --lod all --frames "$FRAMES"
    ;;
  big)
    # the dragon at 8192^3 (convert --gpu): voxlod bench framed and zoomed at the finest levels and
    # auto, NanoVDB on the zoomed views; then one `voxlod render` image of the 4096^3 tree end to
    # end (process start, file read, upload, frame, PNG) with --gpu and with --cpu
    stamp "dragon 8192"
    [ -f /tmp/vx/dragon8192.svo ] || timeout 200 $B/voxlod convert $D/dragon.ply /tmp/vx/dragon8192.svo \
      --res 8192 --gpu -q 2>&1 | tail -n 2
    ls -l /tmp/vx/dragon8192.svo
    for z in 1 0.4; do
      timeout 200 $B/voxlod bench /tmp/vx/dragon8192.svo --zoom $z --lod 13,12,11,auto --frames "$FRAMES"
    done
    mkdir -p /tmp/vx/nv8k
    timeout 240 $B/bench_nanovdb /tmp/vx/dragon8192.svo --size 1920x1080 --frames "$FRAMES" --views 8 \
      --zoom 0.4 --out /tmp/vx/nv8k
    stamp "single images (dragon 4096^3)"
    [ -f /tmp/vx/dragon4096.svo ] || timeout 120 $B/voxlod convert $D/dragon.ply /tmp/vx/dragon4096.svo \
      --res 4096 --gpu -q 2>&1 | tail -n 2
    TIMEFORMAT="%R s wall"
    for p in gpu cpu gpu; do
      echo "-- voxlod render --$p"
      time timeout 100 $B/voxlod render /tmp/vx/dragon4096.svo /tmp/vx/r_$p.png --size 1920x1080 --$p
    done
    # the same bytes only where no pixel differs (test_gpu_render bounds how many may)
    cmp -s /tmp/vx/r_gpu.png /tmp/vx/r_cpu.png && echo "--gpu and --cpu PNGs: same bytes" ||
      echo "--gpu and --cpu PNGs: differ"
    ;;
  lib)
    # the library's renderer object: the first image and every later one at 1080p and 720p (the
    # dragon at 4096^3, framed and zoomed), an orbit of 8 images from one upload, GPU against CPU
    # images, and the same file from convert --gpu and the CPU at 2048^3
    stamp "library: the same file from --gpu and the CPU"
    [ -f /tmp/vx/dragon4096.svo ] || timeout 120 $B/voxlod convert $D/dragon.ply /tmp/vx/dragon4096.svo \
      --res 4096 --gpu 2>&1 | tail -n 3
    timeout 100 $B/voxlod convert $D/dragon.ply /tmp/vx/d2k_gpu.svo --res 2048 --gpu -q
    timeout 200 $B/voxlod convert $D/dragon.ply /tmp/vx/d2k_cpu.svo --res 2048 --cpu -q
    cmp /tmp/vx/d2k_gpu.svo /tmp/vx/d2k_cpu.svo && echo "SAME FILE dragon 2048 --gpu / --cpu"
    stamp "library: bench (first image, then per image with the copy back)"
    for z in 1 0.4; do
      timeout 200 $B/voxlod bench /tmp/vx/dragon4096.svo --zoom $z --lod 12,auto --frames 50 --gpu
    done
    timeout 100 $B/voxlod bench /tmp/vx/dragon4096.svo --size 1280x720 --lod 12 --frames 50 --gpu
    stamp "library: render --views 8 (one upload)"
    TIMEFORMAT="%R s wall"
    time timeout 100 $B/voxlod render /tmp/vx/dragon4096.svo /tmp/vx/orbit.png --views 8 \
      --size 1920x1080 --gpu
    cp /tmp/vx/orbit_000.png "$OUT/orbit_000.png"
    for lod in 12 8 auto; do
      $B/voxlod render /tmp/vx/dragon4096.svo /tmp/vx/g_$lod.png --lod $lod --size 960x540 --gpu -q
      $B/voxlod render /tmp/vx/dragon4096.svo /tmp/vx/c_$lod.png --lod $lod --size 960x540 --cpu -q
      cmp -s /tmp/vx/g_$lod.png /tmp/vx/c_$lod.png && echo "lod $lod: GPU and CPU PNGs identical" ||
        echo "lod $lod: GPU and CPU PNGs differ (test_gpu_render bounds how many pixels may)"
    done
    ;;
  sample)
    # the CUDA sampler on the 4096^3 dragon: points near the surface (spread 2 and 0.5 voxels), in
    # Morton and random order, a level cut, and the CPU for comparison
    stamp "sampling (dragon 4096^3)"
    [ -f /tmp/vx/dragon4096.svo ] || timeout 120 $B/voxlod convert $D/dragon.ply /tmp/vx/dragon4096.svo \
      --res 4096 --gpu -q 2>&1 | tail -n 2
    for s in 2 0.5; do
      for o in morton random; do
        timeout 120 $B/voxlod bench /tmp/vx/dragon4096.svo --sample 2e8 --reps 10 --gpu --spread $s --order $o
      done
    done
    timeout 120 $B/voxlod bench /tmp/vx/dragon4096.svo --sample 2e8 --reps 10 --gpu --level 9
    timeout 120 $B/voxlod bench /tmp/vx/dragon4096.svo --sample 2e7 --reps 3 --cpu
    ;;
  tiledsample)
    # The first sampling call on the dragon at 32768^3 (8 tiles of 16384^3): every tile the points
    # reach read and decoded, the windows copied and their re-signed voxels found, then the later
    # calls (the search alone); CPU and GPU search, 10^6 points within 2 voxels of the surface.
    stamp "dragon 32768^3 tiled: convert"
    [ -f /tmp/vx/dragon32k.svo ] || /usr/bin/time -f "%e s, %M KiB peak" timeout 300 $B/voxlod \
      convert $D/dragon.ply /tmp/vx/dragon32k.svo --res 32768 --gpus all -q 2>&1 | tail -n 2
    for dev in --cpu --gpu; do
      stamp "bench --sample 1e6 $dev"
      /usr/bin/time -f "%e s wall, %M KiB peak" timeout 280 $B/voxlod bench /tmp/vx/dragon32k.svo \
        --sample 1e6 --reps 2 $dev 2>&1 | tail -n 4
    done
    ;;
  tiledmesh)
    # Full-detail meshes: the dragon at 4096^3 joined, and the same surface in a 32768^3 box in
    # tiles of 2048^3 (devdata/d8.ply.gz: the dragon and a far triangle), meshed window by window.
    stamp "full-detail meshes"
    [ -f /tmp/vx/d8.ply ] || gzip -dc $D/d8.ply.gz > /tmp/vx/d8.ply
    [ -f /tmp/vx/dragon4096.svo ] || timeout 120 $B/voxlod convert $D/dragon.ply /tmp/vx/dragon4096.svo \
      --res 4096 --gpu -q 2>&1 | tail -n 2
    timeout 120 $B/voxlod convert /tmp/vx/d8.ply /tmp/vx/d8t11.svo --res 32768 --tile-depth 11 --gpu -q
    for f in dragon4096 d8t11; do
      echo "-- voxlod mesh $f.svo"
      /usr/bin/time -f "%e s wall, %M KiB peak" timeout 280 $B/voxlod mesh /tmp/vx/$f.svo \
        /tmp/vx/m.ply 2>&1 | tr '\r' '\n' | grep -v "%" | tail -n 6
      rm -f /tmp/vx/m.ply
    done
    ;;
  samplecli)
    # voxlod sample on the GPU against the CPU, on a tree and a tiled file read tile by tile: the
    # same bytes (sample.h's rule is one header). Points: devdata/bunny_points.npy (made beside
    # the bundle from the CPU build of the same tree).
    stamp "voxlod sample --gpu"
    timeout 120 $B/voxlod convert data/bunny.ply /tmp/vx/b512.svo --res 512 --gpu -q
    timeout 120 $B/voxlod convert data/bunny.ply /tmp/vx/b512t.svo --res 512 --tile-depth 6 --gpu -q
    P=$D/bunny_points.npy
    for run in "b512.svo g --gpu" "b512.svo c --cpu" "b512t.svo tg --gpu --tiles" "b512t.svo tc --cpu --tiles"; do
      set -- $run
      f=$1 o=$2
      shift 2
      timeout 120 $B/voxlod sample /tmp/vx/$f $P /tmp/vx/s_$o.npy --gradient "$@"
      timeout 120 $B/voxlod sample /tmp/vx/$f $P /tmp/vx/s5_$o.npy --lod 5 "$@" -q
    done
    for p in "g c" "tg tc" "tc c"; do
      set -- $p
      for l in s s5; do
        cmp -s /tmp/vx/${l}_$1.npy /tmp/vx/${l}_$2.npy && echo "$l: $1 = $2 (same bytes)" ||
          echo "$l: $1 and $2 DIFFER"
      done
    done
    ;;
  python)
    # the Python package (a cp312 wheel built here, carried as .whl) on the device's Python, with
    # its torch and cupy: the whole pytest suite, GPU arrays included
    stamp "python package"
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl &&
      PYTHONPATH=/tmp/site VOXLOD_CLI=$PWD/$B/voxlod timeout 400 python3 -m pytest -q \
        -p no:cacheprovider python/tests 2>&1 | tail -n 25
    ;;
  viewer)
    # voxlod view --gpu: the protocol test (no browser there), then the served frame times
    stamp "viewer (--gpu)"
    export PYTHONPATH=$PWD/$D/pylib PYTHONUNBUFFERED=1
    timeout 300 python3 tests/test_viewer_protocol.py $B/voxlod data --gpu 2>&1 | tail -n 8
    [ -f /tmp/vx/dragon4096.svo ] || timeout 120 $B/voxlod convert $D/dragon.ply /tmp/vx/dragon4096.svo \
      --res 4096 --gpu -q 2>&1 | tail -n 2
    timeout 200 python3 bench/viewer_bench.py $B/voxlod /tmp/vx/dragon4096.svo --gpu --frames 300 \
      --warmup 30 --label "dragon 4096^3" | tee "$OUT/viewer_bench.md"
    [ -f /tmp/vx/dragon8192.svo ] || timeout 200 $B/voxlod convert $D/dragon.ply /tmp/vx/dragon8192.svo \
      --res 8192 --gpu -q 2>&1 | tail -n 2
    timeout 200 python3 bench/viewer_bench.py $B/voxlod /tmp/vx/dragon8192.svo --gpu --frames 300 \
      --warmup 30 --label "dragon 8192^3" | tee -a "$OUT/viewer_bench.md"
    ;;
  colortiles)
    # Coloured tiled trees: tiles built and coloured on the GPU against the CPU's (the same
    # file), the time colour adds to a tiled convert --gpu (against --no-color, median of 3, with
    # the peak RSS), and the tiled file drawn unlit on the GPU within a budget. VX_CT_MESHES:
    # some of duck spider 2CylinderEngine; VX_BASE: a folder with a voxlod and lib/libvoxlod.so.0
    # built from the code before a change, whose coloured runs alternate with these.
    stamp "coloured tiles"
    C=$D/color
    tv=""
    [ -x /usr/bin/time ] && tv="/usr/bin/time -f peak_rss_kb=%M"
    for m in "$C/duck/duck.dae" "$C/spider/spider.obj" "$C/2cylinder_engine/2CylinderEngine.glb"; do
      n=$(basename "$m" | cut -d. -f1)
      case " ${VX_CT_MESHES:-duck spider 2CylinderEngine} " in *" $n "*) ;; *) continue ;; esac
      # (the engine's CPU build at 2048^3 takes longer than the limit: compared at 1024^3)
      cr=2048
      [ "$n" = 2CylinderEngine ] && cr=1024
      echo "-- $n ${cr}^3 in tiles of 256^3: GPU against CPU"
      timeout 280 $B/voxlod convert "$m" /tmp/vx/${n}_tg.svo --res $cr --tile-depth 8 --gpu 2>&1 | tr '\r' '\n' | grep -E "colour of|coloured by|on disk" | tail -n 3
      timeout 280 $B/voxlod convert "$m" /tmp/vx/${n}_tc.svo --res $cr --tile-depth 8 --cpu -q 2>&1 | tail -n 1
      cmp /tmp/vx/${n}_tg.svo /tmp/vx/${n}_tc.svo && echo "SAME FILE $n $cr tiled (GPU and CPU)"
      for r in ${VX_CT_RES:-4096}; do
        for c in "" --no-color; do
          echo "-- $n ${r}^3 in tiles of 1024^3 ${c:-(colour)}, 3 runs"
          for k in 1 2 3; do
            timeout 280 $tv $B/voxlod convert "$m" /tmp/vx/${n}_t.svo --res "$r" --tile-depth 10 --gpu \
              ${c} 2>&1 | tr '\r' '\n' | grep -E "on disk|peak_rss|tiles by|colour of|coloured by" | tail -n 4
            if [ -n "${VX_BASE:-}" ] && [ -z "$c" ]; then
              echo "- base:"
              LD_LIBRARY_PATH=$VX_BASE/lib:$LD_LIBRARY_PATH timeout 280 $tv $VX_BASE/voxlod convert \
                "$m" /tmp/vx/${n}_tb.svo --res "$r" --tile-depth 10 --gpu 2>&1 | tr '\r' '\n' |
                grep -E "on disk|peak_rss|tiles by|colour of|coloured by" | tail -n 4
              cmp -s /tmp/vx/${n}_t.svo /tmp/vx/${n}_tb.svo && echo "SAME FILE $n $r (base and this)"
            fi
          done
        done
        timeout 60 $B/voxlod convert "$m" /tmp/vx/${n}_t.svo --res "$r" --tile-depth 10 --gpu -q 2>&1 | tail -n 1
        timeout 60 $B/voxlod stats /tmp/vx/${n}_t.svo 2>&1 | grep -E "colour|tiled"
        timeout 120 $B/voxlod render /tmp/vx/${n}_t.svo "$OUT/${n}_${r}_tiled_albedo.png" --gpu \
          --shade albedo --budget 256M --size 960x720 2>&1 | tail -n 1
      done
      rm -f /tmp/vx/${n}_t*.svo
    done
    ;;
  tiledrender)
    # A tree past 16384^3 drawn within a GPU memory budget: the dragon at 32768^3 (8 tiles of
    # 16384^3) converted on this machine's GPUs, then `bench` at 1080p from one view with budgets
    # that force eviction (the kernel, CUDA events, median of 50 frames, after the tiles the view
    # wants are read), and the viewer served over its websocket with tiles streamed while the
    # camera orbits (frames never wait for a tile).
    stamp "dragon 32768^3 tiled: convert"
    export PYTHONPATH=$PWD/$D/pylib PYTHONUNBUFFERED=1
    [ -f /tmp/vx/dragon32k.svo ] || /usr/bin/time -f "%e s, %M KiB peak" timeout 300 $B/voxlod \
      convert $D/dragon.ply /tmp/vx/dragon32k.svo --res 32768 --gpus all -q 2>&1 | tail -n 2
    $B/voxlod stats /tmp/vx/dragon32k.svo 2>&1 | head -n 4
    for b in ${VX_BUDGETS:-2G 8G 24G}; do
      stamp "bench --budget $b"
      timeout 240 $B/voxlod bench /tmp/vx/dragon32k.svo --gpu --size 1920x1080 --frames 50 --views 1 \
        --lod 15,auto --budget "$b" 2>&1 | tee -a "$OUT/tiled_render.txt"
    done
    timeout 120 $B/voxlod render /tmp/vx/dragon32k.svo "$OUT/dragon32k_2G.png" --gpu --size 1920x1080 \
      --budget 2G 2>&1 | tee -a "$OUT/tiled_render.txt"
    stamp "viewer --budget"
    for b in ${VX_VIEW_BUDGETS:-2G 8G}; do
      timeout 240 python3 bench/viewer_bench.py $B/voxlod /tmp/vx/dragon32k.svo --gpu --frames 300 \
        --warmup 30 --sizes 1920x1080 --budget "$b" --label "dragon 32768^3, budget $b" |
        tee -a "$OUT/viewer_bench.md"
      timeout 240 python3 bench/viewer_bench.py $B/voxlod /tmp/vx/dragon32k.svo --gpu --still \
        --sizes 1920x1080 --budget "$b" --label "dragon 32768^3, budget $b, one view" |
        tee -a "$OUT/viewer_bench.md"
    done
    ;;
  ncu)
    # Nsight Compute on one frame (view 0, zoomed dragon 4096^3) of the base and of this build:
    # the details page (occupancy, pipes, stall reasons, memory) and the per-instruction SASS page
    stamp "ncu"
    mkdir -p "$OUT/ncu"
    for v in ${VX_NCU:-base new}; do
      bin=$B/voxlod
      [ $v = base ] && bin=$B/voxlod_base
      [ -x $bin ] || continue
      timeout 240 ncu --set full --import-source yes -k regex:vx_kernel_tiled --launch-skip 8 \
        --launch-count 1 -f -o /tmp/vx/prof_$v $bin bench $([ $v = base ] && [ -f /tmp/vx/dragon4096.base.svo ] && echo /tmp/vx/dragon4096.base.svo || echo /tmp/vx/dragon4096.svo) --zoom 0.4 \
        --lod 12 --frames 3 > /tmp/vx/ncu_$v.log 2>&1 || tail -n 20 /tmp/vx/ncu_$v.log
      ncu -i /tmp/vx/prof_$v.ncu-rep --page details --csv > "$OUT/ncu/details_$v.csv" 2>&1
      ncu -i /tmp/vx/prof_$v.ncu-rep --page source --csv --print-source sass \
        > "$OUT/ncu/sass_$v.csv" 2>&1 || tail -n 5 "$OUT/ncu/sass_$v.csv"
      grep -E '"(Duration|Registers Per Thread|Achieved Occupancy|Issue Slots Busy|Executed Ipc Active|Branch Efficiency|Avg. Divergent Branches|L1/TEX Hit Rate|L2 Hit Rate|Memory Throughput|Compute \(SM\) Throughput|Warp Cycles Per Issued Instruction|Avg. Active Threads Per Warp|Executed Instructions)"' "$OUT/ncu/details_$v.csv" | cut -d, -f12- | head -40
    done
    ;;
  variants)
    # every model framed and zoomed, this build (with the sweep of kernel variants and NanoVDB)
    # against $B/bench_nanovdb_base (the code before a change) in the same run, 50
    # frames; then `voxlod bench --lod all` on the zoomed 4096^3 dragon. The trees are converted
    # first (CPU), in the background of the tests, so that no conversion runs during a timing.
    FRAMES=${VX_FRAMES:-50}
    (
      timeout 60 $B/voxlod convert $D/bunny.ply /tmp/vx/bunny512.svo --res 512 2>&1 | tail -n 1
      timeout 100 $B/voxlod convert $D/dragon.ply /tmp/vx/dragon2048.svo --res 2048 2>&1 | tail -n 1
      timeout 200 $B/voxlod convert $D/dragon.ply /tmp/vx/dragon4096.svo --res 4096 2>&1 | tail -n 1
    ) > /tmp/vx/convert.log 2>&1 &
    cpid=$!
    stamp "gpu tests (while converting)"
    export VOXLOD_DATA_DIR=$PWD/data VOXLOD_TEST_MESHES=$PWD/tests/data/meshes
    for t in $B/gputests/test_*; do
      [ -x "$t" ] || continue
      timeout 200 "$t" > /tmp/vx/t.log 2>&1
      rc=$?
      tail -n 40 /tmp/vx/t.log
      echo "RESULT $(basename "$t"): rc=$rc ($([ $rc = 0 ] && echo pass || ([ $rc = 77 ] && echo skip || echo FAIL)))"
    done
    stamp "sass check"
    cuobjdump --dump-sass "$B/lib/libvoxlod.so" > /tmp/vx/sass.txt 2>&1 || echo "cuobjdump failed"
    awk '/Function : /{fn=$3}
         match($0, /(LDG|LDL|STL|STG|LDS|STS)[A-Z0-9.]*/){n[fn" "substr($0, RSTART, RLENGTH)]++}
         END{for (k in n) print k, n[k]}' /tmp/vx/sass.txt | sort > "$OUT/sass_check.txt"
    grep "_Z15vx_kernel_tiledILi1E" "$OUT/sass_check.txt"
    stamp "waiting for the conversions"
    wait $cpid
    cat /tmp/vx/convert.log
    for name in bunny512 dragon2048 dragon4096; do
      for z in 1 0.4; do
        stamp "variants $name zoom $z"
        mkdir -p "$OUT/variants/$name-z$z"
        if [ -x $B/bench_nanovdb_base ]; then
          echo "-- base (the code before the change):"
          timeout 100 $B/bench_nanovdb_base /tmp/vx/$name.svo --size 1920x1080 --frames "$FRAMES" \
            --views 8 --zoom $z --no-nanovdb
        fi
        echo "-- this build:"
        timeout 150 $B/bench_nanovdb /tmp/vx/$name.svo --size 1920x1080 --frames "$FRAMES" --views 8 \
          --zoom $z --sweep --out "$OUT/variants/$name-z$z" --json "$OUT/variants/$name-z$z/bench.json"
        [ "$name-$z" = dragon4096-0.4 ] || rm -f "$OUT/variants/$name-z$z"/*.png
      done
    done
    stamp "voxlod bench dragon4096 zoomed, every level"
    timeout 100 $B/voxlod bench /tmp/vx/dragon4096.svo --zoom 0.4 --lod all --frames "$FRAMES"
    ;;
  esac
done
stamp "done"
grep -h "^RESULT\|Mrays" "$OUT/gpu_log.txt" | tail -n 60
