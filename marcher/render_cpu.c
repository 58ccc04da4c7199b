/* SPDX-License-Identifier: Apache-2.0 */
/* render_cpu.c - the CPU renderer: a thin loop around vx_render_pixel() (trace.h).
 *
 * Rows are handed out to worker threads (pthreads) one band of rows at a time through an atomic
 * counter, so threads that draw empty sky take more rows than threads that draw the model. Each
 * pixel is independent; the image does not depend on the thread count.
 */
#include "marcher/scene.h"
#include "sys/system.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define VX_ROWS_PER_TASK 4
#define VX_MAX_THREADS 256

typedef struct render_job {
  const vx_trace_scene *scene;
  const vx_tiled_scene *tiled; /* a tiled tree's scene instead (trace_tiled.h), or NULL */
  vx_march_image *img;
  atomic_uint next_row;
} render_job;

static void *render_worker(void *arg) {
  render_job *job = (render_job *)arg;
  const vx_trace_scene *s = job->scene;
  const vx_tiled_scene *ts = job->tiled;
  vx_march_image *img = job->img;
  for (;;) {
    uint32_t y0 = atomic_fetch_add(&job->next_row, VX_ROWS_PER_TASK);
    if (y0 >= s->height) break;
    uint32_t y1 = y0 + VX_ROWS_PER_TASK < s->height ? y0 + VX_ROWS_PER_TASK : s->height;
    for (uint32_t y = y0; y < y1; y++)
      for (uint32_t x = 0; x < s->width; x++) {
        vx_pixel p;
        if (ts)
          vx_render_pixel_tiled(ts, x, y, &p);
        else
          vx_render_pixel(s, x, y, &p);
        size_t i = (size_t)y * s->width + x;
        img->rgb[3 * i + 0] = p.rgb[0];
        img->rgb[3 * i + 1] = p.rgb[1];
        img->rgb[3 * i + 2] = p.rgb[2];
        img->depth[i] = p.depth;
        if (img->visits) img->visits[i] = p.visits;
      }
  }
  return NULL;
}

/* Draws every row of img on `threads` threads. */
static void run_job(const vx_trace_scene *s, const vx_tiled_scene *ts, vx_march_image *img,
                    int threads) {
  uint32_t max_useful = (s->height + VX_ROWS_PER_TASK - 1) / VX_ROWS_PER_TASK;
  threads = vx_thread_count(threads, max_useful < VX_MAX_THREADS ? (int)max_useful : VX_MAX_THREADS);
  render_job job;
  job.scene = s;
  job.tiled = ts;
  job.img = img;
  atomic_init(&job.next_row, 0);
  vx_parallel(threads, render_worker, &job);
}

vx_status vx_render_cpu(const vx_octree *t, const vx_march_opts *o, vx_march_image *img, int threads,
                        vx_error *err) {
  vx_status st = vx_render_check(t, o, err);
  if (st != VX_OK) return st;
  if (!img || !img->rgb || !img->depth || img->width != o->width || img->height != o->height)
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "render: the image buffer is not allocated for %ux%u", o->width,
                        o->height);
  vx_trace_scene s;
  vx_trace_scene_init(&s, t, o);
  run_job(&s, NULL, img, threads);
  return VX_OK;
}

vx_status vx_render_cpu_tiled(const vx_tiled_scene *ts, vx_march_image *img, int threads,
                              vx_error *err) {
  const vx_trace_scene *s = ts->use_top ? &ts->top : &ts->tile;
  if (!img || !img->rgb || !img->depth || img->width != s->width || img->height != s->height)
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "render: the image buffer is not allocated for %ux%u", s->width, s->height);
  run_job(s, ts, img, threads);
  return VX_OK;
}
