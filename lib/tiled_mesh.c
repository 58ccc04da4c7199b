/* SPDX-License-Identifier: Apache-2.0 */
/* tiled_mesh.c - vx_tiled_file_mesh (include/voxlod/mesher.h): the full-detail mesh of a tiled
 * file of any depth, window by window, without joining it.
 *
 * The windows are those of tiled sampling (lib/tiled_arena.h): cubes of 2^W voxels (W = tile
 * depth + 1, at most 14) at multiples of 2^(W-1), each owning its middle half (the outer windows
 * own up to the tree's faces), so that their middles tile the tree. Each window is built from its
 * tiles keeping only its middle and MARGIN voxels around it (cells of 16^3 below), and meshed as
 * a part (mesher/mesher.h, vx_dc_opts.part): the faces whose minimal edge starts in its middle,
 * with keyed vertices. A face depends on its edge's cells, their corner values and the corner
 * field's repairs near them (dc_field.c), so it is the face the whole tree gives there, except
 * where the closure of the thin rule's re-signed voxels runs further than the margin: 32 voxels
 * were not enough on the dragon at 4096^3 (3,570 of 86.2 M triangles differed), 128 were.
 *
 * Vertices of cells near a middle's faces are made by the windows on both sides: those within
 * WELD voxels of a middle's faces are listed with their keys, sorted, and each key's later copies
 * replaced by its first one (positions agree to float rounding: each window computes in its own
 * grid). So the mesh is the one mesher.h describes, watertight on closed input across windows.
 * Memory: the mesh (about 60 bytes a triangle with the soup vx_mesh keeps), one window and the
 * tiles it holds (the tile cache's default budget), 16 bytes per vertex near a middle's faces.
 */
#include "lib/internal.h"
#include "lib/tiled_arena.h"
#include "mesher/mesher.h"
#include "sys/sort.h"
#include "sys/system.h"

#define MARGIN 128u /* voxels kept around a window's middle */
#define WELD 3u    /* vertices this close to a middle's faces are welded by key */
#define MESH_BYTES 60u /* a triangle of the mesh: its indices, half a vertex, its soup */

typedef struct weld_rec {
  uint64_t key, v; /* the vertex's key (the whole tree's grid), its index in the mesh */
} weld_rec;

/* The mesh being gathered, window after window. */
typedef struct gather {
  vx_dc_mesh m;               /* pos, nrm, rgba, tri; vertex_count and triangle_count so far */
  uint64_t vcap, tcap;        /* capacities (vertices, triangles) */
  weld_rec *weld;
  uint64_t nweld, wcap;
  vx_dc_stats st;             /* summed */
  uint64_t splits;            /* split vertices (keys with a contact), each once after welding */
  int colored;
} gather;

/* Room for `need` elements of `elem` bytes in *p (capacity *cap, grown by half); 0: no memory. */
static int room(void **p, uint64_t *cap, uint64_t need, size_t elem) {
  if (need <= *cap) return 1;
  uint64_t c = *cap + *cap / 2;
  if (c < need) c = need;
  if (c < 1024) c = 1024;
  void *q = vx_realloc(*p, (size_t)(c * elem));
  if (!q) return 0;
  *p = q;
  *cap = c;
  return 1;
}

/* Window mesh w (vertex keys in the window's grid at `origin`, its middle [lo, hi) in the whole
 * tree's) appended to g. */
static vx_status append(gather *g, vx_dc_mesh *w, const uint32_t origin[3], const uint64_t lo[3],
                        const uint64_t hi[3], vx_error *err) {
  if (w->triangle_count == 0) return VX_OK; /* its vertices are its triangles' */
  const uint64_t nv = g->m.vertex_count + w->vertex_count, nt = g->m.triangle_count + w->triangle_count;
  if (nv > UINT32_MAX || nt > UINT32_MAX)
    return vx_error_set(err, VX_ERR_LIMIT, "the mesh would have more than 2^32 vertices or "
                        "triangles: mesh a coarser level (--lod, --error)");
  uint64_t vc = g->vcap;
  int ok = room((void **)&g->m.pos, &vc, nv, 3 * sizeof(float));
  vc = g->vcap;
  ok = ok && room((void **)&g->m.nrm, &vc, nv, 3 * sizeof(float));
  if (ok && g->colored) {
    vc = g->vcap;
    ok = room((void **)&g->m.rgba, &vc, nv, 4);
  }
  if (ok) g->vcap = vc;
  ok = ok && room((void **)&g->m.tri, &g->tcap, nt, 3 * sizeof(uint32_t));
  if (!ok) return vx_error_set(err, VX_ERR_NOMEM, "out of memory for a mesh of %llu triangles",
                               (unsigned long long)nt);
  const uint64_t base = g->m.vertex_count;
  memcpy(g->m.pos + 3 * base, w->pos, (size_t)w->vertex_count * 3 * sizeof(float));
  memcpy(g->m.nrm + 3 * base, w->nrm, (size_t)w->vertex_count * 3 * sizeof(float));
  if (g->colored) {
    if (w->rgba) memcpy(g->m.rgba + 4 * base, w->rgba, (size_t)w->vertex_count * 4);
    else memset(g->m.rgba + 4 * base, 0xff, (size_t)w->vertex_count * 4);
  }
  uint32_t *t = g->m.tri + 3 * g->m.triangle_count;
  for (uint64_t i = 0; i < 3 * w->triangle_count; i++) t[i] = (uint32_t)(base + w->tri[i]);
  const uint64_t shift = VX_DC_KEY_COORD(origin[0], origin[1], origin[2]);
  for (uint64_t v = 0; v < w->vertex_count; v++) {
    const uint64_t key = w->key[v] + shift; /* no field carries: each stays below 2^20 */
    g->splits += key >> 60 != 0;
    int inner = 1;
    for (int i = 0; i < 3; i++) {
      const uint64_t c = key >> 20 * i & 0xfffffu;
      inner &= c >= lo[i] + WELD && c + WELD < hi[i];
    }
    if (inner) continue;
    if (!room((void **)&g->weld, &g->wcap, g->nweld + 1, sizeof(weld_rec)))
      return vx_error_set(err, VX_ERR_NOMEM, "out of memory welding the windows' meshes");
    g->weld[g->nweld].key = key;
    g->weld[g->nweld++].v = base + v;
  }
  g->m.vertex_count = nv;
  g->m.triangle_count = nt;
  return VX_OK;
}

/* Every key's later copies replaced by its first, the vertices left compacted in order. */
static vx_status weld(gather *g, int threads, vx_error *err) {
  const uint64_t nv = g->m.vertex_count;
  weld_rec *tmp = (weld_rec *)vx_malloc((size_t)(g->nweld ? g->nweld : 1) * sizeof *tmp);
  uint32_t *to = (uint32_t *)vx_malloc((size_t)(nv ? nv : 1) * sizeof(uint32_t));
  weld_rec *s = tmp ? (weld_rec *)vx_radix_sort(g->weld, tmp, (size_t)g->nweld, sizeof *tmp, 0,
                                                 64, threads)
                    : NULL;
  if (!to || !s) {
    vx_free(tmp);
    vx_free(to);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory welding the windows' meshes");
  }
  for (uint64_t v = 0; v < nv; v++) to[v] = (uint32_t)v;
  for (uint64_t i = 1; i < g->nweld; i++) /* stable: the first copy of a key leads its run */
    if (s[i].key == s[i - 1].key) {
      to[s[i].v] = to[s[i - 1].v];
      g->splits -= s[i].key >> 60 != 0;
    }
  vx_free(tmp);
  uint64_t n = 0;
  for (uint64_t v = 0; v < nv; v++) {
    if (to[v] != v) {
      to[v] = to[to[v]]; /* its first copy came earlier: already renumbered */
      continue;
    }
    to[v] = (uint32_t)n;
    if (n != v) {
      memcpy(g->m.pos + 3 * n, g->m.pos + 3 * v, 3 * sizeof(float));
      memcpy(g->m.nrm + 3 * n, g->m.nrm + 3 * v, 3 * sizeof(float));
      if (g->m.rgba) memcpy(g->m.rgba + 4 * n, g->m.rgba + 4 * v, 4);
    }
    n++;
  }
  for (uint64_t i = 0; i < 3 * g->m.triangle_count; i++) g->m.tri[i] = to[g->m.tri[i]];
  vx_free(to);
  g->m.vertex_count = n;
  return VX_OK;
}

/* The windows' own counts summed (cells and split contacts come from the welded mesh). */
static void sum_stats(vx_dc_stats *a, const vx_dc_stats *b) {
  a->corners_shared += b->corners_shared;
  a->corners_disputed += b->corners_disputed;
  a->corners_repaired += b->corners_repaired;
  a->open_edges += b->open_edges;
  a->faces_cut_out += b->faces_cut_out;
  a->sec_field += b->sec_field;
  a->sec_vertices += b->sec_vertices;
  a->sec_faces += b->sec_faces;
  a->sec_assemble += b->sec_assemble;
}

/* One window (its index k per axis): built, meshed as a part, appended. */
static vx_status one_window(vx_tile_cache *c, const vx_tiled_header *h, uint32_t W,
                            const uint32_t k[3], uint32_t margin, int threads, gather *g,
                            vx_error *err) {
  const uint64_t half = (uint64_t)1 << (W - 1), R = (uint64_t)1 << h->depth;
  uint32_t origin[3];
  uint64_t lo[3], hi[3];
  vx_window_keep keep;
  keep.level = W >= 6 ? W - 4 : W; /* cells of 16^3 */
  for (int i = 0; i < 3; i++) {
    origin[i] = (uint32_t)(k[i] * half);
    vx_window_middle(h->depth, W, k[i], &lo[i], &hi[i]);
    keep.lo[i] = lo[i] > margin ? lo[i] - margin : 0;
    keep.hi[i] = hi[i] + margin;
  }
  vx_arena a;
  vx_status s = vx_arena_window(c, W, origin, &keep, threads, &a, err);
  if (s != VX_OK) return s;
  if (a.oct.voxel_count == 0) {
    vx_arena_free(&a);
    return VX_OK;
  }
  vx_dc_opts d;
  memset(&d, 0, sizeof d);
  d.cut = VX_DC_FINEST;
  d.threads = threads;
  d.part = 1;
  for (int i = 0; i < 3; i++) {
    d.own_lo[i] = (uint32_t)(lo[i] - origin[i]);
    d.own_hi[i] = hi[i] == R ? UINT32_MAX : (uint32_t)(hi[i] - origin[i]);
  }
  vx_dc_mesh w;
  vx_dc_stats ws;
  s = vx_dc_extract(&a.oct, &d, &w, &ws, err);
  vx_arena_free(&a);
  if (s != VX_OK) return s;
  s = append(g, &w, origin, lo, hi, err);
  sum_stats(&g->st, &ws);
  vx_dc_mesh_free(&w);
  return s;
}

/* Is any tile of the file inside the window at index k? */
static int window_has_tiles(const vx_tiled *t, const vx_tiled_header *h, uint32_t W,
                            const uint32_t k[3]) {
  const uint64_t half = (uint64_t)1 << (W - 1), R = (uint64_t)1 << h->depth;
  for (uint32_t slot = 0; slot < 8; slot++) {
    uint64_t g[3];
    int inside = 1;
    for (int i = 0; i < 3; i++) {
      g[i] = (uint64_t)k[i] * half + (uint64_t)(slot >> i & 1u) * half;
      inside &= g[i] < R;
    }
    if (inside && vx_tiled_find_tile(t, (uint32_t)(g[0] >> h->tile_depth),
                                     (uint32_t)(g[1] >> h->tile_depth),
                                     (uint32_t)(g[2] >> h->tile_depth)) != UINT64_MAX)
      return 1;
  }
  return 0;
}

vx_status vx_tiled_file_mesh(vx_tiled_file *f, const vx_mesher_opts *opts, vx_mesh **out,
                             vx_error *err) {
  return vx_tiled_file_mesh_margin(f, opts, MARGIN, out, err);
}

vx_status vx_tiled_file_mesh_margin(vx_tiled_file *f, const vx_mesher_opts *opts, uint32_t margin,
                                    vx_mesh **out, vx_error *err) {
  if (!out) return vx_error_set(err, VX_ERR_INVALID_ARG, "no place for the mesh");
  *out = NULL;
  if (!f) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tiled file to mesh");
  vx_mesher_opts o;
  vx_status s = VX_OPTS_IN(o, opts, err);
  if (s != VX_OK) return s;
  if (o.cut != VX_MESHER_FINEST)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "a tiled file is meshed here at full detail; "
                        "a coarser cut comes from one of its levels (vx_tiled_file_level_tree)");
  if (o.threads < 0) return vx_error_set(err, VX_ERR_INVALID_ARG, "%d threads", o.threads);
  vx_svo_read_opts ro;
  vx_tiled *t = vx_tiled_file_reader(f, &ro);
  const vx_tiled_header *h = vx_tiled_get_header(t);
  vx_octree whole;
  memset(&whole, 0, sizeof whole);
  whole.depth = h->depth;
  whole.xf = h->xf;
  whole.band = h->band;
  if ((s = vx_octree_check_world(&whole, VX_WORLD_FLOAT, err)) != VX_OK) return s;
  if (h->prune_error > 0.0f)
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "meshing needs the whole tree, and this one was pruned at error %g: "
                        "mesh the unpruned tree with an error cut instead", (double)h->prune_error);
  uint32_t W = h->tile_depth + 1u;
  if (W > VX_MAX_DEPTH) W = VX_MAX_DEPTH;
  if (W > h->depth) W = h->depth;
  if (W < 5u)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "tiles of %u^3 are too small to mesh a tiled "
                        "tree window by window (at least 16^3)", 1u << h->tile_depth);
  /* The mesh before the work: about 2 triangles a surface voxel (one vertex each), 60 bytes a
   * triangle with its soup, more while its arrays grow. */
  uint64_t nodes = 0, voxels = 0, fb = 0;
  vx_tiled_totals(t, &nodes, &voxels, &fb);
  const uint64_t limit = ro.mem_limit ? ro.mem_limit : vx_default_mem_limit();
  if (2 * voxels > UINT32_MAX)
    return vx_error_set(err, VX_ERR_LIMIT, "%llu surface voxels give about %llu triangles at full "
                        "detail, more than a mesh holds (2^32): mesh a level instead",
                        (unsigned long long)voxels, (unsigned long long)(2 * voxels));
  if (voxels > limit / (2 * MESH_BYTES))
    return vx_error_set(err, VX_ERR_LIMIT, "the full-detail mesh of %llu surface voxels needs "
                        "about %.1f GiB, over the memory limit of %.1f GiB: mesh a level instead",
                        (unsigned long long)voxels,
                        (double)voxels * 2.0 * MESH_BYTES / 1073741824.0,
                        (double)limit / 1073741824.0);
  vx_tile_cache *c = NULL;
  if ((s = vx_tile_cache_new(t, &ro, 0, NULL, &c, err)) != VX_OK) return s;
  vx_tile_cache_window_colors(c, 1);
  gather g;
  memset(&g, 0, sizeof g);
  g.colored = h->color != 0;
  const double t0 = vx_clock_seconds();
  const uint64_t n = ((uint64_t)1 << (h->depth - W + 1)) - 1u; /* windows per axis */
  uint32_t bits = 0;
  while (((uint64_t)1 << bits) < n) bits++;
  /* Morton order: the tiles one window reads are mostly those of the window before */
  const uint64_t codes = (uint64_t)1 << (3 * bits);
  for (uint64_t m = 0; s == VX_OK && m < codes; m++) {
    uint32_t k[3];
    vx_morton_decode(m, &k[0], &k[1], &k[2]);
    if (k[0] >= n || k[1] >= n || k[2] >= n || !window_has_tiles(t, h, W, k)) continue;
    s = one_window(c, h, W, k, margin, o.threads, &g, err);
    if (s == VX_OK && o.progress &&
        o.progress(o.user, "meshing: windows", (double)(m + 1) / (double)codes))
      s = vx_error_set(err, VX_ERR_INTERRUPTED, "meshing interrupted");
  }
  vx_tile_cache_free(c);
  if (s == VX_OK) s = weld(&g, o.threads, err);
  vx_free(g.weld);
  if (s == VX_OK && g.m.triangle_count == 0)
    s = vx_error_set(err, VX_ERR_EMPTY, "%s", g.st.faces_cut_out
                                                  ? "every cell with a surface crossing is cut "
                                                    "out (alpha 0): nothing to mesh"
                                                  : "the tree's field has no surface crossing");
  if (s != VX_OK) {
    vx_dc_mesh_free(&g.m);
    return s;
  }
  g.st.vertices = g.m.vertex_count;
  g.st.triangles = g.m.triangle_count;
  g.st.contacts_split = g.splits;
  g.st.cells = g.m.vertex_count - g.splits;
  g.st.level_min = g.st.level_max = h->depth;
  g.st.sec_total = vx_clock_seconds() - t0;
  return vx_mesh_of_dc(&g.m, &g.st, o.threads, out, err);
}
