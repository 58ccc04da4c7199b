/* SPDX-License-Identifier: Apache-2.0 */
/* test_tiled_color.c - coloured tiled trees: a coloured mesh converted in tiles and joined back is
 * the untiled coloured build, node for node, colour for colour and byte for byte once saved, with
 * both colour filters and on 1 or 3 threads; the tiles whose surface gives them no colour of
 * their own (band voxels only) take theirs from the top tree; every byte of a coloured tiled file
 * is checked; a reader that knows no colour flag refuses the file as a newer one.
 *
 * Reference: the untiled streaming build with its colour pass over the whole tree (voxelizer's
 * color.c and color_block.c, compared by test_voxelizer_ooc_color against vx_color_tree), which
 * shares none of the tiled writer's, reader's or top tree's code. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "lib/internal.h"
#include "tiled_scene.h"
#include "formats/grid_cut.h"
#include "formats/svo_codec.h"
#include "formats/svo_tiled.h"
#include "tiled_damage.h"
#include "sys/system.h"

#include <unistd.h>

static char dir[256];

static vx_status convert(const vx_mesh *m, uint32_t res, uint32_t T, int threads,
                         vx_color_filter f, const char *path, vx_error *err) {
  vx_convert_opts o = tiled_opts(res, T, VX_DEVICE_CPU, 0, threads);
  o.color = VX_COLOR_AUTO;
  o.color_filter = f;
  return vx_convert_to_file(m, &o, path, NULL, err);
}

static int same_u32(const uint32_t *a, const uint32_t *b, uint64_t n) {
  return a && b && memcmp(a, b, (size_t)n * 4) == 0;
}

/* Tiles whose own file's colours differ from what the tiled reader gives them (by one rgb shift
 * for the whole tile: those whose colour comes from above), of the tiles of the file at t. */
static uint64_t tiles_from_above(const char *t) {
  vx_tiled *tl = NULL;
  vx_error e;
  CHECK(vx_tiled_open(t, NULL, &tl, &e) == VX_OK);
  size_t n = 0;
  uint8_t *bytes = tiled_slurp(t, &n);
  uint64_t moved = 0;
  for (uint64_t k = 0; tl && bytes && k < vx_tiled_tile_count(tl); k++) {
    const vx_tile_entry *te = vx_tiled_tile(tl, k);
    vx_octree own, read;
    CHECK(vx_svo_decode(bytes + te->offset, te->length, NULL, &own, NULL, &e) == VX_OK);
    CHECK(vx_tiled_read_tile(tl, k, NULL, &read, &e) == VX_OK);
    CHECK(own.node_color && read.node_color && own.voxel_color && read.voxel_color);
    if (!own.node_color || !read.node_color || !own.voxel_color || !read.voxel_color) break;
    const uint32_t a = own.node_color[0], b = read.node_color[0];
    CHECK(a >> 24 == b >> 24);
    if (a != b) {
      moved++;
      uint64_t bad = 0; /* every colour moved by the same bytes, alpha kept */
      for (uint64_t i = 0; i < own.node_count + own.voxel_count; i++) {
        const uint32_t x = i < own.node_count ? own.node_color[i] : own.voxel_color[i - own.node_count];
        const uint32_t y = i < own.node_count ? read.node_color[i] : read.voxel_color[i - own.node_count];
        for (int q = 0; q < 4; q++)
          bad += (uint8_t)((y >> 8 * q) - (x >> 8 * q)) != (uint8_t)((b >> 8 * q) - (a >> 8 * q));
      }
      CHECK(bad == 0);
    } else {
      CHECK(same_u32(own.node_color, read.node_color, own.node_count) &&
            same_u32(own.voxel_color, read.voxel_color, own.voxel_count));
    }
    vx_octree_free(&own);
    vx_octree_free(&read);
  }
  free(bytes);
  vx_tiled_close(tl);
  return moved;
}

/* The untiled and the tiled coloured file of one mesh: the same tree and colours, the same bytes
 * once the joined tree is saved; partial reads alike; returns the tiles coloured from above. */
static uint64_t same_colored_tree(uint32_t res, uint32_t T, vx_color_filter f) {
  vx_mesh *m = tiled_colored_scene();
  char u[300], t[300], t3[300];
  snprintf(u, sizeof u, "%s/u.svo", dir);
  snprintf(t, sizeof t, "%s/t.svo", dir);
  snprintf(t3, sizeof t3, "%s/t3.svo", dir);
  vx_error e;
  CHECK_MSG(convert(m, res, 0, 0, f, u, &e) == VX_OK, "%s", e.msg);
  CHECK_MSG(convert(m, res, T, 1, f, t, &e) == VX_OK, "%s", e.msg);
  CHECK_MSG(convert(m, res, T, 3, f, t3, &e) == VX_OK, "%s", e.msg);
  CHECK(tiled_same_file(t, t3)); /* the bytes do not depend on the threads */
  vx_tree *a = NULL, *b = NULL;
  CHECK(vx_tree_load(u, NULL, &a, &e) == VX_OK);
  CHECK(vx_tree_load(t, NULL, &b, &e) == VX_OK);
  uint64_t moved = 0;
  if (a && b) {
    const vx_octree *x = &a->oct, *y = &b->oct;
    CHECK(x->node_color && y->node_color && x->voxel_color && y->voxel_color);
    CHECK(x->node_count == y->node_count &&
          memcmp(x->nodes, y->nodes, x->node_count * sizeof(vx_node)) == 0);
    CHECK(x->voxel_count == y->voxel_count &&
          memcmp(x->voxels, y->voxels, x->voxel_count * sizeof(vx_voxel)) == 0);
    uint64_t nd = 0, vd = 0;
    for (uint64_t i = 0; x->node_color && y->node_color && i < x->node_count; i++)
      nd += x->node_color[i] != y->node_color[i];
    for (uint64_t i = 0; x->voxel_color && y->voxel_color && i < x->voxel_count; i++)
      vd += x->voxel_color[i] != y->voxel_color[i];
    CHECK_MSG(nd == 0 && vd == 0, "%llu node and %llu voxel colours differ",
              (unsigned long long)nd, (unsigned long long)vd);
    void *p = NULL, *q = NULL;
    size_t pn = 0, qn = 0;
    CHECK(vx_tree_encode(a, NULL, &p, &pn, &e) == VX_OK);
    CHECK(vx_tree_encode(b, NULL, &q, &qn, &e) == VX_OK);
    CHECK(pn == qn && pn > 0 && memcmp(p, q, pn) == 0);
    vx_buffer_free(p);
    vx_buffer_free(q);
    vx_tree_info i;
    memset(&i, 0, sizeof i);
    i.struct_size = sizeof i;
    CHECK(vx_tree_get_info(b, &i) == VX_OK && i.has_color == 1 && i.file_version == 3);
    moved = tiles_from_above(t);
    printf("%u^3 in tiles of %u^3, %s: %llu tiles, %llu voxels: the untiled coloured tree; "
           "%llu tiles take their colour from above\n", res, 1u << T,
           f == VX_COLOR_FILTER_MEAN ? "mean" : "dominant", (unsigned long long)i.tile_count,
           (unsigned long long)i.voxel_count, (unsigned long long)moved);
  }
  for (uint32_t L = 0; a && b && L < a->oct.depth; L++) { /* partial reads */
    vx_read_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.struct_size = sizeof ro;
    ro.levels = L + 1;
    vx_tree *pa = NULL, *pb = NULL;
    CHECK(vx_tree_load(u, &ro, &pa, &e) == VX_OK);
    CHECK(vx_tree_load(t, &ro, &pb, &e) == VX_OK);
    if (pa && pb)
      CHECK(pa->oct.node_count == pb->oct.node_count &&
            same_u32(pa->oct.node_color, pb->oct.node_color, pa->oct.node_count));
    vx_tree_free(pa);
    vx_tree_free(pb);
  }
  vx_tree_free(a);
  vx_tree_free(b);
  vx_mesh_free(m);
  return moved;
}

static void colored_tiled_equals_untiled(void) {
  uint64_t moved = same_colored_tree(64, 3, VX_COLOR_FILTER_MEAN);
  moved += same_colored_tree(64, 3, VX_COLOR_FILTER_DOMINANT);
  moved += same_colored_tree(256, 5, VX_COLOR_FILTER_MEAN);
  CHECK_MSG(moved > 0, "no tile took its colour from above: that rule went untested");
}

/* A grey and a coloured build of one mesh are two builds (their ids differ). */
static void grey_and_colored_ids_differ(void) {
  vx_mesh *m = tiled_colored_scene();
  char g[300], c[300];
  snprintf(g, sizeof g, "%s/g.svo", dir);
  snprintf(c, sizeof c, "%s/c.svo", dir);
  vx_error e;
  vx_convert_opts o = tiled_opts(32, 2, VX_DEVICE_CPU, 0, 0);
  CHECK(vx_convert_to_file(m, &o, g, NULL, &e) == VX_OK);
  CHECK(convert(m, 32, 2, 0, VX_COLOR_FILTER_MEAN, c, &e) == VX_OK);
  vx_tiled *x = NULL, *y = NULL;
  CHECK(vx_tiled_open(g, NULL, &x, &e) == VX_OK && vx_tiled_open(c, NULL, &y, &e) == VX_OK);
  if (x && y) {
    CHECK(vx_tiled_get_header(x)->color == 0 && vx_tiled_get_header(y)->color == 1);
    CHECK(vx_tiled_get_header(x)->build_id != vx_tiled_get_header(y)->build_id);
    CHECK(vx_tiled_top(x)->node_color == NULL && vx_tiled_top(y)->node_color != NULL);
  }
  vx_tiled_close(x);
  vx_tiled_close(y);
  vx_mesh_free(m);
}

/* tiled_colored_scene() at 64^3 in tiles of 8^3 into dir/name, loaded joined (*j) and opened
 * tile by tile (*f). */
static void colored_file(const char *name, vx_tree **j, vx_tiled_file **f) {
  vx_mesh *m = tiled_colored_scene();
  char t[300];
  snprintf(t, sizeof t, "%s/%s", dir, name);
  vx_error e;
  CHECK(convert(m, 64, 3, 0, VX_COLOR_FILTER_MEAN, t, &e) == VX_OK);
  vx_mesh_free(m);
  *j = NULL;
  *f = NULL;
  CHECK(vx_tree_load(t, NULL, j, &e) == VX_OK && vx_tiled_file_open(t, NULL, f, &e) == VX_OK);
}

/* A coloured tiled file exported tile by tile (PLY points with colours, MagicaVoxel with its
 * palette) above, at and below the tiles' roots: the joined tree's export, byte for byte. */
static void colored_export_matches_joined(void) {
  vx_tree *j;
  vx_tiled_file *f;
  colored_file("x.svo", &j, &f);
  vx_error e;
  const vx_export_format fmts[2] = {VX_EXPORT_PLY, VX_EXPORT_VOX};
  const char *ext[2] = {"ply", "vox"};
  const uint32_t levels[3] = {7, 5, 3}; /* levels 6 (voxels), 4 (in the tiles), 2 (above) */
  int compared = 0;
  for (int k = 0; j && f && k < 2; k++)
    for (int l = 0; l < 3; l++) {
      char pa[320], pb[320];
      snprintf(pa, sizeof pa, "%s/j%d.%s", dir, l, ext[k]);
      snprintf(pb, sizeof pb, "%s/t%d.%s", dir, l, ext[k]);
      vx_export_opts o;
      memset(&o, 0, sizeof o);
      o.struct_size = sizeof o;
      o.format = fmts[k];
      o.levels = levels[l];
      CHECK_MSG(vx_tree_export(j, pa, &o, NULL, &e) == VX_OK, "%s", e.msg);
      CHECK_MSG(vx_tiled_file_export(f, pb, &o, NULL, &e) == VX_OK, "%s", e.msg);
      CHECK_MSG(tiled_same_file(pa, pb), "level %u .%s differs", levels[l] - 1, ext[k]);
      compared++;
      remove(pa);
      remove(pb);
    }
  CHECK(compared == 6);
  printf("coloured export tile by tile (.ply, .vox at levels 6, 4, 2): the joined tree's bytes\n");
  vx_tiled_file_close(f);
  vx_tree_free(j);
}

/* The tree of one level of a coloured tiled file (what `mesh` takes past 16384^3): its cells'
 * colours are the joined tree's at that level (the finest: the voxels'; coarser: the nodes'),
 * the closure's cells a neighbour's; its mesh has vertex colours. */
static void level_tree_colors(void) {
  vx_tree *j;
  vx_tiled_file *f;
  colored_file("l.svo", &j, &f);
  vx_error e;
  for (uint32_t L = 6; j && f && L >= 4; L -= 2) {
    vx_tree *lt = NULL;
    CHECK_MSG(vx_tiled_file_level_tree(f, L, NULL, &lt, &e) == VX_OK, "%s", e.msg);
    if (!lt) continue;
    const vx_octree *x = &j->oct, *y = &lt->oct;
    CHECK(y->node_color && y->voxel_color);
    vx_cut cj, cl; /* the level's cells of both, with their colours */
    CHECK(vx_cut_build(x, L, 0, NULL, NULL, &cj, &e) == VX_OK);
    CHECK(vx_cut_build(y, L, 0, NULL, NULL, &cl, &e) == VX_OK);
    uint64_t same = 0, differ = 0, missing = 0;
    for (uint64_t i = 0; cj.rgba && cl.rgba && i < cj.count; i++) {
      const uint64_t k = vx_cut_find(&cl, cj.codes[i]);
      if (k == UINT64_MAX) missing++;
      else if (cl.rgba[k] == cj.rgba[i]) same++;
      else differ++;
    }
    CHECK_MSG(cj.rgba && cl.rgba && differ == 0 && missing == 0 && same == cj.count,
              "level %u: %llu cells the same colour, %llu not, %llu missing", L,
              (unsigned long long)same, (unsigned long long)differ,
              (unsigned long long)missing);
    printf("level tree %u: %llu cells, the joined tree's colours (%llu added by the closure)\n", L,
           (unsigned long long)same, (unsigned long long)(cl.count - cj.count));
    vx_cut_free(&cj);
    vx_cut_free(&cl);
    vx_mesher_opts mo;
    memset(&mo, 0, sizeof mo);
    mo.struct_size = sizeof mo;
    vx_mesh *mm = NULL;
    CHECK(vx_mesher_extract(lt, &mo, &mm, &e) == VX_OK);
    uint64_t nc = 0;
    CHECK(mm && vx_mesh_colors(mm, &nc) != NULL && nc > 0);
    vx_mesh_free(mm);
    vx_tree_free(lt);
  }
  vx_tiled_file_close(f);
  vx_tree_free(j);
}

/* Every single-byte change and every truncation of a coloured tiled file is refused; a colour
 * flag this reader does not know is a newer writer's file. */
static void colored_damage_is_refused(void) {
  vx_mesh *m = tiled_colored_scene();
  char p[300];
  snprintf(p, sizeof p, "%s/s.svo", dir);
  vx_error e;
  CHECK(convert(m, 16, 2, 0, VX_COLOR_FILTER_MEAN, p, &e) == VX_OK);
  vx_mesh_free(m);
  size_t n = 0;
  uint8_t *d = tiled_slurp(p, &n);
  CHECK(d && n > 0 && tiled_open_all(d, n, &e) == VX_OK);
  CHECK(d && tiled_damage_missed(d, n) == 0);
  if (d) {
    d[12] |= 2; /* a flag of a newer writer */
    CHECK(tiled_open_all(d, n, &e) == VX_ERR_VERSION);
    d[12] &= (uint8_t)~3u; /* the colour flag dropped: the directory is the wrong size */
    CHECK(tiled_open_all(d, n, &e) == VX_ERR_CORRUPT);
  }
  printf("%zu bytes of a coloured tiled file: every byte changed and every truncation refused\n",
         n);
  free(d);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/voxlod-tiledc-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  RUN(colored_tiled_equals_untiled);
  RUN(grey_and_colored_ids_differ);
  RUN(colored_export_matches_joined);
  RUN(level_tree_colors);
  RUN(colored_damage_is_refused);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) return 1;
  return check_summary();
}
