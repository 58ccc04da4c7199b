/* SPDX-License-Identifier: Apache-2.0 */
/* test_voxelizer_ooc_color.c - colour in the streaming (out-of-core) build against the colour pass
 * over the whole tree.
 *
 * Reference: vx_voxelize, then vx_color_tree (color.c: every triangle clipped over the whole
 * grid, one global sort), written with vx_svo_encode. The streaming build with opts.color
 * (colours made block by block, color_block.c), spilled to files from its first block or kept in
 * memory, cut into blocks of 4^3 .. the default, on 1 and 3 threads, must give the same colour
 * arrays and the same file byte for byte, for both filters, pruned (vx_stream_prune on the
 * spilled stream against vx_octree_prune on the coloured tree) or not. The meshes are generated:
 * textured (opaque, MASK cut-outs with a hole wider than several blocks, BLEND), vertex-coloured
 * and flat-coloured triangles, exact duplicates (the colour counts them, the build drops them), a
 * quad lying on the grid plane between two blocks and one whose edge runs along a block face.
 *
 * Built a second time as test_gpu_ooc_color (VX_TEST_OOC_GPU): the streaming builds then make
 * their surface on the GPU (opts.gpu; the colours stay on the CPU) and must give the same bytes;
 * skipped (77) without a usable GPU.
 */
#define _POSIX_C_SOURCE 200809L
#include "voxelizer/internal.h"
#include "formats/svo_file.h"
#include "svo/lod.h"
#include "sys/system.h"
#include "check.h"
#include "color_soup.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp_root[256];

/* ---- the comparisons ------------------------------------------------------------------------- */

static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  *n = 0;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = (uint8_t *)malloc(sz > 0 ? (size_t)sz : 1);
  *n = fread(b, 1, (size_t)sz, f);
  fclose(f);
  return b;
}

/* The in-core tree coloured by the whole pass (pruned at max_error > 0 after colouring). */
static int reference(const vx_soup *m, uint32_t res, vx_color_filter f, float max_error,
                     vx_octree *t) {
  vx_voxelize_opts o;
  memset(&o, 0, sizeof o);
  o.resolution = res;
  vx_error e;
  vx_status s = vx_voxelize(m, &o, t, NULL, &e);
  CHECK_MSG(s == VX_OK, "%s", e.msg);
  if (s != VX_OK) return 0;
  s = vx_color_tree(m, t, f, 2, 0, &e);
  CHECK_MSG(s == VX_OK && t->node_color && t->voxel_color, "%s", e.msg);
  if (s == VX_OK && max_error > 0.0f) {
    s = vx_octree_prune(t, max_error, &e);
    t->prune_error = max_error;
    CHECK_MSG(s == VX_OK, "%s", e.msg);
  }
  return s == VX_OK;
}

typedef struct ref_set {
  vx_octree t;
  uint8_t *bytes;
  size_t n;
} ref_set;

static void stream_matches(const vx_soup *m, uint32_t res, vx_color_filter f, uint32_t blog,
                           int threads, int spill, float max_error, const ref_set *ref) {
  vx_voxelize_opts o;
  memset(&o, 0, sizeof o);
  o.resolution = res;
  o.threads = threads;
  o.color = 1;
  o.color_filter = f;
#ifdef VX_TEST_OOC_GPU
  o.gpu = 1;
#endif
  vx_stream_build_opts x;
  memset(&x, 0, sizeof x);
  x.block_log2 = blog;
  x.spill_budget = spill ? 1 : 0;
  vx_stream s;
  vx_error e;
  vx_status r = vx_voxelize_stream_ex(m, &o, tmp_root, &x, &s, NULL, &e);
#ifdef VX_TEST_OOC_GPU
  if (r == VX_ERR_NO_GPU) {
    rmdir(tmp_root);
    CHECK_SKIP("%s", e.msg);
  }
#endif
  CHECK_MSG(r == VX_OK, "%s", e.msg);
  if (r != VX_OK) return;
  CHECK(s.color && s.spilled == spill);
  if (max_error > 0.0f) {
    vx_stream p;
    r = vx_stream_prune(&s, max_error, &p, &e);
    CHECK_MSG(r == VX_OK, "%s", e.msg);
    vx_stream_free(&s);
    if (r != VX_OK) return;
    s = p;
    CHECK(s.color && s.spilled == spill);
  }
  const char *what = f == VX_COLOR_FILTER_DOMINANT ? "dominant" : "mean";
  if (spill) {
    char out[512];
    snprintf(out, sizeof out, "%s/o.svo", tmp_root);
    r = vx_svo_write_stream(out, &s, 0, NULL, NULL, &e);
    CHECK_MSG(r == VX_OK, "%s", e.msg);
    size_t n = 0;
    uint8_t *b = slurp(out, &n);
    CHECK_MSG(b && n == ref->n && memcmp(b, ref->bytes, n) == 0,
              "%s res %u blocks 2^%u threads %d prune %g: the spilled stream's file (%zu bytes) "
              "is not the in-core one (%zu)", what, res, blog, threads, (double)max_error, n,
              ref->n);
    free(b);
    unlink(out);
  } else {
    vx_octree t;
    r = vx_stream_take_tree(&s, &t, &e);
    CHECK_MSG(r == VX_OK, "%s", e.msg);
    if (r == VX_OK && max_error > 0.0f) t.prune_error = max_error;
    const vx_octree *a = &ref->t;
    int same = r == VX_OK && t.node_count == a->node_count && t.voxel_count == a->voxel_count &&
               t.node_color && t.voxel_color;
    uint64_t bad = 0, first = UINT64_MAX;
    for (uint64_t i = 0; same && i < t.node_count; i++)
      if (t.node_color[i] != a->node_color[i] && bad++ == 0) first = i;
    for (uint64_t i = 0; same && i < t.voxel_count; i++)
      if (t.voxel_color[i] != a->voxel_color[i] && bad++ == 0) first = t.node_count + i;
    CHECK_MSG(same && bad == 0, "%s res %u blocks 2^%u threads %d prune %g: %llu colours differ "
              "(first: cell %llu)", what, res, blog, threads, (double)max_error,
              (unsigned long long)bad, (unsigned long long)first);
    uint8_t *enc = NULL;
    size_t en = 0;
    CHECK(r == VX_OK && vx_svo_encode(&t, 0, &enc, &en, &e) == VX_OK);
    CHECK_MSG(en == ref->n && enc && memcmp(enc, ref->bytes, en) == 0,
              "%s res %u blocks 2^%u: the memory stream's tree encodes differently", what, res,
              blog);
    free(enc);
    vx_octree_free(&t);
  }
  vx_stream_free(&s);
}

/* What the reference holds: cut-out cells, inherited cells (alpha 255 at a voxel no part reached
 * is not observable; the mask's holes and partly cut cells are), several colours. */
static void reference_is_rich(const vx_octree *t) {
  uint64_t holes = 0, partial = 0;
  for (uint64_t i = 0; i < t->voxel_count; i++) {
    uint32_t a = t->voxel_color[i] >> 24;
    holes += a == 0;
    partial += a > 0 && a < 255;
  }
  CHECK_MSG(holes > 20 && partial > 20, "%llu cut-out and %llu partly cut voxels",
            (unsigned long long)holes, (unsigned long long)partial);
}

static void run_mesh(int corners) {
  vx_soup m;
  make_soup(&m, corners);
  const vx_color_filter filters[2] = {VX_COLOR_FILTER_MEAN, VX_COLOR_FILTER_DOMINANT};
  const uint32_t resolutions[2] = {32, 64};
  for (int fi = 0; fi < 2; fi++)
    for (int ri = 0; ri < 2; ri++)
      for (int pi = 0; pi < 2; pi++) {
        const uint32_t res = resolutions[ri];
        const float E = pi ? 0.25f : 0.0f;
        ref_set ref;
        memset(&ref, 0, sizeof ref);
        if (!reference(&m, res, filters[fi], E, &ref.t)) continue;
        if (!pi) reference_is_rich(&ref.t);
        vx_error e;
        CHECK(vx_svo_encode(&ref.t, 0, &ref.bytes, &ref.n, &e) == VX_OK);
        const uint32_t blogs[3] = {2, 3, 0};
        for (int bi = 0; bi < 3; bi++)
          for (int spill = 0; spill < 2; spill++)
            stream_matches(&m, res, filters[fi], blogs[bi], spill ? 3 : 1, spill, E, &ref);
        free(ref.bytes);
        vx_octree_free(&ref.t);
      }
  vx_soup_free(&m);
}

/* A grey mesh stays grey: no colour kept, the same file as before colour existed. */
static void grey_mesh_stays_grey(void) {
  vx_soup m;
  make_soup(&m, 0);
  vx_soup_color *c = m.color;
  m.color = NULL;
  vx_voxelize_opts o;
  memset(&o, 0, sizeof o);
  o.resolution = 32;
  o.color = 1;
  vx_stream s;
  vx_error e;
  CHECK(vx_voxelize_stream(&m, &o, tmp_root, &s, NULL, &e) == VX_OK);
  CHECK(!s.color);
  vx_stream_free(&s);
  m.color = c;
  vx_soup_free(&m);
}

static int count_fds(void) {
  int n = 0;
  for (int fd = 0; fd < 4096; fd++)
    if (fcntl(fd, F_GETFD) != -1) n++;
  return n;
}

/* A block failing mid-build (after colours were appended and spilled) leaves no descriptor, no
 * file and (under the sanitizer) no leak behind. */
static void failure_leaves_nothing(void) {
  vx_soup m;
  make_soup(&m, 0);
  for (int spill = 0; spill < 2; spill++) {
    vx_voxelize_opts o;
    memset(&o, 0, sizeof o);
    o.resolution = 32;
    o.threads = 2;
    o.color = 1;
    vx_stream_build_opts x;
    memset(&x, 0, sizeof x);
    x.block_log2 = 2;
    x.spill_budget = spill ? 1 : 0;
    x.fail_block = 40;
    vx_stream s;
    vx_error e;
    const int fds = count_fds();
    CHECK(vx_voxelize_stream_ex(&m, &o, tmp_root, &x, &s, NULL, &e) == VX_ERR_IO);
    CHECK_MSG(count_fds() == fds, "%d descriptors open, %d before", count_fds(), fds);
    CHECK(rmdir(tmp_root) == 0 && mkdir(tmp_root, 0700) == 0); /* empty: spill files nameless */
  }
  vx_soup_free(&m);
}

int main(void) {
  snprintf(tmp_root, sizeof tmp_root, "/tmp/vx_ooc_color_%d", (int)getpid());
  mkdir(tmp_root, 0700);
  run_mesh(0);
  run_mesh(1);
  grey_mesh_stays_grey();
  failure_leaves_nothing();
  rmdir(tmp_root);
  return check_summary();
}
