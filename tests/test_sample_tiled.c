/* SPDX-License-Identifier: Apache-2.0 */
/* test_sample_tiled.c - vx_tiled_file_sample (include/voxlod/sample.h, TILED SAMPLING): up to
 * 16384^3 bit for bit the joined tree's vx_tree_sample (distance, gradient and flags) at full
 * detail and at every cut, on points everywhere (dense at the tiles' faces, edges and corners,
 * random in and around the box, near the surface, non-finite), with a tile cache of any size and
 * any thread count; past it (32768^3 in tiles of 4096^3) against the exact distance to the mesh
 * within the band. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <unistd.h>

#include "lib/tiled_arena.h" /* first: it sees the library's experimental declarations */
#include "tiled_scene.h"
#include "sample_ref.h"
#include "voxlod/sample.h"

static char dir[64];

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rnd(void) { return tiled_rnd(&rng_state); }

/* Mesh m at res^3 in tiles of 2^T against its joined tree: every cut, bit for bit (m freed). */
static void joined_equal_mesh(vx_mesh *m, uint32_t res, uint32_t T, int closed,
                              const double *slab) {
  char path[128];
  snprintf(path, sizeof path, "%s/s%u_%u.svo", dir, res, T);
  vx_error e;
  CHECK_MSG(tiled_convert(m, res, T, VX_DEVICE_CPU, 0, 2, path, &e) == VX_OK, "%s", e.msg);
  vx_mesh_free(m);
  vx_tree *t = NULL;
  vx_tiled_file *f = NULL;
  CHECK(vx_tree_load(path, NULL, &t, &e) == VX_OK);
  CHECK_MSG(vx_tiled_file_open(path, NULL, &f, &e) == VX_OK, "%s", e.msg);
  if (!t || !f) return;
  vx_tree_info ti;
  memset(&ti, 0, sizeof ti);
  ti.struct_size = sizeof ti;
  vx_tree_get_info(t, &ti);
  uint64_t n = 0;
  float *p = tiled_points(&ti, t, T, 12000, 6000, 6000, 2.0f, &rng_state, &n);
  if (slab) { /* the first points in the box slab[0 .. 5] instead (lo, hi) */
    for (uint64_t i = 0; i < 6000; i++)
      for (int a = 0; a < 3; a++) p[3 * i + a] = (float)(slab[a] + rnd() * (slab[3 + a] - slab[a]));
  }
  float *d0 = (float *)malloc(n * sizeof(float)), *d1 = (float *)malloc(n * sizeof(float));
  float *g0 = (float *)malloc(3 * n * sizeof(float)), *g1 = (float *)malloc(3 * n * sizeof(float));
  uint8_t *f0 = (uint8_t *)malloc(n), *f1 = (uint8_t *)malloc(n);
  uint64_t far = 0, near = 0, total_diff = 0;
  for (int level = -1; level <= (int)ti.depth; level++) {
    vx_sample_opts o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.lod = level < 0 ? VX_LOD_FINEST : VX_LOD_LEVEL;
    o.level = level < 0 ? 0 : level;
    vx_tiled_sample_opts to;
    memset(&to, 0, sizeof to);
    to.struct_size = sizeof to;
    to.cache_bytes = level % 3 == 0 ? 1 : 0; /* a cache that holds nothing between groups */
    o.threads = level % 2 ? 1 : 2;
    CHECK_MSG(vx_tree_sample(t, &o, p, n, d0, g0, f0, NULL, &e) == VX_OK, "%s", e.msg);
    CHECK_MSG(vx_tiled_file_sample(f, &o, &to, p, n, d1, g1, f1, NULL, &e) == VX_OK, "%s",
              e.msg);
    uint64_t diff = 0, first = UINT64_MAX;
    for (uint64_t i = 0; i < n; i++) {
      const int same = memcmp(d0 + i, d1 + i, 4) == 0 &&
                       memcmp(g0 + 3 * i, g1 + 3 * i, 12) == 0 && f0[i] == f1[i];
      if (!same && first == UINT64_MAX) first = i;
      diff += !same;
      if (level < 0) {
        far += (f0[i] & VX_SAMPLE_FAR) != 0;
        near += (f0[i] & VX_SAMPLE_NEAR) != 0;
      }
    }
    total_diff += diff;
    if (vx_gpu_available() && level % 2) { /* on the GPU (steps 1 to 4): the same bits */
      o.device = VX_DEVICE_GPU;
      CHECK_MSG(vx_tiled_file_sample(f, &o, &to, p, n, d1, g1, f1, NULL, &e) == VX_OK, "%s",
                e.msg);
      const uint64_t gdiff = tiled_samples_differ(n, d0, g0, f0, d1, g1, f1);
      CHECK_MSG(gdiff == 0, "GPU, level %d: %llu of %llu points differ", level,
                (unsigned long long)gdiff, (unsigned long long)n);
    }

    CHECK_MSG(diff == 0,
              "%u^3 in %u^3 tiles, level %d: %llu of %llu points differ (first %llu at %g %g %g: "
              "joined %.9g flags %u, tiled %.9g flags %u)",
              res, 1u << T, level, (unsigned long long)diff, (unsigned long long)n,
              (unsigned long long)first, first < n ? p[3 * first] : 0.0,
              first < n ? p[3 * first + 1] : 0.0, first < n ? p[3 * first + 2] : 0.0,
              first < n ? d0[first] : 0.0, first < n ? f0[first] : 0u, first < n ? d1[first] : 0.0,
              first < n ? f1[first] : 0u);
  }
  fprintf(stderr, "  %u^3 in %llu tiles of %u^3: %llu points x %u cuts, %llu far, %llu near at "
          "full detail: %llu differ\n", res, (unsigned long long)ti.tile_count, 1u << T,
          (unsigned long long)n, ti.depth + 2, (unsigned long long)far, (unsigned long long)near,
          (unsigned long long)total_diff);
  CHECK(!closed || (far > 1000 && near > 1000));
  free(p);
  free(d0);
  free(d1);
  free(g0);
  free(g1);
  free(f0);
  free(f1);
  vx_tree_free(t);
  vx_tiled_file_close(f);
  remove(path);
}

static void joined_equal(uint32_t res, uint32_t T) {
  joined_equal_mesh(tiled_scene(), res, T, 1, NULL);
}

static vx_mesh *mesh_of(vx_soup *s) { /* the soup freed */
  vx_mesh *m = tiled_mesh_of(s);
  vx_soup_free(s);
  return m;
}

/* Parts thinner than a voxel (re-signed voxels, sampler/resigned.h) across tiles: a tilted plate,
 * a box with a fin 0.3 voxel thick in one layer of voxels, found by the closure from where it
 * meets the box, across several tiles of 4^3. */
static void thin_parts(void) {
  vx_soup m;
  memset(&m, 0, sizeof m);
  const double lo[3] = {-0.8, -0.6, -0.004}, hi[3] = {0.8, 0.6, 0.004};
  const double a[3] = {0.6, 0.48, 0.64};
  meshgen_box(&m, lo, hi);
  meshgen_rotate(&m, a, 0.7);
  joined_equal_mesh(mesh_of(&m), 64, 3, 0, NULL);
  const double body_lo[3] = {-0.5, -0.5, -0.5}, body_hi[3] = {0.5, 0.5, 0.5};
  double fin_lo[3] = {0.4, -0.3, 0.0}, fin_hi[3] = {1.2, 0.3, 0.01};
  memset(&m, 0, sizeof m);
  meshgen_box(&m, body_lo, body_hi);
  meshgen_box(&m, fin_lo, fin_hi);
  /* the grid (the fin's height does not move the bounding box), then the fin in one layer */
  vx_mesh *g = mesh_of(&m);
  char path[128];
  snprintf(path, sizeof path, "%s/grid.svo", dir);
  vx_error e;
  CHECK(tiled_convert(g, 64, 2, VX_DEVICE_CPU, 0, 2, path, &e) == VX_OK);
  vx_mesh_free(g);
  vx_tiled_file *f = NULL;
  CHECK(vx_tiled_file_open(path, NULL, &f, &e) == VX_OK);
  vx_tree_info ti;
  memset(&ti, 0, sizeof ti);
  ti.struct_size = sizeof ti;
  if (f) vx_tiled_file_get_info(f, &ti);
  vx_tiled_file_close(f);
  remove(path);
  const double k = floor((0.05 - ti.origin[2]) / ti.scale);
  fin_lo[2] = ti.origin[2] + (k + 0.35) * ti.scale;
  fin_hi[2] = ti.origin[2] + (k + 0.65) * ti.scale;
  memset(&m, 0, sizeof m);
  meshgen_box(&m, body_lo, body_hi);
  meshgen_box(&m, fin_lo, fin_hi);
  const double slab[6] = {fin_lo[0], fin_lo[1], fin_lo[2] - ti.scale,
                          fin_hi[0] + ti.scale, fin_hi[1], fin_hi[2] + ti.scale};
  joined_equal_mesh(mesh_of(&m), 64, 2, 0, slab);
}

static void small_tiles(void) { joined_equal(64, 3); }
static void tiles_of_16(void) { joined_equal(128, 4); }
static void tiles_of_2(void) { joined_equal(32, 1); }
static void tiles_of_32(void) { joined_equal(256, 5); }

/* Options and arguments refused with a message. */
static void refusals(void) {
  vx_mesh *m = tiled_scene();
  char path[128];
  snprintf(path, sizeof path, "%s/r.svo", dir);
  vx_error e;
  CHECK(tiled_convert(m, 32, 3, VX_DEVICE_CPU, 0, 2, path, &e) == VX_OK);
  vx_mesh_free(m);
  vx_tiled_file *f = NULL;
  CHECK(vx_tiled_file_open(path, NULL, &f, &e) == VX_OK);
  if (!f) return;
  float p[3] = {0, 0, 0}, d = 0;
  vx_sample_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.device = (vx_device)7;
  CHECK(vx_tiled_file_sample(f, &o, NULL, p, 1, &d, NULL, NULL, NULL, &e) == VX_ERR_INVALID_ARG);
  o.device = VX_DEVICE_GPU; /* without a GPU: said so */
  if (!vx_gpu_available())
    CHECK(vx_tiled_file_sample(f, &o, NULL, p, 1, &d, NULL, NULL, NULL, &e) == VX_ERR_NO_GPU);
  o.device = VX_DEVICE_AUTO;
  o.band_cache = 1;
  CHECK(vx_tiled_file_sample(f, &o, NULL, p, 1, &d, NULL, NULL, NULL, &e) == VX_ERR_INVALID_ARG);
  o.band_cache = 0;
  o.lod = VX_LOD_LEVEL;
  o.level = 6;
  CHECK(vx_tiled_file_sample(f, &o, NULL, p, 1, &d, NULL, NULL, NULL, &e) == VX_ERR_INVALID_ARG);
  o.lod = VX_LOD_FINEST;
  CHECK(vx_tiled_file_sample(f, &o, NULL, NULL, 1, &d, NULL, NULL, NULL, &e) ==
        VX_ERR_INVALID_ARG);
  CHECK(vx_tiled_file_sample(f, &o, NULL, NULL, 0, NULL, NULL, NULL, NULL, &e) == VX_OK);
  float q[3] = {NAN, 0, 0};
  o.nonfinite = VX_NONFINITE_FAIL;
  CHECK(vx_tiled_file_sample(f, &o, NULL, q, 1, &d, NULL, NULL, NULL, &e) == VX_ERR_INVALID_ARG);
  CHECK(strstr(e.msg, "point 0") != NULL);
  vx_tiled_sample_opts to;
  memset(&to, 0, sizeof to);
  to.struct_size = 3;
  o.nonfinite = VX_NONFINITE_NAN;
  CHECK(vx_tiled_file_sample(f, &o, &to, p, 1, &d, NULL, NULL, NULL, &e) == VX_ERR_INVALID_ARG);
  vx_sample_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK(vx_tiled_file_sample(f, NULL, NULL, p, 1, &d, NULL, NULL, &st, &e) == VX_OK);
  CHECK(st.points == 1 && st.used_gpu == 0);
  vx_tiled_file_close(f);
  remove(path);
}

/* Past 16384^3: 32768^3 in tiles of 4096^3 (tiled_corner_sphere), against the exact distance
 * within the band. */
static void finer_than_one_tree(void) {
  vx_soup s;
  uint64_t sphere_tris = 0;
  char path[128];
  snprintf(path, sizeof path, "%s/big.svo", dir);
  vx_error e;
  clock_t c0 = clock();
  vx_tree_info ti;
  vx_tiled_file *f = tiled_corner_file(path, &s, &ti, &sphere_tris);
  fprintf(stderr, "  converted in %.1f s CPU\n", (double)(clock() - c0) / CLOCKS_PER_SEC);
  if (!f) {
    vx_soup_free(&s);
    return;
  }
  /* points within 2 band widths of the sphere (its facets, not the sphere: the exact distance
   * decides), and some anywhere in and around the box */
  const uint64_t n = 4000, nr = 1000;
  float *p = (float *)malloc((n + nr) * 3 * sizeof(float));
  for (uint64_t i = 0; i < n; i++)
    tiled_point_near(&s, sphere_tris, 2.0 * ti.band * ti.scale, &rng_state, p + 3 * i);
  for (uint64_t i = n; i < n + nr; i++) /* half anywhere, half inside the small sphere */
    for (int k = 0; k < 3; k++)
      p[3 * i + k] = i % 2 ? (float)(ti.origin[k] + (rnd() * 1.2 - 0.1) * 32768.0 * ti.scale)
                           : (float)(0.125 + (rnd() - 0.5) * 0.004);
  float *d = (float *)malloc((n + nr) * sizeof(float));
  uint8_t *fl = (uint8_t *)malloc(n + nr);
  vx_sample_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK_MSG(vx_tiled_file_sample(f, NULL, NULL, p, n + nr, d, NULL, fl, &st, &e) == VX_OK, "%s",
            e.msg);
  uint64_t in_band = 0, over = 0, bad_sign = 0, far_wrong = 0;
  double worst = 0.0;
  for (uint64_t i = 0; i < n + nr; i++) {
    const double ex = ref_sdf(&s, p + 3 * i) / ti.scale, got = d[i] / ti.scale;
    if (fabs(ex) <= ti.band) {
      in_band++;
      over += fabs(got - ex) > 0.5;
      worst = fabs(got - ex) > worst ? fabs(got - ex) : worst;
      if (fabs(ex) > 1.0 && (ex < 0) != (got < 0)) bad_sign++;
    } else if (fabs(ex) > ti.band + 1.0) {
      /* beyond the band: +-band or more, with the right sign */
      far_wrong += !(fabs(got) >= ti.band - 0.5) || (ex < 0) != (got < 0);
    }
  }
  fprintf(stderr, "  32768^3 in %llu tiles of 4096^3: %llu points in the band, error max %.3f "
          "voxel, %llu over 0.5, %llu wrong signs; %llu far points wrong; %.1f ms\n",
          (unsigned long long)ti.tile_count, (unsigned long long)in_band, worst,
          (unsigned long long)over, (unsigned long long)bad_sign, (unsigned long long)far_wrong,
          st.ms_total);
  CHECK(in_band > n / 2);
  CHECK_MSG((double)over <= 0.001 * (double)in_band, "%llu of %llu over 0.5 voxel",
            (unsigned long long)over, (unsigned long long)in_band);
  CHECK(bad_sign == 0);
  CHECK(far_wrong == 0);
  float *d0 = (float *)malloc((n + nr) * sizeof(float));
  memcpy(d0, d, (n + nr) * sizeof(float));
  /* cut at the tiles' roots (the top tree) and below them */
  for (int level = 2; level <= 5; level++) {
    vx_sample_opts o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.lod = VX_LOD_LEVEL;
    o.level = level;
    CHECK_MSG(vx_tiled_file_sample(f, &o, NULL, p, n + nr, d, NULL, fl, NULL, &e) == VX_OK, "%s",
              e.msg);
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < n + nr; i++) wrong += !isfinite(d[i]);
    CHECK(wrong == 0);
  }
  /* again on the same handle (its windows and tiles kept from the calls before), and with a
   * cache too small for one window (every window built again, its tiles read again): the same
   * bits */
  for (int pass = 0; pass < 2; pass++) {
    vx_tiled_sample_opts to;
    memset(&to, 0, sizeof to);
    to.struct_size = sizeof to;
    to.cache_bytes = pass ? 4096 : 0;
    CHECK_MSG(vx_tiled_file_sample(f, NULL, &to, p, n + nr, d, NULL, fl, NULL, &e) == VX_OK,
              "%s", e.msg);
    CHECK(memcmp(d, d0, (n + nr) * sizeof(float)) == 0);
  }
  /* the search on the GPU, on the points near the sphere and some near the far corner's cube (two
   * windows apart, fewer than the cache keeps): the same bits as the CPU; the windows' copies
   * there kept with them for the next call, within a budget of one window's bytes (every upload
   * drops the others), and dropped with windows that leave a cache too small for one */
  vx_tile_cache *cache = NULL;
  if (vx_gpu_available() && vx_tiled_file_cache(f, 0, &cache, &e) == VX_OK) {
    const uint64_t nq = n + 256;
    float *q = (float *)malloc(nq * 3 * sizeof(float));
    float *dq = (float *)malloc(nq * sizeof(float));
    memcpy(q, p, n * 3 * sizeof(float));
    for (uint64_t i = n; i < nq; i++)
      for (int k = 0; k < 3; k++) q[3 * i + k] = (float)(0.997 + rnd() * 0.0025);
    CHECK_MSG(vx_tiled_file_sample(f, NULL, NULL, q, nq, dq, NULL, fl, NULL, &e) == VX_OK, "%s",
              e.msg);
    vx_sample_opts o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.device = VX_DEVICE_GPU;
    int kept = 0;
    for (int pass = 0; pass < 4; pass++) {
      vx_tiled_sample_opts to;
      memset(&to, 0, sizeof to);
      to.struct_size = sizeof to;
      to.cache_bytes = pass == 3 ? 4096 : 0;
      vx_tile_cache_set_gpu_budget(cache, pass == 2 ? 1 : 0);
      memset(d, 0, nq * sizeof(float));
      CHECK_MSG(vx_tiled_file_sample(f, &o, &to, q, nq, d, NULL, fl, NULL, &e) == VX_OK,
                "GPU pass %d: %s", pass, e.msg);
      CHECK_MSG(memcmp(d, dq, nq * sizeof(float)) == 0, "GPU pass %d differs", pass);
      const int now = vx_tile_cache_windows_on_gpu(cache);
      if (pass == 0) kept = now;
      CHECK_MSG(pass == 0 ? now >= 2 : pass == 1 ? now == kept : pass == 2 ? now == 1 : now <= 1,
                "GPU pass %d: %d windows on the GPU (%d after the first)", pass, now, kept);
    }
    fprintf(stderr, "  the same on the GPU: %d windows kept there between calls\n", kept);
    free(q);
    free(dq);
  }
  free(d0);
  free(p);
  free(d);
  free(fl);
  vx_soup_free(&s);
  vx_tiled_file_close(f);
  remove(path);
}

int main(int argc, char **argv) {
  snprintf(dir, sizeof dir, "/tmp/voxlod-stiled-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  (void)tiled_slurp;
  RUN_ONE(refusals);
  RUN_ONE(small_tiles);
  RUN_ONE(tiles_of_16);
  RUN_ONE(tiles_of_2);
  RUN_ONE(tiles_of_32);
  RUN_ONE(thin_parts);
  RUN_ONE(finer_than_one_tree);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) return 1;
  return check_summary();
}
