/* SPDX-License-Identifier: Apache-2.0 */
/* Must not compile: sampler/ (vx_sampler) names the renderer, a layer it does not link. */
#include "marcher/gpu_render.h"
int vx_layer_probe(void) { return 0; }
