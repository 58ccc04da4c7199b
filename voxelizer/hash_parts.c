/* SPDX-License-Identifier: Apache-2.0 */
/* hash_parts.c - items split by hash into partitions that keep index order (hash_parts.h). */
#include "voxelizer/hash_parts.h"
#include "sys/alloc.h"
#include "sys/system.h"

#include <stdatomic.h>
#include <string.h>

#define HP_CHUNK VX_RANGE_CHUNK /* items a task hashes and scatters */

typedef struct hp_job {
  uint64_t (*hash)(const void *ctx, uint64_t i);
  const void *ctx;
  uint64_t n, chunks;
  vx_hash_parts *out;
  uint32_t *count; /* chunks x VX_HASH_PARTS: items of each partition in each chunk, then where
                      the chunk's first of each goes in idx */
  int stage;       /* 0: hash and count, 1: scatter */
  atomic_uint_fast64_t next;
} hp_job;

static void *hp_worker(void *arg) {
  hp_job *j = (hp_job *)arg;
  for (;;) {
    const uint64_t c = atomic_fetch_add(&j->next, 1);
    if (c >= j->chunks) break;
    uint32_t *cnt = j->count + c * VX_HASH_PARTS;
    const uint64_t a = c * HP_CHUNK, b = a + HP_CHUNK < j->n ? a + HP_CHUNK : j->n;
    if (j->stage == 0)
      for (uint64_t i = a; i < b; i++) cnt[j->hash(j->ctx, i) >> (64 - VX_HASH_BITS)]++;
    else /* hashed again: cheaper than 8 bytes an item kept in index order between the stages */
      for (uint64_t i = a; i < b; i++) {
        const uint64_t h = j->hash(j->ctx, i), k = cnt[h >> (64 - VX_HASH_BITS)]++;
        j->out->idx[k] = (uint32_t)i;
        j->out->hash[k] = h;
      }
  }
  return NULL;
}

static void hp_stage(hp_job *j, int stage, int threads) {
  j->stage = stage;
  atomic_store(&j->next, 0);
  vx_parallel(threads, hp_worker, j);
}

vx_status vx_hash_parts_build(uint64_t n, uint64_t (*hash)(const void *ctx, uint64_t i),
                              const void *ctx, int threads, vx_hash_parts *out, vx_error *err) {
  if (out->cap < n) {
    vx_hash_parts_free(out);
  } else {
    memset(out->start, 0, sizeof out->start);
  }
  if (n >= UINT32_MAX) return vx_error_set(err, VX_ERR_LIMIT, "%llu items to match (at most "
                                           "2^32 - 2)", (unsigned long long)n);
  hp_job j;
  memset(&j, 0, sizeof j);
  atomic_init(&j.next, 0);
  j.hash = hash;
  j.ctx = ctx;
  j.n = n;
  j.out = out;
  j.chunks = (n + HP_CHUNK - 1) / HP_CHUNK;
  if (!out->hash) {
    out->hash = (uint64_t *)vx_malloc((size_t)(n ? n : 1) * sizeof *out->hash);
    out->idx = (uint32_t *)vx_malloc((size_t)(n ? n : 1) * sizeof *out->idx);
    out->cap = n;
  }
  j.count = (uint32_t *)vx_calloc((size_t)(j.chunks ? j.chunks : 1) * VX_HASH_PARTS,
                                  sizeof *j.count);
  if (!out->hash || !out->idx || !j.count) {
    vx_free(j.count);
    vx_hash_parts_free(out);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory matching %llu items",
                        (unsigned long long)n);
  }
  const int nt = vx_thread_count(threads, j.chunks < 256 ? (int)(j.chunks ? j.chunks : 1) : 256);
  hp_stage(&j, 0, nt);
  uint64_t at = 0; /* partitions in order, chunks in order */
  for (int p = 0; p < VX_HASH_PARTS; p++) {
    out->start[p] = at;
    for (uint64_t c = 0; c < j.chunks; c++) {
      const uint32_t k = j.count[c * VX_HASH_PARTS + p];
      j.count[c * VX_HASH_PARTS + p] = (uint32_t)at;
      at += k;
    }
  }
  out->start[VX_HASH_PARTS] = at;
  hp_stage(&j, 1, nt);
  vx_free(j.count);
  return VX_OK;
}

void vx_hash_parts_free(vx_hash_parts *p) {
  vx_free(p->hash);
  vx_free(p->idx);
  memset(p, 0, sizeof *p);
}

void *vx_hash_scratch_get(vx_hash_scratch *w, size_t bytes) {
  if (bytes <= w->cap) return w->mem;
  vx_free(w->mem);
  w->cap = 0;
  w->mem = vx_malloc(bytes);
  if (w->mem) w->cap = bytes;
  return w->mem;
}

typedef struct run_job {
  void (*part)(void *ctx, int p, vx_hash_scratch *w);
  void *ctx;
  atomic_int next;
} run_job;

static void *run_worker(void *arg) {
  run_job *j = (run_job *)arg;
  vx_hash_scratch w = {NULL, 0};
  for (int k; (k = atomic_fetch_add(&j->next, 1)) < VX_HASH_PARTS;) j->part(j->ctx, k, &w);
  vx_free(w.mem);
  return NULL;
}

void vx_hash_parts_run(int threads, void (*fn)(void *ctx, int p, vx_hash_scratch *w), void *ctx) {
  run_job j;
  memset(&j, 0, sizeof j);
  atomic_init(&j.next, 0);
  j.part = fn;
  j.ctx = ctx;
  vx_parallel(vx_thread_count(threads, 256), run_worker, &j);
}
