/* SPDX-License-Identifier: Apache-2.0 */
/* voxlod/sample.h - signed-distance queries: world-space points in, signed distance (world units)
 * and its gradient out, from a tree at full detail or cut at a level.
 *
 * WHAT A SAMPLE IS (the rule is the same on the CPU and the GPU: one header, sampler/sample_eval.h,
 * built without fused multiply-adds on both, so that both give the same bits)
 *   A point p (world coordinates) becomes a grid point g = (p - origin) / scale (finest voxels).
 *   - In a surface voxel: the trilinear interpolation of its 8 corner distances, gradient that of
 *     the trilinear field (so within the band the value is the tree's own field, what the renderer
 *     draws). flags 0.
 *   - In a node where the walk stops (a cut at `level`, or a pruned leaf): the node's least-squares
 *     plane n.(p - centre) + d, gradient n. VX_SAMPLE_PLANE. A node without a usable plane is
 *     replaced by its children.
 *   - In a cell with no field (no surface voxel holds the point), or outside the root box: the
 *     cells with a field within `band` voxels (L-infinity) of the point are searched; each gives
 *     its field linearised at its point nearest to p, and the distance from p to that plane's
 *     part inside the cell (the foot of p on the plane moved into the cell). The smallest wins;
 *     if it is below the band: that distance with the sign of that cell's field at its point
 *     nearest to p (no surface lies between them, or a nearer cell would hold it), its unit normal as
 *     gradient, VX_SAMPLE_NEAR. On smooth surfaces this is the distance to the surface within
 *     about the quantization step (tests/test_sample.c measures it). A part thinner than a voxel
 *     (an open sheet, a thin wall) is held by voxels whose corners were all outside, re-signed
 *     by the plane of their nearest triangle so that the renderer sees them; wherever such a
 *     voxel gives a point its value or sign (the point lies in it, it wins the search, a walk
 *     ends in it), the point is outside: the field's magnitude, the gradient facing away from
 *     the sheet.
 *     Those voxels are found from the corner values when a sampler is made or the tree is
 *     first sampled (one pass over the tree, kept with it).
 *   - Otherwise the point is "far" (VX_SAMPLE_FAR): the value is +-band voxels (in world units:
 *     band * scale), or, outside the root box, +max(band, distance to the box) (at most
 *     FLT_MAX). Gradient 0 (beyond the box: the unit vector away from it). Either cells with a
 *     field lie within the band but all extrapolate to the band or beyond (the true distance is
 *     then near the band), and the sign is the side of the nearest of them; or none does, so no
 *     surface lies closer than `band` voxels (the voxelization is conservative) and |value| is
 *     a lower bound of the true distance. Then the sign comes from the first cell with a field
 *     met walking from p along an axis towards the nearer face of the root box (the walk crosses
 *     no surface, so the field's sign where it enters that cell is p's, outside for a re-signed
 *     voxel; a walk that leaves the box means outside), the majority of the three axes' walks (a hole in an open mesh can mislead one).
 *     Outside the box is outside (the mesh lies inside it).
 *     VX_SAMPLE_NO_SIGN marks a walk that gave up (assumed outside).
 *   - A point with a NaN or infinite coordinate (or one so large that its grid coordinate
 *     overflows a float): distance and gradient NaN, VX_SAMPLE_INVALID, or (opts.nonfinite =
 *     VX_NONFINITE_FAIL) the call fails with VX_ERR_INVALID_ARG naming it.
 *   Distances are world units (grid voxels times the tree's scale); gradients are dimensionless
 *   (about unit length: d(distance)/d(point)). Negative is inside.
 *
 * MEMORY AND DEVICES
 *   vx_tree_sample takes host arrays and runs on all cores (or on the GPU when asked, which pays
 *   the CUDA context and the tree's upload per call). A vx_sampler keeps the tree on the GPU (or
 *   uses a renderer's copy) and accepts host or device pointers: device pointers (cudaMalloc'ed,
 *   a torch or cupy array's data) are sampled in place, without a copy; host arrays go through
 *   the GPU in chunks. All four arrays of one call must be of one kind (all host or all device).
 *
 * THREADS
 *   vx_tree_sample may run from any number of threads on one tree. One vx_sampler is used by one
 *   thread at a time. The CPU's results do not depend on the thread count or the order of the
 *   points. On x86-64 a processor with AVX2 runs a build of the loop for it, which gives the same
 *   bits as the baseline build (VOXLOD_CPU=baseline in the environment forces that one).
 */
#ifndef VOXLOD_SAMPLE_H
#define VOXLOD_SAMPLE_H

#include "voxlod/base.h"
#include "voxlod/render.h"
#include "voxlod/tree.h"

VX_EXTERN_C_BEGIN

/* BAND CACHE (vx_sample_opts.band_cache: memory for speed)
 *   The rule above answers a point in a surface voxel with one descent, but one beside the
 *   surface with a search of the cells around it (several times as long). The band cache stores the
 *   rule's answers around the surface: every finest cell within ceil(band) cells (at most 4) of a
 *   surface voxel, in bricks of 8^3 cells found through a hash table, each brick holding the
 *   values at its 9^3 grid points quantized as voxel corners are (band / 127): a voxel's corner
 *   values where a voxel has that corner, else the rule's value there. A point in a surface
 *   voxel gets exactly the rule's result (the voxels the thin rule re-signed are left to the
 *   rule). A point in an empty cell gets the trilinear interpolation of its corners and its
 *   gradient, VX_SAMPLE_NEAR, or VX_SAMPLE_FAR with +-band and gradient 0 where the
 *   interpolation reaches the band: that differs from the rule at the point by the
 *   interpolation error (tests/test_sample.c and docs/BENCHMARKS.md measure both against exact
 *   distances: the same bound holds). Only cells whose corners all have a sign and lie on one
 *   side (no surface crosses an empty cell) are kept, and only where their corners give the
 *   rule's value within 1/8 voxel at the cell's centre and, seen from the cell, at each corner a
 *   surface voxel gave (the rule is not continuous at a voxel's faces: inside, the voxel's
 *   field; outside, the nearest cell's extrapolation), so that the cache stays within 0.5 voxel
 *   of the rule (checked at those points, not proven: tests/test_sample_agree.c and
 *   test_gpu_sample_agree.cu find no point over it on a scan with a part thinner than a voxel
 *   from 64^3 to 2048^3). Points elsewhere (farther out, outside the root box) follow the rule.
 *   The first call that asks for it builds it (the rule at each grid point, each cell's centre
 *   and the voxels' corners seen from the cells, on all cores) and keeps it
 *   with the tree: about 29 bytes per surface voxel (the tree: 13). A GPU sampler builds its
 *   own on its device (the bricks found on the CPU, then filled by the GPU's kernels, the rule
 *   evaluated by the GPU's sampler) and keeps it there; the rule giving the same bits on both,
 *   it is the CPU's cache and answers with the CPU's bits. docs/BENCHMARKS.md gives build
 *   times and sampling rates. A tree whose cache would exceed 80 % of physical memory is refused
 *   (VX_ERR_LIMIT).
 */

/* Per-point flags (uint8_t), OR-ed. */
#define VX_SAMPLE_PLANE 0x01u   /* from a node's plane (a cut level or a pruned leaf) */
#define VX_SAMPLE_NEAR 0x02u    /* outside every cell with a field, extrapolated from the nearest */
#define VX_SAMPLE_FAR 0x04u     /* no field within the band: the bounded value described above */
#define VX_SAMPLE_OUTSIDE 0x08u /* beyond the root box */
#define VX_SAMPLE_NO_SIGN 0x10u /* far, and the sign could not be found (+ assumed) */
#define VX_SAMPLE_INVALID 0x20u /* a NaN or infinite coordinate: the outputs are NaN */

/* vx_sample_opts.nonfinite: what a point with a NaN or infinite coordinate does. */
typedef enum vx_nonfinite {
  VX_NONFINITE_NAN = 0, /* NaN out, VX_SAMPLE_INVALID (default) */
  VX_NONFINITE_FAIL = 1 /* the call fails with VX_ERR_INVALID_ARG naming the first such point
                           (the outputs are then unspecified) */
} vx_nonfinite;

typedef struct vx_sample_opts {
  uint32_t struct_size; /* sizeof(vx_sample_opts), or 0 */
  vx_lod_mode lod;      /* VX_LOD_FINEST (default): every loaded level; VX_LOD_LEVEL: cut at
                           `level` (0 = root .. depth), nodes there answer with their planes.
                           VX_LOD_PIXEL has no meaning here (refused). */
  int level;
  vx_device device;     /* vx_tree_sample only: AUTO and CPU run on the CPU; GPU uploads the tree
                           for this call (a vx_sampler keeps it) */
  int threads;          /* CPU threads; 0: all cores */
  vx_nonfinite nonfinite; /* VX_NONFINITE_NAN (0) or VX_NONFINITE_FAIL */
  void *cuda_stream;    /* a sampler on the GPU with device pointers: the cudaStream_t to run on;
                           NULL: the legacy default stream (ordered after work that torch or
                           cupy queued on theirs). The call returns when the results are there. */
  int band_cache;       /* 1: at full detail, answer points within the band from the band
                           cache (BAND CACHE above), built by the first such call and kept with
                           the tree (on the CPU) or the sampler (on the GPU); 0 (default): the
                           rule throughout. */
} vx_sample_opts;

typedef struct vx_sample_stats {
  uint32_t struct_size; /* sizeof(vx_sample_stats), or 0 */
  int used_gpu;
  int device_pointers;  /* 1: the arrays were device memory, sampled in place */
  uint64_t points;
  uint64_t invalid;     /* points with a non-finite coordinate */
  double ms_total;      /* the whole call, wall time */
  double ms_kernel;     /* GPU: the sampling kernels (CUDA events); CPU: the evaluation */
  double ms_copy;       /* GPU with host arrays: copies to and from the device */
} vx_sample_stats;

/* Samples the tree at n points (xyz triples, float32, host memory): dist[n] (world units), and
 * when not NULL grad[3n] and flags[n]. opts and stats may be NULL; n = 0 is fine. The tree may be
 * partially loaded: the cut is then at most its last loaded level, answered from what was loaded.
 * The whole tree's cut at that level can read below it (a node whose plane is not usable answers
 * from its children; voxels re-signed for a thin part (above) correct the nodes above them), so a
 * few points near such places get other values than the whole tree gives with VX_LOD_LEVEL
 * there (on the bunny at 512³, 1,174 of 220,000 points near the surface at level 5): load every
 * level and cut with `lod` for the whole tree's answers. Sampling works in single
 * precision: a tree whose transform or band does not fit it (a scale below 1e-35, or the root
 * box or the band reaching beyond FLT_MAX / 4) is refused with VX_ERR_INVALID_ARG. */
VX_API vx_status vx_tree_sample(const vx_tree *t, const vx_sample_opts *opts, const float *points,
                                uint64_t n, float *dist, float *grad, uint8_t *flags,
                                vx_sample_stats *stats, vx_error *err);

/* ---- a sampler: the tree kept on the GPU, host or device pointers ----------------------------- */

typedef struct vx_sampler vx_sampler;

typedef struct vx_sampler_opts {
  uint32_t struct_size;        /* sizeof(vx_sampler_opts), or 0 */
  vx_device device;            /* AUTO: the GPU when usable (else the CPU, with a note); GPU: fail
                                  without one; CPU */
  int threads;                 /* CPU threads; 0: all cores */
  const vx_renderer *renderer; /* optional: a renderer of the same tree whose GPU copy the
                                  sampler uses instead of uploading it again (it must outlive
                                  the sampler); ignored when that renderer draws on the CPU */
} vx_sampler_opts;

/* Prepares to sample t (which must outlive the sampler). opts may be NULL. */
VX_API vx_status vx_sampler_create(const vx_tree *t, const vx_sampler_opts *opts,
                                   vx_sampler **out, vx_error *err);
VX_API void vx_sampler_free(vx_sampler *s);

/* 1 when the sampler runs on the GPU. */
VX_API int vx_sampler_uses_gpu(const vx_sampler *s);
/* Notes from creation (a GPU fallback), "" when none. Owned by s. */
VX_API const char *vx_sampler_notes(const vx_sampler *s);

/* As vx_tree_sample, on the sampler's device. On the GPU, points/dist/grad/flags may be device
 * pointers of the current CUDA device (all of them, or none): then nothing is copied. A CPU
 * sampler refuses device pointers (VX_ERR_INVALID_ARG). opts->device is ignored. */
VX_API vx_status vx_sampler_sample(vx_sampler *s, const vx_sample_opts *opts, const float *points,
                                   uint64_t n, float *dist, float *grad, uint8_t *flags,
                                   vx_sample_stats *stats, vx_error *err);

/* ---- tiled files, tile by tile ----------------------------------------------------------------- */

typedef struct vx_tiled_sample_opts {
  uint32_t struct_size; /* sizeof(vx_tiled_sample_opts), or 0 */
  uint32_t reserved0;
  uint64_t cache_bytes; /* decoded tiles and windows kept with the handle, between the groups
                           of points and between calls (least recently used first out); 0: 1 GiB
                           of tiles, and past 16384^3 every window while the process stays
                           under 80% of physical memory. The tiles that one group needs at once
                           are held whatever it says (TILED SAMPLING below). */
} vx_tiled_sample_opts;

/* TILED SAMPLING: vx_tree_sample's rule on a tiled file of any depth (include/voxlod/tree.h,
 * "tiled files"), without joining it. The points are sorted into groups by the cell of the grid
 * of tiles they lie in (past 16384^3: by the window of 2 x 2 x 2 tiles whose middle they lie in),
 * and each group is sampled in a tree made of the top tree and the tiles within its reach (the
 * band and 2 voxels more), decoded from the file as needed and kept with the handle within
 * tiles->cache_bytes, so that the next call (the next batch of points) finds them; a far
 * point's sign walks (step 5 above) go on from tile to tile. The voxels the thin rule re-signed
 * are found once per tile (in the tiles around it; past 16384^3 per window) and kept with the
 * handle, a bit per voxel, until it is closed.
 * Past 16384^3 a window of 4096^3 or more copies from its tiles, below cells of 256^3, only
 * those within 128 voxels and the band of its middle, where its points lie (so the windows
 * together copy about the tree once, not 8 times); a walk that meets a cell not copied goes on
 * in the window whose middle holds it. Windows are kept with the handle too (up to 64, within
 * cache_bytes; without one, as long as the next window would leave the process under 80% of
 * physical memory: a window is rebuilt only by copying, but that is GBs), and the cache keeps at least the tiles one window needed at once; the tiles a
 * call's windows need are decoded side by side first when they fit in cache_bytes or in what one
 * window holds at once (the 8 largest).
 * On the GPU (opts->device) the search runs there, the walks on the CPU; past 16384^3 each
 * window searched is copied to the GPU once and kept there with the window, for the next groups
 * and calls (dropped when the window leaves the cache, and least recently used first while the
 * GPU would have less than a quarter of its memory free); up to it each group's tree is uploaded
 * for the group.
 * Memory: 16 bytes a point (their order), 29 per point of a group while it runs, 40 per far
 * point whose walks wait; the cache; the tiles one group needs, twice (decoded, and joined): a
 * tile and its 26 neighbours (more where tiles are narrower than the band plus 2 voxels), one
 * tile for a round of walks, the 4 x 4 x 4 tiles around a block of 2 x 2 x 2 when their re-signed
 * voxels are found; past 16384^3 the 8 tiles around a window and the part of it kept.
 * - Up to 16384^3 (depth <= 14) the results are those of vx_tree_sample on the tree vx_tree_load
 *   joins from the same file, bit for bit (distance, gradient, flags), at full detail and at
 *   every cut, for every point, with one exception: a voxel that the thin rule's closure
 *   (sampler/resigned.h) reaches only along a chain of voxels that leaves the 4 x 4 x 4 tiles
 *   around its own tile's block is not seen as re-signed, so that a point that takes its value or
 *   sign from it may differ in sign there (tests/test_sample_tiled.c meets none, thin plates and
 *   fins across tiles of 4^3 included).
 * - Past it (depth 15 .. 20) each window of 2^W voxels (W = tile depth + 1, at most 14) is a tree
 *   of its own grid, in which the rule runs as in any tree: the same rule within float rounding
 *   (grid coordinates from the window's corner instead of the whole tree's), the sign walks
 *   carried from window to window (their step limit counted along the way; the thin rule's voxels
 *   found within each window, so that a walk ending in a voxel on a window's face may miss a
 *   re-signed one; a window of 4096^3 or more finds them in the part it keeps, with the same
 *   effect for a walk ending 128 voxels or more from its middle). At a cut at or above the tiles (level <= depth - tile depth) the top tree
 *   alone answers (a tile root without a usable plane counts as empty there). Windows must be wide
 *   enough for the band: 2^(W - 2) >= ceil(band) + 2, else VX_ERR_INVALID_ARG.
 * opts as for vx_tree_sample: device AUTO and CPU run on the CPU; GPU runs steps 1 to 4 on the
 * GPU (each group's tree uploaded for the call; the same bits: sample.h's rule is one header),
 * the sign walks of far points on the CPU. band_cache must be 0. tiles may be NULL. The arrays
 * are host memory. One handle is used by one thread at a time. */
VX_API vx_status vx_tiled_file_sample(vx_tiled_file *f, const vx_sample_opts *opts,
                                      const vx_tiled_sample_opts *tiles, const float *points,
                                      uint64_t n, float *dist, float *grad, uint8_t *flags,
                                      vx_sample_stats *stats, vx_error *err);

/* vx_tree_colors (tree.h) on a coloured tiled file of any depth, without joining it: RGBA8 at n
 * world points from the cells of `level` (0 .. depth; -1: the finest). At a level at or above
 * the tiles' roots the top tree alone answers; below it the points are grouped by the tile they
 * lie in, and each group is searched with the tiles within the band of it (a tile and its 26
 * neighbours while the band is narrower than a tile) decoded as needed and kept with the handle
 * between calls, within tiles->cache_bytes of the latest call (0: 1 GiB; the tiles of one group
 * are held whatever it says; vx_tiled_file_close frees them). The bytes are
 * vx_tree_colors' on the tree vx_tree_load joins from the same file (depth <= 14), and past
 * 16384^3 those of the same rule on the whole tree (the nearest cell and its Morton order in the
 * whole grid). A grey file gives VX_ERR_INVALID_ARG ("the tree has no colour"). Memory: 32 bytes
 * a point and 16 per point of a batch (at most 2^20), the cache. tiles may be NULL; host arrays;
 * one handle is used by one thread at a time. */
VX_API vx_status vx_tiled_file_colors(vx_tiled_file *f, const vx_tiled_sample_opts *tiles,
                                      const float *points, uint64_t n, int level, uint8_t *rgba,
                                      vx_error *err);

/* ---- point files --------------------------------------------------------------------------------
 * The files of `voxlod sample`, for any front end. Points are read from numpy's .npy (versions 1
 * to 3: float32 or float64, either byte order, shape (N, 3), C or Fortran order) or from text
 * (told apart by the bytes, not the name): one point per line, three or more numbers separated by
 * spaces, tabs, commas or semicolons, the first three its x y z, every line with the same count;
 * blank lines and lines starting with '#' skipped. Anything else is refused naming its line or
 * header field. */

/* Reads the points of path ("-": standard input) into *points (3 * *n floats; free it with
 * vx_buffer_free; NULL when the file holds none). max_bytes bounds the file (0: 80 % of the
 * machine's memory). The file is read in pieces of 1 MiB (a text line or an .npy header may not
 * be longer): only the points are held, 12 bytes each. */
VX_API vx_status vx_points_read(const char *path, uint64_t max_bytes, float **points, uint64_t *n,
                                vx_error *err);

/* Writes n rows of `columns` (1 to 16) values, float32 (f32) or uint8 (u8): exactly one of them
 * given, row after row. A path ending in ".npy" gets numpy's format (shape (n,) for one column,
 * else (n, columns)), any other text: a row per line, columns separated by a space, floats with 9
 * significant digits (they read back to the same float32; NaN as "nan"). Written by files.h's
 * rules ("-": standard output). */
VX_API vx_status vx_values_write(const char *path, const float *f32, const uint8_t *u8,
                                 uint64_t n, uint32_t columns, vx_error *err);

/* ---- points near the surface ------------------------------------------------------------------ */

typedef struct vx_surface_points_opts {
  uint32_t struct_size; /* sizeof(vx_surface_points_opts), or 0 */
  float spread;         /* each point is a surface voxel's centre moved by a uniform offset in
                           [-spread, spread] voxels per axis; 0: the tree's band */
  uint64_t seed;        /* the random sequence (the same seed gives the same points) */
  int shuffle;          /* 0: in Morton order of their voxels (coherent, as a surface scan
                           gives them); 1: in random order */
} vx_surface_points_opts;

/* n points (xyz, world coordinates, into points[3n]) spread evenly over the surface voxels of
 * t (stratified: voxel k gets about n / voxel_count of them), for training sets and benchmarks.
 * Needs the finest level loaded (VX_ERR_EMPTY without surface voxels). */
VX_API vx_status vx_tree_surface_points(const vx_tree *t, const vx_surface_points_opts *opts,
                                        uint64_t n, float *points, vx_error *err);

VX_EXTERN_C_END

#endif
