/* SPDX-License-Identifier: Apache-2.0 */
/* sort.c - qsort on every core (sort.h).
 *
 * P pieces of about n / P elements are sorted by qsort, one per task. Then rounds of merges:
 * round r merges runs 2j and 2j + 1 into the other buffer. A merge of runs A and B is cut into
 * parts at A's elements a_i = |A| i / k and B's first element not below A[a_i] (binary search),
 * so part i writes out[a_i + b_i ...] on its own; ties go to A, as one serial merge does. Every
 * round has about `threads` tasks whatever its number of runs.
 */
#include "sys/sort.h"
#include "sys/alloc.h"
#include "sys/system.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MIN_PIECE 16384u
#define MAX_PIECES 256u

typedef struct sort_job {
  char *src, *dst;
  size_t size;
  int (*cmp)(const void *, const void *);
  const size_t *run;  /* run r is [run[r], run[r + 1]) in src */
  size_t runs, parts; /* this round: runs to pair up, parts per pair */
  atomic_size_t next;
} sort_job;

static void *piece_worker(void *arg) {
  sort_job *j = (sort_job *)arg;
  for (size_t r; (r = atomic_fetch_add(&j->next, 1)) < j->runs;)
    qsort(j->src + j->run[r] * j->size, j->run[r + 1] - j->run[r], j->size, j->cmp);
  return NULL;
}

/* Number of elements of b[0, nb) that compare below x. */
static size_t below(const char *b, size_t nb, size_t size, const void *x,
                    int (*cmp)(const void *, const void *)) {
  size_t lo = 0, hi = nb;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cmp(b + mid * size, x) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static void merge(const char *a, size_t na, const char *b, size_t nb, char *out, size_t size,
                  int (*cmp)(const void *, const void *)) {
  while (na && nb) {
    if (cmp(b, a) < 0) {
      memcpy(out, b, size);
      b += size, nb--;
    } else {
      memcpy(out, a, size);
      a += size, na--;
    }
    out += size;
  }
  memcpy(out, na ? a : b, (na ? na : nb) * size);
}

static void *merge_worker(void *arg) {
  sort_job *j = (sort_job *)arg;
  const size_t pairs = (j->runs + 1) / 2, z = j->size;
  for (size_t t; (t = atomic_fetch_add(&j->next, 1)) < pairs * j->parts;) {
    const size_t pair = t / j->parts, i = t % j->parts, r = 2 * pair;
    const size_t a0 = j->run[r], na = j->run[r + 1] - a0;
    const size_t nb = r + 1 < j->runs ? j->run[r + 2] - j->run[r + 1] : 0;
    const char *a = j->src + a0 * z, *b = a + na * z;
    size_t ai = na * i / j->parts, aj = na * (i + 1) / j->parts;
    size_t bi = ai < na ? below(b, nb, z, a + ai * z, j->cmp) : nb;
    size_t bj = aj < na ? below(b, nb, z, a + aj * z, j->cmp) : nb;
    if (i == 0) bi = 0; /* the first part also takes B's elements below A[0] */
    merge(a + ai * z, aj - ai, b + bi * z, bj - bi, j->dst + (a0 + ai + bi) * z, z, j->cmp);
  }
  return NULL;
}

void vx_sort_parallel(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *),
                      int threads) {
  threads = vx_thread_count(threads, 64);
  size_t P = (size_t)threads * 2;
  if (P > MAX_PIECES) P = MAX_PIECES;
  if (P > n / MIN_PIECE) P = n / MIN_PIECE;
  char *tmp = P >= 2 && threads > 1 ? (char *)vx_malloc(n * size) : NULL;
  if (!tmp) {
    qsort(base, n, size, cmp);
    return;
  }
  size_t run[MAX_PIECES + 1];
  for (size_t r = 0; r <= P; r++) run[r] = n * r / P;
  sort_job j;
  memset(&j, 0, sizeof j);
  j.src = (char *)base;
  j.dst = tmp;
  j.size = size;
  j.cmp = cmp;
  j.run = run;
  j.runs = P;
  atomic_init(&j.next, 0);
  vx_parallel(threads, piece_worker, &j);
  while (j.runs > 1) {
    const size_t pairs = (j.runs + 1) / 2;
    j.parts = ((size_t)threads + pairs - 1) / pairs;
    atomic_store(&j.next, 0);
    vx_parallel(threads, merge_worker, &j);
    for (size_t r = 0; r <= pairs; r++) run[r] = run[2 * r < j.runs ? 2 * r : j.runs];
    j.runs = pairs;
    char *s = j.src;
    j.src = j.dst;
    j.dst = s;
  }
  if (j.src != (char *)base) memcpy(base, j.src, n * size);
  vx_free(tmp);
}

/* ---- radix ------------------------------------------------------------------------------------
 * Few records, or one thread: LSD passes of at most 11 bits, the order of equal keys kept by each
 * counting pass. Otherwise the top digit (at most 8 bits) splits the records into buckets: RADIX
 * ranges count their digits on every core, then scatter into tmp, each range at its own slots per
 * bucket (so equal keys keep their order); each bucket then sorts its low bits by LSD passes on
 * its own, an odd number of them, from tmp back into a. */

#define RADIX_RANGES 64u
#define RADIX_SERIAL 65536u

typedef struct radix_job {
  char *a, *tmp;
  size_t n, size, off;
  uint32_t low;     /* bits below the top digit */
  size_t buckets;   /* of the top digit */
  size_t *hist;     /* RADIX_RANGES x buckets: counts, then each range's next slot per bucket */
  size_t *start;    /* buckets + 1 */
  int phase;        /* 0 count, 1 scatter, 2 buckets */
} radix_job;

static inline uint64_t key_at(const char *rec, size_t off) {
  uint64_t k;
  memcpy(&k, rec + off, sizeof k);
  return k;
}

/* One record copied; the common sizes with a constant length, so the copy is inlined. */
static inline void rec_copy(char *d, const char *s, size_t z) {
  switch (z) {
  case 16: memcpy(d, s, 16); return;
  case 32: memcpy(d, s, 32); return;
  case 48: memcpy(d, s, 48); return;
  default: memcpy(d, s, z);
  }
}

/* LSD passes over n records from src, digits of dbits from bit `shift` up to `bits`; returns
 * where the result is (src or dst). */
static char *lsd(char *src, char *dst, size_t n, size_t z, size_t off, uint32_t shift,
                 uint32_t bits, uint32_t dbits) {
  size_t hist[2048];
  const uint64_t mask = ((uint64_t)1 << dbits) - 1;
  for (; shift < bits; shift += dbits) {
    memset(hist, 0, sizeof(size_t) << dbits);
    for (size_t i = 0; i < n; i++) hist[key_at(src + i * z, off) >> shift & mask]++;
    size_t at = 0;
    for (size_t d = 0; d <= mask; d++) {
      const size_t c = hist[d];
      hist[d] = at;
      at += c;
    }
    for (size_t i = 0; i < n; i++)
      rec_copy(dst + hist[key_at(src + i * z, off) >> shift & mask]++ * z, src + i * z, z);
    char *t = src;
    src = dst;
    dst = t;
  }
  return src;
}

static void radix_range(const radix_job *j, size_t p, size_t *a, size_t *b) {
  *a = j->n * p / RADIX_RANGES;
  *b = j->n * (p + 1) / RADIX_RANGES;
}

static void radix_item(void *ctx, uint64_t item) {
  radix_job *j = (radix_job *)ctx;
  const size_t z = j->size;
  if (j->phase < 2) {
    size_t a, b, *h = j->hist + item * j->buckets;
    radix_range(j, item, &a, &b);
    for (size_t i = a; i < b; i++) {
      const char *r = j->a + i * z;
      const size_t d = (size_t)(key_at(r, j->off) >> j->low) & (j->buckets - 1);
      if (j->phase == 0) h[d]++;
      else rec_copy(j->tmp + h[d]++ * z, r, z);
    }
    return;
  }
  const size_t s = j->start[item], n = j->start[item + 1] - s;
  char *dst = j->a + s * z, *r = j->tmp + s * z;
  if (n > 1 && j->low) {
    const uint32_t passes = ((j->low + 10) / 11) | 1; /* odd: the result lands in a */
    r = lsd(r, dst, n, z, j->off, 0, j->low, (j->low + passes - 1) / passes);
  }
  if (r != dst) memcpy(dst, r, n * z);
}

static void radix_phase(radix_job *j, int threads, int phase) {
  j->phase = phase;
  vx_items_run(threads, phase < 2 ? RADIX_RANGES : j->buckets, radix_item, j);
}

void *vx_radix_sort(void *a, void *tmp, size_t n, size_t size, size_t off, uint32_t bits,
                    int threads) {
  if (bits > 64) bits = 64;
  if (n < 2 || bits == 0) return a;
  threads = vx_thread_count(threads, 64);
  if (threads <= 1 || n < RADIX_SERIAL) {
    const uint32_t passes = (bits + 10) / 11, dbits = (bits + passes - 1) / passes;
    return lsd((char *)a, (char *)tmp, n, size, off, 0, bits, dbits);
  }
  radix_job j;
  memset(&j, 0, sizeof j);
  j.a = (char *)a;
  j.tmp = (char *)tmp;
  j.n = n;
  j.size = size;
  j.off = off;
  const uint32_t top = bits < 8 ? bits : 8;
  j.low = bits - top;
  j.buckets = (size_t)1 << top;
  j.hist = (size_t *)vx_calloc(RADIX_RANGES * j.buckets, sizeof(size_t));
  j.start = (size_t *)vx_calloc(j.buckets + 1, sizeof(size_t));
  if (!j.hist || !j.start) {
    vx_free(j.hist);
    vx_free(j.start);
    return NULL;
  }
  radix_phase(&j, threads, 0);
  size_t at = 0;
  for (size_t b = 0; b < j.buckets; b++) {
    j.start[b] = at;
    for (size_t p = 0; p < RADIX_RANGES; p++) {
      const size_t c = j.hist[p * j.buckets + b];
      j.hist[p * j.buckets + b] = at;
      at += c;
    }
  }
  j.start[j.buckets] = at;
  radix_phase(&j, threads, 1);
  radix_phase(&j, threads, 2);
  vx_free(j.hist);
  vx_free(j.start);
  return a;
}

void vx_sort_records(void **a, size_t n, size_t size, size_t off, uint32_t bits,
                     int (*cmp)(const void *, const void *), int threads) {
  if (n < 2) return;
  void *tmp = vx_malloc(n * size);
  void *r = tmp ? vx_radix_sort(*a, tmp, n, size, off, bits, threads) : NULL;
  if (r && r == tmp) {
    tmp = *a;
    *a = r;
  }
  vx_free(tmp);
  if (!r) vx_sort_parallel(*a, n, size, cmp, threads);
}
