/* SPDX-License-Identifier: Apache-2.0 */
/* tiled_render.c - a tiled tree drawn within a memory budget (lib/tiled_render.h). */
#include "lib/tiled_render.h"
#include "formats/svo_tiled.h"
#include "lib/tiled_arena.h"
#include "marcher/gpu_render.h"
#include "marcher/scene.h"
#include "svo/gpu_tree.h"
#include "sys/system.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

/* One copy of a tile's levels 0..level: host arrays (CPU) or a device resident (GPU). */
typedef struct copy {
  int level; /* -1: none */
  vx_octree host;
  vx_gpu_resident *dev;
  uint64_t bytes;
} copy;

enum { JOB_NONE, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

typedef struct tile {
  uint64_t bytes[VX_MAX_DEPTH + 2]; /* bytes of levels 0..L, per L */
  uint32_t cell[3];
  copy coarse, fine;
  int target;   /* this frame's level */
  double dist;  /* from the eye to the tile's box, grid units */
  int visible;
  /* its read by a loader (under the loaders' lock): state, level, the tree read, the outcome */
  int job, job_level;
  vx_octree job_tree;
  vx_status job_status;
  vx_error job_err;
} tile;

/* The loaders: threads that read tiles, each with a reader of its own on the file, taking the
 * queued tiles nearest first. */
#define VX_TILE_LOADERS 4
typedef struct loaders {
  pthread_t thread[VX_TILE_LOADERS];
  vx_tiled *reader[VX_TILE_LOADERS];
  int n;                  /* started */
  pthread_mutex_t lock;
  pthread_cond_t wake;    /* to the loaders: a queue changed, or quit */
  pthread_cond_t done;    /* to the frame: a read finished */
  int quit;
  uint32_t *queue;        /* tiles to read, nearest first */
  uint64_t queued, next;
} loaders;

typedef struct loader_arg {
  struct vx_tiled_render *tr;
  int k;
} loader_arg;

struct vx_tiled_render {
  vx_tiled *t;
  vx_svo_read_opts ro;
  vx_octree shape; /* the top tree as a D-level tree (arrays borrowed from the reader) */
  uint32_t D, T, K;
  uint64_t n;
  tile *tiles;
  int32_t *cells;
  size_t ncells;
  vx_tile_ref *refs;
  int gpu, threads, stream;
  vx_gpu_view *view; /* GPU: the top tree, frame buffers, the tables */
  uint64_t budget, top_bytes;
  int coarse;        /* the coarse copies' level (in a tile) */
  uint32_t loaded, pending;
  uint32_t *order;         /* tiles nearest first (ties: lower index first) */
  struct tile_key { double dist; uint32_t tile; } *keys;
  loaders ld;
  loader_arg args[VX_TILE_LOADERS];
  char device[256];
};

/* Bytes of a tile's levels 0..L (with their colours in a coloured file). */
static uint64_t tile_bytes(const vx_octree *h, uint32_t T, int L, int color) {
  const uint64_t c = color ? sizeof(uint32_t) : 0;
  uint64_t b = 0;
  for (int l = 0; l <= L && l < (int)T; l++) b += h->level_count[l] * (sizeof(vx_node) + c);
  if (L >= (int)T) b += h->level_count[T] * (sizeof(vx_voxel) + c);
  return b;
}

static void copy_free(copy *c) {
  vx_octree_free(&c->host);
  memset(&c->host, 0, sizeof c->host);
  vx_gpu_resident_free(c->dev);
  c->dev = NULL;
  c->level = -1;
  c->bytes = 0;
}

/* Makes the host tree h tile i's copy c: uploaded (and freed) on the GPU, kept on the CPU. */
static vx_status adopt(vx_tiled_render *tr, uint64_t i, int level, vx_octree *h, copy *c,
                       vx_error *err) {
  c->level = level;
  c->bytes = tr->tiles[i].bytes[level];
  if (!tr->gpu) {
    c->host = *h;
    memset(h, 0, sizeof *h);
    return VX_OK;
  }
  vx_status s = vx_gpu_resident_create(h, &c->dev, err);
  vx_octree_free(h);
  memset(h, 0, sizeof *h);
  if (s != VX_OK) c->level = -1;
  return s;
}

/* ---- the loaders ---------------------------------------------------------------------------- */

static void *loader_main(void *arg) {
  loader_arg *la = (loader_arg *)arg;
  vx_tiled_render *tr = la->tr;
  loaders *L = &tr->ld;
  vx_svo_read_opts ro = tr->ro;
  pthread_mutex_lock(&L->lock);
  for (;;) {
    while (!L->quit && L->next >= L->queued) pthread_cond_wait(&L->wake, &L->lock);
    if (L->quit) break;
    tile *tl = &tr->tiles[L->queue[L->next]];
    const uint64_t i = L->queue[L->next++];
    if (tl->job != JOB_QUEUED) continue;
    tl->job = JOB_RUNNING;
    const int level = tl->job_level;
    pthread_mutex_unlock(&L->lock);
    vx_octree h;
    vx_error e;
    memset(&e, 0, sizeof e);
    ro.max_level = level >= (int)tr->T ? -1 : level;
    vx_status s = vx_tiled_read_tile(L->reader[la->k], i, &ro, &h, &e);
    pthread_mutex_lock(&L->lock);
    tl->job = JOB_DONE;
    tl->job_tree = h;
    tl->job_status = s;
    tl->job_err = e;
    pthread_cond_broadcast(&L->done);
  }
  pthread_mutex_unlock(&L->lock);
  return NULL;
}

static void loaders_stop(vx_tiled_render *tr) {
  loaders *L = &tr->ld;
  if (L->n > 0) {
    pthread_mutex_lock(&L->lock);
    L->quit = 1;
    pthread_cond_broadcast(&L->wake);
    pthread_mutex_unlock(&L->lock);
    for (int k = 0; k < L->n; k++) pthread_join(L->thread[k], NULL);
    pthread_mutex_destroy(&L->lock);
    pthread_cond_destroy(&L->wake);
    pthread_cond_destroy(&L->done);
  }
  for (int k = 0; k < VX_TILE_LOADERS; k++) vx_tiled_close(L->reader[k]);
  for (uint64_t i = 0; tr->tiles && i < tr->n; i++)
    if (tr->tiles[i].job == JOB_DONE) vx_octree_free(&tr->tiles[i].job_tree);
  vx_free(L->queue);
  L->n = 0;
}

/* Readers of their own on the file (the same file: its header, tiles and size), and the
 * threads. */
static vx_status loaders_start(vx_tiled_render *tr, const char *path, vx_error *err) {
  loaders *L = &tr->ld;
  L->queue = (uint32_t *)vx_calloc((size_t)tr->n, sizeof *L->queue);
  if (!L->queue) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  uint64_t bytes = 0, want = 0;
  vx_tiled_totals(tr->t, NULL, NULL, &want);
  const vx_tiled_header *h0 = vx_tiled_get_header(tr->t);
  for (int k = 0; k < VX_TILE_LOADERS; k++) {
    vx_status s = vx_tiled_open(path, &tr->ro, &L->reader[k], err);
    if (s != VX_OK) return s;
    const vx_tiled_header *h = vx_tiled_get_header(L->reader[k]);
    vx_tiled_totals(L->reader[k], NULL, NULL, &bytes);
    if (bytes != want || vx_tiled_tile_count(L->reader[k]) != tr->n ||
        h->build_id != h0->build_id || h->depth != h0->depth || h->tile_depth != h0->tile_depth)
      return vx_error_set(err, VX_ERR_IO, "%s: the file changed since it was opened", path);
  }
  pthread_mutex_init(&L->lock, NULL);
  pthread_cond_init(&L->wake, NULL);
  pthread_cond_init(&L->done, NULL);
  for (int k = 0; k < VX_TILE_LOADERS; k++) {
    tr->args[k].tr = tr;
    tr->args[k].k = k;
    if (pthread_create(&L->thread[k], NULL, loader_main, &tr->args[k]) != 0) break;
    L->n++;
  }
  if (L->n == 0) {
    pthread_mutex_destroy(&L->lock);
    pthread_cond_destroy(&L->wake);
    pthread_cond_destroy(&L->done);
    return vx_error_set(err, VX_ERR_IO, "render: cannot start the tile loader threads");
  }
  return VX_OK;
}

static vx_status read_wanted(vx_tiled_render *tr, int coarse, int wait, vx_error *err);

/* ---- residency ------------------------------------------------------------------------------ */

void vx_tiled_render_free(vx_tiled_render *tr) {
  if (!tr) return;
  loaders_stop(tr);
  for (uint64_t i = 0; tr->tiles && i < tr->n; i++) {
    copy_free(&tr->tiles[i].coarse);
    copy_free(&tr->tiles[i].fine);
  }
  vx_gpu_view_free(tr->view);
  vx_free(tr->tiles);
  vx_free(tr->cells);
  vx_free(tr->refs);
  vx_free(tr->order);
  vx_free(tr->keys);
  vx_free(tr);
}

/* Each tile's bytes per level (its header), its cell, and the cell table. */
static vx_status scan_tiles(vx_tiled_render *tr, vx_error *err) {
  const uint32_t G = 1u << tr->K;
  tr->ncells = (size_t)G * G * G;
  tr->cells = (int32_t *)vx_malloc(tr->ncells * sizeof *tr->cells);
  tr->tiles = (tile *)vx_calloc((size_t)tr->n, sizeof *tr->tiles);
  tr->refs = (vx_tile_ref *)vx_calloc((size_t)tr->n, sizeof *tr->refs);
  tr->order = (uint32_t *)vx_calloc((size_t)tr->n, sizeof *tr->order);
  tr->keys = (struct tile_key *)vx_calloc((size_t)tr->n, sizeof *tr->keys);
  if (!tr->cells || !tr->tiles || !tr->refs || !tr->order || !tr->keys)
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for %llu tiles",
                        (unsigned long long)tr->n);
  for (size_t c = 0; c < tr->ncells; c++) tr->cells[c] = -1;
  for (uint64_t i = 0; i < tr->n; i++) {
    tile *tl = &tr->tiles[i];
    tl->coarse.level = tl->fine.level = -1;
    vx_octree h;
    vx_svo_file_info fi;
    vx_status s = vx_tiled_tile_header(tr->t, i, &h, &fi, err);
    if (s != VX_OK) return s;
    const int color = vx_tiled_get_header(tr->t)->color != 0;
    for (uint32_t L = 0; L <= tr->T; L++) tl->bytes[L] = tile_bytes(&h, tr->T, (int)L, color);
    vx_morton_decode(vx_tiled_tile(tr->t, i)->code, &tl->cell[0], &tl->cell[1], &tl->cell[2]);
    tr->cells[tl->cell[0] + G * (tl->cell[1] + (size_t)G * tl->cell[2])] = (int32_t)i;
  }
  return VX_OK;
}

/* The budget and the coarse level: the deepest at which every tile's copy fits in a quarter. */
static vx_status choose_coarse(vx_tiled_render *tr, vx_error *err) {
  if (tr->budget == 0) {
    uint64_t fr = 0, tot = 0;
    if (tr->gpu && vx_gpu_memory(&fr, &tot, NULL) == VX_OK)
      tr->budget = fr / 4 * 3;
    else
      tr->budget = vx_default_mem_limit() / 2;
  }
  tr->coarse = -1;
  for (uint32_t L = 0; L <= tr->T; L++) {
    uint64_t sum = tr->top_bytes;
    for (uint64_t i = 0; i < tr->n; i++) sum += tr->tiles[i].bytes[L];
    if (L == 0 && sum > tr->budget) {
      char a[32], b[32];
      return vx_error_set(err, VX_ERR_LIMIT,
                          "render: a memory budget of %s is too small: the top tree and the "
                          "tiles' roots need %s", vx_bytes_text((double)tr->budget, a, sizeof a),
                          vx_bytes_text((double)sum, b, sizeof b));
    }
    if (L > 0 && sum > tr->budget / 4) break;
    tr->coarse = (int)L;
  }
  return VX_OK;
}

vx_status vx_tiled_render_create(vx_tiled_file *f, int gpu, int threads, uint64_t budget,
                                 int stream, vx_tiled_render **out, vx_error *err) {
  *out = NULL;
  vx_tiled_render *tr = (vx_tiled_render *)vx_calloc(1, sizeof *tr);
  if (!tr) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  tr->t = vx_tiled_file_reader(f, &tr->ro);
  const vx_tiled_header *h = vx_tiled_get_header(tr->t);
  tr->D = h->depth;
  tr->T = h->tile_depth;
  tr->K = h->depth - h->tile_depth;
  tr->n = vx_tiled_tile_count(tr->t);
  tr->gpu = gpu;
  tr->threads = threads;
  tr->stream = stream;
  tr->budget = budget;
  vx_tiled_file_shape(f, &tr->shape);
  tr->top_bytes = tr->shape.node_count *
                  (sizeof(vx_node) + (tr->shape.node_color ? sizeof(uint32_t) : 0));
  vx_status s = VX_OK;
  if (tr->K > VX_TILED_MAX_GRID_BITS)
    s = vx_error_set(err, VX_ERR_LIMIT,
                     "render: %u^3 tiles per axis; at most 2^%d are drawn (convert with a "
                     "larger --tile-depth)", 1u << tr->K, VX_TILED_MAX_GRID_BITS);
  if (s == VX_OK) s = scan_tiles(tr, err);
  if (s == VX_OK && gpu) s = vx_gpu_view_create(vx_tiled_top(tr->t), &tr->view, err);
  if (s == VX_OK) s = choose_coarse(tr, err);
  if (s == VX_OK) s = loaders_start(tr, vx_tiled_file_path(f), err);
  if (s == VX_OK) { /* every tile's coarse copy, read by the loaders */
    for (uint64_t i = 0; i < tr->n; i++) {
      tr->order[i] = (uint32_t)i;
      tr->tiles[i].target = tr->coarse;
    }
    s = read_wanted(tr, 1, 1, err);
  }
  if (s != VX_OK) {
    vx_tiled_render_free(tr);
    return s;
  }
  if (gpu)
    snprintf(tr->device, sizeof tr->device, "%s", vx_gpu_view_device(tr->view));
  else
    snprintf(tr->device, sizeof tr->device, "CPU (%d threads)", vx_thread_count(threads, 1024));
  *out = tr;
  return VX_OK;
}

const vx_octree *vx_tiled_render_shape(const vx_tiled_render *tr) { return &tr->shape; }
const char *vx_tiled_render_device(const vx_tiled_render *tr) { return tr->device; }

void vx_tiled_render_residency(const vx_tiled_render *tr, vx_tiled_residency *o) {
  memset(o, 0, sizeof *o);
  o->budget_bytes = tr->budget;
  o->resident_bytes = tr->top_bytes;
  o->tiles = tr->n;
  for (uint64_t i = 0; i < tr->n; i++) {
    o->resident_bytes += tr->tiles[i].coarse.bytes + tr->tiles[i].fine.bytes;
    o->tiles_detailed += tr->tiles[i].fine.level > tr->tiles[i].coarse.level;
  }
  o->coarse_level = tr->K + (uint32_t)tr->coarse;
  o->loaded = tr->loaded;
  o->pending = tr->pending;
}

static int by_distance(const void *a, const void *b) {
  const struct tile_key *x = (const struct tile_key *)a, *y = (const struct tile_key *)b;
  if (x->dist != y->dist) return x->dist < y->dist ? -1 : 1;
  return x->tile < y->tile ? -1 : x->tile > y->tile;
}

/* Which tiles the frame sees, how far they are and the level each wants (lib/tiled_render.h). */
static void targets(vx_tiled_render *tr, const vx_tiled_scene *ts) {
  const vx_trace_scene *s = &ts->tile;
  const double C = (double)(1u << tr->T);
  /* the frustum's side planes through the eye: normals from the corner rays, pointing in */
  double cr[4][3], nrm[4][3];
  for (int k = 0; k < 3; k++) {
    double a = s->dir00[k], u = s->du[k] * s->width, v = s->dv[k] * s->height;
    cr[0][k] = a;
    cr[1][k] = a + u;
    cr[2][k] = a + u + v;
    cr[3][k] = a + v;
  }
  for (int p = 0; p < 4; p++) {
    const double *x = cr[p], *y = cr[(p + 1) % 4], *z = cr[(p + 2) % 4];
    double n[3] = {x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]};
    double dz = n[0] * z[0] + n[1] * z[1] + n[2] * z[2];
    for (int k = 0; k < 3; k++) nrm[p][k] = dz < 0 ? -n[k] : n[k];
  }
  const int want_all = ts->use_top ? -1
                       : s->auto_lod ? -2
                                     : (s->max_level < (int)tr->T ? s->max_level : (int)tr->T);
  for (uint64_t i = 0; i < tr->n; i++) {
    tile *tl = &tr->tiles[i];
    double lo[3], hi[3], d2 = 0.0;
    for (int k = 0; k < 3; k++) {
      lo[k] = tl->cell[k] * C;
      hi[k] = lo[k] + C;
      double e = s->eye[k], g = e < lo[k] ? lo[k] - e : (e > hi[k] ? e - hi[k] : 0.0);
      d2 += g * g;
    }
    tl->dist = sqrt(d2);
    tl->visible = 1;
    for (int p = 0; p < 4 && tl->visible && d2 > 0.0; p++) {
      int in = 0; /* some corner on the inner side */
      for (int c = 0; c < 8 && !in; c++) {
        double q[3];
        for (int k = 0; k < 3; k++) q[k] = ((c >> k) & 1 ? hi[k] : lo[k]) - s->eye[k];
        in = nrm[p][0] * q[0] + nrm[p][1] * q[1] + nrm[p][2] * q[2] >= 0.0;
      }
      tl->visible = in;
    }
    int want = tr->coarse;
    if (tl->visible && want_all >= 0) want = want_all;
    if (tl->visible && want_all == -2) {
      double x = tl->dist * s->pixel_angle; /* cells finer than this are sub-pixel */
      want = x <= 1.0 ? (int)tr->T : (int)floor((double)tr->T - log2(x)) + 1;
      if (want > (int)tr->T) want = (int)tr->T;
    }
    tl->target = want > tr->coarse ? want : tr->coarse;
  }
  /* nearest first: the budget left after the coarse copies goes to the nearest tiles */
  for (uint64_t i = 0; i < tr->n; i++) {
    tr->keys[i].dist = tr->tiles[i].dist;
    tr->keys[i].tile = (uint32_t)i;
  }
  qsort(tr->keys, (size_t)tr->n, sizeof *tr->keys, by_distance);
  for (uint64_t i = 0; i < tr->n; i++) tr->order[i] = tr->keys[i].tile;
  uint64_t left = tr->budget - tr->top_bytes;
  for (uint64_t i = 0; i < tr->n; i++) left -= tr->tiles[i].coarse.bytes;
  for (uint64_t j = 0; j < tr->n; j++) {
    tile *tl = &tr->tiles[tr->order[j]];
    int L = tl->target;
    while (L > tr->coarse && tl->bytes[L] > left) L--;
    tl->target = L;
    if (L > tr->coarse) left -= tl->bytes[L];
  }
}

/* Whether tile tl lacks the copy the frame wants: its coarse copy (coarse), else a finer one. */
static int lacks(const vx_tiled_render *tr, const tile *tl, int coarse) {
  return coarse ? tl->coarse.level < 0 : tl->target > tr->coarse && tl->fine.level < 0;
}

/* Adopts the loaders' finished reads that are still wanted (frees the others), queues every tile
 * that lacks its copy (coarse copies, or finer ones), nearest first, and with `wait` repeats until
 * none lacks it. tr->loaded counts the copies adopted. */
static vx_status read_wanted(vx_tiled_render *tr, int coarse, int wait, vx_error *err) {
  loaders *L = &tr->ld;
  vx_status first = VX_OK;
  for (;;) {
    uint64_t missing = 0;
    pthread_mutex_lock(&L->lock);
    L->queued = L->next = 0;
    for (uint64_t j = 0; j < tr->n; j++) {
      const uint32_t k = tr->order[j];
      tile *tl = &tr->tiles[k];
      const int level = coarse ? tr->coarse : tl->target;
      if (tl->job == JOB_DONE) { /* adopted outside the lock, below */
        tl->job = JOB_NONE;
        vx_octree h = tl->job_tree;
        const int ok = tl->job_status == VX_OK && tl->job_level == level && lacks(tr, tl, coarse);
        if (tl->job_status != VX_OK && first == VX_OK) {
          first = tl->job_status;
          if (err) *err = tl->job_err;
        }
        pthread_mutex_unlock(&L->lock);
        vx_status s = VX_OK;
        if (ok) {
          s = adopt(tr, k, level, &h, coarse ? &tl->coarse : &tl->fine, err);
          tr->loaded += s == VX_OK;
        } else {
          vx_octree_free(&h);
        }
        pthread_mutex_lock(&L->lock);
        if (s != VX_OK && first == VX_OK) first = s;
      }
      if (!lacks(tr, tl, coarse)) {
        if (tl->job == JOB_QUEUED) tl->job = JOB_NONE;
        continue;
      }
      missing++;
      if (tl->job == JOB_NONE || tl->job == JOB_QUEUED) {
        tl->job = JOB_QUEUED;
        tl->job_level = level;
        L->queue[L->queued++] = k;
      }
    }
    pthread_cond_broadcast(&L->wake);
    if (first == VX_OK && wait && missing > 0) { /* until a read finishes */
      int done = 0;
      while (!done) {
        for (uint64_t i = 0; i < tr->n && !done; i++) done = tr->tiles[i].job == JOB_DONE;
        if (!done) pthread_cond_wait(&L->done, &L->lock);
      }
    }
    pthread_mutex_unlock(&L->lock);
    if (first != VX_OK || !wait || missing == 0) return first;
  }
}

/* Frees the finer copies no longer wanted, then reads the wanted ones: waiting for them, or
 * (stream) adopting what the loaders finished and queueing the rest. */
static vx_status update(vx_tiled_render *tr, vx_error *err) {
  tr->loaded = 0;
  for (uint64_t i = 0; i < tr->n; i++) {
    tile *tl = &tr->tiles[i];
    if (tl->fine.level >= 0 && tl->fine.level != tl->target) copy_free(&tl->fine);
  }
  vx_status s = read_wanted(tr, 0, !tr->stream, err);
  if (s != VX_OK) return s;
  tr->pending = 0;
  for (uint64_t i = 0; i < tr->n; i++) {
    tile *tl = &tr->tiles[i];
    tr->pending += lacks(tr, tl, 0);
    const copy *c = tl->fine.level >= 0 ? &tl->fine : &tl->coarse;
    vx_tile_ref *r = &tr->refs[i];
    if (tr->gpu) {
      vx_gpu_tree g;
      vx_gpu_resident_tree(c->dev, &g);
      r->nodes = g.nodes;
      r->voxels = g.voxels;
      r->node_color = g.node_color;
      r->voxel_color = g.voxel_color;
      r->holes = g.holes;
      r->levels = g.levels;
    } else {
      const int full = c->host.levels_loaded > tr->T;
      r->nodes = c->host.nodes;
      r->voxels = full ? c->host.voxels : NULL;
      r->node_color = c->host.node_color;
      r->voxel_color = full ? c->host.voxel_color : NULL;
      r->holes = c->host.node_color != NULL;
      r->levels = c->host.levels_loaded;
    }
  }
  return VX_OK;
}

vx_status vx_tiled_render_frame(vx_tiled_render *tr, const vx_march_opts *m, uint8_t *rgb,
                                float *depth, double *ms_render, double *ms_copy, vx_error *err) {
  vx_tiled_scene ts;
  vx_status s = vx_tiled_scene_init(&ts, &tr->shape, tr->T, m, err);
  if (s != VX_OK) return s;
  targets(tr, &ts);
  if ((s = update(tr, err)) != VX_OK) return s;
  *ms_copy = 0.0;
  if (tr->gpu) {
    vx_gpu_frame_times tm = {0.0, 0.0};
    s = vx_gpu_view_set_tiles(tr->view, tr->refs, (size_t)tr->n, tr->cells, tr->ncells, err);
    if (s == VX_OK) s = vx_gpu_view_draw_tiled(tr->view, &ts, rgb, depth, &tm, err);
    *ms_render = tm.ms_kernel;
    *ms_copy = tm.ms_copy;
    return s;
  }
  ts.tiles = tr->refs;
  ts.cells = tr->cells;
  ts.top.nodes = tr->shape.nodes;
  ts.top.node_color = tr->shape.node_color;
  vx_march_image img = vx_march_image_of(m->width, m->height, rgb, depth);
  double t0 = vx_clock_seconds();
  s = vx_render_cpu_tiled(&ts, &img, tr->threads, err);
  *ms_render = (vx_clock_seconds() - t0) * 1e3;
  return s;
}
