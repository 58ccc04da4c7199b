/* SPDX-License-Identifier: Apache-2.0 */
/* test_mesher_api.c - meshes out of trees through the public header only (voxlod/mesher.h):
 * the cuts, the accessors and statistics, files in every format read back, and the inputs and
 * outputs that must be refused without leaving a file. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "voxlod.h"
#include "check.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static char tmpdir[256];

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* A torus as indexed arrays. */
static vx_mesh *torus(void) {
  enum { NU = 48, NV = 24 };
  static float v[NU * NV * 3];
  static uint32_t f[NU * NV * 6];
  for (int i = 0; i < NU; i++)
    for (int j = 0; j < NV; j++) {
      double u = 2 * M_PI * i / NU, w = 2 * M_PI * j / NV;
      float *p = v + 3 * (i * NV + j);
      p[0] = (float)((1.0 + 0.4 * cos(w)) * cos(u));
      p[1] = (float)((1.0 + 0.4 * cos(w)) * sin(u));
      p[2] = (float)(0.4 * sin(w));
    }
  uint32_t *q = f;
  for (int i = 0; i < NU; i++)
    for (int j = 0; j < NV; j++) {
      uint32_t a = (uint32_t)(i * NV + j), b = (uint32_t)(((i + 1) % NU) * NV + j),
               c = (uint32_t)(i * NV + (j + 1) % NV),
               d = (uint32_t)(((i + 1) % NU) * NV + (j + 1) % NV);
      *q++ = a, *q++ = b, *q++ = d;
      *q++ = a, *q++ = d, *q++ = c;
    }
  vx_mesh *m = NULL;
  vx_error e;
  CHECK(vx_mesh_from_arrays(v, NU * NV, f, NU * NV * 2, &m, &e) == VX_OK);
  return m;
}

static vx_tree *tree_of(const vx_mesh *m, uint32_t res) {
  vx_convert_opts co;
  memset(&co, 0, sizeof co);
  co.struct_size = sizeof co;
  co.resolution = res;
  co.device = VX_DEVICE_CPU;
  vx_conversion *b = NULL;
  vx_error e;
  vx_status st = vx_convert(m, &co, &b, &e);
  CHECK_MSG(st == VX_OK, "convert: %s", e.msg);
  vx_tree *t = st == VX_OK ? vx_conversion_take_tree(b) : NULL;
  vx_conversion_free(b);
  return t;
}

static void meshing_cuts_and_accessors(void) {
  vx_mesh *src = torus();
  vx_tree *t = tree_of(src, 64);
  if (!t) return;
  vx_mesher_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  vx_error e;
  uint64_t last = 0;
  const vx_mesher_cut cuts[4] = {VX_MESHER_LEVEL, VX_MESHER_LEVEL, VX_MESHER_ERROR, VX_MESHER_FINEST};
  const uint32_t levels[4] = {4, 5, 0, 0};
  for (int k = 0; k < 4; k++) {
    o.cut = cuts[k];
    o.level = levels[k];
    o.max_error = 0.5f;
    vx_mesh *m = NULL;
    vx_status st = vx_mesher_extract(t, &o, &m, &e);
    CHECK_MSG(st == VX_OK, "cut %d: %s", k, e.msg);
    if (st != VX_OK) continue;
    uint64_t nv, nn, nt;
    const float *v = vx_mesh_vertices(m, &nv), *n = vx_mesh_normals(m, &nn);
    const uint32_t *idx = vx_mesh_indices(m, &nt);
    CHECK(v && n && idx && nv == nn && nt > 0);
    for (uint64_t i = 0; i < 3 * nt; i++) CHECK(idx[i] < nv);
    vx_mesher_stats ms;
    memset(&ms, 0, sizeof ms);
    ms.struct_size = sizeof ms;
    CHECK(vx_mesher_get_stats(m, &ms) == VX_OK);
    CHECK(ms.triangles == nt && ms.vertices == nv && ms.open_edges == 0);
    vx_mesh_info mi;
    memset(&mi, 0, sizeof mi);
    mi.struct_size = sizeof mi;
    CHECK(vx_mesh_get_info(m, &mi) == VX_OK && mi.triangles == nt);
    if (cuts[k] == VX_MESHER_LEVEL) CHECK(nt > last); /* finer levels, more triangles */
    last = nt;
    /* A meshed mesh converts like any other. */
    if (cuts[k] == VX_MESHER_FINEST) {
      vx_tree *again = tree_of(m, 64);
      vx_tree_info a, b;
      memset(&a, 0, sizeof a);
      memset(&b, 0, sizeof b);
      a.struct_size = b.struct_size = sizeof a;
      if (again) {
        vx_tree_get_info(t, &a);
        vx_tree_get_info(again, &b);
        CHECK(llabs((long long)a.voxel_count - (long long)b.voxel_count) <
              (long long)a.voxel_count / 20);
      }
      vx_tree_free(again);
    }
    vx_mesh_free(m);
  }
  /* Soups (loaded or from arrays) give their triangles 3 vertices each, without indices. */
  uint64_t nv, nt;
  CHECK(vx_mesh_vertices(src, &nv) != NULL && vx_mesh_indices(src, &nt) == NULL && nv == 3 * nt);
  CHECK(vx_mesh_normals(src, &nv) == NULL && nv == 0);
  vx_mesher_stats ms;
  memset(&ms, 0, sizeof ms);
  CHECK(vx_mesher_get_stats(src, &ms) == VX_ERR_INVALID_ARG);
  vx_tree_free(t);
  vx_mesh_free(src);
}

static void meshing_files_read_back(void) {
  vx_mesh *src = torus();
  vx_tree *t = tree_of(src, 64);
  if (!t) return;
  vx_mesher_opts o;
  memset(&o, 0, sizeof o);
  o.cut = VX_MESHER_LEVEL;
  o.level = 5;
  vx_mesh *m = NULL;
  vx_error e;
  CHECK(vx_mesher_extract(t, &o, &m, &e) == VX_OK);
  if (!m) return;
  uint64_t nt;
  vx_mesh_indices(m, &nt);
  const char *ext[] = {"obj", "ply", "stl", "glb"};
  for (int k = 0; k < 4; k++) {
    char path[512];
    snprintf(path, sizeof path, "%s/torus.%s", tmpdir, ext[k]);
    vx_status st = vx_mesh_save(m, path, &e);
    CHECK_MSG(st == VX_OK, "%s: %s", ext[k], e.msg);
    vx_mesh *back = NULL;
    st = vx_mesh_load(path, NULL, &back, &e);
    CHECK_MSG(st == VX_OK, "reading %s back: %s", ext[k], e.msg);
    vx_mesh_info mi;
    memset(&mi, 0, sizeof mi);
    mi.struct_size = sizeof mi;
    if (back) vx_mesh_get_info(back, &mi);
    CHECK_MSG(mi.triangles + mi.skipped_degenerate == nt, "%s: %llu triangles back, %llu written",
              ext[k], (unsigned long long)mi.triangles, (unsigned long long)nt);
    vx_mesh_free(back);
  }
  /* A soup saves too (assimp merges its identical vertices). */
  char path[512];
  snprintf(path, sizeof path, "%s/soup.ply", tmpdir);
  CHECK(vx_mesh_save(src, path, &e) == VX_OK);
  vx_mesh_free(m);
  vx_tree_free(t);
  vx_mesh_free(src);
}

static void meshing_refuses_bad_input_and_output(void) {
  vx_mesh *src = torus();
  vx_tree *t = tree_of(src, 32);
  if (!t) return;
  vx_error e;
  vx_mesh *m = (vx_mesh *)1;
  vx_mesher_opts o;
  memset(&o, 0, sizeof o);
  o.cut = VX_MESHER_LEVEL;
  o.level = 6;
  CHECK(vx_mesher_extract(t, &o, &m, &e) == VX_ERR_INVALID_ARG && m == NULL);
  CHECK(strstr(e.msg, "beyond the tree's depth 5") != NULL);
  o.level = 0;
  CHECK(vx_mesher_extract(t, &o, &m, &e) == VX_ERR_EMPTY && m == NULL);
  o.cut = VX_MESHER_ERROR;
  o.max_error = -1.0f;
  CHECK(vx_mesher_extract(t, &o, &m, &e) == VX_ERR_INVALID_ARG);
  o.cut = (vx_mesher_cut)9;
  CHECK(vx_mesher_extract(t, &o, &m, &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_mesher_extract(NULL, NULL, &m, &e) == VX_ERR_INVALID_ARG);
  /* A pruned tree has no voxels under its leaves. */
  vx_tree *p = NULL;
  CHECK(vx_tree_prune(t, 1.0f, &p, &e) == VX_OK);
  CHECK(vx_mesher_extract(p, NULL, &m, &e) == VX_ERR_INVALID_ARG && strstr(e.msg, "pruned"));
  vx_tree_free(p);
  /* A partly loaded tree: only the top levels. */
  void *bytes = NULL;
  size_t size = 0;
  CHECK(vx_tree_encode(t, NULL, &bytes, &size, &e) == VX_OK);
  vx_read_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.levels = 3;
  vx_tree *part = NULL;
  CHECK(vx_tree_load_memory(bytes, size, &ro, &part, &e) == VX_OK);
  CHECK(vx_mesher_extract(part, NULL, &m, &e) == VX_ERR_INVALID_ARG && strstr(e.msg, "loaded"));
  vx_tree_free(part);
  vx_buffer_free(bytes);

  /* Outputs: refused with a message, nothing written, an existing file untouched. */
  CHECK(vx_mesher_extract(t, NULL, &m, &e) == VX_OK);
  char path[512];
  const char *bad[] = {"x.gltf", "x.abc", "noext", "no/such/dir/x.ply", "x.pbrt", "x.3mf",
                       "x.dae", "x.fbx", "x.3ds", "-"};
  for (int k = 0; k < 10; k++) {
    snprintf(path, sizeof path, "%s/%s", tmpdir, bad[k]);
    CHECK_MSG(vx_mesh_save(m, path, &e) != VX_OK, "%s was accepted", bad[k]);
    CHECK(!exists(path));
    CHECK(vx_mesh_check_path(path, NULL, 0, &e) != VX_OK);
  }
  /* Only .obj, .ply, .stl and .glb are written (each read back by another library in the
   * Python tests); an existing file of another format stays as it is. */
  snprintf(path, sizeof path, "%s/keep.pbrt", tmpdir);
  FILE *f = fopen(path, "wb");
  fputs("old", f);
  fclose(f);
  CHECK(vx_mesh_save(m, path, &e) == VX_ERR_INVALID_ARG);
  CHECK_MSG(strstr(e.msg, ".obj, .ply, .stl or .glb") != NULL, "%s", e.msg);
  struct stat sb;
  CHECK(stat(path, &sb) == 0 && sb.st_size == 3);
  /* A named format for a path without (or with another) extension. */
  snprintf(path, sizeof path, "%s/named.bin", tmpdir);
  CHECK(vx_mesh_check_path_as(path, "ply", NULL, 0, &e) == VX_OK);
  CHECK_MSG(vx_mesh_save_as(m, path, "PLY", &e) == VX_OK, "%s", e.msg);
  vx_mesh *back = NULL;
  CHECK(vx_mesh_load(path, NULL, &back, &e) == VX_OK); /* assimp reads PLY by its content */
  vx_mesh_free(back);
  CHECK(vx_mesh_save_as(m, path, "pbrt", &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_mesh_check_path_as("-", "3mf", NULL, 0, &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_mesh_check_path_as("-", NULL, NULL, 0, &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_mesh_check_path_as("-", "obj", NULL, 0, &e) == VX_OK);
  CHECK(vx_mesh_save(m, tmpdir, &e) != VX_OK);  /* a directory */
  CHECK(vx_mesh_save(NULL, path, &e) == VX_ERR_INVALID_ARG);
  /* The file the tree came from is not an output. */
  snprintf(path, sizeof path, "%s/in.svo", tmpdir);
  CHECK(vx_tree_save(t, path, NULL, &e) == VX_OK);
  const char *in = path;
  CHECK(vx_mesh_check_path(path, &in, 1, &e) != VX_OK); /* .svo is no mesh format either */
  vx_mesh_free(m);
  vx_tree_free(t);
  vx_mesh_free(src);
  /* No temporaries left behind. */
  char cmd[600];
  snprintf(cmd, sizeof cmd, "ls %s | grep -c voxlod-tmp > /dev/null", tmpdir);
  CHECK(system(cmd) != 0);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/vx_mesher_api.XXXXXX");
  if (!mkdtemp(tmpdir)) CHECK_FATAL("no temporary directory");
  RUN(meshing_cuts_and_accessors);
  RUN(meshing_files_read_back);
  RUN(meshing_refuses_bad_input_and_output);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return check_summary();
}
