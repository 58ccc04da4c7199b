/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_sample.cu - the CUDA sampler against the CPU one: host arrays, device arrays sampled in
 * place (cudaMalloc'ed, as torch or cupy hold them), a renderer's resident tree, a cut level,
 * non-finite points, mixed host and device arrays refused. Skips (77) without a usable GPU.
 *
 * No tolerance: the kernel and the CPU run the same header, built without fused multiply-adds on
 * either side (sampler/CMakeLists.txt), so every result is the CPU's, bit for bit (NaN: NaN).
 * test_gpu_sample_agree.cu checks the same on a scan at several resolutions. */
#define VOXLOD_EXPERIMENTAL /* the benchmark calls */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "voxlod.h"
#include "check.h"
#include "meshgen.h"

/* The tree of soup m at res^3 (the CPU converter); frees m. */
static vx_tree *soup_tree(vx_soup *m, uint32_t res) {
  vx_mesh *mesh = NULL;
  vx_error e;
  CHECK_MSG(vx_mesh_from_arrays(m->pos, m->tri_count * 3, NULL, m->tri_count, &mesh, &e) == VX_OK,
            "%s", e.msg);
  vx_convert_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.resolution = res;
  o.device = VX_DEVICE_CPU;
  vx_conversion *b = NULL;
  CHECK_MSG(vx_convert(mesh, &o, &b, &e) == VX_OK, "%s", e.msg);
  vx_tree *t = vx_conversion_take_tree(b);
  vx_conversion_free(b);
  vx_mesh_free(mesh);
  vx_soup_free(m);
  return t;
}

static vx_tree *torus_tree(uint32_t res) {
  vx_soup m = {0};
  CHECK(meshgen_torus(&m, 0, 0, 0, 1.0, 0.3, 64, 24) == 0);
  return soup_tree(&m, res);
}

/* A closed plate about 0.3 voxel thick, tilted: voxels the thin rule re-signed, which the sampler
 * finds and uploads (sampler/resigned.h). */
static vx_tree *plate_tree(uint32_t res) {
  vx_soup m = {0};
  const double lo[3] = {-0.8, -0.6, -0.004}, hi[3] = {0.8, 0.6, 0.004};
  CHECK(meshgen_box(&m, lo, hi) == 0);
  const double a[3] = {0.6, 0.48, 0.64};
  meshgen_rotate(&m, a, 0.7);
  return soup_tree(&m, res);
}

static vx_tree_info info_of(const vx_tree *t) {
  vx_tree_info i;
  memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  vx_tree_get_info(t, &i);
  return i;
}

/* A GPU sampler of t, on renderer r's resident tree when r is not NULL. */
static vx_sampler *gpu_sampler(const vx_tree *t, const vx_renderer *r) {
  vx_sampler_opts so;
  memset(&so, 0, sizeof so);
  so.struct_size = sizeof so;
  so.device = VX_DEVICE_GPU;
  so.renderer = r;
  vx_sampler *s = NULL;
  vx_error e;
  CHECK_MSG(vx_sampler_create(t, &so, &s, &e) == VX_OK, "%s", e.msg);
  return s;
}

/* A call over device points dp that must fail on non-finite points names the first: `name` is
 * "point K ". */
static void check_first_invalid(vx_sampler *s, const float *dp, float *dd, uint64_t n,
                                const char *name) {
  vx_sample_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.nonfinite = VX_NONFINITE_FAIL;
  vx_error e;
  CHECK(vx_sampler_sample(s, &o, dp, n, dd, NULL, NULL, NULL, &e) == VX_ERR_INVALID_ARG);
  CHECK_MSG(strstr(e.msg, name) != NULL, "%s", e.msg);
}

/* Compares two runs: the same flags and distances, bit for bit (NaN: NaN). */
static void compare(const char *what, uint64_t n, const float *d0, const uint8_t *f0,
                    const float *d1, const uint8_t *f1) {
  uint64_t differ = 0, over = 0;
  double worst = 0.0;
  for (uint64_t i = 0; i < n; i++) {
    if (f0[i] != f1[i]) {
      differ++;
      continue;
    }
    if (isnan(d0[i]) || isnan(d1[i])) {
      CHECK(isnan(d0[i]) && isnan(d1[i]));
      continue;
    }
    double e = fabs((double)d0[i] - d1[i]);
    if (e > worst) worst = e;
    over += memcmp(&d0[i], &d1[i], sizeof *d0) != 0;
  }
  fprintf(stderr, "  %s: %llu points, %llu flags and %llu distances differ, largest difference "
          "%.3g\n", what, (unsigned long long)n, (unsigned long long)differ,
          (unsigned long long)over, worst);
  CHECK(differ == 0);
  CHECK_MSG(over == 0, "%llu distances not the CPU's bits", (unsigned long long)over);
}

static void gpu_sampler_matches_cpu(void) {
  vx_tree *t = torus_tree(128);
  const uint64_t n = 200000;
  float *p = (float *)malloc(n * 12);
  vx_surface_points_opts po;
  memset(&po, 0, sizeof po);
  po.struct_size = sizeof po;
  po.spread = 5.0f;
  po.seed = 1;
  po.shuffle = 1;
  vx_error e;
  CHECK(vx_tree_surface_points(t, &po, n, p, &e) == VX_OK);
  p[30] = NAN; /* point 10 */
  /* points 11 and 12 so far beyond the box that the squared distance overflows; point 13's
   * grid coordinate overflows (invalid, as a NaN) */
  const float huge[9] = {1e30f, 0.0f, 0.0f, -1e36f, 1e36f, 0.0f, 3e38f, 0.0f, 0.0f};
  memcpy(&p[33], huge, sizeof huge);
  float *dc = (float *)malloc(n * 4), *dg = (float *)malloc(n * 4), *gg = (float *)malloc(n * 12);
  uint8_t *fc = (uint8_t *)malloc(n), *fg = (uint8_t *)malloc(n);
  CHECK(vx_tree_sample(t, NULL, p, n, dc, NULL, fc, NULL, &e) == VX_OK);

  vx_sampler *s = gpu_sampler(t, NULL);
  CHECK(vx_sampler_uses_gpu(s));

  /* host arrays, through the device in chunks */
  vx_sample_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK_MSG(vx_sampler_sample(s, NULL, p, n, dg, gg, fg, &st, &e) == VX_OK, "%s", e.msg);
  CHECK(st.used_gpu && !st.device_pointers && st.invalid == 2);
  compare("host arrays", n, dc, fc, dg, fg);

  /* device arrays, in place */
  float *dp = NULL, *dd = NULL, *dgr = NULL;
  uint8_t *df = NULL;
  CHECK(cudaMalloc((void **)&dp, n * 12) == cudaSuccess);
  CHECK(cudaMalloc((void **)&dd, n * 4) == cudaSuccess);
  CHECK(cudaMalloc((void **)&dgr, n * 12) == cudaSuccess);
  CHECK(cudaMalloc((void **)&df, n) == cudaSuccess);
  CHECK(cudaMemcpy(dp, p, n * 12, cudaMemcpyHostToDevice) == cudaSuccess);
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK_MSG(vx_sampler_sample(s, NULL, dp, n, dd, dgr, df, &st, &e) == VX_OK, "%s", e.msg);
  CHECK(st.used_gpu && st.device_pointers && st.invalid == 2);
  memset(dg, 0, n * 4);
  memset(fg, 0, n);
  CHECK(cudaMemcpy(dg, dd, n * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(cudaMemcpy(fg, df, n, cudaMemcpyDeviceToHost) == cudaSuccess);
  compare("device arrays", n, dc, fc, dg, fg);

  /* non-finite points fail the call when asked, naming the first */
  check_first_invalid(s, dp, dd, n, "point 10 ");

  /* a cut level on the device */
  vx_sample_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.lod = VX_LOD_LEVEL;
  o.level = 4;
  CHECK(vx_tree_sample(t, &o, p, n, dc, NULL, fc, NULL, &e) == VX_OK);
  CHECK(vx_sampler_sample(s, &o, dp, n, dd, NULL, df, NULL, &e) == VX_OK);
  CHECK(cudaMemcpy(dg, dd, n * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(cudaMemcpy(fg, df, n, cudaMemcpyDeviceToHost) == cudaSuccess);
  compare("cut at level 4", n, dc, fc, dg, fg);

  /* the band cache (the GPU sampler builds its own, the rule evaluated on the device, and keeps
   * it there): the CPU's bits, through device and host arrays; the cache answered (its values
   * differ from the rule's) */
  o.lod = VX_LOD_FINEST;
  o.band_cache = 1;
  float *dr = (float *)malloc(n * 4);
  CHECK(vx_tree_sample(t, NULL, p, n, dr, NULL, NULL, NULL, &e) == VX_OK);
  CHECK(vx_tree_sample(t, &o, p, n, dc, NULL, fc, NULL, &e) == VX_OK);
  CHECK_MSG(vx_sampler_sample(s, &o, dp, n, dd, NULL, df, NULL, &e) == VX_OK, "%s", e.msg);
  CHECK(cudaMemcpy(dg, dd, n * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(cudaMemcpy(fg, df, n, cudaMemcpyDeviceToHost) == cudaSuccess);
  compare("band cache, device arrays", n, dc, fc, dg, fg);
  CHECK_MSG(vx_sampler_sample(s, &o, p, n, dg, NULL, fg, NULL, &e) == VX_OK, "%s", e.msg);
  compare("band cache, host arrays", n, dc, fc, dg, fg);
  CHECK(memcmp(dr, dc, n * 4) != 0);
  free(dr);
  o.band_cache = 0;

  /* host and device arrays in one call are refused */
  CHECK(vx_sampler_sample(s, NULL, dp, n, dc, NULL, NULL, NULL, &e) == VX_ERR_INVALID_ARG);
  CHECK_MSG(strstr(e.msg, "all be device memory or all host memory") != NULL, "%s", e.msg);

  /* the bench: the kernel on device-resident points */
  vx_sampler_bench_stats b;
  memset(&b, 0, sizeof b);
  b.struct_size = sizeof b;
  CHECK_MSG(vx_sampler_bench(s, NULL, p, n, 5, &b, &e) == VX_OK, "%s", e.msg);
  CHECK(b.used_gpu && b.points_per_s > 0.0 && b.regs_per_thread > 0);
  fprintf(stderr, "  bench: %.0f Mpoints/s (kernel), %.0f Mpoints/s with copies, %d registers\n",
          b.points_per_s * 1e-6, n / (b.ms_copy_median * 1e-3) * 1e-6, b.regs_per_thread);
  o.band_cache = 1;
  CHECK_MSG(vx_sampler_bench(s, &o, p, n, 5, &b, &e) == VX_OK, "%s", e.msg);
  CHECK(b.used_gpu && b.points_per_s > 0.0 && b.cache_bytes > 0);
  fprintf(stderr, "  bench, band cache: %.0f Mpoints/s (kernel)\n", b.points_per_s * 1e-6);
  o.band_cache = 0;
  vx_sampler_free(s);

  /* a sampler on a renderer's resident tree */
  vx_renderer_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.struct_size = sizeof ro;
  ro.device = VX_DEVICE_GPU;
  vx_renderer *r = NULL;
  CHECK_MSG(vx_renderer_create(t, &ro, &r, &e) == VX_OK, "%s", e.msg);
  s = gpu_sampler(t, r);
  CHECK(vx_tree_sample(t, NULL, p, n, dc, NULL, fc, NULL, &e) == VX_OK);
  CHECK(vx_sampler_sample(s, NULL, p, n, dg, NULL, fg, NULL, &e) == VX_OK);
  compare("renderer's tree", n, dc, fc, dg, fg);
  vx_sampler_free(s);
  vx_renderer_free(r);

  /* A tree with re-signed voxels: the sampler's bits on the device, every value and sign the
   * CPU's (without the bits, points behind the plate's sheet read inside: tests/test_sample.c
   * counts them on the CPU). With fused multiply-adds on the GPU, the search's plane bound
   * pruned a cell on one side of a rounding difference and not on the other beside the plate's
   * rim: 1,345 flags and 4,900 values differed (H100, 2026-11-25). */
  vx_tree *pt = plate_tree(64);
  const vx_tree_info pi = info_of(pt);
  s = gpu_sampler(pt, NULL);
  po.spread = 3.0f;
  CHECK(vx_tree_surface_points(pt, &po, n, p, &e) == VX_OK);
  CHECK(vx_tree_sample(pt, NULL, p, n, dc, NULL, fc, NULL, &e) == VX_OK);
  CHECK(vx_sampler_sample(s, NULL, p, n, dg, NULL, fg, NULL, &e) == VX_OK);
  uint64_t signs = 0;
  for (uint64_t i = 0; i < n; i++)
    signs += fabsf(dc[i]) > 1e-3f * pi.scale && (dc[i] < 0.0f) != (dg[i] < 0.0f);
  CHECK(signs == 0);
  compare("thin plate", n, dc, fc, dg, fg);
  vx_sampler_free(s);
  vx_tree_free(pt);

  cudaFree(dp);
  cudaFree(dd);
  cudaFree(dgr);
  cudaFree(df);
  free(p);
  free(dc);
  free(dg);
  free(gg);
  free(fc);
  free(fg);
  vx_tree_free(t);
}

/* A device call of more than one chunk of the stages (2^24 points), shuffled and in Morton order
 * (the search queue sorted or taken as it comes), against the CPU, with the first invalid point
 * named by its index in the call. */
static void gpu_sampler_long_calls(void) {
  vx_tree *t = torus_tree(256);
  const uint64_t n = ((uint64_t)1 << 24) + 123457;
  float *p = (float *)malloc(n * 12), *dc = (float *)malloc(n * 4), *dg = (float *)malloc(n * 4);
  uint8_t *fc = (uint8_t *)malloc(n), *fg = (uint8_t *)malloc(n);
  CHECK(p && dc && dg && fc && fg);
  float *dp = NULL, *dd = NULL;
  uint8_t *df = NULL;
  CHECK(cudaMalloc((void **)&dp, n * 12) == cudaSuccess);
  CHECK(cudaMalloc((void **)&dd, n * 4) == cudaSuccess);
  CHECK(cudaMalloc((void **)&df, n) == cudaSuccess);
  vx_sampler *s = gpu_sampler(t, NULL);
  vx_error e;
  for (int shuffle = 1; shuffle >= 0; shuffle--) {
    vx_surface_points_opts po;
    memset(&po, 0, sizeof po);
    po.struct_size = sizeof po;
    po.spread = 3.0f;
    po.seed = 7;
    po.shuffle = shuffle;
    CHECK(vx_tree_surface_points(t, &po, n, p, &e) == VX_OK);
    p[3 * 16000000 + 1] = NAN; /* in the second chunk */
    p[3 * 9000001 + 2] = INFINITY;
    CHECK(vx_tree_sample(t, NULL, p, n, dc, NULL, fc, NULL, &e) == VX_OK);
    CHECK(cudaMemcpy(dp, p, n * 12, cudaMemcpyHostToDevice) == cudaSuccess);
    vx_sample_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    CHECK_MSG(vx_sampler_sample(s, NULL, dp, n, dd, NULL, df, &st, &e) == VX_OK, "%s", e.msg);
    CHECK(st.used_gpu && st.device_pointers && st.invalid == 2);
    CHECK(cudaMemcpy(dg, dd, n * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(cudaMemcpy(fg, df, n, cudaMemcpyDeviceToHost) == cudaSuccess);
    compare(shuffle ? "2^24 + 123457 shuffled points" : "2^24 + 123457 points in Morton order", n,
            dc, fc, dg, fg);
    check_first_invalid(s, dp, dd, n, "point 9000001 ");
  }
  vx_sampler_free(s);
  cudaFree(dp);
  cudaFree(dd);
  cudaFree(df);
  free(p);
  free(dc);
  free(dg);
  free(fc);
  free(fg);
  vx_tree_free(t);
}

int main(void) {
  if (!vx_gpu_available()) CHECK_SKIP("no usable CUDA device");
  RUN(gpu_sampler_matches_cpu);
  RUN(gpu_sampler_long_calls);
  return check_summary();
}
