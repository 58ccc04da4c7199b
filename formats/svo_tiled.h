/* SPDX-License-Identifier: Apache-2.0 */
/* svo_tiled.h - the tiled .svo file (version 3): trees finer than one tree holds (up to
 * 2^VX_MAX_TILED_DEPTH per axis) as a top tree over a grid of tiles, each tile an ordinary
 * version-2 .svo of at most VX_MAX_DEPTH levels in its own index space, compressed and
 * checksummed on its own. docs/SVO_FORMAT.md ("Tiled files") is the byte map.
 *
 * Writing (svo_tiled.c): tiles are appended as they are finished, in Morton order of their cells,
 * straight into the output's temporary (sys/atomic_file.h); finishing builds the top tree above
 * them (their roots' planes and fits: svo/lod.h, vx_octree_top_build), writes the directory and
 * the trailer, and commits the file. Nothing but the tiles' index and roots is held.
 * Reading distrusts every byte as the version-2 reader does: the prologue, the trailer, the
 * header and directory frames (checksums), counts against the grid and the file size before any
 * allocation, the tiles' cells strictly ascending, inside the grid, contiguous in the file and
 * the very cells the top tree's masks name; a tile read alone is checked against its index entry
 * (checksum, counts) and the header (depth, band, transform) and its root against the top tree.
 */
#ifndef VOXLOD_FORMATS_SVO_TILED_H
#define VOXLOD_FORMATS_SVO_TILED_H

#include "formats/svo_file.h"
#include "svo/lod.h"

VX_EXTERN_C_BEGIN

#define VX_SVO_TILED_VERSION 3u /* the prologue's version of a tiled file */

/* What a tiled tree is, as its header says. */
typedef struct vx_tiled_header {
  uint32_t depth;      /* D: 2^D voxels per axis, 2 .. VX_MAX_TILED_DEPTH */
  uint32_t tile_depth; /* T: each tile 2^T voxels per axis, 1 .. VX_MAX_DEPTH; K = D - T top
                          levels above the tiles, 1 .. VX_MAX_DEPTH - 1 */
  float band, prune_error;
  vx_transform xf;     /* the whole grid's */
  uint64_t build_id;   /* the inputs of the build (mesh and options): tiles of another build are
                          refused when merged */
  uint32_t color;      /* 1: coloured (the prologue's flag): every tile a coloured version-2
                          tree, the top tree's colours in the directory */
} vx_tiled_header;

/* The header's fields as the header record holds them (56 bytes: depth, tile depth, band, prune
 * error, origin, scale, build id; SVO_FORMAT.md), written and read (color is not among them: get
 * leaves it 0); the record of a tile built elsewhere (tile_part.h) holds them the same way. */
#define VX_TILED_HEADER_FIELDS 56u
void vx_tiled_header_put(uint8_t *p, const vx_tiled_header *h);
void vx_tiled_header_get(const uint8_t *p, vx_tiled_header *h);
/* VX_ERR_CORRUPT (the message starting with name) unless the fields are in range: 2 <= D <= 20,
 * 1 <= T <= 14, T < D, D - T <= 13, a positive band and non-negative prune error below their
 * limits, a finite transform with a positive scale. */
vx_status vx_tiled_header_check(const vx_tiled_header *h, const char *name, vx_error *err);

/* One tile in the file (the index). */
typedef struct vx_tile_entry {
  uint64_t code;    /* its cell: Morton code at level K */
  uint64_t offset;  /* of its .svo bytes in the file */
  uint64_t length;
  uint64_t voxels;  /* surface voxels */
  uint64_t nodes;
  uint32_t check;   /* check32 of its bytes */
} vx_tile_entry;

/* 1 when the bytes (at least 12 of a file's start) are a tiled file's prologue; the same for
 * the regular file at path (0 for anything else, a FIFO included, without blocking). */
int vx_svo_is_tiled(const uint8_t *head, size_t n);
int vx_svo_path_is_tiled(const char *path);

/* The transform of tile `code` (its grid: the header's, from its cell's corner). */
void vx_tile_transform(const vx_tiled_header *h, uint64_t code, vx_transform *out);

/* The identity of a build: a 64-bit hash of its triangles (n bytes of positions: the usable
 * triangles as loaded, in order, exact copies included) and of the options that change its
 * bytes. */
uint64_t vx_tiled_build_id(const void *positions, size_t n, uint32_t depth, uint32_t tile_depth,
                           float band, int sign_rule, float prune_error);
/* The same over positions given in pieces, in order (a mesh never held whole): begin (NULL when
 * out of memory), feed each piece, then end (which frees it; NULL gives 0, as a failed hash). */
typedef struct vx_tiled_id vx_tiled_id;
vx_tiled_id *vx_tiled_id_begin(void);
int vx_tiled_id_feed(vx_tiled_id *h, const void *positions, size_t n);
uint64_t vx_tiled_id_end(vx_tiled_id *h, uint32_t depth, uint32_t tile_depth, float band,
                         int sign_rule, float prune_error);

/* ---- writing ---- */

typedef struct vx_tiled_writer vx_tiled_writer;

/* Opens path for writing (atomically: nothing appears until vx_tiled_writer_finish). */
vx_status vx_tiled_writer_open(const char *path, const vx_tiled_header *h, vx_tiled_writer **out,
                               vx_error *err);
/* Appends a tile: its cell, the build it belongs to, its .svo bytes (a version-2 file of
 * tile_depth levels, coloured exactly when the header is, as vx_svo_encode/vx_svo_write give them, the transform of its cell) and its
 * root's fit (vx_voxelize_tile). Cells must come in ascending order; a tile of another build,
 * depth, band or transform is refused. The bytes are this process's (vx_svo_encode's): their
 * root is decoded, their other sections are not checked (files from elsewhere are, by
 * vx_tiled_writer_add_checked). check: their check32 when the caller has it
 * (vx_svo_encoded_check, e.g. on the thread that encoded them), else NULL. */
vx_status vx_tiled_writer_add(vx_tiled_writer *w, uint64_t code, uint64_t build_id,
                              const uint8_t *svo, size_t n, const uint32_t *check,
                              const vx_fit_root *fit, vx_error *err);
/* The same from a .svo file (read in pieces, not held whole). */
vx_status vx_tiled_writer_add_file(vx_tiled_writer *w, uint64_t code, uint64_t build_id,
                                   const char *svo_path, const vx_fit_root *fit, vx_error *err);
/* vx_tiled_writer_add_file for a file built elsewhere: it must be `length` bytes whose check32 is
 * `check` (what its builder wrote), else VX_ERR_CORRUPT. */
vx_status vx_tiled_writer_add_checked(vx_tiled_writer *w, uint64_t code, uint64_t build_id,
                                      const char *svo_path, const vx_fit_root *fit,
                                      uint64_t length, uint32_t check, vx_error *err);
/* A tile file checked, on any thread, before vx_tiled_writer_add_checked_file appends it: its
 * root decoded, every other section against its check32, the whole file's length and check32
 * (against the builder's when length / check are given, else VX_ERR_CORRUPT); it stays open, so
 * that the bytes appended are those checked. On failure f needs no close (and is closed: fd -1,
 * so that closing it again does nothing). */
typedef struct vx_tile_file {
  int fd;
  int have_root;
  vx_octree root;
  vx_svo_file_info fi;
  uint64_t length;
  uint32_t check;
  int64_t mtime_ns; /* when checked: a change since is refused */
} vx_tile_file;
vx_status vx_tile_file_check(const char *path, const uint64_t *length, const uint32_t *check,
                             vx_tile_file *f, vx_error *err);
void vx_tile_file_close(vx_tile_file *f);
/* Appends a checked tile file (path: for messages), copied in the kernel where it can be. */
vx_status vx_tiled_writer_add_checked_file(vx_tiled_writer *w, uint64_t code, uint64_t build_id,
                                           const char *path, vx_tile_file *f,
                                           const vx_fit_root *fit, vx_error *err);
/* The top tree, the directory and the trailer; commits the file and frees w (also on failure,
 * which leaves no file). *bytes and *nodes (may be NULL): the file's size, the nodes of the whole
 * tree (top and tiles). */
vx_status vx_tiled_writer_finish(vx_tiled_writer *w, uint64_t *bytes, uint64_t *nodes,
                                 vx_error *err);
/* A coloured file's top tree colours (h->color; required before vx_tiled_writer_finish): fn
 * fills colors[i] for every node i of top (levels 0 .. K = D - T, linked; level K the tiles'
 * roots in file order) with its packed RGBA. Each tile root's alpha must be the one its tile
 * holds; its rgb is the one a reader gives the tile (docs/SVO_FORMAT.md). */
typedef vx_status (*vx_tiled_color_fn)(void *ctx, vx_octree *top, uint32_t K, uint32_t *colors,
                                       vx_error *err);
void vx_tiled_writer_set_color(vx_tiled_writer *w, vx_tiled_color_fn fn, void *ctx);
/* Drops everything written (no file) and frees w; NULL is a no-op. */
void vx_tiled_writer_abort(vx_tiled_writer *w);

/* ---- reading ---- */

typedef struct vx_tiled vx_tiled;

/* Opens a tiled file (a regular file) or memory (kept by the caller while t lives): checks and
 * loads the header, the top tree and the index. opts->mem_limit bounds what is allocated. */
vx_status vx_tiled_open(const char *path, const vx_svo_read_opts *opts, vx_tiled **out,
                        vx_error *err);
vx_status vx_tiled_open_memory(const uint8_t *data, size_t size, const vx_svo_read_opts *opts,
                               vx_tiled **out, vx_error *err);
void vx_tiled_close(vx_tiled *t);

const vx_tiled_header *vx_tiled_get_header(const vx_tiled *t);
uint64_t vx_tiled_tile_count(const vx_tiled *t);
const vx_tile_entry *vx_tiled_tile(const vx_tiled *t, uint64_t i);
/* The top tree: levels 0 .. K as nodes (out->depth = levels_loaded = K + 1, the storage only:
 * its planes are those of a D-level tree), level K's nodes the tiles' roots, in index order;
 * node_color set in a coloured file. */
const vx_octree *vx_tiled_top(const vx_tiled *t);
/* Totals over the whole tree: nodes of every level (top and tiles) and surface voxels; the
 * file's size. */
void vx_tiled_totals(const vx_tiled *t, uint64_t *nodes, uint64_t *voxels, uint64_t *file_bytes);

/* Tile i's header alone (its prologue and header frame, checked): out holds its depth,
 * transform and level counts without arrays, fi its sections' compressed sizes; both checked
 * against the tiled header and the tile's index entry. */
vx_status vx_tiled_tile_header(vx_tiled *t, uint64_t i, vx_octree *out, vx_svo_file_info *fi,
                               vx_error *err);

/* Tile i as a tree of tile_depth levels in its own index space (transform of its cell); opts as
 * for vx_svo_read (max_level: partial). A coloured tile's colours take their rgb from the top
 * tree's colour of its root: a tile whose surface has no opaque part takes it from the levels
 * above the tile, which the tile's own file cannot know (its root holds a stand-in there). */
vx_status vx_tiled_read_tile(vx_tiled *t, uint64_t i, const vx_svo_read_opts *opts,
                             vx_octree *out, vx_error *err);
/* The whole tree as one (depth <= VX_MAX_DEPTH only): the top levels, then each level of the
 * tiles concatenated in their order: the tree the untiled build makes of the same mesh.
 * opts->max_level = L: levels 0 .. L only (as vx_svo_read's partial reads; below the tiles'
 * level, from the top tree alone, no tile read). */
vx_status vx_tiled_stitch(vx_tiled *t, const vx_svo_read_opts *opts, vx_octree *out,
                          vx_error *err);

VX_EXTERN_C_END

#endif
