/* SPDX-License-Identifier: Apache-2.0 */
/* dc_internal.h - what the mesher's files share: the tree as the walker sees it (cells, the
 * cut), the octree walk of Ju et al. (dc_walk.c), face records, and growable arrays.
 *
 * Cells. A cell of the walk is a node or voxel of one level, or a place where the tree has
 * none: idx is the global index into nodes[] (levels < D) or voxels[] (level D), DC_NONE when
 * absent. clu is the cut cell ("cluster") the place belongs to: set once the walk has reached a
 * cell of the cut on the way down, and then inherited by everything below it, present or not
 * (a voxel missing inside a cut node still lies in that node). Cluster ids are global: a node's
 * index, or node_count + a voxel's index. A cell is *determined* when its cluster is known or
 * when it is absent outside every cluster (clu == DC_NONE, idx == DC_NONE).
 *
 * Coordinates of a call are integers at its level (cell size 1 there): a cell's minimum corner,
 * a face's minimum corner (that of the cell on its + side), an edge's lower end, a grid point.
 */
#ifndef VOXLOD_MESHER_DC_INTERNAL_H
#define VOXLOD_MESHER_DC_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include "mesher/mesher.h"

#define DC_NONE 0xffffffffu

typedef struct dc_cell {
  uint32_t idx; /* node or voxel index, DC_NONE: absent */
  uint32_t clu; /* cluster id, DC_NONE: not known yet (present) or outside (absent) */
} dc_cell;

/* The tree and its cut, read-only during the walk. */
typedef struct dc_tree {
  const vx_octree *t;
  uint32_t D;
  uint64_t node_count;
  int cut;           /* VX_DC_* */
  uint32_t level;    /* VX_DC_LEVEL: the cut level (D for the finest) */
  uint32_t err_code; /* VX_DC_ERROR: nodes whose errmax code is <= this are candidates */
  float max_error;   /* VX_DC_ERROR: the bound, finest voxels */
  uint8_t *veto;     /* VX_DC_ERROR: per node, 1 when the geometry it would emit is not within
                        max_error of the full-detail surface (dc_vertex.c, dc_bound.c) */
  struct dc_reuse *reuse; /* FACES pass: the previous pass's tasks and faces (NULL: none) */
  int keep_open;     /* FACES pass: 1: sign changes next to a place outside the tree are kept
                        as records (dc_face.open) among the faces; 2: only those records */
  const vx_voxel *field; /* the single-valued corner field (vx_dc_corner_field) */
  _Atomic uint8_t *resigned; /* FIELD: 1 for voxels found re-signed (dc_field.c), per voxel */
  int part;          /* a part of a larger tree (vx_dc_opts.part) */
  uint32_t own_lo[3], own_hi[3];
} dc_tree;

/* Is the present cell (level, idx) a cell of the cut? */
static inline int dc_is_cut(const dc_tree *T, uint32_t level, uint32_t idx) {
  if (level == T->D) return 1;
  if (T->cut == VX_DC_LEVEL) return level == T->level;
  if (T->cut == VX_DC_ERROR) {
    uint32_t info = T->t->nodes[idx].info;
    return (vx_node_flags(info) & VX_NODE_PLANE_OK) && vx_node_errmax_code(info) <= T->err_code &&
           !(T->veto && T->veto[idx]);
  }
  return 0;
}

static inline uint32_t dc_cluster_id(const dc_tree *T, uint32_t level, uint32_t idx) {
  return level == T->D ? (uint32_t)(T->node_count + idx) : idx;
}

/* The child in slot s of cell c at `level` (< D). */
static inline dc_cell dc_child(const dc_tree *T, dc_cell c, uint32_t level, uint32_t s) {
  dc_cell k;
  k.idx = DC_NONE;
  if (c.idx != DC_NONE) {
    const vx_node *n = &T->t->nodes[c.idx];
    uint32_t mask = vx_node_mask(n->info);
    if (mask >> s & 1u) k.idx = vx_child_index(n->child, mask, s);
  }
  if (c.clu != DC_NONE) k.clu = c.clu;
  else if (k.idx != DC_NONE && dc_is_cut(T, level + 1, k.idx))
    k.clu = dc_cluster_id(T, level + 1, k.idx);
  else k.clu = DC_NONE;
  return k;
}

/* In a part (T->part): does grid point e (finest) lie in its own box grown by `grow`? Else 1. */
static inline int dc_part_owns(const dc_tree *T, const uint32_t e[3], uint32_t grow) {
  for (int i = 0; T->part && i < 3; i++)
    if ((uint64_t)e[i] + grow < T->own_lo[i] || e[i] >= (uint64_t)T->own_hi[i] + grow) return 0;
  return 1;
}

static inline int dc_determined(dc_cell c) { return c.clu != DC_NONE || c.idx == DC_NONE; }

/* ---- the walk ------------------------------------------------------------------------------ */

enum { DC_CELL = 0, DC_FACE = 1, DC_EDGE = 2, DC_VERT = 3 };
enum { DC_PASS_FIELD = 0, DC_PASS_FACES = 1 };

/* One procedure call: kind, axis (faces, edges), level, coordinates, its cells:
 * cell: c[0]; face: c[0] on the - side, c[1] on the + side of the plane normal to axis;
 * edge: c[j] on side (j & 1) of the first and (j >> 1) of the second other axis (in increasing
 * axis order); vertex: c[i] in octant i of the grid point (bit k of i: on the + side along k). */
typedef struct dc_call {
  uint8_t kind, axis, level, pad;
  uint32_t p[3];
  dc_cell c[8];
} dc_call;

/* A face of the mesh before assembly: the clusters around one minimal edge of the cut, in
 * counter-clockwise order seen from outside (c[3] == DC_NONE: a triangle, where one larger cell
 * holds two of the four places), and that edge. */
typedef struct dc_face {
  uint32_t c[4];
  uint64_t edge;    /* dc_edge_pack */
  uint32_t split;   /* bit k: side c[k] -> c[k+1] touches a voxel across a face whose corners
                       alternate in sign (four triangles would share it); see dc_mesh.c */
  uint32_t open;    /* the error cut only: not a face but a sign change next to a place outside
                       the tree (c[k] == DC_NONE there), for dc_check_bound */
} dc_face;

/* The minimal edge of a face: lower end (finest coordinates, Morton code), axis, level of the
 * edge (its length is 2^(D - level)) and which end is negative. */
static inline uint64_t dc_edge_pack(uint64_t morton, uint32_t axis, uint32_t level, int neg_low) {
  return morton | (uint64_t)axis << 48 | (uint64_t)level << 50 | (uint64_t)(neg_low ? 1 : 0) << 55;
}
static inline uint64_t dc_edge_morton(uint64_t e) { return e & ((UINT64_C(1) << 48) - 1); }
static inline uint32_t dc_edge_axis(uint64_t e) { return (uint32_t)(e >> 48) & 3u; }
static inline uint32_t dc_edge_level(uint64_t e) { return (uint32_t)(e >> 50) & 31u; }
static inline int dc_edge_neg_low(uint64_t e) { return (int)(e >> 55 & 1u); }

/* A checkerboard side: (face, side slot), keyed by its two clusters and its negative corner. */
typedef struct dc_split_key {
  uint32_t a, b;     /* the side's clusters, a < b */
  uint64_t corner;   /* Morton code of the negative corner the two faces of a pair share */
  uint32_t face;     /* index into the face array (after assembly) */
  uint32_t slot;     /* side c[slot] -> c[slot + 1] */
} dc_split_key;

/* A growable array (vx_realloc). */
typedef struct dc_vec {
  void *data;
  uint64_t n, cap;
  uint32_t elem;
} dc_vec;

static inline void dc_vec_init(dc_vec *v, uint32_t elem) {
  memset(v, 0, sizeof *v);
  v->elem = elem;
}
void dc_vec_free(dc_vec *v);
/* Room for one more element: its address, or NULL when out of memory. */
void *dc_vec_push(dc_vec *v);

/* Per-thread output of a walk. */
/* A voxel found re-signed by the thin-feature rule: its minimum corner and index. */
typedef struct dc_mark {
  uint64_t code;
  uint32_t idx, pad;
} dc_mark;

typedef struct dc_out {
  dc_vec items;            /* FACES: dc_face; FIELD: Morton codes of the points it re-signed */
  dc_vec marks;            /* FIELD: dc_mark of the voxels it found re-signed (any order) */
  uint64_t shared, disputed; /* FIELD: points shared by >= 2 voxels, and disputed among them */
  uint64_t open_edges;     /* DC_PASS_FACES */
  int nomem;
} dc_out;

/* What a FACES walk keeps for the next one at the error cut: its tasks and the faces each task
 * emitted. A task's faces depend only on the cut inside the task-level cells it lists, so when
 * the next walk collects the same tasks, those whose cells hold no node that changed (dirty,
 * per node at the task level) are copied instead of walked again. */
typedef struct dc_reuse {
  int valid;          /* 0: walk every task (and keep what it gives) */
  uint32_t task_level;
  dc_vec tasks;       /* dc_call */
  dc_vec faces;       /* dc_face, the tasks' faces in task order */
  uint64_t *start;    /* per task: its first face in faces */
  uint32_t *count;    /* per task */
  uint8_t *dirty;     /* per node: 1 at the task-level nodes whose subtree's cut changed */
} dc_reuse;

void dc_reuse_free(dc_reuse *r);

/* Runs one pass of the walk over the whole tree on `threads` threads. FIELD: writes each grid
 * point's value (dc_point_value) into `field` (t->voxel_count voxels; the tree's own voxels are
 * read) and lists the points whose sign the rule changed in *items (Morton codes), and in
 * sum->marks (the caller frees it) the voxels found re-signed, flagged in T->resigned. FACES: the
 * faces of the cut (reading T->field) into *items (dc_face). Items are kept per task and
 * concatenated in task order: the same for any thread count. Counters are summed into *sum.
 * Returns VX_ERR_NOMEM or VX_ERR_INTERRUPTED (progress) on failure. */
vx_status dc_walk(const dc_tree *T, int pass, int threads, vx_voxel *field, dc_vec *items,
                  dc_out *sum, vx_progress_fn progress, void *user, const char *phase,
                  vx_error *err);

/* The value of one grid point from the voxels around it (vox[i] in octant i, NULL where the tree
 * has none; the point is corner i ^ 7 of vox[i]): the largest stored value, then the sign
 * repair of dc_field.c. *canon receives the largest value, *disputed 1 when the stored values
 * differ. */
int8_t dc_point_value(const vx_voxel *const vox[8], int8_t *canon, int *disputed);

/* The single-valued corner field into out (t->voxel_count voxels): the FIELD pass, then the
 * neighbours of the points it re-signed, again, until nothing changes. *shared, *disputed:
 * FIELD's counts; *repaired: points whose sign the repair changed (dc_field.c). */
vx_status dc_field(const dc_tree *T, int threads, vx_voxel *out, uint64_t *shared,
                   uint64_t *disputed, uint64_t *repaired, vx_progress_fn progress, void *user,
                   vx_error *err);

/* ---- vertices (dc_vertex.c) ------------------------------------------------------------------ */

/* Positions (grid coordinates, finest voxels) and normals of every cluster of the cut, indexed
 * by cluster id - lo, and the box of every node cluster (level << 56 | Morton code of its
 * minimum corner in finest coordinates, indexed by node index; voxel boxes follow from ids). */
typedef struct dc_verts {
  uint64_t lo, hi;   /* cluster ids lo .. hi-1 may occur */
  float *pos;        /* (hi - lo) * 3 */
  float *nrm;        /* (hi - lo) * 3 */
  uint64_t *box;     /* node_count entries (NULL when the cut is the finest) */
  uint64_t *code;    /* a part: (hi - lo) voxel corners (VX_DC_KEY_COORD), else NULL */
  uint8_t *placed;   /* (hi - lo): 0 not yet, 1 placed, 2 a voxel without crossings */
  float *slab, *mid; /* VX_DC_ERROR, per node: the full-detail vertices inside the node lie at
                        signed distances mid - slab .. mid + slab from the plane through its
                        vertex (normal nrm) */
  uint64_t *fan_sig; /* VX_DC_ERROR, per node: dc_bound.c's memory of the fan that held */
} dc_verts;

/* Places the cut cells not placed yet. The first call allocates v (zeroed by the caller); later
 * calls (after more nodes were vetoed) place only the cells that became part of the cut. At the
 * error cut a node whose full-detail vertices do not lie within max_error of the plane through
 * its own vertex, or whose vertex lies beside them, is vetoed here and its children tried. */
/* The error cut's check of one pass (dc_bound.c): vetoes the nodes whose faces or whose
 * full-detail surface are not within max_error of each other, or that lie next to a hole;
 * drops the hole records (dc_face.open) from faces[0 .. *n). Returns how many nodes were vetoed
 * (0: the cut holds), UINT64_MAX when out of memory. */
uint64_t dc_check_bound(const dc_tree *T, const dc_verts *V, dc_face *faces, uint64_t *n);

/* Vetoes every node whose closed box touches one of the n hole records (dc_face.open) of the
 * full-detail cut; returns how many. */
uint64_t dc_veto_holes(const dc_tree *T, const dc_face *holes, uint64_t n);

vx_status dc_vertices(const dc_tree *T, int threads, dc_verts *v, vx_progress_fn progress,
                      void *user, vx_error *err);
void dc_verts_free(dc_verts *v);

#endif
