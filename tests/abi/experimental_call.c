/* SPDX-License-Identifier: Apache-2.0 */
/* experimental_call.c - a caller of the experimental section (voxlod/experimental.h). It must
 * compile with VOXLOD_EXPERIMENTAL defined and must not without it: the stable header alone does
 * not declare the benchmark calls (tests/api.cmake compiles it both ways). */
#include <voxlod.h>

int experimental_call(vx_renderer *r, vx_sampler *s, const vx_render_opts *views,
                      const float *points) {
  vx_renderer_bench_stats rb = {0};
  vx_sampler_bench_stats sb = {0};
  vx_error e;
  return vx_renderer_bench(r, views, 1, 1, &rb, &e) == VX_OK &&
         vx_sampler_bench(s, NULL, points, 1, 1, &sb, &e) == VX_OK;
}
