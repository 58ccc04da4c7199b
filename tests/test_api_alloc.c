/* SPDX-License-Identifier: Apache-2.0 */
/* test_api_alloc.c - every host allocation of a convert, a read and a render of a small model, made
 * to fail in turn through the allocator hook (vx_set_allocator): each failure must give a clean
 * error (VX_ERR_NOMEM with a message), leave no output file or temporary, and leak nothing (the
 * hook counts live blocks; the ASan build of this test also sees every other memory error). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "voxlod.h"
#include "check.h"

static struct {
  long count;   /* allocations so far */
  long fail_at; /* the one that fails (0: none) */
  long live;    /* blocks handed out and not freed */
} A;

static void *a_alloc(void *u, size_t n) {
  (void)u;
  if (__atomic_add_fetch(&A.count, 1, __ATOMIC_SEQ_CST) == A.fail_at) return NULL;
  void *p = malloc(n);
  if (p) __atomic_add_fetch(&A.live, 1, __ATOMIC_SEQ_CST);
  return p;
}

static void *a_realloc(void *u, void *p, size_t n) {
  (void)u;
  if (__atomic_add_fetch(&A.count, 1, __ATOMIC_SEQ_CST) == A.fail_at) return NULL;
  void *q = realloc(p, n);
  if (q && !p) __atomic_add_fetch(&A.live, 1, __ATOMIC_SEQ_CST);
  return q;
}

static void a_free(void *u, void *p) {
  (void)u;
  if (!p) return;
  __atomic_sub_fetch(&A.live, 1, __ATOMIC_SEQ_CST);
  free(p);
}

static char tmpdir[256], svo_path[512], png_path[512];

/* An octahedron refined into many small triangles: enough to exercise every stage. */
static void model(float **v, uint64_t *n) {
  const int S = 12;
  *n = 0;
  *v = (float *)malloc((size_t)8 * S * S * 9 * sizeof(float));
  for (int oct = 0; oct < 8; oct++) {
    double sx = oct & 1 ? -1 : 1, sy = oct & 2 ? -1 : 1, sz = oct & 4 ? -1 : 1;
    for (int i = 0; i < S; i++)
      for (int j = 0; j < S - i; j++)
        for (int up = 0; up < (j < S - i - 1 ? 2 : 1); up++) {
          double p[3][2] = {{i, j}, {i + 1, j}, {i, j + 1}};
          if (up) {
            p[0][0] = i + 1, p[0][1] = j + 1;
            p[1][0] = i, p[1][1] = j + 1;
            p[2][0] = i + 1, p[2][1] = j;
          }
          int order[3] = {0, 1, 2};
          if ((sx * sy * sz < 0) != (up != 0)) order[1] = 2, order[2] = 1;
          for (int k = 0; k < 3; k++) {
            double a = p[order[k]][0] / S, b = p[order[k]][1] / S, c = 1.0 - a - b;
            float *q = *v + *n * 9 + 3 * k;
            q[0] = (float)(sx * a), q[1] = (float)(sy * b), q[2] = (float)(sz * c);
          }
          (*n)++;
        }
  }
}

static int leftovers(void) {
  DIR *d = opendir(tmpdir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strstr(e->d_name, "voxlod-tmp")) n++;
  if (d) closedir(d);
  return n;
}

/* One run of everything; returns the first failing status (VX_OK when all passed). */
static vx_status run(vx_error *e) {
  float *v;
  uint64_t n;
  model(&v, &n);
  vx_mesh *m = NULL;
  vx_status s = vx_mesh_from_arrays(v, 3 * n, NULL, n, &m, e);
  free(v);
  vx_conversion *b = NULL;
  if (s == VX_OK) {
    vx_convert_opts o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.resolution = 32;
    o.max_error = 0.25f;
    o.device = VX_DEVICE_CPU;
    o.threads = 2;
    s = vx_convert_to_file(m, &o, svo_path, &b, e);
  }
  vx_mesh_free(m);
  vx_conversion_free(b);
  vx_tree *t = NULL;
  if (s == VX_OK) s = vx_tree_load(svo_path, NULL, &t, e);
  vx_renderer *r = NULL;
  if (s == VX_OK) {
    vx_renderer_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.device = VX_DEVICE_CPU;
    ro.threads = 2;
    s = vx_renderer_create(t, &ro, &r, e);
  }
  uint8_t rgb[48 * 32 * 3];
  if (s == VX_OK) {
    vx_render_opts o;
    memset(&o, 0, sizeof o);
    o.width = 48;
    o.height = 32;
    o.lod = VX_LOD_PIXEL;
    s = vx_render(r, &o, rgb, NULL, NULL, e); /* the renderer's own depth buffer */
  }
  if (s == VX_OK) s = vx_write_png(png_path, rgb, 48, 32, e);
  vx_renderer_free(r);
  vx_tree_free(t);
  return s;
}

static void alloc_failures_are_clean(void) {
  vx_allocator al = {a_alloc, a_realloc, a_free, NULL};
  CHECK(vx_set_allocator(&al) == VX_OK);
  vx_error e;
  memset(&A, 0, sizeof A);
  CHECK_MSG(run(&e) == VX_OK, "%s", e.msg);
  long total = A.count;
  CHECK_MSG(A.live == 0, "%ld blocks leaked by a successful run", A.live);
  CHECK(total > 50);
  unlink(svo_path);
  unlink(png_path);
  long failed = 0, clean = 0;
  for (long i = 1; i <= total + 5; i++) {
    memset(&A, 0, sizeof A);
    A.fail_at = i;
    memset(&e, 0, sizeof e);
    vx_status s = run(&e);
    if (s != VX_OK) {
      failed++;
      CHECK_MSG(s == VX_ERR_NOMEM && e.msg[0], "allocation %ld: status %d '%s'", i, (int)s, e.msg);
      CHECK_MSG(access(png_path, F_OK) != 0, "allocation %ld: a PNG after a failure", i);
    } else {
      clean++;
    }
    CHECK_MSG(A.live == 0, "allocation %ld failed (%s): %ld blocks leaked", i,
              s == VX_OK ? "the run still passed" : e.msg, A.live);
    CHECK_MSG(leftovers() == 0, "allocation %ld: a temporary file left", i);
    unlink(svo_path);
    unlink(png_path);
  }
  fprintf(stderr, "  %ld allocations per run; %ld failures gave a clean error, %ld runs passed "
          "anyway (the failing allocation was optional or never reached)\n", total, failed, clean);
  CHECK(failed > total / 2);
  CHECK(vx_set_allocator(NULL) == VX_OK);
  vx_allocator bad = {a_alloc, NULL, a_free, NULL};
  CHECK(vx_set_allocator(&bad) == VX_ERR_INVALID_ARG);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/vx_test_alloc.XXXXXX");
  if (!mkdtemp(tmpdir)) return 1;
  snprintf(svo_path, sizeof svo_path, "%s/m.svo", tmpdir);
  snprintf(png_path, sizeof png_path, "%s/m.png", tmpdir);
  RUN(alloc_failures_are_clean);
  unlink(svo_path);
  unlink(png_path);
  rmdir(tmpdir);
  return check_summary();
}
