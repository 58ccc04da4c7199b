/* SPDX-License-Identifier: Apache-2.0 */
/* svo_both_ways.h - a .svo read level by level (vx_svo_read_opts.threads 1) and with its sections
 * side by side (threads 3, formats/svo_read_levels.c): the same status and message, and for a
 * valid file the same tree, child indices, colours and transform, the second read side by side
 * (its level sections; its colour sections too when coloured). Needs check.h and
 * formats/svo_file.h included before it. */
#ifndef VOXLOD_TESTS_SVO_BOTH_WAYS_H
#define VOXLOD_TESTS_SVO_BOTH_WAYS_H

#include <string.h>

static int both_same_array(const void *a, const void *b, uint64_t bytes) {
  return bytes == 0 || (a && b && memcmp(a, b, (size_t)bytes) == 0);
}

static int both_same_tree(const vx_octree *a, const vx_octree *b) {
  return a->depth == b->depth && a->levels_loaded == b->levels_loaded &&
         a->node_count == b->node_count && a->voxel_count == b->voxel_count &&
         memcmp(a->level_count, b->level_count, sizeof a->level_count) == 0 &&
         memcmp(&a->xf, &b->xf, sizeof a->xf) == 0 && memcmp(&a->band, &b->band, 4) == 0 &&
         memcmp(&a->prune_error, &b->prune_error, 4) == 0 &&
         both_same_array(a->nodes, b->nodes, a->node_count * sizeof(vx_node)) &&
         both_same_array(a->voxels, b->voxels, a->voxel_count * sizeof(vx_voxel)) &&
         !a->node_color == !b->node_color && !a->voxel_color == !b->voxel_color &&
         (!a->node_color || both_same_array(a->node_color, b->node_color, a->node_count * 4)) &&
         (!a->voxel_color || both_same_array(a->voxel_color, b->voxel_color, a->voxel_count * 4));
}

/* *r holds the second read (free it when VX_OK), *e its message. */
static vx_status decode_both(const uint8_t *buf, size_t n, const vx_svo_read_opts *opts,
                             vx_octree *r, vx_error *e) {
  vx_svo_read_opts o1 = {-1, 0, 0, 1}, o3;
  if (opts) o1 = *opts;
  o1.threads = 1;
  o3 = o1;
  o3.threads = 3;
  vx_octree r1;
  vx_error e1;
  memset(&e1, 0, sizeof e1);
  memset(e, 0, sizeof *e);
  vx_svo_file_info i1, i3;
  vx_status s1 = vx_svo_decode(buf, n, &o1, &r1, &i1, &e1);
  vx_status s3 = vx_svo_decode(buf, n, &o3, r, &i3, e);
  CHECK_MSG(s1 == s3 && strcmp(e1.msg, e->msg) == 0, "level by level: %s (%s); side by side: "
            "%s (%s)", vx_status_str(s1), e1.msg, vx_status_str(s3), e->msg);
  if (s1 == VX_OK && s3 == VX_OK) {
    CHECK(both_same_tree(&r1, r));
    CHECK(!i1.side_by_side && i3.side_by_side == (r->node_color ? 2 : 1)); /* no fallback */
  }
  if (s1 == VX_OK) vx_octree_free(&r1);
  if (s3 != VX_OK) CHECK(r->nodes == NULL && r->voxels == NULL);
  return s3;
}

#endif
