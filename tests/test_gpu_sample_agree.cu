/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_sample_agree.cu - one answer whatever the device: the GPU sampler gives the CPU's bits
 * (distance, gradient, flags), by the rule and with the band cache (which the GPU sampler builds
 * itself, the rule evaluated by its kernels), through host arrays and device arrays, on a
 * scan-like mesh with a part thinner than a voxel (sample_scan.h) at 64^3 to 2048^3, points
 * shuffled within a voxel of the surface and uniform ones, at full detail and cut at three
 * levels; and the GPU's cache stays within its bound of the GPU's rule. Skips (77) without a
 * usable GPU.
 *
 * VOXLOD_AGREE_MAX_RES in the environment lowers the largest resolution (default 2048). The
 * trees of 1024^3 and more are converted on the GPU; the CPU still samples their 10^6 points five
 * times and builds their band cache (converting the 1024^3 tree on the CPU, sampling its 10^6
 * points and building its cache took 60 s of CPU time on the 2-core development machine). */
#include <cuda_runtime.h>

#include "sample_scan.h"


static vx_sampler *gpu_sampler(const vx_tree *t) {
  vx_sampler_opts so;
  memset(&so, 0, sizeof so);
  so.struct_size = sizeof so;
  so.device = VX_DEVICE_GPU;
  vx_sampler *s = NULL;
  vx_error e;
  memset(&e, 0, sizeof e);
  CHECK_MSG(vx_sampler_create(t, &so, &s, &e) == VX_OK, "%s", e.msg);
  return s;
}

/* The GPU through device arrays: points up, results down. */
static void gpu_device_run(vx_sampler *s, const vx_sample_opts *o, const float *p, uint64_t n,
                           scan_run *r) {
  float *dp = NULL, *dd = NULL, *dg = NULL;
  uint8_t *df = NULL;
  CHECK(cudaMalloc((void **)&dp, n * 12) == cudaSuccess);
  CHECK(cudaMalloc((void **)&dd, n * 4) == cudaSuccess);
  CHECK(cudaMalloc((void **)&dg, n * 12) == cudaSuccess);
  CHECK(cudaMalloc((void **)&df, n) == cudaSuccess);
  CHECK(cudaMemcpy(dp, p, n * 12, cudaMemcpyHostToDevice) == cudaSuccess);
  vx_error e;
  memset(&e, 0, sizeof e);
  CHECK_MSG(vx_sampler_sample(s, o, dp, n, dd, dg, df, NULL, &e) == VX_OK, "%s", e.msg);
  CHECK(cudaMemcpy(r->d, dd, n * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(cudaMemcpy(r->g, dg, n * 12, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(cudaMemcpy(r->f, df, n, cudaMemcpyDeviceToHost) == cudaSuccess);
  cudaFree(dp);
  cudaFree(dd);
  cudaFree(dg);
  cudaFree(df);
}

static void check_resolution(uint32_t res, uint64_t n) {
  /* the finer trees converted on the GPU (the same bytes as the CPU's, and minutes faster) */
  vx_tree *t = scan_tree_on(res, res >= 1024 ? VX_DEVICE_GPU : VX_DEVICE_CPU, NULL);
  if (!t) return;
  const vx_tree_info ti = scan_info(t);
  float *p = scan_points(t, n, n - n / 4, 1.0f, res);
  scan_run cpu, gpu, cache;
  CHECK(p && scan_run_alloc(&cpu, n) == 0 && scan_run_alloc(&gpu, n) == 0 &&
        scan_run_alloc(&cache, n) == 0);
  vx_sampler *s = gpu_sampler(t);
  if (!s) return;
  CHECK(vx_sampler_uses_gpu(s));
  vx_sample_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  vx_error e;
  memset(&e, 0, sizeof e);
  char what[96];
  for (int bc = 0; bc <= 1; bc++) {
    o.band_cache = bc;
    const char *how = bc ? "band cache" : "rule";
    CHECK_MSG(vx_tree_sample(t, &o, p, n, cpu.d, cpu.g, cpu.f, NULL, &e) == VX_OK, "%s", e.msg);
    CHECK_MSG(vx_sampler_sample(s, &o, p, n, gpu.d, gpu.g, gpu.f, NULL, &e) == VX_OK, "%s",
              e.msg);
    snprintf(what, sizeof what, "%u^3, %s, GPU host arrays against the CPU", res, how);
    scan_same_bits(what, n, &cpu, &gpu, ti.scale);
    gpu_device_run(s, &o, p, n, &gpu);
    snprintf(what, sizeof what, "%u^3, %s, GPU device arrays against the CPU", res, how);
    scan_same_bits(what, n, &cpu, &gpu, ti.scale);
    if (!bc) {
      memcpy(cache.d, gpu.d, n * 4); /* the GPU's rule, for the cache's bound below */
      memcpy(cache.f, gpu.f, n);
    }
  }
  /* cuts: nodes' planes, and where a node has no usable plane its children, down to voxels
   * (re-signed ones included) */
  o.band_cache = 0;
  for (int level = (int)ti.depth - 1; level >= (int)ti.depth - 3; level--) {
    o.lod = VX_LOD_LEVEL;
    o.level = level;
    CHECK_MSG(vx_tree_sample(t, &o, p, n, cpu.d, cpu.g, cpu.f, NULL, &e) == VX_OK, "%s", e.msg);
    gpu_device_run(s, &o, p, n, &gpu);
    snprintf(what, sizeof what, "%u^3, level %d, GPU device arrays against the CPU", res, level);
    scan_same_bits(what, n, &cpu, &gpu, ti.scale);
  }
  /* the band cache's run again, for its bound */
  o.lod = VX_LOD_FINEST;
  o.band_cache = 1;
  gpu_device_run(s, &o, p, n, &gpu);
  /* the GPU's cache against the GPU's rule (cache: the rule's run, gpu: the cache's) */
  uint64_t answered = 0, signs = 0, over = 0;
  const double worst = scan_cache_error(n, &cache, &gpu, ti.scale, &answered, &signs);
  for (uint64_t i = 0; i < n; i++)
    over += fabs((double)cache.d[i] - gpu.d[i]) > SCAN_CACHE_TOL * ti.scale;
  fprintf(stderr, "  %u^3, GPU band cache against the GPU rule: %llu of %llu points differ, "
          "largest %.4f voxel, %llu over %.1f, %llu signs beyond a voxel\n", res,
          (unsigned long long)answered, (unsigned long long)n, worst, (unsigned long long)over,
          SCAN_CACHE_TOL, (unsigned long long)signs);
  CHECK(answered > n / 10);
  CHECK(signs == 0);
  CHECK_MSG(worst <= SCAN_CACHE_TOL && over == 0, "%.4f voxel from the rule", worst);
  vx_sampler_free(s);
  free(p);
  scan_run_free(&cpu);
  scan_run_free(&gpu);
  scan_run_free(&cache);
  vx_tree_free(t);
}

static uint32_t max_res(void) {
  const char *v = getenv("VOXLOD_AGREE_MAX_RES");
  const long r = v ? strtol(v, NULL, 10) : 2048;
  return r >= 64 ? (uint32_t)r : 2048u;
}

static void gpu_agrees_64(void) { check_resolution(64, 200000); }
static void gpu_agrees_256(void) { check_resolution(256, 1000000); }
static void gpu_agrees_1024(void) {
  if (max_res() >= 1024) check_resolution(1024, 1000000);
}
static void gpu_agrees_2048(void) {
  if (max_res() >= 2048) check_resolution(2048, 1000000);
}

int main(void) {
  if (!vx_gpu_available()) CHECK_SKIP("no usable CUDA device");
  RUN(gpu_agrees_64);
  RUN(gpu_agrees_256);
  RUN(gpu_agrees_1024);
  RUN(gpu_agrees_2048);
  return check_summary();
}
