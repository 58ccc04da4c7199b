/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_build.c - the GPU build (`convert --gpu`) against the CPU build, byte for byte (ctest
 * label gpu; exits 77 where no GPU is usable).
 *
 * Reference: vx_surface_build, the CPU build's blocks (itself checked against brute force over
 * all triangles in test_voxelizer_surface/field). The GPU build must give the same surface voxels
 * and the same quantized corner values, bit for bit: for analytic meshes (sphere + torus, an open
 * sheet and a slab thinner than a voxel that need the thin-voxel rule, a box whose faces lie on
 * voxel faces), the bundled bunny and Spot, the messy test meshes and a star prism (sharp edges);
 * with both sign rules; as one partition, with partitions forced down to 8^3 and 32^3 voxels (so
 * partition faces cut through triangles, along faces and through voxel corners), and with a GPU
 * memory budget so small that the build has to split partitions itself. Then whole files:
 * vx_voxelize_stream with opts.gpu against the CPU stream, written and compared byte for byte.
 */
#define _POSIX_C_SOURCE 200809L
#include "voxelizer/internal.h"
#include "formats/mesh_import.h"
#include "formats/svo_file.h"
#include "check.h"
#include "meshgen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#pragma weak vx_soup_import

/* First difference between the two surfaces, or -1. */
static int64_t first_diff(const vx_surface *a, const vx_surface *b) {
  uint64_t n = a->count < b->count ? a->count : b->count;
  for (uint64_t i = 0; i < n; i++)
    if (a->codes[i] != b->codes[i] || memcmp(&a->field[i], &b->field[i], sizeof(vx_voxel)) != 0)
      return (int64_t)i;
  return a->count == b->count ? -1 : (int64_t)n;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Distinct corners of the surface voxels, by sorting all 8 per voxel. */
static uint64_t distinct_corners(const vx_surface *s, uint32_t res) {
  const uint64_t C = (uint64_t)res + 1;
  uint64_t *k = (uint64_t *)malloc(s->count * 8 * sizeof(uint64_t)), n = 0;
  if (!k) return 0;
  for (uint64_t i = 0; i < s->count; i++) {
    uint32_t x, y, z;
    vx_morton_decode(s->codes[i], &x, &y, &z);
    for (int c = 0; c < 8; c++)
      k[i * 8 + c] = (x + (c & 1)) + (y + (c >> 1 & 1)) * C + (z + (c >> 2 & 1)) * C * C;
  }
  qsort(k, s->count * 8, sizeof(uint64_t), cmp_u64);
  for (uint64_t i = 0; i < s->count * 8; i++) n += i == 0 || k[i] != k[i - 1];
  free(k);
  return n;
}

/* The build's grid for mesh m at res^3 (transform, depth, band), as every build path derives it. */
static void grid_for(const vx_soup *m, uint32_t res, vx_transform *xf, uint32_t *depth,
                     float *band) {
  vx_voxelize_opts o;
  memset(&o, 0, sizeof o);
  o.resolution = res;
  CHECK(vx_voxelize_setup(m, &o, xf, depth, band, NULL) == VX_OK);
}

static void same_surface(const char *what, const vx_soup *m, uint32_t res, int rule,
                         uint32_t part_log2, uint64_t budget) {
  vx_transform xf;
  uint32_t depth;
  float band;
  vx_error e;
  grid_for(m, res, &xf, &depth, &band);
  vx_sign_data sg;
  CHECK_MSG(vx_sign_build_rule(m, &xf, rule, &sg, &e) == VX_OK, "%s", e.msg);
  vx_surface_opts so;
  memset(&so, 0, sizeof so);
  so.band = band;
  vx_surface cpu, gpu;
  vx_voxelize_stats cs, gs;
  CHECK(vx_surface_build(m, &xf, depth, &sg, &so, &cpu, &cs, &e) == VX_OK);
  vx_gpu_build_opts go;
  memset(&go, 0, sizeof go);
  go.part_log2 = part_log2;
  go.mem_budget = budget;
  vx_status s = vx_surface_build_gpu(m, &xf, depth, &sg, band, &go, NULL, NULL, &gpu, &gs, &e);
  vx_sign_free(&sg);
  if (s == VX_ERR_NO_GPU) {
    vx_surface_free(&cpu);
    CHECK_SKIP("%s", e.msg);
  }
  CHECK_MSG(s == VX_OK, "%s: %s", what, e.msg);
  if (s == VX_OK) {
    int64_t d = first_diff(&cpu, &gpu);
    CHECK_MSG(d < 0, "%s at %u^3 (rule %d, partitions 2^%u, budget %llu): %llu vs %llu voxels, "
              "first difference at %lld", what, res, rule, part_log2,
              (unsigned long long)budget, (unsigned long long)cpu.count,
              (unsigned long long)gpu.count, (long long)d);
    CHECK(gs.surface_voxels == cpu.count);
    /* One partition computes every distinct corner exactly once (the CPU build computes a corner
     * on a block face once per block). */
    if (part_log2 == 0 && budget == 0) {
      uint64_t distinct = distinct_corners(&cpu, res);
      CHECK_MSG(gs.corners == distinct, "%llu corners computed, %llu distinct",
                (unsigned long long)gs.corners, (unsigned long long)distinct);
    }
    fprintf(stderr, "  %-22s %5u^3 rule %d part 2^%-2u: %9llu voxels, %10llu corners: %s\n", what,
            res, rule, part_log2, (unsigned long long)gpu.count,
            (unsigned long long)gs.corners, d < 0 ? "same" : "DIFFERENT");
  }
  vx_surface_free(&cpu);
  vx_surface_free(&gpu);
}

static void analytic_meshes(void) {
  vx_soup m;
  memset(&m, 0, sizeof m);
  meshgen_sphere(&m, 0.1, -0.2, 0.05, 0.8, 40, 20);
  meshgen_torus(&m, 0.3, 0.2, -0.1, 0.6, 0.2, 36, 16);
  for (int rule = 0; rule < 2; rule++) {
    same_surface("sphere+torus", &m, 64, rule, 0, 0);
    same_surface("sphere+torus", &m, 64, rule, 3, 0);
  }
  same_surface("sphere+torus", &m, 256, VX_SIGN_WINDING, 5, 0);
  vx_soup_free(&m);

  /* An open sheet at an angle and a slab 0.3 voxels thick at 64^3: the thin-voxel rule. */
  memset(&m, 0, sizeof m);
  const double p0[3] = {-1.0, -0.9, -0.7}, u[3] = {2.0, 0.3, 0.4}, w[3] = {0.2, 1.8, 0.5};
  meshgen_sheet(&m, p0, u, w);
  const double lo[3] = {-0.5, -0.5, 0.1}, hi[3] = {0.5, 0.5, 0.1 + 0.3 * 2.0 / 64.0};
  meshgen_box(&m, lo, hi);
  same_surface("sheet+slab", &m, 64, VX_SIGN_WINDING, 0, 0);
  same_surface("sheet+slab", &m, 64, VX_SIGN_WINDING, 3, 0);
  vx_soup_free(&m);

  /* A box whose faces lie on voxel faces (and on partition faces at 2^3). */
  memset(&m, 0, sizeof m);
  const double blo[3] = {0.0, 0.0, 0.0}, bhi[3] = {1.0, 0.75, 0.5};
  meshgen_box(&m, blo, bhi);
  same_surface("box on voxel faces", &m, 32, VX_SIGN_WINDING, 0, 0);
  same_surface("box on voxel faces", &m, 32, VX_SIGN_WINDING, 3, 0);
  vx_soup_free(&m);
}

/* Builds sharing the mesh kept on the device (vx_gpu_meshes, as a tiled build's tiles do): the
 * same surface as the CPU's, one upload for both, and a build of another mesh's tables refused. */
static void resident_mesh(void) {
  vx_soup m;
  memset(&m, 0, sizeof m);
  meshgen_sphere(&m, 0.1, -0.2, 0.05, 0.8, 40, 20);
  meshgen_torus(&m, 0.3, 0.2, -0.1, 0.6, 0.2, 36, 16);
  vx_transform xf;
  uint32_t depth;
  float band;
  vx_error e;
  grid_for(&m, 128, &xf, &depth, &band);
  vx_sign_data sg, other;
  CHECK(vx_sign_build_rule(&m, &xf, VX_SIGN_WINDING, &sg, &e) == VX_OK);
  CHECK(vx_sign_build_rule(&m, &xf, VX_SIGN_WINDING, &other, &e) == VX_OK);
  vx_surface_opts so;
  memset(&so, 0, sizeof so);
  so.band = band;
  vx_surface cpu;
  CHECK(vx_surface_build(&m, &xf, depth, &sg, &so, &cpu, NULL, &e) == VX_OK);
  vx_gpu_meshes *gm = NULL;
  vx_status s = vx_gpu_meshes_create(&m, &xf, &sg, &gm, &e);
  for (int k = 0; k < 2 && s == VX_OK; k++) {
    vx_gpu_build_opts go;
    memset(&go, 0, sizeof go);
    go.resident = gm;
    go.part_log2 = k ? 5 : 0; /* also in partitions */
    vx_surface gpu;
    s = vx_surface_build_gpu(&m, &xf, depth, k ? NULL : &sg, band, &go, NULL, NULL, &gpu, NULL,
                             &e);
    if (s != VX_OK) break;
    int64_t d = first_diff(&cpu, &gpu);
    CHECK_MSG(d < 0, "resident build %d: %llu vs %llu voxels, first difference at %lld", k,
              (unsigned long long)cpu.count, (unsigned long long)gpu.count, (long long)d);
    vx_surface_free(&gpu);
  }
  if (s == VX_OK) {
    int uploads = 0;
    double sec = 0.0;
    vx_gpu_meshes_stats(gm, &uploads, &sec);
    CHECK_MSG(uploads == 1, "%d uploads for two builds on one device", uploads);
    vx_gpu_build_opts go;
    memset(&go, 0, sizeof go);
    go.resident = gm;
    vx_surface gpu;
    CHECK(vx_surface_build_gpu(&m, &xf, depth, &other, band, &go, NULL, NULL, &gpu, NULL, &e) ==
          VX_ERR_INVALID_ARG);
    vx_transform moved = xf;
    moved.origin[0] += 1.0;
    CHECK(vx_surface_build_gpu(&m, &moved, depth, &sg, band, &go, NULL, NULL, &gpu, NULL, &e) ==
          VX_ERR_INVALID_ARG);
    fprintf(stderr, "  resident mesh: two builds, %d upload (%.3f s), the CPU's surface\n",
            uploads, sec);
  }
  vx_gpu_meshes_free(gm);
  vx_surface_free(&cpu);
  vx_sign_free(&sg);
  vx_sign_free(&other);
  vx_soup_free(&m);
  if (s == VX_ERR_NO_GPU || s == VX_ERR_CUDA) CHECK_SKIP("%s", e.msg);
  CHECK_MSG(s == VX_OK, "%s", e.msg);
}

/* Meshes: check_data_mesh (data/) and check_test_mesh (tests/data/meshes) honour
 * $VOXLOD_DATA_DIR / $VOXLOD_TEST_MESHES (the GPU machine runs a copy of the tree elsewhere). */
static int load(const char *path, vx_soup *m) {
  vx_error e;
  memset(m, 0, sizeof *m);
  CHECK_MSG(vx_soup_import != NULL, "no mesh importer linked");
  if (!vx_soup_import) return 0;
  vx_status s = vx_soup_import(path, m, &e);
  CHECK_MSG(s == VX_OK, "%s: %s", path, e.msg);
  return s == VX_OK;
}

static void bunny(void) {
  vx_soup m;
  char buf[1024];
  if (!load(check_data_mesh("bunny.ply", buf, sizeof buf), &m)) return;
  same_surface("bunny", &m, 128, VX_SIGN_WINDING, 0, 0);
  same_surface("bunny", &m, 128, VX_SIGN_PSEUDO_NORMAL, 4, 0);
  same_surface("bunny", &m, 512, VX_SIGN_WINDING, 0, 0);
  /* 72 MiB: partitions split because memory says so (part_bytes has a 64 MiB floor) */
  same_surface("bunny (small budget)", &m, 256, VX_SIGN_WINDING, 0, 72ull << 20);
  vx_soup_free(&m);
}

static void test_meshes(void) {
  static const char *names[] = {"messy/sphere_with_hole.stl", "messy/doubled_cube.obj",
                                "messy/two_boxes.ply", "messy/cube_with_fold.ply",
                                "star_prism.off", "spot.obj"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char buf[1024];
    vx_soup m;
    const char *path = strcmp(names[i], "spot.obj") == 0 ? check_data_mesh(names[i], buf, sizeof buf)
                                                         : check_test_mesh(names[i], buf, sizeof buf);
    if (!load(path, &m)) continue;
    same_surface(names[i], &m, 128, VX_SIGN_WINDING, 0, 0);
    same_surface(names[i], &m, 64, VX_SIGN_WINDING, 3, 0);
    vx_soup_free(&m);
  }
}

/* The whole build on the GPU (vx_voxelize_gpu: octree and planes there too) against the CPU's
 * in-core build, encoded as files, byte for byte; also pruned. */
static void same_tree(const char *what, const vx_soup *m, uint32_t res, float max_error) {
  uint8_t *enc[2] = {NULL, NULL};
  size_t n[2] = {0, 0};
  for (int gpu = 0; gpu < 2; gpu++) {
    vx_voxelize_opts o;
    memset(&o, 0, sizeof o);
    o.resolution = res;
    o.max_error = max_error;
    vx_octree t;
    vx_error e;
    vx_status r = gpu ? vx_voxelize_gpu(m, &o, &t, NULL, &e) : vx_voxelize(m, &o, &t, NULL, &e);
    if (r == VX_ERR_NO_GPU) {
      free(enc[0]);
      CHECK_SKIP("%s", e.msg);
    }
    CHECK_MSG(r == VX_OK, "%s: %s", what, e.msg);
    if (r != VX_OK) break;
    CHECK(vx_octree_validate(&t, NULL) == VX_OK);
    CHECK(vx_svo_encode(&t, 0, &enc[gpu], &n[gpu], &e) == VX_OK);
    vx_octree_free(&t);
  }
  int same = enc[0] && enc[1] && n[0] == n[1] && memcmp(enc[0], enc[1], n[0]) == 0;
  CHECK_MSG(same, "%s at %u^3, error %g: GPU tree %zu bytes, CPU %zu, or different", what, res,
            (double)max_error, n[1], n[0]);
  fprintf(stderr, "  %-22s %5u^3 error %-4g: whole tree on the GPU, %zu bytes: %s\n", what, res,
          (double)max_error, n[1], same ? "same" : "DIFFERENT");
  free(enc[0]);
  free(enc[1]);
}

static void gpu_trees(void) {
  vx_soup m;
  memset(&m, 0, sizeof m);
  meshgen_sphere(&m, 0.1, -0.2, 0.05, 0.8, 40, 20);
  meshgen_torus(&m, 0.3, 0.2, -0.1, 0.6, 0.2, 36, 16);
  same_tree("sphere+torus", &m, 2, 0.0f);
  same_tree("sphere+torus", &m, 64, 0.0f);
  same_tree("sphere+torus", &m, 256, 0.25f);
  vx_soup_free(&m);
  char buf[1024];
  if (!load(check_data_mesh("bunny.ply", buf, sizeof buf), &m)) return;
  same_tree("bunny", &m, 512, 0.0f);
  same_tree("bunny", &m, 1024, 0.5f);
  vx_soup_free(&m);
}

/* The clean-triangle certificate on the GPU (gpu_sign.cu) against the CPU's, flag for flag. */
static void same_clean_flags(const char *what, const vx_soup *m, uint32_t res) {
  vx_transform xf;
  uint32_t depth;
  float band;
  vx_error e;
  grid_for(m, res, &xf, &depth, &band);
  vx_sign_data a, b;
  CHECK(vx_sign_build_rule_ex(m, &xf, VX_SIGN_WINDING, 0, 0, &a, &e) == VX_OK);
  CHECK(vx_sign_build_rule_ex(m, &xf, VX_SIGN_WINDING, 1, 0, &b, &e) == VX_OK);
  uint64_t diff = 0;
  for (uint64_t t = 0; t < m->tri_count; t++) diff += a.clean[t] != b.clean[t];
  CHECK_MSG(diff == 0 && a.clean_count == b.clean_count, "%s: %llu flags differ", what,
            (unsigned long long)diff);
  fprintf(stderr, "  %-22s %llu of %llu triangles clean on both\n", what,
          (unsigned long long)b.clean_count, (unsigned long long)m->tri_count);
  vx_sign_free(&a);
  vx_sign_free(&b);
}

static void clean_flags(void) {
  vx_soup m;
  char buf[1024];
  memset(&m, 0, sizeof m);
  meshgen_sphere(&m, 0.1, -0.2, 0.05, 0.8, 40, 20);
  meshgen_torus(&m, 0.3, 0.2, -0.1, 0.6, 0.2, 36, 16);
  same_clean_flags("sphere+torus", &m, 64);
  vx_soup_free(&m);
  if (load(check_data_mesh("bunny.ply", buf, sizeof buf), &m)) {
    same_clean_flags("bunny", &m, 512);
    vx_soup_free(&m);
  }
  static const char *names[] = {"messy/sphere_with_hole.stl", "messy/doubled_cube.obj",
                                "messy/two_boxes.ply", "messy/cube_with_fold.ply"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (!load(check_test_mesh(names[i], buf, sizeof buf), &m)) continue;
    same_clean_flags(names[i], &m, 64);
    vx_soup_free(&m);
  }
}

/* Whole files: the streaming build with opts.gpu against the CPU one. */
static void same_file(void) {
  vx_soup m;
  char buf[1024];
  if (!load(check_data_mesh("bunny.ply", buf, sizeof buf), &m)) return;
  char dir[] = "/tmp/voxlod_gpu_build_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  uint8_t *bytes[2] = {NULL, NULL};
  long size[2] = {0, 0};
  for (int gpu = 0; gpu < 2; gpu++) {
    vx_voxelize_opts o;
    memset(&o, 0, sizeof o);
    o.resolution = 256;
    o.gpu = gpu;
    vx_stream_build_opts x;
    memset(&x, 0, sizeof x);
    x.block_log2 = 4;
    x.gpu.part_log2 = 6;
    vx_stream s;
    vx_error e;
    vx_status r = vx_voxelize_stream_ex(&m, &o, dir, &x, &s, NULL, &e);
    if (r == VX_ERR_NO_GPU) CHECK_SKIP("%s", e.msg);
    CHECK_MSG(r == VX_OK, "%s", e.msg);
    if (r != VX_OK) break;
    char path[256];
    snprintf(path, sizeof path, "%s/%d.svo", dir, gpu);
    CHECK(vx_svo_write_stream(path, &s, 0, NULL, NULL, &e) == VX_OK);
    vx_stream_free(&s);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) break;
    fseek(f, 0, SEEK_END);
    size[gpu] = ftell(f);
    fseek(f, 0, SEEK_SET);
    bytes[gpu] = (uint8_t *)malloc((size_t)size[gpu]);
    CHECK(fread(bytes[gpu], 1, (size_t)size[gpu], f) == (size_t)size[gpu]);
    fclose(f);
    unlink(path);
  }
  CHECK_MSG(bytes[0] && bytes[1] && size[0] == size[1] &&
                memcmp(bytes[0], bytes[1], (size_t)size[0]) == 0,
            "GPU file %ld bytes, CPU file %ld bytes, or contents differ", size[1], size[0]);
  free(bytes[0]);
  free(bytes[1]);
  rmdir(dir);
  vx_soup_free(&m);
}

int main(void) {
  RUN(analytic_meshes);
  RUN(resident_mesh);
  RUN(bunny);
  RUN(test_meshes);
  RUN(same_file);
  RUN(gpu_trees);
  RUN(clean_flags);
  return check_summary();
}
