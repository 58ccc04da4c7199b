/* SPDX-License-Identifier: Apache-2.0 */
/* system.h - what the library asks of the machine, each in one place: the clock, the number of
 * cores, physical memory, and the one fork-join runner every parallel stage uses.
 */
#ifndef VOXLOD_SVO_SYSTEM_H
#define VOXLOD_SVO_SYSTEM_H

#include <stddef.h>
#include <stdint.h>
#include "voxlod/base.h"

VX_EXTERN_C_BEGIN

/* Monotonic wall-clock seconds (CLOCK_MONOTONIC). */
double vx_clock_seconds(void);

/* Online cores (>= 1). */
int vx_cpu_count(void);

/* Physical memory in bytes (0 when unknown). */
uint64_t vx_physical_memory(void);

/* Resident and virtual bytes of this process now (Linux /proc/self/statm), 0 when unknown. */
uint64_t vx_resident_bytes(void);
uint64_t vx_virtual_bytes(void);

/* The default memory limit of builds and reads: 80% of physical memory (16 GiB when unknown). */
uint64_t vx_default_mem_limit(void);

/* A byte count for messages, in the unit that suits it: "512 B", "1.00 KiB", "3.25 GiB". Returns
 * buf. */
const char *vx_bytes_text(double bytes, char *buf, size_t n);

/* Threads for a request: n <= 0 means all cores; capped at cap (>= 1). */
int vx_thread_count(int n, int cap);

/* Runs fn(arg) on `threads` threads, the calling thread being one of them, and returns when all
 * have returned. fn shares arg and takes work from it (a counter) until none is left, so the
 * result cannot depend on how many threads started: when a thread cannot be created the others
 * do its share. Returns the number of threads that ran (>= 1). */
int vx_parallel(int threads, void *(*fn)(void *), void *arg);

/* fn(ctx, a, b) for consecutive ranges [a, b) covering 0 .. n-1, on `threads` threads (no more
 * than there are ranges: a small input stays on the calling thread): range k is
 * [k VX_RANGE_CHUNK, (k + 1) VX_RANGE_CHUNK) cut at n. */
#define VX_RANGE_CHUNK 65536
void vx_ranges_run(int threads, uint64_t n, void (*fn)(void *ctx, uint64_t a, uint64_t b),
                   void *ctx);

/* a[0 .. n-1] replaced by the sums of the values before each (a[0] becomes 0), in place; returns
 * the sum of all: counts per range into each range's first place. */
uint64_t vx_exclusive_sum(uint64_t *a, uint64_t n);

/* fn(ctx, i) for every i < items, each once, on up to `threads` threads (<= 0: all cores; no more
 * than items, at most 256), taken in increasing order as threads become free. */
void vx_items_run(int threads, uint64_t items, void (*fn)(void *ctx, uint64_t item), void *ctx);

/* n bytes at offset off of the file open as fd into dst, in pieces of 8 MiB read side by side on
 * up to `threads` threads (<= 0: all cores): a large read from the page cache is a copy that one
 * core cannot keep up with. 0, or the errno of a failure (-1 where the file ended first). */
int vx_read_at(int fd, void *dst, uint64_t n, uint64_t off, int threads);

VX_EXTERN_C_END

#endif
