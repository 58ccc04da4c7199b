/* SPDX-License-Identifier: Apache-2.0 */
/* sort.h - qsort on every core: pieces sorted by the C library's qsort on their own threads, then
 * merged, each merge cut into pieces that run in parallel (sort.c); and a stable radix sort of
 * records by an unsigned 64-bit key, on every core.
 */
#ifndef VOXLOD_SYS_SORT_H
#define VOXLOD_SYS_SORT_H

#include <stddef.h>
#include <stdint.h>
#include "voxlod/base.h"

VX_EXTERN_C_BEGIN

/* Sorts n elements of `size` bytes at base by cmp on up to `threads` threads (<= 0: all cores).
 * Where no two elements compare equal (a total order: break ties by an index) the result is the
 * one qsort gives, whatever the number of threads. Elements that compare equal keep the order
 * of the pieces they were sorted in (not stable). Needs n * size bytes of scratch; when it cannot
 * be allocated, or n is small, the calling thread sorts with qsort. */
void vx_sort_parallel(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *),
                      int threads);

/* Sorts n records of `size` bytes at a by the uint64_t at byte offset `off` of each (its value
 * below 2^bits), keeping the order of equal keys: the result does not depend on `threads` (<= 0:
 * all cores). tmp holds n records. Returns the sorted array, a or tmp (with threads != 1 and many
 * records always a; fewer than 2 records: a as it is); NULL only when the histograms cannot be
 * allocated (a and tmp unchanged). */
void *vx_radix_sort(void *a, void *tmp, size_t n, size_t size, size_t off, uint32_t bits,
                    int threads);

/* The n records of *a (a vx_malloc'd array) sorted by vx_radix_sort in scratch memory of its
 * own: *a may become the scratch (the old array freed). Where the records were made in the order
 * of an index that cmp breaks ties by, the result is cmp's order, and without the scratch's memory
 * vx_sort_parallel(cmp) gives it instead. */
void vx_sort_records(void **a, size_t n, size_t size, size_t off, uint32_t bits,
                     int (*cmp)(const void *, const void *), int threads);

/* The `bits` of vx_radix_sort for keys up to max: its significant bits, at least 1. */
static inline uint32_t vx_radix_bits(uint64_t max) {
  uint32_t b = 1;
  while (b < 64 && (max >> b) != 0) b++;
  return b;
}

VX_EXTERN_C_END

#endif
