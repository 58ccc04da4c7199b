/* SPDX-License-Identifier: Apache-2.0 */
/* voxlod/experimental.h - calls outside the stable API: benchmarks of the renderer and the
 * sampler, with their statistics (timings, GPU register counts).
 *
 * Nothing here is frozen: names, arguments and structs may change in any release, 1.x included.
 * They are declared only for a program that asks for them by defining VOXLOD_EXPERIMENTAL before
 * including voxlod.h (as zstd's ZSTD_STATIC_LINKING_ONLY):
 *
 *   #define VOXLOD_EXPERIMENTAL
 *   #include <voxlod.h>
 *
 * `voxlod bench` and the benchmark programs use them.
 */
#ifndef VOXLOD_EXPERIMENTAL_H
#define VOXLOD_EXPERIMENTAL_H

#ifndef VOXLOD_EXPERIMENTAL
#error "voxlod/experimental.h is not part of the stable API: define VOXLOD_EXPERIMENTAL first"
#endif

#include "voxlod/base.h"
#include "voxlod/render.h"
#include "voxlod/sample.h"

VX_EXTERN_C_BEGIN

/* ---- renderer benchmark ---------------------------------------------------------------------- */

typedef struct vx_renderer_bench_stats {
  uint32_t struct_size;          /* sizeof(vx_renderer_bench_stats), or 0 */
  int frames;                    /* timed frames */
  double ms_median, ms_min, ms_max; /* per frame: render only (GPU: CUDA events) */
  double ms_copy_median;         /* per frame: render + copy of the RGB pixels to host memory,
                                    wall time, median (what vx_render costs) */
  double mrays_per_s;            /* width * height / ms_median */
  double visits_per_ray;         /* node and voxel fetches per primary ray, mean over the views */
  double hit_fraction;           /* pixels that hit the surface, over the views */
  uint64_t device_used_bytes;    /* GPU memory in use during the run, all processes included */
  int regs_per_thread;           /* the kernel's registers (GPU) */
} vx_renderer_bench_stats;

/* Times `frames` frames cycling through `nviews` views (each an opts with its camera), after
 * rendering every view once to warm up. The views lie views[0].struct_size bytes apart (0: the
 * first layout's size), so an array from an older header is read as such. */
VX_API vx_status vx_renderer_bench(vx_renderer *r, const vx_render_opts *views, int nviews,
                                   int frames, vx_renderer_bench_stats *st, vx_error *err);

/* ---- sampler benchmark ----------------------------------------------------------------------- */

typedef struct vx_sampler_bench_stats {
  uint32_t struct_size; /* sizeof(vx_sampler_bench_stats), or 0 */
  int used_gpu;
  int reps;             /* timed runs */
  uint64_t points;
  double ms_median, ms_min; /* per run over all points: GPU: the kernel on device-resident
                               points and outputs (CUDA events); CPU: wall time */
  double points_per_s;  /* points / ms_median */
  double ms_copy_median;/* GPU: the same run from host arrays, copies included (wall time) */
  uint64_t flag_counts[8]; /* points per flag bit (bit k: flag 1 << k), from the last run */
  int regs_per_thread;  /* GPU: the kernel's registers */
  double ms_setup;      /* with opts->band_cache: building the band cache (0 when the tree or
                           the sampler had it already), on the GPU with its upload */
  uint64_t cache_bytes; /* the band cache's size (0: none) */
} vx_sampler_bench_stats;

/* Times `reps` runs over the same n host points (after one warm-up run): on the GPU the points
 * and outputs are put in device memory once, so the rate is the kernel's; then the same through
 * host arrays. */
VX_API vx_status vx_sampler_bench(vx_sampler *s, const vx_sample_opts *opts, const float *points,
                                  uint64_t n, int reps, vx_sampler_bench_stats *st, vx_error *err);

VX_EXTERN_C_END

#endif
