/* SPDX-License-Identifier: Apache-2.0 */
/* dc_mesh.c - vx_dc_extract: dual contouring of an octree at a cut, from the single-valued field
 * to an indexed, watertight, edge-manifold triangle mesh.
 *
 * Method: T. Ju, F. Losasso, S. Schaefer, J. Warren, "Dual Contouring of Hermite Data",
 * SIGGRAPH 2002 (octree DC: one vertex per leaf cell placed by its QEF, one quad per minimal
 * edge with a sign change, connecting the cells around it, so that cells of different sizes
 * share their edges without cracks). Here the leaves are the cells of a cut of a complete tree
 * and the signs come from its finest level; see mesher.h for the contract.
 *
 * Steps:
 * 1. The single-valued corner field (dc_field.c).
 * 2. A vertex per cut cell (dc_vertex.c).
 * 3. The faces: a quad, or a triangle where a larger cell holds two of the four places, per
 *    minimal edge of the cut whose ends differ in sign (dc_walk.c).
 * 4. Manifold contacts (below), then triangles: a quad is split along its shorter diagonal.
 *
 * Manifold. Two cells A and B in contact share the side A-B of every face around a minimal edge
 * that lies on their contact square and changes sign. A square's boundary changes sign an even
 * number of times; with two changes A-B is an edge of two triangles, as it must be. With four
 * (the corners alternate in sign: two parts of the surface pass through the square) plain dual
 * contouring makes A-B an edge of four triangles. We keep the negative parts apart, as the sign
 * pattern of the square suggests when read as inside = negative: the changes are ordered along
 * the square's boundary, each run of negative boundary between two consecutive changes is one
 * sheet of the surface, and its two faces get their own vertex M on their side A-B (A-M-B
 * replaces A-B). M sits at the mean of A, B and the midpoints of the two edges. Every side then
 * belongs to exactly two faces, traversed in opposite directions. Where a voxel is one of the two
 * cells the square is that voxel's face, and the walk has already tagged such sides (dc_face
 * .split); sides between two nodes are grouped here by their two vertices.
 */
#include "mesher/dc_internal.h"
#include "svo/color.h"
#include "sys/system.h"

#include <math.h>
#include <stdlib.h>

void vx_dc_mesh_free(vx_dc_mesh *m) {
  if (!m) return;
  vx_free(m->pos);
  vx_free(m->nrm);
  vx_free(m->tri);
  vx_free(m->rgba);
  vx_free(m->key);
  memset(m, 0, sizeof *m);
}

/* ---- splits of contacts --------------------------------------------------------------------- */

typedef struct split_rec {
  uint32_t face, slot; /* side face.c[slot] -> face.c[slot + 1] gets vertex `vert` in between */
  uint32_t vert;
} split_rec;

typedef struct side_ent {
  uint32_t b;          /* the other vertex (> the bucket's) */
  uint32_t face, slot;
} side_ent;

typedef struct asm_ctx {
  const dc_tree *T;
  const dc_verts *V;
  const dc_face *faces;
  uint64_t nfaces;
  const uint32_t *vid; /* cluster id - lo -> vertex id */
  dc_vec splits;       /* split_rec */
  dc_vec extra_pos;    /* float[3] per split vertex, grid coordinates */
  dc_vec extra_nrm;
  dc_vec extra_rgba;   /* packed RGBA8 per split vertex (coloured trees) */
  dc_vec extra_key;    /* a part: the key of each split vertex (VX_DC_KEY_COORD) */
  int colored;         /* the tree carries node and voxel colours */
  uint64_t nverts;     /* cluster vertices + split vertices so far */
  uint64_t unresolved; /* contacts whose sign changes did not alternate */
  uint64_t split_count;
  uint64_t split_own;  /* of those, splitting a side of a face the part owns (all when whole) */
} asm_ctx;

static inline int face_sides(const dc_face *f) { return f->c[3] == DC_NONE ? 3 : 4; }

/* In a part: does face f's minimal edge start in the part's own box (grown by `grow`)? */
static int face_in_part(const dc_tree *T, const dc_face *f, uint32_t grow) {
  uint32_t e[3];
  vx_morton_decode(dc_edge_morton(f->edge), &e[0], &e[1], &e[2]);
  return dc_part_owns(T, e, grow);
}

static const float *cluster_pos(const asm_ctx *x, uint32_t clu) {
  return x->V->pos + (clu - x->V->lo) * 3;
}
static const float *cluster_nrm(const asm_ctx *x, uint32_t clu) {
  return x->V->nrm + (clu - x->V->lo) * 3;
}

/* The colour of a cut cell (coloured trees only): its node's or voxel's. */
static uint32_t cluster_color(const dc_tree *T, uint32_t clu) {
  return clu < T->node_count ? T->t->node_color[clu]
                             : T->t->voxel_color[(uint64_t)clu - T->node_count];
}

static int tree_colored(const vx_octree *t) {
  return t->node_color && (t->voxel_color || t->voxel_count == 0);
}

/* The mean of two colours in linear light. */
static uint32_t color_mean2(uint32_t a, uint32_t b) {
  if (a == b) return a;
  float fa[4], fb[4];
  vx_rgba_unpack_linear(a, fa);
  vx_rgba_unpack_linear(b, fb);
  return vx_rgba_pack_linear(0.5f * (fa[0] + fb[0]), 0.5f * (fa[1] + fb[1]),
                             0.5f * (fa[2] + fb[2]), 0.5f * (fa[3] + fb[3]));
}

/* Minimal edge of a face: lower end (finest coordinates) and length. */
static void face_edge(const dc_tree *T, const dc_face *f, uint32_t lo[3], uint32_t *len,
                      uint32_t *axis) {
  vx_morton_decode(dc_edge_morton(f->edge), &lo[0], &lo[1], &lo[2]);
  *len = 1u << (T->D - dc_edge_level(f->edge));
  *axis = dc_edge_axis(f->edge);
}

/* The key of the vertex splitting the contact of voxels A and B (clusters) at the negative
 * corner `corner` (Morton code), in a part (mesher.h, VX_DC_KEY_COORD). */
static uint64_t split_key(const asm_ctx *x, uint32_t A, uint32_t B, uint64_t corner) {
  const uint64_t ka = x->V->code[A - x->V->lo], kb = x->V->code[B - x->V->lo];
  uint32_t L[3], c[3], axis = 0;
  vx_morton_decode(corner, &c[0], &c[1], &c[2]);
  for (int i = 0; i < 3; i++) {
    const uint32_t a = (uint32_t)(ka >> 20 * i) & 0xfffffu, b = (uint32_t)(kb >> 20 * i) & 0xfffffu;
    L[i] = a < b ? a : b;
    if (a != b) axis = (uint32_t)i;
  }
  const uint32_t u = axis == 0 ? 1u : 0u, v = axis == 2 ? 1u : 2u;
  const uint32_t bits = (c[u] - L[u]) | (c[v] - L[v]) << 1;
  return VX_DC_KEY_COORD(L[0], L[1], L[2]) | (uint64_t)(1u + 4u * axis + (bits & 3u)) << 60;
}

/* Adds one vertex for the pair of faces (f0, s0), (f1, s1) that share side A-B (voxel
 * contacts: `corner`, the Morton code of their negative corner). */
static int add_split(asm_ctx *x, uint32_t f0, uint32_t s0, uint32_t f1, uint32_t s1,
                     uint64_t corner) {
  const dc_face *a = &x->faces[f0], *b = &x->faces[f1];
  uint32_t A = a->c[s0], B = a->c[(s0 + 1) % (uint32_t)face_sides(a)];
  const float *pa = cluster_pos(x, A), *pb = cluster_pos(x, B);
  const float *na = cluster_nrm(x, A), *nb = cluster_nrm(x, B);
  double m[3], n[3];
  uint32_t lo0[3], lo1[3], len0, len1, ax0, ax1;
  face_edge(x->T, a, lo0, &len0, &ax0);
  face_edge(x->T, b, lo1, &len1, &ax1);
  for (int i = 0; i < 3; i++) {
    double m0 = lo0[i] + (i == (int)ax0 ? 0.5 * len0 : 0.0);
    double m1 = lo1[i] + (i == (int)ax1 ? 0.5 * len1 : 0.0);
    m[i] = 0.25 * ((double)pa[i] + (double)pb[i] + m0 + m1);
    n[i] = (double)na[i] + (double)nb[i];
  }
  double l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  if (l > 0.0)
    for (int i = 0; i < 3; i++) n[i] /= l;
  float *P = (float *)dc_vec_push(&x->extra_pos), *N = (float *)dc_vec_push(&x->extra_nrm);
  if (x->colored) {
    uint32_t *C = (uint32_t *)dc_vec_push(&x->extra_rgba);
    if (!C) return 0;
    *C = color_mean2(cluster_color(x->T, A), cluster_color(x->T, B));
  }
  if (x->T->part) {
    uint64_t *K = (uint64_t *)dc_vec_push(&x->extra_key);
    if (!K) return 0;
    *K = split_key(x, A, B, corner);
  }
  split_rec *r0 = (split_rec *)dc_vec_push(&x->splits);
  split_rec *r1 = r0 ? (split_rec *)dc_vec_push(&x->splits) : NULL;
  if (!P || !N || !r0 || !r1) return 0;
  for (int i = 0; i < 3; i++) {
    P[i] = (float)m[i];
    N[i] = (float)n[i];
  }
  r0->face = f0, r0->slot = s0, r0->vert = (uint32_t)x->nverts;
  r1->face = f1, r1->slot = s1, r1->vert = (uint32_t)x->nverts;
  x->nverts++;
  x->split_count++;
  x->split_own += face_in_part(x->T, a, 0) || face_in_part(x->T, b, 0);
  return 1;
}

/* Tagged voxel contacts: faces with the same two vertices and the same negative corner pair up. */
static int cmp_split_key(const void *pa, const void *pb) {
  const dc_split_key *a = (const dc_split_key *)pa, *b = (const dc_split_key *)pb;
  if (a->a != b->a) return a->a < b->a ? -1 : 1;
  if (a->b != b->b) return a->b < b->b ? -1 : 1;
  if (a->corner != b->corner) return a->corner < b->corner ? -1 : 1;
  if (a->face != b->face) return a->face < b->face ? -1 : 1;
  return 0;
}

/* Does a group of split keys hold a face of the part (all faces when the tree is whole)? Where
 * it does, the part holds every face of the group (face_in_part). */
static int group_owned(const asm_ctx *x, const dc_split_key *k, uint64_t n) {
  for (uint64_t i = 0; i < n; i++)
    if (face_in_part(x->T, &x->faces[k[i].face], 0)) return 1;
  return 0;
}

static int split_voxel_contacts(asm_ctx *x) {
  dc_vec keys;
  dc_vec_init(&keys, sizeof(dc_split_key));
  for (uint64_t fi = 0; fi < x->nfaces; fi++) {
    const dc_face *f = &x->faces[fi];
    if (!f->split) continue;
    int n = face_sides(f);
    uint32_t lo[3], len, axis;
    face_edge(x->T, f, lo, &len, &axis);
    if (!dc_edge_neg_low(f->edge)) lo[axis] += len;
    uint64_t corner = vx_morton_encode(lo[0], lo[1], lo[2]);
    for (int k = 0; k < n; k++) {
      if (!(f->split >> k & 1u)) continue;
      uint32_t va = x->vid[f->c[k] - x->V->lo], vb = x->vid[f->c[(k + 1) % n] - x->V->lo];
      dc_split_key *s = (dc_split_key *)dc_vec_push(&keys);
      if (!s) {
        dc_vec_free(&keys);
        return 0;
      }
      s->a = va < vb ? va : vb;
      s->b = va < vb ? vb : va;
      s->corner = corner;
      s->face = (uint32_t)fi;
      s->slot = (uint32_t)k;
    }
  }
  dc_split_key *k = (dc_split_key *)keys.data;
  if (keys.n) qsort(k, keys.n, sizeof *k, cmp_split_key);
  int ok = 1;
  for (uint64_t i = 0; ok && i < keys.n;) {
    uint64_t e = i + 1;
    while (e < keys.n && k[e].a == k[i].a && k[e].b == k[i].b && k[e].corner == k[i].corner) e++;
    if (e - i == 2) ok = add_split(x, k[i].face, k[i].slot, k[i + 1].face, k[i + 1].slot, k[i].corner);
    else x->unresolved += group_owned(x, k + i, e - i); /* a part: its own faces' only */
    i = e;
  }
  dc_vec_free(&keys);
  return ok;
}

/* Position along the boundary of the square [lo1, hi1] x [lo2, hi2] (counter-clockwise), of a
 * point on it; -1 when it is not on the boundary. */
static int64_t perimeter(int64_t q1, int64_t q2, const int64_t lo[2], const int64_t hi[2]) {
  int64_t W = hi[0] - lo[0], H = hi[1] - lo[1];
  if (q2 == lo[1] && q1 >= lo[0] && q1 <= hi[0]) return q1 - lo[0];
  if (q1 == hi[0] && q2 >= lo[1] && q2 <= hi[1]) return W + (q2 - lo[1]);
  if (q2 == hi[1] && q1 >= lo[0] && q1 <= hi[0]) return W + H + (hi[0] - q1);
  if (q1 == lo[0] && q2 >= lo[1] && q2 <= hi[1]) return 2 * W + H + (hi[1] - q2);
  return -1;
}

typedef struct perim_ent {
  int64_t t;
  int dir; /* +1: the negative side of the change lies ahead (increasing t) */
  uint32_t face, slot;
} perim_ent;

static int cmp_perim(const void *pa, const void *pb) {
  const perim_ent *a = (const perim_ent *)pa, *b = (const perim_ent *)pb;
  return a->t < b->t ? -1 : a->t > b->t ? 1 : 0;
}

/* One group of >= 4 faces sharing the side between node cells A and B. */
static int pair_group(asm_ctx *x, const side_ent *g, uint32_t n) {
  const dc_tree *T = x->T;
  const dc_face *f0 = &x->faces[g[0].face];
  uint32_t A = f0->c[g[0].slot], B = f0->c[(g[0].slot + 1) % (uint32_t)face_sides(f0)];
  int64_t lo[3], hi[3];
  for (int k = 0; k < 2; k++) {
    uint64_t box = x->V->box[k ? B : A];
    uint32_t c[3], lev = (uint32_t)(box >> 56);
    vx_morton_decode(box & ((UINT64_C(1) << 48) - 1), &c[0], &c[1], &c[2]);
    int64_t s = (int64_t)1 << (T->D - lev);
    for (int i = 0; i < 3; i++) {
      int64_t l0 = 4 * (int64_t)c[i], h0 = 4 * ((int64_t)c[i] + s);
      if (k == 0 || l0 > lo[i]) lo[i] = l0;
      if (k == 0 || h0 < hi[i]) hi[i] = h0;
    }
  }
  int w = -1;
  for (int i = 0; i < 3; i++)
    if (lo[i] == hi[i]) w = i;
  if (w < 0) return 0;
  int a1 = w == 0 ? 1 : 0, a2 = w == 2 ? 1 : 2;
  int64_t slo[2] = {lo[a1], lo[a2]}, shi[2] = {hi[a1], hi[a2]};
  perim_ent *e = (perim_ent *)vx_malloc(n * sizeof *e);
  if (!e) return -1;
  int ok = 1;
  for (uint32_t i = 0; ok && i < n; i++) {
    const dc_face *f = &x->faces[g[i].face];
    uint32_t el[3], len, ax;
    face_edge(T, f, el, &len, &ax);
    int64_t M[3], Q[3];
    for (int k = 0; k < 3; k++) M[k] = 4 * (int64_t)el[k];
    M[ax] += 2 * (int64_t)len;
    for (int k = 0; k < 3; k++) Q[k] = M[k];
    Q[ax] += dc_edge_neg_low(f->edge) ? -(int64_t)len : (int64_t)len;
    int64_t tm = perimeter(M[a1], M[a2], slo, shi), tq = perimeter(Q[a1], Q[a2], slo, shi);
    if (tm < 0 || tq < 0 || tm == tq) ok = 0;
    e[i].t = tm;
    e[i].dir = tq > tm ? 1 : -1;
    e[i].face = g[i].face;
    e[i].slot = g[i].slot;
  }
  if (ok) {
    qsort(e, n, sizeof *e, cmp_perim);
    uint32_t start = 0;
    while (start < n && e[start].dir != 1) start++;
    if (start == n) ok = 0;
    for (uint32_t k = 0; ok && k < n; k += 2)
      if (e[(start + k) % n].dir != 1 || e[(start + k + 1) % n].dir != -1) ok = 0;
    for (uint32_t k = 0; ok && k < n; k += 2) {
      const perim_ent *p = &e[(start + k) % n], *q = &e[(start + k + 1) % n];
      if (!add_split(x, p->face, p->slot, q->face, q->slot, 0)) {
        vx_free(e);
        return -1;
      }
    }
  }
  vx_free(e);
  return ok;
}

/* Sides between two node cells: bucketed by their smaller vertex, then by the other one. */
static int split_node_contacts(asm_ctx *x) {
  const uint64_t nc = x->T->node_count;
  uint64_t V = x->nverts;
  uint32_t *count = (uint32_t *)vx_calloc((size_t)V + 1, sizeof(uint32_t));
  if (!count) return 0;
  uint64_t total = 0;
  for (int pass = 0; pass < 2; pass++) {
    side_ent *ent = NULL;
    if (pass == 1) {
      uint64_t run = 0;
      for (uint64_t v = 0; v <= V; v++) {
        uint32_t c = count[v];
        count[v] = (uint32_t)run;
        run += c;
      }
      if (total == 0) break;
      ent = (side_ent *)vx_malloc((size_t)total * sizeof *ent);
      if (!ent) {
        vx_free(count);
        return 0;
      }
    }
    for (uint64_t fi = 0; fi < x->nfaces; fi++) {
      const dc_face *f = &x->faces[fi];
      int n = face_sides(f);
      for (int k = 0; k < n; k++) {
        uint32_t ca = f->c[k], cb = f->c[(k + 1) % n];
        if (ca >= nc || cb >= nc) continue;
        uint32_t va = x->vid[ca - x->V->lo], vb = x->vid[cb - x->V->lo];
        uint32_t lo = va < vb ? va : vb, hi = va < vb ? vb : va;
        if (pass == 0) {
          count[lo]++;
          total++;
        } else {
          side_ent *s = &ent[count[lo]++];
          s->b = hi;
          s->face = (uint32_t)fi;
          s->slot = (uint32_t)k;
        }
      }
    }
    if (pass == 1) {
      /* count[v] is now the end of bucket v; bucket v starts at count[v - 1]. */
      uint64_t begin = 0;
      int ok = 1;
      for (uint64_t v = 0; ok && v < V; v++) {
        uint64_t end = count[v];
        /* insertion sort of the (small) bucket by the other vertex */
        for (uint64_t i = begin + 1; i < end; i++) {
          side_ent s = ent[i];
          uint64_t j = i;
          while (j > begin && ent[j - 1].b > s.b) {
            ent[j] = ent[j - 1];
            j--;
          }
          ent[j] = s;
        }
        for (uint64_t i = begin; i < end;) {
          uint64_t e = i + 1;
          while (e < end && ent[e].b == ent[i].b) e++;
          if (e - i > 2) {
            int r = (e - i) % 2 ? 0 : pair_group(x, ent + i, (uint32_t)(e - i));
            if (r < 0) ok = 0;
            else if (r == 0) x->unresolved++;
          }
          i = e;
        }
        begin = end;
      }
      vx_free(ent);
      vx_free(count);
      return ok;
    }
  }
  vx_free(count);
  return 1;
}

/* ---- triangles --------------------------------------------------------------------------------
 */

static double dist2(const float *a, const float *b) {
  double d = 0.0;
  for (int i = 0; i < 3; i++) d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
  return d;
}

static uint32_t cluster_level(const dc_tree *T, const dc_verts *V, uint32_t clu) {
  return clu >= T->node_count ? T->D : (uint32_t)(V->box[clu] >> 56);
}

/* A part's faces within 2 of its own box: the faces that pair with its own at a split contact
 * (their minimal edges end at one negative corner) are among them. */
static void part_near(const dc_tree *T, dc_vec *faces) {
  dc_face *f = (dc_face *)faces->data;
  uint64_t keep = 0;
  for (uint64_t i = 0; i < faces->n; i++)
    if (face_in_part(T, &f[i], 2)) f[keep++] = f[i];
  faces->n = keep;
}

/* A part's mesh keeps only the vertices its own faces use (in order): the others belong to the
 * faces of its neighbours. */
static int part_trim(vx_dc_mesh *m, vx_dc_stats *st) {
  uint64_t n = 0;
  const size_t nv = (size_t)(m->vertex_count ? m->vertex_count : 1);
  uint8_t *used = (uint8_t *)vx_calloc(nv, 1);
  uint32_t *to = (uint32_t *)vx_malloc(nv * sizeof(uint32_t));
  if (!used || !to) {
    vx_free(used);
    vx_free(to);
    return 0;
  }
  for (uint64_t i = 0; i < 3 * m->triangle_count; i++) used[m->tri[i]] = 1;
  for (uint64_t v = 0; v < m->vertex_count; v++) {
    if (!used[v]) continue;
    to[v] = (uint32_t)n;
    if (n != v) {
      memcpy(m->pos + 3 * n, m->pos + 3 * v, 3 * sizeof(float));
      memcpy(m->nrm + 3 * n, m->nrm + 3 * v, 3 * sizeof(float));
      if (m->rgba) memcpy(m->rgba + 4 * n, m->rgba + 4 * v, 4);
      m->key[n] = m->key[v];
    }
    n++;
  }
  for (uint64_t i = 0; i < 3 * m->triangle_count; i++) m->tri[i] = to[m->tri[i]];
  vx_free(to);
  vx_free(used);
  m->vertex_count = n;
  if (st) st->vertices = n;
  return 1;
}

static int cmp_split_face(const void *pa, const void *pb) {
  const split_rec *a = (const split_rec *)pa, *b = (const split_rec *)pb;
  if (a->face != b->face) return a->face < b->face ? -1 : 1;
  return a->slot < b->slot ? -1 : a->slot > b->slot;
}

/* The assembly's passes over ranges of faces and of clusters (vx_ranges_run), each range's part
 * of the output at a place fixed before: the mesh does not depend on the thread count. */
typedef struct asm_par {
  const asm_ctx *x;
  vx_dc_mesh *out;
  const split_rec *sp; /* sorted by face */
  uint64_t nsp;
  uint64_t *rtri;      /* per range of faces: its triangles, then the first of them */
  uint32_t *rlev;      /* per range of clusters: the lowest and the highest cell level */
} asm_par;

/* The first split of face `face` or after it. */
static uint64_t first_split(const asm_par *p, uint64_t face) {
  uint64_t lo = 0, hi = p->nsp;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (p->sp[mid].face < face) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static void count_tris(void *ctx, uint64_t a, uint64_t b) {
  const asm_par *p = (const asm_par *)ctx;
  const dc_tree *T = p->x->T;
  uint64_t n = 0;
  for (uint64_t fi = a, si = first_split(p, a); fi < b; fi++) {
    uint64_t k = 0;
    while (si < p->nsp && p->sp[si].face == fi) si++, k++;
    if (!T->part || face_in_part(T, &p->x->faces[fi], 0))
      n += (uint64_t)face_sides(&p->x->faces[fi]) + k - 2;
  }
  p->rtri[a / VX_RANGE_CHUNK] = n;
}

/* Cluster vertices in grid coordinates (the diagonal choice uses them; world at the end). */
static void copy_verts(void *ctx, uint64_t a, uint64_t b) {
  const asm_par *p = (const asm_par *)ctx;
  const asm_ctx *x = p->x;
  const dc_tree *T = x->T;
  const dc_verts *V = x->V;
  vx_dc_mesh *out = p->out;
  uint32_t lmin = T->D, lmax = 0;
  for (uint64_t c = a; c < b; c++) {
    uint32_t id = x->vid[c];
    if (id == DC_NONE) continue;
    memcpy(out->pos + (uint64_t)id * 3, V->pos + c * 3, 3 * sizeof(float));
    memcpy(out->nrm + (uint64_t)id * 3, V->nrm + c * 3, 3 * sizeof(float));
    if (T->part) out->key[id] = V->code[c];
    if (x->colored) {
      uint32_t col = cluster_color(T, (uint32_t)(V->lo + c));
      for (int k = 0; k < 4; k++)
        out->rgba[(uint64_t)id * 4 + (uint64_t)k] = (uint8_t)(col >> 8 * k);
    }
    uint32_t lev = cluster_level(T, V, (uint32_t)(V->lo + c));
    if (lev < lmin) lmin = lev;
    if (lev > lmax) lmax = lev;
  }
  p->rlev[2 * (a / VX_RANGE_CHUNK)] = lmin;
  p->rlev[2 * (a / VX_RANGE_CHUNK) + 1] = lmax;
}

static void fill_tris(void *ctx, uint64_t a, uint64_t b) {
  const asm_par *p = (const asm_par *)ctx;
  const asm_ctx *x = p->x;
  const dc_tree *T = x->T;
  const dc_verts *V = x->V;
  const split_rec *sp = p->sp;
  const uint64_t nsp = p->nsp;
  const float *pos = p->out->pos;
  uint32_t *t = p->out->tri + 3 * p->rtri[a / VX_RANGE_CHUNK];
  for (uint64_t fi = a, si = first_split(p, a); fi < b; fi++) {
    const dc_face *f = &x->faces[fi];
    if (T->part && !face_in_part(T, f, 0)) { /* a neighbour's face, here for its splits */
      while (si < nsp && sp[si].face == fi) si++;
      continue;
    }
    int n = face_sides(f);
    uint32_t v[4], tr[8][3];
    int nt = 0;
    for (int k = 0; k < n; k++) v[k] = x->vid[f->c[k] - V->lo];
    if (n == 3) {
      tr[0][0] = v[0], tr[0][1] = v[1], tr[0][2] = v[2];
      nt = 1;
    } else {
      /* The diagonal must join two cells that share only this minimal edge: two larger cells can
       * be diagonal around several minimal edges in a row, so a diagonal through a cell of the
       * edge's own size is taken when only one diagonal has one; else the shorter. */
      uint32_t el = dc_edge_level(f->edge);
      int own02 = cluster_level(T, V, f->c[0]) == el || cluster_level(T, V, f->c[2]) == el;
      int own13 = cluster_level(T, V, f->c[1]) == el || cluster_level(T, V, f->c[3]) == el;
      int use02 = own02 != own13 ? own02
                                 : dist2(pos + (uint64_t)v[0] * 3, pos + (uint64_t)v[2] * 3) <=
                                       dist2(pos + (uint64_t)v[1] * 3, pos + (uint64_t)v[3] * 3);
      int o = use02 ? 0 : 1;
      for (int k = 0; k < 2; k++) {
        tr[k][0] = v[o];
        tr[k][1] = v[(o + 1 + k) % 4];
        tr[k][2] = v[(o + 2 + k) % 4];
      }
      nt = 2;
    }
    /* A split side a -> b of triangle (a, b, c) becomes (a, m, c) and (m, b, c). */
    for (; si < nsp && sp[si].face == fi; si++) {
      uint32_t sa = v[sp[si].slot], sb = v[(sp[si].slot + 1) % (uint32_t)n], m = sp[si].vert;
      for (int k = 0; k < nt; k++) {
        int r = tr[k][0] == sa && tr[k][1] == sb ? 0 : tr[k][1] == sa && tr[k][2] == sb ? 1
              : tr[k][2] == sa && tr[k][0] == sb ? 2 : -1;
        if (r < 0) continue;
        uint32_t c = tr[k][(r + 2) % 3];
        tr[k][0] = sa, tr[k][1] = m, tr[k][2] = c;
        tr[nt][0] = m, tr[nt][1] = sb, tr[nt][2] = c;
        nt++;
        break;
      }
    }
    for (int k = 0; k < nt; k++) *t++ = tr[k][0], *t++ = tr[k][1], *t++ = tr[k][2];
  }
}

static void to_world(void *ctx, uint64_t a, uint64_t b) {
  const asm_par *p = (const asm_par *)ctx;
  const vx_transform *xf = &p->x->T->t->xf;
  float *pos = p->out->pos;
  for (uint64_t i = a; i < b; i++)
    for (int k = 0; k < 3; k++)
      pos[i * 3 + k] = (float)(xf->origin[k] + (double)pos[i * 3 + k] * xf->scale);
}

static uint64_t ranges_of(uint64_t n) { return (n + VX_RANGE_CHUNK - 1) / VX_RANGE_CHUNK; }

static vx_status assemble(asm_ctx *x, int threads, vx_dc_mesh *out, vx_dc_stats *st,
                          vx_error *err) {
  const dc_tree *T = x->T;
  const dc_verts *V = x->V;
  split_rec *sp = (split_rec *)x->splits.data;
  uint64_t nsp = x->splits.n;
  if (nsp) qsort(sp, nsp, sizeof *sp, cmp_split_face);
  asm_par p;
  memset(&p, 0, sizeof p);
  p.x = x;
  p.out = out;
  p.sp = sp;
  p.nsp = nsp;
  const uint64_t nfr = ranges_of(x->nfaces), ncr = ranges_of(V->hi - V->lo);
  p.rtri = (uint64_t *)vx_malloc((size_t)(nfr ? nfr : 1) * sizeof(uint64_t));
  p.rlev = (uint32_t *)vx_malloc((size_t)(ncr ? ncr : 1) * 2 * sizeof(uint32_t));
  if (!p.rtri || !p.rlev) {
    vx_free(p.rtri);
    vx_free(p.rlev);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory assembling the mesh");
  }
  vx_ranges_run(threads, x->nfaces, count_tris, &p);
  const uint64_t ntri = vx_exclusive_sum(p.rtri, nfr);
  vx_status s = VX_OK;
  if (ntri > UINT32_MAX || x->nverts > UINT32_MAX)
    s = vx_error_set(err, VX_ERR_LIMIT, "the mesh would have %llu triangles and %llu vertices "
                     "(more than 2^32): choose a coarser cut", (unsigned long long)ntri,
                     (unsigned long long)x->nverts);
  if (s == VX_OK) {
    out->vertex_count = x->nverts;
    out->triangle_count = ntri;
    out->pos = (float *)vx_malloc((size_t)(x->nverts ? x->nverts : 1) * 3 * sizeof(float));
    out->nrm = (float *)vx_malloc((size_t)(x->nverts ? x->nverts : 1) * 3 * sizeof(float));
    out->tri = (uint32_t *)vx_malloc((size_t)(ntri ? ntri : 1) * 3 * sizeof(uint32_t));
    if (x->colored) out->rgba = (uint8_t *)vx_malloc((size_t)(x->nverts ? x->nverts : 1) * 4);
    if (T->part) out->key = (uint64_t *)vx_malloc((size_t)(x->nverts ? x->nverts : 1) * 8);
    if (!out->pos || !out->nrm || !out->tri || (x->colored && !out->rgba) ||
        (T->part && !out->key))
      s = vx_error_set(err, VX_ERR_NOMEM, "out of memory for a mesh of %llu triangles",
                       (unsigned long long)ntri);
  }
  if (s != VX_OK) {
    vx_free(p.rtri);
    vx_free(p.rlev);
    return s;
  }
  vx_ranges_run(threads, V->hi - V->lo, copy_verts, &p);
  uint32_t lmin = T->D, lmax = 0;
  for (uint64_t r = 0; r < ncr; r++) {
    lmin = p.rlev[2 * r] < lmin ? p.rlev[2 * r] : lmin;
    lmax = p.rlev[2 * r + 1] > lmax ? p.rlev[2 * r + 1] : lmax;
  }
  uint64_t ncl = x->nverts - x->split_count;
  if (x->split_count) {
    memcpy(out->pos + ncl * 3, x->extra_pos.data, x->split_count * 3 * sizeof(float));
    memcpy(out->nrm + ncl * 3, x->extra_nrm.data, x->split_count * 3 * sizeof(float));
    if (T->part) memcpy(out->key + ncl, x->extra_key.data, x->split_count * sizeof(uint64_t));
    for (uint64_t i = 0; x->colored && i < x->split_count; i++) {
      uint32_t col = ((const uint32_t *)x->extra_rgba.data)[i];
      for (int k = 0; k < 4; k++) out->rgba[(ncl + i) * 4 + (uint64_t)k] = (uint8_t)(col >> 8 * k);
    }
  }
  vx_ranges_run(threads, x->nfaces, fill_tris, &p);
  vx_ranges_run(threads, x->nverts, to_world, &p);
  vx_free(p.rtri);
  vx_free(p.rlev);
  if (st) {
    st->cells = ncl;
    st->vertices = x->nverts;
    st->triangles = ntri;
    st->contacts_split = x->split_own;
    st->level_min = ncl ? lmin : 0;
    st->level_max = ncl ? lmax : 0;
  }
  return VX_OK;
}

/* ---- the whole extraction ----------------------------------------------------------------------
 */

static vx_status check_tree(const vx_octree *t, const vx_dc_opts *o, vx_error *err) {
  if (!t || !o) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tree or no options");
  if (t->depth < VX_MIN_DEPTH || t->depth > VX_MAX_DEPTH)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "tree depth %u outside %d..%d", t->depth,
                        VX_MIN_DEPTH, VX_MAX_DEPTH);
  if (t->levels_loaded != t->depth + 1 || (!t->voxels && t->voxel_count))
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "meshing needs every level of the tree loaded (levels %u of %u): its "
                        "topology comes from the surface voxels", t->levels_loaded, t->depth + 1);
  if (t->prune_error > 0.0f)
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "meshing needs the whole tree, and this one was pruned at error %g: "
                        "mesh the unpruned tree with an error cut instead", (double)t->prune_error);
  if (o->part && o->cut != VX_DC_FINEST)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "a part of a tree is meshed at full detail only");
  for (uint64_t i = 0; !o->part && i < t->node_count; i++)
    if (vx_node_mask(t->nodes[i].info) == 0)
      return vx_error_set(err, VX_ERR_INVALID_ARG,
                          "meshing needs the whole tree, and node %llu is a pruned leaf: mesh "
                          "the unpruned tree with an error cut instead", (unsigned long long)i);
  if (o->cut != VX_DC_FINEST && o->cut != VX_DC_LEVEL && o->cut != VX_DC_ERROR)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "unknown cut %d", o->cut);
  if (o->cut == VX_DC_LEVEL && o->level > t->depth)
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "level %u is beyond the tree's depth %u (levels 0..%u)", o->level,
                        t->depth, t->depth);
  if (o->cut == VX_DC_ERROR && !(o->max_error > 0.0f && o->max_error < 1e30f))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "error cut %g is not a number of voxels > 0",
                        (double)o->max_error);
  return VX_OK;
}

/* The nodes whose veto is new since the last faces walk (seen: the vetoes then) make their
 * task-level ancestors dirty. One above the task level needs nothing: the calls below it carry
 * its cluster, which changes, so the next walk does not find them among the previous ones. */
static void mark_dirty(const dc_tree *T, const dc_verts *V, dc_reuse *R, uint8_t *seen) {
  const vx_octree *t = T->t;
  if (R->valid) memset(R->dirty, 0, (size_t)t->node_count);
  for (uint64_t X = 0; X < t->node_count; X++) {
    if (!T->veto[X] || seen[X]) continue;
    seen[X] = 1;
    if (!R->valid || V->placed[X - V->lo] != 1) continue; /* never a cell of the cut */
    uint32_t lev = (uint32_t)(V->box[X] >> 56), c[3];
    if (lev < R->task_level) continue; /* the calls below it change: not found again */
    vx_morton_decode(V->box[X] & ((UINT64_C(1) << 48) - 1), &c[0], &c[1], &c[2]);
    uint32_t idx = 0;
    for (uint32_t l = 0; l < R->task_level; l++) {
      uint32_t sh = T->D - 1 - l;
      uint32_t s = (c[0] >> sh & 1u) | (c[1] >> sh & 1u) << 1 | (c[2] >> sh & 1u) << 2;
      const vx_node *n = &t->nodes[idx];
      idx = vx_child_index(n->child, vx_node_mask(n->info), s);
    }
    R->dirty[idx] = 1;
  }
}

/* The largest error code whose decoded bound is <= e. */
static uint32_t err_code_at_most(float e) {
  uint32_t c = 0;
  while (c < 255 && vx_err_decode(c + 1) <= e) c++;
  return c;
}

vx_status vx_dc_extract(const vx_octree *t, const vx_dc_opts *o, vx_dc_mesh *out,
                        vx_dc_stats *stats, vx_error *err) {
  if (out) memset(out, 0, sizeof *out);
  if (stats) memset(stats, 0, sizeof *stats);
  if (!out) return vx_error_set(err, VX_ERR_INVALID_ARG, "no place for the mesh");
  vx_status st = check_tree(t, o, err);
  if (st != VX_OK) return st;
  double t0 = vx_clock_seconds();
  int threads = vx_thread_count(o->threads, 256);
  vx_dc_stats S;
  memset(&S, 0, sizeof S);
  dc_tree T;
  memset(&T, 0, sizeof T);
  T.t = t;
  T.D = t->depth;
  T.node_count = t->node_count;
  T.cut = o->cut;
  T.level = o->cut == VX_DC_LEVEL ? o->level : t->depth;
  if (T.cut == VX_DC_LEVEL && T.level == T.D) T.cut = VX_DC_FINEST;
  T.err_code = o->cut == VX_DC_ERROR ? err_code_at_most(o->max_error) : 0;
  T.max_error = o->cut == VX_DC_ERROR ? o->max_error : 0.0f;
  T.part = o->part;
  for (int i = 0; i < 3; i++) T.own_lo[i] = o->own_lo[i], T.own_hi[i] = o->own_hi[i];
  if (t->node_count + t->voxel_count >= DC_NONE)
    return vx_error_set(err, VX_ERR_LIMIT, "a tree of %llu cells is beyond the mesher's 2^32",
                        (unsigned long long)(t->node_count + t->voxel_count));
  dc_reuse reuse;
  memset(&reuse, 0, sizeof reuse);
  uint8_t *veto_seen = NULL;
  if (T.cut == VX_DC_ERROR) {
    size_t nn = (size_t)(t->node_count ? t->node_count : 1);
    T.keep_open = 1;
    T.veto = (uint8_t *)vx_calloc(nn, 1);
    veto_seen = (uint8_t *)vx_calloc(nn, 1);
    reuse.dirty = (uint8_t *)vx_calloc(nn, 1);
    if (!T.veto || !veto_seen || !reuse.dirty) {
      vx_free(T.veto);
      vx_free(veto_seen);
      vx_free(reuse.dirty);
      return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the error cut");
    }
    T.reuse = &reuse;
  }

  vx_voxel *field = (vx_voxel *)vx_malloc((size_t)(t->voxel_count ? t->voxel_count : 1) *
                                          sizeof(vx_voxel));
  if (!field) {
    vx_free(T.veto);
    vx_free(veto_seen);
    dc_reuse_free(&reuse);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the corner field");
  }
  dc_out sum;
  st = dc_field(&T, threads, field, &S.corners_shared, &S.corners_disputed, &S.corners_repaired,
                o->progress, o->user, err);
  T.field = field;
  double t1 = vx_clock_seconds();
  dc_verts V;
  memset(&V, 0, sizeof V);
  dc_vec faces;
  dc_vec_init(&faces, sizeof(dc_face));
  double sec_vertices = 0.0, sec_faces = 0.0;
  int holes_done = 0;
  /* The error cut: vertices and faces, then the faces checked against the bound; nodes whose
   * faces leave it are vetoed and the cut is made again below them, until every face holds. */
  for (uint32_t pass = 0; st == VX_OK; pass++) {
    double a = vx_clock_seconds();
    st = dc_vertices(&T, threads, &V, o->progress, o->user, err);
    double b = vx_clock_seconds();
    sec_vertices += b - a;
    if (st == VX_OK && T.cut == VX_DC_ERROR) mark_dirty(&T, &V, &reuse, veto_seen);
    if (st == VX_OK) {
      dc_vec_free(&faces);
      st = dc_walk(&T, DC_PASS_FACES, threads, NULL, &faces, &sum, o->progress, o->user,
                   "meshing: faces", err);
    }
    sec_faces += vx_clock_seconds() - b;
    S.passes = pass + 1;
    if (st != VX_OK || T.cut != VX_DC_ERROR) break;
    double c = vx_clock_seconds();
    uint64_t vetoed = 0;
    if (!holes_done) {
      /* Open input: the nodes around every hole of the full-detail mesh are refined at once
       * (found by one walk of the full-detail cut), rather than one pass at a time. */
      int any = 0;
      for (uint64_t i = 0; i < faces.n && !any; i++) any = ((const dc_face *)faces.data)[i].open;
      if (any) {
        dc_tree F = T;
        F.cut = VX_DC_FINEST;
        F.keep_open = 2;
        F.reuse = NULL;
        dc_vec holes;
        dc_out hs;
        st = dc_walk(&F, DC_PASS_FACES, threads, NULL, &holes, &hs, NULL, NULL, "", err);
        if (st != VX_OK) break;
        vetoed += dc_veto_holes(&T, (const dc_face *)holes.data, holes.n);
        dc_vec_free(&holes);
      }
      holes_done = 1;
    }
    uint64_t more = dc_check_bound(&T, &V, (dc_face *)faces.data, &faces.n);
    sec_faces += vx_clock_seconds() - c;
    if (more == UINT64_MAX) {
      st = vx_error_set(err, VX_ERR_NOMEM, "out of memory checking the error cut");
      break;
    }
    vetoed += more;
    S.cells_refined += vetoed;
    if (!vetoed) break;
  }
  S.open_edges = sum.open_edges;
  double t2 = t1 + sec_vertices, t3 = vx_clock_seconds();

  asm_ctx x;
  memset(&x, 0, sizeof x);
  x.T = &T;
  x.V = &V;
  x.faces = (const dc_face *)faces.data;
  x.nfaces = faces.n;
  dc_vec_init(&x.splits, sizeof(split_rec));
  dc_vec_init(&x.extra_pos, 3 * sizeof(float));
  dc_vec_init(&x.extra_nrm, 3 * sizeof(float));
  dc_vec_init(&x.extra_rgba, sizeof(uint32_t));
  dc_vec_init(&x.extra_key, sizeof(uint64_t));
  x.colored = tree_colored(t);
  if (st == VX_OK && x.colored) {
    /* Cells whose surface is entirely cut out (alpha 0) are not meshed: the faces around them
     * go, and with them their vertices (which no other face uses). */
    dc_face *fa = (dc_face *)faces.data;
    uint64_t keep = 0;
    for (uint64_t fi = 0; fi < faces.n; fi++) {
      int hole = 0;
      for (int k = 0; k < face_sides(&fa[fi]) && !hole; k++)
        hole = (cluster_color(&T, fa[fi].c[k]) >> 24) == 0;
      if (hole) continue;
      if (keep != fi) fa[keep] = fa[fi];
      keep++;
    }
    S.faces_cut_out = faces.n - keep;
    faces.n = keep;
    x.nfaces = keep;
  }
  if (st == VX_OK && T.part) {
    part_near(&T, &faces);
    x.nfaces = faces.n;
  }
  uint32_t *vid = NULL;
  if (st == VX_OK) {
    /* Vertex ids: the cut cells that some face uses, in cluster order. */
    uint64_t n = V.hi - V.lo;
    vid = (uint32_t *)vx_malloc((size_t)(n ? n : 1) * sizeof(uint32_t));
    if (!vid) st = vx_error_set(err, VX_ERR_NOMEM, "out of memory assembling the mesh");
    if (vid) {
      for (uint64_t i = 0; i < n; i++) vid[i] = 0;
      for (uint64_t fi = 0; fi < x.nfaces; fi++) {
        const dc_face *f = &x.faces[fi];
        for (int k = 0; k < face_sides(f); k++) vid[f->c[k] - V.lo] = 1;
      }
      uint64_t next = 0;
      for (uint64_t i = 0; i < n; i++) vid[i] = vid[i] ? (uint32_t)next++ : DC_NONE;
      x.nverts = next;
      x.vid = vid;
    }
  }
  if (st == VX_OK && !split_voxel_contacts(&x))
    st = vx_error_set(err, VX_ERR_NOMEM, "out of memory assembling the mesh");
  if (st == VX_OK && V.box && !split_node_contacts(&x))
    st = vx_error_set(err, VX_ERR_NOMEM, "out of memory assembling the mesh");
  if (st == VX_OK) st = assemble(&x, threads, out, &S, err);
  if (st == VX_OK && T.part && !part_trim(out, &S))
    st = vx_error_set(err, VX_ERR_NOMEM, "out of memory assembling the mesh");
  S.open_edges += x.unresolved;
  vx_free(vid);
  dc_vec_free(&x.splits);
  dc_vec_free(&x.extra_pos);
  dc_vec_free(&x.extra_nrm);
  dc_vec_free(&x.extra_rgba);
  dc_vec_free(&x.extra_key);
  dc_vec_free(&faces);
  dc_verts_free(&V);
  vx_free(field);
  vx_free(T.veto);
  vx_free(veto_seen);
  dc_reuse_free(&reuse);
  if (st != VX_OK) {
    vx_dc_mesh_free(out);
    return st;
  }
  double t4 = vx_clock_seconds();
  S.sec_field = t1 - t0;
  S.sec_vertices = t2 - t1;
  S.sec_faces = t3 - t2;
  S.sec_assemble = t4 - t3;
  S.sec_total = t4 - t0;
  if (stats) *stats = S;
  return VX_OK;
}
