/* SPDX-License-Identifier: Apache-2.0 */
/* test_formats_mesh.c - mesh import: the test meshes (tests/data/meshes, one scene in every
 * format assimp reads that we use, messy meshes) against the triangle counts and bounding boxes
 * their generator computed (make_meshes.py, which also checks them with assimp's own command-line
 * tool), the bundled real meshes against figures measured with assimp's command-line tool, node
 * instancing, and every kind of bad input. */
#define _POSIX_C_SOURCE 200809L
#include "formats/mesh_import.h"
#include "check.h"

#include <unistd.h>

typedef struct mesh_case {
  const char *rel;
  uint64_t flattened; /* triangles after flattening the scene, degenerate ones included */
  uint64_t collapsed; /* of those, triangles of zero area */
  double lo[3], hi[3]; /* bounding box of the other triangles */
} mesh_case;

/* tests/data/meshes, as `python3 tests/data/meshes/make_meshes.py` prints them */
static const mesh_case cases[] = {
    {"scene.obj", 272, 4, {-1.10000002, -1.85000002, -0.300000012}, {2.25, 0.850000024, 0.474999994}},
    {"scene_quads.obj", 268, 0, {-1.10000002, -1.85000002, -0.300000012}, {2.25, 0.850000024, 0.474999994}},
    {"scene_ascii.ply", 272, 4, {-1.10000002, -1.85000002, -0.300000012}, {2.25, 0.850000024, 0.474999994}},
    {"scene_binary.ply", 272, 4, {-1.10000002, -1.85000002, -0.300000012}, {2.25, 0.850000024, 0.474999994}},
    {"scene_be.ply", 272, 4, {-1.10000002, -1.85000002, -0.300000012}, {2.25, 0.850000024, 0.474999994}},
    {"scene_ascii.stl", 272, 4, {-1.10000002, -1.85000002, -0.300000012}, {2.25, 0.850000024, 0.474999994}},
    {"scene_binary.stl", 272, 4, {-1.10000002, -1.85000002, -0.300000012}, {2.25, 0.850000024, 0.474999994}},
    {"scene.off", 272, 4, {-1.10000002, -1.85000002, -0.300000012}, {2.25, 0.850000024, 0.474999994}},
    {"scene.gltf", 528, 4, {-1.10000002, -1.85000002, -0.300000012}, {2.25, 2.92499995, 0.737500012}},
    {"scene.glb", 528, 4, {-1.10000002, -1.85000002, -0.300000012}, {2.25, 2.92499995, 0.737500012}},
    {"scene.dae", 528, 4, {-1.10000002, -1.85000002, -0.300000012}, {2.25, 2.92499995, 0.737500012}},
    {"scene.fbx", 528, 4, {-1.10000002, -1.85000002, -0.300000012}, {2.25, 2.92499995, 0.737500012}},
    {"scene_ascii.fbx", 528, 4, {-1.10000002, -1.85000002, -0.300000012}, {2.25, 2.92499995, 0.737500012}},
    {"scene.3mf", 272, 4, {-1.10000002, -1.85000002, -0.300000012}, {2.25, 0.850000024, 0.474999994}},
    {"messy/sphere_with_hole.stl", 504, 0, {0, 0, 0}, {3, 3, 2.94888878}},
    {"messy/doubled_cube.obj", 24, 0, {-1, -1, -1}, {1, 1, 1}},
    {"messy/two_boxes.ply", 22, 0, {-0.5, -0.5, -0.5}, {1, 0.5, 0.5}},
    {"messy/cube_with_fold.ply", 48, 0, {-1, -1, -1}, {1, 1, 1}},
    {"star_prism.off", 140, 0, {-0.939783871, -0.992272377, -0.400000006}, {0.995004177, 0.9478423, 0.400000006}},
};

/* data/: the same figures as assimp's command line reports (6 significant digits) */
static const mesh_case bundled[] = {
    {"bunny_res4.ply", 948, 0, {-0.0931466, 0.0336204, -0.056644}, {0.0581591, 0.181897, 0.0578008}},
    {"bunny.ply", 69451, 0, {-0.0946899, 0.0329874, -0.0618736}, {0.0610091, 0.187321, 0.0587997}},
    {"spot.obj", 5856, 0, {-0.471552, -0.736784, -0.668909}, {0.471552, 0.953646, 1.049}},
};

static void check_case(const char *dir, const mesh_case *c, double rel_tol) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, c->rel);
  vx_soup m;
  vx_error e;
  vx_status s = vx_soup_import(path, &m, &e);
  CHECK_MSG(s == VX_OK, "%s: %s", c->rel, e.msg);
  if (s != VX_OK) return;
  fprintf(stderr, "  %-28s %6llu kept, %3llu degenerate, %llu non-finite, %llu points/lines, %u instances\n",
          c->rel, (unsigned long long)m.tri_count, (unsigned long long)m.skipped_degenerate,
          (unsigned long long)m.skipped_nonfinite, (unsigned long long)m.skipped_nontriangle,
          m.mesh_count);
  /* Every flattened triangle is either kept or counted as dropped. */
  CHECK_MSG(m.tri_count + m.skipped_degenerate == c->flattened, "%s: %llu + %llu != %llu", c->rel,
            (unsigned long long)m.tri_count, (unsigned long long)m.skipped_degenerate,
            (unsigned long long)c->flattened);
  CHECK(m.skipped_nonfinite == 0 && m.skipped_nontriangle == 0);
  CHECK_MSG(m.skipped_degenerate == c->collapsed, "%s: %llu degenerate", c->rel,
            (unsigned long long)m.skipped_degenerate);
  for (int a = 0; a < 3; a++) {
    double ext = c->hi[a] - c->lo[a];
    double tol = rel_tol * ext + rel_tol * (fabs(c->lo[a]) + fabs(c->hi[a]));
    CHECK_NEAR(m.bbox_min[a], c->lo[a], tol);
    CHECK_NEAR(m.bbox_max[a], c->hi[a], tol);
  }
  /* The bbox holds every kept vertex (brute force over the soup). */
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (uint64_t k = 0; k < m.tri_count * 9; k++) {
    double v = m.pos[k];
    if (v < lo[k % 3]) lo[k % 3] = v;
    if (v > hi[k % 3]) hi[k % 3] = v;
  }
  for (int a = 0; a < 3; a++) CHECK(lo[a] == m.bbox_min[a] && hi[a] == m.bbox_max[a]);
  vx_soup_free(&m);
}

static void mesh_import_every_format_matches_generator(void) {
  char dir[1024];
  check_test_mesh("", dir, sizeof dir);
  /* the files store float32 (or exact decimals of them): the boxes agree to float rounding */
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(dir, &cases[i], 1e-7);
}

static void mesh_import_bundled_meshes_match_assimp(void) {
  const char *dir = getenv("VOXLOD_DATA_DIR");
  for (size_t i = 0; i < sizeof bundled / sizeof bundled[0]; i++)
    check_case(dir && *dir ? dir : VX_DATA_DIR, &bundled[i], 1e-5);
}

static void mesh_import_rejects_gzip_file(void) {
  char buf[1024];
  const char *path = check_test_mesh("scene.ply.gz", buf, sizeof buf);
  vx_soup m;
  vx_error e;
  CHECK(vx_soup_import(path, &m, &e) == VX_ERR_FORMAT);
  CHECK_MSG(strstr(e.msg, "gunzip it first") != NULL, "%s", e.msg);
}

static char tmpdir[256];

static const char *write_tmp(const char *name, const void *data, size_t n) {
  static char path[600];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "wb");
  if (f) {
    fwrite(data, 1, n, f);
    fclose(f);
  }
  return path;
}

static const char *write_text(const char *name, const char *text) {
  return write_tmp(name, text, strlen(text));
}

static vx_status import(const char *path, vx_soup *m, vx_error *e) {
  memset(e, 0, sizeof *e);
  vx_status s = vx_soup_import(path, m, e);
  if (s != VX_OK) {
    CHECK(m->pos == NULL && m->tri_count == 0); /* nothing leaks out of a failure */
    CHECK(e->msg[0] != 0);
    fprintf(stderr, "  %s -> %s\n", strrchr(path, '/') ? strrchr(path, '/') + 1 : path, e->msg);
  }
  return s;
}

static void mesh_import_bad_inputs_give_clear_errors(void) {
  vx_soup m;
  vx_error e;
  char p[600];
  snprintf(p, sizeof p, "%s/does_not_exist.obj", tmpdir);
  CHECK(import(p, &m, &e) == VX_ERR_IO);
  CHECK_MSG(strstr(e.msg, "cannot open") && strstr(e.msg, "No such file"), "%s", e.msg);
  CHECK(import(tmpdir, &m, &e) == VX_ERR_IO);
  CHECK(strstr(e.msg, "directory") != NULL);
  CHECK(import(write_text("empty.obj", ""), &m, &e) == VX_ERR_FORMAT);
  const unsigned char gz[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3};
  CHECK(import(write_tmp("mesh.ply.gz", gz, sizeof gz), &m, &e) == VX_ERR_FORMAT);
  CHECK(strstr(e.msg, "gunzip it first") != NULL);
  CHECK(import(write_tmp("disguised.obj", gz, sizeof gz), &m, &e) == VX_ERR_FORMAT);
  /* Garbage: whatever assimp makes of it, no crash, and no triangles -> an error. */
  unsigned char junk[4096];
  uint32_t x = 12345;
  for (size_t i = 0; i < sizeof junk; i++) {
    x = x * 1664525u + 1013904223u;
    junk[i] = (unsigned char)(x >> 24);
  }
  vx_status s = import(write_tmp("garbage.bin", junk, sizeof junk), &m, &e);
  CHECK(s == VX_ERR_FORMAT || s == VX_ERR_EMPTY);
  if (s == VX_OK) vx_soup_free(&m);
  /* as a binary STL its bytes 80..83 claim some count of triangles: more than 4096 bytes hold
   * is refused before assimp sees it (VX_ERR_CORRUPT) */
  s = import(write_tmp("garbage.stl", junk, sizeof junk), &m, &e);
  CHECK(s == VX_OK || s == VX_ERR_FORMAT || s == VX_ERR_EMPTY || s == VX_ERR_CORRUPT);
  if (s == VX_OK) vx_soup_free(&m);
}

static void mesh_import_counts_dropped_triangles(void) {
  vx_soup m;
  vx_error e;
  /* Only degenerate faces: repeated vertex, collinear vertices. */
  CHECK(import(write_text("degenerate.obj", "v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 1 2\nf 1 2 3\n"), &m,
               &e) == VX_ERR_EMPTY);
  CHECK(strstr(e.msg, "no usable triangles") != NULL);
  /* Good and degenerate mixed. */
  CHECK(import(write_text("mixed.obj", "v 0 0 0\nv 1 0 0\nv 2 0 0\nv 0 1 0\n"
                                       "f 1 2 4\nf 1 2 3\nf 2 2 4\nf 1 4 2\n"),
               &m, &e) == VX_OK);
  CHECK(m.tri_count == 2 && m.skipped_degenerate == 2);
  CHECK(m.bbox_min[0] == 0 && m.bbox_max[0] == 1 && m.bbox_max[1] == 1 && m.bbox_max[2] == 0);
  vx_soup_free(&m);
  /* NaN and Inf coordinates: whether the parser reads them as non-finite or rejects the file,
   * no such triangle is kept. */
  vx_status s = import(write_text("nan.obj", "v nan 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nv inf 1 1\n"
                                             "f 1 2 3\nf 2 3 4\nf 5 3 4\n"),
                       &m, &e);
  CHECK(s == VX_OK || s == VX_ERR_FORMAT);
  if (s == VX_OK) {
    for (uint64_t k = 0; k < m.tri_count * 9; k++) CHECK(isfinite(m.pos[k]));
    CHECK(m.tri_count + m.skipped_nonfinite + m.skipped_degenerate == 3);
    fprintf(stderr, "  nan.obj -> %llu kept, %llu non-finite\n", (unsigned long long)m.tri_count,
            (unsigned long long)m.skipped_nonfinite);
    vx_soup_free(&m);
  }
  /* Huge coordinates overflow float after a transform only; here they stay finite. */
  CHECK(import(write_text("huge.obj", "v 1e38 0 0\nv -1e38 0 0\nv 0 1e38 0\nf 1 2 3\n"), &m, &e) == VX_OK);
  CHECK(m.tri_count == 1);
  vx_soup_free(&m);
  /* Points and lines are counted, not kept. */
  CHECK(import(write_text("lines.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\np 1\nl 1 2\nf 1 2 3\n"), &m, &e) == VX_OK);
  CHECK(m.tri_count == 1 && m.skipped_nontriangle == 2);
  vx_soup_free(&m);
  /* A PLY whose last face has no indices: assimp's own triangulation would abort the process
   * (found by fuzz_mesh); the face is counted as a point/line instead. */
  vx_status z = import(write_text("zero_face.ply",
                                  "ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\n"
                                  "property float y\nproperty float z\nelement face 3\n"
                                  "property list uchar int vertex_indices\nend_header\n0 0 0\n"
                                  "1 0 0\n0 1 0\n0 0 1\n3 0 1 2\n3 0float y\np1 2 3\n"),
                       &m, &e);
  CHECK(z == VX_OK || z == VX_ERR_FORMAT);
  if (z == VX_OK) {
    CHECK(m.tri_count >= 1 && m.skipped_nontriangle >= 1);
    vx_soup_free(&m);
  }
  /* A quad is triangulated. */
  CHECK(import(write_text("quad.obj", "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n"), &m, &e) == VX_OK);
  CHECK(m.tri_count == 2);
  vx_soup_free(&m);
}

/* glTF with one triangle (0,0,0) (1,0,0) (0,1,0) used by three nodes: translated, scaled, and a
 * child of the scaled node. Expected world triangles computed by hand below. */
static const char *gltf =
    "{\"asset\":{\"version\":\"2.0\"},\"scene\":0,\"scenes\":[{\"nodes\":[0,1]}],"
    "\"nodes\":[{\"mesh\":0,\"translation\":[10,0,0]},"
    "{\"mesh\":0,\"translation\":[0,0,5],\"scale\":[2,2,2],\"children\":[2]},"
    "{\"mesh\":0,\"translation\":[1,0,0]}],"
    "\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0}}]}],"
    "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":3,\"type\":\"VEC3\","
    "\"min\":[0,0,0],\"max\":[1,1,0]}],"
    "\"bufferViews\":[{\"buffer\":0,\"byteLength\":36}],"
    "\"buffers\":[{\"byteLength\":36,\"uri\":\"data:application/octet-stream;base64,"
    "AAAAAAAAAAAAAAAAAACAPwAAAAAAAAAAAAAAAAAAgD8AAAAA\"}]}";

static void mesh_import_expands_node_instances(void) {
  vx_soup m;
  vx_error e;
  vx_status s = import(write_text("instances.gltf", gltf), &m, &e);
  CHECK_MSG(s == VX_OK, "%s", e.msg);
  if (s != VX_OK) return;
  CHECK(m.tri_count == 3 && m.mesh_count == 3);
  /* Instances: x+10; 2x + (0,0,5); 2(x + (1,0,0)) + (0,0,5). */
  const double want[3][3] = {{10, 0, 0}, {0, 0, 5}, {2, 0, 5}}; /* first vertex of each */
  const double scale[3] = {1, 2, 2};
  int found[3] = {0, 0, 0};
  for (uint64_t t = 0; t < m.tri_count; t++) {
    const float *p = m.pos + 9 * t;
    for (int k = 0; k < 3; k++) {
      int ok = 1;
      const double v[3][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
      for (int j = 0; j < 3; j++)
        for (int a = 0; a < 3; a++) ok &= fabs(p[3 * j + a] - (want[k][a] + scale[k] * v[j][a])) < 1e-6;
      found[k] |= ok;
    }
  }
  CHECK(found[0] && found[1] && found[2]);
  CHECK(m.bbox_min[0] == 0 && m.bbox_max[0] == 11 && m.bbox_max[1] == 2 && m.bbox_max[2] == 5);
  vx_soup_free(&m);
}

static void mesh_import_from_memory(void) {
  const char *obj = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 2 4\n";
  vx_soup m;
  vx_error e;
  CHECK(vx_soup_import_memory(obj, strlen(obj), "obj", &m, &e) == VX_OK);
  CHECK(m.tri_count == 2);
  vx_soup_free(&m);
  CHECK(vx_soup_import_memory("", 0, "obj", &m, &e) == VX_ERR_FORMAT);
  vx_status s = vx_soup_import_memory("solid x\nendsolid x\n", 20, "stl", &m, &e);
  CHECK(s == VX_ERR_EMPTY || s == VX_ERR_FORMAT);
}

static void cleanup_dir(void) {
  const char *names[] = {"empty.obj", "mesh.ply.gz", "disguised.obj", "garbage.bin", "garbage.stl",
                         "degenerate.obj", "mixed.obj", "nan.obj", "huge.obj", "lines.obj",
                         "quad.obj", "instances.gltf", "zero_face.ply"};
  char p[600];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", tmpdir, names[i]);
    unlink(p);
  }
  rmdir(tmpdir);
}

/* The isolated import gives the in-process result bit for bit, the same errors, and a time-out
 * instead of a hang. */
static void mesh_import_isolated_matches_and_times_out(void) {
  const char *path = VX_DATA_DIR "/bunny.ply";
  vx_soup a, b;
  vx_error e;
  CHECK(vx_soup_import(path, &a, &e) == VX_OK);
  CHECK_MSG(vx_soup_import_isolated(path, 60.0, 0, &b, &e) == VX_OK, "%s", e.msg);
  CHECK(a.tri_count == b.tri_count && a.tri_count > 60000);
  CHECK(a.skipped_degenerate == b.skipped_degenerate && a.mesh_count == b.mesh_count);
  CHECK(a.pos && b.pos && memcmp(a.pos, b.pos, (size_t)a.tri_count * 9 * sizeof(float)) == 0);
  for (int i = 0; i < 3; i++) CHECK(a.bbox_min[i] == b.bbox_min[i] && a.bbox_max[i] == b.bbox_max[i]);
  vx_soup_free(&a);
  vx_soup_free(&b);
  /* same error as in process */
  vx_error e1, e2;
  CHECK(vx_soup_import("/nonexistent/x.obj", &a, &e1) == VX_ERR_IO);
  CHECK(vx_soup_import_isolated("/nonexistent/x.obj", 60.0, 0, &b, &e2) == VX_ERR_IO);
  CHECK(strcmp(e1.msg, e2.msg) == 0);
  CHECK(b.pos == NULL && b.tri_count == 0);
  /* a 3 MB ASCII PLY takes far longer than a microsecond to parse */
  CHECK(vx_soup_import_isolated(path, 1e-6, 0, &b, &e) == VX_ERR_FORMAT);
  CHECK_MSG(strstr(e.msg, "did not finish") != NULL, "%s", e.msg);
  CHECK(b.pos == NULL);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/vx_test_mesh.XXXXXX");
  if (!mkdtemp(tmpdir)) CHECK_FATAL("cannot make a temporary directory");
  RUN(mesh_import_bad_inputs_give_clear_errors);
  RUN(mesh_import_counts_dropped_triangles);
  RUN(mesh_import_expands_node_instances);
  RUN(mesh_import_from_memory);
  RUN(mesh_import_isolated_matches_and_times_out);
  RUN(mesh_import_rejects_gzip_file);
  cleanup_dir();
  RUN(mesh_import_every_format_matches_generator);
  RUN(mesh_import_bundled_meshes_match_assimp);
  return check_summary();
}
