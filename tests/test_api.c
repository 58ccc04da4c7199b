/* SPDX-License-Identifier: Apache-2.0 */
/* test_api.c - libvoxlod through its public header only, as a C caller uses it: meshes from
 * arrays, conversion to memory and to a file, loading, statistics, pruning, the renderer object,
 * option structs of other sizes, the output rules, and errors. */
#define _POSIX_C_SOURCE 200809L
#define VOXLOD_EXPERIMENTAL /* the benchmark calls */
#include <float.h>
#include <math.h>
#include <stddef.h>
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

static char tmpdir[256];

/* A UV sphere of radius r at the origin as indexed arrays (vx_malloc-free: plain malloc). */
static void sphere(double r, int seg, int rings, float **v, uint64_t *nv, uint32_t **f,
                   uint64_t *nf) {
  *nv = (uint64_t)(rings - 1) * seg + 2;
  *nf = (uint64_t)seg * 2 * (rings - 1);
  *v = (float *)malloc(*nv * 3 * sizeof(float));
  *f = (uint32_t *)malloc(*nf * 3 * sizeof(uint32_t));
  float *p = *v;
  for (int i = 1; i < rings; i++)
    for (int j = 0; j < seg; j++) {
      double th = M_PI * i / rings, ph = 2 * M_PI * j / seg;
      *p++ = (float)(r * sin(th) * cos(ph));
      *p++ = (float)(r * cos(th));
      *p++ = (float)(r * sin(th) * sin(ph));
    }
  uint32_t top = (uint32_t)((rings - 1) * seg), bot = top + 1;
  *p++ = 0, *p++ = (float)r, *p++ = 0;
  *p++ = 0, *p++ = (float)-r, *p++ = 0;
  uint32_t *q = *f;
  for (int j = 0; j < seg; j++) {
    uint32_t a = (uint32_t)j, b = (uint32_t)((j + 1) % seg);
    *q++ = top, *q++ = b, *q++ = a;
    uint32_t base = (uint32_t)((rings - 2) * seg);
    *q++ = bot, *q++ = base + a, *q++ = base + b;
  }
  for (int i = 0; i < rings - 2; i++)
    for (int j = 0; j < seg; j++) {
      uint32_t a = (uint32_t)(i * seg + j), b = (uint32_t)(i * seg + (j + 1) % seg);
      uint32_t c = a + (uint32_t)seg, d = b + (uint32_t)seg;
      *q++ = a, *q++ = b, *q++ = c;
      *q++ = b, *q++ = d, *q++ = c;
    }
}

static vx_mesh *sphere_mesh(double r) {
  float *v;
  uint32_t *f;
  uint64_t nv, nf;
  sphere(r, 32, 16, &v, &nv, &f, &nf);
  vx_mesh *m = NULL;
  vx_error e;
  CHECK_MSG(vx_mesh_from_arrays(v, nv, f, nf, &m, &e) == VX_OK, "%s", e.msg);
  free(v);
  free(f);
  return m;
}

static vx_tree *convert_tree(vx_mesh *m, uint32_t res, float err_max) {
  vx_convert_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.resolution = res;
  o.max_error = err_max;
  o.device = VX_DEVICE_CPU;
  vx_conversion *b = NULL;
  vx_error e;
  CHECK_MSG(vx_convert(m, &o, &b, &e) == VX_OK, "%s", e.msg);
  vx_tree *t = vx_conversion_take_tree(b);
  CHECK(vx_conversion_tree(b) == NULL);
  vx_conversion_free(b);
  return t;
}

static void api_version(void) {
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", VOXLOD_VERSION_MAJOR, VOXLOD_VERSION_MINOR,
           VOXLOD_VERSION_PATCH);
  CHECK(strcmp(vx_version(), VOXLOD_VERSION_STRING) == 0);
  CHECK(strcmp(want, VOXLOD_VERSION_STRING) == 0);
  CHECK(VOXLOD_VERSION_NUMBER >= VOXLOD_MAKE_VERSION(0, 1, 0));
  CHECK(strcmp(vx_status_str(VX_ERR_NOMEM), "out of memory") == 0);
  CHECK(vx_status_str((vx_status)999) != NULL);
}

static void api_free_null(void) {
  vx_mesh_free(NULL);
  vx_tree_free(NULL);
  vx_conversion_free(NULL);
  vx_renderer_free(NULL);
  vx_buffer_free(NULL);
  CHECK(vx_conversion_take_tree(NULL) == NULL);
  CHECK(strcmp(vx_conversion_notes(NULL), "") == 0);
}

static void api_mesh_errors(void) {
  const float v[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
  const uint32_t bad[3] = {0, 1, 3};
  vx_mesh *m = (vx_mesh *)1;
  vx_error e;
  CHECK(vx_mesh_from_arrays(v, 3, bad, 1, &m, &e) == VX_ERR_INVALID_ARG && m == NULL &&
        strstr(e.msg, "beyond"));
  CHECK(vx_mesh_from_arrays(v, 2, NULL, 1, &m, &e) == VX_ERR_INVALID_ARG);
  const float flat[9] = {0, 0, 0, 1, 0, 0, 2, 0, 0};
  CHECK(vx_mesh_from_arrays(flat, 3, NULL, 1, &m, &e) == VX_ERR_EMPTY && strstr(e.msg, "degenerate"));
  float mixed[18] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, NAN, 0, 0, 0, 1, 0};
  CHECK(vx_mesh_from_arrays(mixed, 6, NULL, 2, &m, &e) == VX_OK);
  vx_mesh_info mi;
  memset(&mi, 0, sizeof mi);
  mi.struct_size = sizeof mi;
  CHECK(vx_mesh_get_info(m, &mi) == VX_OK && mi.triangles == 1 && mi.skipped_nonfinite == 1);
  vx_mesh_free(m);
  CHECK(vx_mesh_load(NULL, NULL, &m, &e) == VX_ERR_INVALID_ARG);
  char path[512];
  snprintf(path, sizeof path, "%s/missing.obj", tmpdir);
  CHECK(vx_mesh_load(path, NULL, &m, &e) != VX_OK && m == NULL);
}

static void api_convert_memory_and_file(void) {
  vx_mesh *m = sphere_mesh(1.0);
  char path[512];
  snprintf(path, sizeof path, "%s/s.svo", tmpdir);
  vx_convert_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.resolution = 64;
  o.device = VX_DEVICE_CPU;
  vx_conversion *b = NULL;
  vx_error e;
  CHECK_MSG(vx_convert_to_file(m, &o, path, &b, &e) == VX_OK, "%s", e.msg);
  CHECK(vx_conversion_tree(b) == NULL && vx_conversion_take_tree(b) == NULL);
  vx_conversion_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK(vx_conversion_get_stats(b, &st) == VX_OK);
  CHECK(st.resolution == 64 && st.triangles > 900 && st.surface_voxels > 1000 && st.file_bytes > 0);
  CHECK(!st.used_gpu && !st.spilled && st.sec_total >= st.sec_build);
  vx_conversion_free(b);
  CHECK(vx_convert_to_file(m, &o, path, NULL, &e) == VX_OK); /* no result wanted */
  /* the same conversion in memory: the tree that file holds */
  CHECK_MSG(vx_convert(m, &o, &b, &e) == VX_OK, "%s", e.msg);
  const vx_tree *t = vx_conversion_tree(b);
  vx_tree_info ti;
  memset(&ti, 0, sizeof ti);
  ti.struct_size = sizeof ti;
  CHECK(vx_tree_get_info(t, &ti) == VX_OK);
  CHECK(ti.depth == 6 && ti.resolution == 64 && ti.voxel_count == st.surface_voxels &&
        ti.node_count == st.nodes && ti.levels_loaded == 7 && ti.band == 2.0f);
  CHECK(ti.scale > 0 && fabs(ti.origin[0] + 1.0) < 0.1);
  /* the file is what the tree encodes to, and reads back to the same counts */
  void *bytes = NULL;
  size_t n = 0;
  CHECK(vx_tree_encode(t, NULL, &bytes, &n, &e) == VX_OK && n == st.file_bytes);
  FILE *f = fopen(path, "rb");
  uint8_t *file = (uint8_t *)malloc(n + 1);
  CHECK(f && fread(file, 1, n + 1, f) == n);
  if (f) fclose(f);
  CHECK(memcmp(file, bytes, n) == 0);
  free(file);
  vx_tree *r = NULL, *r2 = NULL;
  CHECK(vx_tree_load_memory(bytes, n, NULL, &r, &e) == VX_OK);
  vx_buffer_free(bytes);
  CHECK_MSG(vx_tree_load(path, NULL, &r2, &e) == VX_OK, "%s", e.msg);
  vx_tree_info ri;
  memset(&ri, 0, sizeof ri);
  ri.struct_size = sizeof ri;
  CHECK(vx_tree_get_info(r2, &ri) == VX_OK && ri.node_count == ti.node_count &&
        ri.voxel_count == ti.voxel_count && ri.file_bytes == n && ri.file_version >= 2);
  /* partial loads */
  vx_read_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.struct_size = sizeof ro;
  ro.levels = 4;
  vx_tree *p = NULL;
  CHECK(vx_tree_load(path, &ro, &p, &e) == VX_OK);
  vx_tree_info pi;
  memset(&pi, 0, sizeof pi);
  pi.struct_size = sizeof pi;
  CHECK(vx_tree_get_info(p, &pi) == VX_OK && pi.levels_loaded == 4 && pi.voxel_count == 0);
  CHECK(vx_tree_save(p, path, NULL, &e) != VX_OK); /* partial, and its own source */
  vx_tree_free(p);
  vx_tree_free(r);
  vx_tree_free(r2);
  vx_conversion_free(b);
  vx_mesh_free(m);
}

static void api_option_struct_sizes(void) {
  vx_mesh *m = sphere_mesh(1.0);
  vx_error e;
  /* struct_size 0: the 0.1 layout, every zero a default (resolution 256 would be slow: 16) */
  vx_convert_opts o;
  memset(&o, 0, sizeof o);
  o.resolution = 16;
  o.device = VX_DEVICE_CPU;
  vx_conversion *b = NULL;
  CHECK_MSG(vx_convert(m, &o, &b, &e) == VX_OK, "%s", e.msg);
  vx_conversion_free(b);
  /* shorter than the first layout (tests/abi checks the first layouts themselves): refused */
  o.struct_size = (uint32_t)offsetof(vx_convert_opts, band);
  CHECK(vx_convert(m, &o, &b, &e) == VX_ERR_INVALID_ARG && b == NULL &&
        strstr(e.msg, "vx_convert_opts.struct_size") && strstr(e.msg, "first layout"));
  o.struct_size = 0;
  CHECK_MSG(vx_convert(m, &o, &b, &e) == VX_OK, "%s", e.msg);
  vx_tree_info ti;
  memset(&ti, 0, sizeof ti);
  ti.struct_size = (uint32_t)offsetof(vx_tree_info, origin); /* an older, shorter info struct */
  ti.origin[0] = 12345.0;
  CHECK(vx_tree_get_info(vx_conversion_tree(b), &ti) == VX_OK);
  CHECK(ti.struct_size == offsetof(vx_tree_info, origin) && ti.depth == 4 && ti.origin[0] == 12345.0);
  /* a newer header's larger structs: options read up to what this library knows (the unknown
   * tail is ignored), statistics written up to it (the tail left alone), struct_size = written */
  struct {
    vx_tree_info info;
    unsigned char newer[24];
  } big;
  memset(&big, 0xAB, sizeof big);
  big.info.struct_size = (uint32_t)sizeof big;
  CHECK(vx_tree_get_info(vx_conversion_tree(b), &big.info) == VX_OK);
  CHECK(big.info.struct_size == sizeof big.info && big.info.depth == 4 && big.newer[0] == 0xAB &&
        big.newer[23] == 0xAB);
  vx_conversion_free(b);
  struct {
    vx_convert_opts o;
    unsigned char newer[24];
  } bo;
  memset(&bo, 0, sizeof bo);
  memset(bo.newer, 0xFF, sizeof bo.newer); /* fields this library does not know: not read */
  bo.o.struct_size = (uint32_t)sizeof bo;
  bo.o.resolution = 16;
  bo.o.device = VX_DEVICE_CPU;
  CHECK_MSG(vx_convert(m, &bo.o, &b, &e) == VX_OK, "%s", e.msg);
  vx_conversion_free(b);
  /* a zeroed (NULL) render option draws the finest level, 800x600, from the default camera */
  vx_tree *t = convert_tree(m, 32, 0.0f);
  vx_renderer *r = NULL;
  CHECK(vx_renderer_create(t, NULL, &r, &e) == VX_OK);
  uint8_t *rgb = (uint8_t *)malloc(800 * 600 * 3);
  float *depth = (float *)malloc(800 * 600 * sizeof(float));
  vx_frame_stats fs;
  memset(&fs, 0, sizeof fs);
  CHECK_MSG(vx_render(r, NULL, rgb, depth, &fs, &e) == VX_OK, "%s", e.msg);
  CHECK(fs.pixels_hit > 10000 && fs.struct_size == 40); /* the first layout's: the caller said 0 */
  free(rgb);
  free(depth);
  vx_renderer_free(r);
  vx_tree_free(t);
  vx_mesh_free(m);
}

static uint64_t hits(const float *d, size_t n) {
  uint64_t h = 0;
  for (size_t i = 0; i < n; i++) h += d[i] < INFINITY;
  return h;
}

static void api_renderer_many_frames(void) {
  vx_mesh *m = sphere_mesh(1.0);
  vx_tree *t = convert_tree(m, 64, 0.0f);
  vx_renderer_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.struct_size = sizeof ro;
  ro.device = VX_DEVICE_CPU;
  ro.threads = 2;
  vx_renderer *r = NULL;
  vx_error e;
  CHECK(vx_renderer_create(t, &ro, &r, &e) == VX_OK);
  vx_renderer_info ri;
  memset(&ri, 0, sizeof ri);
  ri.struct_size = sizeof ri;
  CHECK(vx_renderer_get_info(r, &ri) == VX_OK && !ri.used_gpu && strstr(ri.device, "CPU"));
  const uint32_t W = 96, H = 72;
  uint8_t *a = (uint8_t *)malloc(W * H * 3), *b = (uint8_t *)malloc(W * H * 3);
  float *da = (float *)malloc(W * H * sizeof(float));
  vx_render_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.width = W;
  o.height = H;
  vx_camera_orbit(t, 30, 20, 40, &o.camera);
  CHECK(vx_render(r, &o, a, da, NULL, &e) == VX_OK && hits(da, W * H) > W * H / 10);
  CHECK(vx_render(r, &o, b, NULL, NULL, &e) == VX_OK && memcmp(a, b, W * H * 3) == 0);
  for (int lod = 0; lod <= 6; lod++) {
    o.lod = VX_LOD_LEVEL;
    o.level = lod;
    CHECK_MSG(vx_render(r, &o, b, da, NULL, &e) == VX_OK, "lod %d: %s", lod, e.msg);
    CHECK(hits(da, W * H) > 0);
  }
  o.lod = VX_LOD_PIXEL;
  o.shade = VX_SHADE_NORMALS;
  CHECK(vx_render(r, &o, b, da, NULL, &e) == VX_OK);
  o.level = 7;
  o.lod = VX_LOD_LEVEL;
  CHECK(vx_render(r, &o, b, da, NULL, &e) == VX_ERR_INVALID_ARG && strstr(e.msg, "level"));
  o.lod = VX_LOD_FINEST;
  o.camera.eye[0] = NAN;
  CHECK(vx_render(r, &o, b, da, NULL, &e) == VX_ERR_INVALID_ARG);
  vx_camera_orbit(t, 30, 20, 40, &o.camera);
  o.camera.eye[0] = 1e300;
  CHECK(vx_render(r, &o, b, da, NULL, &e) == VX_ERR_INVALID_ARG && strstr(e.msg, "too far") &&
        !strstr(e.msg, "equals"));
  o.width = 40000;
  CHECK(vx_render(r, &o, b, da, NULL, &e) == VX_ERR_INVALID_ARG);
  /* bench through the same renderer */
  vx_render_opts views[2];
  for (int v = 0; v < 2; v++) {
    memset(&views[v], 0, sizeof views[v]);
    views[v].struct_size = sizeof views[v];
    views[v].width = W;
    views[v].height = H;
    vx_camera_orbit(t, 180.0 * v, 20, 40, &views[v].camera);
  }
  vx_renderer_bench_stats bs;
  memset(&bs, 0, sizeof bs);
  bs.struct_size = sizeof bs;
  CHECK_MSG(vx_renderer_bench(r, views, 2, 3, &bs, &e) == VX_OK, "%s", e.msg);
  CHECK(bs.frames == 3 && bs.ms_median > 0 && bs.hit_fraction > 0.05 && bs.visits_per_ray > 1);
  free(a);
  free(b);
  free(da);
  vx_renderer_free(r);
  vx_tree_free(t);
  vx_mesh_free(m);
}

/* Models of any scale are framed by the default camera: 1e-10 and 1e37 units across. */
static void api_tiny_and_huge_models(void) {
  const double scales[2] = {1e-10, 1e37};
  for (int k = 0; k < 2; k++) {
    vx_mesh *m = sphere_mesh(scales[k]);
    vx_tree *t = convert_tree(m, 32, 0.0f);
    vx_renderer_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.device = VX_DEVICE_CPU;
    vx_renderer *r = NULL;
    vx_error e;
    CHECK(vx_renderer_create(t, &ro, &r, &e) == VX_OK);
    vx_render_opts o;
    memset(&o, 0, sizeof o);
    o.width = 64;
    o.height = 48;
    uint8_t rgb[64 * 48 * 3];
    float d[64 * 48];
    vx_frame_stats fs;
    memset(&fs, 0, sizeof fs);
    CHECK_MSG(vx_render(r, &o, rgb, d, &fs, &e) == VX_OK, "%s", e.msg);
    CHECK_MSG(fs.pixels_hit > 64 * 48 / 10, "scale %g: %llu pixels hit", scales[k],
              (unsigned long long)fs.pixels_hit);
    vx_renderer_free(r);
    vx_tree_free(t);
    vx_mesh_free(m);
  }
  /* coordinates near float's limit: hits beyond float range count as hits (depth FLT_MAX) */
  vx_mesh *m = sphere_mesh(3e38);
  vx_tree *t = convert_tree(m, 16, 0.0f);
  vx_renderer *r = NULL;
  vx_renderer_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.device = VX_DEVICE_CPU;
  vx_error e;
  CHECK(vx_renderer_create(t, &ro, &r, &e) == VX_OK);
  vx_render_opts o;
  memset(&o, 0, sizeof o);
  o.width = 32;
  o.height = 24;
  uint8_t rgb[32 * 24 * 3];
  float d[32 * 24];
  vx_frame_stats fs;
  memset(&fs, 0, sizeof fs);
  CHECK_MSG(vx_render(r, &o, rgb, d, &fs, &e) == VX_OK, "%s", e.msg);
  CHECK_MSG(fs.pixels_hit > 32 * 24 / 10, "%llu hit", (unsigned long long)fs.pixels_hit);
  vx_renderer_free(r);
  vx_tree_free(t);
  vx_mesh_free(m);
}

static void api_levels_and_prune(void) {
  vx_mesh *m = sphere_mesh(1.0);
  vx_tree *t = convert_tree(m, 64, 0.0f);
  vx_tree_info ti;
  memset(&ti, 0, sizeof ti);
  ti.struct_size = sizeof ti;
  vx_tree_get_info(t, &ti);
  uint64_t cells = 0, render = 0;
  for (uint32_t l = 0; l <= ti.depth; l++) {
    vx_level_stats ls;
    memset(&ls, 0, sizeof ls);
    ls.struct_size = sizeof ls;
    CHECK(vx_tree_get_level(t, l, &ls) == VX_OK && ls.level == l);
    CHECK(ls.cells == vx_tree_level_count(t, l));
    cells += ls.cells;
    CHECK(ls.render_bytes > render);
    render = ls.render_bytes;
    if (l < ti.depth) CHECK(vx_tree_level_first(t, l + 1 < ti.depth ? l + 1 : l) >= vx_tree_level_first(t, l));
  }
  CHECK(cells == ti.node_count + ti.voxel_count && render == ti.memory_bytes);
  vx_level_stats bad;
  memset(&bad, 0, sizeof bad);
  CHECK(vx_tree_get_level(t, ti.depth + 1, &bad) == VX_ERR_INVALID_ARG);
  uint64_t nn = 0, nv = 0;
  const void *nodes = vx_tree_nodes(t, &nn), *voxels = vx_tree_voxels(t, &nv);
  CHECK(nodes && ((uintptr_t)nodes & 15) == 0 && nn == ti.node_count);
  CHECK(voxels && nv == ti.voxel_count);
  vx_tree *p = NULL;
  vx_error e;
  CHECK(vx_tree_prune(t, 1.0f, &p, &e) == VX_OK);
  vx_tree_info pi;
  memset(&pi, 0, sizeof pi);
  pi.struct_size = sizeof pi;
  vx_tree_get_info(p, &pi);
  CHECK(pi.prune_error == 1.0f && pi.memory_bytes < ti.memory_bytes / 2);
  vx_tree_free(p);
  CHECK(vx_tree_prune(t, -1.0f, &p, &e) == VX_ERR_INVALID_ARG && p == NULL);
  vx_tree_free(t);
  vx_mesh_free(m);
}

static void api_errors_and_outputs(void) {
  vx_mesh *m = sphere_mesh(1.0);
  vx_error e;
  vx_conversion *b = (vx_conversion *)1;
  vx_convert_opts o;
  memset(&o, 0, sizeof o);
  o.resolution = 100;
  CHECK(vx_convert(m, &o, &b, &e) == VX_ERR_INVALID_ARG && b == NULL &&
        strstr(e.msg, "power of two") && strstr(e.msg, "convert.c:"));
  o.resolution = 16;
  CHECK(vx_convert_to_file(m, &o, NULL, &b, &e) == VX_ERR_INVALID_ARG);
  char path[512];
  snprintf(path, sizeof path, "%s/no/such/dir/x.svo", tmpdir);
  CHECK(vx_convert_to_file(m, &o, path, &b, &e) == VX_ERR_IO && strstr(e.msg, "does not exist"));
  CHECK(vx_check_output(tmpdir, NULL, 0, &e) == VX_ERR_IO && strstr(e.msg, "directory"));
  /* an output that is a live tree's file is refused, before and while writing */
  snprintf(path, sizeof path, "%s/t.svo", tmpdir);
  o.device = VX_DEVICE_CPU;
  CHECK(vx_convert_to_file(m, &o, path, &b, &e) == VX_OK);
  vx_conversion_free(b);
  vx_tree *t = NULL;
  CHECK(vx_tree_load(path, NULL, &t, &e) == VX_OK);
  uint8_t px[3] = {1, 2, 3};
  CHECK(vx_write_png(path, px, 1, 1, &e) == VX_ERR_INVALID_ARG && strstr(e.msg, "input"));
  CHECK(vx_tree_save(t, path, NULL, &e) == VX_ERR_INVALID_ARG);
  char link[512];
  snprintf(link, sizeof link, "%s/link.svo", tmpdir);
  CHECK(symlink(path, link) == 0);
  CHECK(vx_write_file(link, "x", 1, &e) == VX_ERR_INVALID_ARG); /* the same file, through a link */
  const char *in = path;
  vx_tree_free(t);
  CHECK(vx_check_output(link, &in, 1, &e) == VX_ERR_INVALID_ARG); /* named as an input */
  CHECK(vx_check_output(link, NULL, 0, &e) == VX_OK);              /* no longer held */
  /* a symbolic link is followed: the target is replaced, the link stays */
  CHECK(vx_write_file(link, "hello", 5, &e) == VX_OK);
  char buf[16] = {0};
  FILE *f = fopen(path, "rb");
  CHECK(f && fread(buf, 1, sizeof buf, f) == 5 && memcmp(buf, "hello", 5) == 0);
  if (f) fclose(f);
  char target[512];
  ssize_t tl = readlink(link, target, sizeof target - 1);
  CHECK(tl > 0);
  unlink(link);
  unlink(path);
  vx_mesh_free(m);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/vx_test_api.XXXXXX");
  if (!mkdtemp(tmpdir)) return 1;
  RUN(api_version);
  RUN(api_free_null);
  RUN(api_mesh_errors);
  RUN(api_convert_memory_and_file);
  RUN(api_option_struct_sizes);
  RUN(api_renderer_many_frames);
  RUN(api_tiny_and_huge_models);
  RUN(api_levels_and_prune);
  RUN(api_errors_and_outputs);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) return 1;
  return check_summary();
}
