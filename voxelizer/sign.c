/* SPDX-License-Identifier: Apache-2.0 */
/* sign.c - inside or outside: the sign rules' tables; the pseudo-normal rule itself.
 *
 * Which rule. The default (VX_SIGN_WINDING) is the generalized winding number, evaluated per
 * corner with the hierarchy of winding.c: a corner is inside when |w| > 1/2. Its behaviour on
 * imperfect meshes, documented in full at the top of winding.c: holes are closed by a smooth
 * membrane spanning the rim (|w| ~ 1/2 there, the sign flips across it); duplicated faces with
 * both windings cancel (w ~ 0: outside on both sides); self-intersecting unions are inside
 * throughout (w ~ 2 in the overlap); an inverted mesh (all triangles wound inward) has w ~ -1
 * inside, so it is still inside: the rule does not care about the global orientation of a
 * shell (VX_SIGN_PSEUDO_NORMAL instead inverts the sign everywhere on such a mesh). vx_sign_build_rule builds the tree for that rule and the tables below
 * for VX_SIGN_PSEUDO_NORMAL, the rule this file implements and which is kept for comparison:
 *
 * Rule (J. A. Baerentzen and H. Aanaes, "Signed distance computation using the angle weighted
 * pseudonormal", IEEE TVCG 2005): let q be the point of the mesh closest to p and n the
 * pseudo-normal of the feature q lies on - the face normal inside a face, the sum of the two face
 * normals on an edge, the sum of the incident face normals weighted by their angles at a vertex.
 * Then p is inside exactly when (p - q) . n < 0, for a closed, consistently oriented 2-manifold.
 * The voxelizer applies it to the closest triangle among the candidates of a corner (field.c);
 * that is the true closest point whenever the corner is within one voxel of the mesh.
 *
 * Adjacency is rebuilt from the triangle soup: vertices are welded by exact position (bitwise
 * equal floats, -0 = +0) and edges by their two welded vertices, with hash tables; vertex and edge
 * normals are accumulated in triangle order, so the result does not depend on threads.
 *
 * What the rule does on imperfect meshes (real scans), and so what the field shows:
 * - Holes (boundary edges, one triangle): the edge pseudo-normal is that triangle's normal, and a
 *   boundary vertex averages its incident faces only. Points whose closest feature is the rim get
 *   the side of the rim triangles' planes, so the sign flips across those planes extended past the
 *   rim: the zero set of the field continues the open surface by at most the voxels that hold the
 *   rim (only surface voxels carry values), and closes nothing across the hole. Away from the rim
 *   the sign is that of the closed case: a sphere with a polar hole has every corner right below
 *   the rim (tests/test_voxelizer_field.c). messy/sphereWithHole.stl (9 boundary edges) at 64^3:
 *   49% negative / 51% positive corners; 176 voxel edges change sign with no surface between
 *   them, which a true distance field never does (test_voxelizer_build prints these numbers for
 *   every messy mesh; the analytic holed sphere shows such flips only near its rim).
 * - Duplicate triangles with opposite windings (messy/degenerated.obj: the three coordinate
 *   planes' triangles, each twice, both ways; 6 non-manifold edges): normals cancel on shared
 *   edges and vertices. A pseudo-normal that cancels to (nearly) zero falls back to the closest
 *   triangle's own face normal, and of two coincident triangles the lower index wins the distance
 *   tie, so the sign follows the first-listed winding; such a mesh encloses nothing, and its signs
 *   say only which side of each plane a corner is on.
 * - Self-intersecting shells (messy/two-boxes-bad-self-union.ply, 8 boundary edges): each corner
 *   takes the side of its closest shell; no sign change without a surface between at 64^3.
 * - Folds (messy/cube_with_fold.ply: no boundary or non-manifold edges, a folded-in patch): the
 *   fold's pseudo-normals follow its own faces; 258 voxel edges change sign with no surface
 *   between them. The cube fills the grid, so nearly all its corners are inside or on faces.
 * - Inconsistent winding in general: the sign follows each triangle's own normal, so a flipped
 *   patch flips the sign next to it; edges between flipped and unflipped triangles cancel and
 *   fall back to the face normal.
 * The winding number closes holes smoothly and handles all of the above without reference to the
 * closest triangle, at the price of a hierarchy query per corner; the pseudo-normal costs nothing
 * beyond the distance.
 */
#include "sys/system.h"
#include "voxelizer/internal.h"
#include "voxelizer/distance.h"
#include "voxelizer/cert_eval.h"
#include "voxelizer/hash_parts.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void vx_sign_free(vx_sign_data *s) {
  if (!s) return;
  vx_free(s->face_n);
  vx_free(s->edge_n);
  vx_free(s->vid);
  vx_free(s->vert_n);
  vx_wind_free(&s->wind);
  vx_free(s->clean);
  vx_free(s->vclean);
  vx_free(s->eid);
  vx_free(s->ecount);
  vx_free(s->eorient);
  memset(s, 0, sizeof *s);
}

static uint32_t float_key(float f) {
  uint32_t u;
  if (f == 0.0f) f = 0.0f; /* -0 welds with +0 */
  memcpy(&u, &f, 4);
  return u;
}

/* out = v / w: an average of unit normals, whose length tells how much they cancelled. */
static void average_to(const double v[3], double w, float *out) {
  for (int i = 0; i < 3; i++) out[i] = w > 0.0 ? (float)(v[i] / w) : 0.0f;
}

/* Triangle t's unit normal (0 when degenerate), in double. */
static void face_normal(const float *p, double n[3]) {
  double e0[3], e1[3];
  for (int i = 0; i < 3; i++) {
    e0[i] = (double)p[3 + i] - (double)p[i];
    e1[i] = (double)p[6 + i] - (double)p[i];
  }
  n[0] = e0[1] * e1[2] - e0[2] * e1[1];
  n[1] = e0[2] * e1[0] - e0[0] * e1[2];
  n[2] = e0[0] * e1[1] - e0[1] * e1[0];
  double l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  for (int i = 0; i < 3; i++) n[i] = l > 0.0 ? n[i] / l : 0.0;
}

/* The angle of triangle p at its corner k. */
static double corner_angle(const float *p, int k) {
  const float *a = p + 3 * k, *b = p + 3 * ((k + 1) % 3), *c = p + 3 * ((k + 2) % 3);
  double u[3], w[3];
  for (int i = 0; i < 3; i++) {
    u[i] = (double)b[i] - (double)a[i];
    w[i] = (double)c[i] - (double)a[i];
  }
  double lu = sqrt(vx_dot3d(u, u)), lw = sqrt(vx_dot3d(w, w));
  double cosang = lu > 0.0 && lw > 0.0 ? vx_dot3d(u, w) / (lu * lw) : 1.0;
  if (cosang > 1.0) cosang = 1.0;
  if (cosang < -1.0) cosang = -1.0;
  return acos(cosang);
}

/* The tables in parallel, with the result of one serial pass over the corners (c = 3t + k):
 * vertices welded by exact position and edges by their two vertex ids, each numbered in order of
 * first appearance, and every sum over a vertex's or an edge's corners taken in corner order.
 * Corners are split by the hash of their position (then of their edge) into partitions that keep
 * corner order (hash_parts.h). Each partition, on a thread of its own, finds the classes of its
 * corners and sums each class as it goes (each class lies in one partition, its corners in
 * order), in arrays of its own numbered by the partition's classes; a scan of the first corners
 * numbers the classes; each partition then puts its sums in their places. */
typedef struct part_classes {
  uint64_t n;       /* the partition's classes, in order of their first corner */
  uint32_t *first;  /* per class: its first corner */
  double *acc;      /* per class: 4 doubles (vertices: the angle-weighted normal sum and the
                       angles') or 3 (edges: the face normals' sum) */
  uint32_t *count;  /* edges: per class, its corners */
  int32_t *orient;  /* edges: per class, +1 per corner running it from the lower vertex id, -1
                       from the higher, +2 collapsed (a manifold, consistently wound edge sums
                       to 0) */
} part_classes;

typedef struct tables_job {
  const vx_soup *m;
  vx_sign_data *s;
  vx_hash_parts hp;
  part_classes part[VX_HASH_PARTS];
  uint32_t *rep;      /* per corner: the first corner of its class */
  uint32_t *id;       /* per corner: its class's number (vid or eid) */
  uint64_t *before;   /* per chunk of corners: classes first seen before it */
  int edges;          /* 0: vertices, 1: edges */
  double *unit_n;     /* vertices' pass: per triangle its face_normal, in the room edge_n gets
                         later (24 of its 36 bytes a triangle) */
  float *edge_avg;    /* per edge: the mean of its faces' normals */
  uint32_t *ecount;   /* per edge: part_classes.count by edge id */
  int32_t *eorient;   /* per edge: part_classes.orient by edge id */
  atomic_int failed;
} tables_job;

/* Corner c's position as the bits that weld (float_key). */
static void vertex_key(const vx_soup *m, uint64_t c, uint32_t k[3]) {
  const float *p = m->pos + c * 3;
  for (int i = 0; i < 3; i++) k[i] = float_key(p[i]);
}

static uint64_t vertex_hash(const void *ctx, uint64_t c) {
  uint32_t k[3];
  vertex_key((const vx_soup *)ctx, c, k);
  return vx_mix64(((uint64_t)k[0] << 32 | k[1]) ^ vx_mix64(k[2]));
}

/* Corner c's edge (to the next corner of its triangle) as its two vertex ids, the smaller first. */
static uint64_t edge_key(const uint32_t *vid, uint64_t c) {
  uint32_t a = vid[c], b = vid[c - c % 3 + (c % 3 + 1) % 3];
  return a < b ? (uint64_t)a << 32 | b : (uint64_t)b << 32 | a;
}

/* vx_mix64 is a bijection: two edges with the same hash are the same edge */
static uint64_t edge_hash(const void *ctx, uint64_t c) {
  return vx_mix64(edge_key((const uint32_t *)ctx, c));
}

static void part_free(part_classes *q) {
  vx_free(q->first);
  vx_free(q->acc);
  vx_free(q->count);
  vx_free(q->orient);
  memset(q, 0, sizeof *q);
}

/* Corner c's share of its class's sums (class lc of the partition's arrays). */
static void add_corner(const tables_job *j, uint64_t c, uint64_t lc, double *acc, uint32_t *count,
                       int32_t *orient) {
  const uint64_t t = c / 3;
  if (j->edges) {
    count[lc]++;
    const uint32_t va = j->s->vid[c], vb = j->s->vid[c - c % 3 + (c % 3 + 1) % 3];
    orient[lc] += va < vb ? 1 : va > vb ? -1 : 2; /* a collapsed edge never balances */
    for (int i = 0; i < 3; i++) acc[lc * 3 + i] += j->s->face_n[t * 3 + i];
  } else {
    const double *n = j->unit_n + t * 3;
    const double ang = corner_angle(j->m->pos + t * 9, (int)(c % 3));
    for (int i = 0; i < 3; i++) acc[lc * 4 + i] += ang * n[i];
    acc[lc * 4 + 3] += ang;
  }
}

/* Partition p's corners in order: each one's first corner of its class (rep), and each class's
 * sums (j->part[p]). The partition's hashes are read in order; a table by hash holds each class's
 * number in the partition, whose hash and (vertices) key are kept by number (an edge's hash is
 * its key), so a corner reads only its own triangle out of place. */
static void find_classes(void *ctx, int p, vx_hash_scratch *w) {
  tables_job *j = (tables_job *)ctx;
  const uint64_t a = j->hp.start[p], b = j->hp.start[p + 1], n = b - a;
  if (n == 0) return;
  uint64_t size = 16;
  while (size < 2 * n) size <<= 1;
  const uint64_t mask = size - 1, nacc = j->edges ? 3 : 4;
  /* scratch: slots, then per class its hash, sums, first corner and (vertices) key or (edges)
   * count and orientation */
  const size_t bytes = (size_t)size * 4 + (size_t)n * (8 + 8 * nacc + 4 + 12);
  unsigned char *mem = (unsigned char *)vx_hash_scratch_get(w, bytes);
  if (!mem) {
    atomic_store(&j->failed, 1);
    return;
  }
  uint32_t *slot = (uint32_t *)mem; /* class number + 1 */
  uint64_t *chash = (uint64_t *)(mem + (size_t)size * 4);
  double *acc = (double *)(chash + n);
  uint32_t *first = (uint32_t *)(acc + n * nacc);
  uint32_t *key = first + n, *count = key;              /* vertices: 3 a class */
  int32_t *orient = (int32_t *)(count + n);             /* edges */
  memset(slot, 0, (size_t)size * 4);
  uint64_t nc = 0;
  for (uint64_t k = a; k < b; k++) {
    const uint32_t c = j->hp.idx[k];
    const uint64_t hc = j->hp.hash[k];
    uint32_t kc[3] = {0, 0, 0};
    vx_hash_parts_prefetch(&j->hp, k, b, slot, mask);
    if (k + VX_HASH_AHEAD < b) { /* the triangle a later corner will read */
      const uint64_t t2 = j->hp.idx[k + VX_HASH_AHEAD] / 3;
      __builtin_prefetch(j->edges ? (const void *)(j->s->vid + 3 * t2)
                                  : (const void *)(j->m->pos + 9 * t2));
      __builtin_prefetch(j->edges ? (const void *)(j->s->face_n + 3 * t2)
                                  : (const void *)(j->unit_n + 3 * t2));
    }
    if (!j->edges) vertex_key(j->m, c, kc);
    uint64_t lc = nc;
    for (uint64_t h = hc & mask;; h = (h + 1) & mask) {
      const uint32_t e = slot[h];
      if (e == 0) { /* a new class */
        slot[h] = (uint32_t)(++nc);
        chash[lc] = hc;
        first[lc] = c;
        for (uint64_t i = 0; i < nacc; i++) acc[lc * nacc + i] = 0.0;
        if (j->edges)
          count[lc] = 0, orient[lc] = 0;
        else
          memcpy(key + 3 * lc, kc, sizeof kc);
        break;
      }
      if (chash[e - 1] == hc && (j->edges || memcmp(key + 3 * (e - 1), kc, sizeof kc) == 0)) {
        lc = e - 1;
        break;
      }
    }
    j->rep[c] = first[lc];
    add_corner(j, c, lc, acc, count, orient);
  }
  /* the partition's classes, kept to the numbering */
  part_classes *q = &j->part[p];
  q->n = nc;
  q->first = (uint32_t *)vx_malloc((size_t)nc * sizeof *q->first);
  q->acc = (double *)vx_malloc((size_t)(nc * nacc) * sizeof *q->acc);
  if (j->edges) {
    q->count = (uint32_t *)vx_malloc((size_t)nc * sizeof *q->count);
    q->orient = (int32_t *)vx_malloc((size_t)nc * sizeof *q->orient);
  }
  if (!q->first || !q->acc || (j->edges && (!q->count || !q->orient))) {
    part_free(q);
    atomic_store(&j->failed, 1);
    return;
  }
  memcpy(q->first, first, (size_t)nc * sizeof *first);
  memcpy(q->acc, acc, (size_t)(nc * nacc) * sizeof *acc);
  if (j->edges) {
    memcpy(q->count, count, (size_t)nc * sizeof *count);
    memcpy(q->orient, orient, (size_t)nc * sizeof *orient);
  }
}

/* Partition p's classes to their numbers: the vertices' normals, the edges' mean normals,
 * counts and orientations. */
static void place_classes(void *ctx, int p, vx_hash_scratch *w) {
  (void)w;
  tables_job *j = (tables_job *)ctx;
  part_classes *q = &j->part[p];
  for (uint64_t lc = 0; lc < q->n; lc++) {
    const uint64_t id = j->id[q->first[lc]];
    if (j->edges) {
      j->ecount[id] = q->count[lc];
      j->eorient[id] = q->orient[lc];
      average_to(q->acc + lc * 3, (double)q->count[lc], j->edge_avg + id * 3);
    } else {
      average_to(q->acc + lc * 4, q->acc[lc * 4 + 3], j->s->vert_n + id * 3);
    }
  }
  part_free(q);
}

#define TB_CHUNK VX_RANGE_CHUNK

static void count_firsts(void *ctx, uint64_t a, uint64_t b) {
  tables_job *j = (tables_job *)ctx;
  uint64_t n = 0;
  for (uint64_t c = a; c < b; c++) n += j->rep[c] == c;
  j->before[a / TB_CHUNK] = n;
}

static void number_firsts(void *ctx, uint64_t a, uint64_t b) {
  tables_job *j = (tables_job *)ctx;
  uint64_t n = j->before[a / TB_CHUNK];
  for (uint64_t c = a; c < b; c++)
    if (j->rep[c] == c) j->id[c] = (uint32_t)n++;
}

static void number_rest(void *ctx, uint64_t a, uint64_t b) {
  tables_job *j = (tables_job *)ctx;
  for (uint64_t c = a; c < b; c++)
    if (j->rep[c] != c) j->id[c] = j->id[j->rep[c]];
}

static void face_normals(void *ctx, uint64_t a, uint64_t b) {
  tables_job *j = (tables_job *)ctx;
  for (uint64_t t = a; t < b; t++) {
    double *n = j->unit_n + t * 3;
    face_normal(j->m->pos + t * 9, n);
    for (int i = 0; i < 3; i++) j->s->face_n[t * 3 + i] = (float)n[i];
  }
}

static void edge_normals(void *ctx, uint64_t a, uint64_t b) {
  tables_job *j = (tables_job *)ctx;
  for (uint64_t c = a; c < b; c++) memcpy(j->s->edge_n + c * 3, j->edge_avg + (uint64_t)j->id[c] * 3, 12);
}

/* The classes of the corners by j->edges, numbered into j->id, their sums in j->part; the class
 * count, or -1 (no memory). */
static int64_t classes(tables_job *j, int threads) {
  const uint64_t n = j->m->tri_count * 3, chunks = (n + TB_CHUNK - 1) / TB_CHUNK;
  vx_error e;
  if (vx_hash_parts_build(n, j->edges ? edge_hash : vertex_hash,
                          j->edges ? (const void *)j->s->vid : (const void *)j->m, threads,
                          &j->hp, &e) != VX_OK)
    return -1;
  vx_hash_parts_run(threads, find_classes, j);
  int64_t count = -1;
  j->before = (uint64_t *)vx_malloc((size_t)(chunks ? chunks : 1) * sizeof *j->before);
  if (j->before && !atomic_load(&j->failed)) {
    vx_ranges_run(threads, n, count_firsts, j);
    const uint64_t at = vx_exclusive_sum(j->before, chunks);
    vx_ranges_run(threads, n, number_firsts, j);
    vx_ranges_run(threads, n, number_rest, j);
    count = (int64_t)at;
  }
  vx_free(j->before);
  j->before = NULL;
  return count;
}

static void parts_free(tables_job *j) {
  for (int p = 0; p < VX_HASH_PARTS; p++) part_free(&j->part[p]);
}

vx_status vx_sign_build_threads(const vx_soup *m, int threads, vx_sign_data *s, vx_error *err) {
  memset(s, 0, sizeof *s);
  uint64_t T = m->tri_count;
  if (T == 0) return vx_error_set(err, VX_ERR_EMPTY, "no triangles");
  if (T * 3 >= UINT32_MAX)
    return vx_error_set(err, VX_ERR_LIMIT, "too many triangles for the sign tables (%llu)",
                        (unsigned long long)T);
  const uint64_t n = T * 3;
  tables_job *j = (tables_job *)vx_calloc(1, sizeof *j); /* (its partitions: 40 KiB) */
  if (!j) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  atomic_init(&j->failed, 0);
  j->m = m;
  j->s = s;
  s->face_n = (float *)vx_malloc(T * 3 * sizeof(float));
  s->edge_n = (float *)vx_malloc(T * 9 * sizeof(float));
  s->vid = (uint32_t *)vx_malloc(n * sizeof(uint32_t));
  uint32_t *eid = (uint32_t *)vx_malloc(n * sizeof(uint32_t));
  j->rep = (uint32_t *)vx_malloc(n * sizeof(uint32_t));
  int64_t nv = -1, ne = -1;
  if (s->face_n && s->edge_n && s->vid && eid && j->rep) {
    j->unit_n = (double *)(void *)s->edge_n; /* edge_n is written last (edge_normals) */
    vx_ranges_run(threads, T, face_normals, j);
    j->id = s->vid; /* vertices */
    nv = classes(j, threads);
  }
  if (nv >= 0) {
    s->vert_count = (uint64_t)nv;
    s->vert_n = (float *)vx_malloc((size_t)(nv ? nv : 1) * 3 * sizeof(float));
    if (!s->vert_n) nv = -1;
  }
  if (nv >= 0) {
    vx_hash_parts_run(threads, place_classes, j);
    j->edges = 1; /* edges, numbered by their first corner (the partitions' arrays reused) */
    j->id = eid;
    ne = classes(j, threads);
  }
  vx_hash_parts_free(&j->hp); /* not needed to place the classes: their room first */
  vx_free(j->rep);
  j->rep = NULL;
  if (ne >= 0) {
    s->edge_count = (uint64_t)ne;
    j->edge_avg = (float *)vx_malloc((size_t)(ne ? ne : 1) * 3 * sizeof(float));
    j->ecount = (uint32_t *)vx_malloc((size_t)(ne ? ne : 1) * sizeof(uint32_t));
    j->eorient = (int32_t *)vx_malloc((size_t)(ne ? ne : 1) * sizeof(int32_t));
    if (!j->edge_avg || !j->ecount || !j->eorient) ne = -1;
  }
  if (ne >= 0) {
    vx_hash_parts_run(threads, place_classes, j);
    for (int64_t e = 0; e < ne; e++) {
      if (j->ecount[e] == 1) s->boundary_edges++;
      if (j->ecount[e] > 2) s->nonmanifold_edges++;
    }
    vx_ranges_run(threads, n, edge_normals, j);
  }
  parts_free(j);
  vx_hash_parts_free(&j->hp);
  vx_free(j->rep);
  vx_free(j->edge_avg);
  uint32_t *ecount = j->ecount;
  int32_t *eorient = j->eorient;
  vx_free(j);
  if (ne < 0) {
    vx_free(ecount);
    vx_free(eorient);
    vx_free(eid);
    vx_sign_free(s);
    return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate the sign tables for %llu triangles",
                        (unsigned long long)T);
  }
  s->eid = eid; /* clean_edge_flags uses these three, then frees them */
  s->ecount = ecount;
  s->eorient = eorient;
  return VX_OK;
}

vx_status vx_sign_build(const vx_soup *m, vx_sign_data *s, vx_error *err) {
  return vx_sign_build_threads(m, 0, s, err);
}

/* ---- the winding rule's shortcut -------------------------------------------------------------
 *
 * A corner takes the pseudo-normal side of its closest feature, without a winding-number query,
 * when it lies more than VX_SIGN_FACE_MIN from the mesh and every triangle touching that feature
 * is "clean" (a face: its triangle; an edge or a vertex: all triangles at its welded vertices).
 * Clean: non-degenerate, each of its three welded edges shared with exactly one other
 * triangle that runs the edge the other way (manifold, consistently wound), and the winding
 * number just behind its centroid (1/1000 of its size along the normal) within 0.35 of 1 and
 * just in front within 0.35 of 0 (coarse evaluations, beta = 1, error <= 0.15): what any face of
 * a closed, outward-wound surface that no other part of the mesh encloses shows. Faces inside
 * another shell (w ~ 2 behind) or with coincident sheets of other windings (folds, duplicates:
 * the jump across them is not 1) fail it. A face of an inverted shell (w ~ 0 behind, ~ -1 in
 * front) is clean too, of the second kind: its pseudo-normal side is then reversed. An edge or
 * vertex is clean when all of its triangles are clean of one kind. So does a triangle
 * that cuts through another one sharing no vertex with it (an edge of one properly crossing the
 * other): there the rest of the mesh's winding number changes by an integer across the
 * triangle. Without such crossings it varies over a clean triangle only continuously (near
 * holes), so a corner near its face has |w| > 1/2 exactly behind it, as the face normal says; across
 * a clean edge or vertex the same holds for the pseudo-normal (Baerentzen & Aanaes). The
 * shortcut therefore agrees with |w(p)| > 1/2 there and skips most queries; every other corner
 * (near edges, vertices, holes, non-manifold or flipped patches, faces inside another shell)
 * queries the tree. The choice depends only on the corner and the mesh, never on blocks. */

/* The triangles are certified in the tree's order: neighbours in that order walk the same nodes,
 * so a thread's walks stay in its cache (the input order of a large mesh scatters them). */
typedef struct cert_job {
  const vx_wind_tree *t;
  uint8_t *clean;
  atomic_uint_fast64_t next;
} cert_job;

static void *cert_worker(void *arg) {
  cert_job *j = (cert_job *)arg;
  const uint64_t T = j->t->tri_count, chunk = 1024;
  for (;;) {
    uint64_t lo = atomic_fetch_add(&j->next, chunk);
    if (lo >= T) break;
    uint64_t hi = lo + chunk < T ? lo + chunk : T;
    for (uint64_t i = lo; i < hi; i++) {
      const uint32_t t = j->t->order[i];
      if (!j->clean[t]) continue;
      double g[9];
      vx_wind_leaf_tri(j->t, i, g);
      j->clean[t] = vx_cert_triangle(j->t, g);
    }
  }
  return NULL;
}

static void cpu_cert(vx_sign_data *s, int threads) {
  cert_job j;
  j.t = &s->wind;
  j.clean = s->clean;
  atomic_init(&j.next, 0);
  vx_parallel(vx_thread_count(threads, 64), cert_worker, &j);
}

typedef struct clean_job {
  const vx_soup *m;
  vx_sign_data *s;
} clean_job;

/* Triangles [a, b): clean as far as their edges and area say (the certificate comes next). */
static void clean_edges(void *ctx, uint64_t a, uint64_t b) {
  const clean_job *j = (const clean_job *)ctx;
  const vx_sign_data *s = j->s;
  for (uint64_t t = a; t < b; t++) {
    int ok = 1;
    for (int k = 0; k < 3; k++) {
      uint32_t e = s->eid[t * 3 + k];
      ok &= s->ecount[e] == 2 && s->eorient[e] == 0;
    }
    const float *p = j->m->pos + t * 9;
    double u[3], v[3];
    for (int i = 0; i < 3; i++) {
      u[i] = (double)p[3 + i] - p[i];
      v[i] = (double)p[6 + i] - p[i];
    }
    double cx = u[1] * v[2] - u[2] * v[1], cy = u[2] * v[0] - u[0] * v[2],
           cz = u[0] * v[1] - u[1] * v[0];
    s->clean[t] = (uint8_t)(ok && cx * cx + cy * cy + cz * cz > 0.0);
  }
}

/* The arrays the tables leave for the clean test (sign_eval.h: during the build only). */
static void build_only_free(vx_sign_data *s) {
  vx_free(s->eid);
  vx_free(s->ecount);
  vx_free(s->eorient);
  s->eid = NULL;
  s->ecount = NULL;
  s->eorient = NULL;
}

/* The clean flags' edge tests (see above), before the tree: the tables' build-only arrays are
 * freed before the tree's build allocates its own. Returns 0 on allocation failure. */
static int clean_edge_flags(const vx_soup *m, vx_sign_data *s, int threads) {
  const double start = vx_clock_seconds();
  uint64_t T = m->tri_count;
  s->clean = (uint8_t *)vx_malloc(T);
  s->vclean = (uint8_t *)vx_malloc(s->vert_count ? s->vert_count : 1);
  if (!s->eid || !s->ecount || !s->eorient || !s->clean || !s->vclean) return 0;
  /* the edges' corner counts and orientations come from the tables' edge pass */
  clean_job cj = {m, s};
  vx_ranges_run(threads, T, clean_edges, &cj);
  build_only_free(s);
  s->sec[2] = vx_clock_seconds() - start;
  return 1;
}

/* The clean flags' centroid test against the tree, then the vertices' flags. */
static void clean_flags(const vx_soup *m, vx_sign_data *s, int gpu, int threads) {
  uint64_t T = m->tri_count;
  /* The centroid test, on the GPU when asked and possible, else on the caller's threads (each
   * triangle independent: threads and order change nothing). The tree's triangles are the grid
   * triangles the test takes (vx_grid_tri in the same frame), in the tree's order. */
  const double t0 = vx_clock_seconds();
  s->cert_gpu = gpu && vx_sign_cert_gpu(&s->wind, s->clean, NULL) == VX_OK;
  if (!s->cert_gpu) cpu_cert(s, threads);
  const double t1 = vx_clock_seconds();
  s->sec[3] = t1 - t0;
  vx_free(s->wind.order); /* the test's only reader */
  s->wind.order = NULL;
  s->clean_count = 0;
  memset(s->vclean, 0xff, s->vert_count); /* 0xff: no triangle seen yet */
  for (uint64_t t = 0; t < T; t++) {
    s->clean_count += s->clean[t] != 0;
    for (int k = 0; k < 3; k++) {
      uint8_t *v = s->vclean + s->vid[t * 3 + k];
      *v = *v == 0xff || *v == s->clean[t] ? s->clean[t] : 0;
    }
  }
  s->sec[2] += vx_clock_seconds() - t1;
}

vx_status vx_sign_build_rule(const vx_soup *m, const vx_transform *xf, int rule, vx_sign_data *s,
                             vx_error *err) {
  return vx_sign_build_rule_ex(m, xf, rule, 0, 0, s, err);
}

vx_status vx_sign_build_rule_ex(const vx_soup *m, const vx_transform *xf, int rule, int gpu,
                                int threads, vx_sign_data *s, vx_error *err) {
  if (rule == VX_SIGN_PSEUDO_NORMAL) {
    vx_status st = vx_sign_build_threads(m, threads, s, err);
    build_only_free(s); /* the winding rule's clean test is their only reader */
    return st;
  }
  memset(s, 0, sizeof *s);
  if (rule != VX_SIGN_WINDING)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "unknown sign rule %d", rule);
  /* The tables, then the tree, each on all the caller's threads. */
  const double t0 = vx_clock_seconds();
  vx_status st = vx_sign_build_threads(m, threads, s, err);
  if (st != VX_OK) return st;
  const double t1 = vx_clock_seconds();
  s->sec[0] = t1 - t0;
  if (m->tri_count * 3 >= UINT32_MAX || !clean_edge_flags(m, s, threads)) {
    vx_sign_free(s);
    return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate the sign tables for %llu triangles",
                        (unsigned long long)m->tri_count);
  }
  const double t2 = vx_clock_seconds();
  st = vx_wind_build(m, xf, threads, &s->wind, err);
  if (st != VX_OK) {
    vx_sign_free(s);
    return st;
  }
  s->sec[1] = vx_clock_seconds() - t2;
  clean_flags(m, s, gpu, threads);
  return VX_OK;
}
