/* SPDX-License-Identifier: Apache-2.0 */
/* sort.h - qsort on every core: pieces sorted by the C library's qsort on their own threads, then
 * merged, each merge cut into pieces that run in parallel (sort.c).
 */
#ifndef VOXLOD_SYS_SORT_H
#define VOXLOD_SYS_SORT_H

#include <stddef.h>
#include "voxlod/base.h"

VX_EXTERN_C_BEGIN

/* Sorts n elements of `size` bytes at base by cmp on up to `threads` threads (<= 0: all cores).
 * Where no two elements compare equal (a total order: break ties by an index) the result is the
 * one qsort gives, whatever the number of threads. Elements that compare equal keep the order
 * of the pieces they were sorted in (not stable). Needs n * size bytes of scratch; when it cannot
 * be allocated, or n is small, the calling thread sorts with qsort. */
void vx_sort_parallel(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *),
                      int threads);

VX_EXTERN_C_END

#endif
