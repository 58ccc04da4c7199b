/* SPDX-License-Identifier: Apache-2.0 */
/* mesh.c - vx_mesh (include/voxlod/mesh.h): meshes from files (through the isolated importer) or
 * from arrays (with vertex colours), their arrays, and meshes to files (formats/mesh_export). */
#include "lib/internal.h"
#include "formats/mesh_export.h"
#include "formats/mesh_import.h"
#include "sys/system.h"

#include <math.h>
#include <stdlib.h>

void vx_mesh_free(vx_mesh *m) {
  if (!m) return;
  if (m->has_source) vx_input_release(&m->source);
  vx_soup_free(&m->soup);
  vx_free(m->vertices);
  vx_free(m->normals);
  vx_free(m->indices);
  vx_free(m->colors);
  vx_free(m->src_idx);
  vx_free(m->src_tri);
  vx_free(m);
}

vx_status vx_mesh_load(const char *path, const vx_mesh_load_opts *opts, vx_mesh **out,
                       vx_error *err) {
  if (!out) return vx_error_set(err, VX_ERR_INVALID_ARG, "no place for the mesh");
  *out = NULL;
  if (!path || !*path) return vx_error_set(err, VX_ERR_INVALID_ARG, "empty mesh path");
  vx_mesh_load_opts o;
  vx_status os = VX_OPTS_IN(o, opts, err);
  if (os != VX_OK) return os;
  double timeout = o.timeout_s == 0.0 ? 300.0 : o.timeout_s < 0.0 ? 0.0 : o.timeout_s;
  if (!(timeout >= 0.0) || !isfinite(timeout))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "import time-out %g is not a number of seconds",
                        o.timeout_s);
  uint64_t limit = o.mem_limit ? o.mem_limit : vx_default_mem_limit();
  vx_mesh *m = (vx_mesh *)vx_calloc(1, sizeof *m);
  if (!m) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  double t0 = vx_clock_seconds();
  vx_status st = vx_soup_import_isolated(path, timeout, limit, &m->soup, err);
  if (st != VX_OK) {
    vx_free(m);
    return st;
  }
  m->load_seconds = vx_clock_seconds() - t0;
  if (vx_file_id_of(path, &m->source)) {
    m->has_source = 1;
    vx_input_hold(&m->source);
  }
  *out = m;
  return VX_OK;
}

#define CHUNK 4096u /* triangles gathered at a time */

vx_status vx_mesh_from_arrays(const float *vertices, uint64_t vertex_count, const uint32_t *indices,
                              uint64_t triangle_count, vx_mesh **out, vx_error *err) {
  if (!out) return vx_error_set(err, VX_ERR_INVALID_ARG, "no place for the mesh");
  *out = NULL;
  if (!vertices && vertex_count)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "no vertex array for %llu vertices",
                        (unsigned long long)vertex_count);
  if (!indices && vertex_count != 3 * triangle_count)
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "a triangle soup needs 3 vertices per triangle (%llu vertices, %llu "
                        "triangles)", (unsigned long long)vertex_count,
                        (unsigned long long)triangle_count);
  if (triangle_count > (UINT64_C(1) << 32))
    return vx_error_set(err, VX_ERR_LIMIT, "%llu triangles: more than 2^32",
                        (unsigned long long)triangle_count);
  if (indices)
    for (uint64_t i = 0; i < 3 * triangle_count; i++)
      if (indices[i] >= vertex_count)
        return vx_error_set(err, VX_ERR_INVALID_ARG,
                            "index %llu is %u, beyond the %llu vertices", (unsigned long long)i,
                            indices[i], (unsigned long long)vertex_count);
  vx_mesh *m = (vx_mesh *)vx_calloc(1, sizeof *m);
  float *buf = (float *)vx_malloc(CHUNK * 9 * sizeof(float));
  vx_status st = m && buf ? VX_OK : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  /* where the kept triangles come from (vx_mesh_set_vertex_colors): grown with the soup */
  uint64_t kept = 0;
  for (uint64_t t0 = 0; st == VX_OK && t0 < triangle_count; t0 += CHUNK) {
    uint64_t k = triangle_count - t0 < CHUNK ? triangle_count - t0 : CHUNK;
    for (uint64_t t = 0; t < k; t++)
      for (int c = 0; c < 3; c++) {
        uint64_t v = indices ? indices[3 * (t0 + t) + (uint64_t)c] : 3 * (t0 + t) + (uint64_t)c;
        memcpy(buf + 9 * t + 3 * (uint64_t)c, vertices + 3 * v, 3 * sizeof(float));
      }
    uint64_t nk = 0;
    for (uint64_t t = 0; t < k; t++) nk += (uint64_t)vx_soup_tri_usable(buf + 9 * t);
    if (indices || m->src_tri || nk != k) {
      /* indexed input: the indices of each kept triangle; a soup: its number, once one dropped */
      uint32_t **arr = indices ? &m->src_idx : &m->src_tri;
      int fresh = !indices && !m->src_tri;
      size_t per = indices ? 3 : 1;
      uint32_t *g = (uint32_t *)vx_realloc(*arr, ((size_t)(kept + nk) * per + 1) * sizeof(uint32_t));
      if (!g) {
        st = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
        break;
      }
      *arr = g;
      for (uint64_t i = 0; fresh && i < kept; i++) g[i] = (uint32_t)i; /* none dropped before */
      uint64_t j = kept;
      for (uint64_t t = 0; t < k; t++) {
        if (!vx_soup_tri_usable(buf + 9 * t)) continue;
        if (indices) memcpy(g + 3 * j, indices + 3 * (t0 + t), 3 * sizeof(uint32_t));
        else g[j] = (uint32_t)(t0 + t);
        j++;
      }
    }
    kept += nk;
    st = vx_soup_append(&m->soup, buf, k, err);
  }
  vx_free(buf);
  if (st == VX_OK && m->soup.tri_count == 0)
    st = vx_error_set(err, VX_ERR_EMPTY, "no usable triangle (%llu given: %llu degenerate, %llu "
                      "non-finite)", (unsigned long long)triangle_count,
                      (unsigned long long)m->soup.skipped_degenerate,
                      (unsigned long long)m->soup.skipped_nonfinite);
  if (st != VX_OK) {
    vx_mesh_free(m);
    return st;
  }
  m->soup.mesh_count = 1;
  m->from_arrays = 1;
  m->src_vertex_count = vertex_count;
  *out = m;
  return VX_OK;
}

vx_status vx_mesh_set_vertex_colors(vx_mesh *m, const uint8_t *colors, uint64_t vertex_count,
                                    uint32_t channels, vx_error *err) {
  if (!m) return vx_error_set(err, VX_ERR_INVALID_ARG, "no mesh");
  if (!m->from_arrays)
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "vertex colours can be set only on a mesh made from arrays");
  if (channels != 3 && channels != 4)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "%u colour channels: 3 (RGB) or 4 (RGBA)",
                        channels);
  if (vertex_count != m->src_vertex_count)
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "%llu vertex colours for a mesh of %llu vertices",
                        (unsigned long long)vertex_count, (unsigned long long)m->src_vertex_count);
  if (!colors && vertex_count)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "no colour array for %llu vertices",
                        (unsigned long long)vertex_count);
  uint64_t n = m->soup.tri_count;
  vx_soup_color *c = (vx_soup_color *)vx_calloc(1, sizeof *c);
  if (c) {
    c->materials = (vx_material *)vx_calloc(1, sizeof(vx_material));
    c->material = (uint32_t *)vx_calloc(n ? (size_t)n : 1, sizeof(uint32_t));
    c->corner_rgba = (uint32_t *)vx_malloc(n ? (size_t)n * 3 * sizeof(uint32_t) : 4);
  }
  if (!c || !c->materials || !c->material || !c->corner_rgba) {
    vx_soup_color_free(c);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the colours of %llu triangles",
                        (unsigned long long)n);
  }
  int translucent = 0;
  for (uint64_t t = 0; t < n; t++)
    for (uint64_t k = 0; k < 3; k++) {
      uint64_t v = m->src_idx ? m->src_idx[3 * t + k]
                   : m->src_tri ? 3 * (uint64_t)m->src_tri[t] + k : 3 * t + k;
      const uint8_t *p = colors + v * channels;
      uint32_t a = channels == 4 ? p[3] : 255u;
      translucent |= a != 255u;
      c->corner_rgba[3 * t + k] = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                                  a << 24;
    }
  /* one white material: the corners are the colour; alpha below 1 weights it (BLEND) */
  c->materials[0].factor = 0xffffffffu;
  c->materials[0].texture = -1;
  c->materials[0].alpha_mode = translucent ? VX_ALPHA_BLEND : VX_ALPHA_OPAQUE;
  c->materials[0].alpha_cutoff = 0.5f;
  c->material_count = 1;
  vx_soup_color_free(m->soup.color);
  m->soup.color = c;
  return VX_OK;
}

const char *vx_mesh_notes(const vx_mesh *m) {
  return m && m->soup.color && m->soup.color->warnings ? m->soup.color->warnings : "";
}

vx_status vx_mesh_get_info(const vx_mesh *m, vx_mesh_info *info) {
  if (!m || !info) return VX_ERR_INVALID_ARG;
  vx_mesh_info i;
  memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  i.triangles = m->indices ? m->triangle_count : m->soup.tri_count;
  i.meshes = m->soup.mesh_count;
  for (int k = 0; k < 3; k++) {
    i.bbox_min[k] = m->soup.bbox_min[k];
    i.bbox_max[k] = m->soup.bbox_max[k];
  }
  i.skipped_degenerate = m->soup.skipped_degenerate;
  i.skipped_nonfinite = m->soup.skipped_nonfinite;
  i.skipped_nontriangle = m->soup.skipped_nontriangle;
  i.load_seconds = m->load_seconds;
  if (m->soup.color) {
    i.has_color = 1;
    i.materials = m->soup.color->material_count;
    i.textures = m->soup.color->texture_count;
  }
  VX_STATS_OUT(info, i);
  return VX_OK;
}

/* ---- the arrays and files (mesh.h) ------------------------------------------------------------ */

const float *vx_mesh_vertices(const vx_mesh *m, uint64_t *count) {
  if (count) *count = !m ? 0 : m->indices ? m->vertex_count : 3 * m->soup.tri_count;
  return !m ? NULL : m->indices ? m->vertices : m->soup.pos;
}

const float *vx_mesh_normals(const vx_mesh *m, uint64_t *count) {
  if (count) *count = m && m->normals ? m->vertex_count : 0;
  return m ? m->normals : NULL;
}

const uint32_t *vx_mesh_indices(const vx_mesh *m, uint64_t *count) {
  if (count) *count = !m ? 0 : m->indices ? m->triangle_count : m->soup.tri_count;
  return m ? m->indices : NULL;
}

vx_status vx_mesh_check_path_as(const char *path, const char *format, const char *const *inputs,
                                size_t n, vx_error *err) {
  const char *id;
  vx_status st = vx_mesh_export_format(path, format, &id, NULL, err);
  if (st != VX_OK) return st;
  return vx_check_output(path, inputs, n, err);
}

vx_status vx_mesh_check_path(const char *path, const char *const *inputs, size_t n,
                             vx_error *err) {
  return vx_mesh_check_path_as(path, NULL, inputs, n, err);
}

vx_status vx_mesh_save_as(const vx_mesh *m, const char *path, const char *format, vx_error *err) {
  if (!m) return vx_error_set(err, VX_ERR_INVALID_ARG, "no mesh to save");
  vx_mesh_data d;
  memset(&d, 0, sizeof d);
  if (m->indices) {
    d.pos = m->vertices;
    d.nrm = m->normals;
    d.vertex_count = m->vertex_count;
    d.tri = m->indices;
    d.triangle_count = m->triangle_count;
    d.rgba = m->colors;
  } else {
    d.pos = m->soup.pos;
    d.vertex_count = 3 * m->soup.tri_count;
    d.triangle_count = m->soup.tri_count;
  }
  return vx_mesh_write_as(path, format, &d, NULL, err);
}

vx_status vx_mesh_save(const vx_mesh *m, const char *path, vx_error *err) {
  return vx_mesh_save_as(m, path, NULL, err);
}
