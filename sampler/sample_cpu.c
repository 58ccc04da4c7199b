/* SPDX-License-Identifier: Apache-2.0 */
/* sample_cpu.c - the CPU sampler: a thin loop around vx_sample_point() (sampler/sample_eval.h).
 *
 * Points are handed out to the threads of vx_parallel in chunks of VX_SAMPLE_CHUNK through an
 * atomic counter, so threads that meet slow points (far ones walk for their sign) take fewer
 * chunks. Each point is independent: the results do not depend on the thread count or the
 * order in which the points are visited.
 *
 * Order. Points that come in a coherent order (a surface scan, Morton order) share the tree's
 * cache lines from one point to the next; shuffled points miss the cache at nearly every level of
 * every descent (on the development machine a point in a surface voxel took 4x as long shuffled).
 * So a block of shuffled points is visited bucket by bucket: each point's bucket is the cell of a
 * coarse grid (8^b cells in Morton order, up to 4 per point) that holds it, a counting pass
 * orders the indices by bucket (stable), and the threads follow that order, reading and writing
 * each point in place (prefetched a few points ahead). A block whose first points mostly share a
 * bucket with their predecessor is visited as it comes. Without memory for the order, the points
 * go as they come. The loop over a span of points is sample_span.c, built for the processor.
 */
#include "sampler/sampler.h"
#include "sampler/sample_span.h"
#include "sys/alloc.h"
#include "sys/system.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>

#define VX_SAMPLE_CHUNK 4096
#define VX_SAMPLE_BIN_MIN ((uint64_t)1 << 14)   /* fewer points: visited as they come */
#define VX_SAMPLE_BIN_BLOCK ((uint64_t)1 << 22) /* points ordered at a time (16 MiB per array) */
#define VX_SAMPLE_BIN_BITS 6                    /* bits per axis of the buckets at most */
#define VX_SAMPLE_BIN_PROBE ((uint64_t)1 << 16) /* points whose order decides whether to bin */

void vx_sample_tree_init(vx_sample_tree *s, const vx_octree *t, uint32_t cut) {
  memset(s, 0, sizeof *s);
  s->nodes = t->nodes;
  s->voxels = t->voxels;
  s->depth = t->depth;
  s->levels = t->levels_loaded < t->depth + 1 ? t->levels_loaded : t->depth + 1;
  if (s->levels > t->depth && !t->voxels) s->levels = t->depth;
  s->cut = cut < s->levels - 1 ? cut : s->levels - 1;
  s->band = t->band;
  for (int i = 0; i < 3; i++) s->origin[i] = (float)t->xf.origin[i];
  s->scale = (float)t->xf.scale;
  s->inv_scale = (float)(1.0 / t->xf.scale);
}

int vx_sample_tree_fits(const vx_octree *t) { return vx_octree_check_world(t, VX_WORLD_FLOAT, NULL) == VX_OK; }

typedef struct sample_job {
  vx_sample_span a;
  vx_sample_span_fn span;
  uint64_t n;
  atomic_uint_fast64_t next;
  atomic_uint_fast64_t invalid;
  atomic_uint_fast64_t first_invalid;
} sample_job;

static void *sample_worker(void *arg) {
  sample_job *job = (sample_job *)arg;
  uint64_t invalid = 0, first = UINT64_MAX;
  for (;;) {
    uint64_t i0 = atomic_fetch_add(&job->next, VX_SAMPLE_CHUNK);
    if (i0 >= job->n) break;
    uint64_t i1 = i0 + VX_SAMPLE_CHUNK < job->n ? i0 + VX_SAMPLE_CHUNK : job->n;
    invalid += job->span(&job->a, i0, i1, &first);
  }
  if (invalid) {
    atomic_fetch_add(&job->invalid, invalid);
    uint_fast64_t cur = atomic_load(&job->first_invalid);
    while (first < cur && !atomic_compare_exchange_weak(&job->first_invalid, &cur, first)) {
    }
  }
  return NULL;
}

/* Orders points [0, n) by bucket into order[] (key[n] and hist[8^bits + 1] are work space).
 * Returns 0 when the points already come mostly bucket by bucket (order not written). */
static int bin_points(const vx_sample_tree *s, const float *points, uint64_t n, uint32_t bits,
                      uint32_t *key, uint32_t *hist, uint32_t *order) {
  const uint32_t nb = 1u << (3 * bits);
  const uint64_t probe = n < VX_SAMPLE_BIN_PROBE ? n : VX_SAMPLE_BIN_PROBE;
  uint64_t changes = 0;
  for (uint64_t i = 0; i < probe; i++) {
    key[i] = vx_se_bucket(s, points + 3 * i, bits);
    changes += i && key[i] != key[i - 1];
  }
  if (changes * 8 < probe) return 0;
  for (uint64_t i = probe; i < n; i++) key[i] = vx_se_bucket(s, points + 3 * i, bits);
  memset(hist, 0, ((size_t)nb + 1) * sizeof *hist);
  for (uint64_t i = 0; i < n; i++) hist[key[i] + 1]++;
  for (uint32_t b = 0; b < nb; b++) hist[b + 1] += hist[b];
  for (uint64_t i = 0; i < n; i++) order[hist[key[i]]++] = (uint32_t)i;
  return 1;
}

static void run_block(sample_job *job, const float *points, uint64_t n, float *dist, float *grad,
                      uint8_t *flags, const uint32_t *order, int threads,
                      uint_fast64_t *invalid, uint_fast64_t *first_invalid, uint64_t base) {
  job->a.points = points;
  job->a.order = order;
  job->a.dist = dist;
  job->a.grad = grad;
  job->a.flags = flags;
  job->n = n;
  atomic_init(&job->next, 0);
  atomic_init(&job->invalid, 0);
  atomic_init(&job->first_invalid, UINT64_MAX);
  uint64_t chunks = (n + VX_SAMPLE_CHUNK - 1) / VX_SAMPLE_CHUNK;
  int cap = chunks < 256 ? (int)(chunks ? chunks : 1) : 256;
  vx_parallel(vx_thread_count(threads, cap), sample_worker, job);
  uint_fast64_t inv = atomic_load(&job->invalid), first = atomic_load(&job->first_invalid);
  if (inv && *invalid == 0) *first_invalid = base + first;
  *invalid += inv;
}

void vx_sample_cpu(const vx_sample_tree *s, const float *points, uint64_t n, float *dist,
                   float *grad, uint8_t *flags, int threads, vx_sample_count *count) {
  sample_job job;
  job.a.s = s;
  job.a.run = VX_SE_RUN_ALL;
  job.span = vx_sample_span_pick();
  uint_fast64_t invalid = 0, first_invalid = UINT64_MAX;
  /* buckets: up to 4 cells per point of a block, no finer than the voxels */
  const uint64_t block = n < VX_SAMPLE_BIN_BLOCK ? n : VX_SAMPLE_BIN_BLOCK;
  uint32_t bits = 0;
  while (bits < VX_SAMPLE_BIN_BITS && bits < s->depth && (1ull << (3 * (bits + 1))) <= 4 * block)
    bits++;
  uint32_t *key = NULL, *order = NULL, *hist = NULL;
  if (n >= VX_SAMPLE_BIN_MIN) {
    key = (uint32_t *)vx_malloc((size_t)block * sizeof *key);
    order = (uint32_t *)vx_malloc((size_t)block * sizeof *order);
    hist = (uint32_t *)vx_malloc(((size_t)1 << (3 * bits)) * sizeof *hist + sizeof *hist);
  }
  const int binned = key && order && hist;
  const uint64_t step = binned ? block : n; /* one block of all the points when not ordered */
  uint64_t at = 0;
  do {
    const uint64_t m = n - at < step ? n - at : step;
    const uint32_t *ord =
        binned && bin_points(s, points + 3 * at, m, bits, key, hist, order) ? order : NULL;
    run_block(&job, points + 3 * at, m, dist + at, grad ? grad + 3 * at : NULL,
              flags ? flags + at : NULL, ord, threads, &invalid, &first_invalid, at);
    at += m;
  } while (at < n);
  vx_free(key);
  vx_free(order);
  vx_free(hist);
  if (count) {
    count->invalid = invalid;
    count->first_invalid = first_invalid;
  }
}
