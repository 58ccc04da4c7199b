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
 * Sign: the pseudo-normal of the winning triangle's closest feature (sign.c). The value is then
 * truncated at +-band and quantized to int8 (vx_corner_quantize, node.h): error <= band/254.
 */
#include "voxelizer/internal.h"
#include "voxelizer/distance.h"

#include <math.h>

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
    double p[3], q[3];
    p[0] = (double)(b->org[0] + cx);
    p[1] = (double)(b->org[1] + cy);
    p[2] = (double)(b->org[2] + cz);
    uint32_t t = b->ctri[idx];
    if (t == UINT32_MAX) { /* cannot happen: a surface voxel's triangle is a candidate */
      b->cval[idx] = 127;
      continue;
    }
    int feat = vx_closest_on_triangle(p, b->tg + (uint64_t)t * 9, q);
    double s = vx_sign_of(b->sign, b->tris[t], feat, p, q);
    b->cval[idx] = vx_corner_quantize(s * sqrt(b->cd2[idx]), b->band);
  }
  return b->nclist;
}
