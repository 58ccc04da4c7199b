/* SPDX-License-Identifier: Apache-2.0 */
/* test_tile_tasks.c - the tiled build as tasks (vx_tile_plan_*, vx_tile_merge): tiles built by
 * separate plans in any order, on several threads, merged from records in any order, give the
 * file vx_convert_to_file writes, byte for byte; records and files that do not belong together
 * (another build, a tile twice, a file swapped or changed, a damaged record) are refused; a
 * coloured mesh's tasks give the coloured file. The
 * local pool with several workers (largest tiles first, finished tiles waiting in memory or in
 * temporary files) writes the same bytes. */
#include <dirent.h>
#include <pthread.h>
#include <unistd.h>
#include "lib/convert_tiled.h"
#include "tiled_scene.h"

static char dir[64];

static vx_convert_opts opts_of(uint32_t res, uint32_t T, float band) {
  vx_convert_opts o = tiled_opts(res, T, VX_DEVICE_CPU, 0, 0);
  o.band = band;
  return o;
}

typedef struct task {
  vx_tile_plan *p;
  uint64_t from, step, n;
  vx_tile_record *rec;
  char (*path)[128];
  int ok;
} task;

static void *run_tasks(void *arg) {
  task *t = (task *)arg;
  t->ok = 1;
  for (uint64_t k = t->from; k < t->n; k += t->step) {
    vx_error e;
    const uint64_t at = t->n - 1 - k; /* built from the last tile backwards */
    if (vx_tile_plan_build(t->p, at, t->path[at], &t->rec[at], &e) != VX_OK) {
      fprintf(stderr, "tile %llu: %s\n", (unsigned long long)at, e.msg);
      t->ok = 0;
    }
  }
  return NULL;
}

/* Plans in two "processes" (two plans of the same mesh), tiles on two threads each. */
static void tasks_equal_convert(const vx_mesh *m, uint32_t res, uint32_t T) {
  vx_error e;
  char want[128], got[128];
  snprintf(want, sizeof want, "%s/want.svo", dir);
  snprintf(got, sizeof got, "%s/got.svo", dir);
  vx_convert_opts o = opts_of(res, T, 0.0f);
  CHECK_MSG(tiled_convert(m, res, T, VX_DEVICE_CPU, 0, 0, want, &e) == VX_OK, "%s", e.msg);
  vx_tile_plan *p[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++) CHECK(vx_tile_plan_create(m, &o, &p[i], &e) == VX_OK);
  vx_tile_plan_info in;
  memset(&in, 0, sizeof in);
  in.struct_size = sizeof in;
  CHECK(vx_tile_plan_get_info(p[0], &in) == VX_OK);
  CHECK(in.tiles > 8 && in.tile_depth == T && (1u << in.depth) == res);
  const uint64_t n = in.tiles;
  vx_tile_record *rec = (vx_tile_record *)calloc(n, sizeof *rec);
  char(*path)[128] = (char(*)[128])calloc(n, 128);
  for (uint64_t k = 0; k < n; k++) snprintf(path[k], 128, "%s/tile-%llu.svo", dir, (unsigned long long)k);
  task t[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    t[i] = (task){p[i / 2], (uint64_t)i, 4, n, rec, path, 0};
    CHECK(pthread_create(&th[i], NULL, run_tasks, &t[i]) == 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    CHECK(t[i].ok);
  }
  uint64_t empty = 0;
  for (uint64_t k = 0; k < n; k++) {
    vx_tile_record_info ri;
    memset(&ri, 0, sizeof ri);
    ri.struct_size = sizeof ri;
    CHECK(vx_tile_record_get_info(&rec[k], &ri, &e) == VX_OK);
    CHECK(ri.build_id == in.build_id);
    CHECK(ri.empty == (access(path[k], F_OK) != 0));
    empty += ri.empty;
  }
  /* merged in reverse order of the records */
  vx_tile_record *rr = (vx_tile_record *)calloc(n, sizeof *rr);
  const char **pp = (const char **)calloc(n, sizeof *pp);
  for (uint64_t k = 0; k < n; k++) {
    rr[k] = rec[n - 1 - k];
    pp[k] = path[n - 1 - k];
  }
  vx_conversion *c = NULL;
  CHECK(vx_tile_merge(got, rr, pp, n, &c, &e) == VX_OK);
  CHECK(c != NULL);
  vx_conversion_free(c);
  CHECK(tiled_same_file(want, got));
  printf("  %u^3 in %u^3 tiles: %llu tasks (%llu empty), merged = converted\n", res, 1u << T,
         (unsigned long long)n, (unsigned long long)empty);

  /* refusals: nothing is written */
  unlink(got);
  uint64_t a = 0, b = 1; /* two tiles with files */
  while (access(path[a], F_OK) != 0) a++;
  b = a + 1;
  while (access(path[b], F_OK) != 0) b++;
  CHECK(vx_tile_merge(got, rr, pp, 0, NULL, &e) == VX_ERR_EMPTY);
  rr[1] = rr[0]; /* a tile twice */
  CHECK(vx_tile_merge(got, rr, pp, n, NULL, &e) == VX_ERR_INVALID_ARG);
  CHECK(strstr(e.msg, "twice") != NULL);
  rr[1] = rec[n - 2];
  const char *keep = pp[n - 1 - a]; /* tile a's file swapped for tile b's */
  pp[n - 1 - a] = path[b];
  CHECK(vx_tile_merge(got, rr, pp, n, NULL, &e) == VX_ERR_CORRUPT &&
        strstr(e.msg, "not the file its builder wrote") != NULL);
  char gone[160]; /* tile a's file missing */
  snprintf(gone, sizeof gone, "%s.gone", path[a]);
  pp[n - 1 - a] = gone;
  CHECK(vx_tile_merge(got, rr, pp, n, NULL, &e) == VX_ERR_IO && strstr(e.msg, gone) != NULL);
  pp[n - 1 - a] = keep;
  CHECK(access(got, F_OK) != 0);
  vx_tile_record bad = rr[3]; /* a damaged record */
  for (int i = 0; i < VX_TILE_RECORD_BYTES; i += 7) {
    rr[3].bytes[i] ^= 0x10;
    CHECK(vx_tile_merge(got, rr, pp, n, NULL, &e) != VX_OK);
    rr[3] = bad;
  }
  /* a tile of another build (another band) */
  vx_convert_opts o2 = opts_of(res, T, 3.0f);
  vx_tile_plan *q = NULL;
  CHECK(vx_tile_plan_create(m, &o2, &q, &e) == VX_OK);
  char other[128];
  snprintf(other, sizeof other, "%s/other.svo", dir);
  vx_tile_record r2;
  CHECK(vx_tile_plan_build(q, 0, other, &r2, &e) == VX_OK);
  rr[0] = r2;
  pp[0] = other;
  CHECK(vx_tile_merge(got, rr, pp, n, NULL, &e) == VX_ERR_INVALID_ARG);
  CHECK(strstr(e.msg, "another build") != NULL);
  CHECK(access(got, F_OK) != 0);
  CHECK(vx_tile_plan_build(q, 1u << 30, other, &r2, &e) == VX_ERR_INVALID_ARG);
  vx_tile_plan_free(q);
  for (uint64_t k = 0; k < n; k++) unlink(path[k]);
  unlink(other);
  unlink(want);
  free(rr);
  free(pp);
  free(rec);
  free(path);
  for (int i = 0; i < 2; i++) vx_tile_plan_free(p[i]);
}

/* Files in dir whose names begin with prefix. */
static int files_named(const char *prefix) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
  if (d) closedir(d);
  return n;
}

/* The local pool on three CPU workers, claims largest first: the tiles finish out of file order
 * and wait in memory, or (hold 1) every waiting one in a temporary file; the file is the one
 * vx_convert_to_file writes, and no temporary file is left. */
static void pool_equal_convert(const vx_mesh *m, uint32_t res, uint32_t T) {
  vx_error e;
  char want[128], got[128];
  snprintf(want, sizeof want, "%s/want.svo", dir);
  snprintf(got, sizeof got, "%s/got.svo", dir);
  CHECK_MSG(tiled_convert(m, res, T, VX_DEVICE_CPU, 0, 0, want, &e) == VX_OK, "%s", e.msg);
  vx_convert_opts o0 = opts_of(res, T, 0.0f), o;
  CHECK(vx_convert_opts_ready(&o0, &o, &e) == VX_OK);
  for (int hold = 0; hold < 2; hold++) {
    vx_tile_pool_opts po = {3, (uint64_t)hold};
    vx_conversion *b = (vx_conversion *)calloc(1, sizeof *b);
    CHECK_MSG(vx_convert_tiled_pool(&m->soup, &o, got, dir, &po, b, &e) == VX_OK, "%s", e.msg);
    const char *notes = vx_conversion_notes(b);
    /* with hold 1 some tile waited (three workers, largest first) and went to a file */
    CHECK_MSG((strstr(notes, "in a temporary file") != NULL) == hold, "hold %d: %s", hold, notes);
    CHECK(tiled_same_file(want, got));
    CHECK(files_named("voxlod-tile-") == 0);
    vx_conversion_free(b);
    unlink(got);
  }
  printf("  %u^3 in %u^3 tiles: three workers, waiting tiles in memory or files = converted\n",
         res, 1u << T);
  unlink(want);
}

/* A coloured mesh as tasks (tiles built backwards, records merged in reverse): the coloured file
 * vx_convert_to_file writes, byte for byte, with either filter; a record of the grey build of the
 * same mesh is another build. */
static void colored_tasks_equal_convert(uint32_t res, uint32_t T, vx_color_filter f) {
  vx_mesh *m = tiled_colored_scene();
  vx_error e;
  char want[128], got[128], grey[128];
  snprintf(want, sizeof want, "%s/cwant.svo", dir);
  snprintf(got, sizeof got, "%s/cgot.svo", dir);
  snprintf(grey, sizeof grey, "%s/cgrey.svo", dir);
  vx_convert_opts o = opts_of(res, T, 0.0f);
  o.color = VX_COLOR_AUTO;
  o.color_filter = f;
  CHECK_MSG(vx_convert_to_file(m, &o, want, NULL, &e) == VX_OK, "%s", e.msg);
  vx_tile_plan *p = NULL;
  CHECK(vx_tile_plan_create(m, &o, &p, &e) == VX_OK);
  vx_tile_plan_info in;
  memset(&in, 0, sizeof in);
  in.struct_size = sizeof in;
  CHECK(p && vx_tile_plan_get_info(p, &in) == VX_OK);
  const uint64_t n = in.tiles;
  vx_tile_record *rec = (vx_tile_record *)calloc(n ? n : 1, sizeof *rec);
  const char **pp = (const char **)calloc(n ? n : 1, sizeof *pp);
  char(*path)[128] = (char(*)[128])calloc(n ? n : 1, 128);
  for (uint64_t k = 0; p && k < n; k++) {
    const uint64_t at = n - 1 - k;
    snprintf(path[at], 128, "%s/ctile-%llu.svo", dir, (unsigned long long)at);
    CHECK_MSG(vx_tile_plan_build(p, at, path[at], &rec[k], &e) == VX_OK, "%s", e.msg);
    pp[k] = path[at];
  }
  CHECK_MSG(vx_tile_merge(got, rec, pp, n, NULL, &e) == VX_OK, "%s", e.msg);
  CHECK(tiled_same_file(want, got));
  vx_convert_opts og = o; /* the grey build's record among them */
  og.color = VX_COLOR_OFF;
  vx_tile_plan *q = NULL;
  CHECK(vx_tile_plan_create(m, &og, &q, &e) == VX_OK);
  vx_tile_record keep = rec[0];
  const char *kp = pp[0];
  CHECK(q && vx_tile_plan_build(q, n - 1, grey, &rec[0], &e) == VX_OK);
  pp[0] = grey;
  unlink(got);
  CHECK(vx_tile_merge(got, rec, pp, n, NULL, &e) == VX_ERR_INVALID_ARG &&
        strstr(e.msg, "another build") != NULL && access(got, F_OK) != 0);
  rec[0] = keep;
  pp[0] = kp;
  printf("  coloured (%s), %u^3 in %u^3 tiles: %llu tasks merged = converted\n",
         f == VX_COLOR_FILTER_MEAN ? "mean" : "dominant", res, 1u << T, (unsigned long long)n);
  vx_tile_plan_free(q);
  vx_tile_plan_free(p);
  for (uint64_t k = 0; k < n; k++) unlink(path[k]);
  unlink(want);
  unlink(got);
  unlink(grey);
  free(rec);
  free(pp);
  free(path);
  vx_mesh_free(m);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/voxlod-tasks-XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  vx_mesh *m = tiled_scene();
  tasks_equal_convert(m, 64, 3);
  tasks_equal_convert(m, 256, 5);
  pool_equal_convert(m, 256, 5);
  colored_tasks_equal_convert(64, 3, VX_COLOR_FILTER_MEAN);
  colored_tasks_equal_convert(128, 4, VX_COLOR_FILTER_DOMINANT);
  vx_error e;
  vx_convert_opts o = opts_of(64, 0, 0.0f);
  vx_tile_plan *p = NULL;
  CHECK(vx_tile_plan_create(m, &o, &p, &e) == VX_ERR_INVALID_ARG && p == NULL);
  vx_mesh_free(m);
  rmdir(dir);
  return check_summary();
}
