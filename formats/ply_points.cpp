/* SPDX-License-Identifier: Apache-2.0 */
/* ply_points.cpp - a cut as a PLY point cloud through assimp's exporter ("plyb": binary
 * little-endian PLY, x y z nx ny nz as floats, an empty face list), to memory, then the atomic
 * writer. C++ because only Assimp::Exporter takes AI_CONFIG_EXPORT_POINT_CLOUDS, which lets a mesh
 * without faces through the exporter's validation.
 *
 * Points: one per cut cell, at its centre, or (surface) the centre moved one Newton step onto the
 * zero set of the cell's trilinear field, p - f(p) g / |g|^2, kept inside the cell. The normal is
 * the field's gradient there, normalised (+z where it vanishes). The scene handed to assimp is
 * built here; its vertex and normal arrays are ours (vx_malloc) and are detached before the scene
 * is destroyed, so assimp frees only what it allocated.
 *
 * Colour: a coloured cut gives each point its cell's colour as uchar red green blue alpha (sRGB,
 * alpha linear), and cells whose colour has alpha 0 (holes) no point.
 */
#include <assimp/Exporter.hpp>
#include <assimp/config.h>
#include <assimp/scene.h>

#include <cmath>
#include <cstring>
#include <new>

#include <string>

#include "sys/atomic_file.h"
#include "formats/grid_export.h"
#include "formats/mesh_export.h"

namespace {

void point_of(const vx_cut *c, uint64_t i, int surface, aiVector3D *p, aiVector3D *n) {
  uint32_t x, y, z;
  vx_morton_decode(c->codes[i], &x, &y, &z);
  double u[3] = {0.5, 0.5, 0.5}, g[3];
  float f = vx_cut_sample(c, i, u, g);
  double gg = g[0] * g[0] + g[1] * g[1] + g[2] * g[2];
  if (surface && gg > 0.0) {
    for (int k = 0; k < 3; k++) {
      u[k] -= (double)f * g[k] / gg;
      u[k] = u[k] < 0.0 ? 0.0 : u[k] > 1.0 ? 1.0 : u[k];
    }
    vx_cut_sample(c, i, u, g);
    gg = g[0] * g[0] + g[1] * g[1] + g[2] * g[2];
  }
  const double cell[3] = {(double)x, (double)y, (double)z};
  for (int k = 0; k < 3; k++) (*p)[k] = (float)(c->origin[k] + (cell[k] + u[k]) * c->h);
  if (gg > 0.0) {
    double l = std::sqrt(gg);
    *n = aiVector3D((float)(g[0] / l), (float)(g[1] / l), (float)(g[2] / l));
  } else {
    *n = aiVector3D(0.0f, 0.0f, 1.0f);
  }
}

}  // namespace

extern "C" vx_status vx_ply_points_write(const char *path, const vx_cut *c, int surface,
                                         uint64_t *bytes, vx_error *err) {
  *bytes = 0;
  if (c->count > 0xffffffffu)
    return vx_error_set(err, VX_ERR_LIMIT, "%llu points: more than a PLY vertex count holds here",
                        (unsigned long long)c->count);
  unsigned n = 0;
  for (uint64_t i = 0; i < c->count; i++) n += !c->rgba || (c->rgba[i] >> 24) != 0;
  if (n == 0)
    return vx_error_set(err, VX_ERR_EMPTY, "every cell is cut out (alpha 0): no point to write");
  aiVector3D *pos = (aiVector3D *)vx_malloc((size_t)n * sizeof(aiVector3D));
  aiVector3D *nrm = (aiVector3D *)vx_malloc((size_t)n * sizeof(aiVector3D));
  if (!pos || !nrm) {
    vx_free(pos);
    vx_free(nrm);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for %u points", n);
  }
  for (uint64_t i = 0, j = 0; i < c->count; i++)
    if (!c->rgba || (c->rgba[i] >> 24) != 0) point_of(c, i, surface, &pos[j], &nrm[j]), j++;
  vx_status s = VX_OK;
  aiScene *scene = nullptr;
  aiMesh *mesh = nullptr;
  try {
    scene = new aiScene();
    scene->mRootNode = new aiNode("voxlod");
    scene->mRootNode->mNumMeshes = 1;
    scene->mRootNode->mMeshes = new unsigned[1]{0};
    scene->mNumMaterials = 1;
    scene->mMaterials = new aiMaterial *[1] { new aiMaterial() };
    mesh = new aiMesh();
    mesh->mPrimitiveTypes = aiPrimitiveType_POINT;
    mesh->mNumVertices = n;
    mesh->mVertices = pos;
    mesh->mNormals = nrm;
    if (c->rgba) { /* owned by the mesh: assimp frees it */
      mesh->mColors[0] = new aiColor4D[n];
      for (uint64_t i = 0, j = 0; i < c->count; i++) {
        uint32_t v = c->rgba[i];
        if (!(v >> 24)) continue;
        mesh->mColors[0][j++] = aiColor4D((v & 255u) / 255.0f, (v >> 8 & 255u) / 255.0f,
                                          (v >> 16 & 255u) / 255.0f, (v >> 24) / 255.0f);
      }
    }
    scene->mNumMeshes = 1;
    scene->mMeshes = new aiMesh *[1] { mesh };
    Assimp::Exporter ex;
    Assimp::ExportProperties props;
    props.SetPropertyBool(AI_CONFIG_EXPORT_POINT_CLOUDS, true);
    const aiExportDataBlob *blob = ex.ExportToBlob(scene, "plyb", 0, &props);
    if (!blob || !blob->data)
      s = vx_error_set(err, VX_ERR_FORMAT, "assimp cannot write the point cloud: %s",
                       ex.GetErrorString());
    else if (c->rgba) {
      std::string ply((const char *)blob->data, blob->size);
      if (!vx_ply_colors_to_bytes(ply, n, 0, true))
        s = vx_error_set(err, VX_ERR_FORMAT, "assimp's PLY has an unexpected vertex layout");
      else if ((s = vx_atomic_write_file(path, ply.data(), ply.size(), err)) == VX_OK)
        *bytes = ply.size();
    } else if ((s = vx_atomic_write_file(path, blob->data, blob->size, err)) == VX_OK)
      *bytes = blob->size;
  } catch (const std::bad_alloc &) {
    s = vx_error_set(err, VX_ERR_NOMEM, "out of memory exporting %u points", n);
  } catch (const std::exception &e) {
    s = vx_error_set(err, VX_ERR_FORMAT, "assimp: %s", e.what());
  }
  if (mesh) { /* our arrays: detached before assimp's destructors run */
    mesh->mVertices = nullptr;
    mesh->mNormals = nullptr;
  }
  const bool attached = scene && scene->mMeshes;
  delete scene;
  if (!attached) delete mesh;
  vx_free(pos);
  vx_free(nrm);
  return s;
}
