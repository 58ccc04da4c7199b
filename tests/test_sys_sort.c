/* SPDX-License-Identifier: Apache-2.0 */
/* test_sys_sort.c - vx_sort_parallel against the C library's qsort: the same bytes for every
 * number of threads, on keys with many ties broken by an index and on pieces already in order,
 * reversed, or all equal. */
#include "sys/sort.h"
#include "check.h"

#include <stdint.h>

typedef struct item {
  uint64_t key;
  uint32_t id;
  uint32_t pad;
} item;

static int cmp_item(const void *pa, const void *pb) {
  const item *a = (const item *)pa, *b = (const item *)pb;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

static int cmp_u32(const void *pa, const void *pb) {
  uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
  return a < b ? -1 : a > b;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static void fill(item *v, size_t n, int kind) {
  for (size_t i = 0; i < n; i++) {
    uint64_t r = next_rand();
    v[i].key = kind == 0 ? r % 1000 : kind == 1 ? i : kind == 2 ? n - i : kind == 3 ? 7 : r;
    v[i].id = (uint32_t)(r >> 40);
    v[i].pad = 0;
  }
}

static void sort_equals_qsort(void) {
  const size_t sizes[] = {0, 1, 2, 100, 16384, 32768 + 7, 100000, 1000003};
  const int threads[] = {1, 2, 3, 7, 16, 64};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
    for (int kind = 0; kind < 5; kind++) {
      const size_t n = sizes[s];
      item *ref = (item *)malloc((n ? n : 1) * sizeof *ref);
      item *got = (item *)malloc((n ? n : 1) * sizeof *got);
      fill(ref, n, kind);
      for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
        memcpy(got, ref, n * sizeof *ref);
        if (t == 0) qsort(ref, n, sizeof *ref, cmp_item);
        vx_sort_parallel(got, n, sizeof *got, cmp_item, threads[t]);
        CHECK_MSG(memcmp(got, ref, n * sizeof *ref) == 0, "n %zu kind %d threads %d", n, kind,
                  threads[t]);
      }
      free(ref);
      free(got);
    }
}

/* Plain keys with ties (no index): sorted, and a permutation of the input (the same multiset). */
static void sort_plain_keys(void) {
  const size_t n = 500000;
  uint32_t *a = (uint32_t *)malloc(n * 4), *b = (uint32_t *)malloc(n * 4);
  for (size_t i = 0; i < n; i++) a[i] = b[i] = (uint32_t)(next_rand() % 5000);
  qsort(a, n, 4, cmp_u32);
  vx_sort_parallel(b, n, 4, cmp_u32, 8);
  CHECK(memcmp(a, b, n * 4) == 0);
  free(a);
  free(b);
}

int main(void) {
  RUN(sort_equals_qsort);
  RUN(sort_plain_keys);
  return check_summary();
}
