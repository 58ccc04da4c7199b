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
 * 2. The colour of a part (part_color): a material colour is constant; vertex colours are linear
 *    over the triangle, so their mean over a part is their value at its centroid; a texture is
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
 *    child with the largest opaque area (ties: the first in Morton order); alpha as above. So no
 *    colour is invented at a border between materials.
 * 4. The tree is walked level by level (each level in Morton order, so the cells' codes come in
 *    increasing order and are matched to the sums by one merge). A cell no part reached takes its
 *    parent's colour with alpha 255; a cell whose parts are all cut out has alpha 0 and its
 *    parent's rgb. The pruned leaves of a pruned tree get the sums of the subtree they replaced,
 *    as their codes' prefix gathers them.
 */
#include "voxelizer/voxelizer.h"
#include "voxelizer/color_clip.h"
#include "voxelizer/color_internal.h"
#include "voxelizer/color_tex.h"
#include "voxelizer/internal.h"
#include "svo/color.h"
#include "sys/system.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define COLOR_CHUNK 64u /* triangles per work item (a large triangle has many parts) */

enum { KIND_FLAT = 0, KIND_CORNER = 1, KIND_TEX = 2 };

typedef struct ctri { /* what the colour of one triangle needs */
  int kind;
  uint32_t alpha_mode;
  float cutoff;
  float factor[4]; /* linear */
  float corner[3][4];
  double uv[6];
  double texels; /* |det| of the barycentric -> texel map of level 0 (twice the UV triangle) */
  ctex *tex;
} ctri;

typedef struct cjob {
  const vx_soup *soup;
  const vx_soup_color *sc;
  vx_transform xf;
  uint32_t R;
  ctex *tex;       /* texture_count entries; levels == 0: unusable or unused */
  float lut[256];
  uint64_t chunks;
  crec **chunk_recs;    /* per chunk: its records, in triangle order */
  uint64_t *count;      /* per chunk: how many, then the offset of its first in recs */
  crec *recs;           /* all of them, chunk after chunk */
  uint64_t cap;         /* bytes the chunks' records may hold (0: no limit) */
  atomic_uint_fast64_t held;
  atomic_int fail;      /* VX_ERR_LIMIT or VX_ERR_NOMEM: stop */
} cjob;

static void unpack_linear(const float lut[256], uint32_t c, float out[4]) {
  out[0] = lut[c & 255u];
  out[1] = lut[c >> 8 & 255u];
  out[2] = lut[c >> 16 & 255u];
  out[3] = (float)(c >> 24) * (1.0f / 255.0f);
}

static void tri_setup(const cjob *j, uint64_t t, ctri *ti) {
  const vx_soup_color *sc = j->sc;
  static const vx_material white = {0xffffffffu, -1, VX_ALPHA_OPAQUE, 0.5f};
  const uint32_t mi = sc->material ? sc->material[t] : 0; /* no table of them: material 0 */
  const vx_material *m = sc->materials && mi < sc->material_count ? &sc->materials[mi] : &white;
  ti->alpha_mode = m->alpha_mode;
  ti->cutoff = m->alpha_cutoff;
  unpack_linear(j->lut, m->factor, ti->factor);
  ti->tex = NULL;
  if (m->texture >= 0 && (uint32_t)m->texture < sc->texture_count && sc->uv &&
      j->tex[m->texture].levels > 0) {
    ti->kind = KIND_TEX;
    ti->tex = &j->tex[m->texture];
    for (int k = 0; k < 6; k++) {
      double u = (double)sc->uv[t * 6 + k];
      ti->uv[k] = isfinite(u) ? u : 0.0;
    }
    double W = (double)ti->tex->w[0], H = (double)ti->tex->h[0];
    double du1 = (ti->uv[2] - ti->uv[0]) * W, dv1 = (ti->uv[3] - ti->uv[1]) * H;
    double du2 = (ti->uv[4] - ti->uv[0]) * W, dv2 = (ti->uv[5] - ti->uv[1]) * H;
    ti->texels = fabs(du1 * dv2 - du2 * dv1);
    if (!isfinite(ti->texels)) ti->texels = 1e300;
  } else if (sc->corner_rgba) {
    ti->kind = KIND_CORNER;
    for (int k = 0; k < 3; k++) unpack_linear(j->lut, sc->corner_rgba[t * 3 + k], ti->corner[k]);
  } else {
    ti->kind = KIND_FLAT;
  }
}

static float alpha_of(const ctri *ti, float a, uint32_t level) {
  if (ti->alpha_mode == VX_ALPHA_MASK) return level == 0 ? (a >= ti->cutoff ? 1.0f : 0.0f) : a;
  if (ti->alpha_mode == VX_ALPHA_BLEND) return a < 0.0f ? 0.0f : (a > 1.0f ? 1.0f : a);
  return 1.0f;
}

/* The colour at barycentric (b1, b2), linear rgba before the alpha mode. */
static void sample_at(const cjob *j, const ctri *ti, double b1, double b2, uint32_t level,
                      float out[4]) {
  double b0 = 1.0 - b1 - b2;
  if (ti->kind == KIND_TEX) {
    double u = b0 * ti->uv[0] + b1 * ti->uv[2] + b2 * ti->uv[4];
    double v = b0 * ti->uv[1] + b1 * ti->uv[3] + b2 * ti->uv[5];
    if (!isfinite(u)) u = 0.0;
    if (!isfinite(v)) v = 0.0;
    ctex_bilinear(ti->tex, level, u, v, ti->alpha_mode != VX_ALPHA_OPAQUE, j->lut, out);
    for (int k = 0; k < 4; k++) out[k] *= ti->factor[k];
  } else if (ti->kind == KIND_CORNER) {
    for (int k = 0; k < 4; k++)
      out[k] = (float)(b0 * ti->corner[0][k] + b1 * ti->corner[1][k] + b2 * ti->corner[2][k]);
  } else {
    memcpy(out, ti->factor, sizeof ti->factor);
  }
}

/* Adds weight w of the sample at (b1, b2) to acc (alpha * rgb, alpha). */
static void accumulate(const cjob *j, const ctri *ti, double b1, double b2, uint32_t level,
                       double w, double acc[4]) {
  float s[4];
  sample_at(j, ti, b1, b2, level, s);
  double a = w * (double)alpha_of(ti, s[3], level);
  acc[0] += a * s[0];
  acc[1] += a * s[1];
  acc[2] += a * s[2];
  acc[3] += a;
}

/* Mean over part P of alpha * rgb and of alpha (out: 4 values per unit area). */
static void part_color(const cjob *j, const ctri *ti, const clip_poly *P, double out[4]) {
  out[0] = out[1] = out[2] = out[3] = 0.0;
  if (ti->kind == KIND_FLAT) {
    accumulate(j, ti, 0.0, 0.0, 0, 1.0, out);
    return;
  }
  /* the fan triangles in barycentric space, where areas are proportional to the 3D ones */
  double fan[CLIP_MAX], total = 0.0, c1 = 0.0, c2 = 0.0;
  const int nf = P->n - 2;
  for (int i = 0; i < nf; i++) {
    const double *p0 = P->v[0].b, *p1 = P->v[i + 1].b, *p2 = P->v[i + 2].b;
    double a = 0.5 * fabs((p1[0] - p0[0]) * (p2[1] - p0[1]) - (p2[0] - p0[0]) * (p1[1] - p0[1]));
    fan[i] = a;
    total += a;
    c1 += a * (p0[0] + p1[0] + p2[0]) / 3.0;
    c2 += a * (p0[1] + p1[1] + p2[1]) / 3.0;
  }
  if (!(total > 0.0)) {
    c1 = c2 = 0.0;
    for (int i = 0; i < P->n; i++) {
      c1 += P->v[i].b[0] / P->n;
      c2 += P->v[i].b[1] / P->n;
    }
    accumulate(j, ti, c1, c2, 0, 1.0, out);
    return;
  }
  c1 /= total;
  c2 /= total;
  double texels = ti->kind == KIND_TEX ? ti->texels * total : 0.0; /* the footprint, level 0 */
  int sampled = ti->kind == KIND_TEX ? texels >= 0.5 : ti->alpha_mode == VX_ALPHA_MASK;
  if (!sampled) { /* linear colours, or a footprint within one texel: the centroid */
    accumulate(j, ti, c1, c2, 0, 1.0, out);
    return;
  }
  /* about four samples per texel of the footprint, up to 32: each fan triangle split k times */
  const int kmax = nf <= 2 ? 2 : (nf <= 8 ? 1 : 0);
  const double want = ti->kind == KIND_TEX ? 4.0 * texels : 16.0;
  int k = 0;
  while (k < kmax && (double)(nf << (2 * k)) < want) k++;
  const int m = 1 << k;
  uint32_t level = 0;
  if (ti->kind == KIND_TEX) {
    const double S = (double)(nf * m * m);
    while (level + 1 < ti->tex->levels && texels > S * ldexp(1.0, 2 * (int)level)) level++;
    if (level > 0 && !ctex_mips(ti->tex, j->lut)) level = 0; /* no memory for them: level 0 */
  }
  for (int f = 0; f < nf; f++) {
    if (!(fan[f] > 0.0)) continue;
    const double *p0 = P->v[0].b, *p1 = P->v[f + 1].b, *p2 = P->v[f + 2].b;
    const double w = fan[f] / total / (double)(m * m);
    for (int a = 0; a < m; a++)
      for (int b = 0; a + b < m; b++)
        for (int down = 0; down < 2; down++) {
          if (down && a + b + 2 > m) continue;
          double s = ((double)a + (down ? 2.0 : 1.0) / 3.0) / m;
          double t = ((double)b + (down ? 2.0 : 1.0) / 3.0) / m;
          double b1 = p0[0] + s * (p1[0] - p0[0]) + t * (p2[0] - p0[0]);
          double b2 = p0[1] + s * (p1[1] - p0[1]) + t * (p2[1] - p0[1]);
          accumulate(j, ti, b1, b2, level, w, out);
        }
  }
}

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
  double c[4];
  part_color(e->j, e->ti, P, c);
  uint32_t xyz[3] = {x, y, z};
  int copies = e->plane >= 0 ? 2 : 1;
  double A = area / copies;
  for (int i = 0; i < copies; i++) {
    if (e->plane >= 0) xyz[e->plane] = (e->plane == 0 ? x : e->plane == 1 ? y : z) - 1 + i;
    crec *r = &e->buf[e->n++];
    r->code = vx_morton_encode(xyz[0], xyz[1], xyz[2]);
    r->tri = e->tri;
    r->area = (float)A;
    for (int k = 0; k < 3; k++) r->rgb[k] = (float)(A * c[k]);
    r->a = (float)(A * c[3]);
  }
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
    tri_setup(j, t, &ti);
    e.ti = &ti;
    e.tri = (uint32_t)t;
    e.plane = clip_on_plane(g, j->R);
    clip_triangle(g, j->R, min_area, emit_part, &e);
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

vx_status vx_color_tree(const vx_soup *soup, vx_octree *t, vx_color_filter filter, int threads,
                        uint64_t mem_limit, vx_error *err) {
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
  j.sc = sc;
  j.xf = t->xf;
  j.R = 1u << D;
  ctex_lut(j.lut);
  j.chunks = (soup->tri_count + COLOR_CHUNK - 1) / COLOR_CHUNK;
  ctex *tex = (ctex *)vx_calloc(sc->texture_count ? sc->texture_count : 1, sizeof(ctex));
  uint8_t *used = (uint8_t *)vx_calloc(sc->texture_count ? sc->texture_count : 1, 1);
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
  if (!tex || !used || !j.count || !j.chunk_recs) {
    st = vx_error_set(err, VX_ERR_NOMEM, "colour pass: out of memory");
    goto done;
  }
  j.tex = tex;
  /* the textures some triangle uses, and their pyramids' size */
  uint64_t mip_bytes = 0;
  if (sc->texture_count && sc->textures && sc->uv && sc->materials) {
    for (uint64_t i = 0; i < soup->tri_count; i++) {
      uint32_t mi = sc->material ? sc->material[i] : 0;
      if (mi >= sc->material_count) continue;
      int32_t ti = sc->materials[mi].texture;
      if (ti >= 0 && (uint32_t)ti < sc->texture_count)
        used[ti] |= sc->materials[mi].alpha_mode == VX_ALPHA_OPAQUE ? 1 : 2;
    }
    for (uint32_t i = 0; i < sc->texture_count; i++) {
      const vx_texture *x = &sc->textures[i];
      if (!used[i] || !x->rgba || x->width == 0 || x->height == 0 ||
          (uint64_t)x->width * x->height > ((uint64_t)1 << 32))
        used[i] = 0;
      else
        mip_bytes += ctex_mip_texels(x->width, x->height) * 4;
    }
  }
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
  for (uint32_t i = 0; i < sc->texture_count; i++)
    if (used[i]) ctex_init(&tex[i], &sc->textures[i], used[i] >> 1);
  /* the records, chunk by chunk, then gathered in chunk order */
  color_parallel(threads, j.chunks, run_chunk, &j);
  uint64_t nrec = 0;
  for (uint64_t c = 0; c < j.chunks; c++) {
    uint64_t n = j.count[c];
    j.count[c] = nrec;
    nrec += n;
  }
  j.count[j.chunks] = nrec;
  if (atomic_load(&j.fail) == VX_ERR_LIMIT) {
    char a[32], b[32];
    double seen = fixed + (double)atomic_load(&j.held) / sizeof(crec) * per_rec;
    st = vx_error_set(err, VX_ERR_LIMIT, "colour needs more than %s for its triangle parts; the "
                      "memory limit leaves %s", vx_bytes_text(seen, a, sizeof a),
                      vx_bytes_text(left, b, sizeof b));
    goto done;
  }
  if (!atomic_load(&j.fail)) j.recs = (crec *)vx_malloc((size_t)(nrec ? nrec : 1) * sizeof(crec));
  if (!j.recs) {
    st = vx_error_set(err, VX_ERR_NOMEM, "colour pass: out of memory for %llu triangle parts",
                      (unsigned long long)nrec);
    goto done;
  }
  color_parallel(threads, j.chunks, gather_chunk, &j);
  {
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
done:
  for (uint32_t i = 0; tex && i < sc->texture_count; i++) ctex_free(&tex[i]);
  vx_free(tex);
  vx_free(used);
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
