/* SPDX-License-Identifier: Apache-2.0 */
/* dedup.c - exact duplicate triangles dropped before a build, and the overlap check.
 *
 * Duplicates. Two triangles are the same when they have the same three vertex positions in the
 * same cyclic order: (a, b, c), (b, c, a) and (c, a, b) are one triangle; (a, c, b), the same
 * positions with the opposite orientation, is another and is kept (the winding number of a
 * triangle and its reverse cancel: a double-sided sheet is not a solid, and dropping either side
 * would make it one). So any number of copies leaves at most two triangles per position triple,
 * one per orientation. -0 and +0 are the same coordinate. The first copy (lowest index) is kept and
 * the kept triangles keep their order, so a mesh with 1000 copies of a triangle builds the same
 * tree, bit for bit, as the mesh with one: every later stage sees the same triangles in the same
 * order (ties between triangles go to the lowest index, which only compares kept ones).
 * Method: a 64-bit hash of each triangle's canonical rotation (the one starting at its smallest
 * vertex), sorted with its index (16 bytes per triangle), runs of equal hashes compared exactly.
 *
 * Overlap. Dropping exact copies does not help against many distinct triangles through the same
 * voxels (a jittered copy, a fan of slivers): the build's work and its per-block overlap pairs grow
 * with the number of (voxel, triangle) overlaps, not with the surface. vx_overlap_check computes
 * a lower bound of that number from each triangle alone (see pair_floor) and refuses, before any
 * work, a build whose overlaps exceed what an ordinary surface of that area has (16 per expected
 * surface voxel) by more than the memory limit allows at 64 bytes of memory and work a pair (8
 * stored, 8 corner distances computed). blocks.c then checks
 * each block's pairs against the limit as they grow (vx_pair_pool).
 */
#include "sys/system.h"
#include "voxelizer/internal.h"
#include "voxelizer/overlap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct tri_key {
  uint64_t hash;
  uint64_t index;
} tri_key;

/* The triangle's 9 coordinates rotated to start at its smallest vertex (lexicographic), -0 as 0. */
static void canonical(const float *p, float q[9]) {
  float v[9];
  for (int i = 0; i < 9; i++) v[i] = p[i] == 0.0f ? 0.0f : p[i];
  int best = 0;
  for (int r = 1; r < 3; r++)
    for (int i = 0; i < 3; i++) {
      if (v[r * 3 + i] < v[best * 3 + i]) {
        best = r;
        break;
      }
      if (v[r * 3 + i] > v[best * 3 + i]) break;
    }
  for (int k = 0; k < 3; k++) memcpy(q + 3 * k, v + 3 * ((best + k) % 3), 3 * sizeof(float));
}

static uint64_t hash9(const float q[9]) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 9; i++) {
    uint32_t b;
    memcpy(&b, &q[i], sizeof b);
    h = vx_mix64(h ^ b) + (uint64_t)i;
  }
  return h;
}

static int cmp_key(const void *a, const void *b) {
  const tri_key *x = (const tri_key *)a, *y = (const tri_key *)b;
  if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

double vx_dedup_bytes(uint64_t tri_count) { return (double)tri_count * (16.0 + 36.0); }

vx_status vx_soup_dedup(const vx_soup *in, uint64_t mem_limit, vx_soup *out, uint64_t *dropped,
                        vx_error *err) {
  memset(out, 0, sizeof *out);
  *dropped = 0;
  const uint64_t n = in->tri_count;
  if (n < 2) return VX_OK;
  /* no room for the scratch: the mesh as it is; the build's own estimate, which needs more per
   * triangle (the sign tables), refuses it with the whole account */
  if (mem_limit && (double)vx_resident_bytes() + vx_dedup_bytes(n) > (double)mem_limit)
    return VX_OK;
  tri_key *k = (tri_key *)vx_malloc((size_t)n * sizeof *k);
  if (!k) return vx_error_set(err, VX_ERR_NOMEM, "out of memory checking triangles for duplicates");
  for (uint64_t t = 0; t < n; t++) {
    float q[9];
    canonical(in->pos + t * 9, q);
    k[t].hash = hash9(q);
    k[t].index = t;
  }
  qsort(k, (size_t)n, sizeof *k, cmp_key);
  /* mark the later copies: within a run of equal hashes, each triangle against the earlier kept
   * ones of the run (runs of distinct triangles sharing a hash are rare and short) */
  uint64_t ndrop = 0;
  for (uint64_t i = 0; i < n;) {
    uint64_t e = i + 1;
    while (e < n && k[e].hash == k[i].hash) e++;
    for (uint64_t a = i + 1; a < e; a++) {
      float qa[9];
      canonical(in->pos + k[a].index * 9, qa);
      for (uint64_t b = i; b < a; b++) {
        if (k[b].index == UINT64_MAX) continue;
        float qb[9];
        canonical(in->pos + k[b].index * 9, qb);
        if (memcmp(qa, qb, sizeof qa) == 0) { /* b has the lower index: drop a */
          k[a].index = UINT64_MAX;
          ndrop++;
          break;
        }
      }
    }
    i = e;
  }
  if (ndrop == 0) {
    vx_free(k);
    return VX_OK;
  }
  /* the kept indices in ascending order, reusing the key array */
  uint64_t *keep = (uint64_t *)k, m = 0;
  for (uint64_t i = 0; i < n; i++)
    if (k[i].index != UINT64_MAX) keep[m++] = k[i].index;
  qsort(keep, (size_t)m, sizeof *keep, cmp_u64);
  out->pos = (float *)vx_malloc((size_t)m * 9 * sizeof(float));
  if (!out->pos) {
    vx_free(k);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for %llu triangles",
                        (unsigned long long)m);
  }
  for (uint64_t i = 0; i < m; i++)
    memcpy(out->pos + i * 9, in->pos + keep[i] * 9, 9 * sizeof(float));
  vx_free(k);
  out->tri_count = m;
  memcpy(out->bbox_min, in->bbox_min, sizeof out->bbox_min); /* the same vertices */
  memcpy(out->bbox_max, in->bbox_max, sizeof out->bbox_max);
  out->skipped_degenerate = in->skipped_degenerate;
  out->skipped_nonfinite = in->skipped_nonfinite;
  out->skipped_nontriangle = in->skipped_nontriangle;
  out->mesh_count = in->mesh_count;
  *dropped = ndrop;
  return VX_OK;
}

/* A lower bound of the voxels triangle g overlaps: its projection along its dominant normal axis a
 * has area A |n_a| and the unit columns along a that cover it each hold an overlapped voxel; and
 * a connected set spanning voxels lo..hi along an axis meets each slab between (less 2 for the
 * closed range's boundary voxels). At least 1 (the grid holds every triangle). */
static double pair_floor(const double g[9], int64_t R) {
  double u[3], v[3];
  for (int i = 0; i < 3; i++) {
    u[i] = g[3 + i] - g[i];
    v[i] = g[6 + i] - g[i];
  }
  double n[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
  double proj = 0.5 * fmax(fabs(n[0]), fmax(fabs(n[1]), fabs(n[2]))); /* A |n_a| */
  double best = floor(proj);
  int64_t lo[3], hi[3];
  if (vx_tri_voxel_range(g, R, lo, hi))
    for (int i = 0; i < 3; i++) best = fmax(best, (double)(hi[i] - lo[i] - 1));
  return best > 1.0 ? best : 1.0;
}

vx_status vx_overlap_check(const vx_soup *m, const vx_transform *xf, uint32_t depth,
                           uint64_t mem_limit, double *pairs_out, vx_error *err) {
  const int64_t R = (int64_t)1 << depth;
  double pairs = 0.0, area = 0.0;
  for (uint64_t t = 0; t < m->tri_count; t++) {
    double g[9];
    vx_grid_tri(m, xf, t, g);
    pairs += pair_floor(g, R);
    area += vx_grid_tri_area(g);
  }
  if (pairs_out) *pairs_out = pairs;
  if (!mem_limit) return VX_OK;
  double grid = ldexp(1.0, 3 * (int)depth), vox = 2.0 * area + 1.0;
  if (vox > grid) vox = grid;
  double allowed = VX_PAIRS_PER_VOXEL * vox + (double)mem_limit / VX_PAIR_CHARGE;
  if (pairs <= allowed) return VX_OK;
  char a[32];
  return vx_error_set(err, VX_ERR_LIMIT,
                      VX_OVERLAP_REFUSAL " for the memory limit of %s: at least %.3g "
                      "(voxel, triangle) overlaps at %u^3, where a surface of this area has about "
                      "%.3g (triangles stacked on one another: the %.3g more, at %.0f bytes of "
                      "memory and work each, would take %.3g MiB)",
                      vx_bytes_text((double)mem_limit, a, sizeof a), pairs, 1u << depth,
                      VX_PAIRS_PER_VOXEL * vox, pairs - VX_PAIRS_PER_VOXEL * vox, VX_PAIR_CHARGE,
                      (pairs - VX_PAIRS_PER_VOXEL * vox) * VX_PAIR_CHARGE / 1048576.0);
}
