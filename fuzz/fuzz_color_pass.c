/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_color_pass.c - libFuzzer target: the colour pass (vx_color_tree, voxelizer/color.c) on
 * arbitrary coloured soups: what an importer or a Python caller could hand it (material indices
 * and texture indices out of range, unknown alpha modes, NaN or huge UVs, tiny and odd-sized
 * textures, triangles on grid planes, vertex colours), built into a small tree first.
 *
 * Input: an 8-byte header, the texture's texels, 8 bytes per material, 48 bytes per triangle.
 *   byte 0: depth 1..5 (bits 0-2, modulo 5, plus 1); bit 3: dominant filter; bit 4: prune;
 *           bit 5: vertex colours; bit 6: no UVs
 *   byte 1: triangles (1..32); byte 2: materials (0..4; 0: no material table)
 *   bytes 3, 4: texture width, height (1..16 each); byte 5: textures (0..2)
 *   bytes 6, 7: unused
 *   texels: width x height x 4 bytes (shared by the textures)
 *   material: factor (4 bytes), texture index (int8: -1, 0, 1 or out of range), alpha mode
 *             (byte modulo 4: 3 is unknown), cutoff (byte / 255), one unused byte
 *   triangle: 9 int16 positions (/ 256), 1 byte material index (any), 6 UVs as int16 / 64 with
 *             the codes 0x7fff (NaN), 0x7ffe (infinity), 0x7ffd (1e30), 3 corner colours.
 * Checks (abort on failure): the pass succeeds and fills both colour arrays; two threads give the
 * bytes of one; with bit 4, colouring then pruning gives the bytes of pruning then colouring. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "svo/lod.h"
#include "sys/alloc.h"
#include "voxelizer/voxelizer.h"

static float uv_of(const uint8_t *p) {
  int16_t v = (int16_t)(p[0] | p[1] << 8);
  if (v == 0x7fff) return NAN;
  if (v == 0x7ffe) return INFINITY;
  if (v == 0x7ffd) return 1e30f;
  return (float)v / 64.0f;
}

static int copy_tree(const vx_octree *a, vx_octree *b) {
  *b = *a;
  b->nodes = (vx_node *)vx_malloc(a->node_count * sizeof(vx_node));
  b->voxels = (vx_voxel *)vx_malloc((a->voxel_count ? a->voxel_count : 1) * sizeof(vx_voxel));
  b->node_color = b->voxel_color = NULL;
  if (!b->nodes || !b->voxels) {
    vx_free(b->nodes);
    vx_free(b->voxels);
    memset(b, 0, sizeof *b);
    return 0;
  }
  memcpy(b->nodes, a->nodes, a->node_count * sizeof(vx_node));
  memcpy(b->voxels, a->voxels, a->voxel_count * sizeof(vx_voxel));
  return 1;
}

static int same_colors(const vx_octree *a, const vx_octree *b) {
  return a->node_count == b->node_count && a->voxel_count == b->voxel_count &&
         !memcmp(a->node_color, b->node_color, a->node_count * 4) &&
         !memcmp(a->voxel_color, b->voxel_color, a->voxel_count * 4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8) return 0;
  const uint8_t *h = data;
  const uint32_t depth = (h[0] & 7u) % 5u + 1u, ntri = h[1] % 32u + 1u, nmat = h[2] % 5u;
  const uint32_t tw = h[3] % 16u + 1u, th = h[4] % 16u + 1u, ntex = h[5] % 3u;
  const vx_color_filter filter = h[0] & 8u ? VX_COLOR_FILTER_DOMINANT : VX_COLOR_FILTER_MEAN;
  const int prune = h[0] & 16u, corners = h[0] & 32u, no_uv = h[0] & 64u;
  size_t need = 8 + (size_t)tw * th * 4 + (size_t)nmat * 8 + (size_t)ntri * 48;
  if (size < need) return 0;
  const uint8_t *p = data + 8;
  vx_soup s;
  memset(&s, 0, sizeof s);
  vx_soup_color *c = (vx_soup_color *)vx_calloc(1, sizeof *c);
  if (!c) return 0;
  s.color = c;
  c->textures = (vx_texture *)vx_calloc(ntex ? ntex : 1, sizeof(vx_texture));
  for (uint32_t i = 0; c->textures && i < ntex; i++) {
    c->textures[i].width = tw;
    c->textures[i].height = th;
    c->textures[i].rgba = (uint32_t *)vx_malloc((size_t)tw * th * 4);
    if (c->textures[i].rgba) memcpy(c->textures[i].rgba, p, (size_t)tw * th * 4);
  }
  c->texture_count = c->textures ? ntex : 0;
  p += (size_t)tw * th * 4;
  if (nmat) {
    c->materials = (vx_material *)vx_calloc(nmat, sizeof(vx_material));
    for (uint32_t i = 0; c->materials && i < nmat; i++, p += 8) {
      c->materials[i].factor = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                               (uint32_t)p[3] << 24;
      c->materials[i].texture = (int8_t)p[4];
      c->materials[i].alpha_mode = p[5] % 4u; /* 3: unknown */
      c->materials[i].alpha_cutoff = (float)p[6] / 255.0f;
    }
    c->material_count = c->materials ? nmat : 0;
  }
  float pos[32 * 9], uv[32 * 6];
  uint32_t mat[32], rgba[32 * 3];
  for (uint32_t t = 0; t < ntri; t++, p += 48) {
    for (int k = 0; k < 9; k++)
      pos[t * 9 + k] = (float)(int16_t)(p[2 * k] | p[2 * k + 1] << 8) / 256.0f;
    mat[t] = p[18];
    for (int k = 0; k < 6; k++) uv[t * 6 + k] = uv_of(p + 19 + 2 * k);
    for (int k = 0; k < 3; k++)
      rgba[t * 3 + k] = (uint32_t)p[31 + 4 * k] | (uint32_t)p[32 + 4 * k] << 8 |
                        (uint32_t)p[33 + 4 * k] << 16 | (uint32_t)p[34 + 4 * k] << 24;
  }
  /* the kept triangles and their attributes, in step (vx_soup_append drops degenerate ones) */
  uint32_t kept = 0;
  for (uint32_t t = 0; t < ntri; t++) {
    uint64_t before = s.tri_count;
    if (vx_soup_append(&s, pos + t * 9, 1, NULL) != VX_OK) break;
    if (s.tri_count == before) continue;
    mat[kept] = mat[t];
    memmove(uv + kept * 6, uv + t * 6, 6 * sizeof(float));
    memmove(rgba + kept * 3, rgba + t * 3, 3 * sizeof(uint32_t));
    kept++;
  }
  if (kept == 0 || kept != s.tri_count) {
    vx_soup_free(&s);
    return 0;
  }
  /* vx_soup_append kept c's arrays in step (material 0, uv 0, white corners): replaced by the
   * input's own attributes, out-of-range material indices included */
  vx_free(c->material);
  vx_free(c->uv);
  vx_free(c->corner_rgba);
  c->uv = NULL;
  c->corner_rgba = NULL;
  c->material = (uint32_t *)vx_malloc(kept * 4);
  if (c->material) memcpy(c->material, mat, kept * 4);
  if (!no_uv && (c->uv = (float *)vx_malloc(kept * 24))) memcpy(c->uv, uv, kept * 24);
  if (corners && (c->corner_rgba = (uint32_t *)vx_malloc(kept * 12)))
    memcpy(c->corner_rgba, rgba, kept * 12);
  vx_voxelize_opts o;
  memset(&o, 0, sizeof o);
  o.resolution = 1u << depth;
  o.threads = 1;
  vx_octree t1, t2, b;
  memset(&b, 0, sizeof b);
  if (vx_voxelize(&s, &o, &t1, NULL, NULL) != VX_OK) {
    vx_soup_free(&s);
    return 0;
  }
  if (!copy_tree(&t1, &t2)) abort();
  vx_error e;
  if (vx_color_tree(&s, &t1, filter, 1, 0, &e) != VX_OK || !t1.node_color || !t1.voxel_color)
    abort();
  if (vx_color_tree(&s, &t2, filter, 2, 0, &e) != VX_OK || !same_colors(&t1, &t2)) abort();
  if (prune) {
    /* colour then prune (t2, coloured) against prune then colour (b) */
    if (!copy_tree(&t1, &b)) abort();
    if (vx_octree_prune(&t2, 0.5f, &e) != VX_OK || vx_octree_prune(&b, 0.5f, &e) != VX_OK)
      abort();
    if (vx_color_tree(&s, &b, filter, 1, 0, &e) != VX_OK || !same_colors(&t2, &b)) abort();
  }
  vx_octree_free(&t1);
  vx_octree_free(&t2);
  vx_octree_free(&b);
  vx_soup_free(&s);
  return 0;
}
