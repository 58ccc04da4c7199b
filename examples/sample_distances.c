/* SPDX-License-Identifier: Apache-2.0 */
/* sample_distances.c - signed distances from a tree: points near the surface (a training set for
 * an implicit network), their distances and gradients on all cores, and the same through a
 * sampler that keeps the tree on the GPU when one is usable. Writes the points as text.
 *
 *   sample_distances TREE.svo|MESH OUT.xyzd [N]
 *
 * OUT.xyzd gets one line per point: x y z distance (world units, negative inside).
 * Builds against an installed libvoxlod (see CMakeLists.txt here, or
 * cc sample_distances.c $(pkg-config --cflags --libs voxlod)).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <voxlod.h>

static int fail(const char *what, const vx_error *e) {
  fprintf(stderr, "%s: %s\n", what, e->msg);
  return 1;
}

/* A tree from a .svo file, or converted from a mesh file at 256^3 (in memory). */
static vx_tree *open_tree(const char *path, vx_error *err) {
  size_t n = strlen(path);
  vx_tree *t = NULL;
  if (n > 4 && strcmp(path + n - 4, ".svo") == 0)
    return vx_tree_load(path, NULL, &t, err) == VX_OK ? t : NULL;
  vx_mesh *mesh = NULL;
  if (vx_mesh_load(path, NULL, &mesh, err) != VX_OK) return NULL;
  vx_convert_opts co = {0};
  co.struct_size = sizeof co;
  co.resolution = 256;
  vx_conversion *b = NULL;
  vx_status s = vx_convert(mesh, &co, &b, err);
  vx_mesh_free(mesh);
  if (s != VX_OK) return NULL;
  t = vx_conversion_take_tree(b);
  vx_conversion_free(b);
  return t;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s TREE.svo|MESH OUT.xyzd [N]\n", argv[0]);
    return 2;
  }
  vx_error err;
  vx_tree *tree = open_tree(argv[1], &err);
  if (!tree) return fail(argv[1], &err);
  uint64_t n = argc > 3 ? strtoull(argv[3], NULL, 10) : 100000;
  if (n == 0 || n > 1000000000ull) return fprintf(stderr, "N: 1 .. 10^9 points\n"), 2;
  float *points = malloc(n * 3 * sizeof *points), *dist = malloc(n * sizeof *dist),
        *grad = malloc(n * 3 * sizeof *grad), *again = malloc(n * sizeof *again);
  uint8_t *flags = malloc(n);
  if (!points || !dist || !grad || !again || !flags) return fprintf(stderr, "out of memory\n"), 1;

  /* points within 2 voxels of the surface voxels' centres, shuffled, reproducible by seed */
  vx_surface_points_opts po = {0};
  po.struct_size = sizeof po;
  po.spread = 2.0f;
  po.seed = 1;
  po.shuffle = 1;
  if (vx_tree_surface_points(tree, &po, n, points, &err) != VX_OK) return fail("points", &err);

  /* all cores; non-finite points would come back as NaN with VX_SAMPLE_INVALID */
  vx_sample_stats st = {0};
  st.struct_size = sizeof st;
  if (vx_tree_sample(tree, NULL, points, n, dist, grad, flags, &st, &err) != VX_OK)
    return fail("sample", &err);
  uint64_t inside = 0, near = 0, far = 0;
  for (uint64_t i = 0; i < n; i++) {
    inside += dist[i] < 0.0f;
    near += (flags[i] & VX_SAMPLE_NEAR) != 0;
    far += (flags[i] & VX_SAMPLE_FAR) != 0;
  }
  printf("CPU: %llu points in %.1f ms (%.2f Mpoints/s): %.1f%% inside, %.1f%% near (searched), "
         "%.1f%% far (bounded)\n", (unsigned long long)n, st.ms_total,
         n / (st.ms_total * 1e3), 100.0 * inside / n, 100.0 * near / n, 100.0 * far / n);

  /* a sampler keeps the tree on the GPU for many calls (the CPU when there is none) */
  vx_sampler *s = NULL;
  if (vx_sampler_create(tree, NULL, &s, &err) != VX_OK) return fail("sampler", &err);
  if (vx_sampler_sample(s, NULL, points, n, again, NULL, NULL, &st, &err) != VX_OK)
    return fail("sampler", &err);
  double worst = 0.0;
  for (uint64_t i = 0; i < n; i++) {
    double e = dist[i] > again[i] ? dist[i] - again[i] : again[i] - dist[i];
    worst = e > worst ? e : worst;
  }
  printf("%s: %.1f ms, largest difference from the CPU %.3g%s%s\n",
         vx_sampler_uses_gpu(s) ? "GPU" : "CPU", st.ms_total, worst,
         *vx_sampler_notes(s) ? "; " : "", vx_sampler_notes(s));
  vx_sampler_free(s);

  FILE *f = fopen(argv[2], "w");
  if (!f) return fprintf(stderr, "%s: cannot write\n", argv[2]), 1;
  for (uint64_t i = 0; i < n; i++)
    fprintf(f, "%.7g %.7g %.7g %.7g\n", points[3 * i], points[3 * i + 1], points[3 * i + 2],
            dist[i]);
  if (fclose(f) != 0) return fprintf(stderr, "%s: write failed\n", argv[2]), 1;
  free(points);
  free(dist);
  free(grad);
  free(again);
  free(flags);
  vx_tree_free(tree);
  return 0;
}
