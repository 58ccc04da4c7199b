/* SPDX-License-Identifier: Apache-2.0 */
/* mesh_png.c - pictures of triangle meshes for the documentation: each triangle flat-shaded by
 * its own normal with its edges drawn, so that the size of the triangles at each level of detail
 * shows. A z-buffer rasterizer on the CPU; the public API only (vx_mesh_load, vx_write_png).
 * Not part of the voxlod binary.
 *
 * usage: mesh_png MESH OUT.png [--size WxH] [--camera AZ,EL] [--edges 0|1] [--zoom Z]
 *                 [--target X,Y,Z]
 * The camera orbits the mesh's bounding box like `voxlod render --camera AZ,EL` (degrees,
 * 40 degree field of view, looking at the box's centre or --target, +y up), --zoom Z times
 * closer than a view of the whole box.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "voxlod.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

typedef struct cam {
  double eye[3], f[3], r[3], u[3]; /* position and orthonormal frame (forward, right, up) */
  double focal;                    /* pixels */
  int w, h;
} cam;

static void norm3(double v[3]) {
  double l = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  if (l > 0) v[0] /= l, v[1] /= l, v[2] /= l;
}

static void cross3(const double a[3], const double b[3], double c[3]) {
  c[0] = a[1] * b[2] - a[2] * b[1];
  c[1] = a[2] * b[0] - a[0] * b[2];
  c[2] = a[0] * b[1] - a[1] * b[0];
}

/* Projects p: pixel x, y and depth along the view; 0 when behind the camera. */
static int project(const cam *c, const float *p, double out[3]) {
  double d[3] = {p[0] - c->eye[0], p[1] - c->eye[1], p[2] - c->eye[2]};
  double z = d[0] * c->f[0] + d[1] * c->f[1] + d[2] * c->f[2];
  if (z <= 1e-9) return 0;
  double x = d[0] * c->r[0] + d[1] * c->r[1] + d[2] * c->r[2];
  double y = d[0] * c->u[0] + d[1] * c->u[1] + d[2] * c->u[2];
  out[0] = 0.5 * c->w + c->focal * x / z;
  out[1] = 0.5 * c->h - c->focal * y / z;
  out[2] = z;
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: mesh_png MESH OUT.png [--size WxH] [--camera AZ,EL] [--edges 0|1]\n");
    return 2;
  }
  int W = 800, H = 600, edges = 1, have_target = 0;
  double az = 30, el = 20, zoom = 1.0, target[3] = {0, 0, 0};
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--size")) sscanf(argv[i + 1], "%dx%d", &W, &H);
    else if (!strcmp(argv[i], "--camera")) sscanf(argv[i + 1], "%lf,%lf", &az, &el);
    else if (!strcmp(argv[i], "--edges")) edges = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--zoom")) zoom = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--target"))
      have_target = sscanf(argv[i + 1], "%lf,%lf,%lf", &target[0], &target[1], &target[2]) == 3;
  }
  if (!(zoom > 0.0)) zoom = 1.0;
  if (W < 16 || H < 16 || W > 8192 || H > 8192) {
    fprintf(stderr, "mesh_png: size %dx%d outside 16..8192\n", W, H);
    return 2;
  }
  vx_mesh *m = NULL;
  vx_error e;
  if (vx_mesh_load(argv[1], NULL, &m, &e) != VX_OK) {
    fprintf(stderr, "mesh_png: %s\n", e.msg);
    return 1;
  }
  uint64_t nv, nt;
  const float *v = vx_mesh_vertices(m, &nv);
  vx_mesh_indices(m, &nt); /* a loaded mesh is a soup: 3 vertices per triangle */
  vx_mesh_info mi;
  memset(&mi, 0, sizeof mi);
  mi.struct_size = sizeof mi;
  vx_mesh_get_info(m, &mi);
  double ctr[3], ext = 0.0;
  for (int k = 0; k < 3; k++) {
    ctr[k] = 0.5 * (mi.bbox_min[k] + mi.bbox_max[k]);
    ext = fmax(ext, mi.bbox_max[k] - mi.bbox_min[k]);
  }
  cam c;
  c.w = W;
  c.h = H;
  if (have_target) memcpy(ctr, target, sizeof ctr);
  double fov = 40.0 * M_PI / 180.0, dist = 0.5 * ext * 1.5 / tan(0.5 * fov) / zoom;
  double ca = cos(az * M_PI / 180), sa = sin(az * M_PI / 180), ce = cos(el * M_PI / 180),
         se = sin(el * M_PI / 180);
  double dir[3] = {ce * sa, se, ce * ca};
  for (int k = 0; k < 3; k++) c.eye[k] = ctr[k] + dist * dir[k], c.f[k] = -dir[k];
  double up[3] = {0, 1, 0};
  cross3(c.f, up, c.r);
  norm3(c.r);
  cross3(c.r, c.f, c.u);
  c.focal = 0.5 * H / tan(0.5 * fov);
  float *zb = (float *)malloc((size_t)W * H * sizeof(float));
  uint8_t *rgb = (uint8_t *)malloc((size_t)W * H * 3);
  if (!zb || !rgb) return 1;
  for (size_t i = 0; i < (size_t)W * H; i++) {
    zb[i] = INFINITY;
    rgb[3 * i] = 255, rgb[3 * i + 1] = 255, rgb[3 * i + 2] = 255;
  }
  const double light[3] = {0.35, 0.8, 0.5};
  double ln = sqrt(light[0] * light[0] + light[1] * light[1] + light[2] * light[2]);
  for (uint64_t t = 0; t < nt; t++) {
    const float *p[3] = {v + 9 * t, v + 9 * t + 3, v + 9 * t + 6};
    double s[3][3];
    if (!project(&c, p[0], s[0]) || !project(&c, p[1], s[1]) || !project(&c, p[2], s[2])) continue;
    double e1[3], e2[3], n[3];
    for (int k = 0; k < 3; k++) e1[k] = p[1][k] - p[0][k], e2[k] = p[2][k] - p[0][k];
    cross3(e1, e2, n);
    norm3(n);
    double toward = -(n[0] * c.f[0] + n[1] * c.f[1] + n[2] * c.f[2]);
    double lit = fabs(n[0] * light[0] + n[1] * light[1] + n[2] * light[2]) / ln;
    double shade = 0.25 + 0.75 * lit;
    /* front faces warm grey, back faces (holes, inside) blue */
    double base[3] = {0.92, 0.86, 0.78};
    if (toward < 0) base[0] = 0.55, base[1] = 0.65, base[2] = 0.9;
    int x0 = (int)floor(fmin(s[0][0], fmin(s[1][0], s[2][0]))),
        x1 = (int)ceil(fmax(s[0][0], fmax(s[1][0], s[2][0])));
    int y0 = (int)floor(fmin(s[0][1], fmin(s[1][1], s[2][1]))),
        y1 = (int)ceil(fmax(s[0][1], fmax(s[1][1], s[2][1])));
    if (x0 < 0) x0 = 0;
    if (y0 < 0) y0 = 0;
    if (x1 > W - 1) x1 = W - 1;
    if (y1 > H - 1) y1 = H - 1;
    double area =
        (s[1][0] - s[0][0]) * (s[2][1] - s[0][1]) - (s[2][0] - s[0][0]) * (s[1][1] - s[0][1]);
    if (fabs(area) < 1e-12) continue;
    for (int y = y0; y <= y1; y++)
      for (int x = x0; x <= x1; x++) {
        double px = x + 0.5, py = y + 0.5, b[3];
        for (int k = 0; k < 3; k++) {
          const double *A = s[(k + 1) % 3], *B = s[(k + 2) % 3];
          b[k] = ((B[0] - A[0]) * (py - A[1]) - (px - A[0]) * (B[1] - A[1])) / area;
        }
        if (b[0] < 0 || b[1] < 0 || b[2] < 0) continue;
        /* perspective-correct depth */
        double iz = b[0] / s[0][2] + b[1] / s[1][2] + b[2] / s[2][2];
        float z = (float)(1.0 / iz);
        size_t i = (size_t)y * W + x;
        if (z >= zb[i]) continue;
        zb[i] = z;
        double k = shade;
        if (edges) {
          /* distance in pixels to the nearest edge: b_k times the height over edge k */
          double dmin = INFINITY;
          for (int q = 0; q < 3; q++) {
            const double *A = s[(q + 1) % 3], *B = s[(q + 2) % 3];
            double len = hypot(B[0] - A[0], B[1] - A[1]);
            if (len > 0) dmin = fmin(dmin, b[q] * fabs(area) / len);
          }
          if (dmin < 0.7) k *= 0.45;
        }
        for (int ch = 0; ch < 3; ch++) rgb[3 * i + ch] = (uint8_t)fmin(255.0, 255.0 * base[ch] * k);
      }
  }
  vx_status st = vx_write_png(argv[2], rgb, (uint32_t)W, (uint32_t)H, &e);
  if (st != VX_OK) fprintf(stderr, "mesh_png: %s\n", e.msg);
  else fprintf(stderr, "%s: %llu triangles, %dx%d\n", argv[2], (unsigned long long)nt, W, H);
  free(zb);
  free(rgb);
  vx_mesh_free(m);
  return st == VX_OK ? 0 : 1;
}
