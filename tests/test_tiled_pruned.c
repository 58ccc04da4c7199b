/* SPDX-License-Identifier: Apache-2.0 */
/* test_tiled_pruned.c - pruned tiled trees (convert --error E with tiles): every tile is pruned by
 * the rule of vx_octree_prune, nothing above the tiles' roots is.
 * - The tiled file, joined, is the untiled full build pruned by that rule (a reference written
 *   here, level by level), node for node and voxel for voxel, and its bytes do not depend on the
 *   number of threads.
 * - Read tile by tile it answers as the joined tree does: the cut at every level (what `export`
 *   and `mesh --lod` read) bit for bit, samples at every cut bit for bit (on the GPU too where
 *   there is one), frames of the tiled renderer as the joined tree's.
 * - Built as tasks (two plans, records, the merge), it is the same file.
 * The scene: a sphere in a torus (tiles cut through) and a box (flat faces: whole tiles whose
 * plane holds them, so pruned to their root).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <unistd.h>
#include "lib/internal.h"
#include "lib/tiled_cut.h"
#include "svo/lod.h"
#define W 160 /* the images (tiled_view.h) */
#define H 120
#include "tiled_view.h"
#include "voxlod/render.h"

static char dir[64];

static vx_mesh *scene(vx_soup *s) {
  memset(s, 0, sizeof *s);
  meshgen_sphere(s, 0.2, 0.1, 0.0, 0.6, 40, 20);
  meshgen_torus(s, 0.0, 0.0, 0.1, 1.0, 0.25, 48, 16);
  const double lo[3] = {-1.25, -1.25, -0.9}, hi[3] = {-0.45, -0.5, -0.35};
  meshgen_box(s, lo, hi);
  return tiled_mesh_of(s);
}

static vx_status convert(const vx_mesh *m, uint32_t res, uint32_t T, float E, int threads,
                         const char *path, vx_error *e) {
  vx_convert_opts o = tiled_opts(res, T, VX_DEVICE_CPU, 0, threads);
  o.max_error = E;
  return vx_convert_to_file(m, &o, path, NULL, e);
}

/* The rule, written again: a node of level >= K whose plane is valid and whose max error bound
 * is at most E replaces its subtree (mask 0, flag VX_NODE_PRUNED), top-down. Per level the kept
 * nodes (their child fields 0) and the kept voxels, into nodes[] and vox[] (count[l] each). */
static void reference_prune(const vx_octree *t, float E, uint32_t K, vx_node *nodes,
                            vx_voxel *vox, uint64_t *count) {
  const uint32_t D = t->depth;
  uint8_t *keep = (uint8_t *)calloc(t->node_count + t->voxel_count + 1, 1);
  uint8_t *next = (uint8_t *)calloc(t->node_count + t->voxel_count + 1, 1);
  uint64_t w = 0;
  keep[0] = 1;
  for (uint32_t l = 0; l <= D; l++) {
    count[l] = 0;
    uint64_t nn = 0;
    for (uint64_t k = 0; k < t->level_count[l]; k++) {
      if (l == D) {
        if (keep[k]) vox[count[l]++] = t->voxels[k];
        continue;
      }
      vx_node nd = t->nodes[t->level_first[l] + k];
      const uint32_t mask = nd.info & 0xffu, errmax = nd.info >> 8 & 0xffu,
                     flags = nd.info >> 24;
      const int leaf = keep[k] && l >= K && mask && (flags & VX_NODE_PLANE_OK) && errmax < 255 &&
                       vx_err_decode(errmax) <= E;
      for (uint32_t c = 0; c < 8; c++)
        if (mask >> c & 1u) next[nn++] = (uint8_t)(keep[k] && !leaf);
      if (!keep[k]) continue;
      if (leaf) nd.info = (nd.info & 0x00ffff00u) | (flags | VX_NODE_PRUNED) << 24;
      nd.child = 0;
      nodes[w++] = nd;
      count[l]++;
    }
    uint8_t *x = keep;
    keep = next;
    next = x;
  }
  free(keep);
  free(next);
}

/* The joined tiled file t against the reference from the untiled full tree u. */
static void joined_is_reference(const vx_octree *u, const vx_octree *t, float E, uint32_t K) {
  const uint32_t D = u->depth;
  vx_node *nodes = (vx_node *)calloc(u->node_count + 1, sizeof *nodes);
  vx_voxel *vox = (vx_voxel *)calloc(u->voxel_count + 1, sizeof *vox);
  uint64_t count[VX_MAX_DEPTH + 1];
  reference_prune(u, E, K, nodes, vox, count);
  CHECK(t->depth == D && t->prune_error == E);
  uint64_t at = 0, differ = 0;
  for (uint32_t l = 0; l <= D && t->depth == D; l++) {
    CHECK_MSG(t->level_count[l] == count[l], "level %u: %llu nodes, the reference %llu", l,
              (unsigned long long)t->level_count[l], (unsigned long long)count[l]);
    if (t->level_count[l] != count[l]) return;
    if (l == D) {
      CHECK(memcmp(t->voxels, vox, count[l] * sizeof *vox) == 0);
      break;
    }
    for (uint64_t k = 0; k < count[l]; k++, at++) {
      const vx_node *a = &t->nodes[t->level_first[l] + k], *b = &nodes[at];
      differ += a->info != b->info || a->normal != b->normal || memcmp(&a->d, &b->d, 4) != 0;
    }
  }
  CHECK_MSG(differ == 0, "%llu nodes differ from the reference", (unsigned long long)differ);
  free(nodes);
  free(vox);
}

/* Points: uniform in the grid's box, and near the surface (around the soup's vertices). */
static float *points(const vx_tree_info *ti, const vx_soup *s, uint64_t n) {
  float *p = (float *)malloc(3 * n * sizeof(float));
  uint64_t st = 0x9e3779b97f4a7c15ull;
  const double edge = ti->scale * (double)(1ull << ti->depth);
  for (uint64_t i = 0; i < n; i++)
    for (int a = 0; a < 3; a++) {
      st = st * 6364136223846793005ull + 1442695040888963407ull;
      const double r = (double)(st >> 11) / 9007199254740992.0;
      if (i % 2 == 0) {
        p[3 * i + a] = (float)(ti->origin[a] + r * edge);
      } else {
        const uint64_t v = (st >> 20) % (s->tri_count * 3);
        p[3 * i + a] = (float)(s->pos[3 * v + a] + (r - 0.5) * 4.0 * ti->scale);
      }
    }
  return p;
}

static void tile_by_tile_is_joined(const char *path, const vx_soup *s) {
  vx_error e;
  vx_tree *j = NULL;
  vx_tiled_file *f = NULL;
  CHECK_MSG(vx_tree_load(path, NULL, &j, &e) == VX_OK, "%s", e.msg);
  CHECK_MSG(vx_tiled_file_open(path, NULL, &f, &e) == VX_OK, "%s", e.msg);
  if (!j || !f) return;
  const uint32_t D = j->oct.depth;
  uint64_t plane_cells = 0;
  for (uint32_t L = 0; L <= D; L++) { /* the cut: export, the level trees */
    vx_cut a, b;
    CHECK_MSG(vx_cut_build(&j->oct, L, 0, NULL, NULL, &a, &e) == VX_OK, "%s", e.msg);
    CHECK_MSG(vx_tiled_cut(f, L, 0, NULL, NULL, &b, &e) == VX_OK, "%s", e.msg);
    CHECK_MSG(a.count == b.count && a.plane_cells == b.plane_cells,
              "level %u: %llu cells joined, %llu tile by tile", L, (unsigned long long)a.count,
              (unsigned long long)b.count);
    CHECK(a.count == b.count && memcmp(a.codes, b.codes, a.count * sizeof *a.codes) == 0 &&
          memcmp(a.field, b.field, a.count * sizeof *a.field) == 0);
    plane_cells += a.plane_cells;
    vx_cut_free(&a);
    vx_cut_free(&b);
  }
  CHECK(plane_cells > 0); /* pruned leaves were cut */
  vx_tree_info ti;
  memset(&ti, 0, sizeof ti);
  ti.struct_size = sizeof ti;
  vx_tree_get_info(j, &ti);
  const uint64_t n = 20000;
  float *p = points(&ti, s, n);
  float *d0 = (float *)malloc(n * 4), *d1 = (float *)malloc(n * 4);
  float *g0 = (float *)malloc(n * 12), *g1 = (float *)malloc(n * 12);
  uint8_t *f0 = (uint8_t *)malloc(n), *f1 = (uint8_t *)malloc(n);
  uint64_t planes = 0;
  int gpu_levels = 0;
  for (int level = -1; level <= (int)D; level++) { /* samples */
    vx_sample_opts o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.lod = level < 0 ? VX_LOD_FINEST : VX_LOD_LEVEL;
    o.level = level < 0 ? 0 : level;
    o.threads = 2;
    vx_tiled_sample_opts to;
    memset(&to, 0, sizeof to);
    to.struct_size = sizeof to;
    CHECK_MSG(vx_tree_sample(j, &o, p, n, d0, g0, f0, NULL, &e) == VX_OK, "%s", e.msg);
    CHECK_MSG(vx_tiled_file_sample(f, &o, &to, p, n, d1, g1, f1, NULL, &e) == VX_OK, "%s",
              e.msg);
    const uint64_t diff = tiled_samples_differ(n, d0, g0, f0, d1, g1, f1);
    for (uint64_t i = 0; level < 0 && i < n; i++) planes += (f0[i] & VX_SAMPLE_PLANE) != 0;
    CHECK_MSG(diff == 0, "level %d: %llu of %llu samples differ", level,
              (unsigned long long)diff, (unsigned long long)n);
    if (vx_gpu_available()) { /* tile by tile on the GPU: the same bits */
      o.device = VX_DEVICE_GPU;
      CHECK_MSG(vx_tiled_file_sample(f, &o, &to, p, n, d1, g1, f1, NULL, &e) == VX_OK, "%s",
                e.msg);
      const uint64_t gdiff = tiled_samples_differ(n, d0, g0, f0, d1, g1, f1);
      CHECK_MSG(gdiff == 0, "GPU, level %d: %llu of %llu samples differ", level,
                (unsigned long long)gdiff, (unsigned long long)n);
      gpu_levels++;
    }
  }
  if (gpu_levels) printf("  samples on the GPU at %d cuts: the same bits\n", gpu_levels);
  CHECK(planes > 100); /* full detail reads pruned leaves' planes */
  free(p);
  free(d0);
  free(d1);
  free(g0);
  free(g1);
  free(f0);
  free(f1);
  /* frames: the tiled renderer (tile by tile, on the GPU where there is one) against the joined
   * tree's */
  const vx_device dev = vx_gpu_available() ? VX_DEVICE_GPU : VX_DEVICE_CPU;
  vx_renderer *ru = tv_renderer(NULL, j, dev, 0, 0);
  vx_renderer *rt = tv_renderer(f, NULL, dev, 0, 0);
  vx_camera cams[2];
  tv_camera(&cams[0], 2.6, 1.5, 2.2, 0.0, 0.0, 0.1);
  tv_camera(&cams[1], -2.4, -1.9, -1.8, -0.6, -0.6, -0.5); /* facing the box */
  static image a, b;
  for (int c = 0; c < 2; c++) {
    for (int level = -1; level <= (int)D; level += (level < 0 ? 3 : 2)) {
      const vx_lod_mode lod = level < 0 ? VX_LOD_FINEST : VX_LOD_LEVEL;
      render(ru, &cams[c], lod, level < 0 ? 0 : level, &a, NULL);
      render(rt, &cams[c], lod, level < 0 ? 0 : level, &b, NULL);
      uint64_t px = 0, hit = 0, hits = 0;
      for (int i = 0; i < W * H; i++) {
        px += memcmp(a.rgb + 3 * i, b.rgb + 3 * i, 3) != 0;
        hit += (a.depth[i] < INFINITY) != (b.depth[i] < INFINITY);
        hits += a.depth[i] < INFINITY;
      }
      CHECK_MSG(hits > W * H / 20 && px <= W * H / 500 && hit <= W * H / 1000,
                "camera %d level %d: %llu pixels differ, %llu hit/miss, %llu hits", c, level,
                (unsigned long long)px, (unsigned long long)hit, (unsigned long long)hits);
    }
  }
  printf("  frames on the %s, tile by tile: the joined tree's\n",
         dev == VX_DEVICE_GPU ? "GPU" : "CPU");
  vx_renderer_free(ru);
  vx_renderer_free(rt);
  vx_tree_free(j);
  vx_tiled_file_close(f);
}

/* Two plans, every tile as a task, the records merged: the converted file. */
static void tasks_are_convert(const vx_mesh *m, uint32_t res, uint32_t T, float E,
                              const char *want) {
  vx_error e;
  char got[128];
  snprintf(got, sizeof got, "%s/got.svo", dir);
  vx_convert_opts o = tiled_opts(res, T, VX_DEVICE_CPU, 0, 0);
  o.max_error = E;
  vx_tile_plan *p[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++)
    CHECK_MSG(vx_tile_plan_create(m, &o, &p[i], &e) == VX_OK, "%s", e.msg);
  vx_tile_plan_info in;
  memset(&in, 0, sizeof in);
  in.struct_size = sizeof in;
  CHECK(p[0] && vx_tile_plan_get_info(p[0], &in) == VX_OK);
  const uint64_t n = in.tiles;
  vx_tile_record *rec = (vx_tile_record *)calloc(n + 1, sizeof *rec);
  char(*path)[128] = (char(*)[128])calloc(n + 1, 128);
  const char **pp = (const char **)calloc(n + 1, sizeof *pp);
  for (uint64_t k = 0; k < n; k++) {
    snprintf(path[k], 128, "%s/tile-%llu.svo", dir, (unsigned long long)k);
    pp[k] = path[k];
    CHECK_MSG(vx_tile_plan_build(p[k % 2], k, path[k], &rec[k], &e) == VX_OK,
              "tile %llu: %s", (unsigned long long)k, e.msg);
  }
  vx_conversion *c = NULL;
  CHECK_MSG(vx_tile_merge(got, rec, pp, n, &c, &e) == VX_OK, "%s", e.msg);
  vx_conversion_free(c);
  CHECK(tiled_same_file(want, got));
  for (uint64_t k = 0; k < n; k++) unlink(path[k]);
  unlink(got);
  free(rec);
  free(path);
  free(pp);
  vx_tile_plan_free(p[0]);
  vx_tile_plan_free(p[1]);
}

static void case_(uint32_t res, uint32_t T, float E) {
  vx_soup s;
  vx_mesh *m = scene(&s);
  char u[128], t[128], t1[128];
  snprintf(u, sizeof u, "%s/u.svo", dir);
  snprintf(t, sizeof t, "%s/t.svo", dir);
  snprintf(t1, sizeof t1, "%s/t1.svo", dir);
  vx_error e;
  CHECK_MSG(convert(m, res, 0, 0.0f, 0, u, &e) == VX_OK, "%s", e.msg);
  CHECK_MSG(convert(m, res, T, E, 0, t, &e) == VX_OK, "%s", e.msg);
  CHECK_MSG(convert(m, res, T, E, 1, t1, &e) == VX_OK, "%s", e.msg);
  CHECK(tiled_same_file(t, t1)); /* threads */
  vx_tree *a = NULL, *b = NULL;
  CHECK(vx_tree_load(u, NULL, &a, &e) == VX_OK);
  CHECK(vx_tree_load(t, NULL, &b, &e) == VX_OK);
  const uint32_t D = a ? a->oct.depth : 0, K = D - T;
  if (a && b) joined_is_reference(&a->oct, &b->oct, E, K);
  /* what pruning above the tiles would have removed too (the untiled --error E) */
  uint64_t whole = 0, roots = 0;
  if (a && b) {
    vx_octree c = a->oct;
    memset(&a->oct, 0, sizeof a->oct);
    CHECK(vx_octree_prune(&c, E, &e) == VX_OK);
    whole = c.node_count;
    vx_octree_free(&c);
    const uint64_t base = b->oct.level_first[K];
    for (uint64_t k = 0; k < b->oct.level_count[K]; k++)
      roots += (vx_node_flags(b->oct.nodes[base + k].info) & VX_NODE_PRUNED) != 0;
    printf("%u^3 in %u^3 tiles, E %g: %llu nodes (untiled pruned: %llu), %llu of %llu tiles "
           "pruned to their root: the reference\n", res, 1u << T, (double)E,
           (unsigned long long)b->oct.node_count, (unsigned long long)whole,
           (unsigned long long)roots, (unsigned long long)b->oct.level_count[K]);
  }
  vx_tree_free(a);
  vx_tree_free(b);
  tile_by_tile_is_joined(t, &s);
  tasks_are_convert(m, res, T, E, t);
  vx_mesh_free(m);
  vx_soup_free(&s);
  unlink(u);
  unlink(t);
  unlink(t1);
}

static void tiles_of_16(void) { case_(128, 4, 0.5f); }
static void tiles_of_8(void) { case_(64, 3, 2.0f); }

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/voxlod-pruned-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  RUN(tiles_of_16);
  RUN(tiles_of_8);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) return 1;
  return check_summary();
}
