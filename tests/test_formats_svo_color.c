/* SPDX-License-Identifier: Apache-2.0 */
/* test_formats_svo_color.c - colour sections of the .svo file: round trips, the bytes against a
 * writer built from docs/SVO_FORMAT.md alone (tests/svo_spec.h), grey files unchanged (against
 * a file the writer made before colour existed), partial reads, damaged or forged colour
 * sections, unknown flags, the memory limit, pruning carrying colours, a write that compresses
 * the levels while another thread makes the colours (vx_svo_write_pending). */
#define _POSIX_C_SOURCE 200809L
#include "formats/svo_file.h"
#include "formats/svo_codec.h"
#include "svo/lod.h"
#include "check.h"
#include "svo_both_ways.h"
#include <zstd.h>
#include "svo_spec.h"

#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint32_t rnd(void) { return check_xorshift(&rng_state); }

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Every cell's colour in file order (nodes, then voxels), from spec_color of its position. */
static uint32_t *cell_colors(const vx_octree *t) {
  uint64_t cells = t->node_count + t->voxel_count;
  uint8_t *masks = (uint8_t *)malloc(t->node_count + 1);
  for (uint64_t i = 0; i < t->node_count; i++) masks[i] = (uint8_t)vx_node_mask(t->nodes[i].info);
  uint32_t *xyz = (uint32_t *)malloc(cells * 3 * sizeof(uint32_t));
  uint8_t *lvl = (uint8_t *)malloc(cells);
  spec_cells(t->depth, t->level_count, masks, xyz, lvl);
  uint32_t *c = (uint32_t *)malloc(cells * sizeof(uint32_t));
  for (uint64_t i = 0; i < cells; i++) c[i] = spec_color(lvl[i], xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]);
  free(masks);
  free(xyz);
  free(lvl);
  return c;
}

/* Gives t colour arrays filled from cell_colors. */
static void paint(vx_octree *t) {
  uint32_t *c = cell_colors(t);
  t->node_color = (uint32_t *)vx_malloc((size_t)t->node_count * 4);
  memcpy(t->node_color, c, (size_t)t->node_count * 4);
  if (t->voxel_count) {
    t->voxel_color = (uint32_t *)vx_malloc((size_t)t->voxel_count * 4);
    memcpy(t->voxel_color, c + t->node_count, (size_t)t->voxel_count * 4);
  }
  free(c);
}

/* A tree over about n random voxels (fitted planes, so that pruning has something to do). */
static void random_tree(uint32_t depth, uint64_t n, vx_octree *t) {
  uint64_t cells = (uint64_t)1 << (3 * depth);
  uint64_t *codes = (uint64_t *)malloc(n * sizeof *codes);
  for (uint64_t i = 0; i < n; i++) codes[i] = ((uint64_t)rnd() << 20 ^ rnd()) % cells;
  qsort(codes, n, sizeof *codes, cmp_u64);
  uint64_t m = 0;
  for (uint64_t i = 0; i < n; i++)
    if (m == 0 || codes[i] != codes[m - 1]) codes[m++] = codes[i];
  vx_voxel *f = (vx_voxel *)malloc(m * sizeof *f);
  for (uint64_t i = 0; i < m; i++)
    for (int k = 0; k < 8; k++) f[i].c[k] = (int8_t)((k & 1) * 20 - 10 + (int)(rnd() % 3));
  CHECK(vx_octree_build(depth, codes, f, m, t, NULL) == VX_OK);
  free(codes);
  free(f);
  t->band = 2.5f;
  t->xf.origin[0] = -1.25;
  t->xf.scale = 0.0078125;
  CHECK(vx_octree_fit_planes(t, NULL, NULL, NULL) == VX_OK);
}

static uint8_t *encode(const vx_octree *t, size_t *n) {
  uint8_t *buf = NULL;
  vx_error e;
  vx_status s = vx_svo_encode(t, 0, &buf, n, &e);
  CHECK_MSG(s == VX_OK, "%s", e.msg);
  return buf;
}

static int colors_equal(const vx_octree *a, const vx_octree *b) {
  if (a->node_count != b->node_count || a->voxel_count != b->voxel_count) return 0;
  if (a->node_count && (!a->node_color || !b->node_color ||
                        memcmp(a->node_color, b->node_color, a->node_count * 4) != 0))
    return 0;
  if (a->voxel_count && (!a->voxel_color || !b->voxel_color ||
                         memcmp(a->voxel_color, b->voxel_color, a->voxel_count * 4) != 0))
    return 0;
  return 1;
}


/* A coloured tree with levels of more than 2^16 parents: its colours unpacked in pieces side by
 * side, the same as level by level, whole or partial, and a damaged colour section named alike. */
static void svo_color_large_tree_side_by_side(void) {
  vx_octree t;
  random_tree(9, 400000, &t);
  paint(&t);
  CHECK(t.level_count[8] > 4 * 65536);
  size_t n;
  uint8_t *buf = encode(&t, &n);
  for (int L = -1; L <= 8; L += 3) {
    vx_svo_read_opts o = {L, 0, 0, 0};
    vx_octree r;
    vx_error e;
    CHECK_MSG(decode_both(buf, n, &o, &r, &e) == VX_OK, "L=%d: %s", L, e.msg);
    CHECK(memcmp(r.node_color, t.node_color, r.node_count * 4) == 0);
    if (L < 0) CHECK(colors_equal(&t, &r));
    vx_octree_free(&r);
  }
  vx_svo_file_info info;
  vx_octree r;
  vx_error e;
  CHECK(vx_svo_decode(buf, n, NULL, &r, &info, NULL) == VX_OK);
  vx_octree_free(&r);
  uint64_t at = n;
  for (int l = 9; l >= 0; l--) {
    at -= info.level_color_disk_bytes[l];
    const uint64_t i = at + info.level_color_disk_bytes[l] / 2;
    buf[i] ^= 0x08;
    CHECK_MSG(decode_both(buf, n, NULL, &r, &e) == VX_ERR_CORRUPT, "colours of level %d", l);
    buf[i] ^= 0x08;
  }
  free(buf);
  vx_octree_free(&t);
}

static void svo_color_round_trip_and_spec_bytes(void) {
  for (uint32_t depth = 1; depth <= 7; depth++) {
    vx_octree t, r;
    random_tree(depth, depth < 3 ? 5 : 60 * depth * depth, &t);
    size_t grey_n, n;
    uint8_t *grey = encode(&t, &grey_n);
    paint(&t);
    uint8_t *buf = encode(&t, &n);
    vx_svo_file_info info;
    vx_error e;
    CHECK_MSG(vx_svo_decode(buf, n, NULL, &r, &info, &e) == VX_OK, "depth %u: %s", depth, e.msg);
    CHECK(colors_equal(&t, &r));
    CHECK(r.nodes && memcmp(r.nodes, t.nodes, t.node_count * sizeof(vx_node)) == 0);
    CHECK(info.flags == VX_SVO_FLAG_COLOR && info.version == 2 && info.file_bytes == n);
    uint64_t sum = info.header_bytes;
    for (uint32_t l = 0; l <= depth; l++) sum += info.level_disk_bytes[l] + info.level_color_disk_bytes[l];
    CHECK(sum == n);
    /* the prologue as documented: flag bit 0, HR = 48 + 64 (D+1) */
    CHECK(spec_rd32(buf + 12) == 1 && spec_rd32(buf + 20) == 48 + 64 * (depth + 1));
    /* the same bytes as the documented layout built from the grey file */
    uint32_t *c = cell_colors(&t);
    size_t sn = 0;
    uint8_t *spec = spec_colorize(grey, grey_n, c, 9, &sn); /* colour sections: level <= 9 */
    CHECK(spec != NULL);
    CHECK_MSG(spec && sn == n && memcmp(spec, buf, n) == 0, "depth %u: %zu vs %zu bytes", depth, sn, n);
    /* and the grey file's level sections are the coloured file's, byte for byte */
    uint32_t ghz = spec_rd32(grey + 16), chz = spec_rd32(buf + 16);
    CHECK(n > grey_n && memcmp(grey + 32 + ghz, buf + 32 + chz, grey_n - 32 - ghz) == 0);
    free(spec);
    free(c);
    free(grey);
    free(buf);
    vx_octree_free(&t);
    vx_octree_free(&r);
  }
}

/* A seed of fuzz/make_svo_seeds.c built again (the same voxels, field and transform). */
static int seed_matches(const char *name, uint32_t depth, const uint64_t *codes, uint64_t n,
                        float prune) {
  vx_voxel f[16];
  for (uint64_t i = 0; i < n; i++)
    for (int k = 0; k < 8; k++) f[i].c[k] = (int8_t)((k & 1) * 40 - 20 + (int)(i % 7));
  vx_octree t;
  CHECK(vx_octree_build(depth, codes, f, n, &t, NULL) == VX_OK);
  t.band = 2.0f;
  t.xf.scale = 0.5;
  CHECK(vx_octree_fit_planes(&t, NULL, NULL, NULL) == VX_OK);
  if (prune > 0) CHECK(vx_octree_prune(&t, prune, NULL) == VX_OK);
  uint8_t *buf = NULL;
  size_t bn = 0;
  CHECK(vx_svo_encode(&t, 19, &buf, &bn, NULL) == VX_OK);
  char path[512];
  snprintf(path, sizeof path, "%s/%s", VX_SVO_CORPUS, name);
  FILE *fp = fopen(path, "rb");
  CHECK_MSG(fp != NULL, "%s", path);
  uint8_t old[4096];
  size_t on = fp ? fread(old, 1, sizeof old, fp) : 0;
  if (fp) fclose(fp);
  int same = on == bn && memcmp(old, buf, bn) == 0 && spec_rd32(buf + 12) == 0;
  CHECK_MSG(same, "%s: %zu bytes now, %zu in the corpus", name, bn, on);
  free(buf);
  vx_octree_free(&t);
  return same;
}

/* The grey seeds in tests/corpus/svo were written by the writer as it was before colour
 * existed: a grey tree must still give exactly their bytes. */
static void svo_grey_file_is_unchanged(void) {
  uint64_t codes[16];
  int n = 0;
  for (uint32_t z = 0; z < 4; z++)
    for (uint32_t x = 0; x < 4; x++) codes[n++] = vx_morton_encode(x, 1, z);
  qsort(codes, (size_t)n, sizeof *codes, cmp_u64);
  uint64_t one = vx_morton_encode(1, 0, 1) & 7;
  seed_matches("one_voxel_d1.svo", 1, &one, 1, 0);
  seed_matches("plane_d2.svo", 2, codes, (uint64_t)n, 0);
  seed_matches("plane_d3_pruned.svo", 3, codes, (uint64_t)n, 100.0f);
}

static void svo_color_partial_read(void) {
  vx_octree t;
  random_tree(6, 2000, &t);
  paint(&t);
  size_t n;
  uint8_t *buf = encode(&t, &n);
  for (int L = -1; L <= 7; L++) {
    vx_svo_read_opts o = {L, 0, 0, 0};
    vx_octree r;
    vx_error e;
    CHECK_MSG(decode_both(buf, n, &o, &r, &e) == VX_OK, "L=%d: %s", L, e.msg);
    CHECK(r.node_color != NULL);
    CHECK(r.node_count == 0 || memcmp(r.node_color, t.node_color, r.node_count * 4) == 0);
    CHECK((r.levels_loaded == 7) == (r.voxel_color != NULL));
    if (r.voxel_color) CHECK(memcmp(r.voxel_color, t.voxel_color, t.voxel_count * 4) == 0);
    vx_octree_free(&r);
  }
  /* a partial read never reads the colours of levels it does not load: damage there passes */
  vx_svo_file_info info;
  vx_octree r;
  CHECK(vx_svo_decode(buf, n, NULL, &r, &info, NULL) == VX_OK);
  vx_octree_free(&r);
  buf[n - info.level_color_disk_bytes[6] / 2] ^= 0x40; /* inside the voxel colours */
  vx_svo_read_opts o = {3, 0, 0, 0};
  vx_error e;
  CHECK_MSG(vx_svo_decode(buf, n, &o, &r, NULL, &e) == VX_OK, "%s", e.msg);
  vx_octree_free(&r);
  vx_status s = vx_svo_decode(buf, n, NULL, &r, NULL, &e);
  CHECK(s == VX_ERR_CORRUPT && strstr(e.msg, "colours of level 6"));
  fprintf(stderr, "  %s\n", e.msg);
  free(buf);
  vx_octree_free(&t);
}

/* Every prefix and every byte changed, in a small coloured file: all rejected. */
static void svo_color_truncation_and_byte_sweep(void) {
  vx_octree t;
  random_tree(3, 30, &t);
  paint(&t);
  size_t n;
  uint8_t *buf = encode(&t, &n);
  vx_octree r;
  int accepted = 0;
  for (size_t k = 0; k < n; k++)
    if (vx_svo_decode(buf, k, NULL, &r, NULL, NULL) == VX_OK) accepted++, vx_octree_free(&r);
  CHECK_MSG(accepted == 0, "%d prefixes accepted", accepted);
  static const uint8_t pats[3] = {0x01, 0x80, 0xff};
  for (size_t i = 0; i < n; i++)
    for (int p = 0; p < 3; p++) {
      buf[i] ^= pats[p];
      vx_error e;
      if (decode_both(buf, n, NULL, &r, &e) == VX_OK) {
        accepted++;
        vx_octree_free(&r);
      }
      buf[i] ^= pats[p];
    }
  CHECK_MSG(accepted == 0, "%d single-byte changes of %zu bytes accepted", accepted, n);
  free(buf);
  vx_octree_free(&t);
}

/* Rewrites the coloured file's header (decoded, edited by `edit`) with valid frame and checks. */
static uint8_t *reheader(const uint8_t *buf, size_t n, void (*edit)(uint8_t *hdr, uint32_t *hr,
                         uint32_t *flags), size_t *out_n) {
  uint32_t hz = spec_rd32(buf + 16), hr = spec_rd32(buf + 20), flags = spec_rd32(buf + 12);
  uint8_t hdr[48 + 64 * 15];
  CHECK(ZSTD_decompress(hdr, sizeof hdr, buf + 32, hz) == hr);
  edit(hdr, &hr, &flags);
  uint8_t *out = (uint8_t *)malloc(n + 65536);
  memcpy(out, buf, 32);
  size_t hz2 = spec_frame(hdr, hr, out + 32, 65536, 19);
  spec_wr32(out + 12, flags);
  spec_wr32(out + 16, (uint32_t)hz2);
  spec_wr32(out + 20, hr);
  spec_wr32(out + 24, spec_check32(out + 32, hz2));
  memcpy(out + 32 + hz2, buf + 32 + hz, n - 32 - hz);
  *out_n = 32 + hz2 + n - 32 - hz;
  return out;
}

static void edit_count(uint8_t *h, uint32_t *hr, uint32_t *fl) { /* colour count of level 2 + 1 */
  (void)fl;
  uint32_t D = spec_rd32(h);
  uint8_t *e = h + 48 + 32 * (D + 1) + 32 * 2;
  (void)hr;
  spec_wr64(e, spec_rd64(e) + 1);
  spec_wr64(e + 16, spec_rd64(e) * 4);
}
static void edit_raw(uint8_t *h, uint32_t *hr, uint32_t *fl) { /* raw != 4 count */
  (void)fl;
  (void)hr;
  uint32_t D = spec_rd32(h);
  uint8_t *e = h + 48 + 32 * (D + 1) + 32 * D;
  spec_wr64(e + 16, spec_rd64(e + 16) + 4);
}
static void edit_reserved(uint8_t *h, uint32_t *hr, uint32_t *fl) {
  (void)fl;
  (void)hr;
  uint32_t D = spec_rd32(h);
  h[48 + 32 * (D + 1) + 28] = 1;
}
static void edit_no_entries(uint8_t *h, uint32_t *hr, uint32_t *fl) { /* flag, no colour entries */
  (void)fl;
  *hr = 48 + 32 * (spec_rd32(h) + 1);
}
static void edit_unknown_flag(uint8_t *h, uint32_t *hr, uint32_t *fl) {
  (void)h;
  (void)hr;
  *fl |= 4;
}
static void edit_colour_zsize(uint8_t *h, uint32_t *hr, uint32_t *fl) { /* Z of level 1 colours + 1 */
  (void)fl;
  (void)hr;
  uint32_t D = spec_rd32(h);
  uint8_t *e = h + 48 + 32 * (D + 1) + 32 * 1;
  spec_wr64(e + 8, spec_rd64(e + 8) + 1);
}

static void svo_color_forged_headers(void) {
  vx_octree t;
  random_tree(4, 150, &t);
  paint(&t);
  size_t n;
  uint8_t *buf = encode(&t, &n);
  struct {
    void (*edit)(uint8_t *, uint32_t *, uint32_t *);
    vx_status want;
    const char *says;
  } cases[] = {
      {edit_count, VX_ERR_CORRUPT, "colours for"},
      {edit_raw, VX_ERR_CORRUPT, "declare"},
      {edit_reserved, VX_ERR_CORRUPT, "reserved"},
      {edit_no_entries, VX_ERR_CORRUPT, "no colour entries"},
      {edit_unknown_flag, VX_ERR_VERSION, "does not know"},
      {edit_colour_zsize, VX_ERR_CORRUPT, "truncated"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t m;
    uint8_t *f = reheader(buf, n, cases[i].edit, &m);
    vx_octree r;
    vx_error e;
    memset(&e, 0, sizeof e);
    vx_status s = decode_both(f, m, NULL, &r, &e);
    CHECK_MSG(s == cases[i].want && strstr(e.msg, cases[i].says), "case %zu: %s: %s", i,
              vx_status_str(s), e.msg);
    fprintf(stderr, "  case %zu: %s\n", i, e.msg);
    if (s == VX_OK) vx_octree_free(&r);
    free(f);
  }
  /* a grey file with the colour flag set (the header frame is not touched) */
  vx_octree g;
  random_tree(3, 40, &g);
  size_t gn;
  uint8_t *grey = encode(&g, &gn);
  grey[12] = 1;
  vx_octree r;
  vx_error e;
  vx_status s = vx_svo_decode(grey, gn, NULL, &r, NULL, &e);
  CHECK_MSG(s == VX_ERR_CORRUPT && strstr(e.msg, "no colour entries"), "%s", e.msg);
  /* a version-1 file may have no flags */
  grey[8] = 1;
  s = vx_svo_decode(grey, gn, NULL, &r, NULL, &e);
  CHECK_MSG(s == VX_ERR_CORRUPT && strstr(e.msg, "unknown flags"), "%s", e.msg);
  free(grey);
  vx_octree_free(&g);
  free(buf);
  vx_octree_free(&t);
}

static void svo_color_memory_limit_counts_colours(void) {
  vx_octree t;
  random_tree(6, 3000, &t);
  size_t gn, n;
  uint8_t *grey = encode(&t, &gn);
  paint(&t);
  uint8_t *buf = encode(&t, &n);
  /* from memory: nodes x 16 + voxels x 8 + the largest decoded section, + colours x 4 */
  uint64_t raw_max = 0;
  for (uint32_t l = 0; l <= t.depth; l++) {
    uint64_t r = t.level_count[l] * (l < t.depth ? 12 : 8);
    if (r > raw_max) raw_max = r;
  }
  uint64_t grey_need = t.node_count * 16 + t.voxel_count * 8 + raw_max;
  uint64_t need = grey_need + (t.node_count + t.voxel_count) * 4;
  vx_octree r;
  vx_error e;
  vx_svo_read_opts o = {-1, grey_need, 0, 0};
  CHECK_MSG(vx_svo_decode(grey, gn, &o, &r, NULL, &e) == VX_OK, "%s", e.msg);
  vx_octree_free(&r);
  o.mem_limit = need - 1;
  vx_status s = vx_svo_decode(buf, n, &o, &r, NULL, &e);
  CHECK_MSG(s == VX_ERR_LIMIT, "%s", vx_status_str(s));
  o.mem_limit = need;
  CHECK_MSG(vx_svo_decode(buf, n, &o, &r, NULL, &e) == VX_OK, "%s", e.msg);
  vx_octree_free(&r);
  free(grey);
  free(buf);
  vx_octree_free(&t);
}

static void svo_color_writer_refuses_half_coloured_trees(void) {
  vx_octree t;
  random_tree(4, 100, &t);
  paint(&t);
  uint32_t *vc = t.voxel_color;
  t.voxel_color = NULL;
  uint8_t *buf = NULL;
  size_t n = 0;
  vx_error e;
  vx_status s = vx_svo_encode(&t, 0, &buf, &n, &e);
  CHECK_MSG(s == VX_ERR_INVALID_ARG && strstr(e.msg, "colours are incomplete"), "%s", e.msg);
  CHECK(buf == NULL);
  t.voxel_color = vc;
  vx_free(t.node_color);
  t.node_color = NULL;
  s = vx_svo_encode(&t, 0, &buf, &n, &e);
  CHECK_MSG(s == VX_ERR_INVALID_ARG, "%s", vx_status_str(s));
  vx_octree_free(&t);
}

/* Pruning compacts the colours with the cells: each kept cell keeps its own colour. */
static void svo_color_prune_carries_colours(void) {
  vx_octree t;
  random_tree(6, 4000, &t);
  paint(&t);
  uint64_t before = t.node_count;
  CHECK(vx_octree_prune(&t, 2.0f, NULL) == VX_OK);
  CHECK(t.node_count < before);
  uint32_t *want = cell_colors(&t); /* from the pruned tree's positions */
  CHECK(memcmp(want, t.node_color, t.node_count * 4) == 0);
  CHECK(t.voxel_count == 0 || memcmp(want + t.node_count, t.voxel_color, t.voxel_count * 4) == 0);
  size_t n;
  uint8_t *buf = encode(&t, &n);
  vx_octree r;
  CHECK(vx_svo_decode(buf, n, NULL, &r, NULL, NULL) == VX_OK);
  CHECK(colors_equal(&t, &r));
  vx_octree_free(&r);
  free(buf);
  free(want);
  vx_octree_free(&t);
}

/* vx_svo_write_pending: the colours painted on another thread while the levels compress (or
 * none, or a failure), answered through the callback, which is called exactly once on every
 * path; the file is vx_svo_write's for the finished tree, or none. */
typedef struct pending {
  vx_octree *t;
  int paint, calls;
  vx_status answer;
  pthread_t th;
} pending;

static void *pending_paint(void *arg) {
  pending *p = (pending *)arg;
  struct timespec d = {0, 20 * 1000 * 1000}; /* while the writer is at the levels */
  nanosleep(&d, NULL);
  if (p->paint) paint(p->t);
  return NULL;
}

static vx_status pending_ready(void *user, int *has_color, vx_error *err) {
  pending *p = (pending *)user;
  p->calls++;
  pthread_join(p->th, NULL);
  *has_color = p->t->node_color != NULL;
  if (p->answer != VX_OK) return vx_error_set(err, p->answer, "colours failed");
  return VX_OK;
}

static uint8_t *file_bytes(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = (uint8_t *)malloc(len > 0 ? (size_t)len : 1);
  *n = fread(b, 1, (size_t)len, f);
  fclose(f);
  return b;
}

static void svo_color_pending_write(void) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/vx_pending_%ld.svo", (long)getpid());
  for (int c = 0; c < 5; c++) { /* colours, grey, a failure, a bad path, a partial tree */
    for (uint32_t depth = 3; depth <= 8; depth += 5) {
      vx_octree t;
      random_tree(depth, depth * depth * 400, &t);
      pending p;
      memset(&p, 0, sizeof p);
      p.t = &t;
      p.paint = c != 1;
      p.answer = c == 2 ? VX_ERR_INTERRUPTED : VX_OK;
      if (c == 4) t.levels_loaded = t.depth;
      CHECK(pthread_create(&p.th, NULL, pending_paint, &p) == 0);
      remove(path);
      vx_error e;
      vx_status s = vx_svo_write_pending(c == 3 ? "/nonexistent-dir/x.svo" : path, &t, 0, NULL, NULL,
                                         pending_ready, &p, &e);
      CHECK_MSG(p.calls == 1, "case %d: ready called %d times", c, p.calls);
      if (c >= 2) {
        CHECK_MSG(s != VX_OK, "case %d: the write should fail", c);
        CHECK(c != 2 || s == VX_ERR_INTERRUPTED);
        CHECK(access(path, F_OK) != 0);
      } else {
        CHECK_MSG(s == VX_OK, "case %d: %s", c, e.msg);
        size_t n = 0, m = 0;
        uint8_t *got = file_bytes(path, &n), *want = encode(&t, &m);
        CHECK_MSG(got && want && n == m && memcmp(got, want, n) == 0,
                  "case %d depth %u: %zu bytes written, %zu from vx_svo_encode", c, depth, n, m);
        free(got);
        free(want);
      }
      t.levels_loaded = t.depth + 1;
      vx_octree_free(&t);
    }
  }
  remove(path);
}

int main(void) {
  RUN(svo_color_round_trip_and_spec_bytes);
  RUN(svo_grey_file_is_unchanged);
  RUN(svo_color_partial_read);
  RUN(svo_color_large_tree_side_by_side);
  RUN(svo_color_truncation_and_byte_sweep);
  RUN(svo_color_forged_headers);
  RUN(svo_color_memory_limit_counts_colours);
  RUN(svo_color_writer_refuses_half_coloured_trees);
  RUN(svo_color_prune_carries_colours);
  RUN(svo_color_pending_write);
  return check_summary();
}
