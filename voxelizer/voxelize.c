/* SPDX-License-Identifier: Apache-2.0 */
/* voxelize.c - the whole build: grid transform, sign tables, surface voxels with corner values,
 * octree, planes, pruning.
 *
 * The stages and their files: winding.c (the default sign: generalized winding number, Jacobson
 * et al. 2013, evaluated as in Barill et al. 2018) or sign.c (pseudo-normals, Baerentzen &
 * Aanaes 2005, opts->sign_rule), blocks.c
 * (conservative voxelization by blocks in Morton order, Akenine-Moller 2001 overlap), field.c
 * (corner distances, Ericson 2005 closest point), then svo.c's bottom-up builder and lod.c's
 * plane fit and pruning. Before any large allocation the build estimates its memory from the
 * mesh's surface area and refuses early when that is already over opts->mem_limit. This is the
 * plain in-core path (and the tests' reference); ooc.c builds the same tree block by block in
 * bounded memory (vx_voxelize_stream), which is what `voxlod convert` uses.
 */
#define _POSIX_C_SOURCE 200809L
#include "sys/system.h"
#include "voxelizer/voxelizer.h"
#include "voxelizer/internal.h"
#include "svo/lod.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


vx_status vx_voxelize_transform(const vx_soup *mesh, uint32_t resolution, vx_transform *xf,
                                vx_error *err) {
  if (resolution < 2 || resolution > (1u << VX_MAX_TILED_DEPTH) ||
      (resolution & (resolution - 1)))
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "resolution %u is not a power of two between 2 and %u", resolution,
                        1u << VX_MAX_TILED_DEPTH);
  if (!mesh || mesh->tri_count == 0)
    return vx_error_set(err, VX_ERR_EMPTY, "the mesh has no triangles");
  double ext = 0.0;
  for (int i = 0; i < 3; i++) {
    if (!isfinite(mesh->bbox_min[i]) || !isfinite(mesh->bbox_max[i]) ||
        mesh->bbox_max[i] < mesh->bbox_min[i])
      return vx_error_set(err, VX_ERR_INVALID_ARG, "the mesh's bounding box is not finite");
    double e = mesh->bbox_max[i] - mesh->bbox_min[i];
    if (e > ext) ext = e;
  }
  if (!(ext > 0.0))
    return vx_error_set(err, VX_ERR_EMPTY, "the mesh's bounding box has no extent");
  xf->scale = ext / (double)resolution;
  for (int i = 0; i < 3; i++)
    xf->origin[i] = 0.5 * (mesh->bbox_min[i] + mesh->bbox_max[i]) - 0.5 * ext;
  return VX_OK;
}

/* A deliberately low estimate of the build's peak bytes, so that only builds that are obviously
 * too large are refused: surface voxels >= area / (2 sqrt 2) (a unit cube's largest section is
 * sqrt 2; halved for surfaces that share voxels), about 40 bytes each at the peak (codes and
 * field twice while blocks are concatenated, tree voxels and nodes), plus the per-triangle tables
 * (the sign tables at the peak of their construction, vx_sign_peak_bytes, and 72 B for the
 * triangles in grid coordinates: each block's on the CPU, all of them on the GPU).
 * The CPU and GPU builds check the same estimate. */
double vx_soup_grid_area(const vx_soup *m, const vx_transform *xf) {
  double area = 0.0;
  for (uint64_t t = 0; t < m->tri_count; t++) {
    double g[9];
    vx_grid_tri(m, xf, t, g);
    area += vx_grid_tri_area(g);
  }
  return area;
}

/* Measured on a 5.4 M-triangle scan (the plan of a tiled build, resident bytes over the mesh's):
 * 169 B a triangle at the peak for the pseudo-normal tables, 202 B with the winding tree and the
 * clean flags, tile lists included; rounded down, as the estimates are low ones. */
double vx_sign_peak_bytes(int rule) { return rule == VX_SIGN_PSEUDO_NORMAL ? 140.0 : 180.0; }

static double estimate_bytes(const vx_soup *m, const vx_transform *xf, int rule, double *voxels) {
  double area = vx_soup_grid_area(m, xf);
  *voxels = area / (2.0 * sqrt(2.0));
  return *voxels * 40.0 + (double)m->tri_count * (vx_sign_peak_bytes(rule) + 72.0);
}

/* VX_ERR_LIMIT when even the low estimate is over opts->mem_limit. */
static vx_status check_limit(const vx_soup *mesh, const vx_voxelize_opts *opts,
                             const vx_transform *xf, const char *what, vx_error *err) {
  if (!opts->mem_limit) return VX_OK;
  double voxels, need = estimate_bytes(mesh, xf, opts->sign_rule, &voxels);
  if (need <= (double)opts->mem_limit) return VX_OK;
  char a[32], b[32];
  return vx_error_set(err, VX_ERR_LIMIT,
                      "a %u^3 %sbuild of this mesh needs at least about %s (%.3g surface voxels), "
                      "over the memory limit of %s",
                      opts->resolution, what, vx_bytes_text(need, a, sizeof a), voxels,
                      vx_bytes_text((double)opts->mem_limit, b, sizeof b));
}

vx_status vx_voxelize_setup(const vx_soup *mesh, const vx_voxelize_opts *opts, vx_transform *xf,
                            uint32_t *depth, float *band, vx_error *err) {
  if (!mesh || !opts) return vx_error_set(err, VX_ERR_INVALID_ARG, "no mesh or no options");
  if (opts->tile_depth == 0 && opts->resolution > (1u << VX_MAX_DEPTH))
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "resolution %u: one tree holds at most %u^3; finer grids are built in "
                        "tiles", opts->resolution, 1u << VX_MAX_DEPTH);
  vx_status st = vx_voxelize_transform(mesh, opts->resolution, xf, err);
  if (st != VX_OK) return st;
  if (opts->grid) *xf = *opts->grid; /* the whole mesh's, of which `mesh` is a part */
  *depth = 0;
  while ((1u << *depth) < opts->resolution) (*depth)++;
  *band = opts->band > 0.0f ? opts->band : VX_DEFAULT_BAND;
  if (!isfinite(*band) || *band > 127.0f)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "field band %g outside (0, 127] voxels",
                        (double)*band);
  if (opts->max_error < 0.0f || !isfinite(opts->max_error))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "max error %g is not a non-negative number",
                        (double)opts->max_error);
  /* a tile's: the tiled build checks the whole mesh once, not once per tile */
  if (opts->tile_depth) return VX_OK;
  return vx_overlap_check(mesh, xf, *depth, opts->mem_limit, opts->threads, NULL, err);
}

vx_status vx_voxelize_unique(const vx_soup *mesh, const vx_voxelize_opts *opts, vx_soup *store,
                             const vx_soup **use, uint64_t *dropped, vx_error *err) {
  memset(store, 0, sizeof *store);
  *use = mesh;
  *dropped = 0;
  if (!mesh || !opts) return VX_OK; /* setup refuses it */
  vx_status st = vx_soup_dedup(mesh, opts->mem_limit, opts->threads, store, dropped, err);
  if (st == VX_OK && store->pos) *use = store;
  return st;
}

/* What both in-core builds do first: clear the outputs, derive the grid, check the limit. */
static vx_status begin_in_core(const vx_soup *mesh, const vx_voxelize_opts *opts, vx_octree *out,
                               vx_voxelize_stats *stats, vx_transform *xf, uint32_t *depth,
                               float *band, const char *what, vx_error *err) {
  memset(out, 0, sizeof *out);
  if (stats) memset(stats, 0, sizeof *stats);
  vx_status st = vx_voxelize_setup(mesh, opts, xf, depth, band, err);
  return st != VX_OK ? st : check_limit(mesh, opts, xf, what, err);
}

static vx_status voxelize_unique(const vx_soup *mesh, const vx_voxelize_opts *opts,
                                 vx_octree *out, vx_voxelize_stats *stats, vx_error *err) {
  vx_transform xf;
  uint32_t depth;
  float band;
  vx_status st = begin_in_core(mesh, opts, out, stats, &xf, &depth, &band, "", err);
  if (st != VX_OK) return st;

  vx_sign_data sign;
  st = vx_sign_build_rule_ex(mesh, &xf, opts->sign_rule, 0, opts->threads, &sign, err);
  if (st != VX_OK) return st;
  vx_surface surf;
  vx_surface_opts so;
  memset(&so, 0, sizeof so);
  so.band = band;
  so.threads = opts->threads;
  so.progress = opts->progress;
  so.user = opts->user;
  so.mem_limit = opts->mem_limit;
  st = vx_surface_build(mesh, &xf, depth, &sign, &so, &surf, stats, err);
  vx_sign_free(&sign);
  if (st != VX_OK) return st;
  if (surf.count > UINT32_MAX) {
    vx_surface_free(&surf);
    return vx_error_set(err, VX_ERR_LIMIT, "%llu surface voxels: more than the 2^32 a tree holds",
                        (unsigned long long)surf.count);
  }
  st = vx_octree_build(depth, surf.codes, surf.field, surf.count, out, err);
  vx_surface_free(&surf);
  if (st != VX_OK) return st;
  out->xf = xf;
  out->band = band;
  out->prune_error = 0.0f;
  st = vx_octree_fit_planes(out, opts->progress, opts->user, err);
  if (st == VX_OK && opts->max_error > 0.0f) {
    st = vx_octree_prune(out, opts->max_error, err);
    out->prune_error = opts->max_error;
  }
  if (st != VX_OK) {
    vx_octree_free(out);
    return st;
  }
  if (stats) stats->nodes = out->node_count;
  return VX_OK;
}

/* The host memory of the GPU build's tree, prepared while the GPU computes the field: first
 * touching 2 GB of fresh pages costs the kernel a fault per page (0.5-1 s on the H100 host),
 * which this moves off the critical path. Surfaces have about one node per three voxels; the
 * capacity allows one per two (a tree needing more allocates its own). */
typedef struct prefault_job {
  vx_octree_prealloc pre;
  pthread_t th;
  int started;
} prefault_job;

static void *prefault_worker(void *arg) {
  prefault_job *j = (prefault_job *)arg;
  volatile char *v = (volatile char *)j->pre.voxels, *n = (volatile char *)j->pre.nodes;
  for (uint64_t i = 0; i < j->pre.voxel_cap * sizeof(vx_voxel); i += 4096) v[i] = 0;
  for (uint64_t i = 0; i < j->pre.node_cap * sizeof(vx_node) * 2 / 3; i += 4096) n[i] = 0;
  return NULL;
}

static void prefault_start(void *ctx, uint64_t voxels) {
  prefault_job *j = (prefault_job *)ctx;
  if (j->started || voxels == 0) return;
  j->pre.voxel_cap = voxels;
  j->pre.node_cap = voxels / 2 + 64;
  j->pre.voxels = (vx_voxel *)vx_malloc(((size_t)voxels * sizeof(vx_voxel) + 15) & ~(size_t)15);
  j->pre.nodes = (vx_node *)vx_malloc((size_t)j->pre.node_cap * sizeof(vx_node));
  if (j->pre.voxels && j->pre.nodes && pthread_create(&j->th, NULL, prefault_worker, j) == 0) {
    j->started = 1;
    return;
  }
  vx_free(j->pre.voxels);
  vx_free(j->pre.nodes);
  memset(&j->pre, 0, sizeof j->pre);
}

static void prefault_end(prefault_job *j) {
  if (j->started) pthread_join(j->th, NULL);
  j->started = 0;
}

/* The GPU build's sign tables, built beside the GPU's first steps. */
typedef struct sign_job {
  const vx_soup *mesh;
  const vx_transform *xf;
  int rule, threads, threaded, joined;
  pthread_t *th;
  vx_sign_data sign;
  vx_status status;
  vx_error err;
  double seconds;
} sign_job;

static void *sign_worker(void *arg) {
  sign_job *j = (sign_job *)arg;
  double t = vx_clock_seconds();
  j->status = vx_sign_build_rule_ex(j->mesh, j->xf, j->rule, 1, j->threads, &j->sign, &j->err);
  j->seconds = vx_clock_seconds() - t;
  return NULL;
}

static void sign_join(sign_job *j) {
  if (j->threaded && !j->joined) pthread_join(*j->th, NULL);
  j->joined = 1;
}

static const vx_sign_data *sign_wait(void *ctx, vx_error *err) {
  sign_job *j = (sign_job *)ctx;
  sign_join(j);
  if (j->status != VX_OK) {
    if (err) *err = j->err;
    return NULL;
  }
  return &j->sign;
}

/* The GPU surface build's options for a tree built on the device: the surface stays there. */
static void device_out_opts(vx_gpu_build_opts *go, uint64_t mem_limit) {
  memset(go, 0, sizeof *go);
  go->device_out = 1;
  go->mem_limit = mem_limit;
}

static vx_status voxelize_gpu_unique(const vx_soup *mesh, const vx_voxelize_opts *opts,
                                     vx_octree *out, vx_voxelize_stats *stats, vx_error *err) {
  vx_transform xf;
  uint32_t depth;
  float band;
  /* the whole tree comes back to host memory */
  vx_status st = begin_in_core(mesh, opts, out, stats, &xf, &depth, &band, "GPU ", err);
  if (st != VX_OK) return st;
  /* The sign tables are built on a second thread while the GPU finds and sorts the overlaps;
   * the field waits for them (sign_wait). */
  double t0 = vx_clock_seconds();
  sign_job sj;
  memset(&sj, 0, sizeof sj);
  sj.mesh = mesh;
  sj.xf = &xf;
  sj.rule = opts->sign_rule;
  sj.threads = opts->threads;
  pthread_t sth;
  sj.threaded = pthread_create(&sth, NULL, sign_worker, &sj) == 0;
  if (!sj.threaded) sign_worker(&sj);
  sj.th = &sth;
  vx_surface dev;
  vx_voxelize_stats gs;
  vx_gpu_build_opts go;
  device_out_opts(&go, opts->mem_limit);
  go.sign_wait = sign_wait;
  go.sign_ctx = &sj;
  prefault_job pf;
  memset(&pf, 0, sizeof pf);
  go.on_count = prefault_start;
  go.count_ctx = &pf;
  st = vx_surface_build_gpu(mesh, &xf, depth, NULL, band, &go, opts->progress, opts->user, &dev,
                            &gs, err);
  sign_join(&sj);
  vx_sign_free(&sj.sign);
  double t2 = vx_clock_seconds(), tsec[3] = {0, 0, 0};
  if (st == VX_OK) {
    prefault_end(&pf);
    st = vx_octree_build_gpu(&dev, depth, band, opts->max_error, &pf.pre, out, tsec, NULL, err);
  }
  vx_gpu_surface_free(&dev);
  prefault_end(&pf);
  vx_free(pf.pre.nodes); /* what the tree did not take */
  vx_free(pf.pre.voxels);
  if (st != VX_OK) return st;
  out->xf = xf; /* pruned on the GPU (opts->max_error) */
  out->band = band;
  if (stats) {
    *stats = gs;
    stats->nodes = out->node_count;
    stats->sec_sign = sj.seconds; /* on its own thread, inside sec_voxels */
    stats->sec_voxels = t2 - t0;
    stats->sec_tree = vx_clock_seconds() - t2;
    for (int k = 0; k < 3; k++) stats->sec_gpu_tree[k] = tsec[k];
  }
  return VX_OK;
}

vx_status vx_voxelize_tile_gpu(const vx_soup *mesh, const vx_voxelize_opts *opts,
                               const vx_stream_build_opts *xo, vx_octree *out,
                               vx_voxelize_stats *stats, vx_error *err) {
  memset(out, 0, sizeof *out);
  if (stats) memset(stats, 0, sizeof *stats);
  vx_transform xf;
  uint32_t gdepth;
  float band;
  const uint32_t T = opts ? opts->tile_depth : 0;
  if (!opts || !xo || !xo->sign || !xo->tile_root || T == 0)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "a GPU tile needs its depth, sign tables and "
                        "a place for its root's fit");
  vx_status st = vx_voxelize_setup(mesh, opts, &xf, &gdepth, &band, err);
  if (st != VX_OK) return st;
  if (T > VX_MAX_DEPTH || T > gdepth || (gdepth - T < 21 && opts->tile_code >> 3 * (gdepth - T)))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "tile %llu of depth %u outside a 2^%u grid",
                        (unsigned long long)opts->tile_code, T, gdepth);
  const double t0 = vx_clock_seconds();
  vx_surface dev;
  vx_voxelize_stats gs;
  vx_gpu_build_opts go;
  device_out_opts(&go, opts->mem_limit);
  go.region_log2 = T;
  go.region_code = opts->tile_code;
  go.resident = xo->gpu.resident;
  st = vx_surface_build_gpu(mesh, &xf, gdepth, xo->sign, band, &go, NULL, NULL, &dev, &gs, err);
  if (st != VX_OK) return st;
  if (dev.count == 0) {
    vx_gpu_surface_free(&dev);
    return vx_error_set(err, VX_ERR_EMPTY, "no surface voxels in tile %llu",
                        (unsigned long long)opts->tile_code);
  }
  /* the tree (16 B a node, about one per three voxels; 8 B a voxel) and what encoding it holds
   * besides (each section packed and compressed, about as much again) */
  const double tree = (double)dev.count * (8.0 + 16.0 / 2.0);
  if (opts->mem_limit && (double)vx_resident_bytes() + 2.5 * tree > (double)opts->mem_limit) {
    vx_gpu_surface_free(&dev);
    return vx_error_set(err, VX_ERR_LIMIT, "tile %llu: %llu surface voxels do not fit in memory "
                        "whole", (unsigned long long)opts->tile_code,
                        (unsigned long long)dev.count);
  }
  const double t1 = vx_clock_seconds();
  double tsec[3] = {0, 0, 0};
  st = vx_octree_build_gpu(&dev, T, band, opts->max_error, xo->tile_pre, out, tsec, xo->tile_root,
                           err);
  vx_gpu_surface_free(&dev);
  if (st != VX_OK) return st;
  vx_transform_cell(&xf, opts->tile_code, T, &out->xf);
  out->band = band; /* pruned on the GPU (opts->max_error) */
  if (stats) {
    *stats = gs;
    stats->nodes = out->node_count;
    stats->sec_voxels = t1 - t0;
    stats->sec_tree = vx_clock_seconds() - t1;
    for (int k = 0; k < 3; k++) stats->sec_gpu_tree[k] = tsec[k];
  }
  return VX_OK;
}

/* The public entry points: duplicates dropped first (dedup.c), then the build on what is left. */
typedef vx_status (*build_fn)(const vx_soup *, const vx_voxelize_opts *, vx_octree *,
                              vx_voxelize_stats *, vx_error *);

static vx_status run_unique(build_fn fn, const vx_soup *mesh, const vx_voxelize_opts *opts,
                            vx_octree *out, vx_voxelize_stats *stats, vx_error *err) {
  vx_soup uniq;
  const vx_soup *m;
  uint64_t dropped;
  if (out) memset(out, 0, sizeof *out);
  if (stats) memset(stats, 0, sizeof *stats);
  vx_status st = vx_voxelize_unique(mesh, opts, &uniq, &m, &dropped, err);
  if (st != VX_OK) return st;
  st = fn(m, opts, out, stats, err);
  vx_soup_free(&uniq);
  if (stats) stats->duplicates = dropped;
  return st;
}

vx_status vx_voxelize(const vx_soup *mesh, const vx_voxelize_opts *opts, vx_octree *out,
                      vx_voxelize_stats *stats, vx_error *err) {
  return run_unique(voxelize_unique, mesh, opts, out, stats, err);
}

vx_status vx_voxelize_gpu(const vx_soup *mesh, const vx_voxelize_opts *opts, vx_octree *out,
                          vx_voxelize_stats *stats, vx_error *err) {
  return run_unique(voxelize_gpu_unique, mesh, opts, out, stats, err);
}
