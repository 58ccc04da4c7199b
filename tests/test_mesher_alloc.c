/* SPDX-License-Identifier: Apache-2.0 */
/* test_mesher_alloc.c - every host allocation of vx_mesher_extract and vx_mesh_save, made to fail
 * in turn through the allocator hook: each failure must give VX_ERR_NOMEM with a message, no mesh,
 * no output file or temporary, and leak nothing (the hook counts live blocks). One thread, so
 * that the i-th allocation is the same one in every run. */
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

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

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

static char tmpdir[256];

static int leftovers(void) {
  DIR *d = opendir(tmpdir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (e->d_name[0] != '.') n++;
  if (d) closedir(d);
  return n;
}

/* A torus soup, 3 vertices per triangle. */
static vx_mesh *torus(void) {
  enum { NU = 24, NV = 12 };
  float *v = (float *)malloc((size_t)NU * NV * 2 * 9 * sizeof(float)), *q = v;
  for (int i = 0; i < NU; i++)
    for (int j = 0; j < NV; j++) {
      double p[4][3];
      for (int k = 0; k < 4; k++) {
        double u = 2 * M_PI * (i + (k & 1)) / NU, w = 2 * M_PI * (j + (k >> 1)) / NV;
        p[k][0] = (1.0 + 0.4 * cos(w)) * cos(u);
        p[k][1] = (1.0 + 0.4 * cos(w)) * sin(u);
        p[k][2] = 0.4 * sin(w);
      }
      const int t[6] = {0, 1, 3, 0, 3, 2};
      for (int k = 0; k < 6; k++)
        for (int c = 0; c < 3; c++) *q++ = (float)p[t[k]][c];
    }
  vx_mesh *m = NULL;
  vx_error e;
  CHECK(vx_mesh_from_arrays(v, NU * NV * 6, NULL, NU * NV * 2, &m, &e) == VX_OK);
  free(v);
  return m;
}

static void meshing_survives_every_failed_allocation(void) {
  vx_allocator al = {a_alloc, a_realloc, a_free, NULL};
  CHECK(vx_set_allocator(&al) == VX_OK);
  vx_mesh *src = torus();
  vx_convert_opts co;
  memset(&co, 0, sizeof co);
  co.resolution = 32;
  co.threads = 1;
  co.device = VX_DEVICE_CPU;
  vx_conversion *b = NULL;
  vx_error e;
  CHECK(vx_convert(src, &co, &b, &e) == VX_OK);
  vx_tree *t = vx_conversion_take_tree(b);
  vx_conversion_free(b);
  vx_mesh_free(src);
  if (!t) return;
  char out[512];
  snprintf(out, sizeof out, "%s/torus.ply", tmpdir);
  const vx_mesher_cut cuts[2] = {VX_MESHER_FINEST, VX_MESHER_ERROR};
  long failures = 0;
  for (int c = 0; c < 2; c++) {
    for (long i = 1;; i++) {
      long live = A.live;
      A.count = 0;
      A.fail_at = i;
      vx_mesher_opts o;
      memset(&o, 0, sizeof o);
      o.cut = cuts[c];
      o.max_error = 1.0f;
      o.threads = 1;
      vx_mesh *m = (vx_mesh *)1;
      memset(&e, 0, sizeof e);
      vx_status st = vx_mesher_extract(t, &o, &m, &e);
      if (st == VX_OK) st = vx_mesh_save(m, out, &e);
      else CHECK(m == NULL);
      int done = A.count < i; /* the whole call ran without reaching the failure */
      A.fail_at = 0;
      if (st != VX_OK) {
        failures++;
        CHECK_MSG(st == VX_ERR_NOMEM && e.msg[0], "allocation %ld: status %d '%s'", i, (int)st,
                  e.msg);
        CHECK_MSG(leftovers() == 0, "allocation %ld: a file was left behind", i);
      }
      if (m && m != (vx_mesh *)1) vx_mesh_free(m);
      CHECK_MSG(A.live == live, "allocation %ld: %ld blocks leaked", i, A.live - live);
      unlink(out);
      if (done) {
        CHECK(st == VX_OK);
        break;
      }
    }
  }
  fprintf(stderr, "  %ld failed allocations handled\n", failures);
  CHECK(failures > 20);
  vx_tree_free(t);
  CHECK(A.live == 0);
  CHECK(vx_set_allocator(NULL) == VX_OK);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/vx_mesher_alloc.XXXXXX");
  if (!mkdtemp(tmpdir)) CHECK_FATAL("no temporary directory");
  RUN(meshing_survives_every_failed_allocation);
  rmdir(tmpdir);
  return check_summary();
}
