/* SPDX-License-Identifier: Apache-2.0 */
/* test_sample_agree.c - one answer whatever runs the rule, on the CPU: the sampler's baseline and
 * AVX2 builds and any thread count give the same bits, and the band cache stays within its bound
 * of the rule, on a scan-like mesh with a part thinner than a voxel (sample_scan.h) at several
 * resolutions, points shuffled within a voxel of the surface and uniform ones.
 * test_gpu_sample_agree.cu checks the GPU against the same runs. */
#define _POSIX_C_SOURCE 200809L
#include "sample_scan.h"
#include "sample_ref.h"


static vx_status run(const vx_tree *t, int cache, int threads, const float *p, uint64_t n,
                     scan_run *r) {
  vx_sample_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.band_cache = cache;
  o.threads = threads;
  vx_error e;
  memset(&e, 0, sizeof e);
  vx_status s = vx_tree_sample(t, &o, p, n, r->d, r->g, r->f, NULL, &e);
  CHECK_MSG(s == VX_OK, "%s", e.msg);
  return s;
}

static int cmp_double(const void *x, const void *y) {
  const double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

/* The rule's run r and the cache's c against the exact signed distance (sample_ref.h) at the
 * first m points (those near the surface): within the band, the error's quantiles in voxels, and
 * the signs beyond a voxel. The cache may not be farther from the truth than the rule is, beyond
 * its bound of the rule. */
static void check_reference(const vx_soup *mesh, const vx_tree_info *ti, const float *p,
                            uint64_t m, const scan_run *r, const scan_run *c) {
  double *er = (double *)malloc(m * sizeof(double)), *ec = (double *)malloc(m * sizeof(double));
  uint64_t k = 0, signs_r = 0, signs_c = 0;
  for (uint64_t i = 0; i < m && er && ec; i++) {
    const double ex = ref_sdf(mesh, p + 3 * i) / ti->scale;
    if (fabs(ex) > ti->band) continue;
    const double dr = r->d[i] / ti->scale, dc = c->d[i] / ti->scale;
    er[k] = fabs(dr - ex);
    ec[k++] = fabs(dc - ex);
    signs_r += fabs(ex) > 1.0 && (ex < 0.0) != (dr < 0.0);
    signs_c += fabs(ex) > 1.0 && (ex < 0.0) != (dc < 0.0);
  }
  CHECK(k > m / 2);
  if (k) {
    qsort(er, k, sizeof *er, cmp_double);
    qsort(ec, k, sizeof *ec, cmp_double);
    const uint64_t q = (uint64_t)(0.99 * (double)(k - 1));
    fprintf(stderr, "  against the exact distance, %llu points in the band: rule median %.4f, "
            "99%% %.4f, max %.4f voxel, %llu wrong signs; band cache median %.4f, 99%% %.4f, "
            "max %.4f, %llu wrong signs\n", (unsigned long long)k, er[k / 2], er[q], er[k - 1],
            (unsigned long long)signs_r, ec[k / 2], ec[q], ec[k - 1], (unsigned long long)signs_c);
    CHECK(er[q] <= 0.5 && ec[q] <= 0.5);
    CHECK(ec[k - 1] <= er[k - 1] + SCAN_CACHE_TOL);
    CHECK(signs_r == 0 && signs_c == 0);
  }
  free(er);
  free(ec);
}

static void check_resolution(uint32_t res, uint64_t n) {
  vx_soup mesh;
  memset(&mesh, 0, sizeof mesh);
  vx_tree *t = scan_tree_on(res, VX_DEVICE_CPU, &mesh);
  if (!t) return;
  const vx_tree_info ti = scan_info(t);
  float *p = scan_points(t, n, n - n / 4, 1.0f, res);
  scan_run a, b, c;
  CHECK(p && scan_run_alloc(&a, n) == 0 && scan_run_alloc(&b, n) == 0 &&
        scan_run_alloc(&c, n) == 0);
  char what[96];
  /* the rule: all threads against one, the baseline build against the processor's */
  run(t, 0, 0, p, n, &a);
  run(t, 0, 1, p, n, &b);
  snprintf(what, sizeof what, "%u^3, rule, 1 thread against all", res);
  scan_same_bits(what, n, &a, &b, ti.scale);
  setenv("VOXLOD_CPU", "baseline", 1);
  run(t, 0, 0, p, n, &b);
  unsetenv("VOXLOD_CPU");
  snprintf(what, sizeof what, "%u^3, rule, baseline build against this processor's", res);
  scan_same_bits(what, n, &a, &b, ti.scale);
  /* the band cache against the rule */
  run(t, 1, 0, p, n, &c);
  uint64_t answered = 0, signs = 0, over = 0;
  const double worst = scan_cache_error(n, &a, &c, ti.scale, &answered, &signs);
  for (uint64_t i = 0; i < n; i++) {
    const int o = fabs((double)a.d[i] - c.d[i]) > SCAN_CACHE_TOL * ti.scale;
    if (o && over < 5)
      fprintf(stderr, "    point %llu (grid %.3f %.3f %.3f): rule %.4f voxel (flags %u), cache %.4f "
              "(flags %u)\n", (unsigned long long)i, (p[3 * i] - ti.origin[0]) / ti.scale,
              (p[3 * i + 1] - ti.origin[1]) / ti.scale, (p[3 * i + 2] - ti.origin[2]) / ti.scale,
              a.d[i] / ti.scale, a.f[i], c.d[i] / ti.scale, c.f[i]);
    over += o;
  }
  fprintf(stderr, "  %u^3, band cache against the rule: %llu of %llu points differ, largest "
          "%.4f voxel, %llu over %.1f, %llu signs beyond a voxel\n", res,
          (unsigned long long)answered, (unsigned long long)n, worst, (unsigned long long)over,
          SCAN_CACHE_TOL, (unsigned long long)signs);
  CHECK(answered > n / 10); /* the cache answered */
  CHECK(signs == 0);
  CHECK_MSG(worst <= SCAN_CACHE_TOL && over == 0, "%.4f voxel from the rule", worst);
  check_reference(&mesh, &ti, p, 400, &a, &c);
  /* built on one thread: the same cache */
  run(t, 1, 1, p, n, &b);
  snprintf(what, sizeof what, "%u^3, band cache, 1 thread against all", res);
  scan_same_bits(what, n, &c, &b, ti.scale);
  /* a CPU sampler against vx_tree_sample, at full detail and at cuts (where a node without a
   * usable plane gives way to its children, down to voxels, re-signed ones included) */
  vx_sampler_opts so;
  memset(&so, 0, sizeof so);
  so.struct_size = sizeof so;
  so.device = VX_DEVICE_CPU;
  vx_sampler *sm = NULL;
  vx_error e;
  memset(&e, 0, sizeof e);
  CHECK_MSG(vx_sampler_create(t, &so, &sm, &e) == VX_OK, "%s", e.msg);
  for (int level = (int)ti.depth; sm && level >= (int)ti.depth - 3; level--) {
    vx_sample_opts o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.lod = level == (int)ti.depth ? VX_LOD_FINEST : VX_LOD_LEVEL;
    o.level = level;
    CHECK_MSG(vx_tree_sample(t, &o, p, n, a.d, a.g, a.f, NULL, &e) == VX_OK, "%s", e.msg);
    CHECK_MSG(vx_sampler_sample(sm, &o, p, n, b.d, b.g, b.f, NULL, &e) == VX_OK, "%s", e.msg);
    snprintf(what, sizeof what, "%u^3, level %d, a CPU sampler against vx_tree_sample", res,
             level);
    scan_same_bits(what, n, &a, &b, ti.scale);
  }
  vx_sampler_free(sm);
  vx_soup_free(&mesh);
  free(p);
  scan_run_free(&a);
  scan_run_free(&b);
  scan_run_free(&c);
  vx_tree_free(t);
}

static void sample_scan_64(void) { check_resolution(64, 100000); }
static void sample_scan_256(void) { check_resolution(256, 200000); }

int main(void) {
  RUN(sample_scan_64);
  RUN(sample_scan_256);
  return check_summary();
}
