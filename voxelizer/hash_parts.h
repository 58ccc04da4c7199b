/* SPDX-License-Identifier: Apache-2.0 */
/* hash_parts.h - items split by a hash into partitions that keep index order, in parallel: how
 * the voxelizer matches large arrays (duplicate triangles, welded vertices and edges) on every
 * core with the result of one serial pass over the items in index order. Equal items have equal
 * hashes, so they meet in one partition, in index order: a pass over each partition on a thread
 * of its own sees every class of equals as a serial pass would (its first item first), and the
 * result does not depend on the thread count.
 *
 * Method: the hashes in chunks of 65536 items, each chunk counting its items per partition (the
 * hash's top VX_HASH_BITS bits); the counts scanned (partitions in order, chunks in order); each chunk
 * hashes its items again and scatters them, with their hashes, to their partitions: a stable
 * counting sort. 12 bytes an item. A pass over a partition then reads the hashes in its own order,
 * one after the other, instead of one scattered read an item (and another a table hit). */
#ifndef VOXLOD_VOXELIZER_HASH_PARTS_H
#define VOXLOD_VOXELIZER_HASH_PARTS_H

#include <stdint.h>
#include "sys/error.h"

/* 1024 partitions: a partition's table of a 10^8-triangle mesh's corners stays a few MiB (64
 * made them 64 MiB each, a cache and TLB miss a probe) */
#define VX_HASH_BITS 10
#define VX_HASH_PARTS (1 << VX_HASH_BITS)

typedef struct vx_hash_parts {
  uint32_t *idx;  /* the items by partition, each partition in index order */
  uint64_t *hash; /* hash[k]: the hash of item idx[k] */
  uint64_t cap;   /* items the arrays hold */
  uint64_t start[VX_HASH_PARTS + 1]; /* partition p: idx[start[p] .. start[p + 1]) */
} vx_hash_parts;

/* Items 0 .. n-1 (n < 2^32), item i's hash hash(ctx, i), on `threads` threads (0: every core).
 * out: zeroed, or a previous build's, whose arrays are reused when they hold n items (the pages
 * already touched). VX_ERR_NOMEM. */
vx_status vx_hash_parts_build(uint64_t n, uint64_t (*hash)(const void *ctx, uint64_t i),
                              const void *ctx, int threads, vx_hash_parts *out, vx_error *err);

/* A worker's scratch memory, kept from one partition to the next: fresh pages for every
 * partition's table cost more than the table's pass (the kernel zeroes them). */
typedef struct vx_hash_scratch {
  void *mem;
  size_t cap;
} vx_hash_scratch;

/* At least `bytes` of w's memory, its contents undefined; NULL when out of memory. */
void *vx_hash_scratch_get(vx_hash_scratch *w, size_t bytes);

/* fn(ctx, p, w) once for each partition p, on `threads` threads, w the calling worker's scratch. */
void vx_hash_parts_run(int threads, void (*fn)(void *ctx, int p, vx_hash_scratch *w), void *ctx);

void vx_hash_parts_free(vx_hash_parts *p);

/* A pass over a partition reads its items' own data in hash order, scattered: the passes prefetch
 * what an item this many places ahead will read. */
#define VX_HASH_AHEAD 8

/* A lookup pass's prefetch at place k of a partition ending at `end`: the table slot
 * (slot[hash & mask]) of the item VX_HASH_AHEAD places on. */
static inline void vx_hash_parts_prefetch(const vx_hash_parts *hp, uint64_t k, uint64_t end,
                                          const uint32_t *slot, uint64_t mask) {
  if (k + VX_HASH_AHEAD < end) __builtin_prefetch(slot + (hp->hash[k + VX_HASH_AHEAD] & mask));
}

#endif
