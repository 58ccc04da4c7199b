/* SPDX-License-Identifier: Apache-2.0 */
/* color.c - the colour pass: a coloured triangle soup and its built tree -> node_color and
 * voxel_color (vx_color_tree, voxelizer.h).
 *
 * 1. Parts. Each triangle is cut into its parts in the finest voxels (color_clip.h). Each part of
 *    positive area gives a record: the voxel's Morton code, the triangle's index, the part's area
 *    A and, over the part, A * mean(alpha * rgb) and A * mean(alpha), rgb in linear light.
 *    Triangles are handed to the threads in chunks of COLOR_CHUNK; each chunk's records go to a
 *    block of their own (charged against the memory limit as they are made), gathered in chunk
 *    order afterwards, so their order does not depend on the thread count.
 *    (The streaming build makes the same records block by block, each block's from the
 *    triangles of its bin clipped against its box: color_block.c.)
 * 2. The colour of a part (color_part.h, shared with the GPU): a material colour is constant;
 *    vertex colours are linear over the triangle, so their mean over a part is their value at its
 *    centroid; a texture is
 *    filtered over the part's footprint at the texel rate of that footprint: the part's UV polygon
 *    spans A0 texels, the fan triangles of the part are split at their edge midpoints into S
 *    equal sub-triangles (S about 4 A0, at most 32), and each is sampled bilinearly at its
 *    centroid on the mip level where the footprint spans at most S texels (color_tex.h),
 *    weighted by its area; a part within half a texel takes the bilinear value of level 0 at
 *    its centroid. (Against the densely sampled footprint mean of a noise texture, the worst
 *    case, voxels of 8 texels down to half a texel are within 1 step of 8-bit sRGB on average
 *    and 4 at worst: tests/test_voxelizer_color.c.) Textures of MASK and BLEND materials are
 *    filtered with alpha weights (color_tex.h). Alpha per sample: opaque
 *    materials 1, MASK 1 where the sample's alpha >= the cutoff and 0 elsewhere (on level 0; a
 *    coarser level's alpha is the share of opaque texels below it and is used as such), BLEND
 *    the alpha itself. What the importer should not hand over is tolerated: a material index
 *    out of range is opaque white, a texture out of range or without UVs leaves the material's
 *    colour (or the vertex colours), a non-finite UV is 0.
 * 3. Sums. Records are sorted by (code, triangle) (a stable radix sort on the code of records
 *    made in triangle order) - a total order, so the sums below are the same whatever the thread
 *    count - and reduced per voxel, then level by level upwards (code >> 3):
 *    sums of A, of A alpha and of A alpha rgb for every cell some part reached. Mean filter: a
 *    cell's colour is sum(A alpha rgb) / sum(A alpha), its alpha sum(A alpha) / sum(A) (at least
 *    1/255 when some of it is opaque). Dominant filter: a voxel takes the colour of its part with
 *    the largest opaque area A alpha (ties: the lowest triangle index), a node the colour of its
 *    child with the largest opaque area (ties: the first in Morton order); alpha as above. A
 *    part's colour is then a point of it (color_part.h: the texel under its centre, not a
 *    filtered mean), so no colour is invented, at material borders or within a texture.
 * 4. The tree is walked level by level (each level in Morton order, so the cells' codes come in
 *    increasing order and are matched to the sums by one merge). A cell no part reached takes its
 *    parent's colour with alpha 255; a cell whose parts are all cut out has alpha 0 and its
 *    parent's rgb. The pruned leaves of a pruned tree get the sums of the subtree they replaced,
 *    as their codes' prefix gathers them.
 */
#include "voxelizer/voxelizer.h"
#include "voxelizer/color_tex.h"

#define CPART_LEVEL(view, level) ctex_cpu_level(view, level, lut)
#include "voxelizer/color_part.h"
#include "voxelizer/internal.h"
#include "svo/color.h"
#include "sys/system.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define COLOR_CHUNK 64u /* triangles per work item (a large triangle has many parts) */

typedef struct cjob {
  const vx_soup *soup;
  vx_transform xf;
  uint32_t R;
  cpart_src src;        /* the soup's colour, the views of its textures */
  const float *lut;     /* the 256 sRGB codes in linear light */
  uint64_t chunks;
  crec **chunk_recs;    /* per chunk: its records, in triangle order */
  uint64_t *count;      /* per chunk: how many, then the offset of its first in recs */
  crec *recs;           /* all of them, chunk after chunk */
  uint64_t cap;         /* bytes the chunks' records may hold (0: no limit) */
  atomic_uint_fast64_t held;
  atomic_int fail;      /* VX_ERR_LIMIT or VX_ERR_NOMEM: stop */
} cjob;

typedef struct emit_ctx {
  const cjob *j;
  const ctri *ti;
  crec *buf; /* the chunk's records: n of cap */
  uint64_t n, cap;
  int nomem;
  uint32_t tri;
  int plane; /* the axis of the inner grid plane the triangle lies on, or -1 */
} emit_ctx;

static void emit_part(void *vctx, const clip_poly *P, double area, uint32_t x, uint32_t y,
                      uint32_t z) {
  emit_ctx *e = (emit_ctx *)vctx;
  if (e->nomem) return;
  if (e->n + 2 > e->cap) {
    uint64_t cap = e->cap * 2 + 16;
    crec *b = (crec *)vx_realloc(e->buf, (size_t)cap * sizeof(crec));
    if (!b) {
      e->nomem = 1;
      return;
    }
    e->buf = b;
    e->cap = cap;
  }
  e->n += (uint64_t)cpart_records(e->j->lut, e->ti, P, area, x, y, z, e->plane, e->tri,
                                  &e->buf[e->n]);
}

/* The records of one chunk of triangles, into a block of their own, charged against j->cap. */
static void run_chunk(void *ctx, uint64_t chunk) {
  cjob *j = (cjob *)ctx;
  if (atomic_load(&j->fail)) return;
  uint64_t t0 = chunk * COLOR_CHUNK, t1 = t0 + COLOR_CHUNK;
  if (t1 > j->soup->tri_count) t1 = j->soup->tri_count;
  emit_ctx e;
  memset(&e, 0, sizeof e);
  e.j = j;
  for (uint64_t t = t0; t < t1 && !e.nomem; t++) {
    double g[9];
    vx_grid_tri(j->soup, &j->xf, t, g);
    /* parts below this share of the triangle are round-off (an edge on a grid plane) */
    double min_area = vx_grid_tri_area(g) * 1e-12;
    ctri ti;
    cpart_tri(&j->src, t, &ti);
    e.ti = &ti;
    e.tri = (uint32_t)t;
    e.plane = clip_on_plane(g, j->R);
    clip_triangle(g, j->R, min_area, -1, emit_part, &e);
  }
  if (!e.nomem && e.n < e.cap) { /* give back the slack */
    crec *b = (crec *)vx_realloc(e.buf, (size_t)(e.n ? e.n : 1) * sizeof(crec));
    if (b) e.buf = b;
  }
  uint64_t held = atomic_fetch_add(&j->held, e.n * sizeof(crec)) + e.n * sizeof(crec);
  if (e.nomem || (j->cap && held > j->cap)) {
    int none = 0;
    atomic_compare_exchange_strong(&j->fail, &none, e.nomem ? VX_ERR_NOMEM : VX_ERR_LIMIT);
  }
  j->chunk_recs[chunk] = e.buf;
  j->count[chunk] = e.n;
}

/* Copies a chunk's records to their place in recs and frees its block. */
static void gather_chunk(void *ctx, uint64_t chunk) {
  cjob *j = (cjob *)ctx;
  if (j->chunk_recs[chunk])
    memcpy(j->recs + j->count[chunk], j->chunk_recs[chunk],
           (size_t)(j->count[chunk + 1] - j->count[chunk]) * sizeof(crec));
  vx_free(j->chunk_recs[chunk]);
  j->chunk_recs[chunk] = NULL;
}

vx_status color_source_open(color_source *cs, const vx_soup *soup, vx_color_filter filter,
                            vx_error *err) {
  memset(cs, 0, sizeof *cs);
  const vx_soup_color *sc = soup->color;
  const uint32_t nt = sc->texture_count ? sc->texture_count : 1;
  cs->soup = soup;
  cs->filter = filter;
  ctex_lut(cs->lut);
  cs->tex = (ctex *)vx_calloc(nt, sizeof(ctex));
  cs->views = (ctex_view *)vx_calloc(nt, sizeof(ctex_view));
  cs->used = (uint8_t *)vx_calloc(nt, 1);
  if (!cs->tex || !cs->views || !cs->used) {
    color_source_close(cs);
    return vx_error_set(err, VX_ERR_NOMEM, "colour pass: out of memory");
  }
  /* the textures some triangle uses, and their pyramids' size */
  if (sc->texture_count && sc->textures && sc->uv && sc->materials) {
    for (uint64_t i = 0; i < soup->tri_count; i++) {
      uint32_t mi = sc->material ? sc->material[i] : 0;
      if (mi >= sc->material_count) continue;
      int32_t ti = sc->materials[mi].texture;
      if (ti >= 0 && (uint32_t)ti < sc->texture_count)
        cs->used[ti] |= sc->materials[mi].alpha_mode == VX_ALPHA_OPAQUE ? 1 : 2;
    }
    for (uint32_t i = 0; i < sc->texture_count; i++) {
      const vx_texture *x = &sc->textures[i];
      if (!cs->used[i] || !x->rgba || x->width == 0 || x->height == 0 ||
          (uint64_t)x->width * x->height > ((uint64_t)1 << 32))
        cs->used[i] = 0;
      else
        cs->mip_bytes += ctex_mip_texels(x->width, x->height) * 4;
    }
  }
  return VX_OK;
}

void color_source_start(color_source *cs) {
  const vx_soup_color *sc = cs->soup->color;
  for (uint32_t i = 0; i < sc->texture_count; i++)
    if (cs->used[i]) ctex_init(&cs->tex[i], &cs->views[i], &sc->textures[i], cs->used[i] >> 1);
  cs->started = 1;
  cs->src.material = sc->material;
  cs->src.materials = sc->materials;
  cs->src.material_count = sc->material_count;
  cs->src.texture_count = sc->texture_count;
  cs->src.uv = sc->uv;
  cs->src.corner_rgba = sc->corner_rgba;
  cs->src.tex = cs->views;
  cs->src.lut = cs->lut;
  cs->src.dominant = cs->filter == VX_COLOR_FILTER_DOMINANT;
}

void color_source_close(color_source *cs) {
  for (uint32_t i = 0; cs->started && i < cs->soup->color->texture_count; i++)
    ctex_free(&cs->tex[i]);
  vx_free(cs->tex);
  vx_free(cs->views);
  vx_free(cs->used);
  memset(cs, 0, sizeof *cs);
}

vx_status vx_color_tree(const vx_soup *soup, vx_octree *t, vx_color_filter filter, int threads,
                        uint64_t mem_limit, vx_error *err) {
  return vx_color_tree_ex(soup, t, filter, threads, mem_limit, 0, NULL, NULL, err);
}

vx_status vx_color_tree_ex(const vx_soup *soup, vx_octree *t, vx_color_filter filter, int threads,
                           uint64_t mem_limit, int gpu, int *on_gpu, vx_error *gpu_note,
                           vx_error *err) {
  if (on_gpu) *on_gpu = 0;
  if (!soup || !t) return vx_error_set(err, VX_ERR_INVALID_ARG, "colour pass: no mesh or tree");
  if (!soup->color || soup->tri_count == 0) return VX_OK;
  if (filter != VX_COLOR_FILTER_MEAN && filter != VX_COLOR_FILTER_DOMINANT)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "unknown colour filter %d", (int)filter);
  if (!t->nodes || t->depth < VX_MIN_DEPTH || t->depth > VX_MAX_DEPTH ||
      t->levels_loaded != t->depth + 1 || t->level_count[0] != 1)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "colour pass needs a whole tree in memory");
  if (soup->tri_count > UINT32_MAX)
    return vx_error_set(err, VX_ERR_LIMIT, "colour pass: more than 2^32 triangles");
  const vx_soup_color *sc = soup->color;
  const uint32_t D = t->depth;
  vx_status st = VX_OK;
  cjob j;
  memset(&j, 0, sizeof j);
  j.soup = soup;
  j.xf = t->xf;
  j.R = 1u << D;
  j.chunks = (soup->tri_count + COLOR_CHUNK - 1) / COLOR_CHUNK;
  color_source cs;
  vx_status cst = color_source_open(&cs, soup, filter, err);
  if (cst != VX_OK) return cst;
  j.lut = cs.lut;
  j.count = (uint64_t *)vx_calloc((size_t)j.chunks + 1, sizeof(uint64_t));
  j.chunk_recs = (crec **)vx_calloc((size_t)j.chunks, sizeof(crec *));
  atomic_init(&j.held, 0);
  atomic_init(&j.fail, 0);
  csum *sums[VX_MAX_DEPTH + 1];
  uint64_t nsum[VX_MAX_DEPTH + 1];
  memset(sums, 0, sizeof sums);
  memset(nsum, 0, sizeof nsum);
  uint64_t *codes = NULL, *next_codes = NULL;
  uint32_t *ncol = NULL, *vcol = NULL;
  if (!j.count || !j.chunk_recs) {
    st = vx_error_set(err, VX_ERR_NOMEM, "colour pass: out of memory");
    goto done;
  }
  const uint64_t mip_bytes = cs.mip_bytes;
  uint64_t widest = 1;
  for (uint32_t l = 0; l <= D; l++)
    if (t->level_count[l] > widest) widest = t->level_count[l];
  /* besides the records (32 B each, twice while they are gathered and sorted) and the voxels'
   * sums (48 B per voxel a part reached): the upper levels' sums, the colours, the walk's codes,
   * the mips */
  const double fixed = (double)t->node_count * sizeof(csum) +
                       (double)(t->node_count + t->voxel_count) * 4.0 + (double)widest * 16.0 +
                       (double)mip_bytes;
  /* per record, while the records are made, gathered (blocks and array) and sorted (array and
   * scratch): twice its size; the voxels' sums are charged once counted */
  const double per_rec = 2.0 * sizeof(crec);
  double left = 0.0;
  if (mem_limit) {
    double rss = (double)vx_resident_bytes(), lim = (double)mem_limit;
    left = rss < lim ? lim - rss : 0.0;
    /* refused at once when even the fewest parts cannot fit: a part lies in one voxel, whose
     * plane sections are at most sqrt 2 in area */
    double fewest = vx_soup_grid_area(soup, &t->xf) / sqrt(2.0);
    if (fixed + fewest * per_rec > left) {
      char a[32], b[32];
      st = vx_error_set(err, VX_ERR_LIMIT, "colour needs at least %s for %.0f triangle parts; "
                        "the memory limit leaves %s",
                        vx_bytes_text(fixed + fewest * per_rec, a, sizeof a), fewest,
                        vx_bytes_text(left, b, sizeof b));
      goto done;
    }
    double room = left - fixed;
    j.cap = room > 0.0 ? (uint64_t)(room / per_rec * sizeof(crec)) : 1;
  }
  color_source_start(&cs);
  j.src = cs.src;
  uint64_t nrec = 0;
  int gpu_done = 0, gpu_sorted = 0;
  if (gpu) { /* the records on the GPU, which needs every level of the pyramids */
    vx_error ge;
    memset(&ge, 0, sizeof ge);
    vx_status gs = VX_OK;
    for (uint32_t i = 0; i < sc->texture_count && gs == VX_OK; i++)
      if (cs.used[i] && !ctex_mips(&cs.tex[i], j.lut))
        gs = vx_error_set(&ge, VX_ERR_NOMEM, "no memory for the textures' mip levels");
    if (gs == VX_OK)
      gs = color_records_gpu(soup, &j.xf, j.R, &j.src, NULL,
                             mem_limit ? j.cap / sizeof(crec) : UINT64_MAX, NULL, &j.recs, &nrec,
                             &gpu_sorted, NULL, &ge);
    if (gs == VX_ERR_LIMIT) {
      char a[32], b[32];
      st = vx_error_set(err, VX_ERR_LIMIT, "colour needs %s for %llu triangle parts; the memory "
                        "limit leaves %s",
                        vx_bytes_text(fixed + (double)nrec * per_rec, a, sizeof a),
                        (unsigned long long)nrec, vx_bytes_text(left, b, sizeof b));
      goto done;
    }
    if (gs == VX_OK) gpu_done = 1;
    else if (gpu_note) *gpu_note = ge; /* the CPU makes them instead */
  }
  if (!gpu_done) {
    /* the records, chunk by chunk, then gathered in chunk order */
    vx_items_run(threads, j.chunks, run_chunk, &j);
    for (uint64_t c = 0; c < j.chunks; c++) {
      uint64_t n = j.count[c];
      j.count[c] = nrec;
      nrec += n;
    }
    j.count[j.chunks] = nrec;
    if (atomic_load(&j.fail) == VX_ERR_LIMIT) {
      char a[32], b[32];
      double seen = fixed + (double)atomic_load(&j.held) / sizeof(crec) * per_rec;
      st = vx_error_set(err, VX_ERR_LIMIT, "colour needs more than %s for its triangle parts; "
                        "the memory limit leaves %s", vx_bytes_text(seen, a, sizeof a),
                        vx_bytes_text(left, b, sizeof b));
      goto done;
    }
    if (!atomic_load(&j.fail))
      j.recs = (crec *)vx_malloc((size_t)(nrec ? nrec : 1) * sizeof(crec));
    if (!j.recs) {
      st = vx_error_set(err, VX_ERR_NOMEM, "colour pass: out of memory for %llu triangle parts",
                        (unsigned long long)nrec);
      goto done;
    }
    vx_items_run(threads, j.chunks, gather_chunk, &j);
  }
  if (!(gpu_done && gpu_sorted)) {
    crec *scratch = (crec *)vx_malloc((size_t)(nrec ? nrec : 1) * sizeof(crec));
    int sorted = scratch && color_sort(j.recs, scratch, nrec, 3 * D, threads);
    vx_free(scratch);
    if (!sorted) {
      st = vx_error_set(err, VX_ERR_NOMEM, "colour pass: out of memory to sort %llu parts",
                        (unsigned long long)nrec);
      goto done;
    }
  }
  /* sums, voxels (beside the records) then upwards (their share is in `fixed`) */
  int over = 0;
  double room = left - fixed - (double)nrec * sizeof(crec);
  sums[D] = color_reduce_voxels(j.recs, nrec, filter, threads,
                                mem_limit ? (room > 1.0 ? (uint64_t)room : 1) : 0, &nsum[D], &over);
  if (!sums[D]) {
    char a[32], b[32];
    st = over ? vx_error_set(err, VX_ERR_LIMIT, "colour needs %s for %llu triangle parts in %llu "
                             "voxels; the memory limit leaves %s",
                             vx_bytes_text(fixed + (double)nrec * sizeof(crec) +
                                           (double)nsum[D] * sizeof(csum), a, sizeof a),
                             (unsigned long long)nrec, (unsigned long long)nsum[D],
                             vx_bytes_text(left, b, sizeof b))
              : vx_error_set(err, VX_ERR_NOMEM, "colour pass: out of memory");
    goto done;
  }
  vx_free(j.recs);
  j.recs = NULL;
  for (uint32_t l = D; l > 0; l--) {
    sums[l - 1] = color_reduce_up(sums[l], nsum[l], filter, threads, 0, &nsum[l - 1], &over);
    if (!sums[l - 1]) {
      st = vx_error_set(err, VX_ERR_NOMEM, "colour pass: out of memory");
      goto done;
    }
  }
  /* the walk */
  ncol = (uint32_t *)vx_malloc((size_t)(t->node_count ? t->node_count : 1) * sizeof(uint32_t));
  vcol = (uint32_t *)vx_malloc((size_t)(t->voxel_count ? t->voxel_count : 1) * sizeof(uint32_t));
  codes = (uint64_t *)vx_malloc((size_t)widest * sizeof(uint64_t));
  next_codes = (uint64_t *)vx_malloc((size_t)widest * sizeof(uint64_t));
  if (!ncol || !vcol || !codes || !next_codes) {
    st = vx_error_set(err, VX_ERR_NOMEM, "colour pass: out of memory");
    goto done;
  }
  st = color_walk(t, sums, nsum, filter, ncol, vcol, codes, next_codes, threads, err);
  if (st != VX_OK) goto done;
  vx_free(t->node_color);
  vx_free(t->voxel_color);
  t->node_color = ncol;
  t->voxel_color = vcol;
  ncol = vcol = NULL;
  if (on_gpu) *on_gpu = gpu_done;
done:
  color_source_close(&cs);
  for (uint64_t c = 0; j.chunk_recs && c < j.chunks; c++) vx_free(j.chunk_recs[c]);
  vx_free(j.chunk_recs);
  vx_free(j.count);
  vx_free(j.recs);
  for (uint32_t l = 0; l <= D; l++) vx_free(sums[l]);
  vx_free(codes);
  vx_free(next_codes);
  vx_free(ncol);
  vx_free(vcol);
  return st;
}
