/* SPDX-License-Identifier: Apache-2.0 */
/* test_abi_v0_1.c - a caller compiled against the first published headers (0.1, copied unchanged
 * into tests/abi/v0_1/ from the release's include/), linked to the current library.
 *
 * Every option and statistics struct is placed right before a PROT_NONE page, so a library that
 * read or wrote past the 0.1 layout (a newer, larger sizeof) would fault here. Each entry point
 * that takes a versioned struct is called twice: struct_size 0 (which the header defines as the
 * first layout) and struct_size = sizeof of the 0.1 struct; the results are checked, and every
 * statistics struct must come back with struct_size = its 0.1 size.
 *
 * Functions renamed since 0.1 are declared here with their current names and the 0.1 struct
 * types (the layouts are the same); the 0.1 declarations of those names are renamed away.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define vx_convert vx_convert_0_1_signature
#define vx_convert_grid vx_convert_grid_0_1_signature
#include "voxlod/base.h"
#include "voxlod/convert.h"
#include "voxlod/export.h"
#include "voxlod/mesh.h"
#include "voxlod/meshing.h"
#include "voxlod/render.h"
#include "voxlod/sample.h"
#include "voxlod/tree.h"
#undef vx_convert
#undef vx_convert_grid

#if VOXLOD_VERSION_MAJOR != 0 || VOXLOD_VERSION_MINOR != 1
#error "this test must compile against the 0.1 headers of tests/abi/v0_1"
#endif

#define VX_SHARED_MESHES ""
#include "check.h"

/* The current API under its current names, with the 0.1 types. */
typedef struct vx_conversion vx_conversion;
vx_status vx_convert(const vx_mesh *mesh, const vx_convert_opts *opts, vx_conversion **out,
                     vx_error *err);
vx_status vx_convert_to_file(const vx_mesh *mesh, const vx_convert_opts *opts, const char *path,
                             vx_conversion **out, vx_error *err);
vx_status vx_convert_grid_to_file(const char *vdb_path, const vx_grid_opts *gopts,
                                  const vx_convert_opts *opts, const char *path,
                                  vx_conversion **out, vx_error *err);
vx_status vx_conversion_get_stats(const vx_conversion *c, vx_build_stats *st);
vx_tree *vx_conversion_take_tree(vx_conversion *c);
void vx_conversion_free(vx_conversion *c);
vx_status vx_mesher_extract(const vx_tree *t, const vx_mesh_opts *opts, vx_mesh **out,
                            vx_error *err);
vx_status vx_mesher_get_stats(const vx_mesh *m, vx_mesh_stats *st);

static char tmpdir[256];

/* n bytes that end where a PROT_NONE page begins (zeroed). */
static void *guarded(size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t span = (n + page - 1) / page * page;
  uint8_t *p = (uint8_t *)mmap(NULL, span + page, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED || mprotect(p + span, page, PROT_NONE) != 0) {
    perror("mmap");
    exit(1);
  }
  return p + span - n;
}
static void unguard(void *q, size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t span = (n + page - 1) / page * page;
  munmap((uint8_t *)q + n - span, span + page);
}
/* A guarded struct of type T with struct_size 0 (pass 0) or sizeof(T) (pass 1). */
#define NEW(T, pass) new_struct(sizeof(T), (pass))
static void *new_struct(size_t n, int pass) {
  void *q = guarded(n);
  uint32_t s = pass ? (uint32_t)n : 0;
  memcpy(q, &s, sizeof s);
  return q;
}
#define FREE(q) unguard((q), sizeof *(q))

static vx_mesh *sphere_mesh(void) {
  const int seg = 24, rings = 12;
  uint64_t nt = (uint64_t)seg * 2 * (rings - 1);
  float *v = (float *)malloc(nt * 9 * sizeof(float));
  uint64_t k = 0;
  for (int i = 0; i < rings; i++)
    for (int j = 0; j < seg; j++) {
      double t0 = M_PI * i / rings, t1 = M_PI * (i + 1) / rings;
      double p0 = 2 * M_PI * j / seg, p1 = 2 * M_PI * (j + 1) / seg;
      double q[4][3] = {{sin(t0) * cos(p0), cos(t0), sin(t0) * sin(p0)},
                        {sin(t0) * cos(p1), cos(t0), sin(t0) * sin(p1)},
                        {sin(t1) * cos(p0), cos(t1), sin(t1) * sin(p0)},
                        {sin(t1) * cos(p1), cos(t1), sin(t1) * sin(p1)}};
      int tris[2][3] = {{0, 1, 2}, {1, 3, 2}};
      for (int t = 0; t < 2; t++) {
        if ((i == 0 && t == 0) || (i == rings - 1 && t == 1)) continue; /* pole slivers */
        for (int c = 0; c < 3; c++)
          for (int a = 0; a < 3; a++) v[k * 9 + c * 3 + a] = (float)q[tris[t][c]][a];
        k++;
      }
    }
  vx_mesh *m = NULL;
  vx_error e;
  CHECK_MSG(vx_mesh_from_arrays(v, 3 * k, NULL, k, &m, &e) == VX_OK, "%s", e.msg);
  free(v);
  return m;
}

static vx_tree *tree; /* the sphere at 32^3, made by mesh_and_convert */

static void mesh_and_convert(void) {
  vx_mesh *m = sphere_mesh();
  vx_error e;
  for (int pass = 0; pass < 2; pass++) {
    vx_mesh_info *mi = (vx_mesh_info *)NEW(vx_mesh_info, pass);
    CHECK(vx_mesh_get_info(m, mi) == VX_OK && mi->struct_size == sizeof *mi &&
          mi->triangles > 400 && mi->load_seconds == 0.0 && fabs(mi->bbox_max[1] - 1.0) < 1e-6);
    FREE(mi);

    vx_convert_opts *o = (vx_convert_opts *)NEW(vx_convert_opts, pass);
    o->resolution = 32;
    o->device = VX_DEVICE_CPU;
    o->threads = 2;
    vx_conversion *c = NULL;
    CHECK_MSG(vx_convert(m, o, &c, &e) == VX_OK, "%s", e.msg);
    vx_build_stats *st = (vx_build_stats *)NEW(vx_build_stats, pass);
    CHECK(vx_conversion_get_stats(c, st) == VX_OK && st->struct_size == sizeof *st &&
          st->resolution == 32 && st->surface_voxels > 100 && st->file_bytes == 0);
    vx_tree *t = vx_conversion_take_tree(c);
    vx_conversion_free(c);
    char path[512];
    snprintf(path, sizeof path, "%s/s%d.svo", tmpdir, pass);
    CHECK_MSG(vx_convert_to_file(m, o, path, &c, &e) == VX_OK, "%s", e.msg);
    CHECK(vx_conversion_get_stats(c, st) == VX_OK && st->file_bytes > 0);
    vx_conversion_free(c);
    FREE(st);
    FREE(o);

    vx_read_opts *ro = (vx_read_opts *)NEW(vx_read_opts, pass);
    ro->levels = 3;
    vx_tree *part = NULL;
    CHECK_MSG(vx_tree_load(path, ro, &part, &e) == VX_OK, "%s", e.msg);
    vx_tree_info *ti = (vx_tree_info *)NEW(vx_tree_info, pass);
    CHECK(vx_tree_get_info(part, ti) == VX_OK && ti->struct_size == sizeof *ti &&
          ti->depth == 5 && ti->levels_loaded == 3 && ti->file_version > 0);
    vx_tree_free(part);
    FREE(ro);
    vx_level_stats *ls = (vx_level_stats *)NEW(vx_level_stats, pass);
    CHECK(vx_tree_get_level(t, 5, ls) == VX_OK && ls->struct_size == sizeof *ls &&
          ls->level == 5 && ls->dense_bytes == 33ull * 33 * 33 * 4);
    CHECK(vx_tree_get_info(t, ti) == VX_OK && ls->cells == ti->voxel_count);
    FREE(ls);
    FREE(ti);

    vx_save_opts *so = (vx_save_opts *)NEW(vx_save_opts, pass);
    so->zstd_level = 3;
    snprintf(path, sizeof path, "%s/saved%d.svo", tmpdir, pass);
    CHECK_MSG(vx_tree_save(t, path, so, &e) == VX_OK, "%s", e.msg);
    void *bytes = NULL;
    size_t n = 0;
    CHECK(vx_tree_encode(t, so, &bytes, &n, &e) == VX_OK && n > 0);
    vx_buffer_free(bytes);
    FREE(so);
    if (pass == 0) tree = t;
    else vx_tree_free(t);
  }
  vx_mesh_free(m);
}

static void load_a_mesh_file(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/tri.obj", tmpdir);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f) return;
  fputs("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", f);
  fclose(f);
  vx_error e;
  for (int pass = 0; pass < 2; pass++) {
    vx_mesh_load_opts *lo = (vx_mesh_load_opts *)NEW(vx_mesh_load_opts, pass);
    lo->timeout_s = 60.0;
    vx_mesh *m = NULL;
    CHECK_MSG(vx_mesh_load(path, lo, &m, &e) == VX_OK, "%s", e.msg);
    vx_mesh_info *mi = (vx_mesh_info *)NEW(vx_mesh_info, pass);
    CHECK(vx_mesh_get_info(m, mi) == VX_OK && mi->triangles == 1 && mi->load_seconds > 0.0);
    vx_mesh_free(m);
    FREE(mi);
    FREE(lo);
  }
}

static void render(void) {
  vx_error e;
  for (int pass = 0; pass < 2; pass++) {
    vx_renderer_opts *o = (vx_renderer_opts *)NEW(vx_renderer_opts, pass);
    o->device = VX_DEVICE_CPU;
    o->threads = 2;
    vx_renderer *r = NULL;
    CHECK_MSG(vx_renderer_create(tree, o, &r, &e) == VX_OK, "%s", e.msg);
    FREE(o);
    vx_renderer_info *ri = (vx_renderer_info *)NEW(vx_renderer_info, pass);
    CHECK(vx_renderer_get_info(r, ri) == VX_OK && ri->struct_size == sizeof *ri &&
          !ri->used_gpu && strncmp(ri->device, "CPU", 3) == 0);
    FREE(ri);
    vx_render_opts *ro = (vx_render_opts *)NEW(vx_render_opts, pass);
    ro->width = 64;
    ro->height = 48;
    uint8_t *rgb = (uint8_t *)malloc(64 * 48 * 3);
    float *depth = (float *)malloc(64 * 48 * sizeof(float));
    vx_frame_stats *fs = (vx_frame_stats *)NEW(vx_frame_stats, pass);
    CHECK_MSG(vx_render(r, ro, rgb, depth, fs, &e) == VX_OK, "%s", e.msg);
    CHECK(fs->struct_size == sizeof *fs && fs->pixels_hit > 100 && fs->pixels_hit < 64 * 48);
    FREE(fs);
    vx_bench_stats *bs = (vx_bench_stats *)NEW(vx_bench_stats, pass);
    /* an array of views: 0.1-sized elements, the last one before the guard page */
    vx_render_opts *views = (vx_render_opts *)guarded(2 * sizeof *views);
    views[0] = *ro;
    views[1] = *ro;
    vx_camera_orbit(tree, 120.0, 10.0, 40.0, &views[1].camera);
    CHECK_MSG(vx_renderer_bench(r, views, 2, 3, bs, &e) == VX_OK, "%s", e.msg);
    CHECK(bs->struct_size == sizeof *bs && bs->frames == 3 && bs->hit_fraction > 0.0);
    unguard(views, 2 * sizeof *views);
    FREE(bs);
    FREE(ro);
    free(rgb);
    free(depth);
    vx_renderer_free(r);
  }
}

static void sample(void) {
  vx_error e;
  const float pts[6] = {0, 0, 0, 0.5f, 0, 0};
  float dist[2], grad[6];
  uint8_t flags[2];
  for (int pass = 0; pass < 2; pass++) {
    vx_sample_opts *o = (vx_sample_opts *)NEW(vx_sample_opts, pass);
    o->threads = 2;
    vx_sample_stats *ss = (vx_sample_stats *)NEW(vx_sample_stats, pass);
    CHECK_MSG(vx_tree_sample(tree, o, pts, 2, dist, grad, flags, ss, &e) == VX_OK, "%s", e.msg);
    /* the unit sphere: -1 at the centre (clamped at the band, so only its sign), -0.5 half way */
    CHECK(dist[0] < 0.0f && fabs(dist[1] + 0.5) < 0.5 && ss->struct_size == sizeof *ss &&
          ss->points == 2 && !ss->used_gpu);
    vx_sampler_opts *so = (vx_sampler_opts *)NEW(vx_sampler_opts, pass);
    so->device = VX_DEVICE_CPU;
    vx_sampler *s = NULL;
    CHECK_MSG(vx_sampler_create(tree, so, &s, &e) == VX_OK, "%s", e.msg);
    FREE(so);
    float d2[2];
    CHECK(vx_sampler_sample(s, o, pts, 2, d2, NULL, NULL, ss, &e) == VX_OK && d2[0] == dist[0] &&
          d2[1] == dist[1]);
    vx_sample_bench_stats *sb = (vx_sample_bench_stats *)NEW(vx_sample_bench_stats, pass);
    CHECK_MSG(vx_sampler_bench(s, o, pts, 2, 2, sb, &e) == VX_OK, "%s", e.msg);
    CHECK(sb->struct_size == sizeof *sb && sb->reps == 2 && sb->points == 2);
    FREE(sb);
    vx_sampler_free(s);
    FREE(ss);
    FREE(o);
    vx_surface_points_opts *po = (vx_surface_points_opts *)NEW(vx_surface_points_opts, pass);
    po->seed = 7;
    po->spread = 0.5f;
    float sp[3 * 16];
    CHECK_MSG(vx_tree_surface_points(tree, po, 16, sp, &e) == VX_OK, "%s", e.msg);
    for (int i = 0; i < 16; i++) {
      double r = sqrt(sp[3 * i] * sp[3 * i] + sp[3 * i + 1] * sp[3 * i + 1] +
                      sp[3 * i + 2] * sp[3 * i + 2]);
      CHECK(r > 0.7 && r < 1.3);
    }
    FREE(po);
  }
}

static void export_and_mesh(void) {
  vx_error e;
  for (int pass = 0; pass < 2; pass++) {
    char path[512];
    int vdb = vx_export_available(VX_EXPORT_VDB);
    snprintf(path, sizeof path, "%s/x%d.%s", tmpdir, pass, vdb ? "vdb" : "binvox");
    vx_export_opts *o = (vx_export_opts *)NEW(vx_export_opts, pass);
    vx_export_stats *es = (vx_export_stats *)NEW(vx_export_stats, pass);
    CHECK_MSG(vx_tree_export(tree, path, o, es, &e) == VX_OK, "%s", e.msg);
    CHECK(es->struct_size == sizeof *es && es->level == 5 && es->file_bytes > 0);
    FREE(es);
    if (vdb) {
      vx_grid_opts *go = (vx_grid_opts *)NEW(vx_grid_opts, pass);
      go->timeout_s = 60.0;
      vx_convert_opts *co = (vx_convert_opts *)NEW(vx_convert_opts, pass);
      char out[512];
      snprintf(out, sizeof out, "%s/g%d.svo", tmpdir, pass);
      vx_conversion *c = NULL;
      CHECK_MSG(vx_convert_grid_to_file(path, go, co, out, &c, &e) == VX_OK, "%s", e.msg);
      vx_build_stats *st = (vx_build_stats *)NEW(vx_build_stats, pass);
      CHECK(vx_conversion_get_stats(c, st) == VX_OK && st->resolution == 32 && st->file_bytes);
      vx_conversion_free(c);
      FREE(st);
      FREE(co);
      FREE(go);
    }
    FREE(o);

    vx_mesh_opts *mo = (vx_mesh_opts *)NEW(vx_mesh_opts, pass);
    mo->cut = VX_MESH_LEVEL;
    mo->level = 4;
    vx_mesh *m = NULL;
    CHECK_MSG(vx_mesher_extract(tree, mo, &m, &e) == VX_OK, "%s", e.msg);
    vx_mesh_stats *ms = (vx_mesh_stats *)NEW(vx_mesh_stats, pass);
    CHECK(vx_mesher_get_stats(m, ms) == VX_OK && ms->struct_size == sizeof *ms &&
          ms->triangles > 50 && ms->level_max == 4 && ms->open_edges == 0);
    FREE(ms);
    vx_mesh_free(m);
    FREE(mo);
  }
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "%s/vx_abi_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  RUN(mesh_and_convert);
  if (tree) {
    RUN(load_a_mesh_file);
    RUN(render);
    RUN(sample);
    RUN(export_and_mesh);
  }
  vx_tree_free(tree);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return check_summary();
}
