/* SPDX-License-Identifier: Apache-2.0 */
/* sample_scan.h - what the sampler's agreement tests share (test_sample_agree.c on the CPU,
 * test_gpu_sample_agree.cu against the GPU): a scan-like closed mesh with a part thinner than a
 * voxel, its tree at a resolution, points within a voxel of its surface and uniform in its box,
 * and comparisons of two runs, bit for bit or within a bound in voxels.
 *
 * The scan: a sphere of many small triangles whose radius carries smooth bumps of several
 * wavelengths and per-vertex noise (a scanner's roughness), with a blade through it: a closed,
 * tilted box 0.35 voxel thick at the given resolution, standing out of the surface (a part that
 * no corner sample resolves, held by voxels the thin rule re-signs). C and CUDA C++ alike.
 */
#ifndef VOXLOD_TESTS_SAMPLE_SCAN_H
#define VOXLOD_TESTS_SAMPLE_SCAN_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "voxlod.h"
#include "check.h"
#include "meshgen.h"

/* A deterministic value in [-1, 1) from an integer (splitmix64). */
static double scan_noise(uint64_t k) {
  uint64_t z = k + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* The bumpy, noisy sphere (radius about 1 around the origin, nu x nv vertices). */
static int scan_sphere(vx_soup *m, int nu, int nv) {
  const int nvert = 2 + nu * (nv - 1);
  float *v = (float *)malloc((size_t)nvert * 3 * sizeof(float));
  if (!v) return -1;
  for (int k = 0; k < nvert; k++) {
    double th, ph;
    if (k < 2) {
      th = k == 0 ? 0.0 : M_PI;
      ph = 0.0;
    } else {
      th = M_PI * (1 + (k - 2) / nu) / nv;
      ph = 2.0 * M_PI * ((k - 2) % nu) / nu;
    }
    const double r = 1.0 + 0.06 * sin(5.0 * ph) * sin(4.0 * th) +
                     0.02 * sin(17.0 * ph + 1.0) * cos(13.0 * th) + 0.002 * scan_noise((uint64_t)k);
    v[3 * k + 0] = (float)(r * sin(th) * cos(ph));
    v[3 * k + 1] = (float)(r * sin(th) * sin(ph));
    v[3 * k + 2] = (float)(r * cos(th));
  }
#define SCAN_V(i, j) ((i) == 0 ? 0 : (i) == nv ? 1 : 2 + ((i) - 1) * nu + ((j) % nu))
  int rc = 0;
  for (int i = 0; i < nv && !rc; i++)
    for (int j = 0; j < nu && !rc; j++) {
      const int a = SCAN_V(i, j), b = SCAN_V(i, j + 1), c = SCAN_V(i + 1, j),
                d = SCAN_V(i + 1, j + 1);
      const double th = M_PI * (i + 0.5) / nv, ph = 2.0 * M_PI * (j + 0.5) / nu;
      const double out[3] = {sin(th) * cos(ph), sin(th) * sin(ph), cos(th)};
      if (i > 0) rc |= meshgen_tri(m, v, a, b, d, out);
      if (i < nv - 1) rc |= meshgen_tri(m, v, a, d, c, out);
    }
#undef SCAN_V
  free(v);
  return rc;
}

/* The scan for a tree of res^3: the sphere and a blade 0.35 voxel thick. */
static int scan_mesh(vx_soup *m, uint32_t res) {
  const int nu = res >= 1024 ? 768 : 384, nv = nu / 2;
  int rc = scan_sphere(m, nu, nv);
  /* the grid spans the bounding box (about 2.5 wide with the blade) */
  const double t = 0.35 * 2.5 / res;
  const double lo[3] = {0.3, -0.25, -0.5 * t}, hi[3] = {1.25, 0.25, 0.5 * t};
  vx_soup b;
  memset(&b, 0, sizeof b);
  rc |= meshgen_box(&b, lo, hi);
  const double a[3] = {0.267261, 0.534522, 0.801784};
  meshgen_rotate(&b, a, 0.45);
  if (!rc) rc = vx_soup_append(m, b.pos, b.tri_count, NULL) == VX_OK ? 0 : -1;
  vx_soup_free(&b);
  return rc;
}

/* The tree of the scan at res^3, converted on `device` (the GPU's build is the CPU's, byte for
 * byte: test_gpu_build), or NULL; the mesh into *keep when not NULL (free it with
 * vx_soup_free). */
static vx_tree *scan_tree_on(uint32_t res, vx_device device, vx_soup *keep) {
  vx_soup m;
  memset(&m, 0, sizeof m);
  if (scan_mesh(&m, res) != 0) {
    CHECK_MSG(0, "no memory for the scan mesh");
    vx_soup_free(&m);
    return NULL;
  }
  vx_mesh *mesh = NULL;
  vx_error e;
  memset(&e, 0, sizeof e);
  vx_tree *t = NULL;
  if (vx_mesh_from_arrays(m.pos, m.tri_count * 3, NULL, m.tri_count, &mesh, &e) == VX_OK) {
    vx_convert_opts o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.resolution = res;
    o.device = device;
    vx_conversion *b = NULL;
    if (vx_convert(mesh, &o, &b, &e) == VX_OK) t = vx_conversion_take_tree(b);
    vx_conversion_free(b);
  }
  CHECK_MSG(t != NULL, "the scan at %u^3: %s", res, e.msg);
  vx_mesh_free(mesh);
  if (keep) *keep = m;
  else vx_soup_free(&m);
  return t;
}

static vx_tree_info scan_info(const vx_tree *t) {
  vx_tree_info i;
  memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  vx_tree_get_info(t, &i);
  return i;
}

/* n points: the first `near` shuffled within `spread` voxels of surface voxels' centres, the
 * rest uniform in the root box and a band around it (seeded). */
static float *scan_points(const vx_tree *t, uint64_t n, uint64_t near, float spread,
                          uint64_t seed) {
  float *p = (float *)malloc((size_t)n * 3 * sizeof(float));
  if (!p) return NULL;
  vx_surface_points_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.spread = spread;
  o.seed = seed;
  o.shuffle = 1;
  vx_error e;
  memset(&e, 0, sizeof e);
  CHECK_MSG(vx_tree_surface_points(t, &o, near, p, &e) == VX_OK, "%s", e.msg);
  const vx_tree_info ti = scan_info(t);
  const double R = (double)ti.resolution * ti.scale, pad = 8.0 * ti.scale;
  for (uint64_t i = near; i < n; i++)
    for (int k = 0; k < 3; k++)
      p[3 * i + k] = (float)(ti.origin[k] - pad +
                             (R + 2.0 * pad) * 0.5 * (1.0 + scan_noise(seed * 1000003u + 3 * i + k)));
  return p;
}

/* The results of one run. */
typedef struct scan_run {
  float *d, *g;
  uint8_t *f;
} scan_run;

static int scan_run_alloc(scan_run *r, uint64_t n) {
  r->d = (float *)malloc((size_t)n * sizeof(float));
  r->g = (float *)malloc((size_t)n * 3 * sizeof(float));
  r->f = (uint8_t *)malloc((size_t)n);
  return r->d && r->g && r->f ? 0 : -1;
}

static void scan_run_free(scan_run *r) {
  free(r->d);
  free(r->g);
  free(r->f);
}

/* Two runs bit for bit: distances, gradients and flags. Prints the first points that differ. */
static int scan_same_bits(const char *what, uint64_t n, const scan_run *a, const scan_run *b,
                          double scale) {
  uint64_t differ = 0;
  double worst = 0.0;
  for (uint64_t i = 0; i < n; i++) {
    const int same = memcmp(&a->d[i], &b->d[i], sizeof(float)) == 0 &&
                     memcmp(&a->g[3 * i], &b->g[3 * i], 3 * sizeof(float)) == 0 &&
                     a->f[i] == b->f[i];
    if (same) continue;
    if (differ < 5)
      fprintf(stderr, "    point %llu: %.9g (flags %u) against %.9g (flags %u)\n",
              (unsigned long long)i, (double)a->d[i], a->f[i], (double)b->d[i], b->f[i]);
    differ++;
    const double e = fabs((double)a->d[i] - b->d[i]) / scale;
    if (e > worst) worst = e;
  }
  fprintf(stderr, "  %s: %llu points, %llu not bit-identical (largest difference %.4g voxel)\n",
          what, (unsigned long long)n, (unsigned long long)differ, worst);
  CHECK_MSG(differ == 0, "%s: %llu of %llu points differ", what, (unsigned long long)differ,
            (unsigned long long)n);
  return differ == 0;
}

/* The band cache's bound against the rule (include/voxlod/sample.h, BAND CACHE): within half a
 * voxel at every point, the same sign beyond a voxel. */
#define SCAN_CACHE_TOL 0.5

/* The band cache's run c against the rule's r on the same points: the largest difference in
 * voxels (NaN on both sides counts as none), and how many differ in sign beyond 1 voxel. */
static double scan_cache_error(uint64_t n, const scan_run *r, const scan_run *c, double scale,
                               uint64_t *answered, uint64_t *signs) {
  double worst = 0.0;
  *answered = 0;
  *signs = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (isnan(r->d[i]) && isnan(c->d[i])) continue;
    const double e = fabs((double)r->d[i] - c->d[i]) / scale;
    *answered += e != 0.0 || r->f[i] != c->f[i];
    if (isnan(e)) worst = INFINITY; /* NaN on one side */
    else if (e > worst) worst = e;
    *signs += fabs((double)r->d[i]) > scale && (r->d[i] < 0.0f) != (c->d[i] < 0.0f);
  }
  return worst;
}

#endif
