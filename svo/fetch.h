/* SPDX-License-Identifier: Apache-2.0 */
/* fetch.h - one node or voxel read from the tree's arrays, host or device (hostdev.h).
 *
 * On the GPU a node is one 16-byte load and a voxel one 8-byte load through the read-only data
 * path (PTX ld.global.nc.v4.u32, SASS LDG.E.128.CONSTANT; a plain struct copy gave
 * ld.global.v4.u32). The ray-marcher (marcher/trace.h) and the sampler (sampler/sample_eval.h) read
 * the tree through these two functions only.
 */
#ifndef VOXLOD_SVO_FETCH_H
#define VOXLOD_SVO_FETCH_H

#include <string.h> /* memcpy */
#include "svo/hostdev.h"
#include "svo/node.h"

/* One node: one 16-byte load (read-only path on the GPU). */
VX_HD vx_node vx_fetch_node(const vx_node *p) {
#if defined(__CUDA_ARCH__)
  uint4 v = __ldg((const uint4 *)p);
  vx_node n;
  n.child = v.x;
  n.info = v.y;
  n.normal = v.z;
  n.d = __uint_as_float(v.w);
  return n;
#else
  return *p;
#endif
}

/* One voxel: one 8-byte load (read-only path on the GPU). */
VX_HD vx_voxel vx_fetch_voxel(const vx_voxel *p) {
#if defined(__CUDA_ARCH__)
  uint2 v = __ldg((const uint2 *)p);
  vx_voxel x;
  memcpy(&x, &v, sizeof x);
  return x;
#else
  return *p;
#endif
}

#endif
