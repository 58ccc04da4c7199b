/* SPDX-License-Identifier: Apache-2.0 */
/* test_render_tiled.c - vx_renderer_create_tiled (include/voxlod/render.h) on the CPU:
 * - 256^3 in tiles of 64^3: the same images as the joined tree (vx_tree_load) at the finest level,
 *   at every cut at or above the tiles' roots (bit for bit), below them and with the pixel-cone
 *   rule (within the seams' crack rule), from outside, between the tiles and close up;
 * - a budget that holds a few tiles: what is resident stays within it, the far tiles are drawn
 *   from their coarse levels, the image still shows the surface;
 * - streaming: frames never wait; once the loader has read what the view wants, the image is the
 *   one a waiting frame draws;
 * - past 16384^3 (32768^3 in tiles of 4096^3): against a brute-force ray cast of the mesh in
 *   double precision;
 * - refusals: a budget below the tiles' roots, bad options. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "lib/internal.h"
#include "lib/tiled_arena.h"
#include "lib/tiled_render.h"
#define W 160 /* the images (tiled_view.h) */
#define H 120
#include "tiled_view.h"
#include "voxlod/render.h"

static char dir[64];


/* Pixels whose colour differs, and whose hit / miss differs. */
static void compare(const image *a, const image *b, double *px_diff, double *hit_diff) {
  int d = 0, h = 0;
  for (int i = 0; i < W * H; i++) {
    d += memcmp(a->rgb + 3 * i, b->rgb + 3 * i, 3) != 0;
    h += (a->depth[i] < INFINITY) != (b->depth[i] < INFINITY);
  }
  *px_diff = (double)d / (W * H);
  *hit_diff = (double)h / (W * H);
}

static double hits(const image *a) {
  int n = 0;
  for (int i = 0; i < W * H; i++) n += a->depth[i] < INFINITY;
  return (double)n / (W * H);
}



/* 256^3 in tiles of 64^3 against the joined tree. */
static void against_joined(void) {
  char tp[128], up[128];
  vx_tiled_file *f;
  vx_tree *u;
  tv_files(dir, 256, 6, tp, up, &f, &u);
  vx_error e;
  vx_renderer *ru = tv_renderer(NULL, u, VX_DEVICE_CPU, 0, 0);
  vx_renderer *rt = tv_renderer(f, NULL, VX_DEVICE_CPU, 0, 0);
  vx_renderer_info ri;
  memset(&ri, 0, sizeof ri);
  ri.struct_size = sizeof ri;
  CHECK(vx_renderer_get_info(rt, &ri) == VX_OK);
  CHECK(ri.tiles > 8 && ri.tiles < 64 && ri.budget_bytes > 0 && ri.coarse_level == 8);

  vx_camera cams[3];
  tv_camera(&cams[0], 2.6, 1.5, 2.2, 0.0, 0.0, 0.1);   /* outside */
  tv_camera(&cams[1], 0.55, 0.3, 0.5, -0.5, -0.2, 0.0); /* inside the grid, between tiles */
  tv_camera(&cams[2], 0.9, 0.5, 0.9, 0.5, 0.1, 0.2);   /* close to the torus */
  static image a, b;
  for (int c = 0; c < 3; c++) {
    double pd, hd;
    render(ru, &cams[c], VX_LOD_FINEST, 0, &a, NULL);
    render(rt, &cams[c], VX_LOD_FINEST, 0, &b, NULL);
    compare(&a, &b, &pd, &hd);
    fprintf(stderr, "  camera %d finest: %.4f%% of pixels differ, %.4f%% hit/miss (hits %.1f%%)\n",
            c, 100 * pd, 100 * hd, 100 * hits(&a));
    CHECK(hits(&a) > 0.05);
    CHECK(pd <= 0.002 && hd <= 0.001);
    double dmax = 0.0; /* depth where both hit */
    for (int i = 0; i < W * H; i++)
      if (a.depth[i] < INFINITY && b.depth[i] < INFINITY && !memcmp(a.rgb + 3 * i, b.rgb + 3 * i, 3))
        dmax = fmax(dmax, fabs(a.depth[i] - b.depth[i]) / a.depth[i]);
    CHECK_MSG(dmax < 1e-4, "depth differs by %g", dmax);
    for (int level = 0; level <= 2; level++) { /* at or above the tiles' roots: the top tree */
      render(ru, &cams[c], VX_LOD_LEVEL, level, &a, NULL);
      render(rt, &cams[c], VX_LOD_LEVEL, level, &b, NULL);
      CHECK(memcmp(a.rgb, b.rgb, sizeof a.rgb) == 0);
    }
    double worst = 0.0;
    for (int level = 3; level <= 7; level++) {
      render(ru, &cams[c], VX_LOD_LEVEL, level, &a, NULL);
      render(rt, &cams[c], VX_LOD_LEVEL, level, &b, NULL);
      compare(&a, &b, &pd, &hd);
      worst = fmax(worst, pd);
      CHECK_MSG(pd <= 0.002 && hd <= 0.001, "camera %d level %d: %.4f / %.4f", c, level, pd, hd);
    }
    fprintf(stderr, "  camera %d cuts below the tiles' roots: at most %.4f%% of pixels differ\n",
            c, 100 * worst);
    render(ru, &cams[c], VX_LOD_PIXEL, 0, &a, NULL);
    render(rt, &cams[c], VX_LOD_PIXEL, 0, &b, NULL);
    compare(&a, &b, &pd, &hd);
    CHECK_MSG(pd <= 0.01 && hd <= 0.005, "camera %d auto: %.4f / %.4f", c, pd, hd);
  }

  /* A budget that holds a few tiles (internal: a budget in bytes, below a MiB): the coarse
   * levels of all, detail for the nearest. */
  vx_tiled_render *tr = NULL;
  uint64_t full = 0;
  {
    vx_tree_info ti;
    memset(&ti, 0, sizeof ti);
    ti.struct_size = sizeof ti;
    vx_tiled_file_get_info(f, &ti);
    full = ti.memory_bytes;
  }
  const uint64_t budget = full / 5;
  CHECK(vx_tiled_render_create(f, 0, 2, budget, 0, &tr, &e) == VX_OK);
  vx_march_opts mo;
  memset(&mo, 0, sizeof mo);
  mo.width = W;
  mo.height = H;
  mo.lod = 8;
  mo.lod_scale = 1.0f;
  mo.cam = cams[2];
  double msr, msc;
  CHECK(vx_tiled_render_frame(tr, &mo, b.rgb, b.depth, &msr, &msc, &e) == VX_OK);
  vx_tiled_residency res;
  vx_tiled_render_residency(tr, &res);
  fprintf(stderr, "  budget %llu of %llu bytes: coarse level %u, %llu of %llu tiles detailed, "
          "%llu resident\n", (unsigned long long)budget, (unsigned long long)full,
          res.coarse_level, (unsigned long long)res.tiles_detailed, (unsigned long long)res.tiles,
          (unsigned long long)res.resident_bytes);
  CHECK(res.resident_bytes <= budget && res.coarse_level < 8 && res.tiles_detailed > 0 &&
        res.tiles_detailed < res.tiles);
  render(ru, &cams[2], VX_LOD_FINEST, 0, &a, NULL);
  double pd, hd;
  compare(&a, &b, &pd, &hd);
  CHECK_MSG(hd < 0.05 && pd > 0.0, "budget: %.4f / %.4f", pd, hd);
  vx_tiled_render_free(tr);
  /* below the roots: refused with the sizes */
  CHECK(vx_tiled_render_create(f, 0, 2, 64, 0, &tr, &e) == VX_ERR_LIMIT && !tr);
  CHECK(strstr(e.msg, "too small") != NULL);
  vx_frame_stats fs;

  /* Streaming: frames do not wait; once nothing is pending the image is the waiting one's (a
   * 1 MiB budget: coarse copies of level 6 at most, detail for some tiles). */
  vx_renderer *rs = tv_renderer(f, NULL, VX_DEVICE_CPU, 1, 1);
  vx_renderer *rw = tv_renderer(f, NULL, VX_DEVICE_CPU, 1, 0);
  render(rw, &cams[2], VX_LOD_FINEST, 0, &a, &fs);
  CHECK(fs.tiles_loaded > 0 && fs.tiles_pending == 0);
  render(rs, &cams[2], VX_LOD_FINEST, 0, &b, &fs);
  CHECK(fs.tiles_loaded == 0 && fs.tiles_pending > 0); /* the first frame: coarse levels only */
  int frames = 0;
  for (;; frames++) {
    render(rs, &cams[2], VX_LOD_FINEST, 0, &b, &fs);
    if (fs.tiles_pending == 0 || frames > 2000) break;
    struct timespec ts = {0, 2000000L};
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "  streaming: %d frames until every tile was read\n", frames + 1);
  CHECK(fs.tiles_pending == 0);
  CHECK(memcmp(a.rgb, b.rgb, sizeof a.rgb) == 0);
  vx_renderer_free(rs);
  vx_renderer_free(rw);

  /* bad options */
  vx_renderer_opts bad;
  memset(&bad, 0, sizeof bad);
  bad.struct_size = sizeof bad;
  bad.stream_tiles = 2;
  vx_renderer *rb = NULL;
  CHECK(vx_renderer_create_tiled(f, &bad, &rb, &e) == VX_ERR_INVALID_ARG && !rb);
  CHECK(vx_renderer_create_tiled(NULL, NULL, &rb, &e) == VX_ERR_INVALID_ARG && !rb);
  vx_render_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.width = W;
  o.height = H;
  o.lod = VX_LOD_LEVEL;
  o.level = 9;
  CHECK(vx_render(rt, &o, a.rgb, NULL, NULL, &e) == VX_ERR_INVALID_ARG);

  tv_done(ru, rt, f, u, tp, up);
}

/* A coloured tiled tree (256^3 in tiles of 64^3): the joined coloured tree's images, lit and
 * unlit (albedo), at the finest level within the seams' rule and bit for bit at the cuts the top
 * tree draws; the unlit surface is in colour. */
static void colored_against_joined(void) {
  char tp[128], up[128];
  vx_tiled_file *f;
  vx_tree *u;
  tv_files_ex(dir, 256, 6, 1, tp, up, &f, &u);
  vx_renderer *ru = tv_renderer(NULL, u, VX_DEVICE_CPU, 0, 0);
  vx_renderer *rt = tv_renderer(f, NULL, VX_DEVICE_CPU, 0, 0);
  vx_camera cams[2];
  tv_camera(&cams[0], 2.6, 1.5, 2.2, 0.0, 0.0, 0.1);
  tv_camera(&cams[1], 0.9, 0.5, 0.9, 0.5, 0.1, 0.2);
  static image a, b;
  const vx_shade shades[2] = {VX_SHADE_SMOOTH, VX_SHADE_ALBEDO};
  for (int sh = 0; sh < 2; sh++) {
    tv_shade = shades[sh];
    for (int c = 0; c < 2; c++) {
      double pd, hd;
      render(ru, &cams[c], VX_LOD_FINEST, 0, &a, NULL);
      render(rt, &cams[c], VX_LOD_FINEST, 0, &b, NULL);
      compare(&a, &b, &pd, &hd);
      const double share = tv_colored_share(b.rgb, b.depth, W * H);
      fprintf(stderr, "  coloured, shade %d, camera %d: %.4f%% of pixels differ, %.4f%% hit/miss, "
              "%.1f%% of the surface in colour\n", (int)shades[sh], c, 100 * pd, 100 * hd, 100 * share);
      CHECK(pd <= 0.002 && hd <= 0.001);
      CHECK(hits(&a) > 0.05);
      if (shades[sh] == VX_SHADE_ALBEDO) CHECK(share > 0.5); /* grey would be r = g = b */
      for (int level = 0; level <= 2; level++) {
        render(ru, &cams[c], VX_LOD_LEVEL, level, &a, NULL);
        render(rt, &cams[c], VX_LOD_LEVEL, level, &b, NULL);
        CHECK(memcmp(a.rgb, b.rgb, sizeof a.rgb) == 0);
      }
      for (int level = 3; level <= 7; level += 2) {
        render(ru, &cams[c], VX_LOD_LEVEL, level, &a, NULL);
        render(rt, &cams[c], VX_LOD_LEVEL, level, &b, NULL);
        compare(&a, &b, &pd, &hd);
        CHECK_MSG(pd <= 0.002 && hd <= 0.001, "camera %d level %d: %.4f / %.4f", c, level, pd, hd);
      }
    }
  }
  tv_shade = VX_SHADE_SMOOTH;
  tv_done(ru, rt, f, u, tp, up);
}

/* The first hit of ray o + t d on the triangles of s (Moller-Trumbore in double), INFINITY on none. */
static double brute_hit(const vx_soup *s, const double o[3], const double d[3]) {
  double best = INFINITY;
  for (uint64_t i = 0; i < s->tri_count; i++) {
    const float *p = s->pos + 9 * i;
    double a[3], e1[3], e2[3], pv[3], tv[3], qv[3];
    for (int k = 0; k < 3; k++) {
      a[k] = p[k];
      e1[k] = p[3 + k] - a[k];
      e2[k] = p[6 + k] - a[k];
    }
    pv[0] = d[1] * e2[2] - d[2] * e2[1];
    pv[1] = d[2] * e2[0] - d[0] * e2[2];
    pv[2] = d[0] * e2[1] - d[1] * e2[0];
    double det = e1[0] * pv[0] + e1[1] * pv[1] + e1[2] * pv[2];
    if (fabs(det) < 1e-30) continue;
    double inv = 1.0 / det;
    for (int k = 0; k < 3; k++) tv[k] = o[k] - a[k];
    double u = (tv[0] * pv[0] + tv[1] * pv[1] + tv[2] * pv[2]) * inv;
    if (u < 0.0 || u > 1.0) continue;
    qv[0] = tv[1] * e1[2] - tv[2] * e1[1];
    qv[1] = tv[2] * e1[0] - tv[0] * e1[2];
    qv[2] = tv[0] * e1[1] - tv[1] * e1[0];
    double v = (d[0] * qv[0] + d[1] * qv[1] + d[2] * qv[2]) * inv;
    if (v < 0.0 || u + v > 1.0) continue;
    double t = (e2[0] * qv[0] + e2[1] * qv[1] + e2[2] * qv[2]) * inv;
    if (t > 0.0 && t < best) best = t;
  }
  return best;
}

/* 32768^3 in tiles of 4096^3 (tiled_corner_sphere), against a ray cast of the mesh. */
static void finer_than_one_tree(void) {
  vx_soup s;
  char path[128];
  snprintf(path, sizeof path, "%s/big.svo", dir);
  vx_tree_info ti;
  vx_tiled_file *f = tiled_corner_file(path, &s, &ti, NULL);
  CHECK(ti.depth == 15 && ti.tile_depth == 12);
  vx_renderer *r = tv_renderer(f, NULL, VX_DEVICE_CPU, 0, 0);
  vx_camera cam;
  tv_camera(&cam, 0.1335, 0.1295, 0.132, 0.125, 0.125, 0.125);
  static image im;
  vx_frame_stats fs;
  render(r, &cam, VX_LOD_FINEST, 0, &im, &fs);
  CHECK(fs.tiles_pending == 0);
  /* the reference: the camera's pixel rays (scene.c's pinhole model) against the mesh */
  double f3[3], r3[3], u3[3], l = 0.0;
  for (int k = 0; k < 3; k++) {
    f3[k] = cam.target[k] - cam.eye[k];
    l += f3[k] * f3[k];
  }
  for (int k = 0; k < 3; k++) f3[k] /= sqrt(l);
  r3[0] = -f3[2]; /* forward x up(0,1,0) */
  r3[1] = 0.0;
  r3[2] = f3[0];
  l = sqrt(r3[0] * r3[0] + r3[2] * r3[2]);
  r3[0] /= l;
  r3[2] /= l;
  u3[0] = r3[1] * f3[2] - r3[2] * f3[1];
  u3[1] = r3[2] * f3[0] - r3[0] * f3[2];
  u3[2] = r3[0] * f3[1] - r3[1] * f3[0];
  const double ph = 2.0 * tan(0.5 * cam.fov_y_deg * M_PI / 180.0) / H;
  static double ref[W * H];
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      double d[3], n = 0.0;
      for (int k = 0; k < 3; k++) {
        d[k] = f3[k] + (x + 0.5 - 0.5 * W) * ph * r3[k] - (y + 0.5 - 0.5 * H) * ph * u3[k];
        n += d[k] * d[k];
      }
      for (int k = 0; k < 3; k++) d[k] /= sqrt(n);
      ref[y * W + x] = brute_hit(&s, cam.eye, d);
    }
  int inside = 0, outside = 0, bad = 0;
  double err = 0.0;
  for (int y = 1; y < H - 1; y++)
    for (int x = 1; x < W - 1; x++) {
      const int i = y * W + x;
      int all = 1, none = 1;
      for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
          int h = ref[i + dy * W + dx] < INFINITY;
          all &= h;
          none &= !h;
        }
      if (all) {
        inside++;
        if (!(im.depth[i] < INFINITY)) bad++;
        else err = fmax(err, fabs(im.depth[i] - ref[i]) / ti.scale);
      } else if (none) {
        outside++;
        bad += im.depth[i] < INFINITY;
      }
    }
  fprintf(stderr, "  32768^3 in %llu tiles: %d pixels on the sphere, %d off it, %d wrong, depth "
          "error max %.2f voxels\n", (unsigned long long)ti.tile_count, inside, outside, bad, err);
  CHECK(inside > W * H / 4 && outside > W * H / 20 && bad == 0);
  CHECK(err < 2.0); /* the band's field and the tessellation: within about a voxel */
  vx_renderer_free(r);
  vx_tiled_file_close(f);
  vx_soup_free(&s);
  unlink(path);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/vx_render_tiled_XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  (void)tiled_slurp;
  RUN(against_joined);
  RUN(colored_against_joined);
  RUN(finer_than_one_tree);
  rmdir(dir);
  return check_summary();
}
