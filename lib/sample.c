/* SPDX-License-Identifier: Apache-2.0 */
/* sample.c - signed-distance queries (include/voxlod/sample.h): option checks, the one-shot call
 * on the CPU or the GPU, the sampler object that keeps the tree on the GPU and takes host or
 * device pointers, the benchmark, and points near the surface. The work is sampler/'s. */
#include "lib/internal.h"
#include "marcher/gpu_render.h"
#include "sampler/sampler.h"
#include "sampler/resigned.h"
#include "sys/system.h"

#include <stdio.h>
#include <stdlib.h>

struct vx_sampler {
  const vx_tree *tree;
  const uint32_t *resigned; /* the tree's (tree_resigned) */
  vx_gpu_view *own_view; /* the tree uploaded by this sampler (NULL: borrowed or CPU) */
  vx_gpu_sampler *gpu;   /* NULL: the CPU */
  /* on the GPU: the band cache it built and uploaded (its sizes; the arrays live on the device) */
  vx_band_cache *gpu_cache;
  int threads;
  vx_notes notes;
};

/* A tree whose transform or band only a double holds: sampling and its points are float32. */
static vx_status fits_error(const vx_tree *t, vx_error *err) {
  return vx_octree_check_world(&t->oct, VX_WORLD_FLOAT, err);
}

vx_status vx_sample_opts_check(const vx_sample_opts *o, uint32_t depth, uint32_t *cut,
                               vx_error *err) {
  switch (o->lod) {
  case VX_LOD_FINEST:
    *cut = depth;
    break;
  case VX_LOD_LEVEL:
    if (o->level < 0 || o->level > (int)depth)
      return vx_error_set(err, VX_ERR_INVALID_ARG,
                          "level of detail %d outside 0..%u (the tree's depth)", o->level,
                          depth);
    *cut = (uint32_t)o->level;
    break;
  case VX_LOD_PIXEL:
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "sampling has no pixels: use the finest level or a level");
  default:
    return vx_error_set(err, VX_ERR_INVALID_ARG, "unknown level-of-detail mode %d", (int)o->lod);
  }
  if (o->device != VX_DEVICE_AUTO && o->device != VX_DEVICE_CPU && o->device != VX_DEVICE_GPU)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "unknown device %d", (int)o->device);
  if (o->threads < 0 || o->threads > 1024)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "thread count %d outside 0..1024", o->threads);
  if (o->nonfinite != VX_NONFINITE_NAN && o->nonfinite != VX_NONFINITE_FAIL)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "unknown non-finite policy %d", o->nonfinite);
  if (o->band_cache != 0 && o->band_cache != 1)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "band_cache must be 0 or 1, not %d",
                        o->band_cache);
  return VX_OK;
}

/* Options of one call: the cut (a level of the tree) and the checks every call makes. */
static vx_status call_opts(const vx_tree *t, const vx_sample_opts *opts, vx_sample_opts *o,
                           uint32_t *cut, vx_error *err) {
  vx_status os = VX_OPTS_IN(*o, opts, err);
  if (os != VX_OK) return os;
  if (!t || !t->oct.nodes || t->oct.levels_loaded < 1)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "no tree to sample (or no level loaded)");
  if (!vx_sample_tree_fits(&t->oct)) return fits_error(t, err);
  return vx_sample_opts_check(o, t->oct.depth, cut, err);
}

static vx_status check_arrays(const float *points, uint64_t n, const float *dist, vx_error *err) {
  if (n > (uint64_t)SIZE_MAX / (3 * sizeof(float)))
    return vx_error_set(err, VX_ERR_LIMIT, "%llu points do not fit in memory",
                        (unsigned long long)n);
  if (n && (!points || !dist))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "no points or no memory for the distances");
  return VX_OK;
}

/* The policy for non-finite points, after a run. */
static vx_status check_count(const vx_sample_opts *o, const vx_sample_count *c, vx_error *err) {
  if (o->nonfinite == VX_NONFINITE_FAIL && c->invalid)
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "point %llu has a NaN or infinite coordinate, or one so far out that its "
                        "grid coordinate overflows single precision (%llu such points)",
                        (unsigned long long)c->first_invalid, (unsigned long long)c->invalid);
  return VX_OK;
}

static void fill_stats(vx_sample_stats *stats, int gpu, int device, uint64_t n,
                       const vx_sample_count *c, double t0, double ms_kernel, double ms_copy) {
  if (!stats) return;
  vx_sample_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  s.used_gpu = gpu;
  s.device_pointers = device;
  s.points = n;
  s.invalid = c->invalid;
  s.ms_total = (vx_clock_seconds() - t0) * 1e3;
  s.ms_kernel = ms_kernel;
  s.ms_copy = ms_copy;
  VX_STATS_OUT(stats, s);
}

/* The voxels of t that the thin rule re-signed (sampler/resigned.h, NULL: none), found on the first
 * call and kept with the tree, which never changes after it is made. Calls that start together
 * may each find them; one result is kept. */
static vx_status tree_resigned(const vx_tree *t, int threads, const uint32_t **out,
                               vx_error *err) {
  vx_tree *m = (vx_tree *)t; /* a cache of what the tree holds */
  uint32_t *b = __atomic_load_n(&m->resigned, __ATOMIC_ACQUIRE);
  *out = b;
  if (b) return VX_OK;
  vx_status st = vx_octree_resigned(&t->oct, threads, &b, err);
  if (st != VX_OK || !b) return st; /* no voxels loaded: nothing to keep */
  uint32_t *none = NULL;
  if (!__atomic_compare_exchange_n(&m->resigned, &none, b, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    vx_free(b);
    b = none; /* another call's */
  }
  *out = b;
  return VX_OK;
}

/* The band cache of t (sampler/band_cache.h; NULL: t has no voxels), built on the first call that
 * asks for it and kept with the tree, as the re-signed voxels are (which it reads). */
static vx_status tree_band_cache(const vx_tree *t, const vx_sample_tree *tr, int threads,
                                 const vx_band_cache **out, vx_error *err) {
  vx_tree *m = (vx_tree *)t;
  vx_band_cache *c = __atomic_load_n(&m->band_cache, __ATOMIC_ACQUIRE);
  *out = c;
  if (c) return VX_OK;
  vx_status st = vx_band_cache_build(tr, threads, &c, err);
  if (st != VX_OK || !c) return st;
  vx_band_cache *none = NULL;
  if (!__atomic_compare_exchange_n(&m->band_cache, &none, c, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    vx_band_cache_free(c);
    c = none;
  }
  *out = c;
  return VX_OK;
}

/* Sets tr->cache when the call asks for the band cache and samples at full detail. */
static vx_status use_band_cache(const vx_tree *t, const vx_sample_opts *o, vx_sample_tree *tr,
                                int threads, vx_error *err) {
  if (!o->band_cache || tr->cut < t->oct.depth || tr->levels < t->oct.depth + 1u) return VX_OK;
  return tree_band_cache(t, tr, threads, &tr->cache, err);
}

/* The same for a sampler. On the GPU the sampler builds its own, filled by the device (so that CPU
 * results never depend on a GPU's), and keeps it there. */
static vx_status sampler_band_cache(vx_sampler *s, const vx_sample_opts *o, vx_sample_tree *tr,
                                    vx_error *err) {
  const int threads = o->threads ? o->threads : s->threads;
  if (!s->gpu) return use_band_cache(s->tree, o, tr, threads, err);
  if (!o->band_cache || tr->cut < s->tree->oct.depth || tr->levels < s->tree->oct.depth + 1u)
    return VX_OK;
  if (!s->gpu_cache) {
    vx_band_cache *c = NULL;
    vx_status st = vx_band_cache_build_on(tr, threads, s->gpu, &c, err);
    if (st != VX_OK) return st;
    s->gpu_cache = c;
  }
  tr->cache = s->gpu_cache;
  return VX_OK;
}

/* ---- the sampler ------------------------------------------------------------------------------ */

void vx_sampler_free(vx_sampler *s) {
  if (!s) return;
  vx_band_cache_free(s->gpu_cache);
  vx_gpu_sampler_free(s->gpu);
  vx_gpu_view_free(s->own_view);
  vx_free(s);
}

/* The GPU half of a sampler: a renderer's view when given, else an upload of its own. */
static vx_status gpu_attach(vx_sampler *s, const vx_renderer *r, vx_error *err) {
  vx_gpu_view *view = r ? vx_renderer_gpu_view(r, s->tree) : NULL;
  if (!view) {
    vx_status st = vx_gpu_view_create(&s->tree->oct, &s->own_view, err);
    if (st != VX_OK) return st;
    view = s->own_view;
  }
  return vx_gpu_sampler_create(vx_gpu_view_resident(view), s->resigned, s->tree->oct.voxel_count,
                               &s->gpu, err);
}

vx_status vx_sampler_create(const vx_tree *t, const vx_sampler_opts *opts, vx_sampler **out,
                            vx_error *err) {
  if (!out) return vx_error_set(err, VX_ERR_INVALID_ARG, "no place for the sampler");
  *out = NULL;
  if (!t || !t->oct.nodes) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tree to sample");
  vx_sampler_opts o;
  vx_status os = VX_OPTS_IN(o, opts, err);
  if (os != VX_OK) return os;
  if (o.device != VX_DEVICE_AUTO && o.device != VX_DEVICE_CPU && o.device != VX_DEVICE_GPU)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "unknown device %d", (int)o.device);
  if (o.threads < 0 || o.threads > 1024)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "thread count %d outside 0..1024", o.threads);
  vx_sampler *s = (vx_sampler *)vx_calloc(1, sizeof *s);
  if (!s) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  s->tree = t;
  s->threads = o.threads;
  vx_status rs = tree_resigned(t, o.threads, &s->resigned, err);
  if (rs != VX_OK) {
    vx_sampler_free(s);
    return rs;
  }
  if (o.device != VX_DEVICE_CPU) {
    vx_error ge;
    memset(&ge, 0, sizeof ge);
    vx_status st = gpu_attach(s, o.renderer, &ge);
    if (st != VX_OK) {
      vx_gpu_sampler_free(s->gpu);
      vx_gpu_view_free(s->own_view);
      s->gpu = NULL;
      s->own_view = NULL;
      if (o.device == VX_DEVICE_GPU) {
        if (err) *err = ge;
        vx_sampler_free(s);
        return st;
      }
      vx_notes_add(&s->notes, "GPU sampling unavailable (%s); using the CPU", ge.msg);
    }
  }
  *out = s;
  return VX_OK;
}

int vx_sampler_uses_gpu(const vx_sampler *s) { return s && s->gpu; }

const char *vx_sampler_notes(const vx_sampler *s) { return s ? s->notes.text : ""; }

vx_status vx_sampler_sample(vx_sampler *s, const vx_sample_opts *opts, const float *points,
                            uint64_t n, float *dist, float *grad, uint8_t *flags,
                            vx_sample_stats *stats, vx_error *err) {
  double t0 = vx_clock_seconds();
  if (!s) return vx_error_set(err, VX_ERR_INVALID_ARG, "no sampler");
  vx_sample_opts o;
  uint32_t cut = 0;
  vx_status st = call_opts(s->tree, opts, &o, &cut, err);
  if (st == VX_OK) st = check_arrays(points, n, dist, err);
  if (st != VX_OK) return st;
  vx_sample_tree tr;
  vx_sample_tree_init(&tr, &s->tree->oct, cut);
  tr.resigned = s->resigned;
  vx_sample_count c;
  memset(&c, 0, sizeof c);
  if ((st = sampler_band_cache(s, &o, &tr, err)) != VX_OK) return st;
  if (!s->gpu) {
    double tk = vx_clock_seconds();
    vx_sample_cpu(&tr, points, n, dist, grad, flags, o.threads ? o.threads : s->threads, &c);
    fill_stats(stats, 0, 0, n, &c, t0, (vx_clock_seconds() - tk) * 1e3, 0.0);
    return check_count(&o, &c, err);
  }
  /* all four arrays in one kind of memory */
  const void *arr[4] = {points, dist, grad, flags};
  int host = 0, dev = 0;
  for (int i = 0; i < 4; i++) {
    if (!arr[i]) continue;
    int k = vx_gpu_pointer_kind(s->gpu, arr[i]);
    if (k < 0)
      return vx_error_set(err, VX_ERR_INVALID_ARG,
                          "an array lives on another CUDA device than the sampler's tree");
    if (k) dev++;
    else host++;
  }
  if (host && dev)
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "points and outputs must all be device memory or all host memory "
                        "(%d device, %d host arrays)", dev, host);
  vx_gpu_sample_times tm;
  memset(&tm, 0, sizeof tm);
  st = vx_gpu_sample(s->gpu, &tr, dev > 0, o.cuda_stream, points, n, dist, grad, flags, &c, &tm,
                     err);
  if (st != VX_OK) return st;
  fill_stats(stats, 1, dev > 0, n, &c, t0, tm.ms_kernel, tm.ms_copy);
  return check_count(&o, &c, err);
}

vx_status vx_tree_sample(const vx_tree *t, const vx_sample_opts *opts, const float *points,
                         uint64_t n, float *dist, float *grad, uint8_t *flags,
                         vx_sample_stats *stats, vx_error *err) {
  double t0 = vx_clock_seconds();
  vx_sample_opts o;
  uint32_t cut = 0;
  vx_status st = call_opts(t, opts, &o, &cut, err);
  if (st == VX_OK) st = check_arrays(points, n, dist, err);
  if (st != VX_OK) return st;
  if (o.device == VX_DEVICE_GPU) {
    vx_sampler_opts so;
    memset(&so, 0, sizeof so);
    so.struct_size = sizeof so;
    so.device = VX_DEVICE_GPU;
    vx_sampler *s = NULL;
    if ((st = vx_sampler_create(t, &so, &s, err)) != VX_OK) return st;
    vx_sample_stats whole;
    memset(&whole, 0, sizeof whole);
    whole.struct_size = sizeof whole;
    st = vx_sampler_sample(s, &o, points, n, dist, grad, flags, &whole, err);
    vx_sampler_free(s);
    if (st == VX_OK && stats) {
      whole.ms_total = (vx_clock_seconds() - t0) * 1e3; /* the whole call, the upload included */
      VX_STATS_OUT(stats, whole);
    }
    return st;
  }
  vx_sample_tree tr;
  vx_sample_tree_init(&tr, &t->oct, cut);
  /* the re-signed voxels at a cut too: a node at the cut without a usable plane is replaced by
   * its children, down to voxels (as a sampler, CPU or GPU, always reads them) */
  if ((st = tree_resigned(t, o.threads, &tr.resigned, err)) != VX_OK) return st;
  if ((st = use_band_cache(t, &o, &tr, o.threads, err)) != VX_OK) return st;
  vx_sample_count c;
  memset(&c, 0, sizeof c);
  double tk = vx_clock_seconds();
  vx_sample_cpu(&tr, points, n, dist, grad, flags, o.threads, &c);
  fill_stats(stats, 0, 0, n, &c, t0, (vx_clock_seconds() - tk) * 1e3, 0.0);
  return check_count(&o, &c, err);
}

/* ---- benchmark -------------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median_sorted(const double *v, int n) {
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

vx_status vx_sampler_bench(vx_sampler *s, const vx_sample_opts *opts, const float *points,
                           uint64_t n, int reps, vx_sampler_bench_stats *st_out, vx_error *err) {
  if (!s || !st_out || reps < 1 || reps > 100000 || n == 0)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "sample bench: need a sampler, points, 1..100000 runs");
  vx_sample_opts o;
  uint32_t cut = 0;
  vx_status st = call_opts(s->tree, opts, &o, &cut, err);
  if (st == VX_OK) st = check_arrays(points, n, points, err);
  if (st != VX_OK) return st;
  vx_sample_tree tr;
  vx_sample_tree_init(&tr, &s->tree->oct, cut);
  tr.resigned = s->resigned;
  double *ms = (double *)vx_calloc((size_t)reps, sizeof *ms);
  float *dist = (float *)vx_malloc((size_t)n * sizeof(float));
  uint8_t *flags = (uint8_t *)vx_malloc((size_t)n);
  vx_sampler_bench_stats b;
  memset(&b, 0, sizeof b);
  b.struct_size = sizeof b;
  b.reps = reps;
  b.points = n;
  b.used_gpu = s->gpu != NULL;
  if (!ms || !dist || !flags) st = vx_error_set(err, VX_ERR_NOMEM, "sample bench: out of memory");
  if (st == VX_OK) {
    double tb = vx_clock_seconds();
    st = sampler_band_cache(s, &o, &tr, err);
    b.ms_setup = (vx_clock_seconds() - tb) * 1e3;
    b.cache_bytes = vx_band_cache_bytes(tr.cache);
  }
  if (st == VX_OK && s->gpu) {
    st = vx_gpu_sample_bench(s->gpu, &tr, points, n, reps, ms, b.flag_counts, &b.regs_per_thread,
                             err);
  } else if (st == VX_OK) {
    int threads = o.threads ? o.threads : s->threads;
    vx_sample_cpu(&tr, points, n, dist, NULL, flags, threads, NULL); /* warm-up */
    for (int r = 0; r < reps; r++) {
      double t0 = vx_clock_seconds();
      vx_sample_cpu(&tr, points, n, dist, NULL, flags, threads, NULL);
      ms[r] = (vx_clock_seconds() - t0) * 1e3;
    }
    qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
    for (uint64_t i = 0; i < n; i++)
      for (int k = 0; k < 8; k++) b.flag_counts[k] += flags[i] >> k & 1u;
  }
  if (st == VX_OK) {
    b.ms_median = median_sorted(ms, reps);
    b.ms_min = ms[0];
    b.points_per_s = b.ms_median > 0.0 ? (double)n / (b.ms_median * 1e-3) : 0.0;
    b.ms_copy_median = b.ms_median;
  }
  if (st == VX_OK && s->gpu) {
    /* the same through host arrays, as vx_sampler_sample does them (wall time: the call returns
     * when the results are in host memory), after a warm-up call that allocates the staging
     * buffers */
    st = vx_gpu_sample(s->gpu, &tr, 0, NULL, points, n, dist, NULL, flags, NULL, NULL, err);
    for (int r = 0; r < reps && st == VX_OK; r++) {
      double t0 = vx_clock_seconds();
      st = vx_gpu_sample(s->gpu, &tr, 0, NULL, points, n, dist, NULL, flags, NULL, NULL, err);
      ms[r] = (vx_clock_seconds() - t0) * 1e3;
    }
    if (st == VX_OK) {
      qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
      b.ms_copy_median = median_sorted(ms, reps);
    }
  }
  vx_free(ms);
  vx_free(dist);
  vx_free(flags);
  if (st == VX_OK) VX_STATS_OUT(st_out, b);
  return st;
}

/* ---- points near the surface ------------------------------------------------------------------ */

vx_status vx_tree_surface_points(const vx_tree *t, const vx_surface_points_opts *opts, uint64_t n,
                                 float *points, vx_error *err) {
  if (!t) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tree");
  if (!vx_sample_tree_fits(&t->oct)) return fits_error(t, err);
  vx_surface_points_opts o;
  vx_status os = VX_OPTS_IN(o, opts, err);
  if (os != VX_OK) return os;
  if (n > (uint64_t)SIZE_MAX / (3 * sizeof(float)))
    return vx_error_set(err, VX_ERR_LIMIT, "%llu points do not fit in memory",
                        (unsigned long long)n);
  if (!(o.spread >= 0.0f) || !(o.spread <= 1e6f))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "spread %g is not a number in [0, 1e6] voxels",
                        (double)o.spread);
  float spread = o.spread > 0.0f ? o.spread : t->oct.band;
  return vx_octree_surface_points(&t->oct, n, spread, o.seed, o.shuffle != 0, points, err);
}
