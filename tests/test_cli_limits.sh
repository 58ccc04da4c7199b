#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_cli_limits.sh VOXLOD - --mem-limit against hostile inputs, as a user runs them: each case
# either succeeds with the peak resident size of voxlod (and of its reader child) within the limit
# plus SLACK, or fails with the limit's message, a non-zero exit and no output file.
#   - exact duplicate triangles: dropped; 1 copy and 1000 copies give the same .svo byte for byte;
#   - many distinct triangles through the same voxels (jittered copies, large and small);
#   - long slivers stacked along the diagonal: the winding number's exact work is charged against the
#     limit (2,000 of them at 4096^3 took half an hour; now refused);
#   - a small .vdb level set upsampled 64 times (the cost follows the surface: the old enumeration
#     of every fine cell took 874 MiB at --res 512), its points checked against the analytic sphere;
#   - a dense .vdb level set (the reader's child was let past the limit);
#   - exports of a pruned depth-14 tree to every grid format.
# The inputs are generated here (python3; the .vdb files through pyopenvdb, skipped without it).
# Mesh builds under a limit run with --cpu: the CUDA runtime's own host memory (its context, a
# few hundred MiB) is not in the build's estimates. The duplicates' byte-for-byte checks run on
# the default device, so on a GPU machine they check the GPU build too.
# Peak sizes come from getrusage(RUSAGE_CHILDREN) in a python3 parent: the largest of voxlod and
# its descendants. SLACK covers what the estimates cannot see (allocator rounding, the C runtime).
set -u
V=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
SLACK_KIB=$((16 * 1024))
fails=0 passes=0
ok() { passes=$((passes + 1)); echo "ok   $1"; }
bad() { fails=$((fails + 1)); echo "FAIL $1"; }
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
# AddressSanitizer's shadow memory is resident but not ours: peaks are not checked under it
asan=0; ldd "$V" 2>/dev/null | grep -q libasan && asan=1

# peak_run OUT ERR CMD...: prints the exit code and the peak RSS (KiB) of CMD and its descendants
peak_run() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys
out, err = sys.argv[1], sys.argv[2]
with open(out, 'wb') as o, open(err, 'wb') as e:
    rc = subprocess.call(sys.argv[3:], stdout=o, stderr=e)
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
}
mib() { echo $(($1 / 1024)); }
kib_of() { # 256M -> KiB
  local v=${1%M}; echo $((v * 1024))
}

# bounded NAME LIMIT PATTERN OUTFILE CMD...: CMD run with --mem-limit LIMIT appended; passes when it
# succeeds within the limit (+ slack) or fails with PATTERN within it, leaving no OUTFILE
bounded() {
  local name=$1 lim=$2 pat=$3 outf=$4; shift 4
  local rc kib
  read rc kib < <(peak_run "$T/out" "$T/err" "$@" --mem-limit "$lim")
  local cap=$(($(kib_of "$lim") + SLACK_KIB))
  if [ $asan = 0 ] && [ "$kib" -gt "$cap" ]; then
    bad "$name: peak $(mib "$kib") MiB over --mem-limit $lim (exit $rc)"; cat "$T/err"; return 1
  fi
  if [ "$rc" = 0 ]; then
    ok "$name: done under --mem-limit $lim (peak $(mib "$kib") MiB)"; return 0
  fi
  if [ "$rc" -lt 128 ] && grep -qiE "$pat" "$T/err" && [ ! -e "$outf" ]; then
    ok "$name: refused under --mem-limit $lim (peak $(mib "$kib") MiB): $(head -c 120 "$T/err")"
    return 2
  fi
  bad "$name: exit $rc"; cat "$T/err"; return 1
}

# ---- meshes -------------------------------------------------------------------------------------
# gen OUT MODE N: binary PLY. MODE copies: N copies of one triangle, cycling through its three
# rotations, with N/4 reversed when N is "rev:N"; jitter: N copies with each vertex moved by up
# to 1e-4 (the triangle spans the grid); small: N triangles of 1/200 of the box, jittered inside
# the same few voxels at --res 64, plus one large triangle that sets the box; sliver: N copies of
# a sliver along the box's diagonal (width 1/700 of its length), each moved by up to 4e-3.
gen() {
  python3 - "$@" <<'PY'
import random, struct, sys
from array import array
out, mode, n = sys.argv[1], sys.argv[2], sys.argv[3]
rev = n.startswith('rev:')
n = int(n[4:] if rev else n)
rnd = random.Random(7)
A, B, C = (0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)
v = array('f'); f = []
if mode == 'sliver':
    for i in range(n):
        k = len(v) // 3
        d = [rnd.uniform(-4e-3, 4e-3) for j in range(3)]
        for p in ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0), (0.501, 0.499, 0.5)):
            v.extend(p[j] + d[j] for j in range(3))
        f.append((k, k + 1, k + 2))
elif mode == 'copies':
    v.extend(A + B + C + (0.0, 0.0, 1.0))
    rots = [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
    for i in range(n):
        t = rots[i % 3]
        f.append((t[0], t[2], t[1]) if rev and i % 4 == 3 else t)
else:
    s = 1.0 if mode == 'jitter' else 0.005
    o = (0.0, 0.0, 0.0) if mode == 'jitter' else (0.5, 0.5, 0.5)
    if mode == 'small':
        v.extend(A + B + C); f.append((0, 1, 2))
    for i in range(n):
        k = len(v) // 3
        for p in (A, B, C):
            v.extend(o[j] + s * p[j] + rnd.uniform(-1e-4, 1e-4) for j in range(3))
        f.append((k, k + 1, k + 2))
with open(out, 'wb') as fh:
    fh.write(b'ply\nformat binary_little_endian 1.0\nelement vertex %d\nproperty float x\n'
             b'property float y\nproperty float z\nelement face %d\nproperty list uchar int '
             b'vertex_indices\nend_header\n' % (len(v) // 3, len(f)))
    if sys.byteorder != 'little':
        v.byteswap()
    fh.write(v.tobytes())
    fh.write(b''.join(struct.pack('<B3i', 3, *t) for t in f))
PY
}

gen "$T/one.ply" copies 1
gen "$T/k.ply" copies 1000
gen "$T/rev.ply" copies rev:1000
gen "$T/many.ply" copies 100000
"$V" convert "$T/one.ply" "$T/one.svo" --res 64 -q 2>"$T/err" || { bad "1 triangle"; cat "$T/err"; }
"$V" convert "$T/k.ply" "$T/k.svo" --res 64 2>"$T/err" >/dev/null
if cmp -s "$T/one.svo" "$T/k.svo" && grep -q "999 exact duplicate triangles dropped" "$T/err"; then
  ok "1000 copies (3 rotations): 999 dropped, the .svo of 1 copy byte for byte"
else bad "1000 copies: not the .svo of one copy, or no note"; cat "$T/err"; fi
# reversed copies are another triangle (a double-sided sheet): one of each kept
"$V" convert "$T/rev.ply" "$T/rev.svo" --res 64 2>"$T/err" >/dev/null
if grep -q "998 exact duplicate triangles dropped" "$T/err"; then ok "reversed copies kept once"
else bad "reversed copies"; cat "$T/err"; fi
for res in 64 128; do
  rm -f "$T/many.svo"
  bounded "100,000 copies at $res^3" 128M "limit" "$T/many.svo" \
    "$V" convert "$T/many.ply" "$T/many.svo" --res $res --cpu -q
  r=$?
  if [ $r = 0 ] && [ $res = 64 ]; then
    cmp -s "$T/one.svo" "$T/many.svo" && ok "100,000 copies: the .svo of 1 copy" ||
      bad "100,000 copies: not the .svo of one copy"
  elif [ $r = 2 ]; then bad "100,000 copies at $res^3 refused: duplicates should cost nothing"; fi
done

# distinct triangles through the same voxels: large ones (each spans the grid) and small ones
gen "$T/jit.ply" jitter 20000
gen "$T/jitbig.ply" jitter 300000
gen "$T/small.ply" small 1000000
for lim in 128M 512M; do
  rm -f "$T/jit.svo"
  bounded "20,000 jittered large triangles" $lim "overlap" "$T/jit.svo" \
    "$V" convert "$T/jit.ply" "$T/jit.svo" --res 64 --cpu -q
done
rm -f "$T/jit.svo"
bounded "300,000 jittered large triangles at 256^3" 1024M "overlap" "$T/jit.svo" \
  "$V" convert "$T/jitbig.ply" "$T/jit.svo" --res 256 --cpu -q
[ $? = 2 ] || bad "300,000 jittered large triangles at 256^3 should be refused"
bounded "1,000,000 jittered small triangles in a few voxels" 1024M "overlap|needs at least" \
  "$T/small.svo" \
  "$V" convert "$T/small.ply" "$T/small.svo" --res 64 --cpu -q

# long slivers stacked along the diagonal: few overlaps (they pass the check above) and little
# memory, but every corner near the stack sums the winding number exactly over all 2,000 of them:
# about 37e9 solid angles at 4096^3, half an hour. Now charged against the limit and refused
# (the timeout only keeps a regression from hanging the suite: a refusal takes well under a
# minute of one core). Two threads and 400M: each thread's scratch and the file writer's workers
# (one per core) count against the limit, so on a machine of many cores a smaller limit would not
# even hold the out-of-core build's minimum
gen "$T/sliver.ply" sliver 2000
rm -f "$T/sliver.svo"
bounded "2,000 stacked slivers along the diagonal at 4096^3" 400M "overlap too much.*winding" \
  "$T/sliver.svo" timeout 600 "$V" convert "$T/sliver.ply" "$T/sliver.svo" --res 4096 --cpu -q \
  --threads 2
[ $? = 2 ] || bad "2,000 stacked slivers at 4096^3 should be refused by the winding work's bound"
# the GPU build counts the same work (where one runs: no CPU fallback note); its peak is not
# checked (the CUDA runtime's host memory is not in the estimates)
if "$V" convert "$T/one.ply" "$T/g.svo" --res 64 --gpu 2>"$T/gerr" >/dev/null &&
   ! grep -q "building on the CPU" "$T/gerr"; then
  rm -f "$T/sliver.svo"
  timeout 600 "$V" convert "$T/sliver.ply" "$T/sliver.svo" --res 4096 --gpu -q --mem-limit 1G \
    2>"$T/err"
  rc=$?
  if [ $rc != 0 ] && [ $rc -lt 124 ] && grep -qiE "overlap too much.*winding" "$T/err" &&
     [ ! -e "$T/sliver.svo" ]; then ok "2,000 stacked slivers on the GPU: refused"
  else bad "2,000 stacked slivers on the GPU: exit $rc"; cat "$T/err"; fi
else echo "skip the GPU's stacked slivers: no GPU build runs here"; fi

# ---- .vdb level sets ----------------------------------------------------------------------------
# (where this voxlod reads .vdb at all: the sanitizer build has no OpenVDB)
"$V" export "$T/one.svo" "$T/probe.vdb" -q 2>/dev/null && have_vdb=1 || have_vdb=0
rm -f "$T/probe.vdb"
if [ $have_vdb = 0 ]; then
  echo "skip .vdb cases: this voxlod was built without OpenVDB"
elif /usr/bin/python3 -c "import pyopenvdb, numpy" 2>/dev/null; then
  /usr/bin/python3 - "$T" <<'PY'
import sys, numpy as np, pyopenvdb as vdb
t = sys.argv[1]
g = vdb.createLevelSetSphere(radius=8.0, center=(0.0, 0.0, 0.0), voxelSize=1.0, halfWidth=3.0)
g.name = 'sphere'
vdb.write(t + '/sphere.vdb', grids=[g])
a = np.random.default_rng(3).uniform(-1.0, 1.0, (160, 160, 160)).astype(np.float32)
d = vdb.FloatGrid(background=3.0)
d.copyFromArray(a)
d.gridClass = vdb.GridClass.LEVEL_SET
d.name = 'noise'
vdb.write(t + '/noise.vdb', grids=[d])
PY
  # 96 KB, radius 8 voxels, 64x upsampled: every fine cell inside a straddling file cell used to be
  # a candidate (874 MiB here; --res 1024: 6.7 GB)
  bounded "sphere .vdb at 512^3" 256M "limit" "$T/s.svo" \
    "$V" convert "$T/sphere.vdb" "$T/s.svo" --res 512
  if [ $? = 0 ]; then
    h=$(grep -o "sampled at voxel size [0-9.e+-]*" "$T/err" | awk '{print $NF}')
    if "$V" export "$T/s.svo" "$T/s.ply" --surface-points -q 2>"$T/err2"; then
      on="sphere .vdb at 512^3: the surface points lie on the sphere"
      python3 - "$T/s.ply" "$h" <<'PY' && ok "$on" || bad "$on: no"
import math, struct, sys
data = open(sys.argv[1], 'rb').read()
h = float(sys.argv[2])
end = data.index(b'end_header\n') + len(b'end_header\n')
head = data[:end].decode()
n = int(head.split('element vertex ')[1].split()[0])
R = 8.0
worst, rec = 0.0, 24
for i in range(n):
    x, y, z = struct.unpack_from('<3f', data, end + i * rec)
    worst = max(worst, abs(math.sqrt(x * x + y * y + z * z) - R))
# a surface cell per fine voxel the sphere crosses: 1 to 2.5 times its area in fine voxels
area = 4 * math.pi * (R / h) ** 2
print("points %d (area %.0f voxels), worst |r - 8| = %.4f (fine voxel %.4f)" % (n, area, worst, h))
# OpenVDB's sphere is a level set of its own grid (voxel 1): its trilinear zero set lies within
# a few hundredths of a voxel of the analytic sphere at this radius; the points, one Newton step
# on each fine cell's field, within a fine voxel of it
sys.exit(0 if area <= n <= 2.5 * area and worst <= 0.05 + h else 1)
PY
    else bad "export of the sphere"; cat "$T/err2"; fi
  fi
  # a dense level set (every value a zero crossing) downsampled: the reader's child was allowed
  # 256 MiB whatever the limit
  bounded "dense 160^3 .vdb at 64^3" 100M "limit" "$T/n.svo" \
    "$V" convert "$T/noise.vdb" "$T/n.svo" --res 64 -q
else
  echo "skip .vdb cases: pyopenvdb or numpy not installed for /usr/bin/python3"
fi

# ---- exports of a pruned depth-14 tree -------------------------------------------------------
# a sphere and a far triangle: the box is large, the surface small; pruned to a few planes that the
# export subdivides back into 1.4 million level-14 cells
python3 - "$T/sph.ply" <<'PY'
import math, struct, sys
n, far = 64, 60.0
V, F = [], []
for i in range(n + 1):
    th = math.pi * i / n
    for j in range(2 * n):
        ph = math.pi * j / n
        V.append((math.sin(th) * math.cos(ph), math.sin(th) * math.sin(ph), math.cos(th)))
for i in range(n):
    for j in range(2 * n):
        a, b = i * 2 * n + j, i * 2 * n + (j + 1) % (2 * n)
        c, d = a + 2 * n, b + 2 * n
        if i > 0: F.append((a, b, d))
        if i < n - 1: F.append((a, d, c))
k = len(V)
V += [(far, far, far), (far + 0.01, far, far), (far, far + 0.01, far)]
F.append((k, k + 1, k + 2))
with open(sys.argv[1], 'wb') as f:
    f.write(b'ply\nformat binary_little_endian 1.0\nelement vertex %d\nproperty float x\n'
            b'property float y\nproperty float z\nelement face %d\nproperty list uchar int '
            b'vertex_indices\nend_header\n' % (len(V), len(F)))
    f.write(b''.join(struct.pack('<3f', *v) for v in V))
    f.write(b''.join(struct.pack('<B3i', 3, *t) for t in F))
PY
if "$V" convert "$T/sph.ply" "$T/p14.svo" --res 16384 --error 1 -q 2>"$T/err"; then
  formats=""
  for f in ply nvdb vdb; do # the writers this voxlod was built with
    "$V" export "$T/one.svo" "$T/t.$f" -q 2>/dev/null && formats="$formats $f"
  done
  for f in $formats; do
    for lim in 128M 320M; do
      rm -f "$T/e.$f"
      bounded "export .$f of a pruned 16384^3 tree" $lim "limit" "$T/e.$f" \
        "$V" export "$T/p14.svo" "$T/e.$f" -q
    done
  done
else bad "convert of the far sphere at 16384^3"; cat "$T/err"; fi

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
