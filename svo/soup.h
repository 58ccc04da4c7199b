/* SPDX-License-Identifier: Apache-2.0 */
/* mesh.h - the triangle soup every importer produces and the voxelizer consumes.
 *
 * Owned by the caller that filled it; vx_soup_free() releases it (no-op on a zeroed mesh).
 * Positions are world coordinates with node transforms applied, 9 floats per triangle.
 */
#ifndef VOXLOD_SVO_SOUP_H
#define VOXLOD_SVO_SOUP_H

#include <stdint.h>
#include "svo/svo.h"

VX_EXTERN_C_BEGIN

typedef struct vx_soup {
  float *pos;         /* tri_count * 9 floats: v0 v1 v2, xyz each */
  uint64_t tri_count; /* triangles kept */
  double bbox_min[3], bbox_max[3];
  /* what the importer dropped, for the user: */
  uint64_t skipped_degenerate; /* zero-area (collapsed) triangles */
  uint64_t skipped_nonfinite;  /* triangles with a NaN/Inf coordinate */
  uint64_t skipped_nontriangle;/* points and lines */
  uint32_t mesh_count;         /* meshes in the scene (instances counted) */
  struct vx_soup_color *color; /* NULL: no colour (a grey tree); else owned, freed with the soup */
} vx_soup;

/* Colour of a triangle soup: a material table, decoded textures, and per triangle its material
 * with per-corner UVs and colours. The colour of a point with barycentric weights w on triangle t:
 *   m = materials[material[t]]
 *   m.texture >= 0: m.factor x texture(sum w_k uv[t][k])   (UV channel 0, wrapped: repeat)
 *   else, corner_rgba set: sum w_k corner_rgba[t][k]       (vertex colours, channel 0)
 *   else: m.factor                                         (the material's own colour)
 * Products and sums in linear light (svo/color.h). Alpha: m.alpha_mode says how the alpha of that
 * colour is used (opaque: ignored; mask: opaque when >= m.alpha_cutoff, else a hole; blend:
 * weights the colour). The importer resolves precedence (base colour before diffuse, texture before
 * vertex colours before material colour) into this form. */
enum { VX_ALPHA_OPAQUE = 0, VX_ALPHA_MASK = 1, VX_ALPHA_BLEND = 2 };

typedef struct vx_material {
  uint32_t factor;      /* packed RGBA8 (svo/color.h) */
  int32_t texture;      /* index into textures[], or -1 */
  uint32_t alpha_mode;  /* VX_ALPHA_* */
  float alpha_cutoff;   /* VX_ALPHA_MASK: opaque at alpha >= cutoff (glTF default 0.5) */
} vx_material;

typedef struct vx_texture {
  uint32_t width, height; /* >= 1 each */
  uint32_t *rgba;         /* width * height packed RGBA8, rows as the image file stores them (top
                             first); uv (0,0) is the bottom-left corner of the image (assimp's
                             convention for every format), uv (1,1) the top-right */
} vx_texture;

typedef struct vx_soup_color {
  vx_material *materials; /* material_count entries */
  uint32_t material_count;
  vx_texture *textures;   /* texture_count entries */
  uint32_t texture_count;
  uint32_t *material;     /* tri_count: index into materials[] */
  float *uv;              /* tri_count * 6 (u, v per corner), or NULL when no material has a texture */
  uint32_t *corner_rgba;  /* tri_count * 3 packed RGBA8, or NULL when no triangle has vertex colours */
  char *warnings;         /* NUL-terminated lines for the user (a texture that could not be read,
                             ...), or NULL */
} vx_soup_color;

void vx_soup_color_free(vx_soup_color *c); /* frees c and what it owns; NULL is a no-op */

/* vx_soup_append for a coloured soup: the same triangles kept and dropped, with their attributes
 * (material: tri_count indices, uv6: tri_count * 6 floats or NULL, rgba3: tri_count * 3 packed
 * colours or NULL) appended to m->color in step. m->color must be set (its tables filled) before
 * the first call; uv/corner arrays are created on first use and back-filled (uv 0, corners
 * 0xffffffff) for triangles appended without them. Non-finite UVs become 0. */
vx_status vx_soup_append_color(vx_soup *m, const float *pos9, const uint32_t *material,
                               const float *uv6, const uint32_t *rgba3, uint64_t tri_count,
                               vx_error *err);

void vx_soup_free(vx_soup *m);

/* 1 when vx_soup_append keeps the triangle (9 floats: finite, not degenerate), else 0. */
int vx_soup_tri_usable(const float *pos9);
/* Why vx_soup_append keeps or drops it: VX_TRI_USABLE, VX_TRI_NONFINITE (a NaN or infinite
 * coordinate) or VX_TRI_DEGENERATE (zero area, in double). For a reader that fills a soup itself
 * (several threads checking pieces of it): the same filter, the same counts. */
enum { VX_TRI_USABLE = 0, VX_TRI_NONFINITE = 1, VX_TRI_DEGENERATE = 2 };
int vx_soup_tri_check(const float *pos9);

/* Appends triangles from flat float positions; drops degenerate and non-finite ones (counted),
 * grows the bbox. Fails only on allocation (VX_ERR_NOMEM) or count overflow (VX_ERR_LIMIT). */
vx_status vx_soup_append(vx_soup *m, const float *pos9, uint64_t tri_count, vx_error *err);

/* The n triangles already written at m->pos + 9 m->tri_count (a grey soup with room for them)
 * checked as vx_soup_append checks them, by ranges on `threads` threads (0: all cores): the
 * usable ones kept there in order, the others counted, the bbox grown (started afresh while no
 * triangle is kept). For readers that write triangles in place. Fails only on allocation. */
vx_status vx_soup_keep(vx_soup *m, uint64_t n, int threads, vx_error *err);

VX_EXTERN_C_END

#endif
