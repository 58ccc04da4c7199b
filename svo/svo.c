/* SPDX-License-Identifier: Apache-2.0 */
/* svo.c - tree storage, bottom-up build from sorted Morton codes, linking and validation.
 *
 * Build (after the usual bottom-up construction from sorted Morton codes, as in Baert, Lagae &
 * Dutre 2013 and ESVO's builder): the parents of a sorted, unique list of level-l codes are the
 * codes shifted right by 3, already sorted; consecutive equal parents are merged and their child
 * bits or'ed into a mask. Doing that from level D up to level 0 gives every level in Morton order.
 * Because each level is sorted, the children of consecutive parents are consecutive in the level
 * below, so the first-child index of a node is the running sum of its predecessors' child counts:
 * vx_octree_link() computes exactly that, and vx_octree_validate() checks it.
 */
#include "svo/svo.h"
#include "sys/alloc.h"
#include "sys/system.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

vx_status vx_octree_check_world(const vx_octree *t, vx_world_use use, vx_error *err) {
  /* float: outputs in float32 world units; double: rendering, whose camera is double and whose
   * rays run in float grid coordinates (a box near float's limit still draws). */
  const int f = use == VX_WORLD_FLOAT;
  const double lim = f ? FLT_MAX / 4.0 : 1e150, min_scale = f ? 1e-30 : 1e-150;
  const double max_voxels = f ? 2097152.0 : 1099511627776.0; /* 2^21, 2^40 */
  const double scale = t->xf.scale;
  const double span = scale * (double)((uint64_t)1 << t->depth);
  double far = 0.0; /* the largest world coordinate of the root box */
  int ok = isfinite(scale) && scale >= min_scale && span < lim && scale * (double)t->band < lim;
  for (int i = 0; ok && i < 3; i++) {
    double a = fabs(t->xf.origin[i]) + span;
    ok = isfinite(a) && a < lim;
    if (a > far) far = a;
  }
  if (ok && far / scale <= max_voxels) return VX_OK;
  return vx_error_set(err, VX_ERR_INVALID_ARG,
                      "the tree's transform (origin %.6g %.6g %.6g, %.6g per voxel, %u^3 voxels) "
                      "is beyond the %s: the scale must be at least %g, the box's coordinates "
                      "below %g and within 2^%d voxels of the world origin", t->xf.origin[0],
                      t->xf.origin[1], t->xf.origin[2], scale, 1u << t->depth,
                      f ? "single precision that world coordinates are computed in"
                        : "double precision that rendering works in",
                      min_scale, lim, f ? 21 : 40);
}

void vx_transform_cell(const vx_transform *grid, uint64_t code, uint32_t cell_log2,
                       vx_transform *out) {
  uint32_t c[3];
  vx_morton_decode(code, &c[0], &c[1], &c[2]);
  *out = *grid;
  for (int i = 0; i < 3; i++)
    out->origin[i] = grid->origin[i] + (double)((int64_t)c[i] << cell_log2) * grid->scale;
}

void vx_octree_free(vx_octree *t) {
  if (!t) return;
  vx_free(t->nodes);
  vx_free(t->voxels);
  vx_free(t->node_color);
  vx_free(t->voxel_color);
  memset(t, 0, sizeof *t);
}

vx_status vx_octree_layout(vx_octree *t, vx_error *err) {
  if (t->depth < VX_MIN_DEPTH || t->depth > VX_MAX_DEPTH)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "tree depth %u outside [%d, %d]", t->depth,
                        VX_MIN_DEPTH, VX_MAX_DEPTH);
  uint32_t levels = t->levels_loaded ? t->levels_loaded : t->depth + 1;
  if (levels > t->depth + 1)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "levels_loaded %u > depth + 1", levels);
  t->levels_loaded = levels;
  uint64_t nodes = 0;
  for (uint32_t l = 0; l < t->depth && l < levels; l++) {
    t->level_first[l] = nodes;
    nodes += t->level_count[l];
    if (nodes > UINT32_MAX)
      return vx_error_set(err, VX_ERR_LIMIT, "more than 2^32 nodes (%llu at level %u)",
                          (unsigned long long)nodes, l);
  }
  uint64_t voxels = levels == t->depth + 1 ? t->level_count[t->depth] : 0;
  if (voxels > UINT32_MAX)
    return vx_error_set(err, VX_ERR_LIMIT, "more than 2^32 surface voxels (%llu)",
                        (unsigned long long)voxels);
  t->node_count = nodes;
  t->voxel_count = voxels;
  return VX_OK;
}

/* vx_octree_alloc, the nodes zeroed or (zero 0) left for the caller to write. */
static vx_status octree_alloc(vx_octree *t, int zero, vx_error *err) {
  vx_status st = vx_octree_layout(t, err);
  if (st != VX_OK) return st;
  uint64_t nodes = t->node_count, voxels = t->voxel_count;
  vx_free(t->nodes);
  vx_free(t->voxels);
  vx_free(t->node_color); /* colours of an old layout would not be parallel to the new arrays */
  vx_free(t->voxel_color);
  t->nodes = NULL;
  t->voxels = NULL;
  t->node_color = NULL;
  t->voxel_color = NULL;
  if (nodes) {
    t->nodes = (vx_node *)vx_malloc((size_t)nodes * sizeof(vx_node));
    if (!t->nodes)
      return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %llu nodes (%.1f MiB)",
                          (unsigned long long)nodes, nodes * 16.0 / 1048576.0);
    if (zero) memset(t->nodes, 0, (size_t)nodes * sizeof(vx_node));
  }
  if (voxels) {
    t->voxels = (vx_voxel *)vx_malloc(((size_t)voxels * sizeof(vx_voxel) + 15) & ~(size_t)15);
    if (!t->voxels) {
      vx_free(t->nodes);
      t->nodes = NULL;
      return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %llu voxels (%.1f MiB)",
                          (unsigned long long)voxels, voxels * 8.0 / 1048576.0);
    }
  }
  return VX_OK;
}

vx_status vx_octree_alloc(vx_octree *t, vx_error *err) { return octree_alloc(t, 1, err); }

vx_status vx_octree_alloc_unset(vx_octree *t, vx_error *err) { return octree_alloc(t, 0, err); }

vx_status vx_octree_build(uint32_t depth, const uint64_t *codes, const vx_voxel *field, uint64_t n,
                        vx_octree *out, vx_error *err) {
  memset(out, 0, sizeof *out);
  if (depth < VX_MIN_DEPTH || depth > VX_MAX_DEPTH)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "depth %u outside [%d, %d]", depth, VX_MIN_DEPTH,
                        VX_MAX_DEPTH);
  if (n == 0) return vx_error_set(err, VX_ERR_EMPTY, "no surface voxels: nothing to build");
  const uint64_t limit = (uint64_t)1 << (3 * depth);
  for (uint64_t i = 0; i < n; i++) {
    if (codes[i] >= limit)
      return vx_error_set(err, VX_ERR_INVALID_ARG, "Morton code %llu outside a %u-level grid",
                          (unsigned long long)codes[i], depth);
    if (i && codes[i] <= codes[i - 1])
      return vx_error_set(err, VX_ERR_INVALID_ARG, "Morton codes not sorted and unique at %llu",
                          (unsigned long long)i);
  }
  /* Count each level: the number of distinct prefixes of the sorted codes. */
  out->depth = depth;
  out->levels_loaded = depth + 1;
  out->level_count[depth] = n;
  for (int l = (int)depth - 1; l >= 0; l--) {
    uint32_t shift = 3 * (depth - (uint32_t)l);
    uint64_t c = 0, prev = 0;
    for (uint64_t i = 0; i < n; i++) {
      uint64_t p = codes[i] >> shift;
      if (i == 0 || p != prev) c++;
      prev = p;
    }
    out->level_count[l] = c;
  }
  vx_status s = vx_octree_alloc(out, err);
  if (s != VX_OK) return s;
  memcpy(out->voxels, field, (size_t)n * sizeof(vx_voxel));
  /* Masks: node k of level l collects the slots of its children's codes. */
  for (uint32_t l = 0; l < depth; l++) {
    uint32_t shift = 3 * (depth - l);
    vx_node *lvl = out->nodes + out->level_first[l];
    uint64_t k = (uint64_t)-1, prev = 0;
    for (uint64_t i = 0; i < n; i++) {
      uint64_t p = codes[i] >> shift;
      if (i == 0 || p != prev) k++;
      prev = p;
      uint32_t slot = (uint32_t)(codes[i] >> (shift - 3)) & 7u;
      lvl[k].info |= 1u << slot;
    }
  }
  return vx_octree_link(out, err);
}

/* Linking a level in pieces of this many nodes, side by side: the children each piece's masks
 * name, summed, then each piece's child indices from its sum's prefix. */
#define VX_LINK_PIECE ((uint64_t)1 << 20)
#define VX_LINK_PIECES 4096 /* a level holds fewer than 2^32 nodes */

typedef struct link_job {
  vx_node *lvl;
  uint64_t n, base; /* the level's nodes; its first child's index */
  int has_next;
  uint64_t sum[VX_LINK_PIECES]; /* children named in piece k, then the children before it */
} link_job;

static void link_count(void *ctx, uint64_t k) {
  link_job *j = (link_job *)ctx;
  const uint64_t a = k * VX_LINK_PIECE, b = a + VX_LINK_PIECE < j->n ? a + VX_LINK_PIECE : j->n;
  uint64_t run = 0;
  for (uint64_t i = a; i < b; i++) run += vx_popcount8(vx_node_mask(j->lvl[i].info));
  j->sum[k] = run;
}

static void link_piece(void *ctx, uint64_t k) {
  link_job *j = (link_job *)ctx;
  const uint64_t a = k * VX_LINK_PIECE, b = a + VX_LINK_PIECE < j->n ? a + VX_LINK_PIECE : j->n;
  uint64_t run = j->base + j->sum[k];
  for (uint64_t i = a; i < b; i++) {
    j->lvl[i].child = j->has_next ? (uint32_t)run : 0;
    run += vx_popcount8(vx_node_mask(j->lvl[i].info));
  }
}

vx_status vx_octree_link(vx_octree *t, vx_error *err) {
  uint32_t levels = t->levels_loaded;
  link_job job; /* on the stack (32 KiB): linking allocates nothing, so it fails only on masks */
  link_job *j = &job;
  vx_status s = VX_OK;
  for (uint32_t l = 0; s == VX_OK && l < t->depth && l < levels; l++) {
    j->lvl = t->nodes + t->level_first[l];
    j->n = t->level_count[l];
    j->has_next = l + 1 < levels;
    j->base = (l + 1 < t->depth) ? t->level_first[l + 1] : 0;
    const uint64_t next_count = t->level_count[l + 1];
    const uint64_t pieces = (j->n + VX_LINK_PIECE - 1) / VX_LINK_PIECE;
    if (pieces > VX_LINK_PIECES) {
      s = vx_error_set(err, VX_ERR_CORRUPT, "level %u holds %llu nodes, too many to index", l,
                       (unsigned long long)j->n);
      break;
    }
    vx_items_run(0, pieces, link_count, j);
    const uint64_t run = vx_exclusive_sum(j->sum, pieces);
    if (run > next_count)
      s = vx_error_set(err, VX_ERR_CORRUPT,
                       "level %u: child masks name more children than level %u holds (%llu)", l,
                       l + 1, (unsigned long long)next_count);
    else if (run != next_count)
      s = vx_error_set(err, VX_ERR_CORRUPT,
                       "level %u: child masks name %llu children but level %u holds %llu", l,
                       (unsigned long long)run, l + 1, (unsigned long long)next_count);
    else
      vx_items_run(0, pieces, link_piece, j);
  }
  return s;
}

vx_status vx_octree_validate_shape(const vx_octree *t, vx_error *err) {
  if (t->depth < VX_MIN_DEPTH || t->depth > VX_MAX_DEPTH)
    return vx_error_set(err, VX_ERR_CORRUPT, "depth %u outside [%d, %d]", t->depth, VX_MIN_DEPTH,
                        VX_MAX_DEPTH);
  uint32_t levels = t->levels_loaded;
  if (levels < 1 || levels > t->depth + 1)
    return vx_error_set(err, VX_ERR_CORRUPT, "levels_loaded %u outside [1, %u]", levels,
                        t->depth + 1);
  if (t->level_count[0] != 1)
    return vx_error_set(err, VX_ERR_CORRUPT, "level 0 must hold exactly one node, not %llu",
                        (unsigned long long)t->level_count[0]);
  if (!(t->band > 0.0f) || !(t->band < 1e6f))
    return vx_error_set(err, VX_ERR_CORRUPT, "field band %g is not a positive number", t->band);
  if (!(t->xf.scale > 0.0) || t->xf.scale != t->xf.scale || t->xf.scale > 1e300)
    return vx_error_set(err, VX_ERR_CORRUPT, "transform scale %g is not a positive number",
                        t->xf.scale);
  uint64_t sum = 0;
  for (uint32_t l = 0; l < t->depth && l < levels; l++) {
    if (t->level_first[l] != sum)
      return vx_error_set(err, VX_ERR_CORRUPT, "level %u starts at %llu, expected %llu", l,
                          (unsigned long long)t->level_first[l], (unsigned long long)sum);
    uint64_t cap = (uint64_t)1 << (3 * l);
    if (t->level_count[l] > cap)
      return vx_error_set(err, VX_ERR_CORRUPT, "level %u holds %llu nodes, more than 8^%u", l,
                          (unsigned long long)t->level_count[l], l);
    sum += t->level_count[l];
  }
  if (sum != t->node_count || (sum && !t->nodes))
    return vx_error_set(err, VX_ERR_CORRUPT, "node count %llu does not match levels (%llu)",
                        (unsigned long long)t->node_count, (unsigned long long)sum);
  int has_voxels = levels == t->depth + 1;
  if (has_voxels ? (t->voxel_count != t->level_count[t->depth] || (t->voxel_count && !t->voxels))
                 : t->voxel_count != 0)
    return vx_error_set(err, VX_ERR_CORRUPT, "voxel count %llu does not match level %u",
                        (unsigned long long)t->voxel_count, t->depth);
  return VX_OK;
}

vx_status vx_octree_validate(const vx_octree *t, vx_error *err) {
  vx_status s = vx_octree_validate_shape(t, err);
  if (s != VX_OK) return s;
  const uint32_t levels = t->levels_loaded;
  for (uint32_t l = 0; l < t->depth && l < levels; l++) {
    const vx_node *lvl = t->nodes + t->level_first[l];
    int has_next = l + 1 < levels;
    uint64_t next_base = (l + 1 < t->depth) ? t->level_first[l + 1] : 0;
    uint64_t next_count = t->level_count[l + 1];
    uint64_t run = 0;
    for (uint64_t k = 0; k < t->level_count[l]; k++) {
      uint32_t info = lvl[k].info, mask = vx_node_mask(info);
      if (!vx_node_sound(info, lvl[k].d)) {
        if ((mask == 0) != ((vx_node_flags(info) & VX_NODE_PRUNED) != 0))
          return vx_error_set(err, VX_ERR_CORRUPT, mask ? "level %u node %llu: pruned leaf with "
                              "children" : "level %u node %llu: no children but not marked as a "
                              "pruned leaf", l, (unsigned long long)k);
        return vx_error_set(err, VX_ERR_CORRUPT, "level %u node %llu: plane offset is not finite",
                            l, (unsigned long long)k);
      }
      if (has_next && mask && (uint64_t)lvl[k].child != next_base + run)
        return vx_error_set(err, VX_ERR_CORRUPT,
                            "level %u node %llu: child index %u, expected %llu", l,
                            (unsigned long long)k, lvl[k].child,
                            (unsigned long long)(next_base + run));
      run += vx_popcount8(mask);
    }
    if (run != next_count)
      return vx_error_set(err, VX_ERR_CORRUPT,
                          "level %u: masks name %llu children, level %u holds %llu", l,
                          (unsigned long long)run, l + 1, (unsigned long long)next_count);
  }
  return VX_OK;
}

void vx_octree_level_stats(const vx_octree *t, vx_level_bytes *stats) {
  memset(stats, 0, sizeof(vx_level_bytes) * (t->depth + 1));
  for (uint32_t l = 0; l <= t->depth; l++) {
    vx_level_bytes *s = &stats[l];
    s->cells = t->level_count[l];
    if (l < t->depth) {
      s->topology_bytes = s->cells * 5; /* child index + mask */
      s->lod_bytes = s->cells * 11;     /* errors, flags, normal, offset */
      if (l < t->levels_loaded) {
        const vx_node *lvl = t->nodes + t->level_first[l];
        for (uint64_t k = 0; k < s->cells; k++)
          if (vx_node_flags(lvl[k].info) & VX_NODE_PRUNED) s->leaves++;
      }
    } else {
      s->field_bytes = s->cells * sizeof(vx_voxel);
    }
  }
}
