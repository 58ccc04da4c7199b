/* SPDX-License-Identifier: Apache-2.0 */
/* Must not compile: sys/ (vx_sys) names the core, the layer above it. */
#include "svo/svo.h"
int vx_layer_probe(void) { return 0; }
