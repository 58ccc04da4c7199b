# SPDX-License-Identifier: Apache-2.0
"""test_export_vdb.py - .vdb grids out and in, checked by OpenVDB's own Python module (pyopenvdb).

    /usr/bin/python3 tests/test_export_vdb.py VOXLOD WORKDIR

Skips (exit 77) where pyopenvdb is not installed (Debian's python3-openvdb is for /usr/bin/python3),
and fails there when $CI is set: scripts/deps.sh installs it.
The level set comes from OpenVDB itself (createLevelSetSphere), goes through voxlod (convert to
.svo, export to .vdb), and is read back by pyopenvdb:
- class level set, the grid name asked for, voxel size and lattice: every index of the output is
  an index of the input shifted by a whole vector;
- .vdb -> .svo -> .vdb: at every corner of the input's surface cells (cells whose corners change
  sign) the output holds the input's value clamped to +-band, within one quantization step
  (band * voxel / 127);
- inside reads negative and outside positive; vdb_print reads the file;
- --res N: the level set sampled at N^3 has its zero crossing where the sphere is (one voxel);
- a fog volume is refused with a message naming the grids, and no output is left.
"""
import os
import shutil
import subprocess
import sys

try:
    import pyopenvdb as vdb
except ImportError:
    print("SKIP: pyopenvdb is not installed for", sys.executable)
    sys.exit(1 if os.environ.get("CI", "").lower() not in ("", "0", "false", "no") else 77)

VOXLOD, WORK = sys.argv[1], sys.argv[2]
os.makedirs(WORK, exist_ok=True)
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def run(*args, ok=True):
    r = subprocess.run([VOXLOD, *args, "-q"], capture_output=True, text=True)
    check((r.returncode == 0) == ok, "voxlod %s: exit %d, %s" % (" ".join(args), r.returncode, r.stderr))
    return r


def path(name):
    return os.path.join(WORK, name)


# An OpenVDB level set: radius 6, voxel 0.5, centred off the lattice, half width 3.
VOXEL, RADIUS, CENTRE = 0.5, 6.0, (1.1, -2.3, 0.7)
src = vdb.createLevelSetSphere(radius=RADIUS, center=CENTRE, voxelSize=VOXEL, halfWidth=3.0)
src.name = "ball"
vdb.write(path("in.vdb"), grids=[src])

run("convert", path("in.vdb"), path("ball.svo"))
run("export", path("ball.svo"), path("out.vdb"), "--grid", "roundtrip")
out = vdb.read(path("out.vdb"), "roundtrip")

check(out.gridClass == vdb.GridClass.LEVEL_SET, "class %s" % out.gridClass)
check(out.name == "roundtrip", "name %s" % out.name)
check(abs(out.transform.voxelSize()[0] - VOXEL) < 1e-12, "voxel size %s" % (out.transform.voxelSize(),))
w0 = out.transform.indexToWorld((0, 0, 0))
shift = src.transform.worldToIndex(w0)
check(all(abs(s - round(s)) < 1e-6 for s in shift), "lattice shifted by %s" % (shift,))
shift = tuple(int(round(s)) for s in shift)

BAND = 2.0  # convert's default
step = BAND * VOXEL / 127.0
sa, oa = src.getConstAccessor(), out.getConstAccessor()


def straddles(acc, i, j, k):
    vals = [acc.getValue((i + a, j + b, k + c)) for a in (0, 1) for b in (0, 1) for c in (0, 1)]
    return min(vals) < 0 <= max(vals)


compared = worst = missing = 0
bb = src.evalActiveVoxelBoundingBox()
smin, smax = [1 << 30] * 3, [-(1 << 30)] * 3  # the surface cells' box
for i in range(bb[0][0], bb[1][0]):
    for j in range(bb[0][1], bb[1][1]):
        for k in range(bb[0][2], bb[1][2]):
            if not straddles(sa, i, j, k):
                continue
            smin = [min(a, b) for a, b in zip(smin, (i, j, k))]
            smax = [max(a, b) for a, b in zip(smax, (i, j, k))]
            for a in (0, 1):
                for b in (0, 1):
                    for c in (0, 1):
                        p = (i + a, j + b, k + c)
                        q = (p[0] - shift[0], p[1] - shift[1], p[2] - shift[2])
                        v, active = oa.probeValue(q)
                        if not active:
                            missing += 1
                            continue
                        want = max(-BAND * VOXEL, min(BAND * VOXEL, sa.getValue(p)))
                        worst = max(worst, abs(v - want))
                        compared += 1
check(compared > 1000, "only %d corners compared" % compared)
check(missing == 0, "%d surface corners inactive in the output" % missing)
check(worst <= step * 1.0001, "round trip off by %g (one step: %g)" % (worst, step))
ci = out.transform.worldToIndexCellCentered(CENTRE)
check(oa.getValue(tuple(ci)) < 0, "centre not inside")
check(oa.getValue((0, 0, 0)) > 0, "grid corner not outside")
print("round trip: %d surface corners, worst %.3g (step %.3g)" % (compared, worst, step))

# The same through NanoVDB's layout is tested in C++; here the OpenVDB tools' reader.
if shutil.which("vdb_print"):
    r = subprocess.run(["vdb_print", "-l", path("out.vdb")], capture_output=True, text=True)
    check(r.returncode == 0 and "roundtrip" in r.stdout and "Tree_float_5_4_3" in r.stdout,
          "vdb_print: %s %s" % (r.stdout, r.stderr))

# Resampled: --res 32 maps the surface's box into 32^3 and samples the level set there.
run("convert", path("in.vdb"), path("ball32.svo"), "--res", "32")
run("export", path("ball32.svo"), path("out32.vdb"))
g = vdb.read(path("out32.vdb"), "surface")
acc = g.getConstAccessor()
h = g.transform.voxelSize()[0]
extent = max(b + 1 - a for a, b in zip(smin, smax)) * VOXEL
check(abs(h - extent / 32) < 1e-9, "resampled voxel %g, want %g" % (h, extent / 32))
# along +x from the centre: the sign changes within a voxel of the radius
ci = g.transform.worldToIndexCellCentered(CENTRE)
prev, crossing = None, None
for i in range(ci[0], ci[0] + 40):
    v = acc.getValue((i, ci[1], ci[2]))
    if prev is not None and prev < 0 <= v:
        x0 = g.transform.indexToWorld((i - 1, ci[1], ci[2]))[0]
        crossing = x0 + h * (-prev) / (v - prev)
        break
    prev = v
check(crossing is not None and abs(crossing - CENTRE[0] - RADIUS) < h,
      "zero crossing at %s, want %g" % (crossing, CENTRE[0] + RADIUS))

# A file without a level set.
fog = vdb.FloatGrid()
fog.name = "smoke"
fog.gridClass = vdb.GridClass.FOG_VOLUME
fog.fill((0, 0, 0), (3, 3, 3), 1.0)
vdb.write(path("fog.vdb"), grids=[fog])
r = run("convert", path("fog.vdb"), path("fog.svo"), ok=False)
check("no float level set" in r.stderr and "smoke" in r.stderr, "fog message: %s" % r.stderr)
check(not os.path.exists(path("fog.svo")), "fog.svo was left")

print("%d failure(s)" % failures)
sys.exit(1 if failures else 0)
