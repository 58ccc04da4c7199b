/* SPDX-License-Identifier: Apache-2.0 */
/* sample_span.h - the CPU sampler's inner loop over a span of points, built twice on x86-64:
 * for the baseline instruction set and for AVX2 + BMI2 (sample_span_avx2.c), chosen at run time
 * by what the processor has. Both builds compute the same bits: floating-point contraction is off
 * in the AVX2 one (no fused multiply-adds), and the operations are IEEE's either way; the AVX2
 * build is faster for its three-operand encodings and bit instructions (docs/BENCHMARKS.md).
 * VOXLOD_CPU=baseline in the environment forces the baseline build (a check that both agree).
 */
#ifndef VOXLOD_SAMPLER_SAMPLE_SPAN_H
#define VOXLOD_SAMPLER_SAMPLE_SPAN_H

#include <stdint.h>
#include "sampler/sample_eval.h"

/* The arrays of one run. Point k of a span is order[k] (k itself when order is NULL). */
typedef struct vx_sample_span {
  const vx_sample_tree *s;
  const float *points;
  const uint32_t *order;
  float *dist, *grad; /* grad may be NULL */
  uint8_t *flags;     /* may be NULL */
  int run;            /* how far (sample_eval.h's VX_SE_RUN_*; 0: the whole rule): a point left
                         pending gets flags VX_SE_PENDING, its other outputs unspecified */
} vx_sample_span;

/* Samples points k in [k0, k1): returns how many had a non-finite coordinate, the smallest index
 * of those into *first (left as it was when none is smaller). */
typedef uint64_t (*vx_sample_span_fn)(const vx_sample_span *a, uint64_t k0, uint64_t k1,
                                      uint64_t *first);

uint64_t vx_sample_span_base(const vx_sample_span *a, uint64_t k0, uint64_t k1, uint64_t *first);
#if defined(VX_SAMPLE_HAVE_AVX2)
uint64_t vx_sample_span_avx2(const vx_sample_span *a, uint64_t k0, uint64_t k1, uint64_t *first);
#endif

/* The build for this processor (and the VOXLOD_CPU setting). */
vx_sample_span_fn vx_sample_span_pick(void);

#endif
