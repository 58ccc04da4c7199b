/* SPDX-License-Identifier: Apache-2.0 */
/* test_sys_sort.c - vx_sort_parallel against the C library's qsort: the same bytes for every
 * number of threads, on keys with many ties broken by an index and on pieces already in order,
 * reversed, or all equal. vx_radix_sort against qsort by (key, position in the input), which is
 * what a stable sort gives: records of several sizes, the key at several offsets, every number
 * of threads; vx_sort_records likewise on records made in index order. */
#include "sys/sort.h"
#include "sys/alloc.h"
#include "check.h"

#include <stddef.h>
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

/* A record for the radix sort: its key at byte `off`, its position in the input after it, the
 * rest filled from the position (so a record moved whole keeps its bytes). */
static size_t rec_size, rec_off;

static uint64_t rec_key(const uint8_t *r) {
  uint64_t k;
  memcpy(&k, r + rec_off, 8);
  return k;
}

static uint32_t rec_pos(const uint8_t *r) {
  uint32_t p;
  memcpy(&p, r + (rec_off + 8) % (rec_size - 3), 4);
  return p;
}

static int cmp_stable(const void *pa, const void *pb) {
  const uint64_t a = rec_key((const uint8_t *)pa), b = rec_key((const uint8_t *)pb);
  if (a != b) return a < b ? -1 : 1;
  const uint32_t x = rec_pos((const uint8_t *)pa), y = rec_pos((const uint8_t *)pb);
  return x < y ? -1 : x > y;
}

static void radix_equals_stable_qsort(void) {
  const size_t sizes[] = {16, 24, 32, 48};
  const size_t counts[] = {0, 1, 2, 1000, 65535, 65536 + 3, 300007};
  const uint32_t bits[] = {1, 3, 8, 9, 12, 23, 39, 64};
  const int threads[] = {1, 2, 5, 16};
  for (size_t zi = 0; zi < 4; zi++)
    for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++)
      for (size_t bi = 0; bi < sizeof bits / sizeof *bits; bi++) {
        rec_size = sizes[zi];
        rec_off = zi == 1 ? 0 : rec_size - 8 - 8 * (bi % 2); /* the key first, last, or inside */
        const size_t n = counts[ci], z = rec_size;
        uint8_t *in = (uint8_t *)malloc(n * z + 1), *ref = (uint8_t *)malloc(n * z + 1);
        uint8_t *got = (uint8_t *)malloc(n * z + 1), *tmp = (uint8_t *)malloc(n * z + 1);
        const uint64_t mask = bits[bi] == 64 ? ~0ull : (1ull << bits[bi]) - 1;
        /* few distinct keys (many ties) for half the cases, any key below 2^bits for the rest */
        const uint64_t spread = ci % 2 ? mask : (mask < 37 ? mask : 37);
        for (size_t i = 0; i < n; i++) {
          uint8_t *r = in + i * z;
          for (size_t b = 0; b < z; b++) r[b] = (uint8_t)(i * 131 + b);
          const uint32_t p = (uint32_t)i;
          memcpy(r + (rec_off + 8) % (z - 3), &p, 4);
          const uint64_t k = (next_rand() % (spread == ~0ull ? spread : spread + 1)) & mask;
          memcpy(r + rec_off, &k, 8);
        }
        memcpy(ref, in, n * z);
        qsort(ref, n, z, cmp_stable);
        for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
          memcpy(got, in, n * z);
          const uint8_t *out = (const uint8_t *)vx_radix_sort(got, tmp, n, z, rec_off, bits[bi],
                                                              threads[t]);
          CHECK_MSG(out == got || out == tmp, "size %zu n %zu bits %u threads %d: the result "
                    "is in neither buffer", z, n, bits[bi], threads[t]);
          CHECK_MSG(n == 0 || memcmp(out, ref, n * z) == 0, "size %zu off %zu n %zu bits %u "
                    "threads %d", z, rec_off, n, bits[bi], threads[t]);
          if (threads[t] != 1 && n >= 65536)
            CHECK_MSG(out == got, "many records on several threads land in place");
        }
        free(in);
        free(ref);
        free(got);
        free(tmp);
      }
}

/* A bucket of the top digit with one record, others with many: every record lands in place. */
static void radix_lone_records(void) {
  const size_t n = 70000;
  uint64_t *a = (uint64_t *)malloc(2 * n * 8), *tmp = (uint64_t *)malloc(2 * n * 8);
  for (size_t i = 0; i < n; i++) {
    a[2 * i] = i == 100 ? 65535 : i == 200 ? 40000 : 5 + i % 3;
    a[2 * i + 1] = i;
  }
  const uint64_t *s = (const uint64_t *)vx_radix_sort(a, tmp, n, 16, 0, 16, 4);
  CHECK(s == a);
  CHECK(s[2 * (n - 1)] == 65535 && s[2 * (n - 1) + 1] == 100);
  CHECK(s[2 * (n - 2)] == 40000 && s[2 * (n - 2) + 1] == 200);
  int ordered = 1;
  for (size_t i = 1; i < n; i++)
    ordered &= s[2 * (i - 1)] < s[2 * i] || (s[2 * (i - 1)] == s[2 * i] && s[2 * i - 1] < s[2 * i + 1]);
  CHECK(ordered);
  free(a);
  free(tmp);
}

/* Records made in the order of the index their comparison breaks ties by: vx_sort_records (the
 * array possibly replaced by its scratch) gives qsort's order by (key, index). */
static void records_in_index_order(void) {
  const size_t counts[] = {0, 1, 2, 999, 65536 + 7, 200003};
  const int threads[] = {1, 3, 8};
  for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++)
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
      const size_t n = counts[ci];
      item *v = (item *)vx_malloc((n ? n : 1) * sizeof *v);
      item *ref = (item *)malloc((n ? n : 1) * sizeof *ref);
      for (size_t i = 0; i < n; i++) {
        v[i].key = next_rand() % (ci % 2 ? 50u : (1u << 20));
        v[i].id = (uint32_t)i;
        v[i].pad = 0;
      }
      memcpy(ref, v, n * sizeof *v);
      qsort(ref, n, sizeof *ref, cmp_item);
      void *a = v;
      vx_sort_records(&a, n, sizeof *v, offsetof(item, key), 20, cmp_item, threads[t]);
      CHECK_MSG(n == 0 || memcmp(a, ref, n * sizeof *ref) == 0, "n %zu threads %d", n,
                threads[t]);
      vx_free(a);
      free(ref);
    }
}

int main(void) {
  RUN(sort_equals_qsort);
  RUN(radix_lone_records);
  RUN(sort_plain_keys);
  RUN(radix_equals_stable_qsort);
  RUN(records_in_index_order);
  return check_summary();
}
