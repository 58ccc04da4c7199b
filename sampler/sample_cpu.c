/* sample_cpu.c - the CPU sampler: a thin loop around vx_sample_point() (svo/sample_eval.h).
 *
 * Points are handed out to the threads of vx_parallel in chunks of VX_SAMPLE_CHUNK through an
 * atomic counter, so threads that meet slow points (far ones walk for their sign) take fewer
 * chunks. Each point is independent: the results do not depend on the thread count. Points that
 * come in a coherent order (a surface scan, Morton order) share the tree's cache lines from one
 * point to the next; docs/python.md measures both orders.
 */
#include "sampler/sampler.h"
#include "svo/system.h"

#include <stdatomic.h>

#define VX_SAMPLE_CHUNK 4096

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

typedef struct sample_job {
  const vx_sample_tree *s;
  const float *points;
  uint64_t n;
  float *dist, *grad;
  uint8_t *flags;
  atomic_uint_fast64_t next;
  atomic_uint_fast64_t invalid;
  atomic_uint_fast64_t first_invalid;
} sample_job;

static void *sample_worker(void *arg) {
  sample_job *job = (sample_job *)arg;
  const vx_sample_tree *s = job->s;
  uint64_t invalid = 0, first = UINT64_MAX;
  for (;;) {
    uint64_t i0 = atomic_fetch_add(&job->next, VX_SAMPLE_CHUNK);
    if (i0 >= job->n) break;
    uint64_t i1 = i0 + VX_SAMPLE_CHUNK < job->n ? i0 + VX_SAMPLE_CHUNK : job->n;
    for (uint64_t i = i0; i < i1; i++) {
      float g[3];
      uint32_t fl;
      job->dist[i] = vx_sample_point(s, job->points + 3 * i, g, &fl);
      if (job->grad) {
        job->grad[3 * i + 0] = g[0];
        job->grad[3 * i + 1] = g[1];
        job->grad[3 * i + 2] = g[2];
      }
      if (job->flags) job->flags[i] = (uint8_t)fl;
      if (fl & VX_SAMPLE_INVALID) {
        if (!invalid) first = i;
        invalid++;
      }
    }
  }
  if (invalid) {
    atomic_fetch_add(&job->invalid, invalid);
    uint_fast64_t cur = atomic_load(&job->first_invalid);
    while (first < cur && !atomic_compare_exchange_weak(&job->first_invalid, &cur, first)) {
    }
  }
  return NULL;
}

void vx_sample_cpu(const vx_sample_tree *s, const float *points, uint64_t n, float *dist,
                   float *grad, uint8_t *flags, int threads, vx_sample_count *count) {
  sample_job job;
  job.s = s;
  job.points = points;
  job.n = n;
  job.dist = dist;
  job.grad = grad;
  job.flags = flags;
  atomic_init(&job.next, 0);
  atomic_init(&job.invalid, 0);
  atomic_init(&job.first_invalid, UINT64_MAX);
  uint64_t chunks = (n + VX_SAMPLE_CHUNK - 1) / VX_SAMPLE_CHUNK;
  int cap = chunks < 256 ? (int)(chunks ? chunks : 1) : 256;
  vx_parallel(vx_thread_count(threads, cap), sample_worker, &job);
  if (count) {
    count->invalid = atomic_load(&job.invalid);
    count->first_invalid = atomic_load(&job.first_invalid);
  }
}
