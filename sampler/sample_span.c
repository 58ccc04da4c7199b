/* SPDX-License-Identifier: Apache-2.0 */
/* sample_span.c - the CPU sampler's inner loop (sample_span.h); sample_span_avx2.c builds it a
 * second time under another name. */
#include "sampler/sample_span.h"

#include <stdlib.h>
#include <string.h>

#if !defined(VX_SAMPLE_SPAN_NAME)
#define VX_SAMPLE_SPAN_NAME vx_sample_span_base
#define VX_SAMPLE_SPAN_PICK 1
#endif

#define VX_SAMPLE_AHEAD 16 /* points prefetched ahead in a bucket order */

uint64_t VX_SAMPLE_SPAN_NAME(const vx_sample_span *a, uint64_t k0, uint64_t k1, uint64_t *first) {
  const vx_sample_tree *s = a->s;
  uint64_t invalid = 0;
  for (uint64_t k = k0; k < k1; k++) {
    const uint64_t i = a->order ? a->order[k] : k;
#if defined(__GNUC__)
    /* the order jumps about the arrays: fetch a later point's coordinates now */
    if (a->order && k + VX_SAMPLE_AHEAD < k1) {
      const uint64_t j = a->order[k + VX_SAMPLE_AHEAD];
      __builtin_prefetch(a->points + 3 * j);
      __builtin_prefetch(a->dist + j, 1);
    }
#endif
    float g[3];
    uint32_t fl;
    /* the whole rule with `run` known when compiling (the common case), else as far as asked */
    a->dist[i] = a->run == VX_SE_RUN_ALL ? vx_sample_point(s, a->points + 3 * i, g, &fl)
                                         : vx_sample_point_run(s, a->points + 3 * i, g, &fl,
                                                               a->run);
    if (a->grad) {
      a->grad[3 * i + 0] = g[0];
      a->grad[3 * i + 1] = g[1];
      a->grad[3 * i + 2] = g[2];
    }
    if (a->flags) a->flags[i] = (uint8_t)fl;
    if (fl & VX_SAMPLE_INVALID) {
      if (i < *first) *first = i; /* in a bucket order the first met need not be the first */
      invalid++;
    }
  }
  return invalid;
}

#if defined(VX_SAMPLE_SPAN_PICK)
vx_sample_span_fn vx_sample_span_pick(void) {
#if defined(VX_SAMPLE_HAVE_AVX2)
  const char *env = getenv("VOXLOD_CPU");
  if (env && strcmp(env, "baseline") == 0) return vx_sample_span_base;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
      __builtin_cpu_supports("bmi2"))
    return vx_sample_span_avx2;
#endif
  return vx_sample_span_base;
}
#endif
