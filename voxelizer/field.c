/* SPDX-License-Identifier: Apache-2.0 */
/* field.c - signed distances at the corners of one block's surface voxels.
 *
 * Candidates. A point within distance 1 of corner c lies in the cube [c-1, c+1]^3, the union of
 * the 8 voxels sharing c, and the triangle holding it overlaps one of them (closed sets). So the
 * nearest triangle among those overlapping the voxels around c is the nearest of the whole mesh
 * whenever the true distance is <= 1 voxel, and an upper bound otherwise (then truncated at the
 * band anyway). Equivalently: each (voxel v, triangle t) overlap pair makes t a candidate of v's 8
 * corners. blocks.c hands over every pair whose voxel lies in the block or its one-voxel halo, so
 * the corners on the block's faces see the triangles of the neighbouring blocks too.
 *
 * Each distinct corner is computed once per block: the pairs come grouped by triangle, and a
 * per-corner "last triangle" stamp skips a triangle already measured from that corner through
 * another of its voxels. A corner on a block face is computed by each block that owns a surface
 * voxel there, from the same candidate set, with the same arithmetic, so the copies agree bit for
 * bit. Ties between triangles at the same distance go to the lowest triangle index, which keeps
 * the sign's choice of feature independent of the partition.
 *
 * Distance: closest point on the triangle (distance.h, Ericson 2005), in double, in voxels.
 * Sign: by the winding rule when the sign data holds a winding tree (sign.c: the pseudo-normal of
 * a clean feature, else the winding number at the corner, |w| > 1/2 inside), else by the pseudo-normal of the winning triangle's closest feature
 * (sign.c). A corner whose magnitude quantizes to 0 needs no sign and skips the query. The value is then
 * truncated at +-band and quantized to int8 (vx_corner_quantize, node.h): error <= band/254.
 *
 * Work: each winding query's exact triangles beyond VX_WIND_EXACT_FREE are added to the pool's
 * count (vx_block_wind_flush), which stops the build past what the memory limit allows
 * (internal.h explains the charge); the values themselves do not depend on it.
 */
#include "sys/system.h"
#include "voxelizer/internal.h"
#include "voxelizer/distance.h"
#include "voxelizer/field_eval.h"

#include <math.h>
#include <stdlib.h>

int vx_block_wind_flush(vx_block *b) {
  uint64_t d = b->wind_excess;
  b->wind_excess = 0;
  if (!b->pool || !b->pool->wind_cap || !d) return !b->wind_over;
  uint64_t u = __atomic_add_fetch(&b->pool->wind_excess, d, __ATOMIC_RELAXED);
  if (u > b->pool->wind_cap) b->wind_over = 1;
  return !b->wind_over;
}

vx_status vx_wind_limit_error(uint64_t excess, uint64_t mem_limit, vx_error *err) {
  char a[32];
  return vx_error_set(err, VX_ERR_LIMIT,
                      VX_OVERLAP_REFUSAL " for the memory limit of %s: the corners "
                      "near them sum the winding number exactly over more than %.3g triangles "
                      "beyond the first %d of each corner (triangles or long slivers stacked on "
                      "one another), %g per byte of the limit (a larger --mem-limit allows more "
                      "of this work)",
                      vx_bytes_text((double)mem_limit, a, sizeof a), (double)excess,
                      VX_WIND_EXACT_FREE, 1.0 / VX_WIND_CHARGE);
}

uint64_t vx_block_field(vx_block *b) {
  const int64_t B = b->B, C = B + 1, H = B + 2;
  /* Needed corners: the 8 corners of every surface voxel of the block. */
  for (uint64_t i = 0; i < b->nlist; i++) {
    uint32_t x, y, z;
    vx_morton_decode(b->list[i], &x, &y, &z);
    for (int c = 0; c < 8; c++) {
      uint64_t idx = (uint64_t)((x + (c & 1)) + (y + (c >> 1 & 1)) * C + (z + (c >> 2 & 1)) * C * C);
      if (!b->cneed[idx]) {
        b->cneed[idx] = 1;
        b->cd2[idx] = INFINITY;
        b->clast[idx] = 0;
        b->ctri[idx] = UINT32_MAX;
        b->clist[b->nclist++] = (uint32_t)idx;
      }
    }
  }
  /* Candidates: every pair's triangle against its voxel's needed corners. */
  for (uint64_t k = 0; k < b->npairs; k++) {
    uint32_t v = b->pair_vox[k], t = b->pair_tri[k];
    int64_t vx = (int64_t)(v % H) - 1, vy = (int64_t)(v / H % H) - 1, vz = (int64_t)(v / (H * H)) - 1;
    const double *tg = b->tg + (uint64_t)t * 9;
    for (int c = 0; c < 8; c++) {
      int64_t cx = vx + (c & 1), cy = vy + (c >> 1 & 1), cz = vz + (c >> 2 & 1);
      if (cx < 0 || cy < 0 || cz < 0 || cx > B || cy > B || cz > B) continue;
      uint64_t idx = (uint64_t)(cx + cy * C + cz * C * C);
      if (!b->cneed[idx] || b->clast[idx] == t + 1) continue;
      b->clast[idx] = t + 1;
      double p[3];
      p[0] = (double)(b->org[0] + cx);
      p[1] = (double)(b->org[1] + cy);
      p[2] = (double)(b->org[2] + cz);
      double d2 = vx_tri_dist2(p, tg, NULL);
      if (d2 < b->cd2[idx]) { /* pairs come in ascending triangle order: ties keep the lowest */
        b->cd2[idx] = d2;
        b->ctri[idx] = t;
      }
    }
  }
  /* Values: the winner's distance with the sign of its closest feature. */
  for (uint64_t i = 0; i < b->nclist; i++) {
    uint32_t idx = b->clist[i];
    int64_t cx = idx % C, cy = idx / C % C, cz = idx / (C * C);
    double p[3];
    p[0] = (double)(b->org[0] + cx);
    p[1] = (double)(b->org[1] + cy);
    p[2] = (double)(b->org[2] + cz);
    uint32_t t = b->ctri[idx];
    if (t == UINT32_MAX) { /* cannot happen: a surface voxel's triangle is a candidate */
      b->cval[idx] = 127;
      continue;
    }
    const double *tg = b->tg + (uint64_t)t * 9;
    int8_t v;
    if (!vx_corner_eval_fast(b->sign, b->tris[t], tg, p, b->cd2[idx], b->band, &v)) {
      uint64_t exact;
      v = vx_corner_eval_wound_n(b->sign, p, b->cd2[idx], b->band, &exact);
      if (exact > b->wind_max) b->wind_max = exact;
      if (exact > VX_WIND_EXACT_FREE) {
        b->wind_excess += exact - VX_WIND_EXACT_FREE;
        if (b->wind_excess >= VX_WIND_FLUSH && !vx_block_wind_flush(b)) return b->nclist;
      }
    }
    b->cval[idx] = v;
  }
  return b->nclist;
}

/* ---- features thinner than a voxel -----------------------------------------------------------
 * A surface voxel (a triangle overlaps it) whose 8 corner values are all outside (all >= 0, not
 * all 0; with a zero corner only when the nearest triangle passes within half a voxel of the
 * centre, since a closed surface may just touch a corner) holds a feature that the corner
 * samples cannot resolve: an open sheet (both sides outside), a closed part thinner than a voxel
 * (the bunny's ears at low resolution), or a cap that enters and leaves through one face. Its
 * trilinear interpolant has no zero, so a ray marcher would see through it. (All corners inside
 * is left alone: that is a face inside a solid, e.g. where a self-intersecting union overlaps,
 * which no ray from outside sees.)
 * Such a voxel is re-signed locally: each corner keeps its distance (the magnitude is still exact)
 * but takes the sign of its side of the plane of the triangle nearest to the voxel's centre (ties
 * to the lowest triangle index). The zero set becomes a sheet through the voxel near that
 * triangle, so thin features stay visible. Corner values are stored per voxel, so the neighbours
 * keep theirs; the marcher's crack rule (marcher/trace.h) closes the seam between the two. The
 * result depends only on the voxel's own triangles and corners, never on the partition. */

typedef struct thin_item {
  uint32_t halo; /* halo voxel index (x+1) + (y+1)H + (z+1)H^2 */
  uint32_t i;    /* index into the block's sorted surface list / field */
  double best;   /* squared distance centre-triangle */
  uint32_t tri;  /* local triangle index, UINT32_MAX: none */
  int kind;      /* vx_thin_kind */
} thin_item;

static int cmp_thin(const void *a, const void *b) {
  uint32_t x = ((const thin_item *)a)->halo, y = ((const thin_item *)b)->halo;
  return x < y ? -1 : x > y;
}

uint64_t vx_block_thin_fix(vx_block *b, vx_voxel *field) {
  const int64_t H = (int64_t)b->B + 2;
  uint64_t n = 0;
  for (uint64_t i = 0; i < b->nlist; i++) n += vx_thin_kind(&field[i]) != 0;
  if (n == 0) return 0;
  thin_item *it = (thin_item *)vx_malloc(n * sizeof *it);
  if (!it) return 0; /* keep the plain values: rendering may show a gap there, nothing worse */
  n = 0;
  for (uint64_t i = 0; i < b->nlist; i++) {
    int kind = vx_thin_kind(&field[i]);
    if (!kind) continue;
    uint32_t x, y, z;
    vx_morton_decode(b->list[i], &x, &y, &z);
    it[n].halo = (uint32_t)((x + 1) + (y + 1) * H + (z + 1) * H * H);
    it[n].i = (uint32_t)i;
    it[n].best = INFINITY;
    it[n].tri = UINT32_MAX;
    it[n].kind = kind;
    n++;
  }
  qsort(it, n, sizeof *it, cmp_thin);
  for (uint64_t k = 0; k < b->npairs; k++) {
    thin_item key, *hit;
    key.halo = b->pair_vox[k];
    hit = (thin_item *)bsearch(&key, it, n, sizeof *it, cmp_thin);
    if (!hit) continue;
    uint32_t x, y, z;
    vx_morton_decode(b->list[hit->i], &x, &y, &z);
    double p[3];
    vx_voxel_centre(b->org[0] + x, b->org[1] + y, b->org[2] + z, p);
    double d2 = vx_tri_dist2(p, b->tg + (uint64_t)b->pair_tri[k] * 9, NULL);
    if (d2 < hit->best) { /* pairs ascend by triangle: a tie keeps the lowest index */
      hit->best = d2;
      hit->tri = b->pair_tri[k];
    }
  }
  uint64_t fixed = 0;
  for (uint64_t k = 0; k < n; k++) {
    if (it[k].tri == UINT32_MAX) continue;
    uint32_t x, y, z;
    vx_morton_decode(b->list[it[k].i], &x, &y, &z);
    fixed += (uint64_t)vx_thin_resign(b->tg + (uint64_t)it[k].tri * 9, it[k].best, it[k].kind,
                                      b->org[0] + x, b->org[1] + y, b->org[2] + z,
                                      &field[it[k].i]);
  }
  vx_free(it);
  return fixed;
}
