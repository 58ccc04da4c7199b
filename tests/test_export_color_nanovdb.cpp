/* SPDX-License-Identifier: Apache-2.0 */
/* test_export_color_nanovdb.cpp - the colour grid of a .nvdb export read by NanoVDB's own reader.
 *
 *   test_export_color_nanovdb FILE.nvdb FRAME.txt LEVEL
 *
 * FILE comes from test_export_color (a tree coloured by octant around the grid's centre, its
 * level in the blue channel; FRAME.txt its frame). Checks: the file holds the float level set and
 * a Vec3f grid "Cd"; Cd's active voxels are exactly the level set's; away from the octant planes
 * and the holes' cap by more than the band, Cd is the octant's colour in linear light.
 */
#include <nanovdb/util/IO.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

static int failures = 0;
#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      failures++;                                                                                  \
      std::fprintf(stderr, "FAIL %s: ", #cond);                                                    \
      std::fprintf(stderr, __VA_ARGS__);                                                           \
      std::fprintf(stderr, "\n");                                                                  \
    }                                                                                              \
  } while (0)

static double srgb_to_linear(double c) {
  c /= 255.0;
  return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s FILE.nvdb FRAME.txt LEVEL\n", argv[0]);
    return 2;
  }
  double origin[3], scale, cap, mid[3];
  unsigned depth;
  FILE *f = std::fopen(argv[2], "r");
  if (!f || std::fscanf(f, "%lf %lf %lf %lf %u %lf %lf %lf %lf", &origin[0], &origin[1],
                        &origin[2], &scale, &depth, &cap, &mid[0], &mid[1], &mid[2]) != 9) {
    std::fprintf(stderr, "cannot read %s\n", argv[2]);
    return 1;
  }
  std::fclose(f);
  const int level = std::atoi(argv[3]);
  auto sh = nanovdb::io::readGrid(argv[1], "surface");
  auto ch = nanovdb::io::readGrid(argv[1], "Cd");
  const nanovdb::FloatGrid *sdf = sh.grid<float>();
  const nanovdb::Vec3fGrid *cd = ch.grid<nanovdb::Vec3f>();
  EXPECT(sdf != nullptr, "no float grid 'surface'");
  EXPECT(cd != nullptr, "no Vec3f grid 'Cd'");
  if (!sdf || !cd) return 1;
  EXPECT(sdf->activeVoxelCount() == cd->activeVoxelCount(), "%llu level set voxels, %llu Cd",
         (unsigned long long)sdf->activeVoxelCount(), (unsigned long long)cd->activeVoxelCount());
  auto sacc = sdf->getAccessor();
  const double h = scale * std::ldexp(1.0, (int)depth - level);
  const double res = std::ldexp(1.0, level), cap_index = (cap - origin[2]) / h, far = 6.0;
  const auto &tree = cd->tree();
  const auto *leaf = tree.getFirstLeaf();
  uint64_t checked = 0, bad = 0, off = 0;
  for (uint32_t l = 0; l < tree.nodeCount(0); l++, leaf++) {
    for (uint32_t i = 0; i < 512; i++) {
      if (!leaf->valueMask().isOn(i)) continue;
      nanovdb::Coord ijk = leaf->offsetToGlobalCoord(i);
      if (!sacc.isActive(ijk)) off++;
      bool near = false;
      unsigned octant = 0;
      for (int k = 0; k < 3; k++) {
        if (std::fabs(ijk[k] - res / 2) < far) near = true;
        if (ijk[k] > res / 2) octant |= 1u << k;
      }
      if (near || ijk[2] > cap_index - far) continue;
      const double want[3] = {srgb_to_linear(40 + 120 * (octant & 1) + 60 * (octant >> 2 & 1)),
                              srgb_to_linear(60 + 120 * (octant >> 1 & 1)),
                              srgb_to_linear(20 + 25 * level)};
      nanovdb::Vec3f v = leaf->getValue(i);
      checked++;
      if (std::fabs(v[0] - want[0]) > 1e-4 || std::fabs(v[1] - want[1]) > 1e-4 ||
          std::fabs(v[2] - want[2]) > 1e-4)
        bad++;
    }
  }
  EXPECT(off == 0, "%llu Cd voxels not active in the level set", (unsigned long long)off);
  EXPECT(checked > 100, "only %llu voxels checked", (unsigned long long)checked);
  EXPECT(bad == 0, "%llu of %llu voxels not their octant's linear colour", (unsigned long long)bad,
         (unsigned long long)checked);
  std::printf("%s: %llu voxels checked, %d failures\n", argv[1], (unsigned long long)checked,
              failures);
  return failures ? 1 : 0;
}
