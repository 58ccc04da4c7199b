/* SPDX-License-Identifier: Apache-2.0 */
/* test_api_color.c - coloured trees through the public header: a converted sphere whose file
 * gets colour sections from tests/svo_spec.h (docs/SVO_FORMAT.md written again, no library
 * code), then loading, the colour arrays, statistics, partial loads, saving, pruning, and
 * vx_tree_colors against a brute force over every cell, with its errors. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "voxlod.h"
#include "check.h"
#include "svo_spec.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static uint64_t rng_state = 0x853c49e6748fea9bull;
static double urand(void) { /* [0, 1) */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* A UV sphere of radius r at the origin. */
static vx_mesh *sphere_mesh(double r, int seg, int rings) {
  uint64_t nv = (uint64_t)(rings - 1) * seg + 2, nf = (uint64_t)seg * 2 * (rings - 1);
  float *v = (float *)malloc(nv * 3 * sizeof(float));
  uint32_t *f = (uint32_t *)malloc(nf * 3 * sizeof(uint32_t));
  float *p = v;
  for (int i = 1; i < rings; i++)
    for (int j = 0; j < seg; j++) {
      double th = M_PI * i / rings, ph = 2 * M_PI * j / seg;
      *p++ = (float)(r * sin(th) * cos(ph));
      *p++ = (float)(r * cos(th));
      *p++ = (float)(r * sin(th) * sin(ph));
    }
  uint32_t top = (uint32_t)((rings - 1) * seg), bot = top + 1;
  *p++ = 0, *p++ = (float)r, *p++ = 0;
  *p++ = 0, *p++ = (float)-r, *p++ = 0;
  uint32_t *q = f;
  for (int j = 0; j < seg; j++) {
    uint32_t a = (uint32_t)j, b = (uint32_t)((j + 1) % seg), base = (uint32_t)((rings - 2) * seg);
    *q++ = top, *q++ = b, *q++ = a;
    *q++ = bot, *q++ = base + a, *q++ = base + b;
  }
  for (int i = 0; i < rings - 2; i++)
    for (int j = 0; j < seg; j++) {
      uint32_t a = (uint32_t)(i * seg + j), b = (uint32_t)(i * seg + (j + 1) % seg);
      *q++ = a, *q++ = b, *q++ = a + (uint32_t)seg;
      *q++ = b, *q++ = b + (uint32_t)seg, *q++ = a + (uint32_t)seg;
    }
  vx_mesh *m = NULL;
  vx_error e;
  CHECK_MSG(vx_mesh_from_arrays(v, nv, f, nf, &m, &e) == VX_OK, "%s", e.msg);
  free(v);
  free(f);
  return m;
}

static vx_tree *convert_tree(vx_mesh *m, uint32_t res) {
  vx_convert_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.resolution = res;
  o.device = VX_DEVICE_CPU;
  vx_conversion *b = NULL;
  vx_error e;
  CHECK_MSG(vx_convert(m, &o, &b, &e) == VX_OK, "%s", e.msg);
  vx_tree *t = vx_conversion_take_tree(b);
  vx_conversion_free(b);
  return t;
}

static vx_tree_info info_of(const vx_tree *t) {
  vx_tree_info i;
  memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  CHECK(vx_tree_get_info(t, &i) == VX_OK);
  return i;
}

/* Every cell of a (loaded) tree: level and coordinates, in array order (nodes, then voxels),
 * from the masks in the raw node records (byte 4 of 16). */
typedef struct cells {
  uint64_t n, nodes;
  uint32_t depth;
  uint32_t *xyz;
  uint8_t *lvl, *mask;
} cells;

static cells cells_of(const vx_tree *t) {
  cells c;
  vx_tree_info i = info_of(t);
  c.depth = i.depth;
  c.nodes = i.node_count;
  c.n = i.node_count + i.voxel_count;
  uint64_t count[16] = {0};
  for (uint32_t l = 0; l <= i.depth; l++) count[l] = vx_tree_level_count(t, l);
  const uint8_t *nodes = (const uint8_t *)vx_tree_nodes(t, NULL);
  c.mask = (uint8_t *)calloc(c.nodes + 1, 1);
  uint64_t loaded = 0;
  for (uint32_t l = 0; l < i.depth && l < i.levels_loaded; l++) loaded += count[l];
  CHECK(loaded == c.nodes);
  for (uint64_t k = 0; k < c.nodes; k++) c.mask[k] = nodes[16 * k + 4];
  /* a partial load: the last loaded level's children are not there */
  uint64_t last = i.levels_loaded - 1;
  if (last < i.depth) {
    for (uint64_t k = c.nodes - count[last]; k < c.nodes; k++) c.mask[k] = 0;
    for (uint32_t l = (uint32_t)last + 1; l <= i.depth; l++) count[l] = 0;
  }
  c.xyz = (uint32_t *)malloc((c.n + 1) * 3 * sizeof(uint32_t));
  c.lvl = (uint8_t *)malloc(c.n + 1);
  spec_cells(last < i.depth ? (uint32_t)last : i.depth, count, c.mask, c.xyz, c.lvl);
  return c;
}

static void cells_free(cells *c) {
  free(c->xyz);
  free(c->lvl);
  free(c->mask);
}

/* The sphere's file with colour sections (spec_color of each cell's position). */
static uint8_t *colored_file(const vx_tree *t, size_t *n) {
  void *grey = NULL;
  size_t gn = 0;
  vx_error e;
  CHECK_MSG(vx_tree_encode(t, NULL, &grey, &gn, &e) == VX_OK, "%s", e.msg);
  cells c = cells_of(t);
  uint32_t *col = (uint32_t *)malloc(c.n * sizeof(uint32_t));
  for (uint64_t k = 0; k < c.n; k++)
    col[k] = spec_color(c.lvl[k], c.xyz[3 * k], c.xyz[3 * k + 1], c.xyz[3 * k + 2]);
  uint8_t *out = spec_colorize((const uint8_t *)grey, gn, col, 19, n);
  CHECK(out != NULL);
  free(col);
  cells_free(&c);
  vx_buffer_free(grey);
  return out;
}

static uint64_t morton(uint64_t x, uint64_t y, uint64_t z) {
  uint64_t m = 0;
  for (int b = 0; b < 21; b++)
    m |= (x >> b & 1) << (3 * b) | (y >> b & 1) << (3 * b + 1) | (z >> b & 1) << (3 * b + 2);
  return m;
}

/* The reference: every cell of level L there is (a pruned leaf above L stands for all its
 * level-L cells), the nearest to the point's cell within Chebyshev radius r by centre distance,
 * ties to the smaller Morton code. */
static uint32_t brute_color(const vx_tree *t, const cells *c, uint32_t L, const float p[3],
                            int *near) {
  vx_tree_info i = info_of(t);
  const uint32_t *nc = vx_tree_node_colors(t, NULL), *vc = vx_tree_voxel_colors(t, NULL);
  double size = (double)(1u << (i.depth - L));
  int64_t r = (int64_t)ceil((double)i.band / size), q[3];
  for (int a = 0; a < 3; a++) {
    double g = floor(((double)p[a] - i.origin[a]) / (i.scale * size));
    if (!(g > -1e9 && g < 1e9)) return 0;
    q[a] = (int64_t)g;
  }
  int found = 0;
  uint64_t best_d2 = 0, best_m = 0;
  uint32_t best = 0;
  for (uint64_t k = 0; k < c->n; k++) {
    uint32_t l = c->lvl[k];
    int pruned_leaf = k < c->nodes && c->mask[k] == 0 && l < L;
    if (l != L && !pruned_leaf) continue;
    uint32_t span = 1u << (L - l);
    for (uint32_t dz = 0; dz < span; dz++)
      for (uint32_t dy = 0; dy < span; dy++)
        for (uint32_t dx = 0; dx < span; dx++) {
          int64_t x = (int64_t)c->xyz[3 * k] * span + dx, y = (int64_t)c->xyz[3 * k + 1] * span + dy,
                  z = (int64_t)c->xyz[3 * k + 2] * span + dz;
          int64_t ex = llabs(x - q[0]), ey = llabs(y - q[1]), ez = llabs(z - q[2]);
          int64_t cheb = ex > ey ? (ex > ez ? ex : ez) : (ey > ez ? ey : ez);
          if (cheb > r) continue;
          uint64_t d2 = (uint64_t)(ex * ex + ey * ey + ez * ez), m = morton((uint64_t)x, (uint64_t)y, (uint64_t)z);
          if (!found || d2 < best_d2 || (d2 == best_d2 && m < best_m)) {
            found = 1;
            best_d2 = d2;
            best_m = m;
            best = k < c->nodes ? nc[k] : vc[k - c->nodes];
          }
        }
  }
  *near = found && best_d2 > 0;
  return best;
}

/* Points near the unit sphere (within a few cells), some anywhere in a box around it. */
static float *points_near_sphere(int n, double spread) {
  float *p = (float *)malloc((size_t)n * 3 * sizeof(float));
  for (int i = 0; i < n; i++) {
    if (i % 5 == 4) {
      for (int a = 0; a < 3; a++) p[3 * i + a] = (float)(urand() * 2.6 - 1.3);
      continue;
    }
    double z = urand() * 2 - 1, ph = urand() * 2 * M_PI, s = sqrt(1 - z * z);
    double rad = 1.0 + (urand() * 2 - 1) * spread;
    p[3 * i] = (float)(rad * s * cos(ph));
    p[3 * i + 1] = (float)(rad * s * sin(ph));
    p[3 * i + 2] = (float)(rad * z);
  }
  return p;
}

static int compare_colors(const vx_tree *t, int level, const float *pts, int n) {
  cells c = cells_of(t);
  vx_tree_info i = info_of(t);
  uint32_t L = level < 0 ? i.levels_loaded - 1 : (uint32_t)level;
  uint8_t *rgba = (uint8_t *)malloc((size_t)n * 4);
  vx_error e;
  CHECK_MSG(vx_tree_colors(t, pts, (uint64_t)n, level, rgba, &e) == VX_OK, "%s", e.msg);
  int bad = 0, zero = 0, nearest = 0;
  for (int k = 0; k < n; k++) {
    int near = 0;
    uint32_t want = brute_color(t, &c, L, pts + 3 * k, &near);
    nearest += near;
    uint32_t got = (uint32_t)rgba[4 * k] | (uint32_t)rgba[4 * k + 1] << 8 |
                   (uint32_t)rgba[4 * k + 2] << 16 | (uint32_t)rgba[4 * k + 3] << 24;
    if (got != want && bad++ < 5)
      fprintf(stderr, "  level %d point %d (%g %g %g): %08x, brute force %08x\n", level, k,
              pts[3 * k], pts[3 * k + 1], pts[3 * k + 2], got, want);
    zero += want == 0;
  }
  CHECK_MSG(bad == 0, "level %d: %d of %d points differ", level, bad, n);
  /* the points cover the three cases: a cell contains them, a cell near them, none */
  CHECK_MSG(zero < n / 2 && (L < 4 || (zero > 0 && nearest > 0)),
            "level %d: %d of %d points without colour, %d by a cell nearby", level, zero, n, nearest);
  free(rgba);
  cells_free(&c);
  return bad;
}

static void api_color_load_arrays_and_stats(void) {
  vx_mesh *m = sphere_mesh(1.0, 32, 16);
  vx_tree *grey = convert_tree(m, 32);
  vx_tree_info gi = info_of(grey);
  CHECK(gi.has_color == 0 && gi.color_bytes == 0);
  CHECK(vx_tree_node_colors(grey, NULL) == NULL && vx_tree_voxel_colors(grey, NULL) == NULL);
  size_t n;
  uint8_t *file = colored_file(grey, &n);
  vx_tree *t = NULL;
  vx_error e;
  CHECK_MSG(vx_tree_load_memory(file, n, NULL, &t, &e) == VX_OK, "%s", e.msg);
  vx_tree_info ti = info_of(t);
  CHECK(ti.has_color == 1 && ti.color_bytes == 4 * (ti.node_count + ti.voxel_count));
  CHECK(ti.node_count == gi.node_count && ti.voxel_count == gi.voxel_count);
  uint64_t nn = 0, nv = 0;
  const uint32_t *nc = vx_tree_node_colors(t, &nn), *vc = vx_tree_voxel_colors(t, &nv);
  CHECK(nc && vc && nn == ti.node_count && nv == ti.voxel_count);
  cells c = cells_of(t);
  int wrong = 0;
  for (uint64_t k = 0; k < c.n; k++) {
    uint32_t want = spec_color(c.lvl[k], c.xyz[3 * k], c.xyz[3 * k + 1], c.xyz[3 * k + 2]);
    wrong += (k < c.nodes ? nc[k] : vc[k - c.nodes]) != want;
  }
  CHECK_MSG(wrong == 0, "%d colours differ", wrong);
  cells_free(&c);
  uint64_t disk = 0;
  for (uint32_t l = 0; l <= ti.depth; l++) {
    vx_level_stats ls, gs;
    memset(&ls, 0, sizeof ls);
    ls.struct_size = sizeof ls;
    gs = ls;
    CHECK(vx_tree_get_level(t, l, &ls) == VX_OK && vx_tree_get_level(grey, l, &gs) == VX_OK);
    CHECK(ls.color_bytes == 4 * ls.cells && ls.color_disk_bytes > 0 && gs.color_bytes == 0);
    disk += ls.disk_bytes + ls.color_disk_bytes;
  }
  CHECK(disk < ti.file_bytes && ti.file_bytes == n);
  /* saved and loaded again: the same colours */
  char path[256];
  snprintf(path, sizeof path, "/tmp/voxlod_api_color_%d.svo", (int)getpid());
  CHECK_MSG(vx_tree_save(t, path, NULL, &e) == VX_OK, "%s", e.msg);
  vx_tree *u = NULL;
  CHECK_MSG(vx_tree_load(path, NULL, &u, &e) == VX_OK, "%s", e.msg);
  uint64_t un = 0, uv = 0;
  const uint32_t *unc = vx_tree_node_colors(u, &un), *uvc = vx_tree_voxel_colors(u, &uv);
  CHECK(un == nn && uv == nv && unc && uvc && memcmp(unc, nc, nn * 4) == 0 &&
        memcmp(uvc, vc, nv * 4) == 0);
  vx_tree_free(u);
  /* partial load: node colours of the levels loaded, no voxel colours */
  vx_read_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.struct_size = sizeof ro;
  ro.levels = 3;
  CHECK_MSG(vx_tree_load(path, &ro, &u, &e) == VX_OK, "%s", e.msg);
  unc = vx_tree_node_colors(u, &un);
  CHECK(unc && un == 1 + vx_tree_level_count(t, 1) + vx_tree_level_count(t, 2));
  CHECK(unc && memcmp(unc, nc, un * 4) == 0);
  CHECK(vx_tree_voxel_colors(u, &uv) == NULL && uv == 0);
  vx_tree_info ui = info_of(u);
  CHECK(ui.has_color == 1 && ui.color_bytes == 4 * un);
  vx_tree_free(u);
  unlink(path);
  /* the memory limit counts the colours */
  void *gbytes = NULL;
  size_t gn = 0;
  CHECK(vx_tree_encode(grey, NULL, &gbytes, &gn, NULL) == VX_OK);
  ro.levels = 0;
  for (ro.mem_limit = 1024; ro.mem_limit < ((uint64_t)1 << 30); ro.mem_limit += ro.mem_limit / 64)
    if (vx_tree_load_memory(gbytes, gn, &ro, &u, NULL) == VX_OK) break;
  vx_tree_free(u);
  CHECK(vx_tree_load_memory(file, n, &ro, &u, &e) == VX_ERR_LIMIT);
  vx_buffer_free(gbytes);
  free(file);
  vx_tree_free(t);
  vx_tree_free(grey);
  vx_mesh_free(m);
}

static void api_color_queries_against_brute_force(void) {
  vx_mesh *m = sphere_mesh(1.0, 24, 12);
  vx_tree *grey = convert_tree(m, 32);
  size_t n;
  uint8_t *file = colored_file(grey, &n);
  vx_tree *t = NULL;
  vx_error e;
  CHECK_MSG(vx_tree_load_memory(file, n, NULL, &t, &e) == VX_OK, "%s", e.msg);
  vx_tree_info ti = info_of(t);
  float *pts = points_near_sphere(600, 4.0 / 32);
  compare_colors(t, -1, pts, 600);
  compare_colors(t, (int)ti.depth, pts, 600);
  compare_colors(t, (int)ti.depth - 2, pts, 600);
  compare_colors(t, 1, pts, 200);
  /* a large batch (on several threads): the same colours as the checked small one */
  {
    const int big = 30000;
    float *many = (float *)malloc((size_t)big * 3 * sizeof(float));
    for (int k = 0; k < big; k++) memcpy(many + 3 * k, pts + 3 * (k % 600), 3 * sizeof(float));
    /* and three points with no colour among them (non-finite, far) */
    const int odd[3] = {7, 20011, big - 1};
    many[3 * odd[0]] = NAN;
    many[3 * odd[1] + 1] = INFINITY;
    many[3 * odd[2] + 2] = -1e30f;
    uint8_t *a = (uint8_t *)malloc((size_t)big * 4), *b = (uint8_t *)malloc(600 * 4);
    CHECK(vx_tree_colors(t, many, (uint64_t)big, -1, a, &e) == VX_OK);
    CHECK(vx_tree_colors(t, pts, 600, -1, b, &e) == VX_OK);
    int diff = 0;
    for (int k = 0; k < big; k++) {
      const int none = k == odd[0] || k == odd[1] || k == odd[2];
      const uint8_t zero[4] = {0, 0, 0, 0};
      diff += memcmp(a + 4 * k, none ? zero : b + 4 * (k % 600), 4) != 0;
    }
    CHECK_MSG(diff == 0, "%d of %d differ in a large batch", diff, big);
    free(many);
    free(a);
    free(b);
  }
  /* a pruned copy: leaves above the level stand for their cells, with their own colour */
  vx_tree *p = NULL;
  CHECK_MSG(vx_tree_prune(t, 0.6f, &p, &e) == VX_OK, "%s", e.msg);
  vx_tree_info pi = info_of(p);
  CHECK(pi.has_color && pi.node_count < ti.node_count);
  cells c = cells_of(p);
  const uint32_t *pc = vx_tree_node_colors(p, NULL), *pv = vx_tree_voxel_colors(p, NULL);
  int wrong = 0, leaves = 0;
  for (uint64_t k = 0; k < c.n; k++) {
    uint32_t want = spec_color(c.lvl[k], c.xyz[3 * k], c.xyz[3 * k + 1], c.xyz[3 * k + 2]);
    wrong += (k < c.nodes ? pc[k] : pv[k - c.nodes]) != want;
    leaves += k < c.nodes && c.mask[k] == 0;
  }
  CHECK_MSG(wrong == 0 && leaves > 0, "%d colours moved, %d leaves", wrong, leaves);
  cells_free(&c);
  compare_colors(p, -1, pts, 600);
  compare_colors(p, (int)ti.depth - 1, pts, 600);
  vx_tree_free(p);
  /* a partial load: the finest loaded level */
  vx_read_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.struct_size = sizeof ro;
  ro.levels = 4;
  vx_tree *u = NULL;
  CHECK_MSG(vx_tree_load_memory(file, n, &ro, &u, &e) == VX_OK, "%s", e.msg);
  compare_colors(u, -1, pts, 300);
  uint8_t one[4];
  CHECK(vx_tree_colors(u, pts, 1, 4, one, &e) == VX_ERR_INVALID_ARG);
  vx_tree_free(u);
  free(pts);
  free(file);
  vx_tree_free(t);
  vx_tree_free(grey);
  vx_mesh_free(m);
}

static void api_color_query_errors(void) {
  vx_mesh *m = sphere_mesh(1.0, 16, 8);
  vx_tree *grey = convert_tree(m, 16);
  size_t n;
  uint8_t *file = colored_file(grey, &n);
  vx_tree *t = NULL;
  CHECK(vx_tree_load_memory(file, n, NULL, &t, NULL) == VX_OK);
  float pts[12] = {1.0f, 0, 0, NAN, 0, 0, 1e30f, 1e30f, 0, -INFINITY, 0, 0};
  uint8_t rgba[16];
  memset(rgba, 0x55, sizeof rgba);
  vx_error e;
  CHECK_MSG(vx_tree_colors(t, pts, 4, -1, rgba, &e) == VX_OK, "%s", e.msg);
  CHECK(rgba[3] != 0); /* on the surface: a colour */
  for (int k = 4; k < 16; k++) CHECK(rgba[k] == 0);
  CHECK(vx_tree_colors(t, pts, 0, -1, NULL, &e) == VX_OK);
  CHECK(vx_tree_colors(t, NULL, 1, -1, rgba, &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_tree_colors(t, pts, 1, -1, NULL, &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_tree_colors(t, pts, UINT64_MAX / 2, -1, rgba, &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_tree_colors(t, pts, 1, -2, rgba, &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_tree_colors(t, pts, 1, 5, rgba, &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_tree_colors(NULL, pts, 1, -1, rgba, &e) == VX_ERR_INVALID_ARG);
  e.msg[0] = 0;
  CHECK(vx_tree_colors(grey, pts, 1, -1, rgba, &e) == VX_ERR_INVALID_ARG);
  CHECK_MSG(strstr(e.msg, "no colour") != NULL, "%s", e.msg);
  CHECK(vx_tree_node_colors(NULL, NULL) == NULL && vx_tree_voxel_colors(NULL, NULL) == NULL);
  free(file);
  vx_tree_free(t);
  vx_tree_free(grey);
  vx_mesh_free(m);
}

int main(void) {
  RUN(api_color_load_arrays_and_stats);
  RUN(api_color_queries_against_brute_force);
  RUN(api_color_query_errors);
  return check_summary();
}
