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
 * vertex); the triangles split by it into partitions that keep index order (hash_parts.h); then
 * each partition, in parallel, looks its triangles up in index order in an open-addressing table
 * of its own (the first triangle of each class there) and compares them exactly with those of the
 * same hash: the marks are those of one pass over all triangles, for any thread count. 21 to 29
 * bytes a triangle.
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
#include "voxelizer/hash_parts.h"
#include "voxelizer/internal.h"
#include "voxelizer/overlap.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

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

double vx_dedup_bytes(uint64_t tri_count) { return (double)tri_count * (29.0 + 36.0); }

typedef struct dedup_job {
  const float *pos;
  vx_hash_parts hp;          /* the triangles by the hash of their canonical rotation */
  uint8_t *drop;
  atomic_uint_fast64_t dropped;
  atomic_int failed;         /* a partition's table could not be allocated */
} dedup_job;

static uint64_t dd_hash(const void *ctx, uint64_t t) {
  float q[9];
  canonical((const float *)ctx + t * 9, q);
  return hash9(q);
}

/* Partition p's triangles in index order against a table of the first of each class. */
static void dd_lookup(void *ctx, int p, vx_hash_scratch *w) {
  dedup_job *j = (dedup_job *)ctx;
  const uint64_t a = j->hp.start[p], b = j->hp.start[p + 1];
  if (a == b) return;
  uint64_t size = 16;
  while (size < 2 * (b - a)) size <<= 1;
  const uint64_t mask = size - 1;
  uint32_t *slot = (uint32_t *)vx_hash_scratch_get(w, (size_t)size * sizeof *slot);
  if (!slot) {
    atomic_store(&j->failed, 1);
    return;
  }
  memset(slot, 0, (size_t)size * sizeof *slot);
  uint64_t ndrop = 0;
  for (uint64_t k = a; k < b; k++) {
    const uint64_t t = j->hp.idx[k], ht = j->hp.hash[k];
    vx_hash_parts_prefetch(&j->hp, k, b, slot, mask);
    for (uint64_t h = ht & mask;; h = (h + 1) & mask) {
      const uint32_t e = slot[h]; /* a place in the partition + 1 */
      if (e == 0) {
        slot[h] = (uint32_t)(k + 1);
        break;
      }
      if (j->hp.hash[e - 1] != ht) continue;
      float q[9], qe[9];
      canonical(j->pos + t * 9, q);
      canonical(j->pos + (uint64_t)j->hp.idx[e - 1] * 9, qe);
      if (memcmp(q, qe, sizeof q) == 0) { /* a copy of an earlier triangle: dropped */
        j->drop[t] = 1;
        ndrop++;
        break;
      }
    }
  }
  atomic_fetch_add(&j->dropped, ndrop);
}

vx_status vx_soup_dedup_marks(const vx_soup *in, int threads, uint8_t *drop, uint64_t *dropped,
                              vx_error *err) {
  const uint64_t n = in->tri_count;
  *dropped = 0;
  memset(drop, 0, (size_t)n);
  if (n < 2) return VX_OK;
  if (n >= UINT32_MAX)
    return vx_error_set(err, VX_ERR_LIMIT, "%llu triangles: more than a duplicate check takes",
                        (unsigned long long)n);
  dedup_job j;
  memset(&j, 0, sizeof j);
  atomic_init(&j.dropped, 0);
  atomic_init(&j.failed, 0);
  j.pos = in->pos;
  j.drop = drop;
  if (vx_hash_parts_build(n, dd_hash, in->pos, threads, &j.hp, err) != VX_OK)
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory checking triangles for duplicates");
  vx_hash_parts_run(threads, dd_lookup, &j);
  vx_hash_parts_free(&j.hp);
  if (atomic_load(&j.failed))
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory checking triangles for duplicates");
  *dropped = atomic_load(&j.dropped);
  return VX_OK;
}

vx_status vx_soup_dedup(const vx_soup *in, uint64_t mem_limit, int threads, vx_soup *out,
                        uint64_t *dropped, vx_error *err) {
  memset(out, 0, sizeof *out);
  *dropped = 0;
  const uint64_t n = in->tri_count;
  if (n < 2) return VX_OK;
  /* no room for the scratch: the mesh as it is; the build's own estimate, which needs more per
   * triangle (the sign tables), refuses it with the whole account */
  if (mem_limit && (double)vx_resident_bytes() + vx_dedup_bytes(n) > (double)mem_limit)
    return VX_OK;
  if (n >= UINT32_MAX) return VX_OK; /* more than the slots index (and any build takes) */
  uint8_t *drop = (uint8_t *)vx_malloc((size_t)n);
  if (!drop)
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory checking triangles for duplicates");
  uint64_t ndrop = 0;
  vx_status s = vx_soup_dedup_marks(in, threads, drop, &ndrop, err);
  if (s != VX_OK) {
    vx_free(drop);
    return s;
  }
  if (ndrop == 0) {
    vx_free(drop);
    return VX_OK;
  }
  const uint64_t m = n - ndrop;
  out->pos = (float *)vx_malloc((size_t)m * 9 * sizeof(float));
  if (!out->pos) {
    vx_free(drop);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for %llu triangles",
                        (unsigned long long)m);
  }
  for (uint64_t t = 0, i = 0; t < n; t++)
    if (!drop[t]) memcpy(out->pos + 9 * i++, in->pos + t * 9, 9 * sizeof(float));
  vx_free(drop);
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

typedef struct overlap_job {
  const vx_soup *m;
  const vx_transform *xf;
  int64_t R;
  double (*sum)[2]; /* per range of triangles: its pairs' floor and its area */
} overlap_job;

static void overlap_range(void *ctx, uint64_t a, uint64_t b) {
  overlap_job *j = (overlap_job *)ctx;
  double pairs = 0.0, area = 0.0;
  for (uint64_t t = a; t < b; t++) {
    double g[9];
    vx_grid_tri(j->m, j->xf, t, g);
    pairs += pair_floor(g, j->R);
    area += vx_grid_tri_area(g);
  }
  j->sum[a / VX_RANGE_CHUNK][0] = pairs;
  j->sum[a / VX_RANGE_CHUNK][1] = area;
}

vx_status vx_overlap_check(const vx_soup *m, const vx_transform *xf, uint32_t depth,
                           uint64_t mem_limit, int threads, double *pairs_out, vx_error *err) {
  if (!mem_limit && !pairs_out) return VX_OK;
  /* summed by ranges of triangles, then the ranges in order: the same sums for any thread count */
  const uint64_t ranges = (m->tri_count + VX_RANGE_CHUNK - 1) / VX_RANGE_CHUNK;
  overlap_job j = {m, xf, (int64_t)1 << depth, NULL};
  j.sum = (double(*)[2])vx_malloc((size_t)(ranges ? ranges : 1) * sizeof *j.sum);
  if (!j.sum) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_ranges_run(threads, m->tri_count, overlap_range, &j);
  double pairs = 0.0, area = 0.0;
  for (uint64_t r = 0; r < ranges; r++) {
    pairs += j.sum[r][0];
    area += j.sum[r][1];
  }
  vx_free(j.sum);
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
