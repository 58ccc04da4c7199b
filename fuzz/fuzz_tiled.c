/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_tiled.c - libFuzzer target: arbitrary bytes through the tiled .svo reader: the prologue,
 * trailer, header, top tree and tile index, each tile read alone (whole and in part: only its
 * first sections), and the joined tree, whole and in part; then a small image of what was read,
 * drawn tile by tile (marcher/trace_tiled.h) at a cut and at full detail; then the cut of one
 * level made tile by tile into arrays sized by the tiles' headers (formats/grid_cut.h, as
 * lib/tiled_cut.c makes it) and, above the finest level, its closed field (grid_closed.h) built
 * into a tree; then, in a coloured file, the colour at points searched over the top tree and the
 * tiles (svo/color_query.h split at the tiles, as vx_tiled_file_colors searches), which must
 * give the joined tree's bytes. Any input must be refused or give trees that validate, within a
 * small memory limit; ASan/UBSan catch the rest.
 * Seeds: tests/corpus/tiled (small tiled files). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "formats/grid_closed.h"
#include "svo/color_query.h"
#include "svo/lod.h"
#include "formats/svo_tiled.h"
#include "marcher/scene.h"

#define MAX_TILES 64

/* A 12x9 image of the tiles read (refs), from outside the grid, at the cut `lod`. */
static void draw(const vx_tiled *t, const vx_tile_ref *refs, int lod) {
  const vx_tiled_header *h = vx_tiled_get_header(t);
  const uint32_t K = h->depth - h->tile_depth;
  if (K > VX_TILED_MAX_GRID_BITS || vx_tiled_tile_count(t) > MAX_TILES) return;
  vx_octree shape = *vx_tiled_top(t);
  shape.depth = h->depth;
  shape.xf = h->xf;
  shape.band = h->band;
  shape.prune_error = h->prune_error;
  const size_t G = (size_t)1 << K;
  int32_t *cells = (int32_t *)malloc(G * G * G * sizeof *cells);
  if (!cells) return;
  for (size_t c = 0; c < G * G * G; c++) cells[c] = -1;
  for (uint64_t i = 0; i < vx_tiled_tile_count(t); i++) {
    uint32_t x, y, z;
    vx_morton_decode(vx_tiled_tile(t, i)->code, &x, &y, &z);
    cells[x + G * (y + G * z)] = (int32_t)i;
  }
  vx_march_opts o;
  memset(&o, 0, sizeof o);
  o.width = 12;
  o.height = 9;
  o.lod = lod;
  o.lod_scale = 1.0f;
  vx_march_orbit(&shape, 30.0, 20.0, 40.0, &o.cam);
  vx_tiled_scene ts;
  vx_march_image img;
  if (vx_tiled_scene_init(&ts, &shape, h->tile_depth, &o, NULL) == VX_OK &&
      vx_march_image_alloc(&img, 12, 9, 0, NULL) == VX_OK) {
    ts.tiles = refs;
    ts.cells = cells;
    ts.top.nodes = shape.nodes;
    ts.top.node_color = shape.node_color;
    if (vx_render_cpu_tiled(&ts, &img, 1, NULL) != VX_OK) abort();
    vx_march_image_free(&img);
  }
  free(cells);
}

/* The cut at `level` (K < level), tile by tile, each tile's cells at the place its header
 * counts; then, above the finest level, the closed field as a tree. */
static void cut(vx_tiled *t, uint32_t level) {
  const vx_tiled_header *h = vx_tiled_get_header(t);
  const uint32_t K = h->depth - h->tile_depth;
  const uint64_t n = vx_tiled_tile_count(t);
  if (level <= K || level > h->depth || n > MAX_TILES) return;
  uint64_t first[MAX_TILES + 1];
  first[0] = 0;
  vx_error e;
  for (uint64_t i = 0; i < n; i++) {
    vx_octree hd;
    vx_svo_file_info fi;
    if (vx_tiled_tile_header(t, i, &hd, &fi, &e) != VX_OK) return;
    first[i + 1] = first[i] + hd.level_count[level - K];
  }
  if (first[n] == 0 || first[n] > (1u << 16)) return;
  vx_cut c;
  vx_cut_begin(h->depth, level, &h->xf, &c);
  c.codes = (uint64_t *)vx_malloc(first[n] * sizeof *c.codes);
  c.field = (float(*)[8])vx_malloc(first[n] * sizeof *c.field);
  vx_svo_read_opts po = {level == h->depth ? -1 : (int)(level - K), (uint64_t)64 << 20, 0, 0};
  vx_status s = c.codes && c.field ? VX_OK : VX_ERR_NOMEM;
  for (uint64_t i = 0; i < n && s == VX_OK; i++) {
    vx_octree tile;
    if ((s = vx_tiled_read_tile(t, i, &po, &tile, &e)) != VX_OK) break;
    vx_cut mine = c;
    mine.codes = c.codes + first[i];
    mine.field = c.field + first[i];
    mine.count = 0;
    mine.cap = first[i + 1] - first[i];
    mine.fixed = 1;
    uint32_t root[3];
    vx_morton_decode(vx_tiled_tile(t, i)->code, &root[0], &root[1], &root[2]);
    s = vx_cut_add(&mine, &tile, K, root, (uint64_t)64 << 20, NULL, NULL, &e);
    if (s == VX_OK && mine.count != mine.cap) s = VX_ERR_CORRUPT;
    vx_octree_free(&tile);
  }
  c.count = c.cap = first[n];
  for (uint64_t i = 1; s == VX_OK && i < c.count; i++) /* the tiles' order is the cells' */
    if (c.codes[i] <= c.codes[i - 1]) abort();
  uint64_t *codes = NULL, m = 0;
  vx_voxel *vox = NULL;
  if (s == VX_OK && level < h->depth && level <= VX_MAX_DEPTH &&
      vx_cut_closed(&c, 2.0f, (uint64_t)256 << 20, &codes, &vox, &m, &e) == VX_OK) {
    vx_octree tree;
    if (m < c.count || vx_octree_build(level, codes, vox, m, &tree, &e) != VX_OK) abort();
    tree.band = 2.0f; /* as vx_tiled_file_level_tree: the band, the planes, then validated */
    tree.xf.scale = 1.0;
    if (vx_octree_fit_planes(&tree, NULL, NULL, &e) != VX_OK ||
        vx_octree_validate(&tree, &e) != VX_OK)
      abort();
    vx_octree_free(&tree);
  }
  vx_free(codes);
  vx_free(vox);
  vx_cut_free(&c);
}

typedef struct split_tiles {
  const vx_tiled *t;
  const vx_octree *tiles; /* per tile of the file, depth 0 where it could not be read */
} split_tiles;

static const vx_octree *split_subtree(void *ctx, const uint32_t cell[3]) {
  const split_tiles *s = (const split_tiles *)ctx;
  const uint64_t code = vx_morton_encode(cell[0], cell[1], cell[2]);
  for (uint64_t i = 0; i < vx_tiled_tile_count(s->t) && i < MAX_TILES; i++)
    if (vx_tiled_tile(s->t, i)->code == code) return s->tiles[i].depth ? &s->tiles[i] : NULL;
  return NULL;
}

/* The colour at 64 points at every level, tile by tile against the joined tree `all` (NULL: not
 * joined; then only run). The points come from a generator seeded by the input (a file's bytes
 * are held by its checksums): in and around the box, and a few NaN, infinite or huge ones. */
static void colors(const vx_tiled *t, const vx_octree *tiles, const vx_octree *all,
                   const uint8_t *data, size_t size) {
  const vx_tiled_header *h = vx_tiled_get_header(t);
  if (!h->color || h->band > 16.0f || vx_tiled_tile_count(t) > MAX_TILES) return;
  const uint32_t K = h->depth - h->tile_depth;
  vx_octree shape = *vx_tiled_top(t);
  shape.depth = h->depth;
  shape.xf = h->xf;
  shape.band = h->band;
  shape.levels_loaded = K + 1;
  enum { N = 64 };
  float p[3 * N];
  uint64_t seed = 0x9e3779b97f4a7c15ull ^ size;
  for (size_t i = 0; i < size; i++) seed = (seed ^ data[i]) * 0x100000001b3ull;
  const double edge = h->xf.scale * ldexp(1.0, (int)h->depth);
  for (size_t i = 0; i < 3 * N; i++) {
    uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    p[i] = (float)(h->xf.origin[i % 3] + edge * ((double)(z >> 11) * 0x1.0p-53 * 1.5 - 0.25));
  }
  const float odd[4] = {NAN, INFINITY, -3e38f, 1e30f};
  for (int i = 0; i < 4; i++) p[3 * i + (unsigned)i % 3] = odd[i];
  const split_tiles st = {t, tiles};
  const vx_color_split sp = {K, split_subtree, (void *)&st};
  uint8_t got[4 * N], want[4 * N];
  for (uint32_t L = 0; L <= h->depth; L++) {
    vx_octree_colors_split(&shape, &sp, L, p, N, got);
    if (!all) continue;
    vx_octree_colors(all, L, p, N, want);
    if (memcmp(got, want, sizeof got) != 0) abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  vx_svo_read_opts o = {-1, (uint64_t)64 << 20, 0, 0};
  vx_tiled *t = NULL;
  vx_error e;
  if (vx_tiled_open_memory(data, size, &o, &t, &e) != VX_OK) return 0;
  if (vx_octree_validate(vx_tiled_top(t), &e) != VX_OK) abort();
  const uint64_t n = vx_tiled_tile_count(t);
  static vx_octree part[MAX_TILES];
  vx_tile_ref refs[MAX_TILES];
  memset(refs, 0, sizeof refs);
  vx_svo_read_opts po = o;
  po.max_level = data[size - 1] % 4; /* a partial read: the first sections alone */
  static vx_octree whole[MAX_TILES];
  int every = n <= MAX_TILES;
  for (uint64_t i = 0; i < n && i < MAX_TILES; i++) {
    memset(&whole[i], 0, sizeof whole[i]);
    if (vx_tiled_read_tile(t, i, &o, &whole[i], &e) == VX_OK) {
      if (vx_octree_validate(&whole[i], &e) != VX_OK) abort();
    } else {
      memset(&whole[i], 0, sizeof whole[i]);
      every = 0;
    }
    if (vx_tiled_read_tile(t, i, &po, &part[i], &e) == VX_OK) {
      if (vx_octree_validate(&part[i], &e) != VX_OK) abort();
      refs[i].nodes = part[i].nodes;
      refs[i].voxels = part[i].levels_loaded > part[i].depth ? part[i].voxels : NULL;
      refs[i].node_color = part[i].node_color;
      refs[i].voxel_color = refs[i].voxels ? part[i].voxel_color : NULL;
      refs[i].holes = part[i].node_color != NULL;
      refs[i].levels = part[i].levels_loaded;
    }
  }
  if (n > 0) { /* a tile that could not be read is left out (levels 0) */
    draw(t, refs, -1);
    draw(t, refs, (int)(data[0] % (vx_tiled_get_header(t)->depth + 1)));
  }
  for (uint64_t i = 0; i < n && i < MAX_TILES; i++) vx_octree_free(&part[i]);
  vx_octree all;
  if (vx_tiled_stitch(t, &o, &all, &e) == VX_OK) {
    if (vx_octree_validate(&all, &e) != VX_OK) abort();
    colors(t, whole, every ? &all : NULL, data, size);
    vx_octree_free(&all);
  } else {
    colors(t, whole, NULL, data, size);
  }
  for (uint64_t i = 0; i < n && i < MAX_TILES; i++) vx_octree_free(&whole[i]);
  o.max_level = data[size - 1] % 6; /* a partial read: the top tree alone, or some tile levels */
  if (vx_tiled_stitch(t, &o, &all, &e) == VX_OK) {
    if (vx_octree_validate(&all, &e) != VX_OK) abort();
    vx_octree_free(&all);
  }
  cut(t, vx_tiled_get_header(t)->depth - data[0] % 3);
  vx_tiled_close(t);
  return 0;
}
