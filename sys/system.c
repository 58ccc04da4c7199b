/* SPDX-License-Identifier: Apache-2.0 */
/* system.c - clock, cores, memory, fork-join (system.h). */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include "sys/system.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

double vx_clock_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int vx_cpu_count(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (n > 4096 ? 4096 : (int)n) : 1;
}

uint64_t vx_physical_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 0;
  return (uint64_t)pages * (uint64_t)page;
}

static uint64_t statm_field(int which) {
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, res = 0;
  int n = fscanf(f, "%llu %llu", &size, &res);
  fclose(f);
  long page = sysconf(_SC_PAGESIZE);
  if (n != 2 || page <= 0) return 0;
  return (which ? res : size) * (uint64_t)page;
}

uint64_t vx_resident_bytes(void) { return statm_field(1); }
uint64_t vx_virtual_bytes(void) { return statm_field(0); }

uint64_t vx_default_mem_limit(void) {
  uint64_t m = vx_physical_memory();
  return m ? (uint64_t)((double)m * 0.8) : (uint64_t)16 << 30;
}

const char *vx_bytes_text(double b, char *buf, size_t n) {
  static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int i = 0;
  while (b >= 1024.0 && i < 6) {
    b /= 1024.0;
    i++;
  }
  snprintf(buf, n, i ? "%.2f %s" : "%.0f %s", b, unit[i]);
  return buf;
}

int vx_thread_count(int n, int cap) {
  if (n <= 0) n = vx_cpu_count();
  if (cap < 1) cap = 1;
  return n > cap ? cap : n;
}

#define VX_PARALLEL_MAX 256

int vx_parallel(int threads, void *(*fn)(void *), void *arg) {
  if (threads > VX_PARALLEL_MAX) threads = VX_PARALLEL_MAX;
  pthread_t th[VX_PARALLEL_MAX];
  int started = 0;
  for (int i = 1; i < threads; i++) {
    if (pthread_create(&th[started], NULL, fn, arg) != 0) break;
    started++;
  }
  fn(arg);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  return started + 1;
}

typedef struct range_job {
  void (*fn)(void *ctx, uint64_t a, uint64_t b);
  void *ctx;
  uint64_t n, tasks;
  atomic_uint_fast64_t next;
} range_job;

static void *range_worker(void *arg) {
  range_job *j = (range_job *)arg;
  for (uint64_t k; (k = atomic_fetch_add(&j->next, 1)) < j->tasks;) {
    const uint64_t a = k * VX_RANGE_CHUNK;
    j->fn(j->ctx, a, a + VX_RANGE_CHUNK < j->n ? a + VX_RANGE_CHUNK : j->n);
  }
  return NULL;
}

void vx_ranges_run(int threads, uint64_t n, void (*fn)(void *ctx, uint64_t a, uint64_t b),
                   void *ctx) {
  range_job j;
  j.fn = fn;
  j.ctx = ctx;
  j.n = n;
  j.tasks = (n + VX_RANGE_CHUNK - 1) / VX_RANGE_CHUNK;
  atomic_init(&j.next, 0);
  vx_parallel(vx_thread_count(threads, j.tasks < 256 ? (int)(j.tasks ? j.tasks : 1) : 256),
              range_worker, &j);
}

typedef struct item_job {
  void (*fn)(void *ctx, uint64_t item);
  void *ctx;
  uint64_t items;
  atomic_uint_fast64_t next;
} item_job;

static void *item_worker(void *arg) {
  item_job *j = (item_job *)arg;
  for (uint64_t i; (i = atomic_fetch_add(&j->next, 1)) < j->items;) j->fn(j->ctx, i);
  return NULL;
}

void vx_items_run(int threads, uint64_t items, void (*fn)(void *ctx, uint64_t item), void *ctx) {
  if (items == 0) return;
  item_job j;
  j.fn = fn;
  j.ctx = ctx;
  j.items = items;
  atomic_init(&j.next, 0);
  vx_parallel(vx_thread_count(threads, items < 256 ? (int)items : 256), item_worker, &j);
}

/* ---- reading a file's bytes on several threads --------------------------------------------- */

#define READ_PIECE ((uint64_t)8 << 20)

typedef struct read_job {
  int fd;
  uint8_t *dst;
  uint64_t n, off;
  int error; /* atomic: the first failure's errno */
} read_job;

static void read_piece(void *ctx, uint64_t k) {
  read_job *j = (read_job *)ctx;
  uint64_t at = k * READ_PIECE, end = at + READ_PIECE < j->n ? at + READ_PIECE : j->n;
  while (at < end && !__atomic_load_n(&j->error, __ATOMIC_RELAXED)) {
    const ssize_t r = pread(j->fd, j->dst + at, (size_t)(end - at), (off_t)(j->off + at));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      int zero = 0;
      __atomic_compare_exchange_n(&j->error, &zero, r < 0 ? errno : -1, 0, __ATOMIC_RELAXED,
                                  __ATOMIC_RELAXED);
      return;
    }
    at += (uint64_t)r;
  }
}

int vx_read_at(int fd, void *dst, uint64_t n, uint64_t off, int threads) {
  read_job j = {fd, (uint8_t *)dst, n, off, 0};
  vx_items_run(threads, (n + READ_PIECE - 1) / READ_PIECE, read_piece, &j);
  return j.error;
}

uint64_t vx_exclusive_sum(uint64_t *a, uint64_t n) {
  uint64_t sum = 0;
  for (uint64_t i = 0; i < n; i++) {
    const uint64_t v = a[i];
    a[i] = sum;
    sum += v;
  }
  return sum;
}
