/* SPDX-License-Identifier: Apache-2.0 */
/* mesh.c - vx_mesh (include/voxlod/mesh.h): meshes from files (through the isolated importer) or
 * from arrays, their arrays, and meshes to files (formats/mesh_export). */
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
  for (uint64_t t0 = 0; st == VX_OK && t0 < triangle_count; t0 += CHUNK) {
    uint64_t k = triangle_count - t0 < CHUNK ? triangle_count - t0 : CHUNK;
    for (uint64_t t = 0; t < k; t++)
      for (int c = 0; c < 3; c++) {
        uint64_t v = indices ? indices[3 * (t0 + t) + (uint64_t)c] : 3 * (t0 + t) + (uint64_t)c;
        memcpy(buf + 9 * t + 3 * (uint64_t)c, vertices + 3 * v, 3 * sizeof(float));
      }
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
  *out = m;
  return VX_OK;
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
