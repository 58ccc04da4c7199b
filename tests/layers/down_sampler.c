/* SPDX-License-Identifier: Apache-2.0 */
/* Must compile: sampler/ (vx_sampler) names its own folder, the core, sys/ and the public API. */
#include "sampler/sampler.h"
#include "svo/gpu_tree.h"
#include "sys/system.h"
#include "voxlod/base.h"
int vx_layer_probe(void) { return vx_sample_tree_fits(0) + vx_cpu_count(); }
