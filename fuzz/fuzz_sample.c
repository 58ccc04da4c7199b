/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_sample.c - libFuzzer target: signed-distance queries on arbitrary trees at arbitrary
 * points (sampler/ through sampler/sample_eval.h, the code behind vx_tree_sample and Tree.sample).
 *
 * Input: a 4-byte header, then up to 64 points of 12 bytes, then the tree: a .svo file, or with
 * bit 4 the voxels themselves (1 byte: depth 1..6; 1 byte: band 1..16 voxels; then 11 bytes per
 * voxel: x, y, z and 8 corner values), built, fitted and with bit 5 pruned here, so that the
 * fuzzer shapes the fields (a .svo's checksums keep it from changing a file's content).
 *   byte 0: bit 0 sample at a level cut (else full detail), bits 1-2 the levels to read
 *           (0: all, else that many), bit 3 a second pass point by point in reverse order,
 *           bit 4 build the tree from voxels, bit 5 prune it (at byte 1 / 16 voxels)
 *   byte 1: the cut level (modulo depth + 1)
 *   byte 2: the point count (modulo 65)
 *   byte 3: the spread of the surface points, in quarter voxels
 * Each 12-byte point is used twice: as three raw floats (world coordinates: NaN, infinities,
 * huge values) and as three 32-bit fractions placing a point in and around the root box (grid
 * -0.25 .. 1.25 times its size), where the search and the sign walks run. Surface points of the
 * tree are sampled too. A file the reader rejects ends the run; a tree it accepts has passed
 * vx_octree_validate, the sampler's contract; one whose transform does not fit single precision
 * is refused by the library (vx_sample_tree_fits) and skipped here. Bands wider than 16 voxels are
 * skipped: the reader accepts bands up to 10^6 voxels, where every search covers most of the
 * tree (correct, and slow enough to trip the fuzzer's timeout); conversion writes 1 to 64.
 * Checks (abort on failure), from the rule in include/voxlod/sample.h:
 *   - a non-finite point gives NaN and VX_SAMPLE_INVALID alone; a finite one finite outputs;
 *   - flags hold known bits only; NEAR and FAR exclude each other;
 *   - a far point inside the box is exactly +-band; outside it at least the band;
 *   - a near point lies below the band; a point in a surface voxel within its corners' range;
 *   - the points one by one in reverse order give the same bits (no state between points). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "formats/svo_file.h"
#include "sampler/sampler.h"
#include "svo/lod.h"
#include "sys/alloc.h"
#include "sampler/resigned.h"
#include "fuzz_tree.h"

#define MAX_POINTS 64
#define SURFACE_POINTS 64
#define ALL_POINTS (2 * MAX_POINTS + SURFACE_POINTS)

/* A tree built from voxel records (see above); 0 when the bytes give none. */
static int build_tree(const uint8_t *data, size_t size, int prune, float prune_error,
                      vx_octree *t) {
  if (size < 2) return 0;
  const uint32_t depth = 1u + data[0] % 6u, mask = (1u << depth) - 1u;
  const float band = 1.0f + (float)(data[1] % 16u);
  data += 2;
  size -= 2;
  size_t n = size / 11;
  if (n == 0) return 0;
  uint64_t *codes = (uint64_t *)malloc(n * sizeof *codes);
  vx_voxel *field = (vx_voxel *)malloc(n * sizeof *field);
  size_t *src = (size_t *)malloc(n * sizeof *src);
  /* each cell's first record (n < 6000) */
  size_t m = codes && field && src ? fuzz_voxels(data, n, 11, mask, codes, field, src) : 0;
  int ok = 0;
  if (m) {
    vx_error e;
    if (vx_octree_build(depth, codes, field, m, t, &e) != VX_OK) abort();
    t->band = band;
    t->xf.scale = 0.25;
    t->xf.origin[0] = -1.0;
    ok = vx_octree_fit_planes(t, NULL, NULL, &e) == VX_OK &&
         (!prune || vx_octree_prune(t, prune_error, &e) == VX_OK);
    if (!ok) abort(); /* building from valid voxels cannot fail but for memory */
    if (vx_octree_validate(t, &e) != VX_OK) abort();
  }
  free(codes);
  free(field);
  free(src);
  return ok;
}

/* Aborts with the point and its result when `ok` is false. */
static void expect(int ok, const char *what, const float w[3], float d, uint8_t fl) {
  if (ok) return;
  fprintf(stderr, "fuzz_sample: %s: point %g %g %g gave %g, flags 0x%x\n", what, (double)w[0],
          (double)w[1], (double)w[2], (double)d, (unsigned)fl);
  abort();
}

static void check_point(const vx_sample_tree *s, const float w[3], float d, const float g[3],
                        uint8_t fl) {
  const uint8_t known = VX_SAMPLE_PLANE | VX_SAMPLE_NEAR | VX_SAMPLE_FAR | VX_SAMPLE_OUTSIDE |
                        VX_SAMPLE_NO_SIGN | VX_SAMPLE_INVALID;
  expect(!(fl & ~known), "unknown flags", w, d, fl);
  float p[3];
  /* a point whose grid coordinates overflow counts as non-finite too (vx_se_grid) */
  if (!vx_se_grid(s, w, p)) {
    expect(fl == VX_SAMPLE_INVALID && isnan(d), "a non-finite point not flagged", w, d, fl);
    return;
  }
  expect(!(fl & VX_SAMPLE_INVALID), "a finite point flagged invalid", w, d, fl);
  expect(isfinite(d) && isfinite(g[0]) && isfinite(g[1]) && isfinite(g[2]),
         "a finite point gave a non-finite distance or gradient", w, d, fl);
  expect(!((fl & VX_SAMPLE_NEAR) && (fl & VX_SAMPLE_FAR)), "near and far", w, d, fl);
  const double band = (double)s->band * (double)s->scale, slack = 1e-5 * band + 1e-30;
  const double ad = fabs((double)d);
  if (fl & VX_SAMPLE_FAR) {
    if (fl & VX_SAMPLE_OUTSIDE)
      expect(d > 0.0f && ad >= band - slack, "far outside the box below the band", w, d, fl);
    else
      expect(fabs(ad - band) <= slack, "far inside the box not +-band", w, d, fl);
  } else if (fl & VX_SAMPLE_NEAR) {
    expect(ad <= band + slack, "near beyond the band", w, d, fl);
  } else if (!(fl & VX_SAMPLE_PLANE)) {
    /* corners hold q * band / 127, q down to -128 (the reader accepts it) */
    expect(ad <= band * (128.0 / 127.0) + slack, "a voxel's field beyond its corners", w, d, fl);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  const uint8_t ctl = data[0], level = data[1];
  size_t np = data[2] % (MAX_POINTS + 1);
  const float spread = (float)data[3] * 0.25f;
  data += 4;
  size -= 4;
  if (np * 12 > size) np = size / 12;
  const uint8_t *pts = data;
  data += np * 12;
  size -= np * 12;

  vx_octree t;
  if (ctl & 16) {
    if (size > 11 * 4096 + 2) size = 11 * 4096 + 2; /* at most 4096 voxels */
    if (!build_tree(data, size, ctl & 32, (float)level / 16.0f, &t)) return 0;
  } else {
    vx_svo_read_opts o = {(ctl >> 1 & 3) ? (int)(ctl >> 1 & 3) - 1 : -1, (uint64_t)64 << 20, 0, 0};
    vx_error e;
    if (vx_svo_decode(data, size, &o, &t, NULL, &e) != VX_OK) return 0;
    if (vx_octree_validate(&t, &e) != VX_OK) abort();
  }
  if (t.levels_loaded < 1 || !(t.band <= 16.0f) || !vx_sample_tree_fits(&t)) {
    vx_octree_free(&t);
    return 0;
  }
  vx_sample_tree s;
  vx_sample_tree_init(&s, &t, (ctl & 1) ? level % (t.depth + 1) : t.depth);
  uint32_t *resigned = NULL; /* what the library's samplers use (lib/sample.c) */
  {
    vx_error re;
    if (vx_octree_resigned(&t, 1, &resigned, &re) != VX_OK) abort(); /* only NOMEM can fail */
    s.resigned = resigned;
  }

  static float w[3 * ALL_POINTS], d1[ALL_POINTS], g1[3 * ALL_POINTS], d2[ALL_POINTS],
      g2[3 * ALL_POINTS];
  static uint8_t f1[ALL_POINTS], f2[ALL_POINTS];
  size_t n = 0;
  const double R = (double)(1u << t.depth);
  for (size_t i = 0; i < np; i++, n++) memcpy(&w[3 * n], pts + 12 * i, 12);
  for (size_t i = 0; i < np; i++, n++)
    for (int a = 0; a < 3; a++) {
      double u = (double)le32(pts + 12 * i + 4 * a) / 4294967296.0 * 1.5 - 0.25;
      w[3 * n + a] = (float)(t.xf.origin[a] + u * R * t.xf.scale);
    }
  if (t.levels_loaded > t.depth && t.voxels && t.voxel_count) {
    vx_error pe;
    if (vx_octree_surface_points(&t, SURFACE_POINTS, spread, ctl, 0, &w[3 * n], &pe) == VX_OK)
      n += SURFACE_POINTS;
  }

  vx_sample_cpu(&s, w, n, d1, g1, f1, 1, NULL);
  for (size_t i = 0; i < n; i++) check_point(&s, &w[3 * i], d1[i], &g1[3 * i], f1[i]);
  if (ctl & 8) {
    for (size_t k = n; k-- > 0;) {
      uint32_t fl;
      d2[k] = vx_sample_point(&s, &w[3 * k], &g2[3 * k], &fl);
      f2[k] = (uint8_t)fl;
    }
    for (size_t i = 0; i < n; i++) {
      int same = !memcmp(&d1[i], &d2[i], sizeof *d1) && f1[i] == f2[i] &&
                 !memcmp(&g1[3 * i], &g2[3 * i], 3 * sizeof *g1);
      expect(same, "the point alone gave other bits", &w[3 * i], d2[i], f2[i]);
    }
  }
  if (ctl & 64) { /* the band cache: the same checks; in surface voxels the same bits */
    vx_band_cache *bc = NULL;
    vx_error be;
    if (vx_band_cache_build(&s, 1, &bc, &be) != VX_OK) abort(); /* only NOMEM can fail */
    vx_sample_tree sc = s;
    sc.cache = bc;
    vx_sample_cpu(&sc, w, n, d2, g2, f2, 1, NULL);
    for (size_t i = 0; i < n; i++) {
      check_point(&sc, &w[3 * i], d2[i], &g2[3 * i], f2[i]);
      if (f1[i] == 0)
        expect(!memcmp(&d1[i], &d2[i], sizeof *d1) && f2[i] == 0 &&
                   !memcmp(&g1[3 * i], &g2[3 * i], 3 * sizeof *g1),
               "the band cache changed a point in a surface voxel", &w[3 * i], d2[i], f2[i]);
    }
    vx_band_cache_free(bc);
  }
  vx_free(resigned);
  vx_octree_free(&t);
  return 0;
}
