/* SPDX-License-Identifier: Apache-2.0 */
/* mesh_export.cpp - vx_mesh_write: an indexed triangle mesh through assimp's exporter to memory,
 * then the atomic writer (mesh_export.h lists the formats and what each refuses).
 *
 * C++ because a scene handed to Assimp::Exporter must be one assimp can copy and free: aiScene's
 * constructor sets up its private data, and the exporter copies the whole scene before it runs
 * (SceneCombiner), so the scene built here may borrow our arrays. The positions, normals and the
 * per-triangle index pointers point into the caller's arrays and are detached before the scene
 * is destroyed, so assimp frees only what it allocated (the face array, the node, the material).
 * Exceptions (std::bad_alloc, assimp's DeadlyExportError) become status codes here. Only the
 * formats listed below are offered, each one read back by another library in the tests.
 */
#include <assimp/Exporter.hpp>
#include <assimp/material.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>

#include <cstring>
#include <new>
#include <string>

#include "sys/atomic_file.h"
#include "svo/color.h"
#include "formats/mesh_export.h"

namespace {

/* The formats written: each is read back by an independent reader in the tests
 * (python/tests/test_mesh_formats.py: trimesh). Other assimp exporters are not offered: some
 * crash on a plain triangle mesh (.pbrt), others fail on it (.3mf) or write several files. */
struct format_rule {
  const char *ext;
  const char *id;
};
const format_rule formats[] = {
    {"obj", "objnomtl"}, {"ply", "plyb"}, {"stl", "stlb"}, {"glb", "glb2"}};
const char *const format_list = ".obj, .ply, .stl or .glb";

std::string lower(const char *s) {
  std::string e(s);
  for (char &c : e)
    if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
  return e;
}

std::string extension_of(const char *path) {
  const char *slash = std::strrchr(path, '/');
  const char *dot = std::strrchr(path, '.');
  if (!dot || (slash && dot < slash) || !dot[1]) return std::string();
  return lower(dot + 1);
}

/* Detaches the borrowed arrays before assimp's destructors run. */
struct scene_guard {
  aiScene *scene = nullptr;
  ~scene_guard() {
    if (!scene) return;
    if (scene->mMeshes && scene->mMeshes[0]) {
      aiMesh *m = scene->mMeshes[0];
      m->mVertices = nullptr;
      m->mNormals = nullptr;
      for (unsigned f = 0; m->mFaces && f < m->mNumFaces; f++) m->mFaces[f].mIndices = nullptr;
    }
    delete scene;
  }
};

}  // namespace

extern "C" vx_status vx_mesh_export_format(const char *path, const char *format, const char **id,
                                           const char **ext, vx_error *err) {
  *id = nullptr;
  if (ext) *ext = nullptr;
  if (!path || !*path) return vx_error_set(err, VX_ERR_INVALID_ARG, "no output file given");
  std::string e;
  if (format && *format) {
    e = lower(format[0] == '.' ? format + 1 : format);
  } else {
    e = extension_of(path);
    if (e.empty())
      return vx_error_set(err, VX_ERR_INVALID_ARG,
                          std::strcmp(path, "-") == 0
                              ? "'%s': standard output has no extension to choose the format by: "
                                "name the format (%s)"
                              : "'%s' has no file extension to choose the format by: meshes are "
                                "written as %s",
                          path, format_list);
  }
  for (const format_rule &r : formats)
    if (e == r.ext) {
      *id = r.id;
      if (ext) *ext = r.ext;
      return VX_OK;
    }
  if (e == "gltf")
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "'%s': .gltf keeps its data in a second file; write a .glb (one file)",
                        path);
  return vx_error_set(err, VX_ERR_INVALID_ARG,
                      "'%s': meshes are written as %s, not as '.%.32s'", path, format_list,
                      e.c_str());
}

/* assimp up to 5.4 (github.com/assimp/assimp/issues/3827, fixed in 5.4.2) declares binary PLY
 * colours as `uchar red green blue alpha` but writes four floats. The body is rewritten to what
 * the header declares when its length is that of the float layout; an exporter that writes bytes
 * is left alone.
 * Vertices hold 3 (+3 normals) floats and the colour, faces 1 + 3 * 4 bytes. */
bool vx_ply_colors_to_bytes(std::string &ply, uint64_t nv, uint64_t nf, bool normals) {
  const size_t end = ply.find("end_header\n");
  if (end == std::string::npos) return false;
  const size_t body = end + 11, pos = normals ? 24 : 12;
  const uint64_t faces = 13 * nf, have = ply.size() - body;
  if (have == nv * (pos + 4) + faces) return true;
  if (have != nv * (pos + 16) + faces) return false;
  std::string out;
  out.reserve(body + nv * (pos + 4) + faces);
  out.append(ply, 0, body);
  const char *v = ply.data() + body;
  for (uint64_t i = 0; i < nv; i++, v += pos + 16) {
    out.append(v, pos);
    for (int k = 0; k < 4; k++) {
      float f;
      std::memcpy(&f, v + pos + 4 * k, 4);
      out.push_back((char)vx_unorm8(f));
    }
  }
  out.append(v, faces);
  ply.swap(out);
  return true;
}

extern "C" vx_status vx_mesh_write(const char *path, const vx_mesh_data *m, uint64_t *bytes,
                                   vx_error *err) {
  return vx_mesh_write_as(path, nullptr, m, bytes, err);
}

extern "C" vx_status vx_mesh_write_as(const char *path, const char *format,
                                      const vx_mesh_data *m, uint64_t *bytes, vx_error *err) {
  if (bytes) *bytes = 0;
  const char *id = nullptr, *ext = nullptr;
  vx_status st = vx_mesh_export_format(path, format, &id, &ext, err);
  if (st != VX_OK) return st;
  if (!m || !m->pos || m->triangle_count == 0)
    return vx_error_set(err, VX_ERR_EMPTY, "'%s': the mesh has no triangles; nothing written",
                        path);
  const uint64_t nv = m->tri ? m->vertex_count : 3 * m->triangle_count;
  if (nv > 0xffffffffu || m->triangle_count > 0xffffffffu)
    return vx_error_set(err, VX_ERR_LIMIT,
                        "'%s': %llu vertices and %llu triangles: assimp holds at most 2^32 - 1 of "
                        "each in a mesh", path, (unsigned long long)nv,
                        (unsigned long long)m->triangle_count);
  if (!m->tri && m->vertex_count < nv)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "a triangle soup needs 3 vertices per triangle");
  if (std::strcmp(ext, "glb") == 0) {
    /* positions and normals (24 bytes a vertex), colours (16), indices (12 a triangle), JSON
     * and headers */
    double need = (m->rgba && m->tri ? 40.0 : 24.0) * (double)nv + 12.0 * (double)m->triangle_count + 65536.0;
    if (need >= 4294967296.0)
      return vx_error_set(err, VX_ERR_LIMIT,
                          "'%s': a .glb file holds at most 4 GiB and this mesh needs about %.1f "
                          "GiB; write a .ply or .obj instead", path, need / 1073741824.0);
  }
  /* Fail on the output's directory or kind before the (long) export. */
  st = vx_output_check(path, nullptr, 0, nullptr, err);
  if (st != VX_OK) return st;
  uint32_t *soup_idx = nullptr;
  try {
    scene_guard g;
    g.scene = new aiScene();
    aiScene *sc = g.scene;
    sc->mRootNode = new aiNode();
    sc->mRootNode->mName.Set("voxlod");
    sc->mRootNode->mNumMeshes = 1;
    sc->mRootNode->mMeshes = new unsigned int[1];
    sc->mRootNode->mMeshes[0] = 0;
    sc->mNumMaterials = 1;
    sc->mMaterials = new aiMaterial *[1];
    sc->mMaterials[0] = new aiMaterial();
    aiString name("voxlod");
    sc->mMaterials[0]->AddProperty(&name, AI_MATKEY_NAME);
    sc->mNumMeshes = 1;
    sc->mMeshes = new aiMesh *[1];
    sc->mMeshes[0] = nullptr;
    aiMesh *am = new aiMesh();
    sc->mMeshes[0] = am;
    am->mName.Set("voxlod");
    am->mPrimitiveTypes = aiPrimitiveType_TRIANGLE;
    am->mMaterialIndex = 0;
    am->mNumVertices = (unsigned)nv;
    am->mVertices = (aiVector3D *)const_cast<float *>(m->pos);
    if (m->nrm && m->tri) am->mNormals = (aiVector3D *)const_cast<float *>(m->nrm);
    if (m->rgba && m->tri) {
      /* Vertex colours, owned by the mesh (assimp frees them). glTF's COLOR_0 is linear, so
       * .glb gets linear values (written as float VEC4 by assimp); PLY (uchar red green blue
       * alpha) and OBJ (`v x y z r g b`, 0..1) get the sRGB values as image tools write them. */
      const bool linear = std::strcmp(ext, "glb") == 0;
      am->mColors[0] = new aiColor4D[nv];
      for (uint64_t i = 0; i < nv; i++) {
        const uint8_t *c = m->rgba + 4 * i;
        float r = c[0] / 255.0f, gg = c[1] / 255.0f, b = c[2] / 255.0f;
        if (linear) r = vx_srgb_to_linear(r), gg = vx_srgb_to_linear(gg), b = vx_srgb_to_linear(b);
        am->mColors[0][i] = aiColor4D(r, gg, b, c[3] / 255.0f);
      }
    }
    const uint32_t *idx = m->tri;
    if (!idx) {
      soup_idx = (uint32_t *)vx_malloc((size_t)nv * sizeof(uint32_t));
      if (!soup_idx) return vx_error_set(err, VX_ERR_NOMEM, "out of memory writing '%s'", path);
      for (uint64_t i = 0; i < nv; i++) soup_idx[i] = (uint32_t)i;
      idx = soup_idx;
    }
    am->mNumFaces = (unsigned)m->triangle_count;
    am->mFaces = new aiFace[am->mNumFaces];
    for (unsigned f = 0; f < am->mNumFaces; f++) {
      am->mFaces[f].mNumIndices = 3;
      am->mFaces[f].mIndices = const_cast<unsigned int *>(idx + 3 * (uint64_t)f);
    }
    Assimp::Exporter ex;
    unsigned pre = m->tri ? 0u : (unsigned)aiProcess_JoinIdenticalVertices;
    const aiExportDataBlob *blob = ex.ExportToBlob(sc, id, pre);
    if (!blob) {
      std::string why = ex.GetErrorString();
      vx_free(soup_idx);
      return vx_error_set(err, VX_ERR_IO, "cannot export '%s' as %s: %s", path, id,
                          why.empty() ? "the exporter failed" : why.c_str());
    }
    if (blob->next || !blob->data) {
      vx_free(soup_idx);
      return vx_error_set(err, VX_ERR_IO, "cannot export '%s' as %s: the exporter gave no single "
                          "file", path, id);
    }
    if (std::strcmp(ext, "ply") == 0 && am->mColors[0]) {
      std::string ply((const char *)blob->data, blob->size);
      if (!vx_ply_colors_to_bytes(ply, nv, m->triangle_count, am->mNormals != nullptr)) {
        vx_free(soup_idx);
        return vx_error_set(err, VX_ERR_IO, "cannot export '%s': assimp's PLY has an unexpected "
                            "vertex layout", path);
      }
      st = vx_atomic_write_file(path, ply.data(), ply.size(), err);
      if (st == VX_OK && bytes) *bytes = ply.size();
    } else {
      st = vx_atomic_write_file(path, blob->data, blob->size, err);
      if (st == VX_OK && bytes) *bytes = blob->size;
    }
  } catch (const std::bad_alloc &) {
    st = vx_error_set(err, VX_ERR_NOMEM, "out of memory writing '%s'", path);
  } catch (const std::exception &x) {
    st = vx_error_set(err, VX_ERR_IO, "cannot export '%s': %s", path, x.what());
  } catch (...) {
    st = vx_error_set(err, VX_ERR_IO, "cannot export '%s': the exporter failed", path);
  }
  vx_free(soup_idx);
  return st;
}
