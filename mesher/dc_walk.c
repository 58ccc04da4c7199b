/* SPDX-License-Identifier: Apache-2.0 */
/* dc_walk.c - the octree walk of dual contouring: every grid point with the cells around it, and
 * every minimal edge of the cut with its (up to) four cells, without neighbour searches.
 *
 * This is the recursion of T. Ju, F. Losasso, S. Schaefer, J. Warren, "Dual Contouring of
 * Hermite Data" (SIGGRAPH 2002), section 4.2: cellProc visits a cell's 8 children, the 12 faces
 * between them and the 6 half-edges through its centre; faceProc visits the 4 sub-faces of a
 * face between two cells and the 4 half-edges inside it; edgeProc the 2 halves of an edge
 * between four cells. Every face, edge and grid point of the tree is visited by exactly one
 * call, with exactly the cells that share it. A vertProc (the same idea one dimension down: a
 * grid point between eight cells) is added for the corner field, called once per grid point
 * from the call that creates it (cell centre, face centre, edge midpoint).
 *
 * The walk always goes down to the surface voxels, whatever the cut, because the topology of
 * every cut comes from the finest field (mesher.h):
 * - FIELD pass: every grid point of a surface voxel gets one value, written into each voxel that
 *   has it (dc_field.c's rule); the points whose sign the rule changed are listed.
 * - FACES pass: an edge call whose four cells all lie in known clusters of the cut (or outside
 *   the tree) with at least three distinct ones is a minimal edge of the cut (Ju's edgeProc at
 *   leaves). The signs along it are summed over the finest edges below it (their values are the
 *   single-valued field's): the sum of (+1 for - to +, -1 for + to -) telescopes to the sign
 *   change between its two ends, which is the sign change of the cut's edge. A nonzero sum
 *   emits one face, oriented by its sign. Calls whose cells are all in at most two clusters
 *   (inside one cluster, or on the contact between two) cannot emit and are skipped, so the
 *   pass only follows the edges of the cut's cells.
 *
 * Parallel: the calls that reach a task level are collected by one sequential walk from the
 * root and then run on all threads (an atomic counter hands them out). Faces are kept per task
 * and concatenated in task order, so the output does not depend on the thread count.
 */
#include "mesher/dc_internal.h"
#include "sys/system.h"

#include <stdatomic.h>
#include <stdlib.h>

void dc_vec_free(dc_vec *v) {
  vx_free(v->data);
  v->data = NULL;
  v->n = v->cap = 0;
}

void dc_reuse_free(dc_reuse *r) {
  dc_vec_free(&r->tasks);
  dc_vec_free(&r->faces);
  vx_free(r->start);
  vx_free(r->count);
  vx_free(r->dirty);
  memset(r, 0, sizeof *r);
}

void *dc_vec_push(dc_vec *v) {
  if (v->n == v->cap) {
    uint64_t cap = v->cap ? v->cap * 2 : 256;
    void *g = vx_realloc(v->data, (size_t)(cap * v->elem));
    if (!g) return NULL;
    v->data = g;
    v->cap = cap;
  }
  return (char *)v->data + (v->n++) * v->elem;
}

typedef struct walk_ctx {
  const dc_tree *T;
  int pass;
  vx_voxel *field;    /* FIELD: written (the tree's voxels are read); FACES: T->field is read */
  dc_out *out;
  int collecting;     /* 1: calls at task_level are deferred to `tasks` */
  uint32_t task_level;
  dc_vec *tasks;
} walk_ctx;

static void cell_proc(walk_ctx *w, uint32_t l, const uint32_t p[3], dc_cell c);
static void face_proc(walk_ctx *w, uint32_t l, uint32_t a, const uint32_t p[3], dc_cell c0,
                      dc_cell c1);
static void edge_proc(walk_ctx *w, uint32_t l, uint32_t a, const uint32_t p[3], const dc_cell *e);
static void vert_proc(walk_ctx *w, uint32_t l, const uint32_t p[3], const dc_cell *v);

/* The two axes other than a, in increasing order. */
static inline void other_axes(uint32_t a, uint32_t *u, uint32_t *v) {
  *u = a == 0 ? 1 : 0;
  *v = a == 2 ? 1 : 2;
}

static int defer(walk_ctx *w, int kind, uint32_t a, uint32_t l, const uint32_t p[3],
                 const dc_cell *c, int n) {
  dc_call *k = (dc_call *)dc_vec_push(w->tasks);
  if (!k) {
    w->out->nomem = 1;
    return 1;
  }
  memset(k, 0, sizeof *k);
  k->kind = (uint8_t)kind;
  k->axis = (uint8_t)a;
  k->level = (uint8_t)l;
  for (int i = 0; i < 3; i++) k->p[i] = p[i];
  for (int i = 0; i < n; i++) k->c[i] = c[i];
  return 1;
}

static inline int all_absent(const dc_cell *c, int n) {
  for (int i = 0; i < n; i++)
    if (c[i].idx != DC_NONE) return 0;
  return 1;
}

/* ---- FIELD pass: one value per grid point --------------------------------------------------- */

static void vert_leaf(walk_ctx *w, const uint32_t p[3], const dc_cell *v) {
  const vx_voxel *vox[8];
  int n = 0;
  for (int i = 0; i < 8; i++) {
    vox[i] = v[i].idx == DC_NONE ? NULL : &w->T->t->voxels[v[i].idx];
    n += vox[i] != NULL;
  }
  int8_t canon;
  int disputed;
  int8_t to = dc_point_value(vox, &canon, &disputed);
  if (n >= 2 && dc_part_owns(w->T, p, 0)) { /* a part counts its own points */
    w->out->shared++;
    w->out->disputed += disputed;
  }
  /* A voxel that stores less than the largest value here was re-signed (dc_field.c). */
  for (int i = 0; disputed && i < 8; i++) {
    if (!vox[i] || vox[i]->c[i ^ 7] >= canon) continue;
    if (atomic_exchange(&w->T->resigned[v[i].idx], 1)) continue;
    dc_mark *mk = (dc_mark *)dc_vec_push(&w->out->marks);
    if (!mk) {
      w->out->nomem = 1;
      continue;
    }
    mk->code =
        vx_morton_encode(p[0] - 1 + (i & 1), p[1] - 1 + (i >> 1 & 1), p[2] - 1 + (i >> 2 & 1));
    mk->idx = v[i].idx;
    mk->pad = 0;
  }
  for (int i = 0; i < 8; i++)
    if (vox[i]) w->field[v[i].idx].c[i ^ 7] = to;
  if ((to < 0) != (canon < 0)) {
    uint64_t *q = (uint64_t *)dc_vec_push(&w->out->items);
    if (!q) w->out->nomem = 1;
    else *q = vx_morton_encode(p[0], p[1], p[2]);
  }
}

static void vert_proc(walk_ctx *w, uint32_t l, const uint32_t p[3], const dc_cell *v) {
  if (all_absent(v, 8)) return;
  if (l == w->T->D) {
    vert_leaf(w, p, v);
    return;
  }
  if (w->collecting && l == w->task_level && defer(w, DC_VERT, 0, l, p, v, 8)) return;
  dc_cell k[8];
  for (int i = 0; i < 8; i++) k[i] = dc_child(w->T, v[i], l, (uint32_t)(i ^ 7));
  uint32_t q[3] = {2 * p[0], 2 * p[1], 2 * p[2]};
  vert_proc(w, l + 1, q, k);
}

/* ---- FACES pass: minimal edges of the cut ------------------------------------------------------
 */

/* Sums the sign changes along an edge over the finest edges below it. */
static void edge_sum(walk_ctx *w, uint32_t l, uint32_t a, const dc_cell *e, int *net) {
  if (all_absent(e, 4)) return;
  uint32_t u, v;
  other_axes(a, &u, &v);
  if (l == w->T->D) {
    int j = 0;
    while (e[j].idx == DC_NONE) j++;
    uint32_t side = (uint32_t)(1 - (j & 1)) << u | (uint32_t)(1 - (j >> 1)) << v;
    const vx_voxel *x = &w->T->field[e[j].idx];
    int s0 = x->c[side] < 0, s1 = x->c[side | 1u << a] < 0;
    if (s0 != s1) *net += s0 ? 1 : -1;
    return;
  }
  for (uint32_t h = 0; h < 2; h++) {
    dc_cell k[4];
    for (int j = 0; j < 4; j++)
      k[j] = dc_child(w->T, e[j], l,
                      h << a | (uint32_t)(1 - (j & 1)) << u | (uint32_t)(1 - (j >> 1)) << v);
    edge_sum(w, l + 1, a, k, net);
  }
}

static inline int sgn_neg(int8_t q) { return q < 0; }

/* At the finest level: does the contact between the cells at places j and k of edge e (adjacent
 * around it), one of them the voxel x at place xj, have corners that alternate in sign? */
static int contact_checkerboard(const dc_tree *T, uint32_t a, uint32_t u, uint32_t v, int j, int k,
                                const vx_voxel *x, int xj) {
  uint32_t w = ((j ^ k) & 1) ? u : v, o = w == u ? v : u;
  int xw = w == u ? (xj & 1) : (xj >> 1);
  uint32_t base = (uint32_t)(1 - xw) << w;
  int s00 = sgn_neg(x->c[base]), s10 = sgn_neg(x->c[base | 1u << a]);
  int s01 = sgn_neg(x->c[base | 1u << o]), s11 = sgn_neg(x->c[base | 1u << a | 1u << o]);
  (void)T;
  return s00 == s11 && s01 == s10 && s00 != s01;
}

/* How many different clusters (a place outside the tree counts as one) are around an edge. */
static inline int distinct_places(const dc_cell *e) {
  int distinct = 1;
  for (int j = 1; j < 4; j++) {
    int seen = 0;
    for (int i = 0; i < j; i++) seen |= e[i].clu == e[j].clu;
    distinct += !seen;
  }
  return distinct;
}

static inline int has_hole(const dc_cell *e) {
  return e[0].clu == DC_NONE || e[1].clu == DC_NONE || e[2].clu == DC_NONE || e[3].clu == DC_NONE;
}

static void emit(walk_ctx *w, uint32_t l, uint32_t a, const uint32_t p[3], const dc_cell *e,
                 int net) {
  const dc_tree *T = w->T;
  for (int j = 0; j < 4; j++)
    if (e[j].clu == DC_NONE) {
      const uint32_t sh = T->D - l, lo[3] = {p[0] << sh, p[1] << sh, p[2] << sh};
      w->out->open_edges += (uint64_t)dc_part_owns(T, lo, 0); /* a part counts its own */
      if (T->keep_open) {
        /* Kept for the error cut's check (dc_bound.c), which refines the nodes next to a hole
         * and drops these records. */
        dc_face *f = (dc_face *)dc_vec_push(&w->out->items);
        if (!f) {
          w->out->nomem = 1;
          return;
        }
        memset(f, 0, sizeof *f);
        for (int k = 0; k < 4; k++) f->c[k] = e[k].clu;
        uint32_t sh = T->D - l;
        f->edge = dc_edge_pack(vx_morton_encode(p[0] << sh, p[1] << sh, p[2] << sh), a, l, 0);
        f->open = 1;
      }
      return;
    }
  uint32_t u, v;
  other_axes(a, &u, &v);
  /* Counter-clockwise seen from +(u x v) is places 0, 1, 3, 2; u x v = +a except for a == 1.
   * The normal must point to the positive end: +a when the lower end is negative. */
  static const int ccw[4] = {0, 1, 3, 2}, cw[4] = {0, 2, 3, 1};
  const int *ord = ((net > 0) == (a != 1)) ? ccw : cw;
  /* Runs of one cluster (a larger cell holding two adjacent places) become one corner; each
   * corner keeps its first and last place, so that side k runs from last[k] to first[k + 1],
   * two places that touch across the side's contact. Start after a change of cluster. */
  int s0 = 0;
  while (s0 < 4 && e[ord[s0]].clu == e[ord[(s0 + 3) % 4]].clu) s0++;
  if (s0 == 4) return;
  int first[4], last[4], n = 0;
  for (int k = 0; k < 4; k++) {
    int j = ord[(s0 + k) % 4];
    if (n > 0 && e[last[n - 1]].clu == e[j].clu) {
      last[n - 1] = j;
      continue;
    }
    first[n] = last[n] = j;
    n++;
  }
  if (n < 3) return;
  if (n == 4 && (e[first[0]].clu == e[first[2]].clu || e[first[1]].clu == e[first[3]].clu)) {
    w->out->open_edges++; /* cannot happen in an octree: two diagonal places in one cell */
    return;
  }
  if (T->keep_open == 2) return; /* only the holes wanted */
  dc_face *f = (dc_face *)dc_vec_push(&w->out->items);
  if (!f) {
    w->out->nomem = 1;
    return;
  }
  memset(f, 0, sizeof *f);
  for (int k = 0; k < 4; k++) f->c[k] = k < n ? e[first[k]].clu : DC_NONE;
  uint32_t sh = T->D - l;
  f->edge = dc_edge_pack(vx_morton_encode(p[0] << sh, p[1] << sh, p[2] << sh), a, l, net > 0);
  if (l == T->D) {
    for (int k = 0; k < n; k++) {
      int j0 = last[k], j1 = first[(k + 1) % n];
      int xj = e[j0].clu >= T->node_count ? j0 : e[j1].clu >= T->node_count ? j1 : -1;
      if (xj < 0) continue; /* node | node: dc_mesh.c groups those */
      if (contact_checkerboard(T, a, u, v, j0, j1, &T->field[e[xj].idx], xj))
        f->split |= 1u << k;
    }
  }
}

/* ---- the procedures ------------------------------------------------------------------------ */

static void cell_proc(walk_ctx *w, uint32_t l, const uint32_t p[3], dc_cell c) {
  const dc_tree *T = w->T;
  if (c.idx == DC_NONE || l == T->D) return;
  if (w->pass == DC_PASS_FACES && c.clu != DC_NONE) return; /* all inside one cut cell */
  if (w->collecting && l == w->task_level && defer(w, DC_CELL, 0, l, p, &c, 1)) return;
  dc_cell k[8];
  for (uint32_t s = 0; s < 8; s++) k[s] = dc_child(T, c, l, s);
  uint32_t q[3] = {2 * p[0], 2 * p[1], 2 * p[2]};
  /* Cells and faces of voxels have nothing inside them; the FIELD pass needs no edge there. */
  int leaf = l + 1 == T->D;
  for (uint32_t s = 0; s < 8 && !leaf; s++) {
    uint32_t r[3] = {q[0] + (s & 1), q[1] + (s >> 1 & 1), q[2] + (s >> 2 & 1)};
    cell_proc(w, l + 1, r, k[s]);
  }
  for (uint32_t a = 0; a < 3 && !leaf; a++)
    for (uint32_t m = 0; m < 8; m++) {
      if (m >> a & 1) continue;
      uint32_t hi = m | 1u << a;
      uint32_t r[3] = {q[0] + (hi & 1), q[1] + (hi >> 1 & 1), q[2] + (hi >> 2 & 1)};
      face_proc(w, l + 1, a, r, k[m], k[hi]);
    }
  for (uint32_t a = 0; a < 3 && !(leaf && w->pass == DC_PASS_FIELD); a++) {
    uint32_t u, v;
    other_axes(a, &u, &v);
    for (uint32_t h = 0; h < 2; h++) {
      dc_cell e[4];
      for (uint32_t j = 0; j < 4; j++) e[j] = k[h << a | (j & 1) << u | (j >> 1) << v];
      uint32_t r[3] = {q[0], q[1], q[2]};
      r[a] += h;
      r[u] += 1;
      r[v] += 1;
      edge_proc(w, l + 1, a, r, e);
    }
  }
  if (w->pass == DC_PASS_FIELD) {
    uint32_t r[3] = {q[0] + 1, q[1] + 1, q[2] + 1};
    vert_proc(w, l + 1, r, k);
  }
}

static void face_proc(walk_ctx *w, uint32_t l, uint32_t a, const uint32_t p[3], dc_cell c0,
                      dc_cell c1) {
  const dc_tree *T = w->T;
  if ((c0.idx == DC_NONE && c1.idx == DC_NONE) || l == T->D) return;
  /* Both cells known: every edge inside the face has at most two clusters around it. */
  if (w->pass == DC_PASS_FACES && dc_determined(c0) && dc_determined(c1)) return;
  if (w->collecting && l == w->task_level) {
    dc_cell c[2] = {c0, c1};
    if (defer(w, DC_FACE, a, l, p, c, 2)) return;
  }
  uint32_t b, cc;
  other_axes(a, &b, &cc);
  uint32_t q[3] = {2 * p[0], 2 * p[1], 2 * p[2]};
  int leaf = l + 1 == T->D;
  /* The 8 children touching the face, by their octant i around its centre (slot bit a = 1 on
   * the - side, 0 on the + side): every sub-face, inner edge and the centre use these. */
  dc_cell k[8];
  for (uint32_t i = 0; i < 8; i++) k[i] = dc_child(T, (i >> a & 1) ? c1 : c0, l, i ^ (1u << a));
  for (uint32_t m = 0; m < 4 && !leaf; m++) {
    uint32_t i = (m & 1) << b | (m >> 1) << cc;
    uint32_t r[3] = {q[0], q[1], q[2]};
    r[b] += m & 1;
    r[cc] += m >> 1;
    face_proc(w, l + 1, a, r, k[i], k[i | 1u << a]);
  }
  /* The two lines through the face's centre, along b and along cc, each in two halves. */
  for (int t = 0; t < 2 && !(leaf && w->pass == DC_PASS_FIELD); t++) {
    uint32_t along = t == 0 ? b : cc, across = t == 0 ? cc : b;
    uint32_t eu, ev;
    other_axes(along, &eu, &ev);
    for (uint32_t h = 0; h < 2; h++) {
      dc_cell e[4];
      for (uint32_t j = 0; j < 4; j++) {
        uint32_t su = j & 1, sv = j >> 1;
        uint32_t sa = eu == a ? su : sv, sc = eu == a ? sv : su;
        e[j] = k[sa << a | sc << across | h << along];
      }
      uint32_t r[3] = {q[0], q[1], q[2]};
      r[across] += 1;
      r[along] += h;
      edge_proc(w, l + 1, along, r, e);
    }
  }
  if (w->pass == DC_PASS_FIELD) {
    uint32_t r[3] = {q[0], q[1], q[2]};
    r[b] += 1;
    r[cc] += 1;
    vert_proc(w, l + 1, r, k);
  }
}

static void edge_proc(walk_ctx *w, uint32_t l, uint32_t a, const uint32_t p[3], const dc_cell *e) {
  const dc_tree *T = w->T;
  if (all_absent(e, 4)) return;
  if (w->pass == DC_PASS_FACES && l == T->D) {
    /* A finest edge (most of the pass): its sign change first, from any voxel that has it. */
    uint32_t u, v;
    other_axes(a, &u, &v);
    int j = 0;
    while (e[j].idx == DC_NONE) j++;
    uint32_t side = (uint32_t)(1 - (j & 1)) << u | (uint32_t)(1 - (j >> 1)) << v;
    const vx_voxel *x = &T->field[e[j].idx];
    int s0 = x->c[side] < 0, s1 = x->c[side | 1u << a] < 0;
    if (s0 == s1) return;
    if (distinct_places(e) >= 3 || has_hole(e)) emit(w, l, a, p, e, s0 ? 1 : -1);
    return;
  }
  if (w->pass == DC_PASS_FACES) {
    int det = 1;
    for (int j = 0; j < 4; j++) det &= dc_determined(e[j]);
    if (det) {
      /* A minimal edge of the cut when three or more places differ; one next to a place outside
       * the tree is summed too, to count the holes. */
      if (distinct_places(e) < 3 && !has_hole(e)) return;
      if (w->collecting && l == w->task_level && defer(w, DC_EDGE, a, l, p, e, 4)) return;
      int net = 0;
      edge_sum(w, l, a, e, &net);
      if (net) emit(w, l, a, p, e, net > 0 ? 1 : -1);
      return;
    }
  }
  if (l == T->D) return;
  if (w->collecting && l == w->task_level && defer(w, DC_EDGE, a, l, p, e, 4)) return;
  uint32_t u, v;
  other_axes(a, &u, &v);
  for (uint32_t h = 0; h < 2 && !(l + 1 == T->D && w->pass == DC_PASS_FIELD); h++) {
    dc_cell k[4];
    for (int j = 0; j < 4; j++)
      k[j] = dc_child(T, e[j], l,
                      h << a | (uint32_t)(1 - (j & 1)) << u | (uint32_t)(1 - (j >> 1)) << v);
    uint32_t r[3] = {2 * p[0], 2 * p[1], 2 * p[2]};
    r[a] += h;
    edge_proc(w, l + 1, a, r, k);
  }
  if (w->pass == DC_PASS_FIELD) {
    dc_cell k[8];
    for (uint32_t i = 0; i < 8; i++) {
      uint32_t j = (i >> u & 1) | (i >> v & 1) << 1;
      uint32_t slot = (i & 1u << a) | (~i & (1u << u | 1u << v));
      k[i] = dc_child(T, e[j], l, slot);
    }
    uint32_t r[3] = {2 * p[0], 2 * p[1], 2 * p[2]};
    r[a] += 1;
    vert_proc(w, l + 1, r, k);
  }
}

static void run_call(walk_ctx *w, const dc_call *k) {
  switch (k->kind) {
  case DC_CELL: cell_proc(w, k->level, k->p, k->c[0]); break;
  case DC_FACE: face_proc(w, k->level, k->axis, k->p, k->c[0], k->c[1]); break;
  case DC_EDGE: edge_proc(w, k->level, k->axis, k->p, k->c); break;
  default: vert_proc(w, k->level, k->p, k->c); break;
  }
}

/* ---- the parallel run ------------------------------------------------------------------------ */

static uint64_t call_hash(const dc_call *c) {
  uint64_t w[sizeof(dc_call) / 8], h = 0x9e3779b97f4a7c15ull;
  memcpy(w, c, sizeof w);
  for (size_t i = 0; i < sizeof w / 8; i++) {
    h ^= w[i];
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  return h;
}

#define MAX_THREADS 256

typedef struct run_job {
  const dc_tree *T;
  int pass;
  vx_voxel *field;
  const dc_call *tasks;
  uint64_t ntasks;
  atomic_ulong next, done;
  atomic_int slot, stop;
  dc_out out[MAX_THREADS];
  uint64_t *task_start; /* per task: its first item in its thread's list */
  uint32_t *task_count; /* per task: items */
  uint16_t *task_thread;
  const uint8_t *clean; /* per task: 1 when its items come from the previous walk (dc_reuse) */
  vx_progress_fn progress;
  void *user;
  const char *phase;
} run_job;

static void *run_worker(void *arg) {
  run_job *j = (run_job *)arg;
  int me = atomic_fetch_add(&j->slot, 1);
  if (me >= MAX_THREADS) return NULL;
  walk_ctx w;
  memset(&w, 0, sizeof w);
  w.T = j->T;
  w.pass = j->pass;
  w.field = j->field;
  w.out = &j->out[me];
  uint64_t report = 0;
  for (;;) {
    if (atomic_load(&j->stop)) break;
    uint64_t k = atomic_fetch_add(&j->next, 1);
    if (k >= j->ntasks) break;
    uint64_t before = w.out->items.n;
    if (!j->clean || !j->clean[k]) run_call(&w, &j->tasks[k]);
    {
      j->task_start[k] = before;
      j->task_count[k] = (uint32_t)(w.out->items.n - before);
      j->task_thread[k] = (uint16_t)me;
    }
    if (w.out->nomem) {
      atomic_store(&j->stop, 1);
      break;
    }
    uint64_t d = atomic_fetch_add(&j->done, 1) + 1;
    if (me == 0 && j->progress && d >= report) {
      report = d + j->ntasks / 64 + 1;
      if (j->progress(j->user, j->phase, (double)d / (double)j->ntasks)) atomic_store(&j->stop, 2);
    }
  }
  return NULL;
}

/* The task level: the shallowest level with enough nodes to keep the threads busy. For a level
 * cut no deeper than the cut, so that a minimal edge's sum runs inside one task. */
static uint32_t task_level(const dc_tree *T, int pass) {
  uint32_t L = 0;
  while (L + 1 < T->D && T->t->level_count[L] < 4096) L++;
  if (pass == DC_PASS_FACES && T->cut == VX_DC_LEVEL && T->level < L) L = T->level;
  return L;
}

vx_status dc_walk(const dc_tree *T, int pass, int threads, vx_voxel *field, dc_vec *items,
                  dc_out *sum, vx_progress_fn progress, void *user, const char *phase,
                  vx_error *err) {
  const uint32_t elem =
      pass == DC_PASS_FACES ? (uint32_t)sizeof(dc_face) : (uint32_t)sizeof(uint64_t);
  memset(sum, 0, sizeof *sum);
  dc_vec_init(items, elem);
  if (threads < 1) threads = 1;
  if (threads > MAX_THREADS) threads = MAX_THREADS;
  run_job *j = (run_job *)vx_calloc(1, sizeof *j);
  if (!j) return vx_error_set(err, VX_ERR_NOMEM, "out of memory meshing the tree");
  for (int i = 0; i < MAX_THREADS; i++) {
    dc_vec_init(&j->out[i].items, elem);
    dc_vec_init(&j->out[i].marks, sizeof(dc_mark));
  }
  dc_vec tasks;
  dc_vec_init(&tasks, sizeof(dc_call));
  dc_out head; /* items of the collecting walk (e.g. edges of cut cells above the task level) */
  memset(&head, 0, sizeof head);
  dc_vec_init(&head.items, elem);
  dc_vec_init(&head.marks, sizeof(dc_mark));
  dc_vec_init(&sum->marks, sizeof(dc_mark));
  walk_ctx w;
  memset(&w, 0, sizeof w);
  w.T = T;
  w.pass = pass;
  w.field = field;
  w.out = &head;
  w.collecting = 1;
  w.task_level = task_level(T, pass);
  w.tasks = &tasks;
  dc_cell root;
  root.idx = T->t->node_count ? 0 : DC_NONE;
  root.clu = root.idx != DC_NONE && dc_is_cut(T, 0, 0) ? dc_cluster_id(T, 0, 0) : DC_NONE;
  uint32_t origin[3] = {0, 0, 0};
  cell_proc(&w, 0, origin, root);
  /* The root's own faces, edges and corners, with nothing outside it: the grid's boundary. */
  dc_cell none, c[8];
  none.idx = none.clu = DC_NONE;
  for (uint32_t a = 0; a < 3; a++) {
    uint32_t hi[3] = {0, 0, 0};
    hi[a] = 1;
    face_proc(&w, 0, a, origin, none, root);
    face_proc(&w, 0, a, hi, root, none);
    uint32_t u, v;
    other_axes(a, &u, &v);
    for (uint32_t j = 0; j < 4; j++) {
      uint32_t q[3] = {0, 0, 0};
      q[u] = j & 1;
      q[v] = j >> 1;
      for (uint32_t i = 0; i < 4; i++) c[i] = i == (j ^ 3) ? root : none;
      edge_proc(&w, 0, a, q, c);
    }
  }
  for (uint32_t k = 0; k < 8 && pass == DC_PASS_FIELD; k++) {
    uint32_t q[3] = {k & 1, k >> 1 & 1, k >> 2 & 1};
    for (uint32_t i = 0; i < 8; i++) c[i] = i == (k ^ 7) ? root : none;
    vert_proc(&w, 0, q, c);
  }
  vx_status st = VX_OK;
  if (head.nomem) st = vx_error_set(err, VX_ERR_NOMEM, "out of memory meshing the tree");
  if (st == VX_OK) {
    j->T = T;
    j->pass = pass;
    j->field = field;
    j->tasks = (const dc_call *)tasks.data;
    j->ntasks = tasks.n;
    j->progress = progress;
    j->user = user;
    j->phase = phase;
    if (tasks.n) {
      j->task_start = (uint64_t *)vx_malloc(tasks.n * sizeof(uint64_t));
      j->task_count = (uint32_t *)vx_malloc(tasks.n * sizeof(uint32_t));
      j->task_thread = (uint16_t *)vx_malloc(tasks.n * sizeof(uint16_t));
      if (!j->task_start || !j->task_count || !j->task_thread)
        st = vx_error_set(err, VX_ERR_NOMEM, "out of memory meshing the tree");
    }
  }
  /* The error cut's passes: a task that the previous walk ran too (the same call, byte for byte:
   * the same cells and the same clusters above them) and whose cells hold no node whose cut
   * changed (dirty) keeps its faces. */
  dc_reuse *R = pass == DC_PASS_FACES ? T->reuse : NULL;
  uint8_t *clean = NULL;
  uint64_t *from = NULL, *table = NULL, mask = 0;
  if (st == VX_OK && R && R->valid && R->task_level == w.task_level && tasks.n && R->tasks.n) {
    uint64_t size = 16;
    while (size < 2 * R->tasks.n) size *= 2;
    mask = size - 1;
    clean = (uint8_t *)vx_calloc((size_t)tasks.n, 1);
    from = (uint64_t *)vx_malloc((size_t)tasks.n * sizeof(uint64_t));
    table = (uint64_t *)vx_calloc((size_t)size, sizeof(uint64_t));
    if (!clean || !from || !table) {
      st = vx_error_set(err, VX_ERR_NOMEM, "out of memory meshing the tree");
    } else {
      const dc_call *prev = (const dc_call *)R->tasks.data;
      for (uint64_t k = 0; k < R->tasks.n; k++) {
        uint64_t h = call_hash(&prev[k]) & mask;
        while (table[h]) h = (h + 1) & mask;
        table[h] = k + 1;
      }
      for (uint64_t k = 0; k < tasks.n; k++) {
        const dc_call *c = &((const dc_call *)tasks.data)[k];
        int n = c->kind == DC_CELL ? 1 : c->kind == DC_FACE ? 2 : c->kind == DC_EDGE ? 4 : 8, d = 0;
        for (int i = 0; i < n; i++) d |= c->c[i].idx != DC_NONE && R->dirty[c->c[i].idx];
        if (d) continue;
        for (uint64_t h = call_hash(c) & mask; table[h]; h = (h + 1) & mask)
          if (!memcmp(&prev[table[h] - 1], c, sizeof *c)) {
            clean[k] = 1;
            from[k] = table[h] - 1;
            break;
          }
      }
      j->clean = clean;
    }
  }
  vx_free(table);
  if (st == VX_OK && tasks.n) {
    int want = (uint64_t)threads > tasks.n ? (int)tasks.n : threads;
    vx_parallel(want, run_worker, j);
    int stop = atomic_load(&j->stop);
    for (int i = 0; i < MAX_THREADS; i++) stop |= j->out[i].nomem;
    if (atomic_load(&j->stop) == 2)
      st = vx_error_set(err, VX_ERR_INTERRUPTED, "meshing interrupted");
    else if (stop)
      st = vx_error_set(err, VX_ERR_NOMEM, "out of memory meshing the tree");
  }
  sum->shared = head.shared;
  sum->disputed = head.disputed;
  sum->open_edges = head.open_edges;
  for (int i = 0; i < MAX_THREADS; i++) {
    sum->shared += j->out[i].shared;
    sum->disputed += j->out[i].disputed;
    sum->open_edges += j->out[i].open_edges;
  }
  if (st == VX_OK) {
    /* Concatenate: the collecting walk's items, then each task's in task order. */
    for (uint64_t k = 0; clean && k < tasks.n; k++)
      if (clean[k]) j->task_count[k] = R->count[from[k]];
    uint64_t total = head.items.n;
    for (uint64_t k = 0; k < tasks.n; k++) total += j->task_count[k];
    items->data = vx_malloc((size_t)(total ? total : 1) * elem);
    if (!items->data) {
      st = vx_error_set(err, VX_ERR_NOMEM, "out of memory: %llu mesh elements",
                        (unsigned long long)total);
    } else {
      items->cap = total;
      char *dst = (char *)items->data;
      if (head.items.n) memcpy(dst, head.items.data, head.items.n * elem);
      uint64_t at = head.items.n;
      uint64_t first = at;
      for (uint64_t k = 0; k < tasks.n; k++) {
        if (!j->task_count[k]) continue; /* its thread may have no items at all */
        const char *src = clean && clean[k]
                              ? (const char *)R->faces.data + R->start[from[k]] * elem
                              : (const char *)j->out[j->task_thread[k]].items.data +
                                    j->task_start[k] * elem;
        memcpy(dst + at * elem, src, (size_t)j->task_count[k] * elem);
        at += j->task_count[k];
      }
      items->n = total;
      if (R) { /* keep the tasks and their faces for the next walk */
        R->valid = 0;
        uint64_t nt = tasks.n ? tasks.n : 1, nf = total - first;
        uint64_t *rs = (uint64_t *)vx_realloc(R->start, (size_t)nt * sizeof(uint64_t));
        if (rs) R->start = rs;
        uint32_t *rc = rs ? (uint32_t *)vx_realloc(R->count, (size_t)nt * sizeof(uint32_t)) : NULL;
        if (rc) R->count = rc;
        void *rf = rc ? vx_realloc(R->faces.data, (size_t)(nf ? nf : 1) * elem) : NULL;
        if (rf) R->faces.data = rf;
        void *rt = rf ? vx_realloc(R->tasks.data, (size_t)nt * sizeof(dc_call)) : NULL;
        if (rt) {
          R->tasks.data = rt;
          R->tasks.n = R->tasks.cap = tasks.n;
          R->tasks.elem = sizeof(dc_call);
          if (tasks.n) memcpy(rt, tasks.data, tasks.n * sizeof(dc_call));
          R->faces.n = R->faces.cap = nf;
          R->faces.elem = elem;
          if (nf) memcpy(rf, dst + first * elem, (size_t)nf * elem);
          uint64_t o = 0;
          for (uint64_t k = 0; k < tasks.n; k++) {
            R->start[k] = o;
            R->count[k] = j->task_count[k];
            o += j->task_count[k];
          }
          R->task_level = w.task_level;
          R->valid = 1;
        }
      }
    }
  }
  vx_free(clean);
  vx_free(from);
  /* Marks in any order: the set they flag is what matters. */
  for (int i = -1; i < MAX_THREADS; i++) {
    dc_vec *m = i < 0 ? &head.marks : &j->out[i].marks;
    for (uint64_t k = 0; st == VX_OK && k < m->n; k++) {
      dc_mark *d = (dc_mark *)dc_vec_push(&sum->marks);
      if (!d) st = vx_error_set(err, VX_ERR_NOMEM, "out of memory meshing the tree");
      else *d = ((const dc_mark *)m->data)[k];
    }
    dc_vec_free(m);
  }
  if (st != VX_OK) dc_vec_free(&sum->marks);
  for (int i = 0; i < MAX_THREADS; i++) dc_vec_free(&j->out[i].items);
  dc_vec_free(&head.items);
  dc_vec_free(&tasks);
  vx_free(j->task_start);
  vx_free(j->task_count);
  vx_free(j->task_thread);
  vx_free(j);
  return st;
}
