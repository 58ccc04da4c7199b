/* SPDX-License-Identifier: Apache-2.0 */
/* test_voxelizer_ooc.c - the streaming (out-of-core) build against the in-core build.
 *
 * Reference: vx_voxelize (all voxels concatenated, vx_octree_build, whole-tree plane fit) written
 * with vx_svo_encode. The streaming build (vx_voxelize_stream_ex), forced to spill to files from
 * its first block and cut into small blocks so that there are many partitions, written with
 * vx_svo_write_stream, must give the same file byte for byte; so must the stream kept in memory.
 * Partition boundaries are made to pass through triangles, along faces and through vertices and
 * voxel corners. Failures (an injected block failure, a cancel during the build and during the
 * write) must leave no file, no open temporary and an existing output untouched.
 */
#define _POSIX_C_SOURCE 200809L
#include "voxelizer/internal.h"
#include "formats/svo_file.h"
#include "formats/mesh_import.h"
#include "svo/lod.h"
#include "check.h"
#include "meshgen.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#pragma weak vx_soup_import

static char tmp_root[256];
static int sign_rule = VX_SIGN_WINDING; /* the build's default; the big optional test is faster */

static uint8_t *reference_pruned(const vx_soup *m, uint32_t res, float max_error, size_t *n);
static uint8_t *reference(const vx_soup *m, uint32_t res, size_t *n) {
  return reference_pruned(m, res, 0.0f, n);
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

static int open_fds(void) { return count_entries("/proc/self/fd"); }

static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = (uint8_t *)malloc(sz > 0 ? (size_t)sz : 1);
  *n = fread(b, 1, (size_t)sz, f);
  fclose(f);
  return b;
}

/* In-core reference bytes (pruned when max_error > 0). */
static uint8_t *reference_pruned(const vx_soup *m, uint32_t res, float max_error, size_t *n) {
  vx_voxelize_opts o;
  memset(&o, 0, sizeof o);
  o.resolution = res;
  o.max_error = max_error;
  o.sign_rule = sign_rule;
  vx_octree t;
  vx_error e;
  uint8_t *bytes = NULL;
  *n = 0;
  vx_status s = vx_voxelize(m, &o, &t, NULL, &e);
  CHECK_MSG(s == VX_OK, "%s", e.msg);
  if (s != VX_OK) return NULL;
  CHECK(vx_svo_encode(&t, 0, &bytes, n, &e) == VX_OK);
  vx_octree_free(&t);
  return bytes;
}

/* Streams the mesh (spilled from the first block when spill != 0) and compares both the file
 * written from the stream and, for a memory stream, the tree's encoding with ref. */
static void stream_matches(const vx_soup *m, uint32_t res, uint32_t blog, int threads, int spill,
                           const uint8_t *ref, size_t ref_n) {
  vx_voxelize_opts o;
  memset(&o, 0, sizeof o);
  o.resolution = res;
  o.threads = threads;
  o.sign_rule = sign_rule;
  vx_stream_build_opts x;
  memset(&x, 0, sizeof x);
  x.block_log2 = blog;
  x.spill_budget = spill ? 1 : 0;
  vx_stream s;
  vx_error e;
  vx_voxelize_stats st;
  int fds = open_fds();
  vx_status r = vx_voxelize_stream_ex(m, &o, tmp_root, &x, &s, &st, &e);
  CHECK_MSG(r == VX_OK, "%s", e.msg);
  if (r != VX_OK) return;
  CHECK(s.spilled == spill);
  if (spill) CHECK(s.spilled_bytes > 0 && s.mem_bytes == 0);
  CHECK(count_entries(tmp_root) == 1); /* only out/: spill files are nameless */
  char out[512];
  snprintf(out, sizeof out, "%s/out/o.svo", tmp_root);
  r = vx_svo_write_stream(out, &s, 0, NULL, NULL, &e);
  CHECK_MSG(r == VX_OK, "%s", e.msg);
  size_t n = 0;
  uint8_t *b = slurp(out, &n);
  CHECK_MSG(b && n == ref_n && memcmp(b, ref, n) == 0,
            "res %u blocks 2^%u threads %d spill %d: %zu bytes vs %zu in-core", res, blog,
            threads, spill, n, ref_n);
  free(b);
  unlink(out);
  if (!spill) {
    vx_octree t;
    r = vx_stream_take_tree(&s, &t, &e);
    CHECK_MSG(r == VX_OK, "%s", e.msg);
    CHECK(vx_octree_validate(&t, NULL) == VX_OK);
    uint8_t *enc = NULL;
    size_t en = 0;
    CHECK(vx_svo_encode(&t, 0, &enc, &en, &e) == VX_OK);
    CHECK(en == ref_n && enc && memcmp(enc, ref, en) == 0);
    CHECK(t.voxel_count == st.surface_voxels && t.node_count == st.nodes);
    free(enc);
    vx_octree_free(&t);
  }
  vx_stream_free(&s);
  CHECK_MSG(open_fds() == fds, "%d descriptors open, %d before", open_fds(), fds);
}

static void sphere_torus(vx_soup *m) {
  memset(m, 0, sizeof *m);
  meshgen_sphere(m, 0.1, -0.2, 0.05, 0.8, 40, 20);
  meshgen_torus(m, 0.3, 0.2, -0.1, 0.6, 0.2, 36, 16);
}

/* Same bytes whatever the partitioning, the thread count and spilling, at 64..256. */
static void stream_equals_in_core(void) {
  vx_soup m;
  sphere_torus(&m);
  const uint32_t res[3] = {64, 128, 256};
  for (int i = 0; i < 3; i++) {
    size_t ref_n;
    uint8_t *ref = reference(&m, res[i], &ref_n);
    if (!ref) continue;
    stream_matches(&m, res[i], 3, 2, 1, ref, ref_n); /* blocks of 8^3: many partitions */
    stream_matches(&m, res[i], 0, 2, 0, ref, ref_n); /* default blocks, in memory */
    if (res[i] == 64) {
      stream_matches(&m, res[i], 1, 1, 1, ref, ref_n); /* 2^3 blocks, one thread */
      stream_matches(&m, res[i], 6, 2, 1, ref, ref_n); /* one block: the whole grid */
      stream_matches(&m, res[i], 4, 3, 0, ref, ref_n);
    }
    free(ref);
  }
  vx_soup_free(&m);
}

/* A mesh whose box faces lie on block boundaries (x, y, z = 16 and 48 in a 64^3 grid with blocks
 * of 4, 8, 16), with vertices on block corners, plus a large slanted sheet crossing many blocks:
 * partition boundaries cut through triangles, along faces and through voxel corners. */
static void boundaries_through_triangles_and_corners(void) {
  vx_soup m;
  memset(&m, 0, sizeof m);
  const double lo[3] = {16, 16, 16}, hi[3] = {48, 48, 48};
  meshgen_box(&m, lo, hi);
  /* two unit boxes in opposite corners fix the grid to [0, 64]^3 */
  const double t0[3] = {0, 0, 0}, t1[3] = {1, 1, 1}, t2[3] = {63, 63, 63}, t3[3] = {64, 64, 64};
  meshgen_box(&m, t0, t1);
  meshgen_box(&m, t2, t3);
  const double p0[3] = {3.0, 8.0, 5.0}, u[3] = {56.0, 4.0, 40.0}, v[3] = {0.0, 48.0, 10.0};
  meshgen_sheet(&m, p0, u, v);
  CHECK(m.bbox_min[0] == 0.0f && m.bbox_max[0] == 64.0f);
  size_t ref_n;
  uint8_t *ref = reference(&m, 64, &ref_n);
  if (ref) {
    stream_matches(&m, 64, 2, 2, 1, ref, ref_n);
    stream_matches(&m, 64, 3, 2, 1, ref, ref_n);
    stream_matches(&m, 64, 4, 2, 1, ref, ref_n);
    stream_matches(&m, 64, 4, 2, 0, ref, ref_n);
    free(ref);
  }
  ref = reference(&m, 128, &ref_n); /* faces at 32 and 96: on 2^5 boundaries */
  if (ref) {
    stream_matches(&m, 128, 5, 2, 1, ref, ref_n);
    stream_matches(&m, 128, 3, 2, 1, ref, ref_n);
    free(ref);
  }
  vx_soup_free(&m);
}

/* Pruning the stream (vx_stream_prune, files in, files out) gives vx_octree_prune's file. */
static void pruned_stream_equals_in_core(void) {
  vx_soup m;
  sphere_torus(&m);
  const float E[2] = {0.05f, 0.6f};
  for (int i = 0; i < 2; i++) {
    size_t ref_n;
    uint8_t *ref = reference_pruned(&m, 128, E[i], &ref_n);
    if (!ref) continue;
    for (int spill = 0; spill < 2; spill++) {
      vx_voxelize_opts o;
      memset(&o, 0, sizeof o);
      o.resolution = 128;
      o.sign_rule = sign_rule;
      vx_stream_build_opts x;
      memset(&x, 0, sizeof x);
      x.block_log2 = 3;
      x.spill_budget = spill ? 1 : 0;
      vx_stream s, p;
      vx_error e;
      int fds = open_fds();
      CHECK(vx_voxelize_stream_ex(&m, &o, tmp_root, &x, &s, NULL, &e) == VX_OK);
      vx_status r = vx_stream_prune(&s, E[i], &p, &e);
      CHECK_MSG(r == VX_OK, "%s", e.msg);
      uint64_t before = s.level_count[s.depth];
      vx_stream_free(&s);
      if (r != VX_OK) continue;
      CHECK(p.spilled == spill);
      CHECK(p.level_count[p.depth] < before); /* something was pruned */
      char out[512];
      snprintf(out, sizeof out, "%s/out/p.svo", tmp_root);
      r = vx_svo_write_stream(out, &p, 0, NULL, NULL, &e);
      CHECK_MSG(r == VX_OK, "%s", e.msg);
      size_t n = 0;
      uint8_t *b = slurp(out, &n);
      CHECK_MSG(b && n == ref_n && memcmp(b, ref, n) == 0, "E %g spill %d: %zu vs %zu bytes",
                (double)E[i], spill, n, ref_n);
      free(b);
      unlink(out);
      vx_stream_free(&p);
      CHECK(open_fds() == fds);
    }
    free(ref);
  }
  vx_soup_free(&m);
}

static int cancel_after;
static int cancel_progress(void *user, const char *phase, double f) {
  (void)user;
  (void)phase;
  (void)f;
  return --cancel_after < 0;
}

/* An injected block failure and cancels during the build and the write leave nothing behind. */
static void failures_leave_nothing(void) {
  vx_soup m;
  sphere_torus(&m);
  vx_voxelize_opts o;
  memset(&o, 0, sizeof o);
  o.resolution = 128;
  vx_stream_build_opts x;
  memset(&x, 0, sizeof x);
  x.block_log2 = 3;
  x.spill_budget = 1;
  vx_stream s;
  vx_error e;
  int fds = open_fds();
  for (uint64_t k = 1; k <= 301; k += 100) {
    x.fail_block = k;
    vx_status r = vx_voxelize_stream_ex(&m, &o, tmp_root, &x, &s, NULL, &e);
    CHECK_MSG(r == VX_ERR_IO && strstr(e.msg, "injected"), "block %llu: %s",
              (unsigned long long)k, e.msg);
    CHECK(s.lv[s.depth].f == NULL && s.top == NULL); /* freed on failure */
    CHECK(count_entries(tmp_root) == 1);              /* only out/ */
    CHECK(open_fds() == fds);
  }
  x.fail_block = 0;
  o.progress = cancel_progress;
  cancel_after = 50;
  vx_status r = vx_voxelize_stream_ex(&m, &o, tmp_root, &x, &s, NULL, &e);
  CHECK(r == VX_ERR_INTERRUPTED);
  CHECK(count_entries(tmp_root) == 1 && open_fds() == fds);
  /* Cancel while writing: no output, an existing file untouched, nothing left. */
  o.progress = NULL;
  r = vx_voxelize_stream_ex(&m, &o, tmp_root, &x, &s, NULL, &e);
  CHECK(r == VX_OK && s.spilled);
  char out[512];
  snprintf(out, sizeof out, "%s/out/keep.svo", tmp_root);
  FILE *f = fopen(out, "wb");
  fputs("old", f);
  fclose(f);
  cancel_after = 2;
  r = vx_svo_write_stream(out, &s, 0, cancel_progress, NULL, &e);
  CHECK(r == VX_ERR_INTERRUPTED);
  size_t n = 0;
  uint8_t *b = slurp(out, &n);
  CHECK(b && n == 3 && memcmp(b, "old", 3) == 0);
  free(b);
  snprintf(out, sizeof out, "%s/out", tmp_root);
  CHECK(count_entries(out) == 1);
  vx_stream_free(&s);
  CHECK(count_entries(tmp_root) == 1 && open_fds() == fds);
  snprintf(out, sizeof out, "%s/out/keep.svo", tmp_root);
  unlink(out);
  vx_soup_free(&m);
}

/* A limit that even the out-of-core build cannot meet fails at once, saying what it needs. */
static void impossible_limit_fails_early(void) {
  vx_soup m;
  sphere_torus(&m);
  vx_voxelize_opts o;
  memset(&o, 0, sizeof o);
  o.resolution = 1024;
  o.mem_limit = 1 << 20;
  vx_stream s;
  vx_error e;
  vx_status r = vx_voxelize_stream(&m, &o, tmp_root, &s, NULL, &e);
  CHECK_MSG(r == VX_ERR_LIMIT && strstr(e.msg, "needs at least about") && strstr(e.msg, "MiB"),
            "%s", e.msg);
  /* A generous limit keeps everything in memory. */
  o.resolution = 64;
  o.mem_limit = (uint64_t)16 << 30;
  r = vx_voxelize_stream(&m, &o, tmp_root, &s, NULL, &e);
  CHECK(r == VX_OK && !s.spilled);
  vx_stream_free(&s);
  vx_soup_free(&m);
}

/* A stress run on request, not part of the suite (VOXLOD_TEST_BIG=R, VOXLOD_TEST_DRAGON=any
 * large mesh, e.g. the unpacked 871k-triangle dragon): the mesh at R^3 (default 1024) with the
 * pseudo-normal sign; from 2048 on the file is big enough for zstd's workers. */
static void big_mesh_matches(void) {
  const char *big = getenv("VOXLOD_TEST_BIG");
  const char *ply = getenv("VOXLOD_TEST_DRAGON");
  if (!big || !ply) return;
  CHECK_MSG(vx_soup_import != NULL, "no mesh importer linked");
  if (!vx_soup_import) return;
  vx_soup m = {0};
  vx_error e;
  vx_status is = vx_soup_import(ply, &m, &e);
  CHECK_MSG(is == VX_OK, "%s: %s", ply, e.msg);
  if (is != VX_OK) return;
  uint32_t res = (uint32_t)atoi(big) >= 64 ? (uint32_t)atoi(big) : 1024;
  sign_rule = VX_SIGN_PSEUDO_NORMAL;
  size_t ref_n;
  uint8_t *ref = reference(&m, res, &ref_n);
  if (ref) {
    stream_matches(&m, res, 0, 0, 1, ref, ref_n);
    free(ref);
  }
  vx_soup_free(&m);
}

int main(void) {
  snprintf(tmp_root, sizeof tmp_root, "%s/ooc-test-XXXXXX", VX_BUILD_DIR);
  if (!mkdtemp(tmp_root)) CHECK_FATAL("cannot create a temporary directory");
  char out[512];
  snprintf(out, sizeof out, "%s/out", tmp_root);
  mkdir(out, 0755);
  RUN(stream_equals_in_core);
  RUN(boundaries_through_triangles_and_corners);
  RUN(pruned_stream_equals_in_core);
  RUN(failures_leave_nothing);
  RUN(impossible_limit_fails_early);
  RUN(big_mesh_matches);
  rmdir(out);
  CHECK(rmdir(tmp_root) == 0);
  return check_summary();
}
