/* SPDX-License-Identifier: Apache-2.0 */
/* tile_tasks.c - the tiled build as tasks (voxlod/convert.h): a plan per process, tiles built by
 * index into files with a record each, and the merge of those files into the tiled file. The
 * plan and the tile build are the ones vx_convert_to_file runs (convert_tiled.c); the merge is
 * its writer (formats/svo_tiled.h) fed from files, each checked against its record. */
#define _POSIX_C_SOURCE 200809L
#include "lib/convert_tiled.h"
#include "formats/tile_part.h"
#include "sys/atomic_file.h"
#include "sys/system.h"

#include <stdio.h>
#include <stdlib.h>

vx_status vx_tile_plan_create(const vx_mesh *mesh, const vx_convert_opts *opts,
                              vx_tile_plan **out, vx_error *err) {
  if (!out) return vx_error_set(err, VX_ERR_INVALID_ARG, "no place for the plan");
  *out = NULL;
  if (!mesh) return vx_error_set(err, VX_ERR_INVALID_ARG, "no mesh to plan");
  vx_convert_opts o;
  vx_status s = vx_convert_opts_ready(opts, &o, err);
  if (s != VX_OK) return s;
  if (!o.tile_depth)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "a plan of tiles needs a tile depth (or a "
                        "resolution above %u)", 1u << VX_MAX_DEPTH);
  char *tmp = vx_convert_spill_dir(&o, NULL);
  vx_tile_plan *p = (vx_tile_plan *)vx_calloc(1, sizeof *p);
  if (!tmp || !p) {
    vx_free(tmp);
    vx_free(p);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  s = vx_tile_plan_init(p, &mesh->soup, &o, tmp, err);
  vx_free(tmp);
  if (s == VX_OK) s = vx_tile_plan_color(p, &mesh->soup, &o, err);
  if (s != VX_OK) {
    vx_tile_plan_free(p);
    return s;
  }
  *out = p;
  return VX_OK;
}

void vx_tile_plan_free(vx_tile_plan *p) {
  if (!p) return;
  vx_tile_plan_release(p);
  vx_free(p);
}

vx_status vx_tile_plan_get_info(const vx_tile_plan *p, vx_tile_plan_info *info) {
  if (!p || !info) return VX_ERR_INVALID_ARG;
  vx_tile_plan_info i;
  memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  i.depth = p->h.depth;
  i.tile_depth = p->h.tile_depth;
  i.tiles = p->ntiles;
  i.build_id = p->h.build_id;
  i.triangles = p->m ? p->m->tri_count : p->kept;
  i.sec_plan = p->sec_plan;
  VX_STATS_OUT(info, i);
  return VX_OK;
}

const char *vx_tile_plan_notes(vx_tile_plan *p) {
  if (!p) return "";
  pthread_mutex_lock(&p->mu);
  const char *r = p->fell_back ? p->note.msg : "";
  pthread_mutex_unlock(&p->mu);
  return r;
}

vx_status vx_tile_plan_build(vx_tile_plan *p, uint64_t k, const char *path, vx_tile_record *rec,
                             vx_error *err) {
  if (!p || !rec || !path || !*path)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "no plan, path or record");
  if (k >= p->ntiles)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "tile %llu of a plan of %llu tiles",
                        (unsigned long long)k, (unsigned long long)p->ntiles);
  vx_status s = vx_output_check(path, NULL, 0, NULL, err);
  if (s != VX_OK) return s;
  uint32_t *tris = (uint32_t *)vx_malloc((size_t)(p->max_tris ? p->max_tris : 1) * 4);
  if (!tris) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_voxelize_opts bo = p->bo;
  pthread_mutex_lock(&p->mu);
  if (p->fell_back) bo.gpu = 0; /* a GPU that failed once is not tried again */
  pthread_mutex_unlock(&p->mu);
  vx_tile_out r;
  s = p->source.run ? p->source.run(p->source.ctx, &bo, k, NULL, path, &r, err)
                    : vx_tile_plan_run(p, &bo, k, tris, NULL, path, &r, err);
  vx_free(tris);
  vx_tile_part_rec pr;
  memset(&pr, 0, sizeof pr);
  pr.h = p->h;
  pr.code = r.code;
  pr.empty = r.empty;
  pr.gpu = r.gpu_tree;
  pr.voxels = r.voxels;
  pr.nodes = r.nodes;
  pr.corners = r.corners;
  pr.fit = r.fit;
  pr.sec_build = r.sec_build;
  pr.sec_encode = r.sec_encode;
  pr.dominant = p->color && p->color->filter == VX_COLOR_FILTER_DOMINANT;
  pr.color_has = !r.empty && r.color_has;
  if (pr.color_has) {
    pr.color_sum[0] = r.color_root.area;
    pr.color_sum[1] = r.color_root.a;
    for (int c = 0; c < 3; c++) pr.color_sum[2 + c] = r.color_root.rgb[c];
  }
  if (s == VX_OK && !r.empty) s = vx_svo_file_check(path, &pr.length, &pr.check, err);
  if (s == VX_OK && r.empty) pr.voxels = pr.nodes = pr.corners = 0;
  if (s == VX_OK) s = vx_tile_part_encode(&pr, rec->bytes, err);
  vx_tile_out_free(&r);
  return s;
}

vx_status vx_tile_record_get_info(const vx_tile_record *rec, vx_tile_record_info *info,
                                  vx_error *err) {
  if (!rec || !info) return vx_error_set(err, VX_ERR_INVALID_ARG, "no record or info");
  vx_tile_part_rec r;
  vx_status s = vx_tile_part_decode(rec->bytes, &r, err);
  if (s != VX_OK) return s;
  vx_tile_record_info i;
  memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  i.empty = r.empty;
  i.code = r.code;
  i.build_id = r.h.build_id;
  i.voxels = r.voxels;
  i.file_bytes = r.length;
  i.gpu = r.gpu;
  i.sec_build = r.sec_build;
  i.sec_encode = r.sec_encode;
  VX_STATS_OUT(info, i);
  return VX_OK;
}

static int same_build(const vx_tile_part_rec *x, const vx_tile_part_rec *y) {
  const vx_tiled_header *a = &x->h, *b = &y->h;
  return a->build_id == b->build_id && a->depth == b->depth && a->tile_depth == b->tile_depth &&
         a->color == b->color && x->dominant == y->dominant &&
         memcmp(&a->band, &b->band, sizeof a->band) == 0 &&
         memcmp(&a->prune_error, &b->prune_error, sizeof a->prune_error) == 0 &&
         memcmp(&a->xf, &b->xf, sizeof a->xf) == 0;
}

typedef struct part_ref {
  uint64_t code, i;
} part_ref;

static int cmp_part(const void *a, const void *b) {
  const part_ref *x = (const part_ref *)a, *y = (const part_ref *)b;
  return x->code < y->code ? -1 : x->code > y->code;
}

/* The merge checks a window of tile files at once, on up to MERGE_THREADS cores (each read twice:
 * its sections, then the whole file against its record), then appends them in order; a window
 * bounds the files held open. */
#define MERGE_WINDOW 64u
#define MERGE_THREADS 8

typedef struct merge_job {
  const vx_tile_part_rec *r;
  const part_ref *ord;
  const char *const *paths;
  uint64_t q0, q1; /* the window: ord[q0 .. q1) */
  vx_tile_file f[MERGE_WINDOW];
  vx_status st[MERGE_WINDOW];
  vx_error e[MERGE_WINDOW];
} merge_job;

static void merge_check(void *ctx, uint64_t k) {
  merge_job *j = (merge_job *)ctx;
  const uint64_t i = j->ord[j->q0 + k].i;
  const vx_tile_part_rec *t = &j->r[i];
  j->f[k].fd = -1;
  j->st[k] = VX_OK;
  if (t->empty) return;
  j->st[k] = vx_tile_file_check(j->paths[i], &t->length, &t->check, &j->f[k], &j->e[k]);
  if (j->st[k] != VX_OK) {
    char pre[48];
    snprintf(pre, sizeof pre, "tile %llu: ", (unsigned long long)t->code);
    vx_error_prefix(&j->e[k], pre);
  }
}

vx_status vx_tile_merge(const char *out_path, const vx_tile_record *recs,
                        const char *const *paths, uint64_t n, vx_conversion **out,
                        vx_error *err) {
  const double t0 = vx_clock_seconds();
  if (out) *out = NULL;
  if (!out_path || !*out_path || (n && (!recs || !paths)))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "no output path, records or paths");
  if (n == 0) return vx_error_set(err, VX_ERR_EMPTY, "no tiles to merge");
  if (n > (uint64_t)1 << 3 * (VX_MAX_DEPTH - 1))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "%llu tiles: more than any grid of tiles holds",
                        (unsigned long long)n);
  vx_status s = vx_output_check(out_path, NULL, 0, NULL, err);
  if (s != VX_OK) return s;
  vx_tile_part_rec *r = (vx_tile_part_rec *)vx_malloc((size_t)n * sizeof *r);
  part_ref *ord = (part_ref *)vx_malloc((size_t)n * sizeof *ord);
  vx_conversion *b = (vx_conversion *)vx_calloc(1, sizeof *b);
  if (!r || !ord || !b) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  for (uint64_t i = 0; s == VX_OK && i < n; i++) {
    s = vx_tile_part_decode(recs[i].bytes, &r[i], err);
    if (s != VX_OK) {
      char pre[48];
      snprintf(pre, sizeof pre, "record %llu: ", (unsigned long long)i);
      vx_error_prefix(err, pre);
      break;
    }
    if (!same_build(&r[i], &r[0]))
      s = vx_error_set(err, VX_ERR_INVALID_ARG, "record %llu comes from another build than record "
                       "0 (ids %016llx and %016llx, or another grid)", (unsigned long long)i,
                       (unsigned long long)r[i].h.build_id, (unsigned long long)r[0].h.build_id);
    else if (!r[i].empty && (!paths[i] || !*paths[i]))
      s = vx_error_set(err, VX_ERR_INVALID_ARG, "record %llu: tile %llu has no file",
                       (unsigned long long)i, (unsigned long long)r[i].code);
    ord[i].code = r[i].code;
    ord[i].i = i;
  }
  if (s == VX_OK) qsort(ord, (size_t)n, sizeof *ord, cmp_part);
  for (uint64_t i = 1; s == VX_OK && i < n; i++)
    if (ord[i].code == ord[i - 1].code)
      s = vx_error_set(err, VX_ERR_INVALID_ARG, "tile %llu comes twice (records %llu and %llu)",
                       (unsigned long long)ord[i].code, (unsigned long long)ord[i - 1].i,
                       (unsigned long long)ord[i].i);
  vx_tiled_writer *w = NULL;
  if (s == VX_OK) s = vx_tiled_writer_open(out_path, &r[0].h, &w, err);
  vx_tile_sums sums = {NULL, 0, VX_COLOR_FILTER_MEAN}; /* a coloured build's, in file order */
  if (s == VX_OK && r[0].h.color) {
    sums.s = (csum *)vx_malloc((size_t)n * sizeof *sums.s);
    sums.filter = r[0].dominant ? VX_COLOR_FILTER_DOMINANT : VX_COLOR_FILTER_MEAN;
    if (!sums.s) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    vx_tiled_writer_set_color(w, vx_tile_sums_colors, &sums);
  }
  uint64_t built = 0, voxels = 0, corners = 0, gpu = 0;
  double sec_build = 0.0, sec_encode = 0.0;
  merge_job *j = s == VX_OK ? (merge_job *)vx_calloc(1, sizeof *j) : NULL;
  if (s == VX_OK && !j) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  for (uint64_t q0 = 0; s == VX_OK && q0 < n; q0 += MERGE_WINDOW) {
    j->r = r;
    j->ord = ord;
    j->paths = paths;
    j->q0 = q0;
    j->q1 = n - q0 < MERGE_WINDOW ? n : q0 + MERGE_WINDOW;
    vx_items_run(MERGE_THREADS, j->q1 - q0, merge_check, j);
    for (uint64_t q = q0; q < j->q1; q++) {
      const uint64_t k = q - q0;
      const vx_tile_part_rec *t = &r[ord[q].i];
      if (s == VX_OK && j->st[k] != VX_OK) {
        s = j->st[k];
        if (err) *err = j->e[k];
      }
      if (s == VX_OK && !t->empty) {
        s = vx_tiled_writer_add_checked_file(w, t->code, t->h.build_id, paths[ord[q].i], &j->f[k],
                                             &t->fit, err);
        if (t->color_has) {
          csum *c = &sums.s[sums.n++];
          c->code = t->code;
          c->area = t->color_sum[0];
          c->a = t->color_sum[1];
          for (int q2 = 0; q2 < 3; q2++) c->rgb[q2] = t->color_sum[2 + q2];
        }
        built++;
        voxels += t->voxels;
        corners += t->corners;
        gpu += t->gpu != 0;
        sec_build += t->sec_build;
        sec_encode += t->sec_encode;
      }
      vx_tile_file_close(&j->f[k]);
    }
  }
  vx_free(j);
  uint64_t bytes = 0, nodes = 0;
  if (s == VX_OK) {
    s = vx_tiled_writer_finish(w, &bytes, &nodes, err);
    w = NULL;
  }
  vx_tiled_writer_abort(w);
  vx_free(sums.s);
  if (s == VX_OK) {
    const vx_tiled_header *h = &r[0].h;
    vx_notes_add(&b->notes, "tiles built elsewhere: building %.2fs, compressing %.2fs (summed "
                 "over the tiles)", sec_build, sec_encode);
    vx_notes_add(&b->notes, "tiled: %llu tiles of %u^3 (of %llu reached by triangles) under %u "
                 "top levels", (unsigned long long)built, 1u << h->tile_depth,
                 (unsigned long long)n, h->depth - h->tile_depth);
    vx_conversion_stats *st = &b->stats;
    st->struct_size = sizeof *st;
    st->resolution = 1u << h->depth;
    st->surface_voxels = voxels;
    st->nodes = nodes;
    st->corners = corners;
    st->file_bytes = bytes;
    st->used_gpu = gpu > 0;
    st->gpu_tree = gpu == built && built > 0;
    st->sec_voxels = sec_build;
    st->sec_write = vx_clock_seconds() - t0;
    st->sec_total = st->sec_write;
  }
  vx_free(r);
  vx_free(ord);
  if (s != VX_OK || !out) {
    vx_conversion_free(b);
    return s;
  }
  *out = b;
  return VX_OK;
}
