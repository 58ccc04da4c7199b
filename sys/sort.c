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
