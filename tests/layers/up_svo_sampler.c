/* SPDX-License-Identifier: Apache-2.0 */
/* Must not compile: the core (vx_svo) names sampler/, a layer above it. */
#include "sampler/sample_eval.h"
int vx_layer_probe(void) { return 0; }
