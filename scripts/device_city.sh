#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# device_city.sh - on the GPU machine: the synthetic city (scripts/make_city.py) converted at
# 32768^3 by one process on every GPU, and as tasks on a Dask LocalCluster (a scheduler and one
# worker per GPU), and the two files compared. Needs what scripts/device_bundle.sh builds
# (build-gpu), the cp312 wheel in .whl and the Dask wheels in devdata/dask (see the bundle's
# notes), devdata/dragon.ply.gz.
#
#   bash scripts/device_city.sh [make] [one] [dask]      (default: all three; results in $OUT)
#   VX_CITY_TRIANGLES=1e8 (default)
set -uo pipefail
OUT=${OUT:-/tmp/vx_out}
B=${VX_BUILD:-build-gpu}
D=devdata
export LD_LIBRARY_PATH=$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
mkdir -p /tmp/vx "$OUT"
exec > >(tee -a "$OUT/city_log.txt") 2>&1
T0=$(date +%s)
stamp() { echo "== $1 ($(( $(date +%s) - T0 )) s)"; }
[ -d /tmp/site/voxlod ] ||
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl $D/dask/*.whl
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
nproc
free -g | head -2
for s in ${*:-make one dask}; do
  case $s in
  make)
    stamp "make_city ${VX_CITY_TRIANGLES:-1e8}"
    [ -f /tmp/vx/city.ply ] || /usr/bin/time -f "%e s, %M KiB peak" python3 scripts/make_city.py \
      /tmp/vx/city.ply --triangles "${VX_CITY_TRIANGLES:-1e8}" --meshes $D/dragon.ply.gz
    ls -l /tmp/vx/city.ply
    ;;
  one)
    stamp "one process, every GPU"
    /usr/bin/time -f "%e s wall, %M KiB peak" $B/voxlod convert /tmp/vx/city.ply /tmp/vx/c1.svo \
      --res 32768 --gpus all 2>&1 | tail -n 25
    md5sum /tmp/vx/c1.svo
    ;;
  dask)
    stamp "Dask: a scheduler, one worker per GPU"
    python3 -m distributed.cli.dask_scheduler --port 8786 --no-dashboard >/tmp/vx/sched.log 2>&1 &
    sleep 3
    n=$(nvidia-smi -L | wc -l)
    for g in $(seq 0 $((n - 1))); do
      CUDA_VISIBLE_DEVICES=$g python3 -m distributed.cli.dask_worker tcp://127.0.0.1:8786 \
        --nthreads 2 --memory-limit 0 --no-dashboard >/tmp/vx/worker$g.log 2>&1 &
    done
    sleep 8
    /usr/bin/time -f "%e s wall, %M KiB peak (client)" python3 -m voxlod convert /tmp/vx/city.ply \
      /tmp/vx/c2.svo --res 32768 --scheduler tcp://127.0.0.1:8786 2>&1 | tail -n 15
    md5sum /tmp/vx/c2.svo
    [ -f /tmp/vx/c1.svo ] && { cmp /tmp/vx/c1.svo /tmp/vx/c2.svo && echo "IDENTICAL"; }
    grep -h -i "error\|killed\|memory" /tmp/vx/worker*.log | tail -n 5
    pkill -f distributed.cli.dask_worker
    pkill -f distributed.cli.dask_scheduler
    ;;
  esac
done
stamp "done"
