/* SPDX-License-Identifier: Apache-2.0 */
/* dc_vertex.c - one vertex per cell of the cut: where it sits and which way it faces.
 *
 * A voxel of the cut: the minimiser of the QEF of its own edges' crossings (dc_qef.h) from the
 * single-valued corner field, clamped to the voxel; its normal is the gradient of the voxel's
 * trilinear field at the vertex.
 * A node of the cut: the QEF of every crossing of every surface voxel below it (the sum of their
 * QEFs, which is how Ju et al. collapse a subtree into one cell: all the Hermite data inside the
 * cell, not only the crossings on its 12 edges) together with the node's stored plane, the
 * least-squares linear fit of the field below it (lod.h), as one more row (DC_PLANE_WEIGHT).
 * Where the surface has a sharp feature the crossings' planes meet there and pull the vertex to
 * it; where it is flat the regularisation holds it at the crossings' mean. Clamped to the box. Its
 * normal is the mean of the crossings' normals (the field's gradient averaged over the cell), or
 * the plane's normal.
 *
 * Parallel over subtrees: a sequential walk from the root hands out the cut cells above a task
 * level and the subtrees at that level; each thread finds the cut cells inside its subtrees.
 */
#include "mesher/dc_internal.h"
#include "mesher/dc_qef.h"
#include "svo/lod_eval.h"
#include "sys/system.h"

#include <stdatomic.h>

/* The node's plane against all its crossings together. The plane is the least-squares fit of the
 * field over the whole band of corner samples, which on curved parts sits a little off the zero
 * set (the field's level sets curve differently at different distances): as a full-weight row it
 * made the mean distance to the source 20-35 % larger on spot, bunny and fandisk (--error 0.5
 * to 2). Without it a few vertices near fandisk's sharp edges drift (4.7 instead of 2.7 voxels
 * at --error 2). A tenth of the crossings' weight keeps it as a tie-breaker. */
#define DC_PLANE_WEIGHT 0.1

typedef struct vtask {
  uint32_t level, idx;
  uint32_t p[3];
} vtask;

typedef struct vjob {
  const dc_tree *T;
  dc_verts *v;
  const vtask *tasks;
  uint64_t ntasks;
  atomic_ulong next, done;
  atomic_int stop, slot;
  vx_progress_fn progress;
  void *user;
} vjob;

static void voxel_values(const dc_tree *T, uint32_t idx, float f[8]) {
  for (int c = 0; c < 8; c++) f[c] = vx_corner_value(T->field[idx].c[c], T->t->band);
}

/* Adds the crossings of every voxel below cell (level, idx), whose minimum corner is at o in the
 * QEF's frame (finest voxels). */
static void add_subtree(const dc_tree *T, uint32_t level, uint32_t idx, const double o[3],
                        dc_qef *q) {
  if (level == T->D) {
    float f[8];
    voxel_values(T, idx, f);
    dc_voxel_crossings(f, o, q);
    return;
  }
  const vx_node *nd = &T->t->nodes[idx];
  uint32_t mask = vx_node_mask(nd->info);
  double half = ldexp(1.0, (int)(T->D - level - 1));
  for (uint32_t s = 0; s < 8; s++) {
    if (!(mask >> s & 1u)) continue;
    double oc[3] = {o[0] + (s & 1) * half, o[1] + (s >> 1 & 1) * half, o[2] + (s >> 2 & 1) * half};
    add_subtree(T, level + 1, vx_child_index(nd->child, mask, s), oc, q);
  }
}

static void store(dc_verts *v, uint64_t id, const double pos[3], const double nrm[3]) {
  float *P = v->pos + (id - v->lo) * 3, *N = v->nrm + (id - v->lo) * 3;
  for (int i = 0; i < 3; i++) {
    P[i] = (float)pos[i];
    N[i] = (float)nrm[i];
  }
}

static void place_voxel(const dc_tree *T, dc_verts *v, uint32_t idx, const uint32_t p[3]) {
  uint8_t *placed = &v->placed[T->node_count + idx - v->lo];
  if (*placed) return;
  float f[8];
  voxel_values(T, idx, f);
  int neg = 0;
  for (int c = 0; c < 8; c++) neg += f[c] < 0.0f;
  *placed = 2;
  if (neg == 0 || neg == 8) return; /* no crossing: never in a face */
  *placed = 1;
  dc_qef q;
  dc_qef_clear(&q);
  const double o[3] = {0, 0, 0}, lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
  dc_voxel_crossings(f, o, &q);
  double x[3], g[3];
  dc_qef_solve(&q, lo, hi, x);
  dc_trilinear_grad(f, x, g);
  if (!dc_normalize(g)) {
    for (int i = 0; i < 3; i++) g[i] = q.nsum[i];
    if (!dc_normalize(g)) g[0] = 0, g[1] = 0, g[2] = 1;
  }
  /* The offset in the voxel on a grid of 2^-9: p + x is then exact in float for any p < 2^14,
   * so the position and what is decided on it (a quad's diagonal) are the same in a window of a
   * tiled tree (vx_dc_opts.part) as in the whole tree. */
  for (int i = 0; i < 3; i++) x[i] = nearbyint(x[i] * 512.0) / 512.0;
  double pos[3] = {p[0] + x[0], p[1] + x[1], p[2] + x[2]};
  store(v, T->node_count + idx, pos, g);
  if (v->code) v->code[T->node_count + idx - v->lo] = VX_DC_KEY_COORD(p[0], p[1], p[2]);
}

/* The full-detail vertices of the voxels below cell (level, idx) at p (its level's coordinates),
 * placed when not yet, measured against the plane through x with unit normal n: the range of
 * their signed distances from the plane (h[0] .. h[1]) and the smallest distance along it
 * (*beside). */
static void measure_subtree(const dc_tree *T, dc_verts *v, uint32_t level, uint32_t idx,
                            const uint32_t p[3], const double x[3], const double n[3],
                            double h[2], double *beside) {
  if (level == T->D) {
    place_voxel(T, v, idx, p);
    if (v->placed[T->node_count + idx - v->lo] != 1) return;
    const float *w = v->pos + (T->node_count + idx - v->lo) * 3;
    double d[3] = {w[0] - x[0], w[1] - x[1], w[2] - x[2]};
    double e = n[0] * d[0] + n[1] * d[1] + n[2] * d[2];
    double l2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] - e * e;
    if (e < h[0]) h[0] = e;
    if (e > h[1]) h[1] = e;
    if (l2 < *beside) *beside = l2;
    return;
  }
  const vx_node *nd = &T->t->nodes[idx];
  uint32_t mask = vx_node_mask(nd->info);
  for (uint32_t s = 0; s < 8; s++) {
    if (!(mask >> s & 1u)) continue;
    uint32_t q[3] = {2 * p[0] + (s & 1), 2 * p[1] + (s >> 1 & 1), 2 * p[2] + (s >> 2 & 1)};
    measure_subtree(T, v, level + 1, vx_child_index(nd->child, mask, s), q, x, n, h, beside);
  }
}

/* How far beside the full-detail vertices (along its plane) a node's vertex may sit: about the
 * distance between neighbouring vertices, so that the node's faces lie over the surface they
 * replace rather than beside it. */
#define DC_BESIDE 1.0

static void place_node(const dc_tree *T, dc_verts *v, uint32_t level, uint32_t idx,
                       const uint32_t p[3]) {
  const vx_node *nd = &T->t->nodes[idx];
  double s = ldexp(1.0, (int)(T->D - level));
  dc_qef q;
  dc_qef_clear(&q);
  const double o[3] = {0, 0, 0};
  add_subtree(T, level, idx, o, &q);
  vx_plane P;
  vx_plane_decode(nd, s, &P);
  int plane_ok = (vx_node_flags(nd->info) & VX_NODE_PLANE_OK) != 0;
  if (plane_ok && q.n > 0.0) dc_qef_row(&q, P.n, -P.e, DC_PLANE_WEIGHT * q.n);
  double lo[3] = {0, 0, 0}, hi[3] = {s, s, s}, x[3], g[3];
  dc_qef_solve(&q, lo, hi, x);
  for (int i = 0; i < 3; i++) g[i] = q.nsum[i];
  if (!dc_normalize(g)) {
    for (int i = 0; i < 3; i++) g[i] = P.n[i];
    if (!dc_normalize(g)) g[0] = 0, g[1] = 0, g[2] = 1;
  }
  double pos[3] = {p[0] * s + x[0], p[1] * s + x[1], p[2] * s + x[2]};
  store(v, idx, pos, g);
  v->placed[idx - v->lo] = 1;
  uint32_t sh = T->D - level;
  v->box[idx] = (uint64_t)level << 56 | vx_morton_encode(p[0] << sh, p[1] << sh, p[2] << sh);
  if (T->cut == VX_DC_ERROR) {
    /* The full-detail vertices inside the node must lie within max_error of the plane through
     * the vertex (dc_bound.c then checks the faces against the slab they fill), and the vertex
     * over them, not beside them. Otherwise the node is vetoed and its children are tried. */
    double h[2] = {0.0, 0.0}, beside = INFINITY;
    measure_subtree(T, v, level, idx, p, pos, g, h, &beside);
    v->slab[idx] = (float)(0.5 * (h[1] - h[0]));
    v->mid[idx] = (float)(0.5 * (h[0] + h[1]));
    if (!(fmax(-h[0], h[1]) <= T->max_error) || !(beside <= DC_BESIDE * DC_BESIDE))
      T->veto[idx] = 1;
  }
}

/* Finds and places the cut cells in the subtree of present cell (level, idx) at p (its level's
 * coordinates). */
static void visit(const dc_tree *T, dc_verts *v, uint32_t level, uint32_t idx,
                  const uint32_t p[3]) {
  if (dc_is_cut(T, level, idx)) {
    if (level == T->D) {
      place_voxel(T, v, idx, p);
      return;
    }
    if (!v->placed[idx - v->lo]) place_node(T, v, level, idx, p);
    if (dc_is_cut(T, level, idx)) return; /* else vetoed: its children */
  }
  const vx_node *nd = &T->t->nodes[idx];
  uint32_t mask = vx_node_mask(nd->info);
  for (uint32_t s = 0; s < 8; s++) {
    if (!(mask >> s & 1u)) continue;
    uint32_t q[3] = {2 * p[0] + (s & 1), 2 * p[1] + (s >> 1 & 1), 2 * p[2] + (s >> 2 & 1)};
    visit(T, v, level + 1, vx_child_index(nd->child, mask, s), q);
  }
}

/* The sequential part: cut cells above the task level, and the subtrees at it, become tasks. */
static int collect(const dc_tree *T, uint32_t task_level, uint32_t level, uint32_t idx,
                   const uint32_t p[3], dc_vec *tasks) {
  if (level == task_level || level == T->D || dc_is_cut(T, level, idx)) {
    vtask *k = (vtask *)dc_vec_push(tasks);
    if (!k) return 0;
    k->level = level;
    k->idx = idx;
    for (int i = 0; i < 3; i++) k->p[i] = p[i];
    return 1;
  }
  const vx_node *nd = &T->t->nodes[idx];
  uint32_t mask = vx_node_mask(nd->info);
  for (uint32_t s = 0; s < 8; s++) {
    if (!(mask >> s & 1u)) continue;
    uint32_t q[3] = {2 * p[0] + (s & 1), 2 * p[1] + (s >> 1 & 1), 2 * p[2] + (s >> 2 & 1)};
    if (!collect(T, task_level, level + 1, vx_child_index(nd->child, mask, s), q, tasks)) return 0;
  }
  return 1;
}

static void *vworker(void *arg) {
  vjob *j = (vjob *)arg;
  int me = atomic_fetch_add(&j->slot, 1);
  uint64_t report = 0;
  for (;;) {
    if (atomic_load(&j->stop)) break;
    uint64_t k = atomic_fetch_add(&j->next, 1);
    if (k >= j->ntasks) break;
    const vtask *t = &j->tasks[k];
    visit(j->T, j->v, t->level, t->idx, t->p);
    uint64_t d = atomic_fetch_add(&j->done, 1) + 1;
    if (me == 0 && j->progress && d >= report) {
      report = d + j->ntasks / 64 + 1;
      if (j->progress(j->user, "meshing: vertices", (double)d / (double)j->ntasks))
        atomic_store(&j->stop, 1);
    }
  }
  return NULL;
}

void dc_verts_free(dc_verts *v) {
  vx_free(v->pos);
  vx_free(v->nrm);
  vx_free(v->box);
  vx_free(v->code);
  vx_free(v->placed);
  vx_free(v->slab);
  vx_free(v->mid);
  vx_free(v->fan_sig);
  memset(v, 0, sizeof *v);
}

/* The arrays of v for T's cut. */
static vx_status alloc_verts(const dc_tree *T, dc_verts *v, vx_error *err) {
  const vx_octree *t = T->t;
  memset(v, 0, sizeof *v);
  if (T->cut == VX_DC_LEVEL && T->level < T->D) {
    v->lo = t->level_first[T->level];
    v->hi = v->lo + t->level_count[T->level];
  } else if (T->cut == VX_DC_ERROR) {
    v->lo = 0;
    v->hi = t->node_count + t->voxel_count;
  } else {
    v->lo = t->node_count;
    v->hi = t->node_count + t->voxel_count;
  }
  uint64_t n = v->hi - v->lo, nn = t->node_count ? t->node_count : 1;
  v->pos = (float *)vx_calloc((size_t)(n ? n : 1) * 3, sizeof(float));
  v->nrm = (float *)vx_calloc((size_t)(n ? n : 1) * 3, sizeof(float));
  v->placed = (uint8_t *)vx_calloc((size_t)(n ? n : 1), 1);
  int finest = !(T->cut == VX_DC_ERROR || (T->cut == VX_DC_LEVEL && T->level < T->D));
  if (!finest) v->box = (uint64_t *)vx_calloc((size_t)nn, sizeof(uint64_t));
  if (T->part) v->code = (uint64_t *)vx_calloc((size_t)(n ? n : 1), sizeof(uint64_t));
  if (T->cut == VX_DC_ERROR) {
    v->slab = (float *)vx_calloc((size_t)nn, sizeof(float));
    v->mid = (float *)vx_calloc((size_t)nn, sizeof(float));
    v->fan_sig = (uint64_t *)vx_calloc((size_t)nn, sizeof(uint64_t));
  }
  if (!v->pos || !v->nrm || !v->placed || (!finest && !v->box) || (T->part && !v->code) ||
      (T->cut == VX_DC_ERROR && (!v->slab || !v->mid || !v->fan_sig))) {
    dc_verts_free(v);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for %llu mesh vertices",
                        (unsigned long long)n);
  }
  return VX_OK;
}

vx_status dc_vertices(const dc_tree *T, int threads, dc_verts *v, vx_progress_fn progress,
                      void *user, vx_error *err) {
  const vx_octree *t = T->t;
  if (!v->pos) {
    vx_status st = alloc_verts(T, v, err);
    if (st != VX_OK) return st;
  }
  if (!t->node_count) return VX_OK;
  uint32_t task_level = 0;
  while (task_level + 1 < T->D && t->level_count[task_level] < 4096) task_level++;
  dc_vec tasks;
  dc_vec_init(&tasks, sizeof(vtask));
  const uint32_t origin[3] = {0, 0, 0};
  if (!collect(T, task_level, 0, 0, origin, &tasks)) {
    dc_vec_free(&tasks);
    dc_verts_free(v);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory placing mesh vertices");
  }
  vjob *j = (vjob *)vx_calloc(1, sizeof *j);
  if (!j) {
    dc_vec_free(&tasks);
    dc_verts_free(v);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory placing mesh vertices");
  }
  j->T = T;
  j->v = v;
  j->tasks = (const vtask *)tasks.data;
  j->ntasks = tasks.n;
  j->progress = progress;
  j->user = user;
  vx_parallel((uint64_t)threads > tasks.n ? (int)tasks.n : threads, vworker, j);
  int stopped = atomic_load(&j->stop);
  vx_free(j);
  dc_vec_free(&tasks);
  if (stopped) {
    dc_verts_free(v);
    return vx_error_set(err, VX_ERR_INTERRUPTED, "meshing interrupted");
  }
  return VX_OK;
}
