/* SPDX-License-Identifier: Apache-2.0 */
/* test_convert_split.c - a binary STL or PLY converted to a tiled tree without holding the mesh
 * (vx_convert_file: split by tile on disk, each tile built from its part), against the mesh
 * loaded whole and converted (vx_mesh_load + vx_convert_to_file), byte for byte:
 * - the bunny with exact copies (the same and rotated corners), reversed copies (kept), a
 *   degenerate and a non-finite triangle, as binary STL and as big-endian binary PLY; tiles of
 *   several sizes, a wider band, pruning, one thread and two, record buffers that fill before a
 *   range of triangles and that take fewer records than one range gives;
 * - the split really ran (its note), and the mesh's figures are vx_mesh_get_info's;
 * - what is not split is loaded: the winding rule, an ASCII file (the same bytes as loading);
 * - a face index past the vertices: an error, nothing written; cancelled while splitting: an
 *   error, nothing written, nothing left in the temporary folder;
 * - the split as a parts file for tasks (vx_tile_split, vx_tile_plan_open_parts): tiles built by
 *   index from it, in another order and with other threads, merged, are the same bytes; a parts
 *   file damaged in its header, index or records, truncated, forged with a consistent check, or
 *   opened with other options is refused with a clear error.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include "formats/tile_split.h"
#include "lib/convert_split.h"
#include "tiled_scene.h"

/* Ends the test when cond fails: nothing after it can run. */
#define REQUIRE(cond, ...)                                                                       \
  do {                                                                                           \
    if (!(cond)) CHECK_FATAL(__VA_ARGS__);                                                       \
  } while (0)

static char dir[64];

/* The bunny's triangles with the copies and broken triangles above: n triangles, 9 floats each. */
static float *test_triangles(uint64_t *n) {
  char path[512];
  vx_mesh *m = NULL;
  vx_error e;
  REQUIRE(vx_mesh_load(check_data_mesh("bunny.ply", path, sizeof path), NULL, &m, &e) == VX_OK,
              "%s", e.msg);
  uint64_t nv = 0;
  const float *v = vx_mesh_vertices(m, &nv);
  const uint64_t nb = nv / 3, extra = 200 + 100 + 50 + 2;
  float *t = (float *)malloc((nb + extra) * 9 * sizeof(float));
  uint64_t k = 0;
  for (uint64_t i = 0; i < nb; i++) {
    memcpy(t + 9 * k++, v + 9 * i, 36);
    if (i == nb / 2) { /* the broken ones in the middle */
      memcpy(t + 9 * k, v + 9 * i, 36);
      memcpy(t + 9 * k + 3, t + 9 * k, 12); /* two corners the same: degenerate */
      k++;
      memcpy(t + 9 * k, v + 9 * i, 36);
      t[9 * k + 4] = NAN;
      k++;
    }
  }
  for (uint64_t i = 0; i < 200; i++) memcpy(t + 9 * k++, v + 9 * (i * 97 % nb), 36);
  for (uint64_t i = 0; i < 100; i++, k++) { /* rotated: the same triangle */
    const float *s = v + 9 * (i * 31 % nb);
    memcpy(t + 9 * k, s + 3, 24);
    memcpy(t + 9 * k + 6, s, 12);
  }
  for (uint64_t i = 0; i < 50; i++, k++) { /* reversed: another triangle */
    const float *s = v + 9 * (i * 53 % nb);
    memcpy(t + 9 * k, s, 12);
    memcpy(t + 9 * k + 3, s + 6, 12);
    memcpy(t + 9 * k + 6, s + 3, 12);
  }
  vx_mesh_free(m);
  *n = k;
  return t;
}

static void put_be32(FILE *f, const void *p) {
  uint8_t b[4];
  memcpy(b, p, 4);
  const uint8_t r[4] = {b[3], b[2], b[1], b[0]};
  fwrite(r, 1, 4, f);
}

/* Big-endian binary PLY, three vertices a face; bad_index: one face points past the vertices. */
static void write_ply(const char *path, const float *t, uint64_t n, int bad_index) {
  FILE *f = fopen(path, "wb");
  REQUIRE(f != NULL, "cannot write %s", path);
  fprintf(f, "ply\nformat binary_big_endian 1.0\nelement vertex %llu\nproperty float x\n"
          "property float y\nproperty float z\nelement face %llu\n"
          "property list uchar int vertex_indices\nend_header\n",
          (unsigned long long)(3 * n), (unsigned long long)n);
  for (uint64_t i = 0; i < 9 * n; i++) put_be32(f, t + i);
  for (uint64_t i = 0; i < n; i++) {
    fputc(3, f);
    for (int c = 0; c < 3; c++) {
      int32_t ix = (int32_t)(3 * i + (uint64_t)c);
      if (bad_index && i == n - 7) ix = (int32_t)(3 * n + 5);
      put_be32(f, &ix);
    }
  }
  fclose(f);
}

static vx_convert_opts opts(uint32_t res, uint32_t T, int threads) {
  vx_convert_opts o = tiled_opts(res, T, VX_DEVICE_CPU, 0, threads);
  o.sign_rule = VX_SIGN_PSEUDO_NORMAL;
  return o;
}

/* The mesh loaded whole and converted with o into ref. */
static void convert_loaded(const char *in, const vx_convert_opts *o, const char *ref) {
  vx_mesh *m = NULL;
  vx_error e;
  REQUIRE(vx_mesh_load(in, NULL, &m, &e) == VX_OK, "%s: %s", in, e.msg);
  CHECK_MSG(vx_convert_to_file(m, o, ref, NULL, &e) == VX_OK, "%s", e.msg);
  vx_mesh_free(m);
}

/* vx_convert_file with o into out; 1 when its notes say it was split. */
static int convert_file(const char *in, const vx_convert_opts *o, const char *out,
                        vx_mesh_info *info) {
  vx_conversion *c = NULL;
  vx_error e;
  const vx_status s = vx_convert_file(in, NULL, o, out, info, &c, &e);
  CHECK_MSG(s == VX_OK, "%s: %s", in, e.msg);
  const int split = s == VX_OK && strstr(vx_conversion_notes(c), "split by tile") != NULL;
  vx_conversion_free(c);
  return split;
}

static void check_same(const char *in, const vx_convert_opts *o, const char *what) {
  char ref[128], out[128];
  snprintf(ref, sizeof ref, "%s/ref.svo", dir);
  snprintf(out, sizeof out, "%s/split.svo", dir);
  convert_loaded(in, o, ref);
  CHECK_MSG(convert_file(in, o, out, NULL), "%s: not split", what);
  CHECK_MSG(tiled_same_file(ref, out), "%s: the split file differs from the loaded mesh's", what);
  vx_tree *t = NULL; /* and reads back: every section's frame and check */
  vx_error e;
  CHECK_MSG(vx_tree_load(out, NULL, &t, &e) == VX_OK, "%s: %s", what, e.msg);
  vx_tree_free(t);
}

static void test_split_is_loaded(void) {
  uint64_t n = 0;
  float *t = test_triangles(&n);
  char stl[128], ply[128];
  snprintf(stl, sizeof stl, "%s/bunny.stl", dir);
  snprintf(ply, sizeof ply, "%s/bunny.ply", dir);
  tiled_write_stl(stl, t, n);
  write_ply(ply, t, n, 0);
  free(t);
  vx_convert_opts o = opts(256, 6, 0);
  check_same(stl, &o, "STL, 256^3 in 64^3");
  check_same(ply, &o, "PLY, 256^3 in 64^3");
  o = opts(256, 5, 0);
  o.band = 3.0f;
  check_same(stl, &o, "STL, 256^3 in 32^3, band 3");
  o = opts(256, 6, 2);
  o.max_error = 0.5f;
  check_same(stl, &o, "STL, 256^3 in 64^3, pruned at 0.5, two threads");
  o = opts(512, 5, 1);
  check_same(stl, &o, "STL, 512^3 in 32^3, one thread");
  /* the paths of a large mesh: the buffer full before a range of triangles (written, then the
   * range again), a range whose records alone exceed it (one triangle at a time) */
  vx_split_test_buffer(120000);
  o = opts(256, 6, 0);
  check_same(stl, &o, "STL, 256^3 in 64^3, a buffer of 120000 records");
  vx_split_test_buffer(20000);
  o = opts(128, 3, 0);
  check_same(stl, &o, "STL, 128^3 in 8^3, a buffer of 20000 records");
  vx_split_test_buffer(0);

  /* the mesh's figures, as loading gives them */
  vx_mesh *m = NULL;
  vx_error e;
  REQUIRE(vx_mesh_load(stl, NULL, &m, &e) == VX_OK, "%s", e.msg);
  vx_mesh_info a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  a.struct_size = b.struct_size = sizeof a;
  vx_mesh_get_info(m, &a);
  vx_mesh_free(m);
  char out[128];
  snprintf(out, sizeof out, "%s/split.svo", dir);
  o = opts(256, 6, 0);
  CHECK(convert_file(stl, &o, out, &b));
  CHECK_MSG(a.triangles == b.triangles && a.skipped_degenerate == b.skipped_degenerate &&
            a.skipped_nonfinite == b.skipped_nonfinite && a.meshes == b.meshes,
            "info: %llu/%llu triangles, %llu/%llu degenerate, %llu/%llu non-finite",
            (unsigned long long)a.triangles, (unsigned long long)b.triangles,
            (unsigned long long)a.skipped_degenerate, (unsigned long long)b.skipped_degenerate,
            (unsigned long long)a.skipped_nonfinite, (unsigned long long)b.skipped_nonfinite);
  CHECK(a.skipped_degenerate == 1 && a.skipped_nonfinite == 1);
  for (int i = 0; i < 3; i++)
    CHECK(a.bbox_min[i] == b.bbox_min[i] && a.bbox_max[i] == b.bbox_max[i]);
}

/* The winding rule and files the streaming reader does not take are loaded, the same bytes. */
static void test_not_split(void) {
  char stl[128], ascii[512], ref[128], out[128];
  snprintf(stl, sizeof stl, "%s/bunny.stl", dir);
  snprintf(ref, sizeof ref, "%s/ref.svo", dir);
  snprintf(out, sizeof out, "%s/split.svo", dir);
  vx_convert_opts o = opts(256, 6, 0);
  o.sign_rule = VX_SIGN_WINDING;
  convert_loaded(stl, &o, ref);
  CHECK_MSG(!convert_file(stl, &o, out, NULL), "the winding rule was split");
  CHECK(tiled_same_file(ref, out));
  check_data_mesh("bunny.ply", ascii, sizeof ascii); /* ASCII PLY: assimp's */
  o = opts(256, 6, 0);
  convert_loaded(ascii, &o, ref);
  CHECK_MSG(!convert_file(ascii, &o, out, NULL), "an ASCII PLY was split");
  CHECK(tiled_same_file(ref, out));
}

static int cancel_split(void *user, const char *stage, double frac) {
  (void)frac;
  return strcmp(stage, "splitting") == 0 ? ++*(int *)user > 0 : 0;
}

static int folder_entries(const char *path) {
  DIR *d = opendir(path);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.' || strlen(e->d_name) > 2;
  if (d) closedir(d);
  return n;
}

static void test_errors(void) {
  uint64_t n = 0;
  float *t = test_triangles(&n);
  char bad[128], out[128], tmp[128];
  snprintf(bad, sizeof bad, "%s/bad.ply", dir);
  snprintf(out, sizeof out, "%s/bad.svo", dir);
  snprintf(tmp, sizeof tmp, "%s/tmp", dir);
  write_ply(bad, t, n, 1);
  free(t);
  CHECK(mkdir(tmp, 0700) == 0);
  vx_convert_opts o = opts(256, 6, 0);
  o.temp_dir = tmp;
  vx_error e;
  vx_conversion *c = NULL;
  CHECK_MSG(vx_convert_file(bad, NULL, &o, out, NULL, &c, &e) == VX_ERR_CORRUPT, "%s", e.msg);
  CHECK(c == NULL && access(out, F_OK) != 0);
  char stl[128];
  snprintf(stl, sizeof stl, "%s/bunny.stl", dir);
  int calls = 0;
  o.progress = cancel_split;
  o.user = &calls;
  CHECK(vx_convert_file(stl, NULL, &o, out, NULL, &c, &e) == VX_ERR_INTERRUPTED);
  CHECK(calls > 0 && c == NULL && access(out, F_OK) != 0);
  CHECK_MSG(folder_entries(tmp) == 0, "%d files left in the temporary folder", folder_entries(tmp));
  rmdir(tmp);
  unlink(bad);
}

/* The tiles of the parts file at parts built as tasks (by index, last first, on one thread) and
 * merged into out. */
static void build_tasks(const char *parts, const vx_convert_opts *o, const vx_tile_plan_info *want,
                        const char *out) {
  vx_convert_opts w = *o;
  w.threads = 1;
  vx_tile_plan *p = NULL;
  vx_error e;
  REQUIRE(vx_tile_plan_open_parts(parts, &w, &p, &e) == VX_OK, "%s", e.msg);
  vx_tile_plan_info i;
  memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  CHECK(vx_tile_plan_get_info(p, &i) == VX_OK);
  CHECK(i.tiles == want->tiles && i.build_id == want->build_id &&
        i.triangles == want->triangles && i.depth == want->depth);
  const uint64_t n = i.tiles;
  vx_tile_record *recs = (vx_tile_record *)calloc(n, sizeof *recs);
  char **paths = (char **)calloc(n, sizeof *paths);
  for (uint64_t k = n; k-- > 0;) {
    paths[k] = (char *)malloc(128);
    snprintf(paths[k], 128, "%s/tile-%llu.svo", dir, (unsigned long long)k);
    CHECK_MSG(vx_tile_plan_build(p, k, paths[k], &recs[k], &e) == VX_OK, "tile %llu: %s",
              (unsigned long long)k, e.msg);
  }
  vx_tile_plan_free(p);
  CHECK_MSG(vx_tile_merge(out, recs, (const char *const *)paths, n, NULL, &e) == VX_OK, "%s",
            e.msg);
  for (uint64_t k = 0; k < n; k++) {
    unlink(paths[k]);
    free(paths[k]);
  }
  free(paths);
  free(recs);
}

static void test_parts_tasks(void) {
  char stl[128], ref[128], out[128], parts[128];
  snprintf(stl, sizeof stl, "%s/bunny.stl", dir);
  snprintf(ref, sizeof ref, "%s/ref.svo", dir);
  snprintf(out, sizeof out, "%s/split.svo", dir);
  snprintf(parts, sizeof parts, "%s/parts", dir);
  const vx_convert_opts os[2] = {opts(256, 5, 0), opts(512, 6, 2)};
  for (int c = 0; c < 2; c++) {
    vx_convert_opts o = os[c];
    if (c) o.max_error = 0.5f;
    CHECK(convert_file(stl, &o, ref, NULL));
    vx_tile_plan_info i;
    memset(&i, 0, sizeof i);
    i.struct_size = sizeof i;
    vx_error e;
    REQUIRE(vx_tile_split(stl, &o, parts, &i, &e) == VX_OK, "%s", e.msg);
    CHECK(i.tiles > 8 && i.build_id != 0);
    build_tasks(parts, &o, &i, out);
    CHECK_MSG(tiled_same_file(ref, out), "case %d: the tasks' file differs from vx_convert_file's",
              c);
  }
}

/* The parts file at `parts` with one byte changed (at, xor x; or cut to `at` bytes when x is 0)
 * into bad; then opened: the status, and the first tile's build when it opens. */
static vx_status open_damaged(const uint8_t *b, size_t n, size_t at, uint8_t x, const char *bad,
                              const vx_convert_opts *o, vx_error *e) {
  FILE *f = fopen(bad, "wb");
  REQUIRE(f != NULL, "%s", bad);
  if (x) {
    fwrite(b, 1, at, f);
    const uint8_t v = b[at] ^ x;
    fwrite(&v, 1, 1, f);
    fwrite(b + at + 1, 1, n - at - 1, f);
  } else {
    fwrite(b, 1, at, f);
  }
  fclose(f);
  vx_tile_plan *p = NULL;
  vx_status s = vx_tile_plan_open_parts(bad, o, &p, e);
  if (s == VX_OK) {
    char tile[128];
    snprintf(tile, sizeof tile, "%s/tile.svo", dir);
    vx_tile_record r;
    s = vx_tile_plan_build(p, 0, tile, &r, e);
    unlink(tile);
  }
  vx_tile_plan_free(p);
  return s;
}

static void test_parts_errors(void) {
  char stl[128], parts[128], bad[128], ascii[512];
  snprintf(stl, sizeof stl, "%s/bunny.stl", dir);
  snprintf(parts, sizeof parts, "%s/parts", dir);
  snprintf(bad, sizeof bad, "%s/bad-parts", dir);
  vx_convert_opts o = opts(256, 5, 0);
  vx_error e;
  /* what is not split: no parts file */
  vx_convert_opts w = o;
  w.sign_rule = VX_SIGN_WINDING;
  CHECK(vx_tile_split(stl, &w, bad, NULL, &e) == VX_ERR_INVALID_ARG && access(bad, F_OK) != 0);
  check_data_mesh("bunny.ply", ascii, sizeof ascii);
  CHECK(vx_tile_split(ascii, &o, bad, NULL, &e) == VX_ERR_FORMAT && access(bad, F_OK) != 0);
  REQUIRE(vx_tile_split(stl, &o, parts, NULL, &e) == VX_OK, "%s", e.msg);
  /* other options than the split's */
  vx_tile_plan *p = NULL;
  w = opts(256, 6, 0);
  CHECK(vx_tile_plan_open_parts(parts, &w, &p, &e) == VX_ERR_INVALID_ARG && p == NULL);
  CHECK_MSG(strstr(e.msg, "split for another build") != NULL, "%s", e.msg);
  w = o;
  w.band = 3.0f;
  CHECK(vx_tile_plan_open_parts(parts, &w, &p, &e) == VX_ERR_INVALID_ARG && p == NULL);
  CHECK(vx_tile_plan_open_parts(bad, &o, &p, &e) == VX_ERR_IO && p == NULL);
  /* damaged: header fields, its check, the index, a record of the first tile, truncated */
  size_t n = 0;
  uint8_t *b = tiled_slurp(parts, &n);
  REQUIRE(b != NULL && n > VX_SPLIT_HEADER + VX_SPLIT_RUN, "%s", parts);
  vx_split_head h;
  REQUIRE(vx_split_head_decode(b, n, "parts", &h, &e) == VX_OK, "%s", e.msg);
  const struct {
    size_t at;
    uint8_t x;
    const char *what;
  } cases[] = {{0, 1, "magic"},         {20, 1, "tile depth"},     {80, 4, "copies"},
               {252, 1, "header check"}, {140, 1, "reserved"},     {h.index_at + 3, 1, "index"},
               {n - 1, 0x80, "last run"}, {VX_SPLIT_HEADER + 5, 1, "a record"},
               {n - 1, 0, "truncated"},  {h.index_at, 0, "no index"}, {100, 0, "no header"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const vx_status s = open_damaged(b, n, cases[i].at, cases[i].x, bad, &o, &e);
    CHECK_MSG(s == VX_ERR_CORRUPT, "%s: status %d (%s)", cases[i].what, (int)s, e.msg);
  }
  /* forged with consistent checks: more runs than the file holds, a part past the mesh */
  vx_split_head f = h;
  f.runs = UINT64_C(1) << 60;
  uint8_t *g = (uint8_t *)malloc(n);
  memcpy(g, b, n);
  vx_split_head_encode(&f, g);
  CHECK(open_damaged(g, n, n, 0, bad, &o, &e) == VX_ERR_CORRUPT);
  f = h;
  f.triangles = h.max_part; /* fewer than the first part's indices reach */
  f.copies = 0;
  vx_split_head_encode(&f, g);
  CHECK(open_damaged(g, n, n, 0, bad, &o, &e) == VX_ERR_CORRUPT);
  CHECK_MSG(strstr(e.msg, "past the mesh") != NULL, "%s", e.msg);
  free(g);
  free(b);
  unlink(bad);
  unlink(parts);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/voxlod-split-XXXXXX");
  REQUIRE(mkdtemp(dir) != NULL, "mkdtemp");
  RUN(test_split_is_loaded);
  RUN(test_not_split);
  RUN(test_errors);
  RUN(test_parts_tasks);
  RUN(test_parts_errors);
  const char *names[] = {"bunny.stl", "bunny.ply", "ref.svo", "split.svo"};
  for (int i = 0; i < 4; i++) {
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    unlink(p);
  }
  rmdir(dir);
  return check_summary();
}
