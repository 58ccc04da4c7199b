/* SPDX-License-Identifier: Apache-2.0 */
/* sample_span_avx2.c - sample_span.c built for AVX2 + BMI2 (the compile options are in
 * CMakeLists.txt), picked at run time by vx_sample_span_pick(). */
#define VX_SAMPLE_SPAN_NAME vx_sample_span_avx2
#include "sampler/sample_span.c"
