/* svo.h - the sparse voxel octree core: status codes, the tree, its builder and validator.
 *
 * Contract
 * - This module depends on nothing but the C library. It never prints, never times, never exits.
 * - Fallible functions return vx_status; when `err` is non-NULL they also leave a one-line message
 *   for the user in it. vx_status_str() names a status.
 * - A vx_tree owns its arrays; vx_tree_free() releases them (free of a zeroed tree is a no-op).
 * - Functions are thread-compatible: distinct trees may be used from distinct threads.
 *
 * Data flow: voxelizer/ produces sorted Morton codes with corner values -> vx_tree_build() ->
 * vx_tree_fit_planes() (lod.h) -> vx_tree_prune() -> formats/ writes it; marcher/ renders it.
 * Node and voxel bytes are described in node.h.
 */
#ifndef VOXLOD_SVO_H
#define VOXLOD_SVO_H

#include <stddef.h>
#include <stdint.h>
#include "svo/node.h"

VX_EXTERN_C_BEGIN

typedef enum vx_status {
  VX_OK = 0,
  VX_ERR_INVALID_ARG, /* a caller's argument is out of range */
  VX_ERR_IO,          /* a file could not be opened, read or written */
  VX_ERR_NOMEM,       /* an allocation failed */
  VX_ERR_FORMAT,      /* a file is not in a format we read */
  VX_ERR_CORRUPT,     /* a file is truncated or its bytes are inconsistent */
  VX_ERR_VERSION,     /* a file was made by a newer voxlod */
  VX_ERR_EMPTY,       /* nothing to work on (no triangles, no voxels) */
  VX_ERR_LIMIT,       /* the work needs more memory or larger counts than allowed */
  VX_ERR_CUDA,        /* a CUDA call failed */
  VX_ERR_NO_GPU,      /* no usable GPU, or built without CUDA */
  VX_ERR_INTERRUPTED  /* cancelled by the caller (signal) */
} vx_status;

/* A status and a message for the user. Library functions fill it when given one. */
typedef struct vx_error {
  vx_status status;
  char msg[512];
} vx_error;

const char *vx_status_str(vx_status s);

/* Sets err (if non-NULL) to status s with a printf-style message; returns s. */
vx_status vx_error_set(vx_error *err, vx_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Grid <-> world: world = origin + grid * scale, grid in finest voxels, [0, 2^depth]^3. */
typedef struct vx_transform {
  double origin[3];
  double scale;
} vx_transform;

/* Progress: phase name and fraction done in [0,1]. Return nonzero to cancel. May be NULL. */
typedef int (*vx_progress_fn)(void *user, const char *phase, double fraction);

typedef struct vx_tree {
  uint32_t depth;         /* D: finest resolution 2^D */
  uint32_t levels_loaded; /* levels 0..levels_loaded-1 are present (D+1 = everything) */
  uint64_t level_count[VX_MAX_DEPTH + 1]; /* nodes at level l < D; voxels at l == D */
  uint64_t level_first[VX_MAX_DEPTH + 1]; /* index in nodes[] of level l's first node (l < D) */
  vx_node *nodes;          /* levels 0..D-1, breadth first (node.h); 16-byte aligned */
  uint64_t node_count;
  vx_voxel *voxels;        /* level D, Morton order; NULL when levels_loaded <= D */
  uint64_t voxel_count;
  vx_transform xf;         /* grid -> world */
  float band;              /* corner values are truncated at +-band finest voxels */
  float prune_error;       /* E of vx_tree_prune (0: full tree) */
} vx_tree;

void vx_tree_free(vx_tree *t);

/* Allocates nodes/voxels for the counts in t->level_count (16-byte aligned nodes) and fills
 * level_first, node_count and voxel_count. Used by the builder and the file reader. */
vx_status vx_tree_alloc(vx_tree *t, vx_error *err);

/* Builds the tree bottom-up from n sorted, unique Morton codes of level-`depth` voxels with their
 * corner values (field[i] belongs to codes[i]). Planes are left empty: call vx_tree_fit_planes().
 * n == 0 gives VX_ERR_EMPTY. Unsorted or duplicate codes give VX_ERR_INVALID_ARG. */
vx_status vx_tree_build(uint32_t depth, const uint64_t *codes, const vx_voxel *field, uint64_t n,
                        vx_tree *out, vx_error *err);

/* Checks every invariant a traversal relies on, for the levels loaded: counts and level offsets
 * consistent, each child index in range and equal to the running sum of child counts (so children
 * are contiguous and every node has exactly one parent), masks non-zero below nodes that are not
 * pruned leaves, flags known, depth bounded, finite plane offsets. Returns VX_ERR_CORRUPT with the
 * first violation. Runs in O(nodes). */
vx_status vx_tree_validate(const vx_tree *t, vx_error *err);

/* Rebuilds every child index from the masks (the file stores masks only). Fails with
 * VX_ERR_CORRUPT when the masks of a level do not add up to the next level's count. */
vx_status vx_tree_link(vx_tree *t, vx_error *err);

/* Per-level memory report (one of the tool's three jobs). */
typedef struct vx_level_stats {
  uint64_t cells;          /* nodes (l < D) or voxels (l == D) present at this level */
  uint64_t leaves;         /* pruned nodes at this level (drawn as planes) */
  uint64_t topology_bytes; /* child + mask bytes of this level's nodes */
  uint64_t lod_bytes;      /* plane + error bytes of this level's nodes */
  uint64_t field_bytes;    /* corner values (level D only) */
} vx_level_stats;

/* Fills stats[0..depth] for the tree. */
void vx_tree_level_stats(const vx_tree *t, vx_level_stats *stats);

VX_EXTERN_C_END

#endif
