/* SPDX-License-Identifier: Apache-2.0 */
/* mesh_material.h - the colour of an assimp scene: its materials and textures resolved into the
 * form of svo/soup.h (vx_soup_color), for mesh_import.c to attach per triangle. Internal to
 * formats/ (includes assimp's types only by name). */
#ifndef VOXLOD_FORMATS_MESH_MATERIAL_H
#define VOXLOD_FORMATS_MESH_MATERIAL_H

#include <stdint.h>
#include "svo/soup.h"

VX_EXTERN_C_BEGIN

struct aiScene;

typedef struct vx_scene_color {
  vx_soup_color *color; /* tables filled, no triangle yet; NULL: the scene has no colour */
  /* per assimp material i: [2i] the soup material of a mesh with UV channel 0, [2i + 1] of one
   * without (no texture can apply) */
  uint32_t *mat_index;
  /* per assimp material i: corner colour of a triangle without vertex colours, the same two ways */
  uint32_t *mat_rgba;
  /* glTF: a vertex colour is multiplied by the material's base colour factor (linear RGBA,
   * [4i..4i+3]); NULL otherwise */
  float *vc_factor;
  /* per assimp material i: the affine map of UV channel 0 for meshes with UVs, in the soup's UV
   * convention, [6i..6i+5]: u' = m0 u + m1 v + m2, v' = m3 u + m4 v + m5 (the identity for a
   * material without one); NULL when no material has one */
  double *uv_xform;
  uint32_t material_count; /* the scene's */
  int want_uv;   /* some soup material has a texture: UVs go with every triangle */
  int want_rgba; /* some mesh has vertex colours that a triangle uses: corner colours for all */
  int gltf;      /* glTF / GLB: colours are linear, vertex colours as glTF defines them */
} vx_scene_color;

/* Builds the colour of sc. path: the mesh file (its folder holds external textures; NULL: a mesh
 * from memory, whose external textures are not read); ext: its format's extension ("glb", "obj",
 * ...; NULL: unknown). Textures that cannot be found or decoded, UV transforms not applied
 * and tables past their caps are warnings in out->color->warnings; errors are only VX_ERR_NOMEM and
 * VX_ERR_LIMIT (more distinct materials than VX_COLOR_MAX_MATERIALS). */
vx_status vx_scene_color_build(const struct aiScene *sc, const char *path, const char *ext,
                               vx_scene_color *out, vx_error *err);

/* Frees what out holds except out->color when the caller took it (set it to NULL). */
void vx_scene_color_release(vx_scene_color *out);

VX_EXTERN_C_END

#endif
