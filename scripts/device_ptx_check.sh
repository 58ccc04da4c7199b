#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# device_ptx_check.sh - does the PTX path of the fat binary run, and give the same images?
#
# Two builds of the same code: build-gpu with sm_90 machine code (+ compute_90 PTX), as
# scripts/device_bundle.sh makes it, and build-ptx with compute_75 PTX only, which an H100 can
# run only by compiling the PTX at load time (JIT), as a GPU newer than the toolkit would. On the
# GPU machine, each build runs the GPU tests and renders, with CUDA_FORCE_PTX_JIT=1 (the driver
# ignores machine code and compiles the PTX) and without; every image and every GPU-built .svo is
# compared byte for byte with the sm_90 build's. Then the PTX build runs with
# CUDA_DISABLE_PTX_JIT=1, so that the GPU has no usable code: the library must say so once
# (naming the GPU and its compute capability) and give the CPU's result; with --gpu, an error.
#
# 1. Here (no GPU needed; ~20 min on 2 cores; meshes from ../shared for device_bundle.sh):
#      bash scripts/device_ptx_check.sh prepare
#    builds both (scripts/device_bundle.sh twice) and packs what the check runs, both builds'
#    voxlod, libraries and GPU tests, into build-ptxcheck/pack.tar.gz (one path to carry, a
#    third of their size).
# 2. On the GPU machine, the device tool's `run` with carry ["build-ptxcheck"] and timeout_s 600:
#      bash scripts/device_ptx_check.sh run
#    or some of its steps, in this order by default: renders convert nojit tests, e.g.
#      bash scripts/device_ptx_check.sh run tests   (VX_TEST_VARIANTS: sm90 sm90_jit ptx ptx_jit)
#    Results under $OUT: ptx_check.txt (one PASS/FAIL/SKIP line per check, then the summary),
#    ptx_log.txt (everything), bunny_sm90.png and bunny_ptx_jit.png (one view of each).
#    Exit status 0 when every check passed.
#
# Meshes: data/bunny.ply (in the repository, so it travels with the tree).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
G=build-gpu # sm_90
P=build-ptx # compute_75 PTX only

if [ "${1:-}" = prepare ]; then
  set -e
  cd "$ROOT"
  VX_BUILD=$ROOT/$G bash scripts/device_bundle.sh test_gpu_probe
  VX_BUILD=$ROOT/$P VX_CUDA_ARCHS=75-virtual bash scripts/device_bundle.sh test_gpu_probe
  # what each build compiles: sm_90 machine code and compute_90 PTX; compute_75 PTX only
  for b in $G $P; do
    echo "  $b: $(grep -o -- '--generate-code=[^ ]*' $b/marcher/CMakeFiles/*/flags.make | sort -u |
      tr '\n' ' ')"
  done
  # the PTX build needs only its own libvoxlod.so: the other libraries are build-gpu/lib's
  mkdir -p build-ptxcheck
  tar czf build-ptxcheck/pack.tar.gz $G/voxlod $G/lib $G/gputests $P/voxlod $P/lib/libvoxlod.so* \
    $P/gputests
  du -sh build-ptxcheck/pack.tar.gz | sed 's/^/  /'
  echo "carry: [\"build-ptxcheck\"]"
  echo "run:   bash scripts/device_ptx_check.sh run"
  exit 0
fi
[ "${1:-}" = run ] || { sed -n '2,25p' "$0"; exit 2; }

cd "$ROOT"
[ -f build-ptxcheck/pack.tar.gz ] && tar xzf build-ptxcheck/pack.tar.gz
OUT=${OUT:-/tmp/vx_out}
W=/tmp/vx_ptx
mkdir -p "$OUT" "$W"
exec > >(tee -a "$OUT/ptx_log.txt") 2>&1
SUM=$OUT/ptx_check.txt
: > "$SUM"
pass=0 fail=0 skip=0
result() { # result NAME OK(0/1) DETAIL
  if [ "$2" = 0 ]; then pass=$((pass + 1)); echo "PASS $1 ${3:-}" | tee -a "$SUM"
  else fail=$((fail + 1)); echo "FAIL $1 ${3:-}" | tee -a "$SUM"; fi
}
T0=$(date +%s)
stamp() { echo "== $1 ($(( $(date +%s) - T0 )) s)"; }

# The environment of one variant: its build, and how the driver may use the PTX. Each build's
# binaries load their own libvoxlod.so (LD_LIBRARY_PATH is searched before their RUNPATH, so it
# names the build's lib first; the other libraries are the same copies in both).
# A fresh JIT cache per variant, so that the first launch really compiles.
variant() { # variant NAME -> sets B and the env
  case $1 in
  sm90) B=$G; JIT=() ;;
  sm90_jit) B=$G; JIT=(CUDA_FORCE_PTX_JIT=1) ;;
  ptx) B=$P; JIT=() ;;
  ptx_jit) B=$P; JIT=(CUDA_FORCE_PTX_JIT=1) ;;
  ptx_nojit) B=$P; JIT=(CUDA_DISABLE_PTX_JIT=1) ;;
  esac
  ENV=(env LD_LIBRARY_PATH="$PWD/$B/lib:$PWD/$G/lib" CUDA_CACHE_PATH="$W/cache_$1" "${JIT[@]}")
}

stamp "device"
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv
for b in $G $P; do
  echo "-- $b/voxlod loads: $(LD_LIBRARY_PATH=$PWD/$b/lib:$PWD/$G/lib ldd $b/voxlod | grep -o '/[^ ]*libvoxlod[^ ]*')"
  cuobjdump --list-elf --list-ptx "$b/lib/libvoxlod.so" 2>/dev/null | grep -oE '(sm|compute)_[0-9]+' |
    sort | uniq -c | tr '\n' ' '
  echo
done

steps=${*:2}
steps=${steps:-"renders convert nojit tests"}
el() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}'; } # seconds since $1

# pixel_diff A B: the number of differing pixels and the largest channel difference (PNG decoded
# with zlib: stb writes 8-bit RGB, non-interlaced, any row filter)
pixel_diff() {
  python3 - "$1" "$2" <<'PY'
import struct, sys, zlib
def load(p):
    d = open(p, 'rb').read(); i = 8; idat = b''; w = h = 0
    while i < len(d):
        n, t = struct.unpack('>I4s', d[i:i + 8]); c = d[i + 8:i + 8 + n]; i += 12 + n
        if t == b'IHDR': w, h = struct.unpack('>II', c[:8])
        elif t == b'IDAT': idat += c
    raw = zlib.decompress(idat); bpp = 3; stride = w * bpp; out = []; prev = bytearray(stride); o = 0
    for _ in range(h):
        f = raw[o]; row = bytearray(raw[o + 1:o + 1 + stride]); o += 1 + stride
        for x in range(stride):
            a = row[x - bpp] if x >= bpp else 0; b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
            if f == 1: row[x] = (row[x] + a) & 255
            elif f == 2: row[x] = (row[x] + b) & 255
            elif f == 3: row[x] = (row[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[x] = (row[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out.append(bytes(row)); prev = row
    return w, h, b''.join(out)
wa, ha, a = load(sys.argv[1]); wb, hb, b = load(sys.argv[2])
if (wa, ha) != (wb, hb): print('sizes differ'); sys.exit()
n = sum(1 for k in range(0, len(a), 3) if a[k:k + 3] != b[k:k + 3])
m = max((abs(x - y) for x, y in zip(a, b)), default=0)
print(f'{n} of {wa * ha} pixels differ, largest channel difference {m}')
PY
}

[ -f "$W/bunny.svo" ] || { variant sm90; timeout 120 "${ENV[@]}" $G/voxlod convert data/bunny.ply \
  "$W/bunny.svo" --res 512 -q 2>&1 | tail -n 2; }

for step in $steps; do
  case $step in
  renders)
    # the same tree (bunny 512^3) rendered by each variant: 4 views at the finest level, level 6
    # and auto, 1280x720, on the GPU; byte-identical PNGs to the sm_90 build's
    for v in sm90 sm90_jit ptx ptx_jit; do
      variant $v
      stamp "renders: $v"
      mkdir -p "$W/$v"
      s0=$EPOCHREALTIME
      rc=0
      for lod in 9 6 auto; do
        timeout 120 "${ENV[@]}" $B/voxlod render "$W/bunny.svo" "$W/$v/lod_$lod.png" --views 4 \
          --size 1280x720 --lod $lod --gpu > "$W/$v/render.log" 2>&1 || { rc=1; cat "$W/$v/render.log"; }
      done
      # the first run compiles the PTX where the variant must (a fresh JIT cache)
      result "render/$v: 3 runs of voxlod render --gpu" $rc "($(el "$s0") s)"
      [ $v = sm90 ] && continue
      for f in "$W"/sm90/*.png; do
        name=$(basename "$f")
        if cmp -s "$f" "$W/$v/$name"; then result "render/$v/$name: same bytes as sm90" 0
        else result "render/$v/$name: same bytes as sm90" 1 "($(pixel_diff "$f" "$W/$v/$name" 2>&1))"; fi
      done
    done
    cp "$W/sm90/lod_auto_000.png" "$OUT/bunny_sm90.png" 2>/dev/null
    cp "$W/ptx/lod_auto_000.png" "$OUT/bunny_ptx_jit.png" 2>/dev/null
    ;;
  convert)
    # the tree built on the GPU by each variant: the CPU build's bytes (the GPU build is exact);
    # --gpu would fall back to the CPU with a note, which must not happen here
    stamp "convert --gpu"
    variant sm90
    [ -f "$W/cpu.svo" ] || timeout 200 "${ENV[@]}" $G/voxlod convert data/bunny.ply "$W/cpu.svo" \
      --res 1024 --cpu -q
    for v in sm90 sm90_jit ptx ptx_jit; do
      variant $v
      s0=$EPOCHREALTIME
      timeout 200 "${ENV[@]}" $B/voxlod convert data/bunny.ply "$W/gpu_$v.svo" --res 1024 --gpu \
        > "$W/conv.log" 2>&1
      rc=$?
      t=$(el "$s0")
      tail -n 3 "$W/conv.log"
      notes=$(grep -c "unavailable" "$W/conv.log")
      cmp -s "$W/cpu.svo" "$W/gpu_$v.svo"
      same=$?
      result "convert/$v: --gpu tree = --cpu tree, on the GPU" \
        $([ $rc = 0 ] && [ $same = 0 ] && [ "$notes" = 0 ] && echo 0 || echo 1) \
        "(rc=$rc, cmp=$same, fallback notes $notes, $t s)"
    done
    ;;
  nojit)
    # no usable code (PTX only, JIT forbidden): one note naming the GPU and the CPU's result;
    # an error where the GPU is required
    stamp "no usable code for the GPU (ptx build, CUDA_DISABLE_PTX_JIT=1)"
    cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' ')
    variant ptx_nojit
    timeout 300 "${ENV[@]}" VX_EXPECT_NO_IMAGE=1 $P/gputests/test_gpu_probe > "$W/t.log" 2>&1
    rc=$?
    cat "$W/t.log"
    result "nojit/test_gpu_probe (expects no usable code)" $rc "(rc=$rc)"
    timeout 120 "${ENV[@]}" $P/voxlod render "$W/bunny.svo" "$W/nojit_auto.png" --size 1280x720 \
      > "$W/auto.log" 2>&1
    rc=$?
    cat "$W/auto.log"
    notes=$(grep -c "compute capability $cc" "$W/auto.log")
    result "nojit/render (auto): exit 0, one note naming compute capability $cc" \
      $([ $rc = 0 ] && [ "$notes" = 1 ] && echo 0 || echo 1) "(rc=$rc, notes $notes)"
    variant sm90
    timeout 120 "${ENV[@]}" $G/voxlod render "$W/bunny.svo" "$W/cpu_ref.png" --size 1280x720 --cpu -q
    cmp -s "$W/cpu_ref.png" "$W/nojit_auto.png"
    result "nojit/render (auto) = render --cpu, byte for byte" $?
    variant ptx_nojit
    timeout 120 "${ENV[@]}" $P/voxlod render "$W/bunny.svo" "$W/nojit_gpu.png" --gpu > "$W/gpu.log" 2>&1
    rc=$?
    cat "$W/gpu.log"
    result "nojit/render --gpu: an error naming compute capability $cc, no image" \
      $([ $rc != 0 ] && grep -q "compute capability $cc" "$W/gpu.log" && [ ! -e "$W/nojit_gpu.png" ] &&
        echo 0 || echo 1) "(rc=$rc)"
    variant sm90
    [ -f "$W/cpu.svo" ] || timeout 200 "${ENV[@]}" $G/voxlod convert data/bunny.ply "$W/cpu.svo" \
      --res 1024 --cpu -q
    variant ptx_nojit
    timeout 200 "${ENV[@]}" $P/voxlod convert data/bunny.ply "$W/nojit.svo" --res 1024 --gpu \
      > "$W/conv.log" 2>&1
    rc=$?
    cat "$W/conv.log"
    cmp -s "$W/cpu.svo" "$W/nojit.svo"
    same=$?
    notes=$(grep -c "compute capability $cc" "$W/conv.log")
    result "nojit/convert --gpu: one note, then the CPU's tree" \
      $([ $rc = 0 ] && [ $same = 0 ] && [ "$notes" = 1 ] && echo 0 || echo 1) \
      "(rc=$rc, cmp=$same, notes $notes)"
    ;;
  tests)
    # the GPU tests: the sm_90 build as it is and forced to JIT its PTX, the PTX build as it is
    # (JIT: it has no machine code); the probe test must find the GPU usable in each
    export VOXLOD_DATA_DIR=$PWD/data
    for v in ${VX_TEST_VARIANTS:-sm90 sm90_jit ptx}; do
      variant $v
      stamp "gpu tests: $v"
      for t in "$B"/gputests/test_gpu_*; do
        [ -x "$t" ] || continue
        s0=$EPOCHREALTIME
        timeout 300 "${ENV[@]}" VX_EXPECT_GPU=1 "$t" > "$W/t.log" 2>&1
        rc=$?
        tail -n 8 "$W/t.log"
        # 77: the test skipped itself; with a GPU there, a check to read (its reason is printed)
        if [ $rc = 77 ]; then
          skip=$((skip + 1))
          echo "SKIP tests/$v/$(basename "$t") ($(grep -m1 '^SKIP' "$W/t.log"))" | tee -a "$SUM"
        else
          result "tests/$v/$(basename "$t")" $([ $rc = 0 ] && echo 0 || echo 1) "(rc=$rc, $(el "$s0") s)"
        fi
      done
    done
    ;;
  *) echo "unknown step $step" ;;
  esac
done

stamp "done"
echo "summary: $pass passed, $fail failed, $skip skipped" | tee -a "$SUM"
[ $fail = 0 ]
