/* SPDX-License-Identifier: Apache-2.0 */
/* binvox.c - a cut as a .binvox occupancy grid (patrickmin.com/binvox/binvox.html).
 *
 * Layout: an ASCII header
 *   #binvox 1 / dim d d d / translate tx ty tz / scale s / data
 * then (value, count) byte pairs, count 1..255, run-length encoding the d^3 cells in the order
 * x slowest, then z, then y fastest (index x*d*d + z*d + y). A reader maps cell (i, j, k) to
 * ((i + 0.5) / d * s + tx, ...): with translate = the tree's origin and s = d * h that is the
 * cell's centre in world units.
 *
 * The runs of filled cells come from vx_cut_runs in exactly that order, so the encoding streams:
 * the gaps between runs are written as empty runs, nothing dense is held, and the file goes out
 * through the atomic writer in 64 KiB blocks.
 */
#include "sys/atomic_file.h"
#include "formats/grid_export.h"

#include <stdio.h>
#include <string.h>

typedef struct rle {
  vx_atomic_file *af;
  uint64_t d, pos; /* next cell index to encode */
  uint8_t val;     /* the pending run */
  uint32_t count;
  uint8_t buf[65536];
  size_t len;
  uint64_t bytes, filled;
} rle;

static vx_status flush_buf(rle *r, vx_error *err) {
  vx_status s = r->len ? vx_atomic_write(r->af, r->buf, r->len, err) : VX_OK;
  r->bytes += r->len;
  r->len = 0;
  return s;
}

static vx_status pair(rle *r, uint8_t v, uint8_t n, vx_error *err) {
  if (r->len + 2 > sizeof r->buf) {
    vx_status s = flush_buf(r, err);
    if (s != VX_OK) return s;
  }
  r->buf[r->len++] = v;
  r->buf[r->len++] = n;
  return VX_OK;
}

/* n more cells of value v */
static vx_status emit(rle *r, uint8_t v, uint64_t n, vx_error *err) {
  vx_status s;
  if (n == 0) return VX_OK;
  if (r->count && r->val != v) {
    if ((s = pair(r, r->val, (uint8_t)r->count, err)) != VX_OK) return s;
    r->count = 0;
  }
  r->val = v;
  while (n) {
    uint64_t take = 255 - r->count < n ? 255 - r->count : n;
    r->count += (uint32_t)take;
    n -= take;
    if (r->count == 255) {
      if ((s = pair(r, v, 255, err)) != VX_OK) return s;
      r->count = 0;
    }
  }
  return VX_OK;
}

static vx_status on_run(void *user, uint32_t x, uint32_t z, uint32_t y0, uint32_t y1,
                        vx_error *err) {
  rle *r = (rle *)user;
  uint64_t start = ((uint64_t)x * r->d + z) * r->d + y0;
  vx_status s = emit(r, 0, start - r->pos, err);
  if (s == VX_OK) s = emit(r, 1, y1 - y0, err);
  r->pos = start + (y1 - y0);
  r->filled += y1 - y0;
  return s;
}

vx_status vx_binvox_write(const char *path, const vx_cut *c, int solid, uint64_t mem_limit,
                          uint64_t *filled, uint64_t *bytes, vx_error *err) {
  *filled = *bytes = 0;
  if (c->res > VX_BINVOX_MAX_RES)
    return vx_error_set(err, VX_ERR_LIMIT, "a %u^3 grid is too large for .binvox (readers hold it "
                        "densely; at most %u^3): export a coarser level with --lod", c->res,
                        VX_BINVOX_MAX_RES);
  rle *r = (rle *)vx_calloc(1, sizeof *r);
  if (!r) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_atomic_file af;
  vx_status s = vx_atomic_open(&af, path, err);
  if (s != VX_OK) {
    vx_free(r);
    return s;
  }
  r->af = &af;
  r->d = c->res;
  int n = snprintf((char *)r->buf, sizeof r->buf,
                   "#binvox 1\ndim %u %u %u\ntranslate %.17g %.17g %.17g\nscale %.17g\ndata\n",
                   c->res, c->res, c->res, c->origin[0], c->origin[1], c->origin[2],
                   c->h * (double)c->res);
  r->len = (size_t)n;
  s = vx_cut_runs(c, solid, mem_limit, on_run, r, err);
  if (s == VX_OK) s = emit(r, 0, r->d * r->d * r->d - r->pos, err);
  if (s == VX_OK && r->count) s = pair(r, r->val, (uint8_t)r->count, err);
  if (s == VX_OK) s = flush_buf(r, err);
  if (s == VX_OK) s = vx_atomic_commit(&af, err);
  else vx_atomic_abort(&af);
  if (s == VX_OK) {
    *filled = r->filled;
    *bytes = r->bytes;
  }
  vx_free(r);
  return s;
}
