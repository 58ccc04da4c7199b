/* SPDX-License-Identifier: Apache-2.0 */
/* mesher.c - the mesher's public calls (include/voxlod/mesher.h): trees to meshes through the
 * dual contouring of mesher/.
 *
 * A meshed vx_mesh keeps the indexed arrays the mesher made (moved, not copied) and, beside
 * them, the same triangles as a soup, so that it converts like any loaded mesh. A coloured tree
 * gives a colour per vertex (vx_mesh_colors).
 */
#include "lib/internal.h"
#include "mesher/mesher.h"

#include "sys/system.h"

/* The soup of an indexed mesh, gathered and checked on every core (vx_soup_keep drops zero-area
 * triangles and counts them, as vx_soup_append does). */
typedef struct soup_job {
  const vx_mesh *m;
  float *pos;
} soup_job;

static void gather_tris(void *ctx, uint64_t a, uint64_t b) {
  const soup_job *j = (const soup_job *)ctx;
  for (uint64_t t = a; t < b; t++)
    for (int c = 0; c < 3; c++)
      memcpy(j->pos + 9 * t + 3 * (uint64_t)c,
             j->m->vertices + 3 * (uint64_t)j->m->indices[3 * t + (uint64_t)c], 3 * sizeof(float));
}

static vx_status fill_soup(vx_mesh *m, int threads, vx_error *err) {
  const uint64_t n = m->triangle_count;
  m->soup.pos = (float *)vx_malloc((size_t)(n ? n : 1) * 9 * sizeof(float));
  if (!m->soup.pos)
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the soup of %llu triangles",
                        (unsigned long long)n);
  soup_job j = {m, m->soup.pos};
  vx_ranges_run(threads, n, gather_tris, &j);
  m->soup.mesh_count = 1;
  return vx_soup_keep(&m->soup, n, threads, err);
}

vx_status vx_mesher_extract(const vx_tree *t, const vx_mesher_opts *opts, vx_mesh **out,
                            vx_error *err) {
  if (!out) return vx_error_set(err, VX_ERR_INVALID_ARG, "no place for the mesh");
  *out = NULL;
  if (!t) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tree to mesh");
  vx_status ws = vx_octree_check_world(&t->oct, VX_WORLD_FLOAT, err);
  if (ws != VX_OK) return ws;
  vx_mesher_opts o;
  vx_status vs = VX_OPTS_IN(o, opts, err);
  if (vs != VX_OK) return vs;
  const vx_octree *oc = &t->oct;
  vx_dc_opts d;
  memset(&d, 0, sizeof d);
  switch (o.cut) {
  case VX_MESHER_FINEST: d.cut = VX_DC_FINEST; break;
  case VX_MESHER_LEVEL:
    if (o.level > oc->depth)
      return vx_error_set(err, VX_ERR_INVALID_ARG,
                          "level %u is beyond the tree's depth %u (levels 0..%u)", o.level,
                          oc->depth, oc->depth);
    d.cut = VX_DC_LEVEL;
    d.level = o.level;
    break;
  case VX_MESHER_ERROR:
    if (!(o.max_error > 0.0f) || !(o.max_error < 1e30f))
      return vx_error_set(err, VX_ERR_INVALID_ARG, "max error %g is not a number of voxels > 0",
                          (double)o.max_error);
    d.cut = VX_DC_ERROR;
    d.max_error = o.max_error;
    break;
  default:
    return vx_error_set(err, VX_ERR_INVALID_ARG, "unknown cut %d", (int)o.cut);
  }
  if (o.threads < 0) return vx_error_set(err, VX_ERR_INVALID_ARG, "%d threads", o.threads);
  d.threads = o.threads;
  d.progress = o.progress;
  d.user = o.user;
  vx_dc_mesh dm;
  vx_dc_stats ds;
  vx_status st = vx_dc_extract(oc, &d, &dm, &ds, err);
  if (st != VX_OK) return st;
  if (dm.triangle_count == 0) {
    vx_dc_mesh_free(&dm);
    if (ds.faces_cut_out)
      return vx_error_set(err, VX_ERR_EMPTY,
                          "every cell of the cut with a surface crossing is cut out (alpha 0): "
                          "nothing to mesh");
    if (d.cut == VX_DC_LEVEL)
      return vx_error_set(err, VX_ERR_EMPTY,
                          "no surface crossing at level %u (%u^3 cells): choose a finer level",
                          d.level, 1u << d.level);
    return vx_error_set(err, VX_ERR_EMPTY, "the tree's field has no surface crossing");
  }
  return vx_mesh_of_dc(&dm, &ds, d.threads, out, err);
}

vx_status vx_mesh_of_dc(struct vx_dc_mesh *dm, const struct vx_dc_stats *ds, int threads,
                        vx_mesh **out, vx_error *err) {
  *out = NULL;
  vx_mesh *m = (vx_mesh *)vx_calloc(1, sizeof *m);
  if (!m) {
    vx_dc_mesh_free(dm);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  m->vertices = dm->pos;
  m->normals = dm->nrm;
  m->vertex_count = dm->vertex_count;
  m->indices = dm->tri;
  m->triangle_count = dm->triangle_count;
  m->colors = dm->rgba;
  vx_free(dm->key);
  memset(dm, 0, sizeof *dm);
  vx_status st = fill_soup(m, threads, err);
  if (st != VX_OK) {
    vx_mesh_free(m);
    return st;
  }
  vx_mesher_stats *s = &m->mesher_stats;
  s->struct_size = sizeof *s;
  s->vertices = m->vertex_count;
  s->triangles = m->triangle_count;
  s->cells = ds->cells;
  s->level_min = ds->level_min;
  s->level_max = ds->level_max;
  s->corners_shared = ds->corners_shared;
  s->corners_disputed = ds->corners_disputed;
  s->corners_repaired = ds->corners_repaired;
  s->contacts_split = ds->contacts_split;
  s->open_edges = ds->open_edges;
  s->sec_field = ds->sec_field;
  s->sec_vertices = ds->sec_vertices;
  s->sec_faces = ds->sec_faces;
  s->sec_assemble = ds->sec_assemble;
  s->sec_total = ds->sec_total;
  m->has_mesher_stats = 1;
  *out = m;
  return VX_OK;
}

const uint8_t *vx_mesh_colors(const vx_mesh *m, uint64_t *count) {
  if (count) *count = m && m->colors ? m->vertex_count : 0;
  return m ? m->colors : NULL;
}

vx_status vx_mesher_get_stats(const vx_mesh *m, vx_mesher_stats *st) {
  if (!m || !st || !m->has_mesher_stats) return VX_ERR_INVALID_ARG;
  VX_STATS_OUT(st, m->mesher_stats);
  return VX_OK;
}
