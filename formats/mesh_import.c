/* SPDX-License-Identifier: Apache-2.0 */
/* mesh_import.c - any mesh assimp reads -> a flat triangle soup in world coordinates.
 *
 * assimp (aiImportFile / aiImportFileFromMemory) loads the scene with
 * aiProcess_ValidateDataStructure (index ranges checked by assimp before we see them); then, if
 * every face is well formed, aiProcess_Triangulate is applied (ear clipping of polygons). It is
 * not applied otherwise: Debian's assimp 5.2 aborts the process in an assertion of
 * TriangulateProcess on a face with no indices (found by fuzz/fuzz_mesh.c); such scenes are
 * triangulated here as fans, and faces with fewer than 3 indices are counted as points/lines. No step that removes or merges geometry is used: degenerate and
 * non-finite triangles are dropped and counted by vx_soup_append() (svo/soup.c), and points and
 * lines are counted here, so the user hears about every triangle that was not kept.
 *
 * The node hierarchy is walked depth first with an explicit stack (a hostile file cannot
 * overflow the C stack), multiplying node transforms in double precision from the root down;
 * every reference of a node to a mesh is one instance, expanded with that node's global
 * transform (what aiProcess_PreTransformVertices would do, without merging or copying the scene).
 * Triangles go to vx_soup_append in chunks, so the extra memory is bounded.
 *
 * Before assimp sees a file, the counts its header declares (PLY, binary STL, OFF) are checked
 * against its size (mesh_precheck.c): assimp allocates what a header claims before reading the
 * data, so a few hundred bytes could otherwise ask for gigabytes.
 */
#define _POSIX_C_SOURCE 200809L
#include "formats/mesh_import.h"
#include "formats/mesh_material.h"
#include "formats/mesh_precheck.h"
#include "formats/tri_stream.h"
#include "svo/color.h"

#include <assimp/cimport.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define IMPORT_FLAGS aiProcess_ValidateDataStructure
/* Binary STL and PLY files of at least this size are streamed (tri_stream.h). */
#define VX_STREAM_MIN_BYTES ((uint64_t)64 << 20)
#define CHUNK_TRIS 65536u
#define MAX_NODE_VISITS 10000000u

typedef struct walk_item {
  const struct aiNode *node;
  double m[12]; /* global transform, rows 0..2 of a 4x4 affine matrix */
} walk_item;

static void mat_from_ai(const struct aiMatrix4x4 *a, double m[12]) {
  m[0] = a->a1; m[1] = a->a2; m[2] = a->a3; m[3] = a->a4;
  m[4] = a->b1; m[5] = a->b2; m[6] = a->b3; m[7] = a->b4;
  m[8] = a->c1; m[9] = a->c2; m[10] = a->c3; m[11] = a->c4;
}

/* r = p * l for affine 3x4 matrices (implicit last row 0 0 0 1). */
static void mat_mul(const double p[12], const double l[12], double r[12]) {
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 4; j++) {
      double v = p[4 * i + 0] * l[j] + p[4 * i + 1] * l[4 + j] + p[4 * i + 2] * l[8 + j];
      if (j == 3) v += p[4 * i + 3];
      r[4 * i + j] = v;
    }
  }
}

static void xform(const double m[12], const struct aiVector3D *v, float *out) {
  double x = v->x, y = v->y, z = v->z;
  for (int i = 0; i < 3; i++)
    out[i] = (float)(m[4 * i] * x + m[4 * i + 1] * y + m[4 * i + 2] * z + m[4 * i + 3]);
}

/* What a chunk of triangles carries beside positions when the scene has colour. */
typedef struct chunk {
  float *pos;     /* CHUNK_TRIS * 9 */
  uint32_t *mat;  /* CHUNK_TRIS, or NULL: no colour */
  float *uv;      /* CHUNK_TRIS * 6, or NULL */
  uint32_t *rgba; /* CHUNK_TRIS * 3, or NULL */
} chunk;

static vx_status flush(vx_soup *out, const chunk *b, uint32_t nb, vx_error *err) {
  if (!b->mat) return vx_soup_append(out, b->pos, nb, err);
  return vx_soup_append_color(out, b->pos, b->mat, b->uv, b->rgba, nb, err);
}

/* A vertex colour as packed RGBA8: glTF's are linear and multiplied by the base colour factor;
 * other formats' are sRGB-encoded values. */
static uint32_t vertex_rgba(const struct aiColor4D *c, const float *factor) {
  if (factor)
    return vx_rgba_pack_linear(c->r * factor[0], c->g * factor[1], c->b * factor[2],
                               c->a * factor[3]);
  return vx_unorm8(c->r) | vx_unorm8(c->g) << 8 | vx_unorm8(c->b) << 16 | vx_unorm8(c->a) << 24;
}

/* UV (u, v) of channel 0 under the material's UV transform x (vx_scene_color.uv_xform; NULL:
 * none). A non-finite UV is 0 before the transform (as vx_soup_append_color makes it without
 * one); results stay finite floats. */
static void map_uv(const double *x, float u, float v, float *out) {
  if (!x) {
    out[0] = u;
    out[1] = v;
    return;
  }
  double a = isfinite(u) ? u : 0.0, b = isfinite(v) ? v : 0.0;
  double r[2] = {x[0] * a + x[1] * b + x[2], x[3] * a + x[4] * b + x[5]};
  for (int k = 0; k < 2; k++)
    out[k] = (float)(r[k] > FLT_MAX ? FLT_MAX : r[k] < -FLT_MAX ? -FLT_MAX : r[k]);
}

/* Appends one instance of mesh am under transform m, with its colour attributes when sc has
 * colour. */
static vx_status add_instance(const struct aiMesh *am, const double m[12], const chunk *b,
                              const vx_scene_color *col, vx_soup *out, vx_error *err) {
  uint32_t nb = 0;
  const unsigned nv = am->mNumVertices;
  if (!am->mVertices || !am->mFaces) return VX_OK;
  uint32_t mi = col->material_count && am->mMaterialIndex < col->material_count
                    ? am->mMaterialIndex : 0;
  const struct aiVector3D *tc = am->mTextureCoords[0];
  const struct aiColor4D *vc = am->mColors[0];
  uint32_t smat = col->mat_index ? col->mat_index[2 * mi + (tc ? 0 : 1)] : 0;
  uint32_t srgba = col->mat_rgba ? col->mat_rgba[2 * mi + (tc ? 0 : 1)] : 0xffffffffu;
  const float *vf = col->vc_factor ? col->vc_factor + 4 * mi : NULL;
  const double *ux = col->uv_xform && tc ? col->uv_xform + 6 * mi : NULL;
  if (ux && ux[0] == 1.0 && ux[1] == 0.0 && ux[2] == 0.0 && ux[3] == 0.0 && ux[4] == 1.0 &&
      ux[5] == 0.0)
    ux = NULL;
  for (unsigned f = 0; f < am->mNumFaces; f++) {
    const struct aiFace *face = &am->mFaces[f];
    unsigned n = face->mNumIndices;
    if (n < 3 || !face->mIndices) {
      out->skipped_nontriangle++;
      continue;
    }
    int bad = 0;
    for (unsigned k = 0; k < n; k++) bad |= face->mIndices[k] >= nv;
    if (bad) {
      out->skipped_nontriangle++;
      continue;
    }
    for (unsigned k = 1; k + 1 < n; k++) { /* a fan; n == 3 after aiProcess_Triangulate */
      const unsigned idx[3] = {face->mIndices[0], face->mIndices[k], face->mIndices[k + 1]};
      for (int c = 0; c < 3; c++) {
        xform(m, &am->mVertices[idx[c]], b->pos + 9 * nb + 3 * c);
        if (b->uv) {
          if (tc) map_uv(ux, tc[idx[c]].x, tc[idx[c]].y, b->uv + 6 * nb + 2 * c);
          else b->uv[6 * nb + 2 * c] = b->uv[6 * nb + 2 * c + 1] = 0.0f;
        }
        if (b->rgba) b->rgba[3 * nb + c] = vc ? vertex_rgba(&vc[idx[c]], vf) : srgba;
      }
      if (b->mat) b->mat[nb] = smat;
      if (++nb == CHUNK_TRIS) {
        vx_status s = flush(out, b, nb, err);
        if (s != VX_OK) return s;
        nb = 0;
      }
    }
  }
  return nb ? flush(out, b, nb, err) : VX_OK;
}

static vx_status walk_scene(const struct aiScene *sc, const char *name, const vx_scene_color *col,
                            vx_soup *out, vx_error *err) {
  if (!sc->mRootNode || !sc->mMeshes)
    return vx_error_set(err, VX_ERR_EMPTY, "'%s' has no meshes", name);
  size_t cap = 64, top = 0;
  walk_item *stack = (walk_item *)vx_malloc(cap * sizeof *stack);
  chunk buf = {(float *)vx_malloc((size_t)CHUNK_TRIS * 9 * sizeof(float)), NULL, NULL, NULL};
  int nomem = !stack || !buf.pos;
  if (out->color) {
    buf.mat = (uint32_t *)vx_malloc((size_t)CHUNK_TRIS * sizeof(uint32_t));
    nomem |= !buf.mat;
    if (col->want_uv) nomem |= !(buf.uv = (float *)vx_malloc((size_t)CHUNK_TRIS * 6 * sizeof(float)));
    if (col->want_rgba)
      nomem |= !(buf.rgba = (uint32_t *)vx_malloc((size_t)CHUNK_TRIS * 3 * sizeof(uint32_t)));
  }
  vx_status s = VX_OK;
  if (nomem) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory importing '%s'", name);
  if (s == VX_OK) {
    stack[0].node = sc->mRootNode;
    mat_from_ai(&sc->mRootNode->mTransformation, stack[0].m);
    top = 1;
  }
  uint64_t visits = 0;
  while (s == VX_OK && top > 0) {
    walk_item it = stack[--top];
    if (++visits > MAX_NODE_VISITS) {
      s = vx_error_set(err, VX_ERR_FORMAT, "'%s': scene graph has more than %u nodes", name,
                       MAX_NODE_VISITS);
      break;
    }
    for (unsigned i = 0; s == VX_OK && i < it.node->mNumMeshes && it.node->mMeshes; i++) {
      unsigned mi = it.node->mMeshes[i];
      if (mi >= sc->mNumMeshes || !sc->mMeshes[mi]) continue;
      out->mesh_count++;
      s = add_instance(sc->mMeshes[mi], it.m, &buf, col, out, err);
    }
    for (unsigned c = 0; s == VX_OK && c < it.node->mNumChildren && it.node->mChildren; c++) {
      const struct aiNode *child = it.node->mChildren[c];
      if (!child) continue;
      if (top == cap) {
        walk_item *g = (walk_item *)vx_realloc(stack, 2 * cap * sizeof *stack);
        if (!g) {
          s = vx_error_set(err, VX_ERR_NOMEM, "out of memory importing '%s'", name);
          break;
        }
        stack = g;
        cap *= 2;
      }
      double l[12];
      mat_from_ai(&child->mTransformation, l);
      stack[top].node = child;
      mat_mul(it.m, l, stack[top].m);
      top++;
    }
  }
  vx_free(stack);
  vx_free(buf.pos);
  vx_free(buf.mat);
  vx_free(buf.uv);
  vx_free(buf.rgba);
  if (s == VX_OK && out->tri_count == 0)
    s = vx_error_set(err, VX_ERR_EMPTY,
                     "'%s' has no usable triangles (%u mesh instances; dropped %llu degenerate, "
                     "%llu non-finite, %llu points/lines)",
                     name, out->mesh_count, (unsigned long long)out->skipped_degenerate,
                     (unsigned long long)out->skipped_nonfinite,
                     (unsigned long long)out->skipped_nontriangle);
  return s;
}

/* Faces assimp's own triangulation can take without tripping its assertions. */
static int faces_well_formed(const struct aiScene *sc) {
  for (unsigned i = 0; i < sc->mNumMeshes; i++) {
    const struct aiMesh *m = sc->mMeshes ? sc->mMeshes[i] : NULL;
    if (!m) return 0;
    for (unsigned f = 0; f < m->mNumFaces; f++) {
      const struct aiFace *face = &m->mFaces[f];
      if (face->mNumIndices == 0 || !face->mIndices) return 0;
      for (unsigned k = 0; k < face->mNumIndices; k++)
        if (face->mIndices[k] >= m->mNumVertices) return 0;
    }
  }
  return 1;
}

/* path: the mesh file (NULL: from memory); ext: its format's extension, or NULL. */
static vx_status finish(const struct aiScene *sc, const char *name, const char *path,
                        const char *ext, vx_soup *out, vx_error *err) {
  if (sc && faces_well_formed(sc)) sc = aiApplyPostProcessing(sc, aiProcess_Triangulate);
  if (!sc) {
    const char *why = aiGetErrorString();
    /* assimp turns a failed allocation (std::bad_alloc) into an import error: say what it is */
    if (why && strstr(why, "bad_alloc"))
      return vx_error_set(err, VX_ERR_NOMEM, "cannot read '%s': out of memory in the importer (%s)",
                          name, why);
    return vx_error_set(err, VX_ERR_FORMAT, "cannot read '%s' as a mesh: %s", name,
                        why && *why ? why : "unknown format or damaged file");
  }
  vx_scene_color col;
  vx_status s = vx_scene_color_build(sc, path, ext, &col, err);
  if (s == VX_OK) {
    out->color = col.color; /* the soup owns it from here */
    col.color = NULL;
    s = walk_scene(sc, name, &col, out, err);
  }
  vx_scene_color_release(&col);
  aiReleaseImport(sc);
  if (s != VX_OK) vx_soup_free(out);
  return s;
}

/* assimp 5.2's PLY header parser loops forever on some malformed headers (found by
 * fuzz/fuzz_mesh.c: a missing "end_header", junk inside a property line). A PLY file (first
 * bytes "ply") is therefore refused unless every header line, within the first bytes `head`, is
 * (or any file named .ply: assimp picks its reader by name too, and matches "ply" in any case)
 * one the PLY format defines: format/comment/obj_info/element/property lines, then end_header.
 * Returns 0 for a good header or a file that is not PLY, else the 1-based bad line number. */
static int is_word(const char *w, size_t n) {
  if (n == 0) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)w[i];
    if (c <= ' ' || c >= 127) return 0;
  }
  return 1;
}

static int ply_header_bad_line(const unsigned char *head, size_t n, int named_ply) {
  int magic = n >= 3 && (head[0] | 0x20) == 'p' && (head[1] | 0x20) == 'l' && (head[2] | 0x20) == 'y';
  if (!magic && !named_ply) return 0;
  size_t pos = 0;
  for (int line = 1; pos < n; line++) {
    size_t end = pos;
    while (end < n && head[end] != '\n') end++;
    if (end == n) return line; /* no end_header within the bytes looked at */
    size_t len = end;
    if (len > pos && head[len - 1] == '\r') len--;
    /* split into at most 5 words on single spaces */
    const char *w[6];
    size_t wl[6], nw = 0;
    size_t i = pos;
    int ok = 1;
    while (i < len && nw < 6) {
      size_t j = i;
      while (j < len && head[j] != ' ') j++;
      w[nw] = (const char *)head + i;
      wl[nw] = j - i;
      nw++;
      i = j < len ? j + 1 : j;
    }
    const char *first = nw ? w[0] : "";
    size_t fl = nw ? wl[0] : 0;
#define W_IS(k, s) (wl[k] == sizeof(s) - 1 && memcmp(w[k], s, sizeof(s) - 1) == 0)
    if (line == 1) ok = nw == 1 && W_IS(0, "ply");
    else if (fl == 7 && memcmp(first, "comment", 7) == 0) ok = 1;
    else if (fl == 8 && memcmp(first, "obj_info", 8) == 0) ok = 1;
    else if (nw == 0) ok = 0;
    else if (W_IS(0, "format"))
      ok = nw == 3 && (W_IS(1, "ascii") || W_IS(1, "binary_little_endian") ||
                       W_IS(1, "binary_big_endian")) && is_word(w[2], wl[2]);
    else if (W_IS(0, "element")) {
      ok = nw == 3 && is_word(w[1], wl[1]) && wl[2] > 0 && wl[2] < 12;
      for (size_t k = 0; ok && k < wl[2]; k++) ok = w[2][k] >= '0' && w[2][k] <= '9';
    } else if (W_IS(0, "property"))
      ok = (nw == 3 && is_word(w[1], wl[1]) && is_word(w[2], wl[2])) ||
           (nw == 5 && W_IS(1, "list") && is_word(w[2], wl[2]) && is_word(w[3], wl[3]) &&
            is_word(w[4], wl[4]));
    else if (W_IS(0, "end_header"))
      return nw == 1 ? 0 : line;
    else
      ok = 0;
#undef W_IS
    if (!ok) return line;
    pos = end + 1;
  }
  return 1;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  if (n < k) return 0;
  for (size_t i = 0; i < k; i++) {
    char c = s[n - k + i];
    if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
    if (c != suffix[i]) return 0;
  }
  return 1;
}

int vx_soup_stream_candidate(const char *path, uint64_t size) {
  return size >= VX_STREAM_MIN_BYTES && (ends_with(path, ".stl") || ends_with(path, ".ply"));
}

/* A binary PLY whose data assimp would start at the wrong byte (precheck_util.h): read whole,
 * rewritten, checked again and imported from memory. */
static vx_status import_rewritten(const char *path, uint64_t size, vx_soup *out, vx_error *err) {
  if (size > 0x7fffffffu)
    return vx_error_set(err, VX_ERR_LIMIT,
                        "'%s': a binary PLY over 2 GiB whose header assimp misreads (a CR LF "
                        "line end, or data starting with a line feed)", path);
  unsigned char *b = (unsigned char *)vx_malloc((size_t)size ? (size_t)size : 1);
  if (!b) return vx_error_set(err, VX_ERR_NOMEM, "out of memory reading '%s'", path);
  FILE *f = fopen(path, "rb");
  const size_t got = f ? fread(b, 1, (size_t)size, f) : 0;
  if (f) fclose(f);
  if (got != size) {
    vx_free(b);
    return vx_error_set(err, VX_ERR_IO, "cannot read '%s' whole", path);
  }
  char what[600];
  snprintf(what, sizeof what, "'%s'", path);
  unsigned char *fixed = NULL;
  size_t n = 0;
  vx_status s = vx_ply_rewrite(b, (size_t)size, what, &fixed, &n, err);
  vx_free(b);
  if (s != VX_OK) return s;
  if (!fixed) return vx_error_set(err, VX_ERR_IO, "'%s' changed while being read", path);
  s = vx_mesh_precheck(fixed, n, (uint64_t)n, "ply", what, err);
  if (s == VX_OK)
    s = finish(aiImportFileFromMemory((const char *)fixed, (unsigned)n, IMPORT_FLAGS, "ply"), path,
               path, "ply", out, err);
  vx_free(fixed);
  return s;
}

vx_status vx_soup_import(const char *path, vx_soup *out, vx_error *err) {
  memset(out, 0, sizeof *out);
  if (!path || !*path) return vx_error_set(err, VX_ERR_INVALID_ARG, "no mesh file given");
  struct stat st;
  if (stat(path, &st) != 0)
    return vx_error_set(err, VX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  if (S_ISDIR(st.st_mode))
    return vx_error_set(err, VX_ERR_IO, "'%s' is a directory, not a mesh file", path);
  if (!S_ISREG(st.st_mode))
    return vx_error_set(err, VX_ERR_IO, "'%s' is not a regular file", path);
  /* A large binary STL or PLY of plain triangles is streamed: assimp would hold the file and
   * its scene at once (formats/tri_stream.h); anything it does not stream goes to assimp. */
  if (vx_soup_stream_candidate(path, (uint64_t)st.st_size)) {
    vx_error e2;
    memset(&e2, 0, sizeof e2);
    const vx_status ss = vx_soup_import_stream(path, out, &e2);
    if (ss != VX_ERR_FORMAT) {
      if (ss != VX_OK && err) *err = e2;
      return ss;
    }
  }
  FILE *f = fopen(path, "rb");
  if (!f) return vx_error_set(err, VX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  enum { HEAD = 65536 };
  unsigned char *magic = (unsigned char *)vx_malloc(HEAD);
  if (!magic) {
    fclose(f);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  size_t got = fread(magic, 1, HEAD, f);
  fclose(f);
  int gz = got >= 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  int bad_ply = ply_header_bad_line(magic, got, ends_with(path, ".ply")), misread = 0;
  vx_status s = VX_OK;
  if (st.st_size == 0) {
    s = vx_error_set(err, VX_ERR_FORMAT, "'%s' is empty", path);
  } else if (ends_with(path, ".gz") || gz) {
    s = vx_error_set(err, VX_ERR_FORMAT,
                     "'%s' is gzip-compressed: gunzip it first (assimp cannot read .gz)", path);
  } else if (bad_ply) {
    s = vx_error_set(err, VX_ERR_FORMAT, "'%s': malformed PLY header (line %d)", path, bad_ply);
  } else {
    /* Header counts against the file's size, before assimp allocates what they claim (a PLY
     * that assimp would misread: once rewritten) */
    misread = vx_ply_misread(magic, got);
    char what[600];
    snprintf(what, sizeof what, "'%s'", path);
    s = vx_mesh_precheck(magic, got, (uint64_t)st.st_size, vx_mesh_path_ext(path), what, err);
  }
  vx_free(magic);
  if (s != VX_OK) return s;
  if (misread) return import_rewritten(path, (uint64_t)st.st_size, out, err);
  return finish(aiImportFile(path, IMPORT_FLAGS), path, path, vx_mesh_path_ext(path), out, err);
}

vx_status vx_soup_import_memory(const void *data, size_t size, const char *hint, vx_soup *out,
                                vx_error *err) {
  memset(out, 0, sizeof *out);
  if (!data || size == 0) return vx_error_set(err, VX_ERR_FORMAT, "mesh data is empty");
  if (size > 0x7fffffffu) return vx_error_set(err, VX_ERR_LIMIT, "mesh data over 2 GiB");
  const unsigned char *b = (const unsigned char *)data;
  if (size >= 2 && b[0] == 0x1f && b[1] == 0x8b)
    return vx_error_set(err, VX_ERR_FORMAT, "mesh data is gzip-compressed: gunzip it first");
  int named_ply = hint && (hint[0] | 0x20) == 'p' && (hint[1] | 0x20) == 'l' &&
                  (hint[2] | 0x20) == 'y' && hint[3] == 0;
  int bad_ply = ply_header_bad_line(b, size < 65536 ? size : 65536, named_ply);
  if (bad_ply) return vx_error_set(err, VX_ERR_FORMAT, "mesh data: malformed PLY header (line %d)", bad_ply);
  unsigned char *fixed = NULL;
  size_t fixed_size = 0;
  vx_status s = vx_ply_rewrite(b, size, "the mesh data", &fixed, &fixed_size, err);
  if (s != VX_OK) return s;
  if (fixed) {
    b = fixed;
    size = fixed_size;
  }
  s = vx_mesh_precheck(b, size, (uint64_t)size, hint, "the mesh data", err);
  if (s == VX_OK)
    s = finish(aiImportFileFromMemory((const char *)b, (unsigned)size, IMPORT_FLAGS,
                                      hint ? hint : ""),
               "mesh data", NULL, hint, out, err);
  vx_free(fixed);
  return s;
}
