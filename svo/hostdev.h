/* SPDX-License-Identifier: Apache-2.0 */
/* hostdev.h - one source for CPU and GPU.
 *
 * Headers that hold geometry logic (triangle/box overlap, Morton codes, node decoding, traversal,
 * shading) are written in the subset of C11 that CUDA C++ also accepts: no designated initializers,
 * no compound literals, no VLAs. Their functions are marked VX_HD so that nvcc compiles them for
 * host and device, and a C compiler sees plain `static inline` functions. A CPU test of such a
 * function therefore checks the GPU's logic too (the NanoVDB `__hostdev__` habit).
 */
#ifndef VOXLOD_HOSTDEV_H
#define VOXLOD_HOSTDEV_H

#if defined(__CUDACC__)
#define VX_HD static inline __host__ __device__
#define VX_HD_CONST __constant__
#else
#define VX_HD static inline
#define VX_HD_CONST
#endif

#include "voxlod/base.h" /* VX_EXTERN_C_BEGIN / _END */

#endif
